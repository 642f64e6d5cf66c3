"""NumPy's protocols (``__array_ufunc__``, ``__array_function__``), NumPy names and the
ndarray-style methods: results stay on the device and match NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import gputensor as gt

from _compare import assert_same, device_dtype
from _compare import tol


def assert_close(got: gt.GpuArray, want: np.ndarray, rtol: float = tol("float32", "elementwise_abs")["rtol"],
                 atol: float = tol("float32", "elementwise_abs")["atol"]) -> None:
    """``got`` is a gputensor array of ``want``'s shape and dtype with close values (NumPy's
    default integer, int64, is the device's: int32 without ``shader-int64``; the inputs here are
    float32, so an int64 result of NumPy's is an index result)."""
    want = np.asarray(want)
    assert isinstance(got, gt.GpuArray), type(got)
    dtype = device_dtype(want.dtype)
    assert got.shape == want.shape and got.dtype == dtype, (got.shape, got.dtype, want.shape, dtype)
    np.testing.assert_allclose(gt.asnumpy(got), want, rtol=rtol, atol=atol)

H = (np.arange(24, dtype=np.float32).reshape(4, 6) - 7.5) / 3


@pytest.fixture
def x() -> gt.GpuArray:
    return gt.asarray(H)


UFUNC_CALLS = [
    lambda m, a: m.exp(a),
    lambda m, a: m.add(a, 1),
    lambda m, a: m.multiply(a, a),
    lambda m, a: m.absolute(a),
    lambda m, a: m.power(m.abs(a), 2),
    lambda m, a: m.arctan2(a, 2.0),
    lambda m, a: m.maximum(a, 0.5),
    lambda m, a: m.float32(2) * a,
    lambda m, a: m.add.reduce(a),
    lambda m, a: m.add.reduce(a, axis=1, keepdims=True),
    lambda m, a: m.maximum.reduce(a, axis=None),
    lambda m, a: m.add.accumulate(a, axis=1),
    lambda m, a: m.matmul(a, a.T),
    lambda m, a: m.isnan(a),
    lambda m, a: m.rint(a),
]

FUNCTION_CALLS = [
    lambda m, a: m.sum(a),
    lambda m, a: m.sum(a, 0),
    lambda m, a: m.sum(a, axis=(0, 1), keepdims=True),
    pytest.param(lambda m, a: m.sum(a, axis=1, dtype="float64"), marks=pytest.mark.requires("shader-f64")),
    lambda m, a: m.mean(a, axis=0),
    lambda m, a: m.std(a, axis=1, ddof=1),
    lambda m, a: m.var(a),
    lambda m, a: m.max(a, axis=1),
    lambda m, a: m.amin(a, axis=0, keepdims=True),
    lambda m, a: m.prod(a[:2, :3]),
    lambda m, a: m.argmax(a, axis=1),
    lambda m, a: m.cumsum(a),
    lambda m, a: m.cumsum(a, axis=1),
    lambda m, a: m.concatenate([a, a], axis=1),
    lambda m, a: m.stack([a, a]),
    lambda m, a: m.where(a > 0, a, 0.0),
    lambda m, a: m.where(a > 0)[1],
    lambda m, a: m.clip(a, -1, 1),
    lambda m, a: m.transpose(a),
    lambda m, a: m.reshape(a, (6, 4)),
    lambda m, a: m.squeeze(a[:1]),
    lambda m, a: m.round(a, 1),
    lambda m, a: m.sort(a, axis=0),
    lambda m, a: m.dot(a, a.T),
    lambda m, a: m.tensordot(a, a, axes=([1], [1])),
    lambda m, a: m.unique(m.round(a)),
    lambda m, a: m.unique(m.round(a), return_counts=True)[1],
    lambda m, a: m.unique(m.round(a), return_inverse=True)[1],
    lambda m, a: m.isclose(a, a + 1e-9),
    lambda m, a: m.moveaxis(a, 0, 1),
    lambda m, a: m.tile(a[0], (2,)),
    lambda m, a: m.percentile(a, 30, axis=1),
    lambda m, a: m.quantile(a, 0.75),
    lambda m, a: m.median(a, axis=0),
    lambda m, a: m.nansum(m.where(a > 1, m.nan, a), axis=0),
    lambda m, a: m.nanmean(m.where(a > 1, m.nan, a), axis=1),
    lambda m, a: m.nanmax(m.where(a > 1, m.nan, a)),
    lambda m, a: m.nanstd(m.where(a > 1, m.nan, a), axis=0),
    lambda m, a: m.zeros_like(a, shape=(2, 3)),
    lambda m, a: m.full_like(a, 7.0),
]


@pytest.mark.filterwarnings("ignore:Mean of empty slice")  # (NumPy's, for an all-NaN row)
@pytest.mark.parametrize("call", UFUNC_CALLS + FUNCTION_CALLS)
def test_numpy_calls_stay_on_the_device(call, x):
    got = call(np, x)
    want = call(np, H)
    assert isinstance(got, gt.GpuArray), type(got)
    assert_close(got, np.asarray(want), **tol("float32", "accumulated_abs"))


def test_out_and_dtype_arguments(x):
    out = gt.zeros((4, 6))
    assert np.add(x, 1, out=out) is out
    assert_close(out, H + 1)
    red = gt.zeros((6,))
    assert np.sum(x, axis=0, out=red) is red
    assert_close(red, H.sum(axis=0), **tol("float32", "accumulated_fine"))
    assert np.multiply(x, 2, dtype="float16").dtype == gt.float16
    with pytest.raises(TypeError):
        np.add(x, 1, out=np.zeros((4, 6), np.float32))  # a host out=: no silent copy
    with pytest.raises(TypeError, match="where"):
        np.sum(x, where=H > 0)


def test_repeated_numpy_calls_and_methods(x):
    """A call structure's translation onto the namespace is kept: repeated calls with other
    values match NumPy, and an argument the namespace lacks raises on every call."""
    for k in range(3):
        assert_close(np.sum(x, axis=k % 2), H.sum(axis=k % 2), **tol("float32", "accumulated_fine"))
        assert_close(x.sum(axis=1, keepdims=bool(k % 2)), H.sum(axis=1, keepdims=bool(k % 2)),
                     **tol("float32", "accumulated_fine"))
        assert_close(x.std(ddof=k), H.std(ddof=k), **tol("float32", "accumulated_abs"))
        assert_close(np.clip(x, 0.1 * k, None), np.clip(H, np.float32(0.1 * k), None))
        assert_close(np.sum(x, axis=0, dtype=None), H.sum(axis=0), **tol("float32", "accumulated_fine"))
        with pytest.raises(TypeError, match="where"):
            x.sum(axis=0, where=H > 0)
        with pytest.raises(TypeError):
            np.sum(x, 0, None, None, False, 0, True, 1)  # more arguments than np.sum takes


def test_missing_functions_and_host_operands_raise(x):
    for call in (lambda: np.vstack([x, x]), lambda: np.gradient(x)):
        with pytest.raises(TypeError, match="numpy"):
            call()
    spectrum = np.fft.fft(x)  # gputensor.fft's (real input transformed as complex64)
    assert isinstance(spectrum, gt.GpuArray) and spectrum.dtype == gt.complex64
    np.testing.assert_allclose(gt.asnumpy(spectrum), np.fft.fft(H), rtol=tol("complex64", "fft")["rtol"], atol=tol("complex64", "fft")["atol"] * np.abs(H).sum())
    with pytest.raises(TypeError):
        np.add(H, x)  # mixing host and device memory is explicit
    with pytest.raises(TypeError):
        np.concatenate([H, x])
    if not hasattr(getattr(gt, "linalg", None), "vector_norm"):  # (linalg is being built)
        with pytest.raises(TypeError, match="norm"):
            np.linalg.norm(x)
    else:
        assert_close(np.linalg.norm(x), np.asarray(np.linalg.norm(H)), **tol("float32", "accumulated_fine"))
    if hasattr(getattr(gt, "linalg", None), "det"):
        sq = gt.asarray(np.eye(3, dtype=np.float32) * 2)
        assert isinstance(np.linalg.det(sq), gt.GpuArray) and float(np.linalg.det(sq)) == 8.0
    host = np.asarray(x)  # the explicit way to the host
    assert isinstance(host, np.ndarray) and np.array_equal(host, H)
    assert np.allclose(x, x)  # a Python bool


@pytest.mark.requires("shader-f64")
def test_numpy_float64_spellings(x):
    assert np.multiply(x, 2, dtype="float64").dtype == gt.float64
    for spelled in (np.float64, np.dtype("f8"), "f8", "<f8", "float64", float):
        assert gt.zeros(2, dtype=spelled).dtype == gt.float64
        assert x.astype(spelled).dtype == gt.float64
    assert gt.sum(x, dtype=np.float64).dtype == gt.float64
    assert gt.result_type(x, np.float64) == gt.float64


def test_numpy_dtype_spellings(x):
    assert np.dtype(x.dtype) == np.float32 and x.dtype == np.float32 and x.dtype == "float32"
    for spelled in (np.float16, np.dtype("f2"), "f2", "<f2", "float16"):
        assert gt.zeros(2, dtype=spelled).dtype == gt.float16
        assert x.astype(spelled).dtype == gt.float16
    assert gt.ones(2, dtype=int).dtype == gt.int64 and gt.ones(2, dtype=bool).dtype == gt.bool
    assert gt.sum(x, dtype=np.int64).dtype == gt.int64
    assert gt.result_type(x, np.float16) == gt.float32
    assert gt.can_cast("int8", np.int16) and gt.isdtype(np.int8, "integral")
    assert gt.finfo(np.float32).eps == np.finfo(np.float32).eps and gt.iinfo("u1").max == 255
    assert np.issubdtype(x.dtype, np.floating) and np.zeros(2, dtype=x.dtype).dtype == np.float32
    assert x.dtype.type is np.float32 and x.dtype.char == "f"
    with pytest.raises(TypeError):
        gt.zeros(2, dtype="no such dtype")


METHOD_CALLS = [
    lambda a: a.sum(axis=0), lambda a: a.mean(1), lambda a: a.max(), lambda a: a.min(axis=0),
    lambda a: a[:2, :2].prod(), lambda a: a.std(ddof=1), lambda a: a.var(axis=0),
    lambda a: a.argmax(), lambda a: a.argmin(axis=1), lambda a: a.cumsum(),
    lambda a: a.cumsum(axis=0), lambda a: (a > 0).all(axis=0), lambda a: (a > 0).any(),
    lambda a: a.ravel(), lambda a: a.flatten(), lambda a: a[:1].squeeze(),
    lambda a: a.transpose(), lambda a: a.transpose(1, 0), lambda a: a.transpose((1, 0)),
    lambda a: a.swapaxes(0, 1), lambda a: a.clip(-1, 1), lambda a: a.round(2),
    lambda a: a.conj(), lambda a: a.dot(a.T), lambda a: a.reshape(3, 8),
    lambda a: a.reshape((2, -1)), lambda a: a.astype("int32"), lambda a: a.astype(np.float16),
    lambda a: a.copy(), lambda a: a.repeat(2, axis=0), lambda a: a.argsort(axis=1),
    lambda a: a.real, lambda a: a.imag,
]


@pytest.mark.parametrize("call", METHOD_CALLS)
def test_methods_match_numpy(call, x):
    got = call(x)
    assert isinstance(got, gt.GpuArray)
    assert_close(got, np.asarray(call(H.copy())), **tol("float16", "float16_cast"))


def test_scalar_and_host_methods(x):
    assert x.tolist() == H.tolist() and x.item(7) == H.item(7) and x.item(1, 2) == H.item(1, 2)
    assert x[0, 0].item() == H[0, 0].item()
    assert format(x[1, 2], ".3f") == format(H[1, 2], ".3f") and f"{x[0, 0]:+.1e}" == f"{H[0, 0]:+.1e}"
    with pytest.raises(TypeError):
        format(x, ".3f")
    assert x.nbytes == H.nbytes and x.itemsize == 4 and len(x) == 4
    rows = list(x)
    assert len(rows) == 4 and all(isinstance(r, gt.GpuArray) for r in rows)
    assert_same(rows[2], H[2])
    with pytest.raises(TypeError, match="0-d"):
        iter(x[0, 0])
    y = x.copy()
    y.fill(3.0)
    assert_same(y, np.full_like(H, 3.0))
    y.sort(axis=0) if False else None
    z = gt.asarray(np.array([3, 1, 2], np.int32))
    assert z.sort() is None
    assert_same(z, np.array([1, 2, 3], np.int32))
    assert isinstance(x.get(), np.ndarray)


def test_numpy_names_at_module_level(x):
    assert_close(gt.absolute(-x), np.abs(H))
    assert_close(gt.cumsum(x), np.cumsum(H), **tol("float32", "accumulated_abs"))
    assert_close(gt.concatenate([x, x]), np.concatenate([H, H]))
    assert_close(gt.transpose(x), H.T)
    assert_close(gt.power(gt.abs(x), 2), np.abs(H) ** 2, **tol("float32", "elementwise_abs"))
    assert_close(gt.amax(x, axis=0), H.max(axis=0))
    assert gt.ndarray is gt.GpuArray


@pytest.mark.requires("shader-f64")
@pytest.mark.parametrize("left,right", [(None, None), (-9.0, 9.0)])
def test_interp_matches_numpy_on_the_device(left, right):
    """np.interp on gputensor arrays runs gt.interp: inside, at the sample points, outside
    (left/right or the end values), NaN; one sample point."""
    xp = np.array([0.0, 1.0, 2.5, 4.0])
    fp = np.array([1.0, 3.0, -2.0, 0.5])
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 2.5, 3.9, 4.0, 5.0, np.nan])
    got = np.interp(gt.asarray(x), gt.asarray(xp), gt.asarray(fp), left=left, right=right)
    assert isinstance(got, gt.GpuArray)
    np.testing.assert_allclose(np.asarray(got), np.interp(x, xp, fp, left=left, right=right),
                               **tol("float64", "interp"))
    one = gt.interp(gt.asarray(x[:4]), gt.asarray([0.5]), gt.asarray([7.0]))
    np.testing.assert_array_equal(np.asarray(one), np.interp(x[:4], [0.5], [7.0]))
    with pytest.raises(ValueError):
        gt.interp(gt.asarray(x), gt.asarray(xp), gt.asarray(fp[:3]))
    with pytest.raises(TypeError):
        gt.interp(gt.asarray(x), gt.asarray(xp), gt.asarray(fp), period=2.0)
