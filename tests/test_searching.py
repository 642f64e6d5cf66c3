"""where, argmax, argmin and take against NumPy; errors before any kernel runs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gputensor as gt
from gputensor._shapes import AxisError

from _compare import ALL, NUMERIC, arrays, assert_same, gpu, numpy_gt_array_equal, run_both


# ---- where -------------------------------------------------------------------------------------
@given(st.data())
def test_where(data):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=4))
    d1 = np.dtype(data.draw(st.sampled_from(ALL)))
    d2 = np.dtype(data.draw(st.sampled_from([d1, np.dtype("float64"), np.dtype("int16")])))
    cond = data.draw(hnp.arrays(np.bool_, shapes.input_shapes[0]))
    a = data.draw(hnp.arrays(d1, shapes.input_shapes[1]))
    b = data.draw(hnp.arrays(d2, shapes.input_shapes[2]))
    try:
        dtype = gt.result_type(gpu(np.zeros(1, d1)), gpu(np.zeros(1, d2)))
    except TypeError:
        with pytest.raises(TypeError):
            gt.where(gpu(cond), gpu(a), gpu(b))
        return
    assert_same(gt.where(gpu(cond), gpu(a), gpu(b)), np.where(cond, a, b).astype(dtype.numpy))


@pytest.mark.parametrize("case", ["scalar_y", "scalar_x", "views"])
@numpy_gt_array_equal()
def test_where_scalars_and_views(xp, case):
    a = xp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    cond = a % 3 == 0
    if case == "scalar_y":
        return xp.where(cond, a, 0.5)
    if case == "scalar_x":
        return xp.where(cond, -1, a)
    return xp.where(xp.flip(cond), xp.flip(a, axis=0), xp.flip(a, axis=1))


def test_where_errors():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    cond = a % 3 == 0
    x = gpu(a)
    i = gpu(np.arange(4, dtype=np.int8))
    assert gt.where(gpu(np.array([True, False, True, False])), i, 7).dtype == gt.int8
    with pytest.raises(TypeError):
        gt.where(gpu(a), x, x)  # non-bool condition
    with pytest.raises(TypeError):
        gt.where(gpu(cond), 1, 2)
    with pytest.raises(TypeError):  # an int scalar does not mix with a bool array
        gt.where(gpu(np.array([True])), gpu(np.array([True])), 1)
    with pytest.raises(ValueError):
        gt.where(gpu(cond), x, gpu(np.zeros(3, np.float32)))


# ---- argmax / argmin -----------------------------------------------------------------------------
@given(arrays(dtypes=NUMERIC), st.data())
def test_argmax_argmin(pair, data):
    ref, x = pair
    axis = data.draw(st.none() | st.integers(-ref.ndim, ref.ndim - 1) if ref.ndim else st.none())
    keepdims = data.draw(st.booleans())
    for f, nf in ((gt.argmax, np.argmax), (gt.argmin, np.argmin)):
        try:
            expect = nf(ref, axis=axis, keepdims=keepdims)
        except ValueError:
            with pytest.raises(ValueError):
                f(x, axis=axis, keepdims=keepdims)
            continue
        assert_same(f(x, axis=axis, keepdims=keepdims), np.asarray(expect, dtype=np.int64))


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("fn", ["argmax", "argmin"])
@numpy_gt_array_equal()
def test_argmax_special_values(xp, fn, axis):
    a = np.array([[1.0, np.nan, 5.0, np.nan], [-np.inf, -np.inf, 2.0, 2.0], [-0.0, 0.0, -1.0, 0.0]], np.float32)
    return getattr(xp, fn)(xp.asarray(a), axis=axis)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint32", "int64", "float16", "int8"])
def test_argmax_argmin_long_rows(dtype):
    """Rows long enough for the vector path (16-byte loads, a best per lane), at offsets off a
    vector, with ties and NaNs at every lane and in heads and tails: NumPy's first occurrence
    (a NaN first of all)."""
    rng = np.random.default_rng(31)
    base = (rng.integers(-3, 4, (5, 263)) if dtype[0] in "iu" else rng.standard_normal((5, 263)) * 3)
    if dtype[0] == "u":
        base = np.abs(base)
    ref = base.astype(dtype)
    if dtype.startswith("float"):
        ref[1, [7, 40, 41]] = np.nan
        ref[2, 262] = np.nan
        ref[3, 0] = np.nan
        ref[4, :] = ref[4, 5]  # all ties
    x = gpu(ref)
    for sl in (np.s_[:, :], np.s_[:, 1:], np.s_[:, 3:250], np.s_[1:, 2:], np.s_[:, ::-1], np.s_[::2, 5:]):
        for axis in (None, 0, -1):
            for f, nf in ((gt.argmax, np.argmax), (gt.argmin, np.argmin)):
                assert_same(f(x[sl], axis=axis), np.asarray(nf(ref[sl], axis=axis), dtype=np.int64))
    assert_same(gt.argmax(x, axis=-1, keepdims=True), np.argmax(ref, axis=-1, keepdims=True).astype(np.int64))


# ---- take ------------------------------------------------------------------------------------
@given(arrays(dtypes=ALL, min_dims=1), st.data())
def test_take(pair, data):
    ref, x = pair
    axis = data.draw(st.integers(-ref.ndim, ref.ndim - 1)) if ref.ndim > 1 else data.draw(st.sampled_from([None, 0]))
    n = ref.shape[0 if axis is None else axis]
    if n == 0:
        idx = np.zeros(0, np.int64)
    else:
        idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), max_size=8)), dtype=np.int64)
    idx_dtype = data.draw(st.sampled_from([np.int64, np.int32, np.uint8] if (idx >= 0).all() and n <= 255 else [np.int64, np.int32]))
    assert_same(gt.take(x, gpu(idx.astype(idx_dtype)), axis=axis), np.take(ref, idx, axis=0 if axis is None else axis))


def test_take_runs_and_errors():
    a = np.arange(40, dtype=np.int16).reshape(4, 10)
    x = gpu(a)
    idx = np.array([0, 1, 2, 3, 3, 3, 9, -1, -10, 5, 6])
    run_both(lambda xp: xp.take(xp.asarray(a), xp.asarray(idx), axis=1))
    for bad_idx, axis in (([10], 1), ([-5], 0)):  # out of range: IndexError in both
        run_both(lambda xp: xp.take(xp.asarray(a), xp.asarray(np.array(bad_idx)), axis=axis), accept_error=IndexError)
    with pytest.raises(IndexError):  # checked on the device: raised at the next wait
        gt.take(x, gpu(np.array([10])), axis=1).get()
    with pytest.raises(IndexError):
        gt.take(x, gpu(np.array([-5])), axis=0).get()
    with pytest.raises(TypeError):
        gt.take(x, gpu(np.array([1.0])), axis=0)
    with pytest.raises(ValueError):
        gt.take(x, gpu(np.array([[1]])), axis=0)
    with pytest.raises(ValueError):
        gt.take(x, gpu(np.array([1])))
    with pytest.raises(AxisError):
        gt.take(x, gpu(np.array([1])), axis=2)
    with pytest.raises(TypeError):
        gt.take(x, [1], axis=0)
    with pytest.raises(TypeError):
        gt.argmax(gpu(np.array([True, False])))
    with pytest.raises(ValueError):
        gt.argmax(gpu(np.zeros((0, 2), np.float32)))
    with pytest.raises(ValueError):
        gt.argmin(gpu(np.zeros((0, 2), np.float32)), axis=0)
    with pytest.raises(AxisError):
        gt.argmin(gpu(np.zeros((1, 2), np.float32)), axis=2)
