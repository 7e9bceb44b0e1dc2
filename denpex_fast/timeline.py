"""A failure across many ranks as a picture: one lane per rank on the
skew-corrected time axis.

``lanes(d)`` gathers, per rank, its progress span, first error, exit or
teardown and every other matched failure line; ``to_html(d)`` draws them as
one self-contained HTML file (inline CSS and SVG: no script, no network, the
logs stay on the machine); ``text_timeline(d)`` is the compact terminal form::

    >>> from denpex_fast.timeline import to_html
    >>> Path("report.html").write_text(to_html(dx.diagnose("job/")))
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

from .analysis.causal import STEP_FIELDS, Event, field_number

LANE_H = 26
LEFT = 110
WIDTH = 900


@dataclass
class Lane:
    """What one rank did, in corrected seconds."""

    rank: int
    host: str | None = None
    first_t: float | None = None  # first line seen
    progress_t: float | None = None  # last progress line
    progress: Event | None = None
    first_error: Event | None = None
    end: Event | None = None  # exit / teardown / kill record
    marks: list[Event] = field(default_factory=list)  # other failure lines


def _t(e: Event) -> float | None:
    return e.t if e.t is not None and math.isfinite(e.t) else None


def lanes(d: Any) -> list[Lane]:
    """One :class:`Lane` per rank of the diagnosis, rank order."""
    from .analysis.causal import failed_exit
    from .analysis.incidents import marks as kb_marks

    out: dict[int, Lane] = {}
    events: list[Event] = list(getattr(d, "events", []) or [])
    kb = getattr(d, "kb", None)
    for e in sorted(events, key=lambda e: (_t(e) if _t(e) is not None else math.inf, e.line)):
        if e.rank is None:
            continue
        lane = out.setdefault(e.rank, Lane(e.rank, e.host))
        t = _t(e)
        if t is not None and lane.first_t is None:
            lane.first_t = t
        if field_number(e.fields, STEP_FIELDS) is not None:
            lane.progress, lane.progress_t = e, t
        if e.role == "context":
            continue
        m = kb_marks(kb, e.signature) if kb is not None else ()
        if failed_exit(e) or "agent-teardown" in m or "scheduler-teardown" in m:
            lane.end = lane.end or e
        elif lane.first_error is None and e.severity in ("error", "fatal"):
            lane.first_error = e
        else:
            lane.marks.append(e)
    return [out[k] for k in sorted(out)]


def _span(ls: list[Lane], d: Any) -> tuple[float, float]:
    ts = [t for ln in ls for t in (ln.first_t, ln.progress_t) if t is not None]
    ts += [
        t
        for ln in ls
        for e in (ln.first_error, ln.end, *ln.marks)
        if e is not None and (t := _t(e)) is not None
    ]
    i = getattr(d, "initiating", None)
    if i is not None and (t_init := _t(i)) is not None:
        ts.append(t_init)
    if not ts:
        return 0.0, 1.0
    lo, hi = min(ts), max(ts)
    return lo, (hi if hi > lo else lo + 1.0)


def text_timeline(d: Any, width: int = 56) -> list[str]:
    """Compact lanes for a terminal: ``=`` progress, ``x`` first error, ``!``
    the initiating line, ``|`` exit or teardown."""
    ls = lanes(d)
    if not ls:
        return []
    lo, hi = _span(ls, d)

    def col(t: float | None) -> int | None:
        return None if t is None else min(width - 1, int((t - lo) / (hi - lo) * (width - 1)))

    init = getattr(d, "initiating", None)
    rows = []
    for ln in ls[:64]:
        cells = [" "] * width
        a, b = col(ln.first_t), col(ln.progress_t)
        if a is not None and b is not None:
            for k in range(a, b + 1):
                cells[k] = "="
        for ch, e in (("x", ln.first_error), ("|", ln.end)):
            c = col(_t(e)) if e is not None else None
            if c is not None:
                cells[c] = ch
        if init is not None and init.rank == ln.rank and col(_t(init)) is not None:
            cells[col(_t(init)) or 0] = "!"
        rows.append(f"rank {ln.rank:>4} {''.join(cells)}")
    return rows


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def to_html(d: Any, title: str = "denpex diagnosis") -> str:
    """One self-contained HTML page: the timeline, the report beside it, and
    the lines of the initiating incident.  Hover a mark to see its line."""

    def shown(d: Any, text: str) -> str:
        return str(d.shown(text))

    def headline(d: Any) -> str:
        return str(d.headline())

    ls = lanes(d)
    lo, hi = _span(ls, d)
    plot_w = WIDTH - LEFT - 20

    def x(t: float | None) -> float:
        return LEFT + (0 if t is None else (t - lo) / (hi - lo) * plot_w)

    init = getattr(d, "initiating", None)
    svg = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
        f'height="{LANE_H * max(1, len(ls)) + 40}" role="img" aria-label="per-rank timeline">'
    ]
    for k, ln in enumerate(ls):
        y = 20 + k * LANE_H
        svg.append(
            f'<g class="lane" data-rank="{ln.rank}"><text x="4" y="{y + 16}">rank {ln.rank}'
            f"{' · ' + _esc(ln.host) if ln.host else ''}</text>"
        )
        svg.append(
            f'<line x1="{LEFT}" x2="{WIDTH - 20}" y1="{y + 12}" y2="{y + 12}" class="axis"/>'
        )
        if ln.first_t is not None and ln.progress_t is not None:
            svg.append(
                f'<rect class="progress" x="{x(ln.first_t):.1f}" y="{y + 8}" '
                f'width="{max(1.0, x(ln.progress_t) - x(ln.first_t)):.1f}" height="8">'
                f"<title>{_esc(shown(d, ln.progress.where()) + ': ' + ln.progress.text) if ln.progress else ''}"
                f"</title></rect>"
            )
        for cls, e in [("collateral", m) for m in ln.marks] + [
            ("first-error", ln.first_error),
            ("end", ln.end),
        ]:
            if (
                e is None
                or _t(e) is None
                or (init is not None and e.file == init.file and e.line == init.line)
            ):
                continue
            svg.append(
                f'<circle class="mark {cls}" cx="{x(_t(e)):.1f}" cy="{y + 12}" r="5">'
                f"<title>{_esc(e.signature + ' — ' + shown(d, e.where()) + chr(10) + e.text[:400])}</title></circle>"
            )
        # the initiating mark last, on top of anything at the same moment
        if init is not None and init.rank == ln.rank and _t(init) is not None:
            svg.append(
                f'<circle class="mark initiating" cx="{x(_t(init)):.1f}" cy="{y + 12}" r="7">'
                f"<title>{_esc(init.signature + ' — ' + shown(d, init.where()) + chr(10) + init.text[:400])}"
                f"</title></circle>"
            )
        svg.append("</g>")
    svg.append(
        f'<text x="{LEFT}" y="{LANE_H * max(1, len(ls)) + 34}" class="tick">+0 s</text>'
        f'<text x="{WIDTH - 80}" y="{LANE_H * max(1, len(ls)) + 34}" class="tick">+{hi - lo:.1f} s</text>'
    )
    svg.append("</svg>")

    fix = getattr(d, "fix", None) or {}
    report = [f"<h2>{_esc(headline(d))}</h2>"]
    if init is not None:
        report.append(
            f'<p class="init"><b>{_esc(init.signature)}</b> on rank '
            f"{init.rank if init.rank is not None else '?'} at "
            f"<code>{_esc(shown(d, init.where()))}</code> — confidence {d.confidence:.2f}</p>"
        )
    report.append("<ul>" + "".join(f"<li>{_esc(shown(d, r))}</li>" for r in d.reasons) + "</ul>")
    if fix:
        report.append(
            f"<h3>Root cause</h3><p>{_esc(fix.get('root_cause') or '')}</p>"
            f"<h3>Fix</h3><p>{_esc(fix.get('fix') or '')}</p>"
            f"<h3>Verify</h3><pre>{_esc((fix.get('verify') or '').strip('`'))}</pre>"
        )
    resume = getattr(d, "resume", None)
    if resume is not None:
        report.append(
            f"<h3>Where to resume</h3><p>step {resume.step} ({_esc(resume.path or '')}): "
            f"{'safe' if resume.safe else 'NOT safe'}: {_esc(resume.reason)}</p>"
        )
    inc = getattr(d, "initiating_incident", None)
    lines = ""
    from .io.readback import lines_around

    around = lines_around(d)
    if around and init is not None:
        lines = (
            f'<h3>Around {_esc(shown(d, init.where()))}</h3><pre class="around">'
            + "\n".join(
                (f"<b>{n:>7}  {_esc(x)}</b>" if n == init.line else f"{n:>7}  {_esc(x)}")
                for n, x in around
            )
            + "</pre>"
        )
    elif inc is not None and inc.members:
        lines = (
            '<h3>The initiating incident</h3><pre class="incident">'
            + "\n".join(f"{_esc(shown(d, m.where()))}  {_esc(m.text)}" for m in inc.members)
            + "</pre>"
        )
    style = (
        "body{font:14px system-ui,sans-serif;margin:16px;color:#222}"
        ".wrap{display:flex;gap:24px;flex-wrap:wrap}.side{max-width:560px}"
        "svg text{font:12px monospace;fill:#333}.axis{stroke:#ddd}"
        ".progress{fill:#9ecae1}.mark{stroke:#fff;stroke-width:1}"
        ".first-error{fill:#fd8d3c}.end{fill:#756bb1}.collateral{fill:#bbb}"
        ".initiating{fill:#d62728;stroke:#000;stroke-width:2}"
        "pre{background:#f6f6f6;padding:8px;overflow:auto;white-space:pre-wrap}"
        ".legend span{margin-right:12px}"
    )
    legend = (
        '<p class="legend"><span style="color:#9ecae1">■ progress</span>'
        '<span style="color:#fd8d3c">● first error</span><span style="color:#756bb1">● exit / '
        'teardown</span><span style="color:#bbb">● collateral</span><span style="color:#d62728">'
        "● initiating</span></p>"
    )
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">"
        f"<title>{_esc(title)}</title><style>{style}</style></head><body>"
        f'<h1>{_esc(title)}</h1>{legend}<div class="wrap"><div>{"".join(svg)}</div>'
        f'<div class="side">{"".join(report)}</div></div>{lines}</body></html>'
    )
