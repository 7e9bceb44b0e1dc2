"""Jobs: which directories (or archives) under a root are jobs, and their files.

A *job* is a directory under the root, by default each immediate
subdirectory; ``job_glob`` (a glob relative to the root) or ``job_regex`` (a
regular expression with a ``job`` group, matched against directory paths
relative to the root) choose others.  A ``.tar``/``.tar.gz``/``.tgz``/
``.tar.zst`` archive where a job directory could be is a job too, named
after the archive without its suffix.

A job's logs are every regular file under it.  Tar archives (a job that is an
archive, or an archive inside a job directory) are read member by member as
one forward stream: nothing is extracted, and member names are only labels
(``archive.tar::member``), never paths to open or write.

Names are bytes until display: a file, job or member name is labelled by
:func:`label` (the scan's ``file``-column form: undecodable bytes and control
characters escaped, ``sources.path_from_display`` gives the bytes back), so a
name that is not UTF-8 is one escaped label, never a failed job.

Roots are paths or fsspec URLs (``memory://``, ``s3://``...).  Local plain
files are scanned by the scanner directly (mmap); everything else is streamed
through the decompression path.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any

TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.zst", ".tar.zstd")
MEMBER_SEP = "::"
HASH_CHUNK = 1 << 20

try:  # xxh3 is ~30x faster than blake2b; either is fine as a change detector
    import xxhash

    HASH_ALGO = "xxh3_128"

    def _new_hash() -> Any:
        return xxhash.xxh3_128()
except ImportError:  # pragma: no cover - depends on the environment
    HASH_ALGO = "blake2b"

    def _new_hash() -> Any:
        return hashlib.blake2b(digest_size=16)


@dataclass(frozen=True)
class JobFile:
    """One file of a job: ``rel`` is its path relative to the job (its label)."""

    rel: str
    path: str
    size: int
    mtime: datetime | None
    #: why it cannot be read (an unreadable directory: ``rel`` ends in ``/``)
    error: str | None = None

    @property
    def is_tar(self) -> bool:
        """True for a tar archive, read member by member."""
        return is_tar_name(self.rel)


@dataclass(frozen=True)
class Job:
    """A job: its name (the ``job`` partition value), filesystem, location and files."""

    name: str
    fs: Any = field(repr=False, compare=False)
    root: str
    files: tuple[JobFile, ...]

    @property
    def local(self) -> bool:
        """True when the job is on the local filesystem (plain files are mmapped)."""
        from fsspec.implementations.local import LocalFileSystem

        return isinstance(self.fs, LocalFileSystem)

    @property
    def size(self) -> int:
        """Bytes on disk of all the job's files."""
        return sum(f.size for f in self.files)


def is_tar_name(name: str) -> bool:
    """True when ``name`` ends like a tar archive (``.tar``, ``.tar.gz``, ``.tgz``, ``.tar.zst``)."""
    return name.lower().endswith(TAR_SUFFIXES)


def _strip_tar(name: str) -> str:
    low = name.lower()
    for suf in sorted(TAR_SUFFIXES, key=len, reverse=True):
        if low.endswith(suf):
            return name[: -len(suf)]
    return name


def _mtime(info: dict[str, Any]) -> datetime | None:
    """Modification time from an fsspec ``info`` dict (keys differ by backend)."""
    from datetime import timezone

    for key in ("mtime", "LastModified", "last_modified", "updated", "created"):
        v = info.get(key)
        if v is None:
            continue
        if isinstance(v, datetime):
            return v if v.tzinfo else v.replace(tzinfo=timezone.utc)
        if isinstance(v, (int, float)):
            return datetime.fromtimestamp(float(v), timezone.utc)
        if isinstance(v, str):
            try:
                return datetime.fromisoformat(v.replace("Z", "+00:00"))
            except ValueError:
                continue
    return None


def _rel(path: str, base: str) -> str:
    return posixpath.relpath(path, base) if base else path


def label(name: str) -> str:
    r"""The display form of a name from a filesystem listing or a tar header.

    Names arrive as ``str`` with undecodable bytes as surrogates
    (``surrogateescape``); the label is :func:`~denpex_fast.io.sources.display_name`
    of the bytes, valid UTF-8 on one line (``badÿ.log``), and
    :func:`~denpex_fast.io.sources.path_from_display` turns it back into them.
    """
    from .sources import display_name

    try:
        raw = os.fsencode(name)
    except UnicodeEncodeError:  # a lone surrogate that no byte stands for
        raw = name.encode("utf-8", "surrogatepass")
    return display_name(raw)


def _walk_files(fs: Any, root: str) -> tuple[dict[str, Any], list[tuple[str, OSError]]]:
    """Every entry below ``root`` (path -> info) and the directories that could
    not be listed.  (fsspec's own walk drops ``on_error`` below the top level.)"""
    found: dict[str, Any] = {}
    unreadable: list[tuple[str, OSError]] = []
    top = root.rstrip("/")
    stack = [top]
    while stack:
        d = stack.pop()
        try:
            listing = fs.ls(d, detail=True)
        except OSError as exc:
            if d == top:
                raise
            unreadable.append((d, exc))
            continue
        for info in listing:
            name = info["name"].rstrip("/")
            if name == d:
                continue
            if info.get("type") == "directory":
                stack.append(name)
            else:
                found[name] = info
    return found, sorted(unreadable, key=lambda x: x[0])


def _job_files(fs: Any, root: str, *, is_archive: bool, skip: str | None) -> tuple[JobFile, ...]:
    if is_archive:
        info = fs.info(root)
        return (
            JobFile(
                label(posixpath.basename(root)), root, int(info.get("size") or 0), _mtime(info)
            ),
        )
    out = []
    entries, unreadable = _walk_files(fs, root)
    # a directory that cannot be listed becomes a row of its own (an error),
    # never a silent gap in the job
    for where, exc in unreadable:
        if skip and (where == skip or where.startswith(skip + "/")):
            continue
        why = exc.strerror or str(exc)
        out.append(
            JobFile(label(_rel(where, root)) + "/", where, 0, None, f"unreadable directory: {why}")
        )
    for path, info in sorted(entries.items()):
        if info.get("type") != "file":  # FIFOs, sockets, devices are never read
            continue
        if skip and (path == skip or path.startswith(skip + "/")):
            continue
        out.append(JobFile(label(_rel(path, root)), path, int(info.get("size") or 0), _mtime(info)))
    return tuple(out)


def discover_jobs(
    root: str,
    *,
    job_glob: str | None = None,
    job_regex: str | None = None,
    exclude: str | None = None,
    storage_options: dict[str, Any] | None = None,
) -> list[Job]:
    """The jobs under ``root`` (a path or fsspec URL), sorted by name.

    ``job_glob``: a glob relative to ``root`` whose matching directories or
    tar archives are jobs (named by their path relative to ``root``);
    ``job_regex``: a regular expression with a ``job`` group, fully matched
    against directory/archive paths relative to ``root`` (archives with or
    without their suffix; the outermost match wins; its ``job`` group is the
    name); neither: every immediate
    subdirectory or tar archive of ``root``.  ``exclude``: a path (e.g. the
    index itself) never read as a job or a log.
    """
    if job_glob and job_regex:
        raise ValueError("give job_glob or job_regex, not both")
    import fsspec  # the [index] extra: only job discovery needs it

    fs, base = fsspec.core.url_to_fs(root, **(storage_options or {}))
    base = base.rstrip("/") or base
    if not fs.isdir(base):
        raise FileNotFoundError(f"{root}: not a directory")
    skip = None
    if exclude:
        efs, epath = fsspec.core.url_to_fs(exclude)
        if type(efs) is type(fs):
            skip = epath.rstrip("/")
    found: dict[str, tuple[str, bool]] = {}  # name -> (path, is_archive)

    def add(name: str, path: str, typ: str) -> None:
        if skip and (path == skip or path.startswith(skip + "/")):
            return
        if typ == "directory":
            is_arch = False
        elif typ == "file" and is_tar_name(path):
            is_arch = True
            name = _strip_tar(name)
        else:
            return
        if name in found:
            raise ValueError(f"two jobs are named {name!r}: {found[name][0]} and {path}")
        found[name] = (path, is_arch)

    if job_glob:
        for path, info in sorted(fs.glob(posixpath.join(base, job_glob), detail=True).items()):
            add(_rel(path, base), path, info.get("type", ""))
    elif job_regex:
        rx = re.compile(job_regex)
        if "job" not in rx.groupindex:
            raise ValueError("job_regex needs a named group 'job', e.g. 'runs/(?P<job>[^/]+)'")
        entries = fs.find(base, withdirs=True, detail=True)
        taken: list[str] = []
        for path, info in sorted(entries.items()):
            if path == base or any(path.startswith(t + "/") for t in taken):
                continue
            rel = _rel(path, base)
            m = rx.fullmatch(rel) or (is_tar_name(rel) and rx.fullmatch(_strip_tar(rel)))
            if m and m.group("job"):
                before = len(found)
                add(m.group("job"), path, info.get("type", ""))
                if len(found) > before:
                    taken.append(path)
    else:
        for info in sorted(fs.ls(base, detail=True), key=lambda i: i["name"]):
            path = info["name"].rstrip("/")
            add(posixpath.basename(path), path, info.get("type", ""))
    return [
        Job(label(name), fs, path, _job_files(fs, path, is_archive=arch, skip=skip))
        for name, (path, arch) in sorted(found.items())
    ]


# -- reading ---------------------------------------------------------------


class HashingReader:
    """A read-only stream that hashes every byte read through it."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self.hash = _new_hash()
        self.bytes = 0

    def read(self, n: int = -1) -> bytes:
        """Read up to ``n`` bytes, hashing them."""
        data = self._raw.read(n)
        self.hash.update(data)
        self.bytes += len(data)
        return data

    def readinto(self, mv: Any) -> int:
        """Read into a buffer, hashing what arrived."""
        k = self._raw.readinto(mv) or 0
        if k:
            self.hash.update(memoryview(mv)[:k])
            self.bytes += k
        return k

    def readable(self) -> bool:
        """Always True (for ``io`` wrappers)."""
        return True

    def drain(self) -> None:
        """Read (and hash) the rest of the stream."""
        buf = bytearray(HASH_CHUNK)
        while self.readinto(buf):
            pass

    def digest(self) -> str:
        """``algo:hexdigest`` of everything read so far."""
        return f"{HASH_ALGO}:{self.hash.hexdigest()}"

    def close(self) -> None:
        """Close the underlying stream."""
        self._raw.close()


def file_digest(fs: Any, path: str) -> str:
    """``algo:hexdigest`` of a file's bytes, read in bounded chunks."""
    with fs.open(path, "rb") as f:
        h = HashingReader(f)
        h.drain()
        return h.digest()


class StreamError(Exception):
    """A member or archive stream could not be read (wraps the original error)."""


class _Guard:
    """Wraps a member stream so that any read failure surfaces as ``CorruptInput``."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw

    def read(self, n: int = -1) -> bytes:
        try:
            return self._raw.read(n)
        except Exception as exc:
            from .sources import CorruptInput

            raise CorruptInput(f"{type(exc).__name__}: {exc}") from None

    def readinto(self, mv: Any) -> int:
        try:
            return self._raw.readinto(mv) or 0
        except Exception as exc:
            from .sources import CorruptInput

            raise CorruptInput(f"{type(exc).__name__}: {exc}") from None

    def close(self) -> None:
        self._raw.close()


def _decompressed(raw: HashingReader) -> IO[bytes]:
    """The archive's tar stream: gzip/zstd recognised by content, else as is."""
    from .sources import sniff

    head = raw.read(4)
    src = _Prefixed(head, raw)
    kind = sniff(head)
    if kind == "gzip":
        from isal import igzip

        return igzip.IGzipFile(fileobj=src, mode="rb")  # type: ignore[return-value]
    if kind == "zstd":
        try:
            from compression import zstd  # type: ignore[import-not-found]
        except ImportError:  # pragma: no cover - depends on the Python version
            from backports import zstd  # type: ignore[no-redef]
        return zstd.ZstdFile(src, "rb")  # type: ignore[no-any-return]
    return src  # type: ignore[return-value]


class _Prefixed:
    """A stream with already-read bytes put back in front."""

    def __init__(self, head: bytes, raw: HashingReader) -> None:
        self._head = head
        self._raw = raw

    def read(self, n: int = -1) -> bytes:
        if self._head:
            if n is None or n < 0:
                out, self._head = self._head + self._raw.read(), b""
                return out
            out, self._head = self._head[:n], self._head[n:]
            return out
        return self._raw.read(n)

    def readinto(self, mv: Any) -> int:
        if self._head:
            k = min(len(self._head), len(mv))
            mv[:k] = self._head[:k]
            self._head = self._head[k:]
            return k
        return self._raw.readinto(mv)

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        pass


def iter_tar_members(raw: HashingReader, archive: str) -> Iterator[tuple[str, Any]]:
    """``(archive::member, stream)`` for each regular member of a tar stream.

    The archive is read forward once (``tarfile`` stream mode); member names
    are only used as labels (escaped by :func:`label`).  A damaged archive raises :class:`StreamError`
    after the members before the damage.
    """
    try:
        tf = tarfile.open(fileobj=_decompressed(raw), mode="r|")  # type: ignore[call-overload]
    except Exception as exc:
        raise StreamError(f"not a readable tar archive: {type(exc).__name__}: {exc}") from None
    with tf:
        it = iter(tf)
        while True:
            try:
                member = next(it)
            except StopIteration:
                return
            except Exception as exc:
                raise StreamError(f"archive damaged: {type(exc).__name__}: {exc}") from None
            # stream mode reads forward only: the TarInfo list tarfile keeps
            # for random access would grow with every member
            tf.members = []  # type: ignore[attr-defined]
            if not member.isreg():  # links, devices, directories: labels only, nothing to read
                continue
            f = tf.extractfile(member)
            if f is not None:
                yield f"{archive}{MEMBER_SEP}{label(member.name)}", _Guard(f)
