"""Renderers for a :class:`~denpex_fast.diagnosis.Diagnosis`: text, Markdown, JSON.

The text form is what an engineer reads at 3 a.m.: the initiating event
first (file, line, rank, host, the line itself), then the fix and the command
that verifies it, then the collateral grouped by signature, competing
hypotheses and the rank-fate table.
"""

from __future__ import annotations

import json
from typing import Any

from .diagnosis import Diagnosis


def _ranks(ranks: list[int], limit: int = 12) -> str:
    if not ranks:
        return "-"
    # compress runs: 0-3,5,7-9
    out, start, prev = [], ranks[0], ranks[0]
    for r in ranks[1:] + [None]:  # type: ignore[list-item]
        if r is not None and r == prev + 1:
            prev = r
            continue
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
        if r is not None:
            start = prev = r
    text = ",".join(out)
    return text if len(out) <= limit else ",".join(out[:limit]) + ",..."


def to_json(d: Diagnosis, indent: int | None = 2) -> str:
    """The stable JSON document (schema ``denpex.diagnosis/1``)."""
    return json.dumps(d.to_dict(), indent=indent, default=str)


def to_markdown(d: Diagnosis) -> str:
    """Markdown for tickets and CI step summaries."""
    lines = ["# denpex diagnosis", ""]
    i = d.initiating
    if i is not None:
        lines += [f"**Verdict:** {d.verdict}", "",
                  f"**Initiating event:** `{i.signature}` on rank {i.rank if i.rank is not None else '?'}"
                  f" (host {i.host or '?'}) at `{i.where()}` — confidence {d.confidence:.2f}", "",
                  "```", i.text, "```", ""]
    elif d.suspect_rank is not None:
        lines += [f"**Suspect:** rank {d.suspect_rank} (printed no failure of its own) — "
                  f"confidence {d.confidence:.2f}", ""]
    else:
        lines += [f"**Verdict:** {d.verdict} — no initiating event found", ""]
    lines += ["## Why", ""] + [f"- {r}" for r in d.reasons] + [""]
    if d.fix:
        lines += ["## Root cause", "", d.fix["root_cause"], "", "## Fix", "", d.fix["fix"], "",
                  "## Verify", "", f"`{d.fix['verify']}`", "", "## Checklist", ""]
        lines += [f"{n}. {step}" for n, step in enumerate(d.fix["checklist"], 1)] + [""]
        if d.fix["fields"]:
            lines += ["Values from the failing line: "
                      + ", ".join(f"{k}={v}" for k, v in d.fix["fields"].items()), ""]
        if d.fix.get("job_values"):
            lines += ["Values from the job's configuration lines: "
                      + ", ".join(f"{k}={v}" for k, v in d.fix["job_values"].items()), ""]
    if d.collateral:
        lines += ["## Collateral", "", "| signature | role | count | ranks | first |",
                  "|---|---|---|---|---|"]
        lines += [f"| `{c.signature}` | {c.role} | {c.count} | {_ranks(c.ranks)} | `{c.first.where()}` |"
                  for c in d.collateral[:30]]
        lines.append("")
    if d.competing:
        lines += ["## Competing hypotheses", ""]
        for h in d.competing:
            lines.append(f"- `{h.signature}`: {h.control} "
                         f"(for: {'; '.join(h.evidence_for) or '-'}; "
                         f"against: {'; '.join(h.evidence_against) or '-'})")
        lines.append("")
    if d.divergence:
        lines += ["## First lines the healthy baseline never printed", ""]
        lines += [f"- `{r['file']}:{r['line']}`: `{r['text'][:200]}`" for r in d.divergence[:40]]
        lines.append("")
    return "\n".join(lines)


def render_text(d: Diagnosis, console: Any) -> None:
    """Print the report with rich to ``console``."""
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    i = d.initiating
    if i is not None:
        head = Text()
        head.append(f"{i.signature}", style="bold red")
        head.append(f"  rank {i.rank if i.rank is not None else '?'}  host {i.host or '?'}  "
                    f"{i.where()}" + (f"  {i.ts.isoformat()}" if i.ts else ""))
        head.append(f"\n{i.text}\n", style="yellow")
        head.append(f"confidence {d.confidence:.2f}", style="bold")
        console.print(Panel(head, title=f"{d.verdict}: initiating event", expand=True))
    elif d.suspect_rank is not None:
        console.print(Panel(f"rank {d.suspect_rank} is the suspect: it printed no failure of its "
                            f"own (confidence {d.confidence:.2f})", title="suspect"))
    else:
        console.print(Panel(f"verdict: {d.verdict}: no initiating event found; here is what is known",
                            title="no initiating event"))
    for r in d.reasons:
        console.print(f"  - {r}", markup=False, highlight=False)
    if d.fix:
        console.print()
        console.print(Text("Root cause", style="bold"))
        console.print(d.fix["root_cause"], markup=False, highlight=False)
        console.print(Text("Fix", style="bold green"))
        console.print(d.fix["fix"], markup=False, highlight=False)
        console.print(Text("Verify", style="bold"))
        console.print(f"  {d.fix['verify']}", markup=False, highlight=False)
        console.print(Text("Checklist", style="bold"))
        for n, step in enumerate(d.fix["checklist"], 1):
            console.print(f"  {n}. {step}", markup=False, highlight=False)
        if d.fix["fields"]:
            console.print("  values from the failing line: "
                          + ", ".join(f"{k}={v}" for k, v in d.fix["fields"].items()),
                          markup=False, highlight=False)
        if d.fix.get("job_values"):
            console.print("  values from the job's configuration lines: "
                          + ", ".join(f"{k}={v}" for k, v in d.fix["job_values"].items()),
                          markup=False, highlight=False)
    if d.collateral:
        t = Table(title="collateral (consequences)", show_lines=False)
        for col in ("signature", "role", "count", "ranks", "hosts", "first"):
            t.add_column(col)
        for c in d.collateral[:25]:
            t.add_row(c.signature, c.role, str(c.count), _ranks(c.ranks),
                      ",".join(c.hosts[:4]) or "-", c.first.where())
        console.print(t)
    if d.competing:
        console.print(Text("Competing hypotheses", style="bold"))
        for h in d.competing:
            console.print(f"  - {h.signature}: {h.control}", markup=False, highlight=False)
            if h.evidence_for:
                console.print(f"      for: {'; '.join(h.evidence_for)}", markup=False, highlight=False)
            if h.evidence_against:
                console.print(f"      against: {'; '.join(h.evidence_against)}", markup=False,
                              highlight=False)
    if d.rank_fates.num_rows:
        t = Table(title="rank fates")
        for col in ("rank", "host", "first error", "exit", "signal", "torn down by", "last step",
                    "last collective"):
            t.add_column(col)
        for row in d.rank_fates.to_pylist()[:64]:
            t.add_row(*(str(v) if v is not None else "-" for v in (
                row["rank"], row["host"], row["first_error_signature"], row["exit_code"],
                row["signal"], row["torn_down_by"], row["last_step"], row["last_collective_seq"])))
        console.print(t)
    if d.divergence:
        console.print(Text("First lines the healthy baseline never printed", style="bold"))
        for row in d.divergence[:40]:
            console.print(f"  {row['file']}:{row['line']}: {row['text'][:200]}", markup=False,
                          highlight=False)
    for e in d.errors:
        console.print(f"unreadable: {e['path']}: {e['message']}", style="red", markup=False)
    for n in d.notes:
        console.print(f"note: {n}", style="dim", markup=False)
