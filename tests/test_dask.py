"""Dask: the same index and match table from a real 2-worker LocalCluster.

The signature database reaches each worker once and is never recompiled
there: the compile cache is disabled and worker-side counters wrap
``Database.compile``/``deserialize``.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest
from index_helpers import FILLER, OOM, comparable, make_archive

pytest.importorskip("distributed")
pytest.importorskip("dask.dataframe")

import denpex_fast as dx  # noqa: E402
from denpex_fast.batch.build import build_index  # noqa: E402
from denpex_fast.engine.scanner import Scanner  # noqa: E402

pytestmark = pytest.mark.timeout(900)


def _install_counters() -> None:
    from denpex_fast import _native

    db = _native.Database
    if not hasattr(db, "_denpex_counts"):
        compile_, deserialize = db.compile.__func__, db.deserialize.__func__

        def counted_compile(cls: Any, *a: Any, **k: Any) -> Any:
            cls._denpex_counts["compile"] += 1
            return compile_(cls, *a, **k)

        def counted_deserialize(cls: Any, *a: Any, **k: Any) -> Any:
            cls._denpex_counts["deserialize"] += 1
            return deserialize(cls, *a, **k)

        db.compile = classmethod(counted_compile)
        db.deserialize = classmethod(counted_deserialize)
    db._denpex_counts = {"compile": 0, "deserialize": 0}


def _counts() -> dict[str, int]:
    from denpex_fast import _native

    return dict(_native.Database._denpex_counts)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Any:
    import os

    from distributed import Client

    from denpex_fast.batch.dask import local_cluster

    old = os.environ.get("DENPEX_CACHE_DIR")
    os.environ["DENPEX_CACHE_DIR"] = "off"  # workers inherit it: a compile would be visible
    try:
        with local_cluster(n_workers=2) as cluster, Client(cluster) as c:
            c.wait_for_workers(2)
            yield c
    finally:
        if old is None:
            os.environ.pop("DENPEX_CACHE_DIR", None)
        else:
            os.environ["DENPEX_CACHE_DIR"] = old


@pytest.fixture(scope="module")
def scanner(tmp_path_factory: pytest.TempPathFactory) -> Scanner:
    return Scanner(cache_dir=tmp_path_factory.mktemp("cache"))


def test_index_on_dask_equals_local(client: Any, scanner: Scanner, tmp_path: Path) -> None:
    root = tmp_path / "archive"
    root.mkdir()
    make_archive(root, n_extra=8)
    local = tmp_path / "local"
    assert build_index(str(root), str(local), scanner=scanner, threads=2).ok
    client.run(_install_counters)
    remote = tmp_path / "dask"
    summary = build_index(str(root), str(remote), scanner=scanner, dask=client)
    assert summary.ok and summary.count("indexed") == 12
    counts = client.run(_counts)
    assert len(counts) == 2
    assert all(c["compile"] == 0 for c in counts.values()), counts
    assert all(c["deserialize"] <= 1 for c in counts.values()), counts
    assert sum(c["deserialize"] for c in counts.values()) >= 1
    assert comparable(dx.open_index(str(remote))) == comparable(dx.open_index(str(local)))
    # incremental on Dask too
    again = build_index(str(root), str(remote), scanner=scanner, dask=client)
    assert again.count("unchanged") == 12


def test_dask_scan_dataframe(client: Any, tmp_path: Path) -> None:
    paths = []
    for i in range(4):
        p = tmp_path / f"rank{i}.log.gz" if i % 2 else tmp_path / f"rank{i}.log"
        data = FILLER + OOM * (i + 1)
        p.write_bytes(gzip.compress(data) if i % 2 else data)
        paths.append(str(p))
    s = Scanner(patterns={"oom": r"CUDA out of memory"}, cache_dir=False)
    client.run(_install_counters)
    ddf = dx.dask.scan(paths, client=client, scanner=s)
    assert list(ddf.columns) == list(dx.MATCH_SCHEMA.names)
    got = ddf.compute()
    local = s.scan(paths).to_pandas()
    assert len(got) == len(local) == 10
    key = ["file", "line", "signature"]
    a = got[key + ["offset", "text"]].astype(str).sort_values(key).reset_index(drop=True)
    b = local[key + ["offset", "text"]].astype(str).sort_values(key).reset_index(drop=True)
    assert a.equals(b)
    counts = client.run(_counts)
    assert all(c["compile"] == 0 and c["deserialize"] <= 1 for c in counts.values()), counts


def test_cli_index_dask_local(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from denpex_fast.cli import main

    root = tmp_path / "archive"
    root.mkdir()
    make_archive(root)
    res = CliRunner().invoke(
        main, ["index", str(root), "-o", str(tmp_path / "ix"), "--dask", "local"]
    )
    assert res.exit_code == 0, res.output
    assert "4 indexed" in res.output
