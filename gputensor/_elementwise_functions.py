"""Array API elementwise functions, generated from the op table ``_ops.ELEMENTWISE_OPS`` (one
function per row, with the row's operator dunders: :func:`install`).

Every function checks its arguments' dtypes against the row's category, promotes them (Python
scalars are weak, in either position of a binary function), broadcasts and runs one generic
elementwise kernel (``_dispatch.elementwise_op``).  ``clip`` has its own signature and rules and
is written out here.  ``bitwise_left_shift``/``bitwise_right_shift`` follow NumPy for negative or
too-large shift counts (no error, unlike array-api-strict which raises ``ValueError``).
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _dispatch, _dtypes
from ._elementwise_fast import binary_function, unary_op
from ._array_object import GpuArray
from ._ops import ELEMENTWISE_OPS, ElementwiseOp

__all__ = sorted(ELEMENTWISE_OPS) + ["clip"]


def check_power(base: Any, exponent: Any) -> None:
    """NumPy's rule for ``base ** exponent`` (``pow``, ``**``, ``**=``): ``ValueError`` for an
    integer array ``base`` and a negative Python int ``exponent``. (A device array of exponents
    is not read back: negative entries give ``trunc(base ** exponent)``, i.e. 1 for base 1, +-1
    for base -1, else 0.)"""
    if (type(exponent) is int and exponent < 0 and isinstance(base, GpuArray)
            and base._dtype.kind in "iu"):
        raise ValueError("Integers to negative integer powers are not allowed.")


def _make_function(row: ElementwiseOp) -> Callable[..., GpuArray]:
    name = row.name
    if row.arity == 1:
        def unary(x: GpuArray, /) -> GpuArray:
            if not isinstance(x, GpuArray):
                raise TypeError(f"{row.name} expects a gputensor array, got {type(x).__name__}")
            return unary_op(name, x)

        func = unary
    else:
        def binary(x1: GpuArray | int | float | bool, x2: GpuArray | int | float | bool, /) -> GpuArray:
            if name == "pow":
                check_power(x1, x2)
            return binary_function(name, x1, x2)

        func = binary
    func.__name__ = row.name
    func.__qualname__ = row.name
    func.__module__ = "gputensor"
    kind = "Python scalars are weak (spec rules)." if row.arity == 2 else ""
    func.__doc__ = (
        f"{row.doc}\n\nInputs: {row.category} dtypes. {kind}\n"
        f"Raises TypeError for other dtypes or pairs that do not promote, ValueError when "
        f"shapes do not broadcast."
    )
    return func


def _define(row: ElementwiseOp) -> Callable[..., GpuArray]:
    """Make the namespace function of the table row ``row`` (into this module and its
    ``__all__``); its operator dunders are ``_operators.install_dunders``'s."""
    func = _make_function(row)
    globals()[row.name] = func
    if row.name not in __all__:
        __all__.append(row.name)
    return func


for _row in ELEMENTWISE_OPS.values():
    _define(_row)
del _row


def install(row: ElementwiseOp) -> Callable[..., GpuArray]:
    """Make the namespace function of a row added to the table after import
    (``_backend.elementwise_ops.add_op``) and put it into ``gputensor``'s namespace (every row of
    the table at import is made the same way, by ``_define``); ``_operators.install_op`` adds
    the row's operator dunders too."""
    func = _define(row)
    package = sys.modules[__package__ or "gputensor"]
    setattr(package, row.name, func)
    if row.name not in package.__all__:
        package.__all__.append(row.name)
    return func


def clip(x: GpuArray, /, min: GpuArray | int | float | None = None,
         max: GpuArray | int | float | None = None) -> GpuArray:
    """Clamp ``x`` to ``[min, max]``; the result has ``x``'s dtype and the broadcast shape.

    ``min``/``max`` are None, Python ints/floats or arrays; NaN in any operand propagates.
    Python ints beyond the dtype's range mean "no bound". Raises ``TypeError`` for non-real
    dtypes, a float bound with an integer ``x`` and an integer array bound with a floating
    ``x``; ``ValueError`` when shapes do not broadcast.
    """
    if not isinstance(x, GpuArray):
        raise TypeError(f"clip expects a gputensor array, got {type(x).__name__}")
    real = _dtypes.DTYPE_CATEGORIES["real numeric"]
    if x.dtype not in real:
        raise TypeError(f"clip only accepts real numeric dtypes, got {x.dtype}")
    bounds: list[Any] = []
    for name, bound in (("min", min), ("max", max)):
        if isinstance(bound, GpuArray):
            if bound.dtype not in real:
                raise TypeError(f"clip {name} must have a real numeric dtype, got {bound.dtype}")
            if x.dtype.kind in "iu" and bound.dtype.kind == "f":
                raise TypeError(f"{name} must be integral when x is integral")
            if x.dtype.kind == "f" and bound.dtype.kind in "iu":
                raise TypeError(f"{name} must be floating-point when x is floating-point")
            bounds.append(bound)
            continue
        if bound is not None and (type(bound) not in (int, float)):
            raise TypeError(f"{name} must be None, int, float or an array, not {type(bound).__name__}")
        if isinstance(bound, float) and x.dtype.kind in "iu":
            raise TypeError(f"{name} must be integral when x is integral")
        if x.dtype.kind in "iu":
            info = np.iinfo(x.dtype.numpy)
            low, high = int(info.min), int(info.max)
            if bound is None:
                bound = low if name == "min" else high
            bound = builtins.min(builtins.max(bound, low), high)
        elif bound is None:
            bound = float("-inf") if name == "min" else float("inf")
        bounds.append((_dispatch.scalar_value(bound, x.dtype), x.dtype))
    return _dispatch.run_elementwise(
        "clip", [x, *bounds], [x.dtype, x.dtype, x.dtype], x.dtype, x.dtype
    )
