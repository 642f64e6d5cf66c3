"""The subgroup scatter kernel of the radix sort (``sort_scatter_sg``): the one-time probe of a
context's subgroup layout (:func:`subgroup_probe`, ``subgroup_probe.wgsl``) and the kernel's
counter rows that fit the adapter's workgroup memory (:func:`scatter_rows`). ``SUBGROUP_RANK``
False (``GPUTENSOR_SORT_SUBGROUP=0``) keeps the counting-sort kernel."""

from __future__ import annotations

import weakref
from typing import Any

from . import config
from .errors import BackendError
from .sort_common import WG

__all__ = ["ITEMS", "SUBGROUP_RANK", "probe_layout_ok", "scatter_rows", "subgroup_probe"]

#: Elements per invocation of the radix kernels (tile = 256 * ITEMS). 16 was measured slower on
#: an H200 (the subgroup scatter kernel took 1.83 instead of 1.46 ms for a 16M float32 sort, though
#: histograms and scans got 15% cheaper).
ITEMS = 8
#: Scatter with the subgroup kernel where the probe allows it (False: always the counting-sort
#: kernel). ``GPUTENSOR_SORT_SUBGROUP=0`` in the environment sets it False at import.
SUBGROUP_RANK: bool = config.value("sort_subgroup")
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
