"""Elementwise functions and operators against NumPy (float64 references), every dtype of
each op's category, broadcasting, negative-step views, weak scalars and special values.

The op table here is the TEST's own (names, NumPy reference, input category, value domain),
kept independent of ``gputensor._ops``; ``test_table_covers_namespace`` checks both list the
same names.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gputensor as gt
from gputensor._backend import get_backend

from _compare import TOLERANCES as TOLERANCE_TABLE
from _compare import assert_close, assert_same

BOOL = ["bool"]
SIGNED = ["int8", "int16", "int32", "int64"]
UNSIGNED = ["uint8", "uint16", "uint32", "uint64"]
INTS = SIGNED + UNSIGNED
FLOATS = ["float16", "float32", "float64"]
CATEGORIES = {
    "numeric": INTS + FLOATS,
    "real numeric": INTS + FLOATS,
    "floating": FLOATS,
    "integer": INTS,
    "integer or boolean": BOOL + INTS,
    "boolean": BOOL,
    "all": BOOL + INTS + FLOATS,
}

# name -> (numpy reference, category, domain, tolerance family, result rule)
# domains: 'any' (full range / moderate floats), 'pos' (> 0), 'unit' ([-1, 1]), 'ge1' (>= 1),
# 'open_unit' ((-1, 1)), 'small' (|x| <= 10), 'shift' (second operand in [0, bits]),
# 'exponent' (second operand small non-negative), 'nonzero' (second operand != 0 for floats).
UNARY = {
    "abs": (np.abs, "numeric", "any", "arith"),
    "acos": (np.arccos, "floating", "unit", "inverse_trig"),
    "acosh": (np.arccosh, "floating", "ge1", "transcendental"),
    "asin": (np.arcsin, "floating", "unit", "inverse_trig"),
    "asinh": (np.arcsinh, "floating", "small", "transcendental"),
    "atan": (np.arctan, "floating", "small", "transcendental"),
    "atanh": (np.arctanh, "floating", "open_unit", "transcendental"),
    "bitwise_invert": (np.invert, "integer or boolean", "any", "exact"),
    "ceil": (np.ceil, "real numeric", "any", "exact"),
    "conj": (np.conj, "numeric", "any", "exact"),
    "cos": (np.cos, "floating", "small", "transcendental"),
    "cosh": (np.cosh, "floating", "small", "transcendental"),
    "deg2rad": (np.deg2rad, "real floating", "any", "exact"),
    "exp": (np.exp, "floating", "small", "transcendental"),
    "expm1": (np.expm1, "floating", "small", "transcendental"),
    "floor": (np.floor, "real numeric", "any", "exact"),
    "imag": (np.imag, "complex floating", "any", "exact"),
    "isfinite": (np.isfinite, "numeric", "any", "exact"),
    "isinf": (np.isinf, "numeric", "any", "exact"),
    "isnan": (np.isnan, "numeric", "any", "exact"),
    "log": (np.log, "floating", "pos", "transcendental"),
    "log10": (np.log10, "floating", "pos", "transcendental"),
    "log1p": (np.log1p, "floating", "pos", "transcendental"),
    "log2": (np.log2, "floating", "pos", "transcendental"),
    "logical_not": (np.logical_not, "boolean", "any", "exact"),
    "negative": (np.negative, "numeric", "any", "arith"),
    "positive": (np.positive, "numeric", "any", "exact"),
    "real": (np.real, "numeric", "any", "exact"),
    "reciprocal": (np.reciprocal, "floating", "pos", "arith"),
    "round": (np.round, "numeric", "any", "exact"),
    "sign": (np.sign, "numeric", "any", "exact"),
    "signbit": (np.signbit, "floating", "any", "exact"),
    "sin": (np.sin, "floating", "small", "transcendental"),
    "sinh": (np.sinh, "floating", "small", "transcendental"),
    "sqrt": (np.sqrt, "floating", "pos", "arith"),
    "square": (np.square, "numeric", "any", "arith"),
    "tan": (np.tan, "floating", "unit", "transcendental"),
    "tanh": (np.tanh, "floating", "small", "transcendental"),
    "trunc": (np.trunc, "real numeric", "any", "exact"),
}
BINARY = {
    "add": (np.add, "numeric", "any", "arith"),
    "atan2": (np.arctan2, "floating", "small", "transcendental"),
    "bitwise_and": (np.bitwise_and, "integer or boolean", "any", "exact"),
    "bitwise_left_shift": (np.left_shift, "integer", "shift", "exact"),
    "bitwise_or": (np.bitwise_or, "integer or boolean", "any", "exact"),
    "bitwise_right_shift": (np.right_shift, "integer", "shift", "exact"),
    "bitwise_xor": (np.bitwise_xor, "integer or boolean", "any", "exact"),
    "copysign": (np.copysign, "floating", "any", "exact"),
    "divide": (np.divide, "numeric", "nonzero", "arith"),
    "equal": (np.equal, "all", "any", "exact"),
    "floor_divide": (np.floor_divide, "real numeric", "nonzero", "arith"),
    "greater": (np.greater, "real numeric", "any", "exact"),
    "greater_equal": (np.greater_equal, "real numeric", "any", "exact"),
    "hypot": (np.hypot, "floating", "any", "transcendental"),
    "less": (np.less, "real numeric", "any", "exact"),
    "less_equal": (np.less_equal, "real numeric", "any", "exact"),
    "logaddexp": (np.logaddexp, "floating", "small", "transcendental"),
    "logical_and": (np.logical_and, "boolean", "any", "exact"),
    "logical_or": (np.logical_or, "boolean", "any", "exact"),
    "logical_xor": (np.logical_xor, "boolean", "any", "exact"),
    "maximum": (np.maximum, "real numeric", "any", "exact"),
    "minimum": (np.minimum, "real numeric", "any", "exact"),
    "multiply": (np.multiply, "numeric", "any", "arith"),
    "nextafter": (np.nextafter, "floating", "any", "exact"),
    "not_equal": (np.not_equal, "all", "any", "exact"),
    "pow": (np.power, "numeric", "exponent", "transcendental"),
    "remainder": (np.remainder, "real numeric", "nonzero", "arith"),
    "subtract": (np.subtract, "numeric", "any", "arith"),
}
BOOL_RESULT = {"isfinite", "isinf", "isnan", "signbit", "logical_not", "equal", "not_equal",
               "greater", "greater_equal", "less", "less_equal", "logical_and", "logical_or",
               "logical_xor"}
# References computed in the dtype itself, not float64.
NATIVE_REFERENCE = {np.nextafter}
# Integer-exact ops whose float forms need the arith tolerance only for float16 rounding.
FLOAT_DIVISION = {"divide"}


def test_table_covers_namespace():
    from gputensor._ops import ELEMENTWISE_OPS

    assert set(UNARY) | set(BINARY) == set(ELEMENTWISE_OPS)
    for name in list(UNARY) + list(BINARY) + ["clip"]:
        assert callable(getattr(gt, name)), name


@pytest.fixture(scope="module", autouse=True)
def _backend():
    return get_backend()


def _values(dtype: str, shape: tuple[int, ...], domain: str, rng: np.random.Generator) -> np.ndarray:
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        if domain == "exponent":
            return rng.integers(0, 4, shape).astype(dtype)
        if domain == "shift":
            return rng.integers(0, info.bits + 3, shape).astype(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    if domain == "pos":
        v = np.exp(rng.uniform(-5, 5, shape))
    elif domain == "unit":
        v = rng.uniform(-1, 1, shape)
    elif domain == "open_unit":
        v = rng.uniform(-0.99, 0.99, shape)
    elif domain == "ge1":
        v = 1 + np.exp(rng.uniform(-5, 5, shape))
    elif domain == "small":
        v = rng.uniform(-4, 4, shape)
    elif domain == "exponent":
        v = rng.uniform(0, 3, shape)
    else:
        v = np.asarray(rng.standard_normal(shape) * 50)
        v[np.abs(v) < 1e-3] = 1.0
    return np.asarray(v).astype(dtype)


def _first_values(dtype, shape, domain, rng):
    """Left operand for the 'exponent'/'shift' domains (base, shifted value)."""
    if domain in ("exponent",) and np.dtype(dtype).kind == "f":
        return np.asarray(np.exp(rng.uniform(-2, 2, shape))).astype(dtype)
    if domain in ("exponent", "shift"):
        return _values(dtype, shape, "any", rng) if dtype != "bool" else None
    return _values(dtype, shape, domain, rng)


def _reference(func, args, result_dtype, compute_dtype):
    """NumPy on the inputs cast to the compute dtype; floats computed in float64 (except ops
    defined by the dtype's own representation, such as nextafter)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if np.dtype(compute_dtype).kind == "f" and func not in NATIVE_REFERENCE:
            cast = [a.astype(compute_dtype).astype(np.float64) for a in args]
        else:
            cast = [a.astype(compute_dtype) for a in args]
        return np.asarray(func(*cast)).astype(result_dtype)


def _cases(table):
    return [(name, dt) for name, row in table.items() for dt in CATEGORIES.get(row[1], [])]


def _shape_pairs():
    return hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=5)


def _maybe_flip(x: gt.GpuArray, h: np.ndarray, flip: bool):
    """A negative-step view holding the values of ``h`` (strided layout), or ``x``."""
    if not flip or h.ndim == 0:
        return x
    return gt.asarray(np.ascontiguousarray(h[..., ::-1]))[..., ::-1]


FEW = settings(max_examples=min(settings().max_examples, 6), deadline=None)


@pytest.mark.parametrize("name, dtype", _cases(UNARY))
@FEW
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6),
       seed=st.integers(0, 2**16), flip=st.booleans())
def test_unary(name, dtype, shape, seed, flip):
    func, _, domain, family = UNARY[name]
    rng = np.random.default_rng(seed)
    h = _values(dtype, shape, domain, rng)
    x = _maybe_flip(gt.asarray(h), h, flip)
    result = getattr(gt, name)(x)
    expected_dtype = "bool" if name in BOOL_RESULT else dtype
    assert result.dtype.name == expected_dtype
    assert result.shape == h.shape
    assert_close(result.get(), _reference(func, [h], expected_dtype, dtype), expected_dtype, family)


@pytest.mark.parametrize("name, dtype", _cases(BINARY))
@FEW
@given(shapes=_shape_pairs(), seed=st.integers(0, 2**16), flip=st.booleans(),
       scalar=st.sampled_from([None, "left", "right"]))
def test_binary(name, dtype, shapes, seed, flip, scalar):
    func, _, domain, family = BINARY[name]
    rng = np.random.default_rng(seed)
    s1, s2 = shapes.input_shapes
    h1 = _first_values(dtype, s1, domain, rng)
    h2 = _values(dtype, s2, domain, rng)
    x1 = _maybe_flip(gt.asarray(h1), h1, flip)
    x2 = gt.asarray(h2)
    compute = dtype
    result_dtype = "bool" if name in BOOL_RESULT else dtype
    if name in FLOAT_DIVISION and dtype not in FLOATS:
        compute = result_dtype = "float32"
    # weak Python scalars in either position (value taken from the drawn arrays)
    if scalar == "left" and h1.size:
        v = h1.reshape(-1)[0].item()
        h1, x1 = np.asarray(h1.reshape(-1)[0]), v
    elif scalar == "right" and h2.size:
        v = h2.reshape(-1)[0].item()
        h2, x2 = np.asarray(h2.reshape(-1)[0]), v
    result = getattr(gt, name)(x1, x2)
    expected = _reference(func, [h1, h2], result_dtype, compute)
    assert result.dtype.name == result_dtype
    assert result.shape == expected.shape
    if family == "arith" and result_dtype in FLOATS and name in ("floor_divide", "remainder"):
        family = "transcendental"  # computed from a rounded quotient
    assert_close(result.get(), expected, result_dtype, family)


# ---- promotion across dtypes -------------------------------------------------------------------
PROMOTING = ["add", "subtract", "multiply", "maximum", "less", "equal", "divide", "bitwise_or"]


@given(name=st.sampled_from(PROMOTING), d1=st.sampled_from(INTS + FLOATS + BOOL),
       d2=st.sampled_from(INTS + FLOATS + BOOL), shapes=_shape_pairs(), seed=st.integers(0, 99))
def test_mixed_dtype_promotion(name, d1, d2, shapes, seed):
    func, category, domain, family = BINARY[name]
    a1, a2 = (gt.asarray(_values(d, s, "any", np.random.default_rng(seed)))
              for d, s in zip((d1, d2), shapes.input_shapes))
    allowed = CATEGORIES[category]
    try:
        promoted = gt.result_type(a1.dtype, a2.dtype)
    except TypeError:
        with pytest.raises(TypeError):
            getattr(gt, name)(a1, a2)
        return
    if promoted.name not in allowed or d1 not in allowed or d2 not in allowed:
        with pytest.raises(TypeError):
            getattr(gt, name)(a1, a2)
        return
    compute = promoted.name
    result_dtype = "bool" if name in BOOL_RESULT else compute
    if name == "divide" and compute not in FLOATS:
        compute = result_dtype = "float32"
    result = getattr(gt, name)(a1, a2)
    assert result.dtype.name == result_dtype
    expected = _reference(func, [a1.get(), a2.get()], result_dtype, compute)
    assert_close(result.get(), expected, result_dtype, family)


@pytest.mark.parametrize(
    "dtype, scalar, expected",
    [
        ("int8", 3, "int8"),
        ("uint16", 3, "uint16"),
        ("float16", 3, "float16"),
        ("float32", 2.5, "float32"),
        ("float64", 2.5, "float64"),
        ("int32", 2.5, "float32"),  # extension: float scalar with integers -> default float
        ("bool", True, "bool"),
    ],
)
def test_weak_scalar_result_dtype(dtype, scalar, expected):
    x = gt.ones((3,), dtype=getattr(gt, dtype))
    name = "logical_and" if dtype == "bool" else "multiply"
    assert getattr(gt, name)(x, scalar).dtype.name == expected
    assert getattr(gt, name)(scalar, x).dtype.name == expected


def test_weak_scalar_errors():
    with pytest.raises(TypeError):
        gt.add(gt.asarray([True]), 1)
    with pytest.raises(TypeError):
        gt.add(gt.asarray([1]), True)
    with pytest.raises(OverflowError):
        gt.add(gt.asarray([1], dtype=gt.int8), 200)
    with pytest.raises(TypeError):
        gt.add(gt.asarray([1]), 1j)
    assert gt.add(gt.asarray([1.0], dtype=gt.float32), 1j).dtype == gt.complex64
    with pytest.raises(TypeError):
        gt.add(1, 2)
    with pytest.raises(TypeError):
        gt.bitwise_and(gt.asarray([1]), 1.5)
    with pytest.raises(TypeError):
        gt.add(gt.asarray([1.0]), np.ones(1))
    with pytest.raises(TypeError):
        gt.sin([1.0])


def test_dtype_category_errors():
    f, i, b = gt.asarray([1.0]), gt.asarray([1]), gt.asarray([True])
    for func, arg in [(gt.sqrt, i), (gt.sin, b), (gt.bitwise_invert, f), (gt.logical_not, i),
                      (gt.imag, f), (gt.signbit, i), (gt.abs, b)]:
        with pytest.raises(TypeError):
            func(arg)
    for func, args in [(gt.atan2, (i, i)), (gt.bitwise_left_shift, (b, b)), (gt.logical_and, (i, i)),
                       (gt.less, (b, b)), (gt.add, (i, b)), (gt.add, (gt.asarray([1], dtype=gt.uint64), i))]:
        with pytest.raises(TypeError):
            func(*args)


def test_shape_mismatch():
    with pytest.raises(ValueError):
        gt.add(gt.zeros((2, 3)), gt.zeros((4,)))


# ---- special values ---------------------------------------------------------------------------
SPECIALS = [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 1e-30, -2.5, 3.5]
SPECIAL_UNARY = ["abs", "negative", "isnan", "isinf", "isfinite", "signbit", "sign", "floor",
                 "ceil", "trunc", "round", "square", "positive"]
SPECIAL_BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "equal",
                  "not_equal", "less", "less_equal", "greater", "greater_equal", "copysign"]


@pytest.mark.parametrize("dtype", FLOATS)
def test_special_values(dtype):
    h = np.array(SPECIALS, dtype=dtype)
    x = gt.asarray(h)
    for name in SPECIAL_UNARY:
        func = UNARY[name][0]
        out = getattr(gt, name)(x).get()
        with np.errstate(all="ignore"):
            expected = func(h)
        np.testing.assert_array_equal(out, expected, err_msg=name)
        if name in ("negative", "abs", "floor", "ceil", "trunc", "round", "positive"):
            # signed zeros exactly; a NaN's sign is not kept by every GPU (NVIDIA's float16
            # unpacking drops it), as IEEE 754 leaves it unspecified outside copy operations
            keep = ~np.isnan(expected)
            np.testing.assert_array_equal(np.signbit(out)[keep], np.signbit(expected)[keep], err_msg=name)
    a = np.repeat(h, len(h))
    b = np.tile(h, len(h))
    xa, xb = gt.asarray(a), gt.asarray(b)
    for name in SPECIAL_BINARY:
        func = BINARY[name][0]
        out = getattr(gt, name)(xa, xb).get()
        with np.errstate(all="ignore"):
            expected = func(a, b)
        np.testing.assert_array_equal(out, expected, err_msg=name)


@pytest.mark.parametrize("dtype", SIGNED + UNSIGNED)
def test_integer_extremes(dtype):
    info = np.iinfo(dtype)
    vals = np.array([info.min, info.min + 1, -1 if info.min else 0, 0, 1, 7, info.bits - 1, info.bits,
                     info.max - 1, info.max], dtype=dtype)
    a = np.repeat(vals, len(vals))
    b = np.tile(vals, len(vals))
    xa, xb = gt.asarray(a), gt.asarray(b)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        # every integer binary op but pow (NumPy refuses negative integer exponents), shifts by
        # negative and too-large counts included
        for name in ["add", "subtract", "multiply", "floor_divide", "remainder", "maximum",
                     "minimum", "less", "less_equal", "greater", "greater_equal", "equal",
                     "not_equal", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                     "bitwise_right_shift"]:
            out = getattr(gt, name)(xa, xb).get()
            np.testing.assert_array_equal(out, BINARY[name][0](a, b), err_msg=name)
        for name in ["abs", "negative", "positive", "sign", "bitwise_invert", "square", "round",
                     "floor", "ceil", "trunc", "isnan", "isinf", "isfinite"]:
            np.testing.assert_array_equal(getattr(gt, name)(xa).get(), UNARY[name][0](a), err_msg=name)


def test_integer_division_by_zero_gives_zero():
    x = gt.asarray([5, -5, 0], dtype=gt.int32)
    np.testing.assert_array_equal((x // 0).get(), [0, 0, 0])
    np.testing.assert_array_equal((x % 0).get(), [0, 0, 0])
    u = gt.asarray([5, 0], dtype=gt.uint8)
    np.testing.assert_array_equal((u // gt.zeros((2,), dtype=gt.uint8)).get(), [0, 0])


def test_integer_power():
    x = gt.asarray([2, 3, -2], dtype=gt.int64)
    np.testing.assert_array_equal((x ** 3).get(), [8, 27, -8])
    assert_same((x ** 62), np.asarray(np.array([2, 3, -2]) ** 62))
    assert (x ** 2).dtype == gt.int64


@pytest.mark.parametrize("narrow", ["int8", "int16", "int32"])
def test_int64_with_narrower_signed_operand(narrow):
    """The narrow operand is sign-extended to int64 inside the kernel; ops that compare it with
    constants (shifts, floored division and remainder) see its value (native and emulated int64)."""
    a = np.array([1, 5, 7, -7, 1, -128], dtype=np.int64)
    b = np.array([-2, -3, 2, 2, 0, 3], dtype=narrow)
    s = np.array([0, 1, 2, 3, 0, 1], dtype=narrow)
    ga, gb, gs = gt.asarray(a), gt.asarray(b), gt.asarray(s)
    with np.errstate(divide="ignore"):  # x // 0 and x % 0 are 0 in both
        assert_same(ga // gb, a // b)
        assert_same(ga % gb, a % b)
    assert_same(ga << gs, a << s)
    assert_same(ga >> gs, a >> s)
    assert_same(gt.bitwise_left_shift(gt.asarray(1, dtype=gt.int64), gt.asarray(0, dtype=getattr(gt, narrow))),
                np.asarray(np.int64(1) << np.array(0, dtype=narrow)))


@pytest.mark.parametrize("dtype", [pytest.param(d, marks=pytest.mark.requires("shader-f64")) if d == "float64" else d
                                   for d in FLOATS])
def test_acosh_below_one_is_nan(dtype):
    x = np.array([-1.1e30 if dtype != "float16" else -6e4, -3.0, 0.5, 0.999, 1.0, 2.0], dtype=dtype)
    with np.errstate(invalid="ignore"):
        expected = np.arccosh(x)
    assert_same(gt.acosh(gt.asarray(x)), expected, "transcendental")


# ---- clip ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "float16", "float32", "float64"])
def test_clip(dtype):
    rng = np.random.default_rng(0)
    h = _values(dtype, (4, 5), "any", rng)
    lo, hi = (np.sort(_values(dtype, (2, 5), "any", rng), axis=0))
    x = gt.asarray(h)
    assert_same(gt.clip(x, gt.asarray(lo), gt.asarray(hi)), np.asarray(np.clip(h, lo, hi)))
    assert_same(gt.clip(x, min=3), np.asarray(np.clip(h, 3, None)))
    assert_same(gt.clip(x, max=3), np.asarray(np.clip(h, None, 3)))
    np.testing.assert_array_equal(gt.clip(x[::-1, ::2]).get(), h[::-1, ::2])
    assert gt.clip(x, 1, 2).dtype.name == dtype


def test_clip_rules():
    x = gt.asarray([1, 50, 200], dtype=gt.uint8)
    np.testing.assert_array_equal(gt.clip(x, -5, 1000).get(), [1, 50, 200])  # out-of-range ints: no bound
    f = gt.asarray([math.nan, 1.0, 5.0])
    np.testing.assert_array_equal(gt.clip(f, 2.0, 4.0).get(), [math.nan, 2.0, 4.0])
    with pytest.raises(TypeError):
        gt.clip(x, 1.5)
    with pytest.raises(TypeError):
        gt.clip(f, gt.asarray([1]))
    with pytest.raises(TypeError):
        gt.clip(gt.asarray([True]), 0)
    with pytest.raises(TypeError):
        gt.clip([1.0], 0.0)


# ---- audit additions ----------------------------------------------------------------------------
SCALAR_DTYPES = INTS + FLOATS + BOOL


@pytest.mark.parametrize("dtype", SCALAR_DTYPES)
def test_result_type_predicts_operator_dtypes(dtype):
    """``result_type(x, scalar)`` is exactly the dtype the operators, the functions and ``where``
    return: one default float (float32) for integer arrays mixed with Python floats."""
    x = gt.ones((2,), dtype=getattr(gt, dtype))
    cond = gt.asarray([True, False])
    for scalar in (True, 3, 2.5):
        try:
            expected = gt.result_type(x, scalar)
        except TypeError:
            with pytest.raises(TypeError):
                x + scalar
            continue
        name = "logical_and" if dtype == "bool" else "multiply"
        assert getattr(gt, name)(x, scalar).dtype == expected, (dtype, scalar)
        assert getattr(gt, name)(scalar, x).dtype == expected
        if dtype != "bool":
            assert (x + scalar).dtype == expected and (scalar - x).dtype == expected
        assert gt.where(cond, x, scalar).dtype == expected
        assert gt.where(cond, scalar, x).dtype == expected
    if dtype in INTS:
        assert gt.result_type(x, 2.5) == gt.float32 == gt.__array_namespace_info__().default_dtypes()["real floating"]
        assert (x / 2).dtype == gt.float32


# Special values through every floating function. The few results that differ from NumPy come from
# the backend's WGSL expressions (gputensor/_backend/elementwise_ops.py, _wgsl/ewise_helpers.wgsl,
# owned by the backend layer) and are listed here with what is wrong; any other mismatch fails.
SPECIAL_INPUTS = [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 0.5, -0.5, 2.5, -2.5, 1e-30, 100.0]
KNOWN_BACKEND_GAPS: dict[tuple[str, str], str] = {}


def _special_mismatches(got: np.ndarray, expected: np.ndarray, dtype: str, family: str) -> np.ndarray:
    """Mask of elements where ``got`` is not NumPy's special-value result: NaN positions,
    infinities and the sign of zero must match exactly, finite values within the tolerance."""
    rtol, atol = TOLERANCE_TABLE[family][dtype]
    g, e = got.astype(np.float64), expected.astype(np.float64)
    with np.errstate(invalid="ignore"):
        return _mismatch_mask(g, e, rtol, atol)


def _mismatch_mask(g: np.ndarray, e: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    bad = np.isnan(g) != np.isnan(e)
    both = ~np.isnan(g) & ~np.isnan(e)
    bad |= both & (np.isinf(g) | np.isinf(e)) & (g != e)
    finite = both & np.isfinite(g) & np.isfinite(e)
    bad |= finite & (np.abs(g - e) > atol + rtol * np.abs(e))
    bad |= finite & (e == 0) & (g == 0) & (np.signbit(g) != np.signbit(e))
    return bad


@pytest.mark.parametrize("dtype", FLOATS)
def test_special_values_every_floating_function(dtype):
    h = np.array(SPECIAL_INPUTS, dtype=dtype)
    a, b = np.repeat(h, len(h)), np.tile(h, len(h))
    x, xa, xb = gt.asarray(h), gt.asarray(a), gt.asarray(b)
    failures = {}
    for name, (func, category, _, family) in list(UNARY.items()) + list(BINARY.items()):
        if dtype not in CATEGORIES.get(category, []) or name in BOOL_RESULT:
            continue
        args, gargs = ([h], [x]) if name in UNARY else ([a, b], [xa, xb])
        got = getattr(gt, name)(*gargs).get()
        expected = _reference(func, args, dtype, dtype)
        if name == "nextafter":  # C99: y when x == y (NumPy < 2.5 returns x for float16)
            expected = np.where(args[0] == args[1], args[1], expected)
        if name == "floor_divide":  # an infinite operand: the spec's floor(a / b), i.e. a / b
            with np.errstate(all="ignore"):
                expected = np.where(np.isinf(args[0]) | np.isinf(args[1]), args[0] / args[1], expected)
        if family == "exact" and name not in ("nextafter",):
            family = "arith"
        if name in ("floor_divide", "remainder"):
            family = "transcendental"
        bad = _special_mismatches(got, expected, dtype, family)
        if bad.any():
            i = int(np.argmax(bad))
            failures[(name, dtype)] = [args[k].reshape(-1)[i] for k in range(len(args))] + [got[i], expected[i]]
    unexpected = {k: v for k, v in failures.items() if k not in KNOWN_BACKEND_GAPS}
    assert not unexpected, unexpected
    # boolean results on the same inputs are exact
    for name in ("isnan", "isinf", "isfinite", "signbit"):
        np.testing.assert_array_equal(getattr(gt, name)(x).get(), UNARY[name][0](h), err_msg=name)
    for name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
        np.testing.assert_array_equal(getattr(gt, name)(xa, xb).get(), BINARY[name][0](a, b), err_msg=name)


@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, min_side=0, max_side=4),
       dtype=st.sampled_from([d for d in INTS + FLOATS if d in gt.__array_namespace_info__().dtypes()]),
       seed=st.integers(0, 2**16), flip=st.booleans(), kinds=st.tuples(st.sampled_from(["none", "scalar", "array"]), st.sampled_from(["none", "scalar", "array"])))
def test_clip_property(shapes, dtype, seed, flip, kinds):
    """clip against NumPy: broadcasting bounds (arrays, Python scalars or None), negative-step
    views, NaN and integer extremes; the result keeps x's dtype."""
    rng = np.random.default_rng(seed)
    sx, s_lo, s_hi = shapes.input_shapes
    h = _values(dtype, sx, "any", rng)
    if dtype in FLOATS and h.size:
        h.reshape(-1)[rng.integers(0, h.size)] = rng.choice([np.nan, np.inf, -np.inf, -0.0])
    x = _maybe_flip(gt.asarray(h), h, flip)
    bounds, refs = [], []
    for kind, shape in zip(kinds, (s_lo, s_hi)):
        if kind == "none":
            bounds.append(None)
            refs.append(None)
        elif kind == "scalar":
            v = _values(dtype, (), "any", rng).item()
            bounds.append(v)
            refs.append(np.asarray(v, dtype=dtype))
        else:
            b = _values(dtype, shape, "any", rng)
            bounds.append(gt.asarray(b))
            refs.append(b)
    got = gt.clip(x, *bounds)
    lo, hi = refs
    expected = h
    with np.errstate(invalid="ignore"):
        if lo is not None:
            expected = np.where(np.isnan(lo) if dtype in FLOATS else False, lo, np.maximum(expected, lo))
        if hi is not None:
            expected = np.where(np.isnan(hi) if dtype in FLOATS else False, hi, np.minimum(expected, hi))
    expected = np.broadcast_to(expected, got.shape).astype(dtype)
    assert got.dtype.name == dtype
    np.testing.assert_array_equal(got.get(), expected)
