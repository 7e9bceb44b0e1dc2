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
    # shaped like rg --json: path.text, lines.text, submatches with byte offsets
    assert msgs[0]["data"]["path"] == {"text": str(log)} == m["path"]
    line = m["lines"]["text"]
    assert line == "[rank2]: CUDA out of memory. Tried\n"
    (sub,) = m["submatches"]
    assert sub["match"]["text"] == "CUDA out of memory"
    assert line.encode()[sub["start"] : sub["end"]] == b"CUDA out of memory"


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


@pytest.fixture
def ctx_log(tmp_path: Path) -> Path:
    p = tmp_path / "ctx.log"
    lines = ["a", "b", "RuntimeError: boom", "c", "d", "e", "f", "NCCL WARN x", "g"]
    p.write_text("\n".join(lines) + "\n")
    return p


def test_context_lines_like_ripgrep(ctx_log: Path) -> None:
    r = run("scan", str(ctx_log), "-e", "err=RuntimeError", "-e", "warn=NCCL WARN", "-C", "1")
    p = str(ctx_log)
    assert r.stdout.splitlines() == [
        f"{p}-2-b",
        f"{p}:3:err:RuntimeError: boom",
        f"{p}-4-c",
        "--",
        f"{p}-7-f",
        f"{p}:8:warn:NCCL WARN x",
        f"{p}-9-g",
    ]
    # -A only, and context that touches the next match is not printed twice
    r = run("scan", str(ctx_log), "-e", "err=RuntimeError", "-e", "c=^c$", "-A", "2")
    assert r.stdout.splitlines() == [
        f"{p}:3:err:RuntimeError: boom",
        f"{p}:4:c:c",
        f"{p}-5-d",
        f"{p}-6-e",
    ]


def test_count_and_files_with_matches(ctx_log: Path, tmp_path: Path) -> None:
    other = tmp_path / "none.log"
    other.write_text("nothing here\n")
    many = tmp_path / "many.log"
    many.write_text("boom boom\n" * 50)
    args = ["-e", "a=boom", "-e", "b=boom boom"]  # one line, two signatures: counted once
    r = run("scan", str(ctx_log), str(other), str(many), *args, "-c", "-m", "1")
    assert r.stdout.splitlines() == [f"{ctx_log}:1", f"{many}:50"]  # exact despite -m 1
    r = run("scan", str(many), *args, "-c")
    assert r.stdout == "50\n"  # one input: just the number, as rg
    r = run("scan", str(ctx_log), str(other), str(many), *args, "-l")
    assert r.stdout.splitlines() == [str(ctx_log), str(many)]


def test_fixed_strings_and_word_regexp(tmp_path: Path) -> None:
    p = tmp_path / "f.log"
    p.write_text("loss is nan (1+1)\nmemory error\nmemoryless\n")
    assert run("scan", str(p), "-e", "x=(1+1)").exit_code == 1  # a regex: + repeats the 1
    r = run("scan", str(p), "-F", "-e", "x=(1+1)")
    assert r.stdout.splitlines() == [f"{p}:1:x:loss is nan (1+1)"]
    r = run("scan", str(p), "-w", "-e", "m=memory")
    assert r.stdout.splitlines() == [f"{p}:2:m:memory error"]


def test_glob_filters_files_found_in_directories(tmp_path: Path) -> None:
    for name in ("rank0.log", "rank1.log", "notes.txt"):
        (tmp_path / name).write_text("CUDA out of memory\n")
    r = run("scan", str(tmp_path), "-e", "oom=out of memory", "-l", "-g", "*.log", "-g", "!rank1*")
    assert r.stdout.splitlines() == [str(tmp_path / "rank0.log")]
    # a file named on the command line is always read
    r = run("scan", str(tmp_path / "notes.txt"), "-e", "oom=out of memory", "-l", "-g", "*.log")
    assert r.stdout.splitlines() == [str(tmp_path / "notes.txt")]


def test_color_heading_and_highlight(ctx_log: Path) -> None:
    r = run("scan", str(ctx_log), "-e", "err=boom", "--color", "always", "--heading")
    assert r.stdout.splitlines() == [
        f"\x1b[35m{ctx_log}\x1b[0m",
        "\x1b[32m3\x1b[0m:err:RuntimeError: \x1b[1;31mboom\x1b[0m",
    ]
    r = run("scan", str(ctx_log), "-e", "err=boom", "--color", "never")
    assert "\x1b" not in r.stdout  # and never when piped (the default, auto)
    assert "\x1b" not in run("scan", str(ctx_log), "-e", "err=boom").stdout


def test_scan_and_diagnose_do_not_import_pandas(log: Path) -> None:
    # pyarrow would import pandas (~0.15 s of start-up) on its first Python
    # conversion; the commands keep it out, and pandas still imports afterwards
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from denpex_fast.cli import main\n"
        "for args in (['scan', sys.argv[1], '-e', 'oom=out of memory'], ['diagnose', sys.argv[1]]):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit as exc:\n"
        "        assert exc.code in (0, 1), (args, exc.code)\n"
        "    assert 'pandas' not in sys.modules, args\n"
        "import pandas\n"
        "import pyarrow as pa\n"
        "print(pa.table({'a': [1]}).to_pandas().shape)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(log)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=log.parent,  # outside the source tree: the installed package runs
    )
    assert out.returncode == 0, out.stderr
    assert ":oom:" in out.stdout  # the scan printed its row
    assert out.stdout.strip().endswith("(1, 1)")


def test_escape_sequences_in_logs_never_reach_the_terminal(tmp_path: Path) -> None:
    # an OSC 52 clipboard write and a colour change inside a log line
    p = tmp_path / "evil.log"
    evil = "RuntimeError: boom \x1b]52;c;ZXZpbA==\x07 \x1b[31mred\r"
    p.write_bytes((evil + "\n").encode())
    for args in ([], ["--color", "always", "--heading"], ["-C", "1"]):
        r = run("scan", str(p), "-e", "err=boom", *args)
        assert "\x07" not in r.stdout and "]52;" in r.stdout
        assert "\\x1b]52;c;ZXZpbA==\\x07" in r.stdout
    # JSON keeps the exact text
    r = run("scan", str(p), "-e", "err=boom", "--json")
    m = [json.loads(x) for x in r.stdout.splitlines()][1]["data"]
    assert m["lines"]["text"].startswith("RuntimeError: boom \x1b]52;c;ZXZpbA==\x07")
    # the diagnosis report too
    r = run("diagnose", str(p))
    assert "\x1b]52" not in r.stdout and "\\x1b]52;c;ZXZpbA==\\x07" in r.stdout


def test_project_defaults_from_pyproject(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log: Path
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.denpex_fast.defaults.scan]\nmax-count = 1\njson = true\n"
    )
    monkeypatch.chdir(tmp_path)
    r = run("scan", str(log), "-e", "oom=CUDA out of memory")
    assert json.loads(r.stdout.splitlines()[0])["type"] == "begin"  # json = true applied
    r = run("scan", str(log), "-e", "oom=CUDA out of memory", "-o", str(tmp_path / "x.csv"))
    assert r.exit_code == 0  # the command line still wins where it speaks
    (tmp_path / "pyproject.toml").write_text("[tool.denpex_fast.defaults.scan]\nmax-cuont = 1\n")
    r = CliRunner().invoke(main, ["scan", str(log)])
    assert r.exit_code == 2 and "scan has no option --max-cuont" in r.output
    assert "pyproject.toml" in r.output


def test_verbose_logs_the_steps(log: Path) -> None:
    r = run("-v", "diagnose", str(log))
    assert "denpex_fast.engine.scanner: scanned 1 file(s)" in r.stderr
    assert "denpex_fast.analysis.diagnosis: ranked" in r.stderr
    assert "denpex_fast" not in run("diagnose", str(log)).stderr  # quiet by default


def test_diagnose_uses_the_signatures_given(tmp_path: Path) -> None:
    # an extra knowledge-base entry reaches the diagnosis (its role and fix),
    # through the scanner the command builds for it
    sig = tmp_path / "sigs" / "mine.toml"
    sig.parent.mkdir()
    sig.write_text(
        'schema = "denpex.signatures/1"\nfamily = "mine"\n\n[[signature]]\n'
        'id = "mine-flux-capacitor"\ntitle = "Flux capacitor drained"\nframework = "mine"\n'
        'phase = "compute"\nrole = "cause"\nseverity = "fatal"\n'
        "patterns = ['flux capacitor drained']\n"
        'root_cause = "The flux capacitor ran dry."\nfix = "Refill the flux capacitor."\n'
        'verify = "flux-check passes"\nchecklist = ["check the flux"]\n'
        'references = ["https://example.org/flux"]\n'
        'examples.match = ["flux capacitor drained"]\nexamples.nomatch = ["flux ok"]\n'
    )
    job = tmp_path / "job"
    job.mkdir()
    (job / "rank0.log").write_text("step 1 ok\nstep 2 ok\n[rank0]: flux capacitor drained\n")
    r = run("diagnose", str(job), "--signatures", str(sig.parent), "--format", "json")
    doc = json.loads(r.stdout)
    assert doc["fix_id"] == "mine-flux-capacitor", r.stdout[:500]
    assert doc["initiating"]["line"] == 3


def test_the_command_exits_without_losing_output_or_leaving_temporary_files(
    tmp_path: Path,
) -> None:
    """``python -m denpex_fast`` leaves through ``os._exit`` (Arrow can abort a
    process at interpreter teardown); its output must still be complete and
    the temporary copies of stdin removed."""
    import subprocess
    import sys

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    big = "".join(f"[rank{i % 8}]: CUDA out of memory. Tried {i}\n" for i in range(20_000))
    env = {**os.environ, "TMPDIR": str(tmp)}
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "denpex_fast",
            "scan",
            "-",
            "-e",
            "oom=CUDA out of memory",
            "--max-count",
            "100000",
        ],
        input=big.encode(),
        capture_output=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.decode().splitlines()) == 20_000
    d = subprocess.run(
        [sys.executable, "-m", "denpex_fast", "diagnose", "-"],
        input=LOG,
        capture_output=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert d.returncode in (0, 1), d.stderr
    assert b"rank" in d.stdout
    assert list(tmp.iterdir()) == []  # the spooled stdin is gone
    bad = subprocess.run(
        [sys.executable, "-m", "denpex_fast", "scan", str(tmp_path / "missing.log"), "-e", "x=y"],
        capture_output=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert bad.returncode == 2 and b"missing.log" in bad.stderr


def test_the_command_keeps_numpys_blas_to_one_thread_unless_told(tmp_path: Path) -> None:
    """OpenBLAS would start a spinning thread per core beside the scanning
    threads; the command sets one thread before numpy loads, and a value the
    user set stays theirs."""
    import os
    import subprocess
    import sys

    job = tmp_path / "job.log"
    job.write_text("RuntimeError: CUDA error: an illegal memory access was encountered\n")
    probe = (
        "import atexit, os, sys\n"
        "atexit.register(lambda: print('BLAS', os.environ.get('OPENBLAS_NUM_THREADS'),"
        " 'numpy' in sys.modules, file=sys.stderr))\n"
        f"sys.argv = ['denpex', 'scan', '-q', {str(job)!r}]\n"
        "from denpex_fast.cli import run\n"
        "run()\n"
    )
    for given, expected in ((None, "1"), ("3", "3")):
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
        if given is not None:
            env["OPENBLAS_NUM_THREADS"] = given
        # run from the job's folder: `-c` puts the working directory first on
        # sys.path, and a source checkout there has no built extension
        r = subprocess.run(
            [sys.executable, "-c", probe],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        assert f"BLAS {expected} True" in r.stderr
