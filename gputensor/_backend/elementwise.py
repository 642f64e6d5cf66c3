"""Source generation for the generic elementwise kernel (``_wgsl/elementwise.wgsl``). No wgpu.

An ``ElementwiseSpec`` is the pipeline-cache key: operand dtypes and kinds (array or scalar), the
compute type each input is converted to, the output dtype, the WGSL expression over ``x0, x1,
...``, the iteration rank (0 = contiguous fast path), the store mode and the vector width.
``render_defines`` turns it into the template's placeholders; ``param_words`` lays out the
per-launch parameters. ``fused_program`` composes the op expressions of a fused elementwise DAG
(``gputensor._fusion``) into let-bound WGSL (the spec's ``lets``, or a reduction prologue).

Kernel design (one invocation per 'unit', 256 per workgroup, grid folded over x/y past 65,535
workgroups): contiguous operands of one 4-byte (8-byte) type are loaded as vec4 (vec2), 16 bytes
per operand per invocation; contiguous packed operands of one lane count as vec4<u32> words;
contiguous operands of mixed widths (packed with 4-byte types) as whole vectors of each, 4
elements per invocation, or 4 * the lanes of a packed output (``is_mixed``); the launcher runs the aligned body in that mode and the rest (tail, misaligned pointers) in the
scalar modes: 'direct' (ELEMENTS_PER_THREAD elements per invocation, grid-strided), 'word'
(packed output, an invocation owns a u32 word) and 'atomic' (strided packed output).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .kernels import library_code, render, snippet
from .wgsl_types import StorageType, compute_info, convert, emulating_int64, storage_type

WORKGROUP = 256
#: Elements each invocation of the 'direct' store mode handles.
ELEMENTS_PER_THREAD = 4


#: A native 64-bit integer type in WGSL text (not the emulated ``i64e``/``u64e``).
_NATIVE_INT64 = re.compile(r"\b[iu]64\b")


@dataclass(frozen=True)
class ElementwiseSpec:
    """Everything that changes the generated kernel.

    ``inputs``: per input ``(dtype name, is_scalar)``; ``casts``: compute type each input is
    converted to before ``expr``; ``expr_type``: compute type of ``expr``; ``out``: output dtype
    name; ``ndim``: rank of the iteration space, 0 meaning every array operand is contiguous
    (index = offset + i); ``store``: 'direct', 'word' or 'atomic'; ``vector``: elements per
    vector load (1, or ``vector_width(spec)`` for the contiguous vector variant); ``lets``: WGSL
    statements (``let t0 = ...;``) run after the inputs are loaded and before ``expr`` is
    returned: a fused expression DAG binds its intermediate values there (``gputensor._fusion``).
    """

    inputs: tuple[tuple[str, bool], ...]
    casts: tuple[str, ...]
    expr: str
    expr_type: str
    out: str
    ndim: int
    store: str
    vector: int = 1
    lets: str = ""

    @property
    def array_inputs(self) -> list[int]:
        return [k for k, (_, scalar) in enumerate(self.inputs) if not scalar]

    @property
    def n_arrays(self) -> int:
        """Array operands including the output (the output is last)."""
        return len(self.array_inputs) + 1

    @functools.cached_property
    def _features(self) -> frozenset[str]:
        names = [d for d, _ in self.inputs] + [self.out]
        feats = {storage_type(d).feature for d in names} - {None}
        if any(c in ("i64", "u64") for c in self.casts + (self.expr_type,)):
            feats.add("shader-int64")
        if any(c == "f64" for c in self.casts + (self.expr_type,)):
            feats.add("shader-f64")
        if "shader-f64" in feats and "shader-int64" not in feats and _NATIVE_INT64.search(
                render("elementwise", render_defines(self))):
            feats.add("shader-int64")  # f64 helpers (NaN tests, f64math) work on the u64 bits
        return frozenset(feats)  # type: ignore[arg-type]

    def features(self) -> set[str]:
        """Adapter features the generated kernel needs."""
        return set(self._features)

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
                base += max(1, storage_type(dt).itemsize // 4)
        return base

    def n_param_words(self) -> int:
        return self.word_of_scalar(len(self.inputs))


def _scalar_load(st: StorageType, word: int, read: str = "P") -> str:
    """WGSL of a scalar of dtype ``st`` kept in parameter words (``StorageType.param_load``)."""
    return st.param_load(word, read)


#: u32 words per invocation of the packed vector mode (one vec4<u32> per operand).
PACKED_VECTOR_WORDS = 4


def vector_width(spec: ElementwiseSpec, mixed: bool = True) -> int:
    """Elements per invocation of the contiguous vector variant of ``spec``, or 1 if it has none.

    'direct': 4 (vec4 loads) when every array operand is a 4-byte type, 2 (vec2) when every one
    is an 8-byte type (not complex: a complex element is a vec2 already). 'word': every array operand packed with the output's lanes per word: one
    vec4<u32> per operand, 4 * lanes elements. Otherwise, with ``mixed``, the mixed variant
    (``is_mixed``): 4 elements ('direct') or 4 * the output's lanes ('word') per invocation.
    """
    if spec.ndim != 0 or spec.store == "atomic":
        return 1
    names = [spec.inputs[k][0] for k in spec.array_inputs] + [spec.out]
    types = [storage_type(d) for d in names]
    if spec.store == "word":
        lanes = types[-1].lanes
        if all(st.packed and st.lanes == lanes for st in types):
            return PACKED_VECTOR_WORDS * lanes
        return PACKED_VECTOR_WORDS * lanes if mixed and _mixed_types(types) else 1
    sizes = {st.itemsize for st in types}
    if any(st.packed or st.complex or st.emulated for st in types) or len(sizes) != 1:
        # (a complex element is already a vec2; emulated int64 is a struct)
        return 4 if mixed and _mixed_types(types) else 1
    return {4: 4, 8: 2}.get(sizes.pop(), 1)


def _mixed_types(types: Sequence[StorageType]) -> bool:
    """Whether operands of these dtypes can take the mixed vector variant: each a 4-byte
    unpacked scalar type or a packed one (8/16-bit lanes of u32 words)."""
    return all(st.packed or (st.itemsize == 4 and not st.complex and not st.emulated) for st in types)


def is_mixed(spec: ElementwiseSpec) -> bool:
    """Whether ``spec`` (with ``vector`` > 1) is the mixed vector variant: contiguous operands of
    different widths (packed bool/int8/int16/float16 with 4-byte types, or packed types of other
    lane counts than the output's), each bound as whole vectors of its own (``_mixed_unit``);
    the launcher runs the elements past the last whole group in a separate scalar dispatch."""
    return spec.vector > 1 and vector_width(spec, mixed=False) == 1


def _mixed_unit(st: StorageType, width: int) -> tuple[str, int, int]:
    """(binding element type, its u32 words (4-byte types: elements), units per group of
    ``width`` elements) of an operand of the mixed variant: 4-byte types as vec4s of
    themselves, packed types as vec4/vec2 of u32 words or single words."""
    if not st.packed:
        return f"vec4<{st.array}>", 4, width // 4
    words = width // st.lanes
    if words >= 4:
        return "vec4<u32>", 4, words // 4
    return ("vec2<u32>", 2, 1) if words == 2 else ("u32", 1, 1)


def _mixed_element(st: StorageType, unit: tuple[str, int, int], name: str, e: int) -> str:
    """Element ``e`` of a group of the mixed variant, from the units ``{name}0, {name}1, ...``
    of one operand, as its compute type (packed: the lane of its word)."""
    _, size, _ = unit
    if not st.packed:
        return f"{name}{e // 4}[{e % 4}]"
    w, lane = divmod(e, st.lanes)
    word = f"{name}{w // size}" if size == 1 else f"{name}{w // size}[{w % size}]"
    return st.lane_expr(word, lane)


def _stored(st: StorageType, value: str) -> str:
    """``value`` (of ``st``'s compute type) as the storage array's element type (emulated
    int64 is stored as its compute struct itself)."""
    return value if st.emulated else f"{st.array}({value})"


def _lane_expr(dtype: str, word: str, lane: int) -> str:
    """Lane ``lane`` of the u32 word ``word`` of a packed dtype, as its compute type."""
    return storage_type(dtype).lane_expr(word, lane)


def render_defines(spec: ElementwiseSpec) -> dict[str, str]:
    """:func:`_render_defines` for the int64 mode of the device being worked on (its loads of
    int64/uint64 operands differ by it)."""
    return _render_defines(spec, emulating_int64())


@functools.lru_cache(maxsize=1024)
def _render_defines(spec: ElementwiseSpec, int64_emulated: bool) -> dict[str, str]:
    """The placeholder values of ``elementwise.wgsl`` for ``spec`` (cached per spec: treat the
    result as read-only), assembled from the snippets of ``_wgsl/elementwise/``.

    Scalar modes: ``offsets(i)`` gives every array operand's element index for linear index
    ``i`` (a struct, so it stays in registers); ``element(o)`` loads, converts and evaluates.
    Vector mode (``spec.vector`` > 1, contiguous 'direct' only): every array is bound as
    ``array<vecW<T>>``, invocation ``t`` handles vector ``first / W + t`` of each operand, and
    ``element`` takes the raw lane values; the launcher guarantees ``first % W == 0``. The
    ``n % W`` elements after the last whole vector are done by the next invocations of the same
    dispatch, one element each (so a contiguous op is always one dispatch).
    """
    out_st = storage_type(spec.out)
    arrays = spec.array_inputs
    n_ops = spec.n_arrays
    width = spec.vector
    if width > 1 and width != vector_width(spec):
        raise ValueError(f"vector width {width} does not fit {spec}")
    if is_mixed(spec):
        return _render_mixed(spec)
    enable = ""  # float16 is packed and computed in f32: no f16 feature needed

    def elem(array_type: str) -> str:
        if width > 1 and spec.store == "word":
            return "vec4<u32>"
        return f"vec{width}<{array_type}>" if width > 1 else array_type

    bindings = [snippet("elementwise/binding_in", {"BINDING": slot + 1, "K": k,
                                                  "ELEM": elem(storage_type(spec.inputs[k][0]).array)})
                for slot, k in enumerate(arrays)]
    out_elem = "atomic<u32>" if spec.store == "atomic" else elem(out_st.array)
    bindings.append(snippet("elementwise/binding_out", {"BINDING": len(arrays) + 1, "ELEM": out_elem}))

    value_of = lambda call: convert(call, spec.expr_type, out_st.compute)  # noqa: E731
    loads = []
    for k, (dt, scalar) in enumerate(spec.inputs):
        st = storage_type(dt)
        if scalar:
            raw = _scalar_load(st, spec.word_of_scalar(k))
        elif width > 1:
            raw = f"r{k}"
        else:
            raw = st.load_expr(f"in{k}", f"o.o{arrays.index(k)}")
        loads.append(snippet("elementwise/operand", {"K": k, "VALUE": convert(raw, st.compute, spec.casts[k])}))
    if spec.lets:
        loads.append(spec.lets)
    body = "\n".join(loads) + "\n" + snippet("elementwise/return", {"EXPR": spec.expr})

    def vector_loads() -> str:
        return "\n".join(snippet("elementwise/vector_load", {"K": k, "WORD": spec.word_of_offset(slot), "WIDTH": width})
                         for slot, k in enumerate(arrays))

    if width > 1 and spec.store == "word":
        # packed vector: each operand's vec4<u32> holds PACKED_VECTOR_WORDS words of `lanes`
        functions = _element(spec, "compute")
        lanes_n = out_st.lanes
        lane_bits = 32 // lanes_n
        words = []
        for c in range(PACKED_VECTOR_WORDS):
            values = [value_of("element(" + ", ".join(_lane_expr(spec.inputs[k][0], f"v{k}[{c}]", lane)
                                                      for k in arrays) + ")") for lane in range(lanes_n)]
            if spec.out == "float16":  # both halves in one conversion
                words.append(f"pack2x16float(vec2<f32>({values[0]}, {values[1]}))")
                continue
            parts = [out_st.bits_expr(v) for v in values]
            words.append(" | ".join(f"({b} << {lane * lane_bits}u)" if lane else b for lane, b in enumerate(parts)))
        store = snippet("elementwise/store_packed_vector", {
            "LOADS": vector_loads(), "OUT_WORD": spec.word_of_offset(n_ops - 1), "WIDTH": width,
            "WORDS": ",\n        ".join(words)})
    elif width > 1:
        # n counts elements: invocations [0, n / W) take a vector each, the next n % W one
        # element each (the tail, in the same dispatch; it lies past the last whole vector)
        functions = _element(spec, "array")
        tail_offsets = "\n".join(snippet("elementwise/tail_offset", {"SLOT": slot, "WORD": spec.word_of_offset(slot)})
                                 for slot in range(n_ops))
        tail_call = "element(" + ", ".join(
            f"in{k}[e{slot} / {width}u][e{slot} % {width}u]" for slot, k in enumerate(arrays)) + ")"
        lanes = []
        for c in "xyzw"[:width]:
            call = "element(" + ", ".join(f"v{k}.{c}" for k in arrays) + ")"
            lanes.append(f"{out_st.array}({value_of(call)})")
        store = snippet("elementwise/store_vector", {
            "WIDTH": width, "TAIL_OFFSETS": tail_offsets, "OUT": n_ops - 1,
            "TAIL_VALUE": f"{out_st.array}({value_of(tail_call)})", "LOADS": vector_loads(),
            "OUT_WORD": spec.word_of_offset(n_ops - 1), "VALUE": f"{elem(out_st.array)}({', '.join(lanes)})"})
    else:
        lines = []
        if spec.ndim == 0:
            values = [f"P({spec.word_of_offset(slot)}u) + i" for slot in range(n_ops)]
        else:
            for slot in range(n_ops):
                lines.append(snippet("elementwise/offset_start", {"SLOT": slot, "WORD": spec.word_of_offset(slot)}))
            lines.append(snippet("elementwise/offset_index"))
            for d in range(spec.ndim - 1, -1, -1):
                if d > 0:
                    lines.append(snippet("elementwise/offset_dim", {"D": d, "WORD": spec.word_of_shape(d)}))
                else:
                    lines.append(snippet("elementwise/offset_dim0"))
                for slot in range(n_ops):
                    lines.append(snippet("elementwise/offset_stride",
                                         {"SLOT": slot, "D": d, "WORD": spec.word_of_stride(slot, d)}))
            values = [f"u32(s{slot})" for slot in range(n_ops)]
        lines.append(snippet("elementwise/offset_return", {"VALUES": ", ".join(values)}))
        functions = snippet("elementwise/offsets", {
            "MEMBERS": ", ".join(snippet("elementwise/offset_member", {"SLOT": slot}) for slot in range(n_ops)),
            "BODY": "\n".join(lines),
            "ELEMENT": snippet("elementwise/element", {"PARAMS": "o: Offsets", "TYPE": spec.expr_type, "BODY": body})})
        out_index = f"o.o{n_ops - 1}"
        value = value_of("element(o)")
        if spec.store == "direct":
            store = snippet("elementwise/store_direct", {"WORKGROUP": WORKGROUP, "ELEMENTS": ELEMENTS_PER_THREAD,
                                                         "OUT_INDEX": out_index, "VALUE": _stored(out_st, value)})
            return _defines(spec, enable, bindings, functions, store)
        lanes_n = out_st.lanes
        lane_bits = 32 // lanes_n
        packing = {"LANES": lanes_n, "LANE_BITS": lane_bits, "MASK": (1 << lane_bits) - 1,
                   "BITS": out_st.bits_expr("v"), "VALUE": value}
        if spec.store == "word":
            store = snippet("elementwise/store_word", {
                **packing, "FIRST_WORD": spec.word_of_offset(n_ops - 1), "LANES_M1": lanes_n - 1})
        else:  # atomic
            store = snippet("elementwise/store_atomic", {**packing, "OUT_INDEX": out_index})
    return _defines(spec, enable, bindings, functions, store)


def _defines(spec: ElementwiseSpec, enable: str, bindings: Sequence[str], functions: str,
             store: str) -> dict[str, str]:
    """The placeholder values of ``elementwise.wgsl`` from the kernel's generated parts."""
    return {
        "ENABLE": enable,
        "HELPERS": library_code(spec.expr + "\n" + functions + "\n" + store),
        "NPARAM_VEC4": str(max(1, -(-spec.n_param_words() // 4))),
        "BINDINGS": "\n".join(bindings),
        "FUNCTIONS": functions,
        "STORE": store,
        "WORKGROUP": str(WORKGROUP),
    }


def _element(spec: ElementwiseSpec, raw: str) -> str:
    """``fn element(r.., ...)`` of the vector modes: the array operands' raw values (of their
    ``raw`` type: 'compute' or 'array') in, the expression's value out."""
    params = ", ".join(snippet("elementwise/param", {"K": k, "TYPE": getattr(storage_type(spec.inputs[k][0]), raw)})
                       for k in spec.array_inputs)
    loads = []
    for k, (dt, scalar) in enumerate(spec.inputs):
        st = storage_type(dt)
        raw_value = _scalar_load(st, spec.word_of_scalar(k)) if scalar else f"r{k}"
        loads.append(snippet("elementwise/operand", {"K": k, "VALUE": convert(raw_value, st.compute, spec.casts[k])}))
    if spec.lets:
        loads.append(spec.lets)
    body = "\n".join(loads) + "\n" + snippet("elementwise/return", {"EXPR": spec.expr})
    return snippet("elementwise/element", {"PARAMS": params, "TYPE": spec.expr_type, "BODY": body})


def _render_mixed(spec: ElementwiseSpec) -> dict[str, str]:
    """The placeholders of the mixed vector variant (``is_mixed``): invocation ``t`` takes the
    group of ``W = spec.vector`` elements ``first / W + t`` of every operand (the launcher
    guarantees ``first % W == 0`` for each), loading it as its units (``_mixed_unit``), and
    stores the output's group whole: 4-byte outputs as vec4s, packed ones as one vec4<u32> of
    whole words (no other invocation shares them). ``n`` counts groups."""
    out_st = storage_type(spec.out)
    arrays = spec.array_inputs
    n_ops = spec.n_arrays
    width = spec.vector
    units = {k: _mixed_unit(storage_type(spec.inputs[k][0]), width) for k in arrays}
    out_unit = _mixed_unit(out_st, width)
    bindings = [snippet("elementwise/binding_in", {"BINDING": slot + 1, "K": k, "ELEM": units[k][0]})
                for slot, k in enumerate(arrays)]
    bindings.append(snippet("elementwise/binding_out", {"BINDING": len(arrays) + 1, "ELEM": out_unit[0]}))
    functions = _element(spec, "compute")
    lines = [snippet("elementwise/mixed_head")]
    for slot, k in enumerate(arrays):
        per = units[k][2]
        base = f"P({spec.word_of_offset(slot)}u) / {width}u * {per}u + t * {per}u" if per > 1 else \
            f"P({spec.word_of_offset(slot)}u) / {width}u + t"
        lines.append(snippet("elementwise/mixed_base", {"K": k, "BASE": base}))
        for u in range(per):
            lines.append(snippet("elementwise/mixed_unit", {"K": k, "U": u, "OFFSET": f" + {u}u" if u else ""}))
    values = []
    for e in range(width):
        call = "element(" + ", ".join(
            _mixed_element(storage_type(spec.inputs[k][0]), units[k], f"v{k}_", e) for k in arrays) + ")"
        values.append(convert(call, spec.expr_type, out_st.compute))
    for e, v in enumerate(values):
        lines.append(snippet("elementwise/mixed_value", {"E": e, "VALUE": v}))
    ys = [f"y{e}" for e in range(width)]
    obase = f"P({spec.word_of_offset(n_ops - 1)}u) / {width}u"
    if out_st.packed:  # one vec4<u32> of whole words
        lanes = out_st.lanes
        lane_bits = 32 // lanes
        words = []
        for w in range(PACKED_VECTOR_WORDS):
            parts = [out_st.bits_expr(ys[w * lanes + lane]) for lane in range(lanes)]
            words.append(" | ".join(f"({b} << {lane * lane_bits}u)" if lane else b for lane, b in enumerate(parts)))
        lines.append(snippet("elementwise/mixed_store_words", {"BASE": obase, "WORDS": ",\n        ".join(words)}))
    else:
        per = out_unit[2]
        for u in range(per):
            vec = f"vec4<{out_st.array}>(" + ", ".join(_stored(out_st, y) for y in ys[4 * u: 4 * u + 4]) + ")"
            index = f"{obase} * {per}u + t * {per}u + {u}u" if per > 1 else f"{obase} + t"
            lines.append(snippet("elementwise/mixed_store", {"INDEX": index, "VALUE": vec}))
    return _defines(spec, "", bindings, functions, "\n".join(lines))


def scalar_words(value: object, dtype: str) -> list[int]:
    """The parameter words carrying a scalar operand of ``dtype``: the value converted to
    ``dtype`` as NumPy's ``astype`` does (float16 rounds, int8 wraps, ...) and then to its
    compute type (float16 travels as f32)."""
    st = storage_type(dtype)
    if st.compute == "bool":
        return [1 if value else 0]
    np_dtype = compute_info(st.compute).numpy
    with np.errstate(over="ignore", invalid="ignore"):
        arr = np.array(value).astype(np.dtype(dtype)).astype(np_dtype)
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


# ---- fused expression DAGs (gputensor._fusion) -------------------------------------------------

_OPERAND = re.compile(r"\bx([0-9]+)\b")

#: One node of a fused DAG: (op expression over x0, x1, ..., cast compute type per operand,
#: compute type of the expression, dtype name of the node's value, operand references).
FusedNode = tuple[str, tuple[str, ...], str, str, tuple[int, ...]]


def store_round(value: str, dtype: str) -> str:
    """``value`` (in ``dtype``'s compute type) as storing it as ``dtype`` and loading it back
    gives: float16 rounds to nearest even (overflow to inf), 8/16-bit integers wrap."""
    st = storage_type(dtype)
    return st.wrap_expr(f"({value})") if st.wrap else value


def fused_program(inputs: tuple[str, ...], nodes: tuple[FusedNode, ...],
                  round_root: bool = False) -> tuple[str, str, str]:
    """:func:`_fused_program` for the int64 mode of the device being worked on (the compute
    types of int64/uint64 inputs differ by it)."""
    return _fused_program(inputs, nodes, round_root, emulating_int64())


@functools.lru_cache(maxsize=4096)
def _fused_program(inputs: tuple[str, ...], nodes: tuple[FusedNode, ...],
                   round_root: bool, int64_emulated: bool) -> tuple[str, str, str]:
    """The WGSL of an elementwise expression DAG: ``(lets, expr, expr_type)`` for
    ``elementwise(..., lets=lets)`` or a reduction ``Prologue``.

    ``inputs``: dtype names of the kernel inputs ``x0 .. x{n-1}`` (loaded in their own compute
    type: pass those as the ``casts``). ``nodes`` in topological order, the last one the root;
    a node is ``(expr, casts, expr_type, out, operands)``: ``expr`` an op expression of
    ``elementwise_ops`` over ``x0, x1, ...`` standing for its operands converted to ``casts``,
    of compute type ``expr_type``; ``out`` the dtype of the node's value; ``operands`` value
    references (``k < n``: input k, ``k >= n``: node ``k - n``, an earlier one). Every node's
    value is bound once (``let t{j}``), converted to ``out``'s compute type and rounded/wrapped
    as storing it as ``out`` would (float16, narrow integers), so the DAG gives exactly the
    values of running its ops one at a time through memory; the root is rounded only with
    ``round_root`` (a store rounds it anyway). Cached by the arguments, which hold the
    structure only (no pointers, strides or scalar values).

    Raises ValueError for a malformed DAG (bad references, arity mismatch).
    """
    n = len(inputs)
    names = [f"x{k}" for k in range(n)]
    types = [storage_type(d).compute for d in inputs]
    lines: list[str] = []
    last = len(nodes) - 1
    if last < 0:
        raise ValueError("a fused program needs at least one node")
    for j, (expr, casts, expr_type, out, operands) in enumerate(nodes):
        if len(casts) != len(operands):
            raise ValueError(f"node {j}: {len(casts)} casts for {len(operands)} operands")
        args = []
        for i, ref in enumerate(operands):
            if not 0 <= ref < n + j:
                raise ValueError(f"node {j}: operand reference {ref} is not an input or an earlier node")
            value = convert(names[ref], types[ref], casts[i])
            if value != names[ref]:
                lines.append(snippet("elementwise/fused_operand", {"J": j, "I": i, "VALUE": value}))
                value = f"a{j}_{i}"
            args.append(value)

        def operand(match: re.Match[str], args: list[str] = args, j: int = j) -> str:
            k = int(match.group(1))
            if k >= len(args):
                raise ValueError(f"node {j}: expression uses x{k} but has {len(args)} operands")
            return args[k]

        body = _OPERAND.sub(operand, expr)
        compute = storage_type(out).compute
        value = convert(body, expr_type, compute)
        if j != last or round_root:
            value = store_round(value, out)
        lines.append(snippet("elementwise/fused_node", {"J": j, "VALUE": value}))
        names.append(f"t{j}")
        types.append(compute)
    return "\n".join(lines), f"t{last}", types[-1]
