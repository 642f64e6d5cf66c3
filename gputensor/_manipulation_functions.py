"""Array API manipulation functions (views where possible, strided copies otherwise).

Pure views (no kernel, shared storage): ``broadcast_to``, ``broadcast_arrays``, ``expand_dims``,
``flip``, ``moveaxis``, ``permute_dims``, ``squeeze``, ``unstack`` and ``reshape`` when the
strides allow it (NumPy's no-copy rule, :func:`~gputensor._shapes.view_strides_for_reshape`).

Copies: ``concat``, ``stack``, ``tile``, ``repeat``, ``roll`` and non-viewable ``reshape`` write a
new contiguous array with one strided copy (``_dispatch.copy_into``) per input block; ``tile`` and
``repeat`` with an int are one copy from a stride-0 (broadcast) view, so no per-repetition launch.

Errors (as array-api-strict / NumPy): ``TypeError`` for non-arrays, non-integer sizes/axes and
dtypes that do not promote; ``ValueError`` for shape mismatches and bad sizes;
:class:`~gputensor._shapes.AxisError` (a ``ValueError`` and ``IndexError``) for out-of-range
axes.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence

import numpy as np

from . import _dispatch
from ._array_object import GpuArray
from ._backend import ops_concat
from ._data_type_functions import result_type
from ._kept import KeptCall
from ._dtypes import DTYPE_CATEGORIES, DType
from ._shapes import (
    broadcast_shapes,
    broadcast_strides,
    contiguous_strides,
    is_contiguous,
    normalize_axes,
    normalize_axis,
    reshape_shape,
    size_of,
    view_strides_for_reshape,
)

__all__ = [
    "broadcast_arrays",
    "broadcast_to",
    "concat",
    "expand_dims",
    "flip",
    "moveaxis",
    "permute_dims",
    "repeat",
    "reshape",
    "roll",
    "squeeze",
    "stack",
    "tile",
    "unstack",
]


# ---- shared helpers (also used by the other function modules of this package) ---------------
def _check_array(x: object, name: str = "x") -> GpuArray:
    """Return ``x`` if it is a GpuArray, else raise ``TypeError``."""
    if not isinstance(x, GpuArray):
        raise TypeError(f"{name} must be a gputensor array, not {type(x).__name__}")
    return x


def _index(value: object, what: str) -> int:
    """``operator.index(value)`` refusing bools; ``TypeError`` naming ``what`` otherwise."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an integer, not bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, not {type(value).__name__}") from None


def _view(x: GpuArray, shape: Sequence[int], strides: Sequence[int], offset_delta: int = 0) -> GpuArray:
    """A view of ``x``'s storage with ``shape``/``strides``, element [0,...] moved by ``offset_delta``."""
    return GpuArray._view(x, tuple(shape), tuple(strides), x._offset + offset_delta)


def _empty(shape: Sequence[int], dtype: DType) -> GpuArray:
    """A new array for a result that the copies after it write entirely (not zero-filled)."""
    return GpuArray._empty(tuple(shape), dtype, zero=False)


def _copy_contiguous(x: GpuArray, dtype: DType | None = None) -> GpuArray:
    """A new contiguous array holding ``x`` (cast to ``dtype`` if given)."""
    out = _empty(x.shape, x.dtype if dtype is None else dtype)
    if out.size:
        _dispatch.copy_into(out, x)
    return out


def _as_contiguous(x: GpuArray) -> GpuArray:
    """``x`` itself when it is row-major contiguous (offset allowed), else a contiguous copy."""
    if is_contiguous(x._shape, x._strides):
        return x
    return _copy_contiguous(x)


def _flatten(x: GpuArray) -> GpuArray:
    """``x`` as 1-D (a view when possible)."""
    return reshape(x, (-1,))


# ---- views ---------------------------------------------------------------------------------
def broadcast_to(x: GpuArray, /, shape: tuple[int, ...]) -> GpuArray:
    """A read-only-semantics view of ``x`` broadcast to ``shape`` (stride 0 on new dims).

    Raises ``TypeError`` for a non-array or non-integer sizes, ``ValueError`` if ``x.shape`` does
    not broadcast to ``shape`` or a size is negative.
    """
    _check_array(x)
    shape = tuple(_index(s, "shape entries") for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"negative dimension in shape {shape}")
    strides = broadcast_strides(x._shape, x._strides, shape)
    # keep the real stride of size-1 dims that stay size 1 (harmless either way)
    return _view(x, shape, strides)


def broadcast_arrays(*arrays: GpuArray) -> list[GpuArray]:
    """A list of views of ``arrays`` broadcast to their common shape (the 2024.12 spec returns
    a list); ``ValueError`` if they do not broadcast."""
    for a in arrays:
        _check_array(a, "arrays")
    shape = broadcast_shapes(*(a.shape for a in arrays))
    return [broadcast_to(a, shape) for a in arrays]


def expand_dims(x: GpuArray, /, axis: int = 0) -> GpuArray:
    """A view with a size-1 dimension inserted at ``axis`` (``-x.ndim-1 <= axis <= x.ndim``).

    Raises :class:`AxisError` for an out-of-range axis, ``TypeError`` for a non-integer one.
    """
    _check_array(x)
    ax = normalize_axis(axis, x.ndim + 1)
    shape = list(x._shape)
    strides = list(x._strides)
    inner = strides[ax] * shape[ax] if ax < x.ndim else 1
    shape.insert(ax, 1)
    strides.insert(ax, inner)
    return _view(x, shape, strides)


def flip(x: GpuArray, /, *, axis: int | tuple[int, ...] | None = None) -> GpuArray:
    """A view with the order of elements reversed along ``axis`` (all axes for None).

    Raises :class:`AxisError` / ``ValueError`` (repeated) / ``TypeError`` for bad axes.
    """
    _check_array(x)
    axes = normalize_axes(axis, x.ndim)
    strides = list(x._strides)
    delta = 0
    for ax in axes:
        n = x._shape[ax]
        if n > 0:
            delta += (n - 1) * strides[ax]
        strides[ax] = -strides[ax]
    if size_of(x._shape) == 0:
        delta = 0
    return _view(x, x._shape, strides, delta)


def permute_dims(x: GpuArray, /, axes: tuple[int, ...]) -> GpuArray:
    """A view with the dimensions reordered: result dim ``i`` is input dim ``axes[i]``.

    Raises ``ValueError`` unless ``axes`` is a permutation of ``range(x.ndim)`` (negative axes
    allowed), ``TypeError`` for non-integers.
    """
    _check_array(x)
    axes = tuple(axes)
    if len(axes) != x.ndim:
        raise ValueError(f"axes {axes} do not match an array of {x.ndim} dimensions")
    norm = [normalize_axis(a, x.ndim) for a in axes]
    if sorted(norm) != list(range(x.ndim)):
        raise ValueError(f"axes {axes} are not a permutation of the dimensions")
    return _view(x, [x._shape[a] for a in norm], [x._strides[a] for a in norm])


def _axis_list(value: int | tuple[int, ...], ndim: int, what: str) -> list[int]:
    items = list(value) if isinstance(value, (tuple, list)) else [value]
    out = [normalize_axis(_index(a, what), ndim) for a in items]
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {what}: {value}")
    return out


def moveaxis(x: GpuArray, source: int | tuple[int, ...], destination: int | tuple[int, ...], /) -> GpuArray:
    """A view with axes ``source`` moved to positions ``destination``, the others kept in order.

    Raises ``ValueError`` if the two have different lengths or repeat an axis, :class:`AxisError`
    for an out-of-range axis.
    """
    _check_array(x)
    src = _axis_list(source, x.ndim, "source")
    dst = _axis_list(destination, x.ndim, "destination")
    if len(src) != len(dst):
        raise ValueError("source and destination must have the same number of elements")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, tuple(order))


def squeeze(x: GpuArray, /, axis: int | tuple[int, ...]) -> GpuArray:
    """A view without the size-1 dimensions ``axis``.

    Raises ``ValueError`` if a named dimension's size is not 1 (or ``axis`` is None),
    :class:`AxisError` for an out-of-range axis.
    """
    _check_array(x)
    if axis is None:
        raise ValueError("squeeze needs an explicit axis (axis=None is not supported by the standard)")
    axes = normalize_axes(axis, x.ndim)
    for a in axes:
        if x._shape[a] != 1:
            raise ValueError(f"cannot squeeze axis {a} of size {x._shape[a]} (must be 1)")
    keep = [d for d in range(x.ndim) if d not in axes]
    return _view(x, [x._shape[d] for d in keep], [x._strides[d] for d in keep])


def unstack(x: GpuArray, /, *, axis: int = 0) -> tuple[GpuArray, ...]:
    """Views ``x[..., i, ...]`` along ``axis``, one per index; :class:`AxisError` for a bad axis
    (including any axis of a 0-d array)."""
    _check_array(x)
    ax = normalize_axis(axis, x.ndim)
    shape = x._shape[:ax] + x._shape[ax + 1 :]
    strides = x._strides[:ax] + x._strides[ax + 1 :]
    step = x._strides[ax]
    return tuple(_view(x, shape, strides, i * step) for i in range(x._shape[ax]))


def reshape(x: GpuArray, /, shape: tuple[int, ...], *, copy: bool | None = None) -> GpuArray:
    """``x`` with a new shape (one ``-1`` allowed), a view when the strides allow it.

    ``copy=True`` always copies, ``copy=False`` never does (``ValueError`` if a copy would be
    needed), ``copy=None`` copies only when needed. Raises ``ValueError`` for a size mismatch,
    ``TypeError`` for non-integer sizes.
    """
    _check_array(x)
    if isinstance(shape, (int,)) and not isinstance(shape, bool):
        shape = (shape,)
    new_shape = reshape_shape(x._shape, tuple(shape))
    if copy:
        src = _copy_contiguous(x)
        return _view(src, new_shape, contiguous_strides(new_shape))
    strides = view_strides_for_reshape(x._shape, x._strides, new_shape)
    if strides is not None:
        return _view(x, new_shape, strides)
    if copy is False:
        raise ValueError("reshape with copy=False: this array cannot be reshaped without a copy")
    src = _copy_contiguous(x)
    return _view(src, new_shape, contiguous_strides(new_shape))


# ---- copies --------------------------------------------------------------------------------
def _check_same_device(arrays: Sequence[GpuArray]) -> None:
    devices = {id(a.device) for a in arrays}
    if len(devices) > 1:
        raise ValueError("arrays are on different devices")


class _ConcatPlan:
    """How ``concat`` joins arrays of one structure (dtypes, shapes, strides, axis) with one
    kernel per ``ops_concat.SOURCES`` inputs: every input C-contiguous, of the result's dtype,
    and every block it fills a whole number of 4-byte words (``make`` says None otherwise)."""

    __slots__ = ("shape", "axis", "dtype", "rows", "words", "itemsize", "kept")

    def __init__(self, shape: tuple[int, ...], axis: int, dtype: DType, rows: int, words: list[int]) -> None:
        self.shape = shape
        self.axis = axis
        self.dtype = dtype
        self.rows = rows
        self.words = words
        self.itemsize = dtype.itemsize
        #: the result (every word is written) and the backend's ``ops_concat.ConcatCall`` (made
        #: by the first run)
        self.kept = KeptCall(shape, contiguous_strides(shape), dtype)

    @classmethod
    def make(cls, arrays: Sequence[GpuArray], ax: int, shape: tuple[int, ...], dtype: DType) -> "_ConcatPlan | None":
        """The plan for the validated ``arrays`` joined along ``ax`` into ``shape``, or None."""
        if not size_of(shape) or size_of(shape) * dtype.itemsize > _dispatch.backend().max_window_bytes():
            return None  # (a result larger than one binding: one strided copy per input)
        rows = size_of(shape[:ax])
        words = []
        for a in arrays:
            nbytes = size_of(a.shape[ax:]) * dtype.itemsize
            if (type(a) is not GpuArray or a.dtype != dtype or not is_contiguous(a.shape, a._strides)
                    or nbytes % 4):
                return None
            words.append(nbytes // 4)
        return cls(shape, ax, dtype, rows, words)

    def run(self, arrays: Sequence[GpuArray], new_axis: int | None = None) -> GpuArray:
        """The concatenation of ``arrays`` (of this plan's structure; with ``new_axis``, the
        ``stack`` of them: each seen with that new axis) as a new array, one kernel recorded per
        ``ops_concat.SOURCES`` inputs. Inputs that are lazy or start off a 4-byte word are
        copied one by one instead (``copy_into``)."""
        itemsize = self.itemsize
        ptrs = []
        for a in arrays:
            if type(a) is not GpuArray or (a._offset * itemsize) & 3:
                if new_axis is not None:
                    arrays = [expand_dims(x, axis=new_axis) for x in arrays]
                return _concat_copies(arrays, self)
            ptrs.append(a._ptr)
        kept = self.kept
        out = kept.replay(ptrs)
        if out is None:
            kept.hold(_dispatch.call(ops_concat.concat_call, self.rows, self.words))
            out = kept.alloc() if kept.valid_on is None else kept.replay(ptrs)
        return out


#: (axis, per input: dtype name, shape, strides) -> ``_ConcatPlan`` (``concat``; ``stack``'s
#: plans are those of the concatenation of its inputs with the new axis).
_CONCAT_PLANS: dict[tuple[object, ...], _ConcatPlan] = {}
_STACK_PLANS: dict[tuple[object, ...], _ConcatPlan] = {}
#: What ``_concat_plan`` answers for arguments that have no plan key (a list of non-arrays).
_NO_PLAN = object()


def _concat_key(arrays: object, axis: object) -> tuple[object, ...] | None:
    """The ``_CONCAT_PLANS`` key of ``concat(arrays, axis=axis)``, or None (not a list or
    tuple of arrays, or an axis that is not an int)."""
    if type(arrays) not in (list, tuple) or type(axis) is not int:
        return None
    key: list[object] = [axis]
    for a in arrays:
        if not isinstance(a, GpuArray):
            return None
        key.append((a._dtype.name, a._shape, a._strides))
    return tuple(key)


def _concat_plan(arrays: object, axis: object) -> "_ConcatPlan | object | None":
    """The cached plan of this call's structure, None when there is none yet, ``_NO_PLAN``
    when the arguments have no key."""
    key = _concat_key(arrays, axis)
    if key is None:
        return _NO_PLAN
    return _CONCAT_PLANS.get(key)


def _concat_copies(arrays: Sequence[GpuArray], plan: _ConcatPlan) -> GpuArray:
    """``concat`` of arrays of ``plan``'s structure by one copy per input (``copy_into``)."""
    out = _empty(plan.shape, plan.dtype)
    ax = plan.axis
    start = 0
    for a in arrays:
        n = a.shape[ax]
        if n and a.size:
            dst_shape = list(out._shape)
            dst_shape[ax] = n
            _dispatch.copy_into(_view(out, dst_shape, out._strides, start * out._strides[ax]), a)
        start += n
    return out


def concat(arrays: tuple[GpuArray, ...] | list[GpuArray], /, *, axis: int | None = 0) -> GpuArray:
    """Join ``arrays`` along an existing ``axis`` (``None``: flatten them first).

    The result dtype is ``result_type(*arrays)``. Raises ``ValueError`` for no arrays, 0-d arrays
    with an axis, different ranks or mismatched sizes off ``axis``; ``TypeError`` for dtypes that
    do not promote; :class:`AxisError` for a bad axis.
    """
    plan = _concat_plan(arrays, axis)
    if plan is not None and plan is not _NO_PLAN:
        return plan.run(arrays)
    if isinstance(arrays, GpuArray) or not isinstance(arrays, (tuple, list)):
        raise TypeError("concat expects a tuple or list of arrays")
    key = plan is not _NO_PLAN and _concat_key(arrays, axis)
    arrays = [_check_array(a, "arrays") for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    dtype = result_type(*arrays)
    _check_same_device(arrays)
    if axis is None:
        arrays = [_flatten(a) for a in arrays]
        ax = 0
    else:
        ndim = arrays[0].ndim
        if ndim == 0:
            raise ValueError("zero-dimensional arrays cannot be concatenated")
        for a in arrays:
            if a.ndim != ndim:
                raise ValueError(
                    f"all arrays must have the same number of dimensions, got {arrays[0].shape} and {a.shape}"
                )
        ax = normalize_axis(axis, ndim)
        ref = arrays[0].shape
        for a in arrays:
            if a.shape[:ax] != ref[:ax] or a.shape[ax + 1 :] != ref[ax + 1 :]:
                raise ValueError(
                    f"array shapes {ref} and {a.shape} differ off the concatenation axis {ax}"
                )
    out_shape = list(arrays[0].shape)
    out_shape[ax] = sum(a.shape[ax] for a in arrays)
    ready = _ConcatPlan.make(arrays, ax, tuple(out_shape), dtype) if key else None
    if ready is not None:
        _dispatch.cache_put(_CONCAT_PLANS, key, ready)
        return ready.run(arrays)
    out = _empty(out_shape, dtype)
    start = 0
    for a in arrays:
        n = a.shape[ax]
        if n and a.size:
            dst_shape = list(out._shape)
            dst_shape[ax] = n
            dst = _view(out, dst_shape, out._strides, start * out._strides[ax])
            _dispatch.copy_into(dst, a)
        start += n
    return out


def stack(arrays: tuple[GpuArray, ...] | list[GpuArray], /, *, axis: int = 0) -> GpuArray:
    """Join equally shaped ``arrays`` along a new ``axis`` (``-ndim-1 <= axis <= ndim``).

    Raises ``ValueError`` for no arrays or differing shapes, ``TypeError`` for dtypes that do not
    promote, :class:`AxisError` for a bad axis.
    """
    key = _concat_key(arrays, axis)
    plan = _STACK_PLANS.get(key) if key is not None else None
    if plan is not None:
        return plan.run(arrays, plan.axis)  # type: ignore[arg-type]  # a list of arrays (key)
    if isinstance(arrays, GpuArray) or not isinstance(arrays, (tuple, list)):
        raise TypeError("stack expects a tuple or list of arrays")
    arrays = [_check_array(a, "arrays") for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to stack")
    result_type(*arrays)
    shape = arrays[0].shape
    for a in arrays:
        if a.shape != shape:
            raise ValueError(f"all input arrays must have the same shape, got {shape} and {a.shape}")
    ax = normalize_axis(axis, len(shape) + 1)
    expanded = [expand_dims(a, axis=ax) for a in arrays]
    out = concat(expanded, axis=ax)
    plan = _CONCAT_PLANS.get(_concat_key(expanded, ax)) if key is not None else None  # type: ignore[arg-type]
    if plan is not None:
        _dispatch.cache_put(_STACK_PLANS, key, plan)  # type: ignore[arg-type]  # not None
    return out


def tile(x: GpuArray, repetitions: tuple[int, ...], /) -> GpuArray:
    """``x`` repeated ``repetitions[i]`` times along each dimension (NumPy's ``tile``).

    One strided copy from a broadcast view. Raises ``TypeError`` unless ``repetitions`` is a
    tuple of ints, ``ValueError`` for a negative repetition.
    """
    _check_array(x)
    if not isinstance(repetitions, tuple):
        raise TypeError("repetitions must be a tuple")
    reps = [_index(r, "repetitions") for r in repetitions]
    if any(r < 0 for r in reps):
        raise ValueError(f"negative repetition in {tuple(reps)}")
    d = max(len(reps), x.ndim)
    reps = [1] * (d - len(reps)) + reps
    shape = [1] * (d - x.ndim) + list(x._shape)
    strides = [0] * (d - x.ndim) + list(x._strides)
    out_shape = [r * s for r, s in zip(reps, shape)]
    out = _empty(out_shape, x.dtype)
    if out.size == 0:
        return out
    # source view (r0, s0, r1, s1, ...) with stride 0 on the repetition dims
    src_shape, src_strides = [], []
    for r, s, st in zip(reps, shape, strides):
        src_shape += [r, s]
        src_strides += [0, st]
    src = _view(x, src_shape, src_strides)
    dst = _view(out, src_shape, contiguous_strides(src_shape), 0)
    _dispatch.copy_into(dst, src)
    return out


def repeat(x: GpuArray, repeats: int | GpuArray, /, *, axis: int | None = None) -> GpuArray:
    """Repeat each element of ``x`` along ``axis`` (flattened ``x`` for None).

    ``repeats`` is an int (one strided copy from a broadcast view) or a 1-D integer array with one
    count per element along the axis, or one element (counts are read back to the host: the result
    shape depends on them). Raises ``TypeError`` for a non-integer ``repeats``, ``ValueError`` for
    negative counts or a count array of the wrong length.
    """
    _check_array(x)
    if axis is None:
        x = _flatten(x)
        ax = 0
    else:
        ax = normalize_axis(axis, x.ndim)
    n = x._shape[ax]
    if isinstance(repeats, GpuArray):
        if repeats.dtype not in DTYPE_CATEGORIES["integer"]:
            raise TypeError("the repeats array must have an integer dtype")
        if repeats.ndim > 1:
            raise ValueError("the repeats array must be 0-d or 1-d")
        counts = [int(c) for c in np.asarray(repeats).reshape(-1)]
        if len(counts) == 1:
            repeats = counts[0]
        elif len(counts) != n:
            raise ValueError(f"repeats has {len(counts)} entries, axis {ax} has {n}")
        else:
            if any(c < 0 for c in counts):
                raise ValueError("repeats may not contain negative values")
            out_shape = list(x._shape)
            out_shape[ax] = sum(counts)
            out = _empty(out_shape, x.dtype)
            if out.size == 0:
                return out
            start = 0
            # group runs of equal counts into one strided copy each
            i = 0
            while i < n:
                j = i
                while j + 1 < n and counts[j + 1] == counts[i]:
                    j += 1
                c = counts[i]
                if c:
                    block = j - i + 1
                    src_shape = list(x._shape[:ax]) + [block, c] + list(x._shape[ax + 1 :])
                    src_strides = list(x._strides[:ax]) + [x._strides[ax], 0] + list(x._strides[ax + 1 :])
                    src = _view(x, src_shape, src_strides, i * x._strides[ax])
                    dst_strides = list(out._strides[:ax]) + [c * out._strides[ax], out._strides[ax]] + list(out._strides[ax + 1 :])
                    dst = _view(out, src_shape, dst_strides, start * out._strides[ax])
                    _dispatch.copy_into(dst, src)
                    start += block * c
                i = j + 1
            return out
    if isinstance(repeats, bool) or not isinstance(repeats, int):
        try:
            repeats = _index(repeats, "repeats")
        except TypeError:
            raise TypeError("repeats must be an int or an integer array") from None
    if repeats < 0:
        raise ValueError("repeats may not be negative")
    src_shape = list(x._shape[:ax]) + [n, repeats] + list(x._shape[ax + 1 :])
    src_strides = list(x._strides[:ax]) + [x._strides[ax], 0] + list(x._strides[ax + 1 :])
    out_shape = list(x._shape)
    out_shape[ax] = n * repeats
    out = _empty(out_shape, x.dtype)
    if out.size == 0:
        return out
    src = _view(x, src_shape, src_strides)
    dst = _view(out, src_shape, contiguous_strides(src_shape), 0)
    _dispatch.copy_into(dst, src)
    return out


def roll(x: GpuArray, /, shift: int | tuple[int, ...], *, axis: int | tuple[int, ...] | None = None) -> GpuArray:
    """Elements shifted cyclically by ``shift`` along ``axis`` (flattened for None).

    Writes the result with at most ``2**len(axes)`` strided block copies. Raises ``ValueError``
    when ``shift`` and ``axis`` tuples differ in length, ``TypeError`` for non-integer shifts,
    :class:`AxisError` for bad axes.
    """
    _check_array(x)
    if axis is None:
        if isinstance(shift, tuple):
            total = sum(_index(s, "shift") for s in shift)
        else:
            total = _index(shift, "shift")
        flat = _flatten(x)
        return reshape(roll(flat, total, axis=0), x.shape)
    axes = list(axis) if isinstance(axis, (tuple, list)) else [axis]
    shifts = list(shift) if isinstance(shift, (tuple, list)) else [shift]
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(axes) == 1 and len(shifts) > 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError("shift and axis must have the same length")
    net = [0] * x.ndim
    for s, a in zip(shifts, axes):
        net[normalize_axis(_index(a, "axis"), x.ndim)] += _index(s, "shift")
    out = _empty(x.shape, x.dtype)
    if out.size == 0:
        return out
    # per axis: list of (src_start, dst_start, length) pieces
    pieces_per_axis = []
    for d in range(x.ndim):
        n = x._shape[d]
        k = net[d] % n if n else 0
        if k == 0:
            pieces_per_axis.append([(0, 0, n)])
        else:
            pieces_per_axis.append([(0, k, n - k), (n - k, 0, k)])
    for combo in itertools.product(*pieces_per_axis):
        shape = [p[2] for p in combo]
        if 0 in shape:
            continue
        src_delta = sum(p[0] * st for p, st in zip(combo, x._strides))
        dst_delta = sum(p[1] * st for p, st in zip(combo, out._strides))
        _dispatch.copy_into(_view(out, shape, out._strides, dst_delta), _view(x, shape, x._strides, src_delta))
    return out
