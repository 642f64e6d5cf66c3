"""Complex-to-complex DFTs along one axis of a strided array, or along several: batched, any length.

:func:`c2c` records ``dst = scale * DFT(src)`` along one axis (sign -1 forward, +1 inverse), for
any strides of ``src`` and ``dst`` (complex elements, any sign; or real ones read as complex)
and any number of transforms; :func:`c2c_axes` the DFTs along several axes in turn, in one
program. A call's plan (``fft_program.Plan``: its launch program and its table) is made once per
call structure (length, dtype, direction, scale, the batch dims and strides, the knobs) by a
``fft_planner.Planner`` and replayed for new pointers; ``planned_c2c`` / ``planned_axes`` hand it
to a caller that keeps it (``fft_program.KeptPlan``).

How a length is transformed (``fft_planner``): lengths whose prime factors are 2, 3, 5 and 7
that fit a workgroup in one dispatch of the Stockham kernel (``_wgsl/fft_stockham.wgsl``),
longer ones by four-step decompositions, the others by Bluestein's chirp-z. Column transforms
that leave fewer than ``fft_lengths.MIN_RUN`` transforms to a workgroup take the four-step path
instead (knob ``fft_column_split``). Twiddle and chirp tables are computed in float64 on the
host once per plan and uploaded; the transforms run on the device. No wgpu here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .errors import invalid_argument
from .fft_lengths import MAX_BATCH_DIMS, factor, knobs, merge_batch, storage, stores_prefix
from .fft_planner import Planner, View, column_like
from .fft_program import KeptPlan, Plan, compile_plan
from .layout import strided_span
from .plan_cache import PlanCache

#: (``MAX_BATCH_DIMS``, ``knobs``, ``merge_batch`` and ``stores_prefix`` of ``fft_lengths``: what
#: the frontend's callers of these functions read)
__all__ = ["MAX_BATCH_DIMS", "c2c", "c2c_axes", "fits_axes", "knobs", "merge_batch", "planned_axes", "planned_c2c",
           "prefix_in_place", "stores_prefix"]


_PLANS = PlanCache(64)


def _make_plan(backend: Any, key: tuple[Any, ...]) -> Plan:
    """The plan of a call with merged batch dims ``key`` (see ``c2c``): its program, its table
    uploaded and the chirp spectra of its Bluestein transforms recorded."""
    dtype, n, sizes, src_axis, src_strides, dst_axis, dst_strides, inverse, scale, real_src, keep = key
    itemsize, wgsl = storage(backend, dtype)
    ctx = backend.context
    planner = Planner(backend, ctx, dtype, itemsize, wgsl)
    planner.real_src = real_src
    planner.transform(n, sizes, View(0, 0, src_axis, src_strides), View(1, 0, dst_axis, dst_strides),
                      inverse, scale, top=True, keep=keep)
    spans = []
    for axis, strides, isz, count in ((src_axis, src_strides, itemsize // 2 if real_src else itemsize, n),
                                      (dst_axis, dst_strides, itemsize, keep or n)):
        lo, hi = strided_span([(count, axis), *zip(sizes, strides)])
        spans.append((lo * isz, (hi - lo + 1) * isz))
    return compile_plan(backend, planner, "fft", (spans[0], spans[1]))


def prefix_in_place(backend: Any, dtype: str, n: int, src_axis: int, batch_shape: Sequence[int],
                    src_strides: Sequence[int]) -> bool:
    """Whether the real forward transforms of length ``n`` of a strided real operand (element
    strides ``src_axis`` along the axis, ``src_strides`` of the batch dims ``batch_shape``) take
    :func:`c2c` with ``keep`` in place of a contiguous copy and the half-length trick (the knob
    ``fft_real_strided``): where that transform is one workgroup pass (no four-step
    decomposition, which stores its kept results through a scratch copy) or Bluestein's.
    Raises BackendError as :func:`c2c` for a bad dtype."""
    if not knobs().real_strided:
        return False
    itemsize, wgsl = storage(backend, dtype)
    if factor(n) is None:
        return True
    planner = Planner(backend, backend.context, dtype, itemsize, wgsl)
    if planner.shape(n) is None:
        return False
    column = column_like(batch_shape, View(0, 0, src_axis, tuple(src_strides)))
    return not (column and planner.column_split and planner._split_column(n))



def c2c(backend: Any, dtype: str, n: int, src: int, src_axis: int, dst: int, dst_axis: int,
        batch_shape: Sequence[int], src_strides: Sequence[int], dst_strides: Sequence[int], *,
        inverse: bool, scale: float = 1.0, real_src: bool = False, keep: int = 0) -> None:
    """Record ``dst = scale * DFT(src)`` of length ``n`` along one axis, for every entry of
    ``batch_shape``: element i of entry (j0, j1, ...) of ``src`` is at element ``i * src_axis +
    sum j_d src_strides[d]`` from the pointer ``src`` (complex elements, any sign; with
    ``real_src``, real elements of ``dtype``'s precision, read as complex values), ``dst``
    likewise (complex); sign -1 (``inverse=False``) or +1. ``keep`` (1 <= keep < n; 0: all):
    only results k < ``keep`` of each transform are stored (``dst`` holds that many along its
    axis: e.g. the n // 2 + 1 values of a real transform). ``src`` and ``dst`` must not overlap.

    Raises BackendError: invalid argument for a length below 1, a dtype other than complex64 /
    complex128, more than ``MAX_BATCH_DIMS - 2`` batch dims that do not merge, pointers out of
    range, ``keep`` out of range; unsupported for complex128 without ``shader-f64``.
    """
    plan = _c2c_plan(backend, dtype, n, src_axis, dst_axis, batch_shape, src_strides, dst_strides, inverse, scale,
                     real_src, keep)[0]
    if plan is not None:
        plan.launch(backend, src, dst)


def planned_c2c(backend: Any, dtype: str, n: int, src_axis: int, dst_axis: int, batch_shape: Sequence[int],
                src_strides: Sequence[int], dst_strides: Sequence[int], *, inverse: bool, scale: float = 1.0,
                real_src: bool = False, keep: int = 0) -> KeptPlan | None:
    """The plan of ``c2c`` with these arguments (made now where there is none) as a
    :class:`KeptPlan`, for a caller that replays it: ``launch(backend, src, dst)`` records
    that call. None for an empty batch. Raises as :func:`c2c` (before anything is recorded)."""
    plan, knob_values = _c2c_plan(backend, dtype, n, src_axis, dst_axis, batch_shape, src_strides, dst_strides,
                                  inverse, scale, real_src, keep)
    return None if plan is None else KeptPlan(backend, plan, knob_values)


def _c2c_plan(backend: Any, dtype: str, n: int, src_axis: int, dst_axis: int, batch_shape: Sequence[int],
              src_strides: Sequence[int], dst_strides: Sequence[int], inverse: bool, scale: float,
              real_src: bool, keep: int = 0) -> tuple[Plan | None, tuple[Any, ...]]:
    """(plan of a ``c2c`` call, the knobs it was made under); no plan for an empty batch."""
    if n < 1:
        raise invalid_argument(f"fft: length must be at least 1, not {n}")
    if keep < 0 or keep > n:
        raise invalid_argument(f"fft: keep must be in [0, {n}], not {keep}")
    if len(batch_shape) != len(src_strides) or len(batch_shape) != len(dst_strides):
        raise invalid_argument("fft: batch shape and strides differ in length")
    split = knobs()
    if 0 in batch_shape:
        return None, split
    key = (dtype, n, tuple(batch_shape), src_axis, tuple(src_strides), dst_axis, tuple(dst_strides),
           inverse, scale, real_src, keep, split)
    plans = _PLANS.of(backend)
    plan = plans.get(key)
    if plan is None or not plan.program.valid_for(backend.context):
        plan = _plan_for(backend, plans, str(dtype), int(n), batch_shape, int(src_axis), src_strides,
                         int(dst_axis), dst_strides, bool(inverse), float(scale), bool(real_src), split,
                         int(keep) if keep != n else 0)
        _PLANS.keep(plans, key, plan)
    return plan, split


def _c_strides(shape: Sequence[int]) -> tuple[int, ...]:
    out = []
    step = 1
    for size in reversed(shape):
        out.append(step)
        step *= max(1, size)
    return tuple(reversed(out))


def fits_axes(shape: Sequence[int], src_strides: Sequence[int], axes: Sequence[int]) -> bool:
    """Whether :func:`c2c_axes` takes transforms along ``axes`` (in order) of an operand of
    ``shape`` and ``src_strides``: every step's batch dims merge to at most ``MAX_BATCH_DIMS - 2``
    (the first step's read through ``src_strides``, the others' through C-contiguous
    intermediates), and no dim is empty."""
    if 0 in shape or not axes:
        return False
    out = _c_strides(shape)
    strides = tuple(src_strides)
    for axis in axes:
        batch = tuple(shape[:axis]) + tuple(shape[axis + 1:])
        sizes, _, _ = merge_batch(batch, strides[:axis] + strides[axis + 1:], out[:axis] + out[axis + 1:])
        if len(sizes) > MAX_BATCH_DIMS - 2:
            return False
        strides = out
    return True


def c2c_axes(backend: Any, dtype: str, shape: Sequence[int], src: int, src_strides: Sequence[int], dst: int,
             steps: Sequence[tuple[int, bool, float]], real_src: bool = False) -> None:
    """Record the DFTs of ``steps`` = [(axis, inverse, scale), ...] in order along the axes of
    an operand of ``shape`` at ``src`` (element strides ``src_strides``, complex, or real with
    ``real_src``), into the C-contiguous complex ``dst``: one planned program per call
    structure, the intermediate results in its scratch (each step as :func:`c2c`'s). ``src``
    and ``dst`` must not overlap. Raises BackendError (invalid argument) where ``fits_axes`` is
    false, for bad axes, dtypes or pointers out of range; (unsupported) for complex128 without
    ``shader-f64``."""
    _axes_plan_of(backend, dtype, shape, src_strides, steps, real_src)[0].launch(backend, src, dst)


def planned_axes(backend: Any, dtype: str, shape: Sequence[int], src_strides: Sequence[int],
                 steps: Sequence[tuple[int, bool, float]], real_src: bool = False) -> KeptPlan:
    """The plan of ``c2c_axes`` with these arguments (made now where there is none) as a
    :class:`KeptPlan` (see :func:`planned_c2c`). Raises as :func:`c2c_axes`."""
    return KeptPlan(backend, *_axes_plan_of(backend, dtype, shape, src_strides, steps, real_src))


def _axes_plan_of(backend: Any, dtype: str, shape: Sequence[int], src_strides: Sequence[int],
                  steps: Sequence[tuple[int, bool, float]], real_src: bool) -> tuple[Plan, tuple[Any, ...]]:
    """(plan of a ``c2c_axes`` call, the knobs it was made under)."""
    split = knobs()
    key = ("axes", dtype, tuple(shape), tuple(src_strides), tuple(steps), real_src, split)
    plans = _PLANS.of(backend)
    plan = plans.get(key)
    if plan is None or not plan.program.valid_for(backend.context):
        shape = tuple(int(v) for v in shape)
        if not all(0 <= int(a) < len(shape) for a, _, _ in steps) or len(src_strides) != len(shape):
            raise invalid_argument("fft: bad axes or strides")
        if not fits_axes(shape, src_strides, [int(a) for a, _, _ in steps]):
            raise invalid_argument(f"fft: batch dims of {shape} along {steps} do not merge")
        plan = _axes_plan(backend, str(dtype), shape, tuple(int(v) for v in src_strides),
                          tuple((int(a), bool(i), float(c)) for a, i, c in steps), bool(real_src))
        _PLANS.keep(plans, key, plan)
    return plan, split


def _axes_plan(backend: Any, dtype: str, shape: tuple[int, ...], src_strides: tuple[int, ...],
               steps: tuple[tuple[int, bool, float], ...], real_src: bool) -> Plan:
    itemsize, wgsl = storage(backend, dtype)
    planner = Planner(backend, backend.context, dtype, itemsize, wgsl)
    planner.real_src = real_src
    out = _c_strides(shape)
    total = math.prod(shape)
    base, strides = 0, src_strides
    for k, (axis, inverse, scale) in enumerate(steps):
        target = 1 if k == len(steps) - 1 else planner.scratch(total)
        batch = shape[:axis] + shape[axis + 1:]
        sizes, sstr, dstr = merge_batch(batch, strides[:axis] + strides[axis + 1:], out[:axis] + out[axis + 1:])
        if not sizes:
            sizes, sstr, dstr = (1,), (0,), (0,)
        planner.transform(shape[axis], sizes, View(base, 0, strides[axis], sstr), View(target, 0, out[axis], dstr),
                          inverse, scale, top=True)
        base, strides = target, out  # (the later steps read complex intermediates: bases above 2)
    lo, hi = strided_span(list(zip(shape, src_strides)))
    src_item = itemsize // 2 if real_src else itemsize
    return compile_plan(backend, planner, "fft", ((lo * src_item, (hi - lo + 1) * src_item), (0, total * itemsize)))


def _plan_for(backend: Any, plans: dict[tuple[Any, ...], Any], dtype: str, n: int, batch_shape: Sequence[int],
              src_axis: int, src_strides: Sequence[int], dst_axis: int, dst_strides: Sequence[int], inverse: bool,
              scale: float, real_src: bool, split: tuple[bool, ...], keep: int = 0) -> Plan:
    """The plan of a call (its merged batch dims: shared by the calls that merge alike)."""
    storage(backend, dtype)  # invalid argument for another dtype, unsupported without shader-f64
    sizes, sstr, dstr = merge_batch(batch_shape, src_strides, dst_strides)
    if len(sizes) > MAX_BATCH_DIMS - 2:
        raise invalid_argument(f"fft: at most {MAX_BATCH_DIMS - 2} batch dims that do not merge")
    if not sizes:
        sizes, sstr, dstr = (1,), (0,), (0,)
    key = ("merged", dtype, n, sizes, src_axis, sstr, dst_axis, dstr, inverse, scale, real_src, keep, split)
    plan = plans.get(key)
    if plan is None or not plan.program.valid_for(backend.context):
        plan = _make_plan(backend, key[1:-1])
        _PLANS.keep(plans, key, plan)
    return plan
