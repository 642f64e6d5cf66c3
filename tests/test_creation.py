"""Creation functions against NumPy: asarray (every input kind, copy=/dtype=), empty/zeros/ones/
full (+ _like), arange, linspace, eye, meshgrid, tril/triu, from_dlpack."""

from __future__ import annotations

import array
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gputensor as gt
from gputensor._backend import get_backend

from _compare import assert_close, assert_same

#: the default integer dtype (int32 on a device without shader-int64)
DEFAULT_INT = gt.__array_namespace_info__().default_dtypes()["integral"]

ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float16", "float32", "float64"]


@pytest.fixture(scope="module", autouse=True)
def _backend():
    return get_backend()


# ---- asarray --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL)
def test_asarray_numpy_keeps_dtype(dtype):
    h = (np.arange(-6, 6) % 5).astype(dtype).reshape(3, 4)
    x = gt.asarray(h)
    assert x.dtype.name == dtype and x.shape == (3, 4)
    assert_same(x, np.asarray(h))
    np.testing.assert_array_equal(gt.asarray(h[::-1, ::2]).get(), h[::-1, ::2])
    np.testing.assert_array_equal(gt.asarray(h.T).get(), h.T)
    s = gt.asarray(h[0, 1])  # NumPy scalar keeps its dtype
    assert s.dtype.name == dtype and s.shape == ()


@given(hnp.arrays(hnp.scalar_dtypes().filter(lambda d: d.kind in "biuf" and d.itemsize <= 8
                                             and d.byteorder in "=|<"),
                  hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)))
def test_asarray_roundtrip_property(h):
    x = gt.asarray(h)
    out = x.get()
    assert out.dtype == h.dtype.newbyteorder("=")
    np.testing.assert_array_equal(out, h)


def test_asarray_python_values():
    assert gt.asarray(True).dtype == gt.bool
    assert gt.asarray(3).dtype == DEFAULT_INT
    assert gt.asarray(3.5).dtype == gt.float32
    assert gt.asarray([1, 2.5]).dtype == gt.float32
    assert gt.asarray([[True, False]]).dtype == gt.bool
    nested = gt.asarray([[1, 2, 3], [4, 5, 6]])
    assert nested.shape == (2, 3) and nested.dtype == DEFAULT_INT
    np.testing.assert_array_equal(nested.get(), [[1, 2, 3], [4, 5, 6]])
    assert gt.asarray([]).shape == (0,)
    np.testing.assert_array_equal(gt.asarray([gt.asarray(1.0), 2.0]).get(), [1.0, 2.0])
    np.testing.assert_array_equal(gt.asarray([1, 2], dtype=gt.uint8).get(), [1, 2])
    assert gt.asarray(-0.0).get().tobytes() == np.float32(-0.0).tobytes()
    with pytest.raises(OverflowError):
        gt.asarray(2**70)
    with pytest.raises(OverflowError):
        gt.asarray([1, 300], dtype=gt.uint8)
    with pytest.raises(TypeError):
        gt.asarray(1j, dtype=gt.float32)
    with pytest.raises(TypeError):
        gt.asarray("abc")
    with pytest.raises(TypeError):
        gt.asarray(object())
    with pytest.raises(ValueError):
        gt.asarray([[1, 2], [3]])
    with pytest.raises(TypeError):
        gt.asarray([1], dtype="not a dtype")
    with pytest.raises(ValueError):
        gt.asarray([1], device="cpu")


def test_asarray_buffers():
    np.testing.assert_array_equal(gt.asarray(b"\x01\x02\xff").get(), [1, 2, 255])
    np.testing.assert_array_equal(gt.asarray(bytearray(b"ab")).get(), [97, 98])
    f = gt.asarray(array.array("f", [1.5, 2.5]))
    assert f.dtype == gt.float32
    np.testing.assert_array_equal(f.get(), [1.5, 2.5])
    i = gt.asarray(memoryview(np.arange(4, dtype=np.int16)))
    assert i.dtype == gt.int16


def test_asarray_copy_semantics():
    x = gt.asarray([1.0, 2.0])
    assert gt.asarray(x) is x
    assert gt.asarray(x, copy=False) is x
    assert gt.asarray(x, dtype=gt.float32) is x
    y = gt.asarray(x, copy=True)
    y[0] = 10
    assert float(x[0]) == 1.0
    z = gt.asarray(x, dtype=gt.int32)
    assert z.dtype == gt.int32
    np.testing.assert_array_equal(z.get(), [1, 2])
    with pytest.raises(ValueError):
        gt.asarray(x, dtype=gt.int32, copy=False)
    with pytest.raises(ValueError):
        gt.asarray(np.ones(2), copy=False)
    with pytest.raises(ValueError):
        gt.asarray([1], copy=False)
    v = gt.asarray(x[::-1], copy=True)  # copying a view gives a contiguous array
    np.testing.assert_array_equal(v.get(), [2.0, 1.0])
    assert v.strides == (1,)


# ---- filled arrays ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL)
def test_filled(dtype):
    dt = getattr(gt, dtype)
    for func, expected in ((gt.zeros, 0), (gt.ones, 1), (gt.empty, None)):
        x = func((2, 3), dtype=dt)
        assert x.shape == (2, 3) and x.dtype == dt
        if expected is not None:
            assert_same(x, np.asarray(np.full((2, 3), expected, dtype=dtype)))
    value = True if dtype == "bool" else (np.iinfo(dtype).max if dtype[0] in "iu" else -2.5)
    f = gt.full((5,), value, dtype=dt)
    assert_same(f, np.asarray(np.full((5,), value, dtype=dtype)))
    like = gt.asarray(np.zeros((3, 1), dtype=dtype))
    for func, expected in ((gt.zeros_like, 0), (gt.ones_like, 1)):
        out = func(like)
        assert out.dtype == dt and out.shape == (3, 1)
        assert_same(out, np.asarray(np.full((3, 1), expected, dtype=dtype)))
    assert gt.empty_like(like).shape == (3, 1)
    np.testing.assert_array_equal(gt.full_like(like, 1).get(), np.ones((3, 1), dtype=dtype))


def test_filled_defaults_and_errors():
    assert gt.zeros(3).dtype == gt.float32 and gt.zeros(3).shape == (3,)
    assert gt.zeros(()).shape == ()
    assert gt.full((2,), 7).dtype == DEFAULT_INT
    assert gt.full((2,), 7.5).dtype == gt.float32
    assert gt.full((2,), False).dtype == gt.bool
    assert gt.ones_like(gt.zeros(2, dtype=gt.int8), dtype=gt.float64).dtype == gt.float64
    np.testing.assert_array_equal(np.signbit(gt.full((2,), -0.0).get()), [True, True])
    assert np.isnan(gt.full((1,), math.nan).get()).all()
    with pytest.raises(OverflowError):
        gt.full((2,), 300, dtype=gt.int8)
    with pytest.raises(TypeError):
        gt.full((2,), 1j, dtype=gt.float32)
    with pytest.raises(ValueError):
        gt.zeros((-1, 2))
    with pytest.raises(TypeError):
        gt.zeros((2.0,))
    with pytest.raises(TypeError):
        gt.zeros(2, dtype=object)
    with pytest.raises(TypeError):
        gt.zeros_like(np.zeros(2))


# ---- ranges -----------------------------------------------------------------------------------
@given(start=st.integers(-20, 20), stop=st.none() | st.integers(-20, 20),
       step=st.integers(-5, 5).filter(lambda s: s != 0))
def test_arange_int(start, stop, step):
    x = gt.arange(start, stop, step)
    expected = np.arange(start, stop, step) if stop is not None else np.arange(start)
    if stop is None:
        x = gt.arange(start)
    assert x.dtype == DEFAULT_INT
    assert_same(x, np.asarray(expected))


def test_arange_float_and_dtype():
    np.testing.assert_allclose(gt.arange(0.0, 1.0, 0.1).get(), np.arange(0.0, 1.0, 0.1).astype(np.float32))
    assert gt.arange(0.0, 1.0, 0.1).shape == (10,)
    assert gt.arange(5, dtype=gt.uint8).dtype == gt.uint8
    assert gt.arange(5, dtype=gt.float64).dtype == gt.float64
    np.testing.assert_array_equal(gt.arange(10, 0, -3, dtype=gt.int16).get(), [10, 7, 4, 1])
    with pytest.raises(ValueError):
        gt.arange(0, 5, 0)
    with pytest.raises(TypeError):
        gt.arange(1j)


@pytest.mark.parametrize("endpoint", [True, False])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_linspace(endpoint, dtype):
    x = gt.linspace(-1.5, 7, 9, endpoint=endpoint, dtype=getattr(gt, dtype))
    np.testing.assert_allclose(x.get(), np.linspace(-1.5, 7, 9, endpoint=endpoint).astype(dtype))
    assert gt.linspace(0, 1, 0).shape == (0,)
    with pytest.raises(ValueError):
        gt.linspace(0, 1, -1)
    with pytest.raises(TypeError):
        gt.linspace(0, 1, 3, dtype=gt.int32)


@pytest.mark.parametrize("n, m, k", [(3, None, 0), (3, 5, 1), (4, 2, -1), (3, 3, 5), (0, 2, 0), (5, 4, -4)])
@pytest.mark.parametrize("dtype", ["bool", "int8", "float32"])
def test_eye(n, m, k, dtype):
    x = gt.eye(n, m, k=k, dtype=getattr(gt, dtype))
    assert_same(x, np.asarray(np.eye(n, m, k=k, dtype=dtype)))


@pytest.mark.parametrize("indexing", ["xy", "ij"])
def test_meshgrid(indexing):
    a, b, c = np.arange(3.0, dtype=np.float32), np.arange(4.0, dtype=np.float32)[::-1], np.ones(2, np.float32)
    got = gt.meshgrid(gt.asarray(a), gt.asarray(b)[::-1][::-1], gt.asarray(c), indexing=indexing)
    expected = np.meshgrid(a, b, c, indexing=indexing)
    assert len(got) == 3
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g.get(), e)
    assert gt.meshgrid() == []
    with pytest.raises(ValueError):
        gt.meshgrid(gt.asarray(a), indexing="xx")
    with pytest.raises(ValueError):
        gt.meshgrid(gt.zeros((2, 2)))
    with pytest.raises(TypeError):
        gt.meshgrid(gt.asarray(a), gt.asarray([1, 2]))


@given(shape=hnp.array_shapes(min_dims=2, max_dims=4, min_side=0, max_side=5), k=st.integers(-6, 6),
       dtype=st.sampled_from(["int8", "int64", "float32", "bool", "uint16"]))
def test_tril_triu(shape, k, dtype):
    h = (np.arange(np.prod(shape)).reshape(shape) % 7 + 1).astype(dtype)
    x = gt.asarray(h)
    assert_same(gt.tril(x, k=k), np.asarray(np.tril(h, k=k)))
    assert_same(gt.triu(x, k=k), np.asarray(np.triu(h, k=k)))
    if shape[-1]:
        assert_same(gt.triu(x[..., ::-1], k=k), np.asarray(np.triu(h[..., ::-1], k=k)))


@pytest.mark.parametrize("dtype", ALL + ["complex64", "complex128"])
@pytest.mark.parametrize("shape", [(1, 6), (6, 1), (0, 4), (4, 0), (2, 0, 3), (3, 4, 5), (5, 3)])
def test_tril_triu_shapes_dtypes(shape, dtype):
    h = (np.arange(np.prod(shape)).reshape(shape) % 5 + 1).astype(dtype)
    if dtype.startswith("complex"):
        h = h + 1j * h[..., ::-1]
    x = gt.asarray(h)
    for k in (-7, -1, 0, 1, 2, 7, 2**40, -2**40):
        assert_same(gt.tril(x, k=k), np.asarray(np.tril(h, k=k)))
        assert_same(gt.triu(x, k=k), np.asarray(np.triu(h, k=k)))


def test_tril_triu_views():
    h = np.arange(2 * 7 * 9, dtype=np.float32).reshape(2, 7, 9) + 1
    x = gt.asarray(h)
    views = [(x.mT, h.transpose(0, 2, 1)), (x[:, ::2, 1::3], h[:, ::2, 1::3]),
             (x[::-1, ::-1, 2:], h[::-1, ::-1, 2:]), (x[1], h[1])]
    for v, e in views:
        for k in (-2, 0, 3):
            assert_same(gt.tril(v, k=k), np.tril(e, k=k))
            assert_same(gt.triu(v, k=k), np.triu(e, k=k))


def test_tril_triu_upload_nothing_quadratic(monkeypatch):
    """The mask is built on the device: no host data proportional to n*n travels, no submit."""
    n = 512
    x = gt.ones((n, n), dtype=gt.float32)
    gt.tril(x), gt.triu(x, k=3)  # warm pipelines and plans
    gt.synchronize()
    be = get_backend()
    ctx = be.context
    sent = []
    real_htod, real_write = be.copy_htod, ctx.write
    monkeypatch.setattr(be, "copy_htod", lambda ptr, data: (sent.append(memoryview(data).nbytes),
                                                            real_htod(ptr, data))[1])
    monkeypatch.setattr(ctx, "write", lambda buf, off, data: (sent.append(memoryview(data).nbytes),
                                                              real_write(buf, off, data))[1])
    submits = ctx.stats["submits"]
    lo, up = gt.tril(x, k=-1), gt.triu(x, k=2)
    assert ctx.stats["submits"] == submits
    assert sum(sent) < n * 8
    monkeypatch.undo()
    assert_same(lo, np.tril(np.ones((n, n), np.float32), k=-1))
    assert_same(up, np.triu(np.ones((n, n), np.float32), k=2))


def test_tril_errors():
    with pytest.raises(ValueError):
        gt.tril(gt.zeros((3,)))
    with pytest.raises(TypeError):
        gt.triu(np.zeros((2, 2)))


def test_from_dlpack_and_default_device():
    h = np.arange(6, dtype=np.int16)
    x = gt.from_dlpack(h)
    assert x.dtype == gt.int16
    assert_same(x, np.asarray(h))
    with pytest.raises(ValueError):
        gt.from_dlpack(h, device="cpu")
    with pytest.raises(TypeError):
        gt.from_dlpack([1, 2])
    assert gt.zeros(2, device=gt.Device()).device == gt.Device()


# ---- audit additions: copy= semantics, what DLPack copies ----------------------------------------
def test_asarray_copy_semantics_in_full():
    h = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = gt.asarray(h)
    h[0, 0] = 100  # host data was copied at the call
    assert float(x[0, 0]) == 0.0
    view = x[:, ::-1]
    for copy in (None, False):
        assert gt.asarray(view, copy=copy) is view  # views are returned as they are
        assert gt.asarray(view, dtype=gt.float32, copy=copy) is view
    c = gt.asarray(view, copy=True)
    assert c is not view and c._storage is not x._storage and c.strides == (3, 1)
    c[0, 0] = -1
    assert float(view[0, 0]) == 2.0
    cast = gt.asarray(view, dtype=gt.int16)
    assert cast.dtype == gt.int16 and cast._storage is not x._storage
    assert_same(cast, np.arange(6, dtype=np.int16).reshape(2, 3)[:, ::-1])
    cast_copy = gt.asarray(x, dtype=gt.float64, copy=True)
    assert cast_copy.dtype == gt.float64
    for host_like in (h, [1.0, 2.0], 3.0, b"ab", np.float32(1)):
        with pytest.raises(ValueError):
            gt.asarray(host_like, copy=False)
        y = gt.asarray(host_like, copy=True)
        assert isinstance(y, gt.GpuArray)
    with pytest.raises(ValueError):
        gt.asarray(x, dtype=gt.int8, copy=False)
    np.testing.assert_array_equal(gt.asarray(h, dtype=gt.float16).get(), h.astype(np.float16))
    assert gt.asarray(np.zeros(2, np.int8), dtype=gt.float64).dtype == gt.float64


def test_from_dlpack_what_is_copied():
    import array_api_strict as xps

    h = np.arange(4, dtype=np.int32)
    x = gt.from_dlpack(h)
    h[0] = 99  # host producers are copied to the GPU at the call
    np.testing.assert_array_equal(x.get(), [0, 1, 2, 3])
    s = gt.from_dlpack(xps.asarray([1.0, 2.0], dtype=xps.float32))  # another library's CPU array
    assert s.dtype == gt.float32
    np.testing.assert_array_equal(s.get(), [1.0, 2.0])
    assert gt.asarray(xps.asarray([1.0, 2.0]), dtype=gt.float32).dtype == gt.float32
    assert gt.from_dlpack(x) is x and gt.from_dlpack(x, copy=False) is x
    y = gt.from_dlpack(x, copy=True)
    y[0] = 7
    assert int(x[0]) == 0
    with pytest.raises(BufferError):
        gt.from_dlpack(h, copy=False)

    class CudaProducer:  # a producer on another device: refused, never read
        def __dlpack__(self, **kwargs):
            raise AssertionError("must not be called")

        def __dlpack_device__(self):
            return (2, 0)

    with pytest.raises(BufferError):
        gt.from_dlpack(CudaProducer())
    # exporting: a host copy, so the consumer does not alias device memory
    out = np.from_dlpack(x)
    out_copy = out.copy()
    x[1] = 50
    np.testing.assert_array_equal(out, out_copy)
    assert x.__dlpack_device__() == (1, 0)
    with pytest.raises(BufferError):
        x.__dlpack__(dl_device=(2, 0))


# ---- audit additions: property tests of the filled/range creation functions -----------------------
def _special_fill(dtype: str):
    if dtype == "bool":
        return st.booleans()
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return st.sampled_from([int(info.min), int(info.max), 0, 1]) | st.integers(int(info.min), int(info.max))
    return st.sampled_from([0.0, -0.0, math.inf, -math.inf, math.nan, 1e-30, -2.5]) | st.floats(-1e4, 1e4)


@given(st.data())
def test_filled_property(data):
    dtype = data.draw(st.sampled_from(ALL))
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
    value = data.draw(_special_fill(dtype))
    dt = getattr(gt, dtype)
    with np.errstate(over="ignore"):
        expected = np.full(shape, value, dtype=dtype)
    got = gt.full(shape, value, dtype=dt).get()
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    if expected.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))
    base = gt.asarray(np.zeros(tuple(2 * n for n in shape), dtype=dtype))
    like = base[tuple(slice(None, None, -2) for _ in shape)]  # a negative-step view
    assert like.shape == shape
    for func, ref in ((gt.zeros_like, np.zeros), (gt.ones_like, np.ones)):
        out = func(like)
        assert out.dtype == dt and out.shape == shape
        np.testing.assert_array_equal(out.get(), ref(shape, dtype=dtype))
    assert_same(gt.full_like(like, value), np.asarray(expected))
    assert gt.empty_like(like).shape == shape and gt.empty(shape, dtype=dt).dtype == dt
    np.testing.assert_array_equal(gt.zeros(shape, dtype=dt).get(), np.zeros(shape, dtype))
    np.testing.assert_array_equal(gt.ones(shape, dtype=dt).get(), np.ones(shape, dtype))


@given(n=st.integers(0, 7), m=st.none() | st.integers(0, 7), k=st.integers(-8, 8),
       dtype=st.sampled_from(ALL))
def test_eye_property(n, m, k, dtype):
    assert_same(gt.eye(n, m, k=k, dtype=getattr(gt, dtype)), np.asarray(np.eye(n, m, k=k, dtype=dtype)))


@given(start=st.floats(-1e3, 1e3), stop=st.floats(-1e3, 1e3), num=st.integers(0, 40),
       endpoint=st.booleans(), dtype=st.sampled_from(["float16", "float32", "float64"]))
def test_linspace_property(start, stop, num, endpoint, dtype):
    got = gt.linspace(start, stop, num, endpoint=endpoint, dtype=getattr(gt, dtype)).get()
    expected = np.linspace(start, stop, num, endpoint=endpoint).astype(dtype)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


@given(start=st.floats(-100, 100), length=st.integers(0, 30), step=st.floats(0.01, 10) | st.floats(-10, -0.01),
       dtype=st.sampled_from([None, "float32", "float64"]))
def test_arange_float_property(start, length, step, dtype):
    stop = start + length * step
    got = gt.arange(start, stop, step, dtype=None if dtype is None else getattr(gt, dtype)).get()
    expected = np.arange(start, stop, step, dtype=np.float64).astype(dtype or "float32")
    assert got.shape == expected.shape
    assert_close(got, expected, expected.dtype, "arith")


@given(sizes=st.lists(st.integers(0, 4), min_size=0, max_size=4), indexing=st.sampled_from(["xy", "ij"]),
       dtype=st.sampled_from(["int8", "float32", "bool", "uint64"]))
def test_meshgrid_property(sizes, indexing, dtype):
    hosts = [(np.arange(n) % 3).astype(dtype) for n in sizes]
    arrays = [gt.asarray(np.ascontiguousarray(h[::-1]))[::-1] for h in hosts]  # negative-step views
    got = gt.meshgrid(*arrays, indexing=indexing)
    expected = np.meshgrid(*hosts, indexing=indexing)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dtype.name == dtype  # (int64/uint64 data stays 64-bit: emulated without shader-int64)
        np.testing.assert_array_equal(g.get(), e)
