"""Batch indexing benchmarks (not run in CI).

    pytest benchmarks/test_index.py --benchmark-only -s

A generated archive of ``DENPEX_BENCH_JOBS`` jobs (default 200) of about
``DENPEX_BENCH_JOB_MB`` MiB each uncompressed (default 21, so >= 4 GiB in
all), each job a plain, a ``.gz`` and a ``.zst`` rank log, is built once
under ``benchmarks/.data``.  Measured: a full index with 1 and 2 local
threads, with 2 local worker processes, with a 2-worker Dask LocalCluster,
a re-index of the unchanged archive, and a DuckDB ``--top-causes`` report.
Each full index waits a minute first (once) when the 1-minute load
average is above 1.5, and prints the load before and after.
"""

from __future__ import annotations

import gzip
import os
import shutil
import time
from pathlib import Path

import pytest

from denpex_fast.batch.build import build_index
from denpex_fast.batch.query import open_index
from denpex_fast.engine.scanner import Scanner

from conftest import RESULTS, data_dir
from gen_corpus import generate

TIMES: dict[str, float] = {}
BUSY = 1.5


def _make_job(d: Path, seed: int, mib: float) -> int:
    """Three rank logs (plain, gzip, zstd) with different seeds and sizes."""
    from backports import zstd

    d.mkdir(parents=True, exist_ok=True)
    parts = [0.45, 0.35, 0.20]
    total = 0
    for k, share in enumerate(parts):
        size = int(mib * share * (1 << 20))
        tmp = d / f"rank{k}.tmp"
        total += generate(str(tmp), size, seed=seed * 10 + k)
        if k == 0:
            tmp.replace(d / "rank0.log")
        elif k == 1:
            with (
                open(tmp, "rb") as src,
                gzip.open(d / "rank1.log.gz", "wb", compresslevel=3) as dst,
            ):
                shutil.copyfileobj(src, dst, 1 << 22)
            tmp.unlink()
        else:
            (d / "rank2.log.zst").write_bytes(zstd.compress(tmp.read_bytes(), 3))
            tmp.unlink()
    return total


@pytest.fixture(scope="session")
def job_archive() -> tuple[Path, int]:
    """The archive (cached) and its uncompressed size in bytes."""
    n = int(os.environ.get("DENPEX_BENCH_JOBS", "200"))
    mib = float(os.environ.get("DENPEX_BENCH_JOB_MB", "21"))
    root = data_dir() / f"jobs-{n}x{mib:g}M"
    done = root / ".complete"
    if not done.exists():
        total = 0
        for i in range(n):
            total += _make_job(
                root / f"job-{i:04d}", seed=1000 + i, mib=mib * (0.8 + 0.4 * (i % 5) / 4)
            )
        done.write_text(str(total))
    return root, int(done.read_text())


@pytest.fixture(scope="session")
def scanner() -> Scanner:
    return Scanner()


def _settle() -> float:
    """Wait a minute (once) if the machine is busy; the load when starting."""
    if os.getloadavg()[0] > BUSY:
        time.sleep(60)
    return os.getloadavg()[0]


def _full(root: Path, out: Path, scanner: Scanner, **kw: object) -> float:
    shutil.rmtree(out, ignore_errors=True)
    print(f"\nload before: {_settle():.2f}", end="")
    t0 = time.perf_counter()
    s = build_index(str(root), str(out), scanner=scanner, **kw)  # type: ignore[arg-type]
    dt = time.perf_counter() - t0
    assert s.ok and s.count("indexed") == len(s.reports)
    return dt


def _record(name: str, nbytes: int, seconds: float) -> None:
    TIMES[name] = seconds
    RESULTS[name] = {"bytes": float(nbytes), "seconds": seconds, "GB_per_s": nbytes / seconds / 1e9}
    print(
        f"\n{name}: {seconds:.2f} s, {nbytes / seconds / 1e9:.3f} GB/s "
        f"(load after {os.getloadavg()[0]:.2f})"
    )


@pytest.mark.parametrize("threads", [1, 2])
def test_index_local_threads(benchmark, job_archive, scanner, threads: int) -> None:  # type: ignore[no-untyped-def]
    root, nbytes = job_archive
    out = data_dir() / f"bench-index-{threads}"
    dt = benchmark.pedantic(
        _full, args=(root, out, scanner), kwargs={"threads": threads}, rounds=1, iterations=1
    )
    _record(f"index, {threads} local thread(s)", nbytes, dt if dt else benchmark.stats.stats.mean)
    if threads == 2 and "index, 1 local thread(s)" in TIMES:
        print(
            f"speed-up 2 vs 1 threads: {TIMES['index, 1 local thread(s)'] / TIMES[f'index, {threads} local thread(s)']:.2f}x"
        )


def test_index_local_processes(benchmark, job_archive, scanner) -> None:  # type: ignore[no-untyped-def]
    root, nbytes = job_archive
    out = data_dir() / "bench-index-procs"
    dt = benchmark.pedantic(
        _full, args=(root, out, scanner), kwargs={"processes": 2}, rounds=1, iterations=1
    )
    _record("index, 2 local processes", nbytes, dt)
    if "index, 1 local thread(s)" in TIMES:
        print(f"speed-up 2 processes vs 1 thread: {TIMES['index, 1 local thread(s)'] / dt:.2f}x")


def test_index_dask_local_cluster(benchmark, job_archive, scanner) -> None:  # type: ignore[no-untyped-def]
    from distributed import Client

    from denpex_fast.batch.dask import local_cluster

    root, nbytes = job_archive
    out = data_dir() / "bench-index-dask"
    with local_cluster() as cluster, Client(cluster) as client:
        client.run(lambda: None)  # workers up before timing
        dt = benchmark.pedantic(
            _full, args=(root, out, scanner), kwargs={"dask": client}, rounds=1, iterations=1
        )
    _record("index, Dask LocalCluster 2 workers", nbytes, dt)
    if "index, 2 local thread(s)" in TIMES:
        print(f"Dask / 2 threads time: {dt / TIMES['index, 2 local thread(s)']:.2f}")


def test_reindex_unchanged(benchmark, job_archive, scanner) -> None:  # type: ignore[no-untyped-def]
    root, nbytes = job_archive
    out = data_dir() / "bench-index-2"
    if not (out / "diagnosis").is_dir():
        _full(root, out, scanner, threads=2)

    def again() -> float:
        t0 = time.perf_counter()
        s = build_index(str(root), str(out), scanner=scanner, threads=2)
        assert s.count("unchanged") == len(s.reports)
        return time.perf_counter() - t0

    dt = benchmark.pedantic(again, rounds=3, iterations=1)
    _record("re-index, unchanged archive", nbytes, dt)
    if "index, 2 local thread(s)" in TIMES:
        print(f"re-index / full index: {100 * dt / TIMES['index, 2 local thread(s)']:.1f} %")


def test_top_causes_query(benchmark, job_archive, scanner) -> None:  # type: ignore[no-untyped-def]
    root, _ = job_archive
    out = data_dir() / "bench-index-2"
    if not (out / "diagnosis").is_dir():
        _full(root, out, scanner, threads=2)

    def query() -> float:
        t0 = time.perf_counter()
        ix = open_index(str(out))
        t = ix.report("top-causes")
        ix.close()
        assert t.num_rows >= 1
        return time.perf_counter() - t0

    dt = benchmark.pedantic(query, rounds=5, iterations=1)
    TIMES["top-causes query"] = dt
    print(f"\ntop-causes query: {dt * 1000:.0f} ms")


def test_cli_reindex_unchanged_small_archive(benchmark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Whole ``denpex index`` processes over 40 jobs of ~1.5 MiB: the first
    index against a re-index of the unchanged archive (proven unchanged by the
    seal's stats, without importing the index's machinery)."""
    import subprocess
    import sys

    root = data_dir() / "jobs-40x1.5M"
    done = root / ".complete"
    if not done.exists():
        for i in range(40):
            d = root / f"job-{i:02d}"
            d.mkdir(parents=True, exist_ok=True)
            generate(str(d / "rank0.log"), int(1.5 * (1 << 20)), seed=5000 + i)
        done.write_text("40")
    out = tmp_path / "index"
    cmd = [sys.executable, "-m", "denpex_fast", "index", str(root), "-o", str(out), "-q"]

    def first() -> float:
        shutil.rmtree(out, ignore_errors=True)
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        return time.perf_counter() - t0

    firsts = sorted(first() for _ in range(3))
    benchmark.pedantic(lambda: subprocess.run(cmd, check=True), rounds=7, iterations=1)
    again = benchmark.stats.stats.median
    RESULTS["re-index of 40 jobs / first index (whole process)"] = {
        "bytes": 0.0,
        "seconds": again,
        "ratio": again / firsts[1],
    }
    print(f"\nfirst index {firsts[1]:.3f} s, re-index {again:.3f} s: {again / firsts[1]:.3f}")
