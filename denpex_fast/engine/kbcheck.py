"""The knowledge base checked against the engine: pattern compilation, the strict
check (``denpex kb check``) and the ``python -m denpex_fast.engine.kbcheck``
command.

The loader (:mod:`denpex_fast.kb.signatures`) parses and validates fields
without the engine; whatever needs Hyperscan to judge a signature is here.
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings as _warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import SignatureError
from ..kb.signatures import (
    Signature,
    SignatureSet,
    StrPath,
    as_path_list,
    builtin_signature_dir,
    dangling_references,
    format_list,
    format_signature,
    parse_document,
    scan_forms,
    tomllib,
)
from ..kb.signatures import load_signatures as _load_unchecked


def load_signatures(
    paths: StrPath | Iterable[StrPath] | None = None,
    *,
    builtin: bool = True,
    validate_patterns: bool = True,
) -> SignatureSet:
    """Load the knowledge base (see :func:`denpex_fast.kb.signatures.load_signatures`)
    and, with ``validate_patterns``, compile every expression: a refusal raises
    :class:`SignatureError` naming the file, the id, ``patterns[n]`` and the
    Hyperscan message; if the engine is not built, the check is skipped with a
    warning (kept in :attr:`SignatureSet.warnings`).
    """
    kb = _load_unchecked(paths, builtin=builtin)
    if not validate_patterns:
        return kb
    failures, _, note = compile_signatures(list(kb), stop_at_first=True)
    if failures:
        raise SignatureError(failures[0][1])
    if note:
        _warnings.warn(note, RuntimeWarning, stacklevel=2)
        return SignatureSet(kb, [note])
    return kb


# --------------------------------------------------------------------------- compiling


def compile_signatures(
    sigs: list[Signature], *, stop_at_first: bool
) -> tuple[list[tuple[str, str]], Any, str]:
    """Compile all patterns with the native scanner.

    Returns ((id, message) per refused entry, a Scanner over the entries that compiled or
    None, a note when the scanner is unavailable).  Hyperscan stops at the
    first bad expression, so to report them all the offender is dropped and
    the rest compiled again.
    """
    try:
        from .scanner import Scanner, pattern_failure
    except ImportError as exc:
        return [], None, f"pattern validation skipped: the native scanner is not available ({exc})"
    remaining = {s.id: s for s in sigs}
    failures: list[tuple[str, str]] = []
    while remaining:
        try:
            # the forms the scanner ships (pattern_failure maps them back)
            scanner = Scanner(
                patterns={
                    sid: [f for p in s.patterns for f in scan_forms(p)]
                    for sid, s in remaining.items()
                }
            )
        except Exception as exc:  # the scanner's PatternError; anything else propagates
            found = pattern_failure(exc, remaining)
            if found is None:
                raise
            failures.append(found)
            if stop_at_first:
                return failures, None, ""
            del remaining[found[0]]
            continue
        return failures, scanner, ""
    return failures, None, ""


# --------------------------------------------------------------------------- strict check


def _longest_literal(expr: str) -> int:
    """Length of the longest run of literal characters an expression must match.

    A rough lower bound used as a performance lint: character classes,
    escapes such as ``\\d``, groups, alternation and quantified atoms break
    a run.
    """
    if expr.startswith("(?i)"):
        expr = expr[4:]
    best = run = 0
    i, n = 0, len(expr)
    while i < n:
        c = expr[i]
        literal = True
        step = 1
        if c == "\\" and i + 1 < n:
            step = 2
            literal = not expr[i + 1].isalnum()  # \d \s \b \x.. are not literals
        elif c == "[":
            j = i + 1
            if expr[j : j + 1] == "^":
                j += 1
            if expr[j : j + 1] == "]":
                j += 1
            while j < n and expr[j] != "]":
                j += 2 if expr[j] == "\\" else 1
            step, literal = j + 1 - i, False
        elif c == "{":
            close = expr.find("}", i)
            step, literal = (close + 1 - i if close > 0 else 1), False
        elif c in "().|^$*+?":
            literal = False
        if literal and expr[i + step : i + step + 1] in ("?", "*", "{"):
            literal = False  # an optional or repeated atom cannot be relied on
        if literal:
            run += 1
            best = max(best, run)
        else:
            run = 0
        i += step
    return best


def _lint(sig: Signature) -> list[str]:
    where = f"{sig.source}: signature '{sig.id}'"
    out = []
    for i, expr in enumerate(sig.patterns):
        if expr.startswith((".*", "(?i).*")):
            out.append(f"{where}: field 'patterns[{i}]': must not start with '.*'")
        if _longest_literal(expr) < 6:
            out.append(f"{where}: field 'patterns[{i}]': needs a literal of at least 6 characters")
    if sig.role == "symptom" and not sig.caused_by:
        out.append(f"{where}: field 'caused_by': a symptom names at least one cause")
    return out


def _example_problems(sigs: list[Signature], scanner: Any) -> tuple[list[str], str]:
    """Check every examples.match line matches its own entry and no nomatch line does."""
    cases: list[tuple[Signature, str, bool, int]] = []
    for sig in sigs:
        cases += [(sig, line, True, i) for i, line in enumerate(sig.examples_match)]
        cases += [(sig, line, False, i) for i, line in enumerate(sig.examples_nomatch)]
    note = ""
    if scanner is not None:
        table = scanner.scan_bytes(b"\n".join(c[1].encode() for c in cases) + b"\n")
        hits = set(zip(table.column("line").to_pylist(), table.column("signature").to_pylist()))

        def matched(n: int, sig: Signature, line: str) -> bool | None:
            return (n + 1, sig.id) in hits
    else:
        note = (
            "examples checked with Python re, an approximation of Hyperscan (scanner not available)"
        )

        def matched(n: int, sig: Signature, line: str) -> bool | None:
            try:
                return any(re.search(p, line) for p in sig.patterns)
            except re.error:
                return None  # a construct Python lacks; Hyperscan has the final say

    out = []
    for n, (sig, line, want, i) in enumerate(cases):
        got = matched(n, sig, line)
        if got is None or got == want:
            continue
        key = f"examples.{'match' if want else 'nomatch'}[{i}]"
        verb = "does not match" if want else "matches"
        out.append(
            f"{sig.source}: signature '{sig.id}': field '{key}': {verb} the entry's patterns: {line!r}"
        )
    return out, note


def _gather_ids(folder: Path) -> set[str]:
    """Ids defined in a directory, read leniently (only to resolve references)."""
    ids: set[str] = set()
    for file in sorted(folder.glob("*.toml")) if folder.is_dir() else []:
        try:
            doc = tomllib.loads(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        entries = doc.get("signature", [])
        for raw in entries if isinstance(entries, list) else []:
            if isinstance(raw, dict) and isinstance(raw.get("id"), str):
                ids.add(raw["id"])
    return ids


def check_signatures(files: Iterable[StrPath] | None = None) -> tuple[list[str], list[str], int]:
    """Strictly check signature files; return (problems, notes, number of entries).

    ``files`` defaults to every built-in file.  Beyond what the loader
    checks, this also fails on: ids duplicated across ``files``; references
    that neither ``files`` nor the built-in knowledge base define; symptoms
    without ``caused_by``; patterns that start with ``.*`` or lack a
    6-character literal; patterns Hyperscan refuses; ``examples.match``
    lines the entry's patterns miss and ``examples.nomatch`` lines they hit.
    """
    builtin_dir = builtin_signature_dir()
    targets = as_path_list(files) or sorted(builtin_dir.glob("*.toml"))
    problems: list[str] = []
    notes: list[str] = []
    sigs: dict[str, Signature] = {}
    for file in targets:
        try:
            parsed = parse_document(file.read_bytes(), str(file), file.stem, problems)
        except OSError as exc:
            problems.append(f"{file}: cannot read signature file: {exc.strerror or exc}")
            continue
        except SignatureError as exc:
            problems.append(str(exc))
            continue
        for sig in parsed:
            prev = sigs.get(sig.id)
            if prev is not None:
                problems.append(
                    f"{sig.source}: signature '{sig.id}': field 'id': duplicate id, already defined in {prev.source}"
                )
                continue
            sigs[sig.id] = sig
    checked = list(sigs.values())
    known = set(sigs) | (_gather_ids(builtin_dir) if files else set())
    problems += dangling_references(checked, known)
    for sig in checked:
        problems += _lint(sig)
    failures, scanner, note = compile_signatures(checked, stop_at_first=False)
    problems += [msg for _, msg in failures]
    if note:
        notes.append(note)
    failed_ids = {sid for sid, _ in failures}
    example_problems, note = _example_problems(
        [s for s in checked if s.id not in failed_ids], scanner
    )
    problems += example_problems
    if note:
        notes.append(note)
    return problems, notes, len(checked)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: ``check``, ``list`` and ``show``; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m denpex_fast.engine.kbcheck",
        description="Check, list and show failure signatures.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_check = sub.add_parser(
        "check", help="strictly check files (default: the built-in knowledge base)"
    )
    p_check.add_argument("files", nargs="*", help="signature TOML files")
    for name, help_ in (("list", "list the loaded signatures"), ("show", "describe one signature")):
        p = sub.add_parser(name, help=help_)
        if name == "show":
            p.add_argument("id")
        p.add_argument(
            "-p", "--path", action="append", default=[], help="extra signature directory or file"
        )
        p.add_argument(
            "--no-builtin", action="store_true", help="leave out the built-in knowledge base"
        )
    args = parser.parse_args(argv)

    try:
        if args.command == "check":
            problems, notes, count = check_signatures(args.files or None)
            for note in notes:
                print(f"note: {note}", file=sys.stderr)
            for problem in problems:
                print(problem)
            print(f"{count} signatures checked, {len(problems)} problem(s)", file=sys.stderr)
            return 1 if problems else 0
        kb = load_signatures(args.path, builtin=not args.no_builtin)
        if args.command == "list":
            print(format_list(kb))
            return 0
        if args.id not in kb:
            print(f"no signature with id {args.id!r}", file=sys.stderr)
            return 1
        print(format_signature(kb[args.id]))
        return 0
    except SignatureError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
