"""A test-side reader of the WGSL function libraries (f32math, f64math: ordinary functions, each
with the comment lines right above it), kept apart from ``gputensor._backend.kernels`` on
purpose: the tests check the file format against their own reading of it; and the runner of a
library call on the device (``math_test.wgsl``)."""

from __future__ import annotations

import importlib.resources
import re
from typing import Any

import numpy as np

#: A function definition at the top level of a library (the first of a chunk's lines after its comments).
MARKER = re.compile(r"^fn ([A-Za-z_][A-Za-z0-9_]*)\(", re.MULTILINE)


def library_text(library: str) -> str:
    """The text of ``gputensor/_wgsl/<library>.wgsl``."""
    return importlib.resources.files("gputensor._wgsl").joinpath(f"{library}.wgsl").read_text()


def _chunk_start(text: str, at: int) -> int:
    """Where the comment lines right above the line at ``at`` begin."""
    lines = text[:at].split("\n")[:-1]
    start = at
    while lines and lines[-1].lstrip().startswith("//"):
        start -= len(lines.pop()) + 1
    return start


def library_chunks(library: str) -> dict[str, str]:
    """NAME -> the text of function NAME (from the comment lines right above its ``fn`` line to
    the next function's), in file order."""
    text = library_text(library)
    marks = list(MARKER.finditer(text))
    starts = [_chunk_start(text, m.start()) for m in marks]
    chunks: dict[str, str] = {}
    for i, m in enumerate(marks):
        end = starts[i + 1] if i + 1 < len(marks) else len(text)
        assert m.group(1) not in chunks, f"duplicate function {m.group(1)}"
        chunks[m.group(1)] = text[starts[i] : end]
    return chunks


def library_head(library: str) -> str:
    """The text of the library before its first function's chunk (the header comment)."""
    text = library_text(library)
    return text[: _chunk_start(text, MARKER.search(text).start())]


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
