"""JobBytes: later stages read a job's bytes back through the scan's inputs."""

from __future__ import annotations

import gzip
import os

import pytest

from denpex_fast import Scanner
from denpex_fast.io.readback import JobBytes

LINES = [
    b"2024-05-01 12:00:00 start",
    b"step=1 loss=2.0",
    b"",
    b"worker waiting for peers",
    b"",
    b"",
]


@pytest.fixture
def job(tmp_path):
    (tmp_path / "rank0.log").write_bytes(b"\n".join(LINES))
    (tmp_path / "rank1.log.gz").write_bytes(gzip.compress(b"\r\n".join(LINES)))
    (tmp_path / "quiet.log").write_bytes(b"")
    return tmp_path


def _scan(job):
    return Scanner(patterns={"step": ["step=1"]}, cache_dir=False).run([str(job)])


def test_inputs_list_every_file_read_match_or_not(job):
    res = _scan(job)
    assert sorted(os.path.basename(k) for k in res.inputs) == [
        "quiet.log",
        "rank0.log",
        "rank1.log.gz",
    ]
    assert res.table.num_rows == 2  # only two files matched; inputs still lists all three


def test_last_line_skips_trailing_blank_lines_plain_and_gzip(job):
    jb = JobBytes.from_scan(_scan(job))
    by_name = {os.path.basename(k): k for k in jb.labels()}
    assert jb.last_line(by_name["rank0.log"]) == (4, "worker waiting for peers")
    n, text = jb.last_line(by_name["rank1.log.gz"])
    assert (n, text.rstrip("\r")) == (4, "worker waiting for peers")
    assert jb.last_line(by_name["quiet.log"]) is None


@pytest.mark.parametrize("prefix", ["trainer-1  | ", "2024-05-01T12:00:00.1Z stderr F "])
def test_last_line_with_words_skips_a_collectors_prefix_alone(tmp_path, prefix):
    # an empty line behind a collector's prefix ends in the prefix's own blank
    from denpex_fast.facts.attribution import prefix_length

    (tmp_path / "c.log").write_text(f"{prefix}worker waiting for peers\n{prefix}\n")
    jb = JobBytes.from_scan(_scan(tmp_path))
    label = jb.labels()[0]
    assert jb.last_line(label, words=True, prefix=prefix_length) == (
        1,
        f"{prefix}worker waiting for peers",
    )


def test_read_and_tail_agree_with_the_bytes(job):
    jb = JobBytes.from_scan(_scan(job))
    plain = next(k for k in jb.labels() if k.endswith("rank0.log"))
    packed = next(k for k in jb.labels() if k.endswith(".gz"))
    data = b"\n".join(LINES)
    assert jb.read(plain, 5, 10) == data[5:15]
    assert jb.tail(plain, 8) == (len(data) - 8, data[-8:])
    crlf = b"\r\n".join(LINES)
    assert jb.read(packed, 3, 20) == crlf[3:23]  # decoded offsets
    assert jb.tail(packed, 7) == (len(crlf) - 7, crlf[-7:])


def test_labels_resolve_through_locations_whatever_the_cwd(job, tmp_path_factory, monkeypatch):
    jb = JobBytes(locations={"logs/rank0.log": str(job / "rank0.log")})
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    assert jb.last_line("logs/rank0.log") == (4, "worker waiting for peers")
    assert jb.read("no/such/file.log", 0, 10) is None
    assert jb.last_line("no/such/file.log") is None


def test_a_truncated_gzip_answers_what_it_can(job):
    full = gzip.compress(b"\n".join([b"line %d" % i for i in range(20000)]))
    (job / "cut.log.gz").write_bytes(full[: len(full) // 2])
    jb = JobBytes.from_scan(
        Scanner(patterns={"x": ["line 1"]}, cache_dir=False).run(
            [str(job / "cut.log.gz")], errors="collect"
        )
    )
    label = jb.labels()[0]
    assert jb.read(label, 0, 6) == b"line 0"
    got = jb.last_line(label)  # ends where the damage starts, never raises
    assert got is None or got[1].startswith("line")


def test_last_line_with_words_skips_a_banner_rule(tmp_path):
    """Where a log stopped is the last line that says something: the rule
    of '=' drawn under a banner is not it."""
    log = tmp_path / "console.log"
    log.write_text(
        "Loading checkpoint shards: 100%\n"
        + "=" * 40
        + "\nNo pre-built kernel is found, build and load the cpu_adam kernel now\n"
        + "=" * 40
        + "\n\n"
    )
    jb = JobBytes()
    assert jb.last_line(str(log)) == (4, "=" * 40)
    assert jb.last_line(str(log), words=True) == (
        3,
        "No pre-built kernel is found, build and load the cpu_adam kernel now",
    )


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_tail_lines_are_whole_lines_ending_where_last_line_does(tmp_path, compress):
    body = "".join(f"line {k}\n" for k in range(1, 101)) + "\n  \n"
    log = tmp_path / ("app.log.gz" if compress else "app.log")
    log.write_bytes(gzip.compress(body.encode()) if compress else body.encode())
    jb = JobBytes()
    lines = jb.tail_lines(str(log), 30)  # starts at the newline of "line 97"
    assert lines == ["line 98", "line 99", "line 100"]
    # a tail that starts inside a line ("ine 99") leaves that piece out
    assert jb.tail_lines(str(log), 20) == ["line 100"]
    assert jb.last_line(str(log)) == (100, "line 100")
    assert jb.tail_lines(str(tmp_path / "missing.log"), 20) == []
