"""Hostile inputs: each has a defined outcome, none crashes or hangs the process."""

from __future__ import annotations

import gzip
import os
import socket
import threading
import time
from pathlib import Path

import pytest
from backports import zstd

import denpex_fast as dx
from denpex_fast import _native
from denpex_fast.errors import ScanError

from conftest import is_root

PATS = {"oom": ["CUDA out of memory"], "kill": ["SIGKILL"]}
LINE = b"[rank1]: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"


def kinds(res: dx.ScanResult) -> dict[str, str]:
    return {e.path: e.kind for e in res.errors}


def test_empty_file(make_scanner, tmp_path: Path) -> None:
    p = tmp_path / "empty.log"
    p.write_bytes(b"")
    res = make_scanner(PATS).run([p])
    assert res.table.num_rows == 0 and res.ok


def test_missing_file_strict_and_collect(make_scanner, tmp_path: Path) -> None:
    good = tmp_path / "good.log"
    good.write_bytes(LINE)
    missing = tmp_path / "missing.log"
    s = make_scanner(PATS)
    with pytest.raises(ScanError) as ei:
        s.run([good, missing])
    assert ei.value.path == str(missing)
    assert "No such file" in str(ei.value)
    assert isinstance(ei.value, OSError)
    # nothing already found is lost
    assert ei.value.partial is not None and ei.value.partial.table.num_rows == 1
    res = s.run([good, missing], errors="collect")
    assert kinds(res) == {str(missing): "open"}
    assert res.table.num_rows == 1
    assert b"denpex.errors" in res.table.schema.metadata


@pytest.mark.skipif(
    is_root(),
    reason="root reads files whatever their mode; "
    "the open-error path is covered by test_missing_file_strict_and_collect",
)
def test_unreadable_file(make_scanner, tmp_path: Path) -> None:
    p = tmp_path / "secret.log"
    p.write_bytes(LINE)
    p.chmod(0)
    res = make_scanner(PATS).run([p], errors="collect")
    assert kinds(res) == {str(p): "open"}


def test_directory_is_expanded_recursively(make_scanner, tmp_path: Path) -> None:
    (tmp_path / "job" / "node1").mkdir(parents=True)
    (tmp_path / "job" / "node0.log").write_bytes(LINE)
    (tmp_path / "job" / "node1" / "rank5.log.gz").write_bytes(gzip.compress(b"x\n" + LINE))
    t = make_scanner(PATS).scan([tmp_path / "job"])
    assert sorted(t.column("file").to_pylist()) == sorted(
        [str(tmp_path / "job" / "node0.log"), str(tmp_path / "job" / "node1" / "rank5.log.gz")]
    )


@pytest.mark.timeout(20)
def test_fifo_is_refused_not_read(make_scanner, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    res = make_scanner(PATS).run([fifo], errors="collect")
    assert kinds(res) == {str(fifo): "not-regular"}


@pytest.mark.timeout(20)
def test_dev_zero_is_refused(make_scanner) -> None:
    res = make_scanner(PATS).run(["/dev/zero"], errors="collect")
    assert kinds(res) == {"/dev/zero": "not-regular"}


@pytest.mark.timeout(20)
def test_socket_is_refused(make_scanner, tmp_path: Path) -> None:
    path = tmp_path / "sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    try:
        res = make_scanner(PATS).run([path], errors="collect")
    finally:
        s.close()
    assert kinds(res) == {str(path): "not-regular"}


@pytest.mark.timeout(20)
def test_native_refuses_fifo_without_blocking(make_scanner, tmp_path: Path) -> None:
    # the C entry point itself opens non-blocking and checks S_ISREG
    fifo = tmp_path / "pipe2"
    os.mkfifo(fifo)
    s = make_scanner(PATS)
    rc, _, msg = _native.scan_file(
        s._db,
        s._scratch(),
        os.fsencode(fifo),
        0,
        _native.UINT64_MAX,
        opts=s.options.to_c(0, _native.ffi.NULL),
        tally=_native.Tally(2),
        result=_native.Result(),
    )
    assert rc == _native.ERR_NOTREG and "regular" in msg


@pytest.mark.parametrize("mode", ["mmap", "read"])
def test_100mb_line(make_scanner, tmp_path: Path, mode: str) -> None:
    p = tmp_path / "long.log"
    with open(p, "wb") as f:
        f.write(b"first\n")
        f.write(b"a" * (100 << 20))
        f.write(b" SIGKILL here")
        f.write(b"\nnext CUDA out of memory\n")
    s = make_scanner(PATS, max_text=64)
    t = s.scan([p], mmap=(mode == "mmap"), threads=2, unit_size=32 << 20)
    rows = t.select(["line", "offset", "signature", "text"]).to_pylist()
    assert rows == [
        {"line": 2, "offset": 6, "signature": "kill", "text": ("a" * 64 + " SIGKILL")[-64:]},
        {
            "line": 3,
            "offset": 6 + (100 << 20) + 14,
            "signature": "oom",
            "text": "next CUDA out of memory",
        },
    ]


def test_crlf_and_lone_cr(make_scanner, tmp_path: Path) -> None:
    p = tmp_path / "crlf.log"
    p.write_bytes(b"a\r\nCUDA out of memory\r\nb\rSIGKILL\r\n")
    rows = make_scanner(PATS).scan([p]).select(["line", "text"]).to_pylist()
    assert rows == [{"line": 2, "text": "CUDA out of memory"}, {"line": 3, "text": "b\rSIGKILL"}]


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_truncated_archive_keeps_rows_before_damage(
    make_scanner, tmp_path: Path, codec: str
) -> None:
    import random

    rng = random.Random(1)
    body = b"".join(
        (LINE if i % 1000 == 0 else f"step {i} {rng.random()}\n".encode()) for i in range(200_000)
    )
    blob = gzip.compress(body) if codec == "gzip" else zstd.compress(body)
    p = tmp_path / f"cut.log.{codec}"
    p.write_bytes(blob[: len(blob) // 2])
    s = make_scanner(PATS)
    with pytest.raises(ScanError) as ei:
        s.run([p])
    assert ei.value.errors[0].kind == "corrupt" and ei.value.path == str(p)
    assert "truncated" in str(ei.value) or "corrupt" in str(ei.value)
    kept = ei.value.partial.table
    assert 20 < kept.num_rows < 200
    assert kept.column("line").to_pylist()[:3] == [1, 1001, 2001]


def test_corrupt_gzip_garbage(make_scanner, tmp_path: Path) -> None:
    p = tmp_path / "bad.gz"
    p.write_bytes(b"\x1f\x8b\x08\x00" + os.urandom(2000))
    res = make_scanner(PATS).run([p], errors="collect")
    assert kinds(res) == {str(p): "corrupt"}


def test_multi_member_gzip_and_multi_frame_zstd(make_scanner, tmp_path: Path) -> None:
    g = tmp_path / "m.gz"
    g.write_bytes(gzip.compress(b"a\n" + LINE) + gzip.compress(b"SIGKILL\n"))
    z = tmp_path / "m.zst"
    z.write_bytes(zstd.compress(b"a\n" + LINE) + zstd.compress(b"SIGKILL\n"))
    for p in (g, z):
        rows = make_scanner(PATS).scan([p]).select(["line", "signature"]).to_pylist()
        assert rows == [{"line": 2, "signature": "oom"}, {"line": 3, "signature": "kill"}], p


def test_decompression_bomb_limits(make_scanner, tmp_path: Path) -> None:
    p = tmp_path / "bomb.gz"
    p.write_bytes(gzip.compress(LINE + b"\0" * (64 << 20), 9))
    s = make_scanner(PATS)
    res = s.run([p], errors="collect", max_ratio=100)
    assert kinds(res) == {str(p): "limit"}
    assert res.table.num_rows == 1  # the line before the limit was hit
    res = s.run([p], errors="collect", max_decompressed=8 << 20)
    assert kinds(res) == {str(p): "limit"}


def test_flood_is_capped_with_exact_count(make_scanner, tmp_path: Path) -> None:
    p = tmp_path / "flood.log"
    p.write_bytes(b"SIGKILL flood\n" * 1_000_000)
    res = make_scanner(PATS, max_rows_per_signature=100).run([p], threads=2, unit_size=1 << 20)
    assert res.table.num_rows == 100
    assert res.table.column("line").to_pylist() == list(range(1, 101))
    assert res.counts.to_pylist() == [
        {"file": str(p), "signature": "kill", "lines": 1_000_000, "kept": 100}
    ]


def _scan_in_thread(s: dx.Scanner, path: Path, out: dict) -> None:
    r = _native.Result()
    out["result"] = r
    rc, _, msg = _native.scan_file(
        s._db,
        s._scratch(),
        os.fsencode(path),
        0,
        _native.UINT64_MAX,
        opts=s.options.to_c(0, _native.ffi.NULL),
        tally=_native.Tally(len(s.signature_ids)),
        result=r,
    )
    out["rc"], out["msg"] = rc, msg


@pytest.mark.timeout(60)
def test_file_truncated_while_mapped_is_reported_not_fatal(make_scanner, tmp_path: Path) -> None:
    """SIGBUS from a file that shrinks under the mapping becomes a 'truncated' error."""
    p = tmp_path / "shrinking.log"
    with open(p, "wb") as f:
        f.write(LINE * 1000)
        f.truncate(8 << 30)  # sparse tail: pages beyond the cut will SIGBUS
    s = make_scanner(PATS)
    out: dict = {}
    t = threading.Thread(target=_scan_in_thread, args=(s, p, out))
    t.start()
    deadline = time.monotonic() + 30
    while "result" not in out or out["result"].scanned < (64 << 20):
        assert time.monotonic() < deadline and t.is_alive() or "rc" in out
        time.sleep(0.001)
    os.truncate(p, 1 << 20)
    t.join(30)
    assert out["rc"] == _native.ERR_TRUNCATED, out["msg"]
    assert out["result"].n_rows == 1000  # every row found before the cut is kept
    # the scanner (and this thread's replaced scratch) still works afterwards
    assert s.scan_bytes(LINE).num_rows == 1


def test_file_shrinking_between_plan_and_scan(make_scanner, tmp_path: Path) -> None:
    p = tmp_path / "shrunk.log"
    p.write_bytes(LINE * 10)
    s = make_scanner(PATS)
    inputs, _ = dx.scanner.resolve_inputs([p])
    p.write_bytes(LINE * 2)  # shorter than planned
    res = s.run([p], unit_size=len(LINE) * 3)
    assert res.table.num_rows == 2 and res.ok


def test_stdin(make_scanner, tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import denpex_fast as dx;"
        "t=dx.scan(['-'], patterns={'oom':'CUDA out of memory'}, cache_dir=False);"
        "print(t.column('line').to_pylist(), t.column('file').to_pylist())"
    )
    for payload in (b"x\n" + LINE, gzip.compress(b"x\n" + LINE)):
        out = subprocess.run(
            [sys.executable, "-c", code],
            input=payload,
            capture_output=True,
            check=True,
            timeout=60,
            cwd=tmp_path,
        ).stdout
        assert out.strip() == b"[2] ['-']"


def test_bad_pattern_names_signature(make_scanner) -> None:
    with pytest.raises(dx.PatternError) as ei:
        make_scanner({"good": ["fine"], "bad-one": ["ok", "(unclosed"]})
    e = ei.value
    assert (e.signature, e.index, e.pattern) == ("bad-one", 1, "(unclosed")
    assert "bad-one" in str(e) and e.hs_message


@pytest.mark.parametrize(
    "pattern,fragment",
    [
        ("a*", "empty"),  # matches the empty string
        (r"(\w+) \1", "ack"),  # back-reference ("Back-references unsupported")
        ("x\x00y", "NUL"),
    ],
)
def test_refused_patterns(make_scanner, pattern: str, fragment: str) -> None:
    with pytest.raises(dx.PatternError) as ei:
        make_scanner({"sig": [pattern]})
    assert fragment.lower() in str(ei.value).lower()
    assert ei.value.signature == "sig"


def test_scratch_is_not_shared_between_threads(make_scanner) -> None:
    s = make_scanner(PATS)
    scratch = s._scratch()
    err: list[BaseException] = []

    def use() -> None:
        try:
            _native.scan_buffer(
                s._db,
                scratch,
                LINE,
                len(LINE),
                base_offset=0,
                base_line=0,
                line_start=0,
                opts=s.options.to_c(0, _native.ffi.NULL),
                tally=_native.Tally(2),
                result=_native.Result(),
            )
        except RuntimeError as exc:
            err.append(exc)

    t = threading.Thread(target=use)
    t.start()
    t.join()
    assert err and "one thread" in str(err[0])


def test_buffer_export_ends_with_the_native_call(make_scanner, tmp_path: Path) -> None:
    """A sampling profiler (Dask's worker has one) may keep a frame of the native
    call alive; the scan must still be able to release and regrow its buffer."""
    import sys

    kept = []

    def profiler(frame, event, arg):  # type: ignore[no-untyped-def]
        if frame.f_code.co_name == "scan_buffer":
            kept.append(frame)  # keeps the frame's locals (the cffi buffer) alive

    p = tmp_path / "long-first-line.log.gz"
    p.write_bytes(gzip.compress(b"x" * (3 << 20) + b" SIGKILL\n" + LINE))
    s = make_scanner(PATS)
    s.stream_chunk = 1 << 20  # the first line outgrows the buffer: it must be regrown
    sys.setprofile(profiler)
    threading.setprofile(profiler)  # the scan runs in pool threads
    try:
        res = s.run([p], errors="collect")
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    assert kept, "the profiler saw the native call"
    assert res.ok, res.errors
    assert res.table.column("signature").to_pylist() == ["kill", "oom"]
