"""How the diagnosis holds up when a log is pasted or collected differently.

The same failure reaches users dressed in many ways: indented as a Markdown
code block, quoted, with terminal colour codes (raw, as syslog escapes them,
or with the escape byte lost), with CRLF line ends or non-breaking spaces,
behind a log collector's prefix (Kubernetes CRI files, docker compose), or
hard-wrapped by a terminal.  For each dressing this script rewrites every dev public case the
shipped diagnosis gets right (truth line numbers moved with the lines) and
counts how many are still right::

    python benchmarks/paste_robustness.py [DRESSING ...]   # about 10 s each

It prints one line per dressing and the cases each one loses.  With
``--as-production`` no input is taken for a paste: the dressing reaches the
scanner and the attribution as a production log would (terminal colour
codes, a collector's prefixes).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus_eval import case_dirs, evaluate_case, partition  # noqa: E402

_FIRST = re.compile(r"(\S+)(.*)", re.S)


def _colour(open_: str, close: str) -> Callable[[str], list[str]]:
    def f(line: str) -> list[str]:
        m = _FIRST.match(line)
        return [f"{open_}{m.group(1)}{close}{m.group(2)}" if m else line]

    return f


def _wrap(width: int) -> Callable[[str], list[str]]:
    return lambda line: [line[k : k + width] for k in range(0, max(len(line), 1), width)]


#: each dressing maps one line (without its newline) to the lines it becomes
DRESSINGS: dict[str, Callable[[str], list[str]]] = {
    "indent": lambda line: ["    " + line],
    "quote": lambda line: ["> " + line],
    "ansi": _colour("\x1b[32m", "\x1b[0m"),
    "syslog-ansi": _colour("#033[32m", "#033[0m"),
    "bare-ansi": _colour("[32m", "[0m"),
    "crlf": lambda line: [line + "\r"],
    "nbsp": lambda line: [line.replace(" ", "\u00a0")],
    "cri": lambda line: ["2024-05-01T12:00:00.123456789Z stderr F " + line],
    "compose": lambda line: ["trainer-1  | " + line],
    "wrap120": _wrap(120),
    "wrap80": _wrap(80),
}


def _dress(case: Path, into: Path, dress: Callable[[str], list[str]]) -> None:
    """Copy ``case`` into ``into`` dressed, its truth's line numbers moved along."""
    shutil.copytree(case, into)
    moved: dict[str, dict[int, tuple[int, str]]] = {}
    for f in into.rglob("*"):
        if not f.is_file() or f.name == "truth.json":
            continue
        lines = f.read_text(errors="surrogateescape").split("\n")
        out: list[str] = []
        where: dict[int, tuple[int, str]] = {}
        for n, line in enumerate(lines, 1):
            new = dress(line) if (line or n < len(lines)) else [line]
            where[n] = (len(out) + 1, new[0])
            out += new
        f.write_text("\n".join(out), errors="surrogateescape")
        moved[str(f.relative_to(into))] = where
    truth = json.loads((into / "truth.json").read_text())
    for rec in [truth.get("initiating") or {}, *(truth.get("downstream") or [])]:
        if isinstance(rec, dict) and rec.get("file") in moved and rec.get("line"):
            rec["line"], rec["text"] = moved[rec["file"]][rec["line"]]
    (into / "truth.json").write_text(json.dumps(truth))


def run(names: list[str], roots: list[str]) -> dict[str, list[str]]:
    """Per dressing, the cases it loses (of those right as they are)."""
    right = [c for c in case_dirs(roots) if partition(c) == "dev" and evaluate_case(c).right]
    lost: dict[str, list[str]] = {}
    for name in names:
        lost[name] = []
        for case in right:
            with tempfile.TemporaryDirectory() as tmp:
                into = Path(tmp) / case.name
                _dress(case, into, DRESSINGS[name])
                if not evaluate_case(into).right:
                    lost[name].append(case.name)
        print(f"{name:12} {len(right) - len(lost[name])}/{len(right)} still right", flush=True)
    return lost


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dressings", nargs="*", help=f"some of {', '.join(DRESSINGS)} (default: all)")
    ap.add_argument("--corpus", nargs="*", default=["tests/corpus/public"])
    ap.add_argument(
        "--as-production",
        action="store_true",
        help="read every dressed case as a production log (no paste cleaning): what the "
        "scanner and the attribution handle on their own (colour codes, collector prefixes)",
    )
    args = ap.parse_args(argv)
    if args.as_production:
        import denpex_fast.io.paste as paste

        paste.MAX_BYTES = 0  # nothing is small enough to be taken for a paste
    unknown = set(args.dressings) - set(DRESSINGS)
    if unknown:
        ap.error(f"unknown dressing(s): {', '.join(sorted(unknown))}")
    for name, cases in run(args.dressings or list(DRESSINGS), args.corpus).items():
        for c in cases:
            print(f"  {name}: lost {c}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
