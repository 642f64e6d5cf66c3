"""The bind-group cache of a WgpuContext (a base class of ``WgpuContext``).

Bind groups are cached by ``(layout number, uniform window, (buffer uid, offset, size)...)``
(``record`` makes the key; the layout number is the pipeline's ``layout_code``), each with the
storage bindings it lays out writable beyond that layout and the copies its dispatches need
first (none, unless one buffer is bound both read-only and writable: see ``_bind``; on Dawn an
in-place update reads a copy of its input, which the entry keeps). A GPUBuffer's ``uid`` is never reused, so a stale entry
can never be hit by another buffer; entries of a buffer are dropped when its Python object dies
(a ``weakref.finalize`` queues its uid, purged at the next dispatch) or at once by
``_forget_buffer`` (``release_buffer``, the memory pool's way of destroying a block). The cache
is bounded (``BIND_GROUP_CACHE_SIZE``, oldest entries first out); dropped groups stay alive
until the batch that may use them is submitted (``_keepalive``). Every method runs with the
context's lock held (``bind_group_cache_size`` takes it).
"""

from __future__ import annotations

import collections
import itertools
import threading
import weakref
from collections.abc import Sequence
from typing import Any

from . import device_state
from .errors import device_error, invalid_argument
from .implementation import WRITABLE_ALIASING_CHECKED
from .pipelines import PipelineInfo
from .shader_bindings import UNUSED

__all__ = ["BindGroups", "BIND_GROUP_CACHE_SIZE"]

#: Bind groups kept by the cache (when it is full, the oldest go until three quarters remain).
BIND_GROUP_CACHE_SIZE = 4096

#: Bytes of the buffer bound in place of an unused binding that shares a written buffer.
_SPARE_BYTES = 256

Region = tuple[Any, int, int]  # (GPUBuffer, offset_bytes, size_bytes)
Copy = tuple[Any, int, Any, int]  # (source GPUBuffer, offset_bytes, its copy's GPUBuffer, size_bytes)


def _overlap(a: Region, b: Region) -> bool:
    """Whether two regions of one buffer overlap."""
    return a[1] < b[1] + b[2] and b[1] < a[1] + a[2]


class BindGroups:
    """The cache, for a context with ``device``, ``_lock``, ``_ring``, ``_keepalive``,
    ``stats``, ``create_storage``, ``_record_copy`` and the pipeline cache's ``layout_code``,
    ``bind_group_layout``, ``pipeline_info`` and ``writable_variant``; call
    ``_init_bind_groups`` from its ``__init__``."""

    device: Any
    stats: dict[str, int]
    _lock: threading.RLock
    _ring: Any
    _keepalive: list[Any]

    def _init_bind_groups(self) -> None:
        self._groups: dict[tuple[Any, ...], Any] = {}
        self._groups_by_buffer: dict[int, set[tuple[Any, ...]]] = {}
        self._dead_buffers: collections.deque[int] = collections.deque()
        self._spare_storage: Any = None

    def _bind(self, name: str, key: tuple[Any, ...], window: int, buffers: Sequence[Region],
              pipe: Any) -> tuple[Any, tuple[int, ...], tuple[Copy, ...]]:
        """The cache entry under ``key`` (see ``record``: the same for every pipeline of
        ``pipe``'s layout) for recording ``pipe`` over ``buffers``, the ring's ``window`` at a
        dynamic offset first: (bind group, the storage bindings it lays out writable beyond
        ``pipe``'s layout, the copies to record before each dispatch with it); created and
        cached (lock held). A read-only binding whose buffer is also bound writable is bound
        writable (the pipeline to record is then ``writable_variant(pipe, bindings)``), or,
        where the implementation forbids it to overlap another binding of the buffer
        (``WRITABLE_ALIASING_CHECKED``), bound to a buffer of its own that receives a copy of
        its window before each dispatch (``snapshot``; a binding the kernel does not use: to a
        small buffer that stands in for it). BackendError (invalid argument) for two
        overlapping writable bindings there, (device error) when the buffers cannot be bound."""
        bound = list(buffers)
        promote: tuple[int, ...] = ()
        copies: list[Copy] = []
        if len({b for b, _, _ in buffers}) < len(buffers):
            promote, moved = self._sharing(name, self.pipeline_info(pipe), buffers)
            for i, how in moved:
                buf, offset, size = buffers[i]
                if how == UNUSED:
                    bound[i] = self.spare_region(4)
                else:
                    copy = (buf, offset, self.create_storage(size), size)
                    copies.append(copy)
                    bound[i] = (copy[2], 0, size)
        bgl, _ = self.bind_group_layout(self.layout_code[self.writable_variant(pipe, promote) if promote else pipe])
        try:
            group = self._create_bind_group(bgl, [(self._ring, 0, window), *bound])
        except Exception as exc:
            raise device_state.classify(self, device_error(f"kernel {name}: cannot bind its buffers: {exc}")) from exc
        self.stats["bind_groups_created"] += 1
        if len(self._groups) >= BIND_GROUP_CACHE_SIZE:  # down to three quarters, oldest first
            self._evict(len(self._groups) - BIND_GROUP_CACHE_SIZE * 3 // 4)
        entry = self._groups[key] = (group, promote, tuple(copies))
        for buf, _, _ in buffers:
            uid = buf.uid
            keys = self._groups_by_buffer.get(uid)
            if keys is None:
                keys = self._groups_by_buffer[uid] = set()
                weakref.finalize(buf, self._dead_buffers.append, uid)
            keys.add(key)
        return entry

    def snapshot(self, copies: Sequence[Copy]) -> None:
        """Record the copies of a bind group's entry (see ``_bind``), after every dispatch
        recorded before (lock held)."""
        for src, offset, dst, size in copies:
            self._record_copy(src, offset, dst, 0, size)

    def _sharing(self, name: str, info: PipelineInfo, buffers: Sequence[Region]
                 ) -> tuple[tuple[int, ...], list[tuple[int, str]]]:
        """For bindings ``buffers`` of a pipeline described by ``info``: the read-only bindings
        to lay out writable (sorted indices) and those to move off their buffer, each (index,
        its access), as ``_bind`` says. BackendError (invalid argument) as there."""
        by_buffer: dict[int, list[int]] = {}
        for i, (buf, _, _) in enumerate(buffers):
            by_buffer.setdefault(id(buf), []).append(i)
        promote: list[int] = []
        moved: list[tuple[int, str]] = []
        for shared in by_buffer.values():
            writers = [i for i in shared if info.writable[i]]
            if len(shared) < 2 or not writers:
                continue  # read-only bindings may overlap
            readers = [i for i in shared if not info.writable[i]]
            if not WRITABLE_ALIASING_CHECKED:
                promote += readers
                continue
            for a, b in itertools.combinations(writers, 2):
                if _overlap(buffers[a], buffers[b]):
                    raise invalid_argument(
                        f"kernel {name}: storage bindings {a + 1} and {b + 1} are overlapping windows of "
                        "one buffer and both written, which this WebGPU implementation rejects"
                    )
            for i in readers:
                if any(_overlap(buffers[i], buffers[j]) for j in shared if j != i):
                    moved.append((i, info.access[i]))
                else:
                    promote.append(i)
        return tuple(sorted(promote)), moved

    def spare_region(self, nbytes: int) -> Region:
        """A region of at least ``nbytes`` (and ``_SPARE_BYTES``) of a storage buffer of the
        context's own, to stand in for a binding a kernel variant does not use: it overlaps no
        operand of any dispatch. Takes the lock."""
        with self._lock:
            spare = self._spare_storage
            if spare is None or spare.size < nbytes:
                spare = self._spare_storage = self.create_storage(max(nbytes, _SPARE_BYTES))
            return (spare, 0, spare.size)

    def _create_bind_group(self, layout: Any, regions: Sequence[Region]) -> Any:
        """A bind group of ``layout`` binding ``regions[k]`` at binding ``k`` (the context
        overrides this with a direct call of wgpu-native where it can)."""
        return self.device.create_bind_group(layout=layout, entries=[
            {"binding": k, "resource": {"buffer": b, "offset": o, "size": s}} for k, (b, o, s) in enumerate(regions)])

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
