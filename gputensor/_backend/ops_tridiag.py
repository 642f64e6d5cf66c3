"""The symmetric eigenproblem through a tridiagonal matrix, on the device: Householder
tridiagonalisation, bisection, inverse iteration and the back-transform.

For one real symmetric n x n matrix A (float32 or float64, row-major, both triangles):

* :func:`sytrd` reduces A to the tridiagonal T = Q^T A Q (LAPACK's sytd2, the product of
  each step fused with the rank-2 update of the step before, so the trailing matrix is read and
  written once per column): per column j one dispatch of ``linalg_tridiag_step.wgsl``, whose
  every workgroup finishes step j - 1's vector w and forms column j as updated and its
  reflector itself (a few reads of n-vectors and two reductions), then applies the rank-2
  update A -= v w^T + w v^T to its rows of the trailing matrix and forms their entries of
  p = tau A v. The reflectors stay
  as the rows of V (H_k = I - tau_k v_k v_k^T, Q = H_0 H_1 ... H_{n-2}). The dispatches are
  recorded once per (dtype, n) and replayed as one ``LaunchProgram``. (Not
  LAPACK's blocked latrd: its per-column symv reads the trailing matrix once where this reads
  and writes it once, but it needs the corrections V (W^T v) + W (V^T v) per column, and the
  trailing update would be a rank-2b gemm every b columns.)
* :func:`bisect`: the eigenvalues of T by bisection on Sturm counts, one invocation per
  eigenvalue (``linalg_tridiag_bisect.wgsl``), in the working real type (float64 where the
  adapter has ``shader-f64``).
* :func:`inverse_iteration`: an eigenvector of T per eigenvalue, one invocation each
  (``linalg_tridiag_vectors.wgsl``); eigenvalues closer than :func:`cluster_gap` are left to
  the caller to orthogonalise (``gputensor.linalg._spectral``).
* :func:`back_transform`: Z := Q Z with the reflectors in blocks of ``factor_common.NB``, each a
  compact-WY block reflector I - V T V^T (T from the Gram matrix V^T V by
  ``linalg_qr_tmat.wgsl``) applied as three gemms, last block first.

Everything is recorded into the open batch; nothing is read back. A repeated call structure of
``bisect``, ``inverse_iteration`` and ``back_transform`` replays the dispatches its first call
recorded (``captured.replayed``, knob ``linalg_replay``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from . import captured, ops_gemm
from .errors import invalid_argument
from .factor_common import NB, replay_on
from .factor_gemm import gemm
from .launch import LaunchProgram, Region
from .linalg_scalar import element, scalar_defines
from .plan_cache import PlanCache
from .validate import check_pointer
from .wgsl_types import DTYPE_TABLE, literal

__all__ = ["REAL_DTYPES", "working_dtype", "fits", "cluster_gap", "sytrd", "bisect", "inverse_iteration",
           "back_transform", "ITERATIONS"]

#: The dtypes of the tridiagonal path.
REAL_DTYPES = ("float32", "float64")
#: Solves of inverse iteration per eigenvector (the first from a pseudo-random vector).
ITERATIONS = 3
#: Rows per workgroup of the update kernel, per element size.
_UPDATE_ROWS = {4: 8, 8: 4}
_UPDATE_WG = 256

_EPS = {"float32": 2.0 ** -24, "float64": 2.0 ** -53}
_SAFMIN = {"float32": 2.0 ** -126, "float64": 2.0 ** -1022}
_RMAX = {"float32": 3.4028234663852886e38, "float64": 1.7976931348623157e308}
_BITS = {"float32": 24, "float64": 53}


def working_dtype(backend: Any, dtype: str) -> str:
    """The real dtype of the tridiagonal eigensolver for matrices of ``dtype``: float64 where
    the adapter has it (float32 input then gets eigenvectors of T orthogonal to float64
    precision), else float32."""
    return "float64" if backend.supports(DTYPE_TABLE["float64"].feature) else dtype


def fits(backend: Any, dtype: str, n: int) -> bool:
    """Whether the n x n matrices of the path (``dtype`` and the working dtype) fit a binding."""
    wide = max(DTYPE_TABLE[dtype].itemsize, DTYPE_TABLE[working_dtype(backend, dtype)].itemsize)
    return n * n * wide <= backend.context.max_binding_size


def cluster_gap(dtype: str, rdtype: str) -> float:
    """Relative gap (to the largest |eigenvalue|) below which neighbouring eigenvalues count as a
    cluster whose inverse-iteration vectors the caller orthogonalises: inverse iteration in
    ``rdtype`` gives vectors whose angle to the exact ones is about eps(rdtype) ||T|| / gap, to
    be well below the accuracy of ``dtype``."""
    if rdtype == "float64" and dtype == "float32":
        return 1e-10
    return 1e-3


def _check(backend: Any, dtype: str, n: int) -> int:
    if dtype not in REAL_DTYPES:
        raise invalid_argument(f"tridiagonal eigensolver: {dtype!r} is not float32 or float64")
    if n < 2:
        raise invalid_argument(f"tridiagonal eigensolver of order {n} (at least 2)")
    return element(backend, dtype).itemsize


def _bind(backend: Any, ptr: int, elements: int, itemsize: int) -> tuple[Any, int]:
    win = backend.window(ptr, max(1, elements) * itemsize, itemsize)
    return win.binding, win.first


def _update_wg(ctx: Any) -> int:
    """Invocations per workgroup of the step kernel: 256, 64 on software adapters."""
    return 64 if ctx.is_software else _UPDATE_WG


#: Parameter words of the sytrd kernel: n, j, then the first elements of A, V and X.
_SYTRD_WORDS = struct.Struct("<8I")


@dataclass(frozen=True, eq=False)
class _SytrdCall:
    """A planned ``sytrd`` call structure on ``ctx``: the whole reduction as one program over
    the operands A, V and X (``sizes``: their bytes)."""

    ctx: Any
    program: LaunchProgram
    sizes: tuple[int, int, int]
    itemsize: int

    def launch(self, backend: Any, ptrs: tuple[int, int, int]) -> None:
        """Check the pointers and replay the program (through ``WgpuContext.dispatch`` while
        that is wrapped: a profiler or a test spy sees every step). BackendError (invalid
        argument) for a pointer out of range or misaligned."""
        if self.ctx.__dict__.get("dispatch") is not None:
            self.program.dispatch(backend, self.ctx, ptrs, _no_placeholder)
            return
        bases = []
        for name, ptr, nbytes in zip(("a", "v", "x"), ptrs, self.sizes):
            alloc, off = check_pointer(backend, name, ptr, nbytes, self.itemsize)
            bases.append((alloc.buffer, alloc.buffer.size, alloc.nbytes, off, ptr, alloc.whole))
        self.program.run(backend, self.ctx, bases, _no_placeholder)


def _no_placeholder(backend: Any, nbytes: int, *bindings: Any) -> Any:  # pragma: no cover
    raise AssertionError("the sytrd programs bind no placeholders")


#: Planned ``sytrd`` calls per backend, by (dtype, n).
_SYTRD_PLANS = PlanCache(32)
#: The programs ``captured.replayed`` keeps for ``bisect``, ``inverse_iteration`` and
#: ``back_transform``.
_PROGRAMS = PlanCache(64)


def _sytrd_program(ctx: Any, dtype: str, n: int, sizes: tuple[int, int, int], itemsize: int) -> LaunchProgram:
    """The n dispatches of ``sytrd`` (one ``linalg_tridiag_step`` per column) as one program
    over the operands A, V and X."""
    wgsl = scalar_defines(dtype)["T"]
    rb = _UPDATE_ROWS[itemsize]
    defines = {"T": wgsl, "WG": _update_wg(ctx), "RB": rb}
    pipe = ctx.pipeline("linalg_tridiag_step", 3, defines)
    regions = [Region(0, 0, sizes[0], itemsize, 0, 2, 0), Region(1, 0, sizes[1], itemsize, 0, 3, 0),
               Region(2, 0, sizes[2], itemsize, 0, 4, 0)]
    records = []
    for j in range(n):
        pin, pout = 3 + (j + 1) % 2, 3 + j % 2
        records.append((pipe, defines, [n, j, 0, 0, 0, pin, pout, 0], ctx.fold_grid(max(1, -(-(n - j - 1) // rb))),
                        regions))
    return LaunchProgram.compile("linalg_tridiag_step", _SYTRD_WORDS, ctx, records, [])


def sytrd(backend: Any, dtype: str, n: int, a: int, v: int, x: int) -> None:
    """Tridiagonalise the symmetric n x n matrix at ``a`` (row-major, both triangles; destroyed):
    ``x`` (5 n elements) receives d (the diagonal of T), e (its off-diagonal, n - 1 entries),
    tau, and two work vectors; ``v`` (n x n) the reflectors as rows (row k: zeros up to column
    k, 1 at column k + 1), so that A = Q T Q^T with Q = H_0 ... H_{n-2}, H_k = I - tau_k v_k
    v_k^T. n dispatches of ``linalg_tridiag_step``, planned once per (dtype, n) as one
    ``LaunchProgram``; every call checks the pointers and replays it. BackendError (invalid
    argument) for a dtype other than float32 / float64, n < 2 or pointers out of range;
    (unsupported) for float64 without ``shader-f64``."""
    itemsize = _check(backend, dtype, n)
    ctx = backend.context
    key = (dtype, n)
    plans = _SYTRD_PLANS.of(backend)
    plan = plans.get(key)
    if plan is None or plan.ctx is not ctx or not plan.program.valid_for(ctx):
        sizes = (n * n * itemsize, n * n * itemsize, 5 * n * itemsize)
        plan = _SytrdCall(ctx, _sytrd_program(ctx, dtype, n, sizes, itemsize), sizes, itemsize)
        _SYTRD_PLANS.keep(plans, key, plan)
    plan.launch(backend, (a, v, x))


def _real_defines(rdtype: str, bisection: bool) -> dict[str, object]:
    """Placeholders of linalg_tridiag_bisect.wgsl (``bisection``) or linalg_tridiag_vectors.wgsl."""
    wgsl = DTYPE_TABLE[rdtype].compute
    out: dict[str, object] = {"R": wgsl, "EPS": literal(_EPS[rdtype], wgsl), "SAFMIN": literal(_SAFMIN[rdtype], wgsl)}
    if bisection:
        out.update(RMAX=literal(_RMAX[rdtype], wgsl), NAN=DTYPE_TABLE[rdtype].nan, MAXIT=2 * _BITS[rdtype] + 64)
    return out


def bisect(backend: Any, rdtype: str, n: int, te: int, w: int, first: int = 0, count: int | None = None) -> None:
    """The eigenvalues ``first .. first + count - 1`` (ascending; default all n) of the symmetric
    tridiagonal matrix whose diagonal (n entries) and off-diagonal (n - 1 entries) follow each
    other at ``te`` into ``w`` (count entries), to an absolute accuracy of about 2 eps ||T||; NaN
    for a non-finite entry. One dispatch."""
    itemsize = _check(backend, rdtype, n)
    count = n - first if count is None else int(count)
    if first < 0 or count < 1 or first + count > n:
        raise invalid_argument(f"bisection for eigenvalues {first} .. {first + count - 1} of {n}")
    operands = [("te", te, (2 * n - 1) * itemsize, itemsize), ("w", w, count * itemsize, itemsize)]
    captured.replayed(backend, _PROGRAMS, ("bisect", rdtype, n, first, count), operands,
                      lambda: _bisect(backend, rdtype, n, te, w, first, count, itemsize), replay_on())


def _bisect(backend: Any, rdtype: str, n: int, te: int, w: int, first: int, count: int, itemsize: int) -> None:
    """``bisect``'s dispatch, recorded."""
    ctx = backend.context
    t_reg, t0 = _bind(backend, te, 2 * n - 1, itemsize)
    w_reg, w0 = _bind(backend, w, count, itemsize)
    ctx.dispatch("linalg_tridiag_bisect", [n, t0, w0, first, count, 0, 0, 0], [t_reg, w_reg],
                 ctx.fold_grid(-(-count // 64)), _real_defines(rdtype, True))


def inverse_iteration(backend: Any, rdtype: str, n: int, te: int, w: int, z: int, *, cols: int | None = None,
                      from_z: bool = False, iterations: int = ITERATIONS) -> None:
    """Unit eigenvectors of the tridiagonal matrix at ``te`` (as :func:`bisect`) into the
    ``cols`` (default n) columns of the row-major n x cols ``z``, column k by ``iterations``
    solves of inverse iteration with the shift ``w[k]``, from a pseudo-random vector (with
    ``from_z``: from column k of ``z`` as it is). Vectors of eigenvalues closer than
    :func:`cluster_gap` need orthogonalising. Scratch of 3 n elements per column, in chunks of
    columns that fit a binding. BackendError (invalid argument) for bad sizes or pointers."""
    itemsize = _check(backend, rdtype, n)
    cols = n if cols is None else int(cols)
    if cols < 1 or iterations < 1:
        raise invalid_argument(f"inverse iteration of {cols} columns, {iterations} solves")
    operands = [("te", te, (2 * n - 1) * itemsize, itemsize), ("w", w, cols * itemsize, itemsize),
                ("z", z, n * cols * itemsize, itemsize)]
    key = ("vectors", rdtype, n, cols, bool(from_z), int(iterations))
    captured.replayed(backend, _PROGRAMS, key, operands,
                      lambda: _inverse_iteration(backend, rdtype, n, te, w, z, cols, from_z, iterations, itemsize),
                      replay_on())


def _inverse_iteration(backend: Any, rdtype: str, n: int, te: int, w: int, z: int, cols: int, from_z: bool,
                       iterations: int, itemsize: int) -> None:
    """``inverse_iteration``'s dispatches, recorded one by one."""
    ctx = backend.context
    t_reg, t0 = _bind(backend, te, 2 * n - 1, itemsize)
    w_reg, w0 = _bind(backend, w, cols, itemsize)
    z_reg, z0 = _bind(backend, z, n * cols, itemsize)
    limit = min(ctx.max_binding_size, 1 << 28)
    chunk = min(cols, max(64, limit // (3 * n * itemsize) // 64 * 64))
    s = backend.alloc(3 * n * chunk * itemsize, zero=False)
    try:
        s_reg, s0 = _bind(backend, s, 3 * n * chunk, itemsize)
        defines = _real_defines(rdtype, False)
        for k0 in range(0, cols, chunk):
            count = min(chunk, cols - k0)
            words = [n, t0, w0, z0, s0, k0, count, cols, int(from_z), int(iterations), 0, 0]
            ctx.dispatch("linalg_tridiag_vectors", words, [t_reg, w_reg, z_reg, s_reg],
                         ctx.fold_grid(-(-count // 64)), defines)
    finally:
        backend.free(s)


def back_transform(backend: Any, dtype: str, n: int, v: int, tb: int, z: int, cols: int | None = None) -> None:
    """Z := Q Z for the row-major n x ``cols`` (default n) ``z`` and ``sytrd``'s reflectors
    ``v`` (rows), in blocks of NB reflectors from the last: W = V^T Z, W = T W, Z -= V W
    (gemms), T the block's compact-WY factor computed in place at ``tb`` (one NB x NB block per
    block of reflectors, each holding the block's tau on its diagonal on entry:
    ``linalg_qr_tmat.wgsl``, from the Gram matrix V^T V)."""
    itemsize = _check(backend, dtype, n)
    cols = n if cols is None else int(cols)
    if cols < 1:
        raise invalid_argument(f"back-transform of {cols} columns")
    blocks = -(-(n - 1) // NB)
    operands = [("v", v, n * n * itemsize, itemsize), ("tb", tb, blocks * NB * NB * itemsize, itemsize),
                ("z", z, n * cols * itemsize, itemsize)]
    captured.replayed(backend, _PROGRAMS, ("back", dtype, n, cols, *ops_gemm.plan_settings()), operands,
                      lambda: _back_transform(backend, dtype, n, v, tb, z, cols, itemsize), replay_on())


def _back_transform(backend: Any, dtype: str, n: int, v: int, tb: int, z: int, cols: int, itemsize: int) -> None:
    """``back_transform``'s dispatches, recorded one by one."""
    ctx = backend.context
    k = n - 1  # reflectors H_0 .. H_{n-2}
    blocks = list(range(0, k, NB))
    sdef = scalar_defines(dtype)
    g = backend.alloc(NB * NB * itemsize, zero=False)
    w1 = backend.alloc(NB * cols * itemsize, zero=False)
    w2 = backend.alloc(NB * cols * itemsize, zero=False)
    try:
        t_reg, t_first = _bind(backend, tb, len(blocks) * NB * NB, itemsize)
        g_reg, g_first = _bind(backend, g, NB * NB, itemsize)
        _bind(backend, v, n * n, itemsize)
        _bind(backend, z, n * cols, itemsize)
        for bi, j0 in reversed(list(enumerate(blocks))):
            jb = min(NB, k - j0)
            mb = n - j0 - 1
            vb = v + (j0 * n + j0 + 1) * itemsize  # V_b[r, c] = v[(j0 + c) * n + j0 + 1 + r]
            gemm(backend, dtype, jb, jb, mb, 1.0, vb, (n, 1), vb, (1, n), 0.0, g, (jb, 1))
            ctx.dispatch("linalg_qr_tmat", [jb, t_first + bi * NB * NB, g_first, 0], [t_reg, g_reg], (1, 1, 1), sdef)
            tm = tb + bi * NB * NB * itemsize
            zb = z + (j0 + 1) * cols * itemsize
            gemm(backend, dtype, jb, cols, mb, 1.0, vb, (n, 1), zb, (cols, 1), 0.0, w1, (cols, 1))
            gemm(backend, dtype, jb, cols, jb, 1.0, tm, (NB, 1), w1, (cols, 1), 0.0, w2, (cols, 1))
            gemm(backend, dtype, mb, cols, jb, -1.0, vb, (1, n), w2, (cols, 1), 1.0, zb, (cols, 1))
    finally:
        for ptr in (g, w1, w2):
            backend.free(ptr)
