"""Tests of gputensor/_wgsl/f64math.wgsl, the WGSL float64 transcendental library.

Every public function runs on the device over ~100k arguments spread over its whole domain (tiny,
subnormal, near 0, near the reduction boundaries, near multiples of pi/2, huge, negative and the
special values) and is compared with NumPy float64: NaN/inf/signed-zero results must agree
exactly, finite results within ``MAX_ULP`` units in the last place (and ``MAX_REL`` relative
error where the result is a normal number). The measured error is printed (``pytest -s``).

The kernel is ``math_test.wgsl`` with ``{{FUNCS}}`` = the library functions the call needs
(each function with the ones it calls, exactly as a loader of the library would) and
``{{CALL}}`` = the expression.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable

import numpy as np
import pytest

import _wgsl_library as _lib

from gputensor._backend import get_backend

MAX_ULP = 2.0
MAX_REL = 4e-16
N = 100_000
PUBLIC = (
    "exp_f64", "exp2_f64", "log_f64", "log2_f64", "sin_f64", "cos_f64", "tan_f64",
    "asin_f64", "acos_f64", "atan_f64", "atan2_f64",
)


TINY = np.finfo(np.float64).tiny
MAXF = np.finfo(np.float64).max
SUB = 5e-324
INF = np.inf
NAN = np.nan


# ---- the library, as a loader sees it (tests/_wgsl_library.py) ---------------------------------
def library_text() -> str:
    return _lib.library_text("f64math")


def library_chunks() -> dict[str, str]:
    return _lib.library_chunks("f64math")


dependencies = _lib.dependencies


def source_for(call: str) -> str:
    return _lib.source_for("f64math", call)


F64_INT64 = pytest.mark.requires("shader-f64", "shader-int64")


# ---- device runs --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def backend():
    """The backend; its tests are marked ``requires("shader-f64", "shader-int64")``."""
    return get_backend()


def run_call(backend, call: str, *args: np.ndarray) -> np.ndarray:
    """Evaluate the WGSL expression ``call`` on the device (``_wgsl_library.run_call``)."""
    return _lib.run_call(backend, "f64math", call, *args)


# ---- comparison ---------------------------------------------------------------------------------
def ulp_error(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| in units of the spacing of doubles at ref (finite refs; others give 0)."""
    finite = np.isfinite(ref) & np.isfinite(got)
    g = np.where(finite, got, 0.0)
    r = np.where(finite, ref, 0.0)
    with np.errstate(over="ignore", invalid="ignore"):
        err = np.abs(g - r) / np.spacing(np.abs(r))
    err = np.where(np.isfinite(err), err, np.inf)
    return np.where(finite, err, 0.0)


def check(name: str, got: np.ndarray, ref: np.ndarray, *inputs: np.ndarray) -> tuple[float, float]:
    """Assert that ``got`` matches ``ref``; returns (max ulp, max relative error)."""

    def where(mask: np.ndarray) -> str:
        i = int(np.flatnonzero(mask)[0])
        args = ", ".join(repr(float(a[i])) for a in inputs)
        return f"{name}({args}) = {got[i]!r}, NumPy {ref[i]!r}"

    bad = np.isnan(got) != np.isnan(ref)
    assert not bad.any(), f"NaN mismatch: {where(bad)}"
    inf_ref = np.isinf(ref)
    bad = (inf_ref != np.isinf(got)) | (inf_ref & (got != ref))
    assert not bad.any(), f"inf mismatch: {where(bad)}"
    bad = (ref == 0) & (got == 0) & (np.signbit(ref) != np.signbit(got))
    assert not bad.any(), f"sign of zero: {where(bad)}"
    ulp = ulp_error(got, ref)
    normal = np.isfinite(ref) & (np.abs(ref) >= TINY)
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.where(normal, np.abs(got - ref) / np.abs(np.where(normal, ref, 1.0)), 0.0)
    max_ulp, max_rel = float(ulp.max()), float(rel.max())
    print(f"\n{name}: {got.size} args, max error {max_ulp:.3f} ulp, max rel {max_rel:.3g}")
    assert max_ulp <= MAX_ULP, f"{max_ulp} ulp: {where(ulp == ulp.max())}"
    assert max_rel <= MAX_REL, f"rel {max_rel}: {where(rel == rel.max())}"
    return max_ulp, max_rel


# ---- arguments ----------------------------------------------------------------------------------
def _signs(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.choice([-1.0, 1.0], n)


def _logu(rng: np.random.Generator, lo: float, hi: float, n: int, signed: bool = True) -> np.ndarray:
    """Magnitudes log-uniform in [10^lo, 10^hi] (with random signs); underflow gives subnormals."""
    with np.errstate(under="ignore", over="ignore"):
        v = 10.0 ** rng.uniform(lo, hi, n)
    v = np.minimum(v, MAXF)
    return v * _signs(rng, n) if signed else v


def _near(rng: np.random.Generator, centers: np.ndarray, max_ulps: int = 4) -> np.ndarray:
    """Doubles a few ulps either side of ``centers``."""
    steps = rng.integers(-max_ulps, max_ulps + 1, centers.size)
    return centers + steps * np.spacing(np.abs(centers))


def _fill(rng: np.random.Generator, parts: list[np.ndarray], rest: Callable[[int], np.ndarray]) -> np.ndarray:
    x = np.concatenate([np.asarray(p, dtype=np.float64).ravel() for p in parts])
    if x.size < N:
        x = np.concatenate([x, rest(N - x.size)])
    return x


def _positive_bits(rng: np.random.Generator, n: int) -> np.ndarray:
    """Positive finite doubles with uniformly random bit patterns (every exponent equally)."""
    return rng.integers(1, 0x7FF0000000000000, n, dtype=np.int64).view(np.float64)


SPECIAL = [0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, SUB, -SUB, TINY, -TINY, MAXF, -MAXF, 0.5, -0.5, 2.0]


def args_exp(rng):
    ln2 = np.log(2.0)
    k = rng.integers(-1075, 1025, 8000)
    return _fill(rng, [
        SPECIAL, [709.782712893384, 709.7827128933841, 709.79, 710.0, -708.3964185322641,
                  -708.4, -745.1332191019411, -745.1332191019412, -745.14, -745.2, -1e300, 1e300],
        _near(rng, np.full(2000, 709.782712893384), 40),
        _near(rng, np.full(2000, -745.1332191019411), 40),
        _near(rng, np.full(2000, -708.3964185322641), 40),
        _near(rng, k * ln2), _near(rng, (k[:4000] + 0.5) * ln2),
        rng.uniform(-1, 1, 15000), _logu(rng, -330, 0, 15000),
    ], lambda n: rng.uniform(-746, 710, n))


def args_exp2(rng):
    k = rng.integers(-1080, 1025, 6000).astype(np.float64)
    return _fill(rng, [
        SPECIAL, [1023.9999999999999, 1024.0, -1022.0, -1074.0, -1075.0, -1074.5, -1075.0000000000002,
                  -1074.9999999999998, 0.5, -1022.5, 1e300, -1e300],
        k, k + 0.5, _near(rng, k, 8), _near(rng, np.full(2000, 1024.0), 40),
        _near(rng, np.full(2000, -1022.0), 40), _near(rng, np.full(2000, -1075.0), 40),
        rng.uniform(-1, 1, 15000), _logu(rng, -330, 0, 10000),
    ], lambda n: rng.uniform(-1080, 1030, n))


def args_log(rng):
    pw = np.ldexp(1.0, np.arange(-1074, 1024))
    return _fill(rng, [
        SPECIAL, [-1e-300, -3.0, 1.0000000000000002, 0.9999999999999999, np.sqrt(2.0), np.sqrt(0.5)],
        pw, _near(rng, pw * np.sqrt(2.0), 2), _near(rng, np.ones(4000), 50),
        1.0 + _logu(rng, -16, -0.4, 20000),
        rng.integers(1, 1 << 52, 5000, dtype=np.int64).view(np.float64),  # subnormal
        rng.uniform(0, 10, 10000),
    ], lambda n: _positive_bits(rng, n))


def args_trig(rng):
    k = rng.integers(-(1 << 21), 1 << 21, 10000).astype(np.float64)
    big = _logu(rng, 6, 308, 10000)
    return _fill(rng, [
        SPECIAL, [1e22, 1e300, 2.0**21, -(2.0**21),
                  np.pi, np.pi / 2, np.pi / 4, 3 * np.pi / 2, 1e5, 1.5707963267948966e5],
        _near(rng, k * (np.pi / 2), 3), _near(rng, k[:3000] * (np.pi / 4), 3),
        _near(rng, np.round(big / (np.pi / 2)) * (np.pi / 2), 2),  # big: pi/2 multiples in double
        _near(rng, np.full(2000, 2.0**21), 1000), big,
        rng.uniform(-1e5, 1e5, 20000), _logu(rng, -320, 0, 10000),
    ], lambda n: rng.uniform(-10, 10, n))


def args_asin(rng):
    return _fill(rng, [
        SPECIAL, [1.0000000000000002, -1.0000000000000002, 0.9999999999999999, -0.9999999999999999,
                  0.5000000000000001, 0.49999999999999994, 1.5, -3.0, 1e300],
        _signs(rng, 15000) * (1 - _logu(rng, -16.5, -0.5, 15000, signed=False)),
        _near(rng, 0.5 * _signs(rng, 5000), 1000),
        _logu(rng, -330, -3, 10000),
        _signs(rng, 2000) * (1 + _logu(rng, -15, 3, 2000, signed=False)),
    ], lambda n: rng.uniform(-1, 1, n))


def args_atan(rng):
    bp = np.array([7 / 16, 11 / 16, 19 / 16, 39 / 16])
    return _fill(rng, [
        SPECIAL, [1.152921504606847e18, 1e16, 1e300, -1e300, 7.450580596923828e-09],
        _signs(rng, 8000) * _near(rng, rng.choice(bp, 8000), 1000),
        rng.uniform(-5, 5, 30000),
    ], lambda n: _logu(rng, -330, 308, n))


def args_atan2(rng):
    sp = np.array([NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, SUB, -SUB, TINY, MAXF, -MAXF, 2.5, -0.3])
    gy, gx = np.meshgrid(sp, sp)
    n_rand = 40000
    x1 = _logu(rng, -320, 308, n_rand)
    y1 = _logu(rng, -320, 308, n_rand)
    c = rng.choice(np.array([7 / 16, 11 / 16, 19 / 16, 39 / 16, 1.0]), 10000)
    x2 = _logu(rng, -300, 300, 10000)
    y2 = _signs(rng, 10000) * np.abs(x2) * c * (1 + rng.uniform(-1e-6, 1e-6, 10000))
    x3 = rng.uniform(-5, 5, 30000)
    y3 = rng.uniform(-5, 5, 30000)
    x4 = _logu(rng, -2, 2, 20000 - gx.size)
    with np.errstate(over="ignore", under="ignore"):
        y4 = x4 * _logu(rng, -320, 320, x4.size)  # far from the diagonal, over/underflowing ratios
    y = np.concatenate([gy.ravel(), y1, y2, y3, y4])
    x = np.concatenate([gx.ravel(), x1, x2, x3, x4])
    return y, x


CASES: dict[str, tuple[Callable, Callable]] = {
    "exp_f64": (args_exp, np.exp),
    "exp2_f64": (args_exp2, np.exp2),
    "log_f64": (args_log, np.log),
    "log2_f64": (args_log, np.log2),
    "sin_f64": (args_trig, np.sin),
    "cos_f64": (args_trig, np.cos),
    "tan_f64": (args_trig, np.tan),
    "asin_f64": (args_asin, np.arcsin),
    "acos_f64": (args_asin, np.arccos),
    "atan_f64": (args_atan, np.arctan),
}


# ---- tests --------------------------------------------------------------------------------------
def test_library_format():
    """Every function is defined once, each chunk defines its function, every public function
    exists, and the file has no enable directive, binding or entry point."""
    text = library_text()
    chunks = library_chunks()
    assert set(PUBLIC) <= chunks.keys()
    for name, body in chunks.items():
        assert name.endswith("_f64") or name.startswith("_f64_"), name
        defined = re.findall(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(", body)
        assert defined == [name], f"chunk {name} defines {defined}"
    head = _lib.library_head("f64math")
    assert not re.search(r"^\s*(fn|const|var|struct|alias)\b", head, re.MULTILINE)
    for forbidden in (r"^\s*enable\b", r"@group", r"@binding", r"@compute", r"@workgroup_size"):
        assert not re.search(forbidden, text, re.MULTILINE), forbidden
    # dependency pulling gives self-contained sources
    assert dependencies(chunks, ["sin_f64"])[-1] == "sin_f64"
    assert "_f64_rem_pio2_large" in dependencies(chunks, ["tan_f64"])
    assert dependencies(chunks, ["_f64_inf"]) == ["_f64_inf"]


@F64_INT64
@pytest.mark.parametrize("name", list(CASES))
def test_unary_against_numpy(backend, name):
    make_args, ref_fn = CASES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    x = make_args(rng)
    got = run_call(backend, f"{name}(x)", x)
    with np.errstate(all="ignore"):
        ref = ref_fn(x)
    check(name, got, ref, x)


@F64_INT64
def test_atan2_against_numpy(backend):
    rng = np.random.default_rng(2024)
    y, x = args_atan2(rng)
    got = run_call(backend, "atan2_f64(x, inp[params.n + i])", y, x)
    with np.errstate(all="ignore"):
        ref = np.arctan2(y, x)
    check("atan2_f64", got, ref, y, x)


# Arguments close to a multiple of pi/2 (the closest doubles to one below 2^21, and the closest of
# all doubles, 6381956970095103 * 2^797), huge ones, and the Cody-Waite / Payne-Hanek switch, with
# sin, cos, tan correctly rounded (computed offline in 4000-bit arithmetic). NumPy (glibc) is 8 and
# 14 ulp off on the 2^797 case, so these are checked against the exact values instead.
HARD_TRIG = [
    (1698673.2849629424, 1.0, -5.038136613397025e-17, -1.984860826006339e16),
    (321307.9594422229, -1.0, -4.429600834596129e-17, 2.2575397588644696e16),
    (642615.9188844458, 8.859201669192259e-17, -1.0, -8.859201669192259e-17),
    (1285231.8377688916, -1.7718403338384517e-16, 1.0, -1.7718403338384517e-16),
    (2570463.675537783, -3.5436806676769034e-16, 1.0, -3.5436806676769034e-16),
    (2525556.179351044, -1.0, 5.055121651696012e-16, -1978191760557328.0),
    (5.319372648326541e255, 1.0, -4.687165924254628e-19, -2.133485385753704e18),
    (1e22, -0.8522008497671888, 0.523214785395139, -1.6287782256068988),
    (1.7976931348623157e308, 0.004961954789184062, -0.9999876894265599, -0.004962015874444895),
    (8.98846567431158e307, 0.563127779850884, -0.826369834614148, -0.6814476476066215),
    (1e300, -0.8178819121159085, -0.5753861119575491, 1.4214488238747245),
    (2097151.9999999998, 0.6238443991766611, 0.7815485689423982, 0.7982157782220183),
    (2097152.0, 0.6238443993586297, 0.7815485687971482, 0.7982157786031967),
    (3000000.0, -0.8784900581447479, 0.4777606280773224, -1.8387661236969282),
]


@F64_INT64
@pytest.mark.parametrize("col,name", [(1, "sin_f64"), (2, "cos_f64"), (3, "tan_f64")])
def test_hard_trig_cases(backend, col, name):
    table = np.array(HARD_TRIG)
    x = np.concatenate([table[:, 0], -table[:, 0]])
    exact = np.concatenate([table[:, col], table[:, col] * (1.0 if name == "cos_f64" else -1.0)])
    got = run_call(backend, f"{name}(x)", x)
    err = ulp_error(got, exact)
    assert err.max() <= 1.0, f"{name}({x[err.argmax()]!r}) = {got[err.argmax()]!r}, exact {exact[err.argmax()]!r}"


@F64_INT64
def test_error_free_transformations(backend):
    """two_sum / fast_two_sum / two_prod return the exact rounding error on the device: the
    compiler must not have simplified them away (Mesa's NIR and NVIDIA's compiler both do without
    the _f64_opq barriers) nor may fma contraction have broken them."""
    from fractions import Fraction

    rng = np.random.default_rng(11)
    n = 2000
    a = _logu(rng, -30, 30, n)
    b = _logu(rng, -30, 30, n)
    two = lambda call: (run_call(backend, call + ".x", a, b), run_call(backend, call + ".y", a, b))
    big = np.maximum(np.abs(a), np.abs(b)) * np.sign(a)
    small = np.minimum(np.abs(a), np.abs(b))
    for call, op, x, y in (
        ("_f64_two_sum(x, inp[params.n + i])", "add", a, b),
        ("_f64_fast_two_sum(max(abs(x), abs(inp[params.n + i])) * sign(x), "
         "min(abs(x), abs(inp[params.n + i])))", "add", big, small),
        ("_f64_two_prod(x, inp[params.n + i])", "mul", a, b),
    ):
        hi, lo = two(call)
        for i in range(0, n, 4):
            fx, fy = Fraction(float(x[i])), Fraction(float(y[i]))
            exact = fx + fy if op == "add" else fx * fy
            resid = exact - Fraction(float(hi[i])) - Fraction(float(lo[i]))
            assert hi[i] == (x[i] + y[i] if op == "add" else x[i] * y[i]), call
            assert abs(resid) <= abs(exact) * Fraction(1, 2**100), f"{call}: {x[i]!r}, {y[i]!r}"


@F64_INT64
def test_exact_values(backend):
    """Values NumPy gives exactly: powers of two, zeros with their signs, quadrant constants."""
    x = np.array([1.0, 0.0, -0.0, 8.0, 2.0**-1074, 2.0**1023, 0.5])
    with np.errstate(divide="ignore"):
        ref = np.log2(x)
    np.testing.assert_array_equal(run_call(backend, "log2_f64(x)", x), ref)
    x = np.array([-3.0, 0.0, -0.0, 10.0, 1023.0, -1074.0, -1075.0])
    np.testing.assert_array_equal(run_call(backend, "exp2_f64(x)", x), np.exp2(x))
    z = np.array([0.0, -0.0])
    for fn, ref in (("sin_f64", np.sin), ("tan_f64", np.tan), ("asin_f64", np.arcsin), ("atan_f64", np.arctan)):
        got = run_call(backend, f"{fn}(x)", z)
        assert np.array_equal(np.signbit(got), np.signbit(ref(z))) and not got.any(), fn
    got = run_call(backend, "acos_f64(x)", np.array([1.0, -1.0, 0.0]))
    np.testing.assert_array_equal(got, np.arccos([1.0, -1.0, 0.0]))
    assert not np.signbit(got[0])
