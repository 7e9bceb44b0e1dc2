"""Keep pandas out of processes that never hand pyarrow a DataFrame.

pyarrow imports pandas (0.15-0.25 s) the first time it converts a Python
object, only to recognise pandas inputs.  ``denpex`` commands and the index's
worker processes never give it any, so there pandas is reported missing and
pyarrow takes its no-pandas path (it supports running without pandas).
Library users are not affected: only the command's own process and the
workers it starts do this, and only when pandas was not imported yet.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["refuse_pandas", "without_pandas"]


class _NoPandas:
    """A meta-path entry that refuses ``import pandas``."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("pandas is not used by this command")
        return None


def refuse_pandas() -> _NoPandas | None:
    """Refuse ``import pandas`` from now on in this process; return the entry
    to remove, or None when pandas is already loaded or ``DENPEX_ALLOW_PANDAS``
    is set."""
    if "pandas" in sys.modules or os.environ.get("DENPEX_ALLOW_PANDAS"):
        return None
    blocker = _NoPandas()
    sys.meta_path.insert(0, blocker)
    return blocker


@contextlib.contextmanager
def without_pandas() -> Iterator[None]:
    """``import pandas`` fails while the block runs (see :func:`refuse_pandas`)."""
    blocker = refuse_pandas()
    try:
        yield
    finally:
        if blocker is not None:
            sys.meta_path.remove(blocker)
