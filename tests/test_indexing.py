"""take, take_along_axis, integer-array / boolean-mask __getitem__ and __setitem__,
count_nonzero and nonzero against NumPy; IndexError (gathers: at the next wait; scatters: before any
write); windows split."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gputensor as gt

from _compare import assert_same
from gputensor._backend import get_backend, ops_compact, ops_counting, ops_gather, sort_common
from gputensor._backend.errors import BackendError, BackendErrorKind
from gputensor._shapes import AxisError

ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float16", "float32", "float64"]
INDEX = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


@pytest.fixture(scope="module")
def be():
    return get_backend()


def values(rng: np.random.Generator, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    d = np.dtype(dtype)
    if d.kind == "b":
        return rng.random(shape) < 0.5
    if d.kind == "f":
        a = rng.standard_normal(shape).astype(d)
        flat = a.reshape(-1)
        if flat.size:
            flat[rng.random(flat.size) < 0.15] = np.nan
            flat[rng.random(flat.size) < 0.15] = -0.0
            flat[rng.random(flat.size) < 0.1] = np.inf
        return a
    info = np.iinfo(d)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=d)


def indices(rng: np.random.Generator, n: int, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Valid indices of an axis of length n (negative ones too, where the dtype allows)."""
    lo = -n if np.dtype(dtype).kind == "i" else 0
    hi = min(n - 1, np.iinfo(dtype).max)
    lo = max(lo, np.iinfo(dtype).min)
    return rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)


def assert_copied(got: gt.GpuArray, ref: np.ndarray) -> None:
    """A gather or scatter result: NumPy's dtype, shape and values, float zeros with their signs."""
    assert_same(got, ref, signed_zeros=True)


# ---- take / take_along_axis ------------------------------------------------------------------------
@given(st.data())
def test_take_property(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    dtype = data.draw(st.sampled_from(ALL))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6))
    a = values(rng, dtype, shape)
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    idtype = data.draw(st.sampled_from(INDEX))
    idx = indices(rng, a.shape[axis], (data.draw(st.integers(0, 9)),), idtype)
    x = gt.asarray(a)
    if data.draw(st.booleans()):  # negative-step view
        x = gt.flip(x, axis=axis)
        a = np.flip(a, axis=axis)
    assert_copied(gt.take(x, gt.asarray(idx), axis=axis), np.take(a, idx, axis=axis))


@given(st.data())
def test_take_along_axis_property(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    dtype = data.draw(st.sampled_from(ALL))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    a = values(rng, dtype, shape)
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    ishape = [data.draw(st.sampled_from([1, s])) for s in shape]  # broadcasts against x
    ishape[axis] = data.draw(st.integers(0, 6))
    idx = indices(rng, a.shape[axis], tuple(ishape), data.draw(st.sampled_from(INDEX)))
    assert_copied(gt.take_along_axis(gt.asarray(a), gt.asarray(idx), axis=axis),
                np.take_along_axis(a, idx, axis=axis))


def test_take_along_axis_with_argsort():
    a = np.random.default_rng(0).standard_normal((4, 300)).astype(np.float32)
    x = gt.asarray(a)
    for axis in (0, 1):
        i = gt.argsort(x, axis=axis)
        assert_copied(gt.take_along_axis(x, i, axis=axis), np.sort(a, axis=axis))


def test_take_errors():
    """Out-of-range device indices raise IndexError at the next wait (here ``.get()``), the
    other errors at the call."""
    x = gt.asarray(np.arange(12.0).reshape(3, 4))
    with pytest.raises(IndexError):
        gt.take(x, gt.asarray(np.array([0, 4])), axis=1).get()
    with pytest.raises(IndexError):
        gt.take(x, gt.asarray(np.array([-5])), axis=1).get()
    with pytest.raises(IndexError):
        gt.take(x, gt.asarray(np.array([3], np.uint64)), axis=0).get()
    with pytest.raises(TypeError):
        gt.take(x, gt.asarray(np.array([0.0])), axis=0)
    with pytest.raises(ValueError):
        gt.take(x, gt.asarray(np.array([[0]])), axis=0)
    with pytest.raises(ValueError):
        gt.take(x, gt.asarray(np.array([0])))
    with pytest.raises(AxisError):
        gt.take(x, gt.asarray(np.array([0])), axis=2)
    with pytest.raises(IndexError):
        gt.take_along_axis(x, gt.asarray(np.array([[4]])), axis=1).get()
    with pytest.raises(ValueError):
        gt.take_along_axis(x, gt.asarray(np.array([0])), axis=1)
    with pytest.raises(ValueError):
        gt.take_along_axis(x, gt.asarray(np.zeros((2, 1), np.int64)), axis=1)
    assert gt.take(gt.asarray(np.zeros((0, 3))), gt.asarray(np.zeros(0, np.int64)), axis=0).shape == (0, 3)
    with pytest.raises(IndexError):
        gt.take(gt.asarray(np.zeros((0, 3))), gt.asarray(np.array([0])), axis=0)


# ---- advanced __getitem__ / __setitem__ ---------------------------------------------------------------
@st.composite
def advanced_keys(draw, shape):
    """(numpy key, gputensor key) mixing integer arrays, ints, slices, None and Ellipsis
    (NumPy's rules, adjacent and non-adjacent advanced indices) or a boolean mask."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if draw(st.booleans()) and len(shape) >= 1:  # a boolean mask over k leading (or trailing) dims
        k = draw(st.integers(0, len(shape)))
        lead = draw(st.booleans())
        dims = shape[:k] if lead else shape[len(shape) - k:]
        mask = rng.random(dims) < draw(st.sampled_from([0.0, 0.4, 1.0]))
        if lead:
            return (mask,), (gt.asarray(mask),)
        return (Ellipsis, mask), (Ellipsis, gt.asarray(mask))
    bshape = draw(st.sampled_from([(), (3,), (2, 1), (1, 3), (2, 3)]))
    np_key, gt_key = [], []
    n_adv = 0
    for n in shape:
        kind = draw(st.sampled_from(["array", "array", "slice", "int", "none"]))
        if kind == "array" and n > 0:
            sub = bshape[len(bshape) - draw(st.integers(0, len(bshape))):]
            idx = indices(rng, n, sub, draw(st.sampled_from(["int64", "int32", "int8", "uint16"])))
            np_key.append(idx)
            gt_key.append(gt.asarray(idx))
            n_adv += 1
        elif kind == "int" and n > 0:
            i = draw(st.integers(-n, n - 1))
            np_key.append(i)
            gt_key.append(i)
        else:
            sl = slice(draw(st.none() | st.integers(-n - 1, n)), draw(st.none() | st.integers(-n - 1, n)),
                       draw(st.sampled_from([None, 1, 2, -1, -2])))
            np_key.append(sl)
            gt_key.append(sl)
        if draw(st.integers(0, 5)) == 0:
            np_key.append(None)
            gt_key.append(None)
    if n_adv == 0:
        idx = np.zeros(2, np.int64)
        np_key.append(idx)
        gt_key.append(gt.asarray(idx))
        np_key.insert(0, Ellipsis) if draw(st.booleans()) else None
        if np_key[0] is Ellipsis:
            gt_key.insert(0, Ellipsis)
    return tuple(np_key), tuple(gt_key)


@given(st.data())
def test_advanced_getitem_property(data):
    dtype = data.draw(st.sampled_from(ALL))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = values(rng, dtype, shape)
    np_key, gt_key = data.draw(advanced_keys(shape))
    try:
        ref = a[np_key]
    except IndexError:
        with pytest.raises(IndexError):  # at the call or at the next wait
            gt.asarray(a)[gt_key].get()
        return
    assert_copied(gt.asarray(a)[gt_key], ref)


@given(st.data())
def test_advanced_setitem_property(data):
    dtype = data.draw(st.sampled_from(ALL))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = values(rng, dtype, shape)
    np_key, gt_key = data.draw(advanced_keys(shape))
    try:
        sel = a[np_key]
    except IndexError:
        return
    x = gt.asarray(a)
    kind = data.draw(st.sampled_from(["array", "scalar", "broadcast"]))
    dup = _has_duplicates(a, np_key)
    if kind == "scalar":
        new = values(rng, dtype, ()).item()
    elif dup:  # duplicate positions must receive equal values for a deterministic result
        new = _dup_consistent(a, np_key, sel)
    elif kind == "broadcast" and sel.ndim:
        new = values(rng, dtype, sel.shape[-1:])
    else:
        new = values(rng, dtype, sel.shape)
    expect = a.copy()
    expect[np_key] = new
    x[gt_key] = new if np.isscalar(new) else gt.asarray(np.asarray(new))
    assert_copied(x, expect)


def _has_duplicates(a: np.ndarray, key: tuple) -> bool:
    pos = np.arange(a.size).reshape(a.shape)[key]
    return np.unique(pos).size != np.size(pos)


def _dup_consistent(a: np.ndarray, key: tuple, sel: np.ndarray) -> np.ndarray:
    """A value array for ``a[key] = v`` where duplicate positions get equal values."""
    pos = np.arange(a.size).reshape(a.shape)[key]
    if a.dtype.kind == "b":
        return (pos % 2 == 0)
    return (pos % 7).astype(a.dtype)


def test_getitem_cases():
    a = np.arange(120, dtype=np.int16).reshape(2, 3, 4, 5)
    x = gt.asarray(a)
    i = np.array([[0, 1], [-1, 1]])
    j = np.array([3, -1])
    cases = [
        (i,), (slice(None), i), (Ellipsis, j), (1, slice(None), j), (i, slice(None), j),
        (slice(None), i, j), (None, 0, i, None), (slice(None, None, -1), i, slice(1, 3), j),
        (a[..., 0] > 30,), (a > 50,), (slice(None), a[0, :, :, 0] % 2 == 0), (Ellipsis, a[0, 0, 0] > 1),
        (True,), (False,), (0, True), ([0, 1], [2, 0]), ([],), (np.array([], np.int64), 0),
    ]
    for key in cases:
        gkey = tuple(gt.asarray(k) if isinstance(k, np.ndarray) else k for k in key)
        assert_copied(x[gkey], a[key])
    # 0-d boolean GpuArray masks and host masks
    assert_copied(x[gt.asarray(True)], a[np.True_])
    assert_copied(x[gt.asarray(False)], a[np.False_])
    assert_copied(x[a > 100], a[a > 100])
    # masks over non-mergeable dims (a transposed view): one index array per dim
    t = np.transpose(a, (1, 0, 3, 2))
    xt = gt.permute_dims(x, (1, 0, 3, 2))
    m = t[..., 0] % 3 == 0
    assert_copied(xt[gt.asarray(m)], t[m])
    # more index arrays than the kernel takes: combined into one offset array first
    idx = [np.array([1, 0]), np.array([2, 1]), np.array([3, 0]), np.array([4, 4])]
    assert_copied(x[tuple(gt.asarray(k) for k in idx)], a[tuple(idx)])
    b = np.arange(64, dtype=np.float32).reshape(2, 2, 2, 2, 2, 2)
    keys = tuple(np.array([1, 0, -1]) for _ in range(6))
    assert_copied(gt.asarray(b)[tuple(gt.asarray(k) for k in keys)], b[keys])


def test_getitem_errors():
    a = np.arange(12.0).reshape(3, 4)
    x = gt.asarray(a)
    for key in ((gt.asarray(np.array([3])),), (slice(None), gt.asarray(np.array([-5]))), ([0, 7],),
                (gt.asarray(np.array([True, False])),), (gt.asarray(np.ones((3, 5), bool)),),
                (gt.asarray(np.array([0.5])),), (0, 0, gt.asarray(np.array([0]))),
                (Ellipsis, Ellipsis, gt.asarray(np.array([0]))), (gt.asarray(np.array([4], np.uint8)), 0)):
        with pytest.raises(IndexError):  # at the call or (device indices) at the next wait
            x[key].get()
    with pytest.raises(IndexError):
        x[gt.asarray(np.array([0])), "a"]


def test_setitem_cases_and_errors_before_any_write():
    a = np.arange(24, dtype=np.int8).reshape(4, 6)
    x = gt.asarray(a)
    x[gt.asarray(a % 5 == 0)] = -1
    a[a % 5 == 0] = -1
    assert_copied(x, a)
    x[gt.asarray(np.array([3, 0])), 1:3] = gt.asarray(np.array([[100, 101]], np.int16))  # cast as NumPy
    a[np.array([3, 0]), 1:3] = np.array([[100, 101]], np.int16)
    assert_copied(x, a)
    x[:, [5, 0]] = 7
    a[:, [5, 0]] = 7
    assert_copied(x, a)
    x[gt.asarray(np.array([1]))] = x[gt.asarray(np.array([2]))]  # value read from x itself
    a[np.array([1])] = a[np.array([2])]
    assert_copied(x, a)
    y = gt.asarray(np.arange(6.0))
    y[gt.asarray(np.array([0, 2]))] = gt.flip(y[gt.asarray(np.array([0, 2]))])
    np.testing.assert_array_equal(y.get(), [2.0, 1.0, 0.0, 3.0, 4.0, 5.0])
    before = a.copy()
    with pytest.raises(IndexError):
        x[gt.asarray(np.array([0, 1])), gt.asarray(np.array([2, 6]))] = 0
    with pytest.raises(IndexError):
        x[gt.asarray(np.array([True, False]))] = 0
    with pytest.raises(ValueError):
        x[gt.asarray(np.array([0, 1]))] = gt.asarray(np.zeros((3, 6), np.int8))
    with pytest.raises(OverflowError):
        x[gt.asarray(np.array([0]))] = 1000
    with pytest.raises(TypeError):
        x[gt.asarray(np.array([0]))] = 1j
    assert_copied(x, before)


def test_packed_scatter_neighbours():
    """Scattering 8/16-bit lanes never clobbers the other lanes of a word."""
    for dtype in ("int8", "uint16", "bool", "float16"):
        a = values(np.random.default_rng(2), dtype, (1001,))
        x = gt.asarray(a)
        idx = np.arange(1, 1001, 3)
        new = values(np.random.default_rng(3), dtype, idx.shape)
        x[gt.asarray(idx)] = gt.asarray(new)
        a[idx] = new
        assert_copied(x, a)


# ---- count_nonzero / nonzero --------------------------------------------------------------------------
@given(st.data())
def test_count_nonzero_and_nonzero_property(data):
    dtype = data.draw(st.sampled_from(ALL))
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = values(rng, dtype, shape)
    flat = a.reshape(-1)
    if flat.size and dtype != "bool":
        flat[rng.random(flat.size) < 0.5] = 0
    x = gt.asarray(a)
    axis = data.draw(st.none() | (st.integers(-a.ndim, a.ndim - 1) if a.ndim else st.none()))
    keepdims = data.draw(st.booleans())
    got = gt.count_nonzero(x, axis=axis, keepdims=keepdims)
    assert_same(got, np.asarray(np.count_nonzero(a, axis=axis, keepdims=keepdims), dtype=np.int64))
    if a.ndim == 0:
        with pytest.raises(ValueError):
            gt.nonzero(x)
        return
    got_nz = gt.nonzero(x)
    ref_nz = np.nonzero(a)
    assert len(got_nz) == len(ref_nz)
    for g, r in zip(got_nz, ref_nz):
        assert_copied(g, r)


def test_count_nonzero_axes_and_specials():
    a = np.array([[0.0, -0.0, np.nan], [np.inf, 0.0, 1e-30]], np.float32)
    x = gt.asarray(a)
    assert int(gt.count_nonzero(x)) == 3
    np.testing.assert_array_equal(gt.count_nonzero(x, axis=(0, 1), keepdims=True).get(), [[3]])
    np.testing.assert_array_equal(gt.count_nonzero(x, axis=0).get(), [1, 0, 2])
    np.testing.assert_array_equal(gt.nonzero(x)[1].get(), [2, 0, 2])
    with pytest.raises(TypeError):
        gt.count_nonzero(a)
    with pytest.raises(AxisError):
        gt.count_nonzero(x, axis=2)
    big = np.random.default_rng(4).random(70000) < 0.01  # several tiles and counts scanned
    assert_copied(gt.nonzero(gt.asarray(big))[0], np.asarray(np.nonzero(big)[0]))


# ---- windows and backend validation ---------------------------------------------------------------------
def test_windows_split(monkeypatch):
    """Gathers, scatters and compactions over operands larger than one binding window."""
    monkeypatch.setattr(sort_common, "WINDOW_LIMIT", 8 * 1024)
    rng = np.random.default_rng(9)
    a = values(rng, "float64", (300, 20))   # 48 KB source, 8 KB windows
    idx = indices(rng, 300, (500,), "int64")
    x = gt.asarray(a)
    assert_copied(gt.take(x, gt.asarray(idx), axis=0), np.take(a, idx, axis=0))
    assert_copied(gt.take(x, gt.asarray(idx[:7] % 20), axis=1), np.take(a, idx[:7] % 20, axis=1))
    m = a[:, 0] > 0
    assert_copied(x[gt.asarray(m)], a[m])
    b = a.copy()
    rows = rng.permutation(300)[:120]
    new = values(rng, "float64", (120, 20))
    x[gt.asarray(rows)] = gt.asarray(new)
    b[rows] = new
    assert_copied(x, b)
    c = values(rng, "int8", (40000,))
    assert_copied(gt.nonzero(gt.asarray(c))[0], np.nonzero(c)[0])
    d = values(rng, "uint16", (50, 400))
    di = indices(rng, 400, (50, 3), "int32")
    assert_copied(gt.take_along_axis(gt.asarray(d), gt.asarray(di), axis=1), np.take_along_axis(d, di, axis=1))


def test_backend_validation(be):
    src = be.alloc(64)
    dst = be.alloc(64)
    try:
        before = be.context.stats["dispatches"]
        ix = ops_gather.IndexOperand(src, "int32", (1,), 4, 1)
        bad_ix = ops_gather.IndexOperand(src, "float32", (1,), 4, 1)
        cases = [
            lambda: ops_gather.gather(be, "float32", (4,), src, (0,), (0, 4), dst, (1,), [bad_ix]),
            lambda: ops_gather.gather(be, "float32", (4,), src, (0, 1), (0, 4), dst, (1,), [ix]),
            lambda: ops_gather.gather(be, "float32", (40,), src, (0,), (0, 4), dst, (1,), [ix]),
            lambda: ops_gather.gather(be, "float32", (4,), src, (0,), (0, 40), dst, (1,), [ix]),
            lambda: ops_gather.gather(be, "float32", (4,), src, (0,), (0, 4), dst, (1,), [ix] * 5),
            lambda: ops_gather.scatter(be, "float99", (4,), src, (1,), dst, (0,), (0, 4), [ix]),
        ]
        for case in cases:
            with pytest.raises(BackendError) as info:
                case()
            assert info.value.kind == BackendErrorKind.INVALID_ARGUMENT
        assert be.context.stats["dispatches"] == before
    finally:
        be.free(src)
        be.free(dst)


def test_int32_index_outputs(be):
    """nonzero's kernels also write int32 indices (adapters without shader-int64)."""
    a = np.array([[0, 3, 0], [7, 0, 1]], np.uint8)
    src = be.alloc(a.nbytes)
    be.copy_htod(src, a)
    plan = ops_compact.compact_begin(be, src, a.size, flag="nonzero", dtype="uint8")
    try:
        count = plan.read_total()
        flat = be.alloc(count * 4)
        flat32 = be.alloc(count * 4)
        plan.write_indices(flat, "int32")
        plan.write_indices(flat32, "uint32")
        rows = [be.alloc(count * 4) for _ in range(2)]
        plan.write_coordinates(rows, a.shape, "int32")
        with pytest.raises(BackendError):
            plan.write_coordinates(rows[:1], a.shape, "int32")  # (one output for 2 dims)
        got = np.empty(count, np.int32)
        be.copy_dtoh(got, flat)
        np.testing.assert_array_equal(got, np.flatnonzero(a))
        for d, ptr in enumerate(rows):
            be.copy_dtoh(got, ptr)
            np.testing.assert_array_equal(got, np.nonzero(a)[d])
    finally:
        plan.free()


def test_boolean_mask_with_a_zero_size_dim_selects_nothing():
    """The spec lets each mask dim equal the array's or be 0 (NumPy raises for the latter)."""
    x = gt.asarray(np.arange(12).reshape(3, 4))
    assert x[gt.asarray(np.zeros((0,), bool))].shape == (0, 4)
    assert x[gt.asarray(np.zeros((3, 0), bool))].shape == (0,)
    assert gt.asarray([False])[gt.asarray(np.zeros((0,), bool))].shape == (0,)
    x[gt.asarray(np.zeros((0, 4), bool))] = 5
    np.testing.assert_array_equal(x.get(), np.arange(12).reshape(3, 4))
    with pytest.raises(IndexError):
        x[gt.asarray(np.zeros((2,), bool))]


# ---- boolean masks: values written by the compaction, assignments by where ------------------------
MASK_SIZES = [1, 7, 255, 2047, 2048, 2049, 4096 + 3, 3 * 2048 + 1]


@pytest.mark.parametrize("n", MASK_SIZES)
def test_mask_values_sizes_across_tiles(n):
    """x[m] over every axis (the compaction writes the values) for sizes around the tile of
    2048 elements: empty, all-true, random and one-element masks."""
    rng = np.random.default_rng(n)
    a = values(rng, "float32", (n,))
    x = gt.asarray(a)
    for m in (np.zeros(n, bool), np.ones(n, bool), rng.random(n) < 0.5, np.arange(n) == n - 1):
        assert_copied(x[gt.asarray(m)], a[m])
        assert_copied(x[m], a[m])  # (a NumPy mask)


@pytest.mark.parametrize("dtype", ALL + ["complex64", "complex128"])
def test_mask_values_dtypes(dtype):
    """x[m] for every dtype (packed 8/16-bit outputs, 64-bit words, complex128 by the gather)."""
    if dtype.startswith("complex"):
        if not gt.__array_namespace_info__().dtypes().get(dtype):
            pytest.skip(f"no {dtype}")
    rng = np.random.default_rng(3)
    if dtype.startswith("complex"):
        a = (rng.standard_normal((37, 29)) + 1j * rng.standard_normal((37, 29))).astype(dtype)
    else:
        a = values(rng, dtype, (37, 29))
    m = rng.random(a.shape) < 0.3
    x = gt.asarray(a)
    assert_copied(x[gt.asarray(m)], a[m])
    if a.dtype.kind not in "bc":
        assert_copied(x[x != 0], a[a != 0])  # (a mask made on the device)


def test_mask_shapes_layouts_and_prefixes():
    """Multi-dimensional masks, masks over a prefix of the axes, 0-d masks, non-contiguous x."""
    rng = np.random.default_rng(11)
    a = values(rng, "int32", (6, 7, 5))
    x = gt.asarray(a)
    for m in (rng.random((6, 7, 5)) < 0.4, rng.random((6, 7)) < 0.5, rng.random(6) < 0.5,
              np.zeros((6, 7), bool), np.ones((6,), bool)):
        assert_copied(x[gt.asarray(m)], a[m])
    t = gt.permute_dims(x, (2, 0, 1))  # a transposed view
    at = np.transpose(a, (2, 0, 1))
    m = rng.random(at.shape) < 0.5
    assert_copied(t[gt.asarray(m)], at[m])
    s = x[::2, 1:, ::-1]  # a strided view with an offset
    sa = a[::2, 1:, ::-1]
    m = rng.random(sa.shape) < 0.5
    assert_copied(s[gt.asarray(m)], sa[m])
    z = gt.asarray(np.float32(2.5))
    assert_copied(z[gt.asarray(True)], np.float32(2.5)[np.True_])
    assert_copied(z[gt.asarray(False)], np.float32(2.5)[np.False_])
    e = gt.asarray(np.zeros((0, 3), np.float32))
    assert_copied(e[gt.asarray(np.zeros((0, 3), bool))], np.zeros((0, 3), np.float32)[np.zeros((0, 3), bool)])


@pytest.mark.parametrize("dtype", ["bool", "int8", "float16", "int32", "float32", "int64", "float64"])
def test_mask_assignment_by_where(dtype):
    """x[m] = v for values the same at every selected position (scalars, 0-d and size-1 arrays,
    rows broadcast over a prefix mask): elementwise, nothing read back; other values scatter."""
    rng = np.random.default_rng(5)
    a = values(rng, dtype, (9, 300))
    one = np.array(1, dtype=dtype)
    for m, v in ((rng.random(a.shape) < 0.5, one.item()), (rng.random(a.shape) < 0.5, one),
                 (np.zeros(a.shape, bool), one.item()), (np.ones(a.shape, bool), one.reshape(1, 1)),
                 (rng.random(9) < 0.5, values(rng, dtype, (300,))),
                 (rng.random(9) < 0.5, values(rng, dtype, (1, 300)))):
        b = a.copy()
        b[m] = v if np.ndim(v) <= 1 else v.reshape(-1)  # (NumPy takes at most 1-d values here)
        x = gt.asarray(a)
        x[gt.asarray(m)] = gt.asarray(v) if isinstance(v, np.ndarray) else v
        assert_copied(x, b)
    m = rng.random(a.shape) < 0.5  # one value per selected position: the scatter
    v = values(rng, dtype, (int(m.sum()),))
    b = a.copy()
    b[m] = v
    x = gt.asarray(a)
    x[gt.asarray(m)] = gt.asarray(v)
    assert_copied(x, b)
    x = gt.asarray(a)
    with pytest.raises(ValueError):
        x[gt.asarray(m)] = gt.asarray(values(rng, dtype, (int(m.sum()) + 1,)))


def test_mask_assignment_from_a_view_of_itself():
    """x[m] = x[0] (a value sharing x's memory) reads the value before any write."""
    a = np.arange(4000, dtype=np.float32)
    m = a % 3 == 0
    x = gt.asarray(a)
    x[gt.asarray(m)] = x[5]
    a[m] = a[5]
    assert_copied(x, a)


def test_mask_counts_one_readback():
    """x[m] waits once (one submit, one mapping); x[m] = scalar not at all."""
    ctx = get_backend().context
    x = gt.asarray(np.random.default_rng(1).standard_normal(5000).astype(np.float32))
    m = x > 0
    x[m]
    gt.synchronize()
    before = dict(ctx.stats)
    x[m]
    assert ctx.stats["submits"] - before["submits"] == 1
    assert ctx.stats["maps"] - before["maps"] == 1
    gt.synchronize()
    before = dict(ctx.stats)
    x[m] = 0.5
    assert ctx.stats["maps"] == before["maps"]


def _check_compactions(seed: int, n: int, key_dtype: str) -> None:
    """x[m], nonzero(m) and unique_all against NumPy (value, index and head compactions:
    values, first indices, inverse and counts), ``n`` elements."""
    rng = np.random.default_rng(seed)
    a = values(rng, "float32", (n,))
    m = rng.random(a.size) < 0.5
    x = gt.asarray(a)
    assert_copied(x[gt.asarray(m)], a[m])
    assert_copied(gt.nonzero(gt.asarray(m))[0], np.nonzero(m)[0])
    k = rng.integers(0, 50, n // 3).astype(key_dtype)
    u = gt.unique_all(gt.asarray(k))
    vals, first, inv, counts = np.unique(k, return_index=True, return_inverse=True, return_counts=True)
    assert_copied(u.values, vals)
    assert_copied(u.indices, first)
    assert_copied(u.inverse_indices, inv.reshape(k.shape))
    assert_copied(u.counts, counts)


def test_compaction_units_split(monkeypatch):
    """Compactions of several binding windows (units): values, indices, unique with inverse."""
    monkeypatch.setattr(sort_common, "WINDOW_LIMIT", 8 * 1024)
    _check_compactions(21, 30000, "int32")


def test_mask_and_concat_through_dispatch_wrapper(kernels_run):
    """With a wrapper on ``WgpuContext.dispatch`` (the profiler's host-time mode) the same
    programs record through it: compaction (count, scan, write) and concatenation."""
    _check_compactions(4, 9000, "int16")
    b = values(np.random.default_rng(4), "int32", (3, 64))
    assert_copied(gt.concat([gt.asarray(b), gt.asarray(b)], axis=1), np.concatenate([b, b], axis=1))
    assert_copied(gt.concat([gt.asarray(b[:, 1:]), gt.asarray(b)], axis=1), np.concatenate([b[:, 1:], b], axis=1))
    assert {"compact_count", "compact_write", "concat"} <= set(kernels_run)


@pytest.mark.parametrize("shape", [(1, 1), (3, 700), (2049, 2), (5, 7, 61), (2, 3, 4, 5, 6), (4, 0, 3)])
def test_nonzero_coordinates(shape, monkeypatch):
    """N-d nonzero writes each coordinate in the compaction (one pass per dimension), also over
    several binding windows; masks whose axes do not merge index with those coordinates."""
    rng = np.random.default_rng(len(shape))
    a = values(rng, "int16", shape)
    a[rng.random(shape) < 0.6] = 0
    for limit in (None, 8 * 1024):
        if limit:
            monkeypatch.setattr(sort_common, "WINDOW_LIMIT", limit)
        assert_copied(gt.nonzero(gt.asarray(a)), np.nonzero(a))
    b = values(rng, "float32", (6, 4, 3))
    t = gt.permute_dims(gt.asarray(b), (1, 0, 2))  # axes 0 and 1 do not merge
    m = rng.random((4, 6)) < 0.5
    assert_copied(t[gt.asarray(m)], np.transpose(b, (1, 0, 2))[m])


def test_compaction_submits_once(monkeypatch):
    """x[m], nonzero and unique by counting submit once per call (their readback) even when
    their kernels bind more than the flush bound; with the ``compact_hold_submits`` knob off
    the large kernels submit on size as every op does."""
    from gputensor._backend import config
    from gputensor._backend import submit_policy

    monkeypatch.setattr(submit_policy, "FLUSH_BYTES", 4096)
    ctx = get_backend().context
    rng = np.random.default_rng(2)
    a = values(rng, "float32", (40000,))
    x = gt.asarray(a)
    k = gt.asarray(rng.integers(0, 900, 40000).astype(np.int32))

    def submits(fn):
        fn()
        gt.synchronize()
        before = ctx.stats["submits"]
        fn()
        return ctx.stats["submits"] - before

    for fn in (lambda: x[x > 0], lambda: gt.nonzero(x > 0), lambda: gt.unique_values(k)):
        assert submits(fn) == 1
    with config.override(compact_hold_submits=False):
        assert submits(lambda: x[x > 0]) > 1
    assert_copied(x[x > 0], a[a > 0])
