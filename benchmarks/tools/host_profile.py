"""Where gputensor's host time goes on the current adapter: ``python -m benchmarks.tools.host_profile``.

A diagnostic, not a benchmark: it times the raw wgpu calls that every gputensor operation makes
(encoder, pass, finish, submit, write_buffer, bind group creation, a mapped readback) and runs
cProfile over typical gputensor loops (large binary ops, a chain of small ops, scalar reads,
sort, device copies), printing the functions that take the host's time. Used to find per-call
costs that differ between adapters (they do: see benchmarks/RESULTS.md).
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import time
from collections.abc import Callable

import numpy as np

from .. import _timing

SMALL = '--small' in sys.argv  # tiny sizes, for a smoke run on a software adapter


def _time(fn: Callable[[], object], reps: int) -> float:
    """Median of ``reps`` single-call wall times of ``fn`` in microseconds."""
    return _timing.median_call_s(fn, reps) * 1e6


def _profile(title: str, fn: Callable[[], object], top: int = 22) -> None:
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    fn()
    prof.disable()
    wall = time.perf_counter() - t0
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    text = out.getvalue()
    body = text[text.find("   ncalls"):]
    print(f"\n=== {title}: {wall * 1e3:.1f} ms wall (profiled) ===\n{body}")


def raw_wgpu(ctx) -> None:  # noqa: ANN001 - WgpuContext
    """Per-call cost of the wgpu calls gputensor makes, outside gputensor."""
    import wgpu

    dev, q = ctx.device, ctx.queue
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
    bufs = [dev.create_buffer(size=1 << 20, usage=usage) for _ in range(3)]
    ubo = dev.create_buffer(size=4096, usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST)
    data = bytes(256)
    res: dict[str, float] = {}
    res["create_command_encoder"] = _time(dev.create_command_encoder, 300)
    enc = [dev.create_command_encoder() for _ in range(300)]
    it = iter(enc)
    res["begin_compute_pass+end"] = _time(lambda: next(it).begin_compute_pass().end(), 300)
    it = iter(enc)
    res["encoder.finish (empty)"] = _time(lambda: next(it).finish(), 300)

    def empty_submit() -> None:
        q.submit([dev.create_command_encoder().finish()])

    res["create+finish+submit (empty)"] = _time(empty_submit, 300)
    res["queue.write_buffer 256 B"] = _time(lambda: q.write_buffer(ubo, 0, data), 300)
    ctx.synchronize()
    cmds = [dev.create_command_encoder() for _ in range(200)]
    for e in cmds:
        e.copy_buffer_to_buffer(bufs[0], 0, bufs[1], 0, 1 << 20)
    fin = [e.finish() for e in cmds]
    it = iter(fin)
    res["submit (one 1 MiB copy)"] = _time(lambda: q.submit([next(it)]), 200)
    ctx.synchronize()
    res["synchronize (idle)"] = _time(ctx.synchronize, 50)
    for k, v in res.items():
        print(f"  {k:34s} {v:9.1f} us")


def main() -> int:
    import gputensor as gt
    from gputensor._backend import BinaryOp, get_backend

    be = get_backend()
    ctx = be.context
    print(repr(be))
    print("\n=== raw wgpu calls (median us per call) ===")
    raw_wgpu(ctx)

    n = 1 << (18 if SMALL else 26)
    a, b, c = (be.alloc(4 * n) for _ in range(3))
    be.binary(BinaryOp.ADD, a, b, c, n)
    be.synchronize()

    def big_adds(k: int = 200) -> None:
        for _ in range(k):
            be.binary(BinaryOp.ADD, a, b, c, n)
        be.synchronize()

    def add_big() -> None:
        be.binary(BinaryOp.ADD, a, b, c, n)

    wall = _timing.time_calls(add_big, be.synchronize, reps=200, repeats=1) * 1e6
    print(f"\nbinary add {n} f32: {wall:.1f} us per call (200 calls + sync)")
    stats0 = dict(ctx.stats)
    rec = _timing.host_per_call(add_big, be.synchronize, calls=200, batches=1) * 1e6
    print(f"  recording alone: {rec:.1f} us per call; submits {ctx.stats['submits'] - stats0['submits']}")
    _profile(f"200 x binary add {n} f32 + sync", big_adds)

    small = 1024
    sa, sb, sc = (be.alloc(4 * small) for _ in range(3))

    def small_adds(k: int = 2000) -> None:
        for _ in range(k):
            be.binary(BinaryOp.ADD, sa, sb, sc, small)
        be.synchronize()

    wall = _timing.time_calls(lambda: be.binary(BinaryOp.ADD, sa, sb, sc, small), be.synchronize, reps=2000,
                              repeats=1) * 1e6
    print(f"\nbinary add 1024 f32 (same buffers): {wall:.1f} us per call")
    _profile("2000 x binary add 1024 f32 + sync", small_adds, 15)

    x = gt.asarray(np.random.default_rng(0).random(1024, dtype=np.float32))
    y0 = gt.asarray(np.random.default_rng(1).random(1024, dtype=np.float32))

    def chain(fused: bool) -> None:
        with gt.fusion(fused):
            y = y0
            for _ in range(500):
                y = y * 0.75 + x
            gt.asnumpy(y)

    for fused in (False, True):
        per_op = _timing.time_calls(lambda: chain(fused), lambda: None, reps=1, repeats=1) / 1000 * 1e6
        print(f"\n1000-op chain, fusion {fused}: {per_op:.1f} us per op")
    _profile("1000-op chain, fusion off", lambda: chain(False), 30)

    s = gt.asarray(np.float32(1.5))
    print(f"\nfloat(x) of a ready 0-d array: {_time(lambda: float(s), 300):.1f} us")
    _profile("300 x float(x)", lambda: [float(s) for _ in range(300)], 15)

    big_n = 1 << (24 if SMALL else 30)
    big = be.alloc(big_n)
    big2 = be.alloc(big_n)
    dt = _timing.time_calls(lambda: be.copy_dtod(big2, big, big_n), be.synchronize, reps=10, repeats=1)
    print(f"\ncopy_dtod {big_n >> 20} MiB (copy_buffer_to_buffer): {dt * 1e3:.2f} ms = {2 * (big_n) / dt / 1e9:.0f} GB/s")
    from gputensor._backend import ops_elementwise

    def kernel_copy() -> None:
        ops_elementwise.copy_strided(be, ops_elementwise.ArrayOperand(big, "uint32", (1,)),
                                     ops_elementwise.ArrayOperand(big2, "uint32", (1,)), [big_n // 4])

    dt = _timing.time_calls(kernel_copy, be.synchronize, reps=10, repeats=1)
    print(f"elementwise u32 copy kernel {big_n >> 20} MiB: {dt * 1e3:.2f} ms = {2 * big_n / dt / 1e9:.0f} GB/s")
    dt = _timing.time_calls(lambda: ctx.clear(be.resolve(big, big_n)[0].buffer, 0, big_n), be.synchronize,
                            reps=10, repeats=1)
    print(f"clear_buffer {big_n >> 20} MiB: {dt * 1e3:.2f} ms = {(big_n) / dt / 1e9:.0f} GB/s")

    keys = gt.asarray(np.random.default_rng(2).random(1 << (18 if SMALL else 24), dtype=np.float32))
    gt.sort(keys)
    gt.synchronize()
    _profile("3 x sort f32 + sync", lambda: ([gt.sort(keys) for _ in range(3)], gt.synchronize()), 25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
