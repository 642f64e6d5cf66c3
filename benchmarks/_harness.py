"""The benchmark harness behind ``python -m benchmarks``: cases, the runner, the report.

Every case is one piece of work (``gt.sum`` over 128 MiB, ``a @ b`` at 4096², a gemm on the
backend contract, ...) run through up to three frameworks in the same process: gputensor and,
where importable on a CUDA GPU, torch and cupy. A case is on one of two *paths*:

* ``api`` (the headline): user code through the public API (``gt.add``, ``a @ b``, ``gt.sum``,
  ``x[mask]``, ...; ``api.py``, ``bench_engine.py``), what a user's program pays;
* ``kernel`` (kernel diagnostics): the backend contract (``backend.gemm``, ``backend.binary``
  ... on device pointers, outputs preallocated; ``bench_elementwise.py``, ``bench_reduce.py``,
  ``bench_gemm.py``, ``bench_conv.py``, ``bench_attention.py``, ``bench_transfer.py``, the
  copy ceiling), the kernels without the frontend.

For each framework the harness

1. prepares the inputs (the same host data; where the working set fits in L2 it makes two
   input/output sets and rotates between them, so back-to-back calls do not just re-read L2);
2. runs once and synchronises: the *cold* time (pipeline compilation, library handles,
   autotuning), reported on its own;
3. checks that result once against a NumPy reference (float64 where it matters);
4. estimates the time of one call (from up to 16 calls back to back when one call is short),
   picks ``N`` calls per batch so that a batch lasts about ``target`` seconds, keeps the GPU
   saturated for 0.1 s (``Env.warm_clocks``, the same for every framework), runs one batch that
   is discarded, and times 3 to 5 batches (``_timing.py``: every result of a batch is held until
   the sync that ends it). Reported per call, medians over the batches: wall time, host time
   (recording/enqueueing the calls) and GPU time (CUDA events; gputensor: a profiled batch with
   timestamp queries).

Ratios (``gt/torch``, ``gt/cupy``) are the other framework's wall time over gputensor's (above 1:
gputensor faster); ``GPU gt/torch`` is the same on GPU time. Rates are GB/s (bytes read +
written, 1e9) or TFLOP/s (1e12), also as a fraction of a ceiling measured in the same run: a
device-to-device copy (torch ``y.copy_(x)``, else cupy, else gputensor's ``copy_dtod``) for
memory-bound cases and torch's float32 matmul with TF32 off (else cupy's) for compute-bound ones.

A case whose operation raises is reported as ``error: ...`` and the run goes on; a global time
budget skips the remaining cases once it is spent.

The harness is split by job: ``_checks.py`` (check errors, ``assert_close``, inputs, sizes),
``_env.py`` (backend, torch/cupy detection, arenas, clock warming), ``_case.py`` (the ``Case``
base class), ``_results.py`` (results, ``Options``, ``Report``), ``_select.py`` (suite order,
``--only``, ``--ab``), ``_runner.py`` (``Runner``), ``_output.py`` (tables, JSON, plot) and
``_cli.py`` (``run``, ``main``); ``_timing.py`` times the batches. This module re-exports their
names for the case modules and tools.
"""

from __future__ import annotations

from ._case import Case
from ._checks import DTYPE_SHORT, GiB, MiB, CheckError, NotAvailable, assert_close, assert_equal, fmt_bytes, uniform
from ._cli import main, parse_args, run
from ._env import DEFAULT_L2_BYTES, Env, GtArena, Prepared, detect_cupy, detect_torch
from ._output import fmt_rate, fmt_time, fmt_work, progress_line, table, write_json, write_plot
from ._results import FRAMEWORKS, CaseResult, FwResult, Options, Report
from ._runner import Runner
from ._select import GROUP_ALIASES, GROUP_ORDER, ab_variants, all_cases, matches, select

__all__ = ["DEFAULT_L2_BYTES", "DTYPE_SHORT", "FRAMEWORKS", "GROUP_ALIASES", "GROUP_ORDER", "GiB", "MiB", "Case",
           "CaseResult", "CheckError", "Env", "FwResult", "GtArena", "NotAvailable", "Options", "Prepared", "Report",
           "Runner", "ab_variants", "all_cases", "assert_close", "assert_equal", "detect_cupy", "detect_torch",
           "fmt_bytes", "fmt_rate", "fmt_time", "fmt_work", "main", "matches", "parse_args", "progress_line", "run",
           "select", "table", "uniform", "write_json", "write_plot"]
