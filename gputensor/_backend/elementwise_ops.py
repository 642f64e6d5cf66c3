"""The table of elementwise operations as WGSL expressions (data, shared by the backend's
``unary``/``binary`` contract and the Array API namespace).

Each row maps a compute-type family to an expression over ``x0, x1, x2`` with ``{T}`` standing for
the WGSL compute type (``f32``, ``f64``, ``i32``, ``u32``, ``i64``, ``u64``, ``bool``) and
``{INF}`` / ``{NAN}`` for that float type's infinity and NaN. Families: ``f`` (f32/f64), ``i``
(i32/i64), ``u`` (u32/u64), ``b`` (bool). An expression may call helpers from
``_wgsl/elementwise.wgsl``'s include ``ewise_helpers`` / ``f64math`` / ``f32math`` (see ``HELPERS``).

Semantics follow NumPy where WGSL differs: NaN propagates through max/min (NaN tests use
``ew_isnan_*``: naga compiles float ``!=`` as an ordered comparison, so ``x != x`` is false for NaN); integer division and
remainder by zero give 0; ``//`` and ``%`` round toward negative infinity; shifts by >= the bit
width give NumPy's results; integer ``**`` by repeated squaring.
"""

from __future__ import annotations

_F_INF = {"f32": "bitcast<f32>(0x7f800000u)", "f64": "f64(bitcast<f32>(0x7f800000u))"}
_F_NAN = {"f32": "bitcast<f32>(0x7fc00000u)", "f64": "f64(bitcast<f32>(0x7fc00000u))"}
_BITS = {"i32": 32, "u32": 32, "i64": 64, "u64": 64}


def family(compute: str) -> str:
    """'f', 'i', 'u' or 'b' for a WGSL compute type."""
    return {"f32": "f", "f64": "f", "i32": "i", "i64": "i", "u32": "u", "u64": "u", "bool": "b"}[compute]


# name -> {family: expression}. Transcendentals of f64 route to software routines ``*_f64``
# (WGSL/SPIR-V GLSL.std.450 only defines them for 16/32-bit floats).
# Rows written ``NAME_{T}(x0)`` use the accurate libraries for both types: f32math's ``*_f32``
# (about 1 ulp over the whole domain; the f32 builtins are far less accurate on some drivers)
# and f64math's ``*_f64``.
_TRANSCENDENTAL = ("exp", "log", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
                   "asinh", "acosh", "atanh", "exp2", "log2")

OPS: dict[str, dict[str, str]] = {
    # ---- unary arithmetic
    "abs": {"f": "abs(x0)", "i": "select(x0, -x0, x0 < {T}(0))", "u": "x0"},
    "negative": {"f": "ew_neg_{T}(x0)", "i": "-x0", "u": "({T}(0) - x0)"},
    "positive": {"f": "x0", "i": "x0", "u": "x0"},
    "square": {"f": "(x0 * x0)", "i": "(x0 * x0)", "u": "(x0 * x0)"},
    "reciprocal": {"f": "({T}(1) / x0)"},
    "sqrt": {"f": "sqrt(x0)"},
    "exp": {"f": "exp(x0)"},
    "exp2": {"f": "exp2(x0)"},
    "expm1": {"f": "ew_expm1_{T}(x0)"},
    "log": {"f": "log_{T}(x0)"},
    "log2": {"f": "log2_{T}(x0)"},
    "log10": {"f": "ew_log10_{T}(x0)"},
    "log1p": {"f": "ew_log1p_{T}(x0)"},
    "sin": {"f": "sin_{T}(x0)"},
    "cos": {"f": "cos_{T}(x0)"},
    "tan": {"f": "tan_{T}(x0)"},
    "asin": {"f": "asin_{T}(x0)"},
    "acos": {"f": "acos_{T}(x0)"},
    "atan": {"f": "ew_atan_{T}(x0)"},
    "sinh": {"f": "ew_sinh_{T}(x0)"},
    "cosh": {"f": "ew_cosh_{T}(x0)"},
    "tanh": {"f": "ew_tanh_{T}(x0)"},
    "asinh": {"f": "ew_asinh_{T}(x0)"},
    "acosh": {"f": "ew_acosh_{T}(x0)"},
    "atanh": {"f": "ew_atanh_{T}(x0)"},
    "ceil": {"f": "ceil(x0)", "i": "x0", "u": "x0"},
    "floor": {"f": "floor(x0)", "i": "x0", "u": "x0"},
    "trunc": {"f": "trunc(x0)", "i": "x0", "u": "x0"},
    "round": {"f": "round(x0)", "i": "x0", "u": "x0"},
    "sign": {
        "f": "ew_sign_{T}(x0)",
        "i": "{T}(i32(x0 > {T}(0)) - i32(x0 < {T}(0)))",
        "u": "select({T}(0), {T}(1), x0 > {T}(0))",
    },
    "signbit": {"f": "ew_signbit_{T}(x0)"},
    "isnan": {"f": "ew_isnan_{T}(x0)", "i": "false", "u": "false", "b": "false"},
    "isinf": {"f": "(abs(x0) == {INF})", "i": "false", "u": "false", "b": "false"},
    "isfinite": {"f": "(abs(x0) < {INF})", "i": "true", "u": "true", "b": "true"},
    "logical_not": {"b": "!x0"},
    "bitwise_invert": {"i": "~x0", "u": "~x0", "b": "!x0"},
    "relu": {"f": "select(x0, {T}(0), x0 < {T}(0) && !ew_isnan_{T}(x0))"},  # NaN kept (NVIDIA folds the plain form to fmax)
    "sigmoid": {"f": "ew_sigmoid_{T}(x0)"},
    "silu": {"f": "(x0 * ew_sigmoid_{T}(x0))"},
    "gelu": {"f": "ew_gelu_{T}(x0)"},
    # ---- binary arithmetic
    "add": {"f": "(x0 + x1)", "i": "(x0 + x1)", "u": "(x0 + x1)"},
    "subtract": {"f": "(x0 - x1)", "i": "(x0 - x1)", "u": "(x0 - x1)"},
    "multiply": {"f": "(x0 * x1)", "i": "(x0 * x1)", "u": "(x0 * x1)"},
    "divide": {"f": "(x0 / x1)"},
    "floor_divide": {"f": "ew_floordiv_{T}(x0, x1)", "i": "ew_floordiv_{T}(x0, x1)",
                     "u": "select(x0 / x1, {T}(0), x1 == {T}(0))"},
    "remainder": {"f": "ew_mod_{T}(x0, x1)", "i": "ew_mod_{T}(x0, x1)",
                  "u": "select(x0 % x1, {T}(0), x1 == {T}(0))"},
    "pow": {"f": "ew_pow_{T}(x0, x1)", "i": "ew_ipow_{T}(x0, x1)", "u": "ew_ipow_{T}(x0, x1)"},
    "maximum": {"f": "ew_max_{T}(x0, x1)", "i": "max(x0, x1)", "u": "max(x0, x1)"},
    "minimum": {"f": "ew_min_{T}(x0, x1)", "i": "min(x0, x1)", "u": "min(x0, x1)"},
    "atan2": {"f": "ew_atan2_{T}(x0, x1)"},
    "hypot": {"f": "ew_hypot_{T}(x0, x1)"},
    "logaddexp": {"f": "ew_logaddexp_{T}(x0, x1)"},
    "copysign": {"f": "select(abs(x0), -abs(x0), ew_signbit_{T}(x1))"},
    "nextafter": {"f": "ew_nextafter_{T}(x0, x1)"},
    # ---- comparisons (result bool)
    "equal": {"f": "(x0 == x1)", "i": "(x0 == x1)", "u": "(x0 == x1)", "b": "(x0 == x1)"},
    "not_equal": {"f": "!(x0 == x1)", "i": "(x0 != x1)", "u": "(x0 != x1)", "b": "(x0 != x1)"},
    "less": {"f": "(x0 < x1)", "i": "(x0 < x1)", "u": "(x0 < x1)"},
    "less_equal": {"f": "(x0 <= x1)", "i": "(x0 <= x1)", "u": "(x0 <= x1)"},
    "greater": {"f": "(x0 > x1)", "i": "(x0 > x1)", "u": "(x0 > x1)"},
    "greater_equal": {"f": "(x0 >= x1)", "i": "(x0 >= x1)", "u": "(x0 >= x1)"},
    # ---- logical and bitwise
    "logical_and": {"b": "(x0 && x1)"},
    "logical_or": {"b": "(x0 || x1)"},
    "logical_xor": {"b": "(x0 != x1)"},
    "bitwise_and": {"i": "(x0 & x1)", "u": "(x0 & x1)", "b": "(x0 && x1)"},
    "bitwise_or": {"i": "(x0 | x1)", "u": "(x0 | x1)", "b": "(x0 || x1)"},
    "bitwise_xor": {"i": "(x0 ^ x1)", "u": "(x0 ^ x1)", "b": "(x0 != x1)"},
    "bitwise_left_shift": {"i": "select({T}(0), x0 << u32(x1), x1 < {T}({BITS}) && x1 >= {T}(0))",
                           "u": "select({T}(0), x0 << u32(x1), x1 < {T}({BITS}))"},
    "bitwise_right_shift": {"i": "select(select({T}(0), {T}(-1), x0 < {T}(0)), x0 >> u32(x1), x1 < {T}({BITS}) && x1 >= {T}(0))",
                            "u": "select({T}(0), x0 >> u32(x1), x1 < {T}({BITS}))"},
    # ---- ternary
    "where": {"f": "select(x2, x1, x0)", "i": "select(x2, x1, x0)", "u": "select(x2, x1, x0)", "b": "select(x2, x1, x0)"},
    "clip": {"f": "ew_clip_{T}(x0, x1, x2)", "i": "min(max(x0, x1), x2)", "u": "min(max(x0, x1), x2)"},
    # ---- float16 forms (float16 is computed in f32; these step in float16's own bit pattern)
    "nextafter_f16": {"f": "ew_nextafter16_{T}(x0, x1)"},
}


def expression(name: str, compute: str) -> str:
    """The WGSL expression of op ``name`` for compute type ``compute``.

    Raises KeyError when the op has no form for that type family.
    """
    row = OPS[name]
    fam = family(compute)
    try:
        template = row[fam]
    except KeyError:
        raise KeyError(f"elementwise op {name!r} has no form for {compute}") from None
    if compute == "f64" and name in _TRANSCENDENTAL and template == f"{name}(x0)":
        template = f"{name}_f64(x0)"
    out = template.replace("{T}", compute)
    if fam == "f":
        out = out.replace("{INF}", _F_INF[compute]).replace("{NAN}", _F_NAN[compute])
    if fam in ("i", "u"):
        out = out.replace("{BITS}", str(_BITS[compute]))
    return out


def supports(name: str, compute: str) -> bool:
    """Whether op ``name`` has a form for compute type ``compute``."""
    return name in OPS and family(compute) in OPS[name]
