"""A test-side reader of the ``// @fn NAME`` WGSL libraries (f32math, f64math), kept apart from
``gputensor._backend.kernels`` on purpose: the tests check the file format against their own
reading of it."""

from __future__ import annotations

import importlib.resources
import re

MARKER = re.compile(r"^// @fn ([A-Za-z_][A-Za-z0-9_]*)[ \t]*$", re.MULTILINE)


def library_text(library: str) -> str:
    """The text of ``gputensor/_wgsl/<library>.wgsl``."""
    return importlib.resources.files("gputensor._wgsl").joinpath(f"{library}.wgsl").read_text()


def library_chunks(library: str) -> dict[str, str]:
    """NAME -> the text from the marker ``// @fn NAME`` to the next marker, in file order."""
    text = library_text(library)
    marks = list(MARKER.finditer(text))
    chunks: dict[str, str] = {}
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        assert m.group(1) not in chunks, f"duplicate marker {m.group(1)}"
        chunks[m.group(1)] = text[m.start() : end]
    return chunks


def dependencies(chunks: dict[str, str], roots: list[str]) -> list[str]:
    """The marker names ``roots`` need (themselves included), in file order."""
    need: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in need:
            continue
        need.add(name)
        body = chunks[name]
        todo.extend(o for o in chunks if o not in need and re.search(rf"\b{re.escape(o)}\(", body))
    return [name for name in chunks if name in need]


def source_for(library: str, call: str) -> str:
    """The library functions ``call`` uses, with their dependencies, in file order."""
    chunks = library_chunks(library)
    roots = [name for name in chunks if re.search(rf"\b{re.escape(name)}\(", call)]
    return "".join(chunks[name] for name in dependencies(chunks, roots))
