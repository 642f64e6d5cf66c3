"""Real DFTs of even length n = 2h by the half-length complex trick, and the sample frequencies.

:func:`real` plans a batch of real transforms once per call structure (dtype, n, rows,
direction, scale, conjugation) as one ``launch.LaunchProgram`` and replays it for new
pointers. Forward: the n real samples of a row, read as h complex values z[j] = x[2j] + i
x[2j+1] (contiguous real data), take a complex DFT of length h; the h + 1 values X[0..h] are
formed from it. Inverse: the h values whose inverse complex DFT of length h is the real result
read as pairs are formed from X[0..h], then transformed. Where a workgroup holds length h
(``fft_lengths.group_shape``) this is one dispatch of ``_wgsl/fft_stockham.wgsl`` with the forming
step fused into its store (forward) or load (inverse); where it takes a four-step
decomposition, the forming step is fused into the store of its last pass (forward) or the load
of its first (inverse) (``fft_planner.Planner.four_step_real``; knob ``fft_real_fused``);
otherwise the complex DFT of ``fft_planner`` (four-step, Bluestein) into a scratch array and ``_wgsl/fft_real_post.wgsl`` after
it (``fft_real_pre.wgsl`` before it, inverse). Twiddles and the scale are entries of the plan's
table (float64 on the host). :func:`frequencies` writes ``fftfreq`` / ``rfftfreq``. No wgpu here.
"""

from __future__ import annotations

import struct
from typing import Any

from .errors import invalid_argument
from .fft_lengths import knobs, storage
from .fft_planner import Planner, View
from .fft_program import KeptPlan, compile_plan, no_placeholder
from .launch import LaunchProgram, Region
from .plan_cache import PlanCache
from .validate import check_dtype, check_int, check_scalar

__all__ = ["real", "planned_real", "frequencies"]

_WG = 256
_FREQ_PARAMS = {"f32": struct.Struct("<f5I"), "f64": struct.Struct("<d4I")}
_PAD = {"f32": "pad: u32,", "f64": ""}
_PAD_WORDS = {"f32": (0,), "f64": ()}

_PLANS = PlanCache(128)


def _plan(backend: Any, key: tuple[Any, ...]) -> Any:
    dtype, n, rows, inverse, scale, conj = key
    itemsize, wgsl = storage(backend, dtype)
    planner = Planner(backend, backend.context, dtype, itemsize, wgsl)
    h = n // 2
    kernel = "fft_irfft" if inverse else "fft_rfft"
    if planner.stockham_real(h, rows, 0, 1, inverse, scale, conj):
        kernel = "fft_stockham"  # (one dispatch: its kernel's name, which a wrapped dispatch looks up)
    elif not planner.four_step_real(h, rows, 0, 1, scale, conj, inverse):
        z = planner.scratch(rows * h)
        rows_view = (h,)
        if inverse:
            planner.real_step("fft_real_pre", n, rows, 0, z, scale, conj)
            planner.transform(h, (rows,), View(z, 0, 1, rows_view), View(1, 0, 1, rows_view),
                              True, 1.0)
        else:
            planner.transform(h, (rows,), View(0, 0, 1, rows_view), View(z, 0, 1, rows_view),
                              False, 1.0)
            planner.real_step("fft_real_post", n, rows, z, 1, scale, conj)
    src_len, dst_len = (h + 1, h) if inverse else (h, h + 1)
    spans = ((0, rows * src_len * itemsize), (0, rows * dst_len * itemsize))
    return compile_plan(backend, planner, kernel, spans, (itemsize, itemsize),
                                wrappable=kernel == "fft_stockham")


def real(backend: Any, dtype: str, n: int, rows: int, src: int, dst: int, *, inverse: bool,
         scale: float = 1.0, conj: bool = False) -> None:
    """Record ``rows`` real DFTs of even length ``n`` (``dtype``: the complex dtype, complex64
    or complex128). Forward: ``src`` holds ``rows`` contiguous rows of n reals (n / 2 complex
    values), ``dst`` gets rows of n / 2 + 1 complex values, ``scale`` times the DFT, conjugated
    with ``conj``. ``inverse``: ``src`` holds rows of n / 2 + 1 values of Hermitian spectra
    (conjugated first with ``conj``; the imaginary parts of X[0] and X[n/2] ignored), ``dst``
    gets rows of n reals, ``scale`` times the unnormalised inverse. ``src`` and ``dst`` must not
    overlap. Raises BackendError (invalid argument) for a bad dtype, an odd ``n`` or one below
    2, rows < 1 or pointers out of range or misaligned; (unsupported) for complex128 without
    ``shader-f64``."""
    _real_plan(backend, dtype, n, rows, inverse, scale, conj)[0].launch(backend, src, dst)


def planned_real(backend: Any, dtype: str, n: int, rows: int, *, inverse: bool, scale: float = 1.0,
                 conj: bool = False) -> KeptPlan:
    """The plan of ``real`` with these arguments (made now where there is none) as an
    ``KeptPlan``, for a caller that replays it: ``launch(backend, src, dst)`` records
    that call. Raises as :func:`real` (before anything is recorded)."""
    return KeptPlan(backend, *_real_plan(backend, dtype, n, rows, inverse, scale, conj))


def _real_plan(backend: Any, dtype: str, n: int, rows: int, inverse: bool, scale: float,
               conj: bool) -> tuple[Any, tuple[Any, ...]]:
    """(plan of a ``real`` call, the knobs it was made under)."""
    knob_values = knobs()
    key = (dtype, n, rows, inverse, scale, conj, knob_values)
    plans = _PLANS.of(backend)
    plan = plans.get(key)
    if plan is None or not plan.program.valid_for(backend.context):
        n = check_int("n", n, 2)
        rows = check_int("rows", rows, 1)
        scale = check_scalar("scale", scale)
        if n % 2:
            raise invalid_argument(f"fft: a real transform needs an even length, not {n}")
        plan = _plan(backend, (str(dtype), n, rows, bool(inverse), float(scale), bool(conj)))
        _PLANS.keep(plans, key, plan)
    return plan, knob_values


def frequencies(backend: Any, dtype: str, count: int, n: int, cut: int, scale: float, out: int) -> None:
    """out[i] := i * scale for i < ``cut``, (i - n) * scale for cut <= i < ``count`` (the
    ``count`` contiguous float32 / float64 values at ``out``): the sample frequencies of
    ``fftfreq`` (count n, cut (n + 1) // 2) and ``rfftfreq`` (count = cut = n // 2 + 1).
    BackendError (invalid argument) for a bad dtype, sizes or pointer; (unsupported) for
    float64 without ``shader-f64``."""
    check_dtype(backend, "dtype", dtype, ("float32", "float64"))
    count = check_int("count", count, 1)
    n = check_int("n", n, count)
    cut = check_int("cut", cut)
    scale = check_scalar("scale", scale)
    key = ("freq", str(dtype), count, n, cut, scale)
    plans = _PLANS.of(backend)
    program = plans.get(key)
    ctx = backend.context
    if program is None or not program.valid_for(ctx):
        program = _frequencies_program(backend, ctx, dtype, count, n, cut, scale)
        _PLANS.keep(plans, key, program)
    itemsize = program.slots[0].itemsize
    alloc, off = backend.resolve(out, program.slots[0].nbytes)
    if off % itemsize:
        raise invalid_argument(f"fft: pointers must be multiples of the item size {itemsize}")
    buffer = alloc.buffer
    program.run(backend, ctx, [(buffer, buffer.size, alloc.nbytes, off, out, alloc.whole)], no_placeholder)


def _frequencies_program(backend: Any, ctx: Any, dtype: str, count: int, n: int, cut: int,
                         scale: float) -> LaunchProgram:
    """The one dispatch of ``_wgsl/fft_real_freq.wgsl`` writing ``count`` values to operand 0."""
    itemsize, wgsl = backend.float_dtype(dtype)
    packer = _FREQ_PARAMS[wgsl]
    words = (scale, *_PAD_WORDS[wgsl], count, min(cut, count), n, 0)
    defines = {"T": wgsl, "PAD": _PAD[wgsl]}
    region = Region(0, 0, count * itemsize, itemsize, 0, len(words) - 1, 0)  # (the last word: ``first``)
    record = (ctx.pipeline("fft_real_freq", 1, defines), defines, words, ctx.fold_grid(-(-count // _WG)), (region,))
    return LaunchProgram.compile("fft_real_freq", packer, ctx, [record], ())
