"""Thread safety of the execution engine: operations issued from several Python threads at once
give correct results; the context lock is never held across a fence wait.

Each worker thread owns its arrays and runs a loop of elementwise chains, reductions, scalar
readbacks, batched readbacks and array creation/destruction (memory-pool churn), checking every
result against NumPy. The threads start together (a barrier), so their recordings interleave in
the one shared command encoder and their frees and reuses interleave in the one pool.
"""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import gputensor as gt
from gputensor._backend import UnaryOp, get_backend
from gputensor._backend import implementation

from _compare import tol

N_THREADS = 8


@pytest.fixture(scope="module")
def backend():
    return get_backend()


def _run_threads(target, n: int = N_THREADS, timeout: float = 120.0) -> None:
    errors: list[BaseException] = []
    barrier = threading.Barrier(n)

    def wrap(k: int) -> None:
        try:
            barrier.wait()
            target(k)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=wrap, args=(k,), name=f"worker-{k}") for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a worker thread hangs (deadlock?)"
    if errors:
        raise errors[0]


@pytest.mark.parametrize("wait", ["adapter default", "spin"])
def test_threads_elementwise_reductions_readbacks(backend, monkeypatch: pytest.MonkeyPatch, wait: str) -> None:
    """Mixed work from 8 threads, with the adapter's wait style and with spin-polled mappings
    (the hardware default: callbacks then fire in whichever thread polls)."""
    if wait == "spin":
        from gputensor._backend import transfers as transfers_mod
        from gputensor._backend.mapping import Mapper

        ctx = backend.context
        gt.synchronize()
        mapper = Mapper.load(ctx.device, spin=True)  # (None on Dawn: its mappings have one style)
        assert (mapper is not None) == (implementation.native_api() is not None)
        monkeypatch.setattr(ctx, "_mapper", mapper)
        monkeypatch.setattr(ctx, "_upload_staging", transfers_mod._UploadStaging(ctx.device, mapper))

    def worker(k: int) -> None:
        rng = np.random.default_rng(100 + k)
        n = 256 + 97 * k  # every thread its own sizes (and pool bins)
        xs = rng.uniform(-1, 1, n).astype(np.float32)
        ys = rng.uniform(0.5, 2, n).astype(np.float32)
        x, y = gt.asarray(xs), gt.asarray(ys)
        for it in range(12):
            c = 0.25 * (k + 1) + it
            z = gt.exp(x) * y + c  # a chain of three elementwise ops
            ref = np.exp(xs.astype(np.float64)) * ys + c
            s = gt.sum(z)  # a reduction
            m = gt.max(gt.abs(x - y))
            got_s = float(s)  # scalar readback
            assert got_s == pytest.approx(float(ref.sum()), rel=tol("float32", "sum_scalar")["rtol"]), (k, it)
            assert float(m) == pytest.approx(float(np.max(np.abs(xs - ys))), rel=tol("float32", "elementwise")["rtol"])
            assert bool(gt.all(y > 0))
            zh, mh = gt.asnumpy_many(z, x[::2])  # batched readback
            np.testing.assert_allclose(zh, ref, **tol("float32", "chained_threads"))
            np.testing.assert_array_equal(mh, xs[::2])
            tmp = [gt.empty((int(rng.integers(1, 5000)),)) for _ in range(4)]  # pool churn
            del tmp
            x = gt.asarray(xs) if it % 3 == 0 else x  # re-upload: a write between recordings
        assert int(gt.sum(gt.ones((n,), dtype=gt.int32))) == n

    _run_threads(worker)
    gt.synchronize()
    if wait == "spin":
        backend.context._upload_staging.clear()


def test_threads_backend_level_interleaving(backend) -> None:
    """Raw backend calls from many threads: each thread's dependent sequence stays ordered."""
    def worker(k: int) -> None:
        n = 1024
        data = np.full(n, 1.0 + k, np.float32)
        a = backend.alloc(4 * n, zero=False)
        b = backend.alloc(4 * n, zero=False)
        try:
            backend.copy_htod(a, data)
            for it in range(30):
                backend.unary(UnaryOp.SQRT, a, b, n)  # b = sqrt(a)
                backend.unary(UnaryOp.SQUARE, b, a, n)  # a = b * b (back to the start)
                if it % 10 == 9:
                    out = np.empty(n, np.float32)
                    backend.copy_dtoh(out, a)
                    np.testing.assert_allclose(out, data, **tol("float32", "sqrt_square_round_trips"))
        finally:
            backend.free(a)
            backend.free(b)

    _run_threads(worker)


def test_threads_synchronize_and_pool_stats() -> None:
    pool = gt.get_default_memory_pool()

    def worker(k: int) -> None:
        for it in range(20):
            x = gt.full((100 + k,), float(it))
            if it % 4 == 0:
                gt.synchronize()
            pool.used_bytes()
            pool.n_free_blocks()
            assert float(gt.sum(x)) == pytest.approx(float(it) * (100 + k))
            del x

    _run_threads(worker)
    gc.collect()
    assert pool.total_bytes() >= pool.used_bytes() >= 0


def test_lock_not_held_while_waiting(backend, monkeypatch: pytest.MonkeyPatch) -> None:
    """While one thread waits for a readback's fence, another can take the context lock (i.e.
    record work): the wait happens outside the lock."""
    ctx = backend.context
    seen: list[bool] = []
    original = ctx._wait

    def wait() -> None:
        acquired = []

        def probe() -> None:
            ok = ctx._lock.acquire(timeout=5)
            acquired.append(ok)
            if ok:
                ctx._lock.release()

        t = threading.Thread(target=probe)
        t.start()
        t.join(10)
        seen.append(bool(acquired and acquired[0]))
        original()

    monkeypatch.setattr(ctx, "_wait", wait)
    x = gt.asarray(np.arange(10, dtype=np.float32))
    assert float(gt.sum(x)) == 45.0
    monkeypatch.undo()
    assert seen and all(seen)


def test_finalizer_free_during_alloc_does_not_deadlock(backend) -> None:
    """A GpuArray collected by the cyclic GC while another allocation holds the pool lock (a
    finalizer inside malloc) must not deadlock: its free is deferred."""
    pool = backend.memory_pool

    class Cycle:
        pass

    for _ in range(20):
        c = Cycle()
        c.me = c  # garbage only the cyclic collector frees
        c.arr = gt.empty((1000,))
        del c
        with pool._lock:
            gc.collect()  # runs the finalizer -> backend.free -> pool.free while the lock is held
        assert pool.n_free_blocks() >= 1
    x = gt.empty((1000,))
    assert x.shape == (1000,)


def test_threads_fused_chains_with_concurrent_write_hazards(backend) -> None:
    """Fused chains from several threads at once (lazy arrays registered without a lock) while
    the same threads write into arrays that their own lazy arrays read (write-hazard flushes,
    which scan every thread's lazy arrays) and drop thousands of lazy arrays (registry sweeps):
    every value is the one its operands had when it was made."""
    previous = gt.set_fusion(True)
    shared_n = np.linspace(-1, 1, 300).astype(np.float32)
    shared = gt.asarray(shared_n)  # read by every thread, never written

    def worker(k: int) -> None:
        rng = np.random.default_rng(200 + k)
        own_n = rng.uniform(-1, 1, 300).astype(np.float32)
        own = gt.asarray(own_n)
        for it in range(30):
            y = shared
            y_n = shared_n.copy()
            for j in range(40):  # a chain crossing no bound, and many dead intermediates
                y = y * 0.5 + own
                y_n = (y_n * np.float32(0.5) + own_n).astype(np.float32)
            z = own * float(it)  # a reader of own's storage
            z_n = own_n * np.float32(it)
            own_n = (own_n + np.float32(1)).astype(np.float32)
            own += 1.0  # the write: z and y (readers of own) are computed first
            np.testing.assert_allclose(gt.asnumpy(y), y_n, **tol("float32", "accumulated_abs"))
            np.testing.assert_array_equal(gt.asnumpy(z), z_n)

    import sys

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # threads switch inside operations, not only between them
    try:
        _run_threads(worker, n=4)
    finally:
        sys.setswitchinterval(interval)
        gt.set_fusion(previous)


@pytest.mark.parametrize("reader", ["get", "kernel"])
def test_pending_statistic_read_while_another_thread_resolves(monkeypatch: pytest.MonkeyPatch, reader: str) -> None:
    """A pending row statistic (``sum(..., keepdims=True)`` of a lazy chain) that one thread is
    computing is read by another thread meanwhile (as a dask worker pickles a result while its
    task thread computes): the reader waits for the reduction to be recorded and sees its
    values, never the storage's unwritten bytes."""
    from gputensor import _fusion, _fusion_rows

    host = np.random.default_rng(11).standard_normal((16, 48)).astype(np.float32)
    want = (np.exp(host * 0.5) - 1.0).sum(axis=0, keepdims=True)
    s = gt.sum(gt.exp(gt.asarray(host) * 0.5) - 1.0, axis=0, keepdims=True)
    assert _fusion.pending_record(s._storage) is not None, "not a pending statistic"
    started, release = threading.Event(), threading.Event()
    resolve = _fusion_rows._RowStat.resolve

    def slow_resolve(self, storage):  # the resolving thread stops before recording the reduction
        started.set()
        release.wait(10)
        return resolve(self, storage)

    monkeypatch.setattr(_fusion_rows._RowStat, "resolve", slow_resolve)
    results: dict[str, np.ndarray] = {}
    first = threading.Thread(target=lambda: results.setdefault("first", s.get()))
    first.start()
    assert started.wait(10)
    got: dict[str, np.ndarray] = {}

    def read() -> None:
        got["second"] = (s + 0.0).get() if reader == "kernel" else s.get()

    second = threading.Thread(target=read)
    second.start()
    second.join(0.3)  # it must wait for the first thread's recording
    assert second.is_alive(), "the second reader did not wait for the statistic"
    release.set()
    first.join(30)
    second.join(30)
    np.testing.assert_allclose(results["first"], want, **tol("float32", "accumulated_abs"))
    np.testing.assert_allclose(got["second"], want, **tol("float32", "accumulated_abs"))
