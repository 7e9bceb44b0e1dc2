"""Where to resume: the last checkpoint written before the failure, and whether it is safe.

A checkpoint line is any match whose knowledge-base entry is marked
``checkpoint-saved`` (DeepSpeed, Megatron-LM, Hugging Face, a script's own
"checkpoint saved step=N path=..."), with its ``step``/``iteration`` and
``path`` fields::

    >>> r = resume_point(events, kb, before=initiating_time)
    >>> r.step, r.path, r.safe, r.reason
    (600, '/ckpt/step600', False, 'a non-finite loss was reported at ... before it was written')

It is not safe to resume from a checkpoint written after the anomaly had
already begun: a non-finite loss (or another numerics error) reported
before it, or a suspect rank that had stopped making progress before it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .causal import STEP_FIELDS, Event, field_number
from .incidents import marks


@dataclass
class Resume:
    """The resume point of a failed job."""

    event: Event
    step: int | None
    path: str | None
    safe: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.event.file,
            "line": self.event.line,
            "text": self.event.text,
            "ts": self.event.ts.isoformat() if self.event.ts else None,
            "step": self.step,
            "path": self.path,
            "safe": self.safe,
            "reason": self.reason,
        }


def _when(e: Event) -> float:
    return e.t if e.t is not None else -math.inf


def resume_point(
    events: Sequence[Event],
    kb: Any,
    *,
    before: Event | None = None,
    before_t: float | None = None,
    suspect_rank: int | None = None,
) -> Resume | None:
    """The last checkpoint written before the failure (``before``: the
    initiating line, or ``before_t``: a time), with its safety."""
    saves = [e for e in events if "checkpoint-saved" in marks(kb, e.signature)]
    if not saves:
        return None
    cutoff = before.t if before is not None and before.t is not None else before_t

    def earlier(e: Event) -> bool:
        if cutoff is not None and e.t is not None:
            return e.t <= cutoff
        if before is not None and e.file == before.file:
            return e.line < before.line
        return cutoff is None and before is None

    done = [e for e in saves if earlier(e)]
    if not done:
        return None
    last = max(done, key=lambda e: (_when(e), e.line))
    step = field_number(last.fields, STEP_FIELDS)
    path = last.fields.get("path")
    if last.t is not None:
        for e in sorted(events, key=_when):
            if e.t is None or e.t > last.t:
                break
            if e.phase == "numerics" and e.role != "context" and e.severity in ("error", "fatal"):
                return Resume(
                    last,
                    int(step) if step is not None else None,
                    path,
                    False,
                    f"{e.signature} was reported at {e.where()} before this checkpoint "
                    "was written: it may hold the anomaly; resume from an earlier one",
                )
        if suspect_rank is not None:
            own = [
                e
                for e in events
                if e.rank == suspect_rank
                and field_number(e.fields, STEP_FIELDS) is not None
                and e.t is not None
            ]
            if own:
                stop = max(own, key=_when)
                others = [
                    e.t
                    for e in events
                    if e.rank not in (None, suspect_rank)
                    and e.t is not None
                    and field_number(e.fields, STEP_FIELDS) is not None
                    and stop.t is not None
                    and e.t > stop.t
                ]
                if others and stop.t is not None and stop.t < last.t:
                    return Resume(
                        last,
                        int(step) if step is not None else None,
                        path,
                        False,
                        f"rank {suspect_rank} had already stopped making progress "
                        f"({stop.where()}) when this checkpoint was written",
                    )
    return Resume(
        last,
        int(step) if step is not None else None,
        path,
        True,
        "written before the first sign of the failure",
    )
