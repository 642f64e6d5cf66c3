"""Triangular solves and row swaps of the blocked factorizations: ``trsm`` (a triangle of at
most ``NB`` rows against a block, a column per invocation in registers), ``trsv`` (one
workgroup per right-hand column) and ``trsv_blocked`` (a dispatch per 32 rows over many
workgroups) for ``ops_lu.lu_solve``, and ``laswp`` (getrf's row swaps). No wgpu here.
"""

from __future__ import annotations

from typing import Any

from . import config
from .errors import invalid_argument
from .factor_common import NB, bind, component_of, itemsize_of, panel_wg
from .linalg_scalar import scalar_defines
from .validate import check_dtype

__all__ = ["TRSV_BLOCKED_MIN", "TRSV_MAX_K", "laswp", "trsm", "trsv", "trsv_blocked"]

def _dtype(backend: Any, dtype: str) -> tuple[int, str]:
    """(itemsize, WGSL type) of float32 / float64; BackendError otherwise."""
    check_dtype(backend, "dtype", dtype, ("float32", "float64"))
    return backend.float_dtype(dtype)


def trsm(backend: Any, dtype: str, mode: int, n: int, k: int, t: int, t_ld: int, x: int, x_rs: int,
         x_cs: int, batch: int = 1, t_bs: int = 0, x_bs: int = 0) -> None:
    """X := op(T)^-1 X for an n x n triangle T (n <= NB; row-major, ``t_ld``) and the n x k block
    X whose element (r, c) lies ``r * x_rs + c * x_cs`` elements from ``x``, one invocation per
    column, for ``batch`` pairs (T_q ``q * t_bs``, X_q ``q * x_bs`` elements on; at most a grid
    dimension of them). ``mode`` 0: unit lower, 1: lower, 2: upper. T and X may lie in one
    allocation (disjoint regions)."""
    if not 1 <= n <= NB or mode not in (0, 1, 2):
        raise invalid_argument(f"trsm of order {n}, mode {mode}")
    if k < 1:
        return
    itemsize = itemsize_of(backend, dtype)
    ctx = backend.context
    t_reg, t_first = bind(backend, t, (batch - 1) * t_bs + (n - 1) * t_ld + n, itemsize)
    x_reg, x_first = bind(backend, x, (batch - 1) * x_bs + (n - 1) * x_rs + (k - 1) * x_cs + 1, itemsize)
    words = [n, k, t_first, t_ld, x_first, x_rs, x_cs, t_bs, x_bs, 0, 0, 0]
    wg = 64
    gx, gy, _ = ctx.fold_grid(-(-k // wg))
    ctx.dispatch("linalg_trsm", words, [t_reg, x_reg], (gx, gy, batch),
                 {**scalar_defines(dtype), "NB": NB, "MODE": mode, "WG": wg})


#: Most right-hand columns ``lu_solve`` takes through ``trsv`` (one workgroup per column, the
#: triangle streamed once per column) instead of the blocked trsm + gemm substitution.
TRSV_MAX_K = 8


def _trsv_operands(backend: Any, dtype: str, mode: int, n: int, k: int, t: int, t_ld: int, x: int,
                   x_rs: int, x_cs: int, batch: int, t_bs: int, x_bs: int) -> tuple[Any, ...] | None:
    """The checked bindings of a triangular solve (``trsv``, ``trsv_blocked``): (context, T's
    region, T's first element, X's region, X's first element), or None for no columns.
    BackendError (invalid argument) for a mode other than 0 and 2 or an order below 1."""
    if mode not in (0, 2) or n < 1:
        raise invalid_argument(f"trsv of order {n}, mode {mode}")
    if k < 1:
        return None
    itemsize = itemsize_of(backend, dtype)
    t_reg, t_first = bind(backend, t, (batch - 1) * t_bs + (n - 1) * t_ld + n, itemsize)
    x_reg, x_first = bind(backend, x, (batch - 1) * x_bs + (n - 1) * x_rs + (k - 1) * x_cs + 1, itemsize)
    return backend.context, t_reg, t_first, x_reg, x_first


def trsv(backend: Any, dtype: str, mode: int, n: int, k: int, t: int, t_ld: int, x: int, x_rs: int,
         x_cs: int, batch: int = 1, t_bs: int = 0, x_bs: int = 0) -> None:
    """X := T^-1 X for the n x n triangle T (row-major, ``t_ld``; ``mode`` 0: unit lower, 2:
    upper) and the k columns of X (element (r, c) ``r * x_rs + c * x_cs`` elements from ``x``),
    one workgroup per column and matrix of ``batch`` (T_q ``q * t_bs``, X_q ``q * x_bs``
    elements on), in one dispatch. T and X may lie in one allocation (disjoint)."""
    operands = _trsv_operands(backend, dtype, mode, n, k, t, t_ld, x, x_rs, x_cs, batch, t_bs, x_bs)
    if operands is None:
        return
    ctx, t_reg, t_first, x_reg, x_first = operands
    words = [n, t_first, t_ld, x_first, x_rs, x_cs, t_bs, x_bs]
    ctx.dispatch("linalg_trsv", words, [t_reg, x_reg], (k, batch, 1),
                 {**scalar_defines(dtype), "MODE": mode, "WG": panel_wg(ctx)})


#: Least order from which ``trsv`` runs block by block over many workgroups
#: (``linalg_trsv_block.wgsl``, a dispatch per 32 rows) instead of one workgroup per column.
TRSV_BLOCKED_MIN = 512


def trsv_blocked(backend: Any, dtype: str, mode: int, n: int, k: int, t: int, t_ld: int, x: int, x_rs: int,
                 x_cs: int, batch: int = 1, t_bs: int = 0, x_bs: int = 0) -> None:
    """``trsv``'s X := T^-1 X as n / 32 + 1 dispatches, each solving a 32-row diagonal block
    (in every workgroup) and updating the rows ahead of it over many workgroups."""
    operands = _trsv_operands(backend, dtype, mode, n, k, t, t_ld, x, x_rs, x_cs, batch, t_bs, x_bs)
    if operands is None:
        return
    ctx, t_reg, t_first, x_reg, x_first = operands
    wg = 128
    defines = {**scalar_defines(dtype), "MODE": mode, "WG": wg,
               "SWEEP": "true" if config.value("linalg_trsv_sweep") else "false"}
    starts = list(range(0, n, 32))
    if mode == 2:
        starts.reverse()
    prev = (0, 0)
    for j0 in starts + [None]:
        jb = 0 if j0 is None else min(32, n - j0)
        ahead = 0 if j0 is None else (n - j0 - jb if mode == 0 else j0)
        words = [n, j0 or 0, jb, t_first, t_ld, x_first, x_rs, x_cs, t_bs, x_bs, prev[0], prev[1]]
        groups = max(1, min(-(-ahead // wg), 256))
        ctx.dispatch("linalg_trsv_block", words, [t_reg, x_reg], (groups, k, batch), defines)
        prev = (j0 or 0, jb)


def laswp(backend: Any, dtype: str, x: int, rows: int, cols: int, x_ld: int, piv: int, k1: int, k2: int,
          skip: tuple[int, int] = (0, 0), batch: int = 1, x_bs: int = 0, piv_bs: int = 0) -> None:
    """Swap rows r and piv[r] of the rows x cols matrix at ``x`` for r = k1, ..., k2 - 1 in
    order (absolute row indices in the u32 array ``piv``, getrf's: piv[r] >= r), in every
    column outside ``skip``; for ``batch`` matrices (X_q ``q * x_bs`` elements on, their pivots
    ``q * piv_bs`` entries on)."""
    if cols < 1 or k2 <= k1:
        return
    part = component_of(backend, dtype)
    if part:  # complex: the same swaps of the rows of the (rows x 2 cols) real view
        laswp(backend, part, x, rows, 2 * cols, 2 * x_ld, piv, k1, k2, (2 * skip[0], 2 * skip[1]), batch, 2 * x_bs,
              piv_bs)
        return
    itemsize, wgsl = _dtype(backend, dtype)
    ctx = backend.context
    x_reg, x_first = bind(backend, x, (batch - 1) * x_bs + (rows - 1) * x_ld + cols, itemsize)
    p_reg, p_first = bind(backend, piv, (batch - 1) * piv_bs + k2, 4)
    words = [cols, k1, k2, x_first, x_ld, p_first, skip[0], skip[1], x_bs, piv_bs, 0, 0]
    gx, gy, _ = ctx.fold_grid(-(-cols // 32))
    ctx.dispatch("linalg_laswp", words, [x_reg, p_reg], (gx, gy, batch), {"T": wgsl})
