"""``int_mm``: the 8-bit integer matrix product with 32-bit results (``torch._int_mm``)."""

from __future__ import annotations

from .._array_object import GpuArray
from .._dtypes import int8, int32, uint8, uint32
from .._linear_algebra_functions import _matmul_integer
from .._manipulation_functions import _check_array
from .._shapes import broadcast_shapes

#: operand dtype -> result dtype
_RESULTS = {int8: int32, uint8: uint32}


def int_mm(a: GpuArray, b: GpuArray, /) -> GpuArray:
    """``a @ b`` of int8 matrices as int32 (uint8 ones as uint32), as ``torch._int_mm``: every
    product and sum is exact (|sum| < 2^31 while k < 131072; beyond, sums wrap modulo 2^32).

    ``a`` is (..., m, k) and ``b`` (..., k, n), at least 2-D, any strides (transposed views are
    read in place); batch dims broadcast. Where the device has subgroup matrices (Dawn's
    ``chromium-experimental-subgroup-matrix``) the product runs on them (tensor cores), else on
    the integer matmul kernel. ``a @ b`` of int8 arrays gives the same sums wrapped to int8, as
    the Array API says.

    Raises ``TypeError`` for non-arrays and for dtypes other than int8 for both operands (or
    uint8 for both), ``ValueError`` for operands below 2-D, contraction sizes that differ or
    batch dims that do not broadcast.
    """
    _check_array(a, "a")
    _check_array(b, "b")
    result = _RESULTS.get(a.dtype)
    if result is None or b.dtype != a.dtype:
        raise TypeError(f"int_mm needs two int8 (or two uint8) arrays, got {a.dtype} and {b.dtype}")
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(f"int_mm needs operands of at least 2 dimensions, got {a.ndim} and {b.ndim}")
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"int_mm: contraction sizes differ: {a.shape} @ {b.shape} ({a.shape[-1]} != {b.shape[-2]})")
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return _matmul_integer(a, b, result, batch)
