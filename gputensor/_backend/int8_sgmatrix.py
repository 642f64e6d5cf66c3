"""The choice and specialisation of the 8-bit integer matmul on subgroup matrices.

``ops_matmul_int.matmul_int`` runs ``_wgsl/matmul_int8_sgmatrix.wgsl`` (tensor cores through
Dawn's ``chromium-experimental-subgroup-matrix``) in place of its generic kernel when
:func:`plan` returns a :class:`Plan`: A and B both int8 with an int32 C (or both uint8 with a
uint32 C), a device with the feature and a configuration of that component and result type,
the ``int8_sgmatrix`` knob on, and a tile (the ``int8_sgmatrix_tile`` knob) that fits the
device's workgroup limits. The kernel takes the generic kernel's parameters, bindings and grid,
so the rest of the plan is shared. Nothing here imports wgpu: the device facts come from the
context (``features``, ``subgroup_matrix_configs``, ``limits``, ``adapter_info``).
"""

from __future__ import annotations

import warnings
import weakref
from dataclasses import dataclass
from typing import Any

from . import config
from .errors import BackendError, BackendErrorKind, invalid_argument

__all__ = ["FEATURE", "KERNEL", "TYPES", "Plan", "Tile", "choose_config", "parse_tile", "pipeline", "plan"]

#: Kernel name of the template.
KERNEL = "matmul_int8_sgmatrix"
#: The device feature the kernel needs (gputensor's name, as in ``context.features``).
FEATURE = "chromium-experimental-subgroup-matrix"
#: (A dtype, B dtype, C dtype) -> (component type, result type, WGSL scalar type of the staged words)
TYPES: dict[tuple[str, str, str], tuple[str, str, str]] = {
    ("int8", "int8", "int32"): ("i8", "i32", "i32"),
    ("uint8", "uint8", "uint32"): ("u8", "u32", "u32"),
}
#: Preferred configuration shapes (m, n, k), best first; others of the right types come after.
_PREFERRED = ((16, 16, 32), (16, 8, 32), (8, 8, 32))
#: Subgroup size assumed where neither the configuration nor the adapter says.
_DEFAULT_SUBGROUP = 32


@dataclass(frozen=True)
class Tile:
    """A workgroup tile: ``wgm`` x ``wgn`` subgroups, each owning ``tm`` x ``tn`` result
    matrices, ``bk`` elements of depth staged per step, in ``stages`` buffers (2: the next step
    fetched into registers during the products, one barrier per step; 1: fetch, then compute)."""

    wgm: int
    wgn: int
    tm: int
    tn: int
    bk: int
    stages: int = 2


def parse_tile(text: str) -> Tile:
    """The Tile of 'WGM,WGN,TM,TN,BK[,STAGES]' (the ``int8_sgmatrix_tile`` knob; STAGES 2 where
    not given). BackendError (invalid argument) for anything else: positive integers, tm 1 or 2,
    tn 1, 2 or 4, bk a multiple of 32, stages 1 or 2."""
    try:
        values = [int(v) for v in str(text).split(",")]
        if len(values) == 5:
            values.append(2)
        wgm, wgn, tm, tn, bk, stages = values
    except ValueError:
        raise invalid_argument(f"GPUTENSOR_INT8_SGMATRIX_TILE must be 'WGM,WGN,TM,TN,BK[,STAGES]', "
                               f"not {text!r}") from None
    if min(wgm, wgn, bk) < 1 or tm not in (1, 2) or tn not in (1, 2, 4) or bk % 32 or stages not in (1, 2):
        raise invalid_argument(f"GPUTENSOR_INT8_SGMATRIX_TILE {text!r}: subgroups >= 1, TM 1 or 2, "
                               "TN 1, 2 or 4, BK a multiple of 32, STAGES 1 or 2")
    return Tile(wgm, wgn, tm, tn, bk, stages)


def choose_config(configs: Any, component: str, result: str) -> dict[str, Any] | None:
    """The configuration of ``configs`` (dicts as ``context.subgroup_matrix_configs``) with this
    component and result type to use: a preferred shape first, else any whose k is a multiple of
    4 and m, n multiples of 4; None when there is none."""
    usable = [c for c in configs or () if str(c.get("component_type")) == component
              and str(c.get("result_component_type")) == result
              and int(c.get("k", 0)) % 4 == 0 and int(c.get("m", 0)) % 4 == 0 and int(c.get("n", 0)) % 4 == 0
              and int(c.get("k", 0)) > 0 and int(c.get("m", 0)) > 0 and int(c.get("n", 0)) > 0]
    for shape in _PREFERRED:
        for c in usable:
            if (int(c["m"]), int(c["n"]), int(c["k"])) == shape:
                return c
    return usable[0] if usable else None


@dataclass(frozen=True)
class Plan:
    """A chosen subgroup-matrix kernel: its ``defines`` and C tile ``bm`` x ``bn``."""

    defines: dict[str, object]
    bm: int
    bn: int


def _subgroup_size(ctx: Any, cfg: dict[str, Any]) -> int:
    """The subgroup size the workgroup is sized by: the adapter's maximum (Dawn requires the
    workgroup's x size to be a multiple of it; wgpudawn 0.32.0.4 spells the key
    ``stackgroup_max_size``), else the configuration's, else 32."""
    info = getattr(ctx, "adapter_info", None) or {}
    for size in (info.get("subgroup_max_size"), info.get("stackgroup_max_size"), cfg.get("max_subgroup_size")):
        try:
            if int(size) > 0:
                return int(size)
        except (TypeError, ValueError):
            continue
    return _DEFAULT_SUBGROUP


def plan(ctx: Any, a_dtype: str, b_dtype: str, c_dtype: str, a_strides: tuple[int, int, int],
         b_strides: tuple[int, int, int], c_strides: tuple[int, int, int], n: int,
         c_span_bytes: int | None = None) -> Plan | None:
    """The subgroup-matrix kernel for this integer matmul (strides (batch, row, column) in
    elements, ``n`` C's columns), or None where the generic kernel runs: other dtypes, no
    feature or configuration, the knob off, a tile beyond the device's workgroup limits, or a
    C that spans (``c_span_bytes``, from its first to its last element) less than one result
    matrix (Dawn requires C's binding to hold one: 1,024 bytes for 16 x 16 words).
    BackendError (invalid argument) for a malformed tile knob."""
    types = TYPES.get((a_dtype, b_dtype, c_dtype))
    if types is None or not config.value("int8_sgmatrix") or FEATURE not in getattr(ctx, "features", ()) \
            or ctx in _REFUSED:
        return None
    component, result, stage = types
    cfg = choose_config(getattr(ctx, "subgroup_matrix_configs", ()), component, result)
    if cfg is None:
        return None
    tile = parse_tile(config.value("int8_sgmatrix_tile"))
    sm_m, sm_n, sm_k = int(cfg["m"]), int(cfg["n"]), int(cfg["k"])
    if tile.bk % sm_k or (c_span_bytes is not None and c_span_bytes < sm_m * sm_n * 4):
        return None
    nt = tile.wgm * tile.wgn * _subgroup_size(ctx, cfg)
    bm, bn, bk = tile.wgm * tile.tm * sm_m, tile.wgn * tile.tn * sm_n, tile.bk
    a_colmaj = abs(a_strides[1]) < abs(a_strides[2])   # A's m stride the smaller: stage k-major
    b_colmaj = abs(b_strides[2]) > abs(b_strides[1])   # B's k stride the smaller: stage n-major
    a_rows, a_cols = (bk, bm) if a_colmaj else (bm, bk)
    b_rows, b_cols = (bn, bk) if b_colmaj else (bk, bn)
    # As holds the A buffers and, after the products, the spilled result matrices
    as_words = max(tile.stages * a_rows * (a_cols // 4 + 4), tile.wgm * tile.wgn * sm_m * sm_n)
    words = as_words + tile.stages * b_rows * (b_cols // 4 + 4)
    limits = getattr(ctx, "limits", {}) or {}
    if (words * 4 > int(limits.get("max-compute-workgroup-storage-size", 16384))
            or nt > int(limits.get("max-compute-invocations-per-workgroup", 256))
            or nt > int(limits.get("max-compute-workgroup-size-x", 256))):
        return None
    c_direct = c_strides[2] == 1 and c_strides[1] >= max(n, sm_n)
    defines: dict[str, object] = {
        "ACC": result, "A_ARRAY": "u32", "B_ARRAY": "u32", "ELEM": component, "STAGE": stage,
        "SM_M": sm_m, "SM_N": sm_n, "SM_K": sm_k,
        "WGM": tile.wgm, "WGN": tile.wgn, "TM": tile.tm, "TN": tile.tn, "NT": nt, "BK": bk,
        "A_COLMAJ": "true" if a_colmaj else "false", "B_COLMAJ": "true" if b_colmaj else "false",
        "A_MAJOR": "col_major" if a_colmaj else "row_major", "B_MAJOR": "col_major" if b_colmaj else "row_major",
        "C_DIRECT": "true" if c_direct else "false",
        "A_ROWS": a_rows, "A_COLS": a_cols, "B_ROWS": b_rows, "B_COLS": b_cols,
        "STAGES": tile.stages, "AS_WORDS": as_words,
        "LA": -(-a_rows * a_cols // 4 // nt), "LB": -(-b_rows * b_cols // 4 // nt),
    }
    return Plan(defines, bm, bn)


#: Contexts whose compiler rejected the kernel: the generic kernel runs there from then on.
_REFUSED: weakref.WeakSet[Any] = weakref.WeakSet()


def pipeline(ctx: Any, chosen: Plan) -> Any | None:
    """The compiled kernel of ``chosen`` on ``ctx``, or None (after a RuntimeWarning with the
    compiler's message, once per context; ``plan`` returns None there from then on) when the
    device's compiler rejects it: the feature is experimental, and an integer matmul must not
    fail for it. Other errors (a lost device) propagate."""
    try:
        return ctx.pipeline(KERNEL, 3, chosen.defines)
    except BackendError as exc:
        if exc.kind is not BackendErrorKind.DEVICE_ERROR or getattr(ctx, "lost", None):
            raise
        _REFUSED.add(ctx)
        warnings.warn(f"gputensor: the subgroup-matrix int8 matmul kernel does not compile on this device; "
                      f"the generic integer kernel runs instead ({exc})", RuntimeWarning, stacklevel=2)
        return None
