"""Tests of gputensor/_wgsl/f32math.wgsl, the WGSL float32 transcendental library.

Every public function runs on the device over ~200k float32 arguments spread over its whole
domain (random bit patterns = every exponent equally, tiny, subnormal, near 1, near the reduction
boundaries, the floats closest to multiples of pi/2, huge up to 3.4e38, negative, special
values) and is compared with NumPy's float64 result: NaN/inf/signed-zero results must agree
exactly, finite results within ``MAX_ULP`` float32 units in the last place of the exact (float64)
value, which bounds the distance to NumPy's float64 result rounded to float32 by 1 ulp. The
measured maxima are printed (``pytest -s``): both the error against the float64 value and the
distance in ulps to the float32-rounded one.

The kernel is ``math_test.wgsl`` with ``{{FUNCS}}`` = the library functions the call needs
(each function with the ones it calls, exactly as a loader of the library would) and
``{{CALL}}`` = the expression. On a device that flushes float32 subnormals (NVIDIA), arguments
and results in the subnormal range are left out of the comparison.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable

import numpy as np
import pytest

import _wgsl_library as _lib

import gputensor as gt
from gputensor._backend import get_backend
from gputensor._backend.elementwise_ops import expression

from _compare import tol

MAX_ULP = 1.0
N = 400_000
PUBLIC = (
    "atan_f32", "asin_f32", "acos_f32", "atan2_f32", "log_f32", "log2_f32", "log10_f32",
    "log1p_f32", "sin_f32", "cos_f32", "tan_f32",
)


F32 = np.float32
TINY = float(np.finfo(F32).tiny)
MAXF = float(np.finfo(F32).max)
SUB = float(np.finfo(F32).smallest_subnormal)
INF = np.inf
NAN = np.nan

# The float32 closest to a multiple of pi/2 in each binade [2^E, 2^(E+1)), E = -1 .. 127, as the
# 24-bit significand m (x = m * 2^(E-23)); found by exhausting all 2^23 significands of every
# binade with a 64-bit fixed-point 2/pi. The smallest |x mod pi/2| of all is 1.6e-9 (E = 95).
HARD_SIGNIFICANDS = (
    8388608, 13176795, 13176795, 9882596, 9882596, 9882596, 9882596, 9882596, 16573937, 16573937,
    16573937, 16573937, 9168424, 9168424, 9168424, 9168424, 13444207, 13444207, 13444207, 8545886,
    8545886, 8545886, 10838702, 10838702, 10838702, 15971451, 10695401, 10695401, 10695401, 8681057,
    9688229, 9688229, 9436436, 14406447, 16765556, 10741887, 10741887, 10741887, 10741887, 10741887,
    10741887, 11617958, 11617958, 11617958, 11617958, 11617958, 16282999, 16282999, 16282999,
    12069257, 12069257, 14431945, 15613289, 16203961, 16499297, 16646965, 16720799, 16757716,
    8895696, 8895696, 8895696, 8895696, 8895696, 8895696, 8895696, 14946604, 14946604, 11209953,
    16536939, 13873446, 13873446, 15473482, 15473482, 15073473, 11405107, 11405107, 11405107,
    9012376, 9012376, 9012376, 9012376, 9012376, 9012376, 9012376, 13034427, 13034427, 10057457,
    10057457, 10057457, 10057457, 14015064, 14015064, 10511298, 8759415, 8759415, 8759415,
    16367173, 16367173, 16367173, 16367173, 16367173, 16367173, 12558490, 12558490, 12558490,
    15080472, 13819481, 13819481, 15704540, 9737329, 13663464, 10757867, 14173733, 14173733,
    14173733, 11057283, 12615508, 12615508, 9461631, 16567211, 9860544, 9860544, 15479557,
    16712125, 16712125, 16712125, 16712125, 12438944, 12438944,
)


# ---- the library, as a loader sees it (tests/_wgsl_library.py) ---------------------------------
def library_text() -> str:
    return _lib.library_text("f32math")


def library_chunks() -> dict[str, str]:
    return _lib.library_chunks("f32math")


dependencies = _lib.dependencies


def source_for(call: str) -> str:
    return _lib.source_for("f32math", call)


# ---- device runs --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def backend():
    return get_backend()


def run_call(backend, call: str, *args: np.ndarray) -> np.ndarray:
    """Evaluate the WGSL expression ``call`` on the device (``_wgsl_library.run_call``)."""
    return _lib.run_call(backend, "f32math", call, *args)


@pytest.fixture(scope="module")
def flushes_subnormals(backend) -> bool:
    """Whether the device flushes float32 subnormals (NVIDIA does; lavapipe does not)."""
    x = np.array([3 * SUB, 1e-40], dtype=F32)
    got = run_call(backend, "x * inp[params.n + i]", x, np.ones(2, dtype=F32))
    return bool((got == 0).any())


# ---- comparison ---------------------------------------------------------------------------------
def _ordered(v: np.ndarray) -> np.ndarray:
    """float32 bits mapped to integers in the order of the values (ulp distance = difference)."""
    b = v.astype(F32).view(np.int32).astype(np.int64)
    return np.where(b < 0, -(b & 0x7FFFFFFF), b)


def ulp_errors(got: np.ndarray, ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(|got - ref| in float32 ulps at ref, ulp distance from got to ref rounded to float32) for
    finite results (others give 0); ``ref`` is float64."""
    with np.errstate(over="ignore", invalid="ignore"):
        r32 = ref.astype(F32)
    finite = np.isfinite(r32) & np.isfinite(got)
    g = np.where(finite, got.astype(np.float64), 0.0)
    r = np.where(finite, ref, 0.0)
    spacing = np.spacing(np.abs(np.where(finite, r32, F32(1)))).astype(np.float64)
    exact = np.where(finite, np.abs(g - r) / spacing, 0.0)
    dist = np.where(finite, np.abs(_ordered(np.where(finite, got, 0)) - _ordered(np.where(finite, r32, 0))), 0)
    return exact, dist


def check(name: str, got: np.ndarray, ref: np.ndarray, *inputs: np.ndarray, ftz: bool = False) -> float:
    """Assert that ``got`` matches ``ref`` (float64); returns the max error in ulps."""
    with np.errstate(over="ignore", invalid="ignore"):
        r32 = ref.astype(F32)
    if ftz:  # leave out subnormal arguments and results
        keep = ~((np.abs(r32) < TINY) & (r32 != 0))
        for a in inputs:
            keep &= ~((np.abs(a) < TINY) & (a != 0))
        got, ref, r32 = got[keep], ref[keep], r32[keep]
        inputs = tuple(a[keep] for a in inputs)

    def where(mask: np.ndarray) -> str:
        i = int(np.flatnonzero(mask)[0])
        args = ", ".join(repr(F32(a[i])) for a in inputs)
        return f"{name}({args}) = {got[i]!r}, NumPy {ref[i]!r} ({r32[i]!r} in float32)"

    bad = np.isnan(got) != np.isnan(r32)
    assert not bad.any(), f"NaN mismatch: {where(bad)}"
    inf_ref = np.isinf(r32)
    bad = (inf_ref != np.isinf(got)) | (inf_ref & (got != r32))
    assert not bad.any(), f"inf mismatch: {where(bad)}"
    bad = (r32 == 0) & (got == 0) & (np.signbit(r32) != np.signbit(got))
    assert not bad.any(), f"sign of zero: {where(bad)}"
    exact, dist = ulp_errors(got, ref)
    max_ulp = float(exact.max())
    print(f"\n{name}: {got.size} args, max error {max_ulp:.3f} ulp of the exact value, "
          f"max {int(dist.max())} ulp from NumPy rounded to float32 "
          f"({100 * np.count_nonzero(dist) / got.size:.3f}% not equal)")
    assert max_ulp <= MAX_ULP, f"{max_ulp} ulp: {where(exact == exact.max())}"
    assert dist.max() <= 1, f"{dist.max()} ulp: {where(dist == dist.max())}"
    return max_ulp


# ---- arguments ----------------------------------------------------------------------------------
def _signs(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.choice([-1.0, 1.0], n)


def _logu(rng: np.random.Generator, lo: float, hi: float, n: int, signed: bool = True) -> np.ndarray:
    """Magnitudes log-uniform in [10^lo, 10^hi] (random signs), as float32 (subnormals below)."""
    v = 10.0 ** rng.uniform(lo, hi, n)
    v = np.minimum(v, MAXF)
    return (v * _signs(rng, n) if signed else v).astype(F32)


def _near(rng: np.random.Generator, centers: np.ndarray, max_ulps: int = 4) -> np.ndarray:
    """float32 values a few ulps either side of ``centers`` (rounded to float32 first)."""
    c = np.asarray(centers, dtype=F32)
    steps = rng.integers(-max_ulps, max_ulps + 1, c.size)
    with np.errstate(over="ignore"):
        return (c.astype(np.float64) + steps * np.spacing(np.abs(c)).astype(np.float64)).astype(F32)


def _bits(rng: np.random.Generator, n: int, signed: bool = True) -> np.ndarray:
    """Finite float32 values with uniformly random bit patterns (every exponent equally)."""
    v = rng.integers(1, 0x7F800000, n, dtype=np.uint32).view(F32)
    return v * _signs(rng, n).astype(F32) if signed else v


def _fill(parts: list, rest: Callable[[int], np.ndarray]) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = np.concatenate([np.asarray(p, dtype=np.float64).astype(F32).ravel() for p in parts])
    if x.size < N:
        x = np.concatenate([x, rest(N - x.size).astype(F32)])
    return x


SPECIAL = [0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, SUB, -SUB, TINY, -TINY, MAXF, -MAXF, 0.5, -0.5, 2.0,
           1e-40, -1e-40]


def args_log(rng):
    pw = np.ldexp(1.0, np.arange(-149, 128))
    return _fill([
        SPECIAL, [-1e-30, -3.0, 1.0000001, 0.99999994, np.sqrt(2.0), np.sqrt(0.5), 10.0, 0.1],
        pw, _near(rng, pw[pw < MAXF / 2] * np.sqrt(2.0), 3), _near(rng, np.ones(4000), 60),
        1.0 + _logu(rng, -8, -0.4, 20000).astype(np.float64),
        10.0 ** np.arange(-45, 39), _near(rng, 10.0 ** rng.integers(-37, 38, 2000), 3),
        rng.integers(1, 1 << 23, 5000, dtype=np.uint32).view(F32),  # subnormal
        rng.uniform(0, 10, 20000), _bits(rng, 60000, signed=False),
    ], lambda n: _bits(rng, n))


def args_log1p(rng):
    return _fill([
        SPECIAL, [-1.0, -0.99999994, -1.0000001, -2.0, np.sqrt(2.0) - 1, np.sqrt(0.5) - 1, 5.96e-8,
                  -5.96e-8, 6e-8, 1e-7, 2.0**24, 3e38],
        _near(rng, np.full(3000, np.sqrt(2.0) - 1), 200), _near(rng, np.full(3000, np.sqrt(0.5) - 1), 200),
        _logu(rng, -46, 0, 40000), -1.0 + _logu(rng, -7.3, -0.3, 10000, signed=False).astype(np.float64),
        rng.uniform(-1, 1, 30000), rng.uniform(-1, 10, 20000), _bits(rng, 30000, signed=False),
    ], lambda n: _bits(rng, n))


def args_trig(rng):
    k = np.arange(1, 8192, dtype=np.float64)
    hard = np.array(HARD_SIGNIFICANDS, dtype=np.float64) * np.ldexp(1.0, np.arange(-1, 128) - 23)
    hard = hard[np.abs(hard) <= MAXF]
    return _fill([
        SPECIAL, [np.pi, np.pi / 2, np.pi / 4, 0.7853982, 0.78539807, 12000.0, 11999.999, 12000.001,
                  8192.0, 2.0**-12, 2.0**-13, 1e30, 1e10, 1.7e38],
        hard, -hard, _near(rng, np.repeat(hard, 20), 3),
        _near(rng, np.tile(k * (np.pi / 2), 2), 3), _near(rng, k[:4000] * (np.pi / 4), 2),
        _near(rng, np.full(2000, 12000.0), 1000), _near(rng, np.full(1000, 0.7853982), 200),
        rng.uniform(-20, 20, 25000), rng.uniform(-12000, 12000, 25000), _logu(rng, -46, 0, 15000),
        _bits(rng, 50000),
    ], lambda n: _logu(rng, 3, 38.5, n))


def args_asin(rng):
    return _fill([
        SPECIAL, [1.0000001, -1.0000001, 0.99999994, -0.99999994, 0.50000006, 0.49999997, 1.5, -3.0,
                  2.0**-12, -(2.0**-12), 1e30],
        _signs(rng, 30000) * (1 - _logu(rng, -7.3, -0.3, 30000, signed=False).astype(np.float64)),
        _near(rng, 0.5 * _signs(rng, 5000), 1000), _logu(rng, -46, -1, 20000),
        _signs(rng, 2000) * (1 + _logu(rng, -7, 3, 2000, signed=False).astype(np.float64)),
    ], lambda n: rng.uniform(-1, 1, n))


def args_atan(rng):
    bp = np.array([7 / 16, 11 / 16, 19 / 16, 39 / 16])
    return _fill([
        SPECIAL, [2.0**26, 2.0**25, 6.7e7, 6.3e7, 1e30, -1e30, 2.0**-12, 1e-4],
        _signs(rng, 16000) * _near(rng, rng.choice(bp, 16000), 1000),
        _near(rng, np.full(2000, 2.0**26), 100), _near(rng, np.full(2000, 2.0**-12), 100),
        rng.uniform(-5, 5, 40000), _bits(rng, 50000),
    ], lambda n: _logu(rng, -46, 38.5, n))


def args_atan2(rng):
    sp = np.array([NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, SUB, -SUB, TINY, MAXF, -MAXF, 2.5, -0.3],
                  dtype=F32)
    gy, gx = np.meshgrid(sp, sp)
    x1, y1 = _bits(rng, 60000), _bits(rng, 60000)
    c = rng.choice(np.array([7 / 16, 11 / 16, 19 / 16, 39 / 16, 1.0]), 20000)
    x2 = _logu(rng, -37, 37, 20000)
    y2 = (_signs(rng, 20000) * np.abs(x2) * c * (1 + rng.uniform(-1e-3, 1e-3, 20000))).astype(F32)
    x3, y3 = rng.uniform(-5, 5, 50000).astype(F32), rng.uniform(-5, 5, 50000).astype(F32)
    x4 = _logu(rng, -2, 2, 40000)
    with np.errstate(over="ignore", under="ignore"):
        y4 = (x4 * _logu(rng, -50, 50, x4.size).astype(np.float64)).astype(F32)  # over/underflowing ratios
    y5 = _logu(rng, -45, -36, 10000)  # both tiny or subnormal
    x5 = _logu(rng, -45, -36, 10000)
    y = np.concatenate([gy.ravel(), y1, y2, y3, y4, y5])
    x = np.concatenate([gx.ravel(), x1, x2, x3, x4, x5])
    return y, x


CASES: dict[str, tuple[Callable, Callable]] = {
    "log_f32": (args_log, np.log),
    "log2_f32": (args_log, np.log2),
    "log10_f32": (args_log, np.log10),
    "log1p_f32": (args_log1p, np.log1p),
    "sin_f32": (args_trig, np.sin),
    "cos_f32": (args_trig, np.cos),
    "tan_f32": (args_trig, np.tan),
    "asin_f32": (args_asin, np.arcsin),
    "acos_f32": (args_asin, np.arccos),
    "atan_f32": (args_atan, np.arctan),
}


# ---- tests --------------------------------------------------------------------------------------
def test_library_format():
    """Every function is defined once, each chunk defines its function, every public function
    exists, nothing needs f64/i64, and the file has no enable directive, binding or entry point."""
    text = library_text()
    chunks = library_chunks()
    assert set(PUBLIC) <= chunks.keys()
    for name, body in chunks.items():
        assert name.endswith("_f32") or name.startswith("_f32_"), name
        defined = re.findall(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(", body)
        assert defined == [name], f"chunk {name} defines {defined}"
        code = "\n".join(line.split("//")[0] for line in body.splitlines())
        assert not re.search(r"\b(f64|i64|u64|f16)\b|\d(lf|li|lu)\b", code), name
    head = _lib.library_head("f32math")
    assert not re.search(r"^\s*(fn|const|var|struct|alias)\b", head, re.MULTILINE)
    for forbidden in (r"^\s*enable\b", r"@group", r"@binding", r"@compute", r"@workgroup_size"):
        assert not re.search(forbidden, text, re.MULTILINE), forbidden
    assert dependencies(chunks, ["sin_f32"])[-1] == "sin_f32"
    assert "_f32_rem_pio2_large" in dependencies(chunks, ["tan_f32"])
    assert dependencies(chunks, ["_f32_inf"]) == ["_f32_inf"]


@pytest.mark.parametrize("name", list(CASES))
def test_unary_against_numpy(backend, flushes_subnormals, name):
    make_args, ref_fn = CASES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    x = make_args(rng)
    got = run_call(backend, f"{name}(x)", x)
    with np.errstate(all="ignore"):
        ref = ref_fn(x.astype(np.float64))
    check(name, got, ref, x, ftz=flushes_subnormals)


def test_atan2_against_numpy(backend, flushes_subnormals):
    rng = np.random.default_rng(2024)
    y, x = args_atan2(rng)
    got = run_call(backend, "atan2_f32(x, inp[params.n + i])", y, x)
    with np.errstate(all="ignore"):
        ref = np.arctan2(y.astype(np.float64), x.astype(np.float64))
    check("atan2_f32", got, ref, y, x, ftz=flushes_subnormals)


def test_error_free_transformations(backend):
    """two_sum / fast_two_sum / two_prod return the exact rounding error on the device: the
    compiler must not have simplified them away (Mesa's NIR does without the _f32_opq barriers)
    nor may fma contraction have broken them."""
    from fractions import Fraction

    rng = np.random.default_rng(11)
    n = 2000
    a = _logu(rng, -15, 15, n)
    b = _logu(rng, -15, 15, n)
    big = (np.maximum(np.abs(a), np.abs(b)) * np.sign(a)).astype(F32)
    small = np.minimum(np.abs(a), np.abs(b)).astype(F32)
    for call, op, x, y in (
        ("_f32_two_sum(x, inp[params.n + i])", "add", a, b),
        ("_f32_fast_two_sum(x, inp[params.n + i])", "add", big, small),
        ("_f32_two_prod(x, inp[params.n + i])", "mul", a, b),
    ):
        hi = run_call(backend, call + ".x", x, y)
        lo = run_call(backend, call + ".y", x, y)
        for i in range(0, n, 4):
            fx, fy = Fraction(float(x[i])), Fraction(float(y[i]))
            exact = fx + fy if op == "add" else fx * fy
            resid = exact - Fraction(float(hi[i])) - Fraction(float(lo[i]))
            assert hi[i] == (x[i] + y[i] if op == "add" else x[i] * y[i]), call
            assert abs(resid) <= abs(exact) * Fraction(1, 2**44), f"{call}: {x[i]!r}, {y[i]!r}"


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    """Bitwise-equal values (signed zeros distinguished, NaN equal to NaN)."""
    want = np.asarray(want, dtype=F32)
    return bool(np.all((np.isnan(got) & np.isnan(want)) | ((got == want) & (np.signbit(got) == np.signbit(want)))))


def test_exact_values(backend):
    """Values NumPy gives exactly: powers of two and ten, zeros with their signs, the limits at
    infinity, domain errors."""
    pw = np.ldexp(F32(1), np.arange(-149, 128)).astype(F32)
    got = run_call(backend, "log2_f32(x)", pw)
    assert _same(got, np.log2(pw)), "log2 of powers of two"
    tens = (10.0 ** np.arange(0, 11)).astype(F32)  # exact in float32
    got = run_call(backend, "log10_f32(x)", tens)
    assert _same(got, np.arange(0, 11)), got
    with np.errstate(all="ignore"):
        z = np.array([0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, -1e-30, 2.0, -2.0], dtype=F32)
        for fn, ref in (("log_f32", np.log), ("log2_f32", np.log2), ("log10_f32", np.log10),
                        ("log1p_f32", np.log1p), ("sin_f32", np.sin), ("cos_f32", np.cos),
                        ("tan_f32", np.tan), ("asin_f32", np.arcsin), ("acos_f32", np.arccos),
                        ("atan_f32", np.arctan)):
            got = run_call(backend, f"{fn}(x)", z)
            want = ref(z.astype(np.float64)).astype(F32)
            assert _same(got, want), f"{fn}: {got} vs {want}"
        sp = np.array([0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, SUB], dtype=F32)
        gy, gx = [a.ravel() for a in np.meshgrid(sp, sp)]
        got = run_call(backend, "atan2_f32(x, inp[params.n + i])", gy, gx)
        assert _same(got, np.arctan2(gy.astype(np.float64), gx.astype(np.float64)).astype(F32)), "atan2 specials"


def test_elementwise_table_routes_float32():
    """The f32 (and so float16) forms of the table's ops call this library; f64 keeps f64math."""
    for name, fn in (("sin", "sin_f32"), ("cos", "cos_f32"), ("tan", "tan_f32"), ("asin", "asin_f32"),
                     ("acos", "acos_f32"), ("log", "log_f32"), ("log2", "log2_f32")):
        assert fn + "(" in expression(name, "f32"), name
        assert name + "_f64(" in expression(name, "f64"), name
    for name in ("atan", "atan2", "log10", "log1p"):
        assert f"ew_{name}_f32(" in expression(name, "f32"), name


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_namespace_huge_and_inverse(dtype):
    """Through gt: sin/cos/tan of huge arguments and the inverse functions are NumPy's (float32:
    within 1 ulp; float16: the float32 result rounded once more)."""
    rng = np.random.default_rng(5)
    if dtype == "float32":
        x = np.concatenate([_logu(rng, -3, 38, 3000), [1e30, -1e30, 3e38, 12345.678]]).astype(F32)
    else:
        x = np.concatenate([_logu(rng, -3, 4.8, 3000), [65504.0, -65504.0]]).astype(np.float16)
    u = rng.uniform(-1, 1, 3000).astype(dtype)
    pos = np.abs(x) + np.asarray(1e-3, dtype)
    for name, ref, arg in (("sin", np.sin, x), ("cos", np.cos, x), ("tan", np.tan, x),
                           ("asin", np.arcsin, u), ("acos", np.arccos, u), ("atan", np.arctan, x),
                           ("log", np.log, pos), ("log2", np.log2, pos), ("log10", np.log10, pos),
                           ("log1p", np.log1p, pos)):
        got = getattr(gt, name)(gt.asarray(arg)).get()
        want = ref(arg.astype(np.float64))
        assert got.dtype == np.dtype(dtype)
        if dtype == "float32":
            _, dist = ulp_errors(got, want)
            assert dist.max() <= 1, f"{name}: {arg[dist.argmax()]!r} -> {got[dist.argmax()]!r}"
        else:
            np.testing.assert_allclose(got.astype(np.float64), want, **tol("float16", "float16_transcendental"), err_msg=name)
    y = rng.uniform(-3, 3, 3000).astype(dtype)
    got = gt.atan2(gt.asarray(y), gt.asarray(u)).get()
    want = np.arctan2(y.astype(np.float64), u.astype(np.float64))
    if dtype == "float32":
        assert ulp_errors(got, want)[1].max() <= 1
    else:
        np.testing.assert_allclose(got.astype(np.float64), want, **tol("float16", "float16_transcendental"))
