"""Argument normalisation shared by the functions of ``gputensor.fft`` (Array API 2024.12).

* :func:`check_array` / :func:`complex_input` / :func:`real_input`: the operand and its dtype
  (``TypeError`` for non-arrays, integer and bool arrays, and dtypes the function does not take);
  the complex transforms take real floating input as NumPy and CuPy do, promoted to the complex
  dtype of its precision (float16 and float32 to complex64, float64 to complex128).
* :func:`check_norm` and :func:`scale_factor`: ``norm`` in {"backward", "ortho", "forward"}
  (``ValueError`` otherwise) and the factor a transform of length ``n`` is multiplied by.
* :func:`check_device_arg`: the ``device`` argument of ``fftfreq`` / ``rfftfreq``.
* :func:`one_axis`: ``n`` / ``axis`` of the 1-D transforms; :func:`axes_and_lengths`: ``s`` /
  ``axes`` of the n-D ones (``s`` without ``axes``: the last ``len(s)`` axes; ``axes`` without
  ``s``: the input's lengths; ``s[i] == -1``: the input's length along ``axes[i]``; duplicate
  axes are transformed once per entry, as NumPy does). Lengths below 1 raise ``ValueError``,
  axes out of range :class:`AxisError` (a ``ValueError`` and ``IndexError``).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

from .._array_object import GpuArray
from .._data_type_functions import astype
from .._devices import check_device
from .._dtypes import complex64, complex128, float16, float32, float64
from .._shapes import normalize_axis

__all__ = ["NORMS", "check_array", "check_norm", "scale_factor", "complex_input", "transform_input", "real_input",
           "complex_dtype_of", "real_dtype_of", "check_length", "check_device_arg", "one_axis",
           "axes_and_lengths"]

#: The values of ``norm``.
NORMS = ("backward", "ortho", "forward")

_COMPLEX_OF = {float16: complex64, float32: complex64, float64: complex128,
               complex64: complex64, complex128: complex128}
_REAL_OF = {complex64: float32, complex128: float64}


def check_array(x: Any, fn: str) -> GpuArray:
    """``x`` if it is a gputensor array; ``TypeError`` otherwise."""
    if not isinstance(x, GpuArray):
        raise TypeError(f"{fn}: expected a gputensor array, not {type(x).__name__}")
    return x


def check_norm(norm: Any, fn: str = "fft") -> str:
    """``norm`` if it is one of :data:`NORMS`; ``ValueError`` otherwise."""
    if not isinstance(norm, str) or norm not in NORMS:
        raise ValueError(f"{fn}: invalid norm {norm!r}; expected one of {', '.join(map(repr, NORMS))}")
    return norm


def scale_factor(norm: str, n: int, inverse: bool) -> float:
    """The factor the unnormalised DFT of length ``n`` is multiplied by: ``norm="backward"``:
    1 forward, 1/n inverse; ``"ortho"``: 1/sqrt(n) both ways; ``"forward"``: 1/n forward, 1
    inverse. ``ValueError`` for another ``norm`` or ``n < 1``."""
    check_norm(norm)
    check_length(n, "fft")
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if (norm == "forward") != bool(inverse):
        return 1.0 / n
    return 1.0


def complex_dtype_of(dtype: Any) -> Any:
    """The complex dtype a floating ``dtype`` transforms in; ``TypeError`` for other dtypes."""
    out = _COMPLEX_OF.get(dtype)
    if out is None:
        raise TypeError(f"fft: only floating-point dtypes are allowed, not {dtype}")
    return out


def real_dtype_of(dtype: Any) -> Any:
    """The real dtype of the parts of a complex ``dtype``, a real floating dtype itself
    (float16: float32); ``TypeError`` for other dtypes."""
    return _REAL_OF[complex_dtype_of(dtype)]


def complex_input(x: Any, fn: str) -> GpuArray:
    """The operand of a complex transform as a complex array: complex arrays as they are, real
    floating ones converted to the complex dtype of their precision (a new array). ``TypeError``
    for non-arrays and integer or bool arrays; float64 on an adapter without ``shader-f64``
    cannot exist (``asarray`` refuses it)."""
    check_array(x, fn)
    dtype = _COMPLEX_OF.get(x.dtype)
    if dtype is None:
        raise TypeError(f"{fn}: only floating-point dtypes are allowed, not {x.dtype}")
    return x if dtype == x.dtype else astype(x, dtype)


def transform_input(x: Any, fn: str) -> GpuArray:
    """The operand of a complex transform as the transform reads it: complex64 / complex128
    and float32 / float64 arrays as they are (real ones are read as complex on the device),
    float16 converted to float32. ``TypeError`` as :func:`complex_input`."""
    check_array(x, fn)
    if x.dtype not in _COMPLEX_OF:
        raise TypeError(f"{fn}: only floating-point dtypes are allowed, not {x.dtype}")
    return astype(x, float32) if x.dtype == float16 else x


def real_input(x: Any, fn: str) -> GpuArray:
    """The operand of a real-input transform (``rfft``, ``rfftn``, ``ihfft``): a real floating
    array (float16 converted to float32). ``TypeError`` for non-arrays, complex, integer and bool
    arrays."""
    check_array(x, fn)
    if x.dtype not in (float16, float32, float64):
        raise TypeError(f"{fn}: only real floating-point dtypes are allowed, not {x.dtype}")
    return astype(x, float32) if x.dtype == float16 else x


def check_length(n: Any, fn: str) -> int:
    """``n`` as an int if it is a positive integer: ``TypeError`` for non-integers (bool
    included), ``ValueError`` for ``n < 1``."""
    if isinstance(n, bool):
        raise TypeError(f"{fn}: n must be an integer, not bool")
    try:
        value = operator.index(n)
    except TypeError:
        raise TypeError(f"{fn}: n must be an integer, not {type(n).__name__}") from None
    if value < 1:
        raise ValueError(f"{fn}: invalid number of data points ({value}) specified")
    return value


def one_axis(x: GpuArray, n: Any, axis: Any, fn: str, default_n: Any = None) -> tuple[int, int]:
    """(length, non-negative axis) of a 1-D transform of ``x``: ``axis`` normalised
    (:class:`AxisError` when out of range, ``TypeError`` when not an integer), ``n`` checked,
    defaulting to ``default_n(input length)`` when given (the real inverses) else to the input
    length. ``ValueError`` when the length is below 1."""
    ax = normalize_axis(axis, x.ndim)
    if n is None:
        size = x.shape[ax]
        n = default_n(size) if default_n is not None else size
    return check_length(n, fn), ax


def axes_and_lengths(x: GpuArray, s: Any, axes: Any, fn: str,
                     default_last: Any = None) -> tuple[list[int], list[int]]:
    """(lengths, non-negative axes) of an n-D transform of ``x``, in the order given (the
    transforms run last to first, as NumPy's). ``s`` and ``axes`` are sequences of integers or
    None: ``axes=None`` means every axis when ``s`` is None, else the last ``len(s)`` axes;
    ``s=None`` means the input's lengths (``default_last(length)`` for the last axis when given:
    the real inverses), ``s[i] == -1`` the input's length along ``axes[i]``. ``ValueError`` when
    ``s`` and ``axes`` differ in length or a length is below 1 (``s`` longer than the array has
    dims too), ``TypeError`` for non-integer entries, :class:`AxisError` for axes out of range."""
    ndim = x.ndim
    if axes is None:
        if s is None:
            axes_list = list(range(ndim))
        else:
            s = _int_list(s, "s", fn)
            if len(s) > ndim:
                raise ValueError(f"{fn}: s has {len(s)} entries for an array of {ndim} dimensions")
            axes_list = list(range(ndim - len(s), ndim))
    else:
        axes_list = [normalize_axis(a, ndim) for a in _int_list(axes, "axes", fn)]
    if s is None:
        lengths = [x.shape[a] for a in axes_list]
        if default_last is not None and axes_list:
            lengths[-1] = default_last(lengths[-1])
    else:
        s = _int_list(s, "s", fn)
        if len(s) != len(axes_list):
            raise ValueError(f"{fn}: s and axes have different lengths ({len(s)} and {len(axes_list)})")
        lengths = [x.shape[a] if v == -1 else v for v, a in zip(s, axes_list)]
    return [check_length(v, fn) for v in lengths], axes_list


def _int_list(values: Any, what: str, fn: str) -> list[int]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        try:
            values = list(values)
        except TypeError:
            raise TypeError(f"{fn}: {what} must be a sequence of integers, not {type(values).__name__}") from None
    out = []
    for v in values:
        if isinstance(v, bool):
            raise TypeError(f"{fn}: {what} must hold integers, not bool")
        try:
            out.append(operator.index(v))
        except TypeError:
            raise TypeError(f"{fn}: {what} must hold integers, not {type(v).__name__}") from None
    return out


def check_device_arg(device: Any) -> Any:
    """The device ``device`` names (None: the default) for ``fftfreq`` / ``rfftfreq``'s
    ``device`` argument; ``ValueError`` for a device gputensor does not have."""
    return check_device(device)
