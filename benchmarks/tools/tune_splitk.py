"""Diagnostic (not a benchmark): split-K choices for float32 gemm and conv2d on the current adapter.

``python3 -m benchmarks.tools.tune_splitk [--small] [--reps N]`` times five problems with few output
tiles (two ResNet-50 convolutions at batch 32 through ``backend.conv2d_forward``, and gemms
64x4096x4096, 4096x4096x64 and 1024^3, row-major m x n x k, through ``backend.gemm``) with

* ``auto``: the shipped policy (``ops_gemm.gemm_plan``: the ``SPLITK_*`` constants);
* ``1``: no split (``GPUTENSOR_GEMM_SPLITK=1``: the tiles ``gemm_tiles`` picks, 64x64 on a GPU
  for these problems);
* ``1L``: no split, with the large tiles (``FILL_TILES`` set to 0 for the run);
* ``2`` .. ``8``: that many splits forced (``GPUTENSOR_GEMM_SPLITK``), with the large tiles on a
  GPU; the splits actually made can be fewer (depth tiles, scratch binding size);
* ``tuned``: the autotuner (``gputensor.autotune(True)``, ``_backend/autotune.py``) with its cache
  in a fresh temporary directory: the plan it chose, the time of the first call (which tunes:
  ``tune ...ms``) and then the usual timing (the other rows run with tuning off);

and, where torch with CUDA is importable, torch in the same process (``conv2d`` with cuDNN TF32
off and ``cudnn.benchmark`` on; ``matmul`` with TF32 off). Times are wall clock: the best of 3
batches of ``--reps`` calls, each batch followed by a synchronisation. Every result is checked
against torch's (else a float64 NumPy reference); the exit status is 1 if any check fails.
``--small`` runs small shapes (a smoke test for software adapters such as lavapipe).

Use it to set ``ops_gemm.SPLITK_MIN_K``, ``SPLITK_TARGET``, ``SPLITK_MIN_DEPTH`` and
``SPLITK_MAX``: the ``auto`` row should match the best forced row of every problem; the
``tuned`` row shows whether the autotuner finds the best one (and what its first call costs).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .tune_gemm import time_calls

#: Forced split counts tried (after "auto", "1" and "1L").
SPLITS = (2, 3, 4, 6, 8)

#: Largest relative error (max |got - ref| / max |ref|) accepted.
REL_TOL = 1e-4


@dataclass(frozen=True)
class Problem:
    """A conv2d (``conv`` = (N, C, H, W, K, F, pad)) or a row-major gemm (``gemm`` = (m, n, k))."""

    name: str
    conv: tuple[int, int, int, int, int, int, int] | None = None
    gemm: tuple[int, int, int] | None = None

    @property
    def implicit(self) -> tuple[int, int, int]:
        """(M, N, depth) of the (implicit) column-major GEMM the backend runs."""
        if self.conv is not None:
            n, c, h, w, k, f, pad = self.conv
            oh, ow = h + 2 * pad - f + 1, w + 2 * pad - f + 1
            return n * oh * ow, k, c * f * f
        m, n, k = self.gemm  # type: ignore[misc]
        return n, m, k  # row-major C = A B is column-major C^T = B^T A^T

    @property
    def flops(self) -> float:
        mm, nn, depth = self.implicit
        return 2.0 * mm * nn * depth


FULL = [
    Problem("conv3x3 N=32 C=256 14x14 K=256 pad 1", conv=(32, 256, 14, 14, 256, 3, 1)),
    Problem("conv1x1 N=32 C=1024 14x14 K=256", conv=(32, 1024, 14, 14, 256, 1, 0)),
    Problem("gemm 64x4096x4096", gemm=(64, 4096, 4096)),
    Problem("gemm 4096x4096x64", gemm=(4096, 4096, 64)),
    Problem("gemm 1024^3", gemm=(1024, 1024, 1024)),
]

SMALL = [
    Problem("conv3x3 N=2 C=16 7x7 K=16 pad 1", conv=(2, 16, 7, 7, 16, 3, 1)),
    Problem("conv1x1 N=2 C=64 7x7 K=16", conv=(2, 64, 7, 7, 16, 1, 0)),
    Problem("gemm 8x256x512", gemm=(8, 256, 512)),
    Problem("gemm 256x256x8", gemm=(256, 256, 8)),
    Problem("gemm 128^3", gemm=(128, 128, 128)),
]


def conv_reference(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    """float64 NCHW cross-correlation (stride 1) as a sum of shifted slices."""
    n, c, h, wd = x.shape
    k, _, f, _ = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - f + 1, wd + 2 * pad - f + 1
    out = np.zeros((n, k, oh, ow))
    for i in range(f):
        for j in range(f):
            out += np.einsum("nchw,kc->nkhw", xp[:, :, i:i + oh, j:j + ow],
                             w[:, :, i, j].astype(np.float64), optimize=True)
    return out


class Runner:
    """One problem's device buffers and calls (gputensor backend, and torch when available)."""

    def __init__(self, be: Any, torch: Any, problem: Problem, rng: np.random.Generator) -> None:
        from gputensor._backend import BackendTranspose

        self.be, self.torch, self.problem = be, torch, problem
        if problem.conv is not None:
            n, c, h, w, k, f, pad = problem.conv
            oh, ow = h + 2 * pad - f + 1, w + 2 * pad - f + 1
            host = [rng.uniform(-1, 1, (n, c, h, w)).astype(np.float32),
                    rng.uniform(-1, 1, (k, c, f, f)).astype(np.float32)]
            self.out_shape: tuple[int, ...] = (n, k, oh, ow)
        else:
            m, n, k = problem.gemm  # type: ignore[misc]
            host = [rng.uniform(-1, 1, (m, k)).astype(np.float32),
                    rng.uniform(-1, 1, (k, n)).astype(np.float32)]
            self.out_shape = (m, n)
        self.host = host
        self.ptrs = [be.alloc(a.nbytes) for a in host]
        for p, a in zip(self.ptrs, host):
            be.copy_htod(p, a)
        self.out = be.alloc(int(np.prod(self.out_shape)) * 4)
        nt = BackendTranspose.NO_TRANS
        if problem.conv is not None:
            xs, ws = host[0].shape, host[1].shape
            pad = problem.conv[6]
            self.call: Callable[[], None] = lambda: be.conv2d_forward(
                self.ptrs[0], xs, self.ptrs[1], ws, self.out, self.out_shape, 1, pad)
        else:
            m, n, k = problem.gemm  # type: ignore[misc]
            a, b = self.ptrs
            self.call = lambda: be.gemm(nt, nt, n, m, k, 1.0, b, n, a, k, 0.0, self.out, n)
        self.torch_ms: float | None = None
        self.ref = self._reference()

    def _reference(self) -> np.ndarray:
        torch = self.torch
        x, w = self.host
        if torch is not None:
            tx, tw = torch.from_numpy(x).cuda(), torch.from_numpy(w).cuda()
            if self.problem.conv is not None:
                pad = self.problem.conv[6]
                fn = lambda: torch.nn.functional.conv2d(tx, tw, padding=pad)  # noqa: E731
            else:
                fn = lambda: tx @ tw  # noqa: E731
            self.torch_ms = time_calls(fn, torch.cuda.synchronize)
            return fn().double().cpu().numpy()
        if self.problem.conv is not None:
            return conv_reference(x, w, self.problem.conv[6])
        return x.astype(np.float64) @ w.astype(np.float64)

    def error(self) -> float:
        """Relative error of the last result."""
        got = np.empty(self.out_shape, np.float32)
        self.be.copy_dtoh(got, self.out)
        return float(np.max(np.abs(got - self.ref)) / (np.max(np.abs(self.ref)) + 1e-30))

    def close(self) -> None:
        for p in (*self.ptrs, self.out):
            self.be.free(p)


def plan_text(be: Any, problem: Problem, splits: int | None) -> str:
    """The tiles and splits the backend runs for ``problem`` (one block; forced ``splits``)."""
    from gputensor._backend import ops_gemm

    mm, nn, depth = problem.implicit
    tiles, count = ops_gemm.plan_splitk(be, "f32", mm, nn, depth, 1, splits)
    return f"{tiles.bm}x{tiles.bn}x{tiles.bk}/{tiles.tm}x{tiles.tn} s={count}"


def print_row(label: str, plan: str, ms: float, err: float, problem, runner, suffix: str = "") -> bool:  # noqa: ANN001
    """Print one result row (plan, time, TFLOP/s, ratio to torch, error); whether it passed."""
    ok = err <= REL_TOL
    line = f"  {label}: {plan:<24} {ms:8.3f} ms {problem.flops / ms / 1e9:7.2f} TFLOP/s"
    if runner.torch_ms is not None:
        line += f"  {runner.torch_ms / ms:5.2f}x torch"
    print(line + f"  rel err {err:.1e}" + ("" if ok else "  FAILED") + suffix, flush=True)
    return ok


def tuned_row(be: Any, runner: Runner, reps: int) -> tuple[str, float, float, str]:
    """``(plan, first-call ms, ms per call, candidate times)`` of ``runner``'s call with the
    autotuner on (its cache in the current ``GPUTENSOR_CACHE_DIR``); the first call tunes the
    problem's key."""
    from gputensor._backend import autotune

    before = autotune.entries(be.context)
    with autotune.autotune(True):
        be.synchronize()
        t0 = time.perf_counter()
        runner.call()
        be.synchronize()
        first = (time.perf_counter() - t0) * 1e3
        ms = time_calls(runner.call, be.synchronize, reps)
    new = {k: v for k, v in autotune.entries(be.context).items() if k not in before}
    if not new:
        return "(cached)", first, ms, ""
    rec = next(iter(new.values()))
    bm, bn, bk, tm, tn = rec["tiles"]
    times = ", ".join(f"{plan} {t:.3f}" for plan, t in rec.get("times", {}).items())
    return f"{bm}x{bn}x{bk}/{tm}x{tn} s={rec['splits']}", first, ms, times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m benchmarks.tools.tune_splitk", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", action="store_true", help="small shapes (software adapters)")
    parser.add_argument("--reps", type=int, default=20, help="calls per timed batch (default 20)")
    args = parser.parse_args(argv)

    from gputensor._backend import get_backend, ops_gemm

    be = get_backend()
    print(f"adapter: {be!r}")
    print(f"policy: SPLITK_MIN_K={ops_gemm.SPLITK_MIN_K} SPLITK_TARGET={ops_gemm.SPLITK_TARGET} "
          f"SPLITK_MIN_DEPTH={ops_gemm.SPLITK_MIN_DEPTH} SPLITK_MAX={ops_gemm.SPLITK_MAX} "
          f"FILL_TILES={ops_gemm.FILL_TILES}", flush=True)
    torch = None
    try:
        import torch as _torch

        if _torch.cuda.is_available():
            torch = _torch
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            torch.backends.cudnn.benchmark = True
    except ImportError:  # pragma: no cover - no torch here
        pass

    from gputensor._backend import autotune

    env = ops_gemm.SPLITK_ENV
    saved_env, saved_fill = os.environ.pop(env, None), ops_gemm.FILL_TILES
    saved_cache = os.environ.get(autotune.CACHE_ENV)
    tune_dir = tempfile.TemporaryDirectory(prefix="gputensor-tune-")
    os.environ[autotune.CACHE_ENV] = tune_dir.name
    autotune.reset()
    saved_tuning = autotune.autotune(False)  # the rows below run the static policy
    choices: list[tuple[str, int | None, bool]] = [("auto", None, False), ("1", 1, False),
                                                  ("1L", None, True)]
    choices += [(str(s), s, False) for s in SPLITS]
    rng = np.random.default_rng(0)
    failed = False
    try:
        for problem in SMALL if args.small else FULL:
            runner = Runner(be, torch, problem, rng)
            mm, nn, depth = problem.implicit
            head = f"{problem.name}  (M={mm} N={nn} depth={depth})"
            if runner.torch_ms is not None:
                head += f"  torch {runner.torch_ms:.3f} ms"
            print(head, flush=True)
            try:
                for label, splits, large in choices:
                    if splits is None:
                        os.environ.pop(env, None)
                    else:
                        os.environ[env] = str(splits)
                    ops_gemm.FILL_TILES = 0 if large else saved_fill
                    try:
                        plan = plan_text(be, problem, splits)
                        ms = time_calls(runner.call, be.synchronize, args.reps)
                        err = runner.error()
                    finally:
                        os.environ.pop(env, None)
                        ops_gemm.FILL_TILES = saved_fill
                    failed |= not print_row(f"{label:>4}", plan, ms, err, problem, runner)
                plan, first, ms, times = tuned_row(be, runner, args.reps)
                failed |= not print_row("tuned", plan, ms, runner.error(), problem, runner,
                                        f"  (first call, tuning: {first:.1f} ms)")
                if times:
                    print(f"         candidates (ms/call): {times}", flush=True)
            finally:
                runner.close()
    finally:
        if saved_env is not None:
            os.environ[env] = saved_env
        autotune.autotune(bool(saved_tuning))
        if saved_cache is None:
            os.environ.pop(autotune.CACHE_ENV, None)
        else:
            os.environ[autotune.CACHE_ENV] = saved_cache
        autotune.reset()
        tune_dir.cleanup()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
