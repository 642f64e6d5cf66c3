"""gputensor.nn against NumPy float64 references: row ops (softmax, log_softmax, logsumexp,
layer_norm, rms_norm), conv2d and scaled_dot_product_attention, incl. odd sizes, long rows,
many short rows, non-contiguous views, special values, empty and 0-d inputs, and errors."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gputensor as gt
from gputensor import nn

from _compare import tol

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the benchmarks package lives beside gputensor
    sys.path.insert(0, str(ROOT))

#: (rtol, atol) per dtype of results against float64 references (the test's own table).
TOL = {n: tuple(tol(n, "nn").values()) for n in ("float16", "float32", "float64")}
#: float64 needs the adapter's shader-f64 (lavapipe and the H200 have it; Metal has not).
F64 = pytest.param("float64", marks=pytest.mark.requires("shader-f64"))
DTYPES = ["float16", "float32", F64]

rng = np.random.default_rng(1234)


def _data(shape, dtype, scale=3.0, shift=0.0):
    return (rng.standard_normal(shape) * scale + shift).astype(dtype)


def _close(got, want, dtype, factor=1.0):
    rtol, atol = TOL[str(dtype)]
    got = gt.asnumpy(got) if isinstance(got, gt.GpuArray) else got
    assert got.dtype == np.dtype(str(dtype))
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol * factor, atol=atol * factor)


# ---- references --------------------------------------------------------------------------------
def ref_softmax(x, axis):
    x = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)


def ref_log_softmax(x, axis):
    x = x.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = x.max(axis=axis, keepdims=True)
        return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def ref_logsumexp(x, axis, keepdims=False):
    x = x.astype(np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.exp(x - m).sum(axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def ref_layer_norm(x, k, w=None, b=None, eps=1e-5):
    x = x.astype(np.float64)
    ax = tuple(range(x.ndim - k, x.ndim))
    m = x.mean(axis=ax, keepdims=True)
    v = ((x - m) ** 2).mean(axis=ax, keepdims=True)
    y = (x - m) / np.sqrt(v + eps)
    if w is not None:
        y = y * w.astype(np.float64)
    if b is not None:
        y = y + b.astype(np.float64)
    return y


def ref_rms_norm(x, k, w=None, eps=1e-6):
    x = x.astype(np.float64)
    ax = tuple(range(x.ndim - k, x.ndim))
    y = x / np.sqrt((x * x).mean(axis=ax, keepdims=True) + eps)
    return y if w is None else y * w.astype(np.float64)


# ---- softmax family ----------------------------------------------------------------------------
ROW_SHAPES = [((5,), 0), ((3, 7), -1), ((3, 7), 0), ((2, 10000), -1), ((4, 4096), 1), ((2000, 3), -1),
              ((300, 3), 0), ((2, 3, 5, 4), 2), ((6, 1), -1), ((1, 1), 0)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axis", ROW_SHAPES)
def test_softmax_family(shape, axis, dtype):
    x = _data(shape, dtype)
    a = gt.asarray(x)
    _close(nn.softmax(a, axis=axis), ref_softmax(x, axis), dtype)
    _close(nn.log_softmax(a, axis=axis), ref_log_softmax(x, axis), dtype, factor=4)
    _close(nn.logsumexp(a, axis=axis), ref_logsumexp(x, axis), dtype, factor=4)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_softmax_non_contiguous_views(dtype):
    x = _data((12, 40), dtype)
    a = gt.asarray(x)
    for view, host in ((a.T, x.T), (a[::2, 1::3], x[::2, 1::3]), (a[::-1, ::-1], x[::-1, ::-1]),
                       (gt.permute_dims(gt.reshape(a, (3, 4, 40)), (2, 0, 1)), x.reshape(3, 4, 40).transpose(2, 0, 1))):
        for axis in range(host.ndim):
            _close(nn.softmax(view, axis=axis), ref_softmax(host, axis), dtype)
            _close(nn.logsumexp(view, axis=axis), ref_logsumexp(host, axis), dtype, factor=4)


def test_softmax_of_a_lazy_expression():
    x = _data((8, 33), np.float32)
    a = gt.asarray(x)
    _close(nn.softmax(a * 2 + 1, axis=-1), ref_softmax(x.astype(np.float64) * 2 + 1, -1), "float32")


def test_softmax_special_values():
    inf = np.inf
    x = np.array([[-inf, -inf, -inf], [inf, 1.0, 0.0], [np.nan, 1.0, 2.0], [-inf, 0.0, 1.0], [1e30, 1e30, -1e30]],
                 np.float32)
    got = gt.asnumpy(nn.softmax(gt.asarray(x), axis=-1))
    assert np.isnan(got[:3]).all()  # torch: all -inf, +inf and NaN rows are NaN
    np.testing.assert_allclose(got[3], ref_softmax(x[3:4], -1)[0], **tol("float32", "elementwise"))
    np.testing.assert_allclose(got[4], [0.5, 0.5, 0.0], **tol("float32", "elementwise"))
    lse = gt.asnumpy(nn.logsumexp(gt.asarray(x), axis=-1))
    assert lse[0] == -inf and lse[1] == inf and np.isnan(lse[2])
    np.testing.assert_allclose(lse[3:], ref_logsumexp(x[3:], -1), **tol("float32", "elementwise"))


def test_softmax_large_magnitudes_are_stable():
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1001.0, -1002.0]], np.float32)
    _close(nn.softmax(gt.asarray(x)), ref_softmax(x, -1), "float32")
    _close(nn.log_softmax(gt.asarray(x)), ref_log_softmax(x, -1), "float32", factor=10)


@pytest.mark.parametrize("axis,keepdims", [(None, False), (None, True), ((0, 2), False), ((2, 0), True), (1, True),
                                           ((-1,), False), ((), False)])
def test_logsumexp_axes(axis, keepdims):
    x = _data((4, 5, 6), np.float32)
    got = nn.logsumexp(gt.asarray(x), axis=axis, keepdims=keepdims)
    want = x.astype(np.float64) if axis == () else ref_logsumexp(x, axis, keepdims)
    assert got.shape == want.shape
    _close(got, want, "float32", factor=4)


def test_empty_and_zero_d():
    for f in (nn.softmax, nn.log_softmax):
        for shape in ((0, 5), (3, 0), (0,)):
            out = f(gt.asarray(np.zeros(shape, np.float32)), axis=-1)
            assert out.shape == shape and out.dtype == gt.float32
        assert float(f(gt.asarray(np.float32(3.0)))) == (1.0 if f is nn.softmax else 0.0)
    assert gt.asnumpy(nn.logsumexp(gt.asarray(np.zeros((3, 0), np.float32)), axis=1)).tolist() == [-np.inf] * 3
    assert nn.logsumexp(gt.asarray(np.zeros((0, 4), np.float32)), axis=1).shape == (0,)
    assert float(nn.logsumexp(gt.asarray(np.float32(2.5)))) == 2.5
    assert nn.layer_norm(gt.asarray(np.zeros((0, 4), np.float32)), 4).shape == (0, 4)
    assert nn.rms_norm(gt.asarray(np.zeros((2, 0), np.float32)), (0,)).shape == (2, 0)


@given(st.lists(st.integers(1, 9), min_size=1, max_size=3), st.integers(-3, 2), st.booleans())
def test_softmax_hypothesis(shape, axis, transpose):
    axis = axis % len(shape)
    x = _data(tuple(shape), np.float32)
    a = gt.asarray(x)
    if transpose:
        a, x = gt.permute_dims(a, tuple(reversed(range(x.ndim)))), x.transpose()
    _close(nn.softmax(a, axis=axis), ref_softmax(x, axis), "float32")
    _close(nn.logsumexp(a, axis=axis), ref_logsumexp(x, axis), "float32", factor=4)


# ---- layer_norm, rms_norm ----------------------------------------------------------------------
NORM_CASES = [((4, 4096), 1), ((3, 5, 6), 2), ((3, 10000), 1), ((1000, 3), 1), ((2, 7, 9), 1), ((5,), 1),
              ((4, 3), 0)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,k", NORM_CASES)
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm_and_rms_norm(shape, k, dtype, affine):
    x = _data(shape, dtype, scale=2.0, shift=3.0)
    ns = shape[len(shape) - k:]
    w = _data(ns, dtype, 1.0) if affine else None
    b = _data(ns, dtype, 1.0) if affine else None
    a = gt.asarray(x)
    wa = None if w is None else gt.asarray(w)
    ba = None if b is None else gt.asarray(b)
    _close(nn.layer_norm(a, ns, wa, ba), ref_layer_norm(x, k, w, b), dtype, factor=8)
    _close(nn.rms_norm(a, ns, wa), ref_rms_norm(x, k, w), dtype, factor=8)


@pytest.mark.requires("shader-f64")
def test_norms_non_contiguous_and_promotion():
    x = _data((6, 10), np.float32)
    w = _data((6,), np.float64)
    a = gt.asarray(x)
    # rows along a transposed view (axis 0 of x): strided row reads
    _close(nn.layer_norm(a.T, 6, gt.asarray(w), eps=1e-3), ref_layer_norm(x.T, 1, w, eps=1e-3), "float64", factor=1e6)
    _close(nn.rms_norm(a[:, ::-2], 5), ref_rms_norm(x[:, ::-2], 1), "float32")
    _close(nn.layer_norm(gt.permute_dims(gt.reshape(a, (2, 3, 10)), (1, 0, 2)), (2, 10)),
           ref_layer_norm(x.reshape(2, 3, 10).transpose(1, 0, 2), 2), "float32")


def test_layer_norm_constant_rows_and_large_offsets():
    # the mean of a float32 row is good to about half an ulp of the offset, so the deviations are
    # only as accurate as ulp(offset) / std: 6e-5 / 0.5 here
    x = np.full((3, 17), 1e3, np.float32)
    x[1] += np.arange(17, dtype=np.float32) * 1e-1
    x[2] -= np.arange(17, dtype=np.float32) * 1e-1
    got = gt.asnumpy(nn.layer_norm(gt.asarray(x), 17))
    assert not got[0].any()
    np.testing.assert_allclose(got[1:], ref_layer_norm(x, 1)[1:], **tol("float32", "layer_norm_outlier"))


def test_row_op_errors():
    xi = gt.asarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    xb = gt.asarray(np.ones((2, 3), bool))
    xf = gt.asarray(np.ones((2, 3), np.float32))
    for f in (nn.softmax, nn.log_softmax, nn.logsumexp):
        for bad in (xi, xb):
            with pytest.raises(TypeError):
                f(bad)
        with pytest.raises(TypeError):
            f(np.ones(3))
        with pytest.raises(ValueError):
            f(xf, axis=2)
    with pytest.raises(ValueError):
        nn.logsumexp(xf, axis=(0, 0))
    for f in (nn.layer_norm, nn.rms_norm):
        with pytest.raises(TypeError):
            f(xi, 3)
        with pytest.raises(ValueError):
            f(xf, 4)
        with pytest.raises(ValueError):
            f(xf, (2, 2))
        with pytest.raises(ValueError):
            f(xf, 3, gt.asarray(np.ones(2, np.float32)))
        with pytest.raises(TypeError):
            f(xf, 3, gt.asarray(np.ones(3, np.int32)))
        with pytest.raises(TypeError):
            f(xf, 3, eps="small")
    with pytest.raises(ValueError):
        nn.layer_norm(xf, 3, None, gt.asarray(np.ones((1, 3), np.float32)))


# ---- conv2d ------------------------------------------------------------------------------------
def ref_conv2d(x, w, b, stride, lo, hi, dil, groups):
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, c, h, wd = x.shape
    k, cg, r, s = w.shape
    xp = np.zeros((n, c, h + lo[0] + hi[0], wd + lo[1] + hi[1]))
    xp[:, :, lo[0]:lo[0] + h, lo[1]:lo[1] + wd] = x
    oh = (xp.shape[2] - dil[0] * (r - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dil[1] * (s - 1) - 1) // stride[1] + 1
    out = np.zeros((n, k, oh, ow))
    kg = k // groups
    for g in range(groups):
        for i in range(r):
            for j in range(s):
                patch = xp[:, g * cg:(g + 1) * cg, i * dil[0]: i * dil[0] + stride[0] * (oh - 1) + 1: stride[0],
                           j * dil[1]: j * dil[1] + stride[1] * (ow - 1) + 1: stride[1]]
                out[:, g * kg:(g + 1) * kg] += np.einsum("nchw,kc->nkhw", patch, w[g * kg:(g + 1) * kg, :, i, j])
    if b is not None:
        out += b.astype(np.float64)[None, :, None, None]
    return out


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


CONV_CASES = [
    ((2, 3, 7, 6), (4, 3, 3, 3), 1, 1, 1, 1, True),
    ((2, 4, 9, 8), (6, 2, 3, 2), 2, (1, 2), 1, 2, False),
    ((1, 3, 10, 10), (5, 3, 3, 3), 1, 2, 2, 1, True),
    ((2, 2, 8, 7), (3, 2, 4, 2), 1, "same", 1, 1, True),
    ((2, 4, 6, 6), (4, 1, 3, 3), 1, "valid", 1, 4, False),
    ((3, 4, 6, 6), (4, 2, 2, 2), 1, "same", (2, 1), 2, True),
    ((2, 5, 5, 5), (7, 5, 1, 1), (2, 1), 0, 1, 1, True),
    ((1, 2, 4, 4), (3, 2, 4, 4), 1, 0, 1, 1, False),
]


@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups,has_bias", CONV_CASES)
def test_conv2d(xs, ws, stride, padding, dilation, groups, has_bias):
    x = _data(xs, np.float32, 1.0)
    w = _data(ws, np.float32, 1.0)
    b = _data((ws[0],), np.float32, 1.0) if has_bias else None
    got = nn.conv2d(gt.asarray(x), gt.asarray(w), None if b is None else gt.asarray(b), stride=stride,
                    padding=padding, dilation=dilation, groups=groups)
    dil = _pair(dilation)
    if padding == "same":
        ext = [dil[i] * (ws[2 + i] - 1) for i in range(2)]
        lo, hi = tuple(e // 2 for e in ext), tuple(e - e // 2 for e in ext)
    elif padding == "valid":
        lo = hi = (0, 0)
    else:
        lo = hi = _pair(padding)
    want = ref_conv2d(x, w, b, _pair(stride), lo, hi, dil, groups)
    assert got.shape == want.shape
    _close(got, want, "float32", factor=20)


@pytest.mark.parametrize("dtype", ["float16", F64])
def test_conv2d_dtypes_and_views(dtype):
    x = _data((2, 3, 6, 7), dtype, 1.0)
    w = _data((4, 3, 3, 3), dtype, 0.5)
    a = gt.asarray(x)
    got = nn.conv2d(a, gt.asarray(w), padding=1)
    _close(got, ref_conv2d(x, w, None, (1, 1), (1, 1), (1, 1), (1, 1), 1), dtype, factor=4)
    # a non-contiguous input view and an unbatched input
    xt = np.ascontiguousarray(x.transpose(0, 1, 3, 2))
    got = nn.conv2d(gt.permute_dims(gt.asarray(xt), (0, 1, 3, 2)), gt.asarray(w))
    _close(got, ref_conv2d(x, w, None, (1, 1), (0, 0), (0, 0), (1, 1), 1), dtype, factor=4)
    got = nn.conv2d(gt.asarray(x[0]), gt.asarray(w), stride=2)
    _close(got, ref_conv2d(x[:1], w, None, (2, 2), (0, 0), (0, 0), (1, 1), 1)[0], dtype, factor=4)


def test_conv2d_errors():
    x = gt.asarray(np.ones((1, 4, 5, 5), np.float32))
    w = gt.asarray(np.ones((2, 4, 3, 3), np.float32))
    with pytest.raises(TypeError):
        nn.conv2d(gt.asarray(np.ones((1, 4, 5, 5), np.int32)), w)
    with pytest.raises(ValueError):
        nn.conv2d(gt.asarray(np.ones((4, 5), np.float32)), w)
    with pytest.raises(ValueError):
        nn.conv2d(x, gt.asarray(np.ones((2, 3, 3, 3), np.float32)))
    with pytest.raises(ValueError):
        nn.conv2d(x, w, groups=3)
    with pytest.raises(ValueError):
        nn.conv2d(x, w, gt.asarray(np.ones(3, np.float32)))
    with pytest.raises(ValueError):
        nn.conv2d(x, w, stride=0)
    with pytest.raises(ValueError):
        nn.conv2d(x, w, padding=-1)
    with pytest.raises(ValueError):
        nn.conv2d(x, w, padding="same", stride=2)
    with pytest.raises(ValueError):
        nn.conv2d(x, w, padding="full")
    with pytest.raises(ValueError):
        nn.conv2d(x, w, dilation=3)
    with pytest.raises(TypeError):
        nn.conv2d(x, w, stride=1.5)
    empty = nn.conv2d(gt.asarray(np.ones((0, 4, 5, 5), np.float32)), w)
    assert empty.shape == (0, 2, 3, 3)


# ---- scaled_dot_product_attention --------------------------------------------------------------
def ref_sdpa(q, k, v, mask=None, causal=False, scale=None):
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    L, S = s.shape[-2:]
    if causal:
        s = np.where(np.tril(np.ones((L, S), bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    return ref_softmax(s, -1) @ v


SDPA_CASES = [
    ((2, 3, 17, 16), (2, 3, 17, 16), (2, 3, 17, 16), True),
    ((2, 3, 70, 16), (2, 3, 70, 16), (2, 3, 70, 16), False),
    ((2, 5, 8), (2, 9, 8), (2, 9, 8), True),
    ((2, 9, 8), (2, 5, 8), (2, 5, 8), True),
    ((1, 70, 32), (1, 130, 32), (1, 130, 24), False),
    ((1, 70, 32), (1, 130, 32), (1, 130, 24), True),
    ((3, 1, 16), (3, 600, 16), (3, 600, 16), False),
    ((3, 1, 16), (3, 600, 16), (3, 600, 16), True),
    ((4, 64), (80, 64), (80, 64), False),
    ((2, 2, 1, 5, 12), (2, 1, 3, 7, 12), (1, 2, 3, 7, 12), False),
]


@pytest.mark.parametrize("qs,ks,vs,causal", SDPA_CASES)
def test_sdpa(qs, ks, vs, causal):
    q, k, v = _data(qs, np.float32, 1.0), _data(ks, np.float32, 1.0), _data(vs, np.float32, 1.0)
    got = nn.scaled_dot_product_attention(gt.asarray(q), gt.asarray(k), gt.asarray(v), is_causal=causal)
    want = ref_sdpa(q, k, v, causal=causal)
    assert got.shape == want.shape
    _close(got, want, "float32", factor=5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sdpa_masks(dtype):
    q, k, v = _data((2, 2, 6, 8), dtype, 1.0), _data((2, 2, 7, 8), dtype, 1.0), _data((2, 2, 7, 8), dtype, 1.0)
    bmask = rng.random((6, 7)) > 0.4
    bmask[2] = False  # a fully masked query row: NaN, as torch
    bmask[3] = True
    got = gt.asnumpy(nn.scaled_dot_product_attention(gt.asarray(q), gt.asarray(k), gt.asarray(v),
                                                     attn_mask=gt.asarray(bmask)))
    want = ref_sdpa(q, k, v, mask=bmask)
    assert np.isnan(got[:, :, 2]).all() and not np.isnan(np.delete(got, 2, axis=2)).any()
    np.testing.assert_allclose(np.delete(got, 2, axis=2).astype(np.float64), np.delete(want, 2, axis=2),
                               rtol=TOL[dtype][0] * 5, atol=TOL[dtype][1] * 5)
    fmask = _data((2, 1, 6, 7), dtype, 1.0)
    got = nn.scaled_dot_product_attention(gt.asarray(q), gt.asarray(k), gt.asarray(v), attn_mask=gt.asarray(fmask),
                                          scale=0.3)
    _close(got, ref_sdpa(q, k, v, mask=fmask, scale=0.3), dtype, factor=5)
    got = nn.scaled_dot_product_attention(gt.asarray(q), gt.asarray(k), gt.asarray(v), is_causal=True)
    _close(got, ref_sdpa(q, k, v, causal=True), dtype, factor=5)


def test_sdpa_views_and_scale():
    q, k, v = _data((2, 8, 16), np.float32, 1.0), _data((2, 16, 9), np.float32, 1.0), _data((2, 9, 16), np.float32, 1.0)
    # k given as a transposed view (..., S, E) of a (..., E, S) array
    got = nn.scaled_dot_product_attention(gt.asarray(q), gt.asarray(k).mT, gt.asarray(v), scale=0.5)
    _close(got, ref_sdpa(q, np.swapaxes(k, -1, -2), v, scale=0.5), "float32", factor=5)


def test_sdpa_errors_and_empty():
    q = gt.asarray(np.ones((2, 4, 8), np.float32))
    k = gt.asarray(np.ones((2, 5, 8), np.float32))
    v = gt.asarray(np.ones((2, 5, 8), np.float32))
    with pytest.raises(TypeError):
        nn.scaled_dot_product_attention(gt.asarray(np.ones((2, 4, 8), np.int32)), k, v)
    with pytest.raises(ValueError):
        nn.scaled_dot_product_attention(q, gt.asarray(np.ones((2, 5, 7), np.float32)), v)
    with pytest.raises(ValueError):
        nn.scaled_dot_product_attention(q, k, gt.asarray(np.ones((2, 6, 8), np.float32)))
    with pytest.raises(ValueError):
        nn.scaled_dot_product_attention(gt.asarray(np.ones(8, np.float32)), k, v)
    with pytest.raises(ValueError):
        nn.scaled_dot_product_attention(q, k, v, attn_mask=gt.asarray(np.ones((4, 5), bool)), is_causal=True)
    with pytest.raises(ValueError):
        nn.scaled_dot_product_attention(q, k, v, attn_mask=gt.asarray(np.ones((3, 5), bool)))
    with pytest.raises(TypeError):
        nn.scaled_dot_product_attention(q, k, v, attn_mask=gt.asarray(np.ones((4, 5), np.int32)))
    with pytest.raises(TypeError):
        nn.scaled_dot_product_attention(q, k, v, is_causal=1)
    assert nn.scaled_dot_product_attention(gt.asarray(np.ones((2, 0, 8), np.float32)), k, v).shape == (2, 0, 8)
    zeros = nn.scaled_dot_product_attention(q, gt.asarray(np.ones((2, 0, 8), np.float32)),
                                            gt.asarray(np.ones((2, 0, 3), np.float32)))
    assert zeros.shape == (2, 4, 3) and not gt.asnumpy(zeros).any()


# ---- the benchmark module runs (quick mode) ------------------------------------------------------
def test_bench_nn_quick(tmp_path, capsys):
    from benchmarks import bench_nn

    out = tmp_path / "nn.json"
    status = bench_nn.main(["--quick", "--no-torch", "--only", "conv2d.1x1,sdpa.decode,softmax.f16.*,rms_norm.f32",
                            "--json", str(out)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert "conv2d.1x1" in printed and "softmax.f16" in printed
    import json

    results = json.loads(out.read_text())["results"]
    assert [r["case"] for r in results] == ["conv2d.1x1", "sdpa.decode.d16", "rms_norm.f32.64x256",
                                            "softmax.f16.64x256", "rms_norm.f32.33x37", "softmax.f16.33x37"]
    assert all(r["check"] == "numpy ok" and r["gputensor"]["wall_us"] > 0 for r in results)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_rows_of_unaligned_views(dtype):
    """Row starts that are not multiples of 4 elements (a view at an odd offset) read and write
    element by element; float16 outputs still own whole words; float16 rows at multiples of 4
    but not 8 elements use single vector units, at multiples of 8 paired ones."""
    x = _data((6, 13), dtype)
    a = gt.asarray(x)
    z = _data((6, 24), dtype)
    b = gt.asarray(z)
    for view, host in ((a[:, 1:5], x[:, 1:5]), (a[1:, 3:11], x[1:, 3:11]), (a[:, 1:], x[:, 1:]),
                       (b[:, 4:20], z[:, 4:20]), (b[:, 8:16], z[:, 8:16]), (b[::2, :16], z[::2, :16])):
        _close(nn.softmax(view), ref_softmax(host, -1), dtype)
        _close(nn.rms_norm(view, host.shape[-1]), ref_rms_norm(host, 1), dtype, factor=8)
        _close(nn.logsumexp(view, axis=-1), ref_logsumexp(host, -1), dtype, factor=4)


@pytest.mark.parametrize("shape,axis", [((3, 40000), -1), ((5000, 3), 0), ((2, 17000), 1)])
def test_streamed_rows(shape, axis):
    """Rows too long for the lanes' registers are streamed: one pass for the statistics, one
    for the output; -inf entries and an all -inf row included."""
    x = _data(shape, np.float32)
    index = [slice(None)] * 2
    index[1 - (axis % 2)] = 0
    first = x[tuple(index)]
    first[::7] = -np.inf
    index[1 - (axis % 2)] = 1
    x[tuple(index)] = -np.inf
    a = gt.asarray(x)
    got = gt.asnumpy(nn.softmax(a, axis=axis))
    want = ref_softmax(x, axis)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(np.nan_to_num(got), np.nan_to_num(want), **tol("float32", "softmax"))
    ls = gt.asnumpy(nn.log_softmax(a, axis=axis))
    ok = np.isfinite(ref_log_softmax(x, axis))
    np.testing.assert_allclose(ls[ok], ref_log_softmax(x, axis)[ok], **tol("float32", "chained_abs"))
    y = _data(shape, np.float32, 2.0, 5.0)
    if axis in (-1, 1):
        _close(nn.layer_norm(gt.asarray(y), shape[-1]), ref_layer_norm(y, 1), "float32", factor=20)
        _close(nn.rms_norm(gt.asarray(y), shape[-1]), ref_rms_norm(y, 1), "float32", factor=20)
    _close(nn.logsumexp(gt.asarray(y), axis=axis), ref_logsumexp(y, axis), "float32", factor=4)


# ---- kernel variants forced through their knobs (each checked here, on any adapter) --------------
#: shapes (q, k, v, causal) of the variant checks: head_dim 128 causal with L < S (the kernel runs
#: on the first L keys), 64 with L > S, a padded head_dim, composition-path calls (value dim !=
#: key dim, a boolean mask) that must not depend on the knob, and a long key sequence (splits).
VARIANT_SDPA_CASES = [
    ((1, 2, 70, 128), (1, 2, 90, 128), (1, 2, 90, 128), True),
    ((2, 1, 130, 64), (2, 1, 65, 64), (2, 1, 65, 64), False),
    ((1, 2, 67, 40), (1, 2, 67, 40), (1, 2, 67, 40), True),
    ((1, 70, 32), (1, 100, 32), (1, 100, 24), True),
    ((1, 1, 100, 64), (1, 1, 1500, 64), (1, 1, 1500, 64), False),  # key splits (the combine kernel)
]


SDPA_VARIANTS = ["flash", "flash-64x4-r8", "flash-32x4-r8", "flash-64x8-r8", "flash-64x4-r8-hp", "flash-64x4-hp"]


@pytest.mark.parametrize("kernel", SDPA_VARIANTS)
@pytest.mark.parametrize("qs,ks,vs,causal", VARIANT_SDPA_CASES)
def test_sdpa_kernel_variants(kernel, qs, ks, vs, causal):
    from gputensor._backend import config

    q, k, v = _data(qs, np.float32, 1.0), _data(ks, np.float32, 1.0), _data(vs, np.float32, 1.0)
    with config.override(attention_kernel=kernel):
        got = nn.scaled_dot_product_attention(gt.asarray(q), gt.asarray(k), gt.asarray(v), is_causal=causal)
        _close(got, ref_sdpa(q, k, v, causal=causal), "float32", factor=5)
        mask = rng.random((qs[-2], ks[-2])) > 0.3
        mask[:, 0] = True
        got = nn.scaled_dot_product_attention(gt.asarray(q), gt.asarray(k), gt.asarray(v), attn_mask=gt.asarray(mask))
        _close(got, ref_sdpa(q, k, v, mask=mask), "float32", factor=5)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_conv2d_1x1_tiles_knob(dtype):
    """1x1 filters take the conv_1x1_tiles knob's tiles where they fit the adapter (else, and with
    'auto', the gemm planner's); a 3x3 filter never does."""
    from gputensor._backend import config, ops_conv
    from gputensor._dispatch import backend

    be = backend()
    x, w = _data((2, 24, 5, 7), dtype, 1.0), _data((20, 24, 1, 1), dtype, 0.5)
    want = ref_conv2d(x, w, None, (1, 1), (0, 0), (0, 0), (1, 1), 1)
    for shape in ((64, 64, 16, 4, 4), (128, 64, 16, 8, 4), None):
        with config.override(conv_1x1_tiles=shape):
            if shape is not None:
                tiles, _ = ops_conv.conv_plan(be, "f32", 70, 20, 24, pointwise=True)
                assert (tiles.bm, tiles.bn, tiles.bk, tiles.tm, tiles.tn) == shape
            planner = ops_conv.conv_plan(be, "f32", 70, 20, 24 * 9)
            assert ops_conv.conv_plan(be, "f32", 70, 20, 24 * 9, pointwise=False) == planner
            _close(nn.conv2d(gt.asarray(x), gt.asarray(w)), want, dtype, factor=20)
            with config.override(gemm_splitk=3):
                _close(nn.conv2d(gt.asarray(x), gt.asarray(w)), want, dtype, factor=20)
    limit = be.context.limits["max-compute-workgroup-storage-size"]
    default = ops_conv.GemmTiles(*config.value("conv_1x1_tiles"))
    plan = ops_conv.pointwise_tiles(be, "f32", 70, 20, 24, None)
    assert (plan is not None) == (default.workgroup_bytes(4) <= limit)


def test_conv2d_1x1_default_tiles_validate():
    # 128x128x16 tiles need 33 KiB of workgroup memory (more than lavapipe's 32): where they cannot
    # run here, their WGSL must at least pass validation.
    from gputensor._backend import config, kernels, ops_conv, ops_gemm
    from gputensor._dispatch import backend

    tiles = ops_conv.GemmTiles(*config.value("conv_1x1_tiles"))
    for split in (False, True):
        types = ops_gemm.kernel_types("f32")
        defines = {**types, **tiles.defines(), **ops_gemm.split_defines(types, split)}
        backend().context.device.create_shader_module(code=kernels.render("conv2d", defines))


@pytest.mark.parametrize("kernel", SDPA_VARIANTS)
def test_sdpa_kernel_variants_float16(kernel):
    from gputensor._backend import config

    q, k, v = (_data(shape, np.float16, 1.0) for shape in ((2, 100, 128), (2, 150, 128), (2, 150, 128)))
    with config.override(attention_kernel=kernel):
        got = nn.scaled_dot_product_attention(gt.asarray(q), gt.asarray(k), gt.asarray(v), is_causal=True)
    _close(got, ref_sdpa(q, k, v, causal=True), "float16", factor=5)

@pytest.mark.parametrize("kernel", SDPA_VARIANTS + ["flash-128x4-r8-hp"])
def test_sdpa_variant_tiles_validate_for_48k(kernel):
    # The tiles a GPU with 48 KiB of workgroup memory (the H200) gets for head_dim 64 and 128 may
    # not fit lavapipe's 32 KiB: their WGSL must at least pass validation here.
    from gputensor._backend import kernels, ops_attention
    from gputensor._dispatch import backend

    for head_dim in (64, 128):
        plan = ops_attention.plan_attention(64, 4096, 4096, head_dim, 4, 4, 1 << 31, 49152, variant=kernel)
        shape = ops_attention.FlashShape.of_plan(plan)
        assert shape.workgroup_bytes(4) <= 49152
        defines = dict(ENABLE="", STORAGE="f32", COMPUTE="f32", OUT="f32", EXP2="exp2", SPLIT="false",
                       NEG=ops_attention._MOST_NEGATIVE["f32"], **shape.defines("f32", True))
        backend().context.device.create_shader_module(code=kernels.render("attention_flash", defines))
