"""denpex_fast: native-accelerated log indexing and failure diagnosis for
distributed ML training.

    >>> import denpex_fast as dx
    >>> table = dx.scan(["rank0.log", "rank1.log.gz"])   # pyarrow.Table of matches
    >>> table = dx.scan("job/", attribute=True)          # rank, host, ts filled
    >>> df = dx.to_pandas(table)                         # rank stays an integer (Int32)

The scanner (``denpex_fast.engine.scanner``) runs Hyperscan in C over memory-mapped
or decompressed logs and returns the match table; see ``MATCH_SCHEMA``.
Names are imported lazily so that ``import denpex_fast`` stays cheap.
"""

from __future__ import annotations

import logging
from typing import Any

__version__ = "0.1.0"

# a library logs through "denpex_fast.*" and prints nothing unless the
# application configures logging (the denpex command does with -v)
logging.getLogger("denpex_fast").addHandler(logging.NullHandler())

_LAZY = {
    "scan": ("api", "scan"),
    "Scanner": ("engine.scanner", "Scanner"),
    "ScanResult": ("engine.scanner", "ScanResult"),
    "MATCH_SCHEMA": ("engine.scanner", "MATCH_SCHEMA"),
    "diagnose": ("analysis.diagnosis", "diagnose"),
    "Diagnosis": ("analysis.diagnosis", "Diagnosis"),
    "attribute": ("facts.attribution", "attribute"),
    "Attribution": ("facts.attribution", "Attribution"),
    "CancelFlag": ("engine._native", "CancelFlag"),
    "hs_version": ("engine._native", "hs_version"),
    "load_signatures": ("engine.kbcheck", "load_signatures"),
    "DenpexError": ("errors", "DenpexError"),
    "PatternError": ("errors", "PatternError"),
    "ScanError": ("errors", "ScanError"),
    "SignatureError": ("errors", "SignatureError"),
    "FileError": ("errors", "FileError"),
    "open_index": ("batch.query", "open_index"),
    "Index": ("batch.query", "Index"),
    "build_index": ("batch.build", "build_index"),
    "to_pandas": ("tables", "to_pandas"),
    "pandas_types_mapper": ("tables", "pandas_types_mapper"),
}

__all__ = sorted(_LAZY)

# Modules that lived at the top level before the package was laid out by stage
# (io, kb, engine, facts, analysis, batch); their old paths stay importable.
_MOVED = frozenset(
    {
        "sources",
        "jobs",
        "spool",
        "readback",
        "signatures",
        "_native",
        "scanner",
        "cache",
        "attribution",
        "timeparse",
        "incidents",
        "ranker",
        "causal",
        "progress",
        "baseline",
        "resume",
        "diagnosis",
        "index",
        "dask",
        "query",
    }
)


def __dir__() -> list[str]:
    # the lazy names too, so that tab completion and dir() show dx.scan & co.
    return sorted((set(globals()) - {"Any", "annotations", "logging"}) | set(_LAZY))


def __getattr__(name: str) -> Any:
    if name == "dask":  # the Dask adapter, imported on first use (needs the [dask] extra)
        import importlib

        return importlib.import_module("denpex_fast.batch.dask")
    if name in _MOVED:  # a module's pre-0.2 top-level path (an alias for one release)
        import importlib

        return importlib.import_module(f"denpex_fast.{name}")
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'denpex_fast' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(f"denpex_fast.{module}"), attr)
    globals()[name] = value
    return value
