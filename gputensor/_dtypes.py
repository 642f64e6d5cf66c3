"""Data types of gputensor: singletons, categories, promotion, Python-scalar rules.

Everything here is pure Python and device independent. The dtypes are the rows of the one
dtype table, ``_backend/wgsl_types.DTYPE_TABLE`` (which carries every fact about a dtype:
storage, compute type, lanes, adapter feature, loads, bit patterns, literals, conversions,
accumulator); this module makes one :class:`DType` singleton per row, the categories from the
rows' kinds and the promotion table from the kinds and NumPy's ``result_type``.

Supported dtypes are the Array API dtypes plus ``float16``:
``bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
float16, float32, float64, complex64, complex128``.

Each :class:`DType` carries the facts the namespace needs (``name``, ``numpy``, ``itemsize``,
``kind``), and its table row as :attr:`DType.info`; ``wgsl_compute`` (8/16-bit integers are
computed as ``i32``/``u32``, ``float16`` in ``f32``), ``packed`` (1- and 2-byte dtypes are
stored packed in ``u32`` words, with NumPy's byte layout) and ``feature`` (``shader-int64`` for
``int64``/``uint64``, ``shader-f64`` for ``float64`` and ``complex128``; ``float16`` and
``complex64`` need none) come from it.

Promotion
---------
``SAME_KIND_PROMOTIONS`` is the Array API 2024.12 promotion table (real and
complex floating dtypes promote together: ``float32`` with ``complex64`` gives
``complex64``, ``float64`` with ``complex64`` gives ``complex128``), plus
``float16`` as an extension (``float16`` with ``float16``, ``float32``,
``float64``, ``complex64``, ``complex128`` gives ``float16``, ``float32``,
``float64``, ``complex64``, ``complex128``).

``MIXED_KIND_PROMOTIONS`` is an extension the spec leaves undefined:
integer with floating dtypes promote as ``numpy.result_type`` does (for
example ``int8 + float16 -> float16``, ``int32 + float32 -> float64``).

Pairs missing from both tables raise ``TypeError``, as in array-api-strict:
``bool`` with any numeric dtype, ``uint64`` with any signed integer dtype
(NumPy gives ``float64``; the spec leaves it undefined) and integer with complex
dtypes.

Python scalars follow the spec's "mixing arrays with Python scalars" rules as
implemented by array-api-strict 2.6.1 (see :func:`promote_scalar`), with one
extension: a Python ``float`` with an integer array gives the default
floating dtype, as NumPy does, instead of raising.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._backend.wgsl_types import DTYPE_TABLE, DTypeInfo

__all__ = [
    "DType",
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "ALL_DTYPES",
    "DTYPES_BY_NAME",
    "DTYPE_CATEGORIES",
    "SAME_KIND_PROMOTIONS",
    "MIXED_KIND_PROMOTIONS",
    "PROMOTION_TABLE",
    "result_type_pair",
    "dtype_from_any",
    "as_dtype",
    "promote_scalar",
    "check_scalar_in_range",
]


@dataclass(frozen=True, eq=False, repr=False)
class DType:
    """A gputensor data type.  Instances are the module-level singletons, one per row of the
    dtype table (``_backend.wgsl_types.DTYPE_TABLE``, which carries every fact about the dtype:
    :attr:`info`).

    A DType compares equal to the NumPy spellings of the same type (``np.float32``,
    ``np.dtype('float32')``, ``'float32'``, ``'<f4'``, ``'f4'``), as CuPy's dtypes (which are
    NumPy's) do, and hashes as its NumPy dtype, so either finds the other in a dict.
    ``np.dtype(gt.float32)`` is ``np.dtype('float32')`` (through :attr:`dtype`), and NumPy's
    descriptive attributes (``type``, ``char``, ``str``, ...) are the NumPy dtype's. Instances
    pickle to the same singleton.
    """

    name: str
    wgsl_compute: str
    feature: str | None = None
    numpy: np.dtype[Any] = field(init=False)
    itemsize: int = field(init=False)
    kind: str = field(init=False)

    def __post_init__(self) -> None:
        np_dtype = np.dtype(self.name)
        object.__setattr__(self, "numpy", np_dtype)
        object.__setattr__(self, "itemsize", np_dtype.itemsize)
        object.__setattr__(self, "kind", np_dtype.kind)

    @classmethod
    def from_info(cls, info: DTypeInfo) -> DType:
        """The DType of a dtype table row."""
        return cls(info.name, wgsl_compute=info.compute, feature=info.feature)

    @property
    def info(self) -> DTypeInfo:
        """The dtype's row of the dtype table (storage, loads, literals, ...)."""
        return DTYPE_TABLE[self.name]

    @property
    def packed(self) -> builtins.bool:
        """True when values are stored packed in ``u32`` words (itemsize < 4)."""
        return self.info.packed

    @property
    def wgsl_storage(self) -> str:
        """WGSL element type of the storage buffer: ``u32`` for packed dtypes."""
        return self.info.array

    def __repr__(self) -> str:
        return f"gputensor.{self.name}"

    @property
    def dtype(self) -> np.dtype[Any]:
        """The NumPy dtype (what ``np.dtype(gt_dtype)`` returns)."""
        return self.numpy

    def __getattr__(self, name: str) -> Any:
        if name in _NUMPY_DTYPE_ATTRIBUTES:
            return getattr(self.numpy, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __eq__(self, other: object) -> builtins.bool:
        if other.__class__ is DType:
            return self.name == other.name  # type: ignore[attr-defined]
        if isinstance(other, (np.dtype, str, type)):
            try:
                return builtins.bool(np.dtype(other) == self.numpy)
            except (TypeError, ValueError):
                return False
        return False

    def __hash__(self) -> int:
        return hash(self.numpy)

    def __reduce__(self) -> str:
        # Pickle and copy by module attribute name, so the singleton survives.
        return self.name


#: NumPy dtype attributes a DType answers as its NumPy dtype (not ``shape``/``ndim``, which
#: would make a dtype look like an array to duck-typing libraries).
_NUMPY_DTYPE_ATTRIBUTES = frozenset({
    "type", "char", "str", "num", "descr", "byteorder", "alignment", "base", "fields", "names",
    "flags", "hasobject", "isbuiltin", "isnative", "isalignedstruct", "metadata", "subdtype",
})

#: name -> DType, one per row of the dtype table, in its order.
DTYPES_BY_NAME: dict[str, DType] = {name: DType.from_info(info) for name, info in DTYPE_TABLE.items()}
ALL_DTYPES: tuple[DType, ...] = tuple(DTYPES_BY_NAME.values())

bool = DTYPES_BY_NAME["bool"]
int8 = DTYPES_BY_NAME["int8"]
int16 = DTYPES_BY_NAME["int16"]
int32 = DTYPES_BY_NAME["int32"]
int64 = DTYPES_BY_NAME["int64"]
uint8 = DTYPES_BY_NAME["uint8"]
uint16 = DTYPES_BY_NAME["uint16"]
uint32 = DTYPES_BY_NAME["uint32"]
uint64 = DTYPES_BY_NAME["uint64"]
float16 = DTYPES_BY_NAME["float16"]
float32 = DTYPES_BY_NAME["float32"]
float64 = DTYPES_BY_NAME["float64"]
complex64 = DTYPES_BY_NAME["complex64"]
complex128 = DTYPES_BY_NAME["complex128"]

# ---------------------------------------------------------------------------
# Categories (the spec's names; "real floating-point" / "floating-point" /
# "complex floating-point" are array-api-strict's spellings of the same sets),
# from the dtypes' kinds.
# ---------------------------------------------------------------------------
def _of_kind(kinds: str) -> tuple[DType, ...]:
    return tuple(dt for dt in ALL_DTYPES if dt.kind in kinds)


_boolean = _of_kind("b")
_signed_integer = _of_kind("i")
_unsigned_integer = _of_kind("u")
_integer = _signed_integer + _unsigned_integer
_real_floating = _of_kind("f")
_complex_floating = _of_kind("c")
_real_numeric = _integer + _real_floating

DTYPE_CATEGORIES: dict[str, tuple[DType, ...]] = {
    "all": ALL_DTYPES,
    "real numeric": _real_numeric,
    "numeric": _real_numeric + _complex_floating,
    "integer": _integer,
    "integer or boolean": _boolean + _integer,
    "boolean": _boolean,
    "real floating": _real_floating,
    "floating": _real_floating + _complex_floating,
    "complex floating": _complex_floating,
    "signed integer": _signed_integer,
    "unsigned integer": _unsigned_integer,
    # array-api-strict spellings
    "real floating-point": _real_floating,
    "floating-point": _real_floating + _complex_floating,
    "complex floating-point": _complex_floating,
}

# ---------------------------------------------------------------------------
# Promotion, from the dtypes' kinds: every pair NumPy promotes, except the pairs
# the spec leaves undefined and array-api-strict rejects (bool with a number,
# uint64 with a signed integer, integer with complex). Within one kind, real with
# complex floating, and signed with unsigned integers, NumPy's result is the
# spec's; integer with real floating is the extension.
# ---------------------------------------------------------------------------
def _promotes(a: DType, b: DType) -> builtins.bool:
    if (a.kind == "b") != (b.kind == "b"):
        return False
    kinds = {a.kind, b.kind}
    if "c" in kinds and kinds & {"i", "u"}:
        return False  # integer with complex (array-api-strict rejects it)
    if kinds == {"i", "u"} and max(a, b, key=lambda d: d.kind == "u").itemsize == 8:
        return False  # uint64 with a signed integer
    return True


def _promotion_pairs(same_kind: builtins.bool) -> dict[tuple[DType, DType], DType]:
    table = {}
    for a in ALL_DTYPES:
        for b in ALL_DTYPES:
            mixed = (a.kind in "iu") != (b.kind in "iu") and "b" not in (a.kind, b.kind)
            if mixed == same_kind or not _promotes(a, b):
                continue
            table[a, b] = DTYPES_BY_NAME[np.result_type(a.numpy, b.numpy).name]
    return table


SAME_KIND_PROMOTIONS: dict[tuple[DType, DType], DType] = _promotion_pairs(same_kind=True)
# Extension: integer with floating, as numpy.result_type.
MIXED_KIND_PROMOTIONS: dict[tuple[DType, DType], DType] = _promotion_pairs(same_kind=False)
PROMOTION_TABLE: dict[tuple[DType, DType], DType] = {
    **SAME_KIND_PROMOTIONS,
    **MIXED_KIND_PROMOTIONS,
}


def result_type_pair(a: DType, b: DType) -> DType:
    """Return the dtype that ``a`` and ``b`` promote to (:data:`PROMOTION_TABLE`).

    Raises ``TypeError`` when the pair does not promote (bool with numeric,
    uint64 with a signed integer) or when an argument is not a :class:`DType`.
    """
    try:
        return PROMOTION_TABLE[a, b]
    except KeyError:
        pass
    except TypeError:  # unhashable argument
        pass
    for arg in (a, b):
        if not isinstance(arg, DType):
            raise TypeError(f"expected a gputensor dtype, got {arg!r}")
    raise TypeError(f"{a} and {b} cannot be type promoted together")


# ---------------------------------------------------------------------------
# Conversion from other dtype spellings.
# ---------------------------------------------------------------------------
_PYTHON_SCALAR_TYPES = (builtins.bool, int, float, complex)


def dtype_from_any(x: object) -> DType:
    """Convert ``x`` to a :class:`DType`.

    Accepts a :class:`DType`, a NumPy dtype, a NumPy scalar type
    (``np.float32``) or a dtype string NumPy understands (``"float32"``,
    ``"f4"``).  Raises ``TypeError`` for Python types (``bool``, ``int``,
    ``float``, ``complex``: creation functions pick their defaults), for
    ``None``, for anything that is not a dtype, and for dtypes gputensor does
    not support (object, str, datetime, clongdouble, ...).
    """
    if isinstance(x, DType):
        return x
    if isinstance(x, type) and x in _PYTHON_SCALAR_TYPES:
        raise TypeError(
            f"Python type {x.__name__} is not a dtype here; creation functions "
            "map Python types to default dtypes"
        )
    if not (
        isinstance(x, (np.dtype, str))
        or (isinstance(x, type) and issubclass(x, np.generic))
    ):
        raise TypeError(f"{x!r} is not a dtype")
    try:
        np_dtype = np.dtype(x)
    except TypeError as exc:
        raise TypeError(f"{x!r} is not a dtype") from exc
    try:
        return DTYPES_BY_NAME[np_dtype.name]
    except KeyError:
        supported = ", ".join(DTYPES_BY_NAME)
        raise TypeError(
            f"dtype {np_dtype.name!r} is not supported by gputensor "
            f"(supported: {supported})"
        ) from None


#: Python types as NumPy reads them where a dtype is expected (``dtype=float`` is float64).
_PYTHON_TYPE_DTYPES = {builtins.bool: "bool", int: "int64", float: "float64", complex: "complex128"}


def as_dtype(x: object) -> DType:
    """The :class:`DType` ``x`` spells, wherever the namespace takes a dtype: a DType, a NumPy
    dtype or scalar type, a dtype string (``'float32'``, ``'<f4'``, ``'f8'``), a Python type
    (NumPy's reading: ``float`` is float64, ``int`` int64, ``bool`` bool, ``complex``
    complex128) or an object whose ``dtype`` attribute is a NumPy dtype. Raises ``TypeError``
    (as :func:`dtype_from_any`) for anything else or a dtype gputensor lacks."""
    if x.__class__ is DType:
        return x  # type: ignore[return-value]
    if isinstance(x, type) and x in _PYTHON_TYPE_DTYPES:
        return dtype_from_any(_PYTHON_TYPE_DTYPES[x])
    if isinstance(getattr(x, "dtype", None), np.dtype) and not isinstance(x, (np.ndarray, np.generic)):
        return dtype_from_any(x.dtype)  # type: ignore[attr-defined]
    return dtype_from_any(x)


# ---------------------------------------------------------------------------
# Python scalars.
# ---------------------------------------------------------------------------
_INTEGER_BOUNDS: dict[DType, tuple[int, int]] = {
    dt: (int(np.iinfo(dt.numpy).min), int(np.iinfo(dt.numpy).max))
    for dt in DTYPE_CATEGORIES["integer"]
}


def check_scalar_in_range(dtype: DType, value: builtins.bool | int | float | complex) -> None:
    """Raise ``OverflowError`` if a Python int does not fit ``dtype``.

    For integer dtypes the int must lie within the dtype's bounds (as
    array-api-strict and NumPy 2 require).  For floating dtypes the int must
    convert to a Python float (NumPy raises the same ``OverflowError``; ints
    beyond a narrower float's range become ``inf`` as in NumPy).  Other
    values are not checked.
    """
    if isinstance(value, builtins.bool) or not isinstance(value, int):
        return
    if dtype in _INTEGER_BOUNDS:
        low, high = _INTEGER_BOUNDS[dtype]
        if not low <= value <= high:
            raise OverflowError(
                f"Python int {value} is out of bounds for {dtype} "
                f"(range [{low}, {high}])"
            )
    elif dtype.kind in "fc":
        float(value)  # raises OverflowError: int too large to convert to float


def promote_scalar(
    dtype: DType,
    value: builtins.bool | int | float | complex,
    *,
    default_float: DType = float64,
) -> DType:
    """Return the dtype of ``value`` (a Python scalar) mixed with a ``dtype`` array.

    Rules (array-api-strict 2.6.1, checked by tests):

    * ``bool`` scalars mix only with bool arrays; otherwise ``TypeError``.
    * ``int`` scalars mix with integer and floating arrays (result: the
      array's dtype) and raise ``TypeError`` with bool arrays; an int out of
      range raises ``OverflowError`` (:func:`check_scalar_in_range`).
    * ``float`` scalars mix with floating arrays (result: the array's dtype)
      and raise ``TypeError`` with bool arrays.  Extension: with integer
      arrays the result is ``default_float`` (NumPy's behaviour; strict
      raises).
    * ``complex`` scalars mix with floating arrays: complex arrays keep their
      dtype, real floating arrays give the complex dtype of their precision
      (``float32`` -> ``complex64``, ``float64`` -> ``complex128``, and
      ``float16`` -> ``complex64``); ``TypeError`` with bool and integer
      arrays (as array-api-strict).
    * anything else raises ``TypeError``.
    """
    if isinstance(value, builtins.bool):
        if dtype != bool:
            raise TypeError("Python bool scalars can only be promoted with bool arrays")
        return dtype
    if isinstance(value, int):
        if dtype == bool:
            raise TypeError("Python int scalars cannot be promoted with bool arrays")
        check_scalar_in_range(dtype, value)
        return dtype
    if isinstance(value, float):
        if dtype == bool:
            raise TypeError("Python float scalars cannot be promoted with bool arrays")
        if dtype.kind in "fc":
            return dtype
        return default_float
    if isinstance(value, complex):
        if dtype.kind == "c":
            return dtype
        if dtype.kind == "f":
            return complex128 if dtype.itemsize == 8 else complex64
        raise TypeError("Python complex scalars can only be promoted with floating-point arrays")
    raise TypeError(
        f"expected a Python scalar (bool, int, float), got {type(value).__name__}"
    )
