"""gputensor's benchmark suite: ``python -m benchmarks [--quick] [--only ...] [--json P] [--plot P]``.

``_timing.py`` is how everything here times work; ``_harness.py`` re-exports what the cases use of
the harness modules (``_checks``, ``_env``, ``_case``, ``_results``, ``_select``, ``_runner``,
``_output``, ``_cli``: the case model, the runner, the report and the command line); the headline cases (user code through the public API) are in ``api.py`` and
``bench_engine.py``, the kernel diagnostics (the backend contract) in the other ``bench_*.py``.
``host_cost.py`` is the host-cost benchmark (``python -m benchmarks.host_cost``); ``tools/`` holds
the diagnostic and tuning scripts. See ``benchmarks/RESULTS.md`` for how to run them and the numbers.
"""

from ._harness import Case, CheckError, Env, NotAvailable, Options, Prepared, Report, all_cases, main, run

__all__ = ["Case", "CheckError", "Env", "NotAvailable", "Options", "Prepared", "Report", "all_cases", "main", "run"]
