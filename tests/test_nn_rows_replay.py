"""Repeated gputensor.nn row calls of one call structure replay one plan: no pipeline, shader or
row plan is made again, while eps, weights and biases (per-call values) still give NumPy's
results; a call that differs in structure (dtype of a parameter, strides) takes its own path."""

from __future__ import annotations

import numpy as np
import pytest

import gputensor as gt
from gputensor import nn
from gputensor._backend import get_backend, ops_rows
from gputensor._backend.errors import BackendError

from _compare import tol

rng = np.random.default_rng(5)


def _ln(x, w, b, eps):
    x = x.astype(np.float64)
    m = x.mean(-1, keepdims=True)
    y = (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + eps)
    return (y if w is None else y * w) + (0 if b is None else b)


def _rms(x, w, eps):
    x = x.astype(np.float64)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def _close(got, want, dtype):
    np.testing.assert_allclose(gt.asnumpy(got).astype(np.float64), want, **tol(dtype, "nn"))


def _counts():
    be = get_backend()
    return be.context.stats["pipelines_compiled"], len(ops_rows._PLANS.of(be))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_repeated_calls_replay_one_plan(dtype):
    x_np = rng.standard_normal((64, 96)).astype(dtype)
    x = gt.asarray(x_np)
    ws = [rng.standard_normal(96).astype(dtype) for _ in range(3)]
    bs = [rng.standard_normal(96).astype(dtype) for _ in range(3)]
    calls = [lambda: nn.softmax(x), lambda: nn.log_softmax(x, axis=0), lambda: nn.logsumexp(x, axis=-1),
             lambda: nn.layer_norm(x, 96, gt.asarray(ws[0]), gt.asarray(bs[0])),
             lambda: nn.rms_norm(x, (96,), gt.asarray(ws[0]))]
    for f in calls:  # first calls make the plans
        f()
    gt.synchronize()
    before = _counts()
    outs = [f() for f in calls for _ in range(3)]
    for i, eps in enumerate((1e-5, 0.5, 3)):  # eps and the parameters change per call
        w, b = gt.asarray(ws[i]), gt.asarray(bs[i])
        _close(nn.layer_norm(x, 96, w, b, eps=eps), _ln(x_np, ws[i].astype(np.float64), bs[i].astype(np.float64),
                                                        eps), dtype)
        _close(nn.rms_norm(x, 96, w, eps=eps), _rms(x_np, ws[i].astype(np.float64), eps), dtype)
    gt.synchronize()
    assert _counts() == before
    assert len(outs) == 15


def test_structure_changes_take_their_own_path():
    x_np = rng.standard_normal((8, 32)).astype(np.float32)
    x = gt.asarray(x_np)
    w16 = rng.standard_normal(32).astype(np.float16)
    nn.layer_norm(x, 32, gt.asarray(w16.astype(np.float32)))
    # a float16 weight with a float32 x: promoted (converted) every call, same values
    for _ in range(2):
        _close(nn.layer_norm(x, 32, gt.asarray(w16), eps=0.25), _ln(x_np, w16.astype(np.float64), None, 0.25),
               "float32")
    # a strided weight view and a transposed x of the same shape
    w2 = gt.asarray(np.repeat(w16.astype(np.float32), 2))[::2]
    _close(nn.rms_norm(x, 32, w2), _rms(x_np, w16.astype(np.float64), 1e-6), "float32")
    xt_np = np.ascontiguousarray(x_np.T).T
    xt = gt.asarray(np.ascontiguousarray(x_np.T)).mT
    for _ in range(2):
        _close(nn.softmax(xt), gt.asnumpy(nn.softmax(x)).astype(np.float64), "float32")
        _close(nn.rms_norm(xt, 32, w2), _rms(xt_np, w16.astype(np.float64), 1e-6), "float32")
    with pytest.raises(TypeError):
        nn.rms_norm(x, 32, w2, eps=True)
    x1 = gt.asarray(x_np[:, :1])
    nn.layer_norm(x1, (1,))
    with pytest.raises(TypeError):  # equal to (1,) as a key, still refused
        nn.layer_norm(x1, (True,))
    with pytest.raises(ValueError):
        nn.layer_norm(x, 32, gt.asarray(np.ones(31, np.float32)))


def _softmax(x, axis=-1):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _lse(x, axis=-1):
    x = x.astype(np.float64)
    m = x.max(axis, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis, keepdims=True))).squeeze(axis)


def _dispatches():
    return get_backend().context.stats["dispatches"]


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("n", [64, 37])
def test_replay_at_every_pointer_alignment(dtype, n):
    """Views starting 0..8 elements into a buffer (vector, paired and scalar variants of one
    call structure, and the float16 scratch route) give NumPy's results on every replay."""
    base_np = rng.standard_normal(8 + 6 * n).astype(dtype)
    base = gt.asarray(base_np)
    w_np = rng.standard_normal(n + 8).astype(dtype)
    w_all = gt.asarray(w_np)
    for off in (0, 1, 2, 4, 8, 3):
        x_np = base_np[off:off + 6 * n].reshape(6, n)
        x = base[off:off + 6 * n].reshape((6, n))
        w = w_all[off % 3:off % 3 + n]
        wv = w_np[off % 3:off % 3 + n].astype(np.float64)
        for _ in range(2):
            _close(nn.softmax(x), _softmax(x_np), dtype)
            _close(nn.logsumexp(x, axis=-1), _lse(x_np), dtype)
            _close(nn.layer_norm(x, n, w, w, eps=0.25), _ln(x_np, wv, wv, 0.25), dtype)
            _close(nn.rms_norm(x, (n,), w), _rms(x_np, wv, 1e-6), dtype)


def test_replay_is_one_dispatch_and_checks_pointers():
    """A replayed call records one row_ops dispatch (float32, any axis); a freed operand is
    refused with the error of a first call."""
    x_np = rng.standard_normal((16, 48)).astype(np.float32)
    x = gt.asarray(x_np)
    w = gt.asarray(rng.standard_normal(48).astype(np.float32))
    calls = [lambda: nn.softmax(x, axis=0), lambda: nn.log_softmax(x), lambda: nn.logsumexp(x, axis=0),
             lambda: nn.layer_norm(x, 48, w, w), lambda: nn.rms_norm(x, 48, w)]
    for f in calls:
        f()
    gt.synchronize()
    for f in calls:
        before = _dispatches()
        f()
        assert _dispatches() - before == 1
    _close(nn.logsumexp(x, axis=0), _lse(x_np, 0), "float32")
    be = get_backend()
    call = ops_rows.planned_call(be, "softmax", "float32", "float32", (16,), (48,), 48, 1, (48,), 1, False, False)
    src, dst, small = be.alloc(16 * 48 * 4), be.alloc(16 * 48 * 4), be.alloc(15 * 48 * 4)
    assert call.launch(be, src, dst, None, None, 0.0)
    for args in ((src, small, None, None), (src + 2, dst, None, None), (src, dst, src, None)):
        with pytest.raises(BackendError):
            call.launch(be, *args, 0.0)
    be.free(src)
    with pytest.raises(BackendError):
        call.launch(be, src, dst, None, None, 0.0)
    gt.synchronize()
    be.free(dst)
    be.free(small)


def test_replay_under_the_profiler():
    """Replayed calls under gt.profile (whose dispatch wrapper sees every kernel) give the same
    results and name the row kernel."""
    x_np = rng.standard_normal((8, 40)).astype(np.float16)
    x = gt.asarray(x_np)
    w = gt.asarray(np.ones(40, np.float16))
    nn.layer_norm(x, 40, w, w)
    nn.softmax(x)
    with gt.profile() as prof:
        y = nn.layer_norm(x, 40, w, w)
        s = nn.softmax(x)
    _close(y, _ln(x_np, np.ones(40), np.ones(40), 1e-5), "float16")
    _close(s, _softmax(x_np), "float16")
    assert "row_ops" in {r.name for r in prof.records}


@pytest.mark.parametrize("op", ["softmax", "layer_norm", "rms_norm"])
def test_float16_store_modes(op):
    """Both float16 roundings of the row kernels (knob rows_f16_store): NumPy's results within
    the nn tolerance, the same bits for normal results, infinities where NumPy overflows, on
    the vector, paired and scalar (odd length) stores."""
    from gputensor._backend import config

    local = np.random.default_rng(11)
    for n in (64, 40, 37):
        x_np = local.standard_normal((24, n)).astype(np.float16)
        w_np = (local.standard_normal(n) * np.logspace(-6, 4.6, n)).astype(np.float16)
        x, w = gt.asarray(x_np), gt.asarray(w_np)
        wf = w_np.astype(np.float64)
        want = {"softmax": lambda: _softmax(x_np), "layer_norm": lambda: _ln(x_np, wf, None, 1e-5),
                "rms_norm": lambda: _rms(x_np, wf, 1e-6)}[op]()
        with np.errstate(over="ignore"):
            want16 = want.astype(np.float16)
        clear = np.abs(np.abs(want) - 65520) > 100  # not at the edge of float16's range
        bits = {}
        for mode in ("exact", "pack"):
            with config.override(rows_f16_store=mode):
                for _ in range(2):  # first call and replay
                    got = {"softmax": lambda: nn.softmax(x), "layer_norm": lambda: nn.layer_norm(x, n, w),
                           "rms_norm": lambda: nn.rms_norm(x, n, w)}[op]()
                got = gt.asnumpy(got)
            assert np.array_equal(np.isinf(got)[clear], np.isinf(want16)[clear]), mode
            fin = np.isfinite(want16) & np.isfinite(got)
            scale = 1.0 + np.abs(want[fin])
            np.testing.assert_allclose(got[fin].astype(np.float64) / scale, want[fin] / scale, **tol("float16", "nn"))
            bits[mode] = got.view(np.uint16)
        normal = np.abs(want16) >= np.float16(2.0 ** -14)
        assert np.array_equal(bits["exact"][normal], bits["pack"][normal])


def test_float16_logsumexp_halves_untouched():
    """float16 logsumexp writes one half of a word per row (atomically): a strided output at an
    odd element offset leaves every other half as it was, rows along either axis."""
    local = np.random.default_rng(12)
    x_np = local.standard_normal((9, 33)).astype(np.float16)
    x = gt.asarray(x_np)
    be = get_backend()
    for axis, (rows, n, xs, step) in {1: (9, 33, 33, 1), 0: (33, 9, 1, 33)}.items():
        y = gt.asarray(np.full(3 * rows + 2, 7.0, np.float16))
        for _ in range(2):
            ops_rows.row_op(be, "logsumexp", x._ptr, "float16", (rows,), (xs,), n, step, y._ptr + 2, "float16",
                            (3,), 0)
        got = gt.asnumpy(y)
        want = _lse(x_np, axis)
        _close(gt.asarray(got[1:1 + 3 * rows:3]), want, "float16")
        rest = np.delete(got, np.arange(1, 1 + 3 * rows, 3))
        assert (rest == 7.0).all()
    _close(nn.logsumexp(x, axis=0, keepdims=True), _lse(x_np, 0)[None], "float16")
