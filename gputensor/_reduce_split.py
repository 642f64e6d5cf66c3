"""Reductions with more outputs or reduced elements than one backend dispatch takes.

The backend's strided reduction handles at most ``ops_reduce.max_count()`` outputs and reduced
elements per call (2**31 - 1: u32 index math; lower under ``GPUTENSOR_REDUCE_MAX_COUNT``).
:func:`reduce` splits a larger reduction into pieces that fit, all of them views of the input
(slices along one axis, no copies), reduces each piece on the device and combines the partial
results on the device:

* too many outputs: slices along the outermost kept axis of size > 1, each reduced straight
  into the matching slice of the result;
* too many reduced elements: slices along the outermost reduced axis of size > 1 (so a piece's
  row-major reduced index plus the piece's start times the inner reduced count is the global
  index), each reduced into one row of a stack of partials, which is then reduced over its
  first axis: sum/prod (partials in the accumulation dtype), max/min/any/all; ``mean`` is the
  total sum over the count; ``var``/``std`` merge each piece's (count, mean, M2 = var * count)
  with Chan et al.'s pairwise formula; ``argmax``/``argmin`` take each piece's extreme value and
  index (plus the piece's offset) and keep the first piece whose value wins (NaN wins, as in the
  unsplit kernel), i.e. the first occurrence overall.

Pieces that still do not fit are split again (recursively). A lazy (fused) input is
materialised first: a fused source is limited to the same count.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from . import _dispatch
from ._array_object import GpuArray
from ._backend import config, ops_reduce
from ._dtypes import DType
from ._fusion import materialize
from ._manipulation_functions import _copy_contiguous, _view

__all__ = ["limit", "needs_split", "reduce"]

_limit: tuple[int, int] = (-1, ops_reduce.MAX_COUNT)  # (config.generation, max_count() then)


def limit() -> int:
    """The backend's ``ops_reduce.max_count()``, read again only after a knob changed."""
    global _limit
    generation, count = _limit
    if generation != config.generation:
        generation = config.generation
        count = ops_reduce.max_count()
        _limit = (generation, count)
    return count


def needs_split(shape: Sequence[int], axes: Sequence[int], count: int) -> bool:
    """Whether reducing ``shape`` over ``axes`` has more than ``count`` outputs or reduced
    elements."""
    nred = math.prod(shape[d] for d in axes)
    nkeep = math.prod(n for d, n in enumerate(shape) if d not in axes)
    return nred > count or nkeep > count


def reduce(op: str, x: GpuArray, axes: Sequence[int], out_dtype: DType, acc_dtype: DType | None = None,
           ddof: float = 0) -> GpuArray:
    """``x`` (non-empty) reduced over ``axes`` with ``op`` into a new contiguous array of
    ``out_dtype`` (``x``'s shape without ``axes``), split into pieces that fit the backend (see
    the module docstring). Ops, dtypes and ``ddof`` as ``ops_reduce.reduce_strided``."""
    materialize(x)
    axes = tuple(sorted(axes))
    out = GpuArray._empty(tuple(n for d, n in enumerate(x.shape) if d not in axes), out_dtype, zero=False)
    _into(op, x, axes, out, acc_dtype, ddof, limit())
    return out


def _balanced(n: int, most: int) -> int:
    """The piece length that splits ``n`` into as few pieces of at most ``most`` (at least 1)
    as possible, of nearly equal lengths."""
    most = max(1, most)
    return -(-n // -(-n // most))


def _slice(x: GpuArray, axis: int, start: int, length: int) -> GpuArray:
    """The view ``x[..., start:start + length, ...]`` along ``axis``."""
    shape = x.shape[:axis] + (length,) + x.shape[axis + 1:]
    return _view(x, shape, x._strides, start * x._strides[axis])


def _row(stack: GpuArray, j: int) -> GpuArray:
    """The view ``stack[j]``."""
    return _view(stack, stack.shape[1:], stack._strides[1:], j * stack._strides[0])


def _column(values: Sequence[float], ndim: int, dtype: DType) -> GpuArray:
    """A device array of ``values`` shaped (len, 1, ..., 1) with ``ndim`` trailing ones."""
    return GpuArray._from_numpy(np.asarray(values).reshape((len(values),) + (1,) * ndim), dtype)


def _into(op: str, x: GpuArray, axes: tuple[int, ...], out: GpuArray, acc: DType | None, ddof: float,
          count: int) -> None:
    """``out`` (a view of ``x``'s kept shape) = the reduction of the materialised ``x``."""
    kept = [d for d in range(x.ndim) if d not in axes]
    nred = math.prod(x.shape[d] for d in axes)
    nkeep = math.prod(x.shape[d] for d in kept)
    if nkeep > count:
        i = next(i for i, d in enumerate(kept) if x.shape[d] > 1)
        k = kept[i]
        step = _balanced(x.shape[k], count // (nkeep // x.shape[k]))
        for start in range(0, x.shape[k], step):
            n = min(step, x.shape[k] - start)
            _into(op, _slice(x, k, start, n), axes, _slice(out, i, start, n), acc, ddof, count)
        return
    if nred <= count:
        _dispatch.reduce_fused(op, x, axes, out, acc_dtype=acc, ddof=ddof)
        return
    r = next(d for d in axes if x.shape[d] > 1)
    inner = nred // x.shape[r]
    step = _balanced(x.shape[r], count // inner)
    starts = list(range(0, x.shape[r], step))
    pieces = [_slice(x, r, s, min(step, x.shape[r] - s)) for s in starts]
    kshape = out.shape

    def partials(piece_op: str, dtype: DType, piece_acc: DType | None) -> GpuArray:
        stack = GpuArray._empty((len(pieces),) + kshape, dtype, zero=False)
        for j, p in enumerate(pieces):
            _into(piece_op, p, axes, _row(stack, j), piece_acc, 0, count)
        return stack

    def combine(combine_op: str, stack: GpuArray, dtype: DType, combine_acc: DType | None) -> GpuArray:
        materialize(stack)
        total = GpuArray._empty(kshape, dtype, zero=False)
        _into(combine_op, stack, (0,), total, combine_acc, 0, count)
        return total

    if op in ("sum", "prod"):
        dtype = acc or out.dtype
        _dispatch.copy_into(out, combine(op, partials(op, dtype, dtype), dtype, dtype))
    elif op in ("max", "min", "any", "all"):
        _into(op, partials(op, out.dtype, acc), (0,), out, acc, 0, count)
    elif op == "mean":
        dtype = acc or out.dtype
        total = combine("sum", partials("sum", dtype, dtype), dtype, dtype)
        _dispatch.copy_into(out, _dispatch.elementwise_op("divide", total, float(nred)))
    elif op in ("var", "std"):
        counts = [p.shape[r] * inner for p in pieces]
        _dispatch.copy_into(out, _merged_variance(op, counts, partials, combine, acc or out.dtype, ddof, len(kshape)))
    elif op in ("argmax", "argmin"):
        values = partials(op[3:], x.dtype, None)
        index = partials(op, out.dtype, None)
        offsets = _column([s * inner for s in starts], len(kshape), out.dtype)
        index = _dispatch.elementwise_op("add", index, offsets)
        winner = combine(op, values, out.dtype, None)
        chosen = _dispatch.elementwise_op("equal", winner, _column(range(len(pieces)), len(kshape), out.dtype))
        picked = _dispatch.elementwise_op("multiply", _copy_contiguous(chosen, out.dtype), index)
        _into("sum", _materialized(picked), (0,), out, out.dtype, 0, count)
    else:
        raise ValueError(f"unknown reduction {op!r}")


def _materialized(x: GpuArray) -> GpuArray:
    """``x``, computed into storage if it was lazy."""
    materialize(x)
    return x


def _merged_variance(op: str, counts: list[int], partials: Callable[..., GpuArray],
                     combine: Callable[..., GpuArray], dtype: DType, ddof: float, ndim: int) -> GpuArray:
    """var/std over pieces of ``counts`` reduced elements from their means and variances
    (Chan et al.): mean = sum(n_j mean_j) / n, M2 = sum(n_j var_j + n_j (mean_j - mean)**2),
    var = M2 / (n - ddof) (inf/NaN, as NumPy, where n - ddof <= 0)."""
    ew = _dispatch.elementwise_op
    n = sum(counts)
    means = partials("mean", dtype, dtype)
    variances = partials("var", dtype, dtype)
    weights = _column(counts, ndim, dtype)
    mean = ew("divide", combine("sum", ew("multiply", means, weights), dtype, dtype), float(n))
    delta = ew("subtract", means, mean)
    terms = ew("add", ew("multiply", variances, weights), ew("multiply", weights, ew("multiply", delta, delta)))
    m2 = combine("sum", terms, dtype, dtype)
    div = n - ddof
    result = ew("divide", m2, float(div)) if div > 0 else ew("multiply", m2, math.inf)
    return ew("sqrt", result) if op == "std" else result

