"""Python scalars as the values scalar operands carry: :func:`scalar_value` converts a weak
Python (or NumPy) number to what a kernel of a given dtype sees, with NumPy's range and kind
errors."""

from __future__ import annotations

import builtins
import math
from typing import Any, Union

import numpy as np

from . import _dtypes
from ._dtypes import DType

__all__ = ["PythonScalar", "scalar_value"]

PythonScalar = Union[builtins.bool, int, float, complex]


def scalar_value(value: PythonScalar, dtype: DType) -> Any:
    """``value`` as the Python number a scalar operand of ``dtype`` carries.

    Integers must fit integer dtypes (``OverflowError`` otherwise); float16 values are rounded to
    float16 first (so the op sees what NumPy would); bool dtypes take ``bool(value)``; complex
    dtypes take ``complex(value)``. A complex value for a real dtype raises ``TypeError``.
    """
    kind = dtype.kind
    if kind == "f" and dtype.itemsize != 2:
        return float(value)  # OverflowError for ints beyond the float range
    if kind == "b":
        return builtins.bool(value)
    if kind in "iu":
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError(f"cannot convert {value} to integer dtype {dtype}")
            value = int(value)
        _dtypes.check_scalar_in_range(dtype, int(value))
        return int(value)
    if kind == "c":
        if isinstance(value, int) and not isinstance(value, builtins.bool):
            float(value)  # OverflowError for ints beyond the float range
        return complex(value)
    if isinstance(value, complex):
        raise TypeError(f"a complex value cannot be converted to {dtype}")
    with np.errstate(over="ignore"):
        return float(dtype.numpy.type(value))  # (rounded to the narrow float)
