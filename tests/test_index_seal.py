"""The index's seal: a re-index of an unchanged local archive is proven
unchanged by stats alone, and any change to the archive or the index sends
the run down the full path."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from index_helpers import OOM, make_archive

from denpex_fast.batch import seal
from denpex_fast.batch.build import build_index
from denpex_fast.engine.scanner import Scanner


@pytest.fixture(scope="module")
def scanner(tmp_path_factory: pytest.TempPathFactory) -> Scanner:
    return Scanner(cache_dir=tmp_path_factory.mktemp("cache"))


@pytest.fixture
def indexed(tmp_path: Path, scanner: Scanner) -> tuple[Path, Path]:
    root = tmp_path / "archive"
    root.mkdir()
    make_archive(root)
    out = tmp_path / "index"
    assert build_index(str(root), str(out), scanner=scanner, threads=2).ok
    return root, out


def _request(root: Path, out: Path, **kw: object) -> dict[str, object]:
    args: dict[str, object] = dict(job_glob=None, job_regex=None, signatures=None, binary=False)
    args.update(kw)
    return seal.request_key(str(root), str(out), **args)  # type: ignore[arg-type]


def _later(path: Path) -> None:
    """Move a file's modification time on (a rewrite within one clock tick
    keeps it, for the seal as for the full path)."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))


def test_clean_run_seals_and_the_seal_names_every_job(indexed: tuple[Path, Path]) -> None:
    root, out = indexed
    jobs = seal.check(str(root), str(out), _request(root, out))
    assert jobs is not None and sorted(jobs) == ["healthy", "job-a", "job-b", "job-c"]
    assert jobs["job-a"][0] == 3  # files of the job
    # another layout, knowledge base or scan option is another request
    assert seal.check(str(root), str(out), _request(root, out, job_glob="job-*")) is None
    assert seal.check(str(root), str(out), _request(root, out, binary=True)) is None
    assert seal.check(str(root), str(out), _request(root, out, signatures=["x.toml"])) is None


@pytest.mark.parametrize(
    "change",
    ["content", "touch", "new file", "deleted file", "new job", "index partition", "index file"],
)
def test_any_change_breaks_the_seal_and_the_full_path_sees_it(
    indexed: tuple[Path, Path], scanner: Scanner, change: str
) -> None:
    root, out = indexed
    log = root / "job-a" / "node0" / "rank0.log"
    if change == "content":
        log.write_bytes(log.read_bytes() + OOM)
    elif change == "touch":
        _later(log)
    elif change == "new file":
        (root / "job-a" / "node0" / "rank2.log").write_bytes(OOM)
    elif change == "deleted file":
        log.unlink()
    elif change == "new job":
        (root / "job-new").mkdir()
        (root / "job-new" / "rank0.log").write_bytes(OOM)
    elif change == "index partition":
        import shutil

        shutil.rmtree(out / "diagnosis" / "job=healthy")
    else:
        part = next((out / "matches" / "job=job-a").iterdir())
        part.write_bytes(part.read_bytes())
        _later(part)
    assert seal.check(str(root), str(out), _request(root, out)) is None
    again = build_index(str(root), str(out), scanner=scanner, threads=2)
    if change in ("index partition", "index file"):
        assert again.count("unchanged") >= 3
    else:
        assert again.count("unchanged") < len(again.reports)
    # the full run sealed the new state, which holds until the next change
    assert seal.check(str(root), str(out), _request(root, out)) is not None


def test_a_file_changed_during_the_run_is_not_sealed(tmp_path: Path, scanner: Scanner) -> None:
    root = tmp_path / "archive"
    root.mkdir()
    make_archive(root)
    out = tmp_path / "index"

    def change_once(kind: str, data: object) -> None:
        if kind == "job" and not changed:
            changed.append(1)
            _later(root / "healthy" / "rank0.log")

    changed: list[int] = []
    assert build_index(str(root), str(out), scanner=scanner, threads=1, progress=change_once).ok
    assert changed and not (out / seal.SEAL).exists()
    # the next run sees the change, indexes what it must and seals
    assert build_index(str(root), str(out), scanner=scanner, threads=1).ok
    assert seal.check(str(root), str(out), _request(root, out)) is not None


def test_unsealable_trees(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    (root / "job").mkdir(parents=True)
    (root / "job" / "rank0.log").write_bytes(OOM)
    assert seal.walk(str(root)) is not None
    (root / "link").symlink_to(root / "job")
    assert seal.walk(str(root)) is None  # what a link points at is not stat'ed: no seal
    assert seal.walk(str(tmp_path / "missing")) is None
    assert not seal.is_local("s3://bucket/index") and not seal.is_local("memory://x")


def test_corrupt_seal_is_ignored(indexed: tuple[Path, Path]) -> None:
    root, out = indexed
    (out / seal.SEAL).write_text("{not json")
    assert seal.check(str(root), str(out), _request(root, out)) is None
    (out / seal.SEAL).write_text('{"version": 1, "request": 3}')
    assert seal.check(str(root), str(out), _request(root, out)) is None


_CLI_INDEX = textwrap.dedent(
    """
    import sys
    from denpex_fast.cli import main
    try:
        main(["index", *sys.argv[1:]])
    except SystemExit as exc:
        assert exc.code == 0, exc.code
    heavy = [m for m in ("pyarrow", "fsspec", "numpy", "denpex_fast.batch.build") if m in sys.modules]
    print("heavy:", ",".join(heavy))
    """
)


def _cli_index(cwd: Path, *args: str) -> tuple[str, str]:
    """(stdout, stderr) of ``denpex index ARGS`` in a fresh interpreter; the
    last stdout line names the heavy modules it imported."""
    r = subprocess.run(
        [sys.executable, "-c", _CLI_INDEX, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout, r.stderr


def test_cli_reindex_of_a_sealed_archive_imports_no_index_machinery(
    indexed: tuple[Path, Path],
) -> None:
    root, out = indexed
    stdout, stderr = _cli_index(out.parent, str(root), "-o", str(out))
    assert stdout.splitlines()[-1] == "heavy: "
    assert "4 jobs: 0 indexed, 4 unchanged, 0 touched, 0 failed" in stderr + stdout
    # a flag that asks for more than a stat check takes the full path
    stdout, _ = _cli_index(out.parent, str(root), "-o", str(out), "--checksum")
    assert "pyarrow" in stdout.splitlines()[-1]


def test_a_held_writer_lock_takes_the_full_path(indexed: tuple[Path, Path]) -> None:
    from denpex_fast.batch.store import IndexStore

    root, out = indexed
    assert seal.check(str(root), str(out), _request(root, out)) is not None
    with IndexStore(str(out)).writer_lock():
        assert seal.check(str(root), str(out), _request(root, out)) is None
    assert seal.check(str(root), str(out), _request(root, out)) is not None
