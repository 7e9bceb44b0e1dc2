"""Accuracy of the diagnosis on the labelled corpora, per failure class, side
by side with torchrun's own answer ("Root Cause (first observed failure)").

    python benchmarks/accuracy.py [CORPUS...]     # default: tests/corpus/cases tests/corpus/public

Columns: cases; top-1 line (the named line is the truth's first causal line);
top-1 rank; abstentions; downstream-blamed (a consequence was named as the
cause); and for torchrun: cases where its summary exists and where it names
the wrong rank.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

from denpex_fast.evaluate import evaluate

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    roots = argv or [str(ROOT / "tests/corpus/cases"), str(ROOT / "tests/corpus/public")]
    rep = evaluate(roots)
    groups: dict[str, list] = defaultdict(list)
    for r in rep.results:
        groups[r.failure_class].append(r)
    head = (f"{'failure class':40} {'n':>3} {'line':>5} {'rank':>5} {'abst':>5} {'blamed':>6} "
            f"{'tr.sum':>6} {'tr.wrong':>8}")
    print(head)
    print("-" * len(head))
    tot = defaultdict(int)
    for cls in sorted(groups):
        rs = groups[cls]
        failed = [r for r in rs if not r.healthy]
        line = sum(r.line_hit for r in failed)
        rank = sum(r.rank_hit for r in failed if r.truth_rank is not None)
        ranked = sum(1 for r in failed if r.truth_rank is not None)
        abst = sum(r.verdict != "initiating" for r in failed)
        blamed = sum(r.downstream_blamed for r in failed)
        tr = [r for r in failed if r.launcher_rank is not None]
        tr_wrong = sum(1 for r in tr if r.truth_rank is not None and r.launcher_rank != r.truth_rank)
        for k, v in (("n", len(rs)), ("failed", len(failed)), ("line", line), ("rank", rank),
                     ("ranked", ranked), ("abst", abst), ("blamed", blamed), ("tr", len(tr)),
                     ("tr_wrong", tr_wrong),
                     ("tr_ranked", sum(1 for r in tr if r.truth_rank is not None))):
            tot[k] += v
        print(f"{cls:40} {len(rs):3d} {line:5d} {f'{rank}/{ranked}':>5} {abst:5d} {blamed:6d} "
              f"{len(tr):6d} {tr_wrong:8d}")
    print("-" * len(head))
    print(f"{'all':40} {tot['n']:3d} {tot['line']:5d} {tot['rank']:>2}/{tot['ranked']:<2} {tot['abst']:5d} "
          f"{tot['blamed']:6d} {tot['tr']:6d} {tot['tr_wrong']:8d}")
    s = rep.summary()
    print(f"\nfailed cases {tot['failed']}: top-1 line {tot['line']}/{tot['failed']}, top-1 rank "
          f"{tot['rank']}/{tot['ranked']}, abstained {tot['abst']}, downstream blamed {tot['blamed']}; "
          f"precision when naming {s['precision_when_named']}; healthy runs quiet {s['healthy_quiet']}")
    if tot["tr_ranked"]:
        print(f"torchrun's Root Cause summary: present in {tot['tr']} failed cases, names the wrong "
              f"rank in {tot['tr_wrong']} of {tot['tr_ranked']} with a known rank")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
