"""Dispatch timing on the device: the backend side of ``gputensor.profile()``.

The frontend's :mod:`gputensor._profile` builds the report; this module does what touches the
device: timestamp queries (:class:`TimestampSink`), the host-time fallback that wraps
``WgpuContext.dispatch``, dispatch labels (``with label("name"):``, used by user kernels and the
autotuner) and the one profiling session that is active while any profile block runs.

The hook the context provides (the only thing this module needs from ``context.py``)
--------------------------------------------------------------------------------------
``WgpuContext.timestamp_sink`` is an attribute, ``None`` by default (implemented in
``WgpuContext.dispatch``; a context without the attribute gets the host-time fallback). While it
is not ``None``, ``WgpuContext.dispatch`` (and any other path that records a dispatch) calls
``sink.timestamp_writes(name, defines)`` exactly once for every dispatch it actually records,
under the context's lock, in the calling thread, after all validation and immediately before it
begins the compute pass; it ends any open pass, begins a new one with
``begin_compute_pass(timestamp_writes=<the returned dict>)``, records the dispatch, and ends that
pass at once. :class:`TimestampSink` implements the sink side.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import implementation
from .implementation import wgpu

__all__ = [
    "DispatchEvent", "TimestampSink", "label", "current_label", "timestamp_period",
    "has_timestamp_hook", "acquire", "release", "Session",
]

# ---------------------------------------------------------------------------------------------
# labels
# ---------------------------------------------------------------------------------------------
_local = threading.local()


class label:
    """``with label("name"):`` names the dispatches this thread records inside the block in profile
    reports (the innermost label wins). Cheap; has no effect when no profile is active."""

    __slots__ = ("_name", "_prev")

    def __init__(self, name: str) -> None:
        self._name = str(name)
        self._prev: str | None = None

    def __enter__(self) -> "label":
        self._prev = getattr(_local, "label", None)
        _local.label = self._name
        return self

    def __exit__(self, *exc: object) -> None:
        _local.label = self._prev


def current_label(default: str) -> str:
    """The label set by the innermost active ``label`` block of this thread, else ``default``."""
    name = getattr(_local, "label", None)
    return default if name is None else name



# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DispatchEvent:
    """One recorded dispatch: kernel name, GPU seconds (None without timestamps, or when the
    device did not write the queries) and host recording seconds (host mode only, else None)."""

    name: str
    gpu_s: float | None
    host_s: float | None


# ---------------------------------------------------------------------------------------------
# the timestamp sink (the side of the context hook that lives here)
# ---------------------------------------------------------------------------------------------
def timestamp_period(queue: Any) -> float:
    """Nanoseconds per timestamp tick of ``queue`` (wgpu-native's ``wgpuQueueGetTimestampPeriod``;
    1.0 when it cannot be asked, which is what wgpu-native reports on Vulkan adapters seen so far)."""
    return implementation.timestamp_period(queue)


class TimestampSink:
    """Hands out timestamp-query slots, two per dispatch, and reads them back.

    ``timestamp_writes(name, defines)`` is what the context hook calls for each dispatch it records
    (see the module docstring); it returns the ``timestamp_writes`` dict for that dispatch's compute
    pass. ``read(ctx, slots)`` resolves the queries of the given slots and returns GPU seconds per
    slot (None where the device did not write a valid pair). Query sets hold ``SET_SIZE`` queries
    each (WebGPU's maximum is 4096); new sets are made as needed. Thread-safe.
    """

    SET_SIZE = 4096

    def __init__(self, device: Any) -> None:
        self._device = device
        self._sets: list[Any] = []
        self._used = self.SET_SIZE  # queries used in the newest set (full: make a new one first)
        self._lock = threading.Lock()
        #: (label, set index, first query index) per dispatch, in recording order
        self.slots: list[tuple[str, int, int]] = []

    def timestamp_writes(self, name: str, defines: Mapping[str, object] | None = None) -> dict[str, Any]:
        """Reserve two queries for one dispatch of kernel ``name`` and return its pass's
        ``timestamp_writes``. Raises whatever wgpu raises when a query set cannot be made."""
        tag = current_label(name)
        with self._lock:
            if self._used + 2 > self.SET_SIZE:
                self._sets.append(self._device.create_query_set(type="timestamp", count=self.SET_SIZE))
                self._used = 0
            index = self._used
            self._used += 2
            set_index = len(self._sets) - 1
            self.slots.append((tag, set_index, index))
            query_set = self._sets[set_index]
        return {
            "query_set": query_set,
            "beginning_of_pass_write_index": index,
            "end_of_pass_write_index": index + 1,
        }

    def read(self, ctx: Any, slots: Sequence[tuple[str, int, int]]) -> list[float | None]:
        """GPU seconds of each slot (``ctx`` is the WgpuContext; its recorded work is flushed first).

        One resolve per query set touched, in one command buffer, then one readback.
        """
        if not slots:
            return []
        ctx.flush()
        ranges: dict[int, tuple[int, int]] = {}
        for _, s, q in slots:
            lo, hi = ranges.get(s, (q, q + 2))
            ranges[s] = (min(lo, q), max(hi, q + 2))
        encoder = self._device.create_command_encoder()
        buffers: dict[int, tuple[Any, int]] = {}
        usage = wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
        for s, (lo, hi) in sorted(ranges.items()):
            buf = self._device.create_buffer(size=(hi - lo) * 8, usage=usage)
            encoder.resolve_query_set(self._sets[s], lo, hi - lo, buf, 0)
            buffers[s] = (buf, lo)
        ctx.queue.submit([encoder.finish()])
        order = sorted(buffers)
        raw = ctx.readback_many([(buffers[s][0], 0, buffers[s][0].size) for s in order])
        values = {s: memoryview(data).cast("Q") for s, data in zip(order, raw)}
        period_ns = timestamp_period(ctx.queue)
        out: list[float | None] = []
        for _, s, q in slots:
            lo = buffers[s][1]
            begin, end = values[s][q - lo], values[s][q - lo + 1]
            out.append((end - begin) * period_ns * 1e-9 if begin and end >= begin else None)
        return out


# ---------------------------------------------------------------------------------------------
# the profiling session (one while any Profile is active)
# ---------------------------------------------------------------------------------------------
def has_timestamp_hook(ctx: Any) -> bool:
    """Whether ``ctx`` exposes the profiling hook (a ``timestamp_sink`` attribute)."""
    return hasattr(ctx, "timestamp_sink")


_MISSING = object()


class Session:
    """Installs the GPU sink or the host-time dispatch wrapper on a context; collects events."""

    def __init__(self, ctx: Any, gpu: bool | None) -> None:
        self.ctx = ctx
        self.sink: TimestampSink | None = None
        self.host_events: list[tuple[str, float]] = []
        self._lock = threading.Lock()
        self._wrapper: Any = None
        self._shadowed: Any = _MISSING
        has_feature = "timestamp-query" in ctx.features
        hook = has_timestamp_hook(ctx)
        if gpu is False:
            self.note = "GPU time not requested (profile(gpu=False)): times are host recording times"
        elif not has_feature:
            self.note = ("GPU time unavailable: the adapter lacks the 'timestamp-query' feature; "
                         "times are host recording times")
        elif not hook:
            self.note = ("GPU time unavailable: this WgpuContext has no timestamp hook "
                         "(timestamp_sink, see gputensor/_backend/profiling.py); times are host recording times")
        else:
            self.note = "GPU time from timestamp queries, one compute pass per dispatch"
        self.gpu = bool(gpu is not False and has_feature and hook)
        if gpu is True and not self.gpu:
            raise RuntimeError(f"profile(gpu=True): {self.note}")

    def install(self) -> None:
        ctx = self.ctx
        if self.gpu:
            if getattr(ctx, "timestamp_sink", None) is not None:
                raise RuntimeError("another timestamp sink is installed on the context")
            self.sink = TimestampSink(ctx.device)
            ctx.timestamp_sink = self.sink
            return
        original = ctx.dispatch
        self._shadowed = vars(ctx).get("dispatch", _MISSING)  # an instance attribute we must restore
        events = self.host_events
        lock = self._lock
        clock = time.perf_counter

        def dispatch(name: str, *args: Any, **kwargs: Any) -> Any:
            t0 = clock()
            try:
                return original(name, *args, **kwargs)
            finally:
                elapsed = clock() - t0
                with lock:
                    events.append((current_label(name), elapsed))

        self._wrapper = dispatch
        ctx.dispatch = dispatch

    def uninstall(self) -> None:
        ctx = self.ctx
        if self.gpu:
            if getattr(ctx, "timestamp_sink", None) is self.sink:
                ctx.timestamp_sink = None
        elif vars(ctx).get("dispatch") is self._wrapper:
            if self._shadowed is _MISSING:
                del ctx.dispatch
            else:
                ctx.dispatch = self._shadowed

    def mark(self) -> int:
        """Position of the next event."""
        if self.gpu:
            assert self.sink is not None
            return len(self.sink.slots)
        with self._lock:
            return len(self.host_events)

    def events(self, start: int, stop: int) -> list[DispatchEvent]:
        """The events recorded between two marks (GPU mode: resolves their queries)."""
        if self.gpu:
            assert self.sink is not None
            slots = self.sink.slots[start:stop]
            times = self.sink.read(self.ctx, slots)
            return [DispatchEvent(tag, t, None) for (tag, _, _), t in zip(slots, times)]
        with self._lock:
            return [DispatchEvent(tag, None, t) for tag, t in self.host_events[start:stop]]


_session_lock = threading.Lock()
_session: Session | None = None
_depth = 0


def acquire(ctx: Any, gpu: bool | None) -> Session:
    """The active session, made and installed on ``ctx`` by the outermost caller. Raises
    RuntimeError when ``gpu`` is True and GPU timing is unavailable (or an outer session is
    host-time only)."""
    global _session, _depth
    with _session_lock:
        if _session is None:
            session = Session(ctx, gpu)
            session.install()
            _session = session
        elif gpu is True and not _session.gpu:
            raise RuntimeError("profile(gpu=True) inside a host-time profile")
        _depth += 1
        return _session


def release() -> None:
    """End one ``acquire``; the outermost release uninstalls the session."""
    global _session, _depth
    with _session_lock:
        _depth -= 1
        if _depth == 0 and _session is not None:
            _session.uninstall()
            _session = None
