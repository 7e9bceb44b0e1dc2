"""How many jobs run at once: threads of this process, or worker processes
(which die with their parent) beside it.  :mod:`denpex_fast.batch.build`
plans the run and picks one; Dask is :mod:`denpex_fast.batch.dask`.
"""

from __future__ import annotations

import os
import pickle
import signal
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import replace
from typing import Any

from ..io.jobs import Job
from ..pandas_guard import refuse_pandas
from .index import JobContext, JobReport, index_job, plan_job

#: ("start", (jobs, files, bytes)) / ("file", size) / ("job", report)
ProgressHook = Callable[[str, Any], None]


def index_in_threads(
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


def _per_job_threads(n: int, n_jobs: int) -> int:
    """Scanning threads per job when ``n`` jobs run at once."""
    return max(1, n // max(1, min(n, n_jobs)))


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


def _init_worker(ctx_path: str, parent: int | None = None) -> None:
    """Runs once in each worker process: unpickle the job context from the
    file ``ctx_path`` and keep it.

    The context comes pickled so that pandas is refused before unpickling it
    imports the scanner: a worker never needs pandas, and pyarrow would
    import it (~0.25 s of each worker's start) to look for DataFrames.  It
    comes in a file, not in the arguments: those are written down a pipe
    while the worker starts, and a worker that died before reading them
    all (a script without a ``__main__`` guard, an import that fails) left
    that write, and the whole run, blocked for ever."""
    global _WORKER_CTX
    if parent is not None:
        _die_with_parent(parent)
    refuse_pandas()
    with open(ctx_path, "rb") as f:
        ctx: JobContext = pickle.load(f)
    # Ctrl-C goes to the whole process group; the parent decides what stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _WORKER_CTX = ctx
    ctx.signatures()  # loaded now, not inside the first job's timing


def _index_job_in_worker(job: Job, previous: list[dict[str, Any]] | None) -> JobReport:
    assert _WORKER_CTX is not None
    return index_job(job, _WORKER_CTX, previous)


def index_in_processes(
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
        yield from index_in_threads(todo, ctx, previous, 1, progress)
        return
    fd, ctx_path = tempfile.mkstemp(prefix="denpex-index-ctx-", suffix=".pickle")
    try:
        with os.fdopen(fd, "wb") as f:
            pickle.dump(ctx, f)
        pool = ProcessPoolExecutor(
            max_workers=n,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(ctx_path, os.getpid()),
        )
        with pool:
            yield from _share_jobs(pool, n, todo, ctx, previous, here, progress)
    finally:
        os.unlink(ctx_path)


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
                    report = _failed(job, f"worker process died: {exc} {_DIED_HINT}")
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


#: why a worker may die as it starts; its own traceback is on stderr
_DIED_HINT = (
    "(its error is on stderr; a script that indexes with worker processes must "
    'call build_index under `if __name__ == "__main__":`, as every worker imports it again)'
)


def _failed(job: Job, error: str) -> JobReport:
    return JobReport(job.name, "failed", files=len(job.files), size=job.size, error=error)
