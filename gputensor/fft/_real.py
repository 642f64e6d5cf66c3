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
from typing import Any, Literal, NamedTuple

from .. import _dispatch, _runtime
from .._array_object import GpuArray
from .._backend import ops_fft, ops_fft_real
from .._complex_views import part
from .._data_type_functions import astype
from .._elementwise_functions import conj
from .._kept import KeptCall
from .._manipulation_functions import _copy_contiguous, concat, flip, moveaxis
from .._shapes import contiguous_strides, is_contiguous
from . import _args
from ._c2c import c2c, prepare, prepare_axes, resize_axis, run_prepared
from ._kept_steps import KeptSteps, call_key, first_run, run_step, sequence_key

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


class _Step(NamedTuple):
    """A real transform along the last, contiguous axis of an array of one shape and dtype
    (``ops_fft_real.real``'s arguments and the result's shape and dtype)."""

    out_shape: tuple[int, ...]
    out_dtype: Any
    dtype: str
    n: int
    rows: int
    inverse: bool
    scale: float
    conj: bool

    def run(self, x: GpuArray) -> GpuArray:
        """The transform of ``x`` (of the shape, strides and dtype this was made for)."""
        out = GpuArray._empty(self.out_shape, self.out_dtype, zero=False)
        _runtime.call(ops_fft_real.real, self.dtype, self.n, self.rows, x._ptr, out._ptr, inverse=self.inverse,
                      scale=self.scale, conj=self.conj)
        return out

    def kept(self) -> KeptCall:
        """The :class:`KeptCall` of the backend's kept plan (``ops_fft_real.planned_real``),
        made now where there is none."""
        plan = _runtime.call(ops_fft_real.planned_real, self.dtype, self.n, self.rows, inverse=self.inverse,
                             scale=self.scale, conj=self.conj)
        return KeptCall(self.out_shape, contiguous_strides(self.out_shape), self.out_dtype, call=plan)


def _real_step(x: GpuArray, n: int, axis: int, scale: float, conjugate: bool, inverse: bool) -> _Step | None:
    """The :class:`_Step` of a real transform of even length ``n`` along ``axis`` of ``x`` where
    it runs on ``x`` itself (``axis`` last and contiguous, an even offset, no resizing, some
    rows); None otherwise."""
    shape = x._shape
    size = n // 2 + 1 if inverse else n
    if (n % 2 or axis != len(shape) - 1 or shape[-1] != size or x._offset % 2
            or not is_contiguous(shape, x._strides)):
        return None
    rows = _rows(shape)
    if not rows:
        return None
    if inverse:
        return _Step(shape[:-1] + (n,), _args.real_dtype_of(x.dtype), x.dtype.name, n, rows, True, scale, conjugate)
    cdtype = _args.complex_dtype_of(x.dtype)
    return _Step(shape[:-1] + (n // 2 + 1,), cdtype, cdtype.name, n, rows, False, scale, conjugate)


class _Steps(tuple):
    """Several steps run in turn as one (``_kept_steps.run_step`` each)."""

    def run(self, x: GpuArray) -> GpuArray | None:
        for step in self:
            x = run_step(x, step)
            if x is None:
                return None
        return x


def _rfft(x: GpuArray, n: int, axis: int, scale: float, conjugate: bool) -> tuple[GpuArray, Any]:
    """The n // 2 + 1 values of the real DFT of length ``n`` along ``axis`` of the real float32
    / float64 array ``x``, times ``scale``, conjugated with ``conjugate``; and its step where it
    ran on ``x`` itself (``_real_step``)."""
    cdtype = _args.complex_dtype_of(x.dtype)
    if n % 2 and ops_fft.stores_prefix():
        # the complex DFT of the real values (read as complex on the device), only its first
        # n // 2 + 1 values stored; conj(DFT(x)) of real x is its DFT of the opposite sign
        keep = n // 2 + 1
        y = resize_axis(x, n, axis)
        if x.shape[axis] >= n:  # (``y`` is ``x`` or a view of it at its pointer: kept for ``x``)
            prep = prepare(y, axis, conjugate, scale, keep)
            if prep is not None:
                return first_run(y, prep)
        return c2c(y, axis, conjugate, scale, keep), None
    if n % 2:  # the complex DFT of the real values (read as complex on the device), its first half
        index = _index(axis, n // 2 + 1, x.ndim)
        prep = prepare(x, axis, False, scale) if x.shape[axis] == n else None
        z = run_prepared(x, prep) if prep is not None else c2c(resize_axis(x, n, axis), axis, False, scale)
        out = conj(z[index]) if conjugate else z[index]
        if prep is None:
            return out, None
        return out, _Steps((prep, lambda v: v[index], conj) if conjugate else (prep, lambda v: v[index]))
    step = _real_step(x, n, axis, scale, conjugate, False)
    if step is not None:
        return first_run(x, step)
    if x.shape[axis] >= n and x.size:
        # the full-length complex transform of the input where it lies (a truncating view), its
        # n // 2 + 1 values stored, instead of a copy (``ops_fft.prefix_in_place``)
        y = resize_axis(x, n, axis)
        strides = y._strides
        if _runtime.call(ops_fft.prefix_in_place, cdtype.name, n, strides[axis], y.shape[:axis] + y.shape[axis + 1:],
                         strides[:axis] + strides[axis + 1:]):
            prep = prepare(y, axis, conjugate, scale, n // 2 + 1)
            if prep is not None:  # (``y`` is ``x`` or a view of it at its pointer: kept for ``x``)
                return first_run(y, prep)
    y = _last_contiguous(x, axis, n)
    out = GpuArray._empty(y.shape[:-1] + (n // 2 + 1,), cdtype, zero=False)
    rows = _rows(y.shape)
    if rows:
        _dispatch.call(ops_fft_real.real, cdtype.name, n, rows, y._ptr, out._ptr, inverse=False, scale=scale,
                       conj=conjugate)
    return (moveaxis(out, -1, axis) if axis != x.ndim - 1 else out), None


def _irfft(x: GpuArray, n: int, axis: int, scale: float, conjugate: bool) -> tuple[GpuArray, _Step | None]:
    """The real inverse DFT of length ``n`` along ``axis`` of the Hermitian spectra whose first
    n // 2 + 1 values ``x`` (complex) holds (zero-padded or truncated to that), times ``scale``
    (of the unnormalized transform), ``x`` conjugated first with ``conjugate``; and its step
    where it ran on ``x`` itself (``_real_step``)."""
    m = n // 2 + 1
    if n % 2:
        half = resize_axis(x, m, axis)
        if conjugate:
            half = conj(half)
        tail = flip(conj(half[(slice(None),) * axis + (slice(1, m),)]), axis=axis)
        full = concat([half, tail], axis=axis) if m > 1 else half
        return part(c2c(full, axis, True, scale), 0), None
    step = _real_step(x, n, axis, scale, conjugate, True)
    if step is not None:
        return first_run(x, step)
    y = _last_contiguous(x, axis, m)
    out = GpuArray._empty(y.shape[:-1] + (n,), _args.real_dtype_of(x.dtype), zero=False)
    rows = _rows(y.shape)
    if rows:
        _dispatch.call(ops_fft_real.real, x.dtype.name, n, rows, y._ptr, out._ptr, inverse=True, scale=scale,
                       conj=conjugate)
    return (moveaxis(out, -1, axis) if axis != x.ndim - 1 else out), None


#: The steps kept of the calls seen that ran on their operand itself (``_kept_steps``).
_KEPT = KeptSteps()


def _forward(fn: str, x: Any, n: Any, axis: Any, norm: Any, swap: bool) -> GpuArray:
    """rfft (``swap`` False) and ihfft (``swap``: conjugated, the opposite normalisation)."""
    key = call_key(fn, x, n, axis, norm)
    out = _KEPT.replay(key, x)
    if out is not None:
        return out
    y = _args.real_input(x, fn)
    _args.check_norm(norm, fn)
    length, ax = _args.one_axis(y, n, axis, fn)
    out, step = _rfft(y, length, ax, _args.scale_factor(_SWAP[norm] if swap else norm, length, False), swap)
    if y is x:
        _KEPT.keep(key, [step])
    return out


def _backward(fn: str, x: Any, n: Any, axis: Any, norm: Any, swap: bool) -> GpuArray:
    """irfft (``swap`` False) and hfft (``swap``: conjugated first, the opposite normalisation)."""
    key = call_key(fn, x, n, axis, norm)
    out = _KEPT.replay(key, x)
    if out is not None:
        return out
    y = _args.complex_input(x, fn)
    _args.check_norm(norm, fn)
    length, ax = _args.one_axis(y, n, axis, fn, default_n=lambda m: 2 * (m - 1))
    out, step = _irfft(y, length, ax, _args.scale_factor(_SWAP[norm] if swap else norm, length, True), swap)
    if y is x:
        _KEPT.keep(key, [step])
    return out


def rfft(x: GpuArray, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> GpuArray:
    """The one-dimensional DFT of real input along ``axis``: the ``n // 2 + 1`` non-negative
    frequency terms (``n`` default: the input's length; shorter input is zero-padded, longer
    truncated), scaled per ``norm``. complex64 for float32 input, complex128 for float64.

    Raises ``TypeError`` for complex, integer, bool or non-array input, ``ValueError`` for
    ``n < 1`` or a bad ``norm``, ``AxisError`` for a bad ``axis``."""
    return _forward("rfft", x, n, axis, norm, False)


def irfft(x: GpuArray, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> GpuArray:
    """The inverse of :func:`rfft`: the real signal of length ``n`` (default ``2 * (m - 1)``
    for ``m`` input values along ``axis``) whose spectrum's first ``n // 2 + 1`` values are
    ``x`` (zero-padded or truncated to that), scaled per ``norm``. float32 for complex64,
    float64 for complex128 (real input is taken as complex, as NumPy does).

    Raises ``TypeError`` for integer, bool or non-array input, ``ValueError`` for ``n < 1``
    or a bad ``norm``, ``AxisError`` for a bad ``axis``."""
    return _backward("irfft", x, n, axis, norm, False)


def hfft(x: GpuArray, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> GpuArray:
    """The DFT of a signal with Hermitian symmetry given by its first half ``x``: the real
    spectrum of length ``n`` (default ``2 * (m - 1)``), i.e. ``irfft(conj(x))`` with the
    opposite normalisation. Errors as :func:`irfft`."""
    return _backward("hfft", x, n, axis, norm, True)


def ihfft(x: GpuArray, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> GpuArray:
    """The inverse of :func:`hfft`: ``conj(rfft(x))`` with the opposite normalisation, the
    ``n // 2 + 1`` values of a Hermitian spectrum. Errors as :func:`rfft`."""
    return _forward("ihfft", x, n, axis, norm, True)


def _c2c_axes(x: GpuArray, lengths: Sequence[int], axes: Sequence[int], norm: str, inverse: bool,
              steps: list[Any]) -> GpuArray:
    """Complex DFTs along ``axes`` in the order given, each after resizing to its length; the
    ``_c2c.Prepared`` of each that ran on its operand itself appended to ``steps`` (None for
    the others)."""
    if len(axes) > 1 and all(x.shape[ax] == length for length, ax in zip(lengths, axes)):
        whole = prepare_axes(x, [(ax, inverse, _args.scale_factor(norm, length, inverse))
                                 for length, ax in zip(lengths, axes)])
        if whole is not None:  # one program for every axis
            steps.append(whole)
            return run_prepared(x, whole)
    for length, ax in zip(lengths, axes):
        scale = _args.scale_factor(norm, length, inverse)
        prep = prepare(x, ax, inverse, scale) if x.shape[ax] == length else None
        steps.append(prep)
        x = run_prepared(x, prep) if prep is not None else c2c(resize_axis(x, length, ax), ax, inverse, scale)
    return x


def rfftn(x: GpuArray, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: Norm = "backward") -> GpuArray:
    """The n-dimensional DFT of real input over ``axes`` (default: all, or the last ``len(s)``),
    lengths ``s`` (default: the input's; ``-1``: the input's): :func:`rfft` along the last of
    ``axes`` (its length becomes ``s[-1] // 2 + 1``), then complex DFTs along the others.
    Errors as :func:`rfft`; ``ValueError`` when ``s`` and ``axes`` differ in length."""
    key = call_key("rfftn", x, sequence_key(s), sequence_key(axes), norm)
    out = _KEPT.replay(key, x)
    if out is not None:
        return out
    y = _args.real_input(x, "rfftn")
    _args.check_norm(norm, "rfftn")
    lengths, axes_list = _args.axes_and_lengths(y, s, axes, "rfftn")
    if not axes_list:
        return astype(y, _args.complex_dtype_of(y.dtype))
    last, ax = lengths[-1], axes_list[-1]
    out, step = _rfft(y, last, ax, _args.scale_factor(norm, last, False), False)
    steps = [step]
    out = _c2c_axes(out, lengths[-2::-1], axes_list[-2::-1], norm, False, steps)
    if y is x:
        _KEPT.keep(key, steps)
    return out


def irfftn(x: GpuArray, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: Norm = "backward") -> GpuArray:
    """The inverse of :func:`rfftn`: inverse complex DFTs along all but the last of ``axes``,
    then :func:`irfft` along the last (its length ``s[-1]``, default ``2 * (m - 1)``). Errors
    as :func:`irfft`; ``ValueError`` when ``s`` and ``axes`` differ in length."""
    key = call_key("irfftn", x, sequence_key(s), sequence_key(axes), norm)
    out = _KEPT.replay(key, x)
    if out is not None:
        return out
    y = _args.complex_input(x, "irfftn")
    _args.check_norm(norm, "irfftn")
    lengths, axes_list = _args.axes_and_lengths(y, s, axes, "irfftn", default_last=lambda m: 2 * (m - 1))
    if not axes_list:
        return part(y, 0)
    steps: list[Any] = []
    z = _c2c_axes(y, lengths[:-1], axes_list[:-1], norm, True, steps)
    last, ax = lengths[-1], axes_list[-1]
    out, step = _irfft(z, last, ax, _args.scale_factor(norm, last, True), False)
    steps.append(step)
    if y is x:
        _KEPT.keep(key, steps)
    return out
