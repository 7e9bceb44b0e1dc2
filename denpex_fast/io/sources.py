"""Inputs: which files a scan reads, and how their bytes are decoded.

``resolve_inputs`` turns what the user named (files, directories, ``-`` for
stdin) into :class:`Input` records; ``open_reader`` gives a ``readinto``
interface over plain, gzip and zstd inputs.  Compression is recognised by
magic bytes, not by file name.

Defined outcomes for awkward inputs:

* directory: expanded recursively (sorted).  Symbolic links found inside it
  (to files or directories, inside or outside the tree, broken or looping)
  are skipped unless ``follow_symlinks=True``; then they are followed, each
  directory is entered once (by device and inode, so a loop ends) and a
  broken link gives an ``open`` error.  Paths named explicitly are always
  followed;
* file names: the ``file`` column and error paths hold :func:`display_name`
  (control characters, backslashes and undecodable bytes escaped, so a name
  is valid UTF-8 on one line); :func:`path_from_display` gives the bytes back;
* FIFO, socket, character/block device (``/dev/zero``): refused with a
  ``not-regular`` error and never read, so a scan cannot block or run forever;
* missing or unreadable file: an ``open`` error naming the path;
* truncated or corrupt gzip/zstd: every row before the damage is kept and a
  ``corrupt`` error names the file;
* a file growing while it is scanned (a live log): the bytes present when it
  was opened are scanned (``fstat`` at open, by ``read()`` and by ``mmap``
  alike), so the scan always ends; lines appended later are not read, and a
  line being written at that moment is scanned as far as it was written;
* a file shrinking or rewritten while it is scanned: reading past its new end
  gives a ``truncated`` error, keeping the rows found before (``mmap``: the
  SIGBUS is caught in C; ``read()``: end of file before the size at open); a
  rewrite that does not shrink it below the read position gives rows from
  whatever bytes were at each offset when read, never a crash;
* any decoder error (truncated stream, flipped bit, bad checksum, a bad
  frame header), wherever it happens in the stream and whatever the codec:
  a ``corrupt`` error; the rows decoded before it are kept (the decoder is fed
  :data:`RAW_FEED` compressed bytes at a time, so at most that much input's
  output is lost);
* a file whose name says ``.gz``/``.zst`` but whose content does not start
  with that magic: scanned as text when its first block is text (a misnamed
  log), else a ``corrupt`` error (a damaged header); an empty one is
  ``corrupt`` too;
* ``max_decompressed`` bytes (default :data:`DEFAULT_MAX_DECOMPRESSED`, 64 GiB;
  ``0`` for no bound) or ``max_ratio`` (decompressed/compressed) exceeded by a
  compressed input or a stream: a ``limit`` error; the rows found so far are kept;
* binary files (:func:`binary_reason`: NUL bytes scattered in the first
  block, or the magic of an ELF/PNG/archive/... file) are skipped unless the
  caller asks for them (``binary=True``); for compressed inputs and streams
  the first decompressed block decides.

This module is long because it is the one place that knows every input kind
(plain, gzip, zstd, bz2, xz, stdin, fsspec) and their hostile cases (truncation,
bombs, binary files, shrinking files).
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import IO, Any

import isal.isal_zlib as _zlib

from ..errors import FileError, file_error_from_os
from ..textsafe import escaper

try:  # Python 3.14+
    from compression import zstd as _zstd  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on the Python version
    from backports import zstd as _zstd  # type: ignore[no-redef]

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
STDIN = "-"

RAW_CHUNK = 256 << 10  # compressed bytes read from the file per call
RAW_FEED = 16 << 10  # compressed bytes fed to a decoder per call: a damaged
# stream loses at most this much input's output
DEFAULT_MAX_DECOMPRESSED = 64 << 30  # bytes read per compressed file or stream
SNIFF_BYTES = 8 << 10  # the first block that decides whether a file is binary
COMPRESSED_SUFFIXES = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd"}

# magic numbers of files that are never logs (checked at offset 0)
BINARY_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x7fELF", "ELF"),
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"\xff\xd8\xff", "JPEG"),
    (b"GIF87a", "GIF"),
    (b"GIF89a", "GIF"),
    (b"PK\x03\x04", "zip"),
    (b"!<arch>\n", "ar archive"),
    (b"\x93NUMPY", "NumPy"),
    (b"\x89HDF\r\n\x1a\n", "HDF5"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"7z\xbc\xaf\x27\x1c", "7z"),
    (b"SQLite format 3\x00", "SQLite"),
    (b"\xca\xfe\xba\xbe", "Mach-O/Java class"),
    (b"\xcf\xfa\xed\xfe", "Mach-O"),
    (b"\x00asm", "WebAssembly"),
)
_NUL_RUNS = re.compile(b"\x00+")
_BZIP2 = re.compile(b"BZh[1-9]1AY&SY")
NUL_RUN_IGNORED = 256  # longer NUL runs are holes (a crash, copytruncate), not binary
NUL_BINARY = 8  # this many NUL bytes in shorter runs in the first block: binary


class CorruptInput(Exception):
    """A compressed stream is damaged or ends early."""


class LimitExceeded(Exception):
    """A decompression size or ratio limit was reached."""


class TruncatedInput(CorruptInput):
    """A file ended before the size it had when it was opened (it shrank)."""


def binary_reason(block: bytes | bytearray | memoryview) -> str | None:
    """Why the first block of a file says it is not a log, or None for text.

    A known binary magic (ELF, PNG, zip, ar, ...) at offset 0, or at least
    :data:`NUL_BINARY` NUL bytes in runs shorter than :data:`NUL_RUN_IGNORED`:
    binary formats scatter NULs, while a log only gets NULs as long runs (the
    hole a crash or ``copytruncate`` leaves), which do not count.
    """
    head = bytes(block[:SNIFF_BYTES])
    for magic, what in BINARY_MAGIC:
        if head.startswith(magic):
            return f"binary file ({what})"
    if _BZIP2.match(head):
        return "binary file (bzip2)"
    if b"\x00" not in head:
        return None
    scattered = 0
    first = -1
    for m in _NUL_RUNS.finditer(head):
        n = m.end() - m.start()
        if n < NUL_RUN_IGNORED and m.end() < len(head):  # a run cut by the block end may go on
            scattered += n
            if first < 0:
                first = m.start()
    if scattered >= NUL_BINARY:
        return f"binary file (NUL bytes from offset {first})"
    return None


def claimed_compression(name: str) -> str | None:
    """The compression a file name claims by its suffix (``.gz``, ``.zst``), if any."""
    low = name.lower()
    for suf, kind in COMPRESSED_SUFFIXES.items():
        if low.endswith(suf):
            return kind
    return None


def wrong_magic(name: str, head: bytes) -> str | None:
    """The ``corrupt`` message for an input named ``.gz``/``.zst`` whose content
    is neither that compression nor text (a damaged header), else None."""
    claimed = claimed_compression(name)
    if claimed is None or sniff(head) is not None:
        return None
    if not head:
        return f"empty file, but the name says {claimed}: no {claimed} header"
    if binary_reason(head) is not None or not _looks_like_text(head):
        return (
            f"not {claimed} data (wrong magic {head[:4].hex()}), but the name says "
            f"{claimed}: damaged header"
        )
    return None


_NOT_TEXT = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f\ufffd]")


def _looks_like_text(head: bytes) -> bool:
    """At most 1% of the characters are invalid UTF-8 or control characters
    other than whitespace and ESC (compressed data is about half such bytes)."""
    text = head[:SNIFF_BYTES].decode("utf-8", "replace")
    return len(_NOT_TEXT.findall(text)) <= max(2, len(text) // 100)


def limit_or_default(max_decompressed: int | None) -> int | None:
    """The decompressed-bytes bound in force: None gives the default
    (:data:`DEFAULT_MAX_DECOMPRESSED`, read at call time), 0 no bound."""
    if max_decompressed is None:
        return DEFAULT_MAX_DECOMPRESSED
    if max_decompressed <= 0:
        return None
    return max_decompressed


class _Bounded:
    """A raw file read up to its size at open: appended bytes are not read,
    and an end of file before that size raises :class:`TruncatedInput`."""

    def __init__(self, raw: IO[bytes], size: int) -> None:
        self._raw = raw
        self._left = size

    def read(self, n: int) -> bytes:
        if self._left <= 0:
            return b""
        data = self._raw.read(min(n, self._left))
        if not data:
            raise TruncatedInput("file was truncated while it was being read")
        self._left -= len(data)
        return data

    def readinto(self, mv: memoryview) -> int:
        if self._left <= 0:
            return 0
        n = self._raw.readinto(mv[: self._left] if len(mv) > self._left else mv)  # type: ignore[attr-defined]
        if not n:
            raise TruncatedInput("file was truncated while it was being read")
        self._left -= n
        return n

    def close(self) -> None:
        self._raw.close()


@dataclass(frozen=True)
class Input:
    """One input stream.

    ``name`` is the path as the user named it (the ``file`` column);
    ``path`` the bytes path to open (None for stdin); ``compression`` is
    ``None``, ``"gzip"`` or ``"zstd"``; ``size`` the on-disk size;
    ``binary``: why its first block says it is not a log (None: text, or not
    known before decompression); ``bad_magic``: the ``corrupt`` message of a
    file named ``.gz``/``.zst`` that is not (see :func:`wrong_magic`).
    """

    name: str
    path: bytes | None
    compression: str | None
    size: int
    binary: str | None = None
    bad_magic: str | None = None


# characters a display name escapes: backslash, C0/C1 controls, DEL, and the
# Unicode line/paragraph separators (so one name always stays on one line)
_NEEDS_ESCAPE = re.compile("[\\\\\x00-\x1f\x7f-\x9f\u2028\u2029]")
_SHORT = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|[\\nrt])")


_escape_char = escaper(_SHORT)


def display_name(path: bytes) -> str:
    r"""The display form of a path: the ``file`` column, error paths, CLI output.

    The path decoded as UTF-8, with each undecodable byte written ``\xNN``, a
    backslash written ``\\``, newline/CR/tab written ``\n``/``\r``/``\t`` and
    other control characters ``\xNN`` (``\u2028``/``\u2029`` for the Unicode
    line separators).  The result is valid UTF-8, never spans two lines, and
    :func:`path_from_display` turns it back into the path bytes.  A path with
    none of these characters is shown unchanged.
    """
    out: list[str] = []
    rest = path
    while rest:
        try:
            text, bad, rest = rest.decode("utf-8"), b"", b""
        except UnicodeDecodeError as exc:
            text, bad = rest[: exc.start].decode("utf-8"), rest[exc.start : exc.end]
            rest = rest[exc.end :]
        out.append(_NEEDS_ESCAPE.sub(_escape_char, text))
        out.extend(f"\\x{b:02x}" for b in bad)
    return "".join(out)


def path_from_display(name: str) -> bytes:
    r"""The path bytes a :func:`display_name` stands for (its inverse).

    ``\xNN`` is the byte NN, ``\uNNNN`` that character in UTF-8, ``\\``, ``\n``,
    ``\r``, ``\t`` the usual characters; everything else is UTF-8.
    """
    out = bytearray()
    pos = 0
    for m in _UNESCAPE.finditer(name):
        out += name[pos : m.start()].encode("utf-8")
        code = m.group(1)
        if code[0] == "x":
            out.append(int(code[1:], 16))
        elif code[0] == "u":
            out += chr(int(code[1:], 16)).encode("utf-8")
        else:
            out += {"\\": b"\\", "n": b"\n", "r": b"\r", "t": b"\t"}[code]
        pos = m.end()
    out += name[pos:].encode("utf-8")
    return bytes(out)


def sniff(head: bytes) -> str | None:
    """Compression of a stream from its first bytes."""
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    return None


def _classify(path: bytes, st: os.stat_result) -> Input | FileError:
    name = display_name(path)
    if not stat.S_ISREG(st.st_mode):
        return FileError(
            name, "not-regular", "not a regular file (FIFO, socket or device); refused", None
        )
    try:
        with open(path, "rb", buffering=0) as f:
            head = f.read(SNIFF_BYTES)
    except OSError as exc:
        return file_error_from_os(name, exc)
    return classify_head(path, st, head)


def classify_head(path: bytes, st: os.stat_result, head: bytes) -> Input:
    """The :class:`Input` of a regular file from its stat and its first
    :data:`SNIFF_BYTES` bytes (for a caller that already holds them open)."""
    name = display_name(path)
    kind = sniff(head)
    binary = None if kind else binary_reason(head)
    return Input(name, path, kind, st.st_size, binary, wrong_magic(name, head))


def glob_filter(globs: Sequence[str]) -> Callable[[bytes], bool] | None:
    """ripgrep-style ``-g`` globs as a predicate on a walked file's path.

    ``GLOB`` includes, ``!GLOB`` excludes; a glob without ``/`` matches the
    file name, one with ``/`` the whole path; the last matching glob decides,
    and when any include glob is given a file no glob matches is left out.
    """
    if not globs:
        return None
    rules = [(g[1:], False) if g.startswith("!") else (g, True) for g in globs]
    any_include = any(inc for _, inc in rules)

    def keep(path: bytes) -> bool:
        text = os.fsdecode(path)
        base = os.path.basename(text)
        verdict = None
        for pattern, include in rules:
            if fnmatch.fnmatchcase(text if "/" in pattern else base, pattern):
                verdict = include
        return verdict if verdict is not None else not any_include

    return keep


def resolve_inputs(
    paths: Iterable[str | bytes | os.PathLike[Any]],
    *,
    follow_symlinks: bool = False,
    globs: Sequence[str] = (),
) -> tuple[list[Input], list[FileError]]:
    """Expand user paths into inputs (in order) and errors for the unusable ones.

    ``globs`` (see :func:`glob_filter`) choose among the files found inside
    directories; paths named explicitly are always read."""
    keep = glob_filter(globs)
    # (path, stat) of every file first, then their heads are read to classify
    # them, in parallel when there are many (each is an open and a small read)
    slots: list[Input | tuple[bytes, os.stat_result]] = []
    errors: list[FileError] = []
    for raw in paths:
        if raw == STDIN or raw == STDIN.encode():
            slots.append(Input(STDIN, None, None, 0))
            continue
        path = os.fsencode(raw)
        try:
            st = os.stat(path)
        except OSError as exc:
            errors.append(file_error_from_os(display_name(path), exc))
            continue
        if stat.S_ISDIR(st.st_mode):
            found: list[tuple[bytes, os.stat_result]] = []
            _walk(path, found, errors, follow_symlinks, keep)
            slots.extend(found)
            continue
        slots.append((path, st))
    pending = [x for x in slots if not isinstance(x, Input)]
    classified = iter(_classify_all(pending))
    inputs: list[Input] = []
    for slot in slots:
        item = slot if isinstance(slot, Input) else next(classified)
        (inputs if isinstance(item, Input) else errors).append(item)  # type: ignore[arg-type]
    return inputs, errors


# files classified per thread when there are at least this many
PARALLEL_CLASSIFY = 64


def _classify_run(files: list[tuple[bytes, os.stat_result]]) -> list[Input | FileError]:
    return [_classify(p, st) for p, st in files]


def _classify_all(files: list[tuple[bytes, os.stat_result]]) -> list[Input | FileError]:
    if len(files) < PARALLEL_CLASSIFY:
        return _classify_run(files)
    from concurrent.futures import ThreadPoolExecutor

    # threads overlap the opens and reads of a cold cache; a future per file
    # would cost more than the file's own work, so each takes a run of them
    n = min(8, os.cpu_count() or 1)
    step = max(PARALLEL_CLASSIFY, len(files) // (4 * n) + 1)
    with ThreadPoolExecutor(n, thread_name_prefix="denpex-sniff") as pool:
        parts = pool.map(_classify_run, [files[i : i + step] for i in range(0, len(files), step)])
        return [item for part in parts for item in part]


def walk_files(root: bytes, follow_symlinks: bool = False) -> list[bytes]:
    """The files under directory ``root``, in the order the scanner reads them
    (unreadable directories are left out; the scan itself reports them)."""
    found: list[tuple[bytes, os.stat_result]] = []
    _walk(root, found, [], follow_symlinks)
    return [f for f, _ in found]


def _walk(
    root: bytes,
    found: list[tuple[bytes, os.stat_result]],
    errors: list[FileError],
    follow: bool,
    keep: Callable[[bytes], bool] | None = None,
) -> None:
    seen: set[tuple[int, int]] = set()

    def onerror(exc: OSError) -> None:
        errors.append(file_error_from_os(display_name(os.fsencode(exc.filename or root)), exc))

    for dirpath, dirnames, filenames in os.walk(root, onerror=onerror, followlinks=follow):
        if follow:  # symlink loops: never enter the same directory twice
            st = os.stat(dirpath)
            if (st.st_dev, st.st_ino) in seen:
                dirnames[:] = []
                continue
            seen.add((st.st_dev, st.st_ino))
        dirnames.sort()
        for fn in sorted(filenames):
            full = os.path.join(dirpath, fn)
            if keep is not None and not keep(full):
                continue
            try:
                st = os.stat(full) if follow else os.lstat(full)
            except OSError as exc:
                errors.append(file_error_from_os(display_name(full), exc))
                continue
            if stat.S_ISLNK(st.st_mode):
                continue  # links are followed only when asked
            found.append((full, st))


class Decoded:
    """``readinto`` over a compressed stream, with end-of-stream checks.

    Multi-member gzip and multi-frame zstd are read to the end; a stream that
    stops inside a member/frame, and any error a decoder raises (whatever its
    type, wherever in the stream, including the final drain of a zstd frame),
    raise :class:`CorruptInput`.  The decoder gets :data:`RAW_FEED` bytes per
    call and each call's output is handed out before the next call, so a
    damaged stream loses at most one call's output.  ``max_out``: see
    :func:`limit_or_default`.
    """

    def __init__(
        self,
        raw: IO[bytes],
        kind: str,
        max_out: int | None,
        max_ratio: float | None,
        head: bytes = b"",
    ) -> None:
        self._raw = raw
        self._kind = kind
        self._pending = head
        self._pos = 0
        self._dec = self._new_decoder()
        self._started = False
        self._eof_raw = False
        self._max_out = limit_or_default(max_out)
        self._max_ratio = max_ratio
        self.bytes_in = 0
        self.bytes_out = 0

    def _new_decoder(self) -> Any:
        if self._kind == "gzip":
            return _zlib.decompressobj(wbits=31)
        return _zstd.ZstdDecompressor()

    def _has_pending(self) -> bool:
        return self._pos < len(self._pending)

    def _refill(self) -> None:
        if not self._has_pending() and not self._eof_raw:
            chunk = self._raw.read(RAW_CHUNK)
            if not chunk:
                self._eof_raw = True
            self.bytes_in += len(chunk)
            self._pending, self._pos = chunk, 0

    def _take(self) -> bytes:
        data = self._pending[self._pos : self._pos + RAW_FEED]
        self._pos += len(data)
        return data

    def _push_back(self, data: bytes) -> None:
        if data:
            self._pending = data + self._pending[self._pos :]
            self._pos = 0

    def readinto(self, mv: memoryview) -> int:
        try:
            return self._readinto(mv)
        except (CorruptInput, LimitExceeded, OSError):
            raise
        except Exception as exc:  # noqa: BLE001 - any decoder failure is damage
            raise CorruptInput(f"corrupt compressed data: {type(exc).__name__}: {exc}") from None

    def _readinto(self, mv: memoryview) -> int:
        want = len(mv)
        while True:
            if (
                self._kind == "zstd"
                and self._started
                and not self._dec.eof
                and not self._dec.needs_input
            ):
                # the decoder holds input or output: drain it before feeding more
                out = self._call(b"", want)
                if out:
                    return self._emit(mv, out)
            self._refill()
            if self._dec_finished():
                # a finished member/frame: continue with the next one, if any
                self._push_back(self._unused())
                if not self._has_pending():
                    if self._eof_raw:
                        return 0
                    continue
                self._dec = self._new_decoder()
                self._started = False
                continue
            if not self._has_pending() and self._eof_raw:
                if self._started:
                    raise CorruptInput("compressed stream ends early (truncated archive)")
                return 0
            out = self._call(self._take(), want)
            self._started = True
            if out:
                return self._emit(mv, out)

    def _call(self, data: bytes, want: int) -> bytes:
        try:
            return self._decompress(data, want)
        except (_zlib.error, _zstd.ZstdError, EOFError, ValueError) as exc:  # type: ignore[misc]
            raise CorruptInput(f"corrupt compressed data: {exc}") from None

    def _emit(self, mv: memoryview, out: bytes) -> int:
        n = len(out)
        mv[:n] = out
        self.bytes_out += n
        self._check_limits()
        return n

    def _decompress(self, data: bytes, want: int) -> bytes:
        d = self._dec
        if self._kind == "gzip":
            out = d.decompress(data, want)
            self._push_back(bytes(d.unconsumed_tail))
            return bytes(out)
        return bytes(d.decompress(data, max_length=want))

    def _dec_finished(self) -> bool:
        return bool(self._started and self._dec.eof)

    def _unused(self) -> bytes:
        return bytes(self._dec.unused_data)

    def _check_limits(self) -> None:
        if self._max_out is not None and self.bytes_out > self._max_out:
            raise LimitExceeded(f"decompressed size exceeds the limit of {self._max_out} bytes")
        if (
            self._max_ratio is not None
            and self.bytes_out > (1 << 20)
            and self.bytes_out > self._max_ratio * max(self.bytes_in, 1)
        ):
            raise LimitExceeded(
                f"decompression ratio exceeds {self._max_ratio:g}:1 (possible decompression bomb)"
            )

    def close(self) -> None:
        self._raw.close()


class Plain:
    """``readinto`` over an uncompressed stream (stdin, or read mode).

    ``max_out``: bytes handed out before :class:`LimitExceeded` (None: no
    bound; streams such as stdin or a tar member get the decompression bound,
    since their bytes usually come out of a decompressor).
    """

    def __init__(self, raw: IO[bytes], head: bytes = b"", max_out: int | None = None) -> None:
        self._raw = raw
        self._head = head
        self._max_out = max_out
        self.bytes_out = 0

    def readinto(self, mv: memoryview) -> int:
        if self._head:
            n = min(len(self._head), len(mv))
            mv[:n] = self._head[:n]
            self._head = self._head[n:]
        else:
            n = self._raw.readinto(mv) or 0  # type: ignore[attr-defined]
        self.bytes_out += n
        if self._max_out is not None and self.bytes_out > self._max_out:
            raise LimitExceeded(f"stream exceeds the limit of {self._max_out} bytes")
        return n

    def close(self) -> None:
        self._raw.close()


def open_reader(
    inp: Input, *, max_decompressed: int | None = None, max_ratio: float | None = None
) -> Any:
    """A reader with ``readinto(memoryview) -> int`` and ``close()`` for ``inp``.

    stdin is sniffed for compression from its first bytes.  ``max_decompressed``
    bounds the bytes read from a compressed file or from stdin (see
    :func:`limit_or_default`).
    """
    if inp.path is None:
        raw: IO[bytes] = open(sys.stdin.fileno(), "rb", buffering=0, closefd=False)
        head = raw.read(4) or b""
        kind = sniff(head)
        if kind:
            return Decoded(raw, kind, max_decompressed, max_ratio, head)
        return Plain(raw, head, limit_or_default(max_decompressed))
    raw = open(inp.path, "rb", buffering=0)
    try:
        st = os.fstat(raw.fileno())
        if not stat.S_ISREG(st.st_mode):  # replaced by a FIFO/device since resolve
            raise OSError(0, "not a regular file (FIFO, socket or device); refused")
    except BaseException:
        raw.close()
        raise
    # read the bytes present now: a growing log cannot keep the scan going,
    # and one that shrinks is reported as truncated (as a mapped file is)
    bounded: Any = _Bounded(raw, st.st_size)
    if inp.compression:
        return Decoded(bounded, inp.compression, max_decompressed, max_ratio)
    return Plain(bounded)
