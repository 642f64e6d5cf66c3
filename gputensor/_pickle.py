"""Arrays by value: pickling and ``copy`` move the data, never a device pointer.

``pickle.dumps(x)`` reads the array back and stores its values (a NumPy array, so pickle
protocol 5's out-of-band buffers apply); loading uploads them to a new array on the loading
process's device. ``copy.copy(x)`` and ``copy.deepcopy(x)`` are device-side copies that share
nothing with ``x``. Installed on :class:`GpuArray` when ``gputensor`` is imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _dispatch
from ._array_object import GpuArray
from ._dtypes import DTYPES_BY_NAME

__all__ = ["rebuild"]


def rebuild(host: np.ndarray, dtype: str) -> GpuArray:
    """A new array on the default device holding ``host``'s values as ``dtype`` (what loading a
    pickled array calls). Raises ``TypeError`` when the device lacks ``dtype``."""
    return GpuArray._from_numpy(np.asarray(host), DTYPES_BY_NAME[dtype])


def _reduce(self: GpuArray) -> tuple[Any, tuple[np.ndarray, str]]:
    """Pickle by value: the values read back to the host (waits for pending work)."""
    return rebuild, (self.get(), self.dtype.name)


def _copy(self: GpuArray) -> GpuArray:
    """An independent copy on the device (``copy.copy``)."""
    return _dispatch.contiguous_copy(self)


def _deepcopy(self: GpuArray, memo: dict[int, Any]) -> GpuArray:
    """An independent copy on the device (``copy.deepcopy``)."""
    out = memo.get(id(self))
    if out is None:
        out = memo[id(self)] = _dispatch.contiguous_copy(self)
    return out


GpuArray.__reduce__ = _reduce  # type: ignore[method-assign,assignment]
GpuArray.__copy__ = _copy  # type: ignore[attr-defined]
GpuArray.__deepcopy__ = _deepcopy  # type: ignore[attr-defined]
