"""The caches of the elementwise fast paths: per ``(op name, argument dtypes / scalar types)`` the
dtype resolution (``_RESOLVED``, a :class:`_ResolvedOp`: what a fused call needs), per argument
structure (dtypes, shapes, strides, scalar types) the ready eager launch (``_EAGER``, an
:class:`_EagerCall`), their keys, and :func:`cache_put` (the bounded plan caches of the namespace
functions). Resolutions on int64/uint64 are dropped when a second device comes."""

from __future__ import annotations

import operator
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import _array_object as _ao
from . import _devices, _fusion
from ._backend.elementwise_ops import expression
from ._dtypes import DType
from ._fusion_build import lazy_op
from ._runtime import backend, compute_type
from ._runtime import translate as _translate
from ._scalars import scalar_value
from ._shapes import size_of

if TYPE_CHECKING:
    from ._array_object import GpuArray

__all__ = ["cache_put", "cached_eager", "remember_eager"]


class _ResolvedOp:
    """What :func:`elementwise_op` resolved for one ``(op name, per argument: dtype name or
    Python scalar type)``: the WGSL expression, casts and expression type, the result dtype and
    the dtype scalar arguments are converted to (``compute``). Dtype resolution depends on
    nothing else, and the dtype checks of the first call that succeeded hold for later ones."""

    __slots__ = ("expr", "casts", "expr_type", "result", "compute", "op", "opk", "float_scalars", "scalar_name")

    def __init__(self, expr: str, casts: tuple[str, ...], expr_type: str, result: DType, compute: DType) -> None:
        self.expr = expr
        self.casts = casts
        self.expr_type = expr_type
        self.result = result
        self.compute = compute
        self.op = (expr, casts, expr_type, result.name)  # the fused node's op and its key
        self.opk = _fusion.op_key(self.op)
        self.float_scalars = compute.kind == "f" and compute.itemsize != 2  # scalar_value: float(value)
        self.scalar_name = compute.name


class _EagerCall:
    """A ready eager launch of one op for one argument structure (``_EAGER``: the op, the
    dtypes, shapes and strides of the arrays, the types of the scalars): the dtype scalars are
    converted to, the result's dtype, shape, strides and bytes, and the backend launch plan
    (``ops_elementwise.ElementwiseCall``, which checks the pointers at every launch) with its backend."""

    __slots__ = ("compute", "float_scalars", "result", "shape", "strides", "nbytes", "plan", "backend")

    def __init__(self, compute: DType, result: GpuArray, plan: Any, be: Any) -> None:
        self.compute = compute
        self.float_scalars = compute.kind == "f" and compute.itemsize != 2  # scalar_value: float(value)
        self.result = result.dtype
        self.shape = result.shape
        self.strides = result._strides
        self.nbytes = size_of(result.shape) * result.dtype.itemsize
        self.plan = plan
        self.backend = be

    def __call__(self, arrays: Sequence[GpuArray], scalars: Sequence[Any]) -> GpuArray:
        """The op on arguments of this structure, given as the array arguments and the scalar
        arguments (each in order): a new array, the kernel recorded. Raises as
        :func:`elementwise_op` for the checks that depend on the values (scalar ranges,
        pointers)."""
        if not scalars:
            values: Any = ()
        elif self.float_scalars:  # (scalar_value's first case: float(value))
            values = list(map(float, scalars))
        else:
            compute = self.compute
            values = [scalar_value(v, compute) for v in scalars]
        ptrs = list(map(_PTR, arrays))
        out = _ao.GpuArray._alloc(self.shape, self.strides, self.result, self.nbytes, False)
        ptrs.append(out._storage.ptr)  # a new allocation (overlaps no input), element 0 at its start
        try:
            self.plan.launch(self.backend, ptrs, values)
        except Exception as exc:
            raise _translate(exc) from None
        return out


#: The pointers of many arrays through ``map`` (``GpuArray._ptr``).
_PTR = operator.attrgetter("_ptr")


#: (op name, per argument: dtype name or Python scalar type) -> its ``_ResolvedOp``.
_RESOLVED: dict[tuple[Any, ...], _ResolvedOp] = {}
#: (op name, per argument: dtype name, shape, strides or Python scalar type) -> ``_EagerCall``.
_EAGER: dict[tuple[Any, ...], _EagerCall] = {}
#: dtypes whose compute type depends on the device (native int64, or two 32-bit words)
_WIDE_INT = frozenset({"int64", "uint64"})


def _forget_wide_int() -> None:
    """Drop the resolutions of ops on int64/uint64 (a second device came: its compute types
    for them may differ)."""
    with _OP_CACHE_LOCK:
        for key in [k for k in _RESOLVED if any(part in _WIDE_INT for part in k)]:
            del _RESOLVED[key]
#: Entries of each cache (when one is full its oldest entry goes).
_OP_CACHE_SIZE = 4096
_OP_CACHE_LOCK = threading.Lock()


def _dtype_key(name: str, args: Sequence[Any]) -> tuple[Any, ...]:
    """The ``_RESOLVED`` key of ``elementwise_op(name, *args)``: the name, then per argument
    its dtype name (arrays) or type (scalars: ``True``, ``1`` and ``1.0`` differ)."""
    array_type = _ao.GpuArray
    return (name, *[a._dtype.name if isinstance(a, array_type) else type(a) for a in args])


def _eager_key(name: str, args: Sequence[Any]) -> tuple[tuple[Any, ...], list[GpuArray], list[Any]]:
    """The ``_EAGER`` key of ``elementwise_op(name, *args)`` -- the name, then per argument its
    dtype name, shape and strides (arrays) or type (scalars: ``True``, ``1`` and ``1.0``
    differ) -- and the array and the scalar arguments, each in order."""
    array_type = _ao.GpuArray
    key: list[Any] = [name]
    arrays = []
    scalars = []
    for a in args:
        if isinstance(a, array_type):
            key += (a._dtype.name, a._shape, a._strides)
            arrays.append(a)
        else:
            key.append(type(a))
            scalars.append(a)
    return tuple(key), arrays, scalars


class _LazyCall:
    """The lazy result of one call that is not a table op (``where``) for one argument structure
    (``_LAZY``: the name, the dtypes and shapes of the arrays, the types of the scalars) with
    fusion on: the fused node's op and its key, the result's dtype and shape, and the dtype
    scalar arguments are converted to. The checks of the first call that succeeded hold for
    every call of the structure, except the scalars' ranges (``scalar_value``, per call)."""

    __slots__ = ("op", "opk", "result", "shape", "compute", "float_scalars")

    def __init__(self, op: tuple[Any, ...], result: DType, shape: tuple[int, ...], compute: DType) -> None:
        self.op = op
        self.opk = _fusion.op_key(op)
        self.result = result
        self.shape = shape
        self.compute = compute
        self.float_scalars = compute.kind == "f" and compute.itemsize != 2  # scalar_value: float(value)

    def __call__(self, args: Sequence[Any]) -> GpuArray:
        """The lazy result for ``args`` (arrays, lazy or not, and Python scalars, in order)."""
        compute = self.compute
        inputs: list[Any] = []
        for a in args:
            if isinstance(a, _ao.GpuArray):
                inputs.append(a)
            else:
                inputs.append((float(a) if self.float_scalars else scalar_value(a, compute), compute))
        return lazy_op(self.op, self.opk, self.result, self.shape, inputs)


#: The first item of a ``_LAZY`` key (an ``_EAGER`` key starts with the call's name).
_LAZY_TAG = object()
#: (``_LAZY_TAG``, name, per argument: dtype name and shape or Python scalar type) -> ``_LazyCall``.
_LAZY: dict[tuple[Any, ...], _LazyCall] = {}


def _lazy_key(name: str, args: Sequence[Any]) -> tuple[Any, ...]:
    array_type = _ao.GpuArray
    key: list[Any] = [_LAZY_TAG, name]
    for a in args:
        if isinstance(a, array_type):
            key += (a._dtype.name, a._shape)
        else:
            key.append(type(a))
    return tuple(key)


def cached_eager(name: str, args: Sequence[Any]) -> tuple[tuple[Any, ...] | None, GpuArray | None]:
    """The ready result of a call that is not a table op (``where``) by its argument structure:
    ``(key, result)``, the result None when the structure has not succeeded before; then run
    the call and hand its result and plan to :func:`remember_eager` under ``key``. With fusion
    off the ready eager launch (as ``_eager_key``: dtypes, shapes, strides, scalar types), with
    fusion on the lazy node (:class:`_LazyCall`; none with several devices: key None). Raises
    as the cached call (scalar ranges, pointers)."""
    if _fusion._enabled:
        if _devices.is_multi():
            return None, None
        key = _lazy_key(name, args)
        lazy = _LAZY.get(key)
        return key, (lazy(args) if lazy is not None else None)
    key, arrays, scalars = _eager_key(name, args)
    call = _EAGER.get(key)
    if call is not None and call.backend is backend():
        return key, call(arrays, scalars)
    return key, None


def remember_eager(key: tuple[Any, ...] | None, scalar_dtype: DType, value: GpuArray, plan: Any) -> None:
    """Keep the launch ``plan`` that wrote the new array ``value``, or the node of the new lazy
    array ``value``, for later calls of the structure ``key`` (:func:`cached_eager`); scalar
    arguments are converted to ``scalar_dtype`` (``scalar_value``). Nothing without a key, or
    without a plan or a lazy result of the kind the key is for."""
    if key is None:
        return
    if key[0] is _LAZY_TAG:
        if type(value) is _fusion.LazyArray:
            node = value._node  # type: ignore[attr-defined]
            cache_put(_LAZY, key, _LazyCall(node.op, node.dtype, node.shape, scalar_dtype))
    elif plan is not None and type(value) is _ao.GpuArray:
        cache_put(_EAGER, key, _EagerCall(scalar_dtype, value, plan, backend()))


def cache_put(cache: dict[tuple[Any, ...], Any], key: tuple[Any, ...], entry: Any) -> None:
    """``cache[key] = entry``, the oldest entry dropped first when the cache is full (the
    plan caches of the namespace functions)."""
    with _OP_CACHE_LOCK:
        if len(cache) >= _OP_CACHE_SIZE:
            cache.pop(next(iter(cache)), None)
        cache[key] = entry


def _remember(name: str, args: Sequence[Any], layout: tuple[Any, ...] | None, compute: DType,
              expr_dtype: DType, result: DType, value: GpuArray, plan: Any) -> None:
    """Cache what the successful call ``elementwise_op(name, *args)`` (``out=None``) resolved
    (``_RESOLVED``) and, when it recorded an eager kernel into the new array ``value`` with
    ``plan``, its ready launch (``_EAGER``, under the call's key ``layout``)."""
    key = _dtype_key(name, args)
    if _devices.is_multi() and any(k in _WIDE_INT for k in key):
        return  # (int64 is native on some devices, two words on others: resolved per call)
    if key not in _RESOLVED:
        c = compute_type(compute)
        try:
            expr = expression(name, c, compute.name)
        except KeyError:  # (an empty result never looked the op up)
            return
        cache_put(_RESOLVED, key, _ResolvedOp(expr, (c,) * len(args), compute_type(expr_dtype), result, compute))
    if plan is not None and layout is not None and type(value) is _ao.GpuArray:
        cache_put(_EAGER, layout, _EagerCall(compute, value, plan, backend()))


_devices.on_multi(_forget_wide_int)
