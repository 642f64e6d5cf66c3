"""GpuArray: attributes, host transfer, scalar conversion, basic indexing views, __setitem__,
in-place operators, freeing, dlpack and namespace hooks. Checked against NumPy."""

from __future__ import annotations

import gc
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gputensor as gt

from _compare import assert_same, numpy_gt_allclose
from gputensor._backend import get_backend

ALL_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float16", "float32", "float64"]


@pytest.fixture(scope="module")
def backend():
    return get_backend()


def host_values(dtype: str, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.asarray(_host_values(dtype, shape, seed))


def _host_values(dtype: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    return (rng.standard_normal(shape) * 100).astype(dtype)


# ---- attributes ------------------------------------------------------------------------------
def test_attributes():
    x = gt.asarray(np.zeros((2, 3, 4), dtype=np.float32))
    assert x.shape == (2, 3, 4) and x.ndim == 3 and x.size == 24 and len(x) == 2
    assert x.dtype == gt.float32 and x.device == gt.Device() and str(x.device) == "webgpu:0"
    assert x.mT.shape == (2, 4, 3)
    with pytest.raises(ValueError):
        x.T
    with pytest.raises(ValueError):
        gt.asarray([1.0]).mT
    with pytest.raises(TypeError):
        len(gt.asarray(1.0))
    with pytest.raises(TypeError):
        gt.GpuArray()
    with pytest.raises(TypeError):
        hash(x)


def test_transposes_are_views():
    h = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    x = gt.asarray(h)
    np.testing.assert_array_equal(x.mT.get(), h.transpose(0, 2, 1))
    np.testing.assert_array_equal(x[0].T.get(), h[0].T)
    x[0].T[1, 2] = -7  # writes through the view
    assert int(x[0, 2, 1]) == -7


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_roundtrip_every_dtype(dtype):
    h = host_values(dtype, (3, 5), seed=1)
    x = gt.asarray(h)
    assert x.dtype.name == dtype
    for out in (x.get(), np.asarray(x), gt.asnumpy(x), np.array(x, copy=True)):
        assert out.dtype == h.dtype
        np.testing.assert_array_equal(out, h)
    np.testing.assert_array_equal(np.asarray(x, dtype=np.float64), h.astype(np.float64))


def test_array_copy_false_raises():
    with pytest.raises(ValueError):
        np.array(gt.asarray([1, 2]), copy=False)


def test_asnumpy_rejects_non_arrays():
    with pytest.raises(TypeError):
        gt.asnumpy(np.zeros(3))


# ---- scalar conversion ----------------------------------------------------------------------
def test_scalar_conversions():
    assert bool(gt.asarray(True)) is True and bool(gt.asarray([0])) is False
    assert int(gt.asarray(-7, dtype=gt.int8)) == -7
    assert float(gt.asarray(2.5)) == 2.5
    assert complex(gt.asarray(2.5)) == complex(2.5)
    assert int(gt.asarray([[3]], dtype=gt.uint64)) == 3
    assert [10, 20, 30][gt.asarray(1)] == 20
    assert math.isnan(float(gt.asarray(math.nan)))
    with pytest.raises(TypeError):
        [1, 2][gt.asarray(1.0)]
    with pytest.raises(TypeError):
        bool(gt.asarray([1, 2]))
    with pytest.raises(TypeError):
        float(gt.zeros((0,)))
    with pytest.raises(ValueError):
        int(gt.asarray(math.nan))
    with pytest.raises(OverflowError):
        int(gt.asarray(math.inf))


def test_repr_and_str():
    x = gt.asarray([1.5, -2.0], dtype=gt.float32)
    r = repr(x)
    assert r.startswith("GpuArray([ 1.5, -2. ]") and "dtype=float32" in r and "webgpu:0" in r
    integral = gt.__array_namespace_info__().default_dtypes()["integral"]  # int32 without shader-int64
    assert f"dtype={integral.name}" in repr(gt.asarray([[1, 2], [3, 4]]))
    assert "shape=(0, 3)" in repr(gt.zeros((0, 3)))
    assert "dtype=bool" in repr(gt.asarray(True))
    assert str(x) == str(np.array([1.5, -2.0], dtype=np.float32))


# ---- freeing ----------------------------------------------------------------------------------
def test_memory_freed_on_gc(backend):
    gc.collect()
    before = len(backend._allocations)
    x = gt.zeros((1000,))
    view = x[::2]
    del x
    gc.collect()
    assert len(backend._allocations) == before + 1  # the view keeps the storage alive
    del view
    gc.collect()
    assert len(backend._allocations) == before
    for _ in range(20):
        gt.ones((256,)) + 1
    gc.collect()
    assert len(backend._allocations) == before


# ---- basic indexing ---------------------------------------------------------------------------
@st.composite
def basic_indices(draw, shape):
    """A basic index for ``shape``: ints, slices (any step), one optional ..., None."""
    items = []
    dims = list(shape)
    n_index = draw(st.integers(0, len(dims)))
    for size in dims[:n_index]:
        if size > 0 and draw(st.booleans()):
            items.append(draw(st.integers(-size, size - 1)))
        else:
            start = draw(st.none() | st.integers(-size - 2, size + 2))
            stop = draw(st.none() | st.integers(-size - 2, size + 2))
            step = draw(st.none() | st.integers(-3, 3).filter(lambda s: s != 0))
            items.append(slice(start, stop, step))
        if draw(st.integers(0, 4)) == 0:
            items.append(None)
    if draw(st.booleans()):
        items.append(Ellipsis)  # after the items, which index the leading dimensions
    if len(items) == 1 and draw(st.booleans()):
        return items[0]
    return tuple(items)


@st.composite
def array_and_index(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5))
    dtype = draw(st.sampled_from(["int8", "uint16", "float32", "int64", "float64", "bool"]))
    key = draw(basic_indices(shape))
    return shape, dtype, key


@given(array_and_index())
def test_getitem_matches_numpy(case):
    shape, dtype, key = case
    h = host_values(dtype, shape)
    x = gt.asarray(h)
    view = x[key]
    expected = h[key]
    assert view.shape == expected.shape
    np.testing.assert_array_equal(view.get(), expected)
    # a view of a view, and a kernel reading the strided view
    if view.ndim:
        np.testing.assert_array_equal(view[::-1].get(), expected[::-1])
    np.testing.assert_array_equal(gt.astype(view, gt.float64).get(), expected.astype(np.float64))


@given(array_and_index(), st.data())
def test_setitem_matches_numpy(case, data):
    shape, dtype, key = case
    h = host_values(dtype, shape)
    x = gt.asarray(h)
    target_shape = h[key].shape
    kind = data.draw(st.sampled_from(["scalar", "array", "broadcast"]))
    if kind == "scalar":
        value = data.draw(st.booleans()) if dtype == "bool" else data.draw(st.integers(0, 100))
        gpu_value = value
    else:
        vshape = target_shape
        if kind == "broadcast" and target_shape:
            vshape = tuple(1 if data.draw(st.booleans()) else n for n in target_shape)
            vshape = vshape[data.draw(st.integers(0, len(vshape))):]
        value = host_values(dtype, vshape, seed=7)
        gpu_value = gt.asarray(value)
    h[key] = value
    x[key] = gpu_value
    np.testing.assert_array_equal(x.get(), h)


def test_setitem_casts_and_checks():
    x = gt.zeros((4,), dtype=gt.int32)
    x[0] = 2.9  # NumPy assignment truncates
    x[1:3] = gt.asarray([1.5, -2.5], dtype=gt.float32)
    x[3] = True
    np.testing.assert_array_equal(x.get(), [2, 1, -2, 1])
    x[:] = np.array([4, 5, 6, 7], dtype=np.int16)
    x[::2] = [9, 9]
    np.testing.assert_array_equal(x.get(), [9, 5, 9, 7])
    with pytest.raises(OverflowError):
        x[0] = 2**40
    with pytest.raises(TypeError):
        x[0] = 1j
    with pytest.raises(TypeError):
        x[0] = "a"
    with pytest.raises(ValueError):
        x[:2] = gt.asarray([1, 2, 3])
    with pytest.raises(IndexError):
        x[4] = 1


def test_setitem_overlapping_views():
    for dtype in (np.uint8, np.int16, np.float32, np.float64):
        h = np.arange(11).astype(dtype)
        x = gt.asarray(h)
        x[1:] = x[:-1]
        h[1:] = h[:-1].copy()
        np.testing.assert_array_equal(x.get(), h)
        x[:] = x[::-1]
        h[:] = h[::-1].copy()
        np.testing.assert_array_equal(x.get(), h)
    m = gt.asarray(np.arange(16, dtype=np.float32).reshape(4, 4))
    m[...] = m.T
    assert_same(m, np.asarray(np.arange(16, dtype=np.float32).reshape(4, 4).T))


@pytest.mark.parametrize(
    "key, error",
    [
        (5, IndexError),
        (-6, IndexError),
        ((0, 0), IndexError),
        ((Ellipsis, Ellipsis), IndexError),
        (1.0, IndexError),
        ("a", IndexError),
    ],
)
def test_getitem_errors(key, error):
    x = gt.zeros((5,))
    with pytest.raises(error):
        x[key]


def test_getitem_zero_d_integer_array_is_a_basic_index():
    # (integer-array and boolean-mask keys are advanced indexing: issue 4, tests/test_indexing*)
    x = gt.arange(5)
    v = x[gt.asarray(2)]
    assert int(v) == 2 and v.shape == () and v._storage is x._storage


def test_views_share_storage_and_packed_offsets():
    h = np.arange(37, dtype=np.int8)
    x = gt.asarray(h)
    v = x[3:30:3]
    v[...] = -1
    h[3:30:3] = -1
    np.testing.assert_array_equal(x.get(), h)
    w = x[1:6]  # odd byte offset inside a packed word
    np.testing.assert_array_equal((w + 1).get(), h[1:6] + 1)


def test_strided_readback_uses_gather():
    h = np.arange(4000, dtype=np.float32).reshape(40, 100)
    x = gt.asarray(h)
    np.testing.assert_array_equal(x[::7, ::-9].get(), h[::7, ::-9])  # sparse: gathered on GPU
    np.testing.assert_array_equal(x[:, ::2].get(), h[:, ::2])  # dense: host gather


# ---- operators ---------------------------------------------------------------------------------
def test_inplace_writes_into_views():
    h = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = gt.asarray(h)
    row = x[1]
    row += 10
    h[1] += 10
    np.testing.assert_array_equal(x.get(), h)
    x[:, ::-2] *= 2
    h[:, ::-2] *= 2
    np.testing.assert_array_equal(x.get(), h)
    x -= x[0]
    h -= h[0].copy()
    np.testing.assert_array_equal(x.get(), h)
    x += x.T[:4, :3].T  # overlapping input with another layout
    np.testing.assert_array_equal(x.get(), h + h)


def test_inplace_dtype_and_shape_rules():
    i = gt.asarray([1, 2, 3], dtype=gt.int32)
    with pytest.raises(TypeError):
        i /= 2  # would give a float result
    with pytest.raises(TypeError):
        i += gt.asarray([1, 2, 3], dtype=gt.int64)
    with pytest.raises(TypeError):
        i += 1.5
    with pytest.raises(ValueError):
        i += gt.zeros((2, 3), dtype=gt.int32)
    i <<= 2
    i //= 3
    i %= 3
    i **= 2
    i ^= 1
    np.testing.assert_array_equal(i.get(), ((np.array([1, 2, 3]) << 2) // 3 % 3) ** 2 ^ 1)
    f = gt.asarray([1.0, 2.0], dtype=gt.float32)
    f += gt.asarray([1, 2], dtype=gt.int8)  # int8 + float32 -> float32: allowed
    np.testing.assert_array_equal(f.get(), [2.0, 4.0])
    same = f
    f /= 2
    assert f is same


@pytest.mark.parametrize("op", ["1 - x", "2 / x", "3 % x", "3 // x", "5 > x"])
@numpy_gt_allclose("arith")
def test_reflected_operators(xp, op):
    x = xp.asarray(np.array([1.0, -2.0, 4.0], dtype=np.float32))
    return eval(op, {"x": x})


@numpy_gt_allclose("transcendental")
def test_reflected_pow(xp):
    return 2 ** xp.asarray(np.array([1.0, -2.0, 4.0], dtype=np.float32))


def test_reflected_operators_and_scalars():
    h = np.array([1.0, -2.0, 4.0], dtype=np.float32)
    x = gt.asarray(h)
    assert ((5 > x).get() == (5 > h)).all()
    assert (x == 1).dtype == gt.bool
    n = gt.asarray([1, 2], dtype=gt.uint8)
    np.testing.assert_array_equal((7 & n).get(), 7 & np.array([1, 2], np.uint8))
    np.testing.assert_array_equal((1 << n).get(), [2, 4])
    np.testing.assert_array_equal((~n).get(), ~np.array([1, 2], np.uint8))
    np.testing.assert_array_equal((-n).get(), -np.array([1, 2], np.uint8))
    np.testing.assert_array_equal(abs(gt.asarray([-3, 4])).get(), [3, 4])
    np.testing.assert_array_equal((+x).get(), h)
    with pytest.raises(TypeError):
        x + np.ones(3, dtype=np.float32)  # NumPy arrays are not implicitly converted
    with pytest.raises(TypeError):
        np.ones(3, dtype=np.float32) + x
    with pytest.raises(TypeError):
        x + "a"
    with pytest.raises(TypeError):
        gt.asarray([True]) + 1
    with pytest.raises(TypeError):
        x & 1
    with pytest.raises(OverflowError):
        n + 300
    assert (x == "a") is False


# ---- namespace, device, dlpack ---------------------------------------------------------------
def test_namespace_and_device():
    x = gt.asarray([1.0])
    assert x.__array_namespace__() is gt
    assert x.__array_namespace__(api_version="2024.12") is gt
    with pytest.raises(ValueError):
        x.__array_namespace__(api_version="2099.01")
    assert x.to_device(x.device) is x
    assert x.to_device("webgpu") is x
    host = x.to_device("cpu")  # a NumPy copy, as array-api-compat's to_device gives for CuPy
    assert isinstance(host, np.ndarray) and host.tolist() == [1.0]


def test_dlpack_host_copy():
    h = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = gt.asarray(h)
    assert x.__dlpack_device__() == (1, 0)
    np.testing.assert_array_equal(np.from_dlpack(x), h)
    np.testing.assert_array_equal(np.from_dlpack(x[:, ::-1]), h[:, ::-1])
    with pytest.raises(BufferError):
        x.__dlpack__(copy=False)
    y = gt.from_dlpack(h)
    assert y.dtype == gt.float32
    np.testing.assert_array_equal(y.get(), h)
    assert gt.from_dlpack(x) is x
    z = gt.from_dlpack(x, copy=True)
    z[0, 0] = 100
    assert float(x[0, 0]) == 0.0
    with pytest.raises(BufferError):
        gt.from_dlpack(h, copy=False)


# ---- audit additions: repr, complex, to_device, errors before kernels, missing features -------
def test_repr_zero_d_and_empty_formats():
    """NumPy's repr with the class name, dtype and device; 0-d arrays show the bare value, empty
    arrays NumPy's ``[]`` (with the shape unless 1-D)."""
    dev = "device='webgpu:0'"
    assert repr(gt.asarray(1.5)) == f"GpuArray(1.5, dtype=float32, {dev})"
    assert repr(gt.asarray(-3, dtype=gt.int8)) == f"GpuArray(-3, dtype=int8, {dev})"
    assert repr(gt.asarray(True)) == f"GpuArray(True, dtype=bool, {dev})"
    assert repr(gt.asarray(math.nan, dtype=gt.float64)) == f"GpuArray(nan, dtype=float64, {dev})"
    assert repr(gt.asarray(-0.0)) == f"GpuArray(-0., dtype=float32, {dev})"
    assert repr(gt.zeros((0,))) == f"GpuArray([], dtype=float32, {dev})"
    assert repr(gt.zeros((0, 3), dtype=gt.uint16)) == f"GpuArray([], shape=(0, 3), dtype=uint16, {dev})"
    assert repr(gt.zeros((2, 0, 1), dtype=gt.bool)) == f"GpuArray([], shape=(2, 0, 1), dtype=bool, {dev})"
    assert repr(gt.asarray([[1, 2], [3, 4]], dtype=gt.int16)) == (
        f"GpuArray([[1, 2],\n          [3, 4]], dtype=int16, {dev})")
    assert repr(gt.asarray([[1.0, 2.0]])[:, ::-1]) == f"GpuArray([[2., 1.]], dtype=float32, {dev})"
    assert str(gt.asarray(2.5)) == "2.5" and str(gt.zeros((0, 2))) == "[]"


def test_complex_and_scalar_conversions_of_size_one_arrays():
    assert complex(gt.asarray(True)) == 1 + 0j
    assert complex(gt.asarray([[7]], dtype=gt.uint8)) == 7 + 0j
    assert complex(gt.asarray(-2.5, dtype=gt.float16)) == -2.5 + 0j
    assert math.isinf(complex(gt.asarray(-math.inf)).real)
    assert int(gt.asarray(-2.7)) == -2 and float(gt.asarray([3], dtype=gt.int64)) == 3.0
    for bad in (gt.asarray([1.0, 2.0]), gt.zeros((0,)), gt.zeros((1, 2))):
        for conv in (complex, float, int, bool):
            with pytest.raises(TypeError):
                conv(bad)
    with pytest.raises(TypeError):
        gt.asarray(True).__index__()


def test_to_device_errors():
    x = gt.asarray([1.0, 2.0])
    assert x.to_device(gt.Device()) is x and x.to_device("webgpu:0") is x
    assert x.to_device(x.device, stream=None) is x
    for bad in ("webgpu:99", "cuda:0", object(), 0):
        with pytest.raises(ValueError):
            x.to_device(bad)
    with pytest.raises(ValueError):
        gt.Device("webgpu:99")
    with pytest.raises(ValueError):
        x.to_device(x.device, stream=1)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int32", "float16", "float32", "int64", "float64"])
def test_setitem_broadcast_arrays_into_negative_step_views(dtype):
    h = host_values(dtype, (4, 5, 6), seed=2)
    x = gt.asarray(h)
    cases = [
        ((slice(None, None, -1), slice(1, None), slice(None, None, -2)), (6,), slice(None, None, 2)),
        ((slice(None, None, -2), Ellipsis), (5, 1), None),
        ((1, slice(None, None, -1)), (1, 6), slice(None, None, -1)),
        ((slice(None, None, -1), 0, slice(4, 0, -3)), (4, 1), None),
    ]
    for key, vshape, vstep in cases:
        v = host_values(dtype, vshape, seed=len(vshape))
        gv = gt.asarray(v)
        if vstep is not None:
            v, gv = v[..., vstep], gv[..., vstep]
        h[key] = v
        x[key] = gv
        np.testing.assert_array_equal(x.get(), h, err_msg=str(key))
    x[::-1, ::-1] = x[0, 0]  # broadcast from an overlapping view of the same buffer
    h[::-1, ::-1] = h[0, 0].copy()
    np.testing.assert_array_equal(x.get(), h)


def _error_cases():
    f = gt.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    i = gt.asarray(np.arange(12, dtype=np.int32).reshape(3, 4))
    b = gt.asarray(np.ones((3, 4), dtype=bool))
    return f, i, [
        (TypeError, lambda: gt.sin(i)),
        (TypeError, lambda: i.__iadd__(1.5)),
        (TypeError, lambda: f + b),
        (TypeError, lambda: gt.matmul(b, b.T)),
        (TypeError, lambda: gt.sum(b)),
        (TypeError, lambda: gt.where(i, f, f)),
        (TypeError, lambda: gt.astype(f, "no dtype")),
        (TypeError, lambda: gt.zeros(2, dtype=np.float128 if hasattr(np, "float128") else "V8")),
        (ValueError, lambda: f + gt.zeros((5,))),
        (ValueError, lambda: f.__iadd__(gt.zeros((2, 3, 4)))),
        (ValueError, lambda: f.__setitem__(slice(None), gt.zeros((2, 4)))),
        (ValueError, lambda: i.__setitem__((0, slice(None)), np.ones(3, dtype=np.int8))),
        (ValueError, lambda: i.__setitem__(0, [1, 2, 3])),
        (ValueError, lambda: f @ f),
        (ValueError, lambda: i @ i),
        (ValueError, lambda: gt.zeros((2, 3, 4)) @ gt.zeros((3, 4, 2))),
        (ValueError, lambda: gt.concat([f, gt.zeros((2, 3))])),
        (ValueError, lambda: gt.reshape(f.T, (12,), copy=False)),
        (ValueError, lambda: gt.broadcast_to(f, (3, 5))),
        (ValueError, lambda: gt.max(gt.zeros((0, 3)), axis=0)),
        (ValueError, lambda: gt.vecdot(f, gt.zeros((3, 5)))),
        (ValueError, lambda: gt.asarray(f, dtype=gt.int8, copy=False)),
        (IndexError, lambda: f[3]),
        (IndexError, lambda: f.__setitem__((0, 9), 1.0)),
        (IndexError, lambda: f[0, 0, 0]),
        (IndexError, lambda: f[..., ...]),
        (IndexError, lambda: gt.sum(f, axis=2)),  # AxisError is an IndexError (and ValueError)
        (OverflowError, lambda: i.__setitem__(0, 2**40)),
        (OverflowError, lambda: i + 2**40),
    ]


def test_errors_are_raised_before_any_kernel_runs(backend):
    """Every bad call raises the spec's exception without recording any GPU work and without
    changing its operands."""
    f, i, cases = _error_cases()
    f_before, i_before = f.get(), i.get()
    backend.synchronize()
    start = backend.context.stats["dispatches"]
    for error, call in cases:
        with pytest.raises(error):
            call()
        assert backend.context.stats["dispatches"] == start, call
    np.testing.assert_array_equal(f.get(), f_before)
    np.testing.assert_array_equal(i.get(), i_before)


def test_missing_adapter_features_raise_type_error_naming_them(monkeypatch):
    """On an adapter without shader-f64 / shader-int64 (Metal, GL): float64 raises TypeError
    naming the feature (float64 data too, with the conversion to use); int64/uint64 are
    emulated there (two 32-bit words), so NumPy int64 data keeps its dtype and values; the
    default integer dtype is int32, and ``__array_namespace_info__`` says so."""
    from gputensor import _runtime

    x = gt.asarray([1.0, 2.0])
    monkeypatch.setattr(_runtime, "adapter_features", lambda: frozenset({"shader-f16"}))
    with pytest.raises(TypeError, match="shader-f64"):
        gt.zeros(2, dtype=gt.float64)
    assert gt.astype(x, gt.int64).dtype == gt.int64
    np.testing.assert_array_equal(gt.asarray([1, 2], dtype=gt.uint64).get(), [1, 2])
    with pytest.raises(TypeError, match=r"float64 is not supported on this device \(adapter .* lacks "
                       r"shader-f64\); convert with x.astype\(np.float32\) or gt.asarray\(x, dtype=gt.float32\)"):
        gt.asarray(np.ones(2))
    assert gt.asarray(np.ones(2), dtype=gt.float32).dtype == gt.float32
    # int64/uint64 data keeps its dtype and values
    np.testing.assert_array_equal(gt.asarray(np.array([-2**31, 2**31 - 1])).get(), [-2**31, 2**31 - 1])
    assert gt.asarray(np.ones(2, dtype=np.int64)).dtype == gt.int64
    assert gt.asarray(np.ones(2, dtype=np.uint64)).dtype == gt.uint64
    assert gt.asarray(np.ones(0, dtype=np.int64)).dtype == gt.int64
    for big in (np.array([1, 2**31]), np.array([-2**31 - 1]), np.array([2**32], dtype=np.uint64),
                np.int64(2**40)):
        wide = gt.asarray(big)
        assert wide.dtype == big.dtype
        np.testing.assert_array_equal(wide.get(), big)
    assert gt.asarray(3).dtype == gt.int32
    info = gt.__array_namespace_info__()
    assert info.default_dtypes()["integral"] == gt.int32 == info.default_dtypes()["indexing"]
    assert set(info.dtypes()) == {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                  "uint64", "float32", "complex64"}  # float16 is no standard dtype
    assert info.default_dtypes()["complex floating"] == gt.complex64
    with pytest.raises(TypeError, match=r"complex128 is not supported .*shader-f64.*complex64"):
        gt.asarray(np.ones(2, dtype=np.complex128))  # as float64 data: no silent downcast
    with pytest.raises(TypeError, match="shader-f64"):
        gt.zeros(2, dtype=gt.complex128)
