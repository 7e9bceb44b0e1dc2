"""`denpex index` and `dx.diagnose` give the same answer for the same job,
whatever the working directory: the index labels files relative to their job
and reads lines back through the job's own paths, never through the label.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow.compute as pc
import pytest

import denpex_fast as dx

pytest.importorskip("duckdb")
pytest.importorskip("xxhash")

HERE = Path(__file__).parent
JOBS = [
    "008-sigkill-rank",
    "012-dataloader-segfault",
    "013-dataloader-sigkill",
    "019-mn-shape-mismatch-forward",
    "020-mn-collective-timeout-hang",
    "021-mn-sigkill",
    "023-ds-zero2-batch-config",
]


def _answer(d: dx.Diagnosis, root: Path) -> tuple:
    i = d.initiating
    return (
        d.verdict,
        i.signature if i else None,
        i.rank if i else d.suspect_rank,
        os.path.relpath(i.file, root) if i else None,
        i.line if i else None,
    )


def _rows(t, root: Path | None) -> set:  # type: ignore[no-untyped-def]
    cols = t.select(["file", "line", "signature", "rank", "ts"]).to_pylist()
    return {
        (
            os.path.relpath(r["file"], root) if root else r["file"],
            r["line"],
            r["signature"],
            r["rank"],
            r["ts"],
        )
        for r in cols
    }


def test_index_and_diagnose_agree_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from denpex_fast.batch.build import build_index

    root = tmp_path / "archive"
    for name in JOBS:
        shutil.copytree(
            HERE / "corpus" / "cases" / name,
            root / name,
            ignore=shutil.ignore_patterns("truth.json"),
        )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # neither the archive nor a job: labels cannot be opened
    build_index(str(root), str(tmp_path / "idx"), threads=2)
    ix = dx.open_index(str(tmp_path / "idx"))
    rows = {r["job"]: r for r in ix.diagnosis().to_pylist()}
    matches = ix.matches()
    for name in JOBS:
        d = dx.diagnose(str(root / name))
        r = rows[name]
        assert _answer(d, root / name) == (
            r["verdict"],
            r["initiating_signature"],
            r["initiating_rank"],
            r["initiating_file"],
            r["initiating_line"],
        ), name
        mine = matches.filter(pc.equal(matches.column("job"), name))
        assert _rows(mine, None) == _rows(d.table, root / name), name


def test_every_dataset_names_its_schema_version(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from denpex_fast.batch.build import build_index

    root = tmp_path / "archive"
    shutil.copytree(
        HERE / "corpus" / "cases" / "008-sigkill-rank",
        root / "job",
        ignore=shutil.ignore_patterns("truth.json"),
    )
    build_index(str(root), str(tmp_path / "idx"), threads=1)
    want = {
        "matches": "denpex.matches/1",
        "diagnosis": "denpex.diagnosis-rows/1",
        "rank_fates": "denpex.rank-fates/1",
        "manifest": "denpex.manifest/1",
    }
    for name, version in want.items():
        files = sorted((tmp_path / "idx" / name).rglob("*.parquet"))
        assert files, name
        meta = pq.read_schema(files[0]).metadata or {}
        assert meta.get(b"denpex.schema") == version.encode(), name
