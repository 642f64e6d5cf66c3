"""LU with partial pivoting (getrf) of stacks of matrices, its solve and determinant:
``lu_blocked`` (right-looking, ``LU_BLOCK`` columns: a panel up to ``LU_TREE_MIN_ROWS`` rows on
one workgroup, ``linalg_lu_block.wgsl``, each row updated in registers by the invocation that
owns it, then the row swaps of the other columns; a taller panel elects its pivot rows by a
tournament over many workgroups, CALU's TSLU, ``linalg_lu_tslu.wgsl`` and
``linalg_lu_apply.wgsl``; the block row by a unit-lower triangular solve, the trailing matrix by
gemm), ``lu_solve`` (row swaps, then forward and backward substitution) and ``det_from_lu``.
``lu_blocked`` and ``lu_solve`` keep each call structure's first call as the dispatches it
recorded and replay them (``captured.replayed``, knob ``linalg_replay``). No wgpu here.
"""

from __future__ import annotations

from typing import Any

from . import captured, config, ops_gemm
from .errors import invalid_argument
from .factor_common import NB, PROGRAMS, bind, block_width, invocations, itemsize_of, math_defines, panel_wg, replay_on
from .factor_gemm import gemm
from .linalg_scalar import scalar_defines
from .ops_triangular import TRSV_BLOCKED_MIN, TRSV_MAX_K, laswp, trsm, trsv, trsv_blocked

__all__ = ["LU_BLOCK", "LU_TREE_MIN_ROWS", "det_from_lu", "lu_blocked", "lu_solve", "tslu_rows"]

#: Default block width of ``lu_blocked`` (the panel kernel holds a row of the panel in
#: registers: at most 32 columns).
LU_BLOCK = 32

def _lu_settings() -> tuple[Any, ...]:
    """The settings the LU routines read beside their arguments (part of their program keys)."""
    return (int(config.value("linalg_block")), int(config.value("linalg_panel_rows")),
            int(config.value("linalg_lu_tree_rows")),
            int(config.value("linalg_tslu_rows")), bool(config.value("linalg_tslu_final")),
            bool(config.value("linalg_tslu_factored")),
            bool(config.value("linalg_trsv_sweep")),
            *ops_gemm.plan_settings())


def lu_blocked(backend: Any, dtype: str, n: int, a: int, ld: int, piv: int, flag: int, batch: int = 1,
               bs: int = 0) -> None:
    """LU factorization with partial pivoting of the ``batch`` n x n matrices at ``a`` (matrix q
    ``q * bs`` elements on) in place (getrf: unit L below the diagonal, U on and above it);
    ``piv`` (batch x n u32) receives the absolute row swapped with row i at step i. ``flag`` is
    or-ed with 1 for a zero pivot column.

    Right-looking, blocks of ``min(block_width(LU_BLOCK), 32)`` columns, each step a few
    dispatches for the whole stack: the panel on one workgroup per matrix
    (``linalg_lu_block.wgsl``) and the row swaps of the other columns (``linalg_laswp.wgsl``),
    or, for panels taller than ``GPUTENSOR_LINALG_PANEL_ROWS`` (else ``GPUTENSOR_LINALG_LU_TREE_ROWS``,
    else ``LU_TREE_MIN_ROWS``;
    not complex128), pivots elected by a tournament over many workgroups (``_Tournament``:
    partial pivoting inside chunks of rows, then among the chunks' winners), the swaps of all
    columns and the panel's scaling over many workgroups; then the block row by a unit-lower
    triangular solve and the trailing matrix by gemm. The tournament's pivots may differ from
    getrf's (they are partial-pivoting pivots of the winners, not of every row), and ``piv``
    records the swaps made.

    A repeated call structure replays the dispatches its first call recorded
    (``captured.replayed``, knob ``linalg_replay``)."""
    itemsize = itemsize_of(backend, dtype)
    if batch < 1 or n < 1:
        return
    key = ("lu", dtype, n, ld, batch, bs, *_lu_settings())
    operands = [("a", a, ((batch - 1) * bs + (n - 1) * ld + n) * itemsize, itemsize), ("piv", piv, batch * n * 4, 4),
                ("flag", flag, 4, 4)]
    captured.replayed(backend, PROGRAMS, key, operands,
                      lambda: _lu_blocked(backend, dtype, n, a, ld, piv, flag, batch, bs), replay_on())


def _lu_blocked(backend: Any, dtype: str, n: int, a: int, ld: int, piv: int, flag: int, batch: int,
                bs: int) -> None:
    """``lu_blocked``'s dispatches, recorded one by one."""
    chunk = backend.context.max_workgroups_per_dim
    if batch > chunk:  # (a grid dimension's worth of matrices at a time)
        for q0 in range(0, batch, chunk):
            _lu_blocked(backend, dtype, n, a + q0 * bs * itemsize_of(backend, dtype), ld, piv + q0 * n * 4, flag,
                        min(chunk, batch - q0), bs)
        return
    itemsize = itemsize_of(backend, dtype)
    ctx = backend.context
    nb = min(block_width(LU_BLOCK), NB)
    a_reg, a_first = bind(backend, a, (batch - 1) * bs + (n - 1) * ld + n, itemsize)
    p_reg, p_first = bind(backend, piv, batch * n, 4)
    f_reg = bind(backend, flag, 1, 4)[0]
    wg = panel_wg(ctx)
    if itemsize >= 8 and wg > 512:
        wg = 512 if itemsize == 8 else 256  # (a row of doubles / complex in registers per invocation)
    defines = {**scalar_defines(dtype), "WG": wg, "JB": nb}
    tree_rows = int(config.value("linalg_panel_rows")) or int(config.value("linalg_lu_tree_rows")) or LU_TREE_MIN_ROWS
    tree = _Tournament(backend, dtype, n, nb, batch) if n > tree_rows and nb * nb * itemsize <= 8192 else None
    try:
        for j0 in range(0, n, nb):
            jb = min(nb, n - j0)
            if tree is not None and n - j0 > tree_rows:
                tree.panel(a_reg, a_first + j0 * ld + j0, ld, bs, n - j0, jb, p_reg, p_first + j0, n, j0, f_reg)
                laswp(backend, dtype, a, n, n, ld, piv, j0, j0 + jb, (0, 0), batch, bs, n)
                tree.apply(a_reg, a_first + j0 * ld + j0, ld, bs, n - j0, jb, f_reg)
            else:
                words = [a_first + j0 * ld + j0, ld, n - j0, jb, j0, p_first + j0, bs, n]
                ctx.dispatch("linalg_lu_block", words, [a_reg, p_reg, f_reg], (batch, 1, 1), defines)
                laswp(backend, dtype, a, n, n, ld, piv, j0, j0 + jb, (j0, j0 + jb), batch, bs, n)
            _lu_update(backend, dtype, n, a, ld, j0, jb, batch, bs)
    finally:
        if tree is not None:
            tree.free()


def _lu_update(backend: Any, dtype: str, n: int, a: int, ld: int, j0: int, jb: int, batch: int, bs: int) -> None:
    """The block row (unit-lower triangular solve) and the trailing matrix (gemm) after the
    panel of columns j0 .. j0 + jb of getrf."""
    itemsize = itemsize_of(backend, dtype)
    rest = n - j0 - jb
    if not rest:
        return
    d = a + (j0 * ld + j0) * itemsize
    u12 = d + jb * itemsize
    trsm(backend, dtype, 0, jb, rest, d, ld, u12, ld, 1, batch, bs, bs)
    l21 = d + jb * ld * itemsize
    gemm(backend, dtype, rest, rest, jb, -1.0, l21, (ld, 1), u12, (ld, 1), 1.0,
          l21 + jb * itemsize, (ld, 1), batch, (bs, bs, bs))


#: Least panel height whose pivots ``lu_blocked`` elects by a tournament over many workgroups
#: (``GPUTENSOR_LINALG_LU_TREE_ROWS``, or ``GPUTENSOR_LINALG_PANEL_ROWS``, overrides it). On the
#: H200 the one-workgroup panel took about 320 us at every height up to 256 rows, a tournament
#: level about 80 us and the panel's swaps and scaling 60 (benchmarks/results/h200-2026-12-01c-*).
LU_TREE_MIN_ROWS = 64
#: Candidate rows per workgroup of a tournament level: a row per invocation.
TSLU_ROWS_GPU = 256
TSLU_ROWS_SOFTWARE = 128


def tslu_rows(ctx: Any) -> int:
    """Candidate rows per workgroup of a tournament level: ``GPUTENSOR_LINALG_TSLU_ROWS`` where
    set (a power of two from 64 up to the adapter's workgroup size), else TSLU_ROWS_GPU or, on
    software adapters, TSLU_ROWS_SOFTWARE. BackendError (invalid argument) for another value."""
    rows = int(config.value("linalg_tslu_rows"))
    if not rows:
        return TSLU_ROWS_SOFTWARE if ctx.is_software else TSLU_ROWS_GPU
    limit = invocations(ctx)
    if rows < 64 or rows > limit or rows & (rows - 1):
        raise invalid_argument(f"GPUTENSOR_LINALG_TSLU_ROWS={rows} must be a power of two from 64 to {limit}")
    return rows


class _Tournament:
    """Scratch and dispatches of tournament-pivoted LU panels (CALU's TSLU) for ``lu_blocked``:
    the panel's rows in chunks of ``rows`` (one workgroup each) elect jb pivot candidates by
    partial pivoting, the candidates of ``rows // jb`` chunks again, ... until one workgroup
    elects the jb pivots and writes getrf's swaps (``linalg_lu_tslu.wgsl``; knob
    ``linalg_tslu_final``: a level after the first takes all its candidates in one workgroup
    when they fit, so that panels up to 32 ``rows`` tall take two levels); after the swaps
    (``laswp``) many workgroups factor the pivot block and scale the rows below
    (``linalg_lu_apply.wgsl``). Each level is one dispatch for the whole stack; the chosen
    pivot rows span the panel's row space, so a panel of full column rank gets nonzero pivots."""

    def __init__(self, backend: Any, dtype: str, n: int, jb: int, batch: int) -> None:
        self.backend, self.dtype, self.jb, self.batch = backend, dtype, jb, batch
        ctx = backend.context
        self.itemsize = itemsize_of(backend, dtype)
        self.rows = tslu_rows(ctx)
        #: most candidates a later level takes in one workgroup (0: levels of ``rows`` each)
        #: (a row of the panel in each invocation's registers: fewer invocations for wider elements)
        self.final = min(invocations(ctx), 4096 // self.itemsize) if config.value("linalg_tslu_final") else 0
        self.slots = -(-n // self.rows) * jb  # candidate rows a level-0 output holds per matrix
        factored = "true" if config.value("linalg_tslu_factored") else "false"
        self.defines = {**scalar_defines(dtype), "WG": self.rows, "JB": jb, "FACTORED": factored}
        self.apply_defines = {**scalar_defines(dtype), "WG": 128, "JB": jb, "FACTORED": factored}
        elems = batch * self.slots * jb
        self.cand = [backend.alloc(elems * self.itemsize, zero=False) for _ in range(2)]
        self.index = [backend.alloc(batch * self.slots * 4, zero=False) for _ in range(2)]
        self.c_bind = [bind(backend, c, elems, self.itemsize) for c in self.cand]
        self.i_bind = [bind(backend, i, batch * self.slots, 4) for i in self.index]
        self.last = 0

    def panel(self, a_reg: Any, a_first: int, ld: int, bs: int, mp: int, jb: int, p_reg: Any, p_first: int,
              p_bs: int, row0: int, f_reg: Any) -> None:
        """Elect the pivots of the mp x jb panel at element ``a_first`` (of ``a_reg``) and write
        getrf's swaps of its rows (absolute: ``row0`` + position) at ``p_first``."""
        ctx = self.backend.context
        rows, src, s_first, s_ld, s_bs, si = mp, a_reg, a_first, ld, bs, None
        level = 0
        while True:
            defines = self.defines
            groups = -(-rows // self.rows)
            if level and self.final and rows <= self.final:  # (every candidate in one workgroup)
                groups = 1
                defines = {**self.defines, "WG": max(64, 1 << (rows - 1).bit_length())}
            dst = (level + 1) % 2
            c_reg, c_first = self.c_bind[dst]
            i_reg, i_first = self.i_bind[dst]
            si_reg, si_first = si if si is not None else self.i_bind[level % 2]
            words = [rows, jb, s_first, s_ld, s_bs, int(si is not None), si_first, self.slots,
                     c_first, self.slots * self.jb, i_first, self.slots, p_first, p_bs, row0, int(groups == 1)]
            ctx.dispatch("linalg_lu_tslu", words, [src, si_reg, c_reg, i_reg, p_reg], (groups, self.batch, 1),
                         defines)
            if groups == 1:
                self.last = dst
                return
            rows, src, s_first, s_ld, s_bs, si = groups * self.jb, c_reg, c_first, self.jb, self.slots * self.jb, (
                i_reg, i_first)
            level += 1

    def apply(self, a_reg: Any, a_first: int, ld: int, bs: int, mp: int, jb: int, f_reg: Any) -> None:
        """Factor the elected pivot block (now the panel's top) and scale the rows below it."""
        ctx = self.backend.context
        w_reg, w_first = self.c_bind[self.last]
        words = [a_first, ld, mp, jb, w_first, self.slots * self.jb, bs, 0]
        groups = max(1, min(-(-(mp - jb) // 128), 1024))
        ctx.dispatch("linalg_lu_apply", words, [a_reg, w_reg, f_reg], (groups, self.batch, 1), self.apply_defines)

    def free(self) -> None:
        for ptr in (*self.cand, *self.index):
            self.backend.free(ptr)


def lu_solve(backend: Any, dtype: str, n: int, k: int, lu: int, ld: int, piv: int, x: int, x_ld: int,
             batch: int = 1, lu_bs: int = 0, x_bs: int = 0) -> None:
    """X := A^-1 X for the n x k matrix at ``x`` from ``lu_blocked``'s factors of A (``lu``,
    ``piv``), for ``batch`` of them (LU_q ``q * lu_bs``, X_q ``q * x_bs`` elements on, pivots
    ``q * n`` entries on): row swaps, then forward (unit L) and backward (U) substitution:
    ``trsv`` for up to TRSV_MAX_K columns, else blocked (trsm of the diagonal blocks, gemm for
    the rest). A repeated call structure replays the dispatches its first call recorded
    (``captured.replayed``, knob ``linalg_replay``)."""
    itemsize = itemsize_of(backend, dtype)
    if batch < 1 or n < 1 or k < 1:
        return
    key = ("lu_solve", dtype, n, k, ld, x_ld, batch, lu_bs, x_bs, *_lu_settings())
    operands = [("lu", lu, ((batch - 1) * lu_bs + (n - 1) * ld + n) * itemsize, itemsize),
                ("piv", piv, batch * n * 4, 4), ("x", x, ((batch - 1) * x_bs + (n - 1) * x_ld + k) * itemsize, itemsize)]
    captured.replayed(backend, PROGRAMS, key, operands,
                      lambda: _lu_solve(backend, dtype, n, k, lu, ld, piv, x, x_ld, batch, lu_bs, x_bs), replay_on())


def _lu_solve(backend: Any, dtype: str, n: int, k: int, lu: int, ld: int, piv: int, x: int, x_ld: int,
              batch: int, lu_bs: int, x_bs: int) -> None:
    """``lu_solve``'s dispatches, recorded one by one."""
    itemsize = itemsize_of(backend, dtype)
    chunk = backend.context.max_workgroups_per_dim
    if batch > chunk:  # (a grid dimension's worth of matrices at a time)
        for q0 in range(0, batch, chunk):
            _lu_solve(backend, dtype, n, k, lu + q0 * lu_bs * itemsize, ld, piv + q0 * n * 4,
                      x + q0 * x_bs * itemsize, x_ld, min(chunk, batch - q0), lu_bs, x_bs)
        return
    laswp(backend, dtype, x, n, k, x_ld, piv, 0, n, (0, 0), batch, x_bs, n)
    if k <= TRSV_MAX_K:
        solve = trsv_blocked if n >= TRSV_BLOCKED_MIN else trsv
        solve(backend, dtype, 0, n, k, lu, ld, x, x_ld, 1, batch, lu_bs, x_bs)
        solve(backend, dtype, 2, n, k, lu, ld, x, x_ld, 1, batch, lu_bs, x_bs)
        return
    starts = list(range(0, n, NB))
    for j0 in starts:
        jb = min(NB, n - j0)
        d = lu + (j0 * ld + j0) * itemsize
        xb = x + j0 * x_ld * itemsize
        trsm(backend, dtype, 0, jb, k, d, ld, xb, x_ld, 1, batch, lu_bs, x_bs)
        rest = n - j0 - jb
        if rest:
            gemm(backend, dtype, rest, k, jb, -1.0, d + jb * ld * itemsize, (ld, 1), xb, (x_ld, 1), 1.0,
                  xb + jb * x_ld * itemsize, (x_ld, 1), batch, (lu_bs, x_bs, x_bs))
    for j0 in reversed(starts):
        jb = min(NB, n - j0)
        d = lu + (j0 * ld + j0) * itemsize
        xb = x + j0 * x_ld * itemsize
        trsm(backend, dtype, 2, jb, k, d, ld, xb, x_ld, 1, batch, lu_bs, x_bs)
        if j0:
            gemm(backend, dtype, j0, k, jb, -1.0, lu + j0 * itemsize, (ld, 1), xb, (x_ld, 1), 1.0, x, (x_ld, 1),
                  batch, (lu_bs, x_bs, x_bs))


def det_from_lu(backend: Any, dtype: str, n: int, lu: int, ld: int, piv: int, r: int, batch: int = 1,
                bs: int = 0) -> None:
    """r[3 q + 0, 1, 2] := det, sign, log|det| of matrix q < batch from ``lu_blocked``'s factors
    (LU_q ``q * bs`` elements on, pivots ``q * n`` entries on), one workgroup per matrix
    (complex: sign det / |det|, log|det| in the real part). A repeated call structure replays
    the dispatches its first call recorded (``captured.replayed``, knob ``linalg_replay``)."""
    itemsize = itemsize_of(backend, dtype)
    if batch < 1 or n < 1:
        return
    key = ("det", dtype, n, ld, batch, bs)
    operands = [("lu", lu, ((batch - 1) * bs + (n - 1) * ld + n) * itemsize, itemsize), ("piv", piv, batch * n * 4, 4),
                ("r", r, 3 * batch * itemsize, itemsize)]
    captured.replayed(backend, PROGRAMS, key, operands, lambda: _det_from_lu(backend, dtype, n, lu, ld, piv, r, batch, bs),
                      replay_on())


def _det_from_lu(backend: Any, dtype: str, n: int, lu: int, ld: int, piv: int, r: int, batch: int, bs: int) -> None:
    """``det_from_lu``'s dispatches, recorded one by one."""
    itemsize = itemsize_of(backend, dtype)
    ctx = backend.context
    chunk = ctx.max_workgroups_per_dim
    if batch > chunk:  # (a grid dimension's worth of matrices at a time)
        for q0 in range(0, batch, chunk):
            _det_from_lu(backend, dtype, n, lu + q0 * bs * itemsize, ld, piv + q0 * n * 4, r + 3 * q0 * itemsize,
                         min(chunk, batch - q0), bs)
        return
    a_reg, a_first = bind(backend, lu, (batch - 1) * bs + (n - 1) * ld + n, itemsize)
    p_reg, p_first = bind(backend, piv, batch * n, 4)
    r_reg, r_first = bind(backend, r, 3 * batch, itemsize)
    words = [n, a_first, ld, p_first, r_first, bs, n, 0]
    ctx.dispatch("linalg_det", words, [a_reg, p_reg, r_reg], (batch, 1, 1), math_defines(dtype))
