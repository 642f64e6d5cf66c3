"""Choosing the adapter and opening its device.

``choose_adapter`` ranks the enumerated adapters (hardware before software, Vulkan/Metal/D3D12
before GL) after narrowing them by the ``adapter`` knob (``$GPUTENSOR_ADAPTER``);
``device_steps`` requests the device with the ``WANTED_FEATURES`` the adapter offers and the
``WANTED_LIMITS`` at the adapter's maximum (a promise-yielding generator, see ``promises``).
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import Any

import wgpu

from .errors import unsupported

__all__ = ["WANTED_FEATURES", "WANTED_LIMITS", "adapter_sort_key", "adapter_description",
           "adapter_names", "choose_adapter", "device_steps"]

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
    """Pick the adapter to use from ``adapters`` (objects with an ``info`` mapping).

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
    return min(candidates, key=lambda a: adapter_sort_key(a.info))


def device_steps(hint: str | None) -> Generator[Any, Any, tuple[Any, Any]]:
    """Enumerate the adapters, pick one (``choose_adapter`` with ``hint``) and request its
    device; yields the promises, returns ``(adapter, device)``. Raises BackendError
    (unsupported) when no adapter matches."""
    adapters = yield wgpu.gpu.enumerate_adapters_async()
    adapter = choose_adapter(adapters, hint)
    features = [f for f in WANTED_FEATURES if f in adapter.features]
    limits = {k: adapter.limits[k] for k in WANTED_LIMITS if k in adapter.limits}
    device = yield adapter.request_device_async(
        label="gputensor", required_features=features, required_limits=limits
    )
    return adapter, device
