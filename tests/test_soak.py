"""A bounded soak: several threads run a random mix of operations for a fixed time, every result
checked against NumPy, with the memory pool's and the process's memory growth bounded.

The mix: fused elementwise chains, reductions, sorts and argsorts, matmul, scatters with
duplicate indices, an ElementwiseKernel and a RawKernel, single and batched readbacks, and
create/free churn of mixed sizes. ``SOAK_SECONDS`` (default 10: the CI run) and ``SOAK_THREADS``
(default 4) set the load; ``make soak`` runs it for 300 s (``make soak SOAK_SECONDS=1800``).
"""

from __future__ import annotations

import gc
import os
import threading
import time

import numpy as np

import gputensor as gt

from _compare import tol

SOAK_SECONDS = float(os.environ.get("SOAK_SECONDS", "10"))
SOAK_THREADS = int(os.environ.get("SOAK_THREADS", "4"))
#: Growth allowed after the warm-up: the pool (bytes it holds) and the process (resident set).
POOL_GROWTH = 64 << 20
RSS_GROWTH = 256 << 20

_SQUARED_DIFF = gt.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y);", "soak_sqdiff")
_SCALE = gt.RawKernel("""
struct P { n: u32, a: f32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: P;
@compute @workgroup_size(64)
fn scale(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < p.n) { y[g.x] = p.a * x[g.x]; }
}
""", "scale")


def _rss() -> int:
    """Resident set size of this process in bytes (0 where /proc is missing)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _step(rng: np.random.Generator, kind: int) -> None:
    """One checked operation of the mix."""
    n = int(rng.integers(1, 5000))
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    ga, gb = gt.asarray(a), gt.asarray(b)
    if kind == 0:  # a fused chain
        got = gt.asnumpy(gt.exp(ga * 0.5) + gb * gb - 1.0)
        np.testing.assert_allclose(got, np.exp(a * 0.5) + b * b - 1.0, **tol("float32", "chained_short"))
    elif kind == 1:  # reductions
        assert abs(float(gt.sum(ga)) - float(a.astype(np.float64).sum())) <= 1e-3 * (1 + np.abs(a).sum())
        assert float(gt.max(gb)) == float(b.max())
    elif kind == 2:  # sorts
        keys = rng.integers(-1000, 1000, n).astype(np.int32)
        np.testing.assert_array_equal(gt.asnumpy(gt.sort(gt.asarray(keys))), np.sort(keys))
        order = gt.asnumpy(gt.argsort(ga, stable=True))
        np.testing.assert_array_equal(order, np.argsort(a, kind="stable"))
    elif kind == 3:  # matmul
        m, k = int(rng.integers(1, 40)), int(rng.integers(1, 40))
        x = rng.standard_normal((m, k)).astype(np.float32)
        y = rng.standard_normal((k, 7)).astype(np.float32)
        np.testing.assert_allclose(gt.asnumpy(gt.asarray(x) @ gt.asarray(y)), x @ y, **tol("float32", "chained_abs"))
    elif kind == 4:  # a scatter with duplicates: the last write wins
        idx = rng.integers(-n, n, 3 * n)
        vals = rng.standard_normal(3 * n).astype(np.float32)
        expect = a.copy()
        expect[idx] = vals
        ga[gt.asarray(idx)] = gt.asarray(vals)
        np.testing.assert_array_equal(gt.asnumpy(ga), expect)
    elif kind == 5:  # user kernels
        np.testing.assert_allclose(gt.asnumpy(_SQUARED_DIFF(ga, gb)), (a - b) * (a - b), **tol("float32", "elementwise_abs"))
        out = gt.empty(n, dtype=gt.float32)
        _SCALE(-(-n // 64), (ga, out), params=(n, 3.0))
        np.testing.assert_array_equal(gt.asnumpy(out), np.float32(3.0) * a)
    else:  # batched readback and pool churn of mixed sizes
        arrays = [gt.full((int(rng.integers(1, 1 << 16)),), float(j), dtype=gt.float32) for j in range(4)]
        for j, host in enumerate(gt.asnumpy_many(*arrays)):
            assert host.size and (host == j).all()


def test_soak() -> None:
    """SOAK_THREADS threads x SOAK_SECONDS of the mix: every result right, memory bounded."""
    pool = gt.get_default_memory_pool()
    errors: list[BaseException] = []
    counts = [0] * SOAK_THREADS
    warm = threading.Barrier(SOAK_THREADS + 1)
    go = threading.Event()
    deadline = [0.0]

    def worker(t: int) -> None:
        rng = np.random.default_rng(1000 + t)
        try:
            for kind in range(7):  # warm-up: every kind once (compiles the pipelines)
                _step(rng, kind)
            warm.wait()
            go.wait()
            while time.perf_counter() < deadline[0]:
                _step(rng, int(rng.integers(0, 7)))
                counts[t] += 1
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
            warm.abort()

    threads = [threading.Thread(target=worker, args=(t,), name=f"soak-{t}") for t in range(SOAK_THREADS)]
    for thread in threads:
        thread.start()
    try:
        warm.wait(timeout=300)
    except threading.BrokenBarrierError:
        pass
    gc.collect()
    pool_start, rss_start = pool.total_bytes(), _rss()
    deadline[0] = time.perf_counter() + SOAK_SECONDS
    go.set()
    for thread in threads:
        thread.join(timeout=SOAK_SECONDS + 300)
    assert not any(thread.is_alive() for thread in threads), "a soak thread hangs"
    if errors:
        raise errors[0]
    gc.collect()
    gt.synchronize()
    pool_growth, rss_growth = pool.total_bytes() - pool_start, _rss() - rss_start
    print(f"soak: {SOAK_THREADS} threads x {SOAK_SECONDS:.0f} s, {sum(counts)} checked operations, "
          f"pool {pool_start >> 20} -> {pool.total_bytes() >> 20} MiB, RSS growth {rss_growth >> 20} MiB")
    assert all(counts), f"a thread made no progress: {counts}"
    assert pool_growth <= POOL_GROWTH, f"the pool grew by {pool_growth} bytes"
    assert rss_growth <= RSS_GROWTH, f"the process grew by {rss_growth} bytes"
