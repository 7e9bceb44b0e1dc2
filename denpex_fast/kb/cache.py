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
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

from ..cachedir import default_cache_dir

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
    try:
        blob = (d / f"{key}.pkl").read_bytes()
    except OSError:
        return None
    head = len(KB_MAGIC) + 32
    if len(blob) <= head or not blob.startswith(KB_MAGIC):
        return None
    payload = blob[head:]
    if hashlib.sha256(payload).digest() != blob[len(KB_MAGIC) : head]:
        log.info("ignoring corrupt parsed-signature cache file %s", d / f"{key}.pkl")
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
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".pkl", dir=d)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(KB_MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(tmp, d / f"{key}.pkl")
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        return True
    except (OSError, pickle.PicklingError) as exc:
        log.info("parsed-signature cache disabled for this run (%s): %s", d, exc)
        return False
