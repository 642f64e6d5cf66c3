"""Scaled dot-product attention: ``o = softmax(q @ k^T * scale) @ v``, flash-attention style.

Operands are contiguous ``[batch, heads, seq, head_dim]`` arrays (``q`` and ``o`` with ``seq_q``
rows, ``k`` and ``v`` with ``seq_kv``) of one float dtype. The kernels never materialise the
score matrix: they stream K/V tiles through workgroup memory with a running (online) softmax
per query row (row max ``m``, row sum ``l``, unnormalised output ``acc``), in base 2 with
``log2(e)`` folded into ``scale``. float16 is stored as f16 and computed in f32; float32 in f32;
float64 in f64 (with a polynomial ``exp2``: Vulkan has no 64-bit ``exp2``).

Semantics
---------
* ``causal`` masks key ``j`` for query ``i`` when ``j > i + seq_kv - seq_q`` (bottom-right
  aligned, as a KV cache needs: one decoding query sees every cached key). For ``seq_q ==
  seq_kv`` this is torch's ``is_causal``; for other lengths torch's ``is_causal`` is top-left
  aligned, and the equivalent torch call passes ``attn_mask=ones(seq_q, seq_kv).tril(seq_kv -
  seq_q)``.
* A query row whose keys are all masked (``causal`` with ``seq_q > seq_kv``: rows
  ``i < seq_q - seq_kv``) produces **zeros**. torch's ``scaled_dot_product_attention`` with the
  same boolean mask produces NaN there; zeros are what flash-attention kernels output, and they
  keep such rows harmless in later reductions.
* ``o`` must not overlap ``q``, ``k`` or ``v``.

Kernels (gputensor/_wgsl)
-------------------------
* ``attention_flash.wgsl`` (prefill, ``seq_q > DECODE_MAX_SEQ_Q``, float16/float32; the default):
  one workgroup per (batch*head, block of BQ = 64 query rows, key split); 64-key tiles; invocation
  (ty, tx) owns query rows ty + 16r (r < 4) in both phases: a 4-row x TC-key score tile (TC = 8: 128
  invocations for head_dim <= 128; TC = 4: 256 invocations above) fed by vec4 reads of Q and K
  staged row-major (16 fmas per 4 + TC vec4 reads and depth quad), and a 4-row x 4*QPT-column
  output tile (column quads tx + NX*c, vec4 reads of P^T and V: 16 QPT fmas per 1 + QPT reads
  and key). The head dim is padded to a multiple of 4 * NX (32 or 64 columns). Q, K and V are
  read in quads of 4 head-dim columns (one 16-byte load each when head_dim and the operand
  offsets are multiples of 4: the bindings are then arrays of vec4). Q/K chunks of DC
  = 16 head-dim columns (8 where workgroup memory is 32 KiB) and V chunks of KC keys stream
  through a two-slot ring, the next chunk fetched into registers while the current one is used:
  one barrier per chunk, DP/DC + 64/KC + 2 per tile. About 37 KiB of workgroup memory with DC =
  16 (H200: 48 KiB), 29 KiB with DC = 8 (lavapipe: 32 KiB). See ``FlashShape``.
* ``attention_tiled.wgsl`` (prefill, the general kernel: float64, and every dtype with
  ``KERNEL_VARIANT = "tiled"``): 256
  invocations (128 for float64) in a 16 x 16 grid, each owning a 4x4 score micro-tile and a
  4-row x head_dim/16-column output tile (scalar, lane-indexed reads of V). Q^T/K^T chunks of 16
  head-dim columns, the probabilities P^T and chunks of V are staged in workgroup memory (about
  26 KiB; 31 KiB for float64); query blocks of 64 rows (32 for float64).
* The prefill kernel is chosen by ``kernel_variant()`` (``KERNEL_VARIANT``, else the knob
  ``attention_kernel``: environment ``GPUTENSOR_ATTENTION_KERNEL``, default ``flash``;
  ``tiled`` selects attention_tiled.wgsl; ``flash-64x8``, ``flash-64x4``, ``flash-32x4``,
  ``flash-64x8-dc8`` force attention_flash tiles, and ``-r8`` after the tiles (``flash-64x4-r8``,
  ``flash-32x4-r8``) gives each invocation 8 query rows instead of 4 (half the invocations,
  twice the fmas per workgroup-memory read and per barrier; head_dim <= 32 TC), and ``-hp``
  after that stages the probabilities half a tile at a time (half their workgroup memory, one
  more barrier per tile): ``flash-128x4-r8-hp`` runs 128 query rows per workgroup (256
  invocations) in 47 KiB, a third less staging of Q, K and V per fma than 64 rows, and
  ``flash-64x4-hp`` 32-key V chunks at head_dim 128 (one barrier less per tile); the earlier names ``new``,
  ``new-BQxTC[-dc8]`` and ``old`` mean the same, see ``VARIANT_ALIASES``).
  ``python -m benchmarks.tune_attention`` times them side by side.
* ``attention_decode.wgsl`` (``seq_q <= DECODE_MAX_SEQ_Q``): one workgroup of 256 per
  (batch*head, query row, key split); 16-lane groups score 4 keys each with coalesced loads of K,
  then each invocation accumulates one output column over a share of the tile's keys.
* With several key splits (flash-decoding: chosen when the grid would otherwise have fewer than
  ``TILED_TARGET_GROUPS`` / ``DECODE_TARGET_GROUPS`` workgroups, splits of at least
  ``MIN_SPLIT_KEYS`` keys), each split writes a partial record ``(m, l, acc[head_dim])`` to a
  scratch buffer (``backend.alloc``, freed once recorded) and ``attention_combine.wgsl`` merges
  them.
The head dimension is padded (``padded_head_dim``: to 16 for attention_tiled.wgsl and the decode kernel,
to 32 or 64 for attention_flash.wgsl) and compiled into the kernel; ``head_dim`` itself is a
parameter, so one pipeline serves every head_dim of a padding.
Two habits keep the kernels fast on NVIDIA's Vulkan driver, where naga bounds every loop with a
counter and the driver then unrolls none: register state lives in named vectors (``acc0`` ..
``acc15``) or in arrays indexed only inside ``//#unroll`` loops (constant indices), never in
loop-indexed arrays (those spill to local memory), and global loads are
issued in batches into registers before they are used or stored (a load used in its own loop
iteration costs a full memory latency per iteration). Measured on an H200 (batch 4, heads 16):
seq 4096, head_dim 128, float32 about 13.7 TFLOP/s (torch 3.4x faster); decoding one query over
32768 float32 keys 0.88 ms (2.4 TB/s, faster than torch's 3.1 ms).

Size limits
-----------
Operands larger than one binding window (``backend.max_window_bytes()``) are processed in
several dispatches over consecutive (batch, head) slabs. One slab of an operand, ``seq * head_dim
* itemsize`` bytes, must fit one window (128 MiB on lavapipe, 2 GiB on an H200), else
BackendError (unsupported). ``head_dim`` may be 1..256.
"""

from __future__ import annotations

import functools
import math
import numbers
import operator
import re
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from . import config
from .errors import invalid_argument, unsupported
from .kernels import template_source
from .launch import LaunchProgram, Region
from .plan_cache import PlanCache
from .validate import check_pointer

if TYPE_CHECKING:
    from .webgpu import WebGpuBackend

#: Largest supported head_dim.
MAX_HEAD_DIM = 256
#: Query rows up to which the decode kernel (one workgroup per row) is used.
DECODE_MAX_SEQ_Q = 4
#: Keys per K/V tile in both kernels.
TILE_KEYS = 64
#: Head-dim granularity of the kernel specialisations.
HEAD_DIM_STEP = 16
#: Workgroups the key splits aim for (the H200 has 132 SMs) ...
TILED_TARGET_GROUPS = 264
DECODE_TARGET_GROUPS = 1024
#: ... without splits shorter than this many keys.
MIN_SPLIT_KEYS = 256

_LOG2E = 1.4426950408889634
_DC = 16  # head-dim columns per staged Q/K chunk of the tiled kernel (attention_tiled.wgsl DC)
_F32_MAX = float(np.finfo(np.float32).max)
#: WGSL literal of the most negative finite value per compute type: the running max before any
#: visible key (-inf would turn exp2(m_old - m_new) into NaN for rows that saw no key yet).
_MOST_NEGATIVE = {
    "f32": f"f32({-_F32_MAX!r})",
    "f64": f"f64({-float(np.finfo(np.float64).max)!r})",
}


#: Prefill kernel variant: ``"flash"`` (attention_flash.wgsl, tiles chosen per head_dim and
#: adapter), ``"flash-BQxTC"`` (attention_flash.wgsl with BQ query rows per workgroup and TC keys
#: per invocation: ``flash-64x8``, ``flash-64x4``, ``flash-32x4``, ``flash-128x4-r8-hp``; then
#: ``-r8`` for 8 query rows per invocation instead of 4, ``-hp`` for the probabilities staged
#: half a tile at a time, and ``-dc8`` to force 8-column Q/K chunks) or ``"tiled"``
#: (attention_tiled.wgsl). None (the default): the knob
#: ``attention_kernel`` (``GPUTENSOR_ATTENTION_KERNEL``, ``config.override`` for an A/B), else
#: ``"flash"``; benchmarks/tune_attention.py and tests set this per run. float64 always uses the
#: tiled kernel.
KERNEL_VARIANT: str | None = None


def kernel_variant() -> str:
    """The prefill kernel variant in effect (see ``KERNEL_VARIANT``), under its current name."""
    return canonical_variant(KERNEL_VARIANT or config.value("attention_kernel") or "flash")
#: Variants benchmarks/tune_attention.py times by default.
VARIANTS = ("tiled", "flash", "flash-64x4", "flash-32x4", "flash-64x8-dc8", "flash-64x4-r8", "flash-32x4-r8",
            "flash-64x4-r8-hp", "flash-128x4-r8-hp")
#: Earlier names of the variants, still accepted: ``new`` is ``flash``, ``new-BQxTC[-dc8]`` is
#: ``flash-BQxTC[-dc8]``, ``old`` is ``tiled``.
VARIANT_ALIASES = {"new": "flash", "old": "tiled"}


def canonical_variant(variant: str) -> str:
    """``variant`` under its current name (``VARIANT_ALIASES``; ``new-...`` is ``flash-...``)."""
    if isinstance(variant, str) and variant.startswith("new-"):
        return "flash-" + variant[4:]
    return VARIANT_ALIASES.get(variant, variant)


@dataclass(frozen=True)
class AttentionPlan:
    """How one attention call is carried out.

    ``kernel``: ``"attention_flash"`` (register micro-tiles), ``"attention_tiled"`` (the
    general tiled kernel) or ``"attention_decode"``; ``block_q``: query rows per workgroup (1 for
    decode); ``padded_head_dim``: head_dim rounded up to the kernel's column granularity;
    ``key_chunk``: V keys staged at once (tiled kernels); ``stage_vec4``: size of the staging
    area (attention_tiled) or of one ring slot (attention_flash) in vec4; ``splits`` / ``split_len``:
    key-sequence splits and keys per split (a multiple of 64); ``slabs_per_dispatch``: (batch,
    head) slabs per dispatch so every binding fits one window. attention_flash only:
    ``tile_cols``: keys per invocation in the score tile (TC), ``depth_chunk``: head-dim columns
    per staged Q/K chunk (DC), ``invocations``: workgroup size, ``rows``: query rows per
    invocation (RM: 4 or 8), ``halves``: 2 where the probabilities are staged half a tile at a
    time (PH).
    """

    kernel: str
    block_q: int
    padded_head_dim: int
    key_chunk: int
    stage_vec4: int
    splits: int
    split_len: int
    slabs_per_dispatch: int
    tile_cols: int = 0
    depth_chunk: int = 0
    invocations: int = 0
    rows: int = 0
    halves: int = 0


def _size(name: str, value: object) -> int:
    """``value`` as a positive int; BackendError (invalid argument) otherwise (bools too)."""
    if isinstance(value, (bool, np.bool_)):
        raise invalid_argument(f"attention: {name} must be an integer, not {value!r}")
    try:
        n = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise invalid_argument(f"attention: {name} must be an integer, not {value!r}") from None
    if n <= 0:
        raise invalid_argument(f"attention: {name} must be positive, got {n}")
    return n


def _tiled_shape(padded_head_dim: int, compute_size: int, storage_limit: int) -> tuple[int, int, int]:
    """(block_q, key_chunk, stage_vec4) of the tiled kernel fitting ``storage_limit`` bytes of
    workgroup memory; BackendError (unsupported) if none does."""
    candidates = (32,) if compute_size == 8 else (64, 32)
    for block_q in candidates:
        stage = _DC * (block_q + 4 + TILE_KEYS + 4)  # Q^T and K^T chunks, padded rows
        invocations = 4 * block_q
        # V keys staged at once: fits the staging area, at most 8 loads per invocation.
        key_chunk = 1 << int(math.log2(min(TILE_KEYS, stage // padded_head_dim,
                                           8 * invocations // padded_head_dim)))
        pt = TILE_KEYS * (block_q // 4 + 1) * 4  # probabilities, transposed and padded
        if (stage + pt) * compute_size <= storage_limit:
            return block_q, key_chunk, stage // 4
    raise unsupported(
        f"attention needs more workgroup memory than this adapter's {storage_limit} bytes"
    )


@dataclass(frozen=True)
class FlashShape:
    """Tiles of attention_flash.wgsl (see its header): ``block_q`` (BQ) rows per workgroup,
    ``tile_cols`` (TC) keys per invocation, ``padded_head_dim`` (DP), ``depth_chunk`` (DC),
    ``key_chunk`` (KC), ``slot_vec4`` (SLOT4), ``rows`` (RM) query rows per invocation and
    ``halves`` (PH): 2 where pt holds the probabilities of half a tile at a time."""

    block_q: int
    tile_cols: int
    padded_head_dim: int
    depth_chunk: int
    key_chunk: int
    slot_vec4: int
    rows: int = 4
    halves: int = 1

    @classmethod
    def of_plan(cls, plan: AttentionPlan) -> FlashShape:
        """The tiles of an ``attention_flash`` plan."""
        return cls(plan.block_q, plan.tile_cols, plan.padded_head_dim, plan.depth_chunk, plan.key_chunk,
                   plan.stage_vec4, plan.rows, plan.halves)

    @property
    def nx(self) -> int:
        return TILE_KEYS // self.tile_cols

    @property
    def invocations(self) -> int:
        return self.nx * self.block_q // self.rows

    def workgroup_bytes(self, compute_size: int) -> int:
        """Workgroup memory of the kernel: the two ring slots and the transposed probabilities."""
        return (2 * self.slot_vec4 + TILE_KEYS // self.halves * (self.block_q // 4 + 1)) * 4 * compute_size

    def defines(self, storage: str = "f32", vec: bool = False) -> dict[str, object]:
        """The kernel's tile placeholders and its q/k/v element type and loaders for ``storage``
        ('f16', 'f32'), quad loads (``vec``: head_dim and every operand's first element index
        multiples of 4) or scalar ones (cached: treat as read-only)."""
        return _flash_defines(self, storage, vec)


@functools.lru_cache(maxsize=64)
def _flash_defines(shape: FlashShape, storage: str, vec: bool) -> dict[str, object]:
    """``FlashShape.defines``."""
    nt, dp, dc, kc = shape.invocations, shape.padded_head_dim, shape.depth_chunk, shape.key_chunk
    rg = shape.rows // 4
    return {"BQ": shape.block_q, "TC": shape.tile_cols, "NX": shape.nx, "RG": rg, "RM": shape.rows,
            "SN": shape.tile_cols * rg, "TH": shape.tile_cols // 2, "PH": shape.halves, "NT": nt, "DP": dp,
            "QPT": dp // (4 * shape.nx), "DC": dc, "DC4": dc // 4, "KC": kc,
            "QQ": shape.block_q * dc // (4 * nt), "KQ": TILE_KEYS * dc // (4 * nt),
            "VQ": kc * dp // (4 * nt), "SLOT4": shape.slot_vec4,
            "QKV": f"vec4<{storage}>" if vec else storage, "LOADERS": _flash_loaders(vec)}


def _flash_loaders(vec: bool) -> str:
    """attention_flash.wgsl's LOADERS: ld4_q/k/v and ld4_qm/km/vm, from
    attention_flash_quad_loads.wgsl (``vec``) or attention_flash_scalar_loads.wgsl."""
    return template_source("attention_flash_quad_loads" if vec else "attention_flash_scalar_loads")


def _flash_shape(head_dim: int, compute_size: int, storage_limit: int, block_q: int, tile_cols: int,
                 depth_chunks: tuple[int, ...] = (16, 8), rows: int = 4, halves: int = 1) -> FlashShape | None:
    """The attention_flash tiles for ``block_q`` x ``tile_cols`` with ``rows`` query rows per
    invocation (and the probabilities in ``halves``) that fit ``storage_limit`` bytes of
    workgroup memory (the deepest Q/K chunk, then the longest V chunk that does), or None.

    Invariants (attention_flash.wgsl): NT = (64 / TC) * BQ / RM invocations; DP a multiple of
    4 * NX with QPT = DP / (4 NX) <= 16 / RM column quads per invocation; NC = DP / DC and
    NV = 64 / KC even; a whole number, 1 to 4, of quads (4 head-dim columns) fetched per
    invocation and chunk from Q and from K (at most 4 together) and from V."""
    nx = TILE_KEYS // tile_cols
    nt = nx * block_q // rows
    step = 4 * nx
    dp = -(-head_dim // step) * step
    if dp > (16 // rows) * step:
        return None
    for dc in depth_chunks:
        if ((block_q + TILE_KEYS) * dc > 16 * nt or block_q * dc < 4 * nt or (block_q * dc) % (4 * nt)
                or (TILE_KEYS * dc) % (4 * nt) or dp % (2 * dc)):
            continue
        qk = (block_q + TILE_KEYS) * (dc // 4 + 1)  # vec4 of a Q/K chunk, padded rows
        kc = 32
        while kc >= 4:
            exchange = nx * (block_q // 4 + 1)  # vec4 of the row max / row sum exchange
            shape = FlashShape(block_q, tile_cols, dp, dc, kc, max(qk, kc * dp // 4, exchange), rows, halves)
            if (4 * nt <= kc * dp <= 16 * nt and (kc * dp) % (4 * nt) == 0 and kc <= TILE_KEYS // halves
                    and shape.workgroup_bytes(compute_size) <= storage_limit):
                return shape
            kc //= 2
    return None


def _flash_plan_shape(variant: str, head_dim: int, compute_size: int,
                      storage_limit: int) -> FlashShape | None:
    """The attention_flash tiles of kernel ``variant`` ("flash", "flash-BQxTC[-r8][-hp][-dc8]", under its
    current name) for this head dim, or None when the variant does not apply (then the tiled
    kernel runs)."""
    if compute_size == 8:
        return None
    if variant == "flash":
        # 64 rows x 4 keys per invocation (256 invocations) measured fastest on the H200 at
        # head_dim 64 and 128 (benchmarks.tune_attention on an H200: 0.58-0.71x torch against
        # 0.53-0.64x for 64x8). It pads the head dim to a multiple of 64, 64x8 to one of 32:
        # 64x8 where it pads less (head_dim 80: 96 against 128) or where 64x4 does not fit
        # (lavapipe's 32 KiB), then 32x4.
        # Where 47 KiB of workgroup memory fit, 128 rows x 4 keys with 8 rows per invocation
        # and the probabilities staged in halves ("flash-128x4-r8-hp") went first on the H200:
        # head_dim 128 0.70-0.79x torch (64x4: 0.59-0.69x), head_dim 64 0.85-1.03x (0.70-0.90x).
        wide = _flash_shape(head_dim, compute_size, storage_limit, 128, 4, (16, 8), 8, 2)
        shapes = [_flash_shape(head_dim, compute_size, storage_limit, bq, tc)
                  for bq, tc in ((64, 4), (64, 8), (32, 4))]
        four, eight, small = shapes
        if wide is not None and all(s is None or wide.padded_head_dim <= s.padded_head_dim for s in (four, eight)):
            return wide
        if four is not None and (eight is None or four.padded_head_dim <= eight.padded_head_dim):
            return four
        return eight if eight is not None else small
    m = re.fullmatch(r"flash-(\d+)x(\d+)(-r8)?(-hp)?(-dc8)?", variant)
    if m is None:
        raise invalid_argument(f"attention: unknown kernel variant {variant!r} (GPUTENSOR_ATTENTION_KERNEL)")
    bq, tc = int(m.group(1)), int(m.group(2))
    if bq not in (32, 64, 128) or tc not in (4, 8):
        raise invalid_argument(f"attention: unknown kernel variant {variant!r} (GPUTENSOR_ATTENTION_KERNEL)")
    chunks = (8,) if m.group(5) else (16, 8)
    shape = _flash_shape(head_dim, compute_size, storage_limit, bq, tc, chunks, 8 if m.group(3) else 4,
                         2 if m.group(4) else 1)
    if shape is None:  # this head_dim needs other tiles: the default choice
        return _flash_plan_shape("flash", head_dim, compute_size, storage_limit)
    return shape


def plan_attention(n_bh: int, seq_q: int, seq_kv: int, head_dim: int, itemsize: int,
                   compute_size: int, max_window: int, storage_limit: int = 32768,
                   variant: str | None = None) -> AttentionPlan:
    """Choose kernel, tiles, key splits and dispatch chunking for validated sizes.

    ``variant`` names the prefill kernel (``kernel_variant()`` when None). Raises BackendError
    (unsupported) when one (batch, head) slab of an operand does not fit ``max_window`` bytes or
    the tiles do not fit ``storage_limit`` bytes of workgroup memory; (invalid argument) for an
    unknown variant.
    """
    variant = kernel_variant() if variant is None else canonical_variant(variant)
    padded = -(-head_dim // HEAD_DIM_STEP) * HEAD_DIM_STEP
    slab_q = seq_q * head_dim * itemsize
    slab_kv = seq_kv * head_dim * itemsize
    if max(slab_q, slab_kv) > max_window:
        raise unsupported(
            f"attention: one (batch, head) slab of {max(slab_q, slab_kv)} bytes "
            f"(seq {max(seq_q, seq_kv)} x head_dim {head_dim} x {itemsize} B) exceeds the "
            f"{max_window}-byte binding window of this adapter"
        )
    flash = None
    if seq_q <= DECODE_MAX_SEQ_Q:
        kernel, block_q, key_chunk, stage_vec4 = "attention_decode", 1, 0, 0
        base_groups, target = n_bh * seq_q, DECODE_TARGET_GROUPS
    else:
        if variant != "tiled":
            flash = _flash_plan_shape(variant, head_dim, compute_size, storage_limit)
        if flash is not None:
            kernel, block_q, key_chunk, stage_vec4 = "attention_flash", flash.block_q, flash.key_chunk, flash.slot_vec4
            padded = flash.padded_head_dim
        else:
            kernel = "attention_tiled"
            block_q, key_chunk, stage_vec4 = _tiled_shape(padded, compute_size, storage_limit)
        base_groups, target = n_bh * -(-seq_q // block_q), TILED_TARGET_GROUPS
    splits = 1
    if base_groups < target:
        splits = max(1, min(-(-target // base_groups), seq_kv // MIN_SPLIT_KEYS))
    # A split's partial records for one slab must fit one window too.
    record_slab = seq_q * (head_dim + 2) * compute_size
    splits = max(1, min(splits, max_window // record_slab))
    tiles = -(-seq_kv // TILE_KEYS)
    split_len = -(-tiles // splits) * TILE_KEYS
    splits = -(-seq_kv // split_len)
    per_slab = [slab_q, slab_kv] + ([record_slab * splits] if splits > 1 else [])
    slabs = max(1, min(n_bh, *(max_window // b for b in per_slab)))
    extra = ((flash.tile_cols, flash.depth_chunk, flash.invocations, flash.rows, flash.halves)
             if flash is not None else ())
    return AttentionPlan(kernel, block_q, padded, key_chunk, stage_vec4, splits, split_len, slabs, *extra)


def _f32_bits(x: float) -> int:
    """The IEEE bits of ``x`` rounded to float32."""
    return struct.unpack("<I", struct.pack("<f", x))[0]


def attention(backend: WebGpuBackend, q: int, k: int, v: int, o: int, batch: int, heads: int,
              seq_q: int, seq_kv: int, head_dim: int, scale: float, causal: bool,
              *, dtype: str = "float32") -> None:
    """Record ``o = softmax(q @ k^T * scale [causal mask]) @ v`` on ``backend`` (a WebGpuBackend).

    ``q``/``o``: pointers to contiguous ``[batch, heads, seq_q, head_dim]``; ``k``/``v``: to
    ``[batch, heads, seq_kv, head_dim]``; all of ``dtype`` ('float16', 'float32', 'float64').
    ``causal`` masks key j for query i when ``j > i + seq_kv - seq_q``; fully masked rows give
    zeros (see the module docstring).

    A call is planned once per call structure (everything but the pointers: ``_AttentionCall``,
    kept per backend); a repeated call checks its pointers and replays its ``LaunchProgram``.

    Raises BackendError: invalid argument for a non-positive or non-integer size, a non-finite
    or out-of-range ``scale`` (|scale| * log2(e) must fit a float32), a ``causal`` that is not a
    bool, an unknown dtype, a pointer that is unknown, misaligned for the item size or whose
    range runs past its allocation, or ``o`` overlapping ``q``, ``k`` or ``v``; unsupported for
    ``head_dim > 256``, a dtype the adapter lacks, or a (batch, head) slab larger than one
    binding window. Nothing is recorded when it raises.
    """
    key = None
    if (type(batch) is int and type(heads) is int and type(seq_q) is int and type(seq_kv) is int
            and type(head_dim) is int and type(scale) is float and type(causal) is bool and type(dtype) is str):
        key = (batch, heads, seq_q, seq_kv, head_dim, scale, causal, dtype, kernel_variant(),
               backend.max_window_bytes())
        plans = _ATTENTION_PLANS.of(backend)
        call = plans.get(key)
        if call is not None and call.ctx is backend._ctx:
            call.launch(backend, q, k, v, o)
            return
    call = _AttentionCall.build(backend, batch, heads, seq_q, seq_kv, head_dim, scale, causal, dtype)
    if key is not None:
        _ATTENTION_PLANS.keep(plans, key, call)
    call.launch(backend, q, k, v, o)


#: Per backend: the plain arguments of an ``attention`` call but its pointers, the kernel
#: variant and the binding window -> its ``_AttentionCall``.
_ATTENTION_PLANS = PlanCache(256)
#: Parameter words of the attention kernels (attention_params.wgsl; the window words 1..4) and
#: of attention_combine.wgsl (window words 1, 2).
_WORDS = struct.Struct("<16I")
_COMBINE_WORDS = struct.Struct("<8I")
_Q_FIRST, _K_FIRST, _V_FIRST, _O_FIRST = 1, 2, 3, 4
_WS_FIRST, _CO_FIRST = 1, 2


def _no_placeholder(backend: Any, nbytes: int, *bindings: Any) -> Any:  # pragma: no cover
    raise AssertionError("attention programs bind no placeholders")


@dataclass(eq=False)
class _AttentionCall:
    """A validated ``attention`` call on the context ``ctx``, everything but the pointers: its
    plan, the kernels' defines and parameter words (window words 0), and its launch programs
    (``programs``: per quad-load choice, compiled on first use)."""

    ctx: Any
    plan: AttentionPlan
    itemsize: int
    compute_size: int
    storage: str
    n_bh: int
    seq_q: int
    head_dim: int
    slab_q: int
    slab_kv: int
    record: int
    words: tuple[int, ...]
    defines: dict[str, object]
    common: dict[str, object]
    flash: FlashShape | None
    programs: dict[bool, LaunchProgram]

    @classmethod
    def build(cls, backend: WebGpuBackend, batch: Any, heads: Any, seq_q: Any, seq_kv: Any, head_dim: Any,
             scale: Any, causal: Any, dtype: Any) -> _AttentionCall:
        """Check the arguments but the pointers and plan the call (BackendError as ``attention``
        says)."""
        batch = _size("batch", batch)
        heads = _size("heads", heads)
        seq_q = _size("seq_q", seq_q)
        seq_kv = _size("seq_kv", seq_kv)
        head_dim = _size("head_dim", head_dim)
        if head_dim > MAX_HEAD_DIM:
            raise unsupported(f"attention: head_dim {head_dim} is larger than the supported {MAX_HEAD_DIM}")
        if isinstance(scale, (bool, np.bool_)) or not isinstance(scale, numbers.Real):
            raise invalid_argument(f"attention: scale must be a real number, not {scale!r}")
        scale = float(scale)
        if not math.isfinite(scale):
            raise invalid_argument(f"attention: scale must be finite, got {scale}")
        scale_log2 = scale * _LOG2E
        if abs(scale_log2) > _F32_MAX:
            raise invalid_argument(
                f"attention: |scale| {abs(scale)} is too large (limit {_F32_MAX / _LOG2E:.3g})"
            )
        if isinstance(causal, (bool, np.bool_)) or (isinstance(causal, numbers.Integral) and causal in (0, 1)):
            causal = bool(causal)
        else:
            raise invalid_argument(f"attention: causal must be a bool, not {causal!r}")
        itemsize, storage = backend.float_dtype(dtype)
        compute = "f64" if storage == "f64" else "f32"
        compute_size = 8 if compute == "f64" else 4

        n_bh = batch * heads
        ctx = backend.context
        storage_limit = int(ctx.limits.get("max-compute-workgroup-storage-size", 16384))
        plan = plan_attention(n_bh, seq_q, seq_kv, head_dim, itemsize, compute_size,
                              backend.max_window_bytes(), storage_limit)
        split = plan.splits > 1
        common = {
            "ENABLE": "enable f16;" if storage == "f16" else "",
            "STORAGE": storage,
            "COMPUTE": compute,
            "NEG": _MOST_NEGATIVE[compute],
            "EXP2": "exp2_poly" if compute == "f64" else "exp2",
        }
        defines = dict(common, OUT=compute if split else storage, DP=plan.padded_head_dim,
                       SPLIT="true" if split else "false")
        if plan.kernel == "attention_tiled":
            defines.update(BQ=plan.block_q, KC=plan.key_chunk, STAGE4=plan.stage_vec4)
        flash = FlashShape.of_plan(plan) if plan.kernel == "attention_flash" else None
        q_blocks = -(-seq_q // plan.block_q)  # (decode: block_q 1, a block per row)
        hi = float(np.float32(scale_log2))
        lo = float(np.float32(scale_log2 - hi))
        # (n_bh, the window words and the per-dispatch slab count are set per dispatch)
        words = (0, 0, 0, 0, 0, 0, seq_q, seq_kv, head_dim, q_blocks, plan.splits, plan.split_len, int(causal),
                 (seq_kv - seq_q) & 0xFFFFFFFF, _f32_bits(hi), _f32_bits(lo))
        return cls(ctx, plan, itemsize, compute_size, storage, n_bh, seq_q, head_dim, seq_q * head_dim * itemsize,
                   seq_kv * head_dim * itemsize, seq_q * plan.splits * (head_dim + 2) * compute_size, words,
                   defines, common, flash, {})

    def _kernel_defines(self, vec: bool) -> dict[str, object]:
        """The prefill/decode kernel's defines, with quad loads (``vec``) where it is attention_flash."""
        if self.flash is None:
            return self.defines
        return {**self.defines, **self.flash.defines(self.storage, vec)}

    def _dispatches(self) -> list[tuple[int, int, tuple[int, ...], int]]:
        """Per dispatch: (first slab, slabs, parameter words with the window words 0, workgroups)."""
        out = []
        spd = self.plan.slabs_per_dispatch
        groups_per_slab = self.plan.splits * -(-self.seq_q // self.plan.block_q)
        for bh0 in range(0, self.n_bh, spd):
            nb = min(spd, self.n_bh - bh0)
            words = (0, 0, 0, 0, 0, nb) + self.words[6:]
            out.append((bh0, nb, words, nb * groups_per_slab))
        return out

    def launch(self, backend: WebGpuBackend, q: int, k: int, v: int, o: int) -> None:
        """Check the pointers and the overlap of ``o`` (BackendError as ``attention`` says) and
        record the call."""
        n_bh, itemsize = self.n_bh, self.itemsize
        ranges = []
        for name, ptr, slab in (("q", q, self.slab_q), ("k", k, self.slab_kv), ("v", v, self.slab_kv),
                                ("o", o, self.slab_q)):
            ranges.append(check_pointer(backend, f"attention: {name}", ptr, n_bh * slab, itemsize))
        o_alloc, o_off = ranges[3]
        o_end = o_off + n_bh * self.slab_q
        for name, (alloc, off), slab in zip("qkv", ranges, (self.slab_q, self.slab_kv, self.slab_kv)):
            if alloc is o_alloc and off < o_end and o_off < off + n_bh * slab:
                raise invalid_argument(f"attention: o overlaps {name}")
        # quad loads when every quad of q, k, v starts at a multiple of 4 elements
        vec = self.flash is not None and self.head_dim % 4 == 0 and not any(
            (off // itemsize) % 4 for _, off in ranges[:3])
        ctx = self.ctx
        if ctx.__dict__.get("dispatch") is not None or not all(type(p) is int for p in (q, k, v, o)):
            self.record_reference(backend, (q, k, v, o), vec)
            return
        program = self.programs.get(vec)
        if program is None or not program.valid_for(ctx):
            program = self.programs[vec] = self._compile(ctx, vec)
        bases = [(alloc.buffer, alloc.buffer.size, alloc.nbytes, off, ptr, alloc.whole)
                 for (alloc, off), ptr in zip(ranges, (q, k, v, o))]
        if not program.run(backend, ctx, bases, _no_placeholder):
            self.record_reference(backend, (q, k, v, o), vec)

    def _compile(self, ctx: Any, vec: bool) -> LaunchProgram:
        """The launch program of the call (operands 0..3: q, k, v, o; 4: the split records)."""
        plan, itemsize, cs = self.plan, self.itemsize, self.compute_size
        split = plan.splits > 1
        defines = self._kernel_defines(vec)
        pipe = ctx.pipeline(plan.kernel, 4, defines)
        combine = ctx.pipeline("attention_combine", 2, self.common) if split else None
        records: list[tuple[Any, ...]] = []
        for bh0, nb, words, groups in self._dispatches():
            sq, skv = self.slab_q, self.slab_kv
            regions = [Region(0, bh0 * sq, nb * sq, itemsize, 0, _Q_FIRST, 0),
                       Region(1, bh0 * skv, nb * skv, itemsize, 0, _K_FIRST, 0),
                       Region(2, bh0 * skv, nb * skv, itemsize, 0, _V_FIRST, 0)]
            out = Region(3, bh0 * sq, nb * sq, itemsize, 0, _O_FIRST, 0)
            scratch = Region(4, 0, nb * self.record, cs, 0, _O_FIRST, 0)
            records.append((pipe, defines, words, ctx.fold_grid(groups), regions + [scratch if split else out]))
            if split:
                n_out = nb * self.seq_q * self.head_dim
                records.append((combine, self.common, (0, 0, 0, nb * self.seq_q, self.head_dim, plan.splits, 0, 0),
                                ctx.fold_grid(-(-n_out // 256)),
                                [scratch._replace(word=_WS_FIRST), out._replace(word=_CO_FIRST)],
                                "attention_combine", _COMBINE_WORDS))
        aux = [(plan.slabs_per_dispatch * self.record, 0)] if split else []
        return LaunchProgram.compile(plan.kernel, _WORDS, ctx, records, aux)

    def record_reference(self, backend: WebGpuBackend, ptrs: tuple[int, int, int, int], vec: bool) -> None:
        """Record the call through ``WgpuContext.dispatch`` (windows from ``backend.window``):
        the path a dispatch wrapper (profiler, test spy) sees."""
        q, k, v, o = ptrs
        plan, itemsize, cs = self.plan, self.itemsize, self.compute_size
        split = plan.splits > 1
        ctx = self.ctx
        defines = self._kernel_defines(vec)
        scratch = backend.alloc(plan.slabs_per_dispatch * self.record, zero=False) if split else None
        try:
            for bh0, nb, words, groups in self._dispatches():
                sq, skv = self.slab_q, self.slab_kv
                wq = backend.window(q + bh0 * sq, nb * sq, itemsize)
                wk = backend.window(k + bh0 * skv, nb * skv, itemsize)
                wv = backend.window(v + bh0 * skv, nb * skv, itemsize)
                wo = backend.window(o + bh0 * sq, nb * sq, itemsize)
                out = backend.window(scratch, nb * self.record, cs) if split else wo
                params = list(words)
                params[_Q_FIRST:_O_FIRST + 1] = [wq.first, wk.first, wv.first, out.first]
                ctx.dispatch(plan.kernel, params, [wq.binding, wk.binding, wv.binding, out.binding],
                             ctx.fold_grid(groups), defines)
                if split:
                    n_out = nb * self.seq_q * self.head_dim
                    ctx.dispatch("attention_combine",
                                 [0, out.first, wo.first, nb * self.seq_q, self.head_dim, plan.splits, 0, 0],
                                 [out.binding, wo.binding], ctx.fold_grid(-(-n_out // 256)), self.common)
        finally:
            if scratch is not None:
                backend.free(scratch)
