"""Inputs that once broke the scanner, found by the fuzzers (tests/fuzz) and the
sanitizer run (tests/sanitize).  Each stays here as a plain test.

The raw fuzzer inputs are kept under tests/fuzz/corpus/ as seeds; the tests
below state the same inputs directly, so they do not depend on how a harness
decodes its bytes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import denpex_fast as dx

from scan_oracle import oracle, sort_rows, table_rows

TIMEOUT = {"timeout": [r"NCCL WARN [^\n]*timeout"]}


@pytest.mark.parametrize("tail", [b"", b"next line\n"], ids=["last-line", "more-lines"])
def test_line_of_exactly_max_text_bytes_loses_its_cr(
    tail: bytes, scan_config, make_scanner, tmp_path: Path
) -> None:
    # 39 bytes + CR = max_text: the whole line fits, so the CRLF's CR is removed
    # (the newline sat just past the searched window and the CR was kept).
    data = b"NCCL WARN timeouttimeouttimeoutxxxxaa  \r\n" + tail
    s = make_scanner(TIMEOUT, max_text=40)
    rows = table_rows(scan_config(s, data, tmp_path))
    assert rows == [(1, 0, 17, "timeout", "NCCL WARN timeouttimeouttimeoutxxxxaa  ")]
    assert sort_rows(rows) == sort_rows(oracle(data, TIMEOUT, max_text=40))


@pytest.mark.parametrize("max_text", [39, 40, 41, 42])
def test_cr_at_the_text_limit(max_text: int, make_scanner) -> None:
    data = b"NCCL WARN timeout " + b"x" * 20 + b"\r\n" + b"a\r\n"
    s = make_scanner(TIMEOUT, max_text=max_text)
    assert table_rows(s.scan_bytes(data)) == oracle(data, TIMEOUT, max_text=max_text)


@pytest.mark.parametrize("max_text", [4, 8, 12])
def test_a_match_that_takes_in_a_crlfs_cr_past_the_text_limit_drops_it(
    max_text: int, make_scanner
) -> None:
    # the match's own \s* takes in the CR, and the window of max_text bytes
    # ending there stopped just before the newline: the CR stayed, or went
    # only when a read boundary fell between CR and LF
    pats = {"ill": [r"ILL x\s*"]}
    data = b"\x0b\x13\x08\t\x19\x0c\x03\x18ILL x\r\nnext\r\n"
    s = make_scanner(pats, max_text=max_text)
    rows = table_rows(s.scan_bytes(data))
    assert rows == oracle(data, pats, max_text=max_text)
    assert not rows[0][4].endswith("\r")


def test_pattern_with_lone_surrogate_is_a_pattern_error(make_scanner) -> None:
    # str patterns may carry surrogates (os.fsdecode of undecodable bytes)
    with pytest.raises(dx.PatternError) as ei:
        make_scanner({"ok": ["fine"], "bad": ["x", "a\udb6cb"]})
    assert (ei.value.signature, ei.value.index) == ("bad", 1)
    assert "Unicode" in str(ei.value)


def test_signature_id_with_lone_surrogate_is_refused_up_front(make_scanner) -> None:
    with pytest.raises(ValueError, match="not valid Unicode"):
        make_scanner({"sig\udb6c": ["fine"]})
