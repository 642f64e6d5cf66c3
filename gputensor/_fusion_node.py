"""The node of a fused expression DAG (``_fusion``): ``_Node`` (an op, its operands, the DAG's
distinct leaves and bounds), the leaves' identity (``_leaf_key``, ``leaf_index``), and the interned
*structure keys* that let a DAG seen before find its kernel without a walk (``op_key``,
``_structure_key``, ``_new_node``). Pure host-side data: nothing here records or materialises.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from ._array_object import GpuArray
from ._dtypes import DType

__all__ = ["leaf_index", "op_key"]


def _leaf_key(leaf: GpuArray) -> tuple[Any, ...]:
    """Leaves reading the same elements are bound once: a hashable key of the elements a leaf
    reads (equal keys: the same elements, as :func:`leaf_index` compares them)."""
    return (id(leaf._storage), leaf._offset, leaf._shape, leaf._strides, leaf._dtype)


def leaf_index(leaves: Sequence[GpuArray], x: GpuArray) -> int:
    """The index of the leaf of ``leaves`` that is ``x`` or reads the same elements (storage,
    offset, shape, strides and dtype), or -1. Nodes keep no keys of their leaves: a key is a
    tuple per leaf per node that the cyclic garbage collector would track."""
    for k, leaf in enumerate(leaves):
        if leaf is x:
            return k
    storage = x._storage
    for k, leaf in enumerate(leaves):
        if (leaf._storage is storage and leaf._offset == x._offset and leaf._shape == x._shape
                and leaf._strides == x._strides and (leaf._dtype is x._dtype or leaf._dtype == x._dtype)):
            return k
    return -1


class _Node:
    """One elementwise op of a DAG (immutable).

    ``op``: ``(expr, casts, expr_type, result dtype name)`` as ``fused_program`` takes them;
    ``operands``: ``_Node``, leaf ``GpuArray`` (with storage) or a weak scalar ``(value, dtype)``;
    ``leaves``: the distinct leaf arrays of the whole DAG (see :func:`leaf_index`), in first-use
    order (the ``operands`` tuple itself when they are the operands: fewer objects per node);
    ``size``: op nodes of the DAG (shared sub-DAGs counted once per use: an upper bound);
    ``n_scalars``: scalar operands of the DAG.

    ``skey``: the DAG's *structure key* (an int, see :func:`_structure_key`), or None for a DAG
    with a node that has two different node operands (only :func:`program` can describe how
    such sub-DAGs share nodes); ``scalars``: with a structure key, the scalar values in the
    order :func:`program` numbers them (else None). Both are built one node at a time, so
    materialising a DAG whose structure was seen before only looks its kernel up
    (:func:`materialize_into`): no walk over the DAG.
    """

    __slots__ = ("op", "dtype", "shape", "operands", "leaves", "size", "n_scalars", "skey", "scalars")

    def __init__(self, op: tuple[str, tuple[str, ...], str, str], dtype: DType, shape: tuple[int, ...],
                 operands: tuple[Any, ...], leaves: tuple[GpuArray, ...], size: int, n_scalars: int,
                 skey: int | None = None, scalars: tuple[Any, ...] | None = None) -> None:
        self.op = op
        self.dtype = dtype
        self.shape = shape
        self.operands = operands
        self.leaves = leaves
        self.size = size
        self.n_scalars = n_scalars
        self.skey = skey
        self.scalars = scalars


# ---- structure keys ---------------------------------------------------------------------------
#: structure description -> its key (an int from ``_KEY_IDS``, never reused: when the table is
#: full it is emptied, and a structure seen again gets a new key -- a kernel looked up again,
#: never the wrong one).
_KEYS: dict[tuple[Any, ...], int] = {}
_KEY_IDS = itertools.count(1)
_KEYS_SIZE = 1 << 16
#: op tuple -> its key (the first item of a node's structure description)
_OPS: dict[tuple[Any, ...], int] = {}


def _structure_key(desc: tuple[Any, ...]) -> int:
    """The key of a node's structure description ``desc``: ``(op key, operand, ...)``, where an
    operand is a leaf's index among the DAG's leaves (an int >= 0), a scalar's dtype name (a
    str), ``-key`` for a node operand whose leaves keep their indices in the DAG (``key`` its
    structure key, > 0), ``(key, remap)`` for one whose leaves do not (``remap``: the DAG's leaf
    index of each of its leaves) or None for a node operand repeated.
    Equal keys mean equal :func:`program` output, except the leaves' and scalars' values and the
    leaves' dtypes (part of the kernel caches' keys)."""
    return _intern(_KEYS, desc)


def op_key(op: tuple[Any, ...]) -> int:
    """The key of an op tuple ``(expr, casts, expr_type, dtype name)``."""
    return _intern(_OPS, op)


def _intern(table: dict[tuple[Any, ...], int], item: tuple[Any, ...]) -> int:
    """``item``'s key in ``table``, a new one (never reused: see ``_KEY_IDS``) the first time;
    a full table is cleared first (then only cache misses follow)."""
    key = table.get(item)
    if key is None:
        if len(table) >= _KEYS_SIZE:
            table.clear()
        key = table.setdefault(item, next(_KEY_IDS))
    return key


def _new_node(op: tuple[Any, ...], opk: int, dtype: DType, shape: tuple[int, ...],
              operands: Sequence[Any]) -> _Node:
    """A node over ``operands`` (``_Node``, leaf arrays, ``(value, dtype)`` scalars): its
    leaves, bounds and structure key (see :class:`_Node`)."""
    leaves: Any = None
    size = 1
    n_scalars = 0
    child: Any = None  # the first node operand
    others: list[_Node] | None = None  # further distinct node operands (then no structure key)
    desc: list[Any] = [opk]
    scalars: Any = ()
    for x in operands:
        kind = type(x)
        if kind is tuple:  # a weak scalar
            n_scalars += 1
            if desc is not None:
                desc.append(x[1].name)
                scalars += (x[0],)
        elif kind is _Node:
            if x is child:
                if desc is not None:
                    desc.append(None)
                continue
            if child is None:
                child = x
            else:
                if others is None:
                    others = [x]
                elif any(x is o for o in others):
                    continue
                else:
                    others.append(x)
                desc = None  # type: ignore[assignment]  (program() describes the sharing)
            size += x.size
            n_scalars += x.n_scalars
            if leaves is None:
                leaves = x.leaves
                remap = None
            else:
                if type(leaves) is tuple:
                    leaves = list(leaves)
                remap = []
                for leaf in x.leaves:
                    k = leaf_index(leaves, leaf)
                    if k < 0:
                        k = len(leaves)
                        leaves.append(leaf)
                    remap.append(k)
                remap = None if remap == list(range(len(remap))) else tuple(remap)
            if desc is not None:
                if x.skey is None:
                    desc = None  # type: ignore[assignment]
                else:
                    desc.append(-x.skey if remap is None else (x.skey, remap))
                    scalars += x.scalars
        else:  # a leaf array
            if leaves is None:
                leaves = [x]
                k = 0
            else:
                k = leaf_index(leaves, x)
                if k < 0:
                    if type(leaves) is tuple:
                        leaves = list(leaves)
                    k = len(leaves)
                    leaves.append(x)
            if desc is not None:
                desc.append(k)
    operands = tuple(operands)
    if leaves is None:
        leaves = ()
    elif type(leaves) is list:
        if len(leaves) == len(operands) and all(p is q for p, q in zip(leaves, operands)):
            leaves = operands  # (the leaves are the operands: one tuple serves both)
        else:
            leaves = tuple(leaves)
    if desc is None:
        return _Node(op, dtype, shape, operands, leaves, size, n_scalars)
    return _Node(op, dtype, shape, operands, leaves, size, n_scalars, _structure_key(tuple(desc)), scalars)
