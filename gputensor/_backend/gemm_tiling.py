"""GEMM tile configurations and their choice: the ``GemmTiles`` record, the named tiles, the
choice per adapter and problem size (``gemm_tiles``), the tile knobs ``gemm_tiles_f64`` /
``gemm_tiles_batched`` (``knob_tiles``), the float64 size table of GPUs (``F64_GPU_PLANS``,
``f64_gpu_plan``), and the kernel placeholders that follow from them (``kernel_types``).

Pure planning over an adapter's limits; ``gemm_splitk`` adds split-K, ``ops_gemm`` records.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from . import config
from .kernels import template_source

#: Largest batch handled by one dispatch (the grid's z dimension).
MAX_GRID_Z = 65535

# ---- tile configurations -------------------------------------------------------------------
@dataclass(frozen=True)
class GemmTiles:
    """A tile configuration: BM x BN tile of C per workgroup, BK-deep K slices, TM x TN
    micro-tile per invocation (TM and TN each 4 or 8; each invocation fetches 1 to 8 elements
    of each operand per K slice)."""

    bm: int
    bn: int
    bk: int
    tm: int
    tn: int

    @property
    def threads(self) -> int:
        """Invocations per workgroup."""
        return (self.bm // self.tm) * (self.bn // self.tn)

    def workgroup_bytes(self, acc_itemsize: int) -> int:
        """Workgroup memory of the two double-buffered staging arrays."""
        return 2 * self.bk * ((self.bm // 4 + 1) + (self.bn // 4 + 1)) * 4 * acc_itemsize

    def check(self) -> None:
        """Raise ValueError unless the configuration is one the kernel can run."""
        ok = (
            self.tm in (4, 8)
            and self.tn in (4, 8)
            and self.bm % self.tm == 0
            and self.bn % self.tn == 0
            and self.threads <= 1024
            and (self.bm * self.bk) % self.threads == 0
            and (self.bn * self.bk) % self.threads == 0
            and 1 <= self.bm * self.bk // self.threads <= 8
            and 1 <= self.bn * self.bk // self.threads <= 8
        )
        if not ok:
            raise ValueError(f"unusable gemm tile configuration {self}")

    def defines(self) -> dict[str, int]:
        """The tile placeholders of gemm_core.wgsl."""
        self.check()
        return {"BM": self.bm, "BN": self.bn, "BK": self.bk, "TM": self.tm, "TN": self.tn}


#: 128x128 tiles, 8x8 per invocation (256 invocations): large problems on GPUs.
TILES_LARGE = GemmTiles(128, 128, 8, 8, 8)
#: 128x64 tiles, 8x4 per invocation (256 invocations): tall-skinny problems (n <= 64) on GPUs.
TILES_TALL = GemmTiles(128, 64, 8, 8, 4)
#: 64x128 tiles, 4x8 per invocation (256 invocations): short-wide problems (m <= 64) on GPUs.
TILES_WIDE = GemmTiles(64, 128, 8, 4, 8)
#: 64x64 tiles, 4x4 per invocation (256 invocations): smaller problems on GPUs.
TILES_MEDIUM = GemmTiles(64, 64, 16, 4, 4)
#: 64x64 tiles, 4x4 per invocation, 8-deep K slices: f64 (half the workgroup memory).
TILES_MEDIUM_F64 = GemmTiles(64, 64, 8, 4, 4)
#: Software adapters (lavapipe), f32 accumulation: the fastest of the configurations measured
#: there at 512^3 (64x64 and 128x64 tiles, 4x4 and 8x8 micro-tiles, BK 8 and 16 were tried).
TILES_SOFTWARE = GemmTiles(128, 128, 8, 8, 8)
#: Last resort when an adapter's workgroup memory is smaller than every choice above.
TILES_SMALL = GemmTiles(32, 32, 8, 4, 4)

#: Workgroups (128x128 tiles) from which a GPU problem counts as large enough to fill the device.
FILL_TILES = 128


def _tiles(m: int, n: int, batch: int, tiles: GemmTiles) -> int:
    return -(-m // tiles.bm) * -(-n // tiles.bn) * batch


def _big_tiles(m: int, n: int) -> GemmTiles:
    """The 128-wide GPU tiles for an m x n problem (128x64 / 64x128 when n or m is at most 64)."""
    if n <= 64 and m > 64:
        return TILES_TALL
    if m <= 64 and n > 64:
        return TILES_WIDE
    return TILES_LARGE


def _fits(ctx: Any, tiles: GemmTiles, acc_size: int) -> bool:
    limit = int(ctx.limits.get("max-compute-workgroup-storage-size", 16384))
    return tiles.workgroup_bytes(acc_size) <= limit


def gemm_tiles(ctx: Any, acc_type: str, m: int, n: int, batch: int = 1) -> GemmTiles:
    """The tile configuration for an m x n (x batch) problem on ``ctx``'s adapter, without
    split-K (``gemm_plan`` adds it).

    GPUs get 128-wide tiles (128x128, or 128x64 / 64x128 when n or m is at most 64) once there
    are enough of them to fill the device, 64x64 otherwise and for f64; software adapters get
    the configuration measured fastest on lavapipe. The choice always fits the adapter's
    workgroup memory, and every choice has a multiple of BM invocations (conv2d relies on it).
    """
    acc_size = 8 if acc_type == "f64" else 4
    if ctx.is_software:
        candidates = [TILES_SOFTWARE if acc_size == 4 else TILES_MEDIUM_F64, TILES_MEDIUM_F64]
    elif acc_type == "f64":
        candidates = [TILES_MEDIUM_F64]
    else:
        big = _big_tiles(m, n)
        candidates = [big] if _tiles(m, n, batch, big) >= FILL_TILES else []
        candidates += [TILES_MEDIUM, TILES_MEDIUM_F64]
    for tiles in candidates:
        if _fits(ctx, tiles, acc_size):
            return tiles
    return TILES_SMALL


#: The tile knobs (``config``) of the gemm kernels: float64 data, and batches of f32-accumulating
#: products (more than one matrix).
TILE_KNOB_F64 = "gemm_tiles_f64"
TILE_KNOB_BATCHED = "gemm_tiles_batched"
#: The batched gemm kernels' tiles on GPUs (hardware adapters) where the knob above is unset, when
#: they fit the adapter's workgroup memory, without the split-K policy; None: ``gemm_plan``'s
#: choice (the f32 rule by size).
TILES_GPU_BATCHED: GemmTiles | None = None
#: float64 plans on GPUs where ``gemm_tiles_f64`` is unset (``f64_gpu_plan``): rows (least output
#: elements m*n*batch, least depth k, tiles, splits), the first row the problem reaches whose
#: tiles fit the adapter's workgroup memory. Measured on an H200 (GPU µs, 22 variants through
#: ``benchmarks.tools.gemm_tiles``): 128x128x8x8x8 was the fastest at 2048² (1,193 against 1,632
#: for 64x128x8x4x8 and 1,305 for 64x64x8x4x8), 4096² (9,206 against 12,696) and a batch of 64 x
#: 256² (195 against 246); 64x64x8x4x8 at 1024² (157 against 169; 128x128x8x8x8 263: 64 tiles
#: for 132 SMs). Split-K (2 or 4 slices of any of these tiles) was slower everywhere: its gemm
#: alone took longer than the unsplit one, and the combine added 10-50 µs.
F64_GPU_PLANS: tuple[tuple[int, int, GemmTiles, int], ...] = (
    (2048 * 2048, 0, GemmTiles(128, 128, 8, 8, 8), 1),
    (0, 0, GemmTiles(64, 64, 8, 4, 8), 1),
)
#: Least depth of one float64 split-K slice (``f64_gpu_plan`` lowers the splits to keep it).
F64_SPLIT_MIN_DEPTH = 256
#: ``TILES_GPU_BATCHED`` applies to batches of matrices whose m and n are at most this.
BATCHED_SMALL = 256

#: (``config.generation``, the tile knobs' values) as last read: ``plan_settings`` runs on every
#: matmul call, and these knobs (read once per process) change only with the generation.
_tile_knobs: tuple[int, tuple[Any, Any, bool]] = (-1, (None, None, True))


def tile_knob_values() -> tuple[Any, Any, bool]:
    """The values of the ``gemm_tiles_f64`` and ``gemm_tiles_batched`` knobs now (None: unset)
    and of ``gemm_f64_pairs``."""
    global _tile_knobs
    gen, values = _tile_knobs
    if gen != config.generation:
        gen = config.generation
        values = (config.value(TILE_KNOB_F64), config.value(TILE_KNOB_BATCHED),
                  bool(config.value("gemm_f64_pairs")))
        _tile_knobs = (gen, values)
    return values


def knob_tiles(ctx: Any, acc_type: str, batch: int, m: int = 0, n: int = 0) -> GemmTiles | None:
    """The tiles a gemm-kernel problem of ``batch`` m x n matrices with accumulator ``acc_type``
    takes from the tile knobs: ``gemm_tiles_f64`` for f64, ``gemm_tiles_batched`` for f32 with
    batch > 1; where that knob is unset, on a GPU, ``TILES_GPU_BATCHED`` (for m, n <=
    BATCHED_SMALL) when set and fitting; else None (``gemm_plan`` chooses: for f64 on a GPU
    ``f64_gpu_plan``).
    Raises ValueError, naming the knob's variable, for a knob's configuration the kernel cannot
    run or that needs more workgroup memory than ``ctx``'s adapter has."""
    f64_shape, batched_shape, _ = tile_knob_values()
    if acc_type == "f64":
        shape, name, default = f64_shape, TILE_KNOB_F64, None
    elif batch > 1:
        shape, name = batched_shape, TILE_KNOB_BATCHED
        default = TILES_GPU_BATCHED if max(m, n) <= BATCHED_SMALL else None
    else:
        return None
    if shape is None:
        if default is None or ctx.is_software or not _fits(ctx, default, 8 if acc_type == "f64" else 4):
            return None
        return default
    env = next(knob.env for knob in config.KNOBS if knob.name == name)
    tiles = GemmTiles(*shape)
    try:
        tiles.check()
    except ValueError:
        raise ValueError(f"{env}={'x'.join(map(str, shape))}: the gemm kernel cannot run these tiles "
                         "(TM, TN 4 or 8; at most 1024 invocations; 1 to 8 fetches of A and of B "
                         "per invocation and K slice)") from None
    acc_size = 8 if acc_type == "f64" else 4
    if not _fits(ctx, tiles, acc_size):
        limit = int(ctx.limits.get("max-compute-workgroup-storage-size", 16384))
        raise ValueError(f"{env}={'x'.join(map(str, shape))}: the tiles need "
                         f"{tiles.workgroup_bytes(acc_size)} bytes of workgroup memory, the adapter "
                         f"has {limit}")
    return tiles


def f64_gpu_plan(ctx: Any, m: int, n: int, k: int, batch: int = 1) -> tuple[GemmTiles, int]:
    """``(tiles, splits)`` of a float64 m x n (x batch) problem of depth k on a GPU: the first row
    of ``F64_GPU_PLANS`` it reaches (m*n*batch and k at least the row's) whose tiles fit ``ctx``'s
    workgroup memory, its splits lowered to slices of at least ``F64_SPLIT_MIN_DEPTH``;
    ``(gemm_tiles(...), 1)`` when no row applies."""
    work = m * n * batch
    for least_work, least_k, tiles, splits in F64_GPU_PLANS:
        if work >= least_work and k >= least_k and _fits(ctx, tiles, 8):
            return tiles, max(1, min(splits, k // F64_SPLIT_MIN_DEPTH))
    return gemm_tiles(ctx, "f64", m, n, batch), 1


_STAGING: dict[str, str] = {}


def staging_source(name: str) -> str:
    """The text of ``_wgsl/gemm_stage_<name>.wgsl`` ('quads' or 'pairs'), gemm_core's STAGING."""
    text = _STAGING.get(name)
    if text is None:
        text = _STAGING[name] = template_source(f"gemm_stage_{name}")
    return text


def kernel_types(wgsl_type: str) -> dict[str, str]:
    """Placeholders ENABLE, T, ACC and STAGING (the staging arrays of gemm_core: vec2 pairs for
    f64 data while ``gemm_f64_pairs`` is on, else vec4 quads) for a storage type ('f16', 'f32'
    or 'f64')."""
    pairs = wgsl_type == "f64" and tile_knob_values()[2]
    return {
        "ENABLE": "enable f16;" if wgsl_type == "f16" else "",
        "T": wgsl_type,
        "ACC": "f64" if wgsl_type == "f64" else "f32",
        "STAGING": staging_source("pairs" if pairs else "quads"),
    }


def pack_scalars(acc_type: str, *values: float) -> bytes:
    """Leading scalar fields of a Params struct (f32 or f64, matching acc_t)."""
    return struct.pack("<" + ("d" if acc_type == "f64" else "f") * len(values), *values)

