"""gputensor devices: one per WebGPU adapter, their dtypes, default dtypes and capabilities.

``devices()`` lists one :class:`Device` per adapter wgpu enumerates (``webgpu:0`` is the process
default device: the adapter ``$GPUTENSOR_ADAPTER`` or the ranking chooses; the others follow in
the ranking's order). Each device has its own WebGPU device, memory pool and caches
(``_runtime.DeviceRuntime``), created on first use. An array lives on the device it was made
on (``x.device``); operations run on their operands' device and their results live there;
``x.to_device(d)`` copies between devices (through the host).

Which device an operation without array arguments (creation functions without ``device=``,
``gt.asarray(host)``, unpickling) uses: the *current* device -- ``with device:`` for the block
(this thread or task only), else the process default (``set_default_device``).

Device capabilities are data (array-api-strict's ``_devices.py`` pattern): a dtype is supported
when the adapter granted the WebGPU feature the dtype's row in :mod:`gputensor._dtypes` names
(``shader-int64`` for int64/uint64, ``shader-f64`` for float64; float16 is emulated and always
available). int64/uint64 are supported everywhere: where the adapter lacks ``shader-int64``
they are emulated as two 32-bit words (``_backend/wgsl_types.EMULATED_INT64``). Default dtypes:
``float32`` for real floating, ``int64`` for integral (``int32`` when int64 is emulated),
``int64``/``int32`` likewise for indexing, ``bool``.

``CURRENT`` (also ``DEFAULT_DEVICE``) stands for the current device in the engine's dtype checks.
Once a second device is handed out (``on_multi``), the hooks registered there run once:
``gputensor`` then routes its public functions and array methods to their operands' device.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from typing import Any

from . import _dtypes, _runtime
from ._backend.wgsl_types import EMULATED_INT64
from ._dtypes import DType

__all__ = ["Device", "CURRENT", "DEFAULT_DEVICE", "UnsupportedDTypeError", "check_device",
           "default_dtype", "default_dtypes", "devices", "current_device", "set_default_device",
           "device_of_runtime", "capabilities", "on_multi", "is_multi", "placing"]


class UnsupportedDTypeError(TypeError):
    """A dtype the device lacks the WebGPU feature for was asked for (a ``dtype=`` argument or
    host data of that dtype): ``dtype`` and ``feature`` (the missing feature) say which."""

    def __init__(self, message: str, dtype: DType, feature: str | None) -> None:
        super().__init__(message)
        self.dtype = dtype
        self.feature = feature

    def __reduce__(self) -> tuple[Any, ...]:
        return (UnsupportedDTypeError, (str(self), self.dtype, self.feature))


#: ``with device:`` blocks: the tokens to restore, innermost last (per thread / task).
_TOKENS: contextvars.ContextVar[tuple[Any, ...]] = contextvars.ContextVar("gputensor_device_tokens", default=())


class _DeviceFacts:
    """The dtype facts of a device, from its runtime (``_rt()``)."""

    __slots__ = ()

    def _rt(self) -> _runtime.DeviceRuntime:
        raise NotImplementedError

    @property
    def features(self) -> frozenset[str]:
        """WebGPU features the adapter granted (creates the device on first use)."""
        rt = self._rt()
        return _runtime.adapter_features() if rt is _runtime.current() else rt.features()

    @property
    def adapter(self) -> str:
        """A one-line description of the adapter behind this device (device, backend, type)."""
        rt = self._rt()
        if rt.info is None:
            rt.start()
        return rt.describe()

    def supports_dtype(self, dtype: DType) -> bool:
        """Whether arrays of ``dtype`` can live on this device (int64/uint64 everywhere: two
        32-bit words where the adapter lacks ``shader-int64``, :meth:`emulates`)."""
        return dtype.feature is None or dtype.feature in self.features or dtype.name in EMULATED_INT64

    def emulates(self, dtype: DType) -> bool:
        """Whether ``dtype`` is emulated here: int64/uint64 as two 32-bit words on an adapter
        without ``shader-int64`` (elementwise operations, conversions, copies, indexing,
        reductions, scans, sorts, searches and integer matmul; an operation without emulation,
        such as a user kernel's WGSL operators, raises ``TypeError`` naming the conversion to
        int32/uint32)."""
        return dtype.name in EMULATED_INT64 and dtype.feature not in self.features

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
            f"{self.adapter} lacks {dtype.feature}){hint}", dtype, dtype.feature
        )

    def supported_dtypes(self) -> tuple[DType, ...]:
        """Every dtype the device supports, in the order of ``_dtypes.ALL_DTYPES``."""
        return tuple(dt for dt in _dtypes.ALL_DTYPES if self.supports_dtype(dt))

    def default_dtypes(self) -> dict[str, DType]:
        """The spec's ``default_dtypes`` dict: real floating, complex floating, integral, indexing."""
        integral = _dtypes.int32 if self.emulates(_dtypes.int64) else _dtypes.int64
        wide = self.supports_dtype(_dtypes.complex128)
        return {
            "real floating": _dtypes.float32,
            "complex floating": _dtypes.complex128 if wide else _dtypes.complex64,
            "integral": integral,
            "indexing": integral,
        }


class Device(_DeviceFacts):
    """A WebGPU adapter arrays can live on: ``gt.devices()`` lists them, ``x.device`` is an
    array's. ``Device()`` is ``webgpu:0`` (the process default device), ``Device('webgpu:1')``
    the next adapter (``ValueError`` for one that does not exist).

    Devices compare equal by name; ``str(device)`` is ``'webgpu:<n>'``. ``with device:`` makes
    it the current device of the block (this thread or task): creation functions without
    ``device=`` and unpickled arrays go there. Pickles by name.
    """

    __slots__ = ("_name", "_runtime")

    def __init__(self, name: str = "webgpu:0") -> None:
        self._name = str(name)
        self._runtime: _runtime.DeviceRuntime | None = None
        if self._name != "webgpu:0":
            self._rt()  # ValueError for a device that does not exist

    @classmethod
    def _of(cls, rt: _runtime.DeviceRuntime) -> Device:
        self = object.__new__(cls)
        self._name = f"webgpu:{rt.index}"
        self._runtime = rt
        return self

    def _rt(self) -> _runtime.DeviceRuntime:
        rt = self._runtime
        if rt is None:
            rt = self._runtime = _runtime_named(self._name)
            if rt.index:
                _activate()
        return rt

    def __repr__(self) -> str:
        return f"gputensor.Device({self._name!r})"

    def __str__(self) -> str:
        return self._name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other._name == self._name

    def __hash__(self) -> int:
        return hash(("gputensor.Device", self._name))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Device, (self._name,))

    def __enter__(self) -> Device:
        rt = self._rt()
        if rt.index:
            _activate()
        token = _runtime._CURRENT.set(rt)
        _TOKENS.set(_TOKENS.get() + (token,))
        return self

    def __exit__(self, *exc: Any) -> None:
        tokens = _TOKENS.get()
        _TOKENS.set(tokens[:-1])
        _runtime._CURRENT.reset(tokens[-1])

    @property
    def started(self) -> bool:
        """Whether this device's WebGPU device exists (it was used)."""
        return self._rt().started()


class _CurrentDevice(_DeviceFacts):
    """The current device (``current_device()``), resolved at every call: what the engine's
    dtype checks ask (``CURRENT.check_dtype(dt)``)."""

    __slots__ = ()

    def _rt(self) -> _runtime.DeviceRuntime:
        return _runtime.current()

    @property
    def features(self) -> frozenset[str]:
        return _runtime.adapter_features()

    def __repr__(self) -> str:
        return "gputensor._devices.CURRENT"


CURRENT = _CurrentDevice()
#: The name the engine's modules use for the current device in their dtype checks.
DEFAULT_DEVICE = CURRENT

_MULTI_HOOKS: list[Callable[[], None]] = []
_multi = False


def on_multi(hook: Callable[[], None]) -> None:
    """Call ``hook()`` once, when a device other than ``webgpu:0`` is first handed out (now, if
    that happened already)."""
    _MULTI_HOOKS.append(hook)
    if _multi:
        hook()


def is_multi() -> bool:
    """Whether a second device was handed out (the routing hooks ran)."""
    return _multi


def _activate() -> None:
    global _multi
    if not _multi:
        _multi = True
        _runtime.set_multi()
        for hook in _MULTI_HOOKS:
            hook()


def device_of_runtime(rt: _runtime.DeviceRuntime) -> Device:
    """The public Device of a runtime."""
    device = rt.device
    if device is None:
        device = rt.device = Device._of(rt)
        if rt.index:
            _activate()
    return device


def _runtime_named(name: str) -> _runtime.DeviceRuntime:
    prefix, _, number = name.partition(":")
    if prefix == "webgpu" and (number == "" or number.isdigit()):
        index = int(number or 0)
        if index == 0:
            return _runtime._DEFAULT
        found = _runtime.runtimes()
        if index < len(found):
            return found[index]
    known = ", ".join(f"webgpu:{rt.index}" for rt in _runtime.runtimes())
    raise ValueError(f"unsupported device {name!r}; gputensor's devices are {known}")


def devices() -> list[Device]:
    """Every device: one per WebGPU adapter, ``webgpu:0`` (the process default) first. Lists
    the adapters without creating their devices."""
    return [device_of_runtime(rt) for rt in _runtime.runtimes()]


def current_device() -> Device:
    """The device operations without array arguments use: the innermost ``with device:``
    block's, else the process default (``set_default_device``)."""
    return device_of_runtime(_runtime.current())


def set_default_device(device: Any) -> Device:
    """Make ``device`` (a Device or its name) the process default -- for every thread outside a
    ``with device:`` block -- and return the previous default. ``ValueError`` for an unknown
    device. (A dask worker per device calls this at start-up: ``gputensor._dask``.)"""
    rt = check_device(device)._rt()
    if rt.index:
        _activate()
    return device_of_runtime(_runtime.set_default(rt))


def check_device(device: Any) -> Device:
    """The Device ``device`` names: None is the current device; a Device; ``'webgpu'`` /
    ``'webgpu:<n>'``. ``ValueError`` otherwise (``'cpu'`` too: arrays live on WebGPU devices;
    ``x.to_device('cpu')`` is the way to the host)."""
    if device is None:
        return current_device()
    if isinstance(device, Device):
        device._rt()
        if device._name != "webgpu:0":
            _activate()
        return device
    if isinstance(device, str):
        return device_of_runtime(_runtime_named(device))
    known = ", ".join(f"webgpu:{rt.index}" for rt in _runtime.runtimes())
    raise ValueError(f"unsupported device {device!r}; gputensor's devices are {known}")


def default_dtypes(device: Device | None = None) -> dict[str, DType]:
    """The default dtypes of ``device`` (default: the current one; see ``default_dtypes``)."""
    return (device or CURRENT).default_dtypes()


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


#: WebGPU features and what each makes available (``capabilities``).
_FEATURE_KEYS = (("float64", "shader-f64"), ("int64", "shader-int64"), ("native float16", "shader-f16"),
                 ("subgroups", "subgroup"), ("timestamp query", "timestamp-query"))


def capabilities(device: Any = None) -> dict[str, Any]:
    """What works on ``device`` (default: the current one; creates its WebGPU device): the
    adapter, the dtypes (``dtypes``: names of the supported ones), 64-bit types (``int64``:
    native 64-bit integers; without them int64/uint64 are emulated as two 32-bit words), the
    WebGPU features and the limits that bound array sizes. ``ValueError`` for an unknown device."""
    dev = check_device(device)
    rt = dev._rt()
    ctx = rt.backend().context
    features = dev.features
    caps: dict[str, Any] = {
        "device": str(dev),
        "adapter": dev.adapter,
        "backend": str(ctx.adapter_info.get("backend_type", "?")),
        "adapter type": str(ctx.adapter_info.get("adapter_type", "?")),
        "dtypes": tuple(dt.name for dt in dev.supported_dtypes()),
    }
    for key, feature in _FEATURE_KEYS:
        caps[key] = feature in features
    caps["complex128"] = caps["float64"]
    caps["features"] = tuple(sorted(features))
    caps["max buffer bytes"] = int(ctx.max_buffer_size)
    caps["max binding bytes"] = int(ctx.max_binding_size)
    caps["max storage bindings"] = rt.max_storage_bindings()
    return caps


def placing(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (a creation function with a ``device=`` keyword) run on the device ``device=``
    names (None: the current device). ``ValueError`` for an unknown device."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        device = kwargs.get("device")
        if device is not None:
            rt = check_device(device)._rt()
            if rt is not _runtime.current():
                with _runtime.use(rt):
                    return fn(*args, **kwargs)
        return fn(*args, **kwargs)

    return call
