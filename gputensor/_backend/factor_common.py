"""What the factorization modules share (``ops_factor_small``, ``ops_triangular``,
``ops_cholesky``, ``ops_lu``, ``ops_qr``, ``ops_tridiag``): the element size and parts of a
dtype, the kernels' common defines, binding one operand's window, the panel kernels' workgroup
size, the blocked factorizations' block width (``GPUTENSOR_LINALG_BLOCK``) and the program cache
of the routines ``captured.replayed`` replays. No wgpu here.

Matrices are row-major: element (i, j) of a matrix at pointer ``a`` with leading dimension
``ld`` lies ``i * ld + j`` elements from ``a``; a stack has a batch stride. Singularity is
reported through a u32 flag buffer the caller owns (or-ed with 1 when a pivot is zero or a
Cholesky pivot is not positive), never read back here. Every kernel names its scalar type once
(``alias T = {{T}};``), so other element types need only their arithmetic.
"""

from __future__ import annotations

import functools
from typing import Any

from . import config, ops_gemm
from .errors import invalid_argument
from .linalg_scalar import element, scalar_defines
from .plan_cache import PlanCache
from .wgsl_types import F32_BITS

__all__ = ["BLOCK_SIZES", "NAN", "NB", "PROGRAMS", "bind", "block_width", "component_of", "invocations", "itemsize_of",
           "math_defines", "panel_wg", "replay_on"]

#: Block width of QR and the largest order of trsm and the LU panel (32 columns).
NB = 32

_LOG = {"f32": "log_f32", "f64": "log_f64"}
_NEG_INF = {"f32": f"{F32_BITS}(0xff800000u)", "f64": "bitcast<f64>(0xfff0000000000000lu)"}
NAN = {"f32": f"{F32_BITS}(0x7fc00000u)", "f64": "bitcast<f64>(0x7ff8000000000000lu)"}


def itemsize_of(backend: Any, dtype: str) -> int:
    """The itemsize of float32, float64, complex64 or complex128 (the kernels generic over the
    element through ``linalg_scalar``); BackendError otherwise or without the dtype's feature."""
    return element(backend, dtype).itemsize


def component_of(backend: Any, dtype: str) -> str:
    """The dtype of a complex dtype's parts ('' for real dtypes), checking the device has it."""
    return element(backend, dtype).component


@functools.lru_cache(maxsize=None)
def math_defines(dtype: str) -> dict[str, str]:
    """T, R and SCALAR (``linalg_scalar``, with the real log and what a NaN of the real type
    needs) and LOG, NEG_INF of the real type."""
    real = scalar_defines(dtype)["R"]
    log = _LOG[real]
    return {"LOG": log, "NEG_INF": _NEG_INF[real], **scalar_defines(dtype, f"{log}(x) {NAN[real]}")}


def bind(backend: Any, ptr: int, elements: int, itemsize: int) -> tuple[tuple[Any, int, int], int]:
    """(binding region, index of ``ptr``'s element in it) for ``elements`` elements at ``ptr``."""
    win = backend.window(ptr, max(1, elements) * itemsize, itemsize)
    return win.binding, win.first


def panel_wg(ctx: Any) -> int:
    """Invocations of the one-workgroup panel kernels: 1024 on GPUs (a panel streams through one
    multiprocessor, so it needs every warp it can get to hide the memory latency), 256 on
    software adapters."""
    limit = min(int(ctx.limits.get("max-compute-invocations-per-workgroup", 256)),
                int(ctx.limits.get("max-compute-workgroup-size-x", 256)))
    return 256 if ctx.is_software or limit < 1024 else 1024


#: Block widths ``GPUTENSOR_LINALG_BLOCK`` takes (the register-blocked diagonal kernels hold an
#: NB x NB block on 16 x 16 or 32 x 32 invocations).
BLOCK_SIZES = (16, 32, 64, 128)
#: Default block width of ``cholesky_blocked``.
CHOLESKY_BLOCK = 64


def block_width(default: int) -> int:
    """The block width in effect: ``GPUTENSOR_LINALG_BLOCK`` (``config.override(linalg_block=)``)
    when set, else ``default``. BackendError (invalid argument) for a width not in BLOCK_SIZES."""
    nb = int(config.value("linalg_block")) or default
    if nb not in BLOCK_SIZES:
        raise invalid_argument(f"GPUTENSOR_LINALG_BLOCK={nb} must be one of {BLOCK_SIZES}")
    return nb


#: The programs ``captured.replayed`` keeps for ``lu_blocked``, ``lu_solve`` and ``qr_blocked``.
PROGRAMS = PlanCache(64)


def replay_on() -> bool:
    """Whether the LU and QR routines replay their first call's dispatches (knob
    ``linalg_replay``; never while gemm tuning is on, whose first calls time plans)."""
    return bool(config.value("linalg_replay")) and not ops_gemm.plan_settings()[1]


def invocations(ctx: Any) -> int:
    """The most invocations of a one-dimensional workgroup on ``ctx`` (at most 1024)."""
    return min(int(ctx.limits.get("max-compute-invocations-per-workgroup", 256)),
               int(ctx.limits.get("max-compute-workgroup-size-x", 256)), 1024)
