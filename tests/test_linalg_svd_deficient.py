"""The SVD and the functions built on it (svdvals, pinv, matrix_rank, matrix_norm 'nuc' / 2 / -2)
on rank-deficient matrices against NumPy: repeated, proportional and zero columns (the draws of
array-api-tests), zero matrices, 1 x 1, empty, tall, wide and stacked, real and complex.

One-sided Jacobi cancels one of two equal columns to rounding noise; the singular vectors of
such negligible singular values must still be orthonormal (completed against the others), and
the iteration must converge.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gputensor as gt

from _compare import tol

DTYPES = ("float32", "float64", "complex64", "complex128")
REAL = {"float32": "float32", "float64": "float64", "complex64": "float32", "complex128": "float64"}
#: Residuals relative to max(1, ||A||_2) (the table's eigh/svd rows).
RES = {**{n: tol(n, "spectral_residual")["rtol"] for n in ("float32", "float64")},
       **{n: tol(n, "complex_linalg_residual")["rtol"] for n in ("complex64", "complex128")}}
#: pinv's own cut-off argument (relative to the largest singular value), not a comparison tolerance.
PINV_CUTOFF = 0.01


def _eps(dtype: str) -> float:
    return float(np.finfo(REAL[dtype]).eps)


def _unitary_err(q: np.ndarray) -> float:
    k = q.shape[-1]
    if q.size == 0:
        return 0.0
    q = q.astype(np.complex128)
    return float(np.abs(np.conj(np.swapaxes(q, -1, -2)) @ q - np.eye(k)).max())


def _check(a: np.ndarray, dtype: str) -> None:
    """svd (both full_matrices), svdvals, pinv, matrix_rank and matrix_norm of ``a`` against NumPy."""
    m, n = a.shape[-2:]
    k = min(m, n)
    ref_s = np.linalg.svd(a.astype(np.complex128), compute_uv=False)
    norm = max(1.0, float(ref_s.max())) if ref_s.size else 1.0
    res = RES[dtype]
    x = gt.asarray(a)
    for full in (True, False):
        u, s, vh = (gt.asnumpy(t) for t in gt.linalg.svd(x, full_matrices=full))
        um, vn = (m, n) if full else (k, k)
        assert u.shape == a.shape[:-2] + (m, um) and vh.shape == a.shape[:-2] + (vn, n)
        assert s.shape == a.shape[:-2] + (k,)
        assert u.dtype == np.dtype(dtype) and vh.dtype == np.dtype(dtype) and s.dtype == np.dtype(REAL[dtype])
        assert _unitary_err(u) < res, _unitary_err(u)
        assert _unitary_err(np.swapaxes(vh, -1, -2)) < res, _unitary_err(np.swapaxes(vh, -1, -2))
        np.testing.assert_allclose(s, ref_s, rtol=0, atol=res * norm)
        if a.size:
            rec = (u[..., :, :k].astype(np.complex128) * s[..., None, :]) @ vh[..., :k, :]
            assert np.abs(rec - a).max() < res * norm
    np.testing.assert_allclose(gt.asnumpy(gt.linalg.svdvals(x)), ref_s, rtol=0, atol=res * norm)
    rtol = max(m, n) * _eps(dtype)
    np.testing.assert_array_equal(gt.asnumpy(gt.linalg.matrix_rank(x)),
                                  np.linalg.matrix_rank(a.astype(np.complex128), rtol=rtol))
    p = gt.asnumpy(gt.linalg.pinv(x))
    ref_p = np.linalg.pinv(a.astype(np.complex128), rtol=rtol)
    assert p.shape == ref_p.shape and p.dtype == np.dtype(dtype)
    if a.size:
        np.testing.assert_allclose(p, ref_p, rtol=0, atol=10 * res * max(1.0, float(np.abs(ref_p).max())))
        p = gt.asnumpy(gt.linalg.pinv(x, rtol=PINV_CUTOFF))
        ref_p = np.linalg.pinv(a.astype(np.complex128), rtol=PINV_CUTOFF)
        np.testing.assert_allclose(p, ref_p, rtol=0, atol=10 * res * max(1.0, float(np.abs(ref_p).max())))
    if k:
        for ord in ("nuc", 2, -2):
            np.testing.assert_allclose(gt.asnumpy(gt.linalg.matrix_norm(x, ord=ord)),
                                       np.linalg.norm(a.astype(np.complex128), ord=ord, axis=(-2, -1)),
                                       rtol=0, atol=res * norm * max(1, k))


def _with_repeats(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, sources: list[tuple[int, float]],
                  low: int = -3, high: int = 3) -> np.ndarray:
    """Small integer matrices whose column j is ``factor * column source`` for (source, factor)
    = ``sources[j]`` where source < j (else a column of its own)."""
    a = rng.integers(low, high + 1, shape).astype(np.float64)
    if dtype.startswith("complex"):
        a = a + 1j * rng.integers(low, high + 1, shape)
    for j, (src, factor) in enumerate(sources[: shape[-1]]):
        if src < j:
            a[..., :, j] = factor * a[..., :, src]
    return a.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_repeated_columns_of_the_conformance_suite(dtype: str) -> None:
    a = np.array([[1, 0, 1], [1, 1, 1], [1, 1, 1]], dtype=dtype)
    _check(a, dtype)
    _check(np.ascontiguousarray(a.T), dtype)
    _check(np.stack([a, np.zeros_like(a), np.ones_like(a), np.eye(3, dtype=dtype)]), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ((1, 1), (1, 4), (4, 1), (2, 2), (5, 3), (3, 5)))
def test_zero_and_constant_matrices(dtype: str, shape: tuple[int, int]) -> None:
    _check(np.zeros(shape, dtype=dtype), dtype)
    _check(np.full((2,) + shape, 3, dtype=dtype), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_empty(dtype: str) -> None:
    for shape in ((0, 0), (0, 3), (3, 0), (2, 0, 4), (0, 2, 2)):
        _check(np.zeros(shape, dtype=dtype), dtype)


@pytest.mark.parametrize("dtype", ("float32", "complex128"))
@pytest.mark.parametrize("shape", ((36, 20), (20, 36)))
def test_repeated_and_zero_columns_of_large_matrices(dtype: str, shape: tuple[int, int]) -> None:
    # past the workgroup-memory kernel: the per-step block kernel over device memory
    rng = np.random.default_rng(21)
    cols = min(shape)
    sources = [(j, 1.0) for j in range(cols)]
    sources[3], sources[7], sources[8], sources[cols - 1] = (0, 1.0), (2, -2.0), (1, 0.0), (0, 1.0)
    a = _with_repeats(rng, shape if shape[0] >= shape[1] else shape[::-1], dtype, sources)
    _check(a if shape[0] >= shape[1] else np.ascontiguousarray(np.swapaxes(a, -1, -2)), dtype)


@st.composite
def _deficient(draw: st.DrawFn) -> tuple[np.ndarray, str]:
    # the dtypes this adapter has (float64 and complex128 need shader-f64)
    have = gt.__array_namespace_info__().dtypes(kind=("real floating", "complex floating"))
    dtype = draw(st.sampled_from([d for d in DTYPES if d in have]))
    m = draw(st.integers(1, 7))
    n = draw(st.integers(1, 7))
    batch = draw(st.sampled_from(((), (2,), (1, 2))))
    sources = draw(st.lists(st.tuples(st.integers(0, 6), st.sampled_from((1.0, -1.0, 2.0, 0.0, 0.5))),
                            min_size=7, max_size=7))
    seed = draw(st.integers(0, 2 ** 16))
    a = _with_repeats(np.random.default_rng(seed), batch + (m, n), dtype, sources,
                      *draw(st.sampled_from(((-3, 3), (0, 1)))))
    if draw(st.booleans()):
        a = np.ascontiguousarray(np.swapaxes(a, -1, -2))  # repeated rows
    return a, dtype


@settings(max_examples=12, deadline=None)
@given(case=_deficient())
def test_rank_deficient_hypothesis(case: tuple[np.ndarray, str]) -> None:
    a, dtype = case
    _check(a, dtype)


@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_negligible_but_nonzero_column(dtype: str) -> None:
    # a column at rounding level relative to the others (not exactly dependent)
    rng = np.random.default_rng(4)
    a = rng.standard_normal((6, 4))
    a[:, 3] = a[:, 0] + 1e-3 * math.sqrt(_eps(dtype)) * _eps(dtype) * rng.standard_normal(6)
    _check(a.astype(dtype), dtype)


@pytest.mark.parametrize("dtype", ("complex64", "complex128"))
def test_columns_that_differ_by_a_phase(dtype: str) -> None:
    rng = np.random.default_rng(6)
    a = rng.standard_normal((5, 4)) + 1j * rng.standard_normal((5, 4))
    a[:, 2] = 1j * a[:, 0]
    a[:, 3] = (0.6 - 0.8j) * a[:, 1]
    _check(a.astype(dtype), dtype)
    _check(np.ascontiguousarray(a.T).astype(dtype), dtype)


def test_many_repeated_columns_of_a_large_matrix() -> None:
    rng = np.random.default_rng(8)
    a = rng.standard_normal((36, 34))
    for j in range(8, 34):
        a[:, j] = a[:, j % 8] * (1 + j % 3)
    _check(a.astype(np.float32), "float32")
