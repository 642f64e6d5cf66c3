"""Diagnostic (not a benchmark): the prefill attention kernel variants on the current adapter.

``python3 -m benchmarks.tools.tune_attention [--small] [--variants old,new,...] [--dtype float32]``
times ``backend.attention`` (batch 4, heads 16, head_dim 64 and 128, seq 1024 and 4096, causal and
not) with every kernel variant of ``ops_attention.VARIANTS`` (``old``: attention.wgsl; ``new``:
attention_flash.wgsl with the tiles ops_attention picks; ``new-BQxTC[-dc8]``: attention_flash with
forced tiles) and, when torch with CUDA is present, ``torch.nn.functional.scaled_dot_product_attention``
in the same process. Wall clock over ``--calls`` calls and one ``backend.synchronize()``, best of
``--repeats``. Prints ms, TFLOP/s (4 * b * h * d per visible (query, key) pair: all of them, or the
bottom-right causal triangle, about half) and the ratio to torch (> 1: faster than torch); checks
every variant's output against a float64 NumPy reference on 64 sampled rows of two (batch, head)
pairs (and prints its largest difference from torch's output, for information). ``--small``
(batch 1, heads 2, seq 200; every row checked) runs in seconds on a CPU adapter (lavapipe) as a
smoke test. Exit status 1 when a check fails or a variant raises.

The variant in effect for ordinary calls is ``GPUTENSOR_ATTENTION_KERNEL`` (default ``new``).
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

from ..bench_attention import attention_reference, visible_pairs
from .tune_gemm import time_calls


def _describe(plan) -> str:  # noqa: ANN001
    from gputensor._backend import ops_attention

    if plan.kernel == "attention_flash":
        shape = ops_attention.FlashShape(plan.block_q, plan.tile_cols, plan.padded_head_dim,
                                         plan.depth_chunk, plan.key_chunk, plan.stage_vec4)
        return (f"flash BQ={plan.block_q} TC={plan.tile_cols} NT={plan.invocations} DP={plan.padded_head_dim} "
                f"DC={plan.depth_chunk} KC={plan.key_chunk} wgmem={shape.workgroup_bytes(4)}B")
    return f"{plan.kernel} BQ={plan.block_q} DP={plan.padded_head_dim} KC={plan.key_chunk}"


def main(argv: list[str] | None = None) -> int:
    from gputensor._backend import get_backend, ops_attention

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="tiny shapes: a smoke test for CPU adapters")
    ap.add_argument("--variants", default=",".join(ops_attention.VARIANTS),
                    help="comma-separated kernel variants (default: %(default)s)")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float16"])
    ap.add_argument("--head-dims", default="64,128")
    ap.add_argument("--seqs", default=None, help="comma-separated sequence lengths")
    ap.add_argument("--calls", type=int, default=None, help="calls per timed batch (default 10; --small 2)")
    ap.add_argument("--repeats", type=int, default=None, help="timed batches, best kept (default 3; --small 1)")
    args = ap.parse_args(argv)
    if args.calls is None:
        args.calls = 2 if args.small else 10
    if args.repeats is None:
        args.repeats = 1 if args.small else 3

    be = get_backend()
    ctx = be.context
    limit = int(ctx.limits.get("max-compute-workgroup-storage-size", 16384))
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    head_dims = [int(x) for x in args.head_dims.split(",")]
    if args.small:
        b, h, seqs = 1, 2, [200]
    else:
        b, h, seqs = 4, 16, [1024, 4096]
    if args.seqs:
        seqs = [int(x) for x in args.seqs.split(",")]
    torch = None
    if not args.small:
        try:
            import torch as _torch

            if _torch.cuda.is_available():
                torch = _torch
        except ImportError:  # pragma: no cover - no torch here
            torch = None
    print(f"adapter: {be!r}; workgroup memory limit {limit} B; torch: "
          f"{'yes' if torch is not None else 'no'}; default variant {ops_attention.kernel_variant()!r}", flush=True)
    dtype = np.dtype(args.dtype)
    itemsize = dtype.itemsize
    rng = np.random.default_rng(0)
    default_variant = ops_attention.KERNEL_VARIANT
    failures = 0
    summary: dict[str, list[float]] = {v: [] for v in variants}
    for d in head_dims:
        for s in seqs:
            shape = (b, h, s, d)
            q = rng.standard_normal(shape).astype(dtype)
            k = rng.standard_normal(shape).astype(dtype)
            v = rng.standard_normal(shape).astype(dtype)
            scale = 1.0 / math.sqrt(d)
            ptrs = [be.alloc(a.nbytes) for a in (q, k, v, q)]
            try:
                for ptr, a in zip(ptrs, (q, k, v)):
                    be.copy_htod(ptr, a)
                tq = tk = tv = None
                if torch is not None:
                    tq, tk, tv = (torch.from_numpy(a).cuda() for a in (q, k, v))
                for causal in (False, True):
                    flops = 4.0 * b * h * d * visible_pairs(s, s, causal)
                    label = f"d{d} s{s}{' causal' if causal else ''}"
                    t_torch = None
                    ref = None
                    if torch is not None:
                        sdpa = torch.nn.functional.scaled_dot_product_attention

                        def run_torch() -> None:
                            sdpa(tq, tk, tv, is_causal=causal, scale=scale)

                        t_torch = time_calls(run_torch, torch.cuda.synchronize, args.calls, args.repeats)
                        ref = sdpa(tq, tk, tv, is_causal=causal, scale=scale).float().cpu().numpy()
                        print(f"{label:>18}  torch        {t_torch:8.3f} ms  {flops / t_torch / 1e9:7.3f} TFLOP/s",
                              flush=True)
                    for name in variants:
                        ops_attention.KERNEL_VARIANT = name
                        try:
                            plan = ops_attention.plan_attention(b * h, s, s, d, itemsize, 4,
                                                                be.max_window_bytes(), limit)

                            def run() -> None:
                                be.attention(*ptrs, b, h, s, s, d, scale, causal, dtype=args.dtype)

                            t = time_calls(run, be.synchronize, args.calls, args.repeats)
                            got = np.empty_like(q)
                            be.copy_dtoh(got, ptrs[3])
                        except Exception as exc:  # noqa: BLE001 - report and go on
                            failures += 1
                            print(f"{label:>18}  {name:<12} error: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
                            continue
                        finally:
                            ops_attention.KERNEL_VARIANT = default_variant
                        got = got.astype(np.float64)
                        # the check: a float64 NumPy reference on sampled rows (all with --small)
                        rows = np.unique(np.linspace(0, s - 1, num=s if args.small else 64).astype(np.int64))
                        err = 0.0
                        for bi, hi in sorted({(0, 0), (b - 1, h - 1)}):
                            r = attention_reference(q[bi, hi], k[bi, hi], v[bi, hi], rows, scale, causal)
                            err = max(err, float(np.max(np.abs(got[bi, hi][rows] - r))))
                        tol = 2e-4 if dtype == np.float32 else 2e-2
                        ok = err <= tol
                        failures += not ok
                        # information only: torch's float32 kernels may round differently (TF32)
                        vs_torch = f", vs torch {float(np.max(np.abs(got - ref))):.1e}" if ref is not None else ""
                        rate = flops / t / 1e9
                        ratio = f"  {t_torch / t:5.2f}x torch" if t_torch else ""
                        summary[name].append(t_torch / t if t_torch else rate)
                        print(f"{label:>18}  {name:<12} {t:8.3f} ms  {rate:7.3f} TFLOP/s{ratio}  "
                              f"max err {err:.1e}{vs_torch}{'' if ok else ' FAILED'}  [{_describe(plan)}]",
                              flush=True)
            finally:
                for ptr in ptrs:
                    be.free(ptr)
    what = "ratio to torch" if torch is not None else "TFLOP/s"
    print(f"geometric mean {what} per variant:")
    for name, xs in summary.items():
        if xs:
            print(f"  {name:<12} {math.exp(sum(math.log(x) for x in xs) / len(xs)):.4f}")
    if failures:
        print(f"{failures} failed check(s) or error(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
