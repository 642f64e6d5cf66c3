"""Integer matrix products with NumPy's semantics (products and sums wrap modulo 2^bits).

``matmul_int`` computes, for ``q < batch``, ``i < m``, ``j < n``::

    C[q, i, j] = sum_{p < k} A[q, i, p] * B[q, p, j]        (C += ... with accumulate=True)

on strided operands: every operand is a pointer to its element ``[0, 0, 0]`` plus three element
strides ``(batch, row, column)`` of any sign (0 for broadcast dimensions; C's must not make two
of its elements share memory). A and B may have any integer (or bool) dtype, 8- and 16-bit ones
included (read with the packed loads of ``wgsl_types.py``); values are converted to C's dtype,
the accumulation type, which is one of int32, uint32, int64, uint64. Because wrap-around arithmetic is a ring homomorphism, accumulating in a wider
type of the same signedness and truncating afterwards gives NumPy's 8/16-bit results bit for bit:
:func:`accumulator_dtype` names the type to use for each result dtype, and the caller casts.

The kernel (``_wgsl/matmul_int.wgsl``) is the register-tiled, double-buffered shared-memory
design of the float GEMM (``gemm_core.wgsl``) with integer multiply-add and a row-major C; the
tile configuration comes from ``gemm_tiling.gemm_tiles`` (64-bit accumulators use the f64 choices:
same workgroup-memory footprint). Where the adapter lacks ``shader-int64`` and int64/uint64 are
two 32-bit words (``wgsl_types.EMULATED_INT64``), a C of those dtypes runs
``_wgsl/matmul_int_emul.wgsl`` instead: the same parameters, bindings and grid (so the same plan
below), tiles of ``EMULATED_TILE`` x ``EMULATED_TILE`` and exact 64-bit wrapping products from
32-bit words. A storage binding holds at most ``backend.max_window_bytes()``:
``layout.plan_blocks`` splits the problem into blocks of batch, m, n and k such that every
operand block fits one binding (k blocks after the first accumulate into C; integer addition
wraps, so the result is exact), and each block binds the window that covers exactly its elements.

Where the device has subgroup matrices (Dawn's ``chromium-experimental-subgroup-matrix``) and A
and B are both int8 (C int32) or both uint8 (C uint32), ``_wgsl/matmul_int8_sgmatrix.wgsl``
runs in place of the generic kernel, on tensor cores (``int8_sgmatrix.plan`` chooses it, the
``int8_sgmatrix`` knob turns it off): the same parameters, bindings and grid, a larger tile.

The dispatches of a call structure (sizes, dtypes, strides, ``accumulate``) are planned once, as a
``launch.LaunchProgram`` kept per backend when the arguments are plain ints and tuples of ints;
a repeated call checks its pointers and replays the program.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import config, int8_sgmatrix
from .errors import invalid_argument
from .launch import LaunchProgram, strided_region
from .layout import block_starts, plan_blocks, strided_extent
from .gemm_tiling import MAX_GRID_Z, gemm_tiles
from .plan_cache import PlanCache
from .validate import check_distinct, check_dtype, check_int, check_strided_pointer, check_strides
from .wgsl_types import STORAGE_TYPES, convert, storage_type

__all__ = ["ACCUMULATORS", "EMULATED_TILE", "INPUT_DTYPES", "KERNEL", "KERNEL_EMULATED", "accumulator_dtype",
           "matmul_int"]

#: Kernel name of the template.
KERNEL = "matmul_int"
#: Kernel of a C of int64/uint64 emulated as two 32-bit words (same parameters and grid).
KERNEL_EMULATED = "matmul_int_emul"
#: Rows and columns of C per workgroup of the emulated kernel (its invocations: half as many per side).
EMULATED_TILE = 32

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
    pointer whose touched range is unknown, freed, misaligned or past its allocation's end.
    Nothing is recorded
    unless every check passes (C's pointer is checked whenever m, n, batch > 0; A's and B's
    whenever k > 0 as well).
    """
    key = None
    if (type(m) is int and type(n) is int and type(k) is int and type(batch) is int
            and type(a_dtype) is str and type(b_dtype) is str and type(c_dtype) is str
            and type(a_strides) is tuple and type(b_strides) is tuple and type(c_strides) is tuple
            and type(accumulate) is bool and getattr(backend, "_ctx", None) is not None
            and all(type(v) is int for v in (*a_strides, *b_strides, *c_strides))):
        # (the tile chooser is part of the key: tests replace it to force configurations; so is
        # the knobs' generation: the int8_sgmatrix knobs choose the kernel)
        key = (m, n, k, batch, a_dtype, b_dtype, c_dtype, a_strides, b_strides, c_strides, accumulate,
               backend.max_window_bytes(), gemm_tiles, config.generation)
        call = _plans(backend).get(key)
        if call is not None and call.ctx is backend._ctx and (
                call.program is None or call.program.valid_for(call.ctx)):
            call.launch(backend, a, b, c)
            return
    call = _structure(backend, m, n, k, batch, a_dtype, a_strides, b_dtype, b_strides, c_dtype, c_strides,
                      accumulate)
    if key is not None:
        _keep_plan(_plans(backend), key, call)  # (only a valid structure is cached)
    call.launch(backend, a, b, c)


@dataclass(frozen=True, eq=False)
class _Call:
    """A validated ``matmul_int`` call on the context ``ctx``, everything but the pointers: the
    operands' (size, stride) dims and item sizes (A's and B's pointers are checked only when
    ``reads``) and the call's program (None: nothing to record)."""

    ctx: Any
    dims: tuple[tuple[tuple[int, int], ...], ...]
    itemsizes: tuple[int, int, int]
    reads: bool
    program: LaunchProgram | None

    def launch(self, backend: Any, a: int, b: int, c: int) -> None:
        """Check the pointers (BackendError as ``matmul_int`` says) and record the program."""
        if self.program is None and not self.dims:
            return  # an empty result: nothing is checked or recorded
        (a_dims, b_dims, c_dims), (a_size, b_size, c_size) = self.dims, self.itemsizes
        c_alloc, c_off, _ = check_strided_pointer(backend, "C", c, c_size, c_dims)
        bases = [None, None, (c_alloc, c_off)]
        if self.reads:
            bases[0] = check_strided_pointer(backend, "A", a, a_size, a_dims)[:2]
            bases[1] = check_strided_pointer(backend, "B", b, b_size, b_dims)[:2]
        program = self.program
        if program is None:
            return
        ctx = self.ctx
        if ctx.__dict__.get("dispatch") is not None or type(a) is not int or type(b) is not int \
                or type(c) is not int:
            program.dispatch(backend, ctx, (a, b, c))
            return
        # element 0 of each operand: its allocation's buffer and the byte offset in it (the
        # lowest touched byte is ``dims``' lowest offset below it)
        runs = []
        for ptr, base, size, dims in ((a, bases[0], a_size, a_dims), (b, bases[1], b_size, b_dims),
                                      (c, bases[2], c_size, c_dims)):
            if base is None:
                runs.append((None, 0, 0, 0, ptr))
                continue
            alloc, low = base
            offset = low - _low(dims) * size
            runs.append((alloc.buffer, alloc.buffer.size, alloc.nbytes, offset, ptr))
        program.run(backend, ctx, runs, _no_placeholder)


def _low(dims: Sequence[tuple[int, int]]) -> int:
    """The lowest element offset (<= 0) that dims [(size, stride), ...] reach from element 0."""
    return sum(s * (n - 1) for n, s in dims if s < 0)


def _no_placeholder(backend: Any, nbytes: int, *bindings: Any) -> Any:  # pragma: no cover
    raise AssertionError("matmul_int programs bind no placeholders")


def _structure(backend: Any, m: Any, n: Any, k: Any, batch: Any, a_dtype: Any, a_strides: Any, b_dtype: Any,
               b_strides: Any, c_dtype: Any, c_strides: Any, accumulate: Any) -> _Call:
    """Validate the pointer-free arguments of ``matmul_int`` and plan its dispatches."""
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
        return _Call(backend.context, (), (0, 0, 0), False, None)
    ta, tb, tc = storage_type(a_dtype), storage_type(b_dtype), storage_type(c_dtype)
    if k == 0:
        # A and B are not read: C is bound in their place, so type them as C (a binding too
        # small for their element type would be invalid).
        ta = tb = tc
    a_dims = ((batch, sa[0]), (m, sa[1]), (max(k, 1), sa[2]))
    b_dims = ((batch, sb[0]), (max(k, 1), sb[1]), (n, sb[2]))
    c_dims = ((batch, sc[0]), (m, sc[1]), (n, sc[2]))
    check_distinct("C", c_dims)
    dims = (a_dims, b_dims, c_dims)
    itemsizes = (ta.itemsize, tb.itemsize, tc.itemsize)
    if k == 0 and accumulate:
        return _Call(backend.context, dims, itemsizes, False, None)  # C += nothing (the pointers are still checked)

    extents = [
        strided_extent([("batch", sa[0]), ("m", sa[1]), ("k", sa[2])], ta.itemsize),
        strided_extent([("batch", sb[0]), ("k", sb[1]), ("n", sb[2])], tb.itemsize),
        strided_extent([("batch", sc[0]), ("m", sc[1]), ("n", sc[2])], tc.itemsize),
    ]
    blocks = plan_blocks({"batch": batch, "m": m, "n": n, "k": max(k, 1)},
                         extents if k > 0 else extents[2:], backend.max_window_bytes(),
                         caps={"batch": MAX_GRID_Z})
    ctx = backend.context
    acc = tc.compute  # (ACCUMULATORS' type, or the emulated struct where int64 is two words)
    defines = {
        "ACC": acc,
        "A_ARRAY": ta.array,
        "B_ARRAY": tb.array,
        "LOAD_A": convert(ta.load_expr("A", "i"), ta.compute, acc),
        "LOAD_B": convert(tb.load_expr("B", "i"), tb.compute, acc),
    }
    # the smallest span of C that one dispatch binds (its smallest block along each dimension)
    least = [size % blocks[dim] or min(size, blocks[dim]) for dim, size in (("batch", batch), ("m", m), ("n", n))]
    c_span = (1 + (least[0] - 1) * abs(sc[0]) + (least[1] - 1) * abs(sc[1]) + (least[2] - 1) * abs(sc[2])) * tc.itemsize
    sgm = int8_sgmatrix.plan(ctx, a_dtype, b_dtype, c_dtype, sa, sb, sc, n, c_span) if k > 0 else None
    pipe = int8_sgmatrix.pipeline(ctx, sgm) if sgm is not None else None
    if pipe is not None:
        kernel, bm, bn, defines = int8_sgmatrix.KERNEL, sgm.bm, sgm.bn, sgm.defines
    elif tc.emulated:
        kernel, bm, bn = KERNEL_EMULATED, EMULATED_TILE, EMULATED_TILE
        defines["TS"] = EMULATED_TILE
    else:
        kernel = KERNEL
        tiles = gemm_tiles(ctx, "f64" if tc.itemsize == 8 else "f32", min(m, blocks["m"]),
                           min(n, blocks["n"]), min(batch, blocks["batch"]))
        bm, bn = tiles.bm, tiles.bn
        defines.update(tiles.defines(), A_K_FAST="true" if abs(sa[2]) <= abs(sa[1]) else "false",
                       B_N_FAST="true" if abs(sb[2]) <= abs(sb[1]) else "false")
    if pipe is None:
        pipe = ctx.pipeline(kernel, 3, defines)
    # Every dispatch: operands 0 (A), 1 (B), 2 (C); the first-element words are 3, 7 and 11.
    records = []
    k_blocks = block_starts(k, blocks["k"]) if k > 0 else [(0, 0)]
    for q0, qb in block_starts(batch, blocks["batch"]):
        for j0, nb in block_starts(n, blocks["n"]):
            for i0, mb in block_starts(m, blocks["m"]):
                c_region = strided_region(2, tc.itemsize, q0 * sc[0] + i0 * sc[1] + j0 * sc[2],
                                          [(qb, sc[0]), (mb, sc[1]), (nb, sc[2])], _C_FIRST)
                tiles_m = -(-mb // bm)
                tiles_n = -(-nb // bn)
                for kb_index, (p0, kb) in enumerate(k_blocks):
                    if kb > 0:
                        a_region = strided_region(0, ta.itemsize, q0 * sa[0] + i0 * sa[1] + p0 * sa[2],
                                                  [(qb, sa[0]), (mb, sa[1]), (kb, sa[2])], _A_FIRST)
                        b_region = strided_region(1, tb.itemsize, q0 * sb[0] + p0 * sb[1] + j0 * sb[2],
                                                  [(qb, sb[0]), (kb, sb[1]), (nb, sb[2])], _B_FIRST)
                    else:  # k == 0: A and B are not read; bind C in their place (first words 0)
                        a_region = b_region = c_region._replace(word=0, extra=0)
                    words = tuple(w & 0xFFFFFFFF for w in (
                        mb, nb, kb,
                        0, sa[1], sa[2], sa[0],
                        0, sb[1], sb[2], sb[0],
                        0, sc[1], sc[2], sc[0],
                        tiles_m, tiles_n, int(accumulate or kb_index > 0)))
                    gx, gy, _ = ctx.fold_grid(tiles_m * tiles_n)
                    records.append((pipe, defines, words, (gx, gy, qb), (a_region, b_region, c_region)))
    program = LaunchProgram.compile(kernel, _WORDS, ctx, records, ())
    return _Call(ctx, dims, itemsizes, k > 0, program)


#: Parameter words of matmul_int.wgsl taking the window index of A's, B's and C's block element [0, 0, 0].
_A_FIRST, _B_FIRST, _C_FIRST = 3, 7, 11
_WORDS = struct.Struct("<18I")

#: Calls kept per backend, by their plain arguments (``_plans(backend)``: its dict).
_PLAN_CACHE = PlanCache(256)
_plans = _PLAN_CACHE.of
_keep_plan = _PLAN_CACHE.keep
