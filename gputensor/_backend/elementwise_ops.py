"""The elementwise op table: one :class:`ElementwiseOp` row per op, with its spec facts and its
WGSL forms (data; no code paths per op). No wgpu, nothing of the frontend.

A row drives everything about its op: the namespace function (``_elementwise_functions``), the
operator dunders of ``GpuArray`` (``_array_object``), the dtype checks and result dtype
(``_dispatch.resolve_elementwise_dtypes``), the fused DAG node (``_fusion``) and the kernel
(``expression``: the WGSL that ``ops_elementwise`` and ``elementwise.fused_program`` compile).
The models are CuPy's ``create_ufunc`` (one definition with per-type loops) and
array-api-strict's function tables.

Spec facts:

* ``category``: the dtype category inputs must belong to (``_dtypes.DTYPE_CATEGORIES``), checked
  on every array argument and on the promoted dtype (so a Python float mixed into an integer op
  of category ``"integer"`` raises ``TypeError``).
* ``result``: ``'promote'`` (result is the promoted input dtype), ``'bool'`` (comparisons and
  predicates; computed in the promoted dtype), ``'float'`` (integers are computed in and give
  the default floating dtype, e.g. ``divide``; floats promote), ``'real'`` (complex inputs give
  the real dtype of their parts, e.g. ``abs``, ``real``, ``imag``; others promote).
* ``dunder``: the operator method (``'__add__'``) or None; binary ops with a dunder also get the
  reflected (``__radd__``) and, when ``inplace``, the in-place (``__iadd__``) forms.
* ``function``: whether the namespace has a function generated from the row (False for the
  backend contract's rows such as ``relu`` and for ``where``/``clip``, which have signatures of
  their own).

WGSL forms (``forms``): an expression over ``x0, x1, x2`` keyed by dtype family (``f``: f32/f64,
``i``: i32/i64, ``u``: u32/u64, ``b``: bool, ``c``: complex as ``vec2<f32>``/``vec2<f64>``), by
compute type (``f64``) or by dtype name
(``float16``: float16 is computed in f32, but an op that depends on the storage format, such
as ``nextafter``, has a form of its own); the most specific key wins. In an expression
``{{T}}`` stands for the WGSL compute type, ``{{R}}`` for a complex type's part type (``f32``,
``f64``), ``{{INF}}`` / ``{{NAN}}`` for that float type's infinity and NaN, ``{{BITS}}`` for its
bit width (the kernels' placeholder syntax). An expression may call the functions of the WGSL
libraries ``_wgsl/ewise_helpers.wgsl`` / ``ewise_int`` / ``complex`` / ``f64math`` /
``f32math`` (pulled in by name: ``kernels.library_code``). An op without a form for a dtype
raises ``TypeError`` for it.
int64/uint64 emulated as two 32-bit words (compute types ``i64e``/``u64e``, adapters without
``shader-int64``) take no forms of the table: the same row is rendered as a call of the helper
``x64_<op>_<type>`` of ``_wgsl/int64_emul.wgsl`` where the library has one.

Semantics follow NumPy where WGSL differs: NaN propagates through max/min (NaN tests use
``ew_isnan_*``: naga compiles float ``!=`` as an ordered comparison, so ``x != x`` is false for
NaN); integer division and remainder by zero give 0; ``//`` and ``%`` round toward negative
infinity; shifts by >= the bit width give NumPy's results; integer ``**`` by repeated
squaring. Transcendentals of f64 route to software routines ``*_f64`` (WGSL/SPIR-V
GLSL.std.450 only defines them for 16/32-bit floats); forms written ``NAME_{{T}}(x0)`` use the
accurate libraries for both types: f32math's ``*_f32`` (about 1 ulp over the whole domain; the
f32 builtins are far less accurate on some drivers) and f64math's ``*_f64``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

from .kernels import library_functions
from .wgsl_types import compute_info, storage_type

__all__ = [
    "ElementwiseOp",
    "OPS",
    "ELEMENTWISE_OPS",
    "NAMESPACE_OPS",
    "UNARY_OPS",
    "BINARY_OPS",
    "COMPARISON_OPS",
    "add_op",
    "expression",
    "family",
    "supports",
]


@dataclass(frozen=True, eq=False)
class ElementwiseOp:
    """One row of the elementwise op table (see the module docstring). Rows compare and hash by
    identity (``forms`` is a dict)."""

    name: str
    arity: int
    category: str
    forms: Mapping[str, str] = field(default_factory=dict)
    result: str = "promote"
    dunder: str | None = None
    inplace: bool = True
    doc: str = ""
    function: bool = True

    @property
    def reflected_dunder(self) -> str | None:
        """``__radd__`` for ``__add__`` (binary ops with a dunder, comparisons excepted)."""
        if self.arity != 2 or self.dunder is None or self.result == "bool":
            return None
        return "__r" + self.dunder[2:]

    @property
    def inplace_dunder(self) -> str | None:
        """``__iadd__`` for ``__add__`` (binary arithmetic/bitwise ops with a dunder)."""
        if self.reflected_dunder is None or not self.inplace:
            return None
        return "__i" + self.dunder[2:]

    def form(self, compute: str, dtype: str | None = None) -> str | None:
        """The expression template for compute type ``compute`` (inputs of dtype ``dtype`` when
        given): the most specific of the dtype's, the compute type's and the family's form, or
        None when the op has none."""
        if compute_info(compute).emulated:
            return _emulated_form(self.name, self.arity, compute)
        forms = self.forms
        if dtype is not None and dtype in forms and storage_type(dtype).compute == compute:
            return forms[dtype]
        if compute in forms:
            return forms[compute]
        return forms.get(family(compute))

    def expression(self, compute: str, dtype: str | None = None) -> str:
        """The WGSL expression of the op for compute type ``compute`` (see :func:`expression`)."""
        return expression(self.name, compute, dtype)


def _emulated_form(name: str, arity: int, compute: str) -> str | None:
    """The form of op ``name`` for an emulated 64-bit integer type (``i64e``/``u64e``): a call
    of the helper ``x64_<name>_<type>`` of ``_wgsl/int64_emul.wgsl``, or None where the library
    has none (the family's forms are never used: WGSL operators do not apply to the words)."""
    helper = f"x64_{name}_{compute}"
    if helper not in library_functions():
        return None
    return f"{helper}({', '.join(f'x{k}' for k in range(arity))})"


def family(compute: str) -> str:
    """'f', 'i', 'u', 'b' or 'c' for a WGSL compute type (KeyError for an unknown one)."""
    return compute_info(compute).family


def _u(name: str, category: str, forms: Mapping[str, str], result: str = "promote",
       dunder: str | None = None, doc: str = "") -> ElementwiseOp:
    return ElementwiseOp(name, 1, category, forms, result, dunder, False, doc)


def _b(name: str, category: str, forms: Mapping[str, str], result: str = "promote",
       dunder: str | None = None, doc: str = "") -> ElementwiseOp:
    return ElementwiseOp(name, 2, category, forms, result, dunder, True, doc)


def _backend(name: str, arity: int, forms: Mapping[str, str], doc: str = "") -> ElementwiseOp:
    """A row of the backend contract (``ComputeBackend.unary/binary``) or of an op with a
    signature of its own (``where``, ``clip``): no generated namespace function."""
    return ElementwiseOp(name, arity, "all", forms, doc=doc, function=False)


_IDENTITY = {"f": "x0", "i": "x0", "u": "x0", "c": "x0"}
_SAME = {"f": "(x0 {op} x1)", "i": "(x0 {op} x1)", "u": "(x0 {op} x1)"}


def _all_numeric(op: str) -> dict[str, str]:
    return {k: v.format(op=op) for k, v in _SAME.items()}


def _compare(op: str) -> dict[str, str]:
    return {k: f"(x0 {op} x1)" for k in ("f", "i", "u")}


_ROWS: tuple[ElementwiseOp, ...] = (
    # ---- unary
    _u("abs", "numeric", {"c": "cx_abs_{{R}}(x0)", "f": "abs(x0)", "i": "select(x0, -x0, x0 < {{T}}(0))", "u": "x0"}, result="real",
       dunder="__abs__", doc="Absolute value (complex: |z|, real); integer minimum wraps as NumPy."),
    _u("acos", "floating", {"c": "cx_acos_{{R}}(x0)", "f": "acos_{{T}}(x0)"}, doc="Inverse cosine."),
    _u("acosh", "floating", {"c": "cx_acosh_{{R}}(x0)", "f": "ew_acosh_{{T}}(x0)"}, doc="Inverse hyperbolic cosine."),
    _u("asin", "floating", {"c": "cx_asin_{{R}}(x0)", "f": "asin_{{T}}(x0)"}, doc="Inverse sine."),
    _u("asinh", "floating", {"c": "cx_asinh_{{R}}(x0)", "f": "ew_asinh_{{T}}(x0)"}, doc="Inverse hyperbolic sine."),
    _u("atan", "floating", {"c": "cx_atan_{{R}}(x0)", "f": "ew_atan_{{T}}(x0)"}, doc="Inverse tangent."),
    _u("atanh", "floating", {"c": "cx_atanh_{{R}}(x0)", "f": "ew_atanh_{{T}}(x0)"}, doc="Inverse hyperbolic tangent."),
    _u("bitwise_invert", "integer or boolean", {"i": "~x0", "u": "~x0", "b": "!x0"}, dunder="__invert__",
       doc="Bitwise NOT (logical NOT for bool)."),
    _u("ceil", "real numeric", {"f": "ceil(x0)", "i": "x0", "u": "x0"},
       doc="Round toward +inf; integers are returned unchanged (a copy)."),
    _u("conj", "numeric", {**_IDENTITY, "c": "cx_conj_{{R}}(x0)"}, doc="Complex conjugate; a copy for real dtypes."),
    _u("cos", "floating", {"c": "cx_cos_{{R}}(x0)", "f": "cos_{{T}}(x0)"}, doc="Cosine."),
    _u("cosh", "floating", {"c": "cx_cosh_{{R}}(x0)", "f": "ew_cosh_{{T}}(x0)"}, doc="Hyperbolic cosine."),
    _u("deg2rad", "real floating", {"f": "(x0 * {{T}}(0.017453292519943295))"},
       doc="Degrees to radians: x * (pi / 180) rounded to the dtype, as NumPy computes it."),
    _u("exp", "floating", {"c": "cx_exp_{{R}}(x0)", "f": "exp(x0)", "f64": "exp_f64(x0)"}, doc="Exponential."),
    _u("expm1", "floating", {"c": "cx_expm1_{{R}}(x0)", "f": "ew_expm1_{{T}}(x0)"}, doc="exp(x) - 1, accurate near 0."),
    _u("floor", "real numeric", {"f": "floor(x0)", "i": "x0", "u": "x0"},
       doc="Round toward -inf; integers are returned unchanged (a copy)."),
    _u("imag", "complex floating", {"c": "x0.y"}, result="real", doc="Imaginary part (complex dtypes only)."),
    _u("isfinite", "numeric", {"c": "(abs(x0.x) < {{INF}} && abs(x0.y) < {{INF}})", "f": "(abs(x0) < {{INF}})", "i": "true", "u": "true", "b": "true"}, result="bool",
       doc="True where finite."),
    _u("isinf", "numeric", {"c": "(abs(x0.x) == {{INF}} || abs(x0.y) == {{INF}})", "f": "(abs(x0) == {{INF}})", "i": "false", "u": "false", "b": "false"}, result="bool",
       doc="True where +/-inf."),
    _u("isnan", "numeric", {"c": "cx_isnan_{{R}}(x0)", "f": "ew_isnan_{{T}}(x0)", "i": "false", "u": "false", "b": "false"}, result="bool",
       doc="True where NaN."),
    _u("log", "floating", {"c": "cx_log_{{R}}(x0)", "f": "log_{{T}}(x0)"}, doc="Natural logarithm."),
    _u("log10", "floating", {"c": "cx_log10_{{R}}(x0)", "f": "ew_log10_{{T}}(x0)"}, doc="Base-10 logarithm."),
    _u("log1p", "floating", {"c": "cx_log1p_{{R}}(x0)", "f": "ew_log1p_{{T}}(x0)"}, doc="log(1 + x), accurate near 0."),
    _u("log2", "floating", {"c": "cx_log2_{{R}}(x0)", "f": "log2_{{T}}(x0)"}, doc="Base-2 logarithm."),
    _u("logical_not", "boolean", {"b": "!x0"}, doc="Logical NOT."),
    _u("negative", "numeric", {"c": "cx_neg_{{R}}(x0)", "f": "ew_neg_{{T}}(x0)", "i": "-x0", "u": "({{T}}(0) - x0)"}, dunder="__neg__",
       doc="Numerical negative; unsigned values wrap."),
    _u("positive", "numeric", _IDENTITY, dunder="__pos__", doc="Numerical positive (a copy)."),
    _u("real", "numeric", {**_IDENTITY, "c": "x0.x"}, result="real", doc="Real part; a copy for real dtypes."),
    _u("reciprocal", "floating", {"c": "cx_reciprocal_{{R}}(x0)", "f": "({{T}}(1) / x0)"}, doc="1 / x."),
    _u("round", "numeric", {"c": "round(x0)", "f": "round(x0)", "i": "x0", "u": "x0"}, doc="Round half to even."),
    _u("sign", "numeric", {"c": "cx_sign_{{R}}(x0)", "f": "ew_sign_{{T}}(x0)", "i": "{{T}}(i32(x0 > {{T}}(0)) - i32(x0 < {{T}}(0)))",
                           "u": "select({{T}}(0), {{T}}(1), x0 > {{T}}(0))"},
       doc="Sign (-1, 0, +1; NaN for NaN)."),
    _u("signbit", "real floating", {"f": "ew_signbit_{{T}}(x0)"}, result="bool",
       doc="True where the sign bit is set (-0.0 included)."),
    _u("sin", "floating", {"c": "cx_sin_{{R}}(x0)", "f": "sin_{{T}}(x0)"}, doc="Sine."),
    _u("sinh", "floating", {"c": "cx_sinh_{{R}}(x0)", "f": "ew_sinh_{{T}}(x0)"}, doc="Hyperbolic sine."),
    _u("sqrt", "floating", {"c": "cx_sqrt_{{R}}(x0)", "f": "sqrt(x0)"}, doc="Square root."),
    _u("square", "numeric", {"c": "cx_square_{{R}}(x0)", "f": "(x0 * x0)", "i": "(x0 * x0)", "u": "(x0 * x0)"}, doc="x * x."),
    _u("tan", "floating", {"c": "cx_tan_{{R}}(x0)", "f": "tan_{{T}}(x0)"}, doc="Tangent."),
    _u("tanh", "floating", {"c": "cx_tanh_{{R}}(x0)", "f": "ew_tanh_{{T}}(x0)"}, doc="Hyperbolic tangent."),
    _u("trunc", "real numeric", {"f": "trunc(x0)", "i": "x0", "u": "x0"},
       doc="Round toward 0; integers are returned unchanged (a copy)."),
    # ---- binary arithmetic
    _b("add", "numeric", {**_all_numeric("+"), "c": "(x0 + x1)"}, dunder="__add__", doc="x1 + x2 (integers wrap)."),
    _b("atan2", "real floating", {"f": "ew_atan2_{{T}}(x0, x1)"}, doc="Quadrant-aware inverse tangent of x1 / x2."),
    _b("copysign", "real floating", {"f": "select(abs(x0), -abs(x0), ew_signbit_{{T}}(x1))"},
       doc="|x1| with the sign of x2."),
    _b("divide", "numeric", {"c": "cx_div_{{R}}(x0, x1)", "f": "(x0 / x1)"}, result="float", dunder="__truediv__",
       doc="True division; integer inputs give the default floating dtype (as NumPy)."),
    _b("floor_divide", "real numeric", {"f": "ew_floordiv_{{T}}(x0, x1)", "i": "ew_floordiv_{{T}}(x0, x1)",
                                        "u": "select(x0 / x1, {{T}}(0), x1 == {{T}}(0))"},
       dunder="__floordiv__", doc="Floor division; integer division by zero gives 0 (as NumPy); an infinite "
                                   "float operand gives the spec's floor(x1 / x2) (NumPy: NaN, -1.0)."),
    _b("hypot", "real floating", {"f": "ew_hypot_{{T}}(x0, x1)"}, doc="sqrt(x1**2 + x2**2) without undue overflow."),
    _b("logaddexp", "real floating", {"f": "ew_logaddexp_{{T}}(x0, x1)"}, doc="log(exp(x1) + exp(x2))."),
    _b("maximum", "real numeric", {"f": "ew_max_{{T}}(x0, x1)", "i": "max(x0, x1)", "u": "max(x0, x1)"},
       doc="Elementwise maximum; NaN propagates."),
    _b("minimum", "real numeric", {"f": "ew_min_{{T}}(x0, x1)", "i": "min(x0, x1)", "u": "min(x0, x1)"},
       doc="Elementwise minimum; NaN propagates."),
    _b("multiply", "numeric", {**_all_numeric("*"), "c": "cx_mul_{{R}}(x0, x1)"}, dunder="__mul__", doc="x1 * x2 (integers wrap)."),
    # (float16 steps in its own bit pattern)
    _b("nextafter", "real floating", {"f": "ew_nextafter_{{T}}(x0, x1)", "float16": "ew_nextafter16_{{T}}(x0, x1)"},
       doc="Next representable value after x1 toward x2."),
    _b("pow", "numeric", {"c": "cx_pow_{{R}}(x0, x1)", "f": "ew_pow_{{T}}(x0, x1)", "i": "ew_ipow_{{T}}(x0, x1)", "u": "ew_ipow_{{T}}(x0, x1)"},
       dunder="__pow__", doc="x1 ** x2; integers use integer power."),
    _b("remainder", "real numeric", {"f": "ew_mod_{{T}}(x0, x1)", "i": "ew_mod_{{T}}(x0, x1)",
                                     "u": "select(x0 % x1, {{T}}(0), x1 == {{T}}(0))"},
       dunder="__mod__", doc="Remainder with the sign of x2; integer remainder by zero gives 0 (as NumPy)."),
    _b("subtract", "numeric", {**_all_numeric("-"), "c": "(x0 - x1)"}, dunder="__sub__", doc="x1 - x2 (integers wrap)."),
    # ---- bitwise
    _b("bitwise_and", "integer or boolean", {"i": "(x0 & x1)", "u": "(x0 & x1)", "b": "(x0 && x1)"},
       dunder="__and__", doc="Bitwise AND."),
    _b("bitwise_left_shift", "integer",
       {"i": "select({{T}}(0), x0 << u32(x1), x1 < {{T}}({{BITS}}) && x1 >= {{T}}(0))",
        "u": "select({{T}}(0), x0 << u32(x1), x1 < {{T}}({{BITS}}))"},
       dunder="__lshift__", doc="x1 << x2; shifts by >= the bit width give 0 (as NumPy)."),
    _b("bitwise_or", "integer or boolean", {"i": "(x0 | x1)", "u": "(x0 | x1)", "b": "(x0 || x1)"},
       dunder="__or__", doc="Bitwise OR."),
    _b("bitwise_right_shift", "integer",
       {"i": "select(select({{T}}(0), {{T}}(-1), x0 < {{T}}(0)), x0 >> u32(x1), x1 < {{T}}({{BITS}}) && x1 >= {{T}}(0))",
        "u": "select({{T}}(0), x0 >> u32(x1), x1 < {{T}}({{BITS}}))"},
       dunder="__rshift__", doc="Arithmetic x1 >> x2; shifts by >= the bit width give 0 or -1 (as NumPy)."),
    _b("bitwise_xor", "integer or boolean", {"i": "(x0 ^ x1)", "u": "(x0 ^ x1)", "b": "(x0 != x1)"},
       dunder="__xor__", doc="Bitwise XOR."),
    # ---- comparisons and logical
    _b("equal", "all", {**_compare("=="), "b": "(x0 == x1)", "c": "all(x0 == x1)"}, result="bool", dunder="__eq__", doc="x1 == x2."),
    _b("greater", "real numeric", _compare(">"), result="bool", dunder="__gt__", doc="x1 > x2."),
    _b("greater_equal", "real numeric", _compare(">="), result="bool", dunder="__ge__", doc="x1 >= x2."),
    _b("less", "real numeric", _compare("<"), result="bool", dunder="__lt__", doc="x1 < x2."),
    _b("less_equal", "real numeric", _compare("<="), result="bool", dunder="__le__", doc="x1 <= x2."),
    _b("not_equal", "all", {"f": "!(x0 == x1)", "i": "(x0 != x1)", "u": "(x0 != x1)", "b": "(x0 != x1)",
                           "c": "!all(x0 == x1)"},
       result="bool", dunder="__ne__", doc="x1 != x2."),
    _b("logical_and", "boolean", {"b": "(x0 && x1)"}, doc="Logical AND."),
    _b("logical_or", "boolean", {"b": "(x0 || x1)"}, doc="Logical OR."),
    _b("logical_xor", "boolean", {"b": "(x0 != x1)"}, doc="Logical XOR."),
    # ---- signatures of their own (written out in the namespace)
    _backend("where", 3, {"f": "select(x2, x1, x0)", "i": "select(x2, x1, x0)", "u": "select(x2, x1, x0)",
                          "b": "select(x2, x1, x0)", "c": "select(x2, x1, x0)"}),
    _backend("clip", 3, {"f": "ew_clip_{{T}}(x0, x1, x2)", "i": "min(max(x0, x1), x2)", "u": "min(max(x0, x1), x2)"}),
    # ---- activations of the backend contract (``ComputeBackend.unary``, float dtypes)
    _backend("exp2", 1, {"f": "exp2(x0)", "f64": "exp2_f64(x0)"}),
    # NaN kept (NVIDIA folds the plain form to fmax)
    _backend("relu", 1, {"f": "select(x0, {{T}}(0), x0 < {{T}}(0) && !ew_isnan_{{T}}(x0))"}),
    _backend("sigmoid", 1, {"f": "ew_sigmoid_{{T}}(x0)"}),
    _backend("silu", 1, {"f": "(x0 * ew_sigmoid_{{T}}(x0))"}),
    _backend("gelu", 1, {"f": "ew_gelu_{{T}}(x0)"}),
)

#: name -> row: every op (the namespace's, ``where``/``clip`` and the backend contract's).
OPS: dict[str, ElementwiseOp] = {row.name: row for row in _ROWS}
#: name -> row, the ops the namespace generates functions (and dunders) for.
NAMESPACE_OPS: dict[str, ElementwiseOp] = {row.name: row for row in _ROWS if row.function}
ELEMENTWISE_OPS = NAMESPACE_OPS
UNARY_OPS: tuple[str, ...] = tuple(r.name for r in NAMESPACE_OPS.values() if r.arity == 1)
BINARY_OPS: tuple[str, ...] = tuple(r.name for r in NAMESPACE_OPS.values() if r.arity == 2)
COMPARISON_OPS: frozenset[str] = frozenset(
    r.name for r in NAMESPACE_OPS.values() if r.result == "bool" and r.arity == 2)


def add_op(row: ElementwiseOp) -> None:
    """Add ``row`` to the table (``NAMESPACE_OPS`` too when it has a namespace function); the
    frontend's ``_elementwise_functions.install`` then makes its function and dunders.
    ValueError if an op of that name exists."""
    if row.name in OPS:
        raise ValueError(f"elementwise op {row.name!r} exists")
    OPS[row.name] = row
    if row.function:
        NAMESPACE_OPS[row.name] = row
    expression.cache_clear()


@functools.lru_cache(maxsize=4096)
def expression(name: str, compute: str, dtype: str | None = None) -> str:
    """The WGSL expression of op ``name`` for compute type ``compute`` (for inputs of dtype
    ``dtype`` when given: a dtype-specific form wins).

    Raises KeyError when the op has no form for that type.
    """
    template = OPS[name].form(compute, dtype)
    if template is None:
        raise KeyError(f"elementwise op {name!r} has no form for {compute}")
    out = template.replace("{{T}}", compute)
    info = compute_info(compute)
    if info.family in ("f", "c"):
        out = out.replace("{{INF}}", info.inf).replace("{{NAN}}", info.nan).replace("{{R}}", info.real_compute)
    elif info.family in ("i", "u"):
        out = out.replace("{{BITS}}", str(info.compute_bits))
    return out


def supports(name: str, compute: str, dtype: str | None = None) -> bool:
    """Whether op ``name`` has a form for compute type ``compute`` (and dtype ``dtype``)."""
    return name in OPS and OPS[name].form(compute, dtype) is not None
