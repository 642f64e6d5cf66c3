"""The numbers a run produces: per framework (``FwResult``), per case (``CaseResult``), the whole
run (``Report``), and the ``Options`` that drive it.
"""

from __future__ import annotations

import dataclasses
from typing import Any


FRAMEWORKS = ("gputensor", "torch", "cupy")


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
