"""Tests for gputensor._dtypes and gputensor._data_type_functions.

The expectations come from independent sources: a test-side dtype table,
array-api-strict (spec promotion, scalar rules, error types) and NumPy
(mixed-kind promotion, finfo/iinfo values).
"""

import copy
import itertools
import pickle
import warnings

import array_api_strict as xps
import numpy as np
import pytest

from gputensor import _data_type_functions as dtf
from gputensor import _dtypes as dt

# Test-side dtype table: name -> (itemsize, kind, wgsl_compute, packed, feature).
EXPECTED_DTYPES = {
    "bool": (1, "b", "bool", True, None),
    "int8": (1, "i", "i32", True, None),
    "int16": (2, "i", "i32", True, None),
    "int32": (4, "i", "i32", False, None),
    "int64": (8, "i", "i64", False, "shader-int64"),
    "uint8": (1, "u", "u32", True, None),
    "uint16": (2, "u", "u32", True, None),
    "uint32": (4, "u", "u32", False, None),
    "uint64": (8, "u", "u64", False, "shader-int64"),
    "float16": (2, "f", "f32", True, None),
    "float32": (4, "f", "f32", False, None),
    "float64": (8, "f", "f64", False, "shader-f64"),
    "complex64": (8, "c", "vec2<f32>", False, None),
    "complex128": (16, "c", "vec2<f64>", False, "shader-f64"),
}
OUR_DTYPES = [getattr(dt, name) for name in EXPECTED_DTYPES]
# Dtypes that array-api-strict also has (all but float16).
SHARED_NAMES = [name for name in EXPECTED_DTYPES if name != "float16"]
SCALARS = [True, False, 0, 1, -1, 127, 128, 255, 256, -129, 2**31, 2**63, -(2**63) - 1,
           2**64, 1.5, -0.0, 1e300, 1j]


def strict(dtype):
    return getattr(xps, dtype.name)


def ours(strict_dtype):
    return dt.DTYPES_BY_NAME[repr(strict_dtype).split(".")[-1]]


def outcome(func, *args):
    """('ok', value) or ('raises', exception type) for func(*args)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("ok", func(*args))
    except Exception as exc:  # noqa: BLE001 - we compare exception types
        return ("raises", type(exc))


class Duck:
    """A stand-in array: anything with a DType ``.dtype``."""

    def __init__(self, dtype):
        self.dtype = dtype

    def __repr__(self):  # stable test ids (pytest-xdist needs the same ids in every worker)
        return f"Duck({self.dtype!r})"


# --------------------------------------------------------------------------- DType


@pytest.mark.parametrize("name", list(EXPECTED_DTYPES))
def test_dtype_fields(name):
    itemsize, kind, wgsl, packed, feature = EXPECTED_DTYPES[name]
    dtype = getattr(dt, name)
    assert dtype.name == name
    assert dtype.itemsize == itemsize == np.dtype(name).itemsize
    assert dtype.kind == kind
    assert dtype.numpy == np.dtype(name)
    assert dtype.wgsl_compute == wgsl
    assert dtype.packed is packed
    assert dtype.feature == feature
    assert dtype.wgsl_storage == ("u32" if packed else wgsl)
    assert repr(dtype) == f"gputensor.{name}"


def test_all_dtypes_listed():
    assert [d.name for d in dt.ALL_DTYPES] == list(EXPECTED_DTYPES)
    assert set(dt.DTYPES_BY_NAME) == set(EXPECTED_DTYPES)
    assert dt.complex64 is dt.DTYPES_BY_NAME["complex64"]
    assert dt.complex128 is dt.DTYPES_BY_NAME["complex128"]


def test_dtype_equality_hash_and_identity():
    assert dt.float32 == dt.float32
    assert dt.float32 != dt.float64
    # as CuPy's (NumPy's) dtypes: equal to NumPy's spellings, hashed as the NumPy dtype
    assert dt.float32 == np.float32 and dt.float32 == np.dtype("float32")
    assert dt.float32 == "float32" and dt.float32 == "<f4" and dt.float64 == "f8"
    assert np.dtype("float32") == dt.float32 and dt.float32 != np.float64
    assert dt.float32 != "not a dtype" and dt.float32 != 1.5 and dt.float32 != object
    assert {np.dtype("float32"): 1}[dt.float32] == 1 and {dt.int8: 2}[np.dtype("int8")] == 2
    assert np.dtype(dt.float32) == np.dtype("float32") and dt.int16.type is np.int16
    assert len({dt.int8, dt.int8, dt.uint8}) == 2
    assert {dt.float32: 1}[dt.float32] == 1
    for dtype in OUR_DTYPES:
        assert pickle.loads(pickle.dumps(dtype)) is dtype
        assert copy.copy(dtype) is dtype
        assert copy.deepcopy(dtype) is dtype


def test_dtype_is_frozen():
    with pytest.raises(AttributeError):
        dt.float32.name = "float64"
    with pytest.raises(AttributeError):
        dt.int8.itemsize = 4


def test_module_keeps_builtin_bool_usable():
    # The module shadows `bool`; its helpers must still recognise Python bools.
    assert dt.bool is dt.DTYPES_BY_NAME["bool"]
    assert dt.promote_scalar(dt.bool, True) is dt.bool


# ---------------------------------------------------------------------- categories

STRICT_CATEGORY_NAMES = {
    "all": "all",
    "real numeric": "real numeric",
    "numeric": "numeric",
    "integer": "integer",
    "integer or boolean": "integer or boolean",
    "boolean": "boolean",
    "real floating": "real floating-point",
    "floating": "floating-point",
    "real floating-point": "real floating-point",
    "floating-point": "floating-point",
    "complex floating": "complex floating-point",
    "complex floating-point": "complex floating-point",
}


@pytest.mark.parametrize("category", list(STRICT_CATEGORY_NAMES))
def test_categories_match_strict(category):
    strict_members = {
        repr(d).split(".")[-1]
        for d in xps._dtypes._dtype_categories[STRICT_CATEGORY_NAMES[category]]
    }
    our_members = {d.name for d in dt.DTYPE_CATEGORIES[category]}
    has_float16 = (category in ("all", "real numeric", "numeric") or "floating" in category) and (
        "complex" not in category)
    expected_extra = {"float16"} if has_float16 else set()
    assert our_members == strict_members | expected_extra


def test_signed_unsigned_categories():
    assert dt.DTYPE_CATEGORIES["signed integer"] == (
        dt.int8, dt.int16, dt.int32, dt.int64)
    assert dt.DTYPE_CATEGORIES["unsigned integer"] == (
        dt.uint8, dt.uint16, dt.uint32, dt.uint64)


# ----------------------------------------------------------------------- promotion


def test_spec_pairs_match_strict():
    checked = 0
    for (a, b), result in xps._dtypes._promotion_table.items():
        assert dt.result_type_pair(ours(a), ours(b)) is ours(result), (a, b)
        assert dt.SAME_KIND_PROMOTIONS[ours(a), ours(b)] is ours(result)
        checked += 1
    assert checked == 73  # 8x8 integer pairs minus 6 uint64/signed, 16 real/complex floating, bool


@pytest.mark.parametrize("a, b", list(itertools.product(OUR_DTYPES, repeat=2)))
def test_every_pair(a, b):
    """Each pair is spec (strict), float16 extension, NumPy mixed-kind, or raises."""
    strict_result = None
    if dt.float16 not in (a, b):
        strict_result = outcome(xps.result_type, strict(a), strict(b))
    got = outcome(dt.result_type_pair, a, b)
    assert got == outcome(dt.result_type_pair, b, a)  # symmetric
    if strict_result is not None and strict_result[0] == "ok":
        assert got == ("ok", ours(strict_result[1]))
        return
    bool_with_numeric = (a == dt.bool) != (b == dt.bool)
    uint64_with_signed = {a.kind, b.kind} == {"u", "i"} and dt.uint64 in (a, b)
    integer_with_complex = "c" in (a.kind, b.kind) and {a.kind, b.kind} & {"i", "u"}
    if bool_with_numeric or uint64_with_signed or integer_with_complex:
        assert got == ("raises", TypeError)
        with pytest.raises(TypeError, match="cannot be type promoted"):
            dt.result_type_pair(a, b)
        return
    assert got[0] == "ok"
    if a.kind in "fc" and b.kind in "fc":  # float16 extension
        assert got[1].name == np.result_type(a.numpy, b.numpy).name
        assert (a, b) in dt.SAME_KIND_PROMOTIONS
    else:  # integer with floating: NumPy
        assert got[1].name == np.result_type(a.numpy, b.numpy).name
        assert (a, b) in dt.MIXED_KIND_PROMOTIONS
        assert (a, b) not in dt.SAME_KIND_PROMOTIONS


def test_documented_extension_examples():
    assert dt.result_type_pair(dt.float16, dt.float16) is dt.float16
    assert dt.result_type_pair(dt.float16, dt.float32) is dt.float32
    assert dt.result_type_pair(dt.float64, dt.float16) is dt.float64
    assert dt.result_type_pair(dt.int8, dt.float16) is dt.float16
    assert dt.result_type_pair(dt.int32, dt.float32) is dt.float64
    assert dt.result_type_pair(dt.uint64, dt.float16) is dt.float64


def test_table_is_union_and_symmetric():
    assert dt.PROMOTION_TABLE == {**dt.SAME_KIND_PROMOTIONS, **dt.MIXED_KIND_PROMOTIONS}
    assert not set(dt.SAME_KIND_PROMOTIONS) & set(dt.MIXED_KIND_PROMOTIONS)
    for (a, b), result in dt.PROMOTION_TABLE.items():
        assert dt.PROMOTION_TABLE[b, a] is result


def test_result_type_pair_rejects_non_dtypes():
    with pytest.raises(TypeError, match="gputensor dtype"):
        dt.result_type_pair(dt.float32, np.float32)
    with pytest.raises(TypeError):
        dt.result_type_pair([], dt.float32)


# ------------------------------------------------------------------ dtype_from_any


@pytest.mark.parametrize(
    "spelling, expected",
    [
        (dt.float32, dt.float32),
        (np.dtype("float32"), dt.float32),
        (np.float32, dt.float32),
        ("float32", dt.float32),
        ("f4", dt.float32),
        ("<f8", dt.float64),
        (np.bool_, dt.bool),
        ("bool", dt.bool),
        (np.dtype("uint16"), dt.uint16),
        ("float16", dt.float16),
        (np.int64, dt.int64),
    ],
)
def test_dtype_from_any(spelling, expected):
    assert dt.dtype_from_any(spelling) is expected


@pytest.mark.parametrize(
    "bad, match",
    [
        (bool, "Python type"),
        (int, "Python type"),
        (float, "Python type"),
        (complex, "Python type"),
        (None, "not a dtype"),
        ("not-a-dtype", "not a dtype"),
        (3, "not a dtype"),
        (object(), "not a dtype"),
        (np.ones(2), "not a dtype"),
        (xps.float32, "not a dtype"),
        ("complex256" if hasattr(np, "complex256") else "G", "not supported"),
        (np.dtype(object), "not supported"),
        (np.str_, "not supported"),
        ("datetime64[s]", "not supported"),
        ("V8", "not supported"),
    ],
)
def test_dtype_from_any_rejects(bad, match):
    with pytest.raises(TypeError, match=match):
        dt.dtype_from_any(bad)


# -------------------------------------------------------------------- Python scalars


@pytest.mark.parametrize("name", SHARED_NAMES)
@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
def test_promote_scalar_matches_strict(name, scalar):
    dtype = getattr(dt, name)
    expected = outcome(xps.result_type, getattr(xps, name), scalar)
    got = outcome(dt.promote_scalar, dtype, scalar)
    if isinstance(scalar, float) and dtype.kind in "iu":
        assert expected == ("raises", TypeError)
        assert got == ("ok", dt.float64)  # extension: NumPy's behaviour
        assert dt.promote_scalar(dtype, scalar, default_float=dt.float32) is dt.float32
        assert np.result_type(dtype.numpy, scalar) == np.float64
    elif expected[0] == "ok":
        assert got == ("ok", ours(expected[1]))
    else:
        assert got == expected


@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
def test_promote_scalar_float16(scalar):
    got = outcome(dt.promote_scalar, dt.float16, scalar)
    if isinstance(scalar, bool):
        assert got == ("raises", TypeError)
    elif isinstance(scalar, complex):
        assert got == ("ok", dt.complex64)
    elif isinstance(scalar, int) and scalar >= 2**1024:
        assert got == ("raises", OverflowError)
    else:
        assert got == ("ok", dt.float16)


@pytest.mark.parametrize("bad", [np.int8(1), "1", None, [1]])
def test_promote_scalar_rejects_non_scalars(bad):
    with pytest.raises(TypeError):
        dt.promote_scalar(dt.int8, bad)


@pytest.mark.parametrize("dtype", [d for d in OUR_DTYPES if d.kind in "iu"], ids=repr)
def test_check_scalar_in_range_integers(dtype):
    info = np.iinfo(dtype.numpy)
    for value in (int(info.min), int(info.max), 0):
        dt.check_scalar_in_range(dtype, value)
        np.array(value, dtype=dtype.numpy)  # NumPy agrees it fits
    for value in (int(info.min) - 1, int(info.max) + 1):
        with pytest.raises(OverflowError, match=str(value)):
            dt.check_scalar_in_range(dtype, value)
        with pytest.raises(OverflowError):
            np.array(value, dtype=dtype.numpy)


def test_check_scalar_in_range_other_cases():
    dt.check_scalar_in_range(dt.float32, 10**39)  # NumPy gives inf, no error
    with pytest.raises(OverflowError):
        dt.check_scalar_in_range(dt.float64, 10**400)
    with pytest.raises(OverflowError):
        dt.promote_scalar(dt.float32, 10**400)
    dt.check_scalar_in_range(dt.uint8, True)  # bools are not range-checked
    dt.check_scalar_in_range(dt.int8, 1e10)  # floats are not range-checked
    dt.check_scalar_in_range(dt.bool, 5)


# ------------------------------------------------------------------- result_type


def arg_cases():
    dtypes = [getattr(dt, n) for n in SHARED_NAMES]
    scalars = [True, 1, -1, 300, 1.5, 1j]
    yield from ((a,) for a in dtypes)
    yield from itertools.product(dtypes, dtypes)
    yield from itertools.product(dtypes, scalars)
    yield from itertools.product(scalars, dtypes)
    yield from itertools.product(dtypes, dtypes, scalars)
    yield from itertools.product(scalars[:4], dtypes, scalars[:4])


def to_strict(arg):
    return strict(arg) if isinstance(arg, dt.DType) else arg


@pytest.mark.parametrize("args", list(arg_cases()), ids=repr)
def test_result_type_matches_strict(args):
    expected = outcome(xps.result_type, *map(to_strict, args))
    got = outcome(dtf.result_type, *args)
    has_complex = any(isinstance(a, complex) for a in args)
    kinds = {a.kind for a in args if isinstance(a, dt.DType)}
    has_float_scalar = any(type(a) is float for a in args)
    extension = bool(kinds & {"i", "u"}) and ("f" in kinds or has_float_scalar)
    if expected[0] == "ok":
        assert got == ("ok", ours(expected[1]))
    elif got[0] == "ok":
        # Only the documented extensions may succeed where strict raises.
        assert extension and "b" not in kinds, (args, expected, got)
        assert got[1].kind == ("c" if has_complex else "f")
    else:
        assert got == expected


def test_result_type_duck_arrays_and_errors():
    assert dtf.result_type(Duck(dt.int8), Duck(dt.int16)) is dt.int16
    assert dtf.result_type(Duck(dt.float16), 1) is dt.float16
    assert dtf.result_type(dt.float16, dt.float32, 2.0) is dt.float32
    assert dtf.result_type(dt.int8, 1.5) is dt.float32  # the device default float, as operators
    with pytest.raises(ValueError, match="at least one"):
        dtf.result_type()
    with pytest.raises(ValueError, match="at least one"):
        dtf.result_type(1, 2.0)
    for spelled in ("float32", np.float32, np.dtype("float32"), "<f4"):  # NumPy's spellings
        assert dtf.result_type(dt.int8, spelled) is dt.float32
    for bad in ("not a dtype", Duck(np.float32), np.ones(2), None, [dt.int8]):
        with pytest.raises(TypeError, match="result_type"):
            dtf.result_type(dt.int8, bad)
    with pytest.raises(OverflowError):
        dtf.result_type(dt.int8, 128)
    with pytest.raises(TypeError):
        dtf.result_type(dt.bool, dt.int8)


# ---------------------------------------------------------------------- can_cast


@pytest.mark.parametrize("a, b", list(itertools.product(SHARED_NAMES, repeat=2)))
def test_can_cast_matches_strict(a, b):
    expected = xps.can_cast(getattr(xps, a), getattr(xps, b))
    assert dtf.can_cast(getattr(dt, a), getattr(dt, b)) is expected
    assert dtf.can_cast(Duck(getattr(dt, a)), getattr(dt, b)) is expected


def test_can_cast_float16():
    assert dtf.can_cast(dt.float16, dt.float16)
    assert dtf.can_cast(dt.float16, dt.float32)
    assert dtf.can_cast(dt.float16, dt.float64)
    assert not dtf.can_cast(dt.float32, dt.float16)
    # Cross-kind promotion is an extension of result_type, not a safe cast.
    assert not dtf.can_cast(dt.int8, dt.float16)
    assert not dtf.can_cast(dt.bool, dt.float16)
    assert not dtf.can_cast(dt.float16, dt.int64)


@pytest.mark.parametrize(
    "from_, to",
    [(Duck(np.int8), dt.int8), (dt.int8, Duck(dt.int8)), (None, dt.int8), (dt.int8, "no")],
    ids=repr,
)
def test_can_cast_errors(from_, to):
    # array-api-strict raises TypeError for all of these too.
    strict_from = xps.int8 if isinstance(from_, dt.DType) else from_
    strict_to = xps.int8 if isinstance(to, dt.DType) else to
    assert outcome(xps.can_cast, strict_from, strict_to) == ("raises", TypeError)
    with pytest.raises(TypeError):
        dtf.can_cast(from_, to)


# ---------------------------------------------------------------- finfo / iinfo


@pytest.mark.parametrize("name", ["float16", "float32", "float64"])
def test_finfo_matches_numpy(name):
    dtype = getattr(dt, name)
    ref = np.finfo(name)
    for info in (dtf.finfo(dtype), dtf.finfo(Duck(dtype))):
        assert info.bits == ref.bits
        assert info.eps == float(ref.eps)
        assert info.max == float(ref.max)
        assert info.min == float(ref.min)
        assert info.smallest_normal == float(ref.smallest_normal)
        assert info.dtype is dtype
        for attr in ("eps", "max", "min", "smallest_normal"):
            assert type(getattr(info, attr)) is float
        assert type(info.bits) is int
        with pytest.raises(AttributeError):
            info.bits = 1


@pytest.mark.parametrize("name", [n for n in EXPECTED_DTYPES if n[0] in "iu"])
def test_iinfo_matches_numpy(name):
    dtype = getattr(dt, name)
    ref = np.iinfo(name)
    for info in (dtf.iinfo(dtype), dtf.iinfo(Duck(dtype))):
        assert (info.bits, info.min, info.max) == (ref.bits, ref.min, ref.max)
        assert all(type(v) is int for v in (info.bits, info.min, info.max))
        assert info.dtype is dtype


@pytest.mark.parametrize("name", SHARED_NAMES)
def test_finfo_iinfo_errors_match_strict(name):
    for ours_func, strict_func in ((dtf.finfo, xps.finfo), (dtf.iinfo, xps.iinfo)):
        expected = outcome(strict_func, getattr(xps, name))
        got = outcome(ours_func, getattr(dt, name))
        assert got[0] == expected[0]
        if got[0] == "raises":
            assert got[1] is expected[1] is ValueError


def test_numpy_spellings_of_dtypes():
    """NumPy dtypes, scalar types, dtype strings and Python types are dtypes wherever the
    namespace takes one (as in CuPy), beyond array-api-strict."""
    assert dtf.can_cast(np.int8, "int16") and not dtf.can_cast("f8", np.float32)
    assert dtf.finfo("float32").eps == np.finfo(np.float32).eps
    assert dtf.finfo(np.dtype("f2")).bits == 16 and dtf.iinfo(np.int8).max == 127
    assert dtf.iinfo(int).bits == 64 and dtf.finfo(float).bits == 64
    with pytest.raises(ValueError):
        dtf.finfo(np.dtype("int8"))


@pytest.mark.parametrize("bad", ["not a dtype", None, 3])
def test_finfo_iinfo_reject_non_dtypes(bad):
    for ours_func, strict_func in ((dtf.finfo, xps.finfo), (dtf.iinfo, xps.iinfo)):
        assert outcome(strict_func, bad) == ("raises", TypeError)
        with pytest.raises(TypeError):
            ours_func(bad)


def test_finfo_float16_and_iinfo_bool_rejects():
    with pytest.raises(ValueError):
        dtf.iinfo(dt.float16)
    with pytest.raises(ValueError):
        dtf.finfo(dt.bool)
    with pytest.raises(ValueError):
        dtf.iinfo(dt.bool)


# ------------------------------------------------------------------------ isdtype

KINDS = ["bool", "signed integer", "unsigned integer", "integral", "real floating",
         "complex floating", "numeric"]


def strict_kind(kind):
    if isinstance(kind, tuple):
        return tuple(strict_kind(k) for k in kind)
    return strict(kind) if isinstance(kind, dt.DType) else kind


def kind_cases():
    shared = [getattr(dt, n) for n in SHARED_NAMES]
    yield from KINDS
    yield from shared
    yield from itertools.combinations(KINDS, 2)
    yield ("integral", dt.float32)
    yield (dt.bool, "real floating", dt.uint8)
    yield ()
    # errors
    yield "foo"
    yield "floating"
    yield 3
    yield None
    yield np.int8
    yield np.dtype("int8")
    yield (dt.int8, ("bool",))
    yield ("bool", "foo")
    yield ("foo", "bool")
    yield (dt.int8, "foo")  # short-circuits for int8 in strict
    yield (3, "bool")


@pytest.mark.parametrize("name", SHARED_NAMES)
@pytest.mark.parametrize("kind", list(kind_cases()), ids=repr)
def test_isdtype_matches_strict(name, kind):
    if kind is np.int8 or isinstance(kind, np.dtype):  # NumPy's spellings are dtypes here
        assert dtf.isdtype(getattr(dt, name), kind) == (name == "int8")
        return
    expected = outcome(xps.isdtype, getattr(xps, name), strict_kind(kind))
    got = outcome(dtf.isdtype, getattr(dt, name), kind)
    assert got == expected


def test_isdtype_float16_and_bad_dtype():
    assert dtf.isdtype(dt.float16, "real floating")
    assert dtf.isdtype(dt.float16, "numeric")
    assert not dtf.isdtype(dt.float16, "integral")
    assert dtf.isdtype(dt.float16, dt.float16)
    assert not dtf.isdtype(dt.float16, dt.float32)
    assert dtf.isdtype(np.int8, "signed integer") and dtf.isdtype("f2", "real floating")
    for bad in ("not a dtype", Duck(dt.int8), None):
        assert outcome(xps.isdtype, bad, "bool") == ("raises", TypeError)
        with pytest.raises(TypeError):
            dtf.isdtype(bad, "bool")
