"""The linalg extension's functions built on other operations: norms, rank, pseudo-inverse,
cross product, diagonal, outer product and trace.

They compose the namespace's device operations (reductions, elementwise functions, matmul)
and the SVD of ``_spectral``; ``diagonal`` is a strided view.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

from .._array_object import GpuArray
from .._creation_functions import zeros
from .._data_type_functions import astype, result_type
from .._devices import DEFAULT_DEVICE
from .._dtypes import DTYPE_CATEGORIES, float32, float64
from .._elementwise_functions import abs as abs_
from .._elementwise_functions import conj, divide, greater, multiply, pow as pow_, sqrt, subtract
from .._linear_algebra_functions import matmul, matrix_transpose
from .._manipulation_functions import _view, broadcast_arrays, expand_dims, reshape, stack
from .._searching_functions import count_nonzero, where
from .._shapes import normalize_axis
from .._statistical_functions import max as max_
from .._statistical_functions import min as min_
from .._statistical_functions import sum as sum_
from ._common import array, eps, float_matrices, is_complex, real_dtype
from ._spectral import svd_parts, svdvals

__all__ = ["cross", "diagonal", "matrix_norm", "matrix_rank", "outer", "pinv", "trace", "vector_norm"]

_NUMERIC = DTYPE_CATEGORIES["numeric"]
_FLOATING = DTYPE_CATEGORIES["floating"]  # real and complex


def _float_array(x: object, fn: str) -> GpuArray:
    x = array(x)
    if x.dtype not in _FLOATING:
        raise TypeError(f"{fn} needs a floating-point array, got {x.dtype}")
    return x


def _conj_transpose(x: GpuArray) -> GpuArray:
    """The (conjugate, for complex) transpose of the matrices in ``x``."""
    t = matrix_transpose(x)
    return conj(t) if is_complex(t) else t


def _axes(axis: int | Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, numbers.Integral) and not isinstance(axis, bool):
        return (normalize_axis(int(axis), ndim),)
    if isinstance(axis, (tuple, list)):
        axes = tuple(normalize_axis(a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"repeated axis in {tuple(axis)}")
        return axes
    raise TypeError(f"axis must be an int, a tuple of ints or None, not {type(axis).__name__}")


def vector_norm(x: GpuArray, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False,
                ord: int | float = 2) -> GpuArray:
    """The vector ``ord``-norm over ``axis`` (an int, a tuple of ints or None for all):
    ``ord`` = inf / -inf (max / min of ``|x|``), 0 (the count of non-zeros), 1, 2 or any
    other real p (``sum(|x|^p)^(1/p)``, negative p included). The result has ``x``'s real
    dtype (float32 for complex64, float64 for complex128).

    Raises ``TypeError`` for non-floating dtypes or a non-real ``ord``, ``AxisError`` for an axis
    out of range, ``ValueError`` for repeated axes (and, for ``ord=±inf``, zero elements).
    """
    x = _float_array(x, "vector_norm")
    if isinstance(ord, bool) or not isinstance(ord, numbers.Real):
        raise TypeError(f"ord must be a real number, not {type(ord).__name__}")
    axes = _axes(axis, x.ndim)
    if x.ndim == 0:
        axes = ()
    a = abs_(x)
    p = float(ord)
    kw = {"axis": axes, "keepdims": keepdims}
    if p == math.inf:
        return max_(a, **kw)
    if p == -math.inf:
        return min_(a, **kw)
    if p == 0:
        return astype(count_nonzero(x, axis=axes, keepdims=keepdims), real_dtype(x.dtype))
    if p == 1:
        return sum_(a, **kw)
    if p == 2:
        return sqrt(sum_(multiply(a, a), **kw))
    return pow_(sum_(pow_(a, p), **kw), 1.0 / p)


def matrix_norm(x: GpuArray, /, *, keepdims: bool = False, ord: int | float | str = "fro") -> GpuArray:
    """The matrix norm of the matrices in ``x`` (``..., m, n``): 'fro' (Frobenius), 'nuc'
    (sum of singular values), 1 / -1 (max / min column sum of ``|x|``), inf / -inf (max / min
    row sum), 2 / -2 (largest / smallest singular value). ``keepdims`` keeps the two matrix
    dims as size 1. The result has ``x``'s real dtype (float32 for complex64).

    Raises ``TypeError`` for non-floating dtypes, ``ValueError`` for fewer than 2 dims, an
    unknown ``ord`` or (for the max/min norms) empty matrices.
    """
    x = _float_array(x, "matrix_norm")
    if x.ndim < 2:
        raise ValueError(f"matrix_norm needs at least 2 dimensions, got {x.ndim}")
    if isinstance(ord, str):
        if ord == "fro":
            a = abs_(x) if is_complex(x) else x
            out = sqrt(sum_(multiply(a, a), axis=(-2, -1)))
        elif ord == "nuc":
            out = sum_(svdvals(float_matrices(x, "matrix_norm", complex_ok=True)), axis=-1)
        else:
            raise ValueError(f"matrix_norm: unknown ord {ord!r}")
    elif isinstance(ord, bool) or not isinstance(ord, numbers.Real):
        raise ValueError(f"matrix_norm: unknown ord {ord!r}")
    elif ord in (1, -1, math.inf, -math.inf):
        sums = sum_(abs_(x), axis=-2 if ord in (1, -1) else -1)
        out = max_(sums, axis=-1) if ord > 0 else min_(sums, axis=-1)
    elif ord in (2, -2):
        if min(x.shape[-2:]) == 0:
            raise ValueError("matrix_norm: ord=2 / -2 of empty matrices")
        s = svdvals(float_matrices(x, "matrix_norm", complex_ok=True))
        out = s[..., 0] if ord == 2 else s[..., -1]
    else:
        raise ValueError(f"matrix_norm: unknown ord {ord!r}")
    if keepdims:
        out = reshape(out, out.shape + (1, 1))
    return out


def _rtol_array(rtol: float | GpuArray | None, x: GpuArray, s_dtype) -> GpuArray | float:
    if rtol is None:
        return max(x.shape[-2:]) * eps(s_dtype)
    if isinstance(rtol, GpuArray):
        return expand_dims(rtol, -1)
    if isinstance(rtol, bool) or not isinstance(rtol, numbers.Real):
        raise TypeError(f"rtol must be a real number, an array or None, not {type(rtol).__name__}")
    return float(rtol)


def _as_float(x: GpuArray) -> GpuArray:
    """``x`` if it is floating-point (real or complex), else ``x`` as the default float."""
    if x.dtype in _FLOATING:
        return x
    if x.dtype not in _NUMERIC:
        raise TypeError(f"expected a numeric array, got {x.dtype}")
    return astype(x, float64 if float64 in DEFAULT_DEVICE.supported_dtypes() else float32)


def matrix_rank(x: GpuArray, /, *, rtol: float | GpuArray | None = None) -> GpuArray:
    """The rank of the matrices in ``x``: the number of singular values above ``rtol`` times
    the largest (default ``max(m, n) * eps``), in the default integer dtype.

    Raises ``TypeError`` for non-numeric dtypes, ``ValueError`` (:class:`LinAlgError`) for fewer
    than 2 dims.
    """
    x = array(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_rank needs at least 2 dimensions, got {x.ndim}")
    x = _as_float(x)
    s = svdvals(x)
    if s.shape[-1] == 0:
        return zeros(x.shape[:-2], dtype=count_nonzero(s, axis=-1).dtype)
    tol = multiply(max_(s, axis=-1, keepdims=True), _rtol_array(rtol, x, s.dtype))
    return count_nonzero(greater(s, tol), axis=-1)


def pinv(x: GpuArray, /, *, rtol: float | GpuArray | None = None) -> GpuArray:
    """The Moore-Penrose pseudo-inverse (``..., n, m``) of the matrices in ``x`` from their SVD,
    ``V diag(1 / s) U^H``: singular values at most ``rtol`` times the largest (default
    ``max(m, n) * eps``) count as zero.

    Raises ``TypeError`` for non-floating dtypes, ``ValueError`` for fewer than 2 dims.
    """
    x = _float_array(x, "pinv")
    x = float_matrices(x, "pinv", complex_ok=True)
    m, n = x.shape[-2:]
    if min(m, n) == 0 or math.prod(x.shape[:-2]) == 0:
        return zeros(x.shape[:-2] + (n, m), dtype=x.dtype)
    # with the default rtol every negligible singular value is cut: no completion of their vectors
    u, s, vh = svd_parts(x, full_matrices=False, complete=rtol is not None)
    cutoff = multiply(max_(s, axis=-1, keepdims=True), _rtol_array(rtol, x, s.dtype))
    big = greater(s, cutoff)
    inv = where(big, divide(1.0, where(big, s, 1.0)), 0.0)
    return matmul(_conj_transpose(vh), multiply(expand_dims(inv, -1), _conj_transpose(u)))


def cross(x1: GpuArray, x2: GpuArray, /, *, axis: int = -1) -> GpuArray:
    """The cross product of 3-element vectors along ``axis`` (negative, counted from the end of
    the broadcast shape) of broadcast-compatible ``x1`` and ``x2``.

    Raises ``TypeError`` for non-numeric dtypes, ``ValueError`` for 0-d operands, a
    non-negative or out-of-range axis, shapes that do not broadcast or an axis size other than 3.
    """
    x1 = array(x1, "x1")
    x2 = array(x2, "x2")
    if x1.dtype not in _NUMERIC or x2.dtype not in _NUMERIC:
        raise TypeError("cross needs numeric dtypes")
    result_type(x1, x2)
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError("cross needs arrays of at least 1 dimension")
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"axis must be an int, not {type(axis).__name__}")
    if axis >= 0:
        raise ValueError("axis must be negative in cross")
    if axis < -min(x1.ndim, x2.ndim):
        raise ValueError(f"axis {axis} is out of bounds for x1 and x2")
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(f"cross needs vectors of 3 elements along axis {axis}")
    a, b = broadcast_arrays(x1, x2)
    ax = a.ndim + axis

    def part(v: GpuArray, i: int) -> GpuArray:
        index = (slice(None),) * ax + (i,)
        return v[index]

    a0, a1, a2 = (part(a, i) for i in range(3))
    b0, b1, b2 = (part(b, i) for i in range(3))
    c0 = subtract(multiply(a1, b2), multiply(a2, b1))
    c1 = subtract(multiply(a2, b0), multiply(a0, b2))
    c2 = subtract(multiply(a0, b1), multiply(a1, b0))
    return stack([c0, c1, c2], axis=ax)


def diagonal(x: GpuArray, /, *, offset: int = 0) -> GpuArray:
    """A view of the ``offset``-th diagonal (positive: above the main one) of the matrices in
    ``x``, shape ``(..., k)``.

    Raises ``TypeError`` for non-arrays or a non-integer offset, ``ValueError`` for fewer than
    2 dims.
    """
    x = array(x)
    if x.ndim < 2:
        raise ValueError(f"diagonal needs at least 2 dimensions, got {x.ndim}")
    if isinstance(offset, bool) or not isinstance(offset, numbers.Integral):
        raise TypeError(f"offset must be an int, not {type(offset).__name__}")
    offset = int(offset)
    m, n = x.shape[-2:]
    rs, cs = x._strides[-2:]
    if offset >= 0:
        length = max(0, min(m, n - offset))
        start = offset * cs
    else:
        length = max(0, min(m + offset, n))
        start = -offset * rs
    if length == 0:
        start = 0
    return _view(x, x.shape[:-2] + (length,), x._strides[:-2] + (rs + cs,), start)


def outer(x1: GpuArray, x2: GpuArray, /) -> GpuArray:
    """The outer product ``x1[:, None] * x2[None, :]`` of two 1-D arrays.

    Raises ``TypeError`` for non-numeric dtypes, ``ValueError`` unless both are 1-D.
    """
    x1 = array(x1, "x1")
    x2 = array(x2, "x2")
    if x1.dtype not in _NUMERIC or x2.dtype not in _NUMERIC:
        raise TypeError("outer needs numeric dtypes")
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"outer needs 1-D arrays, got {x1.ndim}-D and {x2.ndim}-D")
    return multiply(expand_dims(x1, -1), expand_dims(x2, 0))


def trace(x: GpuArray, /, *, offset: int = 0, dtype=None) -> GpuArray:
    """The sum of the ``offset``-th diagonal of the matrices in ``x``, with :func:`sum`'s dtype
    rules (``dtype`` as there).

    Raises ``TypeError`` for non-numeric dtypes, ``ValueError`` for fewer than 2 dims.
    """
    x = array(x)
    if x.dtype not in _NUMERIC:
        raise TypeError(f"trace needs a numeric array, got {x.dtype}")
    return sum_(diagonal(x, offset=offset), axis=-1, dtype=dtype)
