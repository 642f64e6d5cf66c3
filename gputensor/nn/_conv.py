"""2-D convolution on arrays (torch.nn.functional.conv2d) on the backend's implicit-GEMM kernel.

The kernel (``_backend/ops_conv.py``) computes dense (groups 1, dilation 1) cross-correlations
with symmetric zero padding. The other cases are composed on the device around it:

* ``dilation`` > 1: the filter is spread into a zero filter of the dilated size (a strided
  device copy), which the kernel then runs densely;
* ``groups`` > 1: one kernel call per group on its channel slices (slices that are not
  contiguous, such as an input channel block of several images, are copied on the device; the
  group's output is written in place when its slice is contiguous);
* ``padding="same"`` with an odd total padding (even filter sizes): the larger side is padded on
  both sides and the extra leading output row / column dropped by a device copy;
* ``bias``: one fused elementwise add.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import _dispatch
from .._array_object import GpuArray
from .._backend import ops_conv
from .._elementwise_functions import add
from .._manipulation_functions import _view, expand_dims, reshape, squeeze
from .._shapes import is_contiguous
from ._common import common_float_dtype, contiguous, float_array, int_tuple

__all__ = ["conv2d"]


def _pairs(value: object, name: str, minimum: int) -> tuple[int, int]:
    pair = int_tuple(value, name, 2)
    if min(pair) < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value!r}")
    return pair  # type: ignore[return-value]


def _padding(padding: object, stride: tuple[int, int], extent: tuple[int, int]) -> tuple[tuple[int, int], tuple[int, int]]:
    """((top, left), (bottom, right)) padding from an int, a pair, "same" or "valid"."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0, 0), (0, 0)
        if padding == "same":
            if stride != (1, 1):
                raise ValueError("padding='same' is not supported for strided convolutions")
            lo = tuple(e // 2 for e in extent)
            hi = tuple(e - l for e, l in zip(extent, lo))
            return lo, hi  # type: ignore[return-value]
        raise ValueError(f"padding must be an int, a pair, 'same' or 'valid', not {padding!r}")
    pair = _pairs(padding, "padding", 0)
    return pair, pair


def _dense(x: GpuArray, w: GpuArray, out: GpuArray, stride: tuple[int, int], pad: tuple[int, int]) -> None:
    """``out = conv(x, w)`` on the kernel: contiguous NCHW ``x``, KCRS ``w`` and ``out`` (a view
    with a contiguous layout)."""
    _dispatch.call(ops_conv.conv2d_forward, x._ptr, x.shape, w._ptr, w.shape, out._ptr, out.shape,
                   stride, pad, dtype=out.dtype.name)


def _dilate(w: GpuArray, dilation: tuple[int, int]) -> GpuArray:
    """The filter ``w`` spread over a zero filter of the dilated size (device copy)."""
    k, c, r, s = w.shape
    dh, dw = dilation
    rr, ss = dh * (r - 1) + 1, dw * (s - 1) + 1
    spread = GpuArray._empty((k, c, rr, ss), w.dtype)  # zero-filled
    _dispatch.copy_into(_view(spread, (k, c, r, s), (c * rr * ss, rr * ss, dh * ss, dw)), w)
    return spread


def _grouped(x: GpuArray, w: GpuArray, out: GpuArray, groups: int, stride: tuple[int, int],
             pad: tuple[int, int]) -> None:
    """``out = conv(x, w)`` with ``groups`` groups (contiguous operands)."""
    if groups == 1:
        _dense(x, w, out, stride, pad)
        return
    n, c, h, wd = x.shape
    k = w.shape[0]
    cg, kg = c // groups, k // groups
    _, _, oh, ow = out.shape
    for g in range(groups):
        xg = contiguous(_view(x, (n, cg, h, wd), x._strides, g * cg * h * wd))
        wg = _view(w, (kg,) + w.shape[1:], w._strides, g * kg * w._strides[0])
        og = _view(out, (n, kg, oh, ow), out._strides, g * kg * oh * ow)
        if is_contiguous(og.shape, og._strides):
            _dense(xg, wg, og, stride, pad)
        else:
            tmp = GpuArray._empty(og.shape, out.dtype, zero=False)
            _dense(xg, wg, tmp, stride, pad)
            _dispatch.copy_into(og, tmp)


def conv2d(x: GpuArray, weight: GpuArray, bias: GpuArray | None = None, *,
           stride: int | Sequence[int] = 1, padding: int | Sequence[int] | str = 0,
           dilation: int | Sequence[int] = 1, groups: int = 1) -> GpuArray:
    """2-D cross-correlation of NCHW ``x`` (or unbatched CHW) with ``weight`` of shape
    ``(K, C / groups, R, S)``, plus ``bias`` of shape ``(K,)``: torch.nn.functional.conv2d.

    ``stride`` and ``dilation`` are ints or pairs (>= 1); ``padding`` an int or pair (>= 0) of
    zero padding on both sides, ``"valid"`` (none) or ``"same"`` (output size = input size;
    stride 1 only; an odd total puts the extra row / column at the end, as torch does).
    Returns a new array of shape ``(N, K, Oh, Ow)``, ``Oh = (H + 2 ph - dh (R - 1) - 1) // sh + 1``,
    of the operands' promoted dtype.

    Raises ``TypeError`` for non-arrays, non-floating dtypes, non-integer sizes or float16
    without the adapter's ``shader-f16``; ``ValueError`` for wrong ranks, channels that do not
    match ``groups``, a bias of the wrong shape, out-of-range stride / padding / dilation, a
    filter larger than the padded input, or ``"same"`` with a stride.
    """
    x = float_array(x, "x")
    weight = float_array(weight, "weight")
    if bias is not None:
        bias = float_array(bias, "bias")
    if x.ndim == 3:
        out = conv2d(expand_dims(x, 0), weight, bias, stride=stride, padding=padding, dilation=dilation,
                     groups=groups)
        return squeeze(out, 0)
    if x.ndim != 4:
        raise ValueError(f"conv2d expects a 3-D (CHW) or 4-D (NCHW) input, got shape {x.shape}")
    if weight.ndim != 4:
        raise ValueError(f"conv2d expects a 4-D (K, C/groups, R, S) weight, got shape {weight.shape}")
    if isinstance(groups, bool) or not isinstance(groups, int):
        raise TypeError(f"groups must be an integer, not {type(groups).__name__}")
    if groups < 1:
        raise ValueError(f"groups must be positive, got {groups}")
    n, c, h, w = x.shape
    k, cg, r, s = weight.shape
    if c % groups or k % groups or cg * groups != c:
        raise ValueError(f"input channels {c} and weight {weight.shape} do not fit groups={groups}")
    if bias is not None and bias.shape != (k,):
        raise ValueError(f"bias must have shape ({k},), got {bias.shape}")
    stride_ = _pairs(stride, "stride", 1)
    dilation_ = _pairs(dilation, "dilation", 1)
    extent = (dilation_[0] * (r - 1), dilation_[1] * (s - 1))
    lo, hi = _padding(padding, stride_, extent)
    oh = (h + lo[0] + hi[0] - extent[0] - 1) // stride_[0] + 1
    ow = (w + lo[1] + hi[1] - extent[1] - 1) // stride_[1] + 1
    if r == 0 or s == 0 or oh < 1 or ow < 1:
        raise ValueError(f"filter {r}x{s} (dilation {dilation_}) is larger than the padded input "
                         f"{h + lo[0] + hi[0]}x{w + lo[1] + hi[1]}")
    dtype = common_float_dtype(x, weight, bias)
    out = GpuArray._empty((n, k, oh, ow), dtype, zero=c == 0)  # the kernel writes every element
    if out.size == 0:
        return out
    if c:
        x = contiguous(x, dtype)
        wt = contiguous(weight, dtype)
        if dilation_ != (1, 1):
            wt = _dilate(wt, dilation_)
        if lo == hi:
            _grouped(x, wt, out, groups, stride_, lo)
        else:
            eh, ew = hi[0] - lo[0], hi[1] - lo[1]
            full = GpuArray._empty((n, k, oh + eh, ow + ew), dtype, zero=False)
            _grouped(x, wt, full, groups, stride_, hi)
            _dispatch.copy_into(out, _view(full, out.shape, full._strides,
                                           eh * full._strides[2] + ew * full._strides[3]))
    if bias is None:
        return out
    return add(out, reshape(contiguous(bias, dtype), (k, 1, 1)))
