"""Array API set functions: ``unique_all``, ``unique_counts``, ``unique_inverse``,
``unique_values``, on the device (sort + group heads + compaction).

Every function flattens ``x`` and then:

1. sorts the canonical keys (``_backend/ops_sort.py``: equal values have equal keys, -0.0 equals
   +0.0, NaNs sort last) with the stable radix / bitonic sort, carrying the permutation (u32
   source positions) when indices, inverse indices or float values are wanted;
2. flags the head of every group of equal keys -- and every NaN: NaNs are distinct, as the
   standard says -- and compacts the heads' sorted positions (``_backend/ops_compact.py``); the
   number of unique values is the one value read back;
3. writes the outputs: integer and bool values straight from the sorted keys, float values by a
   gather of ``x`` at the first occurrences (so their bits, e.g. -0.0, are the input's); counts
   as differences of consecutive group starts; indices as the permutation at the group starts
   (the first occurrence, the sort being stable); inverse indices by scattering each sorted
   element's group id through the permutation.

``unique_values`` and ``unique_counts`` of integers and bools (at most 32 bits, at least
``COUNTING_MIN_N`` elements) whose values span few integers -- at most
``max(COUNTING_SPAN_FACTOR * n, COUNTING_SPAN_MIN)``, known from one min/max readback -- skip the
sort: the values are counted into a histogram and its non-empty buckets compacted in order
(:func:`_unique_by_counting`).

Results as array-api-strict: values sorted ascending (NaNs last), ``indices``/``counts`` and
``inverse_indices`` in the default indexing dtype, ``inverse_indices`` of ``x``'s shape.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from . import _complex_views, _dispatch, _runtime
from . import _function_kernels as kernels
from ._array_object import GpuArray
from ._backend import ops_compact, ops_counting, ops_sort
from ._creation_functions import asarray
from ._data_type_functions import astype
from ._dtypes import bool as bool_dtype
from ._dtypes import uint32
from ._elementwise_functions import not_equal, subtract
from ._advanced_indexing import nonzero_flat
from ._index_kernels import take_checked
from ._indexing_functions import take
from ._manipulation_functions import _as_contiguous, _check_array, _view, concat, reshape
from ._sorting_functions import argsort
from ._statistical_functions import cumulative_sum

__all__ = ["unique_all", "unique_counts", "unique_inverse", "unique_values"]


class UniqueAllResult(NamedTuple):
    values: GpuArray
    indices: GpuArray
    inverse_indices: GpuArray
    counts: GpuArray


class UniqueCountsResult(NamedTuple):
    values: GpuArray
    counts: GpuArray


class UniqueInverseResult(NamedTuple):
    values: GpuArray
    inverse_indices: GpuArray


def _unique(x: GpuArray, want_index: bool, want_inverse: bool, want_counts: bool) -> dict[str, GpuArray]:
    """The requested parts of ``unique`` of ``x`` (see the module docstring; complex ``x``:
    :func:`_unique_complex`)."""
    _check_array(x)
    index_dtype = kernels.default_int()
    flat = _as_contiguous(reshape(x, (-1,)))
    n = flat.size
    out: dict[str, GpuArray] = {}
    if n == 0:
        out["values"] = GpuArray._empty((0,), x.dtype)
        out["indices"] = GpuArray._empty((0,), index_dtype)
        out["counts"] = GpuArray._empty((0,), index_dtype)
        out["inverse_indices"] = GpuArray._empty(x.shape, index_dtype)
        return out
    if x.dtype.kind == "c":
        return _unique_complex(x, flat, index_dtype)
    if not (want_index or want_inverse):
        counted = _unique_by_counting(flat, want_counts, index_dtype)
        if counted is not None:
            return counted
    dtype = x.dtype.name
    is_float = x.dtype.kind == "f"
    need_perm = want_index or want_inverse or is_float
    # scratch and index outputs are fully written (no zero fill)
    keys = GpuArray._empty((n * ops_sort.key_words(dtype),), uint32, zero=False)
    perm = GpuArray._empty((n,), uint32, zero=False) if need_perm else None
    _dispatch.call(ops_sort.sort_keys, flat._ptr, dtype, n, keys._ptr, None if perm is None else perm._ptr)
    plan = _dispatch.call(ops_compact.compact_begin, keys._ptr, n, flag="head", dtype=dtype, nan_distinct=is_float)
    try:
        u = plan.read_total()
        need_starts = want_index or want_counts or is_float
        starts = GpuArray._empty((u,), uint32, zero=False) if need_starts else None
        try:
            if starts is not None:
                plan.write_indices(starts._ptr, "uint32")
            if not is_float:  # packed (8/16-bit) values are OR-ed into zeros; wider ones fully written
                values = GpuArray._empty((u,), x.dtype, zero=x.dtype.packed)
                plan.write_values(values._ptr, dtype)
                out["values"] = values
            if want_inverse:
                assert perm is not None
                inverse = GpuArray._empty(x.shape, index_dtype, zero=False)
                plan.write_inverse(perm._ptr, inverse._ptr, index_dtype.name)
                out["inverse_indices"] = inverse
        except Exception as exc:
            raise _runtime.translate(exc) from None
    finally:
        plan.free()
    if need_starts:
        assert starts is not None
        index = GpuArray._empty((u,), index_dtype, zero=False) if (want_index or is_float) else None
        counts = GpuArray._empty((u,), index_dtype, zero=False) if want_counts else None
        _dispatch.call(ops_counting.unique_finish, starts._ptr, u, n, None if perm is None else perm._ptr,
                       None if counts is None else counts._ptr, None if index is None else index._ptr, index_dtype.name)
        if index is not None:
            if want_index:
                out["indices"] = index
            if is_float:
                out["values"] = take_checked(flat, index)
        if counts is not None:
            out["counts"] = counts
    return out


def _unique_complex(x: GpuArray, flat: GpuArray, index_dtype: Any) -> dict[str, GpuArray]:
    """Every part of ``unique`` of the complex ``x`` (``flat``: it flattened, contiguous, not
    empty), in lexicographic order of (real, imaginary) with NaNs last per part, as NumPy.

    Two stable argsorts (by the imaginary part, then by the real part of that order) give the
    order, in which a group of equal values starts where a value differs from the one before
    (NaNs differ from everything: distinct, as the standard says; -0 equals +0, and the sort
    keeps the first occurrence first); the group starts are compacted, values, first indices
    and counts taken from them, and the inverse indices are the group numbers (a cumulative
    sum of the starts) put back in input order by the inverse permutation."""
    n = flat.size
    by_imag = argsort(_complex_views.part(flat, 1), stable=True)
    order = take(by_imag, argsort(take(_complex_views.part(flat, 0), by_imag), stable=True))
    ordered = take(flat, order)
    starts_mask = GpuArray._empty((n,), bool_dtype)
    _dispatch.fill(_view(starts_mask, (1,), (1,)), True)
    if n > 1:
        _dispatch.copy_into(_view(starts_mask, (n - 1,), (1,), 1),
                            not_equal(_view(ordered, (n - 1,), (1,), 1), _view(ordered, (n - 1,), (1,))))
    starts = nonzero_flat(starts_mask)[1]
    ends = concat([_view(starts, (starts.size - 1,), (1,), 1), asarray([n], dtype=starts.dtype)])
    group = subtract(cumulative_sum(astype(starts_mask, index_dtype)), 1)
    return {
        "values": take(ordered, starts),
        "indices": astype(take(order, starts), index_dtype),
        "counts": astype(subtract(ends, starts), index_dtype),
        "inverse_indices": reshape(take(group, argsort(order, stable=True)), x.shape),
    }


#: ``unique_values`` / ``unique_counts`` of at least this many integers (or bools) whose values
#: span at most ``max(COUNTING_SPAN_FACTOR * n, COUNTING_SPAN_MIN)`` consecutive integers count
#: them instead of sorting (see :func:`_unique_by_counting`).
COUNTING_MIN_N = 1 << 15
COUNTING_SPAN_FACTOR = 2
COUNTING_SPAN_MIN = 1 << 16
#: Buckets of the speculative histogram (counted before the range is read back), per element.
COUNTING_SPECULATIVE = 0.5


def _unique_by_counting(flat: GpuArray, want_counts: bool, index_dtype: Any) -> dict[str, GpuArray] | None:
    """``unique_values`` / ``unique_counts`` of the contiguous 1-D ``flat`` by a histogram, or
    None where that does not apply (then the caller sorts).

    For integer and bool dtypes of at most 32 bits with at least ``COUNTING_MIN_N`` elements
    whose values span few enough integers (see the constants above; the range must also fit the
    index dtype and one binding): every value is counted into a zero-filled histogram
    (``ops_counting.count_values``), the non-empty buckets are compacted in order (bucket i holds
    the value min + i) and written as the values, and the counts are the non-empty buckets'
    (written by the same compaction). No sort: a sorted result in a few memory-bound passes.

    One wait and one submit per call where it can: the range (``key_range_record``) stays on
    the device, the histogram gets ``COUNTING_SPECULATIVE * n`` buckets on speculation, and the
    range is read back with the number of unique values. A range wider than that histogram (its counts are
    incomplete) is counted again with the range known (a second wait)."""
    dt = flat.dtype
    n = flat.size
    if dt.kind == "f" or dt.itemsize > 4 or n < COUNTING_MIN_N:
        return None
    be = _dispatch.backend()
    limit = ops_counting.histogram_limit(be)
    with _dispatch.call(ops_compact.submits_held):  # (one submit per wait: the count's readback)
        if dt.kind == "b":
            return _count(flat, 2, 0, None, want_counts, index_dtype, limit)[0]
        guess = min(max(int(COUNTING_SPECULATIVE * n), COUNTING_SPAN_MIN), limit)
        rng = be.alloc(8)  # zero-filled: key_range's (max ~key, max key) start at 0
        try:
            _dispatch.call(ops_counting.key_range_record, flat._ptr, dt.name, n, rng)
            result, (lo, hi) = _count(flat, guess, None, rng, want_counts, index_dtype, limit)
        finally:
            be.free(rng)
        if result is None and _counting_applies(lo, hi, n, index_dtype, limit):
            result = _count(flat, hi - lo + 1, lo, None, want_counts, index_dtype, limit)[0]
        return result


def _counting_applies(lo: int, hi: int, n: int, index_dtype: Any, limit: int) -> bool:
    """Whether values in [lo, hi] of n elements are counted (not sorted)."""
    span = hi - lo + 1
    info = np.iinfo(index_dtype.numpy)
    return (span <= max(COUNTING_SPAN_FACTOR * n, COUNTING_SPAN_MIN) and lo >= info.min and hi <= info.max
            and span <= limit)


def _count(flat: GpuArray, span: int, lo: int | None, rng: int | None, want_counts: bool, index_dtype: Any,
           limit: int) -> tuple[dict[str, GpuArray] | None, tuple[int, int]]:
    """One counting pass of :func:`_unique_by_counting` over ``span`` buckets whose bucket 0 is
    ``lo``, or (``lo`` None) the minimum that ``key_range_record`` left at ``rng``, read on the
    device and read back with the count. Where the compaction runs as one dispatch unit the
    values are written before that readback. Returns (the outputs, or None when the range read
    back does not fit the buckets or counting does not apply to it; the range read back, or
    (lo, lo + span - 1))."""
    dt, n = flat.dtype, flat.size
    hist = GpuArray._empty((span,), uint32)  # zero-filled counters
    _dispatch.call(ops_counting.count_values, flat._ptr, dt.name, n, lo, hist._ptr, span, range_ptr=rng)
    plan = _dispatch.call(ops_compact.compact_begin, hist._ptr, span, flag="nonzero", dtype="uint32")
    try:
        room = None
        if plan.ahead_ok:
            cap = min(span, n)
            room = GpuArray._empty((cap,), dt, zero=dt.itemsize < 4)  # packed dtypes are OR-ed in
            plan.write_values(room._ptr, dt.name, lo, capacity=cap, range_ptr=rng)
        u = plan.read_total(extra=[] if rng is None else [(rng, 8)])
        if rng is None:
            bounds = (lo, lo + span - 1)
        else:
            bounds = ops_counting.decode_key_range(plan.extra_bytes[0], dt.name)
            lo = bounds[0]
            if bounds[1] - lo + 1 > span or not _counting_applies(*bounds, n, index_dtype, limit):
                return None, bounds
        if room is None:
            room = GpuArray._empty((u,), dt, zero=dt.itemsize < 4)
            plan.write_values(room._ptr, dt.name, lo)
        return _counting_result(room, u, hist, plan, want_counts, index_dtype), bounds
    except Exception as exc:
        raise _runtime.translate(exc) from None
    finally:
        plan.free()


def _counting_result(room: GpuArray, u: int, hist: GpuArray, plan: Any, want_counts: bool,
                     index_dtype: Any) -> dict[str, GpuArray]:
    """The outputs of unique by counting from ``room`` (at least ``u`` values written): the
    room itself, a prefix view of it when at least a quarter is used, else a copy; with
    ``want_counts`` the counts of the non-empty buckets of ``hist`` (the compaction's source)."""
    values = room if u == room.size else GpuArray._view(room, (u,), (1,), 0)
    if 4 * u < room.size:  # (a view pins at most 4x its own size)
        values = asarray(values, copy=True)
    out = {"values": values}
    if want_counts:  # the non-empty buckets' counts, written by the compaction itself
        counts = GpuArray._empty((u,), uint32, zero=False)
        plan.write_values(counts._ptr, "uint32", source=hist._ptr)
        out["counts"] = astype(counts, index_dtype)
    return out


def unique_all(x: GpuArray, /) -> UniqueAllResult:
    """The unique values of ``x`` (sorted, NaNs distinct and last), the index of each one's first
    occurrence in the flattened ``x``, the inverse indices (``x``'s shape: the position of each
    element's value in ``values``) and the counts. ``TypeError`` for a non-array."""
    r = _unique(x, True, True, True)
    return UniqueAllResult(r["values"], r["indices"], r["inverse_indices"], r["counts"])


def unique_counts(x: GpuArray, /) -> UniqueCountsResult:
    """The unique values of ``x`` and how often each occurs (see :func:`unique_all`)."""
    r = _unique(x, False, False, True)
    return UniqueCountsResult(r["values"], r["counts"])


def unique_inverse(x: GpuArray, /) -> UniqueInverseResult:
    """The unique values of ``x`` and the inverse indices (see :func:`unique_all`)."""
    r = _unique(x, False, True, False)
    return UniqueInverseResult(r["values"], r["inverse_indices"])


def unique_values(x: GpuArray, /) -> GpuArray:
    """The unique values of ``x``, sorted ascending, NaNs distinct and last (see
    :func:`unique_all`)."""
    return _unique(x, False, False, False)["values"]
