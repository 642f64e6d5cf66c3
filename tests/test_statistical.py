"""Statistical and utility functions against NumPy (float64 references), dtype rules, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gputensor as gt
from gputensor._shapes import AxisError

from _compare import (FLOATING, INTEGER, arrays, assert_same, axes_for, bounded, gpu, gt_dtype,
                      numpy_gt_array_equal)
from _compare import tol


def expected_sum_dtype(d: np.dtype) -> np.dtype:
    if d.kind == "i":
        return np.dtype("int64")
    if d.kind == "u":
        return np.dtype("uint64")
    return d


def check_close(got: gt.GpuArray, ref: np.ndarray, dtype: np.dtype, scale: np.ndarray | float | None = None) -> None:
    """``got`` against the float64 reference ``ref`` rounded to the result ``dtype``: the
    summation tolerance of the table, plus its rtol times ``scale`` (the summed magnitudes)."""
    with np.errstate(all="ignore"):
        ref = np.asarray(ref).astype(dtype)
    assert_same(got, ref, "summation", scale=scale)


# ---- sum / prod ------------------------------------------------------------------------------
@given(arrays(elements=bounded(-100, 100)), st.data())
def test_sum(pair, data):
    ref, x = pair
    axis = data.draw(axes_for(ref.ndim))
    keepdims = data.draw(st.booleans())
    out_dtype = expected_sum_dtype(ref.dtype)
    got = gt.sum(x, axis=axis, keepdims=keepdims)
    if out_dtype.kind == "f":
        expect = np.sum(ref.astype(np.float64), axis=axis, keepdims=keepdims)
        scale = np.sum(np.abs(ref.astype(np.float64)), axis=axis, keepdims=keepdims)
        check_close(got, expect, out_dtype, scale)
    else:
        check_close(got, np.sum(ref, axis=axis, keepdims=keepdims, dtype=out_dtype), out_dtype)


@given(arrays(elements=bounded(-2, 2), max_side=4), st.data())
def test_prod(pair, data):
    ref, x = pair
    axis = data.draw(axes_for(ref.ndim))
    keepdims = data.draw(st.booleans())
    out_dtype = expected_sum_dtype(ref.dtype)
    got = gt.prod(x, axis=axis, keepdims=keepdims)
    if out_dtype.kind == "f":
        expect = np.prod(ref.astype(np.float64), axis=axis, keepdims=keepdims)
        scale = np.prod(np.abs(ref.astype(np.float64)), axis=axis, keepdims=keepdims)
        check_close(got, expect, out_dtype, scale * 4)
    else:
        check_close(got, np.prod(ref, axis=axis, keepdims=keepdims, dtype=out_dtype), out_dtype)


@pytest.mark.parametrize("src,dst", [
    pytest.param("int8", "float64", marks=pytest.mark.requires("shader-f64")),
    pytest.param("float32", "float64", marks=pytest.mark.requires("shader-f64")),
    ("int32", "int16"), ("uint8", "int32"),
    pytest.param("float64", "float32", marks=pytest.mark.requires("shader-f64"))])
def test_sum_prod_dtype_argument(src, dst):
    a = (np.arange(1, 13) % 7).reshape(3, 4).astype(src)
    x = gpu(a)
    d = np.dtype(dst)
    check_close(gt.sum(x, axis=1, dtype=gt_dtype(d)), np.sum(a.astype(d), axis=1), d, np.sum(np.abs(a), 1))
    check_close(gt.prod(x, axis=0, dtype=gt_dtype(d)), np.prod(a.astype(d), axis=0), d, 1e3)


def test_sum_float16_accumulates_in_float32():
    a = np.full(4096, 1.0, dtype=np.float16)  # a float16 running sum would stall at 2048
    got = gt.sum(gpu(a))
    assert got.dtype == gt.float16
    assert float(got.get()) == 4096.0
    m = gt.mean(gpu(np.full(5000, 0.1, np.float16)))
    assert abs(float(m.get()) - 0.1) < 1e-3


def test_integer_sum_wraps_like_numpy():
    a = np.array([2**62, 2**62, 2**62], dtype=np.int64)
    assert_same(gt.sum(gpu(a)), np.asarray(np.sum(a)))
    b = np.array([255, 255, 3], dtype=np.uint8)
    wide = gt.__array_namespace_info__().default_dtypes()["integral"] == gt.int64  # (int32 where emulated)
    assert gt.sum(gpu(b)).dtype == (gt.uint64 if wide else gt.uint32)
    np.testing.assert_array_equal(gt.sum(gpu(b)).get(), 513)
    assert gt.sum(gpu(b.astype(np.int16))).dtype == (gt.int64 if wide else gt.int32)


# ---- max / min -------------------------------------------------------------------------------
@given(arrays(), st.data())
def test_max_min(pair, data):
    ref, x = pair
    axis = data.draw(axes_for(ref.ndim))
    keepdims = data.draw(st.booleans())
    for f, nf in ((gt.max, np.max), (gt.min, np.min)):
        try:
            expect = nf(ref, axis=axis, keepdims=keepdims)
        except ValueError:
            with pytest.raises(ValueError):
                f(x, axis=axis, keepdims=keepdims)
            continue
        assert_same(f(x, axis=axis, keepdims=keepdims), np.asarray(expect))  # NaN positions must match too


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("fn", ["max", "min"])
@numpy_gt_array_equal()
def test_max_min_special_values(xp, fn, axis):
    a = np.array([[1.0, np.nan, -np.inf], [-0.0, 0.0, np.inf], [3.0, -1.0, 2.0]], dtype=np.float32)
    return getattr(xp, fn)(xp.asarray(a), axis=axis)


def test_max_min_integer_extremes():
    i = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, 0], dtype=np.int64)
    assert int(gt.max(gpu(i)).get()) == np.iinfo(np.int64).max
    assert int(gt.min(gpu(i)).get()) == np.iinfo(np.int64).min


# ---- mean / var / std ------------------------------------------------------------------------
@given(arrays(dtypes=FLOATING, elements=bounded(-100, 100)), st.data())
def test_mean_var_std(pair, data):
    ref, x = pair
    axis = data.draw(axes_for(ref.ndim))
    keepdims = data.draw(st.booleans())
    correction = data.draw(st.sampled_from([0, 1, 0.5]))
    r64 = ref.astype(np.float64)
    n = r64.size if axis is None else math.prod(
        ref.shape[a] for a in ((axis,) if isinstance(axis, int) else axis))
    with np.errstate(all="ignore"):
        mean = np.mean(r64, axis=axis, keepdims=keepdims)
        var = np.var(r64, axis=axis, keepdims=keepdims, ddof=correction)
    scale = np.max(np.abs(r64)) if r64.size else 1.0
    check_close(gt.mean(x, axis=axis, keepdims=keepdims), mean, ref.dtype, scale)
    check_close(gt.var(x, axis=axis, keepdims=keepdims, correction=correction), var, ref.dtype,
                scale * scale * max(n, 1))
    with np.errstate(all="ignore"):
        std = np.sqrt(var)
    check_close(gt.std(x, axis=axis, keepdims=keepdims, correction=correction), std, ref.dtype,
                scale * max(n, 1))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_var_std_long_rows(dtype):
    """Rows long enough for the vector path (one pass, blocks merged with Chan's update, values
    shifted by the row's first element), at offsets off a vector, with a large mean, NaN and
    infinity: as NumPy's float64 two-pass, within the table's variance tolerance."""
    rng = np.random.default_rng(37)
    ref = (rng.standard_normal((6, 1031)) + 300).astype(dtype)
    ref[2, 17] = np.nan
    ref[3, 1030] = np.inf
    ref[4, 0] = -np.inf
    x = gpu(ref)
    for sl in (np.s_[:, :], np.s_[:, 1:], np.s_[:, 3:1000], np.s_[:, ::-1], np.s_[::2, 7:]):
        for axis in (None, 0, -1):
            for correction in (0, 1):
                r64 = ref[sl].astype(np.float64)
                with np.errstate(all="ignore"):
                    var = np.var(r64, axis=axis, ddof=correction)
                    assert_same(gt.var(x[sl], axis=axis, correction=correction), var.astype(dtype), "variance"
                                if dtype != "float16" else "summation")
                    assert_same(gt.std(x[sl], axis=axis, correction=correction), np.sqrt(var).astype(dtype),
                                "variance" if dtype != "float16" else "summation")
    assert_same(gt.var(x, axis=-1, keepdims=True), np.var(ref.astype(np.float64), axis=-1, keepdims=True)
                .astype(dtype), "variance" if dtype != "float16" else "summation")


# ---- all / any -------------------------------------------------------------------------------
@given(arrays(dtypes=[np.dtype("bool"), np.dtype("int8"), np.dtype("float32"), np.dtype("uint64")]), st.data())
def test_all_any(pair, data):
    ref, x = pair
    axis = data.draw(axes_for(ref.ndim))
    keepdims = data.draw(st.booleans())
    for f, nf in ((gt.all, np.all), (gt.any, np.any)):
        assert_same(f(x, axis=axis, keepdims=keepdims), np.asarray(nf(ref, axis=axis, keepdims=keepdims)))


# ---- cumulative_sum / cumulative_prod ----------------------------------------------------------
@pytest.mark.requires("shader-int64")  # integer scans accumulate in int64, as NumPy's
@given(arrays(min_dims=0, max_dims=3, elements=bounded(-3, 3)), st.data())
def test_cumulative(pair, data):
    ref, x = pair
    if ref.ndim > 1:
        axis = data.draw(st.integers(-ref.ndim, ref.ndim - 1))
    else:
        axis = data.draw(st.sampled_from([None, 0, -1])) if ref.ndim == 1 else None
    include = data.draw(st.booleans())
    out_dtype = expected_sum_dtype(ref.dtype)
    r = ref.reshape(1) if ref.ndim == 0 else ref
    ax = 0 if axis is None else axis
    for f, nf in ((gt.cumulative_sum, np.cumulative_sum), (gt.cumulative_prod, np.cumulative_prod)):
        got = f(x, axis=axis, include_initial=include)
        if out_dtype.kind == "f":
            expect = nf(r.astype(np.float64), axis=ax, include_initial=include)
            scale = np.abs(nf(np.abs(r.astype(np.float64)), axis=ax, include_initial=include))
            check_close(got, expect, out_dtype, scale * 4)
        else:
            check_close(got, nf(r, axis=ax, include_initial=include, dtype=out_dtype), out_dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8"])
def test_cumulative_long_rows_multi_level(dtype):
    """Rows longer than one scan block (1024) and than 1024 blocks: the hierarchical scan."""
    rng = np.random.default_rng(3)
    for shape, axis in (((3, 3000), 1), ((2100, 2), 0), ((1_100_000,), 0)):
        a = rng.integers(0, 5, size=shape).astype(dtype)
        out_dtype = expected_sum_dtype(np.dtype(dtype))
        got = gt.cumulative_sum(gpu(a), axis=axis)
        check_close(got, np.cumulative_sum(a.astype(np.float64) if out_dtype.kind == "f" else a,
                                           axis=axis, dtype=None if out_dtype.kind == "f" else out_dtype),
                    out_dtype, np.cumulative_sum(a.astype(np.float64), axis=axis))


def test_cumulative_dtype_argument_and_float16():
    a = np.arange(1, 9, dtype=np.int8)
    got = gt.cumulative_sum(gpu(a), dtype=gt.float32)
    check_close(got, np.cumsum(a.astype(np.float32)), np.dtype("float32"), 40)
    got = gt.cumulative_prod(gpu(a), dtype=gt.int8)  # wraps in int8 as NumPy
    assert_same(got, np.asarray(np.cumprod(a, dtype=np.int8)))
    h = np.full(3000, 1.0, np.float16)
    got = gt.cumulative_sum(gpu(h))
    assert got.dtype == gt.float16
    assert_same(got, np.asarray(np.arange(1, 3001).astype(np.float16)))


def test_scan_operand_larger_than_binding_window(backend):
    """One row larger than a binding window: the scan splits it into window-sized block ranges."""
    n = backend.max_window_bytes() // 4 + 3000
    x = gt.ones((n,), dtype=gt.float32)
    got = gt.cumulative_sum(x, dtype=gt.float32)
    tail = got[n - 3 :].get()
    # every partial sum is an integer < 2**26 here: exact in float32 up to 2**24, then spacing 2-4
    np.testing.assert_allclose(tail, [n - 2, n - 1, n], **tol("float32", "elementwise"))
    head = got[:5].get()
    np.testing.assert_array_equal(head, [1, 2, 3, 4, 5])


# ---- diff ----------------------------------------------------------------------------------------
@given(arrays(min_dims=1, max_dims=3, elements=bounded(-100, 100)), st.data())
def test_diff(pair, data):
    ref, x = pair
    axis = data.draw(st.integers(-ref.ndim, ref.ndim - 1))
    n = data.draw(st.integers(0, 3))
    use_pre = data.draw(st.booleans())
    kwargs, nkw = {}, {}
    if use_pre:
        shape = list(ref.shape)
        shape[axis] = 2
        pre = np.ones(shape, ref.dtype)
        kwargs["prepend"], nkw["prepend"] = gpu(pre), pre
        kwargs["append"], nkw["append"] = gpu(pre), pre
    expect = np.diff(ref, axis=axis, n=n, **nkw)
    assert_same(gt.diff(x, axis=axis, n=n, **kwargs), expect, "summation", scale=800)


# ---- errors --------------------------------------------------------------------------------------
def test_errors():
    x = gpu(np.zeros((2, 3), np.float32))
    b = gpu(np.zeros(3, np.bool_))
    i = gpu(np.zeros(3, np.int32))
    for f in (gt.sum, gt.prod, gt.max, gt.min, gt.mean, gt.var, gt.std, gt.cumulative_sum):
        with pytest.raises(TypeError):
            f(b)
        with pytest.raises(TypeError):
            f(np.zeros(3))
    for f in (gt.mean, gt.var, gt.std):
        with pytest.raises(TypeError):
            f(i)
    for f in (gt.sum, gt.max, gt.all, gt.mean):
        with pytest.raises(AxisError):
            f(x, axis=2)
        with pytest.raises(ValueError):
            f(x, axis=(0, 0))
        with pytest.raises(TypeError):
            f(x, axis=0.5)
    with pytest.raises(ValueError):
        gt.max(gpu(np.zeros((0, 3), np.float32)))
    with pytest.raises(ValueError):
        gt.min(gpu(np.zeros((0, 3), np.float32)), axis=0)
    np.testing.assert_array_equal(gt.max(gpu(np.zeros((0, 3), np.float32)), axis=1).get(), np.zeros(0))
    assert float(gt.sum(gpu(np.zeros((0,), np.float32))).get()) == 0
    assert float(gt.prod(gpu(np.zeros((0,), np.float32))).get()) == 1
    assert math.isnan(float(gt.mean(gpu(np.zeros((0,), np.float32))).get()))
    assert bool(gt.all(gpu(np.zeros((0,), np.float32))).get())
    assert not bool(gt.any(gpu(np.zeros((0,), np.float32))).get())
    with pytest.raises(ValueError):
        gt.cumulative_sum(x)
    with pytest.raises(AxisError):
        gt.cumulative_sum(x, axis=2)
    with pytest.raises(TypeError):
        gt.sum(x, dtype="not a dtype")
    with pytest.raises(ValueError):
        gt.var(x, correction=-1)
    with pytest.raises(ValueError):
        gt.diff(gpu(np.float32(1)))
    with pytest.raises(ValueError):
        gt.diff(x, n=-1)
    with pytest.raises(TypeError):
        gt.diff(b)
    with pytest.raises(ValueError):
        gt.diff(x, axis=0, prepend=gpu(np.zeros((1, 2), np.float32)))


def test_ops_scan_validation(backend):
    from gputensor._backend import BackendError, ops_scan

    ptr = backend.alloc(64)
    try:
        with pytest.raises(BackendError):
            ops_scan.scan(backend, "max", ptr, "float32", 1, 4)
        with pytest.raises(BackendError):
            ops_scan.scan(backend, "sum", ptr, "int8", 1, 4)
        with pytest.raises(BackendError):
            ops_scan.scan(backend, "sum", ptr, "float32", 2, 4, ld=3)
        with pytest.raises(BackendError):
            ops_scan.scan(backend, "sum", ptr, "float32", 5, 4)  # 80 bytes > 64
        with pytest.raises(BackendError):
            ops_scan.scan(backend, "sum", ptr + 2, "float32", 1, 4)  # misaligned
        with pytest.raises(BackendError):
            ops_scan.scan(backend, "sum", ptr, "float32", -1, 4)
        ops_scan.scan(backend, "sum", ptr, "float32", 0, 4)  # nothing to do
        data = np.arange(1, 9, dtype=np.float32).reshape(2, 4)
        backend.copy_htod(ptr, data)
        ops_scan.scan(backend, "prod", ptr, "float32", 2, 3, ld=4)  # strided rows: column 3 untouched
        out = np.empty_like(data)
        backend.copy_dtoh(out, ptr)
        np.testing.assert_array_equal(out, [[1, 2, 6, 4], [5, 30, 210, 8]])
    finally:
        backend.free(ptr)


# ---- audit additions: special values and integer extremes -------------------------------------
SPECIAL_SETS = [[0.0, -0.0, 1.0, -1.0], [1.0, np.inf], [np.inf, -np.inf], [2.5, np.nan], [-0.0, -0.0],
                [np.inf, np.inf], [-np.inf, -1.0], [np.nan, np.inf, -np.inf]]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_reductions_and_scans_special_values(dtype):
    """NaN propagates, infinities combine as in IEEE arithmetic (inf - inf is NaN), as NumPy; the
    inputs are also read through negative-step views."""
    for values in SPECIAL_SETS:
        h = np.array(values, dtype=dtype)
        for x, ref in ((gpu(h), h), (gpu(h[::-1].copy())[::-1], h)):
            with np.errstate(all="ignore"):
                for name, nf in (("sum", np.sum), ("prod", np.prod), ("mean", np.mean), ("var", np.var),
                                 ("std", np.std), ("max", np.max), ("min", np.min)):
                    expect = nf(ref.astype(np.float64)).astype(dtype)
                    assert_same(getattr(gt, name)(x), np.asarray(expect), "summation", err_msg=name)
                for name, nf in (("cumulative_sum", np.cumulative_sum), ("cumulative_prod", np.cumulative_prod)):
                    expect = nf(ref.astype(np.float64)).astype(dtype)
                    assert_same(getattr(gt, name)(x), expect, "summation", err_msg=name)
            for name, nf in (("all", np.all), ("any", np.any)):
                assert bool(getattr(gt, name)(x).get()) == bool(nf(ref)), (name, values)


@pytest.mark.requires("shader-int64")  # the accumulation dtype of small integers is int64
@pytest.mark.parametrize("dtype", INTEGER)
def test_reductions_and_scans_integer_extremes(dtype):
    """Sums and products of the extreme values wrap in the accumulation dtype exactly as NumPy."""
    info = np.iinfo(dtype)
    h = np.array([info.min, info.max, info.max, -1 if info.min else 1, info.min], dtype=dtype)
    x = gpu(h[::-1].copy())[::-1]
    with np.errstate(all="ignore"):
        for name, nf in (("sum", np.sum), ("prod", np.prod), ("cumulative_sum", np.cumulative_sum),
                         ("cumulative_prod", np.cumulative_prod)):
            acc = expected_sum_dtype(h.dtype)
            assert_same(getattr(gt, name)(x), np.asarray(nf(h, dtype=acc)), err_msg=name)
        assert_same(gt.sum(x, dtype=gt_dtype(h.dtype)), np.asarray(np.sum(h, dtype=h.dtype)))
    assert gt.max(x).get() == info.max and gt.min(x).get() == info.min
    assert int(gt.argmax(x)) == 1 and int(gt.argmin(x)) == 0
