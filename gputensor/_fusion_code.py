"""The kernel description of a fused DAG (``_fusion``): its nodes numbered in post order with
their leaves and scalars (``program``, ``linear_structure``), and the WGSL expression text the
fused kernel evaluates (``fused_code``, cached by the DAG's structure).
"""

from __future__ import annotations

from typing import Any

from ._backend.elementwise import fused_program
from ._backend.wgsl_types import emulating_int64
from ._dtypes import DType
from ._fusion_node import _leaf_key, _Node
from ._runtime import compute_type

__all__ = ["fused_code", "linear_structure", "program"]


class _Linearizer:
    """Post-order numbering of a DAG's nodes (see :func:`program`). A plain object rather than a
    recursive closure: a closure referring to itself is a reference cycle, which would keep the
    DAG's leaf arrays (device memory) alive until the cyclic garbage collector runs."""

    __slots__ = ("root", "leaf_index", "key_index", "n_leaves", "scalars", "entries", "refs")

    def __init__(self, root: _Node) -> None:
        self.root = root
        self.leaf_index = {id(leaf): k for k, leaf in enumerate(root.leaves)}
        self.key_index: dict[Any, int] | None = None
        self.n_leaves = len(root.leaves)
        self.scalars: list[tuple[Any, DType]] = []
        self.entries: list[tuple[Any, list[int]]] = []
        self.refs: dict[int, int] = {}  # id(node) -> -(position in entries + 1)

    def visit(self, nd: _Node) -> int:
        operand_refs = []
        for x in nd.operands:
            kind = type(x)
            if kind is _Node:
                ref = self.refs.get(id(x))
                operand_refs.append(ref if ref is not None else self.visit(x))
            elif kind is tuple:
                self.scalars.append(x)
                operand_refs.append(self.n_leaves + len(self.scalars) - 1)
            else:
                k = self.leaf_index.get(id(x))
                if k is None:  # another view object of the same elements
                    if self.key_index is None:
                        self.key_index = {_leaf_key(leaf): j for j, leaf in enumerate(self.root.leaves)}
                    k = self.key_index[_leaf_key(x)]
                operand_refs.append(k)
        self.entries.append((nd.op, operand_refs))
        ref = -len(self.entries)
        self.refs[id(nd)] = ref
        return ref


def program(node: _Node, out_dtype: DType | None = None, *,
            round_root: bool = False) -> tuple[tuple[Any, ...], tuple[tuple[Any, DType], ...], str, str, str]:
    """Linearise the DAG of ``node`` (cast to ``out_dtype`` if given and different) into
    ``(leaves, scalars, lets, expr, expr_type)``: kernel inputs are the leaves, then the
    scalars (``(value, dtype)`` pairs), named ``x0, x1, ...`` in that order; ``lets``/``expr``
    from ``fused_program`` (cached by the structure: op expressions, dtypes, connections, not
    the values)."""
    lin = _Linearizer(node)
    lin.visit(node)
    scalars, entries = lin.scalars, lin.entries
    n_inputs = lin.n_leaves + len(scalars)
    nodes = [(op[0], op[1], op[2], op[3], tuple(r if r >= 0 else n_inputs - r - 1 for r in operand_refs))
             for op, operand_refs in entries]
    if out_dtype is not None and out_dtype != node.dtype:
        compute = compute_type(out_dtype)
        nodes.append(("x0", (compute,), compute, out_dtype.name, (n_inputs + len(entries) - 1,)))
    leaves = node.leaves
    inputs = tuple([leaf._dtype.name for leaf in leaves] + [s[1].name for s in scalars])
    lets, expr, expr_type = fused_program(inputs, tuple(nodes), round_root)
    return leaves, tuple(scalars), lets, expr, expr_type


def linear_structure(node: _Node) -> tuple[tuple[Any, ...], list[tuple[Any, DType]]]:
    """The structure of a DAG as :func:`program` linearises it, without generating code:
    ``(description, scalars)``, the description a hashable tuple (per node in post order: its
    op and operand references -- leaf index, scalar position or earlier node -- then the
    scalars' dtypes) equal for DAGs that :func:`program` turns into the same code over leaves
    of the same dtypes, and the ``(value, dtype)`` scalars in the order of its inputs."""
    lin = _Linearizer(node)
    lin.visit(node)
    description = tuple([(op, tuple(refs)) for op, refs in lin.entries])
    return description + (tuple([dtype.name for _, dtype in lin.scalars]),), lin.scalars


#: (structure key, leaf dtype names, out dtype name or None, round_root, int64 mode) -> (lets, expr,
#: expr_type, input dtype names), for DAGs with a structure key (``fused_code``).
_CODE: dict[tuple[Any, ...], tuple[str, str, str, tuple[str, ...]]] = {}
_CODE_SIZE = 4096


def fused_code(node: _Node, out_dtype: DType | None = None, *,
               round_root: bool = False) -> tuple[str, str, str, tuple[str, ...]]:
    """``(lets, expr, expr_type, input dtype names)`` of :func:`program` for a node with a
    structure key (``node.skey``; its inputs are ``node.leaves`` then ``node.scalars``), looked
    up by that key when the structure was seen before."""
    out = None if out_dtype is None or out_dtype == node.dtype else out_dtype.name
    key = (node.skey, tuple([leaf._dtype.name for leaf in node.leaves]), out, round_root,
           emulating_int64())  # (int64 leaves load as two words on some devices)
    entry = _CODE.get(key)
    if entry is None:
        leaves, scalars, lets, expr, expr_type = program(node, out_dtype, round_root=round_root)
        inputs = tuple([leaf._dtype.name for leaf in leaves] + [s[1].name for s in scalars])
        entry = (lets, expr, expr_type, inputs)
        if len(_CODE) >= _CODE_SIZE:
            _CODE.clear()
        _CODE[key] = entry
    return entry
