"""The import graph of the gputensor package, read with ``ast`` (nothing is imported).

Run from the repository root::

    python tools/import_graph.py            # the summary numbers
    python tools/import_graph.py --cycles   # and every strongly connected component
    python tools/import_graph.py --upward   # and every import that runs against the layers

Every ``import`` statement counts, at module level or inside a function (an import inside a
function still runs, and a cycle it closes is still a cycle); imports under
``if TYPE_CHECKING:`` are left out, since they never run. The layers, top to bottom:
``frontend`` (every ``gputensor`` module outside the two folders below), ``backend``
(``gputensor._backend``) and ``wgsl`` (``gputensor._wgsl``); an import from a lower layer into a
higher one is *upward*. ``import gputensor`` inside ``__array_namespace__`` is the one allowed
way back to the top (it hands out the namespace; it is no dependency of the module).

``tests/test_layering.py`` checks the same graph.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "gputensor"
LAYERS = ("frontend", "backend", "wgsl")  # top to bottom
ALLOWED_FUNCTIONS = frozenset({"__array_namespace__"})  # may import the package root


@dataclass(frozen=True)
class Edge:
    """One import: ``source`` imports ``target`` at ``line``; ``function`` names the enclosing
    function, or is ``None`` for a module-level import."""

    source: str
    target: str
    line: int
    function: str | None


def module_files(root: Path) -> dict[str, Path]:
    """Every module of the package under ``root`` (the folder that holds ``gputensor/``), by
    dotted name."""
    modules: dict[str, Path] = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def layer(module: str) -> str:
    """The layer of a package module."""
    if module == f"{PACKAGE}._backend" or module.startswith(f"{PACKAGE}._backend."):
        return "backend"
    if module == f"{PACKAGE}._wgsl" or module.startswith(f"{PACKAGE}._wgsl."):
        return "wgsl"
    return "frontend"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, str | None]]:
    """Each import statement with its enclosing function's name (``None`` at module level)."""

    def walk(node: ast.AST, function: str | None) -> Iterator[tuple[ast.Import | ast.ImportFrom, str | None]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, function
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.orelse:
                    yield from walk(ast.Module(body=[stmt], type_ignores=[]), function)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                yield from walk(child, getattr(child, "name", "<lambda>") if function is None else function)
            else:
                yield from walk(child, function)

    yield from walk(tree, None)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def read_graph(root: Path) -> tuple[set[str], list[Edge], list[Edge]]:
    """The package's modules, its internal import edges, and its imports of ``wgpu``."""
    files = module_files(root)
    modules = set(files)
    edges: list[Edge] = []
    wgpu_imports: list[Edge] = []
    for module, path in files.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(), filename=str(path))
        for node, function in _imports(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = _resolve(module, is_package, node)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            for target in targets:
                if target.split(".")[0] in ("wgpu", "wgpudawn"):  # either WebGPU implementation
                    wgpu_imports.append(Edge(module, target, node.lineno, function))
                    continue
                # ``import a.b.c`` binds ``a`` but depends on ``a.b.c``: take the longest known name
                while target and target not in modules and "." in target:
                    target = target.rsplit(".", 1)[0]
                edge = Edge(module, target, node.lineno, function)
                if target in modules and target != module and edge not in edges:
                    edges.append(edge)
    return modules, edges, wgpu_imports


def graph_edges(edges: list[Edge]) -> list[Edge]:
    """The edges that make dependencies: all but the package root fetched by an allowed function."""
    return [e for e in edges if not (e.target == PACKAGE and e.function in ALLOWED_FUNCTIONS)]


def strongly_connected(modules: set[str], edges: list[Edge]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    succ: dict[str, set[str]] = {m: set() for m in modules}
    for e in edges:
        succ[e.source].add(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for start in sorted(modules):
        if start in index:
            continue
        work = [(start, iter(sorted(succ[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(succ[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return sorted(components, key=len, reverse=True)


def upward(edges: list[Edge]) -> list[Edge]:
    """The imports from a lower layer into a higher one."""
    return [e for e in edges if LAYERS.index(layer(e.source)) > LAYERS.index(layer(e.target))]


def summary(root: Path) -> dict[str, int]:
    """The numbers the layering is judged by."""
    modules, edges, wgpu_imports = read_graph(root)
    deps = graph_edges(edges)
    components = strongly_connected(modules, deps)
    return {
        "modules": len(modules),
        "import edges": len(deps),
        "modules in cycles": sum(len(c) for c in components),
        "largest cycle (SCC size)": max((len(c) for c in components), default=0),
        "upward imports": len(upward(deps)),
        "function-level imports": len({(e.source, e.line) for e in deps if e.function is not None}),
        "wgpu imports outside the backend": sum(1 for e in wgpu_imports if layer(e.source) != "backend"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--cycles", action="store_true", help="list the strongly connected components")
    parser.add_argument("--upward", action="store_true", help="list the upward imports")
    parser.add_argument("--functions", action="store_true", help="list the function-level imports")
    args = parser.parse_args(argv)
    for key, value in summary(args.root).items():
        print(f"{key:34s} {value}")
    modules, edges, _ = read_graph(args.root)
    deps = graph_edges(edges)
    if args.cycles:
        for component in strongly_connected(modules, deps):
            print(f"\ncycle of {len(component)}: " + ", ".join(component))
    if args.upward:
        print()
        for e in upward(deps):
            print(f"upward: {e.source}:{e.line} -> {e.target}")
    if args.functions:
        print()
        for e in deps:
            if e.function is not None:
                print(f"in function: {e.source}:{e.line} ({e.function}) -> {e.target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
