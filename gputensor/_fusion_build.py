"""Building lazy arrays (``_fusion``): a validated elementwise op becomes a new DAG node over its
operands (``make_node``, ``lazy_op``), with the host-time fast paths of the binary and unary
operators (``lazy_binary``, ``lazy_unary``) that build the same node and structure key without
the general loop, and ``rebind`` for an in-place operator on a lazy array. A DAG that would
pass a bound first materialises its lazy operands (``_fusion.materialize``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import _fusion as _core
from ._array_object import GpuArray, _Storage
from ._dtypes import DType
from ._fusion import (MAX_NODES, MAX_SCALARS, _LIVE, _LOCK, _STORAGE_SLOT, _STRIDES_CACHE, LazyArray, _sweep,
                      _WatchedStorage, _weakref, lazy_array, materialize, max_inputs, write_fused)
from ._fusion_node import _KEYS, _new_node, _Node, _structure_key, leaf_index, op_key
from ._shapes import contiguous_strides

__all__ = ["lazy_array_of", "lazy_binary", "lazy_op", "lazy_unary", "make_node", "rebind"]


def _max_inputs() -> int:
    global _max_inputs_value
    _max_inputs_value = max_inputs()
    return _max_inputs_value


_max_inputs_value = 0  # max_inputs(), once known


def _operands(args: Sequence[Any]) -> list[Any]:
    """What a DAG holds for op arguments (GpuArrays, lazy or not, and ``(value, dtype)``
    scalar pairs)."""
    operands = []
    for x in args:
        if type(x) is LazyArray:
            operands.append(x._node)
        else:
            operands.append(x)
    return operands


def _node(op: tuple[Any, ...], opk: int, dtype: DType, shape: tuple[int, ...], args: Sequence[Any]) -> _Node:
    """:func:`make_node` with the op as a tuple and its key."""
    node = _new_node(op, opk, dtype, shape, _operands(args))
    if (node.size > MAX_NODES or len(node.leaves) > (_max_inputs_value or _max_inputs())
            or node.n_scalars > MAX_SCALARS):
        for a in args:
            if type(a) is LazyArray:
                materialize(a)
        node = _new_node(op, opk, dtype, shape, _operands(args))
    return node


def make_node(expr: str, casts: Sequence[str], expr_type: str, dtype: DType, shape: tuple[int, ...],
              args: Sequence[Any]) -> _Node:
    """A node applying ``expr`` to ``args`` (GpuArrays, lazy or not, and ``(value, dtype)``
    scalar pairs), already validated by the caller. Lazy arguments whose DAG would make the new
    one exceed a bound are materialised first."""
    op = (expr, tuple(casts), expr_type, dtype.name)
    return _node(op, op_key(op), dtype, shape, args)


def _watch(node: _Node) -> None:
    for leaf in node.leaves:
        storage = leaf._storage
        if type(storage) is _Storage:
            storage.__class__ = _WatchedStorage


def lazy_op(op: tuple[Any, ...], opk: int, dtype: DType, shape: tuple[int, ...], args: Sequence[Any]) -> LazyArray:
    """``lazy_array(make_node(...))`` for an op given as its tuple and :func:`op_key`."""
    return lazy_array(_node(op, opk, dtype, shape, args))


def lazy_binary(rop: Any, shape: tuple[int, ...], a: Any, b: Any) -> LazyArray:
    """The lazy result of the binary op ``rop`` (``_elementwise_cache._ResolvedOp``: ``op``, ``opk``,
    ``result``, ``scalar_name``: the dtype name of its scalar operands) on ``a`` and ``b``
    (GpuArrays, lazy or not, or ``(value, dtype)`` scalar pairs), validated by the caller,
    broadcast to ``shape``: :func:`lazy_op` with the usual operand combinations (a DAG and a
    scalar or a leaf, in either order; a DAG twice; a leaf and a scalar; two leaves) made
    without the general loop of :func:`_new_node` (the host time of a small op): the same node,
    the same structure key."""
    ta = type(a)
    tb = type(b)
    if ta is LazyArray:
        child = a._node
        if tb is LazyArray:
            if b._node is not child:
                return lazy_op(rop.op, rop.opk, rop.result, shape, (a, b))
            lazy = a  # the same DAG twice (``d * d``)
            x = y = child
        else:
            lazy = a
            x, y = child, b
    elif tb is LazyArray:
        lazy, child = b, b._node
        x, y = a, child
    else:
        lazy = child = None
        x, y = a, b
    new = None  # a leaf whose storage is not watched for the child already
    if child is None:  # a leaf and a scalar, or two leaves
        leaves: Any
        scalars: Any
        if ta is not tuple and tb is not tuple:  # two leaves (one when they read the same elements)
            if b is a or leaf_index((a,), b) == 0:
                leaves, desc = (a,), (rop.opk, 0, 0)
            else:
                leaves, desc = (a, b), (rop.opk, 0, 1)
            size, n_scalars, scalars = 1, 0, ()
        else:
            if tb is tuple and ta is not tuple:
                leaf = a
                desc = (rop.opk, 0, rop.scalar_name)
                scalars = (b[0],)
            elif ta is tuple and tb is not tuple:
                leaf = b
                desc = (rop.opk, rop.scalar_name, 0)
                scalars = (a[0],)
            else:
                return lazy_op(rop.op, rop.opk, rop.result, shape, (a, b))
            leaves = (leaf,)
            size = n_scalars = 1
        skey = _KEYS.get(desc) or _structure_key(desc)
    else:
        leaves = child.leaves
        size = child.size + 1
        n_scalars = child.n_scalars
        skey = child.skey
        scalars = child.scalars
        if x is child and y is child:  # (DAG, the same DAG)
            if skey is not None:
                desc = (rop.opk, -skey, None)
                skey = _KEYS.get(desc) or _structure_key(desc)
        elif x is child:
            if tb is tuple:  # (DAG, scalar)
                n_scalars += 1
                if skey is not None:
                    desc = (rop.opk, -skey, rop.scalar_name)
                    skey = _KEYS.get(desc) or _structure_key(desc)
                    scalars = scalars + (b[0],)
            else:  # (DAG, leaf)
                k = leaf_index(leaves, b)
                if k < 0:
                    k = len(leaves)
                    leaves = leaves + (b,)
                    new = b
                if skey is not None:
                    desc = (rop.opk, -skey, k)
                    skey = _KEYS.get(desc) or _structure_key(desc)
        elif ta is tuple:  # (scalar, DAG)
            n_scalars += 1
            if skey is not None:
                desc = (rop.opk, rop.scalar_name, -skey)
                skey = _KEYS.get(desc) or _structure_key(desc)
                scalars = (a[0],) + scalars
        else:  # (leaf, DAG): the leaf comes first among the leaves (as _new_node orders them)
            p = leaf_index(leaves, a)
            if p == 0:
                remap = None
            else:
                remap = _REMAPS.get((p, len(leaves)))
                if remap is None:
                    remap = _first_remap(p, len(leaves))
                if p > 0:
                    leaves = (a,) + leaves[:p] + leaves[p + 1:]
                else:
                    leaves = (a,) + leaves
                    new = a
            if skey is not None:
                desc = (rop.opk, 0, -skey if remap is None else (skey, remap))
                skey = _KEYS.get(desc) or _structure_key(desc)
    if size > MAX_NODES or n_scalars > MAX_SCALARS or len(leaves) > (_max_inputs_value or _max_inputs()):
        return lazy_op(rop.op, rop.opk, rop.result, shape, (a, b))  # (materialises the operands)
    # (_emit, inline)
    dtype = rop.result
    node = _new_object(_Node)  # (_Node(...) without the call)
    node.op = rop.op
    node.dtype = dtype
    node.shape = shape
    if len(leaves) == 2 and leaves[0] is x and leaves[1] is y:  # two leaves: one tuple serves both
        node.operands = node.leaves = leaves
    else:
        node.operands = (x, y)
        node.leaves = leaves
    node.size = size
    node.n_scalars = n_scalars
    node.skey = skey
    node.scalars = scalars if skey is not None else None
    strides = _STRIDES_CACHE.get(shape)
    if strides is None:
        return lazy_array(node)
    arr = _new_object(LazyArray)
    arr._node = node
    arr._shape = shape
    arr._strides = strides
    arr._offset = 0
    arr._dtype = dtype
    # _register, inline: the new array's reference first, then its storages watched -- those
    # of the child's leaves are already, as long as the lazy operand still holds the child
    # (a flush that unwatched one would have materialised it first; see _register)
    _LIVE.append(_weakref(arr))
    if lazy is None or type(lazy) is not LazyArray or lazy._node is not child:
        new = None
        for leaf in leaves:
            storage = leaf._storage
            if type(storage) is _Storage:
                storage.__class__ = _WatchedStorage
    if new is not None:
        storage = new._storage
        if type(storage) is _Storage:
            storage.__class__ = _WatchedStorage
    if len(_LIVE) >= _core._sweep_at:
        _sweep()
    return arr


#: (p, n) -> the remap of a DAG operand's n leaves when a leaf operand before it is its leaf p
#: (-1: none of them): that leaf first, the others after it in their order (``_first_remap``)
_REMAPS: dict[tuple[int, int], tuple[int, ...]] = {}


def _first_remap(p: int, n: int) -> tuple[int, ...]:
    if p < 0:
        remap = tuple(range(1, n + 1))
    else:
        remap = tuple(range(1, p + 1)) + (0,) + tuple(range(p + 1, n))
    if len(_REMAPS) < 1024:
        _REMAPS[(p, n)] = remap
    return remap


def lazy_unary(rop: Any, a: GpuArray) -> LazyArray:
    """:func:`lazy_binary` for a unary op on the array ``a`` (lazy or not)."""
    if type(a) is LazyArray:
        lazy = a
        child = a._node
        leaves = child.leaves
        size = child.size + 1
        n_scalars = child.n_scalars
        skey = child.skey
        scalars = child.scalars
        if skey is not None:
            desc: Any = (rop.opk, -skey)
            skey = _KEYS.get(desc) or _structure_key(desc)
    else:
        lazy = child = None
        leaves = (a,)
        size = 1
        n_scalars = 0
        desc = (rop.opk, 0)
        skey = _KEYS.get(desc) or _structure_key(desc)
        scalars = ()
    shape = a._shape
    if size > MAX_NODES or n_scalars > MAX_SCALARS or len(leaves) > (_max_inputs_value or _max_inputs()):
        return lazy_op(rop.op, rop.opk, rop.result, shape, (a,))  # (materialises the operand)
    node = _new_object(_Node)
    node.op = rop.op
    node.dtype = rop.result
    node.shape = shape
    node.operands = leaves if child is None else (child,)
    node.leaves = leaves
    node.size = size
    node.n_scalars = n_scalars
    node.skey = skey
    node.scalars = scalars if skey is not None else None
    arr = lazy_array_of(node, a._strides if child is not None else None)
    if lazy is None or type(lazy) is not LazyArray or lazy._node is not child:
        _watch(node)  # (see lazy_binary)
    return arr


def lazy_array_of(node: _Node, strides: tuple[int, ...] | None) -> LazyArray:
    """A new lazy array holding ``node`` (contiguous ``strides`` of its shape if known),
    registered but with its leaves' storages not yet watched (the caller's next step)."""
    shape = node.shape
    if strides is None:
        strides = _STRIDES_CACHE.get(shape)
        if strides is None:
            strides = tuple(contiguous_strides(shape))
            if len(_STRIDES_CACHE) < 1024:
                _STRIDES_CACHE[shape] = strides
    arr = _new_object(LazyArray)
    arr._node = node
    arr._shape = shape
    arr._strides = strides
    arr._offset = 0
    arr._dtype = node.dtype
    _LIVE.append(_weakref(arr))
    if len(_LIVE) >= _core._sweep_at:
        _sweep()
    return arr


_new_object = object.__new__



def rebind(x: LazyArray, node: _Node) -> None:
    """Give the lazy array ``x`` a new value ``node`` (an in-place operator on a lazy array;
    shape and dtype unchanged, checked by the caller)."""
    with _LOCK:
        if type(x) is not LazyArray:  # materialised meanwhile (another thread)
            write_fused(node, x)
            return
        _watch(node)
        _STORAGE_SLOT.__set__(x, node)
