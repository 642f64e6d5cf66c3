"""Row fusion (``gputensor._fusion_rows``): softmax, log-softmax, layer norm and logsumexp
written with ``gt`` ops run as one generated row kernel; every result is compared with NumPy
(float64 reference) and with the same code unfused (``gt.fusion(False)``: one kernel per op),
within ``TOLERANCES['fused']`` (the fused kernel sums in another order). Dispatches are counted
with ``backend.context.stats``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gputensor as gt
from gputensor import _fusion, _fusion_rows
from gputensor._backend import get_backend

from _compare import assert_close, tolerance
from _compare import tol


@pytest.fixture(scope="module")
def backend():
    return get_backend()


def _dispatches(backend) -> int:
    return backend.context.stats["dispatches"]


# ---- the patterns, written with gt ops (any namespace with max/exp/sum/... : gt or numpy) ----
def softmax(xp, x, axis=-1):
    m = xp.max(x, axis=axis, keepdims=True)
    e = xp.exp(x - m)
    return e / xp.sum(e, axis=axis, keepdims=True)


def log_softmax(xp, x, axis=-1):
    m = xp.max(x, axis=axis, keepdims=True)
    return x - m - xp.log(xp.sum(xp.exp(x - m), axis=axis, keepdims=True))


def logsumexp(xp, x, axis=-1):
    m = xp.max(x, axis=axis, keepdims=True)
    return m + xp.log(xp.sum(xp.exp(x - m), axis=axis, keepdims=True))


def layer_norm(xp, x, w, b, axis=-1, eps=1e-5):
    mu = xp.mean(x, axis=axis, keepdims=True)
    d = x - mu
    v = xp.mean(d * d, axis=axis, keepdims=True)
    return d / xp.sqrt(v + eps) * w + b


def _data(shape, dtype, seed=0):
    return np.random.default_rng(seed).uniform(-4, 4, size=shape).astype(dtype)


def _check(fused, unfused, ref, dtype):
    """fused against unfused ('fused' tolerance, an absolute term scaled by the magnitudes) and
    both against the float64 NumPy reference ('chained')."""
    rtol, _ = tolerance(dtype, "fused")
    scale = max(1.0, float(np.nanmax(np.abs(ref))) if np.isfinite(ref).any() else 1.0)
    np.testing.assert_allclose(fused, unfused, rtol=rtol * 10, atol=rtol * 10 * scale, equal_nan=True)
    rtol, atol = tolerance(dtype, "chained")
    np.testing.assert_allclose(fused.astype(np.float64), ref, rtol=rtol, atol=atol * scale, equal_nan=True)


def _run(fn, arrays, dtype):
    """(fused result, unfused result, NumPy float64 reference) of ``fn(xp, *arrays)``."""
    gts = [gt.asarray(a) for a in arrays]
    fused = gt.asnumpy(fn(gt, *gts))
    with gt.fusion(False):
        unfused = gt.asnumpy(fn(gt, *gts))
    ref = fn(np, *[a.astype(np.float64) for a in arrays])
    return fused, unfused, ref


# ---------------------------------------------------------------------------------------------
# one dispatch per pattern
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp", "layer_norm"])
def test_pattern_is_one_dispatch(backend, name):
    xn = _data((16, 96), np.float32)
    x = gt.asarray(xn)
    w, b = gt.asarray(_data((96,), np.float32, 1)), gt.asarray(_data((96,), np.float32, 2))
    gt.synchronize()
    d0 = _dispatches(backend)
    if name == "layer_norm":
        y = layer_norm(gt, x, w, b)
    else:
        y = globals()[name](gt, x)
    assert _dispatches(backend) == d0  # nothing recorded before the result is needed
    out = gt.asnumpy(y)
    assert _dispatches(backend) - d0 == 1
    assert out.shape == ((16, 1) if name == "logsumexp" else (16, 96))


def test_unfused_softmax_is_several_dispatches(backend):
    x = gt.asarray(_data((8, 40), np.float32))
    gt.synchronize()
    with gt.fusion(False):
        d0 = _dispatches(backend)
        gt.asnumpy(softmax(gt, x))
        assert _dispatches(backend) - d0 >= 3


# ---------------------------------------------------------------------------------------------
# values: the four patterns over dtypes, axes, lengths, layouts
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("fn", [softmax, log_softmax, logsumexp])
def test_softmax_family_dtypes(fn, dtype):
    xn = _data((9, 37), dtype, seed=3)
    fused, unfused, ref = _run(fn, [xn], dtype)
    assert fused.dtype == np.dtype(dtype)
    _check(fused, unfused, ref, dtype)


@pytest.mark.parametrize("n", [64, 37])
def test_packed_outputs(n):
    """float16 and bool results: whole words per lane where the rows allow it, else lane by lane."""
    xn = _data((5, n), np.float16, 21)
    fused, unfused, ref = _run(softmax, [xn], "float16")
    _check(fused, unfused, ref, "float16")
    x32 = _data((5, n), np.float32, 22)
    x = gt.asarray(x32)
    above = gt.asnumpy(x > gt.mean(x, axis=-1, keepdims=True))
    assert above.dtype == np.bool_
    mean = x32.mean(-1, keepdims=True, dtype=np.float64)
    close = np.abs(x32 - mean) < 1e-5
    np.testing.assert_array_equal(above[~close], (x32 > mean)[~close])


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_layer_norm_dtypes(dtype):
    xn, wn, bn = _data((6, 50), dtype, 4), _data((50,), dtype, 5), _data((50,), dtype, 6)
    fused, unfused, ref = _run(layer_norm, [xn, wn, bn], dtype)
    _check(fused, unfused, ref, dtype)


@pytest.mark.parametrize("shape,axis", [((33, 7), 0), ((4, 5, 6), 1), ((4, 5, 6), 0), ((3, 1, 9), -1),
                                        ((1, 11), -1), ((5,), 0)])
@pytest.mark.parametrize("fn", [softmax, logsumexp])
def test_other_axes(fn, shape, axis):
    xn = _data(shape, np.float32, 7)
    fused, unfused, ref = _run(lambda xp, x: fn(xp, x, axis=axis), [xn], "float32")
    _check(fused, unfused, ref, "float32")


def test_layer_norm_over_two_trailing_axes():
    xn, wn = _data((3, 4, 10), np.float32, 8), _data((4, 10), np.float32, 9)
    fused, unfused, ref = _run(lambda xp, x, w: layer_norm(xp, x, w, 0.5, axis=(1, 2)), [xn, wn], "float32")
    _check(fused, unfused, ref, "float32")


@pytest.mark.parametrize("n", [1, 3, 255, 257, 5000, 20011])
def test_row_lengths(n):
    """Short, odd, one-workgroup and long rows (cached in registers and streamed)."""
    xn = _data((3, n), np.float32, n)
    fused, unfused, ref = _run(softmax, [xn], "float32")
    _check(fused, unfused, ref, "float32")
    wn = _data((n,), np.float32, 1)
    fused, unfused, ref = _run(lambda xp, x, w: layer_norm(xp, x, w, 1.0), [xn, wn], "float32")
    _check(fused, unfused, ref, "float32")


def test_streamed_rows(backend, monkeypatch):
    """Rows too long for registers: read again per pass (one dispatch); few of them fall back."""
    xn = _data((5, 20011), np.float32, 19)
    x = gt.asarray(xn)
    gt.synchronize()
    d0 = _dispatches(backend)
    few = gt.asnumpy(softmax(gt, x))
    assert _dispatches(backend) - d0 > 1  # the eager reductions
    monkeypatch.setattr(_fusion_rows, "MIN_STREAMED_ROWS", 1)
    d0 = _dispatches(backend)
    fused = gt.asnumpy(softmax(gt, x))
    assert _dispatches(backend) - d0 == 1
    _check(fused, few, softmax(np, xn.astype(np.float64)), "float32")
    wn = _data((20011,), np.float32, 20)
    fused, unfused, ref = _run(lambda xp, x, w: layer_norm(xp, x, w, 1.0), [xn, wn], "float32")
    _check(fused, unfused, ref, "float32")


def test_masked_softmax(backend):
    """A bool mask and a where() in the row program (attention-style masking), one dispatch."""
    xn = _data((6, 24), np.float32, 23)
    maskn = np.random.default_rng(1).random((6, 24)) > 0.3
    maskn[:, 0] = True
    x, mask = gt.asarray(xn), gt.asarray(maskn)

    def masked(xp, x, mask):
        return softmax(xp, xp.where(mask, x, -np.inf))

    gt.synchronize()
    d0 = _dispatches(backend)
    fused = gt.asnumpy(masked(gt, x, mask))
    assert _dispatches(backend) - d0 == 1
    with gt.fusion(False):
        unfused = gt.asnumpy(masked(gt, x, mask))
    _check(fused, unfused, masked(np, xn.astype(np.float64), maskn), "float32")


def test_many_rows():
    xn = _data((3000, 20), np.float32, 10)
    fused, unfused, ref = _run(log_softmax, [xn], "float32")
    _check(fused, unfused, ref, "float32")


def test_non_contiguous_inputs():
    base = _data((12, 40), np.float32, 11)
    xb = gt.asarray(base)
    for view, ref_view in [(xb[:, ::2], base[:, ::2]), (xb.T, base.T), (xb[::-1, 3:29], base[::-1, 3:29]),
                            (xb[:, ::-1], base[:, ::-1]), (xb[::2, ::-3], base[::2, ::-3])]:
        assert gt.asnumpy(view).shape == ref_view.shape
        fused = gt.asnumpy(softmax(gt, view))
        with gt.fusion(False):
            unfused = gt.asnumpy(softmax(gt, view))
        _check(fused, unfused, softmax(np, ref_view.astype(np.float64)), "float32")


@pytest.mark.filterwarnings("ignore:invalid value")
def test_nan_and_inf_rows():
    xn = _data((6, 17), np.float32, 12)
    xn[1, 3] = np.nan
    xn[2, :] = -np.inf
    xn[3, 5] = np.inf
    xn[4, :] = np.inf
    xn[5, 0] = -np.inf
    for fn in (softmax, log_softmax, logsumexp):
        fused, unfused, ref = _run(fn, [xn], "float32")
        np.testing.assert_array_equal(np.isnan(fused), np.isnan(unfused))
        np.testing.assert_array_equal(np.isnan(fused), np.isnan(ref))
        finite = np.isfinite(unfused)
        infinite = ~finite & ~np.isnan(unfused)
        np.testing.assert_array_equal(fused[infinite], unfused[infinite])
        np.testing.assert_array_equal(fused[infinite], ref[infinite])
        np.testing.assert_allclose(fused[finite], unfused[finite], **tol("float32", "accumulated_fine"))
        np.testing.assert_allclose(fused[finite], ref[finite], **tol("float32", "accumulated_fine"))


# ---------------------------------------------------------------------------------------------
# statistics the user keeps, shared intermediates, hazards
# ---------------------------------------------------------------------------------------------
def test_statistic_returned_to_the_user_is_computed_by_the_row_kernel(backend):
    xn = _data((10, 30), np.float32, 13)
    x = gt.asarray(xn)

    def softmax_with_stats(x):
        m = gt.max(x, axis=-1, keepdims=True)
        e = gt.exp(x - m)
        s = gt.sum(e, axis=-1, keepdims=True)
        return e / s, m, s

    gt.synchronize()
    d0 = _dispatches(backend)
    y, m, s = softmax_with_stats(x)
    yn = gt.asnumpy(y)
    mn, sn = gt.asnumpy(m), gt.asnumpy(s)
    assert _dispatches(backend) - d0 == 1  # the statistics were stored by the same kernel
    np.testing.assert_array_equal(mn, xn.max(-1, keepdims=True))
    ref = np.exp(xn.astype(np.float64) - xn.max(-1, keepdims=True))
    assert_close(sn, ref.sum(-1, keepdims=True), "float32", "chained")
    assert_close(yn, ref / ref.sum(-1, keepdims=True), "float32", "chained")


def test_statistic_read_first_then_pattern():
    xn = _data((5, 21), np.float32, 14)
    x = gt.asarray(xn)
    m = gt.max(x, axis=-1, keepdims=True)
    np.testing.assert_array_equal(gt.asnumpy(m), xn.max(-1, keepdims=True))  # its own kernel
    e = gt.exp(x - m)
    y = gt.asnumpy(e / gt.sum(e, axis=-1, keepdims=True))
    ref = np.exp(xn.astype(np.float64) - xn.max(-1, keepdims=True))
    assert_close(y, ref / ref.sum(-1, keepdims=True), "float32", "chained")


def test_results_reused_by_two_consumers():
    xn = _data((7, 45), np.float32, 15)
    x = gt.asarray(xn)
    mu = gt.mean(x, axis=-1, keepdims=True)
    d = x - mu
    v = gt.mean(d * d, axis=-1, keepdims=True)
    a = d / gt.sqrt(v + 1e-5)
    b = d * 2.0 + v  # a second consumer of d and v
    an, bn = gt.asnumpy(a), gt.asnumpy(b)
    x64 = xn.astype(np.float64)
    d64 = x64 - x64.mean(-1, keepdims=True)
    v64 = (d64 * d64).mean(-1, keepdims=True)
    assert_close(an, d64 / np.sqrt(v64 + 1e-5), "float32", "chained")
    assert_close(bn, d64 * 2.0 + v64, "float32", "chained")
    assert_close(gt.asnumpy(v), v64, "float32", "chained")


def test_write_to_the_input_after_a_pending_statistic():
    xn = _data((4, 16), np.float32, 16)
    x = gt.asarray(xn)
    m = gt.max(x, axis=-1, keepdims=True)
    s = gt.sum(gt.exp(x - m), axis=-1, keepdims=True)
    x[...] = 0.0  # the statistics read the old values
    np.testing.assert_array_equal(gt.asnumpy(m), xn.max(-1, keepdims=True))
    ref = np.exp(xn.astype(np.float64) - xn.max(-1, keepdims=True)).sum(-1, keepdims=True)
    assert_close(gt.asnumpy(s), ref, "float32", "chained")


def test_synchronize_computes_pending_statistics():
    x = gt.asarray(_data((4, 8), np.float32, 17))
    m = gt.sum(x, axis=-1, keepdims=True)
    assert type(m._storage) is _fusion._PendingStorage
    gt.synchronize()
    assert type(m._storage) is not _fusion._PendingStorage


def test_fallbacks_give_the_same_values():
    """Statistics of different axes, a view of a statistic, a non-float statistic: the eager path."""
    xn = _data((6, 8), np.float32, 18)
    x = gt.asarray(xn)
    a = gt.max(x, axis=0, keepdims=True)
    b = gt.max(x, axis=1, keepdims=True)
    np.testing.assert_allclose(gt.asnumpy(x - a - b), xn - xn.max(0, keepdims=True) - xn.max(1, keepdims=True),
                               **tol("float32", "elementwise"))
    m = gt.sum(x, axis=-1, keepdims=True)
    np.testing.assert_allclose(gt.asnumpy(gt.reshape(m, (1, 6)) + x[:1, :6]),
                               xn.sum(-1).reshape(1, 6) + xn[:1, :6], **tol("float32", "accumulated_abs"))
    xi = gt.asarray(np.arange(12, dtype=np.int32).reshape(3, 4))
    np.testing.assert_array_equal(gt.asnumpy(xi - gt.max(xi, axis=-1, keepdims=True)),
                                  np.arange(12).reshape(3, 4) - np.arange(12).reshape(3, 4).max(-1, keepdims=True))


# ---------------------------------------------------------------------------------------------
# random row programs: chained statistics of elementwise expressions, fused against unfused
# ---------------------------------------------------------------------------------------------
_UNARY = [lambda xp, a: xp.exp(a * 0.25), lambda xp, a: xp.abs(a), lambda xp, a: a * a, lambda xp, a: xp.tanh(a)]
_STATS = ["sum", "mean", "max", "min"]


@settings(max_examples=6, deadline=None)
@given(shape=st.sampled_from([(4, 9), (3, 5, 8), (17,), (2, 3, 4)]), axis_pick=st.integers(0, 7),
       ops=st.lists(st.tuples(st.integers(0, len(_UNARY) - 1), st.sampled_from(_STATS)), min_size=1, max_size=3),
       dtype=st.sampled_from(["float32", "float16"]))
def test_random_row_programs(shape, axis_pick, ops, dtype):
    axes = [-1, 0, (0, -1)] if len(shape) > 1 else [-1, 0]
    axis = axes[axis_pick % len(axes)]
    xn = _data(shape, dtype, axis_pick)

    def program(xp, x):
        y = x
        for u, stat in ops:
            s = getattr(xp, stat)(_UNARY[u](xp, y), axis=axis, keepdims=True)
            y = (y - s) * 0.5
        return y

    fused, unfused, ref = _run(program, [xn], dtype)
    rtol, _ = tolerance(dtype, "chained")
    scale = max(1.0, float(np.max(np.abs(ref))))
    np.testing.assert_allclose(fused, unfused, rtol=rtol, atol=rtol * scale)


def test_repeated_patterns_reuse_plans():
    """The same structure again (new data, scalars in the output): the cached plan, same values;
    a statistic's elementwise values read again by the output (softmax's exp) stay in registers."""
    rng = np.random.default_rng(24)
    for scale in (2.0, -0.5, 3.0):
        xn = rng.standard_normal((8, 64)).astype(np.float32)
        x = gt.asarray(xn)
        m = gt.max(x, axis=-1, keepdims=True)
        e = gt.exp(x - m)
        y = scale * e / gt.sum(e, axis=-1, keepdims=True) - 0.5
        ref = np.exp(xn.astype(np.float64) - xn.max(-1, keepdims=True))
        assert_close(gt.asnumpy(y), scale * ref / ref.sum(-1, keepdims=True) - 0.5, "float32", "chained")
        assert_close(gt.asnumpy(m), xn.max(-1, keepdims=True), "float32", "exact")
