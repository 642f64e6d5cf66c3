"""Array API searching functions of this issue: ``where``, ``argmax``, ``argmin``.

``where`` is one elementwise kernel (the backend op table's ``where`` row) over the broadcast
operands; ``argmax``/``argmin`` run on the backend's strided reduction and return the first index
of the extreme value (NaN counts as the extreme, as in NumPy) in the default indexing dtype.
"""

from __future__ import annotations

import builtins

from . import _dispatch
from . import _function_kernels as kernels
from ._array_object import GpuArray
from ._data_type_functions import result_type
from ._dtypes import DTYPE_CATEGORIES, bool as bool_dtype
from ._manipulation_functions import _check_array, reshape
from ._shapes import contiguous_strides, normalize_axis

__all__ = ["argmax", "argmin", "where"]


def where(condition: GpuArray, x1: GpuArray | bool | int | float, x2: GpuArray | bool | int | float, /) -> GpuArray:
    """``x1`` where ``condition`` is true, else ``x2``, broadcast together; ``x1``/``x2`` may be
    Python scalars (weak, as in the spec), not both.

    Raises ``TypeError`` for a non-bool condition, two scalars or dtypes that do not promote;
    ``ValueError`` for shapes that do not broadcast.
    """
    _check_array(condition, "condition")
    if condition.dtype != bool_dtype:
        raise TypeError(f"condition must have a boolean dtype, got {condition.dtype}")
    scalars = (builtins.bool, int, float)
    if not isinstance(x1, GpuArray) and not isinstance(x2, GpuArray):
        raise TypeError(f"where needs at least one array among x1 and x2, got {type(x1).__name__} and {type(x2).__name__}")
    for v in (x1, x2):
        if not isinstance(v, GpuArray) and not isinstance(v, scalars):
            raise TypeError(f"x1 and x2 must be arrays or Python scalars, not {type(v).__name__}")
    if isinstance(x1, GpuArray) and isinstance(x2, GpuArray):
        dtype = result_type(x1, x2)
    else:
        arr, sc = (x1, x2) if isinstance(x1, GpuArray) else (x2, x1)
        dtype = result_type(arr, sc)
    inputs = [condition]
    for v in (x1, x2):
        inputs.append(v if isinstance(v, GpuArray) else (_dispatch.scalar_value(v, dtype), dtype))
    return _dispatch.run_elementwise("where", inputs, [bool_dtype, dtype, dtype], dtype, dtype)


def _arg(op: str, x: GpuArray, axis: int | None, keepdims: bool) -> GpuArray:
    _check_array(x)
    if x.dtype not in DTYPE_CATEGORIES["numeric"]:
        raise TypeError(f"{op} needs a real numeric dtype, got {x.dtype}")
    if not isinstance(keepdims, builtins.bool):
        raise TypeError("keepdims must be a bool")
    index_dtype = kernels.default_int()
    if axis is None:
        if x.size == 0:
            raise ValueError(f"{op} of an empty array")
        flat = reshape(x, (-1,))
        out = kernels.reduce(op, flat, (0,), index_dtype)
        shape = (1,) * x.ndim if keepdims else ()
        return GpuArray._view(out, shape, contiguous_strides(shape), out._offset)
    ax = normalize_axis(axis, x.ndim)
    if x.shape[ax] == 0:
        raise ValueError(f"{op} over an empty axis {ax}")
    out_shape = x.shape[:ax] + x.shape[ax + 1 :]
    if 0 in out_shape:
        out = GpuArray._empty(out_shape, index_dtype)
    else:
        out = kernels.reduce(op, x, (ax,), index_dtype)
    if keepdims:
        shape = x.shape[:ax] + (1,) + x.shape[ax + 1 :]
        out = GpuArray._view(out, shape, contiguous_strides(shape), out._offset)
    return out


def argmax(x: GpuArray, /, *, axis: int | None = None, keepdims: bool = False) -> GpuArray:
    """Index of the first maximum along ``axis`` (of the flattened array for None), in the default
    indexing dtype. ``TypeError`` for non-numeric dtypes, ``ValueError`` for zero elements along the
    axis, :class:`AxisError` for a bad axis."""
    return _arg("argmax", x, axis, keepdims)


def argmin(x: GpuArray, /, *, axis: int | None = None, keepdims: bool = False) -> GpuArray:
    """Index of the first minimum along ``axis``; as :func:`argmax` otherwise."""
    return _arg("argmin", x, axis, keepdims)
