"""The scan cost each new or changed knowledge-base entry adds.

One expression without a good literal factor (a line-start alternation, a
``\\.py:\\d+\\]`` every Python logger line holds) can slow the whole database
on a chatty job while every correctness test stays green.  This times the
full database on one rank of the chatty benchmark job (``gen_chatty.py``),
then the database without each entry whose patterns differ from ``--since``
(a git revision), one thread, best of ``--repeat`` runs, and prints each
entry's share of the scan::

    python benchmarks/signature_cost.py --since HEAD~5
    python benchmarks/signature_cost.py --ids any-training-complete

An entry whose share is above ``--limit`` (default 2%) is listed as costly
and the exit status is 1.  The figures move by a few percent with other load
on the machine: rerun before trusting a share near the limit.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

from conftest import data_dir

REPO = Path(__file__).resolve().parent.parent


def _patterns_at(rev: str) -> dict[str, tuple[str, ...]]:
    """Each entry's patterns in the knowledge base of git revision ``rev``."""
    from denpex_fast.kb.signatures import load_signatures

    tar = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev, "signatures"], check=True, capture_output=True
    ).stdout
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(fileobj=BytesIO(tar)) as t:
            t.extractall(tmp, filter="data")
        old = load_signatures(Path(tmp) / "signatures", builtin=False)
        return {k: tuple(v) for k, v in old.patterns().items()}


def _sample() -> Path:
    """One rank's log of the chatty job (generated on first use)."""
    job = data_dir() / "chatty-1073741824"
    if not (job / "rank00.log").exists():
        subprocess.run(
            [sys.executable, str(Path(__file__).with_name("gen_chatty.py")), "--out", str(job)],
            check=True,
        )
    return job / "rank00.log"


def _seconds(patterns: dict[str, tuple[str, ...]], path: Path, repeat: int) -> float:
    from denpex_fast.engine.scanner import Scanner

    scanner = Scanner(patterns={k: list(v) for k, v in patterns.items()}, cache_dir=False)
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        scanner.run([str(path)], threads=1)
        best = min(best, time.perf_counter() - t)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--since", help="git revision: time the entries whose patterns differ from it")
    ap.add_argument("--ids", nargs="*", default=[], help="time these entries (ids)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per database (best is kept)")
    ap.add_argument("--limit", type=float, default=0.02, help="a share above this is costly")
    args = ap.parse_args(argv)

    from denpex_fast.kb.signatures import load_signatures

    now = {k: tuple(v) for k, v in load_signatures(builtin=True).patterns().items()}
    ids = list(args.ids)
    if args.since:
        before = _patterns_at(args.since)
        ids += sorted(k for k, v in now.items() if before.get(k) != v and k not in ids)
    if not ids:
        ap.error("nothing to time: give --since REV or --ids")
    path = _sample()
    full = _seconds(now, path, args.repeat)
    print(f"full knowledge base ({len(now)} entries): {full:.3f} s on {path.name}")
    costly = []
    for sid in ids:
        if sid not in now:
            print(f"  {sid}: not in the knowledge base")
            continue
        without = _seconds({k: v for k, v in now.items() if k != sid}, path, args.repeat)
        share = (full - without) / full
        flag = "  COSTLY" if share > args.limit else ""
        print(f"  {share:+7.1%}  {sid}{flag}")
        if share > args.limit:
            costly.append(sid)
    return 1 if costly else 0


if __name__ == "__main__":
    sys.exit(main())
