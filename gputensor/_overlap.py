"""Whether reading one view while writing another can read clobbered data.

Views are gputensor arrays (anything with ``_storage``, ``_offset``, ``_strides``, ``shape`` and
``dtype``); the test works on the byte ranges they touch in their shared allocation, widened to
whole u32 words (packed 8- and 16-bit dtypes share words).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._backend.ops_elementwise import extent
from ._shapes import size_of

__all__ = ["byte_range", "conflicts"]


def byte_range(x: Any, shape: Sequence[int], strides: Sequence[int]) -> tuple[int, int]:
    """[start, stop) bytes from the allocation start that ``x`` viewed as ``shape`` touches."""
    lo, stop = extent(shape, strides)
    size = x.dtype.itemsize
    base = x._offset * size
    return base + lo * size, base + stop * size


def conflicts(src: Any, src_strides: Sequence[int], dst: Any) -> bool:
    """Whether reading ``src`` while writing ``dst`` (same shape) could read clobbered data."""
    if src._storage is not dst._storage or size_of(dst.shape) == 0:
        return False
    if src._offset == dst._offset and tuple(src_strides) == tuple(dst._strides) \
            and src.dtype.itemsize == dst.dtype.itemsize:
        return False  # element i reads exactly what element i writes
    a0, a1 = byte_range(src, dst.shape, src_strides)
    b0, b1 = byte_range(dst, dst.shape, dst._strides)
    # packed dtypes share u32 words: widen to word boundaries
    a0, b0 = a0 // 4 * 4, b0 // 4 * 4
    a1, b1 = -(-a1 // 4) * 4, -(-b1 // 4) * 4
    return a0 < b1 and b0 < a1
