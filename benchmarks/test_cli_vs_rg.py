"""``denpex scan`` as a command against ``rg`` on the same file and patterns.

Whole processes (start-up, scan, printing), the same pattern set (one
signature per expression for denpex, ``-f`` for rg); the figures are the
ratios denpex / rg for counting (``-c``) and for printing every matching line
(denpex prints one row per line and signature, rg one per line).  Output goes
to a pipe that is read and dropped (rg treats ``/dev/null`` as ``-q``).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import have, record


def _denpex_patterns(pattern_set: dict, tmp: Path) -> Path:
    p = tmp / "patterns.denpex"
    p.write_text("".join(f"p{i}={e}\n" for i, (_, e) in enumerate(pattern_set["pairs"])))
    return p


def _timed(cmd: list[str]) -> tuple[float, bytes]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True)
    assert p.returncode in (0, 1), p.stderr[:500]
    return time.perf_counter() - t0, p.stdout


@pytest.mark.skipif(not have("rg"), reason="ripgrep is not installed")
@pytest.mark.parametrize("mode", ["count", "print-all"])
def test_scan_command_vs_ripgrep(
    benchmark, corpus: Path, pattern_set: dict, tmp_path: Path, mode: str
) -> None:
    denpex = [
        sys.executable,
        "-m",
        "denpex_fast",
        "scan",
        "-f",
        str(_denpex_patterns(pattern_set, tmp_path)),
    ]
    rg = ["rg", "--no-unicode", "-f", str(pattern_set["rg_file"])]
    if mode == "count":
        denpex += ["-c", str(corpus)]
        rg += ["-c", str(corpus)]
    else:
        denpex += ["-m", str(1 << 40), str(corpus)]
        rg += ["-n", str(corpus)]
    t_rg, out_rg = _timed(rg)
    benchmark.pedantic(lambda: _timed(denpex)[0], rounds=2, iterations=1, warmup_rounds=0)
    size = corpus.stat().st_size
    record(f"rg {mode}", size, t_rg)
    record(
        f"denpex scan {mode}",
        size,
        benchmark.stats.stats.min,
        ratio_vs_rg=benchmark.stats.stats.min / t_rg,
    )
    if mode == "count":  # the same matching lines
        _, out_dx = _timed(denpex)
        assert out_dx.strip() == out_rg.strip()
