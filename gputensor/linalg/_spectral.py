"""The symmetric / Hermitian eigenproblem and the SVD on the device: eigh, eigvalsh, svd, svdvals.

Real matrices from order ``TRIDIAG_MIN`` (knob ``linalg_eigh_tridiag``) take the tridiagonal
path (``_eigh_tridiag``: ``_backend/ops_tridiag.py``'s Householder tridiagonalisation,
bisection, inverse iteration and back-transform, with the clusters of close eigenvalues
orthogonalised here), and real matrices whose smaller dim is at least ``SVD_TRIDIAG_MIN``
(knob ``linalg_svd_tridiag``) their SVD from the Jordan-Wielandt matrix on that path
(``_svd_jordan_wielandt``). Everything else runs one-sided (Hestenes) Jacobi
(``_backend/ops_spectral.py``): columns are rotated in pairs, the round-robin ordering pairing
every column once per step, until all columns are
orthogonal to working precision (relative to their norms). Real and complex dtypes run the same
kernels (complex columns rotate by complex Jacobi rotations); singular values and eigenvalues
are real (float32 for complex64, float64 for complex128), vectors have the input's dtype.

* Matrices whose dims are at most ``ops_spectral.SMALL_MAX`` run in one kernel, one workgroup
  per matrix, all sweeps in workgroup memory, the results sorted by the kernel.
* Larger matrices run one dispatch per step over device memory; convergence flags are read
  back every few sweeps; norms, sorting and normalisation are array operations.

``svd``: the columns of the matrix (of its transpose when it has more columns than rows) are
orthogonalised, V accumulating the rotations: ``sigma_j = |b_j|``, ``u_j = b_j / sigma_j``.
The input is scaled by its largest magnitude first. Two equal columns cancel to one at rounding
level, which no rotation makes orthogonal to the others: such columns (squared norm at most
``(ops_spectral.negligible / 2) ** 2`` of the scaled matrix) are rotated but take no part in the
convergence test. The left vectors of negligible singular values (at most ``negligible`` times
the largest; the small kernel reports them in its status word), and the extra columns of
``full_matrices=True``, are an orthonormal basis of the complement of the others: the trailing
columns of the complete Householder QR of the valid ones (:func:`_complete`).

``eigh``: the lower triangle of A, mirrored (conjugated for complex, the diagonal's real part:
the Hermitian matrix it defines), is scaled and shifted, ``B = A / s + 2 I`` with
``s`` at least the spectral radius (the infinity norm for small matrices; 1.25 times a
power-iteration estimate for large ones, checked), so B is positive definite with eigenvalues
in [1, 3]; for such a B the orthogonalised columns are ``sigma_j v_j``: the eigenvectors are the
normalised columns and the eigenvalues their Rayleigh quotients ``v_j^H A v_j``. Repeated
eigenvalues get an orthonormal basis of their eigenspace.

Non-finite entries give NaN results; a matrix that does not converge in
``ops_spectral.MAX_SWEEPS`` sweeps raises :class:`LinAlgError` (small matrices: a status
word per matrix read back after the kernel, skipped with ``GPUTENSOR_LINALG_CHECK=0``; large
ones read their convergence flags every ``SWEEPS_PER_CHECK`` sweeps in any case).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import _dispatch
from .._array_object import GpuArray
from .._creation_functions import asarray, eye, full, tril, zeros
from .._data_type_functions import astype
from .._dtypes import float32, float64, int64, uint32
from .._elementwise_functions import abs as abs_
from .._elementwise_functions import (add, conj, divide, greater, less, logical_not, minimum, multiply, real, sqrt,
                                      subtract)
from .._indexing_functions import take, take_along_axis
from .._manipulation_functions import broadcast_to, concat, expand_dims, permute_dims, reshape
from .._linear_algebra_functions import matmul, matrix_transpose
from .._searching_functions import where
from .._sorting_functions import argsort
from .._utility_functions import any as any_
from .._statistical_functions import max as max_
from .._statistical_functions import sum as sum_
from .._backend import config, ops_spectral, ops_tridiag
from ._common import batch_size, contiguous, float_matrices, is_complex, real_dtype
from ._errors import LinAlgError
from ._factor import INFO_READ_MAX, qr

__all__ = ["EighResult", "SVDResult", "eigh", "eigvalsh", "svd", "svdvals"]

#: Sweeps recorded between two reads of the convergence flags (large matrices).
SWEEPS_PER_CHECK = 4
#: Power iterations of the spectral-radius estimate that sets eigh's shift (large matrices).
POWER_ITERATIONS = 12
#: Least order of real matrices whose eigh / eigvalsh takes the tridiagonal path (knob
#: ``linalg_eigh_tridiag``, ``GPUTENSOR_LINALG_EIGH_TRIDIAG``, overrides it; off: block Jacobi).
TRIDIAG_MIN = 64
#: Stacks of more matrices than this take block Jacobi (one sweep's dispatches serve the whole
#: stack; the tridiagonal path runs matrix by matrix) below order TRIDIAG_BATCH_ORDER.
TRIDIAG_BATCH = 4
TRIDIAG_BATCH_ORDER = 256
#: Least smaller dim of real matrices whose svd takes the Jordan-Wielandt eigenproblem on the
#: tridiagonal path (knob ``linalg_svd_tridiag``, ``GPUTENSOR_LINALG_SVD_TRIDIAG``; off: Jacobi),
#: for matrices whose larger dim is at most SVD_TRIDIAG_ASPECT times the smaller.
SVD_TRIDIAG_MIN = 64
SVD_TRIDIAG_ASPECT = 4
#: Most levels of Rayleigh-Ritz inside clusters of close eigenvalues (each level solves the
#: clusters' small eigenproblems, whose own clusters are relative to the cluster's spread).
CLUSTER_DEPTH = 4


class EighResult(NamedTuple):
    """``eigh``'s result: eigenvalues (ascending) and eigenvectors (as columns)."""

    eigenvalues: GpuArray
    eigenvectors: GpuArray


class SVDResult(NamedTuple):
    """``svd``'s result: ``U``, ``S`` (descending) and ``Vh`` with ``x = U diag(S) Vh``."""

    U: GpuArray
    S: GpuArray
    Vh: GpuArray


def _conj(x: GpuArray) -> GpuArray:
    """The complex conjugate of ``x``; ``x`` itself for real dtypes."""
    return conj(x) if is_complex(x) else x


def _abs2(x: GpuArray) -> GpuArray:
    """``|x|^2`` elementwise, in the real dtype."""
    return real(multiply(x, conj(x))) if is_complex(x) else multiply(x, x)


def _hermitian(a: GpuArray) -> GpuArray:
    """The symmetric / Hermitian matrices that the lower triangles of ``a`` (batch, n, n)
    define: the strict lower triangle mirrored (conjugated) and the diagonal's real part."""
    if not is_complex(a):
        return contiguous(add(tril(a), matrix_transpose(tril(a, k=-1))))
    low = tril(a, k=-1)
    diag = multiply(eye(a.shape[-1], dtype=real_dtype(a.dtype)), real(a))
    return contiguous(add(add(low, conj(matrix_transpose(low))), diag))


def _worst_status(status: GpuArray, need: bool) -> int:
    """The largest status word of the small kernel (one readback of the words, or of their maximum
    for more than ``INFO_READ_MAX`` of them), when it is needed: to check
    convergence (``linalg_check``) or, with ``need``, to see negligible singular values; 0
    otherwise. Raises :class:`LinAlgError` for an unconverged matrix when checking."""
    check = bool(config.value("linalg_check"))
    if not (check or need):
        return 0
    words = status if status.size <= INFO_READ_MAX else max_(status)  # (a longer stack's reduced first)
    worst = int(np.asarray(words.get()).max())
    if check and worst >= 2:
        raise LinAlgError("did not converge")
    return worst


def _small(mode: str, cols: GpuArray, m: int, n: int, batch: int,
           need_status: bool = False) -> tuple[GpuArray, GpuArray, GpuArray | None, int]:
    """Run the workgroup-memory kernel on ``batch`` contiguous matrices ``cols`` (svd: n columns
    of length m as rows; eigh: n x n). Returns (values, normalised vectors as columns (batch, m,
    n), accumulated vectors as rows (batch, n, n) or None, the worst status: 1 when some matrix
    has a negligible singular value, read back with ``need_status``)."""
    dtype = cols.dtype
    s = GpuArray._empty((batch, n), real_dtype(dtype), zero=False)
    u = GpuArray._empty((batch, m, n), dtype, zero=False)
    v = GpuArray._empty((batch, n, n), dtype, zero=False) if mode == "svd" else None
    status = GpuArray._empty((batch,), uint32, zero=False)
    _dispatch.call(ops_spectral.jacobi_small, mode, dtype.name, batch, m, n, cols._ptr, s._ptr, u._ptr, (1, n),
                   None if v is None else v._ptr, (n, 1), status._ptr)
    try:
        worst = _worst_status(status, need_status)
    except LinAlgError:
        raise LinAlgError(f"{mode} did not converge") from None
    return s, u, v, worst


def _sweeps(cols: GpuArray, v: GpuArray | None, fn: str) -> None:
    """One-sided Jacobi over the contiguous ``cols`` (batch, n, m) (columns as rows) until
    every matrix converged, rotating ``v`` (batch, n, n) along; ``LinAlgError`` if one does not."""
    batch, n, m = cols.shape
    limit = ops_spectral.MAX_SWEEPS
    flags = zeros((batch, limit), dtype=uint32)
    sweep = 0
    while sweep < limit:
        count = min(SWEEPS_PER_CHECK, limit - sweep)
        _dispatch.call(ops_spectral.jacobi_sweeps, cols.dtype.name, batch, m, n, cols._ptr,
                       None if v is None else v._ptr, flags._ptr, sweep, count, limit)
        sweep += count
        if not bool(any_(flags[:, sweep - 1])):
            return
    raise LinAlgError(f"{fn} did not converge in {limit} sweeps")


def _eigh(x: GpuArray, vectors: bool) -> tuple[GpuArray, GpuArray | None]:
    n = x.shape[-1]
    batch_shape = x.shape[:-2]
    batch = batch_size(x)
    if n == 0 or batch == 0:
        return (GpuArray._empty(batch_shape + (n,), real_dtype(x.dtype)),
                GpuArray._empty(x.shape, x.dtype) if vectors else None)
    a = reshape(contiguous(x), (batch, n, n))
    if n <= ops_spectral.small_max(x.dtype.name):
        w, e, _, _ = _small("eigh", a, n, n, batch)
    elif (not is_complex(x) and _tridiag_from() <= n and (batch <= TRIDIAG_BATCH or n >= TRIDIAG_BATCH_ORDER)
          and _dispatch.call(ops_tridiag.fits, x.dtype.name, n)):
        w, e = _eigh_tridiag(a, vectors)
    else:
        w, e = _eigh_large(a, vectors)
    w = reshape(w, batch_shape + (n,))
    return w, (reshape(e, x.shape) if vectors else None)


def _tridiag_from(knob_name: str = "linalg_eigh_tridiag", default: int = TRIDIAG_MIN) -> float:
    """The least order of the tridiagonal path (knob ``linalg_eigh_tridiag``, or for the SVD
    ``linalg_svd_tridiag``; inf: off)."""
    knob = int(config.value(knob_name))
    if knob < 0:
        return float("inf")
    return float(knob or default)


def _eigh_tridiag(a: GpuArray, vectors: bool, depth: int = 0) -> tuple[GpuArray, GpuArray | None]:
    """eigh of the real (batch, n, n) contiguous matrices, one at a time, through the
    tridiagonal matrix (``_backend/ops_tridiag.py``): the matrix scaled by its largest
    magnitude, Householder tridiagonalisation, bisection for the eigenvalues (float64 where the
    adapter has it); with ``vectors`` inverse iteration, the clusters of close eigenvalues
    orthogonalised (``_clusters``: the one readback, of the eigenvalues), the back-transform."""
    batch, n, _ = a.shape
    values, vecs = [], []
    for q in range(batch):
        w, z = _tridiag_one(reshape(a[q], (1, n, n)), vectors, depth)
        values.append(reshape(w, (1, n)))
        if z is not None:
            vecs.append(reshape(z, (1, n, n)))
    w = values[0] if batch == 1 else concat(values, axis=0)
    if not vectors:
        return w, None
    return w, vecs[0] if batch == 1 else concat(vecs, axis=0)


def _tridiag_one(a: GpuArray, vectors: bool, depth: int, count: int | None = None) -> tuple[GpuArray,
                                                                                          GpuArray | None]:
    """(eigenvalues, eigenvectors or None) of the one real matrix ``a`` (1, n, n); with
    ``count`` only the largest ``count`` of them (ascending; vectors n x count)."""
    dtype = a.dtype
    n = a.shape[-1]
    count = n if count is None else count
    sym = _hermitian(a)
    scale = max_(abs_(sym))
    scale = where(greater(scale, 0.0), scale, 1.0)
    m = contiguous(divide(sym, scale))
    v = GpuArray._empty((n, n), dtype, zero=False)
    x = GpuArray._empty((5 * n,), dtype, zero=False)
    _dispatch.call(ops_tridiag.sytrd, dtype.name, n, m._ptr, v._ptr, x._ptr)
    rname = _dispatch.call(ops_tridiag.working_dtype, dtype.name)
    rd = float64 if rname == "float64" else float32
    te = contiguous(astype(x[: 2 * n - 1], rd))
    w = GpuArray._empty((count,), rd, zero=False)
    _dispatch.call(ops_tridiag.bisect, rname, n, te._ptr, w._ptr, n - count, count)
    values = astype(multiply(w, astype(scale, rd)), dtype)
    if not vectors:
        return values, None
    z = GpuArray._empty((n, count), rd, zero=False)
    _dispatch.call(ops_tridiag.inverse_iteration, rname, n, te._ptr, w._ptr, z._ptr, cols=count)
    z = _clusters(z, w, te, ops_tridiag.cluster_gap(dtype.name, rname), depth)
    zd = contiguous(astype(z, dtype)) if rd != dtype else contiguous(z)
    nb = ops_tridiag.NB
    blocks = -(-(n - 1) // nb)
    taus = x[2 * n: 3 * n - 1]
    if blocks * nb > n - 1:
        taus = concat([taus, zeros((blocks * nb - n + 1,), dtype=dtype)])
    tb = contiguous(multiply(reshape(eye(nb, dtype=dtype), (1, nb, nb)), reshape(taus, (blocks, 1, nb))))
    _dispatch.call(ops_tridiag.back_transform, dtype.name, n, v._ptr, tb._ptr, zd._ptr, count)
    return values, zd


def _tridiag_times(te: GpuArray, q: GpuArray) -> GpuArray:
    """T q for the tridiagonal T whose diagonal and off-diagonal follow each other in ``te``
    and the (batch, n, c) ``q``."""
    batch, n, c = q.shape
    d = reshape(te[:n], (1, n, 1))
    e = reshape(te[n: 2 * n - 1], (1, n - 1, 1))
    pad = zeros((batch, 1, c), dtype=q.dtype)
    up = concat([multiply(e, q[:, 1:, :]), pad], axis=1)
    down = concat([pad, multiply(e, q[:, :-1, :])], axis=1)
    return add(add(multiply(d, q), up), down)


def _clusters(z: GpuArray, w: GpuArray, te: GpuArray, gap: float, depth: int) -> GpuArray:
    """The eigenvectors ``z`` (n x k, columns) of the tridiagonal matrix ``te`` from inverse
    iteration, with each cluster of eigenvalues ``w`` (runs whose neighbours are at most ``gap``
    times the largest |eigenvalue| apart) replaced by an orthonormal basis of its vectors (QR,
    one more inverse-iteration solve of each basis vector with its eigenvalue shifted by a few
    units of roundoff, QR again) and, where the cluster's eigenvalues are not equal to working
    precision, the Ritz vectors of T in that basis (the clusters' c x c eigenproblems of T,
    solved by ``_eigh_nested``, shifted by their mean). Reads ``w`` back; NaN eigenvalues give NaN vectors."""
    n, k = z.shape
    wh = w.get().astype(np.float64)
    if not np.all(np.isfinite(wh)):
        return full((n, k), float("nan"), dtype=z.dtype)
    top = float(np.abs(wh).max())
    close = np.diff(wh) <= gap * top
    if not close.any():
        return z
    starts = np.flatnonzero(np.concatenate([[True], ~close]))
    stops = np.concatenate([starts[1:], [k]])
    sizes = stops - starts
    same = 64.0 * n * float(np.finfo(z.dtype.numpy).eps) * max(top, float(np.finfo(np.float64).tiny))
    perm = np.arange(k)
    pieces = [z]
    at = k
    for c in sorted(set(int(s) for s in sizes if s > 1)):
        first = starts[sizes == c]
        idx = first[:, None] + np.arange(c)[None, :]  # (clusters, c)
        count = idx.shape[0]
        cols = take(z, asarray(idx.ravel().astype(np.int64), dtype=int64), axis=1)  # (n, count * c)
        q = qr(contiguous(permute_dims(reshape(cols, (n, count, c)), (1, 0, 2)))).Q
        # one more solve from the orthonormal basis, shifted just past each eigenvalue: a basis of
        # (nearly) equal eigenvalues' vectors is then as well conditioned as the shifts allow
        cols = contiguous(reshape(permute_dims(q, (1, 0, 2)), (n, count * c)))
        shifts = asarray((wh[idx] + 8.0 * c * float(np.finfo(z.dtype.numpy).eps) * top).ravel(), dtype=z.dtype)
        _dispatch.call(ops_tridiag.inverse_iteration, z.dtype.name, n, te._ptr, shifts._ptr, cols._ptr,
                       cols=count * c, from_z=True, iterations=1)
        q = contiguous(qr(contiguous(permute_dims(reshape(cols, (n, count, c)), (1, 0, 2)))).Q)
        spread = wh[idx[:, -1]] - wh[idx[:, 0]]
        if depth < CLUSTER_DEPTH and float(spread.max()) > same:
            s = matmul(matrix_transpose(q), _tridiag_times(te, q))
            s = multiply(add(s, matrix_transpose(s)), 0.5)
            mean = asarray(wh[idx].mean(axis=1).reshape(count, 1, 1), dtype=z.dtype)
            s = contiguous(subtract(s, multiply(mean, eye(c, dtype=z.dtype))))
            _, u = _eigh_nested(s, depth + 1)
            q = contiguous(matmul(q, u))
        pieces.append(reshape(permute_dims(q, (1, 0, 2)), (n, count * c)))
        perm[idx.ravel()] = at + np.arange(count * c)
        at += count * c
    return contiguous(take(concat(pieces, axis=1), asarray(perm.astype(np.int64), dtype=int64), axis=1))


def _eigh_nested(s: GpuArray, depth: int) -> tuple[GpuArray, GpuArray]:
    """eigh of the (batch, c, c) cluster matrices of ``_clusters`` (the tridiagonal path one
    level deeper for large ones)."""
    batch, c, _ = s.shape
    if c <= ops_spectral.small_max(s.dtype.name):
        w, e, _, _ = _small("eigh", s, c, c, batch)
        return w, e
    if _tridiag_from() <= c:
        w, e = _eigh_tridiag(s, True, depth)
    else:
        w, e = _eigh_large(s, True)
    assert e is not None
    return w, e


def _spectral_radius_estimate(sym: GpuArray, iterations: int = POWER_ITERATIONS) -> GpuArray:
    """A lower bound of the spectral radius of each Hermitian matrix in ``sym`` (batch, n, n):
    ``|A v|`` for ``v`` after a few power iterations from a fixed start (batch,)."""
    batch, n, _ = sym.shape
    start = np.random.default_rng(12345).standard_normal(n).astype(sym.dtype.numpy)
    v = broadcast_to(reshape(asarray(start / np.linalg.norm(start)), (1, n, 1)), (batch, n, 1))
    est = None
    for _ in range(iterations):
        w = matmul(sym, v)
        est = sqrt(sum_(_abs2(w), axis=(-2, -1), keepdims=True))
        v = divide(w, where(greater(est, 0.0), est, 1.0))
    assert est is not None
    return reshape(est, (batch,))


def _eigh_large(a: GpuArray, vectors: bool) -> tuple[GpuArray, GpuArray | None]:
    """eigh of (batch, n, n) contiguous matrices by block one-sided Jacobi on the shifted
    ``B = A / s + 2 I``: ``s`` is 1.25 times a power-iteration estimate of the spectral radius
    (capped by the infinity norm, which bounds it); the eigenvalues are the Rayleigh quotients
    ``u^H A u`` of the normalised columns. A shift too small to make B positive definite shows as
    Rayleigh quotients away from ``s (|b_j| - 2)``: then the infinity norm is the shift."""
    batch, n, _ = a.shape
    sym = _hermitian(a)
    inf_norm = max_(sum_(abs_(sym), axis=-1), axis=-1)
    scale = minimum(inf_norm, multiply(_spectral_radius_estimate(sym), 1.25))
    for attempt in range(2):
        scale = where(greater(scale, 0.0), scale, 1.0)
        # the kernel takes columns as rows: B^T = conj(B) holds the columns of B
        b = contiguous(_conj(add(divide(sym, reshape(scale, (batch, 1, 1))), multiply(eye(n, dtype=a.dtype), 2.0))))
        _sweeps(b, None, "eigh")
        norms = sqrt(sum_(_abs2(b), axis=-1))  # (batch, n)
        rows = divide(b, expand_dims(norms, -1))  # the eigenvectors as rows
        # (rows conj(A))[j] = (A v_j)^T for Hermitian A
        values = sum_(multiply(_conj(rows), matmul(rows, _conj(sym))), axis=-1)
        if is_complex(values):
            values = real(values)
        shifted = multiply(reshape(scale, (batch, 1)), subtract(norms, 2.0))
        off = greater(abs_(subtract(values, shifted)), multiply(reshape(scale, (batch, 1)), 0.01))
        if attempt or not bool(any_(off)):
            break
        scale = inf_norm
    order = argsort(values, axis=-1)
    w = take_along_axis(values, order, axis=-1)
    e = None
    if vectors:
        e = contiguous(matrix_transpose(take_along_axis(rows, expand_dims(order, -1), axis=-2)))
    return w, e


def eigh(x: GpuArray, /) -> EighResult:
    """Eigenvalues (ascending, real) and orthonormal eigenvectors (columns) of the symmetric
    (real) or Hermitian (complex) matrices in ``x`` (``..., n, n``), from their lower triangles
    (the diagonal's real part), as ``EighResult(eigenvalues, eigenvectors)``.

    Raises ``TypeError`` for non-arrays and dtypes other than float32, float64, complex64 and
    complex128 (float64 and complex128 need ``shader-f64``), ``ValueError`` for fewer than 2 dims or non-square matrices,
    :class:`LinAlgError` when the iteration does not converge. Non-finite input gives NaN.
    """
    x = float_matrices(x, "eigh", square=True, complex_ok=True)
    w, e = _eigh(x, True)
    assert e is not None
    return EighResult(w, e)


def eigvalsh(x: GpuArray, /) -> GpuArray:
    """The eigenvalues (ascending) of the symmetric matrices in ``x``; as :func:`eigh`."""
    x = float_matrices(x, "eigvalsh", square=True, complex_ok=True)
    return _eigh(x, False)[0]


def _complete(q: GpuArray, valid: GpuArray, width: int) -> GpuArray:
    """``q`` (batch, m, k): orthonormal columns where ``valid`` (batch, k; valid columns first)
    widened to ``width`` columns: the other columns become an orthonormal basis of the
    complement of the valid ones. Householder QR (``mode='complete'``) of the valid columns
    with the others zeroed: the first r columns of its Q span the r valid ones, the rest the
    complement (the reflectors of the zero columns are the identity)."""
    batch, m, k = q.shape
    qv = where(expand_dims(valid, -2), q, 0.0)
    basis = qr(contiguous(qv), mode="complete").Q  # (batch, m, m)
    if width > k:
        qv = concat([qv, zeros((batch, m, width - k), dtype=q.dtype)], axis=-1)
        valid = concat([valid, zeros((batch, width - k), dtype=valid.dtype)], axis=-1)
    return contiguous(where(expand_dims(valid, -2), qv, basis[..., :width]))


#: Singular values below this times the largest (Jordan-Wielandt SVD) have vectors whose halves
#: rounding leaves non-orthogonal by about eps ||A|| / sigma: they are orthonormalised against the
#: others (``_orthonormal_tail``).
WEAK = 1e-2


def _orthonormal_tail(q: GpuArray, head: int) -> GpuArray:
    """The (p, k) ``q`` with columns ``head ..`` made orthonormal and orthogonal to the first
    ``head`` (orthonormal) columns: two passes of block Gram-Schmidt, then QR (R's diagonal made
    positive, so each column keeps its direction)."""
    p, k = q.shape
    first, tail = q[:, :head], q[:, head:]
    if head:
        for _ in range(2):
            tail = subtract(tail, matmul(first, matmul(matrix_transpose(first), tail)))
    qt, rt = qr(contiguous(tail))
    diag = sum_(multiply(rt, eye(k - head, dtype=q.dtype)), axis=0, keepdims=True)
    qt = where(greater(diag, 0.0), qt, multiply(qt, -1.0))
    return concat([first, qt], axis=1) if head else qt


def _svd_jordan_wielandt(a: GpuArray, vectors: bool, full_matrices: bool,
                         complete: bool) -> tuple[GpuArray | None, GpuArray, GpuArray | None]:
    """(U, S, Vh) of the real (batch, m, n) contiguous matrices, one at a time: with B the matrix
    or its transpose (p x k, p >= k), the k largest eigenpairs of the symmetric (p + k) x (p + k)
    matrix [[0, B], [B^T, 0]] (eigenvalues +-sigma, vectors [u; +-v] / sqrt(2): no product B^T B,
    so the condition number is not squared) by the tridiagonal path (``_tridiag_one``). The
    halves of each vector are normalised separately (a pair +-sigma that rounding mixes keeps
    their directions), u's sign taken from u^T B v; those of singular values below WEAK times the
    largest are orthonormalised against the others (one readback of S). As for Jacobi, the vectors of singular values
    at most ``ops_spectral.negligible`` times the largest, and the extra columns of
    ``full_matrices``, are completed to an orthonormal basis (``_complete``, one readback to see
    whether any is negligible)."""
    batch, m, n = a.shape
    dtype = a.dtype
    k = min(m, n)
    p = max(m, n)
    tall = m >= n
    negl = ops_spectral.negligible(dtype.name, p, k)
    us, ss, vhs = [], [], []
    reverse = asarray(np.arange(k - 1, -1, -1, dtype=np.int64), dtype=int64)
    for q in range(batch):
        b = a[q] if tall else matrix_transpose(a[q])  # (p, k)
        jw = concat([concat([zeros((p, p), dtype=dtype), b], axis=1),
                     concat([matrix_transpose(b), zeros((k, k), dtype=dtype)], axis=1)], axis=0)
        w, z = _tridiag_one(reshape(jw, (1, p + k, p + k)), vectors, 0, count=k)
        s = take(w, reverse)  # descending
        s = where(less(s, 0.0), 0.0, s)  # (NaN stays)
        ss.append(reshape(s, (1, k)))
        if not vectors:
            continue
        assert z is not None
        z = take(z, reverse, axis=1)
        halves = []
        for part in (z[:p, :], z[p:, :]):
            norm = sqrt(sum_(multiply(part, part), axis=0, keepdims=True))
            halves.append(divide(part, where(greater(norm, 0.0), norm, 1.0)))
        uu, vv = halves
        sign = sum_(multiply(uu, matmul(b, vv)), axis=0, keepdims=True)
        uu = where(greater(sign, 0.0), uu, multiply(uu, -1.0))
        sh = s.get()
        if not np.all(np.isfinite(sh)):  # non-finite input: NaN vectors
            us.append(full((1, p, p if full_matrices else k), float("nan"), dtype=dtype))
            vhs.append(full((1, k, k), float("nan"), dtype=dtype))
            if not tall:
                us[-1], vhs[-1] = vhs[-1], matrix_transpose(us[-1])
            continue
        weak = int(np.count_nonzero(sh < WEAK * sh[0])) if sh[0] > 0 else 0
        if weak:
            uu, vv = _orthonormal_tail(uu, k - weak), _orthonormal_tail(vv, k - weak)
        uu = reshape(contiguous(uu), (1, p, k))
        vv = reshape(contiguous(vv), (1, k, k))
        width = p if full_matrices else k
        valid = greater(reshape(s, (1, k)), multiply(s[:1], negl))
        deficient = complete and bool(any_(logical_not(valid)))
        if width > k or deficient:
            uu = _complete(uu, valid, width)
        if deficient:
            vv = _complete(vv, valid, k)
        if tall:
            us.append(uu)
            vhs.append(matrix_transpose(vv))
        else:
            us.append(vv)
            vhs.append(matrix_transpose(uu))
    s = ss[0] if batch == 1 else concat(ss, axis=0)
    if not vectors:
        return None, s, None
    u = contiguous(us[0] if batch == 1 else concat(us, axis=0))
    vh = contiguous(vhs[0] if batch == 1 else concat(vhs, axis=0))
    return u, s, vh


def _svd(x: GpuArray, vectors: bool, full_matrices: bool,
         complete: bool = True) -> tuple[GpuArray | None, GpuArray, GpuArray | None]:
    """(U, S, Vh) of the stack ``x`` (U, Vh None without ``vectors``). ``complete=False`` leaves
    the singular vectors of negligible singular values as the iteration left them (callers that
    drop those values, as pinv, need no completion)."""
    m, n = x.shape[-2:]
    k = min(m, n)
    batch_shape = x.shape[:-2]
    batch = batch_size(x)
    dtype = x.dtype
    if batch == 0 or k == 0:
        s = GpuArray._empty(batch_shape + (k,), real_dtype(dtype))
        if not vectors:
            return None, s, None
        um, vn = (m, n) if full_matrices else (k, k)
        u = reshape(eye(m, um, dtype=dtype), (1,) * len(batch_shape) + (m, um)) if batch else None
        u = contiguous(broadcast_to(u, batch_shape + (m, um))) if u is not None else GpuArray._empty(
            batch_shape + (m, um), dtype)
        vh = reshape(eye(vn, n, dtype=dtype), (1,) * len(batch_shape) + (vn, n)) if batch else None
        vh = contiguous(broadcast_to(vh, batch_shape + (vn, n))) if vh is not None else GpuArray._empty(
            batch_shape + (vn, n), dtype)
        return u, s, vh
    a = reshape(contiguous(x), (batch, m, n))
    if (not is_complex(x) and _tridiag_from("linalg_svd_tridiag", SVD_TRIDIAG_MIN) <= k
            and max(m, n) <= SVD_TRIDIAG_ASPECT * k and (batch <= TRIDIAG_BATCH or k >= TRIDIAG_BATCH_ORDER)
            and _dispatch.call(ops_tridiag.fits, dtype.name, m + n)):
        u, s, vh = _svd_jordan_wielandt(a, vectors, full_matrices, complete)
        s = reshape(s, batch_shape + (k,))
        if not vectors:
            return None, s, None
        assert u is not None and vh is not None
        return reshape(u, batch_shape + u.shape[-2:]), s, reshape(vh, batch_shape + vh.shape[-2:])
    tall = m >= n
    cm, cn = (m, n) if tall else (n, m)  # column length and columns of the orthogonalised matrix
    cols = contiguous(matrix_transpose(a)) if tall else a  # (batch, cn, cm): the columns as rows
    width = cm if full_matrices else cn
    negl = ops_spectral.negligible(dtype.name, cm, cn)
    if cm <= ops_spectral.small_max(dtype.name):
        s, q, vrows, worst = _small("svd", cols, cm, cn, batch, need_status=vectors and complete)
        deficient = worst == 1
    else:
        scale = max_(abs_(reshape(cols, (batch, cn * cm))), axis=-1)
        scale = where(greater(scale, 0.0), scale, 1.0)
        cols = contiguous(divide(cols, reshape(scale, (batch, 1, 1))))
        v = contiguous(broadcast_to(eye(cn, dtype=dtype), (batch, cn, cn))) if vectors else None
        _sweeps(cols, v, "svd")
        norms = sqrt(sum_(_abs2(cols), axis=-1))  # (batch, cn)
        order = argsort(norms, axis=-1, descending=True)
        sorted_norms = take_along_axis(norms, order, axis=-1)
        s = multiply(sorted_norms, reshape(scale, (batch, 1)))
        q = vrows = None
        deficient = False
        if vectors:
            safe = where(greater(norms, 0.0), norms, 1.0)
            rows = take_along_axis(divide(cols, expand_dims(safe, -1)), expand_dims(order, -1), axis=-2)
            q = matrix_transpose(rows)  # (batch, cm, cn)
            vrows = _conj(take_along_axis(v, expand_dims(order, -1), axis=-2))  # rows of Vh
            if complete:
                top = sorted_norms[:, :1]
                deficient = bool(any_(logical_not(greater(sorted_norms, multiply(top, negl)))))
    s_out = reshape(s, batch_shape + (k,))
    if not vectors:
        return None, s_out, None
    assert q is not None and vrows is not None
    if width > cn or (complete and deficient):
        # columns above negl * the largest are orthonormal (the kernels' convergence test)
        valid = greater(s, multiply(s[:, :1], negl))
        q = _complete(contiguous(q), valid, width)
    if tall:
        u, vh = q, vrows
    else:
        u, vh = matrix_transpose(vrows), matrix_transpose(q)
    u = reshape(contiguous(u), batch_shape + u.shape[-2:])
    vh = reshape(contiguous(vh), batch_shape + vh.shape[-2:])
    return u, s_out, vh


def svd_parts(x: GpuArray, *, full_matrices: bool, complete: bool) -> tuple[GpuArray, GpuArray, GpuArray]:
    """(U, S, Vh) of the float matrices ``x`` as :func:`svd`; with ``complete=False`` (and
    ``full_matrices=False``) the singular vectors of singular values at most
    ``ops_spectral.negligible(dtype, m, n)`` times the largest are left as the iteration left
    them (not orthonormal), for callers that drop those values. Raises as :func:`svd`."""
    if full_matrices and not complete:
        raise ValueError("svd_parts: full_matrices needs complete")
    u, s, vh = _svd(x, True, bool(full_matrices), complete)
    assert u is not None and vh is not None
    return u, s, vh


def svd(x: GpuArray, /, *, full_matrices: bool = True) -> SVDResult:
    """The singular value decomposition ``x = U diag(S) Vh`` of the matrices in ``x`` (``...,
    m, n``): ``S`` descending (``..., k``, k = min(m, n); real: float32 for complex64, float64
    for complex128); ``U`` (``..., m, m``) and ``Vh`` (``..., n, n``) orthonormal (unitary) with
    ``full_matrices``, else ``(..., m, k)`` and ``(..., k, n)``.

    Raises ``TypeError`` for non-arrays and dtypes other than float32, float64, complex64 and
    complex128, ``ValueError``
    for fewer than 2 dims, :class:`LinAlgError` when the iteration does not converge.
    Non-finite input gives NaN.
    """
    x = float_matrices(x, "svd", complex_ok=True)
    u, s, vh = _svd(x, True, bool(full_matrices))
    assert u is not None and vh is not None
    return SVDResult(u, s, vh)


def svdvals(x: GpuArray, /) -> GpuArray:
    """The singular values (descending) of the matrices in ``x``; as :func:`svd`."""
    x = float_matrices(x, "svdvals", complex_ok=True)
    return _svd(x, False, False)[1]

