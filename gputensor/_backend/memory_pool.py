"""A caching allocator for device buffers, in the style of CuPy's memory pool. No wgpu here.

Policy
------
* A freed block is not released: it is kept in a free list of its *bin* and handed out again to
  the next request of the same bin, so the steady state of a loop that creates and drops arrays
  makes no ``create_buffer`` calls at all (and device memory does not grow).
* Bins: a request of ``n`` bytes is rounded up to ``bin_size(n)``: to a multiple of 256 bytes up
  to 4 KiB, and above that to one of 8 geometric steps per power of two (waste at most 12.5%).
  Each block is one WebGPU buffer of exactly its bin size; blocks are never split or merged (a
  WebGPU buffer cannot be cut, and a few dozen bins keep the number of cached blocks small).
  Requests up to ``NEAR_LIMIT`` are served from their exact bin; larger ones, when their bin has
  no free block, from a free block of one of the next ``NEAR_BINS`` bins (at most about 1/4 more
  than the request), so near-equal large sizes share blocks instead of making a fresh buffer
  (a fresh device allocation is the expensive case: milliseconds for hundreds of MiB on a GPU).
* ``used_bytes()``: bytes of blocks handed out and not yet freed; ``free_bytes()``: bytes cached
  in the free lists; ``total_bytes()``: both, i.e. the device memory the pool holds.
  ``n_free_blocks()``, ``free_all_blocks()`` (release every cached block) and an optional limit
  (``set_limit``/``get_limit``; ``$GPUTENSOR_POOL_LIMIT`` sets the initial one: bytes, with an
  optional ``K``/``M``/``G``/``T`` suffix, binary, e.g. ``512M``) complete the CuPy-like surface.
* Allocation failure (the allocator raised BackendError out of memory, or the limit would be
  exceeded): release every cached block, wait until the device has finished the work already
  submitted (``wait``: released buffers are reclaimed once no work uses them) and retry once;
  if that fails too, raise BackendError (out of memory) naming the requested size and the pool's
  used/total bytes. The frontend maps it to ``MemoryError``.

Why reuse is safe without waiting for the device
------------------------------------------------
WebGPU has one queue per device and executes it in order: commands recorded later (in the same
command encoder or in a later submit) run after commands recorded earlier, and the implementation
inserts the barriers that order their memory accesses (two dispatches that use one storage buffer
are separated by a barrier even within one compute pass). ``queue.write_buffer`` is ordered after
every submit made before it. gputensor (``context.py``) relies on exactly these rules:

* A block is freed after the work that uses it was *recorded*; whoever receives it next records
  its own work later, so it runs after the old reads and writes, whether or not the old work was
  already submitted.
* Host writes (``copy_htod`` -> ``WgpuContext.write``) never overtake recorded work. Small ones
  are staged in an upload ring (``queue.write_buffer`` into a ring region that no recorded
  command reads) and moved by a ``copy_buffer_to_buffer`` *recorded* after the old commands;
  large ones submit all recorded work first and then ``queue.write_buffer`` into the block, which
  the queue runs after that submit. Either way a block freed while commands that read it were
  only recorded, then reused and uploaded to, is read by those commands before the upload lands.
  Unaligned edges of a write are patched by a recorded kernel, so they too come after.
* Zero-filling a reused block (``alloc(..., zero=True)``) records ``clear_buffer`` into the open
  encoder, after the old uses.
* Releasing blocks for good (``free_all_blocks``) submits recorded work first, so no recorded
  command refers to a destroyed buffer; ``GPUBuffer.destroy`` lets already submitted work finish.

Threads: one lock guards the free lists. ``free`` may run from a garbage-collector finalizer at
any point of any thread, even inside ``malloc`` of the same thread: it never waits for the lock;
when the lock is busy the block goes to a pending list that the next pool call drains.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from typing import Any

from . import config
from .config import parse_size  # noqa: F401 - the size syntax, offered here too
from .errors import BackendError, BackendErrorKind, invalid_argument, out_of_memory

#: Requests up to this size round up to a multiple of ``SMALL_STEP``.
SMALL_LIMIT = 4096
SMALL_STEP = 256
#: Geometric bins per power of two above ``SMALL_LIMIT``.
STEPS_PER_OCTAVE = 8
#: Requests above this size may take a free block of one of the next ``NEAR_BINS`` bins.
NEAR_LIMIT = 1 << 20
NEAR_BINS = 2
_OCTAVE_SHIFT = STEPS_PER_OCTAVE.bit_length() - 1


def limit_from_env() -> int:
    """The pool limit ``$GPUTENSOR_POOL_LIMIT`` asks for (the ``pool_limit`` knob; 0: none or
    unset). Raises ValueError for a value that is not a size (see ``config.parse_size``)."""
    return config.value("pool_limit")


def bin_size(nbytes: int) -> int:
    """The block size a request of ``nbytes`` is served from (>= ``nbytes``, >= 256, a multiple
    of 256)."""
    n = max(int(nbytes), 1)
    if n <= SMALL_LIMIT:
        return (n + SMALL_STEP - 1) // SMALL_STEP * SMALL_STEP
    step = 1 << (n.bit_length() - 1 - _OCTAVE_SHIFT)
    return (n + step - 1) // step * step


class MemoryPool:
    """Size-binned cache of device buffers (see the module docstring for the policy).

    ``allocate(size) -> buffer`` makes a new zero-filled buffer of ``size`` bytes (raising
    BackendError out of memory when it cannot); ``release(buffer)`` gives one back to the device
    for good; buffers have a ``size`` attribute. ``max_size``: the largest buffer ``allocate`` can
    make (bins are clamped to it). ``on_free_all()`` runs after the cache was released (the
    backend drops its pooled transfer staging buffers there). ``wait()`` blocks until submitted
    work is done (called before the retry of a failed allocation). The initial limit comes from
    ``$GPUTENSOR_POOL_LIMIT`` (ValueError when it is not a size).
    """

    def __init__(self, allocate: Callable[[int], Any], release: Callable[[Any], None],
                 max_size: int | None = None, on_free_all: Callable[[], None] | None = None,
                 wait: Callable[[], None] | None = None) -> None:
        self._allocate = allocate
        self._release = release
        self._on_free_all = on_free_all
        self._wait = wait
        self._max_size = None if max_size is None else int(max_size) // 4 * 4
        self._lock = threading.Lock()
        self._free: dict[int, list[Any]] = {}
        self._pending: collections.deque[Any] = collections.deque()
        self._held = 0  # bytes of every block the pool holds, in use or cached
        self._limit = limit_from_env()  # 0: no limit
        self._bins: dict[int, int] = {}  # request size -> bin (see _bin)
        self.stats = {"hits": 0, "misses": 0, "releases": 0}

    # ---- allocation --------------------------------------------------------------------
    def _bin(self, nbytes: int) -> int:
        size = self._bins.get(nbytes)
        if size is None:
            size = bin_size(nbytes)
            if self._max_size is not None and size > self._max_size >= nbytes:
                size = max(4, (nbytes + 3) // 4 * 4)  # the largest buffers are made to measure
            if len(self._bins) >= 4096:
                self._bins.clear()
            self._bins[nbytes] = size
        return size

    def malloc(self, nbytes: int) -> tuple[Any, bool]:
        """A buffer of at least ``nbytes`` and whether it is new (zero-filled); a reused one holds
        whatever its last user left.

        Raises BackendError: invalid argument for a negative size; out of memory (with the
        requested size and the pool's sizes) when no buffer can be made even after releasing
        every cached block.
        """
        if nbytes < 0:
            raise invalid_argument(f"cannot allocate {nbytes} bytes")
        size = self._bins.get(nbytes) or self._bin(nbytes)
        lock = self._lock
        lock.acquire()  # (with less overhead than ``with``)
        try:
            if self._pending:
                self._drain()
            bucket = self._free.get(size)
            if bucket:
                self.stats["hits"] += 1
                return bucket.pop(), False
            if size > NEAR_LIMIT:
                near = size
                for _ in range(NEAR_BINS):
                    near = bin_size(near + 1)
                    bucket = self._free.get(near)
                    if bucket:
                        self.stats["hits"] += 1
                        return bucket.pop(), False
            buf = self._new_block(size, nbytes)
            self._held += size
            self.stats["misses"] += 1
            return buf, True
        finally:
            lock.release()

    def _new_block(self, size: int, nbytes: int) -> Any:
        """Make a buffer of ``size`` (lock held); on failure release the cache and retry once."""
        for attempt in (0, 1):
            try:
                if self._limit and self._held + size > self._limit:
                    raise out_of_memory(f"the pool limit of {self._limit} bytes would be exceeded")
                return self._allocate(size)
            except BackendError as exc:
                if exc.kind is not BackendErrorKind.OUT_OF_MEMORY:
                    raise
                if attempt == 0 and (any(self._free.values()) or self._wait is not None):
                    self._free_all_locked()
                    if self._wait is not None and not self._limit_hit(size):
                        self._wait()  # released blocks are reclaimed once no work uses them
                    continue
                raise out_of_memory(self._message(nbytes, size, exc.message)) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _limit_hit(self, size: int) -> bool:
        """Whether a block of ``size`` bytes would pass the limit (lock held)."""
        return bool(self._limit) and self._held + size > self._limit

    def _message(self, nbytes: int, size: int, cause: str) -> str:
        return (f"out of device memory allocating {nbytes} bytes (a {size}-byte block); "
                f"memory pool: {self._held - self._cached()[1]} bytes in use, {self._held} bytes "
                f"held in total (cached blocks released); cause: {cause}")

    def _cached(self) -> tuple[int, int]:
        """(number, bytes) of the cached free blocks (lock held)."""
        return (sum(len(bucket) for bucket in self._free.values()),
                sum(size * len(bucket) for size, bucket in self._free.items()))

    def free(self, buf: Any) -> None:
        """Return a buffer obtained from ``malloc`` to its free list (never waits: safe in
        finalizers)."""
        lock = self._lock
        if lock.acquire(False):
            try:
                if self._pending:
                    self._drain()
                bucket = self._free.get(buf.size)  # (_put)
                if bucket is None:
                    self._put(buf)
                else:
                    bucket.append(buf)
            finally:
                lock.release()
        else:
            self._pending.append(buf)  # for the next pool call (the lock holder may be done)

    def _put(self, buf: Any) -> None:
        """Add a freed buffer to its free list (lock held)."""
        size = int(buf.size)
        bucket = self._free.get(size)
        if bucket is None:
            bucket = self._free[size] = []
        bucket.append(buf)

    def _drain(self) -> None:
        """Move pending frees into the free lists (lock held)."""
        pending = self._pending
        while pending:
            try:
                buf = pending.popleft()
            except IndexError:  # another thread drained it
                break
            self._put(buf)

    # ---- release and statistics ----------------------------------------------------------
    def free_all_blocks(self) -> None:
        """Release every cached (free) block to the device; blocks in use are untouched."""
        with self._lock:
            self._drain()
            self._free_all_locked()

    def _free_all_locked(self) -> None:
        blocks = [buf for bucket in self._free.values() for buf in bucket]
        self._held -= self._cached()[1]
        self._free.clear()
        for buf in blocks:
            self._release(buf)
        self.stats["releases"] += len(blocks)
        if self._on_free_all is not None:
            self._on_free_all()

    def _read(self, what: Callable[[], int]) -> int:
        with self._lock:
            self._drain()
            return what()

    def used_bytes(self) -> int:
        """Bytes of blocks in use (handed out by ``malloc`` and not freed), in bin sizes."""
        return self._read(lambda: self._held - self._cached()[1])

    def free_bytes(self) -> int:
        """Bytes of cached free blocks."""
        return self._read(lambda: self._cached()[1])

    def total_bytes(self) -> int:
        """Device memory held by the pool: used plus cached bytes."""
        return self._read(lambda: self._held)

    def n_free_blocks(self) -> int:
        """Number of cached free blocks."""
        return self._read(lambda: self._cached()[0])

    def set_limit(self, size: int | None = None, fraction: float | None = None,
                  capacity: int | None = None) -> None:
        """Limit the pool's total bytes to ``size`` (or ``fraction`` of ``capacity``, by default
        the largest buffer); 0 or neither removes the limit. Raises ValueError for negative or
        conflicting arguments."""
        if size is not None and fraction is not None:
            raise ValueError("give size or fraction, not both")
        if fraction is not None:
            if not 0 <= fraction <= 1:
                raise ValueError(f"fraction must be in [0, 1], not {fraction}")
            cap = capacity if capacity is not None else (self._max_size or 0)
            size = int(cap * fraction)
        size = int(size or 0)
        if size < 0:
            raise ValueError(f"the limit must be >= 0, not {size}")
        with self._lock:
            self._limit = size

    def get_limit(self) -> int:
        """The pool's limit in bytes (0: none)."""
        return self._limit

    def __repr__(self) -> str:
        return (f"MemoryPool(used={self.used_bytes()}, total={self.total_bytes()}, "
                f"free_blocks={self.n_free_blocks()}, limit={self._limit})")
