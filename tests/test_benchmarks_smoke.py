"""Smoke tests of the benchmark harness (``python -m benchmarks``): a broken harness fails CI.

They run the ``--quick`` mode in-process on a few cases of both paths (public API and kernel
diagnostics, plus the ceiling cases), the error path (an operation that raises is reported and
the run goes on), the time guard, case selection, the timing module, the host-cost benchmark
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
from benchmarks import _timing, api, host_cost  # noqa: E402
from benchmarks.bench_elementwise import BinaryCase  # noqa: E402

import gputensor as gt  # noqa: E402


def test_quick_cli_both_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    json_path = tmp_path / "bench.json"
    plot_path = tmp_path / "bench.png"
    status = h.main(["--quick", "--only", "api.add.f32.1K,api.sum.f32.1K,api.mask.*,binary.add.f32,reduce.sum.full",
                     "--no-torch", "--no-cupy", "--json", str(json_path), "--plot", str(plot_path), "--budget", "20"])
    assert status == 0
    printed = capsys.readouterr().out
    assert "== public API" in printed and "== kernel diagnostics" in printed
    assert printed.index("== public API") < printed.index("== kernel diagnostics")
    assert "gt/torch" in printed and "gt host" in printed and "gt GPU" in printed
    data = json.loads(json_path.read_text())
    ids = [r["id"] for r in data["results"]]
    assert ids == ["ceiling.copy", "ceiling.matmul", "api.add.f32.1K", "api.sum.f32.1K", "api.mask.f32.16K",
                   "binary.add.f32", "reduce.sum.full"]
    results = {r["id"]: r for r in data["results"]}
    assert results["api.add.f32.1K"]["path"] == "api" and results["binary.add.f32"]["path"] == "kernel"

    for case_id in ("api.add.f32.1K", "api.sum.f32.1K", "binary.add.f32"):
        r = results[case_id]["frameworks"]["gputensor"]
        assert r["error"] is None and r["check"] == "ok", (case_id, r)
        assert r["time_s"] > 0 and r["rate"] > 0 and r["cold_s"] > 0 and r["reps"] >= 1
        assert 0 < r["host_s"] <= r["time_s"] * 1.001  # recording is part of the wall time
        assert len(r["batches"]) >= 3
        assert r["rate"] == pytest.approx(results[case_id]["bytes"] / r["time_s"] / 1e9)
        assert r["extra"]["pipelines_compiled"] == 0  # no per-call compilation once warm
    add = results["api.add.f32.1K"]
    assert add["bytes"] == 3 * 4 * 1024  # sized from its inputs: two read, one written
    # the GPU time comes from timestamp queries where the adapter has them
    if "timestamp-query" in data["meta"]["features"]:
        assert add["frameworks"]["gputensor"]["gpu_s"] > 0
        assert add["frameworks"]["gputensor"]["gpu_kernels"]
    mask = results["api.mask.f32.16K"]["frameworks"]["gputensor"]
    assert mask["check"] == "ok" and mask["time_s"] > 0

    # the copy ceiling falls back to gputensor's own copy without torch; fractions follow from it
    assert data["ceilings"]["copy_GBps"] > 0 and data["ceilings"]["copy_source"].startswith("gputensor")
    assert data["ceilings"]["matmul_TFLOPs"] is None
    assert results["ceiling.matmul"]["frameworks"]["gputensor"]["error"].startswith("n/a")
    frac = results["binary.add.f32"]["fraction_of_ceiling"]
    assert frac == pytest.approx(results["binary.add.f32"]["frameworks"]["gputensor"]["rate"]
                                 / data["ceilings"]["copy_GBps"])
    assert data["meta"]["quick"] is True and "adapter" in data["meta"]

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "plot skipped" in printed
    else:
        assert plot_path.stat().st_size > 0


def test_every_api_case_runs_and_checks_on_this_adapter(capsys: pytest.CaptureFixture[str]) -> None:
    """Each public-API case, quick sizes, runs and matches NumPy (one batch each: fast)."""
    report = h.run(h.Options(quick=True, use_torch=False, use_cupy=False, ceilings=False, target_batch_s=0.001,
                             budget_s=float("inf")),  # every case, however loaded the machine
                   api.cases(quick=True))
    bad = {r.id: (r.frameworks["gputensor"].error or r.frameworks["gputensor"].check) for r in report.results
           if r.frameworks["gputensor"].error or r.frameworks["gputensor"].check.startswith("WRONG")}
    assert not bad, bad
    for r in report.results:
        fw = r.frameworks["gputensor"]
        assert fw.time_s > 0 and fw.host_s > 0, r.id
        assert fw.check == ("unchecked" if r.id.startswith(("api.synchronize", "api.alloc")) else "ok"), r.id
    capsys.readouterr()


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
    assert ids[2].startswith("api.")  # the headline runs first
    gemm = h.select(cases, ["gemm"], ceilings=False)
    assert gemm and all(c.id.startswith("gemm.") for c in gemm)
    assert [c.id for c in h.select(cases, ["conv"], ceilings=False)] == ["conv2d.3x3", "conv2d.1x1"]
    causal = h.select(cases, ["attention.f16.*.causal"], ceilings=True)
    assert [c.id for c in causal[:2]] == ["ceiling.copy", "ceiling.matmul"]
    assert all(c.id.endswith(".causal") and ".f16." in c.id for c in causal[2:]) and len(causal) == 6
    headline = h.select(cases, ["headline"], ceilings=False)
    assert headline and all(c.path == "api" for c in headline)
    assert {c.group for c in headline} == {"api", "engine"}
    kernel = h.select(cases, ["kernel"], ceilings=False)
    assert kernel and all(c.path == "kernel" for c in kernel)
    with pytest.raises(ValueError, match="selects no case"):
        h.select(cases, ["nonsense"], ceilings=True)
    assert h.main(["--quick", "--only", "nonsense"]) == 2


@pytest.mark.parametrize("quick", [True, False])
def test_case_list_is_sound(quick: bool) -> None:
    cases = h.all_cases(quick)
    groups = {c.group for c in cases}
    assert groups == set(h.GROUP_ORDER)
    for c in cases:
        assert c.unit in ("GB/s", "TFLOP/s") and c.bound in ("memory", "compute", "host")
        assert c.path in ("api", "kernel")
        if c.path == "kernel":
            assert c.work > 0
    if not quick:  # the sizes of the brief
        full = {c.id: c for c in cases}
        assert full["binary.add.f32"].bytes == 3 * 256 * h.MiB
        assert full["gemm.f32.4096"].flops == 2 * 4096**3
        assert full["api.matmul.f32.4096"].flops == 2 * 4096**3
        assert full["attention.f32.d64.s4096.causal"].flops == pytest.approx(
            4 * 4 * 16 * 64 * 4096 * 4097 / 2)
        assert full["transfer.htod"].bytes == h.GiB
        for want in ("api.add.f32.1K", "api.add.f32.64M", "api.matmul.f32.1024", "api.matmul.f32.2048",
                     "api.matmul.f32.batched256x128", "api.softmax.f32",
                     "api.layernorm.f32", "api.take.f32.4Mof16M", "api.mask.f32.16M", "api.roundtrip.sum16",
                     "api.synchronize.idle", "api.alloc.fresh.256MiB", "api.loop.small"):
            assert want in full, want
        # the float64 case exactly where the device has float64 (shader-f64)
        has_f64 = "float64" in gt.__array_namespace_info__().dtypes()
        assert ("api.matmul.f64.1024" in full) == has_f64


def test_timers_hold_results_until_the_sync() -> None:
    """A batch keeps every result alive until its sync: none is freed while the batch records."""
    import weakref

    timer = _timing.GputensorTimer()
    x = gt.ones(256)
    refs: list[weakref.ref] = []

    def run(i: int) -> object:
        y = x + float(i)
        refs.append(weakref.ref(y))
        assert all(r() is not None for r in refs)  # earlier results of the batch are alive
        return y

    batch = timer.batch(run, 8, 0)
    assert batch.wall_s >= batch.host_s > 0 and len(refs) == 8
    assert _timing.time_calls(lambda: x + 1.0, gt.synchronize, reps=4, repeats=2) > 0
    assert _timing.host_per_call(lambda: x + 1.0, gt.synchronize, calls=4, batches=2) > 0
    gpu, kernels, wall = _timing.gpu_profile(lambda: x + 1.0)
    assert wall > 0 and (gpu is None or (gpu >= 0 and isinstance(kernels, dict)))


def test_host_cost_quick(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "host.json"
    assert host_cost.main(["--quick", "--calls", "3", "--json", str(path)]) == 0
    printed = capsys.readouterr().out
    assert "| a + b (eager, the baseline) |" in printed and "x eager" in printed
    rows = json.loads(path.read_text())["rows"]
    assert rows[0]["ratio"] == pytest.approx(1.0)
    assert len(rows) >= 30 and all(r["error"] is None for r in rows), [r for r in rows if r["error"]]
    assert all(r["host_us"] > 0 for r in rows)


def test_host_cost_first_call(capsys: pytest.CaptureFixture[str]) -> None:
    assert host_cost.main(["--first-call", "--quick"]) == 0
    printed = capsys.readouterr().out
    assert "| x @ y (256x256) |" in printed and "| a + b |" in printed
    rows = host_cost.first_calls(64, 3)
    assert [r["call"] for r in rows] == ["x @ y (64x64)", "x @ y (32x32)", "a + b"]
    assert all(r["first_us"] > 0 and r["second_us"] > 0 and r["batch_us"] > 0 for r in rows)


def test_roundtrip_breakdown(capsys: pytest.CaptureFixture[str]) -> None:
    assert host_cost.main(["--roundtrip-breakdown", "--calls", "5"]) == 0
    printed = capsys.readouterr().out
    assert "queue.submit" in printed and "wait (device poll until mapped)" in printed
    result = host_cost.roundtrip_breakdown(5)
    phases = result["phases_us"]
    assert phases["float(s): total"] > 0 and phases["stage: copy into staging + flush"] > 0
    assert phases["stage: copy into staging + flush"] <= phases["float(s): total"]


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


@pytest.mark.parametrize("name", ["host_profile", "diag_kernels", "diag_reduce", "tune_gemm", "tune_splitk",
                                  "tune_attention"])
def test_tools_import_and_share_the_timing_module(name: str) -> None:
    """The diagnostic and tuning scripts import (their relative imports and the timing module
    resolve) and time through benchmarks._timing, not a copy of their own."""
    import importlib
    import inspect

    module = importlib.import_module(f"benchmarks.tools.{name}")
    assert callable(module.main)
    source = inspect.getsource(module)
    assert "_timing" in source or "time_calls" in source or "wall_us" in source
