"""Log text made safe for a terminal.

A log line can carry escape sequences (colours, cursor moves, an OSC 52
clipboard write): printed raw they act on the user's terminal.  Every text
output (``denpex scan``, the report, its Markdown, ``denpex query``) passes log
text through :func:`terminal_safe` (``denpex scan``'s plain rows through its C
twin, ``dx_format_rows`` in ``csrc/denpex_format.c``, which escapes the same
characters the same way); JSON, CSV, Parquet and Arrow outputs keep the exact
text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

# C0 controls except tab, DEL, C1 controls, and the Unicode line separators
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def escaper(short: Mapping[str, str]) -> Callable[[re.Match[str]], str]:
    r"""A ``re.sub`` replacement writing each matched character as ``short`` says,
    else ``\xNN`` (``\uNNNN`` past U+00FF)."""

    def escape(m: re.Match[str]) -> str:
        c = m.group()
        if c in short:
            return short[c]
        return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"

    return escape


_escape = escaper({"\n": "\\n", "\r": "\\r"})


def terminal_safe(text: str) -> str:
    r"""``text`` with control characters written ``\xNN`` (``\n``, ``\r``; tab kept)."""
    return _CONTROL.sub(_escape, text) if _CONTROL.search(text) else text
