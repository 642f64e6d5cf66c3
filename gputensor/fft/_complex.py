"""The complex transforms of the fft extension: ``fft``, ``ifft``, ``fftn``, ``ifftn``.

Each is argument checking (``_args``), resizing the transformed axes to the requested lengths
(``_c2c.resize_axis``) and one ``_c2c.c2c`` per axis (the n-D transforms: the last axis given
first, as NumPy; one program for all of them where their batch dims merge), every one on the
device; a call that ran on its operand itself is kept and replayed (``_kept_steps``). Real
floating input is transformed as complex (as in NumPy and CuPy), read as complex values by the
first transform's kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from .._array_object import GpuArray
from .._data_type_functions import astype
from .._manipulation_functions import _copy_contiguous
from ._args import axes_and_lengths, check_norm, complex_dtype_of, one_axis, scale_factor, transform_input
from ._c2c import Prepared, PreparedAxes, c2c, prepare, prepare_axes, resize_axis, run_prepared
from ._kept_steps import KeptSteps, call_key, first_run, sequence_key

__all__ = ["fft", "ifft", "fftn", "ifftn"]

Norm = Literal["backward", "ortho", "forward"]


#: The steps kept of the calls seen that ran on their operand itself (``_kept_steps``).
_KEPT = KeptSteps()


def _keep_and_run(key: tuple[Any, ...] | None, prep: Prepared | PreparedAxes, x: GpuArray) -> GpuArray:
    """The result of ``prep`` on ``x``, its ``KeptCall`` kept under ``key``."""
    out, step = first_run(x, prep)
    _KEPT.keep(key, [step])
    return out


def _one(x: Any, n: Any, axis: Any, norm: Any, inverse: bool, fn: str) -> GpuArray:
    key = call_key(fn, x, n, axis, norm)
    out = _KEPT.replay(key, x)
    if out is not None:
        return out
    x = transform_input(x, fn)
    norm = check_norm(norm, fn)
    length, ax = one_axis(x, n, axis, fn)
    scale = scale_factor(norm, length, inverse)
    y = resize_axis(x, length, ax)
    if key is not None and length <= x.shape[ax] and x.dtype == key[4]:
        # (no conversion, no padding: ``y`` is ``x`` or a view of it at its pointer, kept for ``x``)
        prep = prepare(y, ax, inverse, scale)
        if prep is not None:
            return _keep_and_run(key, prep, y)
    return c2c(y, ax, inverse, scale)


def _many(x: Any, s: Any, axes: Any, norm: Any, inverse: bool, fn: str) -> GpuArray:
    key = call_key(fn, x, sequence_key(s), sequence_key(axes), norm)
    out = _KEPT.replay(key, x)
    if out is not None:
        return out
    x = transform_input(x, fn)
    norm = check_norm(norm, fn)
    lengths, axes_list = axes_and_lengths(x, s, axes, fn)
    if not axes_list:
        return _copy_contiguous(x) if x.dtype.kind == "c" else astype(x, complex_dtype_of(x.dtype))
    cache = key is not None and x.dtype == key[4] and all(v == x.shape[a] for v, a in zip(lengths, axes_list))
    if cache and len(axes_list) > 1:
        whole = prepare_axes(x, [(ax, inverse, scale_factor(norm, length, inverse))
                                 for length, ax in reversed(list(zip(lengths, axes_list)))])
        if whole is not None:
            return _keep_and_run(key, whole, x)
    if cache and len(axes_list) == 1:
        prep = prepare(x, axes_list[0], inverse, scale_factor(norm, lengths[0], inverse))
        if prep is not None:
            return _keep_and_run(key, prep, x)
    prepared = []
    for length, ax in reversed(list(zip(lengths, axes_list))):
        scale = scale_factor(norm, length, inverse)
        prep = prepare(x, ax, inverse, scale) if cache else None
        if prep is None:
            cache = False
            x = c2c(resize_axis(x, length, ax), ax, inverse, scale)
        else:
            prepared.append(prep)
            x = run_prepared(x, prep)
    if cache:
        _KEPT.keep(key, prepared)
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
