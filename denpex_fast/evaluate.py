"""Evaluate the diagnosis on a labelled corpus of failed jobs.

A corpus is a directory of cases; a case is a directory with the logs and a
``truth.json`` (schema ``denpex.truth/1``: ``initiating`` with ``rank``,
``file`` (relative to the case), ``line``, ``text``; ``healthy``)::

    >>> from denpex_fast.evaluate import evaluate
    >>> report = evaluate(["tests/corpus/cases", "tests/corpus/public"])
    >>> report.summary()["rank_accuracy"]

A diagnosis is *right on the line* when it names the truth's file and line
(or the same line as printed in another file: torchrun's console repeats each
rank's lines with a ``[defaultN]:`` prefix),
*right on the rank* when the initiating (or suspect) rank equals the truth's
rank, *abstained* when it names nothing; a healthy case is right when the
verdict is ``healthy``.  ``calibration()`` buckets confidence against
correctness, which is how the confidence scale is checked.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


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
    downstream_blamed: bool = False     # the named line is one of the truth's consequences
    launcher_rank: int | None = None    # torchrun's "Root Cause (first observed failure)" rank

    def to_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


@dataclass
class EvalReport:
    """All case results with summary figures."""

    results: list[CaseResult] = field(default_factory=list)

    def summary(self) -> dict[str, float]:
        failed = [r for r in self.results if not r.healthy]
        healthy = [r for r in self.results if r.healthy]
        ranked = [r for r in failed if r.truth_rank is not None]
        lined = [r for r in failed if r.truth_where is not None]
        named = [r for r in failed if r.verdict == "initiating"]
        return {
            "cases": len(self.results),
            "failed_cases": len(failed),
            "healthy_cases": len(healthy),
            "line_accuracy": _ratio(sum(r.line_hit for r in lined), len(lined)),
            "rank_accuracy": _ratio(sum(r.rank_hit for r in ranked), len(ranked)),
            "abstain_rate": _ratio(sum(r.verdict != "initiating" for r in failed), len(failed)),
            "precision_when_named": _ratio(sum(r.right for r in named), len(named)),
            "healthy_quiet": _ratio(sum(r.verdict == "healthy" for r in healthy), len(healthy)),
        }

    def calibration(self, edges: Iterable[float] = (0.0, 0.3, 0.5, 0.7, 1.01)) -> list[dict[str, Any]]:
        """Accuracy per confidence bucket over failed cases that named an event."""
        e = list(edges)
        out = []
        for lo, hi in zip(e, e[1:]):
            bucket = [r for r in self.results if not r.healthy and r.verdict == "initiating"
                      and lo <= r.confidence < hi]
            out.append({"confidence": f"[{lo:.1f}, {min(hi, 1.0):.1f})", "cases": len(bucket),
                        "right": sum(r.right for r in bucket)})
        return out


_PREFIX = re.compile(r"^(?:\[(?:default|rank)\d+\]:)+\s*")


def _bare(text: str) -> str:
    """A line without torchrun's rank prefixes: the console and the per-rank
    file print the same line, and either names it."""
    return _PREFIX.sub("", text.strip())


CALIBRATION_EDGES = (0.0, 0.4, 0.5, 0.6, 0.7, 1.01)


def fit_calibration(report: EvalReport, edges: Iterable[float] = CALIBRATION_EDGES,
                    prior: tuple[int, int] = (1, 1)) -> list[dict[str, float]]:
    """Measured accuracy per raw-score bucket.

    Each bucket is Laplace-smoothed by ``prior`` (right, wrong) pseudo-cases,
    so a small bucket does not claim certainty, then the buckets are made
    non-decreasing by pooling adjacent violators (isotonic regression): a
    higher score never maps to a lower confidence.
    """
    e = list(edges)
    blocks: list[list[float]] = []  # [weighted accuracy sum, weight, first bucket, last bucket]
    for k, (lo, hi) in enumerate(zip(e, e[1:])):
        bucket = [r for r in report.results if not r.healthy and r.verdict == "initiating"
                  and lo <= r.score < hi]
        w = len(bucket) + prior[0] + prior[1]
        acc = (sum(r.right for r in bucket) + prior[0]) / w
        blocks.append([acc * w, w, k, k])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            a, b = blocks[-2], blocks.pop()
            a[0] += b[0]
            a[1] += b[1]
            a[3] = b[3]
    out = []
    for total, w, first, last in blocks:
        for k in range(int(first), int(last) + 1):
            lo, hi = e[k], e[k + 1]
            n = sum(1 for r in report.results if not r.healthy and r.verdict == "initiating"
                    and lo <= r.score < hi)
            out.append({"lo": lo, "hi": hi, "accuracy": round(total / w, 3), "cases": n})
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m denpex_fast.evaluate [--calibrate] CORPUS...``"""
    import argparse

    ap = argparse.ArgumentParser(description="Evaluate the diagnosis on labelled corpora.")
    ap.add_argument("roots", nargs="+", help="corpus directories (cases with truth.json)")
    ap.add_argument("--calibrate", action="store_true",
                    help="write denpex_fast/calibration.json from these corpora")
    a = ap.parse_args(argv)
    rep = evaluate(a.roots)
    for r in rep.results:
        print(f"{'ok' if r.right else 'XX'} {r.case:50} {r.verdict:10} {r.signature} {r.where} "
              f"score={r.score:.2f}")
    print(json.dumps(rep.summary(), indent=1))
    if a.calibrate:
        table = fit_calibration(rep)
        out = Path(__file__).with_name("calibration.json")
        out.write_text(json.dumps(table, indent=1) + "\n")
        print(f"wrote {out}")
    return 0



def _ratio(a: int, b: int) -> float:
    return round(a / b, 3) if b else float("nan")


_ROOT_CAUSE = re.compile(rb"Root Cause \(first observed failure\):")
_RANK_LINE = re.compile(rb"^\s*rank\s*:\s*(\d+)", re.M)


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


def _failure_class(truth: dict[str, Any]) -> str:
    if truth.get("healthy"):
        return "healthy"
    return str(truth.get("fault") or truth.get("failure_class") or "other")[:40]


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
    """The case's log files (everything but truth.json and error.json sidecars)."""
    return sorted(str(p) for p in case.rglob("*") if p.is_file() and p.name != "truth.json")


def evaluate_case(case: Path, scanner: Any = None) -> CaseResult:
    """Diagnose one case and compare with its truth."""
    from .diagnosis import diagnose

    truth = json.loads((case / "truth.json").read_text())
    init = truth.get("initiating") or {}
    if not init and truth.get("initiating_signature"):  # incident write-up format
        init = {"rank": truth.get("initiating_rank"), "text": truth["initiating_signature"]}
    healthy = bool(truth.get("healthy", False))
    t_rank = init.get("rank")
    t_where = f"{init['file']}:{init['line']}" if init.get("file") and init.get("line") else None
    try:
        d = diagnose(log_files(case), scanner=scanner)
    except Exception as exc:  # a crash is a wrong answer, recorded with its reason
        return CaseResult(case.name, healthy, t_rank, t_where, "error", None, None, None, 0.0,
                          False, False, False, f"{type(exc).__name__}: {exc}")
    i = d.initiating
    where = f"{os.path.relpath(i.file, case)}:{i.line}" if i is not None else None
    rank = i.rank if i is not None else d.suspect_rank
    t_text = _bare(init.get("text") or "")
    line_hit = where is not None and (where == t_where or (
        bool(t_text) and (_bare(i.text) == t_text or (t_where is None and t_text in i.text))))
    rank_hit = rank is not None and t_rank is not None and rank == t_rank
    right = (d.verdict == "healthy") if healthy else (line_hit or rank_hit)
    downstream = {_bare(x.get("text") or "") for x in truth.get("downstream") or []
                  if isinstance(x, dict)}
    downstream |= {_bare(x) for x in truth.get("downstream_signatures") or [] if isinstance(x, str)}
    blamed = i is not None and not line_hit and (
        _bare(i.text) in downstream or any(x and x in i.text for x in downstream))
    return CaseResult(case.name, healthy, t_rank, t_where, d.verdict, rank, where,
                      i.signature if i else None, float(d.confidence), line_hit, rank_hit, right,
                      score=float(d.score), failure_class=_failure_class(truth),
                      downstream_blamed=blamed, launcher_rank=launcher_root_cause_rank(case))


def evaluate(roots: Iterable[str | os.PathLike[str]], scanner: Any = None) -> EvalReport:
    """Evaluate every case under ``roots``."""
    from .scanner import Scanner

    scanner = scanner or Scanner()
    return EvalReport([evaluate_case(c, scanner) for c in case_dirs(roots)])


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
