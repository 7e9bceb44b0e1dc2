"""Memory: C buffers die with the table; floods and big files stay bounded."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil

MiB = 1 << 20


def rss() -> int:
    return psutil.Process().memory_info().rss


def test_dropping_the_table_frees_the_c_buffers(make_scanner, tmp_path: Path) -> None:
    p = tmp_path / "many.log"
    p.write_bytes(b"".join(b"SIGKILL rank %d " % i + b"x" * 400 + b"\n" for i in range(400_000)))
    s = make_scanner({"kill": ["SIGKILL"]}, max_rows_per_signature=10**9)
    gc.collect()
    base = rss()
    table = s.scan([p], threads=2)
    assert table.num_rows == 400_000
    held = rss() - base
    assert held > 150 * MiB  # ~170 MB of text + columns really live in the table
    del table
    gc.collect()
    assert rss() - base < 0.15 * held


def test_a_streamed_scan_reuses_dropped_buffers_and_returns_them(
    make_scanner, tmp_path: Path
) -> None:
    """Batches handed on and dropped give their buffers to the next batch (no
    fresh pages per unit); rows stay exact; the buffers go back at the end."""
    from denpex_fast.engine import _native

    p = tmp_path / "units.log"
    # long lines first, short ones later: a reused buffer must not leak old text
    p.write_bytes(
        b"".join(b"SIGKILL long %06d " % i + b"y" * 300 + b"\n" for i in range(20_000))
        + b"".join(b"SIGKILL s%d\n" % i for i in range(60_000))
    )
    s = make_scanner({"kill": ["SIGKILL"]}, max_rows_per_signature=10**9)
    expected = s.run([p], threads=2, unit_size=1 << 20).table
    seen: list[tuple[int, str]] = []
    kept: list[int] = []

    def take(batch) -> None:
        kept.append(_native.reused_bytes())
        seen.extend(zip(batch.column("line").to_pylist(), batch.column("text").to_pylist()))

    r = s.run([p], threads=2, unit_size=1 << 20, on_batch=take)
    assert r.stats["rows"] == expected.num_rows == 80_000
    assert sorted(seen) == sorted(
        zip(expected.column("line").to_pylist(), expected.column("text").to_pylist())
    )
    assert max(kept) > 0  # later units found earlier units' buffers waiting
    assert _native.reused_bytes() == 0


def test_flood_memory_stays_under_its_cap(tmp_path: Path) -> None:
    """Ten million matching lines, 1000 kept: memory does not grow with matches."""
    p = tmp_path / "flood.log"
    with open(p, "wb") as f:
        chunk = b"NCCL WARN flood\n" * 100_000
        for _ in range(100):
            f.write(chunk)
    code = textwrap.dedent(f"""
        import denpex_fast as dx
        def hwm():  # this process's peak RSS in KiB (ru_maxrss would include the parent's, inherited across exec)
            return int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1])
        s = dx.Scanner(patterns={{"w": "NCCL WARN"}}, cache_dir=False, max_rows_per_signature=1000)
        before = hwm()
        r = s.run([{str(p)!r}], threads=2)
        after = hwm()
        print(r.table.num_rows, r.counts.column("lines")[0].as_py(), (after - before) * 1024)
    """)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, check=True, timeout=300, cwd=tmp_path
    ).stdout.split()
    rows, lines, grown = int(out[0]), int(out[1]), int(out[2])
    assert rows == 1000 and lines == 10_000_000
    assert grown < 100 * MiB, grown


def test_rss_bounded_on_large_file(tmp_path: Path) -> None:
    """Mapped pages are released behind the scan: RSS does not track file size."""
    p = tmp_path / "big.log"
    line = b"[rank3]: 2024-05-01 12:00:00,123 step=1 loss=0.25 lr=1e-4 NCCL INFO ok\n"
    with open(p, "wb") as f:
        block = line * 100_000
        while f.tell() < 1536 * MiB:
            f.write(block)
    code = textwrap.dedent(f"""
        import denpex_fast as dx
        def hwm():  # this process's peak RSS in KiB (ru_maxrss would include the parent's, inherited across exec)
            return int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1])
        s = dx.Scanner(patterns={{"x": "SIGKILL"}}, cache_dir=False)
        before = hwm()
        r = s.run([{str(p)!r}], threads=2)
        after = hwm()
        print(r.stats["bytes"], (after - before) * 1024)
    """)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, check=True, timeout=600, cwd=tmp_path
    ).stdout.split()
    scanned, grown = int(out[0]), int(out[1])
    assert scanned == p.stat().st_size
    assert grown < 200 * MiB, grown  # 2 threads x ~100 MiB, on a 1.5 GiB file
