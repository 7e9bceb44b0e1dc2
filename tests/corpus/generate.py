"""Generate the labelled corpus of real failing (and healthy) distributed jobs.

Each case launches a tiny data-parallel job (``tests/corpus/worker.py``) on the CPU
with ``torchrun`` (gloo backend) -- one agent with 4 workers, or two agents on this
machine acting as two nodes with 2 workers each -- with one real fault switched on,
keeps the log files exactly as written, replaces machine-specific strings by fixed
placeholders (one pass, see ``PLACEHOLDERS`` / tests/corpus/README.md), locates the
first causal line and the downstream lines automatically, and writes ``truth.json``.

Usage::

    python -m tests.corpus.generate --out tests/corpus/cases
    python tests/corpus/generate.py --out /tmp/corpus --cases sys-exit-3,healthy-single
    python tests/corpus/generate.py --list
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import shutil
import signal
import site
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DEFAULT_OUT = HERE / "cases"
SCHEMA = "denpex.truth/1"

NODE1_CLOCK_OFFSET_S = 3.5
PG_TIMEOUT_S = 20  # gloo collective timeout given to init_process_group

# ---------------------------------------------------------------------------
# Case table
# ---------------------------------------------------------------------------


@dataclasses.dataclass
class Find:
    """Where to look for a line: ``where`` is "rank" (the per-rank stderr.log of the
    faulted rank), "last-progress" (that file's last step line), or "console" (the
    captured torchrun console of ``node``), or "last-own" (the faulted rank's last
    own log line, ``rank=R train: ...``, before the first line matching ``pattern``
    if one is given: the line it printed before it stalled or fell behind).
    ``pattern`` may use {rank}, {local_rank}, {pid} and {code} (the exit code) of the
    faulted rank."""

    where: str
    pattern: str = ""
    node: int = 0


@dataclasses.dataclass
class Case:
    name: str
    title: str
    healthy: bool = False
    fault: str = "none"
    fault_rank: int = -1
    fault_step: int = 5
    nnodes: int = 1  # 1: one agent, 4 workers; 2: two agents, 2 workers each
    workers: int = 0  # DataLoader worker processes per rank
    ckpt_every: int = 6  # rank 0 writes a checkpoint every N steps (0: never)
    ckpt_setup: str = ""  # "", "ro-bind" (read-only bind mount), "tmpfs-full" (tiny tmpfs)
    rdzv: str = "ok"  # "ok", "missing-node" (node 1 never starts), "wrong-port" (node 1)
    extra_worker_args: tuple[str, ...] = ()
    find: tuple[Find, ...] = ()
    signature_hint: str = ""
    root_cause: str = ""
    fix: str = ""
    notes: str = ""
    timeout_s: float = 90.0
    requires: str = ""  # "unshare" (private mount namespace), "deepspeed" or "mpirun"
    script: str = "worker.py"
    # Launcher x fault matrix (cases 025 on):
    launcher: str = "torchrun"  # "torchrun", "deepspeed" (the deepspeed CLI) or "mpirun" (Open MPI)
    verdict: str = ""  # truth's expected_verdict; "" leaves the key out (cases 001-024)
    log_start: bool = False  # workers log a "worker starting" line before joining
    exit_code: int = 3  # for fault "exit"
    cut_at_step: int = 0  # healthy run whose logs are cut before the first line of this step
    family_name: str = ""

    @property
    def family(self) -> str:
        if self.family_name:
            return self.family_name
        if self.script == "ds_worker.py":
            return "deepspeed-zero2"
        if self.nnodes == 2:
            return "multi-node"
        return "single-node-dataloader-workers" if self.workers else "single-node"


def _exc(pattern: str) -> tuple[Find, ...]:
    return (Find("rank", pattern),)


CASES: list[Case] = [
    Case(
        "healthy-single",
        "healthy control: 1 node x 4 ranks, DDP, checkpoint every 6 steps",
        healthy=True,
        root_cause="none (healthy run)",
        fix="none",
        notes="Control run for the single-node family (the ckpt-*, shape, data, memory, signal and NaN cases run this same job).",
    ),
    Case(
        "healthy-single-dlworkers",
        "healthy control: 1 node x 4 ranks, 2 DataLoader worker processes per rank",
        healthy=True,
        workers=2,
        root_cause="none (healthy run)",
        fix="none",
        notes="Control run for the DataLoader-worker family (dataloader-segfault, dataloader-sigkill).",
    ),
    Case(
        "healthy-multinode",
        "healthy control: 2 nodes (two torchrun agents, c10d rendezvous) x 2 ranks",
        healthy=True,
        nnodes=2,
        root_cause="none (healthy run)",
        fix="none",
        notes="Control run for the multi-node family. node1's worker log timestamps are shifted by +3.5 s.",
    ),
    Case(
        "shape-mismatch-init",
        "rank 2 builds its first Linear with in_features=17 instead of 16",
        fault="shape_mismatch_init",
        fault_rank=2,
        find=_exc(r"RuntimeError: \[\d+\]: params\[\d+\] in this process with sizes"),
        signature_hint="DDP parameter shape mismatch across ranks RuntimeError (params[0] sizes do not match process 0)",
        root_cause="Rank 2 constructed a different model (nn.Linear(17, 512) instead of nn.Linear(16, 512)); "
        "DistributedDataParallel's constructor verifies parameter shapes across ranks and rank 2 raised.",
        fix="Build the identical model on every rank (derive in_features from the shared config, not from rank-local data).",
        notes="Ranks 1 and 3 pass DDP construction and later fail or are terminated; rank 0 sees the peer close during the parameter broadcast.",
    ),
    Case(
        "dataset-index-error",
        "rank 1's data shard is shorter than the sampler's index range",
        fault="dataset_index_error",
        fault_rank=1,
        find=_exc(r"IndexError: list index out of range"),
        signature_hint="IndexError in Dataset.__getitem__ (list index out of range)",
        root_cause="Rank 1's Dataset reports more samples (__len__) than it holds; at step 5 the DistributedSampler "
        "hands it an index past the end and __getitem__ raises IndexError.",
        fix="Make __len__ agree with the stored rows (validate shard sizes before training).",
    ),
    Case(
        "rlimit-as-alloc",
        "rank 3 runs under RLIMIT_AS (VmSize + 256 MiB) and allocates a 4 GiB tensor",
        fault="rlimit_as_alloc",
        fault_rank=3,
        find=_exc(r"DefaultCPUAllocator: can't allocate memory"),
        signature_hint="host memory allocation failure RuntimeError (DefaultCPUAllocator: can't allocate memory, Error code 12)",
        root_cause="Rank 3's 4 GiB allocation exceeded its address-space limit (RLIMIT_AS), so the CPU allocator failed with ENOMEM.",
        fix="Reduce the allocation (batch/activation size) or raise the memory limit for the job.",
    ),
    Case(
        "collective-timeout-hang",
        "rank 1 stalls (sleeps) inside step 5; peers' gloo allreduce times out after 20 s",
        fault="hang",
        fault_rank=1,
        find=(Find("last-progress"),),
        signature_hint="rank stopped making progress (no exception on the hung rank); peers hit gloo 'Timed out waiting 20000ms'",
        root_cause="Rank 1 stopped inside step 5 before its backward pass, so the other ranks' DDP gradient allreduce "
        "waited for it until the 20 s process-group timeout expired.",
        fix="Find what rank 1 was blocked on (py-spy dump of the hung rank); the collective timeouts on the other ranks are consequences.",
        notes="The hung rank prints nothing about the hang: its last progress line is the initiating evidence; "
        "torchrun later SIGTERMs it.",
    ),
    Case(
        "sigkill-rank",
        "rank 2 is killed by SIGKILL at step 5",
        fault="sigkill",
        fault_rank=2,
        find=(
            Find("console", r"failed \(exitcode: -9\) local_rank: {local_rank} \(pid: {pid}\)"),
            Find("console", r"Signal 9 \(SIGKILL\) received by PID {pid}"),
        ),
        signature_hint="worker killed by signal 9 (SIGKILL), exitcode -9 (as the host OOM killer would)",
        root_cause="Rank 2 was killed by SIGKILL (no Python traceback can be printed); its peers lost the gloo connection.",
        fix="Find who sent SIGKILL (kernel OOM killer in dmesg, the scheduler, a watchdog) and address it (memory, limits).",
        notes="The worker cannot log its own SIGKILL; the first line recording it is the torchrun agent's.",
    ),
    Case(
        "sys-exit-3",
        "rank 1 calls sys.exit(3) at step 5",
        fault="exit3",
        fault_rank=1,
        find=(
            Find("console", r"failed \(exitcode: 3\) local_rank: {local_rank} \(pid: {pid}\)"),
            Find("console", r"exitcode\s*: 3 \(pid: {pid}\)"),
        ),
        signature_hint="worker exited with code 3 (sys.exit, no traceback)",
        root_cause="Rank 1 exited with status 3 (sys.exit(3)) in the middle of training; its peers lost the gloo connection.",
        fix="Find the code path on rank 1 that calls sys.exit/exit(3) and make it raise or log the reason.",
        notes="sys.exit prints nothing; the first line recording it is the torchrun agent's.",
    ),
    Case(
        "nan-anomaly",
        "anomaly detection on; rank 1 takes log() of negative inputs at step 5",
        fault="nan_anomaly",
        fault_rank=1,
        extra_worker_args=("--no-finite-check",),
        find=_exc(r"UserWarning: Error detected in \w+Backward\d*\."),
        signature_hint="autograd anomaly detection: Function '...Backward0' returned nan values",
        root_cause="Rank 1's step-5 batch had negative raw values; torch.log produced NaN in the forward pass and "
        "torch.autograd.set_detect_anomaly(True) raised in backward ('returned nan values').",
        fix="Clamp or validate inputs before log (e.g. log1p of a non-negative value) and find the bad records in rank 1's shard.",
        notes="Anomaly mode names the first backward node whose output is NaN (the loss node here), "
        "since the NaN entered through the non-differentiable input transform.",
    ),
    Case(
        "nan-isfinite",
        "rank 3's step-5 inputs overflow float32; the isfinite(loss) guard raises",
        fault="nan_isfinite",
        fault_rank=3,
        find=_exc(r"FloatingPointError: non-finite loss"),
        signature_hint="non-finite loss FloatingPointError (isfinite guard)",
        root_cause="Rank 3's step-5 inputs were scaled to ~3e38, overflowing float32 activations; the loss became non-finite "
        "and the training loop's torch.isfinite check raised.",
        fix="Fix the input scaling/normalisation for rank 3's data; keep the guard.",
    ),
    Case(
        "dataloader-segfault",
        "a DataLoader worker process of rank 2 dereferences NULL (SIGSEGV)",
        fault="dl_segfault",
        fault_rank=2,
        workers=2,
        find=(
            Find("rank", r"ERROR: Unexpected segmentation fault encountered in worker"),
            Find("rank", r"DataLoader worker \(pid \d+\) is killed by signal: Segmentation fault"),
        ),
        signature_hint="DataLoader worker segmentation fault (killed by signal: Segmentation fault)",
        root_cause="Native code called from Dataset.__getitem__ in a DataLoader worker of rank 2 segfaulted; "
        "the main process raised 'DataLoader worker (pid N) is killed by signal: Segmentation fault'.",
        fix="Reproduce with num_workers=0 and faulthandler enabled to find the crashing native call in the data pipeline.",
        notes="The SIGSEGV handler message is written by the worker process into the rank's stderr; it can carry NUL bytes.",
    ),
    Case(
        "dataloader-sigkill",
        "a DataLoader worker process of rank 1 is killed by SIGKILL",
        fault="dl_sigkill",
        fault_rank=1,
        workers=2,
        find=(
            Find(
                "rank",
                r"DataLoader worker \(pid\(?s?\)? ?\d+\)? .*(killed by signal|exited unexpectedly)",
            ),
        ),
        signature_hint="DataLoader worker killed by signal: Killed (SIGKILL, e.g. host OOM killer)",
        root_cause="A DataLoader worker of rank 1 received SIGKILL; the rank's main process raised when it noticed.",
        fix="Check dmesg for the OOM killer; reduce num_workers/prefetch or per-worker memory.",
    ),
    Case(
        "ckpt-readonly-fs",
        "rank 0's checkpoint directory is a read-only bind mount (EROFS)",
        fault="ckpt_write",
        fault_rank=0,
        ckpt_setup="ro-bind",
        requires="unshare",
        find=_exc(r"(Read-only file system|cannot be opened|failed writing)"),
        signature_hint="checkpoint write failed: read-only file system (EROFS)",
        root_cause="The checkpoint directory is mounted read-only; torch.save on rank 0 failed at step 6.",
        fix="Point the checkpoint directory at a writable volume (check the mount options), then resume.",
        notes="Run inside a private mount namespace (unshare -m) where the checkpoint directory is bind-mounted read-only.",
    ),
    Case(
        "ckpt-disk-full",
        "rank 0's checkpoint directory is a 64 KiB tmpfs (ENOSPC)",
        fault="ckpt_write",
        fault_rank=0,
        ckpt_setup="tmpfs-full",
        requires="unshare",
        find=_exc(
            r"(No space left|iostream error|failed writing|unexpected pos|file write failed)"
        ),
        signature_hint="checkpoint write failed: no space left on device (ENOSPC)",
        root_cause="The checkpoint file system is full (a 64 KiB tmpfs; the checkpoint is ~130 KB); torch.save on rank 0 failed.",
        fix="Free space or point checkpoints at a larger volume; keep fewer checkpoints.",
        notes="Run inside a private mount namespace (unshare -m) with a 64 KiB tmpfs mounted on the checkpoint directory.",
    ),
    Case(
        "ckpt-file-too-large",
        "rank 0 writes its checkpoint under RLIMIT_FSIZE=64 KiB (EFBIG)",
        fault="ckpt_efbig",
        fault_rank=0,
        find=_exc(
            r"(File too large|iostream error|failed writing|unexpected pos|file write failed)"
        ),
        signature_hint="checkpoint write failed: file size limit (EFBIG, File too large)",
        root_cause="Rank 0 ran with a 64 KiB file-size limit (RLIMIT_FSIZE); the ~130 KB checkpoint write failed.",
        fix="Raise the file-size limit (ulimit -f) for the job.",
        notes="CPython ignores SIGXFSZ, so the write returns EFBIG instead of killing the process.",
    ),
    Case(
        "rdzv-missing-node",
        "2-node job where node 1's agent never starts; c10d join times out (join_timeout=15)",
        nnodes=2,
        rdzv="missing-node",
        find=(Find("console", r"^[\w.]*RendezvousTimeoutError", node=0),),
        signature_hint="torchrun c10d rendezvous join timeout (RendezvousTimeoutError)",
        root_cause="Only one of the two expected nodes joined the rendezvous; the agent on node0 gave up after join_timeout.",
        fix="Start the missing node (check the scheduler allocation and that every node runs torchrun with the same --rdzv-id/endpoint).",
        notes="Node 1 writes no logs at all; the initiating line is node0's agent error. No worker starts.",
        timeout_s=60,
    ),
    Case(
        "rdzv-wrong-port",
        "2-node job where node 1's agent uses the wrong rendezvous port",
        nnodes=2,
        rdzv="wrong-port",
        find=(
            Find(
                "console",
                r"(DistNetworkError|RendezvousConnectionError|timed out|Connection refused)",
                node=1,
            ),
        ),
        signature_hint="c10d rendezvous store unreachable from one node (client socket timed out / connection refused)",
        root_cause="Node 1's agent was given a wrong --rdzv-endpoint port (nothing listens there), so it could not reach "
        "the rendezvous store; node 0 waited for it until its join timeout.",
        fix="Use the same --rdzv-endpoint host:port on every node.",
        notes="Node 1 runs with --rdzv-conf is_host=false so it only connects as a client.",
        timeout_s=60,
    ),
    Case(
        "mn-shape-mismatch-forward",
        "2 nodes; rank 3 (node1) gets a batch with 17 features at step 5: matmul shape error",
        fault="shape_mismatch_forward",
        fault_rank=3,
        nnodes=2,
        find=_exc(r"RuntimeError: mat1 and mat2 shapes cannot be multiplied"),
        signature_hint="shape mismatch RuntimeError (mat1 and mat2 shapes cannot be multiplied)",
        root_cause="Rank 3's step-5 batch had 17 features instead of 16, so the first Linear raised a shape mismatch.",
        fix="Fix the data pipeline on the node that produces the extra column; assert the feature width when loading.",
        notes="node1's worker log timestamps are shifted by +3.5 s (clock skew).",
    ),
    Case(
        "mn-collective-timeout-hang",
        "2 nodes; rank 1 (node0) stalls; ranks on node1 (clock +3.5 s) time out in allreduce",
        fault="hang",
        fault_rank=1,
        nnodes=2,
        find=(Find("last-progress"),),
        signature_hint="rank stopped making progress; peers hit gloo 'Timed out waiting 20000ms'",
        root_cause="Rank 1 stopped inside step 5; its peers' gradient allreduce waited until the 20 s timeout.",
        fix="Find what rank 1 was blocked on (py-spy dump); the timeouts elsewhere are consequences.",
        notes="node1's worker log timestamps are shifted by +3.5 s, so its timeout lines look later than they were.",
    ),
    Case(
        "mn-sigkill",
        "2 nodes; rank 2 (node1) is killed by SIGKILL at step 5",
        fault="sigkill",
        fault_rank=2,
        nnodes=2,
        find=(
            Find(
                "console",
                r"failed \(exitcode: -9\) local_rank: {local_rank} \(pid: {pid}\)",
                node=1,
            ),
            Find("console", r"Signal 9 \(SIGKILL\) received by PID {pid}", node=1),
        ),
        signature_hint="worker killed by signal 9 (SIGKILL), exitcode -9",
        root_cause="Rank 2 on node1 was killed by SIGKILL; every other rank lost its gloo connection.",
        fix="Find who sent SIGKILL on node1 (OOM killer, scheduler) and address it.",
        notes="node1's worker log timestamps are shifted by +3.5 s.",
    ),
]

CASES += [
    Case(
        "healthy-ds-zero2",
        "healthy control: DeepSpeed ZeRO stage 2 on the CPU accelerator, 1 node x 4 ranks",
        healthy=True,
        script="ds_worker.py",
        ckpt_every=0,
        requires="deepspeed",
        root_cause="none (healthy run)",
        fix="none",
        notes="Control run for the DeepSpeed family (torch_adam optimizer, gloo collectives).",
        timeout_s=240,
    ),
    Case(
        "ds-zero2-batch-config",
        "DeepSpeed ZeRO-2; rank 1's config has train_batch_size=48 for a 4-rank job (8 x 1 x 4 = 32)",
        fault="ds_batch_config",
        fault_rank=1,
        script="ds_worker.py",
        ckpt_every=0,
        requires="deepspeed",
        find=_exc(r"AssertionError: Check batch related parameters"),
        signature_hint="DeepSpeed batch config AssertionError (train_batch_size != micro_batch * grad_acc * world_size)",
        root_cause="Rank 1 read a DeepSpeed config whose train_batch_size (48) does not equal "
        "train_micro_batch_size_per_gpu * gradient_accumulation_steps * world_size (8 * 1 * 4); "
        "deepspeed.initialize's config check raised on that rank.",
        fix="Give every rank the same config and set train_batch_size = micro_batch * grad_accum * world_size "
        "(or leave train_batch_size out and let DeepSpeed derive it).",
        timeout_s=240,
    ),
    Case(
        "ds-zero2-shape-mismatch-forward",
        "DeepSpeed ZeRO-2; rank 2's step-5 batch has 17 features: matmul shape error",
        fault="shape_mismatch_forward",
        fault_rank=2,
        script="ds_worker.py",
        ckpt_every=0,
        requires="deepspeed",
        find=_exc(r"RuntimeError: mat1 and mat2 shapes cannot be multiplied"),
        signature_hint="shape mismatch RuntimeError (mat1 and mat2 shapes cannot be multiplied) under DeepSpeed ZeRO-2",
        root_cause="Rank 2's step-5 batch had 17 features instead of 16, so the first Linear raised in forward "
        "while its peers waited in ZeRO-2's gradient reduction.",
        fix="Fix the data pipeline that adds the extra column; assert the feature width when loading.",
        timeout_s=240,
    ),
]

# ---------------------------------------------------------------------------
# Launcher x fault matrix (025 on): every launcher that runs here, every fault
# kind, a different target rank for each fault on each launcher
# ---------------------------------------------------------------------------

LAUNCHERS = {
    # key: (case-name prefix, family, description, Case keyword arguments)
    "tr1n": (
        "tr1n",
        "torchrun-single-node",
        "torchrun, 1 node x 4 ranks",
        {"launcher": "torchrun", "nnodes": 1},
    ),
    "tr2n": (
        "tr2n",
        "torchrun-multi-node",
        "torchrun, 2 nodes (two agents, c10d rendezvous) x 2 ranks",
        {"launcher": "torchrun", "nnodes": 2},
    ),
    "dsl": (
        "dsl",
        "deepspeed-launcher",
        "deepspeed CLI, 1 node x 4 ranks, ZeRO-2 on the CPU accelerator",
        {
            "launcher": "deepspeed",
            "script": "ds_worker.py",
            "ckpt_every": 0,
            "requires": "deepspeed",
            "timeout_s": 240,
            "extra_worker_args": ("--group-timeout",),
        },
    ),
    "mpi": (
        "mpi",
        "mpirun",
        "mpirun (Open MPI), 1 node x 4 ranks, env:// from OMPI_COMM_WORLD_*",
        {"launcher": "mpirun", "requires": "mpirun"},
    ),
}
MATRIX_FAULTS = ("sigkill", "sys-exit", "oom-alloc", "hang", "straggler", "never-joins")
EXIT_CODES = {"tr1n": 2, "tr2n": 7, "dsl": 5, "mpi": 4}


def matrix_rank(launcher: str, fault: str) -> int:
    """A Latin square: each fault hits a different rank on each launcher.

    ``CORPUS_RANK_SHIFT=N`` in the environment shifts every target rank by N
    (a held-out variant of the matrix: same faults, other ranks).
    """
    shift = int(os.environ.get("CORPUS_RANK_SHIFT", "0"))
    return (MATRIX_FAULTS.index(fault) + list(LAUNCHERS).index(launcher) + 3 + shift) % 4


def _node_of(launcher: str, rank: int) -> str:
    return f" (node{rank // 2})" if launcher == "tr2n" else ""


def _matrix_case(lk: str, fault: str) -> Case:
    prefix, family, desc, kw = LAUNCHERS[lk]
    r = matrix_rank(lk, fault)
    on = f"rank {r}{_node_of(lk, r)}"
    node = (r // 2) if lk == "tr2n" else 0
    code = EXIT_CODES[lk]
    base: dict[str, Any] = dict(kw, family_name=family, log_start=True, fault_rank=r)
    skew = " node1's worker log timestamps are shifted by +3.5 s." if lk == "tr2n" else ""
    if fault == "sigkill":
        if lk in ("tr1n", "tr2n"):
            find = (
                Find(
                    "console",
                    r"failed \(exitcode: -9\) local_rank: {local_rank} \(pid: {pid}\)",
                    node=node,
                ),
                Find("console", r"Signal 9 \(SIGKILL\) received by PID {pid}", node=node),
            )
            first = "the torchrun agent's"
        elif lk == "dsl":
            find = (Find("console", r"exits with return code = -9"),)
            first = "the deepspeed launcher's"
        else:
            find = (
                Find(
                    "console",
                    r"mpirun noticed that process rank {rank} with PID \d+ on node \S+ exited on signal 9",
                ),
            )
            first = "mpirun's"
        return Case(
            f"{prefix}-sigkill",
            f"{on} is killed by SIGKILL at step 5 ({desc})",
            fault="sigkill",
            find=find,
            signature_hint="worker killed by signal 9 (SIGKILL), exit code -9 / signal 9 (Killed)",
            root_cause=f"Rank {r} was killed by SIGKILL (no Python traceback can be printed); its peers lost the gloo connection.",
            fix="Find who sent SIGKILL (kernel OOM killer in dmesg, the scheduler, a watchdog) and address it.",
            notes=f"The worker cannot log its own SIGKILL; the first line recording it is {first}."
            + skew
            + (
                " DeepSpeed's launcher prints the command line of the last rank it spawned (--local_rank=3) in its "
                "'exits with return code' line, whichever rank failed."
                if lk == "dsl"
                else ""
            ),
            verdict="failure",
            **base,
        )
    if fault == "sys-exit":
        base["extra_worker_args"] = (*base.get("extra_worker_args", ()), "--exit-code", str(code))
        if lk in ("tr1n", "tr2n"):
            find = (
                Find(
                    "console",
                    r"failed \(exitcode: {code}\) local_rank: {local_rank} \(pid: {pid}\)",
                    node=node,
                ),
                Find("console", r"exitcode\s*: {code} \(pid: {pid}\)", node=node),
            )
            first = "the torchrun agent's"
        elif lk == "dsl":
            find = (Find("console", r"exits with return code = {code}$"),)
            first = "the deepspeed launcher's"
        else:
            find = (Find("console", r"Process name:\s+\[\[\d+,\d+\],{rank}\]"),)
            first = "mpirun's (the 'Process name: [[job,1],rank]' line of its report; 'Exit code' follows)"
        return Case(
            f"{prefix}-sys-exit",
            f"{on} calls sys.exit({code}) at step 5 ({desc})",
            fault="exit",
            exit_code=code,
            find=find,
            signature_hint=f"worker exited with code {code} (sys.exit, no traceback)",
            root_cause=f"Rank {r} exited with status {code} (sys.exit({code})) in the middle of training; its peers lost the gloo connection.",
            fix=f"Find the code path on rank {r} that calls sys.exit({code}) and make it raise or log the reason.",
            notes=f"sys.exit prints nothing; the first line recording it is {first}."
            + skew
            + (
                " DeepSpeed's launcher prints the command line of the last rank it spawned (--local_rank=3) in its "
                "'exits with return code' line, whichever rank failed."
                if lk == "dsl"
                else ""
            ),
            verdict="failure",
            **base,
        )
    if fault == "oom-alloc":
        return Case(
            f"{prefix}-oom-alloc",
            f"{on} runs under RLIMIT_AS (VmSize + 256 MiB) and allocates 4 GiB ({desc})",
            fault="rlimit_as_alloc",
            find=_exc(r"DefaultCPUAllocator: can't allocate memory"),
            signature_hint="host memory allocation failure RuntimeError (DefaultCPUAllocator: can't allocate memory, Error code 12)",
            root_cause=f"Rank {r}'s 4 GiB allocation exceeded its address-space limit (RLIMIT_AS), so the CPU allocator failed with ENOMEM.",
            fix="Reduce the allocation (batch/activation size) or raise the memory limit for the job.",
            notes=(
                "The kernel OOM killer is not used (see the README); this is the allocation-failure side of memory exhaustion."
                + skew
            ),
            verdict="failure",
            **base,
        )
    if fault == "hang":
        return Case(
            f"{prefix}-hang",
            f"{on} stalls (sleeps, silently) inside step 5; peers' collective times out after 20 s ({desc})",
            fault="hang",
            find=(Find("last-own"),),
            signature_hint="rank stopped making progress (no exception, no output on the hung rank); peers hit gloo 'Timed out waiting 20000ms'",
            root_cause=f"Rank {r} stopped inside step 5 before its backward pass, so the other ranks' gradient collective "
            "waited for it until the 20 s process-group timeout expired.",
            fix=f"Find what rank {r} was blocked on (py-spy dump of the hung rank); the collective timeouts on the other ranks are consequences.",
            notes="The hung rank prints nothing after its step=4 line; that last line is the initiating evidence. "
            "The launcher later terminates it." + skew,
            verdict="suspect",
            **base,
        )
    if fault == "straggler":
        return Case(
            f"{prefix}-straggler",
            f"{on} computes for 60 s inside step 5, logging progress every ~2 s; peers' collective times out after 20 s ({desc})",
            fault="slow",
            find=(Find("last-own", r"still computing step="),),
            signature_hint="straggler rank: still computing (progress lines) when the peers' 20 s collective timeout expired",
            root_cause=f"Rank {r} spent far longer than the others in step 5 (real CPU work, still running and logging "
            "'still computing' lines); the other ranks' gradient collective timed out waiting for it after 20 s.",
            fix=f"Find why rank {r} is slow (uneven work, a slow host, CPU contention) or raise the collective timeout; "
            "the timeouts on the other ranks are consequences.",
            notes="Unlike a hang, the slow rank keeps printing progress until the launcher ends it; the initiating "
            "line is its last own line before it fell behind (its step=4 line)." + skew,
            verdict="suspect",
            **base,
        )
    if fault == "never-joins":
        return Case(
            f"{prefix}-never-joins",
            f"{on} starts but never joins the process group (never calls init_process_group) ({desc})",
            fault="never_join",
            find=(Find("last-own"),),
            signature_hint="rank never joined the process group / store rendezvous; the others time out in init_process_group",
            root_cause=f"Rank {r} started (it logged 'worker starting') but never reached init_process_group, so the others "
            "waited at the store rendezvous until the 20 s timeout expired.",
            fix=f"Find what rank {r} was doing before joining (blocked on I/O, a lock, a slow import) ; the others' "
            "rendezvous timeouts are consequences.",
            notes="The missing rank's only line is its 'worker starting' line; it is the initiating evidence."
            + skew,
            verdict="suspect",
            **base,
        )
    raise ValueError(fault)


def _matrix_cases() -> list[Case]:
    out: list[Case] = []
    for lk, (prefix, family, desc, kw) in LAUNCHERS.items():
        out.append(
            Case(
                f"{prefix}-healthy",
                f"healthy control: {desc}",
                healthy=True,
                root_cause="none (healthy run)",
                fix="none",
                notes=f"Control run for the {family} family of the launcher x fault matrix.",
                verdict="no-failure-found",
                family_name=family,
                log_start=True,
                **kw,
            )
        )
        out += [_matrix_case(lk, f) for f in MATRIX_FAULTS]
    prefix, family, desc, kw = LAUNCHERS["tr1n"]
    out.append(
        Case(
            "tr1n-healthy-cut",
            f"healthy run ({desc}) whose logs are cut before step 7 of 12",
            fault="none",
            cut_at_step=7,
            root_cause="none: the run was healthy; its logs end mid-run (cut before step 7, no error, no completion line)",
            fix="none: look for why the logs stop (the job may still be running, or the log collection stopped)",
            notes="Every kept file is truncated at the first line of step 7 of its rank (whole lines); the agent's "
            "completion lines are gone. last_line is the console's last line.",
            verdict="stopped",
            family_name=family,
            log_start=True,
            **kw,
        )
    )
    return out


CASES += _matrix_cases()

# Where to resume: checkpoints written before the fault (the report names the
# last one and says it is safe).
CASES.append(
    Case(
        "ckpt-before-sigkill",
        "rank 0 checkpoints every 3 steps; rank 1 is killed by SIGKILL at step 8 (after the step-6 checkpoint)",
        fault="sigkill",
        fault_rank=1,
        fault_step=8,
        ckpt_every=3,
        find=(
            Find("console", r"failed \(exitcode: -9\) local_rank: {local_rank} \(pid: {pid}\)"),
            Find("console", r"Signal 9 \(SIGKILL\) received by PID {pid}"),
        ),
        signature_hint="worker killed by signal 9 (SIGKILL); the last checkpoint (step 6) was written before it",
        root_cause="Rank 1 was killed by SIGKILL at step 8; rank 0 had written checkpoints at steps 3 and 6.",
        fix="Find who sent SIGKILL and address it; resume from the step-6 checkpoint, written before the kill.",
        notes="The resume point of this job is the step-6 checkpoint (safe: written before the fault).",
        verdict="failure",
    )
)

CASE_BY_NAME = {c.name: c for c in CASES}


def case_dirname(case: Case) -> str:
    return f"{CASES.index(case) + 1:03d}-{case.name}"


# ---------------------------------------------------------------------------
# Placeholders (one pass over every kept file)
# ---------------------------------------------------------------------------

PLACEHOLDERS = {
    "/CORPUS": "the temporary directory the case ran in (parent of the case directory)",
    "/SITE": "the Python site-packages directory",
    "/PYTHON": "the Python installation prefix (sys.prefix / sys.base_prefix)",
    "/REPO": "the repository checkout (so the worker is /REPO/tests/corpus/worker.py)",
    "/HOME": "the home directory of the user who ran the generator",
    "corpus-host": "the machine's host name (whole word only)",
}


def _replacements(run_root: Path) -> list[tuple[re.Pattern[bytes], bytes]]:
    literal: dict[str, str] = {}
    for sp in {
        *site.getsitepackages(),
        sysconfig.get_paths()["purelib"],
        sysconfig.get_paths()["platlib"],
    }:
        literal[os.path.realpath(sp)] = "/SITE"
        literal[sp] = "/SITE"
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        literal[os.path.realpath(prefix)] = "/PYTHON"
        literal[prefix] = "/PYTHON"
    literal[str(run_root)] = "/CORPUS"
    literal[os.path.realpath(run_root)] = "/CORPUS"
    literal[str(REPO)] = "/REPO"
    home = os.path.expanduser("~")
    if home not in ("/", ""):
        literal[home] = "/HOME"
    out: list[tuple[re.Pattern[bytes], bytes]] = []
    # Longest first, so /HOME never eats a path that /PYTHON or /SITE should take.
    for src in sorted(literal, key=len, reverse=True):
        out.append((re.compile(re.escape(src.encode()) + rb"(?![\w.-])"), literal[src].encode()))
    hosts = {socket.gethostname(), socket.gethostname().split(".")[0]}
    fqdn = socket.getfqdn()
    if fqdn not in ("localhost", "localhost.localdomain"):
        hosts.add(fqdn)
    for h in sorted((h for h in hosts if h and h != "localhost"), key=len, reverse=True):
        out.append(
            (re.compile(rb"(?<![\w-])" + re.escape(h.encode()) + rb"(?![\w-])"), b"corpus-host")
        )
    return out


def sanitize_tree(case_dir: Path, run_root: Path) -> None:
    """Replace machine-specific strings in every file under case_dir, in place.

    Every substitution is within a line, so line numbers never change."""
    reps = _replacements(run_root)
    for path in sorted(case_dir.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        new = data
        for pat, repl in reps:
            new = pat.sub(repl, new)
        if new != data:
            path.write_bytes(new)


# ---------------------------------------------------------------------------
# Running a case
# ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("torchrun")
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-m", "torch.distributed.run"]


def _kill_group(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            continue
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # stragglers left in the group (hung workers)
    except ProcessLookupError:
        pass


def _wrap_mount(cmd: list[str], case: Case, ckpt_dir: Path) -> list[str]:
    if case.ckpt_setup == "ro-bind":
        setup = f'mount --bind "{ckpt_dir}" "{ckpt_dir}" && mount -o remount,bind,ro "{ckpt_dir}"'
    elif case.ckpt_setup == "tmpfs-full":
        setup = f'mount -t tmpfs -o size=64k tmpfs "{ckpt_dir}"'
    else:
        return cmd
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        setup + ' && exec "$@"',
        "sh",
        *cmd,
    ]


def can_unshare_mount() -> tuple[bool, str]:
    if shutil.which("unshare") is None:
        return False, "unshare(1) not found"
    try:
        r = subprocess.run(
            [
                "unshare",
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                "d=$(mktemp -d) && mount -t tmpfs -o size=4k tmpfs $d && umount $d && rmdir $d",
            ],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"{type(e).__name__}: {e}"
    if r.returncode != 0:
        return False, (r.stderr or r.stdout).strip() or f"exit {r.returncode}"
    return True, ""


def run_case(case: Case, run_root: Path, steps: int) -> tuple[Path, dict[str, Any]]:
    """Run one case under run_root/<NNN-name>; return the case dir and run facts."""
    case_dir = run_root / case_dirname(case)
    case_dir.mkdir(parents=True)
    ckpt_dir = run_root / "ckpt"  # outside the kept case dir: checkpoints are not logs
    ckpt_dir.mkdir()

    worker_args = [
        "--steps",
        str(steps),
        "--fault",
        case.fault,
        "--fault-rank",
        str(case.fault_rank),
        "--fault-step",
        str(case.fault_step),
        "--workers",
        str(case.workers),
        "--pg-timeout-s",
        str(PG_TIMEOUT_S),
        *case.extra_worker_args,
    ]
    if case.ckpt_every:
        worker_args += ["--ckpt-dir", str(ckpt_dir), "--ckpt-every", str(case.ckpt_every)]
    if case.log_start:
        worker_args.append("--log-start")
    if case.fault in ("ckpt_write", "ckpt_efbig"):
        worker_args[worker_args.index("--fault-step") + 1] = str(case.ckpt_every)

    env = dict(os.environ)
    env.update(
        {
            "TZ": "UTC",
            "PYTHONUNBUFFERED": "1",
            "GLOO_SOCKET_IFNAME": "lo",
            "OMP_NUM_THREADS": "1",
        }
    )
    for var in ("CORPUS_CLOCK_OFFSET_S", "CORPUS_HOST", "PYTHONFAULTHANDLER"):
        env.pop(var, None)

    port = free_port()
    agents: list[dict[str, Any]] = []
    if case.launcher == "deepspeed":
        # The deepspeed CLI on one host: it runs deepspeed.launcher.launch, which spawns the 4 ranks
        # (each gets --local_rank=N) and writes each rank's stdout+stderr to logs/<time>_rankN.log.
        agents.append(
            {
                "node": None,
                "cwd": case_dir,
                "env": {},
                "cmd": [
                    str(Path(sys.executable).with_name("deepspeed")),
                    "--num_gpus",
                    "4",
                    "--master_addr",
                    "127.0.0.1",
                    "--master_port",
                    str(port),
                    "--enable_each_rank_log",
                    "logs",
                    str(HERE / case.script),
                    *worker_args,
                ],
            }
        )
    elif case.launcher == "mpirun":
        # Open MPI on one host (fork, no ssh); the worker maps OMPI_COMM_WORLD_* to RANK/WORLD_SIZE
        # and rendezvouses through env:// (rank 0 hosts the TCPStore on MASTER_PORT).
        agents.append(
            {
                "node": None,
                "cwd": case_dir,
                "env": {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)},
                "cmd": [
                    "mpirun",
                    "--allow-run-as-root",
                    "--oversubscribe",
                    "-np",
                    "4",
                    "--tag-output",
                    "--output-filename",
                    "logs",
                    "--mca",
                    "oob_tcp_if_include",
                    "lo",
                    "-x",
                    "MASTER_ADDR",
                    "-x",
                    "MASTER_PORT",
                    "-x",
                    "TZ",
                    "-x",
                    "PYTHONUNBUFFERED",
                    "-x",
                    "GLOO_SOCKET_IFNAME",
                    "-x",
                    "OMP_NUM_THREADS",
                    sys.executable,
                    str(HERE / case.script),
                    *worker_args,
                ],
            }
        )
    elif case.nnodes == 1:
        agents.append(
            {
                "node": None,
                "cwd": case_dir,
                "env": {},
                "args": [
                    "--nnodes",
                    "1",
                    "--nproc-per-node",
                    "4",
                    "--rdzv-backend",
                    "c10d",
                    "--rdzv-endpoint",
                    f"127.0.0.1:{port}",
                    "--rdzv-id",
                    case.name,
                ],
            }
        )
    else:
        join_timeout = 15 if case.rdzv != "ok" else 60
        for node in (0, 1):
            if node == 1 and case.rdzv == "missing-node":
                continue
            ep_port = port
            conf = f"join_timeout={join_timeout}"
            if node == 1 and case.rdzv == "wrong-port":
                ep_port = free_port()
                while ep_port == port:
                    ep_port = free_port()
                conf += ",is_host=false,read_timeout=10"
            ndir = case_dir / f"node{node}"
            ndir.mkdir()
            agents.append(
                {
                    "node": node,
                    "cwd": ndir,
                    "env": {
                        "CORPUS_HOST": f"node{node}",
                        **(
                            {"CORPUS_CLOCK_OFFSET_S": str(NODE1_CLOCK_OFFSET_S)}
                            if node == 1
                            else {}
                        ),
                    },
                    "args": [
                        "--nnodes",
                        "2",
                        "--node-rank",
                        str(node),
                        "--nproc-per-node",
                        "2",
                        "--rdzv-backend",
                        "c10d",
                        "--rdzv-endpoint",
                        f"127.0.0.1:{ep_port}",
                        "--rdzv-id",
                        case.name,
                        "--rdzv-conf",
                        conf,
                        # Distinct node addresses make the c10d rank order follow the node index.
                        "--local-addr",
                        f"127.0.0.{node + 1}",
                    ],
                }
            )

    procs: list[tuple[dict[str, Any], subprocess.Popen, Any]] = []
    started = time.time()
    try:
        for i, agent in enumerate(agents):
            cmd = agent.get("cmd") or [
                *torchrun_cmd(),
                *agent["args"],
                "--max-restarts",
                "0",
                "--log-dir",
                "logs",
                "--tee",
                "3",
                "--redirects",
                "3",
                str(HERE / case.script),
                *worker_args,
            ]
            cmd = _wrap_mount(cmd, case, ckpt_dir)
            console = open(agent["cwd"] / "console.log", "wb")
            p = subprocess.Popen(
                cmd,
                cwd=agent["cwd"],
                env={**env, **agent["env"]},
                stdout=console,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            procs.append((agent, p, console))
            if i == 0 and len(agents) > 1:
                time.sleep(1.0)  # node0 hosts the rendezvous store
        deadline = started + case.timeout_s
        timed_out = False
        for _, p, _ in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                timed_out = True
        if timed_out:
            for _, p, _ in procs:
                _kill_group(p)
    finally:
        for _, p, console in procs:
            if p.poll() is None:
                _kill_group(p)
            else:
                try:  # reap anything the agent left behind in its group
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            console.close()
    facts = {
        "exit_codes": {
            ("node" + str(a["node"]) if a["node"] is not None else "node"): p.returncode
            for a, p, _ in procs
        },
        "seconds": round(time.time() - started, 1),
        "timed_out": timed_out,
    }
    shutil.rmtree(ckpt_dir, ignore_errors=True)
    return case_dir, facts


# ---------------------------------------------------------------------------
# Locating lines
# ---------------------------------------------------------------------------

INIT_RE = re.compile(r"rendezvous complete: .* rank=(\d+) local_rank=(\d+) .* pid=(\d+)")
START_RE = re.compile(r"worker starting: rank=(\d+) local_rank=(\d+) .* pid=(\d+)")
STEP_RE = re.compile(r"step=\d+ loss=")
# mpirun --tag-output puts "[1,R]<stderr>:" before every line of rank R.
TAG = r"(?:\[\d+,\d+\]<std(?:out|err)>:)?"
EXC_RE = re.compile(
    r"^" + TAG + r"(?:\[rank\d+\]: )?[A-Za-z_][\w.]*(?:Error|Exception|Interrupt)(?::|$)"
)
CONSOLE_DOWNSTREAM = (
    re.compile(r"closing signal SIGTERM"),
    re.compile(r"failed \(exitcode: "),
    re.compile(r"\bChildFailedError:"),
    re.compile(r"^[\w.]*Rendezvous\w*Error\b"),
    re.compile(r"^[\w.]*DistNetworkError\b"),
    re.compile(r"exits with return code = "),  # deepspeed launcher
    re.compile(r"^Primary job +terminated normally, but"),  # mpirun
    re.compile(r"^mpirun (?:detected|noticed) "),
)
# Per-rank log files: torchrun's stderr.log, mpirun --output-filename's .../rank.N/stderr,
# the deepspeed launcher's --enable_each_rank_log <time>_rankN.log.
RANK_FILE_GLOBS = ("stderr.log", "stderr", "*_rank[0-9]*.log")


def read_lines(path: Path) -> list[str]:
    """Lines as the tests compare them: UTF-8 with replacement, no line terminator."""
    return path.read_bytes().decode("utf-8", errors="replace").splitlines()


@dataclasses.dataclass
class RankFile:
    rank: int
    local_rank: int
    pid: int
    host: str
    node: int | None
    path: Path  # stderr.log


def rank_files(case_dir: Path) -> dict[int, RankFile]:
    out: dict[int, RankFile] = {}
    paths = sorted({p for g in RANK_FILE_GLOBS for p in case_dir.rglob(g) if p.is_file()})
    for path in paths:
        rel = path.relative_to(case_dir)
        node = int(rel.parts[0][4:]) if rel.parts[0].startswith("node") else None
        for line in read_lines(path):
            m = INIT_RE.search(line) or START_RE.search(line)
            if m:
                rank, lrank, pid = (int(g) for g in m.groups())
                host = f"node{node}" if node is not None else "corpus-host"
                out[rank] = RankFile(rank, lrank, pid, host, node, path)
                break
    return out


def console_files(case_dir: Path) -> dict[int | None, Path]:
    out: dict[int | None, Path] = {}
    for p in sorted(case_dir.rglob("console.log")):
        rel = p.relative_to(case_dir)
        out[int(rel.parts[0][4:]) if len(rel.parts) > 1 else None] = p
    return out


def _first(path: Path, pattern: re.Pattern[str]) -> tuple[int, str] | None:
    for i, line in enumerate(read_lines(path), start=1):
        if pattern.search(line):
            return i, line
    return None


def locate(case: Case, case_dir: Path) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    if case.healthy:
        return None, []
    ranks = rank_files(case_dir)
    consoles = console_files(case_dir)
    target = ranks.get(case.fault_rank)
    subs = {"rank": case.fault_rank, "code": case.exit_code}
    if target:
        subs.update(local_rank=target.local_rank, pid=target.pid)
    initiating = None
    for f in case.find:
        if f.where in ("rank", "last-progress", "last-own"):
            if target is None:
                continue
            if f.where == "rank":
                hit = _first(target.path, re.compile(f.pattern.format(**subs)))
            elif f.where == "last-own":
                own = re.compile(rf"\brank={target.rank} train: ")
                stop = re.compile(f.pattern.format(**subs)) if f.pattern else None
                hit = None
                for i, ln in enumerate(read_lines(target.path), 1):
                    if stop is not None and stop.search(ln):
                        break
                    if own.search(ln):
                        hit = (i, ln)
            else:
                hits = [
                    (i, ln) for i, ln in enumerate(read_lines(target.path), 1) if STEP_RE.search(ln)
                ]
                hit = hits[-1] if hits else None
            if hit:
                initiating = {
                    "rank": target.rank,
                    "host": target.host,
                    "path": target.path,
                    "hit": hit,
                }
                break
        else:
            cpath = consoles.get(f.node if case.nnodes == 2 else None)
            if cpath is None or ("{" in f.pattern and target is None):
                continue
            hit = _first(cpath, re.compile(f.pattern.format(**subs)))
            if hit:
                host = f"node{f.node}" if case.nnodes == 2 else "corpus-host"
                rank = case.fault_rank if case.fault_rank >= 0 else None
                if case.nnodes == 2 and target is not None:
                    host = target.host
                initiating = {"rank": rank, "host": host, "path": cpath, "hit": hit}
                break
    if initiating is None:
        raise RuntimeError(
            f"{case.name}: initiating line not found ({[f.pattern or f.where for f in case.find]})"
        )
    init = {
        "rank": initiating["rank"],
        "host": initiating["host"],
        "file": initiating["path"].relative_to(case_dir).as_posix(),
        "line": initiating["hit"][0],
        "text": initiating["hit"][1],
        "signature_hint": case.signature_hint,
    }
    downstream: list[dict[str, Any]] = []
    for rank in sorted(ranks):
        rf = ranks[rank]
        if rank == case.fault_rank:
            continue
        hit = _first(rf.path, EXC_RE)
        if hit:
            downstream.append(
                {
                    "rank": rank,
                    "host": rf.host,
                    "file": rf.path.relative_to(case_dir).as_posix(),
                    "line": hit[0],
                    "text": hit[1],
                }
            )
    for node, cpath in consoles.items():
        for pat in CONSOLE_DOWNSTREAM:
            hit = _first(cpath, pat)
            rel = cpath.relative_to(case_dir).as_posix()
            if hit and not (rel == init["file"] and hit[0] == init["line"]):
                downstream.append(
                    {
                        "rank": None,
                        "host": f"node{node}" if node is not None else "corpus-host",
                        "file": rel,
                        "line": hit[0],
                        "text": hit[1],
                    }
                )
    return init, downstream


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------


def cut_logs(case_dir: Path, cut_step: int) -> dict[str, Any]:
    """Truncate every file of a healthy run before its first line of step ``cut_step`` (whole
    lines, bytes kept as written); return the console's last remaining line."""
    cut_re = re.compile(rb"\bstep=(\d+) ")
    for path in sorted(case_dir.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        lines = data.splitlines(keepends=True)
        for i, line in enumerate(lines):
            m = cut_re.search(line)
            if m and int(m.group(1)) >= cut_step:
                path.write_bytes(b"".join(lines[:i]))
                break
    consoles = console_files(case_dir)
    cpath = consoles.get(None) or consoles[min(k for k in consoles if k is not None)]
    lines = read_lines(cpath)
    if not lines or re.search(r"complete|finished|SUCCEEDED", lines[-1]):
        raise RuntimeError(f"cut left no progress or a completion line in {cpath}")
    return {"file": cpath.relative_to(case_dir).as_posix(), "line": len(lines), "text": lines[-1]}


def _dist_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def versions(case: Case) -> dict[str, str]:
    out = {
        "torch": _dist_version("torch"),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    if case.requires == "deepspeed":
        out["deepspeed"] = _dist_version("deepspeed")
    if case.requires == "mpirun":
        out["mpirun"] = mpirun_version()
    return out


def mpirun_version() -> str:
    try:
        r = subprocess.run(["mpirun", "--version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return "not installed"
    return r.stdout.splitlines()[0].strip() if r.stdout else "unknown"


def keep_case(case_dir: Path, truth: dict[str, Any], dest: Path) -> None:
    """Write ``truth.json`` into a finished run's directory and copy it to ``dest``
    (replacing an earlier copy)."""
    (case_dir / "truth.json").write_text(json.dumps(truth, indent=2, ensure_ascii=False) + "\n")
    shutil.rmtree(dest, ignore_errors=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(case_dir, dest)


def generate_case(case: Case, out: Path, steps: int) -> dict[str, Any]:
    run_root = Path(tempfile.mkdtemp(prefix="denpex-corpus-"))
    try:
        case_dir, facts = run_case(case, run_root, steps)
        sanitize_tree(case_dir, run_root)
        if (case.healthy or case.cut_at_step) and any(
            code != 0 for code in facts["exit_codes"].values()
        ):
            raise RuntimeError(f"{case.name}: healthy control failed: {facts}")
        if case.verdict and facts["timed_out"]:
            # Matrix cases end by themselves (the faults' consequences, not the generator's kill).
            raise RuntimeError(f"{case.name}: hit the generator's hard timeout: {facts}")
        last_line = None
        if case.cut_at_step:
            last_line = cut_logs(case_dir, case.cut_at_step)
            initiating, downstream = None, []
        else:
            initiating, downstream = locate(case, case_dir)
        clock = (
            {"node1": NODE1_CLOCK_OFFSET_S}
            if case.nnodes == 2 and case.rdzv != "missing-node"
            else {}
        )
        notes = " ".join(
            x
            for x in (
                case.title[0].upper() + case.title[1:] + ".",
                case.notes,
                f"Agent exit codes: {json.dumps(facts['exit_codes'], sort_keys=True)}; wall time {facts['seconds']} s"
                + (" (hit the generator's hard timeout)." if facts["timed_out"] else "."),
            )
            if x
        )
        truth = {
            "schema": SCHEMA,
            "case": case_dirname(case),
            "source": "generated",
            "generator": f"tests/corpus/generate.py --cases {case.name}",
            "healthy": case.healthy,
            "family": case.family,
            "fault": case.fault if not case.rdzv or case.rdzv == "ok" else f"rdzv-{case.rdzv}",
            "initiating": initiating,
            "downstream": downstream,
            "root_cause": case.root_cause,
            "fix": case.fix,
            "clock_offsets_s": clock,
            "versions": versions(case),
            "notes": notes,
        }
        if case.verdict:
            truth["expected_verdict"] = case.verdict
        if last_line is not None:
            truth["last_line"] = last_line
        keep_case(case_dir, truth, out / case_dirname(case))
        return truth
    finally:
        shutil.rmtree(run_root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Generate the labelled corpus of real failing distributed jobs."
    )
    ap.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})"
    )
    ap.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    ap.add_argument("--steps", type=int, default=12, help="training steps per run (default 12)")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    args = ap.parse_args(argv)
    if args.list:
        for c in CASES:
            print(
                f"{case_dirname(c):34s} {c.family:31s} {c.title}"
                + (f" [target rank {c.fault_rank}]" if c.fault_rank >= 0 else "")
            )
        return 0
    names = [n.strip() for n in args.cases.split(",") if n.strip()] or [c.name for c in CASES]
    selected = []
    for n in names:
        n = re.sub(r"^\d{3}-", "", n)
        if n not in CASE_BY_NAME:
            ap.error(f"unknown case {n!r}; see --list")
        selected.append(CASE_BY_NAME[n])
    if args.steps < 7:
        ap.error("--steps must be at least 7 (faults fire at step 5, checkpoints at step 6)")
    unshare_ok, unshare_why = (True, "")
    if any(c.requires == "unshare" for c in selected):
        unshare_ok, unshare_why = can_unshare_mount()
    have_deepspeed = importlib.util.find_spec("deepspeed") is not None
    failed = 0
    for case in selected:
        if case.requires == "unshare" and not unshare_ok:
            print(f"SKIP {case.name}: needs a private mount namespace: {unshare_why}", flush=True)
            continue
        if case.requires == "deepspeed" and not have_deepspeed:
            print(f"SKIP {case.name}: deepspeed is not installed", flush=True)
            continue
        if case.requires == "mpirun" and shutil.which("mpirun") is None:
            print(
                f"SKIP {case.name}: mpirun (Open MPI, apt-get install openmpi-bin) not found",
                flush=True,
            )
            continue
        t0 = time.time()
        try:
            truth = generate_case(case, args.out.resolve(), args.steps)
        except Exception as e:  # keep going: report every case
            failed += 1
            print(f"FAIL {case.name}: {e}", flush=True)
            continue
        ini = truth["initiating"]
        where = f"{ini['file']}:{ini['line']} rank={ini['rank']}" if ini else "healthy"
        print(f"ok   {case_dirname(case)} ({time.time() - t0:.0f}s) {where}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
