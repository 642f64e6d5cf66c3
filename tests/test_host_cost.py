"""What public calls ask of the device: submits (waits), dispatches and clears per call, the
deferred index check of gathers, an idle ``synchronize``, and a loop that stops allocating."""

from __future__ import annotations

import numpy as np
import pytest

import gputensor as gt
from gputensor._dispatch import backend as get_backend

from _compare import tol


def _ctx():
    return get_backend().context


def _counts() -> tuple[int, int, int]:
    stats = _ctx().stats
    return stats["submits"], stats["dispatches"], stats["clears"]


def _delta(fn) -> tuple[int, int, int]:
    """(submits, dispatches, clears) that ``fn()`` recorded, its result held."""
    gt.synchronize()
    before = _counts()
    keep = fn()
    after = _counts()
    del keep
    return tuple(a - b for a, b in zip(after, before))


def test_take_does_not_wait() -> None:
    """take / x[idx] on device indices: one gather dispatch, no submit (no wait), no clear."""
    x = gt.asarray(np.arange(1024, dtype=np.float32))
    idx = gt.asarray(np.random.default_rng(0).integers(-1024, 1024, 256))
    for fn in (lambda: gt.take(x, idx), lambda: x[idx]):
        fn()
        assert _delta(fn) == (0, 1, 0)
    np.testing.assert_array_equal(gt.take(x, idx).get(), np.take(np.arange(1024, dtype=np.float32), idx.get()))


def test_out_of_range_take_raises_at_the_next_wait() -> None:
    """The gather returns; the next wait (synchronize, a readback of any array) raises
    IndexError naming the axis, once; later work is unaffected."""
    x = gt.asarray(np.arange(12.0).reshape(3, 4))
    bad = gt.take(x, gt.asarray(np.array([1, 4])), axis=1)  # no error yet
    assert bad.shape == (3, 2)
    with pytest.raises(IndexError, match="axis 1 with size 4"):
        gt.synchronize()
    gt.synchronize()  # reported once
    x[gt.asarray(np.array([-4]))]
    with pytest.raises(IndexError, match="axis 0 with size 3"):
        float(gt.sum(x))  # any readback
    np.testing.assert_array_equal(x[gt.asarray(np.array([-1, 0]))].get(), [[8, 9, 10, 11], [0, 1, 2, 3]])
    # 64-bit and unsigned indices are checked on all their bits
    for idx in (np.array([2**32], np.int64), np.array([2**63], np.uint64), np.array([2**31], np.uint32)):
        r = gt.take(x, gt.asarray(idx), axis=0)
        with pytest.raises(IndexError):
            r.get()
    # assignment still checks before it writes
    before = x.get()
    with pytest.raises(IndexError):
        x[gt.asarray(np.array([3]))] = 0.0
    np.testing.assert_array_equal(x.get(), before)


def test_matmul_one_dispatch_no_fill() -> None:
    """float32 matmul: one gemm dispatch, no zero-fill of the output, no submit; a reduction
    records no clear either."""
    rng = np.random.default_rng(1)
    a_np, b_np = rng.random((32, 32), dtype=np.float32), rng.random((32, 32), dtype=np.float32)
    a, b = gt.asarray(a_np), gt.asarray(b_np)
    for fn in (lambda: a @ b, lambda: gt.matmul(a, b)):
        fn()
        assert _delta(fn) == (0, 1, 0)
    np.testing.assert_allclose((a @ b).get(), a_np @ b_np, **tol("float32", "matmul_rel"))
    x = gt.asarray(rng.random(1024, dtype=np.float32))
    for fn in (lambda: gt.sum(x), lambda: gt.max(a, axis=-1, keepdims=True), lambda: gt.argmax(x)):
        fn()
        submits, _, clears = _delta(fn)
        assert submits == 0 and clears == 0


def test_idle_synchronize_submits_nothing() -> None:
    """synchronize with nothing recorded or submitted since the last wait returns at once."""
    x = gt.asarray(np.ones(16, np.float32))
    y = x + 1
    gt.synchronize()
    before = _counts()
    for _ in range(5):
        gt.synchronize()
    assert _counts() == before
    float(gt.sum(y))  # a readback is a completed wait too
    before = _counts()
    gt.synchronize()
    assert _counts() == before


def test_loop_stops_allocating() -> None:
    """A loop repeating the same work allocates no device memory after its first iteration."""
    pool = gt.get_default_memory_pool()
    rng = np.random.default_rng(2)
    w = gt.asarray(rng.random((64, 64), dtype=np.float32))
    x0 = gt.asarray(rng.random((16, 64), dtype=np.float32))
    idx = gt.asarray(rng.integers(0, 16, 8))

    def step(x):
        h = gt.tanh(x @ w)
        s = gt.sum(h, axis=-1, keepdims=True)
        y = h / s + 0.5 * x
        return float(gt.max(gt.take(y, idx, axis=0))), y

    misses = []
    for _ in range(6):  # nothing carried from one iteration to the next
        step(x0)
        misses.append(pool.stats["misses"])
    assert misses == [misses[0]] * 6, misses
    misses = []
    x = x0
    for _ in range(6):  # the result carried into the next iteration: one more block, once
        _, x = step(x)
        misses.append(pool.stats["misses"])
    assert misses[1:] == [misses[1]] * 5, misses
