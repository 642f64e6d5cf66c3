"""The host-side caches of the row-fusion path (``_fusion_rows``, ``_statistical_functions``):
a pending statistic made from its kept ``StatPlan`` gives the bits of the first (planning) call,
other shapes, dtypes and axes get plans of their own, bool axes are refused as before, the
remembered scalar parameter bytes keep the sign of zero, and ``bound_pending`` computes a
statistic read by several live lazy arrays correctly."""

from __future__ import annotations

import numpy as np
import pytest

import gputensor as gt
from gputensor import _fusion, _statistical_functions

from _compare import assert_close, tol


def _softmax(x, axis=-1):
    m = gt.max(x, axis=axis, keepdims=True)
    e = gt.exp(x - m)
    return e / gt.sum(e, axis=axis, keepdims=True)


def _layernorm(x, w, b, eps=1e-5):
    mu = gt.mean(x, axis=-1, keepdims=True)
    d = x - mu
    var = gt.mean(d * d, axis=-1, keepdims=True)
    return d / gt.sqrt(var + eps) * w + b


def _np_softmax(x, axis=-1):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_kept_stat_plan_same_bits(dtype):
    """The first call plans (and keeps the StatPlans); later calls replay them: same bits."""
    rng = np.random.default_rng(1)
    h = rng.standard_normal((37, 96)).astype(dtype)
    x = gt.asarray(h)
    w = gt.asarray(rng.standard_normal(96).astype(dtype))
    b = gt.asarray(rng.standard_normal(96).astype(dtype))
    with gt.fusion(True):
        _statistical_functions._STAT_PLANS.clear()
        first = [gt.asnumpy(_softmax(x)), gt.asnumpy(_layernorm(x, w, b))]
        assert _statistical_functions._STAT_PLANS  # kept for the next calls
        for _ in range(3):
            again = [_softmax(x), _layernorm(x, w, b)]
        again = [gt.asnumpy(a) for a in again]
    for f, a in zip(first, again):
        assert f.dtype == dtype
        np.testing.assert_array_equal(f.view(np.uint8), a.view(np.uint8))
    assert_close(first[0], _np_softmax(h), dtype, "fused")


@pytest.mark.parametrize("shape,axis,dtype", [((8, 40), -1, np.float32), ((8, 40), 0, np.float32),
                                              ((40, 8), -1, np.float32), ((8, 40), -1, np.float16),
                                              ((3, 8, 40), (0, 2), np.float32), ((8, 40), None, np.float32)])
def test_changed_structure_plans_again(shape, axis, dtype):
    """After plans for (8, 40) float32 along the last axis, a changed shape, axis or dtype
    gets its own plan and the right values."""
    rng = np.random.default_rng(2)
    with gt.fusion(True):
        _softmax(gt.asarray(rng.standard_normal((8, 40)).astype(np.float32)))
        h = rng.standard_normal(shape).astype(dtype)
        for _ in range(2):
            got = gt.asnumpy(_softmax(gt.asarray(h), axis=axis))
    assert_close(got, _np_softmax(h, axis=axis), dtype, "fused")


def test_bool_axis_refused_after_int_axis_kept():
    x = gt.asarray(np.ones((4, 6), np.float32))
    with gt.fusion(True):
        gt.sum(x, axis=(1,), keepdims=True)
        gt.sum(x, axis=1, keepdims=True)
        with pytest.raises(TypeError):
            gt.sum(x, axis=(True,), keepdims=True)
        with pytest.raises(TypeError):
            gt.sum(x, axis=True, keepdims=True)


def test_kept_stat_plan_checks_axis_range():
    x = gt.asarray(np.ones((4, 6), np.float32))
    with gt.fusion(True):
        gt.max(x, axis=-1, keepdims=True)
        with pytest.raises(IndexError):
            gt.max(x, axis=2, keepdims=True)


@pytest.mark.parametrize("scale", [0.0, -0.0, 2.5, -2.5, float("nan"), float("inf"), 3])
def test_scalar_parameters_in_row_kernel(scale):
    """A scalar in the row kernel's output (``x / sum * scale``): the remembered parameter bytes
    of one scale are never those of another (0.0 and -0.0 compare equal)."""
    rng = np.random.default_rng(3)
    h = rng.uniform(-1, 1, (16, 32)).astype(np.float32)
    x = gt.asarray(h)
    with gt.fusion(True):
        for s in (0.0, scale):  # (a 0.0 first: a cached +0 must not serve a -0.0)
            got = gt.asnumpy(x / gt.sum(gt.abs(x), axis=-1, keepdims=True) * s)
    want = (h / np.abs(h).sum(axis=-1, keepdims=True)) * np.float32(scale)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_allclose(got, want, **tol("float32", "reduction_small"))


def test_bound_pending_several_readers():
    """Many pending statistics in flight, each read by two live lazy arrays (the centred values
    and the normalised output, both kept): every result is right."""
    rng = np.random.default_rng(4)
    hs = [rng.standard_normal((6, 24)).astype(np.float32) for _ in range(12)]
    kept = []
    with gt.fusion(True):
        for h in hs:
            x = gt.asarray(h)
            mu = gt.mean(x, axis=-1, keepdims=True)
            d = x - mu
            kept.append((d, d / gt.sqrt(gt.mean(d * d, axis=-1, keepdims=True) + 1e-5)))
        assert len(_fusion._PENDING) <= 8
        for h, (d, y) in zip(hs, kept):
            hd = h.astype(np.float64) - h.mean(axis=-1, keepdims=True)
            assert_close(gt.asnumpy(d), hd, np.float32, "fused")
            assert_close(gt.asnumpy(y), hd / np.sqrt((hd * hd).mean(axis=-1, keepdims=True) + 1e-5),
                         np.float32, "fused")


def test_two_leaf_binary_node_matches_general_node():
    """``lazy_binary`` on two leaves (distinct, the same object, two views of the same
    elements) builds the node ``_new_node`` builds: leaves, structure key, scalars."""
    h = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = gt.asarray(h)
    b = gt.asarray(h + 1)
    a2 = a[...]
    with gt.fusion(True):
        for x, y in ((a, b), (a, a), (a, a2), (b, a)):
            z = x - y
            node = _fusion.node_of(z)
            general = _fusion._new_node(node.op, _fusion.op_key(node.op), node.dtype, node.shape, (x, y))
            assert len(node.leaves) == len(general.leaves)
            assert all(p is q for p, q in zip(node.leaves, general.leaves))
            assert len(node.operands) == len(general.operands)
            assert all(p is q for p, q in zip(node.operands, general.operands))
            assert node.skey == general.skey and node.scalars == general.scalars
            assert (node.size, node.n_scalars) == (general.size, general.n_scalars)
            np.testing.assert_array_equal(gt.asnumpy(z), gt.asnumpy(x) - gt.asnumpy(y))


def test_same_dag_twice_node_matches_general_node():
    """``d * d`` of one lazy ``d`` (with and without a scalar in ``d``, and a ``d`` with no
    structure key): the node ``_new_node`` builds, and the right values."""
    h = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    a = gt.asarray(h)
    b = gt.asarray(h[::-1].copy())
    with gt.fusion(True):
        for d in (a - b, a * 2.0 + 1.0, (a - b) * (a + b)):
            z = d * d
            node = _fusion.node_of(z)
            child = _fusion.node_of(d)
            general = _fusion._new_node(node.op, _fusion.op_key(node.op), node.dtype, node.shape, (child, child))
            assert all(p is q for p, q in zip(node.leaves, general.leaves)) and len(node.leaves) == len(general.leaves)
            assert node.skey == general.skey and node.scalars == general.scalars
            assert (node.size, node.n_scalars) == (general.size, general.n_scalars)
            hd = gt.asnumpy(d)
            np.testing.assert_allclose(gt.asnumpy(z), hd * hd, **tol("float32", "elementwise"))


def test_loop_of_patterns_records_early_and_fuses_three_statistics():
    """A loop of softmax patterns (results held) has each one recorded within two calls, one
    row kernel each; a pattern of three statistics with an intermediate held is one kernel."""
    backend = gt._dispatch.backend()
    rng = np.random.default_rng(5)
    x = gt.asarray(rng.standard_normal((8, 64)).astype(np.float32))
    with gt.fusion(True):
        gt.synchronize()
        start = backend.context.stats["dispatches"]
        held = []
        for k in range(1, 9):
            held.append(_softmax(x))
            assert backend.context.stats["dispatches"] - start >= k - 2
        gt.synchronize()
        assert backend.context.stats["dispatches"] - start == 8
        for y in held:
            assert_close(gt.asnumpy(y), _np_softmax(gt.asnumpy(x)), np.float32, "fused")
        start = backend.context.stats["dispatches"]
        a = gt.mean(x, axis=-1, keepdims=True)
        d = x - a
        v = gt.mean(d * d, axis=-1, keepdims=True)
        c = gt.max(d, axis=-1, keepdims=True)
        out = d / gt.sqrt(v + 1e-5) + c
        got = gt.asnumpy(out)
        assert backend.context.stats["dispatches"] - start == 1
    h = gt.asnumpy(x).astype(np.float64)
    hd = h - h.mean(axis=-1, keepdims=True)
    want = hd / np.sqrt((hd * hd).mean(axis=-1, keepdims=True) + 1e-5) + hd.max(axis=-1, keepdims=True)
    assert_close(got, want, np.float32, "fused")
    del d
