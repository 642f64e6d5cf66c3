"""Data-dependent operations (issue 4): sort, argsort, cumulative_sum and unique_values.

These run through the gputensor *namespace* (``gt.sort``, ``gt.argsort``, ``gt.cumulative_sum``,
``gt.unique_values``), against ``torch.sort``/``torch.argsort(stable=True)``/``torch.cumsum``/
``torch.unique(sorted=True)`` and cupy's ``sort``/``argsort``/``cumsum``/``unique`` on the same
host data.

* ``sort.sort.{f32,i32}`` / ``sort.argsort.{f32,i32}``: 16M keys (float32 uniform in [-1, 1),
  int32 uniform over the whole range). GB/s counts the keys read once plus the output written
  once: a fraction of the copy ceiling above 1/k means the sort costs less than k passes.
  argsort is stable in every framework and checked element for element against NumPy's stable
  argsort.
* ``sort.cumsum.f32``: inclusive cumulative sum of 64M float32 (memory-bound: one read, one
  write). Checked against a float64 reference with a tolerance proportional to the running sum
  of magnitudes.
* ``sort.unique.i32``: sorted unique values of 16M int32 drawn from [0, 4M) (about 3.9M distinct).
  The output size depends on the data, so every framework reads a size back inside the call:
  timed with the wall clock (host_timed).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._harness import MiB, Case, CheckError, Env, Prepared, assert_close, assert_equal, uniform

_SHORT = {"float32": "f32", "int32": "i32"}


def _keys(rng: np.random.Generator, n: int, dtype: str) -> np.ndarray:
    if dtype == "float32":
        return uniform(rng, n, np.float32)
    info = np.iinfo(np.int32)
    return rng.integers(info.min, info.max, n, dtype=np.int32, endpoint=True)


class SortCase(Case):
    """``sort`` or stable ``argsort`` of ``n`` keys of ``dtype`` (1-D, ascending)."""

    bound = "memory"
    unit = "GB/s"

    def __init__(self, op: str, n: int, dtype: str) -> None:
        assert op in ("sort", "argsort")
        self.op, self.n, self.dtype = op, int(n), dtype
        out_itemsize = 4 if op == "sort" else 8  # argsort: int64 indices (int32 in no framework here)
        self.id = f"sort.{op}.{_SHORT[dtype]}"
        self.label = f"{op} {self.n / MiB:g}M {_SHORT[dtype]}" + (" (stable)" if op == "argsort" else "")
        self.bytes = float(self.n * (4 + out_itemsize))
        self.working_set = int(self.bytes)

    def host(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"x": _keys(rng, self.n, self.dtype)}

    def check(self, host: dict[str, np.ndarray], got: np.ndarray) -> None:
        x = host["x"]
        if self.op == "sort":
            assert_equal(np.asarray(got).astype(x.dtype), np.sort(x), self.id)
        else:
            assert_equal(np.asarray(got).astype(np.int64), np.argsort(x, kind="stable"), self.id)

    def gputensor(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        import gputensor as gt

        x = gt.asarray(host["x"])
        last: list[Any] = [None]
        if self.op == "sort":
            def run(i: int) -> None:
                last[0] = gt.sort(x)
        else:
            def run(i: int) -> None:
                last[0] = gt.argsort(x, stable=True)
        return Prepared(run, lambda: gt.asnumpy(last[0]))

    def torch(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        torch = env.torch
        x = env.to_torch(host["x"])
        last: list[Any] = [None]
        if self.op == "sort":
            def run(i: int) -> None:
                last[0] = torch.sort(x).values
        else:
            def run(i: int) -> None:
                last[0] = torch.argsort(x, stable=True)
        return Prepared(run, lambda: last[0].cpu().numpy())

    def cupy(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        cp = env.cupy
        x = env.to_cupy(host["x"])
        last: list[Any] = [None]
        if self.op == "sort":
            def run(i: int) -> None:
                last[0] = cp.sort(x)
        else:
            def run(i: int) -> None:
                last[0] = cp.argsort(x)  # cupy's argsort is a stable radix sort
        return Prepared(run, lambda: cp.asnumpy(last[0]))


class CumsumCase(Case):
    """Inclusive ``cumulative_sum`` of ``n`` float32."""

    bound = "memory"
    unit = "GB/s"

    def __init__(self, n: int) -> None:
        self.n = int(n)
        self.id = "sort.cumsum.f32"
        self.label = f"cumulative_sum {self.n / MiB:g}M f32"
        self.bytes = float(8 * self.n)
        self.working_set = int(self.bytes)

    def host(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"x": uniform(rng, self.n, np.float32)}

    def check(self, host: dict[str, np.ndarray], got: np.ndarray) -> None:
        x64 = host["x"].astype(np.float64)
        ref = np.cumsum(x64)
        tol = 1e-5 * np.cumsum(np.abs(x64)) + 1e-5
        assert_close(np.asarray(got), ref, tol, self.id)

    def gputensor(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        import gputensor as gt

        x = gt.asarray(host["x"])
        last: list[Any] = [None]

        def run(i: int) -> None:
            last[0] = gt.cumulative_sum(x)

        return Prepared(run, lambda: gt.asnumpy(last[0]))

    def torch(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        torch = env.torch
        x = env.to_torch(host["x"])
        y = torch.empty_like(x)

        def run(i: int) -> None:
            torch.cumsum(x, 0, out=y)

        return Prepared(run, lambda: y.cpu().numpy())

    def cupy(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        cp = env.cupy
        x = env.to_cupy(host["x"])
        y = cp.empty_like(x)

        def run(i: int) -> None:
            cp.cumsum(x, out=y)

        return Prepared(run, lambda: cp.asnumpy(y))


class UniqueCase(Case):
    """Sorted unique values of ``n`` int32 drawn from ``[0, n // 4)``."""

    bound = "host"
    unit = "GB/s"

    def __init__(self, n: int) -> None:
        self.n = int(n)
        self.id = "sort.unique.i32"
        self.label = f"unique_values {self.n / MiB:g}M i32 from [0, {self.n // 4})"
        self.bytes = float(4 * self.n)
        self.working_set = int(self.bytes)

    def host(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"x": rng.integers(0, self.n // 4, self.n, dtype=np.int32)}

    def check(self, host: dict[str, np.ndarray], got: np.ndarray) -> None:
        got = np.asarray(got)
        ref = np.unique(host["x"])
        if got.shape != ref.shape:
            raise CheckError(f"{self.id}: {got.size} unique values, want {ref.size}")
        assert_equal(np.sort(got.astype(np.int64)), ref.astype(np.int64), self.id)

    def gputensor(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        import gputensor as gt

        x = gt.asarray(host["x"])
        last: list[Any] = [None]

        def run(i: int) -> None:
            last[0] = gt.unique_values(x)

        return Prepared(run, lambda: gt.asnumpy(last[0]), host_timed=True)

    def torch(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        torch = env.torch
        x = env.to_torch(host["x"])
        last: list[Any] = [None]

        def run(i: int) -> None:
            last[0] = torch.unique(x, sorted=True)

        return Prepared(run, lambda: last[0].cpu().numpy(), host_timed=True)

    def cupy(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        cp = env.cupy
        x = env.to_cupy(host["x"])
        last: list[Any] = [None]

        def run(i: int) -> None:
            last[0] = cp.unique(x)

        return Prepared(run, lambda: cp.asnumpy(last[0]), host_timed=True)


def cases(quick: bool) -> list[Case]:
    """sort/argsort of 16M f32 and i32, cumulative_sum of 64M f32, unique of 16M i32
    (quick: 256K keys, 1M for the scan)."""
    n_sort, n_scan = (256 * 1024, MiB) if quick else (16 * MiB, 64 * MiB)
    out: list[Case] = []
    for op in ("sort", "argsort"):
        for dtype in ("float32", "int32"):
            out.append(SortCase(op, n_sort, dtype))
    out.append(CumsumCase(n_scan))
    out.append(UniqueCase(n_sort))
    return out
