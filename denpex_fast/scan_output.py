"""What ``denpex scan`` prints: ripgrep's shapes over the match table.

* text: ``path:line:signature:text``, or on a terminal (``--heading``) the file
  name once above its rows and ``line:signature:text`` under it, with the
  matched span highlighted (``--color``);
* context (``-A/-B/-C``): the lines around each row, read back through the
  scan's own inputs (:class:`denpex_fast.io.readback.JobBytes`), printed as
  ``path-line-text`` with ``--`` between groups that do not touch, as ripgrep
  does;
* ``-l``: the files with a match; ``-c``: matching lines per file (a line
  matched by several signatures counts once);
* JSON Lines shaped like ``rg --json`` (``begin``/``match``/``end``/
  ``summary``; ``path.text``, ``lines.text``, ``submatches``), plus the
  ``signature`` of each match.

Plain rows are formatted in C from the Arrow buffers of each batch
(:func:`denpex_fast.engine._native.format_rows`) and streamed as the scan
finds them; the other shapes are written per file as a batch of strings,
never one ``print`` per row.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

import pyarrow as pa

from .schema import MATCH_SCHEMA
from .textsafe import terminal_safe

#: ANSI styles, as ripgrep's defaults: path magenta, line number green, match bold red
PATH, LINE, MATCH, RESET = "\x1b[35m", "\x1b[32m", "\x1b[1;31m", "\x1b[0m"


@dataclass
class Style:
    """How rows are printed: ``color`` (ANSI), ``heading`` (file name above
    its rows), context lines ``before``/``after``."""

    color: bool = False
    heading: bool = False
    before: int = 0
    after: int = 0


def _file_groups(table: pa.Table) -> Iterator[tuple[str, pa.Table]]:
    """(file, its rows sorted by line) in the order the files were scanned."""
    import pyarrow.compute as pc

    if not table.num_rows:
        return
    files = table.column("file").cast(pa.string())
    order = pc.unique(files).to_pylist()
    for name in order:
        rows = table.filter(pc.equal(files, name))
        yield name, rows.sort_by([("line", "ascending")])


class Highlighter:
    """Finds the matched span of a row from its signature's patterns.

    Hyperscan reports where a match ends, not where it starts; the span is
    recovered with Python's ``re`` on the row's text (a pattern ``re`` cannot
    compile, or that finds nothing ending there, gives no highlight)."""

    def __init__(self, patterns: Mapping[str, Sequence[str]], caseless: bool = False) -> None:
        self._compiled: dict[str, list[re.Pattern[str]]] = {}
        flags = re.IGNORECASE if caseless else 0
        for sid, exprs in patterns.items():
            out = []
            for e in exprs:
                try:
                    out.append(re.compile(e, flags))
                except (re.error, OverflowError, RecursionError):
                    continue
            self._compiled[sid] = out

    def span(self, signature: str, text: str, end: int | None) -> tuple[int, int] | None:
        """(start, end) in ``text`` of the match ending at ``end`` (or the first one)."""
        first = None
        for rx in self._compiled.get(signature, ()):
            for m in rx.finditer(text):
                if m.end() == end:
                    return m.span()
                if first is None and m.end() > m.start():
                    first = m.span()
        return first


def _end_in_text(offset: int, match_end: int, text: str) -> int | None:
    # the text starts at the line start unless the line was cut (max_text)
    end = match_end - offset
    return end if 0 <= end <= len(text.encode("utf-8", "replace")) else None


def _char_end(text: str, byte_end: int | None) -> int | None:
    if byte_end is None:
        return None
    return len(text.encode("utf-8", "replace")[:byte_end].decode("utf-8", "replace"))


def write_text(
    out: IO[str],
    table: pa.Table,
    style: Style,
    highlighter: Highlighter | None = None,
    context: Callable[[str, int, int, int, int], list[tuple[int, str]]] | None = None,
) -> None:
    """Rows as text (see the module docstring for the shapes)."""
    if not style.color and not style.heading and not (style.before or style.after):
        _write_plain(out, table)
        return
    first_file = True
    for name, rows in _file_groups(table):
        cols = rows.select(["line", "offset", "match_end", "signature", "text"]).to_pydict()
        lines: list[str] = []
        path = f"{PATH}{name}{RESET}" if style.color else name
        if style.heading:
            if not first_file:
                lines.append("")
            lines.append(path)
        first_file = False
        prefix = "" if style.heading else path
        groups = _context_groups(cols, style, context, name) if context else None
        shown_until = 0  # the last line number printed in this file
        rows = list(
            zip(cols["line"], cols["offset"], cols["match_end"], cols["signature"], cols["text"])
        )
        for k, (ln, off, mend, sig, text) in enumerate(rows):
            if groups is not None:
                # lines before: those not printed yet; "--" where a gap opens
                for n, ctx in groups[k][0]:
                    if n > shown_until:
                        if shown_until and n > shown_until + 1:
                            lines.append("--")
                        lines.append(_line(prefix, n, None, terminal_safe(ctx), "-", style))
                        shown_until = n
                if shown_until and ln > shown_until + 1:
                    lines.append("--")
            shown = terminal_safe(text)
            if style.color and highlighter is not None:
                span = highlighter.span(sig, text, _char_end(text, _end_in_text(off, mend, text)))
                if span:
                    a, b = span
                    shown = (
                        f"{terminal_safe(text[:a])}{MATCH}{terminal_safe(text[a:b])}{RESET}"
                        f"{terminal_safe(text[b:])}"
                    )
            lines.append(_line(prefix, ln, sig, shown, ":", style))
            shown_until = max(shown_until, ln)
            if groups is not None:
                # lines after, up to the next row's line (which prints as a match)
                stop = rows[k + 1][0] if k + 1 < len(rows) else None
                for n, ctx in groups[k][1]:
                    if n > shown_until and (stop is None or n < stop):
                        lines.append(_line(prefix, n, None, terminal_safe(ctx), "-", style))
                        shown_until = n
        out.write("\n".join(lines) + "\n")
    out.flush()


def _line(prefix: str, n: int, sig: str | None, text: str, sep: str, style: Style) -> str:
    num = f"{LINE}{n}{RESET}" if style.color else str(n)
    head = f"{prefix}{sep}{num}{sep}" if prefix else f"{num}{sep}"
    return f"{head}{sig}{sep}{text}" if sig is not None else f"{head}{text}"


def _context_groups(
    cols: dict[str, list[Any]],
    style: Style,
    context: Callable[[str, int, int, int, int], list[tuple[int, str]]],
    name: str,
) -> list[tuple[list[tuple[int, str]], list[tuple[int, str]]]]:
    """Per row: (lines before it, lines after it), read back around its offset."""
    out = []
    for ln, off in zip(cols["line"], cols["offset"]):
        got = context(name, ln, off, style.before, style.after)
        out.append(([x for x in got if x[0] < ln], [x for x in got if x[0] > ln]))
    return out


def _write_plain(out: IO[str], table: pa.Table) -> None:
    out.flush()
    sink = out.buffer  # type: ignore[attr-defined]
    for batch in table.to_batches():
        write_plain_batch(sink, batch)
    sink.flush()


def write_plain_batch(out: IO[bytes], batch: pa.RecordBatch) -> None:
    """``path:line:signature:text`` rows of one batch, formatted in C from its
    Arrow buffers (terminal controls in the text escaped) and written in
    chunks of about 4 MiB."""
    from .engine._native import write_rows

    if not batch.num_rows:
        return
    # casts and fills only where a column is not as the match table has it
    # (pyarrow.compute costs ~25 ms of start-up)
    text, line = batch.column("text"), batch.column("line")
    if text.type != pa.string():
        text = text.cast(pa.string())
    if line.type != pa.uint64():
        line = line.cast(pa.uint64())
    if text.null_count or line.null_count:
        import pyarrow.compute as pc

        text, line = pc.fill_null(text, ""), pc.fill_null(line, 0)
    file, sig = _dictionary(batch.column("file")), _dictionary(batch.column("signature"))
    write_rows(out, file, line, sig, text)


_DICT = pa.dictionary(pa.int32(), pa.string())


def _dictionary(col: pa.Array) -> pa.DictionaryArray:
    """``col`` as a dictionary of strings with int32 indices and no nulls."""
    if col.type == _DICT and not col.null_count:
        return col
    import pyarrow.compute as pc

    if col.type != _DICT:
        col = pc.dictionary_encode(col.cast(pa.string())).cast(_DICT)
    if col.null_count:
        col = pc.dictionary_encode(pc.fill_null(col.dictionary_decode(), "")).cast(_DICT)
    return col


def write_files_with_matches(out: IO[str], counts: pa.Table, order: Sequence[str]) -> None:
    """``-l``: each file with at least one matching line, in scan order."""
    with_match = set(counts.column("file").to_pylist()) if counts.num_rows else set()
    names = [f for f in order if f in with_match]
    if names:
        out.write("\n".join(names) + "\n")
    out.flush()


def write_counts(out: IO[str], counts: dict[str, int], order: Sequence[str], single: bool) -> None:
    """``-c``: ``path:count`` per file with a match (just the count for one
    input); ``counts``: distinct matching lines per file
    (:attr:`~denpex_fast.ScanResult.matching_lines`)."""
    rows = [(f, counts[f]) for f in order if f in counts]
    if rows:
        out.write("\n".join(str(c) if single else f"{f}:{c}" for f, c in rows) + "\n")
    out.flush()


def write_json(
    out: IO[str],
    result: Any,
    highlighter: Highlighter | None = None,
) -> None:
    """JSON Lines in ``rg --json``'s shape, with each match's ``signature``."""
    schema = MATCH_SCHEMA.metadata[b"denpex.schema"].decode()
    dumps = json.dumps
    lines: list[str] = []
    for name, rows in _file_groups(result.table):
        path = {"text": name}
        lines.append(dumps({"type": "begin", "data": {"path": path}}))
        cols = rows.select(["line", "offset", "match_end", "signature", "text"]).to_pydict()
        for ln, off, mend, sig, text in zip(
            cols["line"], cols["offset"], cols["match_end"], cols["signature"], cols["text"]
        ):
            byte_end = _end_in_text(off, mend, text)
            sub = []
            if highlighter is not None:
                span = highlighter.span(sig, text, _char_end(text, byte_end))
                if span:
                    a, b = span
                    sub.append(
                        {
                            "match": {"text": text[a:b]},
                            "start": len(text[:a].encode("utf-8", "replace")),
                            "end": len(text[:b].encode("utf-8", "replace")),
                        }
                    )
            lines.append(
                dumps(
                    {
                        "type": "match",
                        "schema_version": schema,
                        "data": {
                            "path": path,
                            "lines": {"text": text + "\n"},
                            "line_number": ln,
                            "absolute_offset": off,
                            "match_end": mend,
                            "submatches": sub,
                            "signature": sig,
                        },
                    }
                )
            )
        lines.append(dumps({"type": "end", "data": {"path": path}}))
        if len(lines) > 4096:
            out.write("\n".join(lines) + "\n")
            lines = []
    lines.append(
        dumps(
            {
                "type": "summary",
                "data": {
                    "stats": result.stats,
                    "errors": [e.to_dict() for e in result.errors],
                    "skipped": [e.to_dict() for e in result.skipped],
                    "counts": result.counts.to_pylist(),
                },
            }
        )
    )
    out.write("\n".join(lines) + "\n")
    out.flush()
