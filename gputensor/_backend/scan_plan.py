"""Planning of the inclusive scans (``ops_scan``): the kernel's sizes and the planner's
tunables, the row dims of a call (``RowDim``, ``merge_rows``), the mapping and unit lengths
(``choose_mode``, ``chunk_length``, ``vector_unit``, the vector layout), the kernel's defines per
mode, phase and carry (``_defines``) and the plan of one level (``_Plan``, ``_plan``). Pure
host-side arithmetic: nothing here binds or records.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import invalid_argument
from .kernels import library_code, snippet
from .layout import merge_dims
from .elementwise_ops import expression
from .wgsl_types import STORAGE_TYPES, StorageType, convert, literal

__all__ = ["DTYPES", "OPS", "RowDim", "accumulator_dtype", "choose_mode", "chunk_length", "merge_rows", "vector_unit"]

KERNEL = "scan"
WG = 256
ITEMS = 4
#: Elements per unit in the rows mode.
BLOCK = WG * ITEMS
#: Rows mode, phase 0 (unit totals): a workgroup of REDUCE_WG invocations loads REDUCE_ITEMS
#: elements each (BLOCK in all: the same units) and combines the partials with a raking reduction
#: of RAKE x RAKE (RAKE**2 == REDUCE_WG): many independent loads per invocation, two barriers.
REDUCE_WG = 64
REDUCE_ITEMS = BLOCK // REDUCE_WG
RAKE = 8

#: Vector mode: invocations per workgroup (RAKE_V**2, RAKE_V a multiple of 4), and positions per
#: step of a workgroup (four vectors of four elements per invocation); units are whole steps.
VECTOR_WG = 256
RAKE_V = 16
VECTOR_STEP = VECTOR_WG * 16
#: Vector mode, scan phase: issue the loads of a workgroup's next step before the workgroup scan
#: of the current one (more bytes in flight per workgroup, more registers per invocation).
VECTOR_PREFETCH = False
#: Vector mode: units wanted over all the rows of one scan (a few waves of workgroups on a large
#: GPU); fewer, longer units make the carries cheaper, more of them fill the GPU better.
TARGET_UNITS = 2048
#: Vector mode: rows of at most this many units take each unit's carry by reducing the raw unit
#: totals before it (every workgroup of the scan phase reads at most this many totals); longer
#: rows scan the totals in a dispatch of their own.
MAX_REDUCED_UNITS = 4096

#: Scan operators: name -> (WGSL combine expression, identity, the op of the elementwise table
#: it is). The sum's identity is -0.0 so that combining it is exact for every float
#: (-0.0 + x == x, -0.0 included); integers read 0. int64/uint64 emulated as two 32-bit words
#: combine with the elementwise op's form (the helpers of ``_wgsl/int64_emul.wgsl``), in
#: vectors that are structs of four values (no WGSL vector holds them).
OPS = {"sum": ("a + b", -0.0, "add"), "prod": ("a * b", 1, "multiply")}

#: Accumulation dtypes (stored unpacked); also the dtypes of the in-place ``scan``.
DTYPES = ("float32", "float64", "int32", "uint32", "int64", "uint64")

#: Modes of scan.wgsl.
MODE_ROWS = 0
MODE_COLUMNS = 1
MODE_VECTOR = 2

#: Where the scan phase takes a unit's carry (scan.wgsl's CARRY): rows of one unit need none; the
#: scanned total of the unit before; the reduction of the raw totals before (vector mode).
CARRY_NONE = 0
CARRY_SCANNED = 1
CARRY_REDUCED = 2

#: Axes at most this long always use the columns mode (a 1024-element workgroup per row would idle).
SHORT_AXIS = 64
#: Rows mode also for axes whose dst stride is at most this many elements (a warp's accesses
#: then stay within a few cache lines even when another dimension is the contiguous one).
NEAR_STRIDE = 4
#: Columns mode: invocations wanted in flight; rows are cut into units until there are this many.
TARGET_INVOCATIONS = 1 << 17
#: Columns mode: rows at most this long are one unit (no auxiliary pass for short rows).
MAX_SERIAL = 256
#: Columns mode: shortest unit when rows are cut.
MIN_CHUNK = 64



def accumulator_dtype(dst_dtype: str) -> str:
    """The dtype a scan whose result has ``dst_dtype`` accumulates in (float16 -> float32, 8/16-bit
    integers -> the 32-bit integer of the same signedness, others themselves). BackendError
    (invalid argument) for an unknown dtype."""
    try:
        return STORAGE_TYPES[str(dst_dtype)].accumulator
    except KeyError:
        raise invalid_argument(f"no scan accumulator for dtype {dst_dtype!r}") from None


# ---- planning (pure) ---------------------------------------------------------------------------
@dataclass(frozen=True)
class RowDim:
    """One (merged) row dimension: its size and element strides in src, dst and aux."""

    size: int
    src: int
    dst: int
    aux: int = 0


def merge_rows(sizes: Sequence[int], src: Sequence[int], dst: Sequence[int]) -> list[RowDim]:
    """The row dimensions (every dimension but the axis, in their order) with size-1 dimensions
    dropped and neighbours merged where both operands allow it (``stride[i] == size[i+1] *
    stride[i+1]``), then sorted by |dst stride| ascending (the first is the fastest)."""
    if all(n == 1 for n in sizes):
        return []
    merged, (s_src, s_dst) = merge_dims(sizes, [src, dst])
    return sorted((RowDim(n, s, d) for n, s, d in zip(merged, s_src, s_dst)), key=lambda r: abs(r.dst))


def choose_mode(n: int, dst_axis_stride: int, rows: Sequence[RowDim]) -> int:
    """MODE_ROWS or MODE_COLUMNS for an axis of length ``n`` (see the module docstring)."""
    if not rows:
        return MODE_ROWS
    if n <= SHORT_AXIS:
        return MODE_COLUMNS
    step = abs(dst_axis_stride)
    if step <= NEAR_STRIDE or step <= min(abs(r.dst) for r in rows):
        return MODE_ROWS
    return MODE_COLUMNS


def chunk_length(n: int, total_rows: int) -> int:
    """Columns mode: the unit length for ``total_rows`` rows of length ``n``: the whole row when
    it is short or there are enough rows, else short enough for ``TARGET_INVOCATIONS`` units."""
    if n <= MAX_SERIAL or total_rows >= TARGET_INVOCATIONS:
        return max(n, 1)
    return max(MIN_CHUNK, -(-n * total_rows // TARGET_INVOCATIONS))


# ---- kernel specialisation ---------------------------------------------------------------------
#: Element i of an operand bound as array<vec4<T>>.
_VEC_ELEMENT = "{buf}[(i) >> 2u][(i) & 3u]"
_LANES = "xyzw"


@functools.lru_cache(maxsize=256)
def _defines(op: str, mode: int, phase: int, carry: int, src: StorageType, dst: StorageType,
             acc: StorageType, vec_store: bool = False, prefetch: bool = False) -> dict[str, object]:
    """The placeholder values of scan.wgsl (cached: treat as read-only). In the vector mode src
    is bound as vectors (and dst too when ``vec_store``); ``dst`` is ``acc`` in PHASE 0 (the slot
    is bound to aux there)."""
    expr, ident, elementwise = OPS[op]
    vector = mode == MODE_VECTOR
    vec_decl, combine4, splat = snippet("scan/vec_alias"), expr, snippet("scan/splat4_vector")
    if acc.emulated:
        expr = expression(elementwise, acc.compute).replace("x0", "a").replace("x1", "b")
        vec_decl, combine4, splat = snippet("scan/vec_struct"), snippet("scan/combine4"), snippet("scan/splat4")
    value = convert("v", acc.compute, dst.compute)
    if dst.packed:
        lane = 32 // dst.lanes
        store = snippet("scan/store_lane", {"LANES": dst.lanes, "BITS": lane, "MASK": (1 << lane) - 1,
                                            "LANE_BITS": dst.bits_expr(value)})
        dst_array = "atomic<u32>"
    elif vec_store:
        store = snippet("scan/store_vec_element", {"VALUE": value})
        dst_array = f"vec4<{dst.array}>"
    else:
        store = snippet("scan/store", {"VALUE": value})
        dst_array = dst.array
    if vector:
        src_array = f"vec4<{src.array}>"
        load = convert(_VEC_ELEMENT.format(buf="src"), src.compute, acc.compute)
        if src.compute == acc.compute:
            load_vec = snippet("scan/load_vec")
        else:
            load_vec = snippet("scan/load_vec_convert", {
                "ACC": acc.compute, **{c.upper(): convert(f"w.{c}", src.compute, acc.compute) for c in _LANES}})
    else:
        src_array = src.array
        load = convert(src.load_expr("src", "i"), src.compute, acc.compute)
        load_vec = snippet("scan/load_vec_identity")
    store_vec = ""
    if vec_store:
        if dst.compute == acc.compute:
            store_vec = snippet("scan/store_vec")
        else:
            store_vec = snippet("scan/store_vec_convert", {
                "DST": dst.array, **{c.upper(): convert(f"v.{c}", acc.compute, dst.compute) for c in _LANES}})
    wg, items, rake = WG, ITEMS, RAKE
    if vector:
        wg, items, rake = VECTOR_WG, VECTOR_STEP // VECTOR_WG, RAKE_V
    elif mode == MODE_ROWS and phase == 0:
        wg, items = REDUCE_WG, REDUCE_ITEMS
    return {
        "ACC": acc.compute,
        "MODE": mode,
        "PHASE": phase,
        "CARRY": carry,
        "VEC_STORE": "true" if vec_store else "false",
        "PREFETCH": "true" if prefetch else "false",
        "WG": wg,
        "ITEMS": items,
        "RAKE": rake,
        "TILE": BLOCK if mode == MODE_ROWS and phase == 1 else 1,
        "PART": 1 if mode == MODE_COLUMNS else wg,
        "VPART": 2 * wg if vector and phase == 1 else 1,
        "SRC_ARRAY": src_array,
        "DST_ARRAY": dst_array,
        "IDENTITY": literal(ident, acc.compute),
        "COMBINE": expr,
        "COMBINE4": combine4,
        "VEC_DECL": vec_decl,
        "SPLAT4": splat,
        "LOAD_SRC": load,
        "STORE_DST": store,
        "LOAD_VEC": load_vec,
        "STORE_VEC": store_vec,
        "HELPERS": library_code(load + "\n" + store),
    }


# ---- the engine ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Side:
    """One operand of a scan: pointer of its element [0, ...], storage type, axis stride."""

    ptr: int
    st: StorageType
    axis: int


@dataclass(frozen=True)
class _Vector:
    """The vector mode's layout of one scan: ``head`` positions shifted in front of every row (src
    rows then start 4-element aligned) and whether dst is stored as vectors too."""

    head: int
    store: bool


def _vectorizable(st: StorageType, axis: int, rows: Sequence[int], ctx: Any) -> bool:
    """Whether an operand of type ``st``, axis stride ``axis`` and row strides ``rows`` may be
    bound as vectors wherever its allocation lets it (see ``_aligned``): an unpacked type, axis
    stride 1, row strides multiples of 4, and the context's binding offsets whole vectors."""
    return (not st.packed and not st.emulated and axis == 1 and not any(s % 4 for s in rows)
            and not ctx.storage_offset_alignment % (4 * st.itemsize))


def _aligned(backend: Any, side: _Side, rows: Sequence[int]) -> int | None:
    """The element offset (mod 4) of ``side``'s element [0, ...] if it can be bound as vectors:
    ``_vectorizable``, and bindings that can be rounded up to whole vectors (the buffer's size a
    multiple of a vector); None otherwise."""
    st = side.st
    if not _vectorizable(st, side.axis, rows, backend.context):
        return None
    alloc, offset = backend.resolve(side.ptr, 0)
    if alloc.buffer.size % (4 * st.itemsize):
        return None
    return offset // st.itemsize % 4


def _vector_layout(backend: Any, rows: Sequence[RowDim], src: _Side, dst: _Side) -> _Vector | None:
    """The vector mode's layout for a rows-mode scan, or None when src cannot be read as vectors."""
    head = _aligned(backend, src, [r.src for r in rows])
    if head is None:
        return None
    dst_head = _aligned(backend, dst, [r.dst for r in rows])
    return _Vector(head, dst_head == head)


def vector_unit(n: int, total_rows: int) -> int:
    """Vector mode: the unit length for ``total_rows`` rows of ``n`` positions: whole steps, long
    enough that all the rows together have about ``TARGET_UNITS`` units (one per row when the
    rows are many), and no longer than the row rounded up to a step."""
    want = min(-(-n * total_rows // TARGET_UNITS), n)
    return max(1, -(-want // VECTOR_STEP)) * VECTOR_STEP


@dataclass(frozen=True)
class _Plan:
    """One level of a scan, everything but the pointers: ``n`` positions per row (the elements,
    plus the vector mode's ``head``), cut into ``nunits`` units of ``unit``; ``rows`` (three, with
    their aux strides) hold ``total`` rows; aux holds ``total * nunits`` unit totals (none when
    ``nunits == 1``), ``aux_us`` apart along a row; ``prefetch``: VECTOR_PREFETCH in the vector
    mode. Hashable: ``_layout`` and ``_steps`` cache by it."""

    op: str
    mode: int
    carry: int
    n: int
    unit: int
    nunits: int
    rows: tuple[RowDim, ...]
    total: int
    src: StorageType
    src_axis: int
    dst: StorageType
    dst_axis: int
    acc: StorageType
    aux_us: int
    head: int
    vec_store: bool
    prefetch: bool
    limit: int


def _plan(op: str, n: int, rows: Sequence[RowDim], src: _Side, dst: _Side, acc: StorageType,
          vector: _Vector | None, window_bytes: int) -> _Plan:
    """Mode, units and carries of one level (see the module docstring); ``vector`` is the
    vector mode's layout where src allows it, ``window_bytes`` the largest window."""
    total = 1
    for r in rows:
        total *= r.size
    mode = choose_mode(n, dst.axis, rows)
    head, vec_store, limit = 0, False, window_bytes
    if mode == MODE_ROWS and vector is not None and not acc.emulated:  # (no vec4 of structs)
        # positions q = element + head, so that src's rows start at a vector
        mode, head, vec_store = MODE_VECTOR, vector.head, vector.store
        limit -= 4 * max(src.st.itemsize, dst.st.itemsize)  # bindings round up to whole vectors
        unit = vector_unit(n + head, total)
    else:
        unit = BLOCK if mode == MODE_ROWS else chunk_length(n, total)
    longest = _longest_unit(limit, src, dst)
    if min(unit, n + head) > longest:  # a unit would not fit one window: shorter units
        if mode == MODE_VECTOR and longest >= 4:
            unit = longest // 4 * 4
        else:
            mode, unit, head, vec_store, limit = MODE_COLUMNS, longest, 0, False, window_bytes
    n += head
    nunits = -(-n // unit)
    carry, aux_us = CARRY_NONE, 0
    rows = list(rows) + [RowDim(1, 0, 0)] * (3 - len(rows))
    if nunits > 1:
        reduced = mode == MODE_VECTOR and nunits <= MAX_REDUCED_UNITS and nunits * acc.itemsize <= limit
        carry = CARRY_REDUCED if reduced else CARRY_SCANNED
        # aux index of (row R (r0 fastest), unit U): rows modes R*nunits + U, columns U*total + R
        row_step = 1 if mode == MODE_COLUMNS else nunits
        aux_us = total if mode == MODE_COLUMNS else 1
        strides, step = [], row_step
        for r in rows:
            strides.append(step)
            step *= r.size
        rows = [RowDim(r.size, r.src, r.dst, s) for r, s in zip(rows, strides)]
    return _Plan(op, mode, carry, n, unit, nunits, tuple(rows), total, src.st, src.axis, dst.st,
                 dst.axis, acc, aux_us, head, vec_store, mode == MODE_VECTOR and VECTOR_PREFETCH, limit)


def _aux_rows(plan: _Plan) -> list[RowDim]:
    """The row dims of the scan of ``plan``'s unit totals (its CARRY_SCANNED level below): the
    ``plan.total`` rows of ``plan.nunits`` totals, ``plan.aux_us`` apart along a row."""
    total, nunits = plan.total, plan.nunits
    if total == 1:
        return []
    return [RowDim(total, 1, 1)] if plan.mode == MODE_COLUMNS else [RowDim(total, nunits, nunits)]


def _longest_unit(limit: int, src: _Side, dst: _Side) -> int:
    """The most axis elements of one row that fit ``limit`` bytes in both src and dst."""
    longest = []
    for side in (src, dst):
        elems = limit // side.st.itemsize
        longest.append(elems if side.axis == 0 else (elems - 1) // abs(side.axis) + 1)
    return max(1, min(longest))
