"""The WGSL function libraries (``kernels.LIBRARIES``) are ordinary WGSL functions: generic ones
named ``NAME_{{T}}`` are made per type of their library, and ``library_code`` pulls in the
functions a piece of code calls with their dependencies, each after the ones it calls.

Pure text, no device (the kernels that take these functions compile in test_kernel_sources).
"""

from __future__ import annotations

import ast
import pathlib
import re
from collections.abc import Iterator

import pytest

from gputensor._backend import kernels

_DEF = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(")


@pytest.mark.parametrize("library", sorted(kernels.LIBRARIES))
def test_library_is_plain_wgsl(library: str) -> None:
    text = kernels.template_source(library)
    assert "// @fn" not in text
    assert not re.search(r"(?<![A-Za-z0-9])TT(?![A-Za-z0-9])", text)
    functions = kernels.top_level_functions(text)
    assert functions, library
    for name, body in functions.items():
        assert _DEF.findall(body.replace("{{T}}", "T"))[0] == name.replace("{{T}}", "T")
        assert ("{{T}}" in body) == name.endswith("{{T}}"), name


def test_generic_functions_are_made_per_type() -> None:
    names = kernels.library_functions()
    assert {"ew_sinh_f32", "ew_sinh_f64", "cx_exp_f32", "cx_exp_f64", "x64_add_i64e", "x64_add_u64e",
            "ew_ipow_i32", "ew_ipow_u64", "sin_f32", "sin_f64"} <= names
    assert "ew_sinh_i32" not in names and "ew_tanh_f64" in names
    code = kernels.library_code("ew_ipow_u32(a, b)")
    assert "fn ew_ipow_u32(a: u32, b: u32) -> u32 {" in code and "{{T}}" not in code


def test_library_code_orders_dependencies() -> None:
    """Every library function's code defines each function once, after those it calls."""
    names = kernels.library_functions()
    for name in sorted(names):
        code = kernels.library_code(f"{name}(x)")
        defined = _DEF.findall(code)
        assert defined[-1] == name and len(set(defined)) == len(defined), name
        chunks = re.split(r"(?=^fn )", code, flags=re.MULTILINE)
        seen: set[str] = set()
        for chunk in chunks:
            own = _DEF.findall(chunk)
            if not own:
                continue
            body = re.sub(r"//[^\n]*", "", chunk)
            calls = {c for c in re.findall(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(", body) if c in names}
            assert calls - {own[0]} <= seen, (name, own[0], calls - seen)
            seen.add(own[0])
    assert kernels.library_code("ew_sinh_f32(x)", frozenset({"ew_sinh_f32"})) == ""


def test_a_library_holds_only_functions() -> None:
    with pytest.raises(ValueError):
        kernels.top_level_functions("fn a() -> u32 { return 1u; }\nconst B: u32 = 2u;\n")
    with pytest.raises(ValueError):
        kernels.top_level_functions("fn a() -> u32 { return 1u;\n")
    parsed = kernels.top_level_functions("// one\n// two\nfn a() -> u32 { if (true) { return 1u; } return 2u; }\n")
    assert parsed == {"a": "// one\n// two\nfn a() -> u32 { if (true) { return 1u; } return 2u; }"}


def test_snippet_fills_its_placeholders() -> None:
    """A snippet is its file without the leading comment lines, placeholders filled; a line of
    only a placeholder given '' is left out; a missing or unknown placeholder is a KeyError."""
    text = kernels.snippet("elementwise/binding_in", {"BINDING": 3, "K": 1, "ELEM": "vec4<f32>"})
    assert text == "@group(0) @binding(3) var<storage, read> in1: array<vec4<f32>>;"
    body = kernels.snippet("row_fusion/element_guard", {"GUARD": "j < n", "BODY": ""})
    assert body == "            if (j < n) {\n            }"
    body = kernels.snippet("row_fusion/element_guard", {"GUARD": "live", "BODY": "x = 1;"})
    assert body == "            if (live) {\nx = 1;\n            }"
    with pytest.raises(KeyError, match="missing placeholders"):
        kernels.snippet("elementwise/binding_in", {"BINDING": 3, "K": 1})
    with pytest.raises(KeyError, match="unknown"):
        kernels.snippet("sort/write_keys", {"K": 1})
    with pytest.raises(KeyError, match="no WGSL kernel"):
        kernels.snippet("sort/no_such_snippet")


def test_snippets_say_what_they_are() -> None:
    """Every snippet file (a folder of gputensor/_wgsl) starts with its description."""
    folder = kernels.importlib.resources.files("gputensor._wgsl")
    snippets = [e for d in folder.iterdir() if d.is_dir() for e in d.iterdir() if e.name.endswith(".wgsl")]
    assert len(snippets) > 100
    for entry in snippets:
        text = entry.read_text()
        assert text.startswith("// ") and text.endswith("\n") and "fn main(" not in text, entry.name


#: WGSL statement syntax (a function, a binding, a declaration, a return, an atomic store, a
#: loop or a branch) in a Python string.
_STATEMENT = re.compile(r"\bfn [A-Za-z_{]|\blet [A-Za-z_{][A-Za-z0-9_{}]* = |"
                        r"\bvar(<[a-z, _]+>)? [A-Za-z_{][A-Za-z0-9_{}]*(: [^=]+)?( = [^;]*)?;|@group\(|"
                        r"\breturn [^\"]*;|atomic[A-Z][a-z]+\(&|\bstruct [A-Za-z_{]+ \{|\balias [A-Za-z_{]+ = |"
                        r"for \(var |\bif \([^)]*\) \{")
#: The string literals with WGSL statement syntax that Python keeps, per module: the text of
#: checks, error messages, the ``//#unroll`` expansion and the rewriting of a user's RawKernel
#: source. Nothing else builds WGSL statements (kernel pieces are snippets).
_PYTHON_WGSL = {
    "gputensor/_backend/kernels.py": {
        "fn {}(", "{}{ let {} = {}u;\n{}{}}\n", "//#unroll must stand right above 'for (var i = 0u; i < N; i++) {'"},
    "gputensor/_elementwise_kernel.py": {"\n\nfn element("},
    "gputensor/_raw_kernel.py": {
        "RawKernel {}: `{}` is in @group({}); only @group(0) is bound", "@group(0) @binding({}) {}",
        "the source must define the entry point `fn {}(...)` exactly once (found {})", "fn main(",
        "` is in @group(", "); only @group(0) is bound", "@group(0) @binding("},
}


def _string_literals(tree: ast.AST) -> Iterator[str]:
    """The string constants and f-strings (``{}`` for their fields) of ``tree``, docstrings aside."""
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            yield "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.value


def test_python_builds_no_wgsl_statements() -> None:
    """Kernels and their pieces are .wgsl files: no module of the package writes WGSL statements
    into a string, except the few literals of ``_PYTHON_WGSL``."""
    root = pathlib.Path(kernels.__file__).parent.parent
    found: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        for text in _string_literals(ast.parse(path.read_text())):
            if _STATEMENT.search(text):
                found.setdefault(f"gputensor/{path.relative_to(root).as_posix()}", set()).add(text)
    assert "gputensor/_backend/kernels.py" in found  # (the scan sees f-strings)
    extra = {module: sorted(texts - _PYTHON_WGSL.get(module, set())) for module, texts in found.items()}
    assert not {m: t for m, t in extra.items() if t}, "WGSL statements built in Python; write a snippet"
