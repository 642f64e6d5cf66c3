"""Moving bytes between host and device (a mixin of ``WgpuContext``): uploads, writes, readbacks.

Large transfers move every byte once on the host, straight between the caller's memory and a
mapped staging buffer (``host_memory.host_copy``, split between threads when large), in chunks
of ``TRANSFER_CHUNK`` with at most ``TRANSFER_DEPTH`` in flight, so the device copy of one chunk
overlaps the host copy of another and a 1 GiB transfer needs no 1 GiB staging buffer. Uploads
use pooled MAP_WRITE buffers (``_UploadStaging``), each refilled only after the device copy
that read it; downloads use pooled MAP_READ buffers (``_Staging``), mapped by
``mapping.Mapper``, whose waits poll in the waiting thread (spinning on hardware adapters)
instead of blocking in the driver. Small writes go through an upload ring and a recorded copy,
without a submit.

Readback (``readback*``) records its staging copies into the open encoder and submits the whole
batch once; the waits for the mappings happen outside the context lock, so other threads keep
recording while one waits.
"""

from __future__ import annotations

import collections
import os
import threading
from collections.abc import Generator, Iterable, Sequence
from typing import Any

from . import config, device_state
from .errors import BackendError, device_error, invalid_argument
from .host_memory import fill_mapped, host_copy, readable_bytes, round_up, writable_bytes
from .index_checks import raise_index_errors
from .mapping import Mapper, wait_mode
from .promises import run_async, run_sync, wrap_wgpu_error
from .implementation import wgpu

__all__ = ["Transfers", "Region", "SMALL_READ_MAX", "STAGED_UPLOAD_MAX", "UPLOAD_RING_BYTES", "TRANSFER_CHUNK",
           "TRANSFER_DEPTH"]

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

#: Reads of up to this many bytes (scalars, small arrays, the fence of ``synchronize``) take
#: the direct path (``Transfers._read_small``: no chunking, no generator steps).
SMALL_READ_MAX = 64 * 1024

#: Size of the staging buffer each context keeps for the smallest reads (scalars, the fence of
#: ``synchronize``): one buffer reused by every such read that does not overlap another.
SMALL_STAGING_BYTES = 256

#: Threads that share one large host copy (0: automatic, 1 on software adapters, whose device
#: copies run on the same CPU cores, else up to 4). The ``copy_threads`` knob
#: (``$GPUTENSOR_COPY_THREADS``, see ``config``) sets it.

_STAGING_USAGE = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
_UPLOAD_USAGE = wgpu.BufferUsage.MAP_WRITE | wgpu.BufferUsage.COPY_SRC

Region = tuple[Any, int, int]  # (GPUBuffer, offset_bytes, size_bytes)
# A piece of a readback: (region index, buffer, staged start, staged length (a multiple of 4),
# bytes to skip in the staging buffer, bytes to take, where they go in the region).
_Piece = tuple[int, Any, int, int, int, int, int]


def _transfer_chunk() -> int:
    """``TRANSFER_CHUNK`` as a positive multiple of 4."""
    return max(4, int(TRANSFER_CHUNK) // 4 * 4)


class _Staging:
    """A pool of MAP_READ staging buffers, binned by power-of-two size (readbacks)."""

    KEEP_LIMIT = 64 << 20

    def __init__(self, device: Any, stats: dict[str, int] | None = None) -> None:
        self._device = device
        self._free: dict[int, list[Any]] = {}
        self._lock = threading.Lock()
        #: ``staging_created``: staging buffers made (the others were reused).
        self.stats = stats if stats is not None else {}
        self.stats.setdefault("staging_created", 0)

    def take(self, size: int) -> Any:
        # small buffers are binned by power of two (and reused); large ones are made to measure
        cap = max(256, 1 << (size - 1).bit_length()) if size <= self.KEEP_LIMIT else round_up(size, 4)
        with self._lock:
            bucket = self._free.get(cap)
            if bucket:
                return bucket.pop()
        try:
            buf = self._device.create_buffer(size=cap, usage=_STAGING_USAGE)
        except Exception as exc:  # wgpu's own error types (a lost device, out of memory)
            raise wrap_wgpu_error(exc) from exc
        self.stats["staging_created"] += 1
        return buf

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
                raise wrap_wgpu_error(exc) from exc
        buf, promise = found
        try:
            promise.sync_wait()
        except Exception as exc:  # wgpu's own error types
            raise wrap_wgpu_error(exc) from None
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


class Transfers:
    """Host <-> device transfers for a context that records work (``_lock``, ``queue``,
    ``flush``, ``_record_copy``, ``_copy``, ``_end_pass``, ``_keepalive``, ``_trash``, ``dispatch``, ``_wait``,
    ``create_storage``, ``is_software``, ``storage_offset_alignment``); call
    ``_init_transfers`` from its ``__init__``. ``_upload_used`` is reset by the context when it
    submits a batch."""

    def _init_transfers(self, device: Any, software: bool) -> None:
        stats = getattr(self, "stats", None)
        if stats is not None:
            stats.setdefault("maps", 0)
        self._staging = _Staging(device, stats)
        #: Maps staging buffers and completes the mappings in the waiting thread (``mapping.py``:
        #: spinning on hardware adapters, never a blocking wait while the device works); None
        #: with ``GPUTENSOR_WAIT=poller`` or a wgpu-py without the internals it uses.
        mode = wait_mode(software)
        self._mapper = Mapper.load(device, spin=mode == "spin", stats=stats) if mode != "poller" else None
        self._upload_staging = _UploadStaging(device, self._mapper)
        self._poll = getattr(device, "_poll_wait", None)  # wait in this thread (no poller hop)
        self._nosync_map = True  # see _map_read
        self._upload_ring = device.create_buffer(
            size=UPLOAD_RING_BYTES, usage=wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        )
        self._upload_used = 0
        #: The upload ring's bytes for the open batch, staged in host memory and written to the
        #: ring with one ``write_buffer`` just before the batch is submitted (``flush_uploads``).
        self._upload_data = bytearray(UPLOAD_RING_BYTES)
        self._upload_view = memoryview(self._upload_data)
        #: Submits known to be complete (a readback's mapping completed after them): while it
        #: equals ``stats["submits"]`` and nothing is recorded, ``synchronize`` has nothing to wait for.
        self._completed_submits = 0
        #: The staging buffer of small reads while no read uses it (``_stage_one``), else None.
        self._small_staging: Any = device.create_buffer(size=SMALL_STAGING_BYTES, usage=_STAGING_USAGE)

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
                # Small: into the upload ring's host bytes (written to the ring just before the
                # batch's submit: earlier batches that read the ring were submitted before that
                # write_buffer), then a copy recorded in order with the other work: no submit.
                if self._upload_used + body_len > UPLOAD_RING_BYTES:
                    self.flush()
                at = self._upload_used
                self._upload_view[at : at + body_len] = body
                self._upload_used = at + body_len
                self._record_copy(self._upload_ring, at, buf, body_start, body_len)
            for start, chunk in ((offset, mv[:head]), (body_start + body_len, mv[head + body_len :])):
                if len(chunk):
                    self._patch_bytes(buf, start, bytes(chunk))

    def flush_uploads(self, used: int) -> None:
        """Write the first ``used`` staged bytes of the upload ring to the device (the context's
        ``flush``, lock held, before it submits the batch whose copies read them)."""
        if used:
            self.queue.write_buffer(self._upload_ring, 0, self._upload_data, 0, used)

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
            fill_mapped(staging, piece, threads)
            staging.unmap()
            with self._lock:
                self._record_copy(staging, 0, buf, start + pos, piece.nbytes)
                self.flush()
            self._upload_staging.give(staging)

    def _copy_threads(self) -> int:
        """Threads for one large host copy (the ``copy_threads`` knob; 0 chooses)."""
        threads = config.value("copy_threads")
        if threads > 0:
            return int(threads)
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
            first, stop = offset // 4 * 4, round_up(end, 4)
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
        done_mark = 0  # submits known complete once the last mapping has completed
        checks: list[tuple[Any, int, list[tuple[str, ...]]]] = []  # armed index checks read back
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
                stagings, done_mark = self._stage(group, checks)
                for piece, staging in zip(group, stagings):
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
        if not pieces and self._check_messages:  # nothing else to read: the index checks alone
            with self._lock:
                staged = self._stage_index_checks(self._staging)
                if staged is not None:
                    checks.append(staged)
                    self.flush()
                done_mark = self.stats["submits"]
        flags = []
        for staging, nbytes, messages in checks:
            yield self._map_read(staging, nbytes, awaitable)
            flags.append((bytes(staging.read_mapped(0, nbytes, copy=False)), messages))
            staging.unmap()
            self._staging.give(staging)
        if done_mark > self._completed_submits:
            self._completed_submits = done_mark
        self._trash = None  # the last submitted batch's objects (see ``WgpuContext.flush``)
        for raw, messages in flags:
            raise_index_errors(raw, messages)
        if into is None:
            out = [bytes(v) if isinstance(v, bytearray) else v for v in out]
        return out

    def _stage(self, pieces: Sequence[_Piece], checks: list[Any]) -> tuple[list[Any], int]:
        """Record the device copies of ``pieces`` into staging buffers after all recorded work
        and submit them (with the armed index checks, appended to ``checks``: see
        ``index_checks``); the staging buffers, in order, and the number of submits made so far
        (all of them are complete once these copies are mapped: the queue runs in order).
        Raises BackendError (device error) when the submit fails."""
        stagings = []
        with self._lock:
            for _, buf, start, length, _, _, _ in pieces:
                try:
                    staging = self._staging.take(length)
                except BackendError as exc:
                    raise device_state.classify(self, exc) from None
                stagings.append(staging)
                self._copy(buf, start, staging, 0, length)
                self._keepalive.append(buf)
            staged = self._stage_index_checks(self._staging)
            if staged is not None:
                checks.append(staged)
            try:
                self.flush()
            except BackendError as exc:
                raise device_state.classify(self, device_error(f"readback submit failed: {exc.message}")) from None
            mark = self.stats["submits"]
        return stagings, mark

    def _map_read(self, staging: Any, size: int, awaitable: bool = False) -> Any:
        """Start mapping ``staging`` for reading: through the mapper (see ``mapping.py``) unless
        ``awaitable`` or there is none. wgpu-py submits an empty command buffer before every read
        mapping (a workaround for data written through a *mapping*, wgpu-native issue 305);
        staging buffers are only written by copies that were just submitted, so that extra
        submit is skipped (wgpu-py's "READ_NOSYNC" mode) where wgpu-py offers it (the mapper
        never makes it)."""
        if self._mapper is not None and not awaitable:
            return self._mapper.map(staging, wgpu.MapMode.READ, 0, size)
        self.stats["maps"] += 1  # (the mapper counts its own)
        if self._nosync_map:
            try:
                return staging.map_async("READ_NOSYNC", 0, size)
            except (TypeError, ValueError, KeyError, AttributeError):
                self._nosync_map = False  # an older/newer wgpu-py without the mode
        return staging.map_async(wgpu.MapMode.READ, 0, size)

    def _stage_one(self, buf: Any, start: int, length: int, checks: list[Any]) -> tuple[Any, int]:
        """``_stage`` for one piece (``_read_small``): the copy of ``length`` bytes of ``buf`` at
        ``start`` into a staging buffer (the context's small one when free, else a pooled one),
        the armed index checks (appended to ``checks``) and the submit; the staging buffer and
        the submits made so far. Raises BackendError (device error) when the submit fails."""
        with self._lock:
            staging = self._small_staging
            if staging is not None and length <= SMALL_STAGING_BYTES:
                self._small_staging = None
            else:
                try:
                    staging = self._staging.take(length)
                except BackendError as exc:
                    raise device_state.classify(self, exc) from None
            self._copy(buf, start, staging, 0, length)
            self._keepalive.append(buf)
            if self._check_messages:
                staged = self._stage_index_checks(self._staging)
                if staged is not None:
                    checks.append(staged)
            try:
                self.flush()
            except BackendError as exc:
                self._give_small(staging)
                raise device_state.classify(self, device_error(f"readback submit failed: {exc.message}")) from None
            return staging, self.stats["submits"]

    def _give_small(self, staging: Any) -> None:
        """Return a staging buffer of ``_stage_one``: into the small slot when it is the slot's
        size and the slot is empty, else to the pool."""
        if staging.size == SMALL_STAGING_BYTES and self._small_staging is None:
            self._small_staging = staging
        else:
            self._staging.give(staging)

    def _read_small(self, buf: Any, offset: int, size: int, into: memoryview | None = None) -> bytes | None:
        """Read ``size`` bytes (0 < size <= ``SMALL_READ_MAX``) of ``buf`` at ``offset`` after all
        recorded work, through the mapper (``_mapper`` not None): the copy into a staging buffer
        (one kept for reads of up to ``SMALL_STAGING_BYTES``, else a pooled one) joins the open
        batch, one submit, one mapping, the next batch's encoder made while the device still
        works (``prepare_next_batch``, skipped when the first poll finds the copy done: the next
        recording call opens it), one host copy from the mapped range. Returns the bytes, or
        copies them into ``into`` (None is returned). Raises BackendError (invalid argument) for
        a region outside ``buf``, ``IndexError`` for armed index checks that failed
        (``index_checks``), BackendError when the device fails."""
        if offset < 0 or offset + size > buf.size:
            raise invalid_argument(f"readback of {size} bytes at {offset} is outside a {buf.size}-byte buffer")
        first = offset & ~3
        length = ((offset + size + 3) & ~3) - first
        checks: list[tuple[Any, int, list[tuple[str, ...]]]] = []
        staging, mark = self._stage_one(buf, first, length, checks)
        mapper = self._mapper
        read = wgpu.MapMode.READ
        request = mapper.map(staging, read, 0, length)
        more = [mapper.map(st, read, 0, nbytes) for st, nbytes, _ in checks] if checks else ()
        self._wait()  # (with a mapper: only the flush bound's reset; the waits are below)
        try:
            mapper.wait(request, self.prepare_next_batch)  # (the hook runs only while the device is busy)
            for other in more:
                mapper.wait(other)
        except Exception as exc:  # wgpu's own error types (a lost device)
            raise wrap_wgpu_error(exc) from None
        self._trash = None  # the submitted batch's objects (already gone if the wait ran the hook)
        data = mapper.read(staging, length, offset - first, size, into)
        mapper.unmap(staging)
        self._give_small(staging)
        if mark > self._completed_submits:
            self._completed_submits = mark
        if checks:
            flags = []
            for st, nbytes, messages in checks:
                flags.append((mapper.read(st, nbytes, 0, nbytes), messages))
                mapper.unmap(st)
                self._staging.give(st)
            for raw, messages in flags:
                raise_index_errors(raw, messages)
        return data

    def readback_into(self, buf: Any, offset_bytes: int, dst: Any) -> None:
        """Fill the writable bytes-like ``dst`` (all of its bytes) from ``buf`` at ``offset_bytes``,
        after all recorded work has run; one host copy from the mapped staging memory (chunk by
        chunk when large).

        Raises BackendError (invalid argument) for a region outside ``buf`` or an unsuitable ``dst``.
        """
        view = writable_bytes(dst)
        if 0 < view.nbytes <= SMALL_READ_MAX and self._mapper is not None and type(offset_bytes) is int:
            self._read_small(buf, offset_bytes, view.nbytes, view)
            return
        run_sync(self._readback_steps([(buf, offset_bytes, view.nbytes)], into=[view]), self._wait)

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
        run_sync(self._readback_steps(regions, into=views), self._wait)

    def readback(self, buf: Any, offset_bytes: int = 0, size_bytes: int | None = None) -> bytes:
        """Bytes ``[offset, offset+size)`` of ``buf`` after all recorded work has run."""
        size = buf.size - offset_bytes if size_bytes is None else size_bytes
        if (self._mapper is not None and type(offset_bytes) is int and type(size) is int
                and 0 < size <= SMALL_READ_MAX):
            return self._read_small(buf, offset_bytes, size)
        return run_sync(self._readback_steps([(buf, offset_bytes, size)]), self._wait)[0]

    async def readback_async(self, buf: Any, offset_bytes: int = 0, size_bytes: int | None = None) -> bytes:
        """Async form of ``readback``."""
        size = buf.size - offset_bytes if size_bytes is None else size_bytes
        return (await run_async(self._readback_steps([(buf, offset_bytes, size)], awaitable=True)))[0]

    def readback_many(self, regions: Iterable[Region]) -> list[bytes]:
        """Synchronous form of ``readback_many_async``."""
        return run_sync(self._readback_steps(list(regions)), self._wait)

    async def readback_many_async(self, regions: Iterable[Region]) -> list[bytes]:
        """Read several ``(buffer, offset, size)`` regions with one submit and one wait while
        their total fits ``TRANSFER_DEPTH`` chunks (larger reads are pipelined, see
        ``_readback_steps``).

        Every copy joins the open batch; results come back in the order given.
        """
        return await run_async(self._readback_steps(list(regions), awaitable=True))
