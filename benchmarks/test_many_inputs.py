"""Many small inputs: one tar archive of N tiny members, and N one-line files.

Whole-process runs (``denpex index`` / ``denpex scan`` / ``denpex diagnose``)
at N and 10 N; the table shows time and peak RSS, and the ratios 10N / N
(near 10 for time means linear; near 1 for memory means bounded).
``DENPEX_BENCH_MEMBERS`` sets N (default 2,000).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from conftest import data_dir, record

N = int(os.environ.get("DENPEX_BENCH_MEMBERS", "2000"))


def _archive(n: int) -> Path:
    root = data_dir() / f"tar-{n}"
    arch = root / "job.tar.gz"
    if not arch.exists():
        root.mkdir(parents=True, exist_ok=True)
        with tarfile.open(arch, "w:gz") as t:
            for i in range(n):
                data = b"step 5 ok %d\n" % i
                info = tarfile.TarInfo(f"logs/m{i}.log")
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
    return root


def _files(n: int) -> Path:
    root = data_dir() / f"files-{n}"
    if not root.exists():
        root.mkdir(parents=True)
        for i in range(n):
            (root / f"f{i}.log").write_text(
                f"2024-05-01 12:00:{i % 60:02d},000 INFO step=1 worker={i}\n"
            )
    return root


_CHILD = (
    "import atexit, runpy, sys\n"
    "def _hwm():  # this process's peak RSS in KiB (ru_maxrss keeps the parent's across exec)\n"
    "    return int(next(x for x in open('/proc/self/status') if x.startswith('VmHWM')).split()[1])\n"
    "atexit.register(lambda: sys.stderr.write('PEAK %d\\n' % _hwm()))\n"
    "sys.argv = ['denpex'] + sys.argv[1:]\n"
    "runpy.run_module('denpex_fast', run_name='__main__')\n"
)


def _run(args: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS MiB) of one whole ``denpex`` process."""
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, *args],
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seconds = time.perf_counter() - t0
    peak = [int(x.split()[1]) for x in out.stderr.splitlines() if x.startswith("PEAK ")]
    return seconds, (peak[-1] / 1024 if peak else float("nan"))


@pytest.mark.parametrize("what", ["index-tar", "diagnose-tar", "scan-files", "diagnose-files"])
def test_many_small_inputs(benchmark, what: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rows = {}
    for n in (N, 10 * N):
        if what.endswith("tar"):
            root = _archive(n)
            args = (
                ["index", str(root), "-o", str(tmp_path / f"idx{n}"), "-q", "-e", "s=step 5"]
                if what == "index-tar"
                else ["diagnose", str(root / "job.tar.gz"), "-o", os.devnull]
            )
        else:
            root = _files(n)
            args = (
                ["scan", "-q", str(root)]
                if what == "scan-files"
                else ["diagnose", str(root), "-o", os.devnull]
            )
        rows[n] = (
            benchmark.pedantic(_run, args=(args,), rounds=1, iterations=1) if n == N else _run(args)
        )
    (t1, m1), (t10, m10) = rows[N], rows[10 * N]
    size = sum(f.stat().st_size for f in Path(root).rglob("*") if f.is_file())
    record(
        f"{what} x{10 * N}: time {t10 / t1:.1f}x, RSS {m10 / m1:.2f}x of x{N}",
        size,
        t10,
        peak_rss_mib=m10,
    )


def _split(corpus: Path, parts: int) -> Path:
    """The corpus's bytes cut at line ends into ``parts`` files of one directory."""
    root = data_dir() / f"split-{corpus.stem}-{parts}"
    if root.exists():
        return root
    tmp = root.with_suffix(".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    data = corpus.read_bytes()
    step = len(data) // parts
    start = 0
    for i in range(parts):
        end = len(data) if i == parts - 1 else data.find(b"\n", start + step) + 1 or len(data)
        (tmp / f"part{i:05d}.log").write_bytes(data[start:end])
        start = end
    tmp.rename(root)
    return root


@pytest.mark.parametrize("mode", ["quiet", "print"])
def test_same_bytes_in_many_files(benchmark, corpus: Path, mode: str) -> None:  # type: ignore[no-untyped-def]
    """``denpex scan -j2`` over the corpus cut into 10,000 files vs 16 files:
    the per-file cost (walk, classify, read, tally, counts) as a ratio."""
    flags = ["-q"] if mode == "quiet" else ["-m", "100"]
    few, many = _split(corpus, 16), _split(corpus, 10_000)
    t16, m16 = _run(["scan", "-j2", *flags, str(few)])
    t10k, m10k = benchmark.pedantic(
        _run, args=(["scan", "-j2", *flags, str(many)],), rounds=1, iterations=1
    )
    record(
        f"scan {mode} 10,000 files / 16 files: time {t10k / t16:.2f}x, RSS {m10k / m16:.2f}x",
        corpus.stat().st_size,
        t10k,
        ratio_time=t10k / t16,
        ratio_rss=m10k / m16,
        peak_rss_mib=m10k,
    )
