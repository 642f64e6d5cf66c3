"""gputensor.linalg.eigh / eigvalsh of real matrices through the tridiagonal path
(``_backend/ops_tridiag.py``: Householder tridiagonalisation, bisection, inverse iteration,
clusters orthogonalised, blocked back-transform) against NumPy.

The knob ``linalg_eigh_tridiag`` lowers the path's least order to 33 so that small matrices
(orders 34 .. 200: across the back-transform's 32-reflector blocks) exercise it. Checked: the
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


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", (34, 65, 97))
def test_random(dtype: str, n: int) -> None:
    _check(_sym(np.random.default_rng(n), n, dtype), dtype)


def test_order_200() -> None:
    _check(_sym(np.random.default_rng(200), 200, "float32"), "float32")


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


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ("repeated", "graded", "close", "identity", "zero", "diagonal", "rank3",
                                  "wilkinson", "huge", "tiny"))
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
