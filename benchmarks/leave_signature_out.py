"""Leave-one-signature-out: the diagnosis when the knowledge base does not
know the initiating message.

About a quarter of the initiating lines of logs nobody here has seen match
no specific entry.  Cross-validation cannot show how the diagnosis does on
them: every entry written for a case stays in every fold.  This script
takes each dev case the shipped diagnosis gets right, removes from the
knowledge base every specific (not catch-all) entry that matched the line it
named, and diagnoses the case again: the open-world tier, the incident
assembly and the ranking must still name the line::

    python benchmarks/leave_signature_out.py [CORPUS ...]   # default: tests/corpus/public

It prints the share still right, the victims blamed and the jobs called
healthy, then each case that went wrong (about 4 minutes: one database
compile per removed entry).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus_eval import CaseResult, case_dirs, evaluate_case, log_files, partition  # noqa: E402


def run(roots: list[str]) -> list[tuple[str, CaseResult]]:
    """``(removed entry, result without it)`` for every eligible dev case."""
    from denpex_fast.analysis.diagnosis import diagnosis_scanner
    from denpex_fast.engine.scanner import Scanner, default_scanner
    from denpex_fast.kb.signatures import SignatureSet

    full = default_scanner()
    kb = full.signature_set
    by_sigs: dict[tuple[str, ...], list[Path]] = defaultdict(list)
    for case in case_dirs(roots):
        if partition(case) != "dev":
            continue
        r = evaluate_case(case, diagnosis_scanner(full))
        if r.expected != "failure" or not r.right or r.where is None:
            continue
        # every specific entry that read the named line: none of them is known
        table = full.scan(log_files(case))
        file, line = r.where.rsplit(":", 1)
        on_line = {
            str(row["signature"])
            for row in table.select(["file", "line", "signature"]).to_pylist()
            if row["line"] == int(line) and os.path.relpath(row["file"], case) == file
        }
        sigs = tuple(sorted(s for s in on_line if s in kb and "catch-all" not in kb[s].marks))
        if sigs:
            by_sigs[sigs].append(case)
    out = []
    for sigs, cases in sorted(by_sigs.items()):
        without = diagnosis_scanner(Scanner(SignatureSet(s for s in kb if s.id not in sigs)))
        out += [("+".join(sigs), evaluate_case(c, without)) for c in cases]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", nargs="*", default=["tests/corpus/public"])
    args = ap.parse_args(argv)
    out = run(args.corpus)
    n = len(out)
    right = sum(r.right for _, r in out)
    print(
        f"leave-one-signature-out (dev): {right}/{n} right ({right / max(n, 1):.0%}), "
        f"victims blamed {sum(r.downstream_blamed for _, r in out)}, "
        f"called healthy {sum(r.called_healthy for _, r in out)}"
    )
    for sig, r in out:
        if not r.right:
            mark = "VICTIM" if r.downstream_blamed else ""
            print(
                f"  without {sig}: {r.verdict} {r.signature} {r.where} {mark} {Path(r.case).name}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
