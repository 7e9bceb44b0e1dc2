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
    assert d.initiating is not None and d.initiating.line == 2
    assert any("ends inside this traceback" in r for r in d.reasons)


def test_a_traceback_followed_by_more_output_is_not_a_cut_one(tmp_path: Path) -> None:
    # frames, then ordinary lines again: the traceback was not where the log ends
    log = tmp_path / "later.log"
    log.write_text("\n".join([*CUT, "retrying with a smaller batch", "epoch 1 step 11"]) + "\n")
    d = dx.diagnose(str(log))
    assert not any("ends inside this traceback" in r for r in d.reasons)
