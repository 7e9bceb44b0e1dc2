"""The diagnosis on the labelled corpora: real jobs with known answers.

Figures are asserted as floors, so a change that makes the diagnosis worse on
real logs fails here; the full per-case table prints with ``-s``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from denpex_fast.evaluate import case_dirs, evaluate
from denpex_fast.scanner import Scanner

HERE = Path(__file__).parent
GENERATED = HERE / "corpus" / "cases"
PUBLIC = HERE / "corpus" / "public"


@pytest.fixture(scope="module")
def scanner() -> Scanner:
    return Scanner()


def _show(rep) -> None:  # type: ignore[no-untyped-def]
    for r in rep.results:
        print(f"{r.case[:48]:48} {'ok ' if r.right else 'XX '} {r.verdict:10} rank={r.rank} "
              f"{r.signature} {r.where} (truth rank={r.truth_rank} {r.truth_where}) c={r.confidence:.2f}")
    print(rep.summary(), rep.calibration())


def test_generated_jobs(scanner: Scanner) -> None:
    rep = evaluate([GENERATED], scanner)
    _show(rep)
    s = rep.summary()
    assert s["cases"] == len(case_dirs([GENERATED])) >= 20
    assert s["healthy_quiet"] == 1.0            # healthy controls: no verdict
    assert s["rank_accuracy"] >= 0.8
    assert s["precision_when_named"] >= 0.85
    assert not [r for r in rep.results if r.error]


def test_public_thread_logs(scanner: Scanner) -> None:
    rep = evaluate([PUBLIC], scanner)
    _show(rep)
    s = rep.summary()
    assert s["cases"] >= 25
    assert s["line_accuracy"] >= 0.6
    assert s["precision_when_named"] >= 0.85
    assert not [r for r in rep.results if r.error]


def test_confidence_is_calibrated(scanner: Scanner) -> None:
    """The shipped calibration matches the accuracy measured now, per score
    bucket, and a higher score never means a lower confidence."""
    import json

    from denpex_fast.evaluate import fit_calibration

    rep = evaluate([GENERATED, PUBLIC], scanner)
    fresh = fit_calibration(rep)
    shipped = json.loads((Path(__import__("denpex_fast").__file__).parent / "calibration.json").read_text())
    assert [b["lo"] for b in shipped] == [b["lo"] for b in fresh]
    for s, f in zip(shipped, fresh):
        assert abs(s["accuracy"] - f["accuracy"]) <= 0.1, (s, f)
    acc = [b["accuracy"] for b in shipped]
    assert acc == sorted(acc)
    named = [r for r in rep.results if r.verdict == "initiating" and not r.healthy]
    assert sum(r.right for r in named) / len(named) >= 0.85
