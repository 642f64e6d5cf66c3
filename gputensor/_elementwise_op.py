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
from ._fusion_build import _node, lazy_op, make_node, rebind
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
#: result and form dtypes; with ``out``: ("out", its dtype name and shape)) -> (the fused node's
#: op, its key, the result shape): the nodes of ``run_elementwise`` call structures that
#: succeeded with fusion on (a lazy result, or one written into ``out``).
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
    fused = fz._enabled and (out is None or _fuses_into(inputs, out))
    if fused and not _devices.is_multi():
        # a call structure that succeeded before: its node's op, no checks; a lazy result, or
        # the node written into ``out``
        key = _lazy_key(op, inputs, casts, expr_dtype, out_dtype, op_dtype)
        if out is not None:
            key += (("out", out._dtype.name, out._shape),)
        entry = _LAZY.get(key)
        if entry is not None:
            if out is None:
                return lazy_op(entry[0], entry[1], out_dtype, entry[2], inputs), None
            node = _node(entry[0], entry[1], out_dtype, entry[2], inputs)
            if type(out) is fz.LazyArray:
                rebind(out, node)
            else:
                fz.write_fused(node, out)
            return out, None
    elif out is not None and type(out) is _ao.GpuArray and not _devices.is_multi():
        # nothing to fuse: the kept launch of a call structure written into ``out`` before
        key = _eager_into_key(op, inputs, casts, expr_dtype, out_dtype, op_dtype, out)
        kept = _INTO_RUN.get(key)
        if kept is not None and kept[1] is backend() and _launch_into(kept[0], kept[1], inputs, out):
            return out, kept[0]
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
    if fused:
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
        if key is not None:
            cache_put(_LAZY, key, (node.op, op_key(node.op), shape))
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
    if key is not None and plan is not None:
        cache_put(_INTO_RUN, key, (plan, be))
    return out, plan


def _fuses_into(inputs: Sequence[Any], out: GpuArray) -> bool:
    """Whether a write into ``out`` from ``inputs`` (arrays and scalars) has anything to fuse
    (fusion on): ``out`` is lazy (the node becomes its value) or an input is lazy once the
    lazy inputs that read ``out``'s memory are materialised (the write would compute them
    first anyway, as readers of the memory it changes)."""
    fz = _fusion
    if type(out) is fz.LazyArray:
        return True
    lazy = False
    storage = None
    for x in inputs:
        if type(x) is fz.LazyArray:
            if storage is None:
                storage = out._storage
            for leaf in x._node.leaves:
                if leaf._storage is storage:
                    fz.materialize(x)
                    break
            else:
                lazy = True
    return lazy


def _eager_into_key(op: str, inputs: Sequence[Input], casts: Sequence[DType], expr_dtype: DType,
                    out_dtype: DType, op_dtype: DType | None, out: GpuArray) -> tuple[Any, ...]:
    """The ``_INTO_RUN`` key of ``run_elementwise(..., out=out)``: its ``_lazy_key``,
    the strides of the array inputs, then ``out``'s dtype name, shape and strides."""
    return (_lazy_key(op, inputs, casts, expr_dtype, out_dtype, op_dtype),
            tuple([x._strides for x in inputs if type(x) is not tuple]), out._dtype.name, out._shape, out._strides)


def _launch_into(plan: Any, be: Any, inputs: Sequence[Input], out: GpuArray) -> bool:
    """Record the kept ``plan`` of an eager call into ``out`` (its inputs in order, then
    ``out``); False, with nothing recorded, when an input other than ``out`` shares its memory
    (the full path copies overlapping inputs first)."""
    storage = out._storage
    ptrs = []
    values = []
    for x in inputs:
        if type(x) is tuple:
            values.append(x[0])
        elif x is not out and x._storage is storage:
            return False
        else:
            ptrs.append(x._ptr)
    ptrs.append(out._ptr)
    try:
        plan.launch(be, ptrs, values)
    except Exception as exc:
        raise _translate(exc) from None
    return True


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
        if not fz._enabled:
            layout, arrays, scalars = _eager_key(name, args)
            call = _EAGER.get(layout)
            if call is not None and call.backend is backend():
                return call(arrays, scalars)
        else:
            op = _RESOLVED.get(_dtype_key(name, args))
            if op is not None:
                shape = _args_shape(args)
                if 0 not in shape:
                    return lazy_op(op.op, op.opk, op.result, shape,
                                   _scalar_inputs(args, op.compute, op.float_scalars))
    elif type(out) is not fz.LazyArray or fz._enabled:
        if _into_kept(name, args, out):
            return out
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
    else:
        _remember_into(name, args, out, compute, expr_dtype, result, plan)
    return value


def _args_shape(args: Sequence[Any]) -> tuple[int, ...]:
    """The broadcast shape of the array arguments of ``args`` (ValueError as
    ``broadcast_shapes``)."""
    array_type = _ao.GpuArray
    shapes = [a._shape for a in args if isinstance(a, array_type)]
    shape = shapes[0]
    for other in shapes[1:]:
        if other != shape:
            return broadcast_shapes(*shapes)
    return shape


def _scalar_inputs(args: Sequence[Any], compute: DType, float_scalars: bool) -> list[Input]:
    """``args`` as inputs: arrays as they are, Python scalars as ``(value, compute)`` pairs
    (``float(value)`` where ``float_scalars``, else ``scalar_value``: its range errors)."""
    array_type = _ao.GpuArray
    if float_scalars:
        return [a if isinstance(a, array_type) else (float(a), compute) for a in args]
    return [a if isinstance(a, array_type) else (scalar_value(a, compute), compute) for a in args]


class _IntoCall:
    """A ready launch of ``elementwise_op(name, *args, out=out)`` for one structure with nothing
    to fuse (``_INTO``): the dtype scalars are converted to and the backend plan (inputs in order,
    then ``out``; it checks the pointers at every launch) with its backend."""

    __slots__ = ("compute", "float_scalars", "plan", "backend")

    def __init__(self, compute: DType, plan: Any, be: Any) -> None:
        self.compute = compute
        self.float_scalars = compute.kind == "f" and compute.itemsize != 2  # scalar_value: float(value)
        self.plan = plan
        self.backend = be


#: Kept launches of writes into an existing array with nothing to fuse (``_fuses_into``):
#: (``_eager_key`` of the arguments, out's dtype name, shape and strides, the position of out
#: among the arguments or -1) -> the ``_IntoCall`` of ``elementwise_op(..., out=out)``.
_INTO: dict[tuple[Any, ...], _IntoCall] = {}
#: ``_eager_into_key(...)`` -> (plan, backend) of ``run_elementwise(..., out=out)``.
_INTO_RUN: dict[tuple[Any, ...], tuple[Any, Any]] = {}


def _into_key(name: str, args: Sequence[Any], out: GpuArray) -> tuple[Any, ...]:
    """The ``_INTO`` key of ``elementwise_op(name, *args, out=out)``."""
    layout, arrays, _ = _eager_key(name, args)
    at = -1
    for k, a in enumerate(arrays):
        if a is out:
            at = k
            break
    return (layout, out._dtype.name, out._shape, out._strides, at)


def _into_kept(name: str, args: Sequence[Any], out: GpuArray) -> bool:
    """``elementwise_op(name, *args, out=out)`` for a call structure that succeeded before:
    with something to fuse (``_fuses_into``), its dtype resolution (``_RESOLVED``) makes the
    node written into ``out`` (``_fusion.write_fused``, which keeps its launch per layout; a
    lazy ``out`` takes the node); otherwise the kept launch (``_INTO``). False, with nothing
    done, for a structure not seen yet and for arguments that share ``out``'s memory with
    another layout (the full path copies them first)."""
    fz = _fusion
    if fz._enabled and _fuses_into(args, out):
        op = _RESOLVED.get(_dtype_key(name, args))
        if op is None or op.result != out._dtype:
            return False
        shape = _args_shape(args)  # (ValueError as the full path)
        if shape != out._shape or 0 in shape:
            return False
        node = _node(op.op, op.opk, op.result, shape, _scalar_inputs(args, op.compute, op.float_scalars))
        if type(out) is fz.LazyArray:
            rebind(out, node)
        else:
            fz.write_fused(node, out)
        return True
    call = _INTO.get(_into_key(name, args, out))
    if call is None or call.backend is not backend():
        return False
    return _launch_into(call.plan, call.backend, _scalar_inputs(args, call.compute, call.float_scalars), out)


def _remember_into(name: str, args: Sequence[Any], out: GpuArray, compute: DType, expr_dtype: DType,
                   result: DType, plan: Any) -> None:
    """Cache what the successful call ``elementwise_op(name, *args, out=out)`` resolved: its
    dtype resolution (``_RESOLVED``, as ``_remember``) and, when it recorded an eager kernel,
    its launch (``_INTO``)."""
    _remember(name, args, None, compute, expr_dtype, result, out, None)
    if plan is not None and type(out) is _ao.GpuArray:
        cache_put(_INTO, _into_key(name, args, out), _IntoCall(compute, plan, backend()))
