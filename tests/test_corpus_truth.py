"""Checks of the generated corpus under tests/corpus/cases/.

Fast: every case's truth.json is well formed, and every initiating/downstream line it
names exists at the stated file and line with exactly the stated text. Slow: the
generator really produces a case and finds its initiating line by itself.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parent / "corpus"
CASES_DIR = CORPUS / "cases"
CASE_DIRS = sorted(
    p
    for d in (CASES_DIR, CORPUS / "matrix-shift1", CORPUS / "matrix-shift2")
    if d.is_dir()
    for p in d.glob("*")
    if (p / "truth.json").is_file()
)

TOP_KEYS = {
    "schema",
    "case",
    "source",
    "generator",
    "healthy",
    "initiating",
    "downstream",
    "root_cause",
    "fix",
    "clock_offsets_s",
    "versions",
    "notes",
}
INITIATING_KEYS = {"rank", "host", "file", "line", "text", "signature_hint"}
DOWNSTREAM_KEYS = {"rank", "file", "line", "text"}
# Optional (the launcher x fault matrix, cases 025 on): what a diagnosis should conclude.
VERDICTS = {"failure", "suspect", "stopped", "no-failure-found"}


def _lines(path: Path) -> list[str]:
    # The generator reads files the same way: UTF-8 with replacement, split on line ends.
    return path.read_bytes().decode("utf-8", errors="replace").splitlines()


def _load(case_dir: Path) -> dict:
    return json.loads((case_dir / "truth.json").read_text(encoding="utf-8"))


def _check_line(case_dir: Path, ref: dict) -> None:
    rel = ref["file"]
    assert not rel.startswith("/") and ".." not in Path(rel).parts, rel
    path = case_dir / rel
    assert path.is_file(), f"{case_dir.name}: {rel} missing"
    lines = _lines(path)
    n = ref["line"]
    assert isinstance(n, int) and 1 <= n <= len(lines), f"{case_dir.name}: {rel}:{n} out of range"
    assert lines[n - 1] == ref["text"], (
        f"{case_dir.name}: {rel}:{n} is {lines[n - 1]!r}, not {ref['text']!r}"
    )


def _ids(p: Path) -> str:
    return p.name


def test_corpus_is_present():
    assert len(CASE_DIRS) >= 15, f"expected the committed corpus under {CASES_DIR}"
    names = [p.name for p in CASE_DIRS]
    assert any(_load(p)["healthy"] for p in CASE_DIRS)
    assert len(set(n[4:] for n in names)) == len(names), "duplicate case names"


@pytest.mark.parametrize("case_dir", CASE_DIRS, ids=_ids)
def test_truth_is_valid(case_dir: Path):
    t = _load(case_dir)
    missing = TOP_KEYS - t.keys()
    assert not missing, f"missing keys {missing}"
    assert t["schema"] == "denpex.truth/1"
    assert t["case"] == case_dir.name
    m = re.fullmatch(r"(?:shift(\d)-)?\d{3}-([a-z0-9-]+)", t["case"])
    assert m
    assert t["source"] == "generated"
    shift, name = m.groups()
    if shift:  # the matrix regenerated with every target rank shifted
        assert re.fullmatch(
            rf"CORPUS_RANK_SHIFT={shift} tests/corpus/generate\.py "
            rf"--cases {name} --steps \d+",
            t["generator"],
        )
    else:
        assert t["generator"] == f"tests/corpus/generate.py --cases {name}"
    assert isinstance(t["healthy"], bool)
    for key in ("torch", "python", "platform"):
        assert isinstance(t["versions"].get(key), str) and t["versions"][key]
    assert isinstance(t["clock_offsets_s"], dict)
    assert all(isinstance(v, (int, float)) for v in t["clock_offsets_s"].values())
    for key in ("root_cause", "fix", "notes"):
        assert isinstance(t[key], str) and t[key]
    verdict = t.get("expected_verdict")
    assert verdict is None or verdict in VERDICTS, verdict
    if int(re.search(r"(\d{3})-", t["case"]).group(1)) >= 25:
        assert verdict is not None, "cases from 025 on carry expected_verdict"
    if t["healthy"]:
        assert t["initiating"] is None
        assert t["downstream"] == []
        assert verdict in (None, "no-failure-found")
    elif verdict == "stopped":
        # A healthy run whose logs end mid-run: no initiating line, the last line before the cut.
        assert t["initiating"] is None
        assert t["downstream"] == []
        assert {"file", "line", "text"} <= t["last_line"].keys()
    else:
        assert verdict in (None, "failure", "suspect")
        ini = t["initiating"]
        assert isinstance(ini, dict) and INITIATING_KEYS <= ini.keys()
        assert ini["rank"] is None or isinstance(ini["rank"], int)
        assert isinstance(ini["host"], str) and ini["host"]
        assert isinstance(ini["signature_hint"], str) and ini["signature_hint"]
        assert isinstance(t["downstream"], list)
        for d in t["downstream"]:
            assert DOWNSTREAM_KEYS <= d.keys()
            assert d["rank"] is None or isinstance(d["rank"], int)


@pytest.mark.parametrize("case_dir", CASE_DIRS, ids=_ids)
def test_named_lines_exist(case_dir: Path):
    t = _load(case_dir)
    refs = ([t["initiating"]] if t["initiating"] else []) + t["downstream"]
    if t.get("last_line"):
        refs.append(t["last_line"])
        last = t["last_line"]
        assert last["line"] == len(_lines(case_dir / last["file"])), (
            "last_line is not the file's last line"
        )
    for ref in refs:
        _check_line(case_dir, ref)


@pytest.mark.parametrize("case_dir", CASE_DIRS, ids=_ids)
def test_no_machine_paths(case_dir: Path):
    leaks = [
        re.compile(rb"denpex-corpus-"),  # the generator's temp dir
        re.compile(rb"/[\w.+-]+(?:/[\w.+-]+)*/site-packages"),  # absolute site-packages
        re.compile(rb"/\.pyenv/|/usr/lib/python3|/home/\w+/|/root/"),
    ]
    for path in case_dir.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for pat in leaks:
                m = pat.search(data)
                assert m is None, f"{path.relative_to(case_dir)}: machine path {m.group(0)!r}"


def _load_generator():
    spec = importlib.util.spec_from_file_location("corpus_generate", CORPUS / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up here
    spec.loader.exec_module(mod)
    return mod


def test_case_table_matches_committed_cases():
    gen = _load_generator()
    committed = {re.sub(r"^shift\d-", "", p.name) for p in CASE_DIRS}
    expected = {gen.case_dirname(c) for c in gen.CASES}
    assert committed <= expected, f"cases without a generator entry: {committed - expected}"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_generator_locates_initiating_line(tmp_path: Path):
    pytest.importorskip("torch")
    gen = _load_generator()
    rc = gen.main(["--out", str(tmp_path), "--cases", "sys-exit-3"])
    assert rc == 0
    (case_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert case_dir.name.endswith("-sys-exit-3")
    t = _load(case_dir)
    ini = t["initiating"]
    assert ini["rank"] == 1
    assert re.search(r"exitcode:? *:? 3\b", ini["text"]), ini["text"]
    _check_line(case_dir, ini)
    for d in t["downstream"]:
        _check_line(case_dir, d)
    # The job really ran: the faulted rank logged progress before it exited.
    rank1 = [p for p in case_dir.rglob("stderr.log") if "rank=1 " in p.read_text(errors="replace")]
    assert rank1 and "step=4 loss=" in rank1[0].read_text(errors="replace")


# -- the held-out family (tests/corpus/holdout.py) --------------------------------------

HOLDOUT_CASES = sorted(
    p.parent
    for root in ("holdout", "holdout2", "holdout3", "holdout4", "holdout5")
    for p in (Path(__file__).parent / "corpus" / root).glob("*/truth.json")
)


def test_holdout_families_are_present() -> None:
    names = {p.parent.name for p in HOLDOUT_CASES}
    assert {"holdout", "holdout2", "holdout3", "holdout4", "holdout5"} <= names
    assert len(HOLDOUT_CASES) >= 100


@pytest.mark.parametrize(
    "case", HOLDOUT_CASES, ids=[f"{p.parent.name}/{p.name}" for p in HOLDOUT_CASES]
)
def test_holdout_truth_lines_exist_verbatim(case: Path) -> None:
    t = json.loads((case / "truth.json").read_text())
    assert t["case"] == case.name and t["source"] == "generated"
    assert t["generator"].startswith("tests/corpus/holdout.py --variant ")
    named = [t["initiating"], *t["downstream"]] if t["initiating"] else []
    assert t["healthy"] == (t["initiating"] is None)
    for x in named:
        # lines end at "\n" only, as grep and the scanner count them (a tqdm
        # bar's "\r" redraws stay inside their line)
        lines = (case / x["file"]).read_bytes().decode("utf-8", "replace").split("\n")
        assert lines[x["line"] - 1] == x["text"], x
    for f in case.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            assert b"/tmp/denpex-holdout-" not in data and b"/work/" not in data, f
