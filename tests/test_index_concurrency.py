"""One writer per index, readers see whole jobs only, workers die with the parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
from index_helpers import comparable, make_archive

from denpex_fast.batch.build import build_index
from denpex_fast.batch.query import open_index
from denpex_fast.batch.store import IndexLockedError, IndexStore
from denpex_fast.engine.scanner import Scanner


@pytest.fixture(scope="module")
def scanner(tmp_path_factory: pytest.TempPathFactory) -> Scanner:
    return Scanner(cache_dir=tmp_path_factory.mktemp("cache"))


def test_a_second_writer_stops_naming_the_first(tmp_path: Path, scanner: Scanner) -> None:
    (tmp_path / "archive").mkdir()
    root = make_archive(tmp_path / "archive")
    store = IndexStore(str(tmp_path / "idx"))
    store.fs.makedirs(store.root, exist_ok=True)
    with store.writer_lock():
        with pytest.raises(IndexLockedError, match=f"pid {os.getpid()} on "):
            build_index(str(root), str(tmp_path / "idx"), scanner=scanner, threads=1)
        t0 = time.monotonic()
        with pytest.raises(IndexLockedError):
            build_index(
                str(root), str(tmp_path / "idx"), scanner=scanner, threads=1, lock_timeout=0.6
            )
        assert time.monotonic() - t0 >= 0.5  # it waited before giving up
    # released: the run goes through
    assert build_index(str(root), str(tmp_path / "idx"), scanner=scanner, threads=1).ok


def test_two_concurrent_cli_writers_never_damage_the_index(
    tmp_path: Path, scanner: Scanner
) -> None:
    root = tmp_path / "archive"
    root.mkdir()
    make_archive(root, n_extra=6)
    ref = tmp_path / "ref"
    assert build_index(str(root), str(ref), scanner=scanner, threads=2).ok
    idx = tmp_path / "idx"
    cmd = [sys.executable, "-m", "denpex_fast", "index", str(root), "-o", str(idx), "-q"]
    # both started at once: whichever takes the lock first writes, the other waits for it
    a = subprocess.Popen(cmd + ["--wait", "120"], cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    b = subprocess.Popen(cmd + ["--wait", "120"], cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    assert a.wait(timeout=300) == 0, a.stderr.read() if a.stderr else ""
    assert b.wait(timeout=300) == 0, b.stderr.read() if b.stderr else ""
    assert comparable(open_index(str(idx))) == comparable(open_index(str(ref)))
    # without --wait the second writer stops with one line naming the first
    store = IndexStore(str(idx))
    with store.writer_lock():
        out = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "another denpex index is writing this index (pid" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_readers_see_only_jobs_whose_commit_completed(tmp_path: Path, scanner: Scanner) -> None:
    root = tmp_path / "archive"
    root.mkdir()
    make_archive(root)
    idx = tmp_path / "idx"
    assert build_index(str(root), str(idx), scanner=scanner, threads=2).ok
    ix = open_index(str(idx))
    jobs = set(ix.jobs())
    rows = ix.matches().num_rows
    # a run that died after writing a job's matches and before its diagnosis
    store = IndexStore(str(idx))
    half = ix.matches().slice(0, 3).drop_columns(["job"])
    store.commit("ghost", {"matches": half})
    ix2 = open_index(str(idx))
    assert set(ix2.jobs()) == jobs
    assert ix2.matches().num_rows == rows
    assert "ghost" not in set(ix2.matches().column("job").to_pylist())
    n = ix2.sql("select count(*) as n from matches where job = 'ghost'").column("n")[0].as_py()
    assert n == 0
    assert ix2.sql("select count(*) as n from matches").column("n")[0].as_py() == rows
    assert isinstance(ix2.diagnosis(), pa.Table)


def _children(pid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(d))
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")
def test_workers_die_with_a_killed_parent(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    root.mkdir()
    make_archive(root, n_extra=40)
    cmd = [
        sys.executable,
        "-m",
        "denpex_fast",
        "index",
        str(root),
        "-o",
        str(tmp_path / "idx"),
        "-q",
        "-p",
        "2",
    ]
    parent = subprocess.Popen(cmd, cwd=tmp_path, stderr=subprocess.DEVNULL)
    workers: list[int] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and parent.poll() is None:
        kids = _children(parent.pid)
        # the two pool workers (the resource tracker is a child too)
        if len(kids) >= 3:
            workers = kids
            break
        time.sleep(0.05)
    if parent.poll() is not None:
        pytest.skip("the run finished before its workers could be seen")
    assert workers, "no worker processes appeared"
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.1)
    assert not [w for w in workers if _alive(w)], "workers outlived their parent"
