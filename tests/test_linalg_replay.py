"""Replayed LU and QR programs (``_backend/captured.py``, knob ``linalg_replay``) and the LU / QR
schedule knobs (``linalg_qr_step_rows``, ``linalg_tslu_rows``, ``linalg_trsv_sweep``).

A repeated call structure replays the dispatches its first call recorded: its results must be
the reference path's bit for bit (the same dispatches), for new inputs at other pool offsets, for
stacks (interior pointers) and for singular input (the flag still raised). The schedules are
checked by residuals and against NumPy at sizes that cross their edges: tall, wide, square and
ragged orders, rank-deficient input, 'reduced' and 'complete', float32 / float64.
"""

from __future__ import annotations

import numpy as np
import pytest

import gputensor as gt
from gputensor import _dispatch
from gputensor._backend import captured, config, factor_common, ops_triangular
from gputensor.linalg import LinAlgError

from _compare import for_dtypes, tolerance

DTYPES = ("float32", "float64")
#: residuals relative to the operands' size: a few hundred units of roundoff
EPS = {"float32": 3e-5, "float64": 1e-12}


def _max(a: np.ndarray) -> float:
    return float(np.max(np.abs(a)))


def _well(rng: np.random.Generator, shape: tuple[int, ...], n: int) -> np.ndarray:
    return np.eye(n) + rng.standard_normal(shape + (n, n)) / (2 * np.sqrt(n))


def _programs() -> dict:
    return factor_common.PROGRAMS.of(_dispatch.backend())


def _check_qr(a: np.ndarray, q: np.ndarray, r: np.ndarray, dtype: str, mode: str) -> None:
    m, n = a.shape[-2:]
    k = min(m, n)
    kq = k if mode == "reduced" else m
    assert q.shape == a.shape[:-2] + (m, kq) and r.shape == a.shape[:-2] + (kq, n)
    eps = EPS[dtype]
    q64 = q.astype(np.float64)
    assert np.array_equal(np.tril(r, -1), np.zeros_like(r))
    assert _max(q64 @ r - a) <= eps * m * max(_max(a), 1.0)
    assert _max(np.swapaxes(q64, -1, -2) @ q64 - np.eye(kq)) <= eps * m


@for_dtypes(DTYPES)
@pytest.mark.parametrize(("m", "n"), [(97, 40), (40, 97), (70, 70), (131, 66)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr_replay_matches_the_reference_path(dtype: str, m: int, n: int, mode: str) -> None:
    """The replayed QR program gives the reference path's factors bit for bit, for new inputs at
    other pool offsets; the program is kept after the first call."""
    rng = np.random.default_rng(m * n)
    with config.override(linalg_qr_step_rows=48):  # (panels of both kernels)
        with config.override(linalg_replay=False):
            a = rng.standard_normal((m, n)).astype(dtype)
            want = [gt.asnumpy(t) for t in gt.linalg.qr(gt.asarray(a), mode=mode)]
        for shift in range(3):
            pad = gt.asarray(np.zeros(shift * 37 + 1, dtype))  # (other pool offsets)
            got = [gt.asnumpy(t) for t in gt.linalg.qr(gt.asarray(a), mode=mode)]
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
            del pad
        b = rng.standard_normal((m, n)).astype(dtype)
        q, r = (gt.asnumpy(t) for t in gt.linalg.qr(gt.asarray(b), mode=mode))
    _check_qr(b, q, r, dtype, mode)
    assert any(key[0][:4] == ("qr", dtype, m, n) and isinstance(plan, captured.Captured)
               for key, plan in _programs().items())


@for_dtypes(DTYPES)
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr_replay_of_a_stack_and_rank_deficient_input(dtype: str, mode: str) -> None:
    """A stack (each matrix at an interior offset of one allocation) with zero and repeated
    columns, twice: both calls factor every matrix (Q orthonormal, Q R = A, zeros on R's diagonal
    where a column is dependent)."""
    m, n = 75, 45
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, m, n))
    a[1, :, 5] = 0.0
    a[2, :, 9] = a[2, :, 2]
    a[0, 40:, 33:40] = 0.0
    a = a.astype(dtype)
    with config.override(linalg_qr_step_rows=40):
        for _ in range(2):
            q, r = (gt.asnumpy(t) for t in gt.linalg.qr(gt.asarray(a), mode=mode))
            _check_qr(a, q, r, dtype, mode)
    eps = EPS[dtype]
    assert abs(r[1, 5, 5]) <= eps * m * _max(a)
    assert abs(r[2, 9, 9]) <= eps * m * _max(a)


@for_dtypes(DTYPES)
@pytest.mark.parametrize("step_rows", [1, 64, 10**9])
@pytest.mark.parametrize("outer", [32, 64])
@pytest.mark.parametrize(("m", "n", "mode"), [(141, 83, "reduced"), (83, 141, "complete"), (150, 150, "reduced")])
def test_qr_step_rows_and_outer_blocks(dtype: str, step_rows: int, outer: int, m: int, n: int, mode: str) -> None:
    """``linalg_qr_step_rows``: every panel over many workgroups, the tall panels only (the
    switch inside one factorization), or none; ``linalg_qr_outer``: trailing updates after
    every panel or after two (joined reflectors); ragged last blocks (an outer block of one panel
    or of a panel and a narrow one), tall, wide and square."""
    rng = np.random.default_rng(step_rows + outer)
    a = rng.standard_normal((m, n)).astype(dtype)
    with config.override(linalg_qr_step_rows=step_rows, linalg_qr_outer=outer):
        q, r = (gt.asnumpy(t) for t in gt.linalg.qr(gt.asarray(a), mode=mode))
    _check_qr(a, q, r, dtype, mode)
    if mode == "complete":
        return
    np.testing.assert_allclose(np.abs(np.diag(r)), np.abs(np.diag(np.linalg.qr(a.astype(np.float64))[1])),
                               rtol=tolerance(dtype, "summation")[0] * 10, atol=EPS[dtype] * m)


@for_dtypes(DTYPES)
def test_lu_replay_solve_inv_det(dtype: str) -> None:
    """solve, inv and det replay their LU programs: the reference path's values bit for bit, a
    singular matrix still raises (its flag) and its determinant is 0."""
    n = 77
    rng = np.random.default_rng(11)
    a = _well(rng, (), n).astype(dtype)
    b = rng.standard_normal((n, 3)).astype(dtype)
    with config.override(linalg_block=16, linalg_panel_rows=33):
        with config.override(linalg_replay=False):
            want = (gt.asnumpy(gt.linalg.solve(gt.asarray(a), gt.asarray(b))), gt.asnumpy(gt.linalg.inv(gt.asarray(a))),
                    float(gt.linalg.det(gt.asarray(a))))
        for shift in range(3):
            pad = gt.asarray(np.zeros(shift * 29 + 1, dtype))
            got = (gt.asnumpy(gt.linalg.solve(gt.asarray(a), gt.asarray(b))), gt.asnumpy(gt.linalg.inv(gt.asarray(a))),
                   float(gt.linalg.det(gt.asarray(a))))
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]) and got[2] == want[2]
            del pad
        sing = a.copy()
        sing[:, 40] = 0.0
        with pytest.raises(LinAlgError):
            gt.linalg.solve(gt.asarray(sing), gt.asarray(b))
        with pytest.raises(LinAlgError):
            gt.linalg.inv(gt.asarray(sing))
        assert float(gt.linalg.det(gt.asarray(sing))) == 0.0
    a64 = a.astype(np.float64)
    assert _max(a64 @ want[0] - b) <= EPS[dtype] * n * _max(a64) * _max(want[0])
    kinds = {key[0][0] for key, plan in _programs().items() if isinstance(plan, captured.Captured)}
    assert {"lu", "lu_solve"} <= kinds


def test_replay_off_and_spied_dispatches_record_every_step() -> None:
    """With ``linalg_replay`` off, or a wrapped ``ctx.dispatch`` (a spy), every dispatch goes
    through ``WgpuContext.dispatch``; the replay records as many dispatches as the reference."""
    ctx = _dispatch.backend().context
    n = 70
    a = gt.asarray(np.random.default_rng(2).standard_normal((n, n)).astype("float32"))
    counts = {}
    for replay in (False, True, True):
        with config.override(linalg_replay=replay):
            before = ctx.stats["dispatches"]
            gt.linalg.qr(a)
            counts.setdefault(replay, []).append(ctx.stats["dispatches"] - before)
    assert counts[False][0] == counts[True][0] == counts[True][1]
    seen = []
    original = ctx.dispatch

    def spy(name, *args, **kwargs):
        seen.append(name)
        return original(name, *args, **kwargs)

    ctx.dispatch = spy
    try:
        gt.linalg.qr(a)
    finally:
        del ctx.dispatch
    assert "linalg_qr_panel" in seen


@pytest.mark.parametrize(("dtype", "k", "batch"), [("float32", 1, 2), ("float64", 1, 1), ("complex64", 2, 1)])
@pytest.mark.parametrize("sweep", [True, False])
def test_trsv_block_sweep(dtype: str, k: int, batch: int, sweep: bool) -> None:
    """Block substitution (orders from ``TRSV_BLOCKED_MIN``, a ragged last block) with the
    diagonal blocks solved column by column by a workgroup, or by one invocation."""
    n = ops_triangular.TRSV_BLOCKED_MIN + 9
    rng = np.random.default_rng(k + batch)
    a = _well(rng, (batch,), n)
    b = rng.standard_normal((batch, n, k))
    if dtype == "complex64":
        a = a + 1j * rng.standard_normal(a.shape) / (2 * np.sqrt(n))
        b = b + 1j * rng.standard_normal(b.shape)
    a, b = a.astype(dtype), b.astype(dtype)
    with config.override(linalg_trsv_sweep=sweep):
        x = gt.asnumpy(gt.linalg.solve(gt.asarray(a), gt.asarray(b)))
    a128 = a.astype(np.complex128)
    eps = EPS["float64" if dtype == "float64" else "float32"]
    assert _max(a128 @ x - b) <= eps * n * _max(a128) * _max(x)


@for_dtypes(DTYPES)
@pytest.mark.parametrize("rows", [64, 512])
@pytest.mark.parametrize(("final", "factored"), [(True, True), (False, True), (True, False)])
def test_tslu_rows(dtype: str, rows: int, final: bool, factored: bool) -> None:
    """``linalg_tslu_rows``: tournament levels of 64 rows (many levels) or 512 (fewer);
    ``linalg_tslu_final``: the second level in one workgroup or in chunks;
    ``linalg_tslu_factored``: the pivot block factored by the last level or by the scaling
    kernel; a stack, against NumPy's solve and det."""
    n = 301
    rng = np.random.default_rng(rows)
    a = _well(rng, (2,), n).astype(dtype)
    b = rng.standard_normal((2, n, 2)).astype(dtype)
    limit = int(_dispatch.backend().context.limits.get("max-compute-invocations-per-workgroup", 256))
    if rows > limit:
        pytest.skip(f"the adapter allows {limit} invocations per workgroup")
    with config.override(linalg_tslu_rows=rows, linalg_tslu_final=final, linalg_tslu_factored=factored,
                         linalg_panel_rows=33):
        x = gt.asnumpy(gt.linalg.solve(gt.asarray(a), gt.asarray(b)))
        d = gt.asnumpy(gt.linalg.det(gt.asarray(a)))
    a64 = a.astype(np.float64)
    assert _max(a64 @ x - b) <= EPS[dtype] * n * _max(a64) * _max(x)
    np.testing.assert_allclose(d, np.linalg.det(a64), rtol=EPS[dtype] * n)


def test_qr_outer_and_step_chunk_must_be_supported() -> None:
    a = gt.asarray(np.ones((40, 40), "float32"))
    with config.override(linalg_qr_outer=48):
        with pytest.raises(ValueError, match="QR_OUTER"):
            gt.linalg.qr(a)
    with config.override(linalg_qr_step_chunk=48):
        with pytest.raises(ValueError, match="QR_STEP_CHUNK"):
            gt.linalg.qr(a)


def test_tslu_rows_must_be_a_power_of_two() -> None:
    a = gt.asarray(_well(np.random.default_rng(0), (), 300).astype("float32"))
    with config.override(linalg_tslu_rows=100, linalg_panel_rows=33):
        with pytest.raises(ValueError, match="TSLU_ROWS"):
            gt.linalg.det(a)


@pytest.mark.parametrize("dtype", DTYPES + ("complex64",))
@pytest.mark.parametrize(("knob", "value", "step_rows"), [("linalg_qr_panel_fused", True, 10**9),
                                                          ("linalg_qr_panel_fused", False, 10**9),
                                                          ("linalg_qr_step_unrolled", True, 1),
                                                          ("linalg_qr_step_unrolled", False, 1),
                                                          ("linalg_qr_step_chunk", 32, 1),
                                                          ("linalg_qr_step_chunk", 128, 1)])
@pytest.mark.parametrize(("m", "n", "mode"), [(150, 70, "reduced"), (70, 150, "complete")])
def test_qr_panel_kernel_variants(dtype: str, knob: str, value: object, step_rows: int, m: int, n: int,
                                  mode: str) -> None:
    """``linalg_qr_panel_fused``: the one-workgroup panel with each column's norm from the
    previous update, or from a pass of its own; ``linalg_qr_step_unrolled``: the panel over many
    workgroups with its partial sums reduced by every invocation and unrolled row loops, or not;
    ``linalg_qr_step_chunk``: 32 or 128 panel rows per workgroup of the steps; zero and repeated
    columns (zeros on R's diagonal), a ragged last panel."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((m, n))
    if dtype == "complex64":
        a = a + 1j * rng.standard_normal((m, n))
    a[:, 5] = 0.0
    a[:, 9] = a[:, 2]
    a = a.astype(dtype)
    with config.override(**{knob: value}, linalg_qr_step_rows=step_rows):
        q, r = (gt.asnumpy(t) for t in gt.linalg.qr(gt.asarray(a), mode=mode))
    q128 = q.astype(np.complex128)
    eps = EPS["float64" if dtype == "float64" else "float32"]
    kq = q.shape[1]
    assert np.array_equal(np.tril(r, -1), np.zeros_like(r))
    assert _max(q128 @ r - a) <= eps * m * _max(a)
    assert _max(q128.conj().T @ q128 - np.eye(kq)) <= eps * m
    assert abs(r[5, 5]) <= eps * m * _max(a)
    assert abs(r[9, 9]) <= eps * m * _max(a)


@for_dtypes(DTYPES)
@pytest.mark.parametrize("tree_rows", [0, 256, 10**9])
def test_lu_tree_rows(dtype: str, tree_rows: int) -> None:
    """``linalg_lu_tree_rows``: the default (tournaments from 64 rows), from 256, or never (every
    panel on one workgroup); a stack with a ragged last block: solve, inv and det against NumPy."""
    n = 150
    rng = np.random.default_rng(tree_rows % 97)
    a = _well(rng, (2,), n).astype(dtype)
    b = rng.standard_normal((2, n, 1)).astype(dtype)
    with config.override(linalg_lu_tree_rows=tree_rows):
        x = gt.asnumpy(gt.linalg.solve(gt.asarray(a), gt.asarray(b)))
        inv = gt.asnumpy(gt.linalg.inv(gt.asarray(a)))
        d = gt.asnumpy(gt.linalg.det(gt.asarray(a)))
    a64 = a.astype(np.float64)
    assert _max(a64 @ x - b) <= EPS[dtype] * n * _max(a64) * _max(x)
    assert _max(a64 @ inv - np.eye(n)) <= EPS[dtype] * n * _max(a64) * _max(inv)
    np.testing.assert_allclose(d, np.linalg.det(a64), rtol=EPS[dtype] * n)


def test_replay_when_scratch_is_zero_filled_by_a_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scratch allocation whose reused block is zero-filled by a kernel (as on GPUs, from
    ``KERNEL_FILL_MIN`` bytes) still gives a program: the fill belongs to the allocation, which
    the replay makes again; the replayed factors are the reference path's."""
    from gputensor._backend import ops_elementwise

    backend = _dispatch.backend()
    fills = []

    def kernel_zero(self, ctx, buffer, ptr, nbytes):  # noqa: ANN001, ANN202 - the method's signature
        fills.append(nbytes)
        ops_elementwise.elementwise(self, "x0", "u32", [ops_elementwise.ScalarOperand(0, "uint32")], ["u32"],
                                    ops_elementwise.ArrayOperand(ptr, "uint32", (1,)), [nbytes // 4])

    monkeypatch.setattr(type(backend), "_zero", kernel_zero)
    m, n = 91, 70  # (two panels per trailing update: V's scratch is zero-filled)
    a = np.random.default_rng(4).standard_normal((m, n)).astype("float32")
    with config.override(linalg_replay=False):
        want = [gt.asnumpy(t) for t in gt.linalg.qr(gt.asarray(a))]
    for _ in range(2):
        block = gt.empty((m * n,), dtype=gt.float32)  # (a block of V's size back in the pool)
        del block
        got = [gt.asnumpy(t) for t in gt.linalg.qr(gt.asarray(a))]
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert fills
    assert any(key[0][:4] == ("qr", "float32", m, n) and isinstance(plan, captured.Captured)
               for key, plan in _programs().items())


def test_replay_frees_its_scratch() -> None:
    """A replayed call allocates each scratch block for its dispatches' span and frees it: the
    pool's used bytes return to where they were after every call."""
    pool = gt.get_default_memory_pool()
    a = gt.asarray(np.random.default_rng(8).standard_normal((100, 80)).astype("float32"))
    m = gt.asarray(_well(np.random.default_rng(9), (), 90).astype("float32"))
    b = gt.asarray(np.ones((90, 1), "float32"))
    with config.override(linalg_block=16, linalg_panel_rows=33):
        for _ in range(2):  # (planned, then kept)
            q, r = gt.linalg.qr(a)
            x = gt.linalg.solve(m, b)
            del q, r, x
        gt.synchronize()
        used = pool.used_bytes()
        for _ in range(3):
            q, r = gt.linalg.qr(a)
            x = gt.linalg.solve(m, b)
            del q, r, x
        gt.synchronize()
    assert pool.used_bytes() == used
