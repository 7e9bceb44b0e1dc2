"""Only the io/ stage opens a job's logs.

A diagnosis of corpus cases runs in a child process with an audit hook on
``open`` (audit hooks cannot be removed, hence the child); every open of a file
of the case must come from a module under ``denpex_fast/io/``; the read-back
reader (:mod:`denpex_fast.io.readback`) opens an input at most once for all the
stages that ask about it (heads, tails, last lines, timestamps).  The scan's own
opens are the type sniff and, for a file that is not mapped from C (an empty
one), the stream.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CASES = Path(__file__).parent / "corpus" / "cases"

CHILD = r"""
import collections, json, os, sys, traceback
case = sys.argv[1]
import denpex_fast as dx
opens = collections.defaultdict(list)
def hook(event, args):
    if event != "open" or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    path = os.fsdecode(args[0])
    if not path.startswith(case):
        return
    frames = [f.filename for f in traceback.extract_stack()[:-1] if "denpex_fast" in f.filename]
    opens[path[len(case):]].append(frames[-1].split("denpex_fast/", 1)[-1] if frames else "?")
sys.addaudithook(hook)
d = dx.diagnose(sys.argv[2:])
print(json.dumps({"verdict": d.verdict, "opens": opens}))
"""


@pytest.mark.parametrize("name", ["010-nan-anomaly", "036-tr2n-hang", "001-healthy-single"])
def test_only_io_opens_the_logs(name: str, tmp_path: Path) -> None:
    matches = sorted(CASES.glob(f"{name}*"))
    if not matches:
        pytest.fail(f"corpus case {name} is missing")
    case = str(matches[0]) + "/"
    logs = sorted(str(p) for p in Path(case).rglob("*") if p.is_file() and p.name != "truth.json")
    out = subprocess.run(
        [sys.executable, "-c", CHILD, case, *logs],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,  # outside the source tree: the installed package runs
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    opens: dict[str, list[str]] = report["opens"]
    assert len(opens) == len(logs)  # every input was read
    for path, sites in opens.items():
        assert all(site.startswith("io/") for site in sites), (path, sites)
        assert sum(site.startswith("io/readback") for site in sites) <= 1, (path, sites)
        assert sum(site.startswith("io/sources") for site in sites) <= 2, (path, sites)


INDEX_CHILD = r"""
import collections, json, os, sys
root, out = sys.argv[1], sys.argv[2]
import denpex_fast as dx
opens = collections.Counter()
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.fsdecode(args[0])
        if path.startswith(root) and path.endswith(".log"):
            opens[path[len(root):]] += 1
sys.addaudithook(hook)
dx.build_index(root, out)
print(json.dumps(opens))
"""


def test_the_index_reads_each_log_once_and_hashes_it_in_that_pass(tmp_path: Path) -> None:
    from denpex_fast.io.jobs import file_digest

    root = tmp_path / "root"
    job = root / "job1"
    job.mkdir(parents=True)
    for r in range(3):
        (job / f"rank{r}.log").write_text(
            "".join(f"2024-05-01 12:00:0{k},000 INFO step {k}\n" for k in range(5))
            + ("[rank1]: RuntimeError: CUDA error: out of memory\n" if r == 1 else "")
        )
    out = subprocess.run(
        [sys.executable, "-c", INDEX_CHILD, str(root), str(tmp_path / "idx")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    opens = json.loads(out.stdout.strip().splitlines()[-1])
    assert sorted(opens) == [f"/job1/rank{r}.log" for r in range(3)]
    # one read for the scan and its hash, at most one more for read-back
    assert all(n <= 2 for n in opens.values()), opens
    import fsspec

    import denpex_fast as dx

    fs = fsspec.filesystem("file")
    man = dx.open_index(str(tmp_path / "idx")).manifest().to_pylist()
    assert {r["path"]: r["hash"] for r in man} == {
        f"rank{r}.log": file_digest(fs, str(job / f"rank{r}.log")) for r in range(3)
    }
