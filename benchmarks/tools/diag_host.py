"""Where the host time of public calls goes when their results are held and the device is busy:
``python -m benchmarks.tools.diag_host [--quick] [--only ID,...] [--calls N] [--no-device]``.

A diagnostic, not a benchmark. For each public-API case of ``benchmarks/api.py`` (the harness's
inputs and calls; ``--only`` picks cases by id prefix) it runs batches as the harness does --
one discarded batch, then timed batches of ``--calls`` calls (default: the harness's choice,
about 0.05 s of calls, at most 2000, results held until the sync that ends the batch) -- and
prints, per call:

* ``host``: median and 90th percentile of the single calls' host times, and their mean (what
  the harness reports), beside ``held=0``: the same calls with each result dropped at once;
* ``wall``: the batch from its first call to its sync returned, per call;
* with the engine's entry points timed (perf_counter around the context's, the queue's, the
  memory pool's and the mapper's methods, patched on the instances for one more batch):
  submits and their host µs (split into the compute pass's end, the encoder's finish, the
  parameter ring's ``write_buffer`` and the queue's submit), bind groups made, device buffers
  made, pool misses, device waits, Python garbage collections (full ones apart; torch is
  imported first where installed, as in the harness's process), the share of the loop's host
  time that none of these account for, and the batch's closing sync (per call).

Then (unless ``--no-device``) what the device spends per dispatch in a batch, measured from the
host: ``n`` eager adds (fusion off) recorded first, then the batch's submit (``flush``: the
encoder's work in wgpu-native and the submit) and the wait timed apart, for n = 1 and n = 64
(one batch), each result held (distinct outputs) or dropped (the pool hands the same block to
every dispatch: a write-after-write between neighbours), with and without ``gt.profile``
timestamps; ``(t(64) - t(1)) / 63`` is the time per dispatch when the host is out of the way.
And the sizes of the submits of a batch of large adds under ``submit_bytes`` values.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

#: Per-call counters of the instrumented batch, in print order: (key, column title).
COLUMNS = (
    ("submits", "submits"), ("flush_us", "flush µs"), ("end_pass_us", "end pass"), ("finish_us", "finish"),
    ("write_buffer_us", "write_buf"), ("submit_us", "submit"), ("bind_groups", "bind grp"),
    ("bind_group_us", "bg µs"), ("buffers", "buffers"), ("buffer_us", "buf µs"), ("pool_misses", "pool miss"),
    ("pool_us", "pool µs"), ("waits", "waits"), ("wait_us", "wait µs"), ("gc", "gc"), ("gc_us", "gc µs"),
    ("gc2", "full gc"), ("gc2_us", "full gc µs"),
    ("dispatches", "dispatches"), ("other_us", "other µs"), ("sync_us", "sync µs"),
)
#: The fusion engine's entry points timed in the same batch (nested in one another and in the
#: columns above: not subtracted from ``other µs``).
FUSION_COLUMNS = (
    ("materialize", "materialize"), ("materialize_us", "µs"), ("bound_pending", "bound_pending"),
    ("bound_pending_us", "µs"), ("resolve_pending", "resolve_pending"), ("resolve_pending_us", "µs"),
    ("flush_storage", "flush_storage"), ("flush_storage_us", "µs"),
)


class _Probe:
    """Timers and counters patched onto one context, its queue, pool and mapper (``install``;
    ``remove`` puts everything back)."""

    def __init__(self, ctx: Any, pool: Any) -> None:
        self.ctx = ctx
        self.pool = pool
        self.spent: dict[str, float] = {}
        self.counts: dict[str, int] = {}
        self._patched: list[tuple[Any, str, Any]] = []
        self._queue: Any = None
        self._gc_start = 0.0

    def _timed(self, key: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        spent, counts = self.spent, self.counts
        clock = time.perf_counter

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[key] = spent.get(key, 0.0) + clock() - t0
                counts[key] = counts.get(key, 0) + 1
        return wrapper

    def _patch(self, obj: Any, name: str, key: str) -> None:
        if obj is None or not hasattr(obj, name):
            return
        self._patched.append((obj, name, obj.__dict__.get(name) if hasattr(obj, "__dict__") else None))
        setattr(obj, name, self._timed(key, getattr(obj, name)))

    def _gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_start = time.perf_counter()
        else:
            spent = time.perf_counter() - self._gc_start
            self.spent["gc"] = self.spent.get("gc", 0.0) + spent
            self.counts["gc"] = self.counts.get("gc", 0) + 1
            if info.get("generation") == 2:
                self.spent["gc2"] = self.spent.get("gc2", 0.0) + spent
                self.counts["gc2"] = self.counts.get("gc2", 0) + 1

    def install(self) -> None:
        from ..host_cost import _QueueProxy

        ctx = self.ctx
        self._patch(ctx, "flush", "flush")
        calls = getattr(ctx, "_calls", None)
        for name in ("end_pass", "finish", "submit"):
            self._patch(calls, name, name)
        self._patch(ctx, "_create_bind_group", "bind_group")
        self._patch(ctx, "_wait", "wait")
        self._patch(ctx._mapper, "wait", "wait")
        self._patch(self.pool, "malloc", "pool")
        self._patch(self.pool, "_allocate", "buffer")
        from gputensor import _fusion

        for name in ("materialize", "resolve_pending", "bound_pending", "_flush_storage"):
            self._patch(_fusion, name, name.strip("_"))
        queue = self._queue = ctx.queue
        ctx.queue = _QueueProxy(queue, {"write_buffer": self._timed("write_buffer", queue.write_buffer)})
        gc.callbacks.append(self._gc)

    def remove(self) -> None:
        gc.callbacks.remove(self._gc)
        self.ctx.queue = self._queue
        for obj, name, before in reversed(self._patched):
            if before is None:
                delattr(obj, name)
            else:
                setattr(obj, name, before)
        self._patched.clear()

    def reset(self) -> None:
        self.spent.clear()
        self.counts.clear()


def _batch(run: Callable[[int], Any], n: int, sync: Callable[[], None], hold: bool = True,
           before_sync: Callable[[], None] | None = None) -> tuple[list[float], float]:
    """Per-call host seconds of ``run(0..n-1)`` (results held until the sync when ``hold``) and
    the batch's wall seconds per call (first call to the sync returned); ``before_sync`` is
    called between the last call and the sync."""
    clock = time.perf_counter
    held: list[Any] = []
    times = []
    t0 = clock()
    for i in range(n):
        a = clock()
        out = run(i)
        times.append(clock() - a)
        if hold:
            held.append(out)
        del out
    if before_sync is not None:
        before_sync()
    sync()
    wall = (clock() - t0) / n
    del held
    return times, wall


def _case_run(op: Any, host: dict[str, np.ndarray], gt: Any) -> Callable[[int], Any]:
    args = [gt.asarray(v) for v in host.values()]
    fn = op.gt
    return lambda i: fn(gt, *args)


def held_batches(ids: list[str], quick: bool, calls: int | None, budget_s: float) -> list[dict[str, Any]]:
    """For each case id: per-call host times (held and dropped results), wall, and the
    instrumented batch's counters per call."""
    import gputensor as gt
    from gputensor._backend import get_backend

    from .. import api
    from .._harness import matches

    backend = get_backend()
    ctx = backend.context
    pool = backend.memory_pool
    probe = _Probe(ctx, pool)
    ops = [op for op in api.ops(quick) if any(matches(op.id, p) for p in ids)]
    rows = []
    started = time.perf_counter()
    for op in ops:
        if time.perf_counter() - started > budget_s:
            rows.append({"id": op.id, "skipped": "budget"})
            continue
        rng = np.random.default_rng(0)
        host = op.inputs(rng)
        run = _case_run(op, host, gt)
        out_bytes = float(op.out_bytes(host)) if op.out_bytes else float(next(iter(host.values())).nbytes)
        run(0)
        gt.synchronize()
        t = time.perf_counter()
        for i in range(8):
            run(i)
        gt.synchronize()
        one = max((time.perf_counter() - t) / 8, 1e-6)
        n = calls or int(max(1, min(2000, 0.05 / one)))
        if out_bytes > 4 << 20:
            n = min(n, max(2, int((4 << 30) // out_bytes)))
        _batch(run, n, gt.synchronize)  # discarded: pools and caches warm
        plain = [_batch(run, n, gt.synchronize) for _ in range(3)]
        dropped = _batch(run, n, gt.synchronize, hold=False)
        stats0 = dict(ctx.stats)
        misses0 = pool.stats.get("misses", 0)
        probe.reset()
        probe.install()
        marks: list[Any] = []

        def mark() -> None:  # the loop's counters, before the sync adds its own
            marks.append((dict(probe.counts), dict(probe.spent), dict(ctx.stats), pool.stats.get("misses", 0)))

        try:
            t_sync = time.perf_counter()
            times, wall = _batch(run, n, gt.synchronize, before_sync=mark)
            t_sync = time.perf_counter() - t_sync - sum(times)
        finally:
            probe.remove()
        counts, spent, stats1, misses1 = marks[0]
        host_s = [statistics.mean(t) for t, _ in plain]
        per = {k: v / n for k, v in counts.items()}
        us = {k: v / n * 1e6 for k, v in spent.items()}
        row = {
            "id": op.id, "n": n,
            "host_us": statistics.median(host_s) * 1e6,
            "host_median_us": statistics.median(plain[1][0]) * 1e6,
            "host_p90_us": sorted(plain[1][0])[int(0.9 * (n - 1))] * 1e6,
            "host_max_us": max(plain[1][0]) * 1e6,
            "dropped_us": statistics.mean(dropped[0]) * 1e6,
            "wall_us": statistics.median(w for _, w in plain) * 1e6,
            "instrumented_us": statistics.mean(times) * 1e6,
            "submits": (stats1["submits"] - stats0["submits"]) / n,
            "dispatches": (stats1["dispatches"] - stats0["dispatches"]) / n,
            "bind_groups": (stats1["bind_groups_created"] - stats0["bind_groups_created"]) / n,
            "pool_misses": (misses1 - misses0) / n,
            "sync_us": t_sync / n * 1e6,
            "buffers": per.get("buffer", 0.0),
            "waits": per.get("wait", 0.0), "gc": per.get("gc", 0.0), "gc2": per.get("gc2", 0.0),
        }
        for key in ("flush", "end_pass", "finish", "write_buffer", "submit", "bind_group", "buffer", "pool",
                    "wait", "gc", "gc2", "materialize", "resolve_pending", "bound_pending", "flush_storage"):
            row[f"{key}_us"] = us.get(key, 0.0)
            row.setdefault(key, per.get(key, 0.0))
        # host time inside the loop that no probe accounts for (the flush contains the others;
        # a wait or a submit inside the loop counts once)
        accounted = sum(us.get(k, 0.0) for k in ("flush", "bind_group", "pool", "wait", "gc"))
        row["other_us"] = row["instrumented_us"] - accounted
        rows.append(row)
        del run, host
        gt.synchronize()
        pool.free_all_blocks()
    return rows


def format_held(rows: list[dict[str, Any]]) -> str:
    """``held_batches``' rows as two Markdown tables."""
    lines = ["| case | calls | host µs (mean) | median | p90 | max | held=0 | wall µs | instrumented |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['id']} | skipped ({r['skipped']}) |||||||")
            continue
        lines.append(f"| {r['id']} | {r['n']} | {r['host_us']:.1f} | {r['host_median_us']:.1f} | "
                     f"{r['host_p90_us']:.1f} | {r['host_max_us']:.0f} | {r['dropped_us']:.1f} | "
                     f"{r['wall_us']:.1f} | {r['instrumented_us']:.1f} |")
    lines += ["", "per call, instrumented batch (µs columns are host time inside the named calls):", "",
              "| case | " + " | ".join(title for _, title in COLUMNS) + " |",
              "|---|" + "---|" * len(COLUMNS)]
    for r in rows:
        if "skipped" in r:
            continue
        cells = []
        for key, _ in COLUMNS:
            v = r.get(key, 0.0)
            cells.append(f"{v:.2f}" if not key.endswith("_us") else f"{v:.1f}")
        lines.append(f"| {r['id']} | " + " | ".join(cells) + " |")
    lines += ["", "fusion engine per call, same batch (nested in the columns above):", "",
              "| case | " + " | ".join(title for _, title in FUSION_COLUMNS) + " |",
              "|---|" + "---|" * len(FUSION_COLUMNS)]
    for r in rows:
        if "skipped" not in r:
            lines.append(f"| {r['id']} | " + " | ".join(
                f"{r.get(key, 0.0):.1f}" if key.endswith("_us") else f"{r.get(key, 0.0):.2f}"
                for key, _ in FUSION_COLUMNS) + " |")
    return "\n".join(lines)


def device_per_dispatch(quick: bool) -> list[tuple[str, float, float, float, float]]:
    """(label, µs of the flush (submit) and of the wait for a batch of 1 dispatch, the same per
    further dispatch of a batch of ``PER_BATCH``) of eager adds recorded ahead into one batch
    (see the module docstring)."""
    import gputensor as gt
    from gputensor._backend import config, get_backend

    ctx = get_backend().context
    out = []
    with gt.fusion(False), config.override(submit_bytes=1 << 40):  # one batch: no submit on size
        for n_el in ((1024,) if quick else (1024, 1 << 20)):
            a = gt.asarray(np.ones(n_el, np.float32))
            b = gt.asarray(np.ones(n_el, np.float32))
            for label, hold, profiled in (("held (distinct outputs)", True, False),
                                          ("dropped (one block, WAW)", False, False),
                                          ("held, gt.profile timestamps", True, True)):
                res = {}
                for n in (1, PER_BATCH):
                    samples = []
                    for _ in range(5):
                        gt.synchronize()
                        held = []
                        prof = gt.profile() if profiled else None
                        if prof is not None:
                            prof.__enter__()
                        try:
                            for _ in range(n):
                                y = a + b
                                if hold:
                                    held.append(y)
                                del y
                            t0 = time.perf_counter()
                            ctx.flush()
                            t1 = time.perf_counter()
                            gt.synchronize()
                            samples.append((t1 - t0, time.perf_counter() - t1))
                        finally:
                            if prof is not None:
                                prof.__exit__(None, None, None)
                        del held
                    res[n] = (statistics.median(f for f, _ in samples), statistics.median(w for _, w in samples))
                per = [(res[PER_BATCH][k] - res[1][k]) / (PER_BATCH - 1) * 1e6 for k in (0, 1)]
                out.append((f"{n_el} f32: {label}", res[1][0] * 1e6, res[1][1] * 1e6, per[0], per[1]))
            del a, b
    return out


#: Dispatches of the larger batch of ``device_per_dispatch`` (within one profiled batch's queries).
PER_BATCH = 64


def submit_sizes(quick: bool) -> list[tuple[str, float, float, float]]:
    """(submit_bytes value, host µs, wall µs, submits) per call of 16 held large adds."""
    import gputensor as gt
    from gputensor._backend import config, get_backend

    ctx = get_backend().context
    n_el = 1 << 16 if quick else 16 << 20
    a = gt.asarray(np.ones(n_el, np.float32))
    b = gt.asarray(np.ones(n_el, np.float32))
    rows = []
    with gt.fusion(False):
        for value in ("8M", "32M", "128M", "512M", "2G"):
            with config.override(submit_bytes=config.parse_size(value)):
                hosts, walls, subs = [], [], []
                for rep in range(4):
                    gt.synchronize()
                    s0 = ctx.stats["submits"]
                    times, wall = _batch(lambda i: a + b, 16, gt.synchronize)
                    if rep:
                        hosts.append(statistics.mean(times))
                        walls.append(wall)
                        subs.append((ctx.stats["submits"] - s0) / 16)
                rows.append((value, statistics.median(hosts) * 1e6, statistics.median(walls) * 1e6,
                             statistics.median(subs)))
    return rows


DEFAULT_CASES = ("api.add.f32.1M", "api.where", "api.astype", "api.sum.f32.8192x4096", "api.sum.f32.axis0",
                 "api.max.f32.last", "api.matmul.f32.batched256x128", "api.take", "api.concat", "api.loop.small",
                 "api.roundtrip.sum16", "api.synchronize.idle")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.tools.diag_host", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run on a software adapter)")
    parser.add_argument("--only", default=",".join(DEFAULT_CASES), help="case ids (prefixes), comma-separated")
    parser.add_argument("--calls", type=int, default=None, help="calls per batch (default: as the harness)")
    parser.add_argument("--budget", type=float, default=60.0, help="seconds for the held-batch cases")
    parser.add_argument("--no-device", action="store_true", help="skip the per-dispatch and submit-size parts")
    parser.add_argument("--no-torch", action="store_true",
                        help="do not import torch (the harness does: its objects are part of every full collection)")
    args = parser.parse_args(argv)
    if not args.no_torch:
        try:
            import torch  # noqa: F401 - the harness's process holds it too
        except Exception:  # noqa: BLE001 - absent: the numbers are those without it
            pass
    import gputensor as gt
    from gputensor._backend import get_backend

    print(f"diag_host on {gt.__array_namespace_info__().default_device()} "
          f"({get_backend().context.adapter_info.get('device')})")
    rows = held_batches([p.strip() for p in args.only.split(",") if p.strip()], args.quick, args.calls, args.budget)
    print(format_held(rows))
    if not args.no_device:
        print("\ndevice time per dispatch of small eager adds recorded ahead (flush + wait, from the host):\n")
        print(f"| batch | flush of 1 dispatch µs | wait | per further dispatch of {PER_BATCH}: flush µs "
              "| wait µs |\n"
              "|---|---|---|---|---|")
        for label, flush1, wait1, flush_each, wait_each in device_per_dispatch(args.quick):
            print(f"| {label} | {flush1:.1f} | {wait1:.1f} | {flush_each:.2f} | {wait_each:.2f} |")
        print("\n16 held large adds per batch, by the first flush bound (submit_bytes):\n")
        print("| submit_bytes | host µs/call | wall µs/call | submits/call |\n|---|---|---|---|")
        for value, host_us, wall_us, subs in submit_sizes(args.quick):
            print(f"| {value} | {host_us:.1f} | {wall_us:.1f} | {subs:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
