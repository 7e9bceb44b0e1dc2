"""One-call conveniences that cross stages (scan, then attribute).

The stages themselves never import upward; what chains them for a user in a
notebook lives here, at the top.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from .engine.scanner import Scanner, default_scanner
from .facts.attribution import attribute as attribute_table


def scan(
    paths: Iterable[Any] | str | os.PathLike[str],
    signatures: Any = None,
    *,
    patterns: Mapping[str, str | Sequence[str]] | None = None,
    threads: int | None = None,
    attribute: bool | Mapping[str, Any] = False,
    **kwargs: Any,
) -> pa.Table:
    """Scan ``paths`` (files, directories, ``-``) into the match table.

    ``signatures``/``patterns`` choose what to look for (see :class:`~denpex_fast.engine.scanner.Scanner`);
    other keyword arguments go to :meth:`~denpex_fast.engine.scanner.Scanner.run` (``errors``, ``mmap``,
    ``progress``, ...) or to the :class:`Scanner` constructor
    (``max_rows_per_signature``, ``max_text``, ``cache_dir``, ``caseless``).

    ``rank``, ``host`` and ``ts`` are null unless ``attribute=True`` (or a
    mapping of :func:`denpex_fast.attribute` keyword arguments, such as
    ``{"default_tz": "Europe/Berlin"}``): then they are filled from launcher
    prefixes, paths and timestamps, in the same call::

        >>> t = dx.scan("job/", attribute=True)
        >>> dx.to_pandas(t)          # rank stays an integer (pandas Int32)
    """
    ctor_keys = ("max_rows_per_signature", "max_text", "cache_dir", "caseless")
    ctor = {k: kwargs.pop(k) for k in ctor_keys if k in kwargs}
    if signatures is None and patterns is None and not ctor:
        scanner = default_scanner()
    else:
        scanner = Scanner(signatures, patterns=patterns, **ctor)
    table = scanner.scan(paths, threads=threads, **kwargs)
    if not attribute:
        return table
    options = dict(attribute) if isinstance(attribute, Mapping) else {}
    if threads is not None:
        options.setdefault("threads", threads)
    out = attribute_table(table, **options).table
    # the scan's metadata (e.g. the errors of errors="collect") survives
    return out.replace_schema_metadata(
        {**(out.schema.metadata or {}), **(table.schema.metadata or {})}
    )
