"""Advanced ``__getitem__`` / ``__setitem__``: integer-array keys (broadcast together, replacing
the indexed axes as NumPy does), boolean masks (their ``nonzero`` indices: one flat index into
the merged axes where the strides allow it, else one array per axis) and their assignments,
on the gather / scatter kernel (see ``_indexing_functions``'s docstring for the range checks
and the error reporting); ``nonzero`` of masks on the device's compaction."""

from __future__ import annotations

import builtins
import operator
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _dispatch, _runtime
from . import _function_kernels as kernels
from ._array_object import GpuArray
from ._backend import ops_compact
from ._creation_functions import asarray
from ._dtypes import bool as bool_dtype
from ._manipulation_functions import _as_contiguous, reshape
from ._shapes import broadcast_shapes, broadcast_strides, size_of
from ._index_kernels import (_INTEGER, _Index, _check_ranges, _gather, _host_index, _scatter,
                             _where, read_scalars)
from ._indexing_functions import take

__all__ = ["advanced_getitem", "advanced_setitem", "is_advanced_key", "nonzero_coordinates", "nonzero_flat"]


def is_advanced_key(key: Any) -> bool:
    """Whether ``key`` needs advanced indexing: it holds an array index (a GpuArray other than
    a 0-d integer one, a NumPy array or a list) or a boolean scalar."""
    items = key if isinstance(key, tuple) else (key,)
    for item in items:
        if isinstance(item, GpuArray):
            if item.ndim != 0 or item.dtype == bool_dtype:
                return True
        elif isinstance(item, (builtins.bool, np.bool_, list, np.ndarray)):
            return True
    return False


def nonzero_flat(mask: GpuArray, index_dtype: Any = None) -> tuple[int, GpuArray]:
    """(count, 1-D array of the flat row-major positions where ``mask`` is non-zero, in
    ``index_dtype`` -- default: the default integer dtype; uint32 is allowed too). One device
    compaction; the count is the one value read back."""
    dtype = index_dtype or kernels.default_int()
    return _compacted(mask, dtype, lambda plan, out: plan.write_indices(out._ptr, dtype.name))


def nonzero_coordinates(mask: GpuArray) -> tuple[int, GpuArray]:
    """(count, a (mask.ndim, count) default-int array whose row d holds coordinate d of each
    non-zero element of ``mask``, in row-major order). One device compaction writing one
    coordinate per pass; the count is the one value read back."""
    dtype = kernels.default_int()
    shape = tuple(mask.shape)

    def write(plan: Any, out: GpuArray) -> None:
        count, size = out.shape[1], dtype.itemsize
        plan.write_coordinates([out._ptr + d * count * size for d in range(len(shape))], shape, dtype.name)

    return _compacted(mask, dtype, write, len(shape))


def _compacted(mask: GpuArray, dtype: Any, write: Any, rows: int = 0) -> tuple[int, GpuArray]:
    """(count, a new array of ``count`` elements of ``dtype`` -- with ``rows``, ``(rows,
    count)`` of them -- filled by ``write(plan, out)``), ``count`` being the number of nonzero
    elements of ``mask``: one compaction (``ops_compact``), whose count -- the output size -- is
    the one value read back, with the one submit of the call (``ops_compact.submits_held``)."""
    with _dispatch.call(ops_compact.submits_held):  # (one submit: the count's readback)
        flat = _as_contiguous(reshape(mask, (-1,)))
        plan = _dispatch.call(ops_compact.compact_begin, flat._ptr, flat.size, flag="nonzero",
                              dtype=mask.dtype.name)
        try:
            count = plan.read_total()
            shape = (rows, count) if rows else (count,)
            out = GpuArray._empty(shape, dtype, zero=dtype.packed)  # (packed values are OR-ed into zeros)
            if count:
                try:
                    write(plan, out)
                except Exception as exc:
                    raise _runtime.translate(exc) from None
        finally:
            plan.free()
    return count, out


def _leading_mask(x: GpuArray, key: Any) -> GpuArray | None:
    """The boolean mask of ``key`` when the key is one boolean array (a GpuArray or NumPy
    array) over the leading axes of ``x`` (its shape is ``x.shape[:k]``, ``k >= 1``); None for
    any other key."""
    if isinstance(key, GpuArray):
        if key.dtype != bool_dtype:
            return None
    elif not (isinstance(key, np.ndarray) and key.dtype.kind == "b"):
        return None
    k = key.ndim
    if k == 0 or k > x.ndim or tuple(key.shape) != tuple(x.shape[:k]):
        return None
    return key if isinstance(key, GpuArray) else kernels.upload(key, bool_dtype)


def _masked_values(x: GpuArray, mask: GpuArray) -> GpuArray:
    """``x[mask]`` for a boolean ``mask`` of ``x``'s shape (``x`` of a dtype of at most 8
    bytes): one compaction whose write pass stores the flagged elements of ``x`` (row-major
    order) into the result directly -- no index array, no gather."""
    src = _as_contiguous(x)
    name = x.dtype.name
    return _compacted(mask, x.dtype, lambda plan, out: plan.write_values(out._ptr, name, source=src._ptr))[1]


_SCALARS = (builtins.bool, int, float, complex, np.generic)


def _mask_assign(x: GpuArray, mask: GpuArray, v: Any) -> builtins.bool:
    """``x[mask] = v`` for a boolean ``mask`` over the leading axes of ``x`` when ``v`` is the
    same for every selected position: a Python scalar, or an array of ``x.dtype`` not sharing
    its memory that broadcasts to ``x.shape[mask.ndim:]`` once its leading size-1 dims are
    dropped. Then ``x = where(mask, v, x)``, one elementwise kernel writing ``x`` in place, with
    nothing read back. Returns False, with nothing done, for any other value (the caller
    scatters it). Raises as :func:`_dispatch.scalar_value` for a scalar ``x.dtype`` cannot take."""
    rest = tuple(x.shape[mask.ndim:])
    if isinstance(v, GpuArray):
        shape = tuple(v.shape)
        while len(shape) > len(rest) and shape[0] == 1:
            shape = shape[1:]
        if len(shape) > len(rest):
            return False
        try:
            if broadcast_shapes(shape, rest) != rest:
                return False
        except ValueError:
            return False
        value: Any = v if shape == tuple(v.shape) else reshape(v, shape)
    else:
        value = (_dispatch.scalar_value(v, x.dtype), x.dtype)
    m = reshape(mask, tuple(mask.shape) + (1,) * len(rest)) if rest else mask  # (a lazy mask stays lazy)
    dtype = x.dtype
    _dispatch.run_elementwise("where", [m, value, x], [bool_dtype, dtype, dtype], dtype, dtype, out=x)
    return True


@dataclass
class _Plan:
    """A parsed advanced key: ``x_flat[base + m . strides + sum_k idx_k[m] * stride_k]`` over
    the result shape ``shape`` (see :func:`_plan`)."""

    base: int
    shape: tuple[int, ...]
    strides: list[int]
    indices: list[_Index]
    idx_strides: list[list[int]]
    bshape: tuple[int, ...]
    b_at: int


def _plan(x: GpuArray, key: Any) -> _Plan:
    """Parse ``key`` against ``x`` (NumPy's rules, see the module docstring).

    Raises ``IndexError`` for too many indices, out-of-range integers or indices, mask shapes that
    do not match, non-integer arrays; ``TypeError`` for unsupported index objects.
    """
    items = list(key) if isinstance(key, tuple) else [key]
    # host data and scalars -> normalised items
    norm: list[Any] = []
    for item in items:
        if isinstance(item, (builtins.bool, np.bool_)):
            norm.append(("bool0", builtins.bool(item)))
        elif isinstance(item, GpuArray):
            if item.dtype == bool_dtype:
                norm.append(("mask", item))
            elif item.dtype in _INTEGER:
                norm.append(("arr", item))
            else:
                raise IndexError(f"arrays used as indices must be of integer or boolean type, not {item.dtype}")
        elif isinstance(item, (list, np.ndarray)):
            host = np.asarray(item)
            if host.dtype.kind == "b":
                norm.append(("mask", kernels.upload(host, bool_dtype)))
            else:
                if host.size == 0:
                    host = host.astype(np.int64)
                if host.dtype.kind not in "iu":
                    raise IndexError(f"arrays used as indices must be of integer or boolean type, not {host.dtype}")
                norm.append(("host", host))
        elif item is None or item is Ellipsis or isinstance(item, slice):
            norm.append(item)
        else:
            try:
                norm.append(("int", operator.index(item)))
            except TypeError:
                raise IndexError(
                    "only integers, slices (`:`), ellipsis (`...`), None (`newaxis`) and integer or "
                    f"boolean arrays are valid indices, not {type(item).__name__}"
                ) from None
    consumed = 0
    for item in norm:
        if isinstance(item, slice) or (isinstance(item, tuple) and item[0] in ("int", "arr", "host")):
            consumed += 1
        elif isinstance(item, tuple) and item[0] == "mask":
            consumed += item[1].ndim
    if sum(1 for item in norm if item is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > x.ndim:
        raise IndexError(f"too many indices for array: array is {x.ndim}-dimensional, but {consumed} were indexed")
    if Ellipsis in norm:
        at = norm.index(Ellipsis)
        norm[at : at + 1] = [slice(None)] * (x.ndim - consumed)
    else:
        norm.extend([slice(None)] * (x.ndim - consumed))

    base = 0
    axis = 0
    basic_before: list[tuple[int, int]] = []   # (size, stride) of basic dims before the advanced group
    basic_after: list[tuple[int, int]] = []
    indices: list[_Index] = []
    adv_positions: list[int] = []               # positions in ``norm`` of advanced items
    seen_adv = False
    empty = False
    for pos, item in enumerate(norm):
        if item is None:
            (basic_after if seen_adv else basic_before).append((1, 0))
            continue
        if isinstance(item, slice):
            size, stride = x.shape[axis], x._strides[axis]
            start, stop, step = item.indices(size)
            length = len(range(start, stop, step))
            if length:
                base += start * stride
            else:
                empty = True
            (basic_after if seen_adv else basic_before).append((length, stride * step))
            axis += 1
            continue
        kind, value = item
        if kind == "int":
            size = x.shape[axis]
            if not -size <= value < size:
                raise IndexError(f"index {value} is out of bounds for axis {axis} with size {size}")
            base += (value % size) * x._strides[axis]
            adv_positions.append(pos)
            axis += 1
        elif kind in ("arr", "host"):
            size, stride = x.shape[axis], x._strides[axis]
            if kind == "arr":
                indices.append(_Index(value, size, stride, axis))
            else:
                ix = _host_index(value, size, axis)
                ix.stride = stride
                indices.append(ix)
            adv_positions.append(pos)
            seen_adv = True
            axis += 1
        elif kind == "bool0":
            # a 0-d mask: a new axis of length 1 (True) or 0 (False), indexed by [0] or []
            arr = GpuArray._empty((1 if value else 0,), kernels.default_int())
            indices.append(_Index(arr, 1, 0, axis, checked=True))
            adv_positions.append(pos)
            seen_adv = True
        else:  # mask
            mask = value
            k = mask.ndim
            if k == 0:
                count = 1 if read_scalars([mask])[0] else 0
                arr = GpuArray._empty((count,), kernels.default_int())
                indices.append(_Index(arr, 1, 0, axis, checked=True))
            else:
                want = x.shape[axis : axis + k]
                sizes, strides = x.shape[axis : axis + k], x._strides[axis : axis + k]
                if tuple(mask.shape) != tuple(want) and all(m in (w, 0) for m, w in zip(mask.shape, want)):
                    # a mask dim of size 0 selects nothing (the spec's rule; NumPy raises)
                    for d in range(k):
                        none = GpuArray._empty((0,), kernels.default_int())
                        indices.append(_Index(none, sizes[d], strides[d], axis + d, checked=True))
                    adv_positions.append(pos)
                    seen_adv = True
                    axis += k
                    continue
                if tuple(mask.shape) != tuple(want):
                    bad = next(d for d in range(k) if mask.shape[d] != want[d])
                    raise IndexError(
                        f"boolean index did not match indexed array along axis {axis + bad}; size of "
                        f"axis is {want[bad]} but size of corresponding boolean axis is {mask.shape[bad]}"
                    )
                mergeable = all(strides[d] == strides[d + 1] * sizes[d + 1] for d in range(k - 1))
                if mergeable or k == 1:
                    count, flat = nonzero_flat(mask)
                    indices.append(_Index(flat, size_of(sizes), strides[-1], axis, checked=True))
                else:
                    count, rows = nonzero_coordinates(mask)
                    for d in range(k):
                        row = GpuArray._view(rows, (count,), (1,), rows._offset + d * count)
                        indices.append(_Index(row, sizes[d], strides[d], axis + d, checked=True))
            adv_positions.append(pos)
            seen_adv = True
            axis += k
    if not seen_adv:
        raise IndexError("no array index in an advanced index")  # pragma: no cover - callers check
    if empty:
        base = 0
    bshape = broadcast_shapes(*(ix.arr.shape for ix in indices))
    adjacent = adv_positions == list(range(adv_positions[0], adv_positions[-1] + 1))
    if not adjacent:
        basic_before, basic_after = [], basic_before + basic_after
    b_at = len(basic_before)
    shape = tuple(s for s, _ in basic_before) + tuple(bshape) + tuple(s for s, _ in basic_after)
    strides = [st for _, st in basic_before] + [0] * len(bshape) + [st for _, st in basic_after]
    idx_strides = []
    for ix in indices:
        bst = broadcast_strides(ix.arr.shape, ix.arr._strides, bshape)
        idx_strides.append([0] * b_at + list(bst) + [0] * len(basic_after))
    return _Plan(base, shape, strides, indices, idx_strides, tuple(bshape), b_at)


def advanced_getitem(x: GpuArray, key: Any) -> GpuArray:
    """``x[key]`` for a key with integer-array or boolean-mask indices (NumPy semantics, see the
    module docstring): a new contiguous array.

    Raises ``IndexError`` for malformed indices and mismatched masks, and for out-of-range
    indices on the host (lists, NumPy arrays), at the call; for out-of-range indices in device
    arrays at the next call that waits for the device (see the module docstring);
    ``TypeError`` for unsupported index objects.
    """
    if isinstance(key, GpuArray) and key.ndim == 1 and key.dtype in _INTEGER and x.ndim:
        return take(x, key, axis=0)  # (the usual x[idx]: the same gather, without the key parse)
    mask = _leading_mask(x, key)
    if mask is not None and mask.ndim == x.ndim and x.dtype.itemsize <= 8:
        return _masked_values(x, mask)
    plan = _plan(x, key)
    return _gather(x, plan.base, plan.shape, plan.strides, plan.indices, plan.idx_strides,
                   (plan.bshape, plan.b_at))


def advanced_setitem(x: GpuArray, key: Any, value: Any) -> None:
    """``x[key] = value`` for a key with integer-array or boolean-mask indices: ``value`` (a
    GpuArray, Python scalar or anything ``asarray`` accepts) is broadcast to the shape of
    ``x[key]`` and cast to ``x.dtype`` (NumPy's assignment casting), then scattered into ``x``.

    Raises ``IndexError`` for malformed or out-of-range indices, at the call (before anything
    is written: device index arrays are checked with one readback); ``ValueError`` when ``value`` does not
    broadcast; ``TypeError`` for complex or non-numeric values; ``OverflowError`` for Python
    ints out of the dtype's range.
    """
    if isinstance(value, _SCALARS):
        if isinstance(value, np.generic) and value.dtype.kind in "biuf":
            value = value.item()
        v: Any = value
    else:
        v = value if isinstance(value, GpuArray) else asarray(value)
    mask = _leading_mask(x, key)
    plan = None if mask is not None else _plan(x, key)
    if isinstance(v, GpuArray):
        if plan is not None:
            broadcast_strides(v.shape, v._strides, plan.shape)  # ValueError if it does not fit
        if v.dtype != x.dtype or v._storage is x._storage:
            v = _dispatch.contiguous_copy(v, x.dtype)
    if mask is not None:
        if _mask_assign(x, mask, v):
            return
        plan = _plan(x, mask)
        broadcast_strides(v.shape, v._strides, plan.shape)
    assert plan is not None
    if not isinstance(v, GpuArray):
        scalar = GpuArray._empty((), x.dtype, zero=False)
        _dispatch.fill(scalar, v)
        v = scalar
    _check_ranges(plan.indices)
    _scatter(x, plan.base, plan.shape, plan.strides, plan.indices, plan.idx_strides, v,
             (plan.bshape, plan.b_at))
