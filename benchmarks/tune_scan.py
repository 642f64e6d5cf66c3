"""Scan tuning on the current adapter: ``python -m benchmarks.tune_scan TARGET_UNITS [PREFETCH]``.

Times ``gt.cumulative_sum`` of 64M float32 (wall, 50 calls + one synchronise) and reads its
kernels' GPU time with ``gt.profile()``; run one process per setting (plans are cached).
"""

from __future__ import annotations

import sys
import time

import numpy as np


def main() -> int:
    from gputensor._backend import ops_scan

    if len(sys.argv) > 1:
        ops_scan.TARGET_UNITS = int(sys.argv[1])
        ops_scan.MAX_REDUCED_UNITS = max(ops_scan.MAX_REDUCED_UNITS, ops_scan.TARGET_UNITS)
    if len(sys.argv) > 2:
        ops_scan.VECTOR_PREFETCH = sys.argv[2] == "1"
    import gputensor as gt

    n = 1 << (16 if "--small" in sys.argv else 26)
    x = gt.asarray(np.random.default_rng(0).random(n, dtype=np.float32))
    gt.cumulative_sum(x)
    gt.synchronize()
    t0 = time.perf_counter()
    for _ in range(50):
        y = gt.cumulative_sum(x)
    gt.synchronize()
    wall = (time.perf_counter() - t0) / 50
    with gt.profile() as prof:
        y = gt.cumulative_sum(x)
        gt.synchronize()
    gpu = sum(e.gpu_s or 0.0 for e in prof.events)
    del y
    print(f"TARGET_UNITS {ops_scan.TARGET_UNITS} PREFETCH {ops_scan.VECTOR_PREFETCH}: wall {wall * 1e6:.0f} us/call, "
          f"GPU {gpu * 1e6:.0f} us in {len(prof.events)} dispatches "
          f"({[round((e.gpu_s or 0) * 1e6) for e in prof.events]} us), {8 * n / gpu / 1e9:.0f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
