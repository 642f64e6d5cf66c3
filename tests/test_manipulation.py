"""Manipulation functions against NumPy: views (shared storage, no copy), copies, errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gputensor as gt
from gputensor._shapes import AxisError

from _compare import ALL as DTYPES
from _compare import assert_same, gpu


def host(x: gt.GpuArray) -> np.ndarray:
    return x.get()


def shares(x: gt.GpuArray, y: gt.GpuArray) -> bool:
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
    y = gt.flip(x, axis=axis)
    assert shares(y, x)
    assert_same(y, np.flip(ref, axis=axis))
    perm = data.draw(st.permutations(range(ref.ndim)))
    assert_same(gt.permute_dims(x, tuple(perm)), np.transpose(ref, perm))
    if ref.ndim:
        s = data.draw(st.integers(-ref.ndim, ref.ndim - 1))
        d = data.draw(st.integers(-ref.ndim, ref.ndim - 1))
        y = gt.moveaxis(x, s, d)
        assert shares(y, x)
        assert_same(y, np.moveaxis(ref, s, d))


@given(arrays_with_views(), st.data())
def test_expand_squeeze(pair, data):
    ref, x = pair
    ax = data.draw(st.integers(-ref.ndim - 1, ref.ndim))
    y = gt.expand_dims(x, axis=ax)
    assert shares(y, x)
    assert_same(y, np.expand_dims(ref, ax))
    assert_same(gt.squeeze(y, axis=ax), ref)
    assert_same(gt.squeeze(y, axis=(ax,)), ref)


@given(arrays_with_views(max_dims=3), st.data())
def test_reshape(pair, data):
    ref, x = pair
    flat = ref.reshape(-1)
    shape = data.draw(st.sampled_from([(-1,), (1, -1), (-1, 1), ref.shape[::-1] if ref.size else (0,), ()]
                                      if ref.size == 1 else [(-1,), (1, -1), (-1, 1)] if ref.size else [(0,), (0, 3)]))
    assert_same(gt.reshape(x, shape), flat.reshape(shape))
    copy = data.draw(st.sampled_from([None, True]))
    y = gt.reshape(x, shape, copy=copy)
    if copy:
        assert not shares(y, x)
    assert_same(y, flat.reshape(shape))


def test_reshape_view_and_copy_rules():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    x = gpu(a)
    y = gt.reshape(x, (2, 12))
    assert shares(x, y)
    assert shares(x, gt.reshape(x, (6, 4), copy=False))
    t = gt.permute_dims(x, (1, 0))
    with pytest.raises(ValueError):
        gt.reshape(t, (24,), copy=False)
    z = gt.reshape(t, (24,))
    assert not shares(z, x)
    assert_same(z, a.T.reshape(24))
    with pytest.raises(ValueError):
        gt.reshape(x, (5, 5))
    with pytest.raises(ValueError):
        gt.reshape(x, (-1, -1))
    with pytest.raises(TypeError):
        gt.reshape(x, (2.0, 12))


@given(arrays_with_views(max_dims=3), st.data())
def test_broadcast(pair, data):
    ref, x = pair
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2))
    target = tuple(lead) + tuple(data.draw(st.sampled_from([s, s] if s != 1 else [1, 3])) for s in ref.shape)
    y = gt.broadcast_to(x, target)
    assert shares(y, x)
    assert_same(y, np.broadcast_to(ref, target))
    other = np.zeros(target[-1:] if target else (), dtype=np.int8)
    ys = gt.broadcast_arrays(x, gpu(other))
    assert isinstance(ys, list)  # the 2024.12 spec's return type
    refs = np.broadcast_arrays(ref, other)
    for g, r in zip(ys, refs):
        assert_same(g, r)


@given(arrays_with_views(min_dims=1), st.data())
def test_unstack(pair, data):
    ref, x = pair
    ax = data.draw(st.integers(-ref.ndim, ref.ndim - 1))
    parts = gt.unstack(x, axis=ax)
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
        expected_dtype = gt.result_type(getattr(gt, ref.dtype.name), getattr(gt, other_dtype.name)).numpy
    except TypeError:
        with pytest.raises(TypeError):
            gt.concat([x, gpu(np.zeros(ref.shape, other_dtype))], axis=ax)
        return
    extra = list(ref.shape)
    extra[ax] = data.draw(st.integers(0, 3))
    other = np.arange(int(np.prod(extra)), dtype=np.int64).reshape(extra).astype(other_dtype)
    got = gt.concat((x, gpu(other), x), axis=ax)
    assert_same(got, np.concatenate([ref, other, ref], axis=ax).astype(expected_dtype))
    got = gt.concat([x, gpu(other)], axis=None)
    assert_same(got, np.concatenate([ref.reshape(-1), other.reshape(-1)]).astype(expected_dtype))
    sax = data.draw(st.integers(-ref.ndim - 1, ref.ndim))
    assert_same(gt.stack([x, gt.flip(x)], axis=sax), np.stack([ref, np.flip(ref)], axis=sax))


@given(arrays_with_views(max_dims=3), st.lists(st.integers(0, 3), max_size=4))
def test_tile(pair, reps):
    ref, x = pair
    assert_same(gt.tile(x, tuple(reps)), np.tile(ref, tuple(reps)))


@given(arrays_with_views(max_dims=3), st.data())
def test_repeat(pair, data):
    ref, x = pair
    r = data.draw(st.integers(0, 3))
    axis = data.draw(st.none() | st.integers(-ref.ndim, ref.ndim - 1) if ref.ndim else st.none())
    assert_same(gt.repeat(x, r, axis=axis), np.repeat(ref, r, axis=axis))
    n = ref.size if axis is None else ref.shape[axis]
    counts = np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype=np.int64)
    assert_same(gt.repeat(x, gpu(counts), axis=axis), np.repeat(ref, counts, axis=axis))


@given(arrays_with_views(max_dims=3), st.data())
def test_roll(pair, data):
    ref, x = pair
    shift = data.draw(st.integers(-7, 7))
    assert_same(gt.roll(x, shift), np.roll(ref, shift))
    if ref.ndim:
        axes = data.draw(st.lists(st.integers(-ref.ndim, ref.ndim - 1), min_size=1, max_size=3))
        shifts = data.draw(st.lists(st.integers(-7, 7), min_size=len(axes), max_size=len(axes)))
        assert_same(gt.roll(x, tuple(shifts), axis=tuple(axes)), np.roll(ref, shifts, axis=axes))


def test_large_concat_over_binding_window(backend):
    """An operand larger than one binding window (lavapipe: 128 MiB) is copied in pieces."""
    limit = backend.max_window_bytes()
    n = limit // 4 + 1024 * 1024  # float32 elements: a bit more than one window
    a = gt.empty((n,), dtype=gt.float32)
    a[n - 5 :] = 7.0
    a[:5] = 3.0
    b = gpu(np.arange(4, dtype=np.float32))
    out = gt.concat([b, a, b])
    assert out.shape == (n + 8,)
    np.testing.assert_array_equal(host(out[:9]), [0, 1, 2, 3, 3, 3, 3, 3, 3])
    np.testing.assert_array_equal(host(out[-9:]), [7, 7, 7, 7, 7, 0, 1, 2, 3])


@pytest.mark.parametrize("vec4", [True, False])
def test_concat_kernel_word_sizes(backend, vec4):
    """The concat kernel's 16-byte and 4-byte words (the ``concat_vec4`` knob): blocks of whole
    vectors, blocks that are not, and sources whose first word is off a vector (the 4-byte
    dispatch of the same call)."""
    from gputensor._backend import config, ops_concat

    rng = np.random.default_rng(5)
    base = rng.integers(0, 2**31, size=4096, dtype=np.int64).astype(np.int32)
    src = gpu(base)
    for rows, words, starts in (((3, (8, 4, 12), (0, 64, 128)), (1, (4, 4), (1, 2)), (5, (3, 8), (0, 256)),
                                 (2, tuple(4 * (k + 1) for k in range(10)), tuple(200 * k for k in range(10))))):
        with config.override(concat_vec4=vec4):
            call = ops_concat.ConcatCall(backend.context, rows, words)
        assert (call.vec_program is not None) == (vec4 and all(w % 4 == 0 for w in words)
                                         and backend.context.storage_offset_alignment % 16 == 0)
        out = gt.empty((rows * sum(words),), dtype=gt.int32)
        call.launch(backend, [src._ptr + 4 * s for s in starts], out._ptr)
        parts = [base[s : s + rows * w].reshape(rows, w) for s, w in zip(starts, words)]
        np.testing.assert_array_equal(host(out), np.concatenate(parts, axis=1).reshape(-1))


# ---- errors ----------------------------------------------------------------------------------
def test_errors():
    x = gpu(np.zeros((2, 3), np.float32))
    with pytest.raises(TypeError):
        gt.flip(np.zeros(3))
    with pytest.raises(AxisError):
        gt.flip(x, axis=2)
    with pytest.raises(ValueError):
        gt.flip(x, axis=(0, 0))
    with pytest.raises(TypeError):
        gt.flip(x, axis=1.0)
    with pytest.raises(AxisError):
        gt.expand_dims(x, axis=3)
    with pytest.raises(ValueError):
        gt.squeeze(x, axis=0)
    with pytest.raises(ValueError):
        gt.squeeze(x, axis=None)
    with pytest.raises(ValueError):
        gt.permute_dims(x, (0, 0))
    with pytest.raises(ValueError):
        gt.permute_dims(x, (0,))
    with pytest.raises(ValueError):
        gt.moveaxis(x, (0, 1), (0,))
    with pytest.raises(ValueError):
        gt.broadcast_to(x, (3, 3))
    with pytest.raises(ValueError):
        gt.broadcast_to(x, (3,))
    with pytest.raises(ValueError):
        gt.broadcast_arrays(x, gpu(np.zeros(4)))
    with pytest.raises(ValueError):
        gt.concat([])
    with pytest.raises(ValueError):
        gt.concat([x, gpu(np.zeros((2, 4), np.float32))], axis=0)
    with pytest.raises(ValueError):
        gt.concat([x, gpu(np.zeros(3, np.float32))])
    with pytest.raises(ValueError):
        gt.concat([gpu(np.float32(1)), gpu(np.float32(1))])
    with pytest.raises(TypeError):
        gt.concat([x, gpu(np.zeros((2, 3), np.bool_))])
    with pytest.raises(TypeError):
        gt.concat(x)
    with pytest.raises(ValueError):
        gt.stack([x, gpu(np.zeros((3, 2), np.float32))])
    with pytest.raises(TypeError):
        gt.tile(x, [2, 2])
    with pytest.raises(ValueError):
        gt.tile(x, (-1,))
    with pytest.raises(ValueError):
        gt.repeat(x, -1)
    with pytest.raises(ValueError):
        gt.repeat(x, gpu(np.array([1, 2])), axis=1)
    with pytest.raises(TypeError):
        gt.repeat(x, gpu(np.array([1.0, 2.0, 3.0])), axis=1)
    with pytest.raises(TypeError):
        gt.repeat(x, 1.5)
    with pytest.raises(ValueError):
        gt.roll(x, (1, 2), axis=(0, 1, 1))
    with pytest.raises(AxisError):
        gt.roll(x, 1, axis=2)
    with pytest.raises(AxisError):
        gt.unstack(gpu(np.float32(1)))
