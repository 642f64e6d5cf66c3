"""The geometry of a reduction (``ops_reduce``): its iteration dims and sub-problems
(``_Dim``, ``_View``), canonicalising and measuring them, and the workgroup shape and chunking
of a piece (``_tile``, ``_tile_vector``, ``_chunks``). Pure host-side arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .reduce_knobs import MIN_PER_INVOCATION, _knobs

@dataclass(frozen=True)
class _Dim:
    """One dim of the iteration: size, source stride, and the destination stride (kept dims) or
    the stride of the reduced linear index (reduced dims); strides in elements."""

    n: int
    s: int
    t: int


@dataclass(frozen=True)
class _View:
    """A sub-problem: element offsets (from the source/destination pointers and of the reduced
    linear index) of its element [0, ..., 0], and its kept and reduced dims, outermost first."""

    src: int
    dst: int
    idx: int
    kept: tuple[_Dim, ...]
    red: tuple[_Dim, ...]

    @property
    def nkeep(self) -> int:
        return math.prod(d.n for d in self.kept)

    @property
    def nred(self) -> int:
        return math.prod(d.n for d in self.red)


def _canonical(dims: Sequence[_Dim], base_s: int, base_t: int) -> tuple[tuple[_Dim, ...], int, int]:
    """Drop size-1 dims, make source strides non-negative, sort outermost first, merge."""
    out = []
    for d in dims:
        if d.n == 1:
            continue
        if d.s < 0:
            base_s += (d.n - 1) * d.s
            base_t += (d.n - 1) * d.t
            d = _Dim(d.n, -d.s, -d.t)
        out.append(d)
    out.sort(key=lambda d: (d.s, abs(d.t)), reverse=True)
    merged: list[_Dim] = []
    for d in out:
        if merged and merged[-1].s == d.s * d.n and merged[-1].t == d.t * d.n:
            merged[-1] = _Dim(merged[-1].n * d.n, d.s, d.t)
        else:
            merged.append(d)
    return tuple(merged), base_s, base_t


def _extent(dims: Iterable[_Dim], attr: str = "s") -> tuple[int, int]:
    """(lowest, highest) element offset the dims reach from offset 0 along stride ``attr``."""
    lo = hi = 0
    for d in dims:
        step = (d.n - 1) * getattr(d, attr)
        lo += min(0, step)
        hi += max(0, step)
    return lo, hi


def _pow2_ceil(x: int) -> int:
    return 1 if x <= 1 else 1 << (x - 1).bit_length()


def _pow2_floor(x: int) -> int:
    return 1 if x <= 1 else 1 << (x.bit_length() - 1)


def _row_major(shape: Sequence[int]) -> list[int]:
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]
    return strides


#: Workgroup shapes (TX outputs x TY invocations per output), all of WORKGROUP_SIZE invocations.
_TILES = ((1, 256), (4, 64), (16, 16), (64, 4), (256, 1))


def _tile(nkeep: int, nred: int, kept: Sequence[_Dim], red: Sequence[_Dim]) -> tuple[int, int]:
    """Workgroup shape (TX, TY) for ``nkeep`` outputs of ``nred`` elements.

    Row case (the reduced elements are innermost in memory, or one output): as many invocations
    per output as the reduced range keeps busy (>= 8 elements each), consecutive invocations on
    consecutive elements. Column case (kept dims innermost): TX consecutive outputs per
    workgroup, so consecutive invocations read consecutive elements, and TY slices of the
    reduced range per output; one invocation per output when the range is short.
    """
    ks = kept[-1].s if kept else 0
    rs = red[-1].s if red else 0
    if nkeep == 1:
        return _TILES[0]
    if nred >= 2 and bool(red) and rs <= ks:
        for tx, ty in _TILES:
            if nred >= 8 * ty:
                return tx, ty
        return _TILES[-1]
    if nred <= 8:
        return _TILES[-1]
    for tx, ty in reversed(_TILES[:-1]):
        if nkeep >= tx:
            return tx, ty
    return _TILES[0]


def _tile_vector(nkeep: int, nred: int, width: int) -> tuple[int, int]:
    """``_tile`` of the vector path (a contiguous reduced range): one output per workgroup when
    there is one, else the first tile keeping ``vec4_vectors`` vectors of ``width`` lanes per
    invocation (consecutive invocations of an output read consecutive vectors)."""
    if nkeep == 1:
        return _TILES[0]
    for tx, ty in _TILES:
        if nred >= width * _knobs().vec4_vectors * ty:
            return tx, ty
    return _TILES[-1]


def _chunks(nkeep: int, nred: int, tx: int, ty: int, width: int = 0) -> tuple[int, int]:
    """(nchunks, chunk_len): split the reduced range when outputs alone give few workgroups.
    The vector path (``width`` lanes) cuts it into whole unrolled steps of the workgroup (whole
    vectors when shorter), so that chunks of an aligned range start on whole vectors."""
    ktiles = -(-nkeep // tx)
    n = 1
    target = _knobs().target_workgroups
    if ktiles < target:
        n = max(1, min(-(-target // ktiles), nred // (ty * MIN_PER_INVOCATION)))
    if nred == 0:
        return 1, 0
    length = -(-nred // n)
    if width and n > 1:
        step = width * ty * _knobs().vec4_unroll
        unit = step if length >= 8 * step else width
        length = -(-length // unit) * unit
    return -(-nred // length), length
