"""The C boundary: statuses become exceptions in one place, of the kind they are."""

from __future__ import annotations

import pytest

from denpex_fast.engine import _native


def test_statuses_map_to_exception_kinds() -> None:
    err = _native._new_error()
    with pytest.raises(MemoryError):
        _native._raise(_native.ERR_NOMEM, err)
    err.err_no = 13
    with pytest.raises(OSError) as ei:
        _native._raise(_native.ERR_IO, err)
    assert ei.value.errno == 13 and isinstance(ei.value, _native.CallError)
    with pytest.raises(_native.CallError) as ei2:
        _native._raise(_native.ERR_HS, err)
    assert not isinstance(ei2.value, (MemoryError, OSError))


def test_flags_come_from_the_library_header() -> None:
    # distinct single bits, as hs_compile.h defines them
    flags = [
        _native.HS_FLAG_CASELESS,
        _native.HS_FLAG_DOTALL,
        _native.HS_FLAG_MULTILINE,
        _native.HS_FLAG_SINGLEMATCH,
        _native.HS_FLAG_ALLOWEMPTY,
        _native.HS_FLAG_UTF8,
    ]
    assert all(f > 0 and f & (f - 1) == 0 for f in flags) and len(set(flags)) == len(flags)


def test_a_bad_database_blob_is_an_error_not_a_crash() -> None:
    with pytest.raises(_native.CallError):
        _native.Database.deserialize(b"not a database" * 8, 1)
