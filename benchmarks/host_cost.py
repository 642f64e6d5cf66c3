"""Host cost of public calls: ``python -m benchmarks.host_cost [--quick] [--calls N] [--json PATH]
[--roundtrip-breakdown] [--submit-trace]``.

Runs on any adapter, the CPU adapter (lavapipe) included: it times the host, not the device.
For each public call on small inputs (1,024 float32 elements; 32x32 for matmul and the gt.nn row
calls, beside a batch
of small matrices and one 1024x1024 product, timed in batches of 2; ``--quick``: 256x256) it
reports the
host time per call spent *recording* it (``_timing.host_per_call``: calls back to back, every
result held, a sync after each batch outside the timed part; the best of the batches, since
other processes on a shared host only add time), with elementwise fusion off, and that time
relative to an eager ``a + b`` timed the same way. The goal: every call at
most 3x the eager elementwise op on any host, and at most 15 µs on the GPU machine's host.

Calls marked ``reads back`` wait for the device inside the call (the output size depends on the
data); their host time includes that wait. A second table gives the cost of a fresh device
allocation beside a pooled one, for sizes up to 256 MiB (``--quick``: 1 MiB).

``--roundtrip-breakdown`` prints only where the host time of ``float(gt.sum(a))`` goes: its
phases (submit, mapping, device poll, copy, Python layers) timed with perf_counter.
``--submit-trace`` prints only batches of large calls (8192 x 4096 float32) per submit policy:
host and wall time per call, submits, and the host time of the flushes inside the batch.
``--first-call`` prints only the host time of the first and the second call of a batch of two
right after a sync (the large matmul's row is timed in such batches), beside a call of a long
batch, for the large and the small matmul and the baseline.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._timing import host_per_call

#: Goal: host time of any public call over that of an eager ``a + b``.
GOAL_RATIO = 3.0
#: Goal: host µs of any public call on the GPU machine's host.
GOAL_US = 15.0
N = 1024


def calls(gt: Any, large: int = 1024) -> list[tuple[str, Callable[[], Any], bool]]:
    """(label, call, reads back) for every timed public call; the first is the baseline;
    ``large``: the size of the large square matmul."""
    rng = np.random.default_rng(0)
    a_np = rng.random(N, dtype=np.float32)
    a, b = gt.asarray(a_np), gt.asarray(rng.random(N, dtype=np.float32))
    m2 = gt.asarray(rng.random((32, 32), dtype=np.float32))
    x2 = gt.asarray(rng.random((32, 32), dtype=np.float32))
    w32, b32 = gt.asarray(rng.random(32, dtype=np.float32)), gt.asarray(rng.random(32, dtype=np.float32))
    mb = gt.asarray(rng.random((64, 16, 16), dtype=np.float32))
    big = gt.asarray(rng.random((large, large), dtype=np.float32))
    cond = a > 0.5
    idx = gt.asarray(rng.integers(0, N, 256))
    sorted_a = gt.sort(a)
    acc = gt.asarray(rng.random(N, dtype=np.float32))  # the destination of the in-place calls
    gt.synchronize()
    return [
        ("a + b (eager, the baseline)", lambda: a + b, False),
        ("gt.add(a, b)", lambda: gt.add(a, b), False),
        ("gt.exp(a)", lambda: gt.exp(a), False),
        ("a * 2.0 (python scalar)", lambda: a * 2.0, False),
        ("gt.where(c, a, b)", lambda: gt.where(cond, a, b), False),
        ("x += b (in place)", lambda: acc.__iadd__(b), False),
        ("x[c] = 0.5 (boolean mask, in place)", lambda: acc.__setitem__(cond, 0.5), False),
        ("gt.astype(a, float16)", lambda: gt.astype(a, gt.float16), False),
        ("gt.sum(a)", lambda: gt.sum(a), False),
        ("a.sum() (ndarray method, NumPy's signature)", lambda: a.sum(), False),
        ("gt.mean(x, axis=0)", lambda: gt.mean(x2, axis=0), False),
        ("gt.max(x, axis=-1, keepdims=True)", lambda: gt.max(x2, axis=-1, keepdims=True), False),
        ("gt.var(a)", lambda: gt.var(a), False),
        ("gt.argmax(a)", lambda: gt.argmax(a), False),
        ("x @ y (32x32)", lambda: m2 @ x2, False),
        ("gt.matmul(x, y) (32x32)", lambda: gt.matmul(m2, x2), False),
        ("x @ x.mT (32x32, transposed view)", lambda: m2 @ m2.mT, False),
        ("x @ y (batch of 64 x 16x16)", lambda: mb @ mb, False),
        (f"{LARGE_PREFIX}{large}x{large})", lambda: big @ big, False),
        ("gt.take(a, idx)", lambda: gt.take(a, idx), False),
        ("a[idx]", lambda: a[idx], False),
        ("a[1:-1] (basic slice)", lambda: a[1:-1], False),
        ("a[3] (integer index)", lambda: a[3], False),
        ("gt.nn.softmax(x) (32x32)", lambda: gt.nn.softmax(x2), False),
        ("gt.nn.layer_norm(x, 32, w, b) (32x32)", lambda: gt.nn.layer_norm(x2, 32, w32, b32), False),
        ("gt.sort(a)", lambda: gt.sort(a), False),
        ("gt.argsort(a)", lambda: gt.argsort(a), False),
        ("gt.cumulative_sum(a)", lambda: gt.cumulative_sum(a), False),
        ("gt.searchsorted(s, a)", lambda: gt.searchsorted(sorted_a, a), False),
        ("gt.concat([a, b])", lambda: gt.concat([a, b]), False),
        ("gt.stack([a, b])", lambda: gt.stack([a, b]), False),
        ("gt.reshape(a, (32, 32))", lambda: gt.reshape(a, (32, 32)), False),
        ("gt.permute_dims(x, (1, 0))", lambda: gt.permute_dims(x2, (1, 0)), False),
        ("gt.flip(a)", lambda: gt.flip(a), False),
        ("gt.zeros(1024)", lambda: gt.zeros(N), False),
        ("gt.empty(1024)", lambda: gt.empty(N), False),
        ("gt.full(1024, 3.0)", lambda: gt.full(N, 3.0), False),
        ("gt.arange(1024)", lambda: gt.arange(N), False),
        ("gt.asarray(numpy array) (upload)", lambda: gt.asarray(a_np), False),
        ("a[a > 0.5] (boolean mask)", lambda: a[cond], True),
        ("gt.nonzero(c)", lambda: gt.nonzero(cond), True),
        ("gt.unique_values(a)", lambda: gt.unique_values(a), True),
        ("float(gt.sum(a))", lambda: float(gt.sum(a)), True),
        ("gt.sum(a).item()", lambda: gt.sum(a).item(), True),
        ("np.asarray(a + b)", lambda: np.asarray(a + b), True),
        ("gt.synchronize() (nothing pending)", gt.synchronize, False),
    ]


#: Most calls per timed batch of a call whose operands are large (a batch of them stays under
#: the context's flush threshold, so that the host time is recording only, not a submit that
#: waits for the device).
LARGE_CAP = 2
LARGE_PREFIX = "x @ y (large: "

#: The calls whose device round trip ``readback_counts`` counts.
READBACKS = ("float(gt.sum(a))", "gt.sum(a).item()", "np.asarray(a + b)", "gt.synchronize() (nothing pending)")


def readback_counts(calls_per_row: int = 50) -> list[dict[str, Any]]:
    """Per readback call of ``calls``: submits, buffer mappings, device polls and staging
    buffers created per call (the context's counters), and the median wall µs of one call."""
    import time

    import gputensor as gt
    from gputensor._backend import get_backend

    stats = get_backend().context.stats
    rows = []
    with gt.fusion(False):
        table = {label: fn for label, fn, _ in calls(gt)}
        for label in READBACKS:
            fn = table[label]
            fn()
            gt.synchronize()
            before = dict(stats)
            times = []
            for _ in range(calls_per_row):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
            row = {"call": label, "median_us": sorted(times)[len(times) // 2] * 1e6}
            for key in ("submits", "maps", "polls", "staging_created"):
                row[key] = (stats.get(key, 0) - before.get(key, 0)) / calls_per_row
            rows.append(row)
    return rows


def format_readbacks(rows: Sequence[dict[str, Any]]) -> str:
    """The readback rows as a Markdown table."""
    lines = ["device round trips: per call (median wall µs of single calls; counters per call)", "",
             "| call | median µs | submits | mappings | polls | staging buffers made |", "|---|---|---|---|---|---|"]
    lines += [f"| {r['call']} | {r['median_us']:.1f} | {r['submits']:g} | {r['maps']:g} | {r['polls']:.1f} | "
              f"{r['staging_created']:g} |" for r in rows]
    return "\n".join(lines)


def measure(n_calls: int, batches: int = 5, large: int = 1024) -> list[dict[str, Any]]:
    """One row per call: label, host µs per call, ratio to the baseline, reads back, error.

    Each time is the best batch (``min``: other processes on a shared host only add time); the
    baseline is measured before, between and after the other calls and its best is the
    reference."""
    import gputensor as gt

    def best_us(fn: Callable[[], Any], cap: int | None = None) -> float:
        calls_ = n_calls if cap is None else min(n_calls, cap)
        return host_per_call(fn, gt.synchronize, calls_, batches, statistic=min) * 1e6

    rows: list[dict[str, Any]] = []
    with gt.fusion(False):
        table = calls(gt, large)
        baseline = table[0][1]
        base = []
        for k, (label, fn, reads_back) in enumerate(table):
            row: dict[str, Any] = {"call": label, "reads_back": reads_back, "host_us": None, "ratio": None,
                                   "error": None}
            try:
                fn()  # compile and plan outside the timing
                gt.synchronize()
                row["host_us"] = best_us(fn, LARGE_CAP if label.startswith(LARGE_PREFIX) else None)
            except Exception as exc:  # noqa: BLE001 - a call that raises is reported, the run goes on
                row["error"] = f"{type(exc).__name__}: {exc}"
            rows.append(row)
            if k == len(table) // 2:
                base.append(best_us(baseline))
        base.append(best_us(baseline))
    ref = min(base + [rows[0]["host_us"]])
    rows[0]["host_us"] = ref
    for row in rows:
        if row["host_us"] is not None:
            row["ratio"] = row["host_us"] / ref
    return rows


#: Phases of a small readback that ``roundtrip_breakdown`` times, in the order they run: (label,
#: object, method name); the object is 'ctx' (the context), 'mapper' (its ``mapping.Mapper``),
#: 'calls' (its wgpu-native batch calls, ``native_calls.BatchCalls``; skipped without them) or
#: 'submit' (``queue.submit`` where the batch calls are missing, else their ``submit``).
BREAKDOWN_PHASES = (
    ("stage: copy into staging + flush", "ctx", "_stage_one"),
    ("  flush (end pass, finish, ring write, submit)", "ctx", "flush"),
    ("    finish (the encoder)", "calls", "finish"),
    ("    queue.write_buffer (parameter ring)", "queue", "write_buffer"),
    ("    queue.submit", "submit", "submit"),
    ("map_async (start the mapping)", "mapper", "map"),
    ("wait (device poll until mapped)", "mapper", "wait"),
    ("  prepare_next_batch (encoder + pass, only while the device is busy)", "ctx", "prepare_next_batch"),
    ("read (copy out of the mapped range)", "mapper", "read"),
    ("unmap", "mapper", "unmap"),
)


class _QueueProxy:
    """The wgpu queue with some methods timed (``roundtrip_breakdown``); everything else passes."""

    def __init__(self, queue: Any, timed: dict[str, Callable[..., Any]]) -> None:
        self._queue = queue
        self.__dict__.update(timed)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._queue, name)


def roundtrip_breakdown(calls: int = 200) -> dict[str, Any]:
    """Where the host time of ``float(gt.sum(a))`` (1,024 float32) goes: each call's wall time
    split into recording the sum, the phases of ``BREAKDOWN_PHASES`` (perf_counter around the
    context's, the mapper's and the queue's methods, patched on the instances for this run
    only) and the rest (Python layers between them). Medians over ``calls`` calls, µs; also the
    device polls per call. Needs the mapper (the default wait modes 'spin' and 'block')."""
    import time

    import gputensor as gt
    from gputensor._backend import get_backend

    ctx = get_backend().context
    mapper = ctx._mapper
    if mapper is None:
        raise RuntimeError("the roundtrip breakdown needs the mapper (GPUTENSOR_WAIT is 'poller')")
    spent: dict[str, float] = {}
    owners = {"ctx": ctx, "mapper": mapper}

    def timed(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0.0) + time.perf_counter() - t0
        return wrapper

    queue = ctx.queue
    native_calls = getattr(ctx, "_calls", None)
    patched: list[tuple[Any, str, Any]] = []  # (object, attribute, the value it had)
    queue_timed: dict[str, Callable[..., Any]] = {}
    for label, owner, name in BREAKDOWN_PHASES:
        if owner == "submit":
            owner = "calls" if native_calls is not None else "queue"
        if owner == "queue":
            queue_timed[name] = timed(label, getattr(queue, name))
            continue
        obj = native_calls if owner == "calls" else owners[owner]
        if obj is None:
            continue
        patched.append((obj, name, obj.__dict__.get(name)))
        setattr(obj, name, timed(label, getattr(obj, name)))
    ctx.queue = _QueueProxy(queue, queue_timed)
    rng = np.random.default_rng(0)
    a = gt.asarray(rng.random(N, dtype=np.float32))
    rows: list[dict[str, float]] = []
    polls0 = ctx.stats.get("polls", 0)
    try:
        with gt.fusion(False):
            for _ in range(20):  # warm: plans, pipelines, staging buffers
                float(gt.sum(a))
            gt.synchronize()
            polls0 = ctx.stats.get("polls", 0)
            for _ in range(calls):
                spent.clear()
                t0 = time.perf_counter()
                s = gt.sum(a)
                t1 = time.perf_counter()
                float(s)
                t2 = time.perf_counter()
                row = {"record gt.sum(a)": t1 - t0, "float(s): total": t2 - t1}
                row.update(spent)
                accounted = sum(spent.get(label, 0.0) for label, _, _ in BREAKDOWN_PHASES
                                if not label.startswith(" "))
                row["rest (Python layers)"] = (t2 - t1) - accounted
                rows.append(row)
    finally:
        ctx.queue = queue
        for obj, name, before in reversed(patched):
            if before is None:
                del obj.__dict__[name]
            else:
                setattr(obj, name, before)
    polls = (ctx.stats.get("polls", 0) - polls0) / calls
    labels = ["record gt.sum(a)", "float(s): total"] + [label for label, _, _ in BREAKDOWN_PHASES] + \
        ["rest (Python layers)"]
    medians = {label: sorted(r.get(label, 0.0) for r in rows)[calls // 2] * 1e6 for label in labels}
    totals = sorted(r["record gt.sum(a)"] + r["float(s): total"] for r in rows)
    return {"calls": calls, "median_total_us": totals[calls // 2] * 1e6, "phases_us": medians,
            "polls_per_call": polls, "wait_mode": "spin" if mapper.spin else "block"}


def format_breakdown(result: dict[str, Any], adapter: str) -> str:
    """``roundtrip_breakdown``'s result as a Markdown table."""
    lines = [f"`float(gt.sum(a))` round trip on {adapter}: median µs per phase over {result['calls']} calls "
             f"(wait mode {result['wait_mode']}, {result['polls_per_call']:.1f} device polls per call; "
             f"median total {result['median_total_us']:.1f} µs; indented rows are inside the row above; "
             "medians do not add up exactly)", "", "| phase | median µs |", "|---|---|"]
    lines += [f"| {label} | {us:.1f} |" for label, us in result["phases_us"].items()]
    return "\n".join(lines)


#: The calls of ``submit_trace``: (label, call on (x, y, c)), large operands of one shape.
SUBMIT_CALLS: tuple[tuple[str, Callable[[Any, Any, Any, Any], Any]], ...] = (
    ("gt.sum(x)", lambda gt, x, y, c: gt.sum(x)),
    ("gt.max(x, axis=-1)", lambda gt, x, y, c: gt.max(x, axis=-1)),
    ("gt.where(c, x, y)", lambda gt, x, y, c: gt.where(c, x, y)),
    ("gt.astype(x, float16)", lambda gt, x, y, c: gt.astype(x, gt.float16)),
    ("gt.add(x, y)", lambda gt, x, y, c: gt.add(x, y)),
)


def submit_trace(shape: tuple[int, int] = (8192, 4096), calls: int = 64, repeats: int = 3,
                 policies: Sequence[str] = ("work", "bytes")) -> list[dict[str, Any]]:
    """Per call of ``SUBMIT_CALLS`` on float32 operands of ``shape`` and per submit policy: a
    batch of ``calls`` calls recorded back to back (results held; fusion off, so that each call
    records as it is made), then ``gt.synchronize()``;
    the median over ``repeats`` batches of the host µs per call (recording, the submits inside
    included), the wall µs per call (to the sync's return), the submits and deferred submits per
    batch, and the host µs of the batch's flushes (median and largest; ``submit``: the
    ``queue.submit`` inside them). Shows whether submits are what a large op's host time is."""
    import statistics
    import time

    import gputensor as gt
    from gputensor._backend import config, get_backend

    ctx = get_backend().context
    rng = np.random.default_rng(0)
    x = gt.asarray(rng.random(shape, dtype=np.float32))
    y = gt.asarray(rng.random(shape, dtype=np.float32))
    c = x > 0.5
    gt.synchronize()
    flushes: list[float] = []
    submits: list[float] = []

    def timed(fn: Callable[..., Any], into: list[float]) -> Callable[..., Any]:
        def wrapper(*args: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args)
            finally:
                into.append(time.perf_counter() - t0)
        return wrapper

    native = getattr(ctx, "_calls", None)
    flush = ctx.flush
    ctx.flush = timed(flush, flushes)
    submit = None if native is None else native.submit  # (an attribute of the instance)
    if native is not None:
        native.submit = timed(submit, submits)
    rows = []
    try:
        for label, fn in SUBMIT_CALLS:
            for policy in policies:
                with config.override(submit_policy=policy), gt.fusion(False):
                    for _ in range(2):
                        held = [fn(gt, x, y, c) for _ in range(4)]
                        gt.synchronize()
                        del held
                    samples = []
                    for _ in range(repeats):
                        flushes.clear()
                        submits.clear()
                        n0, d0 = ctx.stats["submits"], ctx.stats.get("submits_deferred", 0)
                        held = []
                        t0 = time.perf_counter()
                        for _ in range(calls):
                            held.append(fn(gt, x, y, c))
                        t1 = time.perf_counter()
                        gt.synchronize()
                        t2 = time.perf_counter()
                        del held
                        samples.append({"host_us": (t1 - t0) / calls * 1e6, "wall_us": (t2 - t0) / calls * 1e6,
                                        "submits": ctx.stats["submits"] - n0,
                                        "deferred": ctx.stats.get("submits_deferred", 0) - d0,
                                        "flush_med_us": statistics.median(flushes) * 1e6 if flushes else 0.0,
                                        "flush_max_us": max(flushes, default=0.0) * 1e6,
                                        "flush_sum_us": sum(flushes) * 1e6,
                                        "submit_med_us": statistics.median(submits) * 1e6 if submits else 0.0,
                                        "submit_max_us": max(submits, default=0.0) * 1e6})
                row: dict[str, Any] = {"call": label, "policy": policy, "calls": calls}
                for key in samples[0]:
                    row[key] = statistics.median(s[key] for s in samples)
                rows.append(row)
    finally:
        del ctx.flush
        if native is not None:
            native.submit = submit
    return rows


def format_submit_trace(rows: Sequence[dict[str, Any]], adapter: str, shape: tuple[int, int]) -> str:
    """``submit_trace``'s rows as a Markdown table."""
    lines = [f"batches of large calls ({shape[0]}x{shape[1]} float32, fusion off) on {adapter}, per submit "
             "policy: host and wall µs per call, submits per batch, host µs of the batch's flushes (medians of "
             "the batches)", "",
             "| call | policy | calls | host µs | wall µs | submits | deferred | flush med / max µs | "
             "flushes µs per call | submit med / max µs |", "|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['call']} | {r['policy']} | {r['calls']} | {r['host_us']:.1f} | {r['wall_us']:.1f} | "
              f"{r['submits']:g} | {r['deferred']:g} | {r['flush_med_us']:.0f} / {r['flush_max_us']:.0f} | "
              f"{r['flush_sum_us'] / r['calls']:.1f} | {r['submit_med_us']:.0f} / {r['submit_max_us']:.0f} |"
              for r in rows]
    return "\n".join(lines)


def first_calls(large: int = 1024, batches: int = 30) -> list[dict[str, Any]]:
    """Per call (the large matmul, the 32x32 one, the baseline ``a + b``): the median host µs of
    the first and of the second call of a batch of two recorded right after ``synchronize``
    (results held), and of a call inside a batch of 200 (the best of ``batches`` // 10 + 1
    batches), with fusion off."""
    import time

    import gputensor as gt

    rng = np.random.default_rng(0)
    big = gt.asarray(rng.random((large, large), dtype=np.float32))
    small = gt.asarray(rng.random((32, 32), dtype=np.float32))
    a = gt.asarray(rng.random(N, dtype=np.float32))
    cases = [(f"x @ y ({large}x{large})", lambda: big @ big), ("x @ y (32x32)", lambda: small @ small),
             ("a + b", lambda: a + a)]
    rows = []
    with gt.fusion(False):
        for label, fn in cases:
            for _ in range(3):
                held = [fn(), fn()]
                gt.synchronize()
                del held
            first, second = [], []
            for _ in range(batches):
                t0 = time.perf_counter()
                held = [fn()]
                t1 = time.perf_counter()
                held.append(fn())
                t2 = time.perf_counter()
                first.append(t1 - t0)
                second.append(t2 - t1)
                gt.synchronize()
                del held
            long_cap = None if not label.startswith("x @ y (" + str(large)) else LARGE_CAP
            steady = host_per_call(fn, gt.synchronize, long_cap or 200, batches // 10 + 1, statistic=min)
            rows.append({"call": label, "first_us": sorted(first)[batches // 2] * 1e6,
                         "second_us": sorted(second)[batches // 2] * 1e6, "batch_us": steady * 1e6})
    return rows


def format_first_calls(rows: Sequence[dict[str, Any]], adapter: str) -> str:
    """``first_calls``'s rows as a Markdown table."""
    lines = [f"first and second call of a batch of two after a sync on {adapter} (median host µs), "
             "beside a call of a long batch (the large matmul: batches of two)", "",
             "| call | first call | second call | in a long batch |", "|---|---|---|---|"]
    lines += [f"| {r['call']} | {r['first_us']:.1f} | {r['second_us']:.1f} | {r['batch_us']:.1f} |" for r in rows]
    return "\n".join(lines)


#: Sizes (bytes) whose fresh and pooled allocation ``alloc_rows`` times.
ALLOC_SIZES = (1 << 20, 16 << 20, 64 << 20, 256 << 20)


def alloc_rows(sizes: Sequence[int], reps: int = 5) -> list[dict[str, Any]]:
    """Per size: the median host µs of ``gt.empty`` when the pool must make a fresh device buffer
    (its cache released first, the device idle) and when a freed block of that size is reused;
    and where a fresh buffer's cost goes: the buffer's creation alone (``create_us``), its first
    write by a kernel, waited for (``first_write_us``, where WebGPU's lazy zero-fill of a fresh
    buffer lands), the same write into a pooled block (``pooled_write_us``), and the release of
    the block to the device with the next wait (``release_us``)."""
    import time

    import gputensor as gt
    from gputensor._backend import get_backend

    pool = gt.get_default_memory_pool()
    ctx = get_backend().context
    tiny = gt.zeros(4)
    rows = []
    for nbytes in sizes:
        cols: dict[str, list[float]] = {k: [] for k in ("fresh", "pooled", "create", "first_write",
                                                        "pooled_write", "release")}
        for _ in range(reps):
            gt.synchronize()
            pool.free_all_blocks()
            (tiny + 1).get()  # a wait that polls: released buffers are reclaimed now
            t0 = time.perf_counter()
            x = gt.empty(nbytes // 4, dtype=gt.float32)
            gt.synchronize()
            cols["fresh"].append(time.perf_counter() - t0)
            del x
            gt.synchronize()
            t0 = time.perf_counter()
            y = gt.empty(nbytes // 4, dtype=gt.float32)
            gt.synchronize()
            cols["pooled"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            y[...] = 1.0
            gt.synchronize()
            cols["pooled_write"].append(time.perf_counter() - t0)
            del y
            t0 = time.perf_counter()
            buf = ctx.create_storage(nbytes)
            cols["create"].append(time.perf_counter() - t0)
            buf.destroy()
            pool.free_all_blocks()
            (tiny + 1).get()
            z = gt.empty(nbytes // 4, dtype=gt.float32)
            t0 = time.perf_counter()
            z[...] = 1.0
            gt.synchronize()
            cols["first_write"].append(time.perf_counter() - t0)
            del z
            t0 = time.perf_counter()
            pool.free_all_blocks()
            (tiny + 1).get()
            cols["release"].append(time.perf_counter() - t0)
        pool.free_all_blocks()
        row: dict[str, Any] = {"bytes": nbytes}
        for key, values in cols.items():
            row[f"{key}_us"] = sorted(values)[reps // 2] * 1e6
        rows.append(row)
    return rows


def format_alloc(rows: Sequence[dict[str, Any]]) -> str:
    """The allocation rows as a Markdown table."""
    lines = ["allocation: `gt.empty(n)` with a fresh device buffer vs a pooled block (median µs, the sync "
             "after it included); a fresh buffer's parts: its creation alone, its first kernel write "
             "(waited for) beside the same write into a pooled block, its release with the next wait", "",
             "| bytes | fresh µs | pooled µs | create µs | first write µs | pooled write µs | release µs |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['bytes']:,} | {r['fresh_us']:.0f} | {r['pooled_us']:.0f} | {r['create_us']:.0f} | "
              f"{r['first_write_us']:.0f} | {r['pooled_write_us']:.0f} | {r['release_us']:.0f} |" for r in rows]
    return "\n".join(lines)


def format_rows(rows: Sequence[dict[str, Any]], adapter: str) -> str:
    """The rows as a Markdown table (call, host µs per call, x eager add, within the two goals)."""
    lines = [f"host cost per public call on {adapter} (fusion off; goals: at most {GOAL_RATIO:g}x an eager a + b, "
             f"at most {GOAL_US:g} µs on the GPU machine's host)", "",
             f"| call | host µs per call | x eager `a + b` | within {GOAL_RATIO:g}x | within {GOAL_US:g} µs |",
             "|---|---|---|---|---|"]
    for r in rows:
        label = r["call"] + (" (reads back)" if r["reads_back"] else "")
        if r["error"]:
            lines.append(f"| {label} | error: {r['error'][:60]} | - | - | - |")
            continue
        ok = "yes" if r["ratio"] <= GOAL_RATIO else "no"
        fast = "yes" if r["host_us"] <= GOAL_US else "no"
        lines.append(f"| {label} | {r['host_us']:.1f} | {r['ratio']:.1f} | {ok} | {fast} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; prints the table, writes JSON with ``--json``."""
    import os

    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    p = argparse.ArgumentParser(prog="python -m benchmarks.host_cost", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer calls per batch (a smoke run)")
    p.add_argument("--calls", type=int, default=None, help="calls per timed batch (default 200, quick 20)")
    p.add_argument("--json", dest="json_path", metavar="PATH", help="write the rows as JSON")
    p.add_argument("--roundtrip-breakdown", action="store_true",
                   help="only split the host time of float(gt.sum(a)) into its phases")
    p.add_argument("--submit-trace", action="store_true",
                   help="only time batches of large calls per submit policy (host, wall, submits, flushes)")
    p.add_argument("--first-call", action="store_true",
                   help="only time the first and second call of a batch of two after a sync")
    ns = p.parse_args(argv)
    from gputensor._backend import get_backend

    adapter = str(get_backend().context.adapter_info.get("device", "?"))
    if ns.roundtrip_breakdown:
        result = roundtrip_breakdown(ns.calls or (50 if ns.quick else 500))
        print(format_breakdown(result, adapter))
        if ns.json_path:
            with open(ns.json_path, "w") as f:
                json.dump({"adapter": adapter, "roundtrip_breakdown": result}, f, indent=1)
        return 0
    if ns.submit_trace:
        shape = (2048, 2048) if ns.quick else (8192, 4096)
        trace = submit_trace(shape, ns.calls or (6 if ns.quick else 64), 2 if ns.quick else 3)
        print(format_submit_trace(trace, adapter, shape))
        if ns.json_path:
            with open(ns.json_path, "w") as f:
                json.dump({"adapter": adapter, "shape": shape, "submit_trace": trace}, f, indent=1)
        return 0
    if ns.first_call:
        first = first_calls(256 if ns.quick else 1024, 10 if ns.quick else 30)
        print(format_first_calls(first, adapter))
        if ns.json_path:
            with open(ns.json_path, "w") as f:
                json.dump({"adapter": adapter, "first_calls": first}, f, indent=1)
        return 0
    n_calls = ns.calls or (20 if ns.quick else 200)
    rows = measure(n_calls, batches=3 if ns.quick else 5, large=256 if ns.quick else 1024)
    print(format_rows(rows, adapter))
    readbacks = readback_counts(10 if ns.quick else 50)
    print()
    print(format_readbacks(readbacks))
    allocs = alloc_rows(ALLOC_SIZES[:1] if ns.quick else ALLOC_SIZES, 3 if ns.quick else 5)
    print()
    print(format_alloc(allocs))
    if ns.json_path:
        with open(ns.json_path, "w") as f:
            json.dump({"adapter": adapter, "calls_per_batch": n_calls, "rows": rows, "readbacks": readbacks,
                       "alloc": allocs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
