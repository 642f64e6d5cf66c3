"""Array API utility functions: ``all``, ``any`` and ``diff`` (where array-api-strict puts them).

``all``/``any`` run on the backend's strided reduction and accept every dtype (non-zero is true);
``diff`` is ``n`` elementwise subtractions of shifted views (no gather, no copy of the input).
"""

from __future__ import annotations

from ._array_object import GpuArray
from ._dtypes import DTYPE_CATEGORIES, bool as bool_dtype
from ._elementwise_functions import not_equal, subtract
from ._manipulation_functions import _check_array, _index, _view, concat
from ._shapes import normalize_axis
from ._statistical_functions import _reduce

__all__ = ["all", "any", "diff"]


def all(x: GpuArray, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> GpuArray:
    """Whether every element along ``axis`` is true (non-zero; NaN is true). Zero elements give
    True. :class:`AxisError` / ``ValueError`` / ``TypeError`` for bad axes."""
    _check_array(x)
    if x.dtype.kind == "c":
        x = not_equal(x, 0)  # (either part nonzero)
    return _reduce("all", x, axis, keepdims, bool_dtype, None, True)


def any(x: GpuArray, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> GpuArray:
    """Whether any element along ``axis`` is true (non-zero). Zero elements give False."""
    _check_array(x)
    if x.dtype.kind == "c":
        x = not_equal(x, 0)
    return _reduce("any", x, axis, keepdims, bool_dtype, None, False)


def diff(x: GpuArray, /, *, axis: int = -1, n: int = 1, prepend: GpuArray | None = None,
         append: GpuArray | None = None) -> GpuArray:
    """The ``n``-th forward difference ``x[i+1] - x[i]`` along ``axis``, after joining
    ``prepend`` / ``append`` (arrays shaped like ``x`` off the axis) to ``x``.

    Raises ``TypeError`` for non-numeric dtypes or a non-integer ``n``; ``ValueError`` for a 0-d
    ``x``, a negative ``n`` or a mismatched ``prepend``/``append``; :class:`AxisError` for a bad
    axis.
    """
    _check_array(x)
    if x.dtype not in DTYPE_CATEGORIES["numeric"]:
        raise TypeError(f"diff needs a numeric dtype, got {x.dtype}")
    if x.ndim == 0:
        raise ValueError("diff needs an array with at least one dimension")
    n = _index(n, "n")
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    ax = normalize_axis(axis, x.ndim)
    if n == 0:  # NumPy: prepend/append are not joined then
        return x
    parts = []
    if prepend is not None:
        parts.append(_check_array(prepend, "prepend"))
    parts.append(x)
    if append is not None:
        parts.append(_check_array(append, "append"))
    if len(parts) > 1:
        for p in parts:
            if p.dtype not in DTYPE_CATEGORIES["numeric"]:
                raise TypeError(f"diff needs numeric dtypes, got {p.dtype}")
        x = concat(parts, axis=ax)
    for _ in range(n):
        length = x.shape[ax]
        if length == 0:
            break
        shape = list(x.shape)
        shape[ax] = length - 1
        hi = _view(x, shape, x._strides, x._strides[ax])
        lo = _view(x, shape, x._strides, 0)
        x = subtract(hi, lo)
    return x
