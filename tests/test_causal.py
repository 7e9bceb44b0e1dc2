"""Causal ranking rules on attributed match tables built by hand (real KB)."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import denpex_fast as dx
from denpex_fast.analysis.causal import estimate_skew, rank_events
from denpex_fast.analysis.diagnosis import diagnose_table
from denpex_fast.analysis.ranker import FEATURE_NAMES
from denpex_fast.engine.scanner import MATCH_SCHEMA
from denpex_fast.kb.signatures import load_signatures

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)
OOM = "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 2 has a total capacity of 79.15 GiB of which 2.31 GiB is free."
WD = (
    "[rank{r}]:[E501 12:10:40.512000 21000 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
    "Timeout(ms)=600000) ran for 600078 milliseconds before timing out."
)
SUMMARY = "[rank{r}]:[E501 12:10:40.613000 21000 ProcessGroupNCCL.cpp:1664] [PG 0 Rank {r}] Timeout at NCCL work: {seq}, last enqueued NCCL work: {enq}, last completed NCCL work: {done}."


@pytest.fixture(scope="module")
def kb():
    return load_signatures()


def table(rows: list[dict]) -> pa.Table:
    """rows: file, line, signature, text, rank, host, ts (seconds after T0 or None)."""
    n = len(rows)
    files = [r.get("file", "console.log") for r in rows]
    sigs = [r["signature"] for r in rows]
    return (
        pa.table(
            {
                "file": pa.array(files).dictionary_encode(),
                "line": pa.array([r["line"] for r in rows], pa.uint64()),
                "offset": pa.array([r["line"] * 100 for r in rows], pa.uint64()),
                "match_end": pa.array([r["line"] * 100 + 10 for r in rows], pa.uint64()),
                "signature": pa.array(sigs).dictionary_encode(),
                "text": pa.array([r["text"] for r in rows]),
                "rank": pa.array([r.get("rank") for r in rows], pa.int32()),
                "host": pa.array([r.get("host") for r in rows], pa.string()).dictionary_encode(),
                "ts": pa.array(
                    [
                        None if r.get("ts") is None else T0 + timedelta(seconds=r["ts"])
                        for r in rows
                    ],
                    pa.timestamp("us", tz="UTC"),
                ),
            },
            schema=MATCH_SCHEMA,
        )
        if n
        else MATCH_SCHEMA.empty_table()
    )


def watchdogs(ranks, seq=4812, ts=640.0, host="n0", file="console.log", start_line=100):
    return [
        {
            "signature": "nccl-watchdog-timeout",
            "text": WD.format(r=r, seq=seq),
            "rank": r,
            "host": host,
            "ts": ts + 0.01 * r,
            "line": start_line + i,
            "file": file,
        }
        for i, r in enumerate(ranks)
    ]


@pytest.mark.parametrize("ranks", [[0, 1, 3], [0, 1, 2, 3, 4, 5, 7]])
def test_the_verdict_agrees_with_the_confidence_shown(kb, ranks) -> None:
    from denpex_fast.analysis.ranker import load_model

    model = load_model()
    assert model.confidence_threshold is not None
    rows = watchdogs(ranks) + [
        {"signature": "cuda-oom", "text": OOM, "rank": 2, "host": "n0", "ts": 7.0, "line": 50}
    ]
    r = rank_events(table(rows), kb)
    # "failure" exactly when the confidence reaches the level at which named
    # diagnoses were right 95% of the time out of fold
    assert (r.verdict == "failure") == (r.confidence >= model.confidence_threshold)
    assert model.verdict_failure(0.0, model.confidence_threshold)
    assert not model.verdict_failure(1.0, model.confidence_threshold - 0.01)


def test_earliest_cause_beats_loud_symptoms(kb) -> None:
    rows = watchdogs([0, 1, 3]) + [
        {"signature": "cuda-oom", "text": OOM, "rank": 2, "host": "n0", "ts": 7.0, "line": 50}
    ]
    r = rank_events(table(rows), kb)
    assert r.verdict in ("failure", "suspect")
    assert (r.initiating.signature, r.initiating.rank, r.initiating.line) == ("cuda-oom", 2, 50)
    # one file, no progress: an excerpt, whose diagnoses were right two to
    # three times in four on first sight; never in the low buckets (< 0.5)
    assert r.confidence >= 0.5
    assert r.reasons[0].startswith("specific cause: cuda-oom at console.log:50 on rank 2")
    assert any("a knowledge-base cause names the line" in x for x in r.reasons)
    top = r.features[r.top]
    assert top[FEATURE_NAMES.index("explains")] == 1.0 and top[FEATURE_NAMES.index("first")] == 1.0
    # the 600 s timeout points back to ~40 s, after the OOM at 7 s
    assert r.stall_start == pytest.approx(40.0 + T0.timestamp(), abs=0.1)


def test_line_order_orders_an_interleaved_console_without_timestamps(kb) -> None:
    rows = [
        {"signature": "cuda-oom", "text": OOM, "rank": 2, "line": 50},
        {
            "signature": "xid-79-fallen-off-bus",
            "text": "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.",
            "rank": None,
            "line": 40,
        },
    ]
    r = rank_events(table(rows), kb)
    assert r.initiating.signature == "xid-79-fallen-off-bus"


def test_cause_after_the_stall_began_is_demoted(kb) -> None:
    # the OOM at 300 s comes after the stall (~40 s) the timeouts point to; the Xid at 30 s does not
    rows = watchdogs([0, 1, 3]) + [
        {
            "signature": "cuda-oom",
            "text": OOM,
            "rank": 2,
            "host": "n0",
            "ts": 20.0,
            "line": 50,
            "file": "b.log",
        },
        {
            "signature": "xid-79-fallen-off-bus",
            "text": "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.",
            "rank": 2,
            "host": "n0",
            "ts": 300.0,
            "line": 9,
            "file": "dmesg.log",
        },
    ]
    r = rank_events(table(rows), kb)
    assert r.initiating.signature == "cuda-oom"
    rows[-2]["ts"] = 500.0  # now both causes come after the stall: the earliest still wins
    r = rank_events(table(rows), kb)
    assert r.initiating.signature == "xid-79-fallen-off-bus"
    assert r.features[r.top][FEATURE_NAMES.index("after_stall")] == 1.0


def test_clock_skew_is_estimated_and_corrected(kb) -> None:
    # node1's clock runs 30 s ahead: shared watchdog lines reveal it; its OOM at
    # t=35 (really 5) then precedes node0's Xid at t=10
    rows = (
        watchdogs([0, 1], host="node0", ts=640.0)
        + watchdogs([2, 3], host="node1", ts=670.0, start_line=200)
        + [
            {
                "signature": "cuda-oom",
                "text": OOM,
                "rank": 2,
                "host": "node1",
                "ts": 35.0,
                "line": 60,
                "file": "n1.log",
            },
            {
                "signature": "xid-79-fallen-off-bus",
                "text": "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.",
                "rank": 0,
                "host": "node0",
                "ts": 10.0,
                "line": 5,
                "file": "n0.log",
            },
        ]
    )
    skew = estimate_skew(
        __import__("denpex_fast.analysis.causal", fromlist=["build_events"]).build_events(
            table(rows), kb
        )
    )
    off = skew.offsets["node1"] - skew.offsets["node0"]
    assert off == pytest.approx(30.0, abs=0.1)
    assert skew.bound < 1.0
    r = rank_events(table(rows), kb)
    assert (r.initiating.signature, r.initiating.host) == ("cuda-oom", "node1")


def test_causes_within_the_skew_bound_are_indistinguishable(kb) -> None:
    rows = (
        watchdogs([0, 1], host="node0", ts=640.0)
        + watchdogs([2, 3], host="node1", ts=640.0, start_line=200)
        + [
            {
                "signature": "cuda-oom",
                "text": OOM,
                "rank": 2,
                "host": "node1",
                "ts": 5.2,
                "line": 60,
                "file": "n1.log",
            },
            {
                "signature": "xid-79-fallen-off-bus",
                "text": "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.",
                "rank": 0,
                "host": "node0",
                "ts": 5.0,
                "line": 5,
                "file": "n0.log",
            },
        ]
    )
    r = rank_events(table(rows), kb)
    assert r.indistinguishable and r.indistinguishable[0].signature == "cuda-oom"
    assert any("indistinguishable" in x for x in r.reasons)


def test_hosts_without_shared_events_have_unbounded_skew(kb) -> None:
    rows = [
        {
            "signature": "cuda-oom",
            "text": OOM,
            "rank": 2,
            "host": "a",
            "ts": 5.0,
            "line": 1,
            "file": "a.log",
        },
        {
            "signature": "torch-elastic-child-failed",
            "text": "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
            "rank": None,
            "host": "b",
            "ts": 9.0,
            "line": 1,
            "file": "b.log",
        },
    ]
    skew = estimate_skew(
        __import__("denpex_fast.analysis.causal", fromlist=["build_events"]).build_events(
            table(rows), kb
        )
    )
    assert math.isinf(skew.bound)


def test_watchdog_suspect_is_the_rank_that_never_entered(kb) -> None:
    # ranks 0,1,3 time out in SeqNum 4812; rank 2 printed nothing but its enqueue count lags
    rows = (
        watchdogs([0, 1, 3])
        + [
            {
                "signature": "nccl-watchdog-work-summary",
                "text": SUMMARY.format(r=r, seq=4812, enq=4812, done=4811),
                "rank": r,
                "host": "n0",
                "ts": 640.5,
                "line": 150 + r,
            }
            for r in (0, 1, 3)
        ]
        + [
            {
                "signature": "nccl-watchdog-work-summary",
                "text": SUMMARY.format(r=2, seq=4811, enq=4811, done=4811),
                "rank": 2,
                "host": "n0",
                "ts": 640.5,
                "line": 160,
            }
        ]
    )
    r = rank_events(table(rows), kb)
    assert r.initiating is None and r.suspect_rank == 2
    assert any("never entered" in x for x in r.reasons)


def test_silent_rank_is_the_suspect(kb) -> None:
    rows = watchdogs([0, 1, 3]) + [
        {
            "signature": "nccl-using-network",
            "text": "[rank2]: node1:1:1 [2] NCCL INFO Using network Socket",
            "rank": 2,
            "host": "n0",
            "ts": 1.0,
            "line": 3,
        }
    ]
    r = rank_events(table(rows), kb)
    assert r.suspect_rank == 2


def test_only_symptoms_is_a_suspect_never_an_all_clear(kb) -> None:
    # every rank times out and nothing else is known: the earliest timeout is
    # only a suspect, and the job is never called healthy
    r = rank_events(table(watchdogs([0, 1, 2, 3])), kb)
    assert r.verdict == "suspect" and r.initiating.signature == "nccl-watchdog-timeout"
    r = rank_events(table([]), kb)
    assert r.verdict == "no-failure-found" and r.initiating is None


def test_diagnosis_assembles_collateral_fix_and_rank_fates(kb) -> None:
    rows = watchdogs([0, 1, 3]) + [
        {"signature": "cuda-oom", "text": OOM, "rank": 2, "host": "n0", "ts": 7.0, "line": 50}
    ]
    d = diagnose_table(table(rows), signatures=kb)
    doc = d.to_dict()
    assert doc["schema"] == "denpex.diagnosis/1"
    assert doc["initiating"]["signature"] == "cuda-oom" and doc["fix_id"] == "cuda-oom"
    assert doc["fix_fields"]["requested"] == "4.00 GiB"
    assert doc["verify"] and doc["checklist"]
    (wd,) = [c for c in doc["collateral"] if c["signature"] == "nccl-watchdog-timeout"]
    assert wd["ranks"] == [0, 1, 3] and wd["count"] == 3
    assert {h["signature"] for h in doc["competing"]} >= {"cuda-driver-oom"}
    fates = {f["rank"]: f for f in doc["rank_fates"]}
    assert fates[2]["first_error_signature"] == "cuda-oom"
    assert fates[0]["first_error_signature"] == "nccl-watchdog-timeout"
    assert fates[0]["last_collective_seq"] == 4812
    row = d.summary_row()
    assert (row["initiating_rank"], row["verdict"], row["n_ranks"]) == (2, d.verdict, 4)


def _diagnosed(tmp_path: Path, name: str, lines: list[str]) -> Any:
    """The diagnosis of one log file ``name`` holding ``lines``."""
    from denpex_fast import diagnose

    log = tmp_path / name
    log.write_text("\n".join(lines) + "\n")
    return diagnose(log)


def _diagnosed_files(tmp_path: Path, files: dict[str, list[str]]) -> Any:
    """The diagnosis of a job directory holding ``files`` (name -> lines)."""
    from denpex_fast import diagnose

    job = tmp_path / "job"
    job.mkdir()
    for name, lines in files.items():
        (job / name).write_text("\n".join(lines) + "\n")
    return diagnose(job)


def _two_rank_run(signature: str, text, n: int) -> list[dict]:
    """``n`` rows of ``signature`` on ranks 0 and 1 (``text(rank, i)``), one
    second and ten lines apart."""
    return [
        {
            "signature": signature,
            "text": text(r, i),
            "rank": r,
            "host": "n0",
            "ts": float(i),
            "line": 10 * i + r,
        }
        for i in range(n)
        for r in (0, 1)
    ]


def test_context_runs_are_thinned_but_causes_kept(kb) -> None:
    from denpex_fast.analysis.causal import thin_context

    steps = _two_rank_run(
        "ds-zero-reduce-bucket-size-info", lambda r, i: f"[Rank {r}] Reduce bucket size {i}", 500
    )
    rows = steps + [
        {"signature": "cuda-oom", "text": OOM, "rank": 2, "host": "n0", "ts": 7.0, "line": 5001}
    ]
    t = thin_context(table(rows), kb, keep=8)
    sig = t.column("signature").to_pylist()
    assert sig.count("cuda-oom") == 1
    assert sig.count("ds-zero-reduce-bucket-size-info") == 2 * 16  # first 8 and last 8 per rank
    lines = sorted(
        x
        for x, s in zip(t.column("line").to_pylist(), sig)
        if s == "ds-zero-reduce-bucket-size-info"
    )
    assert lines[:2] == [0, 1] and lines[-2:] == [4990, 4991]


def test_word_for_word_repeats_of_an_error_are_thinned_distinct_ones_kept(kb) -> None:
    from denpex_fast.analysis.causal import thin_context

    reset = "ConnectionResetError: [Errno 104] Connection reset by peer"
    rows = _two_rank_run("cuda-oom", lambda r, i: reset, 300)
    # the same signature with other texts (each its own line) is never thinned
    rows += [
        {
            "signature": "cuda-oom",
            "text": f"{OOM} {i}",
            "rank": 0,
            "host": "n0",
            "ts": 1.0,
            "line": 9000 + i,
        }
        for i in range(40)
    ]
    t = thin_context(table(rows), kb, keep=8)
    texts = t.column("text").to_pylist()
    assert texts.count(reset) == 2 * 16  # first 8 and last 8 per rank
    assert sum(x.startswith(OOM) for x in texts) == 40
    kept = sorted(n for n, x in zip(t.column("line").to_pylist(), texts) if x == reset)
    assert kept[:2] == [0, 1] and kept[-2:] == [2990, 2991]


def test_a_ranks_log_cut_into_parts_is_thinned_as_one_run(kb) -> None:
    from denpex_fast.analysis.causal import thin_context

    sig = "ds-zero-reduce-bucket-size-info"
    rows = [
        {
            "file": f"job/rank0/part{p}.log",
            "signature": sig,
            "text": f"[Rank 0] Reduce bucket size {p}.{i}",
            "rank": 0,
            "host": "n0",
            "ts": 100.0 * p + i,
            "line": i + 1,
        }
        for p in range(3)
        for i in range(20)
    ]
    rows += [dict(r, file="console.log", rank=1, line=100 + k) for k, r in enumerate(rows[:20])]
    per_file = thin_context(table(rows), kb, keep=8)
    assert per_file.num_rows == 4 * 16  # each part and the console: first 8 and last 8
    t = thin_context(table(rows), kb, keep=8, by_rank=True)
    kept = [(f, x) for f, x in zip(t.column("file").to_pylist(), t.column("line").to_pylist())]
    parts = [k for k in kept if k[0] != "console.log"]
    # the rank's run: the first 8 lines of its first part, the last 8 of its last
    assert parts == [("job/rank0/part0.log", i) for i in range(1, 9)] + [
        ("job/rank0/part2.log", i) for i in range(13, 21)
    ]
    assert len(kept) - len(parts) == 16  # a console (no rank in its path) stays its own run


def test_last_steps_read_the_newest_of_a_ranks_files(tmp_path) -> None:
    from denpex_fast.analysis.progress import last_steps

    rank = tmp_path / "rank0"
    rank.mkdir()
    (rank / "old.log").write_text("".join(f"step={s} loss=0.5\n" for s in range(999)))
    (rank / "new.log").write_text("".join(f"step={s} loss=0.5\n" for s in range(120)))
    files = [str(rank / "old.log"), str(rank / "new.log")]
    assert last_steps(files) == {0: 998}  # no times: every file is read
    # the newer file (an attempt resumed after the older one) has the rank's last step
    assert last_steps(files, latest={files[0]: 10.0, files[1]: 20.0}) == {0: 119}
    # one rank's number in two directories (a local rank on two nodes) is two logs: both read
    other = tmp_path / "node1" / "rank0"
    other.mkdir(parents=True)
    (other / "new.log").write_text("".join(f"step={s} loss=0.5\n" for s in range(70)))
    both = [files[1], str(other / "new.log")]
    assert last_steps(both, latest={both[0]: 20.0, both[1]: 10.0}) == {0: 119}
    assert last_steps(both[::-1], latest={both[0]: 5.0, both[1]: 10.0}) == {0: 119}


def test_last_steps_from_file_tails(tmp_path) -> None:
    from denpex_fast.analysis.progress import last_steps

    console = tmp_path / "console.log"
    console.write_text(
        "".join(
            f"[rank{r}]: [INFO] [logging.py:96:log_dist] [Rank {r}] step={s}, skipped=0, lr=[0.1]\n"
            for s in range(1, 200)
            for r in (0, 1)
            if not (r == 1 and s > 150)
        )
    )
    per_rank = tmp_path / "attempt_0" / "3"
    per_rank.mkdir(parents=True)
    (per_rank / "stderr.log").write_text(
        "x" * (2 << 20) + "\n" + "".join(f"step={s} loss=0.5\n" for s in range(40))
    )
    assert last_steps([str(console), str(per_rank / "stderr.log")]) == {0: 199, 1: 150, 3: 39}


def test_bucket_fix_quotes_tensor_and_configured_bucket_sizes(kb) -> None:
    rows = [
        {
            "signature": "ds-zero-reduce-bucket-size-info",
            "text": "[2024-05-01 12:00:00,123] [INFO] [stage_1_and_2.py:150:__init__] Reduce bucket size 500000000",
            "rank": 0,
            "host": "n0",
            "ts": 0.0,
            "line": 3,
        },
        {
            "signature": "ds-zero2-bucket-exhausted",
            "text": "[rank1]: RuntimeError: start (0) + length (622329856) exceeds dimension size (500000000).",
            "rank": 1,
            "host": "n0",
            "ts": 9.0,
            "line": 90,
        },
    ]
    doc = diagnose_table(table(rows), signatures=kb).to_dict()
    assert doc["fix_id"] == "ds-zero2-bucket-exhausted" and doc["initiating"]["rank"] == 1
    assert (
        doc["fix_fields"]["length"] == "622329856" and doc["fix_fields"]["dim_size"] == "500000000"
    )
    assert doc["job_values"]["reduce_bucket_size"].replace(",", "") == "500000000"
    assert "reduce_bucket_size" in doc["fix"] and "allreduce_bucket_size" in doc["fix"]


def test_nccl_device_index_is_the_rank_only_when_nothing_names_one(kb) -> None:
    warn = "node7:946:988 [3] transport/net_ib.cc:839 NCCL WARN NET/IB : Got completion with error 12, opcode 1, len 0, vendor err 129"
    r = rank_events(table([{"signature": "any-nccl-warn", "text": warn, "line": 1}]), kb)
    assert r.initiating is not None and r.initiating.rank == 3
    assert any("NCCL device index" in x for x in r.reasons)
    # a job whose lines name ranks: the device index is a GPU, not a rank
    rows = [
        {"signature": "any-nccl-warn", "text": warn, "line": 1},
        {"signature": "cuda-oom", "text": OOM, "rank": 2, "line": 9},
    ]
    r = rank_events(table(rows), kb)
    warn_ev = [e for e in r.events if e.signature == "any-nccl-warn"][0]
    assert warn_ev.rank is None


def test_device_an_error_names_is_its_rank_on_one_node(kb) -> None:
    mismatch = "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:9 and cpu!"
    step = "[Rank 0] step=40, skipped=0, lr=[1e-05]"
    rows = [
        {"signature": "any-progress-step", "text": step, "rank": 0, "line": 1, "host": "n0"},
        {"signature": "torch-device-mismatch", "text": mismatch, "line": 9, "host": "n0"},
    ]
    r = rank_events(table(rows), kb)
    assert r.initiating is not None and r.initiating.rank == 9
    assert any("device the error names" in x for x in r.reasons)
    # cuda:0 in a job whose lines name ranks: every process may see its GPU as cuda:0
    rows[1]["text"] = mismatch.replace("cuda:9", "cuda:0")
    assert rank_events(table(rows), kb).initiating.rank is None
    # on two nodes the device is a local rank only
    rows[1]["text"] = mismatch
    rows[0]["host"] = "n1"
    assert rank_events(table(rows), kb).initiating.rank is None


def test_an_error_reprinted_under_a_rank_takes_that_rank(kb) -> None:
    oom = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 224.00 MiB. GPU"
    full = oom + "  has a total capacity of 44.34 GiB of which 160.81 MiB is free."
    rows = [
        {"signature": "cuda-oom", "text": oom, "line": 193},
        {"signature": "cuda-oom", "text": "[rank1]: " + full, "rank": 1, "line": 290},
    ]
    r = rank_events(table(rows), kb)
    assert r.initiating is not None and r.initiating.line == 193 and r.initiating.rank == 1
    # copies under two ranks do not say which one printed the first
    rows.append({"signature": "cuda-oom", "text": "[rank0]: " + full, "rank": 0, "line": 300})
    r = rank_events(table(rows), kb)
    assert r.initiating is not None and r.initiating.line == 193 and r.initiating.rank is None


def test_bare_traceback_above_torchelastic_root_cause_takes_its_rank(kb) -> None:
    rows = [
        {
            "signature": "os-python-uncaught-exception",
            "text": "ValueError: FSDP2 with SHARDED_STATE_DICT is not compatible with save_only_model=True.",
            "line": 35,
        },
        {
            "signature": "torch-elastic-root-cause-block",
            "text": "Root Cause (first observed failure):",
            "line": 144,
        },
        {
            "signature": "any-process-record",
            "text": "  rank      : 3 (local_rank: 3)",
            "rank": 3,
            "line": 148,
        },
        {
            "signature": "torch-elastic-failure-exitcode",
            "text": "  exitcode  : 1 (pid: 159272)",
            "line": 149,
        },
    ]
    r = rank_events(table(rows), kb)
    assert r.initiating is not None and r.initiating.line == 35 and r.initiating.rank == 3
    # a root cause killed by a signal printed nothing: the traceback is someone else's
    rows[3]["text"] = "  exitcode  : -9 (pid: 159272)"
    r = rank_events(table(rows), kb)
    assert r.initiating is not None and r.initiating.line == 35 and r.initiating.rank is None


def test_an_unknown_error_the_job_trained_past_is_not_its_failure(kb) -> None:
    cat = {
        "signature": "any-file-error-text",
        "text": "cat: nemo: No such file or directory",
        "line": 1,
        "ts": 0.0,
        "file": "job.err",
    }
    steps = [
        {
            "signature": "any-progress-step",
            "text": f" [2026-04-15 11:31:48] iteration {n}/ 500 |",
            "line": 10 + n,
            "ts": 60.0 + n,
            "rank": 0,
            "file": "job.out",
        }
        for n in range(1, 5)
    ]
    limit = {
        "signature": "slurm-time-limit",
        "text": "slurmstepd: error: *** JOB 1861140 ON nid007420 CANCELLED AT 2026-04-15T11:31:51 DUE TO TIME LIMIT ***",
        "line": 155,
        "ts": 900.0,
        "file": "job.err",
    }
    r = rank_events(table([cat, *steps, limit]), kb)
    assert r.initiating is not None and r.initiating.signature == "slurm-time-limit"
    # with nothing after the progress, the unknown line is the only lead and stays
    r = rank_events(table([cat, *steps]), kb)
    assert r.initiating is not None and r.initiating.signature == "any-file-error-text"


def test_a_job_with_no_error_that_ended_itself_is_not_stopped(kb) -> None:
    steps = [
        {
            "signature": "any-progress-step",
            "text": f"step:{n}/6450 train_time:{n}ms step_avg:234.9ms",
            "line": n,
            "ts": float(n),
        }
        for n in (6448, 6449)
    ]
    r = rank_events(table(steps), kb)
    assert r.verdict == "stopped"
    # the last step is the one it counts to
    last = {
        "signature": "any-progress-step",
        "text": "step:6450/6450 val_loss:2.919352 train_time:1515353ms",
        "line": 6450,
        "ts": 6450.0,
    }
    r = rank_events(table([*steps, last]), kb)
    assert r.verdict == "no-failure-found" and "6450/6450" in r.reasons[0]
    # or its processes tore their communicators down in order after their last progress
    destroyed = {
        "signature": "nccl-comm-destroyed",
        "text": "node01:150770:150790 [0] NCCL INFO comm 0x2aab7000d010 rank 0 nranks 2 cudaDev 0 busId 3b000 - Destroy COMPLETE",
        "line": 6460,
        "ts": 6460.0,
    }
    r = rank_events(table([*steps, destroyed]), kb)
    assert r.verdict == "no-failure-found" and "exited in order" in r.reasons[0]
    # a teardown printed before progress went on says nothing about the end
    destroyed = {**destroyed, "line": 10, "ts": 10.0}
    assert rank_events(table([*steps, destroyed]), kb).verdict == "stopped"


def test_a_wrapper_echoing_done_after_a_failed_launch_did_not_go_on(kb) -> None:
    rows = [
        {
            "signature": "os-python-uncaught-exception",
            "text": "RuntimeError: Using async gradient all reduce requires setting the environment variable CUDA_DEVICE_MAX_CONNECTIONS to 1",
            "line": 155,
        },
        {
            "signature": "ds-launcher-exit-return-code",
            "text": "[2026-03-23 19:14:54,591] [ERROR] [launch.py:341:sigkill_handler] ['/usr/bin/python3', '-u', 'pretrain_gpt.py', '--local_rank=15'] exits with return code = 1",
            "line": 3660,
        },
        {"signature": "any-training-complete", "text": "All done.", "line": 3664},
    ]
    r = rank_events(table(rows), kb)
    assert r.verdict != "no-failure-found"
    assert r.initiating is not None and r.initiating.line == 155


def test_a_rank_in_a_sub_communicator_is_not_the_global_rank(kb) -> None:
    pre = "DGX2-1:2394670:2396291 [1] NCCL INFO "
    rows = [
        {
            "signature": "nccl-comm-rank",
            "text": pre
            + "ncclCommInitRankConfig comm 0x5625a58ec680 rank 1 nranks 8 cudaDev 1 busId 36000",
            "rank": 1,
            "host": "DGX2-1",
            "line": 991,
        },
        {
            "signature": "nccl-comm-rank",
            "text": pre + "comm 0x5625a5b3d970 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0",
            "rank": 0,
            "host": "DGX2-1",
            "line": 1173,
        },
        {
            "signature": "nccl-cuda-oom",
            "text": "[2026-03-31 15:32:44] DGX2-1:2394670:2396491 [1] include/alloc.h:228 NCCL WARN Cuda failure 2 'out of memory'",
            "host": "DGX2-1",
            "line": 2175,
        },
    ]
    r = rank_events(table(rows), kb)
    assert r.initiating is not None and r.initiating.line == 2175 and r.initiating.rank == 1


def test_an_exception_python_ignored_at_exit_is_no_candidate(kb) -> None:
    rows = [
        {
            "signature": "any-progress-step",
            "text": "iteration 790/ 790 | loss 1.2",
            "rank": 0,
            "line": 900,
        },
        {
            "signature": "os-python-exception-ignored",
            "text": "1: Exception ignored in atexit callback: <function matmul_ext_update_autotune_table at 0x7fad296677e0>",
            "rank": 1,
            "line": 907,
        },
        {
            "signature": "os-python-uncaught-exception",
            "text": "1: FileNotFoundError: [Errno 2] No such file or directory: '/home/u/.triton/autotune/Fp16Matmul_2d_kernel.pickle.tmp'",
            "rank": 1,
            "line": 917,
        },
    ]
    r = rank_events(table(rows), kb)
    assert r.initiating is None or r.initiating.line != 917
    # the same exception without Python's note is a failure
    r = rank_events(table([rows[0], rows[2]]), kb)
    assert r.initiating is not None and r.initiating.line == 917


def test_an_evaluation_at_the_last_step_after_the_end_line_does_not_go_on(kb) -> None:
    rows = [
        {
            "signature": "any-progress-step",
            "text": " [2025-10-31 10:46:16] iteration       50/      50 | consumed samples:          800 |",
            "line": 145,
        },
        {
            "signature": "megatron-training-done",
            "text": "[after training is done] datetime: 2025-10-31 10:46:17 ",
            "line": 285,
        },
        {
            "signature": "any-progress-step",
            "text": " validation loss at iteration 50 on test set | lm loss value: 1.042313E+01 |",
            "line": 304,
        },
    ]
    assert rank_events(table(rows), kb).verdict == "no-failure-found"
    # a step past the end line means the loop went on: that line was no end
    rows[2] = {
        **rows[2],
        "text": " [2025-10-31 10:46:18] iteration       51/      60 | consumed samples:          816 |",
    }
    assert rank_events(table(rows), kb).verdict == "stopped"


def test_local_ranks_of_a_second_node_become_global(kb) -> None:
    rows = [
        {
            "signature": "any-process-record",
            "text": "  rank      : 2 (local_rank: 0)",
            "line": 40,
            "rank": 2,
            "host": "node1",
            "file": "node1/console.log",
        },
        {
            "signature": "os-sigkill",
            "line": 33,
            "rank": 0,
            "host": "node1",
            "file": "node1/console.log",
            "text": "E1202 14:38:54.154000 2 api.py:1002] failed (exitcode: -9) local_rank: 0 (pid: 20037) of binary: python",
        },
    ]
    r = rank_events(table(rows), kb)
    kill = [e for e in r.events if e.signature == "os-sigkill"][0]
    assert kill.rank == 2


def test_a_pid_named_elsewhere_gives_the_kernel_record_its_rank(kb) -> None:
    rows = [
        {
            "signature": "xid-host-oom-killer",
            "line": 3,
            "file": "dmesg.log",
            "text": "Out of memory: Killed process 20037 (python3) total-vm:81234kB, anon-rss:7000000kB",
        },
        {
            "signature": "os-sigkill",
            "line": 33,
            "rank": 2,
            "text": "E1202 14:38:54.154000 2 api.py:1002] failed (exitcode: -9) local_rank: 2 (pid: 20037) of binary: python",
        },
    ]
    r = rank_events(table(rows), kb)
    oom = [e for e in r.events if e.signature == "xid-host-oom-killer"][0]
    assert oom.rank == 2
    assert r.initiating.rank == 2


def test_a_signal_handler_report_takes_the_rank_of_the_launchers_account(kb) -> None:
    # two hosts, one segfault each: each handler's [host:pid] report is the
    # origin, srun's "task N: Segmentation fault" names its rank afterwards
    rows = [
        {
            "signature": "any-fatal-signal-text",
            "line": 3,
            "host": "gpu-a1",
            "text": "[gpu-a1:501] *** Process received signal ***",
        },
        {
            "signature": "any-fatal-signal-text",
            "line": 4,
            "host": "gpu-a1",
            "text": "[gpu-a1:501] Signal: Segmentation fault (11)",
        },
        {
            "signature": "any-fatal-signal-text",
            "line": 5,
            "host": "gpu-b2",
            "text": "[gpu-b2:777] *** Process received signal ***",
        },
        {
            "signature": "any-fatal-signal-text",
            "line": 6,
            "host": "gpu-b2",
            "text": "[gpu-b2:777] Signal: Segmentation fault (11)",
        },
        {
            "signature": "os-segfault",
            "line": 20,
            "rank": 5,
            "host": "gpu-b2",
            "text": "srun: error: gpu-b2: task 5: Segmentation fault (core dumped)",
        },
        {
            "signature": "os-segfault",
            "line": 22,
            "rank": 1,
            "host": "gpu-a1",
            "text": "srun: error: gpu-a1: task 1: Segmentation fault (core dumped)",
        },
    ]
    r = rank_events(table(rows), kb)
    by_line = {e.line: e.rank for e in r.events}
    assert by_line[3] == by_line[4] == 1 and by_line[5] == by_line[6] == 5
    assert (r.initiating.line, r.initiating.rank) == (3, 1)


def test_a_signal_handler_report_stays_rankless_when_its_host_is_ambiguous(kb) -> None:
    # two processes of one host died of the same signal: which task is which is unknown
    rows = [
        {
            "signature": "any-fatal-signal-text",
            "line": 1,
            "host": "gpu-a1",
            "text": "[gpu-a1:501] Signal: Segmentation fault (11)",
        },
        {
            "signature": "any-fatal-signal-text",
            "line": 2,
            "host": "gpu-a1",
            "text": "[gpu-a1:502] Signal: Segmentation fault (11)",
        },
        {
            "signature": "os-segfault",
            "line": 20,
            "rank": 0,
            "host": "gpu-a1",
            "text": "srun: error: gpu-a1: task 0: Segmentation fault (core dumped)",
        },
    ]
    r = rank_events(table(rows), kb)
    assert [e.rank for e in r.events if e.line in (1, 2)] == [None, None]


def test_a_file_without_timestamps_is_ordered_by_name_not_put_last(kb) -> None:
    # two restart attempts saved as two files; only the second has timestamps
    ecc = "RuntimeError: transform: failed to synchronize: cudaErrorECCUncorrectable: uncorrectable ECC error encountered"
    rows = [
        {
            "signature": "cuda-ecc-uncorrectable",
            "text": ecc,
            "line": 20,
            "file": "attempt1_main_log.txt",
        },
        {
            "signature": "cuda-oom",
            "text": OOM,
            "line": 22,
            "ts": 50.0,
            "file": "attempt2_main_log.txt",
        },
    ]
    r = rank_events(table(rows), kb)
    assert r.initiating.file == "attempt1_main_log.txt"


def test_step_lines_native_pass_reads_every_form_and_keeps_the_first_per_line():
    from denpex_fast.analysis.progress import step_lines

    data = (
        b"a step=3 x\n[Rank 0] step=12, skipped=0, lr=[0.001] global_step=12\n"
        b" iteration      100/   10000 | consumed samples: 3200\nstepping the scheduler\n"
        b"{'loss': 1.2, 'step': 120}\nno progress here"
    )
    texts, steps = step_lines(data)
    assert steps == [3, 12, 100, 120]
    assert texts[1].startswith("[Rank 0] step=12")


def test_a_prelude_line_opens_the_incident_of_the_error_it_announces(kb) -> None:
    """Anomaly mode prints the forward traceback's header, ~40 frames, then the
    backward error: the incident spans from the header to the error."""
    warn = (
        "/SITE/torch/autograd/graph.py:979: UserWarning: Error detected in MseLossBackward0. "
        "Traceback of forward call that caused the error:"
    )
    err = "RuntimeError: Function 'MseLossBackward0' returned nan values in its 0th output."
    rows = [
        {
            "signature": "num-anomaly-forward-traceback",
            "text": warn,
            "rank": 1,
            "host": "n0",
            "ts": 5.0,
            "line": 9,
            "file": "rank1.log",
        },
        {
            "signature": "num-anomaly-nan-backward",
            "text": err,
            "rank": 1,
            "host": "n0",
            "ts": 5.0,
            "line": 52,
            "file": "rank1.log",
        },
    ] + watchdogs([0, 2, 3], ts=640.0)
    r = rank_events(table(rows), kb)
    assert r.initiating.signature == "num-anomaly-nan-backward"
    assert r.incident.lines == (9, 52)
    # another error of the same rank between them: the header belongs to that one
    rows.insert(
        1,
        {
            "signature": "cuda-oom",
            "text": OOM.replace("rank2", "rank1"),
            "rank": 1,
            "host": "n0",
            "ts": 5.0,
            "line": 30,
            "file": "rank1.log",
        },
    )
    r = rank_events(table(rows), kb)
    inc = next(i for i in r.incidents if i.head.signature == "num-anomaly-nan-backward")
    assert inc.lines[0] > 9


def test_last_steps_read_a_scripts_own_iteration_wording(tmp_path) -> None:
    """A loop that says "iter 5/10" or "iter=5" (no "step") still tells where each rank stopped;
    configuration keys such as max_iter are no progress."""
    from denpex_fast.analysis.progress import last_steps

    console = tmp_path / "console.log"
    console.write_text(
        "max_iter: 1000\n"
        + "".join(
            f"[rank {r}] iter {s}/10 | loss 0.5 | 3.1 ms/it\n"
            for s in range(1, 9)
            for r in range(3)
            if not (r == 2 and s > 4)
        )
        + "".join(
            f"2026-12-04T03:10:00.123Z INFO trainer.rank3 iter={s} loss=0.6\n" for s in range(1, 7)
        )
    )
    assert last_steps([str(console)]) == {0: 8, 1: 8, 2: 4, 3: 6}


def test_last_steps_split_lines_two_ranks_wrote_at_once(tmp_path) -> None:
    """mpirun --tag-output (or torchrun --tee) can put one rank's text inside another's
    line when both write at once; each part counts for the rank whose prefix starts it."""
    from denpex_fast.analysis.progress import last_steps

    console = tmp_path / "console.log"
    console.write_text(
        "[1,0]<stdout>:[rank 0] iter 9/10 | loss 1.0\n"
        "[1,1]<stdout>:[rank 1] iter 9/10 | loss 1.0\n"
        "[1,0]<stdout>:[rank 0] iter 10/10 | loss 1.1[1,1]<stdout>:[rank 1] iter 10/10 | loss 1.2\n"
        "[1,0]<stdout>:\n"
    )
    assert last_steps([str(console)]) == {0: 10, 1: 10}


def test_agent_lines_do_not_join_a_worker_traceback_they_interleave_with(kb) -> None:
    """In a torchrun --tee console the agent's own lines (no prefix) sit between its
    workers' prefixed lines; a rank's traceback and the agent's warning after it are
    two records, so the agent's line does not lend the rank its words."""
    from denpex_fast.analysis.incidents import _same_writer

    assert _same_writer("[default0]:[rank2]: RuntimeError: boom", "[default1]:[rank3]: x")
    assert _same_writer("RuntimeError: boom", "KeyError: 'x'")
    assert not _same_writer(
        "[default0]:[rank2]: RuntimeError: Connection closed by peer",
        "[W1204 03:32:55.825106027 TCPStore.cpp:138] [c10d] recvValueWithTimeout failed",
    )


def test_last_steps_read_a_progress_bar(tmp_path) -> None:
    """A tqdm bar (redraws joined by carriage returns) in a rank's own file gives its
    step: the last redraw's."""
    from denpex_fast.analysis.progress import last_steps

    d = tmp_path / "attempt_0" / "1"
    d.mkdir(parents=True)
    bars = "".join(
        f"\r {10 * k:3d}%|{'#' * k:<10}| {k}/10 [00:0{k}<00:05,  2.1it/s]" for k in range(1, 8)
    )
    (d / "stderr.log").write_text(bars + "\n")
    assert last_steps([str(d / "stderr.log")]) == {1: 7}  # the last redraw of the line


@pytest.mark.parametrize("tag", ["h1:2414:2414 [0] ", ""])
def test_another_programs_error_words_in_an_nccl_info_line_are_not_a_cause(tmp_path, tag) -> None:
    """NCCL reports its failures at WARN; at INFO it narrates the optional
    libraries it probes and cannot open.  The later real error is named, with
    NCCL's host:pid:tid tag on its lines or without it (as pasted)."""
    from denpex_fast.analysis.diagnosis import diagnose

    log = tmp_path / "rank0.log"
    log.write_text(
        f"{tag}NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
        f"{tag}NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared "
        "object file: No such file or directory No plugin found (libnccl-net.so), using "
        "internal implementation\n"
        f"{tag}NCCL INFO Failed to open libibverbs.so[.1]\n"
        f"{tag}NCCL INFO Using network Socket\n"
        "[rank0]: RuntimeError: [enforce fail at gloo/transport/tcp/device.cc:276] "
        "ss1.ss_family == ss2.ss_family. 2 vs 10\n"
    )
    d = diagnose([str(log)])
    assert d.initiating is not None and d.initiating.line == 5
    assert d.initiating.rank == 0


def test_a_rank_still_busy_while_its_peers_time_out_is_named_by_its_work(tmp_path) -> None:
    """Rank 0 alone validates (or clusters, or tokenises) past the collective
    timeout: ranks 1..N time out, rank 0 prints no error.  Rank 0 is named,
    by the lines it was printing when the others began to wait."""
    from denpex_fast.analysis.diagnosis import diagnose

    wd = (
        "[rank{r}]:[E ProcessGroupNCCL.cpp:523] [Rank {r}] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
        "Timeout(ms)=600000) ran for 600659 milliseconds before timing out.\n"
    )
    four = tmp_path / "four.log"
    four.write_text(
        "epoch 3 done\n\n"
        "Validating: 72% 23/32 [01:07<00:25, 2.80s/it]\n"
        "Validating: 75% 24/32 [01:09<00:22, 2.83s/it]\n"
        + "".join(wd.format(r=r) for r in (1, 2, 3))
    )
    d = diagnose([str(four)])
    assert d.suspect_rank == 0
    assert d.initiating is not None and d.initiating.line == 3
    assert any("still busy" in r for r in d.reasons)
    # two ranks: rank 1 waiting is enough when ranks 0..1 are the whole world shown
    two = tmp_path / "two.log"
    two.write_text("Clustering 111099511 points in 128D to 524288 clusters\n" + wd.format(r=1))
    d = diagnose([str(two)])
    assert d.suspect_rank == 0 and d.initiating is not None and d.initiating.line == 1
    # a gap in the ranks shown is not a whole world: rank 5 alone accuses nobody
    gap = tmp_path / "gap.log"
    gap.write_text("Clustering points\n" + wd.format(r=5))
    assert diagnose([str(gap)]).suspect_rank != 0


WATCHDOG = (
    "[E ProcessGroupNCCL.cpp:523] [Rank {r}] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
    "Timeout(ms)=600000) ran for 600659 milliseconds before timing out."
)


def _steps(prefix: str = "") -> str:
    return "".join(f"{prefix}step {i} loss 1.{9 - i}\n" for i in range(1, 4))


def test_a_busy_rank_whose_lines_no_pattern_knows_is_still_a_rank_of_the_job(tmp_path) -> None:
    """Rank 2 of a tagged console prints only lines no pattern matches: it is
    still one of the job's ranks, the one the others wait for."""
    from denpex_fast.analysis.diagnosis import diagnose

    log = tmp_path / "console.log"
    busy = "[rank2]:Running k-means on 2000000 embeddings"
    log.write_text(
        "".join(_steps(f"[rank{r}]:") for r in range(4))
        + busy
        + "\n"
        + "".join(f"[rank{r}]:" + WATCHDOG.format(r=r) + "\n" for r in (0, 1, 3))
    )
    d = diagnose([str(log)])
    assert d.suspect_rank == 2
    assert d.initiating is not None and d.initiating.text == busy and d.initiating.rank == 2


def test_an_exception_class_no_entry_knows_beats_its_peers_remote_error(tmp_path) -> None:
    """Rank 0 dies of an exception no entry knows (its class ends in neither
    Error nor Exception); ranks 1..3 report the peer's exit ten minutes
    later.  The traceback's exception line is the candidate that started it."""
    from denpex_fast.analysis.diagnosis import diagnose

    exc = "mydata.errors.ShardCorrupted: /data/shard-0042.tar: truncated record at 1048576"
    remote = (
        "[E1204 10:10:0{r}.1 ProcessGroupNCCL.cpp:1664] [PG 0 Rank {r}] Process group watchdog "
        "thread terminated with exception: NCCL error: remote process exited or there was a "
        "network error, NCCL version 2.21.5"
    )
    steps = "".join(f"[2024-12-04 10:00:0{i},000] INFO step {i} | loss 1.{9 - i}\n" for i in (1, 2))
    (tmp_path / "rank0.log").write_text(
        steps + 'Traceback (most recent call last):\n  File "train.py", line 88, in <module>\n'
        "    batch = next(it)\n" + exc + "\n"
    )
    for r in (1, 2, 3):
        (tmp_path / f"rank{r}.log").write_text(steps + remote.format(r=r) + "\n")
    d = diagnose([str(tmp_path)])
    assert d.initiating is not None and d.initiating.text == exc
    assert d.initiating.rank == 0 and d.initiating.file.endswith("rank0.log")


def test_the_one_rank_number_missing_below_the_waiting_ranks_is_the_busy_one(tmp_path) -> None:
    """A console with no prefixes: ranks 0, 1 and 3 time out, no line names
    rank 2.  Ranks are numbered from 0 without gaps, so rank 2 exists and is
    the one they waited for; its work is the last line before the timeouts."""
    from denpex_fast.analysis.diagnosis import diagnose

    log = tmp_path / "console.log"
    busy = "Running k-means on 2000000 embeddings"
    log.write_text(
        _steps() * 4 + busy + "\n" + "".join(WATCHDOG.format(r=r) + "\n" for r in (0, 1, 3))
    )
    d = diagnose([str(log)])
    assert d.suspect_rank == 2
    assert d.initiating is not None and d.initiating.text == busy
    # two numbers missing (ranks 1 and 2): nobody is singled out
    log.write_text(
        _steps() * 4 + busy + "\n" + "".join(WATCHDOG.format(r=r) + "\n" for r in (0, 3))
    )
    assert diagnose([str(log)]).suspect_rank not in (1, 2)


def test_a_traceback_logged_line_by_line_at_error_level_is_named_by_its_exception(
    tmp_path,
) -> None:
    """vLLM's workers log each line of a traceback as an ERROR record: the
    frames say "ERROR" too, the exception line names the failure."""
    from denpex_fast.analysis.diagnosis import diagnose

    head = "(Worker_TP1 pid=5298) ERROR 01-29 02:01:11 [multiproc_executor.py:822] "
    body = [
        "Traceback (most recent call last):",
        '  File "/vllm/vllm_ascend/ops/rope.py", line 155, in rope_forward',
        "    cos = cos.view(num_tokens, -1)",
        "          ^^^^^^^^^^^^^^^^^^^^^^^^",
        "RuntimeError: shape '[14, -1]' is invalid for input of size 768",
    ]
    log = tmp_path / "serve.log"
    log.write_text("".join(head + x + "\n" for x in body))
    d = diagnose([str(log)])
    assert d.initiating is not None and d.initiating.line == 5 and d.initiating.rank == 1


def test_a_silent_ranks_file_is_numbered_like_its_siblings(tmp_path) -> None:
    """node2.log holds no line any pattern knows: its number among node0,
    node1 and node3.log, whose timeouts name ranks 0, 1 and 3, makes it rank 2's."""
    from denpex_fast.analysis.diagnosis import diagnose

    for r in range(4):
        extra = "Merging LoRA adapter weights\n" if r == 2 else WATCHDOG.format(r=r) + "\n"
        (tmp_path / f"node{r}.log").write_text(_steps() + extra)
    d = diagnose([str(tmp_path)])
    assert d.suspect_rank == 2
    assert d.initiating is not None and d.initiating.file.endswith("node2.log")
    assert d.initiating.text == "Merging LoRA adapter weights"


def test_a_progress_bar_sharing_a_line_with_a_peers_timeout_is_the_busy_ranks_work(
    tmp_path,
) -> None:
    """tqdm redraws without a newline: rank 0's bar and rank 4's timeout end
    up on one line.  A DDP check reading 0 parameters for rank 0 says it
    never joined (a symptom, not a model mismatch)."""
    from denpex_fast.analysis.diagnosis import diagnose

    log = tmp_path / "log.txt"
    log.write_text(
        "DDP expects same model across all ranks, but Rank 5 has 288 params, while rank 0 has "
        "inconsistent 0 params.\n\n"
        "autoanchor: Evolving anchors: 0%| | 3/1000 [02:03<11:24:29, 41.19s/it]"
        "[E ProcessGroupNCCL.cpp:737] [Rank 4] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=2, OpType=ALLGATHER, Timeout(ms)=1800000) ran for 1807947 milliseconds "
        "before timing out.\n"
        "[E ProcessGroupNCCL.cpp:737] [Rank 6] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=2, OpType=ALLGATHER, Timeout(ms)=1800000) ran for 1807899 milliseconds "
        "before timing out.\n"
    )
    d = diagnose([str(log)])
    assert d.suspect_rank == 0
    assert d.initiating is not None and d.initiating.line == 3
    assert d.initiating.text.startswith("autoanchor") and "Watchdog" not in d.initiating.text


def test_a_worker_that_ended_by_sigterm_was_stopped_not_the_origin(tmp_path) -> None:
    """The engine tears its workers down (exit code -15) after a failure; the
    detail NCCL printed under the wrapper, in words no entry knows and
    without a timestamp of its own, is the origin."""
    from denpex_fast.analysis.diagnosis import diagnose

    log = tmp_path / "serve.log"
    body = (
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
        "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n"
        "[rank0]: ncclSystemError: System call (e.g. socket, malloc) or external library call "
        "failed or device error.\n"
        "[rank0]: Last error:\n"
        "[rank0]: Frobnicator could not reserve segment 7 of the staging ring\n"
        "ERROR 07-23 22:46:18 multiproc_worker_utils.py:120] Worker VllmWorkerProcess pid 82 "
        "died, exit code: {code}\n"
    )
    log.write_text(body.format(code=-15))
    d = diagnose([str(log)])
    assert d.initiating is not None and (d.initiating.line, d.initiating.rank) == (4, 0)
    from denpex_fast.analysis.incidents import TIER_COLLATERAL, TIER_OWN_SYMPTOM

    def death_tier(code: int) -> int:
        log.write_text(body.format(code=code))
        d = diagnose([str(log)])
        (death,) = [c for c in d.candidates_incidents if c.head.line == 5]
        return int(death.tier)

    # stopped by SIGTERM: a consequence; killed (SIGKILL) or crashed: its own end
    assert death_tier(-15) == TIER_COLLATERAL
    assert death_tier(-9) == death_tier(-11) == TIER_OWN_SYMPTOM


UNKNOWN_ORIGINS = {
    # ``DistNetworkError: <message>`` only names the exception's class: when
    # no entry knows the message, its words are the failure, ahead of the
    # launcher killing the workers after it
    "exception-class-wraps-unknown-message": (
        "trainer-2: torch.distributed.DistNetworkError: The frobnicator socket has failed to "
        "reach 192.168.1.12:1040 (errno: 113 - Host is down)\n"
        "trainer-2: [2024-02-24 04:37:50,964] [INFO] [launch.py:315:sigkill_handler] Killing "
        "subprocess 18507\n"
        "trainer-2: [2024-02-24 04:37:51,021] [ERROR] [launch.py:321:sigkill_handler] "
        "['/usr/bin/python3', '-u', 'train.py'] exits with return code = 1\n",
        1,
    ),
    # a tool's own failure line in a format no entry knows comes before the
    # trace line that restates it (nccl-tests: 'Test failure common.cu:N')
    "tool-format-before-its-wrapper": (
        "# Using devices\n"
        "test: Test HIP failure common.cu:941 'frobnicator not yet initialized'\n"
        " .. test pid 54340: Test failure common.cu:891\n",
        2,
    ),
}


@pytest.mark.parametrize("name", sorted(UNKNOWN_ORIGINS))
def test_an_unknown_origin_is_named_before_its_known_consequences(tmp_path, name) -> None:
    from denpex_fast.analysis.diagnosis import diagnose

    text, line = UNKNOWN_ORIGINS[name]
    log = tmp_path / "job.log"
    log.write_text(text)
    d = diagnose([str(log)])
    assert d.initiating is not None and d.initiating.line == line


def test_a_tie_in_time_goes_to_the_line_that_failed_first(tmp_path) -> None:
    """A collector stamps every line with the same second: among incidents of
    equal time the one whose failing line comes first is first, not the one
    that opened earlier with a harmless warning."""
    from denpex_fast.analysis.diagnosis import diagnose

    stamp = "2024-05-01T12:00:00.123456789Z stderr F "
    log = tmp_path / "pod.log"
    log.write_text(
        "".join(
            stamp + x + "\n"
            for x in (
                "[0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]",
                "[1] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]",
                "[1] enqueue.cc:215 NCCL WARN Cuda failure 'invalid device function'",
                "[0] enqueue.cc:215 NCCL WARN Cuda failure 'invalid device function'",
            )
        )
    )
    d = diagnose([str(log)])
    assert d.initiating is not None and (d.initiating.line, d.initiating.rank) == (3, 1)


def test_a_rank_that_never_printed_is_named_from_the_jobs_own_world_size(tmp_path) -> None:
    """Seven of eight ranks time out in the same collective; the eighth never
    printed a line.  NCCL's ``nranks 8`` says it exists: it is the suspect.
    Without that line the job shows only seven ranks and nobody is named."""
    from denpex_fast.analysis.diagnosis import diagnose

    init = "h1:100:150 [0] NCCL INFO comm 0x55d5c0b0 rank 0 nranks 8 cudaDev 0 busId 1b000 - Init COMPLETE\n"
    timeouts = "".join(WD.format(r=r, seq=41) + "\n" for r in range(7))
    log = tmp_path / "job.log"
    log.write_text(init + timeouts)
    d = diagnose([str(log)])
    assert d.suspect_rank == 7 and d.verdict in ("failure", "suspect")
    log.write_text(timeouts)
    assert diagnose([str(log)]).suspect_rank != 7


def test_rank_zeros_unprefixed_console_says_what_it_was_busy_with(tmp_path) -> None:
    """Ranks 1-3 time out; rank 0 logs alone and without a prefix (as Trainer
    and torchtune do) in a console of its own: its last line is its work."""
    from denpex_fast.analysis.diagnosis import diagnose

    console = tmp_path / "console.log"
    console.write_text(
        "Epoch 3: 100%|##########| 101/101 [1:54:39<00:00]\n"
        "Merging adapter weights into the base model and saving the checkpoint\n"
    )
    ranks = tmp_path / "ranks.log"
    ranks.write_text("".join(WD.format(r=r, seq=41) + "\n" for r in (1, 2, 3)))
    d = diagnose([str(console), str(ranks)])
    assert d.suspect_rank == 0 and d.initiating is not None
    assert (d.initiating.file, d.initiating.line) == (str(console), 2)
    # a second unprefixed input: which one is rank 0's is not known
    other = tmp_path / "notes.log"
    other.write_text("data prepared\n")
    d = diagnose([str(console), str(other), str(ranks)])
    assert d.initiating is None or d.initiating.file != str(console)


def test_a_stop_says_which_ranks_of_the_job_never_printed(tmp_path) -> None:
    """Slurm asked for eight tasks but the script ran once: Lightning's rank 0
    waits for seven members that never started.  The stop is reported with
    the job's own size against the ranks that printed."""
    from denpex_fast.analysis.diagnosis import diagnose

    log = tmp_path / "slurm-1234.out"
    log.write_text(
        "Multi-processing is handled by Slurm.\n"
        "GPU available: True, used: True\n"
        "initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/8\n"
    )
    d = diagnose([str(log)])
    assert d.verdict == "stopped"
    assert any("has 8 ranks and only 1 rank (0) printed" in r for r in d.reasons)


def test_a_cause_explains_a_later_cause_its_entry_triggers(kb) -> None:
    # a save that could not create its file, and in another run's log the
    # truncated checkpoint a load trips on: the save explains the load
    rows = [
        {
            "signature": "storage-torch-load-truncated",
            "text": "RuntimeError: PytorchStreamReader failed reading zip archive: failed "
            "finding central directory",
            "line": 1,
            "file": "resume.log",
        },
        {
            "signature": "storage-torch-save-parent-dir-missing",
            "text": "RuntimeError: Parent directory /ckpt/d20 does not exist.",
            "line": 1,
            "file": "train.log",
        },
    ]
    r = rank_events(table(rows), kb)
    sigs = [c.head.signature for c in r.incidents]
    explains = FEATURE_NAMES.index("explains")
    by_sig = {s: r.features[i][explains] for i, s in enumerate(sigs)}
    assert by_sig == {
        "storage-torch-save-parent-dir-missing": 1.0,
        "storage-torch-load-truncated": 0.0,
    }


@pytest.mark.parametrize("wrap", [None, 80], ids=["as-printed", "hard-wrapped-paste"])
def test_a_silent_rank_looping_on_one_message_is_named_where_the_loop_began(tmp_path, wrap) -> None:
    import denpex_fast as dx

    lines = [
        f"[2020-07-15 06:29:{15 + 5 * k},255] [INFO] [task_data_service.py:220:_gen] No tasks "
        "for now, maybe more later"
        for k in range(5)
    ]
    if wrap:  # a terminal's hard wraps: the paste cleaner joins them back
        lines = [piece for ln in lines for piece in (ln[:wrap], ln[wrap:])]
    (tmp_path / "worker0.log").write_text("\n".join(lines) + "\n")
    (tmp_path / "worker1.log").write_text(
        "ERROR:root:[/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:84] Timed "
        "out waiting 60000ms for recv operation to complete\n"
        "ERROR:root:Application timeout caused pair closure\n"
    )
    d = dx.diagnose(str(tmp_path))
    assert d.initiating is not None and d.initiating.rank == 0
    assert (d.initiating.file.rsplit("/", 1)[-1], d.initiating.line) == ("worker0.log", 1)
    assert any("its last 5 lines repeat one message" in r for r in d.reasons)


def _main_first_job(tmp_path, rank0_line: str):
    frames = (
        "[rank{r}]: Traceback (most recent call last):\n"
        '[rank{r}]:   File "run_clm.py", line 414, in main\n'
        '[rank{r}]:     with training_args.main_process_first(desc="dataset map tokenization"):\n'
        '[rank{r}]:   File "transformers/training_args.py", line 2191, in main_process_first\n'
        "[rank{r}]:     dist.barrier()\n"
        "[rank{r}]: RuntimeError: Socket Timeout\n"
    )
    (tmp_path / "rank0.log").write_text(rank0_line + "\n")
    for r in (1, 2):
        (tmp_path / f"rank{r}.log").write_text(frames.format(r=r))


def test_ranks_failing_in_a_main_process_first_barrier_point_at_rank_0(tmp_path) -> None:
    import denpex_fast as dx

    _main_first_job(tmp_path, "Running tokenizer on dataset:  41%|####      | 410/1000")
    d = dx.diagnose(str(tmp_path))
    assert d.verdict in ("failure", "suspect")
    got = d.initiating.rank if d.initiating is not None else d.suspect_rank
    assert got == 0
    assert any("a barrier that only the main process ends" in r for r in d.reasons)


def test_rank_0s_own_error_inside_main_process_first_is_not_overruled(tmp_path) -> None:
    import denpex_fast as dx

    _main_first_job(tmp_path, "[rank0]: OSError: [Errno 28] No space left on device")
    d = dx.diagnose(str(tmp_path))
    assert not any("a barrier that only the main process ends" in r for r in d.reasons)


_WATCHDOG_R1 = (
    "[rank1]:[E501 10:30:01.000000 1 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
    "Timeout(ms)=1800000) ran for 1800078 milliseconds before timing out."
)


@pytest.mark.parametrize(
    "last",
    [
        "2024-05-01 10:00:05,000 WARNING Loss is NaN at step 101, stopping training",
        "2024-05-01 10:00:05,000 INFO evaluating on 50000 samples",
    ],
    ids=["nan-stop", "still-busy"],
)
def test_the_rank_waited_for_is_named_in_its_own_file_not_in_a_waiting_ranks(
    tmp_path, last: str
) -> None:
    # two files named for no rank: the waiting rank's says so ([rank1]:), so
    # its unprefixed lines are rank 1's own; rank 0's work is in the other file
    import denpex_fast as dx

    step = "2024-05-01 10:00:00,000 INFO step 100 loss 2.31"
    (tmp_path / "a.log").write_text(f"{step}\n{last}\n")
    (tmp_path / "b.log").write_text(f"{step}\n{_WATCHDOG_R1}\n")
    d = dx.diagnose(str(tmp_path))
    i = d.initiating
    assert i is not None and (i.file.rsplit("/", 1)[-1], i.line, i.rank) == ("a.log", 2, 0)
    if "NaN" in last:  # a progress line that reports the anomaly is named by it
        assert i.signature == "any-nonfinite-loss"


@pytest.mark.parametrize(
    "exc",
    ["my_lib.errors.ShardCorrupted: shard 17 checksum mismatch", "StopIteration", "SystemExit: 2"],
)
def test_a_traceback_is_named_by_its_exception_line_whatever_the_class_is_called(
    tmp_path, exc: str
) -> None:
    import denpex_fast as dx

    lines = [f"[default{r}]:2024-05-01 10:00:0{r},000 INFO rank={r} step 100" for r in range(4)]
    lines += [
        "[default2]:Traceback (most recent call last):",
        '[default2]:  File "train.py", line 88, in <module>',
        "[default2]:    main()",
        "[default1]:2024-05-01 10:00:09,000 INFO rank=1 waiting",  # another rank interleaves
        '[default2]:  File "train.py", line 60, in main',
        "[default2]:    batch = next(it)",
        f"[default2]:{exc}",
    ]
    lines += [
        f"[default{r}]:[rank{r}]:[E501 10:30:0{r}.000000 1 ProcessGroupNCCL.cpp:632] [Rank {r}] "
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, "
        "NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800078 milliseconds before timing out."
        for r in (0, 1, 3)
    ]
    (tmp_path / "console.log").write_text("\n".join(lines) + "\n")
    d = dx.diagnose(str(tmp_path))
    i = d.initiating
    assert i is not None and (i.line, i.rank) == (11, 2)
    assert i.text.endswith(exc)


def test_an_error_record_whose_message_runs_into_frames_is_named_by_their_exception(
    tmp_path,
) -> None:
    """A logged error whose exception text carries its traceback without the
    header line (Ray's ``ray::Actor.method() (pid=...)`` then the frames): the
    exception line at the end names the incident, at the record's time."""
    import denpex_fast as dx

    exc = (
        "botocore.exceptions.CredentialRetrievalError: Error when retrieving credentials "
        "from Ec2InstanceMetadata: No credentials found"
    )
    lines = [
        "[2024-05-01 10:00:00,000][trainer.py][INFO] - step 10 loss=1.25",
        "[2024-05-01 10:00:05,326][trainer.py][ERROR] - Exception occurred during training: "
        "ray::TaskRunner.run() (pid=2406908, ip=10.0.0.2, actor_id=29ecc)",
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        '  File "/app/trainer.py", line 396, in run',
        "    trainer.fit()",
        '  File "/app/tracking.py", line 355, in log',
        "    mlflow.log_metrics(metrics=results, step=step)",
        exc,
        "Error executing job with overrides: ['trainer.total_epochs=2']",
    ]
    (tmp_path / "driver.log").write_text("\n".join(lines) + "\n")
    i = dx.diagnose(str(tmp_path)).initiating
    assert i is not None and i.line == 8 and i.text == exc


def _numbered_job(root, name: str, fail: int, ranks_per_file: int = 1, tag: bool = False) -> None:
    watchdog = (
        "[E501 10:30:0{r}.000000 1 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=1800000) ran for 1800078 milliseconds before timing out."
    )
    for k in range(4):
        lines = []
        for r in range(k * ranks_per_file, (k + 1) * ranks_per_file):
            if r == fail:
                lines += [
                    "Traceback (most recent call last):",
                    '  File "train.py", line 60, in main',
                    "    loss.backward()",
                    "RuntimeError: CUDA error: an illegal memory access was encountered",
                ]
            else:
                lines.append(watchdog.format(r=r))
        path = root / name.format(k=k)
        path.parent.mkdir(parents=True, exist_ok=True)
        first = "2024-05-01 10:00:00,000 INFO step=100 loss=2.31"
        if tag:  # every file opens with a line its rank tagged
            first = f"[rank{k * ranks_per_file}]: {first}"
        path.write_text(first + "\n" + "\n".join(lines) + "\n")


@pytest.mark.parametrize("tag", [False, True], ids=["untagged", "tagged-first-line"])
@pytest.mark.parametrize("name", ["node-{k}.err", "slurm-1234_{k}.out", "logs/{k}/stderr.log"])
def test_a_file_numbered_like_its_siblings_takes_the_rank_their_lines_give(
    tmp_path, name, tag
) -> None:
    # the failed rank's exception names no rank; its siblings' lines say file
    # k holds rank k, so file 2's untagged lines are rank 2's
    import denpex_fast as dx

    _numbered_job(tmp_path, name, fail=2, tag=tag)
    i = dx.diagnose(str(tmp_path)).initiating
    assert i is not None and i.rank == 2 and i.text.startswith("RuntimeError: CUDA error")


def test_files_of_several_ranks_each_give_no_rank_to_their_siblings(tmp_path) -> None:
    # one file per node of two ranks: the number is a node's, not a rank's
    import denpex_fast as dx

    _numbered_job(tmp_path, "node-{k}.err", fail=4, ranks_per_file=2)
    (tmp_path / "node-2.err").write_text(
        "Traceback (most recent call last):\n"
        '  File "train.py", line 60, in main\n'
        "    loss.backward()\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    i = dx.diagnose(str(tmp_path)).initiating
    assert i is not None and i.text.startswith("RuntimeError: CUDA error")
    assert i.rank is None


def _console_lines(prefix: str, fail: int) -> list[str]:
    lines = []
    for r in range(4):
        p = prefix.format(r=r)
        lines.append(f"{p}2024-05-01 10:00:0{r},000 INFO step 100 loss 2.31")
        if r == fail:
            lines += [
                f"{p}Traceback (most recent call last):",
                f'{p}  File "train.py", line 60, in main',
                f"{p}    loss.backward()",
                f"{p}RuntimeError: CUDA error: an illegal memory access was encountered",
            ]
        else:
            lines.append(
                f"{p}[E501 10:30:0{r}.000000 1 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog "
                "caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, "
                "NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800078 milliseconds before "
                "timing out."
            )
    return lines


@pytest.mark.parametrize("prefix", ["[{r}] ", "<{r}> ", "task {r}: "])
def test_a_numbered_line_prefix_of_no_known_scheme_is_read_as_a_rank_tag(tmp_path, prefix) -> None:
    # the lines behind "[0] ", "[1] ", "[3] " name ranks 0, 1, 3: the tag is
    # the rank, so rank 2's exception (naming none) is rank 2's, not rank 1's
    # carried over from the line before
    import denpex_fast as dx

    (tmp_path / "console.log").write_text("\n".join(_console_lines(prefix, 2)) + "\n")
    i = dx.diagnose(str(tmp_path)).initiating
    assert i is not None and i.rank == 2 and i.line == 9


def test_the_hour_a_line_opens_with_is_no_rank_tag(tmp_path) -> None:
    # "10:..", "11:..": numbers at the line start that only two ranked lines
    # happen to follow with a constant difference are not taken for ranks
    import denpex_fast as dx

    lines = [
        "10:59:58 [Rank 3] train step=5 loss=2.31",
        "11:00:01 [Rank 4] train step=5 loss=2.29",
        "11:00:02 RuntimeError: CUDA error: an illegal memory access was encountered",
    ]
    (tmp_path / "console.log").write_text("\n".join(lines) + "\n")
    d = dx.diagnose(str(tmp_path))
    assert d.initiating is not None and d.initiating.rank != 11 - 7


def test_jax_survivors_name_the_task_that_stopped_sending_heartbeats(tmp_path) -> None:
    """The surviving JAX process terminates on purpose and names the failed
    task on the line after: that task is the rank named."""
    from denpex_fast.analysis.diagnosis import diagnose

    log = tmp_path / "task1.log"
    log.write_text(
        "I0926 17:20:01.000000  157988 train.py:40] step 120 loss 2.31\n"
        "F0926 17:26:32.075587  157988 client.h:77] Terminating process because the JAX "
        "distributed service detected fatal errors. This most likely indicates that another "
        "task died. absl::Status: UNAVAILABLE: The following tasks are unhealthy (stopped "
        "sending heartbeats):\n"
        "/job:jax_worker/replica:0/task:2\n"
        "The tasks have crashed. Check the task logs for an earlier error.\n"
    )
    d = diagnose([str(log)])
    assert d.initiating is not None and d.initiating.signature == "jax-coordination-fatal"
    assert d.initiating.rank == 2


def test_the_one_quiet_file_among_timing_out_siblings_is_the_busy_process(tmp_path) -> None:
    """node0..node3.log: three report Gloo's recv timeout (no rank on any
    line), node2.log reports nothing and no error: its last line is the work
    the others waited for.  A fourth file that also times out leaves nobody."""
    from denpex_fast.analysis.diagnosis import diagnose

    gloo = (
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] "
        "Timed out waiting 1800000ms for recv operation to complete\n"
    )
    for n in range(4):
        tail = "Saving model checkpoint to /ckpt/checkpoint-500\n" if n == 2 else gloo
        (tmp_path / f"node{n}.log").write_text("epoch 1 step 3 done\n" + tail)
    d = diagnose([str(tmp_path)])
    assert d.initiating is not None and d.initiating.file.endswith("node2.log")
    assert d.initiating.text == "Saving model checkpoint to /ckpt/checkpoint-500"
    (tmp_path / "node2.log").write_text("epoch 1 step 3 done\n" + gloo)
    d = diagnose([str(tmp_path)])
    assert (
        d.initiating is None
        or not d.initiating.file.endswith("node2.log")
        or "Timed out" in d.initiating.text
    )


def test_a_local_rank_no_line_maps_takes_the_offset_its_node_shows(tmp_path) -> None:
    """Node 1 of a 2 x 4 job: its workers' lines say [default0..3]:; three of
    them also print [rank4/5/7]: (offset 4).  Local rank 2 never printed its
    global rank; its exception (a class no entry knows) is global rank 6's."""
    from denpex_fast.analysis.diagnosis import diagnose

    wd = (
        "[default{l}]:[rank{g}]:[E1204 10:10:0{s}.1 ProcessGroupNCCL.cpp:616] [Rank {g}] "
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=51, OpType=ALLREDUCE, "
        "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600021 milliseconds before timing out."
    )
    exc = "[default2]:mydata.errors.ShardCorrupted: /data/shard-0042.tar: truncated"
    for node in (0, 1):
        lines = [f"[default{i}]:[2024-12-04 10:00:01,000] step 1 | loss 1.9" for i in range(4)]
        if node == 1:
            lines += [
                "[default2]:Traceback (most recent call last):",
                '[default2]:  File "train.py", line 88, in <module>',
                "[default2]:    batch = next(it)",
                exc,
            ]
        lines += [wd.format(l=i, g=4 * node + i, s=i) for i in range(4) if 4 * node + i != 6]
        (tmp_path / f"node{node}").mkdir()
        (tmp_path / f"node{node}" / "console.log").write_text("\n".join(lines) + "\n")
    d = diagnose([str(tmp_path)])
    assert d.initiating is not None and d.initiating.text == exc and d.initiating.rank == 6


def test_pdsh_console_local_ranks_map_through_the_watchdogs_own_rank(tmp_path) -> None:
    """One pdsh console of a 2 x 4 job (``node2: [default1]:`` prefixes, no
    ``[rankN]:``): ProcessGroupNCCL's ``[Rank G]`` on the other workers' lines
    gives node2's block (offset 4), so the worker whose exception no entry
    knows, local rank 1 there, is global rank 5."""
    from denpex_fast.analysis.diagnosis import diagnose

    exc = "node2: [default1]:mydata.errors.ShardCorrupted: /data/shard-0042.tar: truncated"
    lines = [
        f"node{n}: [default{i}]:2024-12-04 10:00:01,000 step 1 loss 1.9"
        for n in (1, 2)
        for i in range(4)
    ]
    lines += ["node2: [default1]:Traceback (most recent call last):", exc]
    lines += [
        f"node{n}: [default{i}]:[E1204 10:10:0{i}.1 ProcessGroupNCCL.cpp:616] [Rank {4 * (n - 1) + i}] "
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=51, OpType=ALLREDUCE, "
        "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600021 milliseconds before timing out."
        for n in (1, 2)
        for i in range(4)
        if (n, i) != (2, 1)
    ]
    (tmp_path / "console.log").write_text("\n".join(lines) + "\n")
    d = diagnose([str(tmp_path)])
    assert d.initiating is not None and d.initiating.line in (9, 10)  # the traceback's incident
    assert d.initiating.rank == 5 and d.initiating.host == "node2"


def test_a_busy_workers_local_prefix_is_mapped_to_its_global_rank(tmp_path) -> None:
    """Two nodes of two workers: node1's worker [default0] (global rank 2)
    prints only lines no pattern knows while ranks 0, 1 and 3 time out; the
    offset node1's [default1]:[rank3]: shows, a whole node of workers, maps
    it, and its last line before the timeouts is named."""
    from denpex_fast.analysis.diagnosis import diagnose

    wd = (
        "[default{l}]:[rank{g}]:[E1204 10:10:0{g}.1 ProcessGroupNCCL.cpp:616] [Rank {g}] "
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=51, OpType=ALLREDUCE, "
        "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600021 milliseconds before timing out."
    )
    busy = "[default0]:Running k-means on 2000000 embeddings"
    for node in (0, 1):
        lines = [f"[default{i}]:[2024-12-04 10:00:01,000] step 1 loss 1.9" for i in (0, 1)]
        lines += [busy] if node == 1 else []
        lines += [wd.format(l=i, g=2 * node + i) for i in (0, 1) if 2 * node + i != 2]
        (tmp_path / f"node{node}").mkdir()
        (tmp_path / f"node{node}" / "console.log").write_text("\n".join(lines) + "\n")
    d = diagnose([str(tmp_path)])
    assert d.suspect_rank == 2
    assert d.initiating is not None and d.initiating.text == busy


def test_local_ranks_no_line_pairs_take_a_block_per_node_in_name_order(tmp_path) -> None:
    """Two nodes of two workers under gloo: every line says only [defaultN]:,
    none names a global rank.  node0's [default0] is busy with work of its
    own while the three others time out.  Without a block per node, node1's
    waiting [default0] would share rank 0 with it and the silent worker
    could not be told from a waiting one."""
    from denpex_fast.analysis.diagnosis import diagnose

    gloo = (
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] "
        "Timed out waiting 1800000ms for recv operation to complete"
    )
    busy = "[default0]:[2024-12-04 10:00:04,000] INFO Running k-means on 2000000 embeddings"
    for node in (0, 1):
        lines = [
            f"[default{i}]:[2024-12-04 10:00:0{s},000] INFO step {s} loss 1.{9 - s}"
            for s in (1, 2, 3)
            for i in (0, 1)
        ]
        lines += [busy] if node == 0 else []
        lines += [f"[default{i}]:{gloo}" for i in (0, 1) if (node, i) != (0, 0)]
        (tmp_path / f"node{node}").mkdir()
        (tmp_path / f"node{node}" / "console.log").write_text("\n".join(lines) + "\n")
    d = diagnose([str(tmp_path)])
    assert d.suspect_rank == 0
    assert d.initiating is not None and d.initiating.text == busy
    assert d.initiating.file.endswith("node0/console.log")
    assert any("taken in name order" in r for r in d.reasons), d.reasons
    fates = {f["rank"]: f for f in d.rank_fates.to_pylist()}
    # three waiting workers, not two local ranks; the busy one printed no error
    assert fates.get(0, {}).get("first_error_signature") is None
    assert all(fates[r]["first_error_signature"] == "torch-gloo-timeout" for r in (1, 2, 3))


def test_a_wrapper_whose_message_no_entry_reads_yields_to_the_error_it_wraps(tmp_path) -> None:
    """``DistBackendError: NCCL error in:`` with its message cut (a paste) is
    still the wrapper: the runtime failure RCCL printed after it, with no
    ``[rankN]:`` prefix, is the origin, and it is rank 3's (the only rank the
    file names)."""
    from denpex_fast.analysis.diagnosis import diagnose

    hip = "[FATAL ERROR]: HIP failure: 'invalid device function'"
    (tmp_path / "log.txt").write_text(
        "[rank3]: Traceback (most recent call last):\n"
        '[rank3]:   File "train.py", line 40, in <module>\n'
        "[rank3]:     dist.all_reduce(t)\n"
        "[rank3]: torch.distributed.DistBackendError: NCCL error in:\n"
        "...\n"
        "\n"
        f"{hip}\n"
    )
    d = diagnose([str(tmp_path / "log.txt")])
    assert d.initiating is not None and d.initiating.text == hip
    assert d.initiating.rank == 3


def test_an_untagged_line_beside_a_launchers_tagged_ranks_is_not_theirs(tmp_path) -> None:
    """mpirun --tag-output (like torchrun's ``[defaultN]:`` and ``srun -l``)
    tags every line of every rank, so an untagged error line in that file
    was written by another process (a driver or client beside the ranks):
    it does not take the rank of the one rank whose lines are there, and
    the rank's own later CUDA error is the origin."""
    from denpex_fast.analysis.diagnosis import diagnose

    cuda = "[1,1]<stderr>:RuntimeError: CUDA error: invalid configuration argument"
    text = (
        "[1,0]<stdout>:Training epoch 0\n"
        "[1,1]<stdout>:Training epoch 0\n"
        "scheduler.client - ERROR - Failed to reconnect to scheduler, closing client\n"
        "[1,1]<stdout>:Total batches: 488\n"
        f"{cuda}\n"
    )
    (tmp_path / "log.txt").write_text(text)
    d = diagnose([str(tmp_path / "log.txt")])
    assert d.initiating is not None and d.initiating.text == cuda and d.initiating.rank == 1


def test_an_info_line_the_errors_entry_names_as_its_cause_is_named(tmp_path) -> None:
    """NCCL could not load the plugin NCCL_NET_PLUGIN asked for (an INFO
    line), then fails because NCCL_NET asks for that plugin's network: the
    INFO line of the same process says why.  Another process's INFO line
    explains nothing."""
    from denpex_fast.analysis.diagnosis import diagnose

    info = "gpu7:5100:5130 [1] NCCL INFO NET/Plugin: Could not find: ofi libnccl-net-ofi.so. Using internal network plugin."
    warn = "gpu7:{pid}:5130 [1] net.cc:626 NCCL WARN Error: network AWS Libfabric not found."
    for pid, expected in ((5100, info), (5200, warn.format(pid=5200))):
        job = tmp_path / str(pid)
        job.mkdir()
        (job / "log.txt").write_text(
            f"{info}\ngpu7:5100:5130 [1] NCCL INFO cudaDriverVersion 12040\n{warn.format(pid=pid)}\n"
        )
        d = diagnose([str(job / "log.txt")])
        assert d.initiating is not None and d.initiating.text == expected, pid


@pytest.mark.parametrize(
    "line",
    [
        "[rank0]: RuntimeError: [Rank 0]: Ranks 2, 3 failed to pass monitoredBarrier in 30000 ms",
        "RuntimeError: Rank 2 failed to pass monitoredBarrier in 30000 ms",
        "[rank0]: torch.distributed.DistStoreError: Timed out waiting on barrier on rank 0, for "
        "key prefix: /torchelastic/agent/exit (world_size=4, missing_ranks=[Rank 2], "
        "timeout=0:05:00)",
    ],
)
def test_the_rank_a_barrier_reports_as_failed_is_named_not_the_root_that_printed_it(
    tmp_path, line
) -> None:
    """monitored_barrier's root (rank 0) names the ranks that never arrived:
    the line is their account, so it names rank 2 and is no wait of rank 0's
    (which would make a silent rank the one waited for)."""
    from denpex_fast.analysis.diagnosis import diagnose

    steps = [f"[rank{r}]: step 7 loss 2.1" for r in range(4)]
    (tmp_path / "console.log").write_text("\n".join([*steps, line]) + "\n")
    d = diagnose([str(tmp_path / "console.log")])
    assert d.initiating is not None and d.initiating.text == line
    assert d.initiating.rank == 2


def test_a_kernel_oom_line_beside_per_node_files_takes_the_rank_its_pid_has(tmp_path) -> None:
    """The OOM killer names pid 5002; the agent's lines in node2.log pair that
    pid with rank 2 on host gpu-a17.  dmesg.txt sits at the job's root, whose
    directory name no launcher line names as a host, so it cannot contradict
    the pairing."""
    from denpex_fast.analysis.diagnosis import diagnose

    job = tmp_path / "n18"
    job.mkdir()
    for r in range(4):
        lines = [f"[2024-12-04 10:00:0{s},000] INFO step {s} loss 1.{s}" for s in (1, 2, 3)]
        if r == 2:
            lines += [
                "E1204 10:00:05.000009 900 torch/distributed/elastic/multiprocessing/api.py:869] "
                "failed (exitcode: -9) local_rank: 2 (pid: 5002) of binary: /usr/bin/python3",
                "  host      : gpu-a17",
                "  rank      : 2 (local_rank: 2)",
                "  exitcode  : -9 (pid: 5002)",
            ]
        (job / f"node{r}.log").write_text("\n".join(lines) + "\n")
    oom = "[Wed Dec  4 10:00:04 2024] Out of memory: Killed process 5002 (python3) total-vm:9876kB"
    (job / "dmesg.txt").write_text(oom + "\n")
    d = diagnose([str(job)])
    assert d.initiating is not None and d.initiating.text == oom
    assert d.initiating.rank == 2


def test_a_collective_mismatch_names_the_rank_its_reporters_name_after_but(tmp_path) -> None:
    """Under TORCH_DISTRIBUTED_DEBUG=DETAIL every rank compares the peers'
    fingerprints with its own and reports the first that differs: the ranks
    of the majority all name the odd rank after 'but', and so does the
    diagnosis."""
    from denpex_fast.analysis.diagnosis import diagnose

    fp = "CollectiveFingerPrint(SequenceNumber=88, OpType={op})"
    line = (
        "[rank{r}]: RuntimeError: Detected mismatch between collectives on ranks. Rank {r} is "
        "running collective: {mine}, but Rank {o} is running collective: {theirs}."
    )
    rows = [f"[rank{r}]: step 12 loss 0.8" for r in range(4)]
    for r in (0, 1, 3, 2):
        odd = r == 2
        rows.append(
            line.format(
                r=r,
                o=0 if odd else 2,
                mine=fp.format(op="BROADCAST" if odd else "ALLREDUCE"),
                theirs=fp.format(op="ALLREDUCE" if odd else "BROADCAST"),
            )
        )
    (tmp_path / "console.log").write_text("\n".join(rows) + "\n")
    d = diagnose([str(tmp_path / "console.log")])
    assert d.initiating is not None and d.initiating.signature == "torch-collective-mismatch"
    assert d.initiating.rank == 2


@pytest.mark.parametrize(
    ("reporter", "peer", "named"), [(0, 1, 0), (1, 0, 0), (3, 1, 1), (0, 3, 3), (2, 3, 3)]
)
def test_a_single_collective_mismatch_report_names_rank_0_when_it_is_one_of_the_two(
    tmp_path, reporter, peer, named
) -> None:
    """The reporter names the first peer, in rank order, that differs from
    it: an odd reporter would name its lowest-numbered peer, so a report
    naming another peer names the odd one (rank 0 naming rank 3: ranks 1 and
    2 agree with rank 0).  A report naming the lowest peer cannot say which
    of its two ranks diverged: rank 0 (whose logging, saving or evaluating
    is the usual odd code path) when it is one of them."""
    from denpex_fast.analysis.diagnosis import diagnose

    line = (
        f"[rank{reporter}]: RuntimeError: Detected mismatch between collectives on ranks. "
        f"Rank {reporter} is running collective: CollectiveFingerPrint(SequenceNumber=9, "
        f"OpType=ALLREDUCE), but Rank {peer} is running collective: "
        "CollectiveFingerPrint(SequenceNumber=9, OpType=BROADCAST)."
    )
    (tmp_path / "log.txt").write_text(line + "\n")
    d = diagnose([str(tmp_path / "log.txt")])
    assert d.initiating is not None and d.initiating.rank == named


def test_a_family_entry_names_what_no_specific_entry_reads(tmp_path) -> None:
    """``CUDA error: <text>`` is read by the CUDA family entry whatever the
    text; where a specific entry reads the same line (an illegal memory
    access) that entry names it.  Either way it is a specific cause, and
    it outranks a peer's timeout printed later."""
    from denpex_fast.analysis.diagnosis import diagnose

    wd = (
        "[rank{r}]:[E1204 10:10:0{r}.1 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=51, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600021 milliseconds before timing out."
    )
    for text, want in (
        ("CUDA error: invalid configuration argument", "cuda-runtime-error"),
        ("CUDA error: an illegal memory access was encountered", "cuda-illegal-memory-access"),
    ):
        job = tmp_path / want
        job.mkdir()
        lines = [f"[rank{r}]:[2024-12-04 10:00:01,000] step 1 loss 1.9" for r in range(4)]
        lines += ["[rank2]:Traceback (most recent call last):", f"[rank2]:RuntimeError: {text}"]
        lines += [wd.format(r=r) for r in (0, 1, 3)]
        (job / "console.log").write_text("\n".join(lines) + "\n")
        d = diagnose([str(job)])
        assert d.initiating is not None and d.initiating.rank == 2
        assert d.initiating.signature == want
        assert d.initiating.text.endswith(text)


def test_nccl_error_return_traces_are_a_failure_named_by_the_line_they_restate(tmp_path) -> None:
    """NCCL's ``file:line -> code`` INFO traces are printed by each function
    a failed call returns through.  A log cut to its NCCL_DEBUG=INFO lines may
    hold nothing else: the job failed there (never "healthy"), at the first
    trace of the earliest process.  When the WARN that started the chain is
    there, the chain is named by that WARN, not by the trace under it; and a
    specific cause on another rank outranks a bare trace."""
    from denpex_fast.analysis.diagnosis import diagnose

    setup = "hostb:700:700 [1] NCCL INFO Bootstrap : Using ib0:192.168.7.3<0>\n"
    first = "hostb:701:760 [2] NCCL INFO misc/socket.cc:540 -> 2"
    traces = f"{first}\nhostb:701:760 [2] NCCL INFO bootstrap.cc:281 -> 2\n"
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "node2.log").write_text(setup + traces)
    d = diagnose([str(tmp_path / "a")])
    assert d.verdict != "no-failure-found"
    assert d.initiating is not None and d.initiating.text == first

    warn = "hostb:701:760 [2] misc/socket.cc:71 NCCL WARN socketProgress: Connection closed by remote peer hosta<4211>"
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "node2.log").write_text(setup + warn + "\n" + traces)
    d = diagnose([str(tmp_path / "b")])
    assert d.initiating is not None and d.initiating.text == warn

    dup = "[1,2]<stdout>:hostc:81:90 [0] init.cc:497 NCCL WARN Duplicate GPU detected : rank 2 and rank 0 both on CUDA device 3000"
    log = (
        "[1,3]<stdout>:hostc:82:91 [0] NCCL INFO init.cc:903 -> 5\n"
        f"{dup}\n"
        "[1,2]<stdout>:hostc:81:90 [0] NCCL INFO init.cc:867 -> 5\n"
    )
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "log.txt").write_text(log)
    d = diagnose([str(tmp_path / "c")])
    assert d.initiating is not None and d.initiating.text == dup and d.initiating.rank == 2


def test_a_rank_claimed_twice_in_one_round_is_where_the_job_went_wrong(tmp_path) -> None:
    """Two processes announcing the same global rank before the world's
    claims are all in took one rank (a launch that does not match the
    trainer's layout); the later traceback follows from it.  A new attempt's
    round of claims, and one rank's own file claiming its rank on every
    restart, are not duplicates."""
    from denpex_fast.analysis.diagnosis import diagnose

    claim = "Initializing distributed: GLOBAL_RANK: {r}, MEMBER: {m}/4"
    dup = claim.format(r=1, m=2)
    text = "\n".join(
        [
            "GPU available: True (cuda), used: True",
            claim.format(r=1, m=2),
            claim.format(r=0, m=1),
            dup,
            claim.format(r=0, m=1),
            "Traceback (most recent call last):",
            '  File "train.py", line 9, in <module>',
            "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. 2/4 clients joined.",
            "",
        ]
    )
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "slurm-77.out").write_text(text)
    d = diagnose([str(tmp_path / "a" / "slurm-77.out")])
    assert d.initiating is not None and d.initiating.line == 4 and d.initiating.rank == 1
    assert any("claimed a second time" in r for r in d.reasons)

    # a restart: every rank claims again in the next attempt's round
    rounds = [claim.format(r=r, m=r + 1) for r in (2, 0, 3, 1)] * 2
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "console.log").write_text("\n".join([*rounds, f"[rank3]: {oom}", ""]))
    d = diagnose([str(tmp_path / "b" / "console.log")])
    assert d.initiating is not None and d.initiating.text.endswith(oom)
    assert not any("claimed a second time" in r for r in d.reasons)

    # one rank's own file across two attempts
    (tmp_path / "c").mkdir()
    for r in range(4):
        lines = [claim.format(r=r, m=r + 1)] * 2 + [f"step 10 loss 1.5 rank {r}"]
        if r == 2:
            lines.append(oom)
        (tmp_path / "c" / f"rank{r}.log").write_text("\n".join([*lines, ""]))
    d = diagnose([str(tmp_path / "c")])
    assert d.initiating is not None and d.initiating.text == oom and d.initiating.rank == 2


def test_the_rank_alone_in_another_kind_of_collective_took_another_path(tmp_path) -> None:
    """Ranks that time out in one collective (the same SeqNum) but in
    different kinds of work: the one rank in a REDUCE while its peers wait in
    an ALLGATHER ran a branch they did not.  It is named by its own wait line,
    and the reason says so; when all wait in the same kind, no rank is
    singled out that way."""
    from denpex_fast.analysis.diagnosis import diagnose

    line = (
        "[E ProcessGroupNCCL.cpp:737] [Rank {r}] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=5120, OpType={op}, Timeout(ms)=600000) ran for 600412 milliseconds "
        "before timing out."
    )
    ops = {2: "ALLGATHER", 3: "ALLGATHER", 0: "REDUCE", 1: "ALLGATHER"}
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "log.txt").write_text(
        "\n".join(line.format(r=r, op=op) for r, op in ops.items()) + "\n"
    )
    d = diagnose([str(tmp_path / "a" / "log.txt")])
    assert d.initiating is not None and d.initiating.rank == 0 and d.initiating.line == 3
    assert any("waits in REDUCE while ranks 1, 2, 3 wait in ALLGATHER" in r for r in d.reasons)

    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "log.txt").write_text(
        "\n".join(line.format(r=r, op="ALLGATHER") for r in ops) + "\n"
    )
    d = diagnose([str(tmp_path / "b" / "log.txt")])
    assert not any("code path diverged" in r for r in d.reasons)


def test_the_rank_whose_collective_record_differs_at_one_count_is_named(tmp_path) -> None:
    """NCCL's COLL trace gives every collective a rank enters with the
    communicator's running count: at one count all ranks' records agree.  The
    one rank whose record differs at the lowest count where they do not
    (another element count and datatype) took another path, even when no
    line of the job is an error (a hang)."""
    from denpex_fast.analysis.diagnosis import diagnose

    rec = (
        "gpu7:{pid}:{pid} [{r}] NCCL INFO {op}: opCount {n:x} sendbuff 0x7f00 recvbuff 0x7f00 "
        "count {count} datatype {dt} op 0 root 0 comm 0x55{r}0 [nranks=4] stream 0x5a"
    )

    def job(odd: int | None, folder: str) -> list[str]:
        (tmp_path / folder).mkdir()
        lines = {}
        for r in range(4):
            own = [rec.format(pid=100 + r, r=r, op="AllReduce", n=0, count=4096, dt=7)]
            if r == odd:
                own.append(rec.format(pid=100 + r, r=r, op="Broadcast", n=1, count=10, dt=4))
            else:
                own.append(rec.format(pid=100 + r, r=r, op="AllReduce", n=1, count=4096, dt=7))
            (tmp_path / folder / f"rank{r}.log").write_text("\n".join(own) + "\n")
            lines[r] = own
        return lines[odd] if odd is not None else []

    odd = job(2, "a")
    d = diagnose([str(tmp_path / "a")])
    assert d.initiating is not None and d.initiating.rank == 2 and d.initiating.text == odd[1]
    assert any("rank 2 entered another collective than ranks 0, 1, 3" in r for r in d.reasons)

    job(None, "b")
    d = diagnose([str(tmp_path / "b")])
    assert not any("entered another collective" in r for r in d.reasons)


@pytest.mark.parametrize(
    "prefix",
    ["", "2024-05-01T12:00:00.123456789Z stderr F ", "trainer-1  | "],
    ids=["plain", "cri", "compose"],
)
def test_an_unranked_error_takes_the_one_rank_its_processs_own_lines_name(
    tmp_path, prefix: str
) -> None:
    """A single process's paste whose script said which rank it is on a line
    no entry matches (``rank 0 is initialized``) names that rank for the
    traceback below it, also behind a log collector's prefix (where the
    exception line is read back, not matched); with two ranks named there,
    none is guessed."""
    from denpex_fast.analysis.diagnosis import diagnose

    trace = [
        "Traceback (most recent call last):",
        '  File "train.py", line 379, in <module>',
        "    train()",
        '  File "train.py", line 178, in train',
        "    assert gradient_accumulation_steps % world_size == 0",
        "AssertionError",
    ]

    def write(name: str, lines: list[str]) -> str:
        (tmp_path / name).write_text("".join(prefix + x + "\n" for x in lines))
        return str(tmp_path / name)

    d = diagnose([write("one.txt", ["rank 0 is initialized local_rank = 0", *trace])])
    assert d.initiating is not None and d.initiating.text.endswith("AssertionError")
    assert d.initiating.rank == 0

    two = ["rank 0 is initialized local_rank = 0", "rank 1 is initialized local_rank = 1"]
    d = diagnose([write("two.txt", [*two, *trace])])
    assert d.initiating is not None and d.initiating.text.endswith("AssertionError")
    assert d.initiating.rank is None


def test_ddps_list_of_parameters_without_gradient_is_its_failure_even_alone(tmp_path) -> None:
    """The reducer prints the parameters that got no gradient only inside its
    unfinished-reduction error: pasted alone the list is that failure; with
    the error's header above it, the header names the incident."""
    from denpex_fast.analysis.diagnosis import diagnose

    detail = "Parameters which did not receive grad for rank 14: head.bias, head.weight"
    (tmp_path / "alone.txt").write_text(detail + "\n")
    d = diagnose([str(tmp_path / "alone.txt")])
    assert d.verdict in ("failure", "suspect") and d.initiating is not None
    assert (d.initiating.text, d.initiating.rank) == (detail, 14)

    header = (
        "[rank14]: RuntimeError: Expected to have finished reduction in the prior iteration "
        "before starting a new one. This error indicates that your module has parameters that "
        "were not used in producing loss."
    )
    (tmp_path / "both.txt").write_text(f"{header}\n[rank14]: {detail}\n")
    d = diagnose([str(tmp_path / "both.txt")])
    assert d.initiating is not None and d.initiating.text == header


def test_the_rank_left_out_of_a_stalled_collectives_ready_list_is_named(tmp_path) -> None:
    """Horovod's ``[ready ranks: ...]`` lists who submitted a stalled
    collective: the one rank of 0..N-1 it leaves out is the one the others
    wait for, named at that line; with two left out none is guessed."""
    from denpex_fast.analysis.diagnosis import diagnose

    def paste(ready: str) -> str:
        return (
            "WARNING: One or more tensors were submitted to be reduced, gathered or broadcasted "
            "by subset\n of ranks and are waiting for remainder of ranks for more than 60 "
            "seconds.\nStalled ops:\n"
            f"HVDAllReduce/HorovodAllreduce_gradients_AddN_69_0 [ready ranks: {ready}],\n"
        )

    (tmp_path / "one.txt").write_text(paste("2, 6, 7, 3, 4, 1, 5"))
    d = diagnose([str(tmp_path / "one.txt")])
    assert d.initiating is not None and d.initiating.line == 4
    assert d.initiating.rank == 0

    (tmp_path / "two.txt").write_text(paste("2, 6, 7, 3, 4, 5"))
    d = diagnose([str(tmp_path / "two.txt")])
    assert d.initiating is None or d.initiating.rank is None


@pytest.mark.parametrize("end", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_a_password_prompt_in_a_launchers_output_is_the_failed_ssh_login(tmp_path, end) -> None:
    """A batch launch never types a password: ssh's prompt is where the job
    stopped, before the refusals that follow it (with CRLF line ends too)."""
    from denpex_fast.analysis.diagnosis import diagnose

    lines = [
        "$ mpirun -np 2 -H 10.0.0.2:1,10.0.0.3:1 python3 train.py",
        "dl@10.0.0.2's password: ",
        "Permission denied, please try again.",
        "Permission denied (publickey,password).",
    ]
    (tmp_path / "log.txt").write_bytes(end.join(lines).encode() + end.encode())
    d = diagnose([str(tmp_path / "log.txt")])
    assert d.initiating is not None and d.initiating.line == 2
    assert d.initiating.signature == "ds-launcher-ssh-permission-denied"


def test_a_paste_that_starts_at_a_traceback_chain_marker_names_the_exception_after_it(
    tmp_path,
) -> None:
    """``During handling of the above exception, another exception occurred``
    is Python's marker between chained tracebacks, not an error: the
    exception line that ends the traceback after it (here under Ray's task
    header instead of ``Traceback (most recent call last):``) is named."""
    from denpex_fast.analysis.diagnosis import diagnose

    err = "ValueError: The repository /models/x contains custom code which must be executed"
    (tmp_path / "log.txt").write_text(
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "ray::WorkerDict.save_checkpoint() (pid=8158, ip=10.0.65.133, actor_id=3b07)\n"
        '  File "/usr/lib/python3.12/concurrent/futures/_base.py", line 456, in result\n'
        "    return self.__get_result()\n"
        '  File "/verl/utils/checkpoint/manager.py", line 345, in save_checkpoint\n'
        "    save_model = auto_model_cls.from_config(model_config)\n"
        '  File "/transformers/dynamic_module_utils.py", line 769, in resolve_trust_remote_code\n'
        "    raise ValueError(\n"
        f"{err}\n"
    )
    d = diagnose([str(tmp_path / "log.txt")])
    assert d.initiating is not None and d.initiating.text == err


def test_the_detail_after_last_error_is_read_on_crlf_lines(tmp_path) -> None:
    """NCCL's ``Last error:`` with its detail on the next line is the origin
    also when the log's lines end in CRLF (a paste from Windows, a collector)."""
    from denpex_fast.analysis.diagnosis import diagnose

    lines = [
        "[rank1]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
        "internal error - please report this issue to the NCCL developers, NCCL version 2.20.5",
        "[rank1]: ncclInternalError: Internal check failed.",
        "[rank1]: Last error:",
        "[rank1]: NET/OFI Unable to insert remote address into address vector for device 1. RC: 0",
    ]
    (tmp_path / "log.txt").write_bytes(("\r\n".join(lines) + "\r\n").encode())
    d = diagnose([str(tmp_path / "log.txt")])
    assert d.initiating is not None and (d.initiating.line, d.initiating.rank) == (4, 1)


@pytest.mark.parametrize(
    "prompt",
    [
        "$ ",
        "(base) user@login01:~/runs$ ",
        "root@6f1c2d:/workspace# ",
        "[me@login01 runs]$ ",
        "2026-03-06T20:20:52.000000000Z stdout F $ ",  # behind a collector's prefix
        "[01;32muser@login01[00m:[01;34m~[00m$ ",  # a coloured prompt pasted without its ESC
    ],
)
def test_a_command_typed_at_a_shell_prompt_is_input_not_a_failure(tmp_path, prompt) -> None:
    """A paste often starts with the command its author ran; an error string
    given to ``grep`` in that command is not an error the job printed."""
    from denpex_fast.analysis.diagnosis import diagnose

    (tmp_path / "a.txt").write_text(
        prompt + 'grep "RuntimeError: CUDA error: an illegal memory access" *.out | sort\n'
        "      2 job-41.out\n"
    )
    (tmp_path / "b.txt").write_text(
        '[rank0]:   File "/w/train.py", line 9, in <module>\n'
        "[rank0]: tracking.exceptions.TrackingException: request failed: token expired\n"
    )
    d = diagnose([str(tmp_path / "a.txt"), str(tmp_path / "b.txt")])
    assert d.initiating is not None
    assert (d.initiating.file.rsplit("/", 1)[-1], d.initiating.line) == ("b.txt", 2)
    assert d.initiating.rank == 0


@pytest.mark.parametrize(
    "crash",
    [
        "free(): corrupted unsorted chunks\n[n1:186363] *** Process received signal ***\n"
        "[n1:186363] Signal: Aborted (6)\n[n1:186363] Signal code:  (-6)\n",
        '*** Aborted at 1751265473 (unix time) try "date -d @1751265473" if you are using '
        "GNU date ***\nPC: @                0x0 (unknown)\n*** SIGSEGV (@0x7f34df945000) received "
        "by PID 3514082 (TID 0x7f9e099f1640) from PID 0; stack trace: ***\n",
        "step 10 loss 2.1\nAborted\n",
    ],
)
def test_a_log_that_is_only_a_native_crash_report_is_not_healthy(tmp_path, crash) -> None:
    """glibc's allocator checks, Open MPI's and glog's signal handlers and the
    shell's bare ``Aborted`` are what a process that died in native code
    leaves: the job failed, and the report names the first of those lines."""
    from denpex_fast.analysis.diagnosis import diagnose

    log = tmp_path / "rank0.log"
    log.write_text(crash)
    d = diagnose([str(log)])
    assert d.verdict in ("failure", "suspect")
    first = next(n for n, t in enumerate(crash.splitlines(), 1) if "loss" not in t)
    assert d.initiating is not None and d.initiating.line == first


def test_an_exception_raised_without_a_message_in_a_pytest_report_is_named(tmp_path) -> None:
    """pytest reports a failed test's exception behind ``E`` and the failing
    source line's indentation; a class raised bare (``assert x``) is the
    failure, not a log that stopped."""
    from denpex_fast.analysis.diagnosis import diagnose

    log = tmp_path / "ci.log"
    log.write_text(
        "_______________________________ test_dp_server ________________________________\n"
        "    def _ensure_stats_update_task(self):\n"
        ">       assert self.stats_update_address is not None\n"
        "E       AssertionError\n"
        "\n"
        "vllm/v1/engine/core_client.py:1091: AssertionError\n"
    )
    d = diagnose([str(log)])
    assert d.verdict in ("failure", "suspect")
    assert d.initiating is not None and d.initiating.line == 4


def test_a_report_of_another_process_failure_is_no_rival_to_the_confidence() -> None:
    """The confidence reads whether the named line had rivals: a collateral
    line (a peer's timeout, a Ray driver re-raising its worker's exception)
    is not one, a second line of its own is."""
    from denpex_fast.analysis.ranker import CONFIDENCE_FEATURES, confidence_features, load_model

    col = {n: i for i, n in enumerate(FEATURE_NAMES)}
    w = load_model().weights

    def row(kind: str) -> list[float]:
        x = [0.0] * len(FEATURE_NAMES)
        x[col[kind]] = 1.0
        return x

    one = CONFIDENCE_FEATURES.index("one_candidate")
    cause = row("specific_cause")
    assert confidence_features([cause], w)[one] == 1.0
    assert confidence_features([cause, row("collateral")], w)[one] == 1.0
    assert confidence_features([cause, row("open_world")], w)[one] == 0.0
    assert confidence_features([row("collateral"), row("collateral")], w)[one] == 0.0


def test_a_ray_driver_paste_cut_after_its_re_raise_names_that_line(tmp_path) -> None:
    """A driver's traceback that stops at ``RayTaskError(Cls): ray::...`` (the
    worker's own traceback cut off) is a failure at that line, not a log that
    stopped without an error; with the worker's exception below it, the
    exception is named."""
    from denpex_fast import diagnose

    head = [
        "Traceback (most recent call last):",
        '  File "/app/train.py", line 84, in <module>',
        "    ray.get(actor.init.remote())",
        '  File "/usr/lib/python3/site-packages/ray/_private/worker.py", line 937, in get_objects',
        "    raise value.as_instanceof_cause()",
        "ray.exceptions.RayTaskError(RuntimeError): ray::TrainActor.init() (pid=4411, ip=10.0.0.3)",
    ]
    log = tmp_path / "driver.log"
    log.write_text("\n".join(head) + "\n")
    d = diagnose(log)
    assert d.verdict in ("failure", "suspect")
    assert d.initiating is not None
    assert (d.initiating.signature, d.initiating.line) == ("vllm-ray-task-error", 6)

    tail = [
        '  File "/app/actor.py", line 12, in init',
        "    torch.cuda.set_device(7)",
        "RuntimeError: CUDA error: invalid device ordinal",
    ]
    log.write_text("\n".join(head + tail) + "\n")
    d = diagnose(log)
    assert d.initiating is not None
    assert (d.initiating.signature, d.initiating.line) == ("cuda-invalid-device-ordinal", 9)


def test_a_warning_the_job_went_on_past_to_its_completion_line_is_no_failure(tmp_path) -> None:
    """Megatron warns that it found no checkpoint and starts from random
    weights, then trains to its end and saves: the job finished, and the
    warning is listed, not named as the failure.  A warning printed after
    the completion line (a teardown that went wrong) still counts."""

    lines = [
        "WARNING: could not find the metadata file /ckpt/gpt2/latest_checkpointed_iteration.txt ",
        "    will not load any checkpoints and will start from random",
        *(
            f" iteration {i:8d}/     200 | consumed samples: {i * 8:10d} | lm loss: 6.1E+00 |"
            for i in range(10, 210, 10)
        ),
        "[after training is done] datetime: 2023-07-17 01:28:11 ",
        "saving checkpoint at iteration     200 to /ckpt/gpt2",
        "  successfully saved checkpoint at iteration     200 to /ckpt/gpt2",
    ]
    d = _diagnosed(tmp_path, "train.log", lines)
    assert d.verdict == "no-failure-found"
    assert any("megatron-ckpt-metadata-missing" in r for r in d.reasons)

    teardown = [*lines, "error: something went wrong at teardown"]
    assert _diagnosed(tmp_path, "train.log", teardown).verdict != "no-failure-found"


def _server_start(error_lines: list[str]) -> list[dict]:
    rows = [
        {"signature": "any-log-level-error", "line": i, "text": t}
        for i, t in enumerate(error_lines, start=6)
    ]
    rows.append(
        {
            "signature": "any-server-startup-complete",
            "line": 329,
            "text": "(APIServer pid=1009) INFO:     Application startup complete.",
        }
    )
    return rows


def test_an_error_the_job_retried_and_went_past_to_its_completion_is_not_the_failure(kb) -> None:
    # the retry announced on the first attempt covers the last attempt, which
    # prints the same message without the retry words
    msg = "(APIServer pid=9) ERROR 09-10 23:26:{s} [config.py:{n}] Error retrieving safetensors: 'm' is not a safetensors repo."
    r = rank_events(
        table(
            _server_start([msg.format(s=29, n=130) + ", retrying 1 of 2", msg.format(s=31, n=128)])
        ),
        kb,
    )
    assert r.verdict == "no-failure-found" and r.initiating is None


def test_an_error_the_job_went_past_to_its_completion_is_listed_not_named(kb) -> None:
    # the server started after it: the error did not stop the start-up, and
    # the report says which line it went past
    line = "(APIServer pid=9) ERROR 09-10 23:26:31 [config.py:128] Error loading tokenizer: file is corrupt"
    r = rank_events(table(_server_start([line])), kb)
    assert r.verdict == "no-failure-found" and r.initiating is None
    assert any("any-log-level-error at" in why and ":6" in why for why in r.reasons)


def test_an_error_after_the_completion_line_is_still_named(kb) -> None:
    rows = _server_start([])
    rows.append(
        {
            "signature": "any-log-level-error",
            "line": 400,
            "text": "(APIServer pid=9) ERROR 09-10 23:30:02 [serving.py:88] Error in request: CUDA error",
        }
    )
    r = rank_events(table(rows), kb)
    assert r.verdict != "no-failure-found" and r.initiating is not None
    assert r.initiating.line == 400


def test_a_processs_probe_warning_does_not_date_its_later_known_failure(tmp_path) -> None:
    """Each process's main thread warns that it cannot open libibverbs (a
    probe NCCL goes on past); later a proxy thread of each fails to grow its
    shared-memory file.  The probe is another thread's record and no earlier
    print of that failure: rank 1's failure, printed first, is named."""

    h = "5135fc87695d"
    lines = [
        f"{h}:126318:126318 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]",
        "NCCL version 2.7.3+cuda10.2",
        "",
        f"{h}:126319:126319 [1] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]",
        "",
        f"{h}:126319:126336 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device",
        "",
        f"{h}:126319:126336 [1] include/shm.h:48 NCCL WARN Error while creating shared memory segment nccl-shm-recv-54c7-1-0-1 (size 9637888)",
        "",
        f"{h}:126318:126335 [0] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device",
    ]
    d = _diagnosed(tmp_path, "test-output.log", lines)
    assert d.initiating is not None and (d.initiating.line, d.initiating.rank) == (6, 1)


def test_a_traceback_logged_at_error_level_is_named_by_its_exception_line(tmp_path) -> None:
    """vLLM's engine logs its traceback line by line at ERROR level, the
    header too ("EngineCore hit an exception: Traceback ..."): the header
    says an exception follows; the exception line says what failed."""

    pre = "(EngineCore_1 pid=27550) ERROR 03-31 03:08:15 [core.py:367]"
    lines = [
        "INFO 03-31 03:08:12 [__init__.py:44] plugin ascend loaded.",
        f"{pre} EngineCore hit an exception: Traceback (most recent call last):",
        f'{pre}   File "/usr/lib/python3.10/site-packages/vllm/v1/engine/core.py", line 353, in run_engine_core',
        f"{pre}     engine_core = DPEngineCoreProc(*args, **kwargs)",
        f"{pre} TypeError: __init__(): incompatible constructor arguments. The following argument types are supported:",
        f"{pre}     1. torch._C._distributed_c10d.ProcessGroup(arg0: int, arg1: int)",
        "CRITICAL 03-31 03:08:15 [core_client.py:319] Got fatal signal from worker processes, shutting down. See stack trace above for root cause issue.",
    ]
    d = _diagnosed(tmp_path, "vllm-serve.log", lines)
    assert d.initiating is not None and d.initiating.line == 5


def test_an_abort_after_a_thrown_exception_is_its_end_not_a_crash_of_its_own(tmp_path) -> None:
    """Every rank's watchdog times out (a hang with no other cause printed);
    the C++ runtime terminates on the thrown DistBackendError, the shell
    reports the abort, the launcher one rank's exit 134 and another's
    SIGTERM.  The abort and the SIGTERM are consequences: the first timeout
    is what the log can name."""

    what = (
        "  what():  [PG 0 Rank {r}] Process group watchdog thread terminated with exception: "
        "[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
        "OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=120000) ran for "
        "120094 milliseconds before timing out."
    )
    lines = [
        "x3200c0s19b1n0:191643:191866 [2] NCCL INFO comm 0x5590ec4762b0 rank 2 nranks 8 - Init COMPLETE",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        what.format(r=1),
        "Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:565 (most recent call first):",
        "",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        what.format(r=2),
        "",
        "./launcher.sh: line 14: 191644 Aborted                 (core dumped) $@",
        "x3200c0s19b1n0.hsn.cm.sirius.alcf.anl.gov: rank 0 exited with code 134",
        "x3200c0s19b1n0.hsn.cm.sirius.alcf.anl.gov: rank 1 died from signal 15",
    ]
    # each terminate prints its C++ frames (two exceptions' worth)
    frames = [
        f"frame #{k}: <unknown function> + 0x10584a1 (0x15325d20c4a1 in /soft/lib/libtorch_cuda.so)"
        for k in range(16)
    ]
    lines = [*lines[:4], *frames, *lines[4:7], *frames, *lines[7:]]
    d = _diagnosed(tmp_path, "job.log", lines)
    assert d.initiating is not None and (d.initiating.line, d.initiating.rank) == (3, 1)


def test_a_synthetic_benchmark_that_printed_its_total_finished(tmp_path) -> None:
    """Horovod's synthetic benchmark: TensorFlow warns it cannot load TensorRT,
    the iterations run, the total is printed: the benchmark finished.  Cut
    before the total, the same log stopped after its last iteration."""
    from denpex_fast import diagnose
    from denpex_fast.analysis.progress import last_steps

    tag = "Thu Jun 18 14:29:36 2020[1,{r}]<{s}>:"
    warn = (
        "2020-06-18 14:28:35.296902: W tensorflow/stream_executor/platform/default/dso_loader.cc:55] "
        "Could not load dynamic library 'libnvinfer.so.6'; dlerror: libnvinfer.so.6: cannot open "
        "shared object file: No such file or directory"
    )
    lines = [tag.format(r=r, s="stderr") + warn for r in range(2)]
    lines += ["Running benchmark..."]
    lines += [tag.format(r=0, s="stdout") + f"Iter #{i}: 108.0 img/sec per GPU" for i in range(10)]
    total = [tag.format(r=0, s="stdout") + "Total img/sec on 2 GPU(s): 216.1 +-3.9"]
    log = tmp_path / "job.log"
    log.write_text("\n".join(lines + total) + "\n")
    assert diagnose(log).verdict == "no-failure-found"
    assert last_steps([str(log)]) == {0: 9}
    log.write_text("\n".join(lines) + "\n")
    assert diagnose(log).verdict != "no-failure-found"


def test_an_exception_whose_message_ends_in_a_colon_is_named_by_its_detail(tmp_path) -> None:
    """DALI's pipeline error says what failed on the lines after it: the
    operator's own assertion is the message."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/opt/train.py", line 61, in __init__',
        "    self._dali_iterator = dali_pytorch.DALIGenericIterator(",
        '  File "/usr/lib/python3.8/site-packages/nvidia/dali/pipeline.py", line 827, in build',
        "    self._pipe.Build(self._generate_build_args())",
        "RuntimeError: Critical error when building pipeline:",
        "Error when constructing operator: readers___TFRecord encountered:",
        '[/opt/dali/dali/operators/reader/loader/indexed_file_loader.h:105] Assert on "fin.good()" '
        "failed: Failed to open file /dev/shm/train/univ_052.tfrecord.idx",
        "Stacktrace (76 entries):",
    ]
    d = _diagnosed(tmp_path, "output.log", lines)
    assert d.initiating is not None and d.initiating.line == 8


def test_a_batch_scripts_all_done_after_its_failed_step_is_no_completion(tmp_path) -> None:
    """srun reports the tasks' segfaults and cancels the step, then the batch
    script echoes "All done!": the job went on past nothing.  A resubmitted
    step that made progress after the scheduler cancelled the first one did."""

    warn = "4: cgpu14:53622:56536 [0] include/socket.h:406 NCCL WARN Connect to 10.0.0.61<42427> failed : No route to host"
    lines = [
        "+ srun -l python train.py",
        warn,
        "4: cgpu14:53622:56536 [0] NCCL INFO bootstrap.cc:354 -> 2",
        "srun: error: cgpu14: task 4: Segmentation fault",
        "0: slurmstepd: error: *** STEP 1450334.1 ON cgpu08 CANCELLED AT 2021-02-03T22:47:42 ***",
        "srun: error: cgpu08: task 0: Terminated",
        "+ set +x",
        "All done!",
    ]
    d = _diagnosed(tmp_path, "slurm-1450334.out", lines)
    assert d.verdict != "no-failure-found"
    assert d.initiating is not None and d.initiating.line == 2 and d.initiating.rank == 4
    # the same step resubmitted and training to its end: its first failure was outlived
    resumed = [f"0: iteration {i:6d}/   300 | lm loss: 2.1E+00 |" for i in range(100, 310, 10)]
    again = [*lines[:-2], "+ srun -l python train.py", *resumed, *lines[-2:]]
    assert _diagnosed(tmp_path, "slurm-1450334.out", again).verdict == "no-failure-found"


def test_a_known_warning_after_the_completion_line_is_listed_not_named(kb) -> None:
    """ZeRO-3 logs that it skipped the 16-bit model file while the finished
    run saves: an entry of warning severity did not stop a job that
    completed, wherever it was printed.  An unknown error word there still counts."""
    skipped = (
        "[2021-05-25 06:45:27,389] [INFO] [engine.py:1867:save_fp16_model] Did not save the model "
        "output_dir/pytorch_model.bin because `stage3_gather_fp16_weights_on_model_save` is False"
    )
    rows = _server_start([])
    rows.append({"signature": "ds-zero3-16bit-weights-not-saved", "line": 400, "text": skipped})
    r = rank_events(table(rows), kb)
    assert r.verdict == "no-failure-found" and r.initiating is None
    assert any("ds-zero3-16bit-weights-not-saved at" in why for why in r.reasons)
    rows.append({"signature": "any-error-word", "line": 480, "text": "error: teardown hung"})
    r = rank_events(table(rows), kb)
    assert r.initiating is not None and r.initiating.line == 480


def test_a_benchmark_run_that_logged_run_stop_success_went_past_its_probe_errors(tmp_path) -> None:
    """An MLPerf-logged run: SHARP's probe ERROR and NCCL's CollNet WARN,
    NCCL falls back, the run logs ``run_stop`` with status success."""
    from denpex_fast import diagnose

    done = (
        ':::MLLOG {"namespace": "", "time_ms": 1652388329220, "event_type": "INTERVAL_END", '
        '"key": "run_stop", "value": null, "metadata": {"file": "run_pretraining.py", '
        '"lineno": 1773, "status": "%s"}}'
    )
    lines = [
        "[ip-0A23040D:0:3917 unique id 0] ERROR No Aggregation Manager (sharp_am) detected in sharp_create_job.",
        "ip-0A23040D:52763:53428 [0] NCCL WARN Cannot initialize CollNet, using point-to-point network instead",
        *(f"step {i} loss 1.{i:02d}" for i in range(1, 30)),
    ]
    log = tmp_path / "result_0.txt"
    log.write_text("\n".join([*lines, done % "success"]) + "\n")
    d = diagnose(log)
    assert d.verdict == "no-failure-found"
    log.write_text("\n".join([*lines, done % "aborted"]) + "\n")
    assert diagnose(log).verdict != "no-failure-found"


def test_srun_reporting_one_task_done_is_not_the_job_finishing(tmp_path) -> None:
    from denpex_fast import diagnose

    log = tmp_path / "srun.log"
    log.write_text(
        "slurmstepd: error: *** STEP 6053.0 ON n20 CANCELLED AT 2024-04-23T12:18:08 ***\n"
        "srun: debug:  task 2 done\n"
    )
    d = diagnose(log)
    assert d.verdict != "no-failure-found"
    assert d.initiating is not None and d.initiating.signature == "slurm-cancelled"


def test_an_open_world_line_logged_at_warning_level_yields_to_a_later_failure(tmp_path) -> None:
    """vLLM warns that it could not import its optional C extension and goes
    on; twenty seconds later the engine dies with a TypeError.  The warning
    is no failure beside it, and stays the only clue when nothing else failed."""

    warn = (
        "(pid=13210) WARNING 07-31 19:35:15 [_custom_ops.py:20] Failed to import from "
        "vllm._C with ModuleNotFoundError(\"No module named 'vllm._C'\")"
    )
    lines = [
        "INFO 07-31 19:35:06 [ray_utils.py:334] No current placement group found.",
        warn,
        *(
            f"INFO 07-31 19:35:{17 + i} [ray_distributed_executor.py:353] worker {i} started"
            for i in range(16)
        ),
        "ERROR 07-31 19:35:35 [core.py:586] EngineCore failed to start.",
        "ERROR 07-31 19:35:35 [core.py:586] Traceback (most recent call last):",
        'ERROR 07-31 19:35:35 [core.py:586]   File "/vllm/model_loader/default_loader.py", line 198, in _get_weights_iterator',
        "ERROR 07-31 19:35:35 [core.py:586] TypeError: _weights_iterator() takes 1 positional argument but 2 were given",
    ]
    d = _diagnosed(tmp_path, "serve.log", lines)
    assert d.initiating is not None and d.initiating.line > 18
    d = _diagnosed(tmp_path, "serve.log", lines[:18])
    assert d.initiating is not None and d.initiating.line == 2


def test_a_fallback_is_the_cause_only_of_the_error_it_triggers(tmp_path) -> None:
    """gloo's loopback fallback on one host is harmless; on a multi-node job it
    is why a peer's connectFullMesh fails, and it was printed first."""
    from denpex_fast import diagnose

    warn = (
        "(RayWorkerWrapper pid=1978, ip=10.41.0.8) [rank9]:[W ProcessGroupGloo.cpp:721] Warning: "
        "Unable to resolve hostname to a (local) address. Using the loopback address as fallback. "
        "Manually set the network interface to bind to with GLOO_SOCKET_IFNAME. (function operator())"
    )
    fail = (
        "(RayWorkerWrapper pid=1890, ip=10.41.0.8) [rank8]:[E ProcessGroupGloo.cpp:144] Gloo "
        "connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error"
    )
    log = tmp_path / "serve.log"
    log.write_text("\n".join(["INFO 08-02 08:50:03 starting", warn, fail]) + "\n")
    d = diagnose(log)
    assert d.initiating is not None and d.initiating.signature == "torch-gloo-loopback-fallback"
    assert d.suspect_rank == 9
    log.write_text("\n".join(["INFO 08-02 08:50:03 starting", warn]) + "\n")
    assert diagnose(log).initiating is None


def test_ucx_debug_lines_are_narration() -> None:
    from denpex_fast.analysis.levels import narrated

    assert narrated(
        "0: [1579244744.255051] [cgpu12:56309:0]           sock.c:32   UCX  DEBUG ioctl(req=35093, ifr_name=.) failed: No such device"
    )
    assert not narrated(
        "0: [1579244748.838971] [cgpu12:56309:2]    cuda_ipc_md.c:62   UCX  ERROR cuCtxGetDevice(&cu_device) is failed. ret:invalid device context"
    )


def test_a_scripts_own_warning_prefix_is_its_warning_level() -> None:
    from denpex_fast.analysis.levels import warned

    assert warned(
        "v100x16-1:  > WARNING: could not find index map files, building the indices on rank 0 ..."
    )
    assert warned(
        "WARNING: could not find the metadata file /ckpt/latest_checkpointed_iteration.txt"
    )
    assert not warned("ERROR: could not find the dataset at /data/train")
    assert not warned("RuntimeError: WARNINGS:3 emitted")


def test_deepspeeds_libaio_warning_is_no_failure_of_a_job_without_nvme_offload(tmp_path) -> None:
    """Every DeepSpeed start-up reports the ops it cannot build; async_io
    without libaio matters only to a job that offloads to NVMe (the op then
    fails to load).  A job that fails on its data later failed on its data."""
    aio = "v100x16-1:  [WARNING]  async_io requires the dev libaio .so object and headers but these were not found."
    missing = (
        "v100x16-2: [rank8]: FileNotFoundError: [Errno 2] No such file or directory: "
        "'/data/index-cache/d1158a21c6d1be91201644dbce18ab32_doc_idx.npy'"
    )
    pad = [f"v100x16-1: > building dataset part {i}" for i in range(30)]
    d = _diagnosed(tmp_path, "driver.log", [aio, *pad, missing])
    assert d.initiating is not None and (d.initiating.line, d.initiating.rank) == (32, 8)


def test_the_last_render_of_a_full_progress_bar_does_not_undo_the_completion(tmp_path) -> None:
    """Lightning prints "`Trainer.fit` stopped" and then redraws its bar at
    100%: the job finished.  A bar below 100% after it is progress."""
    from denpex_fast import diagnose

    bar = (
        "Epoch 0: : {pct}%|██████████| {n}/10 [07:57<00:00, reduced_train_loss=9.790, "
        "global_step={n}.000, consumed_samples=20480.0]"
    )
    head = [bar.format(pct=p, n=n) for n, p in ((3, 30), (6, 60), (9, 90))]
    done = "`Trainer.fit` stopped: `max_steps=10` reached."
    log = tmp_path / "train.log"
    log.write_text("\n".join([*head, done, bar.format(pct=100, n=10)]) + "\n")
    assert diagnose(log).verdict == "no-failure-found"
    log.write_text("\n".join([*head, done, bar.format(pct=95, n=9)]) + "\n")
    assert diagnose(log).verdict == "stopped"


def test_a_job_of_many_small_files_still_shows_where_each_rank_stopped(
    tmp_path, monkeypatch
) -> None:
    """Rank logs rotated into many small files: before attribution fewer rows
    of each file are kept (the first and last of each run), so a rank's last
    progress line, in its last file, still says it stopped first.  (The
    budget is lowered so that these 600 files keep 2 rows at each end.)"""
    from denpex_fast import diagnose
    from denpex_fast.analysis import diagnosis

    monkeypatch.setattr(diagnosis, "PRE_ATTRIBUTION_CONTEXT_BUDGET", 600)

    def stamp(s: int) -> str:
        return f"2024-05-02 {8 + s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d},000"

    for rank, last in ((0, 600), (1, 450)):
        d = tmp_path / f"rank{rank}"
        d.mkdir()
        for part in range(301):
            lines = [
                f"{stamp(step * 12 + k)} INFO train.py:212 rank={rank} step={step} micro={k} loss=0.5"
                for step in range(part * 2, min(part * 2 + 2, last + 1))
                for k in range(12)
            ]
            if lines:
                (d / f"part{part:04d}.log").write_text("\n".join(lines) + "\n")
    with open(tmp_path / "rank0" / "part0300.log", "a") as f:
        f.write(
            f"{stamp(7300)} ERROR train.py:99 [rank0]:[E502] [Rank 0] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            "Timeout(ms)=600000) ran for 600000 milliseconds before timing out.\n"
        )
    d = diagnose(tmp_path)
    assert d.suspect_rank == 1


def _srun_traceback(rank: int, exception: str, torn: bool = False) -> list[str]:
    """A torchrun worker's traceback under ``srun -l`` (task ``rank``)."""
    p = f"{rank}: [rank{rank}]:"
    frames = [
        f'{p}   File "/work/pretrain_gpt.py", line 242, in forward_step',
        f"{p}     tokens, labels = get_batch(data_iterator)",
        f'{p}   File "/work/megatron/training/utils.py", line 537, in get_batch_on_this_tp_rank',
        f"{p}     data = next(data_iterator)",
    ]
    if torn:  # another write cut the second frame line in two
        frames[1:2] = [f"{p}     tokens, labels = get_ba", f"{rank}: tch(data_iterator)"]
    return [f"{p} Traceback (most recent call last):", *frames, f"{p} {exception}"]


def test_a_batch_scripts_error_before_its_job_started_is_not_the_jobs_failure(tmp_path) -> None:
    """``cat: nemo: ...`` and ``python: command not found`` from the script
    itself (no task label), then the tasks srun started fail in their own
    code: the tasks' error is the failure."""
    preamble = [
        "cat: nemo: No such file or directory",
        "/var/spool/slurmd/job2339779/slurm_script: line 366: python: command not found",
    ]
    started = [
        f"{r}: Setting OMP_NUM_THREADS environment variable for each process" for r in (0, 2)
    ]
    failed = _srun_traceback(
        2, "TypeError: unsupported operand type(s) for //: 'int' and 'NoneType'"
    )
    d = _diagnosed(tmp_path, "job.err", [*preamble, *started, *failed])
    assert d.initiating is not None
    assert (d.initiating.line, d.initiating.rank) == (10, 2), d.initiating
    # the same script line before a launch that never came together stays the lead
    rdzv = [
        "2: torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.",
    ]
    d = _diagnosed(tmp_path, "job.err", [*preamble, *started, *rdzv])
    assert d.initiating is not None and d.initiating.line <= 2, d.initiating


def test_a_traceback_whose_frame_line_was_cut_by_another_write_ends_at_its_exception(
    tmp_path,
) -> None:
    torn = _srun_traceback(36, "StopIteration", torn=True)
    d = _diagnosed(tmp_path, "job.err", ["0: training ...", *torn])
    assert d.initiating is not None
    assert (d.initiating.text, d.initiating.rank) == ("36: [rank36]: StopIteration", 36)


def test_a_cxx_terminate_is_named_by_its_what_line(tmp_path) -> None:
    """libstdc++ prints the exception's type, then its message on the
    ``what():`` line: the message says what failed, and names the incident."""
    lines = [
        "Tue Jun  9 20:10:40 2020[1]<stderr>:terminate called after throwing an instance of "
        "'gloo::IoException'",
        "Tue Jun  9 20:10:40 2020[1]<stderr>:  what():  [horovod/common/gloo/http_store.cc:53] "
        "Wait for key(s): 0 gave up",
        "Tue Jun  9 20:10:40 2020[1]<stderr>:*** Received signal 6 ***",
    ]
    d = _diagnosed(tmp_path, "trial.log", lines)
    assert d.initiating is not None
    assert (d.initiating.line, d.initiating.rank) == (2, 1), d.initiating


def test_an_unknown_error_line_that_says_it_skipped_past_itself_is_no_failure(tmp_path) -> None:
    lines = [
        "[2024-04-02 01:59:21] Failed to download font: IBM Plex Sans, skipping!",
        "[2024-04-02 01:59:22] step=1 loss=4.1 dt=0.2",
        "[2024-04-02 01:59:23] Error: quota exceeded writing /scratch/ckpt/step1",
    ]
    d = _diagnosed(tmp_path, "train.log", lines)
    assert d.initiating is not None and d.initiating.line == 3, d.initiating
    from denpex_fast.analysis.levels import goes_on

    assert goes_on("Could not set the permissions. Continuing without setting permissions.")
    assert not goes_on("RuntimeError: skipping is not supported for this sampler")
    assert goes_on(
        "[2026-01-19 20:17:41 DP4 TP4 EP4] Ignore import error when loading "
        "sglang.srt.models.interns1: unexpected indent (qwen3.py, line 197)"
    )
    assert not goes_on("RuntimeError: cannot ignore error state of the communicator")


def test_unknown_error_lines_a_job_trained_past_and_then_ended_in_order_are_outlived(
    tmp_path,
) -> None:
    steps = [f"[2024-04-02 01:59:{10 + n}] step={n} loss=3.{n} dt=0.2" for n in range(1, 6)]
    error = "[2024-04-02 01:59:12] Error: could not reach the metrics server at 10.0.0.7"
    end = "wandb: View run stilted-puddle-1 at: https://wandb.ai/team/proj/runs/lrcby4bd"
    lines = [steps[0], error, *steps[1:], end]
    d = _diagnosed(tmp_path, "train.log", lines)
    assert d.verdict == "no-failure-found", (d.verdict, d.initiating)
    assert any("outlived" in r for r in d.reasons), d.reasons
    # killed from outside instead: no orderly end, the line stays the lead
    d = _diagnosed(tmp_path, "train.log", lines[:-1])
    assert d.verdict != "no-failure-found" and d.initiating is not None
    assert d.initiating.line == 2


def _megatron_steps(first: int, last: int, second: int = 10) -> list[str]:
    """Megatron's iteration lines of rank 3, after a longer line (lines all
    as long as the longest would read as a terminal's hard wraps in a paste)."""
    return [
        "0: > building GPT model with tensor-parallel size 2 and pipeline-parallel size 1 "
        "(number of parameters on (tensor, pipeline) model parallel rank (0, 0): 632238080)"
    ] + [
        f"3:  [2026-06-18 16:59:{second + n:02d}.781854] iteration {n:8d}/     200 | "
        "consumed samples: 4 | lm loss: 1.0E+01 |"
        for n in range(first, last + 1)
    ]


def test_a_warning_the_job_trained_past_before_a_planned_exit_is_no_failure(tmp_path) -> None:
    """Megatron starts from random weights when --load holds no checkpoint
    (a warning), trains, and stops by its exit rule: the job did not fail."""
    warning = "0: WARNING: could not find the metadata file /ckpt/latest_checkpointed_iteration.txt"
    stop = "0: [exiting program at iteration 19] datetime: 2026-06-18 16:59:40.372064 "
    lines = [warning, *_megatron_steps(1, 19), stop]
    d = _diagnosed(tmp_path, "job.out", lines)
    assert d.verdict == "no-failure-found", (d.verdict, d.initiating)
    # the same run cut off before its exit line is no orderly end
    d = _diagnosed(tmp_path, "job.out", lines[:-1])
    assert d.verdict != "no-failure-found"


def test_a_store_lost_after_the_processes_exited_in_order_is_teardown(tmp_path) -> None:
    """Rank 0 hosts the TCPStore and exits first; its peers' background
    threads then log that the store went away.  A watchdog's timeout after
    the end is a teardown that hung, and stays a failure."""
    exit_line = (
        "1: [rank1]:[W618 16:59:34.745005731 ProcessGroupNCCL.cpp:1569] Warning: WARNING: "
        "destroy_process_group() was not called before program exit, which can leak resources."
    )
    lost = (
        "1: [rank1]:[W618 16:59:36.271523911 TCPStore.cpp:125] [c10d] recvValue failed on "
        "SocketImpl(fd=69, addr=[nid007143]:55414, remote=[nid007143]:8888): Failed to recv, "
        "got 0 bytes. Connection was likely closed."
    )
    poll = (
        "1: [rank1]:[W618 16:59:36.274024701 ProcessGroupNCCL.cpp:1815] [PG ID 0 PG GUID "
        '0(default_pg) Rank 1] Failed to check the "should dump" flag on TCPStore, (maybe '
        "TCPStore server has shut down too early), with error: failed to recv, got 0 bytes"
    )
    lines = [*_megatron_steps(1, 5), exit_line, lost, poll]
    d = _diagnosed(tmp_path, "job.err", lines)
    assert d.verdict == "no-failure-found", (d.verdict, d.initiating)
    assert any("teardown" in r for r in d.reasons), d.reasons
    hung = (
        "1: [rank1]:[E618 17:09:36.386001002 ProcessGroupNCCL.cpp:694] [Rank 1] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=812, OpType=BARRIER, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600046 milliseconds before timing out."
    )
    d = _diagnosed(tmp_path, "job.err", [*lines, hung])
    assert d.verdict != "no-failure-found"


def test_pytorchs_c10_logger_prefix_carries_its_level() -> None:
    from denpex_fast.analysis.levels import narrated, warned

    assert warned("2: [rank2]:[W618 16:59:36.273899873 ProcessGroupNCCL.cpp:1815] Failed")
    assert narrated("[I1016 12:00:00.123456 ProcessGroupNCCL.cpp:895] [PG 0 Rank 0] init")
    assert not warned("[E618 16:59:36.273899873 ProcessGroupNCCL.cpp:1815] Failed")


def test_native_lines_untagged_among_python_tagged_workers_are_no_script_preamble(
    tmp_path,
) -> None:
    """vLLM tags its workers' Python output ``(Worker pid=N)``; NCCL writes
    its own lines untagged from C.  Its WARN before the workers' exceptions is
    the process's first print, not a batch script's line."""
    lines = [
        "[2026-05-22 10:26:17] d4fde3314201:13737:13737 [4] misc/shmutils.cc:93 NCCL WARN "
        "Call to open failed: No such file or directory",
        *[
            f"(Worker pid=13740) INFO 05-22 10:26:17 [parallel_state.py:{n}] rank 7 in world "
            "size 8 is assigned as DP rank 0, PP rank 0, TP rank 7"
            for n in range(12)
        ],
        "(Worker pid=13740) ERROR 05-22 10:26:17 [multiproc_executor.py:870] RuntimeError: "
        "NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
    ]
    d = _diagnosed(tmp_path, "vllm.log", lines)
    assert d.initiating is not None and d.initiating.line == 1, d.initiating


def test_the_nccl_warn_before_its_threads_error_return_trace_names_the_chain(tmp_path) -> None:
    """A thread's WARNs it went past (reading /sys with a fallback) come
    before the WARN of the call that failed, whose error code the thread then
    returns up its stack (``-> 3``)."""
    t = "node-0:188802:188815 [2]"
    lines = [
        f"{t} /src/misc/alt_rsmi.cc:694 NCCL WARN Could not read node # 5",
        "",
        f"{t} /src/misc/alt_rsmi.cc:653 NCCL WARN Could not read node # 5",
        f"{t} NCCL INFO initialized internal alternative rsmi functionality",
        f"{t} NCCL INFO Topology detection : could not read /sys/devices/pci0002:00/max_link_speed",
        "",
        f"{t} /src/graph/paths.cc:82 NCCL WARN Failed to find reverse path from remNode 0/200000 "
        "nlinks 3 to node 0/700000",
        f"{t} NCCL INFO /src/graph/paths.cc:608 -> 3",
        f"{t} NCCL INFO /src/init.cc:1248 -> 3",
    ]
    d = _diagnosed(tmp_path, "all_reduce_perf.log", lines)
    assert d.initiating is not None and d.initiating.line == 7, d.initiating


def test_nccl_tests_rank_table_names_the_rank_of_a_device_of_one_process(tmp_path) -> None:
    """nccl-tests with -g 4: one process, four GPUs.  NCCL's line names the
    pid and the device; the table the test printed first gives the rank.  A
    thread's WARN chain with no error-return trace after it is one the thread
    went past; the chain that returns an error is the failure."""
    table = [
        f"#  Rank  {d} Group  0 Pid 188802 on     node-0 device  {d} [000{d}:00:00] AMD Instinct MI300X VF"
        for d in range(4)
    ]
    probe = [
        f"node-0:188802:{188813 + d} [{d}] /src/misc/alt_rsmi.cc:694 NCCL WARN Could not read node # 5"
        for d in (2, 0, 0, 0, 0, 0)
    ]
    failing = [
        "node-0:188802:188815 [2] /src/graph/paths.cc:82 NCCL WARN Failed to find reverse path "
        "from remNode 0/200000 nlinks 3 to node 0/700000",
        "node-0:188802:188815 [2] NCCL INFO /src/graph/paths.cc:608 -> 3",
    ]
    init = (
        "node-0:188802:188813 [0] NCCL INFO comm 0x32ca780 rank 0 nranks 4 cudaDev 0 busId "
        "200000 commId 0xa140d81a47b5f3aa - Init START"
    )
    d = _diagnosed(tmp_path, "all_reduce_perf.log", [*table, init, *probe, "", *failing])
    assert d.initiating is not None
    assert (d.initiating.line, d.initiating.rank) == (13, 2), d.initiating


def test_open_mpis_missing_libcuda_banner_is_a_fallback_not_the_failure(tmp_path) -> None:
    banner = [
        "--------------------------------------------------------------------------",
        "The library attempted to open the following supporting CUDA libraries,",
        "but each of them failed.  CUDA-aware support is disabled.",
        "libcuda.so.1: cannot open shared object file: No such file or directory",
        "libcuda.dylib: cannot open shared object file: No such file or directory",
        "/usr/lib64/libcuda.so.1: cannot open shared object file: No such file or directory",
        "--------------------------------------------------------------------------",
    ]
    failure = [
        "Traceback (most recent call last):",
        '  File "train.py", line 27, in <module>',
        "    ax.init(",
        "ZeroDivisionError: integer division or modulo by zero",
    ]
    d = _diagnosed(tmp_path, "slurm-4741176.out", [*banner, *failure])
    assert d.initiating is not None and d.initiating.line == 11, d.initiating


def test_a_non_finite_loss_the_program_went_on_with_stays_its_anomaly(tmp_path) -> None:
    # the words say it went on; the numerics entry keeps the line all the same
    d = _diagnosed(
        tmp_path, "train.log", ["step 14: loss 2.31", "step 15: loss is nan, continuing"]
    )
    assert d.initiating is not None and d.initiating.line == 2, d.initiating


def _guarded_import_crash(warned: str) -> list[str]:
    """A library that caught an ImportError, warned and went on, then failed
    on the name it could not import."""
    return [
        "[2025-08-21 17:42:31,780] [INFO] [real_accelerator.py:260:get_accelerator] Setting "
        "ds_accelerator to cuda (auto detect)",
        f"[WARNING] ZenFlow disabled: torch internal optimizer symbols could not be imported: "
        f"cannot import name '{warned}' from 'torch.optim.optimizer'",
        "Traceback (most recent call last):",
        '  File "/usr/local/bin/train", line 5, in <module>',
        "    import deepspeed as ds",
        '  File "/usr/lib/python3/site-packages/deepspeed/ops/adam/zenflow_torch_adam.py", '
        "line 685, in <module>",
        "    @_disable_dynamo_if_unsupported(single_tensor_fn=_single_tensor_adamw)",
        "NameError: name '_disable_dynamo_if_unsupported' is not defined",
    ]


def test_a_warning_quoting_the_name_an_exception_misses_heads_it(tmp_path) -> None:
    """The exception says a name is missing; the warning before it, quoting
    that name, is where the program noticed and went on without it."""
    d = _diagnosed(tmp_path, "console.log", _guarded_import_crash("_disable_dynamo_if_unsupported"))
    assert d.initiating is not None and d.initiating.line == 2, d.initiating


def test_a_warning_quoting_another_name_leaves_the_exception_first(tmp_path) -> None:
    d = _diagnosed(tmp_path, "console.log", _guarded_import_crash("_use_grad_for_differentiable"))
    assert d.initiating is not None and d.initiating.line == 8, d.initiating


def _logged_record(prefix: str) -> list[str]:
    """``logger.exception("EngineCore failed to start.")`` of a logger that
    writes ``prefix`` before every line of the record."""
    return [
        "INFO 07-31 19:35:33 [model_runner.py:1745] Starting to load model /models/qwen3",
        f"{prefix}EngineCore failed to start.",
        f"{prefix}Traceback (most recent call last):",
        f'{prefix}  File "/vllm/model_executor/model_loader/default_loader.py", line 198, in load',
        f"{prefix}    weights_iterator = safetensors_weights_iterator(",
        f"{prefix}TypeError: _safetensors_weights_iterator() takes 1 positional argument but "
        "2 were given",
    ]


def test_a_logged_records_exception_line_names_it_behind_the_loggers_prefix(tmp_path) -> None:
    """vLLM writes its prefix on every line of a record: the message, the
    traceback's header, the frames and the exception line, which says what
    failed."""
    d = _diagnosed(tmp_path, "serve.log", _logged_record("ERROR 07-31 19:35:35 [core.py:586] "))
    assert d.initiating is not None and d.initiating.line == 6, d.initiating
    assert d.initiating.text.startswith("ERROR 07-31 19:35:35 [core.py:586] TypeError: ")


def test_an_error_line_before_a_traceback_of_its_own_stays_the_cause(tmp_path) -> None:
    """Without a shared prefix the line before a traceback is a fault of its
    own that the program then died of (ssh could not resolve the host the
    launcher asked it for)."""
    lines = [
        "ssh: Could not resolve hostname node-0: Name or service not known",
        "Traceback (most recent call last):",
        '  File "/usr/local/bin/deepspeed", line 6, in <module>',
        "    main()",
        "subprocess.CalledProcessError: Command '['ssh node-0 hostname -I']' returned non-zero "
        "exit status 255.",
    ]
    d = _diagnosed(tmp_path, "log.txt", lines)
    assert d.initiating is not None and d.initiating.line == 1, d.initiating


def test_torch_distributed_python_loggers_glog_prefix_carries_its_level() -> None:
    """torch.distributed's Python loggers write glog's form with the file's
    whole path, and torchrun's ``[rank0]:`` tag goes before it."""
    from denpex_fast.analysis.levels import narrated, warned

    path = "/home/u/pytorch/torch/utils/_pytree.py:630]"
    assert warned(f"[rank0]:W0519 14:43:05.494000 2754387 {path} <enum> is deprecated")
    assert warned(f"W0519 14:42:57.579000 2747532 {path} Setting OMP_NUM_THREADS")
    assert narrated(f"[rank0]:I0519 14:43:05.494000 2754387 {path} error in probe")
    assert not warned(f"[rank0]:E0519 14:43:05.494000 2754387 {path} failed")


def _torchtitan_start(then: list[str]) -> list[str]:
    """torchrun's rank-0 stream: a deprecation warning that says 'error',
    NCCL's banner, then ``then``."""
    return [
        "W0520 05:30:35.000000 2015743 /pt/torch/distributed/run.py:874] Setting OMP_NUM_THREADS",
        "[rank0]:W0520 05:30:40.100000 2019121 /pt/torch/utils/_pytree.py:630] <enum 'K'> is an "
        "Enum subclass; register_constant() on it is deprecated and will be an error in a "
        "future release.",
        "[rank0]:[titan] 2026-05-20 05:30:41,968 - root - INFO - [GC] Initial GC collection",
        "[rank0]:NCCL version 2.29.7+cuda13.1",
        *then,
    ]


def test_a_warning_that_heads_an_incident_yields_and_the_rest_is_named_anew(tmp_path) -> None:
    """A deprecation warning a few lines before NCCL's WARN of the same rank
    joins its incident; the warning yields to the later failure and the
    WARN, which the invalid-usage error's Last error repeats, names it."""
    lines = _torchtitan_start(
        [
            "[rank0]:[2026-05-20 05:30:42] devgpu020:2019121:2019121 [0] plugin/net.cc:326 NCCL "
            "WARN Failed to initialize any NET plugin",
            "[rank0]:[rank0]: Traceback (most recent call last):",
            *[f'[rank0]:[rank0]:   File "/t/train.py", line {n}, in main' for n in range(30)],
            "[rank0]:[rank0]: torch.distributed.DistBackendError: NCCL error in: "
            "/pt/NCCLUtils.cpp:93, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL "
            "version 2.29.7",
            "[rank0]:[rank0]: ncclInvalidUsage: This usually reflects invalid usage of NCCL library.",
            "[rank0]:[rank0]: Last error:",
            "[rank0]:[rank0]: Failed to initialize any NET plugin",
        ]
    )
    d = _diagnosed(tmp_path, "run.log", lines)
    assert d.initiating is not None and d.initiating.line == 5, d.initiating


def test_a_scripts_shell_error_after_the_ranks_failed_is_not_their_cause(tmp_path) -> None:
    """The launcher returned after both ranks' watchdogs fired; the script
    then ran a line its broken continuation left behind."""
    watchdog = (
        "[rank{r}]:[E1218 20:27:21.4264155{r} ProcessGroupNCCL.cpp:629] [Rank {r}] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=131072000, "
        "NumelOut=131072000, Timeout(ms)=600000) ran for 600081 milliseconds before timing out."
    )
    lines = [
        "[2025-12-18 20:17:01,000] [INFO] [launch.py:256:main] process 748089 spawned",
        "Time to load cpu_adam op: 22.258127450942993 seconds",
        watchdog.format(r=0),
        watchdog.format(r=1),
        "[2025-12-18 20:27:22,783] [INFO] [launch.py:319:sigkill_handler] Killing subprocess 748089",
        "+ --disable_tqdm True",
        "scripts_llama/order_1.sh: line 45: --disable_tqdm: command not found",
    ]
    d = _diagnosed(tmp_path, "train.log", lines)
    assert d.initiating is not None and d.initiating.line == 3, d.initiating
    # with no launched process's failure before it, the script's error is the failure
    d = _diagnosed(tmp_path, "train.log", [lines[0], lines[1], *lines[5:]])
    assert d.initiating is not None and d.initiating.line == 4, d.initiating


def _aborted_at_exit(abort: bool) -> list[str]:
    """A Trainer's final metrics, then NCCL's socket return traces as the
    process aborts its communicators on the way out."""
    t = "esm2-worker-0:161:315 [0]"
    return [
        "***** eval metrics *****",
        "  eval_loss               =     2.6309",
        "  perplexity              =    13.8861",
        f"{t} NCCL INFO misc/socket.cc:64 -> 3",
        f"{t} NCCL INFO misc/socket.cc:80 -> 3",
        f"{t} NCCL INFO misc/socket.cc:828 -> 3",
        "esm2-worker-0:161:286 [0] NCCL INFO misc/socket.cc:880 -> 3",
        *(
            [f"{t} NCCL INFO comm 0x2e177b70 rank 0 nranks 2 cudaDev 0 busId 1e0 - Abort COMPLETE"]
            if abort
            else []
        ),
    ]


def test_nccl_return_traces_ended_by_the_processs_own_abort_are_teardown(tmp_path) -> None:
    d = _diagnosed(tmp_path, "worker-0.log", _aborted_at_exit(abort=True))
    assert d.initiating is None or "socket.cc" not in d.initiating.text, d.initiating
    d = _diagnosed(tmp_path, "worker-0.log", _aborted_at_exit(abort=False))
    assert d.initiating is not None and "socket.cc:64" in d.initiating.text, d.initiating


def _served(after: int) -> list[str]:
    """A vLLM server answers one request over the context length with an
    error record and 400, then answers ``after`` more requests 200 OK."""
    rec = "ERROR 07-12 09:46:12 [serving_chat.py:222] "
    ok = 'INFO:     127.0.0.1:{p} - "POST /v1/chat/completions HTTP/1.1" 200 OK'
    return [
        "INFO:     Application startup complete.",
        ok.format(p=46300),
        f"{rec}Error in preprocessing prompt inputs",
        f"{rec}Traceback (most recent call last):",
        f'{rec}  File "/vllm/entrypoints/openai/serving_engine.py", line 569, in _validate_input',
        f"{rec}    raise ValueError(",
        f"{rec}ValueError: This model's maximum context length is 8192 tokens. However, you "
        "requested 8205 tokens.",
        'INFO:     127.0.0.1:46346 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request',
        *(ok.format(p=46400 + k) for k in range(after)),
    ]


def test_a_request_error_the_server_served_past_is_not_its_failure(tmp_path) -> None:
    d = _diagnosed(tmp_path, "vllm_server.log", _served(after=4))
    assert d.initiating is None or d.initiating.line < 3, d.initiating
    d = _diagnosed(tmp_path, "vllm_server.log", _served(after=0))
    assert d.initiating is not None and d.initiating.line == 7, d.initiating


def _stopped_server(engine_error: bool) -> list[str]:
    """A vLLM 0.7 server that started, served, then was stopped by SIGTERM
    (with ``engine_error``: its engine died first)."""
    eng = "ERROR 04-18 15:05:59 engine.py:389] "
    died = [
        "ERROR 04-18 15:05:58 engine.py:140] RuntimeError: CUDA error: an illegal memory access"
    ]
    return [
        "INFO:     Application startup complete.",
        'INFO:     127.0.0.1:41872 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        *(died if engine_error else []),
        "INFO 04-18 15:05:59 launcher.py:59] Shutting down FastAPI HTTP server.",
        f"{eng}MQLLMEngine terminated",
        f"{eng}Traceback (most recent call last):",
        f'{eng}  File "/vllm/engine/multiprocessing/engine.py", line 374, in signal_handler',
        f'{eng}    raise KeyboardInterrupt("MQLLMEngine terminated")',
        f"{eng}KeyboardInterrupt: MQLLMEngine terminated",
        "ERROR 04-18 15:06:00 multiproc_worker_utils.py:124] Worker VllmWorkerProcess pid "
        "1646375 died, exit code: -15",
        "INFO:     Shutting down",
    ]


def test_what_a_started_server_prints_after_its_orderly_shutdown_is_teardown(tmp_path) -> None:
    d = _diagnosed(tmp_path, "vllm.log", _stopped_server(engine_error=False))
    assert d.initiating is None, d.initiating
    d = _diagnosed(tmp_path, "vllm.log", _stopped_server(engine_error=True))
    assert d.initiating is not None and d.initiating.line == 3, d.initiating
    # a server that never finished starting has no orderly shutdown to make
    d = _diagnosed(tmp_path, "vllm.log", _stopped_server(engine_error=False)[2:])
    assert d.initiating is not None and d.initiating.line > 1, d.initiating


def _mlperf_run(then: list[str], ended: bool = True) -> list[str]:
    """An MLPerf run that logs run_stop success, its script's end (``ended``), then ``then``."""
    stop = (
        ':::MLLOG {"namespace": "", "time_ms": 1634723674548, "event_type": "INTERVAL_END", '
        '"key": "run_stop", "value": null, "metadata": {"file": "logger.py", "status": "success"}}'
    )
    return [
        "STARTING TIMING RUN AT 2021-10-20 09:11:49 AM",
        "epoch 1 step=10 loss 3.5",
        "epoch 2 step=20 loss 2.9",
        stop,
        "+ set +x",
        *(["ENDING TIMING RUN AT 2021-10-20 12:18:25 PM"] if ended else []),
        *then,
    ]


def test_a_cancel_after_the_run_script_ended_is_not_the_runs_failure(tmp_path) -> None:
    cancel = (
        "slurmstepd: error: *** STEP 8437.6 ON hpc-pg0-12 CANCELLED AT 2021-10-20T12:18:26 "
        "DUE TO TIME LIMIT ***"
    )
    d = _diagnosed(tmp_path, "result_1.txt", _mlperf_run([cancel]))
    assert d.initiating is None, d.initiating
    # without the script's own end the cancel may have cut what came after the loop
    d = _diagnosed(tmp_path, "result_1.txt", _mlperf_run([cancel], ended=False))
    assert d.initiating is not None and "TIME LIMIT" in d.initiating.text, d.initiating
    # nor when the next run had started before the cancel
    later = _mlperf_run(
        ["STARTING TIMING RUN AT 2021-10-20 12:18:30 PM", "epoch 1 step=10 loss 3.4"]
    )
    d = _diagnosed(tmp_path, "result_1.txt", [*later, cancel])
    assert d.initiating is not None and "TIME LIMIT" in d.initiating.text, d.initiating


def test_a_traceback_of_the_interpreters_exit_after_completion_is_teardown(tmp_path) -> None:
    def finalizer(module: str, func: str) -> list[str]:
        return [
            "Traceback (most recent call last):",
            f'  File "/usr/lib/python3.10/{module}", line 300, in {func}',
            "    finalizer()",
            '  File "/usr/lib/python3.10/multiprocessing/synchronize.py", line 87, in _cleanup',
            "    sem_unlink(name)",
            "FileNotFoundError: [Errno 2] No such file or directory",
        ]

    d = _diagnosed(
        tmp_path,
        "result_1.txt",
        _mlperf_run(finalizer("multiprocessing/util.py", "_run_finalizers")),
    )
    assert d.initiating is None, d.initiating
    d = _diagnosed(
        tmp_path, "result_1.txt", _mlperf_run(finalizer("site-packages/ssd/train.py", "main"))
    )
    assert d.initiating is not None and "FileNotFoundError" in d.initiating.text, d.initiating


def test_a_steps_oom_kill_report_takes_the_task_srun_names(tmp_path) -> None:
    """slurmstepd's report says "some of the step tasks" and carries the label
    of the stream it was written to; srun's account beside it names the task."""

    def job(account: str) -> list[str]:
        return [
            "0: [Rank 0] (after 1 iterations) memory (MB) | allocated: 7063.2 | reserved: 35048.0",
            "2: [Rank 2] (after 1 iterations) memory (MB) | allocated: 7063.2 | reserved: 35048",
            "0: slurmstepd: error: Detected 1 oom_kill event in StepId=17109804.0. Some of the "
            "step tasks have been OOM Killed.",
            account,
            "srun: Terminating StepId=17109804.0",
        ]

    d = _diagnosed(
        tmp_path, "slurm-17109804.out", job("srun: error: nid008576: task 2: Out Of Memory")
    )
    assert d.initiating is not None and d.initiating.line == 3, d.initiating
    assert d.initiating.rank == 2 and d.initiating.host == "nid008576", d.initiating
    d = _diagnosed(
        tmp_path, "slurm-17109804.out", job("srun: error: nid008576: tasks 0-3: Out Of Memory")
    )
    assert d.initiating is not None and d.initiating.rank != 2, d.initiating


def test_the_tail_of_a_torn_debug_line_is_no_failure(tmp_path) -> None:
    """srun -l labels again a line that one of its reads ended inside: the
    tail keeps the error words of a DEBUG probe and loses its level."""
    dbg = "1: [1581715402.2397{k}] [cgpu12:42394:0]           sock.c:32   UCX  DEBUG "
    probe = "ioctl(req=35093, ifr_name={nic}) failed: Cannot assign requested address"
    lines = [
        dbg.format(k=10) + probe.format(nic="ib2"),
        dbg.format(k=27) + probe.format(nic="ib0"),
        dbg.format(k=60) + probe.format(nic="eth1"),
        dbg.format(k=75) + "ioc",
        "1: " + probe.format(nic="eth2")[3:],
        dbg.format(k=81) + probe.format(nic="eth0"),
        "0: [1581715406.914568] [cgpu12:42393:2]    cuda_ipc_md.c:62   UCX  ERROR "
        "cuCtxGetDevice(&cu_device) is failed. ret:invalid device context",
    ]
    d = _diagnosed(tmp_path, "slurm-451863.out", lines)
    assert d.initiating is not None and d.initiating.line == 7, d.initiating
    # a line of its own that merely starts in lower case stays a candidate
    lines[4] = "1: failed to open /data/shard-00017.bin: No such file or directory (errno 2)"
    d = _diagnosed(tmp_path, "slurm-451863.out", lines)
    assert d.initiating is not None and d.initiating.line == 5, d.initiating


def test_rays_cxx_info_lines_and_generations_printed_as_data_are_no_failure(tmp_path) -> None:
    ray = (
        "[2023-12-23 09:14:18,040 {lvl} 281468 281468] global_state_accessor.cc:374: This node "
        "has an IP address of 192.168.251.104, but we cannot find a local Raylet with the same "
        "address. This can happen when you connect to the Ray cluster with a different IP address."
    )
    gen = (
        "Prompt: 'Document this function', Generated text: ' error: function(response) "
        "{ ShowErrorBox(response.message) }'"
    )
    lines = [
        ray.format(lvl="I"),
        gen,
        "ValueError: Total number of hidden layers (80) must be divisible",
    ]
    d = _diagnosed(tmp_path, "vllm_914.err", lines)
    assert d.initiating is not None and d.initiating.line == 3, d.initiating
    # the same words at Ray's ERROR level are a candidate
    lines[0] = ray.format(lvl="E")
    d = _diagnosed(tmp_path, "vllm_914.err", lines)
    assert d.initiating is not None and d.initiating.line == 1, d.initiating


def test_ray_stop_after_the_last_progress_is_the_jobs_own_end(tmp_path) -> None:
    bar = "Processed prompts: {p}%|#####     | {n}/100 [00:{s}<00:10,  1.1s/it]"
    lines = [
        "2023-12-23 09:45:00,000\tINFO worker.py:1489 -- Connecting to existing Ray cluster",
        bar.format(p=40, n=40, s=20),
        bar.format(p=95, n=95, s=51),
        "2023-12-23 09:47:16,389\tINFO scripts.py:1121 -- 1/1 stopped.",
    ]
    d = _diagnosed(tmp_path, "vllm_921.out", lines)
    assert d.verdict == "stopped", d.verdict
    lines.append("2023-12-23 09:47:16,390\tSUCC scripts.py:1166 -- Stopped all 6 Ray processes.")
    d = _diagnosed(tmp_path, "vllm_921.out", lines)
    assert d.verdict == "no-failure-found", d.verdict


def test_a_kernel_assertion_names_the_failure_before_the_launch_error(tmp_path) -> None:
    lines = [
        "[06/24 11:20:40] ppdet.engine INFO: Eval iter: 0",
        "Error: /paddle/paddle/phi/kernels/funcs/gather.cu.h:68 Assertion `index_value >= 0 && "
        "index_value < input_dims[j]` failed. The index is out of bounds, please check whether "
        "the dimensions of index and input meet the requirements.",
        "Traceback (most recent call last):",
        '  File "tools/eval.py", line 12, in <module>',
        "OSError: (External) CUDA error(719), unspecified launch failure.",
    ]
    d = _diagnosed(tmp_path, "workerlog.0", lines)
    assert d.initiating is not None and d.initiating.line == 2, d.initiating
    assert d.initiating.signature == "cuda-kernel-assertion-failed", d.initiating


def test_a_threads_traceback_is_named_by_its_exception_line(tmp_path) -> None:
    """The header over a thread's traceback says which thread; the exception
    line says what failed, even when its message quotes another traceback."""
    lines = [
        "W0820 17:14:53.647742 15390 gpu_resources.cc:149] device: 0, cuDNN Version: 8.2.",
        "Exception in thread Thread-2:",
        "Traceback (most recent call last):",
        '  File "/envs/paddle/lib/python3.8/threading.py", line 932, in _bootstrap_inner',
        "    self.run()",
        '  File "/envs/paddle/lib/python3.8/site-packages/paddle/io/dataloader/worker.py", '
        "line 178, in reraise",
        "    raise self.exc_type(msg)",
        "KeyError: 'DataLoader worker(1) caught KeyError with message:\\nTraceback (most recent "
        "call last):\\n  File \"gt_sampler.py\", line 9, in sample\\nKeyError: \\'Car\\'\\n'",
        "Traceback (most recent call last):",
        '  File "tools/train.py", line 265, in <module>',
        "SystemError: (Fatal) Blocking queue is killed because the data reader raises an exception.",
    ]
    d = _diagnosed(tmp_path, "workerlog.0", lines)
    assert d.initiating is not None and d.initiating.line == 8, d.initiating


def test_nccls_last_error_detail_yields_to_the_warn_it_repeats(tmp_path) -> None:
    out = [
        "INFO 12-26 10:31:00 llm_engine.py:72] Initializing an LLM engine",
        "(RayWorkerVllm pid=57653) hepgpu1:57653:58411 [0] transport.cc:154 NCCL WARN Cuda "
        "failure 'invalid argument'",
    ]
    err = [
        "Traceback (most recent call last):",
        '  File "distributed_c10d.py", line 1597, in send',
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1333, unhandled "
        "cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1",
        "ncclUnhandledCudaError: Call to CUDA function failed.",
        "Last error:",
        "Cuda failure 'invalid argument'",
        "srun: error: hepgpu1: task 0: Exited with exit code 1",
    ]
    d = _diagnosed_files(tmp_path, {"vllm.out": out, "vllm.err": err})
    assert d.initiating is not None and d.initiating.file.endswith("vllm.out"), d.initiating
    assert d.initiating.line == 2, d.initiating


def test_a_message_that_treats_what_it_cannot_read_as_zero_goes_on(tmp_path) -> None:
    lines = [
        "Customize Function has been applied to <class 'paddle.nn.layer.norm.SyncBatchNorm'>",
        "Cannot find suitable count function for <class 'paddle.nn.layer.common.Identity'>. "
        "Treat it as zero FLOPs.",
        "Total Flops: 743414146     Total Params: 12109902",
    ]
    d = _diagnosed(tmp_path, "workerlog.0", lines)
    assert d.initiating is None, d.initiating
    lines[1] = "Cannot find suitable count function for <class 'paddle.nn.layer.common.Identity'>."
    d = _diagnosed(tmp_path, "workerlog.0", lines)
    assert d.initiating is not None and d.initiating.line == 2, d.initiating


def test_a_wrappers_exit_status_0_after_the_last_progress_is_an_orderly_end(tmp_path) -> None:
    lines = [
        '{"rank": 0, "round": 1, "sum": 36.0}',
        '{"rank": 0, "round": 2, "sum": 36.0}',
        "step 3/10 allreduce ok",
    ]
    d = _diagnosed(tmp_path, "hccl8.log", lines)
    assert d.verdict == "stopped", d.verdict
    d = _diagnosed(tmp_path, "hccl8.log", [*lines, "[CED-LOCK] command exited: 0"])
    assert d.verdict == "no-failure-found", d.verdict
    d = _diagnosed(tmp_path, "hccl8.log", [*lines, "[CED-LOCK] command exited: 1"])
    assert d.verdict != "no-failure-found", d.verdict


def test_paddles_report_of_the_launchers_sigterm_is_the_others_teardown(tmp_path) -> None:
    terminated = [
        "I0412 03:46:20.100000   732 init.cc:88] Before Parse: argc is 2",
        "----------------------",
        "FatalError: `Termination signal` is detected by the operating system.",
        '  [TimeInfo: *** Aborted at 1649735189 (unix time) try "date -d @1649735189" if you '
        "are using GNU date ***]",
        "  [SignalInfo: *** SIGTERM (@0x2ca) received by PID 732 (TID 0x7fd2feff4780) from "
        "PID 714 ***]",
    ]
    failed = [
        "I0412 03:46:20.200000   733 init.cc:88] Before Parse: argc is 2",
        "Traceback (most recent call last):",
        '  File "train.py", line 5, in <module>',
        "NotImplementedError: (Unimplemented) Place CUDAPlace(0) is not supported.",
    ]
    d = _diagnosed_files(tmp_path, {"workerlog.0": terminated, "workerlog.1": failed})
    assert d.initiating is not None and d.initiating.file.endswith("workerlog.1"), d.initiating
    assert d.initiating.line == 4, d.initiating


def test_an_error_word_kilobytes_into_a_line_is_no_failure(tmp_path) -> None:
    """vLLM logs each request's prompt at INFO on one line; an error word
    2 KB into it is the prompt's, and the window the scanner keeps of so
    long a line lacks the logger's level."""
    prompt = "INFO 07-13 10:32:39 [logger.py:43] Received request c1: prompt: '" + "x " * 1500
    lines = [
        "INFO:     Application startup complete.",
        prompt + "then the deployment failed to start and'",
        'INFO:     127.0.0.1:60408 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    ]
    d = _diagnosed(tmp_path, "vllm_server.log", lines)
    assert d.initiating is None or d.initiating.line != 2, d.initiating
    short = ["INFO:     Application startup complete.", "the deployment failed to start"]
    d = _diagnosed(tmp_path, "run.log", short)
    assert d.initiating is not None and d.initiating.line == 2, d.initiating


def test_a_record_logged_at_error_level_is_named_by_its_tracebacks_exception(tmp_path) -> None:
    """``logger.exception`` writes the message at ERROR level, then the
    traceback without the logger's prefix: the exception line says what failed."""
    lines = [
        "2024-01-01T07:27:54 - 0 - levanter.data.shard_cache - shard_cache.py:1266 - INFO :: "
        "Loading cache from gs://levanter-data/tokenized/openwebtext/validation",
        "2024-01-01T07:27:55 - 0 - levanter.data.text - text.py:275 - ERROR :: error loading cache",
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.10/site-packages/gcsfs/retry.py", line 103, in validate_response',
        '    raise OSError(f"Forbidden: {path}\\n{msg}")',
        "OSError: Forbidden: b/levanter-data/o/tokenized%2Fopenwebtext%2Fvalidation%2Fcache.json",
    ]
    d = _diagnosed(tmp_path, "worker-0.log", lines)
    assert d.initiating is not None and d.initiating.line == 6, d.initiating


def test_sagemakers_logger_prefix_carries_its_level() -> None:
    from denpex_fast.analysis.levels import narrated, warned

    host = "[2022-03-25 20:30:44.749 image-classification-pvc-worker-0:1"
    assert narrated(f"{host} INFO profiler_config_parser.py:111] Unable to find config")
    assert warned(f"{host} WARNING hook.py:12] the hook failed to register")
    assert not narrated(f"{host} ERROR training.py:40] the step failed")


def test_tensorflow_and_xla_cpp_logger_prefix_carries_its_level() -> None:
    from denpex_fast.analysis.levels import narrated, warned

    at = "2024-03-06 06:26:42.468543:"
    assert warned(f"{at} W external/xla/xla/service/gpu/gpu_compiler.cc:1234] slow compile")
    assert narrated(f"{at} I external/xla/xla/pjrt/pjrt_c_api_client.cc:110] could not load")
    assert not warned(f"{at} E external/xla/xla/stream_executor/cuda/cuda_driver.cc:268] failed")


def _launcher_exit_log(tmp_path: Path, last_local_rank: int, code: int) -> Any:
    """A DeepSpeed launcher's kill of its workers after one exited with
    ``code``; the leftover command is the one of local rank
    ``last_local_rank``, the last process the launcher spawned."""
    return _diagnosed(
        tmp_path,
        "train.log",
        [
            "[2026-06-04 11:29:32,185] [INFO] [utils.py:789:see_memory_usage] CPU Virtual "
            "Memory:  used = 77.89 GB, percent = 12.4%",
            "[2026-06-04 11:29:54,694] [INFO] [launch.py:319:sigkill_handler] Killing subprocess 8894",
            "[2026-06-04 11:29:54,695] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python3', "
            f"'-u', 'src/train.py', '--local_rank={last_local_rank}', '--deepspeed', 'ds.json'] "
            f"exits with return code = {code}",
        ],
    )


def test_a_launcher_that_spawned_one_process_names_its_rank(tmp_path) -> None:
    """The launcher prints the command of the last process it spawned, so its
    ``--local_rank`` names the failed rank only when it is 0: then the node
    ran that one process.  A job whose lines show no other rank is rank 0."""
    d = _launcher_exit_log(tmp_path, 0, -9)
    assert d.initiating is not None and d.initiating.line == 3
    assert d.initiating.rank == 0
    # local rank 3 last: four processes, any of which may have failed
    d = _launcher_exit_log(tmp_path, 3, -9)
    assert d.initiating is not None and d.initiating.line == 3
    assert d.initiating.rank is None


def test_tensorflow_probes_and_registration_noise_are_not_the_failure(tmp_path) -> None:
    """TensorFlow logs an optional library it cannot open at warning level,
    its profiler's missing CUPTI and XLA's duplicate plugin registrations at
    error level, and goes on: a run that ends with its stats is healthy, and a
    later traceback is what failed."""
    healthy = [
        "2020-08-26 21:39:39.568412: W tensorflow/stream_executor/platform/default/"
        "dso_loader.cc:59] Could not load dynamic library 'libcupti.so.10.1'; dlerror: "
        "libcupti.so.10.1: cannot open shared object file: No such file or directory",
        "2020-08-26 21:39:39.568529: E tensorflow/core/profiler/internal/gpu/cupti_tracer.cc:1441]"
        " function cupti_interface_->Subscribe( &subscriber_, (CUpti_CallbackFunc)ApiCallback,"
        " this)failed with error CUPTI could not be loaded or symbol could not be found.",
        "I0826 21:46:01.710956 140540494919424 keras_utils.py:133] TimeHistory: 43.23 seconds, "
        "9475.39 examples/second between steps 500 and 600",
        "I0826 21:46:21.947059 140540494919424 classifier_trainer.py:447] Run stats:",
        "{'accuracy_top_1': 0.2499593049287796, 'eval_loss': 7.271062850952148}",
    ]
    d = _diagnosed(tmp_path, "worker0.log", healthy)
    assert d.verdict == "no-failure-found", d.reasons
    failed = [
        "2024-11-18 00:30:03.593024: E external/local_xla/xla/stream_executor/plugin_registry.cc:91]"
        " Invalid plugin kind specified: FFT",
        "2023-10-09 13:36:23.355516: E tensorflow/compiler/xla/stream_executor/cuda/cuda_dnn.cc:"
        "9342] Unable to register cuDNN factory: Attempting to register factory for plugin cuDNN "
        "when one has already been registered",
        "Traceback (most recent call last):",
        '  File "/opt/venv/lib/python3.10/site-packages/horovod/tensorflow/mpi_ops.py", line 45,'
        " in _load_library",
        "    library = load_library.load_op_library(filename)",
        "tensorflow.python.framework.errors_impl.NotFoundError: libmpi_cray.so.12: cannot open "
        "shared object file: No such file or directory",
    ]
    d = _diagnosed(tmp_path, "session.log", failed)
    assert d.initiating is not None and d.initiating.line == 6, d.initiating


def test_sagemakers_success_report_completes_the_job(tmp_path) -> None:
    """SageMaker's training toolkit reports the job's end in its own words;
    without them, a log that ends after progress has stopped."""
    run = [
        "[1,mpirank:0,algo-1]<stdout>:Epoch 199: 100% 30/30 [00:01<00:00, 20.1it/s, loss=0.412]",
        "[1,mpirank:0,algo-1]<stdout>:        test_acc            0.8610276579856873",
    ]
    end = [
        "2022-08-12 20:58:11,621 sagemaker-training-toolkit INFO     Done waiting for a return "
        "code. Received 0 from exiting process.",
        "2022-08-12 20:58:11,622 sagemaker-training-toolkit INFO     Reporting training SUCCESS",
        "2022-08-12 20:58:43 Completed - Training job completed",
    ]
    assert _diagnosed(tmp_path, "job.log", run).verdict == "stopped"
    assert _diagnosed(tmp_path, "job.log", run + end).verdict == "no-failure-found"


def test_launch_time_banners_that_go_on_are_not_the_failure(tmp_path) -> None:
    """PMIx's banner that it found no compression library ('We will
    continue') and DeepSpeed's df probe of a Triton cache directory that does
    not exist yet are printed at start-up by healthy jobs."""
    lines = [
        "[node-0]: PMIx was unable to find a usable compression library",
        "[node-0]: on the system. We will therefore be unable to compress",
        "[node-0]: continue, but strongly recommend installing zlib or",
        "df: /home/mpiuser/.triton/autotune: No such file or directory",
        "[node-0]: [2025-03-22 04:20:03,344] [INFO] [real_accelerator.py:222:get_accelerator] "
        "Setting ds_accelerator to cuda (auto detect)",
    ]
    d = _diagnosed(tmp_path, "launcher.log", lines)
    assert d.initiating is None and d.verdict in ("no-failure-found", "stopped"), d.reasons


def test_the_stores_wait_for_clients_is_rank_0s_even_when_wrapped(tmp_path) -> None:
    """Only the process hosting the TCPStore (rank 0 under env:// and tcp://
    initialisation) waits for the others to join; a paste can wrap its
    message before the count."""
    d = _diagnosed(
        tmp_path,
        "slurm-268815.out",
        [
            "torch.distributed.DistStoreError: Timed out after 3601 seconds waiting for clients. ",
            "1/16 clients joined.",
        ],
    )
    assert d.initiating is not None
    assert (d.initiating.signature, d.initiating.line) == ("torch-store-clients-join-timeout", 1)
    assert d.initiating.rank == 0


def test_an_error_below_nccls_transport_warning_is_a_record_of_its_own() -> None:
    """An NCCL WARN (NCCL's ``host:pid:tid`` prefix) and a later line of the
    same rank that does not speak of NCCL are two records: the warning that
    NCCL fell back to another transport does not swallow the out-of-memory
    error printed a few lines below it.  The exception that reports NCCL's
    failure continues its record."""
    from denpex_fast.analysis.incidents import _same_thread

    warn = (
        "[1,mpirank:14,algo-2]<stdout>:algo-2:78:78 [6] find_ofi_provider:543 NCCL WARN NET/OFI "
        "Couldn't find any optimal provider"
    )
    oom = (
        "[1,mpirank:14,algo-2]<stdout>:[2022-04-21 09:13:02.565: C smdistributed/modelparallel/"
        "torch/worker.py:108] [14] Hit an exception for 0/0 on thread 0: CUDA out of memory."
    )
    assert not _same_thread(warn, oom)
    assert _same_thread(
        "node1:2411:2466 [3] NCCL WARN socketStartConnect: Connect to 10.0.0.2<40411> failed",
        "[rank3]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970",
    )


def test_a_run_that_reached_its_configured_steps_ended_itself(tmp_path) -> None:
    """A training loop that prints only 'completed step: N' ended when N
    reached the steps its configuration states (counting from 0); short of
    them, its log stopped."""

    def run(last: int) -> list[str]:
        return ["Config param steps: 30"] + [
            f"completed step: {s}, seconds: 4.301, TFLOP/s/device: 240.214, loss: 1.857"
            for s in range(last + 1)
        ]

    assert _diagnosed(tmp_path, "maxtext.log", run(29)).verdict == "no-failure-found"
    assert _diagnosed(tmp_path, "maxtext.log", run(12)).verdict == "stopped"


def test_the_trainers_train_metrics_block_completes_the_job(tmp_path) -> None:
    """Hugging Face's Trainer (and the scripts built on it) prints its train
    metrics block once training has ended; an eval block alone is no end."""
    steps = [
        f"{{'loss': 1.4, 'grad_norm': 0.9, 'learning_rate': 1e-05, 'epoch': {e}.0}}" for e in (1, 2)
    ]
    block = ["  train_runtime            = 0:09:16.03", "  train_loss               =     1.3686"]
    done = _diagnosed(tmp_path, "train.log", steps + ["***** train metrics *****", *block])
    assert done.verdict == "no-failure-found", done.reasons
    cut = _diagnosed(tmp_path, "train.log", steps + ["***** eval metrics *****", *block[1:]])
    assert cut.verdict == "stopped"


def test_a_summary_after_the_completion_line_is_not_progress(tmp_path) -> None:
    """Ray prints the run's final Result after it ended, restating the last
    step; a loop that went on past a 'done' prints step after step."""
    end = [
        "(RayTrainWorker pid=66181) `Trainer.fit` stopped: `max_epochs=1` reached.",
        "2023-08-30 11:51:22,253\tINFO tune.py:1142 -- Total run time: 2877.24 seconds "
        "(2877.14 seconds for the tuning loop).",
        "Result(",
        "  metrics={'train_loss': 0.176025390625, 'epoch': 0, 'step': 135},",
        ")",
    ]
    assert _diagnosed(tmp_path, "fit.log", end).verdict == "no-failure-found"
    went_on = end + [f"(RayTrainWorker pid=66181) step={s} loss=0.17" for s in (136, 137)]
    assert _diagnosed(tmp_path, "fit.log", went_on).verdict == "stopped"


def test_a_finished_banner_that_ends_the_log_completes_the_job(tmp_path) -> None:
    """A program's own 'Finished Running' framed as a banner, as its file's
    last word after its progress, ends the job."""
    run = [f"INFO:root:step={s} Total time taken = 3384.4 ms" for s in range(1, 4)]
    done = _diagnosed(tmp_path, "rank0.log", run + ["INFO:root:==== Finished Running ===="])
    assert done.verdict == "no-failure-found", done.reasons
    assert _diagnosed(tmp_path, "rank0.log", run).verdict == "stopped"


_NINJA_JOB = [
    "[2026-06-04 11:26:19,655] [INFO] [partition_parameters.py:348:__exit__] finished initializing model",
    "[rank0]: Traceback (most recent call last):",
    '[rank0]:   File "/opt/conda/lib/python3.10/site-packages/torch/utils/cpp_extension.py", line 2101, in verify_ninja_availability',
    '[rank0]:     raise RuntimeError("Ninja is required to load C++ extensions")',
    "[rank0]: RuntimeError: Ninja is required to load C++ extensions",
    "Exception ignored in: <function DeepSpeedCPUAdam.__del__ at 0x7f3ea401b910>",
    "Traceback (most recent call last):",
    '  File "/opt/conda/lib/python3.10/site-packages/deepspeed/ops/adam/cpu_adam.py", line 102, in __del__',
    "    self.ds_opt_adam.destroy_adam(self.opt_id)",
    "AttributeError: 'DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'",
    "[rank0]:[W604 11:26:33.322437609 ProcessGroupNCCL.cpp:1496] Warning: WARNING: destroy_process_group() was not called before program exit, which can leak resources.",
]


@pytest.mark.parametrize("collector", ["", "cri", "compose"])
def test_a_collectors_prefix_does_not_join_an_error_to_the_ignored_one_after_it(
    tmp_path: Path, collector: str
) -> None:
    # rank 0's exception and the destructor's ignored one after it are two
    # records because only the first carries the [rank0]: tag; behind a
    # collector's prefix on every line they were read as one, named by the
    # ignored exception and dropped with it, and the job was called healthy
    def dress(k: int, line: str) -> str:
        if collector == "cri":
            return f"2026-06-04T11:26:{20 + k:02d}.000000000Z stderr F {line}"
        if collector == "compose":
            return f"trainer-1  | {line}"
        return line

    (tmp_path / "train.log").write_text(
        "".join(dress(k, line) + "\n" for k, line in enumerate(_NINJA_JOB)), encoding="utf-8"
    )
    d = dx.diagnose(str(tmp_path))
    assert d.verdict != "no-failure-found"
    assert d.initiating is not None
    assert (d.initiating.line, d.initiating.rank) == (5, 0)


def test_a_tuning_run_that_lists_trials_that_did_not_complete_failed(tmp_path) -> None:
    """Ray Tune logs the trials that raised at ERROR and then prints its total
    run time, which reads like a normal end: the list says the run failed, and
    the trial's own exception under the controller's header is named."""
    lines = [
        "2025-10-01 17:40:02,101\tINFO tune.py:616 -- [output] This uses the legacy output.",
        "(train_cifar pid=457) [1,  2000] loss: 2.195",
        "2025-10-01 18:03:28,535\tERROR tune_controller.py:1331 -- Trial task failed for trial "
        "train_cifar_86dca_00014",
        "Traceback (most recent call last):",
        '  File "/home/ray/anaconda3/lib/python3.12/site-packages/ray/_private/worker.py", '
        "line 968, in get_objects",
        "    raise value.as_instanceof_cause()",
        "ray.exceptions.RayTaskError(RemoteDisconnected): ray::ImplicitFunc.train() (pid=457, "
        "ip=10.0.193.27, actor_id=c462d3a3340a38bd605a0c2302000000, repr=train_cifar)",
        '  File "/home/ray/anaconda3/lib/python3.12/http/client.py", line 300, in _read_status',
        '    raise RemoteDisconnected("Remote end closed connection without"',
        "http.client.RemoteDisconnected: Remote end closed connection without response",
        "2025-10-01 18:03:29,107\tERROR tune.py:1037 -- Trials did not complete: "
        "[train_cifar_86dca_00014]",
        "2025-10-01 18:03:29,107\tINFO tune.py:1041 -- Total run time: 1752.87 seconds "
        "(1752.17 seconds for the tuning loop).",
    ]
    d = _diagnosed(tmp_path, "tune.log", lines)
    assert d.verdict in ("failure", "suspect"), d.verdict
    assert d.initiating is not None and d.initiating.line == 10, d.initiating


def test_a_jit_build_is_named_by_the_compiler_error_not_the_failed_command(tmp_path) -> None:
    """The compiler's own ``error:`` line is why the build stopped; ninja's
    stop, Python's CalledProcessError and 'Error building extension' report it."""
    lines = [
        "Building extension module cpu_adam...",
        "[1/3] c++ -MMD -MF cpu_adam.o.d -DTORCH_EXTENSION_NAME=cpu_adam -c cpu_adam.cpp -o cpu_adam.o",
        "FAILED: cpu_adam.o ",
        "/opt/conda/lib/python3.12/site-packages/torch/include/c10/util/C++17.h:13:2: error: "
        "#error \"You're trying to build PyTorch with a too old version of GCC. We need GCC 9 "
        'or later."',
        " #error \\",
        "  ^~~~~",
        "ninja: build stopped: subcommand failed.",
        "Traceback (most recent call last):",
        '  File "/opt/conda/lib/python3.12/subprocess.py", line 571, in run',
        "    raise CalledProcessError(retcode, process.args,",
        "subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.",
        "RuntimeError: Error building extension 'cpu_adam'",
    ]
    d = _diagnosed(tmp_path, "build.log", lines)
    assert d.initiating is not None and d.initiating.line == 4, d.initiating
    assert d.initiating.signature == "os-compiler-error"


def test_a_warning_the_job_trained_past_yields_to_the_later_failure(tmp_path) -> None:
    """Megatron warns that it found no checkpoint and starts from random
    weights; the run then trains (progress lines) and dies of an OOM: the
    OOM is the failure, the warning was gone past."""
    lines = [
        "WARNING: could not find the metadata file checkpoints/gpt2_4.7B_ds/"
        "latest_checkpointed_iteration.txt ",
        "    will not load any checkpoints and will start from random",
        "training ...",
        *(
            f"[2022-02-18 05:53:{10 + i:02d},883] [INFO] [logging.py:69:log_dist] [Rank 0] "
            f"step={i}, skipped={i}, lr=[0.0, 0.0], mom=[(0.9, 0.999), (0.9, 0.999)]"
            for i in range(1, 31)
        ),
        "RuntimeError: CUDA out of memory. Tried to allocate 3.74 GiB (GPU 3; 31.75 GiB total "
        "capacity; 23.13 GiB already allocated; 2.94 GiB free; 26.92 GiB reserved in total by "
        "PyTorch)",
    ]
    d = _diagnosed(tmp_path, "output.log", lines)
    assert d.initiating is not None and d.initiating.line == 34, d.initiating


def test_a_shell_test_rejecting_its_operands_after_the_end_is_no_failure(tmp_path) -> None:
    """bash's ``[`` complaining about an empty operand makes the test false;
    the script goes on.  After the run's own end line it stops nothing."""
    lines = [
        ':::MLLOG {"namespace": "", "time_ms": 1716096680000, "event_type": '
        '"POINT_IN_TIME", "key": "eval_accuracy", "value": 0.92, "metadata": {}}',
        ':::MLLOG {"namespace": "", "time_ms": 1716096683058, "event_type": '
        '"INTERVAL_END", "key": "run_stop", "value": 0.92, "metadata": '
        '{"status": "success"}}',
        "./run_and_time.sh: line 72: [: : integer expression expected",
    ]
    d = _diagnosed(tmp_path, "result_0.txt", lines)
    assert d.verdict == "no-failure-found", (d.verdict, d.initiating)
    from denpex_fast.analysis.levels import shell_test_rejected

    assert shell_test_rejected("run.sh: line 9: [: too many arguments")
    assert not shell_test_rejected("bash: line 1: 12345 Killed                  python train.py")


def test_a_batch_systems_memory_kill_after_training_ended_is_named(tmp_path) -> None:
    """An env dump's ``UCC_LOG_LEVEL=ERROR`` is no error line; NCCL's
    duplicate-GPU warning was trained past to the script's own end line
    (``Training time: ...s``); the site monitor's memory kill after it is
    the failure."""
    lines = [
        "UCC_LOG_LEVEL=ERROR",
        "PBS_NODENUM=0",
        "gadi-gpu-v100-0109:2528901:2528901 [0] init.cc:871 NCCL WARN Duplicate GPU detected : "
        "rank 0 and rank 1 both on CUDA device 3d000",
        *(
            f"Epoch 1 | iter {i} step {i} | loss train: 0.9{i}, val: n/a | iter time: 8327.11 ms"
            for i in range(1, 6)
        ),
        "Training time: 421.66s",
        "Memory used: 17.86 GB",
        "Job 124452549 has exceeded memory allocation on node gadi-gpu-v100-0109.gadi.nci.org.au",
        'Process "pt_main_thread", pid 2528901, rss 12930043904, vmem 64778096640',
    ]
    d = _diagnosed(tmp_path, "llama.o124452549", lines)
    assert d.initiating is not None and d.initiating.line == 11, d.initiating


def test_a_traceback_is_read_back_at_its_own_place_in_a_long_log(tmp_path) -> None:
    """Hundreds of progress lines are thinned before ranking; the lines read
    back after an error (here the exception that ends SGLang's scheduler
    traceback, past the incident's reach) are still read at that error's
    own place in the file, not at the row the thinning moved into its index."""
    frames = []
    for k in range(12):
        frames += [
            f'  File "/usr/lib/python3.11/site-packages/sglang/srt/mod{k}.py", line {100 + k}, '
            f"in step{k}",
            f"    out = self.step{k + 1}(batch)",
        ]
    lines = [
        *(
            f"[2026-01-14 12:{i // 60:02d}:{i % 60:02d},883] [INFO] [logging.py:69:log_dist] "
            f"[Rank 0] step={i}, skipped=0, lr=[0.0001], mom=[(0.9, 0.999)]"
            for i in range(300)
        ),
        "[2026-01-14 12:10:42 DP3 TP3 EP3] Scheduler hit an exception: Traceback (most recent "
        "call last):",
        *frames,
        "AttributeError: 'NPUMLATokenToKVPool' object has no attribute 'kv_buffer'",
        "",
        "[2026-01-14 12:10:43] Received sigquit from a child process. It usually means the "
        "child failed.",
    ]
    d = _diagnosed(tmp_path, "decode.log", lines)
    assert d.initiating is not None and d.initiating.line == 326, d.initiating


def test_lines_behind_the_kubeflow_sdks_pod_prefix_are_read_as_their_own(tmp_path) -> None:
    """The Kubeflow training SDK prints every pod's line as ``[Pod <name>]: <line>``:
    an entry anchored at the line start still reads the line behind it (the
    run's own end line here), as behind ``kubectl logs --prefix``."""
    from denpex_fast.facts.attribution import collector_length

    pod = "[Pod fsdp-fine-tuning-master-0]: "
    lines = [
        pod + "Train Epoch: \t1, Loss: \t0.4112",
        pod + "Train Epoch: \t2, Loss: \t0.2659",
        pod + "FSDP training time: 107 seconds",
    ]
    d = _diagnosed(tmp_path, "master-0.log", lines)
    assert d.verdict == "no-failure-found", (d.verdict, d.stopped_after)
    assert collector_length(pod + "Traceback (most recent call last):") == len(pod)


def test_advice_about_what_may_go_wrong_is_no_failure(tmp_path) -> None:
    """maskrcnn-benchmark prints on every rank that one *may* run out of
    memory; the job's real failure later is a missing file."""
    lines = [
        "When using more than one image per GPU you may encounter an out-of-memory (OOM) error if "
        "your GPU does not have sufficient memory. If this happens, you can reduce "
        "SOLVER.IMS_PER_BATCH (for training) or TEST.IMS_PER_BATCH (for inference).",
        "Loading annotations into memory...",
        *(f"loading shard {i}" for i in range(20)),
        "Traceback (most recent call last):",
        '  File "/workspace/object_detection/tools/train_mlperf.py", line 355, in main',
        "    dataset = build_dataset(cfg)",
        "FileNotFoundError: [Errno 2] No such file or directory: "
        "'/coco_train2017_pyt/coco_train2017_img_info.pyt'",
    ]
    d = _diagnosed(tmp_path, "run.log", lines)
    assert d.initiating is not None and d.initiating.line == 26, d.initiating
    from denpex_fast.analysis.levels import advice

    assert not advice("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB")


def test_ucxs_crash_report_names_the_crash_before_the_launchers_summary(tmp_path) -> None:
    """UCX's handler reports the segfault inside the process; torchrun's
    'Signal 11 (SIGSEGV) received by PID' summary is the same crash later."""
    lines = [
        "[NeMo I 2024-05-01 22:04:11 megatron_init:251] Rank 0 has data parallel group : [0]",
        "[smciserver:227  :0:227] Caught signal 11 (Segmentation fault: address not mapped to "
        "object at address 0xa00020000000a)",
        "==== backtrace (tid:    227) ====",
        " 0  /opt/hpcx/ucx/lib/libucs.so.0(ucs_handle_error+0x2e4) [0x7f1c2a2d3fc4]",
        *(f" {k}  /usr/lib/x86_64-linux-gnu/libmpi.so.40(+0x{k}1f0) [0x7f1c]" for k in range(1, 8)),
        "=================================",
        "[2024-05-01 22:04:48,112] torch.distributed.elastic.multiprocessing.api: [ERROR] failed "
        "(exitcode: -11) local_rank: 0 (pid: 222) of binary: /usr/bin/python",
        "  traceback : Signal 11 (SIGSEGV) received by PID 222",
    ]
    d = _diagnosed(tmp_path, "run.log", lines)
    assert d.initiating is not None and d.initiating.line == 2, d.initiating


def test_two_launches_claiming_every_rank_are_not_a_duplicate_claim(tmp_path) -> None:
    """A training launch and an evaluation launch each claim all 64 ranks in
    one srun output; however many claim lines the ranking keeps, the second
    round is a new attempt, not two processes taking one rank."""
    order = [(r * 37) % 64 for r in range(64)]
    claims = [
        f"{r:2d}: Initializing distributed: GLOBAL_RANK: {r}, MEMBER: {r + 1}/64" for r in order
    ]
    lines = [
        *claims,
        *(f" 0: step {i} loss 1.{i:02d}" for i in range(10)),
        *claims[::-1],
        "13: [rank13]: Traceback (most recent call last):",
        '13: [rank13]:   File "/workspace/sd/infer_and_eval.py", line 198, in <module>',
        "13: [rank13]: ValueError: Imaginary component 0.0029952042492374167",
    ]
    d = _diagnosed(tmp_path, "result_9.txt", lines)
    assert d.initiating is not None and d.initiating.line == len(lines), d.initiating


def test_an_mlperf_runs_loss_records_are_its_progress(tmp_path) -> None:
    """srun's warning about a cache-clearing step, then the MLLOG training
    records (the run went on), then the step cancelled at its time limit:
    the time limit is the failure."""
    lines = [
        "srun: warning: can't honor --ntasks-per-node set to 1 which doesn't match the requested "
        "tasks 36 with the number of requested nodes 9. Ignoring --ntasks-per-node.",
        "Clearing cache on node002",
        *(
            f' 0: :::MLLOG {{"namespace": "", "time_ms": {1745262449083 + 4000 * i}, '
            f'"event_type": "POINT_IN_TIME", "key": "train_loss", "value": 1.29, "metadata": '
            f'{{"file": "/workspace/ft-llm/custom_callbacks.py", "lineno": 71, '
            f'"samples_count": {3000 + 60 * i}, "lr": 0.0003}}}}'
            for i in range(12)
        ),
        " 0: slurmstepd: error: *** STEP 513.21 ON node002 CANCELLED AT 2025-04-21T14:07:43 DUE "
        "TO TIME LIMIT ***",
    ]
    d = _diagnosed(tmp_path, "result_9.txt", lines)
    assert d.initiating is not None and d.initiating.line == 15, d.initiating


def test_the_device_an_oom_names_beats_the_rank_of_a_shared_console(tmp_path) -> None:
    # one console for four processes where only rank 0 logs its steps (DeepSpeed's
    # log_dist): the allocator's "(GPU 3; ..." is that line's own process, not rank 0
    steps = [
        f"[2022-02-18 05:53:{s:02d},100] [INFO] [logging.py:69:log_dist] [Rank 0] step={s}, skipped=0, lr=[0.0001]"
        for s in range(1, 9)
    ]
    tb = [
        "Traceback (most recent call last):",
        '  File "pretrain_gpt2.py", line 134, in <module>',
        "    denom = (exp_avg_sq.sqrt() / math.sqrt(bias_correction2)).add_(eps)",
        "RuntimeError: CUDA out of memory. Tried to allocate 3.74 GiB (GPU 3; 31.75 GiB total"
        " capacity; 23.13 GiB already allocated; 2.94 GiB free; 26.92 GiB reserved in total by PyTorch)",
        "Traceback (most recent call last):",
    ]
    doc = _diagnosed(tmp_path, "output.log", steps + tb).to_dict()
    assert doc["initiating"]["signature"] == "cuda-oom"
    assert doc["initiating"]["rank"] == 3
    # the newer wording names the device the same way
    new = tb[3].replace(
        "CUDA out of memory. Tried to allocate 3.74 GiB (GPU 3; 31.75 GiB total capacity;",
        "CUDA out of memory. Tried to allocate 3.74 GiB. GPU 2 has a total capacity of 31.75 GiB;",
    )
    assert (
        _diagnosed(tmp_path, "output.log", steps + tb[:3] + [new]).to_dict()["initiating"]["rank"]
        == 2
    )


def test_a_background_threads_exception_after_the_end_is_teardown(tmp_path) -> None:
    # a metrics uploader's thread dies on a closed socket once training finished
    tail = [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.11/threading.py", line 1038, in _bootstrap_inner',
        "    self.run()",
        '  File "/usr/local/lib/python3.11/dist-packages/wandb/sdk/lib/sock_client.py", line 130, in _sendall_with_error_handle',
        "    sent = self._sock.send(data)",
        "BrokenPipeError: [Errno 32] Broken pipe",
    ]
    steps = [f"Epoch 0: step {s} train/loss=0.{s}" for s in range(1, 6)]
    done = "`Trainer.fit` stopped: `max_epochs=1` reached."
    doc = _diagnosed(
        tmp_path, "train.log", steps + [done, "Exception in thread NetStatThr:"] + tail
    ).to_dict()
    assert doc["verdict"] == "no-failure-found", doc["verdict"]
    # the main thread's own exception after the same line is not a thread's
    doc = _diagnosed(tmp_path, "train.log", steps + [done] + tail).to_dict()
    assert doc["verdict"] != "no-failure-found"
    assert doc["initiating"]["signature"] == "os-broken-pipe"


def test_an_exception_carrying_a_nested_traceback_is_named_by_the_nested_error(tmp_path) -> None:
    frames = [
        "Traceback (most recent call last):",
        '  File "python/ray/_raylet.pyx", line 2276, in ray._raylet.task_execution_handler',
        '  File "/env/ray/_private/function_manager.py", line 608, in temporary_actor_method',
        "    raise RuntimeError(",
    ]
    wrapper = (
        "RuntimeError: The actor with name WorkerDict failed to import on the worker. This may be"
        " because needed library dependencies are not installed in the worker environment:"
    )
    nested = [
        "",
        "Traceback (most recent call last):",
        '  File "/env/verl/workers/fsdp_workers.py", line 15, in <module>',
        "    LAYOUT = parse_layout(os.environ['SHARD_LAYOUT'])",
        "ValueError: shard layout '4x2' does not divide 6 heads",
    ]
    doc = _diagnosed(tmp_path, "driver.log", ["step 1", *frames, wrapper, *nested]).to_dict()
    assert doc["initiating"]["line"] == 11, doc["initiating"]
    # an exception line of one process followed by another process's traceback
    # (an interleaved console, no ':' announcing a nested trace) keeps its line
    other = "RuntimeError: CUDA error: an illegal memory access was encountered"
    doc = _diagnosed(tmp_path, "driver.log", ["step 1", *frames, other, *nested[1:]]).to_dict()
    assert doc["initiating"]["line"] == 6, doc["initiating"]


def test_an_nccl_error_whose_detail_is_the_proxy_closing_after_the_end_is_teardown(
    tmp_path,
) -> None:
    steps = [f"[rank30]: step {s} loss 0.{s}" for s in range(1, 6)]
    done = "`Trainer.fit` stopped: `max_epochs=1` reached."
    record = [
        "30: [E511 01:46:13.812290483 ProcessGroupNCCL.cpp:541] [Rank 30] found async exception when checking for NCCL errors: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.22.3",
        "30: ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. ",
        "30: Last error:",
        "30: [Proxy Service 30] Failed to execute operation Close from rank 30, retcode 3",
    ]
    assert (
        _diagnosed(tmp_path, "result.txt", steps + [done] + record).to_dict()["verdict"]
        == "no-failure-found"
    )
    # the same wrapper with a network failure as its detail is a failure
    record[3] = (
        "30: NET/IB : Got completion from peer 10.0.0.7<50126> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.8"
    )
    assert (
        _diagnosed(tmp_path, "result.txt", steps + [done] + record).to_dict()["verdict"]
        != "no-failure-found"
    )


def test_plain_error_words_after_progress_reached_its_total_are_the_epilogue(tmp_path) -> None:
    steps = [
        f"2021-11-24 22:00:{s:02d} [INFO]\t[TRAIN] epoch: 216, iter: {79950 + 10 * s}/80000, loss: 0.16"
        for s in range(1, 6)
    ]
    epilogue = [
        "<class 'paddle.nn.layer.conv.Conv2D'>'s flops has been counted",
        "Cannot find suitable count function for <class 'paddle.nn.layer.pooling.MaxPool2D'>. Treat it as zero FLOPs.",
        "Total Flops: 437453619200     Total Params: 52608512",
    ]
    doc = _diagnosed(tmp_path, "workerlog.0", steps + epilogue).to_dict()
    assert doc["verdict"] == "no-failure-found", doc["verdict"]
    # short of its total, the same line is still a lead
    assert (
        _diagnosed(
            tmp_path, "workerlog.0", [x.replace("/80000", "/90000") for x in steps + epilogue]
        ).to_dict()["verdict"]
        != "no-failure-found"
    )


def test_an_interrupt_is_named_by_the_terminals_echo_of_ctrl_c(tmp_path) -> None:
    bar = "Epoch 0:  82%|▊| 419/513 [2:32:31<34:13,  0.05it/s, v_num=x6ev, train/loss=6.560"
    lines = [
        "Epoch 0:   0%| | 1/513 [08:22<71:28:21,  0.00it/s, v_num=x6ev, train/loss=11.20]",
        "Epoch 0:  40%|▍| 205/513 [1:14:31<1:34:13,  0.05it/s, v_num=x6ev, train/loss=7.2]",
        "Epoch 0:  60%|▌| 308/513 [1:54:31<1:14:13,  0.05it/s, v_num=x6ev, train/loss=6.9051]",
        bar + "^C",
        "Process ForkProcess-32:",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.10/multiprocessing/process.py", line 314, in _bootstrap',
        "    self.run()",
        "KeyboardInterrupt",
    ]
    doc = _diagnosed(tmp_path, "cell_output.log", lines).to_dict()
    assert doc["initiating"]["signature"] == "os-keyboard-interrupt"
    assert doc["initiating"]["line"] == 4
    # no echo captured: the exception line itself
    lines[3] = bar + "]"
    doc = _diagnosed(tmp_path, "cell_output.log", lines).to_dict()
    assert (doc["initiating"]["signature"], doc["initiating"]["line"]) == (
        "os-keyboard-interrupt",
        9,
    )


def test_a_log_ending_in_the_terminals_ctrl_c_echo_was_interrupted(tmp_path) -> None:
    steps = [
        f"2021-05-18 03:5{s}:38 INFO train: step={s * 7} loss={1.0 / s:.{s}f}" for s in range(1, 7)
    ]
    doc = _diagnosed(tmp_path, "result_2.txt", steps + ["^C^Z"]).to_dict()
    assert doc["initiating"]["signature"] == "os-keyboard-interrupt"
    assert doc["initiating"]["line"] == 7
    # without the echo the log just stops
    assert _diagnosed(tmp_path, "result_2.txt", steps).to_dict()["verdict"] == "stopped"


def test_a_pid_inside_the_launchers_run_of_worker_pids_names_its_rank(tmp_path) -> None:
    # UCX reports pid 227's crash; torchrun's summary lists every worker but
    # the one it had to kill, each "rank : N" above "exitcode : -11 (pid: P)"
    lines = [
        "[smciserver:227  :0:227] Caught signal 11 (Segmentation fault: address not mapped to object at address 0xa00020000000a)",
        "==== backtrace (tid:    227) ====",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "Failures:",
    ]
    for rank in (1, 2, 3, 4, 6, 7):
        lines += [
            f"[{rank}]:",
            "  time      : 2024-05-01_22:04:48",
            "  host      : smciserver",
            f"  rank      : {rank} (local_rank: {rank})",
            f"  exitcode  : -11 (pid: {222 + rank})",
            "  error_file: <N/A>",
            f"  traceback : Signal 11 (SIGSEGV) received by PID {222 + rank}",
        ]
    doc = _diagnosed(tmp_path, "run.log", lines).to_dict()
    assert doc["initiating"]["line"] == 1
    assert doc["initiating"]["rank"] == 5


def test_an_old_kernel_warning_explains_only_a_hang(tmp_path) -> None:
    kernel = (
        "12/03/2024 10:11:12 - WARNING - accelerate.utils.other - Detected kernel version 4.18.0, "
        "which is below the recommended minimum of 5.5.0; this can cause the process to hang. "
        "It is recommended to upgrade the kernel to the minimum version or higher."
    )
    err = [
        "Traceback (most recent call last):",
        '  File "train.py", line 88, in <module>',
        "    out = model(**batch)",
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cpu! (when checking argument for argument mat2 in method wrapper_CUDA_bmm)",
    ]
    doc = _diagnosed(tmp_path, "train.err", [kernel, "loading shards", *err]).to_dict()
    assert doc["initiating"]["signature"] == "torch-device-mismatch", doc["initiating"]


def test_a_plain_error_word_after_the_end_is_epilogue_when_the_job_printed_on(tmp_path) -> None:
    steps = [f"Epoch 0: step {s} train/loss=0.{s}{s}" for s in range(1, 6)]
    done = "`Trainer.fit` stopped: `max_steps=100` reached."
    nsys = "22: Failed to create '/fsx/nsys_profiles/.nsys-rep': File exists."
    after = [
        "22: Generating '/tmp/nsys-report-4aa1.qdstrm'",
        "22: [1/1] [========100%] report22.nsys-rep",
    ]
    assert (
        _diagnosed(tmp_path, "slurm-102.out", steps + [done, nsys] + after).to_dict()["verdict"]
        == "no-failure-found"
    )
    # the last line the job left (a kill cut it there) is still a lead
    assert (
        _diagnosed(tmp_path, "slurm-102.out", steps + [done, nsys]).to_dict()["verdict"]
        != "no-failure-found"
    )


def test_seffs_completed_state_is_the_jobs_completion_line(tmp_path) -> None:
    lines = [
        "Epoch 1/10",
        "2024-02-01 10:00:01.000000: W tensorflow/core/framework/dataset.cc:959] Input of GeneratorDatasetOp::Dataset will not be optimized because the dataset does not implement the AsCheckpoint method",
        *[f"  step {s}/100 - loss: 0.{s:02d}" for s in range(1, 6)],
        "Epoch 10/10",
        "Job ID: 4913776",
        "State: COMPLETED (exit code 0)",
        " ++   Memory Efficiency is too small. Please review the requested memory. ++",
    ]
    doc = _diagnosed(tmp_path, "jsimple.o4913776", lines).to_dict()
    assert doc["verdict"] == "no-failure-found", doc["verdict"]
