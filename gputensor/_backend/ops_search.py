"""``searchsorted`` on the device: each invocation binary-searches its query on the canonical
sort keys (NaN greater than everything, -0.0 == 0.0); a sorted array larger than one window is
searched chunk by chunk, the counts of the chunks added up."""

from __future__ import annotations

import struct
from typing import Any

from .errors import invalid_argument, unsupported
from .launch import LaunchProgram, Region
from .sort_common import _PLANS, WG, _check_dtype, _dummy_placeholder, window_limit
from .sort_key_code import _key_defines, bits_loader
from .validate import check_int, check_pointer
from .wgsl_types import storage_type

__all__ = ["searchsorted"]


def searchsorted(backend: Any, sorted_ptr: int, n: int, queries: int, m: int, dtype: str, out: int,
                 *, side: str = "left", index_dtype: str = "int64") -> None:
    """For each of the ``m`` contiguous queries, write to ``out`` (``index_dtype``) the number of
    the ``n`` contiguous ascending ``sorted_ptr`` elements that are < it (``side='left'``) or
    <= it (``'right'``) in NumPy's order (NaN greater than everything, -0.0 == 0.0): NumPy's
    ``searchsorted``. Both operands have ``dtype``.

    Each invocation binary-searches its query on the canonical keys. A sorted array larger than
    one window is searched chunk by chunk, the counts of the chunks added up.

    Raises BackendError: invalid argument for a bad side, dtype, size or pointer range;
    unsupported for a missing adapter feature.
    """
    dtype = _check_dtype(backend, dtype)
    if side not in ("left", "right"):
        raise invalid_argument(f"side must be 'left' or 'right', not {side!r}")
    if index_dtype not in ("int64", "int32"):
        raise invalid_argument(f"index_dtype must be 'int64' or 'int32', not {index_dtype!r}")
    _check_dtype(backend, index_dtype, "index_dtype")
    n = check_int("n", n)
    m = check_int("m", m)
    if n >= 2**31 or m >= 2**32 - 1:
        raise unsupported("searchsorted sizes exceed the 32-bit index range")
    size = storage_type(dtype).itemsize
    osize = storage_type(index_dtype).itemsize
    if m == 0:
        return
    q_alloc, q_off = check_pointer(backend, "queries", queries, m * size, size)
    o_alloc, o_off = check_pointer(backend, "output", out, m * osize, osize)
    a_alloc, a_off = q_alloc, q_off  # (with n 0 no binding reads the sorted array)
    if n:
        a_alloc, a_off = check_pointer(backend, "sorted array", sorted_ptr, n * size, size)
    ctx = backend.context
    limit = window_limit(backend)
    key = ("search", dtype, side, index_dtype, n, m, limit)
    plans = _PLANS.of(backend)
    program = plans.get(key)
    if program is None or not program.valid_for(ctx):
        program = _search_program(ctx, dtype, side, index_dtype, n, m, limit)
        _PLANS.keep(plans, key, program)
    ptrs = (sorted_ptr if n else queries, queries, out)
    if ctx.__dict__.get("dispatch") is not None:
        program.dispatch(backend, ctx, ptrs)
        return
    bases = [(a_alloc.buffer, a_alloc.buffer.size, a_alloc.nbytes, a_off, ptrs[0], a_alloc.whole),
             (q_alloc.buffer, q_alloc.buffer.size, q_alloc.nbytes, q_off, queries, q_alloc.whole),
             (o_alloc.buffer, o_alloc.buffer.size, o_alloc.nbytes, o_off, out, o_alloc.whole)]
    program.run(backend, ctx, bases, _dummy_placeholder)


def _search_program(ctx: Any, dtype: str, side: str, index_dtype: str, n: int, m: int,
                    limit: int) -> LaunchProgram:
    """The dispatches of ``searchsorted`` for its structure: operands 0 (the sorted array; with
    ``n`` 0 unused), 1 (queries) and 2 (output), in chunks of queries and of the sorted
    array that fit ``limit`` bytes."""
    size = storage_type(dtype).itemsize
    osize = storage_type(index_dtype).itemsize
    defines = {
        **_key_defines(dtype, "canon", False),
        "RIGHT": "true" if side == "right" else "false",
        "IDX_WORDS": osize // 4,
        "A_LOADER": bits_loader("a_bits", "a", dtype),
        "Q_LOADER": bits_loader("q_bits", "q", dtype),
    }
    pipe = ctx.pipeline("sort_search", 3, defines)
    per = max(1, limit // max(size, osize))
    qchunk = min(per, WG * 65535 * 64)
    achunk = max(1, limit // size)
    a_ranges = [(lo, min(n, lo + achunk)) for lo in range(0, n, achunk)] or [(0, 0)]
    records = []
    for q0 in range(0, m, qchunk):
        cnt = min(qchunk, m - q0)
        q_reg = Region(1, q0 * size, cnt * size, size, 0, 3, 0)
        o_reg = Region(2, q0 * osize, cnt * osize, osize, 0, 4, 0)
        for k, (lo, hi) in enumerate(a_ranges):
            if hi > lo:
                a_reg = Region(0, lo * size, (hi - lo) * size, size, 0, 2, 0)
            else:  # nothing to search: the queries in the sorted array's place (never read)
                a_reg = q_reg._replace(word=0)
            words = (cnt, hi - lo, 0, 0, 0, 1 if k else 0)
            records.append((pipe, defines, words, ctx.fold_grid(-(-cnt // WG)), (a_reg, q_reg, o_reg)))
    return LaunchProgram.compile("sort_search", _SEARCH_WORDS, ctx, records, ())


_SEARCH_WORDS = struct.Struct("<6I")
