"""The compiled-database cache: hits, corruption, foreign files, unusable dirs."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from denpex_fast import _native, cache
from denpex_fast.engine.scanner import Scanner

PATS = {"a": ["CUDA out of memory"], "b": [r"Xid \d+"]}
DATA = b"CUDA out of memory\nXid 79\n"


def entries(d: Path) -> list[Path]:
    return sorted(d.glob("*.hsdb"))


def test_second_scanner_loads_from_cache(tmp_path: Path, monkeypatch) -> None:
    Scanner(patterns=PATS, cache_dir=tmp_path)
    assert len(entries(tmp_path)) == 1
    compiled = []
    real = _native.Database.compile
    monkeypatch.setattr(
        _native.Database, "compile", classmethod(lambda cls, *a: compiled.append(1) or real(*a))
    )
    s = Scanner(patterns=PATS, cache_dir=tmp_path)
    assert compiled == [] and s.scan_bytes(DATA).num_rows == 2


def test_key_changes_with_patterns_and_flags(tmp_path: Path) -> None:
    Scanner(patterns=PATS, cache_dir=tmp_path)
    Scanner(patterns={**PATS, "c": ["new"]}, cache_dir=tmp_path)
    Scanner(patterns=PATS, cache_dir=tmp_path, caseless=True)
    assert len(entries(tmp_path)) == 3


@pytest.mark.parametrize("damage", ["flip", "truncate", "foreign", "empty"])
def test_damaged_cache_is_recompiled_never_trusted(tmp_path: Path, damage: str) -> None:
    Scanner(patterns=PATS, cache_dir=tmp_path)
    (f,) = entries(tmp_path)
    blob = f.read_bytes()
    if damage == "flip":
        blob = blob[:-10] + bytes([blob[-10] ^ 0xFF]) + blob[-9:]
    elif damage == "truncate":
        blob = blob[: len(blob) // 2]
    elif damage == "foreign":  # a well-formed file whose payload is not a libhs database
        import hashlib

        payload = os.urandom(4096)
        blob = cache.MAGIC + hashlib.sha256(payload).digest() + payload
    else:
        blob = b""
    f.write_bytes(blob)
    s = Scanner(patterns=PATS, cache_dir=tmp_path)
    assert s.scan_bytes(DATA).num_rows == 2
    assert cache.load(tmp_path, f.stem, 2) is not None  # rewritten with a good database


def test_unwritable_cache_still_scans(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    s = Scanner(patterns=PATS, cache_dir=blocker / "sub")
    assert s.scan_bytes(DATA).num_rows == 2


def test_cache_disabled_by_env(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("DENPEX_CACHE_DIR", "off")
    assert cache.resolve_cache_dir(None) is None
    monkeypatch.setenv("DENPEX_CACHE_DIR", str(tmp_path / "c"))
    Scanner(patterns=PATS)
    assert len(entries(tmp_path / "c")) == 1


def test_pickle_ships_serialized_database(tmp_path: Path) -> None:
    s = Scanner(patterns=PATS, cache_dir=False)
    blob = pickle.dumps(s)
    s2 = pickle.loads(blob)
    assert s2.signature_ids == ["a", "b"]
    assert s2.scan_bytes(DATA).equals(s.scan_bytes(DATA))


def test_unpickling_the_same_database_twice_deserializes_once() -> None:
    # Dask can hand one worker two copies of a scattered scanner.
    s = Scanner(patterns=PATS, cache_dir=False)
    blob = pickle.dumps(s)
    first, second = pickle.loads(blob), pickle.loads(blob)
    assert first is not second and first._db is second._db
    other = pickle.loads(pickle.dumps(Scanner(patterns={"c": ["zzz+"]}, cache_dir=False)))
    assert other._db is not first._db
    assert second.scan_bytes(DATA).equals(s.scan_bytes(DATA))


def test_deserialize_rejects_garbage() -> None:
    with pytest.raises(_native.CallError) as ei:
        _native.Database.deserialize(b"\0" * 100, 1)
    assert ei.value.status == _native.ERR_DB


def test_native_argument_checks() -> None:
    with pytest.raises(ValueError):
        _native.Database.compile([], [], [], 1)
    db = _native.Database.compile([b"x"], [0], [0], 1)
    with pytest.raises(_native.CallError) as ei:  # id beyond n_sigs
        _native.Database.compile([b"x"], [0], [3], 1)
    assert ei.value.status == _native.ERR_ARG
    s = _native.Scratch(db)
    bad = _native.Options(block_size=0).to_c(0, _native.ffi.NULL)
    rc, _, msg = _native.scan_buffer(
        db,
        s,
        b"x\n",
        2,
        base_offset=0,
        base_line=0,
        line_start=0,
        opts=bad,
        tally=_native.Tally(1),
        result=_native.Result(),
    )
    assert rc == _native.ERR_ARG and "options" in msg
    rc, _, msg = _native.scan_buffer(
        db,
        s,
        b"x\n",
        2,
        base_offset=0,
        base_line=0,
        line_start=0,
        opts=_native.Options().to_c(0, _native.ffi.NULL),
        tally=_native.Tally(5),
        result=_native.Result(),
    )
    assert rc == _native.ERR_ARG and "tally" in msg
    assert _native.platform_supported()
    assert _native.hs_version()[0].isdigit()
