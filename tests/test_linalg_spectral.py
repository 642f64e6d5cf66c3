"""gputensor.linalg's spectral functions and helpers against NumPy: eigh, eigvalsh, svd,
svdvals, pinv, matrix_rank, matrix_norm, vector_norm, cross, diagonal, outer, trace.

Decompositions are checked by residuals (``||A V - V diag(w)||``, ``||U diag(S) Vh - A||``,
orthogonality of the vectors) relative to ``||A||``, and their values against NumPy's.
Orders up to 32 run on the workgroup-memory kernel (one workgroup per matrix), larger ones (33,
40) on the per-step kernel over device memory.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import gputensor as gt
from gputensor.linalg import LinAlgError

from _compare import numpy_gt_allclose
from _compare import tol

DTYPES = ("float32", "float64")
#: Residuals relative to ||A||: a few hundred units of roundoff (float32 eigh: the shifted
#: matrix rounds the input to ~eps * ||A||_inf per entry).
RES = {n: tol(n, "spectral_residual")["rtol"] for n in ("float32", "float64")}
SMALL = (1, 2, 5, 8, 17, 32)
LARGE = (33, 40)

SPEC_FUNCTIONS = ("cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm",
                  "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve",
                  "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm")


def _sym(rng: np.random.Generator, shape: tuple[int, ...], n: int, dtype: str) -> np.ndarray:
    a = rng.standard_normal(shape + (n, n))
    return (a + np.swapaxes(a, -1, -2)).astype(dtype)


def _orth_err(q: np.ndarray) -> float:
    k = q.shape[-1]
    return float(np.abs(np.swapaxes(q, -1, -2) @ q - np.eye(k)).max()) if k else 0.0


def _check_eigh(a: np.ndarray, w: np.ndarray, v: np.ndarray, dtype: str) -> None:
    a64 = a.astype(np.float64)
    norm = max(1.0, float(np.abs(a64).sum(axis=-1).max())) if a.size else 1.0
    assert w.dtype == np.dtype(dtype) and v.dtype == np.dtype(dtype)
    assert w.shape == a.shape[:-1] and v.shape == a.shape
    if a.size == 0:
        return
    res = np.abs(a64 @ v - v * w[..., None, :]).max() / norm
    assert res < RES[dtype], res
    assert _orth_err(v.astype(np.float64)) < RES[dtype]
    assert np.all(np.diff(w, axis=-1) >= 0)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a64), rtol=0, atol=RES[dtype] * norm)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SMALL + LARGE)
def test_eigh_random(dtype: str, n: int) -> None:
    rng = np.random.default_rng(n)
    a = _sym(rng, (3,) if n <= 32 else (), n, dtype)
    w, v = gt.linalg.eigh(gt.asarray(a))
    _check_eigh(a, gt.asnumpy(w), gt.asnumpy(v), dtype)
    np.testing.assert_allclose(gt.asnumpy(gt.linalg.eigvalsh(gt.asarray(a))), gt.asnumpy(w), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", (6, 36))
def test_eigh_repeated_and_ill_conditioned(dtype: str, n: int) -> None:
    rng = np.random.default_rng(1)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    repeated = np.array([1.0] * (n // 2) + [-1.0] * (n // 3) + [3.0] * (n - n // 2 - n // 3))
    graded = np.logspace(-7, 0, n)
    a = np.stack([(q * d) @ q.T for d in (repeated, graded)]).astype(dtype)
    a = (a + np.swapaxes(a, -1, -2)) / 2
    w, v = gt.linalg.eigh(gt.asarray(a))
    _check_eigh(a, gt.asnumpy(w), gt.asnumpy(v), dtype)


def test_eigh_reads_the_lower_triangle_and_special_inputs() -> None:
    a = np.array([[2.0, 100.0], [1.0, 2.0]])
    w, v = gt.linalg.eigh(gt.asarray(a))
    np.testing.assert_allclose(gt.asnumpy(w), np.linalg.eigvalsh(a), **tol("float64", "eigvalsh_lower"))
    w, v = gt.linalg.eigh(gt.asarray(np.zeros((2, 4, 4))))
    assert np.all(gt.asnumpy(w) == 0) and _orth_err(gt.asnumpy(v)) < 1e-12
    w, v = gt.linalg.eigh(gt.asarray(np.array([[[-3.5]]], dtype=np.float32)))
    assert gt.asnumpy(w).tolist() == [[-3.5]] and gt.asnumpy(v).tolist() == [[[1.0]]]
    for shape in ((0, 0), (0, 3, 3), (2, 0, 0)):
        w, v = gt.linalg.eigh(gt.zeros(shape))
        assert w.shape == shape[:-1] and v.shape == shape
    w, v = gt.linalg.eigh(gt.asarray(np.array([[1.0, np.nan], [np.nan, 1.0]])))
    assert np.all(np.isnan(gt.asnumpy(w)))


def _check_svd(a: np.ndarray, u: np.ndarray, s: np.ndarray, vh: np.ndarray, dtype: str, full: bool) -> None:
    m, n = a.shape[-2:]
    k = min(m, n)
    assert u.shape == a.shape[:-2] + ((m, m) if full else (m, k))
    assert vh.shape == a.shape[:-2] + ((n, n) if full else (k, n))
    assert s.shape == a.shape[:-2] + (k,) and s.dtype == np.dtype(dtype)
    if a.size == 0:
        return
    a64 = a.astype(np.float64)
    norm = max(float(np.abs(a64).max()) * math.sqrt(max(m, n)), 1e-300)
    rec = (u[..., :, :k].astype(np.float64) * s[..., None, :]) @ vh[..., :k, :]
    assert np.abs(rec - a64).max() / norm < RES[dtype]
    assert _orth_err(u.astype(np.float64)) < RES[dtype]
    assert _orth_err(np.swapaxes(vh, -1, -2).astype(np.float64)) < RES[dtype]
    assert np.all(np.diff(s, axis=-1) <= 0)
    np.testing.assert_allclose(s, np.linalg.svd(a64, compute_uv=False), rtol=0, atol=RES[dtype] * norm)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ((1, 1), (3, 2), (2, 3), (8, 8), (32, 5), (5, 32), (40, 33), (20, 37)))
@pytest.mark.parametrize("full", (False, True))
def test_svd_random(dtype: str, shape: tuple[int, int], full: bool) -> None:
    rng = np.random.default_rng(sum(shape))
    a = rng.standard_normal((2,) + shape).astype(dtype)
    u, s, vh = gt.linalg.svd(gt.asarray(a), full_matrices=full)
    _check_svd(a, gt.asnumpy(u), gt.asnumpy(s), gt.asnumpy(vh), dtype, full)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ((6, 4), (4, 6), (34, 10)))
def test_svd_rank_deficient_and_ill_conditioned(dtype: str, shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(7)
    m, n = shape
    k = min(m, n)
    low = rng.standard_normal((m, 2)) @ rng.standard_normal((2, n))  # rank 2
    dup = rng.standard_normal((m, n))
    dup[:, 1] = dup[:, 0]  # exactly dependent columns
    q1, _ = np.linalg.qr(rng.standard_normal((m, k)))
    q2, _ = np.linalg.qr(rng.standard_normal((n, k)))
    graded = (q1 * np.logspace(0, -6, k)) @ q2.T  # condition 1e6
    a = np.stack([low, dup, graded, np.zeros((m, n))]).astype(dtype)
    for full in (False, True):
        u, s, vh = gt.linalg.svd(gt.asarray(a), full_matrices=full)
        _check_svd(a, gt.asnumpy(u), gt.asnumpy(s), gt.asnumpy(vh), dtype, full)
    if dtype == "float64":  # singular values of a graded matrix to high relative accuracy
        s = gt.asnumpy(gt.linalg.svdvals(gt.asarray(a[2])))
        np.testing.assert_allclose(s, np.logspace(0, -6, k), **tol("float64", "svd_graded"))


def test_svd_empty_and_special() -> None:
    for shape, full in (((0, 3), True), ((3, 0), False), ((2, 0, 4), True), ((0, 2, 2), False)):
        u, s, vh = gt.linalg.svd(gt.zeros(shape), full_matrices=full)
        ref_u, ref_s, ref_vh = np.linalg.svd(np.zeros(shape), full_matrices=full)
        assert (u.shape, s.shape, vh.shape) == (ref_u.shape, ref_s.shape, ref_vh.shape)
        assert gt.linalg.svdvals(gt.zeros(shape)).shape == ref_s.shape
    s = gt.asnumpy(gt.linalg.svdvals(gt.asarray(np.array([[np.inf, 1.0], [0.0, 1.0]]))))
    assert np.all(np.isnan(s))
    result = gt.linalg.svd(gt.asarray(np.eye(3)))
    assert type(result).__name__ == "SVDResult" and result.S is result[1]
    result = gt.linalg.eigh(gt.asarray(np.eye(3)))
    assert type(result).__name__ == "EighResult" and result.eigenvectors is result[1]


@pytest.mark.parametrize("dtype", DTYPES)
def test_svdvals_batched(dtype: str) -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 3, 7, 4)).astype(dtype)
    np.testing.assert_allclose(gt.asnumpy(gt.linalg.svdvals(gt.asarray(a))), np.linalg.svd(a, compute_uv=False),
                               rtol=RES[dtype], atol=RES[dtype])


@pytest.mark.parametrize("fn", ("eigh", "eigvalsh", "svd", "svdvals"))
def test_decomposition_errors(fn: str) -> None:
    f = getattr(gt.linalg, fn)
    with pytest.raises(TypeError):
        f(gt.ones((3, 3), dtype=gt.int32))
    with pytest.raises(TypeError):
        f(gt.ones((3, 3), dtype=gt.float16))
    with pytest.raises(TypeError):
        f(np.ones((3, 3)))
    with pytest.raises(ValueError):
        f(gt.ones((3,)))
    if fn.startswith("eig"):
        with pytest.raises(ValueError):
            f(gt.ones((3, 4)))


def test_namespace_has_the_extension() -> None:
    for name in SPEC_FUNCTIONS:
        assert callable(getattr(gt.linalg, name)), name
        assert name in gt.linalg.__all__
    assert issubclass(LinAlgError, ValueError)
    assert gt.linalg.matmul is gt.matmul and gt.linalg.vecdot is gt.vecdot
    assert gt.linalg.tensordot is gt.tensordot and gt.linalg.matrix_transpose is gt.matrix_transpose


# ---- the functions built on the decompositions and on reductions -----------------------------
_A = np.random.default_rng(11).standard_normal((2, 5, 4))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ord", ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf))
@pytest.mark.parametrize("keepdims", (False, True))
@numpy_gt_allclose(**tol("float32", "matrix_norm"))
def test_matrix_norm(xp, dtype: str, ord, keepdims: bool):
    return xp.linalg.matrix_norm(xp.asarray(_A.astype(dtype)), ord=ord, keepdims=keepdims)


@pytest.mark.parametrize("ord", (2, 1, 0, math.inf, -math.inf, 3, 0.5, -1, -2.5))
@pytest.mark.parametrize("axis", (None, 0, -1, (0, 2), (2, 1)))
@pytest.mark.parametrize("keepdims", (False, True))
@numpy_gt_allclose(**tol("float32", "vector_norm"))
def test_vector_norm(xp, ord, axis, keepdims: bool):
    a = _A.astype(np.float32)
    a[0, 1, 2] = 0.0
    return xp.linalg.vector_norm(xp.asarray(a), ord=ord, axis=axis, keepdims=keepdims)


def test_vector_norm_errors_and_0d() -> None:
    with pytest.raises(TypeError):
        gt.linalg.vector_norm(gt.ones(3, dtype=gt.int32))
    assert float(gt.linalg.vector_norm(gt.asarray(-3.0))) == 3.0
    with pytest.raises(ValueError):
        gt.linalg.vector_norm(gt.ones((2, 2)), axis=(0, 0))
    with pytest.raises(ValueError):
        gt.linalg.matrix_norm(gt.ones((2, 2)), ord=3)
    with pytest.raises(ValueError):
        gt.linalg.matrix_norm(gt.ones(2))


@pytest.mark.parametrize("rtol", (None, 1e-3, 0.5))
@numpy_gt_allclose(family="exact")
def test_matrix_rank(xp, rtol):
    rng = np.random.default_rng(2)
    graded = np.vstack([np.diag([1.0, 0.1, 1e-4, 0.0, 0.0]), np.zeros((1, 5))])
    a = np.stack([rng.standard_normal((6, 2)) @ rng.standard_normal((2, 5)), rng.standard_normal((6, 5)), graded])
    return xp.linalg.matrix_rank(xp.asarray(a), rtol=rtol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ((4, 3), (3, 5), (2, 4, 4), (40, 6)))
def test_pinv(dtype: str, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(5)
    a = rng.standard_normal(shape).astype(dtype)
    if shape == (4, 3):
        a[:, 2] = a[:, 0]  # rank-deficient
    p = gt.asnumpy(gt.linalg.pinv(gt.asarray(a)))
    ref = np.linalg.pinv(a.astype(np.float64), rtol=max(shape[-2:]) * np.finfo(dtype).eps)
    np.testing.assert_allclose(p, ref, rtol=0, atol=50 * RES[dtype] * np.abs(ref).max())
    assert gt.linalg.pinv(gt.zeros((0, 3))).shape == (3, 0)


@numpy_gt_allclose()
def test_cross(xp):
    a = np.arange(12.0).reshape(4, 3) - 5
    b = np.array([[1.0], [2.0], [-1.0]]).T * np.ones((2, 1, 1))
    return xp.linalg.cross(xp.asarray(a), xp.asarray(b)), xp.linalg.cross(
        xp.asarray(a.T.copy()), xp.asarray(np.ones((3, 4))), axis=-2)


def test_cross_errors() -> None:
    with pytest.raises(ValueError):
        gt.linalg.cross(gt.ones((2, 4)), gt.ones((2, 4)))
    with pytest.raises(ValueError):
        gt.linalg.cross(gt.ones((3, 2)), gt.ones((3, 2)), axis=0)


@pytest.mark.parametrize("offset", (0, 1, -2, 7, -7))
@numpy_gt_allclose(family="exact")
def test_diagonal_and_trace(xp, offset: int):
    a = xp.reshape(xp.arange(2 * 3 * 5), (2, 3, 5))
    return (xp.linalg.diagonal(a, offset=offset), xp.linalg.trace(a, offset=offset),
            xp.linalg.trace(a, offset=offset, dtype=xp.float32))


@pytest.mark.requires("shader-f64")
@pytest.mark.parametrize("offset", (0, 1, -2, 7, -7))
@numpy_gt_allclose(family="exact")
def test_trace_in_float64(xp, offset: int):
    a = xp.reshape(xp.arange(2 * 3 * 5), (2, 3, 5))
    return xp.linalg.trace(xp.astype(a, xp.float32), offset=offset, dtype=xp.float64)


def test_diagonal_is_a_view() -> None:
    a = gt.zeros((3, 3))
    d = gt.linalg.diagonal(a[:, ::-1], offset=1)
    assert d._storage is a._storage
    np.testing.assert_array_equal(gt.asnumpy(d), np.zeros(2))


@numpy_gt_allclose()
def test_outer_and_reexports(xp):
    x = xp.asarray(np.array([1.0, 2.0, 3.0]))
    y = xp.asarray(np.array([4.0, -1.0]))
    m = xp.asarray(np.arange(6.0).reshape(2, 3))
    return (xp.linalg.outer(x, y), xp.linalg.matmul(m, x), xp.linalg.vecdot(x, x),
            xp.linalg.tensordot(m, m, axes=([1], [1])), xp.linalg.matrix_transpose(m))


def test_outer_errors() -> None:
    with pytest.raises(ValueError):
        gt.linalg.outer(gt.ones((2, 2)), gt.ones(2))
    with pytest.raises(TypeError):
        gt.linalg.outer(gt.ones(2, dtype=gt.bool), gt.ones(2))


def test_benchmark_quick_runs() -> None:
    from benchmarks import bench_linalg_spectral

    rows = bench_linalg_spectral.run(["--quick", "--no-torch", "--only", "batch"])
    assert rows and rows[0]["check"]["gputensor"] < 1e-4 and rows[0]["seconds"]["gputensor"] > 0


def test_no_convergence_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    from gputensor._backend import ops_spectral

    monkeypatch.setattr(ops_spectral, "MAX_SWEEPS", 1)
    a = np.random.default_rng(4).standard_normal((40, 40)).astype(np.float32)
    with pytest.raises(LinAlgError, match="converge"):
        gt.linalg.svdvals(gt.asarray(a))
