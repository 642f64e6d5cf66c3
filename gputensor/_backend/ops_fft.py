"""Complex-to-complex DFTs along one axis of a strided array: batched, any length.

:func:`c2c` records ``dst = scale * DFT(src)`` along one axis (sign -1 forward, +1 inverse), for
any strides of ``src`` and ``dst`` (complex elements, any sign) and any number of transforms.
Its plan, a ``launch.LaunchProgram`` with its tables, is made once per call structure (length,
dtype, direction, scale, the batch dims and strides) and replayed for new pointers.

* Lengths whose prime factors are 2, 3, 5 and 7 that fit a workgroup (:func:`group_shape`: at
  most ``TARGET`` elements, within the adapter's workgroup memory, one butterfly of the smallest
  radix per invocation): one dispatch of ``_wgsl/fft_stockham.wgsl``, the mixed-radix Stockham
  passes (radices 16, 8, 4, 2, 3, 5, 7) in place on C transforms per workgroup, read and written
  through their strides. Column transforms of the call's operands that leave fewer than
  ``MIN_RUN`` transforms to a workgroup take the four-step path instead
  (``GPUTENSOR_FFT_COLUMN_SPLIT``).
* Longer such lengths: the four-step decomposition n = n1 * m (``_four_step``): the length-m
  transforms of the n1 interleaved subsequences (recursively decomposed when m is still too
  long) into a scratch array (batch entries outermost for rows, innermost for columns), then
  the length-n1 transforms across them with the twiddles W_n^(i k) applied on load, written to
  ``dst`` through its strides.
* Lengths with a prime factor above 7: Bluestein's chirp-z (``_bluestein``), the convolution
  with the chirp through transforms of a length m >= 2n - 1 of the kind above
  (``_wgsl/fft_chirp.wgsl`` does the chirp multiplies, the zero padding and the product with
  the chirp's spectrum, which is computed on the device once per plan).

Twiddle and chirp tables are computed in float64 on the host once per plan (the chirp's angle
from k^2 mod 2n, exact for every k) and uploaded; the transforms run on the device. No wgpu here.
"""

from __future__ import annotations

import functools
import math
import struct
import weakref
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from . import config
from .errors import invalid_argument, unsupported
from .launch import LaunchProgram, Region
from .layout import strided_span
from .plan_cache import PlanCache

__all__ = ["MAX_BATCH_DIMS", "RADICES", "KeptPlan", "Planner", "View", "c2c", "c2c_axes", "planned_axes",
           "planned_c2c", "prefix_in_place", "stores_prefix", "compile_plan", "direct_io", "entry_pitch",
           "factor", "fast_length", "fits_axes", "group_shape", "merge_batch", "no_placeholder", "pass_twiddles", "row_group",
           "storage",
           "two_butterflies", "workgroup_length"]

#: Batch dims a kernel takes (the caller's, after merging, at most ``MAX_BATCH_DIMS - 2``:
#: each level of a four-step decomposition adds one).
MAX_BATCH_DIMS = 4
#: The radices of the Stockham passes, in the order a length is factored.
RADICES = (16, 8, 4, 2, 3, 5, 7)
#: Largest number of transforms a workgroup takes at once.
MAX_PER_GROUP = 256
#: Most elements a workgroup holds.
TARGET = 4096
#: Most invocations per workgroup of the Stockham kernel.
MAX_INVOCATIONS = 1024
#: log2 of the elements between the free slots of the workgroup memory (``entry_pitch``).
PAD_SHIFT = 4
#: Most invocations of a workgroup of contiguous transforms (``row_group``).
ROW_INVOCATIONS = 256
#: Fewest adjacent entries a workgroup of a column transform reads (32-byte runs of complex64).
MIN_RUN = 4

_COMPLEX = {"complex64": (8, "f32", None), "complex128": (16, "f64", "shader-f64")}
_WORDS = struct.Struct("<28I")
_U32 = 0xFFFFFFFF


def storage(backend: Any, dtype: str) -> tuple[int, str]:
    try:
        itemsize, wgsl, feature = _COMPLEX[str(dtype)]
    except KeyError:
        raise invalid_argument(f"fft: dtype must be complex64 or complex128, not {dtype!r}") from None
    if feature is not None and not backend.supports(feature):
        raise unsupported(f"{dtype} needs the adapter feature {feature!r}, which this adapter lacks", feature)
    return itemsize, wgsl


def factor(n: int) -> tuple[int, ...] | None:
    """The radices (from ``RADICES``) whose product is ``n``: eights, then fours (radix 2 only
    for a single factor 2), then 3, 5, 7; None when ``n`` has a prime factor above 7; ``(1,)``
    for ``n == 1``. With the knob ``fft_radix16``, a power of two 2^k (k >= 6) is sixteens and
    eights instead (k = 4 a + 3 b, b < 4: the smallest radix 8, one invocation per 16 elements)."""
    if n == 1:
        return (1,)
    out = []
    rest = n
    twos = 0
    while rest % 2 == 0:
        rest //= 2
        twos += 1
    eights = (3 * twos) % 4
    if rest == 1 and twos >= 6 and twos >= 3 * eights and knobs()[6]:
        return (16,) * ((twos - 3 * eights) // 4) + (8,) * eights
    if twos == 1:
        out.append(2)
    elif twos % 3 == 1:
        out += [8] * (twos // 3 - 1) + [4, 4]
    else:
        out += [8] * (twos // 3) + [4] * (twos % 3 == 2)
    for r in (3, 5, 7):
        while rest % r == 0:
            rest //= r
            out.append(r)
    return tuple(out) if rest == 1 else None


def _divisors(n: int) -> list[int]:
    """The divisors of a 7-smooth ``n``, ascending."""
    out = [1]
    rest = n
    for p in (2, 3, 5, 7):
        k = 0
        while rest % p == 0:
            rest //= p
            k += 1
        out = [d * p ** e for d in out for e in range(k + 1)]
    return sorted(out)


def fast_length(n: int) -> int:
    """The smallest length >= ``n`` whose prime factors are 2, 3, 5 and 7."""
    best = 1 << max(0, (n - 1).bit_length())
    p7 = 1
    while p7 < best:
        p5 = p7
        while p5 < best:
            p3 = p5
            while p3 < best:
                v = p3
                while v < n:
                    v *= 2
                best = min(best, v)
                p3 *= 3
            p5 *= 5
        p7 *= 7
    return best


def workgroup_length(ctx: Any, itemsize: int) -> int:
    """The most elements the workgroup-memory kernel holds on ``ctx`` (its entries' offsets
    aside), at most ``TARGET``."""
    storage = int(ctx.limits.get("max-compute-workgroup-storage-size", 16384))
    return max(1, min(TARGET, storage // itemsize))


def group_shape(ctx: Any, itemsize: int, n: int) -> tuple[int, int] | None:
    """(transforms per workgroup, invocations per workgroup) of the workgroup-memory kernel for
    length ``n`` on ``ctx``; None when one transform does not fit (workgroup memory, or one
    butterfly of the smallest radix per invocation within the invocation limit)."""
    radices = factor(n)
    if radices is None:
        return None
    rmin = min(radices)
    limit = min(int(ctx.limits.get("max-compute-invocations-per-workgroup", 256)), MAX_INVOCATIONS)
    held = workgroup_length(ctx, itemsize)
    if n > held or -(-n // rmin) > limit:
        return None
    per = 1
    while per * 2 <= MAX_PER_GROUP and per * 2 * n <= held and -(-per * 2 * n // rmin) <= limit:
        per *= 2
    return per, _invocations(n, per, radices, limit)


def _invocations(n: int, per: int, radices: tuple[int, ...], limit: int) -> int:
    """The invocations of a workgroup of ``per`` transforms of length ``n`` (``radices``): one
    butterfly of the smallest radix each, or (``two_butterflies``: every radix at least 4 and
    the ``fft_two_butterflies`` knob on) one per 8 elements (16 where the radices are 16 and
    8), up to two butterflies each; a multiple of 32 and of ``per``, at most ``limit``."""
    rmin = min(radices)
    two = two_butterflies(rmin)
    wg = -(-per * n // (min(2 * rmin, max(radices)) if two and rmin >= 8 else 8 if two else rmin))
    unit = max(32, per)  # (a multiple of per: an invocation's entry is the same in every column step)
    return min(limit, -(-wg // unit) * unit)


_knobs: list[Any] = [-1, (True, True, True, True, 0, True, True, True, True, True)]  # [config.generation, knobs() then]


def knobs() -> tuple[bool, bool, bool, bool, int, bool, bool, bool, bool, bool]:
    """The knobs the plans depend on (part of their keys): ``fft_column_split``,
    ``fft_two_butterflies``, ``fft_real_fused``, ``fft_unrolled_loads``, ``fft_min_workgroups``,
    ``fft_direct_io``, ``fft_radix16``, ``fft_pass_twiddles``, ``fft_real_prefix``,
    ``fft_real_strided`` (read again when an override or assignment changed the knobs)."""
    if _knobs[0] != config.generation:
        _knobs[1] = (bool(config.value("fft_column_split")), bool(config.value("fft_two_butterflies")),
                     bool(config.value("fft_real_fused")), bool(config.value("fft_unrolled_loads")),
                     int(config.value("fft_min_workgroups")), bool(config.value("fft_direct_io")),
                     bool(config.value("fft_radix16")), bool(config.value("fft_pass_twiddles")),
                     bool(config.value("fft_real_prefix")), bool(config.value("fft_real_strided")))
        _knobs[0] = config.generation
    return _knobs[1]


def stores_prefix() -> bool:
    """Whether the callers of :func:`c2c` pass ``keep`` (the knob ``fft_real_prefix``): the
    odd-length real transforms store only the values they return."""
    return knobs()[8]


def prefix_in_place(backend: Any, dtype: str, n: int, src_axis: int, batch_shape: Sequence[int],
                    src_strides: Sequence[int]) -> bool:
    """Whether the real forward transforms of length ``n`` of a strided real operand (element
    strides ``src_axis`` along the axis, ``src_strides`` of the batch dims ``batch_shape``) take
    :func:`c2c` with ``keep`` in place of a contiguous copy and the half-length trick (the knob
    ``fft_real_strided``): where that transform is one workgroup pass (no four-step
    decomposition, which stores its kept results through a scratch copy) or Bluestein's.
    Raises BackendError as :func:`c2c` for a bad dtype."""
    if not knobs()[9]:
        return False
    itemsize, wgsl = storage(backend, dtype)
    if factor(n) is None:
        return True
    planner = Planner(backend, backend.context, dtype, itemsize, wgsl)
    if planner.shape(n) is None:
        return False
    column = _column_like(batch_shape, View(0, 0, src_axis, tuple(src_strides)))
    return not (column and planner.column_split and planner._split_column(n))


def two_butterflies(rmin: int) -> bool:
    """Whether workgroups whose smallest radix is ``rmin`` take one invocation per 8 elements
    (up to two butterflies per invocation and pass)."""
    return rmin >= 4 and bool(config.value("fft_two_butterflies"))


def row_group(ctx: Any, n: int, radices: tuple[int, ...], per: int, batch: int, rows: bool) -> tuple[int, int]:
    """(transforms per workgroup, invocations) of a dispatch of ``batch`` transforms of length
    ``n`` whose group shape is ``per`` transforms: no more transforms per workgroup than the
    dispatch has, and (``rows``: elements contiguous on both sides, where more transforms per
    workgroup do not lengthen the runs read) at most ``ROW_INVOCATIONS`` invocations where one
    transform allows: small workgroups, several resident per multiprocessor, whose barriers
    stall only themselves."""
    rmin = min(radices)
    limit = min(int(ctx.limits.get("max-compute-invocations-per-workgroup", 256)), MAX_INVOCATIONS)
    while per > 1 and (per // 2 >= batch or (rows and _invocations(n, per, radices, limit) > ROW_INVOCATIONS)):
        per //= 2
    return per, _invocations(n, per, radices, limit)


def spread(ctx: Any, n: int, radices: tuple[int, ...], per: int, wg: int, batch: int,
           least: int = 1) -> tuple[int, int]:
    """(transforms per workgroup, invocations) of a dispatch of ``batch`` transforms of length
    ``n`` taking ``per`` per workgroup: fewer (halved, down to ``least``) while the dispatch has
    fewer workgroups than the knob ``fft_min_workgroups`` (0: as given), so that a small
    transform runs on that many multiprocessors instead of a few full ones."""
    target = knobs()[4]
    if target <= 0 or -(-batch // per) >= target or per <= least:
        return per, wg
    limit = min(int(ctx.limits.get("max-compute-invocations-per-workgroup", 256)), MAX_INVOCATIONS)
    while per // 2 >= least and -(-batch // per) < target:
        per //= 2
    return per, _invocations(n, per, radices, limit)


def direct_io(n: int, radices: tuple[int, ...], along_load: bool, along_store: bool, mode: int,
              blue: bool) -> tuple[bool, bool]:
    """Whether the first Stockham pass reads the source itself and whether the last one writes
    the destination itself (knob ``fft_direct_io``): not for Bluestein's transforms (two rounds
    of passes) and, for the store, not for the real forward steps (REAL 1 and 3: each result
    needs its partner's); along a contiguous axis only where a pass's butterflies per entry
    (``n`` over its radix) fill a 32-invocation warp's reads with one run, as the loops do."""
    if not knobs()[5] or blue:
        return False, False
    warp = 32
    load = not along_load or n // radices[0] >= warp
    store = mode not in (1, 3) and (not along_store or n // radices[-1] >= warp)
    return load, store


@functools.lru_cache(maxsize=64)
def pass_twiddles(radices: tuple[int, ...]) -> tuple[np.ndarray, tuple[int, ...]]:
    """(table, offset of each pass's part) of the Stockham passes of ``radices``: the pass of
    radix R after passes of length L > 1 has the entries exp(-2 pi i q k / (L R)) at (q - 1) L
    + k, 0 < q < R, k < L (float64; cached: treat as read-only)."""
    parts, offsets = [], []
    at, length = 0, 1
    for r in radices:
        offsets.append(at if length > 1 else 0)
        if length > 1:
            q = np.arange(1, r)[:, None]
            k = np.arange(length)[None, :]
            parts.append(np.exp(-2j * np.pi * (q * k) / (length * r)).ravel())
            at += (r - 1) * length
        length *= r
    table = np.concatenate(parts) if parts else np.ones(1, np.complex128)
    return table, tuple(offsets)


def entry_pitch(ctx: Any, itemsize: int, n: int, per: int) -> tuple[int, int]:
    """(pitch, pad shift) of the workgroup memory of ``per`` transforms of length ``n``: a free
    slot after every 16 elements and an odd pitch (bank-conflict-free strided accesses) where
    that fits the adapter's workgroup memory, else (n, 31): no padding."""
    pitch = n + ((n - 1) >> PAD_SHIFT)
    if per > 1:
        pitch |= 1
    storage = int(ctx.limits.get("max-compute-workgroup-storage-size", 16384))
    if per * pitch * itemsize <= storage:
        return pitch, PAD_SHIFT
    return n, 31


def _column_like(sizes: Sequence[int], src: View) -> bool:
    """Whether some batch dim of ``src`` is closer in memory than the transform's elements."""
    inner = [abs(st) for size, st in zip(sizes, src.strides) if size > 1]
    return bool(inner) and min(inner) < abs(src.axis)


class View(NamedTuple):
    """One side of a transform: operand ``base``, ``origin`` (elements from its element 0),
    ``axis`` stride and the stride of each batch dim."""

    base: int
    origin: int
    axis: int
    strides: tuple[int, ...]


class Planner:
    """Builds the records (dispatches) and scratch list of one call, and its tables."""

    def __init__(self, backend: Any, ctx: Any, dtype: str, itemsize: int, wgsl: str) -> None:
        self.backend, self.ctx, self.dtype = backend, ctx, dtype
        self.itemsize, self.wgsl = itemsize, wgsl
        self.lw = workgroup_length(ctx, itemsize)
        self._shapes: dict[int, tuple[int, int] | None] = {}
        self.column_split = bool(config.value("fft_column_split"))
        self.records: list[Any] = []
        self.aux: list[list[int]] = []
        self.tables: list[np.ndarray] = []
        self.table_len = 0
        self.inner: dict[tuple[int, tuple[int, ...]], int] = {}  # (length, radices) -> its twiddles
        self.scales: dict[float, int] = {}  # scale -> table offset of its entry
        self.chirps: list[tuple[int, int]] = []  # chirp spectra to compute: (length, table offset)
        #: whether operand 0 holds real values (read as complex ones with imaginary part 0)
        self.real_src = False

    def shape(self, n: int) -> tuple[int, int] | None:
        """``group_shape`` of length ``n`` (memoised for the plan)."""
        if n not in self._shapes:
            self._shapes[n] = group_shape(self.ctx, self.itemsize, n)
        return self._shapes[n]

    # ---- tables ----------------------------------------------------------------------------
    def _table(self, values: np.ndarray) -> int:
        off = self.table_len
        self.tables.append(values)
        self.table_len += len(values)
        return off

    def scale_entry(self, scale: float) -> int:
        """The table offset of an entry holding ``scale``."""
        off = self.scales.get(scale)
        if off is None:
            off = self.scales[scale] = self._table(np.array([scale], dtype=np.complex128))
        return off

    def twiddles(self, n: int, radices: tuple[int, ...]) -> int:
        """The table offset of the pass twiddles of length ``n``: with ``fft_pass_twiddles``
        each pass's own (``pass_twiddles``), else exp(-2 pi i k / n), k < n."""
        key = (n, radices) if knobs()[7] else (n, ())
        off = self.inner.get(key)
        if off is None:
            values = pass_twiddles(radices)[0] if key[1] else np.exp(-2j * np.pi * np.arange(n) / n)
            off = self.inner[key] = self._table(values)
        return off

    # ---- the scratch operands (bases 3, 4, ...) ------------------------------------------------
    def scratch(self, elements: int) -> int:
        self.aux.append([max(1, elements) * self.itemsize, 0])
        return 2 + len(self.aux)

    # ---- the transforms ----------------------------------------------------------------------
    def transform(self, n: int, sizes: Sequence[int], src: View, dst: View, inverse: bool,
                  scale: float, top: bool = False, keep: int = 0) -> None:
        """Append the dispatches of ``dst = scale * DFT(src)`` (``top``: the call's own operands,
        whose column transforms may split; not the rows of a decomposition, which are columns by
        construction). ``keep`` (0: all n): only the first ``keep`` results of each transform
        are stored (``dst`` has that many along its axis)."""
        radices = factor(n)
        column = _column_like(sizes, src)
        keep = keep if 0 < keep < n else 0
        if radices is None:
            self._bluestein(n, sizes, src, dst, inverse, scale, keep)
        elif self.shape(n) is not None and not (top and column and self.column_split and self._split_column(n)):
            self._stockham(n, radices, sizes, src, dst, inverse, scale, None, keep=keep)
        elif keep:  # the whole transforms into a scratch array, then the kept results copied out
            batch = math.prod(sizes)
            tmp = self.scratch(batch * n)
            rows = tuple(n * math.prod(sizes[:i]) for i in range(len(sizes)))
            self._four_step(n, sizes, src, View(tmp, 0, 1, rows), inverse, scale, column)
            self._chirp(3, batch * keep, keep, n, View(tmp, 0, 1, ()), dst, list(zip(sizes, dst.strides)), 0, 0,
                        False, 1.0)
        else:
            self._four_step(n, sizes, src, dst, inverse, scale, column)

    def _split_column(self, n: int) -> bool:
        """Whether a column transform of length ``n`` (entries adjacent in memory, elements far
        apart) that fits a workgroup takes a four-step decomposition instead: when fewer than
        ``MIN_RUN`` entries fit a workgroup (reads of fewer than 32 bytes in a row) and ``n``
        splits into two factors that each take ``MIN_RUN`` entries."""
        shape = self.shape(n)
        return shape is not None and shape[0] < MIN_RUN and self._split(n, True) is not None

    def _split(self, n: int, column: bool = False) -> int | None:
        """The column length n1 of a four-step decomposition of ``n``. The column pass reads
        ``lw / n1`` adjacent columns per workgroup, so n1 is at most a quarter of a workgroup
        (32-byte runs): the smallest such n1 whose rows (n / n1, strided too) fit a workgroup
        ``MIN_RUN`` times, else (not ``column``) once; else (three levels or more) the longest
        n1 of at most a sixteenth of a workgroup, the rows decomposed in turn. None
        (``column``) or BackendError when there is none."""
        fits = [d for d in _divisors(n)[1:-1] if self.shape(d) is not None]
        for runs in (True, False):  # rows of MIN_RUN entries per workgroup first
            for d in fits:
                rows = self.shape(n // d)
                if d <= max(2, self.lw // MIN_RUN) and rows is not None and (not runs or rows[0] >= MIN_RUN):
                    return d
            if column:
                return None
        short = [d for d in fits if d <= max(2, self.lw // 16)]
        if not short:
            raise invalid_argument(f"fft: no decomposition of length {n}")
        return short[-1]

    def _four_step(self, n: int, sizes: Sequence[int], src: View, dst: View, inverse: bool,
                   scale: float, column: bool) -> None:
        """n = n1 m: the length-m transforms of the n1 subsequences x[i1 + n1 i2] into a scratch
        array, then the length-n1 transforms over i1 of W_n^(i1 k2) times them (k2 the first
        batch dim of that pass). The scratch holds the batch entries outermost (row-like
        operands: each row's transform contiguous) or innermost (``column``: entries adjacent,
        as in the operands)."""
        n1 = (self._split(n, True) if column else None) or self._split(n)
        assert n1 is not None
        m = n // n1
        batch = math.prod(sizes)
        tmp = self.scratch(batch * n)
        cum = []
        acc = 1
        for size in sizes:
            cum.append(acc)
            acc *= size
        if column:  # tmp[(i1 m + k2) batch + b]
            a_dst = View(tmp, 0, batch, (m * batch, *cum))
            b_src = View(tmp, 0, m * batch, (batch, *cum))
        else:  # tmp[b n + i1 m + k2]
            outer = tuple(c * n for c in cum)
            a_dst = View(tmp, 0, 1, (m, *outer))
            b_src = View(tmp, 0, m, (1, *outer))
        a_src = View(src.base, src.origin, src.axis * n1, (src.axis, *src.strides))
        self.transform(m, (n1, *sizes), a_src, a_dst, inverse, 1.0)
        b_dst = View(dst.base, dst.origin, dst.axis * m, (dst.axis, *dst.strides))
        self._stockham(n1, factor(n1), (m, *sizes), b_src, b_dst, inverse, scale, (n, 0))

    def _stockham(self, n: int, radices: tuple[int, ...] | None, sizes: Sequence[int], src: View,
                  dst: View, inverse: bool, scale: float, twiddle: tuple[int, int] | None,
                  real: tuple[int, bool] | None = None, blue: tuple[int, int, int, bool] | None = None,
                  keep: int = 0) -> None:
        """One dispatch of the workgroup kernel; ``twiddle`` (total length, index of the batch
        dim whose coordinate multiplies the element index) for the column pass of a four-step
        decomposition; ``real`` (mode, conjugation) for the real transforms of length 2n
        (``stockham_real``); ``blue`` (length, chirp and spectrum table offsets, inverse) for
        Bluestein's transform of that length through this one (``_bluestein``); ``keep``
        (0: all) the results stored per transform (no twiddle, no real step). Batch dims of size
        1 are dropped, the others ordered by source stride (adjacent entries of a workgroup
        adjacent in memory where possible)."""
        shape = self.shape(n)
        assert radices is not None and shape is not None
        per, wg = shape
        tdim_of = -1 if twiddle is None else twiddle[1]
        if real is not None and real[0] == 4:
            tdim_of = 0  # (the subsequence's coordinate: the real step's partner and twiddle)
        dims = sorted(((s, a, b, i == tdim_of) for i, (s, a, b) in enumerate(zip(sizes, src.strides, dst.strides))
                       if s > 1 or i == tdim_of), key=lambda d: (abs(d[1]), abs(d[2])))
        tdim = next((i for i, d in enumerate(dims) if d[3]), 0xFFFF)
        dims = [d[:3] for d in dims]
        if len(dims) > MAX_BATCH_DIMS:
            raise invalid_argument(f"fft: more than {MAX_BATCH_DIMS} batch dims")
        batch = math.prod(d[0] for d in dims) if dims else 1
        per, wg = row_group(self.ctx, n, radices, per, batch, abs(src.axis) == 1 and abs(dst.axis) == 1)
        per, wg = spread(self.ctx, n, radices, per, wg, batch, 2 if real is not None and real[0] == 3 else 1)
        along_load = abs(src.axis) == 1 or per == 1
        along_store = abs(dst.axis) == 1 or per == 1
        tw_split = 1
        lo = hi = 0
        if twiddle is not None:
            total = twiddle[0]
            tw_split = 1 << ((total.bit_length() + 1) // 2)
            lo = self._table(np.exp(-2j * np.pi * np.arange(tw_split) / total))
            hi = self._table(np.exp(-2j * np.pi * tw_split * np.arange(-(-total // tw_split)) / total))
        inner = self.twiddles(n, radices)
        mode, conj = real if real is not None else (0, False)
        spec_at = 0
        src_len = dst_len = n
        if mode == 3:  # (the last pass of a four-step half-length transform: see ``four_step_real``)
            assert twiddle is not None and tdim == 0 and per % 2 == 0 and dims[0][0] % per == 0
            h = twiddle[0]
            real_at = self._table(np.exp(-1j * np.pi * np.arange(h // n) / h))  # W_2h^col
            spec_at = self._table(np.exp(-1j * np.pi * (h // n) * np.arange(n + 1) / h))  # W_2h^(m k1)
        elif mode == 4:  # (the first pass of a four-step half-length inverse: see ``four_step_real``)
            assert twiddle is None and tdim == 0
            h = n * dims[0][0]
            real_at = self._table(np.exp(-1j * np.pi * np.arange(dims[0][0]) / h))  # W_2h^i1
            spec_at = self._table(np.exp(-1j * np.pi * dims[0][0] * np.arange(n) / h))  # W_2h^(n1 i2)
        elif mode:
            real_at = self._table(np.exp(-1j * np.pi * np.arange(n + 1) / n))
            src_len, dst_len = n + (mode == 2), n + (mode == 1)
        else:
            real_at = 0
        if blue is not None:
            src_len = dst_len = blue[0]
            real_at, spec_at, conj = blue[1], blue[2], False
        if keep:
            assert twiddle is None and not mode and keep < dst_len
            dst_len = keep
        pitch, pad = entry_pitch(self.ctx, self.itemsize, n, per)
        two = wg < -(-per * n // min(radices))
        dload, dstore = direct_io(n, radices, along_load, along_store, mode, blue is not None)
        dstore = dstore and not keep
        defines = _stockham_defines(self.wgsl, n, per, wg, radices, twiddle is not None, pitch, pad, mode,
                                    blue[0] if blue is not None else 0, self._real_src(src), two, knobs()[3],
                                    dload, dstore, knobs()[7], keep)
        padded = dims + [(1, 0, 0)] * (MAX_BATCH_DIMS - len(dims))
        flags = (int(inverse) | (2 if scale != 1.0 else 0) | (4 if along_load else 0) | (8 if along_store else 0)
                 | (16 if conj else 0) | (32 if blue is not None and blue[3] else 0))
        words = [batch, 0, 0, src.axis & _U32, dst.axis & _U32, 0, lo, hi, tw_split, tdim, inner, flags,
                 self.scale_entry(scale), len(dims), real_at, spec_at, *(d[0] for d in padded),
                 *(d[1] & _U32 for d in padded), *(d[2] & _U32 for d in padded)]
        isz = self.itemsize
        dst_region = self._region(dst, dst_len, [(d[0], d[2]) for d in dims], 2)
        if mode == 3:  # one element more: X[h] of the last row, written by its column 0
            dst_region = dst_region._replace(nbytes=dst_region.nbytes + isz)
        src_region = self._region(src, src_len, [(d[0], d[1]) for d in dims], 1)
        if mode == 4:  # one element more: X[h] of the last row, the partner of its X[0]
            src_region = src_region._replace(nbytes=src_region.nbytes + isz)
        regions = (
            src_region,
            dst_region,
            Region(2, 0, 0, isz, 0, 5, 0),  # the table: size filled in at compile
        )
        grid = self.ctx.fold_grid(-(-batch // per))
        pipe = self.ctx.pipeline("fft_stockham", 3, defines)
        self.records.append((pipe, defines, tuple(words), grid, regions))

    def _real_src(self, view: View) -> bool:
        """Whether ``view`` reads real values (operand 0 of a plan with ``real_src``)."""
        return self.real_src and view.base == 0

    def _region(self, view: View, n: int, dims: list[tuple[int, int]], word: int) -> Region:
        full = [(n, view.axis), *dims]
        lo, hi = strided_span(full)
        isz = self.itemsize // 2 if self._real_src(view) else self.itemsize
        return Region(view.base, (view.origin + lo) * isz, (hi - lo + 1) * isz, isz, 0, word, -lo)

    def _bluestein(self, n: int, sizes: Sequence[int], src: View, dst: View, inverse: bool,
                   scale: float, keep: int = 0) -> None:
        m = fast_length(2 * n - 1)
        batch = math.prod(sizes)
        k = np.arange(n, dtype=np.int64)
        w = np.exp(-1j * np.pi * ((k * k) % (2 * n)) / n)  # exp(-i pi k^2 / n), exact angles
        chirp = self._table(w)
        h = np.zeros(m, dtype=np.complex128)
        hk = np.conj(w) if not inverse else w  # the kernel of the convolution
        h[:n] = hk
        h[m - n + 1:] = hk[1:][::-1]
        spec = self._table(h)  # the kernel; its spectrum replaces it on the device (``_make_plan``)
        self.chirps.append((m, spec))
        radices = factor(m)
        if self.shape(m) is not None and radices is not None:  # one dispatch, all in workgroup memory
            self._stockham(m, radices, sizes, src, dst, False, scale / m, None, blue=(n, chirp, spec, inverse),
                           keep=keep)
            return
        a = self.scratch(batch * m)
        b = self.scratch(batch * m)
        dims = [(s, st) for s, st in zip(sizes, src.strides)]
        self._chirp(0, batch * m, n, m, src, View(a, 0, 1, ()), dims, chirp, spec, inverse, 1.0)
        contiguous = tuple(m * math.prod(sizes[:i]) for i in range(len(sizes)))
        self.transform(m, sizes, View(a, 0, 1, contiguous), View(b, 0, 1, contiguous), False, 1.0)
        self._chirp(1, batch * m, n, m, View(b, 0, 1, ()), View(a, 0, 1, ()), [], chirp, spec, inverse, 1.0)
        self.transform(m, sizes, View(a, 0, 1, contiguous), View(b, 0, 1, contiguous), True, 1.0)
        dims = [(s, st) for s, st in zip(sizes, dst.strides)]
        out = keep or n
        self._chirp(2, batch * out, out, m, View(b, 0, 1, ()), dst, dims, chirp, spec, inverse, scale / m)

    def _chirp(self, mode: int, total: int, n: int, m: int, src: View, dst: View,
               dims: list[tuple[int, int]], chirp: int, spec: int, inverse: bool, scale: float) -> None:
        dims = [d for d in dims if d[0] > 1]
        if len(dims) > MAX_BATCH_DIMS:
            raise invalid_argument(f"fft: more than {MAX_BATCH_DIMS} batch dims")
        batch = total // (m if mode < 2 else n)  # (modes 2 and 3: n the results stored per entry)
        strided = src if mode == 0 else dst
        padded = dims + [(1, 0)] * (MAX_BATCH_DIMS - len(dims))
        words = [total, n, m, 0, 0, 0, chirp, spec, strided.axis & _U32, int(inverse), self.scale_entry(scale),
                 len(dims),
                 *(d[0] for d in padded), *(d[1] & _U32 for d in padded), *(0,) * 8]
        isz = self.itemsize
        if mode == 0:
            r_src = self._region(src, n, dims, 3)
            r_dst = Region(dst.base, 0, batch * m * isz, isz, 0, 4, 0)
        elif mode == 1:
            r_src = Region(src.base, 0, batch * m * isz, isz, 0, 3, 0)
            r_dst = Region(dst.base, 0, batch * m * isz, isz, 0, 4, 0)
        else:
            r_src = Region(src.base, 0, batch * m * isz, isz, 0, 3, 0)
            r_dst = self._region(dst, n, dims, 4)
        defines = _chirp_defines(self.wgsl, mode, self._real_src(src))
        grid = self.ctx.fold_grid(-(-total // 256))
        pipe = self.ctx.pipeline("fft_chirp", 3, defines)
        self.records.append((pipe, defines, tuple(words), grid, (r_src, r_dst, Region(2, 0, 0, isz, 0, 5, 0))))

    def stockham_real(self, n: int, rows: int, src: int, dst: int, inverse: bool, scale: float,
                      conj: bool) -> bool:
        """Append the one dispatch of a real transform of length 2n over ``rows`` contiguous
        rows from operand ``src`` to ``dst`` where a workgroup holds length n: forward (rows of
        2n reals, read as n complex values, to rows of n + 1) or ``inverse`` (rows of n + 1 to
        rows of 2n reals); False (nothing appended) where it does not fit."""
        radices = factor(n)
        if radices is None or self.shape(n) is None:
            return False
        src_len, dst_len = (n + 1, n) if inverse else (n, n + 1)
        self._stockham(n, radices, (rows,), View(src, 0, 1, (src_len,)), View(dst, 0, 1, (dst_len,)), inverse,
                       scale, None, (2 if inverse else 1, conj))
        return True

    def four_step_real(self, n: int, rows: int, src: int, dst: int, scale: float, conj: bool,
                       inverse: bool = False) -> bool:
        """Append the two dispatches of a real transform of length 2n over ``rows`` contiguous
        rows where length n takes a four-step decomposition n = n1 m (the length-m transforms
        into a scratch array, then the n1-point column transforms), the real step fused into
        them. Forward (operand ``src``: rows of 2n reals read as n complex values; ``dst``:
        rows of n + 1): the column pass's store forms X[k] from Z[k] and Z[n - k], a workgroup
        holding columns j and m - j together (REAL 3 of ``fft_stockham.wgsl``). ``inverse``
        (rows of n + 1 to rows of 2n reals): the first pass's load forms its inputs from X[g]
        and X[n - g] (REAL 4). False (nothing appended) where the knob ``fft_real_fused`` is
        off, n does not take that decomposition in two dispatches, or (forward) the column
        pass's workgroups do not hold whole pairs (an odd m, one column per workgroup)."""
        radices = factor(n)
        if not knobs()[2] or radices is None or self.shape(n) is not None:
            return False
        n1 = self._split(n)
        if n1 is None:
            return False
        m = n // n1
        shape = self.shape(n1)
        if shape is None or m < 2 or n1 < 2:
            return False
        if inverse:
            if self.shape(m) is None:
                return False
            tmp = self.scratch(rows * n)
            self._stockham(m, factor(m), (n1, rows), View(src, 0, n1, (1, n + 1)), View(tmp, 0, 1, (m, n)), True,
                           1.0, None, (4, conj))
            self._stockham(n1, factor(n1), (m, rows), View(tmp, 0, m, (1, n)), View(dst, 0, m, (1, n)), True,
                           scale, (n, 0))
            return True
        per, _ = row_group(self.ctx, n1, factor(n1), shape[0], m * rows, m == 1)
        if per < 2 or per % 2 or m % per:
            return False
        tmp = self.scratch(rows * n)
        self.transform(m, (n1, rows), View(src, 0, n1, (1, n)), View(tmp, 0, 1, (m, n)), False, 1.0)
        self._stockham(n1, factor(n1), (m, rows), View(tmp, 0, m, (1, n)), View(dst, 0, m, (1, n + 1)), False,
                       scale, (n, 0), (3, conj))
        return True

    def real_step(self, kernel: str, n: int, rows: int, src: int, dst: int, scale: float, conj: bool) -> None:
        """Append ``fft_real_post`` (rows of n/2 complex values at operand ``src`` to rows of n/2
        + 1 at ``dst``) or ``fft_real_pre`` (the reverse), the step of a real transform of even
        length n around its half-length complex DFT (``_wgsl/fft_real_post.wgsl``)."""
        h = n // 2
        pairs = h // 2 + 1
        count = n // 4 + 1  # the twiddles exp(-2 pi i k / n), k <= n / 4, as fine x coarse entries
        shift = max(0, (count - 1).bit_length() + 1) // 2
        fine = self._table(np.exp(-2j * np.pi * np.arange(1 << shift) / n))
        coarse = self._table(np.exp(-2j * np.pi * np.arange(-(-count // (1 << shift))) * (1 << shift) / n))
        words = (h, pairs, rows, int(conj), 0, 0, 0, fine, coarse, shift, self.scale_entry(scale), 0) + (0,) * 16
        src_len, dst_len = (h, h + 1) if kernel == "fft_real_post" else (h + 1, h)
        isz = self.itemsize
        regions = (Region(src, 0, rows * src_len * isz, isz, 0, 4, 0), Region(dst, 0, rows * dst_len * isz, isz, 0, 5, 0),
                   Region(2, 0, 0, isz, 0, 6, 0))
        defines = _real_defines(self.wgsl)
        pipe = self.ctx.pipeline(kernel, 3, defines)
        self.records.append((pipe, defines, words, self.ctx.fold_grid(-(-pairs * rows // 256)), regions))

    def finish(self) -> tuple[list[Any], np.ndarray]:
        """The records with the table's size in its regions, and the table (float64 values)."""
        table = np.concatenate(self.tables) if self.tables else np.zeros(1, np.complex128)
        nbytes = len(table) * self.itemsize
        records = []
        for pipe, defines, words, grid, regions in self.records:
            regions = tuple(r._replace(nbytes=nbytes) if r.base == 2 else r for r in regions)
            records.append((pipe, defines, words, grid, regions))
        return records, table


def _literal(value: float, wgsl: str) -> str:
    """A decimal WGSL literal of a finite ``value`` (a constant expression, which the bit-pattern
    literals of ``wgsl_types.literal`` are not)."""
    return f"{float(value)!r}{'f' if wgsl == 'f32' else 'lf'}"


@functools.lru_cache(maxsize=256)
def _stockham_defines(wgsl: str, n: int, per: int, wg: int, radices: tuple[int, ...],
                      twiddle: bool, pitch: int, pad: int, real: int = 0, blue: int = 0,
                      real_src: bool = False, two: bool = False, unroll: bool = False,
                      dload: bool = False, dstore: bool = False, pass_tw: bool = False,
                      keep: int = 0) -> dict[str, object]:
    """The placeholders of fft_stockham.wgsl (``blue``: Bluestein's length, 0 for none;
    ``unroll``: the load and store loops unrolled; ``dload`` / ``dstore``: the first pass reads
    the source, the last writes the destination; ``pass_tw``: each pass's twiddles in a table of
    its own; ``keep``: the results stored per entry, 0 for all; cached: treat as read-only)."""
    nout = keep or blue or (n + 1 if real == 1 else n)
    t = wgsl
    c = {f"C{r}{k}": _literal(math.cos(2 * math.pi * k / r), t) for r in (5, 7) for k in range(1, 4)}
    s = {f"S{r}{k}": _literal(math.sin(2 * math.pi * k / r), t) for r in (5, 7) for k in range(1, 4)}
    out: dict[str, object] = {
        "T": t, "N": n, "C": per, "WG": wg, "NPASS": len(radices), "PITCH": pitch, "PAD": pad,
        "RADICES": ", ".join(f"{r}u" for r in radices),
        "PASS_TW": "true" if pass_tw else "false",
        "TW_AT": ", ".join(f"{a}u" for a in (pass_twiddles(radices)[1] if pass_tw else (0,) * len(radices))),
        "TWIDDLE": "true" if twiddle else "false", "REAL": real, "KEEP": keep,
        "BLUE": "true" if blue else "false", "BN": blue or 1, **_source(t, real_src),
        "TWO": "true" if two else "false",
        "DLOAD": "true" if dload else "false", "DSTORE": "true" if dstore else "false",
        "UNROLL": "true" if unroll else "false", "LOADS": -(-per * n // wg), "STORES": -(-per * nout // wg),
        **{f"USE{r}": "true" if r in radices else "false" for r in (2, 3, 4, 5, 7, 8, 16)},
        "C16": _literal(math.cos(math.pi / 8), t), "S16": _literal(math.sin(math.pi / 8), t),
        "C3": _literal(-0.5, t), "S3": _literal(math.sqrt(3.0) / 2, t),
        "R2": _literal(math.sqrt(0.5), t),
    }
    for key in ("C51", "C52", "S51", "S52", "C71", "C72", "C73", "S71", "S72", "S73"):
        out[key] = c.get(key, s.get(key))
    return out


@functools.lru_cache(maxsize=4)
def _real_defines(wgsl: str) -> dict[str, object]:
    """The placeholders of fft_real_post.wgsl / fft_real_pre.wgsl (cached: treat as read-only)."""
    return {"T": wgsl}


@functools.lru_cache(maxsize=16)
def _chirp_defines(wgsl: str, mode: int, real_src: bool = False) -> dict[str, object]:
    """The placeholders of fft_chirp.wgsl (cached: treat as read-only)."""
    return {"T": wgsl, "MODE": mode, **_source(wgsl, real_src)}


def _source(wgsl: str, real: bool) -> dict[str, str]:
    """The placeholders of the source binding's element type and load (a real source's
    values as complex ones)."""
    if real:
        return {"SRC": wgsl, "LOAD": f"vec2<{wgsl}>(src[k], {wgsl}(0.0))"}
    return {"SRC": f"vec2<{wgsl}>", "LOAD": "src[k]"}


class _Plan:
    """A compiled call: its program, its table allocation (base 2, freed with the plan), the
    spans of its operands (bytes from element 0 to the lowest touched byte, bytes touched) and
    their item sizes (the alignment :meth:`launch` checks); ``wrappable``: a program of one
    kernel template without scratch, which a wrapped ``dispatch`` (the profiler's host-time
    mode, test spies) sees through ``LaunchProgram.dispatch``."""

    def __init__(self, backend: Any, program: LaunchProgram, table_ptr: int,
                 spans: tuple[tuple[int, int], tuple[int, int]], items: tuple[int, int] = (1, 1),
                 wrappable: bool = False) -> None:
        self.program = program
        self.table_ptr = table_ptr
        self.spans = spans
        self.items = items
        self.wrappable = wrappable and not program.aux
        alloc, off = backend.resolve(table_ptr, 0)
        self.table_base = (alloc.buffer, alloc.buffer.size, alloc.nbytes, off, table_ptr)
        weakref.finalize(self, _release, weakref.ref(backend), table_ptr)

    def launch(self, backend: Any, src: int, dst: int) -> None:
        """Record the program for the operands whose element 0 is at ``src`` and ``dst``: the
        range and alignment checks of both (the windows of the program's regions), then the
        replay. BackendError (invalid argument) for pointers out of range or misaligned."""
        (src_lo, src_bytes), (dst_lo, dst_bytes) = self.spans
        src_alloc, src_off = backend.resolve(src + src_lo, src_bytes)
        dst_alloc, dst_off = backend.resolve(dst + dst_lo, dst_bytes)
        src_item, dst_item = self.items
        if (src_off - src_lo) % src_item or (dst_off - dst_lo) % dst_item:
            raise invalid_argument(f"fft: pointers must be multiples of the item size {dst_item}")
        ctx = backend._ctx
        if self.wrappable and ctx.__dict__.get("dispatch") is not None:
            self.program.dispatch(backend, ctx, (src, dst, self.table_ptr))  # a wrapped dispatch
            return
        src_buf = src_alloc.buffer
        dst_buf = dst_alloc.buffer
        bases = [(src_buf, src_buf.size, src_alloc.nbytes, src_off - src_lo, src),
                 (dst_buf, dst_buf.size, dst_alloc.nbytes, dst_off - dst_lo, dst), self.table_base]
        if not self.program.run(backend, ctx, bases, no_placeholder):
            raise invalid_argument("fft: the program did not apply")


class KeptPlan:
    """A plan handed to a caller that replays it for new pointers (``planned``): valid on the
    backend that made it while the knobs the plans depend on are those it was made under and
    its context's workgroup limit is unchanged (``valid_on``); ``launch(backend, src, dst)``
    checks the pointers and records it (``_Plan.launch``)."""

    __slots__ = ("launch", "_backend", "_knobs", "_program")

    def __init__(self, backend: Any, plan: _Plan, knob_values: tuple[Any, ...]) -> None:
        self.launch = plan.launch
        self._program = plan.program
        self._backend = weakref.ref(backend)
        self._knobs = knob_values

    def valid_on(self, backend: Any) -> bool:
        """Whether the plan holds on ``backend`` now."""
        ctx = backend._ctx
        return (self._backend() is backend and ctx is not None and knobs() == self._knobs
                and self._program.max_workgroups == ctx.max_workgroups_per_dim)


def _release(backend_ref: Any, ptr: int) -> None:
    """Free a dropped plan's table (nothing when its backend is gone or was reset)."""
    backend = backend_ref()
    if backend is None:
        return
    try:
        backend.free(ptr)
    except Exception:  # noqa: BLE001 - a retired device's pointer: its memory went with it
        pass


_PLANS = PlanCache(64)


def no_placeholder(backend: Any, itemsize: int, *bindings: Any) -> Any:
    """The placeholder maker of the fft programs, which bind none (never called)."""
    raise invalid_argument("fft: no placeholder bindings")


def _bases(backend: Any, ptrs: Sequence[int]) -> list[tuple[Any, int, int, int, int]]:
    out = []
    for ptr in ptrs:
        alloc, off = backend.resolve(ptr, 0)
        out.append((alloc.buffer, alloc.buffer.size, alloc.nbytes, off, ptr))
    return out


def _upload(backend: Any, values: np.ndarray, dtype: str) -> int:
    host = np.ascontiguousarray(values.astype(np.complex64 if dtype == "complex64" else np.complex128))
    ptr = backend.alloc(max(host.nbytes, 8), zero=False)
    backend.copy_htod(ptr, host)
    return ptr


def _chirp_spectrum(backend: Any, ctx: Any, dtype: str, itemsize: int, wgsl: str, table: np.ndarray,
                    table_ptr: int, m: int, spec: int) -> None:
    """Record the length-m transform of the chirp kernel ``table[spec:spec + m]`` (a copy of it)
    into the plan's table at ``spec``, in its place."""
    sub = Planner(backend, ctx, dtype, itemsize, wgsl)
    sub.transform(m, (1,), View(0, 0, 1, (m,)), View(1, spec, 1, (m,)), False, 1.0)
    sub_records, sub_table = sub.finish()
    kernel_ptr = _upload(backend, table[spec:spec + m], dtype)
    sub_ptr = _upload(backend, sub_table, dtype)
    # the sub-program's operands: 0 the kernel's copy, 1 the plan's table, 2 its own twiddles
    program = LaunchProgram.compile("fft", _WORDS, ctx, sub_records, sub.aux)
    try:
        if not program.run(backend, ctx, _bases(backend, [kernel_ptr, table_ptr, sub_ptr]), no_placeholder):
            raise invalid_argument("fft: the chirp spectrum's program did not apply")
    finally:
        backend.free(kernel_ptr)  # the recorded dispatches keep the pool blocks alive until they run
        backend.free(sub_ptr)


def _make_plan(backend: Any, key: tuple[Any, ...]) -> _Plan:
    """The plan of a call with merged batch dims ``key`` (see ``c2c``): its program, its table
    uploaded and the chirp spectra of its Bluestein transforms recorded."""
    dtype, n, sizes, src_axis, src_strides, dst_axis, dst_strides, inverse, scale, real_src, keep = key
    itemsize, wgsl = storage(backend, dtype)
    ctx = backend.context
    planner = Planner(backend, ctx, dtype, itemsize, wgsl)
    planner.real_src = real_src
    planner.transform(n, sizes, View(0, 0, src_axis, src_strides), View(1, 0, dst_axis, dst_strides),
                      inverse, scale, top=True, keep=keep)
    spans = []
    for axis, strides, isz, count in ((src_axis, src_strides, itemsize // 2 if real_src else itemsize, n),
                                      (dst_axis, dst_strides, itemsize, keep or n)):
        lo, hi = strided_span([(count, axis), *zip(sizes, strides)])
        spans.append((lo * isz, (hi - lo + 1) * isz))
    return compile_plan(backend, planner, "fft", (spans[0], spans[1]))


def compile_plan(backend: Any, planner: Planner, kernel: str,
                 spans: tuple[tuple[int, int], tuple[int, int]], items: tuple[int, int] | None = None,
                 wrappable: bool = False) -> _Plan:
    """The plan of ``planner``'s records (recorded as ``kernel``): its table uploaded, the
    chirp spectra of its Bluestein transforms recorded; ``spans``, ``items`` (default: the
    source's item size, real with ``planner.real_src``, and the complex one) and ``wrappable``
    as ``_Plan``'s."""
    if items is None:
        items = (planner.itemsize // 2 if planner.real_src else planner.itemsize, planner.itemsize)
    ctx = planner.ctx
    chirps = list(planner.chirps)
    records, table = planner.finish()
    table_ptr = _upload(backend, table, planner.dtype)
    try:
        for m, spec in chirps:
            _chirp_spectrum(backend, ctx, planner.dtype, planner.itemsize, planner.wgsl, table, table_ptr, m, spec)
    except BaseException:
        backend.free(table_ptr)
        raise
    return _Plan(backend, LaunchProgram.compile(kernel, _WORDS, ctx, records, planner.aux), table_ptr, spans, items,
                 wrappable)


def merge_batch(sizes: Sequence[int], src: Sequence[int], dst: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """Batch dims without size-1 dims, merged where both sides allow, sorted by source stride."""
    dims = sorted(((int(s), int(a), int(b)) for s, a, b in zip(sizes, src, dst) if s != 1),
                  key=lambda d: (abs(d[1]), abs(d[2])))
    merged: list[tuple[int, int, int]] = []
    for s, a, b in dims:
        if merged:
            ps, pa, pb = merged[-1]
            if a == pa * ps and b == pb * ps:
                merged[-1] = (ps * s, pa, pb)
                continue
        merged.append((s, a, b))
    return (tuple(d[0] for d in merged), tuple(d[1] for d in merged), tuple(d[2] for d in merged))


def c2c(backend: Any, dtype: str, n: int, src: int, src_axis: int, dst: int, dst_axis: int,
        batch_shape: Sequence[int], src_strides: Sequence[int], dst_strides: Sequence[int], *,
        inverse: bool, scale: float = 1.0, real_src: bool = False, keep: int = 0) -> None:
    """Record ``dst = scale * DFT(src)`` of length ``n`` along one axis, for every entry of
    ``batch_shape``: element i of entry (j0, j1, ...) of ``src`` is at element ``i * src_axis +
    sum j_d src_strides[d]`` from the pointer ``src`` (complex elements, any sign; with
    ``real_src``, real elements of ``dtype``'s precision, read as complex values), ``dst``
    likewise (complex); sign -1 (``inverse=False``) or +1. ``keep`` (1 <= keep < n; 0: all):
    only results k < ``keep`` of each transform are stored (``dst`` holds that many along its
    axis: e.g. the n // 2 + 1 values of a real transform). ``src`` and ``dst`` must not overlap.

    Raises BackendError: invalid argument for a length below 1, a dtype other than complex64 /
    complex128, more than ``MAX_BATCH_DIMS - 2`` batch dims that do not merge, pointers out of
    range, ``keep`` out of range; unsupported for complex128 without ``shader-f64``.
    """
    plan = _c2c_plan(backend, dtype, n, src_axis, dst_axis, batch_shape, src_strides, dst_strides, inverse, scale,
                     real_src, keep)[0]
    if plan is not None:
        plan.launch(backend, src, dst)


def planned_c2c(backend: Any, dtype: str, n: int, src_axis: int, dst_axis: int, batch_shape: Sequence[int],
                src_strides: Sequence[int], dst_strides: Sequence[int], *, inverse: bool, scale: float = 1.0,
                real_src: bool = False, keep: int = 0) -> KeptPlan | None:
    """The plan of ``c2c`` with these arguments (made now where there is none) as a
    :class:`KeptPlan`, for a caller that replays it: ``launch(backend, src, dst)`` records
    that call. None for an empty batch. Raises as :func:`c2c` (before anything is recorded)."""
    plan, knob_values = _c2c_plan(backend, dtype, n, src_axis, dst_axis, batch_shape, src_strides, dst_strides,
                                  inverse, scale, real_src, keep)
    return None if plan is None else KeptPlan(backend, plan, knob_values)


def _c2c_plan(backend: Any, dtype: str, n: int, src_axis: int, dst_axis: int, batch_shape: Sequence[int],
              src_strides: Sequence[int], dst_strides: Sequence[int], inverse: bool, scale: float,
              real_src: bool, keep: int = 0) -> tuple[_Plan | None, tuple[Any, ...]]:
    """(plan of a ``c2c`` call, the knobs it was made under); no plan for an empty batch."""
    if n < 1:
        raise invalid_argument(f"fft: length must be at least 1, not {n}")
    if keep < 0 or keep > n:
        raise invalid_argument(f"fft: keep must be in [0, {n}], not {keep}")
    if len(batch_shape) != len(src_strides) or len(batch_shape) != len(dst_strides):
        raise invalid_argument("fft: batch shape and strides differ in length")
    split = knobs()
    if 0 in batch_shape:
        return None, split
    key = (dtype, n, tuple(batch_shape), src_axis, tuple(src_strides), dst_axis, tuple(dst_strides),
           inverse, scale, real_src, keep, split)
    plans = _PLANS.of(backend)
    plan = plans.get(key)
    if plan is None or not plan.program.valid_for(backend.context):
        plan = _plan_for(backend, plans, str(dtype), int(n), batch_shape, int(src_axis), src_strides,
                         int(dst_axis), dst_strides, bool(inverse), float(scale), bool(real_src), split,
                         int(keep) if keep != n else 0)
        _PLANS.keep(plans, key, plan)
    return plan, split


def _c_strides(shape: Sequence[int]) -> tuple[int, ...]:
    out = []
    step = 1
    for size in reversed(shape):
        out.append(step)
        step *= max(1, size)
    return tuple(reversed(out))


def fits_axes(shape: Sequence[int], src_strides: Sequence[int], axes: Sequence[int]) -> bool:
    """Whether :func:`c2c_axes` takes transforms along ``axes`` (in order) of an operand of
    ``shape`` and ``src_strides``: every step's batch dims merge to at most ``MAX_BATCH_DIMS - 2``
    (the first step's read through ``src_strides``, the others' through C-contiguous
    intermediates), and no dim is empty."""
    if 0 in shape or not axes:
        return False
    out = _c_strides(shape)
    strides = tuple(src_strides)
    for axis in axes:
        batch = tuple(shape[:axis]) + tuple(shape[axis + 1:])
        sizes, _, _ = merge_batch(batch, strides[:axis] + strides[axis + 1:], out[:axis] + out[axis + 1:])
        if len(sizes) > MAX_BATCH_DIMS - 2:
            return False
        strides = out
    return True


def c2c_axes(backend: Any, dtype: str, shape: Sequence[int], src: int, src_strides: Sequence[int], dst: int,
             steps: Sequence[tuple[int, bool, float]], real_src: bool = False) -> None:
    """Record the DFTs of ``steps`` = [(axis, inverse, scale), ...] in order along the axes of
    an operand of ``shape`` at ``src`` (element strides ``src_strides``, complex, or real with
    ``real_src``), into the C-contiguous complex ``dst``: one planned program per call
    structure, the intermediate results in its scratch (each step as :func:`c2c`'s). ``src``
    and ``dst`` must not overlap. Raises BackendError (invalid argument) where ``fits_axes`` is
    false, for bad axes, dtypes or pointers out of range; (unsupported) for complex128 without
    ``shader-f64``."""
    _axes_plan_of(backend, dtype, shape, src_strides, steps, real_src)[0].launch(backend, src, dst)


def planned_axes(backend: Any, dtype: str, shape: Sequence[int], src_strides: Sequence[int],
                 steps: Sequence[tuple[int, bool, float]], real_src: bool = False) -> KeptPlan:
    """The plan of ``c2c_axes`` with these arguments (made now where there is none) as a
    :class:`KeptPlan` (see :func:`planned_c2c`). Raises as :func:`c2c_axes`."""
    return KeptPlan(backend, *_axes_plan_of(backend, dtype, shape, src_strides, steps, real_src))


def _axes_plan_of(backend: Any, dtype: str, shape: Sequence[int], src_strides: Sequence[int],
                  steps: Sequence[tuple[int, bool, float]], real_src: bool) -> tuple[_Plan, tuple[Any, ...]]:
    """(plan of a ``c2c_axes`` call, the knobs it was made under)."""
    split = knobs()
    key = ("axes", dtype, tuple(shape), tuple(src_strides), tuple(steps), real_src, split)
    plans = _PLANS.of(backend)
    plan = plans.get(key)
    if plan is None or not plan.program.valid_for(backend.context):
        shape = tuple(int(v) for v in shape)
        if not all(0 <= int(a) < len(shape) for a, _, _ in steps) or len(src_strides) != len(shape):
            raise invalid_argument("fft: bad axes or strides")
        if not fits_axes(shape, src_strides, [int(a) for a, _, _ in steps]):
            raise invalid_argument(f"fft: batch dims of {shape} along {steps} do not merge")
        plan = _axes_plan(backend, str(dtype), shape, tuple(int(v) for v in src_strides),
                          tuple((int(a), bool(i), float(c)) for a, i, c in steps), bool(real_src))
        _PLANS.keep(plans, key, plan)
    return plan, split


def _axes_plan(backend: Any, dtype: str, shape: tuple[int, ...], src_strides: tuple[int, ...],
               steps: tuple[tuple[int, bool, float], ...], real_src: bool) -> _Plan:
    itemsize, wgsl = storage(backend, dtype)
    planner = Planner(backend, backend.context, dtype, itemsize, wgsl)
    planner.real_src = real_src
    out = _c_strides(shape)
    total = math.prod(shape)
    base, strides = 0, src_strides
    for k, (axis, inverse, scale) in enumerate(steps):
        target = 1 if k == len(steps) - 1 else planner.scratch(total)
        batch = shape[:axis] + shape[axis + 1:]
        sizes, sstr, dstr = merge_batch(batch, strides[:axis] + strides[axis + 1:], out[:axis] + out[axis + 1:])
        if not sizes:
            sizes, sstr, dstr = (1,), (0,), (0,)
        planner.transform(shape[axis], sizes, View(base, 0, strides[axis], sstr), View(target, 0, out[axis], dstr),
                          inverse, scale, top=True)
        base, strides = target, out  # (the later steps read complex intermediates: bases above 2)
    lo, hi = strided_span(list(zip(shape, src_strides)))
    src_item = itemsize // 2 if real_src else itemsize
    return compile_plan(backend, planner, "fft", ((lo * src_item, (hi - lo + 1) * src_item), (0, total * itemsize)))


def _plan_for(backend: Any, plans: dict[tuple[Any, ...], Any], dtype: str, n: int, batch_shape: Sequence[int],
              src_axis: int, src_strides: Sequence[int], dst_axis: int, dst_strides: Sequence[int], inverse: bool,
              scale: float, real_src: bool, split: tuple[bool, ...], keep: int = 0) -> _Plan:
    """The plan of a call (its merged batch dims: shared by the calls that merge alike)."""
    storage(backend, dtype)  # invalid argument for another dtype, unsupported without shader-f64
    sizes, sstr, dstr = merge_batch(batch_shape, src_strides, dst_strides)
    if len(sizes) > MAX_BATCH_DIMS - 2:
        raise invalid_argument(f"fft: at most {MAX_BATCH_DIMS - 2} batch dims that do not merge")
    if not sizes:
        sizes, sstr, dstr = (1,), (0,), (0,)
    key = ("merged", dtype, n, sizes, src_axis, sstr, dst_axis, dstr, inverse, scale, real_src, keep, split)
    plan = plans.get(key)
    if plan is None or not plan.program.valid_for(backend.context):
        plan = _make_plan(backend, key[1:-1])
        _PLANS.keep(plans, key, plan)
    return plan
