"""gputensor's benchmark suite: ``python -m benchmarks [--quick] [--only ...] [--json P] [--plot P]``.

The harness is in ``_harness.py``; the cases are in ``bench_*.py`` (one module per family). See
``benchmarks/RESULTS.md`` for how to run it and the recorded numbers.
"""

from ._harness import Case, CheckError, Env, NotAvailable, Options, Prepared, Report, all_cases, main, run

__all__ = ["Case", "CheckError", "Env", "NotAvailable", "Options", "Prepared", "Report", "all_cases", "main", "run"]
