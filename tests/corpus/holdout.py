"""Generate the held-out family: real jobs the diagnosis was never tuned on.

The main matrix (``generate.py``) runs ``worker.py``, whose lines the ranking
has seen in development.  This family runs ``trainer_worker.py`` instead -- a
different script, other log styles (no timestamps at all, or ISO-8601), other
faults (a ``KeyError`` in the batch, a missing data shard, an ``assert``, a
non-finite-loss guard, SIGSEGV, SIGABRT) -- under five launcher layouts that
differ from the main matrix's:

========  =========================================================================
launcher  layout
========  =========================================================================
tee       torchrun, 1 node x 4, ``--tee 3`` and no log dir: one console with
          ``[defaultN]:`` prefixes
files     torchrun, 1 node x 4, ``--redirects 3``: the ranks' output only in
          per-rank ``stdout.log``/``stderr.log``; the console holds the agent
acc       ``accelerate launch --multi_gpu``, 1 node x 4 on the CPU (torchrun underneath)
dsl       the ``deepspeed`` launcher, console only (no per-rank prefix)
mpi       ``mpirun --tag-output``, console only (``[1,N]<stdout>:`` prefixes)
========  =========================================================================

Each case's ``truth.json`` is written the way ``generate.py`` writes it (same
schema, lines located automatically).  ``partition.json`` marks the whole
``holdout/`` directory blind: it was generated once, frozen, and nothing is
fitted or written against it.

Usage::

    python tests/corpus/holdout.py --out tests/corpus/holdout
    python tests/corpus/holdout.py --list
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generate as g  # noqa: E402  (the shared runner helpers)

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "holdout"
PG_TIMEOUT_S = 15
STEPS = 10
FAULT_STEP = 5

LAUNCHERS = {
    "tee": ("torchrun --tee 3, 1 node x 4 ranks, one console", "plain"),
    "files": ("torchrun --redirects 3, 1 node x 4 ranks, per-rank files", "iso"),
    "acc": ("accelerate launch --multi_gpu, 1 node x 4 ranks on the CPU", "plain"),
    "dsl": ("deepspeed launcher, 1 node x 4 ranks, console only", "iso"),
    "mpi": ("mpirun --tag-output, 1 node x 4 ranks, console only", "plain"),
    # variant 3 only
    "spawn": ("torch.multiprocessing.spawn from the script, 4 ranks, one console", "plain"),
    "tr2n": ("torchrun, 2 nodes (two agents, c10d) x 2 ranks, --tee 3, a console per node", "iso"),
    # variant 4 only
    "launch": ("python -m torch.distributed.launch (deprecated), 1 node x 4 ranks", "plain"),
    "filestee": ("torchrun --log-dir --redirects 3 --tee 3: per-rank files and the console", "iso"),
    # variant 5: the Trainer style (only the main process logs) on three launchers
    "acc-main": ("accelerate launch --multi_gpu, 1 node x 4, only rank 0 logs progress", "main"),
    "tee-main": ("torchrun --tee 3, 1 node x 4, only rank 0 logs progress", "main"),
    "mpi-main": ("mpirun --tag-output, 1 node x 4, only rank 0 logs progress", "main"),
}

# fault -> (how its first line is found, description, root cause)
FAULTS: dict[str, tuple[str, str, str]] = {
    "keyerror": (
        r"KeyError: 'labels'",
        "the batch dict lacks its 'labels' key",
        "The fault rank's batch had no 'labels' key (a collate/renaming bug), so indexing it raised KeyError.",
    ),
    "missing-shard": (
        r"FileNotFoundError: .*train-missing-",
        "opens a data shard that does not exist, right after joining the group",
        "The fault rank's data shard path does not exist; open() raised FileNotFoundError while its peers waited.",
    ),
    "assert": (
        r"AssertionError: expected a batch of 8",
        "gets a batch of 5 samples; the loop's assert fires",
        "The fault rank's batch had 5 samples instead of 8; the training loop's assert stopped it.",
    ),
    "nonfinite": (
        r"non-finite loss",
        "its loss becomes NaN; the loop's guard stops the rank (exit 1)",
        "The fault rank's inputs became infinite, its loss NaN, and the training loop's guard stopped it.",
    ),
    "segv": (
        "@signal:11",
        "dereferences NULL (SIGSEGV)",
        "The fault rank crashed with a segmentation fault (NULL dereference in native code).",
    ),
    "abort": (
        "@signal:6",
        "calls abort() (SIGABRT)",
        "The fault rank aborted (SIGABRT) in native code.",
    ),
    "sigkill": (
        "@signal:9",
        "is killed by SIGKILL",
        "The fault rank was killed by SIGKILL; its peers lost their connection to it.",
    ),
    "exit": (
        "@exit",
        "calls sys.exit(6) with no message",
        "The fault rank exited with status 6 in the middle of training, printing nothing.",
    ),
    "oom": (
        r"DefaultCPUAllocator: can't allocate memory",
        "allocates 4 GiB under an address-space limit",
        "The fault rank's 4 GiB allocation failed under its memory limit (ENOMEM).",
    ),
    "hang": (
        "@last-own",
        "stalls silently inside a step; the peers' collective times out",
        "The fault rank stopped inside a step; its peers' collective waited for it until the timeout.",
    ),
    "loader-kill": (
        r"DataLoader worker \(pid\(?s?\)? ?\d+\)? (?:is killed by signal|exited unexpectedly)",
        "loses a DataLoader worker process to SIGKILL",
        "A DataLoader worker process of the fault rank was killed (SIGKILL), so the rank's loader raised.",
    ),
    "anomaly": (
        r"RuntimeError: Function '\w+' returned nan values",
        "takes log() of negative inputs with anomaly detection on",
        "The fault rank's forward took log() of negative inputs; anomaly detection raised on the NaN in backward.",
    ),
    "target-oob": (
        r"IndexError: Target \d+ is out of bounds",
        "gets labels past the number of classes",
        "The fault rank's labels ran past the number of classes, so cross_entropy raised IndexError.",
    ),
    "rdzv-missing": (
        r"(?:^|\.)RendezvousTimeoutError\b",  # the exception line, not the frame's "raise" line
        "node1's agent never starts; node0's rendezvous times out",
        "The second node never started its agent, so the first node's rendezvous timed out waiting for it.",
    ),
    "rdzv-wrong-port": (
        r"(?:timed out after \d+ms while trying to connect|Connection refused|failed to connect)",
        "node1's agent is given the wrong rendezvous port",
        "The second node's agent was given a rendezvous endpoint nothing listens on and could not join.",
    ),
    "slow": (
        "@last-own",
        "computes for 60 s inside a step, still printing; the peers' collective times out",
        "The fault rank fell far behind (still computing) and its peers' collective timed out waiting for it.",
    ),
}
EXIT_CODE = 6

# Latin-square selection: each launcher runs a healthy control and a spread of faults,
# every fault on at least two launchers, each time on another rank.
PLAN: dict[str, tuple[str, ...]] = {
    "tee": ("keyerror", "segv", "exit", "hang", "nonfinite", "oom"),
    "files": ("missing-shard", "abort", "sigkill", "slow", "keyerror", "assert"),
    "acc": ("assert", "nonfinite", "sigkill", "hang", "missing-shard", "segv"),
    "dsl": ("oom", "keyerror", "exit", "slow", "abort", "nonfinite"),
    "mpi": ("segv", "missing-shard", "assert", "exit", "hang", "sigkill"),
}


@dataclasses.dataclass
class HCase:
    launcher: str
    fault: str  # "none": healthy control
    rank: int

    @property
    def name(self) -> str:
        return f"{self.launcher}-{'healthy' if self.fault == 'none' else self.fault}"


#: ``--variant 2``: the second family (``holdout2/``), generated after the first was
#: used in development: every launcher takes the next launcher's faults and the other
#: log style, the target ranks shift by two, and the fault comes one iteration earlier.
VARIANT = 1


#: ``--variant 3`` (``holdout3/``): the two layouts the first variants lack
PLAN3: dict[str, tuple[str, ...]] = {
    "spawn": ("keyerror", "sigkill", "exit", "hang", "nonfinite", "oom"),
    "tr2n": ("missing-shard", "abort", "sigkill", "slow", "assert", "exit"),
}


#: ``--variant 4`` (``holdout4/``): the deprecated launcher, per-rank files with the
#: console, data-loader, anomaly-mode and label faults, and rendezvous failures
PLAN4: dict[str, tuple[str, ...]] = {
    "launch": ("loader-kill", "anomaly", "target-oob", "sigkill", "hang", "exit"),
    "filestee": ("target-oob", "loader-kill", "anomaly", "abort", "slow", "oom"),
    "tr2n": ("rdzv-missing", "rdzv-wrong-port"),
}


#: ``--variant 5`` (``holdout5/``): the Trainer's habit of logging from the main
#: process only (the other ranks print nothing but their errors)
PLAN5: dict[str, tuple[str, ...]] = {
    "acc-main": ("keyerror", "sigkill", "oom", "nonfinite", "target-oob"),
    "tee-main": ("assert", "exit", "missing-shard", "loader-kill", "abort"),
    "mpi-main": ("target-oob", "keyerror", "oom", "nonfinite", "segv"),
}


def _plan() -> dict[str, tuple[str, ...]]:
    if VARIANT == 1:
        return PLAN
    if VARIANT == 5:
        return PLAN5
    if VARIANT == 3:
        return PLAN3
    if VARIANT == 4:
        return PLAN4
    keys = list(PLAN)
    return {k: PLAN[keys[(i + 1) % len(keys)]] for i, k in enumerate(keys)}


def style_of(launcher: str) -> str:
    style = LAUNCHERS[launcher][1]
    if VARIANT in (1, 3, 4, 5):
        return style
    return "plain" if style == "iso" else "iso"


def fault_step() -> int:
    return FAULT_STEP - 1 if VARIANT == 2 else FAULT_STEP


def cases() -> list[HCase]:
    out: list[HCase] = []
    shift = 0 if VARIANT == 1 else 2
    for li, (lk, faults) in enumerate(_plan().items()):
        if not (VARIANT == 4 and lk == "tr2n"):  # its healthy control is holdout3's
            out.append(HCase(lk, "none", -1))
        for fi, f in enumerate(faults):
            # a rendezvous failure happens before any rank exists
            rank = -1 if f.startswith("rdzv") else (li + fi * 3 + 1 + shift) % 4
            out.append(HCase(lk, f, rank))
    return out


def kind(c: HCase) -> str:
    """The launcher layout a case runs under (``acc-main`` runs as ``acc``)."""
    return c.launcher.removesuffix("-main")


def dirname(c: HCase) -> str:
    return ("" if VARIANT == 1 else f"v{VARIANT}-") + f"{cases().index(c) + 1:03d}-{c.name}"


#: where torchrun on one node puts its workers' output, per layout
TORCHRUN_OUTPUT = {
    "tee": ("--tee", "3"),
    "files": ("--log-dir", "logs", "--redirects", "3"),
    "filestee": ("--log-dir", "logs", "--redirects", "3", "--tee", "3"),
}


def command(c: HCase, port: int, data_dir: Path) -> list[str]:
    style = style_of(c.launcher)
    worker = [
        str(HERE / "trainer_worker.py"),
        "--steps",
        str(STEPS),
        "--fault",
        c.fault,
        "--fault-rank",
        str(c.rank),
        "--fault-step",
        str(fault_step()),
        "--style",
        style,
        "--pg-timeout-s",
        str(PG_TIMEOUT_S),
        "--exit-code",
        str(EXIT_CODE if c.fault == "exit" else 1),
        "--data-dir",
        str(data_dir),
    ]
    bindir = Path(sys.executable).parent
    rdzv = ["--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}"]
    if kind(c) == "spawn":
        return [sys.executable, *worker, "--spawn", "4"]
    if kind(c) == "launch":
        return [
            sys.executable,
            "-m",
            "torch.distributed.launch",
            "--nproc_per_node",
            "4",
            "--master_addr",
            "127.0.0.1",
            "--master_port",
            str(port),
            *worker,
        ]
    if kind(c) in TORCHRUN_OUTPUT:  # torchrun on one node, its output where the layout says
        return [
            *g.torchrun_cmd(),
            *("--nnodes", "1", "--nproc-per-node", "4"),
            *rdzv,
            *TORCHRUN_OUTPUT[kind(c)],
            *worker,
        ]
    if kind(c) == "tr2n":
        return [
            *g.torchrun_cmd(),
            *("--nnodes", "2", "--nproc-per-node", "2"),
            *rdzv,
            *("--rdzv-id", "holdout", "--max-restarts", "0", "--tee", "3"),
            *worker,
        ]
    if kind(c) == "acc":
        return [
            str(bindir / "accelerate"),
            "launch",
            "--multi_gpu",
            "--num_processes",
            "4",
            "--num_machines",
            "1",
            "--mixed_precision",
            "no",
            "--dynamo_backend",
            "no",
            "--main_process_port",
            str(port),
            *worker,
        ]
    if kind(c) == "dsl":
        return [
            str(bindir / "deepspeed"),
            "--num_gpus",
            "4",
            "--master_addr",
            "127.0.0.1",
            "--master_port",
            str(port),
            *worker,
        ]
    return [
        "mpirun",
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
        "4",
        "--tag-output",
        "--mca",
        "oob_tcp_if_include",
        "lo",
        "-x",
        "MASTER_ADDR=127.0.0.1",
        "-x",
        f"MASTER_PORT={port}",
        "-x",
        "GLOO_SOCKET_IFNAME",
        "-x",
        "OMP_NUM_THREADS",
        "-x",
        "PYTHONUNBUFFERED",
        sys.executable,
        *worker,
    ]


def run(c: HCase, root: Path) -> tuple[Path, dict[str, Any]]:
    case_dir = root / dirname(c)
    data_dir = root / "data"
    case_dir.mkdir(parents=True)
    data_dir.mkdir()
    env = dict(os.environ)
    env.update(TZ="UTC", PYTHONUNBUFFERED="1", GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
    if kind(c) == "dsl":
        env["DS_ACCELERATOR"] = "cpu"
    port = g.free_port()
    if kind(c) == "spawn":
        env["MASTER_PORT"] = str(port)
    cmd = command(c, port, data_dir)
    # two agents on this machine act as two nodes, each writing its own console
    agents = [(case_dir, cmd)]
    if kind(c) == "tr2n":
        # two agents on this machine act as two nodes, each writing its own console
        agents = []
        for n in (0, 1):
            if n == 1 and c.fault == "rdzv-missing":
                continue  # the second node never comes up
            argv = list(cmd)
            conf = "join_timeout=20" if c.fault.startswith("rdzv") else "join_timeout=60"
            if n == 1 and c.fault == "rdzv-wrong-port":
                wrong = g.free_port()
                argv[argv.index(f"127.0.0.1:{port}")] = f"127.0.0.1:{wrong}"
                conf += ",is_host=false,read_timeout=10"
            at = argv.index("--tee")
            argv[at:at] = ["--local-addr", f"127.0.0.{n + 1}", "--rdzv-conf", conf]
            agents.append((case_dir / f"node{n}", argv))
    started = time.time()
    procs = []
    try:
        for where, argv in agents:
            where.mkdir(exist_ok=True)
            console = open(where / "console.log", "wb")
            p = subprocess.Popen(
                argv,
                cwd=where,
                env=env,
                stdout=console,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            procs.append((p, console))
            if len(agents) > 1:
                time.sleep(1.0)  # node0 hosts the rendezvous store
        timed_out = False
        for p, _ in procs:
            try:
                p.wait(timeout=max(0.1, started + 180 - time.time()))
            except subprocess.TimeoutExpired:
                timed_out = True
    finally:
        for p, console in procs:
            g._kill_group(p)
            console.close()
    shutil.rmtree(data_dir, ignore_errors=True)
    codes = [p.returncode for p, _ in procs]
    return case_dir, {
        "exit": next((x for x in codes if x), 0),
        "agents": len(procs),
        "seconds": round(time.time() - started, 1),
        "timed_out": timed_out,
    }


# --------------------------------------------------------------------------- locating


def _own(rank: int) -> re.Pattern[str]:
    """A line the worker of ``rank`` printed itself (either style)."""
    return re.compile(rf"(?:\[rank {rank}\] |trainer\.rank{rank} )")


def _rank_tag(rank: int) -> re.Pattern[str]:
    """How a launcher marks a line of ``rank`` in a shared console."""
    return re.compile(rf"^(?:\[default{rank}\]:|\[1,{rank}\]<std(?:out|err)>:)")


def _files(case_dir: Path) -> list[Path]:
    return sorted(p for p in case_dir.rglob("*") if p.is_file() and p.name != "truth.json")


def _rank_of_file(path: Path) -> int | None:
    m = re.search(r"/attempt_\d+/(\d+)/", path.as_posix())
    return int(m.group(1)) if m else None


def _lines(path: Path) -> list[str]:
    """A file's lines as the tools count them: ended by ``\n`` only (a tqdm bar's
    ``\r`` redraws stay inside their line)."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    return text[:-1].split("\n") if text.endswith("\n") else text.split("\n")


def _is_ranks(path: Path, line: str, rank: int) -> bool:
    """Whether ``line`` of ``path`` is output of ``rank``: a per-rank file of it, a
    console line tagged with it, or (an untagged console) one of its own lines."""
    fr = _rank_of_file(path)
    if fr is not None:
        return fr == rank
    node = re.search(r"(?:^|/)node(\d)/", path.as_posix())
    if node is not None:  # two nodes x 2 ranks: the node's prefixes are local ranks
        if int(node.group(1)) != rank // 2:
            return False
        return bool(re.match(rf"^\[default{rank % 2}\]:", line))
    if _rank_tag(rank).search(line):
        return True
    if re.match(r"^\[(?:default\d+\]:|1,\d+\]<)", line):
        return False
    return True  # untagged console line: the pattern itself must be specific


def locate(c: HCase, case_dir: Path) -> dict[str, Any]:
    how = FAULTS[c.fault][0]
    files = _files(case_dir)
    console = case_dir / "console.log"

    def first(pattern: str, paths: list[Path], rank: int | None) -> tuple[Path, int, str] | None:
        rx = re.compile(pattern)
        for path in paths:
            for i, ln in enumerate(_lines(path), 1):
                if rx.search(ln) and (rank is None or _is_ranks(path, ln, rank)):
                    return path, i, ln
        return None

    hit = None
    if c.fault.startswith("rdzv"):
        node = case_dir / ("node1" if c.fault == "rdzv-wrong-port" else "node0") / "console.log"
        hit = first(how, [node], None)
    elif how == "@last-own":
        own = _own(c.rank)
        stop = re.compile(rf"(?:iter {fault_step()}[:/]|iter={fault_step()} )")
        best = None
        for path in files:
            for i, ln in enumerate(_lines(path), 1):
                if stop.search(ln) and own.search(ln):
                    break
                if own.search(ln):
                    best = (path, i, ln)
            if best:
                break
        hit = best
    elif how.startswith("@signal:") or how == "@exit":
        sig = how.split(":")[1] if ":" in how else None
        if sig and style_of(c.launcher) == "iso" and sig in ("11", "6"):
            # faulthandler prints the fatal signal in the rank's own stderr first
            word = "Segmentation fault" if sig == "11" else "Aborted"
            hit = first(rf"Fatal Python error: {word}", files, c.rank)
        if hit is None:
            code = f"-{sig}" if sig else str(EXIT_CODE)
            if kind(c) == "tr2n":
                pat = rf"failed \(exitcode: {code}\) local_rank: {c.rank % 2} "
                console = case_dir / f"node{c.rank // 2}" / "console.log"
            elif kind(c) == "spawn":
                names = {"9": "SIGKILL", "11": "SIGSEGV", "6": "SIGABRT"}
                end = f"signal {names[sig]}" if sig else f"exit code {EXIT_CODE}"
                pat = rf"process {c.rank} terminated with {end}"
            elif kind(c) in ("tee", "files", "acc", "launch", "filestee"):
                pat = rf"failed \(exitcode: {code}\) local_rank: {c.rank} "
            elif kind(c) == "dsl":
                pat = rf"exits with return code = {code}$"
            elif sig:
                pat = rf"mpirun noticed that process rank {c.rank} with PID \d+ on node \S+ exited on signal {sig}"
            else:
                pat = rf"Process name:\s+\[\[\d+,\d+\],{c.rank}\]"
            hit = first(pat, [console], None)
    else:
        hit = first(how, files, c.rank)
    if hit is None:
        raise RuntimeError(f"{c.name}: initiating line not found ({how})")
    path, line, text = hit
    return {
        "rank": c.rank if c.rank >= 0 else None,
        "host": "corpus-host",
        "file": path.relative_to(case_dir).as_posix(),
        "line": line,
        "text": text,
    }


DOWNSTREAM = (
    re.compile(r"closing signal SIGTERM"),
    re.compile(r"\bChildFailedError:"),
    re.compile(r"exits with return code = "),
    re.compile(r"^mpirun (?:detected|noticed) "),
    re.compile(r"(?:Timed out|Connection reset by peer|Connection closed by peer)"),
)


def downstream(case_dir: Path, init: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in _files(case_dir):
        rel = path.relative_to(case_dir).as_posix()
        for pat in DOWNSTREAM:
            for i, ln in enumerate(_lines(path), 1):
                if pat.search(ln) and not (rel == init["file"] and i == init["line"]):
                    out.append({"rank": None, "file": rel, "line": i, "text": ln})
                    break
    return out


def generate(c: HCase, out: Path) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="denpex-holdout-"))
    try:
        case_dir, facts = run(c, root)
        g.sanitize_tree(case_dir, root)
        if facts["timed_out"]:
            raise RuntimeError(f"{c.name}: hit the hard timeout: {facts}")
        healthy = c.fault == "none"
        if healthy and facts["exit"] != 0:
            raise RuntimeError(f"{c.name}: healthy control failed: {facts}")
        if not healthy and facts["exit"] == 0:
            raise RuntimeError(f"{c.name}: the faulted job exited 0: {facts}")
        init = None if healthy else locate(c, case_dir)
        desc, style = LAUNCHERS[c.launcher][0], style_of(c.launcher)
        truth: dict[str, Any] = {
            "schema": g.SCHEMA,
            "case": dirname(c),
            "source": "generated",
            "generator": f"tests/corpus/holdout.py --variant {VARIANT} --cases {c.name}",
            "healthy": healthy,
            "family": f"holdout-{c.launcher}",
            "fault": c.fault,
            "initiating": init,
            "downstream": [] if init is None else downstream(case_dir, init),
            "root_cause": "none (healthy run)" if healthy else FAULTS[c.fault][2],
            "fix": "none",
            "clock_offsets_s": {},
            "versions": {"torch": g._dist_version("torch"), "python": sys.version.split()[0]},
            "notes": (
                f"Held-out family ({desc}, {style} log style). "
                + (
                    "Healthy control."
                    if healthy
                    else f"Rank {c.rank} {FAULTS[c.fault][1]} at iteration {fault_step()}."
                )
                + f" Launcher exit status {facts['exit']}; wall time {facts['seconds']} s."
            ),
            "expected_verdict": "no-failure-found" if healthy else "failure",
        }
        g.keep_case(case_dir, truth, out / dirname(c))
        return truth
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Generate the held-out family of real failing jobs.")
    ap.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})"
    )
    ap.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument(
        "--variant",
        type=int,
        choices=(1, 2, 3, 4, 5),
        default=1,
        help="1: holdout/ (default), 2: holdout2/, 3: holdout3/ (spawn, two nodes), 4: holdout4/, "
        "5: holdout5/ (only the main process logs)",
    )
    a = ap.parse_args(argv)
    global VARIANT
    VARIANT = a.variant
    todo = cases()
    if a.list:
        for c in todo:
            print(
                f"{dirname(c):28s} rank {c.rank if c.rank >= 0 else '-'}  "
                f"{LAUNCHERS[c.launcher][0]} ({style_of(c.launcher)})"
            )
        return 0
    want = {re.sub(r"^(?:v\d-)?\d{3}-", "", n) for n in a.cases.split(",") if n.strip()}
    failed = 0
    for c in todo:
        if want and c.name not in want:
            continue
        try:
            t = generate(c, a.out)
            init = t["initiating"]
            print(
                f"ok   {dirname(c)}",
                "" if init is None else f"{init['file']}:{init['line']}",
                flush=True,
            )
        except Exception as e:  # one failing case must not stop the others
            failed += 1
            print(f"FAIL {dirname(c)}: {e}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
