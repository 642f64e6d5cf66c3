"""Elementwise: binary ADD (float32 and float16) and unary RELU (float32) over contiguous operands.

GB/s counts every operand read plus the output written (binary: 3 x operand bytes). torch runs
``torch.add(a, b, out=c)`` / ``torch.clamp(x, min=0, out=y)``, cupy ``cupy.add(a, b, out=c)`` /
``cupy.maximum(x, 0, out=y)``.
"""

from __future__ import annotations

import numpy as np

from ._harness import DTYPE_SHORT, MiB, Case, Env, Prepared, assert_close, fmt_bytes, uniform


class BinaryCase(Case):
    """``c = a + b`` over ``nbytes``-byte operands of ``dtype``."""

    bound = "memory"
    unit = "GB/s"

    def __init__(self, nbytes: int, dtype: str = "float32") -> None:
        self.dtype = dtype
        self.np_dtype = np.dtype(dtype)
        self.count = int(nbytes) // self.np_dtype.itemsize
        nb = self.count * self.np_dtype.itemsize
        self.id = f"binary.add.{DTYPE_SHORT[dtype]}"
        self.label = f"add {DTYPE_SHORT[dtype]}, operands of {fmt_bytes(nb)}"
        self.bytes = 3.0 * nb
        self.working_set = 3 * nb

    def host(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"a": uniform(rng, self.count, self.np_dtype), "b": uniform(rng, self.count, self.np_dtype)}

    def check(self, host: dict[str, np.ndarray], got: np.ndarray) -> None:
        ref = host["a"] + host["b"]  # NumPy rounds each sum once to the dtype, as a kernel should
        tol = 0.0 if self.dtype == "float32" else np.abs(ref.astype(np.float64)) * 2.0 ** -11
        assert_close(got, ref, tol, self.id)

    def gputensor(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        from gputensor._backend import BinaryOp

        be, arena = env.backend, env.arena()
        sets = env.sets(self.working_set)
        n, dtype, nb = self.count, self.dtype, self.count * self.np_dtype.itemsize
        try:
            a = [arena.upload(host["a"]) for _ in range(sets)]
            b = [arena.upload(host["b"]) for _ in range(sets)]
            c = [arena.empty(nb) for _ in range(sets)]
        except Exception:
            arena.close()
            raise

        def run(i: int) -> None:
            s = i % sets
            be.binary(BinaryOp.ADD, a[s], b[s], c[s], n, dtype=dtype)

        return Prepared(run, lambda: arena.download(c[0], n, self.np_dtype), arena.close)

    def torch(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        torch = env.torch
        sets = env.sets(self.working_set)
        a = [env.to_torch(host["a"]) for _ in range(sets)]
        b = [env.to_torch(host["b"]) for _ in range(sets)]
        c = [torch.empty_like(a[0]) for _ in range(sets)]

        def run(i: int) -> None:
            s = i % sets
            torch.add(a[s], b[s], out=c[s])

        return Prepared(run, lambda: c[0].cpu().numpy())

    def cupy(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        cp = env.cupy
        sets = env.sets(self.working_set)
        a = [env.to_cupy(host["a"]) for _ in range(sets)]
        b = [env.to_cupy(host["b"]) for _ in range(sets)]
        c = [cp.empty_like(a[0]) for _ in range(sets)]

        def run(i: int) -> None:
            s = i % sets
            cp.add(a[s], b[s], out=c[s])

        return Prepared(run, lambda: cp.asnumpy(c[0]))


class UnaryCase(Case):
    """``y = relu(x)`` over an ``nbytes``-byte operand of ``dtype``."""

    bound = "memory"
    unit = "GB/s"

    def __init__(self, nbytes: int, dtype: str = "float32") -> None:
        self.dtype = dtype
        self.np_dtype = np.dtype(dtype)
        self.count = int(nbytes) // self.np_dtype.itemsize
        nb = self.count * self.np_dtype.itemsize
        self.id = f"unary.relu.{DTYPE_SHORT[dtype]}"
        self.label = f"relu {DTYPE_SHORT[dtype]}, operand of {fmt_bytes(nb)}"
        self.bytes = 2.0 * nb
        self.working_set = 2 * nb

    def host(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"x": uniform(rng, self.count, self.np_dtype)}

    def check(self, host: dict[str, np.ndarray], got: np.ndarray) -> None:
        assert_close(got, np.maximum(host["x"], 0), 0.0, self.id)

    def gputensor(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        from gputensor._backend import UnaryOp

        be, arena = env.backend, env.arena()
        sets = env.sets(self.working_set)
        n, dtype, nb = self.count, self.dtype, self.count * self.np_dtype.itemsize
        try:
            x = [arena.upload(host["x"]) for _ in range(sets)]
            y = [arena.empty(nb) for _ in range(sets)]
        except Exception:
            arena.close()
            raise

        def run(i: int) -> None:
            s = i % sets
            be.unary(UnaryOp.RELU, x[s], y[s], n, dtype=dtype)

        return Prepared(run, lambda: arena.download(y[0], n, self.np_dtype), arena.close)

    def torch(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        torch = env.torch
        sets = env.sets(self.working_set)
        x = [env.to_torch(host["x"]) for _ in range(sets)]
        y = [torch.empty_like(x[0]) for _ in range(sets)]

        def run(i: int) -> None:
            s = i % sets
            torch.clamp(x[s], min=0, out=y[s])

        return Prepared(run, lambda: y[0].cpu().numpy())

    def cupy(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        cp = env.cupy
        sets = env.sets(self.working_set)
        x = [env.to_cupy(host["x"]) for _ in range(sets)]
        y = [cp.empty_like(x[0]) for _ in range(sets)]

        def run(i: int) -> None:
            s = i % sets
            cp.maximum(x[s], 0, out=y[s])

        return Prepared(run, lambda: cp.asnumpy(y[0]))


def cases(quick: bool) -> list[Case]:
    """add f32 and f16 and relu f32 over 256 MiB operands (quick: 2 MiB)."""
    size = 2 * MiB if quick else 256 * MiB
    return [BinaryCase(size, "float32"), BinaryCase(size, "float16"), UnaryCase(size, "float32")]
