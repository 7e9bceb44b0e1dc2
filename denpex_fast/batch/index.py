"""The index: a partitioned Parquet dataset of many jobs, kept up to date.

Layout (hive partitioning by ``job``; one directory per job in each dataset)::

    INDEX/matches/job=<job>/part-0.parquet      attributed match table
    INDEX/rank_fates/job=<job>/part-0.parquet   one row per rank
    INDEX/diagnosis/job=<job>/part-0.parquet    one row per job
    INDEX/manifest/job=<job>/part-0.parquet     one row per file: size, mtime, hash, status

Re-running only scans jobs with new or changed files: a file is unchanged
when its size and mtime equal the manifest's (or, when they differ, its
content hash does; ``checksum=True`` always compares hashes).  A changed job
is re-scanned and re-diagnosed and all its partitions are replaced.

Commits are per job and crash-safe: the partitions are written to
``INDEX/.tmp/``, a marker ``INDEX/.pending/<job>`` is created, each partition
directory is swapped in with a rename (the old one moved to ``INDEX/.trash/``),
and the marker is removed last.  A job whose marker survives a crash is
indexed again by the next run; readers never see a half-written file, and
they see only jobs whose commit completed (no marker, a diagnosis
partition), so a job cut between its partitions stays hidden until the next
run commits it whole.  One writer at a time per index: a run holds
``INDEX/.lock`` (``fcntl`` locally, a lease file on other filesystems) and a
second one waits up to ``lock_timeout`` seconds, then stops with
:class:`IndexLockedError` naming the owner; it never touches the first
one's staged files.  Worker processes (``processes=``) die with their parent.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any
from urllib.parse import unquote

import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from fsspec.implementations.local import LocalFileSystem
from fsspec.implementations.memory import MemoryFileSystem

from ..errors import DenpexError
from ..io.jobs import HashingReader, Job, JobFile, StreamError, discover_jobs, file_digest
from ..io.sources import display_name

DATASETS = ("matches", "rank_fates", "diagnosis", "manifest")  # commit order
PARTITIONING = ds.partitioning(pa.schema([("job", pa.string())]), flavor="hive")
TS = pa.timestamp("us", tz="UTC")

MANIFEST_SCHEMA = pa.schema([
    ("path", pa.string()), ("size", pa.int64()), ("mtime", TS), ("hash", pa.string()),
    ("status", pa.string()), ("error", pa.string()),
], metadata={b"denpex.schema": b"denpex.manifest/1"})

DIAGNOSIS_SCHEMA = pa.schema([
    ("initiating_signature", pa.string()), ("initiating_rank", pa.int32()),
    ("initiating_host", pa.string()), ("initiating_file", pa.string()),
    ("initiating_line", pa.uint64()), ("initiating_ts", TS), ("confidence", pa.float64()),
    ("fix_id", pa.string()), ("verdict", pa.string()), ("n_matches", pa.int64()),
    ("n_causes", pa.int64()), ("n_symptoms", pa.int64()), ("n_ranks", pa.int64()),
    # added by the index
    ("scanned_at", TS), ("last_modified", TS), ("n_files", pa.int64()),
    ("n_file_errors", pa.int64()), ("bytes_scanned", pa.int64()), ("seconds", pa.float64()),
], metadata={b"denpex.schema": b"denpex.diagnosis-rows/1"})


# -- the diagnosis API: every call to it is here ------------------------------

def diagnose_matches(table: pa.Table, signatures: Any,
                     locations: dict[str, str] | None = None) -> tuple[pa.Table, dict[str, Any], pa.Table]:
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
                kb = _SIGNATURE_CACHE[key] = load_signatures(paths, validate_patterns=False)
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


# -- storage ------------------------------------------------------------------

#: seconds after which a lease file on a non-local index is taken over
LEASE_STALE = 6 * 3600.0


class IndexLockedError(DenpexError, RuntimeError):
    """Another ``denpex index`` is writing this index."""

    def __init__(self, url: str, owner: str) -> None:
        super().__init__(f"{url}: another denpex index is writing this index ({owner}); "
                         "wait for it to finish, or give a lock timeout to wait")
        self.url, self.owner = url, owner


def _owner_text(raw: bytes) -> str:
    try:
        o = json.loads(raw or b"{}")
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(o["since"])))
        return f"pid {o['pid']} on {o['host']} since {since}"
    except (ValueError, KeyError, TypeError):
        return "owner unknown"


def partition_name(job: str) -> str:
    """The partition directory of ``job`` (``job=<percent-encoded name>``)."""
    return PARTITIONING.format(pc.field("job") == job)[0]


class IndexStore:
    """Paths and atomic partition swaps of an index on any fsspec filesystem."""

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        self.url = url
        self.fs, root = fsspec.core.url_to_fs(url, **(storage_options or {}))
        self.root = root.rstrip("/") or root
        self.local = isinstance(self.fs, LocalFileSystem)

    def path(self, *parts: str) -> str:
        """A path inside the index."""
        return "/".join([self.root, *parts])

    def arrow_fs(self) -> Any:
        """The filesystem to give pyarrow (None for local paths)."""
        return None if self.local else self.fs

    def _rename(self, src: str, dst: str) -> None:
        if self.local:
            os.replace(src, dst)  # atomic on one filesystem
        else:
            self.fs.mv(src, dst, recursive=True)

    def _exists(self, path: str) -> bool:
        return os.path.lexists(path) if self.local else self.fs.exists(path)

    def _rm(self, path: str) -> None:
        try:
            self.fs.rm(path, recursive=True)
        except FileNotFoundError:
            pass

    def _marker(self, job: str) -> str:
        return self.path(".pending", partition_name(job))

    # -- one writer -------------------------------------------------------
    @contextlib.contextmanager
    def writer_lock(self, timeout: float = 0.0) -> Iterator[None]:
        """Hold the index's writer lock for the block.

        Local index: ``fcntl.flock`` on ``.lock`` (released by the kernel if
        the writer dies).  Other filesystems: a lease file naming its owner
        (host, pid, start); a lease older than :data:`LEASE_STALE` seconds is
        taken over.  Another writer makes this wait up to ``timeout`` seconds,
        then raise :class:`IndexLockedError` naming the owner.
        """
        deadline = time.monotonic() + max(timeout, 0.0)
        owner = {"host": socket.gethostname(), "pid": os.getpid(), "since": time.time()}
        if self.local:
            import fcntl

            fd = os.open(self.path(".lock"), os.O_RDWR | os.O_CREAT, 0o644)
            try:
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() >= deadline:
                            raise IndexLockedError(
                                self.url, _owner_text(os.pread(fd, 4096, 0))) from None
                        time.sleep(0.2)
                os.ftruncate(fd, 0)
                os.pwrite(fd, json.dumps(owner).encode(), 0)
                yield
            finally:
                os.close(fd)  # closing releases the lock
            return
        lease = self.path(".lock")
        while True:
            try:
                held = json.loads(self.fs.cat_file(lease))
            except (FileNotFoundError, ValueError):
                held = None
            if held is None or time.time() - float(held.get("since", 0)) > LEASE_STALE:
                break
            if time.monotonic() >= deadline:
                raise IndexLockedError(self.url, _owner_text(json.dumps(held).encode()))
            time.sleep(1.0)
        self.fs.pipe_file(lease, json.dumps(owner).encode())
        try:
            yield
        finally:
            self._rm(lease)

    # -- state ------------------------------------------------------------
    def recover(self) -> None:
        """Delete what an interrupted run left in ``.tmp`` and ``.trash``."""
        for d in (".tmp", ".trash"):
            self._rm(self.path(d))

    def committed_jobs(self) -> set[str]:
        """Jobs with a complete commit (a diagnosis partition and no pending marker)."""
        def names(sub: str) -> set[str]:
            try:
                entries = self.fs.ls(self.path(sub), detail=False)
            except FileNotFoundError:
                return set()
            out = set()
            for e in entries:
                base = e.rstrip("/").rsplit("/", 1)[-1]
                if base.startswith("job="):
                    out.add(unquote(base[4:]))
            return out

        return names("diagnosis") - names(".pending")

    def read(self, name: str, schema: pa.Schema | None = None, *,
             committed_only: bool = True) -> pa.Table:
        """One dataset (``matches``...) as a table with its ``job`` column.

        ``committed_only``: only jobs whose commit completed (a crash between
        a job's partitions leaves its pending marker; its rows stay hidden
        until the next run commits it whole).
        """
        table = self._read_all(name, schema)
        if committed_only and table.num_rows:
            keep = pa.array(sorted(self.committed_jobs()), pa.string())
            table = table.filter(pc.is_in(table.column("job"), value_set=keep))
        return table

    def committed_files(self, name: str) -> list[str]:
        """The Parquet files of ``name`` that belong to completely committed jobs."""
        try:
            files = self.fs.glob(self.path(name, "job=*", "*.parquet"))
        except FileNotFoundError:
            return []
        done = self.committed_jobs()
        return sorted(f for f in files
                      if unquote(f.rstrip("/").rsplit("/", 2)[-2][4:]) in done)

    def _read_all(self, name: str, schema: pa.Schema | None = None) -> pa.Table:
        path = self.path(name)
        try:
            if not self._exists(path):
                raise FileNotFoundError(path)
            dset = ds.dataset(path, format="parquet", partitioning="hive",
                              filesystem=self.arrow_fs())
            files = dset.files
        except (FileNotFoundError, pa.ArrowInvalid):
            files = []
        if not files:
            base = schema if schema is not None else pa.schema([])
            return base.append(pa.field("job", pa.string())).empty_table()
        schemas = [ds.dataset(f, format="parquet", filesystem=self.arrow_fs()).schema
                   for f in files[:1]]
        if schema is not None:
            schemas.append(schema)
        unified = pa.unify_schemas(schemas + [pa.schema([("job", pa.string())])])
        table = ds.dataset(path, format="parquet", partitioning="hive", schema=unified,
                           filesystem=self.arrow_fs()).to_table()
        return table.unify_dictionaries()  # one dictionary per column: group_by/compute work

    # -- commit -----------------------------------------------------------
    def commit(self, job: str, tables: dict[str, pa.Table | None]) -> None:
        """Replace ``job``'s partitions by ``tables`` atomically per partition.

        ``None`` leaves a dataset untouched; an empty table removes the job's
        partition.  A crash at any point leaves the pending marker, so the
        next run indexes the job again.
        """
        tmp = self.path(".tmp", uuid.uuid4().hex)
        part = partition_name(job)
        staged: dict[str, str | None] = {}
        for name in DATASETS:
            table = tables.get(name)
            if table is None:
                continue
            if table.num_rows == 0:
                staged[name] = None
                continue
            table = table.append_column("job", pa.array([job] * table.num_rows, pa.string()))
            ds.write_dataset(table, f"{tmp}/{name}", format="parquet", partitioning=PARTITIONING,
                             filesystem=self.arrow_fs(), basename_template="part-{i}.parquet",
                             existing_data_behavior="overwrite_or_ignore",
                             create_dir=True)
            staged[name] = f"{tmp}/{name}/{part}"
        marker = self._marker(job)
        self.fs.makedirs(self.path(".pending"), exist_ok=True)
        self.fs.makedirs(self.path(".trash"), exist_ok=True)
        self.fs.pipe_file(marker, b"")
        for name in DATASETS:
            if name not in staged:
                continue
            dest = self.path(name, part)
            if self._exists(dest):
                self._rename(dest, self.path(".trash", uuid.uuid4().hex))
            src = staged[name]
            if src is not None:
                self.fs.makedirs(self.path(name), exist_ok=True)
                self._rename(src, dest)
        self.fs.rm(marker)
        self._rm(tmp)

    def drop(self, job: str) -> None:
        """Remove every partition of ``job``."""
        self.commit(job, {name: pa.table({}) for name in DATASETS})

    def clean(self) -> None:
        """Remove ``.tmp``/``.trash`` leftovers of this run."""
        self.recover()


# -- one job ------------------------------------------------------------------

def _plan(job: Job, previous: list[dict[str, Any]] | None, opts: IndexOptions,
          stat_only: bool = False) -> tuple[str, dict[str, str]]:
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
    return pa.table({
        "path": [_utf8(f.rel) for f, *_ in rows], "size": [f.size for f, *_ in rows],
        "mtime": [f.mtime for f, *_ in rows], "hash": [h for _, h, _, _ in rows],
        "status": [s for _, _, s, _ in rows],
        "error": [None if e is None else _utf8(e) for *_, e in rows],
    }, schema=MANIFEST_SCHEMA)


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
        chunks.append(pa.DictionaryArray.from_arrays(
            chunk.indices, pa.array([labels.get(x, x) for x in d], pa.string())))
    col = pa.chunked_array(chunks, table.schema.field(idx).type)
    return table.set_column(idx, table.schema.field(idx), col)


def scan_job(job: Job, ctx: JobContext,
             on_file: Callable[[int], None] | None = None) -> tuple[pa.Table, pa.Table, int]:
    """Scan every file of ``job``: (match table, manifest, bytes scanned).

    Local plain/compressed files go through :meth:`Scanner.run` (mmap); tar
    archives and remote files are streamed through :meth:`Scanner.scan_stream`.
    A file that fails is recorded in the manifest with its error; the rest
    of the job is still scanned.  A binary file is not scanned (unless
    ``options.binary``): its manifest row has status ``skipped``; binary
    members of an archive are named in its row's ``error``.
    ``on_file(size)`` is called per file done.
    """
    from ..engine.scanner import MATCH_SCHEMA

    scanner, o = ctx.scanner, ctx.options
    tables: list[pa.Table] = []
    status: dict[str, tuple[str | None, str, str | None]] = {}  # rel -> (hash, status, error)
    scanned = 0
    direct = [f for f in job.files if job.local and not f.is_tar]
    if direct:
        # the table names files by their display form (escaped control/undecodable bytes)
        labels = {display_name(os.fsencode(f.path)): f.rel for f in direct}
        res = scanner.run([f.path for f in direct], threads=o.threads, errors="collect",
                          max_decompressed=o.max_decompressed, max_ratio=o.max_ratio,
                          binary=o.binary)
        tables.append(_relabel(res.table, labels))
        scanned += int(res.stats.get("bytes", 0))
        errs = {labels.get(e.path, e.path): f"{e.kind}: {e.message}" for e in res.errors}
        skips = {labels.get(e.path, e.path): f"{e.kind}: {e.message}" for e in res.skipped}
        for f in direct:
            try:
                digest: str | None = file_digest(job.fs, f.path)
            except OSError:
                digest = None
            err = errs.get(f.rel)
            skip = skips.get(f.rel)
            status[f.rel] = (digest, "error" if err else "skipped" if skip else "ok",
                             err or skip)
            if on_file:
                on_file(f.size)
    for f in job.files:
        if f.rel in status:
            continue
        errors: list[str] = []
        skipped: list[str] = []
        hr: HashingReader | None = None
        try:
            with job.fs.open(f.path, "rb") as raw:
                hr = HashingReader(raw)
                if f.is_tar:
                    try:
                        for label, member in _members(hr, f.rel):
                            r = scanner.scan_stream(member, label,
                                                    max_decompressed=o.max_decompressed,
                                                    max_ratio=o.max_ratio, binary=o.binary)
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
                    r = scanner.scan_stream(_Unclosed(hr), f.rel,
                                            max_decompressed=o.max_decompressed,
                                            max_ratio=o.max_ratio, binary=o.binary)
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
        status[f.rel] = (hr.digest() if hr else None, state, note)
        if on_file:
            on_file(f.size)
    table = pa.concat_tables(tables) if tables else MATCH_SCHEMA.empty_table()
    table = table.cast(MATCH_SCHEMA) if table.schema != MATCH_SCHEMA else table
    manifest = _manifest([(f, *status[f.rel]) for f in job.files])
    return table, manifest, scanned


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


def _diagnosis_row(summary: dict[str, Any], job: Job, manifest: pa.Table, scanned: int,
                   seconds: float) -> pa.Table:
    row = dict(summary)
    n_err = int(pc.sum(pc.equal(manifest.column("status"), "error")).as_py() or 0)
    mtimes = [f.mtime for f in job.files if f.mtime is not None]
    row.update(scanned_at=datetime.now(timezone.utc), last_modified=max(mtimes, default=None),
               n_files=len(job.files), n_file_errors=n_err, bytes_scanned=scanned,
               seconds=seconds)
    fields = list(DIAGNOSIS_SCHEMA)
    known = set(DIAGNOSIS_SCHEMA.names)
    for k, v in row.items():  # keys a newer diagnosis adds are kept, typed by value
        if k not in known:
            fields.append(pa.field(k, pa.scalar(v).type if v is not None else pa.string()))
    schema = pa.schema(fields, metadata=DIAGNOSIS_SCHEMA.metadata)
    return pa.Table.from_pylist([{k: row.get(k) for k in schema.names}], schema=schema)


def index_job(job: Job, ctx: JobContext, previous: list[dict[str, Any]] | None,
              on_file: Callable[[int], None] | None = None) -> JobReport:
    """Index one job if it is new or changed and commit it; never raises.

    ``previous``: the job's manifest rows from the last complete commit
    (``None``: not indexed yet).  This is the unit of work of local threads,
    worker processes and Dask workers alike.
    """
    t0 = time.perf_counter()
    try:
        plan, touched = _plan(job, previous, ctx.options)
        if plan == "unchanged":
            return JobReport(job.name, "unchanged", files=len(job.files), size=job.size)
        store = ctx.store()
        if plan == "touched":  # same bytes, new mtimes: refresh the manifest only
            assert previous is not None
            prev = {r["path"]: r for r in previous}
            manifest = _manifest([(f, touched.get(f.rel, prev[f.rel]["hash"]),
                                   prev[f.rel]["status"], prev[f.rel]["error"])
                                  for f in job.files])
            store.commit(job.name, {"manifest": manifest})
            return JobReport(job.name, "touched", files=len(job.files), size=job.size,
                             seconds=time.perf_counter() - t0)
        table, manifest, scanned = scan_job(job, ctx, on_file)
        # where attribution reads lines back: the display form of the real path
        # (what it unescapes), so a name that is not UTF-8 is read back too
        locations = {f.rel: display_name(os.fsencode(f.path))
                     for f in job.files if job.local and not f.is_tar}
        attributed, summary, fates = diagnose_matches(table, ctx.signatures(), locations)
        diag = _diagnosis_row(summary, job, manifest, scanned, time.perf_counter() - t0)
        store.commit(job.name, {"matches": attributed, "rank_fates": fates,
                                "diagnosis": diag, "manifest": manifest})
        n_err = int(diag.column("n_file_errors")[0].as_py())
        return JobReport(job.name, "indexed", files=len(job.files), size=job.size, bytes=scanned,
                         file_errors=n_err, seconds=time.perf_counter() - t0)
    except Exception as exc:  # one broken job must not stop the others
        return JobReport(job.name, "failed", files=len(job.files), size=job.size,
                         seconds=time.perf_counter() - t0, error=f"{type(exc).__name__}: {exc}")


# -- many jobs ----------------------------------------------------------------

@dataclass
class IndexSummary:
    """The outcome of :func:`build_index`: one report per job, plus pruned jobs."""

    reports: list[JobReport] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, status: str) -> int:
        """Jobs with this status."""
        return sum(r.status == status for r in self.reports)

    @property
    def ok(self) -> bool:
        """True when no job failed."""
        return not any(r.status == "failed" for r in self.reports)


ProgressHook = Callable[[str, Any], None]  # ("start", (jobs, files, bytes)) / ("file", size) / ("job", report)


def previous_manifests(store: IndexStore) -> dict[str, list[dict[str, Any]]]:
    """Manifest rows of every completely committed job."""
    committed = store.committed_jobs()
    table = store.read("manifest", MANIFEST_SCHEMA)
    out: dict[str, list[dict[str, Any]]] = {j: [] for j in committed}
    for row in table.to_pylist():
        if row["job"] in out:
            out[row["job"]].append(row)
    return out


def build_index(root: str, index: str, *, scanner: Any = None,
                signatures: Iterable[str] | None = None, job_glob: str | None = None,
                job_regex: str | None = None, threads: int | None = None,
                processes: int | None = None, dask: Any = None, prune: bool = False,
                options: IndexOptions | None = None,
                storage_options: dict[str, Any] | None = None,
                progress: ProgressHook | None = None,
                lock_timeout: float = 0.0) -> IndexSummary:
    """Index every job under ``root`` into the dataset at ``index``.

    ``scanner``: a :class:`~denpex_fast.Scanner` (default: the built-in
    knowledge base, or ``signatures`` paths added to it); ``threads``: jobs
    indexed at once (default: all cores); ``processes``: index that many
    jobs at once in worker processes instead of threads (diagnosis is
    Python and holds the GIL, so processes scale better on many cores;
    each worker commits its own jobs; as with any ``multiprocessing``, a
    script calling this needs an ``if __name__ == "__main__":`` guard);
    ``dask``: a ``distributed.Client``, a scheduler address or ``"local"``
    to run the jobs on a Dask cluster instead; ``prune``: drop jobs no longer under
    ``root``; ``options``: :class:`IndexOptions`.  Only new or changed jobs
    are scanned; see the module docstring for the commit protocol.

    One writer at a time: the run holds the index's lock (``fcntl`` on a
    local index, a lease file elsewhere); ``lock_timeout``: seconds to wait
    for another writer to finish before :class:`IndexLockedError` (0: fail
    at once).  Readers never wait and see only completely committed jobs.
    """
    from ..engine.scanner import Scanner

    if processes is not None and (threads is not None or dask is not None):
        raise ValueError("give threads, processes or dask, not two of them")
    if processes is not None and processes < 1:
        raise ValueError("processes must be >= 1")
    t0 = time.perf_counter()
    opts = options or IndexOptions()
    sig_paths = tuple(str(p) for p in signatures) if signatures else None
    if scanner is None:
        scanner = Scanner(list(sig_paths) if sig_paths else None)
    elif scanner.signature_set is None:
        sig_paths = ()
    ctx = JobContext(scanner, index, sig_paths, opts, dict(storage_options or {}),
                     scanner.signature_set)
    store = ctx.store()
    store.fs.makedirs(store.root, exist_ok=True)
    with store.writer_lock(lock_timeout):
        return _build(root, store, ctx, opts, job_glob, job_regex, storage_options, progress,
                      dask, processes, threads, prune, index, t0)


def _build(root: str, store: IndexStore, ctx: JobContext, opts: IndexOptions,
           job_glob: str | None, job_regex: str | None,
           storage_options: dict[str, Any] | None, progress: ProgressHook | None, dask: Any,
           processes: int | None, threads: int | None, prune: bool, index: str,
           t0: float) -> IndexSummary:
    """The body of :func:`build_index`, run while holding the index's writer lock."""
    from ..engine.scanner import default_threads

    store.recover()
    jobs = discover_jobs(root, job_glob=job_glob, job_regex=job_regex, exclude=index,
                         storage_options=storage_options)
    previous = previous_manifests(store)
    summary = IndexSummary()
    if progress:
        progress("start", (len(jobs), sum(len(j.files) for j in jobs), sum(j.size for j in jobs)))
    if dask is not None:
        from ..batch.dask import index_jobs_on_dask

        results: Iterable[JobReport] = index_jobs_on_dask(dask, jobs, ctx, previous)
    elif processes is not None:
        if _in_memory(store.fs) or any(_in_memory(j.fs) for j in jobs):
            raise ValueError("a memory:// root or index is private to this process; "
                             "index it with threads")
        results = _index_processes(jobs, ctx, previous, processes)
    else:
        results = _index_threads(jobs, ctx, previous, threads or default_threads(), progress)
    for rep in results:
        summary.reports.append(rep)
        if progress:
            progress("job", rep)
    if prune:
        live = {j.name for j in jobs}
        for name in sorted(set(previous) | store.committed_jobs()):
            if name not in live:
                store.drop(name)
                summary.pruned.append(name)
    store.clean()
    summary.reports.sort(key=lambda r: r.job)
    summary.seconds = time.perf_counter() - t0
    return summary


def _index_threads(jobs: list[Job], ctx: JobContext, previous: dict[str, Any], n: int,
                   progress: ProgressHook | None) -> Iterator[JobReport]:
    on_file = (lambda size: progress("file", size)) if progress else None
    # Many jobs: one thread each, scanning with one thread; few jobs: share the cores.
    ctx = replace(ctx, options=replace(ctx.options, threads=_per_job_threads(n, len(jobs))))
    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="denpex-index") as pool:
        futures = [pool.submit(index_job, j, ctx, previous.get(j.name), on_file) for j in jobs]
        try:
            for fut in as_completed(futures):
                yield fut.result()
        except BaseException:
            for f in futures:
                f.cancel()
            raise


def _per_job_threads(n: int, n_jobs: int) -> int:
    """Scanning threads per job when ``n`` jobs run at once."""
    return max(1, n // max(1, min(n, n_jobs)))


def _in_memory(fs: Any) -> bool:
    return isinstance(fs, MemoryFileSystem)


# -- worker processes ---------------------------------------------------------

_WORKER_CTX: JobContext | None = None


def _die_with_parent(parent: int) -> None:
    """Make this worker die when the process that started it does (``kill -9``
    of ``denpex index`` must not leave ~150 MB workers behind)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    if os.getppid() != parent:  # the parent died before the line above ran
        os._exit(1)


def _init_worker(ctx: JobContext, parent: int | None = None) -> None:
    """Runs once in each worker process: keep the (unpickled) job context."""
    global _WORKER_CTX
    if parent is not None:
        _die_with_parent(parent)
    # Ctrl-C goes to the whole process group; the parent decides what stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _WORKER_CTX = ctx
    ctx.signatures()  # loaded now, not inside the first job's timing


def _index_job_in_worker(job: Job, previous: list[dict[str, Any]] | None) -> JobReport:
    assert _WORKER_CTX is not None
    return index_job(job, _WORKER_CTX, previous)


def _index_processes(jobs: list[Job], ctx: JobContext, previous: dict[str, Any],
                     n: int) -> Iterator[JobReport]:
    """Index the jobs in ``n`` worker processes; each commits its own jobs.

    The context (scanner and knowledge base) is pickled once per worker,
    not per job: workers deserialize the compiled database, never compile.
    Workers are started with "spawn": the parent has threads and native
    scratch space that a forked child must not inherit.  A worker that dies
    fails its unfinished jobs (their pending markers make the next run
    index them again) instead of the whole run.
    """
    todo = []
    for j in jobs:  # unchanged by size and mtime: no worker needs to start for these
        if _plan(j, previous.get(j.name), ctx.options, stat_only=True)[0] == "unchanged":
            yield JobReport(j.name, "unchanged", files=len(j.files), size=j.size)
        else:
            todo.append(j)
    if not todo:
        return
    jobs = todo
    ctx = replace(ctx, options=replace(ctx.options, threads=_per_job_threads(n, len(jobs))))
    pool = ProcessPoolExecutor(max_workers=min(n, len(jobs)),
                               mp_context=multiprocessing.get_context("spawn"),
                               initializer=_init_worker, initargs=(ctx, os.getpid()))
    with pool:
        futures: dict[Future[JobReport], Job] = {
            pool.submit(_index_job_in_worker, j, previous.get(j.name)): j for j in jobs}
        try:
            for fut in as_completed(futures):
                try:
                    yield fut.result()
                except BrokenProcessPool as exc:
                    job = futures[fut]
                    yield JobReport(job.name, "failed", files=len(job.files), size=job.size,
                                    error=f"worker process died: {exc}")
        except BaseException:
            for f in futures:
                f.cancel()
            raise
