"""Diagnostic (not a benchmark): the reduction kernels' vector path on and off, beside torch.

``python3 -m benchmarks.tools.diag_reduce [--small] [--sweep]``: sum and max of a 64M-element float32
array (256 MiB; 64K elements with ``--small``) over all of it ("full"), along the last axis
(16384 x 4096, "last") and along the first axis (4096 x 16384, "first"), each under several
settings of the planner's knobs (``ops_reduce.configure``): the vector path on and off (the other
knobs at their defaults), and with ``--sweep`` also a grid of TARGET_WORKGROUPS, vector loads in
flight and vectors per invocation. Per line: wall time per call (20 calls + ``backend.synchronize()``, best of 3), the
GPU time of one profiled call (``gt.profile()``, best of 3) with its kernels, torch's CUDA-event
time for the same operation (when torch has CUDA) and torch's time over ours (>= 1: as fast as
torch), and a check of the result against NumPy. The timing helpers are benchmarks.tools.diag_kernels'.

The environment variables GPUTENSOR_REDUCE_WORKGROUPS, GPUTENSOR_REDUCE_VEC4_UNROLL and
GPUTENSOR_REDUCE_VEC4_VECTORS set the defaults of the knobs a line does not name (printed first).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from .diag_kernels import gpu_us, load_torch, torch_us, upload, wall_us

SMALL = "--small" in sys.argv
SWEEP = "--sweep" in sys.argv


def _configs(ops_reduce: Any) -> list[tuple[str, dict[str, Any]]]:
    """(label, ``configure`` arguments) of the settings to time."""
    out: list[tuple[str, dict[str, Any]]] = [("vec4=on", dict(vec4=True)), ("vec4=off", dict(vec4=False))]
    if SWEEP:
        for wg in (1024, 2048, 4096):
            for unroll in (2, 4, 8):
                out.append((f"vec4 wg={wg} unroll={unroll}", dict(vec4=True, target_workgroups=wg, vec4_unroll=unroll)))
        for vectors in (4, 8, 16, 32):
            for unroll in (2, 4):
                out.append((f"vec4 vectors={vectors} unroll={unroll}",
                            dict(vec4=True, vec4_vectors=vectors, vec4_unroll=unroll)))
        for wg in (1024, 4096):
            out.append((f"vec4=off wg={wg}", dict(vec4=False, target_workgroups=wg)))
    return out


def main() -> int:
    from gputensor import _dispatch
    from gputensor._backend import ReduceOp, ops_reduce

    torch = load_torch()
    be = _dispatch.backend()
    print(be)
    reps, best = (3, 3) if SMALL else (20, 3)
    n = (1 << 16) if SMALL else (1 << 26)
    cols = 4096 if not SMALL else 256
    rows = n // cols
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, n).astype(np.float32)
    xp = upload(be, x)
    yp = be.alloc(4 * max(rows, cols))
    tx = torch.from_numpy(x).cuda() if torch else None
    x64 = x.astype(np.float64)

    # (name, backend call, torch call, NumPy reference of the result)
    cases: list[tuple[str, Callable[[], object], Callable[[], object] | None, Callable[[], np.ndarray]]] = []
    for op, tname, ref in ((ReduceOp.SUM, "sum", np.sum), (ReduceOp.MAX, "amax", np.max)):
        tf = getattr(torch, tname) if torch else None
        cases.append((f"{op.value}.full", lambda op=op: be.reduce(op, xp, yp, (n,), 0),
                      (lambda tf=tf: tf(tx)) if torch else None, lambda ref=ref: np.asarray([ref(x64)])))
        cases.append((f"{op.value}.last {rows}x{cols}", lambda op=op: be.reduce(op, xp, yp, (rows, cols), 1),
                      (lambda tf=tf: tf(tx.view(rows, cols), 1)) if torch else None,
                      lambda ref=ref: ref(x64.reshape(rows, cols), axis=1)))
        cases.append((f"{op.value}.first {cols}x{rows}", lambda op=op: be.reduce(op, xp, yp, (cols, rows), 0),
                      (lambda tf=tf: tf(tx.view(cols, rows), 0)) if torch else None,
                      lambda ref=ref: ref(x64.reshape(cols, rows), axis=0)))

    configs = _configs(ops_reduce)
    defaults = ops_reduce.configure()
    print(f"defaults: {defaults}")
    try:
        for name, fn, tfn, ref in cases:
            ttime = float("nan")
            if tfn is not None:
                try:
                    ttime = torch_us(torch, tfn, reps, best)
                except Exception as exc:  # a diagnostic: report and go on
                    print(f"{name}: torch: {type(exc).__name__}: {exc}", flush=True)
            want = ref()
            print(f"{name}: torch {ttime:.1f}us", flush=True)
            for label, knobs in configs:
                ops_reduce.configure(**{**defaults, **knobs})
                try:
                    fn()
                    be.synchronize()
                    got = np.empty(want.size, np.float32)
                    be.copy_dtoh(got, yp)
                    err = np.abs(got.astype(np.float64) - want).max()
                    check = "ok" if err <= 1e-4 * max(1.0, np.sqrt(n // max(1, want.size))) else f"BAD ({err:.3g})"
                    wall = wall_us(fn, be.synchronize, reps, best)
                    gpu, kernels = min((gpu_us(fn, be.synchronize) for _ in range(best)), key=lambda r: r[0])
                    print(f"  {label:34s} wall/call {wall:8.1f}us  gpu {gpu:8.1f}us  "
                          f"torch/gpu {ttime / gpu:5.2f}  torch/wall {ttime / wall:5.2f}  check {check}  "
                          f"[{kernels}]", flush=True)
                except Exception as exc:  # a diagnostic: report and go on
                    print(f"  {label}: {type(exc).__name__}: {exc}", flush=True)
    finally:
        ops_reduce.configure(**defaults)
    return 0


if __name__ == "__main__":
    sys.exit(main())
