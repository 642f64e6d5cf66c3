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

import builtins
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _dispatch, _runtime
from . import _function_kernels as kernels
from ._array_object import GpuArray
from ._backend import ops_compact, ops_counting, ops_gather
from ._backend.ops_elementwise import extent
from ._backend.ops_gather import IndexOperand
from ._kept import KeptCall
from ._creation_functions import asarray
from ._dtypes import DTYPE_CATEGORIES, dtype_from_any
from ._dtypes import bool as bool_dtype
from ._elementwise_functions import add, less, multiply
from ._manipulation_functions import _as_contiguous, _check_array, reshape
from ._shapes import broadcast_shapes, broadcast_strides, contiguous_strides, normalize_axis, size_of

__all__ = ["take", "take_along_axis"]

_INTEGER = frozenset(DTYPE_CATEGORIES["integer"])  # (membership tests: one hash, not a scan)


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------
# take, take_along_axis
# ---------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------
# advanced __getitem__ / __setitem__
# ---------------------------------------------------------------------------------------------
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
