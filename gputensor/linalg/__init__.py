"""gputensor.linalg: the Array API (2024.12) linear-algebra extension on the device.

Decompositions run in WGSL kernels, with no host LAPACK: the symmetric eigenproblem and the
SVD by one-sided Jacobi (``_spectral``); the factorisations (Cholesky, LU, QR) and what is
built on them (``solve``, ``inv``, ``det``, ``slogdet``, ``matrix_power``) in ``_factor``;
norms, rank, pseudo-inverse and the small helpers in ``_basic``. ``matmul``,
``matrix_transpose``, ``tensordot`` and ``vecdot`` are the namespace's own functions.
Functions take stacks of matrices (``..., m, n``); decompositions take float32 and float64
(``TypeError`` otherwise), wrong shapes raise ``ValueError``, and failures (no convergence,
singular or non-positive-definite input) raise :class:`LinAlgError`, a ``ValueError``.
"""

from __future__ import annotations

from .._linear_algebra_functions import matmul, matrix_transpose, tensordot, vecdot
from ._basic import cross, diagonal, matrix_norm, matrix_rank, outer, pinv, trace, vector_norm
from ._errors import LinAlgError
from ._factor import QRResult, SlogdetResult, cholesky, det, inv, matrix_power, qr, slogdet, solve
from ._spectral import EighResult, SVDResult, eigh, eigvalsh, svd, svdvals

# the 23 functions of the 2024.12 extension, then the exception and the result types
__all__ = [
    "cholesky",
    "cross",
    "det",
    "diagonal",
    "eigh",
    "eigvalsh",
    "inv",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "outer",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "trace",
    "vecdot",
    "vector_norm",
    "LinAlgError",
    "EighResult",
    "QRResult",
    "SlogdetResult",
    "SVDResult",
]
