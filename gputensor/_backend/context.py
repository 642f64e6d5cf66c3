"""WgpuContext: the WebGPU device, its queue, a pipeline cache and batched command recording.

One of the modules that import ``wgpu`` (the others are ``webgpu.py`` and ``mapping.py``).

Work is recorded into one open command encoder (one compute pass while only dispatches are
recorded) and submitted when a result is read back, on ``synchronize()``/``flush()``, after
each chunk of a large host write (small writes go through an upload ring and a recorded copy,
without a submit), when the batch reaches ``MAX_BATCH`` commands, or when its commands bind
the current flush bound: ``FLUSH_BYTES`` after a wait (the device is idle: large work starts
on it at once while the host records more), doubled at each such submit up to
``FLUSH_BYTES_MAX`` (once the device is busy, fewer submits: each costs ~0.1 ms of host time
on an H200, more than recording a large operation). Dispatch
parameters travel in one uniform ring per batch, uploaded with a single ``write_buffer`` just
before the submit; binding 0 of every kernel is that ring with a *dynamic offset*, so a bind
group does not depend on the parameters.

Per-dispatch host cost is kept low by caching (every cache is guarded by the context lock):

* pipelines by ``(name, number of storage bindings, defines)``, looked up first by the defines'
  items in the caller's order (no sorting on a hit), then by their canonical sorted form;
* bind groups by ``(number of storage bindings, uniform window, (buffer uid, offset, size)...)``.
  A GPUBuffer's ``uid`` is never reused, so a stale entry can never be hit by another buffer;
  entries of a buffer are dropped when its Python object dies (a ``weakref.finalize`` queues its
  uid, purged at the next dispatch) or at once by ``release_buffer`` (the memory pool's way of
  destroying a block). The cache is bounded (``BIND_GROUP_CACHE_SIZE``, oldest entries first out).
* ``record``, the part of ``dispatch`` after its argument checks, is what launchers whose
  bindings and grids are valid by construction call (``ops_elementwise``); the compute-pass
  commands go straight to wgpu-native (``_PassCalls``: wgpu-py's per-call error capture costs
  about as much as the rest of recording a small op).

Readback (``readback*``, ``synchronize``) records its staging copies into the open encoder and
submits the whole batch once; the waits for the mappings happen outside the context lock, so
other threads keep recording while one waits. Staging buffers are pooled (``_Staging``) and
mapped by ``mapping.Mapper``, whose waits poll in the waiting thread (spinning on hardware
adapters) instead of blocking in the driver, which on an H200 wakes up ~10 ms late at random.

Large transfers move every byte once on the host, straight between the caller's memory and a
mapped staging buffer (``host_copy``, split between threads when large), in chunks of
``TRANSFER_CHUNK`` with at most ``TRANSFER_DEPTH`` in flight, so the device copy of one chunk
overlaps the host copy of another and a 1 GiB transfer needs no 1 GiB staging buffer. Uploads
use pooled MAP_WRITE buffers (``_UploadStaging``), each refilled only after the device copy
that read it; downloads use the pooled MAP_READ buffers.

Asynchronous operations are written once, as generators that yield wgpu promises; ``_run_sync``
drives them by waiting on each promise, ``_run_async`` by awaiting it. So ``new()`` is a facade
over the same steps as ``new_async()``, and ``readback_many`` over ``readback_many_async``.
"""

from __future__ import annotations

import collections
import os
import struct
import threading
import weakref
from collections.abc import Generator, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import wgpu

from . import device_state, kernels
from .mapping import Mapper, wait_mode
from .errors import BackendError, device_error, invalid_argument, out_of_memory, unsupported

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

#: Commands recorded before the open batch is submitted on its own.
MAX_BATCH = 256

#: Bytes bound by the commands of the open batch after which it is submitted at once, so that
#: the device starts on large work while the host records more (small work stays batched).
FLUSH_BYTES = 32 << 20

#: The flush bound doubles at each size-triggered submit up to this (reset after every wait).
FLUSH_BYTES_MAX = 2 << 30

#: Bytes of the uniform ring that carries the parameters of one batch's dispatches.
UNIFORM_RING_BYTES = 256 * 1024

#: Host writes up to this size are staged in the upload ring (see ``WgpuContext.write``).
STAGED_UPLOAD_MAX = 256 * 1024

#: Bytes of the upload ring (one batch's staged writes; a full ring submits the batch).
UPLOAD_RING_BYTES = 2 * 1024 * 1024

#: Large host transfers move in chunks of this many bytes (a multiple of 4) through pooled
#: staging buffers, so the device copy of one chunk overlaps the host copy of another and no
#: transfer allocates staging memory of its own size (tests make it small to cross chunk edges).
TRANSFER_CHUNK = 32 << 20

#: Staging buffers of ``TRANSFER_CHUNK`` bytes one transfer keeps in flight (and each direction
#: keeps pooled): a readback stages at most this many chunks ahead of its host copies.
TRANSFER_DEPTH = 3

#: Threads that share one large host copy (0: automatic, 1 on software adapters, whose device
#: copies run on the same CPU cores, else up to 4). ``$GPUTENSOR_COPY_THREADS`` sets it (a
#: value that is not a non-negative integer means automatic).
_COPY_THREADS_ENV = os.environ.get("GPUTENSOR_COPY_THREADS", "").strip()
HOST_COPY_THREADS = int(_COPY_THREADS_ENV) if _COPY_THREADS_ENV.isdigit() else 0

#: Host copies are split between threads only in slices of at least this many bytes.
_COPY_SLICE_MIN = 4 << 20

#: Bind groups kept by the cache (when it is full, the oldest go until three quarters remain).
BIND_GROUP_CACHE_SIZE = 4096

#: Sizes of the uniform window a bind group exposes at its dynamic offset (parameters of up to
#: 256 bytes, the common case, share one window size and so one bind group).
_UNIFORM_WINDOWS = (256, 1024, 4096, 16384, 65536)

_ADAPTER_TYPE_RANK = {"DiscreteGPU": 0, "IntegratedGPU": 1, "VirtualGPU": 2, "Unknown": 3, "CPU": 4}
_BACKEND_RANK = {"Vulkan": 0, "Metal": 0, "D3D12": 0, "OpenGL": 1, "OpenGLES": 1, "D3D11": 2}

_STORAGE_USAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
_STAGING_USAGE = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
_UPLOAD_USAGE = wgpu.BufferUsage.MAP_WRITE | wgpu.BufferUsage.COPY_SRC

Region = tuple[Any, int, int]  # (GPUBuffer, offset_bytes, size_bytes)
# A piece of a readback: (region index, buffer, staged start, staged length (a multiple of 4),
# bytes to skip in the staging buffer, bytes to take, where they go in the region).
_Piece = tuple[int, Any, int, int, int, int, int]


def _round_up(x: int, m: int) -> int:
    return (x + m - 1) // m * m


_WORD_STRUCTS: dict[int, struct.Struct] = {}


def _pack_words(words: Sequence[int]) -> bytes:
    """``words`` as little-endian u32s (negative ints as their two's-complement bits).

    Raises TypeError/ValueError/struct.error for values that are not integers."""
    n = len(words)
    packer = _WORD_STRUCTS.get(n)
    if packer is None:
        packer = _WORD_STRUCTS.setdefault(n, struct.Struct(f"<{n}I"))
    try:
        return packer.pack(*words)
    except struct.error:  # negative or wide ints, bools, floats: mask each word
        return packer.pack(*[int(w) & 0xFFFFFFFF for w in words])


def _transfer_chunk() -> int:
    """``TRANSFER_CHUNK`` as a positive multiple of 4."""
    return max(4, int(TRANSFER_CHUNK) // 4 * 4)


_copy_pool: ThreadPoolExecutor | None = None
_copy_pool_workers = 0
_copy_pool_lock = threading.Lock()


def _copy_workers(helpers: int) -> ThreadPoolExecutor:
    """The shared pool of host-copy threads, with at least ``helpers`` workers."""
    global _copy_pool, _copy_pool_workers
    with _copy_pool_lock:
        if _copy_pool is None or _copy_pool_workers < helpers:
            # the old pool is not shut down (another thread may be using it): its idle threads
            # end when it is garbage-collected
            _copy_pool = ThreadPoolExecutor(max_workers=helpers, thread_name_prefix="gputensor-copy")
            _copy_pool_workers = helpers
        return _copy_pool


def host_copy(dst: memoryview, src: memoryview, threads: int = 1) -> None:
    """Copy the bytes of ``src`` into ``dst`` (flat byte views of equal size; ``dst`` writable),
    split between up to ``threads`` threads (NumPy copies without the GIL) when it is large.

    Raises ValueError when the sizes differ."""
    n = dst.nbytes
    if src.nbytes != n:
        raise ValueError(f"host copy of {src.nbytes} bytes into {n}")
    if n == 0:
        return
    d = np.frombuffer(dst, np.uint8)
    s = np.frombuffer(src, np.uint8)
    parts = min(int(threads), n // _COPY_SLICE_MIN)
    if parts <= 1:
        np.copyto(d, s)
        return
    step = _round_up(-(-n // parts), 4096)
    pool = _copy_workers(parts - 1)
    futures = [pool.submit(np.copyto, d[at : at + step], s[at : at + step]) for at in range(step, n, step)]
    try:
        np.copyto(d[:step], s[:step])
    finally:
        for future in futures:  # every helper is done with the views before they can go away
            future.result()


def _uniform_window(size: int) -> int | None:
    """The smallest uniform window (``_UNIFORM_WINDOWS``) holding ``size`` bytes, or None."""
    for window in _UNIFORM_WINDOWS:
        if size <= window:
            return window
    return None


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


class _Staging:
    """A pool of MAP_READ staging buffers, binned by power-of-two size (readbacks)."""

    KEEP_LIMIT = 64 << 20

    def __init__(self, device: Any) -> None:
        self._device = device
        self._free: dict[int, list[Any]] = {}
        self._lock = threading.Lock()

    def take(self, size: int) -> Any:
        # small buffers are binned by power of two (and reused); large ones are made to measure
        cap = max(256, 1 << (size - 1).bit_length()) if size <= self.KEEP_LIMIT else _round_up(size, 4)
        with self._lock:
            bucket = self._free.get(cap)
            if bucket:
                return bucket.pop()
        try:
            return self._device.create_buffer(size=cap, usage=_STAGING_USAGE)
        except Exception as exc:  # wgpu's own error types (a lost device, out of memory)
            raise _wrap_wgpu_error(exc) from exc

    def give(self, buf: Any) -> None:
        if buf.size > self.KEEP_LIMIT:  # large staging buffers are not kept
            return
        with self._lock:
            bucket = self._free.setdefault(buf.size, [])
            if len(bucket) < 8:
                bucket.append(buf)

    def cached_bytes(self) -> int:
        """Bytes of the staging buffers kept for reuse."""
        with self._lock:
            return sum(size * len(bucket) for size, bucket in self._free.items())

    def clear(self) -> None:
        """Drop every kept staging buffer."""
        with self._lock:
            self._free.clear()


class _UploadStaging:
    """A pool of MAP_WRITE staging buffers for large host writes.

    A buffer comes back (``give``) right after the submit of the copy that reads it, and its
    next mapping is requested then: the mapping completes once the device has read the buffer,
    so a kept buffer is never refilled while pending work still uses it. At most
    ``TRANSFER_DEPTH`` are kept (the oldest others are destroyed, which WebGPU defers until
    their copies are done).
    """

    def __init__(self, device: Any, mapper: Mapper | None = None) -> None:
        self._device = device
        self._mapper = mapper
        self._free: collections.deque[tuple[Any, Any]] = collections.deque()  # (buffer, map promise)
        self._lock = threading.Lock()

    def take(self, size: int) -> Any:
        """A staging buffer of ``size`` bytes (a multiple of 4) mapped for writing: a new one
        while fewer than ``TRANSFER_DEPTH`` of that size are kept (so a transfer's first chunks
        never wait), else the oldest kept one once its mapping has completed (that is, once
        the device has done the copy that last read it).

        Raises BackendError when the mapping fails."""
        found = None
        with self._lock:
            same = [k for k, (buf, _) in enumerate(self._free) if buf.size == size]
            if len(same) >= max(1, TRANSFER_DEPTH):
                found = self._free[same[0]]
                del self._free[same[0]]
        if found is None:
            try:
                return self._device.create_buffer(size=size, usage=_UPLOAD_USAGE, mapped_at_creation=True)
            except Exception as exc:  # wgpu's own error types (a lost device, out of memory)
                raise _wrap_wgpu_error(exc) from exc
        buf, promise = found
        try:
            promise.sync_wait()
        except Exception as exc:  # wgpu's own error types
            raise _wrap_wgpu_error(exc) from None
        return buf

    def give(self, buf: Any) -> None:
        """Keep the unmapped ``buf``, whose copy was just submitted, for reuse."""
        if self._mapper is not None:
            promise = self._mapper.map(buf, wgpu.MapMode.WRITE, 0, buf.size)
        else:
            promise = buf.map_async(wgpu.MapMode.WRITE, 0, buf.size)
        with self._lock:
            self._free.append((buf, promise))
            dropped = [self._free.popleft()[0] for _ in range(len(self._free) - max(1, TRANSFER_DEPTH))]
        for old in dropped:
            old.destroy()

    def cached_bytes(self) -> int:
        """Bytes of the staging buffers kept for reuse."""
        with self._lock:
            return sum(buf.size for buf, _ in self._free)

    def clear(self) -> None:
        """Drop (destroy) every kept staging buffer."""
        with self._lock:
            dropped = [buf for buf, _ in self._free]
            self._free.clear()
        for buf in dropped:
            buf.destroy()


class _PassCalls:
    """wgpu-native's compute-pass entry points, called directly for the dispatches ``record``
    makes: wgpu-py's ``GPUComputePassEncoder`` methods wrap every call in Python-level error
    capture and ``set_bind_group`` allocates its offsets array each time, about 2 us of host
    time per dispatch -- as much as the rest of recording a small op. Errors of pass commands
    are reported when the pass ends or the encoder finishes, which still go through wgpu-py
    (``flush``). ``_PassCalls.load()`` is None when the installed wgpu-py lacks these internals;
    ``record`` then calls the public methods."""

    __slots__ = ("set_pipeline", "set_bind_group", "dispatch", "offsets")

    def __init__(self, lib: Any, ffi: Any) -> None:
        self.set_pipeline = lib.wgpuComputePassEncoderSetPipeline
        self.set_bind_group = lib.wgpuComputePassEncoderSetBindGroup
        self.dispatch = lib.wgpuComputePassEncoderDispatchWorkgroups
        self.offsets = ffi.new("uint32_t[1]")  # the dynamic offset (written under the lock)

    @classmethod
    def load(cls) -> "_PassCalls | None":
        try:
            from wgpu.backends.wgpu_native import _api

            return cls(_api.lib, _api.ffi)
        except (ImportError, AttributeError):  # pragma: no cover - another wgpu-py
            return None


class WgpuContext:
    """The WebGPU device, queue and adapter, a compiled-pipeline cache and the open command batch.

    Public attributes: ``device``, ``queue``, ``adapter``, ``adapter_info`` (a dict),
    ``features`` (frozenset of granted feature names) and ``limits`` (dict of granted limits).
    Create with ``WgpuContext.new()`` or ``await WgpuContext.new_async()``.
    """

    def __init__(self, adapter: Any, device: Any) -> None:
        self.adapter = adapter
        self.device = device
        self.queue = device.queue
        #: Why the device is lost (the first cause), None while it works (``device_state``).
        self.lost: str | None = None
        self.adapter_info = dict(adapter.info)
        self.features = frozenset(str(f) for f in device.features)
        self.limits = dict(device.limits)
        self.storage_offset_alignment = int(self.limits.get("min-storage-buffer-offset-alignment", 256))
        self.max_binding_size = int(self.limits["max-storage-buffer-binding-size"]) // 4 * 4
        self.max_buffer_size = int(self.limits["max-buffer-size"])
        self.max_workgroups_per_dim = int(self.limits["max-compute-workgroups-per-dimension"])
        self._pipelines: dict[tuple[Any, ...], Any] = {}
        # (name, n_storage, defines items in the caller's order or None, source) -> pipeline
        self._pipelines_fast: dict[tuple[Any, ...], Any] = {}
        self._layouts: dict[int, tuple[Any, Any]] = {}
        self._lock = threading.RLock()
        self._encoder: Any = None
        self._pass: Any = None
        self._pass_pipeline: Any = None  # the pipeline last set in the open pass
        self._recorded = 0
        self._pending_bytes = 0
        self._flush_bytes = FLUSH_BYTES  # the current flush bound (see the module docstring)
        self._keepalive: list[Any] = []
        self._staging = _Staging(device)
        #: Maps staging buffers and completes the mappings in the waiting thread (``mapping.py``:
        #: spinning on hardware adapters, never a blocking wait while the device works); None
        #: with ``GPUTENSOR_WAIT=poller`` or a wgpu-py without the internals it uses.
        mode = wait_mode(self.adapter_info.get("adapter_type") == "CPU")
        self._mapper = Mapper.load(device, spin=mode == "spin") if mode != "poller" else None
        self._upload_staging = _UploadStaging(device, self._mapper)
        self._fence_src = device.create_buffer(size=16, usage=_STORAGE_USAGE)
        # bind-group cache (see the module docstring)
        self._groups: dict[tuple[Any, ...], Any] = {}
        self._groups_by_buffer: dict[int, set[tuple[Any, ...]]] = {}
        self._dead_buffers: collections.deque[int] = collections.deque()
        self._poll = getattr(device, "_poll_wait", None)  # wait in this thread (no poller hop)
        self._nosync_map = True  # see _map_read
        #: Profiling hook (``gputensor._profile``): while not None, every recorded dispatch gets a
        #: compute pass of its own whose timestamp writes come from
        #: ``timestamp_sink.timestamp_writes(name, defines)`` (called under the lock).
        self.timestamp_sink: Any = None
        # Dispatch parameters of the open batch: staged in host memory, uploaded with one
        # write_buffer just before the batch is submitted (queue order keeps earlier batches'
        # reads of the ring ahead of the overwrite).
        self._uniform_align = max(16, int(self.limits.get("min-uniform-buffer-offset-alignment", 256)))
        self._max_uniform = int(self.limits.get("max-uniform-buffer-binding-size", 65536))
        self._ring = device.create_buffer(
            size=UNIFORM_RING_BYTES, usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
        )
        self._ring_data = bytearray(UNIFORM_RING_BYTES)
        self._ring_used = 0
        self._upload_ring = device.create_buffer(
            size=UPLOAD_RING_BYTES, usage=wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        )
        self._upload_used = 0
        self._param_windows: dict[int, tuple[int, int]] = {}  # see param_window
        self._pass_calls = _PassCalls.load()
        self.stats = {"submits": 0, "dispatches": 0, "pipelines_compiled": 0,
                      "bind_groups_created": 0, "clears": 0}

    # ---- creation -----------------------------------------------------------------------
    @staticmethod
    def _new_steps(hint: str | None) -> Generator[Any, Any, "WgpuContext"]:
        adapters = yield wgpu.gpu.enumerate_adapters_async()
        ranked = rank_adapters(adapters, hint)  # the next one when a device cannot be created
        return (yield from device_state.open_first(ranked, hint, WgpuContext._open_steps, adapter_description))

    @staticmethod
    def _open_steps(adapter: Any) -> Generator[Any, Any, "WgpuContext"]:
        features = [f for f in WANTED_FEATURES if f in adapter.features]
        limits = {k: adapter.limits[k] for k in WANTED_LIMITS if k in adapter.limits}
        device = yield adapter.request_device_async(
            label="gputensor", required_features=features, required_limits=limits
        )
        return WgpuContext(adapter, device)

    @classmethod
    async def new_async(cls, adapter: str | None = None) -> "WgpuContext":
        """Select an adapter (``adapter`` or ``$GPUTENSOR_ADAPTER`` narrows the choice) and create
        the device with the adapter's maximum buffer/binding limits and the useful features.

        Raises BackendError (unsupported) when no adapter matches, (device error) when the
        device cannot be created (naming the adapter; without ``adapter``/``$GPUTENSOR_ADAPTER``
        each adapter is tried in turn, see ``device_state.open_first``).
        """
        return await _run_async(cls._new_steps(adapter or os.environ.get("GPUTENSOR_ADAPTER")))

    @classmethod
    def new(cls, adapter: str | None = None) -> "WgpuContext":
        """Synchronous form of ``new_async`` (same steps, waiting on each promise)."""
        return _run_sync(cls._new_steps(adapter or os.environ.get("GPUTENSOR_ADAPTER")))

    def __repr__(self) -> str:
        return (
            f"WgpuContext(adapter={adapter_description(self.adapter_info)!r}, "
            f"features={sorted(self.features)}, "
            f"max_binding={self.max_binding_size >> 20} MiB, max_buffer={self.max_buffer_size >> 20} MiB, "
            f"workgroup_storage={self.limits.get('max-compute-workgroup-storage-size')} B)"
        )

    @property
    def is_software(self) -> bool:
        """True for CPU (software) adapters such as lavapipe."""
        return self.adapter_info.get("adapter_type") == "CPU"

    # ---- buffers --------------------------------------------------------------------------
    def create_storage(self, size_bytes: int) -> Any:
        """A new storage buffer of at least ``size_bytes`` (rounded up to 4), zero-filled.

        Raises BackendError (out of memory / invalid argument) when it cannot be made.
        """
        size = max(4, _round_up(int(size_bytes), 4))
        if size > self.max_buffer_size:
            raise out_of_memory(
                f"{size_bytes} bytes exceeds the adapter's max buffer size {self.max_buffer_size}"
            )
        try:
            return self.device.create_buffer(size=size, usage=_STORAGE_USAGE)
        except Exception as exc:  # wgpu raises its own error types
            raise device_state.classify(self, out_of_memory(f"could not allocate {size} bytes: {exc}")) from exc

    def upload(self, data: Any) -> Any:
        """A new storage buffer holding the bytes of ``data`` (any buffer-protocol object)."""
        mv = readable_bytes(data)
        buf = self.create_storage(mv.nbytes)
        if mv.nbytes:
            self.write(buf, 0, mv)
        return buf

    def write(self, buf: Any, offset: int, data: Any) -> None:
        """Copy host bytes into ``buf`` at ``offset``: recorded work before the call does not see
        them, work recorded after it does.

        Up to ``STAGED_UPLOAD_MAX`` bytes travel through an upload ring and a recorded copy (no
        submit); larger writes go through ``_write_staged`` (pooled staging buffers, chunk by
        chunk). Unaligned edges (offset or size not a multiple of 4) are merged on the device by
        a small kernel, so bytes outside the range are never changed.

        Raises BackendError (invalid argument) for a non-bytes-like ``data`` or a range outside
        ``buf``; (device error / out of memory) when the device fails the copy.
        """
        mv = readable_bytes(data)
        n = mv.nbytes
        if n == 0:
            return
        if offset < 0 or offset + n > buf.size:
            raise invalid_argument(f"write of {n} bytes at {offset} is outside a {buf.size}-byte buffer")
        head = min((-offset) % 4, n)
        body_start = offset + head
        body_len = (n - head) // 4 * 4
        body = mv[head : head + body_len]
        if body_len > STAGED_UPLOAD_MAX:
            self._write_staged(buf, body_start, body)
        with self._lock:
            if 0 < body_len <= STAGED_UPLOAD_MAX:
                # Small: into the upload ring (nothing recorded reads the region this batch
                # uses; earlier batches that did were submitted before this write_buffer), then a
                # copy recorded in order with the other work: no submit needed.
                if self._upload_used + body_len > UPLOAD_RING_BYTES:
                    self.flush()
                at = self._upload_used
                try:
                    self.queue.write_buffer(self._upload_ring, at, body)
                except Exception as exc:  # wgpu's own error types (a lost device)
                    raise device_state.classify(self, device_error(f"write failed: {exc}")) from exc
                self._upload_used = at + body_len
                self._record_copy(self._upload_ring, at, buf, body_start, body_len)
            for start, chunk in ((offset, mv[:head]), (body_start + body_len, mv[head + body_len :])):
                if len(chunk):
                    self._patch_bytes(buf, start, bytes(chunk))

    def _write_staged(self, buf: Any, start: int, body: memoryview) -> None:
        """Write ``body`` (a multiple of 4 bytes) into ``buf`` at ``start`` (a multiple of 4), in
        chunks of ``TRANSFER_CHUNK``: each is copied once on the host into a pooled staging
        buffer mapped for writing, then a device copy into ``buf`` is recorded after all work
        recorded so far and submitted at once, so the device copies one chunk while the host
        fills the next. The context lock is held only to record and submit; work other threads
        record meanwhile may fall between two chunks (order such work yourself, as any
        concurrent use of the same memory). Raises BackendError when the device fails."""
        chunk = _transfer_chunk()
        threads = self._copy_threads()
        for pos in range(0, body.nbytes, chunk):
            piece = body[pos : pos + chunk]
            try:
                staging = self._upload_staging.take(chunk)
            except BackendError as exc:
                raise device_state.classify(self, exc) from None
            _fill_mapped(staging, piece, threads)
            staging.unmap()
            with self._lock:
                self._record_copy(staging, 0, buf, start + pos, piece.nbytes)
                self.flush()
            self._upload_staging.give(staging)

    def _copy_threads(self) -> int:
        """Threads for one large host copy (``HOST_COPY_THREADS``; 0 chooses)."""
        if HOST_COPY_THREADS > 0:
            return int(HOST_COPY_THREADS)
        return 1 if self.is_software else min(4, os.cpu_count() or 1)

    def clear_staging(self) -> None:
        """Drop the pooled staging buffers of both directions (``MemoryPool.free_all_blocks``)."""
        self._staging.clear()
        self._upload_staging.clear()

    def _patch_bytes(self, buf: Any, start: int, chunk: bytes) -> None:
        """Write fewer than 4 bytes (within one or two words) without touching their neighbours."""
        pos = 0
        while pos < len(chunk):
            addr = start + pos
            word = addr // 4
            lane = addr % 4
            take = min(4 - lane, len(chunk) - pos)
            value = int.from_bytes(chunk[pos : pos + take], "little") << (8 * lane)
            mask = ((1 << (8 * take)) - 1) << (8 * lane)
            align = self.storage_offset_alignment
            base_word = (word * 4) // align * align // 4
            self.dispatch(
                "patch_bytes",
                [word - base_word, mask, value],
                [(buf, base_word * 4, (word - base_word + 1) * 4)],
                (1, 1, 1),
            )
            pos += take

    def copy_buffer(self, src: Any, src_offset: int, dst: Any, dst_offset: int, size: int) -> None:
        """Record a device copy of ``size`` bytes (offsets and size multiples of 4).

        A copy within one buffer (which WebGPU forbids) goes through a temporary buffer, so
        overlapping ranges copy as ``memmove`` does. Raises BackendError (invalid argument) for
        misaligned or out-of-range arguments.
        """
        if size == 0:
            return
        if (src_offset | dst_offset | size) % 4 or min(src_offset, dst_offset, size) < 0:
            raise invalid_argument(
                f"copy of {size} bytes from {src_offset} to {dst_offset}: offsets and size must be "
                "non-negative multiples of 4"
            )
        if src_offset + size > src.size or dst_offset + size > dst.size:
            raise invalid_argument(f"copy of {size} bytes is outside its buffers")
        with self._lock:
            if src is dst:
                tmp = self.create_storage(size)
                self._record_copy(src, src_offset, tmp, 0, size)
                self._record_copy(tmp, 0, dst, dst_offset, size)
            else:
                self._record_copy(src, src_offset, dst, dst_offset, size)

    def _record_copy(self, src: Any, src_offset: int, dst: Any, dst_offset: int, size: int) -> None:
        encoder = self._end_pass()
        encoder.copy_buffer_to_buffer(src, src_offset, dst, dst_offset, size)
        self._keepalive.append(src)
        self._keepalive.append(dst)
        self._pending_bytes += 2 * size
        self._count_command()

    def clear(self, buf: Any, offset: int, size: int) -> None:
        """Record zero-filling ``size`` bytes of ``buf`` at ``offset`` (multiples of 4), ordered
        after all work recorded before. Raises BackendError (invalid argument) for a misaligned
        or out-of-range region."""
        if size == 0:
            return
        if (offset | size) % 4 or offset < 0 or size < 0 or offset + size > buf.size:
            raise invalid_argument(
                f"clear of {size} bytes at {offset} of a {buf.size}-byte buffer: offset and size "
                "must be in range and multiples of 4"
            )
        with self._lock:
            encoder = self._end_pass()
            encoder.clear_buffer(buf, offset, size)
            self._keepalive.append(buf)
            self.stats["clears"] += 1
            self._pending_bytes += size
            self._count_command()

    def release_buffer(self, buf: Any) -> None:
        """Destroy ``buf`` for good (the memory pool's release): recorded work is submitted first
        (so nothing unsubmitted refers to it), its cached bind groups are dropped, and already
        submitted work that uses it finishes before the memory is reclaimed (WebGPU's rule)."""
        with self._lock:
            if self._encoder is not None:
                self.flush()
            self._forget_buffer(buf.uid)
        buf.destroy()

    def _end_pass(self) -> Any:
        """The open encoder with no compute pass open (for copies and clears; lock held)."""
        encoder = self._open_encoder()
        if self._pass is not None:
            self._pass.end()
            self._pass = None
            self._pass_pipeline = None
        return encoder

    # ---- pipelines and dispatch -------------------------------------------------------------
    def _layout(self, n_storage: int) -> tuple[Any, Any]:
        entry = self._layouts.get(n_storage)
        if entry is None:
            vis = wgpu.ShaderStage.COMPUTE
            entries = [{"binding": 0, "visibility": vis,
                        "buffer": {"type": wgpu.BufferBindingType.uniform, "has_dynamic_offset": True}}]
            entries += [
                {"binding": i, "visibility": vis, "buffer": {"type": wgpu.BufferBindingType.storage}}
                for i in range(1, n_storage + 1)
            ]
            bgl = self.device.create_bind_group_layout(entries=entries)
            entry = (bgl, self.device.create_pipeline_layout(bind_group_layouts=[bgl]))
            self._layouts[n_storage] = entry
        return entry

    def pipeline(self, name: str, n_storage: int, defines: Mapping[str, object] | None = None,
                 *, source: str | None = None) -> Any:
        """The compiled compute pipeline for kernel ``name`` specialised by ``defines`` (cached).

        Every kernel has entry point ``main``, binding 0 a uniform and bindings 1..n_storage
        read-write storage buffers. With ``source`` (complete WGSL text, e.g. a generated or user
        kernel) that text is compiled instead of the template ``name`` (``name`` is the label;
        ``defines`` must then be None) and cached by it. Raises BackendError (device error) with
        the compiler's message when the source does not compile, (invalid argument) for a
        template/placeholder mismatch.
        """
        try:
            fast = (name, n_storage, None if defines is None else tuple(defines.items()), source)
            pipe = self._pipelines_fast.get(fast)
        except TypeError:  # unhashable define values: the canonical key below handles them
            fast, pipe = None, None
        if pipe is not None:
            return pipe
        with self._lock:
            pipe = self._pipeline_slow(name, n_storage, defines, source)
            if fast is not None:
                self._pipelines_fast[fast] = pipe
        return pipe

    def _pipeline_slow(self, name: str, n_storage: int, defines: Mapping[str, object] | None,
                       source: str | None) -> Any:
        if source is not None:
            if defines:
                raise invalid_argument(f"kernel {name!r}: give a template's defines or a source, not both")
            key: tuple[Any, ...] = ("source", source, n_storage)
        else:
            key = (name, tuple(sorted((k, str(v)) for k, v in (defines or {}).items())), n_storage)
        pipe = self._pipelines.get(key)
        if pipe is None:
            if source is None:
                try:
                    source = kernels.render(name, defines)
                except (KeyError, ValueError) as exc:  # placeholder mismatch, a bad //#unroll
                    raise invalid_argument(str(exc.args[0]) if exc.args else str(exc)) from None
            _, layout = self._layout(n_storage)
            try:
                module = self.device.create_shader_module(label=name, code=source)
                pipe = self.device.create_compute_pipeline(
                    label=name, layout=layout, compute={"module": module, "entry_point": "main"}
                )
            except Exception as exc:
                raise device_state.classify(self, device_error(f"kernel {name!r} failed to compile: {exc}")) from exc
            self._pipelines[key] = pipe
            self.stats["pipelines_compiled"] += 1
        return pipe

    def fold_grid(self, groups: int) -> tuple[int, int, int]:
        """Spread ``groups`` workgroups over x and y so that no dimension exceeds the limit.

        Kernels recover the linear id as ``wid.x + wid.y * num_workgroups.x`` and must ignore
        ids past their work (the fold may launch up to one extra row of groups).
        """
        limit = self.max_workgroups_per_dim
        groups = max(1, int(groups))
        if groups <= limit:
            return (groups, 1, 1)
        y = -(-groups // limit)
        x = -(-groups // y)
        if y > limit:
            raise invalid_argument(f"grid of {groups} workgroups is too large for this adapter")
        return (x, y, 1)

    def dispatch(
        self,
        name: str,
        params: Sequence[int] | bytes,
        buffers: Sequence[Region],
        workgroups: Sequence[int],
        defines: Mapping[str, object] | None = None,
        *,
        source: str | None = None,
    ) -> None:
        """Record kernel ``name``: binding 0 = a uniform holding ``params`` (u32 words or raw
        bytes), bindings 1.. = ``buffers`` as ``(buffer, offset_bytes, size_bytes)``. With
        ``source`` the WGSL text is compiled instead of the template (see ``pipeline``).

        Offsets must be multiples of the adapter's storage offset alignment and sizes multiples
        of 4 and at most the max binding size; BackendError (invalid argument) otherwise.
        """
        if isinstance(params, (bytes, bytearray, memoryview)):
            raw = bytes(params)
        else:
            try:
                raw = _pack_words(params)
            except (TypeError, ValueError, struct.error) as exc:
                raise invalid_argument(f"kernel {name}: params must be integers (u32 words): {exc}") from None
        self.param_window(name, len(raw))
        align = self.storage_offset_alignment
        max_binding = self.max_binding_size
        for region in buffers:
            buf, offset, nbytes = region
            if offset % align or nbytes % 4 or nbytes <= 0 or offset < 0 or offset + nbytes > buf.size:
                raise invalid_argument(
                    f"kernel {name}: binding (offset {offset}, size {nbytes}) of a {buf.size}-byte "
                    f"buffer must be in range, offset a multiple of {align}, size a positive multiple of 4"
                )
            if nbytes > max_binding:
                raise invalid_argument(f"kernel {name}: binding of {nbytes} bytes exceeds the adapter limit")
        try:
            x, y, z = workgroups
            x, y, z = int(x), int(y), int(z)
        except (TypeError, ValueError):
            raise invalid_argument(f"kernel {name}: workgroups must be (x, y, z), not {workgroups!r}") from None
        limit = self.max_workgroups_per_dim
        if min(x, y, z) < 0 or max(x, y, z) > limit:
            raise invalid_argument(
                f"kernel {name}: workgroups {(x, y, z)} must be in [0, {limit}] per dimension (see fold_grid)"
            )
        if x == 0 or y == 0 or z == 0:
            return
        pipe = self.pipeline(name, len(buffers), defines, source=source)
        self.record(name, pipe, defines, raw, buffers, x, y, z)

    def param_window(self, name: str, nbytes: int) -> tuple[int, int]:
        """(uniform window, ring slot) in bytes for ``nbytes`` of dispatch parameters: the window
        a bind group exposes at the dynamic offset and the ring space one dispatch takes.
        BackendError (invalid argument) when the parameters do not fit the largest window."""
        entry = self._param_windows.get(nbytes)
        if entry is None:
            size = (max(nbytes, 16) + 15) & ~15
            window = _uniform_window(size)
            if window is None or window > self._max_uniform or window > UNIFORM_RING_BYTES:
                raise invalid_argument(f"kernel {name}: {nbytes} bytes of parameters is too many")
            slot = (size + self._uniform_align - 1) // self._uniform_align * self._uniform_align
            entry = self._param_windows[nbytes] = (window, slot)
        return entry

    def record(self, name: str, pipe: Any, defines: Mapping[str, object] | None, raw: bytes,
               buffers: Sequence[Region], x: int, y: int, z: int) -> None:
        """Record the compiled pipeline ``pipe`` (``pipeline(name, len(buffers), defines)``) over
        ``(x, y, z)`` workgroups with the parameter bytes ``raw`` and the storage ``buffers``.

        The hot path under ``dispatch``, for launchers whose arguments are valid by construction
        (``ops_elementwise``: windows from ``WebGpuBackend.bindings``, a grid from ``fold_grid``):
        it does not repeat ``dispatch``'s checks of the regions and the grid (every count at
        least 1 and within the limit). BackendError (invalid argument) for parameters larger than
        the largest uniform window, (device error) when the buffers cannot be bound.
        """
        size = len(raw)
        entry = self._param_windows.get(size)
        window, slot = entry if entry is not None else self.param_window(name, size)
        # the cached bind group of the buffers (the ring at a dynamic offset first), keyed by
        # (count, window, then per buffer: uid, offset, size); ``_uid`` is what ``uid`` returns
        ids = [len(buffers), window]
        pending = 0
        for buf, start, nbytes in buffers:
            ids += (buf._uid, start, nbytes)
            pending += nbytes
        key: tuple[Any, ...] = tuple(ids)
        lock = self._lock
        lock.acquire()  # (with less overhead than ``with``)
        try:
            if self._dead_buffers:
                self._purge_dead()
            group = self._groups.get(key)
            if group is None:
                group = self._new_bind_group(name, key, window, buffers)
            offset = self._ring_used
            if offset + (slot if slot > window else window) > UNIFORM_RING_BYTES:
                self.flush()
                offset = 0
            ring = self._ring_view
            if ring is None:
                ring = self._ring_view = memoryview(self._ring_data)
            ring[offset : offset + size] = raw
            self._ring_used = offset + slot
            if self.timestamp_sink is not None:  # profiling: a pass of its own between two timestamps
                writes = self.timestamp_sink.timestamp_writes(name, defines)
                timed = self._end_pass().begin_compute_pass(timestamp_writes=writes)
                timed.set_pipeline(pipe)
                timed.set_bind_group(0, group, [offset])
                timed.dispatch_workgroups(x, y, z)
                timed.end()
            else:
                compute_pass = self._pass
                if compute_pass is None:
                    compute_pass = self._pass = self._open_encoder().begin_compute_pass()
                    self._pass_pipeline = None
                calls = self._pass_calls
                if calls is not None:
                    handle = compute_pass._internal
                    if self._pass_pipeline is not pipe:
                        calls.set_pipeline(handle, pipe._internal)
                        self._pass_pipeline = pipe
                    offsets = calls.offsets
                    offsets[0] = offset
                    calls.set_bind_group(handle, 0, group._internal, 1, offsets)
                    calls.dispatch(handle, x, y, z)
                else:
                    if self._pass_pipeline is not pipe:
                        compute_pass.set_pipeline(pipe)
                        self._pass_pipeline = pipe
                    compute_pass.set_bind_group(0, group, [offset])
                    compute_pass.dispatch_workgroups(x, y, z)
            self.stats["dispatches"] += 1
            self._pending_bytes += pending
            # (_count_command)
            self._recorded += 1
            if self._pending_bytes >= self._flush_bytes or self._recorded >= MAX_BATCH:
                self._count_command_flush()
        finally:
            lock.release()

    #: A memoryview of ``_ring_data`` (made by the first ``record``): its slice assignment is
    #: cheaper than the bytearray's.
    _ring_view: memoryview | None = None

    def _new_bind_group(self, name: str, key: tuple[Any, ...], window: int, buffers: Sequence[Region]) -> Any:
        """Create and cache (under ``key``: see ``record``) the bind group of ``buffers``, the
        ring's ``window`` at a dynamic offset first (lock held)."""
        n_storage = len(buffers)
        bgl, _ = self._layout(n_storage)
        entries = [{"binding": 0, "resource": {"buffer": self._ring, "offset": 0, "size": window}}]
        entries += [
            {"binding": i + 1, "resource": {"buffer": b, "offset": o, "size": s}}
            for i, (b, o, s) in enumerate(buffers)
        ]
        try:
            group = self.device.create_bind_group(layout=bgl, entries=entries)
        except Exception as exc:
            raise device_state.classify(self, device_error(f"kernel {name}: cannot bind its buffers: {exc}")) from exc
        self.stats["bind_groups_created"] += 1
        if len(self._groups) >= BIND_GROUP_CACHE_SIZE:  # down to three quarters, oldest first
            self._evict(len(self._groups) - BIND_GROUP_CACHE_SIZE * 3 // 4)
        self._groups[key] = group
        for buf, _, _ in buffers:
            uid = buf.uid
            keys = self._groups_by_buffer.get(uid)
            if keys is None:
                keys = self._groups_by_buffer[uid] = set()
                weakref.finalize(buf, self._dead_buffers.append, uid)
            keys.add(key)
        return group

    def _evict(self, count: int) -> None:
        """Drop the ``count`` oldest cached bind groups (lock held)."""
        for key in list(self._groups)[:count]:
            self._keepalive.append(self._groups.pop(key))  # alive until the batch is submitted
            for uid in key[2::3]:
                keys = self._groups_by_buffer.get(uid)
                if keys is not None:
                    keys.discard(key)

    def _forget_buffer(self, uid: int) -> None:
        """Drop the cached bind groups that bind the buffer ``uid`` (lock held)."""
        keys = self._groups_by_buffer.pop(uid, None)
        if not keys:
            return
        for key in keys:
            group = self._groups.pop(key, None)
            if group is not None:
                self._keepalive.append(group)
                for other in key[2::3]:
                    if other != uid:
                        others = self._groups_by_buffer.get(other)
                        if others is not None:
                            others.discard(key)

    def _purge_dead(self) -> None:
        """Forget the buffers whose Python objects died (queued by their finalizers; lock held)."""
        while self._dead_buffers:
            try:
                uid = self._dead_buffers.popleft()
            except IndexError:  # pragma: no cover - drained concurrently
                break
            self._forget_buffer(uid)

    def bind_group_cache_size(self) -> int:
        """Number of cached bind groups (for tests and diagnostics)."""
        with self._lock:
            if self._dead_buffers:
                self._purge_dead()
            return len(self._groups)

    def _open_encoder(self) -> Any:
        if self._encoder is None:
            self._encoder = self.device.create_command_encoder()
        return self._encoder

    def _count_command(self) -> None:
        self._recorded += 1
        if self._pending_bytes >= self._flush_bytes or self._recorded >= MAX_BATCH:
            self._count_command_flush()

    def _count_command_flush(self) -> None:
        """The flush ``_count_command`` makes once the batch is full (lock held)."""
        if self._pending_bytes >= self._flush_bytes:
            self.flush()
            self._flush_bytes = min(2 * self._flush_bytes, FLUSH_BYTES_MAX)
        elif self._recorded >= MAX_BATCH:
            self.flush()

    def flush(self) -> None:
        """Submit all recorded work (does not wait for it).

        Raises BackendError (device error) when the device rejects the batch; the batch is
        dropped and the context stays usable.
        """
        with self._lock:
            if self._encoder is None:
                return
            encoder, compute_pass = self._encoder, self._pass
            ring_used = self._ring_used
            # Reset first, so that a failure below never leaves a half-finished encoder behind.
            self._encoder = None
            self._pass = None
            self._pass_pipeline = None
            self._recorded = 0
            self._pending_bytes = 0
            self._ring_used = 0
            self._upload_used = 0
            keepalive, self._keepalive = self._keepalive, []
            try:
                if compute_pass is not None:
                    compute_pass.end()
                command_buffer = encoder.finish()
                if ring_used:
                    self.queue.write_buffer(self._ring, 0, self._ring_data, 0, ring_used)
                self.queue.submit([command_buffer])
            except Exception as exc:
                raise device_state.classify(self, device_error(f"submit failed: {exc}")) from exc
            finally:
                del keepalive
            self.stats["submits"] += 1

    # ---- readback ------------------------------------------------------------------------------
    def _readback_steps(
        self, regions: Sequence[Region], into: Sequence[memoryview] | None = None, *, awaitable: bool = False
    ) -> Generator[Any, Any, list[Any]]:
        """Read ``regions`` after all recorded work; yield the map promises; return the bytes of
        each region in order (or copy each into ``into[k]`` when given: nothing is returned).
        The promises are the mapper's requests (``sync_wait`` only), or wgpu-py's awaitable
        promises with ``awaitable`` (for ``_run_async``) or without a mapper.

        Regions are cut into pieces of at most ``TRANSFER_CHUNK`` bytes, each staged by a device
        copy into a pooled staging buffer and copied once on the host from the mapped memory.
        Pieces are staged in groups (the copies join the open batch, submitted once per group)
        while at most ``TRANSFER_DEPTH`` chunks' worth is in flight, so small reads take one
        submit and one wait, and a large read stages the next pieces while the host copies
        earlier ones. The lock is held only to record and submit; the waits happen outside it.
        Raises BackendError (invalid argument) for a bad region before anything is staged.
        """
        checked = []
        for region in regions:
            try:
                buf, offset, size = region
                offset, size = int(offset), int(size)
            except (TypeError, ValueError):
                raise invalid_argument(f"a readback region is (buffer, offset, size), not {region!r}") from None
            if offset < 0 or size < 0 or offset + size > buf.size:
                raise invalid_argument(
                    f"readback of {size} bytes at {offset} is outside a {buf.size}-byte buffer"
                )
            checked.append((buf, offset, size))
        chunk = _transfer_chunk()
        threads = self._copy_threads()
        out: list[Any] = [None if into is not None else b""] * len(checked)
        sinks: list[memoryview | None] = []  # where each region's bytes go (None: out[k] = bytes)
        pieces: list[_Piece] = []
        for k, (buf, offset, size) in enumerate(checked):
            end = offset + size
            first, stop = offset // 4 * 4, _round_up(end, 4)
            sink = None
            if into is not None:
                sink = into[k]
            elif stop - first > chunk:  # assembled from several pieces
                out[k] = bytearray(size)
                sink = memoryview(out[k])
            sinks.append(sink)
            if size == 0:
                continue
            for start in range(first, stop, chunk):
                length = min(chunk, stop - start)
                lo, hi = max(start, offset), min(start + length, end)
                pieces.append((k, buf, start, length, lo - start, hi - lo, lo - offset))
        budget = chunk * max(1, TRANSFER_DEPTH)
        in_flight: collections.deque[tuple[_Piece, Any, Any]] = collections.deque()  # piece, staging, promise
        staged_bytes = 0
        next_piece = 0
        while in_flight or next_piece < len(pieces):
            group_end = next_piece
            while group_end < len(pieces) and (
                staged_bytes == 0 or staged_bytes + pieces[group_end][3] <= budget
            ):
                staged_bytes += pieces[group_end][3]
                group_end += 1
            if group_end > next_piece:
                group = pieces[next_piece:group_end]
                next_piece = group_end
                for piece, staging in zip(group, self._stage(group)):
                    in_flight.append((piece, staging, self._map_read(staging, piece[3], awaitable)))
            piece, staging, promise = in_flight.popleft()
            yield promise
            k, _, _, length, skip, take, at = piece
            mapped = staging.read_mapped(0, length, copy=False)
            sink = sinks[k]
            if sink is None:
                out[k] = bytes(mapped[skip : skip + take])
            else:
                host_copy(sink[at : at + take], mapped[skip : skip + take], threads)
            del mapped
            staging.unmap()
            self._staging.give(staging)
            staged_bytes -= length
        if into is None:
            out = [bytes(v) if isinstance(v, bytearray) else v for v in out]
        return out

    def _stage(self, pieces: Sequence[_Piece]) -> list[Any]:
        """Record the device copies of ``pieces`` into staging buffers after all recorded work
        and submit them; the staging buffers, in order. Raises BackendError (device error) when
        the submit fails."""
        stagings = []
        with self._lock:
            for _, buf, start, length, _, _, _ in pieces:
                try:
                    staging = self._staging.take(length)
                except BackendError as exc:
                    raise device_state.classify(self, exc) from None
                stagings.append(staging)
                self._end_pass().copy_buffer_to_buffer(buf, start, staging, 0, length)
                self._keepalive.append(buf)
            try:
                self.flush()
            except BackendError as exc:
                raise device_state.classify(self, device_error(f"readback submit failed: {exc.message}")) from None
        return stagings

    def _map_read(self, staging: Any, size: int, awaitable: bool = False) -> Any:
        """Start mapping ``staging`` for reading: through the mapper (see ``mapping.py``) unless
        ``awaitable`` or there is none. wgpu-py submits an empty command buffer before every read
        mapping (a workaround for data written through a *mapping*, wgpu-native issue 305);
        staging buffers are only written by copies that were just submitted, so that extra
        submit is skipped (wgpu-py's "READ_NOSYNC" mode) where wgpu-py offers it (the mapper
        never makes it)."""
        if self._mapper is not None and not awaitable:
            return self._mapper.map(staging, wgpu.MapMode.READ, 0, size)
        if self._nosync_map:
            try:
                return staging.map_async("READ_NOSYNC", 0, size)
            except (TypeError, ValueError, KeyError, AttributeError):
                self._nosync_map = False  # an older/newer wgpu-py without the mode
        return staging.map_async(wgpu.MapMode.READ, 0, size)

    def _wait(self) -> None:
        """Block this thread until the submitted work is done (then map callbacks have fired),
        without holding any lock; cheaper than waiting for wgpu-py's poll thread to wake us.
        With a mapper, its requests' ``sync_wait`` does the waiting instead."""
        if self._mapper is None and self._poll is not None:
            self._poll()
        self._flush_bytes = FLUSH_BYTES  # the device has run out of work: start it early again

    def readback_into(self, buf: Any, offset_bytes: int, dst: Any) -> None:
        """Fill the writable bytes-like ``dst`` (all of its bytes) from ``buf`` at ``offset_bytes``,
        after all recorded work has run; one host copy from the mapped staging memory (chunk by
        chunk when large).

        Raises BackendError (invalid argument) for a region outside ``buf`` or an unsuitable ``dst``.
        """
        view = writable_bytes(dst)
        _run_sync(self._readback_steps([(buf, offset_bytes, view.nbytes)], into=[view]), self._wait)

    def readback_many_into(self, regions: Sequence[Region], dsts: Sequence[Any]) -> None:
        """Fill each writable bytes-like ``dsts[k]`` from ``regions[k]`` = ``(buffer, offset,
        size)`` (size must equal the destination's byte count): one submit and one wait while
        the total fits ``TRANSFER_DEPTH`` chunks, else pipelined chunk by chunk.

        Raises BackendError (invalid argument) for mismatched lengths or sizes, regions outside
        their buffers or unsuitable destinations.
        """
        regions = list(regions)
        views = [writable_bytes(d) for d in dsts]
        if len(views) != len(regions):
            raise invalid_argument(f"{len(regions)} regions for {len(views)} destinations")
        for (_, _, size), view in zip(regions, views):
            if int(size) != view.nbytes:
                raise invalid_argument(f"a region of {size} bytes for a destination of {view.nbytes} bytes")
        _run_sync(self._readback_steps(regions, into=views), self._wait)

    def readback(self, buf: Any, offset_bytes: int = 0, size_bytes: int | None = None) -> bytes:
        """Bytes ``[offset, offset+size)`` of ``buf`` after all recorded work has run."""
        size = buf.size - offset_bytes if size_bytes is None else size_bytes
        return _run_sync(self._readback_steps([(buf, offset_bytes, size)]), self._wait)[0]

    async def readback_async(self, buf: Any, offset_bytes: int = 0, size_bytes: int | None = None) -> bytes:
        """Async form of ``readback``."""
        size = buf.size - offset_bytes if size_bytes is None else size_bytes
        return (await _run_async(self._readback_steps([(buf, offset_bytes, size)], awaitable=True)))[0]

    def readback_many(self, regions: Iterable[Region]) -> list[bytes]:
        """Synchronous form of ``readback_many_async``."""
        return _run_sync(self._readback_steps(list(regions)), self._wait)

    async def readback_many_async(self, regions: Iterable[Region]) -> list[bytes]:
        """Read several ``(buffer, offset, size)`` regions with one submit and one wait while
        their total fits ``TRANSFER_DEPTH`` chunks (larger reads are pipelined, see
        ``_readback_steps``).

        Every copy joins the open batch; results come back in the order given.
        """
        return await _run_async(self._readback_steps(list(regions), awaitable=True))

    def synchronize(self) -> None:
        """Submit recorded work and block until the device has finished all of it."""
        _run_sync(self._readback_steps([(self._fence_src, 0, 4)]), self._wait)


def _fill_mapped(staging: Any, src: memoryview, threads: int) -> None:
    """Copy ``src`` (a multiple of 4 bytes) to the start of ``staging``, mapped for writing,
    straight into the mapped memory (``host_copy``; wgpu-py's ``write_mapped`` where its
    writable view of the mapping is missing)."""
    get_range = getattr(staging, "_experimental_get_mapped_range", None)
    if get_range is None:
        staging.write_mapped(src, 0)
        return
    host_copy(get_range(0, src.nbytes), src, threads)  # the view dies here, before the unmap


def _flat_bytes(view: memoryview) -> memoryview:
    """A C-contiguous, non-empty ``view`` as a 1-D byte view of the same memory."""
    if view.ndim == 1 and view.format == "B":
        return view
    try:
        return view.cast("B")
    except TypeError:  # formats memoryview cannot cast (complex, non-native byte order, ...)
        return memoryview(np.asarray(view).reshape(-1).view(np.uint8))


def readable_bytes(src: Any) -> memoryview:
    """All bytes of ``src`` (any buffer-protocol object: bytes, bytearray, memoryview, NumPy
    array) as a flat byte view, in C order; a non-contiguous ``src`` is copied.

    Raises BackendError (invalid argument) when ``src`` does not expose its bytes.
    """
    try:
        view = memoryview(src)
    except TypeError:
        raise invalid_argument(f"source must be a bytes-like object, not {type(src).__name__}") from None
    if view.nbytes == 0:
        return memoryview(b"")
    if not view.c_contiguous:
        view = memoryview(view.tobytes())
    return _flat_bytes(view)


def writable_bytes(dst: Any) -> memoryview:
    """``dst`` as a flat writable byte view of the same memory (all of its bytes).

    Raises BackendError (invalid argument) unless ``dst`` is a writable, C-contiguous
    bytes-like object.
    """
    try:
        view = memoryview(dst)
    except TypeError:
        raise invalid_argument(f"destination must be a writable bytes-like object, not {type(dst).__name__}") from None
    if view.readonly:
        raise invalid_argument("the destination is read-only")
    if not view.c_contiguous:
        raise invalid_argument("the destination must be C-contiguous")
    if view.nbytes == 0:
        return memoryview(bytearray(0))
    return _flat_bytes(view)


def _run_sync(steps: Generator[Any, Any, Any], wait: Any = None) -> Any:
    """Drive a promise-yielding generator to completion by waiting on each promise (after
    calling ``wait()``, if given, once before the first wait)."""
    try:
        promise = next(steps)
        if wait is not None:
            wait()
        while True:
            try:
                value = promise.sync_wait()
            except BackendError:
                raise
            except Exception as exc:
                promise = steps.throw(_wrap_wgpu_error(exc))
            else:
                promise = steps.send(value)
    except StopIteration as stop:
        return stop.value


async def _run_async(steps: Generator[Any, Any, Any]) -> Any:
    """Drive a promise-yielding generator to completion by awaiting each promise."""
    try:
        promise = next(steps)
        while True:
            try:
                value = await promise
            except BackendError:
                raise
            except Exception as exc:
                promise = steps.throw(_wrap_wgpu_error(exc))
            else:
                promise = steps.send(value)
    except StopIteration as stop:
        return stop.value


def _wrap_wgpu_error(exc: Exception) -> BackendError:
    text = str(exc)
    if device_state.is_lost_text(text):
        return device_state.classify(None, device_error(text))
    if "memory" in text.lower():
        return out_of_memory(text)
    return device_error(text)
