"""The execution engine through the public API: per-op host overhead, scalar readback, memory-pool churn.

These cases go through the gputensor *namespace* (``gt.exp``, ``float(x)``, ``gt.empty``), not the
backend contract, because what they measure is the whole per-operation path: frontend, launch
planning, bind groups, recording, submission and readback. Every call includes its own readback
(or, for the pool, no device work at all), so all frameworks are timed with the wall clock.

* ``engine.ops1000.unfused`` / ``engine.ops1000.fused``: one call = 1,000 dependent small
  elementwise ops on 1,024 float32 elements (500 x ``y = y * 0.75 + x``) and one readback of ``y``.
  **Microseconds per op = the call time / 1,000.** gputensor runs with elementwise fusion off
  and on (``gt.fusion(False/True)``, the runtime form of ``GPUTENSOR_FUSION=0/1``);
  torch eager and cupy run the same 1,000 ops. Targets: unfused at most 2x torch's time
  per op, fused faster than torch eager.
* ``engine.readback.scalar``: ``float(x)`` of a ready 0-d float32 array (torch ``x.item()``,
  cupy ``float(x)``): one round trip (submit, wait, map, copy). Target: at most 150 us.
* ``engine.readback.op_scalar``: ``float(gt.sum(a))`` over 1,024 float32: a small op and its
  round trip, the usual shape of a scalar read in a loop.
* ``engine.chain.{fma,exp,rsqrt}``: fused elementwise chains on 64M float32 (quick: 1M):
  ``a*b+c``, ``exp(a)*b+1`` and ``x/sqrt(y*y+1)``. gputensor evaluates the chain into an
  existing array (``out[...] = a * b + c``: one generated kernel, no intermediate written); torch
  and cupy run the same expression eagerly (one kernel and one temporary per op, from their
  caching allocators). GB/s counts the inputs read once and the output written once, so the
  fraction of the copy ceiling says how close the fused kernel is to one pass over the bytes.
  Targets: at least 1.5x torch on the longest chain, at least 0.9 of the copy ceiling.
* ``engine.mempool.cycles``: one call = 10,000 (quick: 1,000) create/free cycles of ``empty`` of
  64 mixed sizes (4 B to 256 KiB). **Time per cycle = call time / cycles.** The check runs one
  more call and fails if the framework's device memory (gputensor: the pool's ``total_bytes()``;
  torch: ``memory_reserved()``; cupy: its pool's ``total_bytes()``) grew by more than 1 MiB.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from ._harness import Case, CheckError, Env, NotAvailable, Prepared, assert_close, uniform

N_ELEMENTS = 1024
N_OPS = 1000


# ---------------------------------------------------------------------------------------------
# fusion switch
# ---------------------------------------------------------------------------------------------
def fusion_available() -> bool:
    """Whether gputensor has the elementwise fusion engine (``gt.fusion``)."""
    import gputensor as gt

    return callable(getattr(gt, "fusion", None)) and callable(getattr(gt, "fusion_enabled", None))


@contextlib.contextmanager
def fusion(enabled: bool) -> Iterator[None]:
    """Run the block with gputensor's elementwise fusion on or off (``gt.fusion(enabled)``, the
    runtime form of ``GPUTENSOR_FUSION``); the previous setting comes back after it. Raises
    NotAvailable for ``enabled=True`` without a fusion engine (without one, fusion is off)."""
    import gputensor as gt

    if not fusion_available():
        if enabled:
            raise NotAvailable("no elementwise fusion engine (gt.fusion) in this build")
        yield
        return
    with gt.fusion(enabled):
        if bool(gt.fusion_enabled()) != enabled:
            raise NotAvailable(f"could not switch fusion {'on' if enabled else 'off'}")
        yield


def _chain_reference(x: np.ndarray, y0: np.ndarray) -> np.ndarray:
    y = y0.astype(np.float32)
    scale = np.float32(0.75)
    for _ in range(N_OPS // 2):
        y = y * scale + x
    return y


# ---------------------------------------------------------------------------------------------
# 1,000 dependent small ops
# ---------------------------------------------------------------------------------------------
class OpsChainCase(Case):
    """1,000 dependent elementwise ops (``y = y * 0.75 + x``) on 1,024 float32, then a readback."""

    bound = "host"
    path = "api"
    unit = "GB/s"

    def __init__(self, fused: bool) -> None:
        self.fused = fused
        self.id = f"engine.ops1000.{'fused' if fused else 'unfused'}"
        self.label = (f"{N_OPS} dependent ops on {N_ELEMENTS} f32 + readback, fusion "
                      f"{'on' if fused else 'off'} (us/op = time / {N_OPS})")
        self.bytes = float(N_OPS // 2 * (2 * 2 + 3) * 4 * N_ELEMENTS)  # mul: r+w, add: 2r+w
        self.working_set = 3 * 4 * N_ELEMENTS

    def host(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"x": uniform(rng, N_ELEMENTS, np.float32, 0.0, 1.0),
                "y0": uniform(rng, N_ELEMENTS, np.float32, -1.0, 1.0)}

    def check(self, host: dict[str, np.ndarray], got: np.ndarray) -> None:
        ref = _chain_reference(host["x"], host["y0"])
        assert_close(got, ref, 1e-5 * np.abs(ref) + 1e-6, self.id)  # fused kernels may use FMA

    def gputensor(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        import gputensor as gt

        with fusion(self.fused):
            pass  # raises NotAvailable before anything is allocated
        x, y0 = gt.asarray(host["x"]), gt.asarray(host["y0"])
        last: list[np.ndarray] = []

        def run(i: int) -> None:
            with fusion(self.fused):
                y = y0
                for _ in range(N_OPS // 2):
                    y = y * 0.75 + x
                last[:] = [gt.asnumpy(y)]

        return Prepared(run, lambda: last[0], host_timed=True)

    def torch(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        if self.fused:
            raise NotAvailable("torch eager has no fusion (see engine.ops1000.unfused)")
        x, y0 = env.to_torch(host["x"]), env.to_torch(host["y0"])
        last: list[np.ndarray] = []

        def run(i: int) -> None:
            y = y0
            for _ in range(N_OPS // 2):
                y = y * 0.75 + x
            last[:] = [y.cpu().numpy()]

        return Prepared(run, lambda: last[0], host_timed=True)

    def cupy(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        if self.fused:
            raise NotAvailable("cupy runs one kernel per op (see engine.ops1000.unfused)")
        cp = env.cupy
        x, y0 = env.to_cupy(host["x"]), env.to_cupy(host["y0"])
        last: list[np.ndarray] = []

        def run(i: int) -> None:
            y = y0
            for _ in range(N_OPS // 2):
                y = y * 0.75 + x
            last[:] = [cp.asnumpy(y)]

        return Prepared(run, lambda: last[0], host_timed=True)


# ---------------------------------------------------------------------------------------------
# scalar readback
# ---------------------------------------------------------------------------------------------
class ScalarReadbackCase(Case):
    """``float(x)`` of a ready 0-d array (``op=False``) or ``float(sum(a))`` over 1,024 float32."""

    bound = "host"
    path = "api"
    unit = "GB/s"

    def __init__(self, op: bool) -> None:
        self.op = op
        self.id = "engine.readback.op_scalar" if op else "engine.readback.scalar"
        self.label = (f"float(sum(a)), a: {N_ELEMENTS} f32 (op + round trip)" if op
                      else "float(x) of a ready 0-d f32 (round trip)")
        self.bytes = float(4 * N_ELEMENTS + 4 if op else 4)
        self.working_set = 4 * N_ELEMENTS

    def host(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"a": uniform(rng, N_ELEMENTS, np.float32, 0.0, 1.0)}

    def check(self, host: dict[str, np.ndarray], got: np.ndarray) -> None:
        ref = host["a"].astype(np.float64).sum() if self.op else host["a"][0]
        assert_close(np.asarray(got, np.float64).reshape(()), ref, 1e-5 * abs(float(ref)), self.id)

    def _run(self, value_of: Any, a: Any, x: Any, summed: Any) -> tuple[Any, Any]:
        last: list[float] = [0.0]
        if self.op:
            def run(i: int) -> None:
                last[0] = value_of(summed(a))
        else:
            def run(i: int) -> None:
                last[0] = value_of(x)
        return run, lambda: np.float64(last[0])

    def gputensor(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        import gputensor as gt

        a = gt.asarray(host["a"])
        x = gt.asarray(host["a"][0])
        run, result = self._run(float, a, x, gt.sum)
        return Prepared(run, result, host_timed=True)

    def torch(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        torch = env.torch
        a = env.to_torch(host["a"])
        x = env.to_torch(np.asarray(host["a"][0]))
        run, result = self._run(lambda t: t.item(), a, x, torch.sum)
        return Prepared(run, result, host_timed=True)

    def cupy(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        cp = env.cupy
        a = env.to_cupy(host["a"])
        x = env.to_cupy(np.asarray(host["a"][0]))
        run, result = self._run(float, a, x, cp.sum)
        return Prepared(run, result, host_timed=True)


# ---------------------------------------------------------------------------------------------
# memory pool churn
# ---------------------------------------------------------------------------------------------
class MemoryPoolCase(Case):
    """``cycles`` create/free cycles of ``empty`` of 64 mixed float32 sizes (1 to 65,536 elements)."""

    bound = "host"
    path = "api"
    unit = "GB/s"

    #: device memory growth allowed over one extra call in steady state
    GROWTH_LIMIT = 1 << 20

    def __init__(self, cycles: int) -> None:
        self.cycles = int(cycles)
        rng = np.random.default_rng(1234)
        self.sizes = [int(s) for s in np.exp(rng.uniform(0, np.log(65536), 64)).astype(np.int64) + 1]
        self.id = "engine.mempool.cycles"
        self.label = f"{self.cycles} create/free cycles of 64 mixed sizes (us/cycle = time / {self.cycles})"
        self.bytes = float(sum(4 * self.sizes[i % 64] for i in range(self.cycles)))
        self.working_set = 4 * max(self.sizes)

    def check(self, host: dict[str, np.ndarray], got: np.ndarray) -> None:
        growth = int(np.asarray(got).reshape(()))
        if growth > self.GROWTH_LIMIT:
            raise CheckError(f"{self.id}: device memory grew by {growth} bytes over {self.cycles} more cycles")

    def _prepare(self, make: Any, held_bytes: Any) -> Prepared:
        sizes, cycles = self.sizes, self.cycles

        def run(i: int) -> None:
            for k in range(cycles):
                x = make(sizes[k % 64])
                del x

        def growth() -> np.ndarray:
            before = held_bytes()
            run(0)
            return np.asarray(held_bytes() - before, np.int64)

        return Prepared(run, growth, host_timed=True)

    def gputensor(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        import gputensor as gt

        pool = gt.get_default_memory_pool()
        return self._prepare(lambda n: gt.empty((n,), dtype=gt.float32), pool.total_bytes)

    def torch(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        torch = env.torch
        return self._prepare(lambda n: torch.empty(n, dtype=torch.float32, device="cuda"),
                             torch.cuda.memory_reserved)

    def cupy(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        cp = env.cupy
        pool = cp.get_default_memory_pool()
        return self._prepare(lambda n: cp.empty(n, dtype=cp.float32), pool.total_bytes)


# ---------------------------------------------------------------------------------------------
# fused elementwise chains on large arrays
# ---------------------------------------------------------------------------------------------
#: name -> (inputs, expression over a namespace ``m`` and the inputs, NumPy float64 reference)
CHAINS: dict[str, tuple[tuple[str, ...], Any, Any]] = {
    "fma": (("a", "b", "c"), lambda m, a, b, c: a * b + c, lambda a, b, c: a * b + c),
    "exp": (("a", "b"), lambda m, a, b: m.exp(a) * b + 1, lambda a, b: np.exp(a) * b + 1),
    "rsqrt": (("x", "y"), lambda m, x, y: x / m.sqrt(y * y + 1), lambda x, y: x / np.sqrt(y * y + 1)),
}


class FusedChainCase(Case):
    """One chain of :data:`CHAINS` over ``n`` float32 elements, written into an existing array."""

    bound = "memory"
    path = "api"
    unit = "GB/s"

    def __init__(self, name: str, n: int) -> None:
        self.name, self.n = name, int(n)
        self.inputs, self.expr, self.ref = CHAINS[name]
        text = {"fma": "a*b+c", "exp": "exp(a)*b+1", "rsqrt": "x/sqrt(y*y+1)"}[name]
        self.id = f"engine.chain.{name}"
        self.label = f"{text} on {self.n / (1 << 20):g}M f32 (gt: fused into out[...])"
        self.bytes = float(4 * self.n * (len(self.inputs) + 1))
        self.working_set = int(self.bytes)

    def host(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {k: uniform(rng, self.n, np.float32) for k in self.inputs}

    def check(self, host: dict[str, np.ndarray], got: np.ndarray) -> None:
        ref = self.ref(*(host[k].astype(np.float64) for k in self.inputs))
        assert_close(got, ref, 4e-7 * (np.abs(ref) + 4.0), self.id)

    def gputensor(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        import gputensor as gt

        with fusion(True):
            pass  # raises NotAvailable without a fusion engine
        args = [gt.asarray(host[k]) for k in self.inputs]
        out = gt.empty((self.n,), dtype=gt.float32)
        expr = self.expr

        def run(i: int) -> None:
            with fusion(True):
                out[...] = expr(gt, *args)

        return Prepared(run, lambda: gt.asnumpy(out))

    def torch(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        torch = env.torch
        args = [env.to_torch(host[k]) for k in self.inputs]
        last: list[Any] = [None]
        expr = self.expr

        def run(i: int) -> None:
            last[0] = expr(torch, *args)

        return Prepared(run, lambda: last[0].cpu().numpy())

    def cupy(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        cp = env.cupy
        args = [env.to_cupy(host[k]) for k in self.inputs]
        last: list[Any] = [None]
        expr = self.expr

        def run(i: int) -> None:
            last[0] = expr(cp, *args)

        return Prepared(run, lambda: cp.asnumpy(last[0]))


def cases(quick: bool) -> list[Case]:
    """The engine cases (quick: 1,000 pool cycles instead of 10,000, chains on 1M elements)."""
    n_chain = (1 << 20) if quick else (64 << 20)
    return [
        OpsChainCase(fused=False),
        OpsChainCase(fused=True),
        ScalarReadbackCase(op=False),
        ScalarReadbackCase(op=True),
        MemoryPoolCase(1000 if quick else 10_000),
    ] + [FusedChainCase(name, n_chain) for name in CHAINS]
