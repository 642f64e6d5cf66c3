"""Copies and fills: ``dst[...] = src`` (:func:`copy_into`, broadcasting, casting, overlap-safe),
``dst[...] = scalar`` (:func:`fill`), a new C-contiguous copy (:func:`contiguous_copy`, a lazy
cast node with fusion on) and :func:`operand` (a GpuArray as a backend operand)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _array_object as _ao
from . import _devices, _fusion
from ._backend import ops_elementwise
from ._backend.ops_elementwise import ArrayOperand, ScalarOperand
from ._backend.plan_cache import PlanCache
from ._backend.wgsl_types import storage_type
from ._dtypes import DType
from ._elementwise_cache import _ResolvedOp
from ._fusion_build import lazy_unary
from ._overlap import conflicts as _conflicts
from ._runtime import backend, compute_type
from ._runtime import translate as _translate
from ._scalars import scalar_value
from ._shapes import broadcast_strides, is_contiguous, size_of

if TYPE_CHECKING:
    from ._array_object import GpuArray

__all__ = ["operand", "contiguous_copy", "copy_into", "fill"]


def operand(x: GpuArray, shape: Sequence[int] | None = None) -> ArrayOperand:
    """The backend operand of ``x``, broadcast to ``shape`` when given (ValueError if it can't)."""
    strides = x._strides if shape is None else broadcast_strides(x.shape, x._strides, shape)
    return ArrayOperand(x._ptr, x.dtype.name, tuple(strides))


def contiguous_copy(x: GpuArray, dtype: DType | None = None) -> GpuArray:
    """A new C-contiguous array with the values of ``x`` (cast to ``dtype`` if given). With
    fusion on, a lazy array (a cast node: ``x.astype(float32) * 2`` is one kernel)."""
    dtype = dtype or x.dtype
    fz = _fusion
    if fz._enabled and size_of(x.shape):
        _devices.DEFAULT_DEVICE.check_dtype(dtype)
        compute = compute_type(dtype)
        cast = _CASTS.get((dtype.name, compute))
        if cast is None:
            cast = _cast(dtype, compute)
        return lazy_unary(cast, x)
    out = _ao.GpuArray._empty(x.shape, dtype, zero=False)  # fully overwritten
    if type(x) is _ao.GpuArray and x._shape:
        # a kept launch plan per (dtypes, shape, strides): the output is new, so no overlap
        be = backend()
        key = (x._dtype, dtype, x._shape, x._strides)
        plans = _COPY_PLANS.of(be)
        plan = plans.get(key)
        try:
            if plan is None:
                compute = storage_type(dtype.name).compute
                plan = ops_elementwise.launch_plan(
                    be, "x0", compute, [ArrayOperand(x._ptr, x._dtype.name, x._strides)], [compute],
                    ArrayOperand(out._ptr, dtype.name, out._strides), x._shape)
                if plan is None:
                    return out
                _COPY_PLANS.keep(plans, key, plan)
            plan.launch(be, (x._ptr, out._ptr), ())
        except Exception as exc:
            raise _translate(exc) from None
        return out
    copy_into(out, x)
    return out


#: (dtype name, its compute type) -> the resolved op (``x0`` in the compute type, stored as the
#: dtype) of a copy to that dtype, as ``lazy_unary`` takes it.
_CASTS: dict[tuple[str, str], _ResolvedOp] = {}


def _cast(dtype: DType, compute: str) -> _ResolvedOp:
    cast = _CASTS[(dtype.name, compute)] = _ResolvedOp("x0", (compute,), compute, dtype, dtype)
    return cast


#: The elementwise launch plans of ``contiguous_copy`` kept per backend by (source dtype, dtype,
#: shape, source strides).
_COPY_PLANS = PlanCache(512)


def copy_into(dst: GpuArray, src: Any) -> None:
    """``dst[...] = src``: ``src`` is a GpuArray broadcastable to ``dst.shape`` (cast to
    ``dst.dtype`` with NumPy's ``astype`` rules) or a Python scalar (see :func:`fill`).

    Safe when ``src`` and ``dst`` overlap with different layouts (``src`` is copied first).
    Raises ``ValueError`` when the shapes do not broadcast.
    """
    if not isinstance(src, _ao.GpuArray):
        fill(dst, src)
        return
    strides = broadcast_strides(src.shape, src._strides, dst.shape)
    if size_of(dst.shape) == 0:
        return
    fz = _fusion
    if type(src) is fz.LazyArray:
        dst._ptr  # noqa: B018 - the write hazard: lazy readers of dst's storage first
        if type(src) is fz.LazyArray:  # (unless it was one of them)
            fz.write_fused(fz.node_of(src), dst)
            return
    if _conflicts(src, strides, dst):
        src = _fusion.copy_eager(src)
        strides = broadcast_strides(src.shape, src._strides, dst.shape)
    be = backend()
    try:
        if (
            src.dtype == dst.dtype
            and is_contiguous(dst.shape, dst._strides)
            and is_contiguous(dst.shape, strides)
        ):
            if src._ptr != dst._ptr:
                be.copy_dtod(dst._ptr, src._ptr, size_of(dst.shape) * dst.dtype.itemsize)
            return
        ops_elementwise.copy_strided(
            be, ArrayOperand(src._ptr, src.dtype.name, tuple(strides)), operand(dst), dst.shape
        )
    except Exception as exc:
        raise _translate(exc) from None


def fill(dst: GpuArray, value: Any) -> None:
    """``dst[...] = value`` for a Python (or NumPy) scalar ``value``, converted to ``dst.dtype``
    as NumPy's assignment does (float to int truncates; ints must fit: ``OverflowError``).

    Raises ``TypeError`` for complex values into real arrays and for non-numeric values.
    """
    if isinstance(value, np.generic) and value.dtype.kind in "biufc":
        value = value.item()
    if (isinstance(value, complex) and dst.dtype.kind != "c") or not isinstance(
            value, (builtins.bool, int, float, complex)):
        raise TypeError(f"cannot assign a {type(value).__name__} to a {dst.dtype} array")
    value = scalar_value(value, dst.dtype)
    if size_of(dst.shape) == 0:
        return
    be = backend()
    key = (dst._dtype.name, dst._shape, dst._strides)
    plans = _FILL_PLANS.of(be)
    plan = plans.get(key)
    try:
        ptr = dst._ptr  # (the write hazard: lazy readers of dst's storage are computed first)
        if plan is None:
            compute = storage_type(dst.dtype.name).compute
            plan = ops_elementwise.launch_plan(be, "x0", compute, [ScalarOperand(value, dst.dtype.name)],
                                               [compute], ArrayOperand(ptr, dst.dtype.name, tuple(dst._strides)),
                                               dst.shape)
            if plan is None:
                return
            _FILL_PLANS.keep(plans, key, plan)
        plan.launch(be, (ptr,), (value,))
    except Exception as exc:
        raise _translate(exc) from None


#: The elementwise launch plans of ``fill`` kept per backend by (dtype name, shape, strides): a
#: fill of a layout seen before launches its plan with the value.
_FILL_PLANS = PlanCache(512)
