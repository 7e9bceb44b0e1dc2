"""``[tool.denpex_fast]`` of the nearest ``pyproject.toml``: the project's settings.

Read from the working directory upwards; the first ``pyproject.toml`` found
wins, even without the table.  ``signatures`` (extra knowledge-base files) is
read by :mod:`denpex_fast.kb.signatures`; ``defaults`` holds the command
line's defaults, one table per command::

    [tool.denpex_fast.defaults.diagnose]
    tz = "Europe/Berlin"        # the option's long name, with - or _
    format = "json"

    [tool.denpex_fast.defaults.scan]
    threads = 2

An option given on the command line always wins over these.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


class ConfigError(ValueError):
    """A ``[tool.denpex_fast]`` table that cannot be used (names the file and key)."""


def nearest_pyproject(start: Path | None = None) -> Path | None:
    """The first ``pyproject.toml`` in ``start`` (default: the working directory)
    or one of its parents."""
    here = start if start is not None else Path.cwd()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def tool_table(start: Path | None = None) -> tuple[Path | None, dict[str, Any]]:
    """(the pyproject.toml read, its ``[tool.denpex_fast]`` table or ``{}``)."""
    path = nearest_pyproject(start)
    if path is None:
        return None, {}
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read [tool.denpex_fast]: {exc}") from None
    table = doc.get("tool", {}).get("denpex_fast", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.denpex_fast] must be a table")
    return path, table


def command_defaults(start: Path | None = None) -> tuple[Path | None, dict[str, dict[str, Any]]]:
    """``[tool.denpex_fast.defaults]``: command name -> {option: value} (names as
    written; the command line checks them against its options)."""
    path, table = tool_table(start)
    defaults = table.get("defaults", {})
    if not isinstance(defaults, dict) or not all(isinstance(v, dict) for v in defaults.values()):
        raise ConfigError(
            f"{path}: field 'tool.denpex_fast.defaults': expected one table per command, "
            "e.g. [tool.denpex_fast.defaults.diagnose]"
        )
    return path, defaults
