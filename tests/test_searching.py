"""where, argmax, argmin and take against NumPy; errors before any kernel runs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gputensor as gt
from gputensor._shapes import AxisError

from _compare import ALL, NUMERIC, arrays, gpu


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
    got = gt.where(gpu(cond), gpu(a), gpu(b))
    expect = np.where(cond, a, b).astype(dtype.numpy)
    g = got.get()
    assert g.dtype == expect.dtype and g.shape == expect.shape
    np.testing.assert_array_equal(g, expect)


def test_where_scalars_and_views():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    cond = a % 3 == 0
    x = gpu(a)
    np.testing.assert_array_equal(gt.where(gpu(cond), x, 0.5).get(), np.where(cond, a, np.float32(0.5)))
    np.testing.assert_array_equal(gt.where(gpu(cond), -1, x).get(), np.where(cond, np.float32(-1), a))
    got = gt.where(gt.flip(gpu(cond)), gt.flip(x, axis=0), x[:, ::-1])
    np.testing.assert_array_equal(got.get(), np.where(np.flip(cond), np.flip(a, 0), a[:, ::-1]))
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
        g = f(x, axis=axis, keepdims=keepdims).get()
        assert g.dtype == np.int64 and g.shape == np.shape(expect)
        np.testing.assert_array_equal(g, expect)


def test_argmax_special_values():
    a = np.array([[1.0, np.nan, 5.0, np.nan], [-np.inf, -np.inf, 2.0, 2.0], [-0.0, 0.0, -1.0, 0.0]], np.float32)
    for axis in (None, 0, 1):
        np.testing.assert_array_equal(gt.argmax(gpu(a), axis=axis).get(), np.argmax(a, axis=axis))
        np.testing.assert_array_equal(gt.argmin(gpu(a), axis=axis).get(), np.argmin(a, axis=axis))


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
    got = gt.take(x, gpu(idx.astype(idx_dtype)), axis=axis)
    expect = np.take(ref, idx, axis=0 if axis is None else axis)
    g = got.get()
    assert g.dtype == expect.dtype and g.shape == expect.shape
    np.testing.assert_array_equal(g, expect)


def test_take_runs_and_errors():
    a = np.arange(40, dtype=np.int16).reshape(4, 10)
    x = gpu(a)
    idx = np.array([0, 1, 2, 3, 3, 3, 9, -1, -10, 5, 6])
    np.testing.assert_array_equal(gt.take(x, gpu(idx), axis=1).get(), np.take(a, idx, axis=1))
    with pytest.raises(IndexError):
        gt.take(x, gpu(np.array([10])), axis=1)
    with pytest.raises(IndexError):
        gt.take(x, gpu(np.array([-5])), axis=0)
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
