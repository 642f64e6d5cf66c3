"""The helper functions of ``gputensor.fft``: ``fftfreq``, ``rfftfreq`` (the sample
frequencies, written by a device kernel: ``_backend/ops_fft_real.frequencies``) and
``fftshift``, ``ifftshift`` (a device ``roll`` by half of each axis; no host round trip).
"""

from __future__ import annotations

import numbers
import operator
from collections.abc import Callable, Sequence

from .. import _dispatch
from .._array_object import GpuArray
from .._backend import ops_fft_real
from .._data_type_functions import astype
from .._devices import check_device
from .._dtypes import DType, float16, float32, float64
from .._manipulation_functions import roll
from .._shapes import normalize_axis
from . import _args

__all__ = ["fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_REAL_FLOATING = (float16, float32, float64)


def _frequencies(fn: str, n: int, d: float, dtype: DType | None, device: object,
                 count_of: Callable[[int], int], cut_of: Callable[[int], int]) -> GpuArray:
    """``count_of(n)`` frequencies ``i / (n d)``, negative from ``cut_of(n)`` on (the kernel's
    ``cut``), of ``dtype``; the argument checks of fftfreq / rfftfreq."""
    dev = check_device(device)
    if isinstance(n, bool):
        raise TypeError(f"{fn}: n must be an integer, not bool")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"{fn}: n must be an integer, not {type(n).__name__}") from None
    if n < 1:
        raise ValueError(f"{fn}: n must be at least 1, got {n}")
    if isinstance(d, bool) or not isinstance(d, numbers.Real):
        raise TypeError(f"{fn}: d must be a real number, not {type(d).__name__}")
    if dtype is None:
        dtype = dev.default_dtypes()["real floating"]
    elif dtype not in _REAL_FLOATING:
        raise ValueError(f"{fn}: dtype must be a real floating-point dtype, not {dtype}")
    compute = float32 if dtype == float16 else dtype
    count = count_of(n)
    out = GpuArray._empty((count,), compute, zero=False)
    scale = 1.0 / (n * float(d))  # ZeroDivisionError for d == 0, as NumPy
    _dispatch.call(ops_fft_real.frequencies, compute.name, count, n, cut_of(n), scale, out._ptr)
    return out if compute == dtype else astype(out, dtype)


def fftfreq(n: int, /, *, d: float = 1.0, dtype: DType | None = None, device: object = None) -> GpuArray:
    """The sample frequencies of a DFT of length ``n`` with sample spacing ``d``:
    ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)``, of ``dtype`` (default: the
    default real floating dtype) on ``device``.

    Raises ``ValueError`` for ``n < 1``, a non-real-floating ``dtype`` or an unknown device,
    ``TypeError`` for a non-integer ``n``."""
    return _frequencies("fftfreq", n, d, dtype, device, lambda m: m, lambda m: (m + 1) // 2)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: DType | None = None, device: object = None) -> GpuArray:
    """The sample frequencies of :func:`rfft` of length ``n``: ``[0, 1, ..., n // 2] / (d * n)``
    (``n // 2 + 1`` values). Errors as :func:`fftfreq`."""
    return _frequencies("rfftfreq", n, d, dtype, device, lambda m: m // 2 + 1, lambda m: m // 2 + 1)


def _shift(fn: str, x: GpuArray, axes: int | Sequence[int] | None, sign: int) -> GpuArray:
    _args.check_array(x, fn)
    if x.dtype.kind not in "fc":
        raise TypeError(f"{fn}: only floating-point dtypes are allowed, not {x.dtype}")
    if axes is None:
        axes_list = list(range(x.ndim))
    elif isinstance(axes, Sequence) and not isinstance(axes, (str, bytes)):
        axes_list = [normalize_axis(a, x.ndim) for a in axes]
    else:
        axes_list = [normalize_axis(axes, x.ndim)]
    if not axes_list or x.ndim == 0:
        return roll(x, 0, axis=0) if x.ndim else x
    shifts = tuple(sign * (x.shape[a] // 2) for a in axes_list)
    return roll(x, shifts, axis=tuple(axes_list))


def fftshift(x: GpuArray, /, *, axes: int | Sequence[int] | None = None) -> GpuArray:
    """``x`` with the zero-frequency term moved to the centre along ``axes`` (default: all):
    a roll by ``size // 2`` along each. Raises ``TypeError`` for non-floating input,
    ``AxisError`` for bad axes."""
    return _shift("fftshift", x, axes, 1)


def ifftshift(x: GpuArray, /, *, axes: int | Sequence[int] | None = None) -> GpuArray:
    """The inverse of :func:`fftshift`: a roll by ``-(size // 2)`` along each of ``axes``.
    Errors as :func:`fftshift`."""
    return _shift("ifftshift", x, axes, -1)
