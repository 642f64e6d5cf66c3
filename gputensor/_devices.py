"""The gputensor device: one WebGPU adapter, its supported dtypes and default dtypes.

Device capabilities are data (array-api-strict's ``_devices.py`` pattern): a dtype is supported
when the adapter granted the WebGPU feature the dtype's row in :mod:`gputensor._dtypes` names
(``shader-int64`` for int64/uint64, ``shader-f64`` for float64; float16 is emulated and always
available).  Default dtypes: ``float32`` for real floating, ``int64`` for integral (``int32``
when the adapter lacks ``shader-int64``), ``int64``/``int32`` likewise for indexing, ``bool``.

The adapter's features come through :mod:`gputensor._runtime` (the backend initialises on the
first question about them).
"""

from __future__ import annotations

from typing import Any

from . import _dtypes, _runtime
from ._dtypes import DType

__all__ = ["Device", "DEFAULT_DEVICE", "UnsupportedDTypeError", "check_device", "default_dtype",
           "default_dtypes"]


class UnsupportedDTypeError(TypeError):
    """A dtype the device lacks the WebGPU feature for was asked for (a ``dtype=`` argument or
    host data of that dtype): ``dtype`` and ``feature`` (the missing feature) say which."""

    def __init__(self, message: str, dtype: DType, feature: str | None) -> None:
        super().__init__(message)
        self.dtype = dtype
        self.feature = feature


class Device:
    """The (single) WebGPU device arrays live on.

    Devices compare equal by name; ``str(device)`` is ``'webgpu:0'``.
    """

    __slots__ = ("_name",)

    def __init__(self, name: str = "webgpu:0") -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"gputensor.Device({self._name!r})"

    def __str__(self) -> str:
        return self._name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other._name == self._name

    def __hash__(self) -> int:
        return hash(("gputensor.Device", self._name))

    @property
    def features(self) -> frozenset[str]:
        """WebGPU features the adapter granted (initialises the backend on first use)."""
        return _runtime.adapter_features()

    @property
    def adapter(self) -> str:
        """A one-line description of the adapter behind this device."""
        return _runtime.adapter_description()

    def supports_dtype(self, dtype: DType) -> bool:
        """Whether arrays of ``dtype`` can live on this device."""
        return dtype.feature is None or dtype.feature in self.features

    def check_dtype(self, dtype: DType) -> DType:
        """Return ``dtype`` if supported; raise ``TypeError`` naming the missing feature and
        the conversion to use (:meth:`unsupported`)."""
        if not isinstance(dtype, DType):
            raise TypeError(f"expected a gputensor dtype, got {dtype!r}")
        if not self.supports_dtype(dtype):
            raise self.unsupported(dtype)
        return dtype

    def unsupported(self, dtype: DType, what: str = "") -> UnsupportedDTypeError:
        """The ``TypeError`` for ``dtype`` on a device without its feature: names the adapter,
        the missing WebGPU feature and the conversion to the dtype the device has (float64:
        float32; int64/uint64: int32/uint32); ``what`` says what was asked instead of the dtype
        (then without the conversion: data beyond the narrower dtype)."""
        narrower = dtype.info.fallback
        hint = (f"; convert with x.astype(np.{narrower}) or gt.asarray(x, dtype=gt.{narrower})"
                if narrower and not what else "")
        return UnsupportedDTypeError(
            f"{what or dtype.name} is not supported on this device (adapter "
            f"{_runtime.adapter_name()} lacks {dtype.feature}){hint}", dtype, dtype.feature
        )

    def supported_dtypes(self) -> tuple[DType, ...]:
        """Every dtype the device supports, in the order of ``_dtypes.ALL_DTYPES``."""
        return tuple(dt for dt in _dtypes.ALL_DTYPES if self.supports_dtype(dt))

    def default_dtypes(self) -> dict[str, DType]:
        """The spec's ``default_dtypes`` dict: real floating, complex floating, integral, indexing."""
        integral = _dtypes.int64 if self.supports_dtype(_dtypes.int64) else _dtypes.int32
        wide = self.supports_dtype(_dtypes.complex128)
        return {
            "real floating": _dtypes.float32,
            "complex floating": _dtypes.complex128 if wide else _dtypes.complex64,
            "integral": integral,
            "indexing": integral,
        }


DEFAULT_DEVICE = Device()


def check_device(device: Any) -> Device:
    """Return the device ``device`` names (None means the default); ``ValueError`` otherwise."""
    if device is None or device == DEFAULT_DEVICE:
        return DEFAULT_DEVICE
    if isinstance(device, str) and device in ("webgpu", "webgpu:0"):
        return DEFAULT_DEVICE
    raise ValueError(f"unsupported device {device!r}; gputensor has one device, {DEFAULT_DEVICE!r}")


def default_dtypes(device: Device | None = None) -> dict[str, DType]:
    """The default dtypes of ``device`` (see :meth:`Device.default_dtypes`)."""
    return (device or DEFAULT_DEVICE).default_dtypes()


def default_dtype(kind: str, device: Device | None = None) -> DType:
    """Default dtype for a Python value kind: ``'bool'``, ``'int'``, ``'float'`` or ``'complex'``."""
    if kind == "bool":
        return _dtypes.bool
    defaults = default_dtypes(device)
    if kind == "int":
        return defaults["integral"]
    if kind == "float":
        return defaults["real floating"]
    if kind == "complex":
        return defaults["complex floating"]
    raise ValueError(f"unknown kind {kind!r}")
