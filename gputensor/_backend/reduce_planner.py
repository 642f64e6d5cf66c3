"""The reduction planner (``ops_reduce``): splits a canonical view into dispatches that fit
the binding window and ``MAX_RANK``, picks each piece's tile, chunks and vector width, and
writes the steps with their parameter words and placeholders (``_Planner``).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .errors import unsupported
from .reduce_geometry import _Dim, _View, _chunks, _extent, _row_major, _tile, _tile_vector
from .reduce_knobs import MAX_COUNT, MAX_RANK, _knobs
from .reduce_ops import _Types
from .reduce_program import _Step
from .reduce_prologue import _PrologueCode

@dataclass
class _Planner:
    """Splits a canonical view into steps (see the docstring of ``ops_reduce``)."""

    types: _Types
    count: int
    ddof: float
    window: int  # usable bytes of one binding
    steps: list[_Step] = field(default_factory=list)
    prologue: _PrologueCode | None = None  # fused source: virtual, never split for its window
    vectors: bool = False  # bindings start on whole vectors (the vector path may be used)

    @property
    def src_size(self) -> int:
        return self.types.src.itemsize

    @property
    def dst_size(self) -> int:
        return self.types.dst.itemsize

    def solve(self, view: _View) -> None:
        """Plan the dispatches of ``view``, splitting it until every binding fits."""
        if view.nkeep == 0:
            return
        if len(view.kept) > MAX_RANK:
            self._split_kept(view, 0, 1)
            return
        dlo, dhi = _extent(view.kept, "t")
        if (dhi - dlo + 1) * self.dst_size > self.window:
            i = max(range(len(view.kept)), key=lambda i: abs(view.kept[i].t) * (view.kept[i].n - 1))
            rest = (dhi - dlo) - (view.kept[i].n - 1) * abs(view.kept[i].t)
            self._split_kept(view, i, self._fit(view.kept[i].n, abs(view.kept[i].t), rest, self.window // self.dst_size))
            return
        src_limit = MAX_COUNT if self.prologue is not None else self.window // self.src_size
        kept_span = _extent(view.kept)[1]
        red_span = _extent(view.red)[1]
        if view.nred == 0:
            pieces = [view]
        elif kept_span + red_span + 1 <= src_limit and len(view.red) <= MAX_RANK:
            pieces = [view]
        else:
            if kept_span + 1 > src_limit // 2:
                i = max(range(len(view.kept)), key=lambda i: view.kept[i].s * (view.kept[i].n - 1))
                rest = kept_span - view.kept[i].s * (view.kept[i].n - 1)
                self._split_kept(view, i, self._fit(view.kept[i].n, view.kept[i].s, rest, src_limit // 2))
                return
            pieces = self._split_red(view, src_limit - kept_span)
        nkeep = view.nkeep
        tiles = []
        for p in pieces:
            width = self._vector(p) if len(pieces) == 1 or not self.types.spec.kind.vector_whole else 0
            if width:
                tx, ty = _tile_vector(nkeep, p.nred, width)
                nchunks, chunk_len = _chunks(nkeep, p.nred, tx, ty, width)
            else:
                tx, ty = _tile(nkeep, p.nred, p.kept, p.red)
                nchunks, chunk_len = _chunks(nkeep, p.nred, tx, ty)
            tiles.append((p, tx, ty, nchunks, chunk_len, width))
        slots = sum(t[3] for t in tiles)
        if slots == 1:
            p, tx, ty, nchunks, chunk_len, width = tiles[0]
            self._step(p, tx, ty, nchunks, chunk_len, in_partial=False, out_partial=False, width=width)
            return
        if nkeep * slots * self.types.shared_bytes > self.window:
            if nkeep == 1:  # cannot happen with sane limits: slots are bounded by the window
                raise unsupported("reduction needs more partial states than one binding holds")
            i = max(range(len(view.kept)), key=lambda i: view.kept[i].n)
            self._split_kept(view, i, max(1, view.kept[i].n // 2))
            return
        base = 0
        for p, tx, ty, nchunks, chunk_len, width in tiles:
            self._step(p, tx, ty, nchunks, chunk_len, in_partial=False, out_partial=True,
                       slots=slots, slot_base=base, width=width)
            base += nchunks
        # Combine the slots of each output (in slot order) and apply the post-map.
        shape = [d.n for d in view.kept]
        kept = tuple(_Dim(d.n, s * slots, d.t) for d, s in zip(view.kept, _row_major(shape)))
        final = _View(0, view.dst, 0, kept, (_Dim(slots, 1, 0),))
        tx, ty = _tile(nkeep, slots, kept, final.red)
        self._step(final, tx, ty, 1, slots, in_partial=True, out_partial=False, slots=slots)

    def _vector(self, view: _View) -> int:
        """Lanes of the vector path for a first-pass piece (0: the scalar loads): reduce_plain
        without a prologue, an unpacked 4- or 8-byte source, one reduced dim of stride 1 at least
        ``vec4_min_length`` long (the kept dims are free), bindings on whole vectors, and a source
        window of at least 16 elements (so its vector binding is not empty)."""
        src = self.types.src
        knobs = _knobs()
        kind = self.types.spec.kind
        if (not knobs.vec4 or not self.vectors or self.prologue is not None or not kind.vector
                or (kind.vector_knob and not getattr(knobs, kind.vector_knob))
                or src.packed or src.complex or src.emulated or src.itemsize not in (4, 8)):
            return 0
        red = view.red
        if len(red) != 1 or red[0].s != 1 or red[0].n < knobs.vec4_min_length or not kind.vector_allowed(red[0]):
            return 0
        if _extent(view.kept)[1] + red[0].n < 16:
            return 0
        return 16 // src.itemsize

    @staticmethod
    def _fit(n: int, stride: int, rest: int, limit: int) -> int:
        """Largest range length along a dim of ``n`` x ``stride`` keeping the span within
        ``limit`` elements when the other dims span ``rest``; balanced over the pieces."""
        if stride == 0:
            return n
        length = max(1, min(n, (limit - 1 - rest) // stride + 1))
        pieces = -(-n // length)
        return -(-n // pieces)

    def _split_kept(self, view: _View, i: int, length: int) -> None:
        d = view.kept[i]
        for a in range(0, d.n, length):
            m = min(length, d.n - a)
            kept = view.kept[:i] + ((_Dim(m, d.s, d.t),) if m > 1 else ()) + view.kept[i + 1:]
            self.solve(replace(view, src=view.src + a * d.s, dst=view.dst + a * d.t, kept=kept))

    def _split_red(self, view: _View, limit: int) -> list[_View]:
        """Pieces of the reduced dims (the kept dims unchanged), each spanning at most ``limit``
        source elements and of rank at most MAX_RANK."""
        red = view.red
        if _extent(red)[1] + 1 <= limit and len(red) <= MAX_RANK:
            return [view]
        d, rest = red[0], red[1:]
        rest_span = _extent(rest)[1]
        length = self._fit(d.n, d.s, rest_span, limit) if len(red) <= MAX_RANK else 1
        if rest_span + 1 > limit:
            length = 1
        out = []
        for a in range(0, d.n, length):
            m = min(length, d.n - a)
            sub = ((_Dim(m, d.s, d.t),) if m > 1 else ()) + rest
            out += self._split_red(replace(view, src=view.src + a * d.s, idx=view.idx + a * d.t, red=sub), limit)
        return out

    def _step(self, view: _View, tx: int, ty: int, nchunks: int, chunk_len: int, *,
              in_partial: bool, out_partial: bool, slots: int = 1, slot_base: int = 0, width: int = 0) -> None:
        types = self.types
        nkeep, nred = view.nkeep, view.nred
        kept = view.kept or (_Dim(1, 0, 0),)
        red = view.red or (_Dim(1, 0, 0),)
        kernel = types.spec.kernel
        npart = nkeep * slots
        if in_partial:
            regions: list[tuple[Any, ...]] = [("scratch", "val", npart * types.shared_bytes)]
        elif nred > 0:
            regions = [("src", view.src, _extent(view.kept)[1] + _extent(view.red)[1] + 1)]
        else:
            regions = [("dummy",)]
        if out_partial:
            regions.append(("scratch", "val", npart * types.shared_bytes))
        else:
            lo, hi = _extent(view.kept, "t")
            regions.append(("dst", view.dst + lo, hi - lo + 1, -lo))
        partial = in_partial or out_partial
        reduction = types.spec.kind
        for name in reduction.state:
            size = reduction.state_bytes(name, types.shared_bytes)
            regions.append(("scratch", name, npart * size) if partial else ("dummy",))
        if width:  # the source again, as vectors (binding 3 of the vector kind)
            regions.append(("srcv",) + regions[0][1:])
        ktiles = -(-nkeep // tx)

        def dims(values: Sequence[int]) -> list[int]:
            return [int(v) & 0xFFFFFFFF for v in values] + [0] * (MAX_RANK - len(values))

        params = [
            nkeep, nred, ktiles, nchunks, chunk_len, 0, 0, slots, slot_base,
            view.idx & 0xFFFFFFFF, self.count, struct.unpack("<I", struct.pack("<f", self.ddof))[0],
            len(kept), len(red), 0, 0,
        ]
        params += dims([d.n for d in kept]) + dims([d.s for d in kept]) + dims([d.t for d in kept])
        params += dims([d.n for d in red]) + dims([d.s for d in red]) + dims([d.t for d in red])
        fused = self.prologue is not None and not in_partial
        defines = dict(types.defines(in_partial=in_partial, out_partial=out_partial,
                                     prologue=self.prologue if fused else None))
        defines.update(TX=tx, TY=ty, KEEP_RANK1="true" if len(kept) == 1 else "false",
                       RED_RANK1="true" if len(red) == 1 else "false")
        if width:
            defines.update(types.spec.kind.vector_defines(types, width))
        self.steps.append(_Step(kernel, defines, tuple(params), tuple(regions), ktiles * nchunks, fused))
