"""The scored ranking model: features of each candidate incident, one weight table.

The initiating incident is the candidate with the highest score
``w . f``.  Its confidence comes from a second, small logistic model over
what makes a diagnosis trustworthy (the winner's tier, its softmax
probability and margin over the runner-up, whether it was suspected from
absence, whether the job knows ranks but the winner has none, whether the
input is a pasted excerpt), fitted on out-of-fold outcomes and on the
outcome each recorded case had when it first arrived, so it says how often
diagnoses like this one were right on logs nobody had studied.  Weights, the
calibration and the threshold below which a diagnosis is only ``suspect``
live in ``ranking_model.json``, fitted by
``python benchmarks/corpus_eval.py --fit`` with cross-validation grouped by
source thread / generator configuration (never in-sample)::

    >>> from denpex_fast.analysis.ranker import load_model
    >>> m = load_model()
    >>> m.score(features)          # one float per candidate
    >>> m.explain(features[0])     # [(feature, contribution), ...] biggest first

Every feature is in [0, 1] and says one thing about a candidate; the report
quotes each feature's contribution, so a person can see why a line won.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any

import numpy as np

#: name -> what it says (the report and the README quote these)
FEATURES: dict[str, str] = {
    "specific_cause": "a knowledge-base cause names the line",
    "own_symptom": "a rank's own fatal symptom (not a report of a peer's death)",
    "open_world": "an error-like line no specific entry knows",
    "wrapper": "a wrapper that repeats an error printed elsewhere",
    "collateral": "a symptom that reports another rank's failure (timeout, teardown)",
    "severity": "severity of the entry (fatal 1, error 2/3, warning 1/3)",
    "first": "the earliest candidate of the job after clock correction",
    "earliness": "1 / (1 + position in time order)",
    "first_of_tier": "the earliest candidate of its tier",
    "after_stall": "later than the moment the timeouts point back to",
    "explains": "its entry lists symptoms seen in the job (caused_by / triggers)",
    "peer_rarity": "printed by one rank or a minority, not by every rank",
    "has_rank": "the rank that printed it is known",
    "exit_nonzero": "a worker exit that was not the agent's own SIGTERM",
    "own_exit": "an exit of the process's own (a signal, or a code other than 1, which every "
    "rank that died of an exception shares)",
    "rendezvous": "a rendezvous / store failure (a node that never joined)",
    "teardown": "a teardown by the launcher's agent or the scheduler",
    "silent_suspect": "the rank the others waited for (never entered the collective)",
    "laggard": "the rank whose progress stopped first",
    "novel": "a line template the healthy baseline never printed",
}
FEATURE_NAMES = tuple(FEATURES)

# Starting weights (and the fallback when no fitted table ships): the order of
# evidence of the rule cascade this model replaces.
PRIOR: dict[str, float] = {
    "specific_cause": 3.0,
    "own_symptom": 2.0,
    "open_world": 1.5,
    "wrapper": 0.5,
    "collateral": -1.0,
    "severity": 0.5,
    "first": 1.5,
    "earliness": 1.0,
    "first_of_tier": 1.0,
    "after_stall": -1.5,
    "explains": 1.0,
    "peer_rarity": 1.0,
    "has_rank": 0.5,
    "exit_nonzero": 0.5,
    "own_exit": 0.5,
    "rendezvous": 0.0,
    "teardown": -2.0,
    "silent_suspect": 3.0,
    "laggard": 1.5,
    "novel": 0.5,
}


@dataclass
class Model:
    """Weights, calibration and the ``failure``/``suspect`` threshold."""

    weights: np.ndarray
    threshold: float = 0.0  # softmax probability below which the verdict is "suspect"
    calibration: list[dict[str, float]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    # logistic weights over CONFIDENCE_FEATURES, one row for whole jobs and one
    # for excerpts (a 1-D array: one for both; None: the bucket calibration of p)
    confidence_weights: np.ndarray | None = None
    # accuracy per bucket of the logistic output, measured out of fold (monotone)
    confidence_calibration: list[dict[str, float]] = field(default_factory=list)
    # the confidence from which named diagnoses were right 95% of the time out
    # of fold: the verdict is "failure" from there (None: ``threshold`` on p decides)
    confidence_threshold: float | None = None

    def verdict_failure(self, p_top: float, confidence: float) -> bool:
        """Whether a named diagnosis is a ``failure`` rather than a ``suspect``:
        decided by the confidence shown beside it when one is calibrated, so
        the two never disagree."""
        if self.confidence_threshold is not None:
            return confidence >= self.confidence_threshold
        return p_top >= self.threshold

    def score(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X, dtype=float) @ self.weights if len(X) else np.zeros(0)

    def probabilities(self, X: np.ndarray) -> np.ndarray:
        """Softmax over the candidates plus a "none of them" option of score 0,
        so one weak candidate alone does not get probability 1."""
        return probabilities(self.score(X))

    def confidence_for(self, X: np.ndarray, excerpt: bool = False) -> float:
        """How often a diagnosis like the top candidate of ``X`` was right on
        logs the diagnosis had not seen; ``excerpt``: the input holds no
        progress or start line (a pasted error, not a whole job's log)."""
        if self.confidence_weights is None or not len(X):
            s = self.score(X)
            return self.confidence(float(probabilities(s)[int(np.argmax(s))]) if len(s) else 0.0)
        f = confidence_features(X, self.weights, excerpt)
        cw = kind_weights(self.confidence_weights, excerpt)
        return self.calibrated(float(sigmoid(f @ cw)))

    def calibrated(self, p: float) -> float:
        """``p`` mapped to the accuracy observed out of fold in its bucket
        (``p`` itself when no calibration ships)."""
        return bucket_accuracy(self.confidence_calibration, p)

    def confidence(self, p: float) -> float:
        """The accuracy measured out of fold for top candidates of probability ``p``."""
        return bucket_accuracy(self.calibration, p)

    def explain(self, x: Sequence[float]) -> list[tuple[str, float]]:
        contrib = [(n, float(w * v)) for n, w, v in zip(FEATURE_NAMES, self.weights, x) if w * v]
        return sorted(contrib, key=lambda kv: -abs(kv[1]))

    def to_json(self) -> dict[str, Any]:
        doc = {
            "features": list(FEATURE_NAMES),
            "weights": [round(float(w), 4) for w in self.weights],
            "threshold": round(float(self.threshold), 4),
            "calibration": self.calibration,
            "meta": self.meta,
        }
        if self.confidence_weights is not None:
            doc["confidence_features"] = list(CONFIDENCE_FEATURES)
            doc["confidence_weights"] = np.round(self.confidence_weights, 4).tolist()
            if self.confidence_calibration:
                doc["confidence_calibration"] = self.confidence_calibration
            if self.confidence_threshold is not None:
                doc["confidence_threshold"] = round(float(self.confidence_threshold), 4)
        return doc


def bucket_accuracy(buckets: Sequence[dict[str, float]], p: float) -> float:
    """The accuracy of the bucket (:func:`isotonic_calibration`) holding ``p``;
    ``p`` itself when none does."""
    for b in buckets:
        if b["lo"] <= p < b["hi"]:
            return float(b["accuracy"])
    return float(p)


def kind_weights(cw: np.ndarray, excerpt: bool) -> np.ndarray:
    """The confidence weights for one kind of input: a 2-D table holds a row
    for whole jobs and one for excerpts (what makes a diagnosis trustworthy
    differs by kind); a 1-D one serves both."""
    return cw[1 if excerpt else 0] if cw.ndim == 2 else cw


def probabilities(s: np.ndarray) -> np.ndarray:
    s = np.asarray(s, float)
    if not len(s):
        return s
    top = max(float(s.max()), 0.0)
    e = np.exp(s - top)
    return e / (e.sum() + math.exp(-top))


def prior_model() -> Model:
    return Model(np.array([PRIOR[n] for n in FEATURE_NAMES]), threshold=0.0)


_MODEL: Model | None = None


def load_model() -> Model:
    """The shipped model (``denpex_fast/ranking_model.json``), else the prior."""
    global _MODEL
    if _MODEL is None:
        try:
            doc = json.loads(files("denpex_fast").joinpath("ranking_model.json").read_text())
            w = dict(zip(doc["features"], doc["weights"]))
            cw = None
            if doc.get("confidence_features") == list(CONFIDENCE_FEATURES):
                cw = np.array(doc["confidence_weights"], dtype=float)
                if cw.shape[-1] != len(CONFIDENCE_FEATURES) or cw.ndim not in (1, 2):
                    cw = None
            _MODEL = Model(
                np.array([float(w.get(n, PRIOR[n])) for n in FEATURE_NAMES]),
                float(doc.get("threshold", 0.0)),
                list(doc.get("calibration", [])),
                dict(doc.get("meta", {})),
                cw,
                list(doc.get("confidence_calibration", [])) if cw is not None else [],
                float(doc["confidence_threshold"])
                if cw is not None and "confidence_threshold" in doc
                else None,
            )
        except (OSError, ValueError, KeyError, TypeError):
            _MODEL = prior_model()
    return _MODEL


def fit(
    cases: Sequence[tuple[np.ndarray, np.ndarray]],
    *,
    l2: float = 0.05,
    steps: int = 600,
    lr: float = 0.3,
    start: np.ndarray | None = None,
) -> np.ndarray:
    """Weights that maximise the softmax likelihood of the right candidates.

    ``cases``: per job, (features of its candidates, boolean mask of the
    candidates that name the truth).  Jobs without a right candidate cannot
    teach the ordering and are skipped.  L2 pulls the weights toward the
    prior, so a feature the data says little about keeps its prior meaning.
    """
    prior = np.array([PRIOR[n] for n in FEATURE_NAMES]) if start is None else start
    w = prior.copy()
    data = [
        (np.asarray(X, float), np.asarray(y, bool))
        for X, y in cases
        if len(X) and np.asarray(y, bool).any()
    ]
    if not data:
        return w
    m1 = np.zeros_like(w)
    m2 = np.zeros_like(w)
    for t in range(1, steps + 1):
        g = l2 * (w - prior)
        for X, y in data:
            s = X @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            q = np.where(y, p, 0.0)
            q /= q.sum()
            g += (p - q) @ X / len(data)
        m1 = 0.9 * m1 + 0.1 * g  # Adam: robust to the features' different scales
        m2 = 0.999 * m2 + 0.001 * g * g
        w -= lr * (m1 / (1 - 0.9**t)) / (np.sqrt(m2 / (1 - 0.999**t)) + 1e-8) * (0.995**t)
    return w


#: what the confidence model reads about a job's winning candidate
CONFIDENCE_FEATURES = (
    "bias",
    "probability",
    "margin",
    "specific_cause",
    "own_symptom",
    "open_world",
    "wrapper",
    "collateral",
    "from_absence",
    "rank_missing",
    "one_candidate",
    "excerpt",
    "generic_in_excerpt",
)


def confidence_features(X: np.ndarray, w: np.ndarray, excerpt: bool = False) -> np.ndarray:
    """:data:`CONFIDENCE_FEATURES` of the top candidate of ``X`` under weights
    ``w``.  ``excerpt`` is the one fact about the whole input: an excerpt (no
    progress, no start line) gives the ranking less to check a line against
    than a whole job's logs, and its diagnoses are right less often."""
    col = {n: i for i, n in enumerate(FEATURE_NAMES)}
    X = np.asarray(X, float)
    s = X @ w
    order = np.argsort(-s, kind="stable")
    top = X[order[0]]
    margin = float(s[order[0]] - s[order[1]]) if len(s) > 1 else 4.0
    absence = max(top[col["silent_suspect"]], top[col["laggard"]])
    ranks_known = float(X[:, col["has_rank"]].max()) > 0
    # a line that only reports another process's failure (a peer's timeout, a
    # driver re-raising its worker's exception) is no rival to a line of its own
    rivals = len(s) - 1
    if not top[col["collateral"]]:
        rivals = int(np.count_nonzero(X[:, col["collateral"]] == 0)) - 1
    return np.array(
        [
            1.0,
            float(probabilities(s)[order[0]]),
            math.tanh(max(margin, 0.0) / 2.0),
            top[col["specific_cause"]],
            top[col["own_symptom"]],
            top[col["open_world"]],
            top[col["wrapper"]],
            top[col["collateral"]],
            absence,
            1.0 if ranks_known and not top[col["has_rank"]] else 0.0,
            1.0 if rivals == 0 else 0.0,
            1.0 if excerpt else 0.0,
            # a whole job checks a generic line against its peers and its
            # progress; in an excerpt it is only the loudest line there
            1.0 if excerpt and not top[col["specific_cause"]] else 0.0,
        ]
    )


def sigmoid(z: float | np.ndarray) -> Any:
    """The logistic function, clipped so large scores do not overflow."""
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


def fit_confidence(
    F: Sequence[np.ndarray],
    right: Sequence[bool],
    *,
    l2: float = 3.0,
    steps: int = 3000,
    lr: float = 0.5,
    weight: Sequence[float] | None = None,
) -> np.ndarray:
    """Logistic weights predicting whether a diagnosis is right from its
    :func:`confidence_features` (L2 toward 0 except the bias); ``weight``:
    per case (default 1)."""
    A = np.asarray(F, float)
    y = np.asarray(right, float)
    w = np.zeros(A.shape[1])
    if not len(A):
        return w
    c = np.ones(len(y)) if weight is None else np.asarray(weight, float)
    c = c * len(y) / c.sum()
    w[0] = math.log((float(c @ y) + 1) / (float(c @ (1 - y)) + 1))
    reg = np.full(A.shape[1], l2)
    reg[0] = 0.0
    for _ in range(steps):
        p = sigmoid(A @ w)
        g = A.T @ (c * (p - y)) / len(y) + reg * w / len(y)
        w -= lr * g
    return w


def isotonic_calibration(
    points: Sequence[tuple[float, bool]],
    edges: Sequence[float] = (0.0, 0.35, 0.5, 0.65, 0.8, 0.9, 1.01),
    prior: tuple[int, int] = (1, 1),
) -> list[dict[str, float]]:
    """Accuracy per probability bucket, Laplace-smoothed by ``prior`` (right,
    wrong) pseudo-cases and pooled so it never decreases with probability."""
    e = list(edges)
    blocks: list[list[float]] = []
    for k, (lo, hi) in enumerate(zip(e, e[1:])):
        inb = [ok for p, ok in points if lo <= p < hi]
        w = len(inb) + prior[0] + prior[1]
        blocks.append([(sum(inb) + prior[0]), w, k, k])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            b = blocks.pop()
            blocks[-1][0] += b[0]
            blocks[-1][1] += b[1]
            blocks[-1][3] = b[3]
    out: list[dict[str, float]] = []
    for total, weight, first, last in blocks:
        for j in range(int(first), int(last) + 1):
            n = sum(1 for p, _ in points if e[j] <= p < e[j + 1])
            out.append(
                {"lo": e[j], "hi": e[j + 1], "accuracy": round(total / weight, 3), "cases": n}
            )
    return out


def threshold_for_precision(points: Sequence[tuple[float, bool]], target: float = 0.95) -> float:
    """The lowest probability above which named diagnoses are right at least
    ``target`` of the time (1.0 when no threshold reaches it)."""
    pts = sorted(points, key=lambda x: -x[0])
    best = 1.0
    right = 0
    for i, (p, ok) in enumerate(pts, 1):
        right += ok
        if right / i >= target:
            best = p
    return best if math.isfinite(best) else 1.0
