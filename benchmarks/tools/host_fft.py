"""Host cost of warm ``gputensor.fft`` calls beside an eager ``a + b``:
``python -m benchmarks.tools.host_fft [--calls N] [--large]``.

For each call (the kept plan already made: a warm call is a lookup and a replay) it prints the
host microseconds per call spent recording it (``_timing.host_per_call``: calls back to back,
results held, a synchronize after each batch outside the timed part; the best of 7 batches, as
other processes on a shared host only add time), that time over the eager ``a + b`` (fusion
off) of the same process, and the Python function calls per call (cProfile over a batch).
Runs on any adapter; the CPU adapter measures the Python side, the GPU machine its host.
``--large`` adds rfft 64 x 4096, 1024 x 4096 and 2^16 (on the CPU adapter their device work,
which runs on the host, dominates).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
from collections.abc import Callable
from typing import Any

import numpy as np

import gputensor as gt
import gputensor.fft as gfft

from .. import _timing


def calls(large: bool = False) -> list[tuple[str, Callable[[], Any]]]:
    """(label, call) of the timed calls (``large``: the large rfft cases too); the first is the
    baseline."""
    rng = np.random.default_rng(0)
    a = gt.asarray(rng.random(1024, dtype=np.float32))
    b = gt.asarray(rng.random(1024, dtype=np.float32))
    real = {shape: gt.asarray(rng.standard_normal(shape).astype(np.float32))
            for shape in ((1024,), (1009,), (8, 256)) + (((64, 4096), (1024, 4096), (1 << 16,)) if large else ())}
    z = gt.asarray((rng.standard_normal(1024) + 1j * rng.standard_normal(1024)).astype(np.complex64))
    spectrum = gfft.rfft(real[(1024,)])
    square = gt.asarray(rng.standard_normal((64, 64)).astype(np.float32))
    out = [("a + b (eager, the baseline)", lambda: a + b)]
    out += [(f"rfft {'x'.join(map(str, shape))}", lambda x=x: gfft.rfft(x)) for shape, x in real.items()]
    out += [("fft 1024 complex64", lambda: gfft.fft(z)), ("irfft 513 -> 1024", lambda: gfft.irfft(spectrum)),
            ("rfftn 64x64", lambda: gfft.rfftn(square))]
    return out


def function_calls(fn: Callable[[], Any], n: int = 50) -> float:
    """Python function calls per call of ``fn`` (cProfile over ``n`` calls, results held: no
    more than a timed batch held, so that the memory pool has their blocks)."""
    held = []
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(n):
        held.append(fn())
    profile.disable()
    gt.synchronize()
    return pstats.Stats(profile).total_calls / n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.tools.host_fft", description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per timed batch")
    parser.add_argument("--large", action="store_true", help="the large rfft cases too")
    args = parser.parse_args(argv)
    print(f"adapter: {gt._dispatch.adapter_description()}")
    print(f"{'call (warm, fusion off)':<32}{'host us':>9}{'/ a+b':>7}{'py calls':>10}")
    with gt.fusion(False):
        base = None
        for label, fn in calls(args.large):
            fn()
            fn()
            gt.synchronize()
            us = _timing.host_per_call(fn, gt.synchronize, args.calls, batches=7, statistic=min) * 1e6
            base = base or us
            print(f"{label:<32}{us:9.1f}{us / base:7.2f}{function_calls(fn, min(50, args.calls)):10.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
