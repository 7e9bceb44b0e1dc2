"""The benchmark pattern set: real signature patterns from the knowledge base.

``benchmark_patterns(n=250)`` takes a deterministic selection of ``n``
expressions from the shipped signatures (every k-th in id order), so the
benchmark measures the patterns users really run.  ``to_grep_ere`` rewrites
one for ``grep -E`` (POSIX ERE has no ``\\d``, ``(?:``, ``(?i)``); patterns
that cannot be rewritten are left out of the grep run only.
"""

from __future__ import annotations

import re

from denpex_fast.kb.signatures import load_signatures


def benchmark_patterns(n: int = 250) -> list[tuple[str, str]]:
    """``n`` (signature id, expression) pairs from the built-in knowledge base."""
    kb = load_signatures()
    pairs = [(sig, p) for sig, pats in sorted(kb.patterns().items()) for p in pats]
    if len(pairs) <= n:
        return pairs
    step = len(pairs) / n
    return [pairs[int(i * step)] for i in range(n)]


def to_grep_ere(expr: str) -> str | None:
    """The expression in GNU grep -E syntax, or None when it has no equivalent."""
    if "(?i" in expr or "(?s" in expr or "(?m" in expr or "\\Q" in expr:
        return None
    out = expr.replace("(?:", "(").replace("\\d", "[0-9]").replace("\\D", "[^0-9]")
    out = out.replace("\\s", "[[:space:]]").replace("\\S", "[^[:space:]]")
    if re.search(r"\\[xuhHvVRKN]|\(\?", out):
        return None
    return out


def write_pattern_file(path: str, exprs: list[str]) -> None:
    """One expression per line (the format hs_ceiling, rg -f and grep -f read)."""
    with open(path, "w", encoding="utf-8") as f:
        for e in exprs:
            f.write(e + "\n")
