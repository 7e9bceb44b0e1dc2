"""Benchmark fixtures: a generated corpus, the pattern set, the ceiling binary.

Environment: ``DENPEX_BENCH_GB`` (corpus size, default 1), ``DENPEX_BENCH_DIR``
(where the corpus is generated and kept between runs, default
``benchmarks/.data``).  The figures are printed as one table at the end.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from gen_corpus import generate  # noqa: E402
from patterns import benchmark_patterns, to_grep_ere, write_pattern_file  # noqa: E402

RESULTS: dict[str, dict[str, float]] = {}


def data_dir() -> Path:
    d = Path(os.environ.get("DENPEX_BENCH_DIR", HERE / ".data"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def bench_bytes() -> int:
    """The corpus size the benchmarks use (``DENPEX_BENCH_GB``, default 1)."""
    return int(float(os.environ.get("DENPEX_BENCH_GB", "1")) * (1 << 30))


@pytest.fixture(scope="session")
def corpus() -> Path:
    gb = float(os.environ.get("DENPEX_BENCH_GB", "1"))
    path = data_dir() / f"corpus-{gb:g}G.log"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        generate(str(tmp), int(gb * (1 << 30)), seed=1)
        tmp.replace(path)
    return path


@pytest.fixture(scope="session")
def pattern_set() -> dict[str, object]:
    pairs = benchmark_patterns(250)
    d = data_dir()
    hs_file = d / "patterns.hs.txt"
    write_pattern_file(str(hs_file), [e for _, e in pairs])
    # rg joins -f patterns into one alternation, so an inline flag such as
    # (?i) would reach the patterns after it: each one is grouped on its own
    rg_file = d / "patterns.rg.txt"
    write_pattern_file(str(rg_file), [f"(?:{e})" for _, e in pairs])
    ere = [x for x in (to_grep_ere(e) for _, e in pairs) if x is not None]
    ere_file = d / "patterns.ere.txt"
    write_pattern_file(str(ere_file), ere)
    return {
        "pairs": pairs,
        "hs_file": hs_file,
        "rg_file": rg_file,
        "ere_file": ere_file,
        "n_ere": len(ere),
    }


@pytest.fixture(scope="session")
def ceiling_binary() -> Path:
    out = data_dir() / "hs_ceiling"
    src = HERE / "hs_ceiling.c"
    if not out.exists() or out.stat().st_mtime < src.stat().st_mtime:
        flags = subprocess.run(
            ["pkg-config", "--cflags", "--libs", "libhs"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        subprocess.run(["gcc", "-O2", "-o", str(out), str(src), *flags, "-lpthread"], check=True)
    return out


def record(name: str, nbytes: int, seconds: float, **extra: float) -> dict[str, float]:
    row = {"bytes": float(nbytes), "seconds": seconds, "GB_per_s": nbytes / seconds / 1e9, **extra}
    RESULTS[name] = row
    return row


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # type: ignore[no-untyped-def]
    if not RESULTS:
        return
    tr = terminalreporter
    tr.section("denpex_fast throughput (GB/s, same run, same corpus)")
    tr.write_line(
        f"machine: {platform.machine()}, {os.cpu_count()} cpus, "
        f"{platform.python_implementation()} {platform.python_version()}"
    )
    ceiling = RESULTS.get("raw hs_scan ceiling, 1 thread", {}).get("GB_per_s")
    for name, row in RESULTS.items():
        ratio = f"  {row['GB_per_s'] / ceiling:5.2f}x ceiling" if ceiling else ""
        rss = f"  peak RSS {row['peak_rss_mib']:.0f} MiB" if "peak_rss_mib" in row else ""
        tr.write_line(f"{name:<48} {row['GB_per_s']:7.3f} GB/s{ratio}{rss}")


def have(tool: str) -> bool:
    return shutil.which(tool) is not None
