"""Every usable adapter of the process, each with a backend of its own.

``adapter_infos()`` lists the adapters wgpu enumerates (one entry per distinct adapter, ranked as
``adapters.rank_adapters`` ranks them: hardware before software, Vulkan/Metal/D3D12 before GL),
as info dicts. ``open_context(info)`` creates the device of the adapter with that info (a fresh
enumeration: an adapter object grants one device) and returns a WgpuContext on it
(``gputensor._backend.open_backend`` puts a backend on it); ``key(info)`` is what identifies an
adapter across enumerations.

``mismatch`` is what a backend raises when it is handed a pointer of another live backend (an
array of another device): ``DeviceMismatchError``, a ``ValueError``. Backends register here
(``register``) so that the error can name the device the pointer belongs to.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Generator, Mapping, Sequence
from typing import Any

from .adapters import adapter_description, rank_adapters, request_device_steps
from .context import WgpuContext
from .errors import BackendError, BackendErrorKind, device_error
from .implementation import wgpu
from .promises import run_sync

__all__ = ["DeviceMismatchError", "adapter_infos", "key", "open_context", "register", "mismatch"]

#: Live backends (weakly held), for ``mismatch``.
_LIVE: weakref.WeakSet[Any] = weakref.WeakSet()


class DeviceMismatchError(BackendError, ValueError):
    """A pointer of one device's array reached another device's backend: arrays of different
    devices were mixed in one operation. A ``ValueError`` (as array-api-strict raises)."""

    def __init__(self, message: str) -> None:
        BackendError.__init__(self, BackendErrorKind.INVALID_ARGUMENT, message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (DeviceMismatchError, (self.message,))


def key(info: Mapping[str, Any]) -> tuple[Any, ...]:
    """What identifies an adapter across enumerations: its name, vendor, backend and type, and
    (``ordinal``) which of several identical adapters -- two GPUs of one model -- it is."""
    return tuple(str(info.get(f, "")) for f in ("device", "vendor_id", "device_id", "backend_type",
                                                  "adapter_type", "description", "ordinal"))


def _with_ordinals(adapters: Sequence[Any]) -> list[tuple[dict[str, Any], Any]]:
    """(info with its ``ordinal``: how many identical adapters came before it, adapter)."""
    seen: dict[tuple[Any, ...], int] = {}
    out = []
    for adapter in adapters:
        info = dict(adapter.info)
        plain = key(info)
        info["ordinal"] = seen.get(plain, 0)
        seen[plain] = info["ordinal"] + 1
        out.append((info, adapter))
    return out


def _enumerate_steps() -> Generator[Any, Any, Any]:
    adapters = yield wgpu.gpu.enumerate_adapters_async()
    return adapters


def computes(adapter: Any) -> bool:
    """Whether ``adapter`` can run compute shaders. OpenGL needs version 4.3 (OpenGL ES 3.1):
    the NVIDIA driver's headless EGL context is OpenGL 3.3, reports compute limits all the same,
    and its device fails to create. Other adapters: nonzero compute limits."""
    info = adapter.info
    if "gl" in str(info.get("backend_type", "")).lower():
        text = str(info.get("description", "")) or str(info.get("device", ""))
        found = re.search(r"(\d+)\.(\d+)", text)
        if found is not None:
            version = (int(found.group(1)), int(found.group(2)))
            return version >= ((3, 1) if " es" in f" {text.lower()}" else (4, 3))
    limits = adapter.limits
    return all(int(limits.get(k, 1)) > 0 for k in ("max-compute-invocations-per-workgroup",
                                                   "max-compute-workgroups-per-dimension"))


def _enumerate() -> list[Any]:
    """The adapters wgpu enumerates that can compute (``computes``), ranked (``rank_adapters``;
    as ``adapters.device_steps``)."""
    adapters = run_sync(_enumerate_steps())
    return rank_adapters([a for a in adapters if computes(a)] or adapters, None)


def adapter_infos() -> list[dict[str, Any]]:
    """Info dicts of the adapters wgpu enumerates, best first (``rank_adapters``), each with its
    ``ordinal`` among identical adapters. Raises BackendError (unsupported), listing what was
    found, when there is none."""
    return [info for info, _ in _with_ordinals(_enumerate())]


def open_context(info: Mapping[str, Any]) -> WgpuContext:
    """A WgpuContext on a new device of the adapter ``info`` names (as ``adapter_infos`` gives
    it). Raises BackendError (device error) naming the adapter when it is no longer enumerated
    or its device cannot be created."""
    wanted = key(info)
    for found, adapter in _with_ordinals(_enumerate()):
        if key(found) == wanted:
            try:
                device = run_sync(request_device_steps(adapter))
            except Exception as exc:  # noqa: BLE001 - wgpu's own error types
                raise device_error(f"the adapter {adapter_description(info)} failed to create its "
                                   f"device: {exc}") from exc
            return WgpuContext(adapter, device)
    raise device_error(f"the adapter {adapter_description(info)} is no longer available")


def register(backend: Any) -> None:
    """Remember ``backend`` (weakly) for ``mismatch``."""
    _LIVE.add(backend)


def mismatch(ptr: int, ident: int, backend: Any) -> DeviceMismatchError | None:
    """``DeviceMismatchError`` when allocation ``ident`` (of pointer ``ptr``) is live in a
    working backend other than ``backend``; None otherwise."""
    for other in list(_LIVE):
        ctx = other._ctx
        if (other is not backend and ident in other._allocations and ctx is not None
                and getattr(ctx, "lost", None) is None):  # (a retired device's: stale_pointer)
            here = backend._ctx
            theirs = adapter_description(ctx.adapter_info) if ctx is not None else "?"
            ours = adapter_description(here.adapter_info) if here is not None else "?"
            return DeviceMismatchError(
                f"an array on the device {theirs} was used in an operation on the device {ours}: "
                "arrays of different devices cannot be mixed; move one with x.to_device(device)"
            )
    return None
