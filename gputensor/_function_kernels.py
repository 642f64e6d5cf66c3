"""Kernel helpers of the function modules: reductions, gemm, scans (GpuArray level).

The namespace modules (_statistical_functions, _linear_algebra_functions, _searching_functions,
_indexing_functions, _utility_functions) call these helpers, which call the backend operations
(``ops_reduce``, ``ops_gemm``, ``ops_matmul_int``, ``ops_scan``) on ``_dispatch.backend()`` inside
``_dispatch.backend_errors()``: backend errors of kind unsupported become ``TypeError`` naming
the missing feature.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _dispatch
from ._backend import ops_gemm, ops_matmul_int, ops_reduce, ops_scan
from ._array_object import GpuArray
from ._dtypes import DType, float32, float64, int32, int64, uint32, uint64
from ._shapes import contiguous_strides, merge_dims

__all__ = [
    "default_int",
    "default_uint",
    "supports_dtype",
    "reduce",
    "gemm_batched",
    "gemm_batched_calls",
    "gemm_strided_views",
    "int_accumulator",
    "matmul_int_batched",
    "scan_axis",
    "upload",
]


def supports_dtype(dtype: DType) -> bool:
    """Whether the device has the feature ``dtype`` needs natively (emulated int64: False)."""
    return dtype.feature is None or dtype.feature in _dispatch.adapter_features()


def default_int() -> DType:
    """The current device's default integer dtype: int64 (int32 without 'shader-int64')."""
    return int64 if supports_dtype(int64) else int32


def default_uint() -> DType:
    """The unsigned integer dtype with the current device's default integer's width."""
    return uint64 if supports_dtype(uint64) else uint32


def reduce(op: str, x: GpuArray, axes: Sequence[int], out_dtype: DType, acc_dtype: DType | None = None,
           *, ddof: float = 0) -> GpuArray:
    """Reduce ``x`` over ``axes`` (non-empty; ``x`` non-empty along them) with ``op`` ('sum',
    'prod', 'max', 'min', 'mean', 'all', 'any', 'argmax', 'argmin', 'var', 'std' with ``ddof``)
    into a new contiguous array of ``out_dtype`` whose shape is ``x.shape`` without ``axes``."""
    axes = tuple(sorted(axes))
    out_shape = tuple(n for d, n in enumerate(x.shape) if d not in axes)
    # not zero-filled: the kernel writes every element (packed lanes clear, then set, their bits)
    out = GpuArray._empty(out_shape, out_dtype, zero=False)
    if out.size == 0:
        return out
    # elementwise fusion: a lazy x (an elementwise expression) is evaluated inside the
    # reduction's loads instead of being materialised; False when a lazy x can't fuse
    if _dispatch.reduce_fused(op, x, axes, out, acc_dtype=acc_dtype, ddof=ddof):
        return out
    with _dispatch.backend_errors():
        ops_reduce.reduce_strided(
            _dispatch.backend(), op, x._ptr, x.dtype.name, tuple(x.shape), tuple(x._strides), axes,
            out._ptr, out_dtype.name,
            acc_dtype=None if acc_dtype is None else acc_dtype.name,
            dst_strides=contiguous_strides(out_shape),
            ddof=ddof,
        )
    return out


def _batch_offsets(a: GpuArray, b: GpuArray, out: GpuArray) -> tuple[int, tuple[int, int, int], list[tuple[int, ...]]]:
    """The batch dims of a matmul (``a``, ``b`` already broadcast to ``out``'s), merged where
    every operand allows it: (size of the innermost merged dim -- one kernel batch --, its
    element strides in a, b and out, and the element offsets in a, b and out of each index of
    the outer merged dims, which are looped over)."""
    batch_shape = out.shape[:-2]
    if not batch_shape:
        bshape, bstrides = (1,), [(0,), (0,), (0,)]
    else:
        bshape, bstrides = merge_dims(batch_shape, a._strides[:-2], b._strides[:-2], out._strides[:-2])
    *outer, inner = bshape
    offsets = [tuple(sum(i * st for i, st in zip(idx, strides)) for strides in bstrides)
               for idx in (np.ndindex(*outer) if outer else [()])]
    return inner, (bstrides[0][-1], bstrides[1][-1], bstrides[2][-1]), offsets


def _gemm_layout(rows: int, cols: int, s_row: int, s_col: int) -> tuple[bool, int] | None:
    """How a row-major ``rows x cols`` operand with strides (s_row, s_col) reads as a column-major
    gemm operand of the *swapped* product (C^T = B^T A^T): (transposed, ld) or None when the
    strides fit neither layout."""
    if cols == 1 or s_col == 1:
        ld = s_row if rows > 1 else max(cols, 1)
        if ld >= max(1, cols):
            return False, ld
    if rows == 1 or s_row == 1:
        ld = s_col if cols > 1 else max(rows, 1)
        if ld >= max(1, rows):
            return True, ld
    return None


#: A ``ops_gemm.gemm_strided_batched`` call of ``gemm_batched_calls``: its arguments without the
#: pointers (trans_a, trans_b, m, n, k, alpha, lda, stride_a, ldb, stride_b, beta, ldc, stride_c,
#: batch), then the byte offsets of its A, B and C pointers from ``b._ptr``, ``a._ptr`` and
#: ``out._ptr`` (the swapped product: the gemm's A is ``b``).
GemmCallArgs = tuple[tuple[Any, ...], int, int, int]


def gemm_batched_calls(a: GpuArray, b: GpuArray, out: GpuArray) -> list[GemmCallArgs] | None:
    """The ``ops_gemm.gemm_strided_batched`` calls of ``gemm_batched(a, b, out)`` (see
    ``GemmCallArgs``), or None when an operand's layout needs the general-stride gemm."""
    if not (gemm_layout_ok(a) and gemm_layout_ok(b)):
        return None
    m, k = a.shape[-2:]
    n = b.shape[-1]
    la = _gemm_layout(m, k, a._strides[-2], a._strides[-1])
    lb = _gemm_layout(k, n, b._strides[-2], b._strides[-1])
    assert la is not None and lb is not None
    ta, lda = la
    tb, ldb = lb
    op_a = "T" if ta else "N"
    op_b = "T" if tb else "N"
    inner, (sa, sb, sc), offsets = _batch_offsets(a, b, out)
    itemsize = out.dtype.itemsize
    # swapped product: C^T (n x m) = op(B^T) (n x k) * op(A^T) (k x m)
    args = (op_b, op_a, n, m, k, 1.0, ldb, sb, lda, sa, 0.0, max(1, n), sc, inner)
    return [(args, off_b * itemsize, off_a * itemsize, off_c * itemsize) for off_a, off_b, off_c in offsets]


def gemm_batched(a: GpuArray, b: GpuArray, out: GpuArray) -> None:
    """``out[..., :, :] = a[..., :, :] @ b[..., :, :]`` for float operands of out's dtype whose
    batch dims are already broadcast to out's (strides may be 0). ``out`` must be contiguous.

    No operand is copied: when both fit a BLAS layout (``gemm_layout_ok``) the product runs on
    ``gemm_strided_batched`` as the swapped column-major product (``gemm_batched_calls``); any
    other layout (negative steps, steps in both matrix dims, 0-stride matrix dims) runs on the
    general-stride gemm (:func:`gemm_strided_views`)."""
    calls = gemm_batched_calls(a, b, out)
    if calls is None:
        gemm_strided_views(a, b, out)
        return
    dtype = out.dtype.name
    backend = _dispatch.backend()
    with _dispatch.backend_errors():
        for (ta, tb, m, n, k, alpha, lda, sa, ldb, sb, beta, ldc, sc, batch), off_b, off_a, off_c in calls:
            ops_gemm.gemm_strided_batched(backend, ta, tb, m, n, k, alpha, b._ptr + off_b, lda, sa,
                                          a._ptr + off_a, ldb, sb, beta, out._ptr + off_c, ldc, sc, batch,
                                          dtype=dtype)


def gemm_strided_views(a: GpuArray, b: GpuArray, out: GpuArray) -> None:
    """``out[..., :, :] = a[..., :, :] @ b[..., :, :]`` on the backend's general-stride gemm
    (``ops_gemm.gemm_strided``): float operands of out's dtype with any strides (negative, 0,
    steps in both matrix dims), batch dims already broadcast to ``out``'s, read in place.

    Batch dims are merged where every operand allows it; the innermost merged batch dim is one
    ``gemm_strided`` call (its batch), outer ones are looped over here."""

    m, k = a.shape[-2:]
    n = b.shape[-1]
    inner, (sa, sb, sc), offsets = _batch_offsets(a, b, out)
    itemsize = out.dtype.itemsize
    backend = _dispatch.backend()
    with _dispatch.backend_errors():
        for off_a, off_b, off_c in offsets:
            ops_gemm.gemm_strided(
                backend, m, n, k, 1.0,
                a._ptr + off_a * itemsize, a._strides[-2:],
                b._ptr + off_b * itemsize, b._strides[-2:],
                0.0, out._ptr + off_c * itemsize, out._strides[-2:],
                inner, (sa, sb, sc), dtype=out.dtype.name,
            )


def int_accumulator(dtype: DType) -> DType:
    """The dtype an integer matmul with result ``dtype`` accumulates in: ``dtype`` itself for
    64-bit integers, int32/uint32 for 8/16/32-bit ones (wrap-around arithmetic makes truncating
    the wider sum to ``dtype`` exactly NumPy's wrapped result). Matches the backend's
    ``ops_matmul_int.accumulator_dtype``."""
    if dtype.itemsize == 8:
        return dtype
    return int32 if dtype.kind == "i" else uint32


def matmul_int_batched(a: GpuArray, b: GpuArray, out: GpuArray) -> None:
    """``out[..., :, :] = a[..., :, :] @ b[..., :, :]`` on the integer matmul kernel, for integer
    operands of any dtypes and strides (negative and 0 included: no copy) whose batch dims are
    already broadcast to ``out``'s. ``out`` has an accumulator dtype (int32, uint32, int64,
    uint64, see :func:`int_accumulator`) and distinct elements.

    Batch dims are merged where every operand allows it; the innermost merged batch dim is the
    kernel's batch (one dispatch per window block), outer ones are looped over here."""
    m, k = a.shape[-2:]
    n = b.shape[-1]
    inner, (sa, sb, sc), offsets = _batch_offsets(a, b, out)
    with _dispatch.backend_errors():
        for off_a, off_b, off_c in offsets:
            ops_matmul_int.matmul_int(
                _dispatch.backend(), m, n, k, inner,
                a._ptr + off_a * a.dtype.itemsize, a.dtype.name, (sa, a._strides[-2], a._strides[-1]),
                b._ptr + off_b * b.dtype.itemsize, b.dtype.name, (sb, b._strides[-2], b._strides[-1]),
                out._ptr + off_c * out.dtype.itemsize, out.dtype.name,
                (sc, out._strides[-2], out._strides[-1]),
            )


def gemm_layout_ok(x: GpuArray) -> bool:
    """Whether ``x``'s last two dims can be passed to gemm without a copy (and no batch stride is
    negative)."""
    if any(s < 0 for s in x._strides):
        return False
    r, c = x.shape[-2:]
    return _gemm_layout(r, c, x._strides[-2], x._strides[-1]) is not None


def scan_axis(op: str, x: GpuArray, axis: int, dst: GpuArray, acc_dtype: DType) -> None:
    """``dst = inclusive scan ('sum' / 'prod') of x along axis`` on the backend's strided scan
    (``ops_scan.scan_strided``): ``x`` is read in place through its strides (any view), ``dst`` (a
    view of x's shape, e.g. of a new contiguous array) written once, accumulating in
    ``acc_dtype``. No copy of ``x`` is made."""

    with _dispatch.backend_errors():
        ops_scan.scan_strided(
            _dispatch.backend(), op, x._ptr, x.dtype.name, tuple(x.shape), tuple(x._strides), axis,
            dst._ptr, dst.dtype.name, tuple(dst._strides), acc_dtype=acc_dtype.name,
        )


def scan_dtype(dtype: DType) -> DType:
    """The dtype a scan of ``dtype`` runs in (32/64-bit, unpacked)."""
    if dtype.kind == "f":
        return float64 if dtype == float64 else float32
    if dtype.kind == "u" or dtype.name == "bool":
        return uint64 if dtype == uint64 else uint32
    return int64 if dtype == int64 else int32


def upload(data: np.ndarray, dtype: DType) -> GpuArray:
    """A new contiguous GpuArray holding the host array ``data`` (converted to ``dtype``)."""
    host = np.ascontiguousarray(data, dtype=dtype.numpy)
    out = GpuArray._empty(host.shape, dtype)
    _dispatch.upload(out._ptr, host)
    return out
