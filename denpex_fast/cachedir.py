"""Where the on-disk caches live (compiled databases, parsed signature files).

``cache_dir=`` argument, else ``$DENPEX_CACHE_DIR``, else
``platformdirs.user_cache_dir("denpex_fast")``; ``cache_dir=False`` or
``DENPEX_CACHE_DIR=off`` disables caching.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)


def default_cache_dir() -> Path | None:
    """The cache directory in effect when none is passed (None: disabled)."""
    env = os.environ.get("DENPEX_CACHE_DIR")
    if env is not None:
        return None if env.strip().lower() in ("", "off", "0", "none") else Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("denpex_fast")) / "db"


def resolve_cache_dir(cache_dir: str | os.PathLike[str] | bool | None) -> Path | None:
    """Turn the user's ``cache_dir`` argument into a directory or None."""
    if cache_dir is False:
        return None
    if cache_dir is None or cache_dir is True:
        return default_cache_dir()
    return Path(cache_dir)


def read_checked(path: Path, magic: bytes) -> bytes | None:
    """The payload of a cache file :func:`write_checked` wrote, or None when
    it is absent, unreadable, of another format or corrupt: nothing read
    from a cache is trusted without its digest."""
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    head = len(magic) + 32
    if len(blob) < head or not blob.startswith(magic):
        log.info("ignoring malformed cache file %s", path)
        return None
    payload = blob[head:]
    if hashlib.sha256(payload).digest() != blob[len(magic) : head]:
        log.info("ignoring corrupt cache file %s", path)
        return None
    return payload


def write_checked(path: Path, magic: bytes, payload: bytes) -> None:
    """Write ``magic + sha256(payload) + payload`` to ``path`` atomically
    (a temporary file renamed into place); raises OSError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=path.suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(magic + hashlib.sha256(payload).digest() + payload)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
