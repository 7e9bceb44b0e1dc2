"""On-disk cache of parsed signature files (``kb/`` beside the database cache).

Entries are keyed by the file's path, its bytes and the loader's format
number, stored as a pickle behind a magic + sha256 header, and read back only
when the checksum matches; the loader also checks that the content is a list
of ``Signature`` objects.  A missing, read-only or full cache directory only
costs the parse time.
"""

from __future__ import annotations

import hashlib
import logging
import pickle
from pathlib import Path
from typing import Any

from ..cachedir import default_cache_dir, read_checked, write_checked

log = logging.getLogger(__name__)


KB_MAGIC = b"DXKB001\n"


def parsed_key(path: str, data: bytes, fmt: int) -> str:
    """Hash of a signature file's path, bytes and the loader's format."""
    h = hashlib.sha256()
    h.update(f"{fmt}\0{path}\0".encode("utf-8", "surrogateescape"))
    h.update(data)
    return h.hexdigest()


def _kb_dir() -> Path | None:
    d = default_cache_dir()
    return None if d is None else d.parent / "kb"


def load_parsed(key: str) -> Any:
    """The cached parse for ``key``, or None when absent, corrupt or unreadable."""
    d = _kb_dir()
    if d is None:
        return None
    payload = read_checked(d / f"{key}.pkl", KB_MAGIC)
    if payload is None:
        return None
    try:
        return pickle.loads(payload)
    except Exception:  # noqa: BLE001 - a stale or foreign entry is only a cache miss
        return None


def store_parsed(key: str, value: Any) -> bool:
    """Write a parse atomically; False when the cache is off or unusable."""
    d = _kb_dir()
    if d is None:
        return False
    try:
        write_checked(
            d / f"{key}.pkl", KB_MAGIC, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        )
        return True
    except (OSError, pickle.PicklingError) as exc:
        log.info("parsed-signature cache disabled for this run (%s): %s", d, exc)
        return False
