"""The gemm calls of the factorizations (``ops_cholesky``, ``ops_lu``, ``ops_qr``,
``ops_tridiag``): C := alpha op(A) op(B) + beta C on row-major strided operands through
``ops_gemm`` (its BLAS layouts and kept plans; complex products from four real gemms over the
interleaved parts), and the lower-triangle form of a square C. No wgpu here.
"""

from __future__ import annotations

import functools
from typing import Any

from . import ops_gemm
from .factor_common import component_of
from .linalg_scalar import element

__all__ = ["blas_form", "gemm", "triangle"]

def gemm(backend: Any, dtype: str, m: int, n: int, k: int, alpha: float, a: int, sa: tuple[int, int],
          b: int, sb: tuple[int, int], beta: float, c: int, sc: tuple[int, int], batch: int = 1,
          bs: tuple[int, int, int] = (0, 0, 0), *, conj_a: bool = False, conj_b: bool = False,
          lower: bool = False) -> None:
    """C := alpha op(A) op(B) + beta C (real alpha, beta; op conjugates with ``conj_a`` /
    ``conj_b``). Complex operands: the complex product from four real gemms over the
    interleaved parts (Re C = Ar Br - Ai Bi, Im C = Ar Bi + Ai Br, the conjugations as signs).
    ``lower``: C's strict upper triangle may be left as it was (``_real_gemm``)."""
    if not (m and n):
        return
    part = component_of(backend, dtype)
    if not part:
        real_gemm(backend, dtype, m, n, k, alpha, a, sa, b, sb, beta, c, sc, batch, bs, lower)
        return
    ps = element(backend, part).itemsize
    sa2, sb2, sc2 = (2 * sa[0], 2 * sa[1]), (2 * sb[0], 2 * sb[1]), (2 * sc[0], 2 * sc[1])
    bs2 = (2 * bs[0], 2 * bs[1], 2 * bs[2])
    ga = -1.0 if conj_a else 1.0
    gb = -1.0 if conj_b else 1.0

    def g(backend: Any, m: int, n: int, k: int, alpha: float, a: int, sa: tuple[int, int], b: int,
          sb: tuple[int, int], beta: float, c: int, sc: tuple[int, int], batch: int, bs: tuple[int, int, int], *,
          dtype: str) -> None:
        real_gemm(backend, dtype, m, n, k, alpha, a, sa, b, sb, beta, c, sc, batch, bs)
    g(backend, m, n, k, alpha, a, sa2, b, sb2, beta, c, sc2, batch, bs2, dtype=part)
    g(backend, m, n, k, -alpha * ga * gb, a + ps, sa2, b + ps, sb2, 1.0, c, sc2, batch, bs2, dtype=part)
    g(backend, m, n, k, alpha * gb, a, sa2, b + ps, sb2, beta, c + ps, sc2, batch, bs2, dtype=part)
    g(backend, m, n, k, alpha * ga, a + ps, sa2, b, sb2, 1.0, c + ps, sc2, batch, bs2, dtype=part)


@functools.lru_cache(maxsize=4096)
def blas_form(m: int, n: int, k: int, sa: tuple[int, int], sb: tuple[int, int], sc: tuple[int, int], batch: int,
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


def real_gemm(backend: Any, dtype: str, m: int, n: int, k: int, alpha: float, a: int, sa: tuple[int, int],
               b: int, sb: tuple[int, int], beta: float, c: int, sc: tuple[int, int], batch: int,
               bs: tuple[int, int, int], lower: bool = False) -> None:
    """``ops_gemm.gemm_strided`` of a real dtype, replaying the plan an earlier call of the same
    structure kept (``ops_gemm.planned_call``: only the pointers are checked) where there is
    one; the factorizations repeat the same few gemm shapes step after step and call after call.
    ``lower`` (a square C, row-major or column-major in a BLAS layout): only the tiles that
    reach C's lower triangle run (``gemm_strided_batched``'s ``triangle``), the strict upper
    triangle may be left as it was."""
    form = blas_form(m, n, k, sa, sb, sc, batch, bs) if k > 0 else None
    if form is not None:
        swap, args = form
        ta, tb, mm, nn, kk, lda, qa, ldb, qb, ldc, qc, count = args
        tri = triangle(swap) if lower else 0
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


def triangle(swap: bool) -> int:
    """``gemm_strided_batched``'s ``triangle`` for the lower triangle of a row-major C: the
    kernel's column-major C is its transpose when A and B trade places (upper: 1), else C (2)."""
    return 1 if swap else 2
