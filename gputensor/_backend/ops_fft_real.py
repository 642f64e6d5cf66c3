"""The real-transform steps around a half-length complex DFT: a real DFT of even length
n = 2h is a complex DFT of length h of the samples read as h complex values z[j] = x[2j] +
i x[2j+1] (a free view of contiguous real data), then :func:`rfft_post` forms the h + 1
values X[0..h]; the inverse is :func:`irfft_pre` (the h values whose inverse complex DFT is
the real result read as pairs) followed by the inverse complex DFT of length h.

Both kernels (``_wgsl/fft_real_post.wgsl``, ``_wgsl/fft_real_pre.wgsl``) take contiguous rows
(a batch of ``rows``) and one invocation per pair of outputs (k, h - k), k = 0..h/2, with the
twiddles exp(-2 pi i k / n) as products of two entries of a two-level table (about sqrt(n)
entries, so it stays in cache) computed in float64 on the host once per (n, dtype)
and backend, uploaded and kept in a ``PlanCache`` (its allocation is released when the entry
is dropped). A scale (the norm) and a conjugation (hfft / ihfft) are folded into the kernels.
A call is planned once per (kernel, dtype, n, rows, scale, conjugation) as a
``launch.LaunchProgram`` and replayed for new pointers. No wgpu here.
"""

from __future__ import annotations

import struct
import weakref
from typing import Any

import numpy as np

from .errors import invalid_argument
from .launch import LaunchProgram, Region
from .plan_cache import PlanCache
from .validate import check_dtype, check_int, check_scalar

__all__ = ["rfft_post", "irfft_pre", "frequencies", "twiddle_split", "twiddles"]

_COMPLEX = {"complex64": ("float32", np.complex64), "complex128": ("float64", np.complex128)}
_WG = 256
#: Parameter structs: the scale, then the u32 words (32 bytes either way).
_PARAMS = {"f32": struct.Struct("<f9I"), "f64": struct.Struct("<d8I")}
_FREQ_PARAMS = {"f32": struct.Struct("<f5I"), "f64": struct.Struct("<d4I")}
_PAD = {"f32": "pad: u32,", "f64": ""}
_PAD_WORDS = {"f32": (0,), "f64": ()}

_TABLES = PlanCache(32)


def _release(backend_ref: "weakref.ref[Any]", ptr: int) -> None:
    backend = backend_ref()
    if backend is not None:
        try:
            backend.free(ptr)
        except Exception:  # noqa: BLE001 - a retired or closing backend: nothing to give back
            pass


class _Table:
    """A device copy of a twiddle table; its allocation is freed when the object goes."""

    __slots__ = ("ptr", "nbytes", "__weakref__")

    def __init__(self, backend: Any, values: np.ndarray) -> None:
        self.ptr = backend.alloc(values.nbytes, zero=False)
        self.nbytes = values.nbytes
        weakref.finalize(self, _release, weakref.ref(backend), self.ptr)
        backend.copy_htod(self.ptr, values)


def twiddle_split(n: int) -> tuple[int, int]:
    """(shift, coarse entries) of the two-level twiddle table of length n: k = 0..n/4 is
    (k >> shift, k & (2^shift - 1)), about sqrt(n/4) entries each."""
    count = n // 4 + 1
    shift = max(0, (count - 1).bit_length() + 1) // 2
    return shift, -(-count // (1 << shift))


def twiddles(n: int, dtype: str) -> np.ndarray:
    """The two-level table of exp(-2 pi i k / n), k = 0..n/4, as ``dtype``: the fine entries
    w^j (j < 2^shift), then the coarse ones w^(i 2^shift) (``twiddle_split``), computed in
    float64."""
    shift, coarse = twiddle_split(n)
    k = np.concatenate([np.arange(1 << shift, dtype=np.float64), np.arange(coarse, dtype=np.float64) * (1 << shift)])
    return np.exp(-2j * np.pi * k / n).astype(_COMPLEX[dtype][1])


def _table(backend: Any, n: int, dtype: str) -> _Table:
    plans = _TABLES.of(backend)
    key = (n, dtype)
    table = plans.get(key)
    if table is None:
        table = _Table(backend, twiddles(n, dtype))
        _TABLES.keep(plans, key, table)
    return table


class _Plan:
    """A planned call of one of the two kernels: its program (operands 0 the source, 1 the
    destination, 2 the twiddle table), the table it binds (kept alive with the plan), the
    bytes each operand spans and the complex item size."""

    __slots__ = ("program", "table", "spans", "itemsize")

    def __init__(self, program: LaunchProgram, table: _Table, spans: tuple[int, int], itemsize: int) -> None:
        self.program = program
        self.table = table
        self.spans = spans
        self.itemsize = itemsize


_PLANS = PlanCache(128)


def _no_placeholder(backend: Any, nbytes: int, *bindings: Any) -> Any:  # pragma: no cover
    raise AssertionError("the real-transform kernels bind no placeholders")


def _plan(backend: Any, key: tuple[Any, ...]) -> _Plan:
    kernel, dtype, n, rows, scale, conj = key
    check_dtype(backend, "dtype", dtype, _COMPLEX)
    itemsize, wgsl = backend.float_dtype(_COMPLEX[dtype][0])
    itemsize *= 2
    h = n // 2
    pairs = h // 2 + 1
    src_len, dst_len = (h, h + 1) if kernel == "fft_real_post" else (h + 1, h)
    table = _table(backend, n, dtype)
    ctx = backend.context
    defines = {"T": wgsl, "PAD": _PAD[wgsl]}
    pipe = ctx.pipeline(kernel, 3, defines)
    pad = _PAD_WORDS[wgsl]
    shift, _ = twiddle_split(n)
    words = (scale, *pad, h, pairs, rows, int(conj), 0, 0, shift, 1 << shift)
    first = 5 + len(pad)  # the words of the source's and the destination's first element
    spans = (rows * src_len * itemsize, rows * dst_len * itemsize)
    regions = (Region(0, 0, spans[0], itemsize, 0, first, 0), Region(1, 0, spans[1], itemsize, 0, first + 1, 0),
               Region(2, 0, table.nbytes, itemsize, 0, 0, 0))
    grid = ctx.fold_grid(-(-pairs * rows // _WG))
    program = LaunchProgram.compile(kernel, _PARAMS[wgsl], ctx, [(pipe, defines, words, grid, regions)], ())
    return _Plan(program, table, spans, itemsize)


def _run(backend: Any, kernel: str, dtype: str, n: int, rows: int, src: int, dst: int, scale: float,
         conj: bool) -> None:
    """Check the arguments, plan the call once per (kernel, dtype, n, rows, scale, conj) and
    replay its program for ``src`` and ``dst``."""
    n = check_int("n", n, 2)
    rows = check_int("rows", rows, 1)
    scale = check_scalar("scale", scale)
    if n % 2:
        raise invalid_argument(f"{kernel}: n must be even, got {n}")
    key = (kernel, dtype, n, rows, scale, bool(conj))
    plans = _PLANS.of(backend)
    plan = plans.get(key)
    if plan is None or not plan.program.valid_for(backend.context):
        plan = _plan(backend, key)
        _PLANS.keep(plans, key, plan)
    table = plan.table.ptr
    bases = []
    for ptr, nbytes in ((src, plan.spans[0]), (dst, plan.spans[1]), (table, plan.table.nbytes)):
        alloc, offset = backend.resolve(ptr, nbytes)  # BackendError (invalid argument) out of range
        if offset % plan.itemsize:
            raise invalid_argument(f"{kernel}: pointer offset {offset} is not a multiple of {plan.itemsize}")
        bases.append((alloc.buffer, alloc.buffer.size, alloc.nbytes, offset, ptr))
    ctx = backend.context
    if ctx.__dict__.get("dispatch") is not None:  # a wrapped dispatch (host-time profiling, a spy)
        plan.program.dispatch(backend, ctx, (src, dst, table))
    else:
        plan.program.run(backend, ctx, bases, _no_placeholder)


def rfft_post(backend: Any, dtype: str, n: int, rows: int, z: int, x: int, scale: float = 1.0,
              conj: bool = False) -> None:
    """X := the h + 1 = n/2 + 1 values of the length-n DFT of each real row whose samples read
    as complex values have the length-h DFT Z (``rows`` contiguous rows of h ``dtype`` values
    at ``z``; X: ``rows`` contiguous rows of h + 1 at ``x``, another allocation), times
    ``scale``, conjugated with ``conj``. Raises BackendError (invalid argument) for a bad
    dtype, an odd or too small ``n``, rows < 1 or pointers out of range; (unsupported) for
    complex128 without ``shader-f64``."""
    _run(backend, "fft_real_post", dtype, n, rows, z, x, scale, conj)


def irfft_pre(backend: Any, dtype: str, n: int, rows: int, x: int, z: int, scale: float = 1.0,
              conj: bool = False) -> None:
    """Z := the h = n/2 values per row whose unnormalized length-h inverse DFT is ``scale`` *
    n * (y[2j] + i y[2j+1]), y the length-n real inverse DFT of the Hermitian spectrum whose
    first h + 1 values are the row of X (conjugated first with ``conj``; the imaginary parts of
    X[0] and X[h] are ignored). X: ``rows`` contiguous rows of h + 1 ``dtype`` values at ``x``;
    Z: ``rows`` contiguous rows of h at ``z`` (another allocation). BackendError as
    :func:`rfft_post`."""
    _run(backend, "fft_real_pre", dtype, n, rows, x, z, scale, conj)


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
    itemsize, wgsl = backend.float_dtype(dtype)
    win = backend.window(out, count * itemsize, itemsize)
    params = _FREQ_PARAMS[wgsl].pack(scale, *_PAD_WORDS[wgsl], count, min(cut, count), n, win.first)
    ctx = backend.context
    ctx.dispatch("fft_real_freq", params, [win.binding], ctx.fold_grid(-(-count // _WG)),
                 {"T": wgsl, "PAD": _PAD[wgsl]})
