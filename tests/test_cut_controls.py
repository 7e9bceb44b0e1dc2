"""Healthy controls of every launcher layout: quiet when whole, "stopped" when cut.

Each healthy control of the held-out families (``tests/corpus/holdout*``:
torchrun consoles and per-rank files, accelerate, the deepspeed launcher,
mpirun, mp.spawn, two nodes, torch.distributed.launch) must give "no failure
found" as written, and "stopped" -- never "healthy", never a blamed rank --
when every file is cut before its first line of iteration 6 (whole lines, as a
log collector that stopped mid-run leaves them)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

import denpex_fast as dx

CORPUS = Path(__file__).parent / "corpus"
CONTROLS = sorted(
    p
    for root in ("holdout", "holdout2", "holdout3", "holdout4", "holdout5")
    for p in (CORPUS / root).glob("*-healthy")
    if (p / "truth.json").is_file()
)
# the first line of iteration 6: a worker's own line, or (only the main process
# logging) the progress bar line that reaches 6/10
CUT = re.compile(rb"\biter[ =]6\b|\| ?6/10 \[")


def _logs(case: Path) -> list[Path]:
    return sorted(f for f in case.rglob("*") if f.is_file() and f.name != "truth.json")


def test_every_layout_has_a_control() -> None:
    layouts = {re.sub(r"^(?:v\d-)?\d{3}-", "", p.name) for p in CONTROLS}
    assert {
        "acc-main-healthy",
        "tee-healthy",
        "files-healthy",
        "acc-healthy",
        "dsl-healthy",
        "mpi-healthy",
        "spawn-healthy",
        "tr2n-healthy",
        "launch-healthy",
        "filestee-healthy",
    } <= layouts


@pytest.mark.parametrize("case", CONTROLS, ids=[f"{p.parent.name}/{p.name}" for p in CONTROLS])
def test_whole_control_is_quiet_and_cut_control_stopped(case: Path, tmp_path: Path) -> None:
    whole = dx.diagnose([str(f) for f in _logs(case)])
    assert whole.verdict == "no-failure-found", whole.headline

    cut_files = []
    for f in _logs(case):
        out = tmp_path / f.relative_to(case)
        out.parent.mkdir(parents=True, exist_ok=True)
        keep = []
        for line in f.read_bytes().splitlines(keepends=True):
            if CUT.search(line):
                break
            keep.append(line)
        out.write_bytes(b"".join(keep))
        cut_files.append(str(out))
    cut = dx.diagnose(cut_files)
    assert cut.verdict == "stopped", cut.headline
    assert cut.stopped_after is not None and cut.suspect_rank is None
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_long_runs_keep_their_last_step_when_context_rows_are_capped(tmp_path: Path) -> None:
    # the diagnosis keeps CONTEXT_ROWS rows per file of each progress signature;
    # a log far longer still ends at its own last step, read from its tail
    from denpex_fast.analysis.diagnosis import CONTEXT_ROWS

    n = 3 * CONTEXT_ROWS
    for r in range(2):
        last = n if r == 0 else n - 500  # rank 1 stops 500 steps early
        (tmp_path / f"rank{r}.log").write_text(
            "".join(
                f"2024-05-01 12:{i // 3600 % 60:02d}:{i % 60:02d},000 INFO rank={r} step={i} "
                f"loss=0.5\n"
                for i in range(1, last + 1)
            )
        )
    d = dx.diagnose(str(tmp_path))
    assert d.stats["matches"] < 2 * n  # the middle of each run was not kept
    assert d.verdict in ("suspect", "failure", "stopped")
    assert d.initiating is None or d.initiating.rank == 1
    fates = {f["rank"]: f for f in d.rank_fates.to_pylist()}
    assert fates[0]["last_step"] == n and fates[1]["last_step"] == n - 500
