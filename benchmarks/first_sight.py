"""Record the first diagnosis of newly gathered cases in ``arrivals.json``.

A new case must be scored by the code as it was *before* anything was
changed for it; that first outcome is what the confidence model learns from
and what ``accuracy.py`` prints as "first sight"::

    python benchmarks/first_sight.py --rev HEAD /path/to/staging/NNN-case ...

For each revision the script checks the code out into a temporary git
worktree, builds its C extension there, copies the cases into a temporary
``public/`` directory (so partition and grouping rules apply as they will in
the corpus) and scores them with that worktree's own ``corpus_eval`` in a
child process.  Entries are appended to ``tests/corpus/arrivals.json`` of
the current checkout; an entry already there is never rewritten.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ARRIVALS = REPO / "tests" / "corpus" / "arrivals.json"

# Runs inside the worktree's interpreter path: the scoring is that revision's.
_CHILD = """
import json, sys
from pathlib import Path
from corpus_eval import evaluate
report = evaluate([sys.argv[1]])
out = {}
for r in report.results:
    out[Path(r.case).name] = {
        "right": bool(r.right),
        "confidence": round(float(r.confidence), 3),
        "verdict": r.verdict,
        "victim": bool(r.downstream_blamed),
        "called_healthy": bool(r.called_healthy),
    }
print(json.dumps(out))
"""


def _git(*args: str, cwd: Path = REPO) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def score(rev: str, cases: list[Path]) -> dict[str, dict[str, object]]:
    """Score ``cases`` with the code of ``rev``; one entry per case folder."""
    sha = _git("rev-parse", rev)
    with tempfile.TemporaryDirectory(prefix="first-sight-") as tmp:
        wt = Path(tmp) / "code"
        _git("worktree", "add", "--detach", str(wt), sha)
        try:
            subprocess.run(
                [sys.executable, "csrc/build_ffi.py"], cwd=wt, check=True, capture_output=True
            )
            public = Path(tmp) / "corpus" / "public"
            public.mkdir(parents=True)
            shutil.copy(REPO / "tests" / "corpus" / "partition.json", public.parent)
            for c in cases:
                shutil.copytree(c, public / c.name)
            env_path = f"{wt}:{wt / 'benchmarks'}"
            res = subprocess.run(
                [sys.executable, "-c", _CHILD, str(public)],
                cwd=tmp,
                env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
                check=True,
                capture_output=True,
                text=True,
            )
        finally:
            _git("worktree", "remove", "--force", str(wt))
    found = json.loads(res.stdout.strip().splitlines()[-1])
    return {name: {"code": sha, **entry} for name, entry in found.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="+", type=Path, help="case folders (each with truth.json)")
    ap.add_argument("--rev", default="HEAD", help="revision whose code scores them (HEAD)")
    ap.add_argument("--dry-run", action="store_true", help="print, do not write arrivals.json")
    args = ap.parse_args(argv)
    cases = [c.resolve() for c in args.cases if (c / "truth.json").is_file()]
    if not cases:
        ap.error("no case folder with a truth.json given")
    book = json.loads(ARRIVALS.read_text())
    fresh = [c for c in cases if c.name not in book["cases"]]
    entries = score(args.rev, fresh) if fresh else {}
    for name, e in sorted(entries.items()):
        mark = "right" if e["right"] else ("HEALTHY" if e["called_healthy"] else "wrong")
        print(f"{mark:7} {e['confidence']:.2f} {e['verdict']:16} {name}")
    if not args.dry_run and entries:
        book["cases"].update(entries)
        book["cases"] = dict(sorted(book["cases"].items()))
        ARRIVALS.write_text(json.dumps(book, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
