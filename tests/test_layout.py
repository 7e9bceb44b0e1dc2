"""The package's layout by stage holds: no import cycle, no import that runs back
up the stages (io < kb < engine < facts < analysis < batch < front), no private
name imported across modules.  Read from the source with ``ast`` by
``benchmarks/import_graph.py``."""

from __future__ import annotations

import import_graph as g


def test_no_import_cycles() -> None:
    graph, _ = g.edges(g.modules())
    assert g.cycles(graph) == []


def test_no_import_runs_back_up() -> None:
    graph, _ = g.edges(g.modules())
    assert g.upward(graph) == []


def test_no_private_names_across_modules() -> None:
    _, private = g.edges(g.modules())
    assert private == []


def test_every_stage_module_is_layered() -> None:
    # a new top-level package must be placed in the order, not default to the front
    packages = {name.split(".")[0] for name in g.modules() if "." in name}
    assert packages - {"samples"} <= set(g.LAYERS)


def test_old_paths_are_the_moved_modules() -> None:
    import denpex_fast.analysis.causal as new
    import denpex_fast.causal as old

    assert old is new


def test_long_modules_say_why() -> None:
    assert g.long_without_reason(g.modules()) == []
