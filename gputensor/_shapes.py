"""Pure-Python shape and stride logic (ints only, no device, no NumPy arrays).

Strides are counted in *elements*, not bytes, and may be zero (broadcast) or
negative (flipped views).

Axis errors: an out-of-range axis raises :class:`AxisError`, which is
``numpy.exceptions.AxisError`` (a subclass of both ``ValueError`` and
``IndexError``), the exact type array-api-strict raises from ``sum``,
``expand_dims``, ``squeeze`` and ``flip``.  A non-integer axis (including
``bool``) raises ``TypeError``; a repeated axis raises ``ValueError``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

from numpy.exceptions import AxisError

__all__ = [
    "AxisError",
    "Shape",
    "Strides",
    "size_of",
    "broadcast_shapes",
    "normalize_axis",
    "normalize_axes",
    "contiguous_strides",
    "is_contiguous",
    "broadcast_strides",
    "merge_dims",
    "reshape_shape",
    "view_strides_for_reshape",
]

Shape = tuple[int, ...]
Strides = tuple[int, ...]


def size_of(shape: Sequence[int]) -> int:
    """Return the number of elements of an array of ``shape`` (1 for ``()``)."""
    return math.prod(shape)


def broadcast_shapes(*shapes: Sequence[int]) -> Shape:
    """Return the shape that ``shapes`` broadcast to (``()`` for no shapes).

    Raises ``ValueError`` naming all shapes when two sizes of one dimension
    differ and neither is 1.
    """
    ndim = max((len(shape) for shape in shapes), default=0)
    result = [1] * ndim
    for shape in shapes:
        offset = ndim - len(shape)
        for i, size in enumerate(shape):
            current = result[offset + i]
            if size == current or size == 1:
                continue
            if current == 1:
                result[offset + i] = size
                continue
            listed = ", ".join(str(tuple(s)) for s in shapes)
            raise ValueError(
                f"shapes {listed} cannot be broadcast together: dimension "
                f"{offset + i - ndim} has sizes {current} and {size}"
            )
    return tuple(result)


def _as_index(axis: object) -> int:
    if isinstance(axis, bool):
        raise TypeError("an integer is required for 'axis', not bool")
    return operator.index(axis)  # raises TypeError for non-integers


def normalize_axis(axis: int, ndim: int) -> int:
    """Return ``axis`` as a non-negative index into ``ndim`` dimensions.

    Raises :class:`AxisError` (a ``ValueError`` and ``IndexError``) unless
    ``-ndim <= axis < ndim``, and ``TypeError`` if ``axis`` is not an integer.
    """
    index = _as_index(axis)
    if not -ndim <= index < ndim:
        raise AxisError(index, ndim)
    return index % ndim


def normalize_axes(axis: None | int | tuple[int, ...], ndim: int) -> tuple[int, ...]:
    """Return the sorted tuple of non-negative axes that ``axis`` names.

    ``None`` means all axes, an int one axis, a tuple several.  Raises
    :class:`AxisError` for an out-of-range axis, ``ValueError`` for a repeated
    axis and ``TypeError`` for anything other than None, an int or a tuple of
    ints.
    """
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, tuple):
        axes = [normalize_axis(a, ndim) for a in axis]
        if len(set(axes)) != len(axes):
            raise ValueError(f"duplicate value in 'axis': {axis}")
        return tuple(sorted(axes))
    return (normalize_axis(axis, ndim),)


def contiguous_strides(shape: Sequence[int]) -> Strides:
    """Return row-major (C) strides, in elements, for ``shape``.

    Size-0 dimensions count as size 1 in the products (as NumPy 1 did), so
    every stride stays positive and meaningful.
    """
    strides = []
    step = 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def is_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Return whether ``strides`` lay ``shape`` out row-major without gaps.

    Strides of size-0 and size-1 dimensions do not matter, and an array with
    no elements is contiguous (NumPy's relaxed-strides definition).
    """
    if size_of(shape) == 0:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size == 1:
            continue
        if stride != expected:
            return False
        expected *= size
    return True


def broadcast_strides(
    shape: Sequence[int], strides: Sequence[int], to_shape: Sequence[int]
) -> Strides:
    """Return strides that view an array of ``shape``/``strides`` as ``to_shape``.

    Dimensions are right-aligned; new leading dimensions and every size-1
    dimension get stride 0 (as ``numpy.broadcast_to``, even where the size
    stays 1).  Raises ``ValueError`` if ``shape`` does not broadcast to
    ``to_shape``.
    """
    if len(strides) != len(shape):
        raise ValueError(f"strides {tuple(strides)} do not match shape {tuple(shape)}")
    offset = len(to_shape) - len(shape)
    if offset < 0:
        raise ValueError(
            f"cannot broadcast shape {tuple(shape)} to fewer dimensions "
            f"{tuple(to_shape)}"
        )
    result = [0] * offset
    for size, stride, target in zip(shape, strides, to_shape[offset:]):
        if size == 1:
            result.append(0)
        elif size == target:
            result.append(stride)
        else:
            raise ValueError(
                f"cannot broadcast shape {tuple(shape)} to {tuple(to_shape)}"
            )
    return tuple(result)


def merge_dims(
    shape: Sequence[int], *stride_lists: Sequence[int]
) -> tuple[Shape, list[Strides]]:
    """Collapse dimensions into the fewest that address the same elements.

    ``stride_lists`` holds one stride tuple per operand, all for ``shape``
    (broadcast them first).  Size-1 dimensions are dropped, and dimension
    ``i`` merges with ``i + 1`` when ``stride[i] == shape[i + 1] * stride[i + 1]``
    holds for *every* operand (cupy's ``_reduce_dims``).  Dimension order is
    kept, so iterating the result row-major visits, for every operand, the
    same offsets in the same order as iterating the input.

    Returns ``(shape, [strides, ...])`` with at least one dimension:

    * no elements (a size-0 dimension): ``((0,), [(1,), ...])``;
    * one element (0-d or all sizes 1): ``((1,), [(1,), ...])``;

    in both cases each operand reads as contiguous.  Raises ``ValueError`` if
    a stride list's length differs from ``len(shape)``.
    """
    for strides in stride_lists:
        if len(strides) != len(shape):
            raise ValueError(
                f"strides {tuple(strides)} do not match shape {tuple(shape)}"
            )
    unit = [(1,)] * len(stride_lists)
    if size_of(shape) == 0:
        return (0,), list(unit)

    merged_shape: list[int] = []
    merged_strides: list[list[int]] = [[] for _ in stride_lists]
    for i, size in enumerate(shape):
        if size == 1:
            continue
        if merged_shape and all(
            out[-1] == size * strides[i]
            for out, strides in zip(merged_strides, stride_lists)
        ):
            merged_shape[-1] *= size
            for out, strides in zip(merged_strides, stride_lists):
                out[-1] = strides[i]
        else:
            merged_shape.append(size)
            for out, strides in zip(merged_strides, stride_lists):
                out.append(strides[i])
    if not merged_shape:
        return (1,), list(unit)
    return tuple(merged_shape), [tuple(out) for out in merged_strides]


def reshape_shape(old_shape: Sequence[int], new_shape: Sequence[int]) -> Shape:
    """Return ``new_shape`` with a single ``-1`` resolved against ``old_shape``.

    Raises ``ValueError`` for more than one ``-1``, a size below ``-1``, a
    ``-1`` that cannot be resolved (including next to a 0 size, which is
    ambiguous) or a size mismatch; ``TypeError`` for non-integer sizes.
    """
    new = [_as_index(size) for size in new_shape]
    old_size = size_of(old_shape)

    def mismatch() -> ValueError:
        return ValueError(
            f"cannot reshape array of shape {tuple(old_shape)} (size {old_size}) "
            f"into shape {tuple(new)}"
        )

    if any(size < -1 for size in new):
        raise ValueError(f"negative dimension in shape {tuple(new)}")
    unknown = [i for i, size in enumerate(new) if size == -1]
    if len(unknown) > 1:
        raise ValueError(
            f"can only specify one unknown dimension (-1), got {tuple(new)}"
        )
    if unknown:
        known = size_of(size for size in new if size != -1)
        if known == 0 or old_size % known:
            raise mismatch()
        new[unknown[0]] = old_size // known
    if size_of(new) != old_size:
        raise mismatch()
    return tuple(new)


def view_strides_for_reshape(
    shape: Sequence[int], strides: Sequence[int], new_shape: Sequence[int]
) -> Strides | None:
    """Return strides that view ``shape``/``strides`` as ``new_shape``, or None.

    ``new_shape`` must be resolved (no ``-1``) and have the same size;
    otherwise ``ValueError``.  Follows NumPy's C-order reshape: an unchanged
    shape keeps its strides, a contiguous array gets
    :func:`contiguous_strides`, and otherwise NumPy's
    ``_attempt_nocopy_reshape`` decides; None means a copy is needed.
    """
    shape = tuple(shape)
    strides = tuple(strides)
    new_shape = tuple(new_shape)
    if len(strides) != len(shape):
        raise ValueError(f"strides {strides} do not match shape {shape}")
    if size_of(new_shape) != size_of(shape) or any(s < 0 for s in new_shape):
        raise ValueError(f"cannot reshape shape {shape} into shape {new_shape}")
    if new_shape == shape:
        return strides
    if is_contiguous(shape, strides):
        return contiguous_strides(new_shape)

    # Non-empty, non-contiguous: size-1 dims of the old shape play no part.
    old_dims = [size for size in shape if size != 1]
    old_strides = [stride for size, stride in zip(shape, strides) if size != 1]
    new_strides = [0] * len(new_shape)
    # [oi, oj) of the old dims and [ni, nj) of the new dims hold equal sizes.
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(new_shape) and oi < len(old_dims):
        new_prod = new_shape[ni]
        old_prod = old_dims[oi]
        while new_prod != old_prod:
            if new_prod < old_prod:
                new_prod *= new_shape[nj]
                nj += 1
            else:
                old_prod *= old_dims[oj]
                oj += 1
        # The old dims in the group must be contiguous with each other.
        for k in range(oi, oj - 1):
            if old_strides[k] != old_dims[k + 1] * old_strides[k + 1]:
                return None
        new_strides[nj - 1] = old_strides[oj - 1]
        for k in range(nj - 1, ni, -1):
            new_strides[k - 1] = new_strides[k] * new_shape[k]
        ni, oi = nj, oj
        nj, oj = nj + 1, oj + 1
    # Trailing size-1 dims of the new shape.
    last_stride = new_strides[ni - 1] if ni >= 1 else 1
    for k in range(ni, len(new_shape)):
        new_strides[k] = last_stride
    return tuple(new_strides)
