"""Index one job: scan it, diagnose it and turn the result into the index's rows.

Re-running only scans jobs with new or changed files: a file is unchanged
when its size and mtime equal the manifest's (or, when they differ, its
content hash does; ``checksum=True`` always compares hashes).  A changed job
is re-scanned and re-diagnosed and all its partitions are replaced
(:mod:`denpex_fast.batch.store`); :mod:`denpex_fast.batch.build` runs this
for many jobs.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import pyarrow as pa

from ..io.jobs import HashingReader, Job, JobFile, StreamError, file_digest
from ..io.sources import display_name
from ..schema import DIAGNOSIS_SCHEMA, MANIFEST_SCHEMA, MATCH_SCHEMA
from .store import IndexStore

# -- the diagnosis API: every call to it is here ------------------------------


def diagnose_matches(
    table: pa.Table, signatures: Any, locations: dict[str, str] | None = None
) -> tuple[pa.Table, dict[str, Any], pa.Table]:
    """Attributed match table, summary row and rank fates of one job's matches.

    ``locations``: job-relative label -> local path, so lines are read back
    from the files themselves whatever the working directory.
    """
    from ..analysis.diagnosis import diagnose_table

    d = diagnose_table(table, signatures=signatures, locations=locations)
    return d.table, d.summary_row(), d.rank_fates


# -- what a worker needs ------------------------------------------------------

_SIGNATURE_CACHE: dict[Any, Any] = {}
_SIGNATURE_LOCK = threading.Lock()


@dataclass
class IndexOptions:
    """How jobs are scanned: ``threads`` per job, decompression limits, checks.

    ``max_decompressed``: bytes read at most from each compressed file or tar
    member (``None``: the default, 64 GiB; ``0``: no bound), a hit recorded as
    a ``limit`` error on that file; ``binary``: scan binary files too (by
    default they are skipped and get a ``skipped`` manifest row).
    """

    threads: int = 1
    checksum: bool = False
    retry_errors: bool = False
    force: bool = False
    max_decompressed: int | None = None
    max_ratio: float | None = None
    binary: bool = False


@dataclass
class JobContext:
    """Everything a (possibly remote) worker needs to index a job.

    Pickles small: the :class:`~denpex_fast.Scanner` travels as its serialized
    database and the signature knowledge base as its entries, so workers use
    exactly the caller's set.  A context built without ``signature_set``
    loads the knowledge base from ``signature_paths`` (``None``: built-in;
    ``()``: none), once per process.
    """

    scanner: Any
    index_url: str
    signature_paths: tuple[str, ...] | None = None
    options: IndexOptions = field(default_factory=IndexOptions)
    storage_options: dict[str, Any] = field(default_factory=dict)
    signature_set: Any = field(default=None, repr=False)

    def signatures(self) -> Any:
        """The knowledge base for diagnosis (loaded once per process)."""
        if self.signature_set is not None:
            return self.signature_set
        if self.signature_paths == ():
            return None
        key = self.signature_paths
        with _SIGNATURE_LOCK:
            kb = _SIGNATURE_CACHE.get(key)
            if kb is None:
                from ..kb.signatures import load_signatures

                paths = list(key) if key is not None else None
                kb = _SIGNATURE_CACHE[key] = load_signatures(paths)
        self.signature_set = kb
        return kb

    def store(self) -> IndexStore:
        """The index this context writes to."""
        return IndexStore(self.index_url, self.storage_options)


@dataclass
class JobReport:
    """What indexing one job did: ``status`` is indexed/unchanged/touched/failed.

    ``size``: bytes on disk of the job's files; ``bytes``: bytes scanned
    (uncompressed); ``file_errors``: files recorded with an error.
    """

    job: str
    status: str
    files: int = 0
    size: int = 0
    bytes: int = 0
    file_errors: int = 0
    seconds: float = 0.0
    error: str | None = None


# -- one job ------------------------------------------------------------------


def plan_job(
    job: Job, previous: list[dict[str, Any]] | None, opts: IndexOptions, stat_only: bool = False
) -> tuple[str, dict[str, str]]:
    """``("full"|"unchanged"|"touched", {rel: hash of touched files})``.

    ``stat_only``: never read a file; a job that would need hashing is "full".
    """
    if previous is None or opts.force:
        return "full", {}
    prev = {r["path"]: r for r in previous}
    if set(prev) != {f.rel for f in job.files}:
        return "full", {}
    touched: dict[str, str] = {}
    for f in job.files:
        p = prev[f.rel]
        if opts.retry_errors and p["status"] == "error":
            return "full", {}
        same = p["size"] == f.size and p["mtime"] == f.mtime
        if same and not opts.checksum:
            continue
        if p["size"] != f.size or stat_only:
            return "full", {}
        try:
            digest = file_digest(job.fs, f.path)
        except OSError:
            return "full", {}
        if digest != p["hash"]:
            return "full", {}
        if not same:
            touched[f.rel] = digest
    return ("touched" if touched else "unchanged"), touched


def _manifest(rows: list[tuple[JobFile, str | None, str, str | None]]) -> pa.Table:
    return pa.table(
        {
            "path": [_utf8(f.rel) for f, *_ in rows],
            "size": [f.size for f, *_ in rows],
            "mtime": [f.mtime for f, *_ in rows],
            "hash": [h for _, h, _, _ in rows],
            "status": [s for _, _, s, _ in rows],
            "error": [None if e is None else _utf8(e) for *_, e in rows],
        },
        schema=MANIFEST_SCHEMA,
    )


def _utf8(text: str) -> str:
    """``text`` with any lone surrogate (an undecodable byte in a message) escaped."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _relabel(table: pa.Table, labels: dict[str, str]) -> pa.Table:
    """Replace the ``file`` dictionary's paths by job-relative labels (no row copy)."""
    idx = table.schema.get_field_index("file")
    chunks = []
    for chunk in table.column(idx).chunks:
        d = chunk.dictionary.to_pylist()
        chunks.append(
            pa.DictionaryArray.from_arrays(
                chunk.indices, pa.array([labels.get(x, x) for x in d], pa.string())
            )
        )
    col = pa.chunked_array(chunks, table.schema.field(idx).type)
    return table.set_column(idx, table.schema.field(idx), col)


def scan_job(
    job: Job, ctx: JobContext, on_file: Callable[[int], None] | None = None
) -> tuple[pa.Table, pa.Table, int]:
    """Scan every file of ``job``: (match table, manifest, bytes scanned).

    Every file is streamed once through :meth:`Scanner.scan_stream` behind a
    hashing reader, so the manifest's content hash comes from the same pass
    as the scan (tar archives member by member).
    A file that fails is recorded in the manifest with its error; the rest
    of the job is still scanned.  A binary file is not scanned (unless
    ``options.binary``): its manifest row has status ``skipped``; binary
    members of an archive are named in its row's ``error``.
    ``on_file(size)`` is called per file done.
    """

    scanner, o = ctx.scanner, ctx.options
    tables: list[pa.Table] = []
    status: dict[str, tuple[str | None, str, str | None]] = {}  # rel -> (hash, status, error)
    scanned = 0
    for f in job.files:
        if f.error is not None:  # an unreadable directory: its row says so
            status[f.rel] = (None, "error", f.error)
    todo = [f for f in job.files if f.rel not in status]
    n = max(1, min(len(todo), o.threads or 1))

    def one(f: JobFile) -> tuple[list[pa.Table], int, tuple[str | None, str, str | None]]:
        return _stream_file(job, f, scanner, o)

    with contextlib.ExitStack() as stack:
        if n == 1:
            results: Iterator[Any] = map(one, todo)
        else:  # files of one job in parallel (the scanner's C calls release the GIL)
            from concurrent.futures import ThreadPoolExecutor

            pool = stack.enter_context(ThreadPoolExecutor(n, thread_name_prefix="denpex-file"))
            results = pool.map(one, todo)
        for f, (file_tables, file_bytes, file_status) in zip(todo, results):
            tables.extend(file_tables)
            if len(tables) >= 256:  # one small table per file costs more than its rows
                tables = [pa.concat_tables(tables).combine_chunks()]
            scanned += file_bytes
            status[f.rel] = file_status
            if on_file:
                on_file(f.size)
    table = pa.concat_tables(tables) if tables else MATCH_SCHEMA.empty_table()
    table = table.cast(MATCH_SCHEMA) if table.schema != MATCH_SCHEMA else table
    manifest = _manifest([(f, *status[f.rel]) for f in job.files])
    return table, manifest, scanned


def _stream_file(
    job: Job, f: JobFile, scanner: Any, o: IndexOptions
) -> tuple[list[pa.Table], int, tuple[str | None, str, str | None]]:
    """One file of a job, read once: its match tables, the bytes scanned and its
    manifest entry (content hash from the same pass, status, error)."""
    tables: list[pa.Table] = []
    scanned = 0
    errors: list[str] = []
    skipped: list[str] = []
    hr: HashingReader | None = None
    try:
        with job.fs.open(f.path, "rb") as raw:
            hr = HashingReader(raw)
            if f.is_tar:
                try:
                    for label, member in _members(hr, f.rel):
                        r = scanner.scan_stream(
                            member,
                            label,
                            max_decompressed=o.max_decompressed,
                            max_ratio=o.max_ratio,
                            binary=o.binary,
                        )
                        if r.table.num_rows:
                            tables.append(r.table)
                        if len(tables) >= 256:
                            # one small table per member costs far more than its rows
                            tables = [pa.concat_tables(tables).combine_chunks()]
                        scanned += int(r.stats["bytes"])
                        errors += [f"{e.path}: {e.kind}: {e.message}" for e in r.errors]
                        skipped += [e.path for e in r.skipped]
                except StreamError as exc:
                    errors.append(f"{f.rel}: {exc}")
            else:
                r = scanner.scan_stream(
                    _Unclosed(hr),
                    f.rel,
                    max_decompressed=o.max_decompressed,
                    max_ratio=o.max_ratio,
                    binary=o.binary,
                )
                tables.append(r.table)
                scanned += int(r.stats["bytes"])
                errors += [f"{e.kind}: {e.message}" for e in r.errors]
                skipped += [f"{e.kind}: {e.message}" for e in r.skipped]
            hr.drain()  # the hash covers the whole file, even after damage
    except OSError as exc:
        errors.append(f"open: {exc.strerror or exc}")
        hr = None
    if errors:
        state, note = "error", "; ".join(errors[:20])
    elif skipped and not f.is_tar:
        state, note = "skipped", skipped[0]
    elif skipped:  # the archive was read; some members were binary
        more = f" (and {len(skipped) - 5} more)" if len(skipped) > 5 else ""
        state, note = "ok", f"binary members skipped: {', '.join(skipped[:5])}{more}"
    else:
        state, note = "ok", None
    return tables, scanned, (hr.digest() if hr else None, state, note)


def _members(hr: HashingReader, label: str) -> Iterator[tuple[str, Any]]:
    from ..io.jobs import iter_tar_members

    yield from iter_tar_members(hr, label)


class _Unclosed:
    """Lets the scanner close a stream without closing the file we still hash."""

    def __init__(self, raw: HashingReader) -> None:
        self._raw = raw
        self.read = raw.read
        self.readinto = raw.readinto

    def close(self) -> None:
        pass


def _diagnosis_row(
    summary: dict[str, Any], job: Job, manifest: pa.Table, scanned: int, seconds: float
) -> pa.Table:
    row = dict(summary)
    import pyarrow.compute as pc

    n_err = int(pc.sum(pc.equal(manifest.column("status"), "error")).as_py() or 0)
    mtimes = [f.mtime for f in job.files if f.mtime is not None]
    row.update(
        scanned_at=datetime.now(timezone.utc),
        last_modified=max(mtimes, default=None),
        n_files=len(job.files),
        n_file_errors=n_err,
        bytes_scanned=scanned,
        seconds=seconds,
    )
    fields = list(DIAGNOSIS_SCHEMA)
    known = set(DIAGNOSIS_SCHEMA.names)
    for k, v in row.items():  # keys a newer diagnosis adds are kept, typed by value
        if k not in known:
            fields.append(pa.field(k, pa.scalar(v).type if v is not None else pa.string()))
    schema = pa.schema(fields, metadata=DIAGNOSIS_SCHEMA.metadata)
    return pa.Table.from_pylist([{k: row.get(k) for k in schema.names}], schema=schema)


def index_job(
    job: Job,
    ctx: JobContext,
    previous: list[dict[str, Any]] | None,
    on_file: Callable[[int], None] | None = None,
) -> JobReport:
    """Index one job if it is new or changed and commit it; never raises.

    ``previous``: the job's manifest rows from the last complete commit
    (``None``: not indexed yet).  This is the unit of work of local threads,
    worker processes and Dask workers alike.
    """
    t0 = time.perf_counter()
    try:
        plan, touched = plan_job(job, previous, ctx.options)
        if plan == "unchanged":
            return JobReport(job.name, "unchanged", files=len(job.files), size=job.size)
        store = ctx.store()
        if plan == "touched":  # same bytes, new mtimes: refresh the manifest only
            assert previous is not None
            prev = {r["path"]: r for r in previous}
            manifest = _manifest(
                [
                    (
                        f,
                        touched.get(f.rel, prev[f.rel]["hash"]),
                        prev[f.rel]["status"],
                        prev[f.rel]["error"],
                    )
                    for f in job.files
                ]
            )
            store.commit(job.name, {"manifest": manifest})
            return JobReport(
                job.name,
                "touched",
                files=len(job.files),
                size=job.size,
                seconds=time.perf_counter() - t0,
            )
        table, manifest, scanned = scan_job(job, ctx, on_file)
        # where attribution reads lines back: the display form of the real path
        # (what it unescapes), so a name that is not UTF-8 is read back too
        locations = {
            f.rel: display_name(os.fsencode(f.path))
            for f in job.files
            if job.local and not f.is_tar
        }
        attributed, summary, fates = diagnose_matches(table, ctx.signatures(), locations)
        diag = _diagnosis_row(summary, job, manifest, scanned, time.perf_counter() - t0)
        store.commit(
            job.name,
            {"matches": attributed, "rank_fates": fates, "diagnosis": diag, "manifest": manifest},
        )
        n_err = int(diag.column("n_file_errors")[0].as_py())
        return JobReport(
            job.name,
            "indexed",
            files=len(job.files),
            size=job.size,
            bytes=scanned,
            file_errors=n_err,
            seconds=time.perf_counter() - t0,
        )
    except Exception as exc:  # one broken job must not stop the others
        return JobReport(
            job.name,
            "failed",
            files=len(job.files),
            size=job.size,
            seconds=time.perf_counter() - t0,
            error=f"{type(exc).__name__}: {exc}",
        )
