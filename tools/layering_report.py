"""The numbers of the package's layering, read from the tree with ``ast`` (nothing is imported).

Run from the repository root::

    python tools/layering_report.py            # every section
    python tools/layering_report.py --sizes 30 # more modules in the size table

Sections:

* the import graph (``tools/import_graph.py``, as ``tests/test_layering.py`` reads it): modules,
  edges, import cycles counting imports inside functions, imports against the layers, imports
  inside functions, the modules that import wgpu;
* module sizes: the largest modules of ``gputensor/`` by lines, and how many pass 600 lines;
* what adding an elementwise op, a reduction kind and a dtype touches:
  - an elementwise op: every line of the tree that names ``deg2rad`` (the op added as the worked
    example: its row in the op table, its NumPy alias, its test row, its README mention);
  - a reduction kind: the ``ReductionKind`` subclasses of ``_backend/reduce_ops.py`` (a new kind
    is one more, with its kernel file) and the places outside them that branch on a reduction
    kernel's name (comparisons with ``"reduce_plain"``, ``"reduce_arg"``, ``"reduce_var"``);
  - a dtype: every literal table of the package keyed by dtype names (a dict, set, tuple or list
    literal with at least three dtype names as keys or items) and the lines that exist once per
    dtype (``DTYPE_TABLE`` rows, named singletons): where a new dtype needs a row.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import import_graph  # noqa: E402  (the sibling module, as tests/test_layering.py loads it)

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gputensor"
#: The dtype names a table row is recognised by.
DTYPE_NAMES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                         "float16", "float32", "float64", "complex64", "complex128"})
#: The kernels of the reduction kinds (a branch on one of these names is a kind's code outside it).
REDUCTION_KERNELS = ("reduce_plain", "reduce_arg", "reduce_var")
#: The elementwise op added as the worked example of "one row per op".
EXAMPLE_OP = "deg2rad"
#: Module size above which a module counts as large.
LARGE = 600


def graph_numbers(root: Path) -> dict[str, object]:
    """The import graph's numbers and the modules importing wgpu."""
    modules, edges, wgpu_imports = import_graph.read_graph(root)
    edges = import_graph.graph_edges(edges)
    components = import_graph.strongly_connected(modules, edges)
    return {
        "modules": len(modules),
        "import edges": len(edges),
        "import cycles (strongly connected components)": len(components),
        "modules in cycles": sum(len(c) for c in components),
        "imports against the layers (upward)": len(import_graph.upward(edges)),
        "imports inside functions": sum(1 for e in edges if e.function is not None),
        "modules importing wgpu": sorted({e.source for e in wgpu_imports}),
        "of them outside gputensor/_backend": sorted({e.source for e in wgpu_imports
                                                     if import_graph.layer(e.source) != "backend"}),
    }


def module_sizes(root: Path) -> list[tuple[int, str]]:
    """(lines, path) of every module of the package, largest first."""
    sizes = []
    for path in (root / "gputensor").rglob("*.py"):
        sizes.append((len(path.read_text().splitlines()), str(path.relative_to(root))))
    return sorted(sizes, reverse=True)


def _sources(root: Path, folders: tuple[str, ...] = ("gputensor", "tests", "tools", "benchmarks")) -> Iterator[Path]:
    for folder in folders:
        yield from sorted((root / folder).rglob("*.py"))


def op_places(root: Path, name: str = EXAMPLE_OP) -> list[str]:
    """``path:line: text`` of every line naming the op ``name`` (Python, WGSL and README), this
    script aside."""
    places = []
    paths = [*_sources(root), *sorted((root / "gputensor").rglob("*.wgsl")), root / "README.md"]
    for path in paths:
        if path.resolve() == Path(__file__).resolve():
            continue
        for k, line in enumerate(path.read_text().splitlines(), 1):
            if name in line:
                places.append(f"{path.relative_to(root)}:{k}: {line.strip()[:100]}")
    return places


def reduction_kinds(root: Path) -> tuple[list[str], list[str]]:
    """(the ``ReductionKind`` subclasses of reduce_ops.py with their kernels, the places of the
    package outside them that compare something with a reduction kernel's name)."""
    path = root / "gputensor" / "_backend" / "reduce_ops.py"
    tree = ast.parse(path.read_text())
    kinds, inside = [], set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id == "ReductionKind"
                                                  for b in node.bases):
            kernel = next((s.value.value for s in node.body if isinstance(s, ast.Assign)
                           and any(isinstance(t, ast.Name) and t.id == "kernel" for t in s.targets)
                           and isinstance(s.value, ast.Constant)), "?")
            kinds.append(f"{node.name} ({kernel})")
            inside |= set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    branches = []
    for source in _sources(root, ("gputensor",)):
        tree = ast.parse(source.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare):
                continue
            consts = [c.value for c in (node.left, *node.comparators) if isinstance(c, ast.Constant)]
            if any(c in REDUCTION_KERNELS for c in consts) and not (source == path and node.lineno in inside):
                branches.append(f"{source.relative_to(root)}:{node.lineno}")
    return kinds, branches


def dtype_tables(root: Path) -> list[str]:
    """``path:line (n names)`` of every literal table of the package keyed by dtype names."""
    tables = []
    for source in _sources(root, ("gputensor",)):
        tree = ast.parse(source.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                items = node.keys
            elif isinstance(node, (ast.Set, ast.Tuple, ast.List)):
                items = node.elts
            else:
                continue
            names = {i.value for i in items if isinstance(i, ast.Constant) and i.value in DTYPE_NAMES}
            if len(names) >= 3:
                tables.append(f"{source.relative_to(root)}:{node.lineno} ({len(names)} names)")
    return tables


def dtype_rows(root: Path) -> dict[str, int]:
    """Per module, the lines that exist once per dtype: calls whose first argument is a dtype name
    (the rows of ``wgsl_types.DTYPE_TABLE``) and module-level names bound to a dtype by name
    (``int8 = DTYPES_BY_NAME["int8"]``)."""
    rows: dict[str, int] = {}
    for source in _sources(root, ("gputensor",)):
        tree = ast.parse(source.read_text())
        count = 0
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                    and node.args[0].value in DTYPE_NAMES):
                count += 1
        for node in tree.body:
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Subscript)
                    and isinstance(node.value.slice, ast.Constant) and node.value.slice.value in DTYPE_NAMES):
                count += 1
        if count:
            rows[str(source.relative_to(root))] = count
    return rows


def main(argv: list[str] | None = None) -> int:
    """Print every section; returns 0."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, default=15, help="modules in the size table (default 15)")
    ns = p.parse_args(argv)
    print("## import graph (every import statement, inside functions too)")
    for key, value in graph_numbers(ROOT).items():
        shown = f"{len(value)}: {', '.join(value) or '-'}" if isinstance(value, list) else value
        print(f"  {key:48s} {shown}")
    sizes = module_sizes(ROOT)
    print(f"\n## module sizes: the largest {ns.sizes} of {len(sizes)} "
          f"({sum(1 for n, _ in sizes if n > LARGE)} over {LARGE} lines)")
    for lines, path in sizes[: ns.sizes]:
        print(f"  {lines:6d}  {path}")
    places = op_places(ROOT)
    files = sorted({p.split(":", 1)[0] for p in places})
    print(f"\n## an elementwise op ({EXAMPLE_OP}): {len(places)} lines in {len(files)} files")
    for place in places:
        print(f"  {place}")
    kinds, branches = reduction_kinds(ROOT)
    print(f"\n## a reduction kind: {len(kinds)} kinds in gputensor/_backend/reduce_ops.py: {', '.join(kinds)}; "
          f"branches on a kernel's name outside them: {len(branches)}{': ' if branches else ''}{', '.join(branches)}")
    tables = dtype_tables(ROOT)
    table_files = sorted({t.split(":", 1)[0] for t in tables})
    print(f"\n## a dtype: {len(tables)} literal tables keyed by dtype names in {len(table_files)} modules")
    for table in tables:
        print(f"  {table}")
    rows = dtype_rows(ROOT)
    print(f"  lines once per dtype (table rows, named singletons): "
          + ", ".join(f"{path} {n}" for path, n in sorted(rows.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
