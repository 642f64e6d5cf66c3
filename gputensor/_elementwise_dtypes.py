"""Dtype resolution of the namespace's elementwise table ops (``_ops.ELEMENTWISE_OPS``): the
spec's promotion of arrays, weak Python scalars, the op's category and result kind."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from . import _array_object as _ao
from . import _devices, _dtypes
from ._dtypes import DType
from ._ops import ELEMENTWISE_OPS

__all__ = ["resolve_elementwise_dtypes"]


def resolve_elementwise_dtypes(name: str, args: Sequence[Any]) -> tuple[DType, DType, DType]:
    """(compute dtype, expression dtype, result dtype) of table op ``name`` on ``args``.

    Arrays are promoted with the promotion table, Python scalars are weak
    (``_dtypes.promote_scalar``, with the device's default float for a float mixed with
    integers). Raises ``TypeError`` for dtypes outside the op's category, pairs that do not
    promote, non-scalar non-array arguments or no array at all; ``OverflowError`` for ints out of
    the result's range.
    """
    row = ELEMENTWISE_OPS[name]
    allowed = _dtypes.DTYPE_CATEGORIES[row.category]
    arrays = [a for a in args if isinstance(a, _ao.GpuArray)]
    if not arrays:
        raise TypeError(f"{name} needs at least one gputensor array argument")
    for a in args:
        if isinstance(a, _ao.GpuArray):
            if a.dtype not in allowed:
                raise TypeError(f"{name} only accepts {row.category} dtypes, got {a.dtype}")
        elif not isinstance(a, (builtins.bool, int, float, complex)):
            raise TypeError(
                f"{name} accepts gputensor arrays and Python scalars, not {type(a).__name__}"
            )
    dtype = arrays[0].dtype
    for a in arrays[1:]:
        dtype = _dtypes.result_type_pair(dtype, a.dtype)
    default_float = _devices.default_dtype("float")
    for a in args:
        if not isinstance(a, _ao.GpuArray):
            dtype = _dtypes.promote_scalar(dtype, a, default_float=default_float)
    if dtype not in allowed:
        raise TypeError(f"{name} only accepts {row.category} dtypes, got {dtype} after promotion")
    if row.result == "float" and dtype.kind not in "fc":
        dtype = default_float
    if row.result == "bool":
        return dtype, _dtypes.bool, _dtypes.bool
    if row.result == "real" and dtype.kind == "c":
        part = _dtypes.DTYPES_BY_NAME[dtype.info.component]
        return dtype, part, part
    return dtype, dtype, dtype
