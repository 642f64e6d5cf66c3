"""GEMM with cuBLAS semantics: ``gemm`` (cublasSgemm) and ``gemm_strided_batched``
(cublasSgemmStridedBatched), in float16 (f32 accumulation), float32 and float64.

Matrices are column-major with leading dimensions, exactly as in cuBLAS:
``C = alpha * op(A) * op(B) + beta * C`` with op(A) m x k, op(B) k x n, C m x n, element (i, j)
of a stored matrix X at ``X[i + j*ldx]``. ``beta == 0`` never reads C (it may hold NaN);
``k == 0`` or ``alpha == 0`` never reads A or B; ``m == 0``, ``n == 0`` or ``batch == 0`` do
nothing (after validation).

The kernel (``_wgsl/gemm.wgsl`` + ``gemm_core.wgsl``) is a register-tiled shared-memory GEMM:
one workgroup per BM x BN tile of C, each invocation a TM x TN micro-tile, double-buffered
BK-deep K slices in workgroup memory, the transposes specialised into the load pattern. The
tile configuration is chosen per adapter and problem size (``gemm_tiles``); for float64 data and
for batches of float32/float16 products the knobs ``gemm_tiles_f64`` / ``gemm_tiles_batched``
(``GPUTENSOR_GEMM_TILES_F64`` / ``_BATCHED``, BMxBNxBKxTMxTN) set them instead, on any adapter
(``knob_tiles``; ``python -m benchmarks.tools.gemm_tiles --ab ...`` compares them in one process).
float64 tiles are staged in workgroup memory as two planes of vec2<f64> (``gemm_stage_pairs.wgsl``,
``gemm_f64_pairs``), so that consecutive invocations' 16-byte shared loads are consecutive.

A storage binding holds at most ``backend.max_window_bytes()``. When an operand's touched span
is larger, ``plan_blocks`` splits the problem into blocks of batch, m, n and k such that every
operand block fits one binding; k blocks after the first accumulate with beta = 1.

``gemm_strided`` takes operands with arbitrary (row, column, batch) element strides of any sign
(0 included for A and B): the layouts of NumPy views such as ``a[::-1, ::2]``. When every operand
fits a column-major / transposed BLAS layout it runs the kernel above unchanged; otherwise it runs
``_wgsl/gemm_strided.wgsl``, the same tiled core (``gemm_core.wgsl``) with each operand addressed
through its two strides and a fetch order along its smaller stride. Its planner measures each
operand's touched span from the lowest to the highest offset it reaches (``strided_span``), so
negative strides split and bind exactly like positive ones.

Split-K: a problem with few output tiles (a skinny gemm, a convolution with a small output)
would leave most of a GPU idle with large tiles, and runs at low arithmetic intensity with
small ones. ``gemm_plan`` then keeps the large tiles and gives each tile several workgroups,
each over a slice of the depth (``splits``): they store raw acc_t partial tiles into a pooled
scratch buffer (``backend.alloc``, freed once recorded) and ``_wgsl/gemm_combine.wgsl`` sums the
slices in a fixed order (bitwise reproducible) and applies the epilogue (alpha, beta, the output
layout and dtype). The kernels take it as the SPLIT_K / C_T placeholders (``split_defines``) and
the ``splits`` / ``kt_split`` parameters; conv2d (``ops_conv``) shares all of it. The policy
(``choose_splits``, constants ``SPLITK_*``) applies to float32 and float16 data on hardware
adapters; ``GPUTENSOR_GEMM_SPLITK=<n>`` or a ``splits=`` argument forces it anywhere.

Autotuning (opt-in, ``autotune``): with ``GPUTENSOR_AUTOTUNE=1`` or ``gputensor.autotune(True)``
the operations hand ``plan_splitk`` a ``autotune.Request`` (the same call on scratch operands),
and the plan of f32-accumulating calls without an explicit split count is the fastest of a few
candidates, timed on the first call per adapter / family / shape bucket and cached on disk.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import autotune, config
from .base import BackendTranspose
from .errors import invalid_argument
from .gemm_splitk import (COMBINE_WG, KERNEL_COMBINE, SPLITK_ENV, SPLITK_MAX, SPLITK_MIN_DEPTH, SPLITK_MIN_K,
                          SPLITK_TARGET, GEMM_PLANS, SplitRecord, _COMBINE_WORDS, COMBINE_C_FIRST, choose_splits,
                          clamp_plan, combine_params, combine_words, dispatch_gemm_records, gemm_plan, plan_splitk,
                          split_defines, split_depth)
from .gemm_tiling import (FILL_TILES, MAX_GRID_Z, TILE_KNOB_BATCHED, TILE_KNOB_F64, TILES_LARGE, TILES_MEDIUM,
                          TILES_MEDIUM_F64, TILES_SMALL, TILES_SOFTWARE, TILES_TALL, TILES_WIDE, GemmTiles,
                          f64_gpu_plan, gemm_tiles, kernel_types, knob_tiles, tile_knob_values)
from .launch import LaunchProgram, Record, Region, operand_bases, strided_region
from .layout import Extent, block_starts, plan_blocks, strided_extent, strided_span
from .plan_cache import PlanCache
from .validate import check_distinct, check_int, check_pointer, check_scalar, check_strided_pointer, check_strides

#: Kernel name of the GEMM template.
KERNEL = "gemm"

#: Kernel name of the general-stride GEMM template (``gemm_strided.wgsl``).
KERNEL_STRIDED = "gemm_strided"


# ---- block planning (pure; the planner is layout.plan_blocks) ---------------------------------
def operand_extents(trans_a: bool, trans_b: bool, lda: int, ldb: int, ldc: int,
                    stride_a: int, stride_b: int, stride_c: int) -> tuple[Extent, Extent, Extent]:
    """The extents of A, B and C over dimensions 'batch', 'm', 'n', 'k'."""
    a_rows, a_cols = ("k", "m") if trans_a else ("m", "k")
    b_rows, b_cols = ("n", "k") if trans_b else ("k", "n")
    return (
        Extent(1, (("batch", stride_a), (a_cols, lda), (a_rows, 1))),
        Extent(1, (("batch", stride_b), (b_cols, ldb), (b_rows, 1))),
        Extent(1, (("batch", stride_c), ("n", ldc), ("m", 1))),
    )


def plan_gemm_blocks(trans_a: bool, trans_b: bool, m: int, n: int, k: int, batch: int,
                     lda: int, ldb: int, ldc: int, stride_a: int, stride_b: int, stride_c: int,
                     limit: int) -> dict[str, int]:
    """Block sizes {'batch', 'm', 'n', 'k'} so that every operand block spans at most ``limit``
    elements (sizes >= 1; see ``plan_blocks``); batch blocks are at most 65535 (grid z)."""
    extents = operand_extents(trans_a, trans_b, lda, ldb, ldc, stride_a, stride_b, stride_c)
    return plan_blocks({"batch": batch, "m": m, "n": n, "k": k}, extents, limit,
                       caps={"batch": MAX_GRID_Z})


# ---- validation --------------------------------------------------------------------------
def check_transpose(name: str, value: Any) -> bool:
    """Whether ``value`` (a BackendTranspose, or 'N'/'T'/'C') transposes; CONJ_TRANS is TRANS
    for real data. BackendError (invalid argument) for anything else."""
    if isinstance(value, BackendTranspose):
        return value is not BackendTranspose.NO_TRANS
    if isinstance(value, str) and value.upper() in ("N", "T", "C"):
        return value.upper() != "N"
    raise invalid_argument(f"{name} must be a BackendTranspose (N, T or C), not {value!r}")


def _span_bytes(extent: Extent, blocks: Mapping[str, int], itemsize: int) -> int:
    return extent.span(blocks) * itemsize


# ---- operations ------------------------------------------------------------------------------
def gemm(backend: Any, trans_a: BackendTranspose, trans_b: BackendTranspose, m: int, n: int,
         k: int, alpha: float, a: int, lda: int, b: int, ldb: int, beta: float, c: int, ldc: int,
         *, dtype: str = "float32", splits: int | None = None) -> None:
    """``C = alpha*op(A)*op(B) + beta*C`` on column-major matrices, as cublasSgemm.

    Raises BackendError: invalid argument for a bad transpose, a negative size, a leading
    dimension below max(1, rows of the stored matrix), an unknown dtype, or a pointer whose
    touched span ((cols-1)*ld + rows elements) is unknown, freed, misaligned or past the end
    of its allocation; unsupported when the adapter lacks the dtype. Nothing is recorded
    unless every check passes. C's pointer is checked whenever m, n > 0; A's and B's whenever
    k > 0 as well (even with alpha == 0, when they are not read).

    ``splits`` forces the number of split-K slices (1: none; see ``gemm_plan``), for tests and
    tuning; None leaves the choice to the policy (and ``GPUTENSOR_GEMM_SPLITK``).
    """
    gemm_strided_batched(backend, trans_a, trans_b, m, n, k, alpha, a, lda, 0, b, ldb, 0,
                         beta, c, ldc, 0, 1, dtype=dtype, splits=splits)


def gemm_strided_batched(backend: Any, trans_a: BackendTranspose, trans_b: BackendTranspose,
                         m: int, n: int, k: int, alpha: float, a: int, lda: int, stride_a: int,
                         b: int, ldb: int, stride_b: int, beta: float, c: int, ldc: int,
                         stride_c: int, batch: int, *, dtype: str = "float32",
                         splits: int | None = None, triangle: int = 0) -> None:
    """``C_i = alpha*op(A_i)*op(B_i) + beta*C_i`` for i < batch, X_i = X + i*stride_x
    (strides in elements, >= 0), as cublasSgemmStridedBatched (``splits`` as in ``gemm``).

    ``triangle`` 1 (2) computes only the tiles of C that reach its upper (lower) triangle,
    i <= j (i >= j), diagonal included, without split-K (a symmetric rank-k update's half):
    elements of the other triangle may be updated or not; 0 computes every tile.

    A call is planned once per call structure (everything but the pointers) as a
    ``LaunchProgram`` (kept per backend; with split-K its steps are the gemm and combine
    dispatches and its scratch the partials); a repeated call checks its pointers and replays it.

    Raises BackendError as ``gemm`` does, and invalid argument for a negative stride or batch.
    """
    key: tuple[Any, ...] | None = None
    if type(m) is int and type(n) is int and type(k) is int and type(batch) is int:
        key = (trans_a, trans_b, m, n, k, lda, stride_a, ldb, stride_b, ldc, stride_c, batch,
               alpha, beta, dtype, splits, *plan_settings(), *((triangle,) if triangle else ()))
        try:
            call = _GEMM_PLANS.of(backend).get(key)
        except TypeError:  # unhashable arguments: the checks below report them
            key = call = None
        if call is not None and call.ctx is backend._ctx and call.program.valid_for(call.ctx):
            call.launch(backend, a, b, c)
            return
    ta = check_transpose("trans_a", trans_a)
    tb = check_transpose("trans_b", trans_b)
    m = check_int("m", m)
    n = check_int("n", n)
    k = check_int("k", k)
    lda = check_int("lda", lda)
    ldb = check_int("ldb", ldb)
    ldc = check_int("ldc", ldc)
    a_rows = k if ta else m
    b_rows = n if tb else k
    if lda < max(1, a_rows):
        raise invalid_argument(f"lda = {lda} must be >= max(1, {a_rows}) (rows of the stored A)")
    if ldb < max(1, b_rows):
        raise invalid_argument(f"ldb = {ldb} must be >= max(1, {b_rows}) (rows of the stored B)")
    if ldc < max(1, m):
        raise invalid_argument(f"ldc = {ldc} must be >= max(1, m = {m})")
    stride_a = check_int("stride_a", stride_a)
    stride_b = check_int("stride_b", stride_b)
    stride_c = check_int("stride_c", stride_c)
    batch = check_int("batch", batch)
    alpha = check_scalar("alpha", alpha)
    beta = check_scalar("beta", beta)
    itemsize, wgsl_type = backend.float_dtype(dtype)
    if m == 0 or n == 0 or batch == 0:
        return

    reads_ab = k > 0 and alpha != 0.0
    extents = operand_extents(ta, tb, lda, ldb, ldc, stride_a, stride_b, stride_c)
    full = {"batch": batch, "m": m, "n": n, "k": max(k, 1)}
    spans = tuple(_span_bytes(e, full, itemsize) for e in extents)
    check_pointer(backend, "C", c, spans[2], itemsize)
    if k > 0:
        check_pointer(backend, "A", a, spans[0], itemsize)
        check_pointer(backend, "B", b, spans[1], itemsize)

    limit = backend.max_window_bytes() // itemsize
    blocks = plan_gemm_blocks(ta, tb, m, n, max(k, 1), batch, lda, ldb, ldc,
                              stride_a, stride_b, stride_c, limit)
    ctx = backend.context
    types = kernel_types(wgsl_type)
    acc_type = types["ACC"]
    forced_tiles = knob_tiles(ctx, acc_type, batch, m, n)
    tune = None
    if reads_ab and splits is None and forced_tiles is None and autotune.enabled():
        beta_run = 0.0 if beta == 0.0 else 1.0

        def run(ptrs: Sequence[int]) -> None:
            gemm_strided_batched(backend, trans_a, trans_b, m, n, k, 1.0, ptrs[0], lda, stride_a,
                                 ptrs[1], ldb, stride_b, beta_run, ptrs[2], ldc, stride_c, batch,
                                 dtype=dtype)

        tune = autotune.Request(
            "gemm", wgsl_type, (("T" if ta else "N") + ("T" if tb else "N"),),
            spans, run)
    if triangle and (blocks["m"] < m or blocks["n"] < n):
        triangle = 0  # (the tiles' diagonal is per block: every tile)
    tiles, splits = plan_splitk(backend, acc_type, min(m, blocks["m"]), min(n, blocks["n"]),
                                max(k, 1), min(batch, blocks["batch"]), 1 if triangle else splits, reads_ab,
                                None if triangle else tune, forced_tiles)
    defines = {**types, **tiles.defines(), **split_defines(types, splits > 1),
               "TRANS_A": "true" if ta else "false", "TRANS_B": "true" if tb else "false", "TRI": triangle}
    packer = _GEMM_WORDS[acc_type]

    # Every dispatch, pointer-free: operands 0 (A), 1 (B), 2 (C) and with split-K 3 (the scratch
    # of partials, bound from its start), parameter words (the window index words 8, 9, 10 left
    # 0), grid, and with split-K the combine's words, bindings and grid.
    acc_size = 8 if acc_type == "f64" else 4
    scratch = 0
    records = []
    k_blocks = block_starts(k, blocks["k"]) if reads_ab else [(0, 0)]
    for b0, bb in block_starts(batch, blocks["batch"]):
        for j0, nb in block_starts(n, blocks["n"]):
            for i0, mb in block_starts(m, blocks["m"]):
                bl = {"batch": bb, "m": mb, "n": nb}
                c_reg = Region(2, (b0 * stride_c + i0 + j0 * ldc) * itemsize,
                               _span_bytes(extents[2], {**bl, "k": 1}, itemsize), itemsize, 0, _C_FIRST, 0)
                for kb_index, (p0, kb) in enumerate(k_blocks):
                    bl_k = {**bl, "k": max(kb, 1)}
                    if reads_ab:
                        a_off = b0 * stride_a + ((p0 + i0 * lda) if ta else (i0 + p0 * lda))
                        b_off = b0 * stride_b + ((j0 + p0 * ldb) if tb else (p0 + j0 * ldb))
                        a_reg = Region(0, a_off * itemsize, _span_bytes(extents[0], bl_k, itemsize),
                                       itemsize, 0, _A_FIRST, 0)
                        b_reg = Region(1, b_off * itemsize, _span_bytes(extents[1], bl_k, itemsize),
                                       itemsize, 0, _B_FIRST, 0)
                    else:  # A and B are not read: bind C in their place (first words 0)
                        a_reg = b_reg = c_reg._replace(word=0)
                    a_cols = mb if ta else kb
                    b_cols = kb if tb else nb
                    tiles_m = -(-mb // tiles.bm)
                    tiles_n = -(-nb // tiles.bn)
                    scale_a = alpha if reads_ab else 0.0
                    scale_c = beta if kb_index == 0 else 1.0
                    n_split, kt_split = split_depth(kb, tiles.bk, splits)
                    words = (scale_a, scale_c, mb, nb, kb,
                             lda if a_cols > 1 else 0, ldb if b_cols > 1 else 0, ldc if nb > 1 else 0,
                             0, 0, 0,
                             stride_a if bb > 1 else 0, stride_b if bb > 1 else 0,
                             stride_c if bb > 1 else 0,
                             tiles_m, tiles_n, n_split, kt_split)
                    gx, gy, _ = ctx.fold_grid(tiles_m * tiles_n * n_split)
                    if splits == 1:
                        records.append((words, (a_reg, b_reg, c_reg), (gx, gy, bb), None))
                        continue
                    count = bb * mb * nb
                    part = Region(3, 0, n_split * count * acc_size, acc_size, 0, 0, 0)
                    combine = (scale_a, scale_c, *combine_words(mb, nb, bb, n_split, 0, 1,
                                                                ldc if nb > 1 else 0,
                                                                stride_c if bb > 1 else 0))
                    scratch = max(scratch, part.nbytes)
                    records.append((words, (a_reg, b_reg, part), (gx, gy, bb),
                                    (combine, (part, c_reg._replace(word=COMBINE_C_FIRST)),
                                     ctx.fold_grid(-(-count // COMBINE_WG)))))
    pipe = ctx.pipeline(KERNEL, 3, defines)
    steps: list[Record] = []
    combine_pipe = combine_defines = None
    if splits > 1:
        combine_defines = {"ENABLE": types["ENABLE"], "T": types["T"], "ACC": acc_type}
        combine_pipe = ctx.pipeline(KERNEL_COMBINE, 2, combine_defines)
    for words, regs, grid, combine in records:
        steps.append(Record(pipe, defines, words, grid, regs))
        if combine is not None:
            cwords, cregs, cgrid = combine
            steps.append(Record(combine_pipe, combine_defines, cwords, cgrid, cregs, KERNEL_COMBINE,
                                _COMBINE_WORDS[acc_type]))
    program = LaunchProgram.compile(KERNEL, packer, ctx, steps, [(scratch, 0)] if scratch else ())
    call = _GemmCall(ctx, program, spans, itemsize, k > 0)
    if key is not None and tune is None:
        _keep_plan(_GEMM_PLANS.of(backend), key, call)
    call.launch(backend, a, b, c)


#: The knobs of ``plan_settings`` (two of them live, read on every matmul), kept until they change.
_PLAN_KNOBS = config.Values("gemm_splitk", "autotune", TILE_KNOB_F64, TILE_KNOB_BATCHED, "gemm_f64_pairs")
#: (the knob values, whether tuning was on, the settings made of them) of the last ``plan_settings``.
_plan_settings: tuple[Any, Any, tuple[Any, ...]] = ((), None, ())


def plan_settings() -> tuple[Any, ...]:
    """The settings a kept ``gemm_strided_batched`` plan depends on beside its arguments (the
    forced split-K count, whether tuning is on, the tile knobs, as ``tile_knob_values``): part
    of every plan key, the callers' too. BackendError (invalid argument) for a bad
    ``GPUTENSOR_GEMM_SPLITK``."""
    global _plan_settings
    values = _PLAN_KNOBS()
    tune = autotune.enabled(bool(values[1]))
    seen, tuned, settings = _plan_settings
    if seen is values and tuned is tune:
        return settings
    splits, _, f64, batched, pairs = values
    settings = (splits, tune, f64, batched, bool(pairs))
    _plan_settings = (values, tune, settings)
    return settings


def planned_call(backend: Any, trans_a: BackendTranspose, trans_b: BackendTranspose, m: int, n: int,
                 k: int, alpha: float, lda: int, stride_a: int, ldb: int, stride_b: int, beta: float,
                 ldc: int, stride_c: int, batch: int, *, dtype: str = "float32",
                 settings: tuple[Any, ...] | None = None, triangle: int = 0) -> "_GemmCall | None":
    """The plan an earlier ``gemm_strided_batched`` call with these arguments (everything but
    the pointers, plain ints) kept on ``backend``, valid on its current context, under the
    settings ``settings`` (default: ``plan_settings()`` now); None when there is none (a call
    under tuning keeps none). Its ``launch(backend, a, b, c)`` replays the call
    for new pointers (checking them)."""
    key = (trans_a, trans_b, m, n, k, lda, stride_a, ldb, stride_b, ldc, stride_c, batch,
           alpha, beta, dtype, None, *(plan_settings() if settings is None else settings),
           *((triangle,) if triangle else ()))
    call = _GEMM_PLANS.of(backend).get(key)
    if call is not None and call.ctx is backend._ctx and call.program.valid_for(call.ctx):
        return call
    return None


#: Parameter words of gemm_core.wgsl (scale_a, scale_c, then 16 u32) per accumulator type; the
#: words that take the window index of A's, B's and C's block element [0, 0, 0].
_GEMM_WORDS = {"f32": struct.Struct("<ff16I"), "f64": struct.Struct("<dd16I")}
_A_FIRST, _B_FIRST, _C_FIRST = 8, 9, 10


def _no_placeholder(backend: Any, nbytes: int, *bindings: Any) -> Any:  # pragma: no cover
    raise AssertionError("gemm programs bind no placeholders")


@dataclass(frozen=True, eq=False)
class _GemmCall:
    """A validated ``gemm_strided_batched`` call on the context ``ctx``, everything but the
    pointers: its program (split-K's combine steps and scratch included), the byte spans of A,
    B and C (A's and B's pointers are checked only when ``reads``: k > 0) and the item size."""

    ctx: Any
    program: LaunchProgram
    spans: tuple[int, ...]
    itemsize: int
    reads: bool

    def launch(self, backend: Any, a: int, b: int, c: int) -> None:
        """Check the pointers (BackendError as ``gemm`` says) and record the program."""
        itemsize = self.itemsize
        c_alloc, c_off = check_pointer(backend, "C", c, self.spans[2], itemsize)
        c_base = (c_alloc.buffer, c_alloc.buffer.size, c_alloc.nbytes, c_off, c, c_alloc.whole)
        bases = [c_base, c_base, c_base]
        if self.reads:
            for k, (name, ptr) in enumerate((("A", a), ("B", b))):
                alloc, off = check_pointer(backend, name, ptr, self.spans[k], itemsize)
                bases[k] = (alloc.buffer, alloc.buffer.size, alloc.nbytes, off, ptr, alloc.whole)
        ctx = self.ctx
        if ctx.__dict__.get("dispatch") is not None or type(a) is not int or type(b) is not int \
                or type(c) is not int:
            self.program.dispatch(backend, ctx, (a, b, c))
            return
        self.program.run(backend, ctx, bases, _no_placeholder)


#: Calls kept per backend, by their plain arguments.
_GEMM_PLANS = PlanCache(256)
_keep_plan = _GEMM_PLANS.keep


# ---- general strides ---------------------------------------------------------------------------
def blas_layout(rows: int, cols: int, row_stride: int, col_stride: int) -> tuple[bool, int] | None:
    """How a rows x cols operand with these element strides reads as a BLAS operand: ``(False,
    ld)`` for column-major (``X[i + j*ld]``), ``(True, ld)`` for the transpose of a column-major
    cols x rows matrix (``X[j + i*ld]``), None when neither describes it (negative or zero
    strides, strides in both dimensions, ld too small). Strides of size-1 dimensions are free."""
    if rows <= 1 or row_stride == 1:
        ld = col_stride if cols > 1 else max(1, rows)
        if ld >= max(1, rows):
            return False, ld
    if cols <= 1 or col_stride == 1:
        ld = row_stride if rows > 1 else max(1, cols)
        if ld >= max(1, cols):
            return True, ld
    return None


def plan_strided_blocks(m: int, n: int, k: int, batch: int, a_strides: Sequence[int],
                        b_strides: Sequence[int], c_strides: Sequence[int], limit: int,
                        reads_ab: bool = True) -> dict[str, int]:
    """Block sizes {'batch', 'm', 'n', 'k'} (sizes >= 1) such that every operand block of a
    general-stride GEMM spans at most ``limit`` elements from its lowest to its highest touched
    offset. Strides are (batch, row, column) in elements, any sign; A is m x k, B k x n, C m x n.
    With ``reads_ab`` False only C is planned. ValueError when even blocks of 1 do not fit."""
    extents = [strided_extent([("batch", c_strides[0]), ("m", c_strides[1]), ("n", c_strides[2])])]
    if reads_ab:
        extents += [
            strided_extent([("batch", a_strides[0]), ("m", a_strides[1]), ("k", a_strides[2])]),
            strided_extent([("batch", b_strides[0]), ("k", b_strides[1]), ("n", b_strides[2])]),
        ]
    return plan_blocks({"batch": batch, "m": m, "n": n, "k": k}, extents, limit,
                       caps={"batch": MAX_GRID_Z})


def _u32(value: int) -> int:
    """The two's-complement u32 bits of a signed element stride."""
    return value & 0xFFFFFFFF


def gemm_strided(backend: Any, m: int, n: int, k: int, alpha: float, a: int,
                 a_strides: Sequence[int], b: int, b_strides: Sequence[int], beta: float, c: int,
                 c_strides: Sequence[int], batch: int = 1,
                 batch_strides: Sequence[int] = (0, 0, 0), *, dtype: str = "float32",
                 splits: int | None = None) -> None:
    """``C_q = alpha * A_q @ B_q + beta * C_q`` for q < batch on operands with arbitrary strides.

    ``a``, ``b``, ``c`` point at element [0, 0] of batch 0; element (i, j) of X_q lies
    ``q*bx + i*rx + j*cx`` elements from it, where ``x_strides = (rx, cx)`` (row, column) and
    ``batch_strides = (ba, bb, bc)``: any sign, 0 included for A and B (broadcast), so NumPy
    views (negative steps, steps in both matrix dimensions, transposes) are read in place. A is
    m x k, B k x n, C m x n, all row-indexed as NumPy's ``A[i, p]``. ``beta == 0`` never reads C;
    ``k == 0`` or ``alpha == 0`` never reads A or B; ``m``, ``n`` or ``batch`` of 0 do nothing
    (after validation).

    The problem is first oriented so that C's smaller stride is its row stride (computing
    ``C^T = B^T A^T`` otherwise), which makes the kernel's stores consecutive. If every operand
    then fits a BLAS layout (``blas_layout``, non-negative batch strides), this is exactly
    ``gemm_strided_batched`` (same kernel, same dispatches); otherwise the general-stride kernel
    runs, split into blocks whose windows fit one binding (``plan_strided_blocks``).

    Raises BackendError: invalid argument for negative sizes, malformed strides, C strides that
    make two of its elements share memory, non-real scalars, an unknown dtype, or a pointer whose
    touched range (lowest to highest offset) is unknown, freed, misaligned or past the end of its
    allocation; unsupported when the adapter lacks the dtype. Nothing is recorded unless every
    check passes; C's pointer is checked whenever m, n, batch > 0, A's and B's whenever k > 0 too.
    ``splits`` forces the number of split-K slices, as in ``gemm``.
    """
    m = check_int("m", m)
    n = check_int("n", n)
    k = check_int("k", k)
    ar, ac = check_strides("a_strides", a_strides, 2)
    br, bc = check_strides("b_strides", b_strides, 2)
    cr, cc = check_strides("c_strides", c_strides, 2)
    batch = check_int("batch", batch)
    qa, qb, qc = check_strides("batch_strides", batch_strides, 3)
    alpha = check_scalar("alpha", alpha)
    beta = check_scalar("beta", beta)
    itemsize, wgsl_type = backend.float_dtype(dtype)
    if m == 0 or n == 0 or batch == 0:
        return
    check_distinct("C", [(batch, qc), (m, cr), (n, cc)])
    check_strided_pointer(backend, "C", c, itemsize, [(batch, qc), (m, cr), (n, cc)])
    if k > 0:
        check_strided_pointer(backend, "A", a, itemsize, [(batch, qa), (m, ar), (k, ac)])
        check_strided_pointer(backend, "B", b, itemsize, [(batch, qb), (k, br), (n, bc)])

    # Orient: C's consecutive stores (runs of rows) should follow its smaller stride.
    row_step = abs(cr) if m > 1 else float("inf")
    col_step = abs(cc) if n > 1 else float("inf")
    if col_step < row_step:  # C^T = B^T A^T
        m, n = n, m
        a, (ar, ac), b, (br, bc) = b, (bc, br), a, (ac, ar)
        qa, qb = qb, qa
        cr, cc = cc, cr

    la = blas_layout(m, k, ar, ac)
    lb = blas_layout(k, n, br, bc)
    lc = blas_layout(m, n, cr, cc)
    if batch == 1:
        qa = qb = qc = 0
    if la is not None and lb is not None and lc is not None and not lc[0] and min(qa, qb, qc) >= 0:
        gemm_strided_batched(backend, "T" if la[0] else "N", "T" if lb[0] else "N", m, n, k,
                             alpha, a, la[1], qa, b, lb[1], qb, beta, c, lc[1], qc, batch,
                             dtype=dtype, splits=splits)
        return
    _gemm_general(backend, m, n, k, alpha, a, (qa, ar, ac), b, (qb, br, bc), beta, c,
                  (qc, cr, cc), batch, itemsize, wgsl_type, splits)


def _gemm_general(backend: Any, m: int, n: int, k: int, alpha: float, a: int,
                  sa: tuple[int, int, int], b: int, sb: tuple[int, int, int], beta: float, c: int,
                  sc: tuple[int, int, int], batch: int, itemsize: int, wgsl_type: str,
                  splits: int | None = None) -> None:
    """Record the general-stride kernel (arguments validated, pointers checked and oriented by
    ``gemm_strided``; strides are (batch, row, column)).

    The call is planned once per call structure (everything but the pointers) as a
    ``LaunchProgram`` kept per backend (with split-K its steps are the gemm and combine
    dispatches and its scratch the partials) and replayed for new pointers."""
    key = (m, n, k, alpha, beta, sa, sb, sc, batch, wgsl_type, splits, *plan_settings())
    plans = _GENERAL_PLANS.of(backend)
    call = plans.get(key)
    if call is None or call.ctx is not backend._ctx or not call.program.valid_for(call.ctx):
        call = _plan_general(backend, m, n, k, alpha, a, sa, b, sb, beta, c, sc, batch, itemsize,
                             wgsl_type, splits)
        if call.keep:
            _keep_general(plans, key, call)
    call.launch(backend, a, b, c)


def _plan_general(backend: Any, m: int, n: int, k: int, alpha: float, a: int,
                  sa: tuple[int, int, int], b: int, sb: tuple[int, int, int], beta: float, c: int,
                  sc: tuple[int, int, int], batch: int, itemsize: int, wgsl_type: str,
                  splits: int | None) -> "_GeneralCall":
    """The program of a ``_gemm_general`` call (its windows planned to fit one binding each;
    ``a``, ``b``, ``c`` only for the tuner's request), kept unless it was tuned."""
    reads_ab = k > 0 and alpha != 0.0
    limit = backend.max_window_bytes() // itemsize
    blocks = plan_strided_blocks(m, n, max(k, 1), batch, sa, sb, sc, limit, reads_ab)
    ctx = backend.context
    types = kernel_types(wgsl_type)
    acc_type = types["ACC"]
    a_m_fast = abs(sa[1]) <= abs(sa[2])
    b_k_fast = abs(sb[1]) <= abs(sb[2])
    forced_tiles = knob_tiles(ctx, acc_type, batch, m, n)
    tune = None
    if reads_ab and splits is None and forced_tiles is None and autotune.enabled():
        spans = [strided_span(dims) for dims in (
            [(batch, sa[0]), (m, sa[1]), (k, sa[2])], [(batch, sb[0]), (k, sb[1]), (n, sb[2])],
            [(batch, sc[0]), (m, sc[1]), (n, sc[2])])]
        beta_run = 0.0 if beta == 0.0 else 1.0

        def run(ptrs: Sequence[int]) -> None:
            pa, pb, pc = (p - lo * itemsize for p, (lo, _) in zip(ptrs, spans))
            _gemm_general(backend, m, n, k, 1.0, pa, sa, pb, sb, beta_run, pc, sc, batch,
                          itemsize, wgsl_type)

        tune = autotune.Request(
            "gemm_strided", wgsl_type, (("M" if a_m_fast else "K") + ("K" if b_k_fast else "N"),),
            tuple((hi - lo + 1) * itemsize for lo, hi in spans), run)
    tiles, splits = plan_splitk(backend, acc_type, min(m, blocks["m"]), min(n, blocks["n"]),
                                max(k, 1), min(batch, blocks["batch"]), splits, reads_ab, tune,
                                forced_tiles)
    defines = {**types, **tiles.defines(), **split_defines(types, splits > 1),
               "A_M_FAST": "true" if a_m_fast else "false",
               "B_K_FAST": "true" if b_k_fast else "false"}

    # Every dispatch, pointer-free: operands 0 (A), 1 (B), 2 (C) and with split-K 3 (the scratch
    # of partials, bound from its start); the first-element words of A, B and C left 0.
    acc_size = 8 if acc_type == "f64" else 4
    scratch = 0
    pipe = ctx.pipeline(KERNEL_STRIDED, 3, defines)
    combine_pipe = combine_defines = None
    if splits > 1:
        combine_defines = {"ENABLE": types["ENABLE"], "T": types["T"], "ACC": acc_type}
        combine_pipe = ctx.pipeline(KERNEL_COMBINE, 2, combine_defines)
    steps: list[Record] = []
    k_blocks = block_starts(k, blocks["k"]) if reads_ab else [(0, 0)]
    for q0, qn in block_starts(batch, blocks["batch"]):
        for j0, nb in block_starts(n, blocks["n"]):
            for i0, mb in block_starts(m, blocks["m"]):
                c_dims = [(qn, sc[0]), (mb, sc[1]), (nb, sc[2])]
                c_origin = q0 * sc[0] + i0 * sc[1] + j0 * sc[2]
                c_reg = strided_region(2, itemsize, c_origin, c_dims, _GENERAL_C_FIRST)
                tiles_m = -(-mb // tiles.bm)
                tiles_n = -(-nb // tiles.bn)
                for kb_index, (p0, kb) in enumerate(k_blocks):
                    if reads_ab:
                        a_reg = strided_region(0, itemsize, q0 * sa[0] + i0 * sa[1] + p0 * sa[2],
                                               [(qn, sa[0]), (mb, sa[1]), (kb, sa[2])], _GENERAL_A_FIRST)
                        b_reg = strided_region(1, itemsize, q0 * sb[0] + p0 * sb[1] + j0 * sb[2],
                                               [(qn, sb[0]), (kb, sb[1]), (nb, sb[2])], _GENERAL_B_FIRST)
                    else:  # A and B are not read: bind C in their place (first words 0)
                        a_reg = b_reg = c_reg._replace(word=0)
                    scale_a = alpha if reads_ab else 0.0
                    scale_c = beta if kb_index == 0 else 1.0
                    n_split, kt_split = split_depth(kb, tiles.bk, splits)
                    words = (scale_a, scale_c, mb, nb, kb,
                             0, _u32(sa[1]), _u32(sa[2]), _u32(sa[0]),
                             0, _u32(sb[1]), _u32(sb[2]), _u32(sb[0]),
                             0, _u32(sc[1]), _u32(sc[2]), _u32(sc[0]),
                             tiles_m, tiles_n, n_split, kt_split)
                    gx, gy, _ = ctx.fold_grid(tiles_m * tiles_n * n_split)
                    if splits == 1:
                        steps.append(Record(pipe, defines, words, (gx, gy, qn), (a_reg, b_reg, c_reg)))
                        continue
                    count = qn * mb * nb
                    part = Region(3, 0, n_split * count * acc_size, acc_size, 0, 0, 0)
                    scratch = max(scratch, part.nbytes)
                    steps.append(Record(pipe, defines, words, (gx, gy, qn), (a_reg, b_reg, part)))
                    cwords = (scale_a, scale_c, *combine_words(mb, nb, qn, n_split, 0, sc[1], sc[2], sc[0]))
                    steps.append(Record(combine_pipe, combine_defines, cwords,
                                        ctx.fold_grid(-(-count // COMBINE_WG)),
                                        (part, c_reg._replace(word=COMBINE_C_FIRST)), KERNEL_COMBINE,
                                        _COMBINE_WORDS[acc_type]))
    program = LaunchProgram.compile(KERNEL_STRIDED, _GENERAL_WORDS[acc_type], ctx, steps,
                                    [(scratch, 0)] if scratch else ())
    return _GeneralCall(ctx, program, reads_ab, tune is None)


@dataclass(frozen=True, eq=False)
class _GeneralCall:
    """A planned ``_gemm_general`` call on the context ``ctx``, everything but the pointers: its
    program, whether it reads A and B (``reads``) and whether it may be kept (``keep``: it was
    not tuned)."""

    ctx: Any
    program: LaunchProgram
    reads: bool
    keep: bool

    def launch(self, backend: Any, a: int, b: int, c: int) -> None:
        """Record the program for operands at ``a``, ``b``, ``c`` (ranges checked by the caller):
        replayed, or through ``WgpuContext.dispatch`` where a wrapper is on the context."""
        ctx = self.ctx
        ptrs = (a, b, c) if self.reads else (c, c, c)
        if ctx.__dict__.get("dispatch") is not None:
            self.program.dispatch(backend, ctx, ptrs)
            return
        self.program.run(backend, ctx, operand_bases(backend, ptrs), _no_placeholder)


#: Parameter words of gemm_strided.wgsl (scale_a, scale_c, then 19 u32) per accumulator type; the
#: words that take the window index of A's, B's and C's block element [0, 0, 0].
_GENERAL_WORDS = {"f32": struct.Struct("<ff19I"), "f64": struct.Struct("<dd19I")}
_GENERAL_A_FIRST, _GENERAL_B_FIRST, _GENERAL_C_FIRST = 5, 9, 13

#: General-stride calls kept per backend, by their plain arguments.
_GENERAL_PLANS = PlanCache(256)
_keep_general = _GENERAL_PLANS.keep


def gemm_flops(m: int, n: int, k: int, batch: int = 1) -> int:
    """Floating-point operations of a GEMM (2*m*n*k per matrix)."""
    return 2 * m * n * k * batch


#: The gemm operations, and the tile and split-K facts of ``gemm_tiling`` / ``gemm_splitk`` they plan with.
__all__ = [
    "Extent", "FILL_TILES", "GEMM_PLANS", "GemmTiles", "MAX_GRID_Z", "SPLITK_ENV", "SPLITK_MAX",
    "SPLITK_MIN_DEPTH", "SPLITK_MIN_K", "SPLITK_TARGET", "SplitRecord", "TILES_LARGE", "TILES_MEDIUM",
    "TILES_MEDIUM_F64", "TILES_SMALL", "TILES_SOFTWARE", "TILES_TALL", "TILES_WIDE", "blas_layout",
    "block_starts", "check_distinct", "choose_splits", "clamp_plan", "combine_params", "combine_words",
    "dispatch_gemm_records", "f64_gpu_plan", "gemm", "gemm_flops", "gemm_plan", "gemm_strided",
    "gemm_strided_batched", "gemm_tiles", "kernel_types", "knob_tiles", "operand_extents", "plan_blocks",
    "plan_gemm_blocks", "plan_settings", "plan_splitk", "plan_strided_blocks", "planned_call",
    "split_defines", "split_depth", "strided_extent", "strided_span", "tile_knob_values",
]
