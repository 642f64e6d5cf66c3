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
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import fnmatch
import json
import math
import os
import platform
import statistics
import sys
import time
import traceback
import zlib
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import numpy as np

from ._timing import ClockWarmer, CupyTimer, GputensorTimer, Timer, TorchTimer, cold_call, estimate_call

MiB = 1 << 20
GiB = 1 << 30

FRAMEWORKS = ("gputensor", "torch", "cupy")
#: groups in run order: the public-API headline first, then the kernel diagnostics
GROUP_ORDER = ("ceiling", "api", "engine", "binary", "unary", "reduce", "gemm", "conv2d", "transfer",
               "attention")
GROUP_ALIASES = {"kernel": "ceiling,binary,unary,reduce,gemm,conv2d,transfer,attention",
                 "headline": "api,engine", "conv": "conv2d", "attn": "attention", "transfers": "transfer", "ceilings": "ceiling",
                 "elementwise": "binary,unary", "copy": "ceiling.copy", "matmul": "ceiling.matmul"}

#: L2 size assumed when torch cannot tell (bytes); an H200 has about 60 MB.
DEFAULT_L2_BYTES = 64 * MiB


class CheckError(Exception):
    """A result differs from its reference by more than the tolerance."""


class NotAvailable(Exception):
    """The framework cannot run this case (no such operation); shown as '-' rather than an error."""


# ---------------------------------------------------------------------------------------------
# checks
# ---------------------------------------------------------------------------------------------
def assert_close(got: Any, ref: Any, tol: Any, what: str) -> None:
    """Raise CheckError unless ``|got - ref| <= tol`` elementwise (NaN never passes).

    ``tol`` is a scalar or an array broadcastable to ``ref``; the message names the worst element.
    """
    g = np.asarray(got, dtype=np.float64)
    r = np.asarray(ref, dtype=np.float64)
    if g.shape != r.shape:
        raise CheckError(f"{what}: shape {g.shape} != reference shape {r.shape}")
    err = np.abs(g - r)
    t = np.broadcast_to(np.asarray(tol, dtype=np.float64), r.shape)
    bad = ~(err <= t)
    if bad.any():
        excess = np.where(np.isnan(err), np.inf, err - t)
        worst = np.unravel_index(int(np.argmax(excess)), r.shape)
        raise CheckError(
            f"{what}: {int(bad.sum())} of {bad.size} values wrong; worst at {tuple(int(i) for i in worst)}: "
            f"got {g[worst]:.6g}, want {r[worst]:.6g} (tol {t[worst]:.3g})"
        )


def assert_equal(got: Any, ref: Any, what: str) -> None:
    """Raise CheckError unless ``got`` and ``ref`` are equal element for element."""
    g, r = np.asarray(got), np.asarray(ref)
    if g.shape != r.shape:
        raise CheckError(f"{what}: shape {g.shape} != reference shape {r.shape}")
    if not np.array_equal(g, r):
        bad = g != r
        first = np.unravel_index(int(np.argmax(bad)), r.shape)
        raise CheckError(f"{what}: {int(bad.sum())} of {bad.size} values differ; first at "
                         f"{tuple(int(i) for i in first)}: got {g[first]!r}, want {r[first]!r}")


# ---------------------------------------------------------------------------------------------
# environment and per-framework preparation
# ---------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Prepared:
    """One framework's ready-to-run form of a case.

    ``run(i)`` records (gputensor) or enqueues (torch/cupy) one call on input set ``i % sets`` and
    returns its result (the timer holds every result of a batch until the batch's sync);
    ``result()`` returns the output of set 0 as a NumPy array (for the check; None: unchecked);
    ``close()`` frees what was allocated.
    """

    run: Callable[[int], Any]
    result: Callable[[], np.ndarray] | None = None
    close: Callable[[], None] = lambda: None
    host_timed: bool = False  # host is part of the work (transfers, readbacks inside the call)


class GtArena:
    """gputensor allocations made for one case, freed together."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.ptrs: list[int] = []

    def empty(self, nbytes: int) -> int:
        """A new (zero-filled) allocation of ``nbytes``."""
        ptr = self.backend.alloc(int(nbytes))
        self.ptrs.append(ptr)
        return ptr

    def upload(self, array: np.ndarray) -> int:
        """A new allocation holding the bytes of ``array``."""
        array = np.ascontiguousarray(array)
        ptr = self.empty(array.nbytes)
        self.backend.copy_htod(ptr, array)
        return ptr

    def download(self, ptr: int, shape: Sequence[int] | int, dtype: Any) -> np.ndarray:
        """The device bytes at ``ptr`` as a new NumPy array of ``shape`` and ``dtype``."""
        out = np.empty(shape, dtype=dtype)
        self.backend.copy_dtoh(out, ptr)
        return out

    def close(self) -> None:
        """Free every allocation (errors while freeing are ignored)."""
        for ptr in self.ptrs:
            try:
                self.backend.free(ptr)
            except Exception:  # noqa: BLE001 - best effort clean-up
                pass
        self.ptrs.clear()


@dataclasses.dataclass
class Env:
    """What the cases run on: the gputensor backend and, when present, torch and cupy."""

    backend: Any
    torch: Any = None
    cupy: Any = None
    quick: bool = False
    l2_bytes: int = DEFAULT_L2_BYTES
    _warmer: ClockWarmer | None = None

    def sets(self, working_set_bytes: int) -> int:
        """How many input/output sets to rotate: 2 when the working set fits in L2, else 1."""
        return 2 if working_set_bytes <= self.l2_bytes else 1

    def arena(self) -> GtArena:
        """A fresh allocation arena on the gputensor backend."""
        return GtArena(self.backend)

    def to_torch(self, array: np.ndarray) -> Any:
        """``array`` as a contiguous torch tensor on the CUDA device."""
        return self.torch.from_numpy(np.ascontiguousarray(array)).to("cuda")

    def to_cupy(self, array: np.ndarray) -> Any:
        """``array`` as a cupy array."""
        return self.cupy.asarray(np.ascontiguousarray(array))

    def warm_clocks(self) -> None:
        """Keep the GPU saturated for 0.1 s (torch matmuls; ``_timing.ClockWarmer``) so that every
        framework's timed batches start at boost clocks. Does nothing without torch or in quick
        runs."""
        if self.torch is None or self.quick:
            return
        if self._warmer is None:
            self._warmer = ClockWarmer(self.torch)
        self._warmer.warm()


# ---------------------------------------------------------------------------------------------
# cases
# ---------------------------------------------------------------------------------------------
class Case:
    """One benchmark case. Subclasses set the attributes and override the framework methods.

    Attributes: ``id`` (dotted, e.g. ``gemm.f32.4096``; its first part is the group), ``label``
    (human-readable), ``unit`` ('GB/s' or 'TFLOP/s'), ``bytes`` and ``flops`` of one call,
    ``bound`` ('memory', 'compute' or 'host': which ceiling the fraction is taken of),
    ``working_set`` (device bytes of one input/output set) and ``ceiling`` ('copy'/'matmul' for
    the ceiling cases, else None).
    """

    id: str = ""
    label: str = ""
    unit: str = "GB/s"
    bytes: float = 0.0
    flops: float = 0.0
    bound: str = "memory"
    working_set: int = 0
    ceiling: str | None = None
    series: str | None = None  # cases of one series (e.g. square gemm sizes) are joined in the plot
    path: str = "kernel"  # 'api': user code through the public API; 'kernel': the backend contract
    max_reps: int | None = None  # most calls per batch (cases whose results are large)

    @property
    def group(self) -> str:
        return self.id.split(".", 1)[0]

    @property
    def work(self) -> float:
        """The amount the rate is computed from (bytes for GB/s, flops for TFLOP/s)."""
        return self.bytes if self.unit == "GB/s" else self.flops

    def host(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """The host inputs (made once per case, shared by every framework)."""
        return {}

    def check(self, host: dict[str, np.ndarray], got: np.ndarray) -> None:
        """Compare a framework's result with the reference; raise CheckError if it is wrong."""

    def release(self) -> None:
        """Drop what the case keeps between frameworks (a cached reference); called after it ran."""

    def gputensor(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        raise NotAvailable("no gputensor form")

    def torch(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        raise NotAvailable("no torch form")

    def cupy(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        raise NotAvailable("no cupy form")


def uniform(rng: np.random.Generator, shape: Sequence[int] | int, dtype: Any, lo: float = -1.0,
            hi: float = 1.0) -> np.ndarray:
    """Uniform random values in [lo, hi) of ``dtype`` (made in float32, then cast)."""
    x = rng.random(shape, dtype=np.float32)
    x *= hi - lo
    x += lo
    return x.astype(dtype, copy=False)


def fmt_bytes(n: float) -> str:
    """``268435456`` -> ``'256 MiB'``."""
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if n >= size:
            v = n / size
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{int(n)} B"


DTYPE_SHORT = {"float16": "f16", "float32": "f32", "float64": "f64"}


# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------
@dataclasses.dataclass
class FwResult:
    """One framework's numbers for one case (seconds per call, medians over the batches):
    ``time_s`` wall, ``host_s`` recording/enqueueing, ``gpu_s`` device time (None: not
    measured), ``gpu_kernels`` gputensor's device time per kernel name."""

    time_s: float | None = None
    host_s: float | None = None
    gpu_s: float | None = None
    gpu_kernels: dict[str, float] = dataclasses.field(default_factory=dict)
    rate: float | None = None
    cold_s: float | None = None
    reps: int = 0
    batches: list[float] = dataclasses.field(default_factory=list)
    check: str = "unchecked"  # 'ok', 'unchecked' or 'WRONG: ...'
    error: str | None = None  # 'error: ...' / 'n/a: ...' / 'skipped: ...'
    extra: dict[str, float] = dataclasses.field(default_factory=dict)
    sets: int = 1

    @property
    def ok(self) -> bool:
        return self.time_s is not None


@dataclasses.dataclass
class CaseResult:
    """All frameworks' numbers for one case, with the ratios and the fraction of the ceiling."""

    id: str
    group: str
    label: str
    unit: str
    bytes: float
    flops: float
    bound: str
    frameworks: dict[str, FwResult] = dataclasses.field(default_factory=dict)
    fraction_of_ceiling: float | None = None
    ceiling_value: float | None = None
    ratio_torch: float | None = None
    ratio_cupy: float | None = None
    gpu_ratio_torch: float | None = None
    gpu_ratio_cupy: float | None = None
    path: str = "kernel"
    skipped: str | None = None
    notes: list[str] = dataclasses.field(default_factory=list)
    series: str | None = None

    def as_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        return d


@dataclasses.dataclass
class Options:
    """What ``run`` does (the command-line flags)."""

    quick: bool = False
    only: list[str] | None = None
    json_path: str | None = None
    plot_path: str | None = None
    budget_s: float | None = None  # None: 330 s full, 55 s quick
    use_torch: bool = True
    use_cupy: bool = True
    ceilings: bool = True
    seed: int = 0
    target_batch_s: float | None = None  # None: 0.05 s full, 0.01 s quick
    verbose: bool = False
    list_only: bool = False
    ab: list[str] | None = None  # knobs ("NAME" flips a switch, "NAME=VALUE" sets one): see ab_variants


@dataclasses.dataclass
class Report:
    """What a run produced: the environment, the ceilings and every case's result."""

    meta: dict[str, Any]
    ceilings: dict[str, Any]
    results: list[CaseResult]

    def as_json(self) -> dict[str, Any]:
        return {"meta": self.meta, "ceilings": self.ceilings, "results": [r.as_json() for r in self.results]}

    def result(self, case_id: str) -> CaseResult:
        for r in self.results:
            if r.id == case_id:
                return r
        raise KeyError(case_id)


# ---------------------------------------------------------------------------------------------
# case selection
# ---------------------------------------------------------------------------------------------
def all_cases(quick: bool) -> list[Case]:
    """Every case of the suite, in run order (ceilings first)."""
    from . import (api, bench_attention, bench_ceiling, bench_conv, bench_elementwise, bench_engine,
                   bench_gemm, bench_reduce, bench_transfer)

    cases: list[Case] = []
    for module in (bench_ceiling, api, bench_engine, bench_elementwise, bench_reduce, bench_gemm, bench_conv,
                   bench_transfer, bench_attention):
        cases.extend(module.cases(quick))
    order = {g: i for i, g in enumerate(GROUP_ORDER)}
    cases.sort(key=lambda c: order.get(c.group, len(order)))  # stable: keeps each module's order
    return cases


def _expand(items: Sequence[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        for part in str(item).split(","):
            part = part.strip()
            if part:
                out.extend(GROUP_ALIASES.get(part, part).split(","))
    return out


def matches(case_id: str, pattern: str) -> bool:
    """``pattern`` selects ``case_id``: equal, a dotted prefix (``gemm`` selects ``gemm.f32.1024``),
    or an fnmatch pattern (``attention.*.s4096*``)."""
    return case_id == pattern or case_id.startswith(pattern + ".") or fnmatch.fnmatchcase(case_id, pattern)


def select(cases: Sequence[Case], only: Sequence[str] | None, ceilings: bool) -> list[Case]:
    """The cases ``only`` selects (all when None), plus the ceiling cases when ``ceilings``.

    Raises ValueError naming the pattern when one selects nothing.
    """
    if not only:
        chosen = [c for c in cases if ceilings or c.ceiling is None]
        return chosen
    patterns = _expand(only)
    for p in patterns:
        if not any(matches(c.id, p) for c in cases):
            raise ValueError(f"--only {p!r} selects no case; ids are: " + ", ".join(c.id for c in cases))
    return [c for c in cases if any(matches(c.id, p) for p in patterns) or (ceilings and c.ceiling)]


def ab_variants(items: Sequence[str] | None) -> list[tuple[str, dict[str, Any]]]:
    """(case id suffix, ``config.override`` arguments) of each ``--ab`` item: ``NAME=VALUE`` sets
    gputensor knob NAME (parsed as its environment variable would be), ``NAME`` flips a switch
    from its value now; items may be comma-separated. ValueError for an unknown knob."""
    from gputensor._backend import config

    knobs = {k.name: k for k in config.KNOBS}
    out: list[tuple[str, dict[str, Any]]] = []
    for item in _expand(items or ()):
        name, _, raw = item.partition("=")
        knob = knobs.get(name.strip())
        if knob is None:
            raise ValueError(f"--ab: unknown gputensor knob {name!r}; knobs: {', '.join(knobs)}")
        value = knob.parse(knob.env, raw.strip(), knob.default) if raw.strip() else not config.value(knob.name)
        shown = int(value) if isinstance(value, bool) else value
        out.append((f"[{knob.name}={shown}]", {knob.name: value}))
    return out


# ---------------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------------
def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def detect_torch(enabled: bool) -> tuple[Any, str | None]:
    """(torch module with CUDA, or None; a note why not). Sets TF32 off for matmul and cuDNN."""
    if not enabled:
        return None, "disabled"
    try:
        import torch  # type: ignore[import-not-found]
    except Exception as exc:  # noqa: BLE001
        return None, f"not importable ({_short(exc)})"
    try:
        if not torch.cuda.is_available():
            return None, "no CUDA device"
    except Exception as exc:  # noqa: BLE001
        return None, _short(exc)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    try:
        torch.set_float32_matmul_precision("highest")
    except Exception:  # noqa: BLE001
        pass
    return torch, None


def detect_cupy(enabled: bool) -> tuple[Any, str | None]:
    """(cupy module with a CUDA device, or None; a note why not)."""
    if not enabled:
        return None, "disabled"
    try:
        import cupy  # type: ignore[import-not-found]
    except Exception as exc:  # noqa: BLE001
        return None, f"not importable ({_short(exc)})"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None, "no CUDA device"
    except Exception as exc:  # noqa: BLE001
        return None, _short(exc)
    return cupy, None


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


# ---------------------------------------------------------------------------------------------
# output
# ---------------------------------------------------------------------------------------------
def _num(x: float | None, digits: int = 3) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    if x == 0:
        return "0"
    mag = math.floor(math.log10(abs(x)))
    decimals = max(0, digits - 1 - mag)
    return f"{x:.{decimals}f}"


def fmt_time(t: float | None) -> str:
    """Seconds as ms (or µs below 0.1 ms)."""
    if t is None:
        return "-"
    if t < 1e-4:
        return f"{_num(t * 1e6)} us"
    return f"{_num(t * 1e3)} ms"


def _si(x: float, unit: str) -> str:
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{_num(x / scale)} {prefix}{unit}"
    return f"{_num(x)} {unit}"


def fmt_work(case: CaseResult) -> str:
    """Bytes moved (GB/s cases) or flops (TFLOP/s cases) of one call, e.g. '805 MB', '137 GFLOP'."""
    if case.unit == "GB/s":
        return _si(case.bytes, "B")
    return _si(case.flops, "FLOP")


def fmt_rate(r: FwResult | None, unit: str) -> str:
    if r is None or not r.ok:
        return "-"
    return f"{_num(r.rate)} {unit}"


def _fw_cell(r: FwResult | None) -> str:
    if r is None:
        return "-"
    if r.ok:
        return fmt_time(r.time_s)
    if r.error and r.error.startswith("error"):
        return "error"
    if r.error and r.error.startswith("skipped"):
        return "skipped"
    return "-"


def progress_line(cr: CaseResult) -> str:
    """One line per finished case, printed as the run goes."""
    parts = [cr.id]
    for name, r in cr.frameworks.items():
        if r.ok:
            parts.append(f"{name} {fmt_time(r.time_s)} = {fmt_rate(r, cr.unit)} (host {fmt_time(r.host_s)}, "
                         f"GPU {fmt_time(r.gpu_s)}, cold {fmt_time(r.cold_s)}, check {r.check.split(':')[0]})")
        elif r.error and not r.error.startswith("n/a"):
            parts.append(f"{name} {r.error}")
    return " | ".join(parts)


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _section(results: Sequence[CaseResult], notes: list[str]) -> list[str]:
    """Fixed-width rows of ``results`` (one per case); long errors and wrong results go to ``notes``."""
    header = ["case", "work", "gt wall", "gt host", "gt GPU", "torch wall", "torch GPU", "cupy wall",
              "gt rate", "gt/torch", "gt/cupy", "GPU gt/torch", "of ceiling", "gt cold", "check / note"]
    rows: list[list[str]] = []
    for cr in results:
        gt = cr.frameworks.get("gputensor")
        torch, cupy = cr.frameworks.get("torch"), cr.frameworks.get("cupy")
        if cr.skipped:
            rows.append([cr.id, fmt_work(cr)] + ["-"] * 12 + [cr.skipped])
            continue
        note = ""
        if gt is not None and gt.error:
            note = gt.error if len(gt.error) <= 70 else gt.error[:67] + "..."
            if len(gt.error) > 70:
                notes.append(f"{cr.id}: gputensor {gt.error}")
        elif gt is not None:
            note = gt.check if len(gt.check) <= 70 else gt.check[:67] + "..."
        for name, r in (("torch", torch), ("cupy", cupy)):
            if r is not None and r.error and r.error.startswith("error"):
                notes.append(f"{cr.id}: {name} {r.error}")
        notes.extend(f"{cr.id}: {n}" for n in cr.notes)
        frac = "-" if cr.fraction_of_ceiling is None else f"{cr.fraction_of_ceiling:.2f}" + (
            " mem" if cr.bound == "memory" and cr.unit != "GB/s" else "")
        ok = gt is not None and gt.ok
        rows.append([
            cr.id, fmt_work(cr), _fw_cell(gt), fmt_time(gt.host_s) if ok else "-",
            fmt_time(gt.gpu_s) if ok else "-", _fw_cell(torch),
            fmt_time(torch.gpu_s) if torch is not None and torch.ok else "-", _fw_cell(cupy),
            fmt_rate(gt, cr.unit), _ratio(cr.ratio_torch), _ratio(cr.ratio_cupy), _ratio(cr.gpu_ratio_torch),
            frac, fmt_time(gt.cold_s) if gt is not None else "-", note,
        ])
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    fmt = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return [fmt(header), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows]


def table(report: Report) -> str:
    """The results as fixed-width text tables (public API first, then the kernel diagnostics),
    followed by the ceilings, a legend and the notes (errors, wrong results)."""
    notes: list[str] = []
    lines: list[str] = []
    for path, title in (("api", "public API (user code through gt.*)"),
                        ("kernel", "kernel diagnostics (the backend contract on device pointers)")):
        part = [r for r in report.results if r.path == path]
        if part:
            lines.append(f"== {title}")
            lines.extend(_section(part, notes))
            lines.append("")
    c = report.ceilings
    lines.append("ceilings: copy " + (f"{_num(c['copy_GBps'])} GB/s ({c['copy_source']})" if c.get("copy_GBps")
                                      else "not measured")
                 + "; fp32 matmul " + (f"{_num(c['matmul_TFLOPs'])} TFLOP/s ({c['matmul_source']})"
                                       if c.get("matmul_TFLOPs") else "not measured"))
    lines.append("times per call, medians over batches of back-to-back calls whose results are held until "
                 "the batch's sync. wall: first call to sync returned; host: recording/enqueueing the calls; "
                 "GPU: CUDA events, gputensor timestamp queries (a profiled batch). gt/torch = torch wall / "
                 "gputensor wall (>1: gputensor faster); GPU gt/torch the same on GPU time. 'gt cold' = first "
                 "call incl. compilation.")
    lines.append("'of ceiling' = gputensor's rate / the ceiling ('mem': a case reported in TFLOP/s that "
                 "is memory-bound, taken against the copy ceiling).")
    if notes:
        lines.append("")
        lines.append("notes:")
        lines.extend(f"  {n}" for n in notes)
    return "\n".join(lines)


def write_json(report: Report, path: str) -> None:
    """Write every number of ``report`` as JSON to ``path`` (atomically)."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(report.as_json(), f, indent=1, default=str)
    os.replace(tmp, path)


def write_plot(report: Report, path: str, out: TextIO) -> bool:
    """Write a PNG: GB/s against bytes moved and TFLOP/s against flops for every framework (points
    of one series, e.g. square gemm sizes, joined by lines; the ceilings dashed), and a bar chart of
    gputensor's rate as a fraction of torch's per case. Returns False, printing why, when
    matplotlib is not importable."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as exc:  # noqa: BLE001
        print(f"plot skipped: matplotlib is not importable ({_short(exc)})", file=out)
        return False
    markers = {"gputensor": "o", "torch": "s", "cupy": "^"}
    styles = {"gputensor": "-", "torch": "--", "cupy": ":"}
    groups = [g for g in GROUP_ORDER if any(r.group == g for r in report.results)]
    groups += sorted({r.group for r in report.results} - set(groups))
    cmap = plt.get_cmap("tab10")
    colors = {g: cmap(i % 10) for i, g in enumerate(groups)}
    fig = plt.figure(figsize=(18, 12))
    grid = fig.add_gridspec(2, 2, height_ratios=(3, 2))
    axes = [fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])]
    for ax, unit in zip(axes, ("GB/s", "TFLOP/s")):
        seen_fw: set[str] = set()
        seen_group: set[str] = set()
        series: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for cr in report.results:
            if cr.unit != unit:
                continue
            x = cr.bytes if unit == "GB/s" else cr.flops
            for name, r in cr.frameworks.items():
                if not r.ok:
                    continue
                ax.scatter([x], [r.rate], marker=markers.get(name, "x"), s=45, edgecolors=colors[cr.group],
                           facecolors=colors[cr.group] if name == "gputensor" else "none", zorder=3)
                series.setdefault((cr.series or cr.id, name), []).append((x, r.rate))
                seen_fw.add(name)
                seen_group.add(cr.group)
        for (key, name), pts in series.items():
            if len(pts) > 1:
                pts.sort()
                group = key.split(".", 1)[0]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], styles.get(name, "-"),
                        color=colors.get(group, "k"), linewidth=1, alpha=0.7)
        ceil = report.ceilings.get("copy_GBps" if unit == "GB/s" else "matmul_TFLOPs")
        if ceil:
            ax.axhline(ceil, color="grey", linestyle="--", linewidth=1)
            ax.text(0.01, ceil, " copy ceiling" if unit == "GB/s" else " fp32 matmul ceiling",
                    transform=ax.get_yaxis_transform(), va="bottom", color="grey", fontsize=8)
        if ax.has_data():
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.set_xlabel("bytes moved per call" if unit == "GB/s" else "flops per call")
        ax.set_ylabel(unit)
        ax.set_title(("bandwidth" if unit == "GB/s" else "arithmetic") + f" ({unit}) against size")
        ax.grid(True, which="both", alpha=0.3)
        handles = [plt.Line2D([], [], marker=markers[n], linestyle=styles[n], color="k",
                              markerfacecolor="k" if n == "gputensor" else "none", label=n)
                   for n in FRAMEWORKS if n in seen_fw]
        handles += [plt.Line2D([], [], marker="o", linestyle="", color=colors[g], label=g)
                    for g in groups if g in seen_group]
        if handles:
            ax.legend(handles=handles, fontsize=8, loc="best")
    ax = fig.add_subplot(grid[1, :])
    labels, values, cols = [], [], []
    for cr in report.results:
        if cr.ratio_torch is not None:
            labels.append(cr.id)
            values.append(cr.ratio_torch)
            cols.append(colors.get(cr.group, "k"))
    if values:
        ax.bar(range(len(values)), values, color=cols)
        ax.set_xticks(range(len(values)), labels, rotation=75, ha="right", fontsize=7)
        ax.axhline(1.0, color="grey", linewidth=1)
        ax.set_ylabel("gputensor rate / torch rate")
        ax.set_title("gputensor as a fraction of torch (same work, same run)")
        ax.grid(True, axis="y", alpha=0.3)
    else:
        ax.text(0.5, 0.5, "no torch numbers in this run", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
    meta = report.meta
    fig.suptitle(f"gputensor on {meta.get('adapter', '?')}"
                 + (f"; torch/cupy on {meta['cuda_device']}" if meta.get("cuda_device") else "")
                 + (" (quick sizes)" if meta.get("quick") else ""))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"plot written to {path}", file=out)
    return True


# ---------------------------------------------------------------------------------------------
# entry points
# ---------------------------------------------------------------------------------------------
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
