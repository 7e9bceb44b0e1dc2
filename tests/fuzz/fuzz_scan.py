"""Coverage-guided fuzzing of the native scan paths against the Python oracle.

Each input chooses a pattern set, scan options (block size, piece size,
overlap, text and row caps, stream chunk, range size), a read path
(``scan_bytes``; a temp file through ``Scanner.run`` mapped with 1 or 2
threads, or read in chunks) and the bytes to scan.  Every result must:

* be a valid Arrow table (offsets in bounds, text valid UTF-8);
* have rows in line order, one per (line, signature), at most the row cap per
  signature, each row's offset a line start of the input, its line number the
  newlines before it plus one, its match end inside that line;
* have each row's text equal to the documented excerpt of its line (the line
  start, or the ``max_text`` bytes ending at the match, CR removed);
* equal the oracle's rows and counts exactly when no line is longer than a
  scan piece (longer lines are cut, where anchors may fire or straddling
  matches be missed, as documented).

Run through tests/fuzz/run.sh (instrumented build); see tests/fuzz/README.md.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: scan_oracle

with atheris.instrument_imports(include=["denpex_fast"]):  # our code only: faster
    from denpex_fast import _native, sources
    from denpex_fast.engine.scanner import Scanner

from scan_oracle import _CSI, oracle, table_rows  # noqa: E402  (not instrumented: slow)

# Line-scoped patterns the oracle models exactly: no `$` or `\b` (the oracle's
# bisection cuts the line with endpos, where they would fire), nothing that
# can match a newline.
PATTERN_SETS: list[dict[str, list[str]]] = [
    {
        "nccl-warn": ["NCCL WARN"],
        "timeout": [r"NCCL WARN [^\n]*timeout"],
        "errno": [r"E\d{2}: x+"],
        "alt": [r"(ab|a)c*d"],
        "oom": ["out of memory", "OOM"],
    },
    {"start": [r"^ERROR: \w+"], "cr": ["x\r"], "gap": [r"a.{0,5}b"], "ci": [r"(?i)sigkill"]},
    {"long": [r"a[^\n]{20,}z"], "nul": [r"\x00\xff"], "utf": ["é+"], "bytes": [r"[\x80-\xff]{3}"]},
]
TOKENS = [
    b"NCCL WARN ",
    b"timeout",
    b"\n",
    b"\r\n",
    b"\r",
    b"E12: ",
    b"xx",
    b"ab",
    b"a",
    b"c",
    b"d",
    b"out of ",
    b"memory",
    b"OOM",
    b" ",
    b"\x00",
    b"\xff",
    "é".encode(),
    b"9",
    b"ERROR: ",
    b"SIGKILL",
    b"sigKill",
    b"b",
    b"z",
    b"a" * 30,
    b"\x80\x81\x82",
]

SCANNERS = [Scanner(patterns=p, cache_dir=False) for p in PATTERN_SETS]
TMP = Path(tempfile.mkdtemp(prefix="denpex-fuzz-"))
LOG = TMP / "in.log"


def _data(fdp: atheris.FuzzedDataProvider) -> bytes:
    raw = fdp.ConsumeBytes(fdp.remaining_bytes())
    if not raw or raw[0] & 1:
        return raw[1:]
    # token mode: small byte values pick a token, others stand for themselves
    return b"".join(TOKENS[b] if b < len(TOKENS) else bytes([b]) for b in raw[1:])


def _excerpt(data: bytes, offset: int, end: int, max_text: int) -> bytes:
    """The text a row must carry (mirrors the rule in scan_oracle.oracle):
    the line without terminal codes, ``end - offset`` counted in it."""
    nl = data.find(b"\n", offset)
    line = _CSI.sub(b"", data[offset:] if nl < 0 else data[offset:nl])
    rel = end - offset
    if rel > max_text:
        w = line[rel - max_text : rel]
        return w[:-1] if rel == len(line) and w.endswith(b"\r") else w
    if len(line) <= max_text:
        return line[:-1] if line.endswith(b"\r") else line
    return line[:max_text]


def _check_rows(data: bytes, table, max_text: int, max_rows: int, exact_text: bool) -> list[tuple]:
    table.validate(full=True)  # offsets in bounds, UTF-8 valid
    rows = table_rows(table)
    per_sig: dict[str, int] = {}
    last_line: dict[str, int] = {}
    prev = (0, 0)
    for line, offset, end, sig, text in rows:
        assert (line, offset) >= prev, ("rows out of order", prev, line, offset)
        prev = (line, offset)
        assert 0 <= offset < max(len(data), 1) and (offset == 0 or data[offset - 1] == 0x0A), offset
        assert line == data.count(b"\n", 0, offset) + 1, (line, offset)
        nl = data.find(b"\n", offset)
        line_end = len(data) if nl < 0 else nl
        assert offset < end <= line_end, (offset, end, line_end)
        assert last_line.get(sig, 0) < line, ("two rows for one line and signature", sig, line)
        last_line[sig] = line
        per_sig[sig] = per_sig.get(sig, 0) + 1
        assert per_sig[sig] <= max_rows, (sig, per_sig[sig], max_rows)
        raw = text.encode("utf-8")
        assert len(raw) <= 3 * max_text, (len(raw), max_text)
        if exact_text:
            want = _excerpt(data, offset, end, max_text).decode("utf-8", "replace")
            assert text == want, (text, want)
    return rows


def TestOneInput(buf: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(buf)
    which = fdp.ConsumeIntInRange(0, len(SCANNERS) - 1)
    path = fdp.ConsumeIntInRange(0, 3)  # bytes, mmap x1, mmap ranges x2, read()
    max_text = fdp.ConsumeIntInRange(1, 80) if fdp.ConsumeBool() else fdp.ConsumeIntInRange(1, 5000)
    max_rows = fdp.ConsumeIntInRange(1, 6) if fdp.ConsumeBool() else 10_000
    block = fdp.ConsumeIntInRange(1, 300)
    overlap = fdp.ConsumeIntInRange(0, 200)
    max_piece = (
        block + overlap + fdp.ConsumeIntInRange(0, 600)
    )  # check_opts: block+overlap <= piece
    chunk = fdp.ConsumeIntInRange(1, 700)
    unit = fdp.ConsumeIntInRange(16, 4096)  # tiny ranges: see test_scanner_property
    data = _data(fdp)

    s = SCANNERS[which]
    s.options = _native.Options(
        max_rows_per_sig=max_rows,
        max_text=max_text,
        block_size=block,
        max_piece=max_piece,
        overlap=overlap,
        release_every=4096,
    )
    s.stream_chunk = chunk
    counts = None
    lines: dict[str, int] | None = None
    if sources.sniff(data[:8]) is not None:
        path = 0  # a file with gzip/zstd magic is decompressed, not scanned as is
    if path == 0:
        table = s.scan_bytes(data)
    else:
        LOG.write_bytes(data)
        kw = [{"threads": 1}, {"threads": 2, "unit_size": unit}, {"mmap": False}][path - 1]
        # binary=True: NUL-heavy inputs exercise the scan paths, not the sniffer's skip
        res = s.run([LOG], binary=True, **kw)
        assert res.ok, res.errors
        table = res.table
        counts = dict(
            zip(res.counts.column("signature").to_pylist(), res.counts.column("lines").to_pylist())
        )
        lines = res.matching_lines

    # a line longer than a piece is cut (see module doc): rows may differ then
    longest = max((len(x) + 1 for x in data.split(b"\n")), default=0)
    whole_lines = longest + block <= max_piece
    # only the chunked read() path loses the line start of a cut line; the
    # pieces of a cut line after its first keep their terminal codes
    exact = (whole_lines or path != 3) and (whole_lines or b"\x1b" not in data)
    rows = _check_rows(data, table, max_text, max_rows, exact_text=exact)
    if whole_lines:
        pats = PATTERN_SETS[which]
        want = oracle(data, pats, max_text=max_text, max_rows=max_rows)
        key = lambda r: (r[0], r[2], r[3])  # noqa: E731
        assert sorted(rows, key=key) == sorted(want, key=key), (rows, want)
        if counts is not None:
            full: dict[str, int] = {}
            every = oracle(data, pats, max_text=max_text)
            for r in every:
                full[r[3]] = full.get(r[3], 0) + 1
            assert counts == full, (counts, full)
            # grep -c: distinct lines any signature matched, whatever the row cap
            distinct = len({r[0] for r in every})
            assert lines == ({str(LOG): distinct} if distinct else {}), (lines, distinct)


def main() -> None:
    # libFuzzer ends the process itself: run.sh points TMPDIR at a directory it removes
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
