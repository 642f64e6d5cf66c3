"""``__array_namespace_info__``: the inspection API of the Array API, built from ``_devices``."""

from __future__ import annotations

from typing import Any

from ._data_type_functions import isdtype
from ._devices import Device, capabilities, check_device, current_device, devices
from ._dtypes import DType

__all__ = ["__array_namespace_info__"]

#: Dimensions the kernels accept (parameters are per-dimension words in a uniform buffer).
MAX_DIMENSIONS = 64

#: The dtypes the Array API standard defines; ``dtypes()`` lists only these (gputensor's
#: float16 stays available as ``gputensor.float16`` but is not a standard dtype).
STANDARD_DTYPES = frozenset({
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128",
})


class __array_namespace_info__:  # noqa: N801 - the spec's name
    """Capabilities, devices and dtypes of gputensor: one device per WebGPU adapter."""

    def capabilities(self, *, device: Device | None = None) -> dict[str, Any]:
        """The spec's keys -- boolean indexing (``x[mask]``, ``x[mask] = v``) and data-dependent
        shapes (``nonzero``, ``unique_*``) work on every device; arrays have at most ``max
        dimensions`` axes -- and, with ``device`` given (a Device or its name), what that
        device has (``gputensor.capabilities(device)``: adapter, dtypes, ``float64``, ``int64``,
        features, limits; creates its WebGPU device). ``ValueError`` for an unknown device."""
        caps: dict[str, Any] = {
            "boolean indexing": True,
            "data-dependent shapes": True,
            "max dimensions": MAX_DIMENSIONS,
        }
        if device is not None:
            caps.update(capabilities(device))
        return caps

    def default_device(self) -> Device:
        """The current device: the innermost ``with device:`` block's, else the process default
        (``webgpu:0`` unless ``gputensor.set_default_device`` chose another)."""
        return current_device()

    def default_dtypes(self, *, device: Device | None = None) -> dict[str, DType | None]:
        """``real floating``: float32; ``complex floating``: complex128 (complex64 without
        ``shader-f64``);
        ``integral``/``indexing``: int64 (int32 without ``shader-int64``), for ``device``
        (default: the current device). ``ValueError`` for an unknown device."""
        return check_device(device).default_dtypes()

    def dtypes(self, *, device: Device | None = None,
               kind: str | tuple[str, ...] | None = None) -> dict[str, DType]:
        """Supported standard dtypes of ``device`` (default: the current one) by name (float16
        is not one), optionally of one ``kind`` (``isdtype`` kinds, or a tuple of them).
        ``ValueError`` for an unknown kind or device."""
        device = check_device(device)
        supported = [dt for dt in device.supported_dtypes() if dt.name in STANDARD_DTYPES]
        if kind is None:
            return {dt.name: dt for dt in supported}
        if isinstance(kind, (str, tuple)):
            try:
                return {dt.name: dt for dt in supported if isdtype(dt, kind)}
            except (TypeError, ValueError):
                pass
        raise ValueError(f"unsupported kind: {kind!r}")

    def devices(self) -> list[Device]:
        """All devices: one per WebGPU adapter, ``webgpu:0`` (the process default) first."""
        return devices()
