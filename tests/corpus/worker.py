"""The training script that ``generate.py`` runs under ``torchrun``.

A tiny data-parallel job: a 2-layer MLP wrapped in DistributedDataParallel on the
gloo backend, a synthetic regression data set behind a DistributedSampler, Adam,
and an optional checkpoint. Every rank logs with Python ``logging`` to stderr
(timestamps like ``2024-05-01 12:00:00,123``): one rendezvous/init line, one line
per step (``step=12 loss=0.1234``), a heartbeat every few steps, and the
checkpoint writes.

One fault can be switched on per run (``--fault NAME --fault-rank R --fault-step S``).
Each fault is the real condition -- a real exception raised by torch or Python, a
real signal, a real resource limit -- never a printed imitation; the worker prints
nothing about the fault before it happens.

``CORPUS_CLOCK_OFFSET_S`` (seconds, may be fractional or negative) shifts the
timestamps written by this script's log formatter, to stand in for a node whose
clock is off. ``CORPUS_HOST`` overrides the host name the script logs (used to
give the two agents of a multi-node run on one machine distinct names).

Launched by ``mpirun`` instead of torchrun, the script takes its rank, local rank
and world size from Open MPI's ``OMPI_COMM_WORLD_*`` variables and rendezvouses
through ``env://`` (``MASTER_ADDR``/``MASTER_PORT`` exported by the launcher).
With ``--log-start`` every rank logs one ``worker starting`` line before it joins
the process group.
"""

from __future__ import annotations

import argparse
import ctypes
import logging
import os
import resource
import signal
import socket
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

IN_FEATURES = 16
HIDDEN = 512  # big enough that a checkpoint (params + Adam state) is ~130 KB
OUT_FEATURES = 4
BATCH = 8
HEARTBEAT_EVERY = 3

FAULTS = (
    "none",
    "shape_mismatch_init",  # fault rank builds a Linear with the wrong in_features
    "shape_mismatch_forward",  # fault rank's batch gains a column: matmul shape error
    "dataset_index_error",  # fault rank's data shard is shorter than its index says
    "rlimit_as_alloc",  # RLIMIT_AS on the fault rank, then a large allocation
    "hang",  # fault rank sleeps inside the step: peers hit the gloo timeout
    "sigkill",  # fault rank SIGKILLs itself
    "exit3",  # fault rank calls sys.exit(3)
    "nan_anomaly",  # detect_anomaly on; fault rank takes log() of negative inputs
    "nan_isfinite",  # fault rank's inputs overflow float32; the isfinite check raises
    "dl_segfault",  # a DataLoader worker of the fault rank dereferences NULL
    "dl_sigkill",  # a DataLoader worker of the fault rank SIGKILLs itself
    "ckpt_write",  # the checkpoint write of the fault rank fails (limit/mount set outside)
    "ckpt_efbig",  # RLIMIT_FSIZE on the fault rank before its checkpoint write
    "exit",  # fault rank calls sys.exit(--exit-code)
    "slow",  # fault rank computes for --slow-s seconds inside the step, logging progress
    "never_join",  # fault rank never calls init_process_group (sleeps before it)
)


class OffsetFormatter(logging.Formatter):
    """``logging.Formatter`` whose timestamps are shifted by a fixed offset."""

    def __init__(self, fmt: str, offset_s: float) -> None:
        super().__init__(fmt)
        self.offset_s = offset_s

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        t = record.created + self.offset_s
        whole = int(t // 1)
        ms = int((t - whole) * 1000)
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(whole)) + f",{ms:03d}"


class RankFilter(logging.Filter):
    def __init__(self, rank: int, host: str) -> None:
        super().__init__()
        self.rank = rank
        self.host = host

    def filter(self, record: logging.LogRecord) -> bool:
        record.rank = self.rank
        record.host = self.host
        return True


def setup_logging(rank: int, host: str) -> logging.Logger:
    offset = float(os.environ.get("CORPUS_CLOCK_OFFSET_S", "0") or 0)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        OffsetFormatter(
            "%(asctime)s %(levelname)s %(host)s rank=%(rank)s %(name)s: %(message)s", offset
        )
    )
    handler.addFilter(RankFilter(rank, host))
    log = logging.getLogger("train")
    log.setLevel(logging.INFO)
    log.addHandler(handler)
    log.propagate = False
    return log


class SyntheticRegression(Dataset):
    """Fixed random regression rows; ``rows_present`` < ``length`` models a short shard."""

    def __init__(
        self,
        length: int,
        seed: int,
        rows_present: int | None = None,
        worker_fault: str | None = None,
        worker_fault_index: int = -1,
    ) -> None:
        g = torch.Generator().manual_seed(seed)
        n = length if rows_present is None else rows_present
        xs = torch.randn(n, IN_FEATURES, generator=g)
        w = torch.randn(IN_FEATURES, OUT_FEATURES, generator=g)
        self.rows = [(xs[i], xs[i] @ w) for i in range(n)]
        self.length = length
        self.worker_fault = worker_fault
        self.worker_fault_index = worker_fault_index

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, idx: int):
        if idx == self.worker_fault_index and torch.utils.data.get_worker_info() is not None:
            if self.worker_fault == "dl_segfault":
                ctypes.string_at(0)  # NULL dereference -> SIGSEGV in this worker process
            elif self.worker_fault == "dl_sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
        return self.rows[idx]


def build_model(in_features: int) -> nn.Module:
    return nn.Sequential(nn.Linear(in_features, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, OUT_FEATURES))


def save_checkpoint(
    model: nn.Module, opt: torch.optim.Optimizer, step: int, ckpt_dir: str, log: logging.Logger
) -> None:
    path = os.path.join(ckpt_dir, f"ckpt-step{step:05d}.pt")
    log.info("saving checkpoint step=%d path=%s", step, path)
    torch.save({"step": step, "model": model.state_dict(), "optim": opt.state_dict()}, path)
    log.info("checkpoint saved step=%d path=%s bytes=%d", step, path, os.path.getsize(path))


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--fault", choices=FAULTS, default="none")
    p.add_argument("--fault-rank", type=int, default=-1)
    p.add_argument("--fault-step", type=int, default=5)
    p.add_argument("--workers", type=int, default=0, help="DataLoader worker processes per rank")
    p.add_argument("--ckpt-dir", default="")
    p.add_argument("--ckpt-every", type=int, default=0)
    p.add_argument("--ckpt-rank", type=int, default=0)
    p.add_argument("--pg-timeout-s", type=float, default=20.0)
    p.add_argument("--fsize-limit", type=int, default=64 * 1024)
    p.add_argument("--exit-code", type=int, default=3, help="status for --fault exit")
    p.add_argument("--slow-s", type=float, default=60.0, help="seconds of compute for --fault slow")
    p.add_argument(
        "--log-start", action="store_true", help="log one 'worker starting' line before joining"
    )
    p.add_argument(
        "--no-finite-check",
        action="store_true",
        help="skip the isfinite(loss) guard (the anomaly-detection job runs without it)",
    )
    return p.parse_args(argv)


def env_from_launcher() -> str:
    """Fill RANK/LOCAL_RANK/WORLD_SIZE from Open MPI's variables under mpirun; name the launcher."""
    if "RANK" not in os.environ and "OMPI_COMM_WORLD_RANK" in os.environ:
        os.environ["RANK"] = os.environ["OMPI_COMM_WORLD_RANK"]
        os.environ["LOCAL_RANK"] = os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", os.environ["RANK"])
        os.environ["WORLD_SIZE"] = os.environ["OMPI_COMM_WORLD_SIZE"]
        return "mpirun"
    if "TORCHELASTIC_RUN_ID" in os.environ:
        return "torchrun"
    return "deepspeed" if "CROSS_RANK" in os.environ else "env"


def log_start(log: logging.Logger, launcher: str) -> None:
    log.info(
        "worker starting: rank=%s local_rank=%s world_size=%s launcher=%s master=%s:%s pid=%d",
        os.environ["RANK"],
        os.environ.get("LOCAL_RANK"),
        os.environ["WORLD_SIZE"],
        launcher,
        os.environ.get("MASTER_ADDR"),
        os.environ.get("MASTER_PORT"),
        os.getpid(),
    )


def before_join(fault: str) -> None:
    if fault == "never_join":
        time.sleep(600)  # never reaches init_process_group; the launcher ends it


def slow_compute(log: logging.Logger, step: int, seconds: float) -> None:
    """Real CPU work for ``seconds``, one progress line every ~2 s (a straggler, not a hang)."""
    g = torch.Generator().manual_seed(step)
    a = torch.randn(192, 192, generator=g)
    t0 = time.time()
    chunk = matmuls = 0
    while time.time() - t0 < seconds:
        c0 = time.time()
        while time.time() - c0 < 2.0:
            a = torch.tanh(a @ a / 14.0)
            matmuls += 1
        chunk += 1
        log.info(
            "still computing step=%d chunk=%d elapsed=%.1fs matmuls=%d",
            step,
            chunk,
            time.time() - t0,
            matmuls,
        )


def step_fault(fault: str, args: argparse.Namespace, log: logging.Logger, step: int) -> None:
    """The faults that fire at the start of ``--fault-step`` (shared with ds_worker.py)."""
    if fault == "rlimit_as_alloc":
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        with open("/proc/self/statm") as f:
            vm_bytes = int(f.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (vm_bytes + (256 << 20), hard))
        activations = torch.empty(1 << 30, dtype=torch.float32)  # 4 GiB
        activations.zero_()
    elif fault == "hang":
        time.sleep(600)
    elif fault == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif fault == "exit3":
        sys.exit(3)
    elif fault == "exit":
        sys.exit(args.exit_code)
    elif fault == "slow":
        slow_compute(log, step, args.slow_s)


@record
def main(argv=None) -> None:
    args = parse_args(argv)
    launcher = env_from_launcher()
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ["LOCAL_RANK"])
    world = int(os.environ["WORLD_SIZE"])
    host = os.environ.get("CORPUS_HOST") or socket.gethostname()
    log = setup_logging(rank, host)
    faulty = rank == args.fault_rank
    fault = args.fault if faulty else "none"

    torch.manual_seed(0)
    if args.log_start:
        log_start(log, launcher)
    before_join(fault)
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout_s))
    log.info(
        "rendezvous complete: init_process_group backend=gloo rank=%d local_rank=%d world_size=%d "
        "master=%s:%s group_rank=%s timeout=%ss pid=%d",
        rank,
        local_rank,
        world,
        os.environ.get("MASTER_ADDR"),
        os.environ.get("MASTER_PORT"),
        os.environ.get("GROUP_RANK"),
        args.pg_timeout_s,
        os.getpid(),
    )
    if args.fault == "nan_anomaly":
        torch.autograd.set_detect_anomaly(True)
        log.info("autograd anomaly detection enabled")

    in_features = IN_FEATURES + 1 if fault == "shape_mismatch_init" else IN_FEATURES
    model = DDP(build_model(in_features))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    length = args.steps * BATCH * world
    rows_present = None
    if fault == "dataset_index_error":
        # The shard is short: the sampler's indices run past the end at fault_step.
        rows_present = (args.fault_step - 1) * BATCH * world
    worker_fault = fault if fault in ("dl_segfault", "dl_sigkill") else None
    # DistributedSampler (no shuffle) gives this rank indices rank, rank+world, ...;
    # the first index of batch number fault_step:
    worker_fault_index = (args.fault_step - 1) * BATCH * world + rank if worker_fault else -1
    ds = SyntheticRegression(
        length,
        seed=1234,
        rows_present=rows_present,
        worker_fault=worker_fault,
        worker_fault_index=worker_fault_index,
    )
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False)
    loader = DataLoader(ds, batch_size=BATCH, sampler=sampler, num_workers=args.workers)
    log.info(
        "data ready samples=%d per_rank_batches=%d workers=%d", length, len(loader), args.workers
    )

    t0 = time.time()
    for step, (x, y) in enumerate(loader, start=1):
        if step == args.fault_step:
            step_fault(fault, args, log, step)
            if fault == "shape_mismatch_forward":
                x = torch.cat([x, torch.ones(x.shape[0], 1)], dim=1)
            elif fault == "nan_isfinite":
                x = x * 3.0e38  # float32 overflow -> inf activations -> nan loss
        if args.fault == "nan_anomaly":
            # Log-scaled features; the fault rank's shard has negative raw values at fault_step.
            raw = x.abs() + 1.0
            if fault == "nan_anomaly" and step == args.fault_step:
                raw = -raw
            x = torch.log(raw)
        opt.zero_grad(set_to_none=True)
        out = model(x)
        loss = nn.functional.mse_loss(out, y)
        if not args.no_finite_check and not torch.isfinite(loss):
            raise FloatingPointError(f"non-finite loss {loss.item()} at step {step} on rank {rank}")
        loss.backward()
        opt.step()
        log.info("step=%d loss=%.4f", step, loss.item())
        if step % HEARTBEAT_EVERY == 0:
            log.info(
                "heartbeat step=%d elapsed=%.1fs samples_seen=%d",
                step,
                time.time() - t0,
                step * BATCH,
            )
        if (
            args.ckpt_every
            and step % args.ckpt_every == 0
            and args.ckpt_dir
            and rank == args.ckpt_rank
        ):
            if fault == "ckpt_efbig":
                _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
                resource.setrlimit(resource.RLIMIT_FSIZE, (args.fsize_limit, hard))
            save_checkpoint(model.module, opt, step, args.ckpt_dir, log)
        if step >= args.steps:
            break

    dist.barrier()
    log.info("training complete steps=%d elapsed=%.1fs", args.steps, time.time() - t0)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
