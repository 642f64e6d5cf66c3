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

Planning (``_plan``: mode, units, carries) is redone per call, as it depends on the pointers'
alignment; the window blocks and kernel defines of each phase are cached per plan (``_layout``).

Operands larger than one binding window: the rows (up to three merged row dimensions inside a
dispatch, more are looped over) and the units are split into blocks whose touched spans in src,
dst and aux -- measured from the lowest to the highest offset, so negative strides split like
positive ones -- each fit one window (``ops_gemm.plan_blocks``).
"""

from __future__ import annotations

import functools
import itertools
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import invalid_argument, unsupported
from .kernels import library_code
from .ops_gemm import Extent, block_starts, check_distinct, plan_blocks, strided_span
from .wgsl_types import STORAGE_TYPES, StorageType, convert, literal, storage_type

__all__ = ["DTYPES", "OPS", "RowDim", "accumulator_dtype", "choose_mode", "chunk_length", "merge_rows", "scan",
           "scan_strided", "vector_unit"]

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

#: Scan operators: name -> (WGSL combine expression, identity). The sum's identity is -0.0 so
#: that combining it is exact for every float (-0.0 + x == x, -0.0 included); integers read 0.
OPS = {"sum": ("a + b", -0.0), "prod": ("a * b", 1)}

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

_ACCUMULATOR_OF = {
    "bool": "uint32", "int8": "int32", "int16": "int32", "int32": "int32", "int64": "int64",
    "uint8": "uint32", "uint16": "uint32", "uint32": "uint32", "uint64": "uint64",
    "float16": "float32", "float32": "float32", "float64": "float64",
}


def accumulator_dtype(dst_dtype: str) -> str:
    """The dtype a scan whose result has ``dst_dtype`` accumulates in (float16 -> float32, 8/16-bit
    integers -> the 32-bit integer of the same signedness, others themselves). BackendError
    (invalid argument) for an unknown dtype."""
    try:
        return _ACCUMULATOR_OF[str(dst_dtype)]
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
    dims: list[RowDim] = []
    for n, s, d in zip(sizes, src, dst):
        if n == 1:
            continue
        if dims and dims[-1].src == n * s and dims[-1].dst == n * d:
            dims[-1] = RowDim(dims[-1].size * n, s, d)
        else:
            dims.append(RowDim(n, s, d))
    return sorted(dims, key=lambda r: abs(r.dst))


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


def _extent(itemsize: int, base: int, terms: Sequence[tuple[str, int]]) -> Extent:
    """A byte extent: ``base`` elements always, plus (block - 1) * |stride| per term."""
    ordered = sorted(((dim, abs(s) * itemsize) for dim, s in terms if s), key=lambda t: -t[1])
    return Extent(base * itemsize, tuple(ordered))


# ---- validation --------------------------------------------------------------------------------
def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise invalid_argument(f"{name} must be an int >= {minimum}, got {value!r}")
    return int(value)


def _check_ints(name: str, values: Any, count: int | None = None, minimum: int | None = None) -> tuple[int, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise invalid_argument(f"{name} must be a sequence of integers, not {values!r}")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise invalid_argument(f"{name} must hold integers, not {values!r}")
        if minimum is not None and v < minimum:
            raise invalid_argument(f"{name} must hold integers >= {minimum}, not {values!r}")
        out.append(int(v))
    if count is not None and len(out) != count:
        raise invalid_argument(f"{name} must have {count} entries (one per dimension), not {len(out)}")
    return tuple(out)


def _check_dtype(backend: Any, name: str, dtype: Any, allowed: Sequence[str]) -> StorageType:
    dtype = str(dtype)
    if dtype not in allowed:
        raise invalid_argument(f"{name} must be one of {', '.join(allowed)}, not {dtype!r}")
    st = storage_type(dtype)
    if not backend.supports(st.feature):
        raise unsupported(f"{dtype} needs the adapter feature {st.feature!r}, which this adapter lacks")
    return st


def _byte_range(backend: Any, name: str, ptr: Any, itemsize: int,
                dims: Sequence[tuple[int, int]]) -> tuple[int, int, int]:
    """(allocation id, first byte, end byte) of the operand; BackendError when a touched element
    lies outside its allocation or the pointer is misaligned."""
    if isinstance(ptr, bool) or not isinstance(ptr, numbers.Integral):
        raise invalid_argument(f"{name} must be a device pointer, not {ptr!r}")
    lo, hi = strided_span(dims)
    start = int(ptr) + lo * itemsize
    alloc, offset = backend.resolve(start, (hi - lo + 1) * itemsize)
    if offset % itemsize:
        raise invalid_argument(f"{name} (offset {offset}) is not aligned to the item size {itemsize}")
    return id(alloc), offset, offset + (hi - lo + 1) * itemsize


# ---- kernel specialisation ---------------------------------------------------------------------
_PLAIN_STORE = "    dst[i] = {value};"
_LANE_STORE = (
    "    let sh = (i % {lanes}u) * {bits}u;\n"
    "    atomicAnd(&dst[i / {lanes}u], ~({mask}u << sh));\n"
    "    atomicOr(&dst[i / {lanes}u], {lane_bits} << sh);"
)
#: Element i of an operand bound as array<vec4<T>>.
_VEC_ELEMENT = "{buf}[(i) >> 2u][(i) & 3u]"
_LANES = "xyzw"


def _vector(values: Sequence[str], array: str) -> str:
    """A vec4<array> of four lane expressions."""
    return f"vec4<{array}>({', '.join(values)})"


@functools.lru_cache(maxsize=256)
def _defines(op: str, mode: int, phase: int, carry: int, src: StorageType, dst: StorageType,
             acc: StorageType, vec_store: bool = False, prefetch: bool = False) -> dict[str, object]:
    """The placeholder values of scan.wgsl (cached: treat as read-only). In the vector mode src
    is bound as vectors (and dst too when ``vec_store``); ``dst`` is ``acc`` in PHASE 0 (the slot
    is bound to aux there)."""
    expr, ident = OPS[op]
    vector = mode == MODE_VECTOR
    value = convert("v", acc.compute, dst.compute)
    if dst.packed:
        lane = 32 // dst.lanes
        store = _LANE_STORE.format(lanes=dst.lanes, bits=lane, mask=(1 << lane) - 1,
                                   lane_bits=dst.bits_expr(value))
        dst_array = "atomic<u32>"
    elif vec_store:
        store = f"    {_VEC_ELEMENT.format(buf='dst')} = {value};"
        dst_array = f"vec4<{dst.array}>"
    else:
        store = _PLAIN_STORE.format(value=value)
        dst_array = dst.array
    if vector:
        src_array = f"vec4<{src.array}>"
        load = convert(_VEC_ELEMENT.format(buf="src"), src.compute, acc.compute)
        if src.compute == acc.compute:
            load_vec = "    return src[k];"
        else:
            load_vec = "    let w = src[k];\n    return " + _vector(
                [convert(f"w.{c}", src.compute, acc.compute) for c in _LANES], acc.compute) + ";"
    else:
        src_array = src.array
        load = convert(src.load_expr("src", "i"), src.compute, acc.compute)
        load_vec = "    return vec_t(identity());"
    store_vec = ""
    if vec_store:
        lanes = [convert(f"v.{c}", acc.compute, dst.compute) for c in _LANES]
        store_vec = "    dst[k] = " + ("v" if dst.compute == acc.compute else _vector(lanes, dst.array)) + ";"
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


def _aligned(backend: Any, side: _Side, rows: Sequence[int]) -> int | None:
    """The element offset (mod 4) of ``side``'s element [0, ...] if it can be bound as vectors:
    an unpacked type, axis stride 1, row strides multiples of 4, and bindings that can be
    rounded up to whole vectors (binding offsets and the buffer's size multiples of a vector);
    None otherwise."""
    st = side.st
    vec_bytes = 4 * st.itemsize
    if st.packed or side.axis != 1 or any(s % 4 for s in rows):
        return None
    alloc, offset = backend.resolve(side.ptr, 0)
    if backend.context.storage_offset_alignment % vec_bytes or alloc.buffer.size % vec_bytes:
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
    mode. Hashable: ``_layout`` caches by it."""

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
    if mode == MODE_ROWS and vector is not None:
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
                total, nunits = plan.total, plan.nunits
                if plan.mode == MODE_COLUMNS:
                    aux_rows = [] if total == 1 else [RowDim(total, 1, 1)]
                else:
                    aux_rows = [] if total == 1 else [RowDim(total, nunits, nunits)]
                _run(backend, op, nunits, aux_rows, aux_side, aux_side, acc)
        _phase(backend, plan, 1, src_ptr, dst.ptr, aux)
    finally:
        if aux is not None:
            backend.free(aux)


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
        _extent(plan.src.itemsize, 1 + span * abs(plan.src_axis),
                [("u", unit * plan.src_axis)] + [(f"r{i}", r.src) for i, r in enumerate(rows)]),
    ]
    if phase == 1:
        extents.append(_extent(plan.dst.itemsize, 1 + span * abs(plan.dst_axis),
                               [("u", unit * plan.dst_axis)] + [(f"r{i}", r.dst) for i, r in enumerate(rows)]))
    aux_rows = [(f"r{i}", r.aux) for i, r in enumerate(rows)]
    if phase == 1 and plan.carry == CARRY_REDUCED:  # every block reads its rows' totals from unit 0
        extents.append(_extent(acc.itemsize, 1 + (plan.nunits - 1) * plan.aux_us, aux_rows))
    elif plan.nunits > 1:
        extents.append(_extent(acc.itemsize, 1 + plan.aux_us, [("u", plan.aux_us)] + aux_rows))
    try:
        blocks = plan_blocks(sizes, extents, plan.limit)
    except ValueError as exc:
        raise invalid_argument(f"scan: one unit does not fit a binding window ({exc})") from None
    # phase 0 writes no dst (its dst slot is bound to aux and typed as acc) and reads no carry
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


def _phase(backend: Any, plan: _Plan, phase: int, src_ptr: int, dst_ptr: int, aux: int | None) -> None:
    """Record one phase of ``plan`` (src's position 0 at ``src_ptr``, dst's element 0 at
    ``dst_ptr``, the unit totals at ``aux``): one dispatch per block of ``_layout``."""
    ctx = backend.context
    defines, boxes = _layout(plan, phase)
    n, unit, rows, acc, aux_us = plan.n, plan.unit, plan.rows, plan.acc, plan.aux_us
    src_strides = [r.src for r in rows]
    dst_strides = [r.dst for r in rows]
    aux_strides = [r.aux for r in rows]
    vector = plan.mode == MODE_VECTOR
    vec_store = phase == 1 and plan.vec_store
    row_words = [*(_u32(s) for s in src_strides), _u32(plan.dst_axis), *(_u32(s) for s in dst_strides)]
    records = []
    for u0, un, i0, n0, i1, n1, i2, n2 in boxes:
        counts = (n0, n1, n2)
        first_pos = u0 * unit
        length = min(un * unit, n - first_pos)

        def window(ptr: int, itemsize: int, axis: int, strides: Sequence[int], shift: int = 0,
                   vectors: bool = False) -> tuple[Any, int]:
            """(binding, element index of position first_pos of the box's row 0), position q
            being element q - shift (positions before element 0 are not touched);
            ``vectors``: the binding rounded up to whole vectors."""
            skip = max(0, shift - first_pos)
            origin = (first_pos + skip - shift) * axis + i0 * strides[0] + i1 * strides[1] + i2 * strides[2]
            dims = [(length - skip, axis)] + [(cnt, s) for cnt, s in zip(counts, strides)]
            lo, hi = strided_span(dims)
            win = backend.window(ptr + (origin + lo) * itemsize, (hi - lo + 1) * itemsize, itemsize)
            binding = win.binding
            if vectors:  # stays inside the buffer: its size and the offset are whole vectors
                vec_bytes = 4 * itemsize
                binding = (win.buffer, win.offset, -(-win.size // vec_bytes) * vec_bytes)
            return binding, win.first - lo - skip * axis

        src_bind, src_first = window(src_ptr, plan.src.itemsize, plan.src_axis, src_strides,
                                     vectors=vector)
        dst_bind, dst_first = None, 0
        if phase == 1:  # dst's pointer is its element 0, at position head
            dst_bind, dst_first = window(dst_ptr, plan.dst.itemsize, plan.dst_axis, dst_strides,
                                         shift=plan.head, vectors=vec_store)
        if phase == 0:
            lo_unit, hi_unit = u0, u0 + un - 1
        else:  # the scan phase reads the carries of units before its own
            lo_unit = 0 if plan.carry == CARRY_REDUCED else max(u0 - 1, 0)
            hi_unit = u0 + un - 2
        if aux is not None and hi_unit >= lo_unit:
            origin = lo_unit * aux_us + i0 * aux_strides[0] + i1 * aux_strides[1] + i2 * aux_strides[2]
            dims = [(hi_unit - lo_unit + 1, aux_us)] + [(cnt, s) for cnt, s in zip(counts, aux_strides)]
            lo, hi = strided_span(dims)
            win = backend.window(aux + (origin + lo) * acc.itemsize, (hi - lo + 1) * acc.itemsize,
                                 acc.itemsize)
            aux_bind, aux_first = win.binding, win.first - lo + (u0 - lo_unit) * aux_us
        else:  # no total is read or written: any binding of at least one acc element
            aux_bind, aux_first = _placeholder(backend, acc, dst_bind, src_bind), 0
        if dst_bind is None:  # phase 0 (aux always exists then)
            dst_bind = aux_bind
        params = [n, un, u0, unit, n0, n1, n2, src_first, _u32(plan.src_axis), *row_words[:3],
                  _u32(dst_first), *row_words[3:], aux_first, _u32(aux_us),
                  *(_u32(s) for s in aux_strides), plan.head]
        items = n0 * n1 * n2 * un
        groups = items if plan.mode != MODE_COLUMNS else -(-items // WG)
        records.append((params, [src_bind, dst_bind, aux_bind], ctx.fold_grid(groups)))
    for params, bindings, grid in records:
        ctx.dispatch(KERNEL, params, bindings, grid, defines)


def _placeholder(backend: Any, acc: StorageType, *bindings: Any) -> Any:
    """A binding at least one ``acc`` element large among ``bindings`` (the aux binding when no
    total is read); a fresh tiny allocation only when all are smaller (single tiny elements)."""
    for b in bindings:
        if b is not None and b[2] >= acc.itemsize:
            return b
    ptr = backend.alloc(acc.itemsize)
    try:
        return backend.window(ptr, acc.itemsize, acc.itemsize).binding
    finally:
        backend.free(ptr)  # the recorded dispatch keeps the pool block alive until it runs


def _u32(value: int) -> int:
    """The two's-complement u32 bits of a signed element stride."""
    return value & 0xFFFFFFFF


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

    Raises BackendError: invalid argument for a bad op, dtype, shape, strides or axis, dst strides
    that alias, overlapping src and dst of different layouts, or a pointer whose touched range is
    unknown, freed, misaligned or past its allocation's end; unsupported when the adapter lacks a
    dtype's feature. Nothing is recorded unless every check passes.
    """
    if op not in OPS:
        raise invalid_argument(f"scan op must be one of {sorted(OPS)}, not {op!r}")
    src_st = _check_dtype(backend, "src_dtype", src_dtype, tuple(STORAGE_TYPES))
    dst_st = _check_dtype(backend, "dst_dtype", dst_dtype, tuple(d for d in STORAGE_TYPES if d != "bool"))
    acc_name = accumulator_dtype(dst_st.name) if acc_dtype is None else acc_dtype
    acc = _check_dtype(backend, "acc_dtype", acc_name, DTYPES)
    shape = _check_ints("shape", shape, minimum=0)
    ndim = len(shape)
    s_src = _check_ints("src_strides", src_strides, ndim)
    s_dst = _check_ints("dst_strides", dst_strides, ndim)
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral) or not -ndim <= axis < ndim:
        raise invalid_argument(f"axis {axis!r} is out of range for {ndim} dimensions")
    axis = int(axis) % ndim
    if 0 in shape:
        return
    check_distinct("dst", list(zip(shape, s_dst)))
    src_range = _byte_range(backend, "src", src, src_st.itemsize, list(zip(shape, s_src)))
    dst_range = _byte_range(backend, "dst", dst, dst_st.itemsize, list(zip(shape, s_dst)))
    in_place = src == dst and s_src == s_dst and src_st.itemsize == dst_st.itemsize
    if (not in_place and src_range[0] == dst_range[0]
            and src_range[1] < dst_range[2] and dst_range[1] < src_range[2]):
        raise invalid_argument("src and dst overlap with different layouts (only an in-place scan "
                               "with the same layout may share memory)")
    n = shape[axis]
    others = [d for d in range(ndim) if d != axis]
    rows = merge_rows([shape[d] for d in others], [s_src[d] for d in others], [s_dst[d] for d in others])
    inner, outer = rows[:3], rows[3:]  # more than three row dims: loop over the slowest ones
    for index in itertools.product(*(range(r.size) for r in outer)):
        off_src = sum(i * r.src for i, r in zip(index, outer))
        off_dst = sum(i * r.dst for i, r in zip(index, outer))
        _run(backend, op, n, inner,
             _Side(int(src) + off_src * src_st.itemsize, src_st, s_src[axis]),
             _Side(int(dst) + off_dst * dst_st.itemsize, dst_st, s_dst[axis]), acc)


def scan(backend: Any, op: str, ptr: int, dtype: str, rows: int, n: int, ld: int | None = None) -> None:
    """Replace each row ``x[r, :n]`` (at ``ptr + r*ld*itemsize``) by its inclusive scan, in place.

    ``op`` is 'sum' or 'prod'; ``dtype`` one of :data:`DTYPES`; ``ld`` (row stride in elements,
    default ``n``) must be >= n. Raises BackendError: invalid argument for a bad op, dtype, size,
    leading dimension or pointer range (checked before anything is recorded); unsupported when
    the adapter lacks the dtype's feature.
    """
    if op not in OPS:
        raise invalid_argument(f"scan op must be one of {sorted(OPS)}, not {op!r}")
    if dtype not in DTYPES:
        raise invalid_argument(f"scan dtype must be one of {DTYPES}, not {dtype!r}")
    st = storage_type(dtype)
    if not backend.supports(st.feature):
        raise unsupported(f"{dtype} needs the adapter feature {st.feature!r}, which this adapter lacks")
    rows = _check_int("rows", rows, 0)
    n = _check_int("n", n, 0)
    ld = n if ld is None else _check_int("ld", ld, 0)
    if ld < n:
        raise invalid_argument(f"ld = {ld} must be >= n = {n}")
    if rows == 0 or n == 0:
        return
    span = ((rows - 1) * ld + n) * st.itemsize
    _, offset = backend.resolve(ptr, span)
    if offset % st.itemsize:
        raise invalid_argument(f"pointer offset {offset} is not a multiple of the item size {st.itemsize}")
    scan_strided(backend, op, ptr, dtype, (rows, n), (ld, 1), 1, ptr, dtype, (ld, 1), acc_dtype=dtype)
