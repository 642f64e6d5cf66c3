"""Array API "data type functions" (and ``astype``).

``result_type``, ``can_cast``, ``finfo``, ``iinfo`` and ``isdtype`` need no device, except that
``result_type`` of an integer with a Python ``float`` asks the device for its default floating
dtype (float32).  Arrays
are accepted duck-typed: any object whose ``.dtype`` is a gputensor
:class:`~gputensor._dtypes.DType`.  Errors follow array-api-strict 2.6.1
(exception types checked by tests).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from ._array_object import GpuArray
from ._devices import DEFAULT_DEVICE, check_device, default_dtype
from ._dispatch import contiguous_copy
from ._dtypes import (
    DTYPE_CATEGORIES,
    DTYPES_BY_NAME,
    float64 as _dtypes_float64,
    SAME_KIND_PROMOTIONS,
    DType,
    as_dtype,
    promote_scalar,
    result_type_pair,
)

__all__ = [
    "finfo_object",
    "iinfo_object",
    "result_type",
    "can_cast",
    "finfo",
    "iinfo",
    "isdtype",
    "astype",
]

PythonScalar = Union[bool, int, float, complex]
Kind = Union[DType, str, tuple[Union[DType, str], ...]]


def _dtype_of(x: Any) -> DType | None:
    """Return ``x`` if it is a DType, ``x.dtype`` if that is one, the DType a NumPy dtype, dtype
    string or Python type spells (``as_dtype``), else None."""
    if isinstance(x, DType):
        return x
    dtype = getattr(x, "dtype", None)
    if isinstance(dtype, DType):
        return dtype
    if isinstance(x, (np.dtype, str, type)):
        try:
            return as_dtype(x)
        except TypeError:
            return None
    return None


def result_type(*arrays_and_dtypes: Any) -> DType:
    """Return the dtype that results from promoting all arguments together.

    Arguments are dtypes, arrays (objects with a DType ``.dtype``) and Python
    scalars (``bool``, ``int``, ``float``, ``complex``).  Arrays and dtypes
    are promoted with the promotion table first; each scalar is then mixed in
    with the weak-scalar rules of :func:`~gputensor._dtypes.promote_scalar`.
    A Python ``float`` with an integer result gives the device's default real
    floating dtype (``float32``), exactly as the operators do
    (``int_array + 1.5`` is ``float32``), so ``result_type`` always predicts
    the dtype an operation returns.

    Raises ``TypeError`` for any other argument, for pairs that do not
    promote, for complex scalars and for scalars of the wrong kind;
    ``OverflowError`` for an int out of the integer result's range;
    ``ValueError`` when no array or dtype is given.
    """
    dtypes: list[DType] = []
    scalars: list[PythonScalar] = []
    for arg in arrays_and_dtypes:
        dtype = _dtype_of(arg)
        if dtype is not None:
            dtypes.append(dtype)
        elif isinstance(arg, (bool, int, float, complex)):
            scalars.append(arg)
        else:
            raise TypeError(
                "result_type() inputs must be arrays, dtypes, or Python scalars, "
                f"not {type(arg).__name__}"
            )
    if not dtypes:
        raise ValueError("at least one array or dtype is required")

    result = dtypes[0]
    for dtype in dtypes[1:]:
        result = result_type_pair(result, dtype)
    for scalar in scalars:
        default_float = _dtypes_float64
        if isinstance(scalar, float) and result.kind in "iu":
            # the one case that needs the default float (looked up only then: no device
            # access for pure dtype arithmetic)
            default_float = default_dtype("float")
        result = promote_scalar(result, scalar, default_float=default_float)
    return result


def can_cast(from_: Any, to: DType, /) -> bool:
    """Return whether ``from_`` can be cast to ``to`` by type promotion.

    ``from_`` is a dtype or an array; True when ``from_`` and ``to`` are of
    the same kind (bool, integer or floating: real and complex floating count as one) and
    promote to ``to``.  The
    integer/floating promotion extension does not make cross-kind casts safe,
    matching the spec and array-api-strict.

    Raises ``TypeError`` if ``from_`` is neither a dtype nor an array, or
    ``to`` is not a dtype.
    """
    from_dtype = _dtype_of(from_)
    if from_dtype is None:
        raise TypeError(f"{from_=}, but should be an array or dtype")
    to = as_dtype(to)
    return SAME_KIND_PROMOTIONS.get((from_dtype, to)) == to


@dataclass(frozen=True, eq=False)
class finfo_object:
    """Machine limits of a floating dtype (the spec's ``finfo`` result)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: DType


@dataclass(frozen=True, eq=False)
class iinfo_object:
    """Machine limits of an integer dtype (the spec's ``iinfo`` result)."""

    bits: int
    max: int
    min: int
    dtype: DType


def _make_finfo(dtype: DType) -> finfo_object:
    info = np.finfo(dtype.numpy)
    return finfo_object(
        bits=int(info.bits),
        eps=float(info.eps),
        max=float(info.max),
        min=float(info.min),
        smallest_normal=float(info.smallest_normal),
        dtype=dtype,
    )


def _make_iinfo(dtype: DType) -> iinfo_object:
    info = np.iinfo(dtype.numpy)
    return iinfo_object(
        bits=int(info.bits), max=int(info.max), min=int(info.min), dtype=dtype
    )


_FINFO: dict[DType, finfo_object] = {
    dt: _make_finfo(dt) for dt in DTYPE_CATEGORIES["real floating"]
}
_IINFO: dict[DType, iinfo_object] = {
    dt: _make_iinfo(dt) for dt in DTYPE_CATEGORIES["integer"]
}


def finfo(type: Any, /) -> finfo_object:
    """Return machine limits for a floating dtype (or an array of one).

    Values are Python floats taken from NumPy; ``dtype`` is the gputensor
    dtype. For a complex dtype the limits are those of its real component
    (``finfo(complex64)`` describes float32, with ``dtype`` float32, as the
    spec and array-api-strict give).  Raises ``TypeError`` if ``type`` is not a dtype or array and
    ``ValueError`` if its dtype is not floating.
    """
    dtype = _dtype_of(type)
    if dtype is None:
        raise TypeError(f"'type' must be a dtype or array, not {type!r}")
    try:
        return _FINFO[dtype]
    except KeyError:
        if dtype.kind == "c":
            return _FINFO[DTYPES_BY_NAME[dtype.info.component]]
        raise ValueError(f"finfo() requires a floating dtype, got {dtype}") from None


def iinfo(type: Any, /) -> iinfo_object:
    """Return machine limits for an integer dtype (or an array of one).

    Raises ``TypeError`` if ``type`` is not a dtype or array and
    ``ValueError`` if its dtype is not an integer dtype.
    """
    dtype = _dtype_of(type)
    if dtype is None:
        raise TypeError(f"'type' must be a dtype or array, not {type!r}")
    try:
        return _IINFO[dtype]
    except KeyError:
        raise ValueError(f"iinfo() requires an integer dtype, got {dtype}") from None


# The spec's isdtype kinds, mapped to dtype categories.
_ISDTYPE_KINDS: dict[str, tuple[DType, ...]] = {
    "bool": DTYPE_CATEGORIES["boolean"],
    "signed integer": DTYPE_CATEGORIES["signed integer"],
    "unsigned integer": DTYPE_CATEGORIES["unsigned integer"],
    "integral": DTYPE_CATEGORIES["integer"],
    "real floating": DTYPE_CATEGORIES["real floating"],
    "complex floating": DTYPE_CATEGORIES["complex floating"],
    "numeric": DTYPE_CATEGORIES["numeric"],
}


def isdtype(dtype: DType, kind: Kind) -> bool:
    """Return whether ``dtype`` is of the given ``kind``.

    ``kind`` is a dtype (equality), one of the spec's kind names (``'bool'``,
    ``'signed integer'``, ``'unsigned integer'``, ``'integral'``,
    ``'real floating'``, ``'complex floating'``, ``'numeric'``) or a flat
    tuple of those (any match; evaluated left to right, stopping at the first
    match).  ``float16`` is a real floating dtype.

    Raises ``TypeError`` if ``dtype`` is not a dtype, ``kind`` has an
    unsupported type or a tuple contains a tuple; ``ValueError`` for an
    unknown kind name.
    """
    if not isinstance(dtype, DType):
        if not isinstance(dtype, (np.dtype, str, type)):
            raise TypeError(f"'dtype' must be a dtype, not a {type(dtype)!r}")
        dtype = as_dtype(dtype)
    if isinstance(kind, tuple):
        if any(isinstance(k, tuple) for k in kind):
            raise TypeError("'kind' must be a dtype, str, or tuple of dtypes and strs")
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        try:
            return dtype in _ISDTYPE_KINDS[kind]
        except KeyError:
            raise ValueError(f"Unrecognized data type kind: {kind!r}") from None
    if isinstance(kind, (DType, np.dtype, type)):
        return dtype == as_dtype(kind)
    raise TypeError(
        "'kind' must be a dtype, str, or tuple of dtypes and strs, "
        f"not {type(kind).__name__}"
    )



def astype(x: Any, dtype: DType, /, *, copy: bool = True, device: Any = None) -> Any:
    """Return ``x`` converted to ``dtype`` (NumPy's ``astype`` casting: floats truncate toward
    zero into integers, numbers become bool by ``!= 0``; NaN/out-of-range float to integer
    values are unspecified).

    ``copy=False`` returns ``x`` itself when the dtype already matches (and the device is the
    same), else a new array. Real to complex sets the imaginary part to 0. Raises
    ``TypeError`` if ``x`` is not a gputensor array, ``dtype`` is not a dtype or the device
    lacks it, and for a complex ``x`` with a real (or bool) ``dtype`` (the spec does not permit
    that cast; array-api-strict raises); ``ValueError`` for another device.
    """
    if not isinstance(x, GpuArray):
        raise TypeError(f"astype expects a gputensor array, got {type(x).__name__}")
    dtype = as_dtype(dtype)
    check_device(device)
    DEFAULT_DEVICE.check_dtype(dtype)
    if not copy and dtype == x.dtype:
        return x
    if x.dtype.kind == "c" and dtype.kind != "c":
        raise TypeError(f"casting {x.dtype} to {dtype} is not permitted (the Array API "
                        "standard does not allow complex to real casts)")
    return contiguous_copy(x, dtype)
