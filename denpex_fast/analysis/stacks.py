"""Stack dumps of a hung job: which process is somewhere else.

When a distributed job stops making progress, the standard move is to dump
the Python stacks of every rank (``py-spy dump --pid``, or faulthandler's
``Thread 0x... (most recent call first):``).  Such a dump holds no error
line, yet the job failed: almost every process waits inside a collective
for the one process that is elsewhere (its DataLoader queue, a lock, work of
its own).  This module reads the dumps the scan found (the knowledge base's
``stack-dump`` mark), groups the stacks of all processes by their frames and
names the odd one out::

    >>> stacks = read_stacks(reader, files)
    >>> pick = odd_stack(stacks)
    >>> pick.frame.text
    '    _try_get_data (torch/utils/data/dataloader.py:1011)'

The frame named is the innermost one outside the Python standard library:
``queue.get`` and ``threading.wait`` say only that the process waits, the
frame that called them says for what.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..facts.attribution import prefix_length

#: bytes of a file's end read for its stacks (dumps are small)
STACK_BYTES = 1 << 20

# the header of one thread's stack: py-spy ("Thread 1439102 (idle): ...") or
# faulthandler ("Thread 0x00007f... (most recent call first):")
_HEADER = re.compile(
    r'Thread (?:0x[0-9A-Fa-f]+|\d+) \((?:idle|active)[^)]{0,40}\): "'
    r"|(?:Current thread|Thread) 0x[0-9A-Fa-f]+ \(most recent call first\):"
)
# one frame, innermost first in both formats
_PYSPY_FRAME = re.compile(r"^\s+(?P<func>\S.*?) \((?P<file>[^()\s]+):(?P<line>\d+)\)\s*$")
_FH_FRAME = re.compile(r'^\s+File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')
# terminal codes, left out as the scanner leaves them out of what it scans
_CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# a frame of torch.distributed's collectives (not the elastic launcher's wrapper)
_COLLECTIVE = re.compile(r"distributed_c10d|/c10d/|deepspeed/comm/|torch/distributed/(?!elastic/)")


@dataclass(frozen=True)
class Frame:
    """One frame line of a dump: where it is and what it says."""

    file: str  # the input's label
    line: int
    text: str
    func: str
    source: str  # the source file the frame names


@dataclass
class Stack:
    """One distinct stack and the processes (threads) that share it."""

    frames: tuple[Frame, ...]  # the first occurrence's frames, innermost first
    processes: int = 0
    main: bool = False  # a process's main thread (py-spy names it "MainThread")

    @property
    def key(self) -> tuple[tuple[str, str], ...]:
        return tuple((f.func, f.source) for f in self.frames)

    @property
    def in_collective(self) -> bool:
        """Whether the stack waits inside a collective (for someone else)."""
        return any(_COLLECTIVE.search(f.source) for f in self.frames)

    @property
    def frame(self) -> Frame:
        """The innermost frame outside the standard library (else the innermost)."""
        return next((f for f in self.frames if not _stdlib(f.source)), self.frames[0])


@dataclass(frozen=True)
class Pick:
    """The stack the diagnosis names and why."""

    stack: Stack
    processes: int  # processes dumped in all
    distinct: int  # distinct stacks among them
    odd: bool  # the stack differs from its peers' (else all wait alike)

    @property
    def frame(self) -> Frame:
        return self.stack.frame

    def why(self) -> str:
        """One sentence for the report's reasons."""
        n, k = self.processes, self.stack.processes
        if self.odd:
            where = "not waiting in a collective, " if not self.stack.in_collective else ""
            return (
                f"the logs are stack dumps of a hung job ({n} processes, {self.distinct} distinct "
                f"stacks): this one ({k} of them) is {where}unlike its peers'; its innermost "
                "frame outside the Python standard library is what it waits for"
            )
        if n == 1:
            return (
                "the logs are the stack dump of a hung process: its innermost frame outside the "
                "Python standard library is where it waits"
            )
        return (
            f"the logs are stack dumps of a hung job ({n} processes): they all wait in the same "
            "place, so the one holding them up is not among them; this is where they wait"
        )


def _stdlib(source: str) -> bool:
    """Whether a frame's source file is part of the Python standard library."""
    p = source.replace("\\", "/")
    if "-packages/" in p:
        return False
    m = re.search(r"/python3\.\d+/(.+)$", p)
    rel = m.group(1) if m else p.lstrip("./")
    top = rel.split("/", 1)[0].removesuffix(".py")
    return top.startswith("<frozen") or top in sys.stdlib_module_names


def parse_stacks(label: str, lines: Iterable[tuple[int, str]]) -> list[Stack]:
    """The stacks of one dump, ``(line number, text)`` pairs in order.

    Several headers followed by one stack (a dump grouped by hand, ``Thread
    1 ... Thread 4`` then the frames they share) count as that many
    processes; a launcher's or collector's prefix before a line is skipped.
    faulthandler frames pasted without their header are one process's stack."""
    out: list[Stack] = []
    headers = 0
    main = False
    frames: list[Frame] = []

    def close() -> None:
        nonlocal headers, frames, main
        if headers and frames:
            out.append(Stack(tuple(frames), headers, main))
            headers = 0
            main = False
        frames = []

    for n, raw in lines:
        text = _CSI.sub("", raw.rstrip("\r"))
        body = text[prefix_length(text) :]
        if _HEADER.search(body):
            if frames:
                close()
            headers += 1
            main = main or '"MainThread"' in body
            continue
        m = _PYSPY_FRAME.match(body) or _FH_FRAME.match(body)
        if m and not headers and m.re is _FH_FRAME:
            # frames pasted without their header: faulthandler's comma-less
            # "line N in f" is a dump's own (a traceback says "line N, in f")
            headers = 1
        if m and headers:
            frames.append(Frame(label, n, text, m["func"], m["file"]))
        elif body.strip():
            close()
            headers = 0
    close()
    return out


def odd_stack(stacks: Sequence[Stack]) -> Pick | None:
    """The stack to name: the one shared by the fewest processes, preferring
    one that does not wait in a collective (the others wait for it); with a
    single distinct stack, the place every process waits."""
    if not stacks:
        return None
    # a dump lists every thread of a process: when the main threads are
    # named, they are the processes compared (a tqdm monitor, a compile
    # worker or a watchdog thread waits the same way in every healthy run)
    if any(s.main for s in stacks):
        stacks = [s for s in stacks if s.main]
    merged: dict[tuple[tuple[str, str], ...], Stack] = {}
    for s in stacks:
        if s.key in merged:
            merged[s.key].processes += s.processes
        else:
            merged[s.key] = Stack(s.frames, s.processes, s.main)
    groups = list(merged.values())  # first occurrence order
    total = sum(g.processes for g in groups)
    if len(groups) == 1:
        return Pick(groups[0], total, 1, False)
    pick = min(
        groups,
        key=lambda g: (g.in_collective, g.processes),
    )
    # odd only when it stands apart: fewer processes than the largest group,
    # or the only stack outside a collective
    outside = [g for g in groups if not g.in_collective]
    odd = pick.processes < max(g.processes for g in groups) or len(outside) == 1
    return Pick(pick, total, len(groups), odd)


def read_stacks(reader: Any, labels: Iterable[str]) -> list[Stack]:
    """The stacks in the last :data:`STACK_BYTES` of each input in ``labels``,
    read back through the job's reader (never re-scanned)."""
    out: list[Stack] = []
    for label in labels:
        lines = reader.tail_lines(label, STACK_BYTES)
        got = reader.last_line(label)
        if not lines or got is None:
            continue
        first = got[0] - len(lines) + 1
        out += parse_stacks(label, ((first + i, x) for i, x in enumerate(lines)))
    return out
