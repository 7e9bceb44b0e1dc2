"""On-disk cache of compiled Hyperscan databases.

Compiling a few hundred signatures takes 0.1-0.5 s; loading the serialized
database takes well under a millisecond.  Entries are keyed by a hash of the
pattern set, the flags, the libhs version and the CPU features libhs targets,
so a library upgrade or another machine never reuses a stale database.

File format: ``DXHSDB1\\n`` + sha256(payload) + payload.  A file whose hash
does not match, or that libhs refuses, is treated as absent (recompiled and
rewritten); nothing read from the cache is trusted blindly.  A cache directory
that is missing, read-only or full only costs the compile time.

Location: ``cache_dir=`` argument, else ``$DENPEX_CACHE_DIR``, else
``platformdirs.user_cache_dir("denpex_fast")``; ``cache_dir=False`` or
``DENPEX_CACHE_DIR=off`` disables the cache.

Parsed signature files have their own cache beside this one
(:mod:`denpex_fast.kb.cache`).
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the native module loads only for the database cache
    from . import _native

from ..cachedir import default_cache_dir, read_checked, resolve_cache_dir, write_checked

log = logging.getLogger(__name__)

__all__ = ["cache_key", "default_cache_dir", "load", "resolve_cache_dir", "store"]

MAGIC = b"DXHSDB1\n"
FORMAT_VERSION = 1


def cache_key(expressions: list[bytes], flags: list[int], ids: list[int], n_sigs: int) -> str:
    """Hash of everything that determines the compiled database."""
    from . import _native

    h = hashlib.sha256()
    h.update(
        json.dumps(
            {
                "format": FORMAT_VERSION,
                "hs": _native.hs_version(),
                "platform": _native.platform_key(),
                "n_sigs": n_sigs,
            },
            sort_keys=True,
        ).encode()
    )
    for e, f, i in zip(expressions, flags, ids):
        h.update(len(e).to_bytes(8, "little"))
        h.update(e)
        h.update(f.to_bytes(4, "little"))
        h.update(i.to_bytes(4, "little"))
    return h.hexdigest()


def load(directory: Path | None, key: str, n_sigs: int) -> _native.Database | None:
    """The cached database for ``key``, or None when absent or unusable."""
    if directory is None:
        return None
    path = directory / f"{key}.hsdb"
    payload = read_checked(path, MAGIC)
    if payload is None:
        return None
    from . import _native

    try:
        return _native.Database.deserialize(payload, n_sigs)
    except _native.CallError as exc:
        log.info("ignoring cache file %s: %s", path, exc)
        return None


def store(directory: Path | None, key: str, db: _native.Database) -> bool:
    """Write ``db`` atomically; returns False (and logs) when the cache is unusable."""
    if directory is None:
        return False
    from . import _native

    try:
        write_checked(directory / f"{key}.hsdb", MAGIC, db.serialize())
        return True
    except (OSError, _native.CallError) as exc:
        log.info("database cache disabled for this run (%s): %s", directory, exc)
        return False
