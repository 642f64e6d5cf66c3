"""The compute backend layer: the only part of gputensor that talks to wgpu.

``get_backend()`` returns the process-wide WebGpuBackend, initialised on first use;
``reset_backend()`` retires it (its device is destroyed unless already lost) and makes a new one.
``open_backend(info)`` is a new backend on a new device of one adapter (``devices.adapter_infos``
lists them), ``retire_backend(backend)`` retires any backend.
"""

from __future__ import annotations

import threading

from .base import BackendTranspose, BinaryOp, ComputeBackend, ReduceOp, UnaryOp
from .context import WgpuContext
from . import device_state, devices
from .device_state import DeviceLostError
from .errors import BackendError, BackendErrorKind
from .webgpu import WebGpuBackend

__all__ = [
    "BackendError",
    "BackendErrorKind",
    "BackendTranspose",
    "BinaryOp",
    "ComputeBackend",
    "DeviceLostError",
    "ReduceOp",
    "UnaryOp",
    "WebGpuBackend",
    "WgpuContext",
    "get_backend",
    "open_backend",
    "reset_backend",
    "retire_backend",
]

_default: WebGpuBackend | None = None
_default_lock = threading.Lock()


def get_backend() -> WebGpuBackend:
    """The shared, initialised WebGpuBackend (created on first call)."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                backend = WebGpuBackend()
                backend.init()
                _default = backend
    return _default


def reset_backend() -> WebGpuBackend:
    """Retire the shared backend (``device_state.retire``: arrays made on it raise
    DeviceLostError from now on) and return a new, initialised one on a newly created device.
    Raises BackendError as ``WgpuContext.new`` when no device can be created."""
    global _default
    with _default_lock:
        old, _default = _default, None
        if old is not None and old.is_initialized():
            device_state.retire(old._ctx)
    return get_backend()


def open_backend(info: dict) -> WebGpuBackend:
    """A new, initialised WebGpuBackend on a new device of the adapter ``info`` names (an entry
    of ``devices.adapter_infos()``). Raises BackendError (device error) as
    ``devices.open_context``."""
    return WebGpuBackend(devices.open_context(info))


def retire_backend(backend: WebGpuBackend) -> None:
    """Retire ``backend`` (``device_state.retire``): its arrays raise DeviceLostError from now on
    and its device is destroyed (unless already lost)."""
    if backend.is_initialized():
        device_state.retire(backend._ctx)
