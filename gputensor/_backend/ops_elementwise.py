"""The generic elementwise launcher and the contract's ``unary``/``binary`` built on it.

``elementwise`` runs one WGSL expression over typed, strided, broadcast (stride 0) operands and
Python scalars. It merges dimensions that are contiguous for every operand, picks the contiguous
fast path when it can (vector loads where every operand is 16-byte aligned; the tail in the same
dispatch, or for packed outputs a scalar dispatch), and splits the iteration space so that every
operand's binding fits one window of the adapter (operands larger than the max binding size
work). Every dispatch is planned, and every pointer validated, before the first is recorded.

Plans are cached per backend (``_Plan``, keyed by expression, dtypes, casts, strides and shape,
never by pointers or scalar values): a repeated call binds its pointers' windows, picks the
vector or scalar variant by their alignment, patches the element offsets and scalar words into
precomputed parameter words and records. That keeps the host cost of a small op low. Callers
that repeat one call structure keep its plan (``launch_plan``) and call ``_Plan.launch`` with
the new pointers and scalar values (``gputensor._dispatch``'s eager fast path).

Op expressions live in ``elementwise_ops.py`` (one table shared with the namespace).
"""

from __future__ import annotations

import dataclasses
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

__all__ = ["ArrayOperand", "Operand", "ScalarOperand", "binary", "copy_bytes", "copy_strided", "elementwise",
           "extent", "launch_plan", "merge_dims", "plan_chunks", "unary"]


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
                out: ArrayOperand, shape: Sequence[int], *, lets: str = "") -> _Plan | None:
    """The launch plan of ``elementwise(backend, expr, ...)`` (None: nothing to do), from the
    backend's plan cache or made and cached now. Validates the call as ``elementwise`` does,
    except the pointers: ``_Plan.launch`` (or ``run``) checks those at every call. Callers that
    repeat one call structure keep the plan and call ``launch`` with new pointers and scalar
    values (``gputensor._dispatch``)."""
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


class _Launch:
    """One dispatch of a chunk: its spec's defines, the parameter words with zero offsets and
    no scalars (``prefix``), where each array's offset goes, how many invocations it needs and
    its grid when that does not depend on the output's first element (all but the 'word' store
    mode), and its pipeline once compiled."""

    __slots__ = ("defines", "prefix", "offset_words", "count", "units_mode", "lanes", "grid", "packer",
                 "packed_prefix", "pipe", "ctx")

    def __init__(self, spec: codegen.ElementwiseSpec, count: int, sub_shape: Sequence[int],
                 mstrides: Sequence[Sequence[int]], store: str, lanes: int, vector: bool, ctx: Any) -> None:
        self.defines = codegen.render_defines(spec)
        n_arrays = spec.n_arrays
        scalars = [0] * sum(1 for _, s in spec.inputs if s)
        words = codegen.param_words(spec, count, sub_shape, [0] * n_arrays, mstrides, scalars)
        self.prefix = words[: spec.word_of_scalar(0)] if spec.inputs else words
        self.packer = struct.Struct(f"<{len(words)}I")  # the prefix, then the scalar words
        self.packed_prefix = struct.pack(f"<{len(self.prefix)}I", *self.prefix)  # every offset 0
        self.offset_words = [spec.word_of_offset(slot) for slot in range(n_arrays)]
        self.count = count
        # invocations: vector mode one per vector (direct stores: plus one per tail element,
        # ``count`` then counts elements); else per store mode (see codegen)
        tail_here = store == "direct" and not codegen.is_mixed(spec)
        self.units_mode = ("vector_tail" if tail_here else "vector") if vector else store
        self.lanes = spec.vector if vector and store == "direct" else lanes
        self.grid = None if self.units_mode == "word" else ctx.fold_grid(self.groups(0))
        self.pipe: Any = None  # compiled on first use (see ``pipeline``)
        self.ctx: Any = None

    def groups(self, out_first: int) -> int:
        if self.units_mode == "vector_tail":
            units = self.count // self.lanes + self.count % self.lanes
        elif self.units_mode == "vector" or self.units_mode == "atomic":
            units = self.count
        elif self.units_mode == "word":
            units = (out_first % self.lanes + self.count + self.lanes - 1) // self.lanes
        else:
            units = -(-self.count // codegen.ELEMENTS_PER_THREAD)
        return -(-units // codegen.WORKGROUP)

    def pipeline(self, ctx: Any, n_storage: int) -> Any:
        """The compiled pipeline of this launch on ``ctx`` (kept after the first call)."""
        if self.ctx is not ctx:
            pipe = ctx.pipeline("elementwise", n_storage, self.defines)
            self.pipe, self.ctx = pipe, ctx  # (a racing thread stores the same cached pipeline)
            return pipe
        return self.pipe


class _Chunk:
    """A piece of the iteration space whose every operand fits one binding window."""

    __slots__ = ("n", "spans", "vector", "tail", "scalar", "width")

    def __init__(self, n: int, spans: list[tuple[int, int, int]], vector: _Launch | None,
                 tail: _Launch | None, scalar: _Launch, width: int) -> None:
        self.n = n
        self.spans = spans  # per array operand: (element offset of the chunk's lowest element, count, lo)
        self.vector = vector
        self.tail = tail
        self.scalar = scalar
        self.width = width


class _Plan:
    """Everything about one elementwise call that does not depend on the pointers or on the
    scalar values (see ``elementwise``)."""

    __slots__ = ("itemsizes", "extents", "chunks", "scalar_dtypes", "ctx", "float_struct", "last_scalar")

    def __init__(self, itemsizes: list[int], extents: list[tuple[int, int]], chunks: list[_Chunk],
                 scalar_dtypes: list[str], ctx: Any) -> None:
        self.itemsizes = itemsizes
        self.extents = extents
        self.chunks = chunks
        self.scalar_dtypes = scalar_dtypes
        self.ctx = ctx  # the backend's context (plans are cached per backend)
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
        """Record the plan for ``inputs`` and ``out`` (operands of the structure it was made for)."""
        ptrs = [op.ptr for op in inputs if type(op) is ArrayOperand]
        ptrs.append(out.ptr)
        self.launch(backend, ptrs, [op.value for op in inputs if type(op) is ScalarOperand])

    def launch(self, backend, ptrs: Sequence[int], values: Sequence[object]) -> None:
        """Record the plan with the array operands at ``ptrs`` (the inputs in order, then the
        output) and the scalar inputs' ``values`` (in order). Every pointer range is checked
        before anything is recorded: BackendError (invalid argument) for unknown or freed
        pointers, ranges past an allocation's end, misaligned pointers and a wrong number of
        pointers or values."""
        itemsizes = self.itemsizes
        scalar_dtypes = self.scalar_dtypes
        if len(ptrs) != len(itemsizes) or len(values) != len(scalar_dtypes):
            raise invalid_argument(f"a plan for {len(itemsizes)} arrays and {len(scalar_dtypes)} scalars "
                                   f"got {len(ptrs)} pointers and {len(values)} values")
        chunks = self.chunks
        ctx = self.ctx
        if len(chunks) == 1 and "dispatch" not in ctx.__dict__:
            # the usual small op: one dispatch, every operand at its window's start (then the
            # prepacked parameters and the scalars' bytes are the whole parameter block)
            chunk = chunks[0]
            scalar_bytes = self._scalar_bytes(values) if values else b""
            bindings, firsts = backend.bindings(ptrs, itemsizes, chunk.spans)
            if chunk.tail is None and not any(firsts):
                launch = chunk.vector or chunk.scalar
                raw = launch.packed_prefix + scalar_bytes if values else launch.packed_prefix
                grid = launch.grid
                if grid is None:
                    grid = ctx.fold_grid(launch.groups(0))
                pipe = launch.pipe if launch.ctx is ctx else launch.pipeline(ctx, len(itemsizes))
                ctx.record("elementwise", pipe, launch.defines, raw, bindings, *grid)
                return
        scalar_words: list[int] = []
        scalar_raw = b""
        for value, dtype in zip(values, scalar_dtypes):
            words, raw = _scalar_param(value, dtype)
            scalar_words += words
            scalar_raw += raw
        if len(chunks) > 1:
            # validate every operand's whole range before anything is recorded
            for ptr, size, (lo, stop) in zip(ptrs, itemsizes, self.extents):
                _, offset = backend.resolve(ptr + lo * size, (stop - lo) * size)
                if offset % size:
                    raise invalid_argument(f"pointer offset {offset} is not a multiple of the item size {size}")
        records = []
        for chunk in chunks:
            bindings, firsts = backend.bindings(ptrs, itemsizes, chunk.spans)
            launch = chunk.vector
            if launch is not None and any(firsts):  # vector loads need every first element aligned
                width = chunk.width
                for first in firsts:
                    if first % width:
                        launch = None
                        break
            if launch is None:
                records.append((chunk.scalar, bindings, firsts))
            else:
                records.append((launch, bindings, firsts))
                if chunk.tail is not None:
                    done = chunk.n - chunk.tail.count
                    records.append((chunk.tail, bindings, [f + done for f in firsts]))
        # a wrapper of ``dispatch`` set on the context (the profiler's host-time mode, test spies)
        # sees every dispatch; otherwise the bindings (from ``backend.bindings``) and the grid
        # (from ``fold_grid``) are valid by construction and ``record`` skips their checks
        wrapped = ctx.__dict__.get("dispatch")
        for launch, bindings, firsts in records:
            grid = launch.grid
            if grid is None:
                grid = ctx.fold_grid(launch.groups(firsts[-1]))
            if wrapped is None and not any(firsts):  # (every operand at its window's start)
                raw = launch.packed_prefix + scalar_raw if scalar_raw else launch.packed_prefix
            else:
                words = launch.prefix[:]
                for slot, first in zip(launch.offset_words, firsts):
                    words[slot] = first
                if scalar_words:
                    words += scalar_words
                if wrapped is not None:
                    wrapped("elementwise", words, bindings, grid, launch.defines)
                    continue
                raw = launch.packer.pack(*words)
            pipe = launch.pipe if launch.ctx is ctx else launch.pipeline(ctx, len(itemsizes))
            ctx.record("elementwise", pipe, launch.defines, raw, bindings, *grid)


def _plan(backend, expr: str, expr_type: str, inputs: Sequence[Operand], casts: Sequence[str],
          out: ArrayOperand, shape: Sequence[int], lets: str = "") -> _Plan | None:
    """Validate a call and plan its dispatches (None: nothing to do). Raises as ``elementwise``;
    the pointers are checked by ``_Plan.run``."""
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
    extents = [extent(shape, op.strides) for op in arrays]

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
        scalar = _Launch(spec, n, sub_shape, mstrides, store, lanes, False, ctx)
        vector = tail = None
        if vspec is not None and n >= width and store == "direct" and not mixed:  # the tail in the same dispatch
            vector = _Launch(vspec, n, sub_shape, mstrides, store, lanes, True, ctx)
        elif vspec is not None and n >= width:
            vectors = n // width
            vector = _Launch(vspec, vectors, sub_shape, mstrides, store, lanes, True, ctx)
            if vectors * width < n:  # contiguous: the rest continues from each operand's first
                tail = _Launch(spec, n - vectors * width, sub_shape, mstrides, store, lanes, False, ctx)
        chunks.append(_Chunk(n, spans, vector, tail, scalar, width))
    scalar_dtypes = [op.dtype for op in inputs if isinstance(op, ScalarOperand)]
    return _Plan(itemsizes, extents, chunks, scalar_dtypes, ctx)


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
    checks and binds its pointers (``_Plan.launch``: the same errors as the first call's
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
