"""Manipulation functions against NumPy: views (shared storage, no copy), copies, errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gputensor import _dtypes
from gputensor._array_object import GpuArray
from gputensor._manipulation_functions import (
    broadcast_arrays,
    broadcast_to,
    concat,
    expand_dims,
    flip,
    moveaxis,
    permute_dims,
    repeat,
    reshape,
    roll,
    squeeze,
    stack,
    tile,
    unstack,
)
from gputensor._shapes import AxisError

DTYPES = [np.dtype(d.name) for d in _dtypes.ALL_DTYPES]


def gpu(a: np.ndarray) -> GpuArray:
    a = np.asarray(a)
    flat = GpuArray._from_numpy(a.reshape(-1))
    return reshape(flat, a.shape)


def host(x: GpuArray) -> np.ndarray:
    return x.get()


def assert_same(x: GpuArray, ref: np.ndarray) -> None:
    got = host(x)
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    np.testing.assert_array_equal(got, ref)


def shares(x: GpuArray, y: GpuArray) -> bool:
    return x._storage is y._storage


@st.composite
def arrays_with_views(draw, min_dims=0, max_dims=4, max_side=5, dtypes=DTYPES):
    """(numpy array, gpu view of the same values): random dtype and shape (0-d and empty
    included), and sometimes a negative-step / strided view of a larger device array."""
    dtype = draw(st.sampled_from(dtypes))
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0, max_side=max_side))
    big_shape = tuple(2 * s + 1 for s in shape)
    base = draw(hnp.arrays(dtype, big_shape, elements=hnp.from_dtype(dtype, allow_nan=True)
                           if dtype.kind == "f" else None))
    kind = draw(st.sampled_from(["contiguous", "negative", "step"]))
    if kind == "contiguous":
        ref = np.asarray(base[tuple(slice(0, s) for s in shape)]).copy()
        return ref, gpu(ref)
    if kind == "negative":
        idx = tuple(slice(s - 1 if s else None, None, -1) if s else slice(0, 0) for s in shape)
    else:
        idx = tuple(slice(1, 1 + 2 * s, 2) for s in shape)
    ref = np.asarray(base[idx])
    g = gpu(base)[idx]
    assert g.shape == ref.shape
    return ref, g


# ---- views ------------------------------------------------------------------------------------
@given(arrays_with_views(), st.data())
def test_flip_permute_moveaxis(pair, data):
    ref, x = pair
    axis = data.draw(st.none() | st.integers(-ref.ndim, ref.ndim - 1) if ref.ndim else st.none())
    y = flip(x, axis=axis)
    assert shares(y, x)
    assert_same(y, np.flip(ref, axis=axis))
    perm = data.draw(st.permutations(range(ref.ndim)))
    assert_same(permute_dims(x, tuple(perm)), np.transpose(ref, perm))
    if ref.ndim:
        s = data.draw(st.integers(-ref.ndim, ref.ndim - 1))
        d = data.draw(st.integers(-ref.ndim, ref.ndim - 1))
        y = moveaxis(x, s, d)
        assert shares(y, x)
        assert_same(y, np.moveaxis(ref, s, d))


@given(arrays_with_views(), st.data())
def test_expand_squeeze(pair, data):
    ref, x = pair
    ax = data.draw(st.integers(-ref.ndim - 1, ref.ndim))
    y = expand_dims(x, axis=ax)
    assert shares(y, x)
    assert_same(y, np.expand_dims(ref, ax))
    assert_same(squeeze(y, axis=ax), ref)
    assert_same(squeeze(y, axis=(ax,)), ref)


@given(arrays_with_views(max_dims=3), st.data())
def test_reshape(pair, data):
    ref, x = pair
    flat = ref.reshape(-1)
    shape = data.draw(st.sampled_from([(-1,), (1, -1), (-1, 1), ref.shape[::-1] if ref.size else (0,), ()]
                                      if ref.size == 1 else [(-1,), (1, -1), (-1, 1)] if ref.size else [(0,), (0, 3)]))
    assert_same(reshape(x, shape), flat.reshape(shape))
    copy = data.draw(st.sampled_from([None, True]))
    y = reshape(x, shape, copy=copy)
    if copy:
        assert not shares(y, x)
    assert_same(y, flat.reshape(shape))


def test_reshape_view_and_copy_rules():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    x = gpu(a)
    y = reshape(x, (2, 12))
    assert shares(x, y)
    assert shares(x, reshape(x, (6, 4), copy=False))
    t = permute_dims(x, (1, 0))
    with pytest.raises(ValueError):
        reshape(t, (24,), copy=False)
    z = reshape(t, (24,))
    assert not shares(z, x)
    assert_same(z, a.T.reshape(24))
    with pytest.raises(ValueError):
        reshape(x, (5, 5))
    with pytest.raises(ValueError):
        reshape(x, (-1, -1))
    with pytest.raises(TypeError):
        reshape(x, (2.0, 12))


@given(arrays_with_views(max_dims=3), st.data())
def test_broadcast(pair, data):
    ref, x = pair
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2))
    target = tuple(lead) + tuple(data.draw(st.sampled_from([s, s] if s != 1 else [1, 3])) for s in ref.shape)
    y = broadcast_to(x, target)
    assert shares(y, x)
    assert_same(y, np.broadcast_to(ref, target))
    other = np.zeros(target[-1:] if target else (), dtype=np.int8)
    ys = broadcast_arrays(x, gpu(other))
    refs = np.broadcast_arrays(ref, other)
    for g, r in zip(ys, refs):
        assert_same(g, r)


@given(arrays_with_views(min_dims=1), st.data())
def test_unstack(pair, data):
    ref, x = pair
    ax = data.draw(st.integers(-ref.ndim, ref.ndim - 1))
    parts = unstack(x, axis=ax)
    assert len(parts) == ref.shape[ax]
    for p, r in zip(parts, np.moveaxis(ref, ax, 0)):
        assert shares(p, x)
        assert_same(p, r)


# ---- copies ----------------------------------------------------------------------------------
@given(arrays_with_views(min_dims=1, max_dims=3), st.data())
def test_concat_stack(pair, data):
    ref, x = pair
    ax = data.draw(st.integers(-ref.ndim, ref.ndim - 1))
    other_dtype = data.draw(st.sampled_from([ref.dtype, np.dtype("float64"), np.dtype("int16")]))
    try:
        expected_dtype = np.dtype(_dtypes.result_type_pair(_dtypes.dtype_from_any(ref.dtype),
                                                           _dtypes.dtype_from_any(other_dtype)).name)
    except TypeError:
        with pytest.raises(TypeError):
            concat([x, gpu(np.zeros(ref.shape, other_dtype))], axis=ax)
        return
    extra = list(ref.shape)
    extra[ax] = data.draw(st.integers(0, 3))
    other = np.arange(int(np.prod(extra)), dtype=np.int64).reshape(extra).astype(other_dtype)
    got = concat((x, gpu(other), x), axis=ax)
    assert_same(got, np.concatenate([ref, other, ref], axis=ax).astype(expected_dtype))
    got = concat([x, gpu(other)], axis=None)
    assert_same(got, np.concatenate([ref.reshape(-1), other.reshape(-1)]).astype(expected_dtype))
    sax = data.draw(st.integers(-ref.ndim - 1, ref.ndim))
    assert_same(stack([x, flip(x)], axis=sax), np.stack([ref, np.flip(ref)], axis=sax))


@given(arrays_with_views(max_dims=3), st.lists(st.integers(0, 3), max_size=4))
def test_tile(pair, reps):
    ref, x = pair
    assert_same(tile(x, tuple(reps)), np.tile(ref, tuple(reps)))


@given(arrays_with_views(max_dims=3), st.data())
def test_repeat(pair, data):
    ref, x = pair
    r = data.draw(st.integers(0, 3))
    axis = data.draw(st.none() | st.integers(-ref.ndim, ref.ndim - 1) if ref.ndim else st.none())
    assert_same(repeat(x, r, axis=axis), np.repeat(ref, r, axis=axis))
    n = ref.size if axis is None else ref.shape[axis]
    counts = np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype=np.int64)
    assert_same(repeat(x, gpu(counts), axis=axis), np.repeat(ref, counts, axis=axis))


@given(arrays_with_views(max_dims=3), st.data())
def test_roll(pair, data):
    ref, x = pair
    shift = data.draw(st.integers(-7, 7))
    assert_same(roll(x, shift), np.roll(ref, shift))
    if ref.ndim:
        axes = data.draw(st.lists(st.integers(-ref.ndim, ref.ndim - 1), min_size=1, max_size=3))
        shifts = data.draw(st.lists(st.integers(-7, 7), min_size=len(axes), max_size=len(axes)))
        assert_same(roll(x, tuple(shifts), axis=tuple(axes)), np.roll(ref, shifts, axis=axes))


def test_large_concat_over_binding_window(backend):
    """An operand larger than one binding window (lavapipe: 128 MiB) is copied in pieces."""
    limit = backend.max_window_bytes()
    n = limit // 4 + 1024 * 1024  # float32 elements: a bit more than one window
    a = GpuArray._empty((n,), _dtypes.float32)
    from gputensor import _dispatch

    _dispatch.fill(a[n - 5 :], 7.0)
    _dispatch.fill(a[:5], 3.0)
    b = gpu(np.arange(4, dtype=np.float32))
    out = concat([b, a, b])
    assert out.shape == (n + 8,)
    np.testing.assert_array_equal(host(out[:9]), [0, 1, 2, 3, 3, 3, 3, 3, 3])
    np.testing.assert_array_equal(host(out[-9:]), [7, 7, 7, 7, 7, 0, 1, 2, 3])


# ---- errors ----------------------------------------------------------------------------------
def test_errors():
    x = gpu(np.zeros((2, 3), np.float32))
    with pytest.raises(TypeError):
        flip(np.zeros(3))
    with pytest.raises(AxisError):
        flip(x, axis=2)
    with pytest.raises(ValueError):
        flip(x, axis=(0, 0))
    with pytest.raises(TypeError):
        flip(x, axis=1.0)
    with pytest.raises(AxisError):
        expand_dims(x, axis=3)
    with pytest.raises(ValueError):
        squeeze(x, axis=0)
    with pytest.raises(ValueError):
        squeeze(x, axis=None)
    with pytest.raises(ValueError):
        permute_dims(x, (0, 0))
    with pytest.raises(ValueError):
        permute_dims(x, (0,))
    with pytest.raises(ValueError):
        moveaxis(x, (0, 1), (0,))
    with pytest.raises(ValueError):
        broadcast_to(x, (3, 3))
    with pytest.raises(ValueError):
        broadcast_to(x, (3,))
    with pytest.raises(ValueError):
        broadcast_arrays(x, gpu(np.zeros(4)))
    with pytest.raises(ValueError):
        concat([])
    with pytest.raises(ValueError):
        concat([x, gpu(np.zeros((2, 4), np.float32))], axis=0)
    with pytest.raises(ValueError):
        concat([x, gpu(np.zeros(3, np.float32))])
    with pytest.raises(ValueError):
        concat([gpu(np.float32(1)), gpu(np.float32(1))])
    with pytest.raises(TypeError):
        concat([x, gpu(np.zeros((2, 3), np.bool_))])
    with pytest.raises(TypeError):
        concat(x)
    with pytest.raises(ValueError):
        stack([x, gpu(np.zeros((3, 2), np.float32))])
    with pytest.raises(TypeError):
        tile(x, [2, 2])
    with pytest.raises(ValueError):
        tile(x, (-1,))
    with pytest.raises(ValueError):
        repeat(x, -1)
    with pytest.raises(ValueError):
        repeat(x, gpu(np.array([1, 2])), axis=1)
    with pytest.raises(TypeError):
        repeat(x, gpu(np.array([1.0, 2.0, 3.0])), axis=1)
    with pytest.raises(TypeError):
        repeat(x, 1.5)
    with pytest.raises(ValueError):
        roll(x, (1, 2), axis=(0, 1, 1))
    with pytest.raises(AxisError):
        roll(x, 1, axis=2)
    with pytest.raises(AxisError):
        unstack(gpu(np.float32(1)))
