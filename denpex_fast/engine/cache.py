"""On-disk cache of compiled Hyperscan databases and parsed signature files.

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

Parsed signature files (``kb/`` beside ``db/``) are keyed by the file's path,
its bytes and the loader's format number, stored as a pickle behind the same
magic + sha256 header, and read back only when the checksum matches and the
content is a list of ``Signature`` objects.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import pickle
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the native module loads only for the database cache
    from ..engine import _native

log = logging.getLogger(__name__)

MAGIC = b"DXHSDB1\n"
FORMAT_VERSION = 1


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


def cache_key(expressions: list[bytes], flags: list[int], ids: list[int], n_sigs: int) -> str:
    """Hash of everything that determines the compiled database."""
    from ..engine import _native

    h = hashlib.sha256()
    h.update(json.dumps({
        "format": FORMAT_VERSION,
        "hs": _native.hs_version(),
        "platform": _native.platform_key(),
        "n_sigs": n_sigs,
    }, sort_keys=True).encode())
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
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    head = len(MAGIC) + 32
    if len(blob) <= head or not blob.startswith(MAGIC):
        log.info("ignoring malformed cache file %s", path)
        return None
    payload = blob[head:]
    if hashlib.sha256(payload).digest() != blob[len(MAGIC):head]:
        log.info("ignoring corrupt cache file %s", path)
        return None
    from ..engine import _native

    try:
        return _native.Database.deserialize(payload, n_sigs)
    except _native.CallError as exc:
        log.info("ignoring cache file %s: %s", path, exc)
        return None


def store(directory: Path | None, key: str, db: _native.Database) -> bool:
    """Write ``db`` atomically; returns False (and logs) when the cache is unusable."""
    if directory is None:
        return False
    from ..engine import _native

    try:
        payload = db.serialize()
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".hsdb", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(tmp, directory / f"{key}.hsdb")
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        return True
    except (OSError, _native.CallError) as exc:
        log.info("database cache disabled for this run (%s): %s", directory, exc)
        return False


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
    if hashlib.sha256(payload).digest() != blob[len(KB_MAGIC):head]:
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
