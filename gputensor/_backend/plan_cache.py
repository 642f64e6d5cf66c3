"""Per-backend launch-plan caches, bounded: the one cache mechanism of the op modules.

A plan (pipelines, windows, parameter bytes of a kind of call: for most families a
``launch.LaunchProgram``) depends on the backend it was made for (its features and binding
window), so each backend has its own dict of plans. Lookups read that dict without a lock (a
dict read is atomic); insertions take the cache's lock and drop the oldest entry when the dict
is full. No wgpu here.

The caching idiom of the backend: whatever depends on a backend or its device (plans, programs,
pipelines) goes in a ``PlanCache`` keyed by the call's plain arguments (exact ints, strs and
tuples of them, so that equal keys mean identical calls) plus the module settings planning
reads; pure functions of hashable values (WGSL text, placeholder values) are memoised with
``functools.lru_cache``, bounded.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

__all__ = ["PlanCache"]


class PlanCache:
    """A bounded dict of plans for each backend. ``of(backend)`` returns that backend's dict
    (created on first use; the last backend asked for is remembered, so the usual single-backend
    lookup is one comparison); ``keep(plans, key, plan)`` stores an entry."""

    def __init__(self, size: int) -> None:
        self.size = int(size)
        self._by_backend: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], Any]] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._last: tuple[Any, dict[tuple[Any, ...], Any]] | None = None

    def of(self, backend: Any) -> dict[tuple[Any, ...], Any]:
        """The plan dict of ``backend`` (read-only use: store through :meth:`keep`)."""
        last = self._last
        if last is not None and last[0]() is backend:
            return last[1]
        with self._lock:
            plans = self._by_backend.get(backend)
            if plans is None:
                plans = self._by_backend[backend] = {}
            self._last = (weakref.ref(backend), plans)
            return plans

    def keep(self, plans: dict[tuple[Any, ...], Any], key: tuple[Any, ...], plan: Any) -> None:
        """Store ``plan`` under ``key`` in ``plans`` (a dict from :meth:`of`); the oldest entry
        goes first when the dict holds ``size`` plans."""
        with self._lock:
            if len(plans) >= self.size:
                plans.pop(next(iter(plans)), None)
            plans[key] = plan
