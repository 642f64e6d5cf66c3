"""gputensor.nn row ops and their fused gt-op forms against NumPy float64 references: the launch
shapes per dtype (float16 rows take twice the units per lane), rows whose length is not a
multiple of the vector width, 1-element rows, -inf rows and masks, float16 with float16
parameters; and the row fusion of softmax / log_softmax / layer norm written with gt ops (one
plan per structure, pending statistics bounded while a loop runs)."""

from __future__ import annotations

import numpy as np
import pytest

import gputensor as gt
from gputensor import _fusion, _fusion_rows, nn
from gputensor._backend import get_backend, ops_rows

from _compare import tol

rng = np.random.default_rng(77)
TOL = {n: tuple(tol(n, "nn").values()) for n in ("float16", "float32")}


def _close(got, want, dtype, factor=1.0):
    rtol, atol = TOL[dtype]
    got = gt.asnumpy(got)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol * factor, atol=atol * factor)


def _softmax(x):
    x = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)


def _log_softmax(x):
    x = x.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = x.max(-1, keepdims=True)
        return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def _layer_norm(x, w, b, eps=1e-5):
    x = x.astype(np.float64)
    m = x.mean(-1, keepdims=True)
    return (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + eps) * w.astype(np.float64) + b.astype(np.float64)


def _rms_norm(x, w, eps=1e-6):
    x = x.astype(np.float64)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w.astype(np.float64)


@pytest.mark.parametrize("rows,n", [(4096, 1024), (8192, 4096), (32768, 128), (64, 4097), (10, 1)])
def test_plans_move_the_same_bytes_per_lane(rows, n):
    """float16 rows aim for twice float32's units per lane: half the lanes per row (down to 1),
    as many row bytes per workgroup where the row is long enough."""
    p32 = ops_rows.plan_rows(rows, n, False, 4)
    p16 = ops_rows.plan_rows(rows, n, False, 2)
    assert ops_rows.target_units(2) == 2 * ops_rows.target_units(4)
    assert ops_rows.target_units(8) == ops_rows.target_units(4)
    assert p16.workgroup <= ops_rows.WORKGROUP and p32.workgroup <= ops_rows.WORKGROUP
    assert p16.tpr in (p32.tpr, max(1, p32.tpr // 2))
    assert p16.tpr * p16.vpt * 4 >= n if p16.cached else True
    if p32.tpr >= 2 and p32.tpr < ops_rows.WORKGROUP and p32.cached:
        assert p16.tpr == p32.tpr // 2 and p16.vpt == 2 * p32.vpt


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("shape", [(9, 1024), (5, 4096), (40, 128), (7, 1), (6, 37)])
def test_row_ops_shapes(dtype, shape):
    """Every row op on rows of the benchmark lengths (scaled down), of 1 element and of lengths
    that are not multiples of 4 or 8, with float16 parameters for float16 input."""
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    n = shape[-1]
    w = (rng.standard_normal(n) * 0.5 + 1).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    a = gt.asarray(x)
    _close(nn.softmax(a), _softmax(x), dtype)
    _close(nn.log_softmax(a), _log_softmax(x), dtype, factor=4)
    m = x.astype(np.float64).max(-1)
    _close(nn.logsumexp(a, axis=-1), m + np.log(np.exp(x - m[:, None]).sum(-1)), dtype, factor=4)
    factor = 1e3 if n == 1 else 25  # (a 1-element row normalises to 0 up to the rounding of eps)
    _close(nn.layer_norm(a, (n,), gt.asarray(w), gt.asarray(b)), _layer_norm(x, w, b), dtype, factor=factor)
    _close(nn.rms_norm(a, (n,), gt.asarray(w)), _rms_norm(x, w), dtype, factor=25)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_minus_inf_rows_and_masks(dtype):
    """Masked entries (-inf) get probability 0 and log-probability -inf; a row of only -inf
    gives NaN (as torch), logsumexp -inf; on cached rows of paired float16 units too."""
    x = (rng.standard_normal((6, 256)) * 2).astype(dtype)
    x[0, ::3] = -np.inf
    x[1] = -np.inf
    x[2, :255] = -np.inf  # one finite entry
    a = gt.asarray(x)
    got = gt.asnumpy(nn.softmax(a)).astype(np.float64)
    want = _softmax(x)
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.isnan(got[1]).all()
    np.testing.assert_allclose(np.nan_to_num(got), np.nan_to_num(want), **tol("float16", "nn"))
    assert got[2, 255] == 1.0 and not got[0, ::3].any()
    ls = gt.asnumpy(nn.log_softmax(a)).astype(np.float64)
    assert np.isneginf(ls[0, ::3]).all() and ls[2, 255] == 0.0
    lse = gt.asnumpy(nn.logsumexp(a, axis=-1)).astype(np.float64)
    assert np.isneginf(lse[1]) and np.isfinite(lse[[0, 2, 3]]).all()


# ---- the same ops written with gt ops (row fusion) ------------------------------------------------
def _gt_layer_norm(x, w, b, eps):
    mu = gt.mean(x, axis=-1, keepdims=True)
    d = x - mu
    var = gt.mean(d * d, axis=-1, keepdims=True)
    return d / gt.sqrt(var + eps) * w + b


def _gt_log_softmax(x):
    m = gt.max(x, axis=-1, keepdims=True)
    return x - m - gt.log(gt.sum(gt.exp(x - m), axis=-1, keepdims=True))


def _gt_softmax(x):
    e = gt.exp(x - gt.max(x, axis=-1, keepdims=True))
    return e / gt.sum(e, axis=-1, keepdims=True)


def test_fused_patterns_plan_once(monkeypatch):
    """layer norm and log_softmax written with gt ops (DAGs over two DAG operands, which have no
    structure key) are planned once per structure and replayed with each call's scalars."""
    plans = []
    real = _fusion_rows._plan
    monkeypatch.setattr(_fusion_rows, "_plan", lambda *a, **k: plans.append(1) or real(*a, **k))
    x = rng.standard_normal((12, 40)).astype(np.float32) * 2 + 1
    w = rng.standard_normal(40).astype(np.float32)
    b = rng.standard_normal(40).astype(np.float32)
    a, wa, ba = gt.asarray(x), gt.asarray(w), gt.asarray(b)
    with gt.fusion(True):
        for eps in (1e-5, 0.5, 3.0):
            _close(_gt_layer_norm(a, wa, ba, eps), _layer_norm(x, w, b, eps), "float32", factor=10)
        assert len(plans) == 1
        for _ in range(3):
            _close(_gt_log_softmax(a), _log_softmax(x), "float32", factor=4)
        assert len(plans) == 2


def test_pending_statistics_bounded_in_a_loop():
    """A loop of softmaxes written with gt ops, every result held: at most 8 statistics stay
    pending (older patterns are recorded as the loop goes), each pattern is still one row
    kernel, and every result is right."""
    xs = [rng.standard_normal((16, 64)).astype(np.float32) * 3 for _ in range(12)]
    arrays = [gt.asarray(x) for x in xs]
    gt.synchronize()
    stats = get_backend().context.stats
    with gt.fusion(True):
        before = stats["dispatches"]
        held = []
        for a in arrays:
            held.append(_gt_softmax(a))
            assert len(_fusion._PENDING) <= _fusion_rows.MAX_STATISTICS
        assert stats["dispatches"] - before >= len(arrays) - 4  # recorded during the loop
        gt.synchronize()
        assert stats["dispatches"] - before == len(arrays)
    for y, x in zip(held, xs):
        _close(y, _softmax(x), "float32")


def test_fused_softmax_with_scalars_in_statistic_and_output():
    """A statistic whose source holds a scalar (max(x * 2)) beside a kept source (exp(x - m))
    and a scalar in the output: the output's scalars are the ones it names."""
    x = rng.standard_normal((4, 16)).astype(np.float32)
    a = gt.asarray(x)
    with gt.fusion(True):
        m = gt.max(a * 2.0, axis=-1, keepdims=True)
        e = gt.exp(a - m)
        del m
        y = e / gt.sum(e, axis=-1, keepdims=True) + 1.0
        del e
        got = gt.asnumpy(y)
    m = (x.astype(np.float64) * 2.0).max(-1, keepdims=True)
    e = np.exp(x - m)
    np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True) + 1.0, **tol("float32", "nn"))


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_fused_log_softmax_hoists_the_row_constant(monkeypatch, dtype):
    """log_softmax written with gt ops: ``log(sum)`` is evaluated once per row (a hoisted row
    constant), the output per element; -inf entries and an all -inf row as unfused."""
    specs = []
    call = _fusion_rows.ops_row_fusion.RowFusionCall
    real = call.launch
    monkeypatch.setattr(call, "launch", lambda self, *a: specs.append(self.spec) or real(self, *a))
    x = (rng.standard_normal((6, 24)) * 3).astype(dtype)
    x[0, ::5] = -np.inf
    x[1] = -np.inf
    a = gt.asarray(x)
    with gt.fusion(True):
        got = gt.asnumpy(_gt_log_softmax(a)).astype(np.float64)
    with gt.fusion(False):
        eager = gt.asnumpy(_gt_log_softmax(a)).astype(np.float64)
    assert len(specs) == 1 and len(specs[0].hoisted) == 1
    assert np.array_equal(np.isnan(got), np.isnan(eager)) and np.array_equal(np.isneginf(got), np.isneginf(eager))
    ok = np.isfinite(eager)
    np.testing.assert_allclose(got[ok], eager[ok], rtol=TOL[dtype][0], atol=TOL[dtype][1])
    np.testing.assert_allclose(got[ok], _log_softmax(x)[ok], rtol=4 * TOL[dtype][0], atol=4 * TOL[dtype][1])


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("shape,axis", [((33, 128), -1), ((128, 9), 0)])
def test_fused_full_rows_and_rows_past_the_end(dtype, shape, axis):
    """Row kernels of gt-op softmax / layer norm / logsumexp whose rows fill every lane (no
    bounds checks) with a last workgroup holding rows past the end, strided rows, and rows
    that do not fill the lanes; float16 outputs stored as whole words."""
    x = (rng.standard_normal(shape) * 2).astype(dtype)
    a = gt.asarray(x)
    x64 = x.astype(np.float64)
    with gt.fusion(True):
        e = gt.exp(a - gt.max(a, axis=axis, keepdims=True))
        sm = gt.asnumpy(e / gt.sum(e, axis=axis, keepdims=True))
        del e
        mu = gt.mean(a, axis=axis, keepdims=True)
        d = a - mu
        ln = gt.asnumpy(d / gt.sqrt(gt.mean(d * d, axis=axis, keepdims=True) + 1e-5))
        del mu, d
        m = gt.max(a, axis=axis, keepdims=True)
        lse = gt.asnumpy(m + gt.log(gt.sum(gt.exp(a - m), axis=axis, keepdims=True)))
    em = np.exp(x64 - x64.max(axis, keepdims=True))
    np.testing.assert_allclose(sm.astype(np.float64), em / em.sum(axis, keepdims=True), rtol=TOL[dtype][0],
                               atol=TOL[dtype][1])
    dm = x64 - x64.mean(axis, keepdims=True)
    want = dm / np.sqrt((dm * dm).mean(axis, keepdims=True) + 1e-5)
    np.testing.assert_allclose(ln.astype(np.float64), want, rtol=8 * TOL[dtype][0], atol=8 * TOL[dtype][1])
    mx = x64.max(axis, keepdims=True)
    np.testing.assert_allclose(lse.astype(np.float64), mx + np.log(np.exp(x64 - mx).sum(axis, keepdims=True)),
                               rtol=4 * TOL[dtype][0], atol=4 * TOL[dtype][1])


@pytest.mark.parametrize("base,start,stop", [((8, 36), 1, 33), ((6, 36), 4, 36), ((6, 34), 2, 34), ((5, 40), 0, 40)])
def test_fused_vector_units_and_unaligned_views(monkeypatch, base, start, stop):
    """float32 gt-op softmax and layer norm over row views: vector units where the rows start
    at multiples of 4 elements, element loads for a view whose window starts mid-vector (the
    output still stored as vectors) or whose rows are not 4-aligned."""
    specs = []
    real = _fusion_rows.ops_row_fusion.row_fusion_defines
    monkeypatch.setattr(_fusion_rows.ops_row_fusion, "row_fusion_defines",
                        lambda spec: specs.append(spec) or real(spec))
    monkeypatch.setattr(_fusion_rows, "_PLANS", {})  # (a kept plan compiles no kernel variant)
    x = (rng.standard_normal(base) * 2).astype(np.float32)
    w = rng.standard_normal(stop - start).astype(np.float32)
    a = gt.asarray(x)[:, start:stop]
    wa = gt.asarray(w)
    h = x[:, start:stop].astype(np.float64)
    with gt.fusion(True):
        sm = gt.asnumpy(_gt_softmax(a))
        ln = gt.asnumpy(_gt_layer_norm(a, wa, wa, 1e-5))
    np.testing.assert_allclose(sm, _softmax(h), **tol("float32", "nn"))
    rtol, atol = TOL["float32"]
    np.testing.assert_allclose(ln, _layer_norm(h, w, w), rtol=5 * rtol, atol=5 * atol)
    if base[1] % 4 == 0:  # (softmax's slots: x, the output, its two statistics)
        assert specs[0].lanes == 4 and specs[0].vec == (start % 4 == 0, True, False, False)
    else:
        assert specs[0].lanes == 1 and not any(specs[0].vec)


def test_fused_streamed_rows_with_vector_units():
    """Rows too long for the registers with three operands read along them (layer norm with
    weight and bias): streamed, the vector-bound operands read element by element."""
    x = (rng.standard_normal((128, 8192)) + 3).astype(np.float32)
    w = rng.standard_normal(8192).astype(np.float32)
    b = rng.standard_normal(8192).astype(np.float32)
    with gt.fusion(True):
        got = gt.asnumpy(_gt_layer_norm(gt.asarray(x), gt.asarray(w), gt.asarray(b), 1e-5))
    rtol, atol = TOL["float32"]
    np.testing.assert_allclose(got, _layer_norm(x, w, b), rtol=5 * rtol, atol=50 * atol)


def test_fused_row_constants_with_scalars_and_row_operands(monkeypatch):
    """Row constants holding scalars and operands constant along the row (a per-row scale g):
    ``d * (g / sqrt(var + eps))`` evaluates ``g / sqrt(var + eps)`` once per row, with each
    call's eps (the cached plan replayed)."""
    specs = []
    call = _fusion_rows.ops_row_fusion.RowFusionCall
    real = call.launch
    monkeypatch.setattr(call, "launch", lambda self, *a: specs.append(self.spec) or real(self, *a))
    x = (rng.standard_normal((10, 48)) * 2 + 1).astype(np.float32)
    g = rng.standard_normal((10, 1)).astype(np.float32)
    a, ga = gt.asarray(x), gt.asarray(g)
    x64 = x.astype(np.float64)
    for eps in (1e-5, 2.0):
        with gt.fusion(True):
            mu = gt.mean(a, axis=-1, keepdims=True)
            d = a - mu
            var = gt.mean(d * d, axis=-1, keepdims=True)
            got = gt.asnumpy(d * (ga / gt.sqrt(var + eps)))
            del mu, d, var
        dm = x64 - x64.mean(-1, keepdims=True)
        want = dm * (g / np.sqrt((dm * dm).mean(-1, keepdims=True) + eps))
        np.testing.assert_allclose(got, want, rtol=TOL["float32"][0], atol=5 * TOL["float32"][1])
    assert len(specs) == 2 and len(specs[0].hoisted) == 1 and specs[0] == specs[1]
