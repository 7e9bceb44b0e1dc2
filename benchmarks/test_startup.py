"""Start-up of ``denpex scan`` and ``denpex diagnose`` on a tiny input.

Whole processes on a warm cache (the compiled database and the parsed
knowledge base cached), split with ``python -X importtime`` into the bare
interpreter, the imports, and the rest (knowledge-base and database load,
the work itself, exit).  The figures are seconds; the table also names the
five costliest top-level imports.

The processes may write bytecode whatever ``PYTHONDONTWRITEBYTECODE`` says:
an installed package has its modules compiled at install time, and without
bytecode every start compiles them again (0.18-0.24 s instead of 0.14-0.16 s
for ``scan -q`` on one 2-core VM).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import record

#: the environment of the measured processes: bytecode written as an install has it
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _wall(cmd: list[str], runs: int = 7) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=False, env=ENV)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _imports(cmd: list[str]) -> tuple[float, list[tuple[float, str]]]:
    """(seconds spent importing, the costliest top-level imports)."""
    p = subprocess.run(
        [sys.executable, "-X", "importtime", *cmd[1:]], capture_output=True, text=True, env=ENV
    )
    top = []
    for line in p.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|", 2)
        if cumulative.strip().isdigit() and not name.startswith("  "):  # top level
            top.append((int(cumulative) / 1e6, name.strip()))
    return sum(t for t, _ in top), sorted(top, reverse=True)[:5]


@pytest.mark.parametrize("command", ["scan -q", "scan", "diagnose"])
def test_startup_split(benchmark, tmp_path: Path, command: str) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path / "job" / "rank0.log"
    log.parent.mkdir()
    log.write_text("step 1 loss 0.5\n[rank0]: torch.OutOfMemoryError: CUDA out of memory.\n" * 100)
    cmd = [sys.executable, "-m", "denpex_fast", *command.split(), str(log.parent)]
    subprocess.run(cmd, capture_output=True, check=False, env=ENV)  # warm the caches
    bare = _wall([sys.executable, "-c", "pass"])
    benchmark.pedantic(lambda: _wall(cmd, runs=1), rounds=7, iterations=1)
    whole = benchmark.stats.stats.median
    imports, top = _imports(cmd)
    record(
        f"start-up denpex {command} (10 KB): interpreter {bare:.3f} s, imports {imports:.3f} s, "
        f"rest {max(whole - bare - imports, 0):.3f} s; top imports "
        + ", ".join(f"{n} {t * 1000:.0f} ms" for t, n in top),
        log.stat().st_size,
        whole,
    )
