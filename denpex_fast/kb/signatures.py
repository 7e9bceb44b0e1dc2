"""Load, validate and query the failure-signature knowledge base.

A signature file is TOML, one file per family (``signatures/<family>.toml``),
following the schema ``denpex.signatures/1`` that ``signatures/SCHEMA.md``
describes and ``signatures/schema.json`` states as JSON Schema.  This module
implements every check itself, so loading needs no JSON Schema library.

Example::

    from denpex_fast.kb.signatures import load_signatures

    kb = load_signatures()                      # built-ins + user sources
    sig = kb["os-sigkill"]
    print(sig.role, sig.severity, sig.fix)
    patterns = kb.patterns()                    # {id: [expression, ...]} for the scanner
    kb.extract_fields("os-sigkill", "  traceback : Signal 9 (SIGKILL) received by PID 81234")
    # -> {'pid': '81234'}

Sources and precedence (each later source overrides earlier ones entry by
entry, matched by ``id``):

1. the built-in knowledge base (:func:`builtin_signature_dir`);
2. ``[tool.denpex_fast] signatures = [...]`` in the first ``pyproject.toml``
   found in the current directory or its parents (paths relative to that
   file);
3. the ``DENPEX_SIGNATURES`` environment variable (``os.pathsep``-separated
   directories or files, relative to the current directory);
4. the ``paths`` argument of :func:`load_signatures`.

Within each list, later entries override earlier ones too.  Each directory
or file named is one source; a directory contributes its ``*.toml`` files
(not recursively).  The same id twice inside one source is an error that
names both files, because it is almost always a copy-paste slip rather than
an intended override.

Command line::

    python -m denpex_fast.engine.kbcheck check [FILES...]   # strict; exit 0/1
    python -m denpex_fast.engine.kbcheck list
    python -m denpex_fast.engine.kbcheck show ID

This module is long because it is the knowledge base's schema and its
validation: every field's rule and its error message naming file, id and field.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from dataclasses import fields as _dataclass_fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeAlias

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, from PyPI
    import tomli as tomllib

from ..errors import SignatureError
from ..schema import builtin_signature_dir

log = logging.getLogger(__name__)

__all__ = [
    "COLLECTOR_PREFIXES",
    "ENTRY_KEYS",
    "ENV_VAR",
    "FAMILY_PREFIXES",
    "PHASES",
    "REQUIRED_KEYS",
    "ROLES",
    "SCHEMA",
    "SEVERITIES",
    "Signature",
    "SignatureError",
    "SignatureSet",
    "builtin_signature_dir",
    "dangling_references",
    "env_signature_paths",
    "format_signature",
    "load_file",
    "load_patterns",
    "load_signatures",
    "pyproject_signature_paths",
    "scan_forms",
    "source_pattern",
]

SCHEMA = "denpex.signatures/1"
ENV_VAR = "DENPEX_SIGNATURES"

ROLES = ("cause", "symptom", "context")
SEVERITIES = ("fatal", "error", "warning", "info")
PHASES = (
    "init", "rendezvous", "communication", "memory", "compute", "data",
    "checkpoint", "hardware", "launcher", "scheduler", "numerics", "config",
    "storage", "zero", "pipeline", "serving", "shutdown",
)  # fmt: skip

#: Keys of one ``[[signature]]`` table, in the order they are checked.
REQUIRED_KEYS = (
    "id", "title", "framework", "phase", "role", "severity", "patterns",
    "root_cause", "fix", "verify", "checklist", "references", "examples",
)  # fmt: skip
OPTIONAL_KEYS = ("caused_by", "triggers", "competing", "fields", "versions", "marks")

#: What an entry's ``marks`` may say; the ranking reads these, never id spellings.
MARKS: Mapping[str, str] = MappingProxyType(
    {
        "catch-all": "an error-like line of any kind: yields to any other entry on the same line "
        "and ranks below specific causes (the open-world tier)",
        "wrapper": "re-raises or summarises an error that another line of the same incident "
        "prints (DistBackendError, ChildFailedError): yields to that line",
        "agent-teardown": "the launcher's agent stopped this rank because another one failed",
        "scheduler-teardown": "the scheduler or orchestrator stopped the job (cancel, time limit)",
        "completion": "the job or its training loop finished normally",
        "ignored": "Python says it ignored an exception (raised in an atexit callback, a "
        "destructor, a thread at shutdown): the traceback printed after it ended nothing",
        "exit": "a process is exiting in order (its communicators destroyed, its experiment "
        "tracker closed, the interpreter shutting down): in a job with no error, such a line "
        "after the last progress means the job ended itself, not that it was stopped",
        "fallback": "a fallback the program announces and goes on with (a loopback address, a "
        "slower transport): harmless alone, the cause only of an error its ``triggers`` name "
        "printed in the same job",
        "checkpoint-saved": "a checkpoint was written (its step and path in the fields): the report "
        "names the last one before the failure as the resume point",
        "start": "the launcher started the job's workers or the training loop began: a job that "
        "started and never completed is not healthy",
        "anonymous-exit": "reports that a worker failed without reliably naming which one: the "
        "ranking gives it the rank whose own output stopped first",
        "record": "a line of a launcher's record of a failed process (its rank, pid, host or exit "
        "code): it joins the incident next to it and lends it its rank",
        "prelude": "opens a report whose error line comes later (anomaly mode's forward traceback): "
        "it joins the next incident of the same rank in the same file",
        "traceback-start": "opens a Python traceback: a log that ends inside its frames, before "
        "the exception line (a cut paste, a process killed while printing), failed there",
        "stack-dump": "opens one thread's stack in a dump taken of a live process (py-spy dump, "
        "faulthandler): a job whose logs are such dumps was hung, and the process whose stack "
        "differs from its peers' is where the hang starts",
        "main-first": "a frame of a barrier only the main process (rank 0) ends (main_process_first, "
        "zero_first): when ranks fail waiting in it and rank 0 printed no error, rank 0 is the "
        "suspect",
        "rank-claim": "a process announcing the global rank it took, once per process and attempt "
        "(its rank and the world size in the fields): one rank claimed twice in a file before the "
        "world's claims are all in means two processes took that rank",
        "collective-record": "one rank's record of a collective it entered (kind, size, and the "
        "communicator's sequence number in the fields): ranks whose records at one number differ "
        "took different paths, and the rank alone in its kind is where the job went wrong",
        "family": "a whole family of errors read by its common form (CUDA's 'CUDA error: <text>'): a "
        "specific cause, but it yields to any other cause or symptom entry on the same line",
        "unreachable": "this process could not reach the rendezvous store or a peer (connect timeout, "
        "connection refused): when the host it tried is a rank that printed nothing, "
        "that rank is the suspect",
        "request-failed": "a server's access line answering one request with an error status: "
        "the error record logged for that request is the request's, when the server then "
        "answers others successfully",
        "request-served": "a server's access line answering a request successfully: three after "
        "an error record show the server went on serving past it",
        "echo": "repeats the message of a line a process printed before (NCCL's 'Last error:' "
        "detail repeats that process's last WARN): when that line is in the job's logs, it "
        "names the failure and this one is its echo",
        "shutdown": "a server announces that it is shutting down in order (asked to stop by a "
        "signal or by its operator): after the server had started, what any process prints "
        "after this line is that shutdown's teardown; errors before it are named as usual",
        "store-host": "printed by the process that hosts the rendezvous store (the TCPStore "
        "master): with env:// or tcp:// initialisation that is rank 0, so a line without a rank "
        "of its own is rank 0's",
    }
)
ENTRY_KEYS = REQUIRED_KEYS + OPTIONAL_KEYS
FILE_KEYS = ("schema", "family", "signature")
EXAMPLE_KEYS = ("match", "nomatch")

#: Id prefixes of the shipped families; files of other families are free.
FAMILY_PREFIXES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "pytorch": ("torch-",),
    "nccl": ("nccl-",),
    "cuda": ("cuda-",),
    "xid_kernel": ("xid-",),
    "deepspeed": ("ds-",),
    "megatron": ("megatron-",),
    "huggingface": ("hf-",),
    "lightning": ("lightning-",),
    "vllm": ("vllm-", "serve-"),
    "slurm": ("slurm-",),
    "kubernetes": ("k8s-",),
    "storage": ("storage-",),
    "dataloader": ("data-",),
    "numerics": ("num-",),
    "python_os": ("os-",),
    "generic": ("any-",),
    "horovod": ("horovod-",),
    "ascend": ("ascend-",),
    "jax": ("jax-",),
})  # fmt: skip

_ID_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")
_FRAMEWORK_RE = re.compile(r"[a-z0-9][a-z0-9._+-]*\Z")
_FIELD_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_URL_RE = re.compile(r"https?://\S+\Z")


def field_pattern(expr: str) -> str:
    """``expr`` (one capture group, Python syntax) with that group named ``v``
    and written for RE2, which pyarrow's regex kernels run in linear time."""
    out: list[str] = []
    i, n, in_class = 0, len(expr), False
    while i < n:
        c = expr[i]
        if c == "\\" and i + 1 < n:
            out.append(expr[i : i + 2])
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
            out.append(c)
        elif c == "[":
            in_class = True
            out.append(c)
            if expr[i + 1 : i + 2] == "^":
                out.append("^")
                i += 1
            if expr[i + 1 : i + 2] == "]":  # a leading ] is a literal
                out.append("]")
                i += 1
        elif c == "(" and expr[i + 1 : i + 2] != "?":
            out.append("(?P<v>")
        elif c == "(" and expr.startswith("(?P<", i):
            out.append("(?P<v>")
            i = expr.index(">", i)
        else:
            out.append(c)
        i += 1
    return "".join(out)


def field_values(texts: Any, expr: str) -> Any:
    """The ``fields`` regex ``expr`` applied to a string array: the captured text
    per element (null where it does not match), on RE2."""
    import pyarrow.compute as pc

    return pc.struct_field(pc.extract_regex(texts, field_pattern(expr)), "v")


def re2_problem(expr: str) -> str | None:
    """Why RE2 refuses a ``fields`` regex (backreferences, lookaround), or None."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        pc.extract_regex(pa.array([""], pa.string()), field_pattern(expr))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        return f"RE2 (the linear-time engine fields run on) refuses {expr!r}: {exc}"
    return None


StrPath: TypeAlias = "str | os.PathLike[str]"


@dataclass(frozen=True)
class Signature:
    """One knowledge-base entry: how a failure looks in a log and what to do.

    Attributes mirror the TOML keys of ``denpex.signatures/1``; list values
    become tuples, ``competing`` becomes ``((id, control), ...)``,
    ``examples.match``/``examples.nomatch`` become ``examples_match`` and
    ``examples_nomatch``, absent optional values are empty, and ``source``
    is the file the entry was read from.
    """

    id: str
    title: str
    framework: str
    phase: str
    role: str
    severity: str
    patterns: tuple[str, ...]
    root_cause: str
    fix: str
    verify: str
    checklist: tuple[str, ...]
    references: tuple[str, ...]
    examples_match: tuple[str, ...]
    examples_nomatch: tuple[str, ...] = ()
    caused_by: tuple[str, ...] = ()
    triggers: tuple[str, ...] = ()
    competing: tuple[tuple[str, str], ...] = ()
    # A read-only mapping; left out of the hash because mappings are unhashable.
    fields: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), hash=False)
    versions: str = ""
    marks: tuple[str, ...] = ()
    family: str = ""
    source: str = ""
    # the file of the entry this one replaced (same id, an earlier source), if any
    overrides: str = ""

    def extract_fields(self, text: str) -> dict[str, str]:
        """Apply this entry's ``fields`` regexes to one matched line.

        Returns ``{name: captured text}`` for every field whose regex found
        something; fields that do not occur in ``text`` are left out.  The
        regexes run on RE2 (linear time: no pattern can backtrack for ever).
        """
        import pyarrow as pa

        texts = pa.array([text], pa.string())
        found: dict[str, str] = {}
        for name, expr in self.fields.items():
            value = field_values(texts, expr)[0].as_py()
            if value is not None:
                found[name] = value
        return found

    def __reduce__(self) -> tuple[Any, ...]:
        # A mappingproxy does not pickle: send ``fields`` as a plain dict.
        state = {f.name: getattr(self, f.name) for f in _dataclass_fields(self)}
        state["fields"] = dict(self.fields)
        return (_rebuild_signature, (state,))


def _rebuild_signature(state: dict[str, Any]) -> Signature:
    """A :class:`Signature` from its pickled state (``fields`` read-only again)."""
    return Signature(**{**state, "fields": MappingProxyType(state["fields"])})


class SignatureSet:
    """An immutable collection of signatures ordered by id.

    ``warnings`` holds the problems that do not stop a load: ids named in
    ``caused_by``/``triggers``/``competing`` that no loaded entry defines
    (so a user's partial directory still loads), and skipped validation.
    """

    __slots__ = ("_by_id", "_ids", "_notes")

    def __init__(self, signatures: Iterable[Signature] = (), warnings: Iterable[str] = ()):
        """Build a set; two entries with the same id raise :class:`SignatureError`."""
        by_id: dict[str, Signature] = {}
        for sig in signatures:
            prev = by_id.get(sig.id)
            if prev is not None:
                raise SignatureError(
                    f"{sig.source}: signature '{sig.id}': field 'id': "
                    f"duplicate id, already defined in {prev.source}"
                )
            by_id[sig.id] = sig
        self._ids = tuple(sorted(by_id))
        self._by_id = MappingProxyType({i: by_id[i] for i in self._ids})
        self._notes = tuple(dict.fromkeys(warnings))

    def __len__(self) -> int:
        return len(self._ids)

    def __iter__(self) -> Iterator[Signature]:
        return iter(self._by_id.values())

    def __contains__(self, sig_id: object) -> bool:
        return sig_id in self._by_id

    def __getitem__(self, sig_id: str) -> Signature:
        try:
            return self._by_id[sig_id]
        except KeyError:
            raise KeyError(f"no signature with id {sig_id!r}") from None

    def __repr__(self) -> str:
        return f"<SignatureSet {len(self)} signatures>"

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickles as its entries and load notes (the mappingproxy itself does
        # not pickle), so worker processes get the very set the caller loaded.
        return (SignatureSet, (tuple(self._by_id.values()), self._notes))

    @property
    def ids(self) -> tuple[str, ...]:
        """All ids, sorted."""
        return self._ids

    @property
    def warnings(self) -> tuple[str, ...]:
        """Non-fatal problems: load notes plus dangling cross-references."""
        return self._notes + tuple(dangling_references(self))

    def patterns(self) -> dict[str, list[str]]:
        """Map each id to its Hyperscan expressions, the form the scanner takes
        (a line-start anchor sees through collector prefixes: :func:`scan_forms`)."""
        return {
            sid: [form for p in sig.patterns for form in scan_forms(p)]
            for sid, sig in self._by_id.items()
        }

    def by_role(self, role: str) -> tuple[Signature, ...]:
        """The entries whose role is ``role`` (``cause``, ``symptom`` or ``context``)."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
        return tuple(sig for sig in self if sig.role == role)

    def extract_fields(self, sig_id: str, text: str) -> dict[str, str]:
        """Apply the ``fields`` regexes of signature ``sig_id`` to one matched line."""
        return self[sig_id].extract_fields(text)

    def merged_with(self, other: SignatureSet) -> SignatureSet:
        """A new set holding both; ``other``'s entries replace ours with the same id."""
        merged = dict(self._by_id)
        merged.update(other._by_id)
        return SignatureSet(merged.values(), self._notes + other._notes)


def dangling_references(sigs: Iterable[Signature], known: Iterable[str] | None = None) -> list[str]:
    """Messages for ``caused_by``/``triggers``/``competing`` ids that nothing defines.

    ``known`` defaults to the ids of ``sigs`` themselves.
    """
    sigs = list(sigs)
    known_ids = set(known) if known is not None else {s.id for s in sigs}
    out = []
    for sig in sigs:
        refs = [("caused_by", r) for r in sig.caused_by] + [("triggers", r) for r in sig.triggers]
        refs += [(f"competing[{i}].id", cid) for i, (cid, _) in enumerate(sig.competing)]
        for where, ref in refs:
            if ref not in known_ids:
                out.append(
                    f"{sig.source}: signature '{sig.id}': field '{where}': unknown id '{ref}'"
                )
    return out


# --------------------------------------------------------------------------- parsing


def _entry_error(where: str, key: str, problem: str) -> SignatureError:
    return SignatureError(f"{where}: field '{key}': {problem}")


def _text(raw: Mapping[str, Any], key: str, where: str, *, one_line: bool = False) -> str:
    value = raw[key]
    if not isinstance(value, str):
        raise _entry_error(where, key, f"expected a string, got {type(value).__name__}")
    if not value.strip():
        raise _entry_error(where, key, "must not be empty")
    if one_line and "\n" in value:
        raise _entry_error(where, key, "must be a single line")
    return value.strip()


def _text_list(
    raw: Mapping[str, Any], key: str, where: str, *, min_len: int = 0
) -> tuple[str, ...]:
    value = raw.get(key, [])
    if not isinstance(value, list):
        raise _entry_error(where, key, f"expected a list of strings, got {type(value).__name__}")
    if len(value) < min_len:
        raise _entry_error(where, key, f"needs at least {min_len} item(s)")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise _entry_error(
                where, f"{key}[{i}]", f"expected a string, got {type(item).__name__}"
            )
        if not item.strip():
            raise _entry_error(where, f"{key}[{i}]", "must not be empty")
    return tuple(value)


def _choice(raw: Mapping[str, Any], key: str, where: str, allowed: tuple[str, ...]) -> str:
    value = _text(raw, key, where)
    if value not in allowed:
        raise _entry_error(where, key, f"{value!r} is not one of {', '.join(allowed)}")
    return value


def _id_list(raw: Mapping[str, Any], key: str, where: str, own_id: str) -> tuple[str, ...]:
    ids = _text_list(raw, key, where)
    for i, ref in enumerate(ids):
        if not _ID_RE.match(ref):
            raise _entry_error(where, f"{key}[{i}]", f"{ref!r} is not a kebab-case id")
        if ref == own_id:
            raise _entry_error(where, f"{key}[{i}]", "an entry cannot refer to itself")
    return ids


def _outside_class_newline(expr: str) -> bool:
    """True when ``expr`` contains ``\\n`` outside a character class."""
    in_class = False
    i = 0
    while i < len(expr):
        c = expr[i]
        if c == "\\" and i + 1 < len(expr):
            if expr[i + 1] == "n" and not in_class:
                return True
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
            # a ']' right after '[' or '[^' is a literal member
            if expr[i + 1 : i + 2] == "]":
                i += 1
            elif expr[i + 1 : i + 3] == "^]":
                i += 2
        elif c == "]" and in_class:
            in_class = False
        i += 1
    return False


def _patterns(raw: Mapping[str, Any], where: str) -> tuple[str, ...]:
    pats = _text_list(raw, "patterns", where, min_len=1)
    for i, expr in enumerate(pats):
        # Lines are scanned one at a time: a newline can never be matched.
        if "\n" in expr or "\r" in expr or _outside_class_newline(expr):
            raise _entry_error(where, f"patterns[{i}]", "must match within one line (no newline)")
    return pats


def _fields(raw: Mapping[str, Any], where: str) -> Mapping[str, str]:
    value = raw.get("fields", {})
    if not isinstance(value, dict):
        raise _entry_error(
            where, "fields", f"expected a table of name = regex, got {type(value).__name__}"
        )
    out: dict[str, str] = {}
    for name, expr in value.items():
        key = f"fields.{name}"
        if not _FIELD_NAME_RE.match(name):
            raise _entry_error(where, key, "field names must be identifiers")
        if not isinstance(expr, str) or not expr:
            raise _entry_error(where, key, "expected a non-empty regex string")
        try:
            compiled = re.compile(expr)
        except re.error as exc:
            raise _entry_error(where, key, f"Python re refuses {expr!r}: {exc}") from None
        if compiled.groups != 1:
            raise _entry_error(
                where, key, f"needs exactly 1 capture group, found {compiled.groups}"
            )
        problem = re2_problem(expr)
        if problem:
            raise _entry_error(where, key, problem)
        out[name] = expr
    return MappingProxyType(out)


def _competing(raw: Mapping[str, Any], where: str, own_id: str) -> tuple[tuple[str, str], ...]:
    value = raw.get("competing", [])
    if not isinstance(value, list):
        raise _entry_error(
            where,
            "competing",
            f"expected a list of {{id, control}} tables, got {type(value).__name__}",
        )
    out = []
    for i, item in enumerate(value):
        key = f"competing[{i}]"
        if not isinstance(item, dict):
            raise _entry_error(where, key, "expected a table { id = ..., control = ... }")
        extra = sorted(set(item) - {"id", "control"})
        if extra:
            raise _entry_error(where, f"{key}.{extra[0]}", "unknown field (allowed: id, control)")
        for sub in ("id", "control"):
            if sub not in item:
                raise _entry_error(where, f"{key}.{sub}", "missing required field")
            if not isinstance(item[sub], str) or not item[sub].strip():
                raise _entry_error(where, f"{key}.{sub}", "expected a non-empty string")
        if not _ID_RE.match(item["id"]):
            raise _entry_error(where, f"{key}.id", f"{item['id']!r} is not a kebab-case id")
        if item["id"] == own_id:
            raise _entry_error(where, f"{key}.id", "an entry cannot compete with itself")
        out.append((item["id"], item["control"].strip()))
    return tuple(out)


def _examples(raw: Mapping[str, Any], where: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    value = raw["examples"]
    if not isinstance(value, dict):
        raise _entry_error(
            where, "examples", "expected a table with match = [...] and nomatch = [...]"
        )
    extra = sorted(set(value) - set(EXAMPLE_KEYS))
    if extra:
        raise _entry_error(where, f"examples.{extra[0]}", "unknown field (allowed: match, nomatch)")
    if "match" not in value:
        raise _entry_error(where, "examples.match", "missing required field")
    lists = []
    for sub, min_len in (("match", 1), ("nomatch", 0)):
        lines = _text_list(value, sub, f"{where}", min_len=min_len) if sub in value else ()
        for i, line in enumerate(lines):
            if "\n" in line or "\r" in line:
                raise _entry_error(where, f"examples.{sub}[{i}]", "an example is a single line")
        lists.append(lines)
    return lists[0], lists[1]


def _parse_entry(raw: Any, source: str, family: str, index: int) -> Signature:
    where = f"{source}: signature #{index + 1}"
    if not isinstance(raw, dict):
        raise SignatureError(f"{where}: expected a [[signature]] table")
    if "id" not in raw:
        raise _entry_error(where, "id", "missing required field")
    sid = raw["id"]
    if not isinstance(sid, str) or not _ID_RE.match(sid):
        raise _entry_error(where, "id", f"{sid!r} is not a kebab-case id (a-z, 0-9, '-')")
    where = f"{source}: signature '{sid}'"
    prefixes = FAMILY_PREFIXES.get(family)
    if prefixes and not sid.startswith(prefixes):
        raise _entry_error(
            where, "id", f"ids in family '{family}' start with {' or '.join(prefixes)}"
        )
    unknown = [k for k in raw if k not in ENTRY_KEYS]
    if unknown:
        raise _entry_error(
            where, unknown[0], "unknown field (allowed: " + ", ".join(ENTRY_KEYS) + ")"
        )
    for key in REQUIRED_KEYS:
        if key not in raw:
            raise _entry_error(where, key, "missing required field")

    framework = _text(raw, "framework", where)
    if not _FRAMEWORK_RE.match(framework):
        raise _entry_error(where, "framework", f"{framework!r} must be a lower-case name")
    references = _text_list(raw, "references", where, min_len=1)
    for i, ref in enumerate(references):
        if not _URL_RE.match(ref):
            raise _entry_error(where, f"references[{i}]", f"{ref!r} is not an http(s) URL")
    versions = raw.get("versions", "")
    if not isinstance(versions, str):
        raise _entry_error(where, "versions", f"expected a string, got {type(versions).__name__}")
    match, nomatch = _examples(raw, where)
    marks = _text_list(raw, "marks", where, min_len=0) if "marks" in raw else ()
    for i, mark in enumerate(marks):
        if mark not in MARKS:
            raise _entry_error(
                where, f"marks[{i}]", f"{mark!r} is not a known mark (allowed: {', '.join(MARKS)})"
            )
    return Signature(
        id=sid,
        title=_text(raw, "title", where, one_line=True),
        framework=framework,
        phase=_choice(raw, "phase", where, PHASES),
        role=_choice(raw, "role", where, ROLES),
        severity=_choice(raw, "severity", where, SEVERITIES),
        patterns=_patterns(raw, where),
        root_cause=_text(raw, "root_cause", where),
        fix=_text(raw, "fix", where),
        verify=_text(raw, "verify", where),
        checklist=_text_list(raw, "checklist", where, min_len=1),
        references=references,
        examples_match=match,
        examples_nomatch=nomatch,
        caused_by=_id_list(raw, "caused_by", where, sid),
        triggers=_id_list(raw, "triggers", where, sid),
        competing=_competing(raw, where, sid),
        fields=_fields(raw, where),
        versions=versions.strip(),
        marks=tuple(marks),
        family=family,
        source=source,
    )


def parse_document(
    data: bytes, source: str, stem: str, problems: list[str] | None
) -> list[Signature]:
    """Parse one file; with ``problems`` given, collect entry errors instead of raising."""
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SignatureError(f"{source}: not valid TOML: {exc}") from None
    unknown = [k for k in doc if k not in FILE_KEYS]
    if unknown:
        raise SignatureError(
            f"{source}: field '{unknown[0]}': unknown top-level field (allowed: schema, family, signature)"
        )
    if "schema" not in doc:
        raise SignatureError(f"{source}: field 'schema': missing; expected schema = \"{SCHEMA}\"")
    if doc["schema"] != SCHEMA:
        raise SignatureError(
            f"{source}: field 'schema': unsupported schema version {doc['schema']!r}; this loader reads {SCHEMA!r}"
        )
    family = doc.get("family")
    if not isinstance(family, str) or family != stem:
        raise SignatureError(
            f"{source}: field 'family': expected {stem!r} (the file name), got {family!r}"
        )
    entries = doc.get("signature", [])
    if not isinstance(entries, list):
        raise SignatureError(f"{source}: field 'signature': expected [[signature]] tables")
    out: list[Signature] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(entries):
        try:
            sig = _parse_entry(raw, source, family, index)
            if sig.id in seen:
                raise SignatureError(
                    f"{source}: signature '{sig.id}': field 'id': duplicate id, "
                    f"already defined in {source} (signature #{seen[sig.id] + 1})"
                )
        except SignatureError as exc:
            if problems is None:
                raise
            problems.append(str(exc))
            continue
        seen[sig.id] = index
        out.append(sig)
    return out


#: bump when parsing, :class:`Signature` or :func:`scan_forms` changes: cached
#: parses of older loaders are ignored
PARSED_FORMAT = 6

#: What a log collector writes before every line a process printed: the
#: RFC 3339 time of kubelet's CRI files and of ``kubectl logs --timestamps``
#: (with the CRI stream and tag), ``kubectl logs --prefix``, the Kubeflow
#: training SDK's ``[Pod <name>]: ``, the
#: ``(Name pid=N, ip=A)`` of a Ray worker's lines on the driver, and the
#: terminal colours kept around them.
COLLECTOR_PREFIXES = (
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d) (?:std(?:out|err) [FP] )?",
    r"\[pod/[^\]\s]+\] ",
    r"\[Pod [^\]\s]+\]: ",
    r"\([\w.-]+ (?:[^()\n]{0,80} )?pid=\d+[^()\n]{0,80}\) ?",
    r"\x1b\[[\d;]*m",
)
#: ``docker compose logs``' service column (``trainer-1  | ``).  It gets an
#: expression of its own: folded into the optional prefix group above, a word
#: class that can also read the entry's first word makes Vectorscan 5.4 miss
#: the entry on a line that follows a long line starting with that word
#: (``^(?:[a-z]+ +\| )?ERROR `` finds only the first of two long ``ERROR``
#: lines); two expressions find both.
SERVICE_COLUMN = r"[\w.-]+ +\| "
_LEADING_ANCHOR = re.compile(r"((?:\(\?[a-zA-Z]+\))?)\^")


def scan_forms(expr: str) -> list[str]:
    """``expr`` as the scanner compiles it: an entry anchored at the line start
    (``^``) also matches behind :data:`COLLECTOR_PREFIXES` and a
    :data:`SERVICE_COLUMN`, so a pattern written against a terminal's lines
    finds the same lines in logs gathered from a cluster.  One expression for
    an unanchored pattern, two for an anchored one."""
    m = _LEADING_ANCHOR.match(expr)
    if m is None:
        return [expr]
    flags, body = m.group(1), expr[m.end() :]
    prefixes = f"(?:{'|'.join(COLLECTOR_PREFIXES)})*"
    return [
        f"{flags}^{prefixes}{body}",
        f"{flags}^{prefixes}{SERVICE_COLUMN}{prefixes}{body}",
    ]


def source_pattern(patterns: Sequence[str], index: int) -> int:
    """The index in ``patterns`` of the ``index``-th expression of their
    :func:`scan_forms` (-1 when out of range)."""
    for k, p in enumerate(patterns):
        index -= len(scan_forms(p))
        if index < 0:
            return k
    return -1


def load_file(path: StrPath) -> list[Signature]:
    """Parse and validate one signature file; raise :class:`SignatureError` on the first problem.

    Cross-references and Hyperscan compilation are not checked here; they
    need the whole set (see :func:`load_signatures`).
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise SignatureError(f"{p}: cannot read signature file: {exc.strerror or exc}") from None
    from . import cache

    # parsing the TOML is most of a command's start-up: a file already parsed
    # (same path, same bytes, same loader) is read back from the cache
    key = cache.parsed_key(str(p), data, PARSED_FORMAT)
    sigs = cache.load_parsed(key)
    if isinstance(sigs, list) and all(isinstance(x, Signature) for x in sigs):
        return sigs
    sigs = parse_document(data, str(p), p.stem, None)
    cache.store_parsed(key, sigs)
    return sigs


def _source_files(path: Path, origin: str) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.glob("*.toml") if p.is_file())
    if path.is_file():
        return [path]
    raise SignatureError(f"{path}: signature path from {origin} does not exist")


def _load_source(path: Path, origin: str) -> list[Signature]:
    """Load one directory or file; duplicate ids inside it are errors naming both files."""
    seen: dict[str, Signature] = {}
    for file in _source_files(path, origin):
        for sig in load_file(file):
            prev = seen.get(sig.id)
            if prev is not None:
                raise SignatureError(
                    f"{sig.source}: signature '{sig.id}': field 'id': duplicate id, "
                    f"already defined in {prev.source}"
                )
            seen[sig.id] = sig
    return list(seen.values())


# --------------------------------------------------------------------------- sources


def _find_pyproject(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def pyproject_signature_paths(start: StrPath | None = None) -> list[Path]:
    """Paths listed in ``[tool.denpex_fast] signatures`` of the nearest ``pyproject.toml``.

    The search starts in ``start`` (default: the current directory) and
    walks up to the filesystem root, stopping at the first ``pyproject.toml``
    found even if it has no such table.  Relative paths are resolved against
    that file's directory.
    """
    pyproject = _find_pyproject(Path(start) if start is not None else Path.cwd())
    if pyproject is None:
        return []
    try:
        doc = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SignatureError(f"{pyproject}: cannot read [tool.denpex_fast]: {exc}") from None
    section = doc.get("tool", {}).get("denpex_fast", {})
    value = section.get("signatures", []) if isinstance(section, dict) else []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise SignatureError(
            f"{pyproject}: field 'tool.denpex_fast.signatures': expected a list of paths"
        )
    return [pyproject.parent / v for v in value]


def env_signature_paths() -> list[Path]:
    """Paths from the ``DENPEX_SIGNATURES`` environment variable (``os.pathsep``-separated)."""
    raw = os.environ.get(ENV_VAR, "")
    return [Path(p) for p in raw.split(os.pathsep) if p.strip()]


def as_path_list(paths: StrPath | Iterable[StrPath] | None) -> list[Path]:
    if paths is None:
        return []
    if isinstance(paths, (str, os.PathLike)):
        return [Path(paths)]
    return [Path(p) for p in paths]


def _sources(paths: StrPath | Iterable[StrPath] | None, builtin: bool) -> list[tuple[Path, str]]:
    """Where :func:`load_signatures` reads, lowest precedence first, with each one's origin."""
    sources: list[tuple[Path, str]] = []
    if builtin:
        sources.append((builtin_signature_dir(), "the built-in knowledge base"))
    sources += [(p, "pyproject.toml [tool.denpex_fast]") for p in pyproject_signature_paths()]
    sources += [(p, ENV_VAR) for p in env_signature_paths()]
    sources += [(p, "the paths argument") for p in as_path_list(paths)]
    return sources


def load_patterns(
    paths: StrPath | Iterable[StrPath] | None = None,
    *,
    builtin: bool = True,
) -> tuple[dict[str, list[str]], Callable[[], SignatureSet]]:
    """The id -> expressions map of ``load_signatures(paths, builtin=builtin)``.

    A scan needs only the expressions, and rebuilding every entry of the
    knowledge base is most of a scan command's start-up.  The map is cached
    under the bytes of every file the load reads (in order, with the sources
    they come from), so an edited, added or removed file is a miss.  A set
    that fails to load is never cached: its error is raised on every call.
    Also returns a function giving the :class:`SignatureSet` of those same
    sources (the set already loaded on a miss; loaded on its first call on a
    hit, and the same set on every later call).
    """
    from . import cache

    sources = _sources(paths, builtin)
    parts = [f"patterns\0{PARSED_FORMAT}"]
    try:
        for path, origin in sources:
            parts.append(f"source\0{origin}\0{path}")
            for file in _source_files(path, origin):
                parts.append(cache.parsed_key(str(file), file.read_bytes(), PARSED_FORMAT))
    except (OSError, SignatureError):
        parts = []  # the full load below names the problem
    key = cache.parsed_key("", "\n".join(parts).encode(), PARSED_FORMAT) if parts else None
    if key is not None:
        hit = cache.load_parsed(key)
        if isinstance(hit, dict) and all(
            isinstance(k, str) and isinstance(v, list) and all(isinstance(x, str) for x in v)
            for k, v in hit.items()
        ):
            # once: every holder of the function (a scanner and its twins) gets one set
            return hit, functools.cache(lambda: _merge(sources))
    kb = _merge(sources)
    patterns = kb.patterns()
    if key is not None:
        cache.store_parsed(key, patterns)
    return patterns, lambda: kb


def load_signatures(
    paths: StrPath | Iterable[StrPath] | None = None,
    *,
    builtin: bool = True,
) -> SignatureSet:
    """Load the knowledge base plus user signatures into one :class:`SignatureSet`.

    Sources, lowest precedence first (a later source replaces an earlier
    entry with the same id): the built-in files (when ``builtin``), the
    ``[tool.denpex_fast] signatures`` list of the nearest ``pyproject.toml``,
    the ``DENPEX_SIGNATURES`` variable, then ``paths``.  Every directory or
    file is one source; the same id twice inside one source raises
    :class:`SignatureError` naming both files.

    Unknown ids in ``caused_by``/``triggers``/``competing`` do not fail the
    load; they are listed in :attr:`SignatureSet.warnings`.  With
    Patterns are not compiled here (the knowledge base does not depend on the
    engine): :func:`denpex_fast.engine.kbcheck.load_signatures`, which
    ``dx.load_signatures`` is, loads and then compiles every expression.
    """
    return _merge(_sources(paths, builtin))


def _merge(sources: list[tuple[Path, str]]) -> SignatureSet:
    merged: dict[str, Signature] = {}
    for path, origin in sources:
        for sig in _load_source(path, origin):
            prev = merged.get(sig.id)
            if prev is not None:  # reports say which entry replaced which
                log.info("%s: '%s' replaces the entry of %s", sig.source, sig.id, prev.source)
                sig = replace(sig, overrides=prev.source)
            merged[sig.id] = sig
    return SignatureSet(merged.values())


# --------------------------------------------------------------------------- text output


def format_signature(sig: Signature) -> str:
    """A readable multi-line description of one entry (what ``show`` prints)."""
    lines = [
        f"{sig.id} — {sig.title}",
        f"  {sig.framework} / {sig.phase} / {sig.role} / {sig.severity}   ({sig.source})",
        "",
        "Patterns:",
        *(f"  {p}" for p in sig.patterns),
        "",
        "Root cause:",
        *(f"  {t}" for t in sig.root_cause.splitlines()),
        "",
        "Fix:",
        *(f"  {t}" for t in sig.fix.splitlines()),
        "",
        "Verify:",
        f"  {sig.verify}",
        "",
        "Checklist:",
        *(f"  {n}. {step}" for n, step in enumerate(sig.checklist, 1)),
    ]
    for label, ids in (("Caused by", sig.caused_by), ("Triggers", sig.triggers)):
        if ids:
            lines += ["", f"{label}: {', '.join(ids)}"]
    if sig.competing:
        lines += ["", "Competing:", *(f"  {cid}: {control}" for cid, control in sig.competing)]
    if sig.fields:
        lines += ["", "Fields:", *(f"  {k} = {v}" for k, v in sig.fields.items())]
    if sig.versions:
        lines += ["", f"Versions: {sig.versions}"]
    lines += ["", "References:", *(f"  {r}" for r in sig.references)]
    lines += ["", "Example:", f"  {sig.examples_match[0]}"]
    return "\n".join(lines)


def format_list(kb: SignatureSet) -> str:
    width = max((len(i) for i in kb.ids), default=2)
    rows = [f"{'id':<{width}}  {'role':<7}  {'severity':<8}  title"]
    rows += [f"{s.id:<{width}}  {s.role:<7}  {s.severity:<8}  {s.title}" for s in kb]
    rows.append(f"{len(kb)} signatures")
    return "\n".join(rows)
