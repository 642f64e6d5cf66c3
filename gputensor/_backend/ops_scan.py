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

This module validates a call, keeps its launches and replays them; planning (the kernel's sizes,
the planner's tunables, modes, units and defines) lives in ``scan_plan``, the dispatches of a
plan and the reference path in ``scan_steps``.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import invalid_argument, unsupported
from .launch import LaunchProgram, Region
from .layout import strided_span
from . import scan_plan
from .plan_cache import PlanCache
from .scan_plan import (CARRY_NONE, CARRY_REDUCED, CARRY_SCANNED, DTYPES, KERNEL, MODE_COLUMNS, MODE_ROWS,
                        MODE_VECTOR, OPS, VECTOR_STEP, RowDim, _aux_rows, _Plan,
                        _plan, _Side, _Vector, _vectorizable, accumulator_dtype, choose_mode, chunk_length, merge_rows,
                        vector_unit)
from .scan_steps import _WORDS, _placeholder, _run, _steps
from .validate import check_distinct, check_dtype, check_int, check_ints, check_strided_pointer
from .wgsl_types import STORAGE_TYPES, StorageType, storage_type

__all__ = ["CARRY_NONE", "CARRY_REDUCED", "CARRY_SCANNED", "DTYPES", "MODE_COLUMNS", "MODE_ROWS", "MODE_VECTOR", "OPS",
           "VECTOR_STEP", "RowDim", "accumulator_dtype", "choose_mode", "chunk_length", "merge_rows",
           "rows_program", "scan", "planned_scan", "scan_strided", "settings", "vector_unit"]


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
    p = scan_plan  # (read at each call: tests set them on the module)
    return (p.WG, p.BLOCK, p.VECTOR_STEP, p.VECTOR_PREFETCH, p.TARGET_UNITS, p.MAX_REDUCED_UNITS, p.SHORT_AXIS,
            p.NEAR_STRIDE, p.TARGET_INVOCATIONS, p.MAX_SERIAL, p.MIN_CHUNK, MAX_PROGRAM_DISPATCHES)


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
