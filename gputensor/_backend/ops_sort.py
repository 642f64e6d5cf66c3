"""Sorting on the device: stable LSD radix sort of rows and a bitonic sort of short rows (the
keys are also ``ops_search``'s).

Keys (``_wgsl/sort_keys.wgsl``; the maps of :func:`key_functions` are ``_wgsl/sort/key*.wgsl``):
every dtype's bits map to an unsigned integer whose order is the sort order -- unsigned and
bool as they are, signed with the sign bit flipped, floats with the sign bit set (positive) or
all bits flipped (negative). Two float mappings exist:

* ``"canon"`` (argsort, unique, searchsorted): -0.0 maps to +0.0 and every NaN to the all-ones
  key, so equal values (NumPy's ``==``) get equal keys and NaNs sort last, after +inf, in input
  order -- exactly NumPy's stable ``argsort``;
* ``"bij"`` (sort values): a bijection (the NaNs with the sign bit set move above +inf, the
  rest shift down), so the sorted bits map back without a values array. Sorted values equal
  NumPy's element for element (``==``, NaNs at the end); only the order of -0.0 among +0.0 and of
  NaN payloads is by bits instead of by input position.

``descending`` complements the key, which reverses the order while equal keys keep input order
(stable): exactly array-api-strict's ``argsort(descending=True)`` (NaNs first) and, for
``sort``, the values of its ``flip(sort(x))``.

Radix sort (rows of ``n > BITONIC_C`` elements): 8-bit digits, ``ceil(bits / 8)`` passes
(1 for bool/int8, 8 for 64-bit types), each pass three steps over tiles of ``TILE = 256 * ITEMS``
elements of a row, with the grid (row, tile):

1. ``sort_hist``: per-tile digit counts into ``hist[row][digit][tile]`` (workgroup atomics);
2. ``ops_scan``'s row scan: one inclusive scan per row over its ``256 * ntiles`` counts
   (digit-major, so the entry before (d, t) is where tile t's elements of digit d start);
3. ``sort_scatter`` or ``sort_scatter_sg``: each tile sorts itself by the digit in workgroup
   memory, stably and deterministically, then writes element p to
   ``start[d] + p - local_start[d]``, striped so runs of a digit are written consecutively.

Two scatter kernels share their loads and their striped write (``sort_scatter_common.wgsl``) and
rank the tile differently:

* ``sort_scatter_sg`` (CUB's "warp match" ranking): each subgroup ranks its keys by the whole
  8-bit digit with 8 ballots (the lanes with the same digit), a per-(subgroup, digit) counter
  in workgroup memory gives the rank among earlier items, and one exclusive scan of the
  (digit, subgroup) counters gives every key its place in the digit-sorted tile. Used when
  ``SUBGROUP_RANK`` is true (``GPUTENSOR_SORT_SUBGROUP=0`` makes it false at import), the device
  has the ``subgroup`` feature and the one-time probe of the context
  (:func:`subgroup_probe`, ``subgroup_probe.wgsl``) saw contiguous subgroups of a power-of-two
  size 4..128 in a 256-invocation workgroup (the kernel's layout assumption). Its counter rows
  (``ROWS``, at most one per subgroup of the probe's size) are what fits the adapter's workgroup
  memory beside the tile; with fewer rows than subgroups, subgroups share a row and take turns.
* ``sort_scatter`` (otherwise): two stable 4-bit counting sorts (counts scanned in invocation
  order, no atomics).

The first pass reads the source dtype directly (mapping bits to keys); the last writes the
requested output directly (sorted values in the source dtype -- packed 8/16-bit dtypes through
``atomicOr`` into the zero-filled output --, or indices as int32/int64, or keys and values for
``unique``). Middle passes ping-pong between two key (and value) buffers. Values are u32
column indices (argsort / unique carry them; sort carries none).

Bitonic sort (``n <= BITONIC_C``): one kernel, ``BITONIC_C`` slots per workgroup, several short
rows per workgroup, compare-exchange on (key, column): stable as well.

Either sort's dispatches for a call structure are planned once as a ``launch.LaunchProgram``
kept per backend; a repeated call replays it. The radix sort's program holds every pass (its
histogram scans are ``ops_scan.rows_program``'s, moved onto the sort's histogram buffer) and
allocates its temporaries (key and value buffers, histograms, the scans' unit totals) as the
program's scratch.

Large operands: rows are processed in units whose every buffer fits one binding window; a
single row larger than a window is processed in chunks of tiles, and the scatter of each chunk
is dispatched once per destination window (writing only the elements that land in it).
``sort_common.WINDOW_LIMIT`` lowers the window size (tests use it to exercise that path on small
data).

This module is the front (argument checks, the entry points, the kept calls of
:func:`planned_sort`); the pieces: ``sort_key_code`` (key maps, bit loaders and stores, output
writers), ``sort_common`` (checks, windows, dummy bindings, kept programs), ``sort_job`` (a job
and its program's launch), ``sort_bitonic``, ``sort_radix``, ``sort_subgroup`` (the subgroup
scatter kernel's probe and sizing); ``searchsorted`` is ``ops_search``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import invalid_argument, unsupported
from .launch import LaunchProgram
from .sort_bitonic import BITONIC_C, _bitonic
from .sort_common import _PLANS, SORT_DTYPES, _check_dtype, _dummy_placeholder, window_limit
from .sort_job import _Job
from .sort_key_code import key_functions, key_words
from .sort_radix import _radix
from .sort_subgroup import subgroup_probe
from .validate import check_int, check_pointer
from .wgsl_types import storage_type

__all__ = [
    "BITONIC_C",
    "argsort",
    "key_functions",
    "key_words",
    "planned_sort",
    "sort_keys",
    "sort_values",
    "subgroup_probe",
]


def _sort(backend: Any, job: _Job) -> None:
    if job.rows == 0 or job.n == 0:
        return
    if job.n <= BITONIC_C:
        _bitonic(backend, job)
    else:
        _radix(backend, job)


def _prepare(backend: Any, src: int, dtype: Any, rows: Any, n: Any, ld: Any) -> tuple[str, int, int, int]:
    dtype = _check_dtype(backend, dtype)
    if dtype not in SORT_DTYPES:
        raise invalid_argument(f"{dtype} values have no order to sort or search by")
    rows = check_int("rows", rows)
    n = check_int("n", n)
    ld = n if ld is None else check_int("ld", ld)
    if ld < n:
        raise invalid_argument(f"ld = {ld} must be >= n = {n}")
    if rows * max(n, 1) >= 2**32 - 1 or n >= 2**31:
        raise unsupported(f"sorting {rows} x {n} elements exceeds the 32-bit index range")
    if rows and n:
        check_pointer(backend, "source", src, ((rows - 1) * ld + n) * storage_type(dtype).itemsize,
                      storage_type(dtype).itemsize)
    return dtype, rows, n, ld


def sort_values(backend: Any, src: int, dtype: str, rows: int, n: int, out: int, *,
                descending: bool = False, ld: int | None = None) -> None:
    """Sort every row ``src[r, 0:n]`` (row r at element ``r * ld``) into the contiguous
    ``out[r, 0:n]`` of the same dtype, ascending (NaNs last) or descending (NaNs first).

    Raises BackendError: invalid argument for a bad dtype, size, ``ld`` or pointer range;
    unsupported for a missing adapter feature or sizes beyond the 32-bit index range.
    """
    dtype, rows, n, ld = _prepare(backend, src, dtype, rows, n, ld)
    if rows and n:
        check_pointer(backend, "output", out, rows * n * storage_type(dtype).itemsize, storage_type(dtype).itemsize)
    _sort(backend, _Job(src, dtype, rows, n, ld, "bij", bool(descending), 1, out, dtype, None))


def argsort(backend: Any, src: int, dtype: str, rows: int, n: int, out: int, *,
            descending: bool = False, index_dtype: str = "int64", ld: int | None = None) -> None:
    """Write, for every row of ``src`` (as :func:`sort_values`), the column indices that sort it
    stably (NumPy's ``argsort(kind='stable')``; descending as array-api-strict) into the
    contiguous ``out[r, 0:n]`` of ``index_dtype`` ('int64' or 'int32').

    Raises BackendError as :func:`sort_values`; invalid argument for another index dtype.
    """
    dtype, rows, n, ld = _prepare(backend, src, dtype, rows, n, ld)
    if index_dtype not in ("int64", "int32"):
        raise invalid_argument(f"index_dtype must be 'int64' or 'int32', not {index_dtype!r}")
    _check_dtype(backend, index_dtype, "index_dtype")
    size = storage_type(index_dtype).itemsize
    if rows and n:
        check_pointer(backend, "output", out, rows * n * size, size)
    _sort(backend, _Job(src, dtype, rows, n, ld, "canon", bool(descending), 2, out, index_dtype, None))


@dataclass(frozen=True, eq=False)
class _SortCall:
    """A ``sort_values`` / ``argsort`` call of one structure that is one bitonic program (rows
    of at most ``BITONIC_C`` elements, ``ld == n``), kept for replay: the program, the context
    and window limit it was planned for, the bytes and item sizes of the source and the
    output."""

    ctx: Any
    program: LaunchProgram
    limit: int
    src_bytes: int
    src_itemsize: int
    out_bytes: int
    out_itemsize: int

    def valid_on(self, backend: Any) -> bool:
        """Whether the call holds on ``backend`` now (context, workgroup and window limits)."""
        ctx = self.ctx
        return ctx is backend._ctx and self.program.valid_for(ctx) and self.limit == window_limit(backend)

    def launch(self, backend: Any, src: int, out: int) -> None:
        """Check both pointers (BackendError as ``sort_values`` says) and record the program."""
        s_alloc, s_off = check_pointer(backend, "source", src, self.src_bytes, self.src_itemsize)
        o_alloc, o_off = check_pointer(backend, "output", out, self.out_bytes, self.out_itemsize)
        ctx = self.ctx
        if ctx.__dict__.get("dispatch") is not None:
            self.program.dispatch(backend, ctx, (src, out, out), _dummy_placeholder)
            return
        o_base = (o_alloc.buffer, o_alloc.buffer.size, o_alloc.nbytes, o_off, out, o_alloc.whole)
        bases = [(s_alloc.buffer, s_alloc.buffer.size, s_alloc.nbytes, s_off, src, s_alloc.whole), o_base, o_base]
        self.program.run(backend, ctx, bases, _dummy_placeholder)


def planned_sort(backend: Any, dtype: str, rows: int, n: int, *, descending: bool = False,
                 index_dtype: str | None = None) -> _SortCall | None:
    """The kept plan of an earlier ``sort_values`` (``index_dtype`` None) or ``argsort`` call
    with these arguments (contiguous rows, no ``ld``), valid on ``backend`` now; None when there
    is none (rows longer than ``BITONIC_C``: the radix sort). Its ``launch(backend, src, out)``
    replays the call for new pointers, checking them."""
    if not (0 < n <= BITONIC_C) or rows <= 0:
        return None
    limit = window_limit(backend)
    if index_dtype is None:
        mode, out_mode, out_dtype = "bij", 1, dtype
    else:
        mode, out_mode, out_dtype = "canon", 2, index_dtype
    key = ("bitonic", dtype, rows, n, n, mode, bool(descending), out_mode, out_dtype, False, limit, BITONIC_C)
    program = _PLANS.of(backend).get(key)
    ctx = backend.context
    if program is None or not program.valid_for(ctx):
        return None
    size, out_size = storage_type(dtype).itemsize, storage_type(out_dtype).itemsize
    return _SortCall(ctx, program, limit, rows * n * size, size, rows * n * out_size, out_size)


def sort_keys(backend: Any, src: int, dtype: str, n: int, keys: int, perm: int | None) -> int:
    """Sort the ``n`` contiguous elements at ``src`` ascending by their canonical keys (equal
    values equal, NaNs last) and write the sorted keys (``key_words(dtype)`` u32 words each) to
    ``keys`` and, when ``perm`` is given, the stable permutation (u32 source indices) to
    ``perm``. Returns the key words per element. Raises BackendError as :func:`sort_values`.
    """
    dtype, _, n, _ = _prepare(backend, src, dtype, 1, n, None)
    kw = key_words(dtype)
    if n:
        check_pointer(backend, "keys", keys, n * kw * 4, 4)
        if perm is not None:
            check_pointer(backend, "perm", perm, n * 4, 4)
    _sort(backend, _Job(src, dtype, 1, n, n, "canon", False, 0, keys, "uint32", perm))
    return kw
