"""Elementwise ops through the engine: :func:`elementwise_op` (a namespace table op with the
spec's dtype rules, broadcasting, weak Python scalars and in-place ``out=``; served from the
caches of ``_elementwise_cache`` once a call has succeeded) and :func:`run_elementwise` (any
backend op with explicit dtypes: ``where``, ``clip``, ``astype``), which validates, then returns
a lazy array (fusion on) or records the kernel with a backend launch plan."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Union

from . import _array_object as _ao
from . import _devices, _fusion
from ._backend import ops_elementwise
from ._backend.elementwise_ops import expression
from ._backend.ops_elementwise import ArrayOperand, ScalarOperand
from ._copies import operand
from ._dtypes import DType
from ._elementwise_cache import _EAGER, _RESOLVED, _dtype_key, _eager_key, _remember, cache_put
from ._elementwise_dtypes import resolve_elementwise_dtypes
from ._fusion_build import lazy_op, make_node, rebind
from ._fusion_node import op_key
from ._ops import ELEMENTWISE_OPS
from ._overlap import conflicts as _conflicts
from ._runtime import backend, compute_type
from ._runtime import translate as _translate
from ._scalars import scalar_value
from ._shapes import broadcast_shapes, broadcast_strides, size_of

if TYPE_CHECKING:
    from ._array_object import GpuArray

__all__ = ["elementwise_op", "run_elementwise", "run_elementwise_plan"]

Input = Union["GpuArray", tuple[Any, DType]]


#: (op, per input: dtype name and shape, or the dtype name of a scalar; casts, expression,
#: result and form dtypes) -> (the fused node's op, its key, the result shape): the lazy results
#: of ``run_elementwise`` call structures that succeeded (fusion on, no ``out``).
_LAZY: dict[tuple[Any, ...], tuple[Any, int, tuple[int, ...]]] = {}


def _lazy_key(op: str, inputs: Sequence[Input], casts: Sequence[DType], expr_dtype: DType, out_dtype: DType,
              op_dtype: DType | None) -> tuple[Any, ...]:
    key: list[Any] = [op, expr_dtype.name, out_dtype.name, op_dtype.name if op_dtype is not None else None]
    for dt in casts:
        key.append(dt.name)
    for x in inputs:
        if type(x) is tuple:
            key.append(x[1].name)
        else:
            key += (x._dtype.name, x._shape)
    return tuple(key)


def run_elementwise(
    op: str,
    inputs: Sequence[Input],
    casts: Sequence[DType],
    expr_dtype: DType,
    out_dtype: DType,
    *,
    out: GpuArray | None = None,
    op_dtype: DType | None = None,
) -> GpuArray:
    """Record ``result = op(inputs...)`` and return the result array.

    ``op`` is a row of the backend op table ``elementwise_ops.OPS`` (its form for
    ``op_dtype``). ``inputs`` are GpuArrays
    (broadcast together) or ``(value, dtype)`` scalar pairs; input ``k`` is converted to the
    compute type of ``casts[k]``; the expression has the compute type of ``expr_dtype``; the
    op's form (float/int/uint/bool) is picked by ``op_dtype`` (default ``expr_dtype``; for
    comparisons the inputs' dtype); the result is stored as ``out_dtype``.
    With ``out`` the result is written there (its shape must equal the broadcast shape:
    ``ValueError``), reading overlapping inputs safely.

    Raises ``TypeError`` when the op has no form for the compute type or the device lacks a
    dtype, ``ValueError`` for shapes that do not broadcast.
    """
    return _run_elementwise(op, inputs, casts, expr_dtype, out_dtype, out=out, op_dtype=op_dtype)[0]


def run_elementwise_plan(
    op: str,
    inputs: Sequence[Input],
    casts: Sequence[DType],
    expr_dtype: DType,
    out_dtype: DType,
) -> tuple[GpuArray, Any]:
    """:func:`run_elementwise` (a new result), also returning the backend launch plan it
    recorded with (None when it recorded nothing), for :func:`remember_eager`."""
    return _run_elementwise(op, inputs, casts, expr_dtype, out_dtype)


def _run_elementwise(
    op: str,
    inputs: Sequence[Input],
    casts: Sequence[DType],
    expr_dtype: DType,
    out_dtype: DType,
    *,
    out: GpuArray | None = None,
    op_dtype: DType | None = None,
) -> tuple[GpuArray, Any]:
    """:func:`run_elementwise`, also returning the backend launch plan it recorded with (None
    when it recorded nothing: a lazy result, an empty array)."""
    fz = _fusion
    key = None
    if fz._enabled and out is None and not _devices.is_multi():
        # a lazy result of a call structure that succeeded before: its node's op, no checks
        key = _lazy_key(op, inputs, casts, expr_dtype, out_dtype, op_dtype)
        entry = _LAZY.get(key)
        if entry is not None:
            return lazy_op(entry[0], entry[1], out_dtype, entry[2], inputs), None
    arrays = [x for x in inputs if isinstance(x, _ao.GpuArray)]
    shape = broadcast_shapes(*(x.shape for x in arrays))
    device = _devices.DEFAULT_DEVICE
    for dt in list(casts) + [expr_dtype, out_dtype]:
        device.check_dtype(dt)
    if out is not None:
        if out.shape != shape:
            raise ValueError(f"output shape {out.shape} does not match the broadcast shape {shape}")
        if out.dtype != out_dtype:
            raise TypeError(f"output dtype {out.dtype} does not match the result dtype {out_dtype}")
    if size_of(shape) == 0:
        return (out if out is not None else _ao.GpuArray._empty(shape, out_dtype, zero=False)), None
    compute = compute_type(expr_dtype)
    form_dtype = op_dtype or expr_dtype
    try:
        expr = expression(op, compute_type(form_dtype), form_dtype.name)
    except KeyError:
        raise TypeError(f"{op} is not defined for {form_dtype}") from None
    cast_types = [compute_type(dt) for dt in casts]
    if fz._enabled:
        # elementwise fusion: a lazy result (validated above: errors stay at this call)
        node = make_node(expr, cast_types, compute, out_dtype, shape, inputs)
        if out is None:
            if key is not None:
                cache_put(_LAZY, key, (node.op, op_key(node.op), shape))
            return fz.lazy_array(node), None
        if type(out) is fz.LazyArray:
            rebind(out, node)
        else:
            fz.write_fused(node, out)
        return out, None
    if out is None:
        out = _ao.GpuArray._empty(shape, out_dtype, zero=False)  # every element is written
    operands: list[Any] = []
    for x in inputs:
        if isinstance(x, _ao.GpuArray):
            strides = broadcast_strides(x.shape, x._strides, shape)
            if _conflicts(x, strides, out):
                x = _fusion.copy_eager(x)
                strides = broadcast_strides(x.shape, x._strides, shape)
            operands.append(ArrayOperand(x._ptr, x.dtype.name, tuple(strides)))
        else:
            value, dt = x
            operands.append(ScalarOperand(value, dt.name))
    be = backend()
    dst = operand(out)
    try:
        plan = ops_elementwise.launch_plan(be, expr, compute, operands, cast_types, dst, shape)
        if plan is not None:
            plan.run(be, operands, dst)
    except Exception as exc:
        raise _translate(exc) from None
    return out, plan


def elementwise_op(name: str, *args: Any, out: GpuArray | None = None) -> GpuArray:
    """Apply the namespace op ``name`` (a row of ``_ops.ELEMENTWISE_OPS``) to ``args``.

    ``args`` are GpuArrays and Python scalars (weak). With ``out`` (in-place operators) the
    result dtype must equal ``out.dtype`` (``TypeError``) and the broadcast shape must equal
    ``out.shape`` (``ValueError``). See :func:`resolve_elementwise_dtypes` for the dtype errors.

    Fast paths (the host time of a small op): once a call has succeeded, its dtype
    resolution is kept by ``(name, argument dtypes / scalar types)`` (``_RESOLVED``: what a
    fused call needs) and, for an eager call, a ready launch by that key plus the arrays' shapes
    and strides (``_EAGER``: output shape, dtype and the backend plan). A repeated call then only
    runs the checks that depend on the values (scalar ranges; pointers, in the plan) -- the
    errors stay the same, raised at the same call.
    """
    fz = _fusion
    layout = None
    if out is None:
        array_type = _ao.GpuArray
        if not fz._enabled:
            layout, arrays, scalars = _eager_key(name, args)
            call = _EAGER.get(layout)
            if call is not None and call.backend is backend():
                return call(arrays, scalars)
        else:
            op = _RESOLVED.get(_dtype_key(name, args))
            if op is not None:
                shapes = [a._shape for a in args if isinstance(a, array_type)]
                shape = shapes[0]
                for other in shapes[1:]:
                    if other != shape:
                        shape = broadcast_shapes(*shapes)
                        break
                if 0 not in shape:
                    compute = op.compute
                    if op.float_scalars:
                        inputs = [a if isinstance(a, array_type) else (float(a), compute) for a in args]
                    else:
                        inputs = [a if isinstance(a, array_type) else (scalar_value(a, compute), compute)
                                  for a in args]
                    return lazy_op(op.op, op.opk, op.result, shape, inputs)
    row = ELEMENTWISE_OPS[name]
    if len(args) != row.arity:
        raise TypeError(f"{name} takes {row.arity} arguments, got {len(args)}")
    compute, expr_dtype, result = resolve_elementwise_dtypes(name, args)
    if out is not None and result != out.dtype:
        raise TypeError(
            f"in-place {name} would change the dtype of the left operand from {out.dtype} to {result}"
        )
    inputs: list[Input] = []
    for a in args:
        inputs.append(a if isinstance(a, _ao.GpuArray) else (scalar_value(a, compute), compute))
    value, plan = _run_elementwise(name, inputs, [compute] * len(inputs), expr_dtype, result,
                                   out=out, op_dtype=compute)
    if out is None:
        _remember(name, args, layout, compute, expr_dtype, result, value, plan)
    return value
