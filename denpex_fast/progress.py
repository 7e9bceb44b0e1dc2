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
from collections.abc import Iterable, Mapping

import pyarrow as pa

from .readback import JobBytes

TAIL_BYTES = 1 << 20

# one capture group: the step number; the first form found in a line wins
STEP_FORMS = [
    re.compile(rb"\bstep=(\d+), skipped=\d+"),                 # DeepSpeed log_dist
    re.compile(rb"\biteration\s+(\d+)/\s*\d+"),                 # Megatron-LM
    re.compile(rb"'(?:global_)?step': (\d+)"),                  # Trainer/Accelerate dicts
    re.compile(rb"\b(?:global_)?step[=: ]\s*(\d+)\b"),          # user loops: step=12, step 12
]


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
        lines = data.split(b"\n")
        if start > 0:
            lines = lines[1:]  # the first one is cut
        texts: list[str] = []
        steps: list[int] = []
        for raw in lines:
            for rx in STEP_FORMS:
                m = rx.search(raw)
                if m:
                    texts.append(raw[:400].decode("utf-8", "replace"))
                    steps.append(int(m.group(1)))
                    break
        if not steps:
            continue
        ranks = line_facts(pa.array(texts, pa.string())).rank
        fallback = path_facts(name).rank
        for r, step in zip(ranks.tolist(), steps):
            rank = r if r >= 0 else fallback
            if rank is None or rank < 0:
                continue
            out[rank] = max(out.get(rank, -1), step)
    return out
