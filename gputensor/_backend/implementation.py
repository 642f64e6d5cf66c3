"""The WebGPU implementation under the backend: wgpu-py on wgpu-native, or wgpudawn on Dawn.

Everything that differs between the two sits here; the other backend modules import ``wgpu``
from this module (``from .implementation import wgpu``) and use only the public wgpu-py API,
plus what this module offers:

* ``NAME``: ``"native"`` or ``"dawn"``, chosen once per process by the ``wgpu`` knob
  (``GPUTENSOR_WGPU=native|dawn``; unset: wgpu-native where ``wgpu`` is installed, else Dawn
  where ``wgpudawn`` is). wgpudawn installs as its own module, beside wgpu-py.
* :func:`native_api`: wgpu-native's cffi module (``lib``, ``ffi``, ``new_struct``,
  ``from_c_string_view``) for the host-cost paths that call it directly (the pass calls of
  ``context``, the mapping callbacks and polls of ``mapping``), or None: on Dawn, and on a
  wgpu-py that lacks those internals, the callers take the public API instead.
* :func:`timestamp_period`: nanoseconds per timestamp tick.
* :data:`FEATURES`: the implementation's name of each feature gputensor asks for (Dawn calls
  ``subgroup`` ``subgroups``), and :data:`SKIPPED_FEATURES`, those not asked for on this
  implementation (the kernels' subgroup code is written for naga's WGSL); :data:`DEVICE_FEATURES`,
  the implementation's own features the device needs (Dawn: thread safety).
* :data:`WRITABLE_ALIASING_CHECKED`: whether a writable binding may overlap another binding of
  its buffer in one dispatch (``bind_groups`` copies the read one where it may not).
* :data:`SUBGROUP_MATRIX` (the feature of subgroup matrices, Dawn's
  ``chromium-experimental-subgroup-matrix``), :data:`SUBGROUP_MATRIX_NEEDS` (the features
  requested with it: Dawn's ``subgroups``, which its WGSL needs) and
  :func:`subgroup_matrix_configs`: the adapter's configurations, read through wgpudawn's extras.
  Dawn lists that feature only on an instance made with its ``allow_unsafe_apis`` toggle, which
  this module sets at import while the ``int8_sgmatrix`` knob is on
  (:data:`EXPERIMENTAL_FEATURES_UNLOCKED`; ``GPUTENSOR_INT8_SGMATRIX=0`` leaves the instance as
  Dawn makes it).

Raises ImportError at import naming the package to install when the chosen implementation is
missing, ValueError (from the knob) for another value of ``GPUTENSOR_WGPU``.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from . import config

__all__ = ["NAME", "wgpu", "native_api", "timestamp_period", "FEATURES", "SKIPPED_FEATURES",
           "DEVICE_FEATURES", "PACKAGES", "WRITABLE_ALIASING_CHECKED", "SUBGROUP_MATRIX",
           "SUBGROUP_MATRIX_NEEDS", "subgroup_matrix_configs"]

#: implementation -> the Python package that provides it
PACKAGES = {"native": "wgpu", "dawn": "wgpudawn"}

_asked = config.value("wgpu")
wgpu: ModuleType
if _asked == "dawn":
    try:
        import wgpudawn as wgpu
    except ImportError as exc:
        raise ImportError("GPUTENSOR_WGPU=dawn needs the wgpudawn package: pip install wgpudawn") from exc
    NAME = "dawn"
elif _asked == "native":
    try:
        import wgpu
    except ImportError as exc:
        raise ImportError("GPUTENSOR_WGPU=native needs wgpu-py: pip install wgpu") from exc
    NAME = "native"
else:
    try:
        import wgpu
        NAME = "native"
    except ImportError:
        try:
            import wgpudawn as wgpu
        except ImportError:
            raise ImportError("gputensor needs a WebGPU implementation: pip install wgpu "
                              "(wgpu-native) or pip install wgpudawn (Dawn)") from None
        NAME = "dawn"

#: gputensor's feature name -> the implementation's
FEATURES: dict[str, str] = {"subgroup": "subgroups"} if NAME == "dawn" else {}
#: features gputensor does not ask for on this implementation
SKIPPED_FEATURES: frozenset[str] = frozenset({"subgroup"}) if NAME == "dawn" else frozenset()
#: implementation features the device is requested with where the adapter offers them (Dawn's
#: device is thread-safe only with ``implicit-device-synchronization``: gputensor records,
#: submits and waits from several threads)
DEVICE_FEATURES: tuple[str, ...] = ("implicit-device-synchronization",) if NAME == "dawn" else ()
#: whether the implementation rejects a dispatch in which a writable storage binding overlaps
#: another binding of its buffer (Dawn does, as the WebGPU specification says; wgpu-native
#: does not check)
WRITABLE_ALIASING_CHECKED: bool = NAME == "dawn"

#: the feature of subgroup matrices (tensor cores; Dawn only, on adapters that offer it)
SUBGROUP_MATRIX = "chromium-experimental-subgroup-matrix"
#: the implementation features requested together with SUBGROUP_MATRIX (its WGSL extension
#: needs ``enable subgroups``); they stay out of ``context.features``
SUBGROUP_MATRIX_NEEDS: tuple[str, ...] = ("subgroups",) if NAME == "dawn" else ()


def _unlock_experimental_features() -> bool:
    """On Dawn, with the ``int8_sgmatrix`` knob on: enable the instance toggle
    ``allow_unsafe_apis``, without which Dawn's adapters do not list their experimental
    features (SUBGROUP_MATRIX among them). It must precede the instance, so it runs at import;
    the device still asks only for the features gputensor uses. True where the toggle was set;
    False elsewhere, or where the instance already exists or the wgpudawn build lacks the
    toggle (never raises)."""
    if NAME != "dawn" or not config.value("int8_sgmatrix"):
        return False
    try:
        from wgpudawn.backends.dawn import extras

        extras.set_instance_extras(enable_toggles=["allow_unsafe_apis"])
        return True
    except Exception:  # noqa: BLE001 - an instance made before gputensor, or an older wgpudawn
        return False


#: whether Dawn's experimental features were unlocked (``_unlock_experimental_features``)
EXPERIMENTAL_FEATURES_UNLOCKED: bool = _unlock_experimental_features()


def subgroup_matrix_configs(adapter: Any) -> tuple[dict[str, Any], ...]:
    """The adapter's subgroup-matrix configurations as dicts with ``component_type``,
    ``result_component_type`` ("i8", "u8", "i32", ...), ``m``, ``n``, ``k`` and (where the
    implementation says) ``min_subgroup_size`` / ``max_subgroup_size``; empty where the adapter
    lacks SUBGROUP_MATRIX or the implementation cannot say (never raises)."""
    if NAME != "dawn" or SUBGROUP_MATRIX not in getattr(adapter, "features", ()):
        return ()
    try:
        from wgpudawn.backends.dawn import extras

        configs = extras.get_adapter_properties(adapter).get("subgroup_matrix_configs") or ()
        return tuple(dict(c) for c in configs)
    except Exception:  # noqa: BLE001 - an older wgpudawn: no configurations known
        return ()


_NATIVE_NAMES = ("ffi", "lib", "new_struct", "from_c_string_view")
_NATIVE_CALLS = ("wgpuDevicePoll", "wgpuBufferMapAsync", "wgpuComputePassEncoderSetPipeline",
                 "wgpuComputePassEncoderSetBindGroup", "wgpuComputePassEncoderDispatchWorkgroups",
                 "wgpuQueueGetTimestampPeriod")
_native: list[Any] = []


def native_api() -> Any | None:
    """wgpu-native's cffi module (``wgpu.backends.wgpu_native._api``) when the implementation
    is wgpu-native and it has every name and C call gputensor uses, else None."""
    if not _native:
        api = None
        if NAME == "native":
            try:
                from wgpu.backends.wgpu_native import _api

                for name in _NATIVE_NAMES:
                    getattr(_api, name)
                for name in _NATIVE_CALLS:
                    getattr(_api.lib, name)
                api = _api
            except (ImportError, AttributeError):  # pragma: no cover - another wgpu-py
                api = None
        _native.append(api)
    return _native[0]


def timestamp_period(queue: Any) -> float:
    """Nanoseconds per timestamp tick of ``queue``: wgpu-native's ``wgpuQueueGetTimestampPeriod``;
    1.0 where it cannot be asked (Dawn resolves timestamps in nanoseconds; so does wgpu-native
    on the Vulkan adapters seen so far)."""
    api = native_api()
    if api is None:
        return 1.0
    try:
        period = float(api.lib.wgpuQueueGetTimestampPeriod(queue._internal))
        return period if period > 0 else 1.0
    except Exception:  # noqa: BLE001 - any failure: assume nanoseconds
        return 1.0


def batch_opener(device: Any) -> Any | None:
    """A function returning a new (command encoder, compute pass) of the wgpu-py ``device``,
    the same objects as ``device.create_command_encoder()`` and its ``begin_compute_pass()``,
    made with two wgpu-native calls on descriptors allocated once (wgpu-py builds and converts
    both descriptors on every call, about half the host time of opening a batch). Errors are
    raised as wgpu-py raises them (its error-capturing ``libf``). None where the internals it
    uses are missing (Dawn, another wgpu-py): callers use the public methods then."""
    api = native_api()
    if api is None or not all(hasattr(api, name) for name in
                              ("libf", "GPUCommandEncoder", "GPUComputePassEncoder")):
        return None
    libf, ffi = api.libf, api.ffi
    create_encoder, begin_pass = libf.wgpuDeviceCreateCommandEncoder, libf.wgpuCommandEncoderBeginComputePass
    encoder_class, pass_class = api.GPUCommandEncoder, api.GPUComputePassEncoder
    encoder_desc = ffi.new("WGPUCommandEncoderDescriptor *")  # zero-filled: no label, no chain
    pass_desc = ffi.new("WGPUComputePassDescriptor *")  # no label, no timestamp writes
    handle = device._internal

    def open_batch() -> tuple[Any, Any]:
        encoder = encoder_class("", create_encoder(handle, encoder_desc), device)
        return encoder, pass_class("", begin_pass(encoder._internal, pass_desc), device)

    return open_batch
