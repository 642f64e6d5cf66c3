"""The bind-group cache of a WgpuContext (a base class of ``WgpuContext``).

Bind groups are cached by ``(number of storage bindings, uniform window, (buffer uid, offset,
size)...)`` (``record`` makes the key). A GPUBuffer's ``uid`` is never reused, so a stale entry
can never be hit by another buffer; entries of a buffer are dropped when its Python object dies
(a ``weakref.finalize`` queues its uid, purged at the next dispatch) or at once by
``_forget_buffer`` (``release_buffer``, the memory pool's way of destroying a block). The cache
is bounded (``BIND_GROUP_CACHE_SIZE``, oldest entries first out); dropped groups stay alive
until the batch that may use them is submitted (``_keepalive``). Every method runs with the
context's lock held (``bind_group_cache_size`` takes it).
"""

from __future__ import annotations

import collections
import threading
import weakref
from collections.abc import Sequence
from typing import Any

from . import device_state
from .errors import device_error

__all__ = ["BindGroups", "BIND_GROUP_CACHE_SIZE"]

#: Bind groups kept by the cache (when it is full, the oldest go until three quarters remain).
BIND_GROUP_CACHE_SIZE = 4096

Region = tuple[Any, int, int]  # (GPUBuffer, offset_bytes, size_bytes)


class BindGroups:
    """The cache, for a context with ``device``, ``_lock``, ``_ring``, ``_layout``,
    ``_keepalive`` and ``stats``; call ``_init_bind_groups`` from its ``__init__``."""

    device: Any
    stats: dict[str, int]
    _lock: threading.RLock
    _ring: Any
    _keepalive: list[Any]

    def _init_bind_groups(self) -> None:
        self._groups: dict[tuple[Any, ...], Any] = {}
        self._groups_by_buffer: dict[int, set[tuple[Any, ...]]] = {}
        self._dead_buffers: collections.deque[int] = collections.deque()

    def _new_bind_group(self, name: str, key: tuple[Any, ...], window: int, buffers: Sequence[Region]) -> Any:
        """Create and cache (under ``key``: see ``record``) the bind group of ``buffers``, the
        ring's ``window`` at a dynamic offset first (lock held)."""
        n_storage = len(buffers)
        bgl, _ = self._layout(n_storage)
        try:
            group = self._create_bind_group(bgl, [(self._ring, 0, window), *buffers])
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
