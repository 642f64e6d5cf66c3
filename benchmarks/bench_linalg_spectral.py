"""gputensor.linalg's eigh, eigvalsh and svd beside torch.linalg and NumPy (host LAPACK) in one
process: ``python3 -m benchmarks.bench_linalg_spectral``.

Cases (float32, random input; symmetric for eigh):

* ``eigh.n{512,1024,4096}``, ``eigvalsh.n{...}``, ``svd.n{512,1024,4096}`` (``full_matrices=False``);
* ``eigh.batch10000.n8``: 10,000 symmetric 8x8 matrices.

Each framework's call is made once (cold: compilation), its result checked (residual
``||A V - V diag(w)|| / ||A||`` or ``||U diag(S) Vh - A|| / ||A||``, orthogonality of the
vectors), then timed: ``time_calls`` (``benchmarks/_timing.py``) gives the best over a few batches
of the wall seconds per call, each batch ending with the framework's synchronisation. Cases
whose single call takes longer than ``--budget`` seconds (default 60; a 4096 SVD on a slow
adapter) are timed by that one call. Printed: seconds per call per framework, and the ratios
``vs torch`` (torch time / gputensor time; above 1 gputensor is faster) and ``vs numpy``
beside the targets (faster than NumPy from n = 512; eigh and svd at n = 4096 at least 0.2x
torch; batched 8x8 eigh at least 1x torch).

``--quick`` runs tiny sizes (any adapter, seconds); ``--sizes 512,1024`` sets the orders of the
single-matrix cases, ``--batch N`` the batched case's count (0: none); ``--only`` selects cases
by substring; ``--no-torch`` skips torch; ``--no-numpy`` skips NumPy; ``--json PATH`` writes the
results. On a GPU with a per-command time limit, run the n=4096 cases on their own:
``--sizes 4096 --batch 0 --no-numpy --budget 30``. ``--profile`` prints the GPU time per kernel
of one gputensor call after each case (``gt.profile()``). ``--ab KNOB[=VALUE][,...]`` (names of
``gputensor._backend.config`` knobs, as ``bench_linalg``'s): after each case's row one more
gputensor row per variant under ``config.override`` (e.g. ``--ab linalg_eigh_tridiag=off``: eigh
by block Jacobi beside the tridiagonal path), with the same torch and NumPy times.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import gputensor as gt
from gputensor._backend import config

from ._harness import detect_torch
from ._timing import time_calls


@dataclasses.dataclass
class SpectralCase:
    """``kind`` 'eigh', 'eigvalsh' or 'svd' on ``batch`` (0: a single matrix) n x n float32 matrices;
    ``torch_target``: the wanted torch-time / gputensor-time ratio (None: no target)."""

    name: str
    kind: str
    n: int
    batch: int
    torch_target: float | None
    numpy_target: float | None = 1.0


#: Matrix orders of the single-matrix cases, and the batch of the batched 8x8 case.
SIZES = (512, 1024, 4096)
BATCH = 10000


def cases(quick: bool, sizes: tuple[int, ...] = SIZES, batch: int = BATCH) -> list[SpectralCase]:
    """The cases: eigh and svd of one n x n matrix for each n of ``sizes`` (targets at n >=
    4096), then ``batch`` symmetric 8x8 matrices (``batch`` 0: none); ``quick``: tiny sizes."""
    if quick:
        return [SpectralCase("eigh.n48", "eigh", 48, 0, None), SpectralCase("eigvalsh.n70", "eigvalsh", 70, 0, None),
                SpectralCase("svd.n40", "svd", 40, 0, None),
                SpectralCase("eigh.batch100.n8", "eigh", 8, 100, None, None)]
    out = []
    for n in sizes:
        target = 0.2 if n >= 4096 else None
        out.append(SpectralCase(f"eigh.n{n}", "eigh", n, 0, target))
        out.append(SpectralCase(f"eigvalsh.n{n}", "eigvalsh", n, 0, None))
        out.append(SpectralCase(f"svd.n{n}", "svd", n, 0, target))
    if batch:
        out.append(SpectralCase(f"eigh.batch{batch}.n8", "eigh", 8, batch, 1.0, None))
    return out


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes takes comma-separated orders, not {text!r}") from None
    if any(n < 1 for n in sizes):
        raise argparse.ArgumentTypeError(f"--sizes takes positive orders, not {text!r}")
    return sizes


def _input(case: SpectralCase) -> np.ndarray:
    rng = np.random.default_rng(case.n)
    shape = ((case.batch,) if case.batch else ()) + (case.n, case.n)
    a = rng.standard_normal(shape).astype(np.float32)
    if case.kind in ("eigh", "eigvalsh"):
        a = (a + np.swapaxes(a, -1, -2)) / 2
    return a


def _check(case: SpectralCase, a: np.ndarray, result: tuple[np.ndarray, ...]) -> float:
    """The larger of the relative residual and the orthogonality error (float64 arithmetic)."""
    a64 = a.astype(np.float64)
    norm = float(np.linalg.norm(a64.reshape(-1)))  # Frobenius over the stack
    if case.kind == "eigvalsh":  # against float64 LAPACK, relative to ||A||_2
        want = np.linalg.eigvalsh(a64)
        return float(np.abs(result[0].astype(np.float64) - want).max() / max(np.abs(want).max(), 1e-300))
    if case.kind == "eigh":
        w, v = (r.astype(np.float64) for r in result)
        res = float(np.linalg.norm((a64 @ v - v * w[..., None, :]).reshape(-1))) / norm
        orth = float(np.abs(np.swapaxes(v, -1, -2) @ v - np.eye(case.n)).max())
    else:
        u, s, vh = (r.astype(np.float64) for r in result)
        res = float(np.linalg.norm(((u * s[..., None, :]) @ vh - a64).reshape(-1))) / norm
        orth = max(float(np.abs(np.swapaxes(u, -1, -2) @ u - np.eye(case.n)).max()),
                   float(np.abs(vh @ np.swapaxes(vh, -1, -2) - np.eye(case.n)).max()))
    return max(res, orth)


def _time(fn: Callable[[], Any], sync: Callable[[], Any], budget: float) -> float:
    t0 = time.perf_counter()
    fn()
    sync()
    single = time.perf_counter() - t0
    if single > budget:
        return single
    reps = max(1, min(10, int(budget / 4 / max(single, 1e-6))))
    return time_calls(fn, sync, reps=reps, repeats=2 if single > 1 else 3)


def _frameworks(case: SpectralCase, a: np.ndarray, torch: Any, use_numpy: bool) -> dict[str, tuple[Callable, Callable,
                                                                                                   Callable]]:
    """name -> (call, sync, to_numpy(result))."""
    out = {}
    ga = gt.asarray(a)
    if case.kind == "eigh":
        out["gputensor"] = (lambda: gt.linalg.eigh(ga), gt.synchronize, lambda r: tuple(gt.asnumpy(x) for x in r))
    elif case.kind == "eigvalsh":
        out["gputensor"] = (lambda: gt.linalg.eigvalsh(ga), gt.synchronize, lambda r: (gt.asnumpy(r),))
    else:
        out["gputensor"] = (lambda: gt.linalg.svd(ga, full_matrices=False), gt.synchronize,
                            lambda r: tuple(gt.asnumpy(x) for x in r))
    if torch is not None:
        ta = torch.asarray(a, device="cuda")
        if case.kind == "eigh":
            call = lambda: torch.linalg.eigh(ta)  # noqa: E731
        elif case.kind == "eigvalsh":
            call = lambda: (torch.linalg.eigvalsh(ta),)  # noqa: E731
        else:
            call = lambda: torch.linalg.svd(ta, full_matrices=False)  # noqa: E731
        out["torch"] = (call, torch.cuda.synchronize, lambda r: tuple(x.cpu().numpy() for x in r))
    if use_numpy:
        if case.kind == "eigh":
            call = lambda: np.linalg.eigh(a)  # noqa: E731
        elif case.kind == "eigvalsh":
            call = lambda: (np.linalg.eigvalsh(a),)  # noqa: E731
        else:
            call = lambda: np.linalg.svd(a, full_matrices=False)  # noqa: E731
        out["numpy"] = (call, lambda: None, lambda r: tuple(r))
    return out


def run(argv: list[str] | None = None) -> list[dict[str, Any]]:
    p = argparse.ArgumentParser(prog="python3 -m benchmarks.bench_linalg_spectral")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", default=None)
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--no-numpy", action="store_true")
    p.add_argument("--budget", type=float, default=60.0)
    p.add_argument("--json", default=None)
    p.add_argument("--sizes", type=_sizes, default=SIZES, help="orders of the single-matrix cases (512,1024,4096)")
    p.add_argument("--batch", type=int, default=BATCH, help="matrices of the batched 8x8 eigh case (0: none)")
    p.add_argument("--profile", action="store_true",
                   help="after each case, gputensor's kernels of one call with their GPU times (gt.profile())")
    p.add_argument("--ab", default=None,
                   help="config knobs, comma separated (NAME or NAME=VALUE): a gputensor row with each flipped/set")
    args = p.parse_args(argv)
    from .bench_linalg import variants

    flips = variants(args.ab)
    torch, why = detect_torch(not args.no_torch)
    if torch is None and not args.no_torch:
        print(f"torch: not used ({why})")
    rows = []
    print(f"{'case':<36}{'gputensor s':>13}{'torch s':>11}{'numpy s':>11}{'vs torch':>10}{'target':>8}"
          f"{'vs numpy':>10}{'target':>8}  check")
    for case in cases(args.quick, args.sizes, max(0, args.batch)):
        if args.only and args.only not in case.name:
            continue
        a = _input(case)
        times: dict[str, float] = {}
        checks: dict[str, float] = {}
        for name, (call, sync, host) in _frameworks(case, a, torch, not args.no_numpy).items():
            result = call()
            sync()
            checks[name] = _check(case, a, host(result))
            del result
            times[name] = _time(call, sync, args.budget)
        g = times["gputensor"]
        vs_torch = times["torch"] / g if "torch" in times else None
        vs_numpy = times["numpy"] / g if "numpy" in times else None
        row = {"case": case.name, "seconds": times, "check": checks, "vs_torch": vs_torch,
               "torch_target": case.torch_target, "vs_numpy": vs_numpy, "numpy_target": case.numpy_target}
        rows.append(row)

        def fmt(x: float | None, spec: str = ".3g") -> str:
            return "-" if x is None else format(x, spec)

        print(f"{case.name:<36}{fmt(g):>13}{fmt(times.get('torch')):>11}{fmt(times.get('numpy')):>11}"
              f"{fmt(vs_torch, '.2f'):>10}{fmt(case.torch_target):>8}{fmt(vs_numpy, '.2f'):>10}"
              f"{fmt(case.numpy_target):>8}  {fmt(checks['gputensor'], '.1e')}", flush=True)
        if args.profile:
            call = _frameworks(case, a, None, False)["gputensor"][0]
            with gt.profile() as report:
                call()
            print(report, flush=True)
        for suffix, overrides in flips:
            with config.override(**overrides):
                call, sync, host = _frameworks(case, a, None, False)["gputensor"]
                result = call()
                sync()
                check = _check(case, a, host(result))
                del result
                ga_s = _time(call, sync, args.budget)
            ratio_t = times["torch"] / ga_s if "torch" in times else None
            ratio_n = times["numpy"] / ga_s if "numpy" in times else None
            rows.append({"case": case.name + suffix, "seconds": {"gputensor": ga_s}, "check": {"gputensor": check},
                         "vs_torch": ratio_t, "torch_target": case.torch_target, "vs_numpy": ratio_n,
                         "numpy_target": case.numpy_target})
            print(f"{(case.name + suffix):<36}{fmt(ga_s):>13}{fmt(times.get('torch')):>11}"
                  f"{fmt(times.get('numpy')):>11}{fmt(ratio_t, '.2f'):>10}{fmt(case.torch_target):>8}"
                  f"{fmt(ratio_n, '.2f'):>10}{fmt(case.numpy_target):>8}  {fmt(check, '.1e')}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"adapter": str(gt._dispatch.backend()), "quick": args.quick, "rows": rows}, f, indent=1)
    return rows


def main(argv: list[str] | None = None) -> int:
    run(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
