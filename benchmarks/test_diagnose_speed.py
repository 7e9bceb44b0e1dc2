"""Cost of the diagnosis over the scan alone, and of --baseline.

On the generated 64-rank console (``conftest.corpus``, DENPEX_BENCH_GB), with
the built-in knowledge base: scan only; diagnose (scan + attribution +
ranking + progress tails); diagnose with a healthy baseline of 256 MiB.
"""

from __future__ import annotations

import time
from pathlib import Path

import denpex_fast as dx

from conftest import data_dir, record
from gen_corpus import generate


def _best(fn, rounds: int = 2) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def test_diagnose_vs_scan(benchmark, corpus: Path) -> None:
    healthy = data_dir() / "healthy-256M.log"
    if not healthy.exists():
        generate(str(healthy), 256 << 20, seed=7, failure_rate=0.0)
    scanner = dx.Scanner()
    size = corpus.stat().st_size
    t_scan = _best(lambda: scanner.scan([corpus]))
    t_diag = _best(lambda: dx.diagnose([str(corpus)], scanner=scanner))
    from denpex_fast.analysis.baseline import template_set

    def with_baseline(cache: bool) -> None:
        known = template_set([str(healthy)], cache=cache)
        dx.diagnose([str(corpus)], scanner=scanner, baseline=known)

    t_base = _best(lambda: with_baseline(False), 1)  # the first comparison: templated
    with_baseline(True)  # the baseline's template set is now cached
    t_warm = _best(lambda: with_baseline(True), 2)
    benchmark.pedantic(lambda: None, rounds=1)
    record("scan, built-in knowledge base", size, t_scan)
    record("diagnose", size, t_diag, ratio_to_scan=t_diag / t_scan)
    record("diagnose --baseline (256 MiB healthy run)", size, t_base, ratio_to_scan=t_base / t_scan)
    record("diagnose --baseline, its templates cached", size, t_warm, ratio_to_scan=t_warm / t_scan)
    print(
        f"\nscan {t_scan:.2f} s, diagnose {t_diag:.2f} s ({t_diag / t_scan:.2f}x), "
        f"with baseline {t_base:.2f} s ({t_base / t_scan:.2f}x), "
        f"cached {t_warm:.2f} s ({t_warm / t_scan:.2f}x)"
    )


def test_chatty_job_diagnose_vs_scan(benchmark) -> None:
    """The job whose line mix real runs have (``gen_chatty``: 16 rank logs, ~1 GiB by
    default with DENPEX_BENCH_GB, NCCL INFO bursts, DeepSpeed step/overflow/checkpoint
    lines, tqdm, JSON metrics): diagnose / scan on two threads, both in this process."""
    from gen_chatty import generate as generate_chatty

    from conftest import bench_bytes

    size = bench_bytes()
    files = [str(p) for p in generate_chatty(data_dir() / f"chatty-{size}", size, ranks=16)]
    scanner = dx.Scanner()
    scanner.scan(files, threads=2)  # page cache and compiled database warm
    t_scan = _best(lambda: scanner.scan(files, threads=2), 3)
    t_diag = _best(lambda: dx.diagnose(files, scanner=scanner, threads=2), 3)
    d = dx.diagnose(files, scanner=scanner, threads=2)
    assert d.initiating is not None and d.initiating.signature == "cuda-oom"
    assert d.suspect_rank == 5
    benchmark.pedantic(lambda: None, rounds=1)
    size = sum(Path(f).stat().st_size for f in files)
    record("scan, chatty 16-rank job (2 threads)", size, t_scan)
    record("diagnose, chatty 16-rank job (2 threads)", size, t_diag, ratio_to_scan=t_diag / t_scan)
    print(f"\nchatty job: scan {t_scan:.2f} s, diagnose {t_diag:.2f} s ({t_diag / t_scan:.2f}x)")


def _whole_process(args: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one ``denpex`` process, measured
    from a fresh parent so that the peak is that command's alone."""
    import json
    import subprocess
    import sys

    probe = (
        "import json, resource, subprocess, sys, time\n"
        "t0 = time.perf_counter()\n"
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "dt = time.perf_counter() - t0\n"
        "print(json.dumps([dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, sys.executable, "-m", "denpex_fast", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    seconds, peak = json.loads(out.stdout)
    return float(seconds), float(peak)


def test_large_job_whole_process(benchmark) -> None:
    """A 64-rank chatty job of ``DENPEX_BENCH_LARGE_GB`` (default 4) GiB: the
    ``denpex diagnose -j2`` / ``denpex scan -j2 -q`` pair as whole processes,
    alternated, with each one's peak RSS (interpreter included)."""
    import os

    from gen_chatty import generate as generate_chatty

    size = int(float(os.environ.get("DENPEX_BENCH_LARGE_GB", "4")) * (1 << 30))
    files = [str(p) for p in generate_chatty(data_dir() / f"chatty64-{size}", size, ranks=64)]
    scan = ["scan", "-j2", "-q", *files]
    diag = ["diagnose", "-j2", *files]
    _whole_process(scan)  # page cache and compiled database warm
    runs = [(_whole_process(scan), _whole_process(diag)) for _ in range(3)]
    ratios = sorted(d[0] / s[0] for s, d in runs)
    t_scan = sorted(s[0] for s, _ in runs)[1]
    t_diag = sorted(d[0] for _, d in runs)[1]
    peak_scan = max(s[1] for s, _ in runs)
    peak_diag = max(d[1] for _, d in runs)
    benchmark.pedantic(lambda: None, rounds=1)
    nbytes = sum(Path(f).stat().st_size for f in files)
    record("scan -j2 -q, 64-rank job, whole process", nbytes, t_scan, peak_mib=peak_scan)
    record(
        "diagnose -j2, 64-rank job, whole process",
        nbytes,
        t_diag,
        ratio_to_scan=ratios[1],
        peak_mib=peak_diag,
    )
    print(
        f"\n64-rank {nbytes / 2**30:.1f} GiB: scan {t_scan:.2f} s ({peak_scan:.0f} MiB), "
        f"diagnose {t_diag:.2f} s ({peak_diag:.0f} MiB), median pair ratio {ratios[1]:.2f}x"
    )
