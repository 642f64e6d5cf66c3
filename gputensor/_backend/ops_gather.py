"""Data-dependent movement on the device: gathers and scatters with integer index arrays (stream
compaction is ``ops_compact``, the small kernels around it ``ops_counting``).

Gather / scatter (``_wgsl/gather.wgsl``, :func:`gather`, :func:`scatter`): one invocation per
point of an iteration space of up to ``MAXD`` merged dims; the point's offset into the data
operands is a strided sum plus, on the indexed side, ``sum_k norm(I_k[...]) * mul_k`` over up to
``MAXIDX`` index arrays (any integer dtype, read with their own -- broadcast -- strides; negative
indices count from the end). This covers ``take``, ``take_along_axis`` and NumPy integer-array
indexing with slices around the indexed axes. Values move as raw bits (same dtype on both
sides); packed 8/16-bit destinations are updated lane by lane with an atomic compare-exchange, so
neighbouring elements are never clobbered (scatters with duplicate indices store one of the
values per element). A scatter through index arrays stores, where several points write one
element, the value of the last point in row-major order (NumPy's rule): a claim pass keeps the
largest point index per element (``atomicMax``), then the write pass stores only the winners.
The host checks index ranges before calling a scatter (the kernel trusts them); a gather's
kernel checks the indices marked ``IndexOperand.check`` itself (``index_checks``: an error
flag read at the next wait). A call is planned once per call structure as ``launch``
LaunchPrograms (``_OnePlan`` for one dispatch, ``_BoxPlan`` for several; kept per backend) and
replayed with new pointers.

Large operands: the indexed side is bound window by window (each dispatch moves only the points
whose element lies in its window); the other operands are split into boxes of the iteration
space that fit one window each. ``sort_common.WINDOW_LIMIT`` lowers the window size for tests.
"""

from __future__ import annotations

import functools
import itertools
import math
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .errors import invalid_argument, unsupported
from .index_checks import INDEX_CHECK_SLOTS
from .kernels import snippet
from .launch import LaunchProgram, Record, Region, operand_bases
from .layout import extent, merge_dims
from .sort_common import _check_dtype, _check_int, window_limit
from .sort_key_code import bits_loader, store_bits_code
from .plan_cache import PlanCache
from .wgsl_types import STORAGE_TYPES, storage_type

__all__ = ["IndexOperand", "MAXD", "MAXIDX", "bind_range", "gather", "planned_gather", "scatter"]

WG = 256
MAXD = 6
MAXIDX = 4
_U32 = 0xFFFFFFFF
_INDEX_DTYPES = tuple(t.name for t in STORAGE_TYPES.values() if t.kind in "iu")
#: The 8-byte dtype whose bits the halves of a 16-byte element move as (no adapter feature).
_HALF_DTYPE = "complex64"


def _kind(dtype: str) -> str:
    """NumPy's kind letter of dtype ``dtype`` (from the dtype table)."""
    return storage_type(dtype).kind


# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------
def _i32(v: int) -> int:
    return int(v) & _U32


def bind_range(backend: Any, ptr: int, lo: int, hi: int, itemsize: int) -> tuple[tuple[Any, int, int], int]:
    """(binding, index in the binding of element 0) covering elements [lo, hi) of ``ptr``
    (items of ``itemsize`` bytes). BackendError (invalid argument) as ``WebGpuBackend.window``."""
    win = backend.window(ptr + lo * itemsize, max(hi - lo, 1) * itemsize, itemsize)
    return win.binding, win.first - lo


@functools.lru_cache(maxsize=None)
def _index_loader(k: int, dtype: str) -> str:
    """WGSL ``fn idx{k}_load(i: u32) -> i32``: element i of binding ``ix{k}``, sign-extended."""
    size = storage_type(dtype).itemsize
    bits = bits_loader(f"idx{k}_bits", f"ix{k}", dtype)
    if _kind(dtype) == "i" and size < 4:
        load = snippet("gather/index_load_signed", {"K": k, "SH": 32 - 8 * size})
    else:  # 32/64-bit (range-checked: the low word holds the value) and small unsigned
        load = snippet("gather/index_load", {"K": k})
    return f"{bits}\n\n{load}"


@dataclass(frozen=True)
class IndexOperand:
    """An index array read at each point of the iteration space: ``ptr`` of its element at
    point 0, integer ``dtype``, ``strides`` (elements, one per iteration dim, 0 = broadcast),
    ``n`` (negative values get ``n`` added; 0 = none) and ``mul`` (element stride the index is
    multiplied by on the indexed side). ``check``: for a gather, the ``IndexError`` text of
    this array when its values are to be checked on the device (``index_checks``: raised at the
    next wait); empty when they are known to lie in ``[-n, n)``."""

    ptr: int
    dtype: str
    strides: tuple[int, ...]
    n: int
    mul: int
    check: str = ""


def _boxes(shape: list[int], stride_sets: list[list[int]], sizes: list[int],
           limit: int) -> Iterator[tuple[list[int], list[int]]]:
    """Split the iteration space into boxes whose span fits ``limit`` bytes for every stride set
    (item size ``sizes[k]``): yields (box shape, coordinates of the box's point 0). Only leading
    dims are split (ranges of dim 0; single indices of dim 0 and a recursion when one index of
    it is still too large), so a box is the sub-space [c0, c0 + shape0) x ... in row-major order.
    """

    def fits(shp: list[int], depth: int) -> bool:
        for st, size in zip(stride_sets, sizes):
            lo, hi = extent(shp, st[depth:])
            if (hi - lo) * size > limit:
                return False
        return True

    def rec(depth: int, prefix: list[int]) -> Iterator[tuple[list[int], list[int]]]:
        sub = shape[depth:]
        if fits(sub, depth):
            yield [1] * depth + sub, prefix + [0] * len(sub)
            return
        n0, rest = sub[0], sub[1:]
        if fits([1] + rest, depth):
            lo_k, hi_k = 1, n0
            while lo_k < hi_k:
                mid = (lo_k + hi_k + 1) // 2
                if fits([mid] + rest, depth):
                    lo_k = mid
                else:
                    hi_k = mid - 1
            for i0 in range(0, n0, lo_k):
                yield [1] * depth + [min(lo_k, n0 - i0)] + rest, prefix + [i0] + [0] * len(rest)
            return
        if not rest:
            raise unsupported("one element does not fit a binding window")
        for i0 in range(n0):
            yield from rec(depth + 1, prefix + [i0])

    yield from rec(0, [])


# ------------------------------------------------------------------------------------------
# gather / scatter
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class _OnePlan:
    """A gather/scatter that is one dispatch (one box, one window of the indexed side, no
    winner pass), planned for the context ``ctx`` under the window limit ``limit``: everything
    but the pointers, as the ``launch.LaunchProgram`` ``program`` (operand 0 ``a``, 1 ``b``,
    ``2 + k`` index array ``k``, then, where ``checks`` names the device-side index checks,
    the binding of their flag words; their slot is the parameter bytes after the program's
    words). ``itemsizes`` and ``spans``: what ``WebGpuBackend.bindings`` checks and
    binds of each operand (``(lo, count, 0)``: the window index of the lowest element comes
    back, the program's slot windows)."""

    ctx: Any
    program: LaunchProgram
    checks: tuple[str, ...]
    limit: int
    itemsizes: tuple[int, ...]
    spans: tuple[tuple[int, int, int], ...]

    def valid_on(self, backend: Any) -> bool:
        """Whether the plan holds on ``backend`` now (its context and window limit unchanged)."""
        return self.ctx is backend._ctx and self.limit == window_limit(backend)

    def launch(self, backend: Any, scatter: bool, a_ptr: int, b_ptr: int,
               indices: Sequence[IndexOperand]) -> None:
        """Check the pointer ranges (BackendError as ``gather`` says) and record the dispatch."""
        self.launch_ptrs(backend, a_ptr, b_ptr, [ix.ptr for ix in indices])

    def launch_ptrs(self, backend: Any, a_ptr: int, b_ptr: int, index_ptrs: Sequence[int]) -> None:
        """``launch`` with the index arrays given by their pointers (at point 0) alone: every
        range checked and bound by one ``WebGpuBackend.bindings`` call (BackendError as
        ``gather`` says, before anything is recorded), the program replayed (through
        ``LaunchProgram.dispatch`` where a dispatch wrapper is on the context)."""
        ptrs = (a_ptr, b_ptr, *index_ptrs)
        bindings, firsts = backend.bindings(ptrs, self.itemsizes, self.spans)
        ctx = self.ctx
        program = self.program
        spy = ctx.__dict__.get("dispatch") is not None
        if not self.checks:
            if spy:
                program.dispatch(backend, ctx, ptrs, None, _NO_CHECK)
            else:
                program.record(ctx, bindings, firsts if any(firsts) else None, _NO_CHECK)
            return
        with ctx._lock:  # the slot is reserved and its dispatch recorded as one
            region, slot = ctx.reserve_index_check(self.checks)
            if spy:
                program.dispatch(backend, ctx, (*ptrs, region), None, _CHECK_SLOT.pack(slot))
                return
            bindings.append(region)
            if any(firsts):
                firsts.append(0)
                program.record(ctx, bindings, firsts, _CHECK_SLOT.pack(slot))
            else:
                program.record(ctx, bindings, None, _CHECK_SLOT.pack(slot))


#: The gather kernel's last 4 parameter words (the index checks' slot), after a program's words.
_CHECK_SLOT = struct.Struct("<I12x")
_NO_CHECK = bytes(16)


def planned_gather(backend: Any, dtype: str, shape: Sequence[int], src_strides: Sequence[int],
                   src_extent: tuple[int, int], dst_strides: Sequence[int],
                   indices: Sequence[IndexOperand]) -> _OnePlan | _BoxPlan | None:
    """The plan an earlier ``gather`` call with these arguments (everything but the pointers)
    kept on ``backend``, valid there now; None when there is none (a 16-byte dtype, whose calls
    are kept as ones of 8-byte halves). Its ``launch_ptrs(backend, src, dst, index_ptrs)``
    replays the call for new pointers, checking them."""
    try:
        key = (False, dtype, tuple(shape), tuple(src_strides), tuple(dst_strides), tuple(src_extent),
               tuple((ix.dtype, ix.strides, ix.n, ix.mul, bool(ix.check)) for ix in indices), window_limit(backend))
    except TypeError:
        return None
    plan = _MOVE_PLANS.of(backend).get(key)
    return plan if plan is not None and plan.valid_on(backend) else None


#: Gathers/scatters kept per backend (``_OnePlan``, ``_BoxPlan``), by their plain arguments.
_MOVE_PLANS = PlanCache(256)


def _move(backend: Any, scatter: bool, dtype: str, shape: Sequence[int], a_ptr: int,
          a_strides: Sequence[int], b_ptr: int, b_strides: Sequence[int],
          indices: Sequence[IndexOperand], indexed_extent: tuple[int, int]) -> None:
    try:
        key: tuple[Any, ...] | None = (
            scatter, dtype, tuple(shape), tuple(a_strides), tuple(b_strides), tuple(indexed_extent),
            tuple((ix.dtype, ix.strides, ix.n, ix.mul, bool(ix.check)) for ix in indices), window_limit(backend))
        plan = _MOVE_PLANS.of(backend).get(key)
    except TypeError:  # unhashable arguments: the checks below report them
        key, plan = None, None
    if plan is not None and plan.ctx is backend._ctx and type(a_ptr) is int and type(b_ptr) is int:
        plan.launch(backend, scatter, a_ptr, b_ptr, indices)
        return
    dtype = _check_dtype(backend, dtype)
    shape = [_check_int("shape entries", int(s)) for s in shape]
    rank = len(shape)
    if len(a_strides) != rank or len(b_strides) != rank:
        raise invalid_argument("strides must have one entry per dim of the iteration space")
    if storage_type(dtype).itemsize == 16:
        # 16-byte elements (complex128) move as two 8-byte halves: a trailing dim of 2
        half = _HALF_DTYPE
        _move(backend, scatter, half, shape + [2], a_ptr, [2 * s for s in a_strides] + [1],
              b_ptr, [2 * s for s in b_strides] + [1],
              [replace(ix, strides=tuple(ix.strides) + (0,), mul=2 * ix.mul) for ix in indices],
              (2 * indexed_extent[0], 2 * indexed_extent[1]))
        return
    if len(indices) > MAXIDX:
        raise invalid_argument(f"at most {MAXIDX} index arrays per gather/scatter, got {len(indices)}")
    for ix in indices:
        if ix.dtype not in _INDEX_DTYPES:
            raise invalid_argument(f"index arrays must have an integer dtype, not {ix.dtype!r}")
        _check_dtype(backend, ix.dtype, "index dtype")
        if len(ix.strides) != rank:
            raise invalid_argument("index strides must have one entry per dim of the iteration space")
    count = math.prod(shape)
    if count == 0:
        return
    if count >= 2**32:
        raise unsupported(f"a gather/scatter of {count} elements exceeds the 32-bit index range")
    size = storage_type(dtype).itemsize
    limit = window_limit(backend)
    # validate every pointer range before recording anything
    plain = (a_ptr, a_strides) if scatter else (b_ptr, b_strides)
    plain_lo, plain_hi = extent(shape, plain[1])
    backend.resolve(plain[0] + plain_lo * size, (plain_hi - plain_lo) * size)
    xlo, xhi = indexed_extent
    xptr = b_ptr if scatter else a_ptr
    backend.resolve(xptr + xlo * size, (xhi - xlo) * size)
    for ix in indices:
        isz = storage_type(ix.dtype).itemsize
        lo, hi = extent(shape, ix.strides)
        backend.resolve(ix.ptr + lo * isz, (hi - lo) * isz)

    checked = [bool(ix.check) and not scatter for ix in indices]
    # the last stride set numbers the points in row-major order (the winner of a scatter)
    sets = ([list(a_strides), list(b_strides)] + [list(ix.strides) for ix in indices]
            + [_row_major(shape)])
    mshape, msets = merge_dims(shape, sets)
    # dims beyond MAXD: loop over the leading ones on the host
    lead = max(0, len(mshape) - MAXD)
    outer_shape, inner_shape = mshape[:lead], mshape[lead:]
    winners = scatter and bool(indices) and count > 1 and any(a_strides)
    if key is not None and not lead and not winners and (xhi - xlo) * size <= limit:
        plan = _plan_one(backend, scatter, dtype, size, mshape, msets, indices, checked, indexed_extent, limit)
        if plan is not None:
            _MOVE_PLANS.keep(_MOVE_PLANS.of(backend), key, plan)
            plan.launch(backend, scatter, a_ptr, b_ptr, indices)
            return
    isizes = [storage_type(ix.dtype).itemsize for ix in indices]
    ranges = ((0 if scatter else 1, plain_lo * size, (plain_hi - plain_lo) * size),
              (1 if scatter else 0, xlo * size, (xhi - xlo) * size),
              *((2 + k, lo * isz, (hi - lo) * isz)
                for k, (isz, (lo, hi)) in enumerate(zip(isizes, (extent(shape, ix.strides) for ix in indices)))))
    plan = _plan_boxes(backend, scatter, dtype, size, isizes, mshape, msets, lead, indices, checked,
                       indexed_extent, limit, winners, ranges)
    if key is not None:
        _MOVE_PLANS.keep(_MOVE_PLANS.of(backend), key, plan)
    plan.launch(backend, scatter, a_ptr, b_ptr, indices)


@dataclass(frozen=True, eq=False)
class _BoxPlan:
    """A gather/scatter of several dispatches (boxes of the iteration space, windows of the
    indexed side, a scatter's winner passes), planned for the context ``ctx`` under the window
    limit ``limit``: ``programs`` replayed in order (each a ``launch.LaunchProgram`` with the
    operands of ``_OnePlan``; a two-pass scatter's program per window of the destination, its
    winners a zero-filled scratch allocation), after the pointer ranges ``ranges`` ((operand,
    byte offset from its pointer, bytes), as ``WebGpuBackend.resolve`` checks them) and, where
    ``checks`` names the device-side index checks, with their flag binding last."""

    ctx: Any
    programs: tuple[LaunchProgram, ...]
    checks: tuple[str, ...]
    limit: int
    ranges: tuple[tuple[int, int, int], ...]

    valid_on = _OnePlan.valid_on
    launch = _OnePlan.launch

    def launch_ptrs(self, backend: Any, a_ptr: int, b_ptr: int, index_ptrs: Sequence[int]) -> None:
        """``launch`` with the index arrays given by their pointers (at point 0) alone: every
        range checked (BackendError as ``gather`` says, before anything is recorded), the
        programs replayed (through ``LaunchProgram.dispatch`` where a dispatch wrapper is on
        the context)."""
        ptrs = (a_ptr, b_ptr, *index_ptrs)
        for k, lo, nbytes in self.ranges:
            backend.resolve(ptrs[k] + lo, nbytes)
        ctx = self.ctx
        if not self.checks:
            self._replay(backend, ctx, ptrs, None, _NO_CHECK)
            return
        with ctx._lock:  # the slot is reserved and its dispatches recorded as one
            region, slot = ctx.reserve_index_check(self.checks)
            self._replay(backend, ctx, ptrs, region, _CHECK_SLOT.pack(slot))

    def _replay(self, backend: Any, ctx: Any, ptrs: tuple[int, ...], flags: Any, tail: bytes) -> None:
        """Record the programs for the operands at ``ptrs`` and the check flags' binding
        ``flags`` (None: no checks)."""
        spy = ctx.__dict__.get("dispatch") is not None
        every = ptrs if flags is None else (*ptrs, flags)
        for program in self.programs:
            if not spy:
                bases = operand_bases(backend, ptrs)
                if flags is not None:  # a binding of its own (``LaunchProgram.replay``'s whole binding)
                    bases.append((flags[0], flags[0].size, _FLAGS_BYTES, 0, None, flags))
                if program.run(backend, ctx, bases, None, tail):
                    continue
            program.dispatch(backend, ctx, every, None, tail)


def _plan_boxes(backend: Any, scatter: bool, dtype: str, size: int, isizes: list[int], mshape: list[int],
                msets: list[list[int]], lead: int, indices: Sequence[IndexOperand], checked: Sequence[bool],
                indexed_extent: tuple[int, int], limit: int, winners: bool,
                ranges: tuple[tuple[int, int, int], ...]) -> _BoxPlan:
    """The plan of a call of several dispatches (see ``_BoxPlan``): the merged space ``mshape``
    with its leading ``lead`` dims looped over, boxes of the rest fitting ``limit`` bytes."""
    ctx = backend.context
    defines = _move_defines(scatter, dtype, indices, checked)
    plain_k = 0 if scatter else 1
    outer_shape, inner_shape = mshape[:lead], mshape[lead:]
    nops = 2 + len(indices)
    checks = tuple(ix.check for ix in indices) if any(checked) else ()
    packer = struct.Struct(f"<{_NWORDS}I")

    def records(pass_defines: dict[str, object], extent_: tuple[int, int], limit: int,
                win: int | None) -> list[Record]:
        out: list[Record] = []
        for outer in itertools.product(*(range(n) for n in outer_shape)):
            sub_sets = [st[lead:] for st in msets]
            off0 = [sum(c * st[d] for d, c in enumerate(outer)) for st in msets]
            # boxes fitting the plain data side and the index arrays; the indexed side is
            # covered by window masks
            split_sets = [sub_sets[plain_k]] + sub_sets[2:-1]
            for box_shape, coords in _boxes(list(inner_shape), split_sets, [size] + isizes, limit):
                offs = [o + sum(c * s_ for c, s_ in zip(coords, st)) for o, st in zip(off0, sub_sets)]
                out += _box_records(ctx, pass_defines, scatter, size, box_shape, sub_sets, offs, indices, isizes,
                                    extent_, limit, win, nops if checks else None)
        return out

    if not winners:  # (one value for every point: any winner stores it)
        program = LaunchProgram.compile("gather", packer, ctx, records(defines, indexed_extent, limit, None), ())
        return _BoxPlan(ctx, (program,), checks, limit, ranges)
    # a scatter through index arrays may write an element more than once: per window of the
    # destination, every point claims its element, then the winners write
    binding = snippet("gather/winner_binding", {"BINDING": 3 + len(indices)})
    claim = dict(defines, WIN_BINDING=binding, WINNER=snippet("gather/winner_claim"))
    write = dict(defines, WIN_BINDING=binding, WINNER=snippet("gather/winner_write"))
    limit = max(256, limit // 4 * min(4, size))  # a window of the destination and its winners fit
    chunk = max(1, limit // size)
    xlo, xhi = indexed_extent
    programs = []
    for c0 in range(xlo, xhi, chunk):
        c1 = min(xhi, c0 + chunk)
        # the winners (zero-filled: no point has claimed yet) of elements [c0, c1): scratch base nops
        steps = records(claim, (c0, c1), limit, c0) + records(write, (c0, c1), limit, c0)
        programs.append(LaunchProgram.compile("gather", packer, ctx, steps, [(4 * (c1 - c0), 0, True)]))
    return _BoxPlan(ctx, tuple(programs), checks, window_limit(backend), ranges)


def _move_defines(scatter: bool, dtype: str, indices: Sequence[IndexOperand],
                  checked: Sequence[bool]) -> dict[str, object]:
    """The gather kernel's placeholders for a call without a winner pass."""
    b_arr, b_store = store_bits_code("store_b", "b", dtype)
    b_store = b_store if not b_arr.startswith("atomic") else _cas_store(dtype)
    n = len(indices)
    defines: dict[str, object] = {
        "SCATTER": "true" if scatter else "false",
        "NIDX": n,
        "B_ARRAY": b_arr,
        "IDX_BINDINGS": "\n".join(snippet("gather/index_binding", {"BINDING": 3 + k, "K": k}) for k in range(n)),
        "A_LOADER": bits_loader("load_a", "a", dtype),
        "B_STORE": b_store,
        "IDX_LOADERS": "\n\n".join([_index_loader(k, ix.dtype) for k, ix in enumerate(indices)]
                                   + [_range_fn(k, ix.dtype) for k, ix in enumerate(indices) if checked[k]]
                                   + [_index_offset_fn(n, checked)]),
        "WIN_BINDING": "",
        "WINNER": "",
        "CHECK_BINDING": "",
        "CHECK_FLAG": "",
    }
    if any(checked):
        defines["CHECK_BINDING"] = snippet("gather/check_binding", {"BINDING": 3 + n})
        defines["CHECK_FLAG"] = snippet("gather/check_flag")
    return defines


def _plan_one(backend: Any, scatter: bool, dtype: str, size: int, mshape: list[int],
              msets: list[list[int]], indices: Sequence[IndexOperand], checked: Sequence[bool],
              indexed_extent: tuple[int, int], limit: int) -> _OnePlan | None:
    """The one-dispatch plan of a call whose merged space ``mshape`` has at most ``MAXD`` dims
    and whose indexed side fits one window, or None when the other operands need several boxes."""
    plain_k = 0 if scatter else 1
    isizes = [storage_type(ix.dtype).itemsize for ix in indices]
    boxes = list(_boxes(list(mshape), [msets[plain_k]] + msets[2:-1], [size] + isizes, limit))
    if len(boxes) != 1 or any(boxes[0][1]):
        return None
    rank = len(mshape)
    plain = extent(mshape, msets[plain_k])
    iranges = tuple(extent(mshape, msets[2 + k]) for k in range(len(indices)))
    dims: list[int] = []
    for d in range(MAXD):
        dims += [mshape[d], _i32(msets[0][d]), _i32(msets[1][d]), _i32(msets[-1][d])] if d < rank else [1, 0, 0, 0]
    istr: list[int] = []
    for d in range(MAXD):
        istr += [(_i32(msets[2 + k][d]) if d < rank else 0) if k < len(indices) else 0 for k in range(4)]
    pad4 = lambda v: (list(v) + [0, 0, 0, 0])[:4]  # noqa: E731
    # the head (count, rank, first-element and range words patched at replay), then the rest
    words = tuple([math.prod(mshape), rank] + [0] * 10 + pad4([_i32(ix.n) for ix in indices])
                  + pad4([_i32(ix.mul) for ix in indices]) + dims + istr)
    defines = _move_defines(scatter, dtype, indices, checked)
    ctx = backend.context
    n_bind = 2 + len(indices) + (1 if any(checked) else 0)
    pipe = ctx.pipeline("gather", n_bind, defines)
    grid = ctx.fold_grid(-(-math.prod(mshape) // WG))
    checks = tuple(ix.check for ix in indices) if any(checked) else ()
    xlo, xhi = indexed_extent
    a_range, b_range = ((plain, (xlo, xhi)) if scatter else ((xlo, xhi), plain))
    itemsizes = (size, size, *isizes)
    spans = tuple((lo, max(hi - lo, 1), 0) for lo, hi in (a_range, b_range) + iranges)
    # words 2, 3 and 8 + k: element 0 of a, b and index array k; 4 and 5: the indexed side's range
    regions = [Region(k, lo * itemsize, count * itemsize, itemsize, 0, word, -lo)
               for k, ((lo, count, _), itemsize, word) in enumerate(zip(spans, itemsizes, (2, 3, 8, 9, 10, 11)))]
    if checks:  # the flag words: a binding the caller makes (``reserve_index_check``)
        regions.append(Region(len(regions), 0, 4, 4, 0, 0, 0))
    x_binding = 1 if scatter else 0
    record = Record(pipe, defines, words, grid, tuple(regions),
                    firsts=((4, x_binding, 0), (5, x_binding, xhi - xlo)))
    program = LaunchProgram.compile("gather", struct.Struct(f"<{len(words)}I"), ctx, [record], ())
    return _OnePlan(ctx, program, checks, limit, itemsizes, spans)


def _row_major(shape: Sequence[int]) -> list[int]:
    """Row-major element strides of ``shape``."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(1, n)
    return strides[::-1]


#: The bytes of the index checks' flag binding (``reserve_index_check``).
_FLAGS_BYTES = 4 * INDEX_CHECK_SLOTS
#: The gather kernel's parameter words before the index checks' slot.
_NWORDS = 12 + 8 + 8 * MAXD


def _box_records(ctx: Any, defines: dict[str, object], scatter: bool, size: int, shape: list[int],
                 sets: list[list[int]], offs: list[int], indices: Sequence[IndexOperand], isizes: list[int],
                 indexed_extent: tuple[int, int], limit: int, win: int | None = None,
                 check: int | None = None) -> list[Record]:
    """The dispatches of one box: one per window of the indexed side (with ``win``, the
    element of the indexed side whose winner is word 0 of the scratch allocation, base
    ``2 + len(indices)``, of a two-pass scatter: u32 ``k`` for element ``win + k``; with
    ``check``, the base of the device-side index checks' flag binding)."""
    count = math.prod(shape)
    rank = len(shape)
    plain_k = 0 if scatter else 1
    x_k = 1 - plain_k
    regions = [Region(0, 0, 0, 0, 0, 0, 0)] * 2
    lo, hi = extent(shape, sets[plain_k])
    lo += offs[plain_k]
    regions[plain_k] = Region(plain_k, lo * size, max(hi + offs[plain_k] - lo, 1) * size, size, 0, 2 + plain_k,
                              offs[plain_k] - lo)
    for k, ix in enumerate(indices):
        lo, hi = extent(shape, sets[2 + k])
        lo += offs[2 + k]
        regions.append(Region(2 + k, lo * isizes[k], max(hi + offs[2 + k] - lo, 1) * isizes[k], isizes[k], 0, 8 + k,
                              offs[2 + k] - lo))
    xlo, xhi = indexed_extent
    chunk = max(1, limit // size)
    dims = []
    for d in range(MAXD):
        if d < rank:
            dims += [shape[d], _i32(sets[0][d]), _i32(sets[1][d]), _i32(sets[-1][d])]
        else:
            dims += [1, 0, 0, 0]
    istr = []
    for d in range(MAXD):
        row = [(_i32(sets[2 + k][d]) if d < rank else 0) if k < len(indices) else 0 for k in range(4)]
        istr += row
    pad4 = lambda v: (list(v) + [0, 0, 0, 0])[:4]  # noqa: E731
    # words 2, 3 (a and b at the box's point 0), 4, 5 (the indexed side's window), 6 (the
    # winner of its first element) and 8 + k (index array k at point 0): patched at replay
    words = tuple([count, rank, 0, 0, 0, 0, 0, _i32(offs[-1]), 0, 0, 0, 0]
                  + pad4([_i32(ix.n) for ix in indices]) + pad4([_i32(ix.mul) for ix in indices]) + dims + istr)
    grid = ctx.fold_grid(-(-count // WG))
    out = []
    for c0 in range(xlo, xhi, chunk):
        c1 = min(xhi, c0 + chunk)
        regions[x_k] = Region(x_k, c0 * size, (c1 - c0) * size, size, 0, 2 + x_k, offs[x_k] - c0)
        extra = []
        if win is not None:  # the winners of elements [c0, c1)
            extra.append(Region(2 + len(indices), (c0 - win) * 4, (c1 - c0) * 4, 4, 0, 6, 0))
        if check is not None:
            extra.append(Region(check, 0, _FLAGS_BYTES, 4, 0, 0, 0))
        out.append(Record(ctx.pipeline("gather", len(regions) + len(extra), defines), defines, words, grid,
                          tuple(regions + extra), firsts=((4, x_k, 0), (5, x_k, c1 - c0))))
    return out


@functools.lru_cache(maxsize=None)
def _cas_store(dtype: str) -> str:
    """WGSL ``fn store_b(o, v)`` storing a packed lane by compare-and-swap."""
    size = storage_type(dtype).itemsize
    lanes, width, mask = (4, 8, 0xFF) if size == 1 else (2, 16, 0xFFFF)
    return snippet("gather/store_cas", {"LANES": lanes, "WIDTH": width, "MASK": mask})


@functools.lru_cache(maxsize=None)
def _range_fn(k: int, dtype: str) -> str:
    """WGSL ``fn idx{k}_in_range(i: u32, n: i32) -> bool``: whether element i of ``ix{k}`` lies
    in [-n, n) (all of its bits: a 64-bit value's high word, an unsigned value's top bit)."""
    size = storage_type(dtype).itemsize
    kind = _kind(dtype)
    if size == 8:
        part = "gather/index_in_range_i64" if kind == "i" else "gather/index_in_range_u64"
    elif size == 4 and kind == "u":
        part = "gather/index_in_range_u32"
    else:
        part = "gather/index_in_range"
    return snippet(part, {"K": k})


def _index_offset_fn(nidx: int, checked: Sequence[bool] = ()) -> str:
    """WGSL ``fn index_offset(at: vec4<u32>) -> u32`` over ``nidx`` index arrays, those of
    ``checked`` range-checked."""
    return _index_offset_code(nidx, tuple(bool(c) for c in checked))


@functools.lru_cache(maxsize=None)
def _index_offset_code(nidx: int, checked: tuple[bool, ...]) -> str:
    terms = []
    for k in range(nidx):
        c = "xyzw"[k]
        if k < len(checked) and checked[k]:
            terms.append(snippet("gather/index_check", {"K": k, "C": c, "BIT": 1 << k}))
        terms.append(snippet("gather/index_term", {"K": k, "C": c}))
    return snippet("gather/index_offset", {"TERMS": "\n".join(terms)})


def gather(backend: Any, dtype: str, shape: Sequence[int], src: int, src_strides: Sequence[int],
           src_extent: tuple[int, int], dst: int, dst_strides: Sequence[int],
           indices: Sequence[IndexOperand]) -> None:
    """``dst[m] = src[m . src_strides + sum_k norm(I_k[m]) * mul_k]`` for every point ``m`` of
    ``shape`` (element strides; ``src``/``dst``/index pointers address point 0). ``src_extent``
    is the [lo, hi) range of element offsets from ``src`` the gathered elements lie in (the
    whole source view), so it may exceed one binding. Index values must have been checked to lie
    in range (negative ones count from the end of their axis: ``IndexOperand.n``).

    Raises BackendError: invalid argument for bad dtypes, strides or pointer ranges, more than
    ``MAXIDX`` index arrays; unsupported for a missing adapter feature.
    """
    _move(backend, False, dtype, shape, src, src_strides, dst, dst_strides, indices, src_extent)


def scatter(backend: Any, dtype: str, shape: Sequence[int], src: int, src_strides: Sequence[int],
            dst: int, dst_strides: Sequence[int], dst_extent: tuple[int, int],
            indices: Sequence[IndexOperand]) -> None:
    """``dst[m . dst_strides + sum_k norm(I_k[m]) * mul_k] = src[m . src_strides]`` for every
    point ``m`` of ``shape`` (the mirror of :func:`gather`; ``dst_extent`` bounds the written
    offsets). With duplicate destinations the last point (row-major order of ``shape``) wins,
    as in NumPy's assignment, on every adapter.

    Raises BackendError as :func:`gather`.
    """
    _move(backend, True, dtype, shape, src, src_strides, dst, dst_strides, indices, dst_extent)
