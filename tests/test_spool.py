"""Stdin and tar archives give the same diagnosis as the files themselves."""

from __future__ import annotations

import gc
import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import denpex_fast as dx
from denpex_fast.io.spool import needs_spool, spool

SAMPLE = Path(dx.__file__).parent / "samples" / "sample_job"


def _key(d) -> tuple:
    i = d.initiating
    return (d.verdict, i.signature, i.line, i.rank, i.ts, round(d.confidence, 3))


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("spool")
    shutil.copytree(SAMPLE, root / "job")
    with tarfile.open(root / "job.tar", "w") as t:
        t.add(root / "job", arcname="job")
    with tarfile.open(root / "job.tar.gz", "w:gz") as t:
        t.add(root / "job", arcname="job")
    return root


def test_tar_and_tar_gz_diagnose_like_the_directory(job: Path) -> None:
    ref = dx.diagnose(str(job / "job"))
    for name in ("job.tar", "job.tar.gz"):
        d = dx.diagnose(str(job / name))
        assert _key(d) == _key(ref), name
        # labels name the member inside the archive, never the private copy
        assert d.initiating.file == f"{job / name}::job/" + os.path.relpath(
            ref.initiating.file, job / "job"
        )
        files = set(d.table.column("file").cast("string").to_pylist())
        assert all("::job/" in f for f in files), files


def test_stdin_diagnoses_like_the_file(job: Path) -> None:
    console = job / "job" / "node1" / "console.log"
    ref = dx.diagnose(str(console))
    out = subprocess.run(
        [sys.executable, "-m", "denpex_fast", "diagnose", "-", "--format", "json"],
        stdin=open(console, "rb"),
        capture_output=True,
        check=False,
        cwd=job,
    )  # outside the source tree: the installed package runs
    assert out.returncode == 1, out.stderr
    d = json.loads(out.stdout)
    i = d["initiating"]
    assert (d["verdict"], i["signature"], i["line"], i["rank"], i["file"]) == (
        ref.verdict,
        ref.initiating.signature,
        ref.initiating.line,
        ref.initiating.rank,
        "-",
    )
    assert i["ts"] == ref.initiating.ts.isoformat()


def test_copies_are_removed_with_the_diagnosis(job: Path) -> None:
    before = set(glob.glob(os.path.join(os.environ.get("TMPDIR", "/tmp"), "denpex-spool-*")))
    d = dx.diagnose(str(job / "job.tar"))
    assert d.initiating is not None
    del d
    gc.collect()
    after = set(glob.glob(os.path.join(os.environ.get("TMPDIR", "/tmp"), "denpex-spool-*")))
    assert after <= before


def test_a_damaged_archive_keeps_the_members_before_the_damage(job: Path, tmp_path: Path) -> None:
    data = (job / "job.tar.gz").read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(data[: len(data) * 2 // 3])
    sp = spool([str(cut)])
    try:
        assert sp.paths, "members before the damage are kept"
        assert sp.errors and sp.errors[-1][0] in (str(cut),) + tuple(sp.labels.values())
    finally:
        shutil.rmtree(sp.directory, ignore_errors=True)
    d = dx.diagnose(str(cut))
    assert d.errors and d.verdict != "no-failure-found"


def test_plain_paths_are_not_copied(job: Path) -> None:
    assert not needs_spool([str(job / "job"), str(job / "job" / "node0" / "console.log")])
    assert needs_spool(["-"]) and needs_spool([str(job / "job.tar")])
