"""A line's own logger level, read from the prefix the logger wrote.

Only the start of a line counts (a level word further in is quoted text):
glog's ``I1016 12:00:00.123456   42 file.py:895]`` (PyTorch's c10 logger
writes it without the thread id, torch.distributed's Python loggers with the
file's whole path, behind torchrun's ``[rank0]:`` tag), SageMaker's
``[<time> <host>:<pid> INFO file.py:27]``, TensorFlow's and XLA's C++ logger
``2024-03-06 06:26:42.468543: W tensorflow/.../py_utils.cc:38]``, Ray's C++ core
``[2023-12-23 09:43:09,106 I 157479 157479] global_state_accessor.cc:374:``, Python logging's
``INFO:name:``, ``- INFO -``, ``| INFO |``, ``[INFO]``, vLLM's ``INFO 10-16
12:00:00``, NCCL's ``NCCL INFO``, UCX's level column, libfabric's ``<info>``.
"""

from __future__ import annotations

import re

from ..facts.attribution import collector_length


def _level(letter: str, words: str, *own: str) -> re.Pattern[str]:
    """The forms every logger level shares, at the level glog writes as
    ``letter`` and Python loggers as ``words``, then a level's ``own`` forms."""
    return re.compile(
        rf"(?:^|[\s\])|]|\[(?={letter}\d{{3,4}} )|(?<=\]:)(?={letter}\d{{3,4}} ))(?:"
        rf"{letter}\d{{3,4}} \d\d:\d\d:\d\d\.\d+ +(?:\d+ )?[\w./-]+:\d+\]"
        rf"|(?<=\d\d:\d\d:\d\d\.\d{{6}}: ){letter} [\w./-]+:\d+\]"
        # Ray's C++ core logger: "[2023-12-23 09:43:09,106 I 157479 157479] file.cc:374:"
        rf"|\[\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d,\d{{3}} {letter} \d+ \d+\] "
        rf"|(?:{words})(?::[\w.]*:| - | \| |\] | \d\d-\d\d \d\d:\d\d| [\w.-]+\.py:\d+\])"
        rf"|\[(?:{words})[\]|]" + "".join(f"|{form}" for form in own) + ")"
    )


# INFO/DEBUG.  What a library narrates at that level is a probe it recovers
# from (an optional backend, plugin or library it cannot open), never its
# failure, whatever error words it quotes.
_NARRATED = _level(
    "I",
    "INFO|DEBUG",
    r"NCCL INFO ",
    # UCX's level column ("sock.c:32   UCX  DEBUG ioctl(...) failed"), libfabric's "<info>"
    r"UCX +(?:DIAG|INFO|DEBUG|TRACE|REQ|DATA|ASYNC|FUNC|POLL) ",
    r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} D \d+ \d+\] ",  # Ray's C++ DEBUG
    r"\(\):\d+<(?:info|debug|trace)> ",
)
LEVEL_WITHIN = 120  # a level word further in is quoted text, not the line's own


# WARNING, in the same loggers' forms: glog ``W1016 ...]``, ``WARNING:name:``,
# ``- WARNING -``, ``[WARN]``, vLLM's ``WARNING 10-16 12:00:00``, a script's ``WARNING: ``
# (Megatron's "> WARNING: could not find index map files").
_WARNED = _level("W", "WARNING|WARN", r"WARNING: ")


# ERROR/CRITICAL in the same loggers' forms (a record ``logger.exception``
# writes: the message at this level, then the traceback without the prefix),
# plus Levanter's ``- ERROR :: ``
_LOGGED_ERROR = re.compile(
    r"(?:^|[\s\])|]|\[(?=E\d{3,4} ))(?:"
    r"(?:ERROR|CRITICAL)(?::[\w.]*:| - | \| |\] | :: | \d\d-\d\d \d\d:\d\d)"
    r"|\[(?:ERROR|CRITICAL)[\]|]"
    r")"
)


def _at_level(level: re.Pattern[str], text: str) -> bool:
    # counted from the end of a collector's prefix (a CRI file's "<time> stderr F "),
    # which stands before every line whatever its level
    text = text[collector_length(text) :]
    m = level.search(text, 0, LEVEL_WITHIN + 16)
    return m is not None and m.start() <= LEVEL_WITHIN


def warned(text: str) -> bool:
    """True when ``text`` was written at a logger's WARNING level."""
    return _at_level(_WARNED, text)


def logged_error(text: str) -> bool:
    """True when ``text`` was written at a logger's ERROR or CRITICAL level."""
    return _at_level(_LOGGED_ERROR, text)


def narrated(text: str) -> bool:
    """True when ``text`` was written at a logger's INFO or DEBUG level."""
    return _at_level(_NARRATED, text)


# A message that says, in its own words, that the program goes on past what
# it reports: "Failed to download font: IBM Plex Sans, skipping!", "...,
# continuing without it", "falling back to ...", "Treat it as zero FLOPs.".
# Only the words at the end of the message count: a failure quoted in front
# of them is the thing skipped.
_GOES_ON = re.compile(
    r"(?i)(?:[,;:.!-]|\s)\s*(?:skipping|continuing(?: without [\w' -]+| anyway)?"
    r"|falling back to [\w' ./-]+|ignoring(?: it)?|treat(?:ing)? (?:it|them) as [\w' ./-]+)"
    r"\s*[.!]*\s*$"
)


# ... or that opens by saying the error it reports is ignored: "Ignore import
# error when loading sglang.srt.models.x: ...", "Ignoring exception in
# callback ...".  Only at the message's start (after a logger's bracketed or
# colon-ended prefix): "cannot ignore error" later in a message is no such word.
_IGNORED = re.compile(
    r"(?:^|[\]|>:]\s*)[Ii]gnor(?:e|ed|ing)\s+(?:[\w.'-]+\s+){0,3}?"
    r"(?:errors?|exceptions?|failures?)\b"
)


def goes_on(text: str) -> bool:
    """True when ``text`` ends by saying the program went on past it
    (skipping, continuing, falling back, ignoring), or opens by saying the
    error it reports is ignored."""
    return _GOES_ON.search(text[-200:]) is not None or _IGNORED.search(text, 0, 400) is not None


# bash's `[` / `[[` / `test` builtins complaining about their operands
# ("line 72: [: : integer expression expected"): the test evaluates false
# and the script goes on with its next command, so the line stops nothing
# (an unset variable in a batch script's `if`, printed by every run of it).
_TEST_COMPLAINT = re.compile(
    r"(?:^|\s|:)(?:\[\[?|test): [^\n]{0,200}?(?:integer expression expected|unary operator "
    r"expected|binary operator expected|too many arguments|conditional binary operator expected)"
    r"\s*$"
)


def shell_test_rejected(text: str) -> bool:
    """True when ``text`` is a shell's ``[``/``test`` builtin rejecting its
    operands: the test is false and the script goes on."""
    return _TEST_COMPLAINT.search(text[-300:]) is not None


# Advice a program prints before anything went wrong: a sentence that opens
# with a condition or an address to the reader and says what *may* happen
# ("When using more than one image per GPU you may encounter an out-of-memory
# (OOM) error if your GPU does not have sufficient memory.").  It names a
# failure without reporting one.
_ADVICE = re.compile(
    r"^(?:when|if|you|note|notice|tip|hint|please|consider|make sure|to avoid)\b[^\n]{0,160}?"
    r"\b(?:may|might|could|can)\s+(?:\w+\s+){0,2}?(?:encounter|cause|run into|lead to|result "
    r"in|hit|see|get|fail|happen)\b",
    re.IGNORECASE,
)


def advice(text: str) -> bool:
    """True when ``text`` (its message, past a collector's prefix) is advice
    about what may go wrong, not a report that it did."""
    return _ADVICE.search(text[collector_length(text) :].lstrip()) is not None


# A generation printed as data: vLLM's offline-inference examples (and the
# scripts copied from them) print ``Prompt: '...', Generated text: '...'``
# per request, the model's words as Python reprs on one line.  Error words
# in them are what the model wrote, not what the program did.
# (the kept window of a long line may end before "Generated text")
_GENERATION = re.compile(r"^Prompt: (?:'|\")")


def model_output(text: str) -> bool:
    """True when ``text`` (past a collector's prefix) is a prompt and its
    generated text printed as data."""
    return _GENERATION.match(text[collector_length(text) :].lstrip()) is not None
