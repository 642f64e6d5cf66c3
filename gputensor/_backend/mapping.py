"""Buffer mappings that complete in the waiting thread: no blocking wait while the device works.

Why: wgpu-py completes ``GPUBuffer.map_async`` through a per-device poll thread that calls
``wgpuDevicePoll(wait=True)`` for as long as a mapping is pending. Measured on an H200
(NVIDIA 580, Vulkan; ``python -m benchmarks.diag_sort --waits``), a blocking wait that starts
while the device is busy returns either promptly or about 8-10 ms late, at random: a 16M-key
sort followed by ``synchronize()`` took 5.3 or 13 ms, while the same sort followed by a 5 ms
sleep and then ``synchronize()`` always finished the wait in 0.6 ms. And while the poll thread
sits in that wait it holds wgpu-core's fence lock, so a ``queue.submit`` from the recording
thread stalls as long (seen as single submits of 9.3 ms).

So readback and upload staging buffers are mapped here, with ``wgpuBufferMapAsync`` and a
callback of our own, and the waiting thread completes the mapping itself (``MapRequest.
sync_wait``), in one of two ways (``Mapper.spin``):

* spin (hardware adapters): ``wgpuDevicePoll(wait=False)`` in a loop -- a pure spin for the
  first ``SPIN_SECONDS``, then with ``SLEEP_SECONDS`` sleeps between polls -- until the
  callback has fired. The device is never waited on with a blocking call, so neither the late
  wake-ups nor the submit stalls occur; the cost is one host core busy while a result is
  awaited, as with CUDA's default (spinning) synchronisation.
* block (software adapters, whose device *is* the host's cores): ``wgpuDevicePoll(wait=True)``
  in this thread, as before.

``GPUTENSOR_WAIT`` overrides the choice: ``spin``, ``block``, or ``poller`` (wgpu-py's own
``map_async`` and poll thread: no ``Mapper`` at all). The mapped buffer is then the wgpu-py
object it always was: ``read_mapped``, ``write_mapped`` and ``unmap`` work unchanged (the state
wgpu-py's own map handler would set is set here). This module reaches into wgpu-py's
wgpu-native backend (``_api``): ``Mapper.load`` returns None when those internals are missing,
and the caller falls back to ``map_async``.
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

from . import config, implementation
from .implementation import wgpu

enums = wgpu.enums

__all__ = ["MapRequest", "Mapper", "SLEEP_SECONDS", "SPIN_SECONDS", "wait_mode"]

#: Spin without sleeping for this long before sleeping between polls.
SPIN_SECONDS = 0.002
#: Sleep between polls after the first ``SPIN_SECONDS`` of a wait.
SLEEP_SECONDS = 50e-6


def wait_mode(software: bool) -> str:
    """'spin', 'block' or 'poller': ``$GPUTENSOR_WAIT`` when set to one of them, else 'block'
    for a software adapter and 'spin' for hardware. ValueError for another value."""
    mode = config.value("wait")
    if not mode:
        return "block" if software else "spin"
    return mode


class MapRequest:
    """A pending mapping of ``buffer`` (``Mapper.map``): ``sync_wait()`` completes it."""

    __slots__ = ("_mapper", "buffer", "mode", "offset", "size", "status", "message")

    def __init__(self, mapper: "Mapper", buffer: Any, mode: int, offset: int, size: int) -> None:
        self._mapper = mapper
        self.buffer = buffer
        self.mode = mode
        self.offset = offset
        self.size = size
        self.status: int | None = None  # the callback's WGPUMapAsyncStatus
        self.message = ""

    def sync_wait(self) -> None:
        """Block until the mapping is done (see the module docstring for how); RuntimeError when
        it failed (wgpu-py raises the same for its own mappings)."""
        self._mapper.wait(self)


class Mapper:
    """Maps buffers of one device with callbacks that fire on this module's polls."""

    def __init__(self, device: Any, api: Any, spin: bool, stats: dict[str, int] | None = None) -> None:
        self.spin = bool(spin)
        #: Counters (``maps``: mappings started, ``polls``: device polls made waiting for them).
        self.stats = stats if stats is not None else {}
        self.stats.setdefault("maps", 0)
        self.stats.setdefault("polls", 0)
        self._api = api
        self._lib = getattr(api, "libf", api.lib)
        #: ``wgpuDevicePoll`` without wgpu-py's error capture (a thread-local stack push and pop
        #: per call, about a microsecond of host time on each poll of a spinning wait): a poll
        #: reports nothing that the mapping's callback does not (a lost device fails the
        #: mapping), and an error it raises would only be logged.
        self._poll = api.lib.wgpuDevicePoll
        #: The calls whose errors need no capture: the mapped range (NULL when unavailable, checked
        #: in ``read``) and the unmap of a buffer ``wait`` mapped.
        self._get_range = api.lib.wgpuBufferGetMappedRange
        self._unmap = api.lib.wgpuBufferUnmap
        self._ffi = api.ffi
        self._device = device._internal
        self._null = api.ffi.NULL
        self._success = api.lib.WGPUMapAsyncStatus_Success
        self._callback_mode = api.lib.WGPUCallbackMode_AllowProcessEvents
        self._pending: dict[int, MapRequest] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        ffi = api.ffi

        @ffi.callback("void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)")
        def on_mapped(status: int, message: Any, userdata1: Any, userdata2: Any) -> None:
            key = int(ffi.cast("uintptr_t", userdata1))
            with self._lock:
                request = self._pending.pop(key, None)
            if request is None:  # pragma: no cover - not ours
                return
            if status != self._success:
                try:
                    request.message = api.from_c_string_view(message)
                except Exception:  # pragma: no cover - best effort
                    request.message = ""
            request.status = int(status)

        self._on_mapped = on_mapped  # kept alive as long as the mapper
        self._info: Any = None  # the WGPUBufferMapCallbackInfo of ``map`` (made by its first call)
        self._info_lock = threading.Lock()

    @classmethod
    def load(cls, device: Any, spin: bool, stats: dict[str, int] | None = None) -> "Mapper | None":
        """A mapper for the wgpu-py ``device`` (counting into ``stats``), or None when wgpu-py
        lacks the internals used."""
        api = implementation.native_api()
        if api is None or not all(hasattr(api.lib, name) for name in ("wgpuBufferGetMappedRange", "wgpuBufferUnmap")):
            return None
        return cls(device, api, spin, stats)

    def map(self, buffer: Any, mode: int, offset: int, size: int) -> MapRequest:
        """Start mapping ``size`` bytes of ``buffer`` at ``offset`` (``mode``: wgpu.MapMode.READ or
        WRITE). RuntimeError when the buffer is not unmapped."""
        if buffer._map_state != enums.BufferMapState.unmapped:
            raise RuntimeError(f"Can only map a buffer if its currently unmapped, not {buffer._map_state!r}")
        key = next(self._ids)
        request = MapRequest(self, buffer, int(mode), int(offset), int(size))
        with self._lock:
            self._pending[key] = request
        info = self._info
        if info is None:  # one struct, passed by value: only its userdata changes per call
            info = self._info = self._api.new_struct(
                "WGPUBufferMapCallbackInfo", mode=self._callback_mode, callback=self._on_mapped,
                userdata1=self._ffi.NULL)
        buffer._map_state = enums.BufferMapState.pending
        self.stats["maps"] += 1
        try:
            with self._info_lock:  # (not ``_lock``: a callback may fire inside the call)
                info.userdata1 = self._ffi.cast("void *", key)
                self._lib.wgpuBufferMapAsync(buffer._internal, int(mode), int(offset), int(size), info)
        except BaseException:
            with self._lock:
                self._pending.pop(key, None)
            buffer._map_state = enums.BufferMapState.unmapped
            raise
        return request

    def wait(self, request: MapRequest, idle: Any = None) -> None:
        """Poll until ``request``'s callback fired, then give its buffer the mapped state that
        wgpu-py's map handler sets. In spin mode, ``idle`` (a callable, or None) is called once
        when the first poll finds the mapping still pending: host work that the wait hides,
        and that is skipped when the device is already done. RuntimeError when the mapping
        failed."""
        if request.status is None:
            poll, device, null = self._poll, self._device, self._null
            polls = 0
            try:
                if self.spin:
                    poll(device, False, null)
                    polls += 1
                    if idle is not None and request.status is None:
                        idle()
                    spin_until = time.perf_counter() + SPIN_SECONDS
                    while request.status is None:
                        poll(device, False, null)
                        polls += 1
                        if request.status is None and time.perf_counter() > spin_until:
                            time.sleep(SLEEP_SECONDS)
                else:
                    poll = self._lib.wgpuDevicePoll  # (a blocking wait: its errors are raised)
                    while request.status is None:
                        poll(device, True, null)
                        polls += 1
            finally:
                self.stats["polls"] += polls
        buffer = request.buffer
        if request.status != self._success:
            buffer._map_state = enums.BufferMapState.unmapped
            raise RuntimeError(f"Could not map buffer ({request.status} : {request.message}).")
        if buffer._map_state == enums.BufferMapState.pending:
            buffer._map_state = enums.BufferMapState.mapped
            buffer._mapped_status = (request.offset, request.offset + request.size, request.mode)
            buffer._mapped_memoryviews = []

    def read(self, buffer: Any, size: int, skip: int, take: int, into: Any = None) -> bytes | None:
        """Bytes ``[skip, skip + take)`` of the first ``size`` bytes of ``buffer``, mapped for
        reading by ``wait`` from offset 0 (``size`` a multiple of 4): a ``bytes`` copy, or copied
        into the writable memoryview ``into`` (``take`` bytes; None is returned). One copy,
        straight from the mapped range (no wgpu-py memoryview bookkeeping)."""
        ptr = self._get_range(buffer._internal, 0, size)
        if ptr == self._null:
            raise RuntimeError("the mapped range of a staging buffer is not available")
        mapped = self._ffi.buffer(ptr, size)
        if into is None:
            return mapped[skip : skip + take]
        into[:take] = memoryview(mapped)[skip : skip + take]
        return None

    def unmap(self, buffer: Any) -> None:
        """Unmap ``buffer`` (mapped through ``wait``; no view of ``read`` outlives the copy),
        leaving wgpu-py's state as its own ``unmap`` does."""
        self._unmap(buffer._internal)
        buffer._map_state = enums.BufferMapState.unmapped
        buffer._mapped_status = (0, 0, 0)
