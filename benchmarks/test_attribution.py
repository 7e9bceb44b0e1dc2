"""Attribution throughput: rows per second on a 1M-row match table.

Run: ``pytest benchmarks/test_attribution.py --benchmark-only``.  The table
comes from the real Scanner over a generated log (``gen_corpus``, ~110 MiB,
kept in the benchmark data dir) with patterns that match most of its lines,
cut to exactly 1M rows; ``rows_per_s`` is in the benchmark's extra info
(and is 1M x the reported OPS).  About a quarter of the rows have no
timestamp of their own (NCCL and tqdm lines), so the carry path runs too.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from denpex_fast.engine.scanner import Scanner
from denpex_fast.facts.attribution import attribute

from conftest import data_dir
from gen_corpus import generate

ROWS = 1_000_000
LOG_BYTES = 110 << 20

# one or more rows on almost every generated line
PATTERNS = {
    "step": r"step=\d+",
    "nccl-info": r"NCCL INFO",
    "progress": r"it/s\]",
    "ready": r"ready in",
    "config": r"config\.py",
    "failure": r"(?:error|Error|fault|Killed|CANCELLED)",
}


@pytest.fixture(scope="module")
def match_table() -> pa.Table:
    path = data_dir() / "attribution-corpus.log"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        generate(str(tmp), LOG_BYTES, seed=7)
        tmp.replace(path)
    scanner = Scanner(patterns=PATTERNS, max_rows_per_signature=ROWS, cache_dir=False)
    table = scanner.scan([Path(path)])
    assert table.num_rows >= ROWS, "generated log too small for the row count"
    return table.slice(0, ROWS)


@pytest.mark.parametrize("threads", [1, 2])
def test_attribute_1m_rows(benchmark, match_table: pa.Table, threads: int) -> None:
    result = benchmark.pedantic(
        lambda: attribute(match_table, threads=threads), rounds=3, iterations=1, warmup_rounds=1
    )
    table = result.table
    assert table.num_rows == ROWS
    assert table.column("rank").null_count < ROWS // 100
    assert table.column("ts").null_count < ROWS // 100
    if benchmark.stats:
        best = benchmark.stats.stats.min
        benchmark.extra_info.update(
            {
                "rows": ROWS,
                "threads": threads,
                "rows_per_s": ROWS / best,
                "carried": sum(result.ts_carried.to_pylist()),
            }
        )
