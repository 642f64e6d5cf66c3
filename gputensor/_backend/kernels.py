"""Loading and specialising the WGSL kernel sources shipped in ``gputensor/_wgsl``.

A template names its placeholders as ``{{NAME}}``. ``render`` substitutes every one of them and
fails on a placeholder it was not given, or on a value given for a placeholder the template does
not have. A line ``//#include NAME`` pulls in ``NAME.wgsl`` (once); a line ``//#unroll`` above a
loop ``for (var i = 0u; i < N; i++) {`` with a constant ``N`` expands it into its iterations
(``unroll_loops``); the functions of the libraries (``LIBRARIES``) that code calls are
pulled in by name (``library_code``).
``gputensor/_wgsl/README.md`` describes these mechanisms, when to use which, and why each one
exists. No wgpu here: this module is pure text, so it can be tested and inspected without a
device. Set ``GPUTENSOR_DUMP_WGSL=DIR`` to write each compiled source to DIR (``dump``).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import os
import re
from collections.abc import Iterable, Mapping

from . import config
from .wgsl_types import F32_BITS

#: Functions a rendered kernel gets when it calls them and does not define them (name ->
#: snippet of ``_wgsl/runtime``).
_RUNTIME_HELPERS = {F32_BITS: "runtime/f32_bits"}

#: Types a rendered kernel gets declared when it names them and does not declare them: int64 and
#: uint64 as two 32-bit words (``_wgsl/int64_emul.wgsl``, ``_wgsl/runtime/int64_struct.wgsl``).
_RUNTIME_TYPES = {name: re.compile(rf"\b{name}\b") for name in ("i64e", "u64e")}

_PLACEHOLDER = re.compile(r"\{\{([A-Z0-9_]+)\}\}")
_INCLUDE = re.compile(r"^//#include\s+([A-Za-z0-9_]+)\s*$", re.MULTILINE)


@functools.lru_cache(maxsize=None)
def template_source(name: str) -> str:
    """The raw text of ``_wgsl/<name>.wgsl`` with its includes expanded; KeyError if missing."""
    *folders, base = name.split("/")
    try:
        text = importlib.resources.files("gputensor._wgsl").joinpath(*folders, f"{base}.wgsl").read_text()
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
    return with_helpers(unroll_loops(_PLACEHOLDER.sub(lambda m: values[m.group(1)], source)))


def dump(name: str, source: str) -> None:
    """Write ``source``, the text of kernel ``name`` about to be compiled, to the folder
    ``GPUTENSOR_DUMP_WGSL`` names (if set) as ``<name>-<sha1 of the text>.wgsl``: one file per
    distinct text, so two dumps compare as sets of file names."""
    dump_dir = config.value("dump_wgsl")
    if dump_dir:
        os.makedirs(dump_dir, exist_ok=True)
        digest = hashlib.sha1(source.encode()).hexdigest()[:16]
        with open(os.path.join(dump_dir, f"{name.replace('/', '_')}-{digest}.wgsl"), "w") as f:
            f.write(source)


def with_helpers(text: str) -> str:
    """``text`` with the definitions of the runtime helpers (``F32_BITS``) it calls and lacks,
    and of the emulated 64-bit integer structs it names and does not declare."""
    for name, part in _RUNTIME_HELPERS.items():
        if f"{name}(" in text and f"fn {name}(" not in text:
            text += "\n" + snippet(part, {"NAME": name}) + "\n"
    if "64e" in text:  # emulated int64: the structs and the helpers the kernel calls
        defined = frozenset(_DEFINED_FN.findall(text))
        helpers = library_code(text, defined)
        if helpers:
            text += "\n" + helpers + "\n"
        for name, pattern in _RUNTIME_TYPES.items():
            if f"struct {name} " not in text and pattern.search(text):
                text += "\n" + snippet("runtime/int64_struct", {"NAME": name}) + "\n"
    return text


_BOUND = r"[A-Za-z0-9_]+(?: [-+] [A-Za-z0-9_]+)?"
_UNROLL = re.compile(
    rf"^([ \t]*)//#unroll[ \t]*\n[ \t]*for \(var ([A-Za-z_][A-Za-z0-9_]*) = ({_BOUND}); \2 < ({_BOUND}); \2\+\+\) \{{[ \t]*\n",
    re.MULTILINE,
)
_CONST_U32 = re.compile(r"^const ([A-Z0-9_]+): u32 = ([0-9]+)u;", re.MULTILINE)
#: Longest loop ``//#unroll`` expands.
UNROLL_MAX = 64


def unroll_loops(text: str) -> str:
    """Expand every loop marked by a line ``//#unroll`` right above it into its iterations.

    The loop must read ``for (var i = S; i < N; i++) {`` (on one line; ``S`` and ``N`` each a
    literal like ``8u``, a ``const N: u32 = 8u;`` of the text, the counter of a marked loop around
    this one, or ``a + b`` or ``a - b`` of two of those) and its body must not ``break`` or
    ``continue`` it; iteration k becomes the block ``{ let i = ku; <body> }``. A bound that
    names an enclosing marked loop's counter makes triangular loops (``for (var q = 0u; q < i;
    q++)``, ``for (var j = c + 1u; j < N; j++)``, ``for (var q = N - i; q < N; q++)``) expand
    to only their live iterations. Drivers such as NVIDIA's do not always unroll WGSL loops themselves, and a private array indexed by
    a loop counter then lives in slow local memory instead of registers. ValueError for a marked
    loop that does not have that form."""
    if "//#unroll" not in text:
        return text
    consts = {m.group(1): int(m.group(2)) for m in _CONST_U32.finditer(text)}
    while True:
        m = _UNROLL.search(text)
        if m is None:
            if "//#unroll" in text:
                raise ValueError("//#unroll must stand right above 'for (var i = 0u; i < N; i++) {'")
            return text
        indent, var = m.group(1), m.group(2)
        first, bound = _bound_value(m.group(3), consts), _bound_value(m.group(4), consts)
        if first is None or bound is None or bound - first > UNROLL_MAX:
            raise ValueError(f"//#unroll: loop bounds {m.group(3)!r}, {m.group(4)!r} are not "
                             f"constants at most {UNROLL_MAX} apart")
        depth, k = 1, m.end()
        while depth:
            if k >= len(text):
                raise ValueError("//#unroll: unbalanced braces in the loop body")
            depth += {"{": 1, "}": -1}.get(text[k], 0)
            k += 1
        body = text[m.end() : k - 1].rstrip(" \t")
        if re.search(r"\b(break|continue)\b", _strip_nested_loops(body)):
            raise ValueError("//#unroll: the loop body must not break or continue")
        blocks = "".join(f"{indent}{{ let {var} = {i}u;\n{_bind_counter(body, var, i)}{indent}}}\n"
                         for i in range(first, bound))
        end = text.index("\n", k - 1) + 1 if "\n" in text[k - 1 :] else len(text)
        text = text[: m.start()] + blocks + text[end:]


def _bound_value(text: str, consts: dict[str, int]) -> int | None:
    """The value of an unrolled loop's bound ``text`` (``8u``, a constant's name, or ``a + b``
    or ``a - b`` of those); None if it is not known."""
    total, sign = 0, 1
    for term in text.split(" "):
        if term in "+-":
            sign = 1 if term == "+" else -1
            continue
        if term.endswith("u") and term[:-1].isdigit():
            total += sign * int(term[:-1])
        elif term in consts:
            total += sign * consts[term]
        else:
            return None
    return total


def _bind_counter(body: str, var: str, value: int) -> str:
    """``body`` with the counter ``var`` of the loop being unrolled written as ``value`` in the
    headers of the marked loops inside it (their bounds may name it)."""
    if f" {var}" not in body:
        return body
    word = re.compile(rf"\b{var}\b")

    def bind(m: re.Match[str]) -> str:
        text, at = m.group(0), m.start(0)
        return (text[: m.start(3) - at] + word.sub(f"{value}u", m.group(3))
                + text[m.end(3) - at : m.start(4) - at] + word.sub(f"{value}u", m.group(4))
                + text[m.end(4) - at :])

    return _UNROLL.sub(bind, body)


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


_LEADING_COMMENTS = re.compile(r"\A(?://[^\n]*\n)*")


@functools.lru_cache(maxsize=8192)
def _snippet_cached(name: str, items: tuple[tuple[str, str], ...]) -> str:
    source = _LEADING_COMMENTS.sub("", template_source(name), count=1).rstrip("\n")
    values = dict(items)
    expected = frozenset(_PLACEHOLDER.findall(source))
    missing = expected - values.keys()
    unknown = values.keys() - expected
    if missing or unknown:
        raise KeyError(
            f"snippet {name!r}: missing placeholders {sorted(missing)}, unknown {sorted(unknown)}"
        )
    source = _EMPTY_LINE.sub(lambda m: "" if values[m.group(1) or m.group(2)] == "" else m.group(0), source)
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], source)


#: A line holding only a placeholder (with the newline before it, or after it on the first line).
_EMPTY_LINE = re.compile(r"\n[ \t]*\{\{([A-Z0-9_]+)\}\}[ \t]*(?=\n|\Z)|\A[ \t]*\{\{([A-Z0-9_]+)\}\}[ \t]*\n")


def snippet(name: str, defines: Mapping[str, object] | None = None) -> str:
    """The WGSL text of the snippet ``_wgsl/<name>.wgsl`` (``name`` may name a folder, as
    ``row_ops/load_f16``) with ``defines`` substituted: a piece of a kernel (a function, a
    declaration) that an op module picks per dtype or operand and passes to a kernel's
    placeholder. The file's leading comment lines (its description, from the first column) and trailing newlines are
    left out, and so is a line holding only a placeholder given the empty string (a list of
    lines that has none); ``//#include`` lines are expanded, nothing else is (no ``//#unroll``,
    no runtime helpers: the kernel that takes the snippet gets those).

    Raises KeyError for an unknown snippet or a placeholder mismatch.
    """
    items = tuple(sorted((k, str(v)) for k, v in (defines or {}).items()))
    return _snippet_cached(name, items)


def render(name: str, defines: Mapping[str, object] | None = None) -> str:
    """Return the WGSL source of kernel ``name`` with ``defines`` substituted.

    Raises KeyError for an unknown kernel or a placeholder mismatch.
    """
    items = tuple(sorted((k, str(v)) for k, v in (defines or {}).items()))
    return _render_cached(name, items)


_CALL = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_TOP_FN = re.compile(r"^fn[ \t]+([A-Za-z_][A-Za-z0-9_]*(?:\{\{T\}\})?)[ \t]*\(", re.MULTILINE)
_COMMENT = re.compile(r"//[^\n]*")

#: Function libraries an expression may call (ordinary WGSL functions, see ewise_helpers.wgsl),
#: with the types their generic functions (named ``NAME_{{T}}``) are made for.
LIBRARIES: dict[str, tuple[str, ...]] = {
    "ewise_helpers": ("f32", "f64"),
    "ewise_int": ("i32", "i64", "u32", "u64"),
    "complex": ("f32", "f64"),
    "f64math": (),
    "f32math": (),
    "int64_emul": ("i64e", "u64e"),
}


def library_functions() -> frozenset[str]:
    """The names of every function of the libraries (per listed type)."""
    return _library_names()


@functools.lru_cache(maxsize=None)
def _library_names() -> frozenset[str]:
    return frozenset(_library_functions())


def top_level_functions(text: str) -> dict[str, str]:
    """name -> text of every function of the WGSL ``text`` that holds only functions and
    comments (a library): the function with the comment lines right above it. ValueError for
    anything else at the top level or unbalanced braces."""
    functions: dict[str, str] = {}
    # (braces of the placeholder and of comments are no block's)
    masked = _COMMENT.sub(lambda c: " " * len(c.group()), text.replace("{{T}}", "_____"))
    k = 0
    rest = []
    for m in _TOP_FN.finditer(text):
        if m.start() < k:
            continue
        start = m.start()
        while True:  # the comment lines right above
            prev = text.rfind("\n", 0, start - 1) + 1 if start else 0
            if start and text[prev:start].lstrip(" \t").startswith("//"):
                start = prev
            else:
                break
        rest.append(text[k:start])
        j = masked.index("{", m.end()) + 1
        depth = 1
        while depth:
            if j >= len(masked):
                raise ValueError(f"unbalanced braces in function {m.group(1)}")
            depth += {"{": 1, "}": -1}.get(masked[j], 0)
            j += 1
        functions[m.group(1)] = text[start:j]
        k = j
    rest.append(text[k:])
    stray = _COMMENT.sub("", "".join(rest)).strip()
    if stray:
        raise ValueError(f"a function library holds more than functions: {stray[:60]!r}")
    return functions


@functools.lru_cache(maxsize=None)
def _library_functions() -> dict[str, tuple[str, tuple[str, ...]]]:
    """name -> (WGSL text, the names it calls) of every function in the libraries, a generic
    one (``NAME_{{T}}``) made once per type of its library."""
    functions: dict[str, tuple[str, tuple[str, ...]]] = {}
    for lib, types in LIBRARIES.items():
        try:
            text = template_source(lib)
        except KeyError:
            continue
        for name, body in top_level_functions(text).items():
            if ("{{T}}" in body) != name.endswith("{{T}}") or (name.endswith("{{T}}") and not types):
                raise ValueError(f"{lib}.wgsl: {{{{T}}}} belongs in the name and text of a generic "
                                 f"function of a library with types ({name})")
            variants = [(name[: -len("{{T}}")] + t, body.replace("{{T}}", t)) for t in types] \
                if name.endswith("{{T}}") else [(name, body)]
            for full, code in variants:
                if full in functions:
                    raise ValueError(f"library function {full} is defined twice")
                calls = tuple(dict.fromkeys(_CALL.findall(_COMMENT.sub("", code))))
                functions[full] = (code, calls)
    return functions


_DEFINED_FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def library_code(code: str, defined: frozenset[str] = frozenset()) -> str:
    """The library functions that ``code`` calls, with their dependencies, in dependency order
    (those named in ``defined`` left out, with their dependencies)."""
    functions = _library_functions()
    ordered: list[str] = []
    seen: set[str] = set(defined)

    def visit(calls: Iterable[str]) -> None:
        for name in calls:
            if name in functions and name not in seen:
                seen.add(name)
                visit(functions[name][1])
                ordered.append(name)

    visit(_CALL.findall(code))
    return "\n\n".join(functions[name][0] for name in ordered)
