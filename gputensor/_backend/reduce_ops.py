"""Reductions as data (``ops_reduce``): the kinds that own a kernel and its partial state
(``ReductionKind``: ``PLAIN``, ``ARG``, ``WELFORD``), one row per reduction
(``ReductionOp`` in ``REDUCTION_OPS``), and the WGSL placeholders the dtypes of one reduction
give its kernel (``_Types``), built from the dtype table (``wgsl_types``) and the elementwise
table (``elementwise_ops``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .elementwise_ops import expression
from .errors import invalid_argument, unsupported
from .kernels import snippet
from .reduce_geometry import _Dim
from .reduce_knobs import _knobs
from .wgsl_types import STORAGE_TYPES, StorageType, compute_info, convert, literal, storage_type

if TYPE_CHECKING:
    from .reduce_prologue import _PrologueCode
    from .webgpu import WebGpuBackend

__all__ = ["ARG", "PLAIN", "REDUCTION_OPS", "WELFORD", "ReductionKind", "ReductionOp"]

#: dtype kind -> the accumulator kind the reduction tables are keyed by.
_KINDS = {"b": "bool", "i": "int", "u": "uint", "f": "float", "c": "complex"}


def _kind_of(t: StorageType) -> str:
    """'bool', 'int', 'uint', 'float' or 'complex': the accumulator kind of dtype row ``t``."""
    return _KINDS[t.kind]


#: The complex product of ``a`` and ``b`` (``vec2``: real, imaginary), NumPy's plain formula.
_COMPLEX_MUL = "{{ACC}}(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x)"


_NAN_MAX = "select(select(max(a, b), b, acc_is_nan(b)), a, acc_is_nan(a))"
_NAN_MIN = "select(select(min(a, b), b, acc_is_nan(b)), a, acc_is_nan(a))"


class ReductionKind:
    """How a family of reductions computes, and the code it owns: its WGSL kernel, the state a
    partial result keeps besides its value (scratch arrays bound after the source and the
    destination, in order: ``aux`` holds one more accumulator value, ``idx`` a u32), whether it
    has the vector path, and the placeholders its kernel takes beyond the shared ones
    (``defines``). A reduction (``ReductionOp``) names its kind; the planner and the launcher
    ask the kind, never the kernel's name.

    Kinds: :data:`PLAIN` (one accumulator and a combine: sum, prod, max, min, mean, all, any),
    :data:`ARG` (value and index: argmax, argmin), :data:`WELFORD` (count, mean and M2 merged
    with Chan et al.'s update: var, std). A kind with other state (two running values, such as
    logsumexp's maximum and scaled sum) is a subclass with its kernel.
    """

    kernel: str = ""
    #: scratch arrays of a partial result besides its value, in binding order
    state: tuple[str, ...] = ()
    vector: bool = False
    #: the ``_Knobs`` field that switches the kind's vector path (besides ``vec4``), if any
    vector_knob: str = ""
    #: whether the vector path needs the reduction's first pass in one piece (one binding
    #: window per output: reduce_var's partial states are relative to the output's first element)
    vector_whole: bool = False
    #: whether the planner tracks each element's index in the reduced range
    tracks_index: bool = False

    @property
    def prologue_binding(self) -> int:
        """First binding of a fused prologue's inputs: after src, dst and the state arrays (the
        kernel's own bindings; a fused first pass has no vector source)."""
        return 3 + len(self.state)

    def acc_compute(self, acc: StorageType) -> str:
        """The WGSL type the kernel accumulates ``acc`` values in."""
        return acc.compute

    def check(self, spec: ReductionOp, src: StorageType, acc: StorageType) -> None:
        """Raise BackendError (invalid argument) for dtypes the kind cannot reduce."""

    def state_bytes(self, name: str, shared_bytes: int) -> int:
        """Bytes per partial result of the state array ``name``."""
        return 4 if name == "idx" else shared_bytes

    def defines(self, types: _Types, d: dict[str, object], kind: str, acc_c: str, dst_compute: str) -> None:
        """Add the kind's placeholders to ``d`` (``kind``: the accumulator kind, ``acc_c``: its
        WGSL type, ``dst_compute``: the destination's)."""
        raise NotImplementedError

    def vector_defines(self, types: _Types, width: int) -> dict[str, object]:
        """The placeholders of the kind's vector path with loads of ``width`` lanes (0: off)."""
        return types.vector_source(width, 3 + len(self.state), types.src.compute)

    def vector_allowed(self, red: _Dim) -> bool:
        """Whether a contiguous reduced dim ``red`` (stride 1) may take the vector path."""
        return True


class _PlainKind(ReductionKind):
    kernel = "reduce_plain"
    vector = True

    def vector_defines(self, types: _Types, width: int) -> dict[str, object]:
        return types.vector_defines(width, types.src.compute)

    def defines(self, types: _Types, d: dict[str, object], kind: str, acc_c: str, dst_compute: str) -> None:
        spec = types.spec
        d.update(types.vector_defines(0, str(d["SRC_COMPUTE"])))
        post = spec.emulated_post if compute_info(acc_c).emulated and spec.emulated_post else spec.pick(spec.post, kind)
        post = post.replace("{{ACC}}", acc_c).replace("{{PART}}", types.acc.real_compute)
        d["COMBINE"] = _combine(spec, kind, acc_c)
        d["IDENTITY"] = literal(_identity_value(spec, types.acc), acc_c)
        d["FINISH"] = _convert(f"acc_wrap({post})", acc_c, dst_compute)


class _ArgKind(ReductionKind):
    kernel = "reduce_arg"
    state = ("idx",)
    tracks_index = True
    vector = True
    vector_knob = "vec4_arg"

    def vector_allowed(self, red: _Dim) -> bool:
        # the lanes see their elements in increasing index order (ties keep the first)
        return red.t == 1

    def acc_compute(self, acc: StorageType) -> str:
        # argmax/argmin of bool compare 0/1 as u32 (WGSL orders no bools)
        return "u32" if acc.compute == "bool" else acc.compute

    def check(self, spec: ReductionOp, src: StorageType, acc: StorageType) -> None:
        if acc.name != src.name:
            raise invalid_argument(f"{spec.name} compares in the source dtype; acc_dtype must be {src.name}")

    def defines(self, types: _Types, d: dict[str, object], kind: str, acc_c: str, dst_compute: str) -> None:
        d["IS_MAX"] = "true" if types.spec.is_max else "false"
        for key, op, native in (("EQ", "equal", "a == b"), ("GT", "greater", "a > b"), ("LT", "less", "a < b")):
            d[key] = _binary_call(op, acc_c) if compute_info(acc_c).emulated else native
        d["IDENTITY"] = literal(0, acc_c)
        d["FINISH"] = _convert("bi", "u32", dst_compute)
        d.update(types.vector_source(0, 3 + len(self.state), str(d["SRC_COMPUTE"])))


class _WelfordKind(ReductionKind):
    kernel = "reduce_var"
    state = ("aux", "idx")
    vector = True
    vector_knob = "vec4_var"
    vector_whole = True

    def defines(self, types: _Types, d: dict[str, object], kind: str, acc_c: str, dst_compute: str) -> None:
        post = types.spec.pick(types.spec.post, kind)
        d["FINISH"] = _convert(f"acc_wrap({post})", acc_c, dst_compute)
        d.update(types.vector_source(0, 3 + len(self.state), str(d["SRC_COMPUTE"])))


PLAIN: ReductionKind = _PlainKind()
ARG: ReductionKind = _ArgKind()
WELFORD: ReductionKind = _WelfordKind()


@dataclass(frozen=True)
class ReductionOp:
    """One reduction, as data.

    ``kind``: the :class:`ReductionKind` (its kernel and state); ``combine``/``identity``/``post``: per accumulator kind ('bool',
    'int', 'uint', 'float', 'complex'; key '*' = any other kind) the combine expression over
    ``a, b``, the identity (a number, or 'min'/'max' of the accumulation dtype) and the post-map
    over ``r`` (``{{ACC}}`` is replaced by the accumulator's WGSL type, ``{{PART}}`` by the type of
    a complex accumulator's parts); ``acc``: default accumulation dtype
    ('dst', 'src' or 'bool'); ``acc_kinds``/``dst_kinds``: allowed kinds; ``nonempty``: a
    reduction over zero elements is an error (no identity).

    ``vector_combine``: per accumulator kind (no '*'), a cheaper combine that reduce_plain's
    vector path uses for the lanes of whole vectors instead of ``combine``: a WGSL function of
    ``(a, b)`` that may return either operand when one is NaN (float max/min: the builtins, one
    instruction against the NaN-propagating combine's ~7). NaN is then tracked separately from
    the bits of every loaded source value, and the vector path returns a NaN if it saw one;
    otherwise it must give ``combine``'s result (max/min of non-NaN values are exact, so the
    order does not matter).

    ``elementwise``: the op of the elementwise table that ``combine`` is for numbers (``add``,
    ``multiply``, ``maximum``, ``minimum``): int64/uint64 emulated as two 32-bit words combine
    with its form (the helpers of ``_wgsl/int64_emul.wgsl``), as no WGSL operator applies;
    ``emulated_post``: their post-map where the op has one (``{{ACC}}``: ``i64e``/``u64e``), the
    same value as ``post``'s native form.
    """

    name: str
    kind: ReductionKind
    acc: str
    combine: Mapping[str, str] = field(default_factory=dict)
    identity: Mapping[str, object] = field(default_factory=dict)
    post: Mapping[str, str] = field(default_factory=lambda: {"*": "r"})
    acc_kinds: frozenset[str] = frozenset({"bool", "int", "uint", "float"})
    dst_kinds: frozenset[str] = frozenset({"bool", "int", "uint", "float"})
    nonempty: bool = False
    is_max: bool = False
    vector_combine: Mapping[str, str] = field(default_factory=dict)
    elementwise: str = ""
    emulated_post: str = ""

    @property
    def kernel(self) -> str:
        """The WGSL kernel of the reduction's kind."""
        return self.kind.kernel

    def pick(self, table: Mapping[str, Any], kind: str) -> Any:
        return table[kind] if kind in table else table["*"]


_NUMERIC = frozenset({"int", "uint", "float"})
#: mean's ``r / count`` of an emulated 64-bit integer as WGSL's integer division gives it
#: (truncated toward zero; a zero count leaves ``r``): the magnitude's unsigned quotient,
#: times -1 (mod 2^64) for a negative ``r``
_EMULATED_MEAN = (
    "x64_where_{{ACC}}(params.count == 0u, r, x64_v_{{ACC}}(x64w_mul(x64w_udivmod(x64_mag_{{ACC}}(r), "
    "vec2<u32>(params.count, 0u)).xy, select(vec2<u32>(1u, 0u), vec2<u32>(0xFFFFFFFFu), x64_isneg_{{ACC}}(r)))))"
)
#: kinds sum, prod and mean accumulate and write (complex included)
_WITH_COMPLEX = frozenset({"bool", "int", "uint", "float", "complex"})

REDUCTION_OPS: dict[str, ReductionOp] = {
    op.name: op
    for op in (
        ReductionOp("sum", PLAIN, "dst", {"bool": "a || b", "*": "a + b"}, {"bool": False, "*": 0},
                    acc_kinds=_WITH_COMPLEX, dst_kinds=_WITH_COMPLEX, elementwise="add"),
        ReductionOp("prod", PLAIN, "dst", {"bool": "a && b", "complex": _COMPLEX_MUL, "*": "a * b"},
                    {"bool": True, "*": 1}, acc_kinds=_WITH_COMPLEX, dst_kinds=_WITH_COMPLEX, elementwise="multiply"),
        ReductionOp("max", PLAIN, "src",
                    {"bool": "a || b", "float": _NAN_MAX, "*": "max(a, b)"},
                    {"bool": False, "float": -math.inf, "*": "min"}, nonempty=True,
                    vector_combine={"float": "max"}, elementwise="maximum"),
        ReductionOp("min", PLAIN, "src",
                    {"bool": "a && b", "float": _NAN_MIN, "*": "min(a, b)"},
                    {"bool": True, "float": math.inf, "*": "max"}, nonempty=True,
                    vector_combine={"float": "min"}, elementwise="minimum"),
        ReductionOp("mean", PLAIN, "dst", {"*": "a + b"}, {"*": 0},
                    {"float": "r / {{ACC}}(params.count)", "complex": "r / {{PART}}(params.count)",
                     "*": "acc_wrap(r) / {{ACC}}(params.count)"},
                    acc_kinds=_NUMERIC | {"complex"}, dst_kinds=_WITH_COMPLEX, elementwise="add",
                    emulated_post=_EMULATED_MEAN),
        ReductionOp("all", PLAIN, "bool", {"*": "a && b"}, {"*": True}, acc_kinds=frozenset({"bool"})),
        ReductionOp("any", PLAIN, "bool", {"*": "a || b"}, {"*": False}, acc_kinds=frozenset({"bool"})),
        ReductionOp("argmax", ARG, "src", identity={"*": 0}, dst_kinds=frozenset({"int", "uint"}),
                    nonempty=True, is_max=True),
        ReductionOp("argmin", ARG, "src", identity={"*": 0}, dst_kinds=frozenset({"int", "uint"}),
                    nonempty=True),
        ReductionOp("var", WELFORD, "dst", post={"*": "v"}, acc_kinds=frozenset({"float"}),
                    dst_kinds=_NUMERIC),
        ReductionOp("std", WELFORD, "dst", post={"*": "sqrt(v)"}, acc_kinds=frozenset({"float"}),
                    dst_kinds=_NUMERIC),
    )
}  # fmt: skip


# ---- WGSL snippets from the dtype tables ------------------------------------------------------


def _convert(value: str, src: str, dst: str) -> str:
    """``wgsl_types.convert`` without 64-bit integers for f64 (a reduction of float64 needs only
    ``shader-f64``)."""
    return convert(value, src, dst, int64=False)


def _wrap(t: StorageType) -> str:
    """``acc_wrap``'s body for accumulator dtype ``t``: the value storing it keeps (8/16-bit
    integers wrap; float16 rounds through the reduce kernels' own ``round_f16``, NumPy's
    rounding of NaN payloads included)."""
    return "round_f16(x)" if t.name == "float16" else t.wrap_expr("x")


def _store_snippet(t: StorageType) -> tuple[str, str]:
    """(array element type, body of ``store_dst(i, x)``) for destination dtype ``t``."""
    if not t.packed:
        return t.array, snippet("reduce/store")
    width = 32 // t.lanes
    body = snippet("reduce/store_lane", {
        "LANE_MASK": t.lanes - 1, "WIDTH": width, "SHIFT": t.lanes.bit_length() - 1, "MASK": (1 << width) - 1,
        "BITS": "f16_bits(x)" if t.name == "float16" else t.bits_expr("x")})
    return "atomic<u32>", body


def _not_vector(compute: str) -> bool:
    """Whether values of compute type ``compute`` make no WGSL vector (complex: a vector
    already; emulated 64-bit integers: structs)."""
    return compute.startswith("vec") or compute_info(compute).emulated


def _binary_call(op: str, compute: str) -> str:
    """The elementwise op ``op`` of compute type ``compute`` over ``a`` and ``b``."""
    return expression(op, compute).replace("x0", "a").replace("x1", "b")


def _combine(spec: ReductionOp, kind: str, acc_c: str) -> str:
    """The combine expression over ``a, b`` of ``spec`` for accumulator kind ``kind`` of WGSL
    type ``acc_c``: emulated 64-bit integers (``i64e``/``u64e``) combine with the elementwise op
    the reduction names (``ReductionOp.elementwise``), every other type with its own form."""
    if compute_info(acc_c).emulated:
        if not spec.elementwise:
            raise unsupported(f"{spec.name} of int64/uint64 is not supported on an adapter without shader-int64",
                              "shader-int64")
        return _binary_call(spec.elementwise, acc_c)
    return spec.pick(spec.combine, kind).replace("{{ACC}}", acc_c)


def _identity_value(spec: ReductionOp, acc: StorageType) -> object:
    value = spec.pick(spec.identity, _kind_of(acc))
    if value in ("min", "max"):
        info = np.iinfo(np.dtype(acc.name))
        return int(info.min if value == "min" else info.max)
    return value


@dataclass(frozen=True)
class _Types:
    """The dtypes of one reduction and the WGSL snippets they give."""

    spec: ReductionOp
    src: StorageType
    dst: StorageType
    acc: StorageType

    @property
    def acc_compute(self) -> str:
        return self.spec.kind.acc_compute(self.acc)

    @property
    def shared(self) -> str:
        return "u32" if self.acc_compute == "bool" else self.acc_compute

    @property
    def shared_bytes(self) -> int:
        return max(4, self.acc.compute_bits // 8)

    def defines(self, *, in_partial: bool, out_partial: bool,
                prologue: "_PrologueCode | None" = None) -> dict[str, object]:
        """Placeholders of the kernel, except the tile and rank ones (``prologue``: the fused
        source of a first pass)."""
        spec = self.spec
        acc_c = self.acc_compute
        sh = self.shared
        from_sh = "(x != 0u)" if acc_c == "bool" else "x"
        kind = _kind_of(self.acc)
        wrap = _wrap(self.acc)
        if in_partial:  # the partial values are bound as the source
            src_array, src_compute, load, to_acc = sh, sh, "src[i]", from_sh
        else:
            src = self.src
            src_array, src_compute, load = src.array, src.compute, src.load_expr("src", "i")
            to_acc = _convert("x", src.compute, acc_c)
            if src.name != self.acc.name and wrap != "x":
                to_acc = f"acc_wrap({to_acc})"
        if out_partial:  # the partial values are bound as the destination
            dst_array, dst_compute, store = sh, sh, snippet("reduce/store")
        else:
            dst_compute = self.dst.compute
            dst_array, store = _store_snippet(self.dst)
        d: dict[str, object] = {
            "IN_PARTIAL": "true" if in_partial else "false",
            "OUT_PARTIAL": "true" if out_partial else "false",
            "SRC_ARRAY": src_array,
            "SRC_COMPUTE": src_compute,
            "LOAD_SRC": load,
            "DST_ARRAY": dst_array,
            "DST": dst_compute,
            "STORE_DST": store,
            "ACC": acc_c,
            "SH": sh,
            "TO_ACC": to_acc,
            "ACC_WRAP": wrap,
            "IS_NAN": self.acc.is_nan("x"),
            "TO_SH": "select(0u, 1u, x)" if acc_c == "bool" else "x",
            "FROM_SH": from_sh,
            "LOAD_PARTIAL": snippet("reduce/load_partial" if in_partial else "reduce/load_partial_source"),
            "STORE_PARTIAL": snippet("reduce/store_partial") if out_partial else "",
            "PROLOGUE": "",
            "PARAMS_EXT": "",
        }
        if prologue is not None and not in_partial:
            d["LOAD_SRC"] = "fused_src(i)"
            d["PROLOGUE"] = prologue.code
            d["PARAMS_EXT"] = snippet("reduce/params_ext", {"WORDS": max(1, -(-prologue.n_words // 4))})
        spec.kind.defines(self, d, kind, acc_c, dst_compute)
        return d

    def vector_source(self, width: int, binding: int, compute: str) -> dict[str, object]:
        """The vector path's placeholders of reduce_arg and reduce_var: ``VEC``, the lanes
        ``VW``, the loads in flight ``VU``, the vector type ``VEC_T`` and ``VEC_SRC`` (the
        source, of compute type ``compute``, bound again at ``binding`` as ``width``-lane
        vectors, and ``load_vec(v)``); off (``width`` 0): a stub that only type-checks."""
        if width <= 0 or _not_vector(compute):
            vec_t = f"array<{compute}, 4>" if _not_vector(compute) else f"vec4<{compute}>"
            code = snippet("reduce/load_vec_stub", {"VEC_T": vec_t})
            return {"VEC": "false", "VW": 4, "VU": 1, "VEC_T": vec_t, "VEC_SRC": code}
        vec_t = f"vec{width}<{compute}>"
        code = snippet("reduce/load_vec", {"BINDING": binding, "WIDTH": width, "ARRAY": self.src.array, "VEC_T": vec_t})
        return {"VEC": "true", "VW": width, "VU": _knobs().vec4_unroll, "VEC_T": vec_t, "VEC_SRC": code}

    def vector_defines(self, width: int, compute: str) -> dict[str, object]:
        """reduce_plain's placeholders of the vector path: loads of ``width`` lanes (of the
        source's compute type ``compute``) from a binding after the kernel's own, or (0) the off
        state, whose stub only type-checks.

        With the op's ``vector_combine`` for the accumulator's kind, whole vectors combine with
        it; when the source is float (else no NaN can occur), every load of the vector path
        (vectors, and the head/tail scalars through ``load_src_nan``) also keeps per lane the
        largest magnitude bits seen in ``nan_bits`` (f64 through f32, which keeps NaN; a NaN's
        are above 0x7F800000), and ``nan_fold`` turns the lanes' fold into a NaN (made from
        those bits: no NaN constant for the optimiser to see) if any was loaded."""
        on = width > 0
        vcombine = self.spec.vector_combine.get(_kind_of(self.acc)) if on else None
        track = vcombine is not None and compute in ("f32", "f64")
        fold = "combine(a[0], a[1])" if width == 2 else "combine(combine(a[0], a[1]), combine(a[2], a[3]))"
        if not on:
            width, unroll = 4, 1
            # (a vector of complex values is no WGSL type: their stub returns an array)
            vec_t = f"array<{compute}, 4>" if _not_vector(compute) else f"vec4<{compute}>"
            code = snippet("reduce/load_vec_stub", {"VEC_T": vec_t})
        elif not track:
            unroll = _knobs().vec4_unroll
            code = snippet("reduce/load_vec", {"BINDING": 3, "WIDTH": width, "ARRAY": self.src.array,
                                               "VEC_T": f"vec{width}<{compute}>"})
        else:
            unroll = _knobs().vec4_unroll
            acc_c = self.acc_compute
            lanes = "max(nan_bits.x, nan_bits.y)"
            if width == 4:
                lanes = "max(max(nan_bits.x, nan_bits.y), max(nan_bits.z, nan_bits.w))"
            # (f64 through f32, which keeps NaN, as acc_is_nan; no 64-bit integers needed)
            code = snippet(f"reduce/load_vec_nan_{compute}", {
                "WIDTH": width, "ARRAY": self.src.array, "VCOMBINE": vcombine, "ACC": acc_c, "LANES": lanes,
                "NAN": _convert("bitcast<f32>(m)", "f32", acc_c)})
            fold = f"nan_fold({fold})"
        vec_type = f"array<{compute}, 4>" if _not_vector(compute) else f"vec{width}<{compute}>"
        return {"VEC": "true" if on else "false", "VW": width, "VU": unroll, "VEC_SRC": code, "VEC_FOLD": fold,
                "VEC_T": vec_type,
                "VEC_COMBINE": vcombine or "combine", "VEC_LOAD_SRC": "load_src_nan" if track else "load_src"}


def _dtype(backend: "WebGpuBackend", name: Any, what: str) -> StorageType:
    try:
        t = storage_type(str(name))
    except KeyError:
        raise invalid_argument(f"{what} {name!r} is not one of {sorted(STORAGE_TYPES)}") from None
    if not backend.supports(t.feature):
        raise unsupported(f"{what} {t.name} needs the adapter feature {t.feature!r}, which this adapter lacks", t.feature)
    return t
