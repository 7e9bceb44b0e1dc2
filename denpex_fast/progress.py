"""Where each rank stopped making progress: the last step line of each file.

Step and iteration lines are a large share of a training log (DeepSpeed's
``step=N, skipped=M``, Megatron's ``iteration N/ M``, Trainer loss dicts,
``step=N`` of user loops).  Matching all of them in the Hyperscan set would
slow every scan down for one number per rank, so instead only the tail of each
plain file is read (a bounded window) and its step lines are parsed with the
same rank attribution as matches::

    >>> last_steps(["job/rank0.log", "job/rank1.log"])
    {0: 1200, 1: 1187}

Compressed inputs and stdin have no cheap tail; they are skipped and said so.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from .readback import JobBytes

TAIL_BYTES = 1 << 20

# the step number of a progress line, in the forms training loops print:
# DeepSpeed log_dist "step=N, skipped=M", Megatron-LM "iteration N/ M",
# Trainer/Accelerate dicts "'step': N", user loops "step=12" / "step 12"
STEP = re.compile(rb"\bstep=(\d+), skipped=\d+|\biteration\s+(\d+)/\s*\d+"
                  rb"|'(?:global_)?step': (\d+)|\b(?:global_)?step[=: ]\s*(\d+)\b")
# the same forms for the native scanner, which finds them in a tail at engine speed
_STEP_PATTERNS = [r"\bstep=\d+, skipped=\d+", r"\biteration\s+\d+/\s*\d+",
                  r"'(?:global_)?step': \d+", r"\b(?:global_)?step[=: ]\s*\d+\b"]
# of a long tail only the last step lines matter: enough for hundreds of ranks in one console
MAX_STEP_LINES = 4096
OWN_FILE_STEP_LINES = 64
_SCANNER: list[Any] = []
_LOCK = threading.Lock()


def _step_scanner() -> Any:
    with _LOCK:
        if not _SCANNER:
            from .scanner import Scanner

            _SCANNER.append(Scanner(patterns={"step": _STEP_PATTERNS}, max_text=400,
                                    max_rows_per_signature=1 << 30))
        return _SCANNER[0]


def step_lines(data: bytes, limit: int = MAX_STEP_LINES) -> tuple[list[str], list[int]]:
    """(line text, step) of the last ``limit`` progress lines in ``data``.

    The native scanner finds the lines (no per-line Python); the step number
    is read from the kept lines only.
    """
    rows = _step_scanner().scan_bytes(data).column("text")[-limit:].to_pylist()
    texts: list[str] = []
    steps: list[int] = []
    for text in rows:
        m = STEP.search(text.encode("utf-8", "replace"))
        if m:
            texts.append(text)
            steps.append(int(next(g for g in m.groups() if g is not None)))
    return texts, steps


def last_steps(files: Iterable[str], *, tail_bytes: int = TAIL_BYTES,
               locations: Mapping[str, str] | None = None,
               reader: JobBytes | None = None) -> dict[int, int]:
    """Highest step number seen per rank in the tail of each plain file.

    ``reader``: the job's :class:`~denpex_fast.readback.JobBytes` (default:
    one over ``locations``, where to read a file whose label is not its path).
    """
    from .attribution import line_facts, path_facts

    reader = reader or JobBytes(locations=locations)
    out: dict[int, int] = {}
    for name in files:
        inp = reader.input(name)
        if inp is None or inp.compression is not None:
            continue  # stdin, an archive member, compressed: no cheap tail
        got = reader.tail(name, tail_bytes)
        if got is None:
            continue
        start, data = got
        if start > 0:
            data = data[data.find(b"\n") + 1:]  # the first line is cut
        fallback = path_facts(name).rank
        # a rank's own file needs only its last few step lines; a console, many ranks' worth
        texts, steps = step_lines(data, OWN_FILE_STEP_LINES if fallback is not None
                                  else MAX_STEP_LINES)
        if not steps:
            continue
        ranks = line_facts(pa.array(texts, pa.string())).rank
        for r, step in zip(ranks.tolist(), steps):
            rank = r if r >= 0 else fallback
            if rank is None or rank < 0:
                continue
            out[rank] = max(out.get(rank, -1), step)
    return out
