"""The package's import graph: who imports whom, cycles, sizes, private names.

    python benchmarks/import_graph.py            # table + cycles
    python benchmarks/import_graph.py --dot      # Graphviz source

Reads the source with ``ast`` (nothing is imported).  Imports inside
functions count too (a lazy import is still a dependency); imports under
``if TYPE_CHECKING:`` do not (annotations only).
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "denpex_fast"

#: the stages, lowest first: a module may import its own layer or lower ones.
#: Top-level modules not listed are the front (cli, report, api, ...), which
#: may import anything; the one-release aliases of old paths are skipped.
LAYERS = {
    "errors": 0,
    "schema": 0,
    "cachedir": 0,
    "tables": 0,
    "pandas_guard": 0,
    "textsafe": 0,
    "config": 0,
    "io": 1,
    "kb": 2,
    "engine": 3,
    "facts": 4,
    "analysis": 5,
    "batch": 6,
}
FRONT = 7


def layer(module: str) -> int:
    return LAYERS.get(module.split(".")[0], FRONT)


def is_alias(path: Path) -> bool:
    """A one-release alias module of an old import path (no code of its own)."""
    text = path.read_text()
    return (
        "this alias stays for one release" in text or "this re-export stays for one release" in text
    )


def long_without_reason(mods: dict[str, Path], limit: int = 500) -> list[str]:
    """Modules over ``limit`` lines whose docstring does not say why they are long."""
    out = []
    for name, path in sorted(mods.items()):
        text = path.read_text()
        if len(text.splitlines()) > limit:
            doc = ast.get_docstring(ast.parse(text)) or ""
            if "This module is long because" not in doc:
                out.append(name)
    return out


def upward(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(module, imported module) pairs where the import runs back up the stages."""
    return sorted((a, b) for a, bs in graph.items() for b in bs if layer(b) > layer(a))


def modules() -> dict[str, Path]:
    return {
        p.relative_to(PKG).with_suffix("").as_posix().replace("/", "."): p
        for p in sorted(PKG.rglob("*.py"))
        if not is_alias(p)
    }


def edges(mods: dict[str, Path]) -> tuple[dict[str, set[str]], list[tuple[str, str, str]]]:
    """(module -> package modules it imports, [(module, imported module, private name)])."""
    out: dict[str, set[str]] = defaultdict(set)
    private: list[tuple[str, str, str]] = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        pkg_parts = name.split(".")[:-1]
        typing_only = {
            id(n)
            for t in ast.walk(tree)
            if isinstance(t, ast.If) and "TYPE_CHECKING" in ast.unparse(t.test)
            for b in t.body
            for n in ast.walk(b)
        }
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue  # annotations only: not a dependency at run time
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg_parts[: len(pkg_parts) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                elif node.module and node.module.startswith("denpex_fast"):
                    target = node.module[len("denpex_fast.") :] if "." in node.module else ""
                else:
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}" if target else alias.name
                    if sub in mods:  # "from . import _native"
                        out[name].add(sub)
                    elif target in mods:
                        out[name].add(target)
                        if alias.name.startswith("_") and not alias.name.startswith("__"):
                            private.append((name, target, alias.name))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("denpex_fast."):
                        t = alias.name[len("denpex_fast.") :]
                        if t in mods:
                            out[name].add(t)
        out[name].discard(name)
    return out, private


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main(argv: list[str]) -> int:
    mods = modules()
    graph, private = edges(mods)
    if "--dot" in argv:
        print("digraph denpex_fast {")
        for a in sorted(graph):
            for b in sorted(graph[a]):
                print(f'  "{a}" -> "{b}";')
        print("}")
        return 0
    print(f"{'module':22} {'lines':>6}  imports")
    for name in sorted(mods):
        n = len(mods[name].read_text().splitlines())
        print(f"{name:22} {n:6d}  {', '.join(sorted(graph.get(name, ()))) or '-'}")
    cyc = cycles(graph)
    print(f"\nimport cycles: {len(cyc)}")
    for c in cyc:
        print("  " + " <-> ".join(c))
    up = upward(graph)
    print(f"imports that run back up the stages: {len(up)}")
    for a, b in up:
        print(f"  {a} -> {b}")
    print(f"private names imported across modules: {len(private)}")
    for a, b, n in private:
        print(f"  {a} imports {b}.{n}")
    big = [m for m in mods if len(mods[m].read_text().splitlines()) > 500]
    print(f"modules over 500 lines: {len(big)} ({', '.join(sorted(big))})")
    unexplained = long_without_reason(mods)
    print(
        f"  of which without a reason stated at the top: {len(unexplained)}"
        + (f" ({', '.join(unexplained)})" if unexplained else "")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
