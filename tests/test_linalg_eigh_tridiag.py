"""gputensor.linalg.eigh / eigvalsh of real matrices through the tridiagonal path
(``_backend/ops_tridiag.py``: Householder tridiagonalisation, bisection, inverse iteration,
clusters orthogonalised, blocked back-transform) against NumPy.

The knob ``linalg_eigh_tridiag`` lowers the path's least order to 33 so that small matrices
(orders 34 .. 130: across the back-transform's 32-reflector blocks) exercise it. Checked: the
residual ``||A V - V diag(w)||`` and ``||V^T V - I||`` relative to ``||A||``, ascending
eigenvalues against float64 LAPACK, eigvalsh equal to eigh's eigenvalues.
"""

from __future__ import annotations

import numpy as np
import pytest

import gputensor as gt
from gputensor._backend import config, ops_tridiag

from _compare import tol

DTYPES = ("float32", "float64")
RES = {n: tol(n, "spectral_residual")["rtol"] for n in DTYPES}


@pytest.fixture(autouse=True)
def _tridiag_from_33():
    with config.override(linalg_eigh_tridiag=33):
        yield


def _check(a: np.ndarray, dtype: str) -> None:
    w, v = gt.linalg.eigh(gt.asarray(a))
    w, v = gt.asnumpy(w), gt.asnumpy(v)
    n = a.shape[-1]
    a64 = a.astype(np.float64)
    norm = max(1.0, float(np.abs(a64).sum(axis=-1).max()))
    assert w.dtype == np.dtype(dtype) and v.dtype == np.dtype(dtype)
    assert w.shape == a.shape[:-1] and v.shape == a.shape
    v64 = v.astype(np.float64)
    res = np.abs(a64 @ v64 - v64 * w[..., None, :]).max() / norm
    assert res < RES[dtype], res
    orth = np.abs(np.swapaxes(v64, -1, -2) @ v64 - np.eye(n)).max()
    assert orth < RES[dtype], orth
    assert np.all(np.diff(w, axis=-1) >= 0)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a64), rtol=0, atol=RES[dtype] * norm)
    np.testing.assert_array_equal(gt.asnumpy(gt.linalg.eigvalsh(gt.asarray(a))), w)


def _sym(rng: np.random.Generator, n: int, dtype: str) -> np.ndarray:
    a = rng.standard_normal((n, n))
    return (a + a.T).astype(dtype)


def _with_spectrum(rng: np.random.Generator, values: np.ndarray, dtype: str) -> np.ndarray:
    q, _ = np.linalg.qr(rng.standard_normal((len(values), len(values))))
    a = (q * values) @ q.T
    return ((a + a.T) / 2).astype(dtype)


@pytest.mark.parametrize("dtype, n", (("float32", 34), ("float64", 34), ("float32", 97), ("float64", 97),
                                      ("float32", 130)))
def test_random(dtype: str, n: int) -> None:
    _check(_sym(np.random.default_rng(n), n, dtype), dtype)


def _special(kind: str, n: int, rng: np.random.Generator, dtype: str) -> np.ndarray:
    if kind == "repeated":
        values = np.array([1.0] * (n // 2) + [-1.0] * (n // 3) + [3.0] * (n - n // 2 - n // 3))
        return _with_spectrum(rng, values, dtype)
    if kind == "graded":
        return _with_spectrum(rng, np.logspace(-7, 0, n), dtype)
    if kind == "close":  # a cluster of 40 distinct eigenvalues 1e-7 apart (Rayleigh-Ritz inside it)
        return _with_spectrum(rng, np.concatenate([1.0 + 1e-7 * np.arange(40), np.linspace(-3, 3, n - 40)]), dtype)
    if kind == "identity":
        return np.eye(n, dtype=dtype)
    if kind == "zero":
        return np.zeros((n, n), dtype=dtype)
    if kind == "diagonal":
        return np.diag(np.repeat(np.arange(n // 5, dtype=np.float64), 5)[:n] - 3.0).astype(dtype)
    if kind == "rank3":
        b = rng.standard_normal((n, 3))
        return (b @ b.T).astype(dtype)
    if kind == "wilkinson":
        m = n // 2
        return (np.diag(np.abs(np.arange(2 * m + 1) - m).astype(np.float64)) + np.diag(np.ones(2 * m), 1)
                + np.diag(np.ones(2 * m), -1)).astype(dtype)
    if kind == "huge":
        return (_sym(rng, n, "float64") * 1e30).astype(dtype)
    assert kind == "tiny"
    return (_sym(rng, n, "float64") * 1e-30).astype(dtype)


@pytest.mark.parametrize("dtype, kind", [(d, k) for k in ("repeated", "graded", "close", "rank3") for d in DTYPES]
                         + [("float32", "identity"), ("float64", "zero"), ("float32", "diagonal"),
                            ("float64", "wilkinson"), ("float32", "huge"), ("float64", "tiny")])
def test_special(dtype: str, kind: str) -> None:
    n = 80 if kind == "close" else 40
    _check(_special(kind, n, np.random.default_rng(7), dtype), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_stack(dtype: str) -> None:
    rng = np.random.default_rng(3)
    a = np.stack([_sym(rng, 36, dtype) for _ in range(2)]).reshape(2, 1, 36, 36)
    _check(a, dtype)


def test_non_finite_gives_nan() -> None:
    a = _sym(np.random.default_rng(5), 40, "float32")
    a[3, 7] = a[7, 3] = np.nan
    assert np.all(np.isnan(gt.asnumpy(gt.linalg.eigvalsh(gt.asarray(a)))))
    w, v = gt.linalg.eigh(gt.asarray(a))
    assert np.all(np.isnan(gt.asnumpy(w))) and np.all(np.isnan(gt.asnumpy(v)))


def test_path_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = ops_tridiag.sytrd
    monkeypatch.setattr(ops_tridiag, "sytrd", lambda *args: calls.append(args[2]) or real(*args))
    a = _sym(np.random.default_rng(6), 34, "float32")
    gt.linalg.eigvalsh(gt.asarray(a))
    assert calls == [34]
    with config.override(linalg_eigh_tridiag=-1):  # off
        w = gt.asnumpy(gt.linalg.eigvalsh(gt.asarray(a)))
    assert calls == [34]  # block Jacobi
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a.astype(np.float64)), rtol=0,
                               atol=RES["float32"] * np.abs(a).sum(axis=-1).max())
    with config.override(linalg_eigh_tridiag=0):
        gt.linalg.eigvalsh(gt.asarray(_sym(np.random.default_rng(6), 64, "float32")))
    assert calls == [34, 64]  # the default least order
    gt.linalg.eigvalsh(gt.asarray(np.stack([a] * 5)))
    assert calls == [34, 64]  # stacks of many matrices: block Jacobi


# ---- svd through the Jordan-Wielandt matrix [[0, A], [A^T, 0]] (knob linalg_svd_tridiag) ----
def _check_svd(a: np.ndarray, dtype: str, full: bool) -> None:
    with config.override(linalg_svd_tridiag=33):
        u, s, vh = (gt.asnumpy(r) for r in gt.linalg.svd(gt.asarray(a), full_matrices=full))
        values = gt.asnumpy(gt.linalg.svdvals(gt.asarray(a)))
    m, n = a.shape[-2:]
    k = min(m, n)
    assert u.shape == a.shape[:-2] + ((m, m) if full else (m, k))
    assert vh.shape == a.shape[:-2] + ((n, n) if full else (k, n))
    assert s.shape == a.shape[:-2] + (k,) and s.dtype == np.dtype(dtype) and u.dtype == np.dtype(dtype)
    a64 = a.astype(np.float64)
    norm = max(float(np.abs(a64).max()) * np.sqrt(max(m, n)), 1e-300)
    rec = (u[..., :, :k].astype(np.float64) * s[..., None, :]) @ vh[..., :k, :]
    assert np.abs(rec - a64).max() / norm < RES[dtype]
    for q in (u.astype(np.float64), np.swapaxes(vh, -1, -2).astype(np.float64)):
        assert np.abs(np.swapaxes(q, -1, -2) @ q - np.eye(q.shape[-1])).max() < RES[dtype]
    assert np.all(np.diff(s, axis=-1) <= 0) and np.all(s >= 0)
    np.testing.assert_allclose(s, np.linalg.svd(a64, compute_uv=False), rtol=0, atol=RES[dtype] * norm)
    np.testing.assert_array_equal(values, s)


@pytest.mark.parametrize("dtype, shape, full", (("float32", (40, 36), False), ("float64", (40, 36), True),
                                                ("float32", (35, 50), True), ("float64", (35, 50), False),
                                                ("float32", (50, 40), True)))
def test_svd_random(dtype: str, shape: tuple[int, int], full: bool) -> None:
    _check_svd(np.random.default_rng(sum(shape)).standard_normal(shape).astype(dtype), dtype, full)


@pytest.mark.parametrize("dtype, kind", [(d, k) for k in ("rank2", "graded") for d in DTYPES]
                         + [("float32", "duplicate"), ("float64", "orthogonal"), ("float32", "zero")])
def test_svd_special(dtype: str, kind: str) -> None:
    rng = np.random.default_rng(11)
    m, n = 40, 36
    if kind == "rank2":
        a = rng.standard_normal((m, 2)) @ rng.standard_normal((2, n))
    elif kind == "duplicate":
        a = rng.standard_normal((m, n))
        a[:, 1] = a[:, 0]
    elif kind == "graded":  # condition 1e6: small singular values' vectors orthonormalised
        q1, _ = np.linalg.qr(rng.standard_normal((m, n)))
        q2, _ = np.linalg.qr(rng.standard_normal((n, n)))
        a = (q1 * np.logspace(0, -6, n)) @ q2.T
    elif kind == "orthogonal":  # one singular value of multiplicity n
        a, _ = np.linalg.qr(rng.standard_normal((n, n)))
    else:
        a = np.zeros((m, n))
    _check_svd(a.astype(dtype), dtype, kind == "duplicate")


def test_svd_stack_and_path(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = ops_tridiag.sytrd
    monkeypatch.setattr(ops_tridiag, "sytrd", lambda *args: calls.append(args[2]) or real(*args))
    a = np.random.default_rng(12).standard_normal((2, 34, 36)).astype("float32")
    _check_svd(a, "float32", False)
    assert calls and set(calls) == {70}
    with config.override(linalg_svd_tridiag=-1):  # off: one-sided Jacobi
        gt.linalg.svdvals(gt.asarray(a))
    assert len(calls) == 4  # (svd and svdvals, two matrices each)


def test_svd_non_finite_gives_nan() -> None:
    a = np.random.default_rng(13).standard_normal((36, 40)).astype("float32")
    a[3, 4] = np.nan
    with config.override(linalg_svd_tridiag=33):
        assert np.all(np.isnan(gt.asnumpy(gt.linalg.svdvals(gt.asarray(a)))))
        u, s, vh = gt.linalg.svd(gt.asarray(a))
    assert (u.shape, s.shape, vh.shape) == ((36, 36), (36,), (40, 40))
    assert all(np.all(np.isnan(gt.asnumpy(r))) for r in (u, s, vh))


def test_float32_working_dtype(monkeypatch: pytest.MonkeyPatch) -> None:
    """Adapters without shader-f64 run bisection and inverse iteration in float32 (clusters
    from a relative gap of 1e-3)."""
    monkeypatch.setattr(ops_tridiag, "working_dtype", lambda backend, dtype: dtype)
    rng = np.random.default_rng(14)
    _check(_sym(rng, 40, "float32"), "float32")
    _check(_with_spectrum(rng, np.repeat([1.0, 2.0, 2.0 + 1e-5], 12), "float32"), "float32")


