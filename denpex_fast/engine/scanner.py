"""Scan logs with Hyperscan into the match table (an Arrow table).

The match table has one row per (file, line, signature), however often the
signature's patterns hit in that line::

    >>> import denpex_fast as dx
    >>> t = dx.scan(["rank0.log", "rank1.log.gz"], patterns={"oom": r"CUDA out of memory"})
    >>> t.column_names
    ['file', 'line', 'offset', 'match_end', 'signature', 'text', 'rank', 'host', 'ts']

How files are read:

* plain regular files are memory-mapped (private, read-only) and scanned in
  newline-aligned blocks; files larger than ``unit_size`` are split at line
  boundaries into ranges that scan in parallel.  Pages are dropped from the
  mapping behind the scan, so resident memory stays bounded whatever the file
  size.  A file truncated while mapped would raise SIGBUS; the native code
  catches it for the scanning thread and reports a ``truncated`` error with
  the rows found so far (``mmap=False`` reads with ``read()`` instead, and
  reports end of file before the size at open as ``truncated`` too);
* a file is read up to its size when the scan opened it: a log growing
  during the scan gives the rows of the bytes present then, and the scan ends;
* gzip/zstd files and stdin are decompressed in chunks and scanned as
  newline-aligned blocks; offsets and lines refer to the uncompressed stream;
  at most ``max_decompressed`` bytes (default 64 GiB) are read from each;
* binary files (NUL bytes scattered in the first block, or an ELF/PNG/zip/...
  magic; for compressed inputs, in the first decompressed block) are skipped
  and listed in ``ScanResult.skipped`` unless ``binary=True``.

Bounds (per file): at most ``max_rows_per_signature`` rows are kept per
signature, while ``ScanResult.counts`` keeps the exact number of matching
lines; ``text`` holds at most ``max_text`` bytes of the line (the line start,
or, when the match ends further into a very long line, the ``max_text`` bytes
ending at the match), with a trailing CR removed and invalid UTF-8 replaced
by U+FFFD.  Lines longer than 64 MiB are scanned in overlapping 64 MiB pieces:
a match longer than the 64 KiB overlap that straddles a cut is not found.

Signatures are line-scoped: patterns are compiled with ``HS_FLAG_MULTILINE``
and without ``DOTALL``, so ``.`` never crosses a newline and ``^``/``$``
anchor at line boundaries.

This module is long because it is one engine: the Scanner, its planner of
parallel ranges and streams, the merge of native results and the ScanResult;
they share private per-file state that no other module should see.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ..errors import (
    FileError,
    PatternError,
    ScanError,
    SignatureError,
    file_error_from_os,
    shown_pattern,
)
from ..io.sources import (
    SNIFF_BYTES,
    CorruptInput,
    Decoded,
    Input,
    LimitExceeded,
    Plain,
    TruncatedInput,
    binary_reason,
    limit_or_default,
    open_reader,
    resolve_inputs,
    sniff,
    wrong_magic,
)
from ..schema import COUNTS_SCHEMA, MATCH_SCHEMA
from . import _native, cache

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from ..kb.signatures import Signature

DEFAULT_UNIT = 256 << 20  # a file range scanned by one task
STREAM_CHUNK = 4 << 20  # decompressed bytes per native call
COALESCE_BATCHES = 256  # run(): small batches merged into one table chunk
#: rows per file a job-wide row budget never goes below (with_row_caps)
JOB_ROWS_FLOOR = 4
SMALL_FILE = 1 << 20  # mapped files below this are scanned several to a task,
GROUP_BYTES = 16 << 20  # up to this many bytes
GROUP_FILES = 256  # or this many files: one result and one batch per group

ProgressFn = Callable[[int, int], None]


def default_threads() -> int:
    """Cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


@dataclass
class ScanResult:
    """Everything a scan produced.

    ``table``: the match table; ``errors``: one :class:`FileError` per input
    that could not be read completely (rows found before the error are in
    ``table``); ``counts``: exact matching-line counts per (file, signature)
    with the number of rows kept; ``stats``: bytes, files (read), skipped,
    rows, seconds and ``text_dropped`` (rows whose ``text`` is empty because
    the text of one scan task passed Arrow's 2 GiB string limit; their line
    and offset are kept); ``skipped``: one ``FileError`` of kind ``binary`` per
    binary file that was not scanned (``binary=True`` scans them).
    """

    table: pa.Table
    errors: list[FileError] = field(default_factory=list)
    counts: pa.Table = field(default_factory=lambda: COUNTS_SCHEMA.empty_table())
    stats: dict[str, float] = field(default_factory=dict)
    skipped: list[FileError] = field(default_factory=list)
    # label -> the Input it was read from (files with no match included), so
    # later stages read a job's bytes back through one reader
    # (denpex_fast.io.readback.JobBytes), never by reopening labels
    inputs: dict[str, Any] = field(default_factory=dict, repr=False)
    #: file -> distinct lines any signature matched (exact, whatever the row
    #: caps; a line several signatures match counts once): ``grep -c``
    matching_lines: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when every input was read completely."""
        return not self.errors

    def __repr__(self) -> str:
        # one line: what a notebook cell should show, never the tables themselves
        rows = self.table.num_rows
        lines = sum(self.counts.column("lines").to_pylist()) if self.counts.num_rows else 0
        parts = [f"{rows:,} row{'' if rows == 1 else 's'}"]
        if lines > rows:  # rows were capped by max_rows_per_signature
            parts[0] += f" of {lines:,} matching lines"
        files = int(self.stats.get("files", 0))
        sigs = len(set(self.counts.column("signature").to_pylist())) if self.counts.num_rows else 0
        parts.append(f"{files:,} file{'' if files == 1 else 's'}")
        parts.append(f"{sigs} signature{'' if sigs == 1 else 's'} matched")
        if "bytes" in self.stats:
            parts.append(f"{_size(self.stats['bytes'])} in {self.stats.get('seconds', 0):.2f} s")
        if self.stats.get("text_dropped"):
            parts.append(f"text of {int(self.stats['text_dropped']):,} rows dropped (2 GiB limit)")
        if self.errors:
            first = self.errors[0]
            parts.append(
                f"{len(self.errors)} error{'' if len(self.errors) == 1 else 's'} "
                f"({_short(first.path, 40)}: {first.kind})"
            )
        return _fit(f"<ScanResult {', '.join(parts)}>")

    def to_pandas(self, **kwargs: Any) -> Any:
        """The match table as a pandas DataFrame, integer columns kept integral
        (``rank`` is ``Int32``, null where unknown); see :func:`denpex_fast.to_pandas`."""
        from ..tables import to_pandas

        return to_pandas(self.table, **kwargs)


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"  # pragma: no cover - the loop always returns


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else "\u2026" + text[-(limit - 1) :]


def _fit(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 2] + "\u2026>"


def _normalise_patterns(patterns: Mapping[str, str | Sequence[str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for sig, pats in patterns.items():
        if not isinstance(sig, str) or not sig:
            raise ValueError(f"signature ids must be non-empty strings, got {sig!r}")
        if not sig.isascii():  # the Arrow dictionary needs UTF-8: no lone surrogates
            try:
                sig.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError(f"signature id {sig!r} is not valid Unicode") from None
        items = [pats] if isinstance(pats, (str, bytes)) else list(pats)
        if not items:
            raise ValueError(f"signature {sig!r} has no patterns")
        out[sig] = [p.decode() if isinstance(p, bytes) else p for p in items]
    if not out:
        raise ValueError("no patterns: pass patterns={'id': 'regex', ...} or signatures")
    return out


class _Task:
    """One unit of work: a byte range of a mapped file, a whole stream, or
    several small mapped files (``members``) scanned one after another."""

    __slots__ = ("file_idx", "inp", "start", "end", "is_range", "members")

    def __init__(
        self,
        file_idx: int,
        inp: Input,
        start: int = 0,
        end: int = 0,
        is_range: bool = False,
        members: list[_Task] | None = None,
    ) -> None:
        self.file_idx = file_idx
        self.inp = inp
        self.start = start
        self.end = end
        self.is_range = is_range
        self.members = members


@dataclass
class _Done:
    task: _Task
    result: _native.Result
    counts: np.ndarray
    newlines: int
    error: FileError | None
    # a group task: per member (task, counts, first row, end row, error, lines)
    members: list[tuple[_Task, np.ndarray, int, int, FileError | None, int]] | None = None
    lines: int = 0  # distinct lines any signature matched


class _FileState:
    """Per-file merge state: line base across ranges, row caps, counts."""

    __slots__ = ("line_base", "kept", "counts", "error", "text_dropped", "lines")

    def __init__(self, n_sigs: int) -> None:
        # the per-signature arrays come from the first task (most files have
        # one): allocating them up front costs more than a small file's scan
        self.line_base = 0
        self.text_dropped = 0
        self.kept: np.ndarray | None = None
        self.counts: np.ndarray | None = None
        self.error: FileError | None = None
        self.lines = 0  # distinct lines any signature matched (ranges add up)


class Scanner:
    """A compiled signature database, reusable and safe to share between threads.

    Parameters
    ----------
    signatures:
        a :class:`~denpex_fast.kb.signatures.SignatureSet`, or one or more
        signature files/directories (added to the built-in knowledge base,
        overriding it by id).  ``None`` with no ``patterns``: the built-in
        knowledge base.
    patterns:
        ``{"signature-id": "regex" | ["regex", ...]}``: scan with these
        expressions instead of a knowledge base.
    cache_dir:
        where compiled databases are cached (see :mod:`denpex_fast.engine.cache`);
        ``False`` disables caching.
    max_rows_per_signature:
        rows kept per (file, signature); counts stay exact.
    max_rows:
        ``{"signature-id": n}``: rows kept per file for these signatures,
        instead of ``max_rows_per_signature`` (the diagnosis keeps fewer of
        the high-volume context lines: :func:`with_row_caps`).
    max_text:
        bytes of the matched line kept in ``text``.
    caseless:
        compile every pattern case-insensitively.

    Each thread that scans gets its own Hyperscan scratch, created on first
    use; a scratch is never shared between threads or processes.
    """

    def __init__(
        self,
        signatures: Any = None,
        *,
        patterns: Mapping[str, str | Sequence[str]] | None = None,
        cache_dir: str | os.PathLike[str] | bool | None = None,
        max_rows_per_signature: int = 10_000,
        max_text: int = 1024,
        caseless: bool = False,
        max_rows: Mapping[str, int] | None = None,
    ) -> None:
        if max_rows_per_signature < 1:
            raise ValueError("max_rows_per_signature must be >= 1")
        if not 1 <= max_text <= (1 << 24):
            raise ValueError("max_text must be between 1 and 16 MiB")
        self._signature_set: Any = None
        self._kb_loader: Callable[[], Any] | None = None
        if patterns is None:
            if hasattr(signatures, "patterns") and callable(signatures.patterns):
                self._signature_set, patterns = signatures, signatures.patterns()
            else:  # the entries themselves load only when asked for
                patterns, self._kb_loader = _load_kb_patterns(signatures)
        self._patterns = _normalise_patterns(patterns)
        self.signature_ids: list[str] = list(self._patterns)
        self.caseless = caseless
        self.options = _native.Options(
            max_rows_per_sig=max_rows_per_signature,
            max_text=max_text,
            sig_caps=self._caps(max_rows_per_signature, max_rows),
        )
        self._cache_dir = cache.resolve_cache_dir(cache_dir)
        self._db = self._build_database()
        self._sig_dictionary = pa.array(self.signature_ids, pa.string())
        self._local = threading.local()
        self.stream_chunk = STREAM_CHUNK
        self._job_rows: tuple[dict[str, int], int] | None = None

    @property
    def signature_set(self) -> Any:
        """The knowledge base the patterns came from (None for caller-given patterns).

        Loaded on first use: a scan needs only the expressions, which come
        from a cache keyed by the signature files' bytes.
        """
        if self._kb_loader is not None:
            self._signature_set, self._kb_loader = self._kb_loader(), None
        return self._signature_set

    @signature_set.setter
    def signature_set(self, value: Any) -> None:
        self._signature_set, self._kb_loader = value, None

    def _caps(self, default: int, max_rows: Mapping[str, int] | None) -> np.ndarray | None:
        """Per-signature row caps, or None when every signature has ``default``."""
        if not max_rows:
            return None
        index = {sig: i for i, sig in enumerate(self.signature_ids)}
        caps = np.full(len(self.signature_ids), default, np.uint64)
        for sig, n in max_rows.items():
            if sig not in index:
                raise ValueError(f"max_rows: no signature {sig!r} in this scanner")
            if int(n) < 1:
                raise ValueError(f"max_rows: {sig!r} must keep at least 1 row, not {n}")
            caps[index[sig]] = int(n)
        return caps

    def row_caps(self) -> dict[str, int]:
        """The signatures whose row cap is not ``max_rows_per_signature``, with theirs."""
        caps = self.options.sig_caps
        if caps is None:
            return {}
        default = self.options.max_rows_per_sig
        return {s: int(n) for s, n in zip(self.signature_ids, caps) if int(n) != default}

    def with_row_caps(self, max_rows: Mapping[str, int], *, job_rows: int | None = None) -> Scanner:
        """This scanner with other per-signature row caps (``max_rows``), sharing
        its compiled database; nothing is compiled or loaded again.

        ``job_rows``: rows of each signature in ``max_rows`` kept per run in
        all; a run over N files keeps ``max(JOB_ROWS_FLOOR, job_rows // N)``
        per file when that is below the signature's cap, so a job of 10,000
        small files does not keep 10,000 times the rows of one file.
        """
        from dataclasses import replace

        if job_rows is not None and job_rows < 1:
            raise ValueError(f"job_rows must be >= 1, not {job_rows}")
        twin = Scanner.__new__(Scanner)  # not copy.copy: pickling would rebuild the database
        twin.__dict__.update(self.__dict__)
        twin.options = replace(
            self.options, sig_caps=self._caps(self.options.max_rows_per_sig, max_rows)
        )
        twin._job_rows = (dict(max_rows), job_rows) if job_rows is not None else None
        twin._local = threading.local()
        return twin

    def _for_files(self, n_files: int) -> Scanner:
        """This scanner, or its twin with caps scaled for a run over ``n_files``."""
        if self._job_rows is None or n_files < 1:
            return self
        caps, job_rows = self._job_rows
        per_file = max(JOB_ROWS_FLOOR, job_rows // n_files)
        if all(per_file >= n for n in caps.values()):
            return self
        twin = self.with_row_caps({s: min(n, per_file) for s, n in caps.items()})
        twin._job_rows = self._job_rows
        return twin

    # -- database ---------------------------------------------------------
    def _expressions(self) -> tuple[list[bytes], list[int], list[int], list[tuple[str, int]]]:
        exprs: list[bytes] = []
        ids: list[int] = []
        where: list[tuple[str, int]] = []
        flag = _native.HS_FLAG_MULTILINE | (_native.HS_FLAG_CASELESS if self.caseless else 0)
        for sig_idx, (sig, pats) in enumerate(self._patterns.items()):
            for k, p in enumerate(pats):
                if "\x00" in p:
                    raise PatternError(
                        sig,
                        k,
                        p,
                        "pattern contains a NUL character; write \\x00 to match a NUL byte",
                    )
                try:
                    exprs.append(p.encode("utf-8"))
                except UnicodeEncodeError as exc:  # a lone surrogate, e.g. from os.fsdecode
                    raise PatternError(
                        sig,
                        k,
                        p,
                        f"pattern is not valid Unicode ({exc.reason} at position {exc.start})",
                    ) from None
                ids.append(sig_idx)
                where.append((sig, k))
        return exprs, [flag] * len(exprs), ids, where

    def _build_database(self) -> _native.Database:
        exprs, flags, ids, where = self._expressions()
        n_sigs = len(self.signature_ids)
        key = cache.cache_key(exprs, flags, ids, n_sigs)
        db = cache.load(self._cache_dir, key, n_sigs)
        if db is not None:
            return db
        try:
            db = _native.Database.compile(exprs, flags, ids, n_sigs)
        except _native.CallError as exc:
            if exc.status == _native.ERR_COMPILE and 0 <= exc.expression < len(where):
                sig, k = where[exc.expression]
                err = PatternError(sig, k, self._patterns[sig][k], str(exc))
                if self.signature_set is not None:  # name the signature file too
                    found = pattern_failure(err, {s.id: s for s in self.signature_set})
                    if found is not None:
                        raise SignatureError(found[1]) from None
                raise err from None
            if exc.status == _native.ERR_COMPILE:
                raise PatternError("<pattern set>", -1, "", str(exc)) from None
            raise
        cache.store(self._cache_dir, key, db)
        return db

    def serialize(self) -> bytes:
        """The compiled database as bytes (what Dask workers receive)."""
        return self._db.serialize()

    def __reduce__(self) -> tuple[Any, ...]:
        # Workers get the serialized database and deserialize it: no recompile.
        state = {
            "patterns": self._patterns,
            "caseless": self.caseless,
            "max_rows": self.options.max_rows_per_sig,
            "max_text": self.options.max_text,
            "row_caps": self.row_caps(),
            "job_rows": self._job_rows,
        }
        return (_rebuild_scanner, (self._db.serialize(), state))

    def __repr__(self) -> str:
        n = len(self.signature_ids)
        head = f"<Scanner {n} signature{'' if n == 1 else 's'}"
        if self.signature_set is not None:
            head += " from the knowledge base"
        else:  # patterns given by the caller: name them (as many as fit)
            shown: list[str] = []
            for sig in self.signature_ids:
                if sum(len(x) + 2 for x in shown) + len(sig) > 90:
                    break
                shown.append(sig)
            more = ", \u2026" if len(shown) < n else ""
            head += f": {', '.join(shown)}{more}"
        opts = []
        if self.caseless:
            opts.append("caseless")
        if self.options.max_rows_per_sig != 10_000:
            opts.append(f"max_rows_per_signature={self.options.max_rows_per_sig}")
        if self.options.max_text != 1024:
            opts.append(f"max_text={self.options.max_text}")
        if self.options.sig_caps is not None:
            opts.append(f"{len(self.row_caps())} signatures with their own row cap")
        return _fit(head + "".join(f", {o}" for o in opts) + ">")

    # -- scratch ----------------------------------------------------------
    def _scratch(self) -> _native.Scratch:
        s = getattr(self._local, "scratch", None)
        if s is None or s.pid != os.getpid():  # forked child: never reuse the parent's
            s = _native.Scratch(self._db)
            self._local.scratch = s
        return s

    @property
    def patterns(self) -> dict[str, list[str]]:
        """signature id -> its Hyperscan expressions (a copy)."""
        return {k: list(v) for k, v in self._patterns.items()}

    # -- public scanning API ---------------------------------------------
    def scan(self, paths: Iterable[Any] | str | os.PathLike[str], **kwargs: Any) -> pa.Table:
        """Scan files/directories (``-`` = stdin) into the match table.

        Keyword arguments are those of :meth:`run`.  With ``errors="raise"``
        (default) a failed input raises :class:`~denpex_fast.ScanError`
        carrying the partial result; with ``errors="collect"`` the table's
        schema metadata ``denpex.errors`` lists failed inputs as JSON.
        ``rank``, ``host`` and ``ts`` are null: ``dx.attribute(table)`` (or
        ``dx.scan(..., attribute=True)``) fills them.
        """
        return self.run(paths, **kwargs).table

    def run(
        self,
        paths: Iterable[Any] | str | os.PathLike[str],
        *,
        threads: int | None = None,
        errors: str = "raise",
        mmap: bool = True,
        unit_size: int = DEFAULT_UNIT,
        follow_symlinks: bool = False,
        max_decompressed: int | None = None,
        max_ratio: float | None = None,
        progress: ProgressFn | None = None,
        cancel: _native.CancelFlag | None = None,
        binary: bool = False,
        globs: Sequence[str] = (),
        on_batch: Callable[[pa.RecordBatch], None] | None = None,
    ) -> ScanResult:
        """Scan and return a :class:`ScanResult` (table, errors, counts, stats).

        ``threads``: scanning threads (default: all cores); ``errors``:
        ``"raise"`` or ``"collect"``; ``mmap=False`` reads plain files with
        ``read()`` instead of mapping them; ``unit_size``: bytes per parallel
        range of a large file; ``max_decompressed``: bytes read at most from
        each compressed input or stream (default, ``None``: 64 GiB, see
        :data:`denpex_fast.io.sources.DEFAULT_MAX_DECOMPRESSED`; ``0``: no bound),
        ``max_ratio``: decompressed/compressed ratio bound; a hit is a
        ``limit`` error on that file, its rows so far kept;
        ``progress(done_bytes, total_bytes)`` is called from
        the calling thread; ``cancel``: a :class:`CancelFlag` that stops the
        scan (rows found so far are returned with ``cancelled`` errors);
        ``binary``: scan binary files too instead of skipping them (they are
        listed in ``ScanResult.skipped`` and counted in ``stats["skipped"]``);
        ``globs``: ripgrep-style ``GLOB`` / ``!GLOB`` filters on the files found
        inside directories (:func:`denpex_fast.io.sources.glob_filter`);
        ``on_batch``: each RecordBatch of rows is handed to it as it is found,
        in input order, instead of being kept: the result's table is then
        empty, ``stats["rows"]`` counts what was handed over, and memory does
        not grow with the rows (``denpex scan`` prints this way).
        """
        if errors not in ("raise", "collect"):
            raise ValueError("errors must be 'raise' or 'collect'")
        t0 = time.perf_counter()
        batches: list[pa.RecordBatch] = []
        parts: list[pa.Table] = []
        sink = _Collector()
        streamed = 0
        with _native.reusing_buffers(on_batch is not None):
            for batch in self._iter(
                paths,
                threads=threads,
                mmap=mmap,
                unit_size=unit_size,
                follow_symlinks=follow_symlinks,
                progress=progress,
                cancel=cancel,
                sink=sink,
                max_decompressed=max_decompressed,
                max_ratio=max_ratio,
                binary=binary,
                globs=globs,
            ):
                if on_batch is not None:
                    on_batch(batch)
                    streamed += batch.num_rows
                    continue
                batches.append(batch)
                if len(batches) >= COALESCE_BATCHES:
                    # many small files give one tiny batch each; each costs buffers
                    # far larger than its rows, so they are merged as they come
                    parts.append(
                        pa.Table.from_batches(batches, schema=MATCH_SCHEMA).combine_chunks()
                    )
                    batches = []
        parts.append(pa.Table.from_batches(batches, schema=MATCH_SCHEMA))
        table = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        stats = {
            "files": sink.files_read(),
            "skipped": len(sink.skipped),
            "bytes": sink.bytes,
            "rows": table.num_rows + streamed,
            "text_dropped": sink.text_dropped,
            "seconds": time.perf_counter() - t0,
        }
        if sink.errors or sink.skipped:
            import json

            meta = dict(table.schema.metadata or {})
            if sink.errors:
                meta[b"denpex.errors"] = json.dumps([e.to_dict() for e in sink.errors]).encode()
            if sink.skipped:
                meta[b"denpex.skipped"] = json.dumps([e.to_dict() for e in sink.skipped]).encode()
            table = table.replace_schema_metadata(meta)
        log.info(
            "scanned %d file(s), %.1f MiB in %.2f s: %d rows, %d error(s), %d skipped",
            stats["files"],
            stats["bytes"] / (1 << 20),
            stats["seconds"],
            stats["rows"],
            len(sink.errors),
            stats["skipped"],
        )
        result = ScanResult(
            table,
            sink.errors,
            sink.counts_table(self.signature_ids),
            stats,
            sink.skipped,
            sink.inputs,
            sink.matching_lines(),
        )
        if sink.errors and errors == "raise":
            raise ScanError(sink.errors, result)
        return result

    def iter_batches(
        self,
        paths: Iterable[Any] | str | os.PathLike[str],
        *,
        threads: int | None = None,
        mmap: bool = True,
        unit_size: int = DEFAULT_UNIT,
        follow_symlinks: bool = False,
        errors: list[FileError] | None = None,
        progress: ProgressFn | None = None,
        cancel: _native.CancelFlag | None = None,
        max_decompressed: int | None = None,
        max_ratio: float | None = None,
        binary: bool = False,
        skipped: list[FileError] | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Stream the match table as RecordBatches, in input order.

        Memory stays bounded for any number of inputs: at most ``2 * threads``
        ranges are in flight.  Failed inputs are appended to ``errors`` when a
        list is given (otherwise they are dropped silently), skipped binary
        files to ``skipped``; the other keywords are those of :meth:`run`.
        """
        sink = _Collector()
        yield from self._iter(
            paths,
            threads=threads,
            mmap=mmap,
            unit_size=unit_size,
            follow_symlinks=follow_symlinks,
            progress=progress,
            cancel=cancel,
            sink=sink,
            max_decompressed=max_decompressed,
            max_ratio=max_ratio,
            binary=binary,
        )
        if errors is not None:
            errors.extend(sink.errors)
        if skipped is not None:
            skipped.extend(sink.skipped)

    def scan_bytes(
        self, data: bytes | bytearray | memoryview, *, name: str = "<bytes>"
    ) -> pa.Table:
        """Scan an in-memory buffer as one file named ``name``."""
        mv = memoryview(data).cast("B")
        tally = _native.Tally(len(self.signature_ids))
        result = _native.Result()
        opts = self.options.to_c(0, _native.ffi.NULL)
        rc, err_no, msg = _native.scan_buffer(
            self._db,
            self._scratch(),
            mv,
            len(mv),
            base_offset=0,
            base_line=0,
            line_start=0,
            opts=opts,
            tally=tally,
            result=result,
        )
        if rc != _native.OK:
            raise _native.CallError(rc, msg, err_no)
        names = pa.array([name], pa.string())
        return pa.Table.from_batches([self._batch(result, names)], schema=MATCH_SCHEMA)

    def scan_stream(
        self,
        readable: Any,
        name: str = "<stream>",
        *,
        max_decompressed: int | None = None,
        max_ratio: float | None = None,
        cancel: _native.CancelFlag | None = None,
        binary: bool = False,
    ) -> ScanResult:
        """Scan a binary file object (``read``/``readinto``) as one file named ``name``.

        Compression (gzip/zstd) is recognised from the first bytes, as for
        files.  The stream is read to its end in bounded chunks and closed.  A
        damaged stream (or one whose ``read`` raises) gives a ``corrupt`` error
        in the result, with the rows found before the damage.  At most
        ``max_decompressed`` bytes are read (compressed or not; see
        :meth:`run`); a binary stream is skipped unless ``binary=True``.
        """
        t0 = time.perf_counter()
        head = readable.read(4) or b""
        kind = sniff(head)
        reader = (
            Decoded(readable, kind, max_decompressed, max_ratio, head)
            if kind
            else Plain(readable, head, limit_or_default(max_decompressed))
        )
        task = _Task(0, Input(name, None, kind, 0))
        flag = cancel or _native.CancelFlag()
        tally = _native.Tally(len(self.signature_ids))
        result = _native.Result()
        error = self._scan_stream(
            task,
            self._scratch(),
            self.options.to_c(0, flag.pointer),
            tally,
            result,
            (max_decompressed, max_ratio),
            flag,
            reader,
            binary,
        )
        sink = _Collector()
        sink.names = [name]
        st = _FileState(len(self.signature_ids))
        batch = self._merge(
            _Done(task, result, tally.counts(), 0, error, lines=tally.lines()),
            st,
            pa.array(sink.names, pa.string()),
        )
        sink.add_file(0, st)
        sink.bytes = result.scanned
        table = pa.Table.from_batches([batch] if batch is not None else [], schema=MATCH_SCHEMA)
        stats = {
            "files": sink.files_read(),
            "skipped": len(sink.skipped),
            "bytes": sink.bytes,
            "rows": table.num_rows,
            "text_dropped": sink.text_dropped,
            "seconds": time.perf_counter() - t0,
        }
        return ScanResult(
            table,
            sink.errors,
            sink.counts_table(self.signature_ids),
            stats,
            sink.skipped,
            matching_lines=sink.matching_lines(),
        )

    # -- internals ----------------------------------------------------------
    def _batch(
        self, result: _native.Result, names: pa.Array, mask: np.ndarray | None = None
    ) -> pa.RecordBatch:
        cols = result.columns()
        n = result.n_rows
        file_arr = pa.DictionaryArray.from_arrays(cols["file"], names)
        sig_arr = pa.DictionaryArray.from_arrays(cols["sig"], self._sig_dictionary)
        null = [
            pa.nulls(n, pa.int32()),
            pa.DictionaryArray.from_arrays(pa.nulls(n, pa.int32()), _NO_HOSTS),
            pa.nulls(n, pa.timestamp("us", tz="UTC")),
        ]
        batch = pa.RecordBatch.from_arrays(
            [
                file_arr,
                cols["line"],
                cols["offset"],
                cols["match_end"],
                sig_arr,
                cols["text"],
                *null,
            ],
            schema=MATCH_SCHEMA,
        )
        if mask is not None:
            batch = batch.filter(pa.array(mask))
        return batch

    def _iter(
        self,
        paths: Any,
        *,
        threads: int | None,
        mmap: bool,
        unit_size: int,
        follow_symlinks: bool,
        progress: ProgressFn | None,
        cancel: _native.CancelFlag | None,
        sink: _Collector,
        max_decompressed: int | None = None,
        max_ratio: float | None = None,
        binary: bool = False,
        globs: Sequence[str] = (),
    ) -> Iterator[pa.RecordBatch]:
        if isinstance(paths, (str, bytes, os.PathLike)):
            paths = [paths]
        found, errors = resolve_inputs(paths, follow_symlinks=follow_symlinks, globs=globs)
        sink.errors.extend(errors)
        inputs = []
        for inp in found:
            if inp.bad_magic:  # named .gz/.zst, binary content without the magic
                sink.errors.append(FileError(inp.name, "corrupt", inp.bad_magic))
            elif inp.binary and not binary:
                sink.skipped.append(_skip(inp.name, inp.binary))
            else:
                inputs.append(inp)
        sink.names = [i.name for i in inputs]
        sink.inputs = {i.name: i for i in inputs if i.path is not None}
        names = pa.array(sink.names, pa.string())
        n_threads = threads or default_threads()
        if unit_size < 1:
            raise ValueError("unit_size must be positive")
        eng = self._for_files(len(inputs))
        tasks = list(eng._plan(inputs, mmap, unit_size))
        total = sum(i.size for i in inputs)
        flag = cancel or _native.CancelFlag()
        states: dict[int, _FileState] = {}
        n_sigs = len(self.signature_ids)
        done_bytes = 0
        limits = (max_decompressed, max_ratio)

        def work(task: _Task) -> _Done:
            return eng._run_task(task, flag, limits, binary)

        pending: deque[Future[_Done]] = deque()
        it = iter(tasks)
        with ThreadPoolExecutor(max_workers=n_threads, thread_name_prefix="denpex-scan") as pool:
            try:
                for task in it:
                    pending.append(pool.submit(work, task))
                    if len(pending) >= 2 * n_threads:
                        break
                while pending:
                    done = pending.popleft().result()
                    nxt = next(it, None)
                    if nxt is not None:
                        pending.append(pool.submit(work, nxt))
                    if done.members is not None:
                        batch = eng._merge_group(done, sink, names)
                        done_bytes += done.result.scanned
                        sink.bytes += done.result.scanned
                        if progress is not None:
                            progress(done_bytes, total)
                        if batch is not None and batch.num_rows:
                            yield batch
                        continue
                    st = states.get(done.task.file_idx)
                    if st is None:
                        st = states[done.task.file_idx] = _FileState(n_sigs)
                    batch = eng._merge(done, st, names)
                    done_bytes += done.result.scanned
                    sink.bytes += done.result.scanned
                    if progress is not None:
                        progress(done_bytes, total)
                    if self._is_last(done.task, tasks):
                        sink.add_file(done.task.file_idx, st)
                        del states[
                            done.task.file_idx
                        ]  # nothing per file outlives it but its counts
                    if batch is not None and batch.num_rows:
                        yield batch
            except BaseException:
                flag.set()  # Ctrl-C or a consumer that stopped: stop native scans promptly
                for f in pending:
                    f.cancel()
                raise

    @staticmethod
    def _is_last(task: _Task, tasks: list[_Task]) -> bool:
        # ranges of a file are consecutive; the last range ends at the file size
        return not task.is_range or task.end >= task.inp.size

    def _plan(self, inputs: list[Input], mmap: bool, unit_size: int) -> Iterator[_Task]:
        # small files go several to a task: per task costs (a result, a tally,
        # an Arrow batch, a thread hand-off) would outweigh their scan
        group: list[_Task] = []
        group_bytes = 0
        for idx, inp in enumerate(inputs):
            small = (
                inp.path is not None
                and inp.compression is None
                and mmap
                and 0 < inp.size < min(SMALL_FILE, unit_size)
            )
            if small:
                group.append(_Task(idx, inp, 0, inp.size, True))
                group_bytes += inp.size
                if len(group) >= GROUP_FILES or group_bytes >= GROUP_BYTES:
                    yield _Task(group[0].file_idx, group[0].inp, members=group)
                    group, group_bytes = [], 0
                continue
            if group:  # tasks stay in file order
                yield _Task(group[0].file_idx, group[0].inp, members=group)
                group, group_bytes = [], 0
            if inp.path is not None and inp.compression is None and mmap and inp.size > 0:
                start = 0
                while start < inp.size:
                    end = min(start + unit_size, inp.size)
                    yield _Task(idx, inp, start, end if end < inp.size else inp.size, True)
                    start = end
            else:
                yield _Task(idx, inp)
        if group:
            yield _Task(group[0].file_idx, group[0].inp, members=group)

    def _run_task(
        self,
        task: _Task,
        flag: _native.CancelFlag,
        limits: tuple[int | None, float | None],
        binary: bool = False,
    ) -> _Done:
        if task.members is not None:
            return self._run_group(task, flag)
        tally = _native.Tally(len(self.signature_ids))
        result = _native.Result()
        opts = self.options.to_c(task.file_idx, flag.pointer)
        scratch = self._scratch()
        error: FileError | None = None
        newlines = 0
        if task.is_range:
            assert task.inp.path is not None
            end = task.end if task.end < task.inp.size else _native.UINT64_MAX
            rc, err_no, msg = _native.scan_file(
                self._db,
                scratch,
                task.inp.path,
                task.start,
                end,
                opts=opts,
                tally=tally,
                result=result,
            )
            newlines = result.newlines
            error = _status_error(task.inp.name, rc, err_no, msg)
        else:
            error = self._scan_stream(
                task, scratch, opts, tally, result, limits, flag, binary=binary
            )
        return _Done(task, result, tally.counts(), newlines, error, lines=tally.lines())

    def _run_group(self, task: _Task, flag: _native.CancelFlag) -> _Done:
        """Small mapped files one after another into one result (rows in file
        order); each keeps its own tally, so caps and counts stay per file."""
        assert task.members is not None
        result = _native.Result()
        scratch = self._scratch()
        members = []
        for m in task.members:
            assert m.inp.path is not None
            tally = _native.Tally(len(self.signature_ids))
            first = result.n_rows
            if flag.is_set():
                error: FileError | None = FileError(m.inp.name, "cancelled", "scan cancelled")
            else:
                rc, err_no, msg = _native.scan_file(
                    self._db,
                    scratch,
                    m.inp.path,
                    0,
                    _native.UINT64_MAX,
                    opts=self.options.to_c(m.file_idx, flag.pointer),
                    tally=tally,
                    result=result,
                )
                error = _status_error(m.inp.name, rc, err_no, msg)
            members.append((m, tally.counts(), first, result.n_rows, error, tally.lines()))
        return _Done(task, result, np.zeros(0, np.uint64), 0, None, members)

    def _scan_stream(
        self,
        task: _Task,
        scratch: _native.Scratch,
        opts: Any,
        tally: _native.Tally,
        result: _native.Result,
        limits: tuple[int | None, float | None],
        flag: _native.CancelFlag,
        reader: Any = None,
        binary: bool = False,
    ) -> FileError | None:
        name = task.inp.name
        # a plain file was classified from its first block when resolved; a
        # compressed file or a stream is classified from its first decoded block
        check_head = task.inp.path is None or task.inp.compression is not None
        try:
            if reader is None:
                reader = open_reader(task.inp, max_decompressed=limits[0], max_ratio=limits[1])
        except OSError as exc:
            if exc.errno == 0:
                return FileError(name, "not-regular", exc.strerror or str(exc))
            return file_error_from_os(name, exc)
        o = self.options
        buf = bytearray(min(self.stream_chunk, o.max_piece))
        fill = base_off = base_line = line_start = 0
        eof = False
        try:
            while True:
                mv = memoryview(buf)
                try:
                    while fill < len(buf) and not eof:
                        n = reader.readinto(mv[fill:])
                        if n:
                            fill += n
                        else:
                            eof = True
                except Exception as exc:  # noqa: BLE001 - any reader failure is this file's error
                    # scan what arrived intact, then report the damage
                    eof = True
                    kind = "limit" if isinstance(exc, LimitExceeded) else "corrupt"
                    if isinstance(exc, TruncatedInput):
                        kind = "truncated"
                    if isinstance(exc, OSError):
                        kind = "open"
                    msg = (
                        str(exc)
                        if isinstance(exc, (CorruptInput, LimitExceeded, OSError))
                        else f"corrupt input: {type(exc).__name__}: {exc}"
                    )
                    err = FileError(name, kind, msg, getattr(exc, "errno", None))
                    skip = (
                        check_head
                        and base_off == 0
                        and not binary
                        and binary_reason(buf[: min(fill, SNIFF_BYTES)])
                    )
                    if not skip:
                        self._scan_chunk(
                            scratch, mv, fill, base_off, base_line, line_start, opts, tally, result
                        )
                    return err
                finally:
                    mv.release()
                if check_head:
                    check_head = False
                    head = bytes(buf[: min(fill, SNIFF_BYTES)])
                    bad = wrong_magic(name, head) if task.inp.compression is None else None
                    if bad:
                        return FileError(name, "corrupt", bad)
                    why = None if binary else binary_reason(head)
                    if why:
                        return _skip(name, why)
                if fill == 0:
                    return None
                forced = False
                if eof:
                    cut = fill
                else:
                    cut = buf.rfind(b"\n", 0, fill) + 1
                    if cut == 0:
                        if len(buf) < o.max_piece:  # one long line: grow, read on
                            # a new buffer, not extend(): a reader may still
                            # hold a view of the old one
                            bigger = bytearray(len(buf) + min(len(buf), o.max_piece - len(buf)))
                            bigger[:fill] = buf[:fill]
                            buf = bigger
                            continue
                        cut, forced = fill, True
                mv = memoryview(buf)
                try:
                    nl, rc, err_no, msg = self._scan_chunk(
                        scratch, mv, cut, base_off, base_line, line_start, opts, tally, result
                    )
                finally:
                    mv.release()
                if rc == _native.ERR_CANCELLED or flag.is_set():
                    return FileError(name, "cancelled", "scan cancelled")
                if rc != _native.OK:
                    return _status_error(name, rc, err_no, msg)
                base_line += nl
                keep = o.overlap if forced else 0  # re-scan the tail of a cut line
                if not forced:
                    line_start = base_off + cut
                base_off += cut - keep
                rest = fill - (cut - keep)
                buf[:rest] = buf[cut - keep : fill]
                fill = rest
                if eof and fill <= keep:
                    return None
        finally:
            reader.close()

    def _scan_chunk(
        self,
        scratch: _native.Scratch,
        mv: memoryview,
        length: int,
        base_off: int,
        base_line: int,
        line_start: int,
        opts: Any,
        tally: _native.Tally,
        result: _native.Result,
    ) -> tuple[int, int, int, str]:
        before = result.newlines
        rc, err_no, msg = _native.scan_buffer(
            self._db,
            scratch,
            mv,
            length,
            base_offset=base_off,
            base_line=base_line,
            line_start=line_start,
            opts=opts,
            tally=tally,
            result=result,
        )
        return result.newlines - before, rc, err_no, msg

    def _merge_group(self, done: _Done, sink: _Collector, names: pa.Array) -> pa.RecordBatch | None:
        """A group task's files: each its counts, kept rows and error; one batch."""
        res = done.result
        assert done.members is not None
        sig = (
            np.frombuffer(_native.ffi.buffer(res._ptr.sig, 4 * res.n_rows), np.uint32)
            if res.n_rows
            else np.zeros(0, np.uint32)
        )
        n_sigs = len(self.signature_ids)
        for m, counts, lo, hi, error, lines in done.members:
            st = _FileState(n_sigs)
            st.counts = counts
            st.lines = lines
            if hi > lo:
                st.kept = np.bincount(sig[lo:hi], minlength=n_sigs).astype(np.int64)
            st.error = error
            sink.add_file(m.file_idx, st)
        sink.text_dropped += res.text_dropped
        return self._batch(res, names) if res.n_rows else None

    def _merge(self, done: _Done, st: _FileState, names: pa.Array) -> pa.RecordBatch | None:
        """Fix up a finished task's rows: line base, cross-range caps, counts."""
        res = done.result
        if done.task.is_range and st.line_base:
            res.line_view()[:] += np.uint64(st.line_base)
        st.line_base += done.newlines
        st.counts = done.counts if st.counts is None else st.counts + done.counts
        st.lines += done.lines
        st.text_dropped += res.text_dropped
        if done.error is not None and st.error is None:
            st.error = done.error
        if res.n_rows == 0:
            return None
        mask = None
        sig = np.frombuffer(_native.ffi.buffer(res._ptr.sig, 4 * res.n_rows), np.uint32)
        n_sigs = len(done.counts)
        per_sig = np.bincount(sig, minlength=n_sigs)
        cap = self.options.cap_of()
        # a stream's tally caps in C; ranges of one file each cap alone, so
        # their union is capped here
        if st.kept is not None and np.any(st.kept + per_sig > cap):
            mask = _cap_mask(sig, st.kept, cap)
            per_sig = np.bincount(sig[mask], minlength=n_sigs)
        st.kept = per_sig.astype(np.int64) if st.kept is None else st.kept + per_sig
        return self._batch(res, names, mask)


# the (empty) dictionary of the host column before attribution
_NO_HOSTS = pa.array([], pa.string())


def _cap_mask(sig: np.ndarray, already: np.ndarray, cap: np.ndarray | int) -> np.ndarray:
    """Keep a row when fewer than ``cap`` (per signature, or one for all) rows
    of its signature came before it."""
    order = np.argsort(sig, kind="stable")
    s = sig[order]
    starts = np.r_[0, np.flatnonzero(s[1:] != s[:-1]) + 1]
    first = np.repeat(starts, np.diff(np.r_[starts, len(s)]))
    rank = np.empty(len(sig), np.int64)
    rank[order] = np.arange(len(s)) - first
    limit = cap[sig] if isinstance(cap, np.ndarray) else cap
    return rank + already[sig] < limit


def _skip(name: str, why: str) -> FileError:
    """The record of a binary file that was not scanned."""
    return FileError(name, "binary", f"skipped: {why}; binary=True / --binary scans it")


def _status_error(name: str, rc: int, err_no: int, msg: str) -> FileError | None:
    if rc == _native.OK:
        return None
    if rc == _native.ERR_IO:
        kind = "directory" if err_no == 21 else "open"
        return FileError(name, kind, msg, err_no or None)
    if rc == _native.ERR_NOTREG:
        return FileError(name, "not-regular", msg)
    if rc == _native.ERR_TRUNCATED:
        return FileError(name, "truncated", msg)
    if rc == _native.ERR_CANCELLED:
        return FileError(name, "cancelled", msg)
    if rc == _native.ERR_NOMEM:
        raise MemoryError(f"{name}: {msg}")
    raise _native.CallError(rc, f"{name}: {msg}", err_no)


class _Collector:
    """Errors, file names, counts and byte totals gathered during a scan."""

    def __init__(self) -> None:
        self.errors: list[FileError] = []
        self.skipped: list[FileError] = []
        self.names: list[str] = []
        self.inputs: dict[str, Any] = {}
        self.bytes = 0
        self.text_dropped = 0
        self._streams_skipped = 0
        # per file: (index, signatures that matched, their line counts, rows kept);
        # sparse, so memory grows with matches, not with files x signatures
        self._counts: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = []
        self._lines: list[tuple[int, int]] = []  # (index, distinct matching lines)

    def add_file(self, idx: int, st: _FileState) -> None:
        self.text_dropped += st.text_dropped
        if st.lines:
            self._lines.append((idx, st.lines))
        counts = st.counts
        nz = np.flatnonzero(counts) if counts is not None else np.zeros(0, np.int64)
        if counts is not None and len(nz):
            kept = st.kept if st.kept is not None else np.zeros(len(counts), np.int64)
            self._counts.append((idx, nz.astype(np.int32), counts[nz], kept[nz].astype(np.uint64)))
        if st.error is not None and st.error.kind == "binary":
            self.skipped.append(st.error)
            self._streams_skipped += 1
        elif st.error is not None:
            self.errors.append(st.error)

    def matching_lines(self) -> dict[str, int]:
        """Distinct matching lines per file with a match (a line matched by
        several signatures counts once), in the order files finished."""
        return {self.names[idx]: n for idx, n in self._lines}

    def files_read(self) -> int:
        """Inputs read (binary ones skipped after decompression not counted)."""
        return len(self.names) - self._streams_skipped

    def counts_table(self, sig_ids: list[str]) -> pa.Table:
        files, sigs, lines, kept = [], [], [], []
        for idx, nz, counts, k in self._counts:
            for j, s in enumerate(nz.tolist()):
                files.append(self.names[idx])
                sigs.append(sig_ids[s])
                lines.append(int(counts[j]))
                kept.append(int(k[j]))
        return pa.table(
            {
                "file": pa.array(files, pa.string()),
                "signature": pa.array(sigs, pa.string()),
                "lines": pa.array(lines, pa.uint64()),
                "kept": pa.array(kept, pa.uint64()),
            },
            schema=COUNTS_SCHEMA,
        )


# Databases this process already rebuilt, by content: Dask may hand a worker
# the same scattered scanner more than once (a replica fetched from a peer
# while its own copy lands), and each copy must not cost a deserialize.
_REBUILT: dict[bytes, _native.Database] = {}
_REBUILT_LOCK = threading.Lock()
_REBUILT_MAX = 4


def _rebuilt_database(blob: bytes, n_sigs: int) -> _native.Database:
    import hashlib

    key = hashlib.blake2b(blob, digest_size=16).digest() + n_sigs.to_bytes(4, "little")
    with _REBUILT_LOCK:
        db = _REBUILT.get(key)
        if db is None:
            db = _native.Database.deserialize(blob, n_sigs)
            while len(_REBUILT) >= _REBUILT_MAX:
                _REBUILT.pop(next(iter(_REBUILT)))
            _REBUILT[key] = db
        return db


def _rebuild_scanner(blob: bytes, state: dict[str, Any]) -> Scanner:
    s = Scanner.__new__(Scanner)
    s.signature_set = None
    s._patterns = state["patterns"]
    s.signature_ids = list(s._patterns)
    s.caseless = state["caseless"]
    s.options = _native.Options(
        max_rows_per_sig=state["max_rows"],
        max_text=state["max_text"],
        sig_caps=s._caps(state["max_rows"], state.get("row_caps")),
    )
    s._cache_dir = None
    s._db = _rebuilt_database(blob, len(s.signature_ids))
    s._sig_dictionary = pa.array(s.signature_ids, pa.string())
    s._local = threading.local()
    s.stream_chunk = STREAM_CHUNK
    s._job_rows = state.get("job_rows")
    return s


def _load_kb_patterns(signatures: Any) -> tuple[dict[str, list[str]], Callable[[], Any]]:
    """(patterns, a loader of their SignatureSet) for a path, paths or None (the default set)."""
    from ..kb import signatures as kb

    # The Scanner compiles the patterns itself (and names the file of a
    # refused pattern), so the loader does not compile them a second time.
    if isinstance(signatures, (str, bytes, os.PathLike)):
        signatures = [signatures]
    return kb.load_patterns(None if signatures is None else list(signatures))


def pattern_failure(exc: BaseException, sigs: Mapping[str, Signature]) -> tuple[str, str] | None:
    """Turn the scanner's PatternError into (id, message) naming file and pattern."""
    sid = getattr(exc, "signature", None)
    index = getattr(exc, "index", None)
    if not isinstance(sid, str) or sid not in sigs or not isinstance(index, int):
        return None
    sig = sigs[sid]
    from ..kb.signatures import source_pattern

    # the scanner compiles each entry pattern as one or more expressions
    index = source_pattern(sig.patterns, index)
    expr = sig.patterns[index] if index >= 0 else "?"
    hs_message = getattr(exc, "hs_message", None) or str(exc)
    return sid, (
        f"{sig.source}: signature '{sid}': field 'patterns[{index}]': "
        f"Hyperscan refuses {shown_pattern(expr)}: {hs_message}"
    )


_DEFAULT: Scanner | None = None
_DEFAULT_LOCK = threading.Lock()


def default_scanner() -> Scanner:
    """The Scanner over the built-in knowledge base, compiled once per process."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = Scanner()
        return _DEFAULT
