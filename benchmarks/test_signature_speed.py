"""Speed is part of correctness: the whole knowledge base against its
literal-only subset, and each family alone, on a healthy log.

A pattern whose leading text occurs on every line drags the whole set down;
the target is that the full set stays within 80% of the speed of the subset of
pure literals.  Run: ``pytest benchmarks/test_signature_speed.py --benchmark-only -s``.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

import denpex_fast as dx
from denpex_fast.kb.signatures import load_signatures

from conftest import data_dir
from gen_corpus import generate

SIZE = 256 << 20
META = re.compile(r"[\\^$.|?*+()\[\]{}]")

RESULTS: dict[str, float] = {}


@pytest.fixture(scope="module")
def healthy() -> Path:
    path = data_dir() / "healthy-256M.log"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        generate(str(tmp), SIZE, seed=7, failure_rate=0.0)
        tmp.replace(path)
    return path


def _literal(expr: str) -> bool:
    return not META.search(expr.replace("\\.", "").replace("\\(", "").replace("\\)", ""))


def _gbps(scanner: dx.Scanner, path: Path, rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        scanner.scan([path], threads=1)
        best = min(best, time.perf_counter() - t0)
    return path.stat().st_size / best / 1e9


def test_full_set_vs_literal_subset(benchmark, healthy: Path) -> None:
    kb = load_signatures()
    full = kb.patterns()
    literal = {k: [p for p in v if _literal(p)] for k, v in full.items()}
    literal = {k: v for k, v in literal.items() if v}
    g_full = _gbps(dx.Scanner(patterns=full), healthy)
    g_lit = _gbps(dx.Scanner(patterns=literal), healthy)
    RESULTS["full"] = g_full
    RESULTS["literal"] = g_lit
    n_full = sum(map(len, full.values()))
    n_lit = sum(map(len, literal.values()))
    benchmark.extra_info.update(
        {"full_GBps": g_full, "literal_GBps": g_lit, "ratio": g_full / g_lit}
    )
    benchmark.pedantic(lambda: None, rounds=1)
    print(
        f"\nfull set ({n_full} patterns): {g_full:.3f} GB/s; literal-only subset ({n_lit}): "
        f"{g_lit:.3f} GB/s; ratio {g_full / g_lit:.2f} (target >= 0.80)"
    )


def test_each_family(benchmark, healthy: Path) -> None:
    kb = load_signatures()
    families: dict[str, dict[str, list[str]]] = {}
    for sig in kb:
        fam = Path(sig.source).stem
        families.setdefault(fam, {})[sig.id] = list(sig.patterns)
    benchmark.pedantic(lambda: None, rounds=1)
    print()
    for fam, pats in sorted(families.items()):
        g = _gbps(dx.Scanner(patterns=pats), healthy, rounds=2)
        benchmark.extra_info[fam] = g
        print(f"{fam:12} {sum(map(len, pats.values())):4d} patterns  {g:6.3f} GB/s")
