"""Array API statistical functions: sum, prod, max, min, mean, var, std, cumulative_sum,
cumulative_prod.

Reductions run on the backend's strided reduction (``ops_reduce.reduce_strided`` through
``_function_kernels.reduce``): any axes, any strides, no copy of the input. Scans run on the
backend's strided parallel scan (``ops_scan.scan_strided``): the input is read in place through
its strides along any axis (views of any layout included), converted to the accumulation dtype on
load, and every element of the new contiguous result is written once; nothing is copied.

Dtypes (the spec's rules, as array-api-strict): ``sum``/``prod``/``cumulative_*`` of a signed
integer give the default integer dtype (int64), of an unsigned integer the unsigned integer of
the same width (uint64), of a float or complex the same dtype; ``dtype=`` overrides (the input is
cast first). float16 always accumulates in float32, complex in complex (the reduction kernels'
complex accumulator; complex scans as described at ``cumulative_sum``). ``mean`` needs a floating
dtype (complex included), ``var``/``std`` a real floating one; ``max``/``min`` a real numeric
one; boolean inputs raise ``TypeError`` except where the spec allows them.

Errors: ``TypeError`` for bad dtypes or non-arrays, :class:`~gputensor._shapes.AxisError` for
out-of-range axes, ``ValueError`` for repeated axes, ``max``/``min`` over zero elements and a
missing ``axis`` of a cumulative function on an array with more than one dimension.
"""

from __future__ import annotations

import math

from . import _complex_views, _dispatch, _reduce_split
from . import _function_kernels as kernels
from . import _fusion_rows
from ._fusion import fusion_enabled
from ._array_object import GpuArray
from ._devices import DEFAULT_DEVICE
from ._dtypes import DTYPE_CATEGORIES, DTYPES_BY_NAME, DType, as_dtype
from ._elementwise_functions import multiply
from ._manipulation_functions import _check_array, _copy_contiguous, _view, reshape
from ._shapes import contiguous_strides, normalize_axes, normalize_axis, size_of
from ._backend import config, ops_reduce, ops_scan
from ._fusion import leaf_ptr
from ._kept import KeptCall

__all__ = [
    "cumulative_prod",
    "cumulative_sum",
    "max",
    "mean",
    "min",
    "prod",
    "std",
    "sum",
    "var",
]

# (membership tests against frozensets: one hash, not a scan)
_NUMERIC = frozenset(DTYPE_CATEGORIES["numeric"])
_REAL_NUMERIC = frozenset(DTYPE_CATEGORIES["real numeric"])
_FLOATING = frozenset(DTYPE_CATEGORIES["floating"])
_REAL_FLOATING = frozenset(DTYPE_CATEGORIES["real floating"])


def _check_dtype_arg(dtype: object) -> DType:
    """The ``dtype=`` argument as a dtype of the current device; ``TypeError`` for an unknown
    one, ``UnsupportedDTypeError`` (a ``TypeError``) naming the missing adapter feature and the
    conversion for one the device lacks, as the creation functions raise."""
    return DEFAULT_DEVICE.check_dtype(as_dtype(dtype))


def _sum_dtype(x_dtype: DType, dtype: DType | None) -> DType:
    """Result dtype of sum/prod/cumulative_* (spec: default int for small signed ints, etc.)."""
    if dtype is not None:
        return _check_dtype_arg(dtype)
    if x_dtype.kind == "i":
        default = kernels.default_int()
    elif x_dtype.kind == "u":
        default = kernels.default_uint()
    else:
        return x_dtype
    return x_dtype if x_dtype.itemsize > default.itemsize else default  # (emulated int64 stays)


def _acc_dtype(dtype: DType) -> DType:
    """Accumulation dtype: a float in its dtype row's accumulator (float16 in float32), everything
    else in itself."""
    return DTYPES_BY_NAME[dtype.info.accumulator] if dtype.kind == "f" else dtype


def _out_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if d in axes else n for d, n in enumerate(shape))
    return tuple(n for d, n in enumerate(shape) if d not in axes)


def _filled(shape: tuple[int, ...], value: object, dtype: DType) -> GpuArray:
    out = GpuArray._empty(shape, dtype)
    _dispatch.fill(out, value)
    return out


class _ReducePlan(KeptCall):
    """What ``_reduce`` computed for one call structure (op, ``x``'s dtype, shape and strides,
    the axis argument, keepdims, the dtypes, ddof) that ran the reduction kernel: the sorted
    axes, the kernel's output (the ``KeptCall`` layout, with the backend's kept plan,
    ``ops_reduce.planned_reduce``, taken after the first run) and the keepdims view (None
    without). A repeated call replays the kept plan (``replay(leaf_ptr(x))``) and returns
    ``result`` of it; ``run`` is the full path."""

    __slots__ = ("axes", "view")

    def __init__(self, axes: tuple[int, ...], x_shape: tuple[int, ...], out_dtype: DType,
                 view: tuple[int, ...] | None) -> None:
        self.axes = tuple(sorted(axes))
        shape = tuple(n for d, n in enumerate(x_shape) if d not in self.axes)
        super().__init__(shape, contiguous_strides(shape), out_dtype)
        self.view = None if view is None else (view, contiguous_strides(view))

    def result(self, out: GpuArray) -> GpuArray:
        """The kernel's output ``out`` as the call's result (the keepdims view)."""
        return out if self.view is None else _view(out, *self.view)

    def run(self, op: str, x: GpuArray, out_dtype: DType, acc_dtype: DType | None, ddof: float) -> GpuArray:
        """The reduction of the array ``x`` (not lazy) into a new array by the reduction kernel
        (``op``, the dtypes and ``ddof`` are those of the plan's key), its plan kept where the
        backend kept one."""
        if self.dtype is not out_dtype:  # (``argmax``'s index dtype: the current device's)
            self.dtype, self.nbytes = out_dtype, size_of(self.shape) * out_dtype.itemsize
            self.hold(None)
        out = self.alloc()
        _dispatch.reduce_fused(op, x, self.axes, out, acc_dtype=acc_dtype, ddof=ddof)
        if type(x) is GpuArray:
            self.hold(_dispatch.call(ops_reduce.planned_reduce, op, x.dtype.name, tuple(x.shape),
                                     tuple(x._strides), self.axes, out.dtype.name,
                                     acc_dtype=None if acc_dtype is None else acc_dtype.name,
                                     dst_strides=tuple(out._strides), ddof=ddof))
        return self.result(out)


#: (op, x: dtype name, shape, strides; axis, keepdims, dtype names, ddof) -> ``_ReducePlan``.
_REDUCE_PLANS: dict[tuple[object, ...], _ReducePlan] = {}
#: (op, x's dtype name and shape, axis) of a pending row statistic (``keepdims=True``, fusion on,
#: the result of x's dtype; the accumulation dtype follows from the op) -> its
#: ``_fusion_rows.StatPlan``.
_STAT_PLANS: dict[tuple[object, ...], _fusion_rows.StatPlan] = {}


def _reduce_key(op: str, x: GpuArray, axis: object, keepdims: bool, out_dtype: DType,
                acc_dtype: DType | None, ddof: float) -> tuple[object, ...] | None:
    """The ``_REDUCE_PLANS`` key of a call, or None where no plan applies (a lazy ``x``, a
    pending row statistic, an unhashable axis)."""
    if type(x) is not GpuArray or (keepdims and op in _fusion_rows.STATISTICS and fusion_enabled()):
        return None
    if not (axis is None or type(axis) is int
            or (type(axis) is tuple and all(type(a) is int for a in axis))):  # (True == 1: no bools)
        return None
    if type(keepdims) is not bool or type(ddof) not in (int, float):
        return None
    return (op, x._dtype.name, x._shape, x._strides, axis, keepdims, out_dtype.name,
            None if acc_dtype is None else acc_dtype.name, ddof)


def _kept_statistic(op: str, x: object, axis: object) -> GpuArray | None:
    """``op(x, axis=axis, keepdims=True)`` as a pending row statistic made from its kept plan
    (a call structure that ``_reduce`` checked before, under the same knobs, with fusion on),
    or None: the public function then checks its arguments and goes on to ``_reduce``."""
    if (not fusion_enabled() or not isinstance(x, GpuArray)
            or not (type(axis) is int or axis is None
                    or (type(axis) is tuple and all(type(a) is int for a in axis)))):  # (no bools)
        return None
    stat = _STAT_PLANS.get((op, x._dtype.name, x._shape, axis))
    if stat is None or stat.generation != config.generation:
        return None
    return _fusion_rows.pending_statistic(stat, x)


def _reduce(op: str, x: GpuArray, axis, keepdims: bool, out_dtype: DType,
            acc_dtype: DType | None = None, empty_value: object = None, *, ddof: float = 0) -> GpuArray:
    """Common path: normalise axes, handle empty cases, run the kernel, apply keepdims (a
    repeated call structure replays its ``_ReducePlan``). A reduction with more outputs or
    reduced elements than one dispatch takes runs in pieces (``_reduce_split``; no plan). The
    plan of a pending row statistic is kept (``_STAT_PLANS``, see ``_kept_statistic``)."""
    stat_key = None
    if (keepdims is True and op in _fusion_rows.STATISTICS and out_dtype is x._dtype
            and (type(axis) is int or axis is None
                 or (type(axis) is tuple and all(type(a) is int for a in axis)))):  # (no bools)
        stat_key = (op, x._dtype.name, x._shape, axis)
    key = _reduce_key(op, x, axis, keepdims, out_dtype, acc_dtype, ddof)
    if key is not None:
        plan = _REDUCE_PLANS.get(key)
        if plan is not None:
            out = None if plan.valid_on is None else plan.replay(leaf_ptr(x))
            if out is None:
                return plan.run(op, x, out_dtype, acc_dtype, ddof)
            return out if plan.view is None else _view(out, *plan.view)
    axes = normalize_axes(axis, x.ndim)
    out_shape = _out_shape(x.shape, axes, keepdims)
    if empty_value is None and any(x.shape[d] == 0 for d in axes):
        raise ValueError(f"{op} of zero elements has no identity: a reduced axis has size 0")
    if size_of(out_shape) == 0:
        return GpuArray._empty(out_shape, out_dtype)
    if not axes and op not in ("var", "std"):
        return _copy_contiguous(x, out_dtype)
    if size_of(x.shape) == 0:  # reducing zero elements into a non-empty result
        if empty_value is None:
            raise ValueError(f"{op} of zero elements has no identity: the reduced axes are empty")
        return _filled(out_shape, empty_value, out_dtype)
    count = _reduce_split.limit()
    if size_of(x.shape) > count and _reduce_split.needs_split(x.shape, axes, count):
        result = _reduce_split.reduce(op, x, axes, out_dtype, acc_dtype, ddof)
        return _view(result, out_shape, contiguous_strides(out_shape)) if keepdims else result
    if keepdims and op in _fusion_rows.STATISTICS:  # a pending row statistic (fusion on, floats)
        stat = _fusion_rows.stat_plan(op, x, axes, out_dtype, acc_dtype)
        if stat is not None:
            if stat_key is not None:
                _dispatch.cache_put(_STAT_PLANS, stat_key, stat)
            return _fusion_rows.pending_statistic(stat, x)
    if key is not None:
        plan = _ReducePlan(axes, x.shape, out_dtype, out_shape if keepdims else None)
        _dispatch.cache_put(_REDUCE_PLANS, key, plan)
        return plan.run(op, x, out_dtype, acc_dtype, ddof)
    result = kernels.reduce(op, x, axes, out_dtype, acc_dtype, ddof=ddof)
    if keepdims:
        result = _view(result, out_shape, contiguous_strides(out_shape))
    return result


def sum(x: GpuArray, /, *, axis: int | tuple[int, ...] | None = None, dtype: DType | None = None,
        keepdims: bool = False) -> GpuArray:
    """Sum over ``axis`` (None: all axes). Numeric dtypes only (``TypeError`` otherwise); result
    dtype per the spec (see the module docstring); zero elements sum to 0."""
    if keepdims is True and dtype is None:
        pending = _kept_statistic("sum", x, axis)
        if pending is not None:
            return pending
    _check_array(x)
    if x.dtype not in _NUMERIC:
        raise TypeError(f"sum needs a numeric dtype, got {x.dtype}")
    out = _sum_dtype(x.dtype, dtype)
    return _reduce("sum", x, axis, keepdims, out, _acc_dtype(out), 0)


def prod(x: GpuArray, /, *, axis: int | tuple[int, ...] | None = None, dtype: DType | None = None,
         keepdims: bool = False) -> GpuArray:
    """Product over ``axis``; dtypes as :func:`sum`; zero elements give 1."""
    _check_array(x)
    if x.dtype not in _NUMERIC:
        raise TypeError(f"prod needs a numeric dtype, got {x.dtype}")
    out = _sum_dtype(x.dtype, dtype)
    return _reduce("prod", x, axis, keepdims, out, _acc_dtype(out), 1)


def max(x: GpuArray, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> GpuArray:
    """Maximum over ``axis`` (NaN propagates). Real numeric dtypes only (``TypeError``);
    ``ValueError`` when reducing zero elements."""
    if keepdims is True:
        pending = _kept_statistic("max", x, axis)
        if pending is not None:
            return pending
    _check_array(x)
    if x.dtype not in _REAL_NUMERIC:
        raise TypeError(f"max needs a real numeric dtype, got {x.dtype}")
    return _reduce("max", x, axis, keepdims, x.dtype)


def min(x: GpuArray, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> GpuArray:
    """Minimum over ``axis`` (NaN propagates). Real numeric dtypes only (``TypeError``);
    ``ValueError`` when reducing zero elements."""
    if keepdims is True:
        pending = _kept_statistic("min", x, axis)
        if pending is not None:
            return pending
    _check_array(x)
    if x.dtype not in _REAL_NUMERIC:
        raise TypeError(f"min needs a real numeric dtype, got {x.dtype}")
    return _reduce("min", x, axis, keepdims, x.dtype)


def mean(x: GpuArray, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> GpuArray:
    """Arithmetic mean over ``axis`` (float16 accumulates in float32; complex in complex).
    Floating dtypes only, complex included (``TypeError``); zero elements give NaN (complex:
    NaN + NaN j)."""
    if keepdims is True:
        pending = _kept_statistic("mean", x, axis)
        if pending is not None:
            return pending
    _check_array(x)
    if x.dtype not in _FLOATING:
        raise TypeError(f"mean needs a floating dtype, got {x.dtype}")
    empty = complex(math.nan, math.nan) if x.dtype.kind == "c" else math.nan
    return _reduce("mean", x, axis, keepdims, x.dtype, _acc_dtype(x.dtype), empty)


def _var(op: str, x: GpuArray, axis, correction: float, keepdims: bool) -> GpuArray:
    _check_array(x)
    if x.dtype not in _REAL_FLOATING:
        raise TypeError(f"{op} needs a real floating dtype, got {x.dtype}")
    if isinstance(correction, bool) or not isinstance(correction, (int, float)):
        raise TypeError(f"correction must be a real number, not {type(correction).__name__}")
    if correction < 0:
        raise ValueError(f"correction must be non-negative, got {correction}")
    return _reduce(op, x, axis, keepdims, x.dtype, _acc_dtype(x.dtype), math.nan, ddof=correction)


def var(x: GpuArray, /, *, axis: int | tuple[int, ...] | None = None, correction: int | float = 0.0,
        keepdims: bool = False) -> GpuArray:
    """Variance over ``axis`` with ``correction`` degrees of freedom removed (divisor
    ``n - correction`` clamped at 0, so inf/NaN as NumPy when it is <= 0). The backend computes a
    corrected two-pass variance per chunk and merges chunks with Chan et al.'s update (float16 in
    float32). Floating dtypes only (``TypeError``); ``ValueError`` for a negative correction."""
    return _var("var", x, axis, correction, keepdims)


def std(x: GpuArray, /, *, axis: int | tuple[int, ...] | None = None, correction: int | float = 0.0,
        keepdims: bool = False) -> GpuArray:
    """Standard deviation: the square root of :func:`var` (same arguments and errors)."""
    return _var("std", x, axis, correction, keepdims)


#: (op, x: dtype, shape, strides; axis, dtype) -> the ``KeptCall`` of a ``cumulative_sum`` /
#: ``cumulative_prod`` (real dtypes, no initial element) whose backend scan was kept
#: (``ops_scan.planned_scan``); every element of its result is written.
_SCAN_PLANS: dict[tuple[object, ...], KeptCall] = {}


def _cumulative(op: str, x: GpuArray, axis: int | None, dtype: DType | None, include_initial: bool) -> GpuArray:
    key = None
    if type(x) is GpuArray and (axis is None or type(axis) is int) and include_initial is False \
            and (dtype is None or type(dtype) is DType):
        key = (op, x._dtype, x._shape, x._strides, axis, dtype)
        plan = _SCAN_PLANS.get(key)
        if plan is not None:
            res = plan.replay(x._ptr)
            if res is not None:
                return res
    _check_array(x)
    if x.dtype not in _NUMERIC:
        raise TypeError(f"cumulative_{op} needs a numeric dtype, got {x.dtype}")
    if not isinstance(include_initial, bool):
        raise TypeError("include_initial must be a bool")
    if x.ndim == 0:
        x = reshape(x, (1,))
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"axis must be given for cumulative_{op} of an array with more than one dimension")
        axis = 0
    ax = normalize_axis(axis, x.ndim)
    out_dtype = _sum_dtype(x.dtype, dtype)
    out_shape = x.shape[:ax] + (x.shape[ax] + int(include_initial),) + x.shape[ax + 1:]
    out = GpuArray._empty(out_shape, out_dtype, zero=False)  # every element is written below
    if out.size == 0:
        return out
    strides = out._strides
    dst = out
    if include_initial:
        first = _view(out, out_shape[:ax] + (1,) + out_shape[ax + 1:], strides)
        _dispatch.fill(first, 0 if op == "sum" else 1)
        dst = _view(out, x.shape, strides, strides[ax])
    if x.size:
        if out_dtype.kind == "c":
            _complex_scan(op, x, ax, dst)
        else:
            real = x.dtype.kind != "c"
            if not real:  # the input is cast first: its real part
                x = _complex_views.part(x, 0)
            acc = kernels.scan_dtype(out_dtype)
            kernels.scan_axis(op, x, ax, dst, acc)
            if key is not None and real and x.ndim and dst is out:
                kept = _dispatch.call(ops_scan.planned_scan, op, x.dtype.name, tuple(x.shape), tuple(x._strides),
                                      ax, out.dtype.name, tuple(out._strides), acc_dtype=acc.name)
                if kept is not None:
                    _dispatch.cache_put(_SCAN_PLANS, key, KeptCall.like(out, kept))
    return out


def _complex_scan(op: str, x: GpuArray, ax: int, dst: GpuArray) -> None:
    """``dst`` (complex, x's shape) = the inclusive scan of ``x`` along ``ax``.

    A sum is the sums of the parts: one real scan per part, read and written through the parts'
    views (a real ``x`` gives the real part; the imaginary part is 0). A product doubles the
    distance: ``dst`` starts as ``x`` and ``dst[i] *= dst[i - s]`` for ``s = 1, 2, 4, ...``
    (Hillis-Steele, log2(n) complex multiply kernels over views along the axis)."""
    parts = [_complex_views.part(dst, k) for k in (0, 1)]
    if op == "sum":
        acc = kernels.scan_dtype(parts[0].dtype)
        if x.dtype.kind == "c":
            for k in (0, 1):
                kernels.scan_axis("sum", _complex_views.part(x, k), ax, parts[k], acc)
        else:
            kernels.scan_axis("sum", x, ax, parts[0], acc)
            _dispatch.fill(parts[1], 0)
        return
    _dispatch.copy_into(dst, x)
    n = x.shape[ax]
    step = 1
    while step < n:
        shape = dst.shape[:ax] + (n - step,) + dst.shape[ax + 1:]
        head = _view(dst, shape, dst._strides)
        tail = _view(dst, shape, dst._strides, step * dst._strides[ax])
        _dispatch.copy_into(tail, multiply(tail, head))
        step *= 2


def cumulative_sum(x: GpuArray, /, *, axis: int | None = None, dtype: DType | None = None,
                   include_initial: bool = False) -> GpuArray:
    """Inclusive cumulative sum along ``axis`` (optional for 0-d/1-d input) on a parallel GPU scan;
    ``include_initial`` prepends a 0. Dtypes as :func:`sum` (float16 accumulates in float32).
    ``x`` (any view: transposed, negative-step, broadcast) is read in place through its strides
    and converted to the accumulation dtype as it is loaded -- the same as casting it to ``dtype``
    first, except that a wider float input summed with ``dtype=float16`` is not rounded to float16
    element by element before accumulating. The result is a new C-contiguous array; nothing else
    is allocated (rows longer than one scan unit add a small array of block totals).
    ``TypeError`` for non-numeric dtypes, ``ValueError`` for a missing axis on N-d input."""
    return _cumulative("sum", x, axis, dtype, include_initial)


def cumulative_prod(x: GpuArray, /, *, axis: int | None = None, dtype: DType | None = None,
                    include_initial: bool = False) -> GpuArray:
    """Inclusive cumulative product along ``axis``; ``include_initial`` prepends a 1. As
    :func:`cumulative_sum` otherwise."""
    return _cumulative("prod", x, axis, dtype, include_initial)

