"""Generated row kernels: row statistics fused with the elementwise work before and after them.

A *row problem* is ``rows`` rows of ``n`` elements over array operands (slots), each read or
written at ``first + offset(r) + j * step`` for element ``j`` of row ``r`` (offset(r) row-major
over up to 4 row dims with per-operand strides of any sign; ``step`` 0 for an operand constant
along the row). One kernel (``_wgsl/row_fusion.wgsl``) evaluates, per row:

1. the statistics in order, each the sum, mean, max or min over the row of an elementwise
   function of the operands at element ``j`` and of the statistics before it (``max`` then
   ``sum(exp(x - max))``; ``mean`` then ``mean((x - mean)^2)``): each lane accumulates its
   elements, then the row's lanes are combined in workgroup memory (``row_reduce``); a
   statistic with an output slot is stored there (one element per row);
2. the output function of the operands and statistics, stored per element (or once per row
   for an output that holds one element per row); where it reads a statistic's elementwise
   values (softmax's ``exp(x - max)``), a cached row keeps them in registers (``keep``); its
   parts that are constant along the row (log_softmax's ``log(sum)``) are evaluated once per
   row before it (``hoisted``).

The launch shape is ``ops_rows.plan_rows``'s (TPR lanes per row, RPW rows per workgroup,
neighbouring rows side by side for strided rows). A row of at most ``TPR * VPT`` elements keeps
the operands that vary along it in registers (``cached``: read once); longer rows are read
again in each pass. Lanes take units of ``lanes`` consecutive elements; float32 operands along
rows of step 1 whose rows start at multiples of 4 elements are bound as vec4 words and read (the
output written) one 4-element unit at a time (``vec``); rows that fill every lane's units have
no bounds checks (``full``). Statistics accumulate in ``acc`` (f32 for float16 and float32, f64 for
float64); max and min propagate NaN; each statistic is converted and rounded to its dtype as
storing it would be, so the values are those of running the reductions one at a time. Packed
outputs (float16, bool, small integers) are stored lane by lane with ``atomicAnd``/``atomicOr``.
No wgpu here.
"""

from __future__ import annotations

import dataclasses
import functools
import struct
from collections.abc import Sequence
from typing import Any
from dataclasses import dataclass

from .elementwise import scalar_words, store_round
from .kernels import library_code, snippet
from .launch import LaunchProgram, Region
from .ops_rows import plan_rows
from .wgsl_types import convert, emulating_int64, storage_type

__all__ = ["MAX_ROW_DIMS", "RowFunction", "RowFusionCall", "RowStat", "RowFusionSpec", "plan", "param_words",
           "row_fusion_defines"]

#: Row dims a problem may have (the caller merges or falls back).
MAX_ROW_DIMS = 4
#: Register values per lane the cached variant may hold (operands varying along the row times
#: elements per lane).
MAX_CACHED_VALUES = 64
#: Parameter words before the first operand's, and per operand.
_HEAD = 8
_PER_ARRAY = 8
_KINDS = {"sum": 0, "mean": 0, "max": 1, "min": 2}


@dataclass(frozen=True)
class RowFunction:
    """An elementwise function of one element: ``params`` name its inputs ``x0, x1, ...`` in
    order, each ``('a', slot)`` (the operand's value at the element, in its compute type),
    ``('s', k)`` (statistic k), ``('v', k)`` (the value of statistic k's function at the
    element, kept), ``('h', k)`` (hoisted row constant k, see ``RowFusionSpec``) or ``('p', q)``
    (scalar parameter q); ``lets`` / ``expr`` /
    ``expr_type`` as ``elementwise.fused_program`` gives them."""

    params: tuple[tuple[str, int], ...]
    lets: str
    expr: str
    expr_type: str


@dataclass(frozen=True)
class RowStat:
    """A statistic: ``kind`` ('sum', 'mean', 'max', 'min') of ``fn`` over the row, of dtype
    ``dtype``; ``out`` the operand slot it is stored into (-1: none); ``keep``: the values of
    ``fn`` stay in registers for the output function, which reads them as ``('v', k)``
    (cached rows only)."""

    kind: str
    dtype: str
    fn: RowFunction
    out: int
    keep: bool = False


@dataclass(frozen=True)
class RowFusionSpec:
    """Everything that changes the generated kernel: ``arrays`` (per operand slot: dtype name,
    whether it varies along the row, whether it is written), ``scalars`` (dtype names of the
    scalar parameters), the statistics, the output function ``root`` stored into slot ``dst``
    (``per_row``: one element per row), the accumulation type ``acc`` and the launch shape:
    ``vpt`` units of ``lanes`` consecutive elements per lane (cached in registers with
    ``cached``); ``word_store``: the packed output is stored as whole u32 words (its rows start
    at word boundaries, step 1, ``n`` a multiple of ``lanes`` = its elements per word);
    ``hoisted``: (function, dtype name) of the output's parts that are constant along the row
    (``log(sum)`` in log_softmax), evaluated once per row after the statistics and read by the
    output function as ``('h', k)``; ``full``: cached rows that fill every lane's units
    (``n == tpr * vpt * lanes``): the loops over them have no bounds checks; ``vec`` (per slot,
    with ``lanes`` 4): the float32 operand is bound as vec4 words and its units of 4 elements
    are loaded (or stored) as one vector (step 1, its window's first element and row strides
    multiples of 4)."""

    arrays: tuple[tuple[str, bool, bool], ...]
    scalars: tuple[str, ...]
    stats: tuple[RowStat, ...]
    root: RowFunction
    dst: int
    per_row: bool
    acc: str
    tpr: int
    rpw: int
    strided: bool
    vpt: int
    cached: bool
    lanes: int = 1
    word_store: bool = False
    hoisted: tuple[tuple[RowFunction, str], ...] = ()
    full: bool = False
    vec: tuple[bool, ...] = ()


def plan(rows: int, n: int, strided: bool, varying: int, lanes: int = 1) -> tuple[int, int, int, bool]:
    """(TPR, RPW, units of ``lanes`` elements per lane, cached) for ``rows`` rows of ``n``
    elements with ``varying`` operands read along the row (``ops_rows.plan_rows``' lanes and
    rows)."""
    p = plan_rows(rows, n, strided)
    units = -(-n // lanes)
    per_lane = 1 << max(0, (-(-units // p.tpr) - 1).bit_length())
    cached = per_lane * lanes * max(1, varying) <= MAX_CACHED_VALUES
    return p.tpr, p.rpw, per_lane, cached


def _compute(dtype: str) -> str:
    return storage_type(dtype).compute


def _reduce_parts(tpr: int) -> int:
    return 1 << (tpr.bit_length() - 1) // 2


def _identity(kind: str, acc: str) -> str:
    st = storage_type("float64" if acc == "f64" else "float32")
    if kind == "max":
        return f"(-{st.inf})"
    if kind == "min":
        return st.inf
    return f"{acc}(0)"


def _arg_values(fn: RowFunction, value_of: dict[int, str]) -> str:
    """The WGSL arguments of a call of ``fn``: operand values from ``value_of``."""
    args = []
    for kind, k in fn.params:
        if kind == "a":
            args.append(value_of[k])
        elif kind == "v":
            args.append(value_of[("v", k)])
        elif kind == "s":
            args.append(f"s{k}")
        elif kind == "h":
            args.append(f"h{k}")
        else:
            args.append(f"p{k}")
    return ", ".join(args)


def _function_source(name: str, fn: RowFunction, spec: RowFusionSpec) -> str:
    types = []
    for kind, k in fn.params:
        if kind == "a":
            types.append(_compute(spec.arrays[k][0]))
        elif kind == "v":
            types.append(spec.stats[k].fn.expr_type)
        elif kind == "s":
            types.append(_compute(spec.stats[k].dtype))
        elif kind == "h":
            types.append(_compute(spec.hoisted[k][1]))
        else:
            types.append(_compute(spec.scalars[k]))
    params = ", ".join(snippet("row_fusion/param", {"I": i, "TYPE": t}) for i, t in enumerate(types))
    return snippet("row_fusion/function", {"NAME": name, "PARAMS": params, "TYPE": fn.expr_type,
                                           "LETS": (fn.lets + "\n") if fn.lets else "", "EXPR": fn.expr}) + "\n"


def _store_source(slot: int, dtype: str) -> str:
    st = storage_type(dtype)
    if not st.packed:
        return snippet("row_fusion/store", {"A": slot, "COMPUTE": st.compute, "ARRAY": st.array}) + "\n"
    bits = 32 // st.lanes
    return snippet("row_fusion/store_packed", {"A": slot, "COMPUTE": st.compute, "LANES": st.lanes, "BITS": bits,
                                               "MASK": (1 << bits) - 1, "LANE": st.bits_expr("v")}) + "\n"


def _indented(prefix: str, statements: Sequence[str]) -> str:
    """The lines of ``statements`` (snippets), each line after ``prefix``."""
    return "\n".join(prefix + line for s in statements for line in s.split("\n"))


def _block(name: str, defines: dict[str, object], prefix: str, statements: Sequence[str]) -> str:
    """The snippet ``name`` whose line ``{{BODY}}`` holds ``statements`` after ``prefix`` (no
    line at all for none)."""
    return snippet(name, {**defines, "BODY": _indented(prefix, statements)})


def row_fusion_defines(spec: RowFusionSpec) -> dict[str, object]:
    """:func:`_row_fusion_defines` for the int64 mode of the device being worked on."""
    return _row_fusion_defines(spec, emulating_int64())


@functools.lru_cache(maxsize=512)
def _row_fusion_defines(spec: RowFusionSpec, int64_emulated: bool) -> dict[str, object]:
    """The placeholders of ``row_fusion.wgsl`` for ``spec`` (cached: treat as read-only),
    assembled from the snippets of ``_wgsl/row_fusion/``."""
    acc = spec.acc
    n_arrays = len(spec.arrays)
    bindings, helpers = [], []
    vec = spec.vec or (False,) * n_arrays
    for a, (dtype, _, written) in enumerate(spec.arrays):
        st = storage_type(dtype)
        elem = "atomic<u32>" if written and st.packed and not (spec.word_store and a == spec.dst) else st.array
        if vec[a]:
            if st.packed or st.array != "f32":
                raise AssertionError("vector units are float32 only")
            elem = "vec4<f32>"
        access = "read_write" if written else "read"
        bindings.append(snippet("row_fusion/binding", {"BINDING": a + 1, "ACCESS": access, "A": a, "ELEM": elem}))
        if vec[a] and written:
            helpers.append(snippet("row_fusion/store_vec", {"A": a}) + "\n")
        elif vec[a]:
            helpers.append(snippet("row_fusion/load_vec", {"A": a}) + "\n")
        elif written:
            if not (spec.word_store and a == spec.dst):
                helpers.append(_store_source(a, dtype))
        else:
            helpers.append(snippet("row_fusion/load", {"A": a, "COMPUTE": st.compute,
                                                       "LOAD": st.load_expr(f"A{a}", "i")}) + "\n")
    for k, stat in enumerate(spec.stats):
        helpers.append(_function_source(f"stat{k}", stat.fn, spec))
    for k, (fn, _) in enumerate(spec.hoisted):
        helpers.append(_function_source(f"hoist{k}", fn, spec))
    helpers.append(_function_source("root", spec.root, spec))
    helpers = "".join(helpers)

    lines = []
    scalar_word = _HEAD + _PER_ARRAY * n_arrays
    for q, dtype in enumerate(spec.scalars):
        st = storage_type(dtype)
        lines.append(snippet("row_fusion/scalar", {"Q": q, "VALUE": st.param_load(scalar_word)}))
        scalar_word += 2 if st.itemsize == 8 else 1
    # each operand's element index of the row's element 0
    lines.append(snippet("row_fusion/row_index"))
    for a in range(n_arrays):
        lines.append(snippet("row_fusion/offset_start", {"A": a, "WORD": _HEAD + _PER_ARRAY * a}))
    lines.append(snippet("row_fusion/dims", {"TERMS": "\n".join(
        snippet("row_fusion/dim_term", {"A": a, "WORD": _HEAD + _PER_ARRAY * a + 2}) for a in range(n_arrays))}))
    for a in range(n_arrays):
        lines.append(snippet("row_fusion/offset_first", {"A": a, "WORD": _HEAD + _PER_ARRAY * a + 2,
                                                         "STEP_WORD": _HEAD + _PER_ARRAY * a + 1}))
    reads = [a for a, (_, _, written) in enumerate(spec.arrays) if not written]
    varying = [a for a in reads if spec.arrays[a][1]]
    # operands constant along the row: one load per row
    for a in reads:
        if a not in varying:
            lines.append(snippet("row_fusion/row_constant", {"A": a}))
    L = spec.lanes  # elements per unit: lane t takes units t, t + TPR, ... of L elements
    if spec.cached:
        for a in varying:
            lines.append(snippet("row_fusion/cache", {"A": a, "TYPE": _compute(spec.arrays[a][0]),
                                                      "N": spec.vpt * L}))

    def value_at(a: int, e: int) -> str:
        if a not in varying:
            return f"r{a}"
        if spec.cached:
            return f"c{a}[c * {L}u + {e}u]"
        return f"ld{a}(o{a} + j * step{a})"

    full = spec.cached and spec.full

    def loop(body: Any, word: str = "", store: bool = False, pre: Sequence[str] = (),
             word_init: str = "") -> list[str]:
        """Per unit of the lane, per element e of it (j its index in the row, j < n):
        ``body(e)`` (statement snippets); ``pre`` runs before a unit's elements (of a unit
        inside the row: rows of vector units hold whole units), ``word`` after them (u the
        unit's index). Full rows: no bounds checks, stores (``store``, ``word``) of live rows
        only (the lanes of a row past the end read row 0)."""
        parts = []
        if pre:
            if full:
                parts.append(_indented("        ", pre))
            else:
                parts.append(snippet("row_fusion/unit_guard", {"L": L, "BODY": _indented("            ", pre)}))
        if word:
            parts.append("        " + (word_init or snippet("row_fusion/word_init")))
        for e in range(L):
            guard = ("live" if store else "") if full else "j < n"
            if guard:
                inner = [_block("row_fusion/element_guard", {"GUARD": guard}, "                ", body(e))]
            else:
                inner = [_indented("            ", body(e))] if body(e) else []
            parts.append(_block("row_fusion/element_block", {"L": L, "E": e}, "", inner))
        if word:
            parts.append(snippet("row_fusion/unit_end", {"COND": "live" if full else f"u * {L}u < n", "WORD": word}))
        if spec.cached:
            return [snippet("row_fusion/unit_loop_cached", {"BODY": "\n".join(parts)})]
        return [snippet("row_fusion/unit_loop", {"L": L, "BODY": "\n".join(parts)})]

    if spec.cached:
        vec_reads = [a for a in varying if vec[a]]
        pre = []
        for a in vec_reads:
            pre.append(snippet("row_fusion/cache_load_vec", {"A": a}))
            pre += [snippet("row_fusion/cache_lane", {"A": a, "E": e}) for e in range(4)]
        lines += loop(lambda e: [snippet("row_fusion/cache_load", {"A": a, "L": L, "E": e})
                                 for a in varying if not vec[a]], pre=pre)
    for k, stat in enumerate(spec.stats):
        kind = _KINDS[stat.kind]
        lines.append(snippet("row_fusion/acc", {"K": k, "IDENTITY": _identity(stat.kind, acc)}))

        if stat.keep:
            lines.append(snippet("row_fusion/keep", {"K": k, "TYPE": stat.fn.expr_type, "N": spec.vpt * L}))

        def accumulate(e: int, k: int = k, stat: RowStat = stat, kind: int = kind) -> list[str]:
            values = {a: value_at(a, e) for a in reads}
            call = f"stat{k}({_arg_values(stat.fn, values)})"
            if stat.keep:
                index = f"c * {L}u + {e}u"
                return [snippet("row_fusion/accumulate_keep", {
                    "K": k, "INDEX": index, "CALL": call, "KIND": kind,
                    "VALUE": convert(f"v{k}[{index}]", stat.fn.expr_type, acc)})]
            return [snippet("row_fusion/accumulate", {"K": k, "VALUE": convert(call, stat.fn.expr_type, acc),
                                                      "KIND": kind})]

        lines += loop(accumulate)
        lines.append(snippet("row_fusion/reduce", {"K": k, "KIND": kind}))
        total = f"(red{k} / {acc}(P(1u)))" if stat.kind == "mean" else f"red{k}"
        value = store_round(convert(total, acc, _compute(stat.dtype)), stat.dtype)
        lines.append(snippet("row_fusion/stat", {"K": k, "VALUE": value}))
        if stat.out >= 0:
            lines.append(snippet("row_fusion/store_row", {"A": stat.out, "VALUE": f"s{k}"}))
    for k, (fn, dtype) in enumerate(spec.hoisted):  # the output's parts constant along the row
        call = f"hoist{k}({_arg_values(fn, {a: f'r{a}' for a in reads if a not in varying})})"
        lines.append(snippet("row_fusion/hoisted", {"K": k, "VALUE": convert(call, fn.expr_type, _compute(dtype))}))
    dst_st = storage_type(spec.arrays[spec.dst][0])
    dst_t = dst_st.compute
    d = spec.dst

    def output(e: int) -> str:
        values: dict[Any, str] = {a: value_at(a, e) for a in reads}
        values.update({("v", k): f"v{k}[c * {L}u + {e}u]" for k, stat in enumerate(spec.stats) if stat.keep})
        return convert(f"root({_arg_values(spec.root, values)})", spec.root.expr_type, dst_t)

    if spec.per_row:
        row_values = {a: (f"r{a}" if a not in varying else f"ld{a}(o{a})") for a in reads}
        value = convert(f"root({_arg_values(spec.root, row_values)})", spec.root.expr_type, dst_t)
        lines.append(snippet("row_fusion/store_row", {"A": d, "VALUE": value}))
    elif spec.word_store:  # whole u32 words of a packed output: lane bits gathered per unit
        bits = 32 // L
        lines += loop(lambda e: [snippet("row_fusion/word_lane", {"BITS": dst_st.bits_expr(output(e)),
                                                                  "SHIFT": e * bits})],
                      word=snippet("row_fusion/word_store", {"A": d, "L": L}))
    elif vec[d]:  # vector units of a float32 output: one store per unit
        lines += loop(lambda e: [snippet("row_fusion/vec_lane", {"E": e, "VALUE": output(e)})],
                      word=snippet("row_fusion/vec_store", {"A": d}), word_init=snippet("row_fusion/vec_init"))
    else:
        lines += loop(lambda e: [snippet("row_fusion/store_element", {"A": d, "VALUE": output(e)})], store=True)
    body = "\n".join(lines)
    infs = storage_type("float64" if acc == "f64" else "float32")
    return {
        "ENABLE": "",
        "T": acc,
        "TPR": spec.tpr,
        "RPW": spec.rpw,
        "WG": spec.tpr * spec.rpw,
        "T_STRIDE": spec.rpw if spec.strided else 1,
        "R_STRIDE": 1 if spec.strided else spec.tpr,
        "VPT": spec.vpt,
        "RA": spec.tpr // _reduce_parts(spec.tpr),
        "RB": _reduce_parts(spec.tpr),
        "NPARAM_VEC4": max(1, -(-(scalar_word) // 4)),
        "BINDINGS": "\n".join(bindings),
        "HELPERS": library_code(helpers + body) + "\n" + helpers,
        "IS_NAN": infs.is_nan("v"),
        "NAN": infs.nan,
        "BODY": body,
    }


def param_words(spec: RowFusionSpec, row_shape: Sequence[int], n: int, firsts: Sequence[int],
                steps: Sequence[int], row_strides: Sequence[Sequence[int]], scalars: Sequence[object]) -> list[int]:
    """The kernel's parameter words: rows, n, row dims, per operand slot its first element
    index, step and row strides, then the scalar parameters' words."""
    rank = len(row_shape)
    rows = 1
    for r in row_shape:
        rows *= r
    words = [rows, n, rank, 0] + list(row_shape) + [1] * (MAX_ROW_DIMS - rank)
    for first, step, strides in zip(firsts, steps, row_strides):
        words += [first & 0xFFFFFFFF, step & 0xFFFFFFFF] + [s & 0xFFFFFFFF for s in strides]
        words += [0] * (MAX_ROW_DIMS - rank) + [0, 0]
    for value, dtype in zip(scalars, spec.scalars):
        words += scalar_words(value, dtype)
    return words


class RowFusionCall:
    """The row kernel of ``spec`` for one call structure, kept for replay: operand slot ``a``
    (pointer of its element 0) touching the element offsets ``spans[a] = (lo, stop)`` relative
    to it, with ``steps`` and ``row_strides`` (elements) over the row dims ``row_shape`` (at
    most 4) of ``n`` elements. Its ``launch.LaunchProgram`` (one dispatch) depends on where the
    slots' windows start -- a packed output's word stores need its first element on a word, vec4
    operands theirs on a vector -- so one is kept per such *variant*."""

    __slots__ = ("spec", "row_shape", "n", "steps", "row_strides", "itemsizes", "regions", "spans", "los",
                 "programs", "ctx")

    def __init__(self, backend: Any, spec: RowFusionSpec, spans: Sequence[tuple[int, int]],
                 row_shape: Sequence[int], n: int, steps: Sequence[int],
                 row_strides: Sequence[Sequence[int]]) -> None:
        self.spec = spec
        self.row_shape, self.n, self.steps, self.row_strides = tuple(row_shape), n, tuple(steps), row_strides
        self.itemsizes = [storage_type(dtype).itemsize for dtype, _, _ in spec.arrays]
        first = 4 + MAX_ROW_DIMS  # the word of slot 0's first element, then one block per slot
        self.regions = tuple(Region(a, lo * size, (stop - lo) * size, size, 0, first + a * (MAX_ROW_DIMS + 4), -lo)
                             for a, (size, (lo, stop)) in enumerate(zip(self.itemsizes, spans)))
        #: what ``WebGpuBackend.bindings`` binds per slot (firsts: the windows' own)
        self.spans = [(lo, stop - lo, 0) for lo, stop in spans]
        self.los = tuple(lo for lo, _ in spans) if any(lo for lo, _ in spans) else None
        self.programs: dict[tuple[Any, ...], LaunchProgram] = {}
        self.ctx = backend.context

    def launch(self, backend: Any, ptrs: Sequence[int], scalars: Sequence[object]) -> None:
        """Record the kernel with the slots at ``ptrs`` and the scalar parameters ``scalars``.
        Raises BackendError (invalid argument) for pointers out of range, before anything is
        recorded."""
        bindings, firsts = backend.bindings(ptrs, self.itemsizes, self.spans)
        spec = self.spec
        key: tuple[Any, ...] = ()
        los = self.los
        if los is not None or any(firsts):  # the elements' first indices decide the variant
            at = firsts if los is None else [f - lo for f, lo in zip(firsts, los)]
            key = (bool(spec.word_store and at[spec.dst] % spec.lanes),
                   tuple(bool(v and at[a] % 4) for a, v in enumerate(spec.vec)))
        program = self.programs.get(key)
        if program is None:
            program = self._compile(key)
        tail = _scalar_tail(scalars, spec.scalars) if scalars else b""
        ctx = self.ctx
        if "dispatch" in ctx.__dict__:  # a wrapper sees every dispatch
            program.dispatch(backend, ctx, ptrs, None, tail)
            return
        program.record(ctx, bindings, firsts if any(firsts) else None, tail)

    def _compile(self, key: tuple[Any, ...]) -> LaunchProgram:
        """The program of the variant ``key`` (empty: every window at its first element; else
        (the word stores off, per slot whether its vector reads are off))."""
        spec = self.spec
        if key:
            word_off, vec_off = key
            if word_off:  # (the output's window starts mid-word)
                spec = dataclasses.replace(spec, word_store=False)
            if any(vec_off):  # windows starting mid-vector
                spec = dataclasses.replace(spec, vec=tuple(v and not off for v, off in zip(spec.vec, vec_off)))
        words = param_words(spec, self.row_shape, self.n, [0] * len(self.regions), self.steps, self.row_strides, ())
        ctx = self.ctx
        defines = row_fusion_defines(spec)
        record = (ctx.pipeline("row_fusion", len(self.regions), defines), defines, tuple(words),
                  ctx.fold_grid(-(-words[0] // spec.rpw)), self.regions)
        program = LaunchProgram.compile("row_fusion", struct.Struct(f"<{len(words)}I"), ctx, [record], ())
        if len(self.programs) >= 16:
            self.programs.clear()
        self.programs[key] = program
        return program


def _scalar_bytes(value: object, dtype: str) -> bytes:
    """The parameter bytes of a scalar parameter (``scalar_words``)."""
    words = scalar_words(value, dtype)
    return struct.pack(f"<{len(words)}I", *words)


def _scalar_tail(values: Sequence[object], dtypes: Sequence[str]) -> bytes:
    """The parameter bytes of the scalar parameters ``values`` of ``dtypes``, remembered per
    (values, their types, dtypes) for a loop that passes the same scalars (``eps``, ``0.5``)
    each call: Python ints and bools, and floats other than zeros and NaNs (``-0.0 == 0.0``; a
    NaN is not equal to itself); values of other types are converted each call."""
    key = (tuple(values), tuple([type(v) for v in values]), dtypes)
    try:
        tail = _TAILS.get(key)
    except TypeError:  # (an unhashable value)
        key, tail = None, None
    if tail is None:
        tail = b"".join([_scalar_bytes(value, dtype) for value, dtype in zip(values, dtypes)])
        if key is not None and all(type(v) in (int, bool) or (type(v) is float and v == v and v) for v in values):
            if len(_TAILS) >= 1024:
                _TAILS.clear()
            _TAILS[key] = tail
    return tail


#: (scalar values, their types, dtype names) -> their parameter bytes (``_scalar_tail``).
_TAILS: dict[tuple[Any, ...], bytes] = {}
