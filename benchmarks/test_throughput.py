"""Throughput of denpex_fast.scan against the raw engine and its peers.

Run: ``pytest benchmarks/ --benchmark-only`` (see conftest for settings).
All measurements use the same corpus and the same pattern set; Python ``re``
and ``grep -E`` are measured on a 64 MiB prefix (they are too slow for the
whole corpus) and reported in GB/s like the others.
"""

from __future__ import annotations

import mmap
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import denpex_fast as dx

from conftest import have, record

SLICE = 64 << 20


def _scanner(pattern_set: dict) -> dx.Scanner:
    patterns: dict[str, list[str]] = {}
    for sig, expr in pattern_set["pairs"]:
        patterns.setdefault(sig, []).append(expr)
    return dx.Scanner(patterns=patterns)


def _slice(corpus: Path) -> bytes:
    with open(corpus, "rb") as f:
        data = f.read(SLICE)
    return data[: data.rfind(b"\n") + 1]


@pytest.mark.parametrize("threads", [1, 2])
def test_denpex_scan_to_arrow(benchmark, corpus: Path, pattern_set: dict, threads: int) -> None:
    scanner = _scanner(pattern_set)
    size = corpus.stat().st_size
    table = benchmark.pedantic(
        lambda: scanner.scan([corpus], threads=threads), rounds=3, iterations=1, warmup_rounds=1
    )
    assert table.num_rows > 0
    if benchmark.stats:
        row = record(
            f"denpex_fast.scan -> Arrow, {threads} thread(s)",
            size,
            benchmark.stats.stats.min,
            rows=table.num_rows,
        )
        benchmark.extra_info.update(row)


@pytest.mark.parametrize("threads", [1, 2])
def test_raw_engine_ceiling(
    benchmark, corpus: Path, pattern_set: dict, ceiling_binary: Path, threads: int
) -> None:
    inner: list[float] = []

    def run() -> None:
        out = subprocess.run(
            [str(ceiling_binary), str(pattern_set["hs_file"]), str(corpus), str(threads)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        inner.append(float(out.split()[2]))

    benchmark.pedantic(run, rounds=3, iterations=1, warmup_rounds=1)
    row = record(f"raw hs_scan ceiling, {threads} thread", corpus.stat().st_size, min(inner))
    benchmark.extra_info.update(row)


@pytest.mark.skipif(not have("rg"), reason="ripgrep not installed (apt-get install ripgrep)")
def test_ripgrep(benchmark, corpus: Path, pattern_set: dict) -> None:
    # stdout to a pipe: rg treats /dev/null as -q and stops early
    cmd = ["rg", "-j1", "-n", "--no-unicode", "-f", str(pattern_set["rg_file"]), str(corpus)]

    def run() -> float:
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True)
        assert p.returncode in (0, 1), p.stderr[:500]
        return time.perf_counter() - t0

    benchmark.pedantic(run, rounds=2, iterations=1, warmup_rounds=0)
    record("rg -j1 -n --no-unicode -f", corpus.stat().st_size, benchmark.stats.stats.min)


def test_grep_extended(benchmark, corpus: Path, pattern_set: dict, tmp_path: Path) -> None:
    part = tmp_path / "slice.log"
    part.write_bytes(_slice(corpus))
    cmd = ["grep", "-n", "-E", "-f", str(pattern_set["ere_file"]), str(part)]
    benchmark.pedantic(lambda: subprocess.run(cmd, stdout=subprocess.PIPE), rounds=2, iterations=1)
    record(
        f"grep -E -f ({pattern_set['n_ere']} patterns), 64 MiB",
        part.stat().st_size,
        benchmark.stats.stats.min,
    )


def test_python_re(benchmark, corpus: Path, pattern_set: dict) -> None:
    data = _slice(corpus)
    rxs = []
    for _, e in pattern_set["pairs"]:
        if "(?" in e.replace("(?:", ""):
            continue  # inline flags cannot sit inside one alternation
        try:
            rxs.append(re.compile(e.encode(), re.M))
        except re.error:
            pass
    combined = re.compile(b"|".join(b"(?:" + r.pattern + b")" for r in rxs), re.M)

    def run() -> int:
        return sum(1 for _ in combined.finditer(data))

    benchmark.pedantic(run, rounds=1, iterations=1)
    record(
        f"Python re (one alternation of {len(rxs)}), 64 MiB", len(data), benchmark.stats.stats.min
    )


def test_pypi_hyperscan_with_callback(benchmark, corpus: Path, pattern_set: dict) -> None:
    hyperscan = pytest.importorskip("hyperscan")
    exprs = [e.encode() for _, e in pattern_set["pairs"]]
    db = hyperscan.Database()
    db.compile(
        expressions=exprs,
        ids=list(range(len(exprs))),
        flags=[hyperscan.HS_FLAG_MULTILINE] * len(exprs),
    )
    hits: list[int] = []

    def on_match(id_: int, start: int, end: int, flags: int, ctx: object) -> None:
        hits.append(end)

    with open(corpus, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        view = memoryview(m)

        def run() -> None:
            hits.clear()
            step = 1 << 30
            off = 0
            while off < len(m):
                end = min(off + step, len(m))
                if end < len(m):
                    end = m.find(b"\n", end) + 1 or len(m)
                db.scan(bytes(view[off:end]), match_event_handler=on_match)
                off = end

        benchmark.pedantic(run, rounds=2, iterations=1, warmup_rounds=0)
        view.release()
    record("PyPI hyperscan + Python callback", corpus.stat().st_size, benchmark.stats.stats.min)


@pytest.mark.parametrize("threads", [1, 2])
def test_peak_rss(benchmark, corpus: Path, pattern_set: dict, threads: int) -> None:
    """Peak RSS of a whole scan in a fresh process (the mapping is released as it goes)."""
    pats = {}
    for sig, e in pattern_set["pairs"]:
        pats.setdefault(sig, []).append(e)
    code = textwrap.dedent(f"""
        import time, denpex_fast as dx
        def hwm():  # this process's peak RSS in KiB (ru_maxrss would include the parent's, inherited across exec)
            return int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1])
        s = dx.Scanner(patterns={pats!r})
        base = hwm()
        t0 = time.perf_counter()
        t = s.scan([{str(corpus)!r}], threads={threads})
        dt = time.perf_counter() - t0
        print(hwm(), base, dt, t.num_rows)
    """)
    out: list[str] = []
    benchmark.pedantic(
        lambda: out.append(
            subprocess.run(
                [sys.executable, "-c", code], check=True, capture_output=True, text=True
            ).stdout
        ),
        rounds=1,
        iterations=1,
    )
    peak_kib, base_kib, dt, _ = out[-1].split()
    record(
        f"denpex_fast.scan, fresh process, {threads} thread(s)",
        corpus.stat().st_size,
        float(dt),
        peak_rss_mib=int(peak_kib) / 1024,
        base_rss_mib=int(base_kib) / 1024,
    )


def test_full_kb_vs_raw_engine_ceiling(benchmark, corpus: Path, ceiling_binary: Path) -> None:
    """The built-in knowledge base as the scanner compiles it (every
    signature's scan forms), scanned by ``Scanner.scan`` on one thread and by
    the raw ``hs_scan`` loop of ``hs_ceiling`` on the same expressions."""
    scanner = dx.Scanner()
    exprs, _, _, _ = scanner._expressions()
    hs_file = corpus.parent / "patterns.kb.txt"
    hs_file.write_bytes(b"".join(e + b"\n" for e in exprs))
    size = corpus.stat().st_size
    scanner.scan([corpus], threads=1)  # database compiled and page cache warm
    ours: list[float] = []
    raw: list[float] = []
    for _ in range(3):  # alternated, so that drift hits both alike
        t0 = time.perf_counter()
        scanner.scan([corpus], threads=1)
        ours.append(time.perf_counter() - t0)
        out = subprocess.run(
            [str(ceiling_binary), str(hs_file), str(corpus), "1"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        raw.append(float(out.split()[2]))
    benchmark.pedantic(lambda: None, rounds=1)
    record("scan, full knowledge base, 1 thread", size, min(ours), expressions=len(exprs))
    record("raw hs_scan, full knowledge base, 1 thread", size, min(raw))
    print(
        f"\nfull knowledge base ({len(exprs)} expressions): scan {min(ours):.2f} s, "
        f"raw hs_scan {min(raw):.2f} s, {min(raw) / min(ours):.2f}x the ceiling's speed"
    )


@pytest.mark.parametrize("layout", ["one file", "16 files"])
def test_thread_scaling_full_kb(benchmark, corpus: Path, layout: str) -> None:
    """Two scanning threads against one, the built-in knowledge base, on the
    1 GiB corpus as one file and on the chatty job's 16 rank logs."""
    from gen_chatty import generate as generate_chatty

    from conftest import bench_bytes, data_dir

    if layout == "one file":
        files = [str(corpus)]
    else:
        size = bench_bytes()
        files = [str(p) for p in generate_chatty(data_dir() / f"chatty-{size}", size, ranks=16)]
    scanner = dx.Scanner()
    scanner.scan(files, threads=2)  # database compiled and page cache warm
    best = {1: float("inf"), 2: float("inf")}
    for _ in range(3):  # alternated
        for threads in (1, 2):
            t0 = time.perf_counter()
            scanner.scan(files, threads=threads)
            best[threads] = min(best[threads], time.perf_counter() - t0)
    benchmark.pedantic(lambda: None, rounds=1)
    nbytes = sum(Path(f).stat().st_size for f in files)
    for threads in (1, 2):
        record(f"scan, full knowledge base, {layout}, {threads} thread(s)", nbytes, best[threads])
    print(f"\n{layout}: 2 threads / 1 thread speed-up {best[1] / best[2]:.2f}x")
