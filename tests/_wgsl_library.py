"""A test-side reader of the ``// @fn NAME`` WGSL libraries (f32math, f64math), kept apart from
``gputensor._backend.kernels`` on purpose: the tests check the file format against their own
reading of it; and the runner of a library call on the device (``math_test.wgsl``)."""

from __future__ import annotations

import importlib.resources
import re
from typing import Any

import numpy as np

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


def run_call(backend: Any, library: str, call: str, *args: np.ndarray) -> np.ndarray:
    """Evaluate the WGSL expression ``call`` of ``library`` ('f32math' or 'f64math': float32 or
    float64 throughout) over x = the first argument (a second one is read as inp[params.n + i])
    with ``math_test.wgsl`` on the device; returns the results."""
    dtype = np.float32 if library == "f32math" else np.float64
    size = np.dtype(dtype).itemsize
    n = args[0].size
    data = np.concatenate([np.ascontiguousarray(a, dtype=dtype).ravel() for a in args])
    src = backend.alloc(data.nbytes)
    dst = backend.alloc(n * size)
    try:
        backend.copy_htod(src, data)
        win_in = backend.window(src, data.nbytes, size)
        win_out = backend.window(dst, n * size, size)
        assert win_in.first == 0 and win_out.first == 0
        ctx = backend.context
        ctx.dispatch(
            "math_test",
            [n],
            [win_in.binding, win_out.binding],
            ctx.fold_grid(-(-n // 64)),
            {"FUNCS": source_for(library, call), "CALL": call, "T": "f32" if dtype is np.float32 else "f64"},
        )
        out = np.empty(n, dtype=dtype)
        backend.copy_dtoh(out, dst)
        return out
    finally:
        backend.free(src)
        backend.free(dst)
