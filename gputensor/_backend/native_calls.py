"""Direct wgpu-native calls for the context's per-command work, on descriptors made once: the
compute-pass commands of ``record`` (``PassCalls``), bind-group creation (``BindGroupCall``) and
opening, finishing and submitting a batch (``BatchCalls``). Each ``load()`` is None when the
installed wgpu-py lacks the internals it needs; the context then calls wgpu-py's public methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import implementation
from .transfers import Region

__all__ = ["BatchCalls", "BindGroupCall", "PassCalls"]


class PassCalls:
    """wgpu-native's compute-pass entry points, called directly for the dispatches ``record``
    makes: wgpu-py's ``GPUComputePassEncoder`` methods wrap every call in Python-level error
    capture and ``set_bind_group`` allocates its offsets array each time, about 2 us of host
    time per dispatch -- as much as the rest of recording a small op. Errors of pass commands
    are reported when the pass ends or the encoder finishes, which still go through wgpu-py
    (``flush``). ``PassCalls.load()`` is None when the installed wgpu-py lacks these internals;
    ``record`` then calls the public methods."""

    __slots__ = ("set_pipeline", "set_bind_group", "dispatch", "offsets")

    def __init__(self, lib: Any, ffi: Any) -> None:
        self.set_pipeline = lib.wgpuComputePassEncoderSetPipeline
        self.set_bind_group = lib.wgpuComputePassEncoderSetBindGroup
        self.dispatch = lib.wgpuComputePassEncoderDispatchWorkgroups
        self.offsets = ffi.new("uint32_t[1]")  # the dynamic offset (written under the lock)

    @classmethod
    def load(cls) -> "PassCalls | None":
        api = implementation.native_api()
        return None if api is None else cls(api.lib, api.ffi)


class BindGroupCall:
    """wgpu-native's ``wgpuDeviceCreateBindGroup`` called with a descriptor built here: wgpu-py's
    ``create_bind_group`` checks and converts every entry in Python, several times the cost of
    the call itself (a bind group is made whenever an op binds buffers it has not bound
    together before). Errors are raised as wgpu-py raises them (its error-capturing ``libf``);
    the result is wgpu-py's ``GPUBindGroup`` (released when it dies). ``load()`` is None
    without these internals (``BindGroups._create_bind_group`` then takes the public API)."""

    __slots__ = ("_create", "_ffi", "_wrap", "_device")

    def __init__(self, api: Any, device: Any) -> None:
        self._create = getattr(api, "libf", api.lib).wgpuDeviceCreateBindGroup
        self._ffi = api.ffi
        self._wrap = api.GPUBindGroup
        self._device = device

    @classmethod
    def load(cls, device: Any) -> "BindGroupCall | None":
        api = implementation.native_api()
        if api is None or not hasattr(api, "GPUBindGroup"):
            return None
        return cls(api, device)

    def __call__(self, layout: Any, regions: Sequence[Region]) -> Any:
        ffi = self._ffi
        entries = ffi.new("WGPUBindGroupEntry[]", len(regions))  # zero-filled: no sampler, no view
        for k, (buf, offset, size) in enumerate(regions):
            entry = entries[k]
            entry.binding = k
            entry.buffer = buf._internal
            entry.offset = offset
            entry.size = size
        desc = ffi.new("WGPUBindGroupDescriptor *")
        desc.layout = layout._internal
        desc.entryCount = len(regions)
        desc.entries = entries
        return self._wrap("", self._create(self._device._internal, desc), self._device)


class BatchCalls:
    """wgpu-native's calls that open an encoder, record copies and close and submit a batch
    (``_open_encoder``, ``_copy``, ``_end_pass``, ``flush``): create an encoder and finish it on
    descriptors made once, submit the one command buffer from an array made once, release it.
    wgpu-py's ``create_command_encoder``, ``copy_buffer_to_buffer``, ``end``, ``finish`` and
    ``submit`` build descriptors, lists, arrays and a ``GPUCommandBuffer`` object and check their
    arguments in Python on every call. Creating, finishing and submitting raise errors as wgpu-py
    does (its error-capturing ``libf``); a copy or the end of a pass records its errors in the
    encoder, which ``finish`` reports, so those go to the plain ``lib``. ``load()`` is None
    without these internals; the public methods are called then."""

    def __init__(self, api: Any, device: Any) -> None:
        libf, lib, ffi = api.libf, api.lib, api.ffi
        self.end_pass = lib.wgpuComputePassEncoderEnd
        self.copy = lib.wgpuCommandEncoderCopyBufferToBuffer
        self.finish = libf.wgpuCommandEncoderFinish
        self.submit = libf.wgpuQueueSubmit
        self.release = lib.wgpuCommandBufferRelease
        self.descriptor = ffi.new("WGPUCommandBufferDescriptor *")  # zero-filled: no label
        self.buffers = ffi.new("WGPUCommandBuffer[1]")
        self._create_encoder = libf.wgpuDeviceCreateCommandEncoder
        self._encoder_descriptor = ffi.new("WGPUCommandEncoderDescriptor *")
        self._encoder_class = api.GPUCommandEncoder
        self._device = device

    @classmethod
    def load(cls, device: Any) -> "BatchCalls | None":
        api = implementation.native_api()
        if api is None or not hasattr(api, "libf") or not hasattr(api, "GPUCommandEncoder"):
            return None
        if not all(hasattr(api.lib, name) for name in (
                "wgpuComputePassEncoderEnd", "wgpuCommandEncoderCopyBufferToBuffer", "wgpuCommandEncoderFinish",
                "wgpuQueueSubmit", "wgpuCommandBufferRelease", "wgpuDeviceCreateCommandEncoder")):
            return None
        return cls(api, device)

    def open_encoder(self) -> Any:
        """A new command encoder (wgpu-py's ``GPUCommandEncoder``, released when it dies)."""
        device = self._device
        return self._encoder_class("", self._create_encoder(device._internal, self._encoder_descriptor), device)
