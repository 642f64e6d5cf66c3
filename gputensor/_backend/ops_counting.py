"""The small kernels around stream compaction: the value range and the histogram of integer
arrays (unique by counting: ``key_range.wgsl``, ``count_values.wgsl``) and the counts and first
indices of sorted unique values (``gather_unique.wgsl``).

Operands larger than one binding window are split into chunks. Each kernel's dispatches are a
``launch.LaunchProgram`` kept per backend by the call's plain arguments and replayed
(``ops_compact.record_program``); the histogram's smallest value is appended to its parameters
per call.
"""

from __future__ import annotations

import functools
import struct
from typing import Any

from .errors import invalid_argument, unsupported
from .kernels import snippet
from .launch import LaunchProgram, Record, Region
from .ops_compact import ITEMS, WG, record_program
from .sort_common import _check_dtype, _check_int, _check_span, window_limit
from .sort_key_code import _key_defines, bits_loader
from .sort_subgroup import subgroup_probe
from .plan_cache import PlanCache
from .wgsl_types import storage_type

__all__ = ["PEEL_ALL_SPAN", "RANGE_ITEMS", "count_values", "decode_key_range", "histogram_limit", "key_range",
           "key_range_record", "unique_finish"]

#: key_range.wgsl's, count_values.wgsl's and gather_unique.wgsl's parameter words
#: (count_values' last one, ``key_min``, is appended per call).
_RANGE_WORDS = struct.Struct("<4I")
_COUNT_WORDS = struct.Struct("<5I")
_UNIQUE_WORDS = struct.Struct("<11I")
_WORD = struct.Struct("<I")
#: The programs of this module kept per backend, by their plain arguments.
_PROGRAMS = PlanCache(256)

#: Histograms of at most this many buckets merge every subgroup's equal buckets before adding
#: (few distinct values per subgroup); wider ones merge only the first lane's bucket.
PEEL_ALL_SPAN = 1 << 12


@functools.lru_cache(maxsize=None)
def _count_add_code(subgroups: bool) -> dict[str, str]:
    """count_values.wgsl's ADD_FN (``add(live, bucket)``, with the subgroup builtins when
    ``subgroups``) and its SG_ARGS / SG_CALL."""
    if not subgroups:
        return {"ADD_FN": snippet("count/add"), "SG_ARGS": "", "SG_CALL": ""}
    return {"ADD_FN": snippet("count/add_subgroups"), "SG_ARGS": snippet("count/subgroup_args"),
            "SG_CALL": ", sgs, lane"}


def histogram_limit(backend: Any) -> int:
    """The most buckets :func:`count_values` takes (its histogram is bound in one window)."""
    return window_limit(backend) // 4


#: Elements per invocation of key_range.wgsl.
RANGE_ITEMS = 32


def _count_dtype(backend: Any, dtype: Any, what: str) -> tuple[str, int, bool]:
    """(dtype, bits, signed) of an integer or bool dtype of at most 32 bits (``what`` names the
    operation in the error: BackendError invalid argument otherwise)."""
    dtype = _check_dtype(backend, dtype)
    if storage_type(dtype).kind == "f" or storage_type(dtype).itemsize > 4:
        raise invalid_argument(f"{what} takes integer or bool dtypes of at most 32 bits, not {dtype}")
    return dtype, 8 * storage_type(dtype).itemsize, storage_type(dtype).kind == "i"


def key_range_record(backend: Any, src: int, dtype: str, n: int, out: int) -> None:
    """Record the range of the ``n >= 1`` contiguous elements at ``src``, integers or bools of
    ``dtype`` (at most 32 bits), into ``out``: two zero-filled u32 words that receive (max ~key,
    max key) of sort_keys' canonical keys (key_range.wgsl; :func:`decode_key_range` turns their
    bytes into (min, max)). Nothing is read back.

    Raises BackendError: invalid argument for a bad dtype, size or pointer."""
    dtype, bits, _ = _count_dtype(backend, dtype, "key_range")
    n = _check_int("n", n, 1)
    size = bits // 8
    _check_span(backend, src, n * size, size, "source")
    _check_span(backend, out, 8, 4, "range output")
    limit = window_limit(backend)
    key = ("key_range", dtype, n, limit)
    plans = _PROGRAMS.of(backend)
    program = plans.get(key)
    ctx = backend.context
    if program is None or not program.valid_for(ctx):
        tile = WG * RANGE_ITEMS
        defines = {**_key_defines(dtype, "canon", False), "ITEMS": RANGE_ITEMS,
                   "SRC_LOADER": bits_loader("src_bits", "src", dtype)}
        pipe = ctx.pipeline("key_range", 2, defines)
        per = max(tile, limit // size // tile * tile)  # chunks of whole tiles
        records = []
        for e0 in range(0, n, per):
            ne = min(per, n - e0)
            regions = (Region(0, e0 * size, ne * size, size, 0, 1, 0), Region(1, 0, 8, 4, 0, 2, 0))
            records.append(Record(pipe, defines, (ne, 0, 0, 0), ctx.fold_grid(-(-ne // tile)), regions))
        program = LaunchProgram.compile("key_range", _RANGE_WORDS, ctx, records, ())
        _PROGRAMS.keep(plans, key, program)
    record_program(backend, program, (src, out))


def decode_key_range(raw: bytes, dtype: str) -> tuple[int, int]:
    """(min, max) from the 8 bytes :func:`key_range_record` wrote for ``dtype``."""
    bits = 8 * storage_type(dtype).itemsize
    not_lo, hi_key = int.from_bytes(raw[:4], "little"), int.from_bytes(raw[4:8], "little")
    mask = (1 << bits) - 1
    lo_key = ~not_lo & mask
    if storage_type(dtype).kind == "i":  # sort_keys' canonical key of a signed integer: key = v + 2^(bits-1)
        sign = 1 << (bits - 1)
        return lo_key - sign, (hi_key & mask) - sign
    return lo_key, hi_key & mask


def key_range(backend: Any, src: int, dtype: str, n: int) -> tuple[int, int]:
    """(min, max) of the ``n >= 1`` contiguous elements at ``src``, integers or bools of
    ``dtype`` (at most 32 bits): one dispatch (key_range.wgsl) and one 8-byte readback.

    Raises BackendError: invalid argument for a bad dtype, size or pointer."""
    dtype, _, _ = _count_dtype(backend, dtype, "key_range")
    out = backend.alloc(8)  # zero-filled: (max ~key, max key) start at 0
    try:
        key_range_record(backend, src, dtype, n, out)
        alloc, off = backend.resolve(out, 8)
        raw = backend.context.readback_many([(alloc.buffer, off, 8)])[0]
    finally:
        backend.free(out)
    return decode_key_range(raw, dtype)


def count_values(backend: Any, src: int, dtype: str, n: int, lo: int | None, hist: int, span: int,
                 *, range_ptr: int | None = None) -> None:
    """Add to ``hist[v - lo]`` (``span`` zero-filled u32 counters) one per element ``v`` of the
    ``n`` contiguous elements at ``src``, integers or bools of ``dtype`` (at most 32 bits) whose
    values all lie in ``[lo, lo + span)`` -- the caller knows that range (e.g. from a min/max
    reduction): the kernel does not check it.

    With ``range_ptr`` (``lo`` None) the smallest value is read on the device from what
    :func:`key_range_record` wrote there, and elements whose bucket would be ``span`` or more
    are not counted (the caller checks the range it reads back before using the counts).

    Raises BackendError: invalid argument for a bad dtype, size, range or pointer;
    unsupported for a histogram larger than one binding (:func:`histogram_limit`).
    """
    dtype, bits, signed = _count_dtype(backend, dtype, "count_values")
    n = _check_int("n", n)
    span = _check_int("span", span, 1)
    size = bits // 8
    lo_min, hi_max = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if dtype == "bool":
        hi_max = 1
    if range_ptr is None and (not isinstance(lo, int) or lo < lo_min or lo + span - 1 > hi_max):
        raise invalid_argument(f"values [{lo}, {lo} + {span}) are outside the range of {dtype}")
    if range_ptr is not None:
        if lo is not None:
            raise invalid_argument("count_values takes lo or range_ptr, not both")
        _check_span(backend, range_ptr, 8, 4, "range")
    if span > histogram_limit(backend):
        raise unsupported(f"a histogram of {span} buckets exceeds one binding on this adapter")
    _check_span(backend, hist, span * 4, 4, "histogram")
    if n == 0:
        return
    _check_span(backend, src, n * size, size, "source")
    key_min = 0 if lo is None else (lo ^ (1 << (bits - 1))) & ((1 << bits) - 1) if signed else lo  # to_key
    peel = 0
    if subgroup_probe(backend) is not None:  # merge equal buckets per subgroup (count_values.wgsl)
        peel = 128 if span <= PEEL_ALL_SPAN else 1
    limit = window_limit(backend)
    key = ("count_values", dtype, n, span, range_ptr is None, peel, limit)
    plans = _PROGRAMS.of(backend)
    program = plans.get(key)
    ctx = backend.context
    if program is None or not program.valid_for(ctx):
        tile = WG * ITEMS
        defines = {**_key_defines(dtype, "canon", False), "ITEMS": ITEMS, "PEEL": peel,
                   "RANGE_MIN": "false" if range_ptr is None else "true",
                   "SRC_LOADER": bits_loader("src_bits", "src", dtype), **_count_add_code(peel > 0)}
        pipe = ctx.pipeline("count_values", 3, defines)
        hist_region = Region(1, 0, span * 4, 4, 0, 2, 0)
        range_region = Region(-1, 0, 0, 256, 0, 0, 0) if range_ptr is None else Region(2, 0, 8, 4, 0, 4, 0)
        per = max(tile, limit // size // tile * tile)  # source chunks of whole tiles
        records = []
        for e0 in range(0, n, per):
            ne = min(per, n - e0)
            regions = (Region(0, e0 * size, ne * size, size, 0, 1, 0), hist_region, range_region)
            records.append(Record(pipe, defines, (ne, 0, 0, span, 0), ctx.fold_grid(-(-ne // tile)), regions))
        program = LaunchProgram.compile("count_values", _COUNT_WORDS, ctx, records, ())
        _PROGRAMS.keep(plans, key, program)
    record_program(backend, program, (src, hist, hist if range_ptr is None else range_ptr), _WORD.pack(key_min))


def unique_finish(backend: Any, starts: int, total: int, n: int, perm: int | None, counts: int | None,
                  index: int | None, index_dtype: str = "int64") -> None:
    """From the ``total`` group starts (u32 sorted positions) of ``n`` sorted elements, write
    each group's size to ``counts`` and the source index of its first element (``perm`` of its
    start: u32 permutation of the stable sort) to ``index``, both of ``index_dtype`` ('int64' or
    'int32'); either may be None (``perm`` too when ``index`` is).

    Raises BackendError: invalid argument for bad sizes, dtypes or pointer ranges.
    """
    if index_dtype not in ("int64", "int32"):
        raise invalid_argument(f"index dtype must be int64 or int32, not {index_dtype!r}")
    _check_dtype(backend, index_dtype, "index dtype")
    total = _check_int("total", total)
    n = _check_int("n", n)
    if (counts is None and index is None) or total == 0:
        return
    if index is not None and perm is None:
        raise invalid_argument("index needs perm")
    isize = storage_type(index_dtype).itemsize
    _check_span(backend, starts, total * 4, 4, "starts")
    for ptr, what in ((counts, "counts"), (index, "index")):
        if ptr is not None:
            _check_span(backend, ptr, total * isize, isize, what)
    limit = window_limit(backend)
    if perm is not None:
        _check_span(backend, perm, n * 4, 4, "perm")
    key = ("unique_finish", total, n, perm is not None, counts is not None, index is not None, isize, limit)
    plans = _PROGRAMS.of(backend)
    program = plans.get(key)
    ctx = backend.context
    if program is None or not program.valid_for(ctx):
        program = _unique_finish_program(ctx, total, n, perm is not None, counts is not None, index is not None,
                                         isize, limit)
        _PROGRAMS.keep(plans, key, program)
    record_program(backend, program, (starts, starts if perm is None else perm, starts if counts is None else counts,
                                      starts if index is None else index))


def _unique_finish_program(ctx: Any, total: int, n: int, has_perm: bool, has_counts: bool, has_index: bool,
                           isize: int, limit: int) -> LaunchProgram:
    """The dispatches of ``unique_finish``: operands 0 (starts), 1 (perm), 2 (counts) and 3
    (index), absent ones bound as placeholders; groups in chunks whose outputs fit ``limit``
    bytes, each over the permutation window by window."""
    perm_chunks: list[tuple[int, int]] = [(0, n)]
    if has_perm:
        per_p = max(1, limit // 4)
        perm_chunks = [(lo, min(n, lo + per_p)) for lo in range(0, n, per_p)]
    defines = {"HAS_COUNTS": "true" if has_counts else "false",
               "HAS_INDEX": "true" if has_index else "false", "IDX_WORDS": isize // 4}
    pipe = ctx.pipeline("gather_unique", 4, defines)
    per = max(1, (limit - 4) // max(isize, 4))
    records = []
    for j0 in range(0, total, per):
        m = min(per, total - j0)
        starts = Region(0, j0 * 4, (min(total, j0 + m + 1) - j0) * 4, 4, 0, 4, 0)
        counts = Region(2, j0 * isize, m * isize, isize, 0, 5, 0) if has_counts else Region(-1, 0, 0, 512, 0, 0, 0)
        index = Region(3, j0 * isize, m * isize, isize, 0, 6, 0) if has_index else Region(-1, 0, 0, 768, 0, 0, 0)
        for k, (lo, hi) in enumerate(perm_chunks):
            perm = Region(1, lo * 4, (hi - lo) * 4, 4, 0, 7, -lo) if has_perm else Region(-1, 0, 0, 256, 0, 0, 0)
            words = (m, j0, total, n, 0, 0, 0, 0, lo, hi, 1 if k == 0 else 0)
            records.append(Record(pipe, defines, words, ctx.fold_grid(-(-m // WG)), (starts, perm, counts, index)))
    return LaunchProgram.compile("gather_unique", _UNIQUE_WORDS, ctx, records, ())
