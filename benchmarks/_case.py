"""The benchmark case model: ``Case``, the base class every ``bench_*`` and ``api`` case derives from.
"""

from __future__ import annotations


import numpy as np

from ._checks import CheckError, NotAvailable
from ._env import Env, Prepared


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
