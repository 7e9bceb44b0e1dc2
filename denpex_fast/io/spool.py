"""Inputs that cannot be read twice, kept on local disk for one diagnosis.

A diagnosis reads a little of a job again after the scan (the lines around
the initiating line, timestamps on earlier lines, a rank's last line).  A
pipe on stdin and the members of a tar archive are read forward once, so
:func:`spool` copies them into a private temporary directory as they are
read; the scan then maps them like any file, and the job's
:class:`~denpex_fast.io.readback.JobBytes` answers from the copies.  Their
labels stay what the user would expect: ``-`` for stdin,
``archive.tar::member`` for a member.  The copies are removed when the
reader that uses them is garbage collected (or at interpreter exit).

The same job therefore gives the same diagnosis whether it is read from a
directory, from a tar archive or from stdin.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from .sources import STDIN, limit_or_default

CHUNK = 4 << 20


@dataclass
class Spool:
    """What :func:`spool` made: the paths to scan and the label of each copy."""

    paths: list[Any]  # what to hand to the scanner
    labels: dict[str, str] = field(default_factory=dict)  # copy's display path -> label
    errors: list[tuple[str, str]] = field(default_factory=list)  # (label, message)
    directory: str | None = None

    def keep_alive_with(self, owner: Any) -> None:
        """Remove the copies once ``owner`` is garbage collected."""
        if self.directory is not None:
            weakref.finalize(owner, shutil.rmtree, self.directory, True)


def needs_spool(paths: Iterable[Any]) -> bool:
    """True when ``paths`` names stdin or a tar archive."""
    from .jobs import is_tar_name

    for p in paths:
        name = os.fsdecode(p) if isinstance(p, (str, bytes, os.PathLike)) else ""
        if name == STDIN or (is_tar_name(name) and os.path.isfile(name)):
            return True
    return False


def spool(paths: Iterable[Any], *, max_bytes: int | None = None) -> Spool:
    """Copy stdin and the regular members of tar archives among ``paths`` to a
    temporary directory; other paths pass through unchanged.

    ``max_bytes``: bytes copied at most per stream (default: the scanner's
    bound on decompressed bytes); a stream cut there is reported in
    ``errors`` and its copy holds what came before.
    """
    from .jobs import is_tar_name
    from .sources import display_name

    limit = limit_or_default(max_bytes)
    out = Spool([])
    n = 0

    def target() -> str:
        nonlocal n
        if out.directory is None:
            out.directory = tempfile.mkdtemp(prefix="denpex-spool-")
        n += 1
        return os.path.join(out.directory, f"{n:07d}")

    for p in paths:
        name = os.fsdecode(p) if isinstance(p, (str, bytes, os.PathLike)) else ""
        if name == STDIN:
            dest = target()
            with open(dest, "wb") as w:
                err = _copy(sys.stdin.buffer, w, limit)
            out.paths.append(dest)
            out.labels[display_name(os.fsencode(dest))] = STDIN
            if err:
                out.errors.append((STDIN, err))
        elif is_tar_name(name) and os.path.isfile(name):
            _spool_tar(name, out, target, limit)
        else:
            out.paths.append(p)
    return out


def _spool_tar(archive: str, out: Spool, target: Any, limit: int | None) -> None:
    from .jobs import HashingReader, StreamError, iter_tar_members
    from .sources import display_name

    try:
        raw = open(archive, "rb")
    except OSError as exc:
        out.errors.append((archive, f"open: {exc.strerror or exc}"))
        return
    with raw:
        try:
            for label, member in iter_tar_members(HashingReader(raw), archive):
                dest = target()
                with open(dest, "wb") as w:
                    err = _copy(member, w, limit)
                out.paths.append(dest)
                out.labels[display_name(os.fsencode(dest))] = label
                if err:
                    out.errors.append((label, err))
        except StreamError as exc:
            out.errors.append((archive, str(exc)))


def _copy(src: Any, dst: Any, limit: int | None) -> str | None:
    """Copy ``src`` to ``dst``; the reason it stopped early, if it did."""
    done = 0
    while True:
        want = CHUNK if limit is None else min(CHUNK, limit - done)
        if want <= 0:
            return f"stream exceeds the limit of {limit} bytes"
        try:
            block = src.read(want)
        except Exception as exc:  # noqa: BLE001 - a damaged stream keeps what came before
            return f"corrupt: {type(exc).__name__}: {exc}"
        if not block:
            return None
        dst.write(block)
        done += len(block)


def relabel_result(result: Any, sp: Spool) -> Any:
    """The scan result of spooled paths under the labels the user knows."""
    import pyarrow as pa

    from ..errors import FileError

    if not sp.labels:
        return result
    table = result.table
    idx = table.schema.get_field_index("file")
    chunks = []
    for chunk in table.column(idx).chunks:
        names = chunk.dictionary.to_pylist()
        chunks.append(
            pa.DictionaryArray.from_arrays(
                chunk.indices, pa.array([sp.labels.get(x, x) for x in names], pa.string())
            )
        )
    col = pa.chunked_array(chunks, table.schema.field(idx).type)
    result.table = table.set_column(idx, table.schema.field(idx), col)
    result.inputs = {sp.labels.get(k, k): v for k, v in result.inputs.items()}
    result.matching_lines = {sp.labels.get(k, k): v for k, v in result.matching_lines.items()}
    counts = result.counts
    if counts.num_rows:
        files = pa.array(
            [sp.labels.get(x, x) for x in counts.column("file").to_pylist()], pa.string()
        )
        result.counts = counts.set_column(0, counts.schema.field(0), files)
    result.errors = [replace(e, path=sp.labels.get(e.path, e.path)) for e in result.errors]
    result.skipped = [replace(e, path=sp.labels.get(e.path, e.path)) for e in result.skipped]
    for label, message in sp.errors:
        kind = "limit" if "limit" in message else "corrupt"
        result.errors.append(FileError(label, kind, message))
    return result
