"""tools/conformance.py (make conformance) without running the suite: the instructions when the
suite is absent, the skipped test_has_names ids of absent extensions, the pytest command line
(nothing written into the suite) and the closing summary."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import conformance  # noqa: E402


def test_absent_suite_says_how_to_get_it(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "conformance.py"), "--suite", str(tmp_path / "none")],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert "git clone --recurse-submodules https://github.com/data-apis/array-api-tests.git" in out.stderr


def _fake_suite(root: Path) -> Path:
    stubs = root / "array-api" / "src" / "array_api_stubs" / "_2024_12"
    stubs.mkdir(parents=True)
    (root / "array-api" / "spec").mkdir()
    (root / "array_api_tests").mkdir()
    (root / "array_api_tests" / "__init__.py").write_text("")
    (stubs / "fft.py").write_text('__all__ = ["fft", "ifft"]\n\ndef fft(x):\n    """FFT."""\n')
    (stubs / "linalg.py").write_text('__all__: list[str] = ["cholesky", "matmul"]\n')
    return root


def test_extension_ids_and_command(tmp_path):
    suite = _fake_suite(tmp_path / "suite")
    assert conformance.suite_present(suite)
    assert conformance.extension_functions(suite, "2024.12", "fft") == ["fft", "ifft"]
    assert conformance.extension_functions(suite, "2024.12", "linalg") == ["cholesky", "matmul"]
    skips = conformance.absent_extension_skips(suite)
    import gputensor as gt
    for ext, names in (("linalg", ["cholesky", "matmul"]), ("fft", ["fft", "ifft"])):
        ids = [f"array_api_tests/test_has_names.py::test_has_names[{ext}-{n}]" for n in names]
        assert all((i in skips) != hasattr(gt, ext) for i in ids)
    cmd = conformance.pytest_command(suite, 7, tmp_path / "r.json", tmp_path / "s.txt", ["-k", "x"])
    assert cmd[cmd.index("--max-examples") + 1] == "7"
    assert "no:cacheprovider" in cmd and cmd[cmd.index("--rootdir") + 1] == str(suite)
    assert cmd[-2:] == ["-k", "x"]


def test_summary_lines(tmp_path):
    report = tmp_path / "r.json"
    tests = [{"outcome": o} for o in ["passed"] * 5 + ["failed", "skipped", "xfailed", "xpassed"]]
    report.write_text(json.dumps({"tests": tests, "collectors": []}))
    first, last = conformance.summarize(report, 12.0).splitlines()
    assert "5 passed, 1 failed, 0 errors, 1 skipped, 1 xfailed, 1 xpassed in 12 s" in first
    assert "75.00% of the tests run" in first and "85.71% of those not xfailed" in first
    assert last == "array-api-tests: 6 passed, 1 failed, 1 skipped"
