"""The engine's entry points for the namespace: elementwise ops, copies and fills.

Namespace modules validate arguments and call the functions here; this module turns GpuArrays
into backend operands (pointer of element [0, ..., 0], dtype name, strides in elements), resolves
dtypes for the op table, allocates outputs and records the kernels.

Where the frontend meets the backend: this module, ``_fusion`` (lazy DAGs and their launches),
``_runtime`` (the backend object: memory, transfers, adapter facts, error translation; its
names are re-exported here), ``_function_kernels`` (reductions, scans, products), the namespace
modules that launch their own backend operations through :func:`call` (``_indexing_functions``,
``_searching_functions``, ``_set_functions``, ``_sorting_functions``), ``_user_kernels`` and
``_profile``; ``_array_object`` and ``_overlap`` take only the shape helper ``extent`` from it,
and ``gputensor`` re-exports ``autotune``. The operations they may call are typed in
``_backend/interface.py``.

Functions for other frontend modules:

* memory (from ``_runtime``): :func:`alloc`, :func:`free`, :func:`upload`, :func:`download`;
  :func:`synchronize`;
* :func:`copy_into` (``dst[...] = src`` with broadcasting and casting; overlap-safe) and
  :func:`fill` (``dst[...] = python scalar``);
* :func:`elementwise_op` (an op of the namespace table ``_ops.ELEMENTWISE_OPS`` with the spec's
  dtype rules, broadcasting and weak Python scalars, optional in-place ``out=``) and the
  lower-level :func:`run_elementwise` (any backend op, explicit dtypes; for ``where``, ``clip``
  and the like);
* :func:`operand`; :func:`call` and :func:`backend_errors` (a backend operation with the
  namespace's exceptions);
* elementwise fusion (``_fusion``): with fusion on, :func:`run_elementwise` (so
  :func:`elementwise_op`) and :func:`contiguous_copy` validate eagerly and return lazy arrays;
  ``_fusion.write_fused`` evaluates a DAG into an array (one kernel), ``_fusion.
  materialize_into`` into a new one (by the DAG's structure key: no walk over the DAG),
  :func:`reduce_fused` evaluates it inside a reduction's loads, :func:`copy_into` writes a lazy
  source straight into the destination and :func:`synchronize` materialises every lazy array
  first;
* the host time of a small op: :func:`binary_operator` makes the operator methods,
  :func:`binary_function` and :func:`unary_op` serve the namespace functions -- each goes from
  the cached dtype resolution (``_RESOLVED``) straight to ``_fusion_build.lazy_binary`` /
  ``lazy_unary``, or with fusion off (operators) from the cached ready launch (``_EAGER``) to
  the recorded kernel, and otherwise to :func:`elementwise_op`.

Backend errors of kind *unsupported* become ``TypeError`` (an adapter feature is missing).
"""

from __future__ import annotations

import builtins
import math
import operator
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from . import _array_object as _ao
from . import _devices, _dtypes, _fusion, _runtime
from ._backend import ops_elementwise, ops_reduce
from ._backend.elementwise_ops import expression
from ._backend.errors import BackendError, BackendErrorKind
from ._backend.plan_cache import PlanCache
from ._backend.ops_elementwise import ArrayOperand, ScalarOperand
from ._backend.wgsl_types import storage_type
from ._dtypes import DType
from ._fusion_build import lazy_binary, lazy_op, lazy_unary, make_node, rebind
from ._ops import ELEMENTWISE_OPS
from ._overlap import conflicts as _conflicts
from ._runtime import (  # the backend handle, re-exported for the namespace modules
    adapter_description,
    adapter_features,
    alloc,
    backend,
    backend_errors,
    call,
    compute_type,
    download,
    free,
    max_storage_bindings,
    upload,
)
from ._runtime import translate as _translate
from ._shapes import broadcast_shapes, broadcast_strides, is_contiguous, size_of

if TYPE_CHECKING:
    from ._array_object import GpuArray

__all__ = [
    "backend",
    "adapter_features",
    "adapter_description",
    "alloc",
    "free",
    "upload",
    "download",
    "synchronize",
    "operand",
    "copy_into",
    "contiguous_copy",
    "fill",
    "elementwise_op",
    "run_elementwise",
    "run_elementwise_plan",
    "cache_put",
    "cached_eager",
    "remember_eager",
    "resolve_elementwise_dtypes",
    "scalar_value",
    "binary_operator",
    "binary_function",
    "unary_op",
    "reduce_fused",
    "backend_errors",
    "call",
    "compute_type",
    "max_storage_bindings",
]

PythonScalar = Union[builtins.bool, int, float, complex]
Input = Union["GpuArray", tuple[Any, DType]]


# ---------------------------------------------------------------------------------------------
# device work
# ---------------------------------------------------------------------------------------------
def synchronize() -> None:
    """Materialise every lazy (fused) array, then wait until all recorded device work has
    finished."""
    _fusion.materialize_all()
    _runtime.synchronize_all()



# ---------------------------------------------------------------------------------------------
# operands and overlap
# ---------------------------------------------------------------------------------------------
def operand(x: GpuArray, shape: Sequence[int] | None = None) -> ArrayOperand:
    """The backend operand of ``x``, broadcast to ``shape`` when given (ValueError if it can't)."""
    strides = x._strides if shape is None else broadcast_strides(x.shape, x._strides, shape)
    return ArrayOperand(x._ptr, x.dtype.name, tuple(strides))


# ---------------------------------------------------------------------------------------------
# copies
# ---------------------------------------------------------------------------------------------
def contiguous_copy(x: GpuArray, dtype: DType | None = None) -> GpuArray:
    """A new C-contiguous array with the values of ``x`` (cast to ``dtype`` if given). With
    fusion on, a lazy array (a cast node: ``x.astype(float32) * 2`` is one kernel)."""
    dtype = dtype or x.dtype
    fz = _fusion
    if fz._enabled and size_of(x.shape):
        _devices.DEFAULT_DEVICE.check_dtype(dtype)
        compute = compute_type(dtype)
        return fz.lazy_array(make_node("x0", (compute,), compute, dtype, x.shape, (x,)))
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


def scalar_value(value: PythonScalar, dtype: DType) -> Any:
    """``value`` as the Python number a scalar operand of ``dtype`` carries.

    Integers must fit integer dtypes (``OverflowError`` otherwise); float16 values are rounded to
    float16 first (so the op sees what NumPy would); bool dtypes take ``bool(value)``; complex
    dtypes take ``complex(value)``. A complex value for a real dtype raises ``TypeError``.
    """
    kind = dtype.kind
    if kind == "f" and dtype.itemsize != 2:
        return float(value)  # OverflowError for ints beyond the float range
    if kind == "b":
        return builtins.bool(value)
    if kind in "iu":
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError(f"cannot convert {value} to integer dtype {dtype}")
            value = int(value)
        _dtypes.check_scalar_in_range(dtype, int(value))
        return int(value)
    if kind == "c":
        if isinstance(value, int) and not isinstance(value, builtins.bool):
            float(value)  # OverflowError for ints beyond the float range
        return complex(value)
    if isinstance(value, complex):
        raise TypeError(f"a complex value cannot be converted to {dtype}")
    with np.errstate(over="ignore"):
        return float(dtype.numpy.type(value))  # (rounded to the narrow float)


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
    compute = storage_type(dst.dtype.name).compute
    try:
        ops_elementwise.elementwise(
            backend(), "x0", compute, [ScalarOperand(value, dst.dtype.name)], [compute],
            operand(dst), dst.shape,
        )
    except Exception as exc:
        raise _translate(exc) from None


# ---------------------------------------------------------------------------------------------
# elementwise
# ---------------------------------------------------------------------------------------------
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
    fz = _fusion
    if fz._enabled:
        # elementwise fusion: a lazy result (validated above: errors stay at this call)
        node = make_node(expr, cast_types, compute, out_dtype, shape, inputs)
        if out is None:
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


def resolve_elementwise_dtypes(name: str, args: Sequence[Any]) -> tuple[DType, DType, DType]:
    """(compute dtype, expression dtype, result dtype) of table op ``name`` on ``args``.

    Arrays are promoted with the promotion table, Python scalars are weak
    (``_dtypes.promote_scalar``, with the device's default float for a float mixed with
    integers). Raises ``TypeError`` for dtypes outside the op's category, pairs that do not
    promote, non-scalar non-array arguments or no array at all; ``OverflowError`` for ints out of
    the result's range.
    """
    row = ELEMENTWISE_OPS[name]
    allowed = _dtypes.DTYPE_CATEGORIES[row.category]
    arrays = [a for a in args if isinstance(a, _ao.GpuArray)]
    if not arrays:
        raise TypeError(f"{name} needs at least one gputensor array argument")
    for a in args:
        if isinstance(a, _ao.GpuArray):
            if a.dtype not in allowed:
                raise TypeError(f"{name} only accepts {row.category} dtypes, got {a.dtype}")
        elif not isinstance(a, (builtins.bool, int, float, complex)):
            raise TypeError(
                f"{name} accepts gputensor arrays and Python scalars, not {type(a).__name__}"
            )
    dtype = arrays[0].dtype
    for a in arrays[1:]:
        dtype = _dtypes.result_type_pair(dtype, a.dtype)
    default_float = _devices.default_dtype("float")
    for a in args:
        if not isinstance(a, _ao.GpuArray):
            dtype = _dtypes.promote_scalar(dtype, a, default_float=default_float)
    if dtype not in allowed:
        raise TypeError(f"{name} only accepts {row.category} dtypes, got {dtype} after promotion")
    if row.result == "float" and dtype.kind not in "fc":
        dtype = default_float
    if row.result == "bool":
        return dtype, _dtypes.bool, _dtypes.bool
    if row.result == "real" and dtype.kind == "c":
        part = _dtypes.DTYPES_BY_NAME[dtype.info.component]
        return dtype, part, part
    return dtype, dtype, dtype


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


def _broadcast2(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """``broadcast_shapes(a, b)``, remembered per pair of shapes (the operators of a loop meet
    the same few pairs); ``ValueError`` as there."""
    shape = _BROADCAST2.get((a, b))
    if shape is None:
        shape = broadcast_shapes(a, b)
        if len(_BROADCAST2) >= 1024:
            _BROADCAST2.clear()
        _BROADCAST2[(a, b)] = shape
    return shape


#: (shape, shape) -> the shape they broadcast to (``_broadcast2``).
_BROADCAST2: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, ...]] = {}


def binary_operator(name: str, reflected: builtins.bool, array_type: type) -> Callable[[Any, Any], Any]:
    """The operator method ``self <op> other`` (``reflected``: ``other <op> self``) of the table
    op ``name`` for the array class ``array_type``: ``elementwise_op`` (``NotImplemented`` for
    operands of other types). With fusion on, a call whose dtype resolution is known
    (``_RESOLVED``) goes straight to ``_fusion_build.lazy_binary`` (the host time of a small op)."""
    operand_types = (array_type, builtins.bool, int, float, complex)

    def method(self: Any, other: Any) -> Any:
        fz = _fusion
        if not fz._enabled:
            # the ready eager launch of this structure (``_EAGER``, keyed as ``_eager_key`` does)
            if isinstance(other, array_type):
                if reflected:
                    key = (name, other._dtype.name, other._shape, other._strides,
                           self._dtype.name, self._shape, self._strides)
                    arrays = [other, self]
                else:
                    key = (name, self._dtype.name, self._shape, self._strides,
                           other._dtype.name, other._shape, other._strides)
                    arrays = [self, other]
                scalars: Any = ()
            else:
                key = ((name, type(other), self._dtype.name, self._shape, self._strides) if reflected
                       else (name, self._dtype.name, self._shape, self._strides, type(other)))
                arrays = [self]
                scalars = (other,)
            call = _EAGER.get(key)
            if call is not None and call.backend is backend():
                return call(arrays, scalars)
        else:
            other_array = isinstance(other, array_type)
            other_key = other._dtype.name if other_array else type(other)
            op = _RESOLVED.get((name, other_key, self._dtype.name) if reflected
                               else (name, self._dtype.name, other_key))
            if op is not None:
                shape = self._shape
                if other_array:
                    if other._shape != shape:  # (the shapes in argument order, for the error)
                        shape = _broadcast2(other._shape, shape) if reflected else _broadcast2(shape, other._shape)
                    value = other
                elif op.float_scalars:
                    value = (float(other), op.compute)
                else:
                    value = (scalar_value(other, op.compute), op.compute)
                if 0 not in shape:
                    if reflected:
                        return lazy_binary(op, shape, value, self)
                    return lazy_binary(op, shape, self, value)
        if not isinstance(other, operand_types):
            return NotImplemented
        if reflected:
            return elementwise_op(name, other, self)
        return elementwise_op(name, self, other)

    return method


def binary_function(name: str, a: Any, b: Any) -> GpuArray:
    """``elementwise_op(name, a, b)`` (the binary functions, ``gt.multiply(a, b)``): with fusion
    on, a call whose dtype resolution is known (``_RESOLVED``) goes straight to
    ``_fusion_build.lazy_binary`` (as the operators do: ``binary_operator``)."""
    fz = _fusion
    if fz._enabled:
        array_type = _ao.GpuArray
        is_a = isinstance(a, array_type)
        is_b = isinstance(b, array_type)
        op = _RESOLVED.get((name, a._dtype.name if is_a else type(a), b._dtype.name if is_b else type(b)))
        if op is not None:
            x, y = a, b
            if is_a:
                shape = a._shape
                if is_b:
                    if b._shape != shape:
                        shape = _broadcast2(shape, b._shape)
                else:
                    y = (float(b) if op.float_scalars else scalar_value(b, op.compute), op.compute)
            else:
                shape = b._shape
                x = (float(a) if op.float_scalars else scalar_value(a, op.compute), op.compute)
            if 0 not in shape:
                return lazy_binary(op, shape, x, y)
    return elementwise_op(name, a, b)


def unary_op(name: str, x: Any) -> GpuArray:
    """``elementwise_op(name, x)`` (the unary functions and operators): with fusion on, a call
    whose dtype resolution is known (``_RESOLVED``) goes straight to ``_fusion_build.lazy_unary``."""
    fz = _fusion
    if fz._enabled and isinstance(x, _ao.GpuArray):
        op = _RESOLVED.get((name, x._dtype.name))
        if op is not None and 0 not in x._shape:
            return lazy_unary(op, x)
    return elementwise_op(name, x)


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


def cached_eager(name: str, args: Sequence[Any]) -> tuple[tuple[Any, ...] | None, GpuArray | None]:
    """The ready eager launch of a call that is not a table op (``where``) by its argument
    structure (as ``_eager_key``: dtypes, shapes, strides, scalar types): ``(key, result)``,
    the result None when the structure has not succeeded before (or fusion is on: key None);
    then run the call and hand its plan to :func:`remember_eager` under ``key``. Raises as the
    cached launch (scalar ranges, pointers)."""
    if _fusion._enabled:
        return None, None
    key, arrays, scalars = _eager_key(name, args)
    call = _EAGER.get(key)
    if call is not None and call.backend is backend():
        return key, call(arrays, scalars)
    return key, None


def remember_eager(key: tuple[Any, ...] | None, scalar_dtype: DType, value: GpuArray, plan: Any) -> None:
    """Keep the launch ``plan`` that wrote the new array ``value`` for later calls of the
    structure ``key`` (:func:`cached_eager`); scalar arguments are converted to
    ``scalar_dtype`` (``scalar_value``). Nothing without a key or a plan."""
    if key is not None and plan is not None and type(value) is _ao.GpuArray:
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


# ---------------------------------------------------------------------------------------------
# reductions of lazy arrays (``_fusion``)
# ---------------------------------------------------------------------------------------------
def reduce_fused(op: str, x: GpuArray, axes: Sequence[int], out: GpuArray, *,
                 acc_dtype: DType | None = None, ddof: float = 0) -> builtins.bool:
    """Reduce ``x`` over ``axes`` into the contiguous ``out`` (``x``'s shape without ``axes``;
    op, dtypes and ``ddof`` as ``ops_reduce.reduce_strided``). A lazy ``x`` is evaluated inside
    the reduction's loads (its elementwise DAG is the reduction's prologue: ``x`` stays lazy and
    nothing but ``out`` is written); an array with storage is read without the write-hazard
    flush (``_fusion``). Returns False, recording nothing, when a lazy ``x`` cannot be fused
    (an input view larger than one binding window, too many dims): the caller then reduces
    ``x`` itself (materialising it). Backend errors as :func:`reduce_strided`."""
    fz = _fusion
    shape = tuple(x.shape)
    kwargs = dict(acc_dtype=None if acc_dtype is None else acc_dtype.name, dst_strides=tuple(out._strides),
                  ddof=ddof)
    if type(x) is not fz.LazyArray:
        try:
            ops_reduce.reduce_strided(backend(), op, fz.leaf_ptr(x), x.dtype.name, shape, tuple(x._strides),
                                      tuple(axes), out._ptr, out.dtype.name, **kwargs)
        except Exception as exc:
            raise _translate(exc) from None
        return True
    node = fz.node_of(x)
    be = backend()
    kept_key = None
    if node.skey is not None:  # the code by the DAG's structure key (no walk over the DAG)
        leaves = node.leaves
        kept_key = (op, node.skey, x._dtype.name, shape, tuple(x._strides), tuple(axes), out._dtype.name,
                    kwargs["dst_strides"], kwargs["acc_dtype"], ddof,
                    tuple([(leaf._dtype.name, leaf._shape, leaf._strides) for leaf in leaves]))
        kept = _FUSED_REDUCE.get(kept_key)
        if kept is not None and kept.valid_on(be):  # the kept plan: no operands, no key of reduce_strided
            try:
                kept.launch(be, [fz.leaf_ptr(leaf) for leaf in leaves], node.scalars, out._ptr)
            except Exception as exc:
                raise _translate(exc) from None
            return True
        lets, expr, _, names = fz.fused_code(node, round_root=True)
        scalars = list(zip(node.scalars, names[len(leaves):]))
    else:
        leaves, pairs, lets, expr, _ = fz.program(node, round_root=True)
        scalars = [(value, dtype.name) for value, dtype in pairs]
    inputs: list[Any] = [
        ArrayOperand(fz.leaf_ptr(leaf), leaf.dtype.name, tuple(broadcast_strides(leaf.shape, leaf._strides, shape)))
        for leaf in leaves
    ]
    inputs += [ScalarOperand(value, name) for value, name in scalars]
    prologue = ops_reduce.Prologue(tuple(inputs), lets, expr)
    try:
        ops_reduce.reduce_strided(be, op, 0, x.dtype.name, shape, tuple(x._strides), tuple(axes),
                                  out._ptr, out.dtype.name, prologue=prologue, **kwargs)
    except BackendError as exc:
        if exc.kind == BackendErrorKind.UNSUPPORTED:
            return False  # the caller materialises x (and reports a real dtype problem)
        raise _translate(exc) from None
    if kept_key is not None and not _devices.is_multi():
        kept = ops_reduce.planned_reduce_fused(be, op, x.dtype.name, shape, tuple(x._strides), tuple(axes),
                                               out.dtype.name, prologue, **kwargs)
        if kept is not None:
            cache_put(_FUSED_REDUCE, kept_key, kept)
    return True


#: (op, DAG structure key, dtype, shape, strides, axes, out dtype and strides, accumulation
#: dtype, ddof, per leaf: dtype name, shape, strides) -> the backend's kept plan of a fused
#: reduction (``ops_reduce.planned_reduce_fused``): a repeated ``reduce_fused`` replays it.
_FUSED_REDUCE: dict[tuple[Any, ...], Any] = {}


_devices.on_multi(_forget_wide_int)
