"""Attribution: rank, host and ts of match-table rows, from lines, paths and earlier lines.

Every table here comes from the real Scanner over files written to a tmp
dir (or the shared corpus), so offsets, names and texts are what attribution
sees in production.
"""

from __future__ import annotations

import datetime as dt
import gzip
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from denpex_fast.engine.scanner import MATCH_SCHEMA, Scanner
from denpex_fast.facts.attribution import Attribution, attribute, path_facts

UTC = dt.timezone.utc
REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "tests" / "data" / "synthetic_gpu_oom_console.log"
LOCAL_CORPUS = REPO / "tests" / "corpus" / "public"


@pytest.fixture(scope="module")
def every_line() -> Scanner:
    """A scanner with one row per non-blank line."""
    return Scanner(patterns={"line": r"\S"}, cache_dir=False)


def _scan_lines(
    scanner: Scanner, tmp_path: Path, lines: list[str], name: str = "x.log", **kw: object
) -> Attribution:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))
    return attribute(scanner.scan([path]), **kw)


def _rows(att: Attribution) -> list[dict]:
    return sorted(att.table.to_pylist(), key=lambda r: (r["file"], r["line"]))


def _ts(*args: int) -> dt.datetime:
    return dt.datetime(*args, tzinfo=UTC)


# -- rank from the line --------------------------------------------------------------------

RANK_CASES = [
    # collector prefixes before the rank's own: CRI container log files, docker compose
    ("2024-05-01T12:00:00.123456789Z stderr F [rank3]: RuntimeError: boom", 3),
    ("trainer-1  | [rank2]: RuntimeError: boom", 2),
    ("[rank3]: RuntimeError: boom", 3),
    ("[default3]: RuntimeError: boom", 3),
    ("[rank3]:[E501 12:10:40.512000 21000 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog", 3),
    ("[2024-05-01 12:00:00,123] [INFO] [logging.py:96:log_dist] [Rank 3] step=1", 3),
    ("[E501 12:10:40.613000 21000 ProcessGroupNCCL.cpp:1664] [PG 0 Rank 3] Timeout", 3),
    ("[E817 17:40:34.227 1 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) Rank 12] boom", 12),
    ("[E501 12:10:40.613000 21000 ProcessGroupNCCL.cpp:1664] [PG 3 Rank 1] Timeout", None),
    ("[Rank 3] Watchdog caught collective operation timeout", 3),
    ("[1,3]<stderr>:RuntimeError: boom", 3),
    ("[1,3]<stdout>:hello", 3),
    # mpirun --timestamp-output --tag-output: ctime() glued to the tag
    ("Tue Nov 27 13:49:06 2018[1,10]<stdout>:F1127 13:49:06.743296 17418 cu.cc:5] boom", 10),
    ("Mon Jan  7 03:09:06 2019[1,2]<stderr>:RuntimeError: boom", 2),
    # horovodrun under Gloo tags a worker's stream with its rank alone
    ("[3]<stderr>:RuntimeError: boom", 3),
    # SageMaker's mpirun: [job,mpirank:rank,host]
    ("[1,mpirank:14,algo-2]<stdout>:[2022-04-21 09:13:02.565: C worker.py:108] [14] boom", 14),
    ("Tue Jun  9 20:10:40 2020[1]<stderr>:  what():  [http_store.cc:53] Wait timeout", 1),
    ("[2020-06-09T20:10:40Z] cf108822 [RUNNING] ||  Tue Jun  9 20:10:40 2020[1]<stderr>:boom", 1),
    ("3: RuntimeError: boom", 3),
    ("worker-3: RuntimeError: boom", None),  # pdsh names a host, not a rank
    ("node12: [rank5]: RuntimeError: boom", 5),
    ("(VllmWorker rank=1 pid=254) ERROR 05-01 12:00:00 worker.py:1] boom", 1),
    ("(Worker_TP1 pid=5298) ERROR 01-29 02:01:11 [multiproc_executor.py:822] boom", 1),
    ("(Worker_DP0_TP3_EP3 pid=5298) ERROR 01-29 02:01:11 [multiproc_executor.py:822] boom", 3),
    ("(Worker_PP0_TP2 pid=5298) RuntimeError: boom", 2),
    (
        "(Worker_DP1_TP1_EP3 pid=5298) RuntimeError: boom",
        None,
    ),  # data-parallel rank 1: size unknown
    ("(EngineCore_DP0 pid=17833) RuntimeError: boom", None),
    ("(RayWorkerWrapper pid=1061) [rank2]:[E212 02:14:01.179080356 Gloo.cpp:143] boom", 2),
    ("Initializing distributed: GLOBAL_RANK: 3, MEMBER: 4/8", 3),
    (
        "E0501 12:10:41.420000 140213 api.py:833] failed (exitcode: 1) local_rank: 2 (pid: 21002)"
        " of binary: /usr/bin/python3",
        2,
    ),
    ("  rank      : 2 (local_rank: 2)", 2),
    ("[default0]:[rank12]:[E817 17:40:34.227531918 ProcessGroupNCCL.cpp:1515] boom", 12),
    # an srun task label numbers tasks; torchrun's [rankN]: behind it names the process
    ("3: [rank5]: boom", 5),
    ("[1,3]<stderr>:[rank3]: boom", 3),
    ("node12:3121:3180 [3] NCCL WARN NET/IB : Got completion", None),  # [3] is a GPU
    ("  Process name: [[11192,1],8]", 8),
    # an Open MPI component names the process printing: [host][[job,1],vpid][file.c:N:fn]
    ("[u10-66][[38971,1],2][btl_tcp_endpoint.c:796:complete_connect] connect() failed", 2),
    ("[node1:12345] *** Process received signal ***", None),
    ("trainer-1  | [u10-66][[38971,1],5][btl_tcp_endpoint.c:796:fn] connect() failed", 5),
    ("srun: error: node12: task 3: Out Of Memory", 3),
    ("RuntimeError: CUDA error: an illegal memory access was encountered", None),
    ("Epoch 3: 100%|##########| 10/10", None),
    # a script's own logger: any case, with or without brackets, separators or "of N"
    ("[rank 2] iter 4/10 | loss 1.1602", 2),
    ("[rank: 1] Seed set to 42", 1),
    # HCCL's own logs: rank[N] beside rankNum[N] (a count) and remoteRank[N] (a peer)
    ("hcom init failed, rankNum[8], rank[0], server[10.0.0.1], device[0]", 0),
    ("[Connect]remoteRank[3] connect timeout", None),
    ("[default1]:[RANK 3] loss 0.5", 3),  # a global rank beats the local role prefix
    ("2026-12-04T03:10:00.123Z INFO trainer.rank2 iter=4 loss=0.6931", 2),
    ("INFO 2020-01-17 00:55:01,702 Rank 1 will connect to TCPStore server", 1),
    ("starting: rank 3 of 4, local rank 3, pid 55", 3),
    ("start rank=3 world=4 local_rank=3 pid=12", 3),
    # a rank qualified by another word names another process
    ("connection to peer rank 3 closed", None),
    ("recv from src_rank=0 timed out", None),
    ("local rank 1 started", None),
    ("the ranking 3 is stale", None),
    # torch.multiprocessing.spawn names the failed child by its process index
    ("-- Process 3 terminated with the following error:", 3),
    # terminal colours kept in a captured log
    ("\x1b[36m(VllmWorker rank=1 pid=254)\x1b[0m ERROR 05-01 12:00:00 worker.py:1] boom", 1),
    (
        "torch.multiprocessing.spawn.ProcessExitedException: process 2 terminated with signal SIGKILL",
        2,
    ),
    # a worker echoing the argv its launcher gave it (local ranks: one node here)
    ("main.py: error: unrecognized arguments: --local-rank=1", 1),
    ("train.py: error: unrecognized arguments: --fp16 --local_rank=3", 3),
    ("Namespace(batch_size=8, local_rank=2, lr=(0.1, 0.2))", 2),
    ("the launcher sets local_rank=2 for its second worker", None),
    # the launcher's spawn record names its child; its failed-exit report
    # echoes the last command it spawned, whichever child failed
    (
        "[2024-05-01 12:00:00,100] [INFO] [launch.py:256:main] process 761 spawned with "
        "command: ['/usr/bin/python3', '-u', 'train.py', '--local_rank=2', '--steps', '12']",
        2,
    ),
    (
        "[2024-05-01 12:00:07,687] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python3', "
        "'-u', 'train.py', '--local_rank=3', '--steps', '12'] exits with return code = 5",
        None,
    ),
    (
        "subprocess.CalledProcessError: Command '['/usr/bin/python', '-u', 'train.py', "
        "'--local_rank=3', 'data-bin']' returned non-zero exit status 1.",
        None,
    ),
    # behind a log collector's prefix: docker compose, kubelet's CRI files
    ("trainer-1  | [rank4]:[E1129 11:56:57.204156533 ProcessGroupNCCL.cpp:1785] boom", 4),
    ("2024-05-01T12:00:00.123456789Z stderr F [rank2]: RuntimeError: boom", 2),
    ("2024-05-01T12:00:00.123456789Z stdout P 3: RuntimeError: boom", 3),
    ("loss | 0.5 at step 3", None),
    # JAX's coordination service names the process by its task index
    (
        "2024-10-09 15:47:38.568412: E external/xla/xla/tsl/distributed_runtime/coordination/"
        "coordination_service.cc:1170] /job:jax_worker/replica:0/task:3 has been set to ERROR",
        3,
    ),
    (
        "[ERROR] 2024-05-21-11:57:54 (PID:927000, Device:3, RankID:3) ERR02200 DIST call hccl "
        "api failed.",
        3,
    ),
    # SGLang's scheduler tag: the TP rank is global unless pipeline stages renumber it
    ("[2025-02-23 06:04:22 TP7] Scheduler hit an exception: Traceback", 7),
    ("[2025-05-01 12:00:00 DP1 TP3 EP3] Scheduler hit an exception: Traceback", 3),
    ("[2025-05-01 12:00:00 PP1 TP3] Scheduler hit an exception: Traceback", None),
]


@pytest.mark.parametrize("line,rank", RANK_CASES, ids=[c[0][:40] for c in RANK_CASES])
def test_rank_from_line(every_line: Scanner, tmp_path: Path, line: str, rank: int | None) -> None:
    (row,) = _rows(_scan_lines(every_line, tmp_path, [line]))
    assert row["rank"] == rank


# -- host from the line --------------------------------------------------------------------

HOST_CASES = [
    ("node12:3121:3180 [3] NCCL WARN NET/IB : Got completion", "node12"),
    ("[rank0]: node7:21000:21000 [0] NCCL INFO Bootstrap : Using eth0", "node7"),
    ("task-646--1-mhpnk:91:123 [0] transport/net_ib.cc:881 NCCL WARN NET/IB", "task-646--1-mhpnk"),
    ("worker-3: RuntimeError: boom", "worker-3"),
    ("node12: hello", "node12"),
    ("ddp-0.ddp.ml-dev.svc.cluster.local: hello", "ddp-0.ddp.ml-dev.svc.cluster.local"),
    ("  host      : node7", "node7"),
    ("May 01 12:00:00 node12 kernel: NVRM: Xid (PCI:0000:3b:00): 79", "node12"),
    ("May  1 12:00:00 node12 kernel: [12345.678901] NVRM: Xid 79", "node12"),
    ("2024-05-01T12:00:00+0000 node12 kernel: NVRM: Xid 79", "node12"),
    (
        "slurmstepd: error: *** JOB 1234 ON node12 CANCELLED AT 2024-05-01T12:00:00 DUE TO TIME "
        "LIMIT ***",
        "node12",
    ),
    ("slurmstepd: error: *** STEP 494583.0 ON ... CANCELLED AT 2024-04-20T09:09:37 ***", None),
    ("srun: error: node12: task 3: Terminated", "node12"),
    ("[pod/pytorchjob-x-worker-3/pytorch] RuntimeError: boom", "pytorchjob-x-worker-3"),
    ("Warning  Evicted  pod pytorchjob-x-worker-3 was evicted", "pytorchjob-x-worker-3"),
    ("(RayWorkerWrapper pid=1061, ip=10.0.0.2) ERROR boom", "10.0.0.2"),
    ("mpirun noticed that process rank 8 with PID 0 on node node05 exited on signal 9", "node05"),
    ("[u10-66][[38971,1],2][btl_tcp_endpoint.c:796:complete_connect] connect() failed", "u10-66"),
    ("RuntimeError: CUDA error: out of memory", None),
    ("2024-05-01T12:00:00Z INFO root: message", None),
    ("[rank2]: torch.OutOfMemoryError: CUDA out of memory.", None),
    # a CANN error code opens the line the way a pdsh host would
    ("EI0002: [PID: 7277] 2024-11-28-11:59:30.645.648 The wait execution times out.", None),
    ("EJ0001: 2024-05-21-11:57:54.167.645 Failed to initialize the HCCP process.", None),
]


@pytest.mark.parametrize("line,host", HOST_CASES, ids=[c[0][:40] for c in HOST_CASES])
def test_host_from_line(every_line: Scanner, tmp_path: Path, line: str, host: str | None) -> None:
    (row,) = _rows(_scan_lines(every_line, tmp_path, [line]))
    assert row["host"] == host


# -- rank and host from the path -----------------------------------------------------------

PATH_CASES = [
    ("rank5.log", 5, None),
    ("logs/rank_5.txt", 5, None),
    ("rank-3.out", 3, None),
    ("train_rank3.log", 3, None),
    ("node3/rank5.log", 5, "node3"),
    ("logs/rank7/stdout.log", 7, None),
    ("abc123/attempt_0/5/stderr.log", 5, None),
    ("job-worker-3.log", 3, "job-worker-3"),
    ("log/workerlog.4", 4, None),  # Paddle's launcher: the trainer's index
    ("worker_2.log", 2, None),  # MindSpore's msrun
    ("slurm-1234_3.out", None, None),  # array task 3, not rank 3
    ("case-oom-rank2-watchdog/train.log", None, None),  # a word in a directory name
    ("mp_rank_03_model_states.log", None, None),
    ("host-node3.log", None, "node3"),
    ("node3/console.log", None, "node3"),
    ("logs/gpu-a100-07.log", None, "gpu-a100-07"),
    ("nid001234/run/x.log", None, "nid001234"),
    ("node48_pyspy_dump1.txt", None, "node48"),
    ("llama3/train.log", None, None),
    ("run3/console.log", None, None),
]


@pytest.mark.parametrize("rel,rank,host", PATH_CASES, ids=[c[0] for c in PATH_CASES])
def test_rank_host_from_path(
    every_line: Scanner, tmp_path: Path, rel: str, rank: int | None, host: str | None
) -> None:
    (row,) = _rows(_scan_lines(every_line, tmp_path, ["RuntimeError: boom"], name=rel))
    assert (row["rank"], row["host"]) == (rank, host)
    assert path_facts(rel).rank == rank


def test_torchrun_log_dir_rank_is_noted_as_local(every_line: Scanner, tmp_path: Path) -> None:
    att = _scan_lines(every_line, tmp_path, ["boom"], name="run1/attempt_0/2/stderr.log")
    assert _rows(att)[0]["rank"] == 2
    assert any("--log-dir" in n and "local rank" in n for n in att.notes)


def test_line_prefix_beats_path(every_line: Scanner, tmp_path: Path) -> None:
    rows = _rows(_scan_lines(every_line, tmp_path, ["[rank3]: boom", "boom"], name="rank5.log"))
    assert [r["rank"] for r in rows] == [3, 5]


# -- timestamps ----------------------------------------------------------------------------

TS_CASES = [
    ("2024-05-01T12:00:00Z boom", _ts(2024, 5, 1, 12)),
    ("2024-05-01T12:00:00.123456+02:00 boom", _ts(2024, 5, 1, 10, 0, 0, 123456)),
    ("2024-05-01 12:00:00 +0200 boom", _ts(2024, 5, 1, 10)),
    ("2024-05-01T12:00:00 boom", _ts(2024, 5, 1, 12)),
    ("2024-05-01 12:00:00,123 INFO train.py:88 boom", _ts(2024, 5, 1, 12, 0, 0, 123000)),
    ("[rank1]: 2024-05-01 12:00:05,210 INFO train.py:88 step=1", _ts(2024, 5, 1, 12, 0, 5, 210000)),
    (
        "[2024-05-01 12:00:00,123] [INFO] [logging.py:96:log_dist] [Rank 0] boom",
        _ts(2024, 5, 1, 12, 0, 0, 123000),
    ),
    ("  time      : 2024-05-01_12:10:41", _ts(2024, 5, 1, 12, 10, 41)),
    ("2024-05-01T12:00:00.123456789Z boom", _ts(2024, 5, 1, 12, 0, 0, 123456)),
    ("[1714564800.123] boom", _ts(2024, 5, 1, 12, 0, 0, 123000)),
    ("[Wed May  1 12:00:00 2024] NVRM: Xid 79", _ts(2024, 5, 1, 12)),
    ("2024/05/01 12:00:03 worker 3 lost", _ts(2024, 5, 1, 12, 0, 3)),
    ("[2024/05/01 12:00:03.250] boom", _ts(2024, 5, 1, 12, 0, 3, 250000)),
    ("05/01/2024 12:00:03 - INFO - __main__ - boom", _ts(2024, 5, 1, 12, 0, 3)),
    ("[rank1]: 05/01/2024 12:00:03 - WARNING - boom", _ts(2024, 5, 1, 12, 0, 3)),
    (
        "slurmstepd: error: *** JOB 1 ON node12 CANCELLED AT 2024-05-01T12:00:00 ***",
        _ts(2024, 5, 1, 12),
    ),
    ("[2023-10-30 14:14:35] 2023-10-30 06:14:35,574 WARNING x", _ts(2023, 10, 30, 14, 14, 35)),
    # year-less forms: the year comes from the dated first line of the file
    ("I0501 12:00:00.123456 21000 worker.cc:12] boom", _ts(2024, 5, 1, 12, 0, 0, 123456)),
    (
        "[rank0]:[E501 12:10:40.512000 21000 ProcessGroupNCCL.cpp:632] [Rank 0] boom",
        _ts(2024, 5, 1, 12, 10, 40, 512000),
    ),
    ("W1026 03:51:31.222000 2521679 api.py:897] boom", _ts(2024, 10, 26, 3, 51, 31, 222000)),
    ("May 01 12:00:00 node12 kernel: NVRM: Xid 79", _ts(2024, 5, 1, 12)),
    ("May  1 12:00:00 node12 kernel: NVRM: Xid 79", _ts(2024, 5, 1, 12)),
    ("INFO 05-01 12:00:00 worker.py:1] boom", _ts(2024, 5, 1, 12)),
    (
        "(RayWorkerWrapper pid=1061) ERROR 05-01 12:00:00 worker_base.py:574] boom",
        _ts(2024, 5, 1, 12),
    ),
    # look-alikes that are no timestamps
    ("ckpt_2024-05-01_12:00:00 saved", None),
    ("Epoch 3: 45%|####| 30/67 [27:15<23:13, 37.65s/it]", None),
    ("E1302 12:00:00.000000 1 x.cc:1] month 13", None),
    ("13/05/2024 12:00:00 day first", None),
    ("loaded shards 2024/05/0 of 12:00:00", None),
]


@pytest.mark.parametrize("line,ts", TS_CASES, ids=[c[0][:40] for c in TS_CASES])
def test_timestamp_from_line(
    every_line: Scanner, tmp_path: Path, line: str, ts: dt.datetime | None
) -> None:
    # the dated first line gives year-less forms their year, and lines
    # without a timestamp of their own (ts None here) carry its time
    att = _scan_lines(every_line, tmp_path, ["2024-01-01 00:00:00 dated start", line])
    row = _rows(att)[1]
    carried = att.ts_carried.to_pylist()[att.table.column("line").to_pylist().index(2)]
    assert row["ts"] == (ts or _ts(2024, 1, 1))
    assert carried is (ts is None)


def test_naive_times_use_default_tz_and_aware_times_do_not(
    every_line: Scanner, tmp_path: Path
) -> None:
    att = _scan_lines(
        every_line,
        tmp_path,
        [
            "2024-05-01 12:00:00 naive",
            "2024-05-01T12:00:00Z aware",
            "2024-01-15 12:00:00 naive in winter",
        ],
        default_tz="Europe/Paris",
    )
    assert [r["ts"] for r in _rows(att)] == [
        _ts(2024, 5, 1, 10),
        _ts(2024, 5, 1, 12),
        _ts(2024, 1, 15, 11),
    ]
    assert any("naive timestamps in" in n and "Europe/Paris" in n for n in att.notes)


def test_unknown_time_zone_is_an_error(every_line: Scanner, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="time zone"):
        _scan_lines(every_line, tmp_path, ["boom"], default_tz="Mars/Olympus")


def test_missing_year_from_other_timestamps_in_the_file(
    every_line: Scanner, tmp_path: Path
) -> None:
    att = _scan_lines(
        every_line,
        tmp_path,
        ["I0501 12:00:00.000000 1 a.cc:1] first", "2021-05-01 12:00:01,000 INFO dated"],
    )
    assert _rows(att)[0]["ts"] == _ts(2021, 5, 1, 12)
    assert any("took the year from other timestamps" in n for n in att.notes)


def test_missing_year_across_new_year(every_line: Scanner, tmp_path: Path) -> None:
    att = _scan_lines(
        every_line,
        tmp_path,
        ["2023-12-31 23:59:59 INFO dated", "I0101 00:00:01.000000 1 a.cc:1] next day"],
    )
    assert _rows(att)[1]["ts"] == _ts(2024, 1, 1, 0, 0, 1)


def test_missing_year_from_mtime_when_no_dated_line(every_line: Scanner, tmp_path: Path) -> None:
    path = tmp_path / "glog.log"
    path.write_text("E0501 12:00:00.000000 1 a.cc:1] boom\nE1230 12:00:00.000000 1 a.cc:1] x\n")
    mtime = dt.datetime(2023, 6, 1, tzinfo=UTC).timestamp()
    os.utime(path, (mtime, mtime))
    att = attribute(every_line.scan([path]))
    # a line is not written after its file: Dec 30 is the previous December
    assert [r["ts"] for r in _rows(att)] == [_ts(2023, 5, 1, 12), _ts(2022, 12, 30, 12)]
    assert any("modification time" in n for n in att.notes)


def test_dmesg_uptime_without_anchor_stays_null(every_line: Scanner, tmp_path: Path) -> None:
    att = _scan_lines(
        every_line, tmp_path, ["[12345.678901] NVRM: Xid (PCI:0000:3b:00): 79"], name="dmesg.txt"
    )
    assert _rows(att)[0]["ts"] is None
    assert any("no boot anchor" in n and "boot_time" in n for n in att.notes)
    # its own (unusable) time is not replaced by an earlier line's
    att = _scan_lines(
        every_line,
        tmp_path,
        ["2024-05-01 12:00:00 INFO dated", "[12345.678901] NVRM: Xid 79"],
        name="mixed.txt",
    )
    assert _rows(att)[1]["ts"] is None
    assert att.ts_carried.to_pylist() == [False, False]


def test_dmesg_uptime_with_boot_time_argument(every_line: Scanner, tmp_path: Path) -> None:
    att = _scan_lines(
        every_line,
        tmp_path,
        ["[   10.500000] NVRM: Xid 79"],
        name="dmesg.txt",
        boot_time="2024-05-01T12:00:00Z",
    )
    assert _rows(att)[0]["ts"] == _ts(2024, 5, 1, 12, 0, 10, 500000)
    att = _scan_lines(
        every_line,
        tmp_path,
        ["[   10.500000] NVRM: Xid 79"],
        name="d2.txt",
        boot_time={str(tmp_path / "d2.txt"): 1714564800.0},
    )
    assert _rows(att)[0]["ts"] == _ts(2024, 5, 1, 12, 0, 10, 500000)


def test_dmesg_uptime_anchored_by_a_clock_line_in_the_file(
    every_line: Scanner, tmp_path: Path
) -> None:
    lines = [
        "[    5.000000] rtc_cmos 00:00: setting system clock to 2024-05-01T12:00:05 UTC "
        "(1714564805)",
        "[  100.250000] NVRM: Xid (PCI:0000:3b:00): 79",
    ]
    att = _scan_lines(every_line, tmp_path, lines, name="dmesg.txt")
    assert _rows(att)[1]["ts"] == _ts(2024, 5, 1, 12, 1, 40, 250000)
    # a syslog line with the kernel's uptime anchors too
    lines = ["May 01 12:00:05 node12 kernel: [    5.000000] booted", "[  100.250000] NVRM: Xid 79"]
    att = _scan_lines(every_line, tmp_path, ["2024-05-01 00:00:00 start", *lines], name="k.txt")
    assert _rows(att)[2]["ts"] == _ts(2024, 5, 1, 12, 1, 40, 250000)


# -- carrying the nearest earlier timestamp ------------------------------------------------


def test_sample_job_oom_row(tmp_path: Path) -> None:
    att = attribute(Scanner(cache_dir=False).scan([SAMPLE]))
    rows = att.table.to_pylist()
    carried = att.ts_carried.to_pylist()
    oom = [i for i, r in enumerate(rows) if "CUDA out of memory" in r["text"]]
    assert oom
    row = rows[oom[0]]
    assert row["rank"] == 2
    assert row["host"] == "node7"
    # expected: the last timestamped line above it, found here by reading the whole file
    lines = SAMPLE.read_text().splitlines()
    before = [ln for ln in lines[: row["line"] - 1] if " INFO train.py" in ln]
    stamp = before[-1].split(": ", 1)[1][:23]
    expected = dt.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=UTC)
    assert row["ts"] == expected
    assert carried[oom[0]] is True
    assert any("read back from the file" in n for n in att.notes)


def test_carry_reads_back_past_the_first_window(every_line: Scanner, tmp_path: Path) -> None:
    # 200 KiB without a timestamp between the dated line and the failing row
    scanner = Scanner(patterns={"boom": r"boom"}, cache_dir=False)
    path = tmp_path / "long.log"
    filler = "".join(f"progress {i} " + "x" * 90 + "\n" for i in range(2000))
    path.write_text(
        "2024-05-01 11:00:00 INFO older\n2024-05-01 12:00:00 INFO latest\n"
        + filler
        + "RuntimeError: boom\n"
    )
    att = attribute(scanner.scan([path]))
    (row,) = att.table.to_pylist()
    assert row["ts"] == _ts(2024, 5, 1, 12)
    assert att.ts_carried.to_pylist() == [True]


def test_carry_takes_the_nearest_not_the_previous_row(every_line: Scanner, tmp_path: Path) -> None:
    scanner = Scanner(patterns={"boom": r"boom"}, cache_dir=False)
    path = tmp_path / "c.log"
    path.write_text(
        "2024-05-01 12:00:00 INFO boom first\nno time\n"
        "2024-05-01 12:30:00 INFO between\nRuntimeError: boom\n"
    )
    att = attribute(scanner.scan([path]))
    assert [r["ts"] for r in _rows(att)] == [_ts(2024, 5, 1, 12), _ts(2024, 5, 1, 12, 30)]
    assert att.ts_carried.to_pylist() == [False, True]


def test_row_at_offset_zero_with_nothing_before_stays_null(
    every_line: Scanner, tmp_path: Path
) -> None:
    att = _scan_lines(every_line, tmp_path, ["RuntimeError: boom", "2024-05-01 12:00:00 later"])
    rows = _rows(att)
    assert rows[0]["offset"] == 0 and rows[0]["ts"] is None
    assert att.ts_carried.to_pylist()[0] is False


def test_carry_in_gzip_uses_earlier_rows_of_the_table(every_line: Scanner, tmp_path: Path) -> None:
    path = tmp_path / "rank1.log.gz"
    path.write_bytes(
        gzip.compress(
            b"2024-05-01 12:00:00 INFO dated\nno time here\nTraceback (most recent call last):\n"
        )
    )
    att = attribute(every_line.scan([path]))
    rows = _rows(att)
    assert [r["ts"] for r in rows] == [_ts(2024, 5, 1, 12)] * 3
    assert [r["rank"] for r in rows] == [1, 1, 1]
    assert att.ts_carried.to_pylist() == [False, True, True]
    assert any("not read back (compressed)" in n for n in att.notes)


def test_gzip_row_without_an_earlier_timestamped_row_stays_null(tmp_path: Path) -> None:
    scanner = Scanner(patterns={"boom": r"boom"}, cache_dir=False)
    path = tmp_path / "x.log.gz"
    path.write_bytes(gzip.compress(b"2024-05-01 12:00:00 INFO dated\nRuntimeError: boom\n"))
    att = attribute(scanner.scan([path]))
    assert att.table.column("ts").to_pylist() == [None]


def test_read_context_false_opens_no_file(every_line: Scanner, tmp_path: Path) -> None:
    path = tmp_path / "x.log"
    path.write_text("2024-05-01 12:00:00 INFO dated\nno time\n")
    table = every_line.scan([path])
    path.unlink()  # nothing left to read: the result must not depend on the file
    att = attribute(table, read_context=False)
    assert [r["ts"] for r in _rows(att)] == [_ts(2024, 5, 1, 12)] * 2
    assert any("read_context=False" in n for n in att.notes)


# -- real logs -----------------------------------------------------------------------------


def _corpus_case(prefix: str) -> list[Path]:
    hits = sorted(LOCAL_CORPUS.glob(prefix + "*"))
    assert hits, f"corpus case {prefix} is missing from {LOCAL_CORPUS}"
    return [p for p in sorted(hits[0].iterdir()) if p.name != "truth.json"]


def _corpus_row(files: list[Path], name: str, line: int) -> dict:
    scanner = Scanner(patterns={"line": r"\S"}, cache_dir=False)
    att = attribute(scanner.scan(files))
    (row,) = [
        r
        for r in att.table.to_pylist()
        if os.path.basename(r["file"]) == name and r["line"] == line
    ]
    return row


def test_nccl_host_pid_tid_line(tmp_path: Path) -> None:
    # NCCL's debug prefix: host, pid, thread id, CUDA device (never a rank)
    log = tmp_path / "nccl_debug.log"
    log.write_text(
        "r11i6n2:486514:486651 [1] include/socket.h:403 NCCL WARN Connect to "
        "10.148.3.247<56821> failed : Connection refused\n"
    )
    row = _corpus_row([log], "nccl_debug.log", 1)
    assert row["host"] == "r11i6n2" and row["rank"] is None


def test_signal_handler_host_pid_prefix(tmp_path: Path) -> None:
    # Open MPI's and glibc's handlers tag their report with [host:pid]
    log = tmp_path / "console.log"
    log.write_text("[gpu-n12:4711] Signal: Segmentation fault (11)\n")
    row = _corpus_row([log], "console.log", 1)
    assert row["host"] == "gpu-n12" and row["rank"] is None


def test_a_rank_glued_to_the_message_is_read(tmp_path: Path) -> None:
    # IBM Spectrum MPI's PAMI layer: "[rank]Message", no separator
    log = tmp_path / "console.log"
    log.write_text("[3]Error opening IPC Memhandle from peer:1, invalid argument\n[7]x\n")
    assert _corpus_row([log], "console.log", 1)["rank"] == 3


def test_real_nccl_pod_host_and_oom_rank() -> None:
    files = _corpus_case("104-")
    assert _corpus_row(files, "train_log.txt", 1)["rank"] == 2
    row = _corpus_row(files, "train_log.txt", 2)
    assert row["host"] == "liangxianchen-funasr-15wh-train-lxc0-w-0" and row["rank"] is None


def test_real_nested_torchrun_prefixes_take_the_global_rank() -> None:
    row = _corpus_row(_corpus_case("116-"), "rank_logs.txt", 1)
    assert row["rank"] == 12
    assert row["ts"].month == 8 and row["ts"].day == 17 and row["ts"].hour == 17


def test_real_slurm_srun_host_and_task() -> None:
    files = _corpus_case("108-")
    row = _corpus_row(files, "srun_log.txt", 5)
    assert (row["rank"], row["host"]) == (0, "DEL2212S020")
    assert _corpus_row(files, "srun_log.txt", 2)["ts"] == _ts(2024, 4, 23, 12, 18, 8)


def test_real_ray_worker_rank_from_the_same_process() -> None:
    files = _corpus_case("106-")
    # line 2 has no rank; line 3 of the same Ray worker (pid 1061) says [rank2]
    assert _corpus_row(files, "ray_worker_log.txt", 2)["rank"] == 2


def test_bracketed_timestamps_and_host_from_a_dump_file_name(
    every_line: Scanner, tmp_path: Path
) -> None:
    # a cluster monitor's bracketed timestamps; a py-spy dump named for its node
    main = tmp_path / "main_log.txt"
    main.write_text(
        "[default7]: iteration    10/  100 | lm loss: 2.3\n"
        "[2022-05-01 03:56:11] PULSE: job-x is running for 1-07:27:33\n"
    )
    dump = tmp_path / "node48_pyspy_dump1.txt"
    dump.write_text('Thread 688510 (active): "MainThread"\n')
    files = [main, dump]
    assert _corpus_row(files, "main_log.txt", 2)["ts"] == _ts(2022, 5, 1, 3, 56, 11)
    assert _corpus_row(files, "node48_pyspy_dump1.txt", 1)["host"] == "node48"


# -- contract ------------------------------------------------------------------------------


def test_schema_order_and_kept_values(every_line: Scanner, tmp_path: Path) -> None:
    path = tmp_path / "x.log"
    path.write_text("[rank3]: 2024-05-01 12:00:00 INFO a\nb\n[rank4]: c\n")
    table = every_line.scan([path])
    # a caller's values stay: rank of row 0, host of row 1, ts of row 2
    table = table.set_column(6, MATCH_SCHEMA.field("rank"), pa.array([9, None, None], pa.int32()))
    table = table.set_column(
        7, MATCH_SCHEMA.field("host"), pa.array([None, "given", None]).dictionary_encode()
    )
    table = table.set_column(
        8,
        MATCH_SCHEMA.field("ts"),
        pa.array([None, None, _ts(2020, 1, 1)], pa.timestamp("us", "UTC")),
    )
    att = attribute(table)
    assert att.table.schema.equals(MATCH_SCHEMA, check_metadata=False)
    assert att.table.column("line").to_pylist() == table.column("line").to_pylist()
    rows = att.table.to_pylist()
    assert [r["rank"] for r in rows] == [9, None, 4]
    assert rows[1]["host"] == "given"
    assert [r["ts"] for r in rows] == [_ts(2024, 5, 1, 12), _ts(2024, 5, 1, 12), _ts(2020, 1, 1)]
    assert len(att.ts_carried) == 3


def test_empty_table() -> None:
    att = attribute(MATCH_SCHEMA.empty_table())
    assert att.table.num_rows == 0 and att.notes == [] and len(att.ts_carried) == 0
    assert att.table.schema.equals(MATCH_SCHEMA, check_metadata=False)


def test_table_of_a_missing_file_carries_rows(every_line: Scanner, tmp_path: Path) -> None:
    table = every_line.scan_bytes(
        b"2024-05-01 12:00:00 INFO a\nno time\n", name=str(tmp_path / "gone.log")
    )
    att = attribute(table)
    assert [r["ts"] for r in _rows(att)] == [_ts(2024, 5, 1, 12)] * 2
    assert any("not read back" in n for n in att.notes)


def test_many_files_and_chunks_keep_rows_apart(every_line: Scanner, tmp_path: Path) -> None:
    paths = []
    for r in range(3):
        p = tmp_path / f"rank{r}.log"
        p.write_text(f"2024-05-0{r + 1} 12:00:00 INFO start\nTraceback: boom\n")
        paths.append(p)
    att = attribute(every_line.scan(paths, threads=2))
    got = {
        (os.path.basename(r["file"]), r["line"]): (r["rank"], r["ts"])
        for r in att.table.to_pylist()
    }
    for r in range(3):
        assert got[(f"rank{r}.log", 2)] == (r, _ts(2024, 5, r + 1, 12))
    assert pc.sum(pc.cast(att.ts_carried, pa.int64())).as_py() == 3


def test_time_carried_across_megabytes_of_blank_lines(tmp_path: Path) -> None:
    """Untimed error lines far below the last timestamp (blank or tiny lines
    between) still take that timestamp, without per-line arrays over the gap."""
    log = tmp_path / "sparse.log"
    with open(log, "wb") as f:
        f.write(b"2024-05-01 12:00:00,000 INFO start\n")
        f.write(b"\n" * (3 << 20))
        f.write(b"ok\n" * 200_000)
        f.write(b"RuntimeError: CUDA error: an illegal memory access was encountered\n")
    s = Scanner(patterns={"err": ["illegal memory access"]}, cache_dir=False)
    att = attribute(s.run([log]).table)
    ts = att.table.column("ts").to_pylist()
    assert ts == [dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.timezone.utc)]


def test_blank_gap_read_back_memory_is_bounded(tmp_path: Path) -> None:
    """48 MiB of blank lines around three untimed errors: peak RSS of the whole
    diagnosis stays far below the size of per-line arrays over the gaps."""
    import subprocess
    import sys

    log = tmp_path / "blank.log"
    with open(log, "wb") as f:
        for _ in range(3):
            f.write(b"\n" * (16 << 20))
            f.write(b"RuntimeError: CUDA error: an illegal memory access was encountered\n")
    # VmHWM: this process's own peak (ru_maxrss keeps the parent's across exec,
    # so it reads high when the test process is large at fork time)
    code = (
        f"import denpex_fast as dx; d = dx.diagnose({str(log)!r}); "
        "print(next(x for x in open('/proc/self/status') if x.startswith('VmHWM')).split()[1])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
    )  # outside the source tree: the installed package runs
    peak_mib = int(out.stdout.split()[-1]) / 1024
    assert peak_mib < 600, peak_mib  # per-line arrays over the gaps took ~1 GiB here


# -- the two regex engines ------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus_lines() -> pa.Table:
    """One row per non-blank line of every corpus log (real pastes, real jobs)."""
    files = [
        p
        for p in sorted((REPO / "tests" / "corpus").glob("*/*/**/*"))
        if p.is_file() and not p.name.endswith(".json")
    ]
    return Scanner(patterns={"line": r"\S"}, cache_dir=False).scan(files)


@pytest.mark.parametrize("stage", ["attribute", "parse_times"])
def test_python_re_and_re2_agree_on_the_corpus(
    corpus_lines: pa.Table, monkeypatch: pytest.MonkeyPatch, stage: str
) -> None:
    """Small arrays are matched with Python's ``re`` rather than RE2: each
    engine alone gives the same ranks, hosts, times and timestamp parts on
    every line of the real logs."""
    from denpex_fast.facts import regex
    from denpex_fast.facts.timeparse import parse_times

    def run() -> list:
        # in slices, as a diagnosis attributes a job of small files
        out = []
        for start in range(0, corpus_lines.num_rows, 200):
            part = corpus_lines.slice(start, 200)
            if stage == "attribute":
                att = attribute(part, read_context=False)
                out += att.table.select(["file", "line", "rank", "host", "ts"]).to_pylist()
            else:
                p = parse_times(part.column("text").combine_chunks())
                out.append([getattr(p, f).tolist() for f in p.__dataclass_fields__])
        return out

    monkeypatch.setattr(regex, "SMALL_ROWS", 1 << 40)
    on_python = run()
    monkeypatch.setattr(regex, "SMALL_ROWS", -1)
    on_re2 = run()
    assert corpus_lines.num_rows > 40_000
    assert on_python == on_re2


def test_torchrun_rank_behind_an_srun_task_label_names_the_process() -> None:
    from denpex_fast.facts.attribution import line_facts

    facts = line_facts(
        pa.array(
            [
                "1: [rank7]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 7.65 GiB.",
                "0: [default1]:[rank1]: FileNotFoundError: [Errno 2] No such file or directory: 'x'",
                "3: RuntimeError: boom",
            ]
        )
    )
    # srun numbers its tasks (here one per node); torchrun's own prefix names the rank
    assert facts.rank.tolist() == [7, 1, 3]


@pytest.mark.parametrize(
    "collector",
    ["2024-05-01T12:00:00.016000000Z stderr F ", "trainer-1  | ", "[pod/job-worker-0/pytorch] "],
)
def test_anchored_rank_forms_are_read_behind_a_collectors_prefix(collector: str) -> None:
    from denpex_fast.analysis.levels import warned
    from denpex_fast.facts.attribution import collector_length, line_facts

    lines = [
        "1: [rank7]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 7.65 GiB.",
        "-- Process 2 terminated with the following error:",
        "  rank      : 5 (local_rank: 1)",
    ]
    facts = line_facts(pa.array([collector + line for line in lines]))
    assert facts.rank.tolist() == [7, 2, 5]
    assert collector_length(collector + lines[0]) == len(collector)
    # a glog line's level is counted from where the process's own line starts
    glog = (
        "[rank0]:W0519 14:43:05.494000 2754387 /home/user/github/pytorch/torch/utils/"
        "_pytree.py:630] <enum 'KernelPreference'> is an Enum subclass"
    )
    assert warned(glog) and warned(collector + glog)
