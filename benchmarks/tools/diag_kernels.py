"""Diagnostic (not a benchmark): GPU time per kernel of the cases still short of their targets.

``python3 -m benchmarks.tools.diag_kernels [--small]``: for a full and a last-axis reduction over
256 MiB, the two conv2d layers, float32 attention (d64/d128, seq 4096) and the skinny gemm, one
profiled call (``gt.profile()``: timestamp queries, one pass per dispatch) prints each kernel's
GPU time, beside the wall time per call of a batch of calls and torch's CUDA-event time for the
same operation (when torch has CUDA). Tells kernel time from gaps and host time.

Its helpers (``wall_us``, ``torch_us``, ``gpu_us``, ``load_torch``, ``upload``, ``run_case``)
are shared with the other diagnostics (benchmarks.tools.diag_reduce).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _timing
from .._timing import TorchTimer

SMALL = "--small" in sys.argv


def wall_us(fn: Callable[[], object], sync: Callable[[], object], reps: int, best: int = 1) -> float:
    """Wall time per call in microseconds of ``reps`` calls of ``fn`` followed by ``sync()``
    (after one warm-up call); the best of ``best`` such batches (``_timing.time_calls``)."""
    return _timing.time_calls(fn, sync, reps, max(1, best)) * 1e6


def torch_us(torch: Any, fn: Callable[[], object], reps: int, best: int = 1) -> float:
    """CUDA-event time per call in microseconds of ``reps`` calls of ``fn`` (after a warm-up);
    the best of ``best`` batches (``_timing.TorchTimer``)."""
    timer = TorchTimer(torch)
    fn()
    timer.sync()
    return min(timer.batch(lambda i: fn(), reps, 0).gpu_s for _ in range(max(1, best))) * 1e6


def gpu_us(fn: Callable[[], object], sync: Callable[[], object]) -> tuple[float, str]:
    """GPU time of one profiled call of ``fn`` (``_timing.gpu_profile``: timestamp queries, one
    pass per dispatch) in microseconds, and its kernels as text ('name TIMEus, ...')."""
    total, kernels, _ = _timing.gpu_profile(fn)
    text = ", ".join(f"{name} {1e6 * t:.1f}us" for name, t in sorted(kernels.items(), key=lambda kv: -kv[1]))
    return (total or 0.0) * 1e6, text


def load_torch() -> Any:
    """torch when it is importable and has CUDA, else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def upload(be: Any, a: np.ndarray) -> int:
    """A device copy of the host array ``a`` (a backend pointer)."""
    ptr = be.alloc(a.nbytes)
    be.copy_htod(ptr, a)
    return ptr


def run_case(be: Any, torch: Any, name: str, fn: Callable[[], object], tfn: Callable[[], object] | None,
             reps: int, best: int = 1) -> None:
    """Time one case (wall per call, GPU time of one profiled call, torch's time when ``tfn``)
    and print its line; an exception is reported and swallowed (a diagnostic goes on)."""
    try:
        fn()
        be.synchronize()
        wall = wall_us(fn, be.synchronize, reps, best)
        gpu, kernels = gpu_us(fn, be.synchronize)
        ttime = torch_us(torch, tfn, reps, best) if tfn else float("nan")
        print(f"{name:28s} wall/call {wall:9.1f}us  gpu {gpu:9.1f}us  torch {ttime:9.1f}us  "
              f"gt-wall/torch {wall / ttime:5.2f}  [{kernels}]", flush=True)
    except Exception as exc:  # a diagnostic: report and go on
        print(f"{name}: {type(exc).__name__}: {exc}", flush=True)


def main() -> int:
    from gputensor import _dispatch
    from gputensor._backend import ReduceOp

    torch = load_torch()
    be = _dispatch.backend()
    print(be)
    rng = np.random.default_rng(0)
    reps = 3 if SMALL else 20

    def up(a: np.ndarray) -> int:
        return upload(be, a)

    cases: list[tuple[str, Callable[[], object], Callable[[], object] | None]] = []
    n = (1 << 16) if SMALL else (1 << 26)
    x = rng.uniform(-1, 1, n).astype(np.float32)
    xp, yp = up(x), be.alloc(4 * 4096)
    tx = torch.from_numpy(x).cuda() if torch else None
    cases.append(("reduce.sum.full", lambda: be.reduce(ReduceOp.SUM, xp, yp, (n,), 0),
                  (lambda: torch.sum(tx)) if torch else None))
    cases.append(("reduce.max.full", lambda: be.reduce(ReduceOp.MAX, xp, yp, (n,), 0),
                  (lambda: torch.amax(tx)) if torch else None))
    rows = n // 4096
    yp2 = be.alloc(4 * rows)
    cases.append(("reduce.sum.last", lambda: be.reduce(ReduceOp.SUM, xp, yp2, (rows, 4096), 1),
                  (lambda: torch.sum(tx.view(rows, 4096), 1)) if torch else None))

    for name, (nb, c, hw, k, f, pad) in {"conv.3x3": (32, 256, 14, 256, 3, 1),
                                         "conv.1x1": (32, 1024, 14, 256, 1, 0)}.items():
        if SMALL:
            nb, c, k = 2, c // 8, k // 8
        xs, ws, ys = (nb, c, hw, hw), (k, c, f, f), (nb, k, hw, hw)
        xa = rng.uniform(-1, 1, xs).astype(np.float32)
        wa = rng.uniform(-1, 1, ws).astype(np.float32)
        cx, cw, cy = up(xa), up(wa), be.alloc(4 * int(np.prod(ys)))
        tfn = None
        if torch:
            torch.backends.cudnn.allow_tf32 = False
            torch.backends.cudnn.benchmark = True
            txa, twa = torch.from_numpy(xa).cuda(), torch.from_numpy(wa).cuda()
            tfn = (lambda txa=txa, twa=twa, pad=pad: torch.nn.functional.conv2d(txa, twa, padding=pad))
        cases.append((name, (lambda cx=cx, cw=cw, cy=cy, xs=xs, ws=ws, ys=ys, pad=pad:
                             be.conv2d_forward(cx, xs, cw, ws, cy, ys, 1, pad)), tfn))

    for d in (64, 128):
        b, h, s = (1, 2, 256) if SMALL else (4, 16, 4096)
        shape = (b, h, s, d)
        qa, ka, va = (rng.uniform(-1, 1, shape).astype(np.float32) for _ in range(3))
        q, k, v, o = up(qa), up(ka), up(va), be.alloc(qa.nbytes)
        tfn = None
        if torch:
            tq, tk, tv = (torch.from_numpy(a).cuda() for a in (qa, ka, va))
            tfn = (lambda tq=tq, tk=tk, tv=tv: torch.nn.functional.scaled_dot_product_attention(tq, tk, tv))
        cases.append((f"attention.f32.d{d}.s{s}", (lambda q=q, k=k, v=v, o=o, b=b, h=h, s=s, d=d:
                      be.attention(q, k, v, o, b, h, s, s, d, d ** -0.5, False, dtype="float32")), tfn))

    m, kk, nn = (64, 256, 256) if SMALL else (64, 4096, 4096)
    aa = rng.uniform(-1, 1, (m, kk)).astype(np.float32)
    bb = rng.uniform(-1, 1, (kk, nn)).astype(np.float32)
    ga, gb, gc = up(aa), up(bb), be.alloc(4 * m * nn)
    tfn = None
    if torch:
        torch.backends.cuda.matmul.allow_tf32 = False
        ta, tb = torch.from_numpy(aa).cuda(), torch.from_numpy(bb).cuda()
        tfn = lambda: ta @ tb
    from gputensor._backend import BackendTranspose
    nt = BackendTranspose.NO_TRANS
    cases.append((f"gemm.{m}x{kk}x{nn}", lambda: be.gemm(nt, nt, nn, m, kk, 1.0, gb, nn, ga, kk, 0.0, gc, nn), tfn))

    for name, fn, tfn in cases:
        run_case(be, torch, name, fn, tfn, reps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
