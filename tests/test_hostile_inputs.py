"""Hostile archives and hostile logs: damaged compressed streams in every
codec and position, names that are not UTF-8, binary files, SQL that tries to
leave the index, and the default bound on decompressed bytes.

Each case is checked where a user meets it: the scan API, ``denpex scan``
(exit status and output), ``dx.diagnose`` and ``denpex index``.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import shutil
import tarfile
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from backports import zstd
from click.testing import CliRunner

import denpex_fast as dx
import denpex_fast.io.sources as sources
from denpex_fast.batch.build import build_index
from denpex_fast.batch.index import IndexOptions
from denpex_fast.cli import main as cli_main
from denpex_fast.engine.scanner import Scanner
from denpex_fast.facts import regex
from denpex_fast.io.sources import RAW_FEED, path_from_display

PATS = {"oom": "CUDA out of memory"}
MiB = 1 << 20


def _body(n_lines: int = 60_000, seed: int = 1) -> bytes:
    """Log lines with random ids (compresses about 2:1, like real logs with
    hex ids) and a planted match every 97 lines."""
    rng = random.Random(seed)
    out = []
    for i in range(n_lines):
        if i % 97 == 0:
            out.append(b"[rank1]: RuntimeError: CUDA out of memory. marker %d\n" % i)
        else:
            out.append(
                b"step %d loss %s id %s\n"
                % (i, str(rng.random()).encode(), rng.randbytes(12).hex().encode())
            )
    return b"".join(out)


BODY = _body()
GOOD = b"INFO start\n[rank0]: RuntimeError: CUDA out of memory. in the good file\n"


def _compress(codec: str, data: bytes) -> bytes:
    if codec == "gzip":
        return gzip.compress(data, mtime=0)
    return zstd.compress(data, options={zstd.CompressionParameter.checksum_flag: 1})


def _reference(codec: str, blob: bytes) -> bool:
    """Whether the codec's own one-shot decoder rejects ``blob``."""
    try:
        (gzip.decompress if codec == "gzip" else zstd.decompress)(blob)
    except Exception:  # noqa: BLE001 - any refusal counts
        return True
    return False


def _decoded_prefix(codec: str, blob: bytes) -> int:
    """Bytes a streaming decoder hands out from ``blob`` (a prefix of a stream)."""
    dec = gzip.zlib.decompressobj(31) if codec == "gzip" else zstd.ZstdDecompressor()
    try:
        return len(dec.decompress(blob))
    except Exception:  # noqa: BLE001 - a damaged prefix hands out nothing more
        return 0


def _cases() -> list[tuple[str, str]]:
    out = []
    for codec in ("gzip", "zstd"):
        for what in (
            "truncated-third",
            "truncated-two-thirds",
            "truncated-last-byte",
            "flip-header",
            "flip-10pc",
            "flip-50pc",
            "flip-90pc",
            "flip-trailer",
            "wrong-magic",
            "empty",
            "header-only",
        ):
            out.append((codec, what))
    return out


def _damaged(codec: str, what: str) -> tuple[bytes, int | None]:
    """(the damaged stream, offset of the first damaged byte or None)."""
    blob = _compress(codec, BODY)
    n = len(blob)
    header = 10 if codec == "gzip" else 6
    if what.startswith("truncated"):
        cut = {
            "truncated-third": n // 3,
            "truncated-two-thirds": 2 * n // 3,
            "truncated-last-byte": n - 1,
        }[what]
        return blob[:cut], cut
    if what.startswith("flip"):
        off = {
            "flip-header": 4 if codec == "zstd" else 3,
            "flip-10pc": n // 10,
            "flip-50pc": n // 2,
            "flip-90pc": 9 * n // 10,
            "flip-trailer": n - 3,
        }[what]
        b = bytearray(blob)
        b[off] ^= 0x08
        return bytes(b), off
    if what == "wrong-magic":
        b = bytearray(blob)
        b[0] ^= 0xFF
        return bytes(b), 0
    if what == "empty":
        return b"", 0
    assert what == "header-only"
    return blob[:header], header


def _expected_kind(codec: str, what: str, data: bytes) -> str | None:
    if what in ("wrong-magic", "empty"):
        return "corrupt"
    return "corrupt" if _reference(codec, data) else None


def _must_keep(codec: str, data: bytes, off: int | None) -> set[int]:
    """Offsets of the planted lines decoded before the damage: every one must be kept."""
    if off is None or off == 0:
        return set()
    good = _compress(codec, BODY)
    upto = _decoded_prefix(codec, good[: max(0, off - RAW_FEED - 1)])
    keep = set()
    pos = 0
    for line in BODY.splitlines(keepends=True):
        if pos + len(line) > upto:
            break
        if b"CUDA out of memory" in line:
            keep.add(pos)
        pos += len(line)
    return keep


def _suffix(codec: str) -> str:
    return ".log.gz" if codec == "gzip" else ".log.zst"


@pytest.fixture(scope="module")
def scanner(tmp_path_factory: pytest.TempPathFactory) -> Scanner:
    return Scanner(patterns=PATS, cache_dir=tmp_path_factory.mktemp("cache"))


# ------------------------------------------------------------ 1. decoder errors


@pytest.mark.timeout(120)
@pytest.mark.parametrize("codec,what", _cases(), ids=[f"{c}-{w}" for c, w in _cases()])
def test_damaged_stream_is_a_corrupt_error_with_rows_before_kept(
    scanner: Scanner, tmp_path: Path, codec: str, what: str
) -> None:
    data, off = _damaged(codec, what)
    bad = tmp_path / f"rank1{_suffix(codec)}"
    bad.write_bytes(data)
    good = tmp_path / "rank0.log"
    good.write_bytes(GOOD)
    want = _expected_kind(codec, what, data)
    keep = _must_keep(codec, data, off)

    for mmap in (True, False):
        res = scanner.run([bad, good], errors="collect", mmap=mmap)
        assert {e.path: e.kind for e in res.errors} == ({str(bad): want} if want else {})
        files = res.table.column("file").cast("string")
        mine = res.table.filter(pc.equal(files, str(bad)))
        assert keep <= set(mine.column("offset").to_pylist()), "rows before the damage lost"
        assert res.table.filter(pc.equal(files, str(good))).num_rows == 1  # the other file
    if want:
        with pytest.raises(dx.ScanError) as ei:  # strict mode: an OSError with the partial result
            scanner.run([bad, good])
        assert isinstance(ei.value, OSError) and ei.value.partial.table.num_rows >= 1 + len(keep)

    # the same stream through scan_stream (tar members, remote files)
    r = scanner.scan_stream(io.BytesIO(data), f"member{_suffix(codec)}")
    assert [e.kind for e in r.errors] == ([want] if want else [])
    assert keep <= set(r.table.column("offset").to_pylist())

    # denpex scan: the good file's match is printed, exit 2 for the damaged file
    cli = CliRunner().invoke(
        cli_main, ["scan", str(bad), str(good), "-e", "oom=CUDA out of memory"]
    )
    assert cli.exit_code == (2 if want else 0), cli.output
    assert f"{good}:2:oom:" in cli.stdout
    if want:
        assert f"denpex: {bad}:" in cli.stderr and "Traceback" not in cli.output

    # dx.diagnose: the damage is a recorded file error, never another exception
    try:
        d = dx.diagnose([str(bad), str(good)], scanner=scanner)
    except OSError:
        pass
    else:
        recorded = {e["path"]: e["kind"] for e in d.errors}
        assert recorded.get(str(bad)) == want


@pytest.mark.timeout(120)
def test_issue_reproduction_bit_flipped_zstd_at_one_megabyte(tmp_path: Path) -> None:
    # a 300k-line log compressed with a frame checksum (as the zstd tool
    # does), one bit flipped at byte 1,000,000: the damage surfaces in the
    # end-of-frame drain (the checksum no longer matches)
    rng = random.Random(2)
    body = b"".join(
        b"[rank1]: RuntimeError: CUDA out of memory. marker %d\n" % i
        if i % 997 == 0
        else b"[rank1] step %d loss %s\n" % (i, str(round(rng.random(), 4)).encode())
        for i in range(300_000)
    )
    blob = bytearray(zstd.compress(body, options={zstd.CompressionParameter.checksum_flag: 1}))
    assert 1_000_000 < len(blob) < 1_000_000 + (1 << 20)
    blob[1_000_000] ^= 0x01
    bad = tmp_path / "bad.log.zst"
    bad.write_bytes(bytes(blob))
    good = tmp_path / "good.log"
    good.write_bytes(GOOD)
    cli = CliRunner().invoke(
        cli_main, ["scan", str(bad), str(good), "-e", "oom=CUDA out of memory", "--json"]
    )
    assert cli.exit_code == 2, cli.output
    lines = [json.loads(x) for x in cli.stdout.splitlines()]
    summary = lines[-1]["data"]
    assert [(e["path"], e["kind"]) for e in summary["errors"]] == [(str(bad), "corrupt")]
    paths = {x["data"]["path"]["text"] for x in lines if x["type"] == "match"}
    assert paths == {str(bad), str(good)}  # rows before the damage, and the other file
    d = dx.diagnose([str(bad), str(good)])
    assert {e["path"]: e["kind"] for e in d.errors} == {str(bad): "corrupt"}


@pytest.mark.timeout(300)
def test_index_keeps_the_other_files_of_a_job_with_a_damaged_stream(
    scanner: Scanner, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    expect: dict[tuple[str, str], str | None] = {}
    for codec, what in _cases():
        data, _ = _damaged(codec, what)
        job = root / f"{codec}-{what}"
        job.mkdir(parents=True)
        (job / f"rank1{_suffix(codec)}").write_bytes(data)
        (job / "rank0.log").write_bytes(GOOD)
        expect[(job.name, f"rank1{_suffix(codec)}")] = _expected_kind(codec, what, data)
        # the same damaged stream as a member of an archive job, beside a good member
        with tarfile.open(root / f"tar-{codec}-{what}.tar", "w") as tf:
            for name, blob in ((f"rank1{_suffix(codec)}", data), ("rank0.log", GOOD)):
                info = tarfile.TarInfo(name)
                info.size = len(blob)
                tf.addfile(info, io.BytesIO(blob))
        expect[(f"tar-{codec}-{what}", f"tar-{codec}-{what}.tar")] = _expected_kind(
            codec, what, data
        )
    out = tmp_path / "index"
    summary = build_index(str(root), str(out), scanner=scanner, threads=2)
    assert summary.ok, [r.error for r in summary.reports if r.error]
    assert summary.count("indexed") == len(expect)
    ix = dx.open_index(str(out))
    man = {(r["job"], r["path"]): r for r in ix.manifest().to_pylist()}
    for key, kind in expect.items():
        row = man[key]
        assert row["status"] == ("error" if kind else "ok"), (key, row)
        if kind:
            assert f"{kind}:" in row["error"]
    good = ix.sql(
        "select job, count(*) as n from matches where file like '%rank0.log' group by job"
    )
    assert dict(zip(*good.to_pydict().values())) == {job: 1 for job, _ in expect}


# ------------------------------------------------------- 2. names that are not UTF-8


def _tar_with(path: Path, members: dict[bytes, bytes]) -> None:
    with tarfile.open(
        path, "w", format=tarfile.GNU_FORMAT, encoding="utf-8", errors="surrogateescape"
    ) as tf:
        for name, blob in members.items():
            info = tarfile.TarInfo(os.fsdecode(name))
            info.size = len(blob)
            tf.addfile(info, io.BytesIO(blob))


@pytest.mark.timeout(120)
def test_names_that_are_not_utf8_cost_no_job(scanner: Scanner, tmp_path: Path) -> None:
    root = tmp_path / "root"
    job = root / "job-a"
    job.mkdir(parents=True)
    (job / "ok.log").write_bytes(GOOD)
    bad = os.path.join(os.fsencode(job), b"bad\xff\x01.log")
    with open(bad, "wb") as f:
        f.write(b"line\n[rank1]: CUDA out of memory in a badly named file\n")
    _tar_with(root / "job-b.tar", {b"ok.log": GOOD, b"m\xfe\xff.log": b"CUDA out of memory\n"})
    odd_job = os.path.join(os.fsencode(root), b"job-\xff")
    os.mkdir(odd_job)
    with open(os.path.join(odd_job, b"rank0.log"), "wb") as f:
        f.write(GOOD)

    out = tmp_path / "index"
    cli = CliRunner().invoke(
        cli_main, ["index", str(root), "-o", str(out), "-q", "-e", "oom=CUDA out of memory"]
    )
    assert cli.exit_code == 0, cli.output
    ix = dx.open_index(str(out))
    assert ix.jobs() == ["job-\\xff", "job-a", "job-b"]
    man = {(r["job"], r["path"]): r["status"] for r in ix.manifest().to_pylist()}
    assert man == {
        ("job-a", "bad\\xff\\x01.log"): "ok",
        ("job-a", "ok.log"): "ok",
        ("job-b", "job-b.tar"): "ok",
        ("job-\\xff", "rank0.log"): "ok",
    }
    files = set(ix.sql("select distinct file from matches").column("file").to_pylist())
    assert files == {
        "bad\\xff\\x01.log",
        "ok.log",
        "job-b.tar::ok.log",
        "job-b.tar::m\\xfe\\xff.log",
        "rank0.log",
    }
    # the escaped name gives the raw bytes back, and they open the file
    assert path_from_display("bad\\xff\\x01.log") == b"bad\xff\x01.log"
    assert os.path.exists(os.path.join(os.fsencode(job), path_from_display("bad\\xff\\x01.log")))
    assert path_from_display("m\\xfe\\xff.log") == b"m\xfe\xff.log"
    # a second run sees the same labels: nothing to do
    again = build_index(str(root), str(out), scanner=scanner)
    assert again.ok and again.count("unchanged") == 3


# ------------------------------------------------------------------ 3. binary files


def _binaries(d: Path) -> dict[str, Path]:
    """Binary files with failure strings planted in them, and logs that only
    look odd (a NUL hole, a copytruncate prefix of zeros)."""
    line = b"\n[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    elf = d / "libfoo.so"
    data = bytearray(Path(shutil.which("ls") or "/bin/ls").read_bytes()[:200_000])
    data[50_000 : 50_000 + len(line)] = line
    elf.write_bytes(bytes(data))
    png = d / "loss.png"
    png.write_bytes(
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(random.Random(3).randbytes(4000)) + line
    )
    obj = d / "python.o"  # NULs scattered in the first block, no known magic
    obj.write_bytes(b"".join(b"sym%d\x00\x00\x01\x00" % i for i in range(600)) + line)
    gz = d / "core.bin.gz"  # a compressed binary: decided on its first decoded block
    gz.write_bytes(gzip.compress(bytes(data)))
    hole = d / "crashed.log"  # a log with the hole a crash leaves (long NUL run)
    hole.write_bytes(b"INFO step 1\n" + b"\x00" * 4096 + line)
    truncated = d / "rotated.log"  # copytruncate: zeros, then the log goes on
    truncated.write_bytes(b"\x00" * 70_000 + b"INFO step 9\n" + line)
    return {"elf": elf, "png": png, "obj": obj, "gz": gz, "hole": hole, "rotated": truncated}


@pytest.mark.timeout(120)
def test_binary_files_are_skipped_counted_and_scanned_on_request(
    scanner: Scanner, tmp_path: Path
) -> None:
    f = _binaries(tmp_path)
    res = scanner.run([tmp_path], errors="collect")
    assert res.ok
    skipped = {e.path: e for e in res.skipped}
    assert set(skipped) == {str(f[k]) for k in ("elf", "png", "obj", "gz")}
    assert all(e.kind == "binary" for e in skipped.values())
    assert "ELF" in skipped[str(f["elf"])].message and "PNG" in skipped[str(f["png"])].message
    assert res.stats["skipped"] == 4 and res.stats["files"] == 2
    assert set(res.table.column("file").cast("string").to_pylist()) == {
        str(f["hole"]),
        str(f["rotated"]),
    }
    every = scanner.run([tmp_path], errors="collect", binary=True)
    assert not every.skipped and every.stats["skipped"] == 0
    assert set(every.table.column("file").cast("string").to_pylist()) == {
        str(p) for p in f.values()
    }
    # a binary stream (an archive member) is skipped the same way
    r = scanner.scan_stream(io.BytesIO(f["elf"].read_bytes()), "x.tar::libfoo.so")
    assert r.table.num_rows == 0 and [e.kind for e in r.skipped] == ["binary"]
    assert scanner.scan_stream(io.BytesIO(f["elf"].read_bytes()), "m", binary=True).table.num_rows

    runner = CliRunner()
    cli = runner.invoke(
        cli_main, ["scan", str(tmp_path), "-e", "oom=CUDA out of memory", "--stats"]
    )
    assert cli.exit_code == 0, cli.output
    assert str(f["elf"]) not in cli.stdout and str(f["hole"]) in cli.stdout
    assert "4 binary files skipped" in cli.stderr
    js = runner.invoke(cli_main, ["scan", str(tmp_path), "-e", "oom=CUDA out of memory", "--json"])
    summary = json.loads(js.stdout.splitlines()[-1])["data"]
    assert summary["stats"]["skipped"] == 4 and len(summary["skipped"]) == 4
    assert summary["errors"] == []
    allb = runner.invoke(
        cli_main, ["scan", str(tmp_path), "-e", "oom=CUDA out of memory", "--binary"]
    )
    assert str(f["elf"]) in allb.stdout and str(f["png"]) in allb.stdout

    # the index: a 'skipped' manifest row, not an error; --binary scans them
    root = tmp_path.parent / (tmp_path.name + "-root")
    job = root / "job"
    job.mkdir(parents=True)
    for p in f.values():
        shutil.copy(p, job / p.name)
    _tar_with(root / "arch.tar", {b"libfoo.so": f["elf"].read_bytes(), b"a.log": GOOD})
    out = root.parent / (root.name + "-index")
    assert build_index(str(root), str(out), scanner=scanner).ok
    man = {(r["job"], r["path"]): r for r in dx.open_index(str(out)).manifest().to_pylist()}
    assert man[("job", "libfoo.so")]["status"] == "skipped"
    assert man[("job", "libfoo.so")]["error"].startswith("binary: skipped")
    assert man[("job", "crashed.log")]["status"] == "ok"
    assert man[("arch", "arch.tar")]["status"] == "ok"
    assert "arch.tar::libfoo.so" in man[("arch", "arch.tar")]["error"]
    diag = dx.open_index(str(out)).diagnosis().to_pylist()
    assert all(r["n_file_errors"] == 0 for r in diag)
    out2 = root.parent / (root.name + "-index-binary")
    assert build_index(str(root), str(out2), scanner=scanner, options=IndexOptions(binary=True)).ok
    files = set(dx.open_index(str(out2)).matches().column("file").to_pylist())
    assert {"libfoo.so", "arch.tar::libfoo.so"} <= files


@pytest.mark.parametrize(
    "head,binary",
    [
        (b"INFO step 1\n" * 100, False),
        (b"INFO a C string\x00 printed raw\n" * 7, False),  # a few stray NULs
        (b"INFO step 1\n" + b"\x00" * 5000 + b"INFO step 2\n", False),  # a crash hole
        (b"\x00" * 9000, False),  # only a hole so far
        (b"BZh is how the line starts\n", False),
        (b"BZh91AY&SY" + bytes(range(256)), True),
        (b"\x7fELF\x02\x01\x01", True),
        (b"ab\x00\x01cd\x00\x00" * 4, True),
    ],
)
def test_binary_reason(head: bytes, binary: bool) -> None:
    assert (sources.binary_reason(head) is not None) is binary


@pytest.mark.timeout(300)
def test_diagnose_never_blames_strings_inside_binaries(tmp_path: Path) -> None:
    f = _binaries(tmp_path)
    for k in ("hole", "rotated"):  # only binaries and a healthy log
        f[k].unlink()
    (tmp_path / "train.log").write_bytes(b"INFO step 1 loss 2.0\nINFO step 2 loss 1.9\n")
    d = dx.diagnose(str(tmp_path))
    binaries = {str(f[k]) for k in ("elf", "png", "obj", "gz")}
    assert d.initiating is None or d.initiating.file not in binaries
    assert d.verdict != "failure"
    assert not d.errors  # skipped, not unreadable: no "incomplete" verdict


@pytest.mark.timeout(300)
def test_diagnose_python_config_directory_gives_no_failure_from_binaries() -> None:
    import glob

    dirs = sorted(glob.glob("/usr/lib/python3*/config-*/"))
    if not dirs:
        pytest.skip("no /usr/lib/python3*/config-*/ on this machine")
    d = dx.diagnose(dirs[0])
    if d.initiating is not None:
        assert not d.initiating.file.endswith((".a", ".o", ".so")), d.initiating
    assert not (
        d.verdict == "failure"
        and d.initiating is not None
        and not d.initiating.file.endswith(("Makefile", ".c", ".py", "Setup"))
    )


# ------------------------------------------------------- 4. safe SQL over the index


@pytest.fixture(scope="module")
def small_index(tmp_path_factory: pytest.TempPathFactory, scanner: Scanner) -> Path:
    tmp = tmp_path_factory.mktemp("sqlidx")
    (tmp / "root" / "job").mkdir(parents=True)
    (tmp / "root" / "job" / "rank0.log").write_bytes(GOOD)
    assert build_index(str(tmp / "root"), str(tmp / "index"), scanner=scanner).ok
    return tmp / "index"


@pytest.mark.parametrize(
    "sql",
    [
        "select * from read_csv('/etc/passwd')",
        "select * from read_text('/etc/passwd')",
        "select * from '/etc/passwd'",
        "select * from glob('/etc/*')",
        "COPY (select 1 as x) TO '{out}/evil.csv'",
        "COPY (select * from matches) TO '{index}/matches/evil.parquet'",
        "ATTACH '{out}/evil.db' AS evil",
        "EXPORT DATABASE '{out}/export'",
        "INSTALL httpfs",
        "LOAD httpfs",
        "SET enable_external_access = true",
        "select * from read_parquet('https://example.invalid/x.parquet')",
    ],
)
def test_index_sql_is_refused_outside_the_views(
    small_index: Path, tmp_path: Path, sql: str
) -> None:
    import duckdb

    q = sql.format(out=tmp_path, index=small_index)
    before = sorted(p for p in small_index.rglob("*"))
    with pytest.raises(duckdb.Error):
        dx.open_index(str(small_index)).sql(q)
    assert list(tmp_path.iterdir()) == []  # nothing written
    assert sorted(p for p in small_index.rglob("*")) == before
    cli = CliRunner().invoke(cli_main, ["query", str(small_index), q])
    assert cli.exit_code == 2 and "Traceback" not in cli.output


def test_index_sql_sees_its_views_and_unsafe_lifts_the_limits(
    small_index: Path, tmp_path: Path
) -> None:
    ix = dx.open_index(str(small_index))
    assert ix.sql("select count(*) as n from matches").column("n")[0].as_py() == 1
    assert ix.sql("select job from diagnosis").column("job").to_pylist() == ["job"]
    assert ix.sql("select status from manifest").column("status").to_pylist() == ["ok"]
    unsafe = dx.open_index(str(small_index), unsafe=True)
    assert (
        unsafe.sql("select count(*) as n from read_csv('/etc/passwd', header=false, sep='\\t')")
        .column("n")[0]
        .as_py()
        > 0
    )
    out = tmp_path / "m.csv"
    runner = CliRunner()
    cli = runner.invoke(
        cli_main,
        ["query", str(small_index), "--unsafe", f"COPY (select file from matches) TO '{out}'"],
    )
    assert cli.exit_code == 0, cli.output
    assert out.read_text().splitlines() == ["file", "rank0.log"]
    helptext = " ".join(runner.invoke(cli_main, ["query", "--help"]).output.split())
    assert "--unsafe" in helptext and "only the index views" in helptext


# --------------------------------------------- 5. a default bound on decompressed bytes


def test_default_decompression_bound_is_64_gib() -> None:
    assert sources.DEFAULT_MAX_DECOMPRESSED == 64 << 30
    assert sources.limit_or_default(None) == 64 << 30
    assert sources.limit_or_default(0) is None
    assert IndexOptions().max_decompressed is None  # None: the default bound


@pytest.mark.timeout(120)
def test_default_decompression_bound_applies_everywhere(
    scanner: Scanner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sources, "DEFAULT_MAX_DECOMPRESSED", 1 * MiB)
    blob = gzip.compress(BODY)
    assert len(BODY) > 3 * MiB
    big = tmp_path / "job" / "big.log.gz"
    big.parent.mkdir()
    big.write_bytes(blob)
    (tmp_path / "job" / "rank0.log").write_bytes(GOOD)
    res = scanner.run([big.parent], errors="collect")
    assert [(e.path, e.kind) for e in res.errors] == [(str(big), "limit")]
    assert "1048576 bytes" in res.errors[0].message
    kept = res.table.filter(pc.equal(res.table.column("file").cast("string"), str(big)))
    assert 0 < kept.num_rows < BODY.count(b"CUDA out of memory")  # rows before the bound kept
    # 0 lifts the bound; an explicit value replaces it
    assert scanner.run([big], max_decompressed=0).ok
    assert scanner.run([big], errors="collect", max_decompressed=2 * MiB).errors[0].kind == "limit"
    # streams (an archive member, stdin) are bounded too, compressed or not
    for data in (blob, BODY):
        r = scanner.scan_stream(io.BytesIO(data), "member.log")
        assert [e.kind for e in r.errors] == ["limit"]
    # the index records the hit on that file and keeps the job's other files
    out = tmp_path / "index"
    _tar_with(tmp_path / "root.tar", {b"big.log": BODY, b"rank0.log": GOOD})
    root = tmp_path / "root"
    (root / "job").mkdir(parents=True)
    shutil.copy(big, root / "job" / "big.log.gz")
    shutil.copy(tmp_path / "root.tar", root / "arch.tar")
    (root / "job" / "rank0.log").write_bytes(GOOD)
    assert build_index(str(root), str(out), scanner=scanner, threads=1).ok
    ix = dx.open_index(str(out))
    man = {(r["job"], r["path"]): r for r in ix.manifest().to_pylist()}
    assert man[("job", "big.log.gz")]["status"] == "error"
    assert man[("job", "big.log.gz")]["error"].startswith("limit:")
    assert man[("arch", "arch.tar")]["status"] == "error"
    assert "arch.tar::big.log: limit:" in man[("arch", "arch.tar")]["error"]
    assert man[("job", "rank0.log")]["status"] == "ok"
    files = ix.sql("select file, count(*) as n from matches group by 1").to_pydict()
    assert {"rank0.log", "arch.tar::rank0.log", "big.log.gz"} <= set(files["file"])


def test_an_unreadable_directory_is_a_manifest_row_not_a_gap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as root every directory can be listed: the listing of one is made to fail
    from fsspec.implementations.local import LocalFileSystem

    root = tmp_path / "root"
    job = root / "job1"
    (job / "secret").mkdir(parents=True)
    (job / "secret" / "rank1.log").write_text("CUDA out of memory\n")
    (job / "rank0.log").write_text("CUDA out of memory\n")
    real_ls = LocalFileSystem.ls

    def ls(self, path, detail=False, **kw):  # type: ignore[no-untyped-def]
        if str(path).rstrip("/").endswith("/secret"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_ls(self, path, detail=detail, **kw)

    monkeypatch.setattr(LocalFileSystem, "ls", ls)
    out = tmp_path / "idx"
    summary = dx.build_index(
        str(root), str(out), scanner=dx.Scanner(patterns={"oom": "out of memory"})
    )
    assert summary.count("failed") == 0
    man = {r["path"]: r for r in dx.open_index(str(out)).manifest().to_pylist()}
    assert man["secret/"]["status"] == "error"
    assert "Permission denied" in man["secret/"]["error"]
    assert man["rank0.log"]["status"] == "ok"


@pytest.mark.parametrize("shift", [0, 1, 2])
def test_a_timestamp_followed_by_multibyte_text_is_diagnosed(tmp_path: Path, shift: int) -> None:
    # The timestamp parser reads a fixed number of bytes from a timestamp's
    # start; a progress bar's 3-byte blocks put a character across that end
    # at one shift of the three, which once stopped the whole diagnosis.
    bar = "\u2588" * 60
    (tmp_path / "rank0.log").write_text(
        "2024-05-01 12:00:00,123 INFO start\n"
        f"2024-05-01 12:00:01,123 {'x' * shift}RuntimeError: boom {bar}\n",
        encoding="utf-8",
    )
    d = dx.diagnose(str(tmp_path))
    assert d.initiating is not None
    assert (d.initiating.line, d.initiating.rank) == (2, 0)
    assert d.initiating.ts is not None and d.initiating.ts.second == 1


def test_regex_reads_text_that_is_not_valid_utf8() -> None:
    # pieces read back from a log at fixed byte counts may end inside a
    # character; the small-array path through Python's re must not fail on them
    cut = b"2024-05-01 12:00:01 \xe2\x96"
    arr = pa.StringArray.from_buffers(
        1, pa.py_buffer(bytes([0, 0, 0, 0, len(cut), 0, 0, 0])), pa.py_buffer(cut)
    )
    assert regex.matches(arr, r"^\d{4}-\d\d-\d\d").tolist() == [True]
