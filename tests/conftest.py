"""Shared fixtures: every scanner case runs under every read configuration."""

from __future__ import annotations

import gzip
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from backports import zstd  # noqa: E402

from denpex_fast import _native  # noqa: E402
from denpex_fast.engine.scanner import Scanner  # noqa: E402

# name -> how to scan `data` with `scanner` (tmp dir given)
ScanFn = Callable[[Scanner, bytes, Path], pa.Table]


def _write(tmp: Path, data: bytes, suffix: str = ".log") -> Path:
    p = tmp / f"input{suffix}"
    p.write_bytes(data)
    return p


def _tiny(scanner: Scanner) -> None:
    # blocks of a few bytes: every line crosses block and chunk boundaries
    scanner.options = _native.Options(
        max_rows_per_sig=scanner.options.max_rows_per_sig,
        max_text=scanner.options.max_text,
        block_size=3,
        max_piece=1 << 16,
        overlap=64,
    )
    scanner.stream_chunk = 5


CONFIGS: dict[str, ScanFn] = {
    "bytes": lambda s, d, t: s.scan_bytes(d, name=str(t / "input.log")),
    "mmap": lambda s, d, t: s.scan([_write(t, d)], threads=1),
    "mmap-2threads": lambda s, d, t: s.scan([_write(t, d)], threads=2),
    "mmap-tiny-blocks": lambda s, d, t: (_tiny(s), s.scan([_write(t, d)], threads=1))[1],
    "mmap-ranges-2threads": lambda s, d, t: s.scan([_write(t, d)], threads=2, unit_size=7),
    "read": lambda s, d, t: s.scan([_write(t, d)], threads=1, mmap=False),
    "read-tiny-chunks": lambda s, d, t: (_tiny(s), s.scan([_write(t, d)], mmap=False))[1],
    "gzip": lambda s, d, t: s.scan([_write(t, gzip.compress(d), ".log.gz")], threads=2),
    "gzip-tiny-chunks": lambda s, d, t: (_tiny(s), s.scan([_write(t, gzip.compress(d), ".gz")]))[1],
    "zstd": lambda s, d, t: s.scan([_write(t, zstd.compress(d), ".log.zst")]),
    "zstd-tiny-chunks": lambda s, d, t: (_tiny(s), s.scan([_write(t, zstd.compress(d), ".zst")]))[
        1
    ],
}


@pytest.fixture(params=sorted(CONFIGS))
def scan_config(request: pytest.FixtureRequest) -> ScanFn:
    """One read configuration (mmap, read, tiny chunks, gzip, zstd, threads)."""
    return CONFIGS[request.param]


@pytest.fixture
def make_scanner(tmp_path: Path) -> Callable[..., Scanner]:
    """Scanner factory with a per-test database cache."""

    def make(patterns: Mapping[str, str | Sequence[str]], **kw: object) -> Scanner:
        kw.setdefault("cache_dir", tmp_path / "cache")
        return Scanner(patterns=patterns, **kw)  # type: ignore[arg-type]

    return make


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0
