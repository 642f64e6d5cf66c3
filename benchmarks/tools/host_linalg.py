"""Host cost of the linalg factorizations: ``python -m benchmarks.tools.host_linalg [--n 4096]
[--batch 10000x8] [--calls 5] [--check]``.

Runs on any adapter (lavapipe included): it times the host, not the device. Per case it reports
the host microseconds one call spends *recording* its dispatches (the call alone, without the
flag readback unless ``--check``; a ``gt.synchronize()`` after every call, outside the timed
part; the best of ``--calls``), and the dispatches and submits one call records (the context's
``stats`` counters). While a call is timed the context's batch bounds (bytes bound, commands
per batch) are lifted, so that a software adapter, whose submits execute the work, does not
put the device's time into the host's (``--submits`` keeps them).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import gputensor as gt
from gputensor import _dispatch
from gputensor._backend import config
from gputensor._backend import submit_policy as _submit_policy


def _spd(shape: tuple[int, ...], n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape + (n, n)).astype(np.float32)
    return (a @ np.swapaxes(a, -1, -2) / n + np.eye(n, dtype=np.float32)).astype(np.float32)


def _stats() -> dict[str, int]:
    return dict(_dispatch.backend().context.stats)


def _lift_bounds() -> tuple[int, int]:
    """Lift the batch bounds of the context module; returns the old (MAX_BATCH, FLUSH_BYTES)."""
    old = (_submit_policy.MAX_BATCH, _submit_policy.FLUSH_BYTES)
    _submit_policy.MAX_BATCH = 1 << 30
    _submit_policy.FLUSH_BYTES = 1 << 62
    ctx = _dispatch.backend().context
    ctx._flush_bytes = ctx._flush_level = 1 << 62
    return old


def measure(label: str, fn, calls: int, submits: bool = False) -> None:  # noqa: ANN001 - a callable
    fn()
    gt.synchronize()
    best = float("inf")
    counts: dict[str, int] = {}
    for _ in range(calls):
        old = None if submits else _lift_bounds()
        before = _stats()
        t0 = time.perf_counter()
        out = fn()
        host = time.perf_counter() - t0
        after = _stats()
        if old is not None:
            _submit_policy.MAX_BATCH, _submit_policy.FLUSH_BYTES = old
            ctx = _dispatch.backend().context
            ctx._flush_bytes = ctx._flush_level = old[1]
        gt.synchronize()
        del out
        best = min(best, host)
        counts = {k: after.get(k, 0) - before.get(k, 0) for k in ("dispatches", "submits", "pipelines_compiled")}
    print(f"{label:<34} host {best * 1e6:10.1f} us/call  dispatches {counts['dispatches']:4d}  "
          f"submits {counts['submits']:3d}  compiled {counts['pipelines_compiled']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.tools.host_linalg", description=__doc__.split("\n")[0])
    parser.add_argument("--n", default="1024,4096", help="orders of the single-matrix cases, comma separated")
    parser.add_argument("--batch", default="10000x8", help="stacks BxN of the batched cases, comma separated")
    parser.add_argument("--ops", default="cholesky,solve,inv", help="operations, comma separated")
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--check", action="store_true", help="with the flag check (GPUTENSOR_LINALG_CHECK=1)")
    parser.add_argument("--submits", action="store_true", help="keep the batch bounds (submits inside the call)")
    args = parser.parse_args(argv)
    print(f"adapter: {_dispatch.adapter_description()}")
    ops = args.ops.split(",")
    with config.override(linalg_check=args.check):
        for n in (int(v) for v in args.n.split(",") if v):
            a = gt.asarray(_spd((), n))
            if "cholesky" in ops:
                measure(f"cholesky n={n}", lambda: gt.linalg.cholesky(a), args.calls, args.submits)
        for spec in (v for v in args.batch.split(",") if v):
            b, n = (int(v) for v in spec.split("x"))
            a = gt.asarray(_spd((b,), n))
            rhs = gt.asarray(np.ones((b, n, 1), np.float32))
            for op in ops:
                fn = {"cholesky": lambda: gt.linalg.cholesky(a), "solve": lambda: gt.linalg.solve(a, rhs),
                      "inv": lambda: gt.linalg.inv(a)}.get(op)
                if fn is not None:
                    measure(f"{op} {b}x{n}x{n}", fn, args.calls, args.submits)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
