"""Real views of complex arrays (no copies): the parts of a complex array, and a complex array
read as (real, imaginary) pairs of its component dtype or back.

Complex arrays keep NumPy's interleaved layout, so element ``k`` of a complex array is the two
component-dtype elements ``2k`` (real part) and ``2k + 1`` (imaginary part) of the same storage:
a part is a view with doubled strides and offset, and a complex array is a real array with one
more dimension of size 2 and stride 1. The linear-algebra and scan paths use these to run
complex work on the real kernels (the real parts and imaginary parts of a sum are the sums of
the parts; a complex product is a real product of a real view and a real expansion).
"""

from __future__ import annotations

from ._array_object import GpuArray
from ._dtypes import DTYPES_BY_NAME, DType

__all__ = ["component_dtype", "part", "as_pairs", "from_pairs"]


def component_dtype(dtype: DType) -> DType:
    """float32 for complex64, float64 for complex128 (``ValueError`` for other dtypes)."""
    if dtype.kind != "c":
        raise ValueError(f"{dtype} is not a complex dtype")
    return DTYPES_BY_NAME[dtype.info.component]


def part(x: GpuArray, which: int) -> GpuArray:
    """The real (``which=0``) or imaginary (``which=1``) part of the complex array ``x`` as a
    view of the component dtype sharing ``x``'s storage (writing it writes ``x``)."""
    return GpuArray._new(x._storage, x._shape, tuple(2 * s for s in x._strides), 2 * x._offset + which,
                         component_dtype(x.dtype))


def as_pairs(x: GpuArray) -> GpuArray:
    """The complex array ``x`` as a view of its component dtype with a last dimension of size 2
    (real, imaginary) and stride 1."""
    return GpuArray._new(x._storage, x._shape + (2,), tuple(2 * s for s in x._strides) + (1,), 2 * x._offset,
                         component_dtype(x.dtype))


def from_pairs(y: GpuArray, dtype: DType) -> GpuArray:
    """The inverse of :func:`as_pairs`: ``y`` (of ``dtype``'s component dtype, a last dimension
    of size 2 and stride 1, every other stride and the offset even) as a complex view of
    ``dtype``. ``ValueError`` when ``y``'s layout does not allow it."""
    if y.dtype != component_dtype(dtype) or not y._shape or y._shape[-1] != 2 or y._strides[-1] != 1:
        raise ValueError(f"not a view of (real, imaginary) pairs of {dtype}")
    if y._offset % 2 or any(s % 2 for s in y._strides[:-1]):
        raise ValueError("the pairs are not aligned to complex elements")
    return GpuArray._new(y._storage, y._shape[:-1], tuple(s // 2 for s in y._strides[:-1]), y._offset // 2, dtype)
