"""Running cases: cold call, check, batch timing (``_timing.py``), ratios and fractions of the
ceilings, the ``--ab`` variants and the time budget.
"""

from __future__ import annotations

import statistics
import time
import traceback
import zlib
from collections.abc import Sequence
from typing import Any, TextIO

import numpy as np

from ._case import Case
from ._checks import CheckError, NotAvailable
from ._env import Env, Prepared, _short
from ._output import progress_line, write_json
from ._results import FRAMEWORKS, CaseResult, FwResult, Options, Report
from ._select import ab_variants
from ._timing import Timer, cold_call, estimate_call


class Runner:
    """Runs cases through the frameworks and collects a Report."""

    def __init__(self, options: Options, env: Env, frameworks: dict[str, Timer],
                 meta: dict[str, Any], out: TextIO) -> None:
        self.options = options
        self.env = env
        self.frameworks = frameworks
        self.meta = meta
        self.out = out
        self.quick = options.quick
        self.budget = options.budget_s if options.budget_s is not None else (55.0 if options.quick else 330.0)
        self.target = options.target_batch_s if options.target_batch_s is not None else (
            0.01 if options.quick else 0.05)
        self.max_reps = 200 if options.quick else 2000
        self.started = time.perf_counter()
        self.ceilings: dict[str, Any] = {"copy_GBps": None, "copy_source": None,
                                         "matmul_TFLOPs": None, "matmul_source": None}
        self.results: list[CaseResult] = []
        self.variants = ab_variants(options.ab)

    # -- time guard ---------------------------------------------------------------------------
    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def over_budget(self) -> bool:
        return self.elapsed() > self.budget

    # -- one framework on one case --------------------------------------------------------------
    def measure(self, fw: Timer, case: Case, host: dict[str, np.ndarray]) -> FwResult:
        res = FwResult()
        prep: Prepared | None = None
        build = getattr(case, fw.name)
        try:
            prep = build(self.env, host)
        except NotAvailable as exc:
            res.error = f"n/a: {exc}"
            return res
        except Exception as exc:  # noqa: BLE001 - any failure is reported, the run goes on
            res.error = f"error: {_short(exc)}"
            self._trace(exc)
            return res
        try:
            res.cold_s, _ = cold_call(prep.run, fw.sync)
            res.sets = 1 if prep.host_timed else self.env.sets(case.working_set)
            if prep.result is not None:
                try:
                    case.check(host, prep.result())
                    res.check = "ok"
                except CheckError as exc:
                    res.check = f"WRONG: {exc}"
            # estimate one call, choose the batch size; one discarded batch first, so the device
            # has left its idle clocks and the pools and caches are warm
            max_reps = min(self.max_reps, case.max_reps or self.max_reps)
            one = estimate_call(prep.run, fw.sync, max_calls=max_reps)
            reps = int(max(1, min(max_reps, self.target / one)))
            self.env.warm_clocks()  # every framework's batches start at the same (boost) clocks
            nbatch = 5 if one * reps < 0.2 else 3
            if one > 1.0:
                nbatch = 2
            else:
                fw.batch(prep.run, reps, 18)
            batches = []
            start = 18 + reps
            for _ in range(nbatch):
                batches.append(fw.batch(prep.run, reps, start))
                start += reps
                if self.elapsed() > self.budget + 30.0:  # hard stop inside a very slow case
                    break
            res.batches = [b.wall_s for b in batches]
            res.reps = reps
            res.time_s = statistics.median(res.batches)
            res.host_s = statistics.median(b.host_s for b in batches)
            gpu = [b.gpu_s for b in batches if b.gpu_s is not None]
            if gpu:
                res.gpu_s = statistics.median(gpu)
            elif not prep.host_timed or case.path == "api":
                res.gpu_s, res.gpu_kernels = fw.gpu_batch(prep.run, reps, start)
            res.rate = case.work / res.time_s / (1e9 if case.unit == "GB/s" else 1e12)
            keys = set().union(*(b.counters for b in batches))
            res.extra = {k: statistics.median(b.counters.get(k, 0.0) for b in batches) for k in sorted(keys)}
            res.extra["calls_per_batch"] = reps
        except NotAvailable as exc:
            res.error = f"n/a: {exc}"
        except Exception as exc:  # noqa: BLE001
            res.error = f"error: {_short(exc)}"
            res.time_s = res.rate = None
            self._trace(exc)
        finally:
            try:
                fw.sync()
            except Exception:  # noqa: BLE001
                pass
            if prep is not None:
                try:
                    prep.close()
                except Exception:  # noqa: BLE001
                    pass
            try:
                fw.cleanup()
            except Exception:  # noqa: BLE001
                pass
        return res

    def _trace(self, exc: BaseException) -> None:
        if self.options.verbose:
            traceback.print_exception(exc, file=self.out)

    # -- one case --------------------------------------------------------------------------------
    def run_case(self, case: Case, index: int) -> CaseResult:
        cr = CaseResult(case.id, case.group, case.label, case.unit, case.bytes, case.flops, case.bound,
                        series=case.series, path=case.path)
        rng = np.random.default_rng([self.options.seed, zlib.crc32(case.id.encode())])  # same data whatever --only
        try:
            host = case.host(rng)
        except Exception as exc:  # noqa: BLE001
            for name in self.frameworks:
                cr.frameworks[name] = FwResult(error=f"error: making inputs: {_short(exc)}")
            return cr
        cr.bytes, cr.flops = case.bytes, case.flops  # cases that size themselves from their inputs
        for name in FRAMEWORKS:
            fw = self.frameworks.get(name)
            if fw is None:
                continue
            if self.elapsed() > self.budget + 30.0:
                cr.frameworks[name] = FwResult(error="skipped: time budget")
                continue
            cr.frameworks[name] = self.measure(fw, case, host)
        del host
        case.release()
        self._derive(case, cr)
        return cr

    def run_variant(self, case: Case, base: CaseResult, suffix: str, overrides: dict[str, Any]) -> CaseResult:
        """``case`` through gputensor again under ``config.override(**overrides)`` (an ``--ab``
        row, id ``case.id + suffix``); torch's and cupy's numbers are ``base``'s."""
        from gputensor._backend import config

        cr = CaseResult(case.id + suffix, case.group, case.label + " " + suffix, case.unit, case.bytes, case.flops,
                        case.bound, series=case.series, path=case.path)
        rng = np.random.default_rng([self.options.seed, zlib.crc32(case.id.encode())])  # the base's data
        try:
            host = case.host(rng)
        except Exception as exc:  # noqa: BLE001
            cr.frameworks["gputensor"] = FwResult(error=f"error: making inputs: {_short(exc)}")
            return cr
        with config.override(**overrides):
            cr.frameworks["gputensor"] = self.measure(self.frameworks["gputensor"], case, host)
        del host
        case.release()
        for name in ("torch", "cupy"):
            if name in base.frameworks:
                cr.frameworks[name] = base.frameworks[name]
        self._derive(case, cr)
        return cr

    def _derive(self, case: Case, cr: CaseResult) -> None:
        gt = cr.frameworks.get("gputensor")
        for other in ("torch", "cupy"):
            o = cr.frameworks.get(other)
            if gt and gt.ok and o and o.ok:
                setattr(cr, f"ratio_{other}", o.time_s / gt.time_s)
                if gt.gpu_s and o.gpu_s:
                    setattr(cr, f"gpu_ratio_{other}", o.gpu_s / gt.gpu_s)
        if case.ceiling is not None:
            self._set_ceiling(case, cr)
        if gt and gt.ok:
            ceil = None
            if case.bound == "memory" and self.ceilings["copy_GBps"]:
                ceil = self.ceilings["copy_GBps"]
                cr.fraction_of_ceiling = case.bytes / gt.time_s / 1e9 / ceil
            elif case.bound == "compute" and self.ceilings["matmul_TFLOPs"]:
                ceil = self.ceilings["matmul_TFLOPs"]
                cr.fraction_of_ceiling = case.flops / gt.time_s / 1e12 / ceil
            cr.ceiling_value = ceil
            ex = gt.extra
            if ex.get("pipelines_compiled"):
                cr.notes.append(f"{ex['pipelines_compiled']:.0f} pipeline compiles per timed batch")
            calls = ex.get("calls_per_batch", 0)
            dispatches = ex.get("dispatches", 0)
            if (case.bound != "host" and calls and "submits" in ex
                    and ex["submits"] > dispatches / 256 + 2 + calls / 64):
                cr.notes.append(f"{ex['submits'] / calls:.2f} submits per call (CPU round trip?)")
        for name, r in cr.frameworks.items():
            if r.check.startswith("WRONG"):
                cr.notes.append(f"{name} {r.check}")

    def _set_ceiling(self, case: Case, cr: CaseResult) -> None:
        """A ceiling is torch's rate, else cupy's, else (copy only) gputensor's own."""
        order = ("torch", "cupy", "gputensor") if case.ceiling == "copy" else ("torch", "cupy")
        for name in order:
            r = cr.frameworks.get(name)
            if r is not None and r.ok and not r.check.startswith("WRONG"):
                if case.ceiling == "copy":
                    self.ceilings["copy_GBps"] = case.bytes / r.time_s / 1e9
                    self.ceilings["copy_source"] = f"{name} {case.label}"
                else:
                    self.ceilings["matmul_TFLOPs"] = case.flops / r.time_s / 1e12
                    self.ceilings["matmul_source"] = f"{name} {case.label}"
                return

    # -- all cases ---------------------------------------------------------------------------------
    def run(self, cases: Sequence[Case]) -> Report:
        for index, case in enumerate(cases):
            if self.over_budget():
                cr = CaseResult(case.id, case.group, case.label, case.unit, case.bytes, case.flops, case.bound)
                cr.skipped = f"skipped: time budget of {self.budget:.0f} s spent"
                self.results.append(cr)
                print(f"[{self.elapsed():6.1f}s] {case.id}: {cr.skipped}", file=self.out, flush=True)
                continue
            cr = self.run_case(case, index)
            self.results.append(cr)
            print(f"[{self.elapsed():6.1f}s] {progress_line(cr)}", file=self.out, flush=True)
            for suffix, overrides in self.variants:
                if "gputensor" not in self.frameworks or self.over_budget():
                    break
                vr = self.run_variant(case, cr, suffix, overrides)
                self.results.append(vr)
                print(f"[{self.elapsed():6.1f}s] {progress_line(vr)}", file=self.out, flush=True)
            if self.options.json_path:
                write_json(self.report(), self.options.json_path)
        return self.report()

    def report(self) -> Report:
        meta = dict(self.meta)
        meta["elapsed_s"] = round(self.elapsed(), 3)
        meta["budget_s"] = self.budget
        meta["target_batch_s"] = self.target
        return Report(meta, dict(self.ceilings), list(self.results))
