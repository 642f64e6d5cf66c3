"""Array API linear algebra functions: matmul, tensordot, vecdot, matrix_transpose.

``matmul`` of floating operands runs on the backend's gemm and never copies an operand for its
layout: when the last two dims are row- or column-contiguous (transposed views such as ``x.mT``
included) the product is ``ops_gemm.gemm_strided_batched`` on the column-major transposes, i.e.
``C^T = B^T A^T``; any other view (negative steps such as ``a[::-1]``, steps in both matrix dims
such as ``a[::2, ::3]``, 0-stride broadcast dims, negative batch strides) runs on the
general-stride gemm ``ops_gemm.gemm_strided``, which reads the operand in place through its
strides. The one copy left is dtype promotion: operands of mixed float dtypes (``float32 @
float64``) are converted to the result dtype with an astype copy first. Batch dims broadcast
(stride 0 operands are reused, never materialised); batch dims that merge to one stride are one
batched gemm call.
Integer matmul runs on the backend's tiled integer matmul kernel (``ops_matmul_int``): operands of
any integer dtypes and any strides (transposed, negative-step and broadcast views included) are
read in place, converted on load, and accumulated with wrap-around in the result dtype (8/16-bit
results accumulate in the 32-bit integer of the same signedness and are truncated afterwards,
which is bit-identical), as NumPy's integer matmul. ``bool`` operands raise ``TypeError`` (the
spec's matmul is numeric only).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import _complex_views, _dispatch, _fusion
from . import _function_kernels as kernels
from ._array_object import GpuArray
from ._data_type_functions import result_type
from ._dtypes import DTYPE_CATEGORIES, DType
from ._elementwise_functions import conj, multiply, negative
from ._manipulation_functions import (
    _check_array,
    _copy_contiguous,
    _index,
    _view,
    broadcast_to,
    expand_dims,
    permute_dims,
    reshape,
    squeeze,
)
from ._backend import ops_gemm
from ._backend.plan_cache import PlanCache
from ._kept import KeptCall
from ._shapes import broadcast_shapes, contiguous_strides, is_contiguous, normalize_axis
from ._statistical_functions import sum as sum_

__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]  # + matmul_result_shape (internal)

_NUMERIC = frozenset(DTYPE_CATEGORIES["numeric"])  # (membership tests: one hash, not a scan)
_FLOATING = frozenset(DTYPE_CATEGORIES["real floating"])  # (membership tests: one hash, not a scan)


def matrix_transpose(x: GpuArray, /) -> GpuArray:
    """A view with the last two dimensions swapped; ``ValueError`` below two dimensions."""
    _check_array(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose needs at least 2 dimensions, got {x.ndim}")
    axes = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return permute_dims(x, axes)


def _check_numeric(x: GpuArray, name: str) -> None:
    if x.dtype not in _NUMERIC:
        raise TypeError(f"{name} needs numeric dtypes, got {x.dtype}")


def _matmul_nd(a: GpuArray, b: GpuArray, dtype: DType) -> GpuArray:
    """``a @ b`` for ``a.ndim >= 2`` and ``b.ndim >= 2`` (shapes checked)."""
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    m, k = a.shape[-2:]
    n = b.shape[-1]
    out_shape = batch + (m, n)
    if dtype.kind == "c":
        return _matmul_complex(a, b, dtype, batch)
    if dtype not in _FLOATING:
        return _matmul_integer(a, b, dtype, batch)
    # zero-filled only when k == 0 (then zeros are the result); otherwise the gemm (beta 0,
    # which never reads the output) writes every element
    out = GpuArray._empty(out_shape, dtype, zero=k == 0)
    if out.size == 0 or k == 0:
        return out
    # dtype promotion (float32 @ float64 -> float64): the astype conversion is the only copy;
    # layouts are never copied (gemm_batched reads any strides in place)
    if a.dtype != dtype:
        a = _copy_contiguous(a, dtype)
    if b.dtype != dtype:
        b = _copy_contiguous(b, dtype)
    a = _gemm_operand(a, batch + (m, k))
    b = _gemm_operand(b, batch + (k, n))
    kernels.gemm_batched(a, b, out)
    return out


def _matmul_complex(a: GpuArray, b: GpuArray, dtype: DType, batch: tuple[int, ...]) -> GpuArray:
    """Complex ``a @ b`` (shapes checked, batch dims broadcast to ``batch``) as one real gemm.

    ``a`` (m x k complex) read as real pairs is the m x 2k real matrix ``[ar0, ai0, ar1, ai1,
    ...]`` (a view when its last dim has stride 1, else a copy); ``b`` is expanded to the
    2k x 2n real matrix of 2 x 2 blocks ``[[br, bi], [-bi, br]]``, so that the real product is
    m x 2n, the (real, imaginary) pairs of the complex result, in the result's own storage
    layout: ``Re = sum(ar br - ai bi)``, ``Im = sum(ar bi + ai br)`` (4 real flops per complex
    multiply-add, like four real gemms, at the speed of the real gemm's fast path). Operands
    of other dtypes are converted to ``dtype`` first."""
    m, k = a.shape[-2:]
    n = b.shape[-1]
    if size_of_shape(batch + (m, n)) == 0 or k == 0:
        out = GpuArray._empty(batch + (m, n), dtype)
        if out.size:
            _dispatch.fill(out, 0)
        return out
    if a.dtype != dtype:
        a = _copy_contiguous(a, dtype)
    if b.dtype != dtype:
        b = _copy_contiguous(b, dtype)
    real = _complex_views.component_dtype(dtype)
    a_real = reshape(_complex_views.as_pairs(a), a.shape[:-1] + (2 * k,))
    lead = b.shape[:-2]
    expanded = GpuArray._empty(lead + (k, 2, n, 2), real, zero=False)
    st = expanded._strides
    block_strides = st[:-4] + (st[-4], st[-2])
    b_re, b_im = _complex_views.part(b, 0), _complex_views.part(b, 1)
    for row, col, value in ((0, 0, b_re), (0, 1, b_im), (1, 0, negative(b_im)), (1, 1, b_re)):
        _dispatch.copy_into(_view(expanded, lead + (k, n), block_strides, row * st[-3] + col), value)
    product = _matmul_nd(a_real, reshape(expanded, lead + (2 * k, 2 * n)), real)
    return _complex_views.from_pairs(reshape(product, batch + (m, n, 2)), dtype)


def _gemm_operand(x: GpuArray, shape: tuple[int, ...]) -> GpuArray:
    """``x`` broadcast to ``shape`` (its batch dims) with a gemm layout for its matrix dims: the
    array itself when it already has that shape and no size-1 matrix dim."""
    if x.shape == shape and shape[-1] != 1 and shape[-2] != 1:
        return x
    x = broadcast_to(x, shape)
    # broadcast_to sets the stride of size-1 matrix dims to 0: restore a valid layout
    return _view(x, x.shape, x._strides[:-2] + _fix_matrix_strides(shape[-2], shape[-1], x._strides[-2:]))


def _fix_matrix_strides(rows: int, cols: int, strides: Sequence[int]) -> tuple[int, int]:
    """Strides of a rows x cols matrix where size-1 dims get a stride that keeps a gemm layout."""
    s_row, s_col = strides
    if rows == 1 and cols == 1:
        return (1, 1)
    if rows == 1:
        return (cols * max(s_col, 1), s_col)
    if cols == 1:
        return (s_row, rows * max(s_row, 1))
    return (s_row, s_col)


def _matmul_integer(a: GpuArray, b: GpuArray, dtype: DType, batch: tuple[int, ...]) -> GpuArray:
    """Integer ``a @ b`` (shapes checked, batch dims broadcast to ``batch``) on the integer matmul
    kernel; no operand is copied."""
    m, k = a.shape[-2:]
    n = b.shape[-1]
    # zero-filled only when k == 0 (then zeros are the result); otherwise every element is
    # written by the kernel or by the cast from the accumulator
    out = GpuArray._empty(batch + (m, n), dtype, zero=k == 0)
    if out.size == 0 or k == 0:
        return out
    acc = kernels.int_accumulator(dtype)
    target = out if acc == dtype else GpuArray._empty(out.shape, acc, zero=False)
    kernels.matmul_int_batched(broadcast_to(a, batch + (m, k)), broadcast_to(b, batch + (k, n)), target)
    if target is not out:
        _dispatch.copy_into(out, target)  # wrap-around cast to the 8/16-bit result
    return out


def size_of_shape(shape: Sequence[int]) -> int:
    total = 1
    for s in shape:
        total *= s
    return total


def matmul_result_shape(shape1: tuple[int, ...], shape2: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of ``x1 @ x2`` for operands of these shapes (no device work).

    Raises ``ValueError`` for 0-d operands, contraction sizes that differ or batch dims that do
    not broadcast (as :func:`matmul`)."""
    if len(shape1) == 0 or len(shape2) == 0:
        raise ValueError("matmul does not accept 0-d operands (use multiply)")
    a = (1,) + tuple(shape1) if len(shape1) == 1 else tuple(shape1)
    b = tuple(shape2) + (1,) if len(shape2) == 1 else tuple(shape2)
    if a[-1] != b[-2]:
        raise ValueError(
            f"matmul: contraction sizes differ: {tuple(shape1)} @ {tuple(shape2)} ({a[-1]} != {b[-2]})"
        )
    out = broadcast_shapes(a[:-2], b[:-2]) + (a[-2], b[-1])
    if len(shape1) == 1:
        out = out[:-2] + out[-1:]
    if len(shape2) == 1:
        out = out[:-1]
    return out


class _GemmCalls:
    """The gemm calls of a float ``matmul`` of one call structure (operand shapes, strides and
    dtypes), kept for replay (``KeptCall``): per call the backend's kept ``ops_gemm`` plan and
    the byte offsets of its A, B and C pointers from ``x2``'s, ``x1``'s and the result's element
    [0, ...]."""

    __slots__ = ("calls",)

    def __init__(self, calls: tuple[tuple[Any, int, int, int], ...]) -> None:
        self.calls = calls

    def valid_on(self, backend: Any) -> bool:
        """Whether every kept gemm plan holds on the backend's context now."""
        ctx = backend._ctx
        for call, _, _, _ in self.calls:
            if call.ctx is not ctx or not call.program.valid_for(ctx):
                return False
        return True

    def launch(self, backend: Any, p1: int, pc: int, p2: int) -> None:
        """Record ``x1 @ x2`` for the pointers of ``x1``, the result and ``x2`` (a pointer that
        fails the gemm's checks raises before anything is recorded)."""
        for call, off_a, off_b, off_c in self.calls:
            call.launch(backend, p2 + off_a, p1 + off_b, pc + off_c)


#: Float matmuls kept per backend by (x1's shape, strides, dtype, x2's, ``ops_gemm.plan_settings()``).
_MATMUL_PLANS = PlanCache(256)


def _float_matmul_plan(backend: Any, x1: GpuArray, x2: GpuArray, res: GpuArray) -> KeptCall | None:
    """The plan of ``res = x1 @ x2`` just computed, when it was one or more float gemms on the
    operands in place whose plans the backend kept; else None."""
    dtype = res.dtype
    if not (x1.dtype == x2.dtype == dtype and dtype in _FLOATING) or res.size == 0:
        return None
    a = expand_dims(x1, 0) if x1.ndim == 1 else x1
    b = expand_dims(x2, -1) if x2.ndim == 1 else x2
    m, k = a.shape[-2:]
    n = b.shape[-1]
    if k == 0:
        return None
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = _gemm_operand(a, batch + (m, k))
    b = _gemm_operand(b, batch + (k, n))
    out_shape = batch + (m, n)
    out = _view(res, out_shape, contiguous_strides(out_shape))
    calls = kernels.gemm_batched_calls(a, b, out)
    if calls is None:
        return None
    settings = ops_gemm.plan_settings()
    kept = []
    for args, off_b, off_a, off_c in calls:
        call = ops_gemm.planned_call(backend, *args, dtype=dtype.name, settings=settings)
        if call is None:
            return None
        kept.append((call, off_b + b._ptr - x2._ptr, off_a + a._ptr - x1._ptr, off_c))
    return KeptCall.like(res, _GemmCalls(tuple(kept)))


def matmul(x1: GpuArray, x2: GpuArray, /) -> GpuArray:
    """Matrix product with NumPy's rules: 1-D operands are promoted to a row / column matrix and
    the added dim removed; batch dims broadcast.

    A float product of operands read in place is planned once per call structure (shapes,
    strides, dtypes) and replayed for new operands of that structure.

    Raises ``TypeError`` for non-numeric or non-promoting dtypes, ``ValueError`` for 0-d operands,
    mismatched contraction sizes or batch dims that do not broadcast.
    """
    key: tuple[Any, ...] | None = None
    if type(x1) is _fusion.LazyArray or type(x2) is _fusion.LazyArray:
        # computed first, as the product would (then its plan holds), once the call is valid
        _matmul_dtype(x1, x2)
        _fusion.materialize(x1)
        _fusion.materialize(x2)
    if type(x1) is GpuArray and type(x2) is GpuArray:
        backend = _dispatch.backend()
        key = (x1._shape, x1._strides, x1._dtype, x2._shape, x2._strides, x2._dtype, ops_gemm.plan_settings())
        plans = _MATMUL_PLANS.of(backend)
        plan = plans.get(key)
        if plan is not None:
            res = plan.replay(x1._ptr, x2._ptr)
            if res is not None:
                return res
    res = _matmul_checked(x1, x2)
    if key is not None and res._offset == 0 and is_contiguous(res.shape, res._strides):
        plan = _float_matmul_plan(backend, x1, x2, res)
        if plan is not None:
            _MATMUL_PLANS.keep(plans, key, plan)
    return res


def _matmul_dtype(x1: GpuArray, x2: GpuArray) -> DType:
    """The result dtype of ``x1 @ x2`` once the operands are checked (no device work):
    ``TypeError`` and ``ValueError`` as :func:`matmul` raises them."""
    _check_array(x1, "x1")
    _check_array(x2, "x2")
    _check_numeric(x1, "matmul")
    _check_numeric(x2, "matmul")
    dtype = result_type(x1, x2)
    matmul_result_shape(x1.shape, x2.shape)
    return dtype


def _matmul_checked(x1: GpuArray, x2: GpuArray) -> GpuArray:
    """``matmul`` without its plan cache."""
    dtype = _matmul_dtype(x1, x2)
    a = expand_dims(x1, 0) if x1.ndim == 1 else x1
    b = expand_dims(x2, -1) if x2.ndim == 1 else x2
    out = _matmul_nd(a, b, dtype)
    if x1.ndim == 1 and x2.ndim == 1:
        return reshape(out, out.shape[:-2])
    if x1.ndim == 1:
        return squeeze(out, -2)
    if x2.ndim == 1:
        return squeeze(out, -1)
    return out


def tensordot(x1: GpuArray, x2: GpuArray, /, *,
              axes: int | tuple[Sequence[int], Sequence[int]] = 2) -> GpuArray:
    """Sum of products over ``axes`` (the last ``axes`` dims of ``x1`` with the first of ``x2``,
    or explicit axis lists), as one matmul of the permuted, reshaped operands.

    Raises ``TypeError`` for bad dtypes, ``ValueError`` for a negative count, lists of different
    lengths or contracted sizes that differ, :class:`AxisError` for out-of-range axes.
    """
    _check_array(x1, "x1")
    _check_array(x2, "x2")
    _check_numeric(x1, "tensordot")
    _check_numeric(x2, "tensordot")
    dtype = result_type(x1, x2)
    if isinstance(axes, tuple) or isinstance(axes, list):
        if len(axes) != 2:
            raise ValueError("axes must be an int or a pair of axis sequences")
        ax1 = [axes[0]] if not isinstance(axes[0], (tuple, list)) else list(axes[0])
        ax2 = [axes[1]] if not isinstance(axes[1], (tuple, list)) else list(axes[1])
        if len(ax1) != len(ax2):
            raise ValueError("the two axis sequences must have the same length")
        ax1 = [normalize_axis(_index(a, "axes"), x1.ndim) for a in ax1]
        ax2 = [normalize_axis(_index(a, "axes"), x2.ndim) for a in ax2]
        if len(set(ax1)) != len(ax1) or len(set(ax2)) != len(ax2):
            raise ValueError("repeated axis in tensordot axes")
    else:
        count = _index(axes, "axes")
        if count < 0:
            raise ValueError(f"axes must be non-negative, got {count}")
        if count > x1.ndim or count > x2.ndim:
            raise ValueError(f"axes = {count} exceeds the dimensions of the operands")
        ax1 = list(range(x1.ndim - count, x1.ndim))
        ax2 = list(range(count))
    for a, b in zip(ax1, ax2):
        if x1.shape[a] != x2.shape[b]:
            raise ValueError(f"shape mismatch for sum: {x1.shape}[{a}] != {x2.shape}[{b}]")
    free1 = [d for d in range(x1.ndim) if d not in ax1]
    free2 = [d for d in range(x2.ndim) if d not in ax2]
    k = size_of_shape([x1.shape[d] for d in ax1])
    m = size_of_shape([x1.shape[d] for d in free1])
    n = size_of_shape([x2.shape[d] for d in free2])
    a = reshape(permute_dims(x1, tuple(free1 + ax1)), (m, k))
    b = reshape(permute_dims(x2, tuple(ax2 + free2)), (k, n))
    out = _matmul_nd(a, b, dtype)  # casts float operands as needed; integer ones convert on load
    return reshape(out, tuple(x1.shape[d] for d in free1) + tuple(x2.shape[d] for d in free2))


def vecdot(x1: GpuArray, x2: GpuArray, /, *, axis: int = -1) -> GpuArray:
    """Dot product of vectors along ``axis`` (negative, counted after broadcasting), for
    broadcast-compatible operands: ``sum(conj(x1) * x2, axis)`` in the promoted dtype (the
    conjugate of a complex ``x1``, as the spec defines it).

    Raises ``TypeError`` for bad dtypes, ``ValueError`` when the axis sizes differ or the shapes do
    not broadcast, :class:`AxisError` for an out-of-range axis.
    """
    _check_array(x1, "x1")
    _check_array(x2, "x2")
    _check_numeric(x1, "vecdot")
    _check_numeric(x2, "vecdot")
    dtype = result_type(x1, x2)
    shape = broadcast_shapes(x1.shape, x2.shape)
    ndim = len(shape)
    if ndim == 0:
        raise ValueError("vecdot needs at least one dimension")
    ax = normalize_axis(axis, ndim)
    a1 = ax - (ndim - x1.ndim)
    a2 = ax - (ndim - x2.ndim)
    n1 = x1.shape[a1] if a1 >= 0 else 1
    n2 = x2.shape[a2] if a2 >= 0 else 1
    if n1 != n2:
        raise ValueError(f"x1 and x2 must have the same size along axis {axis} ({n1} != {n2})")
    if x1.dtype.kind == "c":
        x1 = conj(x1)
    return sum_(multiply(x1, x2), axis=ax, dtype=dtype)
