"""GEMM split-K: the policy (``choose_splits``, constants ``SPLITK_*``), the plan of tiles and
splits for a problem (``gemm_plan``, clamped by ``plan_splitk``, autotuned on request), the
depth slices (``split_depth``), and the ``gemm_combine.wgsl`` step that sums the slices'
partials (``combine_params``, ``record_combine``, ``dispatch_gemm_records``). Shared by
``ops_gemm`` and ``ops_conv``.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import autotune, config
from .gemm_tiling import (FILL_TILES, TILES_MEDIUM, GemmTiles, _big_tiles, _fits, _tiles, f64_gpu_plan,
                          gemm_tiles)

#: Kernel name of the split-K combine (``gemm_combine.wgsl``), shared with conv2d.
KERNEL_COMBINE = "gemm_combine"

#: Invocations per workgroup of the combine kernel (its WG constant).
COMBINE_WG = 256

# ---- split-K policy (constants from ``python3 -m benchmarks.tune_splitk`` on an H200:
# conv 3x3 (98 large tiles, depth 2304) fastest at 4 splits, gemm 64x4096x4096 (32 tiles, depth
# 4096) at 8; depth 1024 (conv 1x1, gemm 1024^3) ran faster on 64x64 tiles without splits) ----
#: Least depth (elements of k) for which a problem with too few large tiles is split; shallower
#: ones take the 64x64 tiles instead (their partial traffic does not pay).
SPLITK_MIN_K = 2048
#: Workgroups the splits aim for: tiles * splits >= SPLITK_TARGET (about 1.5 waves of 132 SMs
#: x 2 resident large-tile workgroups).
SPLITK_TARGET = 384
#: Least depth a split gets.
SPLITK_MIN_DEPTH = 256
#: Most splits.
SPLITK_MAX = 8
#: Environment variable forcing the number of splits (0 or 1: none) wherever split-K is legal.
SPLITK_ENV = "GPUTENSOR_GEMM_SPLITK"


def choose_splits(tiles: int, k: int) -> int:
    """Splits of the depth ``k`` for a problem of ``tiles`` large-tile workgroups (pure; the
    policy's constants are the module's ``SPLITK_*``): 1 when ``k < SPLITK_MIN_K``, else the
    fewest splits that give ``SPLITK_TARGET`` workgroups, at most ``SPLITK_MAX`` and at most
    ``k // SPLITK_MIN_DEPTH``."""
    if k < SPLITK_MIN_K or tiles <= 0:
        return 1
    want = -(-SPLITK_TARGET // tiles)
    return max(1, min(want, SPLITK_MAX, k // max(1, SPLITK_MIN_DEPTH)))


def splitk_override() -> int | None:
    """The number of splits ``GPUTENSOR_GEMM_SPLITK`` forces (0 is 1: none), None when unset.
    BackendError (invalid argument) for a value that is not a non-negative integer."""
    return config.value("gemm_splitk")


def gemm_plan(ctx: Any, acc_type: str, m: int, n: int, k: int, batch: int = 1,
              splits: int | None = None) -> tuple[GemmTiles, int]:
    """``(tiles, splits)`` for an m x n (x batch) problem of depth k on ``ctx``'s adapter.

    ``splits`` (or else ``GPUTENSOR_GEMM_SPLITK``) forces the number of depth splits (1: none),
    with the 128-wide tiles on a GPU (f32 accumulation) when it is above 1. Otherwise GPUs with
    f32 accumulation whose problem has fewer than FILL_TILES large tiles get the large tiles with
    ``choose_splits(tiles, k)`` splits when that is more than 1; f64 on a GPU takes
    ``f64_gpu_plan`` (its splits unless forced); everything else is ``(gemm_tiles(...), 1)``.
    ``plan_splitk`` clamps the splits to what the depth and the scratch binding allow.
    """
    if splits is None:
        splits = splitk_override()
    if acc_type == "f64" and not ctx.is_software:
        tiles, count = f64_gpu_plan(ctx, m, n, k, batch)
        return tiles, count if splits is None else max(1, int(splits))
    tiles = gemm_tiles(ctx, acc_type, m, n, batch)
    gpu_f32 = not ctx.is_software and acc_type != "f64"
    big = _big_tiles(m, n)
    if splits is not None:
        splits = max(1, int(splits))
        if splits > 1 and gpu_f32 and _fits(ctx, big, 4):
            tiles = big
        return tiles, splits
    if not gpu_f32 or tiles == big or not _fits(ctx, big, 4):
        return tiles, 1
    count = _tiles(m, n, batch, big)
    if count >= FILL_TILES:
        return tiles, 1
    splits = choose_splits(count, k)
    return (big, splits) if splits > 1 else (tiles, 1)


def split_depth(k: int, bk: int, splits: int) -> tuple[int, int]:
    """``(splits, kt_split)``: the depth tiles (BK deep) of depth ``k`` shared out as evenly as
    possible over at most ``splits`` slices of ``kt_split`` tiles each, none empty (fewer slices
    when ``k`` has fewer tiles). ``(1, tiles)`` for ``splits`` <= 1."""
    ktiles = max(1, -(-k // bk))
    if splits <= 1:
        return 1, ktiles
    per = -(-ktiles // min(splits, ktiles))
    return -(-ktiles // per), per


def split_defines(types: Mapping[str, str], split: bool) -> dict[str, str]:
    """Placeholders SPLIT_K and C_T (the output binding's element type) of the gemm-core kernels."""
    return {"SPLIT_K": "true" if split else "false", "C_T": types["ACC"] if split else types["T"]}


def max_splits(backend: Any, acc_size: int, elements: int, splits: int) -> int:
    """``splits`` clamped so that the partials (``splits * elements`` values of ``acc_size``
    bytes) fit one binding; 1 when even two do not."""
    return max(1, min(splits, backend.max_window_bytes() // max(1, acc_size * elements)))


def combine_words(m: int, n: int, batch: int, splits: int, c_first: int, c_rs: int, c_cs: int,
                  c_bs: int, rows_inner: int | None = None, c_gs: int = 0) -> tuple[int, ...]:
    """The u32 words of ``gemm_combine.wgsl``'s parameters after alpha and beta (see
    ``combine_params``); word ``COMBINE_C_FIRST`` of the whole struct is ``c_first``."""
    words = (m * n * batch, splits, m, n, c_first, c_rs, c_cs, c_bs,
             m if rows_inner is None else rows_inner, c_gs)
    return tuple(w & 0xFFFFFFFF for w in words)


#: Parameter struct of gemm_combine.wgsl (alpha, beta, 10 u32) per accumulator type, and the
#: index of its c_first field.
_COMBINE_WORDS = {"f32": struct.Struct("<ff10I"), "f64": struct.Struct("<dd10I")}
COMBINE_C_FIRST = 6


def combine_params(acc_type: str, alpha: float, beta: float, m: int, n: int, batch: int,
                   splits: int, c_first: int, c_rs: int, c_cs: int, c_bs: int,
                   rows_inner: int | None = None, c_gs: int = 0) -> bytes:
    """Parameters of ``gemm_combine.wgsl`` for the partials of ``splits`` slices of a batch of
    m x n results: element (i, j) of batch z goes to C index ``c_first + z*c_bs +
    (i // rows_inner)*c_gs + (i % rows_inner)*c_rs + j*c_cs`` (element strides of any sign;
    ``rows_inner`` defaults to m)."""
    return _COMBINE_WORDS[acc_type].pack(
        alpha, beta, *combine_words(m, n, batch, splits, c_first, c_rs, c_cs, c_bs, rows_inner, c_gs))


def record_combine(ctx: Any, types: Mapping[str, str], params: bytes, partials: Any,
                   out: Any, count: int) -> None:
    """Record ``gemm_combine.wgsl`` over ``count`` output elements (``params`` from
    ``combine_params``): ``partials`` and ``out`` are the bindings of the scratch and of C."""
    defines = {"ENABLE": types["ENABLE"], "T": types["T"], "ACC": types["ACC"]}
    ctx.dispatch(KERNEL_COMBINE, params, [partials, out], ctx.fold_grid(-(-count // COMBINE_WG)),
                 defines)


def clamp_plan(backend: Any, acc_type: str, m: int, n: int, k: int, batch: int,
               tiles: GemmTiles, count: int, static_fallback: bool = False) -> tuple[GemmTiles, int]:
    """``(tiles, count)`` with the splits clamped to the depth's tiles and the scratch binding
    (``max_splits``); when that leaves one split the tiles stay, or with ``static_fallback``
    become ``gemm_tiles(...)``."""
    if count > 1:
        count = max_splits(backend, 8 if acc_type == "f64" else 4, m * n * batch, count)
        count = split_depth(k, tiles.bk, count)[0]
    if count <= 1:
        if static_fallback:
            tiles = gemm_tiles(backend.context, acc_type, m, n, batch)
        return tiles, 1
    return tiles, count


def plan_splitk(backend: Any, acc_type: str, m: int, n: int, k: int, batch: int,
                splits: int | None, reads: bool = True,
                tune: autotune.Request | None = None,
                forced_tiles: GemmTiles | None = None) -> tuple[GemmTiles, int]:
    """``gemm_plan`` for the largest block (m x n x batch, depth k) of an operation, with the
    splits clamped to the depth's tiles and the scratch binding (``max_splits``): ``(tiles,
    splits)``, and ``(gemm_tiles(...), 1)`` whenever that leaves one split or the operation reads
    no operands (``reads`` False: k == 0 or alpha == 0).

    ``tune`` (built by the operations only while ``autotune.enabled()``): with f32 accumulation,
    no ``splits`` and no ``GPUTENSOR_GEMM_SPLITK``, the plan comes from the autotuner
    (``autotune.tuned_plan``: cached, or timed now), clamped the same way. Inside a tuning run the
    plan it forces (``autotune.forced_plan``) is used as is (clamped).

    ``forced_tiles`` (a tile knob's, ``knob_tiles``) replaces the planner's tiles: split only as
    ``splits`` or ``GPUTENSOR_GEMM_SPLITK`` say (clamped), never tuned."""
    ctx = backend.context
    if forced_tiles is not None:
        if splits is None:
            splits = splitk_override()
        if not reads or splits is None or splits <= 1:
            return forced_tiles, 1
        return clamp_plan(backend, acc_type, m, n, k, batch, forced_tiles, splits)
    if not reads:
        return gemm_tiles(ctx, acc_type, m, n, batch), 1
    forced = autotune.forced_plan()
    if forced is not None:
        return clamp_plan(backend, acc_type, m, n, k, batch, *forced)

    def static() -> tuple[GemmTiles, int]:
        tiles, count = gemm_plan(ctx, acc_type, m, n, k, batch, splits)
        return clamp_plan(backend, acc_type, m, n, k, batch, tiles, count,
                          static_fallback=acc_type != "f64" or ctx.is_software)

    if tune is not None and splits is None and acc_type == "f32" and splitk_override() is None:
        plan = autotune.tuned_plan(backend, tune, acc_type, m, n, k, batch, static, GEMM_PLANS)
        if plan is not None:
            return clamp_plan(backend, acc_type, m, n, k, batch, *plan)
    return static()


#: The tile facts the autotuner chooses among (it sits below this module).
GEMM_PLANS = autotune.PlanSpace(GemmTiles, _fits, _big_tiles, TILES_MEDIUM, clamp_plan)


@dataclass(frozen=True)
class SplitRecord:
    """The split-K part of one gemm-core dispatch: its ``splits`` slices of partials (``count``
    values each) and the ``gemm_combine.wgsl`` parameters that finish it."""

    splits: int
    count: int
    combine: bytes


def dispatch_gemm_records(backend: Any, kernel: str, types: Mapping[str, str],
                          defines: Mapping[str, object],
                          records: Sequence[tuple[bytes, list[Any], tuple[int, int, int],
                                                  SplitRecord | None]]) -> None:
    """Record gemm-core dispatches ``(params, [a, b, c], grid, split)`` built (and validated) by
    the caller. A split one runs with its C binding replaced by a scratch buffer (acc_t partials,
    one pooled allocation for all records, freed once recorded: later users of the block record
    their work after these dispatches), then the combine into C."""
    ctx = backend.context
    acc_size = 8 if types["ACC"] == "f64" else 4
    need = max((r[3].splits * r[3].count for r in records if r[3] is not None), default=0)
    scratch = backend.alloc(need * acc_size, zero=False) if need else None
    try:
        for params, bindings, grid, split in records:
            if split is None:
                ctx.dispatch(kernel, params, bindings, grid, defines)
                continue
            part = backend.window(scratch, split.splits * split.count * acc_size, acc_size).binding
            ctx.dispatch(kernel, params, [bindings[0], bindings[1], part], grid, defines)
            record_combine(ctx, types, split.combine, part, bindings[2], split.count)
    finally:
        if scratch is not None:
            backend.free(scratch)
