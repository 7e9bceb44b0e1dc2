"""A pure-Python model of the scanner, used as the test oracle.

Hyperscan semantics, line-scoped: a signature matches a line when any of its
patterns matches inside the line; ``match_end`` is the smallest end offset of
any match (Hyperscan reports every end, the scanner keeps the first).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

Row = tuple[int, int, int, str, str]  # line, offset, match_end, signature, text

_CSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


def _min_end(rx: re.Pattern[bytes], line: bytes) -> int | None:
    """Smallest end offset of any match: search(line, 0, e) succeeds iff some
    match ends at or before e, which is monotone in e, so bisect."""
    if not rx.search(line):
        return None
    lo, hi = 0, len(line)
    while lo < hi:
        mid = (lo + hi) // 2
        if rx.search(line, 0, mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def oracle(
    data: bytes,
    patterns: Mapping[str, Sequence[str]],
    *,
    max_text: int = 1024,
    max_rows: int | None = None,
) -> list[Row]:
    """Rows the scanner must produce for ``data``, in (line, signature-order) order."""
    compiled = {sig: [re.compile(p.encode()) for p in pats] for sig, pats in patterns.items()}
    rows: list[Row] = []
    kept: dict[str, int] = {}
    offset = 0
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        if not raw and offset >= len(data):
            break
        line = _CSI.sub(b"", raw)  # terminal codes are not scanned (match_end indexes text)
        hits = []
        for sig, rxs in compiled.items():
            ends = [e for e in (_min_end(rx, line) for rx in rxs) if e is not None]
            if ends:
                hits.append((offset + min(ends), sig))
        for end, sig in sorted(hits):
            kept[sig] = kept.get(sig, 0) + 1
            if max_rows is not None and kept[sig] > max_rows:
                continue
            rel_end = end - offset
            if rel_end > max_text:  # long line: the max_text bytes ending at the match
                text = line[rel_end - max_text : rel_end]
                if rel_end == len(line) and text.endswith(b"\r"):  # a CRLF's CR
                    text = text[:-1]
            elif len(line) <= max_text:  # whole line, without a CRLF's CR
                text = line[:-1] if line.endswith(b"\r") else line
            else:  # cut at max_text
                text = line[:max_text]
            rows.append((lineno, offset, end, sig, text.decode("utf-8", "replace")))
        offset += len(raw) + 1
    return rows


def table_rows(table) -> list[Row]:  # type: ignore[no-untyped-def]
    """The (line, offset, match_end, signature, text) rows of a match table."""
    d = table.select(["line", "offset", "match_end", "signature", "text"]).to_pydict()
    return list(zip(d["line"], d["offset"], d["match_end"], d["signature"], d["text"]))


def sort_rows(rows: list[Row]) -> list[Row]:
    """Canonical order for comparisons: by line, then end offset, then signature."""
    return sorted(rows, key=lambda r: (r[0], r[2], r[3]))
