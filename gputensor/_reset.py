"""``gputensor.reset()``: continue on a new device after a device was lost (or at will).

A lost device makes every later call on it raise ``gputensor.DeviceLostError`` (see
``_backend/device_state.py``); nothing recovers by itself, and the other devices of the process
are not affected. ``reset(device)`` retires that device and creates a new one on the same
adapter in the same process: its arrays made before are gone (using one raises
``DeviceLostError``), arrays made after it work as usual; ``reset()`` does so for every device
that was used.
"""

from __future__ import annotations

from typing import Any

from . import _fusion, _runtime
from ._array_object import runtime_of
from ._devices import check_device

__all__ = ["reset"]

#: Cached answers about the device, asked again of the new one.
_DEVICE_CACHES = (_fusion.max_inputs,)


def reset(device: Any = None) -> None:
    """Drop the WebGPU device of ``device`` (a Device or its name; default: every device that
    was used, the default device always) -- destroying it unless it is already lost -- and
    create a new one on the same adapter (the default device: chosen as at import; the others
    on first use). Every array of a reset device is invalidated: using one raises
    ``DeviceLostError``; its pending lazy (fused) arrays are dropped unevaluated. Not to be
    called while other threads use gputensor.

    Raises ``gputensor.DeviceLostError``/``RuntimeError`` (a ``BackendError``) when no device
    can be created, ``ValueError`` for an unknown device."""
    if device is None:
        targets = [rt for rt in (_runtime.runtimes() if _runtime.multi else [_runtime._DEFAULT])
                   if rt.is_default or rt.started()]
    else:
        targets = [check_device(device)._rt()]
    with _fusion._LOCK:  # lazy arrays of the old devices: never evaluated now
        if device is None or not _runtime.multi:
            _fusion._LIVE.clear()
            _fusion._PENDING.clear()  # (pending row statistics too)
        else:
            keep = []
            for ref in _fusion._LIVE:
                x = ref()
                if x is not None and _fusion.is_lazy(x) and runtime_of(x) not in targets:
                    keep.append(ref)
            _fusion._LIVE[:] = keep
            for storage in list(_fusion._PENDING.keys()):
                if getattr(storage, "rt", None) in targets:
                    _fusion._PENDING.pop(storage, None)
    for cached in _DEVICE_CACHES:
        cached.cache_clear()
    for rt in targets:
        rt.reset()
