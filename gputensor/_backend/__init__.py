"""The compute backend layer: the only part of gputensor that talks to wgpu.

``get_backend()`` returns the process-wide WebGpuBackend, initialised on first use.
"""

from __future__ import annotations

import threading

from .base import BackendTranspose, BinaryOp, ComputeBackend, ReduceOp, UnaryOp
from .context import WgpuContext
from .errors import BackendError, BackendErrorKind
from .webgpu import WebGpuBackend

__all__ = [
    "BackendError",
    "BackendErrorKind",
    "BackendTranspose",
    "BinaryOp",
    "ComputeBackend",
    "ReduceOp",
    "UnaryOp",
    "WebGpuBackend",
    "WgpuContext",
    "get_backend",
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
