"""Leave-one-signature-out: the diagnosis when the knowledge base does not
know the initiating message.

About a quarter of the initiating lines of logs nobody here has seen match
no specific entry.  Cross-validation cannot show how the diagnosis does on
them: every entry written for a case stays in every fold.  This script
takes each dev case the shipped diagnosis gets right through a specific
(not catch-all) entry, removes that one entry from the knowledge base and
diagnoses the case again: the open-world tier, the incident assembly and
the ranking must still name the line::

    python benchmarks/leave_signature_out.py [CORPUS ...]   # default: tests/corpus/public

It prints the share still right, the victims blamed and the jobs called
healthy, then each case that went wrong (about 4 minutes: one database
compile per removed entry).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus_eval import CaseResult, case_dirs, evaluate_case, partition  # noqa: E402


def run(roots: list[str]) -> list[tuple[str, CaseResult]]:
    """``(removed entry, result without it)`` for every eligible dev case."""
    from denpex_fast.analysis.diagnosis import diagnosis_scanner
    from denpex_fast.engine.scanner import Scanner, default_scanner
    from denpex_fast.kb.signatures import SignatureSet

    full = default_scanner()
    kb = full.signature_set
    by_sig: dict[str, list[Path]] = defaultdict(list)
    for case in case_dirs(roots):
        if partition(case) != "dev":
            continue
        r = evaluate_case(case, diagnosis_scanner(full))
        sig = r.signature
        if r.expected == "failure" and r.right and sig in kb and "catch-all" not in kb[sig].marks:
            by_sig[str(sig)].append(case)
    out = []
    for sig, cases in sorted(by_sig.items()):
        without = diagnosis_scanner(Scanner(SignatureSet(s for s in kb if s.id != sig)))
        out += [(sig, evaluate_case(c, without)) for c in cases]
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
