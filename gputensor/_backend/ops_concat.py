"""Concatenation of contiguous sources in one dispatch per ``SOURCES`` sources (``concat.wgsl``).

The result and every source are read as u32 words: the result is ``rows`` rows of ``width``
words and source ``k`` fills a column range of each row from its own rows (``concat`` along
any axis of C-contiguous arrays is this with ``rows`` the product of the dims before the axis).
The caller checks that every byte count is a multiple of 4 (``words_fit``).

A structure (``rows``, the parts' word counts) is planned once per backend as a
``launch.LaunchProgram`` (operand 0 the result, operand ``1 + k`` part ``k``), and a second one
that copies 16-byte vectors where every part is a whole number of them per row; a call binds
and checks every operand at once (``WebGpuBackend.bindings``) and records the program.
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
#: The parameter word of the result's first word; the sources' follow from ``_SRC_FIRST``.
_DST_FIRST, _SRC_FIRST = 2, 16


class ConcatCall:
    """The concatenation of one structure (``rows``, the parts' word counts) on the context
    ``ctx``, everything but the pointers: ``program`` (u32 words) and, when every part is a
    whole number of 16-byte vectors per row and bindings start on whole vectors,
    ``vec_program`` (vec4<u32> words, bound as 16-byte items; None otherwise, or with the
    ``concat_vec4`` knob off), which ``launch`` takes when every pointer is on a vector too. Empty parts
    are left out of the dispatches."""

    __slots__ = ("ctx", "rows", "width", "nparts", "program", "vec_program", "_spans", "_vec_spans")

    def __init__(self, ctx: Any, rows: int, words: Sequence[int]) -> None:
        self.ctx = ctx
        self.rows = rows
        self.width = sum(words)
        self.nparts = len(words)
        self.program = _program(ctx, rows, words, 1)
        self.vec_program: LaunchProgram | None = None
        if (config.value("concat_vec4") and ctx.storage_offset_alignment % 16 == 0
                and all(w % 4 == 0 for w in words)):
            self.vec_program = _program(ctx, rows, [w // 4 for w in words], 4)
        self._spans = _spans(self.program)
        self._vec_spans = None if self.vec_program is None else _spans(self.vec_program)

    def valid_on(self, backend: Any) -> bool:
        """Whether the call holds on ``backend`` now (its context)."""
        return self.ctx is backend._ctx and self.program.valid_for(self.ctx)

    def launch(self, backend: Any, src_ptrs: Sequence[int], dst_ptr: int) -> None:
        """Record the concatenation of the parts at ``src_ptrs`` (one per word count, empty
        parts included) into ``dst_ptr``. BackendError (invalid argument) for bad or unaligned
        pointers, before anything is recorded."""
        if len(src_ptrs) != self.nparts:
            raise invalid_argument(f"{len(src_ptrs)} sources for a concatenation of {self.nparts} parts")
        ptrs = [dst_ptr, *src_ptrs]
        vec = self.vec_program is not None
        for p in ptrs:
            if type(p) is not int or p & 3:
                raise invalid_argument("concatenation pointers must be 4-byte aligned")
            if p & 15:
                vec = False
        ctx = self.ctx
        program, (bases, sizes, spans) = (self.vec_program, self._vec_spans) if vec else (self.program, self._spans)
        if ctx.__dict__.get("dispatch") is not None:
            program.dispatch(backend, ctx, ptrs)
            return
        regions, firsts = backend.bindings([ptrs[b] for b in bases], sizes, spans)
        if vec:  # (whole vectors: the bindings of whole allocations are cut down to them)
            regions = [(b, o, size & ~15) for b, o, size in regions]
        program.record(ctx, regions, firsts if any(firsts) else None)


def _program(ctx: Any, rows: int, words: Sequence[int], unit: int) -> LaunchProgram:
    """One dispatch per ``SOURCES`` parts (empty parts left out) of the concatenation of
    ``rows`` rows of parts of ``words`` words of ``unit`` u32 each."""
    defines = _SCALAR if unit == 1 else _VECTOR
    pipe = ctx.pipeline("concat", SOURCES + 1, defines)
    width = sum(words)
    records = []
    col = 0
    for start in range(0, len(words), SOURCES):
        picked = [k for k in range(start, min(start + SOURCES, len(words))) if words[k] > 0]
        cols = [col]
        for k in picked:
            cols.append(cols[-1] + words[k])
        col = cols[-1]
        if not picked:
            continue
        n = len(picked)
        size, vec = 4 * unit, 0 if unit == 1 else -4 * unit  # (vectors: whole ones bound)
        regions = [Region(0, 0, rows * width * size, size, vec, _DST_FIRST, 0)]
        regions += [Region(1 + k, 0, rows * words[k] * size, size, vec, _SRC_FIRST + j, 0)
                    for j, k in enumerate(picked)]
        regions += [regions[1]._replace(word=0)] * (SOURCES - n)  # unused source bindings (never read)
        cols += [cols[-1]] * (SOURCES + 1 - len(cols)) + [0] * 3
        words_ = (rows, width, 0, n, *cols[: SOURCES + 4], *_ZEROS)
        grid = ctx.fold_grid(-(-(rows * (cols[n] - cols[0])) // _WG))
        records.append(Record(pipe, defines, words_, grid, tuple(regions)))
    return LaunchProgram.compile("concat", _PARAMS, ctx, records, ())


def _spans(program: LaunchProgram) -> tuple[list[int], list[int], list[tuple[int, int, int]]]:
    """Per slot of ``program``: its operand, item size and ``WebGpuBackend.bindings`` span (in
    items from the operand's first; the slots bind whole operands)."""
    slots = program.slots
    return ([slot.base for slot in slots], [slot.itemsize for slot in slots],
            [(0, slot.nbytes // slot.itemsize, 0) for slot in slots])


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
