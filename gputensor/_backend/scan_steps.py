"""The dispatches of a planned scan (``ops_scan``): each phase's window blocks, parameter words
and bindings, pointer free (``_layout``, ``_steps``, cached per plan), and the reference path
that records a plan's levels through ``WgpuContext.dispatch`` with every window checked
(``_run``, ``_phase``).
"""

from __future__ import annotations

import functools
import itertools
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import invalid_argument
from .layout import block_starts, plan_blocks, strided_extent, strided_span
from .scan_plan import (CARRY_NONE, CARRY_REDUCED, CARRY_SCANNED, KERNEL, MODE_COLUMNS, MODE_VECTOR, WG, RowDim,
                        _aux_rows, _defines, _Plan, _plan, _Side, _vector_layout)
from .wgsl_types import StorageType

__all__: list[str] = []


def _run(backend: Any, op: str, n: int, rows: list[RowDim], src: _Side, dst: _Side,
         acc: StorageType) -> None:
    """Scan ``n``-long rows (n >= 1, at most three row dims, every size >= 1, arguments valid)."""
    plan = _plan(op, n, rows, src, dst, acc, _vector_layout(backend, rows, src, dst),
                 backend.max_window_bytes())
    # src's position 0 is `head` elements before its element 0 (dst's pointer stays: see window)
    src_ptr = src.ptr - plan.head * src.st.itemsize
    aux = None
    if plan.nunits > 1:
        aux = backend.alloc(plan.total * plan.nunits * acc.itemsize, zero=False)
    try:
        if aux is not None:
            _phase(backend, plan, 0, src_ptr, dst.ptr, aux)
            if plan.carry == CARRY_SCANNED:
                aux_side = _Side(aux, acc, plan.aux_us)
                _run(backend, op, plan.nunits, _aux_rows(plan), aux_side, aux_side, acc)
        _phase(backend, plan, 1, src_ptr, dst.ptr, aux)
    finally:
        if aux is not None:
            backend.free(aux)


@functools.lru_cache(maxsize=512)
def _layout(plan: _Plan, phase: int) -> tuple[dict[str, object], tuple[tuple[int, ...], ...]]:
    """(defines, blocks) of one phase: every (u0, un, i0, n0, i1, n1, i2, n2) block of units and
    of the three row dimensions whose spans in src, dst (phase 1) and aux fit one window.
    BackendError (invalid argument) when even one unit does not."""
    rows, unit, acc = plan.rows, plan.unit, plan.acc
    sizes = {"u": plan.nunits, "r0": rows[0].size, "r1": rows[1].size, "r2": rows[2].size}
    span = min(unit, plan.n) - 1  # axis steps inside one unit
    extents = [
        strided_extent([("u", unit * plan.src_axis)] + [(f"r{i}", r.src) for i, r in enumerate(rows)],
                       plan.src.itemsize, 1 + span * abs(plan.src_axis)),
    ]
    if phase == 1:
        extents.append(strided_extent([("u", unit * plan.dst_axis)] + [(f"r{i}", r.dst) for i, r in enumerate(rows)],
                                      plan.dst.itemsize, 1 + span * abs(plan.dst_axis)))
    aux_rows = [(f"r{i}", r.aux) for i, r in enumerate(rows)]
    if phase == 1 and plan.carry == CARRY_REDUCED:  # every block reads its rows' totals from unit 0
        extents.append(strided_extent(aux_rows, acc.itemsize, 1 + (plan.nunits - 1) * plan.aux_us))
    elif plan.nunits > 1:
        extents.append(strided_extent([("u", plan.aux_us)] + aux_rows, acc.itemsize, 1 + plan.aux_us))
    try:
        blocks = plan_blocks(sizes, extents, plan.limit)
    except ValueError as exc:
        raise invalid_argument(f"scan: one unit does not fit a binding window ({exc})") from None
    # phase 0 writes no dst (its dst slot is a placeholder typed as acc) and reads no carry
    if phase == 0:
        defines = _defines(plan.op, plan.mode, 0, CARRY_NONE, plan.src, acc, acc)
    else:
        defines = _defines(plan.op, plan.mode, 1, plan.carry, plan.src, plan.dst, acc, plan.vec_store,
                           plan.prefetch)
    boxes = tuple(
        (u0, un, i0, n0, i1, n1, i2, n2)
        for (u0, un), (i0, n0), (i1, n1), (i2, n2) in itertools.product(
            block_starts(plan.nunits, blocks["u"]), block_starts(rows[0].size, blocks["r0"]),
            block_starts(rows[1].size, blocks["r1"]), block_starts(rows[2].size, blocks["r2"])))
    return defines, boxes


#: Parameter words of a scan dispatch (scan.wgsl's Params) holding the window index of an
#: operand's first element: src, dst and aux; ``_Step.words`` leaves them 0.
_SRC_WORD = 7
_DST_WORD = 12
_AUX_WORD = 17
_WORDS = struct.Struct("<23I")
_U32 = 0xFFFFFFFF

#: A binding of a ``_Step``: (operand: 0 src, 1 dst, 2 aux, -1 a placeholder of at least
#: ``itemsize`` bytes; element offset of the window's lowest element from the operand's pointer,
#: bytes, itemsize, vector bytes to round the binding up to (0: none), parameter word taking the
#: window index of the lowest element plus ``extra`` (0: none), extra).
_Region = tuple[int, int, int, int, int, int, int]


@dataclass(frozen=True, eq=False)
class _Step:
    """One dispatch of a phase of a plan, pointer-free: the kernel's defines, the parameter
    words (u32 bits; the first-element words ``_SRC_WORD``, ``_DST_WORD``, ``_AUX_WORD`` 0), the
    workgroup count and the src, dst and aux bindings (``_Region``; phase 0 binds aux in the dst
    slot too)."""

    defines: dict[str, object]
    words: tuple[int, ...]
    groups: int
    regions: tuple[_Region, _Region, _Region]


@functools.lru_cache(maxsize=512)
def _steps(plan: _Plan, phase: int) -> tuple[_Step, ...]:
    """The dispatches of one phase of ``plan``, one per block of ``_layout`` (cached: the same
    for any pointers). BackendError (invalid argument) as ``_layout``."""
    defines, boxes = _layout(plan, phase)
    n, unit, rows, acc, aux_us = plan.n, plan.unit, plan.rows, plan.acc, plan.aux_us
    src_strides = [r.src for r in rows]
    dst_strides = [r.dst for r in rows]
    aux_strides = [r.aux for r in rows]
    vector = plan.mode == MODE_VECTOR
    vec_store = phase == 1 and plan.vec_store
    row_words = [*(_u32(s) for s in src_strides), _u32(plan.dst_axis), *(_u32(s) for s in dst_strides)]
    aux_words = [_u32(aux_us), *(_u32(s) for s in aux_strides), plan.head]
    steps = []
    for u0, un, i0, n0, i1, n1, i2, n2 in boxes:
        counts = (n0, n1, n2)
        first_pos = u0 * unit
        length = min(un * unit, n - first_pos)

        def region(operand: int, word: int, itemsize: int, axis: int, strides: Sequence[int], shift: int = 0,
                   vectors: bool = False) -> _Region:
            """The binding of the box's elements of an operand whose position q is element
            q - shift (positions before element 0 are not touched); its word gets the element
            index of position first_pos of the box's row 0. ``vectors``: the binding rounded up
            to whole vectors (it stays inside the buffer: its size and the offset are whole
            vectors)."""
            skip = max(0, shift - first_pos)
            origin = (first_pos + skip - shift) * axis + i0 * strides[0] + i1 * strides[1] + i2 * strides[2]
            dims = [(length - skip, axis)] + [(cnt, s) for cnt, s in zip(counts, strides)]
            lo, hi = strided_span(dims)
            return (operand, origin + lo, (hi - lo + 1) * itemsize, itemsize, 4 * itemsize if vectors else 0,
                    word, -lo - skip * axis)

        src = region(0, _SRC_WORD, plan.src.itemsize, plan.src_axis, src_strides, vectors=vector)
        if phase == 0:
            lo_unit, hi_unit = u0, u0 + un - 1
        else:  # the scan phase reads the carries of units before its own
            lo_unit = 0 if plan.carry == CARRY_REDUCED else max(u0 - 1, 0)
            hi_unit = u0 + un - 2
        if plan.nunits > 1 and hi_unit >= lo_unit:
            origin = lo_unit * aux_us + i0 * aux_strides[0] + i1 * aux_strides[1] + i2 * aux_strides[2]
            dims = [(hi_unit - lo_unit + 1, aux_us)] + [(cnt, s) for cnt, s in zip(counts, aux_strides)]
            lo, hi = strided_span(dims)
            aux = (2, origin + lo, (hi - lo + 1) * acc.itemsize, acc.itemsize, 0, _AUX_WORD,
                   -lo + (u0 - lo_unit) * aux_us)
        else:  # no total is read or written: any binding of at least one acc element
            aux = (-1, 0, 0, acc.itemsize, 0, 0, 0)
        if phase == 1:  # dst's pointer is its element 0, at position head
            dst = region(1, _DST_WORD, plan.dst.itemsize, plan.dst_axis, dst_strides, shift=plan.head,
                         vectors=vec_store)
        else:  # phase 0 writes the totals only, to aux (which always exists then): dst unused
            dst = (-1, 0, 0, acc.itemsize, 0, 0, 0)
        words = (n, un, u0, unit, n0, n1, n2, 0, _u32(plan.src_axis), *row_words[:3], 0, *row_words[3:], 0,
                 *aux_words)
        items = n0 * n1 * n2 * un
        groups = items if plan.mode != MODE_COLUMNS else -(-items // WG)
        steps.append(_Step(defines, words, groups, (src, dst, aux)))
    return tuple(steps)


def _phase(backend: Any, plan: _Plan, phase: int, src_ptr: int, dst_ptr: int, aux: int | None) -> None:
    """Record one phase of ``plan`` (src's position 0 at ``src_ptr``, dst's element 0 at
    ``dst_ptr``, the unit totals at ``aux``) through ``WgpuContext.dispatch``: the steps of
    ``_steps``, their windows checked by ``backend.window``."""
    ctx = backend.context
    ptrs = (src_ptr, dst_ptr, aux)
    records = []
    for step in _steps(plan, phase):
        words = list(step.words)
        bindings: list[Any] = []
        for operand, elem, nbytes, itemsize, vec, word, extra in step.regions:
            if operand < 0:
                bindings.append(_placeholder(backend, itemsize))
                continue
            win = backend.window(ptrs[operand] + elem * itemsize, nbytes, itemsize)
            bindings.append((win.buffer, win.offset, -(-win.size // vec) * vec) if vec else win.binding)
            if word:
                words[word] = (win.first + extra) & _U32
        records.append((words, bindings, ctx.fold_grid(step.groups), step.defines))
    for words, bindings, grid, defines in records:
        ctx.dispatch(KERNEL, words, bindings, grid, defines)


def _placeholder(backend: Any, itemsize: int, *bindings: Any) -> Any:
    """The binding of an operand a dispatch does not touch (aux when no total is read, dst in
    phase 0): the context's spare region of at least ``itemsize`` bytes, which no operand
    overlaps (both are declared written: bound over another written operand, they would be two
    overlapping writable bindings, which Dawn refuses)."""
    return backend.context.spare_region(itemsize)


def _u32(value: int) -> int:
    """The two's-complement u32 bits of a signed element stride."""
    return value & 0xFFFFFFFF
