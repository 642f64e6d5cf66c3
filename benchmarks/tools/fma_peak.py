"""Diagnostic (not a benchmark): the FMA throughput of the device in float64 and float32, through
WGSL kernels (``fma_peak.wgsl``, ``gt.RawKernel``: fma chains, path ``wgsl``; the gemm core's
inner loop of shared loads and fma alone with 8x8 and 4x8 micro-tiles, ``wgsl-lds`` and
``wgsl-lds48``) and, where CuPy with CUDA is importable, through the chains in CUDA
(``fma_peak.cu``): the ceiling that gemm kernels without tensor cores are measured against, and
whether WGSL (naga, the Vulkan driver) reaches the hardware's.

``python3 -m benchmarks.tools.fma_peak [--small] [--iters N]`` prints per dtype and path the GPU
time of one launch (``gt.profile()`` timestamps; CUDA events), TFLOP/s (an fma is 2 flops), and
the launch shape. ``--small`` shrinks the launch for a software adapter (lavapipe).
"""

from __future__ import annotations

import argparse
from pathlib import Path
import numpy as np

from .. import _timing

HERE = Path(__file__).parent
#: fma per invocation / thread and round of fma_peak.wgsl's chains and fma_peak.cu (its lds: 8 x
#: TM; the 8 x 8 one runs half the rounds, so every path does the same fma).
CHAINS = 32
#: Invocations per workgroup of fma_peak.wgsl.
WG = 256


def wgsl_peak(dtype: str, groups: int, iters: int, entry: str = "chains",
              tm: int = 4) -> tuple[float | None, float]:
    """(GPU seconds per launch, or None without timestamps; flops per launch) of fma_peak.wgsl's
    ``entry`` (chains, or lds with ``tm`` x 8 micro-tiles: 8 * tm fma per round) over ``iters``
    rounds."""
    import gputensor as gt

    source = (HERE / "fma_peak.wgsl").read_text().replace("{{T}}", "f64" if dtype == "float64" else "f32")
    source = source.replace("{{TM}}", str(tm))
    per_round = CHAINS if entry == "chains" else 8 * tm
    kernel = gt.RawKernel(source, entry)
    out = gt.zeros(groups * WG, dtype=dtype)
    params = (iters, 0.999999, 1e-7)
    kernel((groups,), (out,), params=params)
    gt.synchronize()
    gpu, _, _ = _timing.gpu_profile(lambda: kernel((groups,), (out,), params=params), calls=4)
    if not np.isfinite(gt.asnumpy(out)).all():
        raise RuntimeError("fma_peak.wgsl produced non-finite values")
    return gpu, 2.0 * per_round * iters * groups * WG


def cuda_peak(dtype: str, groups: int, iters: int) -> tuple[float, float] | None:
    """(GPU seconds per launch, flops) of fma_peak.cu through CuPy; None without CuPy/CUDA."""
    try:
        import cupy as cp

        if cp.cuda.runtime.getDeviceCount() < 1:
            return None
    except Exception:  # noqa: BLE001 - no CuPy or no CUDA device
        return None
    ctype = "double" if dtype == "float64" else "float"
    kernel = cp.RawKernel((HERE / "fma_peak.cu").read_text(), "fma_peak", options=(f"-DFMA_T={ctype}",))
    out = cp.zeros(groups * WG, dtype=dtype)
    scalar = np.float64 if dtype == "float64" else np.float32
    args = (np.int32(iters), scalar(0.999999), scalar(1e-7), out)
    kernel((groups,), (WG,), args)
    cp.cuda.runtime.deviceSynchronize()
    begin, end = cp.cuda.Event(), cp.cuda.Event()
    reps = 4
    begin.record()
    for _ in range(reps):
        kernel((groups,), (WG,), args)
    end.record()
    end.synchronize()
    return cp.cuda.get_elapsed_time(begin, end) * 1e-3 / reps, 2.0 * CHAINS * iters * groups * WG


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="a small launch (software adapter)")
    parser.add_argument("--iters", type=int, default=0, help="rounds per invocation (default by size)")
    parser.add_argument("--groups", type=int, default=0, help="workgroups (default by size)")
    args = parser.parse_args(argv)
    groups = args.groups or (4 if args.small else 132 * 16)
    print(f"{'path':<12}{'dtype':<10}{'GPU us':>10}{'TFLOP/s':>10}  launch", flush=True)
    for dtype in ("float64", "float32"):
        iters = args.iters or (8 if args.small else (1024 if dtype == "float64" else 2048))
        shape = f"{groups} x {WG} invocations x {CHAINS * iters} fma"
        paths = (("wgsl", wgsl_peak), ("wgsl-lds", lambda d, g, i: wgsl_peak(d, g, i // 2, "lds", 8)),
                 ("wgsl-lds48", lambda d, g, i: wgsl_peak(d, g, i, "lds", 4)), ("cuda", cuda_peak))
        for path, fn in paths:
            try:
                got = fn(dtype, groups, iters)
            except Exception as exc:  # noqa: BLE001 - report and go on
                print(f"{path:<12}{dtype:<10}error: {type(exc).__name__}: {str(exc)[:160]}", flush=True)
                continue
            if got is None:
                continue
            seconds, flops = got
            if seconds:
                print(f"{path:<12}{dtype:<10}{seconds * 1e6:>10.1f}{flops / seconds * 1e-12:>10.2f}  {shape}",
                      flush=True)
            else:
                print(f"{path:<12}{dtype:<10}{'-':>10}{'-':>10}  {shape} (no timestamps)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
