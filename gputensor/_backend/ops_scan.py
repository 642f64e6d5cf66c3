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
writes each unit's total to an auxiliary array, the totals are scanned (recursively, by this same
procedure), and phase 1 scans every unit from its carry (the scanned total of the unit before)
and stores each element once: two reads and one write of the data (one read and one write when a
row is a single unit, the common case). Two mappings (``choose_mode``):

* rows mode (axes whose elements are close together in dst, i.e. the last axis of a contiguous
  result): a workgroup of ``WG`` = 256 invocations per unit of ``BLOCK`` = 1024 elements of one
  row; coalesced loads into workgroup memory, a serial scan of 4 consecutive elements per
  invocation, a Hillis-Steele scan of the 256 partials, coalesced stores. Phase 0 (totals only)
  uses 64 invocations loading 16 elements each and a two-barrier raking reduction.
* columns mode (short axes, and axes with a large stride such as axis 0 of a C-contiguous
  matrix): one invocation per (row, unit) scanning its unit serially; consecutive invocations take
  neighbouring rows (the row dimension with the smallest dst stride), so each step is a
  coalesced load and store across the invocations. Units are ``chunk_length`` long: a whole row
  when there are enough rows to fill the GPU, shorter otherwise.

NumPy's sequential order is not kept, so float results differ by rounding (blockwise: more
accurate than a serial sum for long rows).

Operands larger than one binding window: the rows (up to three merged row dimensions inside a
dispatch, more are looped over) and the units are split into blocks whose touched spans in src,
dst and aux -- measured from the lowest to the highest offset, so negative strides split like
positive ones -- each fit one window (``ops_gemm.plan_blocks``).
"""

from __future__ import annotations

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
           "scan_strided"]

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

#: Scan operators: name -> (WGSL combine expression, identity).
OPS = {"sum": ("a + b", 0), "prod": ("a * b", 1)}

#: Accumulation dtypes (stored unpacked); also the dtypes of the in-place ``scan``.
DTYPES = ("float32", "float64", "int32", "uint32", "int64", "uint64")

#: Modes of scan.wgsl.
MODE_ROWS = 0
MODE_COLUMNS = 1

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


def _defines(op: str, mode: int, phase: int, carry: bool, src: StorageType, dst: StorageType,
             acc: StorageType) -> dict[str, object]:
    expr, ident = OPS[op]
    value = convert("v", acc.compute, dst.compute)
    if dst.packed:
        lane = 32 // dst.lanes
        store = _LANE_STORE.format(lanes=dst.lanes, bits=lane, mask=(1 << lane) - 1,
                                   lane_bits=dst.bits_expr(value))
        dst_array = "atomic<u32>"
    else:
        store = _PLAIN_STORE.format(value=value)
        dst_array = dst.array
    load = convert(src.load_expr("src", "i"), src.compute, acc.compute)
    return {
        "ACC": acc.compute,
        "MODE": mode,
        "PHASE": phase,
        "CARRY": "true" if carry else "false",
        "WG": REDUCE_WG if mode == MODE_ROWS and phase == 0 else WG,
        "ITEMS": REDUCE_ITEMS if mode == MODE_ROWS and phase == 0 else ITEMS,
        "RAKE": RAKE,
        "SRC_ARRAY": src.array,
        "DST_ARRAY": dst_array,
        "IDENTITY": literal(ident, acc.compute),
        "COMBINE": expr,
        "LOAD_SRC": load,
        "STORE_DST": store,
        "HELPERS": library_code(load + "\n" + store),
    }


# ---- the engine ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Side:
    """One operand of a scan: pointer of its element [0, ...], storage type, axis stride."""

    ptr: int
    st: StorageType
    axis: int


def _run(backend: Any, op: str, n: int, rows: list[RowDim], src: _Side, dst: _Side,
         acc: StorageType) -> None:
    """Scan ``n``-long rows (n >= 1, at most three row dims, every size >= 1, arguments valid)."""
    ctx = backend.context
    total = 1
    for r in rows:
        total *= r.size
    mode = choose_mode(n, dst.axis, rows)
    unit = BLOCK if mode == MODE_ROWS else chunk_length(n, total)
    longest = _longest_unit(backend, src, dst)
    if min(unit, n) > longest:  # a unit would not fit one window: shorter (columns) units
        mode, unit = MODE_COLUMNS, longest
    nunits = -(-n // unit)
    rows = list(rows) + [RowDim(1, 0, 0)] * (3 - len(rows))
    aux = None
    aux_us = 0
    if nunits > 1:
        # aux index of (row R (r0 fastest), unit U): rows mode R*nunits + U, columns U*total + R
        row_step = nunits if mode == MODE_ROWS else 1
        aux_us = 1 if mode == MODE_ROWS else total
        strides, step = [], row_step
        for r in rows:
            strides.append(step)
            step *= r.size
        rows = [RowDim(r.size, r.src, r.dst, s) for r, s in zip(rows, strides)]
        aux = backend.alloc(total * nunits * acc.itemsize, zero=False)
    try:
        if aux is not None:
            _phase(backend, ctx, op, mode, 0, n, unit, nunits, rows, src, dst, aux, aux_us, acc)
            aux_side = _Side(aux, acc, aux_us)
            if mode == MODE_ROWS:
                aux_rows = [] if total == 1 else [RowDim(total, nunits, nunits)]
            else:
                aux_rows = [] if total == 1 else [RowDim(total, 1, 1)]
            _run(backend, op, nunits, aux_rows, aux_side, aux_side, acc)
        _phase(backend, ctx, op, mode, 1, n, unit, nunits, rows, src, dst, aux, aux_us, acc)
    finally:
        if aux is not None:
            backend.free(aux)


def _longest_unit(backend: Any, src: _Side, dst: _Side) -> int:
    """The most axis elements of one row that fit one binding window in both src and dst."""
    limit = backend.max_window_bytes()
    longest = []
    for side in (src, dst):
        elems = limit // side.st.itemsize
        longest.append(elems if side.axis == 0 else (elems - 1) // abs(side.axis) + 1)
    return max(1, min(longest))


def _phase(backend: Any, ctx: Any, op: str, mode: int, phase: int, n: int, unit: int, nunits: int,
           rows: list[RowDim], src: _Side, dst: _Side, aux: int | None, aux_us: int,
           acc: StorageType) -> None:
    """Record one phase over every (row block, unit block) whose spans fit one window."""
    sizes = {"u": nunits, "r0": rows[0].size, "r1": rows[1].size, "r2": rows[2].size}
    span = min(unit, n) - 1  # axis steps inside one unit
    extents = [
        _extent(src.st.itemsize, 1 + span * abs(src.axis),
                [("u", unit * src.axis)] + [(f"r{i}", r.src) for i, r in enumerate(rows)]),
    ]
    if phase == 1:
        extents.append(_extent(dst.st.itemsize, 1 + span * abs(dst.axis),
                               [("u", unit * dst.axis)] + [(f"r{i}", r.dst) for i, r in enumerate(rows)]))
    if aux is not None:
        extents.append(_extent(acc.itemsize, 1 + aux_us,
                               [("u", aux_us)] + [(f"r{i}", r.aux) for i, r in enumerate(rows)]))
    try:
        blocks = plan_blocks(sizes, extents, backend.max_window_bytes())
    except ValueError as exc:
        raise invalid_argument(f"scan: one unit does not fit a binding window ({exc})") from None
    # phase 0 writes no dst: its dst slot is bound to the aux window and typed as acc
    defines = _defines(op, mode, phase, aux is not None, src.st, dst.st if phase == 1 else acc, acc)
    records = []
    for (u0, un), (i0, n0), (i1, n1), (i2, n2) in itertools.product(
            block_starts(nunits, blocks["u"]), block_starts(rows[0].size, blocks["r0"]),
            block_starts(rows[1].size, blocks["r1"]), block_starts(rows[2].size, blocks["r2"])):
        box = [(n0, rows[0]), (n1, rows[1]), (n2, rows[2])]
        first_pos = u0 * unit
        length = min(un * unit, n - first_pos)

        def window(side_ptr: int, itemsize: int, axis: int, strides: Sequence[int]) -> tuple[Any, int]:
            origin = first_pos * axis + i0 * strides[0] + i1 * strides[1] + i2 * strides[2]
            dims = [(length, axis)] + [(cnt, s) for (cnt, _), s in zip(box, strides)]
            lo, hi = strided_span(dims)
            win = backend.window(side_ptr + (origin + lo) * itemsize, (hi - lo + 1) * itemsize, itemsize)
            return win.binding, win.first - lo

        src_bind, src_first = window(src.ptr, src.st.itemsize, src.axis, [r.src for r in rows])
        dst_bind, dst_first = None, 0
        if phase == 1:
            dst_bind, dst_first = window(dst.ptr, dst.st.itemsize, dst.axis, [r.dst for r in rows])
        aux_strides = [r.aux for r in rows]
        lo_unit = u0 if phase == 0 else max(u0 - 1, 0)
        hi_unit = u0 + un - 1 if phase == 0 else u0 + un - 2
        if aux is not None and hi_unit >= lo_unit:
            origin = lo_unit * aux_us + i0 * aux_strides[0] + i1 * aux_strides[1] + i2 * aux_strides[2]
            dims = [(hi_unit - lo_unit + 1, aux_us)] + [(cnt, s) for (cnt, _), s in zip(box, aux_strides)]
            lo, hi = strided_span(dims)
            win = backend.window(aux + (origin + lo) * acc.itemsize, (hi - lo + 1) * acc.itemsize,
                                 acc.itemsize)
            aux_bind, aux_first = win.binding, win.first - lo + (u0 - lo_unit) * aux_us
        else:  # no total is read or written: any binding of at least one acc element
            aux_bind, aux_first = _placeholder(backend, acc, dst_bind, src_bind), 0
        if dst_bind is None:  # phase 0 (aux always exists then)
            dst_bind = aux_bind
        params = [n, un, u0, unit, n0, n1, n2,
                  src_first, _u32(src.axis), *(_u32(r.src) for r in rows),
                  dst_first, _u32(dst.axis), *(_u32(r.dst) for r in rows),
                  aux_first, _u32(aux_us), *(_u32(s) for s in aux_strides)]
        items = n0 * n1 * n2 * un
        groups = items if mode == MODE_ROWS else -(-items // WG)
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
