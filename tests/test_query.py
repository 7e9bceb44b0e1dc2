"""`denpex query` / `denpex report` and `open_index`: DuckDB over the index."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner
from index_helpers import make_archive

import denpex_fast as dx
from denpex_fast.batch.build import build_index
from denpex_fast.batch.query import format_table
from denpex_fast.cli import main
from denpex_fast.engine.scanner import MATCH_SCHEMA, Scanner


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("q")
    root = tmp / "archive"
    root.mkdir()
    make_archive(root, n_extra=3)
    out = tmp / "index"
    assert build_index(str(root), str(out), scanner=Scanner(cache_dir=tmp / "cache")).ok
    return out


def test_open_index_tables(index: Path) -> None:
    ix = dx.open_index(str(index))
    m = ix.matches()
    assert isinstance(m, pa.Table)
    for f in MATCH_SCHEMA:
        assert m.schema.field(f.name).type == f.type
    assert m.schema.field("job").type == pa.string()
    d = ix.diagnosis()
    assert sorted(d.column("job").to_pylist()) == ix.jobs()
    assert d.num_rows == 7
    assert ix.manifest().num_rows >= 7
    assert set(ix.rank_fates().column_names) >= {"rank", "first_error_signature", "job"}
    # one dictionary per column, so Arrow compute works across jobs
    assert m.group_by(["job", "signature"]).aggregate([("line", "count")]).num_rows > 0


def test_sql_returns_arrow(index: Path) -> None:
    ix = dx.open_index(str(index))
    t = ix.sql("select job, count(*) as n from matches group by job order by job")
    assert isinstance(t, pa.Table)
    counts = dict(zip(t.column("job").to_pylist(), t.column("n").to_pylist()))
    assert counts["job-a"] > 0
    # the healthy job's step lines are progress context, never a cause
    causes = ix.sql(
        "select count(*) as n from diagnosis where job = 'healthy' and initiating_signature is not null"
    )
    assert causes.column("n")[0].as_py() == 0
    joined = ix.sql("""select d.job, count(m.path) as files from diagnosis d
                       join manifest m using (job) group by 1 order by 1""")
    assert dict(zip(*joined.to_pydict().values()))["job-a"] == 3


def test_reports(index: Path) -> None:
    ix = dx.open_index(str(index))
    top = ix.report("top-causes")
    assert top.column_names[:2] == ["cause", "jobs"]
    jobs = top.column("jobs").to_pylist()
    assert jobs == sorted(jobs, reverse=True) and sum(jobs) >= 1
    n_init = ix.sql("select count(*) as n from diagnosis where verdict in ('failure', 'suspect')")
    assert sum(jobs) == n_init.column("n")[0].as_py()
    host = ix.report("by-host")
    assert host.column_names[:2] == ["host", "jobs"]
    trend = ix.report("trend")
    assert all(w.count("-W") == 1 for w in trend.column("iso_week").to_pylist())
    with pytest.raises(ValueError):
        ix.report("nope")


def test_cli_query_formats(index: Path) -> None:
    runner = CliRunner()
    q = "select job, n_files from diagnosis order by job"
    text = runner.invoke(main, ["query", str(index), q])
    assert text.exit_code == 0, text.output
    assert text.output.splitlines()[0].split() == ["job", "n_files"]
    assert "(7 rows)" in text.output
    js = runner.invoke(main, ["query", str(index), q, "--format", "json"])
    rows = json.loads(js.output)
    assert {r["job"]: r["n_files"] for r in rows}["job-a"] == 3
    cs = runner.invoke(main, ["query", str(index), q, "--format", "csv"])
    assert list(csv.DictReader(io.StringIO(cs.output)))[0].keys() == {"job", "n_files"}
    bad = runner.invoke(main, ["query", str(index), "select * from nowhere"])
    assert bad.exit_code == 2


@pytest.mark.parametrize("flag", ["--top-causes", "--by-host", "--trend"])
@pytest.mark.parametrize("fmt", ["text", "json", "csv"])
def test_cli_report(index: Path, flag: str, fmt: str) -> None:
    res = CliRunner().invoke(main, ["report", str(index), flag, "--format", fmt])
    assert res.exit_code == 0, res.output
    if fmt == "json":
        assert isinstance(json.loads(res.output), list)


def test_empty_index_has_views(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    root.mkdir()
    out = tmp_path / "index"
    build_index(str(root), str(out), scanner=Scanner(patterns={"x": "x"}, cache_dir=False))
    ix = dx.open_index(str(out))
    assert ix.sql("select count(*) as n from matches").column("n")[0].as_py() == 0
    assert ix.report("top-causes").num_rows == 0
    assert ix.matches().num_rows == 0


def test_missing_index(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        dx.open_index(str(tmp_path / "nope"))
    assert CliRunner().invoke(main, ["report", str(tmp_path / "nope")]).exit_code == 2


def test_format_table_values() -> None:
    import datetime as dt

    t = pa.table(
        {
            "a": [1, None],
            "t": [dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc), None],
            "s": ["x\ny", "z"],
        }
    )
    text = format_table(t)
    assert "NULL" in text and "x\\ny" in text and "2024-05-01T00:00:00+00:00" in text
    assert json.loads(format_table(t, "json"))[0]["t"].startswith("2024-05-01")
    assert format_table(t, "csv").splitlines()[0] == "a,t,s"
