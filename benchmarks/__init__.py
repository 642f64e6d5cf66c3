"""gputensor's benchmark suite: ``python -m benchmarks [--quick] [--only ...] [--json P] [--plot P]``.

``_timing.py`` is how everything here times work; ``_harness.py`` holds the cases' base class, the
runner and the report; the headline cases (user code through the public API) are in ``api.py`` and
``bench_engine.py``, the kernel diagnostics (the backend contract) in the other ``bench_*.py``.
``host_cost.py`` is the host-cost benchmark (``python -m benchmarks.host_cost``); ``tools/`` holds
the diagnostic and tuning scripts. See ``benchmarks/RESULTS.md`` for how to run them and the numbers.
"""

from ._harness import Case, CheckError, Env, NotAvailable, Options, Prepared, Report, all_cases, main, run

__all__ = ["Case", "CheckError", "Env", "NotAvailable", "Options", "Prepared", "Report", "all_cases", "main", "run"]
