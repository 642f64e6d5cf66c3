"""Elementwise: binary ADD (float32 and float16) and unary RELU (float32) over contiguous operands.

GB/s counts every operand read plus the output written (binary: 3 x operand bytes). torch runs
``torch.add(a, b, out=c)`` / ``torch.clamp(x, min=0, out=y)``, cupy ``cupy.add(a, b, out=c)`` /
``cupy.maximum(x, 0, out=y)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._harness import DTYPE_SHORT, MiB, Case, Env, Prepared, assert_close, fmt_bytes, uniform


@dataclass(frozen=True)
class ElementwiseOp:
    """One benchmarked operation: its inputs, the backend call, torch's and cupy's forms (writing
    into ``out``) and the NumPy reference."""

    kind: str                # 'binary' or 'unary' (the case id's group)
    name: str
    inputs: tuple[str, ...]
    backend: Callable[[Any, list[int], int, int, str], None]   # (backend, inputs, out, n, dtype)
    torch: Callable[[Any, list[Any], Any], Any]                # (torch, inputs, out)
    cupy: Callable[[Any, list[Any], Any], Any]                 # (cupy, inputs, out)
    reference: Callable[..., np.ndarray]


def _binary_add(be: Any, x: list[int], out: int, n: int, dtype: str) -> None:
    from gputensor._backend import BinaryOp

    be.binary(BinaryOp.ADD, x[0], x[1], out, n, dtype=dtype)


def _unary_relu(be: Any, x: list[int], out: int, n: int, dtype: str) -> None:
    from gputensor._backend import UnaryOp

    be.unary(UnaryOp.RELU, x[0], out, n, dtype=dtype)


ADD = ElementwiseOp("binary", "add", ("a", "b"), _binary_add,
                    lambda torch, x, out: torch.add(x[0], x[1], out=out),
                    lambda cp, x, out: cp.add(x[0], x[1], out=out),
                    lambda a, b: a + b)  # NumPy rounds each sum once to the dtype, as a kernel should
RELU = ElementwiseOp("unary", "relu", ("x",), _unary_relu,
                     lambda torch, x, out: torch.clamp(x[0], min=0, out=out),
                     lambda cp, x, out: cp.maximum(x[0], 0, out=out),
                     lambda x: np.maximum(x, 0))


class ElementwiseCase(Case):
    """``op`` over ``nbytes``-byte operands of ``dtype`` (GB/s: every operand read, the output
    written)."""

    bound = "memory"
    unit = "GB/s"

    def __init__(self, op: ElementwiseOp, nbytes: int, dtype: str = "float32") -> None:
        self.op, self.dtype = op, dtype
        self.np_dtype = np.dtype(dtype)
        self.count = int(nbytes) // self.np_dtype.itemsize
        self.nb = self.count * self.np_dtype.itemsize
        short = DTYPE_SHORT[dtype]
        plural = "s" if len(op.inputs) > 1 else ""
        self.id = f"{op.kind}.{op.name}.{short}"
        self.label = f"{op.name} {short}, operand{plural} of {fmt_bytes(self.nb)}"
        self.bytes = float((len(op.inputs) + 1) * self.nb)
        self.working_set = int(self.bytes)

    def host(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {k: uniform(rng, self.count, self.np_dtype) for k in self.op.inputs}

    def check(self, host: dict[str, np.ndarray], got: np.ndarray) -> None:
        ref = self.op.reference(*(host[k] for k in self.op.inputs))
        tol = 0.0 if self.dtype == "float32" else np.abs(ref.astype(np.float64)) * 2.0 ** -11
        assert_close(got, ref, tol, self.id)

    def gputensor(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        be, arena = env.backend, env.arena()
        sets = env.sets(self.working_set)
        n, dtype, call = self.count, self.dtype, self.op.backend
        try:
            xs = [[arena.upload(host[k]) for k in self.op.inputs] for _ in range(sets)]
            out = [arena.empty(self.nb) for _ in range(sets)]
        except Exception:
            arena.close()
            raise

        def run(i: int) -> None:
            s = i % sets
            call(be, xs[s], out[s], n, dtype)

        return Prepared(run, lambda: arena.download(out[0], n, self.np_dtype), arena.close)

    def _framework(self, lib: Any, to_device: Callable[[np.ndarray], Any], fn: Callable[..., Any],
                   env: Env, host: dict[str, np.ndarray], to_host: Callable[[Any], np.ndarray]) -> Prepared:
        sets = env.sets(self.working_set)
        xs = [[to_device(host[k]) for k in self.op.inputs] for _ in range(sets)]
        out = [lib.empty_like(x[0]) for x in xs]

        def run(i: int) -> None:
            s = i % sets
            fn(lib, xs[s], out[s])

        return Prepared(run, lambda: to_host(out[0]))

    def torch(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        return self._framework(env.torch, env.to_torch, self.op.torch, env, host, lambda t: t.cpu().numpy())

    def cupy(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        cp = env.cupy
        return self._framework(cp, env.to_cupy, self.op.cupy, env, host, cp.asnumpy)


class BinaryCase(ElementwiseCase):
    """``c = a + b`` over ``nbytes``-byte operands of ``dtype``."""

    def __init__(self, nbytes: int, dtype: str = "float32") -> None:
        super().__init__(ADD, nbytes, dtype)


class UnaryCase(ElementwiseCase):
    """``y = relu(x)`` over an ``nbytes``-byte operand of ``dtype``."""

    def __init__(self, nbytes: int, dtype: str = "float32") -> None:
        super().__init__(RELU, nbytes, dtype)


def cases(quick: bool) -> list[Case]:
    """add f32 and f16 and relu f32 over 256 MiB operands (quick: 2 MiB)."""
    size = 2 * MiB if quick else 256 * MiB
    return [BinaryCase(size, "float32"), BinaryCase(size, "float16"), UnaryCase(size, "float32")]
