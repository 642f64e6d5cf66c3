"""Complex reductions, scans and products against NumPy: sum, prod, mean, cumulative_sum,
cumulative_prod, matmul, tensordot, vecdot (conjugating x1), the unique family; the functions the spec keeps to
real dtypes (max, min, argmax, argmin, sort, argsort, var, std) raise TypeError for complex."""

from __future__ import annotations

import numpy as np
import pytest

import gputensor as gt

from _compare import RTOL, assert_same

#: complex128 is pairs of f64: it needs the adapter feature shader-f64
COMPLEX = ["complex64", pytest.param("complex128", marks=pytest.mark.requires("shader-f64"))]
#: relative tolerance of complex results summed in another order than NumPy's (their parts')
CRTOL = {"complex64": RTOL["float32"], "complex128": RTOL["float64"]}


def _values(shape: tuple[int, ...], dtype: str, seed: int = 0, center: float = 0.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return (center + z * (0.3 if center else 1.0)).astype(dtype)


def _close(got: gt.GpuArray, expected: np.ndarray, scale: np.ndarray | float | None = None) -> None:
    """Within the summation tolerance of the dtype, an absolute term scaled by ``scale``."""
    name = np.asarray(expected).dtype.name
    rtol = CRTOL[name]
    assert_same(got, expected, "summation", rtol=rtol, atol=0.0 if scale is None else rtol * np.asarray(scale))


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2), -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_prod_mean(dtype, axis, keepdims):
    z = _values((3, 40, 5), dtype)
    x = gt.asarray(z)
    mag = np.sum(np.abs(z), axis=axis, keepdims=keepdims)
    _close(gt.sum(x, axis=axis, keepdims=keepdims), np.sum(z, axis=axis, keepdims=keepdims), mag)
    _close(gt.mean(x, axis=axis, keepdims=keepdims), np.mean(z, axis=axis, keepdims=keepdims),
           mag / (z.size / np.asarray(mag).size))
    p = _values((3, 40, 5), dtype, 1, center=1.0)  # factors near 1: no overflow
    expected = np.prod(p, axis=axis, keepdims=keepdims)
    _close(gt.prod(gt.asarray(p), axis=axis, keepdims=keepdims), expected, np.abs(expected) * 40)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_reductions_of_views_and_empties(dtype):
    z = _values((6, 9), dtype)
    x = gt.asarray(z)
    for view, ref in ((x[::-1, ::2], z[::-1, ::2]), (x.mT, z.T), (x[1:, 3:], z[1:, 3:])):
        _close(gt.sum(view, axis=0), np.sum(ref, axis=0), np.sum(np.abs(ref), axis=0))
        _close(gt.sum(view, axis=1), np.sum(ref, axis=1), np.sum(np.abs(ref), axis=1))
    empty = gt.zeros((0, 3), dtype=getattr(gt, dtype))
    assert_same(gt.sum(empty, axis=0), np.zeros(3, dtype))
    assert_same(gt.prod(empty, axis=0), np.ones(3, dtype))
    m = gt.mean(empty, axis=0).get()
    assert m.dtype == np.dtype(dtype) and np.isnan(m.real).all() and np.isnan(m.imag).all()


@pytest.mark.parametrize("dtype", COMPLEX)
def test_sum_dtype_argument_and_fused_prologue(dtype):
    real = "float32" if dtype == "complex64" else "float64"
    r = np.random.default_rng(2).standard_normal((4, 33)).astype(real)
    _close(gt.sum(gt.asarray(r), axis=1, dtype=getattr(gt, dtype)), np.sum(r, axis=1).astype(dtype),
           np.sum(np.abs(r), axis=1))
    a, b = _values((4, 33), dtype, 3), _values((4, 33), dtype, 4)
    ga, gb = gt.asarray(a), gt.asarray(b)
    _close(gt.sum(ga * gb, axis=1), np.sum(a * b, axis=1), np.sum(np.abs(a * b), axis=1))
    _close(gt.sum(ga * gb), np.sum(a * b), np.sum(np.abs(a * b)))


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("include_initial", [False, True])
def test_cumulative_sum_and_prod(dtype, axis, include_initial):
    z = _values((5, 37), dtype, 5)
    p = _values((5, 37), dtype, 6, center=1.0)
    for src, func, ref, first in ((z, gt.cumulative_sum, np.cumsum, 0), (p, gt.cumulative_prod, np.cumprod, 1)):
        view, ref_view = gt.asarray(src)[::-1, ::-1], src[::-1, ::-1]
        expected = ref(ref_view, axis=axis)
        if include_initial:
            shape = list(expected.shape)
            shape[axis] = 1
            expected = np.concatenate([np.full(shape, first, dtype), expected], axis=axis)
        got = func(view, axis=axis, include_initial=include_initial)
        bound = ref(np.abs(ref_view), axis=axis)
        if include_initial:
            bound = np.concatenate([np.ones(shape), bound], axis=axis)
        _close(got, expected, bound * (1 if func is gt.cumulative_sum else 37))


def test_cumulative_with_complex_dtype_of_real_input():
    x = np.random.default_rng(7).standard_normal(20).astype(np.float32)
    _close(gt.cumulative_sum(gt.asarray(x), dtype=gt.complex64), np.cumsum(x).astype(np.complex64),
           np.cumsum(np.abs(x)))
    _close(gt.cumulative_prod(gt.asarray(x), dtype=gt.complex64), np.cumprod(x).astype(np.complex64),
           np.cumprod(np.abs(x)))


def _matmul_cases(dtype: str):
    a, b = _values((2, 1, 5, 6), dtype, 8), _values((3, 6, 4), dtype, 9)
    ga, gb = gt.asarray(a), gt.asarray(b)
    yield ga, gb, a, b  # broadcast batch dims
    at = np.ascontiguousarray(a.swapaxes(-1, -2))
    yield gt.asarray(at).mT, gb, a, b  # a column-major (last dim strided)
    yield ga, gt.asarray(b[:, ::-1, ::-1]), a, b[:, ::-1, ::-1]  # negative steps
    r = np.random.default_rng(10).standard_normal((6, 4)).astype("float32")
    yield ga, gt.asarray(r), a, r  # real @ complex promotes
    yield gt.asarray(a[0, 0, 0]), gb, a[0, 0, 0], b  # 1-D @ N-D
    yield ga, gt.asarray(b[0, :, 0]), a, b[0, :, 0]  # N-D @ 1-D


@pytest.mark.parametrize("dtype", COMPLEX)
def test_matmul(dtype):
    for ga, gb, a, b in _matmul_cases(dtype):
        expected = np.matmul(a, b)
        _close(ga @ gb, expected, np.matmul(np.abs(a), np.abs(b)))
    z = gt.matmul(gt.zeros((2, 0), dtype=getattr(gt, dtype)), gt.zeros((0, 3), dtype=getattr(gt, dtype)))
    assert_same(z, np.zeros((2, 3), dtype))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_tensordot_and_vecdot(dtype):
    a, b = _values((3, 4, 5), dtype, 11), _values((4, 5, 2), dtype, 12)
    expected = np.tensordot(a, b, axes=2)
    _close(gt.tensordot(gt.asarray(a), gt.asarray(b), axes=2), expected,
           np.tensordot(np.abs(a), np.abs(b), axes=2))
    u, v = _values((3, 7), dtype, 13), _values((7,), dtype, 14)
    expected = np.sum(np.conj(u) * v, axis=-1)  # x1 conjugated
    _close(gt.vecdot(gt.asarray(u), gt.asarray(v)), expected, np.sum(np.abs(u) * np.abs(v), axis=-1))
    _close(gt.vecdot(gt.asarray(u.T), gt.asarray(u.T), axis=0), np.sum(np.abs(u) ** 2, axis=1).astype(dtype),
           np.sum(np.abs(u) ** 2, axis=1))


@pytest.mark.parametrize("name", ["max", "min", "argmax", "argmin", "sort", "argsort", "var", "std"])
def test_real_only_functions_reject_complex(name):
    x = gt.asarray(np.array([1 + 2j, 3 - 1j], dtype=np.complex64))
    with pytest.raises(TypeError):
        getattr(gt, name)(x)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_unique_of_complex(dtype):
    nan = float("nan")
    z = np.array([[1 + 2j, 0j, -0j, 1 + 2j, 3 - 1j], [nan + 0j, 3 - 1j, 1 + 1j, complex(nan, nan), 1 + 2j]],
                 dtype=dtype)
    values, index, inverse, counts = np.unique(z, return_index=True, return_inverse=True, return_counts=True,
                                               equal_nan=False)
    r = gt.unique_all(gt.asarray(z))
    assert_same(r.values, values)
    assert_same(r.indices, index)
    assert_same(r.inverse_indices, inverse.reshape(z.shape))
    assert_same(r.counts, counts)
    assert_same(gt.unique_values(gt.asarray(z[0, ::-1])), np.unique(z[0, ::-1]))
    c = gt.unique_counts(gt.asarray(np.zeros(0, dtype)))
    assert c.values.shape == (0,) and c.counts.shape == (0,)
