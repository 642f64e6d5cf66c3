"""Run the official Array API conformance suite (data-apis/array-api-tests) against gputensor.

``python tools/conformance.py [--suite DIR] [--max-examples N] [-- PYTEST_ARGS...]`` runs the
suite's ``array_api_tests/`` with ``ARRAY_API_TESTS_MODULE=gputensor`` (this checkout's package),
the xfail file ``array-api-tests-xfails.txt`` of the repository root (each entry with its reason)
and a bounded number of hypothesis examples, then prints the counts, the pass rate and the wall
time. Extensions are optional in the standard: the suite skips the tests of an extension the
namespace lacks except ``test_has_names``, whose entries for it this tool skips too (a skips file
under the temporary directory), so ``gputensor.linalg``/``gputensor.fft`` are checked exactly when
they exist. The suite folder is only read: no pytest cache (``-p no:cacheprovider``), no bytecode
(``PYTHONDONTWRITEBYTECODE``), the JSON report under the temporary directory; hypothesis keeps
its example database in this repository's ``.hypothesis/`` (git-ignored).

Exit status: pytest's (0 when every test passed, skipped or xfailed); 2 with instructions when
the suite is not there.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SUITE = ROOT.parent / "shared" / "array-api-tests"
XFAILS = ROOT / "array-api-tests-xfails.txt"

HOW = """\
The Array API test suite was not found at {suite}.
Get it (the suite with its `array-api` submodule, which holds the spec it reads) with:
    git clone --recurse-submodules https://github.com/data-apis/array-api-tests.git {suite}
or point ARRAY_API_TESTS_DIR (or --suite) at an existing clone."""


def suite_present(suite: Path) -> bool:
    """Whether ``suite`` holds the test package and the spec submodule it parses."""
    return (suite / "array_api_tests" / "__init__.py").is_file() and (suite / "array-api" / "spec").is_dir()


def extension_functions(suite: Path, version: str, ext: str) -> list[str]:
    """The functions of extension ``ext`` in the spec's stubs for ``version`` (its ``__all__``,
    aliases of main-namespace functions included, as the suite lists them)."""
    stub = suite / "array-api" / "src" / "array_api_stubs" / f"_{version.replace('.', '_')}" / f"{ext}.py"
    tree = ast.parse(stub.read_text())
    names: list[str] = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(getattr(t, "id", None) == "__all__" for t in targets) and node.value is not None:
            names = list(ast.literal_eval(node.value))
    return names


def absent_extension_skips(suite: Path, disabled: tuple[str, ...] = ()) -> list[str]:
    """``test_has_names`` ids of the extensions (linalg, fft) this checkout's gputensor lacks or
    that ``--disable-extension`` disables (``disabled``)."""
    sys.path.insert(0, str(ROOT))
    try:
        xp = importlib.import_module("gputensor")
    finally:
        sys.path.pop(0)
    version = getattr(xp, "__array_api_version__", "2024.12")
    return [f"array_api_tests/test_has_names.py::test_has_names[{ext}-{name}]"
            for ext in ("linalg", "fft") if not hasattr(xp, ext) or ext in disabled
            for name in extension_functions(suite, version, ext)]


def pytest_command(suite: Path, max_examples: int, report: Path, skips: Path, extra: list[str]) -> list[str]:
    """The pytest command line: the suite's own ini file and rootdir, nothing written there."""
    return [
        sys.executable, "-m", "pytest", str(suite / "array_api_tests"),
        "-c", str(suite / "pytest.ini"), "--rootdir", str(suite), "-p", "no:cacheprovider",
        "--max-examples", str(max_examples), "--xfails-file", str(XFAILS), "--skips-file", str(skips),
        "--json-report", "--json-report-file", str(report), "--json-report-omit", "log", "streams",
        "-q", "-rfE", *extra,
    ]


def summarize(report: Path, wall: float) -> str:
    """Two lines from the JSON report: every count with the wall time and the pass rate, then
    the plain 'N passed, N failed, N skipped' (xpassed count as passed, errors as failed)."""
    try:
        data = json.loads(report.read_text())
    except (OSError, ValueError):
        return f"no JSON report at {report}; wall time {wall:.0f} s"
    counts = Counter(t["outcome"] for t in data.get("tests", []))
    for c in data.get("collectors", []):
        if c.get("outcome") == "failed":
            counts["error"] += 1
    passed = counts["passed"] + counts["xpassed"]
    failed = counts["failed"] + counts["error"]
    run = passed + failed + counts["xfailed"]
    rate = 100.0 * passed / run if run else 0.0
    rate_known = 100.0 * passed / (passed + failed) if passed + failed else 0.0
    return (f"array-api-tests: {counts['passed']} passed, {counts['failed']} failed, {counts['error']} errors, "
            f"{counts['skipped']} skipped, {counts['xfailed']} xfailed, {counts['xpassed']} xpassed in {wall:.0f} s; "
            f"pass rate {rate:.2f}% of the tests run ({rate_known:.2f}% of those not xfailed)\n"
            f"array-api-tests: {passed} passed, {failed} failed, {counts['skipped']} skipped")


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, check the suite is there, run it and print the summary."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", type=Path,
                        default=Path(os.environ.get("ARRAY_API_TESTS_DIR", DEFAULT_SUITE)),
                        help="the array-api-tests checkout (default: ../shared/array-api-tests)")
    parser.add_argument("--max-examples", type=int, default=20, help="hypothesis examples per test")
    parser.add_argument("--report", type=Path,
                        default=Path(tempfile.gettempdir()) / "gputensor-array-api-tests.json",
                        help="where the JSON report goes (never inside the suite)")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args(argv)
    suite = args.suite.resolve()
    if not suite_present(suite):
        print(HOW.format(suite=suite), file=sys.stderr)
        return 2
    env = dict(os.environ)
    env.update(ARRAY_API_TESTS_MODULE="gputensor", PYTHONDONTWRITEBYTECODE="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
    env.pop("HYPOTHESIS_PROFILE", None)  # the suite loads its own profile
    skips = args.report.with_suffix(".skips.txt")
    extra = args.pytest_args
    at = extra.index("--disable-extension") if "--disable-extension" in extra else len(extra)
    disabled = tuple(a for a in extra[at + 1:] if a in ("linalg", "fft"))
    absent = absent_extension_skips(suite, disabled)
    skips.write_text("".join(line + "\n" for line in absent))
    if absent:
        print(f"skipping test_has_names of {len(absent)} functions of extensions gputensor lacks", flush=True)
    cmd = pytest_command(suite, args.max_examples, args.report, skips, args.pytest_args)
    print("+ ARRAY_API_TESTS_MODULE=gputensor " + " ".join(cmd[1:]), flush=True)
    start = time.perf_counter()
    rc = subprocess.run(cmd, cwd=ROOT, env=env).returncode
    print(summarize(args.report, time.perf_counter() - start), flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
