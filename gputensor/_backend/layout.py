"""Shape and layout arithmetic of the op modules, pure Python (no wgpu): the one place for
merging dimensions, measuring the span a strided view touches and splitting work into windows.

* ``merge_dims``: drop size-1 dimensions and merge neighbours that are contiguous for every
  operand (CuPy's ``_reduce_dims`` idea).
* ``extent`` / ``strided_span``: the element offsets a strided view (strides of any sign)
  touches, relative to its element [0, ..., 0].
* ``Extent`` / ``strided_extent`` / ``plan_blocks`` / ``block_starts``: window planning over
  named dimensions (gemm, conv2d, matmul_int, scan): the block sizes such that every operand's
  block fits one storage binding, and the blocks themselves.
* ``plan_chunks``: window planning of a row-major iteration space by its leading dimensions
  (the elementwise launcher and user kernels).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .errors import invalid_argument

__all__ = ["Extent", "block_starts", "extent", "merge_dims", "plan_blocks", "plan_chunks",
           "strided_extent", "strided_span"]


def merge_dims(shape: Sequence[int], strides: Sequence[Sequence[int]]) -> tuple[list[int], list[list[int]]]:
    """Drop size-1 dims and merge neighbours that are contiguous for every stride list
    (``strides[k][d]`` is operand k's stride of dimension d; dimension order is kept). A shape
    of one element becomes ``[1]`` with every stride 1 (it takes the contiguous path)."""
    dims = [(n, [s[d] for s in strides]) for d, n in enumerate(shape) if n != 1]
    if not dims:  # one element: its strides do not matter, so it takes the contiguous path
        return [1], [[1] for _ in strides]
    out_shape = [dims[0][0]]
    out_strides = [[st] for st in dims[0][1]]
    for n, sts in dims[1:]:
        if all(prev[-1] == st * n for prev, st in zip(out_strides, sts)):
            out_shape[-1] *= n
            for prev, st in zip(out_strides, sts):
                prev[-1] = st
        else:
            out_shape.append(n)
            for prev, st in zip(out_strides, sts):
                prev.append(st)
    return out_shape, out_strides


def extent(shape: Sequence[int], strides: Sequence[int]) -> tuple[int, int]:
    """The half-open range ``[lo, stop)`` of element offsets, relative to element [0, ..., 0],
    that a view of ``shape`` with element ``strides`` (any sign) touches; ``(0, 0)`` when the
    view is empty. The one implementation of this for the backend and the frontend."""
    lo = hi = 0
    for n, s in zip(shape, strides):
        if n == 0:
            return 0, 0
        if s < 0:
            lo += s * (n - 1)
        else:
            hi += s * (n - 1)
    return lo, hi + 1


def strided_span(dims: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """``(lowest, highest)`` element offset, relative to element [0, ...], that an operand with
    dimensions ``dims`` = [(size, stride), ...] (sizes >= 1, strides of any sign) touches."""
    lo, stop = extent([n for n, _ in dims], [s for _, s in dims])
    return lo, stop - 1


@dataclass(frozen=True)
class Extent:
    """The touched span of one operand as a function of the block sizes:
    ``base + sum((block[dim] - 1) * stride for dim, stride in terms)`` (in elements or bytes,
    as the planner's limit).

    ``terms`` are ordered outermost (largest stride) first. A column-major r x c block with
    leading dimension ld is ``Extent(1, (("c", ld), ("r", 1)))``: (c-1)*ld + r elements.
    """

    base: int
    terms: tuple[tuple[str, int], ...]

    def span(self, blocks: Mapping[str, int]) -> int:
        """Elements from the block's first touched element to its last, inclusive."""
        return self.base + sum((blocks[dim] - 1) * stride for dim, stride in self.terms)


def strided_extent(terms: Sequence[tuple[str, int]], itemsize: int = 1, base: int = 1) -> Extent:
    """The extent of an operand whose block dimension ``dim`` has element stride ``stride`` (any
    sign) for each ``(dim, stride)`` of ``terms``, that always touches ``base`` elements: from its
    lowest to its highest touched offset it spans ``base + sum((block - 1) * |stride|)``
    elements, times ``itemsize`` (1: the extent counts elements, else bytes). Zero strides add
    nothing and are left out."""
    ordered = sorted(((dim, abs(s) * itemsize) for dim, s in terms if s), key=lambda t: -t[1])
    return Extent(base * itemsize, tuple(ordered))


def plan_blocks(
    sizes: Mapping[str, int],
    extents: Sequence[Extent],
    limit: int,
    caps: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """Block sizes (per dimension of ``sizes``) such that every extent's span is <= ``limit``.

    Each over-limit operand shrinks its outermost dimension first (the one whose stride makes
    the span large), down to the largest block that fits, moving inwards only when even one
    step of that dimension is too much. ``caps`` bounds blocks further (e.g. the grid's z).
    Blocks are then evened out (ceil(size / count)), which never grows a span. Raises
    ValueError when even blocks of 1 do not fit, or for a size below 1.
    """
    blocks = {dim: int(size) for dim, size in sizes.items()}
    if any(size < 1 for size in blocks.values()):
        raise ValueError(f"block planning needs positive sizes, got {dict(sizes)}")
    for dim, cap in (caps or {}).items():
        blocks[dim] = max(1, min(blocks[dim], int(cap)))
    while True:
        over = next((e for e in extents if e.span(blocks) > limit), None)
        if over is None:
            break
        before = dict(blocks)
        for dim, stride in over.terms:
            if blocks[dim] == 1 or stride == 0:
                continue
            rest = over.span(blocks) - (blocks[dim] - 1) * stride
            if rest <= limit:
                blocks[dim] = min(blocks[dim], (limit - rest) // stride + 1)
                break
            blocks[dim] = 1
        if blocks == before:
            raise ValueError(f"an operand block of {over.base} elements exceeds the limit {limit}")
    for dim, size in sizes.items():
        count = -(-int(size) // blocks[dim])
        blocks[dim] = -(-int(size) // count)
    return blocks


def block_starts(size: int, block: int) -> list[tuple[int, int]]:
    """``(start, length)`` of each block of ``size`` in steps of ``block``."""
    return [(start, min(block, size - start)) for start in range(0, size, block)]


def plan_chunks(shape: list[int], strides: list[list[int]], itemsizes: list[int],
                limit: int) -> list[tuple[list[int], list[int]]]:
    """Split a row-major iteration space so each operand's touched bytes fit ``limit``.

    Returns ``(sub_shape, element_offsets)`` pairs; ``element_offsets[k]`` is where operand k's
    element [0,...,0] of the chunk lies relative to the whole view's. Splits the outermost dim into
    row blocks; when one row is still too large it recurses into the remaining dims.
    """
    def fits(shp: Sequence[int], sts: list[Sequence[int]]) -> bool:
        for st, size in zip(sts, itemsizes):
            lo, stop = extent(shp, st)
            if (stop - lo) * size > limit:
                return False
        return True

    if fits(shape, strides):
        return [(list(shape), [0] * len(strides))]
    rows = shape[0]
    inner = [st[1:] for st in strides]
    lo_rows, hi_rows = 1, rows
    if not fits([1] + shape[1:], strides):
        if len(shape) == 1:
            raise invalid_argument("one element does not fit a binding")  # pragma: no cover
        chunks = []
        for r in range(rows):
            for sub_shape, offs in plan_chunks(shape[1:], inner, itemsizes, limit):
                chunks.append(([1] + sub_shape, [r * st[0] + o for st, o in zip(strides, offs)]))
        return chunks
    while lo_rows < hi_rows:  # largest row block that fits
        mid = (lo_rows + hi_rows + 1) // 2
        if fits([mid] + shape[1:], strides):
            lo_rows = mid
        else:
            hi_rows = mid - 1
    block = lo_rows
    return [([min(block, rows - r)] + shape[1:], [r * st[0] for st in strides]) for r in range(0, rows, block)]
