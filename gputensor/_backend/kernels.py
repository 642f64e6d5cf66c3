"""Loading and specialising the WGSL kernel sources shipped in ``gputensor/_wgsl``.

A template names its placeholders as ``{{NAME}}``. ``render`` substitutes every one of them and
fails on a placeholder it was not given, or on a value given for a placeholder the template does
not have. A line ``//#include NAME`` pulls in ``NAME.wgsl`` (once). No wgpu here: this module is
pure text, so it can be tested and inspected without a device. Set ``GPUTENSOR_DUMP_WGSL=DIR`` to
write each rendered source to DIR.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import os
import re
from collections.abc import Mapping

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
    text = _PLACEHOLDER.sub(lambda m: values[m.group(1)], source)
    dump_dir = os.environ.get("GPUTENSOR_DUMP_WGSL")
    if dump_dir:
        os.makedirs(dump_dir, exist_ok=True)
        digest = hashlib.sha1(repr(items).encode()).hexdigest()[:10]
        with open(os.path.join(dump_dir, f"{name}-{digest}.wgsl"), "w") as f:
            f.write(text)
    return text


def render(name: str, defines: Mapping[str, object] | None = None) -> str:
    """Return the WGSL source of kernel ``name`` with ``defines`` substituted.

    Raises KeyError for an unknown kernel or a placeholder mismatch.
    """
    items = tuple(sorted((k, str(v)) for k, v in (defines or {}).items()))
    return _render_cached(name, items)


_FN_MARKER = re.compile(r"^// @fn ([A-Za-z0-9_]+)((?: [a-z0-9]+)*)\s*$", re.MULTILINE)
_CALL = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(")

#: Function libraries an elementwise expression may call (``// @fn`` markers, see ewise_helpers.wgsl).
LIBRARIES = ("ewise_helpers", "f64math", "f32math")


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


def library_code(code: str) -> str:
    """The library functions that ``code`` calls, with their dependencies, in dependency order."""
    functions = _library_functions()
    ordered: list[str] = []
    seen: set[str] = set()

    def visit(text: str) -> None:
        for name in _CALL.findall(text):
            if name in functions and name not in seen:
                seen.add(name)
                visit(functions[name])
                ordered.append(name)

    visit(code)
    return "\n\n".join(functions[name] for name in ordered)
