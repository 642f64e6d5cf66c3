"""Diagnostic (not a benchmark): where the time of row calls goes, host or device.

``python3 -m benchmarks.tools.host_rows [--quick]``: for ``gt.nn`` softmax, log_softmax,
layer_norm and rms_norm on (4096, 1024) float32 and the softmax, log-softmax, logsumexp and
layer norm written with ``gt`` ops (``benchmarks/api.py``, the row-fusion path) on (8192, 4096)
(``--quick``: small shapes), batches of calls with every result held, the best of 3, per call:

* ``host us``: the loop of calls (what recording costs), and of that the time inside
  ``WgpuContext.flush`` (the submits) and the submits and bind groups created per call;
* ``wall us``: the loop plus the final synchronisation;
* ``gpu-bound us`` (gt.nn only): the same kept launch (``RowCall.launch``) replayed into a
  ring of 8 preallocated outputs, whose host cost is a few microseconds, so that the wall time
  per call is the device's time per call back to back; then the same for each value of the
  ``rows_units`` knob (the launch shape).

A wall time near the host time says the host is the bound; a wall time near ``gpu-bound``
says the device is.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import gputensor as gt
from gputensor._array_object import GpuArray
from gputensor._backend import config, ops_rows
from gputensor.nn import _rows

from .. import api

QUICK = "--quick" in sys.argv


class _FlushClock:
    """Seconds spent inside the context's ``flush`` while installed."""

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.seconds = 0.0
        self.inner = ctx.flush

    def __enter__(self) -> _FlushClock:
        inner = self.inner

        def flush() -> None:
            t0 = time.perf_counter()
            try:
                inner()
            finally:
                self.seconds += time.perf_counter() - t0

        self.ctx.flush = flush
        return self

    def __exit__(self, *exc: object) -> None:
        del self.ctx.flush


def batch(fn: Callable[[], Any], n: int, ctx: Any) -> dict[str, float]:
    """One batch of ``n`` calls (results held): per call host, wall and flush µs, submits and
    bind groups."""
    gt.synchronize()
    before = dict(ctx.stats)
    held = []
    with _FlushClock(ctx) as clock:
        t0 = time.perf_counter()
        for _ in range(n):
            held.append(fn())
        t1 = time.perf_counter()
        flush_s = clock.seconds
        gt.synchronize()
        t2 = time.perf_counter()
    del held
    return {"host": (t1 - t0) / n * 1e6, "flush": flush_s / n * 1e6, "wall": (t2 - t0) / n * 1e6,
            "submits": (ctx.stats.get("submits", 0) - before.get("submits", 0)) / n,
            "groups": (ctx.stats.get("bind_groups_created", 0) - before.get("bind_groups_created", 0)) / n}


def best(fn: Callable[[], Any], n: int, ctx: Any, rounds: int = 3) -> dict[str, float]:
    """The batch of least wall time among ``rounds`` (after one discarded batch)."""
    batch(fn, n, ctx)
    return min((batch(fn, n, ctx) for _ in range(rounds)), key=lambda r: r["wall"])


def gpu_bound(op: str, x: GpuArray, n: int, weight: GpuArray | None = None, bias: GpuArray | None = None,
              eps: float = 1e-5) -> float:
    """Wall µs per call of ``n`` replays of the kept gt.nn launch of ``op`` on ``x`` into a ring
    of 8 preallocated outputs (the call must have run once)."""
    backend = gt._dispatch.backend()
    knobs = ops_rows.settings()
    kept = next((k for k in _rows._KEPT.of(backend).values()
                 if k.op == op and k.shape == x.shape and k.call.settings == knobs), None)
    if kept is None:
        return float("nan")
    outs = [GpuArray._empty(kept.shape, kept.dtype, zero=False) for _ in range(8)]
    w = None if weight is None else weight._ptr
    b = None if bias is None else bias._ptr
    result = float("inf")
    for _ in range(4):
        gt.synchronize()
        t0 = time.perf_counter()
        for i in range(n):
            kept.call.launch(backend, x._ptr, outs[i % 8]._storage.ptr, w, b, eps)
        gt.synchronize()
        result = min(result, (time.perf_counter() - t0) / n * 1e6)
    return result


def main() -> int:
    ctx = gt._dispatch.backend()._ctx
    rng = np.random.default_rng(0)
    rows, n = (64, 256) if QUICK else (4096, 1024)
    x = gt.asarray(rng.standard_normal((rows, n), dtype=np.float32))
    w = gt.asarray(rng.standard_normal(n, dtype=np.float32))
    b = gt.asarray(rng.standard_normal(n, dtype=np.float32))
    calls = 20 if QUICK else 300
    print(f"adapter: {gt._dispatch.adapter_description()}")
    header = (f"{'case':<34} {'host us':>8} {'flush us':>9} {'wall us':>8} {'submits':>8} {'groups':>7} "
              f"{'gpu-bound':>10}")
    lines = [header]
    nn_cases = [("softmax", lambda: gt.nn.softmax(x), {}), ("log_softmax", lambda: gt.nn.log_softmax(x), {}),
                ("layer_norm", lambda: gt.nn.layer_norm(x, (n,), w, b), {"weight": w, "bias": b}),
                ("rms_norm", lambda: gt.nn.rms_norm(x, (n,), w, eps=1e-6), {"weight": w, "eps": 1e-6})]
    for op, fn, extra in nn_cases:
        fn()
        r = best(fn, calls, ctx)
        g = gpu_bound(op, x, calls, **extra)
        lines.append(f"{'nn.' + op + f'.f32.{rows}x{n}':<34} {r['host']:8.1f} {r['flush']:9.1f} {r['wall']:8.1f} "
                     f"{r['submits']:8.2f} {r['groups']:7.2f} {g:10.1f}")
        print(lines[-1], flush=True)
    units = []
    for op, fn, extra in nn_cases:
        per = []
        for u in (2, 4, 8, 16):
            with config.override(rows_units=u):
                fn()
                per.append(f"{u}: {gpu_bound(op, x, calls, **extra):.1f}")
        units.append(f"gpu-bound us by rows_units, nn.{op}: " + ", ".join(per))
        print(units[-1], flush=True)
    lines += units
    del x
    rows, n = (64, 256) if QUICK else (8192, 4096)
    x = gt.asarray(rng.uniform(-1, 1, (rows, n)).astype(np.float32))
    w = gt.asarray(rng.uniform(0.5, 1.5, n).astype(np.float32))
    b = gt.asarray(rng.uniform(-1, 1, n).astype(np.float32))
    calls = 20 if QUICK else 40
    patterns = (("softmax", lambda: api._gt_softmax(gt, x)), ("log_softmax", lambda: api._gt_log_softmax(gt, x)),
                ("logsumexp", lambda: api._gt_logsumexp(gt, x)), ("layernorm", lambda: api._gt_layernorm(gt, x, w, b)))
    for name, fn in patterns:
        fn()
        r = best(fn, calls, ctx)
        lines.append(f"{'gt-ops.' + name + f'.f32.{rows}x{n}':<34} {r['host']:8.1f} {r['flush']:9.1f} "
                     f"{r['wall']:8.1f} {r['submits']:8.2f} {r['groups']:7.2f} {'-':>10}")
        print(lines[-1], flush=True)
    gt.get_default_memory_pool().free_all_blocks()
    print("\n".join(["", "host_rows summary:"] + lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
