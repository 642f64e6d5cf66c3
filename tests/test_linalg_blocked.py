"""The blocked factorizations of gputensor.linalg at orders that cross block boundaries.

The block width is set small through ``config.override(linalg_block=...)`` so that orders of
33..200 run several blocks: n = nb - 1, nb, nb + 1 and 2 nb + 3 for each width, tall and wide
QR, stacks of large matrices, singular / indefinite input and float32 / float64. Factors are
checked by residuals against the input and values against NumPy (well-conditioned input), with
``_compare``'s tolerances for values and a few hundred units of roundoff for residuals.
"""

from __future__ import annotations

import numpy as np
import pytest

import gputensor as gt
from gputensor._backend import config
from gputensor.linalg import LinAlgError

from _compare import for_dtypes, tolerance

DTYPES = ("float32", "float64")
#: residuals relative to the operands' size: a few hundred units of roundoff
EPS = {"float32": 3e-5, "float64": 1e-12}
#: (block width, order) pairs: below, at and above one block, and two blocks plus a ragged one
#: (orders <= 32 run on the batched small kernels instead)
CROSSING = [(nb, n) for nb in (16, 32, 64) for n in (nb - 1, nb, nb + 1, 2 * nb + 3) if n > 32]
#: LU and QR panel kernels (``linalg_panel_rows``): every panel on one workgroup, or every panel
#: over many workgroups (LU's pivots from a tournament, QR a dispatch per column)
PANELS = {"one-workgroup": 10**9, "many-workgroups": 1}


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _spd(rng: np.random.Generator, shape: tuple[int, ...], n: int) -> np.ndarray:
    a = rng.standard_normal(shape + (n, n))
    return a @ np.swapaxes(a, -1, -2) / n + np.eye(n)


def _well(rng: np.random.Generator, shape: tuple[int, ...], n: int) -> np.ndarray:
    return np.eye(n) + rng.standard_normal(shape + (n, n)) / (2 * np.sqrt(n))


def _max(a: np.ndarray) -> float:
    return float(np.max(np.abs(a)))


def _close(actual: np.ndarray, want: np.ndarray, dtype: str) -> None:
    """Element-wise within the ``summation`` tolerance of the largest element (entries much
    smaller than the largest carry the cancellation of their dot products)."""
    assert actual.dtype == np.dtype(dtype)
    rtol = tolerance(dtype, "summation")[0]
    np.testing.assert_allclose(actual, want, rtol=rtol, atol=rtol * _max(want))


@for_dtypes(DTYPES)
@pytest.mark.parametrize(("nb", "n"), CROSSING)
def test_cholesky_blocks(dtype: str, nb: int, n: int) -> None:
    a = _spd(_rng(n), (), n).astype(dtype)
    with config.override(linalg_block=nb):
        lower = gt.asnumpy(gt.linalg.cholesky(gt.asarray(a)))
        upper = gt.asnumpy(gt.linalg.cholesky(gt.asarray(a), upper=True))
    assert lower.dtype == np.dtype(dtype)
    assert np.array_equal(np.triu(lower, 1), np.zeros_like(lower))
    a64 = a.astype(np.float64)
    assert _max(lower.astype(np.float64) @ lower.T - a64) <= EPS[dtype] * _max(a64) * n ** 0.5
    _close(lower, np.linalg.cholesky(a64), dtype)
    np.testing.assert_array_equal(upper, lower.T)


@pytest.mark.parametrize("panel", list(PANELS))
@for_dtypes(DTYPES)
@pytest.mark.parametrize(("nb", "n"), [(nb, n) for nb, n in CROSSING if nb <= 32])
def test_lu_solve_inv_det_blocks(dtype: str, nb: int, n: int, panel: str) -> None:
    rng = _rng(100 + n)
    a = _well(rng, (), n).astype(dtype)
    b = rng.standard_normal((n, 3)).astype(dtype)
    v = rng.standard_normal(n).astype(dtype)
    with config.override(linalg_block=nb, linalg_panel_rows=PANELS[panel]):
        x = gt.asnumpy(gt.linalg.solve(gt.asarray(a), gt.asarray(b)))
        xv = gt.asnumpy(gt.linalg.solve(gt.asarray(a), gt.asarray(v)))
        ainv = gt.asnumpy(gt.linalg.inv(gt.asarray(a)))
        det = gt.asnumpy(gt.linalg.det(gt.asarray(a)))
        sign, logabs = (gt.asnumpy(t) for t in gt.linalg.slogdet(gt.asarray(a)))
    a64 = a.astype(np.float64)
    tol = EPS[dtype] * n
    assert _max(a64 @ x - b) <= tol * _max(a64) * _max(x)
    assert _max(a64 @ xv - v) <= tol * _max(a64) * _max(xv)
    assert _max(a64 @ ainv - np.eye(n)) <= tol * _max(a64) * _max(ainv)
    want_sign, want_log = np.linalg.slogdet(a64)
    assert float(sign) == want_sign
    assert abs(float(logabs) - want_log) <= tol * max(1.0, abs(want_log))
    assert abs(float(det) - want_sign * np.exp(want_log)) <= tol * np.exp(want_log)


@pytest.mark.parametrize("panel", list(PANELS))
@for_dtypes(DTYPES)
@pytest.mark.parametrize("nb", [16, 32])
def test_lu_pivoting_blocks(dtype: str, nb: int, panel: str) -> None:
    """A matrix that needs row swaps in every block (a permuted, ill-scaled one): solve matches
    NumPy's and the determinant's sign follows the permutation."""
    n = 2 * nb + 3
    rng = _rng(7)
    perm = rng.permutation(n)
    a = (_well(rng, (), n) * np.logspace(0, 2, n)[:, None])[perm].astype(dtype)
    b = rng.standard_normal((n, 2)).astype(dtype)
    with config.override(linalg_block=nb, linalg_panel_rows=PANELS[panel]):
        x = gt.asnumpy(gt.linalg.solve(gt.asarray(a), gt.asarray(b)))
        sign = gt.asnumpy(gt.linalg.slogdet(gt.asarray(a)).sign)
    want = np.linalg.solve(a.astype(np.float64), b.astype(np.float64))
    assert _max(x - want) <= EPS[dtype] * n * 10 * _max(want)
    assert float(sign) == np.linalg.slogdet(a.astype(np.float64))[0]


@pytest.mark.parametrize("panel", list(PANELS))
@for_dtypes(DTYPES)
@pytest.mark.parametrize(("m", "n"), [(70, 70), (97, 40), (40, 97), (131, 66)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr_blocks(dtype: str, m: int, n: int, mode: str, panel: str) -> None:
    a = _rng(m * n).standard_normal((m, n)).astype(dtype)
    with config.override(linalg_panel_rows=PANELS[panel]):
        q, r = (gt.asnumpy(t) for t in gt.linalg.qr(gt.asarray(a), mode=mode))
    k = min(m, n)
    assert q.shape == ((m, k) if mode == "reduced" else (m, m))
    assert r.shape == ((k, n) if mode == "reduced" else (m, n))
    assert np.array_equal(np.tril(r, -1), np.zeros_like(r))
    q64 = q.astype(np.float64)
    assert _max(q64 @ r - a) <= EPS[dtype] * max(m, n) * _max(a)
    assert _max(q64.T @ q64 - np.eye(q.shape[1])) <= EPS[dtype] * max(m, n)


@for_dtypes(DTYPES)
def test_stacks_of_blocked_matrices(dtype: str) -> None:
    """Batches of matrices above the small kernels' order: each matrix of the stack factored."""
    rng = _rng(3)
    n = 45
    spd = _spd(rng, (2, 3), n).astype(dtype)
    well = _well(rng, (4,), n).astype(dtype)
    b = rng.standard_normal((4, n, 2)).astype(dtype)
    with config.override(linalg_block=16):
        lower = gt.asnumpy(gt.linalg.cholesky(gt.asarray(spd)))
        x = gt.asnumpy(gt.linalg.solve(gt.asarray(well), gt.asarray(b)))
        det = gt.asnumpy(gt.linalg.det(gt.asarray(well)))
        ainv = gt.asnumpy(gt.linalg.inv(gt.asarray(well)))
    _close(lower, np.linalg.cholesky(spd.astype(np.float64)), dtype)
    w64 = well.astype(np.float64)
    tol = EPS[dtype] * n
    assert _max(w64 @ x - b) <= tol * _max(w64) * _max(x)
    assert _max(w64 @ ainv - np.eye(n)) <= tol * _max(w64) * _max(ainv)
    want = np.linalg.det(w64)
    assert np.all(np.abs(det - want) <= tol * np.abs(want))


@for_dtypes(DTYPES)
@pytest.mark.parametrize("where", [0, 15, 16, 40])
def test_not_positive_definite_in_any_block(dtype: str, where: int) -> None:
    """A negative pivot in the first, a middle or the last block raises LinAlgError (and, with
    the check off, gives NaN in the factor instead)."""
    n = 45
    a = _spd(_rng(where), (), n)
    a[where, where] = -4.0 * n
    a = a.astype(dtype)
    with config.override(linalg_block=16):
        with pytest.raises(LinAlgError):
            gt.linalg.cholesky(gt.asarray(a))
        with config.override(linalg_check=False):
            lower = gt.asnumpy(gt.linalg.cholesky(gt.asarray(a)))
    assert np.isnan(lower).any()


@for_dtypes(DTYPES)
def test_stack_with_one_indefinite_blocked_matrix(dtype: str) -> None:
    """The blocked Cholesky runs the whole stack at once: one indefinite matrix raises, the others
    are factored (seen with the check off)."""
    n = 40
    a = _spd(_rng(9), (5,), n)
    a[3, 30, 30] = -1.0
    a = a.astype(dtype)
    with config.override(linalg_block=16):
        with pytest.raises(LinAlgError):
            gt.linalg.cholesky(gt.asarray(a))
        with config.override(linalg_check=False):
            lower = gt.asnumpy(gt.linalg.cholesky(gt.asarray(a)))
    keep = np.arange(5) != 3
    _close(lower[keep], np.linalg.cholesky(a[keep].astype(np.float64)), dtype)
    assert np.isnan(lower[3]).any()


@pytest.mark.parametrize("panel", list(PANELS))
@for_dtypes(DTYPES)
@pytest.mark.parametrize("where", [0, 20, 44])
def test_singular_in_any_block(dtype: str, where: int, panel: str) -> None:
    """A zero column in any block: solve and inv raise LinAlgError, det is 0, slogdet (0, -inf)."""
    n = 45
    a = _well(_rng(where), (), n)
    a[:, where] = 0.0
    a = a.astype(dtype)
    b = np.ones((n, 1), dtype=dtype)
    with config.override(linalg_block=16, linalg_panel_rows=PANELS[panel]):
        with pytest.raises(LinAlgError):
            gt.linalg.solve(gt.asarray(a), gt.asarray(b))
        with pytest.raises(LinAlgError):
            gt.linalg.inv(gt.asarray(a))
        det = float(gt.asnumpy(gt.linalg.det(gt.asarray(a))))
        sign, logabs = (float(gt.asnumpy(t)) for t in gt.linalg.slogdet(gt.asarray(a)))
    assert det == 0.0
    assert sign == 0.0 and logabs == -np.inf


@pytest.mark.parametrize("panel", list(PANELS))
@for_dtypes(DTYPES)
def test_stack_with_one_singular_blocked_matrix(dtype: str, panel: str) -> None:
    """The blocked LU runs the whole stack at once: one singular matrix raises in solve / inv,
    has det 0, and the others are solved (seen with the check off)."""
    n = 45
    rng = _rng(21)
    a = _well(rng, (3,), n)
    a[1, :, 17] = 0.0
    a = a.astype(dtype)
    b = rng.standard_normal((3, n, 1)).astype(dtype)
    with config.override(linalg_block=16, linalg_panel_rows=PANELS[panel]):
        with pytest.raises(LinAlgError):
            gt.linalg.solve(gt.asarray(a), gt.asarray(b))
        with pytest.raises(LinAlgError):
            gt.linalg.inv(gt.asarray(a))
        det = gt.asnumpy(gt.linalg.det(gt.asarray(a)))
        with config.override(linalg_check=False):
            x = gt.asnumpy(gt.linalg.solve(gt.asarray(a), gt.asarray(b)))
    keep = np.array([True, False, True])
    a64 = a[keep].astype(np.float64)
    assert det[1] == 0.0
    assert np.all(np.abs(det[keep] - np.linalg.det(a64)) <= EPS[dtype] * n * np.abs(np.linalg.det(a64)))
    assert _max(a64 @ x[keep] - b[keep]) <= EPS[dtype] * n * _max(a64) * _max(x[keep])


def test_block_width_must_be_supported() -> None:
    a = gt.asarray(_spd(_rng(0), (), 40).astype("float32"))
    with config.override(linalg_block=24):
        with pytest.raises(ValueError, match="GPUTENSOR_LINALG_BLOCK"):
            gt.linalg.cholesky(a)


@pytest.mark.parametrize("n", [8, 32])
def test_small_stacks_one_dispatch(n: int) -> None:
    """A stack of small matrices takes a fixed number of dispatches per factorization (the
    factorization and at most two helpers: the adapter decides whether a scratch fill is a
    dispatch), whatever its length: 30 matrices and 300 take the same."""
    rng = _rng(n)
    stats = gt._dispatch.backend().context.stats

    def counts(m: int) -> list[int]:
        a = gt.asarray(_well(rng, (m,), n).astype("float32"))
        b = gt.asarray(rng.standard_normal((m, n, 1)).astype("float32"))
        out = []
        for call in (lambda: gt.linalg.inv(a), lambda: gt.linalg.solve(a, b), lambda: gt.linalg.det(a)):
            call()
            gt.synchronize()
            before = stats["dispatches"]
            call()
            out.append(stats["dispatches"] - before)
        return out

    few, many = counts(30), counts(300)
    assert few == many
    assert max(many) <= 3

@for_dtypes(DTYPES)
@pytest.mark.parametrize("n", [1, 5, 8, 13, 16, 24, 32])
@pytest.mark.parametrize("k", [1, 7, 32, 40])
def test_small_stacks_solve_inv_cholesky(dtype: str, n: int, k: int) -> None:
    """Stacks of small matrices (a row per invocation, several matrices per workgroup; more
    than 32 right-hand columns on the workgroup-per-matrix kernel) against NumPy."""
    rng = _rng(n * 100 + k)
    batch = 19  # not a multiple of the matrices per workgroup
    a = _well(rng, (batch,), n).astype(dtype)
    b = rng.standard_normal((batch, n, k)).astype(dtype)
    spd = _spd(rng, (batch,), n).astype(dtype)
    x = gt.asnumpy(gt.linalg.solve(gt.asarray(a), gt.asarray(b)))
    a64 = a.astype(np.float64)
    _close(x, np.linalg.solve(a64, b.astype(np.float64)), dtype)
    if k == 1:
        _close(gt.asnumpy(gt.linalg.inv(gt.asarray(a))), np.linalg.inv(a64), dtype)
        lower = gt.asnumpy(gt.linalg.cholesky(gt.asarray(spd)))
        _close(lower, np.linalg.cholesky(spd.astype(np.float64)), dtype)


@for_dtypes(DTYPES)
def test_small_stack_with_one_singular_matrix(dtype: str) -> None:
    rng = _rng(11)
    a = _well(rng, (10,), 8)
    a[7, 3] = a[7, 5]  # rows 3 and 5 of matrix 7 equal
    a = a.astype(dtype)
    spd = _spd(rng, (10,), 8)
    spd[4, 2, 2] = -1.0
    with pytest.raises(LinAlgError):
        gt.linalg.inv(gt.asarray(a))
    with pytest.raises(LinAlgError):
        gt.linalg.solve(gt.asarray(a), gt.asarray(np.ones((10, 8, 1), dtype=dtype)))
    with pytest.raises(LinAlgError):
        gt.linalg.cholesky(gt.asarray(spd.astype(dtype)))
    keep = np.arange(10) != 7
    with config.override(linalg_check=False):
        ainv = gt.asnumpy(gt.linalg.inv(gt.asarray(a)))
    _close(ainv[keep], np.linalg.inv(a[keep].astype(np.float64)), dtype)


@pytest.mark.parametrize(("dtype", "n", "batch"), [("float32", 600, 1), ("float64", 300, 1), ("float32", 133, 3),
                                                   ("complex64", 150, 2)])
def test_lu_tournament_levels(dtype: str, n: int, batch: int) -> None:
    """Panels that take several tournament levels (three on the software adapter's
    128-row chunks at n = 600), ragged last chunks and panels, stacks, a complex dtype: solve, inverse and
    slogdet against NumPy."""
    rng = _rng(n + batch)
    a = _well(rng, (batch,), n)
    b = rng.standard_normal((batch, n, 2))
    if dtype.startswith("complex"):
        a = a + 1j * _well(rng, (batch,), n) - 1j * np.eye(n)
        b = b + 1j * rng.standard_normal(b.shape)
    perm = rng.permutation(n)
    a, b = a[:, perm].astype(dtype), b.astype(dtype)
    with config.override(linalg_block=32, linalg_panel_rows=33):
        x = gt.asnumpy(gt.linalg.solve(gt.asarray(a), gt.asarray(b)))
        ainv = gt.asnumpy(gt.linalg.inv(gt.asarray(a)))
        sign, logabs = (gt.asnumpy(t) for t in gt.linalg.slogdet(gt.asarray(a)))
    a64 = a.astype(np.complex128)
    eps = EPS["float64" if dtype in ("float64", "complex128") else "float32"] * n
    assert _max(a64 @ x - b) <= eps * _max(a64) * _max(x)
    assert _max(a64 @ ainv - np.eye(n)) <= eps * _max(a64) * _max(ainv)
    want_sign, want_log = np.linalg.slogdet(a64)
    np.testing.assert_allclose(sign, want_sign, rtol=0, atol=eps)
    np.testing.assert_allclose(logabs, want_log, rtol=eps, atol=eps)


@pytest.mark.parametrize("dtype", DTYPES)
def test_lu_tournament_structured(dtype: str) -> None:
    """Exact zeros and ties in the tournament: a permutation matrix (one nonzero per column,
    a different chunk each time), a matrix of equal magnitudes, and a singular one whose zero
    column lies past the first chunk (LinAlgError, det 0)."""
    n = 150
    rng = _rng(5)
    perm = np.eye(n)[rng.permutation(n)] * np.where(rng.random(n) < 0.5, -2.0, 3.0)
    ties = np.where(rng.random((n, n)) < 0.5, -1.0, 1.0) + np.eye(n) * n
    sing = _well(rng, (), n)
    sing[:, 100] = 0.0
    with config.override(linalg_block=32, linalg_panel_rows=33):
        for a in (perm, ties):
            a = a.astype(dtype)
            x = gt.asnumpy(gt.linalg.inv(gt.asarray(a)))
            assert _max(a.astype(np.float64) @ x - np.eye(n)) <= EPS[dtype] * n * _max(a) * _max(x)
            sign = float(gt.asnumpy(gt.linalg.slogdet(gt.asarray(a)).sign))
            assert sign == np.linalg.slogdet(a.astype(np.float64))[0]
        with pytest.raises(LinAlgError):
            gt.linalg.solve(gt.asarray(sing.astype(dtype)), gt.asarray(np.ones((n, 1), dtype=dtype)))
        assert float(gt.asnumpy(gt.linalg.det(gt.asarray(sing.astype(dtype))))) == 0.0


@pytest.mark.parametrize(("dtype", "k", "batch"), [("float32", 1, 2), ("float64", 3, 1)])
def test_solve_few_columns_block_substitution(dtype: str, k: int, batch: int) -> None:
    """Orders from ``TRSV_BLOCKED_MIN`` on substitute a few right-hand columns block by block
    over many workgroups (a ragged last block, a stack): residuals and NumPy's values."""
    from gputensor._backend import ops_triangular

    n = ops_triangular.TRSV_BLOCKED_MIN + 9
    rng = _rng(k)
    a = _well(rng, (batch,), n).astype(dtype)
    b = rng.standard_normal((batch, n, k)).astype(dtype)
    x = gt.asnumpy(gt.linalg.solve(gt.asarray(a), gt.asarray(b)))
    a64 = a.astype(np.float64)
    assert _max(a64 @ x - b) <= EPS[dtype] * n * _max(a64) * _max(x)
    _close(x, np.linalg.solve(a64, b.astype(np.float64)), dtype)


@pytest.mark.parametrize("dtype", DTYPES + ("complex64",))
def test_qr_panel_steps_rank_deficient(dtype: str) -> None:
    """The QR panel over many workgroups (a dispatch per column, panels of several workgroups'
    rows) with zero and repeated columns and a zero block: Q orthonormal, Q R = A, R upper
    triangular with zeros on its diagonal where a column is dependent."""
    m, n = 150, 70
    rng = _rng(3)
    a = rng.standard_normal((m, n))
    if dtype == "complex64":
        a = a + 1j * rng.standard_normal((m, n))
    a[:, 5] = 0.0
    a[:, 9] = a[:, 2]
    a[40:, 33:40] = 0.0
    a = a.astype(dtype)
    with config.override(linalg_panel_rows=1):
        q, r = (gt.asnumpy(t) for t in gt.linalg.qr(gt.asarray(a)))
    q64 = q.astype(np.complex128)
    eps = EPS["float64" if dtype == "float64" else "float32"]
    assert np.array_equal(np.tril(r, -1), np.zeros_like(r))
    assert _max(q64 @ r - a) <= eps * m * _max(a)
    assert _max(q64.conj().T @ q64 - np.eye(n)) <= eps * m
    assert abs(r[5, 5]) <= eps * m * _max(a)
    assert abs(r[9, 9]) <= eps * m * _max(a)


@for_dtypes(DTYPES)
def test_cholesky_replays_its_program(dtype: str) -> None:
    """A repeated call structure replays the kept program (the same dispatches as the first
    call's steps): new inputs at other offsets are factored as NumPy's, an indefinite matrix still
    raises, and with the check off its factor holds NaN."""
    from gputensor import _dispatch
    from gputensor._backend import ops_cholesky

    n = 2 * 16 + 5
    rng = _rng(31)
    ctx = _dispatch.backend().context
    with config.override(linalg_block=16):
        counts = []
        for shift in range(3):
            a = _spd(rng, (2,), n).astype(dtype)
            pad = gt.asarray(np.zeros(shift * 33 + 1, dtype))  # other pool offsets for the next arrays
            x = gt.asarray(a)
            before = ctx.stats["dispatches"]
            lower = gt.asnumpy(gt.linalg.cholesky(x))
            counts.append(ctx.stats["dispatches"] - before)
            _close(lower, np.linalg.cholesky(a.astype(np.float64)).astype(dtype), dtype)
            del pad
        plans = ops_cholesky._CHOL_PLANS.of(_dispatch.backend())
        assert any(key[:5] == (dtype, n, n, 2, n * n) and plan for key, plan in plans.items())
        assert counts[1] == counts[2] == counts[0]
        bad = _spd(rng, (2,), n).astype(dtype)
        bad[1, 20, 20] = -4.0 * n
        with pytest.raises(LinAlgError):
            gt.linalg.cholesky(gt.asarray(bad))
        with config.override(linalg_check=False):
            lower = gt.asnumpy(gt.linalg.cholesky(gt.asarray(bad)))
    assert np.isnan(lower[1]).any()
    _close(lower[0], np.linalg.cholesky(bad[0].astype(np.float64)).astype(dtype), dtype)


#: (block width, order, stack) of the diagonal-block kernels' edge cases: one row short of,
#: one past and well past a block, a ragged last block, a stack
DIAGONAL_EDGES = [(64, 63, ()), (64, 65, (2,)), (128, 130, ()), (16, 50, ())]


@pytest.mark.parametrize("per_block", [True, False], ids=["per-block", "block-columns"])
@pytest.mark.parametrize("dtype", DTYPES + ("complex64", "complex128"))
@pytest.mark.parametrize(("nb", "n", "stack"), DIAGONAL_EDGES)
def test_cholesky_diagonal_kernels(dtype: str, nb: int, n: int, stack: tuple[int, ...], per_block: bool) -> None:
    """The diagonal-block kernel factors Hermitian positive definite stacks as NumPy does, lower
    and upper, reading only the lower triangle, at orders around the block width, with a
    trailing update after every block (``linalg_chol_outer`` = the block width) or per block
    column (the default)."""
    rng = _rng(n + nb)
    a = rng.standard_normal(stack + (n, n))
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(stack + (n, n))
    a = (a @ np.conj(np.swapaxes(a, -1, -2)) / n + np.eye(n)).astype(dtype)
    junk = a.copy()
    upper_idx = np.triu_indices(n, 1)
    junk[..., upper_idx[0], upper_idx[1]] = 7.0  # only the lower triangle is read
    with config.override(linalg_block=nb, linalg_chol_outer=nb if per_block else 0):
        lower = gt.asnumpy(gt.linalg.cholesky(gt.asarray(junk)))
        upper = gt.asnumpy(gt.linalg.cholesky(gt.asarray(junk), upper=True))
    assert lower.dtype == np.dtype(dtype)
    assert not np.any(np.triu(lower, 1))
    wide = np.complex128 if dtype.startswith("complex") else np.float64
    a64 = a.astype(wide)
    eps = EPS["float64" if dtype in ("float64", "complex128") else "float32"]
    assert _max(lower.astype(wide) @ np.conj(np.swapaxes(lower, -1, -2)) - a64) <= eps * _max(a64) * n ** 0.5
    _close(lower, np.linalg.cholesky(a64).astype(dtype), dtype)
    np.testing.assert_array_equal(upper, np.conj(np.swapaxes(lower, -1, -2)))


#: (block width, columns per trailing update (0: the default), order, row of the negative pivot):
#: inside the first 64-wide diagonal block (past its first row strips), at the first row of the
#: second block and deep in it, an update after every block or per block column; with 48-column
#: block columns of 16-wide blocks, in the first, a middle and the last block of a block column,
#: at the first row of the next one and in the last block
INDEFINITE = ([(64, outer, 130, where) for outer in (64, 0) for where in (40, 64, 100)]
              + [(16, 48, 100, where) for where in (3, 40, 47, 48, 99)])


@pytest.mark.parametrize(("nb", "outer", "n", "where"), INDEFINITE)
def test_cholesky_not_positive_definite_blocks(nb: int, outer: int, n: int, where: int) -> None:
    """A negative pivot raises LinAlgError wherever it lies in the blocks and block columns;
    with the check off the factor holds NaN from that pivot on, and none before it."""
    a = _spd(_rng(where), (), n)
    a[where, where] = -4.0 * n
    a = a.astype(np.float32)
    with config.override(linalg_block=nb, linalg_chol_outer=outer):
        with pytest.raises(LinAlgError):
            gt.linalg.cholesky(gt.asarray(a))
        with config.override(linalg_check=False):
            lower = gt.asnumpy(gt.linalg.cholesky(gt.asarray(a)))
    assert np.isnan(lower).any()
    assert not np.isnan(lower[:where, :where]).any()


def test_cholesky_program_outlives_the_gemm_plan_cache() -> None:
    """A factorization with more gemm shapes than the gemm plan cache keeps (n = 4096 in blocks of
    32 has about 380) is still kept as one program: each gemm's plan is taken right after its
    first call, before later steps evict it."""
    from gputensor import _dispatch
    from gputensor._backend import ops_cholesky, ops_gemm

    n = 2 * 16 + 7
    a = _spd(_rng(12), (), n).astype(np.float32)
    size = ops_gemm._GEMM_PLANS.size
    ops_gemm._GEMM_PLANS.size = 1
    try:
        with config.override(linalg_block=16):
            lower = gt.asnumpy(gt.linalg.cholesky(gt.asarray(a)))
    finally:
        ops_gemm._GEMM_PLANS.size = size
    plans = ops_cholesky._CHOL_PLANS.of(_dispatch.backend())
    assert any(key[:6] == ("float32", n, n, 1, n * n, 16) and plan for key, plan in plans.items())
    with config.override(linalg_block=16):  # the replayed program
        again = gt.asnumpy(gt.linalg.cholesky(gt.asarray(a)))
    _close(lower, np.linalg.cholesky(a.astype(np.float64)).astype(np.float32), "float32")
    np.testing.assert_array_equal(again, lower)


@pytest.mark.parametrize("dtype", DTYPES + ("complex64",))
@pytest.mark.parametrize(("nb", "n", "split"), [(16, 100, 16), (16, 147, 32), (32, 97, 16)])
def test_cholesky_trailing_update_split(dtype: str, nb: int, n: int, split: int) -> None:
    """The trailing update's lower part as batched gemms of a recursive split
    (``linalg_chol_split`` with ``linalg_chol_syrk`` off; odd orders keep the stripes), and as
    one gemm over the lower triangle's tiles (``linalg_chol_syrk``), factors as NumPy does, and
    its call structure is kept and replayed as one program."""
    from gputensor import _dispatch
    from gputensor._backend import ops_cholesky

    rng = _rng(n + split)
    a = rng.standard_normal((n, n))
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal((n, n))
    a = (a @ np.conj(a.T) / n + np.eye(n)).astype(dtype)
    wide = np.complex128 if dtype.startswith("complex") else np.float64
    want = np.linalg.cholesky(a.astype(wide)).astype(dtype)
    for syrk in (False, True):
        with config.override(linalg_block=nb, linalg_chol_split=split, linalg_chol_syrk=syrk):
            lower = gt.asnumpy(gt.linalg.cholesky(gt.asarray(a)))
            again = gt.asnumpy(gt.linalg.cholesky(gt.asarray(a)))
        _close(lower, want, dtype)
        np.testing.assert_array_equal(again, lower)
        if not dtype.startswith("complex"):
            plans = ops_cholesky._CHOL_PLANS.of(_dispatch.backend())
            assert any(key[:6] == (dtype, n, n, 1, n * n, nb) and key[6:8] == (split, syrk) and plan
                       for key, plan in plans.items())


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
@pytest.mark.parametrize(("nb", "n"), [(32, 71), (64, 131), (128, 133)])
def test_cholesky_row_strips_on_32_by_32_invocations(monkeypatch: pytest.MonkeyPatch, dtype: str, nb: int,
                                                     n: int) -> None:
    """The row-strip kernel with the 32 x 32 invocations GPUs get (software adapters take 16 x 16;
    forced here): one, two and four rows and columns per invocation."""
    from gputensor._backend import ops_cholesky

    monkeypatch.setattr(ops_cholesky, "_block_threads", lambda ctx, nb, itemsize=4: 32)
    rng = _rng(n)
    a = rng.standard_normal((n, n))
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal((n, n))
    a = (a @ np.conj(a.T) / n + np.eye(n)).astype(dtype)
    with config.override(linalg_block=nb):
        lower = gt.asnumpy(gt.linalg.cholesky(gt.asarray(a)))
    wide = np.complex128 if dtype.startswith("complex") else np.float64
    _close(lower, np.linalg.cholesky(a.astype(wide)).astype(dtype), dtype)
    assert not np.any(np.triu(lower, 1))


#: (block width, columns per trailing update, order, stack): updates every two, three and four
#: blocks, a ragged last block column, a width that is not a multiple of the block (rounded
#: down), one block column for the whole matrix, a stack
BLOCK_COLUMNS = [(16, 32, 100, ()), (16, 48, 101, (2,)), (16, 64, 37, ()), (16, 40, 81, ()), (32, 256, 131, (3,)),
                 (64, 128, 300, ())]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("nb", "outer", "n", "stack"), BLOCK_COLUMNS)
def test_cholesky_block_columns(dtype: str, nb: int, outer: int, n: int, stack: tuple[int, ...]) -> None:
    """Trailing updates once per block column of ``linalg_chol_outer`` columns (the diagonal
    blocks inside it updating only its columns) factor as NumPy does, read only the lower
    triangle, leave zeros above the diagonal, and the call structure is kept as one program
    whose replay gives the same factor."""
    from gputensor import _dispatch
    from gputensor._backend import ops_cholesky

    a = _spd(_rng(n + outer), stack, n).astype(dtype)
    junk = a.copy()
    upper_idx = np.triu_indices(n, 1)
    junk[..., upper_idx[0], upper_idx[1]] = 7.0
    with config.override(linalg_block=nb, linalg_chol_outer=outer):
        lower = gt.asnumpy(gt.linalg.cholesky(gt.asarray(junk)))
        again = gt.asnumpy(gt.linalg.cholesky(gt.asarray(junk)))
    _close(lower, np.linalg.cholesky(a.astype(np.float64)).astype(dtype), dtype)
    assert not np.any(np.triu(lower, 1))
    np.testing.assert_array_equal(again, lower)
    plans = ops_cholesky._CHOL_PLANS.of(_dispatch.backend())
    width = max(1, outer // nb) * nb
    assert any(key[:6] == (dtype, n, n, _batch(stack), n * n, nb) and key[8] == width and plan
               for key, plan in plans.items())


def _batch(stack: tuple[int, ...]) -> int:
    return int(np.prod(stack)) if stack else 1


def test_cholesky_diagonal_kernel_invocations() -> None:
    """32 x 32 invocations on GPUs that allow 1024 for blocks from 32 of elements up to 8 bytes and
    for 128; 16 x 16 on software adapters, for narrower blocks, complex128 below 128 and with the
    knob ``linalg_chol_threads`` 16."""
    from types import SimpleNamespace

    from gputensor._backend import ops_cholesky

    gpu = SimpleNamespace(is_software=False, limits={"max-compute-invocations-per-workgroup": 1024})
    cpu = SimpleNamespace(is_software=True, limits={"max-compute-invocations-per-workgroup": 1024})
    assert [ops_cholesky._block_threads(gpu, nb, 4) for nb in (16, 32, 64, 128)] == [16, 32, 32, 32]
    assert [ops_cholesky._block_threads(gpu, nb, 16) for nb in (64, 128)] == [16, 32]
    assert ops_cholesky._block_threads(cpu, 64, 4) == 16
    with config.override(linalg_chol_threads=16):
        assert ops_cholesky._block_threads(gpu, 64, 4) == 16
