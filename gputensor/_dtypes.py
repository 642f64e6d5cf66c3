"""Data types of gputensor: singletons, categories, promotion, Python-scalar rules.

Everything here is pure Python and device independent (no wgpu import).

Supported dtypes are the Array API real dtypes plus ``float16``:
``bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
float16, float32, float64``.  Complex dtypes are not supported yet.

Each :class:`DType` carries the facts the kernel layer needs:

* ``wgsl_compute``: the WGSL scalar type used to *compute* on a value
  (8/16-bit integers are widened to ``i32``/``u32``, ``float16`` is computed
  in ``f32``).
* ``packed``: 1- and 2-byte dtypes are stored packed in ``u32`` words, with a
  byte layout identical to NumPy's, so host buffers upload unchanged.
* ``feature``: the WebGPU feature the dtype needs (``shader-int64`` for
  ``int64``/``uint64``, ``shader-f64`` for ``float64``).  ``float16`` needs no
  feature: it is emulated through ``pack2x16float``/``unpack2x16float``.

Promotion
---------
``SAME_KIND_PROMOTIONS`` is the Array API 2024.12 promotion table restricted
to real dtypes, plus ``float16`` as an extension (``float16`` with ``float16``,
``float32``, ``float64`` gives ``float16``, ``float32``, ``float64``).

``MIXED_KIND_PROMOTIONS`` is an extension the spec leaves undefined:
integer with floating dtypes promote as ``numpy.result_type`` does (for
example ``int8 + float16 -> float16``, ``int32 + float32 -> float64``).

Pairs missing from both tables raise ``TypeError``, as in array-api-strict:
``bool`` with any numeric dtype, and ``uint64`` with any signed integer dtype
(NumPy gives ``float64``; the spec leaves it undefined).

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
    "ALL_DTYPES",
    "DTYPES_BY_NAME",
    "DTYPE_CATEGORIES",
    "SAME_KIND_PROMOTIONS",
    "MIXED_KIND_PROMOTIONS",
    "PROMOTION_TABLE",
    "result_type_pair",
    "dtype_from_any",
    "promote_scalar",
    "check_scalar_in_range",
]


@dataclass(frozen=True, eq=False, repr=False)
class DType:
    """A gputensor data type.  Instances are the module-level singletons.

    Equality holds only between :class:`DType` objects (a NumPy dtype never
    compares equal; use :attr:`numpy` to convert).  Instances are hashable
    and pickle to the same singleton.
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

    @property
    def packed(self) -> builtins.bool:
        """True when values are stored packed in ``u32`` words (itemsize < 4)."""
        return self.itemsize < 4

    @property
    def wgsl_storage(self) -> str:
        """WGSL element type of the storage buffer: ``u32`` for packed dtypes."""
        return "u32" if self.packed else self.wgsl_compute

    def __repr__(self) -> str:
        return f"gputensor.{self.name}"

    def __eq__(self, other: object) -> builtins.bool:
        if not isinstance(other, DType):
            return False
        return self.name == other.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __reduce__(self) -> str:
        # Pickle and copy by module attribute name, so the singleton survives.
        return self.name


# The dtype table: one row per dtype (name, WGSL compute type, WebGPU feature).
bool = DType("bool", wgsl_compute="bool")
int8 = DType("int8", wgsl_compute="i32")
int16 = DType("int16", wgsl_compute="i32")
int32 = DType("int32", wgsl_compute="i32")
int64 = DType("int64", wgsl_compute="i64", feature="shader-int64")
uint8 = DType("uint8", wgsl_compute="u32")
uint16 = DType("uint16", wgsl_compute="u32")
uint32 = DType("uint32", wgsl_compute="u32")
uint64 = DType("uint64", wgsl_compute="u64", feature="shader-int64")
float16 = DType("float16", wgsl_compute="f32")
float32 = DType("float32", wgsl_compute="f32")
float64 = DType("float64", wgsl_compute="f64", feature="shader-f64")

ALL_DTYPES: tuple[DType, ...] = (
    bool,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
    float16,
    float32,
    float64,
)
DTYPES_BY_NAME: dict[str, DType] = {dt.name: dt for dt in ALL_DTYPES}

# ---------------------------------------------------------------------------
# Categories (the spec's names; "real floating-point" / "floating-point" /
# "complex floating-point" are array-api-strict's spellings of the same sets).
# ---------------------------------------------------------------------------
_boolean = (bool,)
_signed_integer = (int8, int16, int32, int64)
_unsigned_integer = (uint8, uint16, uint32, uint64)
_integer = _signed_integer + _unsigned_integer
_real_floating = (float16, float32, float64)
_real_numeric = _integer + _real_floating

DTYPE_CATEGORIES: dict[str, tuple[DType, ...]] = {
    "all": ALL_DTYPES,
    "real numeric": _real_numeric,
    "numeric": _real_numeric,  # no complex dtypes yet
    "integer": _integer,
    "integer or boolean": _boolean + _integer,
    "boolean": _boolean,
    "real floating": _real_floating,
    "floating": _real_floating,
    "complex floating": (),
    "signed integer": _signed_integer,
    "unsigned integer": _unsigned_integer,
    # array-api-strict spellings
    "real floating-point": _real_floating,
    "floating-point": _real_floating,
    "complex floating-point": (),
}

# ---------------------------------------------------------------------------
# Promotion.  Each unordered pair is listed once; the tables are symmetric.
# ---------------------------------------------------------------------------
_SAME_KIND_PAIRS: dict[tuple[DType, DType], DType] = {
    (bool, bool): bool,
    # signed integers
    (int8, int8): int8,
    (int8, int16): int16,
    (int8, int32): int32,
    (int8, int64): int64,
    (int16, int16): int16,
    (int16, int32): int32,
    (int16, int64): int64,
    (int32, int32): int32,
    (int32, int64): int64,
    (int64, int64): int64,
    # unsigned integers
    (uint8, uint8): uint8,
    (uint8, uint16): uint16,
    (uint8, uint32): uint32,
    (uint8, uint64): uint64,
    (uint16, uint16): uint16,
    (uint16, uint32): uint32,
    (uint16, uint64): uint64,
    (uint32, uint32): uint32,
    (uint32, uint64): uint64,
    (uint64, uint64): uint64,
    # signed with unsigned (uint64 with signed is undefined)
    (int8, uint8): int16,
    (int8, uint16): int32,
    (int8, uint32): int64,
    (int16, uint8): int16,
    (int16, uint16): int32,
    (int16, uint32): int64,
    (int32, uint8): int32,
    (int32, uint16): int32,
    (int32, uint32): int64,
    (int64, uint8): int64,
    (int64, uint16): int64,
    (int64, uint32): int64,
    # real floating (float16 rows are an extension)
    (float16, float16): float16,
    (float16, float32): float32,
    (float16, float64): float64,
    (float32, float32): float32,
    (float32, float64): float64,
    (float64, float64): float64,
}

# Extension: integer with floating, as numpy.result_type (checked by a test).
_MIXED_KIND_PAIRS: dict[tuple[DType, DType], DType] = {
    (int8, float16): float16,
    (int8, float32): float32,
    (int8, float64): float64,
    (int16, float16): float32,
    (int16, float32): float32,
    (int16, float64): float64,
    (int32, float16): float64,
    (int32, float32): float64,
    (int32, float64): float64,
    (int64, float16): float64,
    (int64, float32): float64,
    (int64, float64): float64,
    (uint8, float16): float16,
    (uint8, float32): float32,
    (uint8, float64): float64,
    (uint16, float16): float32,
    (uint16, float32): float32,
    (uint16, float64): float64,
    (uint32, float16): float64,
    (uint32, float32): float64,
    (uint32, float64): float64,
    (uint64, float16): float64,
    (uint64, float32): float64,
    (uint64, float64): float64,
}


def _symmetric(
    pairs: dict[tuple[DType, DType], DType],
) -> dict[tuple[DType, DType], DType]:
    table = dict(pairs)
    table.update({(b, a): result for (a, b), result in pairs.items()})
    return table


SAME_KIND_PROMOTIONS: dict[tuple[DType, DType], DType] = _symmetric(_SAME_KIND_PAIRS)
MIXED_KIND_PROMOTIONS: dict[tuple[DType, DType], DType] = _symmetric(_MIXED_KIND_PAIRS)
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
    not support (complex, object, str, datetime, ...).
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
            f"(supported: {supported}; complex dtypes are not supported yet)"
        ) from None


# ---------------------------------------------------------------------------
# Python scalars.
# ---------------------------------------------------------------------------
_INTEGER_BOUNDS: dict[DType, tuple[int, int]] = {
    dt: (int(np.iinfo(dt.numpy).min), int(np.iinfo(dt.numpy).max))
    for dt in DTYPE_CATEGORIES["integer"]
}


def check_scalar_in_range(dtype: DType, value: builtins.bool | int | float) -> None:
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
    elif dtype.kind == "f":
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
    * ``complex`` scalars raise ``TypeError``: complex is not supported yet.
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
        if dtype.kind == "f":
            return dtype
        return default_float
    if isinstance(value, complex):
        raise TypeError(
            "Python complex scalars are not supported: gputensor has no "
            "complex dtypes yet"
        )
    raise TypeError(
        f"expected a Python scalar (bool, int, float), got {type(value).__name__}"
    )
