"""Synthetic probes of five failure shapes, in layouts and wordings the corpus
does not hold, scored on the initiating line and its rank::

    python benchmarks/absence_probes.py [--show-misses]

* **slow rank**: one rank is still busy with work of its own (tokenising,
  saving, clustering, merging weights) while its peers time out in a
  collective; it prints no error.  The answer is its last line, on its rank.
* **crash, then timeouts**: one rank dies of an exception (some of a class
  no entry knows) and its peers report the collective's failure minutes
  later.  The answer is the exception line, on its rank.
* **NCCL WARN, then wrappers**: NCCL's WARN chain on the failing rank, then
  every rank's Python-level wrapper.  The answer is the first WARN line.
* **killed, then torn down**: one worker is SIGKILLed (the kernel's OOM
  killer; its ``dmesg`` line given or not) and prints nothing; its node's
  torchrun agent reports the exit and stops the others.  The answer is the
  kernel's line when given, else the agent's, on the killed rank.
* **a node never joined**: the second node fails while starting (a missing
  module, no GPU, a full disk) in per-node files, a pdsh console or a Slurm
  output; the first node prints only the rendezvous or store timeout.  The
  answer is the second node's error line.

Each shape is crossed with five layouts (a console with ``[rankN]:``
prefixes, one file per rank named for its rank, one file per node named
``node2.log`` whose lines name no rank, one console with no prefixes at all,
two nodes' torchrun consoles with local ``[defaultN]:`` prefixes), the peers' wordings (torch >= 2.2 and older NCCL watchdog
lines, Gloo, NCCL remote errors, the c10d store) and two failing ranks.
Nothing here was fitted to: the probes are for finding classes of failure,
the figures for the notes.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from pathlib import Path

import denpex_fast as dx

WATCHDOG_NEW = (
    "[E1204 10:10:0{s}.123456789 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=51, OpType=ALLREDUCE, NumelIn=1, "
    "NumelOut=1, Timeout(ms)=600000) ran for 600021 milliseconds before timing out."
)
WAITS = {
    "nccl-new": WATCHDOG_NEW,
    "nccl-old": "[E ProcessGroupNCCL.cpp:475] [Rank {r}] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=51, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800464 "
    "milliseconds before timing out.",
    "gloo": "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] "
    "Timed out waiting 1800000ms for recv operation to complete",
    "store": "[2024-12-04 10:10:0{s},120] [ERROR] [rank {r}] torch.distributed.DistBackendError: "
    "[{r}] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d "
    "key-value store by key '0', but store->get('0') got error: wait timeout after 600000ms, "
    "keys: /default_pg//0. This may indicate a possible application crash on rank 0 or a "
    "network set up issue.",
}
AFTER_CRASH = {
    "nccl-new": WATCHDOG_NEW,
    "gloo": "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection "
    "closed by peer [10.0.0.{p}]:4242",
    "nccl-remote": "[E1204 10:10:0{s}.1 ProcessGroupNCCL.cpp:1664] [PG 0 Rank {r}] Process "
    "group watchdog thread terminated with exception: NCCL error: remote process exited or "
    "there was a network error, NCCL version 2.21.5",
}
WORK = [
    "Map (num_proc=64):  45%|####5     | 450000/1000000 [09:59<12:13, 750.12 examples/s]",
    "Saving model checkpoint to /ckpt/checkpoint-500",
    "Running k-means on 2000000 embeddings with 65536 centroids",
    "Merging LoRA adapter weights into the base model",
]
TB = ["Traceback (most recent call last):", '  File "train.py", line 88, in <module>']
CRASHES = [
    TB + ["    batch = next(it)", "mydata.errors.ShardCorrupted: /data/shard-0042.tar: truncated"],
    TB
    + [
        "    loss.backward()",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    ],
    TB + ["    assert x.shape[1] == self.dim", "AssertionError: (torch.Size([8, 1000]), 1024)"],
    TB + ["    lr = cfg['optim']['lr_sched']", "KeyError: 'lr_sched'"],
]
# NCCL's own WARN lines (host:pid:tid [dev] file:line NCCL WARN ...), printed
# on the failing rank before every rank raises the Python-level wrapper
WARNS = [
    "NET/IB : Got completion from peer 10.0.0.3<52716> with status=12 opcode=0 len=0 vendor err 129",
    "Call to ibv_create_cq failed with error Cannot allocate memory",
    "socketStartConnect: Connect to 10.0.0.2<43210> failed : Software caused connection abort",
    "NET/Socket : peer 10.0.0.3<52716> message truncated : receiving 1048576 bytes instead of 65536",
    "Proxy Call to rank 3 failed (Connect)",
    "Cuda failure 'unspecified launch failure'",
]
WRAPPER = (
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), "
    "NCCL version 2.20.5"
)
LAYOUTS = ["console", "per-rank", "per-node", "plain", "two-node"]
WORLD = 4


def _write(out: Path, layout: str, timed: list[tuple[float, int, str]]) -> None:
    timed.sort(key=lambda t: (t[0], t[1]))
    if layout in ("console", "plain"):
        tag = "[rank{r}]:" if layout == "console" else ""
        text = "".join(f"{tag.format(r=r)}{x}\n" for _, r, x in timed)
        (out / "console.log").write_text(text)
        return
    if layout == "two-node":
        # torchrun --tee on two nodes of two workers: [default<local>]: on every
        # line, c10d's own log lines also carry [rank<global>]:
        for node in (0, 1):
            (out / f"node{node}").mkdir()
            text = "".join(
                f"[default{r % 2}]:" + (f"[rank{r}]:" if x.startswith("[E") else "") + x + "\n"
                for _, r, x in timed
                if r // 2 == node
            )
            (out / f"node{node}" / "console.log").write_text(text)
        return
    for r in range(WORLD):
        name = f"rank{r}.log" if layout == "per-rank" else f"node{r}.log"
        (out / name).write_text("".join(f"{x}\n" for _, rr, x in timed if rr == r))


def _steps() -> list[tuple[float, int, str]]:
    return [
        (s, r, f"[2024-12-04 10:00:0{s},000] INFO step {s} loss 1.{9 - s}")
        for r in range(WORLD)
        for s in (1, 2, 3)
    ]


def slow_rank(out: Path, layout: str, wait: str, work: str, rank: int) -> str:
    timed = _steps() + [(4, rank, f"[2024-12-04 10:00:04,000] INFO {work}")]
    for r in range(WORLD):
        if r != rank:
            timed.append((604 + r, r, WAITS[wait].format(r=r, s=4 + r)))
    _write(out, layout, timed)
    return work


def crash(out: Path, layout: str, wait: str, lines: list[str], rank: int) -> str:
    timed = _steps() + [(4 + i / 100, rank, x) for i, x in enumerate(lines)]
    for r in range(WORLD):
        if r != rank:
            timed.append((604 + r, r, AFTER_CRASH[wait].format(r=r, s=4 + r, p=rank + 1)))
    _write(out, layout, timed)
    return lines[-1]


def warn_chain(out: Path, layout: str, wait: str, warn: str, rank: int) -> str:
    # NCCL names the host it runs on: two workers per node in "two-node"
    node = rank // 2 if layout == "two-node" else rank
    host = f"node{node}:{4100 + rank}:{4180 + rank} [{rank % 2 if layout == 'two-node' else rank}]"
    first = f"{host} transport/net_ib.cc:1295 NCCL WARN {warn}"
    timed = _steps() + [
        (4.0, rank, first),
        (4.01, rank, f"{host} NCCL INFO transport/net.cc:1158 -> 2"),
        (4.02, rank, f"{host} NCCL INFO proxy.cc:1514 -> 2"),
    ]
    for r in range(WORLD):
        detail = (
            warn
            if r == rank
            else f"socketProgress: Connection closed by remote peer node{rank}<35722>"
        )
        if wait == "last-error" or r == rank:
            lines = [
                WRAPPER,
                "ncclSystemError: System call failed or device error.",
                "Last error:",
                detail,
            ]
        else:
            lines = [WATCHDOG_NEW.format(r=r, s=4 + r)]
        for i, x in enumerate(lines):
            timed.append((5 + r + i / 100 if r == rank else 604 + r + i / 100, r, x))
    _write(out, layout, timed)
    return first


AGENT = "W1204 10:00:05.{n:06d} 900 torch/distributed/elastic/multiprocessing/api.py:{at}] {msg}"


def killed(out: Path, layout: str, peers: str, dmesg: str, rank: int) -> str:
    """One worker is SIGKILLed (the kernel's OOM killer) and prints nothing;
    its node's torchrun agent reports the exit and stops the others."""
    local = rank % 2 if layout == "two-node" else rank
    pid = 5000 + rank
    failed = f"failed (exitcode: -9) local_rank: {local} (pid: {pid}) of binary: /usr/bin/python3"
    agent = [
        AGENT.format(n=i, at=897, msg=f"Sending process {5000 + r} closing signal SIGTERM")
        for i, r in enumerate(r for r in range(WORLD) if r != rank)
    ]
    agent.append(AGENT.format(n=9, at=869, msg=failed).replace("W1204", "E1204", 1))
    agent += [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2024-12-04_10:00:05",
        f"  host      : node{rank // 2 if layout == 'two-node' else 0}",
        f"  rank      : {rank} (local_rank: {local})",
        f"  exitcode  : -9 (pid: {pid})",
        "  error_file: <N/A>",
        f"  traceback : Signal 9 (SIGKILL) received by PID {pid}",
    ]
    timed = _steps()
    if peers == "sigterm":
        timed += [
            (5.5, r, f"[2024-12-04 10:00:05,500] INFO Received SIGTERM, shutting down rank {r}")
            for r in range(WORLD)
            if r != rank
        ]
    _write(out, layout, timed)
    # the agent's own lines carry no worker prefix: they go to the console of
    # the failing worker's node, or to a launcher log beside per-rank files
    if layout in ("console", "plain"):
        target = out / "console.log"
    elif layout == "two-node":
        target = out / f"node{rank // 2}" / "console.log"
    elif layout == "per-node":
        target = out / f"node{rank}.log"
    else:
        target = out / "launcher.log"
    with target.open("a") as f:
        f.write("".join(f"{x}\n" for x in agent))
    if dmesg == "dmesg":
        oom = (
            f"[Wed Dec  4 10:00:04 2024] Out of memory: Killed process {pid} (python3) "
            "total-vm:98765432kB, anon-rss:87654321kB, file-rss:0kB, shmem-rss:0kB"
        )
        (out / "dmesg.txt").write_text(oom + "\n")
        return oom
    return failed


JOIN_WAITS = {
    "store-join": "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for "
    "clients. 1/2 clients joined.",
    "rdzv-timeout": "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError: ",
}
BRINGUP = [
    "ModuleNotFoundError: No module named 'flash_attn'",
    "RuntimeError: No CUDA GPUs are available",
    "/usr/bin/env: 'python3.11': No such file or directory",
    "OSError: [Errno 28] No space left on device: '/tmp/triton_cache'",
]
NODE_LAYOUTS = ["per-node", "pdsh", "slurm"]


def never_joined(out: Path, layout: str, wait: str, err: str, rank: int) -> str:
    """The second node fails while it starts (a missing module, no GPU, a
    full disk) and never joins; the first node's only failure is the
    rendezvous or store timeout.  ``rank`` is unused: node 1 failed."""
    node0 = [
        "[2024-12-04 10:00:00,000] INFO Starting elastic_operator with launch configs",
        "[2024-12-04 10:00:01,000] INFO Rendezvous'ing worker group",
        f"[2024-12-04 10:15:02,000] ERROR {JOIN_WAITS[wait]}",
    ]
    node1 = ["[2024-12-04 10:00:00,500] INFO Starting elastic_operator with launch configs", err]
    if layout == "per-node":
        (out / "node0.log").write_text("\n".join(node0) + "\n")
        (out / "node1.log").write_text("\n".join(node1) + "\n")
    elif layout == "pdsh":
        rows = [
            f"gpu-a{n}: {x}"
            for n, lines in ((0, node0[:2]), (1, node1), (0, node0[2:]))
            for x in lines
        ]
        (out / "console.log").write_text("\n".join(rows) + "\n")
    else:
        rows = [
            f"{n}: {x}" for n, lines in ((0, node0[:2]), (1, node1), (0, node0[2:])) for x in lines
        ]
        rows.append("srun: error: gpu-a1: task 1: Exited with exit code 1")
        (out / "slurm-4242.out").write_text("\n".join(rows) + "\n")
    return err


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--show-misses", action="store_true", help="print each probe missed")
    a = ap.parse_args(argv)
    families = {
        "slow rank": (
            slow_rank,
            # the store's key is rank 0's: another rank being busy would not explain it
            [
                (lay, w, x, r)
                for lay, w, x, r in itertools.product(LAYOUTS, WAITS, WORK, (0, 2))
                if w != "store" or r == 0
            ],
        ),
        "crash, then timeouts": (
            crash,
            list(itertools.product(LAYOUTS, AFTER_CRASH, CRASHES, (0, 2))),
        ),
        "NCCL WARN, then wrappers": (
            warn_chain,
            list(itertools.product(LAYOUTS, ["last-error", "watchdog"], WARNS, (0, 2))),
        ),
        "killed, then torn down": (
            killed,
            list(itertools.product(LAYOUTS, ["silent", "sigterm"], ["none", "dmesg"], (0, 2))),
        ),
        "a node never joined": (
            never_joined,
            list(itertools.product(NODE_LAYOUTS, JOIN_WAITS, BRINGUP, (1,))),
        ),
    }
    for name, (make, grid) in families.items():
        per_layout: dict[str, list[bool]] = {lay: [] for lay in dict.fromkeys(g[0] for g in grid)}
        for layout, wait, what, rank in grid:
            with tempfile.TemporaryDirectory() as tmp:
                want = make(Path(tmp), layout, wait, what, rank)  # type: ignore[operator]
                d = dx.diagnose(tmp)
            got = d.initiating
            # where no line names a global rank (a console with no prefixes;
            # files per node with Gloo's untagged errors) the line alone is scored
            anonymous = (
                make is never_joined  # the failing node's lines name no global rank
                or layout == "plain"
                or (layout == "per-node" and wait == "gloo")
                # no line of the failing node names a global rank
                or (layout == "two-node" and wait in ("gloo", "last-error"))
            )
            ok = got is not None and want in got.text and (anonymous or got.rank == rank)
            per_layout[layout].append(ok)
            if not ok and a.show_misses:
                shown = f"rank {got.rank} {got.text[:80]!r}" if got else "nothing"
                print(f"  miss {name}: {layout} {wait} rank {rank}: {d.verdict}, {shown}")
        cells = ", ".join(f"{lay} {sum(v)}/{len(v)}" for lay, v in per_layout.items())
        total = [x for v in per_layout.values() for x in v]
        print(f"{name}: {sum(total)}/{len(total)} ({cells})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
