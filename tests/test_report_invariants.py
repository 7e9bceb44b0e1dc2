"""Invariants of the report over every corpus job (dev and blind alike: these
check the report's consistency, not its accuracy).

The initiating signature never reappears as its own competitor or among the
collateral; the verify step names a file of the job; text and Markdown show
paths relative to the job directory; every verdict is one of the closed set.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from corpus_eval import case_dirs

import denpex_fast as dx
from denpex_fast.analysis.diagnosis import VERDICTS
from denpex_fast.report import render_text, to_json, to_markdown

HERE = Path(__file__).parent
CASES = case_dirs([HERE / "corpus" / "cases", HERE / "corpus" / "public"])


@pytest.fixture(scope="module")
def diagnoses() -> list[tuple[Path, dx.Diagnosis]]:
    out = []
    for case in CASES:
        # the case directory minus its truth.json, as a user would pass a job
        files = [str(p) for p in sorted(case.rglob("*")) if p.is_file() and p.name != "truth.json"]
        d = dx.diagnose(files)
        d.root = str(case)
        out.append((case, d))
    return out


def test_verdicts_are_the_closed_set(diagnoses) -> None:  # type: ignore[no-untyped-def]
    assert {d.verdict for _, d in diagnoses} <= set(VERDICTS)
    for _, d in diagnoses:
        named = d.initiating is not None or d.suspect_rank is not None
        assert named == (d.verdict in ("failure", "suspect")), d.verdict


def test_initiating_is_not_its_own_competitor_or_collateral(diagnoses) -> None:  # type: ignore[no-untyped-def]
    for case, d in diagnoses:
        if d.initiating is None:
            continue
        sig = d.initiating.signature
        assert sig not in {h.signature for h in d.competing}, case.name
        assert sig not in {c.signature for c in d.collateral}, case.name


def test_verify_names_a_file_of_the_job(diagnoses) -> None:  # type: ignore[no-untyped-def]
    checked = 0
    for _case, d in diagnoses:
        if not d.fix or d.initiating is None:
            continue
        verify = d.fix["verify"]
        assert not re.search(r"(?<![\w./-])job\.log(?![\w.-])", verify), verify
        if d.initiating.file in verify or shlex.quote(d.initiating.file) in verify:
            assert Path(d.initiating.file).is_file()
            checked += 1
    assert checked >= 10


def test_reports_show_paths_relative_to_the_job(diagnoses) -> None:  # type: ignore[no-untyped-def]
    from rich.console import Console

    for case, d in diagnoses[:40]:
        md = to_markdown(d)
        console = Console(record=True, width=120, file=open("/dev/null", "w"))  # noqa: SIM115
        render_text(d, console)
        text = console.export_text()
        for out in (md, text):
            body = out.split("## Verify")[0] if out is md else out.split("Verify")[0]
            assert str(case) + "/" not in body, (case.name, body[:400])
        assert to_json(d)
