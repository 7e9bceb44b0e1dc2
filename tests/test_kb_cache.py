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


def test_the_pattern_map_is_reused_and_an_edit_is_seen(cache: Path, tmp_path: Path) -> None:
    from denpex_fast.kb.signatures import load_patterns, load_signatures

    f = tmp_path / "mine.toml"
    f.write_text(ENTRY.format(title="Scratch disk full"))
    full = load_signatures([f]).patterns()
    first, loaded = load_patterns([f])
    assert first == full
    second, lazy = load_patterns([f])  # a hit: same map, the entries load only when asked
    assert second == full and lazy()["mine-disk"].title == "Scratch disk full"
    # an edited pattern is a new key: the scan sees the new expression
    f.write_text(ENTRY.format(title="t").replace("the scratch disk'", "the scratch volume'"))
    assert load_patterns([f])[0]["mine-disk"] == ["no space left on the scratch volume"]


def test_a_corrupt_pattern_map_is_a_miss(cache: Path, tmp_path: Path) -> None:
    from denpex_fast.kb.signatures import load_patterns

    f = tmp_path / "mine.toml"
    f.write_text(ENTRY.format(title="Scratch disk full"))
    before = {p.name for p in cache.glob("*.pkl")}
    expected, _ = load_patterns([f], builtin=False)
    (entry,) = [p for p in cache.glob("*.pkl") if p.name not in before and p.stat().st_size < 400]
    entry.write_bytes(b"not a cache file")
    assert load_patterns([f], builtin=False)[0] == expected


def test_a_set_that_fails_to_load_fails_every_time(cache: Path, tmp_path: Path) -> None:
    from denpex_fast.kb.signatures import load_patterns

    f = tmp_path / "mine.toml"
    g = tmp_path / "theirs.toml"
    f.write_text(ENTRY.format(title="a"))
    g.write_text(ENTRY.format(title="b").replace('"mine"', '"theirs"'))  # one id twice
    for _ in range(2):
        with pytest.raises(signatures.SignatureError, match="duplicate id"):
            load_patterns([tmp_path], builtin=False)


def test_a_default_scanner_loads_its_knowledge_base_entries_when_asked(tmp_path: Path) -> None:
    from denpex_fast.engine.scanner import Scanner
    from denpex_fast.kb.signatures import load_signatures

    Scanner()  # fills the pattern cache if this run has not yet
    scanner = Scanner()
    full = load_signatures()
    assert scanner.signature_ids == list(full.patterns())
    assert [s.id for s in scanner.signature_set] == [s.id for s in full]
    job = tmp_path / "job.log"
    job.write_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    assert "cuda-oom" in scanner.run([job]).table.column("signature").to_pylist()
