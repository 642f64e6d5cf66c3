"""One-sided (Hestenes) Jacobi kernels for the SVD and the symmetric / Hermitian eigenproblem.

Two launchers:

* :func:`jacobi_small` -- batches of small matrices (both dims at most ``SMALL_MAX``), one
  workgroup per matrix, every sweep in workgroup memory, results sorted and written by the
  kernel (``_wgsl/svd_jacobi_small.wgsl``). ``mode`` 'svd' takes columns of the matrix
  (``x`` holds the matrix transposed, row-major) and writes singular values (descending), U and
  the rows of Vh; 'eigh' takes a symmetric matrix (its lower triangle) and writes eigenvalues
  (ascending) and eigenvectors (as columns).
* :func:`jacobi_sweeps` -- sweeps of the round-robin ordering over matrices in device memory,
  one dispatch per step with one workgroup per pair of column blocks (``_wgsl/svd_jacobi_block.wgsl``:
  the pair's Gram matrix, diagonalised by two-sided Jacobi in workgroup memory, rotates the
  columns);
  the caller prepares the columns, reads the per-sweep flags to see convergence, and derives
  the results (norms, sorting) with ordinary array operations.

Both record through ``launch.LaunchProgram``: the program of a call structure (the kernels, their
parameter templates and bindings) is kept per backend and replayed for new pointers; with a
``dispatch`` wrapper on the context (profiler, test spies) every dispatch takes its reference
path through ``WgpuContext.dispatch``.

Both take float32, float64, complex64 and complex128 (one kernel source each, generic over the
element through ``linalg_scalar``; complex columns rotate by complex Jacobi rotations).
Rotations are applied when ``|g| > TOL sqrt(a b)`` (``a``, ``b`` the squared column norms,
``g`` their dot product ``b_p^H b_q``) and a sweep counts as unconverged when some ``|g|`` exceeds ``LOOSE``
times the same bound, so that rounding noise between the two never stops convergence; columns
at rounding level (:func:`negligible`) are rotated but take no part in the convergence test.
"""

from __future__ import annotations

import functools
import math
import struct
from collections.abc import Callable, Sequence
from typing import Any

from .errors import invalid_argument
from .launch import LaunchProgram, Record, Region
from .linalg_scalar import element, scalar_defines
from .ops_elementwise import _words_struct
from .plan_cache import PlanCache
from .validate import launch_base
from .wgsl_types import DTYPE_TABLE, literal

__all__ = ["SMALL_MAX", "MAX_SWEEPS", "small_max", "tolerances", "negligible", "jacobi_small", "jacobi_sweeps"]

#: Largest matrix dim the workgroup-memory kernel takes (complex128: :data:`SMALL_MAX_WIDE`).
SMALL_MAX = 32
#: Largest dim of complex128 matrices in the workgroup-memory kernel (B and V of 16-byte
#: elements within 32 KiB of workgroup memory).
SMALL_MAX_WIDE = 24
#: Sweeps before a matrix counts as not converged.
MAX_SWEEPS = 40
#: Lanes per workgroup of the step kernel.
STEP_WG = 256
#: Most lanes of the small kernel.
SMALL_WG = 256


def small_max(dtype: str) -> int:
    """Largest matrix dim the workgroup-memory kernel takes for ``dtype``."""
    return SMALL_MAX_WIDE if DTYPE_TABLE[dtype].itemsize > 8 else SMALL_MAX


def tolerances(dtype: str, m: int) -> tuple[float, float]:
    """(rotation threshold, convergence threshold) for columns of length ``m``."""
    tol = _EPS[_real(dtype)] * max(1.0, math.sqrt(m))
    return tol, 64.0 * tol


def negligible(dtype: str, m: int, n: int) -> float:
    """Relative size of a negligible singular value of an m x n matrix: a column whose norm is
    at most this times the largest column norm (of a matrix scaled to largest magnitude 1, at
    most this itself) is rounding noise. Such columns take no part in the convergence test
    (half this size in the kernels, a margin for the caller's own comparison): their left
    vectors are replaced by an orthonormal completion of the others."""
    return _EPS[_real(dtype)] * max(1.0, math.sqrt(m * n))


def _negl_defines(dtype: str, m: int, n: int) -> dict[str, object]:
    wgsl = DTYPE_TABLE[dtype].real_compute
    negl = negligible(dtype, m, n)
    return {"NEGL": literal(negl, wgsl), "NEGL2": literal((0.5 * negl) ** 2, wgsl)}


_EPS = {"float32": 2.0 ** -23, "float64": 2.0 ** -52}


def _real(dtype: str) -> str:
    return DTYPE_TABLE[dtype].component or dtype


def _storage(backend, dtype: str) -> tuple[int, int]:
    """(element size, real size) in bytes; BackendError for other dtypes or a missing feature."""
    info = element(backend, dtype)
    return info.itemsize, DTYPE_TABLE[_real(dtype)].itemsize


def _pow2_ceil(v: int) -> int:
    return 1 << max(0, (int(v) - 1).bit_length())


@functools.lru_cache(maxsize=128)
def small_defines(mode: str, dtype: str, m: int, n: int, sweeps: int) -> dict[str, object]:
    """Placeholders of svd_jacobi_small.wgsl for one specialisation."""
    np_ = n + (n & 1)
    pairs = np_ // 2
    tpp = min(_pow2_ceil(m), max(1, _pow2_ceil(SMALL_WG // pairs + 1) // 2))
    while pairs * tpp > SMALL_WG:
        tpp //= 2
    tol, loose = tolerances(dtype, m)
    info = DTYPE_TABLE[dtype]
    wgsl = info.real_compute
    return {
        **scalar_defines(dtype), "M": m, "N": n, "NP": np_, "P": pairs, "TPP": tpp, "WG": pairs * tpp,
        "EIGH": "true" if mode == "eigh" else "false", "SWEEPS": sweeps,
        "VN": 1 if mode == "eigh" else n * n,
        "MAXF": literal(_MAXF[_real(dtype)], wgsl),
        "TOL": literal(tol, wgsl), "LOOSE": literal(loose, wgsl), "NAN": info.nan, **_negl_defines(dtype, m, n),
    }


_MAXF = {"float32": 3.4028234663852886e38, "float64": 1.7976931348623157e308}


def jacobi_small(backend, mode: str, dtype: str, batch: int, m: int, n: int, x: int, s: int,
                 u: int, u_strides: tuple[int, int], v: int | None, v_strides: tuple[int, int],
                 status: int, *, sweeps: int = MAX_SWEEPS) -> None:
    """Record the small-matrix Jacobi kernel over ``batch`` contiguous matrices at ``x``.

    'svd': ``x`` holds each m x n matrix (m >= n) transposed (n rows of m); writes ``n``
    singular values per matrix at ``s`` (descending; real, of the dtype's real type), the left
    vectors at ``u`` (vector r, component i at ``r * u_strides[0] + i * u_strides[1]`` within
    the matrix's m * n block) and the conjugated right vectors at ``v`` (its n * n block,
    ``v_strides`` likewise: the rows of Vh). 'eigh': ``x`` holds n x n symmetric / Hermitian
    matrices (m == n; only the lower triangle is read, the diagonal's real part); eigenvalues
    (real) at ``s`` (ascending), eigenvectors at ``u``; ``v`` unused. ``status`` gets one u32
    per matrix: 2 when it did not converge in ``sweeps`` sweeps; 1 ('svd') when it converged
    with a singular value at most :func:`negligible` times the largest (the left vectors of
    those are not orthonormal); else 0. Matrices with a non-finite entry give NaN (status 0).

    Raises BackendError: invalid argument for a bad mode, dtype or size (dims from 1 to
    :func:`small_max`, m >= n, m == n for 'eigh') or pointers out of range; unsupported for
    float64 and complex128 without ``shader-f64``.
    """
    if mode not in ("svd", "eigh"):
        raise invalid_argument(f"jacobi: unknown mode {mode!r}")
    itemsize, realsize = _storage(backend, dtype)
    if not (1 <= n <= m <= small_max(dtype)) or (mode == "eigh" and m != n) or batch < 1:
        raise invalid_argument(f"jacobi_small: bad problem {batch} x {m} x {n} ({mode})")
    sweeps = int(sweeps)
    defines = small_defines(mode, dtype, m, n, sweeps)
    us, vs = (int(u_strides[0]), int(u_strides[1])), (int(v_strides[0]), int(v_strides[1]))
    sizes = [(batch * m * n * itemsize, itemsize), (batch * n * realsize, realsize),
             (batch * m * n * itemsize, itemsize), (batch * 4, 4)]
    ptrs = [x, s, u, status]
    if v is not None:
        sizes.append((batch * n * n * itemsize, itemsize))
        ptrs.append(v)

    def make(ctx: Any) -> LaunchProgram:
        # bindings x, s, u, v, status (bases 0, 1, 2, 4, 3); without V (eigh) its binding is a
        # spare region: bound over U, two overlapping writable bindings, which Dawn refuses
        x_r, s_r, u_r, st_r = (Region(k, 0, nbytes, size, 0, word, 0)
                               for k, ((nbytes, size), word) in enumerate(zip(sizes, (1, 2, 3, 9))))
        v_r = Region(4, 0, sizes[4][0], itemsize, 0, 6, 0) if v is not None else Region(-1, 0, 0, itemsize, 0, 0, 0)
        words = (batch, 0, 0, 0, us[0] & _U32, us[1] & _U32, 0, vs[0] & _U32, vs[1] & _U32, 0)
        record = Record(ctx.pipeline("svd_jacobi_small", 5, defines), defines, words, ctx.fold_grid(batch),
                        (x_r, s_r, u_r, v_r, st_r))
        return LaunchProgram.compile("svd_jacobi_small", _words_struct(len(words)), ctx, [record], ())

    key = ("small", mode, dtype, batch, m, n, us, v is None, vs, sweeps)
    _launch(backend, key, make, ptrs, sizes)


def _launch(backend: Any, key: tuple[Any, ...], make: Callable[[Any], LaunchProgram], ptrs: Sequence[int],
            sizes: Sequence[tuple[int, int]]) -> None:
    """Record the program of ``key`` (made by ``make(ctx)`` on first use, kept per backend) for
    the operands at ``ptrs`` (base k: ``sizes[k]`` = (bytes, item size) from ``ptrs[k]``): the
    pointers checked and the program replayed, or with a ``dispatch`` wrapper on the context its
    reference path. BackendError (invalid argument) for a pointer out of range or misaligned,
    before anything is recorded."""
    ctx = backend.context
    plans = _PROGRAMS.of(backend)
    kept = plans.get(key)
    if kept is None or kept[0] is not ctx or not kept[1].valid_for(ctx):
        kept = (ctx, make(ctx))
        _PROGRAMS.keep(plans, key, kept)
    program = kept[1]
    if ctx.__dict__.get("dispatch") is not None:
        program.dispatch(backend, ctx, ptrs, _spare)
        return
    bases = [launch_base(backend, "jacobi operand", ptr, nbytes, size) for ptr, (nbytes, size) in zip(ptrs, sizes)]
    program.replay(backend, ctx, bases, _spare)


def _spare(backend: Any, nbytes: int, *bindings: Any) -> Any:
    """The binding of an operand a kernel variant does not use: the context's spare region."""
    return backend.context.spare_region(nbytes)


_U32 = 0xFFFFFFFF
#: Launch programs kept per backend, by call structure (``_launch``).
_PROGRAMS = PlanCache(128)


#: Columns per block of the block kernel (two blocks, 32 columns, per workgroup).
BLOCK = 16
#: Columns per block for complex128 (G, its rotations and a tile in 32 KiB of workgroup memory).
BLOCK_WIDE = 8
#: Most inner two-sided Jacobi sweeps on a block pair's Gram matrix.
INNER_SWEEPS = 2


def block_size(dtype: str) -> int:
    """Columns per block of the block kernel for ``dtype``."""
    return BLOCK_WIDE if DTYPE_TABLE[dtype].itemsize > 8 else BLOCK


@functools.lru_cache(maxsize=32)
def block_defines(dtype: str, with_v: bool) -> dict[str, object]:
    """Placeholders of svd_jacobi_block.wgsl (tiles of 64 rows of float32, 32 of wider
    elements: workgroup memory); the thresholds, which depend on the sizes, are parameters."""
    rows = 64 if dtype == "float32" else 32
    bs = block_size(dtype)
    return {**scalar_defines(dtype), "BS": bs, "TR": rows, "PER": rows * 2 * bs // 256, "INNER": INNER_SWEEPS,
            "WITH_V": "true" if with_v else "false"}


def _f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


@functools.lru_cache(maxsize=256)
def block_thresholds(dtype: str, m: int, n: int) -> tuple[int, int, int]:
    """(rotation threshold, convergence threshold, squared negligible column norm) of the block
    kernel for ``n`` columns of length ``m``, as float32 bit patterns (parameter words)."""
    tol, loose = tolerances(dtype, m)
    return _f32_bits(tol), _f32_bits(loose), _f32_bits((0.5 * negligible(dtype, m, n)) ** 2)


def jacobi_sweeps(backend, dtype: str, batch: int, m: int, n: int, x: int, v: int | None, flags: int,
                  first_sweep: int, sweeps: int, max_sweeps: int = MAX_SWEEPS) -> None:
    """Record sweeps ``first_sweep .. first_sweep + sweeps - 1`` of block one-sided Jacobi over
    ``batch`` matrices of ``n`` columns of length ``m`` at ``x`` (column j of matrix b at
    element ``(b * n + j) * m``), rotating the n x n ``v`` (stored the same way) along when it
    is given. A sweep is the round-robin ordering over blocks of :func:`block_size` columns, one
    dispatch per step, one workgroup per block pair. ``flags`` holds ``batch * max_sweeps``
    u32 words, zero before sweep 0: word ``b * max_sweeps + s`` becomes 1 when sweep ``s``
    found a pair of columns of matrix b beyond the convergence threshold (columns of squared
    norm at most ``(negligible(dtype, m, n) / 2) ** 2`` excepted: the caller scales the matrix
    to largest magnitude 1); a sweep after one that left it 0 does nothing.

    Raises BackendError (invalid argument) for sizes below 1, sweeps outside ``max_sweeps`` or
    pointers out of range or dtypes other than float32, float64, complex64, complex128;
    (unsupported) for float64 and complex128 without ``shader-f64``.
    """
    itemsize, _ = _storage(backend, dtype)
    if min(batch, m, n) < 1 or first_sweep < 0 or sweeps < 0 or first_sweep + sweeps > max_sweeps:
        raise invalid_argument(f"jacobi_sweeps: bad problem {batch} x {m} x {n}, sweeps {first_sweep}+{sweeps}")
    if n < 2 or sweeps < 1:
        return
    bs = block_size(dtype)
    nb = -(-n // bs)
    nb += nb & 1
    defines = block_defines(dtype, v is not None)
    thresholds = block_thresholds(dtype, m, n)
    sizes = [(batch * n * m * itemsize, itemsize), (batch * max_sweeps * 4, 4)]
    ptrs = [x, flags]
    if v is not None:
        sizes.append((batch * n * n * itemsize, itemsize))
        ptrs.append(v)

    def make(ctx: Any) -> LaunchProgram:
        # bindings x, v, flags (bases 0, 2, 1); without V its binding is a spare region (over X:
        # two overlapping writable bindings, which Dawn refuses)
        x_r = Region(0, 0, sizes[0][0], itemsize, 0, 7, 0)
        f_r = Region(1, 0, sizes[1][0], 4, 0, 9, 0)
        v_r = Region(2, 0, sizes[2][0], itemsize, 0, 8, 0) if v is not None else Region(-1, 0, 0, itemsize, 0, 0, 0)
        pipe = ctx.pipeline("svd_jacobi_block", 3, defines)
        grid = ctx.fold_grid(batch * (nb // 2))
        records = [Record(pipe, defines, (batch, m, n, nb, step, sweep, max_sweeps, 0, 0, 0, *thresholds), grid,
                          (x_r, v_r, f_r))
                   for sweep in range(first_sweep, first_sweep + sweeps) for step in range(nb - 1)]
        return LaunchProgram.compile("svd_jacobi_block", _words_struct(10 + len(thresholds)), ctx, records, ())

    key = ("sweeps", dtype, batch, m, n, v is None, first_sweep, sweeps, max_sweeps)
    _launch(backend, key, make, ptrs, sizes)
