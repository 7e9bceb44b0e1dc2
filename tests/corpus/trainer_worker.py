"""The training script of the held-out family (``holdout.py``).

Written apart from ``worker.py`` on purpose, so the held-out jobs do not print
the lines the rest of the corpus prints: a small classifier in
DistributedDataParallel on gloo, logged in one of two styles the main corpus
never uses:

* ``plain``: ``print`` to stdout, no timestamps (``[rank 2] iter 5/12 | loss 0.6931 | 3.1 ms/it``);
* ``iso``: Python ``logging`` with ISO-8601 UTC timestamps and the rank in the
  logger name (``2026-12-04T03:10:00.123Z INFO trainer.rank2 iter=5 loss=0.6931``),
  with ``faulthandler`` on (a fatal signal prints a Python stack);
* ``main``: as a Trainer logs, the main process only: a tqdm-like bar redrawn
  with ``\r`` and a metrics dict every other step; the other ranks print
  nothing of their own.

One fault per run (``--fault NAME --fault-rank R --fault-step S``), each a real
condition raised by Python, torch or the kernel, never a printed imitation;
the worker prints nothing about a fault before it happens, except the
``nonfinite`` guard, which is the application's own stop message.

Rank, local rank and world size come from the launcher's environment
(torchrun, accelerate, the deepspeed launcher) or Open MPI's ``OMPI_COMM_WORLD_*``;
with ``--spawn N`` the script starts its N ranks itself with
``torch.multiprocessing.spawn`` (``MASTER_PORT`` from the environment).
"""

from __future__ import annotations

import argparse
import ctypes
import faulthandler
import logging
import os
import resource
import signal
import socket
import sys
import time
from datetime import datetime, timedelta, timezone

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

FAULTS = (
    "none",
    "keyerror",  # the batch dict of the fault rank lacks its labels
    "missing-shard",  # the fault rank opens a data shard that does not exist (at start)
    "assert",  # the fault rank's batch has the wrong size; an assert in the loop fires
    "nonfinite",  # the fault rank's loss becomes NaN; the loop's guard stops the rank (exit 1)
    "segv",  # the fault rank dereferences NULL (SIGSEGV)
    "abort",  # the fault rank calls abort() (SIGABRT)
    "sigkill",  # the fault rank SIGKILLs itself
    "exit",  # the fault rank calls sys.exit(--exit-code)
    "oom",  # RLIMIT_AS on the fault rank, then a large allocation
    "hang",  # the fault rank sleeps inside the step; the peers' collective times out
    "slow",  # the fault rank computes for a long time inside the step, still printing
    "loader-kill",  # a DataLoader worker process of the fault rank is killed (SIGKILL)
    "anomaly",  # anomaly detection on; the fault rank's backward produces NaN (log of negatives)
    "target-oob",  # the fault rank's labels run past the number of classes (IndexError)
)


class _KillsItsWorker(torch.utils.data.Dataset):
    """A dataset whose loading worker process dies of SIGKILL on its first item."""

    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> torch.Tensor:
        os.kill(os.getpid(), signal.SIGKILL)
        return torch.zeros(1)


class _Iso(logging.Formatter):
    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        t = datetime.fromtimestamp(record.created, tz=timezone.utc)
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(record.msecs):03d}Z"


class Out:
    """The worker's own lines, in the chosen style."""

    def __init__(self, style: str, rank: int) -> None:
        self.style, self.rank = style, rank
        if style == "iso":
            h = logging.StreamHandler(sys.stdout)
            h.setFormatter(_Iso("%(asctime)s %(levelname)s %(name)s %(message)s"))
            self.log = logging.getLogger(f"trainer.rank{rank}")
            self.log.addHandler(h)
            self.log.setLevel(logging.INFO)
            self.log.propagate = False

    def info(self, plain: str, iso: str | None = None) -> None:
        if self.style == "iso":
            self.log.info(iso if iso is not None else plain)
        elif self.style == "main":
            if self.rank == 0:
                print(plain, flush=True)
        else:
            print(f"[rank {self.rank}] {plain}", flush=True)

    def progress(self, it: int, steps: int, loss: float, ms: float) -> None:
        if self.style != "main":
            self.info(
                f"iter {it}/{steps} | loss {loss:.4f} | {ms:.1f} ms/it",
                f"iter={it} loss={loss:.4f} ms_per_it={ms:.1f}",
            )
        elif self.rank == 0:
            # the main process only, as a Trainer logs: a tqdm bar redrawn with \r
            # and a metrics dict every other step
            bar = "#" * (10 * it // steps)
            sys.stdout.write(f"\r{100 * it // steps:3d}%|{bar:<10}| {it}/{steps} [{ms:.0f}ms/it]")
            if it % 2 == 0:
                sys.stdout.write(
                    f"\n{{'loss': {loss:.4f}, 'learning_rate': 0.05, 'epoch': {it / steps:.2f}}}\n"
                )
            sys.stdout.flush()

    def warn(self, plain: str) -> None:
        if self.style == "iso":
            self.log.warning(plain)
        elif self.style == "main":
            print(f"WARNING {plain}", flush=True)  # a script's own print, on any rank
        else:
            print(f"[rank {self.rank}] WARNING {plain}", flush=True)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--fault", choices=FAULTS, default="none")
    ap.add_argument("--fault-rank", type=int, default=-1)
    ap.add_argument("--fault-step", type=int, default=5)
    ap.add_argument("--style", choices=("plain", "iso", "main"), default="plain")
    ap.add_argument("--pg-timeout-s", type=float, default=15.0)
    ap.add_argument("--exit-code", type=int, default=1)
    ap.add_argument("--data-dir", default=".")
    ap.add_argument("--local_rank", "--local-rank", type=int, default=None)  # deepspeed launcher
    ap.add_argument(
        "--spawn", type=int, default=0, help="start N ranks with torch.multiprocessing.spawn"
    )
    return ap.parse_args()


def _spawned(index: int, a: argparse.Namespace) -> None:
    """One rank started by torch.multiprocessing.spawn: the process index is the rank."""
    os.environ.update(RANK=str(index), LOCAL_RANK=str(index), WORLD_SIZE=str(a.spawn))
    train(a)


def main() -> None:
    a = parse_args()
    if a.spawn:
        import torch.multiprocessing as mp

        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        mp.spawn(_spawned, args=(a,), nprocs=a.spawn, join=True)
        return
    train(a)


def train(a: argparse.Namespace) -> None:

    env = os.environ
    if "OMPI_COMM_WORLD_RANK" in env:
        env["RANK"] = env["OMPI_COMM_WORLD_RANK"]
        env["WORLD_SIZE"] = env["OMPI_COMM_WORLD_SIZE"]
        env["LOCAL_RANK"] = env["OMPI_COMM_WORLD_LOCAL_RANK"]
    rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
    local = int(env.get("LOCAL_RANK", a.local_rank if a.local_rank is not None else 0))
    faulty = a.fault != "none" and rank == a.fault_rank
    out = Out(a.style, rank)
    if a.style == "iso":
        faulthandler.enable()
    torch.manual_seed(1234 + rank)
    torch.set_num_threads(1)

    out.info(
        f"starting: rank {rank} of {world}, local rank {local}, pid {os.getpid()}, host {socket.gethostname()}",
        f"start rank={rank} world={world} local_rank={local} pid={os.getpid()} host={socket.gethostname()}",
    )
    dist.init_process_group("gloo", timeout=timedelta(seconds=a.pg_timeout_s))

    shard = os.path.join(a.data_dir, f"train-{rank:05d}-of-{world:05d}.pt")
    if faulty and a.fault == "missing-shard":
        shard = shard.replace("train-", "train-missing-")
    if faulty and a.fault == "missing-shard":
        open(shard, "rb").close()  # FileNotFoundError, raised by open() itself
    g = torch.Generator().manual_seed(99 + rank)
    data = torch.randn(a.steps * 8, 32, generator=g)
    labels = torch.randint(0, 3, (a.steps * 8,), generator=g)

    model = DDP(nn.Sequential(nn.Linear(32, 256), nn.GELU(), nn.Linear(256, 3)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    out.info(f"model ready, {sum(p.numel() for p in model.parameters())} parameters")

    for it in range(1, a.steps + 1):
        t0 = time.perf_counter()
        x, y = data[(it - 1) * 8 : it * 8], labels[(it - 1) * 8 : it * 8]
        batch = {"inputs": x, "labels": y}
        if faulty and it == a.fault_step:
            f = a.fault
            if f == "keyerror":
                batch = {"inputs": x, "label_ids": y}
            elif f == "assert":
                batch = {"inputs": x[:5], "labels": y[:5]}
            elif f == "nonfinite":
                batch["inputs"] = x * float("inf")
            elif f == "segv":
                ctypes.string_at(0)
            elif f == "abort":
                os.abort()
            elif f == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            elif f == "exit":
                sys.exit(a.exit_code)
            elif f == "oom":
                soft = resource.getrlimit(resource.RLIMIT_AS)[1]
                with open("/proc/self/status") as st:
                    vm = next(int(ln.split()[1]) for ln in st if ln.startswith("VmSize:")) * 1024
                resource.setrlimit(resource.RLIMIT_AS, (vm + (256 << 20), soft))
                torch.empty(4 << 30, dtype=torch.uint8).fill_(1)
            elif f == "hang":
                time.sleep(3600)
            elif f == "loader-kill":
                for _ in torch.utils.data.DataLoader(_KillsItsWorker(), num_workers=1):
                    pass
            elif f == "target-oob":
                batch["labels"] = y + 3
            elif f == "anomaly":
                torch.autograd.set_detect_anomaly(True)
                batch["inputs"] = -x.abs() - 1
            elif f == "slow":
                end = time.time() + 60
                while time.time() < end:
                    torch.randn(300, 300) @ torch.randn(300, 300)
                    out.info(f"iter {it}: still in forward", f"iter={it} still in forward")
                    time.sleep(2)
        n = batch["inputs"].shape[0]
        assert n == 8, f"expected a batch of 8 samples, got {n}"
        inputs = batch["inputs"]
        if faulty and it == a.fault_step and a.fault == "anomaly":
            inputs = torch.log(inputs)  # NaN forward; anomaly mode names the backward op
        logits = model(inputs)
        loss = F.cross_entropy(logits, batch["labels"])
        if not torch.isfinite(loss) and a.fault != "anomaly":  # anomaly mode raises in backward
            out.warn(f"non-finite loss ({loss.item()}) at iteration {it}; stopping this rank")
            sys.exit(a.exit_code)
        opt.zero_grad()
        loss.backward()
        opt.step()
        ms = (time.perf_counter() - t0) * 1000
        out.progress(it, a.steps, loss.item(), ms)
        time.sleep(0.2)
    dist.barrier()
    out.info("training finished", "done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
