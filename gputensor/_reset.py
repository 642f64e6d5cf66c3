"""``gputensor.reset()``: continue on a new device after the device was lost (or at will).

A lost device makes every later call raise ``gputensor.DeviceLostError`` (see
``_backend/device_state.py``); nothing recovers by itself. ``reset()`` retires the device and
creates a new one in the same process: arrays made before it are gone (using one raises
``DeviceLostError``), arrays made after it work as usual.
"""

from __future__ import annotations

from . import _function_kernels, _fusion, _runtime
from ._backend import reset_backend

__all__ = ["reset"]

#: Cached answers about the device, asked again of the new one.
_DEVICE_CACHES = (_runtime.adapter_features, _runtime.max_storage_bindings, _fusion.max_inputs,
                  _function_kernels.default_int, _function_kernels.default_uint)


def reset() -> None:
    """Drop the current WebGPU device (destroying it unless it is already lost) and create a new
    one, choosing the adapter as at import. Every existing array is invalidated: using one raises
    ``DeviceLostError``; pending lazy (fused) arrays are dropped unevaluated. Not to be called
    while other threads use gputensor.

    Raises ``gputensor.DeviceLostError``/``RuntimeError`` (a ``BackendError``) when no device can
    be created."""
    with _fusion._LOCK:  # lazy arrays of the old device: never evaluated now
        _fusion._LIVE.clear()
        _fusion._PENDING.clear()  # (pending row statistics too)
    for cached in _DEVICE_CACHES:
        cached.cache_clear()
    reset_backend()
