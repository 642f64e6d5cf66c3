"""The WGSL of sort keys (``_wgsl/sort_keys.wgsl``, the maps of :func:`key_functions` in
``_wgsl/sort/key*.wgsl``): every dtype's bits map to an unsigned integer whose order is the sort
order (see ``ops_sort``'s docstring for the two float mappings), bit loaders and stores of each
element width, and the sort kernels' output writers."""

from __future__ import annotations

import functools

from .errors import invalid_argument
from .kernels import snippet
from .sort_common import _U32
from .wgsl_types import STORAGE_TYPES, storage_type

__all__ = ["bits_loader", "key_bits", "key_functions", "key_words", "store_bits_code"]


def _kind(dtype: str) -> str:
    kind = storage_type(dtype).kind
    return "u" if kind == "b" else kind


def key_words(dtype: str) -> int:
    """u32 words per key of ``dtype`` (2 for 64-bit dtypes, else 1)."""
    return 2 if storage_type(dtype).itemsize == 8 else 1


def key_bits(dtype: str) -> int:
    """Bits of the key that can differ (1 byte for bool)."""
    return storage_type(dtype).itemsize * 8


@functools.lru_cache(maxsize=None)
def bits_loader(fn: str, buf: str, dtype: str) -> str:
    """WGSL ``fn <fn>(i: u32) -> vec2<u32>``: raw bits of element ``i`` of ``buf`` (array<u32>)."""
    return snippet(f"sort/bits{_bit_width(dtype)}", {"FN": fn, "BUF": buf})


def _bit_width(dtype: str) -> int:
    """The element width of ``dtype``'s bit loaders and stores: 64, 32, 16 or 8 (1-byte and
    wider than 8-byte types)."""
    return {8: 64, 4: 32, 2: 16}.get(storage_type(dtype).itemsize, 8)


@functools.lru_cache(maxsize=None)
def key_functions(dtype: str, mode: str = "canon", descending: bool = False) -> str:
    """WGSL ``to_key`` / ``from_key`` for ``dtype`` (see the module docstring;
    ``_wgsl/sort/key*.wgsl``).

    ``mode`` is 'canon' (equal values -> equal keys; ``from_key`` is then only exact for
    integer and bool dtypes) or 'bij' (a bijection). Raises BackendError (invalid argument) for
    an unknown dtype or mode.
    """
    if not isinstance(dtype, str) or dtype not in STORAGE_TYPES:
        raise invalid_argument(f"no sort keys for dtype {dtype!r}")
    if mode not in ("canon", "bij"):
        raise invalid_argument(f"key mode must be 'canon' or 'bij', not {mode!r}")
    width = key_bits(dtype)
    kind = {"u": "uint", "i": "int"}.get(_kind(dtype), f"float_{mode}")
    defines: dict[str, object] = {"DESC": "true" if descending else "false"}
    if width == 64:
        return snippet(f"sort/key64_{kind}", defines)
    mask = (1 << width) - 1
    defines["MASK"] = mask
    if kind == "int":
        defines["SIGN"] = 1 << (width - 1)
    elif kind != "uint":
        # sign bit, exponent mask (inf bits), NaNs with the sign bit (as a count: the mantissa mask)
        sgn, inf, negnan = storage_type(dtype).float_bits
        defines["SGN"] = sgn
        if mode == "canon":
            defines.update(MAGNITUDE=mask ^ sgn, INF=inf)
        else:
            defines["NEGNAN"] = negnan
    return snippet(f"sort/key_{kind}", defines)


@functools.lru_cache(maxsize=None)
def store_bits_code(fn: str, buf: str, dtype: str) -> tuple[str, str]:
    """(array element type, WGSL ``fn <fn>(o: u32, bits: vec2<u32>)`` storing ``bits`` as element
    ``o`` of ``buf``). Packed dtypes OR their lane into a zero-filled ``array<atomic<u32>>``."""
    width = _bit_width(dtype)
    return ("u32" if width >= 32 else "atomic<u32>"), snippet(f"sort/store_bits{width}", {"FN": fn, "BUF": buf})


@functools.lru_cache(maxsize=None)
def _write_out(out_mode: int, kw: int, has_vals: bool, out_dtype: str) -> tuple[str, str]:
    """(DST_ARRAY, WGSL ``write_out(e, k, v)``) of an output mode (see sort_scatter.wgsl)."""
    if out_mode == 0:
        return "u32", snippet(f"sort/write_keys{'2' if kw == 2 else ''}{'_values' if has_vals else ''}")
    if out_mode == 1:
        arr, store = store_bits_code("store_out", "dst", out_dtype)
        return arr, store + "\n\n" + snippet("sort/write_bits")
    words = storage_type(out_dtype).itemsize // 4
    return "u32", snippet(f"sort/write_values{'2' if words == 2 else ''}")


@functools.lru_cache(maxsize=None)
def _key_defines(dtype: str, mode: str, descending: bool) -> dict[str, object]:
    """The sort_keys.wgsl placeholders (cached: callers copy, never mutate)."""
    kw = key_words(dtype)
    maxkey = (1 << key_bits(dtype)) - 1
    return {
        "KW": kw,
        "MAXKEY_LO": maxkey & _U32,
        "MAXKEY_HI": (maxkey >> 32) & _U32,
        "KEY_FNS": key_functions(dtype, mode, descending),
    }
