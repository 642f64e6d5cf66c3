"""gputensor.linalg on complex64 and complex128 against NumPy.

Decompositions are checked by reconstruction relative to ``||A||`` (``A V = V diag(w)``,
``U diag(S) Vh = A``) and unitarity of the vectors, their real values (eigenvalues, singular
values) against NumPy's; the other functions by value. Orders up to 24 run the
workgroup-memory Jacobi kernel, 26 and 33 the per-step kernel over device memory (complex128's
small kernel stops at 24, complex64's at 32).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gputensor as gt

from _compare import tol

CDTYPES = ("complex64", "complex128")
REAL = {"complex64": "float32", "complex128": "float64"}
#: Residuals relative to ||A||: a few hundred units of roundoff.
RES = {n: tol(n, "complex_linalg_residual")["rtol"] for n in ("complex64", "complex128")}


def _cx(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _herm(rng: np.random.Generator, shape: tuple[int, ...], n: int, dtype: str) -> np.ndarray:
    a = _cx(rng, shape + (n, n), dtype)
    return (a + np.conj(np.swapaxes(a, -1, -2))).astype(dtype)


def _ct(x: np.ndarray) -> np.ndarray:
    return np.conj(np.swapaxes(x, -1, -2))


def _unitary_err(q: np.ndarray) -> float:
    k = q.shape[-1]
    return float(np.abs(_ct(q) @ q - np.eye(k)).max()) if q.size else 0.0


def _norm(a: np.ndarray) -> float:
    return max(1.0, float(np.abs(a.astype(np.complex128)).sum(axis=-1).max())) if a.size else 1.0


def _check_eigh(a: np.ndarray, w: np.ndarray, v: np.ndarray, dtype: str) -> None:
    assert w.dtype == np.dtype(REAL[dtype]) and v.dtype == np.dtype(dtype)
    assert w.shape == a.shape[:-1] and v.shape == a.shape
    a64 = a.astype(np.complex128)
    norm = _norm(a)
    assert np.abs(a64 @ v - v * w[..., None, :]).max() / norm < RES[dtype]
    assert _unitary_err(v.astype(np.complex128)) < RES[dtype]
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a64), rtol=0, atol=RES[dtype] * norm)


def _check_svd(x: np.ndarray, u: np.ndarray, s: np.ndarray, vh: np.ndarray, dtype: str, full: bool) -> None:
    m, n = x.shape[-2:]
    k = min(m, n)
    assert s.dtype == np.dtype(REAL[dtype]) and u.dtype == np.dtype(dtype) and vh.dtype == np.dtype(dtype)
    assert u.shape == x.shape[:-2] + ((m, m) if full else (m, k))
    assert vh.shape == x.shape[:-2] + ((n, n) if full else (k, n))
    x64 = x.astype(np.complex128)
    norm = _norm(x)
    rec = (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]
    assert np.abs(rec - x64).max() / norm < RES[dtype]
    assert _unitary_err(u.astype(np.complex128)) < RES[dtype]
    assert _unitary_err(_ct(vh.astype(np.complex128))) < RES[dtype]
    np.testing.assert_allclose(s, np.linalg.svd(x64, compute_uv=False), rtol=0, atol=RES[dtype] * norm)


# ---- matmul family: the namespace's complex gemm and elementwise ops --------------------------

@pytest.mark.parametrize("dtype", CDTYPES)
def test_products_and_views(dtype: str) -> None:
    rng = np.random.default_rng(0)
    a = _cx(rng, (2, 3, 4), dtype)
    b = _cx(rng, (2, 4, 3), dtype)
    v = _cx(rng, (4,), dtype)
    w = _cx(rng, (4,), dtype)
    ga, gb, gv, gw = (gt.asarray(t) for t in (a, b, v, w))
    tol = RES[dtype]
    np.testing.assert_allclose(np.asarray(gt.linalg.matmul(ga, gb)), a @ b, rtol=tol, atol=tol)
    np.testing.assert_allclose(np.asarray(gt.linalg.tensordot(ga, gb, axes=([1, 2], [2, 1]))),
                               np.tensordot(a, b, axes=([1, 2], [2, 1])), rtol=tol, atol=tol)
    # vecdot conjugates its first argument
    np.testing.assert_allclose(np.asarray(gt.linalg.vecdot(ga, ga)), np.sum(np.conj(a) * a, axis=-1),
                               rtol=tol, atol=tol)
    np.testing.assert_array_equal(np.asarray(gt.linalg.matrix_transpose(ga)), np.swapaxes(a, -1, -2))
    np.testing.assert_allclose(np.asarray(gt.linalg.outer(gv, gw)), np.outer(v, w), rtol=tol, atol=tol)
    np.testing.assert_array_equal(np.asarray(gt.linalg.diagonal(ga, offset=1)),
                                  np.diagonal(a, offset=1, axis1=-2, axis2=-1))
    np.testing.assert_allclose(np.asarray(gt.linalg.trace(gb[..., :3, :])), np.trace(b[..., :3, :], axis1=-2,
                                                                                     axis2=-1), rtol=tol, atol=tol)
    c1 = _cx(rng, (2, 3), dtype)
    c2 = _cx(rng, (2, 3), dtype)
    np.testing.assert_allclose(np.asarray(gt.linalg.cross(gt.asarray(c1), gt.asarray(c2))), np.cross(c1, c2),
                               rtol=tol, atol=tol)


# ---- norms ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize("ord", [2, 1, math.inf, -math.inf, 0, 3, -1.5])
def test_vector_norm(dtype: str, ord: float) -> None:
    rng = np.random.default_rng(1)
    x = _cx(rng, (3, 5), dtype)
    got = gt.linalg.vector_norm(gt.asarray(x), axis=-1, ord=ord)
    assert got.dtype == getattr(gt, REAL[dtype])
    want = np.linalg.norm(x.astype(np.complex128), axis=-1, ord=ord)
    np.testing.assert_allclose(np.asarray(got), want, rtol=RES[dtype])


@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf])
def test_matrix_norm(dtype: str, ord: object) -> None:
    rng = np.random.default_rng(2)
    x = _cx(rng, (2, 4, 3), dtype)
    got = gt.linalg.matrix_norm(gt.asarray(x), ord=ord, keepdims=True)
    assert got.dtype == getattr(gt, REAL[dtype]) and got.shape == (2, 1, 1)
    want = np.linalg.norm(x.astype(np.complex128), axis=(-2, -1), ord=ord, keepdims=True)
    np.testing.assert_allclose(np.asarray(got), want, rtol=RES[dtype])


# ---- eigh / eigvalsh --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize("n", [1, 3, 8, 26])
def test_eigh(dtype: str, n: int) -> None:
    rng = np.random.default_rng(n)
    a = _herm(rng, (2,), n, dtype)
    w, v = gt.linalg.eigh(gt.asarray(a))
    _check_eigh(a, np.asarray(w), np.asarray(v), dtype)
    np.testing.assert_array_equal(np.asarray(gt.linalg.eigvalsh(gt.asarray(a))), np.asarray(w))


@pytest.mark.parametrize("dtype", CDTYPES)
def test_eigh_reads_the_lower_triangle(dtype: str) -> None:
    """Only the lower triangle counts, and of the diagonal only its real part (as LAPACK)."""
    rng = np.random.default_rng(5)
    a = _herm(rng, (), 5, dtype)
    junk = a.copy()
    junk[np.triu_indices(5, 1)] = _cx(rng, (10,), dtype)
    junk[np.diag_indices(5)] += 1j * rng.standard_normal(5).astype(REAL[dtype])
    w, v = gt.linalg.eigh(gt.asarray(junk))
    _check_eigh(a, np.asarray(w), np.asarray(v), dtype)


@pytest.mark.parametrize("dtype", CDTYPES)
def test_eigh_repeated_eigenvalues(dtype: str) -> None:
    rng = np.random.default_rng(6)
    q, _ = np.linalg.qr(_cx(rng, (6, 6), "complex128"))
    a = ((q * np.array([1.0, 1.0, 1.0, -2.0, -2.0, 5.0])) @ _ct(q)).astype(dtype)
    w, v = gt.linalg.eigh(gt.asarray(a))
    _check_eigh(a, np.asarray(w), np.asarray(v), dtype)


@pytest.mark.parametrize("dtype", CDTYPES)
def test_eigh_empty_and_batch(dtype: str) -> None:
    w, v = gt.linalg.eigh(gt.zeros((3, 0, 0), dtype=getattr(gt, dtype)))
    assert w.shape == (3, 0) and v.shape == (3, 0, 0) and w.dtype == getattr(gt, REAL[dtype])
    rng = np.random.default_rng(7)
    a = _herm(rng, (2, 3), 4, dtype)
    w, v = gt.linalg.eigh(gt.asarray(a))
    _check_eigh(a, np.asarray(w), np.asarray(v), dtype)


# ---- svd / svdvals ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (5, 3), (3, 5), (8, 8), (29, 26), (26, 33)])
@pytest.mark.parametrize("full", [False, True])
def test_svd(dtype: str, shape: tuple[int, int], full: bool) -> None:
    rng = np.random.default_rng(sum(shape))
    x = _cx(rng, (2,) + shape, dtype)
    u, s, vh = gt.linalg.svd(gt.asarray(x), full_matrices=full)
    _check_svd(x, np.asarray(u), np.asarray(s), np.asarray(vh), dtype, full)
    np.testing.assert_allclose(np.asarray(gt.linalg.svdvals(gt.asarray(x))), np.asarray(s),
                               rtol=RES[dtype], atol=RES[dtype] * _norm(x))


@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize("shape", [(6, 4), (4, 7)])
def test_svd_rank_deficient(dtype: str, shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(8)
    m, n = shape
    x = (_cx(rng, (m, 2), "complex128") @ _cx(rng, (2, n), "complex128")).astype(dtype)
    u, s, vh = gt.linalg.svd(gt.asarray(x))
    _check_svd(x, np.asarray(u), np.asarray(s), np.asarray(vh), dtype, True)


@pytest.mark.parametrize("dtype", CDTYPES)
def test_svd_empty(dtype: str) -> None:
    u, s, vh = gt.linalg.svd(gt.zeros((2, 3, 0), dtype=getattr(gt, dtype)))
    assert u.shape == (2, 3, 3) and s.shape == (2, 0) and vh.shape == (2, 0, 0)
    assert s.dtype == getattr(gt, REAL[dtype]) and u.dtype == getattr(gt, dtype)


# ---- pinv / matrix_rank -----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize("shape", [(4, 3), (3, 5)])
def test_pinv(dtype: str, shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(9)
    x = _cx(rng, (2,) + shape, dtype)
    got = gt.linalg.pinv(gt.asarray(x))
    assert got.dtype == getattr(gt, dtype)
    np.testing.assert_allclose(np.asarray(got), np.linalg.pinv(x.astype(np.complex128)),
                               rtol=0, atol=RES[dtype] * 10)


@pytest.mark.parametrize("dtype", CDTYPES)
def test_matrix_rank(dtype: str) -> None:
    rng = np.random.default_rng(10)
    x = np.stack([(_cx(rng, (5, r), "complex128") @ _cx(rng, (r, 4), "complex128")) for r in (1, 2, 4)])
    x = x.astype(dtype)
    got = gt.linalg.matrix_rank(gt.asarray(x))
    np.testing.assert_array_equal(np.asarray(got), [1, 2, 4])


@settings(max_examples=10, deadline=None)
@given(m=st.integers(1, 6), n=st.integers(1, 6), batch=st.integers(1, 3), seed=st.integers(0, 2 ** 16))
def test_svd_hypothesis(m: int, n: int, batch: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = _cx(rng, (batch, m, n), "complex64")
    u, s, vh = gt.linalg.svd(gt.asarray(x), full_matrices=False)
    _check_svd(x, np.asarray(u), np.asarray(s), np.asarray(vh), "complex64", False)


# ---- errors (array-api-strict's types) --------------------------------------------------------

def test_errors() -> None:
    x = gt.asarray(np.ones((3,), dtype=np.complex64))
    with pytest.raises(ValueError):
        gt.linalg.svd(x)
    with pytest.raises(ValueError):
        gt.linalg.eigh(gt.asarray(np.ones((2, 3), dtype=np.complex64)))
    with pytest.raises(ValueError):
        gt.linalg.matrix_norm(gt.asarray(np.ones((2, 2), dtype=np.complex64)), ord="bad")
    with pytest.raises(TypeError):
        gt.linalg.vector_norm(gt.asarray(np.ones((2,), dtype=np.int32)))


# ---- factorisations: cholesky, LU (solve, inv, det, slogdet, matrix_power), qr ---------------
#: Orders on the batched small kernels (complex128's solve / inv / qr up to 16) and on the
#: blocked paths (over 32; Cholesky blocks of 64 columns, so 70 runs its trailing gemms).
FACTOR_ORDERS = (1, 4, 20, 40)


def _hpd(rng: np.random.Generator, shape: tuple[int, ...], n: int, dtype: str) -> np.ndarray:
    a = _cx(rng, shape + (n, n), "complex128")
    return (a @ _ct(a) + n * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize("n", FACTOR_ORDERS + (70,))
def test_cholesky(dtype: str, n: int) -> None:
    rng = np.random.default_rng(20 + n)
    a = _hpd(rng, (2,) if n < 70 else (), n, dtype)
    junk = a.copy()
    junk[..., np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]] = 7.0 - 3.0j  # only the lower triangle is read
    lo = np.asarray(gt.linalg.cholesky(gt.asarray(junk)))
    up = np.asarray(gt.linalg.cholesky(gt.asarray(junk), upper=True))
    assert lo.dtype == np.dtype(dtype) and up.dtype == np.dtype(dtype)
    norm = _norm(a)
    assert np.abs(lo @ _ct(lo) - a).max() / norm < RES[dtype]
    assert np.abs(_ct(up) @ up - a).max() / norm < RES[dtype]
    assert not np.any(np.triu(lo, 1)) and not np.any(np.tril(up, -1))
    np.testing.assert_allclose(lo, np.linalg.cholesky(a.astype(np.complex128)), rtol=0, atol=RES[dtype] * math.sqrt(norm))


@pytest.mark.parametrize("dtype", CDTYPES)
def test_cholesky_not_positive_definite(dtype: str) -> None:
    a = np.array([[1.0, 2.0j], [-2.0j, 1.0]], dtype=dtype)  # Hermitian, eigenvalues -1 and 3
    with pytest.raises(gt.linalg.LinAlgError):
        gt.linalg.cholesky(gt.asarray(a))


@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize("n", FACTOR_ORDERS)
def test_solve_inv(dtype: str, n: int) -> None:
    rng = np.random.default_rng(30 + n)
    a = (_cx(rng, (2, n, n), dtype) + 2 * math.sqrt(n) * np.eye(n)).astype(dtype)
    b = _cx(rng, (2, n, 3), dtype)
    v = _cx(rng, (n,), dtype)
    ga = gt.asarray(a)
    a64 = a.astype(np.complex128)
    tol = RES[dtype] * 10
    x = np.asarray(gt.linalg.solve(ga, gt.asarray(b)))
    assert x.dtype == np.dtype(dtype)
    np.testing.assert_allclose(x, np.linalg.solve(a64, b), rtol=0, atol=tol)
    x1 = np.asarray(gt.linalg.solve(ga, gt.asarray(v)))
    np.testing.assert_allclose(x1, np.linalg.solve(a64, v[None, :, None])[..., 0], rtol=0, atol=tol)
    inv = np.asarray(gt.linalg.inv(ga))
    np.testing.assert_allclose(inv, np.linalg.inv(a64), rtol=0, atol=tol)
    np.testing.assert_allclose(np.asarray(gt.linalg.matrix_power(ga, -2)), np.linalg.matrix_power(a64, -2),
                               rtol=0, atol=tol)
    np.testing.assert_allclose(np.asarray(gt.linalg.matrix_power(ga, 3)), np.linalg.matrix_power(a64, 3),
                               rtol=RES[dtype] * 10, atol=tol * n ** 1.5)


@pytest.mark.parametrize("dtype", CDTYPES)
def test_solve_singular(dtype: str) -> None:
    a = np.array([[1.0 + 1.0j, 2.0], [2.0 + 2.0j, 4.0]], dtype=dtype)
    with pytest.raises(gt.linalg.LinAlgError):
        gt.linalg.solve(gt.asarray(a), gt.asarray(np.ones((2, 1), dtype=dtype)))
    with pytest.raises(gt.linalg.LinAlgError):
        gt.linalg.inv(gt.asarray(a))
    assert complex(np.asarray(gt.linalg.det(gt.asarray(a)))) == 0
    sign, logabs = gt.linalg.slogdet(gt.asarray(a))
    assert complex(np.asarray(sign)) == 0 and float(np.asarray(logabs)) == -math.inf


@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize("n", (0,) + FACTOR_ORDERS)
def test_det_slogdet(dtype: str, n: int) -> None:
    rng = np.random.default_rng(40 + n)
    a = (_cx(rng, (3, n, n), dtype) / math.sqrt(max(n, 1))).astype(dtype)
    a64 = a.astype(np.complex128)
    d = np.asarray(gt.linalg.det(gt.asarray(a)))
    want = np.linalg.det(a64)
    assert d.dtype == np.dtype(dtype) and d.shape == (3,)
    np.testing.assert_allclose(d, want, rtol=RES[dtype] * 10 * max(n, 1), atol=tol(dtype, "determinant_floor")["atol"])
    sign, logabs = gt.linalg.slogdet(gt.asarray(a))
    assert sign.dtype == getattr(gt, dtype) and logabs.dtype == getattr(gt, REAL[dtype])
    ws, wl = np.linalg.slogdet(a64)
    np.testing.assert_allclose(np.asarray(sign), ws, rtol=0, atol=RES[dtype] * 10 * max(n, 1))
    np.testing.assert_allclose(np.asarray(logabs), wl, rtol=0, atol=RES[dtype] * 10 * max(n, 1))


@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (5, 3), (3, 5), (18, 18), (40, 35), (35, 40)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr(dtype: str, shape: tuple[int, int], mode: str) -> None:
    rng = np.random.default_rng(sum(shape))
    x = _cx(rng, (2,) + shape, dtype)
    q, r = (np.asarray(t) for t in gt.linalg.qr(gt.asarray(x), mode=mode))
    m, n = shape
    k = min(m, n) if mode == "reduced" else m
    assert q.dtype == np.dtype(dtype) and r.dtype == np.dtype(dtype)
    assert q.shape == (2, m, k) and r.shape == (2, k, n)
    assert np.abs(q @ r - x).max() / _norm(x) < RES[dtype]
    assert _unitary_err(q.astype(np.complex128)) < RES[dtype]
    assert not np.any(np.tril(r, -1))
    # R agrees with NumPy's up to the phases of its rows
    rn = np.linalg.qr(x.astype(np.complex128), mode=mode)[1]
    np.testing.assert_allclose(np.abs(r), np.abs(rn), rtol=0, atol=RES[dtype] * _norm(x))


def test_factor_errors() -> None:
    with pytest.raises(ValueError):
        gt.linalg.cholesky(gt.asarray(np.ones((2, 3), dtype=np.complex64)))
    with pytest.raises(ValueError):
        gt.linalg.solve(gt.asarray(np.eye(3, dtype=np.complex64)), gt.asarray(np.ones((2,), dtype=np.complex64)))
    with pytest.raises(ValueError):
        gt.linalg.qr(gt.asarray(np.ones((2, 2), dtype=np.complex64)), mode="r")
    with pytest.raises(TypeError):
        gt.linalg.det(gt.asarray(np.ones((2, 2), dtype=np.int32)))
