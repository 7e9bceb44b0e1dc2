"""Parsed signature files are cached by path + bytes, never trusted when corrupt."""

from __future__ import annotations

from pathlib import Path

import pytest

from denpex_fast import signatures

ENTRY = '''schema = "denpex.signatures/1"
family = "mine"

[[signature]]
id = "mine-disk"
title = "{title}"
framework = "any"
phase = "storage"
role = "cause"
severity = "error"
patterns = ['no space left on the scratch disk']
root_cause = """The scratch disk filled up."""
fix = """Free the scratch disk."""
verify = "df shows free space"
checklist = ["Check df"]
references = ["https://example.org/disk"]
examples.match = ["error: no space left on the scratch disk"]
examples.nomatch = ["plenty of space"]
'''


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DENPEX_CACHE_DIR", str(tmp_path / "cache" / "db"))
    return tmp_path / "cache" / "kb"


def test_a_parse_is_reused_and_an_edit_is_seen(cache: Path, tmp_path: Path) -> None:
    f = tmp_path / "mine.toml"
    f.write_text(ENTRY.format(title="Scratch disk full"))
    assert signatures.load_file(f)[0].title == "Scratch disk full"
    entries = list(cache.glob("*.pkl"))
    assert len(entries) == 1
    assert signatures.load_file(f)[0].title == "Scratch disk full"  # from the cache
    f.write_text(ENTRY.format(title="Scratch disk is full"))
    assert signatures.load_file(f)[0].title == "Scratch disk is full"  # new bytes, new key
    assert len(list(cache.glob("*.pkl"))) == 2


def test_a_corrupt_entry_is_ignored_and_rewritten(cache: Path, tmp_path: Path) -> None:
    f = tmp_path / "mine.toml"
    f.write_text(ENTRY.format(title="Scratch disk full"))
    signatures.load_file(f)
    (entry,) = cache.glob("*.pkl")
    blob = bytearray(entry.read_bytes())
    blob[-5] ^= 0xFF
    entry.write_bytes(bytes(blob))
    (sig,) = signatures.load_file(f)
    assert sig.id == "mine-disk" and sig.title == "Scratch disk full"
    entry.write_bytes(b"not a cache file")
    assert signatures.load_file(f)[0].id == "mine-disk"


def test_an_invalid_file_still_fails_with_its_message(cache: Path, tmp_path: Path) -> None:
    f = tmp_path / "mine.toml"
    f.write_text(ENTRY.format(title="ok").replace('role = "cause"', 'role = "bogus"'))
    with pytest.raises(signatures.SignatureError, match="mine-disk.*role"):
        signatures.load_file(f)
    assert not list(cache.glob("*.pkl"))  # errors are not cached
