"""The complex transforms of the fft extension: ``fft``, ``ifft``, ``fftn``, ``ifftn``.

Each is argument checking (``_args``), resizing the transformed axes to the requested lengths
(``_c2c.resize_axis``) and one ``_c2c.c2c`` per axis (the n-D transforms: the last axis given
first, as NumPy), every one on the device. Real floating input is transformed as complex (as in
NumPy and CuPy).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from .._array_object import GpuArray
from .._manipulation_functions import _copy_contiguous
from ._args import axes_and_lengths, check_norm, complex_input, one_axis, scale_factor
from ._c2c import c2c, resize_axis

__all__ = ["fft", "ifft", "fftn", "ifftn"]

Norm = Literal["backward", "ortho", "forward"]


def _one(x: Any, n: Any, axis: Any, norm: Any, inverse: bool, fn: str) -> GpuArray:
    x = complex_input(x, fn)
    norm = check_norm(norm, fn)
    length, ax = one_axis(x, n, axis, fn)
    return c2c(resize_axis(x, length, ax), ax, inverse, scale_factor(norm, length, inverse))


def _many(x: Any, s: Any, axes: Any, norm: Any, inverse: bool, fn: str) -> GpuArray:
    x = complex_input(x, fn)
    norm = check_norm(norm, fn)
    lengths, axes_list = axes_and_lengths(x, s, axes, fn)
    if not axes_list:
        return _copy_contiguous(x)
    for length, ax in reversed(list(zip(lengths, axes_list))):
        x = c2c(resize_axis(x, length, ax), ax, inverse, scale_factor(norm, length, inverse))
    return x


def fft(x: GpuArray, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> GpuArray:
    """The 1-D discrete Fourier transform of ``x`` along ``axis`` (length ``n``: truncated or
    zero-padded input; default the input's length). ``TypeError`` for integer or bool input,
    ``ValueError`` for ``n < 1`` (a zero-length axis without ``n`` too) or an unknown ``norm``,
    ``AxisError`` (a ``ValueError`` and ``IndexError``) for an axis out of range."""
    return _one(x, n, axis, norm, False, "fft")


def ifft(x: GpuArray, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> GpuArray:
    """The 1-D inverse discrete Fourier transform of ``x`` along ``axis`` (see :func:`fft`)."""
    return _one(x, n, axis, norm, True, "ifft")


def fftn(x: GpuArray, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: Norm = "backward") -> GpuArray:
    """The n-D discrete Fourier transform of ``x`` over ``axes`` (default: all, or the last
    ``len(s)`` when ``s`` is given) with lengths ``s`` (``-1``: the input's). The errors of
    :func:`fft`, and ``ValueError`` when ``s`` and ``axes`` differ in length."""
    return _many(x, s, axes, norm, False, "fftn")


def ifftn(x: GpuArray, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: Norm = "backward") -> GpuArray:
    """The n-D inverse discrete Fourier transform of ``x`` (see :func:`fftn`)."""
    return _many(x, s, axes, norm, True, "ifftn")
