"""A job's bytes read back after the scan: one reader for every later stage.

The scan reads each input once.  A few later stages need a little more of a
file than its matched rows: the lines around the initiating line (reports),
a file's tail (the last step of each rank), the last line of a rank that went
silent (a rank that never joined prints no error at all).  They all ask one
:class:`JobBytes`, built from :attr:`denpex_fast.engine.scanner.ScanResult.inputs`
(label -> :class:`denpex_fast.io.sources.Input`), so the answer never depends on
the working directory or on how a label was written::

    >>> jb = JobBytes.from_scan(result)
    >>> jb.last_line("logs/rank3.log")
    (1, 'worker starting: rank=3 ...')

Every read is bounded.  Plain files are read at an offset (``os.pread``);
gzip/zstd inputs are decoded forward through the scanner's own decoders, up
to :data:`MAX_DECODE` bytes; stdin and tar members, which cannot be read
twice, answer ``None``.

Inside :meth:`JobBytes.keep_open` (the diagnosis runs its stages there) a
plain file is opened once for all the stages that ask about it: up to
:data:`MAX_OPEN` descriptors stay open (least recently used closed first)
until the block ends; outside it each read opens and closes its file.
"""

from __future__ import annotations

import os
import stat
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from .sources import SNIFF_BYTES, Input, classify_head, open_reader, path_from_display

# a compressed input is decoded forward at most this far for one question
MAX_DECODE = 256 << 20
# a plain file's lines are counted (for a line number) at most this far
MAX_COUNT = 1 << 30
CHUNK = 1 << 20
# plain files kept open between reads (each stage asks about the same few files)
MAX_OPEN = 32


def _close_all(fds: OrderedDict[str, int]) -> None:
    while fds:
        _, fd = fds.popitem()
        try:
            os.close(fd)
        except OSError:
            pass


class JobBytes:
    """Bounded reads of a job's inputs by their ``file`` label.

    ``inputs``: label -> :class:`Input` (what the scan read); ``locations``:
    label -> path for labels that are not paths (an index's job-relative
    names).  A label found in neither is resolved as a path, once.
    """

    def __init__(
        self, inputs: Mapping[str, Input] | None = None, locations: Mapping[str, str] | None = None
    ) -> None:
        self._inputs: dict[str, Input | None] = dict(inputs or {})
        self._locations = dict(locations or {})
        self._fds: OrderedDict[str, int] = OrderedDict()
        self._pinned: dict[str, int] = {}  # labels inside a reading() block: never evicted
        self._keep = 0  # inside keep_open(): descriptors stay open between reads
        self._lock = threading.Lock()
        weakref.finalize(self, _close_all, self._fds)

    def close(self) -> None:
        """Close the descriptors kept open between reads (reads still work after;
        a file inside a running :meth:`reading` block stays open until it ends)."""
        with self._lock:
            keep = {k: self._fds.pop(k) for k in list(self._fds) if k in self._pinned}
            _close_all(self._fds)
            self._fds.update(keep)

    @contextmanager
    def keep_open(self) -> Iterator[JobBytes]:
        """Within this block a plain input is opened once for all the reads
        (up to :data:`MAX_OPEN` at a time); at its end they are closed.
        Outside it every read opens and closes its file."""
        with self._lock:
            self._keep += 1
        try:
            yield self
        finally:
            with self._lock:
                self._keep -= 1
                last = self._keep == 0
            if last:
                self.close()

    def _fd(self, label: str) -> tuple[int, bool]:
        """(an open descriptor of a plain regular input or -1, whether it is kept)."""
        with self._lock:
            fd = self._fds.get(label)
            if fd is not None:
                self._fds.move_to_end(label)
                return fd, True
        inp = self.input(label)
        if inp is None or inp.compression is not None:
            return -1, False
        try:
            fd = os.open(inp.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))  # type: ignore[arg-type]
        except OSError:
            return -1, False
        try:
            regular = stat.S_ISREG(os.fstat(fd).st_mode)
        except OSError:
            regular = False
        if not regular:
            os.close(fd)
            return -1, False
        with self._lock:
            if not self._keep:
                return fd, False
            if label in self._fds:  # another thread opened it meanwhile
                os.close(fd)
                return self._fds[label], True
            self._fds[label] = fd
            self._evict()
        return fd, True

    def _evict(self) -> None:
        # least recently used first, never a file inside a reading() block (lock held)
        for old in [k for k in self._fds if k not in self._pinned]:
            if len(self._fds) <= MAX_OPEN:
                break
            os.close(self._fds.pop(old))

    @classmethod
    def from_scan(cls, result: Any, locations: Mapping[str, str] | None = None) -> JobBytes:
        """The reader of a :class:`~denpex_fast.engine.scanner.ScanResult`."""
        return cls(getattr(result, "inputs", None), locations)

    def labels(self) -> list[str]:
        """Every label the scan read (files with no match included)."""
        return [k for k, v in self._inputs.items() if v is not None]

    def input(self, label: str) -> Input | None:
        """The input behind ``label``, or ``None`` when it cannot be read again."""
        if label in self._inputs:
            return self._inputs[label]
        path = self._locations.get(label)
        raw = os.fsencode(path) if path is not None else path_from_display(label)
        inp = self._classify(label, raw)
        self._inputs[label] = inp
        return inp

    def _classify(self, label: str, raw: bytes) -> Input | None:
        # one open for the type sniff and the reads after it: inside
        # keep_open() the descriptor stays for them
        try:
            fd = os.open(raw, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None
        kept = False
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None
            inp = classify_head(raw, st, os.pread(fd, SNIFF_BYTES, 0))
            if inp.compression is None:
                with self._lock:
                    if self._keep and label not in self._fds:
                        self._fds[label] = fd
                        kept = True
                        self._evict()
            return inp
        except OSError:
            return None
        finally:
            if not kept:
                os.close(fd)

    @contextmanager
    def reading(self, label: str) -> Iterator[Callable[[int, int], bytes] | None]:
        """``read(start, size)`` over one open descriptor of a plain input, for
        many reads in a row (``None`` for compressed or unreadable inputs)."""
        with self._lock:
            self._pinned[label] = self._pinned.get(label, 0) + 1
        fd, kept = -1, False
        try:
            fd, kept = self._fd(label)
            yield (lambda start, size: os.pread(fd, size, start)) if fd >= 0 else None
        finally:
            if fd >= 0 and not kept:
                os.close(fd)
            with self._lock:
                left = self._pinned.pop(label) - 1
                if left:
                    self._pinned[label] = left

    def read(self, label: str, start: int, size: int) -> bytes | None:
        """``size`` bytes at decompressed offset ``start`` (fewer at the end)."""
        inp = self.input(label)
        if inp is None or size <= 0 or start < 0:
            return None
        if inp.compression is None:
            with self.reading(label) as read:
                if read is None:
                    return None
                try:
                    return read(start, size)
                except OSError:
                    return None
        if start + size > MAX_DECODE:
            return None
        out = bytearray()
        for pos, block in self._decoded(inp, start + size):
            lo, hi = max(start - pos, 0), min(start + size - pos, len(block))
            if lo < hi:
                out += block[lo:hi]
        return bytes(out)

    def tail(self, label: str, nbytes: int) -> tuple[int, bytes] | None:
        """``(start, bytes)`` of the last ``nbytes`` of the input."""
        inp = self.input(label)
        if inp is None:
            return None
        if inp.compression is None:
            size = self._size(inp)
            if size is None:
                return None
            start = max(0, size - nbytes)
            data = self.read(label, start, size - start)
            return None if data is None else (start, data)
        keep = bytearray()
        start = 0
        for _, block in self._decoded(inp, MAX_DECODE):
            keep += block
            if len(keep) > nbytes:
                cut = len(keep) - nbytes
                del keep[:cut]
                start += cut
        return start, bytes(keep)

    def tail_lines(self, label: str, nbytes: int) -> list[str]:
        """The whole lines within the last ``nbytes`` of the input, decoded
        (invalid UTF-8 replaced), without the blank lines that end it: its
        last element is the line :meth:`last_line` numbers.  Empty when the
        input cannot be read."""
        got = self.tail(label, nbytes)
        if got is None:
            return []
        lines = got[1].decode("utf-8", "replace").split("\n")
        while lines and not lines[-1].strip(" \t\r"):
            lines.pop()  # what last_line skips
        if got[0] > 0 and lines:
            lines = lines[1:]  # the first piece may be a partial line
        return lines

    def last_line(
        self, label: str, words: bool = False, prefix: Callable[[str], int] | None = None
    ) -> tuple[int, str] | None:
        """``(line number, text)`` of the last non-blank line of the input;
        ``words``: of the last one holding a letter or digit within its last
        4 KiB (a rule of ``=`` or a box drawn around a banner says nothing),
        after the first ``prefix(text)`` characters (a collector's or
        launcher's prefix says nothing either)."""
        inp = self.input(label)
        if inp is None:
            return None
        newlines = 0
        last_end = 0  # offset just past the last non-blank byte seen
        last_nl_before = 0  # newlines before that byte
        for pos, block in self._blocks(label, inp):
            stripped = block.rstrip(b" \t\r\n")
            if stripped:
                last_end = pos + len(stripped)
                last_nl_before = newlines + stripped.count(b"\n")
            newlines += block.count(b"\n")
        if last_end == 0:
            return None
        start = max(0, last_end - 4096)
        # the blanks after the last non-blank byte belong to its line: a
        # prefix's own ("trainer-1  | ") ends in one
        data = self.read(label, start, last_end - start + 64)
        if data is None:
            return None
        data = data[: last_end - start] + data[last_end - start :].split(b"\n", 1)[0].rstrip(b"\r")
        lines = data.split(b"\n")
        if start > 0:
            lines = lines[1:]  # the first piece may be a partial line
        for back, raw in enumerate(reversed(lines)):
            text = raw.decode("utf-8", "replace").rstrip("\r")
            own = text[prefix(text) :] if prefix is not None else text
            if not words or any(ch.isalnum() for ch in own):
                return last_nl_before + 1 - back, text
        return last_nl_before + 1, data.rsplit(b"\n", 1)[-1].decode("utf-8", "replace")

    def around(
        self, label: str, line: int, offset: int, before: int, after: int
    ) -> list[tuple[int, str]]:
        """(line number, text) of up to ``before`` lines before line ``line`` (which
        starts at byte ``offset``), that line and up to ``after`` lines after it;
        each side is read from at most :data:`AROUND_BYTES` bytes."""
        start = max(0, offset - AROUND_BYTES)
        buf = self.read(label, start, offset - start + AROUND_BYTES)
        if buf is None:
            return []
        pre = buf[: offset - start].split(b"\n")
        if start > 0:
            pre = pre[1:]  # the first piece may be a partial line
        pre = pre[:-1] if pre and pre[-1] == b"" else pre
        post = buf[offset - start :].split(b"\n")
        if len(buf) == offset - start + AROUND_BYTES:
            post = post[:-1]  # the last piece may be a partial line
        elif post and post[-1] == b"":
            post = post[:-1]  # the file's final newline ends the last line
        kept = pre[-before:] if before > 0 else []
        out = [(line - len(kept) + k, x) for k, x in enumerate(kept)]
        out += [(line + k, x) for k, x in enumerate(post[: after + 1])]
        return [(n, x.decode("utf-8", "replace").rstrip("\r")) for n, x in out]

    # -- internals ---------------------------------------------------------

    @staticmethod
    def _size(inp: Input) -> int | None:
        try:
            st = os.stat(inp.path)  # type: ignore[arg-type]
        except OSError:
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None

    def _blocks(self, label: str, inp: Input) -> Iterable[tuple[int, bytes]]:
        if inp.compression is not None:
            yield from self._decoded(inp, MAX_DECODE)
            return
        size = self._size(inp)
        if size is None or size > MAX_COUNT:
            return
        with self.reading(label) as read:
            if read is None:
                return
            pos = 0
            try:
                while pos < size:
                    block = read(pos, min(CHUNK, size - pos))
                    if not block:
                        return
                    yield pos, block
                    pos += len(block)
            except OSError:
                return

    @staticmethod
    def _decoded(inp: Input, limit: int) -> Iterable[tuple[int, bytes]]:
        """Decoded blocks of a compressed input, up to ``limit`` bytes; a
        corrupt stream ends the blocks where the damage starts."""
        buf = bytearray(CHUNK)
        mv = memoryview(buf)
        pos = 0
        try:
            reader = open_reader(inp, max_decompressed=limit + CHUNK)
        except OSError:
            return
        try:
            while pos < limit:
                try:
                    n = reader.readinto(mv)
                except Exception:  # noqa: BLE001 - any decoder error ends the read
                    return
                if not n:
                    return
                yield pos, bytes(mv[:n])
                pos += n
        finally:
            reader.close()


# how far on each side of the initiating line a report reads
AROUND_BYTES = 16 << 10


def lines_around(d: Any, before: int = 6, after: int = 6) -> list[tuple[int, str]]:
    """(line number, text) of the lines around the initiating line, read from
    its file at the line's byte offset through the diagnosis's reader
    (bounded reads; gzip/zstd decoded forward up to a bound)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    i = getattr(d, "initiating", None)
    t = getattr(d, "table", None)
    if i is None or t is None or not t.num_rows:
        return []
    mask = pc.and_(
        pc.equal(t.column("file").cast(pa.string()), i.file), pc.equal(t.column("line"), i.line)
    )
    rows = t.filter(mask)
    if not rows.num_rows:
        return []
    offset = int(rows.column("offset")[0].as_py())
    reader = getattr(d, "reader", None)
    if reader is None:
        from .readback import JobBytes

        reader = JobBytes()
    return reader.around(i.file, i.line, offset, before, after)
