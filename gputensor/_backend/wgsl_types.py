"""The dtype table: one :class:`DTypeInfo` row per dtype with every fact about it (no wgpu).

Each row carries what the frontend and the kernels need to know about one dtype: its NumPy
name, kind and size, the WGSL type it is stored as and computed in, lanes per u32 word, the
adapter feature it needs, how it is loaded and stored, its bit patterns (lanes of a word,
wrapping/rounding to the stored width), its NaN test, its literals, conversions and the dtype
it accumulates in. The frontend builds its ``DType`` singletons, categories and promotion
table from these rows (``gputensor._dtypes``); backend modules look facts up here instead of
keeping tables keyed by dtype. Adding a dtype is adding a row (plus kernels where it needs
code of its own).

Storage keeps NumPy's byte layout, so host copies are plain byte copies. WGSL storage has only
32- and 64-bit scalars, so 1- and 2-byte dtypes are *packed*: the buffer is bound as
``array<u32>`` and elements are extracted with shifts (sign-extended for signed types), float16
through ``unpack2x16float``. A kernel writing a packed output either owns whole words (one
invocation per u32 word, read-modify-write of the lanes in range) or, for strided outputs, uses
``atomicAnd``/``atomicOr`` on the element's lane; both keep other elements of a word intact.

float16 is computed in f32 and stored rounded to f16 with an exact round-to-nearest-even
(``ew_f16_bits`` in ewise_helpers.wgsl; ``pack2x16float`` leaves rounding and overflow unspecified),
as NumPy computes its float16 ufuncs,
so it needs no adapter feature. float64 needs ``shader-f64``. int64/uint64 are native with
``shader-int64``; without it they are two 32-bit words (:data:`EMULATED_INT64`: compute and
storage type the structs ``i64e``/``u64e`` of ``_wgsl/int64_emul.wgsl``, NumPy's byte layout),
whose conversions, literals and op forms call that library's helpers. :func:`storage_type`
gives the rows of the device being worked on (``int64_mode``, set by the frontend per device);
``DTYPE_TABLE`` keeps the native rows.

complex64 and complex128 are stored as NumPy stores them, interleaved (real, imaginary) pairs of
float32 / float64, bound as ``array<vec2<f32>>`` / ``array<vec2<f64>>`` and computed as that
``vec2`` (``.x`` the real part, ``.y`` the imaginary part); complex128 needs ``shader-f64``.
Their op forms call the helpers of ``_wgsl/complex.wgsl``.

A *compute type* (``f32``, ``i32``, ``bool``, ...) has the facts of the dtype stored as it
(:func:`compute_info`: ``f32`` is float32's row), so tables keyed by compute type are not
needed either.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "F32_BITS",
    "DTypeInfo",
    "DTYPE_TABLE",
    "STORAGE_TYPES",
    "StorageType",
    "EMULATED_INT64",
    "compute_info",
    "convert",
    "emulating_int64",
    "int64_mode",
    "set_default_int64_mode",
    "literal",
    "storage_type",
]


@dataclass(frozen=True)
class DTypeInfo:
    """Every fact about one dtype (a row of :data:`DTYPE_TABLE`).

    ``name``: NumPy's name; ``kind``: NumPy's kind letter (``b``, ``i``, ``u``, ``f``, ``c``);
    ``itemsize``: bytes per element; ``array``: element type of the storage array it is bound
    as; ``compute``: WGSL type values have in registers; ``lanes``: elements per u32 word for
    packed types (1 otherwise); ``load``: expression template over ``{buf}`` and ``{i}``
    (element index, u32) giving a ``compute`` value; ``bits``: expression template over ``{v}``
    (a ``compute`` value) giving the lane's bits as u32 for packed types; ``feature``: adapter
    feature required; ``lane``: expression template giving lane ``{l}`` of the u32 word ``{w}``
    as a ``compute`` value (``{s}``: the lane's bit shift, ``{r}``: the left shift that puts the
    lane's top bit at bit 31); ``wrap``: expression template over ``{v}`` giving a ``compute``
    value as storing it keeps (8/16-bit integers wrap, float16 rounds; empty: unchanged);
    ``accumulator``: the dtype sums and scans of this dtype accumulate in; ``native``: for
    floats, the WGSL type and feature of the dtype as a native type (``f16`` needs
    ``shader-f16``; the BLAS-like kernels use it), else None; ``fallback``: the narrower dtype of
    the same kind the device has where it lacks ``feature``: the conversion the ``TypeError``
    for float64/complex128 data names, and the dtype the message of a kernel without int64
    emulation names (int64/uint64 themselves are emulated there), or empty; ``component``: for complex
    dtypes, the real dtype of each of the two parts (else empty).
    """

    name: str
    kind: str
    itemsize: int
    array: str
    compute: str
    lanes: int
    load: str
    bits: str
    feature: str | None
    lane: str = ""
    wrap: str = ""
    accumulator: str = ""
    native: tuple[str, str | None] | None = None
    fallback: str = ""
    component: str = ""

    @property
    def complex(self) -> bool:
        """Whether this is a complex dtype (a ``vec2`` of its component's float type)."""
        return self.kind == "c"

    @property
    def real_compute(self) -> str:
        """The scalar WGSL float type of a complex dtype's parts (``f32``, ``f64``); the compute
        type itself for other dtypes."""
        return DTYPE_TABLE[self.component].compute if self.component else self.compute

    @property
    def emulated(self) -> bool:
        """Whether values are two 32-bit words (int64/uint64 without ``shader-int64``: the
        structs of ``_wgsl/int64_emul.wgsl``)."""
        return self.compute in _EMULATED_TYPES

    @property
    def packed(self) -> bool:
        """Whether elements are packed several to a u32 word (1- and 2-byte dtypes)."""
        return self.lanes > 1

    @property
    def numpy(self) -> np.dtype[Any]:
        """The NumPy dtype."""
        return np.dtype(self.name)

    @property
    def family(self) -> str:
        """'f', 'i', 'u', 'b' or 'c': the family of the compute type (the op forms' key)."""
        return self.kind

    @property
    def compute_bits(self) -> int:
        """Bit width of the compute type (bool: 1)."""
        return _COMPUTE_BITS[self.compute]

    @property
    def float_bits(self) -> tuple[int, int, int]:
        """(sign bit, exponent mask, mantissa mask) of the stored IEEE format (floating dtypes;
        ValueError for others)."""
        if self.kind != "f":
            raise ValueError(f"{self.name} is not a floating dtype")
        info = np.finfo(self.name)
        bits = 8 * self.itemsize
        return 1 << (bits - 1), ((1 << info.nexp) - 1) << info.nmant, (1 << info.nmant) - 1

    @property
    def inf(self) -> str:
        """WGSL of +inf in the compute type (floating dtypes; complex: of its parts' type)."""
        return _float_constant(0x7F800000, self.real_compute)

    @property
    def nan(self) -> str:
        """WGSL of a quiet NaN in the compute type (floating dtypes; complex: of its parts' type)."""
        return _float_constant(0x7FC00000, self.real_compute)

    def is_nan(self, value: str) -> str:
        """WGSL test ``value`` (a compute value) is NaN, from its bits: compilers may fold
        ``x != x`` (naga emits ordered comparisons, the NVIDIA driver folds f64
        self-comparisons); an f64 NaN converts to an f32 NaN (no 64-bit integers needed).
        ``false`` for non-floating dtypes; complex: either part NaN."""
        if self.complex:
            part = DTYPE_TABLE[self.component]
            return f"({part.is_nan(f'({value}).x')} || {part.is_nan(f'({value}).y')})"
        if self.compute == "f32":
            return f"((bitcast<u32>({value}) & 0x7FFFFFFFu) > 0x7F800000u)"
        if self.compute == "f64":
            return f"((bitcast<u32>(f32({value})) & 0x7FFFFFFFu) > 0x7F800000u)"
        return "false"

    def load_expr(self, buf: str, index: str) -> str:
        """WGSL expression reading element ``index`` of ``buf`` as a ``compute`` value."""
        return self.load.format(buf=buf, i=f"({index})")

    def bits_expr(self, value: str) -> str:
        """WGSL expression giving the u32 lane bits of a ``compute`` value (packed types)."""
        return self.bits.format(v=f"({value})")

    def lane_expr(self, word: str, lane: int) -> str:
        """WGSL expression of lane ``lane`` of the u32 word ``word`` (packed types)."""
        width = 32 // self.lanes
        return self.lane.format(w=word, l=lane, s=lane * width, r=32 - width * (lane + 1))

    def wrap_expr(self, value: str) -> str:
        """``value`` (a compute value) as storing it as this dtype and loading it back gives:
        float16 rounds to nearest even (overflow to inf), 8/16-bit integers wrap."""
        return self.wrap.format(v=value) if self.wrap else value

    def param_load(self, word: int, read: str = "P") -> str:
        """WGSL of a scalar of this dtype kept in parameter words ``word`` (and ``word + 1`` for
        64-bit types; the words carry the compute type's bits), as its compute type; ``read``
        is the WGSL function that reads a word."""
        if self.complex:
            part = DTYPE_TABLE[self.component]
            step = part.itemsize // 4
            return (f"{self.compute}({part.param_load(word, read)}, "
                    f"{part.param_load(word + step, read)})")
        if self.emulated:
            return f"{self.compute}({read}({word}u), {read}({word + 1}u))"
        if self.itemsize == 8:
            bits = f"((u64({read}({word + 1}u)) << 32u) | u64({read}({word}u)))"
            return bits if self.compute == "u64" else f"bitcast<{self.compute}>({bits})"
        if self.compute == "bool":
            return f"({read}({word}u) != 0u)"
        if self.compute == "u32":
            return f"{read}({word}u)"
        return f"bitcast<{self.compute}>({read}({word}u))"

    def literal(self, value: float | int | bool | complex) -> str:
        """A WGSL literal of ``value`` in the compute type (see :func:`literal`)."""
        return literal(value, self.compute)

    def convert_expr(self, value: str, from_compute: str) -> str:
        """WGSL expression converting ``value`` of compute type ``from_compute`` to this type's
        compute type, with NumPy's casting results where WGSL differs (bool from numbers is
        ``!= 0``; numbers from bool are 0/1)."""
        return convert(value, from_compute, self.compute)


_COMPUTE_BITS = {"bool": 1, "i32": 32, "u32": 32, "f32": 32, "i64": 64, "u64": 64, "f64": 64,
                 "vec2<f32>": 64, "vec2<f64>": 128, "i64e": 64, "u64e": 64}
#: The compute types of int64/uint64 emulated as two 32-bit words (``_wgsl/int64_emul.wgsl``).
_EMULATED_TYPES = ("i64e", "u64e")
#: complex compute type -> the float type of its parts
_COMPLEX_PARTS = {"vec2<f32>": "f32", "vec2<f64>": "f64"}


#: The WGSL function ``kernels.render`` defines in every kernel that calls it: the f32 of a u32
#: bit pattern, at run time (a non-finite ``bitcast<f32>`` of a literal is no constant
#: expression: Tint rejects it, naga folds it).
F32_BITS = "gt_f32_bits"


def _float_constant(f32_bits: int, compute: str) -> str:
    """A non-finite float given by its f32 bit pattern (inf and NaN have no WGSL literal and are
    no constant expression: ``kernels.F32_BITS`` makes them at run time; f64 gets them converted
    exactly from f32, as WGSL has no 64-bit bitcast literal)."""
    f32 = f"{F32_BITS}(0x{f32_bits:08x}u)"
    return f32 if compute == "f32" else f"{compute}({f32})"


def convert(value: str, src: str, dst: str, *, int64: bool = True) -> str:
    """WGSL expression converting ``value`` from compute type ``src`` to ``dst`` with NumPy's
    results where WGSL differs (bool from numbers is ``!= 0`` with NaN true; numbers from bool
    are 0/1; 32- to 64-bit integers extend by the source's signedness). ``int64=False``: for
    kernels that may lack 64-bit integers (f64 with ``shader-f64`` only), f64 to bool without
    them. Complex (``vec2<f32>``/``vec2<f64>``): a real value becomes the real part (imaginary
    part 0), a complex value converts as a real one by its real part (NumPy's ``astype``
    discards the imaginary part) and to bool as "either part nonzero" (NaN true)."""
    if src == dst:
        return value
    if src in _COMPLEX_PARTS or dst in _COMPLEX_PARTS:  # (by the real part: emulated int64 too)
        return _convert_complex(value, src, dst, int64)
    if src in _EMULATED_TYPES or dst in _EMULATED_TYPES:
        return _convert_emulated(value, src, dst)
    if dst == "bool":
        # floats by their bits: naga's float `!=` is an ordered comparison (NaN != 0 is false),
        # NumPy's bool(NaN) is True; -0.0 is False.
        if src == "f32":
            return f"((bitcast<u32>({value}) << 1u) != 0u)"
        if src == "f64" and not int64:  # nonzero, or NaN (an f64 NaN converts to an f32 NaN)
            return f"((({value}) != f64(0)) || ((bitcast<u32>(f32({value})) & 0x7FFFFFFFu) > 0x7F800000u))"
        if src == "f64":
            return f"((bitcast<u64>({value}) << 1u) != u64(0))"
        zero = {"i32": "0i", "u32": "0u", "i64": "i64(0)", "u64": "u64(0)"}[src]
        return f"(({value}) != {zero})"
    if src == "bool":
        return f"select({dst}(0), {dst}(1), {value})"
    # naga picks the 32->64-bit integer conversion by the destination's signedness (u32 -> i64
    # sign-extends, i32 -> u64 zero-extends): widen within the source's signedness, then bitcast.
    if src == "u32" and dst == "i64":
        return f"bitcast<i64>(u64({value}))"
    if src == "i32" and dst == "u64":
        return f"bitcast<u64>(i64({value}))"
    if src == "i32" and dst == "i64":
        # the shift pair is the sign extension itself: lavapipe miscompiles comparisons of a
        # plain i64(i32) with constants (i64(y) < i64(64) is false for y = 0).
        return f"((i64({value}) << 32u) >> 32u)"
    return f"{dst}({value})"


def _convert_emulated(value: str, src: str, dst: str) -> str:
    """:func:`convert` where ``src`` or ``dst`` is an emulated 64-bit type (``i64e``/``u64e``:
    the helpers of ``_wgsl/int64_emul.wgsl``; f64 for adapters with ``shader-f64`` and without
    ``shader-int64``); KeyError for a type they do not convert (complex, native 64-bit
    integers: never on one adapter)."""
    if src in _EMULATED_TYPES and dst in _EMULATED_TYPES + ("i32", "u32", "f32", "f64", "bool"):
        return f"x64_to_{dst}_{src}({value})"
    if dst in _EMULATED_TYPES and src in ("i32", "u32", "f32", "f64", "bool"):
        return f"x64_from_{src}_{dst}({value})"
    raise KeyError(f"no conversion from {src} to {dst} on an adapter without shader-int64")


def _convert_complex(value: str, src: str, dst: str, int64: bool) -> str:
    """:func:`convert` where ``src`` or ``dst`` is a complex compute type."""
    if src in _COMPLEX_PARTS and dst in _COMPLEX_PARTS:
        return f"{dst}({value})"
    if dst in _COMPLEX_PARTS:
        part = _COMPLEX_PARTS[dst]
        return f"{dst}({convert(value, src, part, int64=int64)}, {part}(0))"
    part = _COMPLEX_PARTS[src]
    if dst == "bool":
        return (f"({convert(f'({value}).x', part, 'bool', int64=int64)} || "
                f"{convert(f'({value}).y', part, 'bool', int64=int64)})")
    return convert(f"({value}).x", part, dst, int64=int64)


_PACKED_U8 = "(({buf}[{i} >> 2u] >> (8u * ({i} & 3u))) & 0xFFu)"
_PACKED_U16 = "(({buf}[{i} >> 1u] >> (16u * ({i} & 1u))) & 0xFFFFu)"

#: name -> row: every dtype gputensor supports, in the order of the namespace's dtype list.
DTYPE_TABLE: dict[str, DTypeInfo] = {
    t.name: t
    for t in (
        DTypeInfo("bool", "b", 1, "u32", "bool", 4, "(" + _PACKED_U8 + " != 0u)", "select(0u, 1u, {v})", None,
                  lane="((({w} >> {s}u) & 0xFFu) != 0u)", accumulator="uint32"),
        DTypeInfo("int8", "i", 1, "u32", "i32", 4,
                  "(bitcast<i32>({buf}[{i} >> 2u] << (24u - 8u * ({i} & 3u))) >> 24u)",
                  "(bitcast<u32>({v}) & 0xFFu)", None,
                  lane="(bitcast<i32>({w} << {r}u) >> 24u)", wrap="(({v} << 24u) >> 24u)", accumulator="int32"),
        DTypeInfo("int16", "i", 2, "u32", "i32", 2,
                  "(bitcast<i32>({buf}[{i} >> 1u] << (16u - 16u * ({i} & 1u))) >> 16u)",
                  "(bitcast<u32>({v}) & 0xFFFFu)", None,
                  lane="(bitcast<i32>({w} << {r}u) >> 16u)", wrap="(({v} << 16u) >> 16u)", accumulator="int32"),
        DTypeInfo("int32", "i", 4, "i32", "i32", 1, "{buf}[{i}]", "", None, accumulator="int32"),
        DTypeInfo("int64", "i", 8, "i64", "i64", 1, "{buf}[{i}]", "", "shader-int64", accumulator="int64",
                  fallback="int32"),
        DTypeInfo("uint8", "u", 1, "u32", "u32", 4, _PACKED_U8, "({v} & 0xFFu)", None,
                  lane="(({w} >> {s}u) & 0xFFu)", wrap="({v} & 0xFFu)", accumulator="uint32"),
        DTypeInfo("uint16", "u", 2, "u32", "u32", 2, _PACKED_U16, "({v} & 0xFFFFu)", None,
                  lane="(({w} >> {s}u) & 0xFFFFu)", wrap="({v} & 0xFFFFu)", accumulator="uint32"),
        DTypeInfo("uint32", "u", 4, "u32", "u32", 1, "{buf}[{i}]", "", None, accumulator="uint32"),
        DTypeInfo("uint64", "u", 8, "u64", "u64", 1, "{buf}[{i}]", "", "shader-int64", accumulator="uint64",
                  fallback="uint32"),
        DTypeInfo("float16", "f", 2, "u32", "f32", 2, "unpack2x16float({buf}[{i} >> 1u])[{i} & 1u]",
                  "ew_f16_bits_f32({v})", None,
                  lane="unpack2x16float({w})[{l}]", wrap="unpack2x16float(ew_f16_bits_f32({v})).x",
                  accumulator="float32", native=("f16", "shader-f16")),
        DTypeInfo("float32", "f", 4, "f32", "f32", 1, "{buf}[{i}]", "", None, accumulator="float32",
                  native=("f32", None)),
        DTypeInfo("float64", "f", 8, "f64", "f64", 1, "{buf}[{i}]", "", "shader-f64", accumulator="float64",
                  native=("f64", "shader-f64"), fallback="float32"),
        DTypeInfo("complex64", "c", 8, "vec2<f32>", "vec2<f32>", 1, "{buf}[{i}]", "", None,
                  accumulator="complex64", component="float32"),
        DTypeInfo("complex128", "c", 16, "vec2<f64>", "vec2<f64>", 1, "{buf}[{i}]", "", "shader-f64",
                  accumulator="complex128", fallback="complex64", component="float64"),
    )
}

#: name -> row of the 64-bit integer dtypes on adapters without ``shader-int64``: two 32-bit
#: words (the structs ``i64e``/``u64e`` of ``_wgsl/int64_emul.wgsl``, NumPy's byte layout),
#: needing no feature. :func:`storage_type` gives these rows while :func:`int64_mode` is on.
EMULATED_INT64: dict[str, DTypeInfo] = {
    t.name: t
    for t in (
        DTypeInfo("int64", "i", 8, "i64e", "i64e", 1, "{buf}[{i}]", "", None, accumulator="int64"),
        DTypeInfo("uint64", "u", 8, "u64e", "u64e", 1, "{buf}[{i}]", "", None, accumulator="uint64"),
    )
}

#: Whether 64-bit integers are emulated for the device being worked on (None: the process
#: default, ``_EMULATING_DEFAULT``); set by the frontend per device (``int64_mode``).
_EMULATING: contextvars.ContextVar[bool | None] = contextvars.ContextVar("gputensor_int64_emulated", default=None)
_EMULATING_DEFAULT = [False]


def emulating_int64() -> bool:
    """Whether int64/uint64 are emulated as two 32-bit words for the current device."""
    mode = _EMULATING.get()
    return _EMULATING_DEFAULT[0] if mode is None else mode


@contextlib.contextmanager
def int64_mode(emulated: bool) -> Iterator[None]:
    """Within the block, :func:`storage_type` gives the emulated int64/uint64 rows when
    ``emulated`` (the device lacks ``shader-int64``), the native ones otherwise."""
    token = _EMULATING.set(bool(emulated))
    try:
        yield
    finally:
        _EMULATING.reset(token)


def set_default_int64_mode(emulated: bool) -> None:
    """The mode outside :func:`int64_mode` blocks (the process default device's)."""
    _EMULATING_DEFAULT[0] = bool(emulated)


#: The table under its storage-facing names (the same rows).
STORAGE_TYPES = DTYPE_TABLE
StorageType = DTypeInfo

#: compute type -> the row of the dtype stored as it (``f32`` -> float32, ``bool`` -> bool).
_BY_COMPUTE: dict[str, DTypeInfo] = {t.array: t for t in DTYPE_TABLE.values() if not t.packed}
_BY_COMPUTE["bool"] = DTYPE_TABLE["bool"]
_BY_COMPUTE.update({t.compute: t for t in EMULATED_INT64.values()})


def storage_type(name: str) -> DTypeInfo:
    """The row of dtype ``name`` for the current device (the :data:`EMULATED_INT64` rows for
    int64/uint64 where they are emulated); KeyError with the known names otherwise."""
    name = str(name)
    if name in EMULATED_INT64 and emulating_int64():
        return EMULATED_INT64[name]
    try:
        return DTYPE_TABLE[name]
    except KeyError:
        raise KeyError(f"no WGSL storage for dtype {name!r}; known: {sorted(DTYPE_TABLE)}") from None


def compute_info(compute: str) -> DTypeInfo:
    """The row of the dtype whose compute type ``compute`` is its own storage type (``f32``:
    float32, ``i32``: int32, ``bool``: bool); KeyError for an unknown compute type."""
    try:
        return _BY_COMPUTE[compute]
    except KeyError:
        raise KeyError(f"no dtype is computed as {compute!r}; known: {sorted(_BY_COMPUTE)}") from None


def literal(value: float | int | bool | complex, compute: str) -> str:
    """A WGSL literal of compute type ``compute`` (inf/nan built from bit patterns; a complex
    type takes a complex ``value``, as a ``vec2`` of its parts)."""
    if compute in _COMPLEX_PARTS:
        z = complex(value)
        part = _COMPLEX_PARTS[compute]
        return f"{compute}({literal(z.real, part)}, {literal(z.imag, part)})"
    if compute == "bool":
        return "true" if value else "false"
    if compute in _EMULATED_TYPES:
        v = int(value) & 0xFFFFFFFFFFFFFFFF
        return f"{compute}({v & 0xFFFFFFFF}u, {v >> 32}u)"
    if compute in ("i32", "u32", "i64", "u64"):
        v = int(value)
        if compute == "i32":
            return f"i32({v})" if v != -(2**31) else "i32(-2147483647 - 1)"
        if compute == "u32":
            return f"{v & 0xFFFFFFFF}u"
        if compute == "i64":
            return f"i64({v})" if v > -(2**63) else "(i64(-9223372036854775807) - i64(1))"
        v &= 0xFFFFFFFFFFFFFFFF
        return f"((u64({v >> 32}u) << 32u) | u64({v & 0xFFFFFFFF}u))"
    f = float(value)
    with np.errstate(over="ignore"):
        f32_bits = int(np.array(f, dtype=np.float32).view(np.uint32))
    if compute == "f32":
        return f"bitcast<f32>({f32_bits}u)" if math.isfinite(f) else f"{F32_BITS}({f32_bits}u)"
    if math.isfinite(f):
        return f"f64({f!r}lf)"
    # inf and nan convert exactly from f32 (WGSL has no 64-bit bitcast literal; they are no
    # constant expression: made at run time)
    return f"f64({F32_BITS}({f32_bits}u))"
