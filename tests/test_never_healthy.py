"""A log whose only content is a failure line is never called healthy.

One line each, in the wordings people paste: shell and signal messages,
scheduler and container kills, bare Python exception names, launcher exit
records, CUDA/NCCL errors.  Each must give a ``failure`` or ``suspect``
verdict naming that line."""

from __future__ import annotations

from pathlib import Path

import pytest

import denpex_fast as dx

LINES = [
    "Killed",
    "Segmentation fault (core dumped)",
    "Bus error (core dumped)",
    "Aborted (core dumped)",
    "Floating point exception (core dumped)",
    "terminate called after throwing an instance of 'c10::Error'",
    "srun: error: node17: task 3: Out Of Memory",
    "slurmstepd: error: Detected 1 oom_kill event in StepId=1234.0. Some of the step tasks have been OOM Killed.",
    "*** JOB 1234 ON node17 CANCELLED AT 2024-05-01T12:00:00 DUE TO TIME LIMIT ***",
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -11) local_rank: 0 (pid: 123) of binary: /usr/bin/python",
    "ncclUnhandledCudaError: Call to CUDA function failed.",
    "OSError: [Errno 28] No space left on device",
    "AssertionError",
    "KeyboardInterrupt",
    "[rank2]: torch.cuda.OutOfMemoryError",
    "Exception: training diverged at step 1200",
    "RuntimeError: Detected mismatch between collectives on ranks.",
    "CUDA driver version is insufficient for CUDA runtime version",
    "exit code 137",
    "Process finished with exit code 139 (interrupted by signal 11: SIGSEGV)",
    "nvidia-smi has failed because it couldn't communicate with the NVIDIA driver.",
]


@pytest.mark.parametrize("line", LINES)
def test_a_lone_failure_line_is_named(line: str, tmp_path: Path) -> None:
    log = tmp_path / "pasted.log"
    log.write_text(f"{line}\n")
    d = dx.diagnose(str(log))
    assert d.verdict in ("failure", "suspect"), (line, d.verdict)
    assert d.initiating is not None and d.initiating.line == 1


CUT = [
    "epoch 1 step 10 loss 0.41",
    "Traceback (most recent call last):",
    '  File "/opt/app/train.py", line 74, in <module>',
    "    trainer.fit(model)",
    '  File "/opt/conda/lib/python3.10/site-packages/trainer.py", line 552, in fit',
    "    self._run(model)",
]


@pytest.mark.parametrize("prefix", ["", "[rank3]:"])
def test_a_log_that_ends_inside_a_traceback_failed_there(prefix: str, tmp_path: Path) -> None:
    # the exception line was never written (a cut paste, a process killed
    # while printing): the traceback's header is where the job failed
    log = tmp_path / "cut.log"
    log.write_text("".join(f"{prefix}{x}\n" for x in CUT))
    d = dx.diagnose(str(log))
    assert d.verdict in ("failure", "suspect")
    assert d.initiating is not None and d.initiating.line == 2  # its header
    assert d.initiating.rank == (3 if prefix else None)
    assert any("ends inside this traceback" in r for r in d.reasons)


def test_frames_alone_are_a_traceback_cut_at_both_ends(tmp_path: Path) -> None:
    # a paste of the middle of a traceback: no header, no exception line; the
    # innermost frame's last line is where the error was being raised
    log = tmp_path / "frames.log"
    log.write_text("".join(f"[rank7]:{x}\n" for x in CUT[2:]) + "[rank7]:   \n")
    d = dx.diagnose(str(log))
    assert d.initiating is not None and (d.initiating.line, d.initiating.rank) == (4, 7)


def test_a_traceback_followed_by_more_output_is_not_a_cut_one(tmp_path: Path) -> None:
    # frames, then ordinary lines again: the traceback was not where the log ends
    log = tmp_path / "later.log"
    log.write_text("\n".join([*CUT, "retrying with a smaller batch", "epoch 1 step 11"]) + "\n")
    d = dx.diagnose(str(log))
    assert not any("ends inside this traceback" in r for r in d.reasons)


@pytest.mark.parametrize("lagging", [1, 3])
def test_a_shared_console_stopped_where_the_furthest_process_got(
    tmp_path: Path, lagging: int
) -> None:
    # processes print the same start-up steps into one console; the ones that
    # lag behind repeat steps already passed after the furthest one's last
    # line: the job stopped at that line, not at a repeat of an earlier step
    steps = ["[INFO] [comm.py:637:init_distributed] cdb=None", "[INFO] loading shard 0 of 4"]
    lines = ["Launching 4 processes", *steps, "[INFO] Initializing TorchBackend with backend nccl"]
    lines += [steps[i % 2] for i in range(lagging)]
    log = tmp_path / "console.log"
    log.write_text("\n".join(lines) + "\n")
    d = dx.diagnose(str(log))
    assert d.verdict == "stopped"
    assert any("stopped after" in r and "console.log:4" in r for r in d.reasons), d.reasons


def test_a_single_process_loop_still_stops_where_the_loop_began(tmp_path: Path) -> None:
    log = tmp_path / "console.log"
    log.write_text("start\nwaiting for peers (1)\nwaiting for peers (2)\nwaiting for peers (3)\n")
    d = dx.diagnose(str(log))
    assert d.verdict == "stopped"
    assert any("stopped after" in r and "console.log:2" in r for r in d.reasons), d.reasons


def test_a_single_log_that_just_stops_is_stopped_not_healthy(tmp_path: Path) -> None:
    # no error, no progress line, no completion line: it stops, and that is
    # all that can be said (here: a hang while a kernel is being built)
    log = tmp_path / "console.log"
    log.write_text(
        "Loading checkpoint shards: 100%\n"
        "No pre-built kernel is found, build and load the cpu_adam kernel during runtime now\n"
    )
    d = dx.diagnose(str(log))
    assert d.verdict == "stopped"
    assert any("stopped after" in r and ":2" in r for r in d.reasons), d.reasons


def test_a_long_log_is_stopped_after_its_last_progress_line(tmp_path: Path) -> None:
    # the scan keeps only the first rows of a flood of progress lines; where
    # the job stopped is the file's last one
    log = tmp_path / "rank0.log"
    steps = [f"2026-01-01 00:00:{n % 60:02d},000 INFO step={n} loss=0.5" for n in range(1, 1001)]
    log.write_text("\n".join(["training started", *steps, ""]) + "\n")
    d = dx.diagnose(str(log))
    assert d.verdict == "stopped"
    assert d.stopped_after is not None and d.stopped_after.line == 1001
    assert "step=1000" in d.stopped_after.text


def test_a_rank_named_on_a_continuation_line_of_the_error(tmp_path: Path) -> None:
    # the message states its rank two lines down; the next record's rank is not taken
    log = tmp_path / "err.log"
    log.write_text(
        "RuntimeError: Gloo connectFullMesh failed with [../gloo/transport/tcp/pair.cc:152]\n"
        "  timed out connecting: SO_ERROR: Connection refused, remote=[127.0.0.1]:29500\n"
        "  (rank=8, size=16, local=[127.0.0.1])\n"
        "[rank3]: worker 3 waiting\n"
    )
    d = dx.diagnose(str(log))
    assert d.initiating is not None and (d.initiating.line, d.initiating.rank) == (1, 8)
    log.write_text(
        "RuntimeError: Gloo connectFullMesh failed with [../gloo/transport/tcp/pair.cc:152]\n"
        "[rank3]: worker 3 waiting\n"
    )
    d = dx.diagnose(str(log))
    assert d.initiating is not None and d.initiating.rank is None


def test_a_record_matched_on_its_continuation_starts_at_the_line_it_continues(
    tmp_path: Path,
) -> None:
    # a terminal wrapped the message: only its second physical line matches
    log = tmp_path / "raylet.log"
    head = "(raylet) node_manager.cc:3007: 2 Workers (tasks /\n"
    rest = " actors) killed due to memory pressure (OOM), 0 Workers crashed at node 10.0.0.7\n"
    log.write_text("(raylet) started\n" + head + rest)
    d = dx.diagnose(str(log))
    inc = d.initiating_incident
    assert (
        d.verdict in ("failure", "suspect") and d.initiating is not None and d.initiating.line == 3
    )
    assert inc.covers(d.initiating.file, 2) and not inc.covers(d.initiating.file, 1)
    # a blank line between them: the matched line starts its own record
    log.write_text("(raylet) started\n" + head + "\n" + rest)
    d = dx.diagnose(str(log))
    assert d.initiating is not None and d.initiating.line == 4
    assert not d.initiating_incident.covers(d.initiating.file, 2)
