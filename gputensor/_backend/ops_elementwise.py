"""The generic elementwise launcher and the contract's ``unary``/``binary`` built on it.

``elementwise`` runs one WGSL expression over typed, strided, broadcast (stride 0) operands and
Python scalars. It merges dimensions that are contiguous for every operand, picks the contiguous
fast path when it can (vector loads where every operand is 16-byte aligned; the tail in the same
dispatch, or for packed outputs a scalar dispatch), and splits the iteration space so that every
operand's binding fits one window of the adapter (operands larger than the max binding size
work). Every dispatch is planned, and every pointer validated, before the first is recorded.

Plans are cached per backend (``ElementwiseCall``, keyed by expression, dtypes, casts, strides
and shape, never by pointers or scalar values); each holds, per variant of its operands'
alignment (vector or scalar forms, the packed output's first lane), the whole call compiled as
a ``launch.LaunchProgram``. A repeated call binds and checks its pointers' windows
(``WebGpuBackend.bindings``), picks the variant's program and replays it with the scalars'
parameter bytes: that keeps the host cost of a small op low. Callers that repeat one call
structure keep its plan (``launch_plan``) and call ``ElementwiseCall.launch`` with the new
pointers and scalar values (``gputensor._dispatch``'s eager fast path, ``gputensor._fusion``'s
fused programs).

Op expressions live in ``elementwise_ops.py`` (one table shared with the namespace).
"""

from __future__ import annotations

import dataclasses
import math
import operator
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import config
from . import elementwise as codegen
from .base import BinaryOp, UnaryOp
from .elementwise_ops import expression
from .errors import invalid_argument, unsupported
from .launch import LaunchProgram, Region
from .layout import extent, merge_dims, plan_chunks
from .plan_cache import PlanCache
from .wgsl_types import storage_type


@dataclass(frozen=True)
class ArrayOperand:
    """A strided view: pointer to element [0, ..., 0], dtype name, strides in elements."""

    ptr: int
    dtype: str
    strides: tuple[int, ...]


@dataclass(frozen=True)
class ScalarOperand:
    """A scalar passed by value in the parameters."""

    value: object
    dtype: str


Operand = ArrayOperand | ScalarOperand

__all__ = ["ArrayOperand", "ElementwiseCall", "Operand", "ScalarOperand", "binary", "copy_bytes", "copy_strided",
           "elementwise", "extent", "launch_plan", "merge_dims", "plan_chunks", "unary"]


def _check_dtype(backend, dtype: str) -> None:
    try:
        st = storage_type(dtype)
    except KeyError as exc:
        raise invalid_argument(str(exc)) from None
    if not backend.supports(st.feature):
        raise unsupported(f"{dtype} needs the adapter feature {st.feature!r}, which this adapter lacks", st.feature)


def elementwise(backend, expr: str, expr_type: str, inputs: Sequence[Operand], casts: Sequence[str],
                out: ArrayOperand, shape: Sequence[int], *, lets: str = "") -> None:
    """Record ``out[idx] = expr(x0, x1, ...)`` for every index of ``shape``.

    ``expr`` is WGSL over ``x0, x1, ...`` (input k converted to compute type ``casts[k]``) and has
    compute type ``expr_type``; the result is converted to ``out.dtype``. ``lets`` are WGSL
    statements evaluated before ``expr`` (a fused expression DAG: ``let t0 = exp(x0);
    let t1 = t0 * x1;`` with ``expr`` ``t1``); the generated kernel is cached by its text, so
    calls with the same structure share one pipeline whatever the pointers and scalar values.
    Array operands carry
    strides (elements, any sign, 0 for broadcast) over ``shape``. The output must not overlap an
    input with a different layout (the caller copies first). Raises BackendError (invalid argument)
    for bad pointers/ranges, (unsupported) for dtypes the adapter lacks.

    Launch plans (everything but the pointers and the scalar values) are cached per backend by
    ``(expr, expr_type, input dtypes/kinds/strides, casts, output dtype/strides, shape)``, so a
    repeated call only checks its pointers, binds their windows and records its dispatches.
    """
    plan = launch_plan(backend, expr, expr_type, inputs, casts, out, shape, lets=lets)
    if plan is not None:
        plan.run(backend, inputs, out)


def launch_plan(backend, expr: str, expr_type: str, inputs: Sequence[Operand], casts: Sequence[str],
                out: ArrayOperand, shape: Sequence[int], *, lets: str = "") -> ElementwiseCall | None:
    """The launch plan of ``elementwise(backend, expr, ...)`` (None: nothing to do), from the
    backend's plan cache or made and cached now. Validates the call as ``elementwise`` does,
    except the pointers: ``ElementwiseCall.launch`` (or ``run``) checks those at every call.
    Callers that repeat one call structure keep the plan and call ``launch`` with new pointers
    and scalar values (``gputensor._dispatch``)."""
    try:
        key = (expr, expr_type, tuple(casts), out.dtype, out.strides, tuple(shape),
               tuple([(op.dtype, op.strides if type(op) is ArrayOperand else None)
                      for op in inputs if type(op) is ArrayOperand or type(op) is ScalarOperand]),
               lets)
        hash(key)
    except (TypeError, AttributeError):
        key = None  # not hashable or not operands: the full path reports what is wrong
    if key is not None and (len(key[6]) != len(inputs) or not all(type(n) is int for n in key[5])):
        key = None  # (4.0 hashes like 4: such a shape must reach the validation)
    plans = _plans(backend)
    plan = plans.get(key) if key is not None else None
    if plan is None:
        if not isinstance(lets, str):
            raise invalid_argument(f"lets must be a string of WGSL statements, not {lets!r}")
        plan = _plan(backend, expr, expr_type, inputs, casts, out, shape, lets)
        if key is not None and type(out) is ArrayOperand:
            _keep_plan(plans, key, plan)
    return plan


#: Launch plans kept per backend (``_plans(backend)``: its dict; ``_keep_plan``: store one).
_PLAN_CACHE = PlanCache(2048)
_plans = _PLAN_CACHE.of
_keep_plan = _PLAN_CACHE.keep


_SCALAR_PARAMS: dict[tuple[Any, ...], tuple[list[int], bytes]] = {}
#: struct codes of the float dtypes whose scalar words are the IEEE bits of the value
_FLOAT_CODES = {"float32": "f", "float64": "d"}
_NO_VALUE = object()


def _scalar_param(value: object, dtype: str) -> tuple[list[int], bytes]:
    """``codegen.scalar_words`` (treat as read-only) and those words packed, memoised by
    (dtype, type, value); a float zero by its exact bits (0.0 and -0.0 compare equal: the only
    distinct floats that do; a NaN is only ever found again as the same object)."""
    kind = type(value)
    if kind is float:
        key: tuple[Any, ...] = (dtype, kind, value if value else value.hex())
    elif kind is int or kind is bool:
        key = (dtype, kind, value)
    else:
        words = codegen.scalar_words(value, dtype)
        return words, struct.pack(f"<{len(words)}I", *words)
    entry = _SCALAR_PARAMS.get(key)
    if entry is None:
        words = codegen.scalar_words(value, dtype)
        entry = (words, struct.pack(f"<{len(words)}I", *words))
        if len(_SCALAR_PARAMS) >= 4096:
            _SCALAR_PARAMS.clear()
        _SCALAR_PARAMS[key] = entry
    return entry


class _Kernel:
    """One dispatch form of a chunk, as planning sees it: its spec's defines, its parameter
    words before the scalars (every offset 0), where each array's offset word is, how many
    elements (or vectors) it covers and its grid, or None when the grid depends on the output's
    first element (the 'word' store mode: see ``groups``)."""

    __slots__ = ("defines", "words", "offset_words", "count", "units_mode", "lanes", "grid")

    def __init__(self, spec: codegen.ElementwiseSpec, count: int, sub_shape: Sequence[int],
                 mstrides: Sequence[Sequence[int]], store: str, lanes: int, vector: bool, ctx: Any) -> None:
        self.defines = codegen.render_defines(spec)
        n_arrays = spec.n_arrays
        scalars = [0] * sum(1 for _, s in spec.inputs if s)
        words = codegen.param_words(spec, count, sub_shape, [0] * n_arrays, mstrides, scalars)
        self.words = tuple(words[: spec.word_of_scalar(0)] if spec.inputs else words)
        self.offset_words = [spec.word_of_offset(slot) for slot in range(n_arrays)]
        self.count = count
        # invocations: vector mode one per vector (direct stores: plus one per tail element,
        # ``count`` then counts elements); else per store mode (see codegen)
        tail_here = store == "direct" and not codegen.is_mixed(spec)
        self.units_mode = ("vector_tail" if tail_here else "vector") if vector else store
        self.lanes = spec.vector if vector and store == "direct" else lanes
        self.grid = None if self.units_mode == "word" else ctx.fold_grid(self.groups(0))

    def groups(self, out_first: int) -> int:
        """Workgroups of the dispatch when the output's window starts at element ``out_first``."""
        if self.units_mode == "vector_tail":
            units = self.count // self.lanes + self.count % self.lanes
        elif self.units_mode == "vector" or self.units_mode == "atomic":
            units = self.count
        elif self.units_mode == "word":
            units = (out_first % self.lanes + self.count + self.lanes - 1) // self.lanes
        else:
            units = -(-self.count // codegen.ELEMENTS_PER_THREAD)
        return -(-units // codegen.WORKGROUP)


class _Chunk:
    """A piece of the iteration space whose every operand fits one binding window: its
    elements, per array operand the span it binds (element offset of the chunk's lowest
    element, count, ``lo``: that element's offset from the chunk's element [0, ...]) and its
    dispatch forms: ``vector`` (where every first element is a multiple of ``width``) with a
    separate ``tail`` (the mixed variant), else ``scalar``."""

    __slots__ = ("n", "spans", "vector", "tail", "scalar", "width")

    def __init__(self, n: int, spans: list[tuple[int, int, int]], vector: _Kernel | None,
                 tail: _Kernel | None, scalar: _Kernel, width: int) -> None:
        self.n = n
        self.spans = spans
        self.vector = vector
        self.tail = tail
        self.scalar = scalar
        self.width = width


#: The most variants (first elements' residues) an ``ElementwiseCall`` keeps programs for.
_MAX_VARIANTS = 32


class ElementwiseCall:
    """Everything about one elementwise call that does not depend on the pointers or on the
    scalar values (see ``elementwise``): the binding slots of its chunks and, per *variant*,
    its ``launch.LaunchProgram``.

    The slots are every array operand's window in every chunk (one chunk for all but operands
    larger than a binding window), in that order, shared where two are equal (a broadcast
    operand's). The program a call replays depends on where the slots' windows start: the
    vector form of a chunk needs every first element a multiple of its width, and the grid of
    the 'word' store mode depends on the output's first element mod its lanes. So the
    variant is the first elements mod ``modulus`` (1 where neither applies: one program), and
    a call whose windows all start at their first element takes ``zero``, whose parameter
    bytes need no patch."""

    __slots__ = ("itemsizes", "n_arrays", "n_scalars", "chunks", "chunk_slots", "slot_keys", "slot_ptrs",
                 "slot_sizes", "spans", "modulus", "programs", "zero", "scalar_dtypes", "ctx", "float_struct",
                 "last_scalar")

    def __init__(self, itemsizes: list[int], chunks: list[_Chunk], modulus: int,
                 scalar_dtypes: list[str], ctx: Any) -> None:
        self.itemsizes = itemsizes
        self.n_arrays, self.n_scalars = len(itemsizes), len(scalar_dtypes)
        self.chunks = chunks
        self.modulus = modulus
        self.scalar_dtypes = scalar_dtypes
        self.ctx = ctx  # the backend's context (plans are cached per backend)
        slots: dict[tuple[int, int, int], int] = {}
        self.chunk_slots = []
        for chunk in chunks:
            self.chunk_slots.append([
                slots.setdefault((k, start * itemsizes[k], count * itemsizes[k]), len(slots))
                for k, (start, count, _) in enumerate(chunk.spans)])
        self.slot_keys = list(slots)
        bases = tuple(k for k, _, _ in self.slot_keys)
        #: the pointer of each slot from the operands' (None: the operands' own, in order)
        self.slot_ptrs = None if bases == tuple(range(len(itemsizes))) else operator.itemgetter(*bases)
        self.slot_sizes = [itemsizes[k] for k in bases]
        self.spans = [(offset // itemsizes[k], nbytes // itemsizes[k], 0) for k, offset, nbytes in self.slot_keys]
        self.programs: dict[tuple[int, ...], LaunchProgram] = {}
        self.zero: LaunchProgram | None = None
        # several scalars, all float32/float64: Python floats pack in one call (the words
        # ``scalar_words`` gives: one IEEE rounding, signed zeros and NaNs kept; a finite value
        # that overflows float32 raises, and takes ``_scalar_param``)
        codes = [_FLOAT_CODES.get(d) for d in scalar_dtypes]
        self.float_struct = (struct.Struct("<" + "".join(codes))  # type: ignore[arg-type]
                             if len(codes) > 1 and None not in codes else None)
        #: (value, its parameter bytes) of the last launch's one scalar: a loop passing the
        #: same float object again skips ``_scalar_param`` (the same object: the same bits)
        self.last_scalar: tuple[Any, bytes] = (_NO_VALUE, b"")

    def _scalar_bytes(self, values: Sequence[object]) -> bytes:
        """The parameter bytes of the scalar ``values`` (``_scalar_param`` of each, joined)."""
        dtypes = self.scalar_dtypes
        if len(values) == 1:
            value = values[0]
            last = self.last_scalar
            if last[0] is value:
                return last[1]
            raw = _scalar_param(value, dtypes[0])[1]
            if type(value) is float:
                self.last_scalar = (value, raw)
            return raw
        packer = self.float_struct
        if packer is not None:
            for value in values:
                if type(value) is not float:
                    break
            else:
                try:
                    return packer.pack(*values)
                except OverflowError:  # (a float32 overflow: scalar_words gives inf)
                    pass
        return b"".join([_scalar_param(value, dtype)[1] for value, dtype in zip(values, dtypes)])

    def run(self, backend, inputs: Sequence[Operand], out: ArrayOperand) -> None:
        """Record the call for ``inputs`` and ``out`` (operands of the structure it was made for)."""
        ptrs = [op.ptr for op in inputs if type(op) is ArrayOperand]
        ptrs.append(out.ptr)
        self.launch(backend, ptrs, [op.value for op in inputs if type(op) is ScalarOperand])

    def launch(self, backend, ptrs: Sequence[int], values: Sequence[object]) -> None:
        """Record the call with the array operands at ``ptrs`` (the inputs in order, then the
        output) and the scalar inputs' ``values`` (in order): every slot's window bound and
        checked by ``WebGpuBackend.bindings``, then the variant's program recorded, the
        scalars' bytes after each dispatch's parameter words (through ``WgpuContext.dispatch``
        where a wrapper watches it: the profiler's host-time mode, test spies). Every pointer
        range is checked before anything is recorded: BackendError (invalid argument) for
        unknown or freed pointers, ranges past an allocation's end, misaligned pointers and a
        wrong number of pointers or values."""
        if len(ptrs) != self.n_arrays or len(values) != self.n_scalars:
            raise invalid_argument(f"a plan for {self.n_arrays} arrays and {self.n_scalars} "
                                   f"scalars got {len(ptrs)} pointers and {len(values)} values")
        tail = self._scalar_bytes(values) if values else b""
        getter = self.slot_ptrs
        bindings, firsts = backend.bindings(ptrs if getter is None else getter(ptrs), self.slot_sizes, self.spans)
        ctx = self.ctx
        if any(firsts):
            m = self.modulus
            key = tuple([f % m for f in firsts])
            program = self.programs.get(key)
            if program is None:
                program = self._compile(key)
        else:
            program = self.zero
            if program is None:
                program = self.zero = self._compile(None)
            firsts = None
        if "dispatch" in ctx.__dict__:  # a wrapper sees every dispatch
            program.dispatch(backend, ctx, ptrs, None, tail)
            return
        program.record(ctx, bindings, firsts, tail)

    def _compile(self, residues: tuple[int, ...] | None) -> LaunchProgram:
        """The program of the variant whose slots' first elements are ``residues`` mod
        ``modulus`` (None: every one 0), kept in ``programs`` (``zero`` for None)."""
        ctx = self.ctx
        m = self.modulus
        n_arrays = len(self.itemsizes)
        records = []

        def add(kernel: _Kernel, chunk: _Chunk, firsts: list[int], done: int) -> None:
            regions = [Region(k, start * size, count * size, size, 0, kernel.offset_words[k], done - lo)
                       for k, (size, (start, count, lo)) in enumerate(zip(self.itemsizes, chunk.spans))]
            grid = kernel.grid or ctx.fold_grid(kernel.groups(firsts[-1] + done))
            words = kernel.words
            records.append((ctx.pipeline("elementwise", n_arrays, kernel.defines), kernel.defines, words, grid,
                            tuple(regions), "elementwise", _words_struct(len(words))))

        for chunk, ids in zip(self.chunks, self.chunk_slots):
            # each operand's first element (the window's, less ``lo``) mod ``modulus``
            firsts = [0 if residues is None else (residues[s] - lo) % m for s, (_, _, lo) in zip(ids, chunk.spans)]
            vector = chunk.vector
            if vector is not None and any(f % chunk.width for f in firsts):
                vector = None  # vector loads need every first element aligned
            if vector is None:
                add(chunk.scalar, chunk, firsts, 0)
            else:
                add(vector, chunk, firsts, 0)
                if chunk.tail is not None:  # contiguous: the rest continues from each operand's first
                    add(chunk.tail, chunk, firsts, chunk.n - chunk.tail.count)
        program = LaunchProgram.compile("elementwise", _words_struct(0), ctx, records, ())
        if [(s.base, s.offset, s.nbytes) for s in program.slots] != self.slot_keys:  # pragma: no cover
            raise AssertionError("elementwise program slots differ from the plan's")
        if residues is not None:
            if len(self.programs) >= _MAX_VARIANTS:
                self.programs.clear()
            self.programs[residues] = program
        return program


def _words_struct(n: int) -> struct.Struct:
    """The struct of ``n`` little-endian u32 parameter words."""
    packer = _WORD_STRUCTS.get(n)
    if packer is None:
        packer = _WORD_STRUCTS.setdefault(n, struct.Struct(f"<{n}I"))
    return packer


_WORD_STRUCTS: dict[int, struct.Struct] = {}


def _plan(backend, expr: str, expr_type: str, inputs: Sequence[Operand], casts: Sequence[str],
          out: ArrayOperand, shape: Sequence[int], lets: str = "") -> ElementwiseCall | None:
    """Validate a call and plan its dispatches (None: nothing to do). Raises as ``elementwise``;
    the pointers are checked by ``ElementwiseCall.launch``."""
    if not isinstance(out, ArrayOperand):
        raise invalid_argument(f"the output must be an ArrayOperand, not {out!r}")
    for op in inputs:
        if not isinstance(op, (ArrayOperand, ScalarOperand)):
            raise invalid_argument(f"an input must be an ArrayOperand or ScalarOperand, not {op!r}")
    if len(casts) != len(inputs):
        raise invalid_argument(f"{len(casts)} casts given for {len(inputs)} inputs")
    try:
        shape = [operator.index(n) for n in shape]
    except TypeError:
        raise invalid_argument(f"shape must be a sequence of integers, not {shape!r}") from None
    if any(n < 0 for n in shape):
        raise invalid_argument(f"negative dimension in shape {tuple(shape)}")
    arrays: list[ArrayOperand] = [op for op in inputs if isinstance(op, ArrayOperand)] + [out]
    for op in list(inputs) + [out]:
        _check_dtype(backend, op.dtype)
    for op in arrays:
        if len(op.strides) != len(shape):
            raise invalid_argument(f"strides {op.strides} do not match shape {tuple(shape)}")
    total = 1
    for n in shape:
        total *= n
    if total == 0:
        return None
    itemsizes = [storage_type(op.dtype).itemsize for op in arrays]

    mshape, mstrides = merge_dims(shape, [list(op.strides) for op in arrays])
    contiguous = len(mshape) == 1 and all(st[0] == 1 for st in mstrides)
    out_st = storage_type(out.dtype)
    if not out_st.packed:
        store = "direct"
    else:
        expected, acc = [], 1
        for n in reversed(mshape):
            expected.append(acc)
            acc *= n
        store = "word" if list(reversed(expected)) == mstrides[-1] else "atomic"
    spec = codegen.ElementwiseSpec(
        inputs=tuple((op.dtype, isinstance(op, ScalarOperand)) for op in inputs),
        casts=tuple(casts),
        expr=expr,
        expr_type=expr_type,
        out=out.dtype,
        ndim=0 if contiguous else len(mshape),
        store=store,
        lets=lets,
    )
    for feature in spec.features():
        if not backend.supports(feature):
            raise unsupported(f"this operation needs the adapter feature {feature!r}", feature)
    ctx = backend.context
    # contiguous operands of one 4- or 8-byte type take vector loads where aligned; of mixed
    # widths (packed with 4-byte types), whole vectors of each (``elementwise_mixed_vec4``)
    width = codegen.vector_width(spec, mixed=bool(config.value("elementwise_mixed_vec4")))
    vspec = dataclasses.replace(spec, vector=width) if width > 1 else None
    mixed = vspec is not None and codegen.is_mixed(vspec)
    if width > 1 and ctx.storage_offset_alignment % (16 if mixed else width * itemsizes[0]):
        width, vspec, mixed = 1, None, False
    lanes = out_st.lanes if out_st.packed else 1
    chunks = []
    for sub_shape, offs in plan_chunks(mshape, mstrides, itemsizes, backend.max_window_bytes()):
        n = 1
        for d in sub_shape:
            n *= d
        spans = []
        for st, off in zip(mstrides, offs):
            lo, stop = extent(sub_shape, st)
            spans.append((off + lo, stop - lo, lo))
        scalar = _Kernel(spec, n, sub_shape, mstrides, store, lanes, False, ctx)
        vector = tail = None
        if vspec is not None and n >= width and store == "direct" and not mixed:  # the tail in the same dispatch
            vector = _Kernel(vspec, n, sub_shape, mstrides, store, lanes, True, ctx)
        elif vspec is not None and n >= width:
            vectors = n // width
            vector = _Kernel(vspec, vectors, sub_shape, mstrides, store, lanes, True, ctx)
            if vectors * width < n:  # contiguous: the rest continues from each operand's first
                tail = _Kernel(spec, n - vectors * width, sub_shape, mstrides, store, lanes, False, ctx)
        chunks.append(_Chunk(n, spans, vector, tail, scalar, width))
    scalar_dtypes = [op.dtype for op in inputs if isinstance(op, ScalarOperand)]
    # the variants: vector forms need first elements that are multiples of ``width``, the
    # 'word' store mode's grid depends on the output's first element mod ``lanes``
    modulus = math.lcm(width if vspec is not None else 1, lanes if store == "word" else 1)
    return ElementwiseCall(itemsizes, chunks, modulus, scalar_dtypes, ctx)


def copy_strided(backend, src: ArrayOperand, dst: ArrayOperand, shape: Sequence[int]) -> None:
    """``dst = src`` over ``shape`` with casting between the dtypes (NumPy's ``astype`` rules)."""
    compute = storage_type(dst.dtype).compute
    elementwise(backend, "x0", compute, [src], [compute], dst, shape)


def copy_bytes(backend, dst_ptr: int, src_ptr: int, nbytes: int) -> None:
    """Byte-exact device copy for ranges that are not 4-byte aligned."""
    copy_strided(backend, ArrayOperand(src_ptr, "uint8", (1,)), ArrayOperand(dst_ptr, "uint8", (1,)), [nbytes])


# ---- the contract's unary / binary over n contiguous float elements ---------------------------
def _contract(backend, name: str, ptrs: Sequence[int], output: int, n: int, dtype: str) -> None:
    """``output = name(*ptrs)`` over ``n`` contiguous ``dtype`` elements. The launch plan of
    each (op, operand count, dtype, n) is kept with the backend's plans, so a repeated call only
    checks and binds its pointers (``ElementwiseCall.launch``: the same errors as the first call's
    checks) and records."""
    plans = _plans(backend)
    key = (_CONTRACT, name, len(ptrs), dtype, n)
    plan = plans.get(key) if type(n) is int and type(dtype) is str else None
    if plan is None:
        itemsize, _ = backend.float_dtype(dtype)
        try:
            n = operator.index(n)
        except TypeError:
            raise invalid_argument(f"n must be an integer, not {n!r}") from None
        if n < 0:
            raise invalid_argument(f"n must be >= 0, got {n}")
        compute = storage_type(dtype).compute
        for p in list(ptrs) + [output]:
            backend.resolve(p, n * itemsize)
        if n == 0:
            return
        expr = expression(name, compute)
        plan = launch_plan(backend, expr, compute, [ArrayOperand(p, dtype, (1,)) for p in ptrs],
                           [compute] * len(ptrs), ArrayOperand(output, dtype, (1,)), [n])
        if plan is None:  # pragma: no cover - n > 0 always plans
            return
        if type(n) is int and type(dtype) is str:
            _keep_plan(plans, key, plan)
    plan.launch(backend, [*ptrs, output], ())


#: First item of the contract functions' keys in the plan cache (``_contract``).
_CONTRACT = object()


def unary(backend, op: UnaryOp, input: int, output: int, n: int, *, dtype: str = "float32") -> None:
    """``output = op(input)`` over ``n`` contiguous elements (in place allowed)."""
    if not isinstance(op, UnaryOp):
        raise invalid_argument(f"op must be a UnaryOp, not {op!r}")
    _contract(backend, op.op_name, [input], output, n, dtype)


def binary(backend, op: BinaryOp, a: int, b: int, output: int, n: int, *, dtype: str = "float32") -> None:
    """``output = op(a, b)`` over ``n`` contiguous elements (in place allowed)."""
    if not isinstance(op, BinaryOp):
        raise invalid_argument(f"op must be a BinaryOp, not {op!r}")
    _contract(backend, op.op_name, [a, b], output, n, dtype)
