"""The package's layers import one way: frontend -> backend (``gputensor._backend``, the only
code that imports wgpu) -> WGSL sources (``gputensor._wgsl``), with no import cycle anywhere.

The graph is read with ``ast`` (``tools/import_graph.py``): every import statement, at module
level and inside functions, counts; ``import gputensor`` inside ``__array_namespace__`` is the one
allowed way back to the top.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_spec = importlib.util.spec_from_file_location("import_graph", ROOT / "tools" / "import_graph.py")
assert _spec is not None and _spec.loader is not None
import_graph = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("import_graph", import_graph)
_spec.loader.exec_module(import_graph)

@pytest.fixture(scope="module")
def graph() -> tuple[set[str], list, list]:
    modules, edges, wgpu_imports = import_graph.read_graph(ROOT)
    return modules, import_graph.graph_edges(edges), wgpu_imports


def test_graph_sees_the_package(graph) -> None:
    modules, edges, wgpu_imports = graph
    assert {"gputensor", "gputensor._dispatch", "gputensor._backend.context"} <= modules
    sources = {e.source for e in edges}
    assert "gputensor._dispatch" in sources and "gputensor._backend.webgpu" in sources
    assert any(e.source == "gputensor._backend.implementation" for e in wgpu_imports)
    assert any(e.function is not None for e in edges), "function-level imports must be counted"


def test_backend_imports_no_frontend_module(graph) -> None:
    _, edges, _ = graph
    upward = [f"{e.source}:{e.line} imports {e.target}" for e in import_graph.upward(edges)]
    assert not upward, "imports against the layers:\n" + "\n".join(upward)


def test_wgpu_is_imported_only_by_the_backend(graph) -> None:
    _, _, wgpu_imports = graph
    outside = [f"{e.source}:{e.line} imports {e.target}" for e in wgpu_imports
               if import_graph.layer(e.source) != "backend"]
    assert not outside, "wgpu imported outside gputensor/_backend:\n" + "\n".join(outside)


def test_no_import_cycle(graph) -> None:
    modules, edges, _ = graph
    components = import_graph.strongly_connected(modules, edges)
    assert not components, "import cycles:\n" + "\n".join(", ".join(c) for c in components)


def test_function_level_imports_are_only_the_command_line(graph) -> None:
    """Imports inside functions dodge nothing now; only ``python -m gputensor`` defers its imports
    (it sets up the environment first)."""
    _, edges, _ = graph
    inside = sorted({f"{e.source}:{e.line}" for e in edges if e.function is not None})
    assert all(place.startswith("gputensor.__main__:") for place in inside), inside


def test_backend_and_wgsl_have_no_cycle(graph) -> None:
    modules, edges, _ = graph
    lower = {m for m in modules if import_graph.layer(m) != "frontend"}
    inner = [e for e in edges if e.source in lower and e.target in lower]
    assert import_graph.strongly_connected(lower, inner) == []


def test_cycle_detection_on_a_known_graph() -> None:
    edges = [import_graph.Edge("a", "b", 1, None), import_graph.Edge("b", "c", 1, "f"),
             import_graph.Edge("c", "a", 1, None), import_graph.Edge("c", "d", 1, None)]
    assert import_graph.strongly_connected({"a", "b", "c", "d"}, edges) == [["a", "b", "c"]]
    up = [import_graph.Edge("gputensor._backend.x", "gputensor._dispatch", 3, "g")]
    assert import_graph.upward(up) == up


def test_layering_report_reads_the_tree() -> None:
    """``tools/layering_report.py`` (the numbers of the layering): no cycle; the worked example op
    is one row of the elementwise op table; nothing branches on a reduction kernel's name."""
    spec = importlib.util.spec_from_file_location("layering_report", ROOT / "tools" / "layering_report.py")
    assert spec is not None and spec.loader is not None
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    assert report.graph_numbers(ROOT)["import cycles (strongly connected components)"] == 0
    places = report.op_places(ROOT)
    assert sum(p.startswith("gputensor/_backend/elementwise_ops.py") for p in places) == 1
    kinds, branches = report.reduction_kinds(ROOT)
    assert len(kinds) >= 3 and branches == []
    assert report.module_sizes(ROOT)[0][0] > 0
