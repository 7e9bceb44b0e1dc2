"""Causal first-anomaly ranking over an attributed match table.

Given the matches of one job (rank, host and ts filled by
:mod:`denpex_fast.facts.attribution`) and the knowledge base, decide which event
initiated the failure and which events are only its consequences::

    >>> ranking = rank_events(attributed_table, kb)
    >>> ranking.initiating.signature, ranking.initiating.rank
    ('cuda-oom', 2)

How the initiating incident is chosen:

1. Hosts' clocks disagree.  Events every rank prints at about the same moment
   (the same NCCL collective timing out on many ranks, the same step) give a
   per-host offset and an uncertainty bound (:func:`estimate_skew`).  Within
   one file, line order is time order; a line without a timestamp takes the
   time of the nearest timestamped line around it.
2. Matched lines are grouped into incidents (:mod:`denpex_fast.analysis.incidents`):
   a traceback with its exception lines, an NCCL WARN chain with its
   ``Last error:`` detail, a ChildFailedError record.  An incident is named
   by its deepest cause.
3. Ranks can also be suspected from absence: the rank that never entered
   the collective the others time out in (NCCL SeqNum / enqueue counts, or
   the one rank missing from the timeouts), the rank whose progress stopped
   first.  These are candidates too.
4. Every candidate gets features (:mod:`denpex_fast.analysis.ranker`): its tier
   (specific cause, own symptom, open-world line, wrapper, collateral),
   earliness after clock correction, whether it came after the moment the
   timeouts point back to (a timeout of T at t says the stall began near
   t - T), whether it explains the symptoms seen, how many ranks print the
   same line, ...  The highest ``w . f`` wins; the weights are fitted out of
   fold on the labelled corpus.
5. Verdicts: ``failure`` (named, probability above the fitted threshold),
   ``suspect`` (named, below it, or a rank suspected from absence),
   ``stopped`` (progress, then the logs end with no error and no completion
   line), ``no-failure-found`` (no error-like line at all).

This module is long because the ranking's steps (events, skew, incidents, the
candidate features, absence, evidence) share one Event/Incident model and are
read top to bottom as one algorithm; splitting them would spread one decision
over several files.
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from ..facts.attribution import FD_STREAM_TAG, STREAM_TAG, prefix_length
from ..schema import file_names
from .incidents import (
    TIER_CAUSE,
    TIER_COLLATERAL,
    TIER_NAMES,
    TIER_OPEN,
    TIER_OWN_SYMPTOM,
    TIER_WRAPPER,
    Incident,
    assemble,
    caused_by,
    join,
    marks,
    teardown,
    template,
    tier,
    triggers,
    without,
)
from .levels import (
    advice,
    goes_on,
    logged_error,
    model_output,
    narrated,
    shell_test_rejected,
    warned,
)

SEVERITY_WEIGHT = {"fatal": 3, "error": 2, "warning": 1, "info": 0}

#: The typed fields the ranking reads, with their meaning and unit.  Every
#: other ``fields`` entry of the knowledge base is display-only (quoted in
#: the fix); ``tests/test_signature_kb.py`` holds the two lists together.
FIELD_VOCABULARY: dict[str, str] = {
    "timeout_ms": "a timeout, in milliseconds",
    "timeout_s": "a timeout, in seconds",
    "timeout_hms": "a timeout as H:MM:SS",
    "exit_code": "a process exit status (negative: killed by that signal)",
    "signal": "a signal name (SIGTERM) or number",
    "seqnum": "a collective's sequence number",
    "seq": "a collective's sequence number",
    "work": "the NCCL work (collective) number a watchdog timed out on",
    "last_enqueued": "the last NCCL work a rank enqueued",
    "last_completed": "the last NCCL work a rank completed",
    "step": "a training step",
    "iteration": "a training iteration",
    "global_step": "a training step",
    "world_size": "how many ranks the job has",
    "total_steps": "how many steps the job's configuration says it runs",
    "failed_rank": "the (first) rank a line reports as failed, printed by another rank",
    "reporting_rank": "the rank that printed a report naming another as failed_rank",
    "global_rank": "the global rank a process announces it took (a rank-claim line)",
    "optype": "the kind of collective a watchdog timed out in (ALLREDUCE, BROADCAST)",
    "opcount": "NCCL's running count of a communicator's collectives (hexadecimal)",
    "count": "the element count of a collective",
    "datatype": "the datatype number of a collective",
    "op": "the reduction operation number of a collective",
    "root": "the root rank of a collective",
    "nranks": "how many ranks a communicator has",
    "ready_ranks": "the ranks a coordinator lists as having submitted a stalled collective",
}
TIMEOUT_MS_FIELDS = ("timeout_ms",)
TIMEOUT_S_FIELDS = ("timeout_s",)
TIMEOUT_HMS_FIELDS = ("timeout_hms",)
SEQ_FIELDS = ("seqnum", "seq", "work")
LAST_ENQUEUED_FIELDS = ("last_enqueued",)
LAST_COMPLETED_FIELDS = ("last_completed",)
STEP_FIELDS = ("step", "iteration", "global_step")
TOTAL_STEP_FIELDS = ("total_steps",)
EXIT_FIELDS = ("exit_code",)
SIGNAL_FIELDS = ("signal",)
WORLD_FIELDS = ("world_size",)
FAILED_RANK_FIELDS = ("failed_rank",)
REPORTING_RANK_FIELDS = ("reporting_rank",)
CLAIMED_RANK_FIELDS = ("global_rank",)
OPTYPE_FIELDS = ("optype",)
#: a collective record's running count (hexadecimal) and what must agree across ranks at it
COLLECTIVE_COUNT_FIELDS = ("opcount",)
COLLECTIVE_KIND_FIELDS = ("optype", "count", "datatype", "op", "root")
NRANKS_FIELDS = ("nranks",)
READY_RANKS_FIELDS = ("ready_ranks",)
#: a world size above this is a misread, not a job
MAX_WORLD = 1 << 16

DEFAULT_SKEW_FLOOR_S = 0.5  # two events closer than this are never called ordered across hosts

AGENT_SIGTERM_CODES = frozenset({-15, 143})

K = TypeVar("K")
V = TypeVar("V")


@dataclass
class Event:
    """One match with what the ranking needs to know about it."""

    index: int  # row in the match table
    signature: str
    role: str
    severity: str
    phase: str
    file: str
    line: int
    text: str
    rank: int | None
    host: str | None
    ts: datetime | None  # as attributed (host clock)
    fields: dict[str, str] = field(default_factory=dict)
    t: float | None = None  # corrected seconds since the epoch (skew applied)

    def where(self) -> str:
        return f"{self.file}:{self.line}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "signature": self.signature,
            "role": self.role,
            "severity": self.severity,
            "rank": self.rank,
            "host": self.host,
            "file": self.file,
            "line": self.line,
            "ts": self.ts.isoformat() if self.ts else None,
            "text": self.text,
            "fields": dict(self.fields),
        }


@dataclass
class Skew:
    """Per-host clock offsets (seconds to subtract) and the uncertainty bound."""

    offsets: dict[str, float]
    bound: float  # seconds; inf when hosts share no event
    evidence: list[str] = field(default_factory=list)

    def correct(self, host: str | None, t: float) -> float:
        return t - self.offsets.get(host or "", 0.0)


@dataclass
class Ranking:
    """The ranking's verdict and the evidence behind it."""

    initiating: Event | None
    confidence: float
    reasons: list[str]
    verdict: str  # "failure" | "suspect" | "stopped" | "no-failure-found"
    suspect_rank: int | None = None  # the rank of the top candidate
    candidates: list[Event] = field(default_factory=list)  # other candidates, best first
    indistinguishable: list[Event] = field(default_factory=list)
    skew: Skew | None = None
    events: list[Event] = field(default_factory=list)
    stall_start: float | None = None
    incidents: list[Incident] = field(default_factory=list)  # the candidates, in feature order
    features: np.ndarray | None = None
    top: int | None = None  # index of the chosen candidate
    probability: float = 0.0  # its softmax probability
    stopped_after: Event | None = None  # verdict "stopped": the last progress line
    excerpt: bool = False  # one or two files, no progress, no start line: a pasted excerpt

    @property
    def incident(self) -> Incident | None:
        """The initiating incident (all its lines), when one was named."""
        return self.incidents[self.top] if self.top is not None else None


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def field_text(fields: dict[str, str], names: Sequence[str]) -> str | None:
    """The first of ``names`` an event's fields hold, as written (None when none)."""
    return next((fields[n] for n in names if fields.get(n)), None)


def field_number(fields: dict[str, str], names: Sequence[str]) -> float | None:
    """The first number in the first of ``names`` an event's fields hold."""
    for n in names:
        v = fields.get(n)
        if v is None:
            continue
        m = _NUMBER.search(v)
        if m:
            return float(m.group())
    return None


def thin_context(table: pa.Table, kb: Any, keep: int = 8, *, by_rank: bool = False) -> pa.Table:
    """Drop the middle of long runs of context rows, and of the same error
    line repeated word for word (vectorised).

    Step and progress lines can be tens of thousands of rows; the ranking only
    needs the first rows of each (file, signature, rank) run (shared events
    for clock skew) and the last ones (where progress stopped).  A cause or
    symptom line printed again and again with the same text (a retried
    ``ConnectionResetError`` in a loop) keeps its first and last ``keep``
    occurrences per (file, signature, rank); every other cause and symptom
    row is kept.  ``by_rank``: the files of one rank in one directory (a
    rank's log rotated or cut into parts, ``rank3/part0001.log``) make one
    run in time order, so the ranking sees the ends of the rank's log, not of
    every part.
    """
    n = table.num_rows
    if n <= 4 * keep:
        return table
    import numpy as np
    import pyarrow.compute as pc

    sig_col = table.column("signature").combine_chunks()
    names = sig_col.dictionary.to_pylist()
    # a rank's claim (one line per process and attempt) is never thinned: a
    # duplicate claim is only told from the next attempt's by a whole round
    is_ctx_dict = np.array(
        [_role(kb, x) == "context" and "rank-claim" not in marks(kb, x) for x in names],
        dtype=bool,
    )
    sig_idx = sig_col.indices.to_numpy(zero_copy_only=False)
    ctx = is_ctx_dict[sig_idx]
    # the text joins the key of the other rows: only exact repeats are thinned
    # (encoded for those rows alone: the context rows' text can be most of it)
    text_key = np.full(n, -1, np.int64)
    other = np.flatnonzero(~ctx)
    if len(other) > 4 * keep:
        texts = table.column("text").take(pa.array(other))
        text_key[other] = pc.dictionary_encode(texts.combine_chunks()).indices.to_numpy(
            zero_copy_only=False
        )
    if n - len(np.unique(text_key)) <= 4 * keep:
        return table
    files = table.column("file").combine_chunks()
    file_idx = files.indices.to_numpy(zero_copy_only=False)
    rank = pc.fill_null(table.column("rank"), -1).to_numpy().astype(np.int64)
    line = table.column("line").to_numpy()
    run = file_idx.astype(np.int64)
    if by_rank:
        run = _rank_runs(files.dictionary.to_pylist())[file_idx]
        # in time order (untimed rows after, by file and line)
        ts = table.column("ts").cast(pa.int64())
        when = pc.fill_null(ts, np.iinfo(np.int64).max).to_numpy()
        order = np.lexsort((line, file_idx, when, text_key, rank, sig_idx, run))
    else:
        order = np.lexsort((line, text_key, rank, sig_idx, run))
    key = np.stack([run[order], sig_idx[order], rank[order], text_key[order]])
    new_group = np.r_[True, np.any(key[:, 1:] != key[:, :-1], axis=0)]
    start = np.maximum.accumulate(np.where(new_group, np.arange(n), 0))
    end = np.r_[np.flatnonzero(new_group)[1:], n]
    end = end[np.cumsum(new_group) - 1]
    pos = np.arange(n) - start
    keep_sorted = (pos < keep) | (end - np.arange(n) <= keep)
    mask = np.zeros(n, dtype=bool)
    mask[order] = keep_sorted
    return table.filter(pa.array(mask))


def _rank_runs(names: list[str]) -> Any:
    """A run number per file: one for the files of one rank (by path) in one
    directory, one of its own for every other file."""
    import numpy as np

    from ..facts.attribution import log_parts_key

    runs: dict[tuple[str, int], int] = {}
    out = np.arange(len(names), dtype=np.int64)
    for i, name in enumerate(names):
        key = log_parts_key(name)
        if key is not None:
            out[i] = runs.setdefault(key, i)
    return out


def _role(kb: Any, sig_id: str) -> str:
    try:
        return str(kb[sig_id].role)
    except KeyError:
        return "context"


#: knowledge-base frameworks of generic messages (errno texts, error words)
_GENERIC = frozenset({"os", "any", "python"})


def build_events(table: pa.Table, kb: Any) -> list[Event]:
    """Events for every row of ``table`` whose signature the knowledge base knows.

    Fields are extracted per signature over all its rows at once, on RE2
    (:func:`denpex_fast.kb.signatures.field_values`), and only for
    signatures that declare fields.
    """
    cols = table.select(["file", "line", "signature", "text", "rank", "host", "ts"]).to_pydict()
    fields_of = _row_fields(table, kb)
    # the scanner keeps a window ending at the match when the match ends far
    # into a long line: the text then lacks the line's start (its logger level)
    if {"match_end", "offset"} <= set(table.column_names):
        import pyarrow.compute as pc

        reach = pc.subtract(table.column("match_end"), table.column("offset")).to_pylist()
    else:
        reach = [0] * table.num_rows
    events: list[Event] = []
    for i, sig_id in enumerate(cols["signature"]):
        try:
            sig = kb[sig_id]
        except KeyError:
            role, severity, phase = "context", "info", ""
        else:
            role, severity, phase = sig.role, sig.severity, sig.phase
            if (
                role != "context"
                and sig.framework in _GENERIC
                and (
                    narrated(text := cols["text"][i])
                    or (goes_on(text) and sig.phase != "numerics")
                    or shell_test_rejected(text)
                    or advice(text)
                    or model_output(text)
                    or len(text.encode("utf-8", "surrogatepass")) < reach[i]
                )
            ):
                # libraries report their own failures at WARN or above: generic
                # error words in an INFO line are not a failure.  Nor are they
                # in a line that ends saying the program skipped past it (a
                # non-finite loss it went on with is still the run's anomaly),
                # nor kilobytes into a line (a prompt, a config or metrics
                # dump: an error report starts with its error), nor a shell's
                # `[` rejecting its operands (the test is false, the script goes on),
                # nor advice about what may go wrong ("you may encounter an OOM if ..."),
                # nor a model's generated text printed as data
                role = "context"
        events.append(
            Event(
                i,
                sig_id,
                role,
                severity,
                phase,
                cols["file"][i],
                cols["line"][i],
                cols["text"][i],
                cols["rank"][i],
                cols["host"][i],
                cols["ts"][i],
                fields_of.get(i, {}),
            )
        )
    return events


def _row_fields(table: pa.Table, kb: Any) -> dict[int, dict[str, str]]:
    """row -> {field: value} for the rows whose signature declares fields."""
    import numpy as np
    import pyarrow.compute as pc

    from ..kb.signatures import field_values

    out: dict[int, dict[str, str]] = {}
    if not table.num_rows:
        return out
    sig_col = table.column("signature").combine_chunks()
    if not pa.types.is_dictionary(sig_col.type):
        sig_col = pc.dictionary_encode(sig_col)
    codes = sig_col.indices.to_numpy(zero_copy_only=False)
    texts = table.column("text").combine_chunks()
    for code, sig_id in enumerate(sig_col.dictionary.to_pylist()):
        try:
            sig = kb[sig_id]
        except KeyError:
            continue
        if not sig.fields:
            continue
        rows = np.flatnonzero(codes == code)
        if not len(rows):
            continue
        sub = texts.take(pa.array(rows))
        values = {name: field_values(sub, expr).to_pylist() for name, expr in sig.fields.items()}
        for k, row in enumerate(rows.tolist()):
            found = {name: v[k] for name, v in values.items() if v[k] is not None}
            if found:
                out[row] = found
    return out


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
        key = field_number(e.fields, SEQ_FIELDS)
        if key is None:
            key = field_number(e.fields, STEP_FIELDS)
        gk = (e.signature, "" if key is None else repr(key))
        t = e.ts.timestamp()
        prev = groups[gk].get(e.host)
        groups[gk][e.host] = t if prev is None else min(prev, t)
    shared = {k: v for k, v in groups.items() if len(v) >= 2}
    if not shared:
        return Skew(
            {h: 0.0 for h in hosts},
            math.inf,
            ["no event is shared by two hosts: cross-host order is unknown"],
        )
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
    evidence = [
        f"clock offsets from {len(shared)} event group(s) shared across hosts (reference {ref})"
    ]
    evidence += [
        f"host {h}: {offsets[h]:+.3f} s"
        for h in sorted(offsets)
        if h != ref and abs(offsets[h]) >= 0.001
    ]
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
        ms = field_number(e.fields, TIMEOUT_MS_FIELDS)
        secs = ms / 1000 if ms is not None else field_number(e.fields, TIMEOUT_S_FIELDS)
        hms = e.fields.get(TIMEOUT_HMS_FIELDS[0], "")
        if secs is None and re.fullmatch(r"\d+:\d\d:\d\d(?:\.\d+)?", hms):
            h, m, sec = hms.split(":")
            secs = int(h) * 3600 + int(m) * 60 + float(sec)
        if secs is None or secs <= 0:
            continue
        start = e.t - secs
        if best is None or start < best:
            best = start
            notes = [
                f"{e.signature} at {e.where()} reports a {secs:g} s timeout: "
                f"the stall began near {datetime.fromtimestamp(start, tz=timezone.utc).isoformat()}"
            ]
    return best, notes


def _ranks_word(n: int) -> str:
    return "1 rank" if n == 1 else f"{n} ranks"


def _rank_list(ranks: Iterable[int], most: int = 8) -> str:
    """``0, 3, 5`` (the first ``most``, then how many more)."""
    got = sorted(ranks)
    head = ", ".join(map(str, got[:most]))
    return head + (f" and {len(got) - most} more" if len(got) > most else "")


def _waits(e: Event) -> bool:
    """Whether an event reports its rank waiting for a peer: a symptom of a
    collective or of the store (a timeout, a peer that went away).  A line
    that names the rank that failed is that rank's account, not a wait."""
    return (
        e.role == "symptom"
        and e.phase in ("communication", "rendezvous")
        and field_number(e.fields, FAILED_RANK_FIELDS) is None
    )


def _absent_from_ready(live: Sequence[Event]) -> None:
    """A coordinator's list of the ranks that submitted a stalled collective
    (Horovod's ``[ready ranks: 2, 6, 7, 3, 4, 1, 5]``) reports the one rank
    of the world it leaves out: that rank never submitted it.  The world is
    0..N-1 for the largest rank or world size the job shows; with more than
    one rank left out nothing is named."""
    lists = [(e, v) for e in live if (v := field_text(e.fields, READY_RANKS_FIELDS))]
    if not lists:
        return
    top = max((e.rank for e in live if e.rank is not None), default=-1)
    world = max((field_number(e.fields, WORLD_FIELDS) or 0 for e in live), default=0)
    for e, v in lists:
        ready = {int(x) for x in re.findall(r"\d+", v)}
        size = max(int(world), top + 1, max(ready) + 1)
        absent = set(range(min(size, MAX_WORLD))) - ready
        if len(absent) == 1 and field_number(e.fields, FAILED_RANK_FIELDS) is None:
            e.fields["failed_rank"] = str(absent.pop())


def _reported_ranks(live: Sequence[Event]) -> None:
    """A line that names the rank that failed (``Rank 3 failed to pass
    monitoredBarrier``, printed by the barrier's root) is about that rank:
    it takes the rank it names, whoever printed it.

    A report of two ranks disagreeing (a collective mismatch: the reporting
    rank and the first peer, in rank order, that differs from it) is read
    across the job: the ranks of the majority all name the odd one, so with
    two or more reporters the rank most of them name is it.  A single report
    names the odd one when the peer it names is not its lowest-numbered
    peer (an odd reporter differs from every peer and names that one).
    Otherwise it cannot say which of its two ranks diverged; when one is
    rank 0 that one is named, a rank-0-only code path (logging, saving,
    evaluating) being the usual divergence."""
    _absent_from_ready(live)
    pairs: list[tuple[Event, int, int | None]] = []
    for e in live:
        r = field_number(e.fields, FAILED_RANK_FIELDS)
        if r is not None and r >= 0:
            by = field_number(e.fields, REPORTING_RANK_FIELDS)
            pairs.append((e, int(r), int(by) if by is not None else None))
            e.rank = int(r)
    two = [(e, r, by) for e, r, by in pairs if by is not None]
    if not two:
        return
    if len({by for _, _, by in two}) >= 2:
        named = Counter(r for _, r, _ in two).most_common(1)[0][0]
    else:
        _, r, by = two[0]
        # the reporter's lowest peer: the report cannot tell which of the two
        # diverged, and rank 0 (always one of them then) is named
        first_peer = 1 if by == 0 else 0
        named = 0 if r == first_peer else r
    for e, _, _ in two:
        e.rank = named


def _one_silent(waiting: set[int], silent: list[int]) -> bool:
    """One rank reported no wait while the others did: at least two waiting,
    or one when it and the silent rank make up the whole world the job shows
    (ranks 0..N with no gap: rank 1 waiting on rank 0)."""
    if len(silent) != 1 or not waiting:
        return False
    return len(waiting) >= 2 or waiting | set(silent) == set(range(max(waiting) + 1))


def _lone_group(groups: Mapping[K, Collection[V]]) -> tuple[K, V, K, Collection[V]] | None:
    """Of exactly two groups, the one with a single member against two or
    more: (its key, its member, the others' key, the others), else None.
    Ranks of one collective do the same work; the one alone in another kind
    of work took another code path."""
    if len(groups) != 2:
        return None
    (key_a, alone), (key_b, others) = sorted(groups.items(), key=lambda kv: len(kv[1]))
    if len(alone) != 1 or len(others) < 2:
        return None
    return key_a, next(iter(alone)), key_b, others


def _watchdog_suspect(
    events: Sequence[Event], known_ranks: set[int], kb: Any = None
) -> tuple[int | None, list[str]]:
    """A rank that never entered the collective the others time out in."""
    if known_ranks:
        # every job has a rank 0, printed or not: when ranks 1..N all time
        # out it is the one still busy (validating, saving, preprocessing)
        known_ranks = known_ranks | {0}
    by_seq: dict[float, set[int]] = defaultdict(set)
    enqueued: dict[int, float] = {}
    completed: dict[int, float] = {}
    for e in events:
        if e.rank is None:
            continue
        seq = field_number(e.fields, SEQ_FIELDS)
        if seq is not None and e.role == "symptom":
            by_seq[seq].add(e.rank)
        enq = field_number(e.fields, LAST_ENQUEUED_FIELDS)
        if enq is not None:
            enqueued[e.rank] = max(enqueued.get(e.rank, -1), enq)
        done = field_number(e.fields, LAST_COMPLETED_FIELDS)
        if done is not None:
            completed[e.rank] = max(completed.get(e.rank, -1), done)
    if not by_seq:
        # no SeqNum: the ranks that report a communication (or rendezvous)
        # timeout were waiting; the one known rank that reports none is the suspect
        by_sig: dict[str, set[int]] = defaultdict(set)
        for e in events:
            if _waits(e) and e.rank is not None:
                by_sig[e.phase].add(e.rank)
        waiting_any = set().union(*by_sig.values()) if by_sig else set()
        # with env:// or tcp:// initialisation rank 0 hosts the store: when
        # the others cannot even connect to it and it printed nothing, it is
        # the one that never came up
        reach = {
            e.rank for e in events if e.rank is not None and "unreachable" in marks(kb, e.signature)
        }
        if len(reach) >= 2 and sorted(known_ranks - reach - waiting_any) == [0]:
            return 0, [
                f"{len(reach)} ranks cannot connect to the store; rank 0, which hosts it "
                f"with env:// initialisation, printed no error: it never came up"
            ]
        # ranks that failed inside a barrier only the main process ends
        # (main_process_first, zero_first) waited for rank 0: when it printed
        # no error of its own, it was still doing that work
        main_first = [e for e in events if "main-first" in marks(kb, e.signature)]
        if main_first and all(e.rank != 0 for e in main_first):
            failed = [e for e in events if e.role in ("cause", "symptom") or failed_exit(e)]
            if failed and not any(e.rank == 0 for e in failed):
                return 0, [
                    "ranks failed while waiting in a barrier that only the main process ends "
                    f"({main_first[0].where()}); rank 0 printed no error: it was still doing "
                    "the work they waited for"
                ]
        if not by_sig:
            return None, []
        sig, waiting = max(by_sig.items(), key=lambda kv: len(kv[1]))
        sig = f"a {sig} timeout"
        silent = sorted(known_ranks - waiting)
        # a rank the launcher stopped (SIGTERM) after the failure says nothing
        # either way; of the others, the one that reported no wait is the one
        torn = {
            e.rank
            for e in events
            if e.rank is not None
            and (exit_status(e) in AGENT_SIGTERM_CODES or teardown(kb, e.signature))
        }
        free = [r for r in silent if r not in torn]
        if len(silent) > 1 and len(free) == 1:
            (alone,) = free
            return alone, [
                f"{len(waiting)} ranks report {sig}, the launcher stopped "
                f"{', '.join(map(str, sorted(torn & set(silent))))}; rank {alone} did neither: "
                "the others were waiting for it"
            ]
        if _one_silent(waiting, silent):
            return silent[0], [
                f"{_ranks_word(len(waiting))} {'reports' if len(waiting) == 1 else 'report'} "
                f"{sig}; rank {silent[0]} does not: "
                f"the others were waiting for it"
            ]
        if (
            len(waiting) >= 2
            and len(silent) == 2
            and silent[0] == 0
            and sig == "a rendezvous timeout"
        ):
            # with env:// or tcp:// initialisation rank 0 hosts the store: it
            # waits on the server side, without the clients' timeout message
            return silent[1], [
                f"{len(waiting)} ranks report {sig}; ranks 0 and {silent[1]} do "
                f"not, and rank 0 hosts the store: the others were waiting "
                f"for rank {silent[1]}"
            ]
        return None, []
    seq, waiting = max(by_seq.items(), key=lambda kv: (len(kv[1]), -kv[0]))
    if enqueued:
        top = max(enqueued.values())
        behind = sorted(r for r, v in enqueued.items() if v < top)
        if len(behind) == 1:
            return behind[0], [
                f"rank {behind[0]} enqueued NCCL work {enqueued[behind[0]]:g}, "
                f"the other ranks {top:g}: it never entered the collective"
            ]
    if completed:
        top = max(completed.values())
        behind = sorted(r for r, v in completed.items() if v < top)
        if len(behind) == 1:
            return behind[0], [
                f"rank {behind[0]} completed NCCL work {completed[behind[0]]:g}, "
                f"the other ranks {top:g}: it fell behind first"
            ]
    # one collective, two kinds of work: the rank alone in its kind (a
    # REDUCE where the others wait in an ALLGATHER) took another code path
    kinds: dict[str, set[int]] = defaultdict(set)
    for e in events:
        op = field_text(e.fields, OPTYPE_FIELDS)
        if e.rank is not None and op and field_number(e.fields, SEQ_FIELDS) == seq:
            kinds[op].add(e.rank)
    lone = _lone_group(kinds)
    if lone is not None and lone[1] not in lone[3]:
        op_a, odd, op_b, b = lone
        return odd, [
            f"at collective SeqNum {int(seq)} rank {odd} waits in {op_a} while ranks "
            f"{', '.join(map(str, sorted(b)))} wait in {op_b}: its code path diverged "
            "from theirs (a branch or a collective only some ranks run)"
        ]
    # a rank reporting another communication symptom (no SeqNum) was waiting too
    waiting = waiting | {
        e.rank
        for e in events
        if e.rank is not None and e.role == "symptom" and e.phase == "communication"
    }
    silent = sorted(known_ranks - waiting)
    if _one_silent(waiting, silent):
        return silent[0], [
            f"{_ranks_word(len(waiting))} {'times' if len(waiting) == 1 else 'time'} out in "
            f"collective SeqNum {int(seq)}; "
            f"rank {silent[0]} does not: it never entered it"
        ]
    return None, []


def _progress_lag(
    events: Sequence[Event], progress: dict[int, int] | None = None
) -> tuple[int | None, list[str], float]:
    """(rank, reasons, steps behind) of the rank whose progress stopped first."""
    last: dict[int, float] = {r: float(s) for r, s in (progress or {}).items()}
    for e in events:
        step = field_number(e.fields, STEP_FIELDS)
        if e.rank is not None and step is not None:
            last[e.rank] = max(last.get(e.rank, -1), step)
    if len(last) < 2:
        return None, [], 0.0
    low = min(last.values())
    laggards = [r for r, s in last.items() if s == low]
    if len(laggards) == 1 and max(last.values()) > low:
        r = laggards[0]
        return (
            r,
            [
                f"rank {r} stopped making progress first (last step {low:g}, "
                f"others reached {max(last.values()):g})"
            ],
            max(last.values()) - low,
        )
    return None, [], 0.0


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
        # lines before the first timestamp were written no later than it
        first = next((e.t for e in evs if e.t is not None), None)
        for e in evs:
            if e.t is not None:
                break
            e.t = first


def ranks_from_paths(files: Iterable[str]) -> set[int]:
    """Ranks that input file paths name (``attempt_0/3/stderr.log``, ``rank3.log``)."""
    try:
        from ..facts.attribution import path_facts
    except ImportError:  # pragma: no cover - attribution ships with the package
        return set()
    out = set()
    for f in files:
        r = path_facts(f).rank
        if r is not None:
            out.add(r)
    return out


def rank_events(
    table: pa.Table,
    kb: Any,
    *,
    events: list[Event] | None = None,
    progress: dict[int, int] | None = None,
    model: Any = None,
    novel: set[tuple[str, int]] | None = None,
    reader: Any = None,
) -> Ranking:
    """Rank the incidents of one job with the scored model; see the module docstring.

    ``progress``: the last step per rank (:func:`denpex_fast.analysis.progress.last_steps`);
    ``model``: a :class:`denpex_fast.analysis.ranker.Model` (default: the shipped one);
    ``novel``: (file, line) of lines whose template a healthy baseline never printed;
    ``reader``: the job's :class:`denpex_fast.io.readback.JobBytes`, for the last
    line of a rank that went silent (a rank that printed no error at all).
    """
    from .ranker import load_model

    model = model or load_model()
    inputs = table
    if events is None:
        # the events index the rows of the thinned table: the read-back below
        # (a traceback's exception line, a record's start) looks a row's
        # offset up by that index, so it reads the same table
        table = thin_context(table, kb, by_rank=True)
        events = build_events(table, kb)
    skew = estimate_skew(events)
    for e in events:
        e.t = skew.correct(e.host, e.ts.timestamp()) if e.ts is not None else None
    _monotone_per_file(events)
    stall, stall_notes = _stall_start(events)
    known_ranks = {e.rank for e in events if e.rank is not None}
    if inputs.num_rows:
        known_ranks |= ranks_from_paths(file_names(inputs))
    if reader is not None:  # files with no match name their rank too
        known_ranks |= {r for r in _file_ranks(reader.labels(), events).values()}
    # the job's own statement of its size: ranks that never printed still exist
    world = max(
        (int(n) for e in events if (n := field_number(e.fields, WORLD_FIELDS)) is not None),
        default=0,
    )
    printed = set(known_ranks)  # the ranks the inputs show
    if 0 < world <= MAX_WORLD:
        known_ranks |= set(range(world))
    hidden = shadowed(events, kb)
    live = [e for e in events if e.index not in hidden]
    _quiet_fallbacks(live, kb)
    rank_notes: list[str] = []
    nodes = _global_ranks(live, rank_notes)
    _subgroup_ranks(live)
    _rank_table_ranks(live)  # pid and device first: one process may hold several ranks
    _pid_ranks(live)
    _signal_ranks(live)
    _oom_report_ranks(live)
    _reported_ranks(live)
    for e in live:
        if e.rank is None and "store-host" in marks(kb, e.signature):
            e.rank = 0  # the store's master: rank 0 under env:// or tcp:// initialisation
    if reader is not None:
        known_ranks |= _sibling_ranks(live, reader.labels())
    known_ranks |= _prefix_ranks(live)
    device_note = _device_ranks(live) if not known_ranks else None
    cands = _join_by_pid(assemble(live, kb, exit_code=failed_exit), kb)
    _demote_accounts(cands, kb)
    _demote_wrapped(cands, live, kb)
    _demote_echoes(cands, live, kb)
    _promote_reports(cands)
    _demote_terminated(cands)
    _demote_caused(cands, live, kb)
    cands = _drop_outlived(cands, live)
    cands = _drop_preamble(cands, live, kb)
    cands = _drop_postamble(cands)
    cands = _drop_aborted_returns(cands, live)
    cands = _drop_answered_requests(cands, events, kb)
    cands = _drop_ignored(cands, live, kb)
    cands = _join_banners(cands, kb)
    cands += _duplicate_claims(live, kb)
    cands += _divergent_records(live, kb)
    if reader is not None:
        _ranks_from_continuations(cands, table, reader)
        _ranks_from_file(cands, live, table, reader)
        _record_starts(cands, table, reader)
        _exception_lines(cands, table, reader, kb)
        cands = _nested_exceptions(cands, table, reader)
        _interrupt_echoes(cands, table, reader)
        _what_lines(cands, table, reader)
        cands = _returned_warns(cands, kb)
        cands = _warned_subjects(cands, live)
        unmatched = _unmatched_tracebacks(live, table, reader, kb)
        _ranks_from_file(unmatched, live, table, reader)
        cands += unmatched
    _ranks_from_copies(cands, live)
    _ranks_from_root_cause(cands, live, kb)
    device_note = _ranks_from_devices(cands, live, known_ranks, world) or device_note
    specific = [e for e in live if "catch-all" not in marks(kb, e.signature)]
    bound = skew.bound if math.isfinite(skew.bound) else 1.0
    virtual = _virtual_suspects(live, specific, known_ranks, progress, stall, bound, kb=kb)
    for c in cands:
        if "anonymous-exit" in marks(kb, c.head.signature):
            # the line does not say which worker failed.  A signal or an exit
            # code of the program's own is the suspect's death; code 1 is what
            # every peer dies with after an exception (a timeout waiting for it)
            code = field_number(c.head.fields, EXIT_FIELDS)
            c.rank = virtual[0].rank if virtual and code is not None and int(code) != 1 else None
            if (
                c.rank is None
                and printed <= {0}
                and world <= 1
                and _ONLY_SPAWNED.search(c.head.text)
            ):
                # the leftover command is the last process spawned: local rank
                # 0 last means the node ran one process, and it is the one
                # that failed; a job that shows no other rank is that rank 0
                c.rank = 0
    virtual = _virtual_suspects(
        live, specific, known_ranks, progress, stall, bound, cands, reader, kb
    )
    # a rank that could not reach the silent suspect reports its absence
    silent = {v.rank for v in virtual if v.extra.get("silent_suspect")}
    for c in cands:
        if (
            silent
            and c.rank not in silent
            and c.head is not None
            and "unreachable" in marks(kb, c.head.signature)
        ):
            c.tier = TIER_COLLATERAL
    if reader is not None:
        # a busy line a pattern knows as a cause is named by that pattern
        # (never by a peer's timeout printed onto the same line)
        known = {(e.file, e.line): e for e in live if e.role == "cause"}
        for v in virtual:
            if v.head is None and v.rank is not None and v.extra.get("silent_suspect"):
                busy = _busy_lines(v.rank, live, table, reader, nodes)
                busy = [
                    replace(known[(b.file, b.line)], rank=v.rank)
                    if (b.file, b.line) in known
                    else b
                    for b in busy
                ]
                if busy:
                    v.members, v.head = busy, busy[0]
                    v.extra["busy"] = 1.0
                    v.extra["virtual"] = (
                        f"{v.extra['virtual']}; it printed no error and was still busy with "
                        f"work of its own ({busy[0].where()}) when they began to wait: work "
                        "that outlasts the timeout they waited with"
                    )
    if reader is not None:
        _exception_lines(virtual, table, reader, kb)
    cands += virtual
    if reader is not None:
        cands = _drop_torn_fragments(cands, table, reader, kb)
    named = {id(c) for c in cands}
    cands = _yield_warned(cands, kb)
    cands = _trained_past_warnings(cands, events)
    if reader is not None:  # an incident the warning headed, named anew, is read anew
        _exception_lines([c for c in cands if id(c) not in named], table, reader, kb)
    ends = _completion_lines(events, kb)
    completed = bool(ends)
    # nothing printed before the job's own completion line ended the job: a
    # warning (Megatron starting from random weights), an error the program
    # retried, a probe's ERROR before a fallback, a step the scheduler
    # cancelled before the resubmission that finished.  Nor did a known
    # entry of warning severity, wherever it was printed (ZeRO-3 skipping the
    # 16-bit model file while the run saves its checkpoint and prints its
    # metrics); an unknown error word after the end may be a teardown that hung.
    # The report lists them without calling the job failed
    went_on = _went_on(events, ends, kb)
    # a peer's store going away, or a warning, after the end: teardown
    unraised = _unraised_headers(events) if completed else {}
    last_line = functools.cache(reader.last_line) if completed and reader is not None else None
    # a server that had started and then announced its own orderly shutdown:
    # what its processes print after that is the shutdown (signals relayed to
    # the engine and its workers), not a failure
    stops = _marked_after(events, ends, kb, "shutdown")
    # the job's own script ended in order after its completion line: a
    # scheduler's cancel printed after that into the same output found the
    # run over (another file's later cancel may have stopped a later run)
    over = _marked_after(events, ends, kb, "exit")

    def teardown(c: Incident) -> bool:
        """What a completed job printed after its end that was only its teardown."""
        if any(_after(c, s) for s in stops):
            return True
        if c.head is not None and "scheduler-teardown" in marks(kb, c.head.signature):
            return _ended_before(c.head, over, events, kb)
        return any(_after(c, e) for e in ends) and (
            _store_lost_late(c, kb)
            or _thread_exception(c, cands, unraised)
            or (_plain_error_word(c) and _printed_more(c, last_line))
            or (reader is not None and _raised_at_exit(c, table, reader))
        )

    torn_down = {id(c) for c in cands if completed and teardown(c)}
    outlived = [
        c.head
        for c in cands
        if c.head is not None
        and (
            went_on(c.head)
            or (completed and c.head.severity == "warning" and not _catch_all_head(c, kb))
            or id(c) in torn_down
        )
    ]
    gone = {id(h) for h in outlived}
    cands = [c for c in cands if id(c.head) not in gone]
    if torn_down and all(c.extra.get("virtual") for c in cands):
        # the rank "the others waited for" was read from those teardown lines
        cands = []
    only_lag = all(c.extra.get("laggard") and not c.extra.get("silent_suspect") for c in cands)
    if only_lag and (completed or all(c.extra.get("lag", 0) <= 1 for c in cands)):
        # no error anywhere.  The job says it finished: a rank whose last
        # progress line reads lower lost it to interleaved output.  Or ranks
        # printing into one log are a step apart where it ends: that is how any
        # log cut mid-run looks (a stalled rank holds the others back by one
        # step too, so one step says nothing); the job stopped
        cands = []
    # the end of each rank's newest progress file, read at most once
    tails: Mapping[str, tuple[bytes, list[str]]] | None = {} if completed else None
    if cands and not completed and reader is not None:
        # every lead is an unknown error-like line or a warning the job
        # trained past, and the job then ended in order: it outlived them all
        # (job-wide steps: a job that ended in order lost no rank on the way,
        # and often one rank alone prints the iteration lines)
        trained_past = _trained_past(live, warnings=True, any_rank=True)

        def gone_past(c: Incident) -> bool:
            h = c.head
            return (
                h is not None
                and (_catch_all_head(c, kb) or h.severity == "warning")
                and trained_past(c) is not None
            )

        # suspects read from absence (the rank others waited for, the one
        # whose progress stopped first) stand on those lines: when they are
        # outlived or came after the end, nobody was left waiting
        leads = [c for c in cands if not c.extra.get("virtual")]
        if leads and all(
            gone_past(c) or _store_lost_late(c, kb) or _plain_error_word(c) for c in leads
        ):
            tails = _last_step_lines(events, reader)
            end = _orderly_exit(events, kb, tails)
            past = [c for c in leads if gone_past(c)]
            late = [c for c in leads if not gone_past(c)]
            # a job whose progress reached its own total printed its epilogue
            # after it (a FLOPs counter's "Cannot find ... Treat it as zero")
            reached = _reached_end(events, tails)
            if (reached or _exit_reason(end, events)) and (
                not late
                or (end is not None and all(_after(c, end) for c in late))
                or (reached and all(_plain_error_word(c) for c in late))
            ):
                if past:
                    rank_notes.append(
                        f"{len(past)} warning or unknown error-like line(s), the first at "
                        f"{min((c.head for c in past), key=_where_key).where()}, were "  # type: ignore[arg-type]
                        "followed by training and an orderly end: outlived"
                    )
                first_late = min((c.head for c in late), key=_where_key) if late else None
                if first_late is not None and end is not None:
                    rank_notes.append(
                        f"{len(late)} line(s) of a lost store connection or a warning, the "
                        f"first at {first_late.where()}, came "
                        f"after the processes exited in order ({end.where()}): "
                        "teardown, the store's host had gone first"
                    )
                elif first_late is not None:
                    rank_notes.append(
                        f"{len(late)} plain line(s) with an error-like word, the first at "
                        f"{first_late.where()}, came after the progress reached the job's "
                        "own total: its epilogue"
                    )
                cands = []
    if not cands and reader is not None:
        cands = _cut_tracebacks(live, table, reader, kb) or _hung_stacks(live, reader, kb)
    if not cands and reader is not None and not completed:
        cands = _typed_interrupt(live, reader)
    X = candidate_features(cands, live, kb, stall, skew, known_ranks, novel)
    clock = list(skew.evidence) + stall_notes + rank_notes
    if not cands:
        if tails is None:
            tails = _last_step_lines(events, reader)
        ended = None if completed else _ended_itself(events, kb, tails)
        stop = (
            None
            if completed or ended
            else (
                _latest_in_file(_last_progress(events), reader, tails)
                or _last_marked(events, kb, "start")
                or _single_input_end(reader, events)
            )
        )
        if stop is not None:
            why = [
                f"stopped after {stop.where()}"
                + (f" (rank {stop.rank})" if stop.rank is not None else "")
                + (
                    ": its log ends there, without a completion line and without an error"
                    if stop.signature == LAST_LINE
                    else ": the job started and made progress, then its logs end without a "
                    "completion line and without an error"
                )
            ]
            if 0 < world <= MAX_WORLD and printed and len(printed) < world:
                why.append(
                    f"the job has {world} ranks and only {_ranks_word(len(printed))} "
                    f"({_rank_list(printed)}) printed anything: the others never started "
                    "(or hung before their first line), or their logs are not among the inputs"
                )
            return Ranking(
                None,
                0.0,
                why + clock,
                "stopped",
                skew=skew,
                events=events,
                stall_start=stall,
                stopped_after=stop,
            )
        why = [ended or "no error-like line and no stop before completion"]
        if outlived:
            why = [
                "the job printed its completion line, and nothing it printed stopped it "
                "(errors before that line, warnings anywhere"
                + (f", what followed the server's shutdown at {stops[0].where()}" if stops else "")
                + "): "
                + ", ".join(f"{e.signature} at {e.where()}" for e in outlived[:3])
            ]
        return Ranking(
            None, 0.0, why + clock, "no-failure-found", skew=skew, events=events, stall_start=stall
        )
    probs = model.probabilities(X)
    order = np.argsort(-model.score(X), kind="stable")
    top = cands[int(order[0])]
    p_top = float(probs[order[0]])
    virtual_why = top.extra.get("virtual")
    first = top.head
    if first is not None and top.rank != first.rank:
        # the incident knows the rank better than its line: the process table
        # (a pid the launcher spawned), or a launcher line whose printed rank
        # is not the failed one (None when nothing singles a rank out)
        first = replace(first, rank=top.rank)
    reasons = _evidence(top, first, virtual_why, X[order[0]], model)
    for note in ("stack_dump", "duplicate_claim", "divergent"):
        if top.extra.get(note):
            reasons.insert(0, str(top.extra[note]))
    if top.extra.get("cut_traceback"):
        reasons.insert(
            0,
            "the log ends inside this traceback, before its exception line: the error it "
            "would name was never written (a cut paste, or a process killed while printing)",
        )
    tie = [
        c.head
        for c in (cands[int(i)] for i in order[1:6])
        if c.head is not None
        and first is not None
        and c.tier <= TIER_OWN_SYMPTOM
        and c.t is not None
        and top.t is not None
        and c.host != top.host
        and abs(c.t - top.t) <= skew.bound
        and c.head.signature != first.signature
    ]
    if first is not None:
        reasons += _attempt_note(first, events)
        if (
            device_note
            and first.rank is not None
            and (_NCCL_DEVICE.search(first.text) or _MESSAGE_DEVICE.search(first.text))
        ):
            reasons.append(device_note)
    if tie:
        reasons.append(
            "indistinguishable: "
            + ", ".join(f"{c.signature} on host {c.host} ({c.where()})" for c in tie[:3])
            + f" happened within the clock-skew bound ({skew.bound:.2f} s) of the first one"
        )
    others = [
        cands[int(i)].head
        for i in order[1:]
        if cands[int(i)].head is not None and cands[int(i)].tier <= TIER_OPEN
    ]
    # a pasted excerpt: one or two files with no progress and no start line
    # (a job that never started still leaves a console and its rank files)
    n_files = len(reader.labels()) if reader is not None else len({e.file for e in events})
    excerpt = (
        n_files <= 2
        and _last_progress(events) is None
        and _last_marked(events, kb, "start") is None
    )
    confidence = model.confidence_for(X, excerpt)
    failed = model.verdict_failure(p_top, confidence) and not virtual_why
    return Ranking(
        first,
        confidence,
        reasons + clock,
        "failure" if failed else "suspect",
        suspect_rank=top.rank,
        candidates=_dedupe(o for o in others if o is not top.head),
        indistinguishable=tie,
        skew=skew,
        events=events,
        stall_start=stall,
        incidents=cands,
        features=X,
        top=int(order[0]),
        probability=p_top,
        excerpt=excerpt,
    )


_SIGNAL_NUMBERS = {
    "SIGHUP": 1,
    "SIGINT": 2,
    "SIGQUIT": 3,
    "SIGILL": 4,
    "SIGABRT": 6,
    "SIGBUS": 7,
    "SIGFPE": 8,
    "SIGKILL": 9,
    "SIGSEGV": 11,
    "SIGPIPE": 13,
    "SIGTERM": 15,
}


def exit_status(e: Event) -> int | None:
    """The line's typed exit status: ``exit_code``, else ``-N`` for a ``signal``."""
    code = field_number(e.fields, EXIT_FIELDS)
    if code is not None:
        return int(code)
    sig = (e.fields.get(SIGNAL_FIELDS[0]) or "").strip()
    if sig.isdigit():
        return -int(sig)
    n = _SIGNAL_NUMBERS.get(sig.upper().removeprefix("SIGNALS."))
    return -n if n else None


def failed_exit(e: Event) -> bool:
    """True when ``e`` reports a worker exit that was not a clean one or the agent's own SIGTERM."""
    code = exit_status(e)
    return code is not None and code != 0 and code not in AGENT_SIGTERM_CODES


# the role prefix may follow a host prefix (pdsh, mpirun --tag-output: "node2: ")
_ROLE = r"^(?:[\w.-]+: )?\[default(?P<l>\d+)\]:"
_LOCAL_GLOBAL = (
    re.compile(r"\brank\s*:\s*(?P<g>\d+)\s*\(local_rank:\s*(?P<l>\d+)\)"),
    re.compile(_ROLE + r"\[rank(?P<g>\d+)\]:"),
    # ProcessGroupNCCL's "[Rank G]" names the process that prints it
    re.compile(_ROLE + r"(?!\[rank\d).*?\[Rank (?P<g>\d+)\]"),
)
_LOCAL_ONLY = (
    re.compile(_ROLE + r"(?!\[rank\d)"),
    re.compile(r"\blocal_rank:\s*(?P<l>\d+)\s*\(pid"),
)
_LOCAL_PATH = re.compile(r"(?:^|/)attempt_\d+/(?P<l>\d+)/(?:stdout|stderr)\.log$")
_LOCAL_FORMS = (*_LOCAL_ONLY, _LOCAL_GLOBAL[1])
_GLOBAL_TAG = re.compile(r"\[rank\d+\]:|\[Rank \d+\]|\bRank \d+\b")


def _global_ranks(
    events: Sequence[Event], notes: list[str] | None = None
) -> dict[str, tuple[dict[int, int], int | None]]:
    """Map local ranks to global ranks per node (the job's process table).

    A multi-node job's agent, console and per-worker files name workers by
    local rank (``[default0]:``, ``local_rank: 0 (pid: 42)``,
    ``attempt_0/0/stderr.log``); lines that print both
    (``rank : 2 (local_rank: 0)``, ``[default0]:[rank2]:``) give each node's
    table.  A line whose rank can only have come from a local form takes the
    global rank when its node's table knows it.
    """
    table: dict[str, dict[int, int]] = defaultdict(dict)
    for e in events:
        for rx in _LOCAL_GLOBAL:
            m = rx.search(e.text)
            if m:
                table[_node(e)][int(m.group("l"))] = int(m.group("g"))
    for k, t in list(table.items()):
        if all(a == b for a, b in t.items()):
            del table[k]
    if not table:
        table = _node_order_ranks(events)
        if not table:
            return {}
        if notes is not None:
            n = len(next(iter(table.values())))
            notes.append(
                f"no line pairs local with global ranks: the {len(table)} nodes' ranks are "
                f"taken in name order, {n} per node ("
                + ", ".join(f"{k}: {min(t.values())}-{max(t.values())}" for k, t in table.items())
                + ")"
            )
    # a node's workers are numbered in one block: the local ranks its table
    # lacks (a worker that never printed both) take the offset the others agree on
    offsets = {k: _rank_offset(list(t.items())) for k, t in table.items()}
    if any(v is None for v in offsets.values()):
        # too few pairs to agree: one offset that is a whole number of the
        # node's workers (node_rank x nproc_per_node) is the block's start
        workers: dict[str, set[int]] = defaultdict(set)
        for e in events:
            for rx in _LOCAL_FORMS:
                m = rx.search(e.text)
                if m:
                    workers[_node(e)].add(int(m.group("l")))
        # workers per node: the most local ranks any node shows
        n = max((len(v) for v in workers.values()), default=0)
        for k, t in table.items():
            shift = {g - lr for lr, g in t.items()}
            if offsets[k] is None and len(shift) == 1 and n >= 2:
                (o,) = shift
                offsets[k] = o if o > 0 and o % n == 0 else None
    for e in events:
        node = _node(e)
        node_table = table.get(node)
        if (
            not node_table
            or e.rank is None
            or (e.rank not in node_table and offsets.get(node) is None)
            or _GLOBAL_TAG.search(e.text)
        ):
            continue
        local = [m.group("l") for rx in _LOCAL_ONLY if (m := rx.search(e.text))]
        pm = _LOCAL_PATH.search(e.file.replace("\\", "/"))
        if pm:
            local.append(pm.group("l"))
        if str(e.rank) in local:
            off = offsets.get(node)
            e.rank = node_table.get(e.rank, e.rank + off if off is not None else e.rank)
    return {k: (t, offsets.get(k)) for k, t in table.items()}


def _node_order_ranks(events: Sequence[Event]) -> dict[str, dict[int, int]]:
    """Local ranks of two or more nodes that no line pairs with global ranks:
    each node its own block of ranks, in the nodes' name order.

    Without it every node's ``[default0]:`` is rank 0, and a node's silent
    worker shares its rank with another node's waiting one.  The order is
    torchrun's when nodes are started with ``--node-rank`` in host order (the
    Slurm recipe); the blocks keep the workers apart whatever the order."""
    workers: dict[str, set[int]] = defaultdict(set)
    for e in events:
        if e.rank is None:
            continue
        node = _node(e)
        if node and any(
            (m := rx.search(e.text)) and int(m.group("l")) == e.rank for rx in _LOCAL_ONLY
        ):
            workers[node].add(e.rank)
    if len(workers) < 2:
        return {}
    n = max(max(v) for v in workers.values()) + 1
    order = sorted(
        workers, key=lambda k: [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", k)]
    )
    return {k: {lr: i * n + lr for lr in range(n)} for i, k in enumerate(order)}


_PID = re.compile(
    r"\(pid: (\d+)\)|\bpid[=: ]\s*(\d+)|[Kk]illed process (\d+)|[Kk]illing subprocess (\d+)"
    r"|\b[Pp]rocess (\d+) (?:exits|exited|spawned|with)"
    # NCCL's host:pid:tid, also behind a collector's prefix or a timestamp
    r"|(?:^|(?<=[\s\]]))[A-Za-z][\w.-]*:(\d+):\d+ \[\d+\] "
    # UCX's [host:pid:tid] (the pid padded with spaces) before its reports
    r"|(?:^|(?<=[\s\]]))\[[A-Za-z][\w.-]*:(\d+) *:\d+(?::\d+)?\] "
)


def _pid_of(text: str) -> str | None:
    """The process id a line names (launcher, OOM killer, NCCL ``host:pid:tid``), or None."""
    m = _PID.search(text)
    return next(g for g in m.groups() if g) if m else None


#: lines between a launcher account's head and the record naming its process
#: (torchrun's ChildFailedError header, its "Failures:" list, one entry)
ACCOUNT_LINES = 10
#: phases of lines a launcher or scheduler prints about a worker, not the worker itself
_NOT_OWN_PHASES = frozenset({"launcher", "scheduler"})


def _yield_warned(cands: list[Incident], kb: Any) -> list[Incident]:
    """An open-world line the program logged at WARNING level (an optional
    extension it could not import, a controller noticing a job failed) is
    one it went on past: it is the failure only when the job printed no
    other.  Specific entries keep their place (NCCL's WARN lines are its
    errors)."""

    def warned_line(m: Event) -> bool:
        return "catch-all" in marks(kb, m.signature) and warned(m.text)

    warned_at = {id(c) for c in cands if _catch_all_head(c, kb) and warned(c.head.text)}
    others = (c for c in cands if id(c) not in warned_at)
    if warned_at and any(c.head is not None and not c.extra.get("virtual") for c in others):
        # the warning yields; what else its incident holds (an NCCL WARN a few
        # lines after a deprecation warning of the same rank) stays, named anew
        kept = (c if id(c) not in warned_at else without(c, warned_line, kb) for c in cands)
        return [c for c in kept if c is not None]
    return cands


def _trained_past_warnings(cands: list[Incident], events: Sequence[Event]) -> list[Incident]:
    """A known cause of warning severity (Megatron starting from random
    weights because it found no checkpoint) that the job trained past --
    a progress line printed after it -- yields to a later error or fatal
    candidate printed after that progress: the run went on past the warning
    and then failed of something else."""
    steps = [s for s in events if field_number(s.fields, STEP_FIELDS) is not None]
    if not steps:
        return cands
    later = [
        c
        for c in cands
        if c.head is not None
        and c.head.severity in ("fatal", "error")
        and not c.extra.get("virtual")
    ]

    def trained_past(w: Event) -> bool:
        return any(
            _printed_before(w, s) and _printed_before(s, o.head)  # type: ignore[arg-type]
            for o in later
            if _printed_before(w, o.head)  # type: ignore[arg-type]
            for s in steps
        )

    return [
        c
        for c in cands
        if c.head is None
        or c.head.severity != "warning"
        or c.extra.get("virtual")
        or not trained_past(c.head)
    ]


def _quiet_fallbacks(events: Sequence[Event], kb: Any) -> None:
    """A fallback the program announced and went on with (gloo binding to
    loopback) is context unless an error it ``triggers`` follows in the job:
    on one host it is harmless, across hosts it is why a peer cannot connect."""
    present = {e.signature for e in events if e.role != "context"}
    for e in events:
        if e.role != "context" and "fallback" in marks(kb, e.signature):
            if not set(triggers(kb, e.signature)) & present:
                e.role = "context"


def _printed_before(a: Event, b: Event) -> bool:
    """Whether ``a`` was printed before ``b``: earlier in the same file, or earlier in time."""
    return (a.file == b.file and a.line < b.line) or (
        a.t is not None and b.t is not None and a.t < b.t
    )


def _went_on(events: Sequence[Event], ends: Sequence[Event], kb: Any) -> Callable[[Event], bool]:
    """A test of whether the job went on past an event to one of its
    completion ``ends``.

    A completion line printed after the event is not enough when, between
    them, the launcher or scheduler reported a death (a fatal symptom, a
    teardown, a worker's failed exit status) that no progress line followed:
    the batch script echoing "All done!" after its failed ``srun`` step went
    on past nothing.  A step the
    scheduler cancelled before a resubmission that trained to the end was
    outlived.  Per end, only the last death of each file is read (a progress
    line after it follows every earlier one), so a job of many ranks costs
    one pass over its deaths and progress lines per end.
    """
    deaths = [
        d
        for d in events
        if (d.role == "symptom" and d.severity == "fatal")
        or "scheduler-teardown" in marks(kb, d.signature)
        or failed_exit(d)
    ]
    steps = [s for s in events if field_number(s.fields, STEP_FIELDS) is not None]
    # per end: the deaths before it that no progress line followed before it
    unfollowed: list[tuple[Event, list[Event]]] = []
    for x in ends:
        last_death: dict[str, Event] = {}
        for d in deaths:
            if _printed_before(d, x) and (
                d.file not in last_death or d.line > last_death[d.file].line
            ):
                last_death[d.file] = d
        last_step: dict[str, int] = {}
        latest = -math.inf
        for st in steps:
            if _printed_before(st, x):
                last_step[st.file] = max(last_step.get(st.file, 0), st.line)
                if st.t is not None:
                    latest = max(latest, st.t)
        unfollowed.append(
            (
                x,
                [
                    d
                    for d in last_death.values()
                    if last_step.get(d.file, 0) <= d.line and (d.t is None or latest <= d.t)
                ],
            )
        )

    def went_on(e: Event) -> bool:
        return any(
            _printed_before(e, x) and not any(_printed_before(e, d) for d in dead)
            for x, dead in unfollowed
        )

    return went_on


_FULL_BAR = re.compile(r"(?:^|[\s:])100%\|")


#: "step 6450/6450", "iter 32/32", "iteration 500/ 500": a step and the total it counts to
_STEP_OF_TOTAL = re.compile(r"(?i)(?:step|iter|iteration)'?(?:[=: ]\s*'?| #)(\d+)\s*/\s*(\d+)\b")
#: the end of a file read for its last progress lines
END_TAIL_BYTES = 1 << 20
#: files read for their last progress lines at most (one per rank)
END_TAIL_FILES = 256


def _last_step_lines(events: Sequence[Event], reader: Any) -> dict[str, tuple[bytes, list[str]]]:
    """The tail of each file that shows progress, and its last progress lines.

    The scan keeps only the first rows of a flood of progress lines, so the
    last ones are read from the end of the file (when it can be read again)."""
    from .progress import step_lines

    # the file of each rank's latest progress (a rank's log cut into parts
    # ends its progress in its newest part); a job of more such files than
    # END_TAIL_FILES is judged from the rows the scan kept
    newest: dict[object, Event] = {}
    for e in events:
        if field_number(e.fields, STEP_FIELDS) is None:
            continue
        key = e.rank if e.rank is not None else e.file
        got = newest.get(key)
        if got is None or (e.t or -math.inf, e.line) > (got.t or -math.inf, got.line):
            newest[key] = e
    files = {e.file for e in newest.values()}
    if len(files) > END_TAIL_FILES:
        return {}
    out: dict[str, tuple[bytes, list[str]]] = {}
    for name in files:
        got = reader.tail(name, END_TAIL_BYTES) if reader is not None else None
        if got is None:
            continue
        start, data = got
        if start > 0:
            data = data[data.find(b"\n") + 1 :]  # the first line is cut
        texts, _ = step_lines(data, 1)
        out[name] = (data, texts)
    return out


def _typed_interrupt(events: Sequence[Event], reader: Any) -> list[Incident]:
    """A run that made progress and whose log ends with the terminal's echo of
    Ctrl-C (``^C``, ``^C^Z``: an interactive session captured with ``tee`` or
    ``docker exec -it``) did not stop by itself: somebody interrupted it, and
    no process lived to print a traceback into this log.  The echo is the
    candidate; only the last line of the file with the last progress is read."""
    last = _last_progress(events)
    if last is None:
        return []
    end = reader.last_line(last.file)
    if end is None or end[0] <= last.line or not _ECHO.search(end[1]):
        return []
    ev = replace(
        _line_event(last.file, end[0], end[1], None, INTERRUPT, severity="error", phase="shutdown"),
        role="cause",
    )
    return [Incident([ev], ev, None, last.host, TIER_CAUSE, None, {})]


def _latest_in_file(
    last: Event | None, reader: Any, tails: Mapping[str, tuple[bytes, list[str]]]
) -> Event | None:
    """``last`` (a progress line), or the last progress line of its file when
    the scan kept only the first rows of a flood of them: where the job
    stopped is the line the file ends its progress with.  ``tails``: the
    files' ends already read (:func:`_last_step_lines`)."""
    if last is None or reader is None:
        return last
    got = tails.get(last.file) or _last_step_lines([last], reader).get(last.file)
    data, texts = got or (b"", [])
    end = reader.last_line(last.file) if texts else None
    at = data.rfind(texts[-1].encode("utf-8")) if texts else -1
    if end is None or at < 0:
        return last
    line = end[0] - data.count(b"\n", at, len(data.rstrip()))
    if line <= last.line:
        return last
    return replace(last, index=-1, line=line, text=texts[-1], fields={})


def _ended_itself(
    events: Sequence[Event], kb: Any, tails: Mapping[str, tuple[bytes, list[str]]]
) -> str | None:
    """Why a job with no error and no completion line was not stopped, if it
    was not: the last progress line of each file reached the total it counts
    to (``step:6450/6450``, ``iter 32/32``), or its processes exited in order
    after their last progress (NCCL destroying its communicators, wandb
    closing its run, PyTorch's warning at interpreter exit).  A process
    killed from outside prints neither.  None: it may have been stopped.
    ``tails``: the ends of the files that show progress (:func:`_last_step_lines`)."""

    return _reached_end(events, tails) or _exit_reason(_orderly_exit(events, kb, tails), events)


def _exit_reason(e: Event | None, events: Sequence[Event]) -> str | None:
    """Why a job that exited in order at ``e`` (:func:`_orderly_exit`) was not stopped."""
    if e is None:
        return None
    return (
        f"the processes exited in order ({e.where()}: {e.signature}) after "
        + ("their last progress" if _last_progress(events) is not None else "starting")
        + ", without an error"
    )


def _reached_end(
    events: Sequence[Event], tails: Mapping[str, tuple[bytes, list[str]]]
) -> str | None:
    """Why the job's progress ended where the job meant it to: the last
    progress line of each file reached the total it counts to, or the number
    of steps the configuration states.  None when it did not, or nothing says."""
    last = _last_progress(events)
    finals = [t[-1] for _, t in tails.values() if t]
    if not finals and last is not None:
        finals = [last.text]
    counted = [m for text in finals if (m := _STEP_OF_TOTAL.search(text))]
    if counted and len(counted) == len(finals):
        if all(1 < int(m.group(2)) <= int(m.group(1)) for m in counted):
            return (
                f"the last progress line reached the total it counts to "
                f"({counted[0].group(1)}/{counted[0].group(2)}), then the logs end without an error"
            )
    return _configured_end(events)


#: the open-world entry for a plain line holding an error-like word
ERROR_WORD = "any-error-word"


def _printed_more(c: Incident, last_line: Callable[[str], Any] | None) -> bool:
    """Whether the file of the incident goes on after it (a profiler's
    complaint among the lines a job prints once it finished, not the last
    line a scheduler's kill left).  ``last_line``: the reader's, memoised by
    the caller (it reads the whole file)."""
    if last_line is None or c.head is None:
        return False
    end = last_line(c.head.file)
    return end is not None and end[0] > max(m.line for m in (c.head, *c.members))


def _plain_error_word(c: Incident) -> bool:
    """An incident of plain lines holding an error-like word and nothing
    else: no traceback, no logger's ERROR level, no entry that knows it."""
    return c.head is not None and all(m.signature == ERROR_WORD for m in (c.head, *c.members))


def _configured_end(events: Sequence[Event]) -> str | None:
    """Why the job ended itself, when every file that shows progress last
    reached the number of steps the job's configuration states (MaxText's
    ``Config param steps: 30``; a loop counting from 0 ends at step 29)."""
    totals = {n for e in events if (n := field_number(e.fields, TOTAL_STEP_FIELDS)) is not None}
    if len(totals) != 1 or (total := totals.pop()) < 2:
        return None  # no statement, or several that disagree
    last: dict[str, Event] = {}
    for e in events:
        if field_number(e.fields, STEP_FIELDS) is not None:
            if e.file not in last or e.line > last[e.file].line:
                last[e.file] = e
    if not last:
        return None
    steps = [field_number(e.fields, STEP_FIELDS) or 0 for e in last.values()]
    if min(steps) < total - 1:
        return None
    return (
        f"the last progress line reached the {int(total)} steps the job's configuration "
        f"states (step {int(max(steps))}), then the logs end without an error"
    )


def _orderly_exit(
    events: Sequence[Event], kb: Any, tails: Mapping[str, tuple[bytes, list[str]]]
) -> Event | None:
    """The last line of a process exiting in order (an ``exit`` mark) printed
    after the job's last progress line, if there is one."""
    from .progress import step_lines

    last = _last_progress(events)
    latest = max(
        (
            e.t
            for e in events
            if e.t is not None and field_number(e.fields, STEP_FIELDS) is not None
        ),
        default=None,
    )
    for e in reversed(events):
        if "exit" not in marks(kb, e.signature):
            continue
        if last is not None and not _printed_before(last, e):
            continue
        tail = tails.get(e.file)
        if tail is not None:
            # no progress line of its file after it (its own line may name
            # the iteration it stopped at)
            at = tail[0].rfind(_body(e.text).encode("utf-8", "replace")[:200])
            after = tail[0].find(b"\n", at) + 1 if at >= 0 else 0
            if at < 0 or (after and step_lines(tail[0][after:], 1)[1]):
                continue
        if latest is not None and e.t is not None and e.t < latest:
            continue
        return e
    return None


#: lines between a script's last exit line and a scheduler's cancel that still
#: make the cancel the end of an ended run (a rank's echo each: srun -l tasks)
EXIT_TO_CANCEL_LINES = 64


def _ended_before(h: Event, exits: Sequence[Event], events: Sequence[Event], kb: Any) -> bool:
    """Whether scheduler teardown ``h`` follows, in the same output and within
    :data:`EXIT_TO_CANCEL_LINES`, one of ``exits`` with no progress line and
    no error between (no next run had started)."""
    near = [x for x in exits if x.file == h.file and 0 < h.line - x.line <= EXIT_TO_CANCEL_LINES]
    if not near:
        return False
    start = min(x.line for x in near)
    quiet = {"exit", "completion", "scheduler-teardown"}
    return not any(
        (e.role != "context" and not quiet & set(marks(kb, e.signature)))
        or field_number(e.fields, STEP_FIELDS) is not None
        for e in events
        if e.file == h.file and start < e.line < h.line
    )


def _marked_after(
    events: Sequence[Event], ends: Sequence[Event], kb: Any, mark: str
) -> list[Event]:
    """The lines of entries with ``mark`` printed after one of the job's
    completion lines ``ends`` (none when it has none: a server that never
    finished starting has no orderly shutdown to make)."""
    return [
        e
        for e in events
        if mark in marks(kb, e.signature) and any(_printed_before(end, e) for end in ends)
    ]


def _completion_lines(events: Sequence[Event], kb: Any) -> list[Event]:
    """The lines that say the job finished: ``completion`` lines that no
    progress line of their file follows with a higher step (a "done" printed
    mid-run, by a loading step, says nothing about the end; Megatron's
    evaluation "at iteration 50" after "[after training is done]" at step 50
    does not go on past it).  With no step before the line, it takes two
    steps after it to go past (a summary restating the last step is one).
    None: it did not say so."""
    steps: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for e in events:
        # a checkpoint written after the loop ended is no sign the loop went on,
        # nor is a progress bar's last render at 100% (Lightning redraws it
        # after "`Trainer.fit` stopped")
        n = field_number(e.fields, STEP_FIELDS)
        if n is not None and "checkpoint-saved" not in marks(kb, e.signature):
            if not _FULL_BAR.search(e.text):
                steps[e.file].append((e.line, n))

    def went_past(e: Event) -> bool:
        mine = steps.get(e.file, ())
        before = max((n for line, n in mine if line < e.line), default=None)
        later = {n for line, n in mine if line > e.line}
        if before is None:
            # no step before it: one summary after it that names the last
            # step (Ray's final Result(metrics={... 'step': 135})) is no loop
            # going on; a loop prints step after step
            return len(later) >= 2
        return any(n > before for n in later)

    return [e for e in events if "completion" in marks(kb, e.signature) and not went_past(e)]


# A launcher's account of a rank a signal killed: srun's "task 0: Segmentation
# fault (core dumped)", mpirun's "... exited on signal 11 (Segmentation fault)".
_SIGNAL_ACCOUNT = re.compile(
    r"srun: error: \S+: task \d+: (?P<a>[A-Z][a-z]+(?: [a-z]+)*)"
    r"|exited on signal \d+ \((?P<b>[^)]+)\)"
)
# The dying process's own handler (Open MPI's, glibc's): "[host:pid] Signal: ..."
_HANDLER = re.compile(r"(?:^|\s)\[(?P<host>[A-Za-z][\w.-]*\d[\w.-]*):(?P<pid>\d+)\] ")
_SIGNAL_NAME = re.compile(
    r"Segmentation fault|Bus error|Illegal instruction|Floating point exception|Aborted|Killed"
)


def _signal_ranks(events: Sequence[Event]) -> None:
    """Give a signal handler's report the rank the launcher's account of the
    same death names.

    The handler prints ``[host:pid] Signal: Segmentation fault (11)`` and its
    backtrace with no rank; srun (or mpirun) then reports ``nid1: task 0:
    Segmentation fault``.  On a host with one account of a signal and one
    process reporting that signal, they are the same process: every line of
    its report takes the account's rank."""
    ranks: dict[tuple[str, str], set[int]] = defaultdict(set)
    pids: dict[tuple[str, str], set[str]] = defaultdict(set)
    for e in events:
        handler = _HANDLER.search(e.text)
        name = _SIGNAL_NAME.search(e.text)
        if handler is not None and name is not None:
            pids[(handler["host"], name[0].lower())].add(handler["pid"])
            continue
        account = _SIGNAL_ACCOUNT.search(e.text)
        if account is not None and e.rank is not None and e.host:
            said = _SIGNAL_NAME.search(account["a"] or account["b"])
            if said is not None:
                ranks[(e.host, said[0].lower())].add(e.rank)
    process: dict[tuple[str, str], int] = {}
    for key, found in pids.items():
        named = ranks.get(key, set())
        if len(found) == 1 and len(named) == 1:
            process[(key[0], next(iter(found)))] = next(iter(named))
    if not process:
        return
    for e in events:
        handler = _HANDLER.search(e.text) if e.rank is None else None
        if handler is not None:
            r = process.get((handler["host"], handler["pid"]))
            if r is not None:
                e.rank = r


# Slurm's step daemon reports that "some of the step tasks" were OOM-killed
# without naming one (and its line carries whichever task label its stream
# had); srun's account beside it names the task: "task 2: Out Of Memory"
_OOM_REPORT = re.compile(r"\berror: Detected \d+ oom_kill events? in StepId")
_OOM_ACCOUNT = re.compile(r"srun: error: (?P<host>\S+): task (?P<task>\d+): Out Of Memory")


def _oom_report_ranks(live: Sequence[Event]) -> None:
    """Give a step's OOM-kill report the task srun's account beside it names
    (within :data:`ACCOUNT_LINES` after it, one task only)."""
    reports = [e for e in live if _OOM_REPORT.search(e.text)]
    if not reports:
        return
    accounts: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    for e in live:
        if (m := _OOM_ACCOUNT.search(e.text)) is not None:
            accounts[e.file].append((e.line, int(m["task"]), m["host"]))
    for e in reports:
        named = {
            (t, h) for line, t, h in accounts.get(e.file, ()) if 0 < line - e.line <= ACCOUNT_LINES
        }
        if len({t for t, _ in named}) == 1:
            task, host = next(iter(named))
            e.rank = task
            e.host = e.host or host


def _demote_accounts(cands: list[Incident], kb: Any) -> None:
    """A launcher's account of how a rank ended (a ``ChildFailedError``
    summary entry, mpirun's abort report: incidents holding a ``record``
    line) restates that rank's end.  When the rank printed an error of its
    own, that came first and says why; the account is then a consequence
    (its abort followed a peer's failure, or repeats the rank's own fatal
    signal line).  It stays a candidate only for a rank that printed nothing."""
    # the head itself sits in the account (an entry is a handful of lines
    # under the summary's header)
    account = [
        any(
            "record" in marks(kb, m.signature) and abs(m.line - c.head.line) <= ACCOUNT_LINES
            for m in c.members
        )
        or _SIGNAL_ACCOUNT.search(c.head.text) is not None
        for c in cands
    ]
    own = {
        c.rank
        for c, acc in zip(cands, account)
        if not acc and c.rank is not None and c.head.phase not in _NOT_OWN_PHASES
    }
    for c, acc in zip(cands, account):
        if acc and c.rank in own:
            c.tier = TIER_COLLATERAL


#: the shortest echoed message compared with the lines it may repeat
ECHO_CHARS = 12
_LAST_ERROR = re.compile(r"Last error:\s*")


def _demote_echoes(cands: list[Incident], live: Sequence[Event], kb: Any) -> None:
    """An incident named by an ``echo`` line (NCCL's ``Last error:`` detail)
    is collateral when a ``WARN`` line of the job ends with the same message:
    that line is the report the process printed when it failed, with its
    ``host:pid:tid``, and the echo came back later inside the Python error."""
    warns = [e for e in live if " WARN " in e.text and "echo" not in marks(kb, e.signature)]
    if not warns:
        return
    for c in cands:
        h = c.head
        if h is None or "echo" not in marks(kb, h.signature):
            continue
        m = _LAST_ERROR.search(h.text)
        said = (h.text[m.end() :] if m else _body(h.text)).strip()
        if len(said) < ECHO_CHARS:
            continue
        if any(e.text.rstrip().endswith(said) and e not in c.members for e in warns):
            c.tier = TIER_COLLATERAL


def _demote_wrapped(cands: list[Incident], live: Sequence[Event], kb: Any) -> None:
    """An exception line whose class is a wrapper (``DistBackendError: NCCL
    error in: ...``) reports a failure inside the backend: when no entry read
    its message, the catch-all that names the line still only wraps it, and
    an error of its own printed elsewhere (a HIP/CUDA failure, a ``WARN``)
    says more.  It stays a candidate, in the wrapper tier."""
    wrapped = {(e.file, e.line) for e in live if "wrapper" in marks(kb, e.signature)}
    for c in cands:
        if c.tier == TIER_OPEN and (c.head.file, c.head.line) in wrapped:
            c.tier = TIER_WRAPPER


def _duplicate_claims(live: Sequence[Event], kb: Any) -> list[Incident]:
    """Two processes that took one global rank.

    A ``rank-claim`` line (Lightning's ``GLOBAL_RANK: r, MEMBER: m/N``) is
    printed once per process and attempt.  In a file where several processes
    write, a rank claimed a second time before the world's N claims are in
    (an attempt's round) was taken by two processes: the launch and the
    trainer disagree on the job's layout, the ranks above are never started,
    and whatever fails later (a rendezvous timeout, a hang, a collective
    error) follows from it.  The second claim is where that shows.  A file
    of one process's own output (one rank claimed, once per restart) is
    never read as a duplicate.  It is the rank's own symptom, not the cause:
    a line saying why the launch went wrong (a warning that srun is not used)
    is the better name when there is one."""
    by_file: dict[str, list[Event]] = defaultdict(list)
    for e in live:
        if "rank-claim" in marks(kb, e.signature):
            by_file[e.file].append(e)
    out: list[Incident] = []
    for claims in by_file.values():
        ranks = [field_number(e.fields, CLAIMED_RANK_FIELDS) for e in claims]
        if len({r for r in ranks if r is not None}) < 2:
            continue
        seen: set[float] = set()
        for e, r in sorted(zip(claims, ranks), key=lambda x: x[0].line):
            world = field_number(e.fields, WORLD_FIELDS)
            if r is None or world is None:
                continue
            if len(seen) >= world:  # a round is complete: the next attempt's claims
                seen = set()
            if r not in seen:
                seen.add(r)
                continue
            rank = int(r)
            note = (
                f"rank {rank} is claimed a second time ({e.where()}) before all {int(world)} "
                f"ranks were: two processes took rank {rank}, so the ranks above are never "
                "started and what fails later follows from it"
            )
            out.append(
                Incident([e], replace(e, rank=rank), rank, e.host, TIER_OWN_SYMPTOM, e.t,
                         {"duplicate_claim": note})
            )  # fmt: skip
            break
    return out


def _divergent_records(live: Sequence[Event], kb: Any) -> list[Incident]:
    """The rank whose collective differs from its peers' at one sequence number.

    ``collective-record`` lines (NCCL's COLL trace) give each collective a
    rank entered: its kind and size and the communicator's running count.
    Ranks of one communicator issue the same sequence, so at one count their
    records agree.  When at the lowest count where they do not, one rank's
    record stands alone against two or more that agree, that rank took
    another code path there (a bucket order, a collective under ``if
    rank == 0``): the job hangs or fails from it.  Counts of communicators
    of other sizes are kept apart, and a count where a rank has two records
    (two communicators of one size) says nothing."""
    groups: dict[tuple[str, str], list[Event]] = defaultdict(list)
    for e in live:
        if e.rank is not None and "collective-record" in marks(kb, e.signature):
            count = field_text(e.fields, COLLECTIVE_COUNT_FIELDS)
            if count is not None:
                groups[(count, field_text(e.fields, NRANKS_FIELDS) or "")].append(e)

    def seq(key: tuple[str, str]) -> int:
        try:
            return int(key[0], 16)
        except ValueError:
            return 1 << 62

    for key in sorted(groups, key=seq):
        records = groups[key]
        if len({e.rank for e in records}) != len(records) or len(records) < 3:
            continue
        kinds: dict[tuple[str | None, ...], list[Event]] = defaultdict(list)
        for e in records:
            kinds[tuple(field_text(e.fields, (f,)) for f in COLLECTIVE_KIND_FIELDS)].append(e)
        lone = _lone_group(kinds)
        if lone is None:
            continue
        kind_a, e, kind_b, agree = lone
        assert e.rank is not None
        differ = [(f, a, b) for f, a, b in zip(COLLECTIVE_KIND_FIELDS, kind_a, kind_b) if a != b]
        note = (
            f"at collective count {key[0]} rank {e.rank} entered another collective than "
            f"ranks {', '.join(str(x.rank) for x in sorted(agree, key=lambda x: x.rank or 0))} "
            f"({', '.join(f'{f} {a}' for f, a, _ in differ)}; "
            f"theirs: {', '.join(f'{f} {b}' for f, _, b in differ)}): "
            "its code path diverged from theirs"
        )
        return [Incident([e], e, e.rank, e.host, TIER_OWN_SYMPTOM, e.t, {"divergent": note})]
    return []


def _promote_reports(cands: list[Incident]) -> None:
    """A peer's report that names the rank that failed (:func:`_reported_ranks`)
    is that rank's own symptom, not a consequence on the peer that printed it."""
    for c in cands:
        if (
            c.tier == TIER_COLLATERAL
            and field_number(c.head.fields, FAILED_RANK_FIELDS) is not None
        ):
            c.tier = TIER_OWN_SYMPTOM


def _demote_terminated(cands: list[Incident]) -> None:
    """A process that ended by SIGTERM was stopped by someone else (its
    launcher or engine tearing the group down after another failure): the
    record of that exit is a consequence, whatever program printed it, in
    words an entry knows or not ("rank 1 died from signal 15")."""
    for c in cands:
        if (
            (c.tier == TIER_OWN_SYMPTOM and c.head.role == "symptom") or c.tier == TIER_OPEN
        ) and exit_status(c.head) in AGENT_SIGTERM_CODES:
            c.tier = TIER_COLLATERAL


def _demote_caused(cands: list[Incident], events: Sequence[Event], kb: Any) -> None:
    """A process's death whose entry names its causes (``caused_by``) is a
    consequence when one of them was printed before it on its rank (or with
    no rank known on either side): the shell's ``Aborted (core dumped)``
    after ``terminate called after throwing ... DistBackendError`` is that
    exception's end, not a crash of its own."""
    by_sig: dict[str, list[Event]] = defaultdict(list)
    for e in events:
        by_sig[e.signature].append(e)
    for c in cands:
        if c.tier != TIER_OWN_SYMPTOM:
            continue
        own = {id(m) for m in c.members}
        if any(
            id(e) not in own
            and _printed_before(e, c.head)
            and (e.rank is None or c.rank is None or e.rank == c.rank)
            for s in caused_by(kb, c.head.signature)
            for e in by_sig.get(s, ())
        ):
            c.tier = TIER_COLLATERAL


def _drop_ignored(cands: list[Incident], events: Sequence[Event], kb: Any) -> list[Incident]:
    """An exception Python said it ignored is no candidate: the first error
    of its rank within ``TRACEBACK_LINES`` after ``Exception ignored in
    atexit callback: ...`` (or in a destructor) in the same file ends the
    traceback the interpreter printed and went past."""
    ignored = [e for e in events if "ignored" in marks(kb, e.signature)]
    if not ignored:
        return cands
    drop: set[int] = set()
    for i in ignored:
        after = [
            (k, c)
            for k, c in enumerate(cands)
            if c.head is not None
            and c.head.file == i.file
            and i.line < c.head.line <= i.line + TRACEBACK_LINES
            and (i.rank is None or c.head.rank is None or c.head.rank == i.rank)
        ]
        if after:
            drop.add(min(after, key=lambda kc: kc[1].head.line)[0])  # type: ignore[union-attr]
    return [c for k, c in enumerate(cands) if k not in drop] if drop else cands


#: distinct training steps printed after an open-world line that show the job went on
OUTLIVED_STEPS = 3


def _where_key(e: Event) -> tuple[float, str, int]:
    """Earliest first: by time, then by file and line."""
    return (e.t if e.t is not None else math.inf, e.file, e.line)


#: NCCL's proxy threads name themselves in their WARN lines
_NCCL_PROXY_THREAD = re.compile(
    r"NCCL WARN \[(?:Service thread|Proxy Service \d+|Proxy Progress)\]"
)


def _store_lost_late(c: Incident, kb: Any) -> bool:
    """A line a process logs at its teardown when its peer, the store's host,
    exited first: a lost store connection (a collateral symptom of the
    rendezvous), or an unknown error-like line at a logger's WARNING level
    (PyTorch's ``Failed to check the "should dump" flag on TCPStore``), or
    an NCCL WARN of a proxy thread whose peers closed their side (``[Service
    thread] Accept failed``, ``[Proxy Service 0] Failed to execute operation
    Close``) and NCCL's INFO return traces of the sockets closing under it.
    Not a watchdog's timeout: a teardown that hung is a failure.  Whether it came
    after the job's orderly end is for the caller to check."""

    def teardown_line(m: Event) -> bool:
        return (
            m.role == "context"
            or (m.role == "symptom" and m.phase == "rendezvous")
            or ("catch-all" in marks(kb, m.signature) and warned(m.text))
            or proxy_line(m)
        )

    def proxy_line(m: Event) -> bool:
        return bool(
            (m.role == "symptom" or "catch-all" in marks(kb, m.signature))
            and (_NCCL_PROXY_THREAD.search(m.text) or _NCCL_INFO_RETURN.search(m.text))
        )

    if c.head is not None and c.tier == TIER_WRAPPER and _wraps_teardown(c, kb):
        return True
    return (
        c.head is not None
        and not c.extra.get("virtual")
        and (
            c.tier in (TIER_COLLATERAL, TIER_OPEN)
            or (
                c.tier in (TIER_OWN_SYMPTOM, TIER_WRAPPER) and all(proxy_line(m) for m in c.members)
            )
        )
        and all(teardown_line(m) for m in c.members)
    )


#: NCCL's proxy thread failing a Close or an accept while a communicator is torn down
PROXY_TEARDOWN = "nccl-proxy-accept-teardown"


def _wraps_teardown(c: Incident, kb: Any) -> bool:
    """A wrapper (``ProcessGroupNCCL ... found async exception ... unhandled
    system error``) whose ``Last error:`` detail is the proxy thread failing
    to Close its connections: the communicator was being torn down, and no
    line of the record names a cause of its own."""
    return any(m.signature == PROXY_TEARDOWN for m in c.members) and all(
        m.signature == PROXY_TEARDOWN or tier(m, kb) not in (TIER_CAUSE, TIER_OWN_SYMPTOM)
        for m in c.members
    )


#: Python's reports of an exception that did not end the program: a thread's
#: (``threading.excepthook``) and one raised where it cannot propagate (a
#: finalizer, a callback at interpreter shutdown)
_UNRAISED = re.compile(r"^\s*(?:Exception in thread [^\n]{1,200}:|Exception ignored in\b)")


def _unraised_headers(events: Sequence[Event]) -> dict[str, list[int]]:
    """Per file, the lines of Python's reports of an exception that did not
    end the program (:data:`_UNRAISED`)."""
    out: dict[str, list[int]] = defaultdict(list)
    for e in events:
        if _UNRAISED.match(_body(e.text)):
            out[e.file].append(e.line)
    return out


def _thread_exception(
    c: Incident, cands: Sequence[Incident], unraised: Mapping[str, list[int]]
) -> bool:
    """An incident that is a background thread's death or an exception Python
    could only print (``Exception in thread NetStatThr:`` from a metrics
    uploader whose socket closed, ``Exception ignored in: <function __del__>``),
    or the exception line of such a report's traceback (no other candidate
    between them).  After the job's completion line that is teardown: the
    main thread had finished its work.  ``unraised``: :func:`_unraised_headers`."""
    h = c.head
    if h is None:
        return False
    if any(_UNRAISED.match(_body(m.text)) for m in (h, *c.members)):
        return True
    header = max(
        (n for n in unraised.get(h.file, ()) if 0 < h.line - n <= TRACEBACK_LINES), default=None
    )
    return header is not None and not any(
        o is not c and o.head is not None and o.file == h.file and header < o.head.line < h.line
        for o in cands
    )


#: the outermost frame of a traceback raised by the interpreter's own exit
#: machinery: multiprocessing's finalizers (a semaphore or shared memory
#: already unlinked), atexit callbacks, concurrent.futures' and threading's
#: shutdown hooks
_EXIT_FRAME = re.compile(
    r'File "[^"]*(?:multiprocessing/util\.py", line \d+, in (?:_run_finalizers|_exit_function)'
    r'|/atexit\.py"|concurrent/futures/thread\.py", line \d+, in _python_exit'
    r'|threading\.py", line \d+, in _shutdown)'
)


def _raised_at_exit(c: Incident, table: pa.Table, reader: Any) -> bool:
    """Whether ``c``'s exception line ends a traceback whose outermost frame is
    the interpreter's exit machinery (multiprocessing's finalizers cleaning up
    a semaphore that is already gone): the program had returned."""
    h = c.head
    if h is None or h.index < 0:
        return False
    lines = _around(h, table, reader, TRACEBACK_LINES, 0)
    for k in range(len(lines) - 2, -1, -1):
        if _body(lines[k][1]).startswith("Traceback (most recent call last)"):
            return k + 1 < len(lines) and _EXIT_FRAME.search(lines[k + 1][1]) is not None
    return False


def _after(c: Incident, end: Event) -> bool:
    h = c.head
    return h is not None and (
        (h.file == end.file and h.line > end.line)
        or (c.t is not None and end.t is not None and c.t >= end.t)
    )


def _trained_past(
    events: Sequence[Event], warnings: bool = False, any_rank: bool = False
) -> Callable[[Incident], float | None]:
    """A test of whether the job trained on past an open-world candidate (or,
    with ``warnings``, an entry of warning severity): the time its
    ``OUTLIVED_STEPS``-th distinct later step (of the candidate's rank, when
    it has one, unless ``any_rank``) was printed, or None."""
    steps = sorted(
        (
            (e.t, e.rank, int(n))
            for e in events
            if e.t is not None and (n := field_number(e.fields, STEP_FIELDS)) is not None
        ),
        key=lambda s: s[0],
    )

    def went_on(c: Incident) -> float | None:
        warned = warnings and c.head is not None and c.head.severity == "warning"
        if (c.tier != TIER_OPEN and not warned) or c.t is None:
            return None
        seen: set[int] = set()
        for t, r, n in steps:
            if t > c.t and (any_rank or c.rank is None or r is None or r == c.rank):
                seen.add(n)
                if len(seen) >= OUTLIVED_STEPS:
                    return t
        return None

    return went_on


def _drop_outlived(cands: list[Incident], events: Sequence[Event]) -> list[Incident]:
    """An error-like line no entry knows, after which the job trained on, is
    not why it failed later.

    ``cat: nemo: No such file or directory`` from the batch script's first
    line, then 344 iterations, then Slurm's time limit: the job outlived the
    line.  It is dropped when at least ``OUTLIVED_STEPS`` distinct steps (of
    its rank, when it has one) were printed after it and another candidate
    came after those steps; a job whose only lead it is keeps it (unless the
    job ended in order: :func:`rank_events`).
    """
    went_on = _trained_past(events)
    drop: set[int] = set()
    for k, c in enumerate(cands):
        at = went_on(c)
        if at is not None and any(o.t is not None and o.t > at for o in cands if o is not c):
            drop.add(k)
    return [c for k, c in enumerate(cands) if k not in drop] if drop else cands


_LAUNCH_PHASES = frozenset({"launcher", "scheduler", "rendezvous"})


def _drop_preamble(cands: list[Incident], events: Sequence[Event], kb: Any) -> list[Incident]:
    """A batch script's own error, printed before the processes it launched
    wrote a line, is not why those processes failed later with an error of
    their own.

    Under ``srun -l`` (and other launchers that tag the output streams of
    the processes they start, native libraries' writes included) the
    script's lines carry no tag: ``cat: nemo: No such
    file or directory``, ``slurm_script: line 363: python: command not
    found``, a tool's traceback from another interpreter.  The shell went on
    to launch the job, whose ranks then failed in their own code.  Such a
    line is dropped when a later candidate of the same file is a launched
    process's own error (tagged, not a peer's symptom, a teardown or a
    launch/rendezvous failure that a missing file or command could explain)
    and no entry says the line causes it (``caused_by``)."""
    first_tagged: dict[str, int] = {}
    for e in events:
        if FD_STREAM_TAG.match(e.text) and e.line < first_tagged.get(e.file, 1 << 62):
            first_tagged[e.file] = e.line
    if not first_tagged:
        return cands

    def own_failure(c: Incident) -> bool:
        h = c.head
        return (
            h is not None
            and c.tier in (TIER_CAUSE, TIER_OWN_SYMPTOM, TIER_OPEN)
            and FD_STREAM_TAG.match(h.text) is not None
            and h.phase not in _LAUNCH_PHASES
            and not teardown(kb, h.signature)
        )

    drop: set[int] = set()
    for k, c in enumerate(cands):
        h = c.head
        start = first_tagged.get(c.file)
        if h is None or start is None or h.line >= start or FD_STREAM_TAG.match(h.text):
            continue
        if any(
            o.file == c.file
            and own_failure(o)
            and h.signature not in caused_by(kb, o.head.signature)  # type: ignore[union-attr]
            for o in cands
            if o is not c
        ):
            drop.add(k)
    return [c for k, c in enumerate(cands) if k not in drop] if drop else cands


#: bash's report of an error in a script: ``<script>: line <N>: <message>``
_SCRIPT_ERROR = re.compile(r"^[\w./-]+: line \d+: ")


def _drop_postamble(cands: list[Incident]) -> list[Incident]:
    """A batch script's own shell error printed after a launched process of
    the same output had already failed is what the script did next, not why
    the job failed: ``order_1.sh: line 45: --disable_tqdm: command not
    found`` (a broken line continuation, run once the launcher returned)
    under the ranks' watchdog timeouts.  The earlier failure must name a
    rank, so it is the launched program's and not another command of the
    script."""
    drop = {
        k
        for k, c in enumerate(cands)
        if c.head is not None
        and _SCRIPT_ERROR.match(c.head.text)
        and any(
            o is not c
            and o.head is not None
            and o.file == c.file
            and o.head.line < c.head.line
            and o.rank is not None
            and not _SCRIPT_ERROR.match(o.head.text)
            for o in cands
        )
    }
    return [c for k, c in enumerate(cands) if k not in drop] if drop else cands


#: NCCL's return trace at INFO level (``misc/socket.cc:828 -> 3``) and the
#: line it prints once a communicator's abort finished
_NCCL_INFO_RETURN = re.compile(r"NCCL INFO \S+:\d+ -> \d+\s*$")
_ABORT_COMPLETE = re.compile(r"NCCL INFO comm \S+ .*- Abort COMPLETE")
#: lines between a return trace and its process's ``Abort COMPLETE``
ABORT_GAP = 8


def _drop_aborted_returns(cands: list[Incident], events: Sequence[Event]) -> list[Incident]:
    """NCCL return traces at INFO level, no WARN among them, that the same
    process ends with ``comm ... - Abort COMPLETE`` a few lines later: the
    process aborted its communicators (at exit, after the run's last
    checkpoint or metrics) and the sockets it closed under its own proxy
    threads returned errors.  They are teardown, not a failure; a failure
    that led to the abort printed its own lines before them."""
    aborts: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for e in events:
        if _ABORT_COMPLETE.search(e.text) and (m := _NCCL_HOST_PID_DEVICE.search(e.text[:256])):
            aborts[(e.file, m.group(1), m.group(2))].append(e.line)

    def aborted(c: Incident) -> bool:
        if not aborts or not all(_NCCL_INFO_RETURN.search(x.text) for x in c.members):
            return False
        m = _NCCL_HOST_PID_DEVICE.search(c.head.text[:256]) if c.head is not None else None
        last = max(x.line for x in c.members)
        return m is not None and any(
            0 < n - last <= ABORT_GAP for n in aborts.get((c.file, m.group(1), m.group(2)), ())
        )

    return [c for c in cands if not aborted(c)]


#: successful answers after an error record that show the server lived on
SERVED_AFTER = 3


def _drop_answered_requests(
    cands: list[Incident], events: Sequence[Event], kb: Any
) -> list[Incident]:
    """In a server's log whose access lines answer some requests with an
    error status, an error record (vLLM's 'Error in preprocessing prompt
    inputs' and its traceback for a prompt over the context length) after
    which the server still answers requests 2xx is one request's failure:
    the server went on serving past it, as a job trains on past a step's
    warning."""
    answered: dict[str, list[int]] = defaultdict(list)
    served: dict[str, list[int]] = defaultdict(list)
    for e in events:
        said = marks(kb, e.signature)
        if "request-failed" in said:
            answered[e.file].append(e.line)
        elif "request-served" in said:
            served[e.file].append(e.line)
    if not answered:
        return cands

    def handled(c: Incident) -> bool:
        # the access lines are context rows, thinned to the first and last of
        # each run: answers to the errors in the middle of a run are not all
        # kept, the last successful answers are
        last = max(m.line for m in c.members)
        return bool(answered.get(c.file)) and (
            sum(n > last for n in served.get(c.file, ())) >= SERVED_AFTER
        )

    return [c for c in cands if not handled(c)]


def _join_banners(cands: list[Incident], kb: Any) -> list[Incident]:
    """A launcher's banner that some process failed ("Primary job terminated
    normally, but 1 process returned a non-zero exit code") and the same
    launcher's line naming it ("mpirun noticed that process rank 1 ...
    exited on signal 11"), in one file, report one event: one incident,
    named by the line that names the process."""
    named: dict[str, int] = {}
    for i, c in enumerate(cands):
        if (
            c.rank is not None
            and c.head.phase in _NOT_OWN_PHASES
            and not teardown(kb, c.head.signature)
            and any(failed_exit(m) for m in c.members)
        ):
            named.setdefault(c.file, i)
    if not named:
        return cands
    out = list(cands)
    drop = set()
    for i, c in enumerate(cands):
        at = named.get(c.file)
        if (
            at is not None
            and c.rank is None
            and c.head.phase in _NOT_OWN_PHASES
            and "wrapper" not in marks(kb, c.head.signature)
        ):
            head = out[at].head
            out[at] = join(out[at], c, kb)
            out[at].head, out[at].tier = head, tier(head, kb)
            drop.add(i)
    return [c for i, c in enumerate(out) if i not in drop]


def _join_by_pid(cands: list[Incident], kb: Any) -> list[Incident]:
    """Incidents of one file that name the same single process id are one
    failure: torchrun prints a worker's death when it happens (``failed
    (exitcode: -11) local_rank: 0 (pid: 42)``) and again in its closing
    summary (``exitcode : -11 (pid: 42)``, ``Signal 11 (SIGSEGV) received by
    PID 42``); the first print dates it, the summary names it best."""
    out: list[Incident] = []
    seen: dict[tuple[str, str], int] = {}
    for c in cands:
        pids = {p for e in c.members if (p := _pid_of(e.text)) is not None}
        if len(pids) != 1:
            out.append(c)
            continue
        key = (c.file, pids.pop())
        at = seen.get(key)
        # a catch-all line of the process (NCCL's WARN that it could not open
        # libibverbs, a probe) is no earlier print of a known failure it has later
        if (
            at is not None
            and out[at].rank == c.rank
            and _catch_all_head(out[at], kb) == _catch_all_head(c, kb)
        ):
            out[at] = join(out[at], c, kb)
        else:
            seen[key] = len(out)
            out.append(c)
    return out


#: lines read on each side of an open-world line for the narrated lines it may be torn from
TORN_LINES = 24
#: characters of a fragment's end compared with its neighbours' ends
TORN_TAIL = 40
_TORN_START = re.compile(r"[a-z_]")


def _drop_torn_fragments(
    cands: list[Incident], table: pa.Table, reader: Any, kb: Any
) -> list[Incident]:
    """An open-world line that is the tail of an INFO/DEBUG line torn in two.

    A launcher that labels the chunks it relays (``srun -l``) labels a line
    again where a read ended inside it: ``1: ... UCX  DEBUG ioc`` then
    ``1: tl(req=35093, ifr_name=eth2) failed: Cannot assign requested
    address``.  The tail has lost the level that made its head a probe's
    narration.  It is known by starting inside a word (a lower-case letter,
    no level, no exception class) and ending word for word, numbers aside,
    like two or more narrated lines around it."""
    out = []
    for c in cands:
        h = c.head
        if (
            h is not None
            and h.index >= 0
            and len(c.members) == 1
            and _catch_all_head(c, kb)
            and _TORN_START.match(body := _body(h.text))
            and len(body) >= TORN_TAIL
        ):
            tail = _DIGITS.sub("#", body)[-TORN_TAIL:]
            around = _around(h, table, reader, TORN_LINES, TORN_LINES)
            alike = sum(
                1
                for n, text in around
                if n != h.line and narrated(text) and _DIGITS.sub("#", text).endswith(tail)
            )
            if alike >= 2:
                continue
        out.append(c)
    return out


def _catch_all_head(c: Incident, kb: Any) -> bool:
    return c.head is not None and "catch-all" in marks(kb, c.head.signature)


_DIGITS = re.compile(r"\d+")


def _rank_offset(pairs: Sequence[tuple[int, int]]) -> int | None:
    """The constant ``rank - number`` of ``(number, rank)`` pairs, when every
    pair agrees on it and enough numbers show it (two when the number is the
    rank itself, else three); None otherwise."""
    offsets = {r - n for n, r in pairs}
    numbers = {n for n, _ in pairs}
    if len(offsets) != 1 or len(numbers) < (2 if 0 in offsets else 3):
        return None
    return offsets.pop()


def _numbered_families(labels: Iterable[str]) -> list[list[tuple[str, int]]]:
    """Files that differ in one number only (``node-2.err``,
    ``slurm-1234_2.out``, ``logs/2/stderr.log``), as ``(label, number)``
    lists of 3 to :data:`MAX_WORLD` members."""
    fams: dict[tuple[str, ...], list[tuple[str, list[int]]]] = defaultdict(list)
    for label in labels:
        parts = _DIGITS.split(label)
        fams[tuple(parts)].append((label, [int(x) for x in _DIGITS.findall(label)]))
    out = []
    for members in fams.values():
        if not 3 <= len(members) <= MAX_WORLD:
            continue
        nums = [n for _, n in members]
        vary = [k for k in range(len(nums[0])) if len({n[k] for n in nums}) > 1]
        if len(vary) == 1:
            out.append([(label, n[vary[0]]) for label, n in members])
    return out


def _family_ranks(labels: Iterable[str], ranks_of: dict[str, set[int | None]]) -> dict[str, int]:
    """The rank of each file numbered like its siblings, from the ranks the
    siblings' lines name (``ranks_of``: label -> ranks of its lines).  At
    least two siblings (three unless the offset is 0) must hold lines of one
    rank each that is their number plus one constant offset, none
    disagreeing; a file whose lines name another rank, or a rank a sibling
    holds, is left out."""
    out: dict[str, int] = {}
    for members in _numbered_families(labels):
        # a file of several ranks gives several offsets: not per-process
        off = _rank_offset(
            [(n, r) for label, n in members for r in ranks_of.get(label, ()) if r is not None]
        )
        if off is None:
            continue
        taken = {r for label, _ in members for r in ranks_of.get(label, set()) if r is not None}
        for label, n in members:
            r = n + off
            named = ranks_of.get(label, set()) - {None}
            # a file whose number and lines agree is that rank's
            if named != {r} and (named or r < 0 or r in taken):
                continue
            out[label] = r
    return out


def _sibling_ranks(events: Sequence[Event], labels: Iterable[str]) -> set[int]:
    """Ranks of files numbered like their siblings, from the siblings' lines
    (:func:`_family_ranks`): their lines that name no rank take it.  Returns
    the ranks given."""
    ranks_of: dict[str, set[int | None]] = defaultdict(set)
    by_file: dict[str, list[Event]] = defaultdict(list)
    for e in events:
        ranks_of[e.file].add(e.rank)
        by_file[e.file].append(e)
    given = _family_ranks(labels, ranks_of)
    for label, r in given.items():
        for e in by_file.get(label, ()):
            if e.rank is None:
                e.rank = r
    return set(given.values())


#: a numbered line prefix of a scheme no rule knows ("[2] ", "<2> ", "task 2: ")
_NUMBERED_PREFIX = re.compile(r"^([^\w\s]{0,2}[A-Za-z_ -]{0,12}?)(\d{1,5})([^\w\s]{1,3}\s?)")


def _prefix_ranks(events: Sequence[Event]) -> set[int]:
    """Ranks of lines behind a numbered prefix, from the lines that name one.

    Launchers and collectors tag each process's lines by schemes no rule
    knows.  When the lines of one file share a prefix shape that differs only
    in its number, and lines behind at least two different numbers name a
    rank that is the number plus one constant offset (none disagreeing; three
    numbers unless the offset is 0), the shape is a rank tag: its lines whose own text names no rank (a rank
    carried over from the line before, or none) take the number plus the
    offset.  Returns the ranks given."""
    shapes: dict[tuple[str, str, str], list[tuple[Event, int, str]]] = defaultdict(list)
    for e in events:
        m = _NUMBERED_PREFIX.match(e.text)
        if m:
            key = (e.file, m.group(1), m.group(3))
            shapes[key].append((e, int(m.group(2)), e.text[m.end() :]))
    given: set[int] = set()
    shapes = {k: rows for k, rows in shapes.items() if len({n for _, n, _ in rows}) >= 2}
    # the rank each line's own words name, behind its prefix: one vectorised pass
    rows_all = [row for rows in shapes.values() for row in rows]
    own = {id(e): r for (e, _, _), r in zip(rows_all, _line_ranks([t for _, _, t in rows_all]))}
    for rows in shapes.values():
        off = _rank_offset([(n, r) for e, n, _ in rows if (r := own[id(e)]) is not None])
        if off is None:
            continue
        for e, n, _ in rows:
            if own[id(e)] is None and n + off >= 0:
                e.rank = n + off
                given.add(n + off)
    return given


#: a DeepSpeed launcher's leftover command of local rank 0 (see anonymous-exit in rank_events)
_ONLY_SPAWNED = re.compile(r"[\x27\"]--local_rank=0[\x27\"]")
_COMM_RANK = re.compile(r"\bcomm 0x[0-9a-fA-F]+ rank (\d+)\b")
#: the size NCCL states beside it, for an entry on the line that reads no fields
_COMM_NRANKS = re.compile(r"\bcomm 0x[0-9a-fA-F]+ rank \d+ nranks (\d+)\b")


def _subgroup_ranks(events: Sequence[Event]) -> None:
    """NCCL numbers a process's rank in each communicator it joins: ``comm
    0x... rank 0 nranks 2`` is its rank in a pair (a pipeline or tensor
    group), not in the job.  Only a communicator as large as the largest the
    job shows names global ranks; the others' lines lose the rank they read,
    so the process table gives them the global one."""
    sizes = [
        (e, int(n))
        for e in events
        if (n := field_number(e.fields, NRANKS_FIELDS + WORLD_FIELDS)) is not None
        or ((m := _COMM_NRANKS.search(e.text)) and (n := float(m.group(1))))
    ]
    if not sizes:
        return
    world = max(n for _, n in sizes)
    for e, n in sizes:
        if n < world and e.rank is not None:
            m = _COMM_RANK.search(e.text)
            if m and int(m.group(1)) == e.rank:
                e.rank = None


def _pid_ranks(events: Sequence[Event]) -> None:
    """Give a line that names a process id the rank another line names for it.

    Launchers print a worker's pid beside its rank (``local_rank: 2 (pid:
    20037)``, ``process 22444 spawned with ... --local_rank=1``); the kernel's
    OOM killer, the scheduler and NCCL's ``host:pid:tid`` name only the pid.
    A pid seen with two different ranks (reused across restarts) is not used;
    nor is one seen on several hosts for a line whose host is one of them.
    """
    table: dict[tuple[str, str], int | None] = {}
    entry_rank: dict[tuple[str, int], int] = {}  # a ChildFailedError entry's "rank : N" line
    for e in events:
        if e.rank is not None and _ENTRY_RANK.match(_body(e.text)):
            entry_rank[(e.file, e.line)] = e.rank
    for e in events:
        pid = _pid_of(e.text)
        if pid is None:
            continue
        rank = e.rank
        if rank is None and _ELASTIC_EXIT.match(_body(e.text)):
            # the entry's exitcode line under its rank line: "exitcode : -11 (pid: 223)"
            rank = entry_rank.get((e.file, e.line - 1))
        if rank is None:
            continue
        key = (e.host or "", pid)
        table[key] = rank if table.get(key, rank) == rank else None
    if not table:
        return
    hosts = {h for h, _ in table}
    for e in events:
        if e.rank is not None:
            continue
        pid = _pid_of(e.text)
        if pid is not None:
            r = table.get((e.host or "", pid))
            # a host no launcher line names (a kernel log's directory) cannot
            # contradict the one rank the pid has elsewhere
            if r is None and (not e.host or e.host not in hosts):
                found = {v for (h, p), v in table.items() if p == pid and v is not None}
                r = found.pop() if len(found) == 1 else None
            if r is None:
                r = _pid_in_sequence(table, e.host or "", int(pid))
            if r is not None:
                e.rank = r


def _pid_in_sequence(
    table: Mapping[tuple[str, str], int | None], host: str, pid: int
) -> int | None:
    """The rank of a pid no launcher line names, when the launcher started
    its workers in one run of consecutive pids: every (pid, rank) pair of the
    host differs by one constant, at least three pairs show it, and the pid
    lies inside the run (torchrun's summary leaves out the worker it had to
    kill; UCX reports that worker's crash by pid alone)."""
    pairs = [(int(p), r) for (h, p), r in table.items() if h == host and r is not None]
    if len(pairs) < 3 or not min(p for p, _ in pairs) < pid < max(p for p, _ in pairs):
        return None
    off = _rank_offset(pairs)
    return pid + off if off is not None else None


#: NCCL's own prefix on every line: ``host:pid:tid [device]`` (the thread is
#: host, pid and tid)
_NCCL_HOST_PID_DEVICE = re.compile(r"(?:^|[\s\]])([\w.-]+):(\d+):(\d+) \[(\d{1,3})\] ")
_RANK_TABLE = "nccl-tests-rank-table"


def _rank_table_ranks(events: Sequence[Event]) -> None:
    """The rank of an NCCL line from the process's pid and NCCL's device
    prefix together (``host:pid:tid [2]``): a process that drives several
    GPUs (nccl-tests ``-g 4``, a single-process framework) has one pid and
    one rank per device, so its pid alone names none.  The pairs come from
    the rank table nccl-tests and rccl-tests print first (``#  Rank  2 Group
    0 Pid 188802 on node-0 device  2``) and from NCCL's own lines that state
    a rank (``comm 0x... rank 2 nranks 4 cudaDev 2 ... Init START``; a
    sub-communicator's local rank was cleared before).  A pair seen with two
    ranks is not used.  For a process with several devices the pair's rank
    replaces one its lines got by pid alone."""
    table: dict[tuple[str, str, str], int | None] = {}

    def put(key: tuple[str, str, str], rank: int) -> None:
        table[key] = rank if table.get(key, rank) == rank else None

    for e in events:
        if e.signature == _RANK_TABLE:
            f = e.fields
            if all(f.get(k) for k in ("table_rank", "table_pid", "table_host", "table_device")):
                put((f["table_host"], f["table_pid"], f["table_device"]), int(f["table_rank"]))
        elif (
            e.rank is not None
            and (m := _NCCL_HOST_PID_DEVICE.search(e.text[:256]))
            and (c := _COMM_RANK.search(e.text))
            and int(c.group(1)) == e.rank  # the line's own words, not a rank carried to it
        ):
            put((m.group(1), m.group(2), m.group(4)), e.rank)
    if not table:
        return
    # a process with several devices: a rank carried to its lines by pid
    # alone (attribution's same-process fill) is one of its ranks, maybe not
    # this device's
    devices: Counter[tuple[str, str]] = Counter((h, p) for h, p, _ in table)
    for e in events:
        if (m := _NCCL_HOST_PID_DEVICE.search(e.text[:256])) is None:
            continue
        host, pid, _, dev = m.groups()
        r = table.get((host, pid, dev))
        if r is not None and (e.rank is None or devices[(host, pid)] > 1):
            e.rank = r


_NCCL_DEVICE = re.compile(r"(?:^|[\s:])\[(\d{1,3})\] (?:[\w./-]+:\d+ )?NCCL (?:WARN|INFO|ERROR)")


def _device_ranks(events: Sequence[Event]) -> str | None:
    """With no rank anywhere in the job, take NCCL's device index as the rank.

    NCCL prefixes its lines with the CUDA device of the process
    (``host:pid:tid [3] NCCL WARN``).  That is not a rank in general, but a
    job (or a paste) that names no rank at all is almost always one process
    per GPU on one node, where device, local rank and rank coincide.
    """
    hit = False
    for e in events:
        if e.rank is None:
            m = _NCCL_DEVICE.search(e.text)
            if m:
                e.rank = int(m.group(1))
                hit = True
    return (
        (
            "rank taken from the NCCL device index (nothing else in the logs names a rank; "
            "one process per GPU on one node assumed)"
        )
        if hit
        else None
    )


#: the shortest message whose reprint elsewhere tells which rank printed it
COPY_CHARS = 40


def _ranks_from_copies(cands: Sequence[Incident], live: Sequence[Event]) -> None:
    """The rank of an unranked error that the job prints again under a rank.

    Launchers replay a worker's output: TGI's shard manager dumps a failed
    shard's stderr under ``[rank1]:`` after the worker's own unprefixed
    print, a collector reprints a traceback with its stream tag.  When every
    ranked copy of the same message (the same entry, the same text after the
    prefixes, or a copy cut short) names one rank, that is the rank.  Not
    for a line that names its own process: another process printing the
    same words failed the same way, it did not replay this one.
    """
    ranked: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for e in live:
        if e.rank is not None:
            ranked[e.signature].append((_body(e.text).strip(), e.rank))
    for c in cands[:64]:
        h = c.head
        if c.rank is not None or h is None or not ranked.get(h.signature):
            continue
        if _pid_of(h.text) is not None:
            continue  # a line that names its process (NCCL's host:pid:tid) is its own print
        body = _body(h.text).strip()
        if len(body) < COPY_CHARS:
            continue
        ranks = {r for b, r in ranked[h.signature] if b.startswith(body) or body.startswith(b)}
        if len(ranks) == 1:
            c.rank = ranks.pop()


#: lines from torchelastic's "Root Cause" header to the entry's rank and exit code
ROOT_CAUSE_LINES = 8
ROOT_CAUSE = "torch-elastic-root-cause-block"
_ELASTIC_EXIT = re.compile(r"^\s*exitcode\s*:\s*(-?\d+)")
_ENTRY_RANK = re.compile(r"^\s*rank\s*:\s*\d+")


def _ranks_from_root_cause(cands: Sequence[Incident], live: Sequence[Event], kb: Any) -> None:
    """The rank of an unranked error printed above torchelastic's summary.

    Without ``--tee``/``--log-dir`` prefixes, the workers' tracebacks reach
    the agent's console bare, and the ``ChildFailedError`` summary that
    follows names the ``Root Cause (first observed failure)``: the rank whose
    exit the agent saw first.  When that rank exited with an error code (not
    a signal: a killed worker prints nothing of its own), the first unranked
    error above the summary in the same file is its output.  The entry's
    rank and exit code are the launcher's ``record`` lines below the header.
    """
    marks_at: dict[str, list[Event]] = defaultdict(list)
    for e in live:
        if e.signature == ROOT_CAUSE or "record" in marks(kb, e.signature):
            marks_at[e.file].append(e)
    roots: dict[str, list[tuple[int, int]]] = {}
    for file, evs in marks_at.items():
        evs.sort(key=lambda e: e.line)
        for i, e in enumerate(evs):
            if e.signature != ROOT_CAUSE:
                continue
            near = [x for x in evs[i + 1 :] if x.line <= e.line + ROOT_CAUSE_LINES]
            rank = next((x.rank for x in near if x.rank is not None), None)
            code = next(
                (int(m.group(1)) for x in near if (m := _ELASTIC_EXIT.match(_body(x.text)))), None
            )
            if rank is not None and code is not None and code > 0:
                roots.setdefault(file, []).append((e.line, rank))
    if not roots:
        return
    taken: set[tuple[str, int]] = set()
    for c in sorted(cands[:64], key=lambda c: (c.head.file, c.head.line) if c.head else ("", 0)):
        h = c.head
        if c.rank is not None or h is None or h.file not in roots:
            continue
        if h.severity not in ("error", "fatal"):
            continue
        below = [(line, r) for line, r in roots[h.file] if line > h.line]
        if below and (h.file, below[0][0]) not in taken:
            taken.add((h.file, below[0][0]))
            c.rank = below[0][1]
            c.extra["rank_inferred"] = True


_MESSAGE_DEVICE = re.compile(
    r"\b(?:cuda|npu|xpu|hpu):(\d{1,3})\b"
    # the caching allocator's out-of-memory report: "(GPU 3; 31.75 GiB total
    # capacity", "GPU 1 has a total capacity of", torch_npu's "(NPU 4; "
    r"|\((?:GPU|NPU|XPU) (\d{1,3}); |\bGPU (\d{1,3}) has a total capacity"
)


def _ranks_from_devices(
    cands: Sequence[Incident], live: Sequence[Event], known_ranks: set[int], world: int
) -> str | None:
    """The rank of an unranked error that names one accelerator device.

    ``can't convert cuda:2 device type tensor``, ``found at least two
    devices, cuda:9 and cpu``, ``actual=tensor(..., device='cuda:1')``: the
    device a process computes on is its local rank when each process drives
    one GPU of its node.  Only on one node (a local rank is the global one
    there); and ``cuda:0`` only when nothing else in the job names a rank,
    since a job that gives every process one visible device prints
    ``cuda:0`` on all of them; never past the world size the job states.
    The device overrides a rank inferred from other lines (a shared console
    where only rank 0 logs names rank 0 everywhere; torchelastic's first
    observed exit when every rank failed at once).
    """
    if len({e.host for e in live if e.host}) > 1:
        return None
    hit = False
    for c in cands[:64]:
        if (c.rank is not None and not c.extra.get("rank_inferred")) or c.head is None:
            continue
        devices = {int(g) for m in _MESSAGE_DEVICE.findall(c.head.text) for g in m if g}
        if len(devices) != 1:
            continue
        d = devices.pop()
        if (d == 0 and known_ranks) or 0 < world <= d:
            continue
        c.rank = d
        hit = True
    return (
        "rank taken from the device the error names (one process per GPU on one node assumed)"
        if hit
        else None
    )


def _node(e: Event) -> str:
    if e.host:
        return e.host
    m = re.search(r"(?:^|/)([^/]+)/(?:[^/]*/)*?(?:logs/|console)", e.file)
    return m.group(1) if m else ""


def _evidence(
    top: Incident, first: Event | None, virtual: str | None, x: np.ndarray, model: Any
) -> list[str]:
    """Reasons, evidence first: which line, which rank, why it beat the others."""
    from .ranker import FEATURES

    out: list[str] = []
    if virtual and first is None:
        out.append(f"rank {top.rank} is the suspect: {virtual}; it printed no line of its own")
    elif virtual and first is not None:
        n = int(first.fields.get("repeated", 1)) if first.fields else 1
        last = (
            f"its last {n} lines repeat one message, from {first.where()} on"
            if n > 1
            else f"its last line is {first.where()}"
        )
        out.append(f"rank {top.rank} is the suspect: {virtual}; {last}")
    elif first is not None:
        lo, hi = top.lines
        span = f" (incident of lines {lo}-{hi})" if hi > lo else ""
        out.append(
            f"{TIER_NAMES[top.tier]}: {first.signature} at {first.where()}{span}"
            + (f" on rank {top.rank}" if top.rank is not None else "")
        )
    for name, c in model.explain(x)[:4]:
        out.append(f"{'+' if c > 0 else '-'}{abs(c):.2f}: {FEATURES[name]}")
    return out


#: bytes read at each end of an input for the ranks its lines name
PRINTED_BYTES = 64 << 10
#: inputs read for them at most (per-rank files name their ranks by themselves)
PRINTED_FILES = 16


def _printed_ranks(reader: Any, labels: Sequence[str]) -> set[int]:
    """The ranks whose lines appear in the first and last
    :data:`PRINTED_BYTES` of ``labels`` (a console's start-up and its end),
    whether a pattern matched them or not."""
    texts: list[str] = []
    for label in labels[:PRINTED_FILES]:
        head = reader.read(label, 0, PRINTED_BYTES) or b""
        lines = head.decode("utf-8", "replace").splitlines()
        texts += lines[:-1] if len(head) == PRINTED_BYTES else lines  # the last may be cut
        tail = reader.tail(label, PRINTED_BYTES)
        if tail is not None and tail[0] > 0:  # a file longer than the head
            texts += tail[1].decode("utf-8", "replace").splitlines()[1:]
    return {r for r in _line_ranks(texts) if r is not None}


def _virtual_suspects(
    live: Sequence[Event],
    specific: Sequence[Event],
    known_ranks: set[int],
    progress: dict[int, int] | None,
    stall: float | None = None,
    bound: float = 0.0,
    cands: Sequence[Incident] = (),
    reader: Any = None,
    kb: Any = None,
) -> list[Incident]:
    """Ranks suspected from absence: the one the others waited for, the one
    whose progress stopped first.  Named by their last line, when they have one:
    the one the others waited for by the last line of its own output, read
    back when no pattern matched it (a rank that never joined prints no error)."""
    out: list[Incident] = []
    lag_rank, lag_why, lag = _progress_lag(live, progress)
    silent = _watchdog_suspect(specific, known_ranks, kb)
    if silent[0] is None and reader is not None:
        # a rank whose lines no pattern knows is still a rank of the job: the
        # rank prefixes at the ends of the inputs where the others wait show it
        waits = {e.file for e in specific if _waits(e)}
        more = _printed_ranks(reader, sorted(waits)) - known_ranks if waits else set()
        if more:
            silent = _watchdog_suspect(specific, known_ranks | more, kb)
    if silent[0] is None:
        # ranks are numbered from 0 without gaps: when at least two wait and
        # one number below the highest of them never appears, it is a rank too
        waiting = {e.rank for e in specific if _waits(e) and e.rank is not None}
        gap = set(range(max(waiting) + 1)) - waiting - known_ranks if len(waiting) >= 2 else set()
        if len(gap) == 1:
            silent = _watchdog_suspect(specific, known_ranks | gap, kb)
    for kind, (rank, why) in (
        ("silent_suspect", silent),
        ("laggard", (lag_rank, lag_why)),
    ):
        if rank is None or any(c.extra.get("virtual") and c.rank == rank for c in out):
            continue
        # named by its last progress line (where it stopped), else its last own line
        own = [
            e for e in live if e.rank == rank and field_number(e.fields, STEP_FIELDS) is not None
        ] or [e for e in live if e.rank == rank and e.role == "context"]
        # a slow rank goes on printing: name where it was when the others went
        # quiet.  By step first (clock-free): its last line at a step the others
        # also reached; else by time: their last progress line, else when the
        # timeouts say they began to wait
        peer_steps = [
            s
            for e in live
            if e.rank is not None
            and e.rank != rank
            and (s := field_number(e.fields, STEP_FIELDS)) is not None
        ]
        if peer_steps:
            top = max(peer_steps)
            own = [
                e
                for e in own
                if (s := field_number(e.fields, STEP_FIELDS)) is not None and s <= top
            ] or own
        peers = [
            e.t
            for e in live
            if e.rank is not None
            and e.rank != rank
            and e.t is not None
            and field_number(e.fields, STEP_FIELDS) is not None
        ]
        limit = max(peers) + bound if peers else (stall + bound if stall is not None else None)
        if limit is not None:
            own = [e for e in own if e.t is not None and e.t <= limit] or own
        last = max(own, key=lambda e: (e.t if e.t is not None else -math.inf, e.line), default=None)
        extra: dict[str, Any] = {"virtual": why[0] if why else kind, kind: 1.0}
        if kind == "laggard":
            extra["lag"] = lag
        # a launcher's record that this rank died (not the agent's SIGTERM) is the
        # first trace of its failure: the rank printed nothing when it died
        death = [
            c
            for c in cands
            if c.rank == rank and c.head is not None and any(failed_exit(m) for m in c.members)
        ]
        if not death:
            # an error of its own (an exception no entry knows, a cause): the
            # rank the others waited for is named by it, not by its last step
            death = [
                c
                for c in cands
                if c.rank == rank
                and c.head is not None
                and not c.extra.get("virtual")
                and c.tier in (TIER_CAUSE, TIER_OWN_SYMPTOM, TIER_OPEN)
            ]
        if not death and kind == "silent_suspect":
            # a suspect that itself waits (in another kind of collective than
            # its peers) is named by its own wait: where its path went
            death = [
                c
                for c in cands
                if c.rank == rank
                and c.head is not None
                and field_text(c.head.fields, OPTYPE_FIELDS)
                and field_number(c.head.fields, SEQ_FIELDS) is not None
            ]
        if death:
            d = min(death, key=lambda c: (c.t if c.t is not None else math.inf, c.lines[0]))
            out.append(Incident(list(d.members), d.head, rank, d.host, d.tier, d.t, extra))
            continue
        if kind == "silent_suspect" and reader is not None:
            tail = _own_last_line(rank, live, reader)
            if tail is not None and (
                last is None or last.file != tail.file or last.line < tail.line
            ):
                last = tail
        out.append(
            Incident(
                [last] if last else [],
                last,
                rank,
                last.host if last else None,
                TIER_COLLATERAL,
                None,
                extra,
            )
        )
    if reader is not None and not any(c.extra.get("silent_suspect") for c in out):
        quiet = _quiet_sibling(live, reader)
        if quiet is not None:
            label, reason = quiet
            got = reader.last_line(label, words=True, prefix=prefix_length)
            if got is not None:
                (n, text), _ = _repeat_start(reader, label, got[0], got[1])
                owner = _file_ranks([label], live).get(label)
                ev = _line_event(label, n, text, owner, BUSY_LINE)
                flags: dict[str, Any] = {"virtual": reason, "silent_suspect": 1.0, "busy": 1.0}
                out.append(Incident([ev], ev, owner, None, TIER_COLLATERAL, None, flags))
    return out


def _quiet_sibling(live: Sequence[Event], reader: Any) -> tuple[str, str] | None:
    """The one file of a numbered family (``node0.log`` .. ``node3.log``)
    that reports no wait while all its siblings time out in a collective or
    the store, and prints no error either: its process is the one they
    waited for, whether or not any line names a rank (Gloo's timeouts name
    none).  With its reason; None when no family shows one."""
    waits = {e.file for e in live if _waits(e)}
    noisy = {e.file for e in live if e.role != "context"}
    for members in _numbered_families(reader.labels()):
        labels = [label for label, _ in members]
        waiting = [x for x in labels if x in waits]
        quiet = [x for x in labels if x not in noisy]
        if len(waiting) >= 2 and len(quiet) == 1 and len(waiting) + 1 == len(labels):
            return quiet[0], (
                f"{len(waiting)} of the {len(labels)} files numbered alike report a timeout "
                f"waiting for a peer; {quiet[0]} reports none and no error: its process is the "
                "one they waited for"
            )
    return None


#: the signature of a rank's last own line, read back (no pattern matched it)
LAST_LINE = "rank-last-line"


def _file_ranks(labels: Iterable[str], events: Sequence[Event]) -> dict[str, int]:
    """The rank whose own output each per-rank file is.

    A file whose matched lines all carry one rank is that rank's; a file with
    no matched line takes the rank its path names, shifted to a global rank
    the way its siblings' are (``node1/.../attempt_0/0/stderr.log`` of a
    second node's first worker), or else the rank its number gives among
    siblings numbered alike (:func:`_family_ranks`).
    """
    from ..facts.attribution import path_facts

    by_file: dict[str, set[int | None]] = defaultdict(set)
    for e in events:
        by_file[e.file].add(e.rank)
    out: dict[str, int] = {}
    shift: dict[str, Counter[int]] = defaultdict(Counter)
    for label, ranks in by_file.items():
        if len(ranks) == 1 and None not in ranks:
            r = next(iter(ranks))
            assert r is not None
            out[label] = r
            p = path_facts(label).rank
            if p is not None:
                shift[_rank_dir(label)][r - p] += 1
    labels = list(labels)
    siblings = _family_ranks(labels, by_file)
    for label in labels:
        if label in by_file:
            continue
        p = path_facts(label).rank
        if p is None:
            # numbered like siblings whose lines name their ranks (node2.log
            # of a rank that printed nothing the knowledge base knows)
            if label in siblings:
                out[label] = siblings[label]
            continue
        moves = shift.get(_rank_dir(label))
        out[label] = p + (moves.most_common(1)[0][0] if moves else 0)
    return out


def _rank_dir(label: str) -> str:
    """The directory that holds one entry per rank (``attempt_0`` of ``attempt_0/3/stderr.log``)."""
    head = label.replace("\\", "/").rsplit("/", 1)[0]
    return head.rsplit("/", 1)[0] if _LOCAL_PATH.search(label.replace("\\", "/")) else head


#: a line inside a Python traceback's frames, after any launcher prefix
#: (``[rank7]:``): ``File "x.py", line 3, in f``, the indented source line
#: under it, carets, or nothing
_FRAME_LINE = re.compile(r'^(?:\S*?[:\]>|]\s?)?(?:\s*$|\s{2,}\S|\s*File "[^"]*", line \d+, in )')
#: an exception traceback's frame; faulthandler's stack dumps (``line 3 in f``,
#: no comma: printed by every rank of a hung or signalled job) are not one
_FRAME_FILE = re.compile(r'File "[^"]*", line \d+, in ')
_PREFIX_ONLY = re.compile(r"^(?:\S*?[:\]>|]\s?)?\s*$")
_FRAME_BODY = re.compile(r'(?:\s*$|\s{2,}\S|\s*File "[^"]*", line \d+, in )')


def _body(text: str) -> str:
    """A line without the prefixes launchers and collectors put before it."""
    return text[prefix_length(text) :]


def _frame_line(text: str) -> bool:
    """A traceback frame line, behind any launcher or collector prefixes."""
    return bool(_FRAME_LINE.search(text) or _FRAME_BODY.match(text, prefix_length(text)))


def _prefix_only(text: str) -> bool:
    return bool(_PREFIX_ONLY.search(text)) or not _body(text).strip()


#: bytes of a file's end read to see whether it stops inside a traceback
CUT_TRACEBACK_BYTES = 16 << 10


def _cut_tracebacks(live: Sequence[Event], table: pa.Table, reader: Any, kb: Any) -> list[Incident]:
    """Tracebacks whose file ends among their frames, before the exception line.

    A paste cut short or a process killed while printing leaves a header
    and some frames, or frames alone: no line names the error, yet the job
    failed there.  Only consulted when nothing else is a candidate.  The
    candidate, an open-world incident, is the traceback's header when it was
    matched, else (frames alone: a paste cut at both ends) the innermost
    frame's last line, where the error was being raised.
    """
    headers: dict[str, Event] = {}
    for e in live:
        if "traceback-start" in marks(kb, e.signature):
            if e.file not in headers or e.line > headers[e.file].line:
                headers[e.file] = e
    out = []
    for label in reader.labels():
        lines = reader.tail_lines(label, CUT_TRACEBACK_BYTES)
        run = 0  # frame lines at the end of the file
        while run < len(lines) and _frame_line(lines[-1 - run].rstrip("\r")):
            run += 1
        frames = lines[len(lines) - run :]
        if not any(_FRAME_FILE.search(x) for x in frames):
            continue
        # the line number: counting the file's lines is paid only for a file
        # that ends inside a traceback, not for every file of a quiet job
        got = reader.last_line(label)
        if got is None:
            continue
        last_no = got[0]
        # the innermost frame's last line with more than a launcher prefix
        k = next(i for i in range(len(frames) - 1, -1, -1) if not _prefix_only(frames[i]))
        line = last_no - (len(frames) - 1 - k)
        text = frames[k].rstrip("\r")
        head = headers.get(label)
        if head is not None and head.line >= last_no - run:
            # the traceback's header was matched: it is the candidate
            out.append(
                Incident(
                    [head], head, head.rank, head.host, TIER_OPEN, head.t, {"cut_traceback": True}
                )
            )
            continue
        ev = _line_event(
            label,
            line,
            text,
            _line_rank(text),
            "torch-rank-exception",
            severity="error",
            phase="compute",
        )
        out.append(Incident([ev], ev, ev.rank, None, TIER_OPEN, None, {"cut_traceback": True}))
    return out


def _hung_stacks(live: Sequence[Event], reader: Any, kb: Any) -> list[Incident]:
    """Stack dumps of a hung job (py-spy, faulthandler) and no error line:
    the innermost frame outside the standard library of the stack that
    differs from its peers' (:mod:`denpex_fast.analysis.stacks`) is an
    open-world candidate.  Only consulted when nothing else is one."""
    from .stacks import odd_stack, read_stacks

    files = sorted({e.file for e in live if "stack-dump" in marks(kb, e.signature)})
    pick = odd_stack(read_stacks(reader, files)) if files else None
    if pick is None:
        return []
    f = pick.frame
    ev = _line_event(
        f.file, f.line, f.text, _line_rank(f.text), STACK_DUMP, severity="error", phase="compute"
    )
    return [Incident([ev], ev, ev.rank, None, TIER_OPEN, None, {"stack_dump": pick.why()})]


#: the knowledge-base entry of a dumped thread's stack (its header line)
STACK_DUMP = "os-python-stack-dump"


def _around(
    e: Event, table: pa.Table, reader: Any, before: int, after: int
) -> list[tuple[int, str]]:
    """``(line, text)`` of up to ``before`` lines before the matched line of
    ``e`` (a row of ``table``), that line, and up to ``after`` after it, read
    back from the scan's input."""
    offset = int(table.column("offset")[e.index].as_py())
    return list(reader.around(e.file, e.line, offset, before, after))


#: lines read after a rank-less error line for a rank its message names
CONTINUATION_LINES = 4
_CONTINUATION = re.compile(r"^(?:\s+\S|\()")
_INDENTED = re.compile(r"^\s+\S")


def _ranks_from_continuations(cands: Sequence[Incident], table: pa.Table, reader: Any) -> None:
    """A rank named on a continuation line of the error itself.

    A multi-line message often states the process's rank only further down
    (Gloo's ``connectFullMesh failed ... (rank=8, size=16, local=...)`` on
    its third line, an indented detail line).  Those lines match no entry, so
    the rank is read from the lines that directly continue the head (indented,
    or opening a parenthesis), never from the next record.
    """
    for c in cands[:64]:
        head = c.head
        if c.rank is not None or head is None or head.index < 0 or head.rank is not None:
            continue
        for n, text in _around(head, table, reader, 0, CONTINUATION_LINES):
            if n <= head.line:
                continue
            if not _CONTINUATION.search(_body(text)):
                break
            r = _line_rank(text.strip())
            if r is not None:
                c.rank = r
                break


#: lines an unranked error may sit from a line of the one rank its file names
FILE_RANK_LINES = 32


def _ranks_from_file(
    cands: Sequence[Incident], live: Sequence[Event], table: pa.Table, reader: Any
) -> None:
    """The rank of an error line that names none, in a file whose lines name
    one rank only: the output of that one process.  A library's own lines
    (RCCL's ``[FATAL ERROR]: HIP failure``, a C++ ``terminate called``) carry
    no ``[rankN]:`` prefix although the Python lines around them do.  When no
    matched line of the file names a rank, the lines before the error that no
    entry matched are read back (a script's own ``rank 0 is initialized``).

    Not when that rank's lines carry a launcher's stream tag and the error
    line does not: the launcher tags every line of a rank, so an untagged
    line was written by another process (the launcher itself, a driver or
    client beside the ranks)."""
    ranked: dict[str, list[Event]] = defaultdict(list)
    for e in live:
        if e.rank is not None:
            ranked[e.file].append(e)
    for k, c in enumerate(cands):
        h = c.head
        if c.rank is not None or h is None:
            continue
        mine = [(e.line, e.rank, e.text) for e in ranked.get(h.file, [])]
        # a head read back (an exception line) is reached through a matched member
        anchor = next((e for e in (h, *c.members) if e.index >= 0 and e.file == h.file), None)
        if not mine and k < 64 and anchor is not None and anchor.line <= h.line:
            near = _around(anchor, table, reader, FILE_RANK_LINES + anchor.line - h.line, 0)
            before = [(n, t) for n, t in near if h.line - FILE_RANK_LINES <= n < h.line]
            mine = [
                (n, r, t)
                for (n, t), r in zip(before, _line_ranks([t for _, t in before]))
                if r is not None
            ]
        if len({r for _, r, _ in mine}) != 1:
            continue
        # only inside that process's record, not anywhere in a long console
        if not any(abs(n - h.line) <= FILE_RANK_LINES for n, _, _ in mine):
            continue
        if not STREAM_TAG.match(h.text) and all(STREAM_TAG.match(t) for _, _, t in mine):
            continue
        c.rank = mine[0][1]
        c.extra["rank_inferred"] = True  # inferred from neighbours, not the line's words


#: lines read after a traceback's header for its exception line
TRACEBACK_LINES = 80
UNCAUGHT = "os-python-uncaught-exception"
_EXCEPTION_LINE = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?::\s.*)?$")
_NOT_EXCEPTION = ("Traceback", "During handling", "The above exception")


def _exception_lines(cands: Sequence[Incident], table: pa.Table, reader: Any, kb: Any) -> None:
    """A traceback's exception line that no entry matched, read back after
    its frames.  Exception classes need not end in ``Error`` or
    ``Exception`` (``StopIteration``, ``SystemExit: 2``, a library's own
    ``ShardCorrupted: ...``): the first line after the frames, of the same
    rank, shaped ``name[: message]``, is the exception, and names the
    incident in the header's place.  An error record whose message runs on
    into frames without a header line is read the same way (the exception
    line may already be a member of its incident: it then becomes the head)."""
    for c in cands[:64]:
        head = c.head
        if head is None or head.index < 0:
            continue
        header = "traceback-start" in marks(kb, head.signature)
        if (header and len(c.members) != 1) or (
            not header and head.severity not in ("error", "fatal")
        ):
            continue
        after = [
            (n, x) for n, x in _around(head, table, reader, 0, TRACEBACK_LINES) if n > head.line
        ]
        cut = _record_prefix(head.text, after[0][1] if after else "")
        if cut:  # a logger that writes its prefix on every line of the record
            after = [(n, x[len(cut) :] if x.startswith(cut) else x) for n, x in after]
        record = bool(cut) or logged_error(head.text)
        if not header and not _frames_follow(after, record=record):
            continue
        frames = 0
        # the header's own prefix may name a local rank mapped to a global one
        mine = {None, head.rank, _line_rank(head.text)}
        own = [nx for nx, r in zip(after, _line_ranks([x for _, x in after])) if r in mine]
        for k, (n, text) in enumerate(own):  # another rank's lines interleaved are skipped
            if _frame_line(text):
                frames += 1
                continue
            body = _body(text).strip()
            if record and not header and k == 0 and body.startswith(_TRACEBACK_HEADER):
                continue  # a logged message above its traceback's header
            if frames and _EXCEPTION_LINE.match(body) and not body.startswith(_NOT_EXCEPTION):
                ev = next((m for m in c.members if m.file == head.file and m.line == n), None)
                if ev is None:
                    ev = replace(
                        head,
                        index=-1,
                        line=n,
                        text=(cut + text if cut else text)[:2000],
                        signature=UNCAUGHT,
                        role="cause",
                    )
                    c.members.append(ev)
                c.head = ev
            elif frames and k + 1 < len(own) and _frame_line(own[k + 1][1]):
                continue  # the rest of a frame line that another write cut in two
            break


#: the header of a traceback carried inside an exception's message
_NESTED_HEADERS = ("Traceback (most recent call last):", "Traceback of TorchScript")
#: lines between a wrapping exception and the nested traceback's header
NESTED_GAP = 2


def _nested_exceptions(cands: list[Incident], table: pa.Table, reader: Any) -> list[Incident]:
    """An exception whose message carries the traceback of the error it
    wraps names the incident by that error.

    Ray's ``RuntimeError: The actor with name WorkerDict failed to import on
    the worker. ...:`` continues with the worker's own traceback and its
    ``ImportError: ... undefined symbol``; TorchScript's ``RuntimeError: The
    following operation failed in the TorchScript interpreter.`` with
    ``Traceback of TorchScript`` and the operation's own ``RuntimeError:
    select(): index -1 out of range``.  Only when the message announces the
    nested trace (it ends with ``:``, or the header is TorchScript's): an
    exception line followed by another process's ``Traceback (most recent
    call last):`` is two records of an interleaved console, not one.  An
    incident the nested line headed on its own is folded into the wrapper's."""
    folded: set[int] = set()
    for c in cands[:64]:
        head = c.head
        if head is None or head.index < 0:
            continue
        body = _body(head.text).strip()
        if not _EXCEPTION_LINE.match(body) or body.startswith(_NOT_EXCEPTION):
            continue
        after = [
            (n, x) for n, x in _around(head, table, reader, 0, TRACEBACK_LINES) if n > head.line
        ]
        mine = {None, head.rank, _line_rank(head.text)}
        own = [
            (n, _body(x).strip())
            for (n, x), r in zip(after, _line_ranks([x for _, x in after]))
            if r in mine
        ]
        k = next((i for i, (_, x) in enumerate(own[: NESTED_GAP + 1]) if x), None)
        if k is None or not own[k][1].startswith(_NESTED_HEADERS):
            continue
        if not (body.endswith(":") or own[k][1].startswith(_NESTED_HEADERS[1])):
            continue
        for n, text in own[k + 1 :]:
            if not text or _frame_line(text) or not _EXCEPTION_LINE.match(text):
                continue
            if text.startswith(_NOT_EXCEPTION):
                break
            # the nested line as an entry matched it, in this incident or another
            ev = next(
                (
                    m
                    for o in cands
                    for m in o.members
                    if m.file == head.file and m.line == n and m.index >= 0
                ),
                None,
            )
            if ev is not None and ev not in c.members:
                c.members.append(ev)
                folded |= {id(o) for o in cands if o is not c and o.head is ev}
            if ev is None:
                full = next(x for m, x in after if m == n)
                ev = replace(
                    head, index=-1, line=n, text=full[:2000], signature=UNCAUGHT, role="cause"
                )
                c.members.append(ev)
            c.head = ev
            break
    return [o for o in cands if id(o) not in folded] if folded else cands


#: Python's exception for SIGINT, and the terminal's echo of the key that sent it
INTERRUPT = "os-keyboard-interrupt"
_ECHO = re.compile(r"\^C(?:\^[CZ\\])*\s*$")
#: lines read back before an interrupt's first traceback for the terminal's echo
ECHO_LINES = 400


def _interrupt_echoes(cands: Sequence[Incident], table: pa.Table, reader: Any) -> None:
    """An interrupt is named by the moment it was typed: a terminal that
    echoes control keys leaves ``^C`` in the captured output (often glued to
    a progress bar) before the processes print their ``KeyboardInterrupt``
    tracebacks.  Read back from the traceback, the nearest such line takes
    the incident's head; without one the exception line stays."""
    for c in cands[:64]:
        head = c.head
        if head is None or head.index < 0 or head.signature != INTERRUPT:
            continue
        before = _around(head, table, reader, ECHO_LINES, 0)
        echo = next(
            ((n, x) for n, x in reversed(before) if n < head.line and _ECHO.search(x)), None
        )
        if echo is not None:
            ev = replace(head, index=-1, line=echo[0], text=echo[1][:2000], rank=None)
            c.members.append(ev)
            c.head = ev


#: the end of a logger's record prefix: ``[core.py:586] ``, ``[TP0] ``, ``| ``
_PREFIX_END = re.compile(r"(?:\] |\| )")


def _record_prefix(head: str, following: str) -> str:
    """The prefix a logger writes on every line of one record (vLLM's
    ``ERROR 07-31 19:35:35 [core.py:586] `` before each line of a traceback
    it logs): the start ``head`` and the line after it share, up to its last
    ``] `` or ``| ``, holding a digit; empty when they share none."""
    common = os.path.commonprefix([head, following])
    ends = [m.end() for m in _PREFIX_END.finditer(common)]
    cut = common[: ends[-1]] if ends else ""
    return cut if len(cut) >= 8 and any(ch.isdigit() for ch in cut) else ""


#: libstdc++'s terminate handler: the exception's type, then its message
_TERMINATE = "os-cxx-terminate"
_WHAT = re.compile(r"(?:^|[\s:>|\]])what\(\): +\S")


def _what_lines(cands: Sequence[Incident], table: pa.Table, reader: Any) -> None:
    """``terminate called after throwing an instance of 'gloo::IoException'``
    names a type; the ``  what():  ...`` line under it says what failed (a
    store's ``Wait timeout for key(s): 0``).  When no entry matched that line,
    it is read back and names the incident (a line of another rank
    interleaved between the two is skipped)."""
    for c in cands[:64]:
        head = c.head
        if head is None or head.index < 0 or head.signature != _TERMINATE:
            continue
        taken = {m.line for m in c.members if m.file == head.file}
        after = [(n, x) for n, x in _around(head, table, reader, 0, 3) if n > head.line]
        mine = {None, head.rank, _line_rank(head.text)}
        for (n, text), r in zip(after, _line_ranks([x for _, x in after])):
            if n in taken:
                break  # an entry read the message already
            if r not in mine:
                continue
            if _WHAT.search(text[:512]):  # behind any prefix
                ev = replace(head, index=-1, line=n, text=text[:2000])
                c.members.append(ev)
                c.head = ev
            break


#: NCCL's error-return trace: ``host:pid:tid [dev] NCCL INFO file.cc:N -> 3``
_NCCL_RETURN = re.compile(r"NCCL INFO \S+:\d+ -> [1-9]\d*\s*$")
#: lines between a WARN and the return trace of the call that failed
RETURN_TRACE_LINES = 4


def _returned_warns(cands: list[Incident], kb: Any) -> list[Incident]:
    """In a thread's chain of NCCL ``WARN`` lines no entry knows, the WARNs
    printed together right before the thread's first error-return trace
    (``NCCL INFO graph/paths.cc:608 -> 3``) are the failing call's; the WARNs
    before them that the thread went past (``Could not read node # 5`` while
    reading ``/sys``, a fallback covering it) are not.  The first of the
    failing call's WARNs names the incident.  And when some such chains of
    the job hold a return trace, those that hold none are no candidates:
    their threads went on past them."""
    chains = [
        c
        for c in cands[:64]
        if c.head is not None and "NCCL WARN" in c.head.text and _catch_all_head(c, kb)
    ]
    returned = [c for c in chains if any(_NCCL_RETURN.search(m.text) for m in c.members)]
    if not returned:
        return cands
    for c in returned:
        h = c.head
        members = sorted(c.members, key=lambda m: m.line)
        ret = next((m for m in members if _NCCL_RETURN.search(m.text)), None)
        origin = _NCCL_HOST_PID_DEVICE.search(ret.text) if ret is not None else None
        if h is None or ret is None or origin is None or ret.line <= h.line:
            continue
        thread = ":".join(origin.group(1, 2, 3))
        warns = [m for m in members if "NCCL WARN" in m.text and thread in m.text]
        call = [m for m in warns if ret.line - RETURN_TRACE_LINES <= m.line < ret.line][-1:]
        for m in reversed(warns):  # the WARNs printed together with it (a blank line apart)
            if call and m.line < call[0].line and call[0].line - m.line <= 2:
                call.insert(0, m)
        if call and call[0].line > h.line:
            c.head = call[0]
    went_on = {id(c) for c in chains if not any(c is r for r in returned)}
    return [c for c in cands if id(c) not in went_on]


#: the object an exception says is missing: ``NameError: name 'X' is not
#: defined``, ``cannot import name 'X'``, ``No module named 'X'``,
#: ``... has no attribute 'X'``
_MISSING_SUBJECT = re.compile(
    r"(?:\bname|\bmodule named|\bimport name|\battribute) (['\"`])([A-Za-z_][\w.]{3,})\1"
)


def _warned_subjects(cands: list[Incident], live: Sequence[Event]) -> list[Incident]:
    """An exception saying an object is missing, whose process earlier printed
    a warning or error line quoting the same object, is headed by that line:
    the program noticed there (an optional import that failed, a feature it
    disabled and went on without) and failed only when it needed the object.
    The earlier line's own candidate joins the incident."""
    for c in cands[:16]:
        head = c.head
        if head is None or head.severity not in ("error", "fatal"):
            continue
        m = _MISSING_SUBJECT.search(head.text)
        if m is None:
            continue
        quoted = tuple(f"{q}{m.group(2)}{q}" for q in "'\"`")
        first = min(x.line for x in c.members if x.file == head.file)
        earlier = [
            e
            for e in live
            if e.file == head.file
            and e.line < first
            and head.rank in (None, e.rank)
            and e.severity in ("warning", "error", "fatal")
            and any(q in e.text for q in quoted)
        ]
        if earlier:
            noticed = min(earlier, key=lambda e: e.line)
            c.members.append(noticed)
            c.head = noticed
            cands = [
                o
                for o in cands
                if o is c
                or o.head is None
                or (o.head.file, o.head.line) != (noticed.file, noticed.line)
            ]
    return cands


def _frames_follow(after: Sequence[tuple[int, str]], *, record: bool = False) -> bool:
    """Whether an error line is the first line of a traceback printed without
    its header: a logged message whose exception's text runs on into frames
    (``[ERROR] - Exception occurred during training: ray::TaskRunner.run()
    (pid=...)`` then ``  File "...", line 396, in run``), or a message that
    ``logger.exception`` printed above the traceback's header, when they are
    one ``record``: the logger's prefix on every line (``ERROR ...
    [core.py:586] EngineCore failed to start.`` then ``... Traceback (most
    recent call last):``) or the message's own ERROR level (``text.py:275 -
    ERROR :: error loading cache``).  Otherwise the error line may be a
    cause of its own that the traceback followed.  The frames follow at once (caret lines
    between them aside)."""
    for k, (_, text) in enumerate(after[:4]):
        if _FRAME_FILE.search(text):
            return True
        if record and k == 0 and _body(text).startswith(_TRACEBACK_HEADER):
            continue
        if not _CARETS.match(_body(text)):
            return False
    return False


_TRACEBACK_HEADER = "Traceback (most recent call last)"


_CARETS = re.compile(r"^\s*[\^~]+\s*$")


#: traceback headers read back at most for an exception line no pattern knows
UNMATCHED_TRACEBACKS = 16


def _unmatched_tracebacks(
    live: Sequence[Event], table: pa.Table, reader: Any, kb: Any
) -> list[Incident]:
    """Tracebacks whose exception line no entry matched (``ShardCorrupted:
    ...``, ``StopIteration``): open-world candidates named by that line.

    A traceback header is context (every failing job prints many); its
    exception line is what a candidate needs, and a class no entry knows
    leaves none.  Only headers with no cause or symptom of their own rank
    in the lines after them are read back, the earliest first."""
    causes: dict[str, list[Event]] = defaultdict(list)
    for e in live:
        if e.role == "cause":
            causes[e.file].append(e)
    said = {(e.file, e.line) for e in live if e.role != "context"}
    heads = []
    for e in live:
        if e.index < 0 or "traceback-start" not in marks(kb, e.signature):
            continue
        end = e.line + TRACEBACK_LINES
        # a cause of its rank after it: most likely its own exception line
        if any(e.line < m.line <= end and m.rank in (None, e.rank) for m in causes[e.file]):
            continue
        heads.append(e)
    heads.sort(key=lambda e: (e.t if e.t is not None else math.inf, e.file, e.line))
    out = [
        Incident([e], e, e.rank, e.host, TIER_OPEN, e.t, {}) for e in heads[:UNMATCHED_TRACEBACKS]
    ]
    _exception_lines(out, table, reader, kb)
    # an exception line a pattern read (a symptom's) is a candidate already
    return [
        c
        for c in out
        if c.head is not None
        and c.head.signature == UNCAUGHT
        and (c.head.file, c.head.line) not in said
    ]


def _record_starts(cands: Sequence[Incident], table: pa.Table, reader: Any) -> None:
    """The first line of the record a matched continuation line belongs to.

    A message wrapped over several lines (a terminal's width in a pasted log,
    an indented detail under its header) can match only on a continuation:
    the record, and so the incident, starts at the line it continues.  Read
    back over at most :data:`CONTINUATION_LINES` indented lines to the first
    one that is not; a blank line means there is no such record.
    """
    for c in cands[:64]:
        head = c.head
        if head is None or head.index < 0 or not _CONTINUATION.search(_body(head.text or "")):
            continue
        for n, text in reversed(_around(head, table, reader, CONTINUATION_LINES, 0)):
            if n >= head.line:
                continue
            if not text.strip():
                break
            if not _INDENTED.search(_body(text)):  # "(raylet) ..." may open a record
                c.extra["record_from"] = n
                break


#: lines read before the first timeout for what a silent suspect was doing
BUSY_LINES = 6
#: files (nodes) whose first timeout is read back for it, earliest first
BUSY_FILES = 4
#: the signature of those lines (no pattern matched them)
BUSY_LINE = "rank-busy-line"


def _busy_lines(
    rank: int,
    live: Sequence[Event],
    table: pa.Table,
    reader: Any,
    nodes: Mapping[str, tuple[dict[int, int], int | None]] | None = None,
) -> list[Event]:
    """What the rank the others waited for was doing when they began to wait,
    when it printed no line of its own that says so.

    A rank still busy with work of its own (validation, clustering,
    tokenising a dataset) while its peers time out in a collective prints
    no error: the lines just before the first timeout, when no other rank's
    prefix or matched line claims them, are its work.  Read back from the
    scan's input, never re-scanned; a blank line or another rank's line ends
    the run.  For rank 0, an input none of whose lines names a rank is its
    console (frameworks log on rank 0 alone, unprefixed): its last line.
    """
    waits = [
        e
        for e in live
        if _waits(e)  # a collective or the store
        and e.rank is not None
        and e.rank != rank
        and e.index >= 0
    ]
    if not waits:
        return []
    node_of = {e.file: _node(e) for e in live}

    def line_rank(label: str, text: str) -> int | None:
        # a worker's local prefix ([default0]:) on a node whose table maps it
        r = _line_rank(text)
        m = _LOCAL_ONLY[0].match(text)
        if nodes and r is not None and m and int(m.group("l")) == r:
            known, off = nodes.get(node_of.get(label, ""), ({}, None))
            return known.get(r, r + off if off is not None else r)
        return r

    ranked = {e.file for e in live if e.rank is not None}
    # the first wait of each file that holds one, earliest first: the busy
    # rank's lines sit before the waits of the file (node) it prints into
    firsts: dict[str, Event] = {}
    for e in sorted(waits, key=lambda e: (e.t if e.t is not None else math.inf, e.file, e.line)):
        firsts.setdefault(e.file, e)

    def inputs(first: Event) -> tuple[list[str], bool]:
        # the inputs no rank claims beside the wait's file; and whether the
        # unprefixed lines of a waiting rank's own file (and the output a
        # timeout cut) are its own work: when the job has such an input
        own = [x for x in reader.labels() if x not in ranked and x != first.file]
        mine = _file_ranks([first.file], live).get(first.file) not in (None, rank)
        return own, mine and bool(own)

    for first in list(firsts.values())[:BUSY_FILES]:
        claimed = {e.line for e in live if e.file == first.file and e.rank not in (None, rank)}
        errors = {e.line for e in live if e.file == first.file and e.role != "context"}
        _, theirs = inputs(first)
        got = [] if theirs else _around(first, table, reader, BUSY_LINES, 0)
        run: list[tuple[int, str]] = []
        for n, text in reversed([(n, x) for n, x in got if n < first.line]):
            r = line_rank(first.file, text)
            if not text.strip() or n in claimed or n in errors or r not in (None, rank):
                break
            if (
                run
                and r is None
                and not _INDENTED.search(_body(run[-1][1]))  # a detail continues its record
                and template(_body(text)) != template(_body(run[-1][1]))
            ):
                break  # unprefixed lines of another shape may be any rank's: the work is the last line's
            run.append((n, text))
        if run:
            return [_line_event(first.file, n, x, rank, BUSY_LINE) for n, x in reversed(run)]
    own, theirs = inputs(next(iter(firsts.values())))
    # a progress bar redrawn without a newline: the busy rank's last output
    # and a waiting rank's timeout share one line ("... 3/1000 [02:03<11:24:29,
    # 41.19s/it][E ProcessGroupNCCL.cpp:737] [Rank 4] Watchdog caught ...")
    for e in [] if theirs else sorted(waits, key=lambda e: (e.file, e.line)):
        m = _RECORD_START.search(e.text)
        if m is None:
            continue
        before = e.text[: m.start()]
        # a collector's prefix alone ("trainer-1  | [rank4]:...") is no output
        printed = _body(before)
        if len(printed) >= 8 and any(ch.isalpha() for ch in printed):
            if _line_rank(before) in (None, rank):
                return [_line_event(e.file, e.line, before, rank, BUSY_LINE)]
    if rank == 0:
        # frameworks log on rank 0 alone and without a rank prefix (Trainer,
        # torchtune, rank_zero_info): one input whose lines name no rank at
        # all is rank 0's console, and its last line what it was doing
        if len(own) == 1:
            last = reader.last_line(own[0], words=True, prefix=prefix_length)
            if last is not None and _line_rank(last[1]) is None:
                return [_line_event(own[0], last[0], last[1], rank, BUSY_LINE)]
    return []


_HAS_WORD = re.compile(r"[A-Za-z0-9]")

#: where a log record starts inside a line (a glog/c10d severity tag or a rank prefix)
_RECORD_START = re.compile(r"\[(?:[EWIF]\d{0,4}\s|[EWIF]\s?\d|rank\d+\]|default\d+\])")


def _single_input_end(reader: Any, events: Sequence[Event]) -> Event | None:
    """The last line of a job read from one input (a console, a paste) that
    has no progress line: where it stopped.  With no completion line and no
    error either, all that can be said is that it stops there, never that
    it finished (a hang while building a kernel, a paste cut short)."""
    if reader is None or len(reader.labels()) != 1:
        return None
    (label,) = reader.labels()
    got = reader.last_line(label, words=True, prefix=prefix_length)
    if got is None:
        return None
    line, text = got
    line, text = _frontier(reader, label, line, text)
    t = max((e.t for e in events if e.t is not None), default=None)
    return _line_event(label, line, text, _line_rank(text), t=t)


def _frontier(reader: Any, label: str, line: int, text: str) -> tuple[int, str]:
    """The furthest point an interleaved log reached: walking back from its
    last line over lines whose template (numbers and times masked) was
    already printed higher up, to the last line that was new.  Processes
    sharing one console print the same steps one after another; a lagging
    one repeating a step already passed ("cdb=None" after another process's
    "Initializing TorchBackend") is not where the job stopped."""
    got = _tail_at(reader, label, line)
    if got is None:
        return line, text
    lines, k = got
    shapes = [template(x.rstrip("\r")) if x.strip() else "" for x in lines[: k + 1]]
    first: dict[str, int] = {}
    for i, shape in enumerate(shapes):
        first.setdefault(shape, i)
    i = k
    while i > 0 and (not shapes[i] or first[shapes[i]] < i):
        i -= 1
    if i == k or not shapes[i] or not _HAS_WORD.search(lines[i]):
        return line, text
    return line - (k - i), lines[i].rstrip("\r")


def _line_event(
    label: str,
    line: int,
    text: str,
    rank: int | None,
    signature: str = LAST_LINE,
    *,
    host: str | None = None,
    t: float | None = None,
    severity: str = "info",
    phase: str = "unknown",
) -> Event:
    """A line the ranking read from a file itself (no table row: index -1)."""
    return Event(
        -1, signature, "context", severity, phase, label, line, text[:2000], rank, host, None, {}, t
    )


def _line_rank(text: str) -> int | None:
    """The rank a line's own prefix or wording names, if any."""
    return _line_ranks([text])[0]


def _line_ranks(texts: Sequence[str]) -> list[int | None]:
    """:func:`_line_rank` of many lines in one vectorised pass."""
    from ..facts.attribution import line_facts

    if not texts:
        return []
    return [int(r) if r >= 0 else None for r in line_facts(pa.array(texts, pa.string())).rank]


def _own_last_line(rank: int, live: Sequence[Event], reader: Any) -> Event | None:
    """The last line of ``rank``'s own output when it printed no error there.

    Only a file that is the rank's alone counts (console captures interleave
    ranks); a file where the rank printed a cause or symptom is left to its
    matched lines.  Of several (stdout and stderr) the one written last wins.
    """
    best: tuple[tuple[float, int], Event] | None = None
    for label, r in _file_ranks(reader.labels(), live).items():
        if r != rank:
            continue
        rows = [e for e in live if e.file == label]
        if any(e.role != "context" for e in rows):
            continue
        got = reader.last_line(label, words=True, prefix=prefix_length)
        if got is None:
            continue
        line, text = got
        if any(e.line >= line for e in rows):
            continue  # its last line matched: the matched rows already name it
        t = max((e.t for e in rows if e.t is not None), default=None)
        host = next((e.host for e in rows if e.host), None)
        first, repeats = _repeat_start(reader, label, line, text)
        ev = _line_event(label, first[0], first[1], rank, host=host, t=t)
        if repeats > 1:
            ev = replace(ev, fields={"repeated": str(repeats)})
        key = (t if t is not None else -math.inf, 1 if "err" in label.rsplit("/", 1)[-1] else 0)
        if best is None or key > best[0]:
            best = (key, ev)
    return best[1] if best else None


#: bytes of a file's end read for the run of lines alike that ends it
REPEAT_BYTES = 64 << 10


def _tail_at(reader: Any, label: str, line: int) -> tuple[list[str], int] | None:
    """The last :data:`REPEAT_BYTES` of an input as lines, and the index of
    its line number ``line`` among them (None when it is not in them)."""
    lines = reader.tail_lines(label, REPEAT_BYTES)
    end = reader.last_line(label)
    if end is None:
        return None
    k = len(lines) - 1 - (end[0] - line)
    return (lines, k) if 0 <= k < len(lines) else None


def _repeat_start(reader: Any, label: str, line: int, text: str) -> tuple[tuple[int, str], int]:
    """The first line of the run of lines alike (one template: numbers and
    times masked) that ends at ``line``, and the run's length.  A rank that
    loops on one message ("No tasks for now, maybe more later", a retry)
    entered that state at the run's first line, not its last."""
    got = _tail_at(reader, label, line)
    if got is None:
        return (line, text), 1
    lines, k = got
    want = template(lines[k].rstrip("\r"))
    j, i, alike = k, k - 1, 1
    # blank lines between them do not end the run (a paste's joined wraps
    # leave the lines they absorbed empty)
    while i >= 0:
        if lines[i].strip():
            if template(lines[i].rstrip("\r")) != want:
                break
            j, alike = i, alike + 1
        i -= 1
    return (line - (k - j), lines[j].rstrip("\r")), alike


def _last_marked(events: Sequence[Event], kb: Any, mark: str) -> Event | None:
    hits = [e for e in events if mark in marks(kb, e.signature)]
    return max(hits, key=lambda e: (e.t if e.t is not None else -math.inf, e.line), default=None)


def _last_progress(events: Sequence[Event]) -> Event | None:
    prog = [e for e in events if field_number(e.fields, STEP_FIELDS) is not None]
    if not prog:
        return None
    return max(prog, key=lambda e: (e.t if e.t is not None else -math.inf, e.line))


def candidate_features(
    cands: Sequence[Incident],
    live: Sequence[Event],
    kb: Any,
    stall: float | None,
    skew: Skew,
    known_ranks: set[int],
    novel: set[tuple[str, int]] | None = None,
) -> np.ndarray:
    """One row of :data:`denpex_fast.analysis.ranker.FEATURE_NAMES` per candidate."""
    from .ranker import FEATURE_NAMES

    col = {n: i for i, n in enumerate(FEATURE_NAMES)}
    X = np.zeros((len(cands), len(FEATURE_NAMES)))
    # ties in time break by file name: the same answer whatever order the files were read in
    file_rank = {f: i for i, f in enumerate(sorted({e.file for e in live}))}
    real = [i for i, c in enumerate(cands) if not c.extra.get("virtual")]
    # a file with no timestamp at all cannot be placed on the time axis: when
    # one holds a candidate, time order gives way to file order, then line order
    untimed = {cands[i].file for i in real} - {
        cands[i].file for i in real if cands[i].t is not None
    }
    # a file that only repeats what timed files printed (torchelastic's
    # error.json, a console copy) says nothing new about the order
    timed_sigs = {cands[i].head.signature for i in real if cands[i].t is not None}
    untimed = {
        f
        for f in untimed
        if any(cands[i].file == f and cands[i].head.signature not in timed_sigs for i in real)
    }
    if untimed:
        timed = sorted(real, key=lambda i: (file_rank.get(cands[i].file, 0), cands[i].lines[0]))
    else:
        when = _death_times(cands, real, live, kb)
        # a line with no time of its own was printed before the next timed
        # line of its file: it sorts no later than that line, never after all
        for i in real:
            c = cands[i]
            if i not in when and c.t is None:
                later = [
                    t
                    for j in real
                    if (t := cands[j].t) is not None
                    and cands[j].file == c.file
                    and cands[j].lines[0] > c.lines[0]
                ]
                if later:
                    when[i] = min(later)
        timed = sorted(
            real,
            key=lambda i: (
                when.get(i, cands[i].t if cands[i].t is not None else math.inf),
                file_rank.get(cands[i].file, 0),
                cands[i].head.line,  # a tie in time: the line that failed first
            ),
        )
    # what the job's symptoms, wrappers and later causes say caused them (a
    # failed save explains the truncated checkpoint a later load trips on)
    symptoms = {
        e.signature for e in live if e.role != "context" or "wrapper" in marks(kb, e.signature)
    }
    ranks_by_template: dict[str, set[int]] = defaultdict(set)
    for e in live:
        if e.role != "context" and e.rank is not None:
            ranks_by_template[template(e.text)].add(e.rank)
    n_ranks = len(known_ranks)
    seen_tier: set[int] = set()
    for pos, i in enumerate(timed):
        c = cands[i]
        X[i, col["first"]] = 1.0 if pos == 0 else 0.0
        X[i, col["earliness"]] = 1.0 / (1 + pos)
        if c.tier not in seen_tier:
            seen_tier.add(c.tier)
            X[i, col["first_of_tier"]] = 1.0
    tier_col = ("specific_cause", "own_symptom", "open_world", "wrapper", "collateral")
    for i, c in enumerate(cands):
        for feature in ("silent_suspect", "laggard"):
            X[i, col[feature]] = float(c.extra.get(feature, 0.0))
        X[i, col["has_rank"]] = 1.0 if c.rank is not None else 0.0
        h = c.head
        if c.extra.get("virtual") or h is None:
            continue
        X[i, col[tier_col[c.tier]]] = 1.0
        X[i, col["severity"]] = SEVERITY_WEIGHT.get(h.severity, 0) / 3
        if stall is not None and c.t is not None and c.t > stall + skew.bound:
            X[i, col["after_stall"]] = 1.0
        trig = set(triggers(kb, h.signature))
        others = symptoms - {h.signature}
        if (trig & others) or any(h.signature in caused_by(kb, s) for s in others):
            X[i, col["explains"]] = 1.0
        k = len(ranks_by_template.get(template(h.text), ()))
        if n_ranks >= 2 and c.rank is not None:
            X[i, col["peer_rarity"]] = 1.0 - max(0, k - 1) / (n_ranks - 1)
        else:
            X[i, col["peer_rarity"]] = 0.5
        codes = [x for m in c.members if (x := exit_status(m)) is not None]
        failed = [x for x in codes if x != 0 and x not in AGENT_SIGTERM_CODES]
        if failed:
            X[i, col["exit_nonzero"]] = 1.0
        if any(x != 1 for x in failed):
            X[i, col["own_exit"]] = 1.0
        X[i, col["rendezvous"]] = 1.0 if h.phase == "rendezvous" else 0.0
        if teardown(kb, h.signature):
            X[i, col["teardown"]] = 1.0
        if novel and any((m.file, m.line) in novel for m in c.members):
            X[i, col["novel"]] = 1.0
    return X


#: seconds a launcher may take to notice and report a worker's death
#: (torchrun polls its workers every few seconds, DeepSpeed's launcher each second)
LAUNCHER_LAG = 30.0


def _death_times(
    cands: Sequence[Incident], real: Sequence[int], live: Sequence[Event], kb: Any
) -> dict[int, float]:
    """When a launcher's record of a worker's death says the death happened.

    The record is printed when the launcher notices, after the peers may
    already have reported the lost connection the death caused.  A record of
    a rank's own failure (an exit code other than 1, or a signal it was not
    sent by the agent) is placed just before the earliest symptom on another
    rank that its death explains (a lost peer in a collective, or a
    ``caused_by`` edge), printed within :data:`LAUNCHER_LAG` before it.
    """
    out: dict[int, float] = {}
    for i in real:
        c = cands[i]
        # (a launcher line that does not say which rank died still explains them)
        if c.t is None or c.head is None or c.head.phase != "launcher":
            continue
        codes = [x for m in c.members if (x := exit_status(m)) is not None]
        if not any(x not in (0, 1) and x not in AGENT_SIGTERM_CODES for x in codes):
            continue
        sigs = {m.signature for m in c.members}
        earlier = [
            e.t
            for e in live
            if e.role == "symptom"
            and e.t is not None
            and e.rank is not None
            and e.rank != c.rank
            and c.t - LAUNCHER_LAG <= e.t < c.t
            and (e.phase == "communication" or sigs & set(caused_by(kb, e.signature)))
        ]
        if earlier:
            out[i] = min(earlier) - 1e-3
    return out


#: a logger record (``... [file.py:12] ``) whose message is a traceback's
#: header, frame, source line or caret marks
_LOGGED_FRAME = re.compile(
    # the source line under a frame is indented by exactly four blanks
    r'\] (?:\s*File "[^"]*", line \d+, in | {4}\S|\s*[\^~]+\s*$|Traceback \(most recent call last\):)'
)


# a command typed at a shell prompt and pasted with its output ("$ grep
# 'Error' *.log", "root@node:/ws# torchrun ..."): input, never output, so
# nothing matched in it (an error string given to grep, a flag's name) is a
# failure
_TYPED_COMMAND = re.compile(
    r"^\s*(?:\([\w.-]+\)\s+)?"  # a virtualenv or conda prompt prefix: "(base) "
    r"(?:\$|[\w.-]+@[\w.-]+(?::\S*)?[$#]|\[[\w.-]+@[\w.-]+[^\]\n]*\][$#])\s+\S"
)
# a coloured prompt's SGR codes, with or without their escape byte (lost in a paste)
_PROMPT_COLOUR = re.compile(r"\x1b\[[\d;]*m|\[\d[\d;]*m")


def _typed_command(text: str) -> bool:
    """Whether ``text`` is a command typed at a shell prompt."""
    # every prompt form ends in "$" or "#": most lines are out in one test
    if "$" not in text and "#" not in text:
        return False
    return _TYPED_COMMAND.match(_body(_PROMPT_COLOUR.sub("", text))) is not None


#: an exception line whose message goes on past its class (a worker's
#: traceback carried in the message of the exception re-raised for it)
_QUOTES_TRACEBACK = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt): \S")


def shadowed(events: Sequence[Event], kb: Any) -> set[int]:
    """Row indices of catch-all matches on lines another signature also matched,
    and of a family's common form (``family`` mark) on lines an entry that
    reads the line's own message also matched.

    Such a row adds nothing: the specific (or benign context) entry says
    more about the line.  A context entry of error severity (an exception's
    class, ``DistNetworkError: ...``) only wraps a message: when no specific
    entry read that message, the catch-all is what the line says.  Among
    several catch-alls on one line only the most severe is kept.  Every row
    on a command typed at a shell prompt (``$ grep 'Error' *.log``) is
    shadowed too: it is the user's input, not the job's output.
    """

    def catch_all(e: Event) -> bool:
        return "catch-all" in marks(kb, e.signature)

    def defers(e: Event) -> bool:  # an error's wrapper whose message no entry read
        # (a traceback's header is no wrapper: the exception line after it says
        # what failed; but a header quoted in an exception's message, "KeyError:
        # 'DataLoader worker(1) caught KeyError with message:\nTraceback (most
        # recent call last):...", is that exception line's text, not a header)
        if "traceback-start" in marks(kb, e.signature):
            return _QUOTES_TRACEBACK.match(_body(e.text or "")) is not None
        return e.role == "context" and e.severity in ("error", "fatal")

    def family(e: Event) -> bool:
        return "family" in marks(kb, e.signature)

    claimed = {(e.file, e.line) for e in events if not catch_all(e) and not defers(e)}
    # a family's common form yields to an entry that reads the line's own message
    named = {
        (e.file, e.line)
        for e in events
        if not catch_all(e) and not family(e) and e.role != "context"
    }
    # a traceback logged line by line at error level (vLLM's workers:
    # "ERROR <time> [executor.py:1000]   File ...") says "error" on every
    # frame; its exception line is what names the failure
    claimed |= {
        (e.file, e.line) for e in events if catch_all(e) and _LOGGED_FRAME.search(e.text or "")
    }
    # a progress line that reports a non-finite loss is that anomaly's first
    # trace: only another cause or symptom says more about it
    said = {(e.file, e.line) for e in events if not catch_all(e) and e.role != "context"}
    out = {
        e.index
        for e in events
        if catch_all(e) and (e.file, e.line) in (said if e.phase == "numerics" else claimed)
    }
    out |= {e.index for e in events if family(e) and (e.file, e.line) in named}
    out |= {e.index for e in events if _typed_command(e.text or "")}
    best: dict[tuple[str, int], Event] = {}
    for e in events:
        if catch_all(e) and e.index not in out:
            k = (e.file, e.line)
            b = best.get(k)
            if b is None or SEVERITY_WEIGHT.get(e.severity, 0) > SEVERITY_WEIGHT.get(b.severity, 0):
                if b is not None:
                    out.add(b.index)
                best[k] = e
            else:
                out.add(e.index)
    return out


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
