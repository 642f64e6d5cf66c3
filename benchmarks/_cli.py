"""The entry points: ``run`` (one benchmark run, printed) and ``main`` (``python -m benchmarks``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import sys
from collections.abc import Sequence
from typing import TextIO

import numpy as np

from ._case import Case
from ._env import DEFAULT_L2_BYTES, Env, detect_cupy, detect_torch
from ._output import table, write_json, write_plot
from ._results import Options, Report
from ._runner import Runner
from ._select import GROUP_ORDER, ab_variants, all_cases, select
from ._timing import CupyTimer, GputensorTimer, Timer, TorchTimer


def run(options: Options, cases: Sequence[Case] | None = None, out: TextIO | None = None) -> Report:
    """Run ``cases`` (default: the suite selected by ``options.only``) and return the Report.

    Prints a progress line per case and the final table to ``out`` (default stdout); writes the
    JSON and the plot when asked. Raises ValueError for an ``only`` pattern that selects nothing
    and BackendError when gputensor has no adapter.
    """
    out = out or sys.stdout
    if cases is None:
        cases = select(all_cases(options.quick), options.only, options.ceilings)
    from gputensor._backend import get_backend

    backend = get_backend()
    torch, torch_note = detect_torch(options.use_torch)
    cupy, cupy_note = detect_cupy(options.use_cupy)
    l2 = DEFAULT_L2_BYTES
    gpu_name = None
    if torch is not None:
        props = torch.cuda.get_device_properties(0)
        l2 = int(getattr(props, "L2_cache_size", 0) or l2)
        gpu_name = props.name
    env = Env(backend, torch, cupy, options.quick, l2)
    frameworks: dict[str, Timer] = {"gputensor": GputensorTimer()}
    if torch is not None:
        frameworks["torch"] = TorchTimer(torch)
    if cupy is not None:
        frameworks["cupy"] = CupyTimer(cupy)
    ctx = backend.context
    meta = {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "adapter": repr(backend).removeprefix("WebGpuBackend(adapter=").removesuffix(")").strip("'"),
        "adapter_info": {k: str(v) for k, v in ctx.adapter_info.items()},
        "features": sorted(ctx.features),
        "max_binding_bytes": ctx.max_binding_size,
        "quick": options.quick,
        "argv": sys.argv,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": getattr(torch, "__version__", None) or f"absent ({torch_note})",
        "cupy": getattr(cupy, "__version__", None) or f"absent ({cupy_note})",
        "cuda_device": gpu_name,
        "l2_bytes": l2,
        "cases": [c.id for c in cases],
    }
    try:
        import wgpu

        meta["wgpu"] = wgpu.__version__
    except Exception:  # noqa: BLE001
        pass
    print(f"gputensor benchmarks on {meta['adapter']}" + (" (quick sizes)" if options.quick else ""), file=out)
    print(f"torch: {meta['torch']}; cupy: {meta['cupy']}; {len(cases)} cases", file=out, flush=True)
    runner = Runner(options, env, frameworks, meta, out)
    try:
        report = runner.run(cases)
    except KeyboardInterrupt:
        print("interrupted: reporting the cases finished so far", file=out)
        report = runner.report()
    print("", file=out)
    print(table(report), file=out, flush=True)
    if options.json_path:
        write_json(report, options.json_path)
        print(f"json written to {options.json_path}", file=out)
    if options.plot_path:
        write_plot(report, options.plot_path, out)
    return report


def parse_args(argv: Sequence[str] | None) -> Options:
    """Options from the command line (see ``python -m benchmarks --help``)."""
    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Time gputensor's public API and its kernels (and the same work through torch/cupy "
                    "when they can reach a CUDA GPU) and print tables of times, rates and ratios.",
    )
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke run; < 60 s on lavapipe)")
    p.add_argument("--only", action="append", metavar="LIST",
                   help="comma-separated groups, case ids, dotted prefixes or fnmatch patterns "
                        f"(groups: {', '.join(GROUP_ORDER)}; 'headline' = api,engine; 'kernel' = the "
                        "kernel diagnostics); ceilings are always added unless --no-ceilings")
    p.add_argument("--json", dest="json_path", metavar="PATH", help="write every number as JSON")
    p.add_argument("--plot", dest="plot_path", metavar="PATH", help="write a PNG plot (needs matplotlib)")
    p.add_argument("--budget", dest="budget_s", type=float, metavar="SECONDS",
                   help="skip the remaining cases once this much time is spent (default 330, quick 55)")
    p.add_argument("--target", dest="target_batch_s", type=float, metavar="SECONDS",
                   help="length of one timed batch (default 0.05, quick 0.01)")
    p.add_argument("--no-torch", dest="use_torch", action="store_false", help="do not run torch")
    p.add_argument("--no-cupy", dest="use_cupy", action="store_false", help="do not run cupy")
    p.add_argument("--no-ceilings", dest="ceilings", action="store_false", help="skip the ceiling cases")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--list", action="store_true", help="list the case ids and exit")
    p.add_argument("-v", "--verbose", action="store_true", help="print tracebacks of errors")
    p.add_argument("--ab", action="append", metavar="KNOB[=VALUE]",
                   help="also time gputensor with this config knob set (NAME=VALUE) or flipped (a switch NAME), "
                        "as a row of its own per case (id suffixed [NAME=VALUE]; torch/cupy shared); "
                        "repeatable or comma-separated")
    ns = p.parse_args(argv)
    opts = Options(quick=ns.quick, only=ns.only, json_path=ns.json_path, plot_path=ns.plot_path,
                   budget_s=ns.budget_s, use_torch=ns.use_torch, use_cupy=ns.use_cupy, ceilings=ns.ceilings,
                   seed=ns.seed, target_batch_s=ns.target_batch_s, verbose=ns.verbose, list_only=ns.list,
                   ab=ns.ab)
    return opts


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status (2 for a bad ``--only``)."""
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    options = parse_args(argv)
    if options.list_only:
        for case in all_cases(options.quick):
            print(f"{case.id:40s} {case.label}")
        return 0
    try:
        cases = select(all_cases(options.quick), options.only, options.ceilings)
        ab_variants(options.ab)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    run(options, cases)
    return 0
