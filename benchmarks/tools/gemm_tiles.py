"""Diagnostic (not a benchmark): gemm tile variants of ``a @ b`` through the public API, A/B in
one process.

``python3 -m benchmarks.tools.gemm_tiles [--only PATTERNS] [--ab VARIANTS] [--small]`` times
``a @ b`` for float64 1024², 2048², 4096² and a batch of 64 × 256², a batch of 256 × 128²
float32, and float32 1024² / 2048²
(torch's matmul beside it, TF32 off, when CUDA is there): first with the knobs as they are, then
once per ``--ab`` variant under ``config.override``. A variant is ``NAME=VALUE`` of a
``gputensor._backend.config`` knob (``gemm_tiles_f64=128x64x8x8x4``,
``gemm_tiles_batched=64x64x16x4x4``, ``gemm_f64_pairs=0``, ``gemm_splitk=2``), ``+`` joining knobs
set together, ``,`` separating variants (the syntax of ``benchmarks.bench_linalg --ab``). A
variant runs only on the cases it changes (a float64 knob on the float64 cases, the batched knob
on the batch), and on every case when it sets no such knob.

Per row: the tiles and split-K count the planner takes (``ops_gemm.plan_splitk`` under the
variant's knobs), wall µs per call (calls back to back, results held, one sync), GPU µs per call
(timestamp queries, ``gt.profile()``), GPU TFLOP/s, the ratios torch GPU / gputensor GPU and
torch wall / gputensor wall, and the largest error against torch's result (NumPy's on a machine
without CUDA) relative to its largest magnitude. Last, per case, the fastest variant (GPU time,
else wall) with its speed-up over the knobs as set, its ratio to torch's GPU time and its error.
A row whose call runs several kernels (split-K: the gemm and the combine) is followed by their
GPU times. ``--small`` shrinks every size for a software adapter (lavapipe). Times use
``benchmarks/_timing.py``.
"""

from __future__ import annotations

import argparse
import fnmatch
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _timing
from ..bench_linalg import variants

#: (case id, batch (0: plain matrices), n, dtype name): n x n @ n x n.
CASES = [
    ("f64.1024", 0, 1024, "float64"),
    ("f64.2048", 0, 2048, "float64"),
    ("f64.4096", 0, 4096, "float64"),
    ("f64.batched64x256", 64, 256, "float64"),
    ("f32.batched256x128", 256, 128, "float32"),
    ("f32.1024", 0, 1024, "float32"),
    ("f32.2048", 0, 2048, "float32"),
]
#: The same cases shrunk for a software adapter.
SMALL_CASES = [
    ("f64.96", 0, 96, "float64"),
    ("f64.160", 0, 160, "float64"),
    ("f64.224", 0, 224, "float64"),
    ("f64.batched4x48", 4, 48, "float64"),
    ("f32.batched8x40", 8, 40, "float32"),
    ("f32.96", 0, 96, "float32"),
    ("f32.160", 0, 160, "float32"),
]
#: The tile knobs and the cases each one changes.
TILE_KNOBS = {"gemm_tiles_f64": lambda batch, dtype: dtype == "float64",
              "gemm_f64_pairs": lambda batch, dtype: dtype == "float64",
              "gemm_tiles_batched": lambda batch, dtype: dtype != "float64" and batch > 1}


def applies(settings: dict[str, Any], batch: int, dtype: str) -> bool:
    """Whether a variant changes the case: it sets a tile knob that applies to it, or no tile knob."""
    knobs = [k for k in settings if k in TILE_KNOBS]
    return not knobs or any(TILE_KNOBS[k](batch, dtype) for k in knobs)


def plan_text(batch: int, n: int, dtype: str) -> str:
    """The tiles (BMxBNxBKxTMxTN), f64 staging (pairs or quads) and splits the planner takes for
    the case under the knobs now."""
    from gputensor._backend import get_backend, ops_gemm

    backend = get_backend()
    acc = "f64" if dtype == "float64" else "f32"
    count = max(1, batch)
    try:
        forced = ops_gemm.knob_tiles(backend.context, acc, count, n, n)
        tiles, splits = ops_gemm.plan_splitk(backend, acc, n, n, n, count, None, True, None, forced)
    except ValueError as exc:
        return f"unusable ({exc})"
    text = f"{tiles.bm}x{tiles.bn}x{tiles.bk}x{tiles.tm}x{tiles.tn}"
    if acc == "f64":
        text += "/pairs" if ops_gemm.tile_knob_values()[2] else "/quads"
    return text + (f"/split{splits}" if splits > 1 else "")


def label(settings: dict[str, Any]) -> str:
    """A variant's name: its knobs as NAME=VALUE joined by +, tile shapes written BMxBNxBKxTMxTN."""
    def text(value: Any) -> str:
        return "x".join(map(str, value)) if isinstance(value, tuple) else str(value)

    return "+".join(f"{k}={text(v)}" for k, v in settings.items())


def _time(fn: Callable[[], Any], sync: Callable[[], Any], target_s: float) -> float:
    per = _timing.estimate_call(lambda _i: fn(), sync, max_calls=4)
    reps = int(max(2, min(200, target_s / max(per, 1e-6))))
    return _timing.time_calls(fn, sync, reps=reps, repeats=3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="*", help="case ids or fnmatch patterns, comma separated")
    parser.add_argument("--ab", default="", help="variants: KNOB=VALUE[+KNOB=VALUE], comma separated")
    parser.add_argument("--small", action="store_true", help="small sizes (software adapter)")
    parser.add_argument("--target", type=float, default=0.05, help="seconds of one timed batch")
    args = parser.parse_args(argv)

    import gputensor as gt
    from gputensor._backend import config

    flips = [(label(settings), settings) for _, settings in variants(args.ab)]
    torch = None
    try:
        import torch as _torch

        if _torch.cuda.is_available():
            torch = _torch
            torch.backends.cuda.matmul.allow_tf32 = False
    except ImportError:
        pass
    warmer = _timing.ClockWarmer(torch)
    patterns = [p.strip() for p in args.only.split(",") if p.strip()]
    rng = np.random.default_rng(0)
    print(f"{'case':<22}{'variant':<64}{'tiles':<28}{'wall us':>10}{'GPU us':>10}{'TFLOP/s':>9}"
          f"{'x torch GPU':>12}{'x torch wall':>13}{'rel err':>10}", flush=True)
    best: dict[str, tuple[float, str, str, float]] = {}
    base: dict[str, float] = {}
    torch_time: dict[str, float] = {}
    for case_id, batch, n, dtype in SMALL_CASES if args.small else CASES:
        if not any(fnmatch.fnmatch(case_id, p) or case_id.startswith(p) for p in patterns):
            continue
        shape = (batch, n, n) if batch else (n, n)
        a = rng.standard_normal(shape).astype(dtype)
        b = rng.standard_normal(shape).astype(dtype)
        flops = 2 * n ** 3 * max(1, batch)
        torch_gpu = torch_wall = None
        if torch is not None:
            ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
            warmer.warm()
            torch_wall = _time(lambda: ta @ tb, torch.cuda.synchronize, args.target)
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            reps = 20
            begin.record()
            held = [ta @ tb for _ in range(reps)]
            end.record()
            torch.cuda.synchronize()
            torch_gpu = begin.elapsed_time(end) * 1e-3 / reps
            ref = (ta @ tb).double().cpu().numpy()
            held.clear()
            torch_time[case_id] = torch_gpu
            print(f"{case_id:<22}{'torch':<64}{'':<28}{torch_wall * 1e6:>10.1f}{torch_gpu * 1e6:>10.1f}"
                  f"{flops / torch_gpu * 1e-12:>9.2f}", flush=True)
        else:
            ref = a.astype(np.float64) @ b.astype(np.float64)
        scale = float(np.max(np.abs(ref))) or 1.0
        ga, gb = gt.asarray(a), gt.asarray(b)
        for name, settings in [("(knobs as set)", {})] + flips:
            if settings and not applies(settings, batch, dtype):
                continue
            try:
                with config.override(**settings):
                    tiles = plan_text(batch, n, dtype)
                    got = gt.asnumpy(ga @ gb)
                    err = float(np.max(np.abs(got.astype(np.float64) - ref))) / scale
                    warmer.warm()
                    wall = _time(lambda: ga @ gb, gt.synchronize, args.target)
                    gpu, kernels, _ = _timing.gpu_profile(lambda: ga @ gb, calls=16)
            except Exception as exc:  # noqa: BLE001 - report the variant and go on
                print(f"{case_id:<22}{name:<64}error: {type(exc).__name__}: {str(exc)[:120]}", flush=True)
                continue
            gpu_text = f"{gpu * 1e6:>10.1f}{flops / gpu * 1e-12:>9.2f}" if gpu else f"{'-':>10}{'-':>9}"
            if torch_gpu is not None and gpu:
                ratios = f"{torch_gpu / gpu:>12.2f}{torch_wall / wall:>13.2f}"
            else:
                ratios = f"{'-':>12}{'-':>13}"
            print(f"{case_id:<22}{name:<64}{tiles:<28}{wall * 1e6:>10.1f}{gpu_text}{ratios}{err:>10.1e}",
                  flush=True)
            if len(kernels) > 1:
                print("    GPU us per kernel: " + ", ".join(f"{k} {v * 1e6:.1f}" for k, v in kernels.items()),
                      flush=True)
            key = gpu if gpu else wall
            if not settings:
                base[case_id] = key
            if case_id not in best or key < best[case_id][0]:
                best[case_id] = (key, name, tiles, err)
        ga = gb = None
        gt.synchronize()
        gt.get_default_memory_pool().free_all_blocks()
    for case_id, (t, name, tiles, err) in best.items():
        speedup = f", {base[case_id] / t:.2f}x the knobs as set" if case_id in base else ""
        if case_id in torch_time:
            speedup += f", {torch_time[case_id] / t:.2f}x torch GPU"
        print(f"fastest {case_id}: {name} [{tiles}] ({t * 1e6:.1f} us{speedup}, rel err {err:.1e})",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
