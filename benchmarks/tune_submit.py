"""How batch submission policy and kernel choice change large-op throughput: ``python -m benchmarks.tune_submit``.

A diagnostic run (not the benchmark table): for several ``FLUSH_BYTES`` bounds it times 100
back-to-back large operations (binary add, relu, sum over 256 MiB float32) and a device copy of
1 GiB, wall clock with one synchronise at the end, beside torch doing the same; then it reads the
kernels' own GPU time with ``gt.profile()`` timestamps, and times the wgpu calls of one submit
(end pass, finish, write_buffer, submit) with and without a GPU backlog. ``--data``: only the
GPU time per kernel of sort, argsort, cumulative_sum and unique_values; ``--small``: tiny sizes.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

SMALL = "--small" in sys.argv
DATA_ONLY = "--data" in sys.argv  # only the data-dependent operations' kernel times


def data_dependent(gt) -> None:  # noqa: ANN001 - the gputensor module
    """GPU time per kernel of sort, argsort, cumulative_sum and unique_values (timestamps)."""
    print("\n=== data-dependent operations: GPU time per kernel (timestamps, one call each) ===")
    rng = np.random.default_rng(3)
    m = 1 << (16 if SMALL else 24)
    keys = gt.asarray(rng.random(m, dtype=np.float32))
    ikeys = gt.asarray(rng.integers(0, m // 4, m, dtype=np.int32))
    scan_in = gt.asarray(rng.random(4 * m, dtype=np.float32))
    for label, fn in (("sort f32", lambda: gt.sort(keys)), ("argsort f32", lambda: gt.argsort(keys)),
                      ("cumulative_sum f32 x4", lambda: gt.cumulative_sum(scan_in)),
                      ("unique_values i32", lambda: gt.unique_values(ikeys))):
        fn()
        gt.synchronize()
        t0 = time.perf_counter()
        fn()
        gt.synchronize()
        wall = time.perf_counter() - t0
        with gt.profile() as prof:
            fn()
            gt.synchronize()
        total = sum(e.gpu_s or 0.0 for e in prof.events)
        per: dict[str, float] = {}
        for e in prof.events:
            per[e.name] = per.get(e.name, 0.0) + (e.gpu_s or 0.0)
        print(f"{label:22s} wall {wall * 1e3:7.3f} ms, GPU {total * 1e3:7.3f} ms in {len(prof.events)} dispatches: "
              + ", ".join(f"{k} {v * 1e3:.3f}" for k, v in sorted(per.items(), key=lambda kv: -kv[1])))


def main() -> int:
    import gputensor as gt
    from gputensor._backend import BinaryOp, ReduceOp, UnaryOp, context, get_backend, ops_elementwise

    be = get_backend()
    ctx = be.context
    print(repr(be))
    if DATA_ONLY:
        data_dependent(gt)
        return 0
    n = 1 << (18 if SMALL else 26)
    reps = 20 if SMALL else 100
    a, b, c = (be.alloc(4 * n) for _ in range(3))
    r = be.alloc(4)
    big_n = 1 << (22 if SMALL else 30)
    src, dst = be.alloc(big_n), be.alloc(big_n)

    def add() -> None:
        be.binary(BinaryOp.ADD, a, b, c, n)

    def relu() -> None:
        be.unary(UnaryOp.RELU, a, c, n)

    def rsum() -> None:
        be.reduce(ReduceOp.SUM, a, r, (n,), 0)

    def copy_buf() -> None:
        be.copy_dtod(dst, src, big_n)

    def copy_kernel() -> None:
        ops_elementwise.copy_strided(be, ops_elementwise.ArrayOperand(src, "float32", (1,)),
                                     ops_elementwise.ArrayOperand(dst, "float32", (1,)), [big_n // 4])

    cases = {"add": (add, 12 * n), "relu": (relu, 8 * n), "sum": (rsum, 4 * n),
             "copy_dtod": (copy_buf, 2 * big_n), "copy_kernel_f32": (copy_kernel, 2 * big_n)}
    for fn, _ in cases.values():
        fn()
    be.synchronize()

    def timed(fn, k: int) -> float:
        be.synchronize()
        t0 = time.perf_counter()
        for _ in range(k):
            fn()
        be.synchronize()
        return (time.perf_counter() - t0) / k

    print(f"\n=== wall time per call, {reps} calls + one sync (GB/s) ===")
    default = context.FLUSH_BYTES
    for fb in (32 << 20, 256 << 20, 1 << 30, 4 << 30, 1 << 40):
        context.FLUSH_BYTES = fb
        row = []
        for name, (fn, nbytes) in cases.items():
            k = reps if not name.startswith("copy") else max(5, reps // 5)
            times = [timed(fn, k) for _ in range(3)]
            t = statistics.median(times)
            row.append(f"{name} {t * 1e6:8.1f} us {nbytes / t / 1e9:7.0f}")
        print(f"FLUSH_BYTES {fb >> 20:>8} MiB | " + " | ".join(row))
    context.FLUSH_BYTES = default

    try:
        import torch

        x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
        z = torch.empty_like(x)
        s = torch.empty((), device="cuda")
        bs, bd = torch.empty(big_n // 4, device="cuda"), torch.empty(big_n // 4, device="cuda")
        tcases = {"add": (lambda: torch.add(x, y, out=z), 12 * n),
                  "relu": (lambda: torch.clamp(x, min=0, out=z), 8 * n),
                  "sum": (lambda: torch.sum(x, 0, out=s), 4 * n),
                  "copy": (lambda: bd.copy_(bs), 2 * big_n)}
        row = []
        for name, (fn, nbytes) in tcases.items():
            fn()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            torch.cuda.synchronize()
            t = (time.perf_counter() - t0) / reps
            row.append(f"{name} {t * 1e6:8.1f} us {nbytes / t / 1e9:7.0f}")
        print("torch                 | " + " | ".join(row))
    except Exception as exc:  # noqa: BLE001 - diagnostic: torch is optional
        print(f"torch: {exc}")

    print("\n=== short batches from idle (the harness's regime): ms per call of each of 6 batches ===")
    for fmax in (32 << 20, 2 << 30):
        context.FLUSH_BYTES_MAX = fmax
        for name in ("add", "sum"):
            fn = cases[name][0]
            k = 68
            batches = []
            for _ in range(6):
                time.sleep(0.02)  # the gap the harness leaves between batches (checks, bookkeeping)
                batches.append(timed(fn, k) * 1e3)
            print(f"FLUSH_BYTES_MAX {fmax >> 20:>5} MiB {name:4s}: " + " ".join(f"{b:.3f}" for b in batches))
    context.FLUSH_BYTES_MAX = 2 << 30

    print("\n=== GPU time per kernel (timestamps) ===")
    for name, (fn, nbytes) in cases.items():
        be.synchronize()
        with gt.profile() as prof:
            for _ in range(10):
                fn()
            be.synchronize()
        events = [e for e in prof.events if getattr(e, "gpu_s", None)]
        if not events:
            print(f"{name}: no GPU timestamps ({getattr(prof, 'note', '')})")
            continue
        per_call = sum(e.gpu_s for e in events) / 10
        print(f"{name:16s} {per_call * 1e6:8.1f} us  {nbytes / per_call / 1e9:7.0f} GB/s  "
              f"({len(events) / 10:.1f} dispatches per call: {sorted({e.name for e in events})})")

    data_dependent(gt)

    print("\n=== one submit, piece by piece (median us; with a GPU backlog of large adds) ===")
    for backlog in (False, True):
        parts: dict[str, list[float]] = {"record": [], "end+finish": [], "write_ring": [], "submit": []}
        for _ in range(30 if not SMALL else 5):
            if backlog:
                for _ in range(3):
                    add()
            t0 = time.perf_counter()
            be.binary(BinaryOp.ADD, a, b, c, 1024)
            t1 = time.perf_counter()
            with ctx._lock:
                enc, cp = ctx._encoder, ctx._pass
                used = ctx._ring_used
                ctx._encoder = ctx._pass = ctx._pass_pipeline = None
                ctx._recorded = ctx._pending_bytes = ctx._ring_used = ctx._upload_used = 0
                keep, ctx._keepalive = ctx._keepalive, []
                if cp is not None:
                    cp.end()
                cb = enc.finish()
                t2 = time.perf_counter()
                ctx.queue.write_buffer(ctx._ring, 0, ctx._ring_data, 0, used)
                t3 = time.perf_counter()
                ctx.queue.submit([cb])
                t4 = time.perf_counter()
                del keep
            parts["record"].append(t1 - t0)
            parts["end+finish"].append(t2 - t1)
            parts["write_ring"].append(t3 - t2)
            parts["submit"].append(t4 - t3)
        be.synchronize()
        print(f"backlog {backlog!s:5}: " + "  ".join(f"{k} {statistics.median(v) * 1e6:7.1f}" for k, v in parts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
