"""The only module that touches the compiled extension (``_denpex_scan``).

Each C function is wrapped once here: arguments are checked, every C object
gets one owner at birth (``ffi.gc``), status codes become exceptions, and the
result columns are handed to numpy/pyarrow without copying.  Everything else
in the package calls these wrappers, never ``lib`` directly.

This module is long because it is the whole C boundary: the scanner, the
database, the line templates and the row formatter each need their wrapper
here and nowhere else.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import NativeError

try:
    from .._denpex_scan import ffi, lib
except ImportError as exc:  # pragma: no cover - depends on the build
    raise ImportError(
        "denpex_fast's native scanner (denpex_fast._denpex_scan) is not built. "
        "Install the package with `pip install .` (needs pkg-config and libhs: "
        "`apt-get install -y pkg-config libhyperscan-dev`), or run "
        "`python csrc/build_ffi.py` in a source checkout."
    ) from exc

OK = lib.DX_OK
ERR_NOMEM = lib.DX_ERR_NOMEM
ERR_COMPILE = lib.DX_ERR_COMPILE
ERR_HS = lib.DX_ERR_HS
ERR_IO = lib.DX_ERR_IO
ERR_TRUNCATED = lib.DX_ERR_TRUNCATED
ERR_DB = lib.DX_ERR_DB
ERR_ARG = lib.DX_ERR_ARG
ERR_CANCELLED = lib.DX_ERR_CANCELLED
ERR_NOTREG = lib.DX_ERR_NOTREG
#: files up to this size are read whole into a reused buffer, not mapped
READ_WHOLE = lib.DX_READ_WHOLE
#: what a count-returning function gives back when it ran out of memory
NOMEM_COUNT = (1 << 64) - 1

# Hyperscan compile flags used by the scanner, as hs_compile.h defines them
HS_FLAG_CASELESS = lib.HS_FLAG_CASELESS
HS_FLAG_DOTALL = lib.HS_FLAG_DOTALL
HS_FLAG_MULTILINE = lib.HS_FLAG_MULTILINE
HS_FLAG_SINGLEMATCH = lib.HS_FLAG_SINGLEMATCH
HS_FLAG_ALLOWEMPTY = lib.HS_FLAG_ALLOWEMPTY
HS_FLAG_UTF8 = lib.HS_FLAG_UTF8


class CallError(NativeError):
    """A native call failed; ``status``, ``err_no`` and ``expression`` say how."""

    def __init__(
        self, status: int, message: str, err_no: int = 0, expression: int = -1, hs_error: int = 0
    ) -> None:
        super().__init__(message)
        self.status = status
        self.err_no = err_no
        self.expression = expression
        self.hs_error = hs_error


def _new_error() -> Any:
    err = ffi.new("dx_error *")
    err.expression = -1
    return err


class NativeMemoryError(CallError, MemoryError):
    """A native call ran out of memory (``DX_ERR_NOMEM``)."""


class NativeOSError(CallError, OSError):
    """A native call's I/O failed (``DX_ERR_IO``); ``errno`` is set."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        CallError.__init__(self, *args, **kwargs)
        self.errno = self.err_no


def _raise(rc: int, err: Any) -> None:
    """The one place a status becomes an exception: out of memory is also a
    MemoryError, an I/O failure also an OSError, anything else a CallError."""
    cls = NativeMemoryError if rc == ERR_NOMEM else NativeOSError if rc == ERR_IO else CallError
    raise cls(
        rc,
        ffi.string(err.message).decode("utf-8", "replace"),
        err.err_no,
        err.expression,
        err.hs_error,
    )


def hs_version() -> str:
    """libhs's version string (e.g. ``5.4.9 2023-03-...``)."""
    return ffi.string(lib.dx_hs_version()).decode()


def platform_supported() -> bool:
    """True when this CPU can run libhs (SSSE3 or better on x86)."""
    return bool(lib.dx_platform_supported())


def platform_key() -> str:
    """The CPU feature set libhs targets on this host (part of the cache key)."""
    buf = ffi.new("char[]", 128)
    if lib.dx_platform_key(buf, 128) != OK:
        return "unknown"
    return ffi.string(buf).decode()


class Database:
    """A compiled block-mode database; immutable and shareable across threads."""

    __slots__ = ("_ptr", "n_sigs", "__weakref__")

    def __init__(self, ptr: Any, n_sigs: int) -> None:
        self._ptr = ffi.gc(ptr, lib.dx_db_free)
        self.n_sigs = n_sigs

    @classmethod
    def compile(
        cls, expressions: list[bytes], flags: list[int], ids: list[int], n_sigs: int
    ) -> Database:
        """Compile; raises CallError with ``expression`` set on a refused pattern."""
        if not expressions:
            raise ValueError("no patterns to compile")
        keep = [ffi.new("char[]", e) for e in expressions]
        c_exprs = ffi.new("const char *[]", keep)
        c_flags = ffi.new("unsigned int[]", flags)
        c_ids = ffi.new("unsigned int[]", ids)
        out = ffi.new("dx_db **")
        err = _new_error()
        rc = lib.dx_compile(c_exprs, c_flags, c_ids, len(expressions), n_sigs, out, err)
        if rc != OK:
            _raise(rc, err)
        return cls(out[0], n_sigs)

    @classmethod
    def deserialize(cls, data: bytes, n_sigs: int) -> Database:
        """Load a serialized database; raises CallError(ERR_DB) when rejected."""
        out = ffi.new("dx_db **")
        err = _new_error()
        rc = lib.dx_deserialize(ffi.from_buffer(data), len(data), n_sigs, out, err)
        if rc != OK:
            _raise(rc, err)
        return cls(out[0], n_sigs)

    def serialize(self) -> bytes:
        """The database as bytes (libhs format; tied to libhs version and CPU)."""
        out = ffi.new("char **")
        length = ffi.new("size_t *")
        err = _new_error()
        rc = lib.dx_serialize(self._ptr, out, length, err)
        if rc != OK:
            _raise(rc, err)
        try:
            return bytes(ffi.buffer(out[0], length[0]))
        finally:
            lib.dx_bytes_free(out[0])


class Scratch:
    """Per-thread Hyperscan scratch for one database (never shared)."""

    __slots__ = ("_ptr", "db", "owner_thread", "pid")

    def __init__(self, db: Database) -> None:
        out = ffi.new("dx_scratch **")
        err = _new_error()
        rc = lib.dx_scratch_new(db._ptr, out, err)
        if rc != OK:
            _raise(rc, err)
        self._ptr = ffi.gc(out[0], lib.dx_scratch_free)
        self.db = db
        self.owner_thread = threading.get_ident()
        self.pid = os.getpid()


class Tally:
    """Per-file de-duplication state, row caps and exact per-signature counts."""

    __slots__ = ("_ptr", "n_sigs")

    def __init__(self, n_sigs: int) -> None:
        ptr = lib.dx_tally_new(n_sigs)
        if ptr == ffi.NULL:
            raise MemoryError("cannot allocate scan tally")
        self._ptr = ffi.gc(ptr, lib.dx_tally_free)
        self.n_sigs = n_sigs

    def counts(self) -> np.ndarray:
        """Distinct matching lines per signature (a copy)."""
        return np.frombuffer(ffi.buffer(self._ptr.count, 8 * self.n_sigs), dtype=np.uint64).copy()

    def kept(self) -> np.ndarray:
        """Rows stored per signature (a copy)."""
        return np.frombuffer(ffi.buffer(self._ptr.kept, 8 * self.n_sigs), dtype=np.uint64).copy()

    def lines(self) -> int:
        """Distinct lines matched by any signature (a line several match counts once)."""
        return int(self._ptr.any_count)


@dataclass
class Options:
    """Scan options passed to C (see ``dx_options`` in csrc/denpex_scan.h)."""

    max_rows_per_sig: int = 10_000
    max_text: int = 1024
    block_size: int = 1 << 20
    max_piece: int = 64 << 20
    overlap: int = 64 << 10
    release_every: int = 32 << 20
    #: leave terminal colour and cursor codes out of the bytes scanned (a log
    #: captured from a colour terminal); line numbers and offsets stay the file's
    strip_ansi: bool = True
    #: rows kept per signature (uint64, one per signature), or None: max_rows_per_sig
    sig_caps: np.ndarray | None = None

    def __post_init__(self) -> None:
        self._caps_ptr = ffi.NULL
        if self.sig_caps is not None:
            self.sig_caps = np.ascontiguousarray(self.sig_caps, dtype=np.uint64)
            # kept on the object: C reads the array for as long as the options live
            self._caps_ptr = ffi.cast("uint64_t *", ffi.from_buffer(self.sig_caps))

    def cap_of(self) -> np.ndarray | int:
        """The row cap of every signature (an array) or of all of them (an int)."""
        return self.sig_caps if self.sig_caps is not None else self.max_rows_per_sig

    def to_c(self, file_index: int, cancel: Any) -> Any:
        """Build the C struct (``cancel`` is an ``int *`` or NULL)."""
        o = ffi.new("dx_options *")
        o.max_rows_per_sig = self.max_rows_per_sig
        o.sig_caps = self._caps_ptr
        o.max_text = self.max_text
        o.file_index = file_index
        o.block_size = self.block_size
        o.max_piece = self.max_piece
        o.overlap = self.overlap
        o.release_every = self.release_every
        o.strip_ansi = 1 if self.strip_ansi else 0
        o.cancel = cancel
        return o


class CancelFlag:
    """An ``int`` C reads between blocks; set it to stop scans promptly."""

    __slots__ = ("_cell",)

    def __init__(self) -> None:
        self._cell = ffi.new("int *")

    def set(self) -> None:
        """Ask every scan using this flag to stop."""
        self._cell[0] = 1

    def is_set(self) -> bool:
        """Whether cancellation was requested."""
        return bool(self._cell[0])

    @property
    def pointer(self) -> Any:
        return self._cell


@contextmanager
def reusing_buffers(on: bool = True) -> Iterator[None]:
    """While inside (and ``on``), the buffers of results that are dropped are
    kept for the next ones (at most 96 MiB; nests).  For scans that hand each
    batch on and drop it: reused pages need no page faults and no zeroing by
    the kernel.  On leaving, the kept buffers go back to the OS."""
    if not on:
        yield
        return
    lib.dx_result_reuse(1)
    try:
        yield
    finally:
        lib.dx_result_reuse(0)


def reused_bytes() -> int:
    """Capacity of the result buffers kept for reuse right now."""
    return int(lib.dx_result_reuse_bytes())


class Result:
    """Column buffers filled by C; exported to Arrow without copying."""

    __slots__ = ("_ptr",)

    def __init__(self) -> None:
        ptr = lib.dx_result_new()
        if ptr == ffi.NULL:
            raise MemoryError("cannot allocate scan result")
        self._ptr = ffi.gc(ptr, lib.dx_result_free)

    @property
    def n_rows(self) -> int:
        return int(self._ptr.n_rows)

    @property
    def newlines(self) -> int:
        return int(self._ptr.newlines)

    @property
    def scanned(self) -> int:
        return int(self._ptr.scanned)

    @property
    def range(self) -> tuple[int, int]:
        return int(self._ptr.range_start), int(self._ptr.range_end)

    @property
    def file_size(self) -> int:
        return int(self._ptr.file_size)

    @property
    def text_dropped(self) -> int:
        return int(self._ptr.text_dropped)

    def _buf(self, ptr: Any, nbytes: int) -> pa.Buffer:
        # `base=self` keeps the C memory alive exactly as long as the buffer.
        return pa.foreign_buffer(int(ffi.cast("uintptr_t", ptr)), nbytes, base=self)

    def columns(self) -> dict[str, pa.Array]:
        """line/offset/match_end/sig/file/text as Arrow arrays over the C buffers."""
        n = self.n_rows
        r = self._ptr
        if n == 0:
            return {
                "line": pa.array([], pa.uint64()),
                "offset": pa.array([], pa.uint64()),
                "match_end": pa.array([], pa.uint64()),
                "sig": pa.array([], pa.int32()),
                "file": pa.array([], pa.int32()),
                "text": pa.array([], pa.string()),
            }
        out = {}
        for name in ("line", "offset", "match_end"):
            out[name] = pa.Array.from_buffers(
                pa.uint64(), n, [None, self._buf(getattr(r, name), 8 * n)]
            )
        # indices < 2**31 by construction: viewed as int32 for dictionary arrays
        out["sig"] = pa.Array.from_buffers(pa.int32(), n, [None, self._buf(r.sig, 4 * n)])
        out["file"] = pa.Array.from_buffers(pa.int32(), n, [None, self._buf(r.file, 4 * n)])
        text_len = int(r.text_len)
        data = self._buf(r.text, text_len) if text_len else pa.py_buffer(b"")
        out["text"] = pa.Array.from_buffers(
            pa.string(), n, [None, self._buf(r.text_offsets, 4 * (n + 1)), data]
        )
        return out

    def line_view(self) -> np.ndarray:
        """Writable numpy view of the line column (to add a range's line base)."""
        n = self.n_rows
        if n == 0:
            return np.empty(0, np.uint64)
        return np.frombuffer(ffi.buffer(self._ptr.line, 8 * n), dtype=np.uint64)


def _check_scratch(scratch: Scratch, db: Database) -> None:
    if scratch.db is not db:
        raise ValueError("scratch belongs to another database")
    if scratch.owner_thread != threading.get_ident() or scratch.pid != os.getpid():
        raise RuntimeError("a scratch is used by one thread of one process only")


def scan_buffer(
    db: Database,
    scratch: Scratch,
    data: Any,
    length: int,
    *,
    base_offset: int,
    base_line: int,
    line_start: int,
    opts: Any,
    tally: Tally,
    result: Result,
) -> tuple[int, int, str]:
    """Scan ``data[:length]``; returns (status, errno, message). GIL released."""
    _check_scratch(scratch, db)
    err = _new_error()
    buf = ffi.from_buffer(data) if length else ffi.NULL
    try:
        rc = lib.dx_scan_buffer(
            db._ptr,
            scratch._ptr,
            buf,
            length,
            base_offset,
            base_line,
            line_start,
            opts,
            tally._ptr,
            result._ptr,
            err,
        )
    finally:
        if length:
            # end the buffer export now, not at garbage collection: the
            # caller grows and reuses the same bytearray
            ffi.release(buf)
    return rc, err.err_no, ffi.string(err.message).decode("utf-8", "replace")


def scan_file(
    db: Database,
    scratch: Scratch,
    path: bytes,
    start: int,
    end: int,
    *,
    opts: Any,
    tally: Tally,
    result: Result,
) -> tuple[int, int, str]:
    """Scan the lines of a regular file starting in [start, end) by mmap."""
    _check_scratch(scratch, db)
    err = _new_error()
    rc = lib.dx_scan_file(
        db._ptr, scratch._ptr, path, start, end, opts, tally._ptr, result._ptr, err
    )
    return rc, err.err_no, ffi.string(err.message).decode("utf-8", "replace")


def count_newlines(data: bytes) -> int:
    """Newlines in ``data`` (the C SIMD counter; for tests and benchmarks)."""
    return int(lib.dx_count_newlines(ffi.from_buffer(data), len(data)))


def utf8_sanitize(data: bytes) -> bytes:
    """``data`` with invalid UTF-8 replaced by U+FFFD (C implementation)."""
    out = ffi.new("char[]", 3 * len(data) + 1)
    n = lib.dx_utf8_sanitize(ffi.from_buffer(data), len(data), out)
    return bytes(ffi.buffer(out, n))


UINT64_MAX = (1 << 64) - 1


class TemplateSet:
    """A set of line-template hashes (numbers, hex ids and paths masked), in C."""

    __slots__ = ("_ptr",)

    def __init__(self) -> None:
        ptr = lib.dx_tset_new()
        if ptr == ffi.NULL:
            raise MemoryError("cannot allocate template set")
        self._ptr = ffi.gc(ptr, lib.dx_tset_free)

    def __len__(self) -> int:
        return int(lib.dx_tset_size(self._ptr))

    def __contains__(self, h: int) -> bool:
        return bool(lib.dx_tset_contains(self._ptr, h))

    def merge(self, other: TemplateSet) -> None:
        """Add every template of ``other`` (sets built in parallel become one)."""
        rc = lib.dx_tset_merge(self._ptr, other._ptr)
        if rc != OK:
            raise MemoryError("cannot grow template set")

    def to_array(self) -> np.ndarray:
        """The template hashes as a ``uint64`` array (order not meaningful)."""
        out = np.empty(len(self), np.uint64)
        n = lib.dx_tset_export(self._ptr, ffi.cast("uint64_t *", ffi.from_buffer(out)), len(out))
        return out[:n]

    @classmethod
    def from_array(cls, hashes: np.ndarray) -> TemplateSet:
        """A set holding ``hashes`` (as :meth:`to_array` gives them)."""
        arr = np.ascontiguousarray(hashes, dtype=np.uint64)
        out = cls()
        if len(arr):
            rc = lib.dx_tset_add_many(
                out._ptr, ffi.cast("uint64_t *", ffi.from_buffer(arr)), len(arr)
            )
            if rc == ERR_ARG:
                raise ValueError("a template hash of 0 is not valid")
            if rc != OK:
                raise MemoryError("cannot grow template set")
        return out

    def add_lines(self, data: Any, length: int) -> None:
        """Add the template of every line of ``data[:length]``."""
        if not length:
            return
        buf = ffi.from_buffer(data)
        try:
            rc = lib.dx_tset_add_lines(self._ptr, buf, length)
        finally:
            ffi.release(buf)  # the caller reuses the bytearray
        if rc != OK:
            raise MemoryError("cannot grow template set")

    def new_lines(
        self,
        seen: TemplateSet,
        data: Any,
        length: int,
        *,
        base_offset: int,
        base_line: int,
        cap: int,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Lines whose template is neither here nor in ``seen`` (added to ``seen``).

        Returns (line, offset, hash) arrays and the newline count of the data.
        """
        lines = np.empty(cap, np.uint64)
        offsets = np.empty(cap, np.uint64)
        hashes = np.empty(cap, np.uint64)
        newlines = ffi.new("uint64_t *")
        buf = ffi.from_buffer(data) if length else ffi.NULL
        try:
            n = lib.dx_new_templates(
                self._ptr,
                seen._ptr,
                buf,
                length,
                base_offset,
                base_line,
                ffi.cast("uint64_t *", ffi.from_buffer(lines)),
                ffi.cast("uint64_t *", ffi.from_buffer(offsets)),
                ffi.cast("uint64_t *", ffi.from_buffer(hashes)),
                cap,
                newlines,
            )
        finally:
            if length:
                ffi.release(buf)
        if n == NOMEM_COUNT:
            raise MemoryError("cannot grow template set")
        return lines[:n], offsets[:n], hashes[:n], int(newlines[0])


def template_hash(line: bytes) -> int:
    """The template hash of one line (for tests)."""
    return int(lib.dx_line_template_hash(ffi.from_buffer(line), len(line)))


def _ptr(ctype: str, buf: pa.Buffer | None, index: int, width: int) -> Any:
    """A C pointer to element ``index`` of an Arrow buffer of ``width``-byte items."""
    if buf is None or buf.size == 0:
        return ffi.cast(ctype, _EMPTY)  # never read: every length is 0
    return ffi.cast(ctype, buf.address + index * width)


_EMPTY = ffi.new("uint64_t[1]")


def _strings(arr: pa.Array) -> tuple[Any, Any]:
    """(offsets, data) pointers of a string array (its slice offset applied)."""
    bufs = arr.buffers()
    return _ptr("int32_t *", bufs[1], arr.offset, 4), _ptr("char *", bufs[2], 0, 1)


def format_rows(
    file: pa.DictionaryArray,
    line: pa.Array,
    signature: pa.DictionaryArray,
    text: pa.Array,
    chunk: int = 1 << 20,
) -> Any:
    """Yield ``file:line:signature:text\\n`` rows as bytes, about ``chunk`` at a time.

    See :func:`write_rows` for the columns; this copies each chunk out.
    """
    for view in _formatted(file, line, signature, text, chunk):
        yield bytes(view)


def write_rows(
    sink: Any,
    file: pa.DictionaryArray,
    line: pa.Array,
    signature: pa.DictionaryArray,
    text: pa.Array,
    chunk: int = 4 << 20,
) -> None:
    """Write ``file:line:signature:text\\n`` rows to ``sink`` (its ``write``
    takes a memoryview), formatted in C about ``chunk`` bytes at a time into
    one reused buffer.

    ``file`` and ``signature`` are dictionary arrays of strings with int32
    indices, ``line`` uint64, ``text`` a string array; nulls are not allowed
    (the match table has none in these columns).  Terminal controls in the
    text are escaped (:func:`denpex_fast.textsafe.terminal_safe`).
    """
    for view in _formatted(file, line, signature, text, chunk):
        sink.write(view)


def _formatted(
    file: pa.DictionaryArray,
    line: pa.Array,
    signature: pa.DictionaryArray,
    text: pa.Array,
    chunk: int,
) -> Iterator[memoryview]:
    """The formatted rows, one view of a reused buffer at a time (valid until
    the next is asked for)."""
    n = len(line)
    if not (len(file) == len(signature) == len(text) == n):
        raise ValueError("format_rows: columns of different lengths")
    for arr in (file, line, signature, text):
        if arr.null_count:
            raise ValueError("format_rows: null values")
    if n == 0:
        return
    f_off, f_data = _strings(file.dictionary)
    s_off, s_data = _strings(signature.dictionary)
    t_off, t_data = _strings(text)
    f_idx = _ptr("int32_t *", file.indices.buffers()[1], file.indices.offset, 4)
    s_idx = _ptr("int32_t *", signature.indices.buffers()[1], signature.indices.offset, 4)
    lines = _ptr("uint64_t *", line.buffers()[1], line.offset, 8)
    out = bytearray(chunk)
    written = ffi.new("uint64_t *")
    done = 0
    while done < n:
        dst = ffi.from_buffer(out)
        try:
            k = lib.dx_format_rows(
                n - done,
                f_idx + done,
                f_off,
                f_data,
                lines + done,
                s_idx + done,
                s_off,
                s_data,
                t_off + done,
                t_data,
                dst,
                len(out),
                written,
            )
        finally:
            ffi.release(dst)
        if k == 0:  # one row larger than the buffer: grow it to that row
            out = bytearray(2 * len(out))
            continue
        done += k
        yield memoryview(out)[: written[0]]
