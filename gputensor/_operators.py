"""The array object's methods that run operations, installed on ``GpuArray``.

``GpuArray`` (``_array_object``) holds the data model: storage, views, basic indexing, host
transfers. The methods here call the engine and the namespace, which sit above it, so they live
above both and are set on the class when ``gputensor`` is imported (``install``):

* the operator dunders, generated from the op table ``_ops.ELEMENTWISE_OPS`` (``__add__``,
  ``__radd__``, ``__iadd__``, comparisons, unary operators); Python scalars are weak;
  ``__pow__``/``__ipow__`` refuse an integer array to a negative Python int (``check_power``,
  ``ValueError`` as NumPy). In-place operators write into the same buffer (views see the
  change) and raise ``TypeError`` when the result dtype would differ from the left operand's
  (the spec's rule) and ``ValueError`` when broadcasting would change its shape;
* ``__getitem__`` / ``__setitem__`` (basic keys as views, integer-array and boolean-mask keys
  through ``_indexing_functions``);
* ``__matmul__``, ``__rmatmul__``, ``__imatmul__`` (``_linear_algebra_functions.matmul``).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _dispatch, _elementwise_functions
from ._elementwise_fast import binary_operator, unary_op
from ._array_object import GpuArray
from ._creation_functions import asarray
from ._data_type_functions import result_type
from ._advanced_indexing import advanced_getitem, advanced_setitem, is_advanced_key
from ._linear_algebra_functions import matmul, matmul_result_shape
from ._ops import ELEMENTWISE_OPS, ElementwiseOp
from ._shapes import broadcast_strides, contiguous_strides

__all__ = ["install", "install_dunders", "install_op"]


# ---------------------------------------------------------------------------------------------
# indexing
# ---------------------------------------------------------------------------------------------
def __getitem__(self: GpuArray, key: Any) -> GpuArray:
    """A view for basic indices (see ``_basic_index`` for the errors); integer-array and
    boolean-mask keys give a new array (``_advanced_indexing.advanced_getitem``)."""
    if is_advanced_key(key):
        return advanced_getitem(self, key)
    shape, strides, offset = self._basic_index(key)
    return self._view(self, shape, strides, offset)


def __setitem__(self: GpuArray, key: Any, value: Any) -> None:
    """Write ``value`` (a Python scalar, a GpuArray broadcastable to ``self[key]``, or
    anything ``asarray`` accepts) into the view ``self[key]``, cast to ``self.dtype`` as
    NumPy assignment does. Raises ``IndexError`` for bad indices, ``ValueError`` when the
    value does not broadcast, ``TypeError`` for complex or non-numeric values and
    ``OverflowError`` for Python ints out of the dtype's range. Integer-array and
    boolean-mask keys scatter (``_advanced_indexing.advanced_setitem``)."""
    if is_advanced_key(key):
        advanced_setitem(self, key, value)
        return
    view = self[key]
    if isinstance(value, (builtins.bool, int, float, complex, np.generic)):
        _dispatch.fill(view, value)
        return
    if not isinstance(value, GpuArray):
        if isinstance(value, (list, tuple, np.ndarray)):
            # shape check before the upload (which may itself run a kernel)
            shape = np.shape(value)
            broadcast_strides(shape, contiguous_strides(shape), view.shape)
        value = asarray(value)
    _dispatch.copy_into(view, value)


# ---------------------------------------------------------------------------------------------
# matmul
# ---------------------------------------------------------------------------------------------
def __matmul__(self: GpuArray, other: Any) -> GpuArray:
    if not isinstance(other, GpuArray):
        return NotImplemented
    return matmul(self, other)


def __rmatmul__(self: GpuArray, other: Any) -> GpuArray:
    if not isinstance(other, GpuArray):
        return NotImplemented
    return matmul(other, self)


def __imatmul__(self: GpuArray, other: Any) -> GpuArray:
    """``self @= other``: the product is written into this array's buffer (views see it).
    Raises, before any kernel runs, ``TypeError`` when the result dtype would differ from
    this array's (or dtypes are not numeric) and ``ValueError`` when its shape would."""
    if not isinstance(other, GpuArray):
        return NotImplemented
    dtype = result_type(self, other)
    if dtype != self.dtype:
        raise TypeError(f"in-place matmul would change the dtype {self.dtype} to {dtype}")
    shape = matmul_result_shape(self.shape, other.shape)
    if shape != self.shape:
        raise ValueError(f"in-place matmul would change the shape {self.shape} to {shape}")
    _dispatch.copy_into(self, matmul(self, other))
    return self


# ---------------------------------------------------------------------------------------------
# operator dunders, generated from the op table
# ---------------------------------------------------------------------------------------------
_OPERAND_TYPES = (GpuArray, builtins.bool, int, float, complex)


def _checked_power(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` (``__pow__``/``__ipow__``) with ``_elementwise_functions.check_power`` first."""
    def power(self: GpuArray, other: Any) -> Any:
        _elementwise_functions.check_power(self, other)
        return method(self, other)

    power.__name__, power.__doc__ = method.__name__, method.__doc__
    return power


def _unchecked(method: Callable[..., Any]) -> Callable[..., Any]:
    return method


def _make_binary(row: ElementwiseOp) -> Callable[..., Any]:
    method = binary_operator(row.name, False, GpuArray)
    method.__name__ = row.dunder or row.name
    method.__doc__ = f"``{row.name}(self, other)``: {row.doc}"
    return method


def _make_reflected(row: ElementwiseOp) -> Callable[..., Any]:
    method = binary_operator(row.name, True, GpuArray)
    method.__name__ = row.reflected_dunder or row.name
    method.__doc__ = f"``{row.name}(other, self)``: {row.doc}"
    return method


def _make_inplace(row: ElementwiseOp) -> Callable[..., Any]:
    def method(self: GpuArray, other: Any) -> Any:
        if not isinstance(other, _OPERAND_TYPES):
            return NotImplemented
        _dispatch.elementwise_op(row.name, self, other, out=self)
        return self

    method.__name__ = row.inplace_dunder or row.name
    method.__doc__ = (
        f"In-place ``{row.name}``, written into this array's buffer: {row.doc} Raises TypeError "
        "if the result dtype differs from this array's, ValueError if the shape would change."
    )
    return method


def _make_unary(row: ElementwiseOp) -> Callable[..., Any]:
    def method(self: GpuArray) -> GpuArray:
        return unary_op(name, self)

    name = row.name

    method.__name__ = row.dunder or row.name
    method.__doc__ = f"``{row.name}(self)``: {row.doc}"
    return method


def install_dunders(row: ElementwiseOp) -> None:
    """Set the operator methods of the table row ``row`` on GpuArray: its dunder and, for binary
    rows, the reflected and in-place forms (nothing for a row without a dunder)."""
    if row.dunder is None:
        return
    if row.arity == 1:
        setattr(GpuArray, row.dunder, _make_unary(row))
        return
    checked = _checked_power if row.name == "pow" else _unchecked
    setattr(GpuArray, row.dunder, checked(_make_binary(row)))
    if row.reflected_dunder:
        setattr(GpuArray, row.reflected_dunder, _make_reflected(row))
    if row.inplace_dunder:
        setattr(GpuArray, row.inplace_dunder, checked(_make_inplace(row)))


def install_op(row: ElementwiseOp) -> Callable[..., GpuArray]:
    """Make the namespace function (``_elementwise_functions.install``) and the operator dunders
    of a row added to the op table after import (``_backend.elementwise_ops.add_op``)."""
    func = _elementwise_functions.install(row)
    install_dunders(row)
    return func


def install() -> None:
    """Set the methods above and the op table's dunders on ``GpuArray``."""
    for method in (__getitem__, __setitem__, __matmul__, __rmatmul__, __imatmul__):
        setattr(GpuArray, method.__name__, method)
    for row in ELEMENTWISE_OPS.values():
        install_dunders(row)


install()
