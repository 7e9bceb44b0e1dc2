"""Build or update an index over many jobs: find them, plan which are new or
changed, hand them to an executor (threads or worker processes,
:mod:`denpex_fast.batch.executors`; a Dask cluster,
:mod:`denpex_fast.batch.dask`), and keep the summary.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..io.jobs import Job, discover_jobs
from ..schema import MANIFEST_SCHEMA
from . import seal
from .executors import ProgressHook, index_in_processes, index_in_threads
from .index import IndexOptions, JobContext, JobReport, plan_job
from .store import IndexStore, job_of_partition_file

log = logging.getLogger(__name__)

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

    @property
    def job_sizes(self) -> dict[str, list[int]]:
        """job -> [files, bytes on disk], for every job reported."""
        return {r.job: [r.files, r.size] for r in self.reports}


def previous_manifests(
    store: IndexStore,
    *,
    refresh: bool = False,
    known: dict[str, list[dict[str, Any]]] | None = None,
    changed: Iterable[str] = (),
) -> dict[str, list[dict[str, Any]]]:
    """Manifest rows of every completely committed job.

    A re-index of an unchanged archive does nothing else, so the rows come
    from the store's snapshot (one file) when it was taken of exactly the
    committed manifest files there now (by path, size and modification
    time), else from each job's file with the plain Parquet reader
    (``pyarrow.dataset`` alone would cost a third of the re-index to
    import), and the snapshot is taken again.  ``refresh``: take it even
    when nothing was read (after a run committed jobs); ``known``: the rows
    read at the start of that run, reused for every job not in ``changed``
    (so a run that indexed a few jobs of a large archive reads back only
    their manifests).
    """
    import hashlib

    import pyarrow as pa

    stats = store.committed_file_stats("manifest")
    jobs = sorted(store.committed_jobs())
    key = hashlib.sha256(json.dumps([stats, jobs]).encode()).hexdigest()
    out: dict[str, list[dict[str, Any]]] = {j: [] for j in jobs}
    blank = dict.fromkeys(MANIFEST_SCHEMA.names)  # columns older indexes lack
    snap = store.read_snapshot(key)
    if snap is not None:
        for row in snap.to_pylist():
            out.setdefault(row["job"], []).append(blank | row)
        return out
    changed = set(changed)
    for f, _ in stats:
        job = job_of_partition_file(f)
        if known is not None and job not in changed and job in known:
            if not out[job]:
                out[job] = [blank | row | {"job": job} for row in known[job]]
            continue
        rows = store.read_parquet(f).to_pylist()
        out[job].extend(blank | row | {"job": job} for row in rows)
    if stats or refresh:
        schema = pa.schema(list(MANIFEST_SCHEMA) + [pa.field("job", pa.string())])
        rows = [{k: r.get(k) for k in schema.names} for rs in out.values() for r in rs]
        store.write_snapshot(key, pa.Table.from_pylist(rows, schema=schema))
    return out


def build_index(
    root: str,
    index: str,
    *,
    scanner: Any = None,
    signatures: Iterable[str] | None = None,
    job_glob: str | None = None,
    job_regex: str | None = None,
    threads: int | None = None,
    processes: int | str | None = None,
    dask: Any = None,
    prune: bool = False,
    options: IndexOptions | None = None,
    storage_options: dict[str, Any] | None = None,
    progress: ProgressHook | None = None,
    lock_timeout: float = 0.0,
) -> IndexSummary:
    """Index every job under ``root`` into the dataset at ``index``.

    ``scanner``: a :class:`~denpex_fast.Scanner`, or a function that makes
    one, called only when some job is new or changed (default: the built-in
    knowledge base, or ``signatures`` paths added to it); ``threads``: jobs
    indexed at once in threads; ``processes``: index that many
    jobs at once in worker processes instead of threads (diagnosis is
    Python and holds the GIL, so processes scale better on many cores;
    each worker commits its own jobs; as with any ``multiprocessing``, a
    script calling this needs an ``if __name__ == "__main__":`` guard);
    ``processes="auto"`` (what ``denpex index`` does by default): as many
    jobs at once as cores, in this process and one worker process per
    further core, when there are at least two jobs per core and
    :data:`PROCESSES_FROM_BYTES` (32 MiB) of new or changed jobs outside memory://,
    in threads otherwise;
    ``dask``: a ``distributed.Client``, a scheduler address or ``"local"``
    to run the jobs on a Dask cluster instead; ``prune``: drop jobs no longer under
    ``root``; ``options``: :class:`IndexOptions`.  Only new or changed jobs
    are scanned; see the module docstring for the commit protocol.

    One writer at a time: the run holds the index's lock (``fcntl`` on a
    local index, a lease file elsewhere); ``lock_timeout``: seconds to wait
    for another writer to finish before :class:`IndexLockedError` (0: fail
    at once).  Readers never wait and see only completely committed jobs.
    """
    if processes is not None and (threads is not None or dask is not None):
        raise ValueError("give threads, processes or dask, not two of them")
    if processes is not None and not (
        processes == "auto" or (isinstance(processes, int) and processes >= 1)
    ):
        raise ValueError('processes must be >= 1 or "auto"')
    t0 = time.perf_counter()
    opts = options or IndexOptions()
    sig_paths = tuple(str(p) for p in signatures) if signatures else None

    def context() -> JobContext:
        # the scanner (knowledge base and compiled database, ~0.05 s) is
        # made only for an archive with work: a re-index of an unchanged one
        # reads stats and manifests alone
        paths = sig_paths
        sc = scanner() if callable(scanner) and not hasattr(scanner, "run") else scanner
        if sc is None:
            from ..engine.scanner import Scanner

            sc = Scanner(list(paths) if paths else None)
        elif sc.signature_set is None:
            paths = ()
        return JobContext(sc, index, paths, opts, dict(storage_options or {}), sc.signature_set)

    store = IndexStore(index, dict(storage_options or {}))
    store.fs.makedirs(store.root, exist_ok=True)
    sealable = seal.is_local(root) and seal.is_local(index) and dask is None
    with store.writer_lock(lock_timeout):
        seal.remove(index)  # first: a run that stops half-way leaves no seal
        before = seal.walk(root, exclude=index) if sealable else None
        summary = _build(
            root,
            store,
            context,
            opts,
            job_glob,
            job_regex,
            storage_options,
            progress,
            dask,
            processes,
            threads,
            prune,
            index,
            t0,
        )
        if before is not None and summary.ok:
            request = seal.request_key(
                root,
                index,
                job_glob=job_glob,
                job_regex=job_regex,
                signatures=list(sig_paths) if sig_paths else None,
                binary=opts.binary,
            )
            seal.write(root, index, request, before, summary.job_sizes)
        return summary


def _build(
    root: str,
    store: IndexStore,
    context: Callable[[], JobContext],
    opts: IndexOptions,
    job_glob: str | None,
    job_regex: str | None,
    storage_options: dict[str, Any] | None,
    progress: ProgressHook | None,
    dask: Any,
    processes: int | str | None,
    threads: int | None,
    prune: bool,
    index: str,
    t0: float,
) -> IndexSummary:
    """The body of :func:`build_index`, run while holding the index's writer lock."""
    store.recover()
    jobs = discover_jobs(
        root, job_glob=job_glob, job_regex=job_regex, exclude=index, storage_options=storage_options
    )
    previous = previous_manifests(store)
    summary = IndexSummary()
    if progress:
        progress("start", (len(jobs), sum(len(j.files) for j in jobs), sum(j.size for j in jobs)))
    if isinstance(processes, int) and (_in_memory(store.fs) or any(_in_memory(j.fs) for j in jobs)):
        raise ValueError(
            "a memory:// root or index is private to this process; index it with threads"
        )
    todo = [
        j for j in jobs if plan_job(j, previous.get(j.name), opts, stat_only=True)[0] != "unchanged"
    ]
    results: Iterable[JobReport]
    if not todo:  # unchanged by size and mtime: nothing to scan, and no scanner made
        results = [JobReport(j.name, "unchanged", files=len(j.files), size=j.size) for j in jobs]
    else:
        results = _dispatch(
            jobs, todo, context, previous, store, dask, processes, threads, progress
        )
    for rep in results:
        summary.reports.append(rep)
        log.info(
            "job %s: %s (%d file(s), %d with errors, %.2f s)%s",
            rep.job,
            rep.status,
            rep.files,
            rep.file_errors,
            rep.seconds,
            f": {rep.error}" if rep.error else "",
        )
        if progress:
            progress("job", rep)
    if prune:
        live = {j.name for j in jobs}
        for name in sorted(set(previous) | store.committed_jobs()):
            if name not in live:
                store.drop(name)
                summary.pruned.append(name)
    store.clean()
    if todo or summary.pruned:  # the next run reads one snapshot of what is committed now
        previous_manifests(store, refresh=True, known=previous, changed=[j.name for j in todo])
    summary.reports.sort(key=lambda r: r.job)
    summary.seconds = time.perf_counter() - t0
    return summary


def _dispatch(
    jobs: list[Job],
    todo: list[Job],
    context: Callable[[], JobContext],
    previous: dict[str, Any],
    store: IndexStore,
    dask: Any,
    processes: int | str | None,
    threads: int | None,
    progress: ProgressHook | None,
) -> Iterable[JobReport]:
    """Index ``jobs`` (``todo`` of them new or changed) on Dask, in worker
    processes or in threads."""
    from ..engine.scanner import default_threads

    if dask is not None:
        from .dask import index_jobs_on_dask

        return index_jobs_on_dask(dask, jobs, context(), previous)
    if processes == "auto" and _processes_pay(todo, store):
        n = default_threads()
        log.info("indexing %d jobs at once: this process and %d worker process(es)", n, n - 1)
        return index_in_processes(jobs, context(), previous, n - 1, here=True, progress=progress)
    if isinstance(processes, int):
        return index_in_processes(jobs, context(), previous, processes)
    return index_in_threads(jobs, context(), previous, threads or default_threads(), progress)


#: work to index (bytes of new or changed jobs, as stored) from which the
#: default is worker processes (beside this process).  Their start costs about 0.3-0.5 s of CPU each
#: (interpreter, imports, the knowledge base; pandas is kept out); it is paid
#: back once the GIL-bound diagnosis runs in parallel.  On 2 cores, 2 threads
#: against 2 processes: 10 jobs of 1.5 MiB 0.80 s / 1.08 s, 40 jobs of 1.5 MiB
#: 2.37 s / 2.17 s, 60 jobs of 21 MiB (775 MB stored) 5.39 s / 4.98 s
PROCESSES_FROM_BYTES = 32 << 20


def _processes_pay(todo: list[Job], store: Any) -> bool:
    """Whether the default run should use worker processes rather than threads
    for the new or changed jobs ``todo``: several cores, enough jobs to
    share, enough bytes to pay for the start, and a root and index that
    other processes can reach."""
    from ..engine.scanner import default_threads

    n = default_threads()
    if n < 2 or _in_memory(store.fs) or any(_in_memory(j.fs) for j in todo):
        return False
    return len(todo) >= 2 * n and sum(j.size for j in todo) >= PROCESSES_FROM_BYTES


def _in_memory(fs: Any) -> bool:
    from fsspec.implementations.memory import MemoryFileSystem

    return isinstance(fs, MemoryFileSystem)
