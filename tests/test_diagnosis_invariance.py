"""The verdict does not depend on how a job's logs are packaged.

Real corpus jobs are re-packaged the ways users meet them: copied under
another directory and diagnosed from another working directory, gzipped,
their console alone with every leading timestamp stripped, one file's
lines re-interleaved with another's (stdout and stderr captured together),
one host's clock set 20 s off (the offset must be estimated back), and a
torchrun console split into one file per rank.  The named rank and the
named line must not change.
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


# -- one host's clock off, and a console split per rank -----------------------

_ISO = re.compile(r"(\d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d)((?:[,.]\d+)?)")
_GLOG = re.compile(r"^([IWEF])(\d{4}) (\d\d:\d\d:\d\d)(\.\d+)", re.M)
_EPOCH = re.compile(r'("timestamp": ")(\d+)(")')


def _shift_times(text: str, seconds: int) -> str:
    """Every wall-clock stamp torchrun and the workers print, moved by ``seconds``."""
    from datetime import datetime, timedelta

    d = timedelta(seconds=seconds)

    def iso(m: re.Match[str]) -> str:
        sep = m.group(1)[10]
        t = datetime.strptime(m.group(1), f"%Y-%m-%d{sep}%H:%M:%S") + d
        return t.strftime(f"%Y-%m-%d{sep}%H:%M:%S") + m.group(2)

    def glog(m: re.Match[str]) -> str:
        t = datetime.strptime(f"2026{m.group(2)} {m.group(3)}", "%Y%m%d %H:%M:%S") + d
        return f"{m.group(1)}{t:%m%d %H:%M:%S}{m.group(4)}"

    text = _EPOCH.sub(lambda m: f"{m.group(1)}{int(m.group(2)) + seconds}{m.group(3)}", text)
    return _GLOG.sub(glog, _ISO.sub(iso, text))


@pytest.mark.parametrize("seconds", [-20, 20])
@pytest.mark.parametrize("name", ["019-mn-shape-mismatch-forward", "021-mn-sigkill"])
def test_one_hosts_clock_off(
    name: str, seconds: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # node1's clock runs 20 s ahead of node0's, or behind it: the events both
    # hosts print (rendezvous, the first steps) give the offset back
    from denpex_fast.analysis import causal

    seen: list[causal.Skew] = []
    estimate = causal.estimate_skew

    def observed(events):  # type: ignore[no-untyped-def]
        seen.append(estimate(events))
        return seen[-1]

    monkeypatch.setattr(causal, "estimate_skew", observed)
    case = CASES / name
    ref = _where(log_files(case), case)
    files = _copy(case, tmp_path / "job")
    shifted = 0
    for f in files:
        if f"{os.sep}node1{os.sep}" in f:
            p = Path(f)
            text = p.read_text()
            new = _shift_times(text, seconds)
            shifted += new != text
            p.write_text(new)
    assert shifted >= 2  # the console and the workers' own logs moved
    assert _where(files, tmp_path / "job") == ref
    # the offset was found again, not merely outweighed
    before, after = seen[0], seen[-1]
    moved = after.offsets["node1"] - before.offsets["node1"]
    assert abs(moved - seconds) < 0.5 and after.bound == pytest.approx(before.bound)


def _where(paths: list[str], root: Path) -> tuple[str, int | None, str | None, int | None]:
    """The verdict, rank and named line (file relative to ``root``, number):
    the text itself carries the shifted time."""
    d = dx.diagnose(paths)
    i = d.initiating
    if i is None:
        return d.verdict, d.suspect_rank, None, None
    return "named", i.rank, os.path.relpath(i.file, root), i.line


_DEFAULT = re.compile(r"^\[default(\d+)\]:")


@pytest.mark.parametrize("name", ["008-sigkill-rank", "005-dataset-index-error", "009-sys-exit-3"])
def test_a_console_split_into_one_file_per_rank(name: str, tmp_path: Path) -> None:
    # the same lines, each rank's in a file of its own (named for its rank,
    # the launcher's ``[defaultN]:`` tag gone) and the launcher's in another
    console = CASES / name / "console.log"
    ref = _answer([str(console)])
    per: dict[str, list[str]] = {}
    for line in console.read_text().splitlines(True):
        m = _DEFAULT.match(line)
        key = f"rank{m.group(1)}.log" if m else "launcher.log"
        per.setdefault(key, []).append(line[m.end() :] if m else line)
    assert len(per) >= 3
    out = tmp_path / "job"
    out.mkdir()
    for key, lines in per.items():
        (out / key).write_text("".join(lines))
    assert _answer([str(out)]) == ref
