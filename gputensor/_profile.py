"""Optional per-kernel timing: ``gputensor.profile()``.

Usage::

    with gt.profile() as prof:
        y = my_kernel(x)
        z = gt.exp(y) * 2
    print(prof)            # a table: kernel, count, total and mean time, share
    prof.records           # one KernelStats per kernel name, largest total first
    prof.events            # one DispatchEvent per recorded dispatch, in order

Two modes, chosen when the block is entered:

* **GPU time** (``prof.gpu_timing`` is True): the adapter has the ``timestamp-query`` feature and the
  context exposes the profiling hook (``WgpuContext.timestamp_sink``, see below). While a profile
  is active every dispatch is recorded in a compute pass of its own whose beginning and end write
  timestamps into a query set; on exit the queries are resolved and read back, and each dispatch's
  GPU time is end - begin (times the queue's timestamp period). One pass per dispatch costs a
  little on the device; it only happens while profiling.
* **Host time only** (``prof.gpu_timing`` is False, ``prof.note`` says why): the context's
  ``dispatch`` is wrapped for the duration of the block (an instance attribute, removed on exit)
  and each dispatch's *host* recording time is measured. That counts kernels and shows the Python
  and driver cost per kernel, not how long the device ran them.

Both modes record dispatches from every thread while the profile is active. Profiles nest (an
inner block reports its own dispatches; the outer one reports all of them; inner blocks use the
outermost block's mode). Kernel names are the context's kernel names (``elementwise``, ``gemm``,
...) unless the dispatch was recorded inside ``with label("name"):`` (user kernels label their
dispatches with their own names).

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

__all__ = ["profile", "Profile", "KernelStats", "DispatchEvent", "TimestampSink", "label", "current_label"]

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


@dataclass(frozen=True)
class KernelStats:
    """Totals of one kernel name over a profile: dispatch count, total and mean GPU seconds
    (None in host mode), total and mean host recording seconds (None in GPU mode)."""

    name: str
    count: int
    gpu_total_s: float | None
    gpu_mean_s: float | None
    host_total_s: float | None
    host_mean_s: float | None

    @property
    def total_s(self) -> float:
        """GPU total when known, else host total."""
        return self.gpu_total_s if self.gpu_total_s is not None else (self.host_total_s or 0.0)


# ---------------------------------------------------------------------------------------------
# the timestamp sink (the side of the context hook that lives here)
# ---------------------------------------------------------------------------------------------
def timestamp_period(queue: Any) -> float:
    """Nanoseconds per timestamp tick of ``queue`` (wgpu-native's ``wgpuQueueGetTimestampPeriod``;
    1.0 when it cannot be asked, which is what wgpu-native reports on Vulkan adapters seen so far)."""
    try:
        from wgpu.backends.wgpu_native._ffi import lib  # private to wgpu-py; optional

        period = float(lib.wgpuQueueGetTimestampPeriod(queue._internal))
        return period if period > 0 else 1.0
    except Exception:  # noqa: BLE001 - any failure: assume nanoseconds
        return 1.0


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
        import wgpu

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


class _Session:
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
                         "(timestamp_sink, see gputensor/_profile.py); times are host recording times")
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
_session: _Session | None = None
_depth = 0


def _acquire(ctx: Any, gpu: bool | None) -> _Session:
    global _session, _depth
    with _session_lock:
        if _session is None:
            session = _Session(ctx, gpu)
            session.install()
            _session = session
        elif gpu is True and not _session.gpu:
            raise RuntimeError("profile(gpu=True) inside a host-time profile")
        _depth += 1
        return _session


def _release() -> None:
    global _session, _depth
    with _session_lock:
        _depth -= 1
        if _depth == 0 and _session is not None:
            _session.uninstall()
            _session = None


# ---------------------------------------------------------------------------------------------
# the public context manager
# ---------------------------------------------------------------------------------------------
class Profile:
    """A profiling block (``with gt.profile() as prof:``); results are available after it exits.

    Attributes after exit: ``records`` (list of :class:`KernelStats`, largest total first),
    ``events`` (list of :class:`DispatchEvent` in recording order), ``gpu_timing`` (bool),
    ``note`` (what the times are), ``wall_s`` (wall-clock seconds of the block including the final
    wait for the device), ``adapter`` (description). ``str(prof)`` / ``prof.table()`` is a
    printable table. Reading ``records``/``events`` inside the block raises RuntimeError.
    """

    def __init__(self, *, gpu: bool | None = None, synchronize: bool = True) -> None:
        self._gpu_request = gpu
        self._synchronize = synchronize
        self._session: _Session | None = None
        self._start = 0
        self._t0 = 0.0
        self._events: list[DispatchEvent] | None = None
        self._records: list[KernelStats] | None = None
        self.gpu_timing = False
        self.note = ""
        self.wall_s = 0.0
        self.adapter = ""

    def __enter__(self) -> "Profile":
        from ._backend import get_backend

        ctx = get_backend().context
        if self._synchronize:
            from . import _fusion

            _fusion.materialize_all()  # pending lazy work issued before the block runs now
            ctx.synchronize()  # earlier work does not count against the block's wall time
        self._session = _acquire(ctx, self._gpu_request)
        self.gpu_timing = self._session.gpu
        self.note = self._session.note
        self.adapter = str(ctx.adapter_info.get("device", "?"))
        self._start = self._session.mark()
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        session = self._session
        assert session is not None
        try:
            if self._synchronize:
                from . import _fusion

                _fusion.materialize_all()  # lazy work issued inside the block is counted
            stop = session.mark()
            if self._synchronize:
                session.ctx.synchronize()
            self.wall_s = time.perf_counter() - self._t0
            self._events = session.events(self._start, stop)
        finally:
            _release()
            self._session = None
        self._records = _summarise(self._events)

    # ---- results ---------------------------------------------------------------------------
    def _done(self) -> None:
        if self._records is None:
            raise RuntimeError("profile results are available after the `with gt.profile()` block exits")

    @property
    def records(self) -> list[KernelStats]:
        """Per-kernel totals, largest total first."""
        self._done()
        assert self._records is not None
        return list(self._records)

    @property
    def events(self) -> list[DispatchEvent]:
        """Every recorded dispatch, in order."""
        self._done()
        assert self._events is not None
        return list(self._events)

    def table(self) -> str:
        """The records as a printable table."""
        self._done()
        assert self._records is not None
        kind = "GPU" if self.gpu_timing else "host"
        width = max([len("kernel")] + [len(r.name) for r in self._records])
        total = sum(r.total_s for r in self._records)
        lines = [
            f"gputensor profile on {self.adapter}: {sum(r.count for r in self._records)} dispatches, "
            f"wall {self.wall_s * 1e3:.3f} ms",
            self.note,
            f"{'kernel':<{width}}  {'count':>7}  {kind + ' total (ms)':>16}  "
            f"{kind + ' mean (us)':>15}  {'share':>6}",
        ]
        for r in self._records:
            mean = r.gpu_mean_s if self.gpu_timing else r.host_mean_s
            tot = r.total_s
            share = 100.0 * tot / total if total > 0 else 0.0
            mean_text = "n/a" if mean is None else f"{mean * 1e6:.1f}"
            lines.append(f"{r.name:<{width}}  {r.count:>7}  {tot * 1e3:>16.3f}  {mean_text:>15}  {share:>5.1f}%")
        lines.append(f"{'total':<{width}}  {sum(r.count for r in self._records):>7}  {total * 1e3:>16.3f}")
        return "\n".join(lines)

    def __str__(self) -> str:
        if self._records is None:
            return "<gputensor profile (running)>"
        return self.table()

    def __repr__(self) -> str:
        if self._records is None:
            return "Profile(running)"
        return f"Profile(gpu_timing={self.gpu_timing}, kernels={len(self._records)}, wall_s={self.wall_s:.6f})"


def _summarise(events: Sequence[DispatchEvent]) -> list[KernelStats]:
    groups: dict[str, list[DispatchEvent]] = {}
    for ev in events:
        groups.setdefault(ev.name, []).append(ev)
    records = []
    for name, evs in groups.items():
        gpu = [e.gpu_s for e in evs if e.gpu_s is not None]
        host = [e.host_s for e in evs if e.host_s is not None]
        records.append(KernelStats(
            name=name,
            count=len(evs),
            gpu_total_s=sum(gpu) if gpu else None,
            gpu_mean_s=sum(gpu) / len(gpu) if gpu else None,
            host_total_s=sum(host) if host else None,
            host_mean_s=sum(host) / len(host) if host else None,
        ))
    records.sort(key=lambda r: (-r.total_s, r.name))
    return records


def profile(*, gpu: bool | None = None, synchronize: bool = True) -> Profile:
    """A context manager that times every kernel dispatched inside it (see the module docstring).

    ``gpu``: None picks GPU timing when the adapter has ``timestamp-query`` and the context has the
    hook, else host times; False forces host times; True requires GPU timing (RuntimeError on
    entering the block when unavailable). ``synchronize``: wait for earlier device work before the
    block and for the block's work after it, so that ``wall_s`` covers exactly the block.
    """
    return Profile(gpu=gpu, synchronize=synchronize)
