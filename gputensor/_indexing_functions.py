"""Array API indexing function ``take``.

Indices are read back to the host (they decide which elements move, and out-of-range indices
must raise ``IndexError`` before any kernel runs), normalised (negative indices count from the
end), and the selection is written as strided copies, one per run of consecutive indices
(``x[..., i:i+r, ...]`` -> ``out[..., j:j+r, ...]``), so slices and repeated blocks cost one
dispatch each. (A gather kernel for long random index lists is future work.)
"""

from __future__ import annotations

import numpy as np

from . import _dispatch
from ._array_object import GpuArray
from ._dtypes import DTYPE_CATEGORIES
from ._manipulation_functions import _check_array, _view
from ._shapes import normalize_axis

__all__ = ["take"]


def take(x: GpuArray, indices: GpuArray, /, *, axis: int | None = None) -> GpuArray:
    """Elements of ``x`` at ``indices`` (1-D integer array) along ``axis`` (required unless ``x``
    is 1-D). The result has ``x``'s shape with the axis replaced by ``len(indices)``.

    Raises ``TypeError`` for non-integer indices, ``ValueError`` for N-d indices, a missing axis or
    a 0-d ``x``, ``IndexError`` for an index out of range, :class:`AxisError` for a bad axis.
    """
    _check_array(x)
    _check_array(indices, "indices")
    if indices.dtype not in DTYPE_CATEGORIES["integer"]:
        raise TypeError(f"indices must have an integer dtype, got {indices.dtype}")
    if indices.ndim != 1:
        raise ValueError(f"indices must be one-dimensional, got {indices.ndim} dimensions")
    if axis is None:
        if x.ndim != 1:
            raise ValueError("axis must be given when x has more than one dimension")
        axis = 0
    if x.ndim == 0:
        raise ValueError("take needs an array with at least one dimension")
    ax = normalize_axis(axis, x.ndim)
    n = x.shape[ax]
    idx = np.asarray(indices).astype(np.int64, copy=False)
    bad = (idx < -n) | (idx >= n)
    if bad.any():
        i = int(idx[bad][0])
        raise IndexError(f"index {i} is out of bounds for axis {ax} with size {n}")
    idx = np.where(idx < 0, idx + n, idx)
    out_shape = x.shape[:ax] + (len(idx),) + x.shape[ax + 1 :]
    out = GpuArray._empty(out_shape, x.dtype)
    if out.size == 0:
        return out
    j = 0
    count = len(idx)
    while j < count:
        # extend a run of consecutive (step +1) or repeated (step 0) indices
        start = int(idx[j])
        r = 1
        step = int(idx[j + 1] - idx[j]) if j + 1 < count and idx[j + 1] - idx[j] in (0, 1) else 1
        while j + r < count and idx[j + r] == start + r * step:
            r += 1
        src_strides = list(x._strides)
        src_strides[ax] = x._strides[ax] * step
        shape = list(out_shape)
        shape[ax] = r
        src = _view(x, shape, src_strides, start * x._strides[ax])
        dst = _view(out, shape, out._strides, j * out._strides[ax])
        _dispatch.copy_into(dst, src)
        j += r
    return out


