"""Event assembly: group matched lines of one failure record into incidents.

A failure is rarely one line.  A Python traceback ends in an exception line
that a wrapper (``DistBackendError``) may repeat; NCCL prints a chain of
``WARN`` lines and a ``Last error:`` detail; the torchrun agent prints a
``ChildFailedError`` summary whose rank sits two lines above the exit code.
The ranking compares incidents, not lines::

    >>> from denpex_fast.analysis.incidents import assemble
    >>> incs = assemble(events, kb)
    >>> incs[0].head.signature, incs[0].rank, incs[0].lines
    ('cuda-oom', 2, (48, 53))

An incident is a run of non-context events of one file, each within
``GAP`` lines of the previous one and of compatible rank (the same rank, or
no rank).  It takes rank and host from any member; its head (the line it is
named by) is found from knowledge-base data only:

1. follow ``caused_by`` edges between members to the deepest cause, whatever
   the print order;
2. otherwise the best tier (:func:`tier`): a specific cause, a rank's own
   symptom, an open-world (``catch-all``) line, a ``wrapper``, a collateral
   symptom; within a tier the earliest line.  Beside a wrapper, open-world
   lines count only when the wrapper's ``caused_by`` reaches them (its own
   exception lines restate it); a wrapper that would head the incident
   yields to the earliest collateral line its record printed before it
   (the WARN above NCCL's ``file:line -> code`` trace);
3. an informational (context) line of the same process within ``GAP``
   lines before the head, whose entry the head's ``caused_by`` names, says
   why it failed and names the incident (the tier stays the error's).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..facts.attribution import collector_length

#: lines between two members of one incident (a traceback's frames fit)
GAP = 12

# symptoms in these phases report another rank's failure (timeouts, teardown);
# symptoms in other phases (a killed DataLoader worker) are the rank's own
COLLATERAL_PHASES = frozenset({"communication", "launcher", "rendezvous", "shutdown", "scheduler"})

TIER_CAUSE, TIER_OWN_SYMPTOM, TIER_OPEN, TIER_WRAPPER, TIER_COLLATERAL = range(5)
TIER_NAMES = ("specific cause", "own symptom", "open-world line", "wrapper", "collateral symptom")


def marks(kb: Any, sig_id: str) -> tuple[str, ...]:
    """The knowledge-base ``marks`` of a signature (empty when unknown)."""
    try:
        return tuple(kb[sig_id].marks)
    except (KeyError, AttributeError):
        return ()


def caused_by(kb: Any, sig_id: str) -> tuple[str, ...]:
    try:
        return tuple(kb[sig_id].caused_by)
    except (KeyError, AttributeError):
        return ()


def triggers(kb: Any, sig_id: str) -> tuple[str, ...]:
    """The knowledge-base ``triggers`` of a signature (empty when unknown)."""
    try:
        return tuple(kb[sig_id].triggers)
    except (KeyError, AttributeError):
        return ()


def tier(e: Any, kb: Any) -> int:
    """How strongly one event can be the origin of a failure, from KB data."""
    m = marks(kb, e.signature)
    if "wrapper" in m:
        return TIER_WRAPPER
    if "catch-all" in m:
        return TIER_OPEN if e.role == "cause" else TIER_COLLATERAL
    if e.role == "cause":
        return TIER_CAUSE
    if e.role == "symptom" and e.phase not in COLLATERAL_PHASES:
        return TIER_OWN_SYMPTOM
    return TIER_COLLATERAL


@dataclass
class Incident:
    """Consecutive lines of one failure record, named by its head."""

    members: list[Any]
    head: Any
    rank: int | None
    host: str | None
    tier: int
    t: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def file(self) -> str:
        return str(self.head.file)

    @property
    def lines(self) -> tuple[int, int]:
        return (min(m.line for m in self.members), max(m.line for m in self.members))

    @property
    def spans(self) -> list[tuple[int, int]]:
        """The member lines as runs (members within ``GAP`` lines of each other):
        one run for a record printed in one piece, several for one joined from
        places apart in its file (:func:`join`).  A record matched only on a
        continuation line starts at the line it continues."""
        out: list[tuple[int, int]] = []
        lines = sorted(m.line for m in self.members)
        first = self.extra.get("record_from")  # a wrapped record's first line
        if isinstance(first, int) and first < lines[0]:
            lines.insert(0, first)
        for ln in lines:
            if out and ln - out[-1][1] <= GAP:
                out[-1] = (out[-1][0], ln)
            else:
                out.append((ln, ln))
        return out

    def covers(self, file: str, line: int) -> bool:
        return file == self.file and any(lo <= line <= hi for lo, hi in self.spans)


def _head(members: Sequence[Any], kb: Any) -> Any:
    tiers = {id(m): tier(m, kb) for m in members}
    pool = list(members)
    wrapped = [m.line for m in members if tiers[id(m)] == TIER_WRAPPER]
    if wrapped:
        # a wrapper's own exception lines only restate it (``ncclSystemError:``
        # under ``NCCL error in:``): open-world lines after it win only through
        # caused_by; one printed before it is the failure the wrapper reports
        pool = [m for m in members if tiers[id(m)] != TIER_OPEN or m.line < min(wrapped)] or pool
    # a launcher stopping the other workers ("closing signal SIGTERM") is never
    # what names the record of the worker that failed
    best = min(pool, key=lambda e: (tiers[id(e)], teardown(kb, e.signature), e.line))
    if tiers[id(best)] == TIER_WRAPPER:
        # a wrapper restates what its record printed before it (NCCL's WARN
        # above its `file:line -> code` trace), whatever tier that line is in
        before = [
            m
            for m in members
            if m.line < best.line
            and tiers[id(m)] == TIER_COLLATERAL
            and not teardown(kb, m.signature)
        ]
        if before:
            best = min(before, key=lambda e: e.line)
    if best.text.rstrip().endswith(":") and tiers[id(best)] == TIER_OPEN:
        # an exception whose message ends in ":" says what failed on the lines
        # after it ("RuntimeError: Critical error when building pipeline:",
        # then the operator's own assertion): the next lines of the same tier
        # that another entry reads (not the same logger prefix again) are the message
        detail = [
            m
            for m in members
            if 0 < m.line - best.line <= DETAIL_LINES
            and tiers[id(m)] == TIER_OPEN
            and m.signature != best.signature
        ]
        if detail:
            best = max(detail, key=lambda e: e.line)
    seen = {id(best)}
    while True:
        deeper = [
            m
            for m in members
            if id(m) not in seen
            and m.signature in caused_by(kb, best.signature)
            and m.signature != best.signature
        ]
        if not deeper:
            return best
        best = min(deeper, key=lambda e: e.line)
        seen.add(id(best))


#: lines after an exception that ends in ":" its detail may sit
DETAIL_LINES = 3


def teardown(kb: Any, sig_id: str) -> bool:
    """Whether a signature reports a launcher or scheduler stopping a worker
    because of another failure (its ``agent-teardown``/``scheduler-teardown`` mark)."""
    return bool({"agent-teardown", "scheduler-teardown"} & set(marks(kb, sig_id)))


def _compatible(open_rank: int | None, rank: int | None) -> bool:
    return open_rank is None or rank is None or open_rank == rank


#: lines a launcher's record line may sit from the incident it belongs to
RECORD_GAP = 3
#: lines a ``prelude`` (a report's opening line) may sit before its error
PRELUDE_GAP = 400


def assemble(events: Iterable[Any], kb: Any, exit_code: Any = None) -> list[Incident]:
    """Incidents of the non-context events (see the module docstring).

    ``record``-marked context lines (a launcher's summary of a failed
    process) join the incident within ``RECORD_GAP`` lines and lend it their
    rank; one whose ``exit_code(event)`` is a failure starts an incident of
    its own.  A ``prelude`` line joins the next incident of its rank in its
    file (within ``PRELUDE_GAP`` lines, no other incident of that rank between).
    """
    by_file: dict[str, list[Any]] = {}
    records: dict[str, list[Any]] = {}
    preludes: dict[str, list[Any]] = {}
    context: dict[str, list[Any]] = {}
    for e in events:
        if "prelude" in marks(kb, e.signature):
            preludes.setdefault(e.file, []).append(e)
            continue
        is_record = "record" in marks(kb, e.signature)
        if e.role != "context" or (is_record and exit_code is not None and exit_code(e)):
            by_file.setdefault(e.file, []).append(e)
        elif is_record:
            records.setdefault(e.file, []).append(e)
        elif not {"traceback-start", "stack-dump"} & set(marks(kb, e.signature)):
            context.setdefault(e.file, []).append(e)
    out: list[Incident] = []
    for f, evs in by_file.items():
        evs.sort(key=lambda e: (e.line, e.index))
        # a line with no rank takes the rank of the launcher record beside it
        ranked = [r for r in records.get(f, ()) if r.rank is not None]
        for e in evs:
            if e.rank is None and ranked:
                near = min(ranked, key=lambda r: abs(r.line - e.line))
                if abs(near.line - e.line) <= RECORD_GAP:
                    e.rank = near.rank
        groups: list[list[Any]] = []
        live: list[list[Any]] = []  # groups whose last line is within GAP
        for e in evs:
            live = [g for g in live if e.line - g[-1].line <= GAP]
            fits = [
                g
                for g in live
                if _compatible(_rank_of(g), e.rank)
                and _same_writer(g[-1].text, e.text)
                and _same_thread(g[-1].text, e.text)
            ]
            if fits:
                max(fits, key=lambda g: g[-1].line).append(e)
            else:
                groups.append([e])
                live.append(groups[-1])
        for g in groups:
            primary = list(g)
            lo, hi = g[0].line, g[-1].line
            g.extend(
                r
                for r in records.get(g[0].file, ())
                if lo - RECORD_GAP <= r.line <= hi + RECORD_GAP and _compatible(_rank_of(g), r.rank)
            )
            # a report's opening line (before any incident of its rank since)
            g.extend(
                p
                for p in preludes.get(g[0].file, ())
                if lo - PRELUDE_GAP <= p.line < lo
                and _compatible(_rank_of(g), p.rank)
                and not any(p.line < o.line < lo and _compatible(o.rank, p.rank) for o in evs)
            )
            head = _head(primary, kb)
            level = tier(head, kb)
            # an informational line of the same writer just before the error
            # that the error's entry names as its cause ("NET/Plugin: Could
            # not find ..." before "network AWS Libfabric not found") says why
            why = [
                c
                for c in context.get(g[0].file, ())
                if lo - GAP <= c.line < head.line
                and c.signature in caused_by(kb, head.signature)
                and _compatible(_rank_of(g), c.rank)
                and _same_writer(c.text, head.text)
                and _same_process(c.text, head.text)
            ]
            if why:
                head = max(why, key=lambda c: c.line)
                g.append(head)
            g.sort(key=lambda e: (e.line, e.index))
            rank = head.rank if head.rank is not None else _rank_of(g)
            host = head.host if head.host is not None else next((m.host for m in g if m.host), None)
            ts = [m.t for m in g if m.t is not None]
            out.append(Incident(g, head, rank, host, level, min(ts) if ts else head.t))
    return out


def join(a: Incident, b: Incident, kb: Any) -> Incident:
    """One incident of two that report the same process's failure in two
    places of one file (a launcher's exit line and its later summary entry):
    named by the better head of the two, timed by the earlier."""
    members = sorted([*a.members, *b.members], key=lambda e: (e.line, e.index))
    head = _head([a.head, b.head], kb)
    ts = [x for x in (a.t, b.t) if x is not None]
    return Incident(
        members,
        head,
        a.rank if a.rank is not None else b.rank,
        a.host or b.host,
        tier(head, kb),
        min(ts) if ts else None,
        {**b.extra, **a.extra},
    )


def without(inc: Incident, drop: Callable[[Any], bool], kb: Any) -> Incident | None:
    """``inc`` without the members ``drop`` selects, named again from the rest
    (None when nothing is left)."""
    rest = [m for m in inc.members if not drop(m)]
    if not rest:
        return None
    head = _head(rest, kb)
    ts = [m.t for m in rest if m.t is not None]
    rank = head.rank if head.rank is not None else _rank_of(rest)
    return Incident(
        rest,
        head,
        rank if rank is not None else inc.rank,
        head.host or next((m.host for m in rest if m.host), None) or inc.host,
        tier(head, kb),
        min(ts) if ts else head.t,
        dict(inc.extra),
    )


def _own(text: str | None) -> str:
    """The line as its process wrote it: a collector's prefix (a CRI file's
    ``<time> stderr F ``, docker compose's service column) is on every line,
    and would hide the launcher tags the checks below compare."""
    text = text or ""
    return text[collector_length(text) :]


def _same_writer(a: str, b: str) -> bool:
    """Whether two nearby lines of one console can be one record: both carry a
    launcher's per-process prefix (``[default0]:``, ``[1,2]<stderr>:``) or
    neither does.  The agent's own lines (no prefix) interleave with its
    workers' (prefixed) and belong to another process."""
    return bool(_PREFIXES.match(_own(a))) == bool(_PREFIXES.match(_own(b)))


# NCCL's "host:pid:tid [dev]" prefix
_NCCL_PREFIX = re.compile(r"^\S*?([\w.-]+):(\d+):(\d+) \[\d+\]")


def _nccl_agree(ma: re.Match[str] | None, mb: re.Match[str] | None, parts: int) -> bool:
    """Whether two lines' NCCL prefixes, when both carry one, agree on their
    first ``parts`` fields (host, pid, tid)."""
    return not (ma and mb) or ma.groups()[:parts] == mb.groups()[:parts]


def _same_process(a: str, b: str) -> bool:
    """Whether two lines can come from one process: NCCL's ``host:pid:tid``
    prefixes, when both lines carry one, name the same host and pid."""
    return _nccl_agree(_NCCL_PREFIX.match(_own(a)), _NCCL_PREFIX.match(_own(b)), 2)


_NCCL_WORD = re.compile(r"(?i)nccl")


def _same_thread(a: str, b: str) -> bool:
    """Whether two lines can be one NCCL record: their ``host:pid:tid``
    prefixes, when both carry one, are the same (a process's main thread
    probing for a library and its proxy thread failing later are two).  A
    line after an NCCL line that lacks the prefix continues its record only
    when it speaks of NCCL (``NCCL error in:``, ``ncclInternalError``): an
    out-of-memory error of the same rank printed below NCCL's transport
    warning is a record of its own."""
    ma, mb = _NCCL_PREFIX.match(_own(a)), _NCCL_PREFIX.match(_own(b))
    if ma and not mb and not _NCCL_WORD.search(b or ""):
        return False
    return _nccl_agree(ma, mb, 3)


def _rank_of(group: Sequence[Any]) -> int | None:
    return next((m.rank for m in group if m.rank is not None), None)


_PREFIXES = re.compile(r"^(?:\s*(?:\[(?:default|rank)?\d+\]:|\d{1,5}: |\[\d+,\d+\]<\w+>:))+\s*")
_VOLATILE = re.compile(r"0x[0-9a-fA-F]+|\d+(?:\.\d+)?|[0-9a-f]{8,}")


def template(text: str) -> str:
    """A line with launcher prefixes dropped and numbers and hex ids masked, so
    the same message from different ranks compares equal."""
    return _VOLATILE.sub("#", _PREFIXES.sub("", _own(text))).strip()[:200]
