"""The denpex command line: output formats and grep exit codes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from denpex_fast.cli import main, parse_pattern_file

LOG = b"ok\n[rank2]: CUDA out of memory. Tried\n[rank0]: Watchdog caught collective operation timeout\n"


@pytest.fixture
def log(tmp_path: Path) -> Path:
    p = tmp_path / "rank.log"
    p.write_bytes(LOG)
    return p


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DENPEX_CACHE_DIR", str(tmp_path / "cache"))


def run(*args: str, input: bytes | None = None):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def test_text_output_and_exit_zero(log: Path) -> None:
    r = run("scan", str(log), "-e", "oom=CUDA out of memory", "-e", "wd=Watchdog caught")
    assert r.exit_code == 0
    assert r.stdout.splitlines() == [
        f"{log}:2:oom:[rank2]: CUDA out of memory. Tried",
        f"{log}:3:wd:[rank0]: Watchdog caught collective operation timeout",
    ]


def test_no_match_exits_one(log: Path) -> None:
    r = run("scan", str(log), "-e", "x=never printed")
    assert r.exit_code == 1 and r.stdout == ""


def test_error_exits_two_and_names_file(log: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope.log"
    r = run("scan", str(log), str(missing), "-e", "oom=CUDA out of memory")
    assert r.exit_code == 2
    assert f"{missing}" in r.stderr and "No such file" in r.stderr
    assert "oom" in r.stdout  # the readable file was still scanned
    r = run("scan", str(log), str(missing), "-q", "-e", "oom=CUDA out of memory")
    assert r.exit_code == 0 and r.stdout == ""  # -q: a match wins, as in grep


def test_bad_pattern_exits_two_naming_signature(log: Path) -> None:
    r = run("scan", str(log), "-e", "broken=(unclosed")
    assert r.exit_code == 2 and "broken" in r.stderr


def test_json_lines(log: Path) -> None:
    r = run("scan", str(log), "--json", "-e", "oom=CUDA out of memory")
    msgs = [json.loads(x) for x in r.stdout.splitlines()]
    assert [m["type"] for m in msgs] == ["begin", "match", "end", "summary"]
    m = msgs[1]["data"]
    assert (m["line_number"], m["absolute_offset"], m["signature"]) == (2, 3, "oom")
    assert msgs[-1]["data"]["counts"][0]["lines"] == 1


@pytest.mark.parametrize("suffix", [".parquet", ".arrow", ".csv"])
def test_output_file(log: Path, tmp_path: Path, suffix: str) -> None:
    out = tmp_path / f"m{suffix}"
    r = run("scan", str(log), "-o", str(out), "-e", "oom=CUDA out of memory")
    assert r.exit_code == 0 and out.stat().st_size > 0
    if suffix == ".parquet":
        t = pq.read_table(out)
        assert t.column("line").to_pylist() == [2]
        assert str(t.schema.field("signature").type).startswith("dictionary")


def test_pattern_file_and_stdin(tmp_path: Path) -> None:
    pf = tmp_path / "pats.txt"
    pf.write_text("# comment\noom=CUDA out of memory\nWatchdog caught\n")
    assert parse_pattern_file(str(pf)) == {
        "oom": ["CUDA out of memory"],
        "pats-3": ["Watchdog caught"],
    }
    # CliRunner replaces sys.stdin with a BytesIO that has no file descriptor,
    # so stdin is exercised in a real process
    import subprocess
    import sys

    r = subprocess.run(
        [
            sys.executable,
            "-c",
            "from denpex_fast.cli import main; main()",
            "scan",
            "-",
            "-f",
            str(pf),
        ],
        input=LOG,
        capture_output=True,
        timeout=60,
        env={**os.environ},
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().splitlines() == [
        "-:2:oom:[rank2]: CUDA out of memory. Tried",
        "-:3:pats-3:[rank0]: Watchdog caught collective operation timeout",
    ]


def test_stats_to_stderr(log: Path) -> None:
    r = run("scan", str(log), "--stats", "-e", "oom=CUDA out of memory")
    assert "oom: 1 matching line" in r.stderr and "1 files" in r.stderr


def test_signatures_list_show_match_check() -> None:
    r = run("signatures", "list", "--role", "cause", "--framework", "deepspeed")
    assert r.exit_code == 0
    rows = [line.split("\t") for line in r.stdout.splitlines()]
    assert rows and all(row[1] == "cause" and row[3] == "deepspeed" for row in rows)
    r = run("signatures", "show", "ds-zero2-bucket-exhausted")
    assert (
        r.exit_code == 0
        and "reduce_bucket_size" in r.stdout
        and "allreduce_bucket_size" in r.stdout
    )
    r = run("signatures", "show", "ds-zero2")
    assert r.exit_code == 1 and "did you mean ds-zero2-bucket-exhausted" in r.stderr
    r = run(
        "signatures",
        "match",
        "[rank1]: RuntimeError: start (0) + length (622329856) exceeds dimension size (500000000).",
    )
    assert r.exit_code == 0
    assert "ds-zero2-bucket-exhausted" in r.stdout and "length=622329856" in r.stdout
    assert run("signatures", "match", "step=12 loss=0.5").exit_code == 1


def test_signatures_check_reports_problems(tmp_path: Path) -> None:
    bad = tmp_path / "mine.toml"
    bad.write_text(
        'schema = "denpex.signatures/1"\nfamily = "mine"\n\n[[signature]]\nid = "mine-x"\ntitle = "x"\n'
    )
    r = run("signatures", "check", str(bad))
    assert r.exit_code == 1 and "mine-x" in r.stdout


def test_demo_diagnoses_the_bundled_job() -> None:
    """The README's main command: the sample job's initiating rank is 3, not
    the rank 0 that torchrun's own summary names."""
    r = run("demo", "--format", "json")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    assert doc["schema"] == "denpex.diagnosis/1"
    assert doc["initiating"]["rank"] == 3 and doc["initiating"]["host"] == "node1"
    assert doc["fix_id"] == "torch-matmul-shape-mismatch" and doc["verify"]


def test_scan_warns_with_the_exact_count_when_max_count_hides_rows(tmp_path: Path) -> None:
    p = tmp_path / "steps.log"
    p.write_text("".join(f"step {i}\n" for i in range(1, 1001)))
    r = run("scan", str(p), "-e", "s=step", "-m", "10")
    assert r.exit_code == 0
    assert r.stdout.count(":s:step ") == 10
    assert "990 matching lines not shown" in r.stderr
    r = run("scan", str(p), "-e", "s=step", "-m", "5000")
    assert "not shown" not in r.stderr
    r = run("scan", str(p), "-e", "s=step", "-m", "10", "--no-messages")
    assert "not shown" not in r.stderr
