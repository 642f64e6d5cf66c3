"""Every ``GPUTENSOR_*`` tuning knob, in one table.

A knob has a typed value, a default taken from its environment variable, and a ``with``
override::

    from gputensor._backend import config

    config.value("fusion")                       # the value in effect
    with config.override(reduce_vec4=False):     # undone on exit
        ...

``KNOBS`` lists them (name, environment variable, parser, default, what it does). A knob read on
a cold path (adapter choice, tuning switches, shader dumps, the wait style) follows its
environment variable on every read (``live``); the others take it once per process, on their
first read. An override wins over the environment in both cases (``assign`` sets process-wide
values that stand in for the environment's until assigned again). An override holds for every thread
while its block runs (host copies and tuning run on worker threads); blocks nest, and each one's
exit removes exactly its own values, even when blocks of several threads end out of order.
Nothing here changes a global of another module, and this module imports nothing of gputensor
but the backend's errors.

Parsers raise ``ValueError`` (``BackendError`` with kind ``INVALID_ARGUMENT`` for the tuning
switches, as their callers always did) naming the variable and the values it takes.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import invalid_argument

__all__ = ["Knob", "KNOBS", "value", "override", "assign", "environment_value", "parse_switch",
           "parse_size", "generation", "Values"]

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


def parse_switch(env: str, raw: str | None, default: bool = False) -> bool:
    """A strict on/off value: 1/true/yes/on or 0/false/no/off/empty (any case); unset is
    ``default``. BackendError (invalid argument) otherwise."""
    if raw is None:
        return default
    text = raw.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise invalid_argument(f"{env}={raw!r} must be 1/true/yes/on or 0/false/no/off")


def _not_off(env: str, raw: str | None, default: bool) -> bool:
    """On unless the value is one of 0/false/off/no (any case)."""
    if raw is None:
        return default
    return raw.strip().lower() not in ("0", "false", "off", "no")


def _not_zero(env: str, raw: str | None, default: bool) -> bool:
    """On unless the value is exactly ``0``."""
    return default if raw is None else raw != "0"


def _integer(env: str, raw: str | None, default: int) -> int:
    """An integer (ValueError from ``int`` for anything else)."""
    return default if raw is None else int(raw)


def _count_or_auto(env: str, raw: str | None, default: int) -> int:
    """A non-negative integer; anything else (unset included) is ``default`` (automatic)."""
    text = (raw or "").strip()
    return int(text) if text.isdigit() else default


def _order_or_off(env: str, raw: str | None, default: int) -> int:
    """A positive integer, or -1 for off/0/false/no (any case); anything else (unset included)
    is ``default``."""
    text = (raw or "").strip().lower()
    if text in ("0", "off", "false", "no"):
        return -1
    return int(text) if text.isdigit() else default


def _splits(env: str, raw: str | None, default: int | None) -> int | None:
    """A non-negative integer (0 counts as 1: no split); unset or blank is ``default``.
    BackendError (invalid argument) for anything else."""
    if raw is None or not raw.strip():
        return default
    try:
        count = int(raw)
    except ValueError:
        count = -1
    if count < 0:
        raise invalid_argument(f"{env}={raw!r} must be a non-negative integer")
    return max(1, count)


def _wait_style(env: str, raw: str | None, default: str) -> str:
    """'spin', 'block', 'poller', or '' (unset: the adapter decides). ValueError otherwise."""
    mode = (raw or "").strip().lower()
    if mode not in ("", "spin", "block", "poller"):
        raise ValueError(f"{env} must be 'spin', 'block' or 'poller', not {mode!r}")
    return mode or default


_SIZE_SUFFIXES = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """Bytes of a size such as ``"1048576"``, ``"512M"``, ``"2GiB"``, ``"1.5G"`` (binary units;
    case-insensitive). Raises ValueError for anything else."""
    found = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([KMGT]?)(?:I?B)?\s*", str(text), re.IGNORECASE)
    if found is None:
        raise ValueError(f"not a size in bytes: {text!r} (examples: 1048576, 512M, 2GiB)")
    return int(float(found.group(1)) * _SIZE_SUFFIXES[found.group(2).upper()])


def _size(env: str, raw: str | None, default: int) -> int:
    """Bytes (``parse_size``); unset or blank is ``default``. ValueError naming ``env`` otherwise."""
    if raw is None or not raw.strip():
        return default
    try:
        return parse_size(raw)
    except ValueError as exc:
        raise ValueError(f"{env}: {exc}") from None


def _implementation(env: str, raw: str | None, default: str) -> str:
    """'native', 'dawn', or '' (unset: whichever is installed, wgpu-native first). ValueError
    otherwise."""
    name = (raw or "").strip().lower()
    if name not in ("", "native", "dawn"):
        raise ValueError(f"{env} must be 'native' (wgpu-py on wgpu-native) or 'dawn' (wgpudawn), not {name!r}")
    return name or default


def _f16_store(env: str, raw: str | None, default: str) -> str:
    """'exact' or 'pack' (any case); unset or blank is ``default``. ValueError otherwise."""
    mode = (raw or "").strip().lower()
    if mode not in ("", "exact", "pack"):
        raise ValueError(f"{env} must be 'exact' or 'pack', not {mode!r}")
    return mode or default


def _submit_policy(env: str, raw: str | None, default: str) -> str:
    """'work' or 'bytes' (any case); unset or blank is ``default``. ValueError otherwise."""
    mode = (raw or "").strip().lower()
    if mode not in ("", "work", "bytes"):
        raise ValueError(f"{env} must be 'work' or 'bytes', not {mode!r}")
    return mode or default


def _tile_shape(env: str, raw: str | None, default: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """Five positive integers written BMxBNxBKxTMxTN; unset or blank is ``default``. ValueError
    otherwise."""
    text = (raw or "").strip().lower()
    if not text:
        return default
    found = re.fullmatch(r"(\d+)x(\d+)x(\d+)x(\d+)x(\d+)", text)
    if found is None:
        raise ValueError(f"{env} must be BMxBNxBKxTMxTN (five integers, e.g. 128x128x16x8x8), not {raw!r}")
    return tuple(int(v) for v in found.groups())


def _tile_shape_or_auto(env: str, raw: str | None, default: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """``_tile_shape``, or None (no tiles forced) for ``auto``."""
    if (raw or "").strip().lower() == "auto":
        return None
    return _tile_shape(env, raw, default)


def _text(env: str, raw: str | None, default: str | None) -> str | None:
    """The text itself; unset or empty is ``default``."""
    return raw if raw else default


@dataclass(frozen=True)
class Knob:
    """One tuning knob: its ``name`` (the key of ``value``/``override``), environment
    variable ``env``, ``parse(env, raw, default)``, ``default`` (used when the variable is
    unset), whether it follows the environment on every read (``live``) and what it does."""

    name: str
    env: str
    parse: Callable[[str, str | None, Any], Any]
    default: Any
    live: bool
    doc: str


KNOBS: tuple[Knob, ...] = (
    Knob("wgpu", "GPUTENSOR_WGPU", _implementation, "", False,
         "WebGPU implementation: native (wgpu-py on wgpu-native) or dawn (wgpudawn on Dawn); "
         "'' : wgpu-native where installed, else Dawn"),
    Knob("adapter", "GPUTENSOR_ADAPTER", _text, None, True,
         "adapter to use: a backend name (vulkan, gl, ...) or part of the device name"),
    Knob("devices", "GPUTENSOR_DEVICES", _text, None, True,
         "which adapters are devices: unset or 'all': every adapter; 'default': the default "
         "device only (one device per process, as before there were several)"),
    Knob("wait", "GPUTENSOR_WAIT", _wait_style, "", True,
         "how host waits for the device: spin, block or poller ('' : block on software "
         "adapters, spin on hardware)"),
    Knob("submit_policy", "GPUTENSOR_SUBMIT_POLICY", _submit_policy, "bytes", False,
         "when the open command batch is submitted before a wait: 'work' (once it binds the "
         "flush bound, only if the device's estimated queue of submitted work runs out within "
         "SUBMIT_AHEAD_S, or the batch itself holds SUBMIT_PENDING_MAX_S of estimated work; "
         "see context.py) or 'bytes' (whenever it binds the flush bound)"),
    Knob("submit_bandwidth", "GPUTENSOR_SUBMIT_BANDWIDTH", _integer, 0, False,
         "GB/s the 'work' submit policy assumes the device streams bound bytes at (0: by adapter "
         "type: 5000 discrete, 200 integrated, 20 CPU, 500 other)"),
    Knob("submit_bytes", "GPUTENSOR_SUBMIT_BYTES", _size, 0, False,
         "bytes bound by the open batch's commands at which it is first submitted after a wait "
         "(the bound then doubles at each such submit up to FLUSH_BYTES_MAX; see submit_policy.py); "
         "0: FLUSH_BYTES (32 MiB)"),
    Knob("submit_commands", "GPUTENSOR_SUBMIT_COMMANDS", _integer, 0, False,
         "commands the open batch holds at most before it is submitted (0: MAX_BATCH, 256)"),
    Knob("copy_threads", "GPUTENSOR_COPY_THREADS", _count_or_auto, 0, False,
         "threads for one large host copy (0 or not an integer: automatic)"),
    Knob("dump_wgsl", "GPUTENSOR_DUMP_WGSL", _text, None, True,
         "folder that receives every compiled kernel source (one file per text)"),
    Knob("pool_limit", "GPUTENSOR_POOL_LIMIT", _size, 0, True,
         "the memory pool's initial limit in bytes (K/M/G/T suffixes, binary; 0: none)"),
    Knob("fusion", "GPUTENSOR_FUSION", _not_off, True, False,
         "elementwise fusion on at start (gputensor.set_fusion changes it at run time)"),
    Knob("fusion_window", "GPUTENSOR_FUSION_WINDOW", _integer, 0, False,
         "lazy (fused) arrays still alive after this many newer ones were made are computed "
         "(recorded while the device runs instead of at the next synchronize; 0, the default: "
         "only when read or at a synchronize)"),
    Knob("autotune", "GPUTENSOR_AUTOTUNE", parse_switch, False, True,
         "time candidate gemm-family plans on first use (gputensor.autotune changes it)"),
    Knob("cache_dir", "GPUTENSOR_CACHE_DIR", _text, None, True,
         "folder of the autotuner's cache files (default: $XDG_CACHE_HOME/gputensor)"),
    Knob("gemm_splitk", "GPUTENSOR_GEMM_SPLITK", _splits, None, True,
         "split-K count forced wherever split-K is legal (0 or 1: none)"),
    Knob("sort_subgroup", "GPUTENSOR_SORT_SUBGROUP", _not_zero, True, False,
         "the sort's subgroup ranking where the device allows it"),
    Knob("reduce_workgroups", "GPUTENSOR_REDUCE_WORKGROUPS", _integer, 1024, False,
         "workgroups a reduction with few outputs aims for"),
    Knob("reduce_vec4", "GPUTENSOR_REDUCE_VEC4", _not_zero, True, False,
         "the reductions' 16-byte vector path"),
    Knob("reduce_vec4_unroll", "GPUTENSOR_REDUCE_VEC4_UNROLL", _integer, 4, False,
         "vector path: vector loads in flight per invocation"),
    Knob("reduce_vec4_vectors", "GPUTENSOR_REDUCE_VEC4_VECTORS", _integer, 8, False,
         "vector path, several outputs: least vectors per invocation of a row tile"),
    Knob("reduce_vec4_min_length", "GPUTENSOR_REDUCE_VEC4_MIN_LENGTH", _integer, 16, False,
         "vector path: shortest reduced range that takes it"),
    Knob("reduce_vec4_arg", "GPUTENSOR_REDUCE_VEC4_ARG", _not_zero, True, False,
         "argmax/argmin take the vector path (16-byte loads, a best value and index per lane) "
         "over a contiguous reduced range (0: scalar loads)"),
    Knob("reduce_vec4_var", "GPUTENSOR_REDUCE_VEC4_VAR", _not_zero, True, False,
         "var/std take the vector path over a contiguous reduced range: one pass, 16-byte loads, "
         "blocks of values merged with Chan's update (0: the scalar two-pass loads)"),
    Knob("compact_hold_submits", "GPUTENSOR_COMPACT_HOLD_SUBMITS", _not_zero, True, False,
         "boolean masks, nonzero and unique record their kernels without submits on size: the "
         "count's readback submits them at once (0: submits on size as every op does)"),
    Knob("concat_vec4", "GPUTENSOR_CONCAT_VEC4", _not_zero, True, False,
         "concat copies 16-byte words where every block and pointer allows it (0: u32 words)"),
    Knob("elementwise_mixed_vec4", "GPUTENSOR_ELEMENTWISE_MIXED_VEC4", _not_zero, True, False,
         "contiguous elementwise kernels over operands of different widths (bool/float16 with "
         "4-byte types) load and store each operand as whole vectors (0: scalar loads)"),
    Knob("reduce_max_count", "GPUTENSOR_REDUCE_MAX_COUNT", _integer, 2**31 - 1, False,
         "most outputs or reduced elements of one reduction dispatch (at most 2**31 - 1); "
         "the array functions split larger reductions into pieces of views"),
    Knob("rows_units", "GPUTENSOR_ROWS_UNITS", _integer, 4, False,
         "row kernels (softmax, norms): 4-element units per lane aimed for with 4-byte elements "
         "(float16: twice as many)"),
    Knob("attention_kernel", "GPUTENSOR_ATTENTION_KERNEL", _text, None, False,
         "attention prefill kernel: flash (tiles per head_dim), flash-BQxTC[-r8][-hp][-dc8] (flash-64x4, "
         "flash-64x8, flash-32x4, flash-64x8-dc8; -r8: 8 query rows per invocation, flash-64x4-r8, "
         "flash-32x4-r8; -hp: probabilities staged half a tile at a time, flash-128x4-r8-hp) or tiled "
         "(unset: flash)"),
    Knob("conv_1x1_tiles", "GPUTENSOR_CONV_1X1_TILES", _tile_shape_or_auto, (128, 128, 16, 8, 8), False,
         "conv2d with 1x1 filters, where conv_tiles is unset: the implicit GEMM's tiles as "
         "BMxBNxBKxTMxTN, used where they fit the adapter's workgroup memory and size, with split-K "
         "chosen as for conv_tiles ('auto': the gemm planner's tiles; default 128x128x16x8x8)"),
    Knob("conv_tiles", "GPUTENSOR_CONV_TILES", _tile_shape, None, False,
         "conv2d: the implicit GEMM's tiles as BMxBNxBKxTMxTN (e.g. 128x128x16x8x8: 128x128 tiles, "
         "16-deep K slices, 8x8 per invocation), split-K chosen for them as for the default tiles "
         "(unset: the gemm planner's tiles)"),
    Knob("gemm_tiles_f64", "GPUTENSOR_GEMM_TILES_F64", _tile_shape, None, False,
         "gemm (matmul, tensordot, the linalg factorizations' updates) of float64 data: the tiles as "
         "BMxBNxBKxTMxTN (e.g. 128x64x8x8x4), on every adapter, no split-K unless GPUTENSOR_GEMM_SPLITK "
         "forces it (unset: the planner's tiles)"),
    Knob("gemm_f64_pairs", "GPUTENSOR_GEMM_F64_PAIRS", _not_off, True, False,
         "gemm and conv2d of float64 data: stage the workgroup tiles as two planes of vec2<f64> "
         "(consecutive invocations read consecutive 16 bytes) instead of vec4<f64> quads (32 bytes "
         "each: two-way bank conflicts on a GPU's 16-byte shared loads); 0: quads"),
    Knob("gemm_tiles_batched", "GPUTENSOR_GEMM_TILES_BATCHED", _tile_shape, None, False,
         "gemm of a batch of more than one float32/float16 matrix product (batched matmul): the tiles "
         "as BMxBNxBKxTMxTN (e.g. 64x64x16x4x4), on every adapter, no split-K unless "
         "GPUTENSOR_GEMM_SPLITK forces it (unset: the planner's tiles)"),
    Knob("rows_f16_store", "GPUTENSOR_ROWS_F16_STORE", _f16_store, "pack", False,
         "gt.nn row kernels: how float16 results are rounded from f32 on store: 'pack' (the "
         "pack2x16float builtin: the hardware's round-to-nearest conversion, overflow to inf made "
         "exact) or 'exact' (integer round-to-nearest-even, about 12 integer operations a value)"),
    Knob("linalg_check", "GPUTENSOR_LINALG_CHECK", _not_off, True, True,
         "linalg cholesky / solve / inv read a device flag back and raise LinAlgError for "
         "indefinite or singular input (off: no readback; such input gives NaN: for order <= 32 "
         "the whole result of each failed matrix)"),
    Knob("linalg_block", "GPUTENSOR_LINALG_BLOCK", _count_or_auto, 0, True,
         "block (panel) width of the blocked linalg factorizations: 16, 32, 64 or 128 "
         "(0 or unset: each factorization's default)"),
    Knob("linalg_chol_syrk", "GPUTENSOR_LINALG_CHOL_SYRK", _not_off, True, True,
         "cholesky (real dtypes): each trailing update one gemm over the tiles that reach the lower "
         "triangle (off: column stripes, or linalg_chol_split's recursive split)"),
    Knob("linalg_chol_outer", "GPUTENSOR_LINALG_CHOL_OUTER", _count_or_auto, 0, True,
         "cholesky (real dtypes, with linalg_chol_syrk): columns per trailing update, a multiple of "
         "the block width (rounded down): the diagonal blocks of such a block column update only its "
         "columns, then one gemm of that depth updates the trailing matrix (0 or unset: 256; the "
         "block width: one trailing update per diagonal block)"),
    Knob("linalg_chol_threads", "GPUTENSOR_LINALG_CHOL_THREADS", _count_or_auto, 0, True,
         "cholesky: 16 takes 16 x 16 invocations for every diagonal block (0 or unset: 32 x 32 on "
         "GPUs that allow 1024 invocations for blocks of at least 32, else 16 x 16)"),
    Knob("linalg_chol_split", "GPUTENSOR_LINALG_CHOL_SPLIT", _count_or_auto, 0, True,
         "cholesky of one matrix: the trailing update's lower part split recursively into diagonal "
         "blocks of at least this order, one batched gemm per level (less of the square computed, "
         "more gemms); 0 or unset: two column stripes from 512 columns"),
    Knob("linalg_eigh_tridiag", "GPUTENSOR_LINALG_EIGH_TRIDIAG", _order_or_off, 0, True,
         "eigh / eigvalsh of real matrices from this order on: Householder tridiagonalisation, "
         "bisection, inverse iteration and a blocked back-transform (0 or unset: the default order; "
         "off, or -1 through config.override: block Jacobi for every order above 32)"),
    Knob("linalg_svd_tridiag", "GPUTENSOR_LINALG_SVD_TRIDIAG", _order_or_off, 0, True,
         "svd / svdvals of real matrices whose smaller dim is at least this (and the larger at most "
         "4 times it): the largest eigenpairs of the Jordan-Wielandt matrix [[0, A], [A^T, 0]] by the "
         "tridiagonal path of eigh (0 or unset: the default order; off, or -1 through "
         "config.override: one-sided Jacobi)"),
    Knob("linalg_panel_rows", "GPUTENSOR_LINALG_PANEL_ROWS", _count_or_auto, 0, True,
         "LU and QR panels taller than this many rows run over many workgroups (LU: pivots by "
         "a tournament; QR: a dispatch per column); 0 or unset: LU from linalg_lu_tree_rows, QR from linalg_qr_step_rows"),
    Knob("linalg_replay", "GPUTENSOR_LINALG_REPLAY", _not_off, True, True,
         "linalg LU (solve, inv, det) and QR of larger matrices: a repeated call structure replays the "
         "dispatches its first call recorded, one record each (off: every call plans and checks each "
         "dispatch again)"),
    Knob("linalg_qr_step_rows", "GPUTENSOR_LINALG_QR_STEP_ROWS", _count_or_auto, 0, True,
         "QR panels taller than this many rows run a dispatch per column over many workgroups "
         "(linalg_panel_rows, where set, takes precedence); 0 or unset: from 1,024 rows"),
    Knob("linalg_qr_outer", "GPUTENSOR_LINALG_QR_OUTER", _count_or_auto, 0, True,
         "QR of larger matrices: columns per trailing update and per update of Q, 32 (after every "
         "panel) or 64 (two panels, their block reflectors joined; gemms of depth 64); 0 or unset: 64"),
    Knob("linalg_qr_panel_fused", "GPUTENSOR_LINALG_QR_PANEL_FUSED", _not_off, True, True,
         "QR's one-workgroup panel: each column's norm summed while the previous reflector updates "
         "it (off: a pass of its own over the column, a reduction over every invocation)"),
    Knob("linalg_qr_step_unrolled", "GPUTENSOR_LINALG_QR_STEP_UNROLLED", _not_off, True, True,
         "QR panels over many workgroups: every invocation of a workgroup reduces the partial sums, "
         "and each row slice's rows are loaded together (off: 32 invocations reduce, a loop over rows)"),
    Knob("linalg_lu_tree_rows", "GPUTENSOR_LINALG_LU_TREE_ROWS", _count_or_auto, 0, True,
         "LU panels taller than this many rows elect their pivots by a tournament over many "
         "workgroups (linalg_panel_rows, where set, takes precedence); 0 or unset: from 64 rows"),
    Knob("linalg_qr_step_chunk", "GPUTENSOR_LINALG_QR_STEP_CHUNK", _count_or_auto, 0, True,
         "QR panels over many workgroups: panel rows per workgroup, 32, 64 or 128 (fewer rows, more "
         "workgroups and more partial sums to reduce); 0 or unset: 64"),
    Knob("linalg_tslu_rows", "GPUTENSOR_LINALG_TSLU_ROWS", _count_or_auto, 0, True,
         "LU tournament pivoting: candidate rows per workgroup of a level (64 to 1024, a power of "
         "two; more rows, fewer levels); 0 or unset: 256 on GPUs, 128 on software adapters"),
    Knob("linalg_tslu_final", "GPUTENSOR_LINALG_TSLU_FINAL", _not_off, True, True,
         "LU tournament pivoting: the candidates of the second and later levels in one workgroup "
         "when they fit (up to 1,024; off: workgroups of linalg_tslu_rows at every level)"),
    Knob("linalg_tslu_factored", "GPUTENSOR_LINALG_TSLU_FACTORED", _not_off, True, True,
         "LU tournament pivoting: the last level emits the pivot block factored (its elimination "
         "of the winners), so the panel's scaling does not factor it again in every workgroup"),
    Knob("linalg_trsv_sweep", "GPUTENSOR_LINALG_TRSV_SWEEP", _not_off, True, True,
         "linalg solve with a few right-hand columns: each 32-row diagonal block of the substitution "
         "solved by all invocations of a workgroup column by column (off: by one invocation)"),
    Knob("fft_column_split", "GPUTENSOR_FFT_COLUMN_SPLIT", _not_off, True, False,
         "fft: column transforms (entries adjacent in memory) that leave fewer than 4 entries to a "
         "workgroup take a four-step decomposition (off: one workgroup pass, short reads)"),
    Knob("fft_two_butterflies", "GPUTENSOR_FFT_TWO_BUTTERFLIES", _not_off, True, False,
         "fft: workgroups of complex transforms whose radices are all 4 or more take one invocation "
         "per 8 elements, up to two butterflies each per pass (off: one invocation per butterfly of "
         "the smallest radix, as the real transforms' kernels always take)"),
    Knob("fft_real_fused", "GPUTENSOR_FFT_REAL_FUSED", _not_off, True, False,
         "fft: real forward transforms whose half length takes a four-step decomposition form their "
         "outputs in the store of its last pass (off: a separate fft_real_post dispatch after it)"),
    Knob("fft_unrolled_loads", "GPUTENSOR_FFT_UNROLLED_LOADS", _not_off, True, False,
         "fft: the Stockham kernel's load and store loops unrolled, all of an invocation's global "
         "loads in flight together (off: one loop iteration after the other)"),
    Knob("fft_direct_io", "GPUTENSOR_FFT_DIRECT_IO", _not_off, True, False,
         "fft: the Stockham kernel's first pass reads its butterflies' inputs from the source and "
         "its last pass writes their outputs to the destination (two round trips through workgroup "
         "memory and their barriers fewer; off: a load loop and a store loop around the passes)"),
    Knob("fft_pass_twiddles", "GPUTENSOR_FFT_PASS_TWIDDLES", _not_off, True, False,
         "fft: each Stockham pass reads its twiddles from a table of its own, input q's of "
         "consecutive butterflies adjacent (reads of whole cache lines; off: strided reads of one "
         "length-n table)"),
    Knob("fft_real_prefix", "GPUTENSOR_FFT_REAL_PREFIX", _not_off, True, False,
         "fft: real forward transforms of odd length (and ihfft) store only the n // 2 + 1 values "
         "they return, contiguous, from the complex transform of the real input (off: all n values, "
         "the first n // 2 + 1 returned as a view)"),
    Knob("fft_real_strided", "GPUTENSOR_FFT_REAL_STRIDED", _not_off, True, False,
         "fft: real forward transforms of even length whose input is not contiguous along the "
         "transformed last axis (another axis, strided or truncated input) read it in place: the "
         "complex transform of the full length, its n // 2 + 1 values stored, where that is one "
         "workgroup pass or Bluestein's (off: a contiguous copy first, then the half-length trick)"),
    Knob("fft_real_pairs", "GPUTENSOR_FFT_REAL_PAIRS", _not_off, True, False,
         "fft: the store of a real forward transform in one workgroup forms X[k] and X[n/2 - k] "
         "together from the same two half-length results (off: each output on its own, reading "
         "both)"),
    Knob("fft_twiddle_math", "GPUTENSOR_FFT_TWIDDLE_MATH", _not_off, False, False,
         "fft: the Stockham passes of complex64 transforms (and the real transforms' forming step "
         "in one workgroup) compute their twiddles (cos and sin, the angle within [-pi, pi]) "
         "instead of reading them from the plan's table (off: table reads)"),
    Knob("int8_sgmatrix", "GPUTENSOR_INT8_SGMATRIX", _not_off, True, False,
         "8-bit integer matmul (int8 @ int8 accumulating in int32, uint8 likewise) on subgroup "
         "matrices (tensor cores) where the device has chromium-experimental-subgroup-matrix "
         "(Dawn, whose instance is then made with its allow_unsafe_apis toggle, which lists the "
         "experimental features; off: the generic integer matmul kernel, Dawn's instance as it "
         "comes)"),
    Knob("int8_sgmatrix_tile", "GPUTENSOR_INT8_SGMATRIX_TILE", _text, "2,2,2,4,64,2", False,
         "subgroup-matrix int8 matmul tile: 'WGM,WGN,TM,TN,BK[,STAGES]' = subgroups along m and n, "
         "result matrices per subgroup along m (1-2) and n (1, 2, 4), depth per staged step (a "
         "multiple of the configuration's K), staging buffers (2: double-buffered with register "
         "prefetch, the default; 1: fetch then compute)"),
    Knob("fft_min_workgroups", "GPUTENSOR_FFT_MIN_WORKGROUPS", _integer, 64, False,
         "fft: a Stockham dispatch of fewer workgroups than this takes fewer transforms per "
         "workgroup (down to one), spreading a small transform over more multiprocessors (0: off)"),
)

_BY_NAME: dict[str, Knob] = {knob.name: knob for knob in KNOBS}
_once: dict[str, Any] = {}  # the process's values of the knobs that are not live
_once_lock = threading.Lock()
_layers: dict[int, Mapping[str, Any]] = {}  # the active override blocks, oldest first
_layer_ids = itertools.count()
_layers_lock = threading.Lock()
_assigned: dict[str, Any] = {}  # ``assign``'s values (below every override block)
_effective: Mapping[str, Any] = {}  # assigned values and the active blocks', newer ones winning
#: Bumped whenever ``override`` or ``assign`` changes a value: callers that derive something from
#: non-live knobs (a plan-cache key) recompute it only when this changed.
generation = 0


def _recompute() -> None:
    """``_effective`` from ``_assigned`` and the override blocks (``_layers_lock`` held)."""
    global _effective, generation
    merged = dict(_assigned)
    for block in _layers.values():
        merged.update(block)
    _effective = merged
    generation += 1


def _knob(name: str) -> Knob:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown gputensor knob {name!r}; knobs: {', '.join(_BY_NAME)}") from None


def environment_value(name: str) -> Any:
    """The value the environment gives knob ``name`` now (its default when unset). Raises
    KeyError for an unknown knob and what the knob's parser raises for a bad value."""
    knob = _knob(name)
    return knob.parse(knob.env, os.environ.get(knob.env), knob.default)


#: Live knob name -> (its variable's raw value, the value parsed from it): a live knob is parsed
#: again only when its variable changed (some are read on every call of an operation).
_live: dict[str, tuple[str | None, Any]] = {}
#: Variable name -> its key in ``os.environ._data`` (``_environ_get``).
_env_keys: dict[str, Any] = {}


def _environ_get(env: str) -> str | None:
    """``os.environ.get(env)``, read from the mapping's own dict where CPython keeps one
    (``_data``, ``encodekey``, ``decodevalue``: an unset variable costs no KeyError)."""
    environ = os.environ
    data = getattr(environ, "_data", None)
    if type(data) is not dict:
        return environ.get(env)
    key = _env_keys.get(env)
    if key is None:
        try:
            key = _env_keys[env] = environ.encodekey(env)  # type: ignore[attr-defined]
        except AttributeError:
            return environ.get(env)
    raw = data.get(key)
    return None if raw is None else environ.decodevalue(raw)  # type: ignore[attr-defined]


def value(name: str) -> Any:
    """The value of knob ``name`` in effect: the innermost ``override``, else the environment
    (read now for a live knob, else once per process). Raises KeyError for an unknown knob."""
    current = _effective
    if name in current:
        return current[name]
    knob = _knob(name)
    if knob.live:
        raw = _environ_get(knob.env)
        seen = _live.get(name)
        if seen is not None and seen[0] == raw:
            return seen[1]
        parsed = knob.parse(knob.env, raw, knob.default)
        _live[name] = (raw, parsed)
        return parsed
    try:
        return _once[name]
    except KeyError:
        with _once_lock:
            if name not in _once:
                _once[name] = knob.parse(knob.env, os.environ.get(knob.env), knob.default)
            return _once[name]


class Values:
    """``values()``: the values of the knobs ``names`` (a tuple, as ``value`` gives them; the
    same tuple object while they stay), kept until ``generation`` or the environment variable
    of one of the live ones changes. Cheaper per read than ``value`` for each name where a hot
    path reads live knobs on every call (the gemm plan key). Raises KeyError for an unknown knob
    name (when made), what ``value`` raises for a bad value (when read)."""

    __slots__ = ("names", "_envs", "_get", "_keys", "_generation", "_raws", "_values")

    def __init__(self, *names: str) -> None:
        self.names = names
        self._envs = tuple(_knob(name).env for name in names if _knob(name).live)
        data = getattr(os.environ, "_data", None)
        try:
            # the live variables' keys in the environment's own dict (see ``_environ_get``)
            self._keys = tuple(os.environ.encodekey(env) for env in self._envs)  # type: ignore[attr-defined]
            self._get = data.get if type(data) is dict else None
        except AttributeError:
            self._get = None
        if self._get is None:
            self._keys, self._get = self._envs, os.environ.get
        self._generation = -1
        self._raws: tuple[Any, ...] = ()
        self._values: tuple[Any, ...] = ()

    def __call__(self) -> tuple[Any, ...]:
        raws = tuple(map(self._get, self._keys))
        if raws != self._raws or self._generation != generation:
            self._values = tuple(value(name) for name in self.names)
            self._raws = raws
            self._generation = generation
        return self._values


@contextlib.contextmanager
def override(**values: Any) -> Iterator[None]:
    """``with override(name=value, ...):`` sets knobs for the block, for every thread (nested
    blocks stack; the previous values come back on exit). Raises KeyError for an unknown knob
    name."""
    for name in values:
        _knob(name)
    with _layers_lock:
        layer = next(_layer_ids)
        _layers[layer] = dict(values)
        _recompute()
    try:
        yield
    finally:
        with _layers_lock:
            del _layers[layer]
            _recompute()


def assign(**values: Any) -> dict[str, Any]:
    """Set knobs for the rest of the process, in place of their environment values (active
    ``override`` blocks still win); returns each knob's value before the call, for a later
    ``assign(**previous)``. Raises KeyError for an unknown knob name."""
    for name in values:
        _knob(name)
    previous = {name: value(name) for name in values}
    with _layers_lock:
        _assigned.update(values)
        _recompute()
    return previous
