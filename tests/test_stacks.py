"""Stack dumps of a hung job name the process that is somewhere else
(denpex_fast.analysis.stacks and the diagnosis around it)."""

from __future__ import annotations

from pathlib import Path

import pytest

import denpex_fast as dx
from denpex_fast.analysis.stacks import odd_stack, parse_stacks

COLLECTIVE = [
    "    all_reduce (torch/distributed/distributed_c10d.py:2050)",
    "    wrapper (torch/distributed/c10d_logger.py:75)",
    "    train_step (train.py:88)",
    "    <module> (train.py:120)",
]
LOADER = [
    "    wait (threading.py:306)",
    "    get (queue.py:179)",
    "    _try_get_data (torch/utils/data/dataloader.py:1011)",
    "    __next__ (torch/utils/data/dataloader.py:530)",
    "    train_step (train.py:80)",
    "    <module> (train.py:120)",
]


def _pyspy(pid: int, frames: list[str]) -> list[str]:
    return [f"Process {pid}: python train.py", "Python v3.11.9 (/usr/bin/python3.11)", ""] + [
        f'Thread {pid} (idle): "MainThread"',
        *frames,
        "",
    ]


def _lines(lines: list[str]) -> list[tuple[int, str]]:
    return list(enumerate(lines, 1))


def test_the_stack_unlike_its_peers_is_named_at_its_first_frame_outside_the_stdlib() -> None:
    stacks = []
    for rank, frames in enumerate([COLLECTIVE, LOADER, COLLECTIVE, COLLECTIVE]):
        stacks += parse_stacks(f"rank{rank}.txt", _lines(_pyspy(100 + rank, frames)))
    pick = odd_stack(stacks)
    assert pick is not None and pick.odd
    assert (pick.processes, pick.distinct, pick.stack.processes) == (4, 2, 1)
    assert (pick.frame.file, pick.frame.line) == ("rank1.txt", 7)
    assert pick.frame.func == "_try_get_data"


def test_headers_that_share_one_stack_count_as_that_many_processes() -> None:
    lines = ['Thread 1 (active): "MainThread"', 'Thread 2 (active): "MainThread"'] + COLLECTIVE
    lines += ['Thread 3 (idle): "MainThread"'] + LOADER
    (a, b) = parse_stacks("node0.txt", _lines(lines))
    assert (a.processes, b.processes) == (2, 1)
    assert odd_stack([a, b]).frame.line == 10  # type: ignore[union-attr]


def test_faulthandler_dumps_and_launcher_prefixes() -> None:
    lines = [
        "[rank0]: Thread 0x00007f3a1c8ff740 (most recent call first):",
        '[rank0]:   File "/usr/lib/python3.10/threading.py", line 320 in wait',
        '[rank0]:   File "/opt/venv/lib/python3.10/site-packages/mylib/io.py", line 41 in fetch',
        '[rank0]:   File "train.py", line 9 in <module>',
    ]

    (s,) = parse_stacks("console.log", _lines(lines))
    assert s.frame.func == "fetch" and s.frame.line == 3


def test_every_process_waiting_alike_is_said_so() -> None:
    stacks = []
    for rank in range(3):
        stacks += parse_stacks(f"r{rank}", _lines(_pyspy(rank, COLLECTIVE)))
    pick = odd_stack(stacks)
    assert pick is not None and not pick.odd
    assert "they all wait in the same place" in pick.why()


@pytest.mark.parametrize("odd_rank", [0, 2])
def test_a_hung_job_dumped_with_py_spy_is_never_healthy(tmp_path: Path, odd_rank: int) -> None:
    for rank in range(4):
        frames = LOADER if rank == odd_rank else COLLECTIVE
        (tmp_path / f"pyspy-rank{rank}.txt").write_text("\n".join(_pyspy(200 + rank, frames)))
    d = dx.diagnose(str(tmp_path))
    assert d.verdict in ("failure", "suspect") and d.initiating is not None
    assert Path(d.initiating.file).name == f"pyspy-rank{odd_rank}.txt"
    assert d.initiating.text.strip() == "_try_get_data (torch/utils/data/dataloader.py:1011)"
    assert d.reasons[0].startswith("the logs are stack dumps of a hung job (4 processes")


def test_a_processs_background_threads_are_not_compared() -> None:
    # one process dumped with all its threads: the main thread is where it
    # hangs, a tqdm monitor or a compile worker waits in every healthy run too
    lines = [
        'Thread 0x7F81445A8440 (active): "MainThread"',
        "    destroy_process_group (torch/distributed/distributed_c10d.py:2184)",
        "    <module> (train.py:554)",
        'Thread 0x7F7D9CFF9640 (idle): "Thread-2"',
        "    wait (threading.py:324)",
        "    run (tqdm/_monitor.py:60)",
    ]
    pick = odd_stack(parse_stacks("dump.txt", _lines(lines)))
    assert pick is not None and pick.processes == 1
    assert (pick.frame.line, pick.frame.func) == (2, "destroy_process_group")


def test_a_dump_captured_with_colour_codes_is_read_without_them() -> None:
    lines = ['\x1b[1mThread 7 (idle):\x1b[0m "MainThread"'] + [
        "\x1b[33m" + x + "\x1b[0m" if "dataloader" in x else x for x in LOADER
    ]
    (s,) = parse_stacks("dump.txt", _lines(lines))
    assert s.main and s.frame.func == "_try_get_data" and s.frame.line == 4


def test_faulthandler_frames_pasted_without_their_header_are_a_dump(tmp_path: Path) -> None:
    # faulthandler prints "line N in f" (a traceback "line N, in f"), most
    # recent call first: the innermost frame outside the stdlib is the wait
    frames = [
        '  File "/usr/lib/python3.10/threading.py", line 320 in wait',
        '  File "/opt/venv/lib/python3.10/site-packages/deepspeed/runtime/engine.py", line 1456'
        " in _checkpoint_tag_validation",
        '  File "/opt/venv/lib/python3.10/site-packages/deepspeed/runtime/engine.py", line 1489'
        " in save_checkpoint",
        '  File "train.py", line 90 in <module>',
    ]
    (s,) = parse_stacks("dump.txt", _lines(frames))
    assert (s.frame.line, s.frame.func) == (2, "_checkpoint_tag_validation")
    (tmp_path / "dump.txt").write_text("\n".join(frames) + "\n")
    d = dx.diagnose(str(tmp_path / "dump.txt"))
    assert d.verdict in ("failure", "suspect") and d.initiating is not None
    assert d.initiating.line == 2
    # the same frames with commas are a traceback, never a dump
    tb = [f.replace(" in ", ", in ") for f in frames]
    assert parse_stacks("tb.txt", _lines(tb)) == []
