"""DeepSpeed variant of ``worker.py``: the same MLP and data under ZeRO stage 2 on the CPU.

DeepSpeed selects its CPU accelerator when no GPU is present and uses gloo for the
collectives. The optimizer is DeepSpeed's ``Adam`` with ``torch_adam: true``
(torch.optim.Adam), which avoids JIT-compiling DeepSpeed's fused Adam.

Faults (``--fault NAME --fault-rank R``), each real:
  ds_batch_config   the fault rank's DeepSpeed config asks for a train_batch_size that
                    does not equal micro_batch * grad_accum * world_size; DeepSpeed's
                    config check raises on that rank during deepspeed.initialize.
  shape_mismatch_forward  the fault rank's step-5 batch gains a column (matmul error)
                    while its peers wait in ZeRO-2's gradient reduction.
  sigkill, exit, rlimit_as_alloc, hang, slow, never_join
                    as in worker.py (the same functions), for runs under the
                    ``deepspeed`` launcher (which passes ``--local_rank=N``).
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
import time
from datetime import timedelta

import deepspeed
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.elastic.multiprocessing.errors import record
from torch.utils.data import DataLoader, DistributedSampler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from worker import (  # noqa: E402
    BATCH,
    HEARTBEAT_EVERY,
    IN_FEATURES,
    SyntheticRegression,
    before_join,
    build_model,
    env_from_launcher,
    log_start,
    setup_logging,
    step_fault,
)


@record
def main(argv=None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--fault", default="none")
    p.add_argument("--fault-rank", type=int, default=-1)
    p.add_argument("--fault-step", type=int, default=5)
    p.add_argument("--pg-timeout-s", type=float, default=20.0)
    p.add_argument("--zero-stage", type=int, default=2)
    p.add_argument("--exit-code", type=int, default=3)
    p.add_argument("--slow-s", type=float, default=60.0)
    p.add_argument("--log-start", action="store_true")
    p.add_argument(
        "--group-timeout",
        action="store_true",
        help="give the groups DeepSpeed creates the --pg-timeout-s timeout too",
    )
    args, _ = p.parse_known_args(argv)
    launcher = env_from_launcher()

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    host = os.environ.get("CORPUS_HOST") or socket.gethostname()
    log = setup_logging(rank, host)
    fault = args.fault if rank == args.fault_rank else "none"

    # DeepSpeed's own [INFO] lines (config dump, ZeRO setup), as a real job run at INFO shows them.
    deepspeed.utils.logger.setLevel(logging.INFO)
    for handler in deepspeed.utils.logger.handlers:
        handler.setLevel(logging.INFO)
    torch.manual_seed(0)
    if args.log_start:
        log_start(log, launcher)
    before_join(fault)
    deepspeed.init_distributed(dist_backend="gloo", timeout=timedelta(seconds=args.pg_timeout_s))
    if args.group_timeout:
        # DeepSpeed builds its ZeRO data-parallel group with dist.new_group(ranks) and no
        # timeout, which takes torch's default (30 min for gloo), not the timeout given to
        # init_distributed; make that default the job's timeout so a stalled peer is noticed.
        import torch.distributed.distributed_c10d as c10d

        c10d.default_pg_timeout = timedelta(seconds=args.pg_timeout_s)
    log.info(
        "rendezvous complete: init_process_group backend=gloo rank=%d local_rank=%s world_size=%d "
        "master=%s:%s group_rank=%s timeout=%ss pid=%d",
        rank,
        os.environ.get("LOCAL_RANK"),
        world,
        os.environ.get("MASTER_ADDR"),
        os.environ.get("MASTER_PORT"),
        os.environ.get("GROUP_RANK"),
        args.pg_timeout_s,
        os.getpid(),
    )
    train_batch = BATCH * world
    if fault == "ds_batch_config":
        train_batch = BATCH * (world + 2)  # a stale config written for a 6-rank job
    config = {
        "train_batch_size": train_batch,
        "train_micro_batch_size_per_gpu": BATCH,
        "gradient_accumulation_steps": 1,
        "optimizer": {"type": "Adam", "params": {"lr": 1e-3, "torch_adam": True}},
        "zero_optimization": {"stage": args.zero_stage, "reduce_bucket_size": 50000},
        "steps_per_print": 4,
    }
    log.info(
        "deepspeed %s config zero_stage=%d train_batch_size=%d",
        deepspeed.__version__,
        args.zero_stage,
        train_batch,
    )
    model = build_model(IN_FEATURES)
    engine, _, _, _ = deepspeed.initialize(
        model=model, model_parameters=model.parameters(), config=config
    )

    ds = SyntheticRegression(args.steps * BATCH * world, seed=1234)
    loader = DataLoader(
        ds,
        batch_size=BATCH,
        sampler=DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False),
    )
    log.info("data ready samples=%d per_rank_batches=%d workers=0", len(ds), len(loader))
    t0 = time.time()
    for step, (x, y) in enumerate(loader, start=1):
        if step == args.fault_step:
            step_fault(fault, args, log, step)
        if fault == "shape_mismatch_forward" and step == args.fault_step:
            x = torch.cat([x, torch.ones(x.shape[0], 1)], dim=1)
        loss = nn.functional.mse_loss(engine(x), y)
        engine.backward(loss)
        engine.step()
        log.info("step=%d loss=%.4f", step, loss.item())
        if step % HEARTBEAT_EVERY == 0:
            log.info(
                "heartbeat step=%d elapsed=%.1fs samples_seen=%d",
                step,
                time.time() - t0,
                step * BATCH,
            )
        if step >= args.steps:
            break
    dist.barrier()
    log.info("training complete steps=%d elapsed=%.1fs", args.steps, time.time() - t0)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
