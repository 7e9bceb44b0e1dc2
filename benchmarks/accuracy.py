"""Accuracy of the diagnosis on the labelled corpora: in-sample, grouped
cross-validation and the frozen blind partition, side by side, with the
anchors a user already has (the first line of a plain error grep, torchrun's
own "Root Cause (first observed failure)").

    python benchmarks/accuracy.py [CORPUS...]   # default: tests/corpus/cases, matrix-shift1/2, public

A failed case counts as right only when the named line (any line of the
named incident) **and** the named rank are the truth's.  Columns:

* in-sample: the model fitted on the whole dev partition, scored on it;
* grouped CV: each dev case scored by a model fitted without its group
  (source thread or generator fault), 5 folds;
* dev, first sight: the dev cases of ``tests/corpus/arrivals.json`` as the
  code of the day diagnosed them when they arrived, before any change made
  for them (what cross-validation cannot show: rules written for a case stay
  in every fold);
* blind: the dev-fitted model on the blind partition (public cases gathered
  after the partition was frozen; nothing was fitted or written against them);
* held-out jobs: the shipped model on ``tests/corpus/holdout2``, ``holdout4`` and ``holdout5`` (real jobs of
  another training script, other log styles, other faults and launcher
  layouts, generated once by ``tests/corpus/holdout.py --variant 2`` / ``4`` / ``5``
  and frozen; ``holdout/`` and ``holdout3/`` were used in development and are dev).

Then a reliability table: confidence shown vs accuracy observed, per bucket.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from corpus_eval import (
    EvalReport,
    _outcome,
    confidence_cases,
    confidence_label,
    cross_validate,
    evaluate,
    oof_confidence,
)

from denpex_fast.analysis.ranker import fit

ROOT = Path(__file__).resolve().parent.parent


def _fmt(x: object) -> str:
    if isinstance(x, float):
        return "-" if x != x else f"{100 * x:.0f}%"
    return str(x)


def main(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(
        description="Accuracy of the diagnosis: in-sample, grouped CV, first sight, blind, held-out."
    )
    ap.add_argument("corpus", nargs="*", help="case directories (default: the project's corpora)")
    args = ap.parse_args(argv)
    missing = [c for c in args.corpus if not Path(c).is_dir()]
    if missing:
        ap.error(f"not a corpus directory: {', '.join(missing)}")
    roots = args.corpus or [
        str(ROOT / "tests/corpus/cases"),
        str(ROOT / "tests/corpus/matrix-shift1"),
        str(ROOT / "tests/corpus/matrix-shift2"),
        str(ROOT / "tests/corpus/public"),
        str(ROOT / "tests/corpus/holdout"),
        str(ROOT / "tests/corpus/holdout2"),
        str(ROOT / "tests/corpus/holdout3"),
        str(ROOT / "tests/corpus/holdout4"),
        str(ROOT / "tests/corpus/holdout5"),
    ]
    rep = evaluate(roots)
    dev = rep.subset("dev")
    w = fit([(r.X, r.labels) for r in dev if r.X is not None and r.expected == "failure"])
    insample = {r.case: _outcome(r, w)[:3] for r in rep.results}
    feats: dict = {}
    cv, cv_prob = cross_validate(dev, conf_features=feats)
    arrived = EvalReport([r for r in dev if r.arrival is not None])
    first_sight = {
        r.case: (bool(a["right"]), bool(a["victim"]), bool(a["called_healthy"]))
        for r in arrived.results
        for a in [r.arrival or {}]
    }
    cols = [
        ("in-sample", rep.summary("dev", insample)),
        ("grouped CV", rep.summary("dev", cv)),
        ("dev, first sight", arrived.summary(None, first_sight)),
        ("blind", rep.summary("blind", insample)),
        ("blind, as shipped", rep.summary("blind")),
        ("held-out jobs", rep.summary("held-out")),
    ]
    rows = [
        (
            "cases (failed / healthy / stopped)",
            lambda s: f"{s['failed_cases']}/{s['healthy_cases']}/{s['stopped_cases']}",
        ),
        ("top-1 line and rank", lambda s: f"{_fmt(s['top1'])} ({s['top1_n']})"),
        ("victims blamed", lambda s: s["victims_blamed"]),
        ("failed jobs called healthy", lambda s: s["called_healthy"]),
        ("healthy controls quiet", lambda s: _fmt(s["healthy_quiet"])),
        ("stopped logs called stopped", lambda s: _fmt(s["stopped_right"])),
        (
            "first line of grep -i error|exception|timeout|failed",
            lambda s: _fmt(s["grep_first_top1"]),
        ),
        ("crashes", lambda s: s["errors"]),
    ]
    print(f"{'':54}" + "".join(f"{n:>19}" for n, _ in cols))
    for label, fn in rows:
        print(f"{label:54}" + "".join(f"{_fmt(fn(s)):>19}" for _, s in cols))
    for part in ("dev", "blind", "held-out"):
        tr = [
            r
            for r in rep.subset(part)
            if r.expected == "failure" and r.launcher_rank is not None and r.truth_rank is not None
        ]
        if tr:
            ok = sum(r.launcher_rank == r.truth_rank for r in tr)
            print(
                f"torchrun's Root Cause summary ({part}): names the right rank in {ok} of {len(tr)} "
                f"failed cases where it exists and the truth knows the rank"
            )
    print("\nreliability (named failed cases): confidence shown vs accuracy observed")
    # the shipped model maps the logistic output to the accuracy seen out of
    # fold per bucket (fitted on these very out-of-fold outputs)
    from denpex_fast.analysis.ranker import load_model

    shipped = load_model()
    conf = {c: shipped.calibrated(p) for c, p in oof_confidence(dev, feats, cv).items()}
    # observed: the first-sight outcome where one is recorded, as the model learns it
    cv_seen = {r.case: (confidence_label(r, cv), *cv[r.case][1:]) for r in dev if r.case in cv}
    # the cases whose outcome no rule was written against: first sights and
    # generated jobs (a paste studied before first sights were recorded is
    # right out of fold because rules were written while it was read)
    honest = EvalReport(confidence_cases(dev, feats))
    for title, r_, part, c, o in (
        ("grouped CV (dev; first-sight outcome where recorded)", rep, "dev", conf, cv_seen),
        ("grouped CV, first sights and generated jobs only", honest, None, conf, cv_seen),
        ("blind, as shipped", rep, "blind", None, None),
        ("held-out jobs, as shipped", rep, "held-out", None, None),
    ):
        print(f"  {title}")
        for b in r_.reliability(part, conf=c, outcome=o):
            if b["cases"]:
                print(
                    f"    {b['confidence']:>14}  n={b['cases']:3d}  predicted {b['predicted']:.2f}  "
                    f"observed {b['observed']:.2f}"
                )
    weights = dict(
        zip(
            __import__("denpex_fast.analysis.ranker", fromlist=["FEATURE_NAMES"]).FEATURE_NAMES,
            np.round(w, 2),
        )
    )
    print("\nweights fitted on dev:", ", ".join(f"{k}={v:g}" for k, v in weights.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
