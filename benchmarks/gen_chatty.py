"""A chatty multi-rank job: the line mix of a real large run, one log per rank.

Where ``gen_corpus`` writes one console with ~15 matched lines per job, a real
DeepSpeed/NCCL job is dominated by lines the knowledge base *does* match as
context: NCCL ``INFO`` channel and ring lines printed again at every
communicator creation, DeepSpeed ``log_dist`` step lines, fp16 loss-scale
overflows, checkpoint saves, tqdm progress updates joined by ``\\r``, JSON
metric lines and Python warnings.  Near the end one rank runs out of GPU
memory and every other rank's NCCL watchdog times out.

    python benchmarks/gen_chatty.py --out /tmp/chatty --size 1GiB --ranks 16

Deterministic: same arguments, same bytes.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from gen_corpus import parse_size

START = 1714564800  # 2024-05-01 12:00:00 UTC


def _stamp(t: float) -> str:
    return (
        time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(START + int(t)))
        + f",{int(t % 1 * 1000):03d}"
    )


def _rank_lines(rank: int, ranks: int, budget: int, seed: int) -> list[str]:
    rng = random.Random(seed * 1000 + rank)
    host = f"gpu-node-{rank // 8:02d}"
    pid = 41000 + rank
    lr = rank % 8
    out: list[str] = []
    size = 0
    t = rng.random()
    step = 0
    fail_rank = 5 % ranks
    while size < budget:
        step += 1
        t += 0.35 + rng.random() * 0.05
        ts = _stamp(t)
        block: list[str] = []
        if step % 200 == 1:  # a communicator is (re)built: NCCL prints its topology again
            for ch in range(32):
                peer = (rank + 1) % ranks
                block.append(
                    f"{host}:{pid}:{pid + 70} [{lr}] NCCL INFO Channel {ch:02d}/0 : "
                    f"{rank}[{lr}] -> {peer}[{peer % 8}] via P2P/IPC/read"
                )
            block.append(f"{host}:{pid}:{pid + 70} [{lr}] NCCL INFO Connected all rings")
            block.append(f"{host}:{pid}:{pid + 70} [{lr}] NCCL INFO Connected all trees")
            block.append(
                f"{host}:{pid}:{pid + 70} [{lr}] NCCL INFO comm 0x5581c3a0 rank {rank} nranks {ranks} "
                f"cudaDev {lr} busId {0x1B000 + lr * 0x1000:x} - Init COMPLETE"
            )
        block.append(
            f"[{ts}] [INFO] [logging.py:96:log_dist] [Rank {rank}] step={step}, skipped={step // 97}, "
            f"lr=[{3e-4 * (1 - step / 1e6):.6e}], mom=[(0.9, 0.95)]"
        )
        block.append(
            f"{ts} INFO train.py:212 rank={rank} step={step} loss={2.5 - step * 1e-5 + rng.random() * 0.1:.4f} "
            f"grad_norm={0.5 + rng.random():.3f} tokens_per_sec={52000 + rng.randrange(4000)}"
        )
        if step % 97 == 0:
            scale = 2 ** rng.randrange(10, 17)
            block.append(
                f"[{ts}] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank {rank} "
                f"Skipping step. Attempted loss scale: {scale}, reducing to {scale // 2}"
            )
        if step % 10 == 0:
            pct = step % 1000 // 10
            bar = "█" * (pct // 10) + " " * (10 - pct // 10)
            updates = "\r".join(
                f"Epoch 0: {pct:3d}%|{bar}| {step - 9 + k}/100000 [00:{k:02d}<10:00, 2.8it/s, loss=2.31]"
                for k in range(10)
            )
            block.append(updates)
            block.append(
                f'{{"step": {step}, "loss": {2.4 + rng.random() * 0.1:.4f}, "lr": 0.0003, '
                f'"throughput": {52000 + rng.randrange(4000)}, "mem_gb": {61.2 + rng.random():.2f}}}'
            )
        if step % 500 == 0:
            block.append(
                f"[{ts}] [INFO] [engine.py:3402:_save_checkpoint] Saving model checkpoint: "
                f"/ckpt/global_step{step}/mp_rank_00_model_states.pt"
            )
            block.append(
                f"[{ts}] [INFO] [torch_checkpoint_engine.py:33:commit] [Torch] Checkpoint global_step{step} is ready now!"
            )
        if step % 1500 == 0:
            block.append(
                "/opt/conda/lib/python3.10/site-packages/torch/utils/checkpoint.py:429: UserWarning: "
                "torch.utils.checkpoint: please pass in use_reentrant=True or use_reentrant=False explicitly."
            )
        for ln in block:
            out.append(ln)
            size += len(ln) + 1
    # the end: one rank runs out of memory, the others time out waiting for it
    t += 2.0
    if rank == fail_rank:
        out += [
            "Traceback (most recent call last):",
            '  File "/workspace/train.py", line 412, in <module>',
            "    main()",
            '  File "/workspace/train.py", line 388, in main',
            "    loss = engine(batch)",
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU "
            f"{lr} has a total capacity of 79.15 GiB of which 1.23 GiB is free.",
        ]
    else:
        t += 1800
        out.append(
            f"[rank{rank}]:[E ProcessGroupNCCL.cpp:475] [Rank {rank}] Watchdog caught collective operation "
            f"timeout: WorkNCCL(SeqNum={step * 3}, OpType=ALLREDUCE, NumelIn=50331648, NumelOut=50331648, "
            "Timeout(ms)=1800000) ran for 1800113 milliseconds before timing out."
        )
    return out


def generate(out: str | Path, size: int, ranks: int = 16, seed: int = 1) -> list[Path]:
    """Write ``out/rankNN.log`` (about ``size`` bytes in all); return their paths."""
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for r in range(ranks):
        p = d / f"rank{r:02d}.log"
        if not p.exists():
            p.write_text("\n".join(_rank_lines(r, ranks, size // ranks, seed)) + "\n")
        paths.append(p)
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--size", default="1GiB", help="total size of the rank logs (default 1GiB)")
    ap.add_argument("--ranks", type=int, default=16, help="ranks, one log each (default 16)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    paths = generate(a.out, parse_size(a.size), a.ranks, a.seed)
    print(f"{len(paths)} files, {sum(p.stat().st_size for p in paths) / 2**20:.0f} MiB in {a.out}")


if __name__ == "__main__":
    main()
