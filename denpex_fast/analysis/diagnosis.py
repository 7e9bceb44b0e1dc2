"""Diagnose a failed distributed job: which rank and line failed first, what
was only a consequence, what to change, and how to prove the change worked.

    >>> import denpex_fast as dx
    >>> d = dx.diagnose("job/")               # files, directories, .gz/.zst, "-"
    >>> d.initiating.signature, d.initiating.rank, d.fix
    >>> d.to_dict()                           # JSON, schema "denpex.diagnosis/1"

Flow: sources -> scanner (match table) -> attribution (rank, host, ts) ->
causal ranking (:mod:`denpex_fast.analysis.causal`) -> this module (collateral,
competing hypotheses, fix lookup, rank fates) -> report renderers.

This module is long because it is the one assembly point of a diagnosis (entry
points, the Diagnosis object and its JSON, collateral, hypotheses, fix lookup,
rank fates); each part is short and only meaningful together.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..schema import RANK_FATE_SCHEMA, file_names
from .causal import (
    EXIT_FIELDS,
    LAST_ENQUEUED_FIELDS,
    LAST_LINE,
    SEQ_FIELDS,
    SIGNAL_FIELDS,
    STEP_FIELDS,
    Event,
    Ranking,
    field_number,
    rank_events,
    shadowed,
)
from .incidents import marks

log = logging.getLogger(__name__)

SCHEMA = "denpex.diagnosis/1"

SIGNALS = {
    1: "SIGHUP",
    2: "SIGINT",
    6: "SIGABRT",
    7: "SIGBUS",
    9: "SIGKILL",
    11: "SIGSEGV",
    15: "SIGTERM",
}
#: context rows kept per (file, signature) run before attribution, at each end
PRE_ATTRIBUTION_CONTEXT_ROWS = 32
#: ... and in all, per signature, before attribution: a job of many small
#: files keeps fewer rows of each file (never fewer than 2 at each end: the
#: first for clock skew, the last for where each file's progress stopped)
PRE_ATTRIBUTION_CONTEXT_BUDGET = 8192

#: the closed set of verdicts (``denpex.diagnosis/1``)
VERDICTS = ("failure", "suspect", "stopped", "incomplete", "no-failure-found")


@dataclass
class Collateral:
    """Consequences grouped by signature."""

    signature: str
    role: str
    count: int
    ranks: list[int]
    hosts: list[str]
    first: Event

    def to_dict(self) -> dict[str, Any]:
        return {
            "signature": self.signature,
            "role": self.role,
            "count": self.count,
            "ranks": self.ranks,
            "hosts": self.hosts,
            "first": self.first.to_dict(),
        }


@dataclass
class Hypothesis:
    """A look-alike failure with the evidence for and against it."""

    signature: str
    control: str
    evidence_for: list[str]
    evidence_against: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "signature": self.signature,
            "control": self.control,
            "evidence_for": self.evidence_for,
            "evidence_against": self.evidence_against,
        }


@dataclass
class Diagnosis:
    """The verdict on one job; ``to_dict()`` is the stable JSON form."""

    verdict: str  # one of VERDICTS
    initiating: Event | None
    confidence: float
    reasons: list[str]
    suspect_rank: int | None
    collateral: list[Collateral]
    competing: list[Hypothesis]
    fix: dict[str, Any] | None
    rank_fates: pa.Table
    table: pa.Table
    context: list[str] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    divergence: list[dict[str, Any]] = field(default_factory=list)
    score: float = 0.0  # the model's probability for the named candidate
    incident: list[dict[str, Any]] = field(default_factory=list)  # lines of the initiating incident
    stopped_after: Event | None = None  # verdict "stopped": the last progress line seen
    root: str | None = None  # the job directory diagnosed (reports show paths below it)
    resume: Any = (
        None  # denpex_fast.analysis.resume.Resume: where to resume, and whether it is safe
    )
    events: list[Event] = field(default_factory=list, repr=False)  # the ranked events (timeline)
    kb: Any = field(default=None, repr=False)
    # the ranking's candidates and their features (for evaluation and reports)
    candidates_incidents: list[Any] = field(default_factory=list, repr=False)
    ranking_features: Any = field(default=None, repr=False)
    excerpt: bool = field(default=False, repr=False)  # the input is a pasted excerpt
    initiating_incident: Any = field(default=None, repr=False)
    # denpex_fast.io.readback.JobBytes: reads of the job's bytes (lines around a match)
    reader: Any = field(default=None, repr=False)

    def shown(self, text: str) -> str:
        """``text`` as a report shows it: the job root dropped from paths (paths
        relative to the job directory that was diagnosed) and control
        characters escaped (:func:`denpex_fast.textsafe.terminal_safe`)."""
        from ..textsafe import terminal_safe

        if self.root:
            text = text.replace(self.root.rstrip("/") + "/", "")
        return terminal_safe(text)

    def headline(self) -> str:
        """One line that says what the verdict means."""
        if self.verdict == "stopped" and self.stopped_after is not None:
            progress = "" if self.stopped_after.signature == LAST_LINE else "progress, then "
            return (
                f"stopped after {self.shown(self.stopped_after.where())}: {progress}the "
                "logs end with no error and no completion line"
            )
        if self.verdict == "incomplete":
            return "incomplete: some input could not be read whole; no all-clear is given"
        if self.verdict == "no-failure-found":
            return (
                "no failure found: no error-like line (or only lines the job went on "
                "past to its completion), and no stop before completion"
            )
        if self.initiating is None and self.suspect_rank is not None:
            return f"suspect: rank {self.suspect_rank} (it printed no failure of its own)"
        return self.verdict

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (schema ``denpex.diagnosis/1``; keys are stable)."""
        init = None
        if self.initiating is not None:
            init = {
                **self.initiating.to_dict(),
                "confidence": round(self.confidence, 3),
                "reasons": self.reasons,
                "incident": self.incident,
            }
        fix = self.fix or {}
        return {
            "schema": SCHEMA,
            "verdict": self.verdict,
            "initiating": init,
            "suspect_rank": self.suspect_rank,
            "stopped_after": self.stopped_after.to_dict() if self.stopped_after else None,
            "resume_from": self.resume.to_dict() if self.resume is not None else None,
            "confidence": round(self.confidence, 3),
            "score": round(self.score, 3),
            "reasons": self.reasons,
            "collateral": [c.to_dict() for c in self.collateral],
            "competing": [h.to_dict() for h in self.competing],
            "fix": fix.get("fix"),
            "root_cause": fix.get("root_cause"),
            "verify": fix.get("verify"),
            "checklist": fix.get("checklist", []),
            "fix_id": fix.get("id"),
            "fix_fields": fix.get("fields", {}),
            "job_values": fix.get("job_values", {}),
            "references": fix.get("references", []),
            "fix_overrides": fix.get("overrides"),
            "evidence": {
                "context": self.context,
                "notes": self.notes,
                "first_divergence": self.divergence,
            },
            "rank_fates": self.rank_fates.to_pylist(),
            "errors": self.errors,
            "stats": self.stats,
        }

    def summary_row(self) -> dict[str, Any]:
        """One flat row per job (for the batch index)."""
        i = self.initiating
        return {
            "initiating_signature": i.signature if i else None,
            "initiating_rank": i.rank if i else self.suspect_rank,
            "initiating_host": i.host if i else None,
            "initiating_file": i.file if i else None,
            "initiating_line": i.line if i else None,
            "initiating_ts": i.ts if i else None,
            "confidence": float(self.confidence),
            "fix_id": (self.fix or {}).get("id"),
            "verdict": self.verdict,
            "n_matches": self.table.num_rows,
            "n_causes": sum(1 for c in self.collateral if c.role == "cause") + (1 if i else 0),
            "n_symptoms": sum(1 for c in self.collateral if c.role == "symptom"),
            "n_ranks": self.rank_fates.num_rows,
        }


def diagnose(
    paths: Any,
    *,
    scanner: Any = None,
    threads: int | None = None,
    default_tz: str = "UTC",
    baseline: Any = None,
    divergence_per_file: int = 5,
) -> Diagnosis:
    """Scan ``paths`` (a job directory, files, ``-``) and diagnose the job.

    ``baseline``: paths of a healthy run of the same job (their template
    set is cached for the next comparison), or a template set from
    :func:`denpex_fast.analysis.baseline.template_set`; the report then
    lists, per file, the first lines whose template (numbers, hex ids, paths
    masked) the healthy run never printed, and a candidate holding such a
    line gets the ``novel`` feature.  Unreadable inputs do not stop the
    diagnosis; they are listed in ``Diagnosis.errors``.

    ``Diagnosis.verdict`` is one of:

    * ``failure``: the initiating incident is named (``initiating``) with a
      ``confidence`` at least the one from which named diagnoses were right
      95% of the time out of fold (so the verdict and the confidence shown
      beside it never disagree);
    * ``suspect``: a line or rank is named but the evidence is weaker (or the
      rank is suspected from absence: the one the others waited for, the one
      whose progress stopped first); ``initiating`` still holds the best line;
    * ``stopped``: the logs show progress, then end without an error and
      without a completion line (``stopped_after`` holds the last progress line);
    * ``incomplete``: some input could not be read whole and nothing failed in
      what was read: never an all-clear;
    * ``no-failure-found``: no error-like line (or only warnings followed by the
      job's completion line, listed in ``reasons``) and no stop before completion.

    ``Diagnosis.confidence`` is how often diagnoses like this one (tier,
    probability, margin, a pasted excerpt or a whole job) were right on logs
    the diagnosis had not seen: out of fold on the labelled corpus, and on
    first sight for the cases recorded in ``tests/corpus/arrivals.json``
    (``denpex_fast/ranking_model.json``); ``reasons`` start with the
    evidence (which line, which rank, the features that decided).
    """
    from ..engine.scanner import Scanner, default_scanner

    t0 = time.perf_counter()
    scanner = scanner or diagnosis_scanner(default_scanner())
    if not isinstance(scanner, Scanner):
        raise TypeError("scanner must be a denpex_fast.Scanner")
    from ..io.paste import spool_pastes
    from ..io.spool import needs_spool, relabel_result, spool

    items = [paths] if isinstance(paths, (str, bytes, os.PathLike)) else list(paths)
    # stdin and tar members are read once: keep a copy for the reads after the scan
    sp = spool(items) if needs_spool(items) else None
    # a pasted excerpt (indented, quoted, colour codes left in) is read cleaned
    pasted = spool_pastes(sp.paths if sp else items)
    to_scan = pasted.paths if pasted else sp.paths if sp else items
    result = scanner.run(to_scan, threads=threads, errors="collect")
    if pasted is not None:
        result = relabel_result(result, pasted)
    if sp is not None:
        result = relabel_result(result, sp)
    if result.table.num_columns and result.table.column(0).num_chunks > 64:
        # one batch per small file: later stages work per chunk
        result.table = result.table.combine_chunks()
    div = None
    errs: list[Any] = []
    if baseline is not None:
        from .baseline import first_divergence

        div = first_divergence(
            paths, baseline, per_file=divergence_per_file, errors=errs, threads=threads
        )
    novel = (
        set(zip(div.column("file").to_pylist(), div.column("line").to_pylist())) if div else None
    )
    # files whose every matched line is in the table need no tail read for progress
    import pyarrow.compute as pc

    c = result.counts
    capped = (
        set(
            pc.unique(
                c.filter(pc.greater(c.column("lines"), c.column("kept"))).column("file")
            ).to_pylist()
        )
        if c.num_rows
        else set()
    )
    from ..io.readback import JobBytes

    reader = JobBytes.from_scan(result)
    for copies in (sp, pasted):
        if copies is not None:
            copies.keep_alive_with(reader)
    d = diagnose_table(
        result.table,
        signatures=scanner.signature_set,
        default_tz=default_tz,
        novel=novel,
        tail_files=capped,
        reader=reader,
    )
    d.errors = [e.to_dict() for e in result.errors]
    if d.errors and d.verdict in ("no-failure-found", "stopped"):
        d.verdict = "incomplete"
        d.reasons.insert(
            0,
            f"{len(d.errors)} input(s) could not be read completely: "
            "no all-clear is given for a job not read whole",
        )
    if div is not None:
        d.divergence = div.to_pylist()
        d.errors += [e.to_dict() for e in errs if e.path not in {x["path"] for x in d.errors}]
    d.root = _job_root(paths)
    d.stats.update(
        {
            "bytes": result.stats["bytes"],
            "files": result.stats["files"],
            "matches": result.table.num_rows,
            "seconds": round(time.perf_counter() - t0, 3),
        }
    )
    return d


#: rows kept per file of each plain context signature (progress steps, loss
#: scale and warning lines: tens of thousands per rank in a long run).  The
#: ranking reads the first and last few of each rank's run
#: (:func:`denpex_fast.analysis.causal.thin_context`), and where a file had
#: more, its last progress line comes from its tail; marked context lines
#: (checkpoints, start, completion) keep the scanner's own cap.
CONTEXT_ROWS = 256


def diagnosis_scanner(scanner: Any) -> Any:
    """``scanner`` keeping at most :data:`CONTEXT_ROWS` rows per file of each
    unmarked context signature (sharing its compiled database), and fewer per
    file in a job of many files: about ``2 * PRE_ATTRIBUTION_CONTEXT_BUDGET``
    per signature in all (never fewer than 4 per file), which is what
    :func:`~denpex_fast.analysis.causal.thin_context` keeps of them anyway."""
    kb = scanner.signature_set
    if kb is None:
        return scanner
    caps = {}
    for sig in scanner.signature_ids:
        try:
            entry = kb[sig]
        except KeyError:
            continue
        if entry.role == "context" and not entry.marks:
            caps[sig] = min(CONTEXT_ROWS, scanner.options.max_rows_per_sig)
    # a job of many files keeps about what thin_context keeps of them
    return (
        scanner.with_row_caps(caps, job_rows=2 * PRE_ATTRIBUTION_CONTEXT_BUDGET)
        if caps
        else scanner
    )


def _job_root(paths: Any) -> str | None:
    """The one directory a diagnosis was asked for, if it was one."""
    if isinstance(paths, (list, tuple)) and len(paths) == 1:
        paths = paths[0]
    if isinstance(paths, (str, os.PathLike)) and os.path.isdir(paths):
        return os.fspath(paths)
    return None


def diagnose_table(
    table: pa.Table,
    *,
    signatures: Any = None,
    default_tz: str = "UTC",
    attributed: bool | None = None,
    novel: set[tuple[str, int]] | None = None,
    locations: Mapping[str, str] | None = None,
    tail_files: set[str] | None = None,
    reader: Any = None,
) -> Diagnosis:
    """Diagnose from an existing match table (attributed or not).

    ``novel``: (file, line) of lines a healthy baseline never printed; a
    candidate holding one gets the ``novel`` feature.  ``locations``: where
    to read back a file whose ``file`` label is not its path (labels
    relative to a job), so the answer does not depend on the working directory.
    ``tail_files``: the files whose tails are read for each rank's last step
    (default: all; :func:`diagnose` passes only those whose rows were capped,
    the others' step lines are all in the table).  ``reader``: the
    :class:`denpex_fast.io.readback.JobBytes` of the scan (default: one that
    resolves labels through ``locations``, else as paths); every later read
    of the job's bytes goes through it.
    """
    from ..io.readback import JobBytes
    from ..kb.signatures import load_signatures

    if reader is None:
        reader = JobBytes(locations=locations)

    kb = signatures if signatures is not None else load_signatures()
    with reader.keep_open():  # one descriptor per file for all the stages
        notes: list[str] = []
        if attributed is None:
            attributed = table.num_rows > 0 and (
                table.column("rank").null_count < table.num_rows
                or table.column("ts").null_count < table.num_rows
            )
        if not attributed and table.num_rows:
            from ..facts.attribution import attribute
            from .causal import thin_context

            # context floods (step lines) cost attribution time and memory; the
            # ranking keeps only the first and last rows per rank of each run
            files = max(1, len(file_names(table)))
            keep = max(
                2, min(PRE_ATTRIBUTION_CONTEXT_ROWS, PRE_ATTRIBUTION_CONTEXT_BUDGET // files)
            )
            table = thin_context(table, kb, keep=keep)

            t0 = time.perf_counter()
            att = attribute(table, default_tz=default_tz, locations=locations, reader=reader)
            table, notes = att.table, list(att.notes)
            log.info("attributed %d rows in %.2f s", table.num_rows, time.perf_counter() - t0)
        t0 = time.perf_counter()
        progress = _progress(table, reader, tail_files)
        ranking = rank_events(table, kb, progress=progress, novel=novel, reader=reader)
        d = _assemble(ranking, table, kb, notes)
        log.info(
            "ranked %d candidate(s) in %.2f s: %s",
            len(ranking.incidents),
            time.perf_counter() - t0,
            d.verdict,
        )
        d.reader = reader
        if progress:
            d.rank_fates = _with_progress(d.rank_fates, progress)
    return d


def _progress(table: pa.Table, reader: Any, tail_files: set[str] | None = None) -> dict[int, int]:
    """Last step per rank from the tails of the job's plain files."""
    from .progress import last_steps

    names = [n for n in file_names(table) if tail_files is None or n in tail_files]
    if not names:
        return {}
    timed = table.select(["file", "ts"]).filter(table.column("ts").is_valid())
    # the file column's chunks may carry different dictionaries (an index's job)
    timed = pa.table({"file": timed.column("file").cast(pa.string()), "ts": timed.column("ts")})
    per_file = timed.group_by("file").aggregate([("ts", "max")])
    latest = dict(
        zip(
            per_file.column("file").to_pylist(),
            per_file.column("ts_max").cast(pa.int64()).to_pylist(),
        )
    )
    return last_steps(names, reader=reader, latest=latest)


def _with_progress(fates: pa.Table, progress: dict[int, int]) -> pa.Table:
    rows = {r["rank"]: r for r in fates.to_pylist()}
    for rank, step in progress.items():
        row = rows.setdefault(rank, {f.name: None for f in RANK_FATE_SCHEMA} | {"rank": rank})
        row["last_step"] = max(step, row["last_step"] or 0)
    return pa.Table.from_pylist([rows[k] for k in sorted(rows)], schema=RANK_FATE_SCHEMA)


def _assemble(r: Ranking, table: pa.Table, kb: Any, notes: list[str]) -> Diagnosis:
    first = r.initiating
    hidden = shadowed(r.events, kb)
    events = [e for e in r.events if e.index not in hidden]
    inc = r.incident
    own = {id(m) for m in inc.members} if inc is not None else set()
    collateral = _collateral(events, own, first.signature if first is not None else None)
    competing = _competing(r, kb)
    fix = _fix(first, kb, events)
    context = [f"{e.where()}: {e.text}" for e in r.events if e.role == "context"][:20]
    d = Diagnosis(
        r.verdict,
        first,
        r.confidence,
        r.reasons,
        r.suspect_rank,
        collateral,
        competing,
        fix,
        rank_fates(events, kb),
        table,
        context=context,
        stats={"matches": table.num_rows},
        notes=notes,
    )
    d.score = r.probability
    d.stopped_after = r.stopped_after
    d.events, d.kb = events, kb
    from .resume import resume_point

    if first is not None or r.stopped_after is not None or r.suspect_rank is not None:
        cut = inc.t if inc is not None else None
        d.resume = resume_point(
            r.events,
            kb,
            before=first if cut is None else None,
            before_t=cut
            if cut is not None
            else (r.stopped_after.t if r.stopped_after is not None else None),
            suspect_rank=r.suspect_rank,
        )
    d.candidates_incidents = list(r.incidents)
    d.ranking_features = r.features
    d.excerpt = r.excerpt
    d.initiating_incident = inc
    if inc is not None:
        d.incident = [
            {"file": m.file, "line": m.line, "signature": m.signature} for m in inc.members
        ]
    return d


def _collateral(events: Iterable[Event], own: set[int], first_sig: str | None) -> list[Collateral]:
    """Consequences by signature; the initiating incident's own lines and
    repeated prints of the initiating signature are folded into it."""
    groups: dict[str, list[Event]] = defaultdict(list)
    for e in events:
        if id(e) in own or e.role == "context" or e.signature == first_sig:
            continue
        groups[e.signature].append(e)
    out = []
    for sig, evs in groups.items():
        evs.sort(key=lambda e: (e.t if e.t is not None else float("inf"), e.file, e.line))
        out.append(
            Collateral(
                sig,
                evs[0].role,
                len(evs),
                sorted({e.rank for e in evs if e.rank is not None}),
                sorted({e.host for e in evs if e.host is not None}),
                evs[0],
            )
        )
    out.sort(key=lambda c: (c.role != "symptom", -c.count, c.signature))
    return out


def _competing(r: Ranking, kb: Any) -> list[Hypothesis]:
    seen = {e.signature for e in r.events}
    out: list[Hypothesis] = []
    if r.initiating is not None:
        try:
            sig = kb[r.initiating.signature]
        except KeyError:
            sig = None
        for cid, control in sig.competing if sig else ():
            present = cid in seen
            out.append(
                Hypothesis(
                    cid,
                    control,
                    [f"{cid} was also matched in this job"] if present else [],
                    [] if present else [f"no line matched {cid}"],
                )
            )
    first_sig = r.initiating.signature if r.initiating is not None else None
    for c in r.candidates[:5]:
        if c.signature == first_sig or any(h.signature == c.signature for h in out):
            continue
        against = ["it came later than the initiating event"]
        if r.initiating is not None and c.t is None:
            against = ["it has no timestamp to order it; it appears later in the logs"]
        try:
            control = "; ".join(kb[c.signature].checklist[:1])
        except (KeyError, IndexError):
            control = ""
        out.append(
            Hypothesis(
                c.signature,
                control,
                [f"matched at {c.where()}" + (f" on rank {c.rank}" if c.rank is not None else "")],
                against,
            )
        )
    return out


def _fix(first: Event | None, kb: Any, events: Iterable[Event] = ()) -> dict[str, Any] | None:
    if first is None:
        return None
    try:
        sig = kb[first.signature]
    except KeyError:
        # a silent rank's last line, read back: the fix is that of what the
        # others reported while they waited for it (its own line says where it stopped)
        waits = [
            e
            for e in events
            if e.role == "symptom"
            and e.phase in ("rendezvous", "communication")
            and e.rank != first.rank
            and e.signature in kb
            and "catch-all" not in kb[e.signature].marks
        ]
        if not waits:
            return None
        wait = min(waits, key=lambda e: (e.t if e.t is not None else float("inf"), e.line))
        sig = kb[wait.signature]
        return {
            "id": sig.id,
            "title": sig.title,
            "root_cause": sig.root_cause,
            "fix": sig.fix,
            "verify": verify_command(sig.verify, wait.file),
            "checklist": list(sig.checklist),
            "fields": dict(wait.fields),
            "job_values": _job_values(sig.fix, events),
            "references": list(sig.references),
            "source": sig.source,
            "overrides": sig.overrides or None,
        }
    return {
        "id": sig.id,
        "title": sig.title,
        "root_cause": sig.root_cause,
        "fix": sig.fix,
        "verify": verify_command(sig.verify, first.file),
        "checklist": list(sig.checklist),
        "fields": dict(first.fields),
        "job_values": _job_values(sig.fix, events),
        "references": list(sig.references),
        "source": sig.source,
        "overrides": sig.overrides or None,
    }


_LOG_PLACEHOLDER = re.compile(r"<the log(?: named in the report)?>|(?<![\w./-])job\.log(?![\w.-])")


def verify_command(template: str, file: str) -> str:
    """The knowledge base's verify step with its placeholder log (``job.log``,
    ``<the log named in the report>``) replaced by the file that failed,
    quoted for the shell."""
    import shlex

    from ..io.sources import path_from_display

    try:
        shown = os.fsdecode(path_from_display(file))
    except (ValueError, TypeError):
        shown = file
    return _LOG_PLACEHOLDER.sub(lambda _: shlex.quote(shown), template)


def _job_values(fix_text: str, events: Iterable[Event]) -> dict[str, str]:
    """Values from the job's context lines (config dumps) that the fix talks
    about, e.g. the configured ``reduce_bucket_size`` for a bucket overflow."""
    text = fix_text.lower()
    out: dict[str, str] = {}
    for e in events:
        if e.role != "context":
            continue
        for name, value in e.fields.items():
            if name not in out and (name.lower() in text or name.lower().replace("_", " ") in text):
                out[name] = value
    return out


def rank_fates(events: Iterable[Event], kb: Any = None) -> pa.Table:
    """One row per rank: first error, exit code/signal, teardown, progress."""
    rows: dict[int, dict[str, Any]] = {}
    for e in sorted(
        events, key=lambda e: (e.t if e.t is not None else float("inf"), e.file, e.line)
    ):
        if e.rank is None:
            continue
        row = rows.setdefault(
            e.rank,
            {
                "rank": e.rank,
                "host": e.host,
                "first_error_signature": None,
                "first_error_file": None,
                "first_error_line": None,
                "exit_code": None,
                "signal": None,
                "torn_down_by": None,
                "last_step": None,
                "last_collective_seq": None,
            },
        )
        if row["host"] is None:
            row["host"] = e.host
        if (
            row["first_error_signature"] is None
            and e.role in ("cause", "symptom")
            and e.severity in ("fatal", "error")
        ):
            row.update(
                first_error_signature=e.signature, first_error_file=e.file, first_error_line=e.line
            )
        code = field_number(e.fields, EXIT_FIELDS)
        if code is not None:
            row["exit_code"] = int(code)
            if code < 0:
                row["signal"] = SIGNALS.get(int(-code), f"signal {int(-code)}")
        sig_name = e.fields.get(SIGNAL_FIELDS[0])
        if sig_name:
            row["signal"] = (
                sig_name if not sig_name.isdigit() else SIGNALS.get(int(sig_name), sig_name)
            )
        m = marks(kb, e.signature)
        if "agent-teardown" in m:
            row["torn_down_by"] = "agent"
        elif "scheduler-teardown" in m:
            row["torn_down_by"] = "scheduler"
        step = field_number(e.fields, STEP_FIELDS)
        if step is not None:
            row["last_step"] = max(int(step), row["last_step"] or 0)
        seq = field_number(e.fields, LAST_ENQUEUED_FIELDS) or field_number(e.fields, SEQ_FIELDS)
        if seq is not None:
            row["last_collective_seq"] = max(int(seq), row["last_collective_seq"] or 0)
    return pa.Table.from_pylist([rows[k] for k in sorted(rows)], schema=RANK_FATE_SCHEMA)
