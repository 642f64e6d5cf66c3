"""Reductions through the engine's fusion: :func:`reduce_fused` evaluates a lazy array's
elementwise DAG inside a reduction's loads (the DAG is the reduction's prologue) and replays the
kept plan of a repeated fused reduction."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import _devices, _fusion
from ._backend import ops_reduce
from ._backend.errors import BackendError, BackendErrorKind
from ._backend.ops_elementwise import ArrayOperand, ScalarOperand
from ._dtypes import DType
from ._elementwise_cache import cache_put
from ._runtime import backend
from ._runtime import translate as _translate
from ._shapes import broadcast_strides

if TYPE_CHECKING:
    from ._array_object import GpuArray

__all__ = ["reduce_fused"]


def reduce_fused(op: str, x: GpuArray, axes: Sequence[int], out: GpuArray, *,
                 acc_dtype: DType | None = None, ddof: float = 0) -> builtins.bool:
    """Reduce ``x`` over ``axes`` into the contiguous ``out`` (``x``'s shape without ``axes``;
    op, dtypes and ``ddof`` as ``ops_reduce.reduce_strided``). A lazy ``x`` is evaluated inside
    the reduction's loads (its elementwise DAG is the reduction's prologue: ``x`` stays lazy and
    nothing but ``out`` is written); an array with storage is read without the write-hazard
    flush (``_fusion``). Returns False, recording nothing, when a lazy ``x`` cannot be fused
    (an input view larger than one binding window, too many dims): the caller then reduces
    ``x`` itself (materialising it). Backend errors as :func:`reduce_strided`."""
    fz = _fusion
    shape = tuple(x.shape)
    kwargs = dict(acc_dtype=None if acc_dtype is None else acc_dtype.name, dst_strides=tuple(out._strides),
                  ddof=ddof)
    if type(x) is not fz.LazyArray:
        try:
            ops_reduce.reduce_strided(backend(), op, fz.leaf_ptr(x), x.dtype.name, shape, tuple(x._strides),
                                      tuple(axes), out._ptr, out.dtype.name, **kwargs)
        except Exception as exc:
            raise _translate(exc) from None
        return True
    node = fz.node_of(x)
    be = backend()
    kept_key = None
    if node.skey is not None:  # the code by the DAG's structure key (no walk over the DAG)
        leaves = node.leaves
        kept_key = (op, node.skey, x._dtype.name, shape, tuple(x._strides), tuple(axes), out._dtype.name,
                    kwargs["dst_strides"], kwargs["acc_dtype"], ddof,
                    tuple([(leaf._dtype.name, leaf._shape, leaf._strides) for leaf in leaves]))
        kept = _FUSED_REDUCE.get(kept_key)
        if kept is not None and kept.valid_on(be):  # the kept plan: no operands, no key of reduce_strided
            try:
                kept.launch(be, [fz.leaf_ptr(leaf) for leaf in leaves], node.scalars, out._ptr)
            except Exception as exc:
                raise _translate(exc) from None
            return True
        lets, expr, _, names = fz.fused_code(node, round_root=True)
        scalars = list(zip(node.scalars, names[len(leaves):]))
    else:
        leaves, pairs, lets, expr, _ = fz.program(node, round_root=True)
        scalars = [(value, dtype.name) for value, dtype in pairs]
    inputs: list[Any] = [
        ArrayOperand(fz.leaf_ptr(leaf), leaf.dtype.name, tuple(broadcast_strides(leaf.shape, leaf._strides, shape)))
        for leaf in leaves
    ]
    inputs += [ScalarOperand(value, name) for value, name in scalars]
    prologue = ops_reduce.Prologue(tuple(inputs), lets, expr)
    try:
        ops_reduce.reduce_strided(be, op, 0, x.dtype.name, shape, tuple(x._strides), tuple(axes),
                                  out._ptr, out.dtype.name, prologue=prologue, **kwargs)
    except BackendError as exc:
        if exc.kind == BackendErrorKind.UNSUPPORTED:
            return False  # the caller materialises x (and reports a real dtype problem)
        raise _translate(exc) from None
    if kept_key is not None and not _devices.is_multi():
        kept = ops_reduce.planned_reduce_fused(be, op, x.dtype.name, shape, tuple(x._strides), tuple(axes),
                                               out.dtype.name, prologue, **kwargs)
        if kept is not None:
            cache_put(_FUSED_REDUCE, kept_key, kept)
    return True


#: (op, DAG structure key, dtype, shape, strides, axes, out dtype and strides, accumulation
#: dtype, ddof, per leaf: dtype name, shape, strides) -> the backend's kept plan of a fused
#: reduction (``ops_reduce.planned_reduce_fused``): a repeated ``reduce_fused`` replays it.
_FUSED_REDUCE: dict[tuple[Any, ...], Any] = {}
