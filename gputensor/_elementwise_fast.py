"""The host-time fast paths of small elementwise calls: :func:`binary_operator` makes the
operator methods, :func:`binary_function` and :func:`unary_op` serve the namespace functions.
Each goes from the cached dtype resolution (``_RESOLVED``) straight to
``_fusion_build.lazy_binary`` / ``lazy_unary``, or with fusion off (operators) from the cached
ready launch (``_EAGER``) to the recorded kernel, and otherwise to
``_elementwise_op.elementwise_op``."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import _array_object as _ao
from . import _fusion
from ._elementwise_cache import _EAGER, _RESOLVED
from ._elementwise_op import elementwise_op
from ._fusion_build import lazy_binary, lazy_unary
from ._runtime import backend
from ._scalars import scalar_value
from ._shapes import broadcast_shapes

if TYPE_CHECKING:
    from ._array_object import GpuArray

__all__ = ["binary_operator", "binary_function", "unary_op"]


def _broadcast2(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """``broadcast_shapes(a, b)``, remembered per pair of shapes (the operators of a loop meet
    the same few pairs); ``ValueError`` as there."""
    shape = _BROADCAST2.get((a, b))
    if shape is None:
        shape = broadcast_shapes(a, b)
        if len(_BROADCAST2) >= 1024:
            _BROADCAST2.clear()
        _BROADCAST2[(a, b)] = shape
    return shape


#: (shape, shape) -> the shape they broadcast to (``_broadcast2``).
_BROADCAST2: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, ...]] = {}


def binary_operator(name: str, reflected: builtins.bool, array_type: type) -> Callable[[Any, Any], Any]:
    """The operator method ``self <op> other`` (``reflected``: ``other <op> self``) of the table
    op ``name`` for the array class ``array_type``: ``elementwise_op`` (``NotImplemented`` for
    operands of other types). With fusion on, a call whose dtype resolution is known
    (``_RESOLVED``) goes straight to ``_fusion_build.lazy_binary`` (the host time of a small op)."""
    operand_types = (array_type, builtins.bool, int, float, complex)

    def method(self: Any, other: Any) -> Any:
        fz = _fusion
        if not fz._enabled:
            # the ready eager launch of this structure (``_EAGER``, keyed as ``_eager_key`` does)
            if isinstance(other, array_type):
                if reflected:
                    key = (name, other._dtype.name, other._shape, other._strides,
                           self._dtype.name, self._shape, self._strides)
                    arrays = [other, self]
                else:
                    key = (name, self._dtype.name, self._shape, self._strides,
                           other._dtype.name, other._shape, other._strides)
                    arrays = [self, other]
                scalars: Any = ()
            else:
                key = ((name, type(other), self._dtype.name, self._shape, self._strides) if reflected
                       else (name, self._dtype.name, self._shape, self._strides, type(other)))
                arrays = [self]
                scalars = (other,)
            call = _EAGER.get(key)
            if call is not None and call.backend is backend():
                return call(arrays, scalars)
        else:
            other_array = isinstance(other, array_type)
            other_key = other._dtype.name if other_array else type(other)
            op = _RESOLVED.get((name, other_key, self._dtype.name) if reflected
                               else (name, self._dtype.name, other_key))
            if op is not None:
                shape = self._shape
                if other_array:
                    if other._shape != shape:  # (the shapes in argument order, for the error)
                        shape = _broadcast2(other._shape, shape) if reflected else _broadcast2(shape, other._shape)
                    value = other
                elif op.float_scalars:
                    value = (float(other), op.compute)
                else:
                    value = (scalar_value(other, op.compute), op.compute)
                if 0 not in shape:
                    if reflected:
                        return lazy_binary(op, shape, value, self)
                    return lazy_binary(op, shape, self, value)
        if not isinstance(other, operand_types):
            return NotImplemented
        if reflected:
            return elementwise_op(name, other, self)
        return elementwise_op(name, self, other)

    return method


def binary_function(name: str, a: Any, b: Any) -> GpuArray:
    """``elementwise_op(name, a, b)`` (the binary functions, ``gt.multiply(a, b)``): with fusion
    on, a call whose dtype resolution is known (``_RESOLVED``) goes straight to
    ``_fusion_build.lazy_binary`` (as the operators do: ``binary_operator``)."""
    fz = _fusion
    if fz._enabled:
        array_type = _ao.GpuArray
        is_a = isinstance(a, array_type)
        is_b = isinstance(b, array_type)
        op = _RESOLVED.get((name, a._dtype.name if is_a else type(a), b._dtype.name if is_b else type(b)))
        if op is not None:
            x, y = a, b
            if is_a:
                shape = a._shape
                if is_b:
                    if b._shape != shape:
                        shape = _broadcast2(shape, b._shape)
                else:
                    y = (float(b) if op.float_scalars else scalar_value(b, op.compute), op.compute)
            else:
                shape = b._shape
                x = (float(a) if op.float_scalars else scalar_value(a, op.compute), op.compute)
            if 0 not in shape:
                return lazy_binary(op, shape, x, y)
    return elementwise_op(name, a, b)


def unary_op(name: str, x: Any) -> GpuArray:
    """``elementwise_op(name, x)`` (the unary functions and operators): with fusion on, a call
    whose dtype resolution is known (``_RESOLVED``) goes straight to ``_fusion_build.lazy_unary``."""
    fz = _fusion
    if fz._enabled and isinstance(x, _ao.GpuArray):
        op = _RESOLVED.get((name, x._dtype.name))
        if op is not None and 0 not in x._shape:
            return lazy_unary(op, x)
    return elementwise_op(name, x)
