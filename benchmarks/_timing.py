"""How every benchmark and tool in ``benchmarks/`` times work (the one timing module).

A *call* is one invocation of the work being timed (``gt.add(a, b)``, a gemm on the backend
contract, ...). A *batch* is ``n`` calls recorded back to back followed by one synchronisation.
The result of every call of a batch is kept until that synchronisation returns (a lazy library
may skip work whose result is dropped), then released.

For each batch a :class:`Timer` reports, per call:

* ``host_s``: host time to record (gputensor) or enqueue (torch, cupy) the call: the loop of
  ``n`` calls, before the synchronisation;
* ``wall_s``: first call started to synchronisation returned, divided by ``n``: what a user's
  loop of such calls costs;
* ``gpu_s``: device time. torch and cupy: CUDA events around the batch (the same batch).
  gputensor: a *separate* profiled batch (:meth:`GputensorTimer.gpu_batch`) under
  ``gt.profile()``, whose timestamp queries time every dispatch in a compute pass of its own; the
  sum of the dispatches' GPU times divided by the calls. ``None`` where the adapter has no
  timestamp queries.

Clocks: an H200 idle for a second drops to its idle clocks, and work that leaves the device idle
between short bursts can stay there for hundreds of milliseconds; :func:`warm_clocks` keeps the
GPU saturated (torch float32 matmuls) for 0.1 s before every framework's timed batches.

The small helpers at the end (:func:`time_calls`, :func:`median_call_s`, :func:`host_per_call`,
:func:`gpu_profile`) are the same measurements for the scripts under ``benchmarks/tools/`` and
for the host-cost benchmark.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable
from typing import Any

#: Seconds of saturating GPU work before each framework's timed batches (:func:`warm_clocks`).
WARM_CLOCKS_S = 0.1
#: Most calls in one profiled gputensor batch (each dispatch gets two timestamp queries).
GPU_BATCH_MAX_CALLS = 64

Run = Callable[[int], Any]


@dataclasses.dataclass
class Batch:
    """Per-call seconds of one timed batch (``gpu_s`` None: not measured in this batch) and the
    counters that changed during it (gputensor: pipelines compiled, submits, dispatches)."""

    wall_s: float
    host_s: float
    gpu_s: float | None = None
    counters: dict[str, float] = dataclasses.field(default_factory=dict)


class Timer:
    """How to synchronise and time one framework."""

    name = ""

    def sync(self) -> None:
        raise NotImplementedError

    def batch(self, run: Run, n: int, start: int) -> Batch:
        """Time ``run(start) .. run(start + n - 1)`` recorded back to back, then one sync; every
        result is held until the sync has returned."""
        raise NotImplementedError

    def gpu_batch(self, run: Run, n: int, start: int) -> tuple[float | None, dict[str, float]]:
        """Device seconds per call and per kernel name per call, or (None, {}) when this
        framework's batches already carry ``gpu_s`` or its device cannot be timed."""
        return None, {}

    def cleanup(self) -> None:
        """Release cached memory after a case."""


class GputensorTimer(Timer):
    """gputensor: ``gt.synchronize()`` (materialises lazy arrays, then waits) and the wall clock;
    GPU time from a profiled batch (timestamp queries)."""

    name = "gputensor"

    def __init__(self) -> None:
        import gputensor as gt
        from gputensor._backend import get_backend

        self.gt = gt
        self.context = get_backend().context

    def _counters(self) -> dict[str, int]:
        stats = getattr(self.context, "stats", None)
        return dict(stats) if isinstance(stats, dict) else {}

    def sync(self) -> None:
        self.gt.synchronize()

    def batch(self, run: Run, n: int, start: int) -> Batch:
        before = self._counters()
        held: list[Any] = []
        t0 = time.perf_counter()
        for i in range(start, start + n):
            held.append(run(i))
        t1 = time.perf_counter()
        self.gt.synchronize()
        t2 = time.perf_counter()
        after = self._counters()
        del held
        counters = {k: float(after[k] - before[k]) for k in ("pipelines_compiled", "submits", "dispatches")
                    if k in after and k in before}
        return Batch(wall_s=(t2 - t0) / n, host_s=(t1 - t0) / n, counters=counters)

    def gpu_batch(self, run: Run, n: int, start: int) -> tuple[float | None, dict[str, float]]:
        n = max(1, min(n, GPU_BATCH_MAX_CALLS))
        held: list[Any] = []
        with self.gt.profile() as prof:
            for i in range(start, start + n):
                held.append(run(i))
        del held
        if not prof.gpu_timing:
            return None, {}
        per_kernel: dict[str, float] = {}
        for r in prof.records:
            if r.gpu_total_s is not None:
                per_kernel[r.name] = r.gpu_total_s / n
        if not per_kernel:  # no kernel dispatched (buffer copies only): not timed
            return None, {}
        return sum(per_kernel.values()), per_kernel

    def cleanup(self) -> None:
        """Return the memory pool's cached blocks to the device (as torch's ``empty_cache`` and
        cupy's ``free_all_blocks`` after a case), so every framework starts a case with an empty
        pool that its discarded batch warms."""
        self.gt.synchronize()
        self.gt.get_default_memory_pool().free_all_blocks()


class _CudaTimer(Timer):
    """torch and cupy: CUDA events around the enqueued batch, wall clock around it too."""

    def _events(self) -> tuple[Any, Any]:
        raise NotImplementedError

    def _elapsed_s(self, begin: Any, end: Any) -> float:
        raise NotImplementedError

    def batch(self, run: Run, n: int, start: int) -> Batch:
        begin, end = self._events()
        held: list[Any] = []
        self.sync()
        t0 = time.perf_counter()
        begin.record()
        for i in range(start, start + n):
            held.append(run(i))
        t1 = time.perf_counter()
        end.record()
        end.synchronize()
        t2 = time.perf_counter()
        del held
        return Batch(wall_s=(t2 - t0) / n, host_s=(t1 - t0) / n, gpu_s=self._elapsed_s(begin, end) / n)


class TorchTimer(_CudaTimer):
    name = "torch"

    def __init__(self, torch: Any) -> None:
        self.torch = torch

    def sync(self) -> None:
        self.torch.cuda.synchronize()

    def _events(self) -> tuple[Any, Any]:
        ev = self.torch.cuda.Event
        return ev(enable_timing=True), ev(enable_timing=True)

    def _elapsed_s(self, begin: Any, end: Any) -> float:
        return begin.elapsed_time(end) / 1e3

    def cleanup(self) -> None:
        self.torch.cuda.synchronize()
        self.torch.cuda.empty_cache()


class CupyTimer(_CudaTimer):
    name = "cupy"

    def __init__(self, cupy: Any) -> None:
        self.cupy = cupy

    def sync(self) -> None:
        self.cupy.cuda.Device().synchronize()

    def _events(self) -> tuple[Any, Any]:
        return self.cupy.cuda.Event(), self.cupy.cuda.Event()

    def _elapsed_s(self, begin: Any, end: Any) -> float:
        return self.cupy.cuda.get_elapsed_time(begin, end) / 1e3

    def cleanup(self) -> None:
        self.sync()
        self.cupy.get_default_memory_pool().free_all_blocks()
        self.cupy.get_default_pinned_memory_pool().free_all_blocks()


def cold_call(run: Run, sync: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds of the first call ``run(0)`` up to its sync (compilation, set-up), and its result."""
    sync()
    t0 = time.perf_counter()
    result = run(0)
    sync()
    return time.perf_counter() - t0, result


def estimate_call(run: Run, sync: Callable[[], Any], max_calls: int = 16, start: int = 1) -> float:
    """Seconds per call, estimated from one call and, when that is short (< 20 ms), from up to
    ``max_calls`` calls back to back (one call plus a wait overstates a call that pipelines with
    the next). Results are held until the sync."""
    t0 = time.perf_counter()
    held = [run(start)]
    sync()
    one = max(time.perf_counter() - t0, 1e-7)
    if one < 0.02 and max_calls > 1:
        k = int(min(16, max_calls, max(2, 0.02 / one)))
        t0 = time.perf_counter()
        held = [run(start + 1 + i) for i in range(k)]
        sync()
        one = max((time.perf_counter() - t0) / k, 1e-7)
    del held
    return one


class ClockWarmer:
    """:meth:`warm` keeps the GPU saturated for ``seconds`` with torch float32 matmuls, so that the
    batches timed next start at boost clocks whatever ran before. An H200 idle for a second
    drops to 345 MHz; unique of 16M int32 took 1.5 instead of 0.7 ms per call for its first 190
    calls after a 2 s idle. Without torch (no CUDA) it does nothing."""

    def __init__(self, torch: Any, seconds: float = WARM_CLOCKS_S) -> None:
        self.torch = torch
        self.seconds = seconds
        self._operands: tuple[Any, Any] | None = None

    def warm(self) -> None:
        torch = self.torch
        if torch is None or self.seconds <= 0:
            return
        if self._operands is None:
            a = torch.rand(2048, 2048, device="cuda")
            self._operands = (a, torch.empty_like(a))
        a, out = self._operands
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < self.seconds:
            for _ in range(8):
                torch.matmul(a, a, out=out)
            torch.cuda.synchronize()


# ---------------------------------------------------------------------------------------------
# helpers for the tools and the host-cost benchmark
# ---------------------------------------------------------------------------------------------
def time_calls(fn: Callable[[], Any], sync: Callable[[], Any], reps: int = 20, repeats: int = 3) -> float:
    """Best over ``repeats`` batches of the wall seconds per call of ``reps`` calls of ``fn``
    recorded back to back and one ``sync`` (results held until the sync; one warm-up call)."""
    fn()
    sync()
    best = float("inf")
    for _ in range(repeats):
        held = []
        t0 = time.perf_counter()
        for _ in range(reps):
            held.append(fn())
        sync()
        best = min(best, (time.perf_counter() - t0) / reps)
        del held
    return best


def median_call_s(fn: Callable[[], Any], reps: int) -> float:
    """Median wall seconds of ``reps`` single calls of ``fn`` (each timed on its own)."""
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def host_per_call(fn: Callable[[], Any], sync: Callable[[], Any], calls: int, batches: int = 5,
                  statistic: Callable[[list[float]], float] = statistics.median) -> float:
    """``statistic`` (median; ``min`` on a shared, noisy host) over ``batches`` of the host seconds
    per call spent recording ``calls`` calls of ``fn`` back to back (results held; ``sync`` after
    each batch, outside the timed part)."""
    samples = []
    for _ in range(batches):
        held = []
        t0 = time.perf_counter()
        for _ in range(calls):
            held.append(fn())
        samples.append((time.perf_counter() - t0) / calls)
        sync()
        del held
    return statistic(samples)


def gpu_profile(fn: Callable[[], Any], calls: int = 1) -> tuple[float | None, dict[str, float], float]:
    """GPU seconds per call of ``fn`` under ``gt.profile()`` (None without timestamp queries),
    GPU seconds per kernel name per call, and the profiled block's wall seconds per call."""
    import gputensor as gt

    held = []
    with gt.profile() as prof:
        for _ in range(calls):
            held.append(fn())
    del held
    if not prof.gpu_timing:
        return None, {}, prof.wall_s / calls
    per_kernel = {r.name: r.gpu_total_s / calls for r in prof.records if r.gpu_total_s is not None}
    return sum(per_kernel.values()), per_kernel, prof.wall_s / calls
