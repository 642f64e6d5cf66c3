"""The lengths, radices and workgroup shapes of the fft kernels, and the knobs their plans read.

:func:`factor` splits a length into the radices of the Stockham passes (8, 4, 2, 3, 5, 7);
:func:`group_shape`, :func:`row_group` and :func:`spread` choose how many transforms a workgroup
of ``_wgsl/fft_stockham.wgsl`` takes and with how many invocations; :func:`entry_pitch` lays out
its workgroup memory; :func:`pass_twiddles` is the twiddle table of a sequence of passes;
:func:`merge_batch` merges the batch dims of a call. Pure functions of the lengths, the
adapter's limits and the knobs (:func:`knobs`). No wgpu here.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from . import config
from .errors import invalid_argument, unsupported

__all__ = ["MAX_BATCH_DIMS", "MIN_RUN", "RADICES", "Knobs", "direct_io", "divisors", "entry_pitch", "factor",
           "fast_length", "group_shape", "invocations", "knobs", "merge_batch", "pass_twiddles", "row_group",
           "spread", "storage", "stores_prefix", "two_butterflies", "workgroup_length"]

#: Batch dims a kernel takes (the caller's, after merging, at most ``MAX_BATCH_DIMS - 2``:
#: each level of a four-step decomposition adds one).
MAX_BATCH_DIMS = 4
#: The radices of the Stockham passes, in the order a length is factored.
RADICES = (8, 4, 2, 3, 5, 7)
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
_U32 = 0xFFFFFFFF


def storage(backend: Any, dtype: str) -> tuple[int, str]:
    """(item size, WGSL scalar type) of the complex ``dtype``. BackendError: invalid argument
    for a dtype other than complex64 / complex128, unsupported for complex128 without
    ``shader-f64``."""
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
    for ``n == 1``."""
    if n == 1:
        return (1,)
    out = []
    rest = n
    twos = 0
    while rest % 2 == 0:
        rest //= 2
        twos += 1
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


def divisors(n: int) -> list[int]:
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
    return per, invocations(n, per, radices, limit)


def invocations(n: int, per: int, radices: tuple[int, ...], limit: int, two: bool = True) -> int:
    """The invocations of a workgroup of ``per`` transforms of length ``n`` (``radices``): one
    butterfly of the smallest radix each, or (``two`` and ``two_butterflies``: every radix at
    least 4 and the ``fft_two_butterflies`` knob on) one per 8 elements, up to two butterflies
    each; a multiple of 32 and of ``per``, at most ``limit``."""
    rmin = min(radices)
    wg = -(-per * n // (8 if two and two_butterflies(rmin) else rmin))
    unit = max(32, per)  # (a multiple of per: an invocation's entry is the same in every column step)
    return min(limit, -(-wg // unit) * unit)


class Knobs(NamedTuple):
    """The configuration knobs the fft plans depend on (part of their keys; see
    ``config.KNOBS`` for each one's meaning)."""

    column_split: bool
    two_butterflies: bool
    real_fused: bool
    unrolled_loads: bool
    min_workgroups: int
    direct_io: bool
    pass_twiddles: bool
    real_prefix: bool
    real_strided: bool
    real_pairs: bool
    twiddle_math: bool


_knobs: list[Any] = [-1, None]  # [config.generation, knobs() then]


def knobs() -> Knobs:
    """The knobs ``fft_column_split``, ``fft_two_butterflies``, ``fft_real_fused``,
    ``fft_unrolled_loads``, ``fft_min_workgroups``, ``fft_direct_io``, ``fft_pass_twiddles``,
    ``fft_real_prefix``, ``fft_real_strided``, ``fft_real_pairs`` and ``fft_twiddle_math`` now (read again when an override or assignment
    changed the configuration)."""
    if _knobs[0] != config.generation:
        value = config.value
        _knobs[1] = Knobs(bool(value("fft_column_split")), bool(value("fft_two_butterflies")),
                          bool(value("fft_real_fused")), bool(value("fft_unrolled_loads")),
                          int(value("fft_min_workgroups")), bool(value("fft_direct_io")),
                          bool(value("fft_pass_twiddles")), bool(value("fft_real_prefix")),
                          bool(value("fft_real_strided")), bool(value("fft_real_pairs")),
                          bool(value("fft_twiddle_math")))
        _knobs[0] = config.generation
    return _knobs[1]


def stores_prefix() -> bool:
    """Whether the callers of ``ops_fft.c2c`` pass ``keep`` (the knob ``fft_real_prefix``): the
    odd-length real transforms store only the values they return."""
    return knobs().real_prefix


def two_butterflies(rmin: int) -> bool:
    """Whether workgroups whose smallest radix is ``rmin`` take one invocation per 8 elements
    (up to two butterflies per invocation and pass)."""
    return rmin >= 4 and knobs().two_butterflies


def row_group(ctx: Any, n: int, radices: tuple[int, ...], per: int, batch: int, rows: bool,
              two: bool = True) -> tuple[int, int]:
    """(transforms per workgroup, invocations) of a dispatch of ``batch`` transforms of length
    ``n`` whose group shape is ``per`` transforms: no more transforms per workgroup than the
    dispatch has, and (``rows``: elements contiguous on both sides, where more transforms per
    workgroup do not lengthen the runs read) at most ``ROW_INVOCATIONS`` invocations where one
    transform allows: small workgroups, several resident per multiprocessor, whose barriers
    stall only themselves. ``two``: as :func:`invocations`."""
    limit = min(int(ctx.limits.get("max-compute-invocations-per-workgroup", 256)), MAX_INVOCATIONS)
    while per > 1 and (per // 2 >= batch or (rows and invocations(n, per, radices, limit, two) > ROW_INVOCATIONS)):
        per //= 2
    return per, invocations(n, per, radices, limit, two)


def spread(ctx: Any, n: int, radices: tuple[int, ...], per: int, wg: int, batch: int,
           least: int = 1, two: bool = True) -> tuple[int, int]:
    """(transforms per workgroup, invocations) of a dispatch of ``batch`` transforms of length
    ``n`` taking ``per`` per workgroup: fewer (halved, down to ``least``) while the dispatch has
    fewer workgroups than the knob ``fft_min_workgroups`` (0: as given), so that a small
    transform runs on that many multiprocessors instead of a few full ones. ``two``: as
    :func:`invocations`."""
    target = knobs().min_workgroups
    if target <= 0 or -(-batch // per) >= target or per <= least:
        return per, wg
    limit = min(int(ctx.limits.get("max-compute-invocations-per-workgroup", 256)), MAX_INVOCATIONS)
    while per // 2 >= least and -(-batch // per) < target:
        per //= 2
    return per, invocations(n, per, radices, limit, two)


def direct_io(n: int, radices: tuple[int, ...], along_load: bool, along_store: bool, mode: int,
              blue: bool) -> tuple[bool, bool]:
    """Whether the first Stockham pass reads the source itself and whether the last one writes
    the destination itself (knob ``fft_direct_io``): not for Bluestein's transforms (two rounds
    of passes) and, for the store, not for the real forward steps (REAL 1 and 3: each result
    needs its partner's); along a contiguous axis only where a pass's butterflies per entry
    (``n`` over its radix) fill a 32-invocation warp's reads with one run, as the loops do."""
    if not knobs().direct_io or blue:
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

