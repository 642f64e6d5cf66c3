"""Argument checks shared by the ``gputensor.nn`` functions."""

from __future__ import annotations

import functools
import numbers
from collections.abc import Sequence

from .._array_object import GpuArray
from .._data_type_functions import result_type
from .._dtypes import DTYPE_CATEGORIES, DType
from .._manipulation_functions import _copy_contiguous
from .._shapes import contiguous_strides, is_contiguous

_FLOATING = DTYPE_CATEGORIES["real floating"]


def float_array(x: object, name: str) -> GpuArray:
    """``x`` if it is a gputensor array of a real floating dtype; ``TypeError`` otherwise."""
    if not isinstance(x, GpuArray):
        raise TypeError(f"{name} must be a gputensor array, not {type(x).__name__}")
    if x.dtype not in _FLOATING:
        raise TypeError(f"{name} must have a real floating dtype, got {x.dtype}")
    return x


def common_float_dtype(*arrays: GpuArray | None) -> DType:
    """The promoted dtype of the given float arrays (None entries skipped)."""
    present = [a for a in arrays if a is not None]
    first = present[0].dtype
    if all(a.dtype == first for a in present):
        return first
    return result_type(*present)


def as_dtype(x: GpuArray, dtype: DType) -> GpuArray:
    """``x`` itself when it has ``dtype``, else a contiguous copy converted to it (on the device)."""
    return x if x.dtype == dtype else _copy_contiguous(x, dtype)


def contiguous(x: GpuArray, dtype: DType | None = None) -> GpuArray:
    """``x`` when it is C-contiguous (and of ``dtype``), else a contiguous copy on the device."""
    if (dtype is None or x.dtype == dtype) and (x._strides == _row_major(x.shape)
                                                or is_contiguous(x.shape, x._strides)):
        return x
    return _copy_contiguous(x, dtype)


@functools.lru_cache(maxsize=256)
def _row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(contiguous_strides(shape))


def real_number(value: object, name: str) -> float:
    """``value`` as a float; ``TypeError`` for non-real values and bools."""
    if type(value) is float:
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, not {type(value).__name__}")
    return float(value)


def int_tuple(value: object, name: str, length: int | None = None) -> tuple[int, ...]:
    """An int or a sequence of ints as a tuple (an int repeated ``length`` times); ``TypeError``
    for other types, ``ValueError`` for a sequence of the wrong length."""
    if type(value) is int:
        return (value,) * (length or 1)
    if type(value) is tuple and (length is None or len(value) == length) and all(type(v) is int for v in value):
        return value
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer or a sequence of integers, not bool")
    if isinstance(value, numbers.Integral):
        return (int(value),) * (length or 1)
    if isinstance(value, Sequence) and not isinstance(value, str):
        out = []
        for v in value:
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise TypeError(f"{name} must hold integers, got {v!r}")
            out.append(int(v))
        if length is not None and len(out) != length:
            raise ValueError(f"{name} must have {length} entries, got {len(out)}")
        return tuple(out)
    raise TypeError(f"{name} must be an integer or a sequence of integers, not {type(value).__name__}")
