"""The scanner finds every line Python's ``re`` finds, knowledge base and corpus whole,
wherever the scanned bytes sit in memory.

Hyperscan compiles many expressions into one automaton, and an engine bug
there loses matches silently: no error, fewer rows.  Python's ``re`` reads
each expression alone, so on the same bytes it says which lines each entry
must find.  (Vectorscan 5.4 missed ``^ERROR`` lines that follow a long
``ERROR`` line when a service-column prefix shared the anchored group; 383
lines of the public corpus went unseen.)  Its SIMD accelerators also read
the buffer in aligned vectors, so a bug there depends on the address of the
bytes: Vectorscan 5.4.9 missed ``0: AssertionError`` after ``0: ^^^`` at 17
of 64 alignments and reported a wandb ``View project`` line as ``View run``
at others (VectorCamp/vectorscan#316, #325), which a buffer at one address
never shows.  Each file is therefore scanned at eight alignments.
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path

import numpy as np
import pytest

from denpex_fast.engine.scanner import Scanner

PUBLIC = Path(__file__).parent / "corpus" / "public"


@pytest.fixture(scope="module")
def scanner() -> Scanner:
    # every row kept: the comparison is of lines, not of the caps
    return Scanner(max_rows_per_signature=1_000_000)


def _lines_re_finds(compiled: dict[str, list[re.Pattern[bytes]]], data: bytes) -> set:
    starts = [0] + [m.end() for m in re.finditer(b"\n", data)]
    found = set()
    for sig, exprs in compiled.items():
        for r in exprs:
            for m in r.finditer(data):
                # the scanner names the line a match ends on
                found.add((sig, bisect.bisect_right(starts, max(m.end() - 1, m.start()))))
    return found


def _at_alignment(data: bytes, align: int) -> memoryview:
    """``data`` copied to an address ``align`` bytes past a 64-byte boundary."""
    buf = bytearray(len(data) + 128)
    base = (-np.frombuffer(buf, np.uint8).ctypes.data) % 64
    buf[base + align : base + align + len(data)] = data
    return memoryview(buf)[base + align : base + align + len(data)]


def test_every_line_re_finds_in_the_public_corpus_is_found(scanner: Scanner) -> None:
    compiled = {
        sig: [re.compile(p.encode(), re.MULTILINE) for p in exprs]
        for sig, exprs in scanner.patterns.items()
    }
    files = sorted(p for p in PUBLIC.glob("*/*") if p.is_file() and p.name != "truth.json")
    assert len(files) > 500
    missed, moved = [], []
    for path in files:
        data = path.read_bytes()
        want = _lines_re_finds(compiled, data)
        first = None
        for align in range(0, 64, 8):
            table = scanner.scan_bytes(_at_alignment(data, align))
            got = set(zip(table.column("signature").to_pylist(), table.column("line").to_pylist()))
            missed += [(path.parent.name, align, sig, line) for sig, line in want - got]
            first = got if first is None else first
            moved += [(path.parent.name, align, sig, line) for sig, line in got ^ first]
    assert not missed, f"{len(missed)} lines missed, e.g. {sorted(missed)[:5]}"
    assert not moved, f"{len(moved)} rows depend on the buffer's address, e.g. {sorted(moved)[:5]}"


@pytest.mark.parametrize("prefix", ["", "web-1  | ", "2024-05-01T10:00:00Z stderr F "])
def test_anchored_entries_survive_long_lines_that_start_with_their_word(
    scanner: Scanner, prefix: str
) -> None:
    long = f"{prefix}ERROR {'z' * 200}\n"
    data = (long * 3 + f"{prefix}ERROR short\n" + long).encode()
    table = scanner.scan_bytes(data)
    rows = zip(table.column("signature").to_pylist(), table.column("line").to_pylist())
    assert sorted(line for sig, line in rows if sig == "any-log-level-error") == [1, 2, 3, 4, 5]


def test_no_example_depends_on_where_the_scanned_buffer_starts(scanner: Scanner) -> None:
    """Every ``examples.match`` line of the knowledge base, scanned in one
    buffer (with the ``examples.nomatch`` lines) that starts 0, 1, ... 47 lines
    earlier, is found each time.
    (An anchored entry whose text could start with a collector prefix's
    ``[``, ``(`` or ESC, ``^\\W{0,4}...`` behind the prefixes :func:`scan_forms`
    adds, was missed at some starts and found at others.)"""
    kb = scanner.signature_set
    lines: list[bytes] = []
    want: list[tuple[int, str]] = []
    for sig in kb:
        for text in sig.examples_match:
            lines.append(text.encode("utf-8"))
            want.append((len(lines), sig.id))
        lines.extend(text.encode("utf-8") for text in sig.examples_nomatch)
    misses: dict[str, set[int]] = {}
    for start in range(48):
        table = scanner.scan_bytes(b"\n".join(lines[start:]) + b"\n")
        hits = set(zip(table.column("line").to_pylist(), table.column("signature").to_pylist()))
        for line, sig_id in want:
            if line > start and (line - start, sig_id) not in hits:
                misses.setdefault(sig_id, set()).add(start)
    assert not misses, misses
