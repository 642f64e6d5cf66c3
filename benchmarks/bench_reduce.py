"""Reductions SUM and MAX over float32: the whole array, the last axis and the first axis of a
2-D array. GB/s counts the input read plus the output written.

torch runs ``torch.sum/amax(x, dim, out=o)``, cupy ``cupy.sum/amax(x, axis, out=o)``.
"""

from __future__ import annotations

import math

import numpy as np

from ._harness import MiB, Case, Env, Prepared, assert_close, fmt_bytes, uniform

_KINDS = {"sum", "max"}


class ReduceCase(Case):
    """``op`` over ``axis`` of a contiguous float32 array of ``shape``; ``where`` names the layout."""

    bound = "memory"
    unit = "GB/s"

    def __init__(self, op: str, shape: tuple[int, ...], axis: int, where: str) -> None:
        assert op in _KINDS
        self.op, self.shape, self.axis = op, tuple(int(s) for s in shape), int(axis)
        self.out_shape = self.shape[: self.axis] + self.shape[self.axis + 1:]
        n_in = math.prod(self.shape)
        n_out = math.prod(self.out_shape)
        self.id = f"reduce.{op}.{where}"
        self.label = f"{op} f32 {self.shape} axis {axis} ({fmt_bytes(4 * n_in)})"
        self.bytes = 4.0 * (n_in + n_out)
        self.working_set = int(self.bytes)

    def host(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"x": uniform(rng, self.shape, np.float32)}

    def check(self, host: dict[str, np.ndarray], got: np.ndarray) -> None:
        x = host["x"]
        got = np.asarray(got).reshape(self.out_shape)
        if self.op == "max":
            assert_close(got, x.max(axis=self.axis), 0.0, self.id)
            return
        x64 = x.astype(np.float64)
        ref = x64.sum(axis=self.axis)
        tol = 1e-5 * np.abs(x64).sum(axis=self.axis) + 1e-6
        assert_close(got, ref, tol, self.id)

    def gputensor(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        from gputensor._backend import ReduceOp

        be, arena = env.backend, env.arena()
        sets = env.sets(self.working_set)
        op = ReduceOp.SUM if self.op == "sum" else ReduceOp.MAX
        shape, axis, n_out = self.shape, self.axis, max(1, math.prod(self.out_shape))
        try:
            x = [arena.upload(host["x"]) for _ in range(sets)]
            y = [arena.empty(4 * n_out) for _ in range(sets)]
        except Exception:
            arena.close()
            raise

        def run(i: int) -> None:
            s = i % sets
            be.reduce(op, x[s], y[s], shape, axis)

        return Prepared(run, lambda: arena.download(y[0], self.out_shape, np.float32), arena.close)

    def torch(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        torch = env.torch
        sets = env.sets(self.working_set)
        x = [env.to_torch(host["x"]) for _ in range(sets)]
        y = [torch.empty(self.out_shape, dtype=torch.float32, device="cuda") for _ in range(sets)]
        fn = torch.sum if self.op == "sum" else torch.amax
        axis = self.axis

        def run(i: int) -> None:
            s = i % sets
            fn(x[s], axis, out=y[s])

        return Prepared(run, lambda: y[0].cpu().numpy())

    def cupy(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        cp = env.cupy
        sets = env.sets(self.working_set)
        x = [env.to_cupy(host["x"]) for _ in range(sets)]
        y = [cp.empty(self.out_shape, dtype=np.float32) for _ in range(sets)]
        fn = cp.sum if self.op == "sum" else cp.amax
        axis = self.axis

        def run(i: int) -> None:
            s = i % sets
            fn(x[s], axis=axis, out=y[s])

        return Prepared(run, lambda: cp.asnumpy(y[0]))


def cases(quick: bool) -> list[Case]:
    """sum and max over 256 MiB float32: full (N,), last and first axis of (4096, 16384)
    (quick: 2 MiB, (128, 4096))."""
    full, rows, cols = ((512 * 1024,), 128, 4096) if quick else ((64 * MiB,), 4096, 16384)
    out: list[Case] = []
    for op in ("sum", "max"):
        out.append(ReduceCase(op, full, 0, "full"))
        out.append(ReduceCase(op, (rows, cols), 1, "last"))
        out.append(ReduceCase(op, (rows, cols), 0, "first"))
    return out
