"""The shipped knowledge base: completeness, cross-references and examples.

Every entry's ``examples.match`` lines must produce a row for that entry and
its ``examples.nomatch`` lines must not, scanned with the real scanner; all
examples of the whole knowledge base go through one ``scan_bytes`` call.
A generated healthy multi-rank training log must not trigger any ``cause``
signature outside ``tests/data/healthy_allowlist.toml``.
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

from denpex_fast.engine.kbcheck import _longest_literal, load_signatures
from denpex_fast.kb.signatures import (
    ENV_VAR,
    SignatureError,
    SignatureSet,
    dangling_references,
    scan_forms,
)

ALLOWLIST = Path(__file__).parent / "data" / "healthy_allowlist.toml"

FAMILY_MINIMUM = {
    "pytorch": 50, "nccl": 50, "cuda": 40, "xid_kernel": 30, "deepspeed": 50,
    "megatron": 20, "huggingface": 30, "lightning": 20, "vllm": 25, "slurm": 20,
    "kubernetes": 15, "storage": 15, "dataloader": 15, "numerics": 10, "python_os": 10,
}  # fmt: skip
TOTAL_MINIMUM = 400


@contextlib.contextmanager
def _builtin_only() -> Iterator[None]:
    """Load from a directory with no pyproject.toml and without DENPEX_SIGNATURES."""
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp)
        mp.delenv(ENV_VAR, raising=False)
        yield


def _load(validate: bool) -> SignatureSet:
    with _builtin_only():
        return load_signatures(validate_patterns=validate)


try:  # collected once, so every entry gets its own test case
    KB: SignatureSet | None = _load(validate=False)
    KB_ERROR: SignatureError | None = None
except SignatureError as exc:
    KB, KB_ERROR = None, exc
IDS = list(KB.ids) if KB is not None else ["<knowledge base failed to load>"]


@pytest.fixture(scope="module")
def kb() -> SignatureSet:
    if KB is None:
        pytest.fail(f"the shipped knowledge base does not load: {KB_ERROR}")
    return KB


@pytest.fixture(scope="module")
def scanner(kb: SignatureSet) -> Any:
    pytest.importorskip("denpex_fast._denpex_scan")  # skips only where the extension was not built
    from denpex_fast.engine.scanner import Scanner

    return Scanner(patterns=kb.patterns())


@pytest.fixture(scope="module")
def example_hits(
    kb: SignatureSet, scanner: Any
) -> tuple[dict[tuple[str, str, int], int], set[tuple[int, str]]]:
    """Scan every example of the knowledge base in one call.

    Returns the line number of each (id, kind, index) example and the set
    of (line, signature) rows the scanner produced.
    """
    where: dict[tuple[str, str, int], int] = {}
    lines: list[bytes] = []
    for sig in kb:
        for kind, examples in (("match", sig.examples_match), ("nomatch", sig.examples_nomatch)):
            for i, text in enumerate(examples):
                lines.append(text.encode("utf-8"))
                where[(sig.id, kind, i)] = len(lines)
    table = scanner.scan_bytes(b"\n".join(lines) + b"\n")
    hits = set(zip(table.column("line").to_pylist(), table.column("signature").to_pylist()))
    return where, hits


def test_knowledge_base_loads_and_compiles() -> None:
    assert KB_ERROR is None, str(KB_ERROR)
    pytest.importorskip("denpex_fast._denpex_scan")
    kb = _load(validate=True)  # raises SignatureError naming any pattern Hyperscan refuses
    assert len(kb) == len(IDS)


def test_no_dangling_references(kb: SignatureSet) -> None:
    assert dangling_references(kb) == []


@pytest.mark.parametrize("family", sorted(FAMILY_MINIMUM))
def test_family_size(kb: SignatureSet, family: str) -> None:
    count = sum(1 for sig in kb if sig.family == family)
    assert count >= FAMILY_MINIMUM[family], (
        f"{family}: {count} entries, want >= {FAMILY_MINIMUM[family]}"
    )


def test_total_size(kb: SignatureSet) -> None:
    assert len(kb) >= TOTAL_MINIMUM, Counter(sig.family for sig in kb)


@pytest.mark.parametrize("sig_id", IDS)
def test_entry_is_complete(kb: SignatureSet, sig_id: str) -> None:
    sig = kb[sig_id]
    for name in ("title", "framework", "phase", "role", "severity", "root_cause", "fix", "verify"):
        assert getattr(sig, name).strip(), f"{sig_id}: empty {name}"
    for name in ("patterns", "checklist", "references", "examples_match"):
        values = getattr(sig, name)
        assert values and all(v.strip() for v in values), f"{sig_id}: empty {name}"
    for url in sig.references:
        assert url.startswith(("http://", "https://")), (
            f"{sig_id}: reference {url!r} is not an http(s) URL"
        )
    for ref in [*sig.caused_by, *sig.triggers, *(cid for cid, _ in sig.competing)]:
        assert ref in kb, f"{sig_id}: refers to unknown id {ref!r}"
    if sig.role == "symptom":
        assert sig.caused_by, f"{sig_id}: a symptom names at least one cause in caused_by"
    for i, expr in enumerate(sig.patterns):
        assert not expr.startswith((".*", "(?i).*")), f"{sig_id}: patterns[{i}] starts with .*"
        assert _longest_literal(expr) >= 6, f"{sig_id}: patterns[{i}] lacks a 6-character literal"


@pytest.mark.parametrize("sig_id", IDS)
def test_examples(kb: SignatureSet, example_hits: Any, sig_id: str) -> None:
    where, hits = example_hits
    sig = kb[sig_id]
    missed = [
        t
        for i, t in enumerate(sig.examples_match)
        if (where[(sig_id, "match", i)], sig_id) not in hits
    ]
    wrong = [
        t
        for i, t in enumerate(sig.examples_nomatch)
        if (where[(sig_id, "nomatch", i)], sig_id) in hits
    ]
    assert not missed, f"{sig_id}: examples.match lines without a match: {missed}"
    assert not wrong, f"{sig_id}: examples.nomatch lines that match: {wrong}"


# --------------------------------------------------------------------------- healthy logs


def healthy_training_log(ranks: int = 8, steps: int = 300, seed: int = 7) -> bytes:
    """A realistic log of a healthy 8-GPU run: torchrun, NCCL init, DeepSpeed, HF, Lightning."""
    rnd = random.Random(seed)
    out: list[str] = [
        "W0605 10:00:00.000000 1400 torch/distributed/run.py:779] *****************************************",
        "W0605 10:00:00.000000 1400 torch/distributed/run.py:779] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed.",
        "I0605 10:00:00.100000 1400 torch/distributed/launcher/api.py:188] Starting elastic_operator with launch configs:",
        "I0605 10:00:00.100000 1400 torch/distributed/launcher/api.py:188]   entrypoint       : train.py",
        "I0605 10:00:00.100000 1400 torch/distributed/launcher/api.py:188]   min_nodes        : 1",
        "I0605 10:00:00.100000 1400 torch/distributed/launcher/api.py:188]   nproc_per_node   : 8",
        "I0605 10:00:00.100000 1400 torch/distributed/launcher/api.py:188]   rdzv_backend     : c10d",
        "I0605 10:00:00.100000 1400 torch/distributed/launcher/api.py:188]   max_restarts     : 0",
        "I0605 10:00:00.200000 1400 torch/distributed/elastic/agent/server/api.py:825] [default] starting workers for entrypoint: python",
        "I0605 10:00:00.300000 1400 torch/distributed/elastic/agent/server/local_elastic_agent.py:236] Environment variable 'TORCHELASTIC_ENABLE_FILE_TIMER' not found. Do not start FileTimerServer.",
    ]
    out.append(
        "[2024-06-05 10:00:01,000] [INFO] [real_accelerator.py:191:get_accelerator] Setting ds_accelerator to cuda (auto detect)"
    )
    for r in range(ranks):
        pid = 1500 + r
        out += [
            f"[rank{r}]:[W605 10:00:02.000000 {pid} ProcessGroupNCCL.cpp:4115] [PG ID 0 PG GUID 0 Rank {r}]  using GPU {r} to perform barrier as devices used by this process are currently unknown.",
            f"node1:{pid}:{pid} [{r}] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
            f"node1:{pid}:{pid} [{r}] NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)",
            f"node1:{pid}:{pid} [{r}] NCCL INFO cudaDriverVersion 12040",
            f"node1:{pid}:{pid} [{r}] NCCL INFO NCCL version 2.21.5+cuda12.4",
            f"node1:{pid}:{pid + 100} [{r}] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>",
            f"node1:{pid}:{pid + 100} [{r}] NCCL INFO Using non-device net plugin version 0",
            f"node1:{pid}:{pid + 100} [{r}] NCCL INFO Using network IB",
            f"node1:{pid}:{pid + 100} [{r}] NCCL INFO comm 0x55d0a1b2c3d0 rank {r} nranks {ranks} cudaDev {r} nvmlDev {r} busId {r}000 commId 0x1a2b3c4d5e6f7081 - Init START",
            f"node1:{pid}:{pid + 100} [{r}] NCCL INFO Setting affinity for GPU {r} to ffff,ffffffff",
            f"node1:{pid}:{pid + 100} [{r}] NCCL INFO Channel 00/24 :    0   1   2   3   4   5   6   7",
            f"node1:{pid}:{pid + 100} [{r}] NCCL INFO Trees [0] {r + 1 if r + 1 < ranks else -1}/-1/-1->{r}->{r - 1 if r else -1}",
            f"node1:{pid}:{pid + 100} [{r}] NCCL INFO Connected all rings",
            f"node1:{pid}:{pid + 100} [{r}] NCCL INFO Connected all trees",
            f"node1:{pid}:{pid + 100} [{r}] NCCL INFO threadThresholds 8/8/64 | 64/8/64 | 512 | 512",
            f"node1:{pid}:{pid + 100} [{r}] NCCL INFO 24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer",
            f"node1:{pid}:{pid + 100} [{r}] NCCL INFO comm 0x55d0a1b2c3d0 rank {r} nranks {ranks} cudaDev {r} nvmlDev {r} busId {r}000 commId 0x1a2b3c4d5e6f7081 - Init COMPLETE",
            f"[rank{r}]: [2024-06-05 10:00:03,000] [INFO] [comm.py:652:init_distributed] cdb=None",
        ]
    out += [
        "[2024-06-05 10:00:04,000] [INFO] [logging.py:96:log_dist] [Rank 0] DeepSpeed info: version=0.14.2, git-hash=unknown, git-branch=unknown",
        "[2024-06-05 10:00:04,100] [INFO] [logging.py:96:log_dist] [Rank 0] Creating torch.optim.AdamW optimizer",
        "[2024-06-05 10:00:04,200] [INFO] [stage_1_and_2.py:148:__init__] Reduce bucket size 500,000,000",
        "[2024-06-05 10:00:04,200] [INFO] [stage_1_and_2.py:149:__init__] Allgather bucket size 500,000,000",
        "[2024-06-05 10:00:04,200] [INFO] [stage_1_and_2.py:150:__init__] CPU Offload: False",
        "[2024-06-05 10:00:05,000] [INFO] [config.py:997:print] DeepSpeedEngine configuration:",
        "[2024-06-05 10:00:05,000] [INFO] [config.py:1001:print]   activation_checkpointing_config  {",
        "[2024-06-05 10:00:05,000] [INFO] [config.py:1001:print]   bf16_enabled ................. True",
        "[2024-06-05 10:00:05,000] [INFO] [config.py:1001:print]   fp16_enabled ................. False",
        "[2024-06-05 10:00:05,000] [INFO] [config.py:1001:print]   gradient_clipping ............ 1.0",
        "[2024-06-05 10:00:05,000] [INFO] [config.py:1001:print]   zero_optimization_stage ...... 2",
        "[2024-06-05 10:00:05,000] [INFO] [config.py:1001:print]   train_micro_batch_size_per_gpu  4",
        '[2024-06-05 10:00:05,000] [INFO] [config.py:987:print_user_config]   json = {"bf16": {"enabled": true}, "zero_optimization": {"stage": 2, "overlap_comm": true}, "gradient_clipping": 1.0, "train_micro_batch_size_per_gpu": 4}',
        "***** Running training *****",
        "  Num examples = 120,000",
        "  Num Epochs = 1",
        "  Instantaneous batch size per device = 4",
        "  Total train batch size (w. parallel, distributed & accumulation) = 256",
        "  Gradient Accumulation steps = 8",
        "  Total optimization steps = 468",
        "  Number of trainable parameters = 6,738,415,616",
    ]
    loss = 2.5
    for step in range(1, steps + 1):
        loss = max(0.4, loss * (1 - rnd.uniform(0.0, 0.01)))
        pct = step * 100 // steps
        out.append(
            f"{pct:3d}%|{'█' * (pct // 10):<10}| {step}/{steps} [{step // 60:02d}:{step % 60:02d}<{(steps - step) // 60:02d}:{(steps - step) % 60:02d},  1.{rnd.randint(10, 99)}it/s]"
        )
        if step % 10 == 0:
            out.append(
                f"{{'loss': {loss:.4f}, 'grad_norm': {rnd.uniform(0.2, 1.5):.4f}, 'learning_rate': {5e-5 * (1 - step / steps):.4e}, 'epoch': {step / steps:.2f}}}"
            )
            out.append(
                f"[2024-06-05 10:{step // 60:02d}:{step % 60:02d},000] [INFO] [logging.py:96:log_dist] [Rank 0] step={step}, skipped=0, lr=[0.0001], mom=[(0.9, 0.999)]"
            )
            out.append(
                f"[2024-06-05 10:{step // 60:02d}:{step % 60:02d},000] [INFO] [timer.py:260:stop] epoch=0/micro_step={step * 8}/global_step={step}, RunningAvgSamplesPerSec=41.{rnd.randint(0, 99)}, CurrSamplesPerSec=41.{rnd.randint(0, 99)}, MemAllocated=14.2GB, MaxMemAllocated=21.7GB"
            )
        if step % 100 == 0:
            out.append(f"Saving model checkpoint to /checkpoints/run1/checkpoint-{step}")
            out.append(
                f"[2024-06-05 10:30:00,000] [INFO] [torch_checkpoint_engine.py:21:save] [Torch] Saving /checkpoints/run1/checkpoint-{step}/global_step{step}/mp_rank_00_model_states.pt..."
            )
            out.append(
                f"[2024-06-05 10:30:05,000] [INFO] [torch_checkpoint_engine.py:23:save] [Torch] Saved /checkpoints/run1/checkpoint-{step}/global_step{step}/mp_rank_00_model_states.pt."
            )
            out.append(
                f"{{'eval_loss': {loss + 0.1:.4f}, 'eval_runtime': 12.3456, 'eval_samples_per_second': 81.0, 'eval_steps_per_second': 2.53, 'epoch': {step / steps:.2f}}}"
            )
    out.append(
        f"{{'train_runtime': 1234.5678, 'train_samples_per_second': 97.2, 'train_steps_per_second': 0.38, 'train_loss': {loss + 0.3:.4f}, 'epoch': 1.0}}"
    )
    # A Lightning run on the same cluster.
    out += [
        "GPU available: True (cuda), used: True",
        "TPU available: False, using: 0 TPU cores",
        "HPU available: False, using: 0 HPUs",
        "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/8",
        "----------------------------------------------------------------------------------------------------",
        "distributed_backend=nccl",
        "All distributed processes registered. Starting with 8 processes",
        "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1,2,3,4,5,6,7]",
        "  | Name  | Type             | Params | Mode ",
        "0 | model | GPT2LMHeadModel  | 124 M  | train",
        "124 M     Trainable params",
        "Sanity Checking DataLoader 0: 100%|██████████| 2/2 [00:00<00:00,  5.12it/s]",
    ]
    for epoch in range(3):
        out.append(
            f"Epoch {epoch}: 100%|██████████| 100/100 [00:10<00:00, 9.5it/s, v_num=0, train_loss={1.5 - epoch * 0.2:.3f}]"
        )
        out.append("Validation DataLoader 0: 100%|██████████| 20/20 [00:01<00:00, 15.2it/s]")
        out.append(
            f"Metric val_loss improved by 0.0{epoch + 1}2 >= min_delta = 0.0. New best score: {1.4 - epoch * 0.2:.3f}"
        )
    out += [
        "`Trainer.fit` stopped: `max_epochs=3` reached.",
        "I0605 11:00:00.000000 1400 torch/distributed/elastic/agent/server/api.py:879] [default] worker group successfully finished. Waiting 300 seconds for other agents to finish.",
        "I0605 11:00:00.100000 1400 torch/distributed/elastic/agent/server/api.py:932] Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish",
        "I0605 11:00:00.200000 1400 torch/distributed/elastic/agent/server/api.py:946] Done waiting for other agents. Elapsed: 0.0012 seconds",
    ]
    # torchrun prefixes the ranks' own output.
    prefixed = [
        f"[rank{rnd.randrange(ranks)}]:{line}"
        if rnd.random() < 0.3 and not line.startswith(("node1:", "[rank"))
        else line
        for line in out
    ]
    return ("\n".join(prefixed) + "\n").encode("utf-8")


def _allowlist() -> dict[str, str]:
    doc = tomllib.loads(ALLOWLIST.read_text(encoding="utf-8"))
    allowed = {}
    for item in doc.get("allow", []):
        assert set(item) == {"id", "reason"}, f"allowlist entries have id and reason: {item}"
        assert item["reason"].strip(), f"allowlist entry {item['id']} needs a reason"
        allowed[item["id"]] = item["reason"]
    return allowed


def test_healthy_log_stays_quiet(kb: SignatureSet, scanner: Any) -> None:
    allowed = _allowlist()
    for sig_id in allowed:
        assert sig_id in kb, f"allowlisted id {sig_id!r} is not in the knowledge base"
    log = healthy_training_log()
    table = scanner.scan_bytes(log)
    lines = log.decode("utf-8").split("\n")
    causes = {sig.id for sig in kb.by_role("cause")}
    noisy = sorted(
        (sig_id, line_no, lines[line_no - 1])
        for line_no, sig_id in zip(
            table.column("line").to_pylist(), table.column("signature").to_pylist()
        )
        if sig_id in causes and sig_id not in allowed
    )
    assert not noisy, "cause signatures matched a healthy log:\n" + "\n".join(
        f"{s} line {n}: {t}" for s, n, t in noisy[:40]
    )


def test_healthy_log_generator_is_realistic() -> None:
    log = healthy_training_log().decode("utf-8")
    for needle in (
        "Init COMPLETE",
        "NCCL INFO Bootstrap : Using eth0",
        "step=100, skipped=0",
        "'loss': ",
        "Epoch 0: 100%|",
        "Starting elastic_operator",
        "[rank",
    ):
        assert needle in log, needle


HEALTHY_RUNS = sorted(
    p.parent
    for p in (Path(__file__).parent / "corpus" / "cases").glob("*/truth.json")
    if json.loads(p.read_text()).get("healthy")
)


@pytest.mark.parametrize("case", HEALTHY_RUNS, ids=[p.name for p in HEALTHY_RUNS])
def test_real_healthy_runs_stay_quiet(case: Path, kb: SignatureSet, scanner: Any) -> None:
    """The generated corpus's healthy control runs (real torchrun/DeepSpeed output)."""
    logs = [p for p in case.rglob("*") if p.is_file() and p.name != "truth.json"]
    table = scanner.scan(logs)
    allowed = _allowlist()
    causes = {sig.id for sig in kb.by_role("cause")}
    rows = list(
        zip(
            table.column("file").to_pylist(),
            table.column("line").to_pylist(),
            table.column("signature").to_pylist(),
        )
    )
    # an open-world (catch-all) match yields to any other entry on its line,
    # as in the diagnosis: a benign line the knowledge base knows stays quiet
    claimed = {(f, n) for f, n, s in rows if "catch-all" not in kb[s].marks}
    noisy = [
        (f, n, s)
        for f, n, s in rows
        if s in causes
        and s not in allowed
        and not ("catch-all" in kb[s].marks and (f, n) in claimed)
    ]
    assert not noisy, noisy[:20]


def test_healthy_runs_exist() -> None:
    assert len(HEALTHY_RUNS) >= 3


# A field whose name says it is one of the quantities the ranking reads must be
# spelled from the typed vocabulary, so its unit is known: a bare ``timeout``
# (ms? s? H:MM:SS?), ``code`` (an exit status? an Xid?) or ``exitcode`` would
# be read wrongly or not at all.
_QUANTITY_LIKE = re.compile(
    r"^(?:timeout|exit|exitcode|exit_status|exit_code_\w+|code|ret|retcode|rc|"
    r"sig|signo|seconds|secs|seq_?num|step|steps|iter|iters)$"
)


def test_every_extracted_field_is_typed_or_display_only(kb: SignatureSet) -> None:
    from denpex_fast.analysis.causal import FIELD_VOCABULARY

    bad = [
        (sig.id, name)
        for sig in kb
        for name in sig.fields
        if name not in FIELD_VOCABULARY and _QUANTITY_LIKE.match(name)
    ]
    assert not bad, f"fields that look like ranked quantities but are not typed: {bad}"


def test_typed_fields_are_consumed_by_the_ranking() -> None:
    import inspect

    import denpex_fast.analysis.causal as causal
    import denpex_fast.analysis.diagnosis as diagnosis

    consumed = set()
    for name in dir(causal):
        if name.endswith("_FIELDS"):
            consumed |= set(getattr(causal, name))
    assert consumed == set(causal.FIELD_VOCABULARY)
    src = inspect.getsource(causal) + inspect.getsource(diagnosis)
    for name in dir(causal):
        if name.endswith("_FIELDS"):
            assert src.count(name) >= 2, f"{name} is declared but never read"


def test_typed_timeouts_are_parsed_with_their_unit(kb: SignatureSet) -> None:
    from denpex_fast.analysis.causal import _stall_start, build_events

    line = (
        "RuntimeError: Timed out initializing process group in store based barrier on rank 3, "
        "for key: store_based_barrier_key:1 (world_size=8, num_workers_joined=7, timeout=0:30:00)"
    )
    ev = build_events(
        pa.table(
            {
                "file": ["a.log"],
                "line": pa.array([1], pa.uint64()),
                "signature": ["torch-store-based-barrier-timeout"],
                "text": [line],
                "rank": pa.array([3], pa.int32()),
                "host": pa.array(["n"]),
                "ts": pa.array(
                    [datetime(2024, 5, 1, 12, 30, tzinfo=timezone.utc)],
                    pa.timestamp("us", tz="UTC"),
                ),
            }
        ),
        kb,
    )
    ev[0].t = ev[0].ts.timestamp()
    start, _ = _stall_start(ev)
    assert start == ev[0].t - 1800


COLLECTED = (
    "2024-05-01T12:00:00.123456789Z stderr F ",  # kubelet's CRI files
    "2024-05-01T12:00:00.123456+00:00 ",  # kubectl logs --timestamps
    "trainer-1  | ",  # docker compose logs
    "[pod/job-worker-0/trainer] ",  # kubectl logs --prefix
    "(VLLMInferenceEngine pid=132934) ",  # a Ray worker's line on the driver
    "\x1b[36m(RayWorkerWrapper pid=1061, ip=10.0.0.2)\x1b[0m ",  # the same, coloured
)


def test_entries_anchored_at_the_line_start_match_the_same_lines_behind_a_collectors_prefix(
    kb: SignatureSet, scanner: Any
) -> None:
    """A line written by a process and collected from a cluster carries the
    collector's prefix; an entry anchored with ``^`` still finds it there."""
    anchored = [s for s in kb if any(scan_forms(p) != [p] for p in s.patterns)]
    assert len(anchored) >= 5
    lines: list[tuple[str, str]] = []
    for sig in anchored:
        for text in sig.examples_match:
            lines += [(sig.id, prefix + text) for prefix in COLLECTED]
    table = scanner.scan_bytes("\n".join(t for _, t in lines).encode() + b"\n")
    hits = set(zip(table.column("line").to_pylist(), table.column("signature").to_pylist()))
    missed = [t for n, (sid, t) in enumerate(lines, 1) if (n, sid) not in hits]
    assert not missed, missed[:5]
    assert len(scan_forms("^ValueError$")) == 2
    assert all(f.startswith("(?i)^(?:") for f in scan_forms("(?i)^error "))
    assert scan_forms("(?:^|\\s)ValueError") == ["(?:^|\\s)ValueError"]  # not a leading anchor
