"""Stress (not a benchmark): fill the device until it is full, then check that it recovers.

``python -m benchmarks.stress_oom [--chunk-mib 1024] [--max-gib 512] [--limit SIZE]`` allocates
arrays of ``--chunk-mib`` MiB, each filled on the device (so its memory is really committed),
until gputensor raises ``MemoryError`` (or ``--max-gib`` is reached), then frees them, releases
the pool's cache and checks that allocations and a checked computation work again; twice, so a
second fill shows whether the memory really came back. ``--limit`` sets the pool limit first
(``gt.get_default_memory_pool().set_limit``; e.g. ``8G``), to measure the limit path instead of the
device's own. Prints one line per round and a JSON summary: bytes held at the ``MemoryError``,
time to reach it, time of the failing call itself, recovery time, the process's resident set
(on some drivers device memory spills into host memory) and any other exception (a crash or a
lost device is a failure of the library).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time

import gputensor as gt
from gputensor._backend.memory_pool import parse_size


def _rss_mib() -> int:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return -1


def fill_round(chunk: int, max_bytes: int) -> dict[str, object]:
    """Fill until MemoryError (or ``max_bytes``), free, recover; the measurements."""
    held: list[gt.GpuArray] = []
    start = time.perf_counter()
    failing_call = None
    error = None
    other = None
    while len(held) * chunk < max_bytes:
        t0 = time.perf_counter()
        try:
            held.append(gt.full((chunk,), len(held) % 251, dtype=gt.uint8))
            if len(held) % 8 == 0:
                gt.synchronize()
                print(f"  {len(held) * chunk / 2**30:8.1f} GiB held, RSS {_rss_mib()} MiB", flush=True)
        except MemoryError as exc:
            failing_call = time.perf_counter() - t0
            error = str(exc).splitlines()[0][:300]
            break
        except Exception as exc:  # noqa: BLE001 - reported: anything but MemoryError is a bug
            other = f"{type(exc).__name__}: {str(exc)[:300]}"
            break
    to_error = time.perf_counter() - start
    peak = len(held) * chunk
    # every held array still holds its value
    ks = sorted({0, len(held) // 2, len(held) - 1}) if held else []
    intact = all(int(gt.max(held[k])) == int(gt.min(held[k])) == k % 251 for k in ks)
    t0 = time.perf_counter()
    del held
    gc.collect()
    gt.get_default_memory_pool().free_all_blocks()
    gt.synchronize()
    again = [gt.full((chunk,), 3, dtype=gt.uint8) for _ in range(4)]
    recovered = all(int(gt.sum(gt.astype(a, gt.uint32))) == 3 * chunk for a in again)
    recovery = time.perf_counter() - t0
    del again
    gc.collect()
    return {"held_gib": round(peak / 2**30, 2), "seconds_to_error": round(to_error, 2),
            "failing_call_seconds": None if failing_call is None else round(failing_call, 4),
            "memory_error": error, "other_exception": other, "values_intact": intact,
            "recovered": recovered, "recovery_seconds": round(recovery, 2), "rss_mib": _rss_mib()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunk-mib", type=int, default=1024)
    parser.add_argument("--max-gib", type=float, default=512.0)
    parser.add_argument("--limit", type=str, default=None, help="pool limit, e.g. 8G")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    pool = gt.get_default_memory_pool()
    if args.limit:
        pool.set_limit(parse_size(args.limit))
    chunk = args.chunk_mib << 20
    print(f"adapter: {gt.Device().adapter}; chunk {args.chunk_mib} MiB; pool limit {pool.get_limit()}")
    rounds = []
    for r in range(args.rounds):
        result = fill_round(chunk, int(args.max_gib * 2**30))
        rounds.append(result)
        print(f"round {r}: {result}", flush=True)
    ok = all(r["other_exception"] is None and r["recovered"] and r["values_intact"] for r in rounds)
    print(json.dumps({"stress_oom": rounds, "ok": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
