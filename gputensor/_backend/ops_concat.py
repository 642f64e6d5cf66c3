"""Concatenation of contiguous sources in one dispatch per ``SOURCES`` sources (``concat.wgsl``).

The result and every source are read as u32 words: the result is ``rows`` rows of ``width``
words and source ``k`` fills a column range of each row from its own rows (``concat`` along
any axis of C-contiguous arrays is this with ``rows`` the product of the dims before the axis).
The caller checks that every byte count is a multiple of 4 (``words_fit``).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from .errors import invalid_argument

__all__ = ["SOURCES", "concat_words"]

#: Sources one dispatch reads (the kernel's source bindings).
SOURCES = 8
_WG = 256
_PARAMS = struct.Struct("<4I12I8I")


def concat_words(backend: Any, dst_ptr: int, rows: int, parts: Sequence[tuple[int, int]]) -> None:
    """Record the concatenation into the contiguous result at ``dst_ptr`` (``rows`` rows of the
    sum of the parts' words): part ``k`` = ``(src_ptr, words)`` is a contiguous source of
    ``rows`` rows of ``words`` u32 words, placed after the parts before it in every row. Both
    pointers must be 4-byte aligned. Raises BackendError (invalid argument) for bad pointers,
    sizes or regions larger than one binding."""
    ctx = backend.context
    rows = int(rows)
    width = sum(int(w) for _, w in parts)
    if rows <= 0 or width <= 0:
        return
    if rows * width >= 1 << 32:
        raise invalid_argument(f"concatenation of {rows * width} words is too large for one kernel")
    col = 0
    for start in range(0, len(parts), SOURCES):
        group = [(p, int(w)) for p, w in parts[start : start + SOURCES] if int(w) > 0]
        cols = [col]
        for _, w in group:
            cols.append(cols[-1] + w)
        col = cols[-1]
        if not group:
            continue
        ptrs = [dst_ptr] + [p for p, _ in group]
        counts = [rows * width] + [rows * w for _, w in group]
        if any(p & 3 for p in ptrs):
            raise invalid_argument("concatenation pointers must be 4-byte aligned")
        regions, firsts = backend.bindings(ptrs, [4] * len(ptrs), [(0, n, 0) for n in counts])
        n = len(group)
        regions += [regions[1]] * (SOURCES - n)  # unused source bindings (never read)
        cols += [cols[-1]] * (SOURCES + 1 - len(cols)) + [0] * 3
        srcs = firsts[1:] + [0] * (SOURCES - n)
        params = _PARAMS.pack(rows, width, firsts[0], n, *cols[: SOURCES + 4], *srcs)
        total = rows * (cols[n] - cols[0])
        ctx.dispatch("concat", params, regions, ctx.fold_grid(-(-total // _WG)))
