"""The HTML report in a real browser: headless Chromium loads the file
offline, the DOM has a lane per rank and the initiating mark, nothing
leaves the page, and a screenshot is saved (CI keeps it under a temp dir)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

import denpex_fast as dx
from denpex_fast.timeline import lanes, text_timeline, to_html

SAMPLE = Path(dx.__file__).parent / "samples" / "sample_job"
CHROMIUM = (
    shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
)


def _browser() -> str:
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install chromium (.ci/run does)")
        pytest.skip("no chromium on this machine")
    return CHROMIUM


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            _browser(),
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_html_is_self_contained() -> None:
    page = to_html(dx.diagnose(str(SAMPLE)))
    assert page.startswith("<!DOCTYPE html>")
    # nothing to fetch: no script, no external resource, a CSP that forbids loads
    assert "<script" not in page
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page)
    assert "url(" not in page
    assert "default-src 'none'" in page


def test_text_timeline_has_a_row_per_rank() -> None:
    d = dx.diagnose(str(SAMPLE))
    rows = text_timeline(d)
    assert [r.split()[1] for r in rows] == [str(ln.rank) for ln in lanes(d)]
    assert any("!" in r for r in rows)


def test_html_in_headless_chromium(tmp_path: Path) -> None:
    d = dx.diagnose(str(SAMPLE))
    page = tmp_path / "report.html"
    page.write_text(to_html(d), encoding="utf-8")
    dom = _run("--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    ranks = re.findall(r'<g class="lane" data-rank="(\d+)"', dom.stdout)
    assert sorted(map(int, ranks)) == sorted(ln.rank for ln in lanes(d)) and len(ranks) >= 4
    assert dom.stdout.count('class="mark initiating"') == 1
    assert "mat1 and mat2 shapes cannot be multiplied" in dom.stdout  # the hover text of the mark
    shots = Path(os.environ.get("DENPEX_ARTIFACTS") or tempfile.mkdtemp(prefix="denpex-html-"))
    shots.mkdir(parents=True, exist_ok=True)
    png = shots / "sample_job_report.png"
    shot = _run("--window-size=1400,1000", f"--screenshot={png}", page.as_uri())
    assert shot.returncode == 0 and png.is_file() and png.stat().st_size > 10_000, shot.stderr[
        -2000:
    ]
    print(f"screenshot: {png}")
