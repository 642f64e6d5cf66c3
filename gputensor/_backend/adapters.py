"""Choosing the adapter and opening its device.

``rank_adapters`` ranks the enumerated adapters (hardware before software, Vulkan/Metal/D3D12
before GL) after narrowing them by the ``adapter`` knob (``$GPUTENSOR_ADAPTER``);
``choose_adapter`` is the first of them. ``device_steps`` opens the device of the best-ranked
adapter that can create one (``device_state.open_first``: the next adapter when device creation
fails, unless the user named the adapter); ``request_device_steps`` requests one adapter's
device with the ``WANTED_FEATURES`` the adapter offers and the ``WANTED_LIMITS`` at the
adapter's maximum. Both are promise-yielding generators (see ``promises``).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

from . import device_state, implementation
from .errors import unsupported
from .implementation import wgpu

__all__ = ["WANTED_FEATURES", "WANTED_LIMITS", "adapter_sort_key", "adapter_description",
           "adapter_names", "choose_adapter", "rank_adapters", "device_steps",
           "request_device_steps"]

#: Features requested when the adapter offers them.
WANTED_FEATURES = ("shader-f16", "shader-f64", "shader-int64", "subgroup", "timestamp-query")

#: Limits requested at the adapter's maximum (the defaults are far lower).
WANTED_LIMITS = (
    "max-storage-buffer-binding-size",
    "max-buffer-size",
    "max-compute-workgroup-storage-size",
    "max-compute-invocations-per-workgroup",
    "max-compute-workgroup-size-x",
    "max-compute-workgroup-size-y",
    "max-compute-workgroups-per-dimension",
    "max-storage-buffers-per-shader-stage",
    "max-bindings-per-bind-group",
)

_ADAPTER_TYPE_RANK = {"DiscreteGPU": 0, "IntegratedGPU": 1, "VirtualGPU": 2, "Unknown": 3, "CPU": 4}
_BACKEND_RANK = {"Vulkan": 0, "Metal": 0, "D3D12": 0, "OpenGL": 1, "OpenGLES": 1, "D3D11": 2}


def adapter_sort_key(info: Mapping[str, Any]) -> tuple[int, int]:
    """Rank for adapter choice: hardware before software, Vulkan/Metal/D3D12 before GL."""
    return (
        _ADAPTER_TYPE_RANK.get(str(info.get("adapter_type", "Unknown")), 3),
        _BACKEND_RANK.get(str(info.get("backend_type", "")), 3),
    )


def adapter_description(info: Mapping[str, Any]) -> str:
    """One line naming an adapter: device, backend, type."""
    return f"{info.get('device', '?')} ({info.get('backend_type', '?')}, {info.get('adapter_type', '?')})"


def adapter_names(info: Mapping[str, Any]) -> list[str]:
    """The lower-case strings ``GPUTENSOR_ADAPTER`` is matched against: device name, vendor,
    description, backend and adapter type, plus ``lavapipe`` for Mesa's llvmpipe on Vulkan
    (which reports itself as llvmpipe)."""
    names = [
        str(info.get(field, "")).lower()
        for field in ("device", "vendor", "description", "backend_type", "adapter_type")
    ]
    if "llvmpipe" in names[0] and names[3] == "vulkan":
        names.append("lavapipe")
    return names


def choose_adapter(adapters: Sequence[Any], hint: str | None) -> Any:
    """The first adapter of ``rank_adapters(adapters, hint)`` (BackendError as there)."""
    return rank_adapters(adapters, hint)[0]


def rank_adapters(adapters: Sequence[Any], hint: str | None) -> list[Any]:
    """The adapters to try, best first, from ``adapters`` (objects with an ``info`` mapping).

    ``hint`` (normally ``$GPUTENSOR_ADAPTER``) keeps only adapters one of whose names
    (``adapter_names``) contains it, case-insensitively. Among the rest: discrete GPUs, then
    integrated, virtual, unknown, CPU (software) adapters; within a type Vulkan, Metal and D3D12
    before OpenGL/GLES before D3D11; ties keep the enumeration order. Raises BackendError
    (unsupported), listing the adapters found, when nothing is left.
    """
    candidates = list(adapters)
    if hint:
        needle = hint.strip().lower()
        candidates = [a for a in candidates if any(needle in name for name in adapter_names(a.info))]
    if not candidates:
        found = "; ".join(adapter_description(a.info) for a in adapters) or "none"
        where = f" matching GPUTENSOR_ADAPTER={hint!r}" if hint else ""
        raise unsupported(
            f"no WebGPU adapter{where}. Adapters found: {found}. On Debian/Ubuntu without a GPU, "
            "`apt-get install mesa-vulkan-drivers` provides lavapipe, a Vulkan adapter on the CPU."
        )
    return sorted(candidates, key=lambda a: adapter_sort_key(a.info))


def request_device_steps(adapter: Any) -> Generator[Any, Any, Any]:
    """Request ``adapter``'s device with the wanted features and limits; yields the promise,
    returns the device (wgpu's own error types when it cannot be created)."""
    names = implementation.FEATURES
    features = [names.get(f, f) for f in WANTED_FEATURES
                if f not in implementation.SKIPPED_FEATURES and names.get(f, f) in adapter.features]
    features += [f for f in implementation.DEVICE_FEATURES if f in adapter.features]
    if implementation.SUBGROUP_MATRIX in adapter.features and all(
            f in adapter.features for f in implementation.SUBGROUP_MATRIX_NEEDS):
        features += [f for f in (*implementation.SUBGROUP_MATRIX_NEEDS, implementation.SUBGROUP_MATRIX)
                     if f not in features]
    limits = {k: adapter.limits[k] for k in WANTED_LIMITS if k in adapter.limits}
    device = yield adapter.request_device_async(
        label="gputensor", required_features=features, required_limits=limits
    )
    return device


def device_steps(hint: str | None, open_steps: Callable[[Any], Generator[Any, Any, Any]]) -> Generator[Any, Any, Any]:
    """Enumerate the adapters, rank them (``rank_adapters`` with ``hint``) and return
    ``open_steps(adapter)``'s result for the first adapter whose device can be created
    (``device_state.open_first``; ``open_steps`` normally requests the device with
    ``request_device_steps`` and builds the context on it); yields the promises. Raises
    BackendError (unsupported) when no adapter matches, (device error) when no device can be
    created (naming the adapter ``hint`` chose, else every adapter tried)."""
    adapters = yield wgpu.gpu.enumerate_adapters_async()
    ranked = rank_adapters(adapters, hint)  # the next one when a device cannot be created
    return (yield from device_state.open_first(ranked, hint, open_steps, adapter_description))
