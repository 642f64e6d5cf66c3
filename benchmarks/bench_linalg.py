"""gputensor.linalg factorizations beside torch.linalg and NumPy (host LAPACK) in one process.

Cases: cholesky, solve (one right-hand side), qr (reduced), inv and det of n x n float32
matrices for n = 512, 1024, 4096, and stacks of 10,000 8 x 8 and 1,000 32 x 32 solve / inv /
cholesky. Each
framework's result is checked (residuals against the input) before it is timed. Wall time per
call: best of 3 batches of calls recorded back to back and one synchronisation (gputensor's
cholesky / solve / inv read their failure flag or per-matrix info words back inside each call,
one readback, as torch.linalg's checks do; ``--no-check`` leaves it out, as torch's ``*_ex``). Columns: milliseconds per call and the ratios ``numpy/gt`` and ``gt/torch`` as speed
ratios (above 1: gputensor faster). Targets (issue 15): faster than NumPy from n = 512; at
n = 4096 cholesky, solve and qr at least 0.3x torch; the 8 x 8 stacks at least 1x torch.

``python3 -m benchmarks.bench_linalg`` (``--quick``: tiny sizes, any adapter; ``--only
PATTERN`` selects cases by fnmatch; ``--no-torch``; ``--no-numpy``; ``--no-check``: without gputensor's flag
readback, as torch's ``*_ex`` functions; ``--block NB``: the blocked factorizations' block
width, as ``GPUTENSOR_LINALG_BLOCK``; ``--panel-rows N``: the panel height above which LU and QR
panels run over many workgroups, as ``GPUTENSOR_LINALG_PANEL_ROWS``; ``--profile``: after each case, gputensor's kernels of one
call with their GPU times (``gt.profile()``); ``--json PATH``). ``--ab KNOB[,KNOB]`` (names of
``gputensor._backend.config`` knobs, e.g. ``linalg_chol_syrk``; ``NAME=VALUE`` sets one, e.g.
``linalg_block=128``): after each case's row, one more gputensor row per knob with that knob
flipped or set (``config.override``; case id suffixed ``[knob=0]``, ``[knob=1]`` or
``[knob=VALUE]``; ``A=1+B=2`` sets two knobs in one variant), its ratios against the same NumPy and torch times (and with ``--profile``
its kernels too): both variants measured in one run.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import gputensor as gt
from gputensor._backend import config

from . import _timing


@dataclass(frozen=True)
class Case:
    id: str
    op: str
    n: int
    batch: tuple[int, ...]


def cases(quick: bool) -> list[Case]:
    orders = (48, 96) if quick else (512, 1024, 4096)
    out = [Case(f"{op}.n{n}.f32", op, n, ()) for op in ("cholesky", "solve", "qr", "inv", "det") for n in orders]
    stacks = (((200,), 8), ((50,), 32)) if quick else (((10000,), 8), ((1000,), 32))
    for stack, n in stacks:
        out += [Case(f"{op}.b{stack[0]}x{n}x{n}.f32", op, n, stack) for op in ("solve", "inv", "cholesky")]
    return out


def make_inputs(case: Case, rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = case.n
    a = rng.standard_normal(case.batch + (n, n)).astype(np.float32)
    if case.op == "cholesky":
        a = (a @ np.swapaxes(a, -1, -2) / n + np.eye(n, dtype=np.float32)).astype(np.float32)
    else:
        a = (a / (2 * np.sqrt(n)) + np.eye(n, dtype=np.float32)).astype(np.float32)
    inputs = {"a": a}
    if case.op == "solve":
        inputs["b"] = rng.standard_normal(case.batch + (n, 1)).astype(np.float32)
    return inputs


def call_for(xp: Any, case: Case) -> Callable[[dict[str, Any]], Any]:
    """The case's call in namespace ``xp`` (numpy, gputensor or torch: each has ``.linalg``)."""
    la = xp.linalg
    return {
        "cholesky": lambda d: la.cholesky(d["a"]),
        "solve": lambda d: la.solve(d["a"], d["b"]),
        "qr": lambda d: la.qr(d["a"]),
        "inv": lambda d: la.inv(d["a"]),
        "det": lambda d: la.det(d["a"]),
    }[case.op]


def check(case: Case, inputs: dict[str, np.ndarray], result: Any) -> str:
    """'ok' or what is wrong with a result (NumPy arrays), by residuals in float64."""
    a = inputs["a"].astype(np.float64)
    n = case.n
    tol = 1e-4 * n
    if case.op == "cholesky":
        err = np.abs(result @ np.swapaxes(result, -1, -2) - a).max() / np.abs(a).max()
    elif case.op == "solve":
        err = np.abs(a @ result - inputs["b"]).max() / (np.abs(a).max() * max(np.abs(result).max(), 1e-30))
    elif case.op == "qr":
        q, r = result
        err = max(np.abs(q @ r - a).max() / np.abs(a).max(), np.abs(np.swapaxes(q, -1, -2) @ q - np.eye(n)).max())
    elif case.op == "inv":
        err = np.abs(a @ result - np.eye(n)).max() / (np.abs(a).max() * np.abs(result).max())
    else:
        sign, logabs = np.linalg.slogdet(a)
        want = sign * np.exp(logabs)
        # (a relative error with a floor: a float32 determinant below ~1e-38 is 0)
        err = np.abs(result - want).max() / max(np.abs(want).max(), 1e-30)
        tol = 1e-3 * n
    return "ok" if err <= tol else f"residual {err:.2e}"


def _host(result: Any) -> Any:
    if isinstance(result, tuple):
        return tuple(_host(r) for r in result)
    if isinstance(result, gt.GpuArray):
        return gt.asnumpy(result).astype(np.float64)
    if hasattr(result, "detach"):
        return result.detach().cpu().double().numpy()
    return np.asarray(result, dtype=np.float64)


def _time(fn: Callable[[], Any], sync: Callable[[], Any], target_s: float) -> float:
    per = _timing.estimate_call(lambda _i: fn(), sync, max_calls=4)
    reps = int(max(1, min(50, target_s / per)))
    return _timing.time_calls(fn, sync, reps=reps, repeats=3 if per < 1.0 else 1)


def variants(names: str | None) -> list[tuple[str, dict[str, Any]]]:
    """(id suffix, ``config.override`` arguments) of each ``--ab`` variant: a knob flipped from
    its value now, or set to the value given after ``=``; knobs joined by ``+`` change together
    in one variant. ValueError for an unknown knob name."""
    out: list[tuple[str, dict[str, Any]]] = []
    knobs = {k.name: k for k in config.KNOBS}
    for item in [v.strip() for v in (names or "").split(",") if v.strip()]:
        settings: dict[str, Any] = {}
        for part in item.split("+"):
            name, _, raw = part.strip().partition("=")
            knob = knobs.get(name)
            if knob is None:
                raise ValueError(f"--ab: unknown gputensor knob {name!r}; knobs: {', '.join(knobs)}")
            settings[name] = knob.parse(knob.env, raw, knob.default) if raw else not config.value(name)
        label = "+".join(f"{k}={int(v) if isinstance(v, bool) else v}" for k, v in settings.items())
        out.append((f"[{label}]", settings))
    return out


def run_case(case: Case, torch: Any, warmer: _timing.ClockWarmer, target_s: float,
             overrides: dict[str, Any] | None = None, with_numpy: bool = True) -> dict[str, Any]:
    """The row of ``case``: per framework its check and time (NumPy's unless ``with_numpy`` is
    False); with ``overrides``, gputensor alone under ``config.override(**overrides)``."""
    inputs = make_inputs(case, np.random.default_rng(0))
    row: dict[str, Any] = {"id": case.id}
    frameworks: list[tuple[str, Any, Callable[[np.ndarray], Any], Callable[[], Any]]] = [
        ("numpy", np, lambda v: v, lambda: None),
        ("gputensor", gt, gt.asarray, gt.synchronize),
    ]
    if torch is not None:
        frameworks.append(("torch", torch, lambda v: torch.from_numpy(v).cuda(), torch.cuda.synchronize))
    if overrides is not None:
        frameworks = frameworks[1:2]
    elif not with_numpy:
        frameworks = frameworks[1:]
    knobs = config.override(**overrides) if overrides else contextlib.nullcontext()
    for name, xp, put, sync in frameworks:
        try:
            data = {k: put(v) for k, v in inputs.items()}
            fn = call_for(xp, case)
            with knobs if name == "gputensor" else contextlib.nullcontext():
                first = fn(data)
                sync()
                status = check(case, inputs, _host(first))
                del first
                warmer.warm()
                seconds = _time(lambda: fn(data), sync, target_s)
            row[name] = {"ms": seconds * 1e3, "check": status}
        except Exception as exc:  # noqa: BLE001 - reported, the run goes on
            row[name] = {"ms": None, "check": f"error: {type(exc).__name__}: {exc}"[:120]}
        if name == "gputensor":
            gt.get_default_memory_pool().free_all_blocks()
        if name == "torch":
            torch.cuda.empty_cache()
    return row


def profile_case(case: Case, overrides: dict[str, Any] | None = None) -> str:
    """gputensor's dispatches of one call of ``case`` with their GPU times (``gt.profile()``),
    under ``config.override(**overrides)`` where given."""
    data = {k: gt.asarray(v) for k, v in make_inputs(case, np.random.default_rng(0)).items()}
    fn = call_for(gt, case)
    with config.override(**(overrides or {})):
        fn(data)
        gt.synchronize()
        with gt.profile() as report:
            fn(data)
    return str(report)


def _ratio(num: float | None, den: float | None) -> str:
    return f"{num / den:7.2f}x" if num and den else "      -"


def _print_row(label: str, row: dict[str, Any], base: dict[str, Any]) -> None:
    """One line of the table: ``row``'s gputensor time, NumPy's and torch's from ``base``."""
    ms = {k: (row if k == "gputensor" else base).get(k, {}).get("ms") for k in ("numpy", "gputensor", "torch")}
    checks = " ".join(f"{k}:{src[k]['check']}" for k, src in (("numpy", base), ("gputensor", row), ("torch", base))
                      if k in src)
    fmt = {k: f"{v:11.3f}" if v else f"{'-':>11}" for k, v in ms.items()}
    print(f"{label:<26}{fmt['numpy']}{fmt['gputensor']}{fmt['torch']}"
          f"{_ratio(ms['numpy'], ms['gputensor']):>10}{_ratio(ms['torch'], ms['gputensor']):>10}  {checks}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m benchmarks.bench_linalg", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (seconds; any adapter)")
    parser.add_argument("--only", default="*", help="fnmatch pattern(s) of case ids, comma separated")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--no-numpy", action="store_true", help="leave NumPy (host LAPACK) out of the rows")
    parser.add_argument("--no-check", action="store_true",
                        help="GPUTENSOR_LINALG_CHECK=0: no singularity readback in cholesky / solve / inv")
    parser.add_argument("--block", type=int, default=0,
                        help="block width of the blocked factorizations (16/32/64/128; 0: defaults)")
    parser.add_argument("--panel-rows", type=int, default=0,
                        help="LU / QR panels taller than this run over many workgroups "
                             "(GPUTENSOR_LINALG_PANEL_ROWS; 0: defaults, 1000000: always one workgroup)")
    parser.add_argument("--profile", action="store_true",
                        help="print the GPU time per kernel of one gputensor call of each case")
    parser.add_argument("--target-s", type=float, default=None, help="seconds per timed batch")
    parser.add_argument("--json", default=None, help="write the results to this file")
    parser.add_argument("--ab", default=None,
                        help="config knobs, comma separated (NAME or NAME=VALUE): a gputensor row with each flipped/set")
    args = parser.parse_args(argv)
    flips = variants(args.ab)
    torch = None
    if not args.no_torch:
        try:
            import torch as _torch

            torch = _torch if _torch.cuda.is_available() else None
        except ImportError:
            torch = None
    warmer = _timing.ClockWarmer(torch)
    target_s = args.target_s if args.target_s is not None else (0.01 if args.quick else 0.3)
    patterns = args.only.split(",")
    print(f"adapter: {gt._dispatch.adapter_description()}; torch: {torch.__version__ if torch else 'off'}")
    print(f"{'case':<26}{'numpy ms':>11}{'gt ms':>11}{'torch ms':>11}{'numpy/gt':>10}{'gt/torch':>10}  checks")
    settings = {"linalg_check": False} if args.no_check else {}
    if args.block:
        settings["linalg_block"] = args.block
    if args.panel_rows:
        settings["linalg_panel_rows"] = args.panel_rows
    previous = config.assign(**settings) if settings else None
    rows = []
    t_start = time.perf_counter()
    for case in cases(args.quick):
        if not any(fnmatch.fnmatch(case.id, p) for p in patterns):
            continue
        row = run_case(case, torch, warmer, target_s, with_numpy=not args.no_numpy)
        rows.append(row)
        _print_row(case.id, row, row)
        if args.profile:
            print(profile_case(case))
        for suffix, overrides in flips:
            ab = run_case(case, torch, warmer, target_s, overrides)
            ab["id"] = case.id + suffix
            rows.append(ab)
            _print_row(ab["id"], ab, row)
            if args.profile:
                print(profile_case(case, overrides))
    print(f"total {time.perf_counter() - t_start:.1f} s")
    if previous is not None:
        config.assign(**previous)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"adapter": gt._dispatch.adapter_description(), "quick": args.quick, "results": rows}, f, indent=1)
    failed = [r["id"] for r in rows if r.get("gputensor", {}).get("check") != "ok"]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
