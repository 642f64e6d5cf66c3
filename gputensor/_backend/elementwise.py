"""Source generation for the generic elementwise kernel (``_wgsl/elementwise.wgsl``). No wgpu.

An ``ElementwiseSpec`` is the pipeline-cache key: operand dtypes and kinds (array or scalar), the
compute type each input is converted to, the output dtype, the WGSL expression over ``x0, x1,
...``, the iteration rank (0 = contiguous fast path) and the store mode. ``render_defines`` turns
it into the template's placeholders; ``param_words`` lays out the per-launch parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .kernels import library_code
from .wgsl_types import StorageType, convert, storage_type

WORKGROUP = 256


@dataclass(frozen=True)
class ElementwiseSpec:
    """Everything that changes the generated kernel.

    ``inputs``: per input ``(dtype name, is_scalar)``; ``casts``: compute type each input is
    converted to before ``expr``; ``expr_type``: compute type of ``expr``; ``out``: output dtype
    name; ``ndim``: rank of the iteration space, 0 meaning every array operand is contiguous
    (index = offset + i); ``store``: 'direct', 'word' or 'atomic'.
    """

    inputs: tuple[tuple[str, bool], ...]
    casts: tuple[str, ...]
    expr: str
    expr_type: str
    out: str
    ndim: int
    store: str

    @property
    def array_inputs(self) -> list[int]:
        return [k for k, (_, scalar) in enumerate(self.inputs) if not scalar]

    @property
    def n_arrays(self) -> int:
        """Array operands including the output (the output is last)."""
        return len(self.array_inputs) + 1

    def features(self) -> set[str]:
        names = [d for d, _ in self.inputs] + [self.out]
        feats = {storage_type(d).feature for d in names} - {None}
        if any(c in ("i64", "u64") for c in self.casts + (self.expr_type,)):
            feats.add("shader-int64")
        if any(c == "f64" for c in self.casts + (self.expr_type,)):
            feats.add("shader-f64")
        return feats  # type: ignore[return-value]

    # ---- parameter layout ----------------------------------------------------------------
    def word_of_shape(self, d: int) -> int:
        return 1 + d

    def word_of_offset(self, array_slot: int) -> int:
        return 1 + self.ndim + array_slot * (1 + self.ndim)

    def word_of_stride(self, array_slot: int, d: int) -> int:
        return self.word_of_offset(array_slot) + 1 + d

    def word_of_scalar(self, k: int) -> int:
        base = 1 + self.ndim + self.n_arrays * (1 + self.ndim)
        for j in range(k):
            dt, scalar = self.inputs[j]
            if scalar:
                base += 2 if storage_type(dt).itemsize == 8 else 1
        return base

    def n_param_words(self) -> int:
        return self.word_of_scalar(len(self.inputs))


def _scalar_load(st: StorageType, word: int) -> str:
    if st.itemsize == 8:
        bits = f"((u64(P({word + 1}u)) << 32u) | u64(P({word}u)))"
        return bits if st.compute == "u64" else f"bitcast<{st.compute}>({bits})"
    if st.compute == "bool":
        return f"(P({word}u) != 0u)"
    if st.compute == "u32":
        return f"P({word}u)"
    return f"bitcast<{st.compute}>(P({word}u))"


def render_defines(spec: ElementwiseSpec) -> dict[str, str]:
    """The placeholder values of ``elementwise.wgsl`` for ``spec``."""
    out_st = storage_type(spec.out)
    arrays = spec.array_inputs
    enable = ""  # float16 is packed and computed in f32: no f16 feature needed
    bindings = []
    for slot, k in enumerate(arrays):
        st = storage_type(spec.inputs[k][0])
        bindings.append(f"@group(0) @binding({slot + 1}) var<storage, read_write> in{k}: array<{st.array}>;")
    out_elem = "atomic<u32>" if spec.store == "atomic" else out_st.array
    bindings.append(f"@group(0) @binding({len(arrays) + 1}) var<storage, read_write> out: array<{out_elem}>;")

    n_ops = spec.n_arrays
    lines = []
    if spec.ndim == 0:
        for slot in range(n_ops):
            lines.append(f"    o[{slot}] = P({spec.word_of_offset(slot)}u) + i;")
    else:
        for slot in range(n_ops):
            lines.append(f"    var s{slot}: i32 = bitcast<i32>(P({spec.word_of_offset(slot)}u));")
        lines.append("    var rem = i;")
        for d in range(spec.ndim - 1, -1, -1):
            if d > 0:
                lines.append(f"    let c{d} = i32(rem % P({spec.word_of_shape(d)}u));")
                lines.append(f"    rem = rem / P({spec.word_of_shape(d)}u);")
            else:
                lines.append("    let c0 = i32(rem);")
            for slot in range(n_ops):
                lines.append(f"    s{slot} += c{d} * bitcast<i32>(P({spec.word_of_stride(slot, d)}u));")
        for slot in range(n_ops):
            lines.append(f"    o[{slot}] = u32(s{slot});")

    loads = []
    for k, (dt, scalar) in enumerate(spec.inputs):
        st = storage_type(dt)
        raw = _scalar_load(st, spec.word_of_scalar(k)) if scalar else st.load_expr(f"in{k}", f"o[{arrays.index(k)}]")
        loads.append(f"    let x{k} = {convert(raw, st.compute, spec.casts[k])};")

    out_slot = n_ops - 1
    value = convert("element(o)", spec.expr_type, out_st.compute)
    if spec.store == "direct":
        store = (
            "    if (t >= n) { return; }\n"
            "    let o = offsets(t);\n"
            f"    out[o[{out_slot}]] = {out_st.array}({value});"
        )
    elif spec.store == "word":
        lanes = out_st.lanes
        lane_bits = 32 // lanes
        mask = (1 << lane_bits) - 1
        store = (
            f"    let first = P({spec.word_of_offset(out_slot)}u);\n"
            f"    let w = first / {lanes}u + t;\n"
            f"    let words = (first % {lanes}u + n + {lanes - 1}u) / {lanes}u;\n"
            "    if (t >= words) { return; }\n"
            "    var word = out[w];\n"
            f"    for (var lane = 0u; lane < {lanes}u; lane++) {{\n"
            f"        let p = w * {lanes}u + lane;\n"
            "        if (p < first || p - first >= n) { continue; }\n"
            "        let o = offsets(p - first);\n"
            f"        let v = {value};\n"
            f"        let sh = lane * {lane_bits}u;\n"
            f"        word = (word & ~({mask}u << sh)) | ({out_st.bits_expr('v')} << sh);\n"
            "    }\n"
            "    out[w] = word;"
        )
    else:  # atomic
        lanes = out_st.lanes
        lane_bits = 32 // lanes
        mask = (1 << lane_bits) - 1
        store = (
            "    if (t >= n) { return; }\n"
            "    let o = offsets(t);\n"
            f"    let v = {value};\n"
            f"    let p = o[{out_slot}];\n"
            f"    let sh = (p % {lanes}u) * {lane_bits}u;\n"
            f"    atomicAnd(&out[p / {lanes}u], ~({mask}u << sh));\n"
            f"    atomicOr(&out[p / {lanes}u], {out_st.bits_expr('v')} << sh);"
        )
    return {
        "ENABLE": enable,
        "HELPERS": library_code(spec.expr),
        "NPARAM_VEC4": str(max(1, -(-spec.n_param_words() // 4))),
        "BINDINGS": "\n".join(bindings),
        "NOPERANDS": str(n_ops),
        "OFFSETS": "\n".join(lines),
        "OUT_COMPUTE": spec.expr_type,
        "LOADS": "\n".join(loads),
        "EXPR": spec.expr,
        "STORE": store,
        "WORKGROUP": str(WORKGROUP),
    }


def scalar_words(value: object, dtype: str) -> list[int]:
    """The parameter words carrying a scalar operand of ``dtype`` (its storage bits)."""
    st = storage_type(dtype)
    if st.compute == "bool":
        return [1 if value else 0]
    np_dtype = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "u32": np.uint32,
                "i64": np.int64, "u64": np.uint64}[st.compute]
    with np.errstate(over="ignore"):
        arr = np.array(value).astype(np_dtype)
    raw = arr.tobytes()
    return [int.from_bytes(raw[j : j + 4], "little") for j in range(0, len(raw), 4)]


def param_words(spec: ElementwiseSpec, n: int, shape: Sequence[int],
                offsets: Sequence[int], strides: Sequence[Sequence[int]],
                scalars: Sequence[object]) -> list[int]:
    """Parameter words for one launch: ``offsets``/``strides`` per array operand (output last),
    ``scalars`` the values of the scalar inputs in order."""
    words = [n] + [int(s) for s in shape[: spec.ndim]]
    for off, st in zip(offsets, strides):
        words.append(int(off))
        words.extend(int(s) & 0xFFFFFFFF for s in st[: spec.ndim])
    scalar_iter = iter(scalars)
    for dt, is_scalar in spec.inputs:
        if is_scalar:
            words.extend(scalar_words(next(scalar_iter), dt))
    return words
