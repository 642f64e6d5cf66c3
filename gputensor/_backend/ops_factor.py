"""Matrix factorizations on the device: Cholesky, LU with partial pivoting (solve, inverse,
determinant) and Householder QR, in float32 and float64 (``shader-f64``).

Matrices are row-major: element (i, j) of a matrix at pointer ``a`` with leading dimension
``ld`` lies ``i * ld + j`` elements from ``a``; a stack has a batch stride. Everything runs in
WGSL; nothing is read back (singularity is reported through a u32 flag buffer the caller owns:
``flag`` is or-ed with 1 when a pivot is zero or a Cholesky pivot is not positive).

Two families of kernels:

* batched small matrices (order <= ``SMALL_MAX``), a whole stack in one dispatch: a row per
  invocation in registers, 64 / n matrices per workgroup (``_wgsl/linalg_small_rows.wgsl``:
  Cholesky, Gauss-Jordan solve / inverse), or one workgroup per matrix with the matrix in
  workgroup memory (``_wgsl/linalg_small.wgsl``: LU + determinant or wide solves;
  ``_wgsl/linalg_qr_small.wgsl``: Householder QR with Q accumulated backwards);
* larger matrices, one at a time, blocked (``block_width``: ``GPUTENSOR_LINALG_BLOCK`` or
  each factorization's default), the trailing updates on the gemm kernels
  (``ops_gemm.gemm_strided``, in place: the updated block and the factor blocks are disjoint
  regions of one buffer); every dispatch of a call is recorded into the open batch (no wait, no
  readback):

  - Cholesky, right-looking (``CHOLESKY_BLOCK`` columns): one workgroup factors the diagonal
    block in registers and inverts it (``linalg_chol_rows.wgsl``; ``linalg_chol_block.wgsl``
    with the knob ``linalg_chol_rows`` off), the panel below is the gemm
    P L^-T (into scratch, copied back by the next diagonal block's dispatch, whose other
    workgroups also zero the block row right of the previous diagonal block), the trailing
    matrix's lower part the gemm C -= P P^T over the tiles that reach the lower triangle
    (``linalg_chol_syrk``; complex dtypes, or with it off: two column stripes from 512 columns
    on, or ``linalg_chol_split``'s recursive split into batched gemms); real dtypes take the
    trailing update once per block column of ``CHOLESKY_OUTER`` columns (knob
    ``linalg_chol_outer``): the diagonal blocks inside it update only its columns, then one gemm
    of that depth updates the trailing matrix; a
    repeated call structure replays all of it as one ``LaunchProgram``;
  - LU, right-looking (getrf, ``LU_BLOCK`` columns): a panel up to ``LU_TREE_MIN_ROWS`` rows
    (``GPUTENSOR_LINALG_PANEL_ROWS``) with pivot search on one workgroup, each row updated in
    registers by the invocation that owns it (``linalg_lu_block.wgsl``), then row swaps of the
    other columns (``linalg_laswp.wgsl``); a taller panel elects its pivot rows by a
    tournament over many workgroups (CALU's TSLU: partial pivoting on chunks of rows, then on
    the chunks' winners, a dispatch per level, ``linalg_lu_tslu.wgsl``, whose last level also
    factors the pivot block), swaps them to the top of every column and scales the rows below
    on many workgroups (``linalg_lu_apply.wgsl``);
    the block row by a unit-lower triangular solve (``linalg_trsm.wgsl``, a column per
    invocation in registers), the trailing matrix by gemm; ``lu_solve`` swaps the right-hand
    sides and runs forward and backward substitution: for a few columns ``linalg_trsv.wgsl``
    (one workgroup per column) or, from ``TRSV_BLOCKED_MIN``, ``linalg_trsv_block.wgsl`` (a
    dispatch per 32 rows over many workgroups), else blocked (triangular solves of the
    diagonal blocks, gemm for the rest);
  - QR (geqrf, panels of ``NB`` columns): the panel on one workgroup (``linalg_qr_panel.wgsl``),
    or from ``QR_STEP_MIN_ROWS`` rows a dispatch per column over many workgroups
    (``linalg_qr_step.wgsl``), the block reflector's compact WY factor T from the Gram matrix
    V^T V (gemm, then ``linalg_qr_tmat.wgsl``); per ``QR_OUTER`` columns (two panels: the second
    updated by the first's reflectors, their factors joined by ``linalg_qr_tjoin.wgsl``) the
    trailing update ``C -= V (T^T (V^T C))`` as three gemms; Q accumulated backwards from the
    identity with ``Q -= V (T (V^T Q))``.

  LU (``lu_blocked``, ``lu_solve``) and QR keep each call structure's first call as the
  dispatches it recorded and replay them (``captured.replayed``, knob ``linalg_replay``).

Every kernel names its scalar type once (``alias T = {{T}};``), so other element types need
only their arithmetic, not new kernels' structure.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass
from typing import Any

from . import captured, config, ops_gemm
from .errors import invalid_argument
from .launch import LaunchProgram, Region
from .linalg_scalar import element, scalar_defines
from .plan_cache import PlanCache
from .validate import check_dtype, check_int, check_pointer
from .wgsl_types import F32_BITS

#: Largest order the batched small kernels take (workgroup memory holds the matrix).
SMALL_MAX = 32
#: Block width of QR and the largest order of trsm and the LU panel (32 columns).
NB = 32

_SMALL_OPS = {"cholesky": 0, "solve": 1, "inv": 2, "det": 3}
#: Most right-hand columns of a small ``solve`` on the row-per-invocation kernel
#: (``linalg_small_rows.wgsl``; more go to ``linalg_small.wgsl``).
ROWS_MAX_K = 32
_LOG = {"f32": "log_f32", "f64": "log_f64"}
_NEG_INF = {"f32": f"{F32_BITS}(0xff800000u)", "f64": "bitcast<f64>(0xfff0000000000000lu)"}
_NAN = {"f32": f"{F32_BITS}(0x7fc00000u)", "f64": "bitcast<f64>(0x7ff8000000000000lu)"}
_WG = 64


def _dtype(backend: Any, dtype: str) -> tuple[int, str]:
    """(itemsize, WGSL type) of float32 / float64; BackendError otherwise."""
    check_dtype(backend, "dtype", dtype, ("float32", "float64"))
    return backend.float_dtype(dtype)


def _element(backend: Any, dtype: str) -> int:
    """The itemsize of float32, float64, complex64 or complex128 (the kernels generic over the
    element through ``linalg_scalar``); BackendError otherwise or without the dtype's feature."""
    return element(backend, dtype).itemsize


def _parts(backend: Any, dtype: str) -> str:
    """The dtype of a complex dtype's parts ('' for real dtypes), checking the device has it."""
    return element(backend, dtype).component


@functools.lru_cache(maxsize=None)
def _math_defines(dtype: str) -> dict[str, str]:
    """T, R and SCALAR (``linalg_scalar``, with the real log and what a NaN of the real type
    needs) and LOG, NEG_INF of the real type."""
    real = scalar_defines(dtype)["R"]
    log = _LOG[real]
    return {"LOG": log, "NEG_INF": _NEG_INF[real], **scalar_defines(dtype, f"{log}(x) {_NAN[real]}")}


@functools.lru_cache(maxsize=None)
def _rows_defines(dtype: str) -> dict[str, str]:
    """T, R, SCALAR and NAN (of the real type) of ``linalg_small_rows.wgsl``."""
    nan = _NAN[scalar_defines(dtype)["R"]]
    return {"NAN": nan, **scalar_defines(dtype, nan)}


def small_max(op: str, dtype: str) -> int:
    """Largest order ``small`` (``qr_small`` for 'qr') takes for ``op`` and ``dtype``: SMALL_MAX,
    16 for complex128's solve, inverse and QR (the matrix and a column per invocation, or A and
    Q, in 32 KiB of workgroup memory)."""
    return 16 if op in ("solve", "inv", "qr") and dtype == "complex128" else SMALL_MAX


def _bind(backend: Any, ptr: int, elements: int, itemsize: int) -> tuple[tuple[Any, int, int], int]:
    """(binding region, index of ``ptr``'s element in it) for ``elements`` elements at ``ptr``."""
    win = backend.window(ptr, max(1, elements) * itemsize, itemsize)
    return win.binding, win.first


def _nmax(n: int) -> int:
    return 8 if n <= 8 else 16 if n <= 16 else 32 if n <= 32 else 64


def _panel_wg(ctx: Any) -> int:
    """Invocations of the one-workgroup panel kernels: 1024 on GPUs (a panel streams through one
    multiprocessor, so it needs every warp it can get to hide the memory latency), 256 on
    software adapters."""
    limit = min(int(ctx.limits.get("max-compute-invocations-per-workgroup", 256)),
                int(ctx.limits.get("max-compute-workgroup-size-x", 256)))
    return 256 if ctx.is_software or limit < 1024 else 1024


def _groups(ctx: Any, count: int) -> tuple[int, int, int]:
    return ctx.fold_grid(count)


# ---- batched small matrices -------------------------------------------------------------------
def small(backend: Any, op: str, dtype: str, n: int, batch: int, a: int, a_ld: int, a_bs: int, *,
          b: int | None = None, k: int = 0, b_ld: int = 0, b_bs: int = 0, info: int | None = None) -> None:
    """A stack of ``batch`` n x n matrices (1 <= n <= SMALL_MAX) at ``a`` (matrix q at
    ``a + q * a_bs`` elements; only read) in one dispatch:

    * ``cholesky``: B (n x n, batch stride ``b_bs``) := L (zeros above the diagonal);
    * ``solve``: B (n x k) := A^-1 B;
    * ``inv``: B (n x n) := A^-1;
    * ``det``: B[3 q + 0, 1, 2] := det, sign, log|det| of matrix q.

    float32, float64, complex64, complex128 (Cholesky of Hermitian A = L L^H; det's sign
    det / |det|, log|det| in the real part). cholesky, solve and inv write each matrix's info
    word (u32) at ``info`` (word q: 1 when matrix q is not positive definite / singular, else 0;
    nothing to clear beforehand) and set that matrix's whole B to NaN. Cholesky, inv and solve
    with up to ROWS_MAX_K columns run with a row per invocation (``linalg_small_rows.wgsl``,
    64 / n matrices per workgroup), det and wider solves one workgroup per matrix
    (``linalg_small.wgsl``). BackendError (invalid argument) for bad sizes or pointers.
    """
    if op not in _SMALL_OPS:
        raise invalid_argument(f"unknown small factorization {op!r}")
    n, batch, k, a_ld, a_bs, b_ld, b_bs = (check_int(name, v) for name, v in (
        ("n", n), ("batch", batch), ("k", k), ("a_ld", a_ld), ("a_bs", a_bs), ("b_ld", b_ld), ("b_bs", b_bs)))
    if not 1 <= n <= small_max(op, dtype) or batch < 1:
        raise invalid_argument(f"small {op} of order {n} (1..{small_max(op, dtype)}), batch {batch}")
    if b is None:
        raise invalid_argument(f"small {op} needs its result buffer B")
    if info is None and op != "det":
        raise invalid_argument(f"small {op} needs an info buffer")
    itemsize = _element(backend, dtype)
    ctx = backend.context
    a_reg, a_first = _bind(backend, a, (batch - 1) * a_bs + (n - 1) * a_ld + n, itemsize)
    cols = max(1, k) if op == "solve" else n
    if op == "det":
        b_reg, b_first = _bind(backend, b, 3 * batch, itemsize)
        i_reg, i_first = ctx.spare_region(4), 0
    else:
        b_reg, b_first = _bind(backend, b, (batch - 1) * b_bs + (n - 1) * b_ld + cols, itemsize)
        i_reg, i_first = _bind(backend, info, batch, 4)
    words = [batch, n, cols, a_first, a_ld, a_bs, b_first, b_ld, b_bs, i_first, 0, 0]
    nm = _nmax(n)
    if op != "det" and cols <= ROWS_MAX_K:  # a row per invocation, 64 // nm matrices per workgroup
        km = 1 if op == "cholesky" else nm if op == "inv" else 1 << max(0, cols - 1).bit_length()
        defines = {**_rows_defines(dtype), "NM": nm, "G": _WG // nm, "KM": km, "OP": _SMALL_OPS[op]}
        ctx.dispatch("linalg_small_rows", words, [a_reg, b_reg, i_reg], _groups(ctx, -(-batch // (_WG // nm))),
                     defines)
        return
    defines = {"NMAX": nm, "OP": _SMALL_OPS[op], "XS": nm * _WG if op != "det" else 1, **_math_defines(dtype),
               "NAN": _NAN[scalar_defines(dtype)["R"]]}
    ctx.dispatch("linalg_small", words, [a_reg, b_reg, i_reg], _groups(ctx, batch), defines)


def qr_small(backend: Any, dtype: str, m: int, n: int, batch: int, a: int, a_ld: int, a_bs: int,
             q: int, q_ld: int, q_bs: int, kq: int, r: int, r_ld: int, r_bs: int, kr: int) -> None:
    """Householder QR of a stack of m x n matrices (1 <= m, n <= SMALL_MAX), one workgroup
    each: Q (m x kq) and R (kr x n, zeros below the diagonal), kq and kr each min(m, n) or m.
    ``a`` is only read. Complex dtypes: unitary Q (zgeqrf's reflectors); complex128 up to
    order ``small_max('qr', 'complex128')``. BackendError (invalid argument) for bad sizes or
    pointers."""
    m, n, batch, kq, kr = (check_int(name, v) for name, v in (("m", m), ("n", n), ("batch", batch), ("kq", kq),
                                                                ("kr", kr)))
    k = min(m, n)
    top = small_max("qr", dtype)
    if not (1 <= m <= top and 1 <= n <= top) or batch < 1 or kq not in (k, m) or kr not in (k, m):
        raise invalid_argument(f"small QR of {m} x {n} (kq {kq}, kr {kr}), batch {batch}")
    itemsize = _element(backend, dtype)
    ctx = backend.context
    a_reg, a_first = _bind(backend, a, (batch - 1) * a_bs + (m - 1) * a_ld + n, itemsize)
    q_reg, q_first = _bind(backend, q, (batch - 1) * q_bs + (m - 1) * q_ld + kq, itemsize)
    r_reg, r_first = _bind(backend, r, (batch - 1) * r_bs + (kr - 1) * r_ld + n, itemsize)
    words = [batch, m, n, kq, kr, a_first, a_ld, a_bs, q_first, q_ld, q_bs, r_first, r_ld, r_bs, 0, 0]
    defines = {**scalar_defines(dtype), "NMAX": _nmax(max(m, n))}
    ctx.dispatch("linalg_qr_small", words, [a_reg, q_reg, r_reg], _groups(ctx, batch), defines)


# ---- building blocks of the blocked algorithms -------------------------------------------------
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
    itemsize = _element(backend, dtype)
    ctx = backend.context
    t_reg, t_first = _bind(backend, t, (batch - 1) * t_bs + (n - 1) * t_ld + n, itemsize)
    x_reg, x_first = _bind(backend, x, (batch - 1) * x_bs + (n - 1) * x_rs + (k - 1) * x_cs + 1, itemsize)
    words = [n, k, t_first, t_ld, x_first, x_rs, x_cs, t_bs, x_bs, 0, 0, 0]
    wg = 64
    gx, gy, _ = _groups(ctx, -(-k // wg))
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
    itemsize = _element(backend, dtype)
    t_reg, t_first = _bind(backend, t, (batch - 1) * t_bs + (n - 1) * t_ld + n, itemsize)
    x_reg, x_first = _bind(backend, x, (batch - 1) * x_bs + (n - 1) * x_rs + (k - 1) * x_cs + 1, itemsize)
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
                 {**scalar_defines(dtype), "MODE": mode, "WG": _panel_wg(ctx)})


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
    part = _parts(backend, dtype)
    if part:  # complex: the same swaps of the rows of the (rows x 2 cols) real view
        laswp(backend, part, x, rows, 2 * cols, 2 * x_ld, piv, k1, k2, (2 * skip[0], 2 * skip[1]), batch, 2 * x_bs,
              piv_bs)
        return
    itemsize, wgsl = _dtype(backend, dtype)
    ctx = backend.context
    x_reg, x_first = _bind(backend, x, (batch - 1) * x_bs + (rows - 1) * x_ld + cols, itemsize)
    p_reg, p_first = _bind(backend, piv, (batch - 1) * piv_bs + k2, 4)
    words = [cols, k1, k2, x_first, x_ld, p_first, skip[0], skip[1], x_bs, piv_bs, 0, 0]
    gx, gy, _ = _groups(ctx, -(-cols // 32))
    ctx.dispatch("linalg_laswp", words, [x_reg, p_reg], (gx, gy, batch), {"T": wgsl})


def _gemm(backend: Any, dtype: str, m: int, n: int, k: int, alpha: float, a: int, sa: tuple[int, int],
          b: int, sb: tuple[int, int], beta: float, c: int, sc: tuple[int, int], batch: int = 1,
          bs: tuple[int, int, int] = (0, 0, 0), *, conj_a: bool = False, conj_b: bool = False,
          lower: bool = False) -> None:
    """C := alpha op(A) op(B) + beta C (real alpha, beta; op conjugates with ``conj_a`` /
    ``conj_b``). Complex operands: the complex product from four real gemms over the
    interleaved parts (Re C = Ar Br - Ai Bi, Im C = Ar Bi + Ai Br, the conjugations as signs).
    ``lower``: C's strict upper triangle may be left as it was (``_real_gemm``)."""
    if not (m and n):
        return
    part = _parts(backend, dtype)
    if not part:
        _real_gemm(backend, dtype, m, n, k, alpha, a, sa, b, sb, beta, c, sc, batch, bs, lower)
        return
    ps = element(backend, part).itemsize
    sa2, sb2, sc2 = (2 * sa[0], 2 * sa[1]), (2 * sb[0], 2 * sb[1]), (2 * sc[0], 2 * sc[1])
    bs2 = (2 * bs[0], 2 * bs[1], 2 * bs[2])
    ga = -1.0 if conj_a else 1.0
    gb = -1.0 if conj_b else 1.0

    def g(backend: Any, m: int, n: int, k: int, alpha: float, a: int, sa: tuple[int, int], b: int,
          sb: tuple[int, int], beta: float, c: int, sc: tuple[int, int], batch: int, bs: tuple[int, int, int], *,
          dtype: str) -> None:
        _real_gemm(backend, dtype, m, n, k, alpha, a, sa, b, sb, beta, c, sc, batch, bs)
    g(backend, m, n, k, alpha, a, sa2, b, sb2, beta, c, sc2, batch, bs2, dtype=part)
    g(backend, m, n, k, -alpha * ga * gb, a + ps, sa2, b + ps, sb2, 1.0, c, sc2, batch, bs2, dtype=part)
    g(backend, m, n, k, alpha * gb, a, sa2, b + ps, sb2, beta, c + ps, sc2, batch, bs2, dtype=part)
    g(backend, m, n, k, alpha * ga, a + ps, sa2, b, sb2, 1.0, c + ps, sc2, batch, bs2, dtype=part)


@functools.lru_cache(maxsize=4096)
def _blas_form(m: int, n: int, k: int, sa: tuple[int, int], sb: tuple[int, int], sc: tuple[int, int], batch: int,
               bs: tuple[int, int, int]) -> tuple[bool, tuple[Any, ...]] | None:
    """How ``ops_gemm.gemm_strided`` passes this row-major strided gemm to
    ``gemm_strided_batched``: (whether A and B trade places, its arguments but the pointers and
    scales: trans_a, trans_b, m, n, k, lda, stride_a, ldb, stride_b, ldc, stride_c, batch); None
    when it takes the general-stride kernel instead."""
    (ar, ac), (br, bc), (cr, cc) = sa, sb, sc
    qa, qb, qc = bs
    swap = (abs(cc) if n > 1 else float("inf")) < (abs(cr) if m > 1 else float("inf"))
    if swap:  # C^T = B^T A^T, as gemm_strided orients it
        m, n = n, m
        (ar, ac), (br, bc) = (bc, br), (ac, ar)
        qa, qb = qb, qa
        cr, cc = cc, cr
    la = ops_gemm.blas_layout(m, k, ar, ac)
    lb = ops_gemm.blas_layout(k, n, br, bc)
    lc = ops_gemm.blas_layout(m, n, cr, cc)
    if batch == 1:
        qa = qb = qc = 0
    if la is None or lb is None or lc is None or lc[0] or min(qa, qb, qc) < 0:
        return None
    return swap, ("T" if la[0] else "N", "T" if lb[0] else "N", m, n, k, la[1], qa, lb[1], qb, lc[1], qc, batch)


def _real_gemm(backend: Any, dtype: str, m: int, n: int, k: int, alpha: float, a: int, sa: tuple[int, int],
               b: int, sb: tuple[int, int], beta: float, c: int, sc: tuple[int, int], batch: int,
               bs: tuple[int, int, int], lower: bool = False) -> None:
    """``ops_gemm.gemm_strided`` of a real dtype, replaying the plan an earlier call of the same
    structure kept (``ops_gemm.planned_call``: only the pointers are checked) where there is
    one; the factorizations repeat the same few gemm shapes step after step and call after call.
    ``lower`` (a square C, row-major or column-major in a BLAS layout): only the tiles that
    reach C's lower triangle run (``gemm_strided_batched``'s ``triangle``), the strict upper
    triangle may be left as it was."""
    form = _blas_form(m, n, k, sa, sb, sc, batch, bs) if k > 0 else None
    if form is not None:
        swap, args = form
        ta, tb, mm, nn, kk, lda, qa, ldb, qb, ldc, qc, count = args
        tri = _triangle(swap) if lower else 0
        call = ops_gemm.planned_call(backend, ta, tb, mm, nn, kk, float(alpha), lda, qa, ldb, qb, float(beta), ldc,
                                     qc, count, dtype=dtype, triangle=tri)
        if call is not None:
            call.launch(backend, b if swap else a, a if swap else b, c)
            return
        if tri:
            ops_gemm.gemm_strided_batched(backend, ta, tb, mm, nn, kk, alpha, b if swap else a, lda, qa,
                                          a if swap else b, ldb, qb, beta, c, ldc, qc, count, dtype=dtype,
                                          triangle=tri)
            return
    ops_gemm.gemm_strided(backend, m, n, k, alpha, a, sa, b, sb, beta, c, sc, batch, bs, dtype=dtype)


def _triangle(swap: bool) -> int:
    """``gemm_strided_batched``'s ``triangle`` for the lower triangle of a row-major C: the
    kernel's column-major C is its transpose when A and B trade places (upper: 1), else C (2)."""
    return 1 if swap else 2


def _stripes(count: int) -> list[tuple[int, int]]:
    """Column stripes of a lower-triangle update: two halves from 512 columns (each stripe is one
    gemm call; more of them would save flops but cost host time per call)."""
    parts = 2 if count >= 512 else 1
    step = -(-count // parts)
    return [(s, min(step, count - s)) for s in range(0, count, step)]


def _lower_update(rest: int, ld: int, jb: int, batch: int, split: int) -> list[tuple[int, ...]]:
    """The gemms of the lower part of a rest x rest trailing update C -= W W^H (W: rest x jb,
    row-major; C: leading dimension ``ld``), each (m, nn, W row of the left factor, W row of the
    right factor (times jb: element offsets in W), C's element offset, count, (W's and C's
    offset from one block to the next)): C[r:r+m, q:q+nn] -= W[r:r+m] W[q:q+nn]^H.

    ``split`` 0 (or a stack of matrices): ``_stripes``. Otherwise a recursive split into 2^L
    equal diagonal blocks of order h = rest / 2^L >= max(``split``, 16) (the largest such L;
    rest odd or below twice that: ``_stripes``): per level l < L the 2^l off-diagonal blocks of
    order h 2^(L-l-1) below the level's diagonal as one batched gemm, then the 2^L diagonal
    blocks as one batched gemm: L + 1 gemms computing 1/2 + 1/2^(L+1) of the square (two
    stripes: 3/4)."""
    levels = 0
    split = max(split, 16) if split else 0  # (thinner gemms take the general-stride kernel, which keeps no plan)
    while split and batch == 1 and rest % (2 << levels) == 0 and rest >> (levels + 1) >= split:
        levels += 1
    if not levels:
        return [(rest - s0, sb, s0 * jb, s0 * jb, s0 * (ld + 1), 1, (0, 0)) for s0, sb in _stripes(rest)]
    h = rest >> levels
    out = []
    for lv in range(levels):
        size = h << (levels - lv - 1)
        out.append((size, size, size * jb, 0, size * ld, 1 << lv, (2 * size * jb, 2 * size * (ld + 1))))
    out.append((h, h, 0, 0, 0, 1 << levels, (h * jb, h * (ld + 1))))
    return out


# ---- blocked factorizations (one matrix) ------------------------------------------------------
#: Block widths ``GPUTENSOR_LINALG_BLOCK`` takes (the register-blocked diagonal kernels hold an
#: NB x NB block on 16 x 16 or 32 x 32 invocations).
BLOCK_SIZES = (16, 32, 64, 128)
#: Default block width of ``cholesky_blocked``.
CHOLESKY_BLOCK = 64


def block_width(default: int) -> int:
    """The block width in effect: ``GPUTENSOR_LINALG_BLOCK`` (``config.override(linalg_block=)``)
    when set, else ``default``. BackendError (invalid argument) for a width not in BLOCK_SIZES."""
    nb = int(config.value("linalg_block")) or default
    if nb not in BLOCK_SIZES:
        raise invalid_argument(f"GPUTENSOR_LINALG_BLOCK={nb} must be one of {BLOCK_SIZES}")
    return nb


def _block_threads(ctx: Any, nb: int, rows: bool = False, itemsize: int = 4) -> int:
    """Invocations per dimension of a diagonal-block kernel of width ``nb`` (``nb`` / it elements
    per invocation and dimension): on GPUs that allow 1024 invocations 32 for 128, and with
    ``rows`` (``linalg_chol_rows.wgsl``: more subgroups to hide each step's latency, each with
    fewer elements) for every width from 32 of elements up to 8 bytes (complex128's elements
    would not fit the registers an invocation of 1024 gets); else 16. The knob
    ``linalg_chol_threads`` (16 or 32) sets it where the width and the adapter allow."""
    big = not ctx.is_software and int(ctx.limits.get("max-compute-invocations-per-workgroup", 256)) >= 1024
    forced = int(config.value("linalg_chol_threads"))
    if forced in (16, 32):
        return 32 if forced == 32 and big and nb >= 32 and (nb == 128 or itemsize <= 8) else 16
    return 32 if big and (nb == 128 or (rows and nb >= 32 and itemsize <= 8)) else 16


def _chol_syrk(backend: Any, dtype: str) -> bool:
    """Whether ``cholesky_blocked``'s trailing updates are one gemm each over the tiles that
    reach the lower triangle (knob ``linalg_chol_syrk``; real dtypes, whose gemms take a BLAS
    layout), else column stripes or the recursive split (``_lower_update``)."""
    return bool(config.value("linalg_chol_syrk")) and not _parts(backend, dtype)


def _chol_kernel() -> str:
    """The diagonal-block kernel ``linalg_chol_rows`` (knob ``linalg_chol_rows``, the default) or
    ``linalg_chol_block``."""
    return "linalg_chol_rows" if config.value("linalg_chol_rows") else "linalg_chol_block"


#: Default columns per trailing update of ``cholesky_blocked`` (real dtypes): several diagonal
#: blocks factor a panel of this width, updating only the panel's columns, before one gemm of
#: that depth updates the trailing matrix's lower part (knob ``linalg_chol_outer``).
CHOLESKY_OUTER = 256


def _chol_outer(backend: Any, dtype: str, nb: int) -> int:
    """Columns per trailing update of ``cholesky_blocked``: the knob ``linalg_chol_outer`` (or
    CHOLESKY_OUTER) rounded down to a multiple of the block width ``nb`` and at least ``nb``;
    ``nb`` (one update per diagonal block) for complex dtypes or with ``linalg_chol_syrk`` off."""
    if not _chol_syrk(backend, dtype):
        return nb
    outer = int(config.value("linalg_chol_outer")) or CHOLESKY_OUTER
    return max(1, outer // nb) * nb


def _chol_steps(backend: Any, dtype: str, n: int, a: int, ld: int, flag: int, batch: int, bs: int, nb: int,
                xs: int, ws: int, outer: int) -> Any:
    """The steps of ``cholesky_blocked`` in order, each ``("kernel", name, words, bindings, grid,
    defines)`` (bindings: (pointer, elements, itemsize, the word that takes the window index of
    the pointer's element plus ``extra`` or 0, extra)) or ``("gemm", args of _gemm[, lower])``, over the
    matrices at ``a``, the flag and the scratch ``xs`` (the diagonal blocks' inverses) and ``ws``
    (panels). Each diagonal block's dispatch also copies the previous step's panel from ``ws``
    into A (and zeros its mirror above the diagonal).

    ``outer`` > ``nb`` (a multiple of it): the columns are taken ``outer`` at a time; inside
    such a block column each diagonal block's panel updates only the block column's later
    columns (one gemm over all rows below), and after its last diagonal block that panel is
    copied into A alone (the same kernel with no block to factor) and the whole trailing
    matrix's lower part takes one gemm of depth ``outer`` from A. The strict upper triangle
    those rectangular updates write lies in block rows whose mirror a later copy clears."""
    itemsize = _element(backend, dtype)
    split = int(config.value("linalg_chol_split"))
    syrk = _chol_syrk(backend, dtype)
    kernel = _chol_kernel()
    th = _block_threads(backend.context, nb, kernel == "linalg_chol_rows", itemsize)
    defines = {**scalar_defines(dtype), "NB": nb, "TH": th, "RR": nb // th}
    chunk = th * th * 4  # panel elements per copying workgroup (CH of linalg_chol_block.wgsl)
    wrest = max(1, n - min(nb, n)) * nb
    prev = None  # (rows, cols) of the panel waiting in ws, its diagonal block's pointer

    def diagonal(j0: int, jb: int, rest: int) -> Any:
        """The dispatch that factors the jb x jb diagonal block at (j0, j0) (jb 0: none) and
        copies the panel waiting in ws."""
        d = a + (j0 * ld + j0) * itemsize
        c_rows, c_cols, back = (prev[0], prev[1], prev[1] * (ld + 1)) if prev else (0, 0, 0)
        top = d - back * itemsize  # the previous diagonal block's element (0, 0), or d
        # elements from top: through this diagonal block and the previous panel's last row
        span = (batch - 1) * bs + max(back + (jb - 1) * ld + jb if jb else 1,
                                      (c_cols + c_rows - 1) * ld + c_cols if prev else 0)
        copy_groups = -(-c_rows * c_cols // chunk)
        return ("kernel", kernel,
                [jb, 0, ld, 0, bs, int(rest > 0 and jb > 0), c_rows, c_cols, 0, wrest, back, 0],
                [(top, span, itemsize, 1, back), (xs, batch * nb * nb, itemsize, 3, 0), (flag, 1, 4, 0, 0),
                 (ws, batch * wrest, itemsize, 8, 0)], (batch, 1 + copy_groups, 1), defines)

    for o0 in range(0, n, outer):
        o_end = min(n, o0 + outer)
        for j0 in range(o0, o_end, nb):
            jb = min(nb, o_end - j0)
            d = a + (j0 * ld + j0) * itemsize
            rest = n - j0 - jb
            yield diagonal(j0, jb, rest)
            prev = None
            if not rest:
                continue
            p = d + jb * ld * itemsize
            # W := P L^-H
            yield ("gemm", (rest, jb, jb, 1.0, p, (ld, 1), xs, (1, nb), 0.0, ws, (jb, 1), batch,
                            (bs, nb * nb, wrest)))
            prev = (rest, jb)
            c = a + ((j0 + jb) * ld + j0 + jb) * itemsize
            if outer > nb:
                cols = o_end - j0 - jb
                if cols:  # the block column's later columns: C[:, :cols] -= W W[:cols]^H
                    yield ("gemm", (rest, cols, jb, -1.0, ws, (jb, 1), ws, (1, jb), 1.0, c, (ld, 1), batch,
                                    (wrest, wrest, bs)))
                    continue
                # the block column's last panel into A, then C -= L21 L21^H from A, depth o_end - o0
                yield diagonal(j0 + jb, 0, rest)
                prev = None
                left = a + (o_end * ld + o0) * itemsize
                yield ("gemm", (rest, rest, o_end - o0, -1.0, left, (ld, 1), left, (1, ld), 1.0, c, (ld, 1), batch,
                                (bs, bs, bs)), True)
                continue
            if syrk:  # lower part: C -= W W^H on the tiles that reach C's lower triangle
                yield ("gemm", (rest, rest, jb, -1.0, ws, (jb, 1), ws, (1, jb), 1.0, c, (ld, 1), batch,
                                (wrest, wrest, bs)), True)
                continue
            for m, nn, w_off, w2_off, c_off, count, (qw, qc) in _lower_update(rest, ld, jb, batch, split):
                # C[r:r+m, q:q+nn] -= W[r:r+m] W[q:q+nn]^H for count such blocks, qw / qc apart
                yield ("gemm", (m, nn, jb, -1.0, ws + w_off * itemsize, (jb, 1), ws + w2_off * itemsize, (1, jb),
                                1.0, c + c_off * itemsize, (ld, 1), count * batch,
                                (qw, qw, qc) if count > 1 else (wrest, wrest, bs)))


def _gemm_plan(backend: Any, dtype: str, args: tuple[Any, ...], lower: bool) -> tuple[bool, Any] | None:
    """(whether A and B trade places, the kept ``ops_gemm.planned_call``) of a real gemm step's
    arguments, or None when it keeps no plan (split-K, a general-stride gemm, k = 0)."""
    m, nn, k, alpha, a, sa, b, sb, beta, c, sc, batch, bs = args
    form = _blas_form(m, nn, k, sa, sb, sc, batch, bs) if m and nn and k else None
    if form is None:
        return None
    swap, (ta, tb, mm, n2, kk, lda, qa, ldb, qb, ldc, qc, count) = form
    call = ops_gemm.planned_call(backend, ta, tb, mm, n2, kk, float(alpha), lda, qa, ldb, qb, float(beta), ldc, qc,
                                 count, dtype=dtype, triangle=_triangle(swap) if lower else 0)
    return None if call is None or not call.reads else (swap, call)


def _run_steps(backend: Any, dtype: str, steps: Any, plans: list[Any] | None = None) -> None:
    """Record ``_chol_steps``' steps through ``WgpuContext.dispatch`` and ``_gemm``; with a list
    ``plans``, append each gemm step's ``_gemm_plan`` right after its call (a factorization has
    more gemm shapes than the gemm plan cache keeps, so they are taken before later steps evict
    them)."""
    ctx = backend.context
    for step in steps:
        if step[0] == "gemm":
            lower = len(step) > 2 and step[2]
            _gemm(backend, dtype, *step[1], conj_b=True, lower=lower)
            if plans is not None:
                plans.append(_gemm_plan(backend, dtype, step[1], lower))
            continue
        _, name, words, bindings, grid, defines = step
        regions = []
        for ptr, elements, size, word, extra in bindings:
            reg, first = _bind(backend, ptr, elements, size)
            regions.append(reg)
            if word:
                words[word] = first + extra
        ctx.dispatch(name, words, regions, grid, defines)


#: Parameter words of ``linalg_chol_block``.
_CHOL_WORDS = struct.Struct("<12I")


def _chol_program(backend: Any, dtype: str, steps: Any, bases: list[tuple[int, int]],
                  plans: list[Any]) -> LaunchProgram | None:
    """``_chol_steps``' steps as one ``LaunchProgram`` over the operands ``bases`` ((pointer, bytes)
    of each: the matrices, the flag, then the scratch ``xs`` and ``ws``, allocated by the program),
    the gemms taken from the plans their first calls kept (``plans``, from ``_run_steps``, one
    per gemm step in order); None when a gemm has no such plan (split-K) or does not run as one
    (a general-stride or complex gemm)."""
    ctx = backend.context
    gemm_plans = iter(plans)

    def where(ptr: int) -> tuple[int, int]:
        for index, (start, nbytes) in enumerate(bases):
            if start <= ptr < start + nbytes:
                return index, ptr - start
        raise ValueError("a pointer outside the planned operands")

    records: list[Any] = []
    for step in steps:
        if step[0] == "kernel":
            _, name, words, bindings, grid, defines = step
            if 0 in grid:
                continue
            regions = []
            for ptr, elements, size, word, extra in bindings:
                base, off = where(ptr)
                regions.append(Region(base, off, max(1, elements) * size, size, 0, word, extra))
            pipe = ctx.pipeline(name, len(regions), defines)
            records.append((pipe, defines, words, grid, regions, name, _CHOL_WORDS))
            continue
        a, b, c = step[1][4], step[1][6], step[1][9]
        kept = next(gemm_plans, None)
        if kept is None:
            return None
        swap, call = kept
        operands = [where(p) for p in ((b, a, c) if swap else (a, b, c))]
        program = call.program
        for st in program.steps:
            if st.placeholder:
                return None
            patches: dict[int, list[tuple[int, int]]] = {}
            for word, slot, extra in st.patches:
                patches.setdefault(slot, []).append((word, extra))
            regions = []
            for slot_id in st.slots:
                slot = program.slots[slot_id]
                base, off = operands[slot.base]
                queue = patches.get(slot_id)
                word, extra = queue.pop(0) if queue else (0, 0)
                regions.append(Region(base, off + slot.offset, slot.nbytes, slot.itemsize, slot.vector, word, extra))
            records.append((st.pipeline, st.defines, st.words, st.grid, regions, st.kernel, st.pack.__self__))
    aux = [(bases[2][1], 0), (bases[3][1], 0)]
    return LaunchProgram.compile("linalg_chol_block", _CHOL_WORDS, ctx, records, aux)


@dataclass(frozen=True, eq=False)
class _CholCall:
    """A planned ``cholesky_blocked`` call on the context ``ctx``: its program and the bytes of
    the matrices' touched span."""

    ctx: Any
    program: LaunchProgram
    span: int
    itemsize: int

    def launch(self, backend: Any, a: int, flag: int) -> bool:
        """Check the pointers and replay the program; False when it does not apply (nothing
        recorded then)."""
        a_alloc, a_off = check_pointer(backend, "a", a, self.span, self.itemsize)
        f_alloc, f_off = check_pointer(backend, "flag", flag, 4, 4)
        bases = [(a_alloc.buffer, a_alloc.buffer.size, a_alloc.nbytes, a_off, a, a_alloc.whole),
                 (f_alloc.buffer, f_alloc.buffer.size, f_alloc.nbytes, f_off, flag, f_alloc.whole)]
        return self.program.run(backend, self.ctx, bases, _no_placeholder)


def _no_placeholder(backend: Any, nbytes: int, *bindings: Any) -> Any:  # pragma: no cover
    raise AssertionError("the Cholesky programs bind no placeholders")


#: Planned ``cholesky_blocked`` calls per backend (False: a call structure that has no program).
_CHOL_PLANS = PlanCache(64)


def cholesky_blocked(backend: Any, dtype: str, n: int, a: int, ld: int, flag: int, batch: int = 1,
                     bs: int = 0) -> None:
    """Lower Cholesky factors of the ``batch`` n x n matrices at ``a`` (matrix q ``q * bs``
    elements on) in place (right-looking, blocks of ``block_width(CHOLESKY_BLOCK)`` columns),
    zeros in the strict upper triangles. Each step is one dispatch for
    the whole stack: one workgroup per matrix factors the diagonal block and inverts it
    (``linalg_chol_rows.wgsl``, or ``linalg_chol_block.wgsl`` with the knob ``linalg_chol_rows``
    off), the panel below is the gemm P L^-H (into scratch, then copied back by the next step's
    dispatch of that kernel, whose other workgroups also
    zero the block row right of the previous diagonal block),
    the trailing lower part the gemm C -= P P^H (real dtypes: once per block column of
    ``_chol_outer`` columns, the panels inside it updating only its columns; see
    ``_chol_steps``). ``flag`` as in ``small``. Complex matrices are Hermitian (A = L L^H).

    The first call of a real dtype's call structure (everything but the pointers) records its
    steps one by one and then keeps them as one ``LaunchProgram`` (its gemms from their kept
    plans); later calls check the two pointers and replay it."""
    itemsize = _element(backend, dtype)
    ctx = backend.context
    if batch < 1:
        return
    chunk = ctx.max_workgroups_per_dim
    if batch > chunk:  # (a grid dimension's worth of matrices at a time)
        for q0 in range(0, batch, chunk):
            cholesky_blocked(backend, dtype, n, a + q0 * bs * itemsize, ld, flag, min(chunk, batch - q0), bs)
        return
    nb = block_width(CHOLESKY_BLOCK)
    span = ((batch - 1) * bs + (n - 1) * ld + n) * itemsize
    outer = _chol_outer(backend, dtype, nb)
    key = (dtype, n, ld, batch, bs, nb, _chol_kernel(), int(config.value("linalg_chol_split")),
           _chol_syrk(backend, dtype), outer, int(config.value("linalg_chol_threads")), *ops_gemm.plan_settings())
    plans = _CHOL_PLANS.of(backend)
    plan = plans.get(key)
    spied = ctx.__dict__.get("dispatch") is not None  # (a wrapped dispatch sees every step)
    if plan and plan.ctx is ctx and plan.program.valid_for(ctx) and not spied:
        if plan.launch(backend, a, flag):
            return
    check_pointer(backend, "a", a, span, itemsize)
    wrest = max(1, n - min(nb, n)) * nb  # scratch elements per matrix for the panel
    xs_bytes, ws_bytes = batch * nb * nb * itemsize, batch * wrest * itemsize
    xs = backend.alloc(xs_bytes, zero=False)
    ws = backend.alloc(ws_bytes, zero=False)
    try:
        planning = plan is None and not _parts(backend, dtype)
        gemm_plans: list[Any] | None = [] if planning else None
        _run_steps(backend, dtype, _chol_steps(backend, dtype, n, a, ld, flag, batch, bs, nb, xs, ws, outer), gemm_plans)
        if gemm_plans is not None:
            program = _chol_program(backend, dtype, _chol_steps(backend, dtype, n, a, ld, flag, batch, bs, nb, xs, ws, outer),
                                    [(a, span), (flag, 4), (xs, xs_bytes), (ws, ws_bytes)], gemm_plans)
            _CHOL_PLANS.keep(plans, key, _CholCall(ctx, program, span, itemsize) if program is not None else False)
    finally:
        backend.free(xs)
        backend.free(ws)


#: Default block width of ``lu_blocked`` (the panel kernel holds a row of the panel in
#: registers: at most 32 columns).
LU_BLOCK = 32

#: The programs ``captured.replayed`` keeps for ``lu_blocked``, ``lu_solve`` and ``qr_blocked``.
_PROGRAMS = PlanCache(64)


def _replay_on() -> bool:
    """Whether the LU and QR routines replay their first call's dispatches (knob
    ``linalg_replay``; never while gemm tuning is on, whose first calls time plans)."""
    return bool(config.value("linalg_replay")) and not ops_gemm.plan_settings()[1]


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
    itemsize = _element(backend, dtype)
    if batch < 1 or n < 1:
        return
    key = ("lu", dtype, n, ld, batch, bs, *_lu_settings())
    operands = [("a", a, ((batch - 1) * bs + (n - 1) * ld + n) * itemsize, itemsize), ("piv", piv, batch * n * 4, 4),
                ("flag", flag, 4, 4)]
    captured.replayed(backend, _PROGRAMS, key, operands,
                      lambda: _lu_blocked(backend, dtype, n, a, ld, piv, flag, batch, bs), _replay_on())


def _lu_blocked(backend: Any, dtype: str, n: int, a: int, ld: int, piv: int, flag: int, batch: int,
                bs: int) -> None:
    """``lu_blocked``'s dispatches, recorded one by one."""
    chunk = backend.context.max_workgroups_per_dim
    if batch > chunk:  # (a grid dimension's worth of matrices at a time)
        for q0 in range(0, batch, chunk):
            _lu_blocked(backend, dtype, n, a + q0 * bs * _element(backend, dtype), ld, piv + q0 * n * 4, flag,
                        min(chunk, batch - q0), bs)
        return
    itemsize = _element(backend, dtype)
    ctx = backend.context
    nb = min(block_width(LU_BLOCK), NB)
    a_reg, a_first = _bind(backend, a, (batch - 1) * bs + (n - 1) * ld + n, itemsize)
    p_reg, p_first = _bind(backend, piv, batch * n, 4)
    f_reg = _bind(backend, flag, 1, 4)[0]
    wg = _panel_wg(ctx)
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
    itemsize = _element(backend, dtype)
    rest = n - j0 - jb
    if not rest:
        return
    d = a + (j0 * ld + j0) * itemsize
    u12 = d + jb * itemsize
    trsm(backend, dtype, 0, jb, rest, d, ld, u12, ld, 1, batch, bs, bs)
    l21 = d + jb * ld * itemsize
    _gemm(backend, dtype, rest, rest, jb, -1.0, l21, (ld, 1), u12, (ld, 1), 1.0,
          l21 + jb * itemsize, (ld, 1), batch, (bs, bs, bs))


#: Least panel height whose pivots ``lu_blocked`` elects by a tournament over many workgroups
#: (``GPUTENSOR_LINALG_LU_TREE_ROWS``, or ``GPUTENSOR_LINALG_PANEL_ROWS``, overrides it). On the
#: H200 the one-workgroup panel took about 320 us at every height up to 256 rows, a tournament
#: level about 80 us and the panel's swaps and scaling 60 (benchmarks/results/h200-2026-12-01c-*).
LU_TREE_MIN_ROWS = 64
#: Candidate rows per workgroup of a tournament level: a row per invocation.
TSLU_ROWS_GPU = 256
TSLU_ROWS_SOFTWARE = 128


def _invocations(ctx: Any) -> int:
    """The most invocations of a one-dimensional workgroup on ``ctx`` (at most 1024)."""
    return min(int(ctx.limits.get("max-compute-invocations-per-workgroup", 256)),
               int(ctx.limits.get("max-compute-workgroup-size-x", 256)), 1024)


def tslu_rows(ctx: Any) -> int:
    """Candidate rows per workgroup of a tournament level: ``GPUTENSOR_LINALG_TSLU_ROWS`` where
    set (a power of two from 64 up to the adapter's workgroup size), else TSLU_ROWS_GPU or, on
    software adapters, TSLU_ROWS_SOFTWARE. BackendError (invalid argument) for another value."""
    rows = int(config.value("linalg_tslu_rows"))
    if not rows:
        return TSLU_ROWS_SOFTWARE if ctx.is_software else TSLU_ROWS_GPU
    limit = _invocations(ctx)
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
        self.itemsize = _element(backend, dtype)
        self.rows = tslu_rows(ctx)
        #: most candidates a later level takes in one workgroup (0: levels of ``rows`` each)
        #: (a row of the panel in each invocation's registers: fewer invocations for wider elements)
        self.final = min(_invocations(ctx), 4096 // self.itemsize) if config.value("linalg_tslu_final") else 0
        self.slots = -(-n // self.rows) * jb  # candidate rows a level-0 output holds per matrix
        factored = "true" if config.value("linalg_tslu_factored") else "false"
        self.defines = {**scalar_defines(dtype), "WG": self.rows, "JB": jb, "FACTORED": factored}
        self.apply_defines = {**scalar_defines(dtype), "WG": 128, "JB": jb, "FACTORED": factored}
        elems = batch * self.slots * jb
        self.cand = [backend.alloc(elems * self.itemsize, zero=False) for _ in range(2)]
        self.index = [backend.alloc(batch * self.slots * 4, zero=False) for _ in range(2)]
        self.c_bind = [_bind(backend, c, elems, self.itemsize) for c in self.cand]
        self.i_bind = [_bind(backend, i, batch * self.slots, 4) for i in self.index]
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
    itemsize = _element(backend, dtype)
    if batch < 1 or n < 1 or k < 1:
        return
    key = ("lu_solve", dtype, n, k, ld, x_ld, batch, lu_bs, x_bs, *_lu_settings())
    operands = [("lu", lu, ((batch - 1) * lu_bs + (n - 1) * ld + n) * itemsize, itemsize),
                ("piv", piv, batch * n * 4, 4), ("x", x, ((batch - 1) * x_bs + (n - 1) * x_ld + k) * itemsize, itemsize)]
    captured.replayed(backend, _PROGRAMS, key, operands,
                      lambda: _lu_solve(backend, dtype, n, k, lu, ld, piv, x, x_ld, batch, lu_bs, x_bs), _replay_on())


def _lu_solve(backend: Any, dtype: str, n: int, k: int, lu: int, ld: int, piv: int, x: int, x_ld: int,
              batch: int, lu_bs: int, x_bs: int) -> None:
    """``lu_solve``'s dispatches, recorded one by one."""
    itemsize = _element(backend, dtype)
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
            _gemm(backend, dtype, rest, k, jb, -1.0, d + jb * ld * itemsize, (ld, 1), xb, (x_ld, 1), 1.0,
                  xb + jb * x_ld * itemsize, (x_ld, 1), batch, (lu_bs, x_bs, x_bs))
    for j0 in reversed(starts):
        jb = min(NB, n - j0)
        d = lu + (j0 * ld + j0) * itemsize
        xb = x + j0 * x_ld * itemsize
        trsm(backend, dtype, 2, jb, k, d, ld, xb, x_ld, 1, batch, lu_bs, x_bs)
        if j0:
            _gemm(backend, dtype, j0, k, jb, -1.0, lu + j0 * itemsize, (ld, 1), xb, (x_ld, 1), 1.0, x, (x_ld, 1),
                  batch, (lu_bs, x_bs, x_bs))


def det_from_lu(backend: Any, dtype: str, n: int, lu: int, ld: int, piv: int, r: int, batch: int = 1,
                bs: int = 0) -> None:
    """r[3 q + 0, 1, 2] := det, sign, log|det| of matrix q < batch from ``lu_blocked``'s factors
    (LU_q ``q * bs`` elements on, pivots ``q * n`` entries on), one workgroup per matrix
    (complex: sign det / |det|, log|det| in the real part)."""
    itemsize = _element(backend, dtype)
    ctx = backend.context
    chunk = ctx.max_workgroups_per_dim
    if batch > chunk:  # (a grid dimension's worth of matrices at a time)
        for q0 in range(0, batch, chunk):
            det_from_lu(backend, dtype, n, lu + q0 * bs * itemsize, ld, piv + q0 * n * 4, r + 3 * q0 * itemsize,
                        min(chunk, batch - q0), bs)
        return
    a_reg, a_first = _bind(backend, lu, (batch - 1) * bs + (n - 1) * ld + n, itemsize)
    p_reg, p_first = _bind(backend, piv, batch * n, 4)
    r_reg, r_first = _bind(backend, r, 3 * batch, itemsize)
    words = [n, a_first, ld, p_first, r_first, bs, n, 0]
    ctx.dispatch("linalg_det", words, [a_reg, p_reg, r_reg], (batch, 1, 1), _math_defines(dtype))


def qr_blocked(backend: Any, dtype: str, m: int, n: int, a: int, ld: int, q: int, q_ld: int, kq: int) -> None:
    """Householder QR of the m x n matrix at ``a`` in place (R on and above the diagonal, the
    reflectors below it), and Q (m x kq, kq = min(m, n) or m) at ``q``, which must hold the
    first kq columns of the identity on entry. Complex dtypes: zgeqrf's reflectors, the block
    reflector I - V T V^H (G = V^H V), C := C - V T^H V^H C, Q := Q - V T V^H Q.

    A repeated call structure replays the dispatches its first call recorded
    (``captured.replayed``, knob ``linalg_replay``)."""
    itemsize = _element(backend, dtype)
    k = min(m, n)
    if k < 1:
        return
    step_rows = _qr_step_rows()
    outer = _qr_outer()
    key = ("qr", dtype, m, n, ld, q_ld, kq, step_rows, outer, bool(config.value("linalg_qr_panel_fused")),
           bool(config.value("linalg_qr_step_unrolled")), int(config.value("linalg_qr_step_chunk")),
           *ops_gemm.plan_settings())
    operands = [("a", a, ((m - 1) * ld + n) * itemsize, itemsize), ("q", q, ((m - 1) * q_ld + kq) * itemsize, itemsize)]
    captured.replayed(backend, _PROGRAMS, key, operands,
                      lambda: _qr_blocked(backend, dtype, m, n, a, ld, q, q_ld, kq, step_rows, outer), _replay_on())


def _qr_step_rows() -> int:
    """The least panel height whose QR runs a dispatch per column over many workgroups:
    ``GPUTENSOR_LINALG_PANEL_ROWS`` where set, else ``GPUTENSOR_LINALG_QR_STEP_ROWS``, else
    ``QR_STEP_MIN_ROWS``."""
    return int(config.value("linalg_panel_rows")) or int(config.value("linalg_qr_step_rows")) or QR_STEP_MIN_ROWS


def _qr_blocked(backend: Any, dtype: str, m: int, n: int, a: int, ld: int, q: int, q_ld: int, kq: int,
                step_rows: int, outer: int) -> None:
    """``qr_blocked``'s dispatches, recorded one by one: panels of NB columns, the trailing
    matrix and Q updated once per ``outer`` (NB or QR_OUTER) columns. With QR_OUTER, the second
    panel of an outer block is first updated by the first one's reflectors (three thin gemms),
    and the two triangular factors are joined into one (``linalg_qr_tjoin.wgsl``) for the
    trailing update and Q's, which are then gemms of depth 64."""
    itemsize = _element(backend, dtype)
    sdef = scalar_defines(dtype)
    k = min(m, n)
    ctx = backend.context
    blocks = list(range(0, k, NB))
    outers = list(range(0, k, outer))
    joined = outer > NB
    wide = max(n, kq, 1)
    steps = _QRSteps(backend, dtype, m) if m > step_rows else None
    # (joined: V's entries above the second panel of an outer block stay zero)
    v = backend.alloc(m * k * itemsize, zero=joined)
    tb = backend.alloc(len(blocks) * NB * NB * itemsize, zero=False)
    g = backend.alloc(2 * NB * NB * itemsize, zero=False)
    w = backend.alloc(outer * wide * itemsize, zero=False)
    w2 = backend.alloc(outer * wide * itemsize, zero=False)
    tj = backend.alloc(len(outers) * outer * outer * itemsize, zero=False) if joined else None
    try:
        a_reg, a_first = _bind(backend, a, (m - 1) * ld + n, itemsize)
        v_reg, v_first = _bind(backend, v, m * k, itemsize)
        t_reg, t_first = _bind(backend, tb, len(blocks) * NB * NB, itemsize)
        g_reg, g_first = _bind(backend, g, 2 * NB * NB, itemsize)
        wg = _panel_wg(ctx)
        fused = "true" if config.value("linalg_qr_panel_fused") else "false"

        def panel(bi: int, j0: int, jb: int, first: int) -> None:
            """Factor the panel of columns j0 .. j0 + jb (block bi) and make its T; ``first``: the
            first column of its outer block (the Gram matrix spans the block's columns)."""
            mp = m - j0
            t_off = bi * NB * NB
            if steps is not None and mp > step_rows:
                steps.panel(a_reg, a_first + j0 * ld + j0, ld, mp, jb, t_reg, t_first + t_off, v_reg,
                            v_first + j0 * k + j0, k)
            else:
                words = [a_first + j0 * ld + j0, ld, mp, jb, v_first + j0 * k + j0, k, t_first + t_off, 0]
                ctx.dispatch("linalg_qr_panel", words, [a_reg, v_reg, t_reg], (1, 1, 1), {**sdef, "WG": wg, "FUSED": fused})
            rows = j0 - first + jb  # G = V_block^H V_panel (the panel's rows only): its last jb rows are the panel's
            vb = v + (j0 * k + first) * itemsize
            vs = v + (j0 * k + j0) * itemsize
            _gemm(backend, dtype, rows, jb, mp, 1.0, vb, (1, k), vs, (k, 1), 0.0, g, (jb, 1), conj_a=True)
            ctx.dispatch("linalg_qr_tmat", [jb, t_first + t_off, g_first + (rows - jb) * jb, 0], [t_reg, g_reg],
                         (1, 1, 1), sdef)

        def update(j0: int, kb: int, tm: int, t_ld: int, col: int, n2: int) -> None:
            """C := H^H C for the columns col .. col + n2 of rows j0.. by the block reflector of the
            kb columns from j0 (T at ``tm``, row stride t_ld)."""
            mp = m - j0
            vs = v + (j0 * k + j0) * itemsize
            c = a + (j0 * ld + col) * itemsize
            _gemm(backend, dtype, kb, n2, mp, 1.0, vs, (1, k), c, (ld, 1), 0.0, w, (n2, 1), conj_a=True)
            _gemm(backend, dtype, kb, n2, kb, 1.0, tm, (1, t_ld), w, (n2, 1), 0.0, w2, (n2, 1), conj_a=True)
            _gemm(backend, dtype, mp, n2, kb, -1.0, vs, (k, 1), w2, (n2, 1), 1.0, c, (ld, 1))

        factors = []
        for oi, o0 in enumerate(outers):
            ob = min(outer, k - o0)
            bi = o0 // NB
            jb1 = min(NB, ob)
            panel(bi, o0, jb1, o0)
            tm, t_ld = tb + bi * NB * NB * itemsize, NB
            if ob > NB:
                jb2 = ob - NB
                update(o0, NB, tm, NB, o0 + NB, jb2)
                panel(bi + 1, o0 + NB, jb2, o0)
                tm, t_ld = tj + oi * outer * outer * itemsize, outer
                t_reg2, t2_first = _bind(backend, tm, outer * outer, itemsize)
                words = [jb2, t_first + bi * NB * NB, t_first + (bi + 1) * NB * NB, g_first, t2_first, 0, 0, 0]
                ctx.dispatch("linalg_qr_tjoin", words, [t_reg, g_reg, t_reg2], (1, 1, 1), sdef)
            factors.append((o0, ob, tm, t_ld))
            n2 = n - o0 - ob
            if n2:
                update(o0, ob, tm, t_ld, o0 + ob, n2)
        for j0, ob, tm, t_ld in reversed(factors):
            mp = m - j0
            nq = kq - j0
            vs = v + (j0 * k + j0) * itemsize
            q2 = q + (j0 * q_ld + j0) * itemsize
            _gemm(backend, dtype, ob, nq, mp, 1.0, vs, (1, k), q2, (q_ld, 1), 0.0, w, (nq, 1), conj_a=True)
            _gemm(backend, dtype, ob, nq, ob, 1.0, tm, (t_ld, 1), w, (nq, 1), 0.0, w2, (nq, 1))
            _gemm(backend, dtype, mp, nq, ob, -1.0, vs, (k, 1), w2, (nq, 1), 1.0, q2, (q_ld, 1))
    finally:
        for ptr in (v, tb, g, w, w2) + ((tj,) if tj is not None else ()):
            backend.free(ptr)
        if steps is not None:
            steps.free()


#: Columns per trailing update of ``qr_blocked`` (knob ``linalg_qr_outer``: 32 updates after
#: every panel): two panels, their block reflectors joined.
QR_OUTER = 64


def _qr_outer() -> int:
    """``qr_blocked``'s columns per trailing update: ``GPUTENSOR_LINALG_QR_OUTER`` (32 or 64) where
    set, else QR_OUTER. BackendError (invalid argument) for another value."""
    outer = int(config.value("linalg_qr_outer")) or QR_OUTER
    if outer not in (NB, 2 * NB):
        raise invalid_argument(f"GPUTENSOR_LINALG_QR_OUTER={outer} must be {NB} or {2 * NB}")
    return outer


#: Least panel height whose Householder QR runs a dispatch per column over many workgroups
#: (``linalg_qr_step.wgsl``) instead of one workgroup (``GPUTENSOR_LINALG_QR_STEP_ROWS``, or
#: ``GPUTENSOR_LINALG_PANEL_ROWS``, overrides it). The steps cost jb + 2 dispatches a panel,
#: about 9 us + 3 ns a row each in GPU time on the H200, the one workgroup's panel about 145 us
#: + 0.25 us a row (benchmarks/results/h200-2026-12-01[bc]-linalg*.log): the steps take less
#: GPU time from about 1,100 rows, once their host time is gone (a replayed program).
QR_STEP_MIN_ROWS = 1024
#: Panel rows per workgroup of ``linalg_qr_step`` (``GPUTENSOR_LINALG_QR_STEP_CHUNK`` overrides it).
QR_STEP_CHUNK = 64


def _qr_step_chunk() -> int:
    """Panel rows per workgroup of ``linalg_qr_step``: ``GPUTENSOR_LINALG_QR_STEP_CHUNK`` (32, 64
    or 128) where set, else QR_STEP_CHUNK. BackendError (invalid argument) for another value."""
    chunk = int(config.value("linalg_qr_step_chunk")) or QR_STEP_CHUNK
    if chunk not in (32, 64, 128):
        raise invalid_argument(f"GPUTENSOR_LINALG_QR_STEP_CHUNK={chunk} must be 32, 64 or 128")
    return chunk


class _QRSteps:
    """Scratch and dispatches of ``qr_blocked``'s panels over many workgroups: jb + 2 dispatches
    of ``linalg_qr_step.wgsl`` per panel (column sums of the next column in every step, reduced
    by every workgroup in the next), ping-ponging two buffers of partial sums."""

    def __init__(self, backend: Any, dtype: str, m: int) -> None:
        self.backend = backend
        ctx = backend.context
        itemsize = _element(backend, dtype)
        wg = 64 if ctx.is_software else 256
        fast = "true" if config.value("linalg_qr_step_unrolled") else "false"
        # (U: the rows of a row slice in a workgroup's chunk)
        self.chunk = chunk = _qr_step_chunk()
        self.defines = {**scalar_defines(dtype), "WG": wg, "CH": chunk, "FAST": fast, "U": max(1, chunk * NB // wg)}
        self.most = -(-m // chunk)
        self.bufs = [backend.alloc(self.most * NB * itemsize, zero=False) for _ in range(2)]
        self.rr = backend.alloc(NB * NB * itemsize, zero=False)
        self.binds = [_bind(backend, b, self.most * NB, itemsize) for b in self.bufs]
        self.r_bind = _bind(backend, self.rr, NB * NB, itemsize)

    def panel(self, a_reg: Any, a_first: int, ld: int, mp: int, jb: int, t_reg: Any, t_first: int, v_reg: Any,
              v_first: int, v_ld: int) -> None:
        """Householder QR of the mp x jb panel at element ``a_first``, as ``linalg_qr_panel``."""
        ctx = self.backend.context
        parts = -(-mp // self.chunk)
        r_reg, r_first = self.r_bind
        for s in range(jb + 2):
            (pin_reg, pin_first), (pout_reg, pout_first) = self.binds[(s + 1) % 2], self.binds[s % 2]
            words = [a_first, ld, mp, jb, s, parts, pin_first, pout_first, t_first, r_first, v_first, v_ld]
            ctx.dispatch("linalg_qr_step", words, [a_reg, pin_reg, pout_reg, t_reg, r_reg, v_reg], (parts, 1, 1),
                         self.defines)

    def free(self) -> None:
        for ptr in (*self.bufs, self.rr):
            self.backend.free(ptr)


__all__ = ["small_max", "BLOCK_SIZES", "CHOLESKY_BLOCK", "CHOLESKY_OUTER", "block_width", "LU_BLOCK", "LU_TREE_MIN_ROWS", "NB", "QR_OUTER",
           "QR_STEP_MIN_ROWS", "tslu_rows", "SMALL_MAX", "TRSV_MAX_K", "TRSV_BLOCKED_MIN", "trsv", "trsv_blocked", "cholesky_blocked", "det_from_lu", "laswp", "lu_blocked", "lu_solve",
           "qr_blocked", "qr_small", "small", "trsm"]
