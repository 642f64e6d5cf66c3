"""Array API statistical functions: sum, prod, max, min, mean, var, std, cumulative_sum,
cumulative_prod.

Reductions run on the backend's strided reduction (``ops_reduce.reduce_strided`` through
``_function_kernels.reduce``): any axes, any strides, no copy of the input. Scans run on the
backend's strided parallel scan (``ops_scan.scan_strided``): the input is read in place through
its strides along any axis (views of any layout included), converted to the accumulation dtype on
load, and every element of the new contiguous result is written once; nothing is copied.

Dtypes (the spec's rules, as array-api-strict): ``sum``/``prod``/``cumulative_*`` of a signed
integer give the default integer dtype (int64), of an unsigned integer the unsigned integer of
the same width (uint64), of a float the same float; ``dtype=`` overrides (the input is cast
first). float16 always accumulates in float32. ``mean``/``var``/``std`` need a floating dtype;
``max``/``min`` a real numeric one; boolean inputs raise ``TypeError`` except where the spec
allows them.

Errors: ``TypeError`` for bad dtypes or non-arrays, :class:`~gputensor._shapes.AxisError` for
out-of-range axes, ``ValueError`` for repeated axes, ``max``/``min`` over zero elements and a
missing ``axis`` of a cumulative function on an array with more than one dimension.
"""

from __future__ import annotations

import math

from . import _dispatch
from . import _function_kernels as kernels
from . import _fusion_rows
from ._array_object import GpuArray
from ._dtypes import DTYPE_CATEGORIES, DTYPES_BY_NAME, DType
from ._manipulation_functions import _check_array, _copy_contiguous, _view, reshape
from ._shapes import contiguous_strides, normalize_axes, normalize_axis, size_of

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

_NUMERIC = frozenset(DTYPE_CATEGORIES["numeric"])  # (membership tests: one hash, not a scan)
_FLOATING = frozenset(DTYPE_CATEGORIES["real floating"])  # (membership tests: one hash, not a scan)


def _check_dtype_arg(dtype: object) -> DType:
    if not isinstance(dtype, DType):
        raise TypeError(f"dtype must be a gputensor dtype, not {dtype!r}")
    if not kernels.supports_dtype(dtype):
        raise TypeError(f"{dtype.name} needs the adapter feature {dtype.feature!r}, which this device lacks")
    return dtype


def _sum_dtype(x_dtype: DType, dtype: DType | None) -> DType:
    """Result dtype of sum/prod/cumulative_* (spec: default int for small signed ints, etc.)."""
    if dtype is not None:
        return _check_dtype_arg(dtype)
    if x_dtype.kind == "i":
        return kernels.default_int()
    if x_dtype.kind == "u":
        return kernels.default_uint()
    return x_dtype


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


def _reduce(op: str, x: GpuArray, axis, keepdims: bool, out_dtype: DType,
            acc_dtype: DType | None = None, empty_value: object = None, *, ddof: float = 0) -> GpuArray:
    """Common path: normalise axes, handle empty cases, run the kernel, apply keepdims."""
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
    if keepdims and op in _fusion_rows.STATISTICS:  # a pending row statistic (fusion on, floats)
        pending = _fusion_rows.lazy_statistic(op, x, axes, out_dtype, acc_dtype)
        if pending is not None:
            return pending
    result = kernels.reduce(op, x, axes, out_dtype, acc_dtype, ddof=ddof)
    if keepdims:
        result = _view(result, out_shape, contiguous_strides(out_shape))
    return result


def sum(x: GpuArray, /, *, axis: int | tuple[int, ...] | None = None, dtype: DType | None = None,
        keepdims: bool = False) -> GpuArray:
    """Sum over ``axis`` (None: all axes). Numeric dtypes only (``TypeError`` otherwise); result
    dtype per the spec (see the module docstring); zero elements sum to 0."""
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
    _check_array(x)
    if x.dtype not in _NUMERIC:
        raise TypeError(f"max needs a real numeric dtype, got {x.dtype}")
    return _reduce("max", x, axis, keepdims, x.dtype)


def min(x: GpuArray, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> GpuArray:
    """Minimum over ``axis`` (NaN propagates). Real numeric dtypes only (``TypeError``);
    ``ValueError`` when reducing zero elements."""
    _check_array(x)
    if x.dtype not in _NUMERIC:
        raise TypeError(f"min needs a real numeric dtype, got {x.dtype}")
    return _reduce("min", x, axis, keepdims, x.dtype)


def mean(x: GpuArray, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> GpuArray:
    """Arithmetic mean over ``axis`` (float16 accumulates in float32). Floating dtypes only
    (``TypeError``); zero elements give NaN."""
    _check_array(x)
    if x.dtype not in _FLOATING:
        raise TypeError(f"mean needs a floating dtype, got {x.dtype}")
    return _reduce("mean", x, axis, keepdims, x.dtype, _acc_dtype(x.dtype), math.nan)


def _var(op: str, x: GpuArray, axis, correction: float, keepdims: bool) -> GpuArray:
    _check_array(x)
    if x.dtype not in _FLOATING:
        raise TypeError(f"{op} needs a floating dtype, got {x.dtype}")
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


def _cumulative(op: str, x: GpuArray, axis: int | None, dtype: DType | None, include_initial: bool) -> GpuArray:
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
        kernels.scan_axis(op, x, ax, dst, kernels.scan_dtype(out_dtype))
    return out


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

