"""The factorization half of the linalg extension: cholesky, solve, inv, det, slogdet, qr and
matrix_power, on stacks of matrices (any leading batch dims), float32 and float64; cholesky,
solve, inv, det, slogdet and matrix_power also complex64 and complex128 (Hermitian
positive-definite input for cholesky; slogdet's sign is complex of modulus 1, logabsdet real).

Every factorization runs on the GPU (``_backend/ops_factor_small.py``, ``ops_cholesky.py``,
``ops_lu.py``, ``ops_qr.py``): stacks of matrices of order up to ``ops_factor_small.SMALL_MAX``
(32) in one dispatch for the whole stack; larger matrices
on blocked algorithms whose trailing updates are gemm (Cholesky and LU: each step one dispatch
for the whole stack; QR: one matrix after another), every dispatch of a call in one recorded
batch. LU panels taller than 64 rows pick their pivots by tournament pivoting (CALU: partial
pivoting inside chunks of rows, then among the chunks' winners), as stable as partial pivoting
in practice, and QR panels taller than 1,024 rows run a dispatch per column, both over many
workgroups (``GPUTENSOR_LINALG_PANEL_ROWS`` sets the height; ``GPUTENSOR_LINALG_LU_TREE_ROWS``
and ``GPUTENSOR_LINALG_QR_STEP_ROWS`` one of them). A repeated LU or QR call structure replays
the dispatches its first call recorded. ``GPUTENSOR_LINALG_BLOCK`` (``config.override(linalg_block=)``)
sets the block width of Cholesky and LU (16, 32, 64 or 128; LU takes at most 32); another
value raises ``ValueError``.

Singular and non-positive-definite input:

* ``cholesky`` raises :class:`LinAlgError` when a matrix of the stack is not positive definite,
  ``solve`` and ``inv`` when one is singular (a zero pivot column in LU with partial pivoting).
  The kernels report it on the device (the batched small kernels an info word per matrix,
  written with the result; the blocked ones a flag); reading it back (one readback, of at most
  ``INFO_READ_MAX`` words; a longer stack's words are reduced on the device first) makes these
  three calls wait for their result, as NumPy's and torch's checks do (torch.linalg's
  ``cholesky`` / ``inv`` / ``solve`` synchronize too; its ``*_ex`` variants do not).
  ``GPUTENSOR_LINALG_CHECK=0`` (or ``config.override(linalg_check=False)``) skips the readback
  and the calls stay asynchronous; such input then gives NaN, as the spec allows: for matrices of
  order up to ``ops_factor_small.SMALL_MAX`` (32) the whole result of each failed matrix is NaN (the
  others are unaffected), for larger ones inf / NaN appear in the failed matrix's result.
* ``det`` returns 0 and ``slogdet`` (0, -inf) for a singular matrix, without a readback (as
  NumPy); ``qr`` of a rank-deficient matrix returns a valid factorization (Q orthogonal, R with
  zeros on its diagonal where a column is dependent).
* NaN input is neither singular nor indefinite: the results are NaN, as NumPy's.

Non-arrays and dtypes other than float32 / float64 raise ``TypeError`` (float16 included, as in
NumPy), shapes that do not fit ``ValueError``.
"""

from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from .. import _dispatch
from .._array_object import GpuArray
from .._backend import config, factor_common, ops_cholesky, ops_factor_small, ops_lu, ops_qr
from .._creation_functions import eye, triu
from .._data_type_functions import result_type
from .._dtypes import complex64, complex128, float32, float64, uint32
from .._elementwise_functions import conj, real
from .._linear_algebra_functions import matmul, matrix_transpose
from .._manipulation_functions import _copy_contiguous, broadcast_to, reshape
from .._statistical_functions import max as max_
from .._shapes import broadcast_shapes
from ._common import contiguous
from ._errors import LinAlgError

__all__ = ["QRResult", "SlogdetResult", "cholesky", "det", "inv", "lu_factor", "matrix_power", "qr",
           "slogdet", "solve"]

_FLOATS = (float32, float64)
_COMPLEX = (complex64, complex128)


class SlogdetResult(NamedTuple):
    sign: GpuArray
    logabsdet: GpuArray


class QRResult(NamedTuple):
    Q: GpuArray
    R: GpuArray


def _float_array(x: object, name: str, complex_ok: bool = True) -> GpuArray:
    if not isinstance(x, GpuArray):
        raise TypeError(f"{name} must be a gputensor array, not {type(x).__name__}")
    if x.dtype not in _FLOATS and not (complex_ok and x.dtype in _COMPLEX):
        kinds = "float32, float64, complex64 or complex128" if complex_ok else "float32 or float64"
        raise TypeError(f"{name}: linalg needs {kinds} arrays, got {x.dtype}")
    return x


def _square(x: object, fn: str) -> GpuArray:
    x = _float_array(x, "x")
    if x.ndim < 2:
        raise ValueError(f"{fn} needs an array of at least 2 dimensions, got shape {x.shape}")
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{fn} needs square matrices, got shape {x.shape}")
    return x


def _batch(shape: tuple[int, ...]) -> int:
    count = 1
    for s in shape:
        count *= s
    return count


def _new_flag() -> GpuArray:
    """A zeroed u32 device flag that the blocked kernels or 1 into."""
    return GpuArray._empty((1,), uint32)


def _new_info(batch: int) -> GpuArray:
    """The per-matrix info words (u32) of the batched small kernels, which write every word."""
    return GpuArray._empty((batch,), uint32, zero=False)


#: Most info words a check reads back as they are; a longer stack's are reduced on the device
#: first (one dispatch, then 4 bytes).
INFO_READ_MAX = 16384


def _raise_if_set(flag: GpuArray, message: str) -> None:
    """Read the device flag (or the per-matrix info words) back, one readback, and raise
    LinAlgError when one is set; nothing with ``GPUTENSOR_LINALG_CHECK=0``
    (``config.override(linalg_check=False)``)."""
    if not config.value("linalg_check"):
        return
    if flag.size > INFO_READ_MAX:
        flag = max_(flag)
    if np.asarray(flag.get()).any():
        raise LinAlgError(message)


def _check_block_width() -> None:
    """ValueError when ``GPUTENSOR_LINALG_BLOCK`` (``config.override(linalg_block=)``) is set to a
    width the blocked factorizations do not take, or ``GPUTENSOR_LINALG_TSLU_ROWS`` to a count
    of rows the tournament does not take."""
    nb = config.value("linalg_block")
    if nb and nb not in factor_common.BLOCK_SIZES:
        raise ValueError(f"GPUTENSOR_LINALG_BLOCK={nb} must be 0 (the defaults) or one of {factor_common.BLOCK_SIZES}")
    rows = config.value("linalg_tslu_rows")
    if rows and (rows < 64 or rows > 1024 or rows & (rows - 1)):
        raise ValueError(f"GPUTENSOR_LINALG_TSLU_ROWS={rows} must be 0 (the default) or a power of two from 64 "
                         "to 1024")


def lu_factor(a: GpuArray) -> tuple[GpuArray, GpuArray, GpuArray]:
    """LU factorization with partial pivoting, in place, of the C-contiguous float array ``a``
    (a stack of n x n matrices, n >= 1): (a holding unit L below the diagonal and U on and above
    it, the pivots (..., n) as uint32 absolute row indices as LAPACK's getrf, zero-based, a
    uint32 flag that is nonzero when a matrix is singular). Runs on the blocked kernels for
    every order, a whole stack per step (internal; for other linalg functions)."""
    n = a.shape[-1]
    batch = _batch(a.shape[:-2])
    piv = GpuArray._empty(a.shape[:-1], uint32)
    flag = _new_flag()
    _check_block_width()
    _dispatch.call(ops_lu.lu_blocked, a.dtype.name, n, a._ptr, n, piv._ptr, flag._ptr, batch, n * n)
    return a, piv, flag


def cholesky(x: GpuArray, /, *, upper: bool = False) -> GpuArray:
    """The lower (``upper=False``) or upper Cholesky factor of each symmetric (Hermitian, for
    complex) positive-definite matrix of ``x`` (..., M, M): ``x = L L^H`` (``U^H U``); only the
    lower triangle of ``x`` is read (of the diagonal, the real part).

    Raises ``LinAlgError`` when a matrix is not positive definite (reads a device flag back),
    ``TypeError`` for non-float32/float64 input, ``ValueError`` for non-square shapes."""
    x = _square(x, "cholesky")
    n = x.shape[-1]
    if x.size == 0:
        return _copy_contiguous(x)
    batch = _batch(x.shape[:-2])
    name = x.dtype.name
    if n <= ops_factor_small.SMALL_MAX:  # (reads x, writes the factor and every matrix's info word)
        a = contiguous(x)
        lower = GpuArray._empty(x.shape, x.dtype, zero=False)
        flag = _new_info(batch)
        _dispatch.call(ops_factor_small.small, "cholesky", name, n, batch, a._ptr, n, n * n, b=lower._ptr, b_ld=n,
                       b_bs=n * n, info=flag._ptr)
    else:
        a = _copy_contiguous(x)
        flag = _new_flag()
        _check_block_width()
        _dispatch.call(ops_cholesky.cholesky_blocked, name, n, a._ptr, n, flag._ptr, batch, n * n)
        lower = a
    _raise_if_set(flag, "Matrix is not positive definite")
    if upper:
        t = matrix_transpose(lower)
        return _copy_contiguous(conj(t) if t.dtype in _COMPLEX else t)
    return lower


def _lu_solve_into(x: GpuArray, b: GpuArray | None, out: GpuArray) -> None:
    """out := A^-1 B (or A^-1 when ``b`` is None: ``out`` then receives the inverse) for the
    stack of matrices ``x`` (of ``out``'s dtype and batch shape; not modified) and the contiguous
    ``out`` (..., n, k) holding B; LinAlgError when a matrix is singular."""
    n = x.shape[-1]
    k = out.shape[-1]
    batch = _batch(x.shape[:-2])
    name = out.dtype.name
    if n <= ops_factor_small.small_max("inv" if b is None else "solve", name):
        op = "inv" if b is None else "solve"
        a = contiguous(x, out.dtype)  # (only read)
        flag = _new_info(batch)
        _dispatch.call(ops_factor_small.small, op, name, n, batch, a._ptr, n, n * n, b=out._ptr, k=k, b_ld=k,
                       b_bs=n * k, info=flag._ptr)
    else:
        a = _copy_contiguous(x, out.dtype)  # (factored in place)
        flag = _new_flag()
        if b is None:
            _dispatch.copy_into(out, broadcast_to(eye(n, dtype=a.dtype), out.shape))
        piv = GpuArray._empty((batch, n), uint32)
        _check_block_width()
        _dispatch.call(ops_lu.lu_blocked, name, n, a._ptr, n, piv._ptr, flag._ptr, batch, n * n)
        _dispatch.call(ops_lu.lu_solve, name, n, k, a._ptr, n, piv._ptr, out._ptr, k, batch, n * n, n * k)
    _raise_if_set(flag, "Singular matrix")


def solve(x1: GpuArray, x2: GpuArray, /) -> GpuArray:
    """The solution X of A X = B for each square matrix A of ``x1`` (..., M, M): ``x2`` of shape
    (M,) is one right-hand side for every matrix (result ``x1.shape[:-2] + (M,)``), otherwise
    ``x2`` is (..., M, K) with batch dims broadcast against ``x1``'s. LU with partial pivoting.

    Raises ``LinAlgError`` for a singular matrix (reads a device flag back), ``TypeError`` for
    non-float32/float64 input, ``ValueError`` for shapes that do not fit."""
    x1 = _square(x1, "solve")
    x2 = _float_array(x2, "x2")
    dtype = result_type(x1, x2)
    n = x1.shape[-1]
    if x2.ndim == 0:
        raise ValueError("solve: x2 must have at least 1 dimension")
    vector = x2.ndim == 1
    if vector:
        if x2.shape[0] != n:
            raise ValueError(f"solve: x2 of shape {x2.shape} does not fit x1 of shape {x1.shape}")
        batch = x1.shape[:-2]
        b = reshape(x2, (n, 1))
    else:
        if x2.shape[-2] != n:
            raise ValueError(f"solve: x2 of shape {x2.shape} does not fit x1 of shape {x1.shape}")
        batch = broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
        b = x2
    k = b.shape[-1]
    out = _copy_contiguous(broadcast_to(b, batch + (n, k)), dtype)
    if out.size and n:
        _lu_solve_into(broadcast_to(x1, batch + (n, n)), b, out)
    return reshape(out, batch + (n,)) if vector else out


def inv(x: GpuArray, /) -> GpuArray:
    """The inverse of each square matrix of ``x`` (..., M, M), by LU with partial pivoting.

    Raises ``LinAlgError`` for a singular matrix (reads a device flag back), ``TypeError`` and
    ``ValueError`` as :func:`solve`."""
    x = _square(x, "inv")
    if x.size == 0:
        return _copy_contiguous(x)
    out = GpuArray._empty(x.shape, x.dtype, zero=False)
    _lu_solve_into(x, None, out)
    return out


def _det_parts(x: GpuArray, fn: str) -> GpuArray:
    """(..., 3): det, sign, log|det| of each matrix of ``x``."""
    x = _square(x, fn)
    n = x.shape[-1]
    parts = GpuArray._empty(x.shape[:-2] + (3,), x.dtype, zero=False)
    batch = _batch(x.shape[:-2])
    if batch == 0:
        return parts
    if n == 0:
        _dispatch.copy_into(parts, broadcast_to(GpuArray._from_numpy(
            np.array([1.0, 1.0, 0.0], dtype=x.dtype.numpy), x.dtype), parts.shape))
        return parts
    name = x.dtype.name
    if n <= ops_factor_small.SMALL_MAX:  # (only reads x)
        a = contiguous(x)
        _dispatch.call(ops_factor_small.small, "det", name, n, batch, a._ptr, n, n * n, b=parts._ptr)
        return parts
    a, piv, _ = lu_factor(_copy_contiguous(x))
    _dispatch.call(ops_lu.det_from_lu, name, n, a._ptr, n, piv._ptr, parts._ptr, batch, n * n)
    return parts


def det(x: GpuArray, /) -> GpuArray:
    """The determinant of each square matrix of ``x`` (..., M, M): the product of LU's pivots
    with the permutation's sign; 0 for a singular matrix. ``TypeError`` / ``ValueError`` as
    :func:`solve`."""
    return _copy_contiguous(_det_parts(x, "det")[..., 0])


def slogdet(x: GpuArray, /) -> SlogdetResult:
    """(sign, log|det|) of each square matrix of ``x`` (..., M, M); (0, -inf) for a singular
    matrix. Complex input: the sign is ``det / |det|`` (complex), log|det| real.
    ``TypeError`` / ``ValueError`` as :func:`solve`."""
    parts = _det_parts(x, "slogdet")
    logabs = parts[..., 2]
    if logabs.dtype in _COMPLEX:
        logabs = real(logabs)
    return SlogdetResult(_copy_contiguous(parts[..., 1]), _copy_contiguous(logabs))


def qr(x: GpuArray, /, *, mode: str = "reduced") -> QRResult:
    """Householder QR of each matrix of ``x`` (..., M, N): ``mode='reduced'`` gives Q (..., M, K)
    and R (..., K, N), K = min(M, N); ``'complete'`` Q (..., M, M) and R (..., M, N). The signs
    follow LAPACK's reflectors (R's diagonal may be negative, as in NumPy).

    Complex input gives a unitary Q (LAPACK's zgeqrf reflectors, R's diagonal real).

    Raises ``TypeError`` for other than float32, float64, complex64 and complex128 input,
    ``ValueError`` for fewer than 2 dims or an unknown mode."""
    x = _float_array(x, "x")
    if x.ndim < 2:
        raise ValueError(f"qr needs an array of at least 2 dimensions, got shape {x.shape}")
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', not {mode!r}")
    m, n = x.shape[-2:]
    k = min(m, n)
    kq = kr = k if mode == "reduced" else m
    batch_shape = x.shape[:-2]
    batch = _batch(batch_shape)
    q = _copy_contiguous(broadcast_to(eye(m, kq, dtype=x.dtype), batch_shape + (m, kq)))
    if batch == 0 or k == 0:
        return QRResult(q, GpuArray._empty(batch_shape + (kr, n), x.dtype))
    a = _copy_contiguous(x)
    name = a.dtype.name
    if max(m, n) <= ops_factor_small.small_max("qr", name):
        r = GpuArray._empty(batch_shape + (kr, n), x.dtype, zero=False)
        _dispatch.call(ops_factor_small.qr_small, name, m, n, batch, a._ptr, n, m * n, q._ptr, kq, m * kq, kq,
                       r._ptr, n, kr * n, kr)
        return QRResult(q, r)
    outer = config.value("linalg_qr_outer")
    if outer and outer not in (factor_common.NB, 2 * factor_common.NB):
        raise ValueError(f"GPUTENSOR_LINALG_QR_OUTER={outer} must be 0 (the default), {factor_common.NB} or "
                         f"{2 * factor_common.NB}")
    chunk = config.value("linalg_qr_step_chunk")
    if chunk and chunk not in (32, 64, 128):
        raise ValueError(f"GPUTENSOR_LINALG_QR_STEP_CHUNK={chunk} must be 0 (the default), 32, 64 or 128")
    isz = a.dtype.itemsize
    for b in range(batch):
        _dispatch.call(ops_qr.qr_blocked, name, m, n, a._ptr + b * m * n * isz, n,
                       q._ptr + b * m * kq * isz, kq, kq)
    r = triu(a if kr == m else a[..., :kr, :])
    return QRResult(q, _copy_contiguous(r))


def matrix_power(x: GpuArray, n: int, /) -> GpuArray:
    """``x`` (..., M, M) raised to the integer power ``n`` by repeated squaring (matmul); ``n ==
    0`` gives identity matrices, ``n < 0`` powers of the inverse (``LinAlgError`` when a matrix
    is singular). Raises ``TypeError`` for a non-integer ``n`` or non-float32/float64 input,
    ``ValueError`` for non-square shapes."""
    x = _square(x, "matrix_power")
    if isinstance(n, bool):
        raise TypeError("matrix_power: n must be an integer, not bool")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"matrix_power: n must be an integer, not {type(n).__name__}") from None
    m = x.shape[-1]
    if n == 0:
        return _copy_contiguous(broadcast_to(eye(m, dtype=x.dtype), x.shape))
    if n < 0:
        x = inv(x)
        n = -n
    result = None
    base = x
    while True:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if not n:
            break
        base = matmul(base, base)
    return result if result is not x else _copy_contiguous(x)
