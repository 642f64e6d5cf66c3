"""Arrays and errors by value: pickle, copy, deepcopy, across processes (spawn, joblib)."""

from __future__ import annotations

import copy
import multiprocessing
import pickle

import numpy as np
import pytest

import gputensor as gt
from gputensor._backend.errors import BackendError, BackendErrorKind

from _compare import assert_same
from _compare import tol


def _sample() -> tuple[gt.GpuArray, np.ndarray]:
    h = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5
    return gt.asarray(h), h


def test_pickle_moves_the_data():
    x, h = _sample()
    for view, hv in ((x, h), (x.T, h.T), (x[::2, 1:], h[::2, 1:]), (x[1], h[1]), (gt.exp(x) * 2, np.exp(h) * 2)):
        data = pickle.dumps(view)
        assert len(data) > view.size * 4  # the values, not a pointer
        back = pickle.loads(data)
        assert type(back) is gt.GpuArray and back.dtype == view.dtype
        np.testing.assert_allclose(back.get(), hv, **tol("float32", "elementwise"))
        back[...] = 0  # independent storage
        np.testing.assert_allclose(view.get(), hv, **tol("float32", "elementwise"))
    for dtype in ("bool", "int8", "uint16", "float16", "int32"):
        hd = (np.arange(7) % 3).astype(dtype)
        assert_same(pickle.loads(pickle.dumps(gt.asarray(hd), protocol=5)), hd)
    empty = pickle.loads(pickle.dumps(gt.zeros((0, 3))))
    assert empty.shape == (0, 3)


def test_copy_and_deepcopy_are_independent():
    x, h = _sample()
    c = copy.copy(x)
    d = copy.deepcopy(x)
    c[0, 0] = 100.0
    d[1, 1] = -100.0
    np.testing.assert_array_equal(x.get(), h)
    assert float(c[0, 0]) == 100.0 and float(d[1, 1]) == -100.0
    pair = copy.deepcopy([x, x])
    assert pair[0] is pair[1] and pair[0] is not x
    del x
    np.testing.assert_array_equal(c.get()[1:], h[1:])  # the copy outlives the original


def _kernel_compile_error() -> gt.KernelCompileError:
    try:
        gt.ElementwiseKernel("float32 x", "float32 y", "y = x +;")(gt.zeros(2))
    except gt.KernelCompileError as exc:
        return exc
    raise AssertionError("the kernel compiled")


def test_every_error_pickles():
    errors = [
        BackendError(BackendErrorKind.UNSUPPORTED, "no f64"),
        gt.DeviceLostError("the device is lost", "driver reset"),
        _kernel_compile_error(),
    ]
    linalg = getattr(gt, "linalg", None)
    if linalg is not None and hasattr(linalg, "LinAlgError"):
        errors.append(linalg.LinAlgError("singular matrix"))
    for exc in errors:
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is type(exc) and str(back) == str(exc)
        assert back.__dict__ == exc.__dict__
    lost = pickle.loads(pickle.dumps(errors[1]))
    assert lost.cause == "driver reset" and lost.kind == BackendErrorKind.DEVICE_ERROR


def _worker_stats(x: gt.GpuArray) -> tuple[gt.GpuArray, float]:
    """Runs in a spawned process: gputensor work on an array that arrived by value."""
    return gt.cumulative_sum(x * 2), float(gt.sum(x))


def _worker_fails(x: gt.GpuArray) -> None:
    raise BackendError(BackendErrorKind.INVALID_ARGUMENT, f"bad shape {x.shape}")


def test_arrays_cross_processes_by_value():
    x = gt.asarray(np.arange(10, dtype=np.float32))
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        cum, total = pool.apply(_worker_stats, (x,))
        np.testing.assert_array_equal(cum.get(), np.cumsum(np.arange(10) * 2))
        assert total == 45.0
        with pytest.raises(BackendError, match=r"bad shape \(10,\)"):
            pool.apply(_worker_fails, (x,))


def test_joblib_workers():
    joblib = pytest.importorskip("joblib")
    parts = [gt.asarray(np.full(4, float(i), np.float32)) for i in range(3)]
    out = joblib.Parallel(n_jobs=2, backend="loky")(joblib.delayed(_worker_stats)(p) for p in parts)
    assert [t for _, t in out] == [0.0, 4.0, 8.0]
    np.testing.assert_array_equal(out[2][0].get(), np.cumsum(np.full(4, 4.0)))
