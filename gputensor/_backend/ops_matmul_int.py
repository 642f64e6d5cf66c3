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
``layout.plan_blocks`` splits the problem into blocks of batch, m, n and k such that every
operand block fits one binding (k blocks after the first accumulate into C; integer addition
wraps, so the result is exact), and each block binds the window that covers exactly its elements.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .errors import invalid_argument
from .launch import record_dispatches, strided_window
from .layout import block_starts, plan_blocks, strided_extent
from .ops_gemm import MAX_GRID_Z, gemm_tiles
from .validate import check_distinct, check_dtype, check_int, check_strided_pointer, check_strides
from .wgsl_types import convert, storage_type

__all__ = ["ACCUMULATORS", "INPUT_DTYPES", "KERNEL", "accumulator_dtype", "matmul_int"]

#: Kernel name of the template.
KERNEL = "matmul_int"

#: C dtype -> WGSL accumulation type.
ACCUMULATORS: dict[str, str] = {"int32": "i32", "uint32": "u32", "int64": "i64", "uint64": "u64"}

#: dtypes A and B may have.
INPUT_DTYPES: tuple[str, ...] = ("bool", "int8", "int16", "int32", "int64",
                                 "uint8", "uint16", "uint32", "uint64")

_ACCUMULATOR_OF = {
    "bool": "uint32", "int8": "int32", "int16": "int32", "int32": "int32", "int64": "int64",
    "uint8": "uint32", "uint16": "uint32", "uint32": "uint32", "uint64": "uint64",
}


def accumulator_dtype(result_dtype: str) -> str:
    """The C dtype to accumulate a product of dtype ``result_dtype`` in: the result itself for
    32/64-bit integers, the 32-bit integer of the same signedness for 8/16-bit ones (truncating
    it to ``result_dtype`` afterwards gives NumPy's wrapped result). BackendError (invalid
    argument) for non-integer dtypes."""
    try:
        return _ACCUMULATOR_OF[str(result_dtype)]
    except KeyError:
        raise invalid_argument(f"no integer accumulator for dtype {result_dtype!r}") from None


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
    sa = check_strides("a_strides", a_strides, 3, "(batch, row, column)")
    sb = check_strides("b_strides", b_strides, 3, "(batch, row, column)")
    sc = check_strides("c_strides", c_strides, 3, "(batch, row, column)")
    a_dtype = check_dtype(backend, "a_dtype", str(a_dtype), INPUT_DTYPES).name
    b_dtype = check_dtype(backend, "b_dtype", str(b_dtype), INPUT_DTYPES).name
    c_dtype = check_dtype(backend, "c_dtype", str(c_dtype), tuple(ACCUMULATORS)).name
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
    check_distinct("C", c_dims)
    check_strided_pointer(backend, "C", c, tc.itemsize, c_dims)
    if k > 0:
        check_strided_pointer(backend, "A", a, ta.itemsize, a_dims)
        check_strided_pointer(backend, "B", b, tb.itemsize, b_dims)

    extents = [
        strided_extent([("batch", sa[0]), ("m", sa[1]), ("k", sa[2])], ta.itemsize),
        strided_extent([("batch", sb[0]), ("k", sb[1]), ("n", sb[2])], tb.itemsize),
        strided_extent([("batch", sc[0]), ("m", sc[1]), ("n", sc[2])], tc.itemsize),
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
                c_bind, c_first = strided_window(backend, c, tc.itemsize, q0 * sc[0] + i0 * sc[1] + j0 * sc[2],
                                                 [(qb, sc[0]), (mb, sc[1]), (nb, sc[2])])
                tiles_m = -(-mb // tiles.bm)
                tiles_n = -(-nb // tiles.bn)
                for kb_index, (p0, kb) in enumerate(k_blocks):
                    if kb > 0:
                        a_bind, a_first = strided_window(
                            backend, a, ta.itemsize, q0 * sa[0] + i0 * sa[1] + p0 * sa[2],
                            [(qb, sa[0]), (mb, sa[1]), (kb, sa[2])])
                        b_bind, b_first = strided_window(
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
    record_dispatches(ctx, KERNEL, defines, records)
