"""Sorting on the device: stable LSD radix sort of rows, a bitonic sort of short rows, and
``searchsorted``.

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
``WINDOW_LIMIT`` lowers the window size (tests use it to exercise that path on small data).
"""

from __future__ import annotations

import functools
import struct
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import config, ops_scan
from .errors import BackendError, invalid_argument, unsupported
from .kernels import snippet
from .launch import LaunchProgram, Region, operand_bases, rebased
from .plan_cache import PlanCache
from .validate import check_dtype, check_int, check_pointer
from .wgsl_types import STORAGE_TYPES, storage_type

__all__ = [
    "BITONIC_C",
    "SUBGROUP_RANK",
    "WINDOW_LIMIT",
    "argsort",
    "key_functions",
    "key_words",
    "planned_sort",
    "searchsorted",
    "sort_keys",
    "sort_values",
    "subgroup_probe",
]

WG = 256
#: Slots of the bitonic kernel's workgroup: rows up to this length are sorted in one kernel.
BITONIC_C = 2048
#: Elements per invocation of the radix kernels (tile = 256 * ITEMS). 16 was measured slower on
#: an H200 (the subgroup scatter kernel took 1.83 instead of 1.46 ms for a 16M float32 sort, though
#: histograms and scans got 15% cheaper).
ITEMS = 8
#: Override of the binding window size in bytes (None: the adapter's); for tests.
WINDOW_LIMIT: int | None = None
#: Scatter with the subgroup kernel where the probe allows it (False: always the counting-sort
#: kernel). ``GPUTENSOR_SORT_SUBGROUP=0`` in the environment sets it False at import.
SUBGROUP_RANK: bool = config.value("sort_subgroup")
_U32 = 0xFFFFFFFF
#: dtypes a sort or search accepts (all real dtypes and bool; complex values have no order).
SORT_DTYPES = tuple(t.name for t in STORAGE_TYPES.values() if t.kind != "c")

# ------------------------------------------------------------------------------------------
# WGSL generation: loaders, key mappings, output writers
# ------------------------------------------------------------------------------------------


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


# ------------------------------------------------------------------------------------------
# validation and windows
# ------------------------------------------------------------------------------------------
def _check_dtype(backend: Any, dtype: Any, what: str = "dtype") -> str:
    """``dtype`` after ``validate.check_dtype`` against the sortable dtypes."""
    check_dtype(backend, what, dtype, STORAGE_TYPES)  # (SORT_DTYPES, as a dict)
    return dtype


def _check_span(backend: Any, ptr: int, nbytes: int, itemsize: int, what: str) -> None:
    """``validate.check_pointer`` with the argument order of this module's callers."""
    check_pointer(backend, what, ptr, nbytes, itemsize)


_check_int = check_int


def window_limit(backend: Any) -> int:
    """Bytes one binding window may cover (``WINDOW_LIMIT`` lowers the adapter's value)."""
    limit = backend.max_window_bytes()
    if WINDOW_LIMIT is not None:
        limit = min(limit, int(WINDOW_LIMIT))
    return max(limit, 256)


_DUMMIES: "weakref.WeakKeyDictionary[Any, list[int]]" = weakref.WeakKeyDictionary()


def dummy(backend: Any, k: int = 0) -> tuple[Any, int, int]:
    """Binding of a small scratch buffer (``k`` picks one of several distinct ones, of
    ``(k + 1) * _DUMMY_BYTES`` bytes) for a binding a kernel variant does not use."""
    ctx = backend.context
    bufs = _DUMMIES.get(ctx)
    if bufs is None:
        bufs = []
        _DUMMIES[ctx] = bufs
    while len(bufs) <= k:
        bufs.append(ctx.create_storage((len(bufs) + 1) * _DUMMY_BYTES))
    return (bufs[k], 0, (k + 1) * _DUMMY_BYTES)


# ------------------------------------------------------------------------------------------
# the subgroup scatter kernel: probe and sizing
# ------------------------------------------------------------------------------------------
_PROBES: "weakref.WeakKeyDictionary[Any, int | None]" = weakref.WeakKeyDictionary()
_PROBE_WORDS = 6  # words per invocation written by subgroup_probe.wgsl


def probe_layout_ok(words: Any, wg: int = WG) -> int | None:
    """The subgroup size if the probe's output ``words`` (``_PROBE_WORDS`` u32 per invocation
    of a ``wg``-invocation workgroup, see subgroup_probe.wgsl) shows contiguous subgroups of one
    power-of-two size 4..128 dividing ``wg``, else None."""
    words = list(words)
    if len(words) != _PROBE_WORDS * wg:
        return None
    sgs = words[1]
    if not (4 <= sgs <= 128 and sgs & (sgs - 1) == 0 and wg % sgs == 0):
        return None
    for lid in range(wg):
        lane = lid % sgs
        first = lid - lane
        expect = (lane, sgs, first, sgs, first + (lane + 1) % sgs, lane)
        if tuple(words[_PROBE_WORDS * lid:_PROBE_WORDS * (lid + 1)]) != expect:
            return None
    return sgs


def subgroup_probe(backend: Any) -> int | None:
    """The subgroup size of this context when its adapter has the ``subgroup`` feature and a
    one-time probe (subgroup_probe.wgsl, one 256-invocation workgroup, read back at once) saw
    contiguous subgroups: invocation ``lid`` is lane ``lid % size`` of subgroup ``lid // size``
    (see :func:`probe_layout_ok`); else None. Cached per context."""
    ctx = backend.context
    if ctx in _PROBES:
        return _PROBES[ctx]
    result = None
    if "subgroup" in ctx.features:
        nbytes = _PROBE_WORDS * WG * 4
        try:
            buf = ctx.create_storage(nbytes)
            ctx.dispatch("subgroup_probe", [0], [(buf, 0, nbytes)], (1, 1, 1))
            result = probe_layout_ok(memoryview(ctx.readback(buf, 0, nbytes)).cast("I"))
        except BackendError:  # e.g. a compiler without the subgroup builtins
            result = None
    _PROBES[ctx] = result
    return result


def _tile_words(kw: int, carry_vals: bool) -> int:
    """u32 words of the scatter kernels' tile in workgroup memory (TPAD * (KW + HAS_VALS))."""
    tile = WG * ITEMS
    return (tile + tile // 32) * (kw + (1 if carry_vals else 0))


def scatter_rows(backend: Any, kw: int, carry_vals: bool) -> int | None:
    """Counter rows (``ROWS`` of sort_scatter_sg.wgsl) of the subgroup scatter kernel for keys of
    ``kw`` words (and u32 values), or None for the counting-sort kernel: None unless
    ``SUBGROUP_RANK`` and :func:`subgroup_probe` allow it. One row per subgroup of the probe's
    size, halved until the rows (512 bytes each) fit the workgroup memory beside the tile,
    lstart / gstart and the subgroup totals; None below 2 rows."""
    if not SUBGROUP_RANK:
        return None
    sgs = subgroup_probe(backend)
    if sgs is None:
        return None
    limit = int(backend.context.limits.get("max-compute-workgroup-storage-size", 16384))
    fixed = _tile_words(kw, carry_vals) + 2 * 256 + WG // 4
    fit = (limit // 4 - fixed) // 128
    rows = WG // sgs
    while rows > fit and rows > 1:
        rows //= 2
    return rows if 2 <= rows <= fit else None


# ------------------------------------------------------------------------------------------
# the sort driver
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Job:
    """One sort: source rows, key mapping and output (see ``_sort``)."""

    src: int
    dtype: str
    rows: int
    n: int
    ld: int
    mode: str
    descending: bool
    out_mode: int          # 0 keys + values, 1 sorted values, 2 indices
    out: int               # sorted values / indices / keys pointer
    out_dtype: str         # dtype of ``out`` (mode 1: dtype; mode 2: index dtype; mode 0: uint32)
    vals: int | None       # mode 0: values pointer (None: no values)

    @property
    def kw(self) -> int:
        return key_words(self.dtype)

    @property
    def has_vals(self) -> bool:
        return self.out_mode == 2 or (self.out_mode == 0 and self.vals is not None)

    def out_itemsize(self) -> int:
        if self.out_mode == 0:
            return 4 * self.kw
        return storage_type(self.out_dtype).itemsize


def _sort(backend: Any, job: _Job) -> None:
    if job.rows == 0 or job.n == 0:
        return
    if job.n <= BITONIC_C:
        _bitonic(backend, job)
    else:
        _radix(backend, job)


def _bitonic(backend: Any, job: _Job) -> None:
    """Record the bitonic sort of ``job`` (rows of at most ``BITONIC_C`` elements; arguments and
    pointer ranges already checked): its ``LaunchProgram`` (planned once per job structure and
    kept per backend) replayed, or recorded through ``WgpuContext.dispatch`` where a wrapper
    (the profiler's, a test spy) watches it."""
    limit = window_limit(backend)
    key = ("bitonic", job.dtype, job.rows, job.n, job.ld, job.mode, job.descending, job.out_mode,
           job.out_dtype, job.vals is not None, limit, BITONIC_C)
    _launch(backend, job, key, lambda: _bitonic_program(backend.context, job, limit), _dummy_placeholder)


def _launch(backend: Any, job: _Job, key: tuple[Any, ...], make: Callable[[], LaunchProgram],
            placeholder: Callable[..., Any], fallback: Callable[[], LaunchProgram] | None = None) -> None:
    """Record the program of ``job``'s structure ``key`` (``make()`` on first use, kept per
    backend) for its operands (0 src, 1 out, 2 vals or out; ranges already checked): replayed,
    or through ``WgpuContext.dispatch`` where a wrapper (the profiler's, a test spy) watches it.
    Where the replay does not apply (a scratch buffer without the vector layout the program
    assumed), ``fallback()``'s program runs instead."""
    ctx = backend.context
    plans = _PLANS.of(backend)
    program = plans.get(key)
    if program is None or not program.valid_for(ctx):
        program = make()
        _PLANS.keep(plans, key, program)
    ptrs = (job.src, job.out, job.out if job.vals is None else job.vals)
    if ctx.__dict__.get("dispatch") is not None:
        program.dispatch(backend, ctx, ptrs, placeholder)
        return
    bases = operand_bases(backend, ptrs)
    if not program.run(backend, ctx, bases, placeholder) and fallback is not None:
        fallback().run(backend, ctx, bases[:3], placeholder)


def _bitonic_program(ctx: Any, job: _Job, limit: int) -> LaunchProgram:
    """The dispatches of ``_bitonic`` for the structure of ``job``: operands 0 (src), 1 (out)
    and 2 (vals, or a dummy binding), in units of whole workgroups of rows that fit ``limit``."""
    st = storage_type(job.dtype)
    np2 = 1 << max(0, (job.n - 1).bit_length())
    lnp = np2.bit_length() - 1
    rpt = BITONIC_C // np2
    out_size = job.out_itemsize()
    per_row = max(job.ld * st.itemsize, job.n * out_size, job.n * 4 if job.has_vals else 0)
    nr = max(1, limit // per_row)
    nr = max(rpt, nr // rpt * rpt)  # whole workgroups per unit
    arr, write = _write_out(job.out_mode, job.kw, job.has_vals, job.out_dtype)
    defines = {
        **_key_defines(job.dtype, job.mode, job.descending),
        "C": BITONIC_C,
        "HAS_VALS": "true" if job.has_vals else "false",
        "OUT_MODE": job.out_mode,
        "DST_ARRAY": arr,
        "SRC_LOADER": bits_loader("src_bits", "src", job.dtype),
        "WRITE_OUT": write,
    }
    pipe = ctx.pipeline("sort_bitonic", 3, defines)
    records = []
    for r0 in range(0, job.rows, nr):
        rows = min(nr, job.rows - r0)
        src = Region(0, r0 * job.ld * st.itemsize, ((rows - 1) * job.ld + job.n) * st.itemsize, st.itemsize,
                     0, 4, 0)
        dst = Region(1, r0 * job.n * out_size, rows * job.n * out_size, out_size, 0, 6, 0)
        if job.out_mode == 0 and job.vals is not None:
            vals = Region(2, r0 * job.n * 4, rows * job.n * 4, 4, 0, 7, 0)
        else:  # the dummy binding (its first element word stays 0)
            vals = Region(-1, 0, 0, _DUMMY_BYTES, 0, 0, 0)
        words = (rows, job.n, np2, lnp, 0, job.ld, 0, 0, 0, _U32)
        records.append((pipe, defines, words, ctx.fold_grid(-(-rows // rpt)), (src, dst, vals)))
    return LaunchProgram.compile("sort_bitonic", _BITONIC_WORDS, ctx, records, ())


def _dummy_placeholder(backend: Any, nbytes: int, *bindings: Any) -> Any:
    """The placeholder of a program's unused binding: ``dummy(backend, 0)``."""
    return dummy(backend, 0)


#: Bitonic programs kept per backend (``_bitonic``).
_PLANS = PlanCache(256)
_BITONIC_WORDS = struct.Struct("<10I")
_DUMMY_BYTES = 256


def _radix(backend: Any, job: _Job) -> None:
    """Record the radix sort of ``job`` (arguments and pointer ranges already checked): its
    ``LaunchProgram`` (``_radix_program``: every pass of every unit of rows, the histogram
    scans included; planned once per job structure and kept per backend) replayed with fresh
    temporaries, or recorded through ``WgpuContext.dispatch`` where a wrapper (the profiler's,
    a test spy) watches it. BackendError (unsupported) for rows whose histograms exceed one
    binding window."""
    limit = window_limit(backend)
    key = ("radix", job.dtype, job.rows, job.n, job.ld, job.mode, job.descending, job.out_mode, job.out_dtype,
           job.vals is not None, limit, ITEMS, scatter_rows(backend, job.kw, job.has_vals), ops_scan.settings())
    # (the fallback: a histogram buffer without whole vectors)
    _launch(backend, job, key, lambda: _radix_program(backend, job, limit, True), _radix_placeholder,
            lambda: _radix_program(backend, job, limit, False))


def _radix_placeholder(backend: Any, nbytes: int, *bindings: Any) -> Any:
    """The placeholder of a radix program's unused binding: for the sort kernels' absent
    values, ``dummy(backend, k)`` for a placeholder of ``(k + 1) * _DUMMY_BYTES`` bytes (the
    values read and written by one scatter are two distinct buffers); for the scans' (a few
    bytes), the context's spare region, as ``ops_scan`` binds them."""
    if nbytes < _DUMMY_BYTES:
        return backend.context.spare_region(nbytes)
    return dummy(backend, nbytes // _DUMMY_BYTES - 1)


def _radix_program(backend: Any, job: _Job, limit: int, vector: bool) -> LaunchProgram:
    """The dispatches of ``_radix`` for the structure of ``job``: operands 0 (src), 1 (out),
    2 (vals, for keys and values); scratch: the ping-pong key (and value) buffers, the
    histograms (whole vectors with ``vector``: the scans then load vectors) and the scans'
    scratch (shared by the scans of one unit size). Rows in units whose every buffer fits
    ``limit`` bytes; a row larger than that in chunks of tiles."""
    ctx = backend.context
    st = storage_type(job.dtype)
    kw = job.kw
    tile = WG * ITEMS
    n, rows = job.n, job.rows
    ntiles = -(-n // tile)
    passes = -(-key_bits(job.dtype) // 8)
    carry_vals = job.has_vals
    out_size = job.out_itemsize()
    hist_row = 256 * ntiles * 4
    if hist_row > limit:
        raise unsupported(f"a row of {n} elements is too long to sort on this adapter "
                          f"(its histograms exceed one binding of {limit} bytes)")
    # scratch: key (+ value) buffers, ping-pong; histograms per row (every element of them is
    # written before it is read: no zero fill)
    ntemp = 0 if passes == 1 else (1 if passes == 2 else 2)
    aux: list[list[int]] = [[rows * n * kw * 4, 0] for _ in range(ntemp)]
    temps_k = [3 + k for k in range(ntemp)]
    if carry_vals:
        temps_v = [3 + len(aux) + k for k in range(ntemp)]
        aux += [[rows * n * 4, 0] for _ in range(ntemp)]
    hist = 3 + len(aux)
    aux.append([rows * hist_row, 16 if vector else 0])
    scans: dict[int, list[tuple[int, int]]] = {}  # unit rows -> the bases of its scan program
    records: list[Any] = []
    per_row = max(job.ld * st.itemsize, n * kw * 4, n * out_size, n * 4 if carry_vals else 0)
    nr = min(rows, limit // per_row, limit // hist_row)
    if nr >= 1:
        units = [(r0, min(nr, rows - r0), None) for r0 in range(0, rows, nr)]
    else:  # a row larger than one window: chunks of tiles
        ct = max(1, limit // (tile * max(st.itemsize, kw * 4, out_size, 4 if carry_vals else 0)))
        units = [(r0, 1, ct) for r0 in range(rows)]
    for r0, nr_u, ct in units:
        scan = ops_scan.rows_program(backend, "sum", "uint32", nr_u, 256 * ntiles, vector)
        if nr_u not in scans:
            scans[nr_u] = [(hist, 0), (hist, 0)] + [(3 + len(aux) + k, 0) for k in range(len(scan.aux))]
            aux += [list(a) for a in scan.aux]
        shift = r0 * hist_row
        scan_bases = [(b, shift if b == hist else 0) for b, _ in scans[nr_u]]
        for p in range(passes):
            first, last = p == 0, p == passes - 1
            if first:
                src, src_size, src_ld, sval = 0, st.itemsize, job.ld, None
            else:
                src, src_size, src_ld = temps_k[(p - 1) % 2], kw * 4, n
                sval = temps_v[(p - 1) % 2] if carry_vals else None
            if last:
                dst_mode, dst, dst_size = job.out_mode, 1, out_size
                dval = 2 if job.out_mode == 0 and job.vals is not None else None
            else:
                dst_mode, dst, dst_size = 0, temps_k[p % 2], kw * 4
                dval = temps_v[p % 2] if carry_vals else None
            _radix_pass(backend, records, job, p, first, r0, nr_u, ct, ntiles, src, src_size, src_ld, sval,
                        dst_mode, dst, dst_size, dval, hist, rebased(scan, scan_bases))
    return LaunchProgram.compile("sort_scatter", _SCATTER_WORDS, ctx, records, aux)


def _radix_pass(backend: Any, records: list[Any], job: _Job, p: int, first: bool, r0: int, nr: int,
                ct: int | None, ntiles: int, src: int, src_size: int, src_ld: int, sval: int | None,
                dst_mode: int, dst: int, dst_size: int, dval: int | None, hist: int,
                scan: list[Any]) -> None:
    """Append the records of pass ``p`` over the unit of ``nr`` rows from row ``r0`` (operands
    and scratch by base: ``src``/``sval`` read, ``dst``/``dval`` written, ``hist``; ``ct``:
    tiles per chunk of a row larger than a window, None for whole rows): its histograms, the
    row scans ``scan`` (records) and its scatters."""
    ctx = backend.context
    n = job.n
    tile = WG * ITEMS
    shift = 8 * p
    kw = job.kw
    carry_vals = job.has_vals
    # Later passes read keys, not the dtype: their kernels only depend on the key width (and on
    # the dtype's from_key when they write sorted values), so fewer variants are compiled.
    generic = "uint64" if kw == 2 else "uint32"
    key_defs = _key_defines(job.dtype if first else generic, job.mode, job.descending if first else False)
    loader = bits_loader("src_bits", "src", job.dtype if first else generic)
    out_defs = key_defs
    if dst_mode == 1 and not first:
        out_defs = _key_defines(job.dtype, job.mode, job.descending)
    hist_first_row = r0 * 256 * ntiles
    hist_words = (hist_first_row * 4, nr * 256 * ntiles * 4)
    hist_defs = {**key_defs, "ITEMS": ITEMS, "SRC_KEYS": "false" if first else "true", "SRC_LOADER": loader}
    # source chunks: (tile0, ntd); destination chunks: (lo, hi) element ranges of the unit
    if ct is None:
        src_chunks = [(0, ntiles)]
        dst_chunks = [(0, nr * n)]
    else:
        src_chunks = [(t0, min(ct, ntiles - t0)) for t0 in range(0, ntiles, ct)]
        dst_chunks = [(lo, min(lo + ct * tile, n)) for lo in range(0, n, ct * tile)]

    def src_regions(t0: int, ntd: int, word: int, vword: int) -> tuple[Region, Region]:
        start = t0 * tile
        count = (nr - 1) * src_ld + min(n, (t0 + ntd) * tile) - start
        sreg = Region(src, (r0 * src_ld + start) * src_size, count * src_size, src_size, 0, word, -start)
        if sval is None:  # (its first element word stays 0)
            return sreg, Region(-1, 0, 0, _DUMMY_BYTES, 0, 0, 0)
        return sreg, Region(sval, (r0 * n + start) * 4, count * 4, 4, 0, vword, -start)

    # 1. histograms
    pipe = ctx.pipeline("sort_hist", 2, hist_defs)
    for t0, ntd in src_chunks:
        sreg, _ = src_regions(t0, ntd, 5, 0)
        words = (nr, n, ntiles, t0, ntd, 0, src_ld, 0, shift)
        records.append((pipe, hist_defs, words, ctx.fold_grid(nr * ntd),
                        (sreg, Region(hist, *hist_words, 4, 0, 7, 0)), "sort_hist", _HIST_WORDS))
    # 2. scan of each row's 256 * ntiles counts
    records += scan
    # 3. scatter (the subgroup kernel where allowed, see the module docstring)
    arr, write = _write_out(dst_mode, kw, dst_mode == 0 and dval is not None,
                            job.out_dtype if dst_mode != 0 else "uint32")
    sg_rows = scatter_rows(backend, kw, carry_vals)
    defines = {
        **out_defs,
        "ITEMS": ITEMS,
        "SRC_KEYS": "false" if first else "true",
        "HAS_VALS": "true" if carry_vals else "false",
        "DST_ARRAY": arr,
        "SRC_LOADER": loader,
        "WRITE_OUT": write,
    }
    if sg_rows is None:
        kernel = "sort_scatter"  # the count matrix shares the tile's memory
        defines["SMEM"] = max(_tile_words(kw, carry_vals), 16 * WG + WG)
    else:
        kernel = "sort_scatter_sg"
        defines["SMEM"] = _tile_words(kw, carry_vals)
        defines["ROWS"] = sg_rows
    pipe = ctx.pipeline(kernel, 5, defines)
    for t0, ntd in src_chunks:
        sreg, vreg = src_regions(t0, ntd, 5, 7)
        for lo, hi in dst_chunks:
            dreg = Region(dst, (r0 * n + lo) * dst_size, (hi - lo) * dst_size, dst_size, 0, 10, -lo)
            if dst_mode == 0 and dval is not None:
                dvreg = Region(dval, (r0 * n + lo) * 4, (hi - lo) * 4, 4, 0, 11, -lo)
            else:  # the second dummy (its first element word stays 0)
                dvreg = Region(-1, 0, 0, 2 * _DUMMY_BYTES, 0, 0, 0)
            dlo, dhi = (0, _U32) if ct is None else (lo, hi)
            words = (nr, n, ntiles, t0, ntd, 0, src_ld, 0, 0, shift, 0, 0, dlo, dhi)
            records.append((pipe, defines, words, ctx.fold_grid(nr * ntd),
                            (sreg, vreg, Region(hist, *hist_words, 4, 0, 8, 0), dreg, dvreg), kernel, _SCATTER_WORDS))


_HIST_WORDS = struct.Struct("<9I")
_SCATTER_WORDS = struct.Struct("<14I")


# ------------------------------------------------------------------------------------------
# public entry points
# ------------------------------------------------------------------------------------------
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


# ------------------------------------------------------------------------------------------
# searchsorted
# ------------------------------------------------------------------------------------------
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
