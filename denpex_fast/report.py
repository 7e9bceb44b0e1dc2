"""Renderers for a :class:`~denpex_fast.analysis.diagnosis.Diagnosis`: text, Markdown, JSON.

The text form is what an engineer reads at 3 a.m.: the initiating event
first (file, line, rank, host, the line itself), then the fix and the command
that verifies it, then the collateral grouped by signature, competing
hypotheses and the rank-fate table.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .analysis.diagnosis import Diagnosis

_TICKS = re.compile(r"`+")


def override_note(d: Any) -> str:
    """Why a fix may not be the shipped one: its entry replaced another."""
    fix = d.fix or {}
    return (
        f"this fix comes from {fix.get('source') or 'a user signature file'}, which replaces "
        f"the entry '{fix.get('id')}' of {fix.get('overrides')}; check it before running "
        "its verify command"
    )


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


def shown(d: Diagnosis, text: str) -> str:
    """``text`` with the job root dropped from paths (:meth:`Diagnosis.shown`)."""
    return d.shown(text)


def _md_cell(text: str) -> str:
    """A Markdown table cell: pipes escaped, code spans kept intact."""
    return text.replace("|", "\\|").replace("\n", " ")


def _md_code(text: str) -> str:
    """An inline code span that survives backticks in ``text``."""
    ticks = "`" * (max((len(r) for r in _TICKS.findall(text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def headline(d: Diagnosis) -> str:
    """One line that says what the verdict means (:meth:`Diagnosis.headline`)."""
    return d.headline()


def _resume_line(d: Diagnosis) -> str:
    r = d.resume
    what = (f"step {r.step}" if r.step is not None else "the checkpoint") + (
        f" ({r.path})" if r.path else ""
    )
    verdict = "safe" if r.safe else "NOT safe"
    return f"{what}, written at {r.event.where()}: {verdict}: {r.reason}"


def to_markdown(d: Diagnosis) -> str:
    """Markdown for tickets and CI step summaries."""
    lines = ["# denpex diagnosis", "", f"**Verdict:** {headline(d)}", ""]
    i = d.initiating
    if i is not None:
        lines += [
            f"**Initiating event:** {_md_code(i.signature)} on rank "
            f"{i.rank if i.rank is not None else '?'} (host {i.host or '?'}) at "
            f"{_md_code(shown(d, i.where()))} — confidence {d.confidence:.2f}",
            "",
            "```text",
            shown(d, i.text),
            "```",
            "",
        ]
    from .io.readback import lines_around

    around = lines_around(d, before=8, after=2)
    if around:
        lines += (
            ["```text"]
            + [
                f"{n:>7}{'>' if i is not None and n == i.line else ' '} {shown(d, x)}"
                for n, x in around
            ]
            + ["```", ""]
        )
    lines += ["## Why", ""] + [f"- {shown(d, r)}" for r in d.reasons] + [""]
    if d.resume is not None:
        lines += ["## Where to resume", "", shown(d, _resume_line(d)), ""]
    if d.fix:
        lines += [
            "## Root cause",
            "",
            d.fix["root_cause"],
            "",
            "## Fix",
            "",
            d.fix["fix"],
            "",
            *([f"> **Note:** {override_note(d)}", ""] if d.fix.get("overrides") else []),
            "## Verify",
            "",
            "```sh",
            d.fix["verify"].strip("`"),
            "```",
            "",
            "## Checklist",
            "",
        ]
        lines += [f"{n}. {step}" for n, step in enumerate(d.fix["checklist"], 1)] + [""]
        if d.fix["fields"]:
            lines += [
                "Values from the failing line: "
                + ", ".join(f"{k}={v}" for k, v in d.fix["fields"].items()),
                "",
            ]
        if d.fix.get("job_values"):
            lines += [
                "Values from the job's configuration lines: "
                + ", ".join(f"{k}={v}" for k, v in d.fix["job_values"].items()),
                "",
            ]
    if d.collateral:
        lines += [
            "## Collateral (consequences)",
            "",
            "| signature | role | count | ranks | first |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {_md_cell(_md_code(c.signature))} | {c.role} | {c.count} | {_ranks(c.ranks)} | "
            f"{_md_cell(_md_code(shown(d, c.first.where())))} |"
            for c in d.collateral[:30]
        ]
        lines.append("")
    if d.competing:
        lines += ["## Competing hypotheses", ""]
        for h in d.competing:
            lines.append(
                f"- {_md_code(h.signature)}: {h.control} "
                f"(for: {shown(d, '; '.join(h.evidence_for)) or '-'}; "
                f"against: {'; '.join(h.evidence_against) or '-'})"
            )
        lines.append("")
    if d.rank_fates.num_rows:
        lines += [
            "## Rank fates",
            "",
            "| rank | host | first error | exit | signal | torn down by "
            "| last step | last collective |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for row in d.rank_fates.to_pylist()[:64]:
            lines.append(
                "| "
                + " | ".join(
                    _md_cell(str(v)) if v is not None else "-"
                    for v in (
                        row["rank"],
                        row["host"],
                        row["first_error_signature"],
                        row["exit_code"],
                        row["signal"],
                        row["torn_down_by"],
                        row["last_step"],
                        row["last_collective_seq"],
                    )
                )
                + " |"
            )
        lines.append("")
    if d.divergence:
        lines += ["## First lines the healthy baseline never printed", ""]
        for r in d.divergence[:40]:
            where = shown(d, f"{r['file']}:{r['line']}")
            lines.append(f"- {_md_code(where)}: {_md_code(r['text'][:200])}")
        lines.append("")
    return "\n".join(lines)


def _box(console: Any) -> Any:
    """Rounded boxes on a terminal, plain ASCII when the output is piped."""
    from rich import box

    return box.ROUNDED if console.is_terminal else box.ASCII


def render_text(d: Diagnosis, console: Any) -> None:
    """Print the report with rich to ``console``."""
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    box = _box(console)
    i = d.initiating
    if i is not None:
        head = Text()
        head.append(f"{i.signature}", style="bold red")
        head.append(
            f"  rank {i.rank if i.rank is not None else '?'}  host {i.host or '?'}  "
            f"{shown(d, i.where())}" + (f"  {i.ts.isoformat()}" if i.ts else "")
        )
        head.append(f"\n{shown(d, i.text)}\n", style="yellow")
        head.append(f"confidence {d.confidence:.2f}", style="bold")
        console.print(Panel(head, title=f"{headline(d)}: initiating event", expand=True, box=box))
        from .io.readback import lines_around

        for n, x in lines_around(d, before=8, after=2):
            console.print(
                f"{n:>7}{'>' if n == i.line else ' '} {shown(d, x)}",
                markup=False,
                highlight=False,
                style=None if n == i.line else "dim",
                overflow="crop",
                no_wrap=True,
            )
    else:
        console.print(Panel(headline(d), title=d.verdict, box=box))
    for r in d.reasons:
        console.print(f"  - {shown(d, r)}", markup=False, highlight=False)
    from .timeline import text_timeline

    rows = text_timeline(d)
    if len(rows) > 1:
        console.print(
            Text(
                "Timeline (= progress, x first error, ! initiating, | exit/teardown)", style="bold"
            )
        )
        for row in rows:
            console.print(f"  {row}", markup=False, highlight=False)
    if d.resume is not None:
        console.print(Text("Where to resume", style="bold"))
        console.print(f"  {shown(d, _resume_line(d))}", markup=False, highlight=False)
    if d.fix:
        console.print()
        console.print(Text("Root cause", style="bold"))
        console.print(d.fix["root_cause"], markup=False, highlight=False)
        console.print(Text("Fix", style="bold green"))
        console.print(d.fix["fix"], markup=False, highlight=False)
        if d.fix.get("overrides"):
            console.print(override_note(d), style="yellow", markup=False, highlight=False)
        console.print(Text("Verify", style="bold"))
        console.print(f"  {d.fix['verify']}", markup=False, highlight=False)
        console.print(Text("Checklist", style="bold"))
        for n, step in enumerate(d.fix["checklist"], 1):
            console.print(f"  {n}. {step}", markup=False, highlight=False)
        if d.fix["fields"]:
            console.print(
                "  values from the failing line: "
                + ", ".join(f"{k}={v}" for k, v in d.fix["fields"].items()),
                markup=False,
                highlight=False,
            )
        if d.fix.get("job_values"):
            console.print(
                "  values from the job's configuration lines: "
                + ", ".join(f"{k}={v}" for k, v in d.fix["job_values"].items()),
                markup=False,
                highlight=False,
            )
    if d.collateral:
        t = Table(title="collateral (consequences)", show_lines=False, box=box)
        for col in ("signature", "role", "count", "ranks", "hosts", "first"):
            t.add_column(col, overflow="fold")
        for c in d.collateral[:25]:
            t.add_row(
                c.signature,
                c.role,
                str(c.count),
                _ranks(c.ranks),
                ",".join(c.hosts[:4]) or "-",
                shown(d, c.first.where()),
            )
        console.print(t)
    if d.competing:
        console.print(Text("Competing hypotheses", style="bold"))
        for h in d.competing:
            console.print(f"  - {h.signature}: {h.control}", markup=False, highlight=False)
            if h.evidence_for:
                console.print(
                    f"      for: {'; '.join(h.evidence_for)}", markup=False, highlight=False
                )
            if h.evidence_against:
                console.print(
                    f"      against: {'; '.join(h.evidence_against)}", markup=False, highlight=False
                )
    if d.rank_fates.num_rows:
        t = Table(title="rank fates", box=box)
        for col in (
            "rank",
            "host",
            "first error",
            "exit",
            "signal",
            "torn down by",
            "last step",
            "last collective",
        ):
            t.add_column(col, overflow="fold")
        for row in d.rank_fates.to_pylist()[:64]:
            t.add_row(
                *(
                    str(v) if v is not None else "-"
                    for v in (
                        row["rank"],
                        row["host"],
                        row["first_error_signature"],
                        row["exit_code"],
                        row["signal"],
                        row["torn_down_by"],
                        row["last_step"],
                        row["last_collective_seq"],
                    )
                )
            )
        console.print(t)
    if d.divergence:
        console.print(Text("First lines the healthy baseline never printed", style="bold"))
        for div in d.divergence[:40]:
            console.print(
                f"  {shown(d, div['file'])}:{div['line']}: {div['text'][:200]}",
                markup=False,
                highlight=False,
            )
    for e in d.errors:
        console.print(
            f"unreadable: {shown(d, e['path'])}: {e['message']}", style="red", markup=False
        )
    for note in d.notes:
        console.print(f"note: {shown(d, note)}", style="dim", markup=False)


def _level(d: Diagnosis) -> str:
    return "error" if d.verdict == "failure" else "warning"


def to_sarif(d: Diagnosis) -> str:
    """SARIF 2.1.0 for code-scanning UIs: one result for the initiating
    incident (rule = its signature, location = its file and line)."""
    results: list[dict[str, Any]] = []
    rules: list[dict[str, Any]] = []
    i = d.initiating
    if i is not None:
        fix = d.fix or {}
        rules.append(
            {
                "id": i.signature,
                "shortDescription": {"text": fix.get("title") or i.signature},
                "help": {
                    "text": f"{fix.get('fix') or ''}\nVerify: {fix.get('verify') or ''}".strip()
                },
            }
        )
        results.append(
            {
                "ruleId": i.signature,
                "level": _level(d),
                "message": {
                    "text": f"{headline(d)}: {i.signature} on rank "
                    f"{i.rank if i.rank is not None else '?'}: {i.text[:500]}"
                },
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": shown(d, i.file)},
                            "region": {"startLine": i.line},
                        }
                    }
                ],
                "properties": {
                    "confidence": round(d.confidence, 3),
                    "verdict": d.verdict,
                    "rank": i.rank,
                    "host": i.host,
                    "resume_from": d.resume.to_dict() if d.resume is not None else None,
                },
            }
        )
    elif d.verdict != "no-failure-found":
        results.append(
            {"ruleId": d.verdict, "level": "warning", "message": {"text": shown(d, headline(d))}}
        )
        rules.append({"id": d.verdict, "shortDescription": {"text": d.verdict}})
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "denpex",
                        "informationUri": "https://pypi.org/project/denpex_fast/",
                        "rules": rules,
                    }
                },
                "results": results,
            }
        ],
    }
    return json.dumps(doc, indent=2)


def _gh_escape(text: str, prop: bool = False) -> str:
    out = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return out.replace(":", "%3A").replace(",", "%2C") if prop else out


def to_github(d: Diagnosis) -> str:
    """GitHub Actions workflow commands: an ``::error``/``::warning``
    annotation on the initiating line (``::notice`` when nothing failed)."""
    i = d.initiating
    if i is None:
        kind = "notice" if d.verdict == "no-failure-found" else "warning"
        return f"::{kind} title=denpex {d.verdict}::{_gh_escape(shown(d, headline(d)))}"
    title = f"denpex {d.verdict}: {i.signature} (rank {i.rank if i.rank is not None else '?'})"
    fix = (d.fix or {}).get("fix") or ""
    msg = f"{i.text[:500]}\n{fix}".strip()
    if d.resume is not None:
        msg += f"\nResume: {shown(d, _resume_line(d))}"
    return (
        f"::{_level(d)} file={_gh_escape(shown(d, i.file), True)},line={i.line},"
        f"title={_gh_escape(title, True)}::{_gh_escape(msg)}"
    )
