"""Diagnostic (not a benchmark): why unique_values of 16M int32 takes 0.73 ms per call in one
process and 1.1-1.25 ms in another (benchmarks/RESULTS.md, session 4).

``python3 -m benchmarks.diag_unique [--small]``: batches of back-to-back unique_values calls
(the harness's pattern: one synchronize per batch), first in a fresh process, then after the
sort group's work (sort, stable argsort, cumulative_sum of 64M, as ``--only sort`` runs them),
then after a 2 s idle. Per phase: ms per call, submits and dispatches per call, the wall time
spent inside readback waits per call, the memory pool's hits and misses per call, and the GPU
time per kernel of one profiled call.
"""

from __future__ import annotations

import sys
import time

import numpy as np

SMALL = "--small" in sys.argv


def main() -> int:
    import gputensor as gt
    from gputensor import _dispatch

    be = _dispatch.backend()
    ctx = be.context
    print(be)
    n = (1 << 16) if SMALL else (1 << 24)
    rng = np.random.default_rng(0)
    xi = gt.asarray(rng.integers(0, n // 4, n).astype(np.int32))
    xf = gt.asarray(rng.uniform(-1, 1, n).astype(np.float32))
    xs = gt.asarray(rng.uniform(-1, 1, 4 * n).astype(np.float32))

    waited = [0.0]
    original = ctx.readback_many

    def timed_readback(regions):  # noqa: ANN001, ANN202
        t0 = time.perf_counter()
        try:
            return original(regions)
        finally:
            waited[0] += time.perf_counter() - t0

    ctx.readback_many = timed_readback
    pool = gt.get_default_memory_pool()

    def phase(title: str, calls: int = 38, batches: int = 5) -> None:
        keep = gt.unique_values(xi)  # warm
        gt.synchronize()
        per = []
        s0, d0 = ctx.stats["submits"], ctx.stats["dispatches"]
        w0 = waited[0]
        p0 = dict(getattr(pool, "stats", {}))
        for _ in range(batches):
            t0 = time.perf_counter()
            for _ in range(calls):
                keep = gt.unique_values(xi)
            gt.synchronize()
            per.append((time.perf_counter() - t0) / calls)
        total = calls * batches
        p1 = dict(getattr(pool, "stats", {}))
        pool_delta = {k: (p1[k] - p0.get(k, 0)) / total for k in p1 if isinstance(p1[k], (int, float))}
        print(f"{title:28s} ms/call {1e3 * float(np.median(per)):.3f} (batches {', '.join(f'{1e3 * p:.3f}' for p in per)}); "
              f"submits/call {(ctx.stats['submits'] - s0) / total:.2f}, dispatches/call "
              f"{(ctx.stats['dispatches'] - d0) / total:.2f}, in readback waits {1e3 * (waited[0] - w0) / total:.3f} ms/call, "
              f"pool/call {pool_delta}", flush=True)
        with gt.profile() as prof:
            keep = gt.unique_values(xi)
            gt.synchronize()
        print("    GPU (ms): " + ", ".join(f"{r.name} {1e3 * (r.gpu_total_s or 0):.3f}" for r in prof.records), flush=True)
        del keep

    phase("fresh process")
    for _ in range(40):
        a = gt.sort(xf)
        b = gt.argsort(xf, stable=True)
        c = gt.cumulative_sum(xs)
    gt.synchronize()
    del a, b, c
    phase("after sort/argsort/cumsum")
    time.sleep(2.0)
    phase("after 2 s idle")
    phase("again")
    return 0


if __name__ == "__main__":
    sys.exit(main())
