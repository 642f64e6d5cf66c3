"""Array API indexing: ``take``, ``take_along_axis`` and advanced ``__getitem__`` /
``__setitem__`` (integer arrays, boolean masks), all on the device's gather / scatter kernel
(``_backend/ops_gather.py``).

Integer-array indexing follows NumPy: integer arrays (and, next to them, integers) are the
*advanced* indices; they broadcast together to a shape ``B`` that replaces the indexed axes --
in place of the first one when they are adjacent in the key, in front otherwise --, while
slices, ``None`` and ``...`` keep their basic meaning around them. Boolean masks select the
positions where they are true: a mask over ``k`` axes becomes their ``nonzero`` indices (one flat
index into the merged axes when the array's strides allow it, else one array per axis); a 0-d
mask (or a Python bool) adds an axis of length 1 (True) or 0 (False).

No index is read back to the host, and a gather (``take``, ``take_along_axis``, ``x[idx]``)
does not wait for the device: its kernel checks every index it reads, and an out-of-range one
raises ``IndexError`` at the next call that waits for the device -- ``x.get()``, ``float(x)``,
``np.asarray(x)``, ``gt.synchronize()``, any readback, in whichever thread waits first --
naming the axis and its size (``_backend/index_checks.py``); the gather's result then holds
unspecified values where its indices were out of range. This is how CUDA (and so CuPy and
torch on CUDA) report asynchronous errors. Gathers that need a range check before they run
(more than ``ops_gather.MAXIDX`` index arrays, which are combined first; an axis of length 0;
an empty result) and assignments check with a device-side min/max reduction of each index
array, read back once for all arrays of one call, and raise ``IndexError`` at the call, before
any kernel writes. Index arrays given as host data -- lists, NumPy arrays -- are checked on
the host before they are uploaded, and index arrays made from boolean masks are in range by
construction. Only the number of true mask elements is read back (the output shape depends
on it).

Assignment (``x[key] = value``) scatters ``value`` (broadcast to the shape ``x[key]`` would have,
cast to ``x.dtype`` as NumPy assignment casts) into ``x``; with repeated indices one of the
values is stored (which one is unspecified, as in the spec).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _dispatch
from ._array_object import GpuArray
from ._backend import ops_gather
from ._backend.ops_elementwise import extent
from ._backend.ops_gather import IndexOperand
from ._kept import KeptCall
from ._creation_functions import asarray
from ._manipulation_functions import _check_array
from ._shapes import broadcast_shapes, broadcast_strides, contiguous_strides, normalize_axis, size_of
from ._index_kernels import _INTEGER, _Index, _gather

__all__ = ["take", "take_along_axis"]


def _integer_indices(indices: object, name: str = "indices") -> GpuArray:
    _check_array(indices, name)
    assert isinstance(indices, GpuArray)
    if indices.dtype not in _INTEGER:
        raise TypeError(f"{name} must have an integer dtype, got {indices.dtype}")
    return indices


class _TakePlan(KeptCall):
    """What ``take`` computed for one call structure (``x`` and ``indices``: dtype, shape,
    strides; the axis): the result (every element is written) and the gather's operands. A
    repeated call replays the backend's kept one-dispatch plan (``ops_gather.planned_gather``,
    taken after the first run: ``replay(x_ptr, (index_ptr,))``) while that holds; else ``run``
    only allocates, binds the pointers and records the gather, which checks the index range on
    the device as the first call's did."""

    __slots__ = ("src_strides", "extent", "idx_dtype", "idx_strides", "n", "stride", "message")

    def __init__(self, x: GpuArray, indices: GpuArray, out_shape: tuple[int, ...], src_strides: Sequence[int],
                 idx_strides: Sequence[int], ix: _Index) -> None:
        super().__init__(out_shape, contiguous_strides(out_shape), x.dtype)
        self.src_strides = tuple(src_strides)
        self.extent = extent(x.shape, x._strides)
        self.idx_dtype = indices.dtype.name
        self.idx_strides = tuple(idx_strides)
        self.n = ix.n
        self.stride = ix.stride
        self.message = f"index out of bounds for axis {ix.axis} with size {ix.n}"

    def run(self, x: GpuArray, indices: GpuArray) -> GpuArray:
        """The gather of ``x`` at ``indices`` into a new array, its plan kept where the backend
        kept one."""
        out = self.alloc()
        op = IndexOperand(indices._ptr, self.idx_dtype, self.idx_strides, self.n, self.stride, self.message)
        args = (self.dtype.name, self.shape, self.src_strides, self.extent, self.strides, [op])
        _dispatch.call(ops_gather.gather, args[0], args[1], x._ptr, args[2], args[3], out._ptr, args[4], args[5])
        plan = _dispatch.call(ops_gather.planned_gather, *args)
        self.hold(plan, None if plan is None else plan.launch_ptrs)
        return out


#: (x: dtype name, shape, strides; indices: the same; axis) -> ``_TakePlan``.
_TAKE_PLANS: dict[tuple[Any, ...], _TakePlan] = {}


def take(x: GpuArray, indices: GpuArray, /, *, axis: int | None = None) -> GpuArray:
    """Elements of ``x`` at ``indices`` (1-D integer array; negative values count from the end)
    along ``axis`` (required unless ``x`` is 1-D): ``x``'s shape with the axis replaced by
    ``len(indices)``. One gather kernel, which checks the index range itself (no wait).

    Raises ``TypeError`` for non-arrays or non-integer indices; ``ValueError`` for N-d indices,
    a missing axis or a 0-d ``x``; ``IndexError`` for an index out of range, at the next call
    that waits for the device (see the module docstring); :class:`AxisError` for a bad axis.
    """
    key = None
    if type(x) is GpuArray and type(indices) is GpuArray and (axis is None or type(axis) is int):
        key = (x._dtype.name, x._shape, x._strides, indices._dtype.name, indices._shape, indices._strides, axis)
        plan = _TAKE_PLANS.get(key)
        if plan is not None:
            out = plan.replay(x._ptr, (indices._ptr,))
            return plan.run(x, indices) if out is None else out
    _check_array(x)
    indices = _integer_indices(indices)
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
    ix = _Index(indices, n, x._strides[ax], ax)
    out_shape = x.shape[:ax] + (indices.shape[0],) + x.shape[ax + 1 :]
    src_strides = list(x._strides)
    src_strides[ax] = 0
    idx_strides = [0] * x.ndim
    idx_strides[ax] = indices._strides[0]
    if key is not None and n and size_of(out_shape):
        plan = _TakePlan(x, indices, out_shape, src_strides, idx_strides, ix)
        _dispatch.cache_put(_TAKE_PLANS, key, plan)
        return plan.run(x, indices)
    return _gather(x, 0, out_shape, src_strides, [ix], [idx_strides])


def take_along_axis(x: GpuArray, indices: GpuArray, /, *, axis: int = -1) -> GpuArray:
    """``out[..., j, ...] = x[..., indices[..., j, ...], ...]`` along ``axis``: ``indices`` has
    ``x``'s number of dimensions, and the other dims broadcast against ``x``'s (NumPy's
    ``take_along_axis``). Negative indices count from the end.

    Raises ``TypeError`` for non-arrays or non-integer indices; ``ValueError`` for different
    numbers of dimensions or shapes that do not broadcast; ``IndexError`` for an index out of
    range, at the next call that waits for the device (see the module docstring);
    :class:`AxisError` for a bad axis.
    """
    _check_array(x)
    indices = _integer_indices(indices)
    if x.ndim == 0:
        raise ValueError("take_along_axis needs an array with at least one dimension")
    if indices.ndim != x.ndim:
        raise ValueError(f"indices ({indices.ndim}-d) must have as many dimensions as x ({x.ndim}-d)")
    ax = normalize_axis(axis, x.ndim)
    other_x = tuple(1 if d == ax else s for d, s in enumerate(x.shape))
    other_i = tuple(1 if d == ax else s for d, s in enumerate(indices.shape))
    shape = list(broadcast_shapes(other_x, other_i))
    shape[ax] = indices.shape[ax]
    out_shape = tuple(shape)
    n = x.shape[ax]
    ix = _Index(indices, n, x._strides[ax], ax)
    x_shape = tuple(out_shape[d] if d == ax else s for d, s in enumerate(x.shape))
    x_strides = list(x._strides)
    x_strides[ax] = 0
    src_strides = broadcast_strides(x_shape, tuple(x_strides), out_shape)
    idx_strides = broadcast_strides(indices.shape, indices._strides, out_shape)
    return _gather(x, 0, out_shape, src_strides, [ix], [idx_strides])
