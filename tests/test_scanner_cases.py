"""Scanner cases as (bytes, patterns, expected rows), under every read configuration.

Each case runs through scan_bytes, mmap (1 and 2 threads, tiny blocks, tiny
ranges), read(), gzip and zstd with chunk sizes that split lines, and again
with CRLF line ends.  Expected rows are written out by hand.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from denpex_fast.engine.scanner import Scanner

from scan_oracle import Row, oracle, sort_rows, table_rows

NCCL = "Watchdog caught collective operation timeout"
OOM = r"CUDA out of memory\. Tried to allocate \d+\.\d+ [GM]iB"

# (name, data, patterns, expected rows: (line, offset, match_end, signature, text))
CASES: list[tuple[str, bytes, dict[str, list[str]], list[Row]]] = [
    (
        "single-hit",
        b"step=1 loss=0.5\n[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\nstep=2\n",
        {"cuda-oom": [OOM]},
        [
            (
                2,
                16,
                95,
                "cuda-oom",
                "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
            )
        ],
    ),
    (
        "no-trailing-newline",
        b"a\nb\n[rank1]:[E] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7)",
        {"nccl-watchdog": [NCCL]},
        [
            (
                3,
                4,
                60,
                "nccl-watchdog",
                "[rank1]:[E] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7)",
            )
        ],
    ),
    (
        "one-row-per-line-and-signature",
        b"x NCCL WARN a NCCL WARN b NCCL WARN c\nok\n",
        {"nccl-warn": ["NCCL WARN", r"NCCL WARN \w"], "tail": [r"WARN.+"]},
        [
            (1, 0, 11, "nccl-warn", "x NCCL WARN a NCCL WARN b NCCL WARN c"),
            (1, 0, 12, "tail", "x NCCL WARN a NCCL WARN b NCCL WARN c"),
        ],
    ),
    (
        "several-signatures-several-lines",
        b"Xid 79 fallen\nnothing here\nSIGKILL and Xid 79 again\n",
        {"xid": [r"Xid \d+"], "kill": ["SIGKILL"]},
        [
            (1, 0, 5, "xid", "Xid 79 fallen"),
            (3, 27, 34, "kill", "SIGKILL and Xid 79 again"),
            (3, 27, 44, "xid", "SIGKILL and Xid 79 again"),
        ],
    ),
    (
        "nul-bytes-and-invalid-utf8",
        b"\x00\x00bin\xff\xfe ECC error\x00 tail\n\x00\n",
        {"ecc": ["ECC error"]},
        [(1, 0, 17, "ecc", "\x00\x00bin\ufffd\ufffd ECC error\x00 tail")],
    ),
    (
        "empty-lines-and-line-anchor",
        b"\n\n  \nERROR: boom\n\nERROR: second\n",
        {"error-start": [r"^ERROR: \w+"]},
        [(4, 5, 13, "error-start", "ERROR: boom"), (6, 18, 26, "error-start", "ERROR: second")],
    ),
    ("empty-input", b"", {"x": ["never"]}, []),
    (
        "match-at-very-end",
        b"line\nSegmentation fault",
        {"segv": ["Segmentation fault"]},
        [(2, 5, 23, "segv", "Segmentation fault")],
    ),
    (
        # a console captured from a colour terminal: the codes are not scanned
        # and not kept; line numbers and line offsets stay the file's
        "terminal-colour-codes",
        b"step=1\n\x1b[32m[rank3]:\x1b[0m \x1b[1;31mRuntimeError:\x1b[0m CUDA error: an illegal"
        b" memory access was encountered\n\x1b[1;31mtorch.OutOfMemoryError:\x1b[0m CUDA out of"
        b" memory. Tried to allocate 2.00 GiB\x1b[0m",
        {"illegal": ["RuntimeError: CUDA error: an illegal memory access"], "cuda-oom": [OOM]},
        [
            (
                2,
                7,
                66,
                "illegal",
                "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered",
            ),
            (
                3,
                103,
                173,
                "cuda-oom",
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
            ),
        ],
    ),
    (
        "utf8-multibyte",
        "ränk3: Fehler ü CUDA error: device-side assert triggered\n".encode(),
        {"dsa": ["device-side assert triggered"]},
        [(1, 0, 58, "dsa", "ränk3: Fehler ü CUDA error: device-side assert triggered")],
    ),
]


def _crlf(data: bytes, rows: list[Row]) -> tuple[bytes, list[Row]]:
    """The same case with CRLF line ends: offsets shift by one per earlier line."""
    return (
        data.replace(b"\n", b"\r\n"),
        [(ln, off + ln - 1, end + ln - 1, sig, text) for ln, off, end, sig, text in rows],
    )


@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_case_every_configuration(case, crlf, scan_config, make_scanner, tmp_path: Path) -> None:
    name, data, patterns, expected = case
    if crlf:
        data, expected = _crlf(data, expected)
    table = scan_config(make_scanner(patterns), data, tmp_path)
    assert sort_rows(table_rows(table)) == sort_rows(expected)
    # the hand-written expectation and the oracle agree (guards the oracle too)
    assert sort_rows(oracle(data, patterns)) == sort_rows(expected)


def test_file_column_and_dictionary(make_scanner, tmp_path: Path) -> None:
    a, b = tmp_path / "rank0.log", tmp_path / "rank1.log"
    a.write_bytes(b"ok\nCUDA out of memory. Tried to allocate 1.00 GiB\n")
    b.write_bytes(b"CUDA out of memory. Tried to allocate 3.50 MiB\n")
    t = make_scanner({"cuda-oom": [OOM]}).scan([a, b])
    assert t.schema.field("file").type.value_type.equals(t.schema.field("text").type)
    assert t.column("file").to_pylist() == [str(a), str(b)]
    assert t.column("line").to_pylist() == [2, 1]
    assert t.column("rank").null_count == 2 and t.column("ts").null_count == 2


def test_large_case_against_oracle_every_configuration(
    scan_config, make_scanner, tmp_path: Path
) -> None:
    # a few thousand realistic lines, several signatures, many hits
    import random

    rng = random.Random(7)
    lines = []
    for i in range(3000):
        r = rng.randrange(8)
        kind = rng.random()
        if kind < 0.02:
            lines.append(
                f"[rank{r}]: torch.OutOfMemoryError: CUDA out of memory. "
                f"Tried to allocate {rng.randrange(1, 9)}.00 GiB"
            )
        elif kind < 0.05:
            lines.append(
                f"[rank{r}]:[E ProcessGroupNCCL.cpp:616] [Rank {r}] {NCCL}: "
                f"WorkNCCL(SeqNum={i}, OpType=ALLREDUCE)"
            )
        elif kind < 0.06:
            lines.append("x" * rng.randrange(1, 3000) + " NCCL WARN tail")
        else:
            lines.append(f"[rank{r}]: 2024-05-01 12:00:{i % 60:02d},123 step={i} loss=0.{i}")
    data = ("\n".join(lines) + "\n").encode()
    patterns = {
        "cuda-oom": [OOM],
        "nccl-watchdog": [NCCL, r"SeqNum=\d+, OpType"],
        "nccl-warn": ["NCCL WARN"],
    }
    table = scan_config(make_scanner(patterns, max_text=200), data, tmp_path)
    assert sort_rows(table_rows(table)) == sort_rows(oracle(data, patterns, max_text=200))


def test_small_files_scanned_in_groups_match_one_by_one(tmp_path: Path) -> None:
    # small mapped files go several to a task (one result, one batch); rows,
    # exact counts, caps and errors stay per file, as when each is scanned alone
    from denpex_fast.engine import scanner as engine

    d = tmp_path / "many"
    d.mkdir()
    for i in range(300):
        body = "".join(
            f"step {k}\n" + ("CUDA out of memory\n" if (i + k) % 5 == 0 else "") for k in range(30)
        )
        (d / f"r{i:03d}.log").write_text(body)
    (d / "big.log").write_text("CUDA out of memory\n" * 10 + "x" * (engine.SMALL_FILE + 10) + "\n")
    s = Scanner(patterns={"oom": "out of memory", "step": r"step \d+"}, max_rows_per_signature=4)
    grouped = s.run([str(d)], threads=2)
    assert grouped.ok
    files = sorted(str(p) for p in d.iterdir())
    alone = [s.run([f], threads=1) for f in files]

    def rows(t: pa.Table) -> list[tuple[object, ...]]:
        cols = ["file", "line", "offset", "match_end", "signature", "text"]
        return list(zip(*(t.column(c).cast(pa.string()).to_pylist() for c in cols)))

    assert rows(grouped.table) == [r for a in alone for r in rows(a.table)]
    assert grouped.table.num_rows > 300  # caps are per file: 4 rows of each signature each
    assert grouped.counts.sort_by([("file", "ascending"), ("signature", "ascending")]).equals(
        pa.concat_tables([a.counts for a in alone]).sort_by(
            [("file", "ascending"), ("signature", "ascending")]
        )
    )
    assert grouped.stats["files"] == len(files) and grouped.stats["bytes"] == sum(
        a.stats["bytes"] for a in alone
    )


def test_a_small_file_that_vanishes_costs_only_its_own_rows(tmp_path: Path) -> None:
    from denpex_fast.io.sources import resolve_inputs

    d = tmp_path / "job"
    d.mkdir()
    for i in range(10):
        (d / f"r{i}.log").write_text("CUDA out of memory\n")
    s = Scanner(patterns={"oom": "out of memory"})
    inputs, _ = resolve_inputs([str(d)])
    (d / "r3.log").unlink()  # gone between listing and scanning
    res = s.run([i.name for i in inputs], errors="collect", threads=2)
    assert [e.path for e in res.errors] == [str(d / "r3.log")]
    assert res.table.num_rows == 9


@pytest.mark.parametrize("extra", [-1, 0, 1])
def test_files_either_side_of_the_read_whole_bound(tmp_path: Path, extra: int) -> None:
    # at most READ_WHOLE bytes: read into the scratch's buffer; past it: mapped.
    # The rows are the same either way, a match in the unterminated last line too.
    from denpex_fast.engine._native import READ_WHOLE

    tail = b"[rank3]: CUDA out of memory"
    filler = b"step 1 ok\n"
    n = READ_WHOLE + extra - len(tail)
    body = filler * (n // len(filler)) + b"x" * (n % len(filler))
    data = b"CUDA out of memory first\n" + body[25:] + tail
    assert len(data) == READ_WHOLE + extra
    p = tmp_path / "edge.log"
    p.write_bytes(data)
    patterns = {"oom": ["CUDA out of memory"]}
    s = Scanner(patterns=patterns)
    for threads, unit in ((1, 1 << 30), (2, 1 << 20)):
        got = s.run([str(p)], threads=threads, unit_size=unit).table
        assert sort_rows(table_rows(got)) == sort_rows(oracle(data, patterns)), (threads, unit)


def test_per_signature_row_caps(tmp_path: Path) -> None:
    # a signature of its own cap keeps that many rows per file, in every read
    # path (one mapped task, ranges, a group of small files, gzip); counts stay exact
    import gzip
    import pickle

    body = "".join(f"step {i}\nCUDA out of memory {i}\n" for i in range(300))
    big = tmp_path / "big.log"
    big.write_text(body)
    (tmp_path / "big.log.gz").write_bytes(gzip.compress(body.encode()))
    small = tmp_path / "small"
    small.mkdir()
    for k in range(3):
        (small / f"s{k}.log").write_text(body[: 200 * (k + 1)])
    s = Scanner(patterns={"step": r"step \d+", "oom": "out of memory"}, max_rows={"step": 5})
    assert s.row_caps() == {"step": 5}
    for threads, unit in ((1, 1 << 30), (2, 512)):
        r = s.run(
            [str(big), str(tmp_path / "big.log.gz"), str(small)], threads=threads, unit_size=unit
        )
        kept = r.table.group_by(["file", "signature"]).aggregate([("line", "count")])
        rows = {(x["file"], x["signature"]): x["line_count"] for x in kept.to_pylist()}
        assert rows[(str(big), "step")] == 5 and rows[(str(big), "oom")] == 300
        assert rows[(str(tmp_path / "big.log.gz"), "step")] == 5
        lines = {(x["file"], x["signature"]): x["lines"] for x in r.counts.to_pylist()}
        assert lines[(str(big), "step")] == 300  # exact
        steps = [
            x for x in r.table.to_pylist() if x["file"] == str(big) and x["signature"] == "step"
        ]
        assert [x["line"] for x in steps] == [1, 3, 5, 7, 9]  # the first five, in order
    twin = pickle.loads(pickle.dumps(s))
    assert twin.row_caps() == {"step": 5}
    other = s.with_row_caps({"oom": 2})
    assert other.row_caps() == {"oom": 2} and s.row_caps() == {"step": 5}
    assert other._db is s._db  # the same compiled database, not a rebuilt one
    assert other.run([str(big)]).table.num_rows == 300 + 2
    # a job-wide budget: fewer rows per file as the files grow in number, counts exact
    job = s.with_row_caps({"step": 256}, job_rows=10)
    many = tmp_path / "many"
    many.mkdir()
    for k in range(3):
        (many / f"m{k}.log").write_text("step 1\n" * 50)
    for paths, per_file in (([many / "m0.log"], 10), ([many], 4)):  # floor: 4 per file
        r = job.run([str(p) for p in paths])
        kept = r.table.group_by("file").aggregate([("line", "count")])
        assert kept.column("line_count").to_pylist() == [per_file] * len(kept), paths
        assert sum(r.counts.column("lines").to_pylist()) == 50 * kept.num_rows
    r = pickle.loads(pickle.dumps(job)).run([str(many)])  # Dask workers keep the budget
    assert r.table.num_rows == 3 * 4
    with pytest.raises(ValueError, match="job_rows"):
        s.with_row_caps({"step": 5}, job_rows=0)
    kb = Scanner()
    assert kb.with_row_caps({}).signature_set is kb.signature_set
    with pytest.raises(ValueError, match="no signature 'nope'"):
        Scanner(patterns={"a": "x"}, max_rows={"nope": 3})
    with pytest.raises(ValueError, match="at least 1 row"):
        Scanner(patterns={"a": "x"}, max_rows={"a": 0})
