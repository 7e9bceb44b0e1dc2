"""Evaluate the diagnosis on labelled corpora, honestly.

A corpus is a directory of cases; a case is a directory with the logs and a
``truth.json`` (schema ``denpex.truth/1``: ``initiating`` with ``rank``,
``file`` (relative to the case), ``line``, ``text``; ``healthy``;
optionally ``expected_verdict``)::

    >>> from corpus_eval import evaluate
    >>> report = evaluate(["tests/corpus/cases", "tests/corpus/public"])
    >>> report.summary("dev")["top1"]

A failed case is **right** only when the named line is the truth's line (or
any line of the named incident, or the same text printed in another file:
torchrun's console repeats each rank's lines) **and** the named rank is the
truth's rank (when the truth knows it).  A healthy case is right when the
verdict is ``no-failure-found``; a case whose truth expects ``stopped`` when
the verdict is ``stopped``.  A failed case whose logs hold no error line at
all (a hang) may be answered ``stopped`` after a line: that line is scored
as the named one.  A failed case reported as ``no-failure-found``
is *called healthy*; a named line from the truth's downstream list is a
*victim blamed*.

**Partitions.**  ``blind`` cases (:func:`partition`, rule frozen in
``tests/corpus/partition.json``) are never used to fit anything: the
shipped ranking model is fitted on ``dev`` only.  ``cross_validate`` refits
the model on folds grouped by source thread (public cases) or generator
fault (generated cases), so a case is always scored by weights fitted
without its group.

``python -m corpus_eval --fit CORPUS...`` refits the shipped model
(``denpex_fast/ranking_model.json``) on the dev partition, with its
calibration and ``failure``/``suspect`` threshold taken out of fold
(``--fit-confidence``: the confidence model alone).

**First sight.**  ``tests/corpus/arrivals.json`` records, for cases added
since it was started, the diagnosis each got when it arrived, before
anything was changed for it.  Cross-validation cannot remove the rules and
patterns written while a case was studied; the first diagnosis had none
of them, so the confidence model learns from it where it exists.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

FAILED_VERDICTS = ("failure", "suspect")


@dataclass
class CaseResult:
    """One case: what the truth says and what the diagnosis said."""

    case: str
    healthy: bool
    truth_rank: int | None
    truth_where: str | None
    verdict: str
    rank: int | None
    where: str | None
    signature: str | None
    confidence: float
    line_hit: bool
    rank_hit: bool
    right: bool
    error: str | None = None
    score: float = 0.0
    failure_class: str = ""
    downstream_blamed: bool = False  # the named line is one of the truth's consequences
    launcher_rank: int | None = None  # torchrun's "Root Cause (first observed failure)" rank
    expected: str = "failure"  # failure | no-failure-found | stopped
    group: str = ""  # cross-validation group (source thread / generator fault)
    partition: str = "dev"  # dev | blind | held-out
    grep_right: bool = False  # the first line of a plain error grep is right
    X: Any = field(default=None, repr=False)  # candidate features (ranker.FEATURE_NAMES)
    labels: Any = field(default=None, repr=False)  # which candidates name the truth
    blame: Any = field(default=None, repr=False)  # which candidates are downstream lines
    excerpt: bool = False  # the input holds no progress or start line (a pasted excerpt)
    arrival: dict[str, Any] | None = None  # its first diagnosis (tests/corpus/arrivals.json)

    @property
    def first_sight_right(self) -> bool | None:
        """Whether the diagnosis was right when the case arrived, if recorded."""
        return None if self.arrival is None else bool(self.arrival["right"])

    @property
    def called_healthy(self) -> bool:
        return self.expected != "no-failure-found" and self.verdict == "no-failure-found"

    def to_dict(self) -> dict[str, Any]:
        return {
            k: v for k, v in self.__dict__.items() if k not in ("X", "labels", "blame", "arrival")
        }


@dataclass
class EvalReport:
    """All case results with summary figures."""

    results: list[CaseResult] = field(default_factory=list)

    def subset(self, partition: str | None) -> list[CaseResult]:
        return [r for r in self.results if partition in (None, r.partition)]

    def summary(
        self,
        partition: str | None = None,
        outcome: dict[str, tuple[bool, bool, bool]] | None = None,
    ) -> dict[str, Any]:
        """Figures over one partition (``None``: all).  ``outcome`` overrides
        (right, blamed, called healthy) per case, as cross-validation gives."""
        rs = self.subset(partition)

        def o(r: CaseResult) -> tuple[bool, bool, bool]:
            return (
                outcome[r.case]
                if outcome and r.case in outcome
                else (r.right, r.downstream_blamed, r.called_healthy)
            )

        failed = [r for r in rs if r.expected == "failure"]
        healthy = [r for r in rs if r.expected == "no-failure-found"]
        stopped = [r for r in rs if r.expected == "stopped"]
        return {
            "cases": len(rs),
            "failed_cases": len(failed),
            "healthy_cases": len(healthy),
            "stopped_cases": len(stopped),
            "top1": _ratio(sum(o(r)[0] for r in failed), len(failed)),
            "top1_n": sum(o(r)[0] for r in failed),
            "victims_blamed": sum(o(r)[1] for r in failed),
            "called_healthy": sum(o(r)[2] for r in failed + stopped),
            "healthy_quiet": _ratio(sum(o(r)[0] for r in healthy), len(healthy)),
            "stopped_right": _ratio(sum(o(r)[0] for r in stopped), len(stopped)),
            "grep_first_top1": _ratio(sum(r.grep_right for r in failed), len(failed)),
            "errors": sum(1 for r in rs if r.error),
        }

    def reliability(
        self,
        partition: str | None = None,
        edges: Sequence[float] = (0.0, 0.35, 0.5, 0.65, 0.8, 0.9, 1.01),
        conf: dict[str, float] | None = None,
        outcome: dict[str, tuple[bool, bool, bool]] | None = None,
    ) -> list[dict[str, Any]]:
        """Predicted confidence vs observed accuracy per bucket (named failed cases)."""
        out = []
        named = [
            r
            for r in self.subset(partition)
            if r.expected == "failure" and r.verdict in FAILED_VERDICTS
        ]
        for lo, hi in zip(edges, edges[1:]):
            b = [r for r in named if lo <= (conf or {}).get(r.case, r.confidence) < hi]
            ok = sum((outcome[r.case][0] if outcome and r.case in outcome else r.right) for r in b)
            pred = sum((conf or {}).get(r.case, r.confidence) for r in b)
            out.append(
                {
                    "confidence": f"[{lo:.2f}, {min(hi, 1.0):.2f})",
                    "cases": len(b),
                    "predicted": round(pred / len(b), 3) if b else None,
                    "observed": round(ok / len(b), 3) if b else None,
                }
            )
        return out


_PREFIX = re.compile(r"^(?:\[(?:default|rank)\d+\]:)+\s*")


def _bare(text: str) -> str:
    """A line without torchrun's rank prefixes: the console and the per-rank
    file print the same line, and either names it."""
    return _PREFIX.sub("", (text or "").strip())


def _ratio(a: float, b: int) -> float:
    return round(a / b, 3) if b else float("nan")


# ---------------------------------------------------------------- partitions

PARTITION_FILE = "partition.json"
ARRIVALS_FILE = "arrivals.json"


def arrival(case: Path) -> dict[str, Any] | None:
    """The case's first diagnosis, from ``arrivals.json`` in its corpus root:
    how the code of that day scored it before anything was changed for it."""
    for root in (case.parent, case.parent.parent):
        f = root / ARRIVALS_FILE
        if f.is_file():
            entry = json.loads(f.read_text())["cases"].get(case.name)
            return dict(entry) if entry else None
    return None


def partition(case: Path) -> str:
    """``dev``, ``blind`` or ``held-out``, by the frozen rule in the corpus root's
    ``partition.json``: public cases numbered ``blind_public_from`` and above
    (gathered after the rule was frozen) are ``blind``, up to
    ``dev_public_from`` (cases the developers gathered while working, dev); every case of a
    directory named in ``held_out_dirs`` (a family of real jobs generated once
    with a script and launchers of its own, then frozen) is ``held-out``.
    Only ``dev`` cases are ever fitted on."""
    for root in (case.parent, case.parent.parent):
        f = root / PARTITION_FILE
        if f.is_file():
            rule = json.loads(f.read_text())
            if case.parent.name in rule.get("held_out_dirs", ()):
                return "held-out"
            m = re.match(r"(\d+)-", case.name)
            if (
                case.parent.name == "public"
                and m
                and int(rule["blind_public_from"])
                <= int(m.group(1))
                < int(rule.get("dev_public_from", 10**9))
            ):
                return "blind"
            return "dev"
    return "dev"


def _group(case: Path, truth: dict[str, Any]) -> str:
    src = truth.get("source")
    if isinstance(src, list) and src:
        m = re.match(r"https://github\.com/([^/]+/[^/]+)/(?:issues|pull|discussions)/(\d+)", src[0])
        return m.group(0) if m else str(src[0])
    return f"generated:{truth.get('fault') or case.name}"


# ---------------------------------------------------------------- one case

_ROOT_CAUSE = re.compile(rb"Root Cause \(first observed failure\):")
_RANK_LINE = re.compile(rb"^\s*rank\s*:\s*(\d+)", re.M)
_GREP = re.compile(rb"(?i)error|exception|timeout|failed")


def launcher_root_cause_rank(case: Path) -> int | None:
    """The rank torchrun's error summary names as "Root Cause (first observed
    failure)" — what users read today — or None when no log has one."""
    for f in log_files(case):
        try:
            data = Path(f).read_bytes()
        except OSError:
            continue
        m = _ROOT_CAUSE.search(data)
        if m:
            r = _RANK_LINE.search(data, m.end(), m.end() + 2000)
            if r:
                return int(r.group(1))
    return None


def grep_first(case: Path) -> tuple[str, int, str, int | None] | None:
    """The first line of ``grep -i 'error|exception|timeout|failed'`` over
    the case's files (in name order), with the rank its prefix or path names:
    the anchor a user already has."""
    import pyarrow as pa

    from denpex_fast.facts.attribution import line_facts, path_facts

    for f in log_files(case):
        try:
            data = Path(f).read_bytes()
        except OSError:
            continue
        m = _GREP.search(data)
        if not m:
            continue
        start = data.rfind(b"\n", 0, m.start()) + 1
        end = data.find(b"\n", m.start())
        text = data[start : end if end >= 0 else len(data)].decode("utf-8", "replace").rstrip("\r")
        rank = int(line_facts(pa.array([text])).rank[0])
        if rank < 0:
            rank = path_facts(f).rank if path_facts(f).rank is not None else -1
        return (
            os.path.relpath(f, case),
            data.count(b"\n", 0, start) + 1,
            text,
            rank if rank >= 0 else None,
        )
    return None


def case_dirs(roots: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Every directory holding a truth.json under the roots (sorted)."""
    out: list[Path] = []
    for root in roots:
        root = Path(root)
        if (root / "truth.json").exists():
            out.append(root)
            continue
        out += sorted(p.parent for p in root.glob("*/truth.json"))
    return out


def log_files(case: Path) -> list[str]:
    """The case's log files (everything but truth.json)."""
    return sorted(str(p) for p in case.rglob("*") if p.is_file() and p.name != "truth.json")


def _expected(truth: dict[str, Any]) -> str:
    exp = truth.get("expected_verdict")
    if exp in ("stopped", "no-failure-found"):
        return str(exp)
    if truth.get("healthy"):
        return "no-failure-found"
    return "failure"


def evaluate_case(case: Path, scanner: Any = None) -> CaseResult:
    """Diagnose one case and compare with its truth."""
    from denpex_fast.analysis.diagnosis import diagnose

    truth = json.loads((case / "truth.json").read_text())
    init = truth.get("initiating") or {}
    sub = ""
    if not init and truth.get("initiating_signature"):  # incident write-up format: text, no line
        init = {"rank": truth.get("initiating_rank")}
        sub = str(truth["initiating_signature"])
    expected = _expected(truth)
    t_rank = init.get("rank")
    t_file, t_line = init.get("file"), init.get("line")
    t_where = f"{t_file}:{t_line}" if t_file and t_line else None
    t_text = _bare(init.get("text") or "")
    downstream = {
        _bare(x.get("text") or "") for x in truth.get("downstream") or [] if isinstance(x, dict)
    } - {""}
    downstream |= {_bare(x) for x in truth.get("downstream_signatures") or [] if isinstance(x, str)}
    base = {
        "failure_class": _failure_class(truth),
        "expected": expected,
        "group": _group(case, truth),
        "partition": partition(case),
        "arrival": arrival(case),
    }
    try:
        d = diagnose(log_files(case), scanner=scanner)
    except Exception as exc:  # a crash is a wrong answer, recorded with its reason
        return CaseResult(
            case.name,
            expected == "no-failure-found",
            t_rank,
            t_where,
            "error",
            None,
            None,
            None,
            0.0,
            False,
            False,
            False,
            f"{type(exc).__name__}: {exc}",
            **base,
        )

    def rel(f: str) -> str:
        return os.path.relpath(f, case)

    def hits(
        file: str | None,
        lines: Sequence[tuple[int, int]] | None,
        texts: Sequence[str],
        rank: int | None,
    ) -> tuple[bool, bool]:
        line_ok = False
        if sub:
            line_ok = any(sub in x for x in texts)  # the truth quotes the message, not a line
        elif t_where is None:
            line_ok = True  # the truth names a rank only
        elif file is not None and lines is not None:
            line_ok = (rel(file) == t_file and any(lo <= t_line <= hi for lo, hi in lines)) or (
                bool(t_text) and any(_bare(x) == t_text for x in texts)
            )
        rank_ok = t_rank is None or (rank is not None and rank == t_rank)
        return line_ok, rank_ok

    X = d.ranking_features
    labels, blame = [], []
    for inc in d.candidates_incidents:
        h = inc.head
        if h is None:
            lh, rh = hits(None, None, [], inc.rank)
            lh = t_where is None and not sub
        else:
            lh, rh = hits(h.file, inc.spans, [m.text for m in inc.members], inc.rank)
        labels.append(lh and rh)
        blame.append(h is not None and not lh and _bare(h.text) in downstream)
    i = d.initiating
    inc = d.initiating_incident
    rank = inc.rank if inc is not None else d.suspect_rank
    named_stop = False
    if i is None and d.verdict == "stopped" and d.stopped_after is not None:
        # a hang with no error line anywhere: "stopped after <line>" is the
        # answer such a log allows, and it names a line like any other
        i, named_stop = d.stopped_after, True
        rank = i.rank
    if named_stop and i is not None:
        line_hit, rank_hit = hits(i.file, [(i.line, i.line)], [i.text], rank)
    elif i is not None and inc is not None:
        line_hit, rank_hit = hits(i.file, inc.spans, [m.text for m in inc.members], rank)
    else:
        line_hit, rank_hit = (
            (t_where is None and not sub and d.suspect_rank is not None),
            (t_rank is not None and d.suspect_rank == t_rank),
        )
    if expected == "failure":
        right = (d.verdict in FAILED_VERDICTS or named_stop) and line_hit and rank_hit
    else:
        right = d.verdict == expected
    blamed = i is not None and not line_hit and _bare(i.text) in downstream
    g = grep_first(case)
    grep_ok = False
    if g is not None and expected == "failure":
        gl = (
            (t_where is None)
            or f"{g[0]}:{g[1]}" == t_where
            or (bool(t_text) and _bare(g[2]) == t_text)
        )
        grep_ok = gl and (t_rank is None or g[3] == t_rank)
    return CaseResult(
        case.name,
        expected == "no-failure-found",
        t_rank,
        t_where,
        d.verdict,
        rank,
        f"{rel(i.file)}:{i.line}" if i is not None else None,
        i.signature if i else None,
        float(d.confidence),
        line_hit,
        rank_hit,
        right,
        score=float(d.score),
        downstream_blamed=blamed,
        launcher_rank=launcher_root_cause_rank(case),
        grep_right=grep_ok,
        X=X,
        labels=np.array(labels, bool),
        blame=np.array(blame, bool),
        excerpt=bool(d.excerpt),
        **base,
    )


def _failure_class(truth: dict[str, Any]) -> str:
    if truth.get("healthy"):
        return "healthy"
    return str(truth.get("fault") or truth.get("failure_class") or "other")[:40]


def evaluate(roots: Iterable[str | os.PathLike[str]], scanner: Any = None) -> EvalReport:
    """Evaluate every case under ``roots`` with the shipped model."""
    from denpex_fast.analysis.diagnosis import diagnosis_scanner
    from denpex_fast.engine.scanner import Scanner

    # what `denpex diagnose` uses: fewer rows of the high-volume context lines
    scanner = scanner or diagnosis_scanner(Scanner())
    return EvalReport([evaluate_case(c, scanner) for c in case_dirs(roots)])


# ---------------------------------------------------------------- refitting


def _outcome(r: CaseResult, w: np.ndarray) -> tuple[bool, bool, bool, float, int | None]:
    """(right, blamed, called healthy, top probability, top index) of a case
    re-ranked with weights ``w`` (the verdict logic around the model is fixed)."""
    if r.X is None or not len(r.X):
        return r.right, r.downstream_blamed, r.called_healthy, 0.0, None
    from denpex_fast.analysis.ranker import probabilities

    s = r.X @ w
    top = int(np.argmax(s))
    p = float(probabilities(s)[top])
    if r.expected != "failure":
        return False, False, False, p, top
    return bool(r.labels[top]), bool(r.blame[top]), False, p, top


def _folds(groups: Sequence[str], k: int) -> dict[str, int]:
    uniq = sorted(set(groups), key=lambda g: hashlib.sha1(g.encode()).hexdigest())
    return {g: i % k for i, g in enumerate(uniq)}


def cross_validate(
    results: Sequence[CaseResult],
    k: int = 5,
    conf_features: dict[str, np.ndarray] | None = None,
    **fit_kw: Any,
) -> tuple[dict[str, tuple[bool, bool, bool]], dict[str, float]]:
    """Out-of-fold outcome and top probability per case, folds grouped by
    :attr:`CaseResult.group`; ``conf_features`` (when given) receives each
    failed case's :func:`~denpex_fast.analysis.ranker.confidence_features` under the
    weights of the folds that did not hold it."""
    from denpex_fast.analysis.ranker import confidence_features, fit

    fold = _folds([r.group for r in results], k)
    outcome: dict[str, tuple[bool, bool, bool]] = {}
    prob: dict[str, float] = {}
    for f in range(k):
        train = [
            (r.X, r.labels)
            for r in results
            if fold[r.group] != f and r.X is not None and r.expected == "failure"
        ]
        w = fit(train, **fit_kw)
        for r in results:
            if fold[r.group] == f:
                right, blamed, healthy, p, _ = _outcome(r, w)
                outcome[r.case] = (right, blamed, healthy)
                prob[r.case] = p
                if (
                    conf_features is not None
                    and r.expected == "failure"
                    and r.X is not None
                    and len(r.X)
                ):
                    conf_features[r.case] = confidence_features(r.X, w, r.excerpt)
    return outcome, prob


#: L2 strengths tried for the confidence model (chosen by out-of-fold log-loss)
CONFIDENCE_L2 = (0.1, 0.3, 1.0, 3.0)


def source_weights(results: Sequence[CaseResult]) -> dict[str, float]:
    """Per case, 1 / the number of cases of its kind (generated jobs, public
    pastes): the confidence model learns from both kinds equally, not from
    whichever the corpus holds more of."""
    kind = {r.case: r.group.startswith("generated:") for r in results}
    n = {k: sum(1 for v in kind.values() if v == k) for k in (True, False)}
    return {c: 1.0 / n[k] for c, k in kind.items()}


def fit_confidence_by_kind(
    cases: Sequence[CaseResult],
    feats: dict[str, np.ndarray],
    outcome: dict[str, tuple[bool, bool, bool]],
    l2: float,
) -> np.ndarray:
    """Confidence weights, one row for whole jobs and one for excerpts
    (:attr:`CaseResult.excerpt`): a generic line or a rank suspected from
    absence is strong evidence in a whole job, whose peers and progress
    check it, and weak in a paste."""
    from denpex_fast.analysis.ranker import fit_confidence

    rows = []
    for kind in (False, True):
        part = [r for r in cases if r.excerpt == kind]
        rows.append(
            fit_confidence(
                [feats[r.case] for r in part],
                [confidence_label(r, outcome) for r in part],
                l2=l2,
            )
        )
    return np.stack(rows)


def confidence_label(r: CaseResult, outcome: dict[str, tuple[bool, bool, bool]]) -> bool:
    """What the confidence model learns for a case: its first-sight outcome
    when recorded (how often a log nobody had seen was diagnosed right), else
    its out-of-fold outcome."""
    first = r.first_sight_right
    return outcome[r.case][0] if first is None else first


def confidence_cases(results: Sequence[CaseResult], feats: dict[str, Any]) -> list[CaseResult]:
    """The cases the confidence model learns from: generated jobs (their
    out-of-fold outcome) and cases with a first-sight outcome.  A public
    paste studied before first sights were recorded is left out: rules were
    written while it was read, and no fold can take them out again."""
    return [
        r
        for r in results
        if r.case in feats and (r.arrival is not None or r.group.startswith("generated:"))
    ]


def confidence_l2(
    results: Sequence[CaseResult],
    feats: dict[str, np.ndarray],
    outcome: dict[str, tuple[bool, bool, bool]],
    k: int = 5,
) -> float:
    """The L2 strength of :data:`CONFIDENCE_L2` whose out-of-fold confidences
    have the lowest log-loss."""
    named = confidence_cases(results, feats)
    wt = source_weights(named)

    def loss(l2: float) -> float:
        conf = oof_confidence(results, feats, outcome, k, l2=l2)
        p = np.clip([conf[r.case] for r in named], 1e-6, 1 - 1e-6)
        y = np.array([confidence_label(r, outcome) for r in named], float)
        c = np.array([wt[r.case] for r in named])
        return float(-(c @ (y * np.log(p) + (1 - y) * np.log(1 - p))) / c.sum()) if len(y) else 0.0

    return min(CONFIDENCE_L2, key=loss)


def oof_confidence(
    results: Sequence[CaseResult],
    feats: dict[str, np.ndarray],
    outcome: dict[str, tuple[bool, bool, bool]],
    k: int = 5,
    l2: float | None = None,
) -> dict[str, float]:
    """Each failed case's confidence from a confidence model fitted without its
    group (for the reliability table of cross-validation); ``l2``: the
    model's L2 strength (default: chosen by :func:`confidence_l2`)."""
    from denpex_fast.analysis.ranker import kind_weights, sigmoid

    if l2 is None:
        l2 = confidence_l2(results, feats, outcome, k)

    fold = _folds([r.group for r in results], k)
    named = confidence_cases(results, feats)
    out: dict[str, float] = {}
    for f in range(k):
        train = [r for r in named if fold[r.group] != f]
        cw = fit_confidence_by_kind(train, feats, outcome, l2)
        for r in results:
            if r.case in feats and fold[r.group] == f:
                out[r.case] = float(sigmoid(feats[r.case] @ kind_weights(cw, r.excerpt)))
    return out


def refit(report: EvalReport, k: int = 5, confidence_only: bool = False) -> dict[str, Any]:
    """The model fitted on the dev partition, calibrated and thresholded out
    of fold; ``confidence_only``: keep the shipped weights, threshold and
    calibration and refit the confidence model alone."""
    from denpex_fast.analysis.ranker import (
        FEATURE_NAMES,
        Model,
        bucket_accuracy,
        fit,
        isotonic_calibration,
        load_model,
        threshold_for_precision,
    )

    dev = report.subset("dev")
    w = fit([(r.X, r.labels) for r in dev if r.X is not None and r.expected == "failure"])
    feats: dict[str, np.ndarray] = {}
    outcome, prob = cross_validate(dev, k, conf_features=feats)
    pts = [
        (prob[r.case], outcome[r.case][0])
        for r in dev
        if r.expected == "failure" and r.X is not None and len(r.X)
    ]
    named = confidence_cases(dev, feats)
    l2 = confidence_l2(dev, feats, outcome, k)
    cw = fit_confidence_by_kind(named, feats, outcome, l2)
    # the logistic output mapped to the accuracy seen out of fold in its bucket
    oof = oof_confidence(dev, feats, outcome, k, l2=l2)
    labels = [(oof[r.case], confidence_label(r, outcome)) for r in named]
    buckets = isotonic_calibration(labels)
    # the verdict follows the confidence shown: "failure" from the calibrated
    # confidence at which named diagnoses were right 95% of the time out of fold
    shown = [(bucket_accuracy(buckets, p), ok) for p, ok in labels]
    conf_threshold = threshold_for_precision(shown, 0.95)
    if confidence_only:
        shipped = load_model()
        meta = dict(shipped.meta, confidence_l2=l2)
        return Model(
            shipped.weights,
            shipped.threshold,
            shipped.calibration,
            meta,
            cw,
            buckets,
            conf_threshold,
        ).to_json()
    model = Model(
        w,
        threshold_for_precision(pts, 0.95),
        isotonic_calibration(pts),
        {
            "fitted_on": "dev partition",
            "cases": len(dev),
            "groups": len({r.group for r in dev}),
            "folds": k,
            "features": len(FEATURE_NAMES),
            "confidence_l2": l2,
        },
        cw,
        buckets,
        conf_threshold,
    )
    return model.to_json()


def main(argv: list[str] | None = None) -> int:
    """``python -m corpus_eval [--fit] CORPUS...``"""
    import argparse

    ap = argparse.ArgumentParser(description="Evaluate the diagnosis on labelled corpora.")
    ap.add_argument("roots", nargs="+", help="corpus directories (cases with truth.json)")
    ap.add_argument(
        "--fit",
        action="store_true",
        help="refit denpex_fast/ranking_model.json on the dev partition",
    )
    ap.add_argument(
        "--fit-confidence",
        action="store_true",
        help="refit only the confidence model; the shipped weights stay",
    )
    ap.add_argument(
        "--show-blind",
        action="store_true",
        help="print blind cases one by one too (default: only their totals)",
    )
    a = ap.parse_args(argv)
    rep = evaluate(a.roots)
    for r in rep.results:
        if r.partition != "dev" and not a.show_blind:
            continue
        print(
            f"{'ok' if r.right else 'XX'} {r.case[:52]:52} {r.verdict:16} rank={r.rank} "
            f"{r.signature} {r.where} (truth rank={r.truth_rank} {r.truth_where}) p={r.score:.2f}"
            + (" VICTIM" if r.downstream_blamed else "")
        )
    for part in ("dev", "blind", "held-out"):
        print(part, json.dumps(rep.summary(part)))
    if a.fit or a.fit_confidence:
        doc = refit(rep, confidence_only=a.fit_confidence and not a.fit)
        out = Path(__file__).resolve().parent.parent / "denpex_fast" / "ranking_model.json"
        out.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
