"""denpex_fast: native-accelerated log indexing and failure diagnosis for
distributed ML training.

    >>> import denpex_fast as dx
    >>> table = dx.scan(["rank0.log", "rank1.log.gz"])   # pyarrow.Table of matches
    >>> table = dx.scan("job/", attribute=True)          # rank, host, ts filled
    >>> df = dx.to_pandas(table)                         # rank stays an integer (Int32)

The scanner (``denpex_fast.scanner``) runs Hyperscan in C over memory-mapped
or decompressed logs and returns the match table; see ``MATCH_SCHEMA``.
Names are imported lazily so that ``import denpex_fast`` stays cheap.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "scan": ("scanner", "scan"),
    "Scanner": ("scanner", "Scanner"),
    "ScanResult": ("scanner", "ScanResult"),
    "MATCH_SCHEMA": ("scanner", "MATCH_SCHEMA"),
    "diagnose": ("diagnosis", "diagnose"),
    "Diagnosis": ("diagnosis", "Diagnosis"),
    "attribute": ("attribution", "attribute"),
    "Attribution": ("attribution", "Attribution"),
    "CancelFlag": ("_native", "CancelFlag"),
    "hs_version": ("_native", "hs_version"),
    "load_signatures": ("signatures", "load_signatures"),
    "DenpexError": ("errors", "DenpexError"),
    "PatternError": ("errors", "PatternError"),
    "ScanError": ("errors", "ScanError"),
    "SignatureError": ("errors", "SignatureError"),
    "FileError": ("errors", "FileError"),
    "open_index": ("query", "open_index"),
    "Index": ("query", "Index"),
    "build_index": ("index", "build_index"),
    "to_pandas": ("tables", "to_pandas"),
    "pandas_types_mapper": ("tables", "pandas_types_mapper"),
}

__all__ = sorted(_LAZY)


def __dir__() -> list[str]:
    # the lazy names too, so that tab completion and dir() show dx.scan & co.
    return sorted((set(globals()) - {"Any", "annotations"}) | set(_LAZY))


def __getattr__(name: str) -> Any:
    if name == "dask":  # the Dask adapter, imported on first use (needs the [dask] extra)
        import importlib

        return importlib.import_module("denpex_fast.dask")
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'denpex_fast' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(f"denpex_fast.{module}"), attr)
    globals()[name] = value
    return value
