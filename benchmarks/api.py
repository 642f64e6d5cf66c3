"""The headline cases: user code through the public API (``gt.add``, ``a @ b``, ``gt.sum``, ...).

One row of :data:`OPS` per case: the host inputs, the same work written for gputensor, torch and
cupy (``None``: the framework has no such call, shown as '-'), and a NumPy reference for the
check. Each framework gets the inputs through its own ``asarray`` and calls its public
functions, so what is timed is what a user's program pays: argument checks, dtype resolution,
launch planning, allocation of the result from the memory pool, recording, and the kernel(s).
Every result of a batch is held until the batch's sync (see ``_timing.py``); results larger
than a few MiB cap the calls per batch so that the held results fit in :data:`HELD_BYTES`.

Sizes go from 1K elements to 256 MiB operands (quick: tiny sizes for a smoke run). GB/s counts
the bytes of the inputs read once and of the output written once; TFLOP/s counts ``2mnk``.

Cases whose call reads data back to the host (``x[mask]``: the output size; ``unique_values``;
``float(gt.sum(x))``; ``gt.synchronize()``) are *host-timed*: the wall clock of the batch is the
time; their GPU time is the device's share of it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from ._harness import MiB, Case, Env, NotAvailable, Prepared, assert_close, assert_equal, uniform

#: Most bytes of results one batch holds (the calls per batch are capped to fit).
HELD_BYTES = 4 << 30

Fn = Callable[..., Any]


@dataclasses.dataclass
class Op:
    """One public-API case. ``gt``/``torch``/``cupy`` take the framework's module first, then the
    inputs (in the order of the dict ``inputs`` returns); ``ref`` takes NumPy arrays and returns
    the expected result (None: unchecked). ``tol``: None compares exactly, a float is a relative
    tolerance of ``|ref| + max|ref|``, a callable ``(host, ref) -> tolerance`` anything else."""

    id: str
    label: str
    inputs: Callable[[np.random.Generator], dict[str, np.ndarray]]
    gt: Fn
    torch: Fn | None
    cupy: Fn | None
    ref: Fn | None
    tol: Any = None
    out_bytes: Callable[[dict[str, np.ndarray]], float] | None = None  # default: the first input's
    flops: float = 0.0
    host_timed: bool = False
    max_reps: int | None = None


def _clamp_by_mask(xp: Any, x: Any) -> Any:
    """``x[x > 0.5] = 0.5`` in place (the same work every call: the result is a fixed point)."""
    x[x > 0.5] = 0.5
    return x


def _rows(shape: tuple[int, ...], dtype: Any = np.float32, **extra: Callable[[np.random.Generator], Any]):
    """Inputs factory: ``x`` uniform in [-1, 1) of ``shape``/``dtype``, plus ``extra`` arrays."""

    def make(rng: np.random.Generator) -> dict[str, np.ndarray]:
        out = {"x": uniform(rng, shape, dtype)}
        for k, f in extra.items():
            out[k] = f(rng)
        return out

    return make


def _sum_tol(rtol: float) -> Callable[[dict[str, np.ndarray], np.ndarray], Any]:
    """Tolerance of a sum in another order than NumPy's: ``rtol`` times the summed magnitudes."""

    def tol(host: dict[str, np.ndarray], ref: np.ndarray) -> Any:
        return rtol * (np.abs(ref) + np.abs(host["x"]).astype(np.float64).sum() / max(ref.size, 1)) + 1e-30

    return tol


def _f16_tol(host: dict[str, np.ndarray], ref: np.ndarray) -> Any:
    """float16 results: half an ulp, and float16 subnormals may be flushed (NVIDIA flushes them)."""
    return 1e-3 * np.abs(ref.astype(np.float64)) + 6.2e-5


def _mm_tol(rtol: float) -> Callable[[dict[str, np.ndarray], np.ndarray], Any]:
    def tol(host: dict[str, np.ndarray], ref: np.ndarray) -> Any:
        a, b = host["a"].astype(np.float64), host["b"].astype(np.float64)
        return rtol * (np.abs(a[..., :_MM_ROWS, :]) @ np.abs(b)) + 1e-30

    return tol


_MM_ROWS = 32  # matmul results are checked on their first rows


def _gt_softmax(gt: Any, x: Any) -> Any:
    e = gt.exp(x - gt.max(x, axis=-1, keepdims=True))
    return e / gt.sum(e, axis=-1, keepdims=True)


def _torch_softmax(torch: Any, x: Any) -> Any:
    e = torch.exp(x - torch.amax(x, dim=-1, keepdim=True))
    return e / torch.sum(e, dim=-1, keepdim=True)


def _cupy_softmax(cp: Any, x: Any) -> Any:
    e = cp.exp(x - cp.max(x, axis=-1, keepdims=True))
    return e / cp.sum(e, axis=-1, keepdims=True)


def _np_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _gt_log_softmax(gt: Any, x: Any) -> Any:
    m = gt.max(x, axis=-1, keepdims=True)
    return x - m - gt.log(gt.sum(gt.exp(x - m), axis=-1, keepdims=True))


def _np_log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def _gt_logsumexp(gt: Any, x: Any) -> Any:
    m = gt.max(x, axis=-1, keepdims=True)
    return m + gt.log(gt.sum(gt.exp(x - m), axis=-1, keepdims=True))


def _np_logsumexp(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


_EPS = 1e-5


def _gt_layernorm(gt: Any, x: Any, w: Any, b: Any) -> Any:
    mu = gt.mean(x, axis=-1, keepdims=True)
    d = x - mu
    var = gt.mean(d * d, axis=-1, keepdims=True)
    return d / gt.sqrt(var + _EPS) * w + b


def _torch_layernorm(torch: Any, x: Any, w: Any, b: Any) -> Any:
    mu = torch.mean(x, dim=-1, keepdim=True)
    d = x - mu
    var = torch.mean(d * d, dim=-1, keepdim=True)
    return d / torch.sqrt(var + _EPS) * w + b


def _cupy_layernorm(cp: Any, x: Any, w: Any, b: Any) -> Any:
    mu = cp.mean(x, axis=-1, keepdims=True)
    d = x - mu
    var = cp.mean(d * d, axis=-1, keepdims=True)
    return d / cp.sqrt(var + _EPS) * w + b


def _np_layernorm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    mu = x.mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(axis=-1, keepdims=True) + _EPS) * w + b


_LOOP_STEPS = 10


def _loop(xp: Any, x: Any, w: Any) -> Any:
    """A Python loop of small ops: ``y = tanh(y @ w); y = 0.5 * y + x``, 10 steps on 64x64."""
    y = x
    for _ in range(_LOOP_STEPS):
        y = xp.tanh(y @ w)
        y = 0.5 * y + x
    return y


def _np_loop(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return _loop(np, x.astype(np.float64), w.astype(np.float64))


def _gt_alloc(gt: Any, x: Any) -> None:
    pool = gt.get_default_memory_pool()
    y = gt.empty(x.shape[0] * _ALLOC_FACTOR, dtype=x.dtype)
    del y
    pool.free_all_blocks()


def _torch_alloc(torch: Any, x: Any) -> None:
    y = torch.empty(x.shape[0] * _ALLOC_FACTOR, dtype=x.dtype, device="cuda")
    del y
    torch.cuda.empty_cache()


def _cupy_alloc(cp: Any, x: Any) -> None:
    y = cp.empty(x.shape[0] * _ALLOC_FACTOR, dtype=x.dtype)
    del y
    cp.get_default_memory_pool().free_all_blocks()


_ALLOC_FACTOR = 1024  # the allocation is 1024 times the (small) input


def _ints(n: int, hi: int, dtype: Any = np.int64) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.integers(0, hi, n, dtype=dtype)


def _full_i32(n: int) -> Callable[[np.random.Generator], dict[str, np.ndarray]]:
    info = np.iinfo(np.int32)
    return lambda rng: {"x": rng.integers(info.min, info.max, n, dtype=np.int32, endpoint=True)}


def _torch_dtype(torch: Any, name: str) -> Any:
    return getattr(torch, name)


def ops(quick: bool) -> list[Op]:
    """The public-API cases (quick: the same calls on tiny sizes)."""
    K, M = 1024, 1 << 20
    big = 64 * K if quick else 64 * M            # 256 MiB float32 operands
    mid = 16 * K if quick else 16 * M            # 64 MiB
    rows, cols = (64, 256) if quick else (8192, 4096)  # 2-D reductions: 128 MiB float32
    side = 128 if quick else 4096                # transposed copies
    mm_sizes = (64, 128) if quick else (1024, 2048, 4096)
    batch, bside = (8, 32) if quick else (256, 128)
    sort_n = 16 * K if quick else 16 * M

    out: list[Op] = []
    # -- elementwise, broadcasting, where, astype, transposed copies -------------------------------
    for n in ((K, 64 * K) if quick else (K, M, big)):
        out.append(Op(f"api.add.f32.{_count(n)}", f"gt.add(a, b), {_count(n)} f32",
                      _rows((n,), b=lambda rng, n=n: uniform(rng, n, np.float32)),
                      lambda gt, x, b: gt.add(x, b), lambda torch, x, b: torch.add(x, b),
                      lambda cp, x, b: cp.add(x, b), lambda x, b: x + b))
    out.append(Op(f"api.add_operator.f32.{_count(mid)}", f"a + b, {_count(mid)} f32",
                  _rows((mid,), b=lambda rng: uniform(rng, mid, np.float32)),
                  lambda gt, x, b: x + b, lambda torch, x, b: x + b, lambda cp, x, b: x + b, lambda x, b: x + b))
    out.append(Op(f"api.add.f16.{_count(big)}", f"a + b, {_count(big)} f16",
                  _rows((big,), np.float16, b=lambda rng: uniform(rng, big, np.float16)),
                  lambda gt, x, b: x + b, lambda torch, x, b: x + b, lambda cp, x, b: x + b,
                  lambda x, b: x + b, _f16_tol))
    out.append(Op(f"api.broadcast.f32.{rows}x{cols}", f"x + row, ({rows}, {cols}) + ({cols},) f32",
                  _rows((rows, cols), r=lambda rng: uniform(rng, cols, np.float32)),
                  lambda gt, x, r: x + r, lambda torch, x, r: x + r, lambda cp, x, r: x + r, lambda x, r: x + r))
    out.append(Op(f"api.where.f32.{_count(mid)}", f"gt.where(c, a, b), {_count(mid)} f32",
                  lambda rng: {"c": rng.random(mid) < 0.5, "x": uniform(rng, mid, np.float32),
                               "b": uniform(rng, mid, np.float32)},
                  lambda gt, c, x, b: gt.where(c, x, b), lambda torch, c, x, b: torch.where(c, x, b),
                  lambda cp, c, x, b: cp.where(c, x, b), lambda c, x, b: np.where(c, x, b),
                  out_bytes=lambda h: h["x"].nbytes))
    out.append(Op(f"api.astype.f32_f16.{_count(mid)}", f"gt.astype(x, float16), {_count(mid)}",
                  _rows((mid,)), lambda gt, x: gt.astype(x, gt.float16),
                  lambda torch, x: x.to(torch.float16), lambda cp, x: x.astype(cp.float16),
                  lambda x: x.astype(np.float16), _f16_tol, out_bytes=lambda h: h["x"].nbytes / 2))
    for dt, short in ((np.float32, "f32"), (np.float16, "f16")):
        out.append(Op(f"api.transpose.{short}.{side}", f"gt.asarray(x.T, copy=True), {side}² {short}",
                      _rows((side, side), dt), lambda gt, x: gt.asarray(x.T, copy=True),
                      lambda torch, x: x.t().contiguous(), lambda cp, x: cp.ascontiguousarray(x.T),
                      lambda x: np.ascontiguousarray(x.T)))
    # -- reductions ---------------------------------------------------------------------------------
    shape2 = (rows, cols)
    out.append(Op("api.sum.f32.1K", "gt.sum(x), 1K f32", _rows((K,)), lambda gt, x: gt.sum(x),
                  lambda torch, x: torch.sum(x), lambda cp, x: cp.sum(x),
                  lambda x: x.astype(np.float64).sum(), _sum_tol(1e-5), out_bytes=lambda h: 4))
    out.append(Op(f"api.sum.f32.{rows}x{cols}", f"gt.sum(x), ({rows}, {cols}) f32", _rows(shape2),
                  lambda gt, x: gt.sum(x), lambda torch, x: torch.sum(x), lambda cp, x: cp.sum(x),
                  lambda x: x.astype(np.float64).sum(), _sum_tol(1e-5), out_bytes=lambda h: 4))
    out.append(Op(f"api.sum.f32.axis0", f"gt.sum(x, axis=0), ({rows}, {cols}) f32", _rows(shape2),
                  lambda gt, x: gt.sum(x, axis=0), lambda torch, x: torch.sum(x, dim=0),
                  lambda cp, x: cp.sum(x, axis=0), lambda x: x.astype(np.float64).sum(axis=0),
                  lambda h, ref: 1e-5 * np.abs(h["x"]).astype(np.float64).sum(axis=0) + 1e-30,
                  out_bytes=lambda h: 4 * cols))
    out.append(Op("api.max.f32.last", f"gt.max(x, axis=-1, keepdims=True), ({rows}, {cols}) f32",
                  _rows(shape2), lambda gt, x: gt.max(x, axis=-1, keepdims=True),
                  lambda torch, x: torch.amax(x, dim=-1, keepdim=True),
                  lambda cp, x: cp.max(x, axis=-1, keepdims=True), lambda x: x.max(axis=-1, keepdims=True),
                  out_bytes=lambda h: 4 * rows))
    out.append(Op("api.max.f32.axis0", f"gt.max(x, axis=0), ({rows}, {cols}) f32", _rows(shape2),
                  lambda gt, x: gt.max(x, axis=0), lambda torch, x: torch.amax(x, dim=0),
                  lambda cp, x: cp.max(x, axis=0), lambda x: x.max(axis=0), out_bytes=lambda h: 4 * cols))
    out.append(Op("api.argmax.f32.last", f"gt.argmax(x, axis=-1), ({rows}, {cols}) f32", _rows(shape2),
                  lambda gt, x: gt.argmax(x, axis=-1), lambda torch, x: torch.argmax(x, dim=-1),
                  lambda cp, x: cp.argmax(x, axis=-1), lambda x: x.argmax(axis=-1), out_bytes=lambda h: 8 * rows))
    for name, tfn, cfn, nfn in (
            ("mean", lambda torch, x: torch.mean(x, dim=-1), lambda cp, x: cp.mean(x, axis=-1),
             lambda x: x.astype(np.float64).mean(axis=-1)),
            ("var", lambda torch, x: torch.var(x, dim=-1, correction=0), lambda cp, x: cp.var(x, axis=-1),
             lambda x: x.astype(np.float64).var(axis=-1)),
            ("std", lambda torch, x: torch.std(x, dim=-1, correction=0), lambda cp, x: cp.std(x, axis=-1),
             lambda x: x.astype(np.float64).std(axis=-1))):
        out.append(Op(f"api.{name}.f32.last", f"gt.{name}(x, axis=-1), ({rows}, {cols}) f32", _rows(shape2),
                      lambda gt, x, name=name: getattr(gt, name)(x, axis=-1), tfn, cfn, nfn, 1e-5,
                      out_bytes=lambda h: 4 * rows))
    # -- row patterns written with gt ops (torch eager runs the same user code; the *_builtin
    # cases compare with torch's own fused kernels) -----------------------------------------------
    ln_inputs = _rows(shape2, w=lambda rng: uniform(rng, cols, np.float32, 0.5, 1.5),
                      b=lambda rng: uniform(rng, cols, np.float32))
    out.append(Op("api.softmax.f32", f"softmax with gt.max/exp/sum and /, ({rows}, {cols}) f32", _rows(shape2),
                  _gt_softmax, _torch_softmax, _cupy_softmax, _np_softmax, 1e-5))
    out.append(Op("api.softmax_builtin.f32", "the same gt code against torch.softmax (fused)", _rows(shape2),
                  _gt_softmax, lambda torch, x: torch.softmax(x, dim=-1), None, _np_softmax, 1e-5))
    out.append(Op("api.log_softmax_builtin.f32", "log-softmax with gt ops against torch.log_softmax (fused)",
                  _rows(shape2), _gt_log_softmax, lambda torch, x: torch.log_softmax(x, dim=-1), None,
                  _np_log_softmax, 1e-5))
    out.append(Op("api.logsumexp_builtin.f32", "logsumexp with gt ops (keepdims) against torch.logsumexp",
                  _rows(shape2), _gt_logsumexp, lambda torch, x: torch.logsumexp(x, dim=-1, keepdim=True), None,
                  _np_logsumexp, 1e-5, out_bytes=lambda h: 4 * rows))
    out.append(Op("api.layernorm.f32", f"layer norm with gt.mean/sqrt, ({rows}, {cols}) f32", ln_inputs,
                  _gt_layernorm, _torch_layernorm, _cupy_layernorm, _np_layernorm, 1e-4))
    out.append(Op("api.layernorm_builtin.f32", "the same gt code against torch layer_norm (fused)", ln_inputs,
                  _gt_layernorm,
                  lambda torch, x, w, b: torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, _EPS),
                  None, _np_layernorm, 1e-4))
    # -- matmul ---------------------------------------------------------------------------------
    for n in mm_sizes:
        out.append(_matmul(f"api.matmul.f32.{n}", f"a @ b, {n}² f32", (n, n), (n, n), np.float32, 4e-6))
    out.append(_matmul(f"api.matmul.f32.batched{batch}x{bside}", f"a @ b, {batch} x {bside}² f32",
                       (batch, bside, bside), (batch, bside, bside), np.float32, 4e-6))
    n64 = mm_sizes[0]
    if _device_has("float64"):  # shader-f64
        out.append(_matmul(f"api.matmul.f64.{n64}", f"a @ b, {n64}² f64", (n64, n64), (n64, n64), np.float64,
                           1e-14))
    out.append(Op("api.loop.small", f"Python loop: {_LOOP_STEPS} x (tanh(y @ w), 0.5*y + x), 64x64 f32",
                  lambda rng: {"x": uniform(rng, (64, 64), np.float32),
                               "w": uniform(rng, (64, 64), np.float32, -0.2, 0.2)},
                  _loop, _loop, _loop, _np_loop, 1e-4, flops=_LOOP_STEPS * 2 * 64**3))
    # -- indexing, gathers, joins ---------------------------------------------------------------
    take_n = mid // 4
    out.append(Op(f"api.take.f32.{_count(take_n)}of{_count(mid)}", f"gt.take(x, idx), {_count(take_n)} of "
                  f"{_count(mid)} f32", _rows((mid,), idx=_ints(take_n, mid)),
                  lambda gt, x, idx: gt.take(x, idx), lambda torch, x, idx: x[idx],
                  lambda cp, x, idx: cp.take(x, idx), lambda x, idx: np.take(x, idx),
                  out_bytes=lambda h: 4 * take_n))
    out.append(Op(f"api.mask.f32.{_count(mid)}", f"x[x > 0], {_count(mid)} f32", _rows((mid,)),
                  lambda gt, x: x[x > 0], lambda torch, x: x[x > 0], lambda cp, x: x[x > 0],
                  lambda x: x[x > 0], host_timed=True, out_bytes=lambda h: h["x"].nbytes / 2))
    out.append(Op(f"api.nonzero.f32.{_count(mid)}", f"gt.nonzero(x > 0), {_count(mid)} f32", _rows((mid,)),
                  lambda gt, x: gt.nonzero(x > 0)[0], lambda torch, x: torch.nonzero(x > 0, as_tuple=True)[0],
                  lambda cp, x: cp.nonzero(x > 0)[0], lambda x: np.nonzero(x > 0)[0], host_timed=True,
                  out_bytes=lambda h: h["x"].nbytes))
    out.append(Op(f"api.mask_assign.f32.{_count(mid)}", f"x[x > 0.5] = 0.5 (in place), {_count(mid)} f32",
                  _rows((mid,)), _clamp_by_mask, _clamp_by_mask, _clamp_by_mask, lambda x: np.minimum(x, 0.5),
                  out_bytes=lambda h: 2 * h["x"].nbytes))
    out.append(Op(f"api.concat.f32.{_count(mid)}", f"gt.concat([x, x]), {_count(mid)} f32", _rows((mid,)),
                  lambda gt, x: gt.concat([x, x]), lambda torch, x: torch.cat([x, x]),
                  lambda cp, x: cp.concatenate([x, x]), lambda x: np.concatenate([x, x]),
                  out_bytes=lambda h: 2 * h["x"].nbytes))
    # -- sorting, scans, sets -------------------------------------------------------------------
    for dt, short, inputs in (("float32", "f32", _rows((sort_n,))), ("int32", "i32", _full_i32(sort_n))):
        out.append(Op(f"api.sort.{short}.{_count(sort_n)}", f"gt.sort(x), {_count(sort_n)} {short}", inputs,
                      lambda gt, x: gt.sort(x), lambda torch, x: torch.sort(x).values, lambda cp, x: cp.sort(x),
                      np.sort))
        out.append(Op(f"api.argsort.{short}.{_count(sort_n)}", f"gt.argsort(x, stable=True), {_count(sort_n)} "
                      f"{short}", inputs, lambda gt, x: gt.argsort(x, stable=True),
                      lambda torch, x: torch.argsort(x, stable=True), lambda cp, x: cp.argsort(x),
                      lambda x: np.argsort(x, kind="stable"), out_bytes=lambda h: 2 * h["x"].nbytes))
    out.append(Op(f"api.cumulative_sum.f32.{_count(big)}", f"gt.cumulative_sum(x), {_count(big)} f32",
                  _rows((big,), np.float32), lambda gt, x: gt.cumulative_sum(x),
                  lambda torch, x: torch.cumsum(x, 0), lambda cp, x: cp.cumsum(x),
                  lambda x: np.cumsum(x.astype(np.float64)),
                  lambda h, ref: 1e-5 * np.cumsum(np.abs(h["x"]).astype(np.float64)) + 1e-5))
    out.append(Op(f"api.unique_values.i32.{_count(sort_n)}", f"gt.unique_values(x), {_count(sort_n)} i32 in "
                  f"[0, {_count(sort_n // 4)})", lambda rng: {"x": rng.integers(0, sort_n // 4, sort_n, dtype=np.int32)},
                  lambda gt, x: gt.unique_values(x), lambda torch, x: torch.unique(x, sorted=True),
                  lambda cp, x: cp.unique(x), np.unique, host_timed=True))
    # -- host-bound: round trip, idle sync, fresh allocation -------------------------------------
    out.append(Op("api.roundtrip.sum16", "float(gt.sum(x)), 16 f32 (a small op and its round trip)",
                  _rows((16,)), lambda gt, x: float(gt.sum(x)), lambda torch, x: float(torch.sum(x)),
                  lambda cp, x: float(cp.sum(x)), lambda x: x.astype(np.float64).sum(), _sum_tol(1e-5),
                  host_timed=True, out_bytes=lambda h: 4))
    out.append(Op("api.synchronize.idle", "gt.synchronize() with nothing pending", _rows((16,)),
                  lambda gt, x: gt.synchronize(), lambda torch, x: torch.cuda.synchronize(),
                  lambda cp, x: cp.cuda.Device().synchronize(), None, host_timed=True, out_bytes=lambda h: 0))
    alloc_n = (16 * K if quick else 64 * M) // _ALLOC_FACTOR
    out.append(Op(f"api.alloc.fresh.{_bytes(4 * alloc_n * _ALLOC_FACTOR)}",
                  f"a fresh {_bytes(4 * alloc_n * _ALLOC_FACTOR)} empty() and its release to the device "
                  "(pool emptied every call)", _rows((alloc_n,)), _gt_alloc, _torch_alloc, _cupy_alloc, None,
                  host_timed=True, out_bytes=lambda h: 4 * alloc_n * _ALLOC_FACTOR, max_reps=20))
    return out


def _count(n: int) -> str:
    """``1024`` -> ``'1K'``, ``16 << 20`` -> ``'16M'``."""
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


def _bytes(n: int) -> str:
    return _count(n) + "iB" if n >= 1024 else f"{n}B"


def _matmul(id_: str, label: str, sa: tuple[int, ...], sb: tuple[int, ...], dtype: Any, rtol: float) -> Op:
    m, k, n = sa[-2], sa[-1], sb[-1]
    batch = int(np.prod(sa[:-2])) if len(sa) > 2 else 1

    def inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"a": uniform(rng, sa, dtype), "b": uniform(rng, sb, dtype)}

    def ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a[..., :_MM_ROWS, :].astype(np.float64) @ b.astype(np.float64)

    return Op(id_, label, inputs, lambda gt, a, b: a @ b, lambda torch, a, b: a @ b, lambda cp, a, b: a @ b,
              ref, _mm_tol(rtol * float(np.sqrt(k))), out_bytes=lambda h: h["a"].itemsize * batch * m * n,
              flops=2.0 * batch * m * n * k)


class ApiCase(Case):
    """One :class:`Op` as a harness case."""

    path = "api"

    def __init__(self, op: Op) -> None:
        self.op = op
        self.id = op.id
        self.label = op.label
        self.unit = "TFLOP/s" if op.flops else "GB/s"
        self.bound = "host" if op.host_timed else ("compute" if op.flops and op.id.startswith("api.matmul") else
                                                   "memory")
        self.flops = float(op.flops)
        self.max_reps = op.max_reps
        self._ref: tuple[dict[str, np.ndarray], np.ndarray] | None = None

    def host(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        host = self.op.inputs(rng)
        ins = float(sum(v.nbytes for v in host.values()))
        first = next(iter(host.values()))
        out = float(self.op.out_bytes(host)) if self.op.out_bytes else float(first.nbytes)
        self.bytes = ins + out or 1.0
        self.working_set = int(ins + out)
        if out > 4 * MiB and self.max_reps is None:
            self.max_reps = max(2, int(HELD_BYTES // out))
        return host

    def check(self, host: dict[str, np.ndarray], got: np.ndarray) -> None:
        if self.op.ref is None:
            return
        if self._ref is None or self._ref[0] is not host:  # one reference per case, for every framework
            self._ref = (host, np.asarray(self.op.ref(*host.values())))
        ref = self._ref[1]
        got = np.asarray(got)
        if self.op.id.startswith("api.matmul"):
            got = got[..., :_MM_ROWS, :]
        if self.op.tol is None:
            assert_equal(got.astype(ref.dtype, copy=False) if got.dtype != ref.dtype else got, ref, self.id)
            return
        if callable(self.op.tol):
            tol = self.op.tol(host, ref)
        else:
            tol = self.op.tol * (np.abs(ref) + np.abs(ref).max(initial=0.0)) + 1e-30
        assert_close(got, ref, tol, self.id)

    def release(self) -> None:
        self._ref = None

    def _prepare(self, env: Env, fn: Fn | None, module: Any, to_device: Callable[[np.ndarray], Any],
                 to_host: Callable[[Any], np.ndarray], host: dict[str, np.ndarray]) -> Prepared:
        if fn is None:
            raise NotAvailable("no such call")
        sets = [[to_device(v) for v in host.values()]
                for _ in range(1 if self.op.host_timed else env.sets(self.working_set))]

        def run(i: int) -> Any:
            return fn(module, *sets[i % len(sets)])

        def result() -> np.ndarray:
            got = fn(module, *sets[0])
            return np.asarray(got) if got is None or isinstance(got, (int, float)) else to_host(got)

        return Prepared(run, result if self.op.ref is not None else None, host_timed=self.op.host_timed)

    def gputensor(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        import gputensor as gt

        return self._prepare(env, self.op.gt, gt, gt.asarray, gt.asnumpy, host)

    def torch(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        return self._prepare(env, self.op.torch, env.torch, env.to_torch, lambda t: t.cpu().numpy(), host)

    def cupy(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        cp = env.cupy
        return self._prepare(env, self.op.cupy, cp, env.to_cupy, cp.asnumpy, host)


def _device_has(dtype: str) -> bool:
    """Whether gputensor's device has ``dtype`` (float64 needs shader-f64)."""
    import gputensor

    return dtype in gputensor.__array_namespace_info__().dtypes()


def cases(quick: bool) -> list[Case]:
    """The public-API cases as harness cases."""
    return [ApiCase(op) for op in ops(quick)]


__all__ = ["ApiCase", "Op", "cases", "ops"]
