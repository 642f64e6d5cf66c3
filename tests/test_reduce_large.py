"""Reductions over more outputs or reduced elements than one dispatch takes, split into pieces
of views (``gputensor/_reduce_split.py``).

The dispatch limit is lowered with the ``reduce_max_count`` knob so that small arrays take
every split path (the backend then also refuses anything above it, so an unsplit call would
raise). Values are compared with NumPy through the public API.
"""

from __future__ import annotations

import numpy as np
import pytest

import gputensor as gt
from gputensor import _searching_functions, _statistical_functions
from gputensor._backend import config

from _compare import assert_close, to_numpy
from _compare import tol

LIMIT = 1000


@pytest.fixture(autouse=True)
def small_limit():
    """The dispatch limit lowered to LIMIT (plans cached under another limit are dropped)."""
    caches = (_statistical_functions._REDUCE_PLANS, _searching_functions._ARG_PLANS)
    for cache in caches:
        cache.clear()
    with config.override(reduce_max_count=LIMIT):
        yield
    for cache in caches:
        cache.clear()


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-3 if np.dtype(dtype).kind == "i" else 0, 4, size=shape).astype(dtype)
    return (rng.standard_normal(shape) + 0.5).astype(dtype)


# (shape, axis): reduced count, output count or both above LIMIT; strides chosen by `view`
CASES = [
    ((7, 300), None),       # all 2100 elements
    ((7, 300), 1),          # 300 per row (fits): plain
    ((3, 1500), 1),         # 1500 reduced: split along the reduced axis
    ((2100, 3), 0),         # 2100 reduced down the first axis
    ((1500, 2), 1),         # 1500 outputs: split along the kept axis
    ((4, 30, 40), (1, 2)),  # 1200 reduced over two axes
    ((3, 25, 60), (0, 2)),  # 180 reduced, 25 outputs (the transposed view: other counts)
    ((1200, 11), 0),        # 1200 reduced, 11 outputs
    ((40, 3, 50), (0, 2)),  # 2000 reduced over non-adjacent axes
    ((1, 2500), 1),         # the outermost reduced axis of size 1 is skipped
]
VIEWS = {
    "plain": lambda a: a,
    "reversed": lambda a: a[::-1],
    "transposed": lambda a: a.T if a.ndim == 2 else np.transpose(a, (2, 0, 1)),
    "strided": lambda a: a[..., ::2],
}


def _gpu_view(name, x):
    if name == "transposed":
        return x.T if x.ndim == 2 else gt.permute_dims(x, (2, 0, 1))
    if name == "reversed":
        return x[::-1]
    if name == "strided":
        return x[..., ::2]
    return x


def _axis_for(axis, ndim):
    if axis is None or isinstance(axis, int):
        return axis if axis is None or axis < ndim else ndim - 1
    return tuple(a for a in axis if a < ndim) or None


def _pairs():
    for shape, axis in CASES:
        for view in VIEWS:
            yield pytest.param(shape, axis, view, id=f"{shape}-{axis}-{view}")


@pytest.mark.filterwarnings("ignore:Degrees of freedom:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("shape, axis, view", list(_pairs()))
def test_float32_views(shape, axis, view):
    base = _data(shape, "float32")
    xv = _gpu_view(view, gt.asarray(base))
    a = VIEWS[view](base)
    axis = _axis_for(axis, a.ndim)
    ref = a.astype(np.float64)
    scale = (np.abs(ref).sum(axis=axis) * 2e-6).max() + 1e-5
    np.testing.assert_allclose(to_numpy(gt.sum(xv, axis=axis)), ref.sum(axis=axis), rtol=tol("float32", "summation")["rtol"], atol=scale)
    assert_close(to_numpy(gt.mean(xv, axis=axis)), ref.mean(axis=axis), "float32", "reduction")
    assert_close(to_numpy(gt.var(xv, axis=axis, correction=1)), ref.var(axis=axis, ddof=1), "float32", "reduction")
    assert_close(to_numpy(gt.std(xv, axis=axis)), ref.std(axis=axis), "float32", "reduction")
    assert_close(to_numpy(gt.max(xv, axis=axis)), a.max(axis=axis), "float32", "exact")
    assert_close(to_numpy(gt.min(xv, axis=axis, keepdims=True)), a.min(axis=axis, keepdims=True), "float32", "exact")
    if axis is None or isinstance(axis, int):
        np.testing.assert_array_equal(to_numpy(gt.argmax(xv, axis=axis)), np.argmax(a, axis=axis))
        np.testing.assert_array_equal(to_numpy(gt.argmin(xv, axis=axis)), np.argmin(a, axis=axis))


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("shape, axis", [((3, 1500), 1), ((2100, 3), None), ((1500, 2), 1), ((40, 3, 50), (0, 2))])
def test_dtypes(dtype, shape, axis, keepdims):
    a = _data(shape, dtype)
    x = gt.asarray(a)
    kw = dict(axis=axis, keepdims=keepdims)
    np.testing.assert_array_equal(to_numpy(gt.any(x, **kw)), np.any(a, **kw))
    np.testing.assert_array_equal(to_numpy(gt.all(x, **kw)), np.all(a, **kw))
    np.testing.assert_array_equal(to_numpy(gt.count_nonzero(x, **kw)), np.count_nonzero(a, **kw))
    if dtype == "bool":
        return
    got = to_numpy(gt.sum(x, **kw))
    want = np.sum(a, **kw, dtype=got.dtype)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, **tol(got.dtype, "sum_in_dtype"))
    np.testing.assert_array_equal(to_numpy(gt.max(x, **kw)), np.max(a, **kw))
    np.testing.assert_array_equal(to_numpy(gt.min(x, **kw)), np.min(a, **kw))
    small = (a % 3 == 0).astype(a.dtype) + 1  # products of ones and twos: exact (wrapping as NumPy)
    got = to_numpy(gt.prod(gt.asarray(small), **kw))
    np.testing.assert_array_equal(got, np.prod(small, **kw, dtype=got.dtype))
    if isinstance(axis, tuple):
        return
    for fn in ("argmax", "argmin"):
        np.testing.assert_array_equal(to_numpy(getattr(gt, fn)(x, **kw)), getattr(np, fn)(a, **kw))
    if dtype == "float64":
        for fn, ref in (("mean", np.mean), ("var", np.var), ("std", np.std)):
            np.testing.assert_allclose(to_numpy(getattr(gt, fn)(x, **kw)), ref(a, **kw), **tol("float64", "moments"))


def test_float16_sum_accumulates_wide():
    a = np.full((3, 2500), 0.1, np.float16)
    got = to_numpy(gt.sum(gt.asarray(a), axis=1))
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, a.astype(np.float32).sum(axis=1), **tol("float16", "float16_sum"))
    np.testing.assert_allclose(to_numpy(gt.mean(gt.asarray(a))), 0.1, **tol("float16", "float16_sum"))


@pytest.mark.parametrize("where", [[5], [2500, 10], [4999, 1200], [700, 1700, 3000]])
@pytest.mark.parametrize("fn", ["argmax", "argmin", "max", "min"])
def test_nan(fn, where):
    a = _data((5000,), "float32")
    a[where] = np.nan
    x = gt.asarray(a)
    np.testing.assert_array_equal(to_numpy(getattr(gt, fn)(x)), getattr(np, fn)(a))
    b = a.reshape(2, 2500)
    np.testing.assert_array_equal(to_numpy(getattr(gt, fn)(gt.asarray(b), axis=1)), getattr(np, fn)(b, axis=1))


@pytest.mark.parametrize("fn", ["argmax", "argmin"])
def test_ties_keep_first_occurrence(fn):
    a = np.zeros(4000, np.float32)
    a[[1500, 2500, 3500]] = 7 if fn == "argmax" else -7  # the extreme in three pieces
    a[[600, 3999]] = -0.0
    for b in (a, a.reshape(2, 2000), a.reshape(2000, 2)):
        for axis in (None, -1, 0):
            np.testing.assert_array_equal(to_numpy(getattr(gt, fn)(gt.asarray(b), axis=axis)),
                                          getattr(np, fn)(b, axis=axis))


@pytest.mark.filterwarnings("ignore:Degrees of freedom:RuntimeWarning")
def test_var_corrections():
    a = _data((2, 1600), "float64") * 1e3 + 1e6  # a large mean: the merge must not lose it
    x = gt.asarray(a)
    for correction in (0, 1, 2.5):
        np.testing.assert_allclose(to_numpy(gt.var(x, axis=1, correction=correction)),
                                   np.var(a, axis=1, ddof=correction), **tol("float64", "variance"))
        np.testing.assert_allclose(to_numpy(gt.std(x, correction=correction, keepdims=True)),
                                   np.std(a, ddof=correction, keepdims=True), **tol("float64", "variance"))
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(to_numpy(gt.var(x, axis=1, correction=1600)),
                                      np.var(a, axis=1, ddof=1600))
        const = np.ones((1200,))
        np.testing.assert_array_equal(to_numpy(gt.var(gt.asarray(const), correction=1200)),
                                      np.var(const, ddof=1200))


def test_lazy_input():
    a = _data((3, 1500), "float32")
    x = gt.asarray(a)
    np.testing.assert_allclose(to_numpy(gt.sum(x * 2 + 1, axis=1)), (a.astype(np.float64) * 2 + 1).sum(axis=1),
                               **tol("float32", "summation"))
    np.testing.assert_allclose(to_numpy(gt.mean(x * x, axis=None, keepdims=True)),
                               (a.astype(np.float64) ** 2).mean(keepdims=True), **tol("float32", "summation"))
    np.testing.assert_array_equal(to_numpy(gt.argmax(-x, axis=1)), np.argmax(-a, axis=1))


def test_empty_and_degenerate():
    z = gt.zeros((0, 1500), dtype=gt.float32)
    np.testing.assert_array_equal(to_numpy(gt.sum(z, axis=1)), np.zeros((0,), np.float32))
    np.testing.assert_array_equal(to_numpy(gt.sum(z, axis=0)), np.zeros((1500,), np.float32))
    np.testing.assert_array_equal(to_numpy(gt.any(z, axis=0)), np.zeros((1500,), bool))
    with pytest.raises(ValueError):
        gt.max(z, axis=0)
    a = _data((1500,), "float32")
    np.testing.assert_array_equal(to_numpy(gt.sum(gt.asarray(a), axis=())), a)
    np.testing.assert_array_equal(to_numpy(gt.var(gt.asarray(a), axis=())), np.zeros(1500, np.float32))


def test_outputs_and_reduced_both_over_limit():
    with config.override(reduce_max_count=100):
        a = _data((150, 130), "float32")
        x = gt.asarray(a)
        for axis in (0, 1):
            np.testing.assert_allclose(to_numpy(gt.sum(x, axis=axis)), a.astype(np.float64).sum(axis=axis),
                                       **tol("float32", "sum_rows"))
            np.testing.assert_allclose(to_numpy(gt.var(x, axis=axis)), a.astype(np.float64).var(axis=axis),
                                       **tol("float32", "accumulated"))
            np.testing.assert_array_equal(to_numpy(gt.argmin(x, axis=axis)), np.argmin(a, axis=axis))


def test_complex_and_float16():
    rng = np.random.default_rng(3)
    c = (rng.standard_normal((3, 1500)) + 1j * rng.standard_normal((3, 1500))).astype(np.complex64)
    x = gt.asarray(c)
    for fn in ("sum", "mean"):
        for axis in (None, 1):
            np.testing.assert_allclose(to_numpy(getattr(gt, fn)(x, axis=axis)),
                                       getattr(np, fn)(c.astype(np.complex128), axis=axis), **tol("complex64", "sum_complex_long"))
    np.testing.assert_array_equal(to_numpy(gt.any(x, axis=1)), np.any(c, axis=1))
    h = rng.standard_normal((3, 1500)).astype(np.float16)
    xh = gt.asarray(h)
    for fn in ("mean", "var", "std"):
        got = to_numpy(getattr(gt, fn)(xh, axis=1))
        assert got.dtype == np.float16
        np.testing.assert_allclose(got, getattr(np, fn)(h.astype(np.float64), axis=1), **tol("float16", "float16_reduction"))
    np.testing.assert_array_equal(to_numpy(gt.argmax(xh, axis=1)), np.argmax(h, axis=1))


def test_lazy_source_over_limit_counts_within():
    a = _data((3, 900), "float32")  # 2700 fused-source elements, 900 reduced, 3 outputs
    x = gt.asarray(a)
    np.testing.assert_allclose(to_numpy(gt.sum(x * 2, axis=1)), (a.astype(np.float64) * 2).sum(axis=1), **tol("float32", "summation"))
    np.testing.assert_allclose(to_numpy(gt.var(x * 2, axis=1, keepdims=True)),
                               (a.astype(np.float64) * 2).var(axis=1, keepdims=True), **tol("float32", "variance"))
