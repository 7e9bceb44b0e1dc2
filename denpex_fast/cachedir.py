"""Where the on-disk caches live (compiled databases, parsed signature files).

``cache_dir=`` argument, else ``$DENPEX_CACHE_DIR``, else
``platformdirs.user_cache_dir("denpex_fast")``; ``cache_dir=False`` or
``DENPEX_CACHE_DIR=off`` disables caching.
"""

from __future__ import annotations

import os
from pathlib import Path


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
