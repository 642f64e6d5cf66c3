"""Host cost of ``gt.tril`` / ``gt.triu``: microseconds of host time per call (the calls only,
then one synchronize outside the timed loop; with fusion on the result is lazy and the
discarded ones are never computed) and per call including the device work (results kept
and computed by ``synchronize``). ``GPUTENSOR_FUSION=0`` times the eager path.

Usage: ``python -m benchmarks.tools.host_tril [n ...]`` (default n = 1024 4096).
"""

from __future__ import annotations

import sys
import time

import gputensor as gt


def measure(n: int, reps: int) -> tuple[float, float, float]:
    """(host µs per tril call, host µs per triu call, µs per tril call with the device work)."""
    x = gt.ones((n, n), dtype=gt.float32)
    for fn in (gt.tril, gt.triu):  # warm the pipelines and plans
        fn(x, k=1)
    gt.synchronize()
    host = []
    for fn in (gt.tril, gt.triu):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn(x, k=1)
        host.append((time.perf_counter() - t0) / reps * 1e6)
        gt.synchronize()
    t0 = time.perf_counter()
    kept = [gt.tril(x, k=1) for _ in range(reps)]  # kept alive: synchronize computes them
    gt.synchronize()
    del kept
    total = (time.perf_counter() - t0) / reps * 1e6
    return host[0], host[1], total


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [1024, 4096]
    for n in sizes:
        reps = 20 if n <= 1024 else 5
        tril_us, triu_us, total_us = measure(n, reps)
        print(f"n={n:5d}  host tril {tril_us:9.1f} us  host triu {triu_us:9.1f} us  "
              f"tril+device {total_us:10.1f} us")


if __name__ == "__main__":
    main()
