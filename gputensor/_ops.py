"""The elementwise op table of the namespace (data; no code paths per op).

One :class:`ElementwiseOp` row per Array API elementwise function.  The namespace functions in
``_elementwise_functions.py`` and the operator dunders of ``GpuArray`` are generated from it;
``_dispatch.elementwise_op`` reads it to check dtypes and pick the result dtype.  The WGSL
expression of each op lives in the backend table ``_backend/elementwise_ops.OPS`` under
``backend_op``.

Fields:

* ``category``: the dtype category inputs must belong to (``_dtypes.DTYPE_CATEGORIES``), checked
  on every array argument and on the promoted dtype (so a Python float mixed into an integer op
  of category ``"integer"`` raises ``TypeError``).
* ``result``: ``'promote'`` (result is the promoted input dtype), ``'bool'`` (comparisons and
  predicates; computed in the promoted dtype), ``'float'`` (integers are computed in and give
  the default floating dtype, e.g. ``divide``; floats promote).
* ``float16_op``: the backend row to use for float16 inputs when the op depends on the storage
  format (float16 is computed in f32), e.g. ``nextafter``.
* ``dunder``: the operator method (``'__add__'``) or None; binary ops with a dunder also get the
  reflected (``__radd__``) and, when ``inplace``, the in-place (``__iadd__``) forms.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ElementwiseOp", "ELEMENTWISE_OPS", "UNARY_OPS", "BINARY_OPS", "COMPARISON_OPS"]


@dataclass(frozen=True)
class ElementwiseOp:
    """One row of the elementwise op table (see the module docstring)."""

    name: str
    arity: int
    category: str
    result: str = "promote"
    backend_op: str = ""
    dunder: str | None = None
    inplace: bool = True
    doc: str = ""
    float16_op: str = ""

    @property
    def kernel_op(self) -> str:
        """The row name in the backend's ``elementwise_ops.OPS``."""
        return self.backend_op or self.name

    def kernel_op_for(self, dtype_name: str) -> str:
        """The backend row for inputs computed as ``dtype_name`` (``float16_op`` for float16,
        whose values are computed in f32, when the op depends on the storage format)."""
        if dtype_name == "float16" and self.float16_op:
            return self.float16_op
        return self.kernel_op

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


def _u(name: str, category: str, result: str = "promote", backend_op: str = "",
       dunder: str | None = None, doc: str = "") -> ElementwiseOp:
    return ElementwiseOp(name, 1, category, result, backend_op, dunder, False, doc)


def _b(name: str, category: str, result: str = "promote", backend_op: str = "",
       dunder: str | None = None, doc: str = "") -> ElementwiseOp:
    return ElementwiseOp(name, 2, category, result, backend_op, dunder, True, doc)


_ROWS: tuple[ElementwiseOp, ...] = (
    # ---- unary
    _u("abs", "numeric", dunder="__abs__", doc="Absolute value; integer minimum wraps as NumPy."),
    _u("acos", "floating", doc="Inverse cosine."),
    _u("acosh", "floating", doc="Inverse hyperbolic cosine."),
    _u("asin", "floating", doc="Inverse sine."),
    _u("asinh", "floating", doc="Inverse hyperbolic sine."),
    _u("atan", "floating", doc="Inverse tangent."),
    _u("atanh", "floating", doc="Inverse hyperbolic tangent."),
    _u("bitwise_invert", "integer or boolean", dunder="__invert__", doc="Bitwise NOT (logical NOT for bool)."),
    _u("ceil", "real numeric", doc="Round toward +inf; integers are returned unchanged (a copy)."),
    _u("conj", "numeric", backend_op="positive", doc="Complex conjugate; a copy for real dtypes."),
    _u("cos", "floating", doc="Cosine."),
    _u("cosh", "floating", doc="Hyperbolic cosine."),
    _u("exp", "floating", doc="Exponential."),
    _u("expm1", "floating", doc="exp(x) - 1, accurate near 0."),
    _u("floor", "real numeric", doc="Round toward -inf; integers are returned unchanged (a copy)."),
    _u("imag", "complex floating", doc="Imaginary part (complex dtypes only: always TypeError for now)."),
    _u("isfinite", "numeric", result="bool", doc="True where finite."),
    _u("isinf", "numeric", result="bool", doc="True where +/-inf."),
    _u("isnan", "numeric", result="bool", doc="True where NaN."),
    _u("log", "floating", doc="Natural logarithm."),
    _u("log10", "floating", doc="Base-10 logarithm."),
    _u("log1p", "floating", doc="log(1 + x), accurate near 0."),
    _u("log2", "floating", doc="Base-2 logarithm."),
    _u("logical_not", "boolean", doc="Logical NOT."),
    _u("negative", "numeric", dunder="__neg__", doc="Numerical negative; unsigned values wrap."),
    _u("positive", "numeric", dunder="__pos__", doc="Numerical positive (a copy)."),
    _u("real", "numeric", backend_op="positive", doc="Real part; a copy for real dtypes."),
    _u("reciprocal", "floating", doc="1 / x."),
    _u("round", "numeric", doc="Round half to even."),
    _u("sign", "numeric", doc="Sign (-1, 0, +1; NaN for NaN)."),
    _u("signbit", "real floating", result="bool", doc="True where the sign bit is set (-0.0 included)."),
    _u("sin", "floating", doc="Sine."),
    _u("sinh", "floating", doc="Hyperbolic sine."),
    _u("sqrt", "floating", doc="Square root."),
    _u("square", "numeric", doc="x * x."),
    _u("tan", "floating", doc="Tangent."),
    _u("tanh", "floating", doc="Hyperbolic tangent."),
    _u("trunc", "real numeric", doc="Round toward 0; integers are returned unchanged (a copy)."),
    # ---- binary arithmetic
    _b("add", "numeric", dunder="__add__", doc="x1 + x2 (integers wrap)."),
    _b("atan2", "real floating", doc="Quadrant-aware inverse tangent of x1 / x2."),
    _b("copysign", "real floating", doc="|x1| with the sign of x2."),
    _b("divide", "numeric", result="float", dunder="__truediv__",
       doc="True division; integer inputs give the default floating dtype (as NumPy)."),
    _b("floor_divide", "real numeric", dunder="__floordiv__",
       doc="Floor division; integer division by zero gives 0 (as NumPy)."),
    _b("hypot", "real floating", doc="sqrt(x1**2 + x2**2) without undue overflow."),
    _b("logaddexp", "real floating", doc="log(exp(x1) + exp(x2))."),
    _b("maximum", "real numeric", doc="Elementwise maximum; NaN propagates."),
    _b("minimum", "real numeric", doc="Elementwise minimum; NaN propagates."),
    _b("multiply", "numeric", dunder="__mul__", doc="x1 * x2 (integers wrap)."),
    ElementwiseOp("nextafter", 2, "real floating", doc="Next representable value after x1 toward x2.",
                  float16_op="nextafter_f16"),
    _b("pow", "numeric", dunder="__pow__", doc="x1 ** x2; integers use integer power."),
    _b("remainder", "real numeric", dunder="__mod__",
       doc="Remainder with the sign of x2; integer remainder by zero gives 0 (as NumPy)."),
    _b("subtract", "numeric", dunder="__sub__", doc="x1 - x2 (integers wrap)."),
    # ---- bitwise
    _b("bitwise_and", "integer or boolean", dunder="__and__", doc="Bitwise AND."),
    _b("bitwise_left_shift", "integer", dunder="__lshift__",
       doc="x1 << x2; shifts by >= the bit width give 0 (as NumPy)."),
    _b("bitwise_or", "integer or boolean", dunder="__or__", doc="Bitwise OR."),
    _b("bitwise_right_shift", "integer", dunder="__rshift__",
       doc="Arithmetic x1 >> x2; shifts by >= the bit width give 0 or -1 (as NumPy)."),
    _b("bitwise_xor", "integer or boolean", dunder="__xor__", doc="Bitwise XOR."),
    # ---- comparisons and logical
    _b("equal", "all", result="bool", dunder="__eq__", doc="x1 == x2."),
    _b("greater", "real numeric", result="bool", dunder="__gt__", doc="x1 > x2."),
    _b("greater_equal", "real numeric", result="bool", dunder="__ge__", doc="x1 >= x2."),
    _b("less", "real numeric", result="bool", dunder="__lt__", doc="x1 < x2."),
    _b("less_equal", "real numeric", result="bool", dunder="__le__", doc="x1 <= x2."),
    _b("not_equal", "all", result="bool", dunder="__ne__", doc="x1 != x2."),
    _b("logical_and", "boolean", doc="Logical AND."),
    _b("logical_or", "boolean", doc="Logical OR."),
    _b("logical_xor", "boolean", doc="Logical XOR."),
)

#: name -> row, every elementwise function of the namespace except ``clip`` (special signature).
ELEMENTWISE_OPS: dict[str, ElementwiseOp] = {row.name: row for row in _ROWS}
UNARY_OPS: tuple[str, ...] = tuple(r.name for r in _ROWS if r.arity == 1)
BINARY_OPS: tuple[str, ...] = tuple(r.name for r in _ROWS if r.arity == 2)
COMPARISON_OPS: frozenset[str] = frozenset(r.name for r in _ROWS if r.result == "bool" and r.arity == 2)
