"""gputensor.nn beside torch.nn.functional in one process: ``python3 -m benchmarks.bench_nn``.

Cases (float32 unless named; torch with TF32 off, cuDNN benchmark mode on):

* ``conv2d.3x3``: ResNet-50 3x3 layer, N=32, C=K=256, 14x14, padding 1; ``conv2d.1x1``: N=32,
  C=1024, K=256, 14x14;
* ``sdpa.d{64,128}.s{1024,4096}[.causal]``: batch 4, heads 16; ``sdpa.decode.d{64,128}``: one
  query against 32768 cached keys;
* ``{softmax,log_softmax,logsumexp,layer_norm,rms_norm}.{f32,f16}.{rows}x{n}`` (logsumexp along
  the last axis; the norms with weight, layer_norm with bias) on (4096, 1024), (8192, 4096) and
  (32768, 128).

For each framework a case is called once (cold: compilation, autotuning), checked (gputensor
against a NumPy float64 reference -- every case but the sdpa ones longer than 1024, whose
reference would not fit the host -- and against torch when torch is there), then the clocks are
warmed the same way for both frameworks (``_harness.Env.warm_clocks``: torch float32 matmuls)
and 3 batches of ``reps`` calls are timed; every result of a batch is kept until the
synchronisation that ends it. Reported per call, medians over the batches:

* ``host us``: Python time to issue the call (the loop without the final wait);
* ``gpu us``: device time -- gputensor: the sum of the kernels' timestamp-query times
  (``gt.profile``) over a few calls; torch: CUDA events around a batch;
* ``wall us``: loop plus the final synchronisation;
* ``speed``: torch wall time / gputensor wall time (above 1: gputensor is faster), beside the
  target; ``gpu``: the same ratio of the device times.

``--quick`` runs tiny sizes (seconds, any adapter: the CI smoke test uses it on lavapipe);
``--only`` selects cases by substring (or fnmatch pattern, with ``*``), ``--json PATH`` writes
the results, ``--no-torch`` skips torch. ``--ab KNOB[,KNOB]`` (names of
``gputensor._backend.config`` knobs; ``NAME=VALUE`` sets one, e.g. ``rows_f16_store=exact``):
after each case's row, one more gputensor row per knob with that knob flipped or set
(``config.override``; case name suffixed ``[knob=VALUE]``), its ratios against the same torch
times: both variants measured in one run.
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import gputensor as gt
from gputensor._backend import config

from ._harness import Env, detect_torch


@dataclasses.dataclass
class NnCase:
    """One benchmark case: ``make(rng)`` returns the host inputs (a dict of NumPy arrays),
    ``gt_fn(inputs)`` / ``torch_fn(F, inputs)`` run it on device inputs, ``reference(host)`` is
    the NumPy float64 result (used without torch), ``target`` the wanted speed ratio."""

    name: str
    make: Callable[[np.random.Generator], dict[str, np.ndarray]]
    gt_fn: Callable[[dict[str, Any]], Any]
    torch_fn: Callable[[Any, dict[str, Any]], Any]
    reference: Callable[[dict[str, np.ndarray]], np.ndarray]
    target: float
    tol: float = 1e-4
    numpy_check: bool = True


# ---- NumPy references (float64) ------------------------------------------------------------
def _softmax_ref(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _log_softmax_ref(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def _logsumexp_ref(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max(-1)
    return m + np.log(np.exp(x - m[..., None]).sum(-1))


def _layer_norm_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b


def _rms_norm_ref(x: np.ndarray, w: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    x = x.astype(np.float64)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def _sdpa_ref(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    return _softmax_ref(s) @ v


def _conv_ref(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    oh, ow = h - r + 1, wd - s + 1
    out = np.zeros((n, k, oh, ow))
    for i in range(r):
        for j in range(s):
            tap = np.tensordot(x[:, :, i:i + oh, j:j + ow], w[:, :, i, j].astype(np.float64), axes=([1], [1]))
            out += tap.transpose(0, 3, 1, 2)
    return out


# ---- cases -----------------------------------------------------------------------------------
def _normal(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any = np.float32, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape, dtype=np.float32) * scale).astype(dtype)


def cases(quick: bool) -> list[NnCase]:
    """The case list (tiny sizes with ``quick``)."""
    out: list[NnCase] = []
    conv = [("conv2d.3x3", (2, 8, 6, 6), (8, 8, 3, 3), 1), ("conv2d.1x1", (2, 16, 6, 6), (8, 16, 1, 1), 0)] if quick else [
        ("conv2d.3x3", (32, 256, 14, 14), (256, 256, 3, 3), 1), ("conv2d.1x1", (32, 1024, 14, 14), (256, 1024, 1, 1), 0)]
    for name, xs, ws, pad in conv:
        out.append(NnCase(
            name, lambda rng, xs=xs, ws=ws: {"x": _normal(rng, xs), "w": _normal(rng, ws, scale=0.05)},
            lambda a, pad=pad: gt.nn.conv2d(a["x"], a["w"], padding=pad),
            lambda F, a, pad=pad: F.conv2d(a["x"], a["w"], padding=pad),
            lambda h, pad=pad: _conv_ref(h["x"], h["w"], pad), 0.6, 1e-3))
    batch, heads = (1, 2) if quick else (4, 16)
    seqs = (64,) if quick else (1024, 4096)
    dims = (16,) if quick else (64, 128)
    for d in dims:
        for seq in seqs:
            for causal in (False, True):
                shape = (batch, heads, seq, d)
                out.append(NnCase(
                    f"sdpa.d{d}.s{seq}" + (".causal" if causal else ""),
                    lambda rng, shape=shape: {n: _normal(rng, shape) for n in "qkv"},
                    lambda a, c=causal: gt.nn.scaled_dot_product_attention(a["q"], a["k"], a["v"], is_causal=c),
                    lambda F, a, c=causal: F.scaled_dot_product_attention(a["q"], a["k"], a["v"], is_causal=c),
                    lambda h, c=causal: _sdpa_ref(h["q"], h["k"], h["v"], c), 0.7, 1e-3, numpy_check=seq <= 1024))
    cache = 256 if quick else 32768
    for d in dims:
        qs, ks = (batch, heads, 1, d), (batch, heads, cache, d)
        out.append(NnCase(
            f"sdpa.decode.d{d}",
            lambda rng, qs=qs, ks=ks: {"q": _normal(rng, qs), "k": _normal(rng, ks), "v": _normal(rng, ks)},
            lambda a: gt.nn.scaled_dot_product_attention(a["q"], a["k"], a["v"]),
            lambda F, a: F.scaled_dot_product_attention(a["q"], a["k"], a["v"]),
            lambda h: _sdpa_ref(h["q"], h["k"], h["v"], False), 3.0, 1e-3))
    row_shapes = ((64, 256), (33, 37)) if quick else ((4096, 1024), (8192, 4096), (32768, 128))
    for rows in row_shapes:
        n = rows[1]
        size = f"{rows[0]}x{n}"
        for dtype, tag, tol in ((np.float32, "f32", 1e-4), (np.float16, "f16", 1e-2)):
            for op, fn, tfn, ref in (
                    ("softmax", gt.nn.softmax, lambda F, x: F.softmax(x, dim=-1), _softmax_ref),
                    ("log_softmax", gt.nn.log_softmax, lambda F, x: F.log_softmax(x, dim=-1), _log_softmax_ref),
                    ("logsumexp", lambda x: gt.nn.logsumexp(x, axis=-1),
                     lambda F, x: x.logsumexp(dim=-1), _logsumexp_ref)):
                out.append(NnCase(
                    f"{op}.{tag}.{size}", lambda rng, dt=dtype, rows=rows: {"x": _normal(rng, rows, dt, 3.0)},
                    lambda a, fn=fn: fn(a["x"]), lambda F, a, tfn=tfn: tfn(F, a["x"]),
                    lambda h, ref=ref: ref(h["x"]), 1.0, tol))
            out.append(NnCase(
                f"layer_norm.{tag}.{size}",
                lambda rng, dt=dtype, n=n, rows=rows: {"x": _normal(rng, rows, dt), "w": _normal(rng, (n,), dt),
                                                       "b": _normal(rng, (n,), dt)},
                lambda a, n=n: gt.nn.layer_norm(a["x"], (n,), a["w"], a["b"]),
                lambda F, a, n=n: F.layer_norm(a["x"], (n,), a["w"], a["b"]),
                lambda h: _layer_norm_ref(h["x"], h["w"], h["b"]), 1.0, tol * 10))
            out.append(NnCase(
                f"rms_norm.{tag}.{size}",
                lambda rng, dt=dtype, n=n, rows=rows: {"x": _normal(rng, rows, dt), "w": _normal(rng, (n,), dt)},
                lambda a, n=n: gt.nn.rms_norm(a["x"], (n,), a["w"], eps=1e-6),
                lambda F, a, n=n: F.rms_norm(a["x"], (n,), a["w"], eps=1e-6),
                lambda h: _rms_norm_ref(h["x"], h["w"]), 1.0, tol * 10))
    return out


# ---- timing ----------------------------------------------------------------------------------
@dataclasses.dataclass
class Timing:
    host_us: float
    gpu_us: float | None
    wall_us: float
    reps: int
    cold_s: float


#: Device bytes the results of one batch may hold (every result is kept until the batch's sync).
HELD_BYTES = 16e9


def _reps(call: Callable[[], Any], sync: Callable[[], None], target_s: float, result_bytes: int) -> int:
    """Calls per batch so that a batch lasts about ``target_s`` (3 to 1000), and its results fit
    ``HELD_BYTES``."""
    t0 = time.perf_counter()
    keep = [call() for _ in range(2)]
    sync()
    per = (time.perf_counter() - t0) / 2
    del keep
    reps = min(1000, target_s / max(per, 1e-7), HELD_BYTES / max(result_bytes, 1))
    return int(max(3, reps))


def _batches(call: Callable[[], Any], sync: Callable[[], None], reps: int, batches: int = 3) -> tuple[float, float]:
    """(median host s per call, median wall s per call) over ``batches`` batches of ``reps``
    calls, each result kept until the batch's synchronisation."""
    host, wall = [], []
    for _ in range(batches):
        sync()
        keep = []
        t0 = time.perf_counter()
        for _ in range(reps):
            keep.append(call())
        t1 = time.perf_counter()
        sync()
        t2 = time.perf_counter()
        del keep
        host.append((t1 - t0) / reps)
        wall.append((t2 - t0) / reps)
    return statistics.median(host), statistics.median(wall)


def time_gputensor(case: NnCase, host: dict[str, np.ndarray], env: Env, target_s: float) -> tuple[Timing, Any]:
    """Timing of the case through gt.nn, and its first result (a NumPy array)."""
    args = {k: gt.asarray(v) for k, v in host.items()}
    t0 = time.perf_counter()
    first = case.gt_fn(args)
    gt.synchronize()
    cold = time.perf_counter() - t0
    result = gt.asnumpy(first)
    del first

    def call() -> Any:
        return case.gt_fn(args)

    reps = _reps(call, gt.synchronize, target_s, result.nbytes)
    env.warm_clocks()
    _batches(call, gt.synchronize, reps, 1)  # discarded
    host_s, wall_s = _batches(call, gt.synchronize, reps)
    gpu_us = None
    n_prof = max(1, min(reps, 5))
    with gt.profile() as prof:
        keep = [call() for _ in range(n_prof)]
        gt.synchronize()
    del keep
    if prof.gpu_timing:
        total = sum(e.gpu_s or 0.0 for e in prof.events)
        gpu_us = total / n_prof * 1e6
    del args
    gt.get_default_memory_pool().free_all_blocks()  # the batches' results: not kept for the next case
    return Timing(host_s * 1e6, gpu_us, wall_s * 1e6, reps, cold), result


def time_torch(case: NnCase, host: dict[str, np.ndarray], env: Env, target_s: float) -> tuple[Timing, Any]:
    """Timing of the case through torch.nn.functional, and its first result (a NumPy array)."""
    torch = env.torch
    F = torch.nn.functional
    args = {k: env.to_torch(v) for k, v in host.items()}
    sync = torch.cuda.synchronize
    t0 = time.perf_counter()
    first = case.torch_fn(F, args)
    sync()
    cold = time.perf_counter() - t0
    result = first.float().cpu().numpy()
    result_bytes = first.numel() * first.element_size()
    del first

    def call() -> Any:
        return case.torch_fn(F, args)

    reps = _reps(call, sync, target_s, result_bytes)
    env.warm_clocks()
    _batches(call, sync, reps, 1)
    host_s, wall_s = _batches(call, sync, reps)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    sync()
    start.record()
    keep = [call() for _ in range(reps)]
    end.record()
    sync()
    del keep
    gpu_us = start.elapsed_time(end) * 1e3 / reps
    del args
    torch.cuda.empty_cache()
    return Timing(host_s * 1e6, gpu_us, wall_s * 1e6, reps, cold), result


def variants(names: str | None) -> list[tuple[str, dict[str, Any]]]:
    """(name suffix, ``config.override`` arguments) of each ``--ab`` knob flipped from its value
    now (a switch) or set (``NAME=VALUE``). ValueError for an unknown knob name."""
    out: list[tuple[str, dict[str, Any]]] = []
    knobs = {k.name: k for k in config.KNOBS}
    for item in [v.strip() for v in (names or "").split(",") if v.strip()]:
        name, _, raw = item.partition("=")
        knob = knobs.get(name)
        if knob is None:
            raise ValueError(f"--ab: unknown gputensor knob {name!r}; knobs: {', '.join(knobs)}")
        value = knob.parse(knob.env, raw, knob.default) if raw else not config.value(name)
        out.append((f"[{name}={int(value) if isinstance(value, bool) else value}]", {name: value}))
    return out


def _check(got: np.ndarray, want: np.ndarray, tol: float) -> str:
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
    err = float(np.max(np.abs(got - want))) if want.size else 0.0
    return "ok" if err <= tol * scale else f"MISMATCH (max err {err:.3g})"


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:,.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m benchmarks.bench_nn", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (seconds; any adapter)")
    parser.add_argument("--only", default="", help="comma-separated substrings of case names, or fnmatch "
                        "patterns where they hold '*' (softmax.f16.*)")
    parser.add_argument("--no-torch", action="store_true", help="time gputensor alone")
    parser.add_argument("--json", default="", help="write the results to this file")
    parser.add_argument("--target-s", type=float, default=None, help="seconds per timed batch")
    parser.add_argument("--ab", default=None, help="config knobs, comma separated: a gputensor row with each "
                        "flipped (NAME=VALUE: set)")
    args = parser.parse_args(argv)
    flips = variants(args.ab)
    torch, note = detect_torch(not args.no_torch)
    env = Env(backend=gt._dispatch.backend(), torch=torch, quick=args.quick)
    target_s = args.target_s if args.target_s is not None else (0.01 if args.quick else 0.2)
    patterns = [s for s in args.only.split(",") if s]
    selected = [c for c in cases(args.quick)
                if not patterns or any(fnmatch.fnmatchcase(c.name, s) if "*" in s else s in c.name for s in patterns)]
    print(f"adapter: {gt._dispatch.adapter_description()}")
    print(f"torch: {torch.__version__ if torch is not None else 'absent (' + str(note) + ')'}")
    header = (f"{'case':<40} {'gt host us':>11} {'gt gpu us':>10} {'gt wall us':>11} {'torch host':>11} "
              f"{'torch gpu':>10} {'torch wall':>11} {'speed':>6} {'gpu':>6} {'target':>6}  check")
    print(header)
    rng = np.random.default_rng(0)
    results = []
    for case in selected:
        host = case.make(rng)
        t = None
        want = None
        for suffix, overrides in [("", {})] + flips:
            row: dict[str, Any] = {"case": case.name + suffix, "target": case.target}
            try:
                with config.override(**overrides):
                    g, got = time_gputensor(case, host, env, target_s)
                row["gputensor"] = dataclasses.asdict(g)
            except Exception as exc:  # noqa: BLE001 - report and go on
                row["gputensor"] = {"error": f"{type(exc).__name__}: {exc}"}
                print(f"{row['case']:<40} error: {row['gputensor']['error']}")
                results.append(row)
                continue
            if torch is not None and not suffix:
                try:
                    t, want = time_torch(case, host, env, target_s)
                    row["torch"] = dataclasses.asdict(t)
                except Exception as exc:  # noqa: BLE001
                    row["torch"] = {"error": f"{type(exc).__name__}: {exc}"}
            checks = []
            if case.numpy_check or args.quick:
                checks.append("numpy " + _check(got, case.reference(host), case.tol))
            if want is not None:
                checks.append("torch " + _check(got, want, case.tol))
            row["check"] = ", ".join(checks) or "unchecked"
            speed = t.wall_us / g.wall_us if t is not None else None
            gpu_speed = t.gpu_us / g.gpu_us if t is not None and t.gpu_us and g.gpu_us else None
            row["speed"] = speed
            row["gpu_speed"] = gpu_speed
            results.append(row)
            print(f"{row['case']:<40} {_fmt(g.host_us):>11} {_fmt(g.gpu_us):>10} {_fmt(g.wall_us):>11} "
                  f"{_fmt(t.host_us if t else None):>11} {_fmt(t.gpu_us if t else None):>10} "
                  f"{_fmt(t.wall_us if t else None):>11} {('-' if speed is None else f'{speed:.2f}x'):>6} "
                  f"{('-' if gpu_speed is None else f'{gpu_speed:.2f}x'):>6} "
                  f"{case.target:>5.1f}x  {row['check']}", flush=True)
        del host
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"adapter": gt._dispatch.adapter_description(), "quick": args.quick, "results": results}, f,
                      indent=1)
    failed = [r["case"] for r in results if "error" in r.get("gputensor", {}) or "MISMATCH" in str(r.get("check"))
              or "shape" in str(r.get("check"))]
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
