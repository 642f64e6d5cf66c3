"""Argument checks and small array helpers shared by the ``gputensor.linalg`` functions."""

from __future__ import annotations

import math

import numpy as np

from .._array_object import GpuArray
from .._dtypes import DTYPE_CATEGORIES, DType, complex64, complex128, float32, float64
from .._manipulation_functions import _copy_contiguous
from .._shapes import is_contiguous

_DECOMPOSITION_DTYPES = (float32, float64)
_COMPLEX_DTYPES = (complex64, complex128)
_REAL_OF = {complex64: float32, complex128: float64}
_FLOATING = DTYPE_CATEGORIES["real floating"]


def array(x: object, name: str = "x") -> GpuArray:
    """``x`` if it is a gputensor array; ``TypeError`` otherwise."""
    if not isinstance(x, GpuArray):
        raise TypeError(f"{name} must be a gputensor array, not {type(x).__name__}")
    return x


def float_matrices(x: object, fn: str, *, square: bool = False, complex_ok: bool = False) -> GpuArray:
    """``x`` if it is a stack of matrices (``ndim >= 2``; square with ``square``) of float32 or
    float64 (or complex64 / complex128 with ``complex_ok``). Raises ``TypeError`` for non-arrays
    and other dtypes (the decompositions take floating-point input; float16 has no LAPACK-style
    routine either), ``ValueError`` for shapes."""
    x = array(x)
    if x.dtype not in _DECOMPOSITION_DTYPES and not (complex_ok and x.dtype in _COMPLEX_DTYPES):
        kinds = "float32, float64, complex64 or complex128" if complex_ok else "float32 or float64"
        raise TypeError(f"{fn} needs a {kinds} array, got {x.dtype}")
    if x.ndim < 2:
        raise ValueError(f"{fn} needs at least 2 dimensions, got {x.ndim}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{fn} needs square matrices, got shape {x.shape}")
    return x


def contiguous(x: GpuArray, dtype: DType | None = None) -> GpuArray:
    """``x`` when it is C-contiguous (and of ``dtype``), else a contiguous copy on the device."""
    if (dtype is None or x.dtype == dtype) and is_contiguous(x.shape, x._strides):
        return x
    return _copy_contiguous(x, dtype)


def real_dtype(dtype: DType) -> DType:
    """The real dtype of a complex dtype's parts; ``dtype`` itself for real dtypes."""
    return _REAL_OF.get(dtype, dtype)


def is_complex(x: GpuArray) -> bool:
    """Whether ``x`` has a complex dtype."""
    return x.dtype in _COMPLEX_DTYPES


def batch_size(x: GpuArray) -> int:
    """The number of matrices in the stack ``x``."""
    return math.prod(x.shape[:-2])


def eps(dtype: DType) -> float:
    """Machine epsilon of a float dtype."""
    return float(np.finfo(dtype.numpy).eps)


def tiny(dtype: DType) -> float:
    """The smallest normal number of a float dtype."""
    return float(np.finfo(dtype.numpy).tiny)
