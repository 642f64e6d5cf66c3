"""matmul, tensordot, vecdot, matrix_transpose against NumPy (float64 references)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gputensor as gt
from gputensor._shapes import AxisError

from _compare import RTOL, assert_same, gpu, run_both

MATMUL_DTYPES = ["float32", "float64", "float16", "int32", "int64", "uint8", "int8", "uint16", "int16",
                 "uint32", "uint64"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def operand(data, shape, dtype, allow_views=True):
    """A random numpy operand and its device copy, sometimes a transposed or negative-step view."""
    if dtype.kind == "f":
        el = hnp.from_dtype(dtype, min_value=-4, max_value=4, allow_nan=False, allow_subnormal=False)
    else:
        el = st.integers(-5, 5) if dtype.kind == "i" else st.integers(0, 5)
    ref = data.draw(hnp.arrays(dtype, shape, elements=el))
    kind = data.draw(st.sampled_from(["plain", "transposed", "negative"] if allow_views and len(shape) >= 2 else ["plain"]))
    if kind == "transposed":  # a .mT view of a stored transpose: column-major matrices
        stored = np.ascontiguousarray(np.swapaxes(ref, -1, -2))
        return ref, gt.matrix_transpose(gpu(stored))
    if kind == "negative":
        return ref, gt.flip(gpu(np.flip(ref, axis=-1).copy()), axis=-1)
    return ref, gpu(ref)


def check(got, expect, k):
    """A product of depth ``k`` against NumPy's: the summation tolerance times 4, plus an
    absolute term that grows with the depth; integers exactly."""
    assert_same(got, expect, "summation", rtol={n: 4 * r for n, r in RTOL.items()}, scale=16 * max(k, 1))


@given(st.data())
def test_matmul(data):
    dtype = np.dtype(data.draw(st.sampled_from(MATMUL_DTYPES)))
    m, k, n = (data.draw(st.integers(0, 9)) for _ in range(3))
    batch = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3))
    kind1 = data.draw(st.sampled_from(["1d", "2d", "batched"]))
    kind2 = data.draw(st.sampled_from(["1d", "2d", "batched"]))
    s1 = (k,) if kind1 == "1d" else (m, k) if kind1 == "2d" else batch.input_shapes[0] + (m, k)
    s2 = (k,) if kind2 == "1d" else (k, n) if kind2 == "2d" else batch.input_shapes[1] + (k, n)
    a, x1 = operand(data, s1, dtype)
    b, x2 = operand(data, s2, dtype)
    expect = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(dtype) if dtype.kind == "f" \
        else np.matmul(a, b)
    check(gt.matmul(x1, x2), np.asarray(expect), k)
    if kind1 != "1d" or kind2 != "1d":
        check(x1 @ x2, np.asarray(expect), k)


def test_matmul_mixed_dtypes_and_batch_broadcast():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 1, 5, 7)).astype(np.float32)
    b = rng.standard_normal((3, 7, 4)).astype(np.float64)
    check(gt.matmul(gpu(a), gpu(b)), a.astype(np.float64) @ b, 7)
    c = rng.integers(-3, 3, (4, 7)).astype(np.int16)
    d = rng.integers(-3, 3, (7,)).astype(np.int8)
    check(gt.matmul(gpu(c), gpu(d)), c @ d, 7)


def test_matmul_larger_gemm_path():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 130, 70)).astype(np.float32)
    b = rng.standard_normal((70, 150)).astype(np.float32)
    check(gt.matmul(gpu(a), gpu(b)), (a.astype(np.float64) @ b).astype(np.float32), 70)
    # a strided (every other column) operand: copied once, then gemm
    big = rng.standard_normal((130, 140)).astype(np.float32)
    check(gt.matmul(gpu(big)[:, ::2], gpu(b)), (big[:, ::2].astype(np.float64) @ b).astype(np.float32), 70)


# ---- integer matmul (the tiled integer kernel) ----------------------------------------------------
def _extreme_ints(rng, dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


# every integer dtype with itself, and mixed pairs covering each promotion kind (each distinct
# operand-dtype pair compiles its own pipeline: ~1 s on lavapipe, so not all 64 pairs)
INT_PAIRS = [(d, d) for d in INTS] + [
    ("int8", "uint8"), ("uint8", "int32"), ("int16", "uint16"), ("int32", "uint32"),
    ("uint16", "uint64"), ("int8", "int64"), ("uint32", "uint8"), ("uint64", "int8"),
]


@pytest.mark.parametrize("d1, d2", INT_PAIRS)
def test_integer_matmul_dtype_pairs(d1, d2):
    """Integer dtypes with extreme values: the result dtype is the promoted one and every
    product and sum wraps as NumPy's matmul in that dtype; operands are used as views (a
    transposed view, a negative-step view, a broadcast batch) without copies."""
    rng = np.random.default_rng(zlib.crc32(f"{d1},{d2}".encode()))
    a = _extreme_ints(rng, d1, (2, 1, 9, 13))
    b = _extreme_ints(rng, d2, (3, 13, 6))
    x1 = gt.matrix_transpose(gpu(np.ascontiguousarray(np.swapaxes(a, -1, -2))))
    x2 = gpu(b[:, ::-1, :].copy())[:, ::-1, :]
    if {d1, d2} & {"uint64"} and {d1, d2} & {"int8", "int16", "int32", "int64"}:
        with pytest.raises(TypeError):
            gt.matmul(x1, x2)
        return
    dtype = np.result_type(a.dtype, b.dtype)
    got = x1 @ x2
    with np.errstate(all="ignore"):
        expect = np.matmul(a.astype(dtype), b.astype(dtype))
    assert_same(got, expect)


def test_integer_matmul_does_not_materialise_the_product(monkeypatch):
    """The integer path allocates only the result (and a 32-bit accumulator for 8/16-bit
    results), never an (m, k, n) product or copies of the operands."""
    from gputensor import _runtime

    rng = np.random.default_rng(2)
    a = rng.integers(-100, 100, (3, 40, 50)).astype(np.int16)
    b = rng.integers(-100, 100, (50, 30)).astype(np.int8)
    x1, x2 = gpu(a)[:, ::-1], gpu(b.T.copy()).T
    sizes = []
    real_alloc = _runtime.alloc
    monkeypatch.setattr(_runtime, "alloc",
                        lambda nbytes, **kwargs: sizes.append(nbytes) or real_alloc(nbytes, **kwargs))
    got = x1 @ x2
    monkeypatch.undo()
    assert sorted(sizes) == [3 * 40 * 30 * 2, 3 * 40 * 30 * 4], sizes
    with np.errstate(all="ignore"):
        assert_same(got, np.asarray(np.matmul(a[:, ::-1], b.astype(np.int16))))


def test_integer_matmul_larger_and_edge_shapes():
    rng = np.random.default_rng(4)
    for dtype, (m, k, n) in (("int32", (150, 70, 130)), ("uint8", (1, 300, 1)), ("int64", (65, 1, 67)),
                             ("int16", (0, 4, 3)), ("uint32", (4, 0, 3))):
        a = _extreme_ints(rng, dtype, (m, k))
        b = _extreme_ints(rng, dtype, (k, n))
        with np.errstate(all="ignore"):
            expect = a @ b
        assert_same(gpu(a) @ gpu(b), expect)
    v = _extreme_ints(rng, "int8", (300,))
    with np.errstate(all="ignore"):
        assert int(gt.matmul(gpu(v), gpu(v[::-1].copy())[::-1])) == int(np.matmul(v, v))
    a = _extreme_ints(rng, "int32", (4, 5, 6))
    b = _extreme_ints(rng, "int32", (6, 5, 3))
    with np.errstate(all="ignore"):
        run_both(lambda xp: xp.tensordot(xp.asarray(a), xp.asarray(b), axes=([1, 2], [1, 0])))


def test_matrix_transpose():
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    x = gpu(a)
    t = gt.matrix_transpose(x)
    assert t._storage is x._storage
    assert_same(t, np.asarray(np.swapaxes(a, -1, -2)))
    with pytest.raises(ValueError):
        gt.matrix_transpose(gpu(np.zeros(3)))


@given(st.data())
def test_matrix_transpose_property(data):
    dtype = np.dtype(data.draw(st.sampled_from(MATMUL_DTYPES + ["bool"])))
    shape = data.draw(hnp.array_shapes(min_dims=2, max_dims=4, min_side=0, max_side=4))
    a, x = operand(data, shape, dtype) if dtype != np.bool_ else (np.zeros(shape, bool), gpu(np.zeros(shape, bool)))
    t = gt.matrix_transpose(x)
    assert t._storage is x._storage  # a view
    assert_same(t, np.swapaxes(a, -1, -2))
    assert_same(x.mT, np.swapaxes(a, -1, -2))


@given(st.data())
def test_tensordot(data):
    dtype = np.dtype(data.draw(st.sampled_from(["float32", "int64", "float64"])))
    shape1 = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    count = data.draw(st.integers(0, len(shape1)))
    shape2 = shape1[len(shape1) - count:] + data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=4))
    a, x1 = operand(data, shape1, dtype)
    b, x2 = operand(data, shape2, dtype)
    expect = np.tensordot(a, b, axes=count)
    k = int(np.prod(shape1[len(shape1) - count:]))
    check(gt.tensordot(x1, x2, axes=count), np.asarray(expect), k)
    if count == len(shape1) and count:
        # explicit axis lists, reversed order
        ax1 = list(range(count))[::-1]
        ax2 = ax1
        check(gt.tensordot(x1, x2, axes=(ax1, ax2)), np.tensordot(a, b, axes=(ax1, ax2)), k)


@given(st.data())
def test_vecdot(data):
    dtype = np.dtype(data.draw(st.sampled_from(["float32", "int32", "float64", "float16"])))
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=3, max_side=4))
    bshape = np.broadcast_shapes(*shapes.input_shapes)
    axis = data.draw(st.integers(-len(bshape), -1))
    s1, s2 = list(shapes.input_shapes[0]), list(shapes.input_shapes[1])
    # the contracted axis must have equal sizes in both operands
    for s in (s1, s2):
        if len(s) >= -axis:
            s[axis] = bshape[axis]
    a, x1 = operand(data, tuple(s1), dtype)
    b, x2 = operand(data, tuple(s2), dtype)
    if len(s1) < -axis or len(s2) < -axis:
        return
    expect = np.vecdot(a.astype(np.float64), b.astype(np.float64), axis=axis).astype(dtype) \
        if dtype.kind == "f" else np.vecdot(a, b, axis=axis)
    check(gt.vecdot(x1, x2, axis=axis), np.asarray(expect), bshape[axis])


def test_errors():
    x = gpu(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError):
        gt.matmul(x, x)
    with pytest.raises(ValueError):
        gt.matmul(gpu(np.float32(1)), x)
    with pytest.raises(ValueError):
        gt.matmul(gpu(np.zeros((2, 2, 3))), gpu(np.zeros((3, 3, 2))))
    with pytest.raises(TypeError):
        gt.matmul(gpu(np.zeros((2, 2), bool)), gpu(np.zeros((2, 2), bool)))
    with pytest.raises(TypeError):
        gt.matmul(gpu(np.zeros((2, 2), np.uint64)), gpu(np.zeros((2, 2), np.int64)))
    with pytest.raises(TypeError):
        gt.matmul(x, np.zeros((3, 2)))
    with pytest.raises(ValueError):
        gt.tensordot(x, x, axes=1)
    with pytest.raises(ValueError):
        gt.tensordot(x, x, axes=-1)
    with pytest.raises(ValueError):
        gt.tensordot(x, x, axes=3)
    with pytest.raises(ValueError):
        gt.tensordot(x, x, axes=([0], [0, 1]))
    with pytest.raises(AxisError):
        gt.tensordot(x, x, axes=([2], [0]))
    with pytest.raises(ValueError):
        gt.vecdot(x, gpu(np.zeros((2, 4), np.float32)))
    with pytest.raises(ValueError):
        gt.vecdot(x, gpu(np.zeros((4, 3), np.float32)))
    with pytest.raises(TypeError):
        gt.vecdot(gpu(np.zeros(3, bool)), gpu(np.zeros(3, bool)))


@given(st.data())
def test_matmul_result_shape_matches_numpy(data):
    from gputensor._linear_algebra_functions import matmul_result_shape

    s1 = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3))
    s2 = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3))
    try:
        expect = np.matmul(np.zeros(s1), np.zeros(s2)).shape
    except ValueError:
        with pytest.raises(ValueError):
            matmul_result_shape(s1, s2)
        return
    assert matmul_result_shape(s1, s2) == expect


def test_inplace_matmul(backend):
    for dtype in (np.float32, np.int32, np.int8):
        h = (np.arange(9) % 4).reshape(3, 3).astype(dtype)
        x = gpu(h)
        view = x[::-1]
        x @= gpu(h.T.copy())
        with np.errstate(all="ignore"):
            expect = (h.astype(np.int64) @ h.T.astype(np.int64)).astype(dtype)
        np.testing.assert_array_equal(x.get(), expect)
        np.testing.assert_array_equal(view.get(), expect[::-1])  # the same buffer
    v = gpu(np.arange(3, dtype=np.float32))
    v @= gpu(np.eye(3, dtype=np.float32) * 2)
    np.testing.assert_array_equal(v.get(), [0, 2, 4])
    i8 = gpu(np.ones((2, 2), np.int8))
    i16, i8_wide = gpu(np.ones((2, 2), np.int16)), gpu(np.ones((2, 3), np.int8))
    f3, b = gpu(np.ones(3, np.float32)), gpu(np.ones((2, 2), bool))
    backend.synchronize()
    start = backend.context.stats["dispatches"]
    with pytest.raises(TypeError):
        i8 @= i16
    with pytest.raises(ValueError):
        i8 @= i8_wide
    with pytest.raises(ValueError):
        v @= f3
    with pytest.raises(TypeError):
        b @= b
    assert backend.context.stats["dispatches"] == start  # errors before any kernel
    np.testing.assert_array_equal(i8.get(), np.ones((2, 2)))
