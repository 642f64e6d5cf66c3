"""How each dtype is stored in and loaded from WGSL storage buffers (a table, no wgpu).

Storage keeps NumPy's byte layout, so host copies are plain byte copies. WGSL storage has only
32- and 64-bit scalars, so 1- and 2-byte dtypes are *packed*: the buffer is bound as
``array<u32>`` and elements are extracted with shifts (sign-extended for signed types), float16
through ``unpack2x16float``. A kernel writing a packed output either owns whole words (one
invocation per u32 word, read-modify-write of the lanes in range) or, for strided outputs, uses
``atomicAnd``/``atomicOr`` on the element's lane; both keep other elements of a word intact.

float16 is computed in f32 and stored rounded to f16 with an exact round-to-nearest-even
(``ew_f16_bits`` in ewise_helpers.wgsl; ``pack2x16float`` leaves rounding and overflow unspecified),
as NumPy computes its float16 ufuncs,
so it needs no adapter feature. 64-bit types need ``shader-int64`` / ``shader-f64``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StorageType:
    """WGSL facts about one dtype.

    ``array``: element type of the storage array it is bound as; ``compute``: WGSL type values
    have in registers; ``lanes``: elements per u32 word for packed types (1 otherwise);
    ``load``: expression template over ``{buf}`` and ``{i}`` (element index, u32) giving a
    ``compute`` value; ``bits``: expression template over ``{v}`` (a ``compute`` value) giving the
    lane's bits as u32 for packed types; ``feature``: adapter feature required.
    """

    name: str
    itemsize: int
    array: str
    compute: str
    lanes: int
    load: str
    bits: str
    feature: str | None

    @property
    def packed(self) -> bool:
        return self.lanes > 1

    def load_expr(self, buf: str, index: str) -> str:
        """WGSL expression reading element ``index`` of ``buf`` as a ``compute`` value."""
        return self.load.format(buf=buf, i=f"({index})")

    def bits_expr(self, value: str) -> str:
        """WGSL expression giving the u32 lane bits of a ``compute`` value (packed types)."""
        return self.bits.format(v=f"({value})")

    def convert_expr(self, value: str, from_compute: str) -> str:
        """WGSL expression converting ``value`` of compute type ``from_compute`` to this type's
        compute type, with NumPy's casting results where WGSL differs (bool from numbers is
        ``!= 0``; numbers from bool are 0/1)."""
        return convert(value, from_compute, self.compute)


def convert(value: str, src: str, dst: str) -> str:
    """WGSL expression converting ``value`` from compute type ``src`` to ``dst``."""
    if src == dst:
        return value
    if dst == "bool":
        # floats by their bits: naga's float `!=` is an ordered comparison (NaN != 0 is false),
        # NumPy's bool(NaN) is True; -0.0 is False.
        if src == "f32":
            return f"((bitcast<u32>({value}) << 1u) != 0u)"
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
    return f"{dst}({value})"


_PACKED_U8 = "(({buf}[{i} >> 2u] >> (8u * ({i} & 3u))) & 0xFFu)"
_PACKED_U16 = "(({buf}[{i} >> 1u] >> (16u * ({i} & 1u))) & 0xFFFFu)"

STORAGE_TYPES: dict[str, StorageType] = {
    t.name: t
    for t in (
        StorageType("bool", 1, "u32", "bool", 4, "(" + _PACKED_U8 + " != 0u)", "select(0u, 1u, {v})", None),
        StorageType("int8", 1, "u32", "i32", 4,
                    "(bitcast<i32>({buf}[{i} >> 2u] << (24u - 8u * ({i} & 3u))) >> 24u)",
                    "(bitcast<u32>({v}) & 0xFFu)", None),
        StorageType("uint8", 1, "u32", "u32", 4, _PACKED_U8, "({v} & 0xFFu)", None),
        StorageType("int16", 2, "u32", "i32", 2,
                    "(bitcast<i32>({buf}[{i} >> 1u] << (16u - 16u * ({i} & 1u))) >> 16u)",
                    "(bitcast<u32>({v}) & 0xFFFFu)", None),
        StorageType("uint16", 2, "u32", "u32", 2, _PACKED_U16, "({v} & 0xFFFFu)", None),
        StorageType("float16", 2, "u32", "f32", 2, "unpack2x16float({buf}[{i} >> 1u])[{i} & 1u]",
                    "ew_f16_bits_f32({v})", None),
        StorageType("int32", 4, "i32", "i32", 1, "{buf}[{i}]", "", None),
        StorageType("uint32", 4, "u32", "u32", 1, "{buf}[{i}]", "", None),
        StorageType("float32", 4, "f32", "f32", 1, "{buf}[{i}]", "", None),
        StorageType("int64", 8, "i64", "i64", 1, "{buf}[{i}]", "", "shader-int64"),
        StorageType("uint64", 8, "u64", "u64", 1, "{buf}[{i}]", "", "shader-int64"),
        StorageType("float64", 8, "f64", "f64", 1, "{buf}[{i}]", "", "shader-f64"),
    )
}


def storage_type(name: str) -> StorageType:
    """The StorageType of dtype ``name``; KeyError with the known names otherwise."""
    try:
        return STORAGE_TYPES[str(name)]
    except KeyError:
        raise KeyError(f"no WGSL storage for dtype {name!r}; known: {sorted(STORAGE_TYPES)}") from None


def literal(value: float | int | bool, compute: str) -> str:
    """A WGSL literal of compute type ``compute`` (inf/nan built from bit patterns)."""
    if compute == "bool":
        return "true" if value else "false"
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
        return f"bitcast<f32>({f32_bits}u)"
    if math.isfinite(f):
        return f"f64({f!r}lf)"
    # inf and nan convert exactly from f32 (WGSL has no 64-bit bitcast literal)
    return f"f64(bitcast<f32>({f32_bits}u))"
