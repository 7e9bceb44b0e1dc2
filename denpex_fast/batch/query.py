"""Query an index with DuckDB, and the ready-made reports.

    >>> import denpex_fast as dx
    >>> ix = dx.open_index("index/")
    >>> ix.diagnosis()                       # pyarrow.Table, one row per job
    >>> ix.sql("select initiating_signature, count(*) from diagnosis group by 1")

SQL sees four views: ``matches``, ``diagnosis``, ``rank_fates``, ``manifest``
(each with its ``job`` column), Arrow datasets over the index's Parquet files
(local paths or fsspec URLs alike) that DuckDB scans with projection and
filter pushdown.

Safe by default, for embedding in services: the DuckDB connection is opened
with ``enable_external_access=false`` (no ``read_csv``/``read_parquet`` of
other files, no ``COPY ... TO``, ``ATTACH``, ``EXPORT``, no extension
install or load), extension autoload/autoinstall off, no spill directory,
and its configuration locked, so SQL sees the index views and nothing else
on the machine.  ``open_index(url, unsafe=True)`` (``denpex query --unsafe``)
opens a connection with DuckDB's defaults, for a person at a shell.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import date, datetime
from typing import Any

import pyarrow as pa

from ..schema import DIAGNOSIS_SCHEMA, MANIFEST_SCHEMA, MATCH_SCHEMA, RANK_FATE_SCHEMA
from ..textsafe import terminal_safe
from .store import DATASETS, PARTITIONING, IndexStore

#: DuckDB settings of the default (safe) connection; ``unsafe=True`` drops them
SAFE_DUCKDB_CONFIG: dict[str, Any] = {
    "enable_external_access": False,  # no file, network, ATTACH, COPY, extension I/O
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
    "allow_community_extensions": False,
    "allow_unsigned_extensions": False,
    "allow_persistent_secrets": False,
    "python_enable_replacements": False,  # no scans of Python variables by name
    "temp_directory": "",  # no spill files (nothing is written)
    "lock_configuration": True,  # SQL cannot SET any of this back
}

REPORTS = {
    # initiating causes across jobs, most frequent first
    "top-causes": """
        SELECT initiating_signature AS cause,
               count(*) AS jobs,
               round(100.0 * count(*) / (SELECT count(*) FROM diagnosis), 1) AS pct_of_jobs,
               round(avg(confidence), 3) AS mean_confidence,
               any_value(fix_id) AS fix_id,
               min(job) AS example_job
        FROM diagnosis
        WHERE verdict IN ('failure', 'suspect') AND initiating_signature IS NOT NULL
        GROUP BY 1 ORDER BY jobs DESC, cause""",
    # hosts where failures began
    "by-host": """
        SELECT coalesce(initiating_host, '(unknown)') AS host,
               count(*) AS jobs,
               count(DISTINCT initiating_signature) AS distinct_causes,
               string_agg(DISTINCT initiating_signature, ', '
                          ORDER BY initiating_signature) AS causes
        FROM diagnosis
        WHERE verdict IN ('failure', 'suspect')
        GROUP BY 1 ORDER BY jobs DESC, host""",
    # initiating causes per ISO week (failure time, else the logs' mtime)
    "trend": """
        SELECT printf('%04d-W%02d', isoyear(t), week(t)) AS iso_week,
               initiating_signature AS cause,
               count(*) AS jobs
        FROM (SELECT coalesce(initiating_ts, last_modified, scanned_at) AS t,
                     initiating_signature
              FROM diagnosis
              WHERE verdict IN ('failure', 'suspect') AND initiating_signature IS NOT NULL)
        GROUP BY 1, 2 ORDER BY 1, jobs DESC, cause""",
}


def _empty_schema(name: str) -> pa.Schema:
    base = {
        "matches": MATCH_SCHEMA,
        "diagnosis": DIAGNOSIS_SCHEMA,
        "rank_fates": RANK_FATE_SCHEMA,
        "manifest": MANIFEST_SCHEMA,
    }[name]
    return base.append(pa.field("job", pa.string()))


class Index:
    """An index written by ``denpex index``; tables come back as pyarrow Tables.

    ``unsafe=False`` (default): :meth:`sql` runs on a DuckDB connection that
    sees the four index views and nothing else (see the module docstring);
    ``unsafe=True``: DuckDB's defaults (other files, ``COPY``, ``ATTACH``...).
    """

    def __init__(
        self, url: str, storage_options: dict[str, Any] | None = None, *, unsafe: bool = False
    ) -> None:
        self.store = IndexStore(url, storage_options)
        if not self.store.fs.isdir(self.store.root):
            raise FileNotFoundError(f"{url}: no index here")
        self.unsafe = unsafe
        self._con: Any = None

    def __repr__(self) -> str:
        url = self.store.url if len(self.store.url) <= 120 else "\u2026" + self.store.url[-119:]
        try:
            jobs = len(self.store.committed_jobs())
        except Exception:  # noqa: BLE001 - a repr must not raise (e.g. a remote store gone)
            return f"<Index {url!r}>"
        return f"<Index {url!r}: {jobs:,} job{'' if jobs == 1 else 's'}>"

    def _read(self, name: str) -> pa.Table:
        return self.store.read(
            name, _empty_schema(name).remove(_empty_schema(name).get_field_index("job"))
        )

    def matches(self) -> pa.Table:
        """The attributed match table of every job (plus ``job``)."""
        return self._read("matches")

    def diagnosis(self) -> pa.Table:
        """One row per job: the diagnosis summary, when and what was scanned."""
        return self._read("diagnosis")

    def rank_fates(self) -> pa.Table:
        """One row per (job, rank): first error, exit code, who tore it down."""
        return self._read("rank_fates")

    def manifest(self) -> pa.Table:
        """One row per file: path, size, mtime, hash, status, error."""
        return self._read("manifest")

    def jobs(self) -> list[str]:
        """Names of the completely indexed jobs."""
        return sorted(self.store.committed_jobs())

    def connection(self) -> Any:
        """A DuckDB connection with the four views defined (safe unless ``unsafe``)."""
        if self._con is None:
            import duckdb

            con = duckdb.connect(config={} if self.unsafe else dict(SAFE_DUCKDB_CONFIG))
            try:
                for name in DATASETS:
                    # the views are Arrow datasets: DuckDB itself opens no file
                    con.register(name, self._dataset(name))
            except BaseException:
                con.close()
                raise
            self._con = con
        return self._con

    def _dataset(self, name: str) -> Any:
        """The dataset ``name`` as an Arrow dataset (every file's columns,
        ``job`` from the partition), or an empty table when it has no file."""
        import pyarrow.dataset as ds
        import pyarrow.fs as pafs

        st = self.store
        # only completely committed jobs: a run that died between a job's
        # partitions must not show half a job
        files = st.committed_files(name)
        if not files:  # no partition yet: the right columns, no rows
            return _empty_schema(name).empty_table()
        fs = pafs.LocalFileSystem() if st.local else pafs.PyFileSystem(pafs.FSSpecHandler(st.fs))
        factory = ds.FileSystemDatasetFactory(
            fs,
            files,
            ds.ParquetFileFormat(),
            ds.FileSystemFactoryOptions(
                partitioning=PARTITIONING, partition_base_dir=st.path(name)
            ),
        )
        found = factory.inspect(promote_options="permissive", fragments=None)
        schema = pa.unify_schemas([found, _empty_schema(name)], promote_options="permissive")
        return factory.finish(schema)

    def sql(self, query: str) -> pa.Table:
        """Run SQL over the views; the result as a pyarrow Table.

        By default the SQL sees the index views only: reading or writing
        other files (``read_csv``, ``COPY ... TO``), ``ATTACH`` and extension
        installs raise ``duckdb.PermissionException``; open the index with
        ``unsafe=True`` to allow them.
        """
        rel = self.connection().sql(query)
        # a statement with no result (COPY, SET) gives no relation on some DuckDB versions
        return rel.to_arrow_table() if rel is not None else pa.table({})

    def report(self, name: str) -> pa.Table:
        """A ready-made report: ``top-causes``, ``by-host`` or ``trend``."""
        try:
            return self.sql(REPORTS[name])
        except KeyError:
            raise ValueError(f"unknown report {name!r}; choose from {sorted(REPORTS)}") from None

    def close(self) -> None:
        """Close the DuckDB connection, if one was opened."""
        if self._con is not None:
            self._con.close()
            self._con = None


def open_index(
    url: str, storage_options: dict[str, Any] | None = None, *, unsafe: bool = False
) -> Index:
    """Open the index at ``url`` (a path or fsspec URL); ``unsafe``: see :class:`Index`."""
    return Index(url, storage_options, unsafe=unsafe)


# -- output formats -------------------------------------------------------------


def _plain(v: Any) -> Any:
    if isinstance(v, (datetime, date)):
        return v.isoformat()
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


def format_table(table: pa.Table, fmt: str = "text") -> str:
    """Render a table as ``text`` (aligned columns), ``json`` (array) or ``csv``."""
    rows = table.to_pylist()
    names = table.column_names
    if fmt == "json":
        return json.dumps([_plain(r) for r in rows], ensure_ascii=False, indent=1) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(names)
        for r in rows:
            w.writerow(["" if r[n] is None else _cell(r[n]) for n in names])
        return buf.getvalue()
    if fmt != "text":
        raise ValueError(f"unknown format {fmt!r} (text, json, csv)")
    cells = [[_cell(r[n]) for n in names] for r in rows]
    widths = [max([len(n)] + [len(c[i]) for c in cells]) for i, n in enumerate(names)]
    lines = [
        "  ".join(n.ljust(w) for n, w in zip(names, widths)).rstrip(),
        "  ".join("-" * w for w in widths),
    ]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.append(f"({len(rows)} row{'' if len(rows) == 1 else 's'})")
    return "\n".join(lines) + "\n"


def _cell(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, (datetime, date)):
        return v.isoformat()
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, (list, dict)):
        return json.dumps(_plain(v), ensure_ascii=False)
    return terminal_safe(str(v))
