"""The caching allocator (gputensor/_backend/memory_pool.py) and its use by the backend and GpuArray.

Unit tests drive ``MemoryPool`` with a fake allocator (bins, reuse, statistics, the out-of-memory
retry, the limit, frees from finalizers while the lock is held). Device tests check the reuse
safety argument of the module docstring on the real queue: a block freed while commands that
read (or write) it are only *recorded*, then reused and written by an upload (aligned, and
unaligned through the patch kernel) or zero-filled, never lets the old commands see the new data;
and 10,000 create/free cycles of mixed sizes through GpuArray keep the pool's size bounded and the
data in reused blocks right.
"""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import gputensor as gt
from gputensor._backend import BackendError, BackendErrorKind, UnaryOp, get_backend
from gputensor._backend.memory_pool import MemoryPool, bin_size
from gputensor._backend.errors import out_of_memory


@pytest.fixture(scope="module")
def backend():
    return get_backend()


# ---- bins ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 4, 255, 256, 257, 1000, 4095, 4096, 4097, 5000, 8192, 8193,
                               65536, 100_000, 1 << 20, (1 << 20) + 1, 3 << 29, (1 << 31) - 1])
def test_bin_size(n: int) -> None:
    b = bin_size(n)
    assert b >= max(n, 1) and b % 256 == 0
    if n <= 4096:
        assert b - max(n, 1) < 256
    else:
        assert b <= n * 1.125 + 1  # at most 12.5% waste above the small sizes
    assert bin_size(b) == b  # bins are fixed points


def test_bins_are_few() -> None:
    sizes = {bin_size(n) for n in range(1, 1 << 20, 97)}
    assert len(sizes) <= 16 + 8 * 8 + 1  # 16 small bins, 8 per octave from 4 KiB to 1 MiB


# ---- MemoryPool with a fake allocator -----------------------------------------------------------
class FakeBuffer:
    def __init__(self, size: int) -> None:
        self.size = size
        self.released = False


class FakeDevice:
    """Allocates FakeBuffers up to ``capacity`` bytes, then raises out of memory."""

    def __init__(self, capacity: int | None = None) -> None:
        self.capacity = capacity
        self.live = 0
        self.calls = 0
        self.released: list[FakeBuffer] = []

    def allocate(self, size: int) -> FakeBuffer:
        self.calls += 1
        if self.capacity is not None and self.live + size > self.capacity:
            raise out_of_memory(f"fake device: {size} bytes do not fit")
        self.live += size
        return FakeBuffer(size)

    def release(self, buf: FakeBuffer) -> None:
        assert not buf.released
        buf.released = True
        self.live -= buf.size
        self.released.append(buf)


def test_pool_reuses_by_bin() -> None:
    dev = FakeDevice()
    pool = MemoryPool(dev.allocate, dev.release)
    a, fresh = pool.malloc(1000)
    assert fresh and a.size == 1024
    assert pool.used_bytes() == 1024 and pool.total_bytes() == 1024 and pool.n_free_blocks() == 0
    pool.free(a)
    assert pool.used_bytes() == 0 and pool.free_bytes() == 1024 and pool.n_free_blocks() == 1
    b, fresh = pool.malloc(800)  # same bin
    assert b is a and not fresh and dev.calls == 1
    c, fresh = pool.malloc(2000)  # another bin: a new block
    assert c is not a and fresh and dev.calls == 2
    pool.free(b)
    pool.free(c)
    assert pool.total_bytes() == 1024 + 2048 and pool.n_free_blocks() == 2
    pool.free_all_blocks()
    assert pool.total_bytes() == 0 and pool.n_free_blocks() == 0 and dev.live == 0
    assert {id(x) for x in dev.released} == {id(a), id(c)}
    assert "MemoryPool(" in repr(pool)


def test_pool_lifo_and_counts() -> None:
    dev = FakeDevice()
    pool = MemoryPool(dev.allocate, dev.release)
    blocks = [pool.malloc(300)[0] for _ in range(5)]
    for blk in blocks:
        pool.free(blk)
    assert pool.n_free_blocks() == 5
    again = [pool.malloc(300)[0] for _ in range(5)]
    assert [id(x) for x in again] == [id(x) for x in reversed(blocks)]  # most recently freed first
    assert dev.calls == 5 and pool.stats["hits"] == 5 and pool.stats["misses"] == 5


def test_pool_near_equal_large_sizes_share_blocks() -> None:
    """Above NEAR_LIMIT a request whose bin is empty takes a free block of one of the next
    NEAR_BINS bins (bounded waste); small requests keep their exact bin."""
    from gputensor._backend.memory_pool import NEAR_BINS, NEAR_LIMIT

    dev = FakeDevice()
    pool = MemoryPool(dev.allocate, dev.release)
    big = NEAR_LIMIT * 2
    a, _ = pool.malloc(big + 300_000)  # the 2.5 MiB bin
    pool.free(a)
    b, fresh = pool.malloc(big + 1)  # its own bin (2.25 MiB) is empty: the next one serves it
    assert b is a and not fresh and dev.calls == 1
    assert b.size - (big + 1) < (big + 1) // 4
    pool.free(b)
    far = bin_size(big + 1)
    for _ in range(NEAR_BINS):
        far = bin_size(far + 1)
    c, fresh = pool.malloc(far // 2)  # much smaller: a block of its own
    assert fresh and dev.calls == 2
    pool.free(c)
    d, _ = pool.malloc(3000)
    pool.free(d)
    e, fresh = pool.malloc(200)  # small: exact bins only
    assert fresh and e is not d


def test_pool_negative_size() -> None:
    pool = MemoryPool(FakeDevice().allocate, FakeDevice().release)
    with pytest.raises(BackendError) as info:
        pool.malloc(-1)
    assert info.value.kind is BackendErrorKind.INVALID_ARGUMENT


def test_pool_out_of_memory_frees_cache_and_retries_once() -> None:
    dev = FakeDevice(capacity=8192)
    pool = MemoryPool(dev.allocate, dev.release)
    small = [pool.malloc(2048)[0] for _ in range(3)]  # 6 KiB live
    for blk in small:
        pool.free(blk)  # cached, still held on the device
    big, fresh = pool.malloc(8000)  # does not fit beside the cache: release it, retry, succeed
    assert fresh and big.size == 8192 and pool.n_free_blocks() == 0 and len(dev.released) == 3
    calls = dev.calls
    with pytest.raises(BackendError) as info:  # nothing cached: fails at once
        pool.malloc(4096)
    assert dev.calls == calls + 1
    err = info.value
    assert err.kind is BackendErrorKind.OUT_OF_MEMORY
    assert "4096 bytes" in err.message and "8192 bytes in use" in err.message
    assert "fake device" in err.message


def test_pool_out_of_memory_after_retry() -> None:
    dev = FakeDevice(capacity=4096)
    pool = MemoryPool(dev.allocate, dev.release)
    keep = pool.malloc(2048)[0]
    cached = pool.malloc(1024)[0]
    pool.free(cached)
    with pytest.raises(BackendError) as info:
        pool.malloc(3000)  # 2048 live + 3072 > 4096 even after releasing the cached 1024
    assert info.value.kind is BackendErrorKind.OUT_OF_MEMORY
    assert "3000 bytes" in info.value.message and "2048 bytes in use" in info.value.message
    assert dev.calls == 4  # 2 blocks + first try + one retry
    assert pool.n_free_blocks() == 0 and pool.used_bytes() == 2048
    pool.free(keep)


def test_pool_other_errors_propagate() -> None:
    def allocate(size: int) -> FakeBuffer:
        raise BackendError(BackendErrorKind.DEVICE_ERROR, "lost")

    pool = MemoryPool(allocate, lambda b: None)
    with pytest.raises(BackendError) as info:
        pool.malloc(10)
    assert info.value.kind is BackendErrorKind.DEVICE_ERROR


def test_pool_limit() -> None:
    dev = FakeDevice()
    pool = MemoryPool(dev.allocate, dev.release, max_size=1 << 20)
    pool.set_limit(4096)
    assert pool.get_limit() == 4096
    a = pool.malloc(2048)[0]
    b = pool.malloc(1024)[0]
    pool.free(b)
    c = pool.malloc(2048)[0]  # 2048 + 1024 cached + 2048 > 4096: the cache goes, then it fits
    assert pool.n_free_blocks() == 0 and pool.total_bytes() == 4096
    with pytest.raises(BackendError) as info:
        pool.malloc(1)
    assert "limit of 4096" in info.value.message
    pool.set_limit(fraction=0.5)
    assert pool.get_limit() == 1 << 19
    pool.set_limit(0)
    assert pool.get_limit() == 0
    pool.malloc(1)
    with pytest.raises(ValueError):
        pool.set_limit(-1)
    with pytest.raises(ValueError):
        pool.set_limit(fraction=2.0)
    with pytest.raises(ValueError):
        pool.set_limit(10, fraction=0.5)
    pool.free(a)
    pool.free(c)


def test_pool_free_all_callback() -> None:
    calls = []
    dev = FakeDevice()
    pool = MemoryPool(dev.allocate, dev.release, on_free_all=lambda: calls.append(1))
    pool.free(pool.malloc(10)[0])
    pool.free_all_blocks()
    assert calls == [1] and dev.live == 0


def test_pool_free_never_waits_for_the_lock() -> None:
    """A free from a finalizer while the lock is held (by this or another thread) is deferred,
    then drained by the next pool call."""
    dev = FakeDevice()
    pool = MemoryPool(dev.allocate, dev.release)
    blk = pool.malloc(100)[0]
    with pool._lock:  # as if a finalizer ran inside malloc
        pool.free(blk)  # must not deadlock
        assert len(pool._pending) == 1
    assert pool.n_free_blocks() == 1 and pool.used_bytes() == 0
    assert pool.malloc(100)[0] is blk


def test_pool_threads() -> None:
    dev = FakeDevice()
    pool = MemoryPool(dev.allocate, dev.release)
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            held = []
            for _ in range(2000):
                if held and rng.random() < 0.5:
                    pool.free(held.pop(int(rng.integers(len(held)))))
                else:
                    held.append(pool.malloc(int(rng.integers(1, 20000)))[0])
            for blk in held:
                pool.free(blk)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert pool.used_bytes() == 0
    assert pool.total_bytes() == dev.live == pool.free_bytes()
    pool.free_all_blocks()
    assert dev.live == 0


# ---- the backend's pool ------------------------------------------------------------------------
def test_backend_alloc_reuses_blocks(backend) -> None:
    pool = backend.memory_pool
    p = backend.alloc(3000)
    buf = backend.resolve(p, 0)[0].buffer
    assert buf.size == bin_size(3000) and backend.allocation_size(p) == 3000
    backend.free(p)
    q = backend.alloc(2900)  # same bin: the same buffer
    assert backend.resolve(q, 0)[0].buffer is buf
    assert backend.allocation_size(q) == 2900
    used = pool.used_bytes()
    backend.free(q)
    assert pool.used_bytes() == used - buf.size


def test_zero_fill_of_reused_blocks(backend) -> None:
    p = backend.alloc(1000)
    backend.copy_htod(p, np.full(250, 7, np.int32))
    backend.free(p)
    q = backend.alloc(1000)  # reused, zero=True: cleared on the device
    out = np.empty(250, np.int32)
    backend.copy_dtoh(out, q)
    assert (out == 0).all()
    backend.copy_htod(q, np.full(250, 9, np.int32))
    backend.free(q)
    r = backend.alloc(999, zero=False)  # reused without a clear: the old bytes
    out = np.empty(249, np.int32)
    backend.copy_dtoh(out.view(np.uint8)[:996], r)
    assert (out == 9).all()
    backend.free(r)
    z = backend.alloc(0)
    assert backend.allocation_size(z) == 0
    backend.free(z)


def _unary_recorded(backend, src: int, dst: int, n: int) -> None:
    backend.unary(UnaryOp.NEG, src, dst, n)
    assert backend.context._encoder is not None  # recorded, not submitted


@pytest.mark.parametrize("path", ["staged", "direct"])
@pytest.mark.parametrize("offset,nbytes", [(0, 4096), (1, 5), (2, 4093), (4, 4092)])
def test_reuse_while_readers_are_only_recorded(backend, monkeypatch: pytest.MonkeyPatch, path: str,
                                               offset: int, nbytes: int) -> None:
    """The scenario of memory_pool.py: ``a`` is read by recorded (unsubmitted) work, freed, its
    block handed to ``c`` and uploaded to (aligned body: through the upload ring and a recorded
    copy ('staged') or a flush and write_buffer ('direct'); unaligned edges: the patch kernel).
    The recorded reader still sees the old data."""
    from gputensor._backend import transfers as transfers_module

    if path == "direct":
        monkeypatch.setattr(transfers_module, "STAGED_UPLOAD_MAX", 0)
    n = 1024
    old = np.arange(n, dtype=np.float32) + 1
    a = backend.alloc(4 * n)
    backend.copy_htod(a, old)
    b = backend.alloc(4 * n)
    backend.synchronize()
    _unary_recorded(backend, a, b, n)
    buf = backend.resolve(a, 0)[0].buffer
    backend.free(a)
    c = backend.alloc(4 * n, zero=False)
    assert backend.resolve(c, 0)[0].buffer is buf  # the same block
    new = np.random.default_rng(offset).integers(0, 256, nbytes, dtype=np.uint8)
    backend.copy_htod(c + offset, new)
    got = np.empty(n, np.float32)
    backend.copy_dtoh(got, b)
    np.testing.assert_array_equal(got, -old)  # the reader saw the old contents
    expect = old.view(np.uint8).copy()
    expect[offset : offset + nbytes] = new
    raw = np.empty(4 * n, np.uint8)
    backend.copy_dtoh(raw, c)
    np.testing.assert_array_equal(raw, expect)
    backend.free(b)
    backend.free(c)


def test_reuse_while_writers_are_only_recorded(backend) -> None:
    """A block written by recorded work, freed and reused for an upload ends with the upload."""
    n = 1024
    src = backend.alloc(4 * n)
    backend.copy_htod(src, np.ones(n, np.float32))
    dst = backend.alloc(4 * n)
    backend.synchronize()
    _unary_recorded(backend, src, dst, n)  # writes dst
    backend.free(dst)
    again = backend.alloc(4 * n, zero=False)
    new = np.arange(n, dtype=np.float32)
    backend.copy_htod(again, new)
    got = np.empty(n, np.float32)
    backend.copy_dtoh(got, again)
    np.testing.assert_array_equal(got, new)
    backend.free(src)
    backend.free(again)


def test_reuse_with_zero_fill_after_recorded_reader(backend) -> None:
    n = 512
    a = backend.alloc(4 * n)
    backend.copy_htod(a, np.full(n, 3, np.float32))
    b = backend.alloc(4 * n)
    backend.synchronize()
    _unary_recorded(backend, a, b, n)
    backend.free(a)
    c = backend.alloc(4 * n)  # zero=True: a clear recorded after the reader
    got_b, got_c = np.empty(n, np.float32), np.empty(n, np.float32)
    backend.copy_dtoh_many([(got_b, b), (got_c, c)])
    np.testing.assert_array_equal(got_b, -3)
    np.testing.assert_array_equal(got_c, 0)
    backend.free(b)
    backend.free(c)


def test_free_all_blocks_with_recorded_work(backend) -> None:
    """Releasing cached blocks submits recorded work first, so nothing refers to a destroyed
    buffer; results stay right and new allocations work."""
    pool = gt.get_default_memory_pool()
    n = 256
    a = backend.alloc(4 * n)
    backend.copy_htod(a, np.full(n, 2, np.float32))
    b = backend.alloc(4 * n)
    backend.synchronize()
    _unary_recorded(backend, a, b, n)
    backend.free(a)  # cached, and bound by the recorded dispatch
    pool.free_all_blocks()
    assert pool.n_free_blocks() == 0
    got = np.empty(n, np.float32)
    backend.copy_dtoh(got, b)
    np.testing.assert_array_equal(got, -2)
    backend.free(b)
    assert backend.context._staging.cached_bytes() >= 0


# ---- GpuArray through the pool ----------------------------------------------------------------
def test_default_memory_pool_api() -> None:
    pool = gt.get_default_memory_pool()
    assert pool is gt.get_default_memory_pool()
    for name in ("used_bytes", "total_bytes", "free_bytes", "n_free_blocks"):
        assert isinstance(getattr(pool, name)(), int)
    gc.collect()  # arrays earlier tests left in reference cycles (caught exceptions' frames) go now, not below
    x = gt.empty((1000,), dtype=gt.float32)
    used = pool.used_bytes()
    assert used >= 4096 and pool.total_bytes() >= used
    del x
    gc.collect()
    assert pool.used_bytes() == used - 4096


def test_create_free_cycles_bounded_and_correct() -> None:
    """10,000 create/free cycles of mixed sizes: the pool's total stays bounded by the bins
    touched, and reused blocks hold exactly what was written."""
    pool = gt.get_default_memory_pool()
    gt.synchronize()
    pool.free_all_blocks()
    base_total = pool.total_bytes()
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 20_000, size=64)  # elements of float32: up to 80 KB
    keep: list[gt.GpuArray] = []
    peak = 0
    for i in range(10_000):
        n = int(sizes[i % len(sizes)])
        x = gt.empty((n,), dtype=gt.float32)
        if i % 7 == 0:
            keep.append(x)  # a few stay alive a while, so blocks are not reused in lockstep
            if len(keep) > 4:
                keep.pop(0)
        del x
        if i % 500 == 0:
            peak = max(peak, pool.total_bytes())
    gc.collect()
    bins = {bin_size(4 * int(n)) for n in sizes}
    bound = base_total + sum(bins) * 6  # at most (4 kept + 1 live + slack) blocks per bin
    assert pool.total_bytes() <= bound and peak <= bound
    assert pool.total_bytes() - base_total <= 8 * 1024 * 1024
    # correctness of reused blocks: write, read back, in several sizes
    for n in (1, 3, 1000, 4097, 12345):
        data = rng.standard_normal(n).astype(np.float32)
        x = gt.asarray(data)
        np.testing.assert_array_equal(gt.asnumpy(x), data)
        z = gt.zeros((n,), dtype=gt.float32)  # may reuse a dirty block: must read zeros
        assert (gt.asnumpy(z) == 0).all()
        del x, z
    keep.clear()
    gc.collect()
    before = pool.total_bytes()
    pool.free_all_blocks()
    assert pool.total_bytes() <= before and pool.n_free_blocks() == 0


def test_zeros_and_full_on_reused_blocks() -> None:
    for _ in range(3):
        dirty = gt.asarray(np.full(3000, 5.0, np.float32))
        del dirty
        np.testing.assert_array_equal(gt.asnumpy(gt.zeros((3000,))), 0.0)
        np.testing.assert_array_equal(gt.asnumpy(gt.full((3000,), 0)), 0.0)
        np.testing.assert_array_equal(gt.asnumpy(gt.full((3000,), 2.5)), 2.5)
        np.testing.assert_array_equal(gt.asnumpy(gt.zeros_like(gt.ones((3000,)))), 0.0)


def test_out_of_memory_is_memory_error() -> None:
    be = get_backend()
    too_big = be.context.max_buffer_size + 1
    with pytest.raises(MemoryError) as info:
        gt.empty((too_big,), dtype=gt.uint8)
    assert str(too_big) in str(info.value)


def test_pool_limit_gives_memory_error_with_sizes() -> None:
    pool = gt.get_default_memory_pool()
    gc.collect()
    pool.free_all_blocks()
    try:
        pool.set_limit(pool.total_bytes() + 64 * 1024)
        x = gt.empty((8 * 1024,), dtype=gt.float32)  # 32 KiB fits
        with pytest.raises(MemoryError) as info:
            gt.empty((64 * 1024,), dtype=gt.float32)  # 256 KiB does not
        msg = str(info.value)
        assert "262144 bytes" in msg and "in use" in msg and "limit" in msg
        del x
    finally:
        pool.set_limit(0)
    y = gt.empty((64 * 1024,), dtype=gt.float32)  # fine again without the limit
    assert y.shape == (64 * 1024,)
