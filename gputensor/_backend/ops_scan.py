"""Inclusive scans (cumulative sum / product) along one axis of a strided array.

``scan_strided(backend, op, src, src_dtype, shape, src_strides, axis, dst, dst_dtype,
dst_strides)`` writes, for every index, ``dst[..., i, ...] = src[..., 0, ...] op ... op
src[..., i, ...]`` along ``axis``: both operands are addressed through element strides of any
sign (0 allowed for ``src``), so a view (transposed, negative-step, broadcast) is read in place
and the result is stored straight into its destination layout; no copy moves the axis. Values are
converted on load to the accumulation type (``acc_dtype``: float16 accumulates in float32, 8/16-bit
integers in the 32-bit integer of their signedness; integers wrap as in NumPy, and since
wrap-around arithmetic is a ring homomorphism, truncating a wider integer scan gives NumPy's
8/16-bit result bit for bit) and stored once, converted to ``dst_dtype`` (packed 8/16-bit dst types
through atomicAnd/atomicOr on the element's lane). ``src == dst`` with the same layout scans in
place. ``scan(backend, op, ptr, dtype, rows, n, ld)`` is the in-place scan of the rows of a
row-major matrix (the radix sort and stream compaction use it).

Kernel (``_wgsl/scan.wgsl``), reduce-then-scan: every row's axis is cut into *units*. Phase 0
writes each unit's total to an auxiliary array, and phase 1 scans every unit from its carry and
stores each element once: two reads and one write of the data (one read and one write when a row
is a single unit). The carry of a unit (``CARRY_*``) is the scanned total of the unit before --
the totals scanned in between, recursively, by this same procedure -- or, in the vector mode with
at most ``MAX_REDUCED_UNITS`` units per row, the combine of the raw totals before it, which phase
1's workgroup computes itself: a long contiguous row is then two dispatches. Three mappings
(``choose_mode``, then the vector mode wherever the rows mode's src allows it):

* vector mode (the rows mode of a contiguous src axis -- stride 1, row strides multiples of 4 --
  of an unpacked 4- or 8-byte type): src is bound as ``array<vec4<T>>`` and read 16 bytes (32 for
  64-bit types) per load, coalesced; a workgroup of ``VECTOR_WG`` = 256 invocations per unit walks
  it in steps of ``VECTOR_STEP`` = 4096 elements (four vectors per invocation, scanned in
  registers, then a Hillis-Steele scan of the vector totals). Units are whole steps, long enough
  for about ``TARGET_UNITS`` units over all rows (``vector_unit``). A src whose rows start
  ``head`` elements past a vector is read from that vector on, the head skipped; dst is stored
  as vectors too when it is contiguous and aligned like src, element by element (any type,
  any stride) otherwise.
* rows mode (axes whose elements are close together in dst, i.e. the last axis of a contiguous
  result, when src is strided or packed): a workgroup of ``WG`` = 256 invocations per unit of
  ``BLOCK`` = 1024 elements of one row; coalesced loads into workgroup memory, a serial scan of
  4 consecutive elements per invocation, a Hillis-Steele scan of the 256 partials, coalesced
  stores. Phase 0 (totals only) uses 64 invocations loading 16 elements each and a two-barrier
  raking reduction.
* columns mode (short axes, and axes with a large stride such as axis 0 of a C-contiguous
  matrix): one invocation per (row, unit) scanning its unit serially; consecutive invocations take
  neighbouring rows (the row dimension with the smallest dst stride), so each step is a
  coalesced load and store across the invocations. Units are ``chunk_length`` long: a whole row
  when there are enough rows to fill the GPU, shorter otherwise.

NumPy's sequential order is not kept, so float results differ by rounding (blockwise: more
accurate than a serial sum for long rows); the order of every combine depends on the shape,
dtypes and alignment only, so the same input gives the same bits every run.

Planning (``_plan``: mode, units, carries) depends on the structure of a call and, in the vector
mode, on where its operands start mod 4 elements; the dispatches of each phase of a plan, pointer
free, are cached per plan (``_steps``, from ``_layout``'s window blocks and kernel defines). The
hot path: a call with plain arguments (str, int, tuples of ints) finds a ``_Launch`` for its
structure in a per-backend ``PlanCache`` (``scan``'s calls by (op, dtype, rows, n, ld)), holding
per alignment variant the whole call compiled (a ``launch.LaunchProgram``: pipelines, grids,
parameter templates, binding slots relative to the operands); a repeated call checks its
pointers and replays the program (unit totals allocated, windows computed, first-element words
patched, ``WgpuContext.record`` per dispatch). ``_execute`` is the reference path (every window checked, every dispatch through
``WgpuContext.dispatch``): arguments that are not plain, a ``dispatch`` wrapper on the context
(profiler, test spies) and every error take it, so both raise and record the same.

Operands larger than one binding window: the rows (up to three merged row dimensions inside a
dispatch, more are looped over) and the units are split into blocks whose touched spans in src,
dst and aux -- measured from the lowest to the highest offset, so negative strides split like
positive ones -- each fit one window (``layout.plan_blocks``).
"""

from __future__ import annotations

import functools
import itertools
import numbers
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import invalid_argument, unsupported
from .kernels import library_code, snippet
from .launch import LaunchProgram, Region
from .layout import block_starts, merge_dims, plan_blocks, strided_extent, strided_span
from .plan_cache import PlanCache
from .validate import check_distinct, check_dtype, check_int, check_ints, check_strided_pointer
from .elementwise_ops import expression
from .wgsl_types import STORAGE_TYPES, StorageType, convert, literal, storage_type

__all__ = ["DTYPES", "OPS", "RowDim", "accumulator_dtype", "choose_mode", "chunk_length", "merge_rows",
           "rows_program", "scan", "planned_scan", "scan_strided", "settings", "vector_unit"]

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


# ---- validated calls and their launches ---------------------------------------------------------
@dataclass(frozen=True, eq=False)
class _Scan:
    """A validated ``scan_strided`` call, everything but the pointers. ``empty``: a zero-size
    shape (nothing is checked or recorded). Otherwise ``n`` elements along the axis (element
    strides ``src_axis`` and ``dst_axis``) in rows of the ``inner`` row dims (at most three); the
    other row dims are looped over, ``outer`` holding the element offsets of src and dst for
    each of their indices (``((0, 0),)`` when there are none); ``src_dims``/``dst_dims`` the
    operands' (size, stride) dims, for their byte ranges; ``same_layout``: the same strides
    and item size in src and dst (an in-place scan when the pointers are equal too)."""

    op: str
    src_st: StorageType
    dst_st: StorageType
    acc: StorageType
    empty: bool
    n: int = 0
    src_axis: int = 0
    dst_axis: int = 0
    inner: tuple[RowDim, ...] = ()
    outer: tuple[tuple[int, int], ...] = ()
    src_dims: tuple[tuple[int, int], ...] = ()
    dst_dims: tuple[tuple[int, int], ...] = ()
    same_layout: bool = False


def _structure(backend: Any, op: Any, src_dtype: Any, shape: Any, src_strides: Any, axis: Any, dst_dtype: Any,
               dst_strides: Any, acc_dtype: Any) -> _Scan:
    """Validate the pointer-free arguments of ``scan_strided`` (every check it makes before the
    pointers'); BackendError as ``scan_strided`` says."""
    if op not in OPS:
        raise invalid_argument(f"scan op must be one of {sorted(OPS)}, not {op!r}")
    src_st = check_dtype(backend, "src_dtype", str(src_dtype), tuple(STORAGE_TYPES))
    dst_st = check_dtype(backend, "dst_dtype", str(dst_dtype), tuple(d for d in STORAGE_TYPES if d != "bool"))
    acc_name = accumulator_dtype(dst_st.name) if acc_dtype is None else acc_dtype
    acc = check_dtype(backend, "acc_dtype", str(acc_name), DTYPES)
    shape = check_ints("shape", shape, minimum=0)
    ndim = len(shape)
    s_src = check_ints("src_strides", src_strides, ndim)
    s_dst = check_ints("dst_strides", dst_strides, ndim)
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral) or not -ndim <= axis < ndim:
        raise invalid_argument(f"axis {axis!r} is out of range for {ndim} dimensions")
    axis = int(axis) % ndim
    if 0 in shape:
        return _Scan(op, src_st, dst_st, acc, True)
    check_distinct("dst", list(zip(shape, s_dst)))
    others = [d for d in range(ndim) if d != axis]
    rows = merge_rows([shape[d] for d in others], [s_src[d] for d in others], [s_dst[d] for d in others])
    inner, outer = rows[:3], rows[3:]  # more than three row dims: loop over the slowest ones
    offsets = tuple(
        (sum(i * r.src for i, r in zip(index, outer)), sum(i * r.dst for i, r in zip(index, outer)))
        for index in itertools.product(*(range(r.size) for r in outer)))
    return _Scan(op, src_st, dst_st, acc, False, shape[axis], s_src[axis], s_dst[axis], tuple(inner), offsets,
                 tuple(zip(shape, s_src)), tuple(zip(shape, s_dst)),
                 s_src == s_dst and src_st.itemsize == dst_st.itemsize)


def _execute(backend: Any, s: _Scan, src: Any, dst: Any) -> None:
    """Check the pointers of the validated call ``s`` and record it, every window checked and
    every dispatch through ``WgpuContext.dispatch`` (the reference path; ``_Launch`` records the
    same dispatches faster). BackendError as ``scan_strided`` says."""
    if s.empty:
        return
    src_st, dst_st = s.src_st, s.dst_st
    src_range = check_strided_pointer(backend, "src", src, src_st.itemsize, s.src_dims)
    dst_range = check_strided_pointer(backend, "dst", dst, dst_st.itemsize, s.dst_dims)
    in_place = src == dst and s.same_layout
    if (not in_place and src_range[0] is dst_range[0]
            and src_range[1] < dst_range[2] and dst_range[1] < src_range[2]):
        raise invalid_argument("src and dst overlap with different layouts (only an in-place scan "
                               "with the same layout may share memory)")
    for off_src, off_dst in s.outer:
        _run(backend, s.op, s.n, list(s.inner),
             _Side(int(src) + off_src * src_st.itemsize, src_st, s.src_axis),
             _Side(int(dst) + off_dst * dst_st.itemsize, dst_st, s.dst_axis), s.acc)


#: The most dispatches a ``_Launch`` program keeps (calls that make more, e.g. a long loop over
#: outer row dims, take ``_execute`` every time).
MAX_PROGRAM_DISPATCHES = 256


class _Launch:
    """The hot path of one validated structure ``s`` on one backend (made for ``ctx`` and a
    binding window of ``window_bytes``).

    Everything but the pointers is planned once per *variant*: a structure whose level-0 rows
    may take the vector mode depends on where the operands start mod 4 elements (``_aligned``),
    so its programs are kept per (src head, dst head). A program (``launch.LaunchProgram``) is the whole
    call -- every level of the reduce-then-scan, for every outer index -- as dispatches
    (pipelines, grids, parameter words precomputed, windows relative to the operands) and the
    sizes of the aux allocations the levels use.
    Per call: the pointer checks of ``_execute`` (on a failure ``_execute`` itself runs, raising
    its error), the variant, the aux allocations, and per dispatch the windows of its bindings
    (``WebGpuBackend.window`` without its checks, which the range checks made), the patched
    first-element words and ``WgpuContext.record``. A ``dispatch`` wrapper set on the context
    (the profiler's host-time mode, test spies) gets every dispatch through ``_execute``."""

    def __init__(self, s: _Scan, ctx: Any, window_bytes: int) -> None:
        self.s = s
        self.ctx = ctx
        self.window_bytes = window_bytes
        #: variant -> its program, or None when too long to keep (replaced whole: racing
        #: threads just compile equal ones)
        self.programs: dict[tuple[int | None, int | None], LaunchProgram | None] = {}
        self.src_vec = self.dst_vec = 0
        self.src_lo = self.src_bytes = self.dst_lo = self.dst_bytes = 0
        if s.empty:
            return
        if choose_mode(s.n, s.dst_axis, s.inner) == MODE_ROWS:  # (otherwise no level-0 vector mode)
            if _vectorizable(s.src_st, s.src_axis, [r.src for r in s.inner], ctx):
                self.src_vec = 4 * s.src_st.itemsize
            if _vectorizable(s.dst_st, s.dst_axis, [r.dst for r in s.inner], ctx):
                self.dst_vec = 4 * s.dst_st.itemsize
        # the byte ranges of ``check_strided_pointer``: lowest touched byte relative to element 0, length
        lo, hi = strided_span(s.src_dims)
        self.src_lo, self.src_bytes = lo * s.src_st.itemsize, (hi - lo + 1) * s.src_st.itemsize
        lo, hi = strided_span(s.dst_dims)
        self.dst_lo, self.dst_bytes = lo * s.dst_st.itemsize, (hi - lo + 1) * s.dst_st.itemsize

    def launch(self, backend: Any, src: Any, dst: Any) -> None:
        """Record the scan of ``src`` into ``dst`` (pointers of element [0, ...]); BackendError
        as ``scan_strided`` says, before anything is recorded."""
        s = self.s
        if s.empty:
            return
        ctx = backend._ctx
        if (ctx is not self.ctx or ctx.__dict__.get("dispatch") is not None or type(src) is not int
                or type(dst) is not int):
            _execute(backend, s, src, dst)
            return
        # the checks of ``_execute`` (inline: this is the hot path)
        src_alloc, src_lo = backend.resolve(src + self.src_lo, self.src_bytes)
        if src_lo % s.src_st.itemsize:
            _execute(backend, s, src, dst)  # raises
            return
        dst_alloc, dst_lo = backend.resolve(dst + self.dst_lo, self.dst_bytes)
        if dst_lo % s.dst_st.itemsize or (src_alloc is dst_alloc and not (src == dst and s.same_layout)
                                          and src_lo < dst_lo + self.dst_bytes and dst_lo < src_lo + self.src_bytes):
            _execute(backend, s, src, dst)  # raises
            return
        self.run(backend, ctx, src, src_alloc, src_lo - self.src_lo, dst, dst_alloc, dst_lo - self.dst_lo)

    def run(self, backend: Any, ctx: Any, src: int, src_alloc: Any, src_off: int, dst: int, dst_alloc: Any,
            dst_off: int) -> None:
        """``launch`` for checked pointers: ``src`` and ``dst`` (ints) with their allocations and
        the byte offsets of their element [0, ...] in them; ``ctx`` is ``self.ctx`` and has no
        ``dispatch`` wrapper."""
        s = self.s
        ssz, dsz = s.src_st.itemsize, s.dst_st.itemsize
        src_head = dst_head = None  # the variant: ``_vector_layout``'s inputs
        src_buffer, dst_buffer = src_alloc.buffer, dst_alloc.buffer
        src_size, dst_size = src_buffer.size, dst_buffer.size
        vec = self.src_vec
        if vec and not src_size % vec:
            src_head = src_off // ssz % 4
            vec = self.dst_vec
            if vec and not dst_size % vec:
                dst_head = dst_off // dsz % 4
        variant = (src_head, dst_head)
        program = self.programs.get(variant, False)
        if program is False or (program is not None and program.max_workgroups != ctx.max_workgroups_per_dim):
            program = self.programs[variant] = self._compile(ctx, src_head, dst_head)
        if program is None or not program.run(
                backend, ctx, [(src_buffer, src_size, src_alloc.nbytes, src_off, src),
                               (dst_buffer, dst_size, dst_alloc.nbytes, dst_off, dst)], _placeholder):
            _execute(backend, s, src, dst)

    def _compile(self, ctx: Any, src_head: int | None, dst_head: int | None, *,
                 cap: bool = True) -> LaunchProgram | None:
        """The program of the variant (``src_head``, ``dst_head``: ``_aligned`` of src and dst at
        element [0, ...], None where they cannot be bound as vectors; ``cap``: None past
        ``MAX_PROGRAM_DISPATCHES`` dispatches), as ``programs`` holds
        it; None when it has more than ``MAX_PROGRAM_DISPATCHES`` dispatches. The same levels,
        plans and steps as ``_execute``'s ``_run`` for such pointers, in the same order."""
        s = self.s
        records: list[tuple[Any, ...]] = []
        aux: list[list[int]] = []
        ssz, dsz = s.src_st.itemsize, s.dst_st.itemsize
        for off_src, off_dst in s.outer:
            vector = None
            if src_head is not None:
                head = (src_head + off_src) % 4
                vector = _Vector(head, dst_head is not None and (dst_head + off_dst) % 4 == head)
            self._level(ctx, records, aux, s.n, list(s.inner), (0, off_src * ssz, s.src_st, s.src_axis),
                        (1, off_dst * dsz, s.dst_st, s.dst_axis), vector)
            if cap and len(records) > MAX_PROGRAM_DISPATCHES:
                return None
        return LaunchProgram.compile(KERNEL, _WORDS, ctx, records, aux)

    def _level(self, ctx: Any, records: list[tuple[Any, ...]], aux: list[list[int]], n: int, rows: list[RowDim],
               src: tuple[int, int, StorageType, int], dst: tuple[int, int, StorageType, int],
               vector: _Vector | None) -> None:
        """Append the dispatches of ``_run`` for one level (``src``/``dst``: base, byte offset of
        element 0 from it, storage type, axis stride; ``vector``: ``_vector_layout``) to
        ``records``, its aux allocation (and, recursively, those of the levels below) to ``aux``."""
        s = self.s
        acc = s.acc
        src_base, src_rel, src_st, src_axis = src
        dst_base, dst_rel, dst_st, dst_axis = dst
        plan = _plan(s.op, n, rows, _Side(0, src_st, src_axis), _Side(0, dst_st, dst_axis), acc, vector,
                     self.window_bytes)
        refs = [(src_base, src_rel - plan.head * src_st.itemsize), (dst_base, dst_rel), (-1, 0)]
        if plan.nunits > 1:
            index = 2 + len(aux)
            aux.append([plan.total * plan.nunits * acc.itemsize, 0])
            refs[2] = (index, 0)
            self._emit(ctx, records, plan, 0, refs)
            if plan.carry == CARRY_SCANNED:
                aux_rows = _aux_rows(plan)
                nested = None
                if _vectorizable(acc, plan.aux_us, [r.src for r in aux_rows], ctx):
                    # at element 0 of its allocation: _aligned is 0 if the buffer allows vectors
                    # (the pool's always do; ``launch`` checks it)
                    aux[index - 2][1] = 4 * acc.itemsize
                    nested = _Vector(0, True)
                self._level(ctx, records, aux, plan.nunits, aux_rows, (index, 0, acc, plan.aux_us),
                            (index, 0, acc, plan.aux_us), nested)
        self._emit(ctx, records, plan, 1, refs)

    @staticmethod
    def _emit(ctx: Any, records: list[tuple[Any, ...]], plan: _Plan, phase: int, refs: Sequence[tuple[int, int]]) -> None:
        """Append the dispatches of ``_phase`` (its ``_steps``) with their operands' (src, dst,
        aux) bases and byte offsets ``refs``."""
        for step in _steps(plan, phase):
            regions = []
            for operand, elem, nbytes, itemsize, vec, word, extra in step.regions:
                if operand < 0:
                    regions.append(Region(-1, 0, 0, itemsize, 0, 0, 0))
                else:
                    base, rel = refs[operand]
                    regions.append(Region(base, rel + elem * itemsize, nbytes, itemsize, vec, word, extra))
            records.append((ctx.pipeline(KERNEL, 3, step.defines), step.defines, step.words,
                            ctx.fold_grid(step.groups), tuple(regions)))


#: Launches kept per backend, by the plain arguments of a call (``_plans(backend)``: its dict).
_PLAN_CACHE = PlanCache(512)
_plans = _PLAN_CACHE.of
_keep_plan = _PLAN_CACHE.keep


def _tunables() -> tuple[Any, ...]:
    """The module settings planning and ``_Launch`` read (part of every cache key, so that
    changing one -- tests do -- never reuses a launch made under another value)."""
    return (WG, BLOCK, VECTOR_STEP, VECTOR_PREFETCH, TARGET_UNITS, MAX_REDUCED_UNITS, SHORT_AXIS, NEAR_STRIDE,
            TARGET_INVOCATIONS, MAX_SERIAL, MIN_CHUNK, MAX_PROGRAM_DISPATCHES)


def _plain_ints(*seqs: tuple[Any, ...]) -> bool:
    """Whether every item of ``seqs`` is exactly an int (so equal cache keys mean identical
    arguments: no bools standing in for ints, no NumPy scalars)."""
    for seq in seqs:
        for v in seq:
            if type(v) is not int:
                return False
    return True


# ---- operations ----------------------------------------------------------------------------------
def scan_strided(backend: Any, op: str, src: int, src_dtype: str, shape: Sequence[int],
                 src_strides: Sequence[int], axis: int, dst: int, dst_dtype: str,
                 dst_strides: Sequence[int], *, acc_dtype: str | None = None) -> None:
    """Inclusive scan of ``src`` along ``axis`` into ``dst`` (both of ``shape``).

    ``src`` and ``dst`` point at element [0, ..., 0]; strides are in elements, any sign; src's may
    be 0 (broadcast), dst's must keep its elements distinct. ``op``: 'sum' or 'prod'. ``src_dtype``
    any dtype, ``dst_dtype`` any non-bool dtype; values are converted to ``acc_dtype`` (one of
    :data:`DTYPES`; default :func:`accumulator_dtype` of ``dst_dtype``) on load and to
    ``dst_dtype`` on store. ``src`` and ``dst`` may be the same memory only with the same layout
    and item size (an in-place scan). Zero-size shapes do nothing (after validation).

    A call whose arguments are plain (str, int, tuples of ints) finds its launch (``_Launch``)
    in a per-backend cache after the first: only the pointers are checked and the dispatches
    recorded.

    Raises BackendError: invalid argument for a bad op, dtype, shape, strides or axis, dst strides
    that alias, overlapping src and dst of different layouts, or a pointer whose touched range is
    unknown, freed, misaligned or past its allocation's end; unsupported when the adapter lacks a
    dtype's feature. Nothing is recorded unless every check passes.
    """
    _scan_strided(backend, op, src, src_dtype, shape, src_strides, axis, dst, dst_dtype, dst_strides, acc_dtype)


def _scan_strided(backend: Any, op: Any, src: Any, src_dtype: Any, shape: Any, src_strides: Any, axis: Any,
                  dst: Any, dst_dtype: Any, dst_strides: Any, acc_dtype: Any) -> _Launch | None:
    """``scan_strided``; returns the cached launch it used (None for arguments that are not
    plain: those are validated and recorded afresh each time)."""
    key = None
    if (type(shape) is tuple and type(src_strides) is tuple and type(dst_strides) is tuple
            and type(op) is str and type(src_dtype) is str and type(dst_dtype) is str and type(axis) is int
            and (acc_dtype is None or type(acc_dtype) is str) and getattr(backend, "_ctx", None) is not None
            and _plain_ints(shape, src_strides, dst_strides)):
        key = ("strided", op, src_dtype, dst_dtype, acc_dtype, shape, src_strides, axis, dst_strides,
               backend.max_window_bytes(), _tunables())
        launch = _plans(backend).get(key)
        if launch is not None:
            launch.launch(backend, src, dst)
            return launch
    s = _structure(backend, op, src_dtype, shape, src_strides, axis, dst_dtype, dst_strides, acc_dtype)
    if key is None:
        _execute(backend, s, src, dst)
        return None
    launch = _Launch(s, backend.context, key[-2])
    _keep_plan(_plans(backend), key, launch)  # (only a valid structure is cached)
    launch.launch(backend, src, dst)
    return launch


class _KeptScan:
    """A ``scan_strided`` launch handed to a caller that replays it (``planned_scan``): valid
    while the backend's context, binding window and the module's tunables are those it was
    planned under (``valid_on``); ``launch(backend, src, dst)`` checks the pointers and records
    it, as ``scan_strided`` would."""

    __slots__ = ("launch", "window_bytes", "tunables", "_ctx")

    def __init__(self, launch: _Launch, window_bytes: int, tunables: tuple[Any, ...]) -> None:
        self.launch = launch.launch
        self.window_bytes = window_bytes
        self.tunables = tunables
        self._ctx = launch.ctx

    def valid_on(self, backend: Any) -> bool:
        """Whether the launch holds on ``backend`` now."""
        return (backend._ctx is self._ctx and backend.max_window_bytes() == self.window_bytes
                and self.tunables == _tunables())


def planned_scan(backend: Any, op: str, src_dtype: str, shape: tuple[int, ...], src_strides: tuple[int, ...],
                 axis: int, dst_dtype: str, dst_strides: tuple[int, ...], *,
                 acc_dtype: str | None = None) -> _KeptScan | None:
    """The launch an earlier ``scan_strided`` call with these (plain) arguments kept on
    ``backend``, valid there now; None when there is none."""
    if getattr(backend, "_ctx", None) is None or not _plain_ints(shape, src_strides, dst_strides):
        return None
    window, tunables = backend.max_window_bytes(), _tunables()
    key = ("strided", op, src_dtype, dst_dtype, acc_dtype, shape, src_strides, axis, dst_strides, window, tunables)
    launch = _plans(backend).get(key)
    if launch is None or launch.s.empty or launch.ctx is not backend._ctx:
        return None
    return _KeptScan(launch, window, tunables)


def scan(backend: Any, op: str, ptr: int, dtype: str, rows: int, n: int, ld: int | None = None) -> None:
    """Replace each row ``x[r, :n]`` (at ``ptr + r*ld*itemsize``) by its inclusive scan, in place.

    ``op`` is 'sum' or 'prod'; ``dtype`` one of :data:`DTYPES`; ``ld`` (row stride in elements,
    default ``n``) must be >= n. A call with plain (str, int) arguments finds its launch in a
    per-backend cache after the first (see ``scan_strided``). Raises BackendError: invalid
    argument for a bad op, dtype, size, leading dimension or pointer range (checked before
    anything is recorded); unsupported when the adapter lacks the dtype's feature.
    """
    key = None
    if (type(op) is str and type(dtype) is str and type(rows) is int and type(n) is int
            and (ld is None or type(ld) is int) and getattr(backend, "_ctx", None) is not None):
        key = ("rows", op, dtype, rows, n, ld, backend.max_window_bytes(), _tunables())
        entry = _plans(backend).get(key)
        if entry is not None:  # (launch, span, itemsize) of a valid call; no launch: nothing to do
            launch, span, itemsize = entry
            if launch is None:
                return
            alloc, offset = backend.resolve(ptr, span)
            if offset % itemsize:
                raise invalid_argument(f"pointer offset {offset} is not a multiple of the item size {itemsize}")
            ctx = backend._ctx
            if ctx is launch.ctx and type(ptr) is int and ctx.__dict__.get("dispatch") is None:
                # ``launch``'s checks are these: the same range (in place, from element 0)
                launch.run(backend, ctx, ptr, alloc, offset, ptr, alloc, offset)
            else:
                launch.launch(backend, ptr, ptr)
            return
    if op not in OPS:
        raise invalid_argument(f"scan op must be one of {sorted(OPS)}, not {op!r}")
    if dtype not in DTYPES:
        raise invalid_argument(f"scan dtype must be one of {DTYPES}, not {dtype!r}")
    st = storage_type(dtype)
    if not backend.supports(st.feature):
        raise unsupported(f"{dtype} needs the adapter feature {st.feature!r}, which this adapter lacks", st.feature)
    rows = check_int("rows", rows, 0)
    n = check_int("n", n, 0)
    ld = n if ld is None else check_int("ld", ld, 0)
    if ld < n:
        raise invalid_argument(f"ld = {ld} must be >= n = {n}")
    if rows == 0 or n == 0:
        if key is not None:
            _keep_plan(_plans(backend), key, (None, 0, 0))
        return
    span = ((rows - 1) * ld + n) * st.itemsize
    _, offset = backend.resolve(ptr, span)
    if offset % st.itemsize:
        raise invalid_argument(f"pointer offset {offset} is not a multiple of the item size {st.itemsize}")
    launch = _scan_strided(backend, op, ptr, dtype, (rows, n), (ld, 1), 1, ptr, dtype, (ld, 1), dtype)
    if key is not None and launch is not None:
        _keep_plan(_plans(backend), key, (launch, span, st.itemsize))


def rows_program(backend: Any, op: str, dtype: str, rows: int, n: int, vector: bool) -> LaunchProgram:
    """The program of ``scan(backend, op, ptr, dtype, rows, n)`` for a caller that makes it part
    of a program of its own (the radix sort's histogram scans): bases 0 (src) and 1 (dst) both
    the rows' element 0, its scratch the bases after them, in order. With ``vector``, the
    rows' element 0 must be a whole vector (4 elements) from its buffer's start and the buffer's
    size a multiple of a vector (the memory pool's blocks are); without, no vector loads.
    Arguments as ``scan``'s (unchecked: the caller's are valid)."""
    s = _structure(backend, op, dtype, (rows, n), (n, 1), 1, dtype, (n, 1), dtype)
    launch = _Launch(s, backend.context, backend.max_window_bytes())
    program = launch._compile(backend.context, 0 if vector and launch.src_vec else None,
                              0 if vector and launch.dst_vec else None, cap=False)
    assert program is not None
    return program


def settings() -> tuple[Any, ...]:
    """The module settings a scan's plan depends on (part of the key of a program that holds a
    ``rows_program``)."""
    return _tunables()
