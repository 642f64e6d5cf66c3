"""WgpuContext: the WebGPU device, its queue, a pipeline cache and batched command recording.

One of the modules that import ``wgpu`` (the others are ``webgpu.py`` and ``mapping.py``).

Work is recorded into one open command encoder (one compute pass while only dispatches are
recorded) and submitted when a result is read back, on ``synchronize()``/``flush()``, after
each chunk of a large host write (small writes go through an upload ring and a recorded copy,
without a submit), when the batch reaches ``MAX_BATCH`` commands, or on size. Dispatch
parameters travel in one uniform ring per batch, uploaded with a single ``write_buffer`` just
before the submit (skipped when the device's ring already holds the same bytes of a small
batch); binding 0 of every kernel is that ring with a *dynamic offset*, so a bind group does
not depend on the parameters.

Submits on size (the ``submit_policy`` knob, ``GPUTENSOR_SUBMIT_POLICY``): the batch is looked at
once its commands bind the current flush bound: ``FLUSH_BYTES`` after a wait (the device is
idle: large work starts on it at once while the host records more; the ``submit_bytes`` knob
sets another), doubled at each such submit up to ``FLUSH_BYTES_MAX`` (so a host slower than the
device still pays few submits). A batch of ``MAX_BATCH`` commands (the ``submit_commands`` knob)
is submitted whatever it binds.

* ``bytes`` (the default): it is submitted whenever it reaches the bound.
* ``work``: it is submitted only when the device may run dry soon: the context
  keeps an estimate of when the device finishes the work already submitted (bound bytes at the
  ``submit_bandwidth`` rate plus ``SUBMIT_GAP_S`` a submission; reset by every wait), and a batch
  at the bound waits (the bound moves ``FLUSH_BYTES`` on) while more than ``SUBMIT_AHEAD_S`` of
  that work is left, unless the batch itself holds ``SUBMIT_PENDING_MAX_S`` of estimated work.
  A submit costs the host tens of microseconds on a GPU and the device a gap between command
  buffers; while the device has a queue, deferring costs neither. The estimate errs towards
  "the device is done" (the rate is a high one; compute-bound kernels take longer than their
  bytes say), which only brings the submit forward, as ``bytes`` would.

A submit ends the pass, finishes the encoder and submits the command buffer with direct
wgpu-native calls on descriptors made once (``native_calls.BatchCalls``; the public methods
elsewhere); the submitted batch's encoder, pass and kept buffers are released while the host
next waits for the device (``prepare_next_batch``, a readback) or at the next submit.

Per-dispatch host cost is kept low by caching (every cache is guarded by the context lock):

* pipelines (``pipelines.Pipelines``, a base class of the context);
* bind groups by the buffers they bind (``bind_groups.BindGroups``, a base class);
* ``record``, the part of ``dispatch`` after its argument checks, is what launchers whose
  bindings and grids are valid by construction call (``ops_elementwise``); the compute-pass
  commands go straight to wgpu-native (``native_calls.PassCalls``: wgpu-py's per-call error
  capture costs about as much as the rest of recording a small op).

The context is put together from modules with one job each: ``adapters`` (choosing the adapter,
requesting the device), ``device`` (adapter, device, queue, features, limits), ``pipelines``
(the pipeline cache), ``bind_groups`` (the bind-group cache), ``transfers`` (uploads, writes and
readbacks through pooled staging buffers), ``host_memory`` (byte views and host copies),
``submit_policy`` (when the open batch is submitted: the flush bounds, ``size_submits_held``),
``native_calls`` (direct wgpu-native calls for passes, bind groups and submits), ``param_ring``
(the uniform ring of dispatch parameters) and
``promises`` (asynchronous steps written once, as generators that yield wgpu promises:
``run_sync`` waits on each promise, ``run_async`` awaits it, so ``new()`` is a facade over the
same steps as ``new_async()``, and ``readback_many`` over ``readback_many_async``). This module
keeps the device, the command batch (recording, bind groups, submission) and ``synchronize``.
"""

from __future__ import annotations

import atexit
import struct
import threading
import time
import weakref
from collections.abc import Generator, Mapping, Sequence
from typing import Any

from . import config, device_state, implementation
from .adapters import (  # noqa: F401 - the adapter choice, also offered here
    WANTED_FEATURES,
    WANTED_LIMITS,
    adapter_description,
    adapter_names,
    adapter_sort_key,
    choose_adapter,
    device_steps,
    rank_adapters,
    request_device_steps,
)
from .bind_groups import BindGroups
from .device import DeviceFacts
from .errors import BackendError, device_error, invalid_argument, out_of_memory
from .host_memory import readable_bytes, round_up, writable_bytes  # noqa: F401 - offered here too
from .index_checks import IndexChecks
from .pipelines import Pipelines
from .native_calls import BatchCalls, BindGroupCall, PassCalls
from .param_ring import UNIFORM_RING_BYTES, ParamRing
from .promises import run_async, run_sync
from .submit_policy import SUBMIT_GAP_S, SubmitPolicy
from .transfers import Region, Transfers
from .implementation import wgpu

_STORAGE_USAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST


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


def _drain_at_exit(ref: "weakref.ref[WgpuContext]") -> None:
    """At interpreter exit, wait for the work a live context still has in flight: tearing the
    device down under running work can crash the driver (seen on lavapipe). Errors are dropped:
    nothing can report them any more."""
    ctx = ref()
    if ctx is None or ctx.lost is not None:
        return
    try:
        ctx.synchronize()
    except Exception:  # noqa: BLE001 - exit path, no caller left
        pass


class WgpuContext(DeviceFacts, Pipelines, BindGroups, Transfers, IndexChecks, SubmitPolicy, ParamRing):
    """The WebGPU device, queue and adapter, a compiled-pipeline cache and the open command batch.

    Public attributes (``DeviceFacts``): ``device``, ``queue``, ``adapter``, ``adapter_info`` (a
    dict), ``features`` (frozenset of granted feature names) and ``limits`` (dict of granted limits).
    Create with ``WgpuContext.new()`` or ``await WgpuContext.new_async()``.
    """

    def __init__(self, adapter: Any, device: Any) -> None:
        self._init_device(adapter, device)
        self._lock = threading.RLock()
        self.stats = {"submits": 0, "dispatches": 0, "pipelines_compiled": 0,
                      "bind_groups_created": 0, "clears": 0}
        self._init_pipelines()
        self._init_transfers(device, self.adapter_info.get("adapter_type") == "CPU")
        self._init_index_checks()
        self._encoder: Any = None
        self._pass: Any = None
        #: (encoder, compute pass) made ahead for the next batch while a wait has the host idle
        #: (``prepare_next_batch``), taken by ``_open_encoder``; None when there is none.
        self._spare: tuple[Any, Any] | None = None
        self._pass_pipeline: Any = None  # the pipeline last set in the open pass
        self._init_submit_policy()
        self._keepalive: list[Any] = []
        self._fence_src = device.create_buffer(size=16, usage=_STORAGE_USAGE)
        self._init_bind_groups()
        #: Profiling hook (``gputensor._profile``): while not None, every recorded dispatch gets a
        #: compute pass of its own whose timestamp writes come from
        #: ``timestamp_sink.timestamp_writes(name, defines)`` (called under the lock).
        self.timestamp_sink: Any = None
        self._init_param_ring(device, self.limits)
        self._pass_calls = PassCalls.load()
        self._bind_group_call = BindGroupCall.load(device)
        #: Opens a batch's encoder and compute pass at once (``implementation.batch_opener``;
        #: None: the public methods).
        self._batch_opener = implementation.batch_opener(device)
        self._calls = BatchCalls.load(device)
        #: The last submitted batch's encoder, pass and kept buffers, released while the host
        #: next waits for the device (``prepare_next_batch``) or at the next submit.
        self._trash: Any = None
        self.stats["submits_deferred"] = 0
        atexit.register(_drain_at_exit, weakref.ref(self))

    # ---- creation -----------------------------------------------------------------------
    @staticmethod
    def _new_steps(hint: str | None) -> Generator[Any, Any, "WgpuContext"]:
        return (yield from device_steps(hint, WgpuContext._open_steps))

    @staticmethod
    def _open_steps(adapter: Any) -> Generator[Any, Any, "WgpuContext"]:
        device = yield from request_device_steps(adapter)
        return WgpuContext(adapter, device)

    @classmethod
    async def new_async(cls, adapter: str | None = None) -> "WgpuContext":
        """Select an adapter (``adapter`` or ``$GPUTENSOR_ADAPTER`` narrows the choice) and create
        the device with the adapter's maximum buffer/binding limits and the useful features.

        Raises BackendError (unsupported) when no adapter matches, (device error) when the
        device cannot be created (naming the adapter; without ``adapter``/``$GPUTENSOR_ADAPTER``
        each adapter is tried in turn, see ``device_state.open_first``).
        """
        return await run_async(cls._new_steps(adapter or config.value("adapter")))

    @classmethod
    def new(cls, adapter: str | None = None) -> "WgpuContext":
        """Synchronous form of ``new_async`` (same steps, waiting on each promise)."""
        return run_sync(cls._new_steps(adapter or config.value("adapter")))

    # ---- buffers --------------------------------------------------------------------------
    def create_storage(self, size_bytes: int) -> Any:
        """A new storage buffer of at least ``size_bytes`` (rounded up to 4), zero-filled.

        Raises BackendError (out of memory / invalid argument) when it cannot be made.
        """
        size = max(4, round_up(int(size_bytes), 4))
        if size > self.max_buffer_size:
            raise out_of_memory(
                f"{size_bytes} bytes exceeds the adapter's max buffer size {self.max_buffer_size}"
            )
        try:
            return self.device.create_buffer(size=size, usage=_STORAGE_USAGE)
        except Exception as exc:  # wgpu raises its own error types
            raise device_state.classify(self, out_of_memory(f"could not allocate {size} bytes: {exc}")) from exc

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
        self._copy(src, src_offset, dst, dst_offset, size)
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
        compute_pass = self._pass
        if compute_pass is not None:
            calls = self._calls
            if calls is not None:
                calls.end_pass(compute_pass._internal)
            else:
                compute_pass.end()
            self._trash_pass(compute_pass)
            self._pass = None
            self._pass_pipeline = None
        return encoder

    def _trash_pass(self, compute_pass: Any) -> None:
        """Keep an ended pass until the batch is released (``_trash``), not releasing it now."""
        self._keepalive.append(compute_pass)

    def _copy(self, src: Any, src_offset: int, dst: Any, dst_offset: int, size: int) -> None:
        """Record a copy of ``size`` bytes from ``src`` to ``dst`` after all recorded work (lock
        held; arguments checked by the caller). Its errors surface when the batch is submitted."""
        encoder = self._end_pass()
        calls = self._calls
        if calls is not None:
            calls.copy(encoder._internal, src._internal, src_offset, dst._internal, dst_offset, size)
        else:
            encoder.copy_buffer_to_buffer(src, src_offset, dst, dst_offset, size)

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
        # the cached bind group of the buffers (the ring at a dynamic offset first), the
        # bindings it lays out writable beyond the pipeline's and the copies it reads, keyed by
        # (the pipeline's layout number, window, then per buffer: uid, offset, size); ``_uid``
        # is what ``uid`` returns
        ids = [self.layout_code[pipe], window]
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
            entry = self._groups.get(key)
            group, writable, copies = entry if entry is not None else self._bind(name, key, window, buffers, pipe)
            if writable:  # one buffer bound read-only and writable: see ``_bind``
                pipe = self.writable_variant(pipe, writable)
            if copies:
                self.snapshot(copies)
            offset = self._ring_used
            if offset + (slot if slot > window else window) > UNIFORM_RING_BYTES:
                self.flush()
                offset = 0
            self._ring_view[offset : offset + size] = raw
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
                    opener = self._batch_opener
                    if self._encoder is None and self._spare is None and opener is not None:
                        self._encoder, compute_pass = opener()
                        self._pass = compute_pass
                    else:
                        encoder = self._open_encoder()  # (may bring the spare batch's open pass)
                        compute_pass = self._pass
                        if compute_pass is None:
                            compute_pass = self._pass = encoder.begin_compute_pass()
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
            if self._pending_bytes >= self._flush_bytes or self._recorded >= self._max_batch:
                self._count_command_flush()
        finally:
            lock.release()

    def _create_bind_group(self, layout: Any, regions: Sequence[Region]) -> Any:
        """A bind group of ``layout`` binding ``regions[k]`` at binding ``k`` (``BindGroupCall``
        where wgpu-py's internals allow, else the public API)."""
        call = self._bind_group_call
        if call is None:
            return super()._create_bind_group(layout, regions)
        return call(layout, regions)

    def _open_encoder(self) -> Any:
        if self._encoder is None:
            spare = self._spare
            if spare is not None:
                self._spare = None
                self._encoder, self._pass = spare
                self._pass_pipeline = None
            elif self._calls is not None:
                self._encoder = self._calls.open_encoder()
            else:
                self._encoder = self.device.create_command_encoder()
        return self._encoder

    def prepare_next_batch(self) -> None:
        """Make the next batch's command encoder and compute pass now, while this thread is
        about to wait for the device (a readback, ``synchronize``): on a GPU their creation
        costs tens of microseconds of host time that the wait hides. Nothing is recorded, so
        ``synchronize`` still sees an idle context; a failure (a lost device) is left to the
        next recording call to report."""
        self._trash = None  # the last batch's objects, released while the device works
        if self._spare is not None or self.lost is not None:
            return
        with self._lock:
            if self._spare is None and self._encoder is None:
                try:
                    opener = self._batch_opener
                    if opener is not None:
                        self._spare = opener()
                    else:
                        encoder = self.device.create_command_encoder()
                        self._spare = (encoder, encoder.begin_compute_pass())
                except Exception:  # noqa: BLE001 - reported by the next call that records
                    self._spare = None

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
            upload_used = self._upload_used
            pending = self._pending_bytes
            # Reset first, so that a failure below never leaves a half-finished encoder behind.
            self._encoder = None
            self._pass = None
            self._pass_pipeline = None
            self._recorded = 0
            self._pending_bytes = 0
            self._ring_used = 0
            self._upload_used = 0
            if self._bounds_key[0] != config.generation:  # a knob changed: its bounds from now
                self._flush_level = self._submit_bounds()
            self._flush_bytes = self._flush_level
            keepalive, self._keepalive = self._keepalive, []
            self._trash = None  # (the batch before: its release is due)
            calls = self._calls
            try:
                if calls is not None:
                    if compute_pass is not None:
                        calls.end_pass(compute_pass._internal)
                    command_buffer = calls.finish(encoder._internal, calls.descriptor)
                    try:
                        if ring_used:
                            self._write_ring(ring_used)
                        self.flush_uploads(upload_used)
                        calls.buffers[0] = command_buffer
                        calls.submit(self.queue._internal, 1, calls.buffers)
                    finally:
                        calls.release(command_buffer)
                else:
                    if compute_pass is not None:
                        compute_pass.end()
                    command_buffer = encoder.finish()
                    if ring_used:
                        self._write_ring(ring_used)
                    self.flush_uploads(upload_used)
                    self.queue.submit([command_buffer])
            except Exception as exc:
                raise device_state.classify(self, device_error(f"submit failed: {exc}")) from exc
            # Released later (``_trash``): dropping the last references costs host time that a
            # wait hides.
            self._trash = (encoder, compute_pass, keepalive)
            self.stats["submits"] += 1
            now = time.perf_counter()
            busy = self._busy_until
            self._busy_until = (busy if busy > now else now) + SUBMIT_GAP_S + pending * self._work_rate()

    def _wait(self) -> None:
        """Block this thread until the submitted work is done (then map callbacks have fired),
        without holding any lock; cheaper than waiting for wgpu-py's poll thread to wake us.
        With a mapper, its requests' ``sync_wait`` does the waiting instead."""
        if self._mapper is None and self._poll is not None:
            self._poll()
        # the device has run out of work: start it early again
        self._flush_level = self._flush_bytes = self._submit_bounds()
        self._busy_until = 0.0

    def synchronize(self) -> None:
        """Submit recorded work and block until the device has finished all of it; returns at
        once when nothing was recorded or submitted since the last completed wait (a readback
        or ``synchronize``). Raises DeviceLostError on a device marked lost, ``IndexError`` for
        an out-of-range gather recorded before (``index_checks``)."""
        if (self._encoder is None and self._completed_submits == self.stats["submits"] and self.lost is None
                and not self._check_messages):
            return
        if self._mapper is not None:
            self._read_small(self._fence_src, 0, 4)
            return
        run_sync(self._readback_steps([(self._fence_src, 0, 4)]), self._wait)
