"""Scale-out on Dask (``pip install 'denpex_fast[dask]'``).

    >>> from distributed import Client
    >>> import denpex_fast as dx
    >>> ddf = dx.dask.scan(paths, client=Client("tcp://scheduler:8786"))

The compiled signature database reaches each worker once: the
:class:`~denpex_fast.Scanner` is scattered (broadcast) and pickles as its
serialized database, which workers deserialize and never recompile.  Workers
need the same libhs and CPU features as the client (a foreign database is
refused by libhs).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from ..schema import MATCH_SCHEMA

LOCAL = "local"


def local_cluster(n_workers: int = 2) -> Any:
    """A ``LocalCluster`` of single-threaded worker processes, no dashboard."""
    from distributed import LocalCluster

    return LocalCluster(
        n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None
    )


def connect(address: Any) -> tuple[Any, Any]:
    """``(client, owned)`` for a Client, a scheduler address or ``"local"``.

    ``owned`` is what the caller must close (client and cluster), or None.
    """
    from distributed import Client

    if isinstance(address, Client):
        return address, None
    if address == LOCAL:
        cluster = local_cluster()
        client = Client(cluster)
        return client, (client, cluster)
    client = Client(address)
    return client, (client,)


def _close(owned: Any) -> None:
    for obj in owned or ():
        obj.close()


def _default_client() -> Any:
    try:
        from distributed import get_client

        return get_client()
    except (ImportError, ValueError):
        return None


def _scan_partition(path: str, scanner: Any, errors: str = "raise") -> Any:
    """One path's match table as pandas (runs on a worker)."""
    import fsspec
    from fsspec.implementations.local import LocalFileSystem

    fs, p = fsspec.core.url_to_fs(path)
    if isinstance(fs, LocalFileSystem):
        result = scanner.run([p if "://" in str(path) else path], threads=1, errors=errors)
    else:
        from ..errors import ScanError

        with fs.open(p, "rb") as f:
            result = scanner.scan_stream(f, str(path))
        if result.errors and errors == "raise":
            raise ScanError(result.errors, result)
    return _to_pandas(result.table.cast(MATCH_SCHEMA))


def _to_pandas(table: Any) -> Any:
    import pandas as pd
    import pyarrow as pa

    # nullable integers, so that an all-null rank column keeps its int32 dtype
    return table.to_pandas(types_mapper={pa.int32(): pd.Int32Dtype()}.get)


def meta() -> Any:
    """An empty pandas frame with the match table's columns and dtypes."""
    from dask.dataframe.utils import clear_known_categories

    return clear_known_categories(_to_pandas(MATCH_SCHEMA.empty_table()))


def scan(
    paths: Iterable[str], client: Any = None, scanner: Any = None, *, errors: str = "raise"
) -> Any:
    """A ``dask.dataframe.DataFrame`` of the match table, one partition per path.

    ``paths``: files (local paths or fsspec URLs; ``.gz``/``.zst`` by
    content).  ``client``: a ``distributed.Client`` (default: the current
    one, if any; otherwise the local scheduler).  ``scanner``: a
    :class:`~denpex_fast.Scanner` (default: the built-in knowledge base).
    ``errors="collect"`` keeps the rows of a damaged file instead of failing.
    Dictionary columns (``file``, ``signature``, ``host``) become pandas
    categoricals.
    """
    import dask.dataframe as dd

    from ..engine.scanner import Scanner

    paths = [os.fspath(p) for p in paths]
    if not paths:
        raise ValueError("no paths to scan")
    scanner = scanner if scanner is not None else Scanner()
    client = client if client is not None else _default_client()
    shipped = client.scatter(scanner, broadcast=True, hash=False) if client is not None else scanner
    return dd.from_map(
        _scan_partition,
        paths,
        scanner=shipped,
        errors=errors,
        meta=meta(),
        enforce_metadata=False,
        label="denpex-scan",
    )


def index_jobs_on_dask(
    address: Any, jobs: list[Any], ctx: Any, previous: dict[str, Any]
) -> Iterator[Any]:
    """Run :func:`denpex_fast.batch.index.index_job` for every job on a Dask cluster.

    Yields one :class:`~denpex_fast.batch.index.JobReport` per job as it finishes.
    The job context (scanner included) is broadcast once to every worker;
    workers write their job's partitions to the index themselves, so the
    index must be reachable from them (a shared path or an object store).
    """
    from distributed import as_completed

    from .index import index_job

    client, owned = connect(address)
    try:
        shipped = client.scatter(ctx, broadcast=True, hash=False)
        tag = uuid.uuid4().hex[:8]
        futures = [
            client.submit(
                index_job,
                job,
                shipped,
                previous.get(job.name),
                key=f"denpex-index-{tag}-{i}",
                pure=False,
            )
            for i, job in enumerate(jobs)
        ]
        for fut in as_completed(futures):
            yield fut.result()
            fut.release()
    finally:
        _close(owned)
