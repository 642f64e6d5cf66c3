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

from . import config
from .errors import invalid_argument
from .launch import LaunchProgram, Record, Region
from .plan_cache import PlanCache

__all__ = ["SOURCES", "ConcatCall", "concat_call", "concat_words"]

#: Sources one dispatch reads (the kernel's source bindings).
SOURCES = 8
_WG = 256
_PARAMS = struct.Struct("<4I12I8I")


class ConcatCall:
    """The dispatches of one concatenation structure (``rows``, the parts' word counts) on the
    context ``ctx``, everything but the pointers: per dispatch (``groups``) the indices of its
    (non-empty) parts, the spans ``WebGpuBackend.bindings`` checks and binds, the column words
    and the grid, and its ``launch.LaunchProgram`` (``programs``: bases 0 the result, 1, 2, ...
    the dispatch's parts). ``launch`` replays them for new pointers.

    When every part is a whole number of 16-byte vectors per row (and bindings start on whole
    vectors), a second set of dispatches copies vec4<u32> words (``vec_groups``, units of 4
    words, with programs of their own); ``launch`` takes it for a dispatch whose pointers' first
    words are all on a vector (the ``concat_vec4`` knob switches it)."""

    __slots__ = ("ctx", "rows", "width", "groups", "vec_groups", "programs")

    def __init__(self, ctx: Any, rows: int, words: Sequence[int]) -> None:
        self.ctx = ctx
        self.rows = rows
        self.width = width = sum(words)
        self.groups = _groups(ctx, rows, words, 1)
        self.vec_groups: tuple[Any, ...] = ()
        if (config.value("concat_vec4") and ctx.storage_offset_alignment % 16 == 0
                and all(w % 4 == 0 for w in words)):
            self.vec_groups = _groups(ctx, rows, [w // 4 for w in words], 4)
        pipe = ctx.pipeline("concat", SOURCES + 1, _SCALAR)
        vec_pipe = ctx.pipeline("concat", SOURCES + 1, _VECTOR) if self.vec_groups else None
        self.programs = tuple(
            (_program(ctx, pipe, _SCALAR, rows, width, group, 4),
             _program(ctx, vec_pipe, _VECTOR, rows, width >> 2, self.vec_groups[g], 16) if self.vec_groups else None)
            for g, group in enumerate(self.groups))

    def valid_on(self, backend: Any) -> bool:
        """Whether the call holds on ``backend`` now (its context)."""
        return self.ctx is backend._ctx

    def launch(self, backend: Any, src_ptrs: Sequence[int], dst_ptr: int) -> None:
        """Record the concatenation of the parts at ``src_ptrs`` (one per word count, empty
        parts included) into ``dst_ptr``: per dispatch the windows checked and bound
        (``WebGpuBackend.bindings``) and its program recorded with them, or with a ``dispatch``
        wrapper on the context its reference path. BackendError (invalid argument) for bad or
        unaligned pointers, before anything of that dispatch is recorded."""
        ctx = self.ctx
        spy = ctx.__dict__.get("dispatch") is not None
        for (picked, spans, sizes, _, _), (program, vec_program) in zip(self.groups, self.programs):
            ptrs = [dst_ptr] + [src_ptrs[k] for k in picked]
            for p in ptrs:
                if type(p) is not int or p & 3:
                    raise invalid_argument("concatenation pointers must be 4-byte aligned")
            regions, firsts = backend.bindings(ptrs, sizes, spans)
            if vec_program is not None and not any(f & 3 for f in firsts):
                if spy:
                    vec_program.dispatch(backend, ctx, ptrs)
                else:
                    vec_program.record(ctx, [(b, o, size & ~15) for b, o, size in regions],
                                       [f >> 2 for f in firsts] if any(firsts) else None)
            elif spy:
                program.dispatch(backend, ctx, ptrs)
            else:
                program.record(ctx, regions, firsts if any(firsts) else None)


def _program(ctx: Any, pipe: Any, defines: dict[str, object], rows: int, width: int, group: tuple[Any, ...],
             itemsize: int) -> LaunchProgram:
    """The program of one dispatch ``group`` of ``_groups`` (``width``: the result's row in the
    kernel's words of ``itemsize`` bytes): bindings the result and the parts (a 16-byte word
    binding cut to whole vectors), the unused source bindings the first part again (never
    read); the first-element words 2 (the result) and 16, 17, ... (the parts) patched."""
    picked, spans, _, cols, grid = group
    n = len(picked)
    vector = -16 if itemsize == 16 else 0
    regions = [Region(base, 0, count * 4, itemsize, vector, word, 0)
               for base, ((_, count, _), word) in enumerate(zip(spans, (2, *range(16, 16 + n))))]
    regions += [regions[1]._replace(word=0)] * (SOURCES - n)
    words = (rows, width, 0, n, *cols, *_ZEROS)
    return LaunchProgram.compile("concat", _PARAMS, ctx, [Record(pipe, defines, words, grid, tuple(regions))], ())


def _groups(ctx: Any, rows: int, words: Sequence[int], unit: int) -> tuple[Any, ...]:
    """Per dispatch (``SOURCES`` parts at most, empty parts left out): the parts' indices, the
    spans ``WebGpuBackend.bindings`` takes (in u32 words: ``words`` are counted in units of
    ``unit`` u32 words), the binding item sizes, the column words (in units) and the grid."""
    width = sum(words)
    groups = []
    col = 0
    for start in range(0, len(words), SOURCES):
        picked = tuple(k for k in range(start, min(start + SOURCES, len(words))) if words[k] > 0)
        cols = [col]
        for k in picked:
            cols.append(cols[-1] + words[k])
        col = cols[-1]
        if not picked:
            continue
        n = len(picked)
        spans = ((0, rows * width * unit, 0),) + tuple((0, rows * words[k] * unit, 0) for k in picked)
        cols += [cols[-1]] * (SOURCES + 1 - len(cols)) + [0] * 3
        grid = ctx.fold_grid(-(-(rows * (cols[n] - cols[0])) // _WG))
        groups.append((picked, spans, (4,) * (n + 1), tuple(cols[: SOURCES + 4]), grid))
    return tuple(groups)


#: The kernel's placeholders: u32 words, or 16-byte vectors of them.
_SCALAR = {"WORD": "u32"}
_VECTOR = {"WORD": "vec4<u32>"}
_ZEROS = (0,) * SOURCES
#: Concatenation structures kept per backend, by (rows, the parts' word counts).
_CALLS = PlanCache(256)


def concat_call(backend: Any, rows: int, words: Sequence[int]) -> ConcatCall | None:
    """The kept ``ConcatCall`` of ``rows`` rows of parts of ``words`` u32 words each on
    ``backend`` (made on first use); None when there is nothing to record. Raises BackendError
    (invalid argument) for a result too large for one kernel."""
    rows = int(rows)
    words = tuple(int(w) for w in words)
    width = sum(words)
    if rows <= 0 or width <= 0:
        return None
    if rows * width >= 1 << 32:
        raise invalid_argument(f"concatenation of {rows * width} words is too large for one kernel")
    ctx = backend.context
    plans = _CALLS.of(backend)
    key = (rows, words)
    call = plans.get(key)
    if call is None or call.ctx is not ctx:
        call = ConcatCall(ctx, rows, words)
        _CALLS.keep(plans, key, call)
    return call


def concat_words(backend: Any, dst_ptr: int, rows: int, parts: Sequence[tuple[int, int]]) -> None:
    """Record the concatenation into the contiguous result at ``dst_ptr`` (``rows`` rows of the
    sum of the parts' words): part ``k`` = ``(src_ptr, words)`` is a contiguous source of
    ``rows`` rows of ``words`` u32 words, placed after the parts before it in every row. Both
    pointers must be 4-byte aligned. Raises BackendError (invalid argument) for bad pointers,
    sizes or regions larger than one binding."""
    call = concat_call(backend, rows, [w for _, w in parts])
    if call is not None:
        call.launch(backend, [p for p, _ in parts], dst_ptr)
