"""Every case under tests/corpus/public/ carries a valid truth.json whose lines exist verbatim."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

PUBLIC = Path(__file__).parent / "corpus" / "public"
CASES = sorted(p for p in PUBLIC.iterdir() if p.is_dir()) if PUBLIC.is_dir() else []

SCHEMA = "denpex.truth/1"
FIELDS: dict[str, type | tuple[type, ...]] = {
    "schema": str,
    "case": str,
    "source": list,
    "framework": str,
    "versions": str,
    "failure_class": str,
    "initiating": dict,
    "downstream": list,
    "root_cause": str,
    "fix": str,
    "resolution_evidence": str,
    "confidence": str,
    "first_failure_not_loudest": bool,
    "notes": str,
}
PROSE = (
    "framework",
    "versions",
    "failure_class",
    "root_cause",
    "fix",
    "resolution_evidence",
    "notes",
)


def _truth(case: Path) -> dict[str, Any]:
    with open(case / "truth.json", encoding="utf-8") as f:
        return json.load(f)


def _lines(case: Path, name: str) -> list[str]:
    # 1-based line N of a file is element N-1 of its text split on "\n" only
    return (case / name).read_text(encoding="utf-8").split("\n")


def _check_line(case: Path, ref: dict[str, Any], where: str) -> None:
    name = ref.get("file")
    assert isinstance(name, str) and name, f"{where}: file missing"
    assert "/" not in name and "\\" not in name and name not in (".", ".."), (
        f"{where}: bad file {name!r}"
    )
    assert name != "truth.json", f"{where}: points at truth.json"
    assert (case / name).is_file(), f"{where}: {name} does not exist"
    line, text = ref.get("line"), ref.get("text")
    assert isinstance(line, int) and not isinstance(line, bool) and line >= 1, (
        f"{where}: bad line {line!r}"
    )
    assert isinstance(text, str) and text.strip(), f"{where}: empty text"
    lines = _lines(case, name)
    assert line <= len(lines), f"{where}: line {line} past end of {name} ({len(lines)} lines)"
    assert lines[line - 1] == text, (
        f"{where}: {name}:{line} is {lines[line - 1]!r}, expected {text!r}"
    )
    rank = ref.get("rank")
    assert rank is None or (isinstance(rank, int) and not isinstance(rank, bool) and rank >= 0), (
        f"{where}: bad rank {rank!r}"
    )


def test_corpus_is_present() -> None:
    assert len(CASES) >= 28, f"expected at least 28 public cases, found {len(CASES)}"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_truth_schema(case: Path) -> None:
    truth = _truth(case)
    # expected_verdict: "stopped" for a silent hang whose first rank the logs do not show
    optional = {"expected_verdict"} if truth.get("expected_verdict") == "stopped" else set()
    # a healthy control: a real run that ended well, nothing to name
    healthy = truth.get("healthy") is True
    if healthy:
        optional.add("healthy")
    keys = set(truth) - optional
    assert keys == set(FIELDS), f"fields differ: {sorted(keys ^ set(FIELDS))}"
    for key, typ in FIELDS.items():
        if healthy and key == "initiating":
            assert truth[key] is None, "a healthy control names no initiating line"
            continue
        assert isinstance(truth[key], typ), f"{key} should be {typ}"
    if healthy:
        assert truth["downstream"] == [] and truth["failure_class"] == "none"
    assert truth["schema"] == SCHEMA
    assert truth["case"] == case.name
    assert truth["source"], "source is empty"
    for src in truth["source"]:
        assert isinstance(src, str) and src.startswith("https://"), (
            f"source entry {src!r} is not a URL"
        )
    assert truth["confidence"] in ("high", "medium")
    for key in PROSE:
        assert truth[key].strip(), f"{key} is empty"
    logs = [p for p in case.iterdir() if p.is_file() and p.name != "truth.json"]
    assert logs, "no log file next to truth.json"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_lines_exist_verbatim(case: Path) -> None:
    truth = _truth(case)
    ini = truth["initiating"]
    if ini is None and truth.get("healthy") is True:
        return  # a healthy control names no line
    assert set(ini) == {"rank", "host", "file", "line", "text"}, f"initiating keys: {sorted(ini)}"
    assert ini["host"] is None or (isinstance(ini["host"], str) and ini["host"]), "bad host"
    if ini["file"] is None:
        # a rank that printed nothing of its failure (it was still busy while
        # its peers timed out): the truth names the rank alone
        assert ini["line"] is None and ini["text"] is None, "a rank-only truth has no line"
        if truth.get("expected_verdict") == "stopped" and ini["rank"] is None:
            return  # a silent hang whose first rank the logs do not show
        assert isinstance(ini["rank"], int) and ini["rank"] >= 0, "a rank-only truth needs a rank"
    else:
        _check_line(case, ini, "initiating")
    for i, ref in enumerate(truth["downstream"]):
        assert isinstance(ref, dict) and set(ref) == {"rank", "file", "line", "text"}, (
            f"downstream[{i}] keys"
        )
        _check_line(case, ref, f"downstream[{i}]")
        assert (ref["file"], ref["line"]) != (ini["file"], ini["line"]), (
            f"downstream[{i}] is the initiating line itself"
        )


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_logs_are_text(case: Path) -> None:
    for p in case.iterdir():
        if p.is_file():
            data = p.read_bytes()
            data.decode("utf-8")
            assert b"\r" not in data, f"{p.name} has carriage returns"
            assert data.endswith(b"\n"), f"{p.name} does not end with a newline"
