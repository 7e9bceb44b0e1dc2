"""Pasted excerpts, read as the program printed them.

A log pasted into an issue or a forum post often reaches the diagnosis
changed by the way it was pasted: indented as a Markdown code block, quoted
with ``> ``, or with the terminal's colour codes left in (raw, or in the
escaped forms ``#033[32m`` and ``^[[32m`` that syslog and copy-paste leave,
or bare ``[32m`` once the escape byte was lost).  The knowledge base's
patterns and the attribution's prefixes are written for the program's own
lines, so such a paste is read through a cleaned copy with the same line numbers:

* colour and cursor codes removed;
* non-breaking spaces (U+00A0, U+202F) that a copy from a web page or a
  chat puts in place of spaces made spaces again;
* a ``>`` quote that opens every non-blank line removed;
* a terminal's hard wraps joined back (three or more lines exactly as long
  as the longest one, or two cut inside a word: each continues on the next;
  at a terminal's standard width, 80, 100, 120 or 132 columns, one such
  line is enough when the next goes on mid-sentence), the joined line in
  the first line's place and the lines it absorbed left empty;
* indentation that every non-blank line shares removed, as
  :func:`textwrap.dedent` would: four columns for a Markdown code block, two
  or three for a code block inside a list item (but not when that would put
  a traceback frame, ``File "..."``, at the margin: Python indents frames,
  and a paste of frames alone shares their indentation).

Only small inputs are looked at (at most :data:`MAX_FILES` plain files of
:data:`MAX_BYTES` in all, read once more: about 10 ms per MiB): a paste,
never a production log, which the scanner maps as it is.  The copies keep the user's names (:func:`~denpex_fast.io.spool.relabel_result`)
and their line numbers; the job's reader answers from them.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable
from typing import Any

from .sources import STDIN, display_name
from .spool import Spool

#: inputs larger than this in all, or more of them, are not a paste
MAX_BYTES = 4 << 20
MAX_FILES = 16

# CSI sequences (colours, cursor moves, line erases) with the escape byte
# raw, escaped by syslog (#033) or shown in caret notation (^[)
_CSI = re.compile(rb"(?:\x1b|#033|\^\[)\[[0-9;?]*[A-Za-z]")
# the same colour codes once the escape byte was lost in a copy: trusted
# only when the file holds at least two resets
_BARE_SGR = re.compile(rb"\[(?:\d{1,3}(?:;\d{1,3})*)?m")
_BARE_RESET = b"[0m"
_QUOTE = re.compile(rb"^> ?", re.M)


def _small_files(paths: Iterable[Any]) -> list[bytes] | None:
    """The plain files ``paths`` name (directories walked), or None when they
    are more or larger than a paste, or not all plain files."""
    out: list[bytes] = []
    for p in paths:
        if not isinstance(p, (str, bytes, os.PathLike)):
            return None
        path = os.fsencode(p)
        if path == STDIN.encode():
            return None
        if os.path.isdir(path):
            for base, dirs, files in os.walk(path):
                dirs.sort()
                for f in sorted(files):
                    out.append(os.path.join(base, f))
                    if len(out) > MAX_FILES:
                        return None
        else:
            out.append(path)
        if len(out) > MAX_FILES:
            return None
    total = 0
    for f in out:
        try:
            if not os.path.isfile(f):
                return None
            total += os.path.getsize(f)
        except OSError:
            return None
        if total > MAX_BYTES:
            return None
    return out


def clean(data: bytes) -> bytes | None:
    """``data`` without the paste's artefacts, or None when it has none."""
    new = _CSI.sub(b"", data)
    new = new.replace(b"\xc2\xa0", b" ").replace(b"\xe2\x80\xaf", b" ")
    if new.count(_BARE_RESET) >= 2:
        new = _BARE_SGR.sub(b"", new)
    lines = new.split(b"\n")
    body = [ln for ln in lines if ln.strip()]
    if body and all(ln.startswith(b">") for ln in body):
        new = _QUOTE.sub(b"", new)
    # wraps first: the rows a wrap split off lack the indent their line has
    new = _unwrap(new)
    lines = new.split(b"\n")
    body = [ln for ln in lines if ln.strip()]
    if body:
        width = min(len(ln) - len(ln.lstrip(b" \t")) for ln in body)
        lead = body[0][:width]
        # a shallow indent may be the program's own: Python indents every
        # frame of a traceback (and faulthandler's dump, which is frames only)
        shallow_ok = width >= 4 or not any(ln[width:].startswith(b'File "') for ln in body)
        if width and shallow_ok and all(ln.startswith(lead) for ln in body):
            new = b"\n".join(ln[width:] if ln.startswith(lead) else ln for ln in lines)
    return new if new != data else None


#: a paste is taken as hard-wrapped when at least this many lines have the
#: length of its longest line, and that length is at least ``WRAP_MIN`` (two
#: such lines suffice when both are cut inside a word)
WRAP_LINES = 3
WRAP_MIN = 60
#: the widths terminals open with (VT100's 80 and 132, and the usual wider ones)
TERMINAL_WIDTHS = frozenset({80, 100, 120, 132})
# a rule, or a row of a drawn box (rich's tracebacks and tables: U+2500-U+257F last)
_RULE = re.compile(
    rb"^\s*([-=*#~_+])\1{9,}\s*\r?$"
    rb"|.*\xe2[\x94\x95][\x80-\xbf]\s*\r?$"
)
# a row that goes on a sentence: a lowercase word (no ``host:``, ``module.``
# or ``key=`` that opens a record), after at most the blank the cut left
_CONTINUES = re.compile(rb" ?[a-z][\w./-]*(?:[ ,;)(\]'\"]|\r?$)")


def _unwrap(data: bytes) -> bytes:
    """A terminal's hard wraps joined back: each line the width of the
    terminal continues on the next one, unless that one opens the way the
    record does (lines of one template often share a length).  The joined line takes the first
    physical line's place and the lines it absorbed are left empty, so every
    line keeps its number."""
    lines = data.split(b"\n")
    # a rule (Open MPI frames its help messages in 74 dashes) or a box's row
    # is drawn to a length of its own: never a row of wrapped text
    widths = [
        0 if _RULE.match(ln) else len(ln.rstrip(b"\r").decode("utf-8", "replace")) for ln in lines
    ]
    width = max(widths, default=0)
    if width < WRAP_MIN:
        return data
    if not _wrapped(lines, [k for k, w in enumerate(widths) if w == width], width):
        return data
    out = list(lines)
    k = 0
    while k < len(lines) - 1:
        if widths[k] != width:
            k += 1
            continue
        head, j = k, k
        # a line that opens like the record itself starts a record of its own
        # (many lines of one template share a length; a wrap cuts anywhere)
        while (
            j + 1 < len(lines)
            and widths[j] == width
            and not _padded(lines[j])
            and lines[j + 1].strip()
            and lines[j + 1][:2] != lines[head][:2]
        ):
            j += 1
            out[head] = out[head] + lines[j]
            out[j] = b""
        k = j + 1
    return b"\n".join(out)


def _wrapped(lines: list[bytes], ends: list[int], width: int) -> bool:
    """Whether the rows ``ends`` (those of the longest length, ``width``) are
    a terminal's hard wraps: three or more of them; two that are each cut
    inside a token; or, at a terminal's standard width, one whose next row
    goes on mid-sentence (a lowercase word no record opens with) or two of
    which one is cut inside a token."""
    nexts = [lines[k + 1] if k + 1 < len(lines) else b"" for k in ends]
    cut = [_cut_mid_token(lines[k], n) for k, n in zip(ends, nexts)]
    if len(ends) >= WRAP_LINES or (len(ends) == 2 and all(cut)):
        return True
    return width in TERMINAL_WIDTHS and (
        any(_CONTINUES.match(n) for n in nexts) or (len(ends) == 2 and any(cut))
    )


def _padded(line: bytes) -> bool:
    """A line a terminal filled up to its width with blanks (tmux or screen
    copies pad every row): its text ended before the edge, so it is complete."""
    return line.rstrip(b"\r").endswith(b"  ")


def _cut_mid_token(head: bytes, nxt: bytes) -> bool:
    nxt = nxt.rstrip(b"\r")
    return bool(head.rstrip(b"\r")[-1:].strip()) and bool(nxt[:1].strip()) and nxt[:2] != head[:2]


def spool_pastes(paths: Iterable[Any]) -> Spool | None:
    """Cleaned copies of the pasted files among ``paths`` (see the module
    docstring), or None when the input is not a paste or needs no cleaning.
    The returned spool's ``paths`` replace ``paths`` for the scan: every file
    the scan would have read, directories expanded as the scanner walks them."""
    from .sources import binary_reason, claimed_compression, sniff, walk_files

    paths = list(paths)
    if _small_files(paths) is None:  # a cheap bound before walking as the scanner does
        return None
    files: list[bytes] = []
    for p in paths:
        path = os.fsencode(p)
        if os.path.isdir(path):
            files += walk_files(path)
        else:
            files.append(path)
    out = Spool([])
    for f in files:
        try:
            with open(f, "rb") as fh:
                data = fh.read(MAX_BYTES + 1)
        except OSError:
            return None  # the scan reports it, on the user's own path
        plain = (
            len(data) <= MAX_BYTES
            and not sniff(data)
            and not binary_reason(data)
            and not claimed_compression(display_name(f))  # the scan checks its magic
        )
        new = clean(data) if plain else None
        if new is None:
            out.paths.append(f)
            continue
        if out.directory is None:
            out.directory = tempfile.mkdtemp(prefix="denpex-paste-")
        dest = os.path.join(out.directory, f"{len(out.paths):07d}")
        with open(dest, "wb") as w:
            w.write(new)
        out.paths.append(dest)
        out.labels[display_name(os.fsencode(dest))] = display_name(f)
    return out if out.labels else None
