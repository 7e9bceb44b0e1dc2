"""The base install (no [index]/[dask] extra) diagnoses jobs, archives included.

The extras' modules are made unimportable in a child interpreter, as on a
machine where only ``pip install denpex_fast`` ran."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

import denpex_fast as dx

SAMPLE = Path(dx.__file__).parent / "samples" / "sample_job"
EXTRAS = ("fsspec", "duckdb", "dask", "distributed", "xxhash")


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    block = "import sys\nfor m in %r: sys.modules[m] = None\n" % (EXTRAS,)  # noqa: UP031
    # cwd outside the source tree: the installed package is the one imported
    return subprocess.run(
        [sys.executable, "-c", block + code], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def test_demo_and_an_archive_without_the_extras(tmp_path: Path) -> None:
    out = _run(
        "from denpex_fast.cli import main\nsys.argv = ['denpex', 'demo']\n"
        "try:\n    main()\nexcept SystemExit as e:\n    sys.exit(e.code)\n",
        tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "torch-matmul-shape-mismatch" in out.stdout
    arch = tmp_path / "job.tar.gz"
    with tarfile.open(arch, "w:gz") as t:
        t.add(SAMPLE, arcname="job")
    out = _run(
        f"import denpex_fast as dx\nd = dx.diagnose({str(arch)!r})\n"
        "print(d.initiating.signature, d.initiating.file)",
        tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["torch-matmul-shape-mismatch", f"{arch}::job/node1/console.log"]
