"""Published contracts: the diagnosis JSON validates against its shipped JSON
Schema for every corpus job; `denpex schema` prints each contract; the CI
formats (SARIF, GitHub annotations) and exit statuses say what they mean."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from corpus_eval import case_dirs, log_files

import denpex_fast as dx
from denpex_fast.report import to_github, to_json, to_sarif
from denpex_fast.schema import NAMES, describe, json_schema

HERE = Path(__file__).parent
CASES = case_dirs([HERE / "corpus" / "cases", HERE / "corpus" / "public"])
SAMPLE = Path(dx.__file__).parent / "samples" / "sample_job"


def _denpex(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "denpex_fast.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


def test_every_corpus_diagnosis_validates() -> None:
    validator = jsonschema.Draft202012Validator(json_schema("diagnosis"))
    verdicts = set()
    for case in CASES:
        doc = json.loads(to_json(dx.diagnose(log_files(case))))
        errors = sorted(validator.iter_errors(doc), key=str)
        assert not errors, (case.name, [e.message for e in errors[:3]])
        verdicts.add(doc["verdict"])
    assert {"failure", "suspect", "no-failure-found"} <= verdicts


@pytest.mark.parametrize("name", sorted(NAMES))
def test_schema_names_print(name: str) -> None:
    doc = json.loads(describe(name))
    assert doc


def test_schema_command(tmp_path: Path) -> None:
    out = _denpex("schema", "diagnosis", cwd=tmp_path)
    assert out.returncode == 0 and json.loads(out.stdout)["title"] == "denpex.diagnosis/1"
    out = _denpex("schema", "matches", cwd=tmp_path)
    fields = [f["name"] for f in json.loads(out.stdout)["fields"]]
    assert fields[:2] == ["file", "line"] and "ts" in fields


def test_sarif_and_github_name_the_initiating_line() -> None:
    d = dx.diagnose(str(SAMPLE))
    sarif = json.loads(to_sarif(d))
    (res,) = sarif["runs"][0]["results"]
    loc = res["locations"][0]["physicalLocation"]
    assert res["ruleId"] == d.initiating.signature
    assert (
        loc["artifactLocation"]["uri"] == "node1/console.log"
        and loc["region"]["startLine"] == d.initiating.line
    )
    gh = to_github(d)
    assert gh.startswith(
        ("::error file=node1/console.log,line=", "::warning file=node1/console.log,line=")
    )
    assert "\n" not in gh


def test_exit_statuses(tmp_path: Path) -> None:
    assert _denpex("diagnose", str(SAMPLE), cwd=tmp_path).returncode == 1
    healthy = HERE / "corpus" / "cases" / "001-healthy-single"
    files = log_files(healthy)
    assert _denpex("diagnose", *files, cwd=tmp_path).returncode == 0
    missing = _denpex("diagnose", str(tmp_path / "nope"), cwd=tmp_path)
    assert missing.returncode == 2 and "nope" in missing.stderr and missing.stdout == ""
    two = _denpex("diagnose", str(SAMPLE), str(healthy), cwd=tmp_path)
    assert two.returncode == 2 and "one job at a time" in two.stderr.replace("\n", " ")


def test_missing_extra_names_the_install(tmp_path: Path) -> None:
    # a sitecustomize that hides duckdb, as on a machine without the [index] extra
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(
        "import sys\nclass _Hide:\n    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'duckdb':\n            raise ModuleNotFoundError(\"No module named 'duckdb'\", name='duckdb')\n"
        "        return None\nsys.meta_path.insert(0, _Hide())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(shim)}
    out = subprocess.run(
        [sys.executable, "-m", "denpex_fast.cli", "query", str(tmp_path), "select 1"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert out.returncode == 2
    assert "pip install 'denpex_fast[index]'" in out.stderr and "Traceback" not in out.stderr


def test_every_verdict_is_reached_by_a_real_case(tmp_path: Path) -> None:
    import gzip

    gen = HERE / "corpus" / "cases"
    healthy = log_files(gen / "001-healthy-single")
    assert dx.diagnose(healthy).verdict == "no-failure-found"
    assert dx.diagnose(log_files(gen / "008-sigkill-rank")).verdict in ("failure", "suspect")
    hang = json.loads((gen / "007-collective-timeout-hang" / "truth.json").read_text())
    assert (
        dx.diagnose(log_files(gen / "007-collective-timeout-hang")).suspect_rank
        == hang["initiating"]["rank"]
    )
    if (gen / "053-tr1n-healthy-cut").is_dir():
        assert dx.diagnose(log_files(gen / "053-tr1n-healthy-cut")).verdict == "stopped"
    # a healthy job with one file cut inside its gzip stream: never an all-clear
    cut = tmp_path / "cut.log.gz"
    data = gzip.compress(Path(healthy[0]).read_bytes())
    cut.write_bytes(data[: len(data) // 2])
    d = dx.diagnose([*healthy, str(cut)])
    assert d.verdict == "incomplete" and d.errors and d.errors[0]["path"].endswith("cut.log.gz")
    assert d.to_dict()["verdict"] == "incomplete"
