"""Healthy-baseline comparison: the first line a failed run printed that a
healthy run of the same job never printed.

Every line is reduced to a template (numbers, hex ids and absolute paths
masked) and hashed in C in one pass; the healthy run's templates form a set,
and each file of the failed run reports its first lines whose template is not
in the set.  Timestamps, ranks, PIDs, losses and step counters are masked, so
what remains is what the job *did* differently::

    >>> from denpex_fast.analysis.baseline import first_divergence
    >>> first_divergence(["failed_job/"], ["healthy_job/"]).to_pylist()[0]
    {'file': 'failed_job/rank2.log', 'line': 812, 'offset': 90211, 'text': 'Traceback ...'}
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa

from ..engine import _native
from ..errors import FileError, file_error_from_os
from ..io.sources import CorruptInput, Input, LimitExceeded, open_reader, resolve_inputs

CHUNK = 4 << 20
MAX_TEXT = 1024

DIVERGENCE_SCHEMA = pa.schema(
    [
        pa.field("file", pa.string()),
        pa.field("line", pa.uint64()),
        pa.field("offset", pa.uint64()),
        pa.field("text", pa.string()),
    ]
)


def _chunks(inp: Input, errors: list[FileError]) -> Iterator[tuple[bytearray, int, int]]:
    """(buffer, length, base_offset) over whole lines of ``inp``."""
    try:
        reader = open_reader(inp)
    except OSError as exc:
        errors.append(file_error_from_os(inp.name, exc))
        return
    buf = bytearray(CHUNK)
    fill = base = 0
    try:
        while True:
            mv = memoryview(buf)
            try:
                n = reader.readinto(mv[fill:])
            except (CorruptInput, LimitExceeded, OSError) as exc:
                errors.append(FileError(inp.name, "corrupt", str(exc)))
                n = 0
            finally:
                mv.release()
            if n == 0:
                if fill:
                    yield buf, fill, base
                return
            fill += n
            cut = buf.rfind(b"\n", 0, fill) + 1
            if cut == 0:
                if fill == len(buf):
                    bigger = bytearray(2 * len(buf))  # one long line: grow (a new
                    bigger[:fill] = buf[:fill]  # buffer: views of the old may live)
                    buf = bigger
                continue
            yield buf, cut, base
            base += cut
            rest = fill - cut
            buf[:rest] = buf[cut:fill]
            fill = rest
    finally:
        reader.close()


def template_set(
    paths: Any,
    errors: list[FileError] | None = None,
    *,
    threads: int | None = None,
    cache: bool = True,
) -> _native.TemplateSet:
    """The templates of every line of ``paths`` (a healthy run).

    The files are read one after another (sequential I/O) and their chunks of
    whole lines templated on ``threads`` threads, one set per thread, merged
    at the end (the C calls release the GIL): a baseline of one large file
    uses every core too.  ``cache``: reuse the set made the last time these
    very files were a baseline (:mod:`denpex_fast.analysis.baseline_cache`),
    and keep it for the next time.
    """
    from . import baseline_cache

    errs = errors if errors is not None else []
    inputs, bad = resolve_inputs([paths] if isinstance(paths, str) else paths)
    errs.extend(bad)
    key = baseline_cache.baseline_key(inputs) if cache and not bad else None
    directory = baseline_cache.cache_directory() if key else None
    if key:
        known = baseline_cache.load(directory, key)
        if known is not None:
            return known
    n_errors = len(errs)
    known = _template_inputs(inputs, errs, threads)
    if key and len(errs) == n_errors:  # a baseline read whole
        baseline_cache.store(directory, key, known)
    return known


def _template_inputs(
    inputs: list[Input], errs: list[FileError], threads: int | None
) -> _native.TemplateSet:
    n = max(1, threads or os.cpu_count() or 1)
    if n == 1:
        known = _native.TemplateSet()
        for inp in inputs:
            for buf, length, _ in _chunks(inp, errs):
                known.add_lines(buf, length)
        return known

    local = threading.local()
    sets: list[_native.TemplateSet] = []
    lock = threading.Lock()

    def add(data: bytes) -> None:
        own = getattr(local, "set", None)
        if own is None:
            own = local.set = _native.TemplateSet()
            with lock:
                sets.append(own)
        own.add_lines(data, len(data))

    with ThreadPoolExecutor(n, thread_name_prefix="denpex-baseline") as pool:
        pending: deque[Future[None]] = deque()
        for inp in inputs:
            for buf, length, _ in _chunks(inp, errs):
                # the reader reuses its buffer: each task gets its own bytes
                pending.append(pool.submit(add, bytes(memoryview(buf)[:length])))
                while len(pending) > 2 * n:  # bounded memory: a few chunks in flight
                    pending.popleft().result()
        for f in pending:
            f.result()
    known = sets[0] if sets else _native.TemplateSet()
    for other in sets[1:]:
        known.merge(other)
    return known


def first_divergence(
    paths: Any,
    baseline: Any,
    *,
    per_file: int = 20,
    errors: list[FileError] | None = None,
    threads: int | None = None,
) -> pa.Table:
    """Per file of ``paths``, the first ``per_file`` lines whose template the
    baseline (paths of a healthy run, or a template set) never printed; the
    files are read in parallel on ``threads`` threads (default: all cores),
    and when there are fewer files than threads, each file's chunks are."""
    errs = errors if errors is not None else []
    known = (
        baseline
        if isinstance(baseline, _native.TemplateSet)
        else template_set(baseline, errs, threads=threads)
    )
    inputs, bad = resolve_inputs([paths] if isinstance(paths, str) else paths)
    errs.extend(bad)
    cores = max(1, threads or os.cpu_count() or 1)
    if cores > len(inputs):  # fewer files than cores: each file's chunks in parallel
        with ThreadPoolExecutor(cores, thread_name_prefix="denpex-baseline") as pool:
            per_input = [_divergence_chunked(inp, known, per_file, pool, cores) for inp in inputs]
    elif cores == 1:
        per_input = [_divergence(inp, known, per_file) for inp in inputs]
    else:  # at least as many files as cores; `known` is only read, each file has its own `seen`
        with ThreadPoolExecutor(cores, thread_name_prefix="denpex-baseline") as pool:
            per_input = list(pool.map(lambda inp: _divergence(inp, known, per_file), inputs))
    rows: dict[str, list[Any]] = {"file": [], "line": [], "offset": [], "text": []}
    for part, part_errs in per_input:
        errs.extend(part_errs)
        for key in rows:
            rows[key].extend(part[key])
    return pa.table(rows, schema=DIVERGENCE_SCHEMA)


def _line_text(buf: Any, start: int, length: int) -> str:
    end = buf.find(b"\n", start, length)
    end = length if end < 0 else end
    return bytes(buf[start : min(end, start + MAX_TEXT)]).rstrip(b"\r").decode("utf-8", "replace")


def _divergence_chunked(
    inp: Input, known: _native.TemplateSet, per_file: int, pool: ThreadPoolExecutor, cores: int
) -> tuple[dict[str, list[Any]], list[FileError]]:
    """:func:`_divergence` of one file whose chunks are templated on ``pool``.

    Each chunk reports its first ``per_file`` lines of templates ``known``
    lacks (with a ``seen`` set of its own); taken in file order, those no
    earlier chunk reported are the file's.  That is the sequential result: a
    template new to the file is new to its chunk, and a chunk's report holds
    at most as many templates already taken as were taken before it, so it
    always holds the ones still missing."""
    errs: list[FileError] = []
    rows: dict[str, list[Any]] = {"file": [], "line": [], "offset": [], "text": []}
    if per_file <= 0:
        return rows, errs
    taken: set[int] = set()

    def one(data: bytes, base: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        return known.new_lines(
            _native.TemplateSet(), data, len(data), base_offset=base, base_line=0, cap=per_file
        )

    pending: deque[tuple[Future[Any], bytes, int]] = deque()
    line_base = 0

    def settle() -> bool:
        """Take the oldest chunk's lines; True once the file has ``per_file``."""
        nonlocal line_base
        fut, data, base = pending.popleft()
        lines, offsets, hashes, nl = fut.result()
        for ln, off, h in zip(lines.tolist(), offsets.tolist(), hashes.tolist()):
            if h in taken:
                continue
            taken.add(h)
            rows["file"].append(inp.name)
            rows["line"].append(line_base + ln)
            rows["offset"].append(off)
            rows["text"].append(_line_text(data, off - base, len(data)))
            if len(taken) >= per_file:
                return True
        line_base += nl
        return False

    done = False
    for buf, length, base in _chunks(inp, errs):
        data = bytes(memoryview(buf)[:length])  # the reader reuses its buffer
        pending.append((pool.submit(one, data, base), data, base))
        while len(pending) > 2 * cores and not done:
            done = settle()
        if done:
            break
    while pending and not done:
        done = settle()
    for fut, _, _ in pending:
        fut.cancel()
    return rows, errs


def _divergence(
    inp: Input, known: _native.TemplateSet, per_file: int
) -> tuple[dict[str, list[Any]], list[FileError]]:
    """One file's first ``per_file`` lines whose template ``known`` lacks."""
    errs: list[FileError] = []
    rows: dict[str, list[Any]] = {"file": [], "line": [], "offset": [], "text": []}
    seen = _native.TemplateSet()
    line_base = 0
    found = 0
    for buf, length, base in _chunks(inp, errs):
        lines, offsets, _, nl = known.new_lines(
            seen, buf, length, base_offset=base, base_line=line_base, cap=per_file - found
        )
        for ln, off in zip(lines.tolist(), offsets.tolist()):
            rows["file"].append(inp.name)
            rows["line"].append(ln)
            rows["offset"].append(off)
            rows["text"].append(_line_text(buf, off - base, length))
        found += len(lines)
        line_base += nl
        if found >= per_file:
            break
    return rows, errs
