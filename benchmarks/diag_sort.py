"""Diagnostic (not a benchmark): where the wall time of sort / argsort / cumsum / unique goes.

``python3 -m benchmarks.diag_sort [--small]``: per operation, the host time to record one call
(no sync) and the wall time per call of batches of 1, 4 and 16 calls with one sync (outputs
kept, so large outputs are new pool blocks); the phases of unique_values; cProfile of a few
unique_values calls with the callers of wgpu-native; the cost of creating large buffers; and
every queue.submit / write_buffer of a few calls with the kernels each submit carries.

``--unique``: instead, the phases of unique_values by counting (small value ranges).
``--waits``: instead, a 16M-key sort followed by ``synchronize()`` from an idle device, waiting
as gputensor does ('plain'), after a 5 ms sleep, or after spinning on non-blocking polls. This
is what found the ~10 ms late wake-ups of blocking waits on the H200 (see
``gputensor/_backend/mapping.py`` and benchmarks/RESULTS.md).
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import time

import numpy as np

SMALL = "--small" in sys.argv


def main() -> int:
    import gputensor as gt
    from gputensor import _dispatch

    n = (1 << 16) if SMALL else (1 << 24)
    rng = np.random.default_rng(0)
    xf = gt.asarray(rng.uniform(-1, 1, n).astype(np.float32))
    xi = gt.asarray(rng.integers(0, n // 4, n).astype(np.int32))
    xs = gt.asarray(rng.uniform(-1, 1, 4 * n).astype(np.float32))
    ops = {
        "sort f32": lambda: gt.sort(xf),
        "argsort f32": lambda: gt.argsort(xf, stable=True),
        "cumsum f32 x4": lambda: gt.cumulative_sum(xs),
        "unique i32": lambda: gt.unique_values(xi),
    }
    print(_dispatch.backend())
    if "--unique" in sys.argv:
        unique_counting_phases(gt, xi)
        return 0
    if "--waits" in sys.argv:
        waits(gt, xf)
        return 0
    for name, fn in ops.items():
        for _ in range(3):
            fn()
        gt.synchronize()
        for reps in (1, 4, 16):
            t0 = time.perf_counter()
            keep = [fn() for _ in range(reps)]
            t1 = time.perf_counter()
            gt.synchronize()
            t2 = time.perf_counter()
            del keep
            print(f"{name:14s} x{reps:2d}: record {1e3 * (t1 - t0) / reps:8.3f} ms/call, "
                  f"wall {1e3 * (t2 - t0) / reps:8.3f} ms/call")
    # unique phases
    from gputensor import _set_functions as sf
    from gputensor._backend import ops_gather, ops_sort
    import gputensor._function_kernels as kernels
    from gputensor._array_object import GpuArray
    from gputensor._dtypes import uint32
    for _ in range(3):
        t = [time.perf_counter()]
        keys = GpuArray._empty((n,), uint32, zero=False)
        _dispatch.call(ops_sort.sort_keys, xi._ptr, "int32", n, keys._ptr, None)
        t.append(time.perf_counter())
        plan = _dispatch.call(ops_gather.compact_begin, keys._ptr, n, flag="head", dtype="int32",
                              nan_distinct=False)
        t.append(time.perf_counter())
        u = plan.read_total()
        t.append(time.perf_counter())
        values = GpuArray._empty((u,), xi.dtype)
        plan.write_values(values._ptr, "int32")
        plan.free()
        t.append(time.perf_counter())
        gt.synchronize()
        t.append(time.perf_counter())
        d = np.diff(t) * 1e3
        print("unique phases (ms): sort_keys %.3f, compact_begin %.3f, read_total %.3f, "
              "write %.3f, sync %.3f" % tuple(d))
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(3):
        gt.unique_values(xi)
    prof.disable()
    out = io.StringIO()
    st = pstats.Stats(prof, stream=out)
    st.sort_stats("tottime").print_stats(8)
    st.print_callers("proxy_func")
    print(out.getvalue())
    pool = gt.get_default_memory_pool()
    print("pool stats before", pool.stats if hasattr(pool, "stats") else pool)
    for _ in range(3):
        t0 = time.perf_counter()
        gt.unique_values(xi)
        print(f"unique {1e3 * (time.perf_counter() - t0):.3f} ms", getattr(pool, "stats", None))
    ctx = _dispatch.backend().context
    import wgpu
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
    for size in (1 << 16, 1 << 24, 1 << 26, 1 << 28):
        t0 = time.perf_counter()
        b = ctx.device.create_buffer(size=size, usage=usage)
        t1 = time.perf_counter()
        b.destroy()
        t2 = time.perf_counter()
        m = ctx.device.create_buffer(size=size, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        t3 = time.perf_counter()
        m.destroy()
        print(f"create_buffer {size >> 10} KiB: storage {1e3 * (t1 - t0):.3f} ms, destroy "
              f"{1e3 * (t2 - t1):.3f} ms, map_read {1e3 * (t3 - t2):.3f} ms")
    submits_timeline(gt, xi, xf)
    return 0


def unique_counting_phases(gt, xi) -> None:  # noqa: ANN001
    """Wall time of each phase of unique_values by counting (``_set_functions._unique_by_counting``)
    with a synchronize after each, the whole call with and without the subgroup merge of equal
    buckets in count_values, then GPU time per kernel of one call."""
    from gputensor import _dispatch
    from gputensor._array_object import GpuArray
    from gputensor._backend import ops_gather
    from gputensor._dtypes import uint32

    n = xi.size
    for _ in range(4):
        t = [time.perf_counter()]
        lo, hi = _dispatch.call(ops_gather.key_range, xi._ptr, "int32", n)
        t.append(time.perf_counter())
        span = hi - lo + 1
        hist = GpuArray._empty((span,), uint32)
        _dispatch.call(ops_gather.count_values, xi._ptr, "int32", n, lo, hist._ptr, span)
        gt.synchronize()
        t.append(time.perf_counter())
        plan = _dispatch.call(ops_gather.compact_begin, hist._ptr, span, flag="nonzero", dtype="uint32")
        u = plan.read_total()
        t.append(time.perf_counter())
        values = GpuArray._empty((u,), xi.dtype, zero=False)
        plan.write_values(values._ptr, "int32", lo)
        plan.free()
        gt.synchronize()
        t.append(time.perf_counter())
        d = np.diff(t) * 1e3
        print("unique by counting, phases (ms, each synchronised): key range + readback %.3f, zero + count %.3f, "
              "compact count + readback %.3f, write values %.3f" % tuple(d))
        del values, hist
    probe = ops_gather.subgroup_probe
    for variant in ("default", "no subgroup merge", "default"):
        ops_gather.subgroup_probe = (lambda backend: None) if variant != "default" else probe
        gt.unique_values(xi)
        gt.synchronize()
        times = []
        for _ in range(10):
            t0 = time.perf_counter()
            gt.unique_values(xi)
            gt.synchronize()
            times.append(time.perf_counter() - t0)
        print(f"unique_values + sync, {variant:18s}: median {1e3 * float(np.median(times)):.3f} ms, "
              f"min {1e3 * min(times):.3f} ms")
        with gt.profile() as prof:
            gt.unique_values(xi)
            gt.synchronize()
        per: dict[str, float] = {}
        for e in prof.events:
            per[e.name] = per.get(e.name, 0.0) + (e.gpu_s or 0.0)
        print("  GPU per kernel (ms): " + ", ".join(f"{k} {v * 1e3:.3f}" for k, v in sorted(per.items(), key=lambda kv: -kv[1])))
    ops_gather.subgroup_probe = probe


def waits(gt, xf) -> None:  # noqa: ANN001
    """sort + synchronize from an idle device, waiting in different ways."""
    from gputensor import _dispatch
    from wgpu.backends.wgpu_native._api import libf

    ctx = _dispatch.backend().context
    dev = ctx.device._internal
    from cffi import FFI
    null = FFI().NULL

    def spin() -> int:
        ctx.flush()
        k = 0
        while not libf.wgpuDevicePoll(dev, False, null):
            k += 1
        return k

    def spin_sleep() -> int:
        ctx.flush()
        k = 0
        while not libf.wgpuDevicePoll(dev, False, null):
            k += 1
            time.sleep(2e-5)
        return k

    def sleep5() -> int:
        ctx.flush()
        time.sleep(0.005)
        return 0

    variants = {
        "plain": lambda: 0,
        "sleep5": sleep5,
        "spin": spin,
        "spin_sleep": spin_sleep,
    }
    for label, pre in variants.items():
        for switch in (0.005, 0.0001):
            sys.setswitchinterval(switch)
            out = []
            for _ in range(6):
                time.sleep(0.02)
                t0 = time.perf_counter()
                gt.sort(xf)
                t1 = time.perf_counter()
                k = pre()
                t2 = time.perf_counter()
                gt.synchronize()
                t3 = time.perf_counter()
                out.append(f"{1e3 * (t3 - t0):6.2f} (rec {1e3 * (t1 - t0):.2f} pre {1e3 * (t2 - t1):.2f}/{k} "
                           f"sync {1e3 * (t3 - t2):.2f})")
            print(f"{label:10s} switch {switch}: " + " | ".join(out))
    sys.setswitchinterval(0.005)


def submits_timeline(gt, xi, xf) -> None:  # noqa: ANN001
    """Time every queue.submit and write_buffer of a few calls, with the kernels each submit
    carries."""
    from gputensor import _dispatch
    from gputensor._backend import context as cmod

    ctx = _dispatch.backend().context
    names: list[str] = []
    log: list[str] = []
    orig_record = cmod.WgpuContext.record

    def record(self, name, *a, **k):  # noqa: ANN001, ANN002, ANN003
        names.append(name)
        return orig_record(self, name, *a, **k)

    qtype = type(ctx.queue)
    orig_submit, orig_write = qtype.submit, qtype.write_buffer

    def submit(self, bufs):  # noqa: ANN001
        t0 = time.perf_counter()
        r = orig_submit(self, bufs)
        log.append(f"  submit {1e3 * (time.perf_counter() - t0):7.3f} ms after {len(names)} kernels "
                   f"{sorted(set(names))}")
        names.clear()
        return r

    def write_buffer(self, *a, **k):  # noqa: ANN002, ANN003
        t0 = time.perf_counter()
        r = orig_write(self, *a, **k)
        log.append(f"  write_buffer {1e3 * (time.perf_counter() - t0):7.3f} ms")
        return r

    cmod.WgpuContext.record = record
    qtype.submit, qtype.write_buffer = submit, write_buffer
    try:
        for name, fn in (("unique", lambda: gt.unique_values(xi)), ("sort", lambda: gt.sort(xf)),
                         ("sort+sync", lambda: (gt.sort(xf), gt.synchronize()))):
            for _ in range(3):
                log.clear()
                t0 = time.perf_counter()
                fn()
                t1 = time.perf_counter()
                gt.synchronize()
                print(f"{name}: {1e3 * (t1 - t0):.3f} ms, sync {1e3 * (time.perf_counter() - t1):.3f} ms")
                print("\n".join(log))
    finally:
        cmod.WgpuContext.record = orig_record
        qtype.submit, qtype.write_buffer = orig_submit, orig_write


if __name__ == "__main__":
    raise SystemExit(main())
