"""The seal: proof, from stats alone, that a local archive and its index are
as the last clean run left them.

A re-index of an unchanged archive finds nothing to do, yet the full path
pays for pyarrow, numpy and fsspec (~0.15 s) to find that out.  At the end
of a clean run over a local root into a local index, the run writes
``INDEX/_seal.json``: the stats of every directory and file under the root
(taken when the run started, checked again at its end) and of the index's
own tree.  ``denpex index`` first checks the seal with ``os.stat`` alone;
when every stat is the same, the archive is unchanged and no module of the
full path is imported.  Any difference, a missing or unreadable seal, or a
request it was not written for sends the run down the full path, which
removes the seal before it writes anything (so a crashed or concurrent writer
never leaves a seal that is wrong).

Stats are compared as :func:`~denpex_fast.batch.index.plan_job` compares
files (size and modification time): a file rewritten with the same size
within the same clock tick is missed by both.  A directory's modification
time changes when an entry is added, removed or renamed in it, so new and
deleted files and jobs are seen without listing them.  A tree with a
symbolic link, or more than :data:`MAX_ENTRIES` entries, is not sealed.
"""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = [
    "MAX_ENTRIES",
    "SEAL",
    "Stats",
    "check",
    "is_local",
    "remove",
    "request_key",
    "walk",
    "write",
]

SEAL = "_seal.json"
#: trees larger than this are not sealed (the seal would be costly to check)
MAX_ENTRIES = 200_000
_VERSION = 1
#: index entries that change on every run without changing what is committed
_VOLATILE = {SEAL, ".lock"}
_TMP = f".tmp{SEAL}"

#: path relative to the walked root -> [size, mtime_ns] (directories: [-1, mtime_ns])
Stats = dict[str, list[int]]


def is_local(path: str) -> bool:
    """A plain local path (an fsspec URL is never sealed)."""
    return "://" not in path and not path.startswith("memory:")


def walk(root: str, exclude: str | None = None, *, index: bool = False) -> Stats | None:
    """The stats of ``root``'s tree, ``exclude``'s subtree left out (and,
    ``index``: the entries of an index's root that every run rewrites); None
    when the tree cannot be sealed (a symbolic link, an unreadable entry,
    too many entries)."""
    root = os.path.abspath(root)
    skip = os.path.abspath(exclude) if exclude else None
    out: Stats = {}
    try:
        st = os.stat(root)
        out["."] = [-1, st.st_mtime_ns]
        stack = [root]
        while stack:
            d = stack.pop()
            with os.scandir(d) as it:
                for e in it:
                    if e.is_symlink():
                        return None
                    if index and d == root and (e.name in _VOLATILE or e.name.startswith(_TMP)):
                        continue
                    if e.path == skip:
                        continue
                    st = e.stat(follow_symlinks=False)
                    rel = os.path.relpath(e.path, root)
                    if e.is_dir(follow_symlinks=False):
                        out[rel] = [-1, st.st_mtime_ns]
                        stack.append(e.path)
                    else:
                        out[rel] = [st.st_size, st.st_mtime_ns]
                    if len(out) > MAX_ENTRIES:
                        return None
    except OSError:
        return None
    return out


def _unchanged(root: str, stats: Stats) -> bool:
    base = os.path.abspath(root)
    for rel, (size, mtime) in stats.items():
        try:
            st = os.stat(os.path.join(base, rel), follow_symlinks=False)
        except OSError:
            return False
        if st.st_mtime_ns != mtime or (size >= 0 and st.st_size != size):
            return False
    return True


def _names(index: str) -> list[str]:
    return sorted(n for n in os.listdir(index) if n not in _VOLATILE and not n.startswith(_TMP))


def remove(index: str) -> None:
    """Drop the seal (every writer does, before it writes anything)."""
    if is_local(index):
        try:
            os.unlink(os.path.join(index, SEAL))
        except FileNotFoundError:
            pass


def write(
    root: str, index: str, request: dict[str, Any], before: Stats, jobs: dict[str, list[int]]
) -> bool:
    """Seal ``index`` for ``request`` when ``root`` still has the stats
    ``before`` (taken when the run started); ``jobs``: job -> [files, bytes]
    for the summary of a run that finds them unchanged.  True when sealed."""
    if not _unchanged(root, before):
        return False  # changed while the run read it: the next run must look
    inside = walk(index, index=True)
    if inside is None:
        return False
    inside.pop(".", None)  # the seal itself changes the index root's mtime
    doc = {
        "version": _VERSION,
        "request": request,
        "root": before,
        "index": inside,
        "names": _names(index),
        "jobs": jobs,
    }
    tmp = os.path.join(index, f"{_TMP}.{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, separators=(",", ":"))
        os.replace(tmp, os.path.join(index, SEAL))
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
    return True


def check(root: str, index: str, request: dict[str, Any]) -> dict[str, list[int]] | None:
    """The jobs (job -> [files, bytes]) when the seal of ``index`` holds for
    ``request`` and every stat it records is unchanged; None otherwise."""
    if not (is_local(root) and is_local(index)):
        return None
    try:
        fd = os.open(os.path.join(index, ".lock"), os.O_RDWR)
    except OSError:
        return None
    try:
        import fcntl

        # held while checking: a writer removes the seal as soon as it holds
        # the lock, and one that holds it now is met by the full path
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return _check(root, index, request)
    except OSError:
        return None
    finally:
        os.close(fd)


def _check(root: str, index: str, request: dict[str, Any]) -> dict[str, list[int]] | None:
    try:
        with open(os.path.join(index, SEAL), encoding="utf-8") as fh:
            doc = json.load(fh)
        if doc.get("version") != _VERSION or doc.get("request") != request:
            return None
        if _names(index) != doc["names"] or not _unchanged(index, doc["index"]):
            return None
        if not _unchanged(root, doc["root"]):
            return None
        return {str(k): list(v) for k, v in doc["jobs"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def request_key(
    root: str,
    index: str,
    *,
    job_glob: str | None,
    job_regex: str | None,
    signatures: list[str] | None,
    binary: bool,
) -> dict[str, Any]:
    """What a seal is valid for: the same root, index, job layout, knowledge
    base paths and scan options (custom patterns are never sealed)."""
    return {
        "root": os.path.abspath(root),
        "index": os.path.abspath(index),
        "job_glob": job_glob,
        "job_regex": job_regex,
        "signatures": [os.path.abspath(s) for s in signatures] if signatures else None,
        "binary": bool(binary),
    }
