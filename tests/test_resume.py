"""Where to resume: the last checkpoint written before the failure, and
whether it is safe (hand-built attributed tables over the real KB, and a
real job cut mid-run)."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus_eval import log_files
from test_causal import OOM, table, watchdogs

import denpex_fast as dx
from denpex_fast.analysis.diagnosis import diagnose_table
from denpex_fast.kb.signatures import load_signatures

SAVE = "2024-05-01 12:00:{s:02d},000 INFO node0 rank=0 train: checkpoint saved step={step} path=/ckpt/step{step}.pt"
NAN = "[rank1]: FloatingPointError: non-finite loss nan at step 30 on rank 1"


@pytest.fixture(scope="module")
def kb():
    return load_signatures()


def _save(step: int, ts: float, line: int) -> dict:
    return {
        "signature": "any-checkpoint-saved",
        "text": SAVE.format(s=int(ts) % 60, step=step),
        "rank": 0,
        "host": "n0",
        "ts": ts,
        "line": line,
        "file": "rank0.log",
    }


def test_last_checkpoint_before_the_fault_is_safe(kb) -> None:
    rows = [
        _save(10, 10.0, 5),
        _save(20, 20.0, 9),
        _save(30, 40.0, 14),
        {
            "signature": "cuda-oom",
            "text": OOM,
            "rank": 2,
            "host": "n0",
            "ts": 30.0,
            "line": 50,
            "file": "rank2.log",
        },
    ] + watchdogs([0, 1, 3], ts=640.0)
    d = diagnose_table(table(rows), signatures=kb)
    assert d.initiating.signature == "cuda-oom"
    assert d.resume is not None and (d.resume.step, d.resume.safe) == (20, True)
    assert d.resume.path == "/ckpt/step20.pt"
    assert d.to_dict()["resume_from"]["step"] == 20


def test_checkpoint_written_after_a_non_finite_loss_is_not_safe(kb) -> None:
    rows = [
        _save(10, 10.0, 5),
        {
            "signature": "any-nonfinite-loss",
            "text": "step 15: loss is nan, continuing",
            "rank": 1,
            "host": "n0",
            "ts": 15.0,
            "line": 3,
            "file": "rank1.log",
        },
        _save(20, 20.0, 9),
        {
            "signature": "cuda-oom",
            "text": OOM,
            "rank": 2,
            "host": "n0",
            "ts": 30.0,
            "line": 50,
            "file": "rank2.log",
        },
    ] + watchdogs([0, 3], ts=640.0)
    d = diagnose_table(table(rows), signatures=kb)
    assert d.initiating.signature == "cuda-oom"
    assert d.resume is not None and d.resume.step == 20 and not d.resume.safe
    assert "before this checkpoint" in d.resume.reason


def test_no_checkpoint_before_the_fault(kb) -> None:
    rows = [
        {
            "signature": "cuda-oom",
            "text": OOM,
            "rank": 2,
            "host": "n0",
            "ts": 5.0,
            "line": 50,
            "file": "rank2.log",
        },
        _save(10, 10.0, 5),
    ]
    d = diagnose_table(table(rows), signatures=kb)
    assert d.resume is None and d.to_dict()["resume_from"] is None


def test_a_job_cut_mid_run_resumes_from_its_last_checkpoint() -> None:
    case = Path(__file__).parent / "corpus" / "cases" / "053-tr1n-healthy-cut"
    if not case.is_dir():
        pytest.skip("corpus case 053 not present")
    d = dx.diagnose(log_files(case))
    assert d.verdict == "stopped"
    assert d.resume is not None and d.resume.safe and d.resume.step == 6


def test_a_real_job_killed_after_two_checkpoints_resumes_from_the_last() -> None:
    case = Path(__file__).parent / "corpus" / "cases" / "054-ckpt-before-sigkill"
    d = dx.diagnose(log_files(case))
    assert d.initiating is not None and d.initiating.rank == 1
    assert d.resume is not None and d.resume.step == 6 and d.resume.safe
    assert d.resume.path and d.resume.path.endswith("ckpt-step00006.pt")
