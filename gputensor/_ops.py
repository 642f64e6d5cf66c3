"""The namespace's elementwise op table: the rows of the backend's one op table
(``_backend/elementwise_ops``) that the namespace makes functions and operator dunders of.

A row carries the op's spec facts (name, arity, dtype category, result rule, dunder) and its
WGSL forms; see ``_backend/elementwise_ops`` for the fields. The namespace functions
(``_elementwise_functions``), the dunders of ``GpuArray`` (``_array_object``), the dtype
resolution (``_dispatch``) and fusion all read these rows.
"""

from __future__ import annotations

from ._backend.elementwise_ops import (
    BINARY_OPS,
    COMPARISON_OPS,
    NAMESPACE_OPS as ELEMENTWISE_OPS,
    UNARY_OPS,
    ElementwiseOp,
)

__all__ = ["ElementwiseOp", "ELEMENTWISE_OPS", "UNARY_OPS", "BINARY_OPS", "COMPARISON_OPS"]
