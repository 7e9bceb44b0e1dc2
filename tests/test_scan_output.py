"""``denpex scan``'s plain rows, formatted in C from the Arrow buffers and
streamed: the same bytes as the Python reference formatting, on any text."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from denpex_fast.engine._native import format_rows
from denpex_fast.engine.scanner import Scanner
from denpex_fast.scan_output import write_plain_batch
from denpex_fast.textsafe import terminal_safe

# text with every kind of character the escaping treats specially
TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from("\x00\x01\t\n\r\x1b\x7f\x80\x85\x9f\xa0\u2028\u2029\u2027\u202a\ufffd"),
        st.characters(codec="utf-8"),
    ),
    max_size=40,
)


def _reference(files: list[str], lines: list[int], sigs: list[str], texts: list[str]) -> str:
    return "".join(
        f"{f}:{n}:{s}:{terminal_safe(t)}\n" for f, n, s, t in zip(files, lines, sigs, texts)
    )


def _columns(files: list[str], lines: list[int], sigs: list[str], texts: list[str]):
    return (
        pa.array(files).dictionary_encode(),
        pa.array(lines, pa.uint64()),
        pa.array(sigs).dictionary_encode(),
        pa.array(texts, pa.string()),
    )


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["a.log", "dir/b.log", "ü.log"]),
            st.integers(0, (1 << 64) - 1),
            st.sampled_from(["oom", "nccl-timeout"]),
            TEXT,
        ),
        max_size=30,
    ),
    chunk=st.integers(1, 300),
    start=st.integers(0, 5),
)
def test_c_rows_equal_reference_formatting(rows, chunk: int, start: int) -> None:
    files, lines, sigs, texts = (list(c) for c in zip(*rows)) if rows else ([], [], [], [])
    cols = _columns(files, lines, sigs, texts)
    # a slice: arrays whose offset is not zero
    cols = tuple(c.slice(min(start, len(files))) for c in cols)
    k = min(start, len(files))
    got = b"".join(format_rows(*cols, chunk=chunk)).decode("utf-8")
    assert got == _reference(files[k:], lines[k:], sigs[k:], texts[k:])


# mostly printable ASCII (the C writer's eight-bytes-at-a-time path) with the
# special characters at any position of a word, including its last bytes
ASCII_HEAVY = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0x20, max_codepoint=0x7E),
        st.characters(min_codepoint=0x20, max_codepoint=0x7E),
        st.characters(min_codepoint=0x20, max_codepoint=0x7E),
        st.sampled_from("\x00\x1f\t\n\r\x7f\x80\x9f\u2028\u2029\u00e9"),
    ),
    max_size=120,
)


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(ASCII_HEAVY, max_size=8), chunk=st.integers(1, 2000))
def test_c_rows_equal_reference_on_long_ascii_runs(texts: list[str], chunk: int) -> None:
    n = len(texts)
    cols = _columns(["a.log"] * n, list(range(n)), ["oom"] * n, texts)
    got = b"".join(format_rows(*cols, chunk=chunk)).decode("utf-8")
    assert got == _reference(["a.log"] * n, list(range(n)), ["oom"] * n, texts)


def test_row_larger_than_the_buffer_is_written_whole() -> None:
    text = "\x01" * 5000  # escapes to 20,000 bytes
    got = b"".join(format_rows(*_columns(["f"], [7], ["s"], [text]), chunk=64))
    assert got == b"f:7:s:" + b"\\x01" * 5000 + b"\n"


def test_batch_with_nulls_and_plain_columns() -> None:
    batch = pa.RecordBatch.from_pydict(
        {
            "file": pa.array(["x.log", "x.log"]),
            "line": pa.array([1, None], pa.uint64()),
            "signature": pa.array(["s", None]),
            "text": pa.array(["a\x1bb", None]),
        }
    )

    class Sink:
        data = b""

        def write(self, b: bytes) -> None:
            self.data += b

    out = Sink()
    write_plain_batch(out, batch)  # type: ignore[arg-type]
    assert out.data == b"x.log:1:s:a\\x1bb\nx.log:0::\n"


def _scan(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    # cwd: not the source tree, whose unbuilt package would shadow the installed one
    return subprocess.run(
        [sys.executable, "-m", "denpex_fast", "scan", *args], capture_output=True, cwd=cwd
    )


def test_streamed_rows_are_the_match_table(tmp_path: Path) -> None:
    # several files, one split into parallel ranges: rows stream in input order
    lines = [f"step {i} loss nan\x1b[0m\r" if i % 7 == 0 else f"step {i} ok" for i in range(20_000)]
    for name in ("a.log", "b.log"):
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    paths = [str(tmp_path / "a.log"), str(tmp_path / "b.log")]
    table = Scanner(patterns={"nan": "loss nan"}, max_rows_per_signature=1 << 40).run(
        paths, threads=2, unit_size=1 << 16
    )
    want = _reference(
        table.table.column("file").to_pylist(),
        table.table.column("line").to_pylist(),
        table.table.column("signature").to_pylist(),
        table.table.column("text").to_pylist(),
    )
    r = _scan(tmp_path, "-j2", "-m", str(1 << 40), "-e", "nan=loss nan", *paths)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode() == want
    assert want.count("\n") == 2 * len(range(0, 20_000, 7))


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipe")
def test_reader_that_goes_away_stops_quietly(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    log.write_text("CUDA out of memory\n" * 400_000)
    p = subprocess.run(
        f"{sys.executable} -m denpex_fast scan -m 100000000 -e oom=CUDA {log} | head -1",
        shell=True,
        capture_output=True,
        cwd=tmp_path,
    )
    assert p.stdout.decode() == f"{log}:1:oom:CUDA out of memory\n"
    assert b"Traceback" not in p.stderr and b"BrokenPipe" not in p.stderr
