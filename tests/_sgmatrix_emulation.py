"""Running the subgroup-matrix int8 matmul kernel where the adapter has no subgroup matrices.

``emulated_source(source, subgroup)`` turns a rendered ``matmul_int8_sgmatrix`` kernel into plain
WGSL that any adapter compiles: the subgroup-matrix types become small structs (a left or right
matrix: where it lies in workgroup memory; a result matrix: the elements one invocation owns,
``lane + s * subgroup``), the builtins functions of the same meaning, and the subgroup builtins
``subgroup_id`` / ``subgroup_invocation_id`` / ``subgroup_size`` the division of
``local_invocation_index`` by ``subgroup``. Everything else (the tiling, the staging of packed
bytes, the edges, the direct and spilled stores) is the kernel's own text, so the tests check it
on lavapipe against NumPy; the H200 runs the real builtins (``requires`` marked tests and the
probe ``benchmarks.tools.int8_matmul``).

``emulating(backend, ...)`` is the context in which the backend's device claims the feature and
one configuration, and compiles the kernel's emulation in its place.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

from gputensor._backend import config, int8_sgmatrix


def _emulation(sm_m: int, sm_n: int, sm_k: int, subgroup: int, elem: str) -> str:
    per = sm_m * sm_n // subgroup
    if elem == "i8":
        byte = "return (w << (24u - 8u * l)) >> 24u;"
    else:
        byte = "return (w >> (8u * l)) & 0xFFu;"
    return f"""
struct LeftT {{ off: u32, stride: u32, col: u32 }}
struct RightT {{ off: u32, stride: u32, col: u32 }}
struct ResT {{ v: array<acc_t, {per}> }}
const EMU_SG: u32 = {subgroup}u;
const EMU_PER: u32 = {per}u;
var<private> emu_lane: u32;

fn emu_byte(w: acc_t, l: u32) -> acc_t {{
    {byte}
}}

fn emu_zero() -> ResT {{
    return ResT();
}}

fn emu_left(off: u32, stride: u32, col: u32) -> LeftT {{
    return LeftT(off, stride, col);
}}

fn emu_right(off: u32, stride: u32, col: u32) -> RightT {{
    return RightT(off, stride, col);
}}

// element (r, c) of the left matrix a: M x K bytes in As
fn emu_a(a: LeftT, r: u32, c: u32) -> acc_t {{
    if (a.col != 0u) {{
        return emu_byte(acc_t(As[a.off + c * a.stride + r / 4u]), r % 4u);
    }}
    return emu_byte(acc_t(As[a.off + r * a.stride + c / 4u]), c % 4u);
}}

// element (r, c) of the right matrix b: K x N bytes in Bs
fn emu_b(b: RightT, r: u32, c: u32) -> acc_t {{
    if (b.col != 0u) {{
        return emu_byte(acc_t(Bs[b.off + c * b.stride + r / 4u]), r % 4u);
    }}
    return emu_byte(acc_t(Bs[b.off + r * b.stride + c / 4u]), c % 4u);
}}

fn emu_mma(a: LeftT, b: RightT, acc: ResT) -> ResT {{
    var out = acc;
    for (var s = 0u; s < EMU_PER; s++) {{
        let e = emu_lane + s * EMU_SG;
        let r = e / {sm_n}u;
        let c = e % {sm_n}u;
        var x = out.v[s];
        for (var p = 0u; p < {sm_k}u; p++) {{
            x = x + emu_a(a, r, p) * emu_b(b, p, c);
        }}
        out.v[s] = x;
    }}
    return out;
}}

fn emu_store_as(off: u32, v: ResT, stride: u32) {{
    for (var s = 0u; s < EMU_PER; s++) {{
        let e = emu_lane + s * EMU_SG;
        As[off + (e / {sm_n}u) * stride + e % {sm_n}u] = v.v[s];
    }}
}}

fn emu_store_c(off: u32, v: ResT, stride: u32) {{
    for (var s = 0u; s < EMU_PER; s++) {{
        let e = emu_lane + s * EMU_SG;
        C[off + (e / {sm_n}u) * stride + e % {sm_n}u] = v.v[s];
    }}
}}
"""


def emulated_source(source: str, subgroup: int) -> str:
    """The plain-WGSL emulation of the rendered kernel ``source`` with subgroups of ``subgroup``
    invocations. AssertionError when the source lacks a construct the emulation replaces."""
    def need(pattern: str, text: str, repl: str, count: int = 0) -> str:
        new, n = re.subn(pattern, repl, text, count=count)
        assert n, f"the kernel has no {pattern!r}"
        return new

    sm = {name: int(re.search(rf"const {name}: u32 = (\d+)u;", source).group(1)) for name in ("SM_M", "SM_N", "SM_K")}
    elem = re.search(r"alias LeftT = subgroup_matrix_left<(\w+),", source).group(1)
    s = need(r"enable chromium_experimental_subgroup_matrix;\n", source, "")
    s = need(r"enable subgroups;\n", s, "")
    s = need(r"diagnostic\(off, chromium\.subgroup_matrix_uniformity\);\n", s, "")
    s = need(r"alias LeftT = [^;]*;\nalias RightT = [^;]*;\nalias ResT = [^;]*;\n", s, "")
    s = need(r"(var<workgroup> Bs: [^;]*;\n)", s,
             lambda m: m.group(1) + _emulation(sm["SM_M"], sm["SM_N"], sm["SM_K"], subgroup, elem))
    s = need(r"subgroupMatrixLoad<LeftT, (row|col)_major>\(&As, ", s,
             lambda m: f"emu_left_{m.group(1)}(")
    s = need(r"subgroupMatrixLoad<RightT, (row|col)_major>\(&Bs, ", s, lambda m: f"emu_right_{m.group(1)}(")
    s = need(r"subgroupMatrixMultiplyAccumulate\(", s, "emu_mma(")
    s = need(r"subgroupMatrixStore<row_major>\(&As, ", s, "emu_store_as(")
    s = need(r"subgroupMatrixStore<row_major>\(&C, ", s, "emu_store_c(")
    s = need(r"ResT\(\);", s, "emu_zero();")
    s = s.replace("fn emu_zero() -> ResT {\n    return emu_zero();", "fn emu_zero() -> ResT {\n    return ResT();")
    s += ("\nfn emu_left_row(off: u32, stride: u32) -> LeftT { return emu_left(off, stride, 0u); }\n"
          "fn emu_left_col(off: u32, stride: u32) -> LeftT { return emu_left(off, stride, 1u); }\n"
          "fn emu_right_row(off: u32, stride: u32) -> RightT { return emu_right(off, stride, 0u); }\n"
          "fn emu_right_col(off: u32, stride: u32) -> RightT { return emu_right(off, stride, 1u); }\n")
    s = need(r"\s*@builtin\(subgroup_id\) sgid: u32,\n\s*@builtin\(subgroup_invocation_id\) lane: u32,\n"
             r"\s*@builtin\(subgroup_size\) sg_size: u32,\n", s, "\n")
    s = need(r"(@builtin\(local_invocation_index\) tid: u32,\n\) \{\n)", s,
             lambda m: m.group(1) + "    let sgid = tid / EMU_SG;\n    let lane = tid % EMU_SG;\n"
                                    "    let sg_size = EMU_SG;\n    emu_lane = lane;\n")
    return s


@contextlib.contextmanager
def emulating(backend: Any, *, m: int = 16, n: int = 16, k: int = 32, subgroup: int = 32,
              component: str = "i8", result: str = "i32", tile: str | None = None) -> Iterator[None]:
    """Within the block the device of ``backend`` claims ``int8_sgmatrix.FEATURE`` with one
    configuration (m x n x k of ``component`` -> ``result``, subgroups of ``subgroup``) and
    compiles the subgroup-matrix kernel's emulation in its place (``tile``: the
    ``int8_sgmatrix_tile`` knob's value). Keep ``subgroup`` at 16 or more: with 8 (32 result
    elements per invocation, eight such arrays live) wgpu-native's lavapipe returns wrong sums for
    some result rows where Dawn's, on the same lavapipe, does not."""
    ctx = backend.context
    saved = {name: ctx.__dict__.get(name) for name in ("features", "subgroup_matrix_configs", "pipeline")}
    real_pipeline = ctx.pipeline
    cfg = {"component_type": component, "result_component_type": result, "m": m, "n": n, "k": k,
           "min_subgroup_size": subgroup, "max_subgroup_size": subgroup}

    def pipeline(name: str, n_storage: int, defines: Any = None, *, source: str | None = None) -> Any:
        if name == int8_sgmatrix.KERNEL and source is None:
            from gputensor._backend import kernels

            text = emulated_source(kernels.render(name, defines), subgroup)
            return real_pipeline(name, n_storage, source=text)
        return real_pipeline(name, n_storage, defines, source=source)

    ctx.features = frozenset(ctx.features) | {int8_sgmatrix.FEATURE}
    ctx.subgroup_matrix_configs = (cfg,)
    ctx.pipeline = pipeline
    knobs = {"int8_sgmatrix": True}
    if tile is not None:
        knobs["int8_sgmatrix_tile"] = tile
    try:
        with config.override(**knobs):
            yield
    finally:
        for name, value in saved.items():
            if value is None:
                ctx.__dict__.pop(name, None)
            else:
                setattr(ctx, name, value)
