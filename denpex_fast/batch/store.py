"""The index's storage: a partitioned Parquet dataset per kind, crash-safe
per-job commits and the one-writer lock.

Layout (hive partitioning by ``job``; one directory per job in each dataset)::

    INDEX/matches/job=<job>/part-0.parquet      attributed match table
    INDEX/rank_fates/job=<job>/part-0.parquet   one row per rank
    INDEX/diagnosis/job=<job>/part-0.parquet    one row per job
    INDEX/manifest/job=<job>/part-0.parquet     one row per file: size, mtime, hash, status
    INDEX/_manifest_snapshot.parquet            every committed manifest row, for re-indexing
    INDEX/_seal.json                            stats of archive and index after a clean run (seal.py)

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
one's staged files.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import socket
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import fsspec
import pyarrow as pa
from fsspec.implementations.local import LocalFileSystem

from ..errors import DenpexError

DATASETS = ("matches", "rank_fates", "diagnosis", "manifest")  # commit order


def __getattr__(name: str) -> Any:
    # pyarrow.dataset imports pandas (~0.2 s of start-up): loaded on first use,
    # so a re-index that finds every job unchanged never pays for it
    if name == "PARTITIONING":
        return partitioning()
    raise AttributeError(name)


@functools.lru_cache(maxsize=1)
def partitioning() -> Any:
    """The index's hive partitioning by ``job``."""
    import pyarrow.dataset as ds

    return ds.partitioning(pa.schema([("job", pa.string())]), flavor="hive")


# -- storage ------------------------------------------------------------------

#: seconds after which a lease file on a non-local index is taken over
LEASE_STALE = 6 * 3600.0


class IndexLockedError(DenpexError, RuntimeError):
    """Another ``denpex index`` is writing this index."""

    def __init__(self, url: str, owner: str) -> None:
        super().__init__(
            f"{url}: another denpex index is writing this index ({owner}); "
            "wait for it to finish, or give a lock timeout to wait"
        )
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
    import pyarrow.compute as pc

    return str(partitioning().format(pc.field("job") == job)[0])


#: the manifest rows of every committed job in one file (see ``write_snapshot``)
SNAPSHOT = "_manifest_snapshot.parquet"


def _stamp(info: dict[str, Any]) -> str:
    """A file's modification time (or version tag) from an fsspec ``info``."""
    for k in ("mtime", "LastModified", "last_modified", "updated", "ETag", "etag", "created"):
        if info.get(k) is not None:
            return str(info[k])
    return ""


def job_of_partition_file(path: str) -> str:
    """The job of a file inside a partition directory (``.../job=<name>/part.parquet``)."""
    return unquote(path.rstrip("/").rsplit("/", 2)[-2][4:])


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
                                self.url, _owner_text(os.pread(fd, 4096, 0))
                            ) from None
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

    def read(
        self, name: str, schema: pa.Schema | None = None, *, committed_only: bool = True
    ) -> pa.Table:
        """One dataset (``matches``...) as a table with its ``job`` column.

        ``committed_only``: only jobs whose commit completed (a crash between
        a job's partitions leaves its pending marker; its rows stay hidden
        until the next run commits it whole).
        """
        table = self._read_all(name, schema)
        if committed_only and table.num_rows:
            keep = pa.array(sorted(self.committed_jobs()), pa.string())
            import pyarrow.compute as pc

            table = table.filter(pc.is_in(table.column("job"), value_set=keep))
        return table

    def committed_files(self, name: str) -> list[str]:
        """The Parquet files of ``name`` that belong to completely committed jobs."""
        return [f for f, _ in self.committed_file_stats(name)]

    def committed_file_stats(self, name: str) -> list[tuple[str, str]]:
        """``(path, size and modification time)`` of each file :meth:`committed_files`
        lists: a commit replaces a partition's file, so a change of either
        says its content changed."""
        try:
            files = self.fs.glob(self.path(name, "job=*", "*.parquet"), detail=True)
        except FileNotFoundError:
            return []
        done = self.committed_jobs()
        return sorted(
            (f, f"{info.get('size')}:{_stamp(info)}")
            for f, info in files.items()
            if job_of_partition_file(f) in done
        )

    def read_parquet(self, path: str) -> pa.Table:
        """One Parquet file of the index, read whole.

        pyarrow.dataset is not used (it would import pandas), and pyarrow
        is never handed a Python file or bytes: a pool thread that drops the
        last reference to a Python-owned buffer must take the GIL, and at
        interpreter exit Python 3.10 ends such a thread inside C++ frames
        (SIGABRT, "terminate called without an active exception").  Local
        files are read by pyarrow itself; other filesystems are copied into
        an Arrow-owned buffer first.  Decoded on this thread: the files are
        small.
        """
        import pyarrow.parquet as pq

        if self.local:
            return pq.ParquetFile(path).read(use_threads=False)
        with self.fs.open(path, "rb") as fh:
            data = fh.read()
        buf = pa.allocate_buffer(len(data))
        memoryview(buf).cast("B")[:] = data
        return pq.ParquetFile(pa.BufferReader(buf)).read(use_threads=False)

    def read_snapshot(self, key: str) -> pa.Table | None:
        """The table :meth:`write_snapshot` stored under ``key``, or None when
        there is none, it was stored under another key or it cannot be read."""
        try:
            table = self.read_parquet(self.path(SNAPSHOT))
        except Exception:  # noqa: BLE001 - missing, torn or foreign: read the partitions
            return None
        meta = table.schema.metadata or {}
        return table if meta.get(b"denpex.snapshot-key") == key.encode() else None

    def write_snapshot(self, key: str, table: pa.Table) -> None:
        """Keep ``table`` (all committed manifest rows) under ``key`` in one
        file, so a re-index reads one file instead of one per job.  Written
        aside and moved into place: a reader sees the old file or the new."""
        import pyarrow.parquet as pq

        meta = dict(table.schema.metadata or {}) | {b"denpex.snapshot-key": key.encode()}
        tmp = self.path(".tmp", f"{SNAPSHOT}.{uuid.uuid4().hex}")
        try:
            self.fs.makedirs(self.path(".tmp"), exist_ok=True)
            with self.fs.open(tmp, "wb") as fh:
                pq.write_table(table.replace_schema_metadata(meta), fh)
            self.fs.mv(tmp, self.path(SNAPSHOT))
        except OSError:  # a read-only or full index still indexes; the next run retries
            self._rm(tmp)
        with contextlib.suppress(OSError):  # leave no empty .tmp behind
            self.fs.rmdir(self.path(".tmp"))

    def _read_all(self, name: str, schema: pa.Schema | None = None) -> pa.Table:
        import pyarrow.dataset as ds

        path = self.path(name)
        try:
            if not self._exists(path):
                raise FileNotFoundError(path)
            dset = ds.dataset(
                path, format="parquet", partitioning="hive", filesystem=self.arrow_fs()
            )
            files = dset.files
        except (FileNotFoundError, pa.ArrowInvalid):
            files = []
        if not files:
            base = schema if schema is not None else pa.schema([])
            return base.append(pa.field("job", pa.string())).empty_table()
        schemas = [
            ds.dataset(f, format="parquet", filesystem=self.arrow_fs()).schema for f in files[:1]
        ]
        if schema is not None:
            schemas.append(schema)
        unified = pa.unify_schemas(schemas + [pa.schema([("job", pa.string())])])
        table = ds.dataset(
            path, format="parquet", partitioning="hive", schema=unified, filesystem=self.arrow_fs()
        ).to_table()
        return table.unify_dictionaries()  # one dictionary per column: group_by/compute work

    # -- commit -----------------------------------------------------------
    def commit(self, job: str, tables: dict[str, pa.Table | None]) -> None:
        """Replace ``job``'s partitions by ``tables`` atomically per partition.

        ``None`` leaves a dataset untouched; an empty table removes the job's
        partition.  A crash at any point leaves the pending marker, so the
        next run indexes the job again.
        """
        import pyarrow.dataset as ds

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
            ds.write_dataset(
                table,
                f"{tmp}/{name}",
                format="parquet",
                partitioning=partitioning(),
                filesystem=self.arrow_fs(),
                basename_template="part-{i}.parquet",
                existing_data_behavior="overwrite_or_ignore",
                create_dir=True,
            )
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
