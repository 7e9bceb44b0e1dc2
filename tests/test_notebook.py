"""The library in a notebook: dir(), short reprs, pandas dtypes, one-call
attribution, ``python -m denpex_fast`` and the ``py.typed`` marker."""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import denpex_fast as dx
from denpex_fast.batch.build import build_index
from denpex_fast.engine.scanner import MATCH_SCHEMA, Scanner

LOG = (
    b"2024-05-01 12:00:00 [rank3]: CUDA out of memory. Tried to allocate\n"
    b"2024-05-01 12:00:01 step=10 loss=1.0\n"
    b"2024-05-01 12:00:02 [rank1]: Watchdog caught collective operation timeout\n"
    b"CUDA out of memory again, printed by nobody in particular\n"
)
PATTERNS = {"oom": r"CUDA out of memory", "wd": r"Watchdog caught"}


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DENPEX_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def job(tmp_path: Path) -> Path:
    d = tmp_path / "job"
    d.mkdir()
    (d / "console.log").write_bytes(LOG)
    return d


# -- dir() and tab completion ---------------------------------------------------


def test_dir_lists_every_lazy_name_and_each_resolves() -> None:
    names = dir(dx)
    assert names == sorted(names)
    for name in dx.__all__:
        assert name in names, name
    for name in ("scan", "Scanner", "diagnose", "attribute", "to_pandas", "__version__"):
        assert name in names
    # nothing private to the module's implementation leaks into completion
    assert "Any" not in names and "annotations" not in names
    for name in names:
        if not name.startswith("_"):
            getattr(dx, name)  # every listed name resolves


# -- reprs ------------------------------------------------------------------------


def test_scanner_repr_names_its_signatures() -> None:
    s = Scanner(patterns=PATTERNS)
    assert repr(s) == "<Scanner 2 signatures: oom, wd>"
    s = Scanner(patterns=PATTERNS, caseless=True, max_rows_per_signature=5, max_text=80)
    assert (
        repr(s)
        == "<Scanner 2 signatures: oom, wd, caseless, max_rows_per_signature=5, max_text=80>"
    )
    many = Scanner(patterns={f"a-rather-long-signature-id-{i:03d}": "x" for i in range(300)})
    r = repr(many)
    assert r.startswith("<Scanner 300 signatures: a-rather-long-signature-id-000, ")
    assert "\u2026" in r and r.endswith(">") and len(r) < 200


def test_scanner_repr_knowledge_base() -> None:
    s = dx.scanner.default_scanner()
    assert repr(s) == f"<Scanner {len(s.signature_ids)} signatures from the knowledge base>"


def test_scan_result_repr_counts_files_and_errors(job: Path, tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    big.write_bytes(b"CUDA out of memory\n" * 5000)
    res = Scanner(patterns=PATTERNS, max_rows_per_signature=10).run(
        [job, big, tmp_path / "missing.log"], errors="collect"
    )
    r = repr(res)
    assert r.startswith(
        "<ScanResult 13 rows of 5,003 matching lines, 2 files, 2 signatures matched, "
    )
    assert "1 error (" in r and "missing.log: open)" in r
    assert len(r) < 200 and "CUDA" not in r  # never the tables themselves
    ok = Scanner(patterns=PATTERNS).run([job])
    assert repr(ok).startswith("<ScanResult 3 rows, 1 file, 2 signatures matched, ")
    assert "error" not in repr(ok)
    empty = Scanner(patterns={"x": "never printed"}).run([job])
    assert repr(empty).startswith("<ScanResult 0 rows, 1 file, 0 signatures matched, ")


def test_scan_result_repr_stays_short_with_long_paths(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 150) / ("e" * 100)
    res = Scanner(patterns=PATTERNS).run([deep / "missing.log"], errors="collect")
    assert len(repr(res)) < 200 and repr(res).endswith("missing.log: open)>")


def test_index_repr_counts_jobs(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    for name in ("job-a", "job-b"):
        (root / name).mkdir(parents=True)
        (root / name / "rank0.log").write_bytes(LOG)
    out = tmp_path / "index"
    assert build_index(str(root), str(out), scanner=Scanner(patterns=PATTERNS)).ok
    ix = dx.open_index(str(out))
    assert repr(ix) == f"<Index {str(out)!r}: 2 jobs>"
    ix.close()


def test_attribution_repr_is_short(job: Path) -> None:
    att = dx.attribute(dx.scan(job, patterns=PATTERNS))
    assert (
        repr(att) == "<Attribution 3 rows; known: rank 2, host 0, ts 3; "
        f"{len(att.notes)} note{'' if len(att.notes) == 1 else 's'}>"
    )


# -- one call to an attributed table ------------------------------------------------


def test_scan_attribute_true_fills_rank_host_ts(job: Path) -> None:
    plain = dx.scan(job, patterns=PATTERNS)
    assert plain.column("rank").null_count == plain.num_rows
    table = dx.scan(job, patterns=PATTERNS, attribute=True)
    assert table.schema == MATCH_SCHEMA
    assert table.column("rank").to_pylist() == [3, 1, None]
    assert table.column("ts").null_count == 0
    assert table.equals(dx.attribute(plain).table)
    # the engine's own method leaves attribution to the next stage
    assert dx.attribute(Scanner(patterns=PATTERNS).scan(job)).table.equals(table)


def test_scan_attribute_mapping_passes_options(job: Path) -> None:
    utc = dx.scan(job, patterns=PATTERNS, attribute=True)
    berlin = dx.scan(job, patterns=PATTERNS, attribute={"default_tz": "Europe/Berlin"})
    # 12:00 naive read in Berlin (CEST, UTC+2) is 10:00 UTC
    delta = utc.column("ts")[0].as_py() - berlin.column("ts")[0].as_py()
    assert delta.total_seconds() == 2 * 3600


def test_scan_attribute_keeps_collected_errors(job: Path, tmp_path: Path) -> None:
    table = dx.scan(
        [job, tmp_path / "missing.log"], patterns=PATTERNS, errors="collect", attribute=True
    )
    errors = json.loads(table.schema.metadata[b"denpex.errors"])
    assert [e["kind"] for e in errors] == ["open"]
    assert table.schema.metadata[b"denpex.schema"] == b"denpex.matches/1"
    assert table.column("rank").to_pylist() == [3, 1, None]


# -- pandas ----------------------------------------------------------------------------


def test_to_pandas_keeps_rank_an_integer(job: Path) -> None:
    pd = pytest.importorskip("pandas")
    table = dx.scan(job, patterns=PATTERNS, attribute=True)
    assert table.to_pandas()["rank"].dtype == "float64"  # what plain pyarrow does
    df = dx.to_pandas(table)
    assert df["rank"].dtype == pd.Int32Dtype()
    assert df["rank"].tolist()[:2] == [3, 1] and df["rank"].isna().tolist() == [False, False, True]
    assert df["line"].dtype == pd.UInt64Dtype()
    assert isinstance(df["signature"].dtype, pd.CategoricalDtype)
    assert str(df["ts"].dtype).startswith("datetime64")
    # the same through types_mapper, a ScanResult, and a RecordBatch
    via_mapper = table.to_pandas(types_mapper=dx.pandas_types_mapper)
    assert via_mapper["rank"].dtype == pd.Int32Dtype()
    res = Scanner(patterns=PATTERNS).run([job])
    assert res.to_pandas()["rank"].dtype == pd.Int32Dtype()
    assert dx.to_pandas(table.to_batches()[0])["rank"].dtype == pd.Int32Dtype()
    # any table: booleans become pandas' nullable boolean
    other = pa.table(
        {"exit_code": pa.array([1, None], pa.int32()), "torn_down": pa.array([True, None])}
    )
    df = dx.to_pandas(other)
    assert df["exit_code"].dtype == pd.Int32Dtype() and df["torn_down"].dtype == pd.BooleanDtype()


def test_to_pandas_without_pandas_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas -> ModuleNotFoundError
    with pytest.raises(ModuleNotFoundError, match="pip install pandas"):
        dx.to_pandas(pa.table({"rank": pa.array([1], pa.int32())}))


# -- python -m denpex_fast --------------------------------------------------------------


def test_python_dash_m_runs_the_cli(job: Path, tmp_path: Path) -> None:
    env = {**os.environ, "DENPEX_CACHE_DIR": str(tmp_path / "cache")}
    log = job / "console.log"
    r = subprocess.run(
        [sys.executable, "-m", "denpex_fast", "scan", str(log), "-e", "wd=Watchdog"],
        capture_output=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().splitlines() == [
        f"{log}:3:wd:2024-05-01 12:00:02 [rank1]: Watchdog caught collective operation timeout"
    ]
    r = subprocess.run(
        [sys.executable, "-m", "denpex_fast", "scan", str(log), "-e", "x=nope"],
        capture_output=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert r.returncode == 1 and r.stdout == b""  # the CLI's exit codes, unchanged
    r = subprocess.run(
        [sys.executable, "-m", "denpex_fast", "--help"],
        capture_output=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert r.returncode == 0 and b"diagnose" in r.stdout and b"python -m denpex_fast" in r.stdout


# -- py.typed ------------------------------------------------------------------------------


def test_py_typed_is_package_data() -> None:
    assert importlib.resources.files("denpex_fast").joinpath("py.typed").is_file()
    pyproject = Path(__file__).parents[1] / "pyproject.toml"
    if pyproject.is_file():
        assert '"py.typed"' in pyproject.read_text(encoding="utf-8")


def test_py_typed_is_in_the_installed_wheel() -> None:
    """The installed distribution's RECORD lists ``py.typed`` (an editable
    install records only its hook, so there is nothing to check there)."""
    files = importlib.metadata.files("denpex_fast") or []
    recorded = {str(f) for f in files}
    if not any(f.startswith("denpex_fast/") and f.endswith(".py") for f in recorded):
        pytest.skip("editable install: the wheel's files are not recorded")
    assert "denpex_fast/py.typed" in recorded
    assert "denpex_fast/__main__.py" in recorded


def test_cli_error_is_one_line_however_long_the_path(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from denpex_fast.cli import main

    missing = tmp_path / ("a-long-directory-name-" * 8) / "missing.log"
    r = CliRunner().invoke(main, ["scan", str(missing), "-e", "x=y"])
    assert r.exit_code == 2
    assert len(r.stderr.splitlines()) == 1
    assert r.stderr.startswith(f"denpex: {missing}: ") and "No such file" in r.stderr
