"""The complex-to-complex transform along one axis, and resizing an axis, on the device.

:func:`c2c` is the building block of every transform of ``gputensor.fft``: the unnormalised DFT
(times ``scale``) of a complex64/complex128 array along one axis, read through the input's
strides and offset (no transposed copy), written to a new C-contiguous array
(``_backend/ops_fft.py``: Stockham passes in workgroup memory, four-step decompositions of long
lengths, Bluestein's chirp-z for lengths with a prime factor above 7). :func:`resize_axis`
truncates (a view) or zero-pads (a new array) along one axis.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .._array_object import GpuArray
from .._creation_functions import zeros
from .._dispatch import copy_into
from .._dtypes import complex64, complex128, float32, float64
from .._kept import KeptCall
from .._manipulation_functions import _copy_contiguous
from .._runtime import call
from .._shapes import contiguous_strides
from .._backend import ops_fft

__all__ = ["Prepared", "PreparedAxes", "c2c", "kept", "prepare", "prepare_axes", "resize_axis", "run_prepared"]


class Prepared(NamedTuple):
    """The arguments of ``ops_fft.c2c`` that depend only on the structure of a call (operand
    shape, strides and dtype, axis, direction, scale, results kept): made once by
    :func:`prepare`. ``shape``: the result's."""

    shape: tuple[int, ...]
    dtype: Any
    n: int
    axis: int
    src_axis: int
    out_axis: int
    batch: tuple[int, ...]
    src_strides: tuple[int, ...]
    dst_strides: tuple[int, ...]
    inverse: bool
    scale: float
    real_src: bool
    keep: int

    def run(self, x: GpuArray) -> GpuArray:
        """``c2c`` of ``x`` (of the structure this was made for): :func:`run_prepared`."""
        return run_prepared(x, self)

    def kept(self) -> KeptCall:
        """The :class:`KeptCall` of this transform (:func:`kept`)."""
        return kept(self)


#: The complex dtype of the result for each operand dtype (real operands: read as complex).
_OUT_DTYPE = {complex64: complex64, complex128: complex128, float32: complex64, float64: complex128}


def prepare(x: GpuArray, axis: int, inverse: bool, scale: float = 1.0, keep: int = 0) -> Prepared | None:
    """The :class:`Prepared` arguments of ``c2c(x, axis, inverse, scale, keep)``; None where
    the call takes a contiguous copy first (batch dims that do not merge) or ``x`` is empty.
    ``TypeError`` as :func:`c2c`."""
    dtype = _OUT_DTYPE.get(x.dtype)
    if dtype is None:
        raise TypeError(f"c2c: expected a complex or real floating array, not {x.dtype}")
    shape = x.shape
    if x.size == 0:
        return None
    n = shape[axis]
    keep = keep if 0 < keep < n else 0
    if keep:
        shape = shape[:axis] + (keep,) + shape[axis + 1:]
    out_strides = contiguous_strides(shape)
    batch = shape[:axis] + shape[axis + 1:]
    dst_strides = out_strides[:axis] + out_strides[axis + 1:]
    src_strides = x._strides[:axis] + x._strides[axis + 1:]
    if (len(batch) > ops_fft.MAX_BATCH_DIMS - 2
            and len(ops_fft.merge_batch(batch, src_strides, dst_strides)[0]) > ops_fft.MAX_BATCH_DIMS - 2):
        return None
    return Prepared(shape, dtype, n, axis, x._strides[axis], out_strides[axis], batch, src_strides,
                    dst_strides, bool(inverse), float(scale), dtype != x.dtype, keep)


class PreparedAxes(NamedTuple):
    """The arguments of ``ops_fft.c2c_axes`` for one call structure: the DFTs along several
    axes in one planned program (made by :func:`prepare_axes`)."""

    shape: tuple[int, ...]
    dtype: Any
    src_strides: tuple[int, ...]
    steps: tuple[tuple[int, bool, float], ...]
    real_src: bool

    def run(self, x: GpuArray) -> GpuArray:
        """The DFTs of ``x`` (of the structure this was made for): :func:`run_prepared`."""
        return run_prepared(x, self)

    def kept(self) -> KeptCall:
        """The :class:`KeptCall` of these transforms (:func:`kept`)."""
        return kept(self)


def prepare_axes(x: GpuArray, steps: list[tuple[int, bool, float]]) -> PreparedAxes | None:
    """The :class:`PreparedAxes` of the DFTs ``steps`` = [(axis, inverse, scale), ...] (in
    order, non-negative axes) of ``x``; None where one program does not take them
    (``ops_fft.fits_axes``: an empty ``x``, batch dims that do not merge). ``TypeError`` as
    :func:`c2c`."""
    dtype = _OUT_DTYPE.get(x.dtype)
    if dtype is None:
        raise TypeError(f"c2c: expected a complex or real floating array, not {x.dtype}")
    if not ops_fft.fits_axes(x.shape, x._strides, [a for a, _, _ in steps]):
        return None
    return PreparedAxes(x.shape, dtype, x._strides, tuple((a, bool(i), float(c)) for a, i, c in steps),
                        dtype != x.dtype)


def run_prepared(x: GpuArray, prep: Prepared | PreparedAxes) -> GpuArray:
    """``c2c`` of ``x`` (whose shape, strides and dtype are those ``prep`` was made for), or
    the DFTs of a :class:`PreparedAxes`."""
    if type(prep) is PreparedAxes:
        out = GpuArray._empty(prep.shape, prep.dtype, zero=False)
        call(ops_fft.c2c_axes, prep.dtype.name, prep.shape, x._ptr, prep.src_strides, out._ptr, prep.steps,
             prep.real_src)
        return out
    out = GpuArray._empty(prep.shape, prep.dtype, zero=False)
    call(ops_fft.c2c, prep.dtype.name, prep.n, x._ptr, prep.src_axis, out._ptr, prep.out_axis,
         prep.batch, prep.src_strides, prep.dst_strides, inverse=prep.inverse, scale=prep.scale,
         real_src=prep.real_src, keep=prep.keep)
    return out


def kept(prep: Prepared | PreparedAxes) -> KeptCall:
    """The :class:`KeptCall` of a prepared transform: its result's layout (C-contiguous) and
    the backend's kept plan (``ops_fft.planned_c2c`` / ``planned_axes``), made now where the
    backend has none; ``replay(x._ptr)`` then records the transform of an operand of the
    structure ``prep`` was made for. Raises what planning raises (``TypeError`` for complex128
    without ``shader-f64``)."""
    if type(prep) is PreparedAxes:
        plan = call(ops_fft.planned_axes, prep.dtype.name, prep.shape, prep.src_strides, prep.steps, prep.real_src)
    else:
        plan = call(ops_fft.planned_c2c, prep.dtype.name, prep.n, prep.src_axis, prep.out_axis, prep.batch,
                    prep.src_strides, prep.dst_strides, inverse=prep.inverse, scale=prep.scale,
                    real_src=prep.real_src, keep=prep.keep)
    return KeptCall(prep.shape, contiguous_strides(prep.shape), prep.dtype, call=plan)


def c2c(x: GpuArray, axis: int, inverse: bool, scale: float = 1.0, keep: int = 0) -> GpuArray:
    """``scale`` times the DFT of ``x`` along ``axis`` (a non-negative axis of ``x``): sign -1
    (``inverse=False``) or +1, length ``x.shape[axis]``, unnormalised; with ``keep`` (0 < keep
    < that length) only its first ``keep`` values along ``axis``. A new C-contiguous array of
    ``x``'s shape (``keep`` along ``axis``) and complex dtype (float32 input, read as complex on
    the device: complex64; float64: complex128). ``TypeError`` unless ``x`` is complex64,
    complex128, float32 or float64 (the 64-bit ones need ``shader-f64``); ``ValueError`` for a
    zero-length axis with other elements present is the caller's to raise (an empty ``x`` gives
    an empty result)."""
    prep = prepare(x, axis, inverse, scale, keep)
    if prep is None:
        if x.size == 0:
            shape = x.shape if not 0 < keep < x.shape[axis] else x.shape[:axis] + (keep,) + x.shape[axis + 1:]
            return GpuArray._empty(shape, _OUT_DTYPE[x.dtype], zero=False)
        x = _copy_contiguous(x)  # (batch dims that do not merge: rare high-rank strided views)
        prep = prepare(x, axis, inverse, scale, keep)
    return run_prepared(x, prep)


def resize_axis(x: GpuArray, n: int, axis: int) -> GpuArray:
    """``x`` with length ``n`` along ``axis`` (non-negative): ``x`` itself when it has that
    length, its first ``n`` entries (a view) when longer, else a new array zero-padded at the
    end."""
    size = x.shape[axis]
    if n == size:
        return x
    index = (slice(None),) * axis
    if n < size:
        return x[index + (slice(0, n),)]
    out = zeros(x.shape[:axis] + (n,) + x.shape[axis + 1:], dtype=x.dtype)
    if x.size:
        copy_into(out[index + (slice(0, size),)], x)
    return out
