"""The frontend's handle on the backend object: memory, transfers, adapter facts, errors.

The lowest engine module: it imports the backend and nothing of the frontend but the dtype
table, so the array object (``_array_object``) and the devices (``_devices``) can allocate,
upload, read back and ask about the adapter without importing the engine above them.
``_dispatch`` re-exports these names (``_dispatch.alloc`` is ``_runtime.alloc``).
"""

from __future__ import annotations

import builtins
import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ._backend import get_backend, ops_elementwise
from ._backend.adapters import adapter_description as adapter_names_text
from ._backend.errors import BackendError, BackendErrorKind
from ._backend.ops_elementwise import ArrayOperand
from ._backend.wgsl_types import storage_type
from ._shapes import contiguous_strides

__all__ = [
    "backend", "adapter_features", "adapter_description", "adapter_name", "alloc", "free", "upload", "download",
    "download_strided", "compute_type", "max_storage_bindings", "translate", "backend_errors", "call",
]

#: The shared, initialised WebGpuBackend: ``backend()`` (``_backend.get_backend`` itself, one
#: call less on every operation's path).
backend = get_backend


@functools.cache
def adapter_features() -> frozenset[str]:
    """The WebGPU features the device was granted."""
    return frozenset(str(f) for f in backend().context.features)


def adapter_description() -> str:
    """One line naming the adapter."""
    return repr(backend())


def adapter_name() -> str:
    """The adapter's name as ``python -m gputensor`` prints it (device, backend, type)."""
    return adapter_names_text(backend().context.adapter_info)


_COMPUTE: dict[Any, str] = {}


def compute_type(dtype: Any) -> str:
    """The WGSL type values of ``dtype`` are computed in (float16: f32, int8: i32, ...)."""
    compute = _COMPUTE.get(dtype)
    if compute is None:
        compute = _COMPUTE[dtype] = storage_type(dtype.name).compute
    return compute


@functools.cache
def max_storage_bindings() -> int:
    """Storage buffers one kernel may bind (the device's limit)."""
    return int(backend().context.limits.get("max-storage-buffers-per-shader-stage", 8))


def translate(exc: Exception) -> Exception:
    """The namespace's exception for a backend error: *unsupported* (an adapter feature is
    missing) becomes ``TypeError``; anything else is returned as it is."""
    if isinstance(exc, BackendError) and exc.kind == BackendErrorKind.UNSUPPORTED:
        return TypeError(str(exc))
    return exc


@contextlib.contextmanager
def backend_errors() -> Iterator[None]:
    """Re-raise any error of the block as the namespace's exception for it (``translate``)."""
    try:
        yield
    except Exception as exc:
        raise translate(exc) from None


def call(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """``fn(backend(), *args, **kwargs)`` (a backend operation, e.g. ``ops_sort.argsort``), its
    errors re-raised as the namespace's exceptions (``translate``)."""
    try:
        return fn(backend(), *args, **kwargs)
    except Exception as exc:
        raise translate(exc) from None


def alloc(nbytes: int, zero: builtins.bool = True) -> int:
    """Allocate ``nbytes`` of device memory (zero-filled unless ``zero=False``) from the memory
    pool; returns a device pointer. Raises ``MemoryError`` (with the sizes) when the device is
    out of memory even after the pool released its cached blocks."""
    try:
        return backend().alloc(nbytes, zero=zero)
    except Exception as exc:
        if getattr(exc, "kind", None) == BackendErrorKind.OUT_OF_MEMORY:
            raise MemoryError(str(getattr(exc, "message", exc))) from None
        raise


def free(ptr: int) -> None:
    """Release an allocation; silent when the backend is gone (interpreter shutdown)."""
    try:
        backend().free(ptr)
    except Exception:  # noqa: BLE001 - finalizers must never raise
        pass


def upload(ptr: int, host: np.ndarray) -> None:
    """Copy the bytes of the C-contiguous ``host`` array to ``ptr``."""
    if host.nbytes:
        backend().copy_htod(ptr, np.asarray(host, order="C").reshape(-1).view(np.uint8))


def download(host: np.ndarray, ptr: int) -> None:
    """Fill the C-contiguous, writable ``host`` array from the device bytes at ``ptr``."""
    if host.nbytes:
        backend().copy_dtoh(host.reshape(-1).view(np.uint8), ptr)


def download_strided(host: np.ndarray, ptr: int, dtype: str, strides: Sequence[int]) -> None:
    """Fill the C-contiguous ``host`` array (its shape is the view's) from the strided view of
    ``dtype`` elements at ``ptr``: one copy kernel into a scratch buffer, then one readback.
    Backend errors become the namespace's (``translate``); ``MemoryError`` as ``alloc``."""
    if not host.size:
        return
    be = backend()
    scratch = alloc(host.nbytes, zero=False)
    try:
        dst = ArrayOperand(scratch, dtype, tuple(contiguous_strides(host.shape)))
        ops_elementwise.copy_strided(be, ArrayOperand(ptr, dtype, tuple(strides)), dst, host.shape)
        download(host, scratch)
    except Exception as exc:
        raise translate(exc) from None
    finally:
        free(scratch)
