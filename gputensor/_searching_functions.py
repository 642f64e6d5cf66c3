"""Array API searching functions: ``where``, ``argmax``, ``argmin``, ``count_nonzero``,
``nonzero``, ``searchsorted``.

``where`` is one elementwise kernel (the backend op table's ``where`` row) over the broadcast
operands; ``argmax``/``argmin`` run on the backend's strided reduction and return the first index
of the extreme value (NaN counts as the extreme, as in NumPy) in the default indexing dtype.
``count_nonzero`` is an elementwise ``!= 0`` (NaN counts) and a sum reduction. ``nonzero`` is a
device stream compaction (``_backend/ops_compact.py``: per-tile counts, a scan, an ordered
write of the flat indices, or of one coordinate per pass for N-d input); only the count is
read back. ``searchsorted`` is a parallel binary search per query on sort keys
(``_backend/ops_search.py``), NaN sorting after everything and -0.0 equal to +0.0, as in NumPy.
"""

from __future__ import annotations

import builtins

from . import _dispatch, _reduce_split
from . import _function_kernels as kernels
from ._array_object import GpuArray
from ._backend import ops_search
from ._data_type_functions import result_type
from ._dtypes import DTYPE_CATEGORIES
from ._dtypes import bool as bool_dtype
from ._advanced_indexing import nonzero_coordinates, nonzero_flat
from ._index_kernels import take_checked_now
from ._fusion import leaf_ptr
from ._manipulation_functions import _check_array, _copy_contiguous, _view, reshape
from ._shapes import contiguous_strides, is_contiguous, normalize_axis
from ._statistical_functions import _reduce, _ReducePlan

__all__ = ["argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where"]

_REAL = frozenset(DTYPE_CATEGORIES["real numeric"])  # (membership tests: one hash, not a scan)


def where(condition: GpuArray, x1: GpuArray | bool | int | float | complex,
          x2: GpuArray | bool | int | float | complex, /) -> GpuArray:
    """``x1`` where ``condition`` is true, else ``x2``, broadcast together; ``x1``/``x2`` may be
    Python scalars (weak, as in the spec), not both.

    Raises ``TypeError`` for a non-bool condition, two scalars or dtypes that do not promote;
    ``ValueError`` for shapes that do not broadcast.
    """
    key, ready = _dispatch.cached_eager("where()", (condition, x1, x2))
    if ready is not None:
        return ready
    _check_array(condition, "condition")
    if condition.dtype != bool_dtype:
        raise TypeError(f"condition must have a boolean dtype, got {condition.dtype}")
    scalars = (builtins.bool, int, float, complex)
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
    value, plan = _dispatch.run_elementwise_plan("where", inputs, [bool_dtype, dtype, dtype], dtype, dtype)
    _dispatch.remember_eager(key, dtype, value, plan)
    return value


#: (op, x: dtype name, shape, strides; axis, keepdims) -> the ``_ReducePlan`` of the reduction
#: (over the flat view of a contiguous ``x`` for ``axis=None``).
_ARG_PLANS: dict[tuple[object, ...], _ReducePlan] = {}


def _arg(op: str, x: GpuArray, axis: int | None, keepdims: bool) -> GpuArray:
    key = None
    if type(x) is GpuArray and (axis is None or type(axis) is int) and type(keepdims) is builtins.bool:
        key = (op, x._dtype.name, x._shape, x._strides, axis, keepdims)
        plan = _ARG_PLANS.get(key)
        if plan is not None:
            src = x if axis is not None else GpuArray._view(x, (x.size,), (1,), x._offset)
            out = None if plan.valid_on is None else plan.replay(leaf_ptr(src))
            if out is None:
                return plan.run(op, src, kernels.default_int(), None, 0)
            return out if plan.view is None else _view(out, *plan.view)
    _check_array(x)
    if x.dtype not in _REAL:
        raise TypeError(f"{op} needs a real numeric dtype, got {x.dtype}")
    if not isinstance(keepdims, builtins.bool):
        raise TypeError("keepdims must be a bool")
    index_dtype = kernels.default_int()
    if axis is None:
        if x.size == 0:
            raise ValueError(f"{op} of an empty array")
        shape = (1,) * x.ndim if keepdims else ()
        if x.size > _reduce_split.limit():  # over all dims in place: row-major flat index
            out = _reduce_split.reduce(op, x, tuple(range(x.ndim)), index_dtype)
            return GpuArray._view(out, shape, contiguous_strides(shape), out._offset)
        if key is not None and is_contiguous(x.shape, x._strides):
            plan = _ReducePlan((0,), (x.size,), index_dtype, shape)
            _dispatch.cache_put(_ARG_PLANS, key, plan)
            return plan.run(op, GpuArray._view(x, (x.size,), (1,), x._offset), index_dtype, None, 0)
        flat = reshape(x, (-1,))
        out = kernels.reduce(op, flat, (0,), index_dtype)
        return GpuArray._view(out, shape, contiguous_strides(shape), out._offset)
    ax = normalize_axis(axis, x.ndim)
    if x.shape[ax] == 0:
        raise ValueError(f"{op} over an empty axis {ax}")
    out_shape = x.shape[:ax] + x.shape[ax + 1 :]
    if 0 in out_shape:
        out = GpuArray._empty(out_shape, index_dtype)
    elif x.size > _reduce_split.limit() and _reduce_split.needs_split(x.shape, (ax,), _reduce_split.limit()):
        out = _reduce_split.reduce(op, x, (ax,), index_dtype)
    elif key is not None:
        plan = _ReducePlan((ax,), x.shape, index_dtype,
                           x.shape[:ax] + (1,) + x.shape[ax + 1 :] if keepdims else None)
        _dispatch.cache_put(_ARG_PLANS, key, plan)
        return plan.run(op, x, index_dtype, None, 0)
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


# ---- count_nonzero, nonzero, searchsorted ---------------------------------------------------
def _nonzero_mask(x: GpuArray) -> GpuArray:
    """``x != 0`` as a bool array (``x`` itself for bool)."""
    if x.dtype == bool_dtype:
        return x
    return _dispatch.elementwise_op("not_equal", x, 0)


def count_nonzero(x: GpuArray, /, *, axis: int | tuple[int, ...] | None = None,
                  keepdims: bool = False) -> GpuArray:
    """Number of non-zero elements (NaN counts, -0.0 does not) over ``axis`` (None: all), in the
    default integer dtype.

    Raises ``TypeError`` for a non-array or non-bool ``keepdims``; :class:`AxisError` /
    ``ValueError`` for bad or repeated axes.
    """
    _check_array(x)
    if not isinstance(keepdims, builtins.bool):
        raise TypeError("keepdims must be a bool")
    index_dtype = kernels.default_int()
    return _reduce("sum", _nonzero_mask(x), axis, keepdims, index_dtype, index_dtype, 0)


def nonzero(x: GpuArray, /) -> tuple[GpuArray, ...]:
    """The indices of the non-zero elements of ``x``, one 1-D default-int array per dimension
    (row-major order, as NumPy's ``nonzero``).

    Raises ``TypeError`` for a non-array, ``ValueError`` for a 0-d array (the spec's rule).
    """
    _check_array(x)
    if x.ndim == 0:
        raise ValueError("nonzero is not allowed on 0-dimensional arrays")
    if x.dtype.kind == "c":
        x = _nonzero_mask(x)  # (either part nonzero)
    if x.ndim == 1:
        return (nonzero_flat(x)[1],)
    count, rows = nonzero_coordinates(x)
    return tuple(GpuArray._view(rows, (count,), (1,), rows._offset + d * count) for d in range(x.ndim))


def searchsorted(x1: GpuArray, x2: GpuArray | int | float, /, *, side: str = "left",
                 sorter: GpuArray | None = None) -> GpuArray:
    """Indices where the elements of ``x2`` would be inserted into the ascending 1-D ``x1`` (or
    ``x1[sorter]``) to keep it sorted: before equal elements (``side='left'``) or after them
    (``'right'``); NaNs sort last, -0.0 equals +0.0 (NumPy's order). ``x2`` may be a Python
    scalar (a 0-d result). Both are compared in their promoted dtype. Result: default int dtype,
    ``x2``'s shape.

    Raises ``TypeError`` for non-arrays, non-real dtypes, dtypes that do not promote and a
    non-integer ``sorter``; ``ValueError`` for a non-1-D ``x1``, a bad ``side``, a ``sorter`` of
    another shape or with an index out of range.
    """
    _check_array(x1, "x1")
    real = _REAL
    if x1.dtype not in real:
        raise TypeError(f"searchsorted needs real numeric dtypes, got {x1.dtype}")
    if x1.ndim != 1:
        raise ValueError(f"x1 must be one-dimensional, got {x1.ndim} dimensions")
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', not {side!r}")
    if isinstance(x2, GpuArray):
        if x2.dtype not in real:
            raise TypeError(f"searchsorted needs real numeric dtypes, got {x2.dtype}")
        dtype = result_type(x1, x2)
    elif isinstance(x2, (int, float)) and not isinstance(x2, builtins.bool):
        dtype = result_type(x1, x2)
        value = _dispatch.scalar_value(x2, dtype)
        x2 = GpuArray._empty((), dtype)
        _dispatch.fill(x2, value)
    else:
        raise TypeError(f"x2 must be a gputensor array or a real Python scalar, not {type(x2).__name__}")
    if sorter is not None:
        _check_array(sorter, "sorter")
        if sorter.dtype not in DTYPE_CATEGORIES["integer"]:
            raise TypeError(f"sorter must have an integer dtype, got {sorter.dtype}")
        if sorter.shape != x1.shape:
            raise ValueError(f"sorter must have the shape of x1 {x1.shape}, got {sorter.shape}")
        try:
            x1 = take_checked_now(x1, sorter)
        except IndexError as exc:
            raise ValueError(f"sorter index out of range: {exc}") from None
    a = x1 if x1.dtype == dtype and is_contiguous(x1.shape, x1._strides) else _copy_contiguous(x1, dtype)
    q = x2 if x2.dtype == dtype and is_contiguous(x2.shape, x2._strides) else _copy_contiguous(x2, dtype)
    index_dtype = kernels.default_int()
    out = GpuArray._empty(q.shape, index_dtype, zero=False)  # the first chunk overwrites it
    if out.size:
        _dispatch.call(ops_search.searchsorted, a._ptr, a.size, q._ptr, q.size, dtype.name, out._ptr,
                       side=side, index_dtype=index_dtype.name)
    return out
