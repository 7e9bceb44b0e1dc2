"""Exception tree of denpex_fast and the per-file error record.

Every exception the library raises on purpose derives from :class:`DenpexError`
and also from the builtin it resembles, so callers can catch either::

    try:
        dx.scan(["rank0.log"])
    except dx.ScanError as exc:      # or OSError
        print(exc.path, exc.partial.table.num_rows)
"""

from __future__ import annotations

import errno as _errno
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .engine.scanner import ScanResult


class DenpexError(Exception):
    """Root of every error raised by denpex_fast."""


class NativeError(DenpexError, RuntimeError):
    """The native scanner failed in a way that is not the input's fault."""


class PatternError(DenpexError, ValueError):
    """libhs refused a pattern.

    Attributes: ``signature`` (id), ``index`` (pattern number within that
    signature), ``pattern`` (the expression) and ``hs_message`` (libhs's own
    message).
    """

    def __init__(self, signature: str, index: int, pattern: str, hs_message: str) -> None:
        self.signature = signature
        self.index = index
        self.pattern = pattern
        self.hs_message = hs_message
        super().__init__(
            f"signature {signature!r} (pattern {index}: {shown_pattern(pattern)}): {hs_message}"
        )


def shown_pattern(pattern: str, limit: int = 200) -> str:
    """``repr(pattern)``, cut for messages: a huge pattern must not bury the reason."""
    shown = repr(pattern)
    if len(shown) > limit:
        shown = f"{shown[: limit - 40]}... ({len(pattern)} characters)"
    return shown


class SignatureError(DenpexError, ValueError):
    """A signature file or entry is invalid; the message names file, id and field."""


class CacheError(DenpexError, OSError):
    """The compiled-database cache could not be used (never fatal for scans)."""


@dataclass(frozen=True)
class FileError:
    """One input that could not be read completely.

    ``kind`` is one of ``open`` (missing, permission), ``not-regular`` (FIFO,
    socket, device), ``directory``, ``truncated`` (file shrank while mapped),
    ``corrupt`` (damaged or truncated compressed stream), ``limit`` (a size or
    ratio limit was hit) or ``cancelled``.  Rows found before the error are
    kept in the result.
    """

    path: str
    kind: str
    message: str
    errno: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form, for JSON output."""
        return {"path": self.path, "kind": self.kind, "message": self.message, "errno": self.errno}


class ScanError(DenpexError, OSError):
    """An input failed in strict mode.

    ``path`` names the input, ``errors`` lists every :class:`FileError`, and
    ``partial`` is the :class:`~denpex_fast.engine.scanner.ScanResult` with every row
    found before (and besides) the failure, so nothing already found is lost.
    """

    def __init__(self, errors: list[FileError], partial: ScanResult | None = None) -> None:
        first = errors[0]
        self.errors = errors
        self.partial = partial
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        code = first.errno if first.errno is not None else _errno.EIO
        super().__init__(code, f"{first.message}{more}", first.path)
        self.path = first.path

    def __str__(self) -> str:
        return f"{self.path}: {self.errors[0].message}" + (
            f" (and {len(self.errors) - 1} more failed inputs)" if len(self.errors) > 1 else ""
        )


def os_error_kind(exc: OSError) -> str:
    """Map an OSError from opening an input to a FileError kind."""
    if exc.errno == _errno.EISDIR:
        return "directory"
    return "open"


def file_error_from_os(path: str, exc: OSError) -> FileError:
    """Build a FileError from an OSError raised while opening ``path``."""
    reason = exc.strerror or str(exc)
    return FileError(path, os_error_kind(exc), f"cannot read: {reason}", exc.errno)


def display_path(path: str | bytes | os.PathLike[str]) -> str:
    """The path as shown in tables and messages (undecodable bytes escaped)."""
    if isinstance(path, bytes):
        return os.fsdecode(path)
    return os.fspath(path)
