"""Deterministic generator of a realistic multi-rank training log corpus.

    python benchmarks/gen_corpus.py OUT.log --size 1G [--seed 1]

The log looks like the console of a 64-rank torchrun/DeepSpeed job: torchrun
``[rankN]:`` prefixes, Python-logging and glog timestamps, DeepSpeed step and
config lines, NCCL INFO lines, tqdm progress, and rare failure lines (about
one in 20 000) taken from ``FAILURE_LINES``.  The same seed and size always
give the same bytes.
"""

from __future__ import annotations

import argparse
import random
import sys

FAILURE_LINES = [
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.15 GiB of which 1.02 GiB is free.",
    "[E501 12:10:40.512000 21000 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4812, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600078 milliseconds before timing out.",
    "node12:3121:3180 [3] NCCL WARN NET/IB : Got completion from peer 10.1.0.12<43751> with error 12, opcode 0, len 0, vendor err 129 (Recv)",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768",
    "RuntimeError: DataLoader worker (pid 51234) is killed by signal: Killed. ",
    "slurmstepd: error: *** JOB 123456 ON node12 CANCELLED AT 2024-05-01T12:00:00 DUE TO TIME LIMIT ***",
    "NVRM: Xid (PCI:0000:3b:00): 79, pid=2314, GPU has fallen off the bus.",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    "OSError: [Errno 28] No space left on device",
    "RuntimeError: CUDA error: device-side assert triggered",
    "Segmentation fault (core dumped)",
]

WORDS = [
    "model",
    "layer",
    "attention",
    "mlp",
    "embedding",
    "optimizer",
    "bucket",
    "param",
    "grad",
    "scale",
    "shard",
    "stage",
    "micro",
    "batch",
    "token",
    "sequence",
]


def lines(rng: random.Random, ranks: int = 64, failure_rate: float = 0.00005):
    sec = 0.0
    step = 0
    hosts = [f"node{h:02d}" for h in range(ranks // 8)]
    while True:
        sec += rng.random() * 0.02
        r = rng.randrange(ranks)
        host = hosts[r // 8]
        hh, mm, ss = int(sec // 3600) % 24, int(sec % 3600 // 60), sec % 60
        stamp = f"2024-05-01 {hh:02d}:{mm:02d}:{ss:06.3f}".replace(".", ",")
        k = rng.random()
        if k < failure_rate:
            yield f"[rank{r}]: {rng.choice(FAILURE_LINES)}"
        elif k < 0.35:
            step += 1
            yield (
                f"[rank{r}]: {stamp} INFO train.py:{rng.randrange(50, 400)} step={step} "
                f"loss={rng.random() * 3:.4f} lr={rng.random() * 1e-3:.3e} "
                f"grad_norm={rng.random() * 5:.3f} tokens/s={rng.randrange(30000, 50000)}"
            )
        elif k < 0.55:
            yield (
                f"[default{r}]:[{stamp}] [INFO] [logging.py:96:log_dist] [Rank {r}] "
                f"step={step}, skipped={rng.randrange(3)}, lr=[{rng.random() * 1e-4:.6e}], "
                f"mom=[(0.9, 0.95)]"
            )
        elif k < 0.75:
            a, b = rng.randrange(8), rng.randrange(8)
            yield (
                f"[rank{r}]: {host}:{10000 + r}:{10100 + r} [{r % 8}] NCCL INFO Channel "
                f"{rng.randrange(32):02d}/0 : {a}[{a}] -> {b}[{b}] via P2P/IPC/read"
            )
        elif k < 0.85:
            pct = rng.randrange(101)
            yield (
                f"[rank{r}]: Epoch {step // 1000}:  {pct:3d}%|{'#' * (pct // 10):<10}| "
                f"{pct * 10}/1000 [{rng.randrange(60):02d}:{rng.randrange(60):02d}<"
                f"{rng.randrange(60):02d}:{rng.randrange(60):02d}, {rng.random() * 10:.2f}it/s]"
            )
        elif k < 0.93:
            yield (
                f"[rank{r}]: I0501 {hh:02d}:{mm:02d}:{ss:09.6f} {20000 + r} "
                f"{rng.choice(WORDS)}_{rng.choice(WORDS)}.cc:{rng.randrange(900)}] "
                f"{rng.choice(WORDS)} {rng.choice(WORDS)} ready in {rng.random() * 100:.1f} ms"
            )
        else:
            yield (
                f"[rank{r}]: [{stamp}] [INFO] [config.py:{rng.randrange(900, 1100)}:print]   "
                f"{rng.choice(WORDS)}_{rng.choice(WORDS)}_size .......... "
                f"{rng.randrange(1, 10) * 10 ** rng.randrange(3, 9)}"
            )


def parse_size(text: str) -> int:
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().rstrip("B").rstrip("I")
    return int(float(t[:-1]) * mult[t[-1]]) if t[-1] in mult else int(t)


def generate(path: str, size: int, seed: int = 1, failure_rate: float = 0.00005) -> int:
    """Write ``size`` bytes (rounded up to a whole line) to ``path``; returns bytes written.

    ``failure_rate=0`` writes a healthy log (no failure lines at all).
    """
    rng = random.Random(seed)
    it = lines(rng, failure_rate=failure_rate)
    written = 0
    with open(path, "wb", buffering=1 << 22) as f:
        while written < size:
            chunk = "\n".join(next(it) for _ in range(10000)).encode() + b"\n"
            f.write(chunk)
            written += len(chunk)
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--size", default="1G", help="bytes, or with K/M/G suffix (default 1G)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    n = generate(a.out, parse_size(a.size), a.seed)
    print(f"wrote {n} bytes to {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
