"""Array API sorting functions: ``sort`` and ``argsort`` (stable, any axis, ascending or
descending) on the device's radix / bitonic sort (``_backend/ops_sort.py``).

The sorted axis is moved last and made contiguous (a strided copy only when it is not already),
so the backend sorts ``rows x n`` contiguous rows; rows of up to ``ops_sort.BITONIC_C`` elements
are sorted in one kernel, longer ones by an LSD radix sort (8-bit digits, stable passes). The
result comes back in ``x``'s axis order (contiguous).

Order (as array-api-strict): ascending puts NaNs last; ``descending=True`` is the reverse order
with equal elements kept in input order (``argsort``) -- NaNs first --, and ``sort`` returns the
values of ``flip(sort(x))``. Sorting is always stable (``stable=False`` is allowed, and stable).
Floats: ``argsort`` treats -0.0 and +0.0 as equal (input order kept); ``sort`` orders them by
sign bit (-0.0 first), which gives the same values as NumPy up to the sign of zeros within a run
of zeros.
"""

from __future__ import annotations

import builtins
from typing import Any

from . import _dispatch
from . import _function_kernels as kernels
from ._array_object import GpuArray
from ._backend import ops_sort
from ._dtypes import DTYPE_CATEGORIES, DType
from ._kept import KeptCall
from ._manipulation_functions import _as_contiguous, _check_array, _copy_contiguous, moveaxis
from ._shapes import is_contiguous, normalize_axis

__all__ = ["argsort", "sort"]

_REAL = frozenset(DTYPE_CATEGORIES["real numeric"])  # (membership tests: one hash, not a scan)


#: (op, x: dtype, shape, strides; axis, descending) -> the ``KeptCall`` of a ``sort`` /
#: ``argsort`` whose rows were ``x`` itself and whose backend call was one kept program
#: (``ops_sort.planned_sort``).
_SORT_PLANS: dict[tuple[Any, ...], KeptCall] = {}


def _replayed(op: str, x: object, axis: object, descending: object,
              stable: object) -> tuple[tuple[Any, ...] | None, GpuArray | None]:
    """The ``_SORT_PLANS`` key of a call (None for arguments the full checks must see) and the
    result of its kept plan replayed (None when there is none or it no longer holds)."""
    if type(x) is GpuArray and type(axis) is int and type(descending) is builtins.bool \
            and type(stable) is builtins.bool:
        key = (op, x._dtype, x._shape, x._strides, axis, descending)
        plan = _SORT_PLANS.get(key)
        return key, None if plan is None else plan.replay(x._ptr)
    return None, None


def _keep(key: tuple[Any, ...] | None, x: GpuArray, ax: int, out: GpuArray, zero: builtins.bool,
          descending: builtins.bool, index_dtype: str | None) -> None:
    """Keep the plan of a call just made when its rows were ``x`` itself and the backend kept
    one program for it."""
    if key is None or out.size == 0 or ax != x.ndim - 1 or not is_contiguous(x._shape, x._strides):
        return
    n = x.shape[-1]
    call = _dispatch.call(ops_sort.planned_sort, x.dtype.name, out.size // n, n, descending=descending,
                          index_dtype=index_dtype)
    if call is not None:
        _dispatch.cache_put(_SORT_PLANS, key, KeptCall.like(out, call, zero=zero))


def _check(x: object, name: str, axis: object, descending: object, stable: object) -> tuple[GpuArray, int]:
    _check_array(x)
    assert isinstance(x, GpuArray)
    if x.dtype not in _REAL:
        raise TypeError(f"{name} needs a real numeric dtype, got {x.dtype}")
    for flag, what in ((descending, "descending"), (stable, "stable")):
        if not isinstance(flag, builtins.bool):
            raise TypeError(f"{what} must be a bool, not {type(flag).__name__}")
    # 0-d input: AxisError as NumPy's sort (the spec leaves it unspecified)
    return x, normalize_axis(axis, x.ndim)


def _rows(x: GpuArray, ax: int) -> GpuArray:
    """``x`` with axis ``ax`` last, C-contiguous (a view when it already is)."""
    if ax == x.ndim - 1 and is_contiguous(x._shape, x._strides):
        return x
    return _as_contiguous(moveaxis(x, ax, -1))


def _restore(result: GpuArray, ax: int) -> GpuArray:
    """The row-major result (axis last) back in the input's axis order, contiguous."""
    if ax == result.ndim - 1:
        return result
    return _copy_contiguous(moveaxis(result, -1, ax))


def sort(x: GpuArray, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> GpuArray:
    """A sorted copy of ``x`` along ``axis`` (see the module docstring for the order).

    Raises ``TypeError`` for a non-array, a bool or non-real dtype, non-bool flags;
    :class:`~gputensor._shapes.AxisError` for a bad axis (and for 0-d input, as NumPy).
    """
    key, res = _replayed("sort", x, axis, descending, stable)
    if res is not None:
        return res
    x, ax = _check(x, "sort", axis, descending, stable)
    rows = _rows(x, ax)
    # packed (8/16-bit) outputs are written by atomicOr into zeros; wider ones are overwritten
    zero = x.dtype.itemsize < 4
    out = GpuArray._empty(rows.shape, x.dtype, zero=zero)
    n = rows.shape[-1]
    if out.size:
        _dispatch.call(ops_sort.sort_values, rows._ptr, x.dtype.name, out.size // n, n, out._ptr,
                       descending=descending)
        _keep(key, x, ax, out, zero, descending, None)
    return _restore(out, ax)


def argsort(x: GpuArray, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> GpuArray:
    """Indices (default indexing dtype) that sort ``x`` along ``axis``, stably: equal elements
    keep their input order, also with ``descending=True`` (array-api-strict's definition).

    Raises as :func:`sort`.
    """
    key, res = _replayed("argsort", x, axis, descending, stable)
    if res is not None:
        return res
    x, ax = _check(x, "argsort", axis, descending, stable)
    rows = _rows(x, ax)
    index_dtype: DType = kernels.default_int()
    out = GpuArray._empty(rows.shape, index_dtype, zero=False)
    n = rows.shape[-1]
    if out.size:
        _dispatch.call(ops_sort.argsort, rows._ptr, x.dtype.name, out.size // n, n, out._ptr,
                       descending=descending, index_dtype=index_dtype.name)
        _keep(key, x, ax, out, False, descending, index_dtype.name)
    return _restore(out, ax)
