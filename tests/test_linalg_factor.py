"""gputensor.linalg factorizations against NumPy: cholesky, solve, inv, det, slogdet, qr,
matrix_power.

Factors are checked by residuals (||A - L L^T|| / ||A||, ||A X - B|| / (||A|| ||X||), Q's
orthogonality) rather than element by element, since the kernels round in a different order
than LAPACK; determinants and solutions of well-conditioned systems are compared with NumPy's
values. Orders up to 32 run on the batched small kernels (one workgroup per matrix), larger
ones (33, 70: two and three blocks of 32) on the blocked algorithms.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

import gputensor as gt
from gputensor._backend import config
from gputensor.linalg import LinAlgError

from _compare import numpy_gt_allclose
from _compare import tol

DTYPES = ("float32", "float64")
#: Residual bounds relative to the operands' norms: a few hundred units of roundoff.
EPS = {n: tol(n, "linalg_residual")["rtol"] for n in DTYPES}
#: Relative / absolute tolerances of values compared with NumPy's (well-conditioned input).
VALUE_TOL = {n: tuple(tol(n, "linalg").values()) for n in DTYPES}
SMALL_ORDERS = (1, 3, 8, 17, 32)
LARGE_ORDERS = (33, 70)


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _spd(rng: np.random.Generator, shape: tuple[int, ...], n: int) -> np.ndarray:
    a = rng.standard_normal(shape + (n, n))
    return a @ np.swapaxes(a, -1, -2) / n + np.eye(n)


def _well(rng: np.random.Generator, shape: tuple[int, ...], n: int) -> np.ndarray:
    """Well-conditioned matrices: identity plus a small random part."""
    return np.eye(n) + rng.standard_normal(shape + (n, n)) / (2 * np.sqrt(n))


def _norm(a: np.ndarray) -> float:
    return float(np.max(np.abs(a))) if a.size else 0.0


def _mT(a: np.ndarray) -> np.ndarray:
    return np.swapaxes(a, -1, -2)


# ---- cholesky -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SMALL_ORDERS + LARGE_ORDERS)
def test_cholesky_residual(dtype: str, n: int) -> None:
    a = _spd(_rng(n), (2,), n).astype(dtype)
    lower = gt.linalg.cholesky(gt.asarray(a)).get()
    assert lower.shape == a.shape and lower.dtype == a.dtype
    assert np.all(np.triu(lower, 1) == 0)
    assert _norm(lower @ _mT(lower) - a) <= EPS[dtype] * _norm(a) * n
    np.testing.assert_allclose(lower, np.linalg.cholesky(a.astype(np.float64)), *VALUE_TOL[dtype])


@pytest.mark.parametrize("n", (5, 40))
def test_cholesky_upper_and_batch_dims(n: int) -> None:
    a = _spd(_rng(1), (2, 3), n)
    upper = gt.linalg.cholesky(gt.asarray(a), upper=True).get()
    assert upper.shape == (2, 3, n, n)
    assert np.all(np.tril(upper, -1) == 0)
    np.testing.assert_allclose(upper, _mT(np.linalg.cholesky(a)), **tol("float64", "linalg"))


@pytest.mark.parametrize("n", (4, 40))
def test_cholesky_not_positive_definite_raises(n: int) -> None:
    a = _spd(_rng(2), (3,), n)
    a[1, n - 1, n - 1] = -1.0
    with pytest.raises(LinAlgError):
        gt.linalg.cholesky(gt.asarray(a))
    assert issubclass(LinAlgError, ValueError)


def test_cholesky_reads_only_the_lower_triangle() -> None:
    a = _spd(_rng(3), (), 6)
    noisy = np.tril(a) + np.triu(np.full_like(a, 7.0), 1)
    np.testing.assert_allclose(gt.linalg.cholesky(gt.asarray(noisy)).get(), np.linalg.cholesky(a), **tol("float64", "linalg_tight"))


# ---- solve ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SMALL_ORDERS + LARGE_ORDERS)
def test_solve_matches_numpy(dtype: str, n: int) -> None:
    rng = _rng(10 + n)
    a = _well(rng, (2,), n).astype(dtype)
    b = rng.standard_normal((2, n, 3)).astype(dtype)
    x = gt.linalg.solve(gt.asarray(a), gt.asarray(b)).get()
    assert x.shape == b.shape and x.dtype == a.dtype
    assert _norm(a @ x - b) <= EPS[dtype] * _norm(a) * _norm(x) * n
    np.testing.assert_allclose(x, np.linalg.solve(a.astype(np.float64), b.astype(np.float64)), *VALUE_TOL[dtype])


@numpy_gt_allclose(**tol("float64", "linalg"))
def test_solve_vector_and_broadcast(xp) -> None:
    rng = _rng(4)
    a = xp.asarray(_well(rng, (3, 1), 5))
    v = xp.asarray(rng.standard_normal(5))
    b = xp.asarray(rng.standard_normal((4, 5, 2)))
    return xp.linalg.solve(a, v), xp.linalg.solve(a, b), xp.linalg.solve(a[0, 0], v)


def test_solve_promotes_and_reads_views() -> None:
    rng = _rng(5)
    a = _well(rng, (), 9)
    b = rng.standard_normal((9, 4)).astype(np.float32)
    x = gt.linalg.solve(gt.asarray(a).mT, gt.asarray(b))
    assert x.dtype == gt.float64
    np.testing.assert_allclose(x.get(), np.linalg.solve(a.T, b.astype(np.float64)), **tol("float64", "linalg"))


@pytest.mark.parametrize("n", (6, 50))
def test_solve_and_inv_singular_raise(n: int) -> None:
    a = _well(_rng(6), (2,), n)
    a[1, :, 2] = 0.0
    with pytest.raises(LinAlgError):
        gt.linalg.solve(gt.asarray(a), gt.asarray(np.ones((2, n, 1))))
    with pytest.raises(LinAlgError):
        gt.linalg.inv(gt.asarray(a))


def test_solve_ill_conditioned_residual() -> None:
    n = 10
    hilbert = 1.0 / (np.arange(n)[:, None] + np.arange(n)[None, :] + 1.0)  # cond ~ 1e13
    b = np.ones((n, 1))
    x = gt.linalg.solve(gt.asarray(hilbert), gt.asarray(b)).get()
    assert _norm(hilbert @ x - b) <= 1e-12 * _norm(hilbert) * _norm(x) * n


# ---- inv ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", (1, 8, 32, 33, 70))
def test_inv_residual(dtype: str, n: int) -> None:
    a = _well(_rng(20 + n), (2,), n).astype(dtype)
    x = gt.linalg.inv(gt.asarray(a)).get()
    assert x.shape == a.shape and x.dtype == a.dtype
    assert _norm(a @ x - np.eye(n)) <= EPS[dtype] * _norm(a) * _norm(x) * n
    np.testing.assert_allclose(x, np.linalg.inv(a.astype(np.float64)), *VALUE_TOL[dtype])


# ---- det / slogdet ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", (1, 2, 8, 32, 33, 70))
def test_det_and_slogdet_match_numpy(dtype: str, n: int) -> None:
    a = _well(_rng(30 + n), (3,), n).astype(dtype)
    a[1] = a[1][::-1]  # odd or even permutations: signs of both kinds
    ref = a.astype(np.float64)
    rtol, atol = VALUE_TOL[dtype]
    d = gt.linalg.det(gt.asarray(a))
    assert d.shape == (3,) and d.dtype == gt.asarray(a).dtype
    np.testing.assert_allclose(d.get(), np.linalg.det(ref), rtol=rtol * n, atol=atol)
    sign, logabs = gt.linalg.slogdet(gt.asarray(a))
    ref_sign, ref_log = np.linalg.slogdet(ref)
    np.testing.assert_array_equal(sign.get(), ref_sign)
    np.testing.assert_allclose(logabs.get(), ref_log, rtol=rtol, atol=atol * n)


@pytest.mark.parametrize("n", (4, 40))
def test_det_singular_is_zero(n: int) -> None:
    a = _well(_rng(7), (), n)
    a[3] = 2 * a[1]
    ones = np.ones((n, n))
    for m in (a, ones, np.zeros((n, n))):
        d = float(gt.linalg.det(gt.asarray(m)).get())
        sign, logabs = gt.linalg.slogdet(gt.asarray(m))
        if d != 0.0:  # rounding may leave a tiny pivot, as in LAPACK
            assert abs(d) < 1e-10
        else:
            assert float(sign.get()) == 0.0 and float(logabs.get()) == -np.inf


@numpy_gt_allclose(**tol("float64", "linalg"))
def test_det_of_exact_matrices(xp) -> None:
    perm = xp.asarray(np.eye(5)[[1, 0, 3, 4, 2]])
    scaled = xp.asarray(np.diag([2.0, -3.0, 0.5, 4.0]))
    zero = xp.asarray(np.zeros((3, 3)))
    return (xp.linalg.det(perm), xp.linalg.det(scaled), *xp.linalg.slogdet(scaled), xp.linalg.det(zero),
            *xp.linalg.slogdet(zero))


def test_det_large_magnitudes_use_slogdet() -> None:
    a = np.diag(np.full(20, 1e30))
    sign, logabs = gt.linalg.slogdet(gt.asarray(a))
    assert float(sign.get()) == 1.0
    np.testing.assert_allclose(float(logabs.get()), 20 * np.log(1e30), **tol("float64", "linalg_tight"))
    assert float(gt.linalg.det(gt.asarray(a)).get()) == np.inf


# ---- qr -----------------------------------------------------------------------------------------
QR_SHAPES = [(1, 1), (5, 5), (9, 4), (4, 9), (32, 32), (32, 7), (40, 40), (75, 33), (33, 70)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", QR_SHAPES)
@pytest.mark.parametrize("mode", ("reduced", "complete"))
def test_qr_residual_and_orthogonality(dtype: str, shape: tuple[int, int], mode: str) -> None:
    x = _rng(shape[0] * 100 + shape[1]).standard_normal((2,) + shape).astype(dtype)
    q, r = gt.linalg.qr(gt.asarray(x), mode=mode)
    q, r = q.get(), r.get()
    q_ref, r_ref = np.linalg.qr(x, mode=mode)
    assert q.shape == q_ref.shape and r.shape == r_ref.shape and q.dtype == x.dtype
    size = max(shape)
    assert np.all(np.tril(r, -1) == 0)
    assert _norm(q @ r - x) <= EPS[dtype] * _norm(x) * size
    assert _norm(_mT(q) @ q - np.eye(q.shape[-1])) <= EPS[dtype] * size
    # the same reflectors as LAPACK's: R agrees with NumPy's up to rounding (full rank input)
    np.testing.assert_allclose(np.abs(r), np.abs(r_ref), rtol=VALUE_TOL[dtype][0] * 10, atol=EPS[dtype] * size)


@pytest.mark.parametrize("shape", [(6, 6), (8, 5), (45, 40)])
def test_qr_rank_deficient(shape: tuple[int, int]) -> None:
    rng = _rng(8)
    x = rng.standard_normal(shape[:1] + (2,)) @ rng.standard_normal((2, shape[1]))  # rank 2
    x[:, 1] = 0.0
    q, r = gt.linalg.qr(gt.asarray(x))
    q, r = q.get(), r.get()
    assert _norm(q @ r - x) <= 1e-12 * _norm(x) * max(shape)
    assert _norm(q.T @ q - np.eye(q.shape[1])) <= 1e-12 * max(shape)
    assert np.all(np.tril(r, -1) == 0)


@numpy_gt_allclose()
def test_qr_empty_shapes(xp) -> None:
    out = []
    for shape in ((0, 0), (3, 0), (0, 4), (2, 0, 3)):
        for mode in ("reduced", "complete"):
            out += list(xp.linalg.qr(xp.zeros(shape, dtype=xp.float64), mode=mode))
    return out


# ---- matrix_power --------------------------------------------------------------------------------
@numpy_gt_allclose(**tol("float64", "linalg"))
def test_matrix_power(xp) -> None:
    a = xp.asarray(_well(_rng(9), (2,), 6))
    return [xp.linalg.matrix_power(a, n) for n in (0, 1, 2, 3, 5, -1, -2)]


def test_matrix_power_errors() -> None:
    a = gt.asarray(np.eye(3))
    with pytest.raises(TypeError):
        gt.linalg.matrix_power(a, 1.5)
    with pytest.raises(TypeError):
        gt.linalg.matrix_power(a, True)
    with pytest.raises(LinAlgError):
        gt.linalg.matrix_power(gt.asarray(np.zeros((3, 3))), -1)


# ---- empty input, errors --------------------------------------------------------------------------
@numpy_gt_allclose()
def test_empty_stacks(xp) -> None:
    out = []
    for shape in ((0, 0), (2, 0, 0), (0, 3, 3)):
        a = xp.zeros(shape, dtype=xp.float64)
        out += [xp.linalg.cholesky(a), xp.linalg.inv(a), xp.linalg.det(a), *xp.linalg.slogdet(a)]
        out.append(xp.linalg.solve(a, xp.zeros(shape[:-1] + (2,), dtype=xp.float64)))
    return out


@pytest.mark.parametrize("fn", ["cholesky", "inv", "det", "slogdet", "qr", "matrix_power"])
def test_dtype_and_shape_errors(fn: str) -> None:
    call = (lambda x: getattr(gt.linalg, fn)(x, 2)) if fn == "matrix_power" else getattr(gt.linalg, fn)
    with pytest.raises(TypeError):
        call(gt.asarray(np.eye(3, dtype=np.int32)))
    with pytest.raises(TypeError):
        call(gt.asarray(np.eye(3, dtype=np.float16)))
    with pytest.raises(TypeError):
        call(np.eye(3))
    with pytest.raises(ValueError):
        call(gt.asarray(np.ones(3)))
    if fn != "qr":
        with pytest.raises(ValueError):
            call(gt.asarray(np.ones((3, 4))))


def test_solve_shape_errors_and_qr_mode() -> None:
    a = gt.asarray(np.eye(3))
    with pytest.raises(ValueError):
        gt.linalg.solve(a, gt.asarray(np.ones(4)))
    with pytest.raises(ValueError):
        gt.linalg.solve(a, gt.asarray(np.ones((4, 2))))
    with pytest.raises(ValueError):
        gt.linalg.solve(gt.asarray(np.ones((2, 3, 3))), gt.asarray(np.ones((3, 3, 1))))
    with pytest.raises(TypeError):
        gt.linalg.solve(a, gt.asarray(np.ones(3, dtype=np.int64)))
    with pytest.raises(ValueError):
        gt.linalg.qr(a, mode="r")


def test_named_results() -> None:
    a = gt.asarray(np.eye(3) * 2)
    res = gt.linalg.slogdet(a)
    assert type(res).__name__ == "SlogdetResult" and res._fields == ("sign", "logabsdet")
    qr = gt.linalg.qr(a)
    assert type(qr).__name__ == "QRResult" and qr._fields == ("Q", "R")


def test_large_stack_of_small_matrices() -> None:
    rng = _rng(11)
    a = _spd(rng, (500,), 8)
    b = rng.standard_normal((500, 8, 1))
    lower = gt.linalg.cholesky(gt.asarray(a)).get()
    assert _norm(lower @ _mT(lower) - a) <= 1e-13 * _norm(a) * 8
    x = gt.linalg.solve(gt.asarray(a), gt.asarray(b)).get()
    np.testing.assert_allclose(x, np.linalg.solve(a, b), **tol("float64", "linalg"))
    np.testing.assert_allclose(gt.linalg.inv(gt.asarray(a)).get(), np.linalg.inv(a), **tol("float64", "linalg"))


def test_benchmark_quick_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """``python3 -m benchmarks.bench_linalg --quick`` on two cases: results checked, a table printed."""
    root = Path(__file__).resolve().parents[1]
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    bench_linalg = importlib.import_module("benchmarks.bench_linalg")
    status = bench_linalg.main(["--quick", "--no-torch", "--only", "cholesky.n48.f32,solve.b200x8x8.f32",
                                "--target-s", "0.001", "--ab", "linalg_chol_syrk,linalg_block=16+linalg_chol_split=16"])
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert "cholesky.n48.f32" in printed and "gputensor:ok" in printed and "numpy/gt" in printed
    assert "cholesky.n48.f32[linalg_chol_syrk=0]" in printed
    assert "cholesky.n48.f32[linalg_block=16+linalg_chol_split=16]" in printed
    with pytest.raises(ValueError, match="unknown gputensor knob"):
        bench_linalg.variants("linalg_no_such_knob")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@numpy_gt_allclose()
def test_nan_input_gives_nan_as_numpy(xp) -> None:
    """NaN input is not singular: the results are NaN, as NumPy's (slogdet's sign then depends on
    the pivot order and is not compared)."""
    out = []
    for n in (3, 40):
        a = xp.asarray(np.full((n, n), np.nan))
        out += [xp.linalg.solve(a, xp.asarray(np.ones(n))), xp.linalg.inv(a), xp.linalg.det(a),
                xp.linalg.slogdet(a).logabsdet, xp.linalg.cholesky(a)]
    return out


def test_check_off_gives_non_finite_results() -> None:
    singular = np.ones((2, 5, 5))
    with config.override(linalg_check=False):
        x = gt.linalg.inv(gt.asarray(singular)).get()
        lower = gt.linalg.cholesky(gt.asarray(-np.eye(40))).get()
    assert not np.all(np.isfinite(x)) and np.isnan(lower).any()
    with pytest.raises(LinAlgError):
        gt.linalg.inv(gt.asarray(singular))


@pytest.mark.parametrize("n", (2, 8, 32))
def test_check_off_small_stack_fails_per_matrix_with_nan(n: int) -> None:
    """The batched small kernels mark each failed matrix: with the check off its whole result is
    NaN and the other matrices of the stack are exact; with the check on the call raises."""
    rng = _rng(21)
    spd = _spd(rng, (4,), n)
    spd[2] = -np.eye(n)  # not positive definite
    well = _well(rng, (4,), n)
    well[1] = 0.0  # singular
    b = rng.standard_normal((4, n, 3))
    keep_c = np.arange(4) != 2
    keep_s = np.arange(4) != 1
    with config.override(linalg_check=False):
        lower = gt.linalg.cholesky(gt.asarray(spd)).get()
        inv = gt.linalg.inv(gt.asarray(well)).get()
        x = gt.linalg.solve(gt.asarray(well), gt.asarray(b)).get()
    assert np.isnan(lower[2]).all() and np.isnan(inv[1]).all() and np.isnan(x[1]).all()
    np.testing.assert_allclose(lower[keep_c], np.linalg.cholesky(spd[keep_c]), **tol("float64", "linalg"))
    np.testing.assert_allclose(inv[keep_s], np.linalg.inv(well[keep_s]), **tol("float64", "linalg"))
    np.testing.assert_allclose(x[keep_s], np.linalg.solve(well[keep_s], b[keep_s]), **tol("float64", "linalg"))
    for call in (lambda: gt.linalg.cholesky(gt.asarray(spd)), lambda: gt.linalg.inv(gt.asarray(well)),
                 lambda: gt.linalg.solve(gt.asarray(well), gt.asarray(b))):
        with pytest.raises(LinAlgError):
            call()


def test_check_of_a_long_stack_is_reduced_on_the_device() -> None:
    """A stack with more info words than a check reads back as they are: the one failed matrix
    is still seen (the words are reduced on the device first)."""
    from gputensor.linalg import _factor

    count = _factor.INFO_READ_MAX + 5
    a = np.broadcast_to(np.eye(2), (count, 2, 2)).copy()
    a[count - 3] = -np.eye(2)
    x = gt.asarray(a)
    with pytest.raises(LinAlgError):
        gt.linalg.cholesky(x)
    a[count - 3] = np.eye(2)
    np.testing.assert_allclose(gt.linalg.cholesky(gt.asarray(a)).get(), a, **tol("float64", "linalg"))


@pytest.mark.parametrize("n", (8, 40))
def test_factorizations_leave_their_input_and_read_views(n: int) -> None:
    """cholesky, solve, inv and det read their input in place where they can (contiguous) and
    never change it; transposed views read as their values."""
    rng = _rng(22)
    spd = _spd(rng, (3,), n)
    well = _well(rng, (3,), n)
    xs, xw = gt.asarray(spd), gt.asarray(well)
    lower = gt.linalg.cholesky(xs).get()
    inv_t = gt.linalg.inv(xw.mT).get()
    x = gt.linalg.solve(xw, gt.asarray(np.ones((3, n, 1)))).get()
    det = gt.linalg.det(xw).get()
    np.testing.assert_array_equal(xs.get(), spd)
    np.testing.assert_array_equal(xw.get(), well)
    np.testing.assert_allclose(lower, np.linalg.cholesky(spd), **tol("float64", "linalg"))
    np.testing.assert_allclose(inv_t, np.linalg.inv(_mT(well)), **tol("float64", "linalg"))
    np.testing.assert_allclose(x, np.linalg.solve(well, np.ones((3, n, 1))), **tol("float64", "linalg"))
    np.testing.assert_allclose(det, np.linalg.det(well), **tol("float64", "linalg"))


def test_host_cost_tool_quick_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m benchmarks.tools.host_linalg`` on tiny cases: host time and dispatch counts."""
    root = Path(__file__).resolve().parents[1]
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    tool = importlib.import_module("benchmarks.tools.host_linalg")
    assert tool.main(["--n", "40", "--batch", "20x4", "--calls", "1"]) == 0
    printed = capsys.readouterr().out
    assert "cholesky n=40" in printed and "solve 20x4x4" in printed and "dispatches" in printed
