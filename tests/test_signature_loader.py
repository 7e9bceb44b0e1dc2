"""The signature loader: every refusal as data, source precedence, the CLI.

Each bad case is a TOML file written to tmp_path and the exact fragment of
the SignatureError message, which must name the file, the entry and the
field at fault.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

import denpex_fast
from denpex_fast import signatures as S
from denpex_fast.engine.kbcheck import check_signatures, load_signatures, main
from denpex_fast.kb.signatures import (
    ENV_VAR,
    SignatureError,
    SignatureSet,
    builtin_signature_dir,
    load_file,
)

REPO = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------- helpers


def _toml(value: Any) -> str:
    """Render a small subset of TOML (strings, ints, lists, inline tables)."""
    if isinstance(value, str):
        return json.dumps(value)  # JSON string escapes are valid TOML basic strings
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    raise TypeError(type(value))


def entry(sig_id: str = "demo-one", **changes: Any) -> dict[str, Any]:
    """A valid entry; keyword arguments replace keys, ``None`` removes them."""
    base: dict[str, Any] = {
        "id": sig_id,
        "title": "Demo failure",
        "framework": "python",
        "phase": "compute",
        "role": "cause",
        "severity": "error",
        "patterns": [r"DemoFailureMarker \d+"],
        "root_cause": "Something demo happened.",
        "fix": "Do the demo fix.",
        "verify": "grep -c DemoFailureMarker log returns 0",
        "checklist": ["look at the log"],
        "references": ["https://example.com/demo"],
        "examples": {
            "match": ["[rank0]: DemoFailureMarker 42"],
            "nomatch": ["DemoFailureMarker x"],
        },
        "fields": {"number": r"DemoFailureMarker (\d+)"},
    }
    for key, value in changes.items():
        if value is None:
            base.pop(key, None)
        else:
            base[key] = value
    return base


def write(
    path: Path,
    entries: list[dict[str, Any]],
    *,
    schema: str | None = S.SCHEMA,
    family: str | None = None,
    extra: str = "",
) -> Path:
    """Write a signature file; ``family`` defaults to the file stem."""
    lines = []
    if schema is not None:
        lines.append(f"schema = {_toml(schema)}")
    lines.append(f"family = {_toml(family if family is not None else path.stem)}")
    lines.append(extra)
    for e in entries:
        lines.append("\n[[signature]]")
        lines += [f"{json.dumps(k)} = {_toml(v)}" for k, v in e.items()]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No pyproject.toml above the working directory and no DENPEX_SIGNATURES."""
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.delenv(ENV_VAR, raising=False)


# --------------------------------------------------------------------------- refusals

# (case name, entries or raw text, expected fragment after "<file>: ")
ENTRY_CASES: list[tuple[str, list[dict[str, Any]], str]] = [
    ("unknown-field", [entry(colour="red")], "signature 'demo-one': field 'colour': unknown field"),
    ("missing-fix", [entry(fix=None)], "signature 'demo-one': field 'fix': missing required field"),
    (
        "missing-examples",
        [entry(examples=None)],
        "signature 'demo-one': field 'examples': missing required field",
    ),
    ("missing-id", [entry(id=None)], "signature #1: field 'id': missing required field"),
    ("bad-id", [entry("Demo_One")], "signature #1: field 'id': 'Demo_One' is not a kebab-case id"),
    (
        "title-type",
        [entry(title=3)],
        "signature 'demo-one': field 'title': expected a string, got int",
    ),
    ("title-empty", [entry(title="  ")], "signature 'demo-one': field 'title': must not be empty"),
    (
        "title-two-lines",
        [entry(title="a\nb")],
        "signature 'demo-one': field 'title': must be a single line",
    ),
    (
        "framework-case",
        [entry(framework="PyTorch")],
        "signature 'demo-one': field 'framework': 'PyTorch' must be a lower-case name",
    ),
    (
        "patterns-type",
        [entry(patterns="DemoFailureMarker")],
        "signature 'demo-one': field 'patterns': expected a list of strings, got str",
    ),
    (
        "patterns-empty",
        [entry(patterns=[])],
        "signature 'demo-one': field 'patterns': needs at least 1 item(s)",
    ),
    (
        "pattern-item-type",
        [entry(patterns=["DemoFailureMarker", 5])],
        "signature 'demo-one': field 'patterns[1]': expected a string, got int",
    ),
    (
        "pattern-newline",
        [entry(patterns=[r"DemoFailure\nMarker"])],
        "signature 'demo-one': field 'patterns[0]': must match within one line",
    ),
    (
        "role",
        [entry(role="cuase")],
        "signature 'demo-one': field 'role': 'cuase' is not one of cause, symptom, context",
    ),
    (
        "severity",
        [entry(severity="critical")],
        "signature 'demo-one': field 'severity': 'critical' is not one of fatal, error, warning, info",
    ),
    (
        "phase",
        [entry(phase="training")],
        "signature 'demo-one': field 'phase': 'training' is not one of init,",
    ),
    (
        "checklist-empty",
        [entry(checklist=[])],
        "signature 'demo-one': field 'checklist': needs at least 1 item(s)",
    ),
    (
        "references-empty",
        [entry(references=[])],
        "signature 'demo-one': field 'references': needs at least 1 item(s)",
    ),
    (
        "reference-not-url",
        [entry(references=["see issue 12"])],
        "signature 'demo-one': field 'references[0]': 'see issue 12' is not an http(s) URL",
    ),
    (
        "fields-type",
        [entry(fields=["x"])],
        "signature 'demo-one': field 'fields': expected a table of name = regex, got list",
    ),
    (
        "fields-bad-regex",
        [entry(fields={"size": r"size=(\d+"})],
        "signature 'demo-one': field 'fields.size': Python re refuses 'size=(\\\\d+'",
    ),
    (
        "fields-no-group",
        [entry(fields={"size": r"size=\d+"})],
        "signature 'demo-one': field 'fields.size': needs exactly 1 capture group, found 0",
    ),
    (
        "fields-two-groups",
        [entry(fields={"size": r"(size)=(\d+)"})],
        "signature 'demo-one': field 'fields.size': needs exactly 1 capture group, found 2",
    ),
    (
        "fields-name",
        [entry(fields={"a-b": r"(x)"})],
        "signature 'demo-one': field 'fields.a-b': field names must be identifiers",
    ),
    (
        "examples-no-match",
        [entry(examples={"nomatch": ["x"]})],
        "signature 'demo-one': field 'examples.match': missing required field",
    ),
    (
        "examples-empty-match",
        [entry(examples={"match": []})],
        "signature 'demo-one': field 'match': needs at least 1 item(s)",
    ),
    (
        "examples-unknown",
        [entry(examples={"match": ["DemoFailureMarker 1"], "maybe": ["x"]})],
        "signature 'demo-one': field 'examples.maybe': unknown field",
    ),
    (
        "examples-multiline",
        [entry(examples={"match": ["DemoFailureMarker 1\nnext"]})],
        "signature 'demo-one': field 'examples.match[0]': an example is a single line",
    ),
    (
        "caused-by-type",
        [entry(caused_by="demo-two")],
        "signature 'demo-one': field 'caused_by': expected a list of strings, got str",
    ),
    (
        "caused-by-self",
        [entry(caused_by=["demo-one"])],
        "signature 'demo-one': field 'caused_by[0]': an entry cannot refer to itself",
    ),
    (
        "triggers-bad-id",
        [entry(triggers=["Not An Id"])],
        "signature 'demo-one': field 'triggers[0]': 'Not An Id' is not a kebab-case id",
    ),
    (
        "competing-no-control",
        [entry(competing=[{"id": "demo-two"}])],
        "signature 'demo-one': field 'competing[0].control': missing required field",
    ),
    (
        "competing-extra",
        [entry(competing=[{"id": "demo-two", "control": "x", "why": "y"}])],
        "signature 'demo-one': field 'competing[0].why': unknown field",
    ),
    (
        "competing-not-table",
        [entry(competing=["demo-two"])],
        "signature 'demo-one': field 'competing[0]': expected a table",
    ),
    (
        "versions-type",
        [entry(versions=2)],
        "signature 'demo-one': field 'versions': expected a string, got int",
    ),
    (
        "duplicate-in-file",
        [entry(), entry()],
        "signature 'demo-one': field 'id': duplicate id, already defined in",
    ),
]


@pytest.mark.parametrize(
    ("name", "entries", "fragment"), ENTRY_CASES, ids=[c[0] for c in ENTRY_CASES]
)
def test_entry_refusals(
    tmp_path: Path, name: str, entries: list[dict[str, Any]], fragment: str
) -> None:
    path = write(tmp_path / "demo.toml", entries)
    with pytest.raises(SignatureError) as info:
        load_signatures([path], builtin=False)
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    assert fragment in message, message
    assert isinstance(info.value, ValueError)


# (case name, file stem, file text, expected fragment)
FILE_CASES: list[tuple[str, str, str, str]] = [
    (
        "schema-version",
        "demo",
        'schema = "denpex.signatures/2"\nfamily = "demo"\n',
        "field 'schema': unsupported schema version 'denpex.signatures/2'; this loader reads 'denpex.signatures/1'",
    ),
    ("schema-missing", "demo", 'family = "demo"\n', "field 'schema': missing"),
    (
        "family-mismatch",
        "demo",
        'schema = "denpex.signatures/1"\nfamily = "other"\n',
        "field 'family': expected 'demo' (the file name), got 'other'",
    ),
    (
        "unknown-top-level",
        "demo",
        'schema = "denpex.signatures/1"\nfamily = "demo"\nowner = "me"\n',
        "field 'owner': unknown top-level field",
    ),
    (
        "signature-not-array",
        "demo",
        'schema = "denpex.signatures/1"\nfamily = "demo"\nsignature = 3\n',
        "field 'signature': expected [[signature]] tables",
    ),
    ("not-toml", "demo", "schema = \n", "not valid TOML"),
    (
        "entry-not-table",
        "demo",
        'schema = "denpex.signatures/1"\nfamily = "demo"\nsignature = [1]\n',
        "signature #1: expected a [[signature]] table",
    ),
]


@pytest.mark.parametrize(
    ("name", "stem", "text", "fragment"), FILE_CASES, ids=[c[0] for c in FILE_CASES]
)
def test_file_refusals(tmp_path: Path, name: str, stem: str, text: str, fragment: str) -> None:
    path = tmp_path / f"{stem}.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SignatureError) as info:
        load_file(path)
    assert str(info.value).startswith(f"{path}: ")
    assert fragment in str(info.value)


def test_family_prefix_is_enforced_for_shipped_families(tmp_path: Path) -> None:
    path = write(tmp_path / "numerics.toml", [entry("demo-one")])
    with pytest.raises(
        SignatureError,
        match=r"signature 'demo-one': field 'id': ids in family 'numerics' start with num-",
    ):
        load_file(path)


def test_duplicate_ids_across_files_of_one_source_name_both_files(tmp_path: Path) -> None:
    first = write(tmp_path / "kb" / "alpha.toml", [entry()])
    second = write(tmp_path / "kb" / "beta.toml", [entry()])
    with pytest.raises(SignatureError) as info:
        load_signatures([tmp_path / "kb"], builtin=False)
    message = str(info.value)
    assert message.startswith(f"{second}: signature 'demo-one': field 'id': duplicate id")
    assert str(first) in message


def test_missing_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SignatureError, match="does not exist"):
        load_signatures([tmp_path / "nowhere"], builtin=False)


def test_dangling_references_are_warnings_when_loading(tmp_path: Path) -> None:
    path = write(
        tmp_path / "demo.toml",
        [entry(caused_by=["nope-missing"], competing=[{"id": "nope-other", "control": "x"}])],
    )
    kb = load_signatures([path], builtin=False)
    assert len(kb) == 1
    assert (
        f"{path}: signature 'demo-one': field 'caused_by': unknown id 'nope-missing'" in kb.warnings
    )
    assert (
        f"{path}: signature 'demo-one': field 'competing[0].id': unknown id 'nope-other'"
        in kb.warnings
    )


def test_dangling_references_are_errors_in_check(tmp_path: Path) -> None:
    path = write(tmp_path / "demo.toml", [entry(triggers=["nope-missing"])])
    problems, _notes, count = check_signatures([path])
    assert count == 1
    assert f"{path}: signature 'demo-one': field 'triggers': unknown id 'nope-missing'" in problems


def test_check_collects_every_problem(tmp_path: Path) -> None:
    path = write(
        tmp_path / "demo.toml",
        [entry(role="x"), entry("demo-two", severity="y"), entry("demo-three", role="symptom")],
    )
    problems, _notes, count = check_signatures([path])
    assert count == 1  # only demo-three parsed
    assert any("'demo-one': field 'role'" in p for p in problems)
    assert any("'demo-two': field 'severity'" in p for p in problems)
    assert (
        f"{path}: signature 'demo-three': field 'caused_by': a symptom names at least one cause"
        in problems
    )


def test_check_lints_pattern_literals(tmp_path: Path) -> None:
    path = write(
        tmp_path / "demo.toml",
        [
            entry(
                patterns=[r".*DemoFailureMarker", r"\d+ ab \d+"],
                examples={"match": ["DemoFailureMarker 1 ab 2"]},
            )
        ],
    )
    problems, _notes, _count = check_signatures([path])
    assert (
        f"{path}: signature 'demo-one': field 'patterns[0]': must not start with '.*'" in problems
    )
    assert (
        f"{path}: signature 'demo-one': field 'patterns[1]': needs a literal of at least 6 characters"
        in problems
    )


def test_check_runs_examples(tmp_path: Path) -> None:
    path = write(
        tmp_path / "demo.toml",
        [entry(examples={"match": ["nothing here"], "nomatch": ["DemoFailureMarker 7"]})],
    )
    problems, _notes, _count = check_signatures([path])
    assert any(
        p.startswith(f"{path}: signature 'demo-one': field 'examples.match[0]': does not match")
        for p in problems
    )
    assert any(
        p.startswith(f"{path}: signature 'demo-one': field 'examples.nomatch[0]': matches")
        for p in problems
    )


def test_hyperscan_refusal_names_file_id_and_pattern(tmp_path: Path) -> None:
    pytest.importorskip("denpex_fast._denpex_scan")
    # Backreferences are outside the Hyperscan subset.
    path = write(
        tmp_path / "demo.toml",
        [entry(), entry("demo-two", patterns=["DemoFailureMarker", r"(abcdef)\1"])],
    )
    with pytest.raises(SignatureError) as info:
        load_signatures([path], builtin=False)
    message = str(info.value)
    assert message.startswith(
        f"{path}: signature 'demo-two': field 'patterns[1]': Hyperscan refuses '(abcdef)\\\\1': "
    )
    assert len(message) > len(
        f"{path}: signature 'demo-two': field 'patterns[1]': Hyperscan refuses '(abcdef)\\\\1': "
    )
    problems, _notes, _count = check_signatures([path])
    assert any(
        "signature 'demo-two': field 'patterns[1]': Hyperscan refuses" in p for p in problems
    )


# --------------------------------------------------------------------------- precedence


def _title(kb: SignatureSet) -> str:
    return kb["demo-one"].title


def test_precedence_pyproject_env_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    (project / "sub" / "deeper").mkdir(parents=True)
    write(project / "kb" / "proj.toml", [entry(title="from pyproject"), entry("demo-two")])
    (project / "pyproject.toml").write_text(
        '[tool.denpex_fast]\nsignatures = ["kb"]\n', encoding="utf-8"
    )
    monkeypatch.chdir(project / "sub" / "deeper")  # the nearest pyproject.toml is found upwards

    kb = load_signatures(builtin=False)
    assert _title(kb) == "from pyproject" and "demo-two" in kb

    env_file = write(tmp_path / "env" / "envkb.toml", [entry(title="from env")])
    monkeypatch.setenv(ENV_VAR, str(env_file.parent))
    kb = load_signatures(builtin=False)
    assert _title(kb) == "from env"
    assert kb["demo-one"].source == str(env_file)
    assert kb["demo-two"].title == "Demo failure"  # entries not overridden stay

    arg_file = write(tmp_path / "arg" / "argkb.toml", [entry(title="from paths")])
    kb = load_signatures([arg_file], builtin=False)
    assert _title(kb) == "from paths"


def test_env_var_later_entries_override_earlier(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = write(tmp_path / "a" / "team.toml", [entry(title="team")])
    b = write(tmp_path / "b" / "mine.toml", [entry(title="mine")])
    monkeypatch.setenv(ENV_VAR, f"{a}{os.pathsep}{b.parent}{os.pathsep}")  # empty items are skipped
    kb = load_signatures(builtin=False)
    assert _title(kb) == "mine"


def test_nearest_pyproject_wins_even_without_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "outer" / "kb" / "x.toml", [entry()])
    (tmp_path / "outer" / "pyproject.toml").write_text(
        '[tool.denpex_fast]\nsignatures = ["kb"]\n', encoding="utf-8"
    )
    inner = tmp_path / "outer" / "inner"
    inner.mkdir()
    (inner / "pyproject.toml").write_text('[project]\nname = "inner"\n', encoding="utf-8")
    monkeypatch.chdir(inner)
    assert len(load_signatures(builtin=False)) == 0


def test_bad_pyproject_setting_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.denpex_fast]\nsignatures = "kb"\n', encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        SignatureError, match=r"pyproject.toml: field 'tool.denpex_fast.signatures'"
    ):
        load_signatures(builtin=False)


def test_user_entry_overrides_builtin(tmp_path: Path) -> None:
    path = write(
        tmp_path / "override.toml", [entry("os-segfault", title="site-specific segfault advice")]
    )
    kb = load_signatures([path])
    assert kb["os-segfault"].title == "site-specific segfault advice"
    assert kb["os-segfault"].source == str(path)
    assert "os-sigkill" in kb  # the rest of the built-in set is still there


# --------------------------------------------------------------------------- API


def test_signature_set_api(tmp_path: Path) -> None:
    path = write(
        tmp_path / "demo.toml",
        [
            entry("demo-b", role="symptom", caused_by=["demo-a"]),
            entry("demo-a", competing=[{"id": "demo-b", "control": "look at the rank"}]),
        ],
    )
    kb = load_signatures([path], builtin=False)
    assert kb.ids == ("demo-a", "demo-b") and [s.id for s in kb] == ["demo-a", "demo-b"]
    assert len(kb) == 2 and kb.warnings == ()
    assert kb.patterns() == {
        "demo-a": [r"DemoFailureMarker \d+"],
        "demo-b": [r"DemoFailureMarker \d+"],
    }
    assert [s.id for s in kb.by_role("symptom")] == ["demo-b"]
    with pytest.raises(ValueError):
        kb.by_role("victim")
    assert kb.extract_fields("demo-a", "[rank3]: DemoFailureMarker 1234 happened") == {
        "number": "1234"
    }
    assert kb.extract_fields("demo-a", "unrelated") == {}
    assert kb["demo-a"].competing == (("demo-b", "look at the rank"),)
    assert kb["demo-a"].examples_match == ("[rank0]: DemoFailureMarker 42",)
    assert kb["demo-a"].family == "demo"
    with pytest.raises(KeyError, match="no signature with id 'demo-zzz'"):
        kb["demo-zzz"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        kb["demo-a"].title = "changed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        kb["demo-a"].fields["new"] = "(x)"  # type: ignore[index]
    assert hash(kb["demo-a"]) == hash(kb["demo-a"])

    other = SignatureSet(
        [
            dataclasses.replace(kb["demo-a"], title="patched"),
            dataclasses.replace(kb["demo-a"], id="demo-c", competing=()),
        ]
    )
    merged = kb.merged_with(other)
    assert merged.ids == ("demo-a", "demo-b", "demo-c") and merged["demo-a"].title == "patched"
    assert kb["demo-a"].title == "Demo failure"  # the original set is unchanged


def test_signature_set_refuses_duplicates(tmp_path: Path) -> None:
    sig = load_file(write(tmp_path / "demo.toml", [entry()]))[0]
    with pytest.raises(SignatureError, match="duplicate id"):
        SignatureSet([sig, dataclasses.replace(sig, source="other.toml")])


def test_builtin_dir_holds_the_repository_files() -> None:
    # a source checkout uses signatures/ itself, an installed wheel its copy
    shipped = {p.name: p.read_bytes() for p in builtin_signature_dir().glob("*.toml")}
    repo = {p.name: p.read_bytes() for p in (REPO / "signatures").glob("*.toml")}
    assert shipped == repo and "python_os.toml" in shipped


def test_builtin_dir_from_installed_package_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An installed wheel ships the files as the data-only package denpex_fast.builtin_signatures.
    data = tmp_path / "site" / "builtin_signatures"
    write(data / "demo.toml", [entry()])
    monkeypatch.setattr(denpex_fast, "__path__", [str(tmp_path / "site"), *denpex_fast.__path__])
    monkeypatch.delitem(sys.modules, "denpex_fast.builtin_signatures", raising=False)
    try:
        assert builtin_signature_dir() == data
    finally:
        sys.modules.pop("denpex_fast.builtin_signatures", None)


# --------------------------------------------------------------------------- schema.json


def test_json_schema_agrees_with_the_loader() -> None:
    schema = json.loads((REPO / "signatures" / "schema.json").read_text(encoding="utf-8"))
    assert schema["properties"]["schema"]["const"] == S.SCHEMA
    assert set(schema["properties"]) == set(S.FILE_KEYS)
    assert schema["additionalProperties"] is False
    sig = schema["$defs"]["signature"]
    assert set(sig["properties"]) == set(S.ENTRY_KEYS)
    assert set(sig["required"]) == set(S.REQUIRED_KEYS)
    assert sig["additionalProperties"] is False
    assert sig["properties"]["role"]["enum"] == list(S.ROLES)
    assert sig["properties"]["severity"]["enum"] == list(S.SEVERITIES)
    assert sig["properties"]["phase"]["enum"] == list(S.PHASES)
    assert set(sig["properties"]["examples"]["properties"]) == set(S.EXAMPLE_KEYS)
    assert set(sig["properties"]["competing"]["items"]["properties"]) == {"id", "control"}
    doc = (REPO / "signatures" / "SCHEMA.md").read_text(encoding="utf-8")
    for key in S.ENTRY_KEYS:
        assert f"`{key}`" in doc or key == "examples", key


def test_json_schema_accepts_the_shipped_files_and_refuses_bad_ones(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib

    schema = json.loads((REPO / "signatures" / "schema.json").read_text(encoding="utf-8"))
    for path in sorted((REPO / "signatures").glob("*.toml")):
        jsonschema.validate(tomllib.loads(path.read_text(encoding="utf-8")), schema)
    bad = write(tmp_path / "demo.toml", [entry(colour="red")])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(tomllib.loads(bad.read_text(encoding="utf-8")), schema)


# --------------------------------------------------------------------------- command line


def test_cli_check_list_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write(tmp_path / "kb" / "demo.toml", [entry()])
    assert main(["check", str(good)]) == 0
    assert "1 signatures checked, 0 problem(s)" in capsys.readouterr().err

    bad = write(tmp_path / "bad" / "demo.toml", [entry(role="nope")])
    assert main(["check", str(bad)]) == 1
    assert f"{bad}: signature 'demo-one': field 'role'" in capsys.readouterr().out

    assert main(["list", "--no-builtin", "-p", str(good.parent)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^demo-one\s+cause\s+error\s+Demo failure$", out, re.M)

    assert main(["show", "demo-one", "--no-builtin", "-p", str(good)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("demo-one — Demo failure") and "Do the demo fix." in out
    assert main(["show", "demo-zzz", "--no-builtin", "-p", str(good)]) == 1


def test_hyperscan_refusal_after_an_anchored_pattern_names_the_right_index(
    tmp_path: Path,
) -> None:
    pytest.importorskip("denpex_fast._denpex_scan")
    # an anchored pattern compiles as two expressions; the refusal still
    # names the entry's own third pattern
    path = write(
        tmp_path / "demo.toml",
        [
            entry(),
            entry("demo-two", patterns=["^DemoFailureMarker", "AnotherMarker", r"(abcdef)\1"]),
        ],
    )
    with pytest.raises(SignatureError) as info:
        load_signatures([path], builtin=False)
    assert "field 'patterns[2]': Hyperscan refuses '(abcdef)\\\\1'" in str(info.value)
    problems, _notes, _count = check_signatures([path])
    assert any("field 'patterns[2]': Hyperscan refuses" in p for p in problems), problems
