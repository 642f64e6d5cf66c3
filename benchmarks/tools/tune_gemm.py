"""Diagnostic (not a benchmark): float32 gemm tile configurations on the current adapter.

``python3 -m benchmarks.tools.tune_gemm [N ...]`` times ``a @ b`` (N x N float32, default 4096) with
each candidate GPU tile configuration in place of ``ops_gemm.TILES_LARGE`` and torch's fp32
matmul (TF32 off) in the same process, and checks every result against torch's; then the
shipped tiles once more with the kernel's ``//#unroll`` loops left as loops. Used to pick
``TILES_LARGE`` for a GPU; prints ms per call and the ratio to torch.
"""

from __future__ import annotations

import re
import sys

import numpy as np

from .. import _timing

CANDIDATES = [
    (128, 128, 8, 8, 8),
    (128, 128, 16, 8, 8),
    (128, 64, 16, 8, 4),
    (64, 128, 16, 4, 8),
    (128, 128, 32, 8, 8),
]


def time_calls(fn, sync, reps: int = 20, repeats: int = 3) -> float:  # noqa: ANN001
    """Milliseconds per call of ``fn`` (``_timing.time_calls``: one warm-up call, then the best of
    ``repeats`` batches of ``reps`` calls each followed by ``sync()``, wall clock)."""
    return _timing.time_calls(fn, sync, reps, repeats) * 1e3


def _clear_compiled(ctx, kernels) -> None:  # noqa: ANN001
    """Forget rendered sources and compiled pipelines (after a change to how sources render)."""
    kernels._render_cached.cache_clear()
    ctx._pipelines.clear()
    ctx._pipelines_fast.clear()


def main() -> int:
    import gputensor as gt
    from gputensor._backend import get_backend, kernels, ops_gemm

    ctx = get_backend().context

    sizes = [int(a) for a in sys.argv[1:]] or [4096]
    try:
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False
    except ImportError:  # pragma: no cover - no torch here
        torch = None
    rng = np.random.default_rng(0)
    default = ops_gemm.TILES_LARGE
    for n in sizes:
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        ga, gb = gt.asarray(a), gt.asarray(b)
        ref = None
        line = f"{n}^3:"
        if torch is not None and torch.cuda.is_available():
            ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
            t_torch = time_calls(lambda: ta @ tb, torch.cuda.synchronize)
            ref = (ta @ tb).cpu().numpy()
            line += f" torch {t_torch:.3f} ms |"
        else:
            t_torch = None
            ref = a.astype(np.float64) @ b.astype(np.float64)
        for cfg in CANDIDATES:
            tiles = ops_gemm.GemmTiles(*cfg)
            try:
                tiles.check()
            except ValueError:
                line += f" {cfg}: unusable |"
                continue
            ops_gemm.TILES_LARGE = tiles
            try:
                t = time_calls(lambda: ga @ gb, gt.synchronize)
                got = gt.asnumpy(ga @ gb)
                err = float(np.max(np.abs(got - ref)) / (np.max(np.abs(ref)) + 1e-30))
                ratio = f" = {t_torch / t:.2f}x torch" if t_torch else ""
                line += f" {cfg}: {t:.3f} ms{ratio} (rel err {err:.1e}) |"
            except Exception as exc:  # noqa: BLE001 - report and go on
                line += f" {cfg}: {type(exc).__name__}: {str(exc)[:80]} |"
            finally:
                ops_gemm.TILES_LARGE = default
        # the shipped tiles with the //#unroll loops left as loops
        unroll = kernels.unroll_loops
        kernels.unroll_loops = lambda t: re.sub(r"^[ \t]*//#unroll[ \t]*\n", "", t, flags=re.M)
        _clear_compiled(ctx, kernels)
        try:
            t = time_calls(lambda: ga @ gb, gt.synchronize)
            ratio = f" = {t_torch / t:.2f}x torch" if t_torch else ""
            line += f" shipped tiles, loops not unrolled: {t:.3f} ms{ratio}"
        finally:
            kernels.unroll_loops = unroll
            _clear_compiled(ctx, kernels)
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
