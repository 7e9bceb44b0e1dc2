"""Causal first-anomaly ranking over an attributed match table.

Given the matches of one job (rank, host and ts filled by
:mod:`denpex_fast.attribution`) and the knowledge base, decide which event
initiated the failure and which events are only its consequences::

    >>> ranking = rank_events(attributed_table, kb)
    >>> ranking.initiating.signature, ranking.initiating.rank
    ('cuda-oom', 2)

The rules, in order of strength:

1. Hosts' clocks disagree.  Events every rank prints at about the same moment
   (the same NCCL collective timing out on many ranks, rendezvous and
   init lines, the same step) give a per-host offset and an uncertainty
   bound (:func:`estimate_skew`).
2. The initiating event is the earliest ``cause`` after correction.  Within
   one file, line order is time order, so an interleaved console orders
   events even without timestamps.  A symptom that reports a timeout T at
   time t says the stall began near t - T: a cause close to that moment is
   favoured, a cause after it is demoted (it is more likely a consequence).
3. NCCL watchdog lines carry the collective's SeqNum: a rank that never
   entered the collective the others time out in (no timeout line of its
   own, or a lower "last enqueued" work) is the suspect even when it printed
   nothing.
4. With no cause at all, the rank that stopped making progress first (its
   last step line) is the suspect.
5. Otherwise the ranking abstains: it says what is known instead of naming
   a victim.  Two causes on different hosts closer than the skew bound are
   reported as indistinguishable.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import pyarrow as pa

SEVERITY_WEIGHT = {"fatal": 3, "error": 2, "warning": 1, "info": 0}

# field names the knowledge base uses for these quantities
TIMEOUT_MS_FIELDS = ("timeout_ms",)
TIMEOUT_S_FIELDS = ("timeout_s", "timeout", "seconds")
SEQ_FIELDS = ("seqnum", "seq", "work", "timeout_work")
LAST_ENQUEUED_FIELDS = ("last_enqueued",)
LAST_COMPLETED_FIELDS = ("last_completed",)
STEP_FIELDS = ("step", "iteration", "global_step")
EXIT_FIELDS = ("exit_code", "exitcode", "code")
SIGNAL_FIELDS = ("signal",)

DEFAULT_SKEW_FLOOR_S = 0.5  # two events closer than this are never called ordered across hosts

# catch-all signatures: they yield to any other signature on the same line
GENERIC_CAUSES = frozenset({"os-python-uncaught-exception"})
# symptoms in these phases report another rank's failure (timeouts, teardown);
# symptoms in other phases (a killed DataLoader worker) are the rank's own
COLLATERAL_PHASES = frozenset({"communication", "launcher", "rendezvous", "shutdown", "scheduler"})
AGENT_SIGTERM_CODES = frozenset({-15, 143})


@dataclass
class Event:
    """One match with what the ranking needs to know about it."""

    index: int                 # row in the match table
    signature: str
    role: str
    severity: str
    phase: str
    file: str
    line: int
    text: str
    rank: int | None
    host: str | None
    ts: datetime | None        # as attributed (host clock)
    fields: dict[str, str] = field(default_factory=dict)
    t: float | None = None     # corrected seconds since the epoch (skew applied)

    def where(self) -> str:
        return f"{self.file}:{self.line}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "signature": self.signature, "role": self.role, "severity": self.severity,
            "rank": self.rank, "host": self.host, "file": self.file, "line": self.line,
            "ts": self.ts.isoformat() if self.ts else None, "text": self.text,
            "fields": dict(self.fields),
        }


@dataclass
class Skew:
    """Per-host clock offsets (seconds to subtract) and the uncertainty bound."""

    offsets: dict[str, float]
    bound: float                          # seconds; inf when hosts share no event
    evidence: list[str] = field(default_factory=list)

    def correct(self, host: str | None, t: float) -> float:
        return t - self.offsets.get(host or "", 0.0)


@dataclass
class Ranking:
    """The ranking's verdict and the evidence behind it."""

    initiating: Event | None
    confidence: float
    reasons: list[str]
    verdict: str                               # "initiating" | "abstain" | "healthy"
    suspect_rank: int | None = None            # set when the suspect printed nothing
    candidates: list[Event] = field(default_factory=list)   # other causes, best first
    indistinguishable: list[Event] = field(default_factory=list)
    skew: Skew | None = None
    events: list[Event] = field(default_factory=list)
    stall_start: float | None = None


def _num(fields: dict[str, str], names: Sequence[str]) -> float | None:
    for n in names:
        v = fields.get(n)
        if v is None:
            continue
        m = re.search(r"-?\d+(?:\.\d+)?", v)
        if m:
            return float(m.group())
    return None


def thin_context(table: pa.Table, kb: Any, keep: int = 8) -> pa.Table:
    """Drop the middle of long runs of context rows (vectorised).

    Step and progress lines can be tens of thousands of rows; the ranking only
    needs the first rows of each (file, signature, rank) run (shared events
    for clock skew) and the last ones (where progress stopped).  Cause and
    symptom rows are all kept.
    """
    n = table.num_rows
    if n <= 4 * keep:
        return table
    import numpy as np
    import pyarrow.compute as pc

    sig_col = table.column("signature").combine_chunks()
    names = sig_col.dictionary.to_pylist()
    is_ctx_dict = np.array([_role(kb, x) == "context" for x in names], dtype=bool)
    sig_idx = sig_col.indices.to_numpy(zero_copy_only=False)
    ctx = is_ctx_dict[sig_idx]
    if ctx.sum() <= 4 * keep:
        return table
    file_idx = table.column("file").combine_chunks().indices.to_numpy(zero_copy_only=False)
    rank = pc.fill_null(table.column("rank"), -1).to_numpy().astype(np.int64)
    line = table.column("line").to_numpy()
    order = np.lexsort((line, rank, sig_idx, file_idx))
    key = np.stack([file_idx[order], sig_idx[order], rank[order]])
    new_group = np.r_[True, np.any(key[:, 1:] != key[:, :-1], axis=0)]
    start = np.maximum.accumulate(np.where(new_group, np.arange(n), 0))
    end = np.r_[np.flatnonzero(new_group)[1:], n]
    end = end[np.cumsum(new_group) - 1]
    pos = np.arange(n) - start
    keep_sorted = (pos < keep) | (end - np.arange(n) <= keep) | ~ctx[order]
    mask = np.zeros(n, dtype=bool)
    mask[order] = keep_sorted
    return table.filter(pa.array(mask))


def _role(kb: Any, sig_id: str) -> str:
    try:
        return str(kb[sig_id].role)
    except KeyError:
        return "context"


def build_events(table: pa.Table, kb: Any) -> list[Event]:
    """Events for every row of ``table`` whose signature the knowledge base knows.

    Field extraction runs only on rows whose signature declares fields.
    """
    cols = table.select(["file", "line", "signature", "text", "rank", "host", "ts"]).to_pydict()
    events: list[Event] = []
    for i, sig_id in enumerate(cols["signature"]):
        try:
            sig = kb[sig_id]
        except KeyError:
            role, severity, phase, fields = "context", "info", "", {}
        else:
            role, severity, phase = sig.role, sig.severity, sig.phase
            fields = sig.extract_fields(cols["text"][i]) if sig.fields else {}
        events.append(Event(i, sig_id, role, severity, phase, cols["file"][i], cols["line"][i],
                            cols["text"][i], cols["rank"][i], cols["host"][i], cols["ts"][i],
                            fields))
    return events


def estimate_skew(events: Sequence[Event]) -> Skew:
    """Per-host clock offsets from events that many hosts print together.

    A group is (signature, SeqNum or step) for events on at least two hosts;
    each host contributes its earliest timestamp in the group.  The offset of
    a host is the median difference to the reference host (the host with the
    most grouped events) over shared groups; the bound is the largest
    residual, never below ``DEFAULT_SKEW_FLOOR_S``.
    """
    hosts = {e.host for e in events if e.host is not None and e.ts is not None}
    if len(hosts) <= 1:
        return Skew({h: 0.0 for h in hosts}, DEFAULT_SKEW_FLOOR_S)
    groups: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for e in events:
        if e.host is None or e.ts is None or e.role == "cause":
            continue  # causes are what we order; they must not calibrate the clocks
        key = _num(e.fields, SEQ_FIELDS)
        if key is None:
            key = _num(e.fields, STEP_FIELDS)
        gk = (e.signature, "" if key is None else repr(key))
        t = e.ts.timestamp()
        prev = groups[gk].get(e.host)
        groups[gk][e.host] = t if prev is None else min(prev, t)
    shared = {k: v for k, v in groups.items() if len(v) >= 2}
    if not shared:
        return Skew({h: 0.0 for h in hosts}, math.inf,
                    ["no event is shared by two hosts: cross-host order is unknown"])
    count: dict[str, int] = defaultdict(int)
    for v in shared.values():
        for h in v:
            count[h] += 1
    ref = max(sorted(count), key=lambda h: count[h])
    diffs: dict[str, list[float]] = defaultdict(list)
    for v in shared.values():
        if ref in v:
            for h, t in v.items():
                diffs[h].append(t - v[ref])
    offsets = {h: _median(d) for h, d in diffs.items()}
    residual = max((abs(x - offsets[h]) for h, d in diffs.items() for x in d), default=0.0)
    unlinked = sorted(hosts - set(offsets))
    evidence = [f"clock offsets from {len(shared)} event group(s) shared across hosts "
                f"(reference {ref})"]
    evidence += [f"host {h}: {offsets[h]:+.3f} s" for h in sorted(offsets) if h != ref
                 and abs(offsets[h]) >= 0.001]
    bound = max(residual, DEFAULT_SKEW_FLOOR_S)
    if unlinked:
        evidence.append(f"no shared event links host(s) {', '.join(unlinked)} to {ref}")
        bound = math.inf
    for h in unlinked:
        offsets[h] = 0.0
    return Skew(offsets, bound, evidence)


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def _order_key(e: Event, file_rank: dict[str, int]) -> tuple[float, int, int]:
    # corrected time first; same file: line order; no time at all: after timed events
    t = e.t if e.t is not None else math.inf
    return (t, file_rank.get(e.file, 0), e.line)


def _stall_start(events: Sequence[Event]) -> tuple[float | None, list[str]]:
    """Earliest t - T over symptoms that report a timeout T."""
    best: float | None = None
    notes = []
    for e in events:
        if e.role != "symptom" or e.t is None:
            continue
        ms = _num(e.fields, TIMEOUT_MS_FIELDS)
        secs = ms / 1000 if ms is not None else _num(e.fields, TIMEOUT_S_FIELDS)
        if secs is None or secs <= 0:
            continue
        start = e.t - secs
        if best is None or start < best:
            best = start
            notes = [f"{e.signature} at {e.where()} reports a {secs:g} s timeout: "
                     f"the stall began near {datetime.fromtimestamp(start, tz=timezone.utc).isoformat()}"]
    return best, notes


def _watchdog_suspect(events: Sequence[Event], known_ranks: set[int]) -> tuple[int | None, list[str]]:
    """A rank that never entered the collective the others time out in."""
    by_seq: dict[float, set[int]] = defaultdict(set)
    enqueued: dict[int, float] = {}
    for e in events:
        if e.rank is None:
            continue
        seq = _num(e.fields, SEQ_FIELDS)
        if seq is not None and e.role == "symptom":
            by_seq[seq].add(e.rank)
        enq = _num(e.fields, LAST_ENQUEUED_FIELDS)
        if enq is not None:
            enqueued[e.rank] = max(enqueued.get(e.rank, -1), enq)
    if not by_seq:
        # no SeqNum: any communication timeout that several ranks report
        by_sig: dict[str, set[int]] = defaultdict(set)
        for e in events:
            if e.role == "symptom" and e.phase == "communication" and e.rank is not None:
                by_sig[e.signature].add(e.rank)
        if not by_sig:
            return None, []
        sig, waiting = max(by_sig.items(), key=lambda kv: len(kv[1]))
        silent = sorted(known_ranks - waiting)
        if len(waiting) >= 2 and len(silent) == 1:
            return silent[0], [f"{len(waiting)} ranks report {sig}; rank {silent[0]} does not: "
                               f"the others were waiting for it"]
        return None, []
    seq, waiting = max(by_seq.items(), key=lambda kv: (len(kv[1]), -kv[0]))
    if enqueued:
        top = max(enqueued.values())
        behind = sorted(r for r, v in enqueued.items() if v < top)
        if len(behind) == 1:
            return behind[0], [f"rank {behind[0]} enqueued NCCL work {enqueued[behind[0]]:g}, "
                               f"the other ranks {top:g}: it never entered the collective"]
    silent = sorted(known_ranks - waiting)
    if len(waiting) >= 2 and len(silent) == 1:
        return silent[0], [f"{len(waiting)} ranks time out in collective SeqNum {seq:g}; "
                           f"rank {silent[0]} does not: it never entered it"]
    return None, []


def _progress_suspect(events: Sequence[Event],
                      progress: dict[int, int] | None = None) -> tuple[int | None, list[str]]:
    """The rank whose last progress line shows the lowest step."""
    last: dict[int, float] = {r: float(s) for r, s in (progress or {}).items()}
    for e in events:
        step = _num(e.fields, STEP_FIELDS)
        if e.rank is not None and step is not None:
            last[e.rank] = max(last.get(e.rank, -1), step)
    if len(last) < 2:
        return None, []
    low = min(last.values())
    laggards = [r for r, s in last.items() if s == low]
    if len(laggards) == 1 and max(last.values()) > low:
        r = laggards[0]
        return r, [f"rank {r} stopped making progress first (last step {low:g}, "
                   f"others reached {max(last.values()):g})"]
    return None, []


def _monotone_per_file(events: Sequence[Event]) -> None:
    """A file is written in order: a later line never happened earlier.

    Printed timestamps can be coarser (whole seconds), lag behind the write
    (buffering) or be missing; the running maximum per file keeps every
    event's time consistent with the order the file was written in.
    """
    by_file: dict[str, list[Event]] = defaultdict(list)
    for e in events:
        by_file[e.file].append(e)
    for evs in by_file.values():
        evs.sort(key=lambda e: e.line)
        running: float | None = None
        for e in evs:
            if e.t is None:
                e.t = running
            elif running is not None and e.t < running:
                e.t = running
            else:
                running = e.t


def ranks_from_paths(files: Iterable[str]) -> set[int]:
    """Ranks that input file paths name (``attempt_0/3/stderr.log``, ``rank3.log``)."""
    try:
        from .attribution import path_facts
    except ImportError:  # pragma: no cover - attribution ships with the package
        return set()
    out = set()
    for f in files:
        r = path_facts(f).rank
        if r is not None:
            out.add(r)
    return out


def rank_events(table: pa.Table, kb: Any, *, events: list[Event] | None = None,
                progress: dict[int, int] | None = None) -> Ranking:
    """Rank the events of one job; see the module docstring for the rules.

    ``progress``: the last step per rank (:func:`denpex_fast.progress.last_steps`).
    """
    events = build_events(thin_context(table, kb), kb) if events is None else events
    skew = estimate_skew(events)
    for e in events:
        e.t = skew.correct(e.host, e.ts.timestamp()) if e.ts is not None else None
    _monotone_per_file(events)
    file_rank = {f: i for i, f in enumerate(dict.fromkeys(e.file for e in events))}
    stall, stall_notes = _stall_start(events)
    known_ranks = {e.rank for e in events if e.rank is not None}
    if table.num_rows:
        col = table.column("file")
        names = col.chunk(0).dictionary.to_pylist() if col.num_chunks else []
        known_ranks |= ranks_from_paths(names)

    causes, weak = _candidates(events)
    causes.sort(key=lambda e: _order_key(e, file_rank))
    weak.sort(key=lambda e: _order_key(e, file_rank))
    reasons: list[str] = list(skew.evidence) + stall_notes

    if not causes and weak:
        # no specific cause: an uncaught exception or a rank's own fatal symptom
        first = weak[0]
        why = [f"no specific cause matched; the earliest failure of a rank's own is "
               f"{first.signature} at {first.where()}"
               + (f" on rank {first.rank}" if first.rank is not None else "")]
        conf = 0.45 if first.rank is not None else 0.35
        if _victims(events, first):
            conf += 0.1
            why.append("other ranks only report consequences (timeouts, teardown)")
        return Ranking(first, conf, reasons + why, "initiating", candidates=_dedupe(weak[1:]),
                       skew=skew, events=events, stall_start=stall)

    if not causes:
        suspect, why = _watchdog_suspect(events, known_ranks)
        exit_event = None
        if suspect is None:
            exit_event, why = _exit_code_event(events, file_rank)
        if suspect is None and exit_event is None:
            suspect, why = _progress_suspect(events, progress)
        symptoms = [e for e in events if e.role == "symptom"]
        if exit_event is not None:
            return Ranking(exit_event, 0.4, reasons + why, "initiating", skew=skew, events=events,
                           stall_start=stall)
        if suspect is not None:
            return Ranking(None, 0.45, reasons + why, "initiating", suspect_rank=suspect,
                           skew=skew, events=events, stall_start=stall)
        verdict = "abstain" if symptoms else "healthy"
        why = (["no initiating event found: only symptoms were matched"] if symptoms
               else ["no failure signature matched"])
        return Ranking(None, 0.0, reasons + why, verdict, skew=skew, events=events,
                       stall_start=stall)

    first = causes[0]
    # a cause that came after the stall began is more likely a consequence
    if stall is not None and first.t is not None and first.t > stall + skew.bound:
        before = [c for c in causes if c.t is not None and c.t <= stall + skew.bound]
        if before:
            first = before[0]
    others = [c for c in causes if c is not first]
    tie = [c for c in others if c.t is not None and first.t is not None
           and c.host != first.host and abs(c.t - first.t) <= skew.bound
           and c.signature != first.signature]

    confidence, why = _confidence(first, others, tie, events, stall, skew, kb)
    reasons += why
    reasons += _attempt_note(first, events)
    verdict = "initiating"
    if tie:
        reasons.append(
            "indistinguishable: " + ", ".join(f"{c.signature} on host {c.host} ({c.where()})"
                                              for c in tie[:3])
            + f" happened within the clock-skew bound ({skew.bound:.2f} s) of the first cause")
    return Ranking(first, confidence, reasons, verdict, candidates=_dedupe(others), indistinguishable=tie,
                   skew=skew, events=events, stall_start=stall)


def shadowed(events: Sequence[Event]) -> set[int]:
    """Row indices of generic matches on lines another signature also matched.

    Such a row adds nothing: the specific signature says more about the line.
    """
    claimed = {(e.file, e.line) for e in events if e.signature not in GENERIC_CAUSES}
    return {e.index for e in events if e.signature in GENERIC_CAUSES and (e.file, e.line) in claimed}


def _candidates(events: Sequence[Event]) -> tuple[list[Event], list[Event]]:
    """(specific causes, weak candidates) of a job.

    A generic exception line yields to any other signature on the same line:
    to a specific cause (which is used instead) and to a symptom (the line
    only reports another rank's failure).
    """
    hidden = shadowed(events)
    causes, weak = [], []
    for e in events:
        if SEVERITY_WEIGHT.get(e.severity, 0) < 2 and e.role != "cause":
            continue
        if e.role == "cause" and SEVERITY_WEIGHT.get(e.severity, 0) >= 1:
            if e.signature in GENERIC_CAUSES:
                if e.index not in hidden:
                    weak.append(e)
            else:
                causes.append(e)
        elif e.role == "symptom" and e.phase not in COLLATERAL_PHASES:
            weak.append(e)
    return causes, weak


def _victims(events: Sequence[Event], first: Event) -> bool:
    return any(e.role == "symptom" and e.phase in COLLATERAL_PHASES and e.rank is not None
               and e.rank != first.rank for e in events)


def _exit_code_event(events: Sequence[Event],
                     file_rank: dict[str, int]) -> tuple[Event | None, list[str]]:
    """The first worker exit that was not the agent's own SIGTERM."""
    exits = []
    for e in events:
        code = _num(e.fields, EXIT_FIELDS)
        if code is not None and int(code) not in AGENT_SIGTERM_CODES and int(code) != 0:
            exits.append((e, int(code)))
    if not exits:
        return None, []
    exits.sort(key=lambda ec: _order_key(ec[0], file_rank))
    e, code = exits[0]
    what = f"signal {-code}" if code < 0 else f"exit code {code}"
    return e, [f"no failure message: the launcher saw a worker end with {what} first "
               f"({e.where()}); the others were torn down after it"]


_ATTEMPT = re.compile(r"attempt_(\d+)")


def _attempt_note(first: Event, events: Sequence[Event]) -> list[str]:
    """With --max-restarts, say which attempt the cause came from: later
    attempts usually fail for other reasons (stale peers, reused ports)."""
    attempts = {int(m.group(1)) for e in events if (m := _ATTEMPT.search(e.file))}
    m = _ATTEMPT.search(first.file)
    if m and len(attempts) > 1:
        return [f"from restart attempt {m.group(1)} of attempts {sorted(attempts)}"]
    return []


def _dedupe(events: Iterable[Event]) -> list[Event]:
    seen: set[str] = set()
    out = []
    for e in events:
        if e.signature not in seen:
            seen.add(e.signature)
            out.append(e)
    return out


def _confidence(first: Event, others: list[Event], tie: list[Event], events: Sequence[Event],
                stall: float | None, skew: Skew, kb: Any) -> tuple[float, list[str]]:
    """A score in [0, 1] from independent pieces of evidence, with the reasons."""
    score = 0.35
    why = [f"earliest cause: {first.signature} at {first.where()}"
           + (f" on rank {first.rank}" if first.rank is not None else "")]
    if SEVERITY_WEIGHT.get(first.severity, 0) >= 3:
        score += 0.1
    try:
        sig = kb[first.signature]
        triggers = set(sig.triggers)
    except KeyError:
        triggers = set()
    explained = {e.signature for e in events if e.role == "symptom"
                 and (e.signature in triggers or _caused_by(kb, e.signature, first.signature))}
    if explained:
        score += 0.2
        why.append("it explains the symptoms seen: " + ", ".join(sorted(explained)[:5]))
    victims = {e.rank for e in events if e.role == "symptom" and e.rank is not None
               and e.rank != first.rank}
    if first.rank is not None and victims:
        score += 0.1
        why.append(f"the symptoms are on other ranks ({len(victims)})")
    if stall is not None and first.t is not None:
        if first.t <= stall + skew.bound:
            score += 0.1
            why.append("it precedes the moment the timeouts point back to")
        else:
            score -= 0.15
            why.append("it comes after the moment the timeouts point back to")
    if others:
        gap = (others[0].t - first.t) if (others[0].t is not None and first.t is not None) else None
        if gap is not None and gap > max(skew.bound, 1.0):
            score += 0.1
            why.append(f"the next cause ({others[0].signature}) came {gap:.1f} s later")
        elif others[0].signature != first.signature and first.file != others[0].file and gap is None:
            score -= 0.1
            why.append("another cause in a different file cannot be ordered against it (no timestamps)")
    if tie:
        score -= 0.25
    if first.ts is None and len({e.file for e in events}) > 1:
        score -= 0.05
    return max(0.05, min(0.95, score)), why


def _caused_by(kb: Any, symptom: str, cause: str) -> bool:
    try:
        return cause in kb[symptom].caused_by
    except KeyError:
        return False
