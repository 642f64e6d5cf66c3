"""The real transforms of ``gputensor.fft``: ``rfft``, ``irfft``, ``rfftn``, ``irfftn``,
``hfft``, ``ihfft`` (Array API 2024.12; values as NumPy's).

Even lengths run through the half-length complex trick: the n real samples along the axis,
contiguous, are read as n/2 complex values (a free view), transformed by the complex DFT of
length n/2 (``_c2c.c2c``), and ``_backend/ops_fft_real.rfft_post`` forms the n/2 + 1 outputs
(the norm's scale and, for ``ihfft``, the conjugation folded in). The inverse runs
``ops_fft_real.irfft_pre`` (``hfft``'s conjugation folded in), the inverse complex DFT of
length n/2, and reads the result as the n reals. Odd lengths transform the full length as
complex data (real input promoted on the device; the inverse's Hermitian spectrum extended on
the device) and keep what the real transform returns. ``rfftn`` is ``rfft`` along the last of
``axes``, then complex DFTs along the others; ``irfftn`` the reverse.

Where the transform axis is not the last, contiguous one, the data is first moved there by a
device copy (with the padding or truncation to ``n``); results are views with the axis back in
place. Errors: ``TypeError`` for non-arrays, integer and bool input, complex input to the
real-input transforms; ``ValueError`` for lengths below 1 and bad ``norm``; ``AxisError`` for
axes out of range.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from .. import _dispatch
from .._array_object import GpuArray
from .._backend import ops_fft_real
from .._complex_views import as_pairs, component_dtype, from_pairs, part
from .._data_type_functions import astype
from .._elementwise_functions import conj
from .._manipulation_functions import _copy_contiguous, concat, flip, moveaxis, reshape
from .._shapes import is_contiguous
from . import _args
from ._c2c import c2c, resize_axis

__all__ = ["rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft"]

Norm = Literal["backward", "ortho", "forward"]

_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _index(axis: int, length: int, ndim: int) -> tuple[slice, ...]:
    return (slice(None),) * axis + (slice(0, length),) + (slice(None),) * (ndim - axis - 1)


def _last_contiguous(x: GpuArray, axis: int, n: int) -> GpuArray:
    """``x`` with ``axis`` moved last and resized to ``n``, C-contiguous at an even offset (a
    view where ``x`` already is, else a device copy)."""
    y = resize_axis(moveaxis(x, axis, -1) if axis != x.ndim - 1 else x, n, x.ndim - 1)
    if is_contiguous(y.shape, y._strides) and y._offset % 2 == 0:
        return y
    return _copy_contiguous(y)


def _rows(shape: tuple[int, ...]) -> int:
    rows = 1
    for s in shape[:-1]:
        rows *= s
    return rows


def _rfft(x: GpuArray, n: int, axis: int, scale: float, conjugate: bool) -> GpuArray:
    """The n // 2 + 1 values of the real DFT of length ``n`` along ``axis`` of the real float32
    / float64 array ``x``, times ``scale``, conjugated with ``conjugate``."""
    cdtype = _args.complex_dtype_of(x.dtype)
    if n % 2:
        z = c2c(astype(resize_axis(x, n, axis), cdtype), axis, False, scale)
        out = z[_index(axis, n // 2 + 1, x.ndim)]
        return conj(out) if conjugate else out
    y = _last_contiguous(x, axis, n)
    h = n // 2
    z = c2c(from_pairs(reshape(y, y.shape[:-1] + (h, 2)), cdtype), y.ndim - 1, False, 1.0)
    out = GpuArray._empty(y.shape[:-1] + (h + 1,), cdtype, zero=False)
    rows = _rows(y.shape)
    if rows:
        _dispatch.call(ops_fft_real.rfft_post, cdtype.name, n, rows, z._ptr, out._ptr, scale, conjugate)
    return moveaxis(out, -1, axis) if axis != x.ndim - 1 else out


def _irfft(x: GpuArray, n: int, axis: int, scale: float, conjugate: bool) -> GpuArray:
    """The real inverse DFT of length ``n`` along ``axis`` of the Hermitian spectra whose first
    n // 2 + 1 values ``x`` (complex) holds (zero-padded or truncated to that), times ``scale``
    (of the unnormalized transform), ``x`` conjugated first with ``conjugate``."""
    m = n // 2 + 1
    if n % 2:
        half = resize_axis(x, m, axis)
        if conjugate:
            half = conj(half)
        tail = flip(conj(half[(slice(None),) * axis + (slice(1, m),)]), axis=axis)
        full = concat([half, tail], axis=axis) if m > 1 else half
        return part(c2c(full, axis, True, scale), 0)
    y = _last_contiguous(x, axis, m)
    h = n // 2
    z = GpuArray._empty(y.shape[:-1] + (h,), x.dtype, zero=False)
    rows = _rows(y.shape)
    if rows:
        _dispatch.call(ops_fft_real.irfft_pre, x.dtype.name, n, rows, y._ptr, z._ptr, scale, conjugate)
    w = c2c(z, y.ndim - 1, True, 1.0)
    out = reshape(as_pairs(w), y.shape[:-1] + (n,))
    return moveaxis(out, -1, axis) if axis != x.ndim - 1 else out


def rfft(x: GpuArray, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> GpuArray:
    """The one-dimensional DFT of real input along ``axis``: the ``n // 2 + 1`` non-negative
    frequency terms (``n`` default: the input's length; shorter input is zero-padded, longer
    truncated), scaled per ``norm``. complex64 for float32 input, complex128 for float64.

    Raises ``TypeError`` for complex, integer, bool or non-array input, ``ValueError`` for
    ``n < 1`` or a bad ``norm``, ``AxisError`` for a bad ``axis``."""
    x = _args.real_input(x, "rfft")
    _args.check_norm(norm, "rfft")
    length, ax = _args.one_axis(x, n, axis, "rfft")
    return _rfft(x, length, ax, _args.scale_factor(norm, length, False), False)


def irfft(x: GpuArray, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> GpuArray:
    """The inverse of :func:`rfft`: the real signal of length ``n`` (default ``2 * (m - 1)``
    for ``m`` input values along ``axis``) whose spectrum's first ``n // 2 + 1`` values are
    ``x`` (zero-padded or truncated to that), scaled per ``norm``. float32 for complex64,
    float64 for complex128 (real input is taken as complex, as NumPy does).

    Raises ``TypeError`` for integer, bool or non-array input, ``ValueError`` for ``n < 1``
    or a bad ``norm``, ``AxisError`` for a bad ``axis``."""
    x = _args.complex_input(x, "irfft")
    _args.check_norm(norm, "irfft")
    length, ax = _args.one_axis(x, n, axis, "irfft", default_n=lambda m: 2 * (m - 1))
    return _irfft(x, length, ax, _args.scale_factor(norm, length, True), False)


def hfft(x: GpuArray, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> GpuArray:
    """The DFT of a signal with Hermitian symmetry given by its first half ``x``: the real
    spectrum of length ``n`` (default ``2 * (m - 1)``), i.e. ``irfft(conj(x))`` with the
    opposite normalisation. Errors as :func:`irfft`."""
    x = _args.complex_input(x, "hfft")
    _args.check_norm(norm, "hfft")
    length, ax = _args.one_axis(x, n, axis, "hfft", default_n=lambda m: 2 * (m - 1))
    return _irfft(x, length, ax, _args.scale_factor(_SWAP[norm], length, True), True)


def ihfft(x: GpuArray, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> GpuArray:
    """The inverse of :func:`hfft`: ``conj(rfft(x))`` with the opposite normalisation, the
    ``n // 2 + 1`` values of a Hermitian spectrum. Errors as :func:`rfft`."""
    x = _args.real_input(x, "ihfft")
    _args.check_norm(norm, "ihfft")
    length, ax = _args.one_axis(x, n, axis, "ihfft")
    return _rfft(x, length, ax, _args.scale_factor(_SWAP[norm], length, False), True)


def _c2c_axes(x: GpuArray, lengths: Sequence[int], axes: Sequence[int], norm: str, inverse: bool) -> GpuArray:
    """Complex DFTs along ``axes`` in the order given, each after resizing to its length."""
    for length, ax in zip(lengths, axes):
        x = c2c(resize_axis(x, length, ax), ax, inverse, _args.scale_factor(norm, length, inverse))
    return x


def rfftn(x: GpuArray, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: Norm = "backward") -> GpuArray:
    """The n-dimensional DFT of real input over ``axes`` (default: all, or the last ``len(s)``),
    lengths ``s`` (default: the input's; ``-1``: the input's): :func:`rfft` along the last of
    ``axes`` (its length becomes ``s[-1] // 2 + 1``), then complex DFTs along the others.
    Errors as :func:`rfft`; ``ValueError`` when ``s`` and ``axes`` differ in length."""
    x = _args.real_input(x, "rfftn")
    _args.check_norm(norm, "rfftn")
    lengths, axes_list = _args.axes_and_lengths(x, s, axes, "rfftn")
    if not axes_list:
        return astype(x, _args.complex_dtype_of(x.dtype))
    last, ax = lengths[-1], axes_list[-1]
    out = _rfft(x, last, ax, _args.scale_factor(norm, last, False), False)
    return _c2c_axes(out, lengths[-2::-1], axes_list[-2::-1], norm, False)


def irfftn(x: GpuArray, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: Norm = "backward") -> GpuArray:
    """The inverse of :func:`rfftn`: inverse complex DFTs along all but the last of ``axes``,
    then :func:`irfft` along the last (its length ``s[-1]``, default ``2 * (m - 1)``). Errors
    as :func:`irfft`; ``ValueError`` when ``s`` and ``axes`` differ in length."""
    x = _args.complex_input(x, "irfftn")
    _args.check_norm(norm, "irfftn")
    lengths, axes_list = _args.axes_and_lengths(x, s, axes, "irfftn", default_last=lambda m: 2 * (m - 1))
    if not axes_list:
        return part(x, 0)
    y = _c2c_axes(x, lengths[:-1], axes_list[:-1], norm, True)
    last, ax = lengths[-1], axes_list[-1]
    return _irfft(y, last, ax, _args.scale_factor(norm, last, True), False)
