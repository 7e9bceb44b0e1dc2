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

from ..io.readback import JobBytes

TAIL_BYTES = 1 << 20

# each form starts with a literal, so the regex engine skips to candidates at
# memchr speed (one pass per form, no per-line Python); what may precede the
# literal is checked on the candidates only
_FORMS = [
    (re.compile(rb"step[=: ]\s*(\d+)\b"), (b"", b"global_")),  # step=12, step 12, global_step=12
    (re.compile(rb"iteration\s+(\d+)/\s*\d+"), None),  # Megatron-LM
    (re.compile(rb"step': (\d+)"), (b"'", b"'global_")),  # Trainer/Accelerate dicts
    # a user loop's own wording: iter 5/10, iter=5, Iteration: 5, iteration 5
    (re.compile(rb"iter(?:ation)?[=: ]\s*(\d+)\b"), (b"",)),
    (re.compile(rb"Iter(?:ation)?[=: ]\s*(\d+)\b"), (b"",)),
    # the synthetic benchmarks' "Iter #7: 111.8 img/sec per GPU" (Horovod and its copies)
    (re.compile(rb"Iter #(\d+): "), None),
    # a tqdm bar (" 40%|####      | 4/10 [00:01<...]"): its N of N/M
    (re.compile(rb"\| ?(\d+)/\d+ \["), None),
]
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _preceded(data: bytes, at: int, allowed: tuple[bytes, ...]) -> bool:
    """True when one of ``allowed`` ends at ``at`` as a whole word (``b""``: a word start)."""
    for pre in allowed:
        start = at - len(pre)
        if start < 0 or data[start:at] != pre:
            continue
        if pre.startswith(b"'") or start == 0 or data[start - 1] not in _WORD:
            return True
    return False


# of a long tail only the last step lines matter: enough for hundreds of ranks in one console
MAX_STEP_LINES = 4096
OWN_FILE_STEP_LINES = 64


# a launcher's per-process prefix; two ranks writing at once can put one
# inside another's line ("...ms/it[1,2]<stdout>:[rank 2] iter 8/10")
# (the host part bounded as in attribution's Open MPI tag)
_TAG = re.compile(
    rb"\[\d+,(?:mpirank:)?\d+(?:,[A-Za-z][\w.-]{0,62})?\]<std(?:out|err)>:|\[[A-Za-z_]+\d+\]:"
)


def _segment_start(data: bytes, lo: int, at: int) -> int:
    """Where the text of the process that printed ``data[at]`` starts: the
    line start, or a launcher prefix later in the same line."""
    start = lo
    for t in _TAG.finditer(data, lo, at):
        start = t.start()
    return start


def step_lines(data: bytes, limit: int = MAX_STEP_LINES) -> tuple[list[str], list[int]]:
    """(line text, step) of the last ``limit`` progress lines in ``data``.

    The leftmost form found in a line gives its step; the line of a match is
    cut out only for the lines kept.  Only the end of ``data`` is searched
    while it holds ``limit`` progress lines (a rank's own file needs a few
    dozen lines, not its whole tail).
    """
    # a console needs many ranks' lines: it is searched whole at once
    window = FIRST_WINDOW if limit <= OWN_FILE_STEP_LINES else len(data)
    while True:
        start = max(0, len(data) - window)
        if start:
            nl = data.find(b"\n", start)
            start = len(data) if nl < 0 else nl + 1
        texts, steps = _step_lines_from(data, start, limit)
        if len(steps) >= limit or start == 0:
            return texts, steps
        window *= 8


#: bytes at the end of a tail searched first for progress lines
FIRST_WINDOW = 16 << 10


def _step_lines_from(data: bytes, start: int, limit: int) -> tuple[list[str], list[int]]:
    first: dict[int, tuple[int, int]] = {}  # line start -> (match position, step)
    for rx, allowed in _FORMS:
        form: dict[int, tuple[int, int]] = {}
        for m in rx.finditer(data, start):
            if allowed is not None and not _preceded(data, m.start(), allowed):
                continue
            lo = _segment_start(data, data.rfind(b"\n", 0, m.start()) + 1, m.start())
            got = form.get(lo)
            # a form repeated in one line is a bar redrawn with \r: the last is the latest
            form[lo] = (m.start() if got is None else got[0], int(m.group(1)))
        for lo, (at, step) in form.items():
            got = first.get(lo)
            if got is None or at < got[0]:
                first[lo] = (at, step)
    texts: list[str] = []
    steps: list[int] = []
    for lo in sorted(first)[-limit:]:
        hi = data.find(b"\n", lo)
        hi = len(data) if hi < 0 else hi
        nxt = _TAG.search(data, first[lo][0], hi)  # the next process's text, if any
        hi = nxt.start() if nxt else hi
        texts.append(data[lo : min(hi, lo + 400)].decode("utf-8", "replace"))
        steps.append(first[lo][1])
    return texts, steps


def last_steps(
    files: Iterable[str],
    *,
    tail_bytes: int = TAIL_BYTES,
    locations: Mapping[str, str] | None = None,
    reader: JobBytes | None = None,
    latest: Mapping[str, float] | None = None,
) -> dict[int, int]:
    """Highest step number seen per rank in the tail of each plain file.

    ``reader``: the job's :class:`~denpex_fast.io.readback.JobBytes` (default:
    one over ``locations``, where to read a file whose label is not its path).
    ``latest``: the latest timestamp seen in each file; of several parts of
    one rank's log (by path, in one directory: rotated logs, a log cut into
    parts) that all have one, only the newest with progress lines is read.
    """
    from ..facts.attribution import line_facts, path_facts

    reader = reader or JobBytes(locations=locations)
    out: dict[int, int] = {}
    all_texts: list[str] = []
    all_steps: list[int] = []
    fallbacks: list[int] = []
    for group in _by_rank_newest_first(files, latest or {}):
        for name in group:
            inp = reader.input(name)
            if inp is None or inp.compression is not None:
                continue  # stdin, an archive member, compressed: no cheap tail
            got = reader.tail(name, tail_bytes)
            if got is None:
                continue
            start, data = got
            if start > 0:
                data = data[data.find(b"\n") + 1 :]  # the first line is cut
            fallback = path_facts(name).rank
            # a rank's own file needs only its last few step lines; a console, many ranks' worth
            texts, steps = step_lines(
                data, OWN_FILE_STEP_LINES if fallback is not None else MAX_STEP_LINES
            )
            all_texts += texts
            all_steps += steps
            fallbacks += [-1 if fallback is None else fallback] * len(steps)
            if steps and len(group) > 1:
                break  # the newest of a rank's files that shows progress has its last step
    if not all_steps:
        return out
    # one attribution pass over every file's lines (its cost is mostly per call)
    ranks = line_facts(pa.array(all_texts, pa.string())).rank
    for r, step, fallback in zip(ranks.tolist(), all_steps, fallbacks):
        rank = r if r >= 0 else fallback
        if rank >= 0:
            out[rank] = max(out.get(rank, -1), step)
    return out


def _by_rank_newest_first(files: Iterable[str], latest: Mapping[str, float]) -> list[list[str]]:
    """``files`` in groups read together: the parts of one rank's log (its
    files in one directory), newest first, when each has a latest timestamp;
    every other file on its own (the same local rank on two nodes is two)."""
    from ..facts.attribution import log_parts_key

    groups: dict[tuple[str, int], list[str]] = {}
    alone: list[list[str]] = []
    for name in files:
        key = log_parts_key(name)
        if key is None or name not in latest:
            alone.append([name])
        else:
            groups.setdefault(key, []).append(name)
    return alone + [sorted(g, key=lambda n: (latest[n], n), reverse=True) for g in groups.values()]
