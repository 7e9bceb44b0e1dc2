"""The verdict does not depend on how a job's logs are packaged.

Real corpus jobs are re-packaged the ways users meet them: copied under
another directory and diagnosed from another working directory, gzipped,
their console alone with every leading timestamp stripped, and one file's
lines re-interleaved with another's (stdout and stderr captured together).
The named rank and the named line's text must not change.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
from pathlib import Path

import pytest
from corpus_eval import _bare, log_files

import denpex_fast as dx

CASES = Path(__file__).parent / "corpus" / "cases"
SAMPLE = [
    "008-sigkill-rank",
    "005-dataset-index-error",
    "014-ckpt-readonly-fs",
    "019-mn-shape-mismatch-forward",
    "023-ds-zero2-batch-config",
    "040-dsl-sigkill",  # the launcher line's printed rank is not the failed one
]
_TS = re.compile(r"^((?:\[(?:default|rank)\d+\]:)*)\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[,.]\d+ ")


def _answer(paths: list[str]) -> tuple[str, int | None, str | None]:
    d = dx.diagnose(paths)
    i = d.initiating
    return (
        d.verdict in ("failure", "suspect") and "named" or d.verdict,
        i.rank if i is not None else d.suspect_rank,
        _bare(i.text) if i is not None else None,
    )


def _copy(case: Path, dest: Path) -> list[str]:
    out = []
    for f in log_files(case):
        rel = os.path.relpath(f, case)
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, dest / rel)
        out.append(str(dest / rel))
    return out


@pytest.mark.parametrize("name", SAMPLE)
def test_copied_elsewhere_and_from_another_cwd(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = CASES / name
    ref = _answer(log_files(case))
    files = _copy(case, tmp_path / "renamed-job")
    monkeypatch.chdir(tmp_path / "renamed-job")
    assert _answer([os.path.relpath(f) for f in files]) == ref


@pytest.mark.parametrize("name", SAMPLE)
def test_gzipped(name: str, tmp_path: Path) -> None:
    case = CASES / name
    ref = _answer(log_files(case))
    gz = []
    for f in _copy(case, tmp_path / "job"):
        with open(f, "rb") as src, gzip.open(f + ".gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.unlink(f)
        gz.append(f + ".gz")
    assert _answer(gz) == ref


@pytest.mark.parametrize(
    "name", ["008-sigkill-rank", "005-dataset-index-error", "014-ckpt-readonly-fs"]
)
def test_console_without_timestamps(name: str, tmp_path: Path) -> None:
    console = CASES / name / "console.log"
    ref = _answer([str(console)])
    stripped = tmp_path / "console.log"
    stripped.write_text(
        "".join(_TS.sub(r"\1", line) for line in console.read_text().splitlines(True))
    )
    assert _answer([str(stripped)]) == ref


def test_reinterleaved_streams(tmp_path: Path) -> None:
    # one rank's stdout and stderr captured into one file in either order
    case = CASES / "005-dataset-index-error"
    ref = _answer(log_files(case))
    files = _copy(case, tmp_path / "job")
    for f in files:
        if f.endswith("stderr.log"):
            out = Path(f).with_name("stdout.log")
            both = Path(f).with_name("combined.log")
            text_out = out.read_text() if out.exists() else ""
            both.write_text(text_out + Path(f).read_text())
            os.unlink(f)
            if out.exists():
                os.unlink(out)
            os.rename(both, f)
    assert _answer([str(p) for p in (tmp_path / "job").rglob("*") if p.is_file()]) == ref


def test_the_named_line_carries_the_rank_the_ranking_chose() -> None:
    # DeepSpeed's launcher prints the last spawned rank's command line
    # (--local_rank=3) whichever rank failed; the rank comes from the one rank
    # whose own output has no error, by path or by label alike
    d = dx.diagnose(log_files(CASES / "040-dsl-sigkill"))
    assert d.initiating is not None and d.initiating.rank == d.suspect_rank == 1
    assert d.to_dict()["initiating"]["rank"] == 1
