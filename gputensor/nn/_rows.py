"""Fused row operations on arrays: softmax, log_softmax, logsumexp, layer_norm, rms_norm.

Each runs as one kernel (``_backend/ops_rows.py``) over the rows of its input: a strided row
view of the array (any axis, any strides), so no transposed copy is made; the output is a new
C-contiguous array. Statistics accumulate in float32 for float16 and float32 inputs, in float64
for float64 (where the adapter has ``shader-f64``).

A call structure (the op, x's shape, strides and dtype, the op's arguments but eps, the
parameters' shapes, strides and dtypes) is checked once; from its second call on, one dict
lookup finds the kept call (``_KEPT``), which allocates the output and replays the backend's
kept launch (``ops_rows.RowCall``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from .. import _dispatch
from .._array_object import GpuArray
from .._backend import ops_rows
from .._backend.plan_cache import PlanCache
from .._creation_functions import full
from .._dtypes import DType
from .._elementwise_functions import abs as abs_
from .._elementwise_functions import add, exp, less, log, subtract
from .._manipulation_functions import _copy_contiguous, reshape
from .._runtime import translate as _translate
from .._searching_functions import where
from .._shapes import contiguous_strides, merge_dims, normalize_axis
from .._statistical_functions import max as max_
from .._statistical_functions import sum as sum_
from ._common import as_dtype, common_float_dtype, contiguous, float_array, int_tuple, real_number

__all__ = ["layer_norm", "log_softmax", "logsumexp", "rms_norm", "softmax"]


def _layout(x: GpuArray, y_strides: Sequence[int], row_axes: Sequence[int]) -> tuple | None:
    """:func:`_row_view`, cached by the shape, strides and axes."""
    key = (x.shape, x._strides, tuple(y_strides), tuple(row_axes))
    layout = _LAYOUTS.get(key, False)
    if layout is False:
        layout = _row_view(x, y_strides, row_axes)
        if len(_LAYOUTS) >= 1024:
            _LAYOUTS.clear()
        _LAYOUTS[key] = layout
    return layout


#: (shape, strides, output strides, row axes) -> the row view (or None).
_LAYOUTS: dict[tuple, tuple | None] = {}


def _row_view(x: GpuArray, y_strides: Sequence[int], row_axes: Sequence[int]) -> tuple | None:
    """The row view of ``x`` (and of the output with element strides ``y_strides`` per dim of
    ``x``) whose rows run over ``row_axes``: (row dims, x and y strides of the row dims, n,
    x step, y step), or None when the row axes do not form one strided run or the other dims
    do not merge into at most 4."""
    shape = x.shape
    n = math.prod(shape[d] for d in row_axes)
    x_step = y_step = 1
    if n > 1:
        rshape, (xs, ys) = merge_dims([shape[d] for d in row_axes], [x._strides[d] for d in row_axes],
                                      [y_strides[d] for d in row_axes])
        if len(rshape) != 1:
            return None
        x_step, y_step = xs[0], ys[0]
    outer = [d for d in range(x.ndim) if d not in row_axes]
    oshape, (oxs, oys) = merge_dims([shape[d] for d in outer], [x._strides[d] for d in outer],
                                    [y_strides[d] for d in outer])
    if len(oshape) > ops_rows.MAX_ROW_DIMS:
        return None
    return tuple(oshape), tuple(oxs), tuple(oys), n, x_step, y_step


def _run_rows(op: str, x: GpuArray, row_axes: Sequence[int], out: GpuArray, y_strides: Sequence[int], *,
              weight: GpuArray | None = None, bias: GpuArray | None = None, eps: float = 0.0) -> tuple | None:
    """Record ``out = op(x)`` over the rows of ``x`` along ``row_axes`` (non-empty problem);
    returns the row view of ``x`` it used, None when ``x`` was copied first."""
    layout = _layout(x, y_strides, row_axes)
    used = layout
    if layout is None:
        x = _copy_contiguous(x)
        layout = _layout(x, y_strides, row_axes)
        assert layout is not None
    _record(op, x, layout, out, weight, bias, eps)
    return used


class _Kept(NamedTuple):
    """A row call kept for replay: its op, the output's shape, strides, dtype and bytes, the row
    view of x (``_row_view``) and the backend's kept launch (``ops_rows.RowCall``)."""

    op: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: DType
    nbytes: int
    layout: tuple
    call: ops_rows.RowCall


#: Per backend: call structure (the op, x's shape, strides and dtype, the op's own arguments but
#: eps, the weight's and bias's shapes, strides and dtypes) -> its ``_Kept`` call.
_KEPT = PlanCache(1024)


def _replayed(key: tuple, x: GpuArray, weight: GpuArray | None = None, bias: GpuArray | None = None,
              eps: float = 0.0) -> GpuArray | None:
    """The call kept under ``key`` for the current backend (still valid for its context and the
    row knobs) on new operands of its structure: a new output and the backend's launch
    replayed (the pointers checked there); None when no such call is kept."""
    backend = _dispatch.backend()
    kept = _KEPT.of(backend).get(key)
    if kept is None:
        return None
    call = kept.call
    settings = ops_rows.settings()
    if call.ctx is not backend._ctx or (call.settings is not settings and call.settings != settings):
        return None
    out = GpuArray._alloc(kept.shape, kept.strides, kept.dtype, kept.nbytes, False)
    try:
        if not call.launch(backend, x._ptr, out._storage.ptr, None if weight is None else weight._ptr,
                           None if bias is None else bias._ptr, eps):
            _record(kept.op, x, kept.layout, out, weight, bias, eps)  # (the float16 scratch route)
    except Exception as exc:
        raise _translate(exc) from None
    return out


def _keep(key: tuple, op: str, x: GpuArray, layout: tuple | None, out: GpuArray, has_w: bool = False,
          has_b: bool = False) -> None:
    """Keep the call of ``key`` that just recorded ``out = op(x)`` over the row view ``layout``
    of ``x`` (None: x was copied first; such calls are not kept)."""
    if layout is None:
        return
    row_shape, xs, ys, n, x_step, y_step = layout
    backend = _dispatch.backend()
    call = _dispatch.call(ops_rows.planned_call, op, x._dtype.name, out._dtype.name, row_shape, xs, n, x_step,
                          ys, y_step, has_w, has_b)
    _KEPT.keep(_KEPT.of(backend), key, _Kept(op, out._shape, out._strides, out._dtype,
                                             out.size * out._dtype.itemsize, layout, call))


def _record(op: str, x: GpuArray, layout: tuple, out: GpuArray, weight: GpuArray | None = None,
            bias: GpuArray | None = None, eps: float = 0.0) -> None:
    """Record the row kernel of ``op`` over the row view ``layout`` of ``x`` into ``out``."""
    row_shape, xs, ys, n, x_step, y_step = layout
    _dispatch.call(ops_rows.row_op, op, x._ptr, x._dtype.name, row_shape, xs, n, x_step, out._ptr,
                   out._dtype.name, ys, y_step,
                   weight=None if weight is None else weight._ptr,
                   bias=None if bias is None else bias._ptr, eps=eps)


def _along_axis(op: str, x: object, axis: int) -> GpuArray:
    key = None
    if type(x) is GpuArray and type(axis) is int:
        key = (op, x._shape, x._strides, x._dtype.name, axis)
        out = _replayed(key, x)
        if out is not None:
            return out
    x = float_array(x, "x")
    if x.ndim == 0:
        return reshape(_along_axis(op, reshape(x, (1,)), axis), ())
    ax = normalize_axis(axis, x.ndim)
    out = GpuArray._empty(x.shape, x.dtype, zero=False)
    if out.size:
        layout = _run_rows(op, x, (ax,), out, out._strides)
        if key is not None:
            _keep(key, op, x, layout, out)
    return out


def softmax(x: GpuArray, /, axis: int = -1) -> GpuArray:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis`` (torch.softmax, scipy.special.softmax),
    in one pass over each row. Rows holding +inf or only -inf give NaN, as in torch. A 0-d
    array is one row of one element. Returns a new array of ``x``'s shape and dtype.

    Raises ``TypeError`` for a non-array or a non-floating dtype, ``AxisError`` (a ValueError and
    IndexError) for an axis out of range.
    """
    return _along_axis("softmax", x, axis)


def log_softmax(x: GpuArray, /, axis: int = -1) -> GpuArray:
    """``x - max - log(sum(exp(x - max)))`` along ``axis`` (torch.log_softmax), in one pass over
    each row. Errors as :func:`softmax`."""
    return _along_axis("log_softmax", x, axis)


def logsumexp(x: GpuArray, /, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> GpuArray:
    """``log(sum(exp(x)))`` over ``axis`` (an int, a tuple of ints or None for all), computed as
    ``m + log(sum(exp(x - m)))`` with the finite max ``m`` (scipy.special.logsumexp,
    torch.logsumexp): +inf where an element is +inf, -inf for rows of -inf and for empty
    reductions. One axis runs on the row kernel; several axes on a max and a fused sum
    reduction. ``keepdims`` keeps the reduced axes as size 1.

    Raises ``TypeError`` for a non-array or a non-floating dtype, ``AxisError`` for an axis out
    of range, ``ValueError`` for repeated axes.
    """
    key = None
    if type(x) is GpuArray and type(axis) is int and type(keepdims) is bool:
        key = ("logsumexp", x._shape, x._strides, x._dtype.name, axis, keepdims)
        out = _replayed(key, x)
        if out is not None:
            return out
    x = float_array(x, "x")
    if x.ndim == 0:
        if axis not in (None, (), 0, -1):
            normalize_axis(axis if isinstance(axis, int) else 1, 0)  # AxisError
        return _copy_contiguous(x)
    if axis is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axis, (tuple, list)):
        axes = tuple(normalize_axis(int_tuple(a, "axis")[0], x.ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"repeated axis in {tuple(axis)}")
    else:
        axes = (normalize_axis(int_tuple(axis, "axis")[0], x.ndim),)
    kept_shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
    out_shape = kept_shape if keepdims else tuple(n for d, n in enumerate(x.shape) if d not in axes)
    if not axes:
        return _copy_contiguous(x)
    if math.prod(out_shape) == 0:
        return GpuArray._empty(out_shape, x.dtype)
    if math.prod(x.shape[d] for d in axes) == 0:
        return full(out_shape, -math.inf, dtype=x.dtype)
    if len(axes) == 1:
        out = GpuArray._empty(out_shape, x.dtype, zero=False)
        strides = list(contiguous_strides(kept_shape))
        strides[axes[0]] = 0
        strides = tuple(strides)
        layout = _run_rows("logsumexp", x, axes, out, tuple(strides))
        if key is not None:
            _keep(key, "logsumexp", x, layout, out)
        return out
    m = max_(x, axis=axes, keepdims=True)
    shift = where(less(abs_(m), math.inf), m, 0.0)
    total = sum_(exp(subtract(x, shift)), axis=axes, keepdims=True)
    result = add(log(total), shift)
    return reshape(result, out_shape)


def _normalized(x: GpuArray, normalized_shape: int | Sequence[int], params: dict[str, GpuArray | None]
                ) -> tuple[tuple[int, ...], dict[str, GpuArray | None], GpuArray]:
    """Checks of layer_norm / rms_norm: (row axes, the weight and bias as contiguous arrays of the
    result dtype, x of the result dtype)."""
    shape = int_tuple(normalized_shape, "normalized_shape")
    k = len(shape)
    if k > x.ndim or (k and x.shape[-k:] != shape):
        raise ValueError(f"normalized_shape {shape} does not match the trailing dims of {x.shape}")
    arrays = {name: None if p is None else float_array(p, name) for name, p in params.items()}
    for name, p in arrays.items():
        if p is not None and p.shape != shape:
            raise ValueError(f"{name} has shape {p.shape}, expected the normalized_shape {shape}")
    dtype = common_float_dtype(x, *arrays.values())
    arrays = {name: None if p is None else contiguous(p, dtype) for name, p in arrays.items()}
    return tuple(range(x.ndim - k, x.ndim)), arrays, as_dtype(x, dtype)


def layer_norm(x: GpuArray, /, normalized_shape: int | Sequence[int], weight: GpuArray | None = None,
               bias: GpuArray | None = None, eps: float = 1e-5) -> GpuArray:
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the trailing dims
    ``normalized_shape`` (torch.nn.functional.layer_norm; biased variance, two-level sums: the
    mean first, then the squared deviations). ``weight`` and ``bias`` have shape
    ``normalized_shape``; the result has the promoted dtype of ``x``, ``weight`` and ``bias``.

    Raises ``TypeError`` for non-arrays, non-floating dtypes or a non-real ``eps``,
    ``ValueError`` when ``normalized_shape`` is not the trailing shape of ``x`` or a parameter's
    shape differs from it.
    """
    return _norm("layer_norm", x, normalized_shape, weight, bias, eps)


def rms_norm(x: GpuArray, /, normalized_shape: int | Sequence[int], weight: GpuArray | None = None,
             eps: float = 1e-6) -> GpuArray:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing dims ``normalized_shape``
    (torch.nn.functional.rms_norm with an explicit ``eps``). Errors as :func:`layer_norm`."""
    return _norm("rms_norm", x, normalized_shape, weight, None, eps)


def _norm(op: str, x: object, normalized_shape: object, weight: object, bias: object, eps: object) -> GpuArray:
    """layer_norm / rms_norm: the checks once per call structure (x's shape, strides and dtype,
    ``normalized_shape``, the parameters' presence, shapes, strides and dtypes), then the kept
    launch replayed; ``eps`` is a per-call parameter."""
    eps = eps if type(eps) is float else real_number(eps, "eps")
    key = None
    if (type(x) is GpuArray and (weight is None or type(weight) is GpuArray) and (bias is None or type(bias) is GpuArray)
            and (type(normalized_shape) is int
                 or (type(normalized_shape) is tuple
                     and ((len(normalized_shape) == 1 and type(normalized_shape[0]) is int)
                          or all(type(k) is int for k in normalized_shape))))):
        key = (op, x._shape, x._strides, x._dtype.name, normalized_shape,
               None if weight is None else (weight._shape, weight._strides, weight._dtype.name),
               None if bias is None else (bias._shape, bias._strides, bias._dtype.name))
        out = _replayed(key, x, weight, bias, eps)
        if out is not None:
            return out
    x0 = x = float_array(x, "x")
    params = {"weight": weight, "bias": bias} if op == "layer_norm" else {"weight": weight}
    axes, params, x = _normalized(x, normalized_shape, params)
    w, b = params["weight"], params.get("bias")
    out = GpuArray._empty(x.shape, x.dtype, zero=False)
    if out.size:
        layout = _run_rows(op, x, axes, out, out._strides, weight=w, bias=b, eps=eps)
        if key is not None and x is x0 and w is weight and b is bias:  # nothing converted
            _keep(key, op, x, layout, out, w is not None, b is not None)
    return out
