"""Ceilings measured in the same run: device-to-device copy bandwidth and fp32 matmul rate.

``ceiling.copy`` runs a copy of one buffer into another through every framework (torch
``y.copy_(x)``, cupy's device memcpy, gputensor ``copy_dtod``); the harness takes torch's rate as
the bandwidth ceiling (else cupy's, else gputensor's own). ``ceiling.matmul`` is torch's float32
``mm`` with TF32 off (else cupy's ``matmul``); gputensor's own gemm of that size is ``gemm.f32.*``.
"""

from __future__ import annotations

import numpy as np

from ._harness import GiB, MiB, Case, Env, NotAvailable, Prepared, assert_equal, fmt_bytes
from .bench_gemm import GemmCase


class CopyCase(Case):
    """``dst = src`` over ``nbytes`` (bytes counted: read + written)."""

    ceiling = "copy"
    bound = "memory"
    unit = "GB/s"

    def __init__(self, nbytes: int) -> None:
        self.nbytes = int(nbytes) // 4 * 4
        self.id = "ceiling.copy"
        self.label = f"device copy {fmt_bytes(self.nbytes)}"
        self.bytes = 2.0 * self.nbytes
        self.working_set = 2 * self.nbytes

    def host(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"x": np.arange(self.nbytes // 4, dtype=np.uint32)}

    def check(self, host: dict[str, np.ndarray], got: np.ndarray) -> None:
        assert_equal(got.view(np.uint32), host["x"], self.id)

    def gputensor(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        be, arena = env.backend, env.arena()
        sets = env.sets(self.working_set)
        try:
            src = [arena.upload(host["x"]) for _ in range(sets)]
            dst = [arena.empty(self.nbytes) for _ in range(sets)]
        except Exception:
            arena.close()
            raise
        n = self.nbytes

        def run(i: int) -> None:
            be.copy_dtod(dst[i % sets], src[i % sets], n)

        return Prepared(run, lambda: arena.download(dst[0], n // 4, np.uint32), arena.close)

    def torch(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        sets = env.sets(self.working_set)
        src = [env.to_torch(host["x"].view(np.int32)) for _ in range(sets)]
        dst = [s.clone().zero_() for s in src]

        def run(i: int) -> None:
            dst[i % sets].copy_(src[i % sets])

        return Prepared(run, lambda: dst[0].cpu().numpy().view(np.uint32))

    def cupy(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        cp = env.cupy
        sets = env.sets(self.working_set)
        src = [env.to_cupy(host["x"]) for _ in range(sets)]
        dst = [cp.zeros_like(s) for s in src]
        n = self.nbytes

        def run(i: int) -> None:
            dst[i % sets].data.copy_from_device_async(src[i % sets].data, n)

        return Prepared(run, lambda: cp.asnumpy(dst[0]))


class MatmulCeilingCase(GemmCase):
    """torch's (else cupy's) float32 matmul with TF32 off: the FMA ceiling of the run."""

    ceiling = "matmul"

    def __init__(self, n: int) -> None:
        super().__init__(n, n, n, "float32")
        self.id = "ceiling.matmul"
        self.label = f"fp32 matmul {n}^3, TF32 off"
        self.series = None

    def gputensor(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        raise NotAvailable(f"gputensor's gemm of this size is gemm.f32.{self.m}")


def cases(quick: bool) -> list[Case]:
    """The two ceiling cases (1 GiB copy and 8192^3 matmul; quick: 8 MiB and 256^3)."""
    return [CopyCase(8 * MiB if quick else GiB), MatmulCeilingCase(256 if quick else 8192)]
