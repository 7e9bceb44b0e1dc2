"""`denpex index`: discovery, tar streaming, manifest, incremental and crash-safe commits."""

from __future__ import annotations

import gzip
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import fsspec
import pytest
from click.testing import CliRunner
from index_helpers import FILLER, OOM, comparable, jobs_in, make_archive, tar_bytes

from denpex_fast.batch.build import build_index
from denpex_fast.batch.index import IndexOptions, JobContext
from denpex_fast.batch.query import open_index
from denpex_fast.cli import main
from denpex_fast.engine.scanner import Scanner
from denpex_fast.io.jobs import discover_jobs


@pytest.fixture(scope="module")
def scanner(tmp_path_factory: pytest.TempPathFactory) -> Scanner:
    """The built-in knowledge base, compiled once for the module."""
    return Scanner(cache_dir=tmp_path_factory.mktemp("cache"))


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    root = tmp_path / "archive"
    root.mkdir()
    return make_archive(root)


def _index(archive: Path, out: Path, scanner: Scanner, **kw: object):  # type: ignore[no-untyped-def]
    return build_index(str(archive), str(out), scanner=scanner, threads=2, **kw)  # type: ignore[arg-type]


def _parquet_state(out: Path) -> dict[str, int]:
    return {str(p.relative_to(out)): p.stat().st_mtime_ns for p in out.rglob("*.parquet")}


def test_index_layout_labels_and_manifest(archive: Path, tmp_path: Path, scanner: Scanner) -> None:
    out = tmp_path / "index"
    summary = _index(archive, out, scanner)
    assert summary.ok and summary.count("indexed") == 4
    for name in ("matches", "diagnosis", "rank_fates", "manifest"):
        assert (out / name).is_dir()
    assert {p.name for p in (out / "diagnosis").iterdir()} == {
        "job=job-a",
        "job=job-b",
        "job=job-c",
        "job=healthy",
    }
    ix = open_index(str(out))
    files = set(
        zip(ix.matches().column("job").to_pylist(), ix.matches().column("file").to_pylist())
    )
    assert ("job-a", "node0/rank0.log") in files
    assert ("job-a", "node1/rank1.log.gz") in files
    assert ("job-c", "job-c.tar.gz::logs/rank0.log") in files
    assert ("job-c", "job-c.tar.gz::logs/rank1.log.gz") in files  # compressed member
    man = {(r["job"], r["path"]): r for r in ix.manifest().to_pylist()}
    assert set(man) == {
        ("job-a", "node0/rank0.log"),
        ("job-a", "node1/rank1.log.gz"),
        ("job-a", "launcher.log.zst"),
        ("job-b", "console.log"),
        ("job-c", "job-c.tar.gz"),
        ("healthy", "rank0.log"),
    }
    for r in man.values():
        assert r["status"] == "ok" and r["error"] is None
        assert r["hash"].split(":")[0] in ("xxh3_128", "blake2b")
    assert (
        man[("job-b", "console.log")]["size"] == (archive / "job-b" / "console.log").stat().st_size
    )
    diag = {r["job"]: r for r in ix.diagnosis().to_pylist()}
    assert diag["job-a"]["n_files"] == 3 and diag["job-a"]["n_matches"] > 0
    assert diag["job-b"]["initiating_signature"] is not None
    # 50 step lines and no completion line: progress context only, and no all-clear
    assert (
        diag["healthy"]["initiating_signature"] is None and diag["healthy"]["verdict"] == "stopped"
    )
    assert not (out / ".tmp").exists() and not (out / ".trash").exists()


def test_reindex_unchanged_scans_nothing(archive: Path, tmp_path: Path, scanner: Scanner) -> None:
    out = tmp_path / "index"
    _index(archive, out, scanner)
    before = _parquet_state(out)
    again = _index(archive, out, scanner)
    assert [r.status for r in again.reports] == ["unchanged"] * 4
    assert sum(r.bytes for r in again.reports) == 0
    assert _parquet_state(out) == before  # nothing rewritten


def test_scanner_is_made_only_when_a_job_needs_a_scan(
    archive: Path, tmp_path: Path, scanner: Scanner
) -> None:
    """A function given as ``scanner`` is called once for an archive with
    work, and never for a re-index of an unchanged one (its rows and the
    manifests read back are the same either way)."""
    made: list[int] = []

    def make() -> Scanner:
        made.append(1)
        return scanner

    out = tmp_path / "index"
    first = build_index(str(archive), str(out), scanner=make, threads=2)
    assert made == [1] and {r.status for r in first.reports} == {"indexed"}
    before = _parquet_state(out)
    again = build_index(str(archive), str(out), scanner=make, threads=2)
    assert made == [1]
    assert [r.status for r in again.reports] == ["unchanged"] * 4
    assert _parquet_state(out) == before
    (archive / sorted(os.listdir(archive))[0] / "extra.log").write_text("RuntimeError: boom\n")
    third = build_index(str(archive), str(out), scanner=make, threads=2)
    assert (
        made == [1, 1]
        and sorted(r.status for r in third.reports) == ["indexed"] + ["unchanged"] * 3
    )


def test_changed_file_rescans_only_its_job(archive: Path, tmp_path: Path, scanner: Scanner) -> None:
    out = tmp_path / "index"
    _index(archive, out, scanner)
    first = comparable(open_index(str(out)))
    target = archive / "job-b" / "console.log"
    target.write_bytes(target.read_bytes() + OOM)
    summary = _index(archive, out, scanner)
    status = {r.job: r.status for r in summary.reports}
    assert status == {
        "job-a": "unchanged",
        "job-b": "indexed",
        "job-c": "unchanged",
        "healthy": "unchanged",
    }
    second = comparable(open_index(str(out)))
    for name in ("matches", "rank_fates"):
        assert [r for r in first[name] if r["job"] != "job-b"] == [
            r for r in second[name] if r["job"] != "job-b"
        ]
    man = {r["path"]: r for r in second["manifest"] if r["job"] == "job-b"}
    assert man["console.log"]["size"] == target.stat().st_size


def test_touched_file_same_content_is_not_rescanned(
    archive: Path, tmp_path: Path, scanner: Scanner
) -> None:
    out = tmp_path / "index"
    _index(archive, out, scanner)
    p = archive / "healthy" / "rank0.log"
    os.utime(p, (time.time() + 100, time.time() + 100))
    summary = _index(archive, out, scanner)
    assert {r.job: r.status for r in summary.reports}["healthy"] == "touched"
    assert _index(archive, out, scanner).count("unchanged") == 4  # manifest caught up
    # --checksum notices a same-size, same-mtime edit that the quick check cannot
    st = p.stat()
    p.write_bytes(p.read_bytes().replace(b"loss=1.0", b"loss=2.0"))
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert _index(archive, out, scanner).count("unchanged") == 4
    opts = IndexOptions(checksum=True)
    assert {r.job: r.status for r in _index(archive, out, scanner, options=opts).reports}[
        "healthy"
    ] == "indexed"


def test_new_and_removed_jobs(archive: Path, tmp_path: Path, scanner: Scanner) -> None:
    out = tmp_path / "index"
    _index(archive, out, scanner)
    (archive / "job-d").mkdir()
    (archive / "job-d" / "x.log").write_bytes(OOM)
    os.remove(archive / "job-c.tar.gz")
    summary = _index(archive, out, scanner)
    assert {r.job: r.status for r in summary.reports}["job-d"] == "indexed"
    assert "job-c" in open_index(str(out)).jobs()  # kept without --prune
    summary = _index(archive, out, scanner, prune=True)
    assert summary.pruned == ["job-c"]
    ix = open_index(str(out))
    assert "job-c" not in ix.jobs() and "job-c" not in jobs_in(ix.matches())


def test_corrupt_gzip_recorded_rest_of_job_indexed(
    archive: Path, tmp_path: Path, scanner: Scanner
) -> None:
    good = gzip.compress(FILLER + OOM + FILLER * 200)
    (archive / "job-a" / "broken.log.gz").write_bytes(good[: len(good) // 2])
    (archive / "job-a" / "garbage.log.gz").write_bytes(b"\x1f\x8b\x08\x00" + b"\xff" * 300)
    out = tmp_path / "index"
    summary = _index(archive, out, scanner)
    assert summary.ok
    ix = open_index(str(out))
    man = {r["path"]: r for r in ix.manifest().to_pylist() if r["job"] == "job-a"}
    assert man["broken.log.gz"]["status"] == "error"
    assert "corrupt" in man["broken.log.gz"]["error"]
    assert man["garbage.log.gz"]["status"] == "error"
    assert man["node0/rank0.log"]["status"] == "ok"
    files = set(ix.matches().column("file").to_pylist())
    assert "node0/rank0.log" in files and "broken.log.gz" in files  # rows before the damage
    diag = {r["job"]: r for r in ix.diagnosis().to_pylist()}
    assert diag["job-a"]["n_file_errors"] == 2
    # an unchanged broken file is not retried unless asked
    assert _index(archive, out, scanner).count("unchanged") == 4
    again = _index(archive, out, scanner, options=IndexOptions(retry_errors=True))
    assert {r.job: r.status for r in again.reports}["job-a"] == "indexed"


def test_tar_member_names_are_only_labels(tmp_path: Path, scanner: Scanner) -> None:
    root = tmp_path / "root" / "archive"
    root.mkdir(parents=True)
    evil = {
        "../../escaped.log": OOM,
        "/tmp/denpex-absolute-member.log": OOM,
        "ok/../../../up.log": OOM,
        "fine.log": OOM,
    }
    (root / "job-x.tar").write_bytes(tar_bytes(evil, compress=False))
    (root / "job-y").mkdir()
    (root / "job-y" / "logs.tgz").write_bytes(tar_bytes(evil))
    before = set(tmp_path.rglob("*"))
    out = tmp_path / "index"
    assert _index(root, out, scanner).ok
    created = set(tmp_path.rglob("*")) - before
    assert all(p == out or out in p.parents for p in created), created
    assert not Path("/tmp/denpex-absolute-member.log").exists()
    files = set(open_index(str(out)).matches().column("file").to_pylist())
    for name in evil:
        assert f"job-x.tar::{name}" in files
        assert f"logs.tgz::{name}" in files


def test_damaged_tar_keeps_members_before(tmp_path: Path, scanner: Scanner) -> None:
    root = tmp_path / "archive"
    root.mkdir()
    data = tar_bytes({"a.log": OOM, "b.log": FILLER * 2000 + OOM}, compress=False)
    (root / "job-t.tar").write_bytes(data[: len(data) - 60_000])
    out = tmp_path / "index"
    assert _index(root, out, scanner).ok
    ix = open_index(str(out))
    assert "job-t.tar::a.log" in set(ix.matches().column("file").to_pylist())
    (row,) = ix.manifest().to_pylist()
    assert row["status"] == "error" and row["error"]


def test_job_glob_and_regex(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    for d in ("2024/slurm-11/n0", "2024/slurm-12", "2025/slurm-13", "2025/notes"):
        (root / d).mkdir(parents=True)
    for d in ("2024/slurm-11/n0", "2024/slurm-12", "2025/slurm-13", "2025/notes"):
        (root / d / "r.log").write_bytes(OOM)
    (root / "2025" / "slurm-14.tar.gz").write_bytes(tar_bytes({"r.log": OOM}))
    assert [j.name for j in discover_jobs(str(root))] == ["2024", "2025"]
    jobs = discover_jobs(str(root), job_glob="*/slurm-*")
    assert [j.name for j in jobs] == [
        "2024/slurm-11",
        "2024/slurm-12",
        "2025/slurm-13",
        "2025/slurm-14",
    ]
    assert [f.rel for f in jobs[0].files] == ["n0/r.log"]
    jobs = discover_jobs(str(root), job_regex=r"\d{4}/slurm-(?P<job>\d+)")
    assert [j.name for j in jobs] == ["11", "12", "13", "14"]
    with pytest.raises(ValueError, match="job"):
        discover_jobs(str(root), job_regex=r"\d{4}/slurm-\d+")


def test_job_names_with_odd_characters(tmp_path: Path, scanner: Scanner) -> None:
    root = tmp_path / "archive"
    (root / "a b=c%d").mkdir(parents=True)
    (root / "a b=c%d" / "r.log").write_bytes(OOM)
    out = tmp_path / "index"
    _index(root, out, scanner)
    ix = open_index(str(out))
    assert ix.jobs() == ["a b=c%d"]
    assert ix.sql("select distinct job from matches").column("job").to_pylist() == ["a b=c%d"]
    assert _index(root, out, scanner).count("unchanged") == 1


def test_memory_input_and_output(scanner: Scanner) -> None:
    fs = fsspec.filesystem("memory")
    fs.pipe("/mem-in/j1/node0/rank0.log", FILLER + OOM)
    fs.pipe("/mem-in/j2/rank1.log.gz", gzip.compress(FILLER + OOM))
    fs.pipe("/mem-in/j3.tar.gz", tar_bytes({"logs/r.log": OOM}))
    try:
        summary = build_index("memory://mem-in", "memory://mem-out", scanner=scanner)
        assert summary.ok and summary.count("indexed") == 3
        assert fs.exists("/mem-out/matches/job=j1")
        ix = open_index("memory://mem-out")
        files = set(
            zip(ix.matches().column("job").to_pylist(), ix.matches().column("file").to_pylist())
        )
        assert files == {
            ("j1", "node0/rank0.log"),
            ("j2", "rank1.log.gz"),
            ("j3", "j3.tar.gz::logs/r.log"),
        }
        assert all(r["status"] == "ok" for r in ix.manifest().to_pylist())
        assert (
            build_index("memory://mem-in", "memory://mem-out", scanner=scanner).count("unchanged")
            == 3
        )
        fs.pipe("/mem-in/j2/rank1.log.gz", gzip.compress(OOM))
        again = build_index("memory://mem-in", "memory://mem-out", scanner=scanner)
        assert {r.job: r.status for r in again.reports}["j2"] == "indexed"
        assert ix.sql("select count(*) as n from diagnosis").column("n")[0].as_py() == 3
    finally:
        for p in ("/mem-in", "/mem-out"):
            if fs.exists(p):
                fs.rm(p, recursive=True)


def test_process_pool_index_equals_thread_index(tmp_path: Path, scanner: Scanner) -> None:
    root = tmp_path / "archive"
    root.mkdir()
    make_archive(root, n_extra=4)
    by_threads, by_procs = tmp_path / "threads", tmp_path / "procs"
    assert build_index(str(root), str(by_threads), scanner=scanner, threads=2).ok
    summary = build_index(str(root), str(by_procs), scanner=scanner, processes=2)
    assert summary.ok and summary.count("indexed") == 8
    assert comparable(open_index(str(by_procs))) == comparable(open_index(str(by_threads)))
    assert not (by_procs / ".tmp").exists() and not (by_procs / ".trash").exists()
    assert not any((by_procs / ".pending").iterdir())
    # incremental: unchanged jobs are settled without starting a worker
    assert (
        build_index(str(root), str(by_procs), scanner=scanner, processes=2).count("unchanged") == 8
    )
    (root / "job-b" / "console.log").write_bytes(FILLER + OOM)
    again = build_index(str(root), str(by_procs), scanner=scanner, processes=2)
    assert {r.job: r.status for r in again.reports if r.status != "unchanged"} == {
        "job-b": "indexed"
    }
    assert build_index(str(root), str(by_threads), scanner=scanner, threads=2).count("indexed") == 1
    assert comparable(open_index(str(by_procs))) == comparable(open_index(str(by_threads)))
    with pytest.raises(ValueError, match="not two"):
        build_index(str(root), str(by_procs), scanner=scanner, processes=2, threads=2)
    fs = fsspec.filesystem("memory")
    fs.pipe("/mem-procs/j1/rank0.log", OOM)
    try:
        with pytest.raises(ValueError, match="memory://"):
            build_index("memory://mem-procs", str(tmp_path / "ix"), scanner=scanner, processes=2)
    finally:
        fs.rm("/mem-procs", recursive=True)


def test_worker_process_indexes_without_importing_pandas(tmp_path: Path, scanner: Scanner) -> None:
    # pyarrow imports pandas (~0.25 s) on its first Python conversion; a
    # worker never hands it a DataFrame, so its start-up refuses pandas before
    # unpickling the context imports the scanner, and its job still commits
    root = tmp_path / "archive"
    root.mkdir()
    make_archive(root)
    ctx = JobContext(scanner, str(tmp_path / "ix"), None, IndexOptions(), {}, scanner.signature_set)
    (tmp_path / "ctx.pickle").write_bytes(pickle.dumps(ctx))
    code = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from denpex_fast.batch import executors
        from denpex_fast.io.jobs import discover_jobs

        executors._init_worker(sys.argv[2])
        report = executors._index_job_in_worker(discover_jobs(sys.argv[1])[0], None)
        assert report.status == "indexed", report
        assert "pandas" not in sys.modules
        print("ok", report.job)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(root), str(tmp_path / "ctx.pickle")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok ")


def test_a_worker_that_dies_as_it_starts_fails_its_jobs_instead_of_hanging(tmp_path: Path) -> None:
    # a script without a __main__ guard: each spawned worker imports it again
    # and dies in that import, before it has read its start-up arguments
    root = tmp_path / "archive"
    root.mkdir()
    make_archive(root, n_extra=4)
    script = tmp_path / "unguarded.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from denpex_fast.batch.build import build_index
            # (no guard: the worker runs this again and dies on the index's lock)
            s = build_index({str(root)!r}, {str(tmp_path / "ix")!r}, processes=1)
            print("statuses", sorted({{r.status for r in s.reports}}))
            print("errors", [r.error for r in s.reports if r.error][:1])
            """
        )
    )
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert "statuses ['failed']" in out.stdout, out.stdout + out.stderr
    assert "worker process died" in out.stdout and "__main__" in out.stdout


def test_auto_picks_processes_only_when_the_work_pays_for_them(
    tmp_path: Path,
    scanner: Scanner,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import logging

    from denpex_fast.batch import build

    monkeypatch.setattr("denpex_fast.engine.scanner.default_threads", lambda: 2)
    root = tmp_path / "archive"
    root.mkdir()
    make_archive(root, n_extra=4)  # 8 jobs of a few KiB
    caplog.set_level(logging.INFO, logger="denpex_fast")
    small = build_index(str(root), str(tmp_path / "small"), scanner=scanner, processes="auto")
    assert small.ok and small.count("indexed") == 8
    assert "worker process" not in caplog.text  # too little work: threads
    monkeypatch.setattr(build, "PROCESSES_FROM_BYTES", 1)
    caplog.clear()
    events: list[str] = []
    big = build_index(
        str(root),
        str(tmp_path / "big"),
        scanner=scanner,
        processes="auto",
        progress=lambda kind, _: events.append(kind),
    )
    assert big.ok and big.count("indexed") == 8
    assert "this process and 1 worker process" in caplog.text
    # the worker is handed its first jobs before this process takes any; per-file
    # progress comes only from the jobs indexed here
    files_here, files = events.count("file"), sum(r.files for r in big.reports)
    assert 0 < files_here < files, (files_here, files)
    assert comparable(open_index(str(tmp_path / "big"))) == comparable(
        open_index(str(tmp_path / "small"))
    )
    # nothing new to index: no worker starts
    caplog.clear()
    again = build_index(str(root), str(tmp_path / "big"), scanner=scanner, processes="auto")
    assert again.count("unchanged") == 8 and "worker process" not in caplog.text


def test_a_worker_killed_mid_run_fails_its_jobs_and_a_rerun_completes(
    tmp_path: Path, scanner: Scanner, monkeypatch: pytest.MonkeyPatch
) -> None:
    import multiprocessing

    from denpex_fast.batch import build

    monkeypatch.setattr("denpex_fast.engine.scanner.default_threads", lambda: 2)
    monkeypatch.setattr(build, "PROCESSES_FROM_BYTES", 1)
    root = tmp_path / "archive"
    root.mkdir()
    make_archive(root, n_extra=10)
    reference = tmp_path / "reference"
    build_index(str(root), str(reference), scanner=scanner, threads=1)
    killed: list[int] = []

    def kill_the_worker(kind: str, _: object) -> None:
        if kind == "job" and not killed:
            for child in multiprocessing.active_children():
                os.kill(child.pid, signal.SIGKILL)  # type: ignore[arg-type]
                killed.append(child.pid)  # type: ignore[arg-type]

    out = tmp_path / "index"
    first = build_index(
        str(root), str(out), scanner=scanner, processes="auto", progress=kill_the_worker
    )
    assert killed
    names = [r.job for r in first.reports]
    assert sorted(names) == sorted(set(names)) and len(names) == 14  # each job once
    failed = [r for r in first.reports if r.status == "failed"]
    assert failed and not first.ok
    assert all("worker process died" in (r.error or "") for r in failed), failed
    again = build_index(str(root), str(out), scanner=scanner, threads=2)
    assert again.ok and again.count("indexed") == len(failed)
    assert comparable(open_index(str(out))) == comparable(open_index(str(reference)))


def test_signature_set_pickles_for_workers() -> None:
    import pickle

    from denpex_fast.kb.signatures import load_signatures

    kb = load_signatures()
    back = pickle.loads(pickle.dumps(kb))
    assert back.ids == kb.ids and list(back) == list(kb)
    with_fields = next(s for s in kb if s.fields)
    assert back[with_fields.id].fields == with_fields.fields
    with pytest.raises(TypeError):  # still read-only after the round trip
        back[with_fields.id].fields["x"] = "y"  # type: ignore[index]


def test_index_does_not_read_itself(tmp_path: Path, scanner: Scanner) -> None:
    root = tmp_path / "archive"
    root.mkdir()
    make_archive(root)
    out = root / "the-index"
    assert _index(root, out, scanner).count("indexed") == 4
    assert _index(root, out, scanner).count("unchanged") == 4


# -- crash safety: a real process killed with SIGKILL -------------------------

CHILD = textwrap.dedent("""
    import os, signal, sys
    from denpex_fast import index as ix
    from denpex_fast.engine.scanner import Scanner
    root, out, cache, kill_at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    n = [0]
    real = ix.IndexStore._rename
    def rename(self, src, dst):
        n[0] += 1
        if n[0] == kill_at:  # die between two renames of one job's commit
            os.kill(os.getpid(), signal.SIGKILL)
        real(self, src, dst)
    ix.IndexStore._rename = rename
    ix.build_index(root, out, scanner=Scanner(cache_dir=cache), threads=1)
""")


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


@pytest.mark.parametrize("kill_at", [1, 2, 7, 14])
def test_sigkill_mid_commit_then_rerun_is_complete(
    tmp_path: Path, scanner: Scanner, kill_at: int
) -> None:
    root = tmp_path / "archive"
    root.mkdir()
    make_archive(root, n_extra=6)
    reference = tmp_path / "reference"
    build_index(str(root), str(reference), scanner=scanner, threads=1)
    out = tmp_path / "index"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    proc = subprocess.run(
        [sys.executable, str(script), str(root), str(out), str(tmp_path / "cache"), str(kill_at)],
        env=_child_env(),
        cwd=tmp_path,
        capture_output=True,
        timeout=300,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    assert (out / ".pending").is_dir() and any((out / ".pending").iterdir())
    summary = build_index(str(root), str(out), scanner=scanner, threads=2)
    assert summary.ok
    assert comparable(open_index(str(out))) == comparable(open_index(str(reference)))
    assert not any((out / ".pending").iterdir())
    assert not (out / ".tmp").exists() and not (out / ".trash").exists()


def test_sigkill_at_a_random_moment(tmp_path: Path, scanner: Scanner) -> None:
    root = tmp_path / "archive"
    root.mkdir()
    make_archive(root, n_extra=40)
    out = tmp_path / "index"
    code = (
        "import sys; from denpex_fast.batch.build import build_index; "
        "from denpex_fast.engine.scanner import Scanner; "
        "build_index(sys.argv[1], sys.argv[2], scanner=Scanner(cache_dir=sys.argv[3]), "
        "threads=2)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(root), str(out), str(tmp_path / "cache")],
        env=_child_env(),
        cwd=tmp_path,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        d = out / "diagnosis"
        if d.is_dir() and len(list(d.iterdir())) >= 5:
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    summary = build_index(str(root), str(out), scanner=scanner, threads=2)
    assert summary.ok
    assert summary.count("indexed") >= 1 or proc.returncode == 0
    reference = tmp_path / "reference"
    build_index(str(root), str(reference), scanner=scanner)
    assert comparable(open_index(str(out))) == comparable(open_index(str(reference)))


def test_cli_index(archive: Path, tmp_path: Path) -> None:
    out = tmp_path / "index"
    runner = CliRunner()
    res = runner.invoke(main, ["index", str(archive), "-o", str(out), "-j", "2"])
    assert res.exit_code == 0, res.output
    assert "4 indexed" in res.output
    res = runner.invoke(main, ["index", str(archive), "-o", str(out), "-q"])
    assert res.exit_code == 0 and res.output == ""
    res = runner.invoke(
        main, ["index", str(archive), "-o", str(out), "--job-glob", "*", "--job-regex", "x"]
    )
    assert res.exit_code == 2
    res = runner.invoke(main, ["index", str(archive), "-o", str(out), "-j", "2", "-p", "2"])
    assert res.exit_code == 2 and "not two" in res.output
    res = runner.invoke(main, ["index", str(archive), "-o", str(out), "-p", "2", "--force"])
    assert res.exit_code == 0 and "4 indexed" in res.output, res.output


def test_manifests_come_from_one_snapshot_taken_of_what_is_committed(
    archive: Path, tmp_path: Path, scanner: Scanner
) -> None:
    """A re-index reads the manifest rows from one snapshot file when it was
    taken of exactly the committed manifest files; a torn snapshot or one of
    another state is never trusted (the per-job files are read instead)."""
    from denpex_fast.batch.build import previous_manifests
    from denpex_fast.batch.store import SNAPSHOT, IndexStore

    out = tmp_path / "index"
    _index(archive, out, scanner)
    store = IndexStore(str(out))
    snap = out / SNAPSHOT
    assert snap.is_file()
    from_snapshot = previous_manifests(store)
    snap.unlink()
    from_files = previous_manifests(store)  # and the snapshot is taken again
    assert from_snapshot == from_files and sum(map(len, from_files.values())) > 0
    assert snap.is_file()
    # a torn snapshot: the per-job files answer, the same rows
    snap.write_bytes(snap.read_bytes()[:100])
    assert previous_manifests(store) == from_files
    # one job changed: the old snapshot does not answer for the new state
    job = sorted(os.listdir(archive))[0]
    (archive / job / "extra.log").write_text("RuntimeError: boom\n")
    third = _index(archive, out, scanner)
    assert {r.status for r in third.reports} == {"unchanged", "indexed"}
    rows = previous_manifests(store)[job]
    assert "extra.log" in {r["path"] for r in rows}
    assert not (out / ".tmp").exists()
    # that run's snapshot reused the rows of the jobs it did not touch: the
    # same rows as reading every job's manifest again
    refreshed = previous_manifests(store)
    snap.unlink()
    assert previous_manifests(store) == refreshed
