"""Regex match and group extraction over string arrays, on the cheaper engine.

``pyarrow.compute``'s regex kernels compile their RE2 program on every call:
0.1-0.9 ms each for the attribution and timestamp patterns, whatever the
array's length.  Attribution calls them per file and per pattern, so on a
small job (or a job of many small files) the compiling costs more than the
matching.  Arrays of at most :data:`SMALL_ROWS` strings are matched with
Python's ``re`` instead (each pattern compiled once per process, ASCII
classes as in RE2); longer ones, and any pattern ``re`` refuses, stay on
RE2.  Both give the same answer on the patterns used here: the test suite
runs attribution over the corpus on each engine alone and compares.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: arrays up to this length are matched with Python's ``re``
SMALL_ROWS = 256

_STRINGS = (pa.string(), pa.large_string())


@functools.lru_cache(maxsize=512)
def _compiled(expr: str) -> re.Pattern[str] | None:
    try:
        return re.compile(expr, re.ASCII)
    except (re.error, OverflowError, RecursionError):
        return None


def _python(arr: pa.Array, expr: str) -> tuple[re.Pattern[str], list[str | None]] | None:
    """The compiled pattern and the strings, when ``re`` should answer."""
    if len(arr) > SMALL_ROWS or arr.type not in _STRINGS:
        return None
    rx = _compiled(expr)
    if rx is None:
        return None
    try:
        return rx, arr.to_pylist()
    except UnicodeDecodeError:  # RE2 reads the bytes as they are
        return None


def matches(arr: pa.Array, expr: str) -> np.ndarray:
    """Whether ``expr`` matches somewhere in each string (null: no)."""
    py = _python(arr, expr)
    if py is None:
        hit = pc.match_substring_regex(arr, expr)
        return hit.fill_null(False).to_numpy(zero_copy_only=False)
    rx, texts = py
    return np.fromiter(
        (t is not None and rx.search(t) is not None for t in texts), bool, len(texts)
    )


def extract(arr: pa.Array, expr: str) -> pa.StructArray:
    """``expr``'s named groups of each string (as ``pc.extract_regex``: a
    null row where it does not match, ``""`` for a group that took no part)."""
    py = _python(arr, expr)
    if py is None:
        return pc.extract_regex(arr, expr)
    rx, texts = py
    names = list(rx.groupindex)
    if not names:  # RE2 insists on named groups: let it say so
        return pc.extract_regex(arr, expr)
    cols: list[list[str]] = [[] for _ in names]
    valid = []
    for t in texts:
        m = rx.search(t) if t is not None else None
        valid.append(m is not None)
        for col, name in zip(cols, names):
            col.append((m.group(name) or "") if m is not None else "")
    mask = pa.array([not v for v in valid], pa.bool_())
    fields = [pa.array(c, arr.type) for c in cols]
    return pa.StructArray.from_arrays(fields, names=names, mask=mask)
