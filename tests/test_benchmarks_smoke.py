"""Smoke tests of the benchmark harness (``python -m benchmarks``): a broken harness fails CI.

They run the ``--quick`` mode in-process on two tiny cases (plus the ceiling cases), the error
path (an operation that raises is reported and the run goes on), the time guard, case selection
and the check helpers. torch and cupy are switched off so the numbers come from gputensor alone.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the benchmarks package lives beside gputensor, not inside it
    sys.path.insert(0, str(ROOT))

from benchmarks import _harness as h  # noqa: E402
from benchmarks.bench_elementwise import BinaryCase  # noqa: E402


def test_quick_cli_two_cases(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    json_path = tmp_path / "bench.json"
    plot_path = tmp_path / "bench.png"
    status = h.main(["--quick", "--only", "binary.add.f32,reduce.sum.full", "--no-torch", "--no-cupy",
                     "--json", str(json_path), "--plot", str(plot_path), "--budget", "20"])
    assert status == 0
    printed = capsys.readouterr().out
    assert "case" in printed and "gt/torch" in printed and "binary.add.f32" in printed
    data = json.loads(json_path.read_text())
    ids = [r["id"] for r in data["results"]]
    assert ids == ["ceiling.copy", "ceiling.matmul", "binary.add.f32", "reduce.sum.full"]
    results = {r["id"]: r for r in data["results"]}

    add = results["binary.add.f32"]["frameworks"]["gputensor"]
    assert add["error"] is None and add["check"] == "ok"
    assert add["time_s"] > 0 and add["rate"] > 0 and add["cold_s"] > 0 and add["reps"] >= 1
    assert len(add["batches"]) >= 3
    assert add["rate"] == pytest.approx(results["binary.add.f32"]["bytes"] / add["time_s"] / 1e9)
    assert add["extra"]["pipelines_compiled"] == 0  # no per-call compilation once warm

    # the reduction is another engineer's kernel: it either measured correctly or was reported
    red = results["reduce.sum.full"]["frameworks"]["gputensor"]
    assert (red["time_s"] and red["check"] == "ok") or red["error"].startswith("error: ")

    # the copy ceiling falls back to gputensor's own copy without torch; fractions follow from it
    assert data["ceilings"]["copy_GBps"] > 0 and data["ceilings"]["copy_source"].startswith("gputensor")
    assert data["ceilings"]["matmul_TFLOPs"] is None
    assert results["ceiling.matmul"]["frameworks"]["gputensor"]["error"].startswith("n/a")
    frac = results["binary.add.f32"]["fraction_of_ceiling"]
    assert frac == pytest.approx(add["rate"] / data["ceilings"]["copy_GBps"])
    assert data["meta"]["quick"] is True and "adapter" in data["meta"]

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "plot skipped" in printed
    else:
        assert plot_path.stat().st_size > 0


class _Raises(h.Case):
    id = "fake.raises"
    label = "an operation that raises"
    unit = "GB/s"
    bytes = 1e6

    def gputensor(self, env: h.Env, host: dict) -> h.Prepared:
        def run(i: int) -> None:
            raise RuntimeError("kernel exploded")

        return h.Prepared(run)


class _Wrong(BinaryCase):
    def check(self, host: dict, got: np.ndarray) -> None:
        raise h.CheckError("deliberately wrong")


def test_raising_op_is_reported_and_run_goes_on(capsys: pytest.CaptureFixture[str]) -> None:
    wrong = _Wrong(4096)
    wrong.id = "fake.wrong"
    cases = [_Raises(), wrong, BinaryCase(4096)]
    report = h.run(h.Options(quick=True, use_torch=False, use_cupy=False), cases)
    printed = capsys.readouterr().out
    raised = report.result("fake.raises").frameworks["gputensor"]
    assert raised.error == "error: RuntimeError: kernel exploded" and raised.time_s is None
    assert "error: RuntimeError: kernel exploded" in printed
    bad = report.result("fake.wrong")
    assert bad.frameworks["gputensor"].check.startswith("WRONG") and "WRONG" in printed
    assert report.result("binary.add.f32").frameworks["gputensor"].check == "ok"


def test_time_budget_skips_remaining_cases(capsys: pytest.CaptureFixture[str]) -> None:
    report = h.run(h.Options(quick=True, use_torch=False, use_cupy=False, budget_s=0.0),
                   [BinaryCase(4096), BinaryCase(8192)])
    assert all(r.skipped and r.skipped.startswith("skipped: time budget") for r in report.results)
    assert "skipped: time budget" in capsys.readouterr().out


def test_case_selection() -> None:
    cases = h.all_cases(quick=True)
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids))
    assert ids[:2] == ["ceiling.copy", "ceiling.matmul"]
    gemm = h.select(cases, ["gemm"], ceilings=False)
    assert gemm and all(c.id.startswith("gemm.") for c in gemm)
    assert [c.id for c in h.select(cases, ["conv"], ceilings=False)] == ["conv2d.3x3", "conv2d.1x1"]
    causal = h.select(cases, ["attention.f16.*.causal"], ceilings=True)
    assert [c.id for c in causal[:2]] == ["ceiling.copy", "ceiling.matmul"]
    assert all(c.id.endswith(".causal") and ".f16." in c.id for c in causal[2:]) and len(causal) == 6
    with pytest.raises(ValueError, match="selects no case"):
        h.select(cases, ["nonsense"], ceilings=True)
    assert h.main(["--quick", "--only", "nonsense"]) == 2


@pytest.mark.parametrize("quick", [True, False])
def test_case_list_is_sound(quick: bool) -> None:
    cases = h.all_cases(quick)
    groups = {c.group for c in cases}
    assert groups == set(h.GROUP_ORDER)
    for c in cases:
        assert c.work > 0 and c.unit in ("GB/s", "TFLOP/s") and c.bound in ("memory", "compute", "host")
    if not quick:  # the sizes of the brief
        full = {c.id: c for c in cases}
        assert full["binary.add.f32"].bytes == 3 * 256 * h.MiB
        assert full["gemm.f32.4096"].flops == 2 * 4096**3
        assert full["attention.f32.d64.s4096.causal"].flops == pytest.approx(
            4 * 4 * 16 * 64 * 4096 * 4097 / 2)
        assert full["transfer.htod"].bytes == h.GiB


def test_check_helpers() -> None:
    h.assert_close([1.0, 2.0], [1.0, 2.0 + 1e-9], 1e-6, "ok")
    with pytest.raises(h.CheckError, match="1 of 2 values wrong"):
        h.assert_close([1.0, 2.1], [1.0, 2.0], 1e-3, "off")
    with pytest.raises(h.CheckError, match="wrong"):
        h.assert_close([np.nan], [0.0], 1.0, "nan")
    with pytest.raises(h.CheckError, match="shape"):
        h.assert_close([1.0], [1.0, 2.0], 1.0, "shape")
    with pytest.raises(h.CheckError, match="differ"):
        h.assert_equal(np.arange(4), np.array([0, 1, 2, 4]), "eq")
