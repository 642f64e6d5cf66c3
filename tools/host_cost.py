"""Host time per call of the small operations whose paths the layering touches.

Run from the repository root of each tree to compare (same machine, one after the other; it
imports the gputensor of the current directory)::

    python tools/host_cost.py                          # in this tree
    (cd ../main && python ../struct/tools/host_cost.py)   # another tree, same script

It prints which ``gputensor`` it imported. Cases: an eager binary operator, a unary function,
an axis reduction, a fused (lazy) binary operator, a fused chain materialised, a basic-index
view, a scalar ``__setitem__`` and the readback of a wide strided view (compacted on the
device first).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))  # the tree it is run from

import numpy as np  # noqa: E402

import gputensor as gt  # noqa: E402


def best_us(fn: Callable[[], object], calls: int, rounds: int = 5) -> float:
    """Best mean microseconds per call over ``rounds`` rounds of ``calls`` calls (each round
    ends with a synchronisation, outside the timing)."""
    for _ in range(min(calls, 200)):
        fn()
    gt.synchronize()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
        gt.synchronize()
    return best * 1e6


def main() -> int:
    print(f"gputensor from {Path(gt.__file__).parent}")
    a = gt.asarray(np.ones(256, np.float32))
    b = gt.asarray(np.ones(256, np.float32))
    m = gt.asarray(np.ones((64, 64), np.float32))
    wide = m[:, ::3]
    cases: list[tuple[str, Callable[[], object], int, bool]] = [
        ("a + b (eager)", lambda: a + b, 3000, False),
        ("gt.exp(a) (eager)", lambda: gt.exp(a), 3000, False),
        ("gt.sum(m, axis=1)", lambda: gt.sum(m, axis=1), 1000, False),
        ("a + b (fused, lazy)", lambda: a + b, 3000, True),
        ("((a + b) * 2) materialised", lambda: ((a + b) * 2)._ptr, 1000, True),
        ("m[1:, ::2] (view)", lambda: m[1:, ::2], 3000, True),
        ("a[3] = 1.0", lambda: a.__setitem__(3, 1.0), 1000, True),
        ("m[:, ::3].get()", wide.get, 300, True),
    ]
    for label, fn, calls, fused in cases:
        with gt.fusion(fused):
            print(f"{label:30s} {best_us(fn, calls):9.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
