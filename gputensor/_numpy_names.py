"""NumPy's names and signatures for namespace functions: the table behind ``gt.absolute``,
``gt.cumsum``, ..., NumPy's protocols (``np.exp(x)`` on a gputensor array) and the array methods.

Two tables: :data:`ALIASES` (a NumPy name for a namespace function that takes the same
arguments) and :data:`ADAPTERS` (functions with NumPy's signature where NumPy's arguments differ
from the Array API's: ``cumsum`` flattens without an axis, ``transpose`` reverses the axes,
``unique`` returns what its flags ask for, ...). :func:`install` builds them on the namespace.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import _creation_functions as _creation
from . import _devices, _dispatch, _dtypes
from . import _sorting_functions as _sort
from . import _elementwise_functions as _ew
from . import _indexing_functions as _index
from . import _linear_algebra_functions as _la
from . import _manipulation_functions as _manip
from . import _searching_functions as _search
from . import _set_functions as _sets
from . import _statistical_functions as _stats
from . import _utility_functions as _utility
from ._array_object import GpuArray

__all__ = ["ALIASES", "ADAPTERS", "install"]

#: NumPy name -> the namespace function of the same arguments.
ALIASES: dict[str, str] = {
    "absolute": "abs",
    "arccos": "acos",
    "arccosh": "acosh",
    "arcsin": "asin",
    "arcsinh": "asinh",
    "arctan": "atan",
    "arctan2": "atan2",
    "arctanh": "atanh",
    "power": "pow",
    "left_shift": "bitwise_left_shift",
    "right_shift": "bitwise_right_shift",
    "invert": "bitwise_invert",
    "bitwise_not": "bitwise_invert",
    "true_divide": "divide",
    "mod": "remainder",
    "conjugate": "conj",
    "rint": "round",
    "radians": "deg2rad",
    "amax": "max",
    "amin": "min",
    "concatenate": "concat",
}


def _flat_or(x: GpuArray, axis: int | None) -> tuple[GpuArray, int]:
    """``x`` flattened with axis 0 when ``axis`` is None (NumPy's rule for cumsum, ...)."""
    if axis is None:
        return _manip.reshape(x, (-1,)), 0
    return x, operator.index(axis)


def cumsum(a: GpuArray, axis: int | None = None, dtype: Any = None) -> GpuArray:
    """NumPy's ``cumsum``: ``cumulative_sum``, over the flattened array without ``axis``."""
    x, ax = _flat_or(a, axis)
    return _stats.cumulative_sum(x, axis=ax, dtype=dtype)


def cumprod(a: GpuArray, axis: int | None = None, dtype: Any = None) -> GpuArray:
    """NumPy's ``cumprod``: ``cumulative_prod``, over the flattened array without ``axis``."""
    x, ax = _flat_or(a, axis)
    return _stats.cumulative_prod(x, axis=ax, dtype=dtype)


def transpose(a: GpuArray, axes: Sequence[int] | None = None) -> GpuArray:
    """NumPy's ``transpose``: ``permute_dims``, reversing the axes when ``axes`` is None."""
    if axes is None:
        axes = tuple(range(a.ndim))[::-1]
    return _manip.permute_dims(a, tuple(axes))


def swapaxes(a: GpuArray, axis1: int, axis2: int) -> GpuArray:
    """A view with ``axis1`` and ``axis2`` exchanged (``AxisError`` when out of range)."""
    axes = list(range(a.ndim))
    i, j = (operator.index(v) for v in (axis1, axis2))
    for v in (i, j):
        if not -a.ndim <= v < a.ndim:
            _manip.permute_dims(a, (v,) * a.ndim)  # raises NumPy's AxisError
    axes[i], axes[j] = axes[j], axes[i]
    return _manip.permute_dims(a, tuple(axes))


def ravel(a: GpuArray, order: str = "C") -> GpuArray:
    """The values as a 1-D array (a view when possible); only ``order='C'``."""
    if order != "C":
        raise ValueError(f"gputensor arrays ravel in C order only, not order={order!r}")
    return _manip.reshape(a, (-1,))


def around(a: GpuArray, decimals: int = 0) -> GpuArray:
    """NumPy's ``round``: half to even at ``decimals`` places (scaled by ``10**decimals`` as
    NumPy does for non-zero ``decimals``)."""
    decimals = operator.index(decimals)
    if decimals == 0:
        return _ew.round(a)
    if a.dtype.kind in "iub":
        return a if decimals > 0 else _ew.multiply(_ew.round(_ew.divide(a, 10.0 ** -decimals)), 10.0 ** -decimals)
    scale = 10.0 ** decimals
    return _ew.divide(_ew.round(_ew.multiply(a, scale)), scale)


def clip(a: GpuArray, a_min: Any = None, a_max: Any = None, *, min: Any = None,
         max: Any = None) -> GpuArray:
    """NumPy's ``clip`` (``a_min``/``a_max`` or ``min``/``max``)."""
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    return _ew.clip(a, lo, hi)


def dot(a: GpuArray, b: GpuArray) -> GpuArray:
    """NumPy's ``dot``: a product with a 0-d operand, ``matmul`` for 1-D and 2-D operands, else
    the sum over ``a``'s last and ``b``'s second-to-last axis (``tensordot``)."""
    if a.ndim == 0 or b.ndim == 0:
        return _ew.multiply(a, b)
    if a.ndim <= 2 and b.ndim <= 2:
        return _la.matmul(a, b)
    return _la.tensordot(a, b, axes=([a.ndim - 1], [builtins.max(b.ndim - 2, 0)]))


def where(condition: GpuArray, x: Any = None, y: Any = None) -> Any:
    """NumPy's ``where``: ``nonzero`` with only the condition, else the namespace ``where``."""
    if x is None and y is None:
        return _search.nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    return _search.where(condition, x, y)


def unique(ar: GpuArray, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: int | None = None, *, equal_nan: bool = True,
           sorted: bool = True) -> Any:
    """NumPy's ``unique`` of the flattened array: the sorted values, plus the first indices,
    the inverse (of ``ar``'s shape) and the counts its flags ask for. ``TypeError`` for
    ``axis`` or ``equal_nan=False`` (not implemented)."""
    if axis is not None or not equal_nan:
        raise TypeError("gputensor's unique supports neither axis= nor equal_nan=False")
    if not (return_index or return_inverse or return_counts):
        return _sets.unique_values(ar)
    res = _sets.unique_all(ar)
    out = [res.values]
    if return_index:
        out.append(res.indices)
    if return_inverse:
        out.append(res.inverse_indices)
    if return_counts:
        out.append(res.counts)
    return tuple(out)


def ndim(a: Any) -> int:
    """The number of dimensions."""
    return a.ndim


def shape(a: Any) -> tuple[int, ...]:
    """The shape."""
    return a.shape


def size(a: Any, axis: int | None = None) -> int:
    """The number of elements (along ``axis`` if given)."""
    return a.size if axis is None else a.shape[axis]


def array(obj: Any, dtype: Any = None, *, copy: bool = True, order: str = "K",
          subok: bool = False, ndmin: int = 0) -> GpuArray:
    """CuPy's ``array``: ``asarray`` that copies by default; ``ndmin`` leading axes of one."""
    out = _creation.asarray(obj, dtype=dtype, copy=copy)
    if out.ndim < ndmin:
        out = _manip.reshape(out, (1,) * (ndmin - out.ndim) + out.shape)
    return out


def moveaxis(a: GpuArray, source: Any, destination: Any) -> GpuArray:
    """NumPy's ``moveaxis``."""
    return _manip.moveaxis(a, source, destination)


def copy(a: GpuArray) -> GpuArray:
    """A new array with the values of ``a`` (a device-side copy)."""
    return _dispatch.contiguous_copy(a)


def squeeze(a: GpuArray, axis: int | tuple[int, ...] | None = None) -> GpuArray:
    """NumPy's ``squeeze``: without ``axis``, every axis of length one goes."""
    if axis is None:
        axis = tuple(i for i, n in enumerate(a.shape) if n == 1)
    return _manip.squeeze(a, axis)


def isclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> GpuArray:
    """NumPy's ``isclose``: ``|a - b| <= atol + rtol * |b|``, equal infinities, NaNs equal with
    ``equal_nan``."""
    close = _ew.less_equal(_ew.abs(_ew.subtract(a, b)), _ew.add(_ew.multiply(_ew.abs(b), rtol), atol))
    close = _ew.logical_or(close, _ew.equal(a, b))
    if equal_nan:
        close = _ew.logical_or(close, _ew.logical_and(_ew.isnan(a), _ew.isnan(b)))
    return close


def allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """Whether every element pair is ``isclose`` (a Python bool: waits for the device)."""
    return builtins.bool(_utility.all(isclose(a, b, rtol, atol, equal_nan)))


def _like(fill: Callable[..., GpuArray]) -> Callable[..., GpuArray]:
    def like(a: Any, dtype: Any = None, order: str = "K", subok: bool = True,
             shape: Any = None, *, device: Any = None) -> GpuArray:
        return fill(a.shape if shape is None else shape, dtype=a.dtype if dtype is None else dtype,
                    device=device)

    return like


def full_like(a: Any, fill_value: Any, dtype: Any = None, order: str = "K", subok: bool = True,
              shape: Any = None, *, device: Any = None) -> GpuArray:
    """NumPy's ``full_like`` (with ``shape=``)."""
    return _creation.full(a.shape if shape is None else shape, fill_value,
                          dtype=a.dtype if dtype is None else dtype, device=device)


def quantile(a: GpuArray, q: Any, axis: int | None = None, out: Any = None,
             overwrite_input: bool = False, method: str = "linear",
             keepdims: bool = False) -> GpuArray:
    """NumPy's ``quantile`` (``method='linear'``): a sort along ``axis`` (the flattened array
    without one), then the interpolation between the two nearest ranks, on the device."""
    if method != "linear":
        raise TypeError(f"gputensor's quantile supports method='linear' only, not {method!r}")
    x, ax = _flat_or(a, axis)
    ax = ax % x.ndim if x.ndim else 0
    x = _manip.moveaxis(x, ax, -1)
    n = x.shape[-1]
    if n == 0:
        raise ValueError("quantile of an empty axis")
    srt = _sort.sort(x, axis=-1)
    if srt.dtype.kind != "f":
        srt = _creation.asarray(srt, dtype=_dtypes_float64())
    qs = np.atleast_1d(np.asarray(q, dtype=np.float64))
    if ((qs < 0) | (qs > 1)).any():
        raise ValueError("quantiles must be in the range [0, 1]")
    pos = qs * (n - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    frac = (pos - lo).tolist()
    parts = []
    for i, j, f in zip(lo.tolist(), hi.tolist(), frac):
        low, high = srt[..., i], srt[..., j]
        parts.append(_ew.add(low, _ew.multiply(_ew.subtract(high, low), f)))
    res = _manip.stack(parts, axis=0)
    if keepdims:
        res = _manip.expand_dims(res, axis=-1 if axis is not None else 1)
        if axis is None:
            res = _manip.reshape(res, (len(parts),) + (1,) * a.ndim)
        else:
            res = _manip.moveaxis(res, -1, 1 + ax)
    return res if np.ndim(q) else res[0]


def percentile(a: GpuArray, q: Any, axis: int | None = None, out: Any = None,
               overwrite_input: bool = False, method: str = "linear",
               keepdims: bool = False) -> GpuArray:
    """NumPy's ``percentile``: ``quantile`` at ``q / 100``."""
    return quantile(a, np.asarray(q, dtype=np.float64) / 100, axis, None, overwrite_input, method, keepdims)


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
           period: Any = None) -> GpuArray:
    """NumPy's ``interp``: the piecewise-linear interpolant of the points (``xp``, ``fp``)
    (``xp`` increasing, as NumPy assumes) at ``x``, on the device: a ``searchsorted`` of ``x``
    in ``xp``, gathers of the bracketing points, one multiply-add; ``left``/``right`` (default
    ``fp[0]``/``fp[-1]``) outside ``[xp[0], xp[-1]]``, exactly ``fp[-1]`` at ``xp[-1]``. The
    result is float64 (float32 on a device without it). Raises ``ValueError`` for empty or
    mismatched ``xp``/``fp`` and ``TypeError`` for ``period`` or complex ``fp`` (not
    supported)."""
    if period is not None:
        raise TypeError("gputensor's interp does not support period=")
    ft = _dtypes_float64()
    xs = _creation.asarray(x, dtype=ft)
    xq = _manip.reshape(_creation.asarray(xp, dtype=ft), (-1,))
    fq = _creation.asarray(fp)
    if fq.dtype.kind == "c":
        raise TypeError("gputensor's interp does not support complex fp")
    fq = _manip.reshape(_creation.asarray(fq, dtype=ft), (-1,))
    n = xq.shape[0]
    if n == 0 or fq.shape[0] != n:
        raise ValueError("fp and xp are not of the same length" if n else "array of sample points is empty")
    lo_val = fq[0] if left is None else _creation.asarray(left, dtype=ft)
    hi_val = fq[n - 1] if right is None else _creation.asarray(right, dtype=ft)
    if n == 1:
        y = _creation.full_like(xs, fq[0])
    else:
        j = _search.searchsorted(xq, _manip.reshape(xs, (-1,)), side="right")
        i0 = _manip.reshape(_ew.clip(_ew.subtract(j, 1), 0, n - 2), xs.shape)
        i1 = _ew.add(i0, 1)
        x0, x1 = _take_flat(xq, i0), _take_flat(xq, i1)
        f0, f1 = _take_flat(fq, i0), _take_flat(fq, i1)
        y = _ew.add(f0, _ew.multiply(_ew.divide(_ew.subtract(f1, f0), _ew.subtract(x1, x0)),
                                     _ew.subtract(xs, x0)))
        y = _search.where(_ew.equal(xs, xq[n - 1]), fq[n - 1], y)
    y = _search.where(_ew.less(xs, xq[0]), lo_val, y)
    return _search.where(_ew.greater(xs, xq[n - 1]), hi_val, y)


def _take_flat(v: GpuArray, idx: GpuArray) -> GpuArray:
    """``v[idx]`` for a 1-D ``v`` and an index array of any shape."""
    return _manip.reshape(_index.take(v, _manip.reshape(idx, (-1,)), axis=0), idx.shape)


def median(a: GpuArray, axis: int | None = None, out: Any = None, overwrite_input: bool = False,
           keepdims: bool = False) -> GpuArray:
    """NumPy's ``median``: the 0.5 ``quantile``."""
    return quantile(a, 0.5, axis, None, overwrite_input, "linear", keepdims)


def _dtypes_float64() -> Any:
    return _dtypes.float64 if _devices.DEFAULT_DEVICE.supports_dtype(_dtypes.float64) else _dtypes.float32


def _nan_to_zero(a: GpuArray) -> GpuArray:
    return _search.where(_ew.isnan(a), 0, a) if a.dtype.kind == "f" else a


def nansum(a: GpuArray, axis: Any = None, dtype: Any = None, out: Any = None,
           keepdims: bool = False) -> GpuArray:
    """NumPy's ``nansum``: NaNs count as zero."""
    return _stats.sum(_nan_to_zero(a), axis=axis, dtype=dtype, keepdims=keepdims)


def nanmean(a: GpuArray, axis: Any = None, dtype: Any = None, out: Any = None,
            keepdims: bool = False) -> GpuArray:
    """NumPy's ``nanmean``: the mean of the values that are not NaN (NaN where none is)."""
    kept = _dispatch.contiguous_copy(_ew.logical_not(_ew.isnan(a)), a.dtype)
    count = _stats.sum(kept, axis=axis, keepdims=keepdims)
    return _ew.divide(nansum(a, axis, dtype, None, keepdims), count)


def _nan_extreme(reduce: Callable[..., GpuArray], fill: float) -> Callable[..., GpuArray]:
    def nan_reduce(a: GpuArray, axis: Any = None, out: Any = None, keepdims: bool = False,
                   **ignored: Any) -> GpuArray:
        if a.dtype.kind != "f":
            return reduce(a, axis=axis, keepdims=keepdims)
        nan = _ew.isnan(a)
        got = reduce(_search.where(nan, fill, a), axis=axis, keepdims=keepdims)
        none = _utility.all(nan, axis=axis, keepdims=keepdims)
        return _search.where(none, float("nan"), got)

    return nan_reduce


def nanvar(a: GpuArray, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0,
           keepdims: bool = False, **ignored: Any) -> GpuArray:
    """NumPy's ``nanvar``: the variance of the values that are not NaN."""
    mean = nanmean(a, axis, dtype, None, True)
    dev = _ew.subtract(a, mean)
    sq = nanmean(_ew.multiply(dev, dev), axis, dtype, None, keepdims)
    if not ddof:
        return sq
    kept = _dispatch.contiguous_copy(_ew.logical_not(_ew.isnan(a)), sq.dtype)
    n = _stats.sum(kept, axis=axis, keepdims=keepdims)
    return _ew.divide(_ew.multiply(sq, n), _ew.subtract(n, ddof))


def nanstd(a: GpuArray, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0,
           keepdims: bool = False, **ignored: Any) -> GpuArray:
    """NumPy's ``nanstd``."""
    return _ew.sqrt(nanvar(a, axis, dtype, None, ddof, keepdims))


def nanprod(a: GpuArray, axis: Any = None, dtype: Any = None, out: Any = None,
            keepdims: bool = False, **ignored: Any) -> GpuArray:
    """NumPy's ``nanprod``: NaNs count as one."""
    x = _search.where(_ew.isnan(a), 1, a) if a.dtype.kind == "f" else a
    return _stats.prod(x, axis=axis, dtype=dtype, keepdims=keepdims)


def nancumsum(a: GpuArray, axis: int | None = None, dtype: Any = None, out: Any = None) -> GpuArray:
    """NumPy's ``nancumsum``: NaNs count as zero."""
    return cumsum(_nan_to_zero(a), axis, dtype)


#: NumPy name -> a function with NumPy's signature (module-level names and protocol targets).
ADAPTERS: dict[str, Callable[..., Any]] = {
    "cumsum": cumsum,
    "cumprod": cumprod,
    "transpose": transpose,
    "swapaxes": swapaxes,
    "ravel": ravel,
    "around": around,
    "round": around,
    "squeeze": squeeze,
    "copy": copy,
    "isclose": isclose,
    "zeros_like": _like(_creation.zeros),
    "ones_like": _like(_creation.ones),
    "empty_like": _like(_creation.empty),
    "full_like": full_like,
    "quantile": quantile,
    "percentile": percentile,
    "interp": interp,
    "median": median,
    "nansum": nansum,
    "nanmean": nanmean,
    "nanmax": _nan_extreme(_stats.max, float("-inf")),
    "nanmin": _nan_extreme(_stats.min, float("inf")),
    "nanvar": nanvar,
    "nanstd": nanstd,
    "nanprod": nanprod,
    "nancumsum": nancumsum,
    "allclose": allclose,
    "clip": clip,
    "dot": dot,
    "where": where,
    "unique": unique,
    "ndim": ndim,
    "shape": shape,
    "size": size,
    "array": array,
    "moveaxis": moveaxis,
}


def install(namespace: dict[str, Any]) -> list[str]:
    """Add the NumPy names that the namespace lacks (``ALIASES`` then ``ADAPTERS``) to
    ``namespace``; returns the names added."""
    added = []
    for name, target in ALIASES.items():
        if name not in namespace:
            namespace[name] = namespace[target]
            added.append(name)
    for name, fn in ADAPTERS.items():
        if name not in namespace:
            namespace[name] = fn
            added.append(name)
    return added
