"""The published contracts: JSON Schemas and Arrow schemas, by name.

Tools that embed denpex_fast validate against these::

    >>> from denpex_fast.schema import describe, json_schema
    >>> json_schema("diagnosis")["title"]
    'denpex.diagnosis/1'
    >>> print(describe("rank-fates"))      # the Arrow schema as JSON

``denpex schema NAME`` prints the same documents.
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

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


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema document for ``diagnosis`` or ``signatures``."""
    if name == "diagnosis":
        text = files("denpex_fast").joinpath("schemas", "diagnosis.schema.json").read_text()
    elif name == "signatures":
        from .kb.signatures import builtin_signature_dir

        text = (builtin_signature_dir() / "schema.json").read_text()
    else:
        raise KeyError(f"no JSON Schema named {name!r} (known: diagnosis, signatures)")
    return dict(json.loads(text))


def arrow_schema(name: str) -> pa.Schema:
    """The Arrow schema of a table the package produces."""
    if name == "matches":
        from .engine.scanner import MATCH_SCHEMA

        return MATCH_SCHEMA
    if name == "rank-fates":
        from .analysis.diagnosis import RANK_FATE_SCHEMA

        return RANK_FATE_SCHEMA
    if name in ("manifest", "diagnosis-rows"):
        from .batch.index import DIAGNOSIS_SCHEMA, MANIFEST_SCHEMA

        return MANIFEST_SCHEMA if name == "manifest" else DIAGNOSIS_SCHEMA
    raise KeyError(f"no Arrow schema named {name!r} (known: matches, rank-fates, manifest, "
                   "diagnosis-rows)")


def _arrow_json(schema: pa.Schema) -> dict[str, Any]:
    meta = {k.decode(): v.decode() for k, v in (schema.metadata or {}).items()}
    return {"fields": [{"name": f.name, "type": str(f.type), "nullable": f.nullable}
                       for f in schema], "metadata": meta}


def describe(name: str) -> str:
    """``name``'s schema as indented JSON (JSON Schema or Arrow fields)."""
    if name not in NAMES:
        raise KeyError(f"unknown schema {name!r}; known: {', '.join(NAMES)}")
    if name in ("diagnosis", "signatures"):
        doc = json_schema(name)
    else:
        doc = {"name": name, **_arrow_json(arrow_schema(name))}
    return json.dumps(doc, indent=2)
