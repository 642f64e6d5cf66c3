"""gputensor.fft's complex transforms beside torch.fft (cuFFT) and cupy.fft in one process.

Cases (complex64 unless named): 1-D fft of 2^10 .. 2^24 points, single and batched (about 2^24
points per call); prime and mixed lengths (Bluestein: 1009, 65537; mixed radix: 3^4 5^2 7 =
14175); 2-D fftn 1024^2 and 4096^2; 3-D fftn 256^3; complex128 2^20. Each framework's first
result is checked against NumPy (normwise relative error, printed as ``err``) where the case
has at most 2^22 points. Per call: wall milliseconds (best of 3 batches of calls recorded back
to back and one synchronisation) and, for gputensor, GPU milliseconds from timestamp queries
(``gt gpu``); ``torch/gt`` is the speed ratio to torch (above 1: gputensor faster).

``python3 -m benchmarks.bench_fft_core`` (``--quick``: tiny sizes, any adapter; ``--only
PATTERN``: fnmatch patterns of case ids, comma separated; ``--no-torch``, ``--no-cupy``;
``--json PATH``).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import gputensor as gt

from . import _timing


@dataclass(frozen=True)
class Case:
    id: str
    shape: tuple[int, ...]
    axes: tuple[int, ...]  # () : 1-D along the last axis
    dtype: str = "complex64"


def cases(quick: bool) -> list[Case]:
    if quick:
        return [Case("fft.1024", (1024,), ()), Case("fft.b64x256", (64, 256), ()),
                Case("fft.1009", (4, 1009), ()), Case("fft2.64x64", (64, 64), (0, 1)),
                Case("fft.8192.c128", (8192,), (), "complex128")]
    out = []
    for k in (10, 12, 14, 16, 18, 20, 22, 24):
        out.append(Case(f"fft.2^{k}", (1 << k,), ()))
    for k in (10, 12, 16, 20):
        out.append(Case(f"fft.b{1 << (24 - k)}x2^{k}", (1 << (24 - k), 1 << k), ()))
    out += [Case("fft.b4096x1009", (4096, 1009), ()), Case("fft.b16x65537", (16, 65537), ()),
            Case("fft.b1024x14175", (1024, 14175), ()),
            Case("fft2.1024^2", (1024, 1024), (0, 1)), Case("fft2.4096^2", (4096, 4096), (0, 1)),
            Case("fft3.256^3", (256, 256, 256), (0, 1, 2)),
            Case("fft.axis0.4096x1024", (4096, 1024), (0,)),
            Case("fft.2^20.c128", (1 << 20,), (), "complex128")]
    return out


def _call(xp: str, mod: Any, case: Case) -> Callable[[Any], Any]:
    if not case.axes:
        return lambda a: mod.fft.fft(a)
    if len(case.axes) == 1:
        axis = case.axes[0]
        return (lambda a: mod.fft.fft(a, dim=axis)) if xp == "torch" else (lambda a: mod.fft.fft(a, axis=axis))
    axes = case.axes
    return (lambda a: mod.fft.fftn(a, dim=axes)) if xp == "torch" else (lambda a: mod.fft.fftn(a, axes=axes))


def _reference(x: np.ndarray, case: Case) -> np.ndarray:
    x = x.astype(np.complex128)
    if not case.axes:
        return np.fft.fft(x)
    if len(case.axes) == 1:
        return np.fft.fft(x, axis=case.axes[0])
    return np.fft.fftn(x, axes=case.axes)


def _host(result: Any) -> np.ndarray:
    if isinstance(result, gt.GpuArray):
        return np.asarray(gt.asnumpy(result))
    if hasattr(result, "detach"):
        return result.detach().cpu().numpy()
    return result.get()


def run_case(case: Case, frameworks: list[tuple[str, Any, Callable[[np.ndarray], Any], Callable[[], Any]]],
             warmer: _timing.ClockWarmer, target_s: float) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(case.shape, dtype=np.float32)
         + 1j * rng.standard_normal(case.shape, dtype=np.float32)).astype(case.dtype)
    check = x.size <= 1 << 22
    ref = _reference(x, case) if check else None
    row: dict[str, Any] = {"id": case.id}
    for name, mod, put, sync in frameworks:
        try:
            data = put(x)
            fn = _call(name, mod, case)
            first = fn(data)
            sync()
            entry: dict[str, Any] = {}
            if ref is not None:
                got = _host(first)
                entry["err"] = float(np.abs(got - ref).max() / np.abs(ref).max())
            del first
            warmer.warm()
            per = _timing.estimate_call(lambda _i: fn(data), sync, max_calls=4)
            reps = int(max(1, min(100, target_s / per)))
            entry["ms"] = _timing.time_calls(lambda: fn(data), sync, reps=reps, repeats=3) * 1e3
            if name == "gputensor":
                gpu_s, kernels, _ = _timing.gpu_profile(lambda: fn(data), calls=min(8, reps))
                entry["gpu_ms"] = None if gpu_s is None else gpu_s * 1e3
                entry["kernels_ms"] = {k: v * 1e3 for k, v in kernels.items()}
            row[name] = entry
            del data
        except Exception as exc:  # noqa: BLE001 - reported, the run goes on
            row[name] = {"ms": None, "error": f"{type(exc).__name__}: {exc}"[:160]}
        if name == "gputensor":
            gt.get_default_memory_pool().free_all_blocks()
    return row


def _fmt(v: float | None, width: int = 10) -> str:
    return f"{v:{width}.3f}" if v else f"{'-':>{width}}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m benchmarks.bench_fft_core", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (seconds; any adapter)")
    parser.add_argument("--only", default="*", help="fnmatch pattern(s) of case ids, comma separated")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--no-cupy", action="store_true")
    parser.add_argument("--target-s", type=float, default=None, help="seconds per timed batch")
    parser.add_argument("--json", default=None, help="write the results to this file")
    args = parser.parse_args(argv)
    frameworks: list[tuple[str, Any, Callable[[np.ndarray], Any], Callable[[], Any]]] = [
        ("gputensor", gt, gt.asarray, gt.synchronize)]
    torch = None
    if not args.no_torch:
        try:
            import torch as _torch

            if _torch.cuda.is_available():
                torch = _torch
                frameworks.append(("torch", torch, lambda v: torch.from_numpy(v).cuda(), torch.cuda.synchronize))
        except ImportError:
            pass
    if not args.no_cupy:
        try:
            import cupy

            cupy.cuda.runtime.getDeviceCount()
            frameworks.append(("cupy", cupy, cupy.asarray, lambda: cupy.cuda.Device().synchronize()))
        except Exception:  # noqa: BLE001 - no cupy or no CUDA device
            pass
    warmer = _timing.ClockWarmer(torch)
    target_s = args.target_s if args.target_s is not None else (0.01 if args.quick else 0.2)
    patterns = args.only.split(",")
    names = [f[0] for f in frameworks]
    print(f"adapter: {gt._dispatch.adapter_description()}; frameworks: {', '.join(names)}")
    print(f"{'case':<24}{'gt ms':>10}{'gt gpu':>10}{'torch ms':>10}{'cupy ms':>10}{'torch/gt':>10}"
          f"{'gt err':>10}")
    rows = []
    t_start = time.perf_counter()
    for case in cases(args.quick):
        if not any(fnmatch.fnmatch(case.id, p) for p in patterns):
            continue
        row = run_case(case, frameworks, warmer, target_s)
        rows.append(row)
        g, t, c = (row.get(k, {}) for k in ("gputensor", "torch", "cupy"))
        ratio = f"{t['ms'] / g['ms']:9.2f}x" if g.get("ms") and t.get("ms") else f"{'-':>10}"
        err = f"{g['err']:10.1e}" if "err" in g else f"{'-':>10}"
        print(f"{case.id:<24}{_fmt(g.get('ms'))}{_fmt(g.get('gpu_ms'))}{_fmt(t.get('ms'))}{_fmt(c.get('ms'))}"
              f"{ratio}{err}" + (f"  {g['error']}" if "error" in g else ""), flush=True)
    print(f"total {time.perf_counter() - t_start:.1f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"adapter": gt._dispatch.adapter_description(), "quick": args.quick, "results": rows}, f,
                      indent=1)
    failed = [r["id"] for r in rows if r.get("gputensor", {}).get("ms") is None]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
