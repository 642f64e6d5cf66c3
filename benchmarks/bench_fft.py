"""gputensor.fft beside torch.fft (cuFFT) and cupy.fft in one process:
``python3 -m benchmarks.bench_fft``.

Cases (through the public API; complex64 unless named, float32 input for the real transforms):

* ``fft.c64.2^k``: 1-D of length 2^10 .. 2^24 (even powers, plus 2^24), one transform;
* ``fft.c64.2^kxbB``: batched 1-D along the last axis (2^10 x 4096, 2^12 x 4096, 2^16 x 256,
  2^20 x 16); ``fft.c64.axis0.4096x1024``: along the first axis (columns);
* ``fft.c64.1009xb4096``, ``fft.c64.65537xb16`` (Bluestein), ``fft.c64.14175xb1024`` (mixed
  radix 3^4 5^2 7);
* ``fft2.c64.1024^2``, ``fft2.c64.4096^2``, ``fftn.c64.256^3``: n-D over every axis;
* ``fft.c128.2^12``, ``fft.c128.2^20``, ``fft.c128.1009``: complex128;
* ``rfft.f32.N``: real transforms of powers of two (2^10, 2^16, 2^20) and of primes (1009,
  65537), single and batched (``2^12xb64``, ``2^12xb1024``, ``2^16xb64``, ``1009xb1024``),
  along the first axis (``rfft.f32.axis0.1024x256``: knob ``fft_real_strided``); ``irfft.c64.2^16``
  (2^15 + 1 values to 2^16 reals).

For each framework a case is called once (cold: compilation, plans), its result checked against
numpy.fft of the same input (max error relative to the largest value, printed as ``err``;
tolerance 1e-3 for complex64 / float32, 1e-10 for complex128), the clocks warmed
(``_timing.ClockWarmer``), then 3 batches of ``reps`` calls timed, every result held until the
synchronisation that ends its batch (``_timing.Timer.batch``). Per call, medians over the
batches: ``host us`` (issuing the calls), ``gpu us`` (gputensor: the kernels' timestamp-query
times over a profiled batch; torch / cupy: CUDA events around a batch), ``wall us`` (calls plus
the final synchronisation); ``gt/torch`` and ``gt/cupy`` are speed ratios of the wall times
(torch wall / gputensor wall: above 1, gputensor is faster).
Targets (issue 16): rfft at least 0.5x cuFFT for powers of two, 0.3x for prime lengths.

``gt disp`` is the number of dispatches per gputensor call (the context's counter over the
timed batches). ``--ab KNOB[,KNOB]`` (names of ``gputensor._backend.config`` knobs, e.g.
``fft_real_fused,fft_two_butterflies``; ``NAME=VALUE`` sets one, e.g. ``fft_min_workgroups=0``):
after each case's row, one more gputensor row per knob with that knob flipped or set
(``config.override``; case id suffixed ``[knob=0]``, ``[knob=1]`` or ``[knob=VALUE]``; knobs
joined by ``+``, e.g. ``fft_pass_twiddles=0+fft_direct_io=0``, share one row), its
ratios against the same torch and cupy times: both variants measured in one run.

``--quick``: tiny sizes (seconds, any adapter: lavapipe in CI); ``--only PATTERN[,PATTERN]``
(fnmatch on case ids), ``--no-torch``, ``--no-cupy``, ``--target-s`` (seconds per timed
batch), ``--json PATH``.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import gputensor as gt
import gputensor.fft  # noqa: F401  (the extension, whatever the namespace imports)
from gputensor._backend import config

from . import _timing


@dataclass(frozen=True)
class Case:
    id: str
    op: str  # fft, fft2, fftn, rfft, irfft
    shape: tuple[int, ...]
    dtype: str = "complex64"  # the input's (float32 for rfft)
    axis: int = -1  # fft: the transformed axis


def _p2(k: int) -> str:
    return f"2^{k}"


def cases(quick: bool) -> list[Case]:
    if quick:
        return [Case("fft.c64.2^10", "fft", (1 << 10,)), Case("fft.c64.2^6xb64", "fft", (64, 1 << 6)),
                Case("fft.c64.97xb8", "fft", (8, 97)), Case("fft.c64.axis0.64x8", "fft", (64, 8), axis=0),
                Case("fft2.c64.64^2", "fft2", (64, 64)), Case("fftn.c64.16^3", "fftn", (16, 16, 16)),
                Case("fft.c128.2^8", "fft", (1 << 8,), "complex128"),
                Case("rfft.f32.2^10", "rfft", (1 << 10,), "float32"), Case("rfft.f32.1009", "rfft", (1009,), "float32"),
                Case("rfft.f32.2^8xb64", "rfft", (64, 1 << 8), "float32"),
                Case("rfft.f32.2^14", "rfft", (1 << 14,), "float32"),
                Case("rfft.f32.257xb16", "rfft", (16, 257), "float32"),
                Case("rfft.f32.axis0.64x8", "rfft", (64, 8), "float32", axis=0),
                Case("irfft.c64.2^10", "irfft", (513,))]
    out = [Case(f"fft.c64.{_p2(k)}", "fft", (1 << k,)) for k in (10, 12, 14, 16, 18, 20, 22, 24)]
    out += [Case(f"fft.c64.{_p2(k)}xb{b}", "fft", (b, 1 << k)) for k, b in ((10, 4096), (12, 4096), (16, 256), (20, 16))]
    out += [Case("fft.c64.axis0.4096x1024", "fft", (4096, 1024), axis=0),
            Case("fft.c64.1009xb4096", "fft", (4096, 1009)), Case("fft.c64.65537xb16", "fft", (16, 65537)),
            Case("fft.c64.14175xb1024", "fft", (1024, 14175))]
    out += [Case("fft2.c64.1024^2", "fft2", (1024, 1024)), Case("fft2.c64.4096^2", "fft2", (4096, 4096)),
            Case("fftn.c64.256^3", "fftn", (256, 256, 256))]
    out += [Case("fft.c128.2^12", "fft", (1 << 12,), "complex128"), Case("fft.c128.2^20", "fft", (1 << 20,), "complex128"),
            Case("fft.c128.1009", "fft", (1009,), "complex128")]
    out += [Case(f"rfft.f32.{_p2(k)}", "rfft", (1 << k,), "float32") for k in (10, 16, 20)]
    out += [Case("rfft.f32.1009", "rfft", (1009,), "float32"), Case("rfft.f32.65537", "rfft", (65537,), "float32"),
            Case("rfft.f32.2^12xb64", "rfft", (64, 1 << 12), "float32"),
            Case("rfft.f32.2^12xb1024", "rfft", (1024, 1 << 12), "float32"),
            Case("rfft.f32.2^16xb64", "rfft", (64, 1 << 16), "float32"),
            Case("rfft.f32.1009xb1024", "rfft", (1024, 1009), "float32"),
            Case("rfft.f32.axis0.1024x256", "rfft", (1024, 256), "float32", axis=0),
            Case("irfft.c64.2^16", "irfft", ((1 << 15) + 1,))]
    return out


def make_input(case: Case, rng: np.random.Generator) -> np.ndarray:
    x = rng.standard_normal(case.shape).astype(np.float32)
    if case.dtype == "float32":
        return x
    return (x + 1j * rng.standard_normal(case.shape).astype(np.float32)).astype(case.dtype)


def reference(case: Case, x: np.ndarray) -> np.ndarray:
    if case.op in ("fft", "rfft"):
        return getattr(np.fft, case.op)(x, axis=case.axis)
    return {"fft2": np.fft.fft2, "fftn": np.fft.fftn, "rfft": np.fft.rfft, "irfft": np.fft.irfft}[case.op](x)


def call_for(name: str, mod: Any, case: Case) -> Callable[[Any], Any]:
    """The case's call on framework ``name`` whose fft module is ``mod`` (same spec names)."""
    if case.op == "fft2":
        return (lambda a: mod.fftn(a, axes=(-2, -1))) if name == "gputensor" else (lambda a: mod.fft2(a))
    if case.op in ("fft", "rfft"):
        axis, fn = case.axis, getattr(mod, case.op)
        if axis == -1:
            return lambda a: fn(a)
        return (lambda a: fn(a, dim=axis)) if name == "torch" else (lambda a: fn(a, axis=axis))
    return {"fftn": lambda a: mod.fftn(a), "rfft": lambda a: mod.rfft(a), "irfft": lambda a: mod.irfft(a)}[case.op]


def _host(name: str, result: Any) -> np.ndarray:
    if name == "gputensor":
        return gt.asnumpy(result)
    if name == "torch":
        return result.cpu().numpy()
    return result.get()


def error(got: np.ndarray, want: np.ndarray) -> float | None:
    """The largest error relative to the largest value; None for a shape mismatch."""
    if got.shape != want.shape:
        return None
    return float(np.max(np.abs(got - want))) / max(float(np.max(np.abs(want))), 1e-30)


def check(err: float | None, case: Case) -> str:
    if err is None:
        return "shape mismatch"
    tol = 1e-10 if case.dtype == "complex128" else 1e-3
    return "ok" if err <= tol else f"error {err:.1e}"


def frameworks(use_torch: bool, use_cupy: bool) -> list[tuple[str, Any, _timing.Timer, Callable[[np.ndarray], Any]]]:
    """(name, fft module, timer, upload) of every framework present."""
    out: list[tuple[str, Any, _timing.Timer, Callable[[np.ndarray], Any]]] = [
        ("gputensor", gt.fft, _timing.GputensorTimer(), gt.asarray)]
    if use_torch:
        try:
            import torch

            if torch.cuda.is_available():
                out.append(("torch", torch.fft, _timing.TorchTimer(torch),
                            lambda v: torch.from_numpy(v).cuda()))
        except ImportError:
            pass
    if use_cupy:
        try:
            import cupy

            cupy.cuda.runtime.getDeviceCount()
            out.append(("cupy", cupy.fft, _timing.CupyTimer(cupy), cupy.asarray))
        except Exception:  # noqa: BLE001 - no cupy or no CUDA device
            pass
    return out


def variants(names: str | None) -> list[tuple[str, dict[str, Any]]]:
    """(id suffix, ``config.override`` arguments) of each ``--ab`` knob flipped from its value
    now. ValueError for an unknown knob name."""
    out: list[tuple[str, dict[str, Any]]] = []
    knobs = {k.name: k for k in config.KNOBS}
    for item in [v.strip() for v in (names or "").split(",") if v.strip()]:
        labels, values = [], {}
        for part in item.split("+"):  # knobs joined by '+': one row with all of them set
            name, _, raw = part.strip().partition("=")
            knob = knobs.get(name)
            if knob is None:
                raise ValueError(f"--ab: unknown gputensor knob {name!r}; knobs: {', '.join(knobs)}")
            value = knob.parse(knob.env, raw, knob.default) if raw else not config.value(name)
            labels.append(f"{name}={int(value) if isinstance(value, bool) else value}")
            values[name] = value
        out.append((f"[{'+'.join(labels)}]", values))
    return out


def run_case(case: Case, fws: list, warmer: _timing.ClockWarmer, target_s: float,
             overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The row of ``case``: per framework of ``fws`` its check, error and times (gputensor
    under ``config.override(**overrides)`` where given)."""
    x = make_input(case, np.random.default_rng(0))
    want = reference(case, x)
    row: dict[str, Any] = {"id": case.id, "shape": list(case.shape)}
    for name, mod, timer, put in fws:
        knobs = config.override(**overrides) if overrides and name == "gputensor" else contextlib.nullcontext()
        try:
            knobs.__enter__()
            a = put(x)
            fn = call_for(name, mod, case)
            run = lambda _i: fn(a)  # noqa: E731
            cold, first = _timing.cold_call(run, timer.sync)
            err = error(_host(name, first), want)
            status = check(err, case)
            del first
            per = _timing.estimate_call(run, timer.sync, max_calls=8)
            reps = int(max(1, min(200, target_s / per)))
            warmer.warm()
            batches = [timer.batch(run, reps, 1 + b * reps) for b in range(3)]
            gpu = statistics.median(b.gpu_s for b in batches) if batches[0].gpu_s is not None else None
            if gpu is None:
                gpu, _ = timer.gpu_batch(run, min(reps, 8), 1)
            row[name] = {"check": status, "err": err, "cold_s": cold, "reps": reps,
                         "host_us": statistics.median(b.host_s for b in batches) * 1e6,
                         "wall_us": statistics.median(b.wall_s for b in batches) * 1e6,
                         "gpu_us": gpu * 1e6 if gpu is not None else None,
                         "dispatches": (statistics.median(b.counters["dispatches"] / reps for b in batches)
                                        if "dispatches" in batches[0].counters else None)}
        except Exception as exc:  # noqa: BLE001 - reported, the run goes on
            row[name] = {"check": f"error: {type(exc).__name__}: {exc}"[:160], "wall_us": None}
        finally:
            timer.cleanup()
            knobs.__exit__(None, None, None)
    return row


def _us(v: float | None) -> str:
    return f"{v:11.1f}" if v else f"{'-':>11}"


def _ratio(row: dict[str, Any], other: str) -> str:
    gt_wall = row.get("gputensor", {}).get("wall_us")
    o = row.get(other, {}).get("wall_us")
    return f"{o / gt_wall:8.2f}x" if gt_wall and o else f"{'-':>9}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m benchmarks.bench_fft", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (seconds; any adapter)")
    parser.add_argument("--only", default="*", help="fnmatch pattern(s) of case ids, comma separated")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--no-cupy", action="store_true")
    parser.add_argument("--target-s", type=float, default=None, help="seconds per timed batch")
    parser.add_argument("--json", default=None, help="write the results to this file")
    parser.add_argument("--ab", default=None, help="config knobs, comma separated: a gputensor row with each flipped")
    args = parser.parse_args(argv)
    flips = variants(args.ab)
    fws = frameworks(not args.no_torch, not args.no_cupy)
    torch = next((t.torch for n, _, t, _ in fws if n == "torch"), None)
    warmer = _timing.ClockWarmer(torch)
    target_s = args.target_s if args.target_s is not None else (0.005 if args.quick else 0.1)
    patterns = args.only.split(",")
    names = [n for n, *_ in fws]
    print(f"adapter: {gt._dispatch.adapter_description()}; frameworks: {', '.join(names)}")
    short = {"gputensor": "gt", "torch": "torch", "cupy": "cupy"}
    head = "".join(f"{f'{short[n]} {k}':>11}" for n in names for k in ("host", "gpu", "wall"))
    print(f"{'case (us per call)':<44}{head}{'gt/torch':>9}{'gt/cupy':>9}{'gt err':>9}{'gt disp':>8}  checks")
    rows = []
    t_start = time.perf_counter()
    for case in cases(args.quick):
        if not any(fnmatch.fnmatch(case.id, p) for p in patterns):
            continue
        row = run_case(case, fws, warmer, target_s)
        case_rows = [row]
        for suffix, overrides in flips:
            flipped = run_case(case, fws[:1], warmer, target_s, overrides)
            flipped["id"] += suffix
            flipped.update({n: row[n] for n in names[1:]})  # (the same torch / cupy times)
            case_rows.append(flipped)
        for row in case_rows:
            rows.append(row)
            cells = "".join(_us(row[n].get(k)) for n in names for k in ("host_us", "gpu_us", "wall_us"))
            checks = " ".join(f"{n}:{row[n]['check']}" for n in names)
            gt_err = row["gputensor"].get("err")
            err = f"{gt_err:9.1e}" if gt_err is not None else f"{'-':>9}"
            disp = row["gputensor"].get("dispatches")
            disp_text = f"{disp:8.1f}" if disp is not None else f"{'-':>8}"
            print(f"{row['id']:<44}{cells}{_ratio(row, 'torch'):>9}{_ratio(row, 'cupy'):>9}{err}{disp_text}  {checks}",
                  flush=True)
    print(f"total {time.perf_counter() - t_start:.1f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"adapter": gt._dispatch.adapter_description(), "quick": args.quick, "results": rows}, f,
                      indent=1)
    failed = [r["id"] for r in rows if r.get("gputensor", {}).get("check") != "ok"]
    if failed:
        print("failed checks: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
