"""Scaled dot-product attention on arrays (torch.nn.functional.scaled_dot_product_attention).

Two device paths, chosen per call:

* the backend's flash-attention kernels (``_backend/ops_attention.py``: tiled prefill, and
  single-query decode with key splits) when there is no ``attn_mask``, the value dim equals the
  key dim (at most 256) and the causal mask is one the kernel implements. The kernel's causal
  mask is bottom-right aligned; torch's ``is_causal`` is top-left aligned (``tril(ones(L, S))``).
  They agree for ``L == S``; for ``L < S`` keys ``L..S-1`` are masked for every query, so the
  kernel runs causally on the first ``L`` keys. Operands are made contiguous
  ``[batch, seq, dim]`` (device copies only for views and broadcast batch dims).
* otherwise (masks, ``Ev != E``, causal with ``L > S``, head dims above 256) a composition on
  the device: ``scores = q @ k^T`` (gemm), the scale and the mask applied by one fused
  elementwise kernel, the row softmax kernel, and ``p @ v`` (gemm). float16 operands are
  computed in float32. Rows whose keys are all masked give NaN, as torch's do.
"""

from __future__ import annotations

import math

from .. import _dispatch
from .._array_object import GpuArray
from .._backend import ops_attention
from .._creation_functions import arange
from .._dtypes import DTYPE_CATEGORIES, bool as bool_dtype, float16, float32
from .._elementwise_functions import add, less_equal, multiply
from .._linear_algebra_functions import matmul, matrix_transpose
from .._manipulation_functions import _view, broadcast_to, reshape
from .._searching_functions import where
from .._shapes import broadcast_shapes
from ._common import _row_major, as_dtype, common_float_dtype, contiguous, float_array, real_number
from ._rows import softmax

__all__ = ["scaled_dot_product_attention"]

_FLOATING = DTYPE_CATEGORIES["real floating"]


def _flat(x: GpuArray, batch: tuple[int, ...], dtype) -> GpuArray:
    """``x`` broadcast to ``batch + x.shape[-2:]`` as a contiguous ``[prod(batch), rows, dim]``
    array of ``dtype`` (a device copy unless it already is one)."""
    y = broadcast_to(x, batch + x.shape[-2:])
    y = contiguous(y, dtype)
    return reshape(y, (math.prod(batch),) + x.shape[-2:])


def _kernel(q: GpuArray, k: GpuArray, v: GpuArray, batch: tuple[int, ...], scale: float, causal: bool,
            dtype) -> GpuArray:
    """Attention on the flash kernels (no mask; causal bottom-right aligned, see the module)."""
    L, E = q.shape[-2:]
    S = k.shape[-2]
    if causal and L < S:
        # top-left causal: keys past L are masked for every query
        k = _view(k, k.shape[:-2] + (L, E), k._strides)
        v = _view(v, v.shape[:-2] + (L, E), v._strides)
        S = L
    if all(a._dtype == dtype and a._shape[:-2] == batch and a._strides == _row_major(a._shape) for a in (q, k, v)):
        qf, kf, vf = q, k, v  # (the usual case: no copies, no views)
    else:
        qf, kf, vf = (_flat(a, batch, dtype) for a in (q, k, v))
    out = GpuArray._empty(batch + (L, E), dtype, zero=False)
    _dispatch.call(ops_attention.attention, qf._ptr, kf._ptr, vf._ptr, out._ptr, math.prod(batch), 1, L, S, E,
                   scale, causal, dtype=dtype.name)
    return out


def _composed(q: GpuArray, k: GpuArray, v: GpuArray, attn_mask: GpuArray | None, causal: bool, scale: float,
              dtype) -> GpuArray:
    """Attention as gemm, fused scale and mask, row softmax, gemm (see the module docstring)."""
    compute = float32 if dtype == float16 else dtype
    q, k, v = (as_dtype(a, compute) for a in (q, k, v))
    L, S = q.shape[-2], k.shape[-2]
    scores = multiply(matmul(q, matrix_transpose(k)), scale)
    if causal:
        rows = reshape(arange(L), (L, 1))
        cols = reshape(arange(S), (1, S))
        scores = where(less_equal(cols, rows), scores, -math.inf)
    if attn_mask is not None:
        if attn_mask.dtype == bool_dtype:
            scores = where(attn_mask, scores, -math.inf)
        else:
            scores = add(scores, as_dtype(attn_mask, compute))
    out = matmul(softmax(scores, axis=-1), v)
    return as_dtype(out, dtype)


def scaled_dot_product_attention(q: GpuArray, k: GpuArray, v: GpuArray, *, attn_mask: GpuArray | None = None,
                                 is_causal: bool = False, scale: float | None = None) -> GpuArray:
    """``softmax(q @ k^T * scale + mask) @ v`` for ``q`` of shape ``(..., L, E)``, ``k``
    ``(..., S, E)`` and ``v`` ``(..., S, Ev)``; the leading (batch) dims broadcast. Returns a new
    array ``(..., L, Ev)`` of the promoted dtype. torch.nn.functional.scaled_dot_product_attention
    semantics:

    * ``scale`` defaults to ``1 / sqrt(E)``;
    * ``attn_mask`` broadcastable to ``(..., L, S)``: boolean (True keeps a key) or floating
      (added to the scores);
    * ``is_causal`` masks key ``j`` for query ``i`` when ``j > i`` (top-left aligned, torch's
      ``tril(ones(L, S))``), for any ``L`` and ``S``;
    * a query whose keys are all masked gives NaN; ``S == 0`` gives zeros.

    Raises ``TypeError`` for non-arrays, non-floating operands, a mask that is neither boolean
    nor floating, a non-bool ``is_causal`` or a non-real ``scale``; ``ValueError`` for operands
    below 2 dims, key dims or key / value lengths that differ, batch dims or a mask that do not
    broadcast, or ``attn_mask`` together with ``is_causal``.
    """
    q = float_array(q, "q")
    k = float_array(k, "k")
    v = float_array(v, "v")
    if not isinstance(is_causal, bool):
        raise TypeError(f"is_causal must be a bool, not {type(is_causal).__name__}")
    for name, a in (("q", q), ("k", k), ("v", v)):
        if a.ndim < 2:
            raise ValueError(f"{name} must have at least 2 dims (seq, dim), got shape {a.shape}")
    L, E = q.shape[-2:]
    S, Ek = k.shape[-2:]
    Sv, Ev = v.shape[-2:]
    if Ek != E:
        raise ValueError(f"q and k must have the same last dim, got {q.shape} and {k.shape}")
    if Sv != S:
        raise ValueError(f"k and v must have the same sequence length, got {k.shape} and {v.shape}")
    batch = broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    if attn_mask is not None:
        if not isinstance(attn_mask, GpuArray):
            raise TypeError(f"attn_mask must be a gputensor array, not {type(attn_mask).__name__}")
        if attn_mask.dtype != bool_dtype and attn_mask.dtype not in _FLOATING:
            raise TypeError(f"attn_mask must be boolean or floating, got {attn_mask.dtype}")
        if is_causal:
            raise ValueError("attn_mask and is_causal cannot both be set")
        batch = broadcast_shapes(batch + (L, S), attn_mask.shape)[:-2]
    dtype = common_float_dtype(q, k, v)
    scale_ = 1.0 / math.sqrt(E) if scale is None else real_number(scale, "scale")
    if math.prod(batch) == 0 or L == 0 or Ev == 0:
        return GpuArray._empty(batch + (L, Ev), dtype)
    if S == 0:
        return GpuArray._empty(batch + (L, Ev), dtype)  # zero-filled: an empty weighted sum
    if (attn_mask is None and Ev == E and 0 < E <= ops_attention.MAX_HEAD_DIM and math.isfinite(scale_)
            and not (is_causal and L > S)):
        return _kernel(q, k, v, batch, scale_, is_causal, dtype)
    return _composed(broadcast_to(q, batch + (L, E)), k, v, attn_mask, is_causal, scale_, dtype)
