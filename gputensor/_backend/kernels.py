"""Loading and specialising the WGSL kernel sources shipped in ``gputensor/_wgsl``.

A template names its placeholders as ``{{NAME}}``. ``render`` substitutes every one of them and
fails on a placeholder it was not given, or on a value given for a placeholder the template does
not have. A line ``//#include NAME`` pulls in ``NAME.wgsl`` (once); a line ``//#unroll`` above a
loop ``for (var i = 0u; i < N; i++) {`` with a constant ``N`` expands it into its iterations
(``unroll_loops``); ``// @fn`` markers make function libraries (``library_code``).
``gputensor/_wgsl/README.md`` describes these mechanisms, when to use which, and why each one
exists. No wgpu here: this module is pure text, so it can be tested and inspected without a
device. Set ``GPUTENSOR_DUMP_WGSL=DIR`` to write each rendered source to DIR.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import os
import re
from collections.abc import Mapping

from . import config
from .wgsl_types import F32_BITS

#: Functions a rendered kernel gets when it calls them and does not define them.
_RUNTIME_HELPERS = {
    F32_BITS: f"fn {F32_BITS}(bits: u32) -> f32 {{\n    return bitcast<f32>(bits);\n}}\n",
}

#: Types a rendered kernel gets declared when it names them and does not declare them: int64 and
#: uint64 as two 32-bit words (``_wgsl/int64_emul.wgsl``).
_RUNTIME_TYPES = {
    name: (re.compile(rf"\b{name}\b"), f"struct {name} {{ lo: u32, hi: u32 }}\n") for name in ("i64e", "u64e")
}

_PLACEHOLDER = re.compile(r"\{\{([A-Z0-9_]+)\}\}")
_INCLUDE = re.compile(r"^//#include\s+([A-Za-z0-9_]+)\s*$", re.MULTILINE)


@functools.lru_cache(maxsize=None)
def template_source(name: str) -> str:
    """The raw text of ``_wgsl/<name>.wgsl`` with its includes expanded; KeyError if missing."""
    try:
        text = importlib.resources.files("gputensor._wgsl").joinpath(f"{name}.wgsl").read_text()
    except FileNotFoundError:
        raise KeyError(f"no WGSL kernel named {name!r} in gputensor/_wgsl") from None
    seen: set[str] = {name}

    def expand(match: re.Match[str]) -> str:
        inc = match.group(1)
        if inc in seen:
            return ""
        seen.add(inc)
        return _INCLUDE.sub(expand, template_source(inc))

    return _INCLUDE.sub(expand, text)


def placeholders(name: str) -> frozenset[str]:
    """The placeholder names the template ``name`` expects."""
    return frozenset(_PLACEHOLDER.findall(template_source(name)))


@functools.lru_cache(maxsize=4096)
def _render_cached(name: str, items: tuple[tuple[str, str], ...]) -> str:
    source = template_source(name)
    values = dict(items)
    expected = placeholders(name)
    missing = expected - values.keys()
    unknown = values.keys() - expected
    if missing or unknown:
        raise KeyError(
            f"kernel {name!r}: missing placeholders {sorted(missing)}, unknown {sorted(unknown)}"
        )
    text = with_helpers(unroll_loops(_PLACEHOLDER.sub(lambda m: values[m.group(1)], source)))
    dump_dir = config.value("dump_wgsl")
    if dump_dir:
        os.makedirs(dump_dir, exist_ok=True)
        digest = hashlib.sha1(repr(items).encode()).hexdigest()[:10]
        with open(os.path.join(dump_dir, f"{name}-{digest}.wgsl"), "w") as f:
            f.write(text)
    return text


def with_helpers(text: str) -> str:
    """``text`` with the definitions of the runtime helpers (``F32_BITS``) it calls and lacks,
    and of the emulated 64-bit integer structs it names and does not declare."""
    for name, code in _RUNTIME_HELPERS.items():
        if f"{name}(" in text and f"fn {name}(" not in text:
            text += "\n" + code
    if "64e" in text:  # emulated int64: the structs and the helpers the kernel calls
        defined = frozenset(_DEFINED_FN.findall(text))
        helpers = library_code(text, defined)
        if helpers:
            text += "\n" + helpers + "\n"
        for name, (pattern, code) in _RUNTIME_TYPES.items():
            if f"struct {name} " not in text and pattern.search(text):
                text += "\n" + code
    return text


_UNROLL = re.compile(
    r"^([ \t]*)//#unroll[ \t]*\n[ \t]*for \(var ([A-Za-z_][A-Za-z0-9_]*) = 0u; \2 < ([A-Za-z0-9_]+); \2\+\+\) \{[ \t]*\n",
    re.MULTILINE,
)
_CONST_U32 = re.compile(r"^const ([A-Z0-9_]+): u32 = ([0-9]+)u;", re.MULTILINE)
#: Longest loop ``//#unroll`` expands.
UNROLL_MAX = 64


def unroll_loops(text: str) -> str:
    """Expand every loop marked by a line ``//#unroll`` right above it into its iterations.

    The loop must read ``for (var i = 0u; i < N; i++) {`` (on one line; ``N`` a literal like
    ``8u`` or a ``const N: u32 = 8u;`` of the text) and its body must not ``break`` or
    ``continue`` it; iteration k becomes the block ``{ let i = ku; <body> }``. Drivers such as
    NVIDIA's do not always unroll WGSL loops themselves, and a private array indexed by a loop
    counter then lives in slow local memory instead of registers. ValueError for a marked loop
    that does not have that form."""
    if "//#unroll" not in text:
        return text
    consts = {m.group(1): int(m.group(2)) for m in _CONST_U32.finditer(text)}
    while True:
        m = _UNROLL.search(text)
        if m is None:
            if "//#unroll" in text:
                raise ValueError("//#unroll must stand right above 'for (var i = 0u; i < N; i++) {'")
            return text
        indent, var, bound = m.group(1), m.group(2), m.group(3)
        count = int(bound[:-1]) if bound.endswith("u") and bound[:-1].isdigit() else consts.get(bound)
        if count is None or count > UNROLL_MAX:
            raise ValueError(f"//#unroll: loop bound {bound!r} is not a constant of at most {UNROLL_MAX}")
        depth, k = 1, m.end()
        while depth:
            if k >= len(text):
                raise ValueError("//#unroll: unbalanced braces in the loop body")
            depth += {"{": 1, "}": -1}.get(text[k], 0)
            k += 1
        body = text[m.end() : k - 1].rstrip(" \t")
        if re.search(r"\b(break|continue)\b", _strip_nested_loops(body)):
            raise ValueError("//#unroll: the loop body must not break or continue")
        blocks = "".join(f"{indent}{{ let {var} = {i}u;\n{body}{indent}}}\n" for i in range(count))
        end = text.index("\n", k - 1) + 1 if "\n" in text[k - 1 :] else len(text)
        text = text[: m.start()] + blocks + text[end:]


def _strip_nested_loops(body: str) -> str:
    """``body`` without the bodies of loops nested in it (their break/continue are their own)."""
    out, k = [], 0
    for m in re.finditer(r"\b(for|loop|while)\b[^{]*\{", body):
        if m.start() < k:
            continue
        out.append(body[k : m.start()])
        depth, k = 1, m.end()
        while depth and k < len(body):
            depth += {"{": 1, "}": -1}.get(body[k], 0)
            k += 1
    out.append(body[k:])
    return "".join(out)


def render(name: str, defines: Mapping[str, object] | None = None) -> str:
    """Return the WGSL source of kernel ``name`` with ``defines`` substituted.

    Raises KeyError for an unknown kernel or a placeholder mismatch.
    """
    items = tuple(sorted((k, str(v)) for k, v in (defines or {}).items()))
    return _render_cached(name, items)


_FN_MARKER = re.compile(r"^// @fn ([A-Za-z0-9_]+)((?: [a-z0-9]+)*)\s*$", re.MULTILINE)
_CALL = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(")

#: Function libraries an elementwise expression may call (``// @fn`` markers, see ewise_helpers.wgsl).
LIBRARIES = ("ewise_helpers", "complex", "f64math", "f32math", "int64_emul")


def library_functions() -> frozenset[str]:
    """The names of every function of the libraries (per listed type)."""
    return _library_names()


@functools.lru_cache(maxsize=None)
def _library_names() -> frozenset[str]:
    return frozenset(_library_functions())


@functools.lru_cache(maxsize=None)
def _library_functions() -> dict[str, str]:
    """name -> WGSL text of every function in the libraries, instantiated per listed type."""
    functions: dict[str, str] = {}
    for lib in LIBRARIES:
        try:
            text = template_source(lib)
        except KeyError:
            continue
        marks = list(_FN_MARKER.finditer(text))
        for j, mark in enumerate(marks):
            body = text[mark.end() : marks[j + 1].start() if j + 1 < len(marks) else len(text)].strip()
            types = mark.group(2).split()
            if not types:
                functions[mark.group(1)] = body
            for t in types:
                functions[f"{mark.group(1)}_{t}"] = re.sub(r"(?<![A-Za-z0-9])TT(?![A-Za-z0-9])", t, body)
    return functions


_DEFINED_FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def library_code(code: str, defined: frozenset[str] = frozenset()) -> str:
    """The library functions that ``code`` calls, with their dependencies, in dependency order
    (those named in ``defined`` left out, with their dependencies)."""
    functions = _library_functions()
    ordered: list[str] = []
    seen: set[str] = set(defined)

    def visit(text: str) -> None:
        for name in _CALL.findall(text):
            if name in functions and name not in seen:
                seen.add(name)
                visit(functions[name])
                ordered.append(name)

    visit(code)
    return "\n\n".join(functions[name] for name in ordered)
