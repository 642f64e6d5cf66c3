"""The node of a fused expression DAG (``_fusion``): ``_Node`` (an op, its operands, the DAG's
distinct leaves and bounds), the leaves' identity (``_leaf_key``), and the interned
*structure keys* that let a DAG seen before find its kernel without a walk (``op_key``,
``_structure_key``, ``_new_node``). Pure host-side data: nothing here records or materialises.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from ._array_object import GpuArray
from ._dtypes import DType

__all__ = ["op_key"]


def _leaf_key(leaf: GpuArray) -> tuple[Any, ...]:
    """Leaves reading the same elements are bound once."""
    return (id(leaf._storage), leaf._offset, leaf._shape, leaf._strides, leaf._dtype)


class _Node:
    """One elementwise op of a DAG (immutable).

    ``op``: ``(expr, casts, expr_type, result dtype name)`` as ``fused_program`` takes them;
    ``operands``: ``_Node``, leaf ``GpuArray`` (with storage) or a weak scalar ``(value, dtype)``;
    ``leaves`` / ``leaf_keys``: the distinct leaf arrays of the whole DAG, in first-use order;
    ``size``: op nodes of the DAG (shared sub-DAGs counted once per use: an upper bound);
    ``n_scalars``: scalar operands of the DAG.

    ``skey``: the DAG's *structure key* (an int, see :func:`_structure_key`), or None for a DAG
    with a node that has two different node operands (only :func:`program` can describe how
    such sub-DAGs share nodes); ``scalars``: with a structure key, the scalar values in the
    order :func:`program` numbers them (else None). Both are built one node at a time, so
    materialising a DAG whose structure was seen before only looks its kernel up
    (:func:`materialize_into`): no walk over the DAG.
    """

    __slots__ = ("op", "dtype", "shape", "operands", "leaves", "leaf_keys", "size", "n_scalars", "skey",
                 "scalars")

    def __init__(self, op: tuple[str, tuple[str, ...], str, str], dtype: DType, shape: tuple[int, ...],
                 operands: tuple[Any, ...], leaves: tuple[GpuArray, ...], leaf_keys: tuple[Any, ...],
                 size: int, n_scalars: int, skey: int | None = None, scalars: tuple[Any, ...] | None = None) -> None:
        self.op = op
        self.dtype = dtype
        self.shape = shape
        self.operands = operands
        self.leaves = leaves
        self.leaf_keys = leaf_keys
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
    keys: Any = None
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
                leaves, keys = x.leaves, x.leaf_keys
                remap = None
            else:
                if type(leaves) is tuple:
                    leaves, keys = list(leaves), list(keys)
                remap = []
                for leaf, key in zip(x.leaves, x.leaf_keys):
                    if key in keys:  # (a failed ``index`` would format the key for its error)
                        k = keys.index(key)
                    else:
                        k = len(keys)
                        keys.append(key)
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
                leaves, keys = [x], [_leaf_key(x)]
                k = 0
            else:
                for k, leaf in enumerate(leaves):
                    if leaf is x:
                        break
                else:
                    key = _leaf_key(x)
                    if key in keys:
                        k = keys.index(key)
                    else:
                        if type(leaves) is tuple:
                            leaves, keys = list(leaves), list(keys)
                        k = len(keys)
                        keys.append(key)
                        leaves.append(x)
            if desc is not None:
                desc.append(k)
    if leaves is None:
        leaves = keys = ()
    elif type(leaves) is list:
        leaves, keys = tuple(leaves), tuple(keys)
    if desc is None:
        return _Node(op, dtype, shape, tuple(operands), leaves, keys, size, n_scalars)
    return _Node(op, dtype, shape, tuple(operands), leaves, keys, size, n_scalars, _structure_key(tuple(desc)),
                 scalars)
