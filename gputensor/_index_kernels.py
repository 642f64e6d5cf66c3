"""What ``take`` and advanced indexing share: index operands (:class:`_Index`: a device index
array or a host one, checked on the host), their range checks (a device min/max reduction read
back once per call), and the gather / scatter launches on ``_backend/ops_gather.py``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _dispatch
from . import _function_kernels as kernels
from ._array_object import GpuArray
from ._backend import ops_gather
from ._backend.ops_elementwise import extent
from ._backend.ops_gather import IndexOperand
from ._creation_functions import asarray
from ._dtypes import DTYPE_CATEGORIES
from ._dtypes import bool as bool_dtype
from ._elementwise_functions import add, less, multiply
from ._manipulation_functions import reshape
from ._shapes import broadcast_strides, contiguous_strides, size_of

__all__ = ["read_scalars", "take_checked", "take_checked_now"]

_INTEGER = frozenset(DTYPE_CATEGORIES["integer"])  # (membership tests: one hash, not a scan)


def read_scalars(arrays: Sequence[GpuArray]) -> list[Any]:
    """The values of 1-element arrays as Python numbers, read back with one submit."""
    if not arrays:
        return []
    be = _dispatch.backend()
    regions = []
    for a in arrays:
        alloc, off = be.resolve(a._ptr, a.dtype.itemsize)
        regions.append((alloc.buffer, off, a.dtype.itemsize))
    raw = be.context.readback_many(regions)
    return [np.frombuffer(b, dtype=a.dtype.numpy)[0].item() for b, a in zip(raw, arrays)]


@dataclass
class _Index:
    """One integer index array of a gather/scatter: ``arr`` indexes an axis of length ``n``
    with element stride ``stride`` (axis ``axis`` of the array, for messages); ``checked``: its
    range is known to be valid."""

    arr: GpuArray
    n: int
    stride: int
    axis: int
    checked: bool = False


def _check_ranges(indices: Sequence[_Index]) -> None:
    """Raise ``IndexError`` (before any kernel writes) when an unchecked index array holds a
    value outside ``[-n, n)``: one min and one max reduction per array, read back together."""
    todo = [ix for ix in indices if not ix.checked and ix.arr.size]
    if not todo:
        return
    results: list[GpuArray] = []
    for ix in todo:
        flat = reshape(ix.arr, (-1,))
        results.append(kernels.reduce("min", flat, (0,), ix.arr.dtype))
        results.append(kernels.reduce("max", flat, (0,), ix.arr.dtype))
    values = read_scalars(results)
    for k, ix in enumerate(todo):
        lo, hi = values[2 * k], values[2 * k + 1]
        if lo < -ix.n or hi >= ix.n:
            bad = lo if lo < -ix.n else hi
            raise IndexError(f"index {bad} is out of bounds for axis {ix.axis} with size {ix.n}")
        ix.checked = True


def _host_index(value: Any, n: int, axis: int) -> _Index:
    """An index array given as host data (list, NumPy array): checked on the host, uploaded."""
    host = np.asarray(value)
    if host.dtype.kind == "b":
        raise TypeError("a boolean host index must be converted with asarray first")
    if host.size == 0:
        host = host.astype(np.int64)
    if host.dtype.kind not in "iu":
        raise IndexError(f"arrays used as indices must be of integer (or boolean) type, not {host.dtype}")
    if host.size:
        lo, hi = int(host.min()), int(host.max())
        if lo < -n or hi >= n:
            bad = lo if lo < -n else hi
            raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
    dtype = kernels.default_int()
    return _Index(kernels.upload(host.astype(dtype.numpy), dtype), n, 0, axis, checked=True)


def _index_operands(indices: Sequence[_Index], it_strides: Sequence[Sequence[int]]) -> list[Any]:
    """The backend's operands of ``indices``; an unchecked one carries its ``IndexError`` text
    (a gather checks it on the device, see the module docstring)."""
    return [IndexOperand(ix.arr._ptr, ix.arr.dtype.name, tuple(st), ix.n, ix.stride,
                         "" if ix.checked else f"index out of bounds for axis {ix.axis} with size {ix.n}")
            for ix, st in zip(indices, it_strides)]


def _where(condition: GpuArray, x1: GpuArray, x2: GpuArray) -> GpuArray:
    """``where`` for a bool ``condition`` and two arrays of one dtype (no checks)."""
    dtype = x1.dtype
    return _dispatch.run_elementwise("where", [condition, x1, x2], [bool_dtype, dtype, dtype], dtype, dtype)


def _combine(indices: list[_Index], bshape: tuple[int, ...], b_at: int, rank: int) -> tuple[_Index, list[int]]:
    """One offset array (default int, shape ``bshape``) equal to ``sum_k norm(arr_k) * stride_k``
    and its iteration strides (``bshape`` sits at dim ``b_at`` of a ``rank``-dim space): used
    when there are more index arrays than the kernel takes (ranges already checked)."""
    dtype = kernels.default_int()
    total: GpuArray | None = None
    for ix in indices:
        a = ix.arr if ix.arr.dtype == dtype else _dispatch.contiguous_copy(ix.arr, dtype)
        a = _where(less(a, 0), add(a, ix.n), a)
        term = multiply(a, ix.stride)
        total = term if total is None else add(total, term)
    assert total is not None
    full = GpuArray._empty(bshape, dtype)
    _dispatch.copy_into(full, total)
    strides = [0] * rank
    for d, st in enumerate(full._strides):
        strides[b_at + d] = st
    return _Index(full, 0, 1, -1, checked=True), strides


def _fit_indices(indices: list[_Index], idx_strides: list[Sequence[int]], bspec: tuple[tuple[int, ...], int] | None,
                 rank: int) -> tuple[list[_Index], list[Sequence[int]]]:
    if len(indices) <= ops_gather.MAXIDX:
        return indices, idx_strides
    assert bspec is not None
    combined, strides = _combine(indices, bspec[0], bspec[1], rank)
    return [combined], [strides]


def _gather(x: GpuArray, base: int, out_shape: tuple[int, ...], src_strides: Sequence[int],
            indices: list[_Index], idx_strides: list[Sequence[int]],
            bspec: tuple[tuple[int, ...], int] | None = None) -> GpuArray:
    """``out[m] = x_flat[base + m . src_strides + sum_k norm(idx_k[m]) * stride_k]`` (a new
    contiguous array); ``bspec`` = (broadcast index shape, its first dim in ``out_shape``)."""
    out = GpuArray._empty(out_shape, x.dtype, zero=False)  # every element is written
    if out.size == 0 or len(indices) > ops_gather.MAXIDX or any(ix.n == 0 for ix in indices):
        # checked here, waiting for the device: no gather runs (an empty result), or the index
        # arrays are combined first (which needs them in range), or an axis of length 0 (every
        # index is out of range)
        _check_ranges(indices)
    if out.size == 0:
        return out
    indices, idx_strides = _fit_indices(indices, idx_strides, bspec, len(out_shape))
    lo, hi = extent(x.shape, x._strides)
    ops = _index_operands(indices, idx_strides)
    _dispatch.call(ops_gather.gather, x.dtype.name, out_shape, x._ptr + base * x.dtype.itemsize,
                   tuple(src_strides), (lo - base, hi - base), out._ptr, contiguous_strides(out_shape), ops)
    return out


def _scatter(x: GpuArray, base: int, shape: tuple[int, ...], dst_strides: Sequence[int],
             indices: list[_Index], idx_strides: list[Sequence[int]], value: GpuArray,
             bspec: tuple[tuple[int, ...], int] | None = None) -> None:
    """``x_flat[base + m . dst_strides + sum_k norm(idx_k[m]) * stride_k] = value[m]``
    (``value`` already of ``x.dtype`` and broadcastable to ``shape``)."""
    if size_of(shape) == 0:
        return
    indices, idx_strides = _fit_indices(indices, idx_strides, bspec, len(shape))
    vstrides = broadcast_strides(value.shape, value._strides, shape)
    lo, hi = extent(x.shape, x._strides)
    ops = _index_operands(indices, idx_strides)
    _dispatch.call(ops_gather.scatter, x.dtype.name, shape, value._ptr, tuple(vstrides),
                   x._ptr + base * x.dtype.itemsize, tuple(dst_strides), (lo - base, hi - base), ops)


def take_checked(x: GpuArray, indices: GpuArray) -> GpuArray:
    """``x[indices]`` for a 1-D ``x`` and 1-D integer ``indices`` known to be in range (no
    bounds check, no readback): for indices made on the device, e.g. by ``unique``."""
    ix = _Index(indices, x.shape[0], x._strides[0], 0, checked=True)
    return _gather(x, 0, (indices.shape[0],), [0], [ix], [[indices._strides[0]]])


def take_checked_now(x: GpuArray, indices: GpuArray) -> GpuArray:
    """``x[indices]`` for a 1-D ``x`` and 1-D integer ``indices``, their range checked at the
    call (a device min/max reduction read back): ``IndexError`` before anything runs. For
    callers whose own error must come at the call (``searchsorted``'s ``sorter``)."""
    ix = _Index(indices, x.shape[0], x._strides[0], 0)
    _check_ranges([ix])
    return _gather(x, 0, (indices.shape[0],), [0], [ix], [[indices._strides[0]]])
