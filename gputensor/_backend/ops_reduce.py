"""Reductions on the device: the generic typed/strided path and the contract's ``reduce``.

``reduce_strided`` reduces any strided view (element strides, negative or zero allowed) of any
storage dtype over any set of axes, writing the kept dims contiguously or strided.
``reduce_contiguous`` is the BLAS-like contract method (``ComputeBackend.reduce``) built on it.

Ops are data (``REDUCTION_OPS``), in the manner of cupy's ReductionKernel: an identity per
accumulator kind, a combine expression, a post-map, and the *kind* that runs them
(``ReductionKind``: it owns its WGSL kernel, the state of a partial result and its
placeholders; ``PLAIN``: one accumulator, ``reduce_plain``; ``ARG``: value + index,
``reduce_arg``; ``WELFORD``: mean, M2, count, ``reduce_var``). Values are cast to the accumulation dtype (wrapping narrow integers as NumPy does,
rounding to float16), accumulated in its WGSL compute type (float16 accumulates in f32, integer
sums wrap), and the post-mapped result is cast to the destination dtype.

Plan of one call (all host-side, before anything is recorded; cached per backend by the
arguments, so a repeated call only checks its two pointers and records its dispatches):

1. Validate op, dtypes (adapter features), shape/strides/axes; per call, the byte spans the
   source and destination views touch (negative strides included) and their alignment.
2. Canonicalise: drop size-1 dims, flip negative source strides (moving the base, negating the
   destination/index stride), sort each group outermost-first and merge dims that are
   contiguous with respect to every stride of the group; so a contiguous array reduces as
   (kept, reduced) of rank <= 2, with rank-1 index math (no divisions) in the kernel.
3. Split the work so that every binding fits ``backend.max_window_bytes()`` and has at most
   ``MAX_RANK`` dims: over kept dims (independent sub-problems) or over the outermost reduced
   dim (pieces that write partial states).
4. Per piece pick the tile (256 invocations, TX outputs x TY per output): "row" (reduced
   elements innermost in memory: consecutive invocations read consecutive elements of one
   output) or "column" (kept innermost: TX consecutive invocations own consecutive outputs, TY
   slices of the reduced range each); split the reduced range into chunks over several
   workgroups when outputs are few (aiming at the ``reduce_workgroups`` knob). Chunks write partial
   states ``[output][slot]``; a second pass of the same kernel combines the slots of each output
   in slot order and applies the post-map. Within a workgroup the TY partial results combine in
   a fixed tree in workgroup memory (no subgroup operations: their reduction order is not
   specified, and every adapter has workgroup memory). Partitioning depends only on the shapes
   and the adapter's limits: results are bitwise reproducible, and no float atomics are used.
   Packed (1- and 2-byte) outputs are written with an atomicAnd/atomicOr pair on the element's
   lane, so outputs sharing a word may come from different workgroups.

Vector path (reduce_plain's first pass; ``_Planner._vector``): when the reduced range of a piece
is one dim of stride 1 (a contiguous row: full reductions and the last axis of contiguous
arrays, also of offset views such as ``x[1:]``) over an unpacked 4- or 8-byte source (float32,
int32, uint32; float64, int64, uint64) and no prologue, the source is bound a second time as
16-byte vectors over the same window, and each invocation loads ``reduce_vec4_unroll`` vectors per
step into one accumulator per lane; the elements before the first whole vector and after the
last one of each (row, chunk) range (the view's offset modulo a vector is only known per call)
are read as scalars. The row tile then has consecutive invocations on consecutive vectors of
one output and at least ``reduce_vec4_vectors`` vectors each (``_tile_vector``); chunks are whole
unrolled steps. reduce_arg and reduce_var have vector paths of their own (the kinds'
``vector_defines``; knobs ``reduce_vec4_arg``, ``reduce_vec4_var``): argmax/argmin keep a best
value and index per lane (only where the reduced index grows with the address, so each lane sees
its elements in index order); var/std make one pass, merging blocks of vectors with Chan's
update on values shifted by the output's first element (only for a reduction planned in one
piece: its partial states are relative to that element). Column reductions, strided or
multi-dim reduced ranges, packed dtypes and prologues keep the scalar loads. ``configure`` (or the environment
variables named at the knobs) switches and tunes it; the combination order is still fixed by
the shapes (and the view's offset modulo a vector), so results stay bitwise reproducible.
Float max/min combine whole vectors with the plain builtins (``ReductionOp.vector_combine``) and
track NaN apart from the loaded bits (``_Types.vector_defines``); every other op's kernel text is
that of the plain combine.

var/std use the corrected two-pass algorithm inside each chunk (mean, then sums of deviations)
and Chan et al.'s pairwise update across chunks (the vector path: one pass, see above).

Fused elementwise prologue (``prologue=Prologue(...)``, used by ``gputensor._fusion`` for
``sum(a * b)``, ``max(abs(x))``): the source is an elementwise expression over several inputs
instead of an array. The plan treats it as a *virtual* row-major source of ``src_dtype`` (no
binding, never split for window size), and the loads of the first pass evaluate the expression
at the virtual index: every array input is bound once (its whole view must fit one binding
window) and indexed through the joint merged layout of the inputs (one add when every input is
contiguous like the virtual source, else a division per merged dim), scalars come from the
parameters. The combine pass is unchanged. Kernels are cached by the expression's text, so
the same structure with other pointers, strides or scalar values reuses the pipeline.
"""

from __future__ import annotations

import math
import struct
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from . import config
from .base import ReduceOp
from .elementwise import _scalar_load, scalar_words
from .errors import invalid_argument, unsupported
from .kernels import library_code, snippet
from .launch import LaunchProgram, Record, Region
from .ops_elementwise import ArrayOperand, ScalarOperand, merge_dims
from .plan_cache import PlanCache
from .elementwise_ops import expression
from .wgsl_types import STORAGE_TYPES, StorageType, compute_info, convert, literal, storage_type

if TYPE_CHECKING:
    from .webgpu import WebGpuBackend

__all__ = [
    "Prologue",
    "REDUCTION_OPS",
    "ReductionOp",
    "configure",
    "planned_reduce",
    "planned_reduce_fused",
    "reduce_contiguous",
    "reduce_strided",
]

#: Kept and reduced dims a dispatch handles (after merging); more are split on the host.
MAX_RANK = 8
#: Invocations per workgroup.
WORKGROUP_SIZE = 256
#: Tuning knobs of the planner live in ``config`` (environment defaults, ``config.override``,
#: or ``configure`` below); plans made under other values are kept apart in the plan caches:
#: ``reduce_workgroups`` (``GPUTENSOR_REDUCE_WORKGROUPS``): workgroups a reduction aims for
#: when it has few outputs (its reduced range is then split); 1024 measured best of
#: 1024/2048/4096 on the H200 for full, last- and first-axis sum/max (benchmarks.diag_reduce
#: --sweep). ``reduce_vec4`` (``GPUTENSOR_REDUCE_VEC4=0`` turns it off): the vector path of
#: reduce_plain (16-byte loads of a contiguous reduced range; see ``_Planner._vector``).
#: ``reduce_vec4_unroll``: vector loads in flight per invocation. ``reduce_vec4_vectors``:
#: with several outputs the row tile keeps at least this many vectors per invocation (fewer
#: invocations per output, more outputs per workgroup). ``reduce_vec4_min_length``: shortest
#: reduced range that takes the vector path.
#: Reduced elements per invocation below which the reduced range is not split further.
MIN_PER_INVOCATION = 32
#: Largest element count of the iteration space per dispatch (u32 index math in WGSL).
MAX_COUNT = 2**31 - 1


def max_count() -> int:
    """Most outputs, reduced elements or fused-source elements one reduction accepts:
    ``MAX_COUNT``, or less (at least 1) under the ``reduce_max_count`` knob
    (``GPUTENSOR_REDUCE_MAX_COUNT``)."""
    return max(1, min(MAX_COUNT, config.value("reduce_max_count")))


class _Knobs(NamedTuple):
    """The planner's knob values (part of every plan-cache key)."""

    target_workgroups: int
    vec4: bool
    vec4_unroll: int
    vec4_vectors: int
    vec4_min_length: int
    vec4_arg: bool
    vec4_var: bool


_knob_cache: tuple[int, _Knobs] | None = None  # (config.generation, the values then)


def _knobs() -> _Knobs:
    """The knob values in effect (read from ``config`` again only after it changed)."""
    global _knob_cache
    cached = _knob_cache
    if cached is not None and cached[0] == config.generation:
        return cached[1]
    gen = config.generation
    knobs = _Knobs(max(1, int(config.value("reduce_workgroups"))), bool(config.value("reduce_vec4")),
                   max(1, min(16, int(config.value("reduce_vec4_unroll")))),
                   max(1, int(config.value("reduce_vec4_vectors"))),
                   max(1, int(config.value("reduce_vec4_min_length"))),
                   bool(config.value("reduce_vec4_arg")), bool(config.value("reduce_vec4_var")))
    _knob_cache = (gen, knobs)
    return knobs


def configure(*, target_workgroups: int | None = None, vec4: bool | None = None, vec4_unroll: int | None = None,
              vec4_vectors: int | None = None, vec4_min_length: int | None = None, vec4_arg: bool | None = None,
              vec4_var: bool | None = None) -> dict[str, object]:
    """Set tuning knobs of the planner (None: unchanged) for the rest of the process, through
    ``config.assign``, and return the previous values as keyword arguments for a later
    ``configure(**previous)``. For benchmarks and tests (A/B of the vector path in one process);
    ``with config.override(reduce_vec4=False):`` does the same for a block."""
    now = _knobs()
    previous: dict[str, object] = dict(target_workgroups=now.target_workgroups, vec4=now.vec4,
                                       vec4_unroll=now.vec4_unroll, vec4_vectors=now.vec4_vectors,
                                       vec4_min_length=now.vec4_min_length, vec4_arg=now.vec4_arg,
                                       vec4_var=now.vec4_var)
    given = dict(reduce_workgroups=target_workgroups, reduce_vec4=vec4, reduce_vec4_unroll=vec4_unroll,
                 reduce_vec4_vectors=vec4_vectors, reduce_vec4_min_length=vec4_min_length,
                 reduce_vec4_arg=vec4_arg, reduce_vec4_var=vec4_var)
    config.assign(**{name: v for name, v in given.items() if v is not None})
    return previous


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


# ---- fused elementwise prologue --------------------------------------------------------------


@dataclass(frozen=True)
class Prologue:
    """An elementwise expression that a reduction evaluates in its loads instead of reading a
    source array (see the module docstring).

    ``inputs``: ``ArrayOperand`` (pointer of element [0, ..., 0], dtype, strides in elements over
    the reduction's ``shape``: 0 for broadcast dims, any sign) and ``ScalarOperand``, named
    ``x0, x1, ...`` in order and loaded in their dtype's compute type; ``lets``: WGSL statements
    over them; ``expr``: the source element's value in the compute type of the reduction's
    ``src_dtype``, already rounded or wrapped to ``src_dtype`` as storing it would.
    """

    inputs: tuple[ArrayOperand | ScalarOperand, ...]
    lets: str
    expr: str

    def structure(self) -> tuple[Any, ...]:
        """What the plan depends on (not the pointers or the scalar values)."""
        return (self.lets, self.expr, tuple(
            (op.dtype, op.strides) if type(op) is ArrayOperand else (op.dtype, None) for op in self.inputs
        ))


@dataclass(frozen=True)
class _PrologueCode:
    """The WGSL of a prologue and its parameter layout. ``arrays``: per array input its input
    index, item size and (lowest, highest) element offset reached from element [0, ..., 0];
    ``static``: the parameter words after the array inputs' first-element words (merged shape and
    strides); ``scalars``: (input index, dtype) of the scalar inputs, whose words come last."""

    code: str
    n_words: int
    arrays: tuple[tuple[int, int, tuple[int, int]], ...]
    static: tuple[int, ...]
    scalars: tuple[tuple[int, str], ...]


def _prologue_code(backend: "WebGpuBackend", prologue: Any, shape: Sequence[int], src: StorageType,
                   first_binding: int) -> _PrologueCode:
    """Validate ``prologue`` for a reduction over ``shape`` and generate its loads (raises
    BackendError: invalid argument for malformed inputs, unsupported when an input needs a
    feature the adapter lacks, its view does not fit one binding window or the joint layout has
    more than MAX_RANK dims; the caller can then materialise the expression instead)."""
    if not isinstance(prologue, Prologue) or not isinstance(prologue.lets, str) or not isinstance(prologue.expr, str):
        raise invalid_argument(f"prologue must be a Prologue, not {prologue!r}")
    ndim = len(shape)
    arrays: list[tuple[int, ArrayOperand]] = []
    scalars: list[tuple[int, str]] = []
    for k, op in enumerate(prologue.inputs):
        if type(op) is ArrayOperand:
            _dtype(backend, op.dtype, "prologue input dtype")
            if len(op.strides) != ndim or not all(type(v) is int for v in op.strides):
                raise invalid_argument(f"prologue input {k}: strides {op.strides} do not match shape {tuple(shape)}")
            arrays.append((k, op))
        elif type(op) is ScalarOperand:
            _dtype(backend, op.dtype, "prologue scalar dtype")
            scalars.append((k, op.dtype))
        else:
            raise invalid_argument(f"prologue input {k} must be an ArrayOperand or ScalarOperand, not {op!r}")
    window = backend.max_window_bytes()
    info = []
    for k, op in arrays:
        t = storage_type(op.dtype)
        lo, hi = _extent([_Dim(n, s, 0) for n, s in zip(shape, op.strides)])
        if (hi - lo + 1) * t.itemsize > window:
            raise unsupported(f"prologue input {k} spans more than one binding window")
        info.append((k, t.itemsize, (lo, hi)))
    virtual = _row_major(shape)
    mshape, mstrides = merge_dims(shape, [virtual] + [list(op.strides) for _, op in arrays])
    if len(mshape) > MAX_RANK:
        raise unsupported(f"prologue inputs need {len(mshape)} dims after merging (at most {MAX_RANK})")
    linear = len(mshape) == 1 and all(st[0] == 1 for st in mstrides)
    n_arr = len(arrays)
    lines = []
    bindings = []
    static: list[int] = []
    if not linear:
        rank = len(mshape)
        shape_word = n_arr
        static += [int(n) for n in mshape]
        for st in mstrides[1:]:
            static += [int(v) & 0xFFFFFFFF for v in st]
        lines.append(snippet("reduce/prologue_index"))
        for slot in range(n_arr):
            lines.append(snippet("reduce/prologue_slot", {"SLOT": slot, "WORD": slot}))
        for d in range(rank - 1, -1, -1):
            if d > 0:
                lines.append(snippet("reduce/prologue_dim", {"D": d, "WORD": shape_word + d}))
            else:
                lines.append(snippet("reduce/prologue_dim0"))
            for slot in range(n_arr):
                lines.append(snippet("reduce/prologue_stride",
                                     {"SLOT": slot, "D": d, "WORD": shape_word + rank * (1 + slot) + d}))
    for slot, (k, op) in enumerate(arrays):
        t = storage_type(op.dtype)
        bindings.append(snippet("reduce/prologue_binding", {"BINDING": first_binding + slot, "SLOT": slot,
                                                            "ARRAY": t.array}))
        index = f"pro_w({slot}u) + i" if linear else f"s{slot}"
        lines.append(snippet("reduce/prologue_value", {"K": k, "VALUE": t.load_expr(f"leaf{slot}", index)}))
    word = n_arr + len(static)
    for k, dtype in scalars:
        t = storage_type(dtype)
        lines.append(snippet("reduce/prologue_value", {"K": k, "VALUE": _scalar_load(t, word, "pro_w")}))
        word += 2 if t.itemsize == 8 else 1
    if prologue.lets:
        lines.append(prologue.lets)
    lines.append(snippet("reduce/prologue_return", {"EXPR": prologue.expr}))
    functions = snippet("reduce/prologue", {"COMPUTE": src.compute, "BODY": "\n".join(lines)})
    code = "\n".join(bindings) + "\n\n" + library_code(functions) + "\n\n" + functions
    return _PrologueCode(code, word, tuple(info), tuple(static), tuple(scalars))


# ---- per-context scratch ---------------------------------------------------------------------


#: Distinct 256-byte placeholder windows of the scratch's dummy buffer (one per storage binding).
_DUMMY_SLOTS = 16


class _Scratch:
    """Partial-state buffers of one context (grown on demand, reused by every reduction; the
    queue orders a reduction's passes after the previous reduction's), and a dummy binding."""

    def __init__(self, ctx: Any) -> None:
        self.ctx_ref = weakref.ref(ctx)  # weak: the WeakKeyDictionary entry must not keep ctx alive
        self.lock = threading.RLock()
        self.buffers: dict[str, Any] = {}
        self.dummy = ctx.create_storage(256 * _DUMMY_SLOTS)
        #: per dummy slot, a ``LaunchProgram`` operand of 256 bytes bound as that slot's region
        self.dummy_bases = [(self.dummy, 256, 256, 0, None, self.dummy_region(slot)) for slot in range(_DUMMY_SLOTS)]

    def get(self, name: str, nbytes: int) -> tuple[Any, int, int]:
        """A binding of ``nbytes`` (rounded up to 4) at the start of scratch buffer ``name``."""
        nbytes = max(4, (nbytes + 3) // 4 * 4)
        buf = self.buffers.get(name)
        if buf is None or buf.size < nbytes:
            ctx = self.ctx_ref()
            grown = min(2 * buf.size, ctx.max_binding_size) if buf is not None else 0
            buf = ctx.create_storage(max(nbytes, grown, 4096))
            self.buffers[name] = buf
        return (buf, 0, nbytes)

    def dummy_region(self, binding: int) -> tuple[Any, int, int]:
        """A placeholder for storage binding ``binding`` (from 0) of a dispatch: 256 bytes that
        no other binding of the dispatch overlaps (two written placeholders of one buffer that
        overlap are refused by Dawn)."""
        return (self.dummy, 256 * (binding % _DUMMY_SLOTS), 256)


_SCRATCH: "weakref.WeakKeyDictionary[Any, _Scratch]" = weakref.WeakKeyDictionary()
_SCRATCH_LOCK = threading.Lock()
_LAST_SCRATCH: _Scratch | None = None


def _scratch(ctx: Any) -> _Scratch:
    last = _LAST_SCRATCH
    if last is not None and last.ctx_ref() is ctx:
        return last
    return _scratch_slow(ctx)


def _scratch_slow(ctx: Any) -> _Scratch:
    global _LAST_SCRATCH
    with _SCRATCH_LOCK:
        s = _SCRATCH.get(ctx)
        if s is None:
            s = _Scratch(ctx)
            _SCRATCH[ctx] = s
        _LAST_SCRATCH = s
        return s


# ---- geometry --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Dim:
    """One dim of the iteration: size, source stride, and the destination stride (kept dims) or
    the stride of the reduced linear index (reduced dims); strides in elements."""

    n: int
    s: int
    t: int


@dataclass(frozen=True)
class _View:
    """A sub-problem: element offsets (from the source/destination pointers and of the reduced
    linear index) of its element [0, ..., 0], and its kept and reduced dims, outermost first."""

    src: int
    dst: int
    idx: int
    kept: tuple[_Dim, ...]
    red: tuple[_Dim, ...]

    @property
    def nkeep(self) -> int:
        return math.prod(d.n for d in self.kept)

    @property
    def nred(self) -> int:
        return math.prod(d.n for d in self.red)


def _canonical(dims: Sequence[_Dim], base_s: int, base_t: int) -> tuple[tuple[_Dim, ...], int, int]:
    """Drop size-1 dims, make source strides non-negative, sort outermost first, merge."""
    out = []
    for d in dims:
        if d.n == 1:
            continue
        if d.s < 0:
            base_s += (d.n - 1) * d.s
            base_t += (d.n - 1) * d.t
            d = _Dim(d.n, -d.s, -d.t)
        out.append(d)
    out.sort(key=lambda d: (d.s, abs(d.t)), reverse=True)
    merged: list[_Dim] = []
    for d in out:
        if merged and merged[-1].s == d.s * d.n and merged[-1].t == d.t * d.n:
            merged[-1] = _Dim(merged[-1].n * d.n, d.s, d.t)
        else:
            merged.append(d)
    return tuple(merged), base_s, base_t


def _extent(dims: Iterable[_Dim], attr: str = "s") -> tuple[int, int]:
    """(lowest, highest) element offset the dims reach from offset 0 along stride ``attr``."""
    lo = hi = 0
    for d in dims:
        step = (d.n - 1) * getattr(d, attr)
        lo += min(0, step)
        hi += max(0, step)
    return lo, hi


def _pow2_ceil(x: int) -> int:
    return 1 if x <= 1 else 1 << (x - 1).bit_length()


def _pow2_floor(x: int) -> int:
    return 1 if x <= 1 else 1 << (x.bit_length() - 1)


def _row_major(shape: Sequence[int]) -> list[int]:
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]
    return strides


#: Workgroup shapes (TX outputs x TY invocations per output), all of WORKGROUP_SIZE invocations.
_TILES = ((1, 256), (4, 64), (16, 16), (64, 4), (256, 1))


def _tile(nkeep: int, nred: int, kept: Sequence[_Dim], red: Sequence[_Dim]) -> tuple[int, int]:
    """Workgroup shape (TX, TY) for ``nkeep`` outputs of ``nred`` elements.

    Row case (the reduced elements are innermost in memory, or one output): as many invocations
    per output as the reduced range keeps busy (>= 8 elements each), consecutive invocations on
    consecutive elements. Column case (kept dims innermost): TX consecutive outputs per
    workgroup, so consecutive invocations read consecutive elements, and TY slices of the
    reduced range per output; one invocation per output when the range is short.
    """
    ks = kept[-1].s if kept else 0
    rs = red[-1].s if red else 0
    if nkeep == 1:
        return _TILES[0]
    if nred >= 2 and bool(red) and rs <= ks:
        for tx, ty in _TILES:
            if nred >= 8 * ty:
                return tx, ty
        return _TILES[-1]
    if nred <= 8:
        return _TILES[-1]
    for tx, ty in reversed(_TILES[:-1]):
        if nkeep >= tx:
            return tx, ty
    return _TILES[0]


def _tile_vector(nkeep: int, nred: int, width: int) -> tuple[int, int]:
    """``_tile`` of the vector path (a contiguous reduced range): one output per workgroup when
    there is one, else the first tile keeping ``vec4_vectors`` vectors of ``width`` lanes per
    invocation (consecutive invocations of an output read consecutive vectors)."""
    if nkeep == 1:
        return _TILES[0]
    for tx, ty in _TILES:
        if nred >= width * _knobs().vec4_vectors * ty:
            return tx, ty
    return _TILES[-1]


def _chunks(nkeep: int, nred: int, tx: int, ty: int, width: int = 0) -> tuple[int, int]:
    """(nchunks, chunk_len): split the reduced range when outputs alone give few workgroups.
    The vector path (``width`` lanes) cuts it into whole unrolled steps of the workgroup (whole
    vectors when shorter), so that chunks of an aligned range start on whole vectors."""
    ktiles = -(-nkeep // tx)
    n = 1
    target = _knobs().target_workgroups
    if ktiles < target:
        n = max(1, min(-(-target // ktiles), nred // (ty * MIN_PER_INVOCATION)))
    if nred == 0:
        return 1, 0
    length = -(-nred // n)
    if width and n > 1:
        step = width * ty * _knobs().vec4_unroll
        unit = step if length >= 8 * step else width
        length = -(-length // unit) * unit
    return -(-nred // length), length


# ---- validation ------------------------------------------------------------------------------


def _as_int(value: Any, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise invalid_argument(f"{what} must be an integer, not {value!r}")
    return int(value)


def _ints(values: Any, what: str) -> tuple[int, ...]:
    try:
        items = tuple(values)
    except TypeError:
        raise invalid_argument(f"{what} must be a sequence of integers, not {values!r}") from None
    return tuple(_as_int(v, f"{what} entry") for v in items)


def _dtype(backend: "WebGpuBackend", name: Any, what: str) -> StorageType:
    try:
        t = storage_type(str(name))
    except KeyError:
        raise invalid_argument(f"{what} {name!r} is not one of {sorted(STORAGE_TYPES)}") from None
    if not backend.supports(t.feature):
        raise unsupported(f"{what} {t.name} needs the adapter feature {t.feature!r}, which this adapter lacks", t.feature)
    return t


# ---- the reduction ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Step:
    """One recorded dispatch of a plan. ``regions``: its storage bindings in order, each
    ('src', element offset from the source pointer, elements) (its window's first element goes
    to params word 5), ('srcv', the same) (the same window as whole 16-byte vectors: the vector
    path), ('dst', element offset of the lowest element, elements, offset of element [0..0]
    above it) (word 6), ('scratch', buffer name, bytes) or ('dummy',)."""

    kernel: str
    defines: Mapping[str, object]
    params: tuple[int, ...]
    regions: tuple[tuple[Any, ...], ...]
    groups: int
    prologue: bool = False  # a first pass of a fused source: the prologue's inputs follow


@dataclass
class _Plan:
    """The validated, split and tiled form of one reduction: pure data, reusable for any
    pointers (every window fits wherever a binding starts). ``src_span``/``dst_span``: (lowest,
    highest + 1) byte offsets the views touch from their pointers, None if empty."""

    src_itemsize: int
    dst_itemsize: int
    src_span: tuple[int, int] | None
    dst_span: tuple[int, int] | None
    steps: list[_Step]
    prologue: _PrologueCode | None = None
    #: ``_compile``'s program for one context (built on first launch; replaced whole, so
    #: threads racing to build it just build equal ones).
    compiled: "_Compiled | None" = field(default=None, compare=False, repr=False)

    def check(self, backend: "WebGpuBackend", ptr: int, itemsize: int, span: tuple[int, int] | None,
              what: str) -> tuple[Any, int]:
        """Check a pointer for a view of ``span`` bytes; returns its (allocation, offset)."""
        alloc, offset = backend.resolve(ptr, 0)
        if offset % itemsize:
            raise invalid_argument(f"{what} pointer offset {offset} is not a multiple of the item size {itemsize}")
        if span is not None and (offset + span[0] < 0 or offset + span[1] > alloc.nbytes):
            raise invalid_argument(
                f"{what} view spans bytes [{offset + span[0]}, {offset + span[1]}) of a "
                f"{alloc.nbytes}-byte allocation"
            )
        return alloc, offset

    def _compile(self, ctx: Any) -> _Compiled:
        """The steps as a ``launch.LaunchProgram`` for ``ctx``. Its operands: 0 the source
        (word 5 takes its window's first element; the vector path binds the same window cut
        to whole 16-byte vectors; with a prologue the source is virtual: word 5 takes the
        element index, a dummy stands in its binding), 1 the destination (word 6: the first
        element plus the offset of element [0..0]), 2, 3, ... a prologue's array inputs (each
        bound whole in the prologue's pass, the words after the step's taking their first
        elements, then its static words; its scalars' words are the replay's per-call bytes),
        then the scratch buffers (at their start), then the dummy slots."""
        ssz, dsz = self.src_itemsize, self.dst_itemsize
        pro = self.prologue
        leaves = pro.arrays if pro is not None else ()
        needs: dict[str, int] = {}
        for step in self.steps:
            for r in step.regions:
                if r[0] == "scratch":
                    needs[r[1]] = max(needs.get(r[1], 0), r[2])
        names = {name: 2 + len(leaves) + k for k, name in enumerate(needs)}
        dummies: dict[int, int] = {}
        records = []

        def dummy() -> Region:  # the dummy of this binding position (``_Scratch.dummy_region``)
            index = dummies.setdefault(len(regions) % _DUMMY_SLOTS, len(dummies))
            return Region(2 + len(leaves) + len(names) + index, 0, 256, 4, 0, 0, 0)

        for step in self.steps:
            words = [int(w) & 0xFFFFFFFF for w in step.params]
            words[5] = words[6] = 0  # (``_step`` leaves them 0: the windows' first elements)
            regions: list[Region] = []
            for r in step.regions:
                kind = r[0]
                if kind == "src" and pro is not None:  # virtual source: the element index, no binding
                    words[5] = r[1]
                    regions.append(dummy())
                elif kind == "src":
                    regions.append(Region(0, r[1] * ssz, r[2] * ssz, ssz, 0, 5, 0))
                elif kind == "srcv":
                    regions.append(Region(0, r[1] * ssz, r[2] * ssz, ssz, -16, 5, 0))
                elif kind == "dst":
                    regions.append(Region(1, r[1] * dsz, r[2] * dsz, dsz, 0, 6, r[3]))
                elif kind == "scratch":
                    regions.append(Region(names[r[1]], 0, max(4, (r[2] + 3) // 4 * 4), 4, 0, 0, 0))
                else:
                    regions.append(dummy())
            if step.prologue:
                for slot, (_, size, (lo, hi)) in enumerate(leaves):
                    regions.append(Region(2 + slot, lo * size, (hi - lo + 1) * size, size, 0, len(words), -lo))
                    words.append(0)
                words += pro.static  # type: ignore[union-attr]
            records.append(Record(ctx.pipeline(step.kernel, len(regions), step.defines), step.defines, tuple(words),
                                  ctx.fold_grid(step.groups), tuple(regions), step.kernel, _words_struct(len(words)),
                                  step.prologue))
        program = LaunchProgram.compile(self.steps[0].kernel, _words_struct(0), ctx, records, ())
        return _Compiled(ctx, program, tuple(needs.items()), tuple(dummies))

    def launch(self, backend: "WebGpuBackend", src_ptr: int, dst_ptr: int, prologue: Prologue | None = None) -> None:
        """``run`` on the hot path: the steps are a ``launch.LaunchProgram`` (``_compile``,
        made once per context); per call the pointers (a plan with a prologue: those of
        ``prologue``'s array inputs, ``src_ptr`` unused) are checked as ``run`` checks them and
        the program replayed (the windows and grids are valid by construction), a prologue's
        scalar values as its pass's per-call parameter bytes. A ``dispatch`` wrapper set on the
        context (the profiler's host-time mode, test spies) gets every dispatch through
        ``run``."""
        ctx = backend._ctx
        if ctx is None or ctx.__dict__.get("dispatch") is not None:
            self.run(backend, src_ptr, dst_ptr, prologue, _slow=True)
            return
        if self.prologue is not None:
            self._launch_fused(backend, ctx, dst_ptr, prologue)  # type: ignore[arg-type]
            return
        # the pointer checks of ``check`` (inline: this is the hot path)
        ssz = self.src_itemsize
        src_alloc, src_off = backend.resolve(src_ptr, 0)
        if src_off % ssz:
            raise invalid_argument(f"source pointer offset {src_off} is not a multiple of the item size {ssz}")
        span = self.src_span
        if span is not None and (src_off + span[0] < 0 or src_off + span[1] > src_alloc.nbytes):
            self.check(backend, src_ptr, ssz, span, "source")  # raises
        src_buf = src_alloc.buffer
        src_base = (src_buf, src_buf.size, src_alloc.nbytes, src_off, src_ptr, src_alloc.whole)
        self._replay(backend, ctx, [src_base, self._dst_base(backend, dst_ptr)], b"")

    def _launch_fused(self, backend: "WebGpuBackend", ctx: Any, dst_ptr: int, prologue: Prologue) -> None:
        """``launch`` of a plan with a prologue (``launch_fused`` with ``prologue``'s array
        pointers and scalar values)."""
        inputs = prologue.inputs
        pro = self.prologue
        assert pro is not None
        self.launch_fused(backend, [inputs[k].ptr for k, _, _ in pro.arrays],
                          [inputs[k].value for k, _ in pro.scalars], dst_ptr)

    def launch_fused(self, backend: "WebGpuBackend", ptrs: Sequence[int], values: Sequence[Any],
                     dst_ptr: int) -> None:
        """Record a plan with a prologue for its array inputs at ``ptrs`` and its scalar inputs'
        ``values`` (each in the order of the prologue's inputs): the ranges of ``run``'s
        windows checked, the scalars' words the per-call parameter bytes. BackendError as
        ``reduce_strided``, before anything is recorded."""
        pro = self.prologue
        assert pro is not None
        ctx = backend._ctx
        if ctx is None or ctx.__dict__.get("dispatch") is not None:
            self._dispatch(backend, 0, dst_ptr, ptrs, values)
            return
        leaves = []
        for (_, size, (lo, hi)), ptr in zip(pro.arrays, ptrs):
            alloc, off = backend.resolve(ptr + lo * size, (hi - lo + 1) * size)
            if off % size:
                raise invalid_argument(f"pointer offset {off} is not a multiple of the item size {size}")
            buf = alloc.buffer
            leaves.append((buf, buf.size, alloc.nbytes, off - lo * size, ptr, alloc.whole))
        tail = b"".join([_word_bytes(scalar_words(value, dtype)) for (_, dtype), value in zip(pro.scalars, values)])
        dst_base = self._dst_base(backend, dst_ptr)
        # (the virtual source has no base of its own: the destination's in its place)
        self._replay(backend, ctx, [dst_base, dst_base, *leaves], tail)

    def _dst_base(self, backend: "WebGpuBackend", dst_ptr: int) -> tuple[Any, ...]:
        """The replay base of the destination, its pointer checked as ``check`` does."""
        dsz = self.dst_itemsize
        dst_alloc, dst_off = backend.resolve(dst_ptr, 0)
        if dst_off % dsz:
            raise invalid_argument(f"destination pointer offset {dst_off} is not a multiple of the item size {dsz}")
        span = self.dst_span
        if span is not None and (dst_off + span[0] < 0 or dst_off + span[1] > dst_alloc.nbytes):
            self.check(backend, dst_ptr, dsz, span, "destination")  # raises
        dst_buf = dst_alloc.buffer
        return (dst_buf, dst_buf.size, dst_alloc.nbytes, dst_off, dst_ptr, dst_alloc.whole)

    def _replay(self, backend: "WebGpuBackend", ctx: Any, bases: list[Any], tail: bytes) -> None:
        """Replay the compiled program (made now where there is none for ``ctx``) with the
        operands at ``bases`` and the scratch and dummies after them."""
        compiled = self.compiled
        if compiled is None or compiled.ctx is not ctx or compiled.program.max_workgroups != ctx.max_workgroups_per_dim:
            if not self.steps:
                return
            compiled = self.compiled = self._compile(ctx)
        program = compiled.program
        if not compiled.scratch and not compiled.dummies:
            program.replay(backend, ctx, bases, _no_placeholder, tail)
            return
        scratch = _scratch(ctx)  # the scratch buffers stay put until the end
        with scratch.lock:
            for name, nbytes in compiled.scratch:
                buf = scratch.get(name, nbytes)[0]
                bases.append((buf, buf.size, buf.size, 0, None))
            dummies = scratch.dummy_bases
            for slot in compiled.dummies:
                bases.append(dummies[slot])
            program.replay(backend, ctx, bases, _no_placeholder, tail)

    def run(self, backend: "WebGpuBackend", src_ptr: int, dst_ptr: int,
            prologue: Prologue | None = None, *, _slow: bool = False) -> None:
        """Check the pointers, then record the steps (``prologue``: the fused source's operands,
        for a plan made with one)."""
        pro = self.prologue
        if not _slow:
            self.launch(backend, src_ptr, dst_ptr, prologue)
            return
        ptrs: list[int] = []
        values: list[Any] = []
        if pro is not None:
            assert prologue is not None
            ptrs = [prologue.inputs[k].ptr for k, _, _ in pro.arrays]
            values = [prologue.inputs[k].value for k, _ in pro.scalars]
        self._dispatch(backend, src_ptr, dst_ptr, ptrs, values)

    def _dispatch(self, backend: "WebGpuBackend", src_ptr: int, dst_ptr: int, ptrs: Sequence[int],
                  values: Sequence[Any]) -> None:
        """``run``'s reference path: the pointers checked, every step recorded through
        ``WgpuContext.dispatch`` (a prologue's array inputs at ``ptrs``, its scalar values
        ``values``)."""
        pro = self.prologue
        if pro is None:
            self.check(backend, src_ptr, self.src_itemsize, self.src_span, "source")
        self.check(backend, dst_ptr, self.dst_itemsize, self.dst_span, "destination")
        leaf_regions: list[Any] = []
        ext: list[int] = []
        if pro is not None:
            for (_, size, (lo, hi)), ptr in zip(pro.arrays, ptrs):  # every input view bound once, whole
                w = backend.window(ptr + lo * size, (hi - lo + 1) * size, size)
                leaf_regions.append(w.binding)
                ext.append(w.first - lo)
            ext += pro.static
            for (_, dtype), value in zip(pro.scalars, values):
                ext += scalar_words(value, dtype)
        if not self.steps:
            return
        ctx = backend.context
        scratch = _scratch(ctx)
        ssz, dsz = self.src_itemsize, self.dst_itemsize
        with scratch.lock:
            for step in self.steps:
                params = list(step.params)
                regions = []
                for r in step.regions:
                    if r[0] == "src" and pro is not None:  # virtual source: index, no binding
                        regions.append(scratch.dummy_region(len(regions)))
                        params[5] = r[1]
                    elif r[0] == "src":
                        w = backend.window(src_ptr + r[1] * ssz, r[2] * ssz, ssz)
                        regions.append(w.binding)
                        params[5] = w.first
                    elif r[0] == "srcv":  # the vector binding: whole vectors of the src window
                        w = backend.window(src_ptr + r[1] * ssz, r[2] * ssz, ssz)
                        regions.append((w.buffer, w.offset, w.size // 16 * 16))
                    elif r[0] == "dst":
                        w = backend.window(dst_ptr + r[1] * dsz, r[2] * dsz, dsz)
                        regions.append(w.binding)
                        params[6] = w.first + r[3]
                    elif r[0] == "scratch":
                        regions.append(scratch.get(r[1], r[2]))
                    else:
                        regions.append(scratch.dummy_region(len(regions)))
                if step.prologue:
                    regions += leaf_regions
                    params += ext
                ctx.dispatch(step.kernel, params, regions, ctx.fold_grid(step.groups), step.defines)


class _Compiled(NamedTuple):
    """A plan's steps compiled for one context: the ``program``, the scratch buffers it binds
    as (name, bytes) and the dummy slots it binds (its operands after the scratch)."""

    ctx: Any
    program: LaunchProgram
    scratch: tuple[tuple[str, int], ...]
    dummies: tuple[int, ...]


def _word_bytes(words: list[int]) -> bytes:
    """``words`` as little-endian u32 parameter bytes."""
    return _words_struct(len(words)).pack(*words)


def _words_struct(n: int) -> struct.Struct:
    """The struct of ``n`` little-endian u32 parameter words."""
    packer = _WORD_STRUCTS.get(n)
    if packer is None:
        packer = _WORD_STRUCTS.setdefault(n, struct.Struct(f"<{n}I"))
    return packer


_WORD_STRUCTS: dict[int, struct.Struct] = {}


def _no_placeholder(backend: Any, nbytes: int, *bindings: Any) -> Any:  # pragma: no cover
    raise AssertionError("reduction programs bind their dummies as operands, not placeholders")


@dataclass
class _Planner:
    """Splits a canonical view into steps (see the module docstring)."""

    types: _Types
    count: int
    ddof: float
    window: int  # usable bytes of one binding
    steps: list[_Step] = field(default_factory=list)
    prologue: _PrologueCode | None = None  # fused source: virtual, never split for its window
    vectors: bool = False  # bindings start on whole vectors (the vector path may be used)

    @property
    def src_size(self) -> int:
        return self.types.src.itemsize

    @property
    def dst_size(self) -> int:
        return self.types.dst.itemsize

    def solve(self, view: _View) -> None:
        """Plan the dispatches of ``view``, splitting it until every binding fits."""
        if view.nkeep == 0:
            return
        if len(view.kept) > MAX_RANK:
            self._split_kept(view, 0, 1)
            return
        dlo, dhi = _extent(view.kept, "t")
        if (dhi - dlo + 1) * self.dst_size > self.window:
            i = max(range(len(view.kept)), key=lambda i: abs(view.kept[i].t) * (view.kept[i].n - 1))
            rest = (dhi - dlo) - (view.kept[i].n - 1) * abs(view.kept[i].t)
            self._split_kept(view, i, self._fit(view.kept[i].n, abs(view.kept[i].t), rest, self.window // self.dst_size))
            return
        src_limit = MAX_COUNT if self.prologue is not None else self.window // self.src_size
        kept_span = _extent(view.kept)[1]
        red_span = _extent(view.red)[1]
        if view.nred == 0:
            pieces = [view]
        elif kept_span + red_span + 1 <= src_limit and len(view.red) <= MAX_RANK:
            pieces = [view]
        else:
            if kept_span + 1 > src_limit // 2:
                i = max(range(len(view.kept)), key=lambda i: view.kept[i].s * (view.kept[i].n - 1))
                rest = kept_span - view.kept[i].s * (view.kept[i].n - 1)
                self._split_kept(view, i, self._fit(view.kept[i].n, view.kept[i].s, rest, src_limit // 2))
                return
            pieces = self._split_red(view, src_limit - kept_span)
        nkeep = view.nkeep
        tiles = []
        for p in pieces:
            width = self._vector(p) if len(pieces) == 1 or not self.types.spec.kind.vector_whole else 0
            if width:
                tx, ty = _tile_vector(nkeep, p.nred, width)
                nchunks, chunk_len = _chunks(nkeep, p.nred, tx, ty, width)
            else:
                tx, ty = _tile(nkeep, p.nred, p.kept, p.red)
                nchunks, chunk_len = _chunks(nkeep, p.nred, tx, ty)
            tiles.append((p, tx, ty, nchunks, chunk_len, width))
        slots = sum(t[3] for t in tiles)
        if slots == 1:
            p, tx, ty, nchunks, chunk_len, width = tiles[0]
            self._step(p, tx, ty, nchunks, chunk_len, in_partial=False, out_partial=False, width=width)
            return
        if nkeep * slots * self.types.shared_bytes > self.window:
            if nkeep == 1:  # cannot happen with sane limits: slots are bounded by the window
                raise unsupported("reduction needs more partial states than one binding holds")
            i = max(range(len(view.kept)), key=lambda i: view.kept[i].n)
            self._split_kept(view, i, max(1, view.kept[i].n // 2))
            return
        base = 0
        for p, tx, ty, nchunks, chunk_len, width in tiles:
            self._step(p, tx, ty, nchunks, chunk_len, in_partial=False, out_partial=True,
                       slots=slots, slot_base=base, width=width)
            base += nchunks
        # Combine the slots of each output (in slot order) and apply the post-map.
        shape = [d.n for d in view.kept]
        kept = tuple(_Dim(d.n, s * slots, d.t) for d, s in zip(view.kept, _row_major(shape)))
        final = _View(0, view.dst, 0, kept, (_Dim(slots, 1, 0),))
        tx, ty = _tile(nkeep, slots, kept, final.red)
        self._step(final, tx, ty, 1, slots, in_partial=True, out_partial=False, slots=slots)

    def _vector(self, view: _View) -> int:
        """Lanes of the vector path for a first-pass piece (0: the scalar loads): reduce_plain
        without a prologue, an unpacked 4- or 8-byte source, one reduced dim of stride 1 at least
        ``vec4_min_length`` long (the kept dims are free), bindings on whole vectors, and a source
        window of at least 16 elements (so its vector binding is not empty)."""
        src = self.types.src
        knobs = _knobs()
        kind = self.types.spec.kind
        if (not knobs.vec4 or not self.vectors or self.prologue is not None or not kind.vector
                or (kind.vector_knob and not getattr(knobs, kind.vector_knob))
                or src.packed or src.complex or src.emulated or src.itemsize not in (4, 8)):
            return 0
        red = view.red
        if len(red) != 1 or red[0].s != 1 or red[0].n < knobs.vec4_min_length or not kind.vector_allowed(red[0]):
            return 0
        if _extent(view.kept)[1] + red[0].n < 16:
            return 0
        return 16 // src.itemsize

    @staticmethod
    def _fit(n: int, stride: int, rest: int, limit: int) -> int:
        """Largest range length along a dim of ``n`` x ``stride`` keeping the span within
        ``limit`` elements when the other dims span ``rest``; balanced over the pieces."""
        if stride == 0:
            return n
        length = max(1, min(n, (limit - 1 - rest) // stride + 1))
        pieces = -(-n // length)
        return -(-n // pieces)

    def _split_kept(self, view: _View, i: int, length: int) -> None:
        d = view.kept[i]
        for a in range(0, d.n, length):
            m = min(length, d.n - a)
            kept = view.kept[:i] + ((_Dim(m, d.s, d.t),) if m > 1 else ()) + view.kept[i + 1:]
            self.solve(replace(view, src=view.src + a * d.s, dst=view.dst + a * d.t, kept=kept))

    def _split_red(self, view: _View, limit: int) -> list[_View]:
        """Pieces of the reduced dims (the kept dims unchanged), each spanning at most ``limit``
        source elements and of rank at most MAX_RANK."""
        red = view.red
        if _extent(red)[1] + 1 <= limit and len(red) <= MAX_RANK:
            return [view]
        d, rest = red[0], red[1:]
        rest_span = _extent(rest)[1]
        length = self._fit(d.n, d.s, rest_span, limit) if len(red) <= MAX_RANK else 1
        if rest_span + 1 > limit:
            length = 1
        out = []
        for a in range(0, d.n, length):
            m = min(length, d.n - a)
            sub = ((_Dim(m, d.s, d.t),) if m > 1 else ()) + rest
            out += self._split_red(replace(view, src=view.src + a * d.s, idx=view.idx + a * d.t, red=sub), limit)
        return out

    def _step(self, view: _View, tx: int, ty: int, nchunks: int, chunk_len: int, *,
              in_partial: bool, out_partial: bool, slots: int = 1, slot_base: int = 0, width: int = 0) -> None:
        types = self.types
        nkeep, nred = view.nkeep, view.nred
        kept = view.kept or (_Dim(1, 0, 0),)
        red = view.red or (_Dim(1, 0, 0),)
        kernel = types.spec.kernel
        npart = nkeep * slots
        if in_partial:
            regions: list[tuple[Any, ...]] = [("scratch", "val", npart * types.shared_bytes)]
        elif nred > 0:
            regions = [("src", view.src, _extent(view.kept)[1] + _extent(view.red)[1] + 1)]
        else:
            regions = [("dummy",)]
        if out_partial:
            regions.append(("scratch", "val", npart * types.shared_bytes))
        else:
            lo, hi = _extent(view.kept, "t")
            regions.append(("dst", view.dst + lo, hi - lo + 1, -lo))
        partial = in_partial or out_partial
        reduction = types.spec.kind
        for name in reduction.state:
            size = reduction.state_bytes(name, types.shared_bytes)
            regions.append(("scratch", name, npart * size) if partial else ("dummy",))
        if width:  # the source again, as vectors (binding 3 of the vector kind)
            regions.append(("srcv",) + regions[0][1:])
        ktiles = -(-nkeep // tx)

        def dims(values: Sequence[int]) -> list[int]:
            return [int(v) & 0xFFFFFFFF for v in values] + [0] * (MAX_RANK - len(values))

        params = [
            nkeep, nred, ktiles, nchunks, chunk_len, 0, 0, slots, slot_base,
            view.idx & 0xFFFFFFFF, self.count, struct.unpack("<I", struct.pack("<f", self.ddof))[0],
            len(kept), len(red), 0, 0,
        ]
        params += dims([d.n for d in kept]) + dims([d.s for d in kept]) + dims([d.t for d in kept])
        params += dims([d.n for d in red]) + dims([d.s for d in red]) + dims([d.t for d in red])
        fused = self.prologue is not None and not in_partial
        defines = dict(types.defines(in_partial=in_partial, out_partial=out_partial,
                                     prologue=self.prologue if fused else None))
        defines.update(TX=tx, TY=ty, KEEP_RANK1="true" if len(kept) == 1 else "false",
                       RED_RANK1="true" if len(red) == 1 else "false")
        if width:
            defines.update(types.spec.kind.vector_defines(types, width))
        self.steps.append(_Step(kernel, defines, tuple(params), tuple(regions), ktiles * nchunks, fused))


def _plan(backend: "WebGpuBackend", op: Any, src_dtype: Any, shape: Sequence[int], strides: Sequence[int],
          reduce_axes: Any, dst_dtype: Any, acc_dtype: Any, dst_strides: Sequence[int] | None,
          ddof: Any, prologue: Prologue | None = None) -> _Plan:
    """Validate the arguments (not the pointers) and plan the reduction (with ``prologue``, over
    its virtual row-major source: ``strides`` are ignored)."""
    name = op.value if isinstance(op, ReduceOp) else op
    spec = REDUCTION_OPS.get(name) if isinstance(name, str) else None
    if spec is None:
        raise invalid_argument(f"unknown reduction {op!r}; known: {sorted(REDUCTION_OPS)}")
    src_t = _dtype(backend, src_dtype, "source dtype")
    dst_t = _dtype(backend, dst_dtype, "destination dtype")
    if acc_dtype is None:
        acc_name = {"dst": dst_t.name, "src": src_t.name, "bool": "bool"}[spec.acc]
    else:
        acc_name = acc_dtype
    acc_t = _dtype(backend, acc_name, "accumulation dtype")
    if _kind_of(acc_t) not in spec.acc_kinds:
        raise invalid_argument(f"{spec.name} cannot accumulate in {acc_t.name}")
    spec.kind.check(spec, src_t, acc_t)
    if _kind_of(dst_t) not in spec.dst_kinds:
        raise invalid_argument(f"{spec.name} cannot write {dst_t.name}")
    if isinstance(ddof, (bool, np.bool_)) or not isinstance(ddof, (int, float, np.integer, np.floating)):
        raise invalid_argument(f"ddof must be a real number, not {ddof!r}")
    ddof = float(ddof)
    if not math.isfinite(ddof):
        raise invalid_argument(f"ddof must be finite, not {ddof}")

    shape = _ints(shape, "shape")
    if any(n < 0 for n in shape):
        raise invalid_argument(f"shape {shape} has a negative size")
    pro_code = None
    if prologue is not None:
        strides = tuple(_row_major(shape))
        if math.prod(shape) > max_count():
            raise unsupported(f"a fused source of more than {max_count()} elements is not supported")
        pro_code = _prologue_code(backend, prologue, shape, src_t, spec.kind.prologue_binding)
    strides = _ints(strides, "strides")
    if len(strides) != len(shape):
        raise invalid_argument(f"{len(strides)} strides for a {len(shape)}-d shape")
    ndim = len(shape)
    axes_in = [reduce_axes] if isinstance(reduce_axes, (int, np.integer)) else list(_ints(reduce_axes, "reduce_axes"))
    axes = []
    for a in axes_in:
        a = _as_int(a, "axis")
        if not -ndim <= a < ndim:
            raise invalid_argument(f"axis {a} is out of range for a {ndim}-d array")
        axes.append(a % ndim)
    if len(set(axes)) != len(axes):
        raise invalid_argument(f"repeated axis in {tuple(axes_in)}")
    axes_set = set(axes)
    kept_axes = [a for a in range(ndim) if a not in axes_set]
    red_axes = sorted(axes_set)
    kept_shape = [shape[a] for a in kept_axes]
    if dst_strides is None:
        dst_strides = _row_major(kept_shape)
    else:
        dst_strides = list(_ints(dst_strides, "dst_strides"))
        if len(dst_strides) != len(kept_axes):
            raise invalid_argument(f"{len(dst_strides)} destination strides for {len(kept_axes)} kept dims")
    nkeep = math.prod(kept_shape)
    nred = math.prod(shape[a] for a in red_axes)
    if nred == 0 and spec.nonempty:
        raise invalid_argument(f"zero-size reduction: {spec.name} of an empty range has no identity")
    if nkeep > max_count() or nred > max_count():
        raise unsupported(f"reductions over more than {max_count()} outputs or elements are not supported")

    def span(shp: Sequence[int], std: Sequence[int], itemsize: int) -> tuple[int, int] | None:
        if 0 in shp:
            return None
        lo, hi = _extent([_Dim(n, s, 0) for n, s in zip(shp, std)])
        return lo * itemsize, (hi + 1) * itemsize

    planner = _Planner(_Types(spec, src_t, dst_t, acc_t), nred, ddof, backend.max_window_bytes() - 8,
                       prologue=pro_code, vectors=backend.context.storage_offset_alignment % 16 == 0)
    if nkeep:
        track_index = spec.kind.tracks_index
        red_index = _row_major([shape[a] for a in red_axes])
        kept, src_base, dst_base = _canonical(
            [_Dim(shape[a], strides[a], dst_strides[i]) for i, a in enumerate(kept_axes)], 0, 0
        )
        if nred == 0:  # one empty dim, so that the view's nred is 0 (no dims means 1)
            red, red_base, idx_base = (_Dim(0, 0, 0),), 0, 0
        else:
            red, red_base, idx_base = _canonical(
                [_Dim(shape[a], strides[a], red_index[i] if track_index else 0) for i, a in enumerate(red_axes)],
                0, 0,
            )
        planner.solve(_View(src_base + red_base, dst_base, idx_base, kept, red))
    return _Plan(src_t.itemsize, dst_t.itemsize, span(shape, strides, src_t.itemsize),
                 span(kept_shape, dst_strides, dst_t.itemsize), planner.steps, pro_code)


def reduce_strided(
    backend: "WebGpuBackend",
    op: str | ReduceOp,
    src_ptr: int,
    src_dtype: Any,
    shape: Sequence[int],
    strides: Sequence[int],
    reduce_axes: int | Iterable[int],
    dst_ptr: int,
    dst_dtype: Any,
    *,
    acc_dtype: Any = None,
    dst_strides: Sequence[int] | None = None,
    ddof: float = 0,
    prologue: Prologue | None = None,
) -> None:
    """Reduce a strided view over ``reduce_axes`` and write the kept dims at ``dst_ptr``.

    ``src_ptr`` points at element [0, ..., 0] of a view of ``shape`` with ``strides`` in
    elements (negative and zero allowed); dtypes are names from ``wgsl_types.STORAGE_TYPES``.
    The output has the kept dims in order, row-major contiguous unless ``dst_strides`` (element
    strides, one per kept dim) is given. ``op`` is a name in ``REDUCTION_OPS``: 'sum', 'prod',
    'max', 'min', 'mean', 'all', 'any', 'argmax', 'argmin' (index of the first occurrence in the
    row-major order of the reduced dims; NaN wins), 'var', 'std' (divisor ``count - ddof``,
    clamped at 0). ``acc_dtype`` is the accumulation dtype (default: dst for sum/prod/mean/var/
    std, src for max/min/argmax/argmin, bool for all/any); float16 accumulates in f32, integers
    wrap at the accumulation dtype's width. Over zero elements: sum 0, prod 1, all True,
    any False, mean/var/std NaN; max, min, argmax and argmin raise.

    With ``prologue`` (a :class:`Prologue`) the source is the elementwise expression it
    describes, evaluated inside the reduction's loads: ``src_ptr`` and ``strides`` are ignored,
    ``src_dtype`` is the expression's dtype (the reduction sees exactly the values that storing
    the expression as ``src_dtype`` and reducing that array would). Every array input's view
    must fit one binding window (else BackendError unsupported, before anything is recorded:
    materialise the expression and reduce the array instead).

    Plans are cached per context by the (hashable, plain-int) arguments, so a repeated call
    only checks its pointers and records its dispatches.

    Raises BackendError: invalid argument (unknown op or dtype, op/dtype mismatch, bad shape,
    strides or axes, a view outside its allocation or misaligned, a zero-size reduction for an
    op without identity), unsupported (a 64-bit dtype without the adapter feature, more than
    2**31 - 1 outputs or reduced elements); nothing is recorded then.
    """
    plans = _plans(backend)
    try:
        key = (op, src_dtype, dst_dtype, acc_dtype, tuple(shape), tuple(strides),
               reduce_axes if isinstance(reduce_axes, int) else tuple(reduce_axes),
               None if dst_strides is None else tuple(dst_strides), ddof)
    except TypeError:  # not iterable: the slow path reports it
        key = None
    if key is not None:
        shape, strides, reduce_axes, dst_strides = key[4], key[5], key[6], key[7]
        key = _plan_key(key, prologue)
    plan = plans.get(key) if key is not None else None
    if plan is None:
        plan = _plan(backend, op, src_dtype, shape, strides, reduce_axes, dst_dtype, acc_dtype, dst_strides, ddof,
                     prologue)
        if key is not None:
            _keep_plan(plans, key, plan)
    plan.launch(backend, src_ptr, dst_ptr, prologue)


def _plan_key(key: tuple[Any, ...], prologue: Prologue | None) -> tuple[Any, ...] | None:
    """The plan cache key of a ``reduce_strided`` call from its arguments' ``key`` (op, dtypes,
    shape, strides, axes, dst strides, ddof): with the knobs and the prologue's structure;
    None where an argument is not plain (``_plain_key``) or the structure is not hashable."""
    if not _plain_key(key):  # e.g. True for 1 or 2.0 for 2: equal keys, different meaning
        return None
    key = key + (_knobs(),)
    if prologue is not None:
        try:
            key = key + (prologue.structure(),)
            hash(key)
        except (TypeError, AttributeError):
            return None
    return key


class _KeptReduce:
    """A ``reduce_strided`` plan (no prologue) handed to a caller that replays it
    (``planned_reduce``): valid on the backend it was kept by while the module's knobs are those
    it was planned under (``valid_on``); ``launch(backend, src, dst)`` checks the pointers and
    records it, as ``reduce_strided`` would."""

    __slots__ = ("launch", "_backend", "_knobs")

    def __init__(self, plan: Any, backend: Any, knobs: Any) -> None:
        self.launch = plan.launch
        self._backend = weakref.ref(backend)
        self._knobs = knobs

    def valid_on(self, backend: Any) -> bool:
        """Whether the plan holds on ``backend`` now."""
        return self._backend() is backend and _knobs() == self._knobs


def planned_reduce(backend: Any, op: str, src_dtype: str, shape: tuple[int, ...], strides: tuple[int, ...],
                   reduce_axes: tuple[int, ...], dst_dtype: str, *, acc_dtype: str | None = None,
                   dst_strides: tuple[int, ...] | None = None, ddof: float = 0) -> _KeptReduce | None:
    """The plan an earlier ``reduce_strided`` call (without a prologue) with these arguments
    kept on ``backend``; None when there is none."""
    key = (op, src_dtype, dst_dtype, acc_dtype, tuple(shape), tuple(strides), tuple(reduce_axes),
           None if dst_strides is None else tuple(dst_strides), ddof)
    if not _plain_key(key):
        return None
    knobs = _knobs()
    plan = _plans(backend).get(key + (knobs,))
    if plan is None or plan.prologue is not None:
        return None
    return _KeptReduce(plan, backend, knobs)


class _KeptFusedReduce(_KeptReduce):
    """A ``reduce_strided`` plan with a prologue handed to a caller that replays it
    (``planned_reduce_fused``): ``launch(backend, ptrs, values, dst)`` records it for the
    prologue's array inputs at ``ptrs`` and its scalar values ``values`` (in the order of the
    prologue's inputs), checking the pointers as ``reduce_strided`` would."""

    __slots__ = ()

    def __init__(self, plan: Any, backend: Any, knobs: Any) -> None:
        super().__init__(plan, backend, knobs)
        self.launch = plan.launch_fused


def planned_reduce_fused(backend: Any, op: str, src_dtype: str, shape: tuple[int, ...], strides: tuple[int, ...],
                         reduce_axes: tuple[int, ...], dst_dtype: str, prologue: Prologue, *,
                         acc_dtype: str | None = None, dst_strides: tuple[int, ...] | None = None,
                         ddof: float = 0) -> _KeptFusedReduce | None:
    """The plan an earlier ``reduce_strided`` call with these arguments and a prologue of the
    structure of ``prologue`` kept on ``backend``; None when there is none."""
    key = _plan_key((op, src_dtype, dst_dtype, acc_dtype, tuple(shape), tuple(strides), tuple(reduce_axes),
                     None if dst_strides is None else tuple(dst_strides), ddof), prologue)
    plan = _plans(backend).get(key) if key is not None else None
    if plan is None or plan.prologue is None:
        return None
    return _KeptFusedReduce(plan, backend, key[9])


#: Plans kept per backend (``_plans(backend)``: its dict; ``_keep_plan``: store one).
_PLAN_CACHE = PlanCache(1024)
_plans = _PLAN_CACHE.of
_keep_plan = _PLAN_CACHE.keep
#: First item of the keys of ``reduce_contiguous`` calls in the plan cache (the plain
#: (op, dtype, shape, axis) of a call, next to ``reduce_strided``'s keys of its arguments).
_CONTIGUOUS = "reduce_contiguous"


def _plain_key(key: tuple[Any, ...]) -> bool:
    """Whether a cache key holds only exact types (so equal keys mean identical arguments:
    no bools standing in for ints, no numpy scalars)."""
    op, src, dst, acc, shape, strides, axes, dst_strides, ddof = key
    if not all(type(v) is tuple for v in (shape, strides)) or (type(axes) is not int and type(axes) is not tuple):
        return False
    ints = (*shape, *strides, *((axes,) if type(axes) is int else axes), *(dst_strides or ()))
    return (
        all(type(v) is int for v in ints)
        and type(op) in (str, ReduceOp)
        and type(src) is str and type(dst) is str and (acc is None or type(acc) is str)
        and type(ddof) in (int, float)
    )


def reduce_contiguous(backend: "WebGpuBackend", op: ReduceOp, input: int, output: int,
                      shape: Sequence[int], axis: int, *, dtype: str = "float32") -> None:
    """``ComputeBackend.reduce``: reduce a contiguous row-major array of ``shape`` over ``axis``
    (negative counts from the end) into the contiguous ``output`` of ``shape`` without ``axis``.

    ``dtype`` is 'float16', 'float32' or 'float64' (float16 accumulates in f32). Over an empty
    axis SUM gives 0, PROD 1, MEAN NaN; MAX and MIN raise.

    Raises BackendError: invalid argument (unknown op or dtype, bad shape, axis out of range,
    pointers outside their allocations, empty MAX/MIN), unsupported (dtype without the adapter
    feature).
    """
    # The steady state: a call of a structure seen before goes from its plain (exact-type)
    # arguments to the cached plan, which checks the pointers and records its dispatches.
    key = None
    if type(op) is ReduceOp and type(axis) is int and type(dtype) is str:
        if type(shape) is not tuple:
            shape = tuple(shape) if type(shape) is list else shape
        if type(shape) is tuple:
            for n in shape:
                if type(n) is not int:
                    break
            else:
                key = (_CONTIGUOUS, _knobs(), op, dtype, shape, axis)
                plan = _plans(backend).get(key)
                if plan is not None:
                    plan.launch(backend, input, output)
                    return
    if not isinstance(op, ReduceOp):
        try:
            op = ReduceOp(op)
        except ValueError:
            raise invalid_argument(f"op must be a ReduceOp, not {op!r}") from None
    backend.float_dtype(dtype)
    shape = _ints(shape, "shape")
    if any(n < 0 for n in shape):
        raise invalid_argument(f"shape {shape} has a negative size")
    axis = _as_int(axis, "axis")
    if not -len(shape) <= axis < len(shape):
        raise invalid_argument(f"axis {axis} is out of range for shape {shape}")
    plan = _plan(backend, op.value, dtype, shape, _row_major(shape), (axis,), dtype, None, None, 0)
    if key is not None:  # (only a valid structure is cached: the checks above passed)
        _keep_plan(_plans(backend), key, plan)
    plan.launch(backend, input, output)
