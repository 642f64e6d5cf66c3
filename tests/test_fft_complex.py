"""gputensor.fft's complex transforms (fft, ifft, fftn, ifftn) against numpy.fft.

Accuracy is the normwise relative error max |gt - np| / max |np| against NumPy's float64-or-better
result, bounded by a small multiple of eps * log2(n) (n: the length of the longest 1-D transform,
for Bluestein the padded length). Lengths are chosen to cover every radix, the four-step
decomposition (longer than a workgroup holds), Bluestein's chirp-z (prime factors above 7) and
2^20, with few distinct lengths: each new length compiles a kernel.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gputensor as gt

from _compare import numpy_gt_raises

COMPLEX = ("complex64", "complex128")
_EPS = {"complex64": float(np.finfo(np.float32).eps), "complex128": float(np.finfo(np.float64).eps)}
_NP_FN = {"fft": np.fft.fft, "ifft": np.fft.ifft, "fftn": np.fft.fftn, "ifftn": np.fft.ifftn}


def _random(shape: tuple[int, ...], dtype: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _assert_fft_close(got: gt.GpuArray, expected: np.ndarray, dtype: str, n: int) -> None:
    """``got`` has ``expected``'s shape and the dtype ``dtype``, within 4 eps log2(n) normwise;
    lengths with a prime factor above 7 count as their Bluestein length (about 4n)."""
    assert got.dtype == getattr(gt, dtype)
    actual = np.asarray(gt.asnumpy(got))
    assert actual.shape == expected.shape
    if expected.size == 0:
        return
    scale = float(np.abs(expected).max())
    err = float(np.abs(actual - expected).max()) / (scale if scale > 0 else 1.0)
    length = n if _smooth(n) else 4 * n
    bound = 4 * _EPS[dtype] * max(1.0, math.log2(max(length, 2)))
    assert err <= bound, f"relative error {err:.3g} > {bound:.3g} (n={n}, {dtype})"


def _smooth(n: int) -> bool:
    for p in (2, 3, 5, 7):
        while n % p == 0:
            n //= p
    return n == 1


# lengths per radix and path: 1, powers of 2 (radices 8, 4, 2), 3^5, 5^3, 7^2, mixed, the
# longest workgroup lengths, four-step (4096, 6000), Bluestein (11, 97, 1009)
LENGTHS_C64 = (1, 2, 12, 49, 64, 125, 243, 210, 2048, 4096, 6000, 11, 97, 1009)
LENGTHS_C128 = (1, 12, 64, 210, 1024, 4096, 13, 1009)


@pytest.mark.parametrize("n", LENGTHS_C64)
def test_lengths_complex64(n: int) -> None:
    _check_lengths(n, "complex64")


@pytest.mark.parametrize("n", LENGTHS_C128)
@pytest.mark.requires("shader-f64")
def test_lengths_complex128(n: int) -> None:
    _check_lengths(n, "complex128")


def _check_lengths(n: int, dtype: str) -> None:
    x = _random((3, n), dtype, seed=n)
    g = gt.asarray(x)
    _assert_fft_close(gt.fft.fft(g), np.fft.fft(x.astype(np.complex128)), dtype, n)
    _assert_fft_close(gt.fft.ifft(g), np.fft.ifft(x.astype(np.complex128)), dtype, n)


@pytest.mark.parametrize("n", (2 ** 20, 10007))
def test_long_complex64(n: int) -> None:
    """2^20 (a four-step decomposition of two workgroup transforms) and a prime whose
    Bluestein length needs a four-step decomposition too."""
    x = _random((n,), "complex64", seed=1)
    g = gt.asarray(x)
    _assert_fft_close(gt.fft.fft(g), np.fft.fft(x.astype(np.complex128)), "complex64", n)
    _assert_fft_close(gt.fft.ifft(g, norm="forward"),
                      np.fft.ifft(x.astype(np.complex128), norm="forward"), "complex64", n)


@pytest.mark.requires("shader-f64")
def test_long_complex128() -> None:
    n = 2 ** 16 * 3
    x = _random((n,), "complex128", seed=2)
    _assert_fft_close(gt.fft.fft(gt.asarray(x)), np.fft.fft(x), "complex128", n)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("norm", ("backward", "ortho", "forward"))
def test_norms(dtype: str, norm: str) -> None:
    x = _random((4, 12), dtype)
    g = gt.asarray(x)
    for name in ("fft", "ifft"):
        got = getattr(gt.fft, name)(g, norm=norm)
        _assert_fft_close(got, _NP_FN[name](x.astype(np.complex128), norm=norm), dtype, 12)


@pytest.mark.parametrize("axis", (0, 1, 2, -1, -3))
def test_axes_of_strided_views(axis: int) -> None:
    """Every axis of sliced, reversed and transposed views (no copy before the transform)."""
    x = _random((10, 24, 9), "complex64")
    g = gt.asarray(x)
    for view in (lambda a: a, lambda a: a[::2, ::-3, 1:], lambda a: a[1:, :, ::-1]):
        _assert_fft_close(gt.fft.fft(view(g), axis=axis), np.fft.fft(view(x), axis=axis), "complex64", 24)
    t = gt.permute_dims(g, (2, 0, 1))
    _assert_fft_close(gt.fft.ifft(t, axis=axis), np.fft.ifft(np.transpose(x, (2, 0, 1)), axis=axis),
                      "complex64", 24)


def test_high_rank_views() -> None:
    """Batch dims that do not merge (a permuted 5-D array) and a Bluestein length along them."""
    x = _random((5, 4, 3, 2, 11), "complex64")
    g = gt.permute_dims(gt.asarray(x), (3, 0, 4, 1, 2))
    xp = np.transpose(x, (3, 0, 4, 1, 2))
    for axis in (0, 2, 4):
        _assert_fft_close(gt.fft.fft(g, axis=axis), np.fft.fft(xp, axis=axis), "complex64", 11)


_SIZES = st.sampled_from((1, 2, 3, 5, 8, 12))


@settings(max_examples=12)
@given(shape=st.lists(_SIZES, min_size=1, max_size=3).map(tuple), data=st.data())
def test_random_shapes_and_axes(shape: tuple[int, ...], data: st.DataObject) -> None:
    ndim = len(shape)
    axis = data.draw(st.integers(-ndim, ndim - 1), label="axis")
    n = data.draw(st.none() | _SIZES, label="n")
    norm = data.draw(st.sampled_from(("backward", "ortho", "forward")), label="norm")
    name = data.draw(st.sampled_from(("fft", "ifft")), label="fn")
    step = data.draw(st.sampled_from((1, -1, 2)), label="step")
    x = _random(tuple(2 * s for s in shape), "complex64")
    if step == 1:
        index = tuple(slice(0, s) for s in shape)
    elif step == -1:
        index = tuple(slice(s - 1, None, -1) for s in shape)
    else:
        index = tuple(slice(0, 2 * s, 2) for s in shape)
    xv = x[index]
    got = getattr(gt.fft, name)(gt.asarray(x)[index], n=n, axis=axis, norm=norm)
    expected = _NP_FN[name](xv.astype(np.complex128), n=n, axis=axis, norm=norm)
    _assert_fft_close(got, expected, "complex64", n or shape[axis])


@pytest.mark.parametrize("dtype", COMPLEX)
def test_fftn_ifftn(dtype: str) -> None:
    x = _random((6, 5, 8), dtype)
    g = gt.asarray(x)
    ref = x.astype(np.complex128)
    _assert_fft_close(gt.fft.fftn(g), np.fft.fftn(ref), dtype, 240)
    _assert_fft_close(gt.fft.ifftn(g, axes=(0, 2)), np.fft.ifftn(ref, axes=(0, 2)), dtype, 48)
    _assert_fft_close(gt.fft.fftn(g, s=(4, -1), axes=(2, 0), norm="ortho"),
                      np.fft.fftn(ref, s=(4, 6), axes=(2, 0), norm="ortho"), dtype, 24)
    _assert_fft_close(gt.fft.ifftn(g, s=(3, 12), axes=(1, 2), norm="forward"),
                      np.fft.ifftn(ref, s=(3, 12), axes=(1, 2), norm="forward"), dtype, 36)
    # duplicate axes transform twice, as NumPy's
    _assert_fft_close(gt.fft.fftn(g, axes=(1, 1)), np.fft.fftn(ref, axes=(1, 1)), dtype, 25)
    # no axes: a copy
    _assert_fft_close(gt.fft.fftn(g, axes=()), ref, dtype, 1)


def test_fftn_s_without_axes() -> None:
    """``s`` alone names the last ``len(s)`` axes (NumPy's rule; NumPy 2 warns about it)."""
    x = _random((3, 4, 5), "complex64")
    with pytest.warns(DeprecationWarning):
        expected = np.fft.fftn(x.astype(np.complex128), s=(2, 6))
    _assert_fft_close(gt.fft.fftn(gt.asarray(x), s=(2, 6)), expected, "complex64", 12)


@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_real_input_is_promoted(dtype: str) -> None:
    x = np.random.default_rng(3).standard_normal((4, 10)).astype(dtype)
    cdtype = "complex64" if dtype == "float32" else "complex128"
    _assert_fft_close(gt.fft.fft(gt.asarray(x)), np.fft.fft(x.astype(np.float64)), cdtype, 10)
    _assert_fft_close(gt.fft.ifftn(gt.asarray(x)), np.fft.ifftn(x.astype(np.float64)), cdtype, 40)


def test_zero_lengths() -> None:
    x = gt.asarray(np.zeros((0, 4), np.complex64))
    assert gt.fft.fft(x).shape == (0, 4)
    assert gt.fft.fft(x, n=6).shape == (0, 6)
    # a zero-length axis padded to n: zeros
    y = gt.fft.fft(x, axis=0, n=3)
    np.testing.assert_array_equal(gt.asnumpy(y), np.fft.fft(np.zeros((0, 4), np.complex64), axis=0, n=3))
    assert y.dtype == gt.complex64
    numpy_gt_raises(lambda xp: xp.fft.fft(xp.zeros((0, 4), dtype=xp.complex64), axis=0))
    numpy_gt_raises(lambda xp: xp.fft.fftn(xp.zeros((2, 0), dtype=xp.complex64)))


@pytest.mark.parametrize("call", [
    lambda xp: xp.fft.fft(xp.ones(4, dtype=xp.int32)),
    lambda xp: xp.fft.ifft(xp.ones(4, dtype=xp.bool)),
    lambda xp: xp.fft.fftn(xp.ones((2, 2), dtype=xp.int32)),
])
def test_integer_and_bool_input_raise_type_error(call) -> None:
    with pytest.raises(TypeError):
        call(gt)


@pytest.mark.parametrize("call", [
    lambda xp: xp.fft.fft(xp.ones(4, dtype=xp.complex64), n=0),
    lambda xp: xp.fft.ifft(xp.ones(4, dtype=xp.complex64), n=-2),
    lambda xp: xp.fft.fft(xp.ones(4, dtype=xp.complex64), norm="both"),
    lambda xp: xp.fft.fftn(xp.ones((2, 3), dtype=xp.complex64), s=(2,), axes=(0, 1)),
    lambda xp: xp.fft.fftn(xp.ones((2, 3), dtype=xp.complex64), s=(0, 3), axes=(0, 1)),
])
def test_value_errors(call) -> None:
    numpy_gt_raises(call, ValueError)


def test_norm_must_be_a_string() -> None:
    """The spec's ``norm`` is one of three strings (NumPy also takes None)."""
    with pytest.raises(ValueError):
        gt.fft.ifftn(gt.ones((2, 3), dtype=gt.complex64), norm=None)


@pytest.mark.parametrize("call", [
    lambda xp: xp.fft.fft(xp.ones(4, dtype=xp.complex64), axis=1),
    lambda xp: xp.fft.fftn(xp.ones((2, 3), dtype=xp.complex64), axes=(0, 2)),
    lambda xp: xp.fft.ifft(xp.ones((), dtype=xp.complex64)),
])
def test_axis_errors(call) -> None:
    """Axes out of range: NumPy raises IndexError (or AxisError), gputensor AxisError (an
    IndexError and a ValueError)."""
    numpy_gt_raises(call, IndexError)


def test_results_are_new_contiguous_arrays() -> None:
    x = gt.asarray(_random((8, 6), "complex64"))
    y = gt.fft.fft(x[:, ::2], axis=0)
    assert y.shape == (8, 3)
    assert y.strides == (3, 1)
    z = gt.fft.ifft(gt.fft.fft(x))
    _assert_fft_close(z, np.asarray(gt.asnumpy(x)).astype(np.complex128), "complex64", 6)


@pytest.mark.parametrize("shape", ((4096, 8), (2 ** 16, 3)))
@pytest.mark.parametrize("split", (True, False))
def test_column_transforms(shape: tuple[int, int], split: bool) -> None:
    """Transforms along axis 0 (entries adjacent in memory): four-step decompositions with the
    entries innermost in the scratch array (``GPUTENSOR_FFT_COLUMN_SPLIT``, on by default), or
    one workgroup pass where the length fits."""
    from gputensor._backend import config

    x = _random(shape, "complex64", seed=7)
    with config.override(fft_column_split=split):
        got = gt.fft.fft(gt.asarray(x), axis=0)
        back = gt.fft.ifft(gt.asarray(x)[:, ::-1], axis=0, norm="ortho")
    _assert_fft_close(got, np.fft.fft(x.astype(np.complex128), axis=0), "complex64", shape[0])
    _assert_fft_close(back, np.fft.ifft(x[:, ::-1].astype(np.complex128), axis=0, norm="ortho"), "complex64",
                      shape[0])


def test_repeated_calls_and_errors_after_them() -> None:
    """Calls of one structure repeated (their prepared arguments reused) keep their values for
    new data and views; arguments equal to a cached call's but of a refused type still raise."""
    a, b = _random((6, 16), "complex64", seed=3), _random((6, 16), "complex64", seed=4)
    for data in (a, b, a):
        x = gt.asarray(data)
        for _ in range(2):
            _assert_fft_close(gt.fft.fft(x, n=16, norm="ortho"), np.fft.fft(data, norm="ortho"), "complex64", 16)
            _assert_fft_close(gt.fft.ifft(x[::-1], axis=0), np.fft.ifft(data[::-1], axis=0), "complex64", 6)
            _assert_fft_close(gt.fft.fftn(x, axes=[0, 1]), np.fft.fftn(data, axes=(0, 1)), "complex64", 16)
            _assert_fft_close(gt.fft.ifftn(x, s=(6, 16)), np.fft.ifftn(data, s=(6, 16), axes=(0, 1)), "complex64", 16)
    x = gt.asarray(a)
    with pytest.raises(TypeError):
        gt.fft.fft(x, n=True)
    with pytest.raises(TypeError):
        gt.fft.fft(x, axis=True)
    with pytest.raises(TypeError):
        gt.fft.fftn(x, axes=(False, True))
    with pytest.raises(ValueError):
        gt.fft.fft(x, norm="Ortho")


@pytest.mark.parametrize("dtype", COMPLEX)
def test_fftn_one_program_per_call(dtype: str) -> None:
    """A repeated n-D transform runs as one planned program (one Python call into the backend,
    its intermediates in the program's scratch): strided views, Bluestein and four-step axes,
    and high-rank views whose batch dims do not merge (the per-axis path) keep NumPy's values."""
    cases = [((6, 10, 12), None, (slice(None, None, -1), slice(1, None), slice(None))),
             ((8, 1009), (0, 1), (slice(None),)),
             ((2, 3, 4, 5, 6), (1, 3), (slice(None), slice(None), slice(None, None, 2)))]
    from gputensor._backend import get_backend

    stats = get_backend().context.stats
    for shape, axes, view in cases:
        data = _random(shape, dtype, seed=5)
        want = np.fft.fftn(data[view], axes=axes)
        x = gt.asarray(data)[view]
        for _ in range(2):
            _assert_fft_close(gt.fft.fftn(x, axes=axes), want, dtype, max(shape))
        before = stats["dispatches"]
        _assert_fft_close(gt.fft.ifftn(gt.fft.fftn(x, axes=axes), axes=axes), data[view], dtype, max(shape))
        assert stats["dispatches"] > before


# (shape, axis, dtype): rows of 256 and 4096 (radix-8 first passes), batches that leave a
# partial last workgroup, columns (entries adjacent in memory), mixed radices, a four-step
# length whose passes read and write strided operands, short rows that keep the loops
_DIRECT_CASES = (((4096,), -1, "complex64"), ((5, 256), -1, "complex64"), ((256, 6), 0, "complex64"),
                 ((3, 840), -1, "complex64"), ((2, 1 << 15), -1, "complex64"), ((4, 32), -1, "complex64"),
                 pytest.param((1024, 3), 0, "complex128", marks=pytest.mark.requires("shader-f64")),
                 pytest.param((2, 4096), 1, "complex128", marks=pytest.mark.requires("shader-f64")))


@pytest.mark.parametrize("direct", (True, False))
@pytest.mark.parametrize(("shape", "axis", "dtype"), _DIRECT_CASES)
def test_direct_io(shape: tuple[int, ...], axis: int, dtype: str, direct: bool) -> None:
    """The Stockham kernel's first pass reading the source and its last writing the
    destination (``GPUTENSOR_FFT_DIRECT_IO``, on by default) and the load and store loops
    (off) give NumPy's values, forward and inverse, on strided views too."""
    from gputensor._backend import config
    from gputensor._backend.fft_lengths import direct_io, factor

    n = shape[axis]
    with config.override(fft_direct_io=True):
        uses = direct_io(4096, factor(4096), True, True, 0, False)
    assert uses == (True, True)
    data = _random(shape, dtype, seed=11)
    flip = tuple(slice(None, None, -1) if d != axis % len(shape) else slice(None) for d in range(len(shape)))
    with config.override(fft_direct_io=direct):
        got = gt.fft.fft(gt.asarray(data), axis=axis)
        back = gt.fft.ifft(gt.asarray(data)[flip], axis=axis, norm="ortho")
    _assert_fft_close(got, np.fft.fft(data.astype(np.complex128), axis=axis), dtype, n)
    _assert_fft_close(back, np.fft.ifft(data[flip].astype(np.complex128), axis=axis, norm="ortho"), dtype, n)
