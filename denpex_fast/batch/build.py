"""Build or update an index over many jobs: the planner and its executors
(threads, worker processes that die with their parent, or a Dask cluster).
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import signal
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from typing import Any

from ..io.jobs import Job, discover_jobs
from ..pandas_guard import refuse_pandas
from ..schema import MANIFEST_SCHEMA
from . import seal
from .index import IndexOptions, JobContext, JobReport, index_job, plan_job
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


ProgressHook = Callable[
    [str, Any], None
]  # ("start", (jobs, files, bytes)) / ("file", size) / ("job", report)


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
    import pyarrow.parquet as pq

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
        with store.fs.open(f, "rb") as fh:
            rows = pq.ParquetFile(fh).read().to_pylist()
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
        return _index_processes(jobs, context(), previous, n - 1, here=True, progress=progress)
    if isinstance(processes, int):
        return _index_processes(jobs, context(), previous, processes)
    return _index_threads(jobs, context(), previous, threads or default_threads(), progress)


def _index_threads(
    jobs: list[Job],
    ctx: JobContext,
    previous: dict[str, Any],
    n: int,
    progress: ProgressHook | None,
) -> Iterator[JobReport]:
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


def _per_job_threads(n: int, n_jobs: int) -> int:
    """Scanning threads per job when ``n`` jobs run at once."""
    return max(1, n // max(1, min(n, n_jobs)))


def _in_memory(fs: Any) -> bool:
    from fsspec.implementations.memory import MemoryFileSystem

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


def _init_worker(ctx_blob: bytes, parent: int | None = None) -> None:
    """Runs once in each worker process: unpickle the job context and keep it.

    The context comes pickled so that pandas is refused before unpickling it
    imports the scanner: a worker never needs pandas, and pyarrow would
    import it (~0.25 s of each worker's start) to look for DataFrames."""
    global _WORKER_CTX
    if parent is not None:
        _die_with_parent(parent)
    refuse_pandas()
    ctx: JobContext = pickle.loads(ctx_blob)
    # Ctrl-C goes to the whole process group; the parent decides what stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _WORKER_CTX = ctx
    ctx.signatures()  # loaded now, not inside the first job's timing


def _index_job_in_worker(job: Job, previous: list[dict[str, Any]] | None) -> JobReport:
    assert _WORKER_CTX is not None
    return index_job(job, _WORKER_CTX, previous)


def _index_processes(
    jobs: list[Job],
    ctx: JobContext,
    previous: dict[str, Any],
    n: int,
    *,
    here: bool = False,
    progress: ProgressHook | None = None,
) -> Iterator[JobReport]:
    """Index the jobs in ``n`` worker processes; each commits its own jobs.
    With ``here``, this process indexes jobs too, in a thread, as one more
    worker.

    The context (scanner and knowledge base) is pickled once per worker,
    not per job: workers deserialize the compiled database, never compile.
    Workers are started with "spawn": the parent has threads and native
    scratch space that a forked child must not inherit.  A worker that dies
    fails its unfinished jobs (their pending markers make the next run
    index them again) instead of the whole run.

    Why ``here``: a spawned worker costs ~0.5 s of CPU to start (interpreter,
    imports, knowledge base) while this process already has all of it; on 2
    cores, one worker plus this process did the work of two workers with
    half the start-up, and this process starts indexing at once instead of
    waiting for the first worker to come up.
    """
    todo = []
    for j in jobs:  # unchanged by size and mtime: no worker needs to start for these
        if plan_job(j, previous.get(j.name), ctx.options, stat_only=True)[0] == "unchanged":
            yield JobReport(j.name, "unchanged", files=len(j.files), size=j.size)
        else:
            todo.append(j)
    if not todo:
        return
    # imported here: a run with no worker process (a re-index) spares their import
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = replace(ctx, options=replace(ctx.options, threads=_per_job_threads(n + here, len(todo))))
    n = min(n, len(todo) - here)
    if n < 1:
        yield from _index_threads(todo, ctx, previous, 1, progress)
        return
    pool = ProcessPoolExecutor(
        max_workers=n,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_init_worker,
        initargs=(pickle.dumps(ctx), os.getpid()),
    )
    with pool:
        yield from _share_jobs(pool, n, todo, ctx, previous, here, progress)


def _share_jobs(
    pool: Any,
    n: int,
    todo: list[Job],
    ctx: JobContext,
    previous: dict[str, Any],
    here: bool,
    progress: ProgressHook | None,
) -> Iterator[JobReport]:
    """Hand ``todo`` out one job at a time to the pool's ``n`` workers (each
    keeps one job queued behind its current one) and, with ``here``, to a
    thread of this process; yield each report as it arrives."""
    import queue
    import threading
    from collections import deque
    from concurrent.futures.process import BrokenProcessPool

    waiting = deque(todo)
    lock = threading.Lock()
    # (job, its future | None, its report | what it raised); (None, None, None)
    # when this process's thread has stopped taking jobs
    Done = tuple[Job | None, Future[JobReport] | None, JobReport | BaseException | None]
    done: queue.Queue[Done] = queue.Queue()
    stop = threading.Event()

    def take() -> Job | None:
        with lock:
            return waiting.popleft() if waiting and not stop.is_set() else None

    futures: set[Future[JobReport]] = set()

    def submit_next() -> None:
        job = take()
        if job is not None:
            fut = pool.submit(_index_job_in_worker, job, previous.get(job.name))
            futures.add(fut)
            fut.add_done_callback(lambda f, job=job: done.put((job, f, None)))

    def local() -> None:
        on_file = (lambda size: progress("file", size)) if progress else None
        try:
            while (job := take()) is not None:
                try:
                    report = index_job(job, ctx, previous.get(job.name), on_file)
                except BaseException as exc:  # re-raised by the consumer, as a thread pool would
                    done.put((job, None, exc))
                    return
                done.put((job, None, report))
        finally:
            done.put((None, None, None))  # this process has stopped taking jobs

    for _ in range(2 * n):
        submit_next()
    here_running = here
    if here:
        threading.Thread(target=local, name="denpex-index-here", daemon=True).start()
    try:
        while futures or here_running:
            job, fut, report = done.get()
            if job is None:
                here_running = False
                continue
            if fut is not None:
                futures.discard(fut)
                try:
                    report = fut.result()
                except BrokenProcessPool as exc:
                    stop.set()  # the pool takes no more work; what is left fails below
                    report = _failed(job, f"worker process died: {exc}")
                submit_next()
            if isinstance(report, BaseException):
                raise report
            assert report is not None
            yield report
        for job in waiting:  # left over only when the pool broke
            yield _failed(job, "not indexed: a worker process died before it")
    finally:
        stop.set()
        for f in futures:
            f.cancel()
        while here_running:  # the job in hand finishes and commits
            here_running = done.get()[0] is not None


def _failed(job: Job, error: str) -> JobReport:
    return JobReport(job.name, "failed", files=len(job.files), size=job.size, error=error)
