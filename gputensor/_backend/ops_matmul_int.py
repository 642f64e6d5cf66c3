"""Integer matrix products with NumPy's semantics (products and sums wrap modulo 2^bits).

``matmul_int`` computes, for ``q < batch``, ``i < m``, ``j < n``::

    C[q, i, j] = sum_{p < k} A[q, i, p] * B[q, p, j]        (C += ... with accumulate=True)

on strided operands: every operand is a pointer to its element ``[0, 0, 0]`` plus three element
strides ``(batch, row, column)`` of any sign (0 for broadcast dimensions; C's must not make two
of its elements share memory). A and B may have any integer (or bool) dtype, 8- and 16-bit ones
included (read with the packed loads of ``wgsl_types.py``); values are converted to C's dtype,
the accumulation type, which is one of int32, uint32, int64, uint64 (int64/uint64 need
``shader-int64``). Because wrap-around arithmetic is a ring homomorphism, accumulating in a wider
type of the same signedness and truncating afterwards gives NumPy's 8/16-bit results bit for bit:
:func:`accumulator_dtype` names the type to use for each result dtype, and the caller casts.

The kernel (``_wgsl/matmul_int.wgsl``) is the register-tiled, double-buffered shared-memory
design of the float GEMM (``gemm_core.wgsl``) with integer multiply-add and a row-major C; the
tile configuration comes from ``ops_gemm.gemm_tiles`` (64-bit accumulators use the f64 choices:
same workgroup-memory footprint). A storage binding holds at most ``backend.max_window_bytes()``:
``ops_gemm.plan_blocks`` splits the problem into blocks of batch, m, n and k such that every
operand block fits one binding (k blocks after the first accumulate into C; integer addition
wraps, so the result is exact), and each block binds the window that covers exactly its elements.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

from .errors import invalid_argument, unsupported
from .ops_gemm import MAX_GRID_Z, Extent, block_starts, check_int, gemm_tiles, plan_blocks
from .wgsl_types import STORAGE_TYPES, convert, storage_type

__all__ = ["ACCUMULATORS", "INPUT_DTYPES", "KERNEL", "accumulator_dtype", "matmul_int"]

#: Kernel name of the template.
KERNEL = "matmul_int"

#: C dtype -> WGSL accumulation type.
ACCUMULATORS: dict[str, str] = {t.name: t.compute for t in STORAGE_TYPES.values()
                                if t.kind in "iu" and not t.packed}

#: dtypes A and B may have (bool and the integers).
INPUT_DTYPES: tuple[str, ...] = tuple(t.name for t in STORAGE_TYPES.values() if t.kind in "biu")



def accumulator_dtype(result_dtype: str) -> str:
    """The C dtype to accumulate a product of dtype ``result_dtype`` in: the result itself for
    32/64-bit integers, the 32-bit integer of the same signedness for 8/16-bit ones (truncating
    it to ``result_dtype`` afterwards gives NumPy's wrapped result). BackendError (invalid
    argument) for non-integer dtypes."""
    t = STORAGE_TYPES.get(str(result_dtype))
    if t is not None and t.kind in "biu":
        return t.accumulator
    raise invalid_argument(f"no integer accumulator for dtype {result_dtype!r}")


def _check_strides(name: str, strides: Any) -> tuple[int, int, int]:
    if not isinstance(strides, Sequence) or len(strides) != 3:
        raise invalid_argument(f"{name} must be 3 element strides (batch, row, column), not {strides!r}")
    out = []
    for s in strides:
        if isinstance(s, bool) or not isinstance(s, numbers.Integral):
            raise invalid_argument(f"{name} must hold integers, not {strides!r}")
        out.append(int(s))
    return out[0], out[1], out[2]


def _check_dtype(backend: Any, name: str, dtype: Any, allowed: Sequence[str]) -> str:
    dtype = str(dtype)
    if dtype not in allowed:
        raise invalid_argument(f"{name} must be one of {', '.join(allowed)}, not {dtype!r}")
    feature = STORAGE_TYPES[dtype].feature
    if not backend.supports(feature):
        raise unsupported(f"{dtype} needs the adapter feature {feature!r}, which this device lacks")
    return dtype


def _span(dims: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """(lowest, highest) element offset touched by dims [(size, stride), ...] from element 0."""
    lo = sum(s * (n - 1) for n, s in dims if s < 0)
    hi = sum(s * (n - 1) for n, s in dims if s > 0)
    return lo, hi


def _check_pointer(backend: Any, name: str, ptr: Any, itemsize: int,
                   dims: Sequence[tuple[int, int]]) -> None:
    """Validate that every element of the operand lies in one allocation, aligned."""
    if isinstance(ptr, bool) or not isinstance(ptr, numbers.Integral):
        raise invalid_argument(f"{name} must be a device pointer, not {ptr!r}")
    lo, hi = _span(dims)
    _, offset = backend.resolve(int(ptr) + lo * itemsize, (hi - lo + 1) * itemsize)
    if offset % itemsize:
        raise invalid_argument(f"{name} (offset {offset}) is not aligned to the item size {itemsize}")


def _check_no_overlap(dims: Sequence[tuple[int, int]]) -> None:
    """C's elements must be distinct: sorted by |stride|, each stride must step over everything
    the smaller ones reach."""
    reach = 0
    for n, s in sorted(((n, abs(s)) for n, s in dims if n > 1), key=lambda d: d[1]):
        if s <= reach:
            raise invalid_argument("C's strides make two of its elements share memory")
        reach += s * (n - 1)


def _extent(itemsize: int, terms: Sequence[tuple[str, int]]) -> Extent:
    """The byte extent of a block with the given (dimension, element stride) terms."""
    ordered = sorted(((dim, abs(s) * itemsize) for dim, s in terms), key=lambda t: -t[1])
    return Extent(itemsize, tuple(ordered))


def _window(backend: Any, ptr: int, itemsize: int, origin: int,
            dims: Sequence[tuple[int, int]]) -> tuple[Any, int]:
    """(binding, first) of the block whose element [0, 0, 0] is ``origin`` elements from ``ptr``
    and whose dimensions are ``dims``: the window covers exactly the touched range, ``first`` is
    the element index of the block's element [0, 0, 0] in it."""
    lo, hi = _span(dims)
    win = backend.window(ptr + (origin + lo) * itemsize, (hi - lo + 1) * itemsize, itemsize)
    return win.binding, win.first - lo


def matmul_int(backend: Any, m: int, n: int, k: int, batch: int,
               a: int, a_dtype: str, a_strides: Sequence[int],
               b: int, b_dtype: str, b_strides: Sequence[int],
               c: int, c_dtype: str, c_strides: Sequence[int],
               *, accumulate: bool = False) -> None:
    """``C[q, i, j] (+)= sum_p A[q, i, p] * B[q, p, j]`` in C's integer dtype, wrapping as NumPy.

    ``a``, ``b``, ``c`` point at element [0, 0, 0]; strides are in elements (batch, row, column),
    any sign. ``k == 0`` writes zeros (or leaves C unchanged with ``accumulate``) without reading
    A or B; ``m``, ``n`` or ``batch`` of 0 do nothing (after validation).

    Raises BackendError: invalid argument for negative sizes, malformed strides, C strides that
    alias elements, A/B dtypes outside ``INPUT_DTYPES``, a C dtype outside ``ACCUMULATORS``, or a
    pointer whose touched range is unknown, freed, misaligned or past its allocation's end;
    unsupported when the adapter lacks ``shader-int64`` for a 64-bit dtype. Nothing is recorded
    unless every check passes (C's pointer is checked whenever m, n, batch > 0; A's and B's
    whenever k > 0 as well).
    """
    m = check_int("m", m)
    n = check_int("n", n)
    k = check_int("k", k)
    batch = check_int("batch", batch)
    sa = _check_strides("a_strides", a_strides)
    sb = _check_strides("b_strides", b_strides)
    sc = _check_strides("c_strides", c_strides)
    a_dtype = _check_dtype(backend, "a_dtype", a_dtype, INPUT_DTYPES)
    b_dtype = _check_dtype(backend, "b_dtype", b_dtype, INPUT_DTYPES)
    c_dtype = _check_dtype(backend, "c_dtype", c_dtype, tuple(ACCUMULATORS))
    if not isinstance(accumulate, bool):
        raise invalid_argument(f"accumulate must be a bool, not {accumulate!r}")
    if m == 0 or n == 0 or batch == 0:
        return
    ta, tb, tc = storage_type(a_dtype), storage_type(b_dtype), storage_type(c_dtype)
    if k == 0:
        # A and B are not read: C is bound in their place, so type them as C (a binding too
        # small for their element type would be invalid).
        ta = tb = tc
    a_dims = [(batch, sa[0]), (m, sa[1]), (max(k, 1), sa[2])]
    b_dims = [(batch, sb[0]), (max(k, 1), sb[1]), (n, sb[2])]
    c_dims = [(batch, sc[0]), (m, sc[1]), (n, sc[2])]
    _check_no_overlap(c_dims)
    _check_pointer(backend, "C", c, tc.itemsize, c_dims)
    if k > 0:
        _check_pointer(backend, "A", a, ta.itemsize, a_dims)
        _check_pointer(backend, "B", b, tb.itemsize, b_dims)

    extents = [
        _extent(ta.itemsize, [("batch", sa[0]), ("m", sa[1]), ("k", sa[2])]),
        _extent(tb.itemsize, [("batch", sb[0]), ("k", sb[1]), ("n", sb[2])]),
        _extent(tc.itemsize, [("batch", sc[0]), ("m", sc[1]), ("n", sc[2])]),
    ]
    blocks = plan_blocks({"batch": batch, "m": m, "n": n, "k": max(k, 1)},
                         extents if k > 0 else extents[2:], backend.max_window_bytes(),
                         caps={"batch": MAX_GRID_Z})
    acc = ACCUMULATORS[c_dtype]
    ctx = backend.context
    tiles = gemm_tiles(ctx, "f64" if tc.itemsize == 8 else "f32", min(m, blocks["m"]),
                       min(n, blocks["n"]), min(batch, blocks["batch"]))
    defines = {
        **tiles.defines(),
        "ACC": acc,
        "A_ARRAY": ta.array,
        "B_ARRAY": tb.array,
        "LOAD_A": convert(ta.load_expr("A", "i"), ta.compute, acc),
        "LOAD_B": convert(tb.load_expr("B", "i"), tb.compute, acc),
        "A_K_FAST": "true" if abs(sa[2]) <= abs(sa[1]) else "false",
        "B_N_FAST": "true" if abs(sb[2]) <= abs(sb[1]) else "false",
    }

    if k == 0 and accumulate:
        return  # C += nothing
    # Build every dispatch (windows validated) before recording any.
    records = []
    k_blocks = block_starts(k, blocks["k"]) if k > 0 else [(0, 0)]
    for q0, qb in block_starts(batch, blocks["batch"]):
        for j0, nb in block_starts(n, blocks["n"]):
            for i0, mb in block_starts(m, blocks["m"]):
                c_bind, c_first = _window(backend, c, tc.itemsize, q0 * sc[0] + i0 * sc[1] + j0 * sc[2],
                                          [(qb, sc[0]), (mb, sc[1]), (nb, sc[2])])
                tiles_m = -(-mb // tiles.bm)
                tiles_n = -(-nb // tiles.bn)
                for kb_index, (p0, kb) in enumerate(k_blocks):
                    if kb > 0:
                        a_bind, a_first = _window(
                            backend, a, ta.itemsize, q0 * sa[0] + i0 * sa[1] + p0 * sa[2],
                            [(qb, sa[0]), (mb, sa[1]), (kb, sa[2])])
                        b_bind, b_first = _window(
                            backend, b, tb.itemsize, q0 * sb[0] + p0 * sb[1] + j0 * sb[2],
                            [(qb, sb[0]), (kb, sb[1]), (nb, sb[2])])
                    else:  # k == 0: A and B are not read; bind C in their place
                        a_bind = b_bind = c_bind
                        a_first = b_first = 0
                    params = [mb, nb, kb,
                              a_first, sa[1], sa[2], sa[0],
                              b_first, sb[1], sb[2], sb[0],
                              c_first, sc[1], sc[2], sc[0],
                              tiles_m, tiles_n, int(accumulate or kb_index > 0)]
                    gx, gy, _ = ctx.fold_grid(tiles_m * tiles_n)
                    records.append((params, [a_bind, b_bind, c_bind], (gx, gy, qb)))
    for params, bindings, grid in records:
        ctx.dispatch(KERNEL, params, bindings, grid, defines)
