"""Repeated gputensor.nn row calls of one call structure replay one plan: no pipeline, shader or
row plan is made again, while eps, weights and biases (per-call values) still give NumPy's
results; a call that differs in structure (dtype of a parameter, strides) takes its own path."""

from __future__ import annotations

import numpy as np
import pytest

import gputensor as gt
from gputensor import nn
from gputensor._backend import get_backend, ops_rows

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
