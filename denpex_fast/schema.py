"""The published contracts: JSON Schemas and Arrow schemas, by name.

Tools that embed denpex_fast validate against these::

    >>> from denpex_fast.schema import describe, json_schema
    >>> json_schema("diagnosis")["title"]
    'denpex.diagnosis/1'
    >>> print(describe("rank-fates"))      # the Arrow schema as JSON

``denpex schema NAME`` prints the same documents.

This module is the bottom of the package: every stage imports its table
contracts from here, and it imports no stage.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

#: name -> what it is
NAMES: dict[str, str] = {
    "diagnosis": "JSON Schema of `denpex diagnose --json` / Diagnosis.to_dict() (denpex.diagnosis/1)",
    "signatures": "JSON Schema of a knowledge-base file (denpex.signatures/1)",
    "matches": "Arrow schema of the match table (scan output, index dataset matches/)",
    "rank-fates": "Arrow schema of Diagnosis.rank_fates (index dataset rank_fates/)",
    "manifest": "Arrow schema of the index dataset manifest/ (one row per file)",
    "diagnosis-rows": "Arrow schema of the index dataset diagnosis/ (one row per job)",
}


TS = pa.timestamp("us", tz="UTC")

MATCH_SCHEMA = pa.schema(
    [
        pa.field("file", pa.dictionary(pa.int32(), pa.string())),
        pa.field("line", pa.uint64()),
        pa.field("offset", pa.uint64()),
        pa.field("match_end", pa.uint64()),
        pa.field("signature", pa.dictionary(pa.int32(), pa.string())),
        pa.field("text", pa.string()),
        pa.field("rank", pa.int32()),
        pa.field("host", pa.dictionary(pa.int32(), pa.string())),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
    ],
    metadata={b"denpex.schema": b"denpex.matches/1"},
)

COUNTS_SCHEMA = pa.schema(
    [
        pa.field("file", pa.string()),
        pa.field("signature", pa.string()),
        pa.field("lines", pa.uint64()),
        pa.field("kept", pa.uint64()),
    ]
)

RANK_FATE_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int32()),
        pa.field("host", pa.string()),
        pa.field("first_error_signature", pa.string()),
        pa.field("first_error_file", pa.string()),
        pa.field("first_error_line", pa.uint64()),
        pa.field("exit_code", pa.int32()),
        pa.field("signal", pa.string()),
        pa.field("torn_down_by", pa.string()),
        pa.field("last_step", pa.int64()),
        pa.field("last_collective_seq", pa.int64()),
    ],
    metadata={b"denpex.schema": b"denpex.rank-fates/1"},
)

MANIFEST_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("size", pa.int64()),
        ("mtime", TS),
        ("hash", pa.string()),
        ("status", pa.string()),
        ("error", pa.string()),
    ],
    metadata={b"denpex.schema": b"denpex.manifest/1"},
)

DIAGNOSIS_SCHEMA = pa.schema(
    [
        ("initiating_signature", pa.string()),
        ("initiating_rank", pa.int32()),
        ("initiating_host", pa.string()),
        ("initiating_file", pa.string()),
        ("initiating_line", pa.uint64()),
        ("initiating_ts", TS),
        ("confidence", pa.float64()),
        ("fix_id", pa.string()),
        ("verdict", pa.string()),
        ("n_matches", pa.int64()),
        ("n_causes", pa.int64()),
        ("n_symptoms", pa.int64()),
        ("n_ranks", pa.int64()),
        # added by the index
        ("scanned_at", TS),
        ("last_modified", TS),
        ("n_files", pa.int64()),
        ("n_file_errors", pa.int64()),
        ("bytes_scanned", pa.int64()),
        ("seconds", pa.float64()),
    ],
    metadata={b"denpex.schema": b"denpex.diagnosis-rows/1"},
)


def file_names(table: pa.Table) -> list[str]:
    """Every file label of a match table, across all its chunks."""
    if not table.num_rows:
        return []
    import pyarrow.compute as pc  # here, not at import: it costs ~25 ms of start-up

    return [
        x for x in pc.unique(table.column("file").cast(pa.string())).to_pylist() if x is not None
    ]


def file_codes(col: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """(row -> file code, code -> label) of a match table's ``file`` column."""
    # unifying the dictionaries of many chunks costs chunks x names (each
    # small file's batch carries every name); re-encoding costs only rows
    if pa.types.is_dictionary(col.type) and col.num_chunks > 16:
        col = col.cast(pa.string())
    if pa.types.is_dictionary(col.type):
        col = col.unify_dictionaries()
        names = col.chunk(0).dictionary.to_pylist() if col.num_chunks else []
        codes = (
            np.concatenate([c.indices.to_numpy(zero_copy_only=False) for c in col.chunks])
            if col.num_chunks
            else np.zeros(0, np.int64)
        )
        return codes.astype(np.int64), [str(x) for x in names]
    import pyarrow.compute as pc

    enc = pc.dictionary_encode(col).combine_chunks()
    return enc.indices.to_numpy(zero_copy_only=False).astype(np.int64), enc.dictionary.to_pylist()


def builtin_signature_dir() -> Path:
    """The directory holding the shipped ``*.toml`` files.

    In an installed wheel they are package data of
    ``denpex_fast.builtin_signatures``; in a source checkout they are the
    ``signatures/`` directory next to the package directory.
    """
    # find_spec, not importlib.resources: a command's start-up pays for what it imports
    try:
        spec = importlib.util.find_spec("denpex_fast.builtin_signatures")
    except ModuleNotFoundError:
        spec = None
    for loc in (spec.submodule_search_locations or []) if spec else []:
        if Path(loc).is_dir():
            return Path(loc)
    return Path(__file__).resolve().parents[1] / "signatures"


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema document for ``diagnosis`` or ``signatures``."""
    if name == "diagnosis":
        from importlib.resources import files

        text = files("denpex_fast").joinpath("schemas", "diagnosis.schema.json").read_text()
    elif name == "signatures":
        text = (builtin_signature_dir() / "schema.json").read_text()
    else:
        raise KeyError(f"no JSON Schema named {name!r} (known: diagnosis, signatures)")
    return dict(json.loads(text))


def arrow_schema(name: str) -> pa.Schema:
    """The Arrow schema of a table the package produces."""
    if name == "matches":
        return MATCH_SCHEMA
    if name == "rank-fates":
        return RANK_FATE_SCHEMA
    if name in ("manifest", "diagnosis-rows"):
        return MANIFEST_SCHEMA if name == "manifest" else DIAGNOSIS_SCHEMA
    raise KeyError(
        f"no Arrow schema named {name!r} (known: matches, rank-fates, manifest, diagnosis-rows)"
    )


def _arrow_json(schema: pa.Schema) -> dict[str, Any]:
    meta = {k.decode(): v.decode() for k, v in (schema.metadata or {}).items()}
    return {
        "fields": [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in schema],
        "metadata": meta,
    }


def describe(name: str) -> str:
    """``name``'s schema as indented JSON (JSON Schema or Arrow fields)."""
    if name not in NAMES:
        raise KeyError(f"unknown schema {name!r}; known: {', '.join(NAMES)}")
    if name in ("diagnosis", "signatures"):
        doc = json_schema(name)
    else:
        doc = {"name": name, **_arrow_json(arrow_schema(name))}
    return json.dumps(doc, indent=2)
