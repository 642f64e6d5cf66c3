"""The generic elementwise launcher and the contract's ``unary``/``binary`` built on it.

``elementwise`` runs one WGSL expression over typed, strided, broadcast (stride 0) operands and
Python scalars. It merges dimensions that are contiguous for every operand, picks the contiguous
fast path when it can (vector loads where every operand is 16-byte aligned, a scalar dispatch for
the tail), and splits the iteration space so that every operand's binding fits one window of the
adapter (operands larger than the max binding size work). Every dispatch is planned, and every
pointer validated, before the first is recorded.

Op expressions live in ``elementwise_ops.py`` (one table shared with the namespace).
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Sequence
from dataclasses import dataclass

from . import elementwise as codegen
from .base import BinaryOp, UnaryOp
from .elementwise_ops import expression
from .errors import invalid_argument, unsupported
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


def merge_dims(shape: Sequence[int], strides: Sequence[Sequence[int]]) -> tuple[list[int], list[list[int]]]:
    """Drop size-1 dims and merge neighbours that are contiguous for every stride list."""
    dims = [(n, [s[d] for s in strides]) for d, n in enumerate(shape) if n != 1]
    if not dims:  # one element: its strides do not matter, so it takes the contiguous path
        return [1], [[1] for _ in strides]
    out_shape = [dims[0][0]]
    out_strides = [[st] for st in dims[0][1]]
    for n, sts in dims[1:]:
        if all(prev[-1] == st * n for prev, st in zip(out_strides, sts)):
            out_shape[-1] *= n
            for prev, st in zip(out_strides, sts):
                prev[-1] = st
        else:
            out_shape.append(n)
            for prev, st in zip(out_strides, sts):
                prev.append(st)
    return out_shape, out_strides


def _extent(shape: Sequence[int], strides: Sequence[int]) -> tuple[int, int]:
    """(lowest, highest) element offset touched relative to element [0,...,0]."""
    lo = hi = 0
    for n, s in zip(shape, strides):
        if s < 0:
            lo += s * (n - 1)
        else:
            hi += s * (n - 1)
    return lo, hi


def plan_chunks(shape: list[int], strides: list[list[int]], itemsizes: list[int],
                limit: int) -> list[tuple[list[int], list[int]]]:
    """Split an iteration space so each operand's touched bytes fit ``limit``.

    Returns ``(sub_shape, element_offsets)`` pairs; ``element_offsets[k]`` is where operand k's
    element [0,...,0] of the chunk lies relative to the whole view's. Splits the outermost dim into
    row blocks; when one row is still too large it recurses into the remaining dims.
    """
    def fits(shp: Sequence[int], sts: list[Sequence[int]]) -> bool:
        for st, size in zip(sts, itemsizes):
            lo, hi = _extent(shp, st)
            if (hi - lo + 1) * size > limit:
                return False
        return True

    if fits(shape, strides):
        return [(list(shape), [0] * len(strides))]
    rows = shape[0]
    inner = [st[1:] for st in strides]
    lo_rows, hi_rows = 1, rows
    if not fits([1] + shape[1:], strides):
        if len(shape) == 1:
            raise invalid_argument("one element does not fit a binding")  # pragma: no cover
        chunks = []
        for r in range(rows):
            for sub_shape, offs in plan_chunks(shape[1:], inner, itemsizes, limit):
                chunks.append(([1] + sub_shape, [r * st[0] + o for st, o in zip(strides, offs)]))
        return chunks
    while lo_rows < hi_rows:  # largest row block that fits
        mid = (lo_rows + hi_rows + 1) // 2
        if fits([mid] + shape[1:], strides):
            lo_rows = mid
        else:
            hi_rows = mid - 1
    block = lo_rows
    return [([min(block, rows - r)] + shape[1:], [r * st[0] for st in strides]) for r in range(0, rows, block)]


def _check_dtype(backend, dtype: str) -> None:
    try:
        st = storage_type(dtype)
    except KeyError as exc:
        raise invalid_argument(str(exc)) from None
    if not backend.supports(st.feature):
        raise unsupported(f"{dtype} needs the adapter feature {st.feature!r}, which this adapter lacks")


def elementwise(backend, expr: str, expr_type: str, inputs: Sequence[Operand], casts: Sequence[str],
                out: ArrayOperand, shape: Sequence[int]) -> None:
    """Record ``out[idx] = expr(x0, x1, ...)`` for every index of ``shape``.

    ``expr`` is WGSL over ``x0, x1, ...`` (input k converted to compute type ``casts[k]``) and has
    compute type ``expr_type``; the result is converted to ``out.dtype``. Array operands carry
    strides (elements, any sign, 0 for broadcast) over ``shape``. The output must not overlap an
    input with a different layout (the caller copies first). Raises BackendError (invalid argument)
    for bad pointers/ranges, (unsupported) for dtypes the adapter lacks.
    """
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
        return
    # validate every operand's range and alignment before anything is recorded
    itemsizes = [storage_type(op.dtype).itemsize for op in arrays]
    for op, size in zip(arrays, itemsizes):
        lo, hi = _extent(shape, op.strides)
        _, offset = backend.resolve(op.ptr + lo * size, (hi - lo + 1) * size)
        if offset % size:
            raise invalid_argument(f"pointer offset {offset} is not a multiple of the {op.dtype} item size {size}")

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
    )
    for feature in spec.features():
        if not backend.supports(feature):
            raise unsupported(f"this operation needs the adapter feature {feature!r}")
    defines = codegen.render_defines(spec)
    scalars = [op.value for op in inputs if isinstance(op, ScalarOperand)]
    ctx = backend.context
    # contiguous operands of one 4- or 8-byte type take vector loads where aligned
    width = codegen.vector_width(spec)
    if width > 1 and ctx.storage_offset_alignment % (width * itemsizes[0]):
        width = 1
    vspec = dataclasses.replace(spec, vector=width) if width > 1 else None
    limit = backend.max_window_bytes()
    records = []
    for sub_shape, offs in plan_chunks(mshape, mstrides, itemsizes, limit):
        n = 1
        for d in sub_shape:
            n *= d
        bindings, firsts = [], []
        for op, size, st, off in zip(arrays, itemsizes, mstrides, offs):
            lo, hi = _extent(sub_shape, st)
            base = op.ptr + off * size
            win = backend.window(base + lo * size, (hi - lo + 1) * size, size)
            bindings.append(win.binding)
            firsts.append(win.first - lo)
        done = 0
        if vspec is not None and n >= width and all(f % width == 0 for f in firsts):
            vectors = n // width
            words = codegen.param_words(vspec, vectors, sub_shape, firsts, mstrides, scalars)
            records.append((words, bindings, -(-vectors // codegen.WORKGROUP), vspec))
            done = vectors * width
        if done == n:
            continue
        rest = n - done
        firsts = [f + done for f in firsts]  # contiguous here whenever done > 0
        words = codegen.param_words(spec, rest, sub_shape, firsts, mstrides, scalars)
        if store == "word":
            units = (firsts[-1] % out_st.lanes + rest + out_st.lanes - 1) // out_st.lanes
        elif store == "direct":
            units = -(-rest // codegen.ELEMENTS_PER_THREAD)
        else:
            units = rest
        records.append((words, bindings, -(-units // codegen.WORKGROUP), spec))
    for words, bindings, groups, which in records:
        ctx.dispatch("elementwise", words, bindings, ctx.fold_grid(groups), codegen.render_defines(which))


def copy_strided(backend, src: ArrayOperand, dst: ArrayOperand, shape: Sequence[int]) -> None:
    """``dst = src`` over ``shape`` with casting between the dtypes (NumPy's ``astype`` rules)."""
    compute = storage_type(dst.dtype).compute
    elementwise(backend, "x0", compute, [src], [compute], dst, shape)


def copy_bytes(backend, dst_ptr: int, src_ptr: int, nbytes: int) -> None:
    """Byte-exact device copy for ranges that are not 4-byte aligned."""
    copy_strided(backend, ArrayOperand(src_ptr, "uint8", (1,)), ArrayOperand(dst_ptr, "uint8", (1,)), [nbytes])


# ---- the contract's unary / binary over n contiguous float elements ---------------------------
def _contract(backend, name: str, ptrs: Sequence[int], output: int, n: int, dtype: str) -> None:
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
    elementwise(backend, expr, compute, [ArrayOperand(p, dtype, (1,)) for p in ptrs],
                [compute] * len(ptrs), ArrayOperand(output, dtype, (1,)), [n])


def unary(backend, op: UnaryOp, input: int, output: int, n: int, *, dtype: str = "float32") -> None:
    """``output = op(input)`` over ``n`` contiguous elements (in place allowed)."""
    if not isinstance(op, UnaryOp):
        raise invalid_argument(f"op must be a UnaryOp, not {op!r}")
    _contract(backend, op.value, [input], output, n, dtype)


def binary(backend, op: BinaryOp, a: int, b: int, output: int, n: int, *, dtype: str = "float32") -> None:
    """``output = op(a, b)`` over ``n`` contiguous elements (in place allowed)."""
    if not isinstance(op, BinaryOp):
        raise invalid_argument(f"op must be a BinaryOp, not {op!r}")
    _contract(backend, op.value, [a, b], output, n, dtype)
