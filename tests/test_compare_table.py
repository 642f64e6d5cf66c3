"""The tolerance table of tests/_compare.py is the one place where tests' tolerances are written.

These checks read the test files' source with ``ast`` (no GPU work): a literal ``rtol=``/``atol=``
(or ``pytest.approx``'s ``rel=``/``abs=``, or a literal assigned to a name such as ``rtol`` or
``TOL``) outside ``_compare.py`` fails, as does a lookup of a family or dtype that the table does
not have. Zero is allowed as a literal: it means "no relative / no absolute term".
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from _compare import TOLERANCES, tol, tolerance

TESTS = Path(__file__).resolve().parent
#: files whose literal tolerances are legitimate: the table itself, and the tests of the
#: comparison helpers (they probe the bounds with values of their own)
ALLOWED = {"_compare.py", "test_compare.py"}
#: keyword arguments that carry a tolerance (per callee for pytest.approx's)
_KEYWORDS = {"rtol", "atol"}
_APPROX_KEYWORDS = {"rel", "abs"}


def _numbers(node: ast.AST) -> list[float]:
    """The nonzero numbers of ``node`` if it is built of literals only (constants, unary and
    binary operators, conditional expressions of them, tuples/lists/dicts/comprehension-free
    containers); [] for anything that reads a name, calls a function or subscripts."""
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return []
        return [float(value)] if value != 0 else []
    if isinstance(node, ast.UnaryOp):
        return _numbers(node.operand)
    if isinstance(node, ast.BinOp):
        if _is_literal(node.left) and _is_literal(node.right):
            return _numbers(node.left) + _numbers(node.right)
        return []
    if isinstance(node, ast.IfExp):  # either branch may be a literal tolerance
        return _numbers(node.body) + _numbers(node.orelse)
    if isinstance(node, (ast.Tuple, ast.List)):
        return [v for e in node.elts for v in _numbers(e)]
    if isinstance(node, ast.Dict):
        return [v for e in node.values for v in _numbers(e)]
    return []


def _is_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _is_literal(node.operand)
    if isinstance(node, ast.BinOp):
        return _is_literal(node.left) and _is_literal(node.right)
    return False


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _is_tolerance_name(name: str) -> bool:
    low = name.lower()
    return low.endswith(("tol", "tols")) or low.startswith("tol_")


def literal_tolerances(source: str) -> list[tuple[int, str]]:
    """(line, description) of every literal tolerance in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            names = _KEYWORDS | (_APPROX_KEYWORDS if _callee(node) == "approx" else set())
            for kw in node.keywords:
                if kw.arg in names and _numbers(kw.value):
                    found.append((kw.value.lineno, f"{kw.arg}={ast.unparse(kw.value)}"))
            if _callee(node) == "assert_allclose" and len(node.args) > 2:
                for arg in node.args[2:]:
                    if _numbers(arg):
                        found.append((arg.lineno, f"positional tolerance {ast.unparse(arg)}"))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            if node.value is not None and any(_is_tolerance_name(n) for n in names) and _numbers(node.value):
                found.append((node.lineno, f"{', '.join(names)} = {ast.unparse(node.value)[:60]}"))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args.args + node.args.kwonlyargs
            defaults = [None] * (len(node.args.args) - len(node.args.defaults)) + list(node.args.defaults)
            defaults += list(node.args.kw_defaults)
            for arg, default in zip(args, defaults):
                if default is not None and arg.arg in _KEYWORDS and _numbers(default):
                    found.append((default.lineno, f"default {arg.arg}={ast.unparse(default)}"))
    return sorted(found)


def _test_files() -> list[Path]:
    return sorted(p for p in TESTS.glob("*.py") if p.name not in ALLOWED)


def test_no_literal_tolerances_outside_the_table() -> None:
    offenders = [f"{p.name}:{line}: {what}" for p in _test_files()
                 for line, what in literal_tolerances(p.read_text())]
    assert not offenders, ("literal tolerances outside tests/_compare.py (add a row to TOLERANCES, with "
                           "its reason, and use tol()/tolerance()/a family):\n" + "\n".join(offenders))


@pytest.mark.parametrize("source, count", [
    ("np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)", 2),
    ("np.testing.assert_allclose(a, b, 1e-5)", 1),
    ("assert_same(a, b, rtol=2e-6 if c else None)", 1),
    ("rtol = 1e-3 if d == 'float16' else 1e-6", 1),
    ("TOL = {'float32': (1e-5, 1e-6)}", 1),
    ("def f(a, rtol: float = 1e-6): pass", 1),
    ("x == pytest.approx(y, rel=1e-4)", 1),
    ("np.testing.assert_allclose(a, b, atol=2.0**-23 * m)", 0),  # scaled: names a magnitude
    ("np.testing.assert_allclose(a, b, rtol=0, atol=0)", 0),
    ("np.testing.assert_allclose(a, b, **tol('float32', 'matmul'))", 0),
    ("np.linalg.matrix_rank(a, rtol=rtol)", 0),
    ("rtol = tolerance(dtype, 'arith')[0]", 0),
    ("abs(x - y) <= 1e-6", 0),
])
def test_the_detector(source: str, count: int) -> None:
    assert len(literal_tolerances(source)) == count, literal_tolerances(source)


def _lookups() -> list[tuple[str, int, str, str | None]]:
    """(file, line, family, dtype name or None) of every ``tol(d, "family")`` /
    ``tolerance(d, "family")`` call with a literal family in the test files."""
    out = []
    for p in sorted(TESTS.glob("*.py")):
        if p.name == Path(__file__).name:  # its own probe of a missing family
            continue
        for node in ast.walk(ast.parse(p.read_text())):
            if (isinstance(node, ast.Call) and _callee(node) in ("tol", "tolerance", "table_tolerance")
                    and len(node.args) == 2 and isinstance(node.args[1], ast.Constant)):
                d = node.args[0]
                out.append((p.name, node.lineno, node.args[1].value,
                            d.value if isinstance(d, ast.Constant) else None))
    return out


def test_every_lookup_names_a_row_of_the_table() -> None:
    lookups = _lookups()
    assert len(lookups) > 100  # the files use the table
    missing = [f"{f}:{line}: {fam!r}" + ("" if d is None else f"[{d!r}]") for f, line, fam, d in lookups
               if fam not in TOLERANCES or (d is not None and d not in TOLERANCES[fam])]
    assert not missing, "lookups of rows TOLERANCES does not have:\n" + "\n".join(missing)


def test_table_rows_are_rtol_atol_pairs() -> None:
    for family, rows in TOLERANCES.items():
        for dtype, (rtol, atol) in rows.items():
            assert 0 <= rtol < 1 and 0 <= atol < 1, (family, dtype)
            assert tol(dtype, family) == {"rtol": rtol, "atol": atol}
            assert tolerance(dtype, family) == (rtol, atol)
    with pytest.raises(KeyError):
        tol("float32", "no such family")
