"""Stress (not a benchmark): reductions over more than 2**31 - 1 elements on a large GPU.

``python -m benchmarks.stress_large [--elements 3221225472] [--cols 32768] [--block-rows 16384]``
fills a float32 array of ``--elements`` (default 3 * 2**30: 12 GiB) on the device, row block by
row block (a smooth pattern from broadcast aranges, ``sin(0.37 r + 0.011 c) * 3 + 1``), plants a
unique maximum and minimum past index 2**31, and reads it back to the host once. It then times,
over the flat array (more reduced elements than one dispatch takes: the split path):
``gt.sum``, ``gt.mean``, ``gt.var``, ``gt.std``, ``gt.max``, ``gt.min``, ``gt.argmax``, ``gt.argmin``,
``gt.any``; over the (N, 1) view reduced along its last axis (more outputs than one dispatch:
the output split) ``gt.sum``; and with a NaN planted past 2**31 ``gt.max`` and ``gt.argmax``. Each
is checked against a float64 NumPy reference computed block-wise from the host copy (two-pass
mean/variance; first occurrences for argmax/argmin). Prints one JSON line per check (``op``,
``seconds`` of the call including synchronisation and the scalar's readback, ``value``,
``reference``, ``rel_error``, ``ok``; tolerances: sum 1e-4 of the sum of |x|, mean/var/std
1e-4 relative, the rest exact) and a final ``{"stress_large": ..., "ok": ...}`` line; exit status 1
when a check fails or raises. ``GPUTENSOR_REDUCE_MAX_COUNT=1000`` with a small ``--elements``
runs the same split paths on any adapter. ``--also-scan-sort`` also tries ``gt.cumulative_sum`` and ``gt.sort`` of the flat array (rows marked
``informational``: not counted in ``ok``; the sort backend refuses rows of 2**31 or more elements). Needs about 3x ``--elements`` * 4 bytes of device memory (the
array, the (N, 1) output) and 2x that of host memory.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import gputensor as gt


def _fill(n: int, cols: int, block_rows: int) -> gt.GpuArray:
    """A (n // cols, cols) float32 array filled on the device block by block."""
    rows = n // cols
    x = gt.empty((rows, cols), dtype=gt.float32)
    c = gt.reshape(gt.arange(cols, dtype=gt.float32), (1, cols)) * 0.011
    for r0 in range(0, rows, block_rows):
        r1 = min(rows, r0 + block_rows)
        r = gt.reshape(gt.arange(r0, r1, dtype=gt.float32), (r1 - r0, 1)) * 0.37
        x[r0:r1] = gt.sin(r + c) * 3 + 1
    gt.synchronize()
    return x


def _host_blocks(x: gt.GpuArray, block_rows: int) -> list[np.ndarray]:
    return [gt.asnumpy(x[r0:r0 + block_rows]).reshape(-1) for r0 in range(0, x.shape[0], block_rows)]


def _reference(blocks: list[np.ndarray]) -> dict[str, Any]:
    """float64 statistics of the concatenated blocks, block by block."""
    n = sum(b.size for b in blocks)
    total = math.fsum(float(b.sum(dtype=np.float64)) for b in blocks)
    mean = total / n
    m2 = math.fsum(float(np.square(b.astype(np.float64) - mean).sum()) for b in blocks)
    ref: dict[str, Any] = {"sum": total, "mean": mean, "var": m2 / n, "std": math.sqrt(m2 / n)}
    offsets = np.cumsum([0] + [b.size for b in blocks])
    for name, pick, arg in (("max", np.max, np.argmax), ("min", np.min, np.argmin)):
        values = [float(pick(b)) for b in blocks]
        best = (max if name == "max" else min)(values)
        j = values.index(best)  # the first block holding it: first occurrence overall
        ref[name] = best
        ref["arg" + name] = int(offsets[j] + arg(blocks[j]))
    ref["any"] = any(bool(b.any()) for b in blocks)
    return ref



def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    gt.synchronize()
    t0 = time.perf_counter()
    out = fn()
    value = gt.asnumpy(out)
    return value, time.perf_counter() - t0


def _check(op: str, fn: Callable[[], Any], reference: Any, compare: Callable[[Any, Any], bool],
           results: list[dict[str, Any]]) -> None:
    try:
        value, seconds = _timed(fn)
        scalar = value.item() if value.size == 1 else None
        if isinstance(scalar, float) and math.isnan(scalar):
            scalar = "nan"
        ok = bool(compare(value, reference))
        row = {"op": op, "seconds": round(seconds, 4), "value": scalar, "reference": reference, "ok": ok}
        if isinstance(reference, float) and scalar is not None and reference:
            row["rel_error"] = abs(float(scalar) - reference) / abs(reference)
    except Exception as exc:  # noqa: BLE001 - reported: the check fails
        row = {"op": op, "error": f"{type(exc).__name__}: {str(exc)[:300]}", "ok": False}
    results.append(row)
    print(json.dumps(row), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=3 * 2**30)
    parser.add_argument("--cols", type=int, default=32768)
    parser.add_argument("--block-rows", type=int, default=16384)
    parser.add_argument("--also-scan-sort", action="store_true",
                        help="also try gt.cumulative_sum and gt.sort of the flat array (reported, not counted in ok)")
    args = parser.parse_args(argv)
    n = args.elements - args.elements % args.cols
    print(f"{n} float32 elements ({n * 4 / 2**30:.1f} GiB)", flush=True)
    t0 = time.perf_counter()
    grid = _fill(n, args.cols, args.block_rows)
    flat = gt.reshape(grid, (n,))
    past = 2**31 if n > 2**31 + 2**20 else n // 2  # (a small --elements: the middle)
    hi, lo = n - 5, past + 12345  # unique extremes past the int32 range
    flat[hi] = 100.0
    flat[lo] = -100.0
    gt.synchronize()
    print(f"filled in {time.perf_counter() - t0:.2f} s", flush=True)
    t0 = time.perf_counter()
    blocks = _host_blocks(grid, args.block_rows)
    ref = _reference(blocks)
    print(f"host copy and float64 reference in {time.perf_counter() - t0:.2f} s", flush=True)

    def rel(tol: float) -> Callable[[Any, Any], bool]:
        return lambda v, r: abs(float(v) - r) <= tol * max(abs(r), 1.0)

    abs_sum = math.fsum(float(np.abs(b).sum(dtype=np.float64)) for b in blocks)
    results: list[dict[str, Any]] = []
    _check("sum", lambda: gt.sum(flat), ref["sum"],
           lambda v, r: abs(float(v) - r) <= 1e-4 * abs_sum, results)
    _check("mean", lambda: gt.mean(flat), ref["mean"], rel(1e-4), results)
    _check("var", lambda: gt.var(flat), ref["var"], rel(1e-4), results)
    _check("std", lambda: gt.std(flat), ref["std"], rel(1e-4), results)
    _check("max", lambda: gt.max(flat), ref["max"], lambda v, r: float(v) == r, results)
    _check("min", lambda: gt.min(flat), ref["min"], lambda v, r: float(v) == r, results)
    _check("argmax", lambda: gt.argmax(flat), ref["argmax"], lambda v, r: int(v) == r, results)
    _check("argmin", lambda: gt.argmin(flat), ref["argmin"], lambda v, r: int(v) == r, results)
    _check("any", lambda: gt.any(flat), ref["any"], lambda v, r: bool(v) == r, results)
    _check("sum axis=1 of (N, 1)", lambda: gt.sum(gt.reshape(flat, (n, 1)), axis=1)[hi], 100.0,
           lambda v, r: float(v) == r, results)
    _check("sum axis=0 of the 2-D grid (spot column 7)", lambda: gt.sum(grid, axis=0)[7],
           math.fsum(float(b.reshape(-1, args.cols)[:, 7].astype(np.float64).sum()) for b in blocks),
           rel(1e-4), results)
    nan_at = past + 7
    flat[nan_at] = float("nan")
    _check("max with a NaN", lambda: gt.max(flat), "nan", lambda v, r: bool(np.isnan(v).all()), results)
    _check("argmax with a NaN", lambda: gt.argmax(flat), nan_at, lambda v, r: int(v) == r, results)
    ok = all(r["ok"] for r in results)
    if args.also_scan_sort:
        info: list[dict[str, Any]] = []
        ref_total = math.fsum(float(b.sum(dtype=np.float64)) for b in blocks[:1])  # first block, NaN-free
        rows0 = blocks[0].size
        _check("cumulative_sum (end of the first block)", lambda: gt.cumulative_sum(flat)[rows0 - 1], ref_total,
               rel(1e-4), info)
        _check("sort (is sorted at 3 spots)", lambda: gt.sort(flat)[gt.asarray([0, n // 2, n - 2])], "ascending",
               lambda v, r: bool(v[0] <= v[1] <= v[2]), info)
        results.extend(dict(r, informational=True) for r in info)
    print(json.dumps({"stress_large": results, "ok": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
