"""Reductions on the device: the generic typed/strided path and the contract's ``reduce``.

``reduce_strided`` reduces any strided view (element strides, negative or zero allowed) of any
storage dtype over any set of axes, writing the kept dims contiguously or strided.
``reduce_contiguous`` is the BLAS-like contract method (``ComputeBackend.reduce``) built on it.

Ops are data (``REDUCTION_OPS``), in the manner of cupy's ReductionKernel: an identity per
accumulator kind, a combine expression, a post-map, and the *kind* that runs them
(``ReductionKind``: it owns its WGSL kernel, the state of a partial result and its
placeholders; ``PLAIN``: one accumulator, ``reduce_plain``; ``ARG``: value + index,
``reduce_arg``; ``WELFORD``: mean, M2, count, ``reduce_var``). Values are cast to the accumulation dtype (wrapping narrow integers as NumPy does,
rounding to float16), accumulated in its WGSL compute type (float16 accumulates in f32, integer
sums wrap), and the post-mapped result is cast to the destination dtype.

Plan of one call (all host-side, before anything is recorded; cached per backend by the
arguments, so a repeated call only checks its two pointers and records its dispatches):

1. Validate op, dtypes (adapter features), shape/strides/axes; per call, the byte spans the
   source and destination views touch (negative strides included) and their alignment.
2. Canonicalise: drop size-1 dims, flip negative source strides (moving the base, negating the
   destination/index stride), sort each group outermost-first and merge dims that are
   contiguous with respect to every stride of the group; so a contiguous array reduces as
   (kept, reduced) of rank <= 2, with rank-1 index math (no divisions) in the kernel.
3. Split the work so that every binding fits ``backend.max_window_bytes()`` and has at most
   ``MAX_RANK`` dims: over kept dims (independent sub-problems) or over the outermost reduced
   dim (pieces that write partial states).
4. Per piece pick the tile (256 invocations, TX outputs x TY per output): "row" (reduced
   elements innermost in memory: consecutive invocations read consecutive elements of one
   output) or "column" (kept innermost: TX consecutive invocations own consecutive outputs, TY
   slices of the reduced range each); split the reduced range into chunks over several
   workgroups when outputs are few (aiming at the ``reduce_workgroups`` knob). Chunks write partial
   states ``[output][slot]``; a second pass of the same kernel combines the slots of each output
   in slot order and applies the post-map. Within a workgroup the TY partial results combine in
   a fixed tree in workgroup memory (no subgroup operations: their reduction order is not
   specified, and every adapter has workgroup memory). Partitioning depends only on the shapes
   and the adapter's limits: results are bitwise reproducible, and no float atomics are used.
   Packed (1- and 2-byte) outputs are written with an atomicAnd/atomicOr pair on the element's
   lane, so outputs sharing a word may come from different workgroups.

Vector path (reduce_plain's first pass; ``_Planner._vector``): when the reduced range of a piece
is one dim of stride 1 (a contiguous row: full reductions and the last axis of contiguous
arrays, also of offset views such as ``x[1:]``) over an unpacked 4- or 8-byte source (float32,
int32, uint32; float64, int64, uint64) and no prologue, the source is bound a second time as
16-byte vectors over the same window, and each invocation loads ``reduce_vec4_unroll`` vectors per
step into one accumulator per lane; the elements before the first whole vector and after the
last one of each (row, chunk) range (the view's offset modulo a vector is only known per call)
are read as scalars. The row tile then has consecutive invocations on consecutive vectors of
one output and at least ``reduce_vec4_vectors`` vectors each (``_tile_vector``); chunks are whole
unrolled steps. reduce_arg and reduce_var have vector paths of their own (the kinds'
``vector_defines``; knobs ``reduce_vec4_arg``, ``reduce_vec4_var``): argmax/argmin keep a best
value and index per lane (only where the reduced index grows with the address, so each lane sees
its elements in index order); var/std make one pass, merging blocks of vectors with Chan's
update on values shifted by the output's first element (only for a reduction planned in one
piece: its partial states are relative to that element). Column reductions, strided or
multi-dim reduced ranges, packed dtypes and prologues keep the scalar loads. ``configure`` (or the environment
variables named at the knobs) switches and tunes it; the combination order is still fixed by
the shapes (and the view's offset modulo a vector), so results stay bitwise reproducible.
Float max/min combine whole vectors with the plain builtins (``ReductionOp.vector_combine``) and
track NaN apart from the loaded bits (``_Types.vector_defines``); every other op's kernel text is
that of the plain combine.

var/std use the corrected two-pass algorithm inside each chunk (mean, then sums of deviations)
and Chan et al.'s pairwise update across chunks (the vector path: one pass, see above).

Fused elementwise prologue (``prologue=Prologue(...)``, used by ``gputensor._fusion`` for
``sum(a * b)``, ``max(abs(x))``): the source is an elementwise expression over several inputs
instead of an array. The plan treats it as a *virtual* row-major source of ``src_dtype`` (no
binding, never split for window size), and the loads of the first pass evaluate the expression
at the virtual index: every array input is bound once (its whole view must fit one binding
window) and indexed through the joint merged layout of the inputs (one add when every input is
contiguous like the virtual source, else a division per merged dim), scalars come from the
parameters. The combine pass is unchanged. Kernels are cached by the expression's text, so
the same structure with other pointers, strides or scalar values reuses the pipeline.

This module validates the arguments, keeps the plans and is the entry point; the parts live in
``reduce_knobs`` (limits and knobs), ``reduce_ops`` (kinds, op rows, kernel placeholders),
``reduce_geometry`` (dims, tiles, chunks), ``reduce_prologue`` (the fused source),
``reduce_planner`` (splitting into steps) and ``reduce_program`` (checking pointers, recording
and replaying the steps).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .base import ReduceOp
from .errors import invalid_argument, unsupported
from .plan_cache import PlanCache
from .reduce_geometry import _Dim, _View, _canonical, _extent, _row_major
from .reduce_knobs import MAX_COUNT, MAX_RANK, WORKGROUP_SIZE, _knobs, configure, max_count
from .reduce_ops import ARG, PLAIN, REDUCTION_OPS, WELFORD, ReductionKind, ReductionOp, _dtype, _kind_of, _Types
from .reduce_planner import _Planner
from .reduce_program import _Plan
from .reduce_prologue import Prologue, _prologue_code

if TYPE_CHECKING:
    from .webgpu import WebGpuBackend

__all__ = [
    "ARG",
    "MAX_COUNT",
    "MAX_RANK",
    "PLAIN",
    "Prologue",
    "REDUCTION_OPS",
    "ReductionKind",
    "ReductionOp",
    "WELFORD",
    "WORKGROUP_SIZE",
    "configure",
    "max_count",
    "planned_reduce",
    "planned_reduce_fused",
    "reduce_contiguous",
    "reduce_strided",
]


def _as_int(value: Any, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise invalid_argument(f"{what} must be an integer, not {value!r}")
    return int(value)


def _ints(values: Any, what: str) -> tuple[int, ...]:
    try:
        items = tuple(values)
    except TypeError:
        raise invalid_argument(f"{what} must be a sequence of integers, not {values!r}") from None
    return tuple(_as_int(v, f"{what} entry") for v in items)


def _plan(backend: "WebGpuBackend", op: Any, src_dtype: Any, shape: Sequence[int], strides: Sequence[int],
          reduce_axes: Any, dst_dtype: Any, acc_dtype: Any, dst_strides: Sequence[int] | None,
          ddof: Any, prologue: Prologue | None = None) -> _Plan:
    """Validate the arguments (not the pointers) and plan the reduction (with ``prologue``, over
    its virtual row-major source: ``strides`` are ignored)."""
    name = op.value if isinstance(op, ReduceOp) else op
    spec = REDUCTION_OPS.get(name) if isinstance(name, str) else None
    if spec is None:
        raise invalid_argument(f"unknown reduction {op!r}; known: {sorted(REDUCTION_OPS)}")
    src_t = _dtype(backend, src_dtype, "source dtype")
    dst_t = _dtype(backend, dst_dtype, "destination dtype")
    if acc_dtype is None:
        acc_name = {"dst": dst_t.name, "src": src_t.name, "bool": "bool"}[spec.acc]
    else:
        acc_name = acc_dtype
    acc_t = _dtype(backend, acc_name, "accumulation dtype")
    if _kind_of(acc_t) not in spec.acc_kinds:
        raise invalid_argument(f"{spec.name} cannot accumulate in {acc_t.name}")
    spec.kind.check(spec, src_t, acc_t)
    if _kind_of(dst_t) not in spec.dst_kinds:
        raise invalid_argument(f"{spec.name} cannot write {dst_t.name}")
    if isinstance(ddof, (bool, np.bool_)) or not isinstance(ddof, (int, float, np.integer, np.floating)):
        raise invalid_argument(f"ddof must be a real number, not {ddof!r}")
    ddof = float(ddof)
    if not math.isfinite(ddof):
        raise invalid_argument(f"ddof must be finite, not {ddof}")

    shape = _ints(shape, "shape")
    if any(n < 0 for n in shape):
        raise invalid_argument(f"shape {shape} has a negative size")
    pro_code = None
    if prologue is not None:
        strides = tuple(_row_major(shape))
        if math.prod(shape) > max_count():
            raise unsupported(f"a fused source of more than {max_count()} elements is not supported")
        pro_code = _prologue_code(backend, prologue, shape, src_t, spec.kind.prologue_binding)
    strides = _ints(strides, "strides")
    if len(strides) != len(shape):
        raise invalid_argument(f"{len(strides)} strides for a {len(shape)}-d shape")
    ndim = len(shape)
    axes_in = [reduce_axes] if isinstance(reduce_axes, (int, np.integer)) else list(_ints(reduce_axes, "reduce_axes"))
    axes = []
    for a in axes_in:
        a = _as_int(a, "axis")
        if not -ndim <= a < ndim:
            raise invalid_argument(f"axis {a} is out of range for a {ndim}-d array")
        axes.append(a % ndim)
    if len(set(axes)) != len(axes):
        raise invalid_argument(f"repeated axis in {tuple(axes_in)}")
    axes_set = set(axes)
    kept_axes = [a for a in range(ndim) if a not in axes_set]
    red_axes = sorted(axes_set)
    kept_shape = [shape[a] for a in kept_axes]
    if dst_strides is None:
        dst_strides = _row_major(kept_shape)
    else:
        dst_strides = list(_ints(dst_strides, "dst_strides"))
        if len(dst_strides) != len(kept_axes):
            raise invalid_argument(f"{len(dst_strides)} destination strides for {len(kept_axes)} kept dims")
    nkeep = math.prod(kept_shape)
    nred = math.prod(shape[a] for a in red_axes)
    if nred == 0 and spec.nonempty:
        raise invalid_argument(f"zero-size reduction: {spec.name} of an empty range has no identity")
    if nkeep > max_count() or nred > max_count():
        raise unsupported(f"reductions over more than {max_count()} outputs or elements are not supported")

    def span(shp: Sequence[int], std: Sequence[int], itemsize: int) -> tuple[int, int] | None:
        if 0 in shp:
            return None
        lo, hi = _extent([_Dim(n, s, 0) for n, s in zip(shp, std)])
        return lo * itemsize, (hi + 1) * itemsize

    planner = _Planner(_Types(spec, src_t, dst_t, acc_t), nred, ddof, backend.max_window_bytes() - 8,
                       prologue=pro_code, vectors=backend.context.storage_offset_alignment % 16 == 0)
    if nkeep:
        track_index = spec.kind.tracks_index
        red_index = _row_major([shape[a] for a in red_axes])
        kept, src_base, dst_base = _canonical(
            [_Dim(shape[a], strides[a], dst_strides[i]) for i, a in enumerate(kept_axes)], 0, 0
        )
        if nred == 0:  # one empty dim, so that the view's nred is 0 (no dims means 1)
            red, red_base, idx_base = (_Dim(0, 0, 0),), 0, 0
        else:
            red, red_base, idx_base = _canonical(
                [_Dim(shape[a], strides[a], red_index[i] if track_index else 0) for i, a in enumerate(red_axes)],
                0, 0,
            )
        planner.solve(_View(src_base + red_base, dst_base, idx_base, kept, red))
    return _Plan(src_t.itemsize, dst_t.itemsize, span(shape, strides, src_t.itemsize),
                 span(kept_shape, dst_strides, dst_t.itemsize), planner.steps, pro_code)


def reduce_strided(
    backend: "WebGpuBackend",
    op: str | ReduceOp,
    src_ptr: int,
    src_dtype: Any,
    shape: Sequence[int],
    strides: Sequence[int],
    reduce_axes: int | Iterable[int],
    dst_ptr: int,
    dst_dtype: Any,
    *,
    acc_dtype: Any = None,
    dst_strides: Sequence[int] | None = None,
    ddof: float = 0,
    prologue: Prologue | None = None,
) -> None:
    """Reduce a strided view over ``reduce_axes`` and write the kept dims at ``dst_ptr``.

    ``src_ptr`` points at element [0, ..., 0] of a view of ``shape`` with ``strides`` in
    elements (negative and zero allowed); dtypes are names from ``wgsl_types.STORAGE_TYPES``.
    The output has the kept dims in order, row-major contiguous unless ``dst_strides`` (element
    strides, one per kept dim) is given. ``op`` is a name in ``REDUCTION_OPS``: 'sum', 'prod',
    'max', 'min', 'mean', 'all', 'any', 'argmax', 'argmin' (index of the first occurrence in the
    row-major order of the reduced dims; NaN wins), 'var', 'std' (divisor ``count - ddof``,
    clamped at 0). ``acc_dtype`` is the accumulation dtype (default: dst for sum/prod/mean/var/
    std, src for max/min/argmax/argmin, bool for all/any); float16 accumulates in f32, integers
    wrap at the accumulation dtype's width. Over zero elements: sum 0, prod 1, all True,
    any False, mean/var/std NaN; max, min, argmax and argmin raise.

    With ``prologue`` (a :class:`Prologue`) the source is the elementwise expression it
    describes, evaluated inside the reduction's loads: ``src_ptr`` and ``strides`` are ignored,
    ``src_dtype`` is the expression's dtype (the reduction sees exactly the values that storing
    the expression as ``src_dtype`` and reducing that array would). Every array input's view
    must fit one binding window (else BackendError unsupported, before anything is recorded:
    materialise the expression and reduce the array instead).

    Plans are cached per context by the (hashable, plain-int) arguments, so a repeated call
    only checks its pointers and records its dispatches.

    Raises BackendError: invalid argument (unknown op or dtype, op/dtype mismatch, bad shape,
    strides or axes, a view outside its allocation or misaligned, a zero-size reduction for an
    op without identity), unsupported (a 64-bit dtype without the adapter feature, more than
    2**31 - 1 outputs or reduced elements); nothing is recorded then.
    """
    plans = _plans(backend)
    try:
        key = (op, src_dtype, dst_dtype, acc_dtype, tuple(shape), tuple(strides),
               reduce_axes if isinstance(reduce_axes, int) else tuple(reduce_axes),
               None if dst_strides is None else tuple(dst_strides), ddof)
    except TypeError:  # not iterable: the slow path reports it
        key = None
    if key is not None:
        shape, strides, reduce_axes, dst_strides = key[4], key[5], key[6], key[7]
        key = _plan_key(key, prologue)
    plan = plans.get(key) if key is not None else None
    if plan is None:
        plan = _plan(backend, op, src_dtype, shape, strides, reduce_axes, dst_dtype, acc_dtype, dst_strides, ddof,
                     prologue)
        if key is not None:
            _keep_plan(plans, key, plan)
    plan.launch(backend, src_ptr, dst_ptr, prologue)


def _plan_key(key: tuple[Any, ...], prologue: Prologue | None) -> tuple[Any, ...] | None:
    """The plan cache key of a ``reduce_strided`` call from its arguments' ``key`` (op, dtypes,
    shape, strides, axes, dst strides, ddof): with the knobs and the prologue's structure;
    None where an argument is not plain (``_plain_key``) or the structure is not hashable."""
    if not _plain_key(key):  # e.g. True for 1 or 2.0 for 2: equal keys, different meaning
        return None
    key = key + (_knobs(),)
    if prologue is not None:
        try:
            key = key + (prologue.structure(),)
            hash(key)
        except (TypeError, AttributeError):
            return None
    return key


class _KeptReduce:
    """A ``reduce_strided`` plan (no prologue) handed to a caller that replays it
    (``planned_reduce``): valid on the backend it was kept by while the module's knobs are those
    it was planned under (``valid_on``); ``launch(backend, src, dst)`` checks the pointers and
    records it, as ``reduce_strided`` would."""

    __slots__ = ("launch", "_backend", "_knobs")

    def __init__(self, plan: Any, backend: Any, knobs: Any) -> None:
        self.launch = plan.launch
        self._backend = weakref.ref(backend)
        self._knobs = knobs

    def valid_on(self, backend: Any) -> bool:
        """Whether the plan holds on ``backend`` now."""
        return self._backend() is backend and _knobs() == self._knobs


def planned_reduce(backend: Any, op: str, src_dtype: str, shape: tuple[int, ...], strides: tuple[int, ...],
                   reduce_axes: tuple[int, ...], dst_dtype: str, *, acc_dtype: str | None = None,
                   dst_strides: tuple[int, ...] | None = None, ddof: float = 0) -> _KeptReduce | None:
    """The plan an earlier ``reduce_strided`` call (without a prologue) with these arguments
    kept on ``backend``; None when there is none."""
    key = (op, src_dtype, dst_dtype, acc_dtype, tuple(shape), tuple(strides), tuple(reduce_axes),
           None if dst_strides is None else tuple(dst_strides), ddof)
    if not _plain_key(key):
        return None
    knobs = _knobs()
    plan = _plans(backend).get(key + (knobs,))
    if plan is None or plan.prologue is not None:
        return None
    return _KeptReduce(plan, backend, knobs)


class _KeptFusedReduce(_KeptReduce):
    """A ``reduce_strided`` plan with a prologue handed to a caller that replays it
    (``planned_reduce_fused``): ``launch(backend, ptrs, values, dst)`` records it for the
    prologue's array inputs at ``ptrs`` and its scalar values ``values`` (in the order of the
    prologue's inputs), checking the pointers as ``reduce_strided`` would."""

    __slots__ = ()

    def __init__(self, plan: Any, backend: Any, knobs: Any) -> None:
        super().__init__(plan, backend, knobs)
        self.launch = plan.launch_fused


def planned_reduce_fused(backend: Any, op: str, src_dtype: str, shape: tuple[int, ...], strides: tuple[int, ...],
                         reduce_axes: tuple[int, ...], dst_dtype: str, prologue: Prologue, *,
                         acc_dtype: str | None = None, dst_strides: tuple[int, ...] | None = None,
                         ddof: float = 0) -> _KeptFusedReduce | None:
    """The plan an earlier ``reduce_strided`` call with these arguments and a prologue of the
    structure of ``prologue`` kept on ``backend``; None when there is none."""
    key = _plan_key((op, src_dtype, dst_dtype, acc_dtype, tuple(shape), tuple(strides), tuple(reduce_axes),
                     None if dst_strides is None else tuple(dst_strides), ddof), prologue)
    plan = _plans(backend).get(key) if key is not None else None
    if plan is None or plan.prologue is None:
        return None
    return _KeptFusedReduce(plan, backend, key[9])


#: Plans kept per backend (``_plans(backend)``: its dict; ``_keep_plan``: store one).
_PLAN_CACHE = PlanCache(1024)
_plans = _PLAN_CACHE.of
_keep_plan = _PLAN_CACHE.keep
#: First item of the keys of ``reduce_contiguous`` calls in the plan cache (the plain
#: (op, dtype, shape, axis) of a call, next to ``reduce_strided``'s keys of its arguments).
_CONTIGUOUS = "reduce_contiguous"


def _plain_key(key: tuple[Any, ...]) -> bool:
    """Whether a cache key holds only exact types (so equal keys mean identical arguments:
    no bools standing in for ints, no numpy scalars)."""
    op, src, dst, acc, shape, strides, axes, dst_strides, ddof = key
    if not all(type(v) is tuple for v in (shape, strides)) or (type(axes) is not int and type(axes) is not tuple):
        return False
    ints = (*shape, *strides, *((axes,) if type(axes) is int else axes), *(dst_strides or ()))
    return (
        all(type(v) is int for v in ints)
        and type(op) in (str, ReduceOp)
        and type(src) is str and type(dst) is str and (acc is None or type(acc) is str)
        and type(ddof) in (int, float)
    )


def reduce_contiguous(backend: "WebGpuBackend", op: ReduceOp, input: int, output: int,
                      shape: Sequence[int], axis: int, *, dtype: str = "float32") -> None:
    """``ComputeBackend.reduce``: reduce a contiguous row-major array of ``shape`` over ``axis``
    (negative counts from the end) into the contiguous ``output`` of ``shape`` without ``axis``.

    ``dtype`` is 'float16', 'float32' or 'float64' (float16 accumulates in f32). Over an empty
    axis SUM gives 0, PROD 1, MEAN NaN; MAX and MIN raise.

    Raises BackendError: invalid argument (unknown op or dtype, bad shape, axis out of range,
    pointers outside their allocations, empty MAX/MIN), unsupported (dtype without the adapter
    feature).
    """
    # The steady state: a call of a structure seen before goes from its plain (exact-type)
    # arguments to the cached plan, which checks the pointers and records its dispatches.
    key = None
    if type(op) is ReduceOp and type(axis) is int and type(dtype) is str:
        if type(shape) is not tuple:
            shape = tuple(shape) if type(shape) is list else shape
        if type(shape) is tuple:
            for n in shape:
                if type(n) is not int:
                    break
            else:
                key = (_CONTIGUOUS, _knobs(), op, dtype, shape, axis)
                plan = _plans(backend).get(key)
                if plan is not None:
                    plan.launch(backend, input, output)
                    return
    if not isinstance(op, ReduceOp):
        try:
            op = ReduceOp(op)
        except ValueError:
            raise invalid_argument(f"op must be a ReduceOp, not {op!r}") from None
    backend.float_dtype(dtype)
    shape = _ints(shape, "shape")
    if any(n < 0 for n in shape):
        raise invalid_argument(f"shape {shape} has a negative size")
    axis = _as_int(axis, "axis")
    if not -len(shape) <= axis < len(shape):
        raise invalid_argument(f"axis {axis} is out of range for shape {shape}")
    plan = _plan(backend, op.value, dtype, shape, _row_major(shape), (axis,), dtype, None, None, 0)
    if key is not None:  # (only a valid structure is cached: the checks above passed)
        _keep_plan(_plans(backend), key, plan)
    plan.launch(backend, input, output)
