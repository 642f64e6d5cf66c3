"""The one frontend module that talks to the backend (``gputensor._backend``).

Namespace modules validate arguments and call the functions here; this module turns GpuArrays
into backend operands (pointer of element [0, ..., 0], dtype name, strides in elements), resolves
dtypes for the op table, allocates outputs and records the kernels.

Functions for other frontend modules:

* memory: :func:`alloc`, :func:`free`, :func:`upload`, :func:`download`, :func:`synchronize`;
* :func:`copy_into` (``dst[...] = src`` with broadcasting and casting; overlap-safe) and
  :func:`fill` (``dst[...] = python scalar``);
* :func:`elementwise_op` (an op of the namespace table ``_ops.ELEMENTWISE_OPS`` with the spec's
  dtype rules, broadcasting and weak Python scalars, optional in-place ``out=``) and the
  lower-level :func:`run_elementwise` (any backend op, explicit dtypes; for ``where``, ``clip``
  and the like);
* :func:`operand`, :func:`reduce_strided`, :func:`gemm`, :func:`gemm_strided_batched`,
  :func:`matmul_int`: thin forwards to the backend's reduction, gemm and integer matmul modules.

Backend errors of kind *unsupported* become ``TypeError`` (an adapter feature is missing).
"""

from __future__ import annotations

import builtins
import functools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from . import _array_object as _ao
from . import _devices, _dtypes
from ._backend import get_backend
from ._backend import ops_elementwise
from ._backend.elementwise_ops import expression
from ._backend.ops_elementwise import ArrayOperand, ScalarOperand
from ._backend.wgsl_types import storage_type
from ._dtypes import DType
from ._ops import ELEMENTWISE_OPS
from ._shapes import broadcast_shapes, broadcast_strides, contiguous_strides, is_contiguous, size_of

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
    "resolve_elementwise_dtypes",
    "scalar_value",
    "reduce_strided",
    "gemm",
    "gemm_strided_batched",
    "matmul_int",
]

PythonScalar = Union[builtins.bool, int, float]
Input = Union["GpuArray", tuple[Any, DType]]


# ---------------------------------------------------------------------------------------------
# backend, memory
# ---------------------------------------------------------------------------------------------
def backend() -> Any:
    """The shared, initialised WebGpuBackend."""
    return get_backend()


@functools.cache
def adapter_features() -> frozenset[str]:
    """The WebGPU features the device was granted."""
    return frozenset(str(f) for f in backend().context.features)


def adapter_description() -> str:
    """One line naming the adapter."""
    return repr(backend())


def alloc(nbytes: int, zero: builtins.bool = True) -> int:
    """Allocate ``nbytes`` of device memory (zero-filled unless ``zero=False``) from the memory
    pool; returns a device pointer. Raises ``MemoryError`` (with the sizes) when the device is
    out of memory even after the pool released its cached blocks."""
    try:
        return backend().alloc(nbytes, zero=zero)
    except Exception as exc:  # issue 5: out of device memory -> MemoryError
        from ._backend.errors import BackendErrorKind

        if getattr(exc, "kind", None) == BackendErrorKind.OUT_OF_MEMORY:
            raise MemoryError(str(getattr(exc, "message", exc))) from None
        raise


def free(ptr: int) -> None:
    """Release an allocation; silent when the backend is gone (interpreter shutdown)."""
    try:
        backend().free(ptr)
    except Exception:  # noqa: BLE001 - finalizers must never raise
        pass


def upload(ptr: int, host: np.ndarray) -> None:
    """Copy the bytes of the C-contiguous ``host`` array to ``ptr``."""
    if host.nbytes:
        backend().copy_htod(ptr, np.asarray(host, order="C").reshape(-1).view(np.uint8))


def download(host: np.ndarray, ptr: int) -> None:
    """Fill the C-contiguous, writable ``host`` array from the device bytes at ``ptr``."""
    if host.nbytes:
        backend().copy_dtoh(host.reshape(-1).view(np.uint8), ptr)


def synchronize() -> None:
    """Wait until all recorded device work has finished."""
    backend().synchronize()


# ---------------------------------------------------------------------------------------------
# operands and overlap
# ---------------------------------------------------------------------------------------------
def operand(x: GpuArray, shape: Sequence[int] | None = None) -> ArrayOperand:
    """The backend operand of ``x``, broadcast to ``shape`` when given (ValueError if it can't)."""
    strides = x._strides if shape is None else broadcast_strides(x.shape, x._strides, shape)
    return ArrayOperand(x._ptr, x.dtype.name, tuple(strides))


def _byte_range(x: GpuArray, shape: Sequence[int], strides: Sequence[int]) -> tuple[int, int]:
    """[start, stop) bytes from the allocation start that ``x`` viewed as ``shape`` touches."""
    lo = hi = 0
    for n, s in zip(shape, strides):
        if s < 0:
            lo += s * (n - 1)
        else:
            hi += s * (n - 1)
    size = x.dtype.itemsize
    base = x._offset * size
    return base + lo * size, base + (hi + 1) * size


def _conflicts(src: GpuArray, src_strides: Sequence[int], dst: GpuArray) -> bool:
    """Whether reading ``src`` while writing ``dst`` (same shape) could read clobbered data."""
    if src._storage is not dst._storage or size_of(dst.shape) == 0:
        return False
    if src._offset == dst._offset and tuple(src_strides) == tuple(dst._strides) \
            and src.dtype.itemsize == dst.dtype.itemsize:
        return False  # element i reads exactly what element i writes
    a0, a1 = _byte_range(src, dst.shape, src_strides)
    b0, b1 = _byte_range(dst, dst.shape, dst._strides)
    # packed dtypes share u32 words: widen to word boundaries
    a0, b0 = a0 // 4 * 4, b0 // 4 * 4
    a1, b1 = -(-a1 // 4) * 4, -(-b1 // 4) * 4
    return a0 < b1 and b0 < a1


def _translate(exc: Exception) -> Exception:
    from ._backend.errors import BackendError, BackendErrorKind

    if isinstance(exc, BackendError) and exc.kind == BackendErrorKind.UNSUPPORTED:
        return TypeError(str(exc))
    return exc


# ---------------------------------------------------------------------------------------------
# copies
# ---------------------------------------------------------------------------------------------
def contiguous_copy(x: GpuArray, dtype: DType | None = None) -> GpuArray:
    """A new C-contiguous array with the values of ``x`` (cast to ``dtype`` if given)."""
    out = _ao.GpuArray._empty(x.shape, dtype or x.dtype, zero=False)  # fully overwritten
    copy_into(out, x)
    return out


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
    if _conflicts(src, strides, dst):
        src = contiguous_copy(src)
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
    float16 first (so the op sees what NumPy would); bool dtypes take ``bool(value)``.
    """
    if dtype == _dtypes.bool:
        return builtins.bool(value)
    if dtype.kind in "iu":
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError(f"cannot convert {value} to integer dtype {dtype}")
            value = int(value)
        _dtypes.check_scalar_in_range(dtype, int(value))
        return int(value)
    with np.errstate(over="ignore"):
        if dtype == _dtypes.float16:
            return float(np.float16(value))
        return float(value)


def fill(dst: GpuArray, value: Any) -> None:
    """``dst[...] = value`` for a Python (or NumPy) scalar ``value``, converted to ``dst.dtype``
    as NumPy's assignment does (float to int truncates; ints must fit: ``OverflowError``).

    Raises ``TypeError`` for complex and non-numeric values.
    """
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        value = value.item()
    if isinstance(value, complex) or not isinstance(value, (builtins.bool, int, float)):
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

    ``op`` is a row of the backend table ``elementwise_ops.OPS``. ``inputs`` are GpuArrays
    (broadcast together) or ``(value, dtype)`` scalar pairs; input ``k`` is converted to the
    compute type of ``casts[k]``; the expression has the compute type of ``expr_dtype``; the
    op's form (float/int/uint/bool) is picked by ``op_dtype`` (default ``expr_dtype``; for
    comparisons the inputs' dtype); the result is stored as ``out_dtype``.
    With ``out`` the result is written there (its shape must equal the broadcast shape:
    ``ValueError``), reading overlapping inputs safely.

    Raises ``TypeError`` when the op has no form for the compute type or the device lacks a
    dtype, ``ValueError`` for shapes that do not broadcast.
    """
    arrays = [x for x in inputs if isinstance(x, _ao.GpuArray)]
    shape = broadcast_shapes(*(x.shape for x in arrays))
    device = _devices.DEFAULT_DEVICE
    for dt in list(casts) + [expr_dtype, out_dtype]:
        device.check_dtype(dt)
    if out is None:
        out = _ao.GpuArray._empty(shape, out_dtype, zero=False)  # every element is written
    else:
        if out.shape != shape:
            raise ValueError(f"output shape {out.shape} does not match the broadcast shape {shape}")
        if out.dtype != out_dtype:
            raise TypeError(f"output dtype {out.dtype} does not match the result dtype {out_dtype}")
    if size_of(shape) == 0:
        return out
    compute = storage_type(expr_dtype.name).compute
    form_dtype = op_dtype or expr_dtype
    try:
        expr = expression(op, storage_type(form_dtype.name).compute)
    except KeyError:
        raise TypeError(f"{op} is not defined for {form_dtype}") from None
    operands: list[Any] = []
    for x in inputs:
        if isinstance(x, _ao.GpuArray):
            strides = broadcast_strides(x.shape, x._strides, shape)
            if _conflicts(x, strides, out):
                x = contiguous_copy(x)
                strides = broadcast_strides(x.shape, x._strides, shape)
            operands.append(ArrayOperand(x._ptr, x.dtype.name, tuple(strides)))
        else:
            value, dt = x
            operands.append(ScalarOperand(value, dt.name))
    cast_types = [storage_type(dt.name).compute for dt in casts]
    try:
        ops_elementwise.elementwise(backend(), expr, compute, operands, cast_types, operand(out), shape)
    except Exception as exc:
        raise _translate(exc) from None
    return out


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
    if row.result == "float" and dtype.kind != "f":
        dtype = default_float
    if row.result == "bool":
        return dtype, _dtypes.bool, _dtypes.bool
    return dtype, dtype, dtype


def elementwise_op(name: str, *args: Any, out: GpuArray | None = None) -> GpuArray:
    """Apply the namespace op ``name`` (a row of ``_ops.ELEMENTWISE_OPS``) to ``args``.

    ``args`` are GpuArrays and Python scalars (weak). With ``out`` (in-place operators) the
    result dtype must equal ``out.dtype`` (``TypeError``) and the broadcast shape must equal
    ``out.shape`` (``ValueError``). See :func:`resolve_elementwise_dtypes` for the dtype errors.
    """
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
    return run_elementwise(row.kernel_op_for(compute.name), inputs, [compute] * len(inputs), expr_dtype, result,
                           out=out, op_dtype=compute)


# ---------------------------------------------------------------------------------------------
# forwards to the reduction and gemm modules (engineer B's functions use these)
# ---------------------------------------------------------------------------------------------
def reduce_strided(*args: Any, **kwargs: Any) -> Any:
    """``ops_reduce.reduce_strided(backend, *args, **kwargs)``."""
    from ._backend import ops_reduce

    try:
        return ops_reduce.reduce_strided(backend(), *args, **kwargs)
    except Exception as exc:
        raise _translate(exc) from None


def gemm(*args: Any, **kwargs: Any) -> Any:
    """``ops_gemm.gemm(backend, *args, **kwargs)``."""
    from ._backend import ops_gemm

    try:
        return ops_gemm.gemm(backend(), *args, **kwargs)
    except Exception as exc:
        raise _translate(exc) from None


def gemm_strided_batched(*args: Any, **kwargs: Any) -> Any:
    """``ops_gemm.gemm_strided_batched(backend, *args, **kwargs)``."""
    from ._backend import ops_gemm

    try:
        return ops_gemm.gemm_strided_batched(backend(), *args, **kwargs)
    except Exception as exc:
        raise _translate(exc) from None


def matmul_int(*args: Any, **kwargs: Any) -> Any:
    """``ops_matmul_int.matmul_int(backend, *args, **kwargs)``."""
    from ._backend import ops_matmul_int

    try:
        return ops_matmul_int.matmul_int(backend(), *args, **kwargs)
    except Exception as exc:
        raise _translate(exc) from None


def contiguous_strides_of(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides in elements (re-exported for convenience)."""
    return contiguous_strides(shape)
