"""Factorizations of stacks of small matrices (order <= ``SMALL_MAX``), a whole stack in one
dispatch: Cholesky, Gauss-Jordan solve / inverse and determinants (a row per invocation in
registers, 64 / n matrices per workgroup, ``_wgsl/linalg_small_rows.wgsl``, or one workgroup
per matrix with the matrix in workgroup memory, ``_wgsl/linalg_small.wgsl``) and Householder QR
with Q accumulated backwards (``_wgsl/linalg_qr_small.wgsl``). Each call structure is planned
once as a ``LaunchProgram`` and replayed (only the pointers are checked). No wgpu here.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass
from typing import Any

from .errors import invalid_argument
from .factor_common import NAN, itemsize_of, math_defines
from .launch import LaunchProgram, Region
from .linalg_scalar import scalar_defines
from .plan_cache import PlanCache
from .validate import check_int, check_pointer

__all__ = ["ROWS_MAX_K", "SMALL_MAX", "qr_small", "small", "small_max"]

#: Largest order the batched small kernels take (workgroup memory holds the matrix).
SMALL_MAX = 32

_SMALL_OPS = {"cholesky": 0, "solve": 1, "inv": 2, "det": 3}
#: Most right-hand columns of a small ``solve`` on the row-per-invocation kernel
#: (``linalg_small_rows.wgsl``; more go to ``linalg_small.wgsl``).
ROWS_MAX_K = 32
_WG = 64


@functools.lru_cache(maxsize=None)
def _rows_defines(dtype: str) -> dict[str, str]:
    """T, R, SCALAR and NAN (of the real type) of ``linalg_small_rows.wgsl``."""
    nan = NAN[scalar_defines(dtype)["R"]]
    return {"NAN": nan, **scalar_defines(dtype, nan)}


def small_max(op: str, dtype: str) -> int:
    """Largest order ``small`` (``qr_small`` for 'qr') takes for ``op`` and ``dtype``: SMALL_MAX,
    16 for complex128's solve, inverse and QR (the matrix and a column per invocation, or A and
    Q, in 32 KiB of workgroup memory)."""
    return 16 if op in ("solve", "inv", "qr") and dtype == "complex128" else SMALL_MAX


def _nmax(n: int) -> int:
    return 8 if n <= 8 else 16 if n <= 16 else 32 if n <= 32 else 64


#: Parameter words of ``linalg_small_rows`` / ``linalg_small`` and of ``linalg_qr_small``.
_SMALL_WORDS = struct.Struct("<12I")
_QR_WORDS = struct.Struct("<16I")


@dataclass(frozen=True, eq=False)
class _SmallCall:
    """A planned call structure on ``ctx``: its one-dispatch program over the operands, each
    (name, bytes it touches, itemsize), in the program's base order."""

    ctx: Any
    program: LaunchProgram
    operands: tuple[tuple[str, int, int], ...]

    def launch(self, backend: Any, ptrs: tuple[int, ...]) -> None:
        """Check the pointers (BackendError, invalid argument, for one out of range or
        misaligned) and record the dispatch: replayed, or through ``WgpuContext.dispatch`` while
        that is wrapped (a profiler or a test spy sees every dispatch)."""
        ctx = self.ctx
        if ctx.__dict__.get("dispatch") is not None:
            self.program.dispatch(backend, ctx, ptrs, _spare)
            return
        bases = []
        for (name, nbytes, itemsize), ptr in zip(self.operands, ptrs):
            alloc, off = check_pointer(backend, name, ptr, nbytes, itemsize)
            bases.append((alloc.buffer, alloc.buffer.size, alloc.nbytes, off, ptr, alloc.whole))
        self.program.run(backend, ctx, bases, _spare)


def _spare(backend: Any, nbytes: int, *bindings: Any) -> Any:
    """The binding that stands in for ``det``'s info words, which its kernel does not use."""
    return backend.context.spare_region(nbytes)


#: Planned calls of ``small`` and ``qr_small`` per backend.
_SMALL_PLANS = PlanCache(128)


def _planned(backend: Any, key: tuple[Any, ...]) -> _SmallCall | None:
    """The kept plan of ``key`` for ``backend``'s context, or None."""
    plan = _SMALL_PLANS.of(backend).get(key)
    if plan is not None and plan.ctx is backend.context and plan.program.valid_for(plan.ctx):
        return plan
    return None


def _keep(backend: Any, key: tuple[Any, ...], kernel: str, packer: struct.Struct, words: list[int],
          regions: list[Region], grid: tuple[int, int, int], defines: dict[str, Any],
          operands: tuple[tuple[str, int, int], ...]) -> _SmallCall:
    """Compile the one-dispatch program and keep it under ``key``."""
    ctx = backend.context
    pipe = ctx.pipeline(kernel, len(regions), defines)
    program = LaunchProgram.compile(kernel, packer, ctx, [(pipe, defines, words, grid, regions)], [])
    plan = _SmallCall(ctx, program, operands)
    _SMALL_PLANS.keep(_SMALL_PLANS.of(backend), key, plan)
    return plan


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
    (``linalg_small.wgsl``). Each call structure is planned once; later calls check only the
    pointers. BackendError (invalid argument) for bad sizes or pointers.
    """
    key = (op, dtype, n, batch, a_ld, a_bs, k, b_ld, b_bs)
    plan = _planned(backend, key)
    if plan is not None and b is not None and (info is not None or op == "det"):
        plan.launch(backend, (a, b) if op == "det" else (a, b, info))
        return
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
    itemsize = itemsize_of(backend, dtype)
    ctx = backend.context
    cols = max(1, k) if op == "solve" else n
    a_bytes = ((batch - 1) * a_bs + (n - 1) * a_ld + n) * itemsize
    b_bytes = (3 * batch if op == "det" else (batch - 1) * b_bs + (n - 1) * b_ld + cols) * itemsize
    regions = [Region(0, 0, a_bytes, itemsize, 0, 3, 0), Region(1, 0, b_bytes, itemsize, 0, 6, 0),
               Region(-1, 0, 0, 4, 0, 0, 0) if op == "det" else Region(2, 0, batch * 4, 4, 0, 9, 0)]
    operands = (("a", a_bytes, itemsize), ("b", b_bytes, itemsize)) + (() if op == "det" else (("info", batch * 4, 4),))
    words = [batch, n, cols, 0, a_ld, a_bs, 0, b_ld, b_bs, 0, 0, 0]
    nm = _nmax(n)
    if op != "det" and cols <= ROWS_MAX_K:  # a row per invocation, 64 // nm matrices per workgroup
        km = 1 if op == "cholesky" else nm if op == "inv" else 1 << max(0, cols - 1).bit_length()
        defines = {**_rows_defines(dtype), "NM": nm, "G": _WG // nm, "KM": km, "OP": _SMALL_OPS[op]}
        kernel, grid = "linalg_small_rows", ctx.fold_grid(-(-batch // (_WG // nm)))
    else:
        defines = {"NMAX": nm, "OP": _SMALL_OPS[op], "XS": nm * _WG if op != "det" else 1, **math_defines(dtype),
                   "NAN": NAN[scalar_defines(dtype)["R"]]}
        kernel, grid = "linalg_small", ctx.fold_grid(batch)
    plan = _keep(backend, key, kernel, _SMALL_WORDS, words, regions, grid, defines, operands)
    plan.launch(backend, (a, b) if op == "det" else (a, b, info))


def qr_small(backend: Any, dtype: str, m: int, n: int, batch: int, a: int, a_ld: int, a_bs: int,
             q: int, q_ld: int, q_bs: int, kq: int, r: int, r_ld: int, r_bs: int, kr: int) -> None:
    """Householder QR of a stack of m x n matrices (1 <= m, n <= SMALL_MAX), one workgroup
    each: Q (m x kq) and R (kr x n, zeros below the diagonal), kq and kr each min(m, n) or m.
    ``a`` is only read. Complex dtypes: unitary Q (zgeqrf's reflectors); complex128 up to
    order ``small_max('qr', 'complex128')``. Each call structure is planned once; later calls
    check only the pointers. BackendError (invalid argument) for bad sizes or pointers."""
    key = ("qr", dtype, m, n, batch, a_ld, a_bs, q_ld, q_bs, kq, r_ld, r_bs, kr)
    plan = _planned(backend, key)
    if plan is not None:
        plan.launch(backend, (a, q, r))
        return
    m, n, batch, kq, kr, a_ld, a_bs, q_ld, q_bs, r_ld, r_bs = (check_int(name, v) for name, v in (
        ("m", m), ("n", n), ("batch", batch), ("kq", kq), ("kr", kr), ("a_ld", a_ld), ("a_bs", a_bs),
        ("q_ld", q_ld), ("q_bs", q_bs), ("r_ld", r_ld), ("r_bs", r_bs)))
    k = min(m, n)
    top = small_max("qr", dtype)
    if not (1 <= m <= top and 1 <= n <= top) or batch < 1 or kq not in (k, m) or kr not in (k, m):
        raise invalid_argument(f"small QR of {m} x {n} (kq {kq}, kr {kr}), batch {batch}")
    itemsize = itemsize_of(backend, dtype)
    ctx = backend.context
    sizes = [((batch - 1) * a_bs + (m - 1) * a_ld + n) * itemsize, ((batch - 1) * q_bs + (m - 1) * q_ld + kq) * itemsize,
             ((batch - 1) * r_bs + (kr - 1) * r_ld + n) * itemsize]
    regions = [Region(i, 0, nbytes, itemsize, 0, word, 0) for i, (nbytes, word) in enumerate(zip(sizes, (5, 8, 11)))]
    operands = tuple((name, nbytes, itemsize) for name, nbytes in zip(("a", "q", "r"), sizes))
    words = [batch, m, n, kq, kr, 0, a_ld, a_bs, 0, q_ld, q_bs, 0, r_ld, r_bs, 0, 0]
    defines = {**scalar_defines(dtype), "NMAX": _nmax(max(m, n))}
    plan = _keep(backend, key, "linalg_qr_small", _QR_WORDS, words, regions, ctx.fold_grid(batch), defines, operands)
    plan.launch(backend, (a, q, r))
