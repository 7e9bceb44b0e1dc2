"""Coverage-guided fuzzing of pattern compilation: ``Scanner(patterns=...)``.

Any set of (non-empty) signature ids and pattern strings must either build a
scanner that scans, pickles and reloads, or raise ``denpex_fast.PatternError``
naming one of the given signatures and patterns; never crash or raise
anything else.  Run through tests/fuzz/run.sh; see tests/fuzz/README.md.
"""

from __future__ import annotations

import pickle
import sys

import atheris

with atheris.instrument_imports(include=["denpex_fast"]):  # our code only: faster
    import denpex_fast
    from denpex_fast.engine.scanner import Scanner

# Regex fragments make valid-but-odd patterns likely; the rest is raw text.
FRAGMENTS = [
    "(",
    ")",
    "[",
    "]",
    "{2,}",
    "{1,3}",
    "*",
    "+",
    "?",
    "|",
    "\\",
    "\\d",
    "\\w",
    "\\b",
    "^",
    "$",
    ".",
    "(?i)",
    "(?s)",
    "(?m)",
    "\\x00",
    "\\n",
    "\\1",
    "(?=",
    "(?<!",
    "[^\\n]",
    "NCCL WARN",
    "a",
    "{",
    "}",
    "\\Q",
    "\\E",
    "(?#c)",
    "\\p{L}",
    "[[:alpha:]]",
    "é",
    "\ud800",
    "\x00",
    "\n",
]
SAMPLE = b"NCCL WARN timeout\nE12: xx\r\n\x00\xff a1b2 \xc3\xa9\n" * 3


def _pattern(fdp: atheris.FuzzedDataProvider) -> str:
    parts = []
    for _ in range(fdp.ConsumeIntInRange(1, 8)):
        if fdp.ConsumeBool():
            parts.append(FRAGMENTS[fdp.ConsumeIntInRange(0, len(FRAGMENTS) - 1)])
        else:
            parts.append(fdp.ConsumeUnicode(fdp.ConsumeIntInRange(0, 6)))
    return "".join(parts)


def TestOneInput(buf: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(buf)
    patterns: dict[str, list[str]] = {}
    for i in range(fdp.ConsumeIntInRange(1, 4)):
        sig = fdp.ConsumeUnicode(4) or f"s{i}"
        patterns.setdefault(sig, []).extend(
            _pattern(fdp) for _ in range(fdp.ConsumeIntInRange(1, 3))
        )
    caseless = fdp.ConsumeBool()
    try:
        s = Scanner(patterns=patterns, cache_dir=False, caseless=caseless)
    except ValueError as exc:
        if not isinstance(exc, denpex_fast.PatternError):
            # the one argument error left: an id with a lone surrogate
            assert "not valid Unicode" in str(exc), exc
            return
        assert exc.signature in patterns, (exc.signature, patterns)
        assert patterns[exc.signature][exc.index] == exc.pattern, (exc.index, exc.pattern)
        assert repr(exc.signature) in str(exc)  # the message quotes it
        return
    table = s.scan_bytes(SAMPLE)
    table.validate(full=True)
    again = pickle.loads(pickle.dumps(s))  # serialize + deserialize the database
    assert again.scan_bytes(SAMPLE).equals(table)


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
