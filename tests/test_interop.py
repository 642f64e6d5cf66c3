"""Interoperability: array_api_compat sees gputensor as an Array API namespace, the public
names and signatures match array-api-strict (the reference) for the sections of issue 3, and
code written once for NumPy and gputensor runs on both."""

from __future__ import annotations

import inspect

import array_api_compat
import array_api_strict as xps
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gputensor as gt
from gputensor._backend import get_backend

from _compare import assert_same, tolerance

# The issue's sections: names gputensor must provide (engineer A's part).
CORE = [
    # creation
    "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like",
    "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like",
    # data types and their functions
    "astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64",
    # elementwise
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and",
    "bitwise_invert", "bitwise_left_shift", "bitwise_or", "bitwise_right_shift", "bitwise_xor",
    "ceil", "clip", "conj", "copysign", "cos", "cosh", "divide", "equal", "exp", "expm1",
    "floor", "floor_divide", "greater", "greater_equal", "hypot", "imag", "isfinite", "isinf",
    "isnan", "less", "less_equal", "log", "log10", "log1p", "log2", "logaddexp", "logical_and",
    "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative",
    "nextafter", "not_equal", "positive", "pow", "real", "reciprocal", "remainder", "round",
    "sign", "signbit", "sin", "sinh", "sqrt", "square", "subtract", "tan", "tanh", "trunc",
    # constants and inspection
    "e", "inf", "nan", "newaxis", "pi", "__array_namespace_info__", "__array_api_version__",
]
# Engineer B's sections (statistical, utility, linear algebra, manipulation, searching, indexing).
FUNCTIONS = [
    "sum", "prod", "max", "min", "mean", "var", "std", "cumulative_sum", "cumulative_prod",
    "all", "any", "diff",
    "matmul", "tensordot", "vecdot", "matrix_transpose",
    "broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis",
    "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack",
    "where", "argmax", "argmin", "take",
]


# The sections of issue 3, as array-api-strict's modules (a name's section is the module that
# defines it), and the names of those modules that are NOT issue 3's, each with its reason.
ISSUE3_MODULES = {
    "array_api_strict._creation_functions", "array_api_strict._data_type_functions",
    "array_api_strict._dtypes", "array_api_strict._elementwise_functions",
    "array_api_strict._statistical_functions", "array_api_strict._utility_functions",
    "array_api_strict._linear_algebra_functions", "array_api_strict._manipulation_functions",
    "array_api_strict._searching_functions", "array_api_strict._indexing_functions",
    "array_api_strict._info",
}
NOT_ISSUE3 = {
    # complex dtypes: issue 3's dtype list has none (TypeError everywhere, by design)
    "complex64": "no complex dtypes", "complex128": "no complex dtypes",
    # searching / advanced indexing beyond where/argmax/argmin/take: issue 4
    "nonzero": "issue 4", "count_nonzero": "issue 4", "searchsorted": "issue 4",
    "take_along_axis": "issue 4",
}
CONSTANTS = ["e", "inf", "nan", "pi", "newaxis", "__array_api_version__"]


def _strict_names_2024() -> list[str]:
    """Public names of array-api-strict in issue 3's sections, as of API version 2024.12 (names
    strict only enables for 2025.12 are left out)."""
    names = []
    for name in list(xps.__all__):  # a copy: changing strict's flags rebuilds its __all__
        obj = getattr(xps, name)
        module = type(obj).__module__ if isinstance(obj, xps._dtypes.DType) else getattr(obj, "__module__", None)
        if module not in ISSUE3_MODULES or name in NOT_ISSUE3:
            continue
        if _needs_newer_api(name):
            continue
        names.append(name)
    return sorted(names) + CONSTANTS


def _needs_newer_api(name: str) -> bool:
    """Whether strict refuses ``name`` under API version 2024.12 (e.g. broadcast_shapes)."""
    obj = getattr(xps, name)
    if isinstance(obj, type) or not callable(obj) or name.startswith("__"):
        return False
    xps.set_array_api_strict_flags(api_version="2024.12")
    try:
        obj()
    except RuntimeError as exc:
        return "requires API version" in str(exc)
    except Exception:  # noqa: BLE001 - a missing-argument TypeError etc.: available in 2024.12
        return False
    finally:
        xps.reset_array_api_strict_flags()
    return False


STRICT_NAMES = _strict_names_2024()


@pytest.fixture(scope="module", autouse=True)
def _backend():
    return get_backend()


def test_strict_section_names_are_covered_by_the_lists():
    """The hand lists below (CORE, FUNCTIONS) hold every name strict has in issue 3's sections,
    and the derivation found every section (a strict upgrade moving names would show here)."""
    assert set(STRICT_NAMES) <= set(CORE) | set(FUNCTIONS), set(STRICT_NAMES) - set(CORE) - set(FUNCTIONS)
    for expected in ("asarray", "astype", "int8", "add", "sum", "all", "matmul", "concat", "where",
                     "take", "__array_namespace_info__", "broadcast_to"):
        assert expected in STRICT_NAMES, expected
    assert "broadcast_shapes" not in STRICT_NAMES  # 2025.12


@pytest.mark.parametrize("name", STRICT_NAMES)
def test_every_strict_name_of_issue3_exists_with_a_compatible_signature(name):
    assert hasattr(gt, name), name
    assert name in gt.__all__
    _check_signature(name)


def test_array_api_compat_namespace():
    x = gt.asarray([1.0, 2.0])
    assert array_api_compat.is_array_api_obj(x)
    assert array_api_compat.array_namespace(x) is gt
    assert array_api_compat.array_namespace(x, gt.asarray(1)) is gt
    assert gt.__array_api_version__ == "2024.12"
    assert array_api_compat.device(x) == gt.Device()
    assert array_api_compat.size(x) == 2


def _check_signature(name: str) -> None:
    ours = getattr(gt, name)
    theirs = getattr(xps, name)
    if not callable(theirs) or isinstance(theirs, type):
        return
    sig_ours = inspect.signature(ours)
    sig_theirs = inspect.signature(theirs)
    params_ours = sig_ours.parameters
    for pname, p in sig_theirs.parameters.items():
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            assert any(q.kind is p.kind for q in params_ours.values()), (name, pname)
            continue
        if p.kind is inspect.Parameter.POSITIONAL_ONLY:
            positional = [q for q in params_ours.values()
                          if q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD)]
            index = list(sig_theirs.parameters).index(pname)
            assert index < len(positional), (name, pname)
            continue
        assert pname in params_ours, f"{name}: missing parameter {pname!r}"
        q = params_ours[pname]
        if p.kind is inspect.Parameter.KEYWORD_ONLY:
            assert q.kind is inspect.Parameter.KEYWORD_ONLY, (name, pname, q.kind)
        else:
            assert q.kind in (q.POSITIONAL_OR_KEYWORD, q.POSITIONAL_ONLY), (name, pname, q.kind)
        if p.default is not inspect.Parameter.empty:
            assert q.default is not inspect.Parameter.empty, f"{name}: {pname} needs a default"
            if isinstance(p.default, (bool, int, float, str, type(None))) and pname not in ("device", "copy"):
                assert q.default == p.default, (name, pname, q.default, p.default)
    for qname, q in params_ours.items():
        if qname not in sig_theirs.parameters and q.kind not in (q.VAR_POSITIONAL, q.VAR_KEYWORD):
            positional_extra = q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD) and len(
                [r for r in params_ours.values() if r.kind in (r.POSITIONAL_ONLY, r.POSITIONAL_OR_KEYWORD)]
            ) <= len([r for r in sig_theirs.parameters.values()
                      if r.kind in (r.POSITIONAL_ONLY, r.POSITIONAL_OR_KEYWORD)])
            assert positional_extra or q.default is not inspect.Parameter.empty, (
                f"{name}: extra parameter {qname!r} must have a default")


@pytest.mark.parametrize("name", CORE)
def test_core_names_and_signatures(name):
    assert hasattr(gt, name), name
    assert name in gt.__all__ or name.startswith("__")
    _check_signature(name)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_function_names_and_signatures(name):
    """Engineer B's functions (fails until they are registered in gputensor/__init__.py)."""
    assert hasattr(gt, name), name
    _check_signature(name)


def test_array_methods_match_strict():
    x = gt.asarray([[1.0]])
    for attr in ("shape", "dtype", "device", "ndim", "size", "T", "mT"):
        getattr(x, attr)
    for method in ("__array_namespace__", "to_device", "__dlpack__", "__dlpack_device__",
                   "__getitem__", "__setitem__", "__bool__", "__int__", "__float__",
                   "__index__", "__complex__", "__len__"):
        assert callable(getattr(x, method)), method
    for name in dir(xps.asarray([1.0])):
        if name.startswith("__") and name.endswith("__") and name not in (
            "__init__", "__new__", "__init_subclass__", "__subclasshook__", "__reduce__",
            "__reduce_ex__", "__getstate__", "__setstate__", "__class__", "__dict__",
            "__module__", "__weakref__", "__slots__", "__annotations__", "__doc__", "__sizeof__",
            "__dir__", "__format__", "__getattribute__", "__setattr__", "__delattr__",
            "__str__", "__repr__", "__hash__", "__buffer__", "__array__", "__iter__",
            "__abstractmethods__", "__orig_bases__", "__parameters__", "__firstlineno__",
            "__static_attributes__", "__array_priority__",
        ):
            assert hasattr(x, name), name


@pytest.mark.requires("shader-f64", "shader-int64")  # the sets below (without them: test_array_object)
def test_info_namespace():
    info = gt.__array_namespace_info__()
    caps = info.capabilities()
    assert set(caps) == {"boolean indexing", "data-dependent shapes", "max dimensions"}
    assert caps["boolean indexing"] is True and caps["data-dependent shapes"] is True
    assert info.default_device() == gt.Device()
    assert info.devices()[0] == gt.Device() and info.devices() == gt.devices()
    defaults = info.default_dtypes()
    assert defaults["real floating"] == gt.float32
    assert defaults["integral"] == gt.int64 == defaults["indexing"]
    assert defaults["complex floating"] == gt.complex128
    dtypes = info.dtypes()
    assert set(dtypes) == {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                           "uint64", "float32", "float64", "complex64", "complex128"}  # no float16: not standard
    assert set(info.dtypes(kind="signed integer")) == {"int8", "int16", "int32", "int64"}
    assert set(info.dtypes(kind=("bool", "real floating"))) == {"bool", "float32", "float64"}
    assert info.dtypes(kind="complex floating") == {"complex64": gt.complex64, "complex128": gt.complex128}
    with pytest.raises(ValueError):
        info.dtypes(kind="nope")
    with pytest.raises(ValueError):
        info.default_dtypes(device="cpu")


def test_astype():
    h = np.array([-1.7, 0.0, 2.5, 300.2], dtype=np.float32)
    x = gt.asarray(h)
    for dtype in ("bool", "int16", "int32", "int64", "float16", "float64"):
        out = gt.astype(x, getattr(gt, dtype))
        assert out.dtype.name == dtype
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(out.get(), h.astype(dtype))
    np.testing.assert_array_equal(gt.astype(x[::-1], gt.int32).get(), h[::-1].astype(np.int32))
    # negative floats to unsigned are unspecified (NumPy wraps on x86, WGSL clamps): not tested
    assert_same(gt.astype(gt.abs(x), gt.uint16), np.asarray(np.abs(h).astype(np.uint16)))
    assert_same(gt.astype(gt.asarray([-1, 300], dtype=gt.int32), gt.uint8), np.asarray(np.array([-1, 300], np.int32).astype(np.uint8)))
    assert gt.astype(x, gt.float32, copy=False) is x
    y = gt.astype(x, gt.float32)
    assert y is not x
    y[0] = 0
    assert float(x[0]) != 0
    with pytest.raises(TypeError):
        gt.astype(h, gt.float32)
    assert gt.astype(x, np.float32).dtype == gt.float32  # NumPy's spellings are dtypes too
    with pytest.raises(TypeError):
        gt.astype(x, "not a dtype")
    with pytest.raises(ValueError):
        gt.astype(x, gt.int8, device="cpu")


def _portable_softplus(xp, x):
    """Code written once for any Array API namespace."""
    return xp.where(x > 20, x, xp.log1p(xp.exp(x))) if hasattr(xp, "where") else xp.log1p(xp.exp(x))


def test_write_once_code_runs_on_numpy_and_gputensor():
    h = np.linspace(-3, 3, 13, dtype=np.float32)

    def compute(x):
        xp = array_api_compat.array_namespace(x)
        y = xp.log1p(xp.exp(x)) * 2 - xp.abs(x) / (1 + x * x)
        return y[::2] + xp.sqrt(xp.asarray(4.0, dtype=x.dtype))

    expected = compute(array_api_compat.array_namespace(h).asarray(h))
    got = compute(gt.asarray(h))
    assert_same(got, expected, "chained")


@pytest.mark.parametrize("src", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"])
def test_astype_integer_widening_and_wrapping(src):
    """Every integer-to-integer cast as NumPy (regression: naga converted u32 -> i64 with sign
    extension and i32 -> u64 with zero extension)."""
    info = np.iinfo(src)
    h = np.array([info.min, -1 if info.min else 1, 0, info.max], dtype=src)
    x = gt.asarray(h)
    for dst in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"):
        np.testing.assert_array_equal(gt.astype(x, getattr(gt, dst)).get(), h.astype(dst), err_msg=dst)


# ---- the design card's uses ------------------------------------------------------------------
def test_design_card_uses():
    """``import gputensor``; ``a = gputensor.asarray(np_array)``; ``a @ b``; ``gt.sum(a, axis=0)``;
    ``gt.exp(a) + 1`` -- checked against NumPy."""
    import gputensor

    rng = np.random.default_rng(7)
    np_a = rng.standard_normal((33, 17)).astype(np.float32)
    np_b = rng.standard_normal((17, 9)).astype(np.float32)
    a = gputensor.asarray(np_a)
    b = gputensor.asarray(np_b)
    assert a.dtype == gputensor.float32 and a.shape == (33, 17)
    c = a @ b
    # float32 results against float64 references: the chained tolerance of float32
    assert_same(c, np_a.astype(np.float64) @ np_b, "chained", type_check=False)
    assert_same(gputensor.sum(a, axis=0), np_a.astype(np.float64).sum(axis=0), "chained", type_check=False)
    assert_same(gputensor.exp(a) + 1, np.exp(np_a.astype(np.float64)) + 1, "chained", atol=0.0, type_check=False)
    assert c.dtype == gputensor.float32
    i = gputensor.asarray(np.arange(12, dtype=np.int64).reshape(3, 4))
    assert_same((i @ i.T), np.asarray(np.arange(12).reshape(3, 4) @ np.arange(12).reshape(3, 4).T))


# A small random-program fuzzer: the same Array API code runs on NumPy (float64 reference) and
# gputensor (float32), through array_api_compat's namespace lookup.
_UNARY_STEPS = ["tanh", "abs", "negative", "sin", "square", "flip", "transpose", "slice"]
_BINARY_STEPS = ["add", "subtract", "multiply", "maximum", "scalar_add", "scalar_rmul"]
_REDUCE_STEPS = ["sum0", "mean_last", "max_all", "matmul_t", "cumsum0"]


def _step(xp, x, y, step: str):
    if step in ("tanh", "abs", "negative", "sin", "square"):
        return getattr(xp, step)(x)
    if step == "flip":
        return xp.flip(x, axis=0) if x.ndim else x
    if step == "transpose":
        return xp.permute_dims(x, tuple(range(x.ndim))[::-1])
    if step == "slice":
        return x[::-2] if x.ndim else x
    if step == "scalar_add":
        return x + 0.5
    if step == "scalar_rmul":
        return 2 * x
    if step in ("add", "subtract", "multiply", "maximum"):
        try:
            xp.broadcast_arrays(x, y)
        except ValueError:
            return x
        return getattr(xp, step)(x, y)
    if step == "sum0":
        return xp.sum(x, axis=0) if x.ndim else x
    if step == "mean_last":
        return xp.mean(x, axis=-1) if x.ndim and x.shape[-1] else x
    if step == "max_all":
        return xp.max(x) if x.size else x
    if step == "matmul_t":
        return x @ xp.matrix_transpose(x) if x.ndim >= 2 else x
    if step == "cumsum0":
        return xp.cumulative_sum(x, axis=0) if x.ndim else x
    raise AssertionError(step)


@given(
    shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5),
    y_shape=hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=5),
    steps=st.lists(st.sampled_from(_UNARY_STEPS + _BINARY_STEPS + _REDUCE_STEPS), min_size=1, max_size=6),
    seed=st.integers(0, 2**16),
)
def test_fuzz_random_programs_against_numpy(shape, y_shape, steps, seed):
    """Random chains of views, elementwise ops with broadcasting and weak scalars, reductions,
    scans and matmuls: gputensor (float32) agrees with NumPy (float64), shapes exactly."""
    rng = np.random.default_rng(seed)
    hx = rng.uniform(-1, 1, shape).astype(np.float32)
    hy = rng.uniform(-1, 1, y_shape).astype(np.float32)
    ref = array_api_compat.array_namespace(hx)
    gx, gy = gt.asarray(hx), gt.asarray(hy)
    assert array_api_compat.array_namespace(gx) is gt
    rx, ry = ref.asarray(hx, dtype=ref.float64), ref.asarray(hy, dtype=ref.float64)
    scale = 1.0
    for step in steps:
        rx = _step(ref, rx, ry, step)
        gx = _step(gt, gx, gy, step)
        scale = max(scale, float(np.max(np.abs(rx), initial=1.0)))
        assert gx.shape == rx.shape, (steps, step)
    assert gx.dtype == gt.float32
    rtol, atol = tolerance("float32", "chained")
    assert_same(gx, np.asarray(rx), "chained", rtol=rtol, atol=atol * scale * 30, type_check=False)


@given(st.data())
def test_astype_property(data):
    """astype between every pair of dtypes, from negative-step views, against NumPy (values the
    spec leaves unspecified -- NaN/inf/out-of-range floats to integers, negative floats to
    unsigned -- are not drawn); copy=False returns x only when nothing changes."""
    src = data.draw(st.sampled_from(ALL_DTYPES))
    dst = data.draw(st.sampled_from(ALL_DTYPES))
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    if np.dtype(src).kind == "f" and np.dtype(dst).kind in "iu":
        info = np.iinfo(dst)
        ftype = np.dtype(src).type
        limit = 6e4 if src == "float16" else 1e9
        lo, hi = ftype(max(float(info.min), -limit)), ftype(min(float(info.max), limit))
        if float(hi) > info.max:  # rounded up past the integer range: step inside it
            hi = np.nextafter(hi, ftype(0))
        lo, hi = float(lo), float(hi)
        elements = hnp.from_dtype(np.dtype(src), min_value=lo, max_value=hi, allow_nan=False,
                                  allow_infinity=False)
    else:
        elements = None
    h = data.draw(hnp.arrays(np.dtype(src), shape, elements=elements))
    x = gt.asarray(np.ascontiguousarray(h[..., ::-1]))[..., ::-1] if h.ndim else gt.asarray(h)
    with np.errstate(all="ignore"):
        expected = h.astype(dst)
    got = gt.astype(x, getattr(gt, dst))
    assert got.dtype.name == dst and got.shape == shape
    np.testing.assert_array_equal(got.get(), expected)
    if np.dtype(dst).kind == "f":
        np.testing.assert_array_equal(np.signbit(got.get()), np.signbit(expected))
    assert (gt.astype(x, getattr(gt, dst), copy=False) is x) == (src == dst)


ALL_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float16", "float32", "float64"]
