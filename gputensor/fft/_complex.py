"""The complex transforms of the fft extension: ``fft``, ``ifft``, ``fftn``, ``ifftn``.

Each is argument checking (``_args``), resizing the transformed axes to the requested lengths
(``_c2c.resize_axis``) and one ``_c2c.c2c`` per axis (the n-D transforms: the last axis given
first, as NumPy), every one on the device. Real floating input is transformed as complex (as in
NumPy and CuPy), read as complex values by the first transform's kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from .._array_object import GpuArray
from .._data_type_functions import astype
from .._kept import KeptCall
from .._manipulation_functions import _copy_contiguous
from ._args import axes_and_lengths, check_norm, complex_dtype_of, one_axis, scale_factor, transform_input
from ._c2c import Prepared, PreparedAxes, c2c, kept, prepare, prepare_axes, resize_axis, run_prepared

__all__ = ["fft", "ifft", "fftn", "ifftn"]

Norm = Literal["backward", "ortho", "forward"]


#: The kept transforms of the calls seen that ran on their operand itself, by call structure
#: (``_one``: the operand's shape, strides and dtype, the other arguments with their types: True
#: and 1 are equal keys, and bool is refused; ``_many`` likewise): a ``KeptCall`` (one backend
#: program) or a tuple of ``_c2c.Prepared`` run in turn.
_KEPT: dict[tuple[Any, ...], Any] = {}
_KEPT_SIZE = 256


def _replay(key: tuple[Any, ...], x: GpuArray) -> GpuArray | None:
    """The result of the kept call of ``key`` on ``x``; None when there is none or it no
    longer holds."""
    try:
        kept = _KEPT.get(key)
    except TypeError:  # an unhashable argument: refused by the checks
        return None
    if kept is None:
        return None
    if type(kept) is KeptCall:
        return kept.replay(x._ptr)
    for prep in kept:
        x = run_prepared(x, prep)
    return x


def _keep_and_run(key: tuple[Any, ...], prep: Prepared | PreparedAxes, x: GpuArray) -> GpuArray:
    """Keep the ``KeptCall`` of ``prep`` under ``key`` and return its result on ``x``."""
    call = kept(prep)
    out = call.replay(x._ptr)
    if out is None:  # (not reached: a fresh plan holds)
        return run_prepared(x, prep)
    if len(_KEPT) >= _KEPT_SIZE:
        _KEPT.clear()
    _KEPT[key] = call
    return out


def _one(x: Any, n: Any, axis: Any, norm: Any, inverse: bool, fn: str) -> GpuArray:
    if isinstance(x, GpuArray):
        # (the argument types are in the key: True and 1 are equal keys, and bool is refused)
        key = (x._shape, x._strides, x._dtype, n, type(n), axis, type(axis), norm, inverse)
        out = _replay(key, x)
        if out is not None:
            return out
    else:
        key = None
    x = transform_input(x, fn)
    norm = check_norm(norm, fn)
    length, ax = one_axis(x, n, axis, fn)
    scale = scale_factor(norm, length, inverse)
    y = resize_axis(x, length, ax)
    if key is not None and length <= x.shape[ax] and x.dtype == key[2]:
        # (no conversion, no padding: ``y`` is ``x`` or a view of it at its pointer, kept for ``x``)
        prep = prepare(y, ax, inverse, scale)
        if prep is not None:
            return _keep_and_run(key, prep, y)
    return c2c(y, ax, inverse, scale)


def _sequence_key(values: Any) -> Any:
    """A hashable key of ``s`` / ``axes`` with the types of the entries (None: not cacheable)."""
    if values is None:
        return ()
    if type(values) is tuple or type(values) is list:
        return (type(values), tuple(values), tuple(map(type, values)))
    return None


def _many(x: Any, s: Any, axes: Any, norm: Any, inverse: bool, fn: str) -> GpuArray:
    key = None
    if isinstance(x, GpuArray):
        s_key, axes_key = _sequence_key(s), _sequence_key(axes)
        if s_key is not None and axes_key is not None:
            key = ("n", x._shape, x._strides, x._dtype, s is None, s_key, axes is None, axes_key, norm, inverse)
            out = _replay(key, x)
            if out is not None:
                return out
    x = transform_input(x, fn)
    norm = check_norm(norm, fn)
    lengths, axes_list = axes_and_lengths(x, s, axes, fn)
    if not axes_list:
        return _copy_contiguous(x) if x.dtype.kind == "c" else astype(x, complex_dtype_of(x.dtype))
    cache = key is not None and x.dtype == key[3] and all(v == x.shape[a] for v, a in zip(lengths, axes_list))
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
        if len(_KEPT) >= _KEPT_SIZE:
            _KEPT.clear()
        _KEPT[key] = tuple(prepared)
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
