"""On-disk cache of healthy-baseline template sets.

A healthy run is compared against many failed ones; templating it reads
every byte (about 1 s per GiB on two cores), while its template set is a
few hundred kilobytes.  The set is kept beside the compiled databases
(:mod:`denpex_fast.cachedir`), keyed by each baseline file's path, size,
modification time and inode, and by the template function itself (the
hashes of fixed probe lines, so a changed masking rule never reuses an old
set).  A baseline given as anything but plain files (stdin, archives on
other filesystems) is not cached.

File format: ``DXTSET1\\n`` + sha256(payload) + payload, the payload being
the hashes as little-endian ``uint64``.  A file whose digest does not match
is treated as absent and rewritten; a missing, read-only or full cache
directory only costs the templating.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..cachedir import read_checked, resolve_cache_dir, write_checked
from ..engine import _native
from ..io.sources import Input

log = logging.getLogger(__name__)

MAGIC = b"DXTSET1\n"
#: lines whose template hashes change whenever the masking rules do
_PROBES = (
    b"2024-05-01 12:00:03,114 INFO rank=3 step=12 loss=0.6931 at 0x7f3a9c /opt/run/x.py:42",
    b"node3:41877:41990 [2] NCCL WARN NET/Socket : peer 10.0.0.5<52344> shutdown",
)


def baseline_key(inputs: Sequence[Input]) -> str | None:
    """The cache key of a baseline made of ``inputs``, or None when one of
    them is not a plain file whose identity a stat can tell."""
    h = hashlib.sha256()
    h.update(json.dumps([_native.template_hash(p) for p in _PROBES]).encode())
    for inp in inputs:
        if inp.path is None:
            return None
        try:
            st = os.stat(inp.path)
        except OSError:
            return None
        h.update(
            json.dumps(
                [os.fsdecode(os.path.abspath(inp.path)), st.st_size, st.st_mtime_ns, st.st_ino]
            ).encode()
        )
    return h.hexdigest()


def load(directory: Path | None, key: str) -> _native.TemplateSet | None:
    """The cached set for ``key``, or None (absent, unreadable or corrupt)."""
    if directory is None:
        return None
    f = directory / f"baseline-{key}.tset"
    payload = read_checked(f, MAGIC)
    if payload is None or len(payload) % 8:
        return None
    try:
        return _native.TemplateSet.from_array(np.frombuffer(payload, dtype="<u8"))
    except ValueError:
        log.warning("ignoring corrupt baseline cache entry %s", f)
        return None


def store(directory: Path | None, key: str, known: _native.TemplateSet) -> bool:
    """Write the set atomically; False when the directory cannot take it."""
    if directory is None:
        return False
    try:
        write_checked(
            directory / f"baseline-{key}.tset", MAGIC, known.to_array().astype("<u8").tobytes()
        )
        return True
    except OSError as exc:
        log.info("baseline cache not written: %s", exc)
        return False


def cache_directory() -> Path | None:
    """The cache directory in effect (None: caching disabled)."""
    return resolve_cache_dir(None)
