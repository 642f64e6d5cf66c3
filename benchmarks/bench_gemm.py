"""gemm: C = A @ B for row-major A (m x k), B (k x n), C (m x n); TFLOP/s counted as 2mnk.

gputensor's contract is column-major BLAS, so the row-major product is issued as the column-major
``C^T = B^T A^T``: ``gemm(N, N, n, m, k, 1, B, n, A, k, 0, C, n)`` (the same bytes, no copies).
torch runs ``torch.mm(A, B, out=C)`` with TF32 off, cupy ``cupy.matmul(A, B, out=C)``.
The check compares up to 32 sampled rows of C with a float64 product.
"""

from __future__ import annotations

import numpy as np

from ._harness import DTYPE_SHORT, Case, Env, Prepared, assert_close, uniform

#: unit roundoff of the accumulation (float32) and of the storage types
_U32 = 2.0 ** -24
_U16 = 2.0 ** -11


def _gemm_tolerance(a_rows: np.ndarray, b: np.ndarray, k: int, dtype: str, ref: np.ndarray) -> np.ndarray:
    """Error bound for float32 accumulation (2k u |A||B|); float16 adds its storage rounding and
    a statistical allowance for half-precision accumulation."""
    abs_ab = np.abs(a_rows) @ np.abs(b)
    tol = 2.0 * k * _U32 * abs_ab + 1e-30
    if dtype == "float16":
        rms = np.sqrt((a_rows * a_rows) @ (b * b))
        tol = tol + 4.0 * np.sqrt(k) * _U16 * rms + 2.0 * _U16 * np.abs(ref)
    return tol


class GemmCase(Case):
    """One gemm shape and dtype, row-major view ``m x n x k``."""

    bound = "compute"
    unit = "TFLOP/s"

    def __init__(self, m: int, n: int, k: int, dtype: str = "float32") -> None:
        self.m, self.n, self.k, self.dtype = int(m), int(n), int(k), dtype
        self.np_dtype = np.dtype(dtype)
        short = DTYPE_SHORT[dtype]
        shape = str(m) if m == n == k else f"{m}x{n}x{k}"
        self.id = f"gemm.{short}.{shape}"
        self.label = f"gemm {short} m={m} n={n} k={k}"
        item = self.np_dtype.itemsize
        self.flops = 2.0 * m * n * k
        self.bytes = float((m * k + k * n + m * n) * item)
        self.working_set = int(self.bytes)
        if m == n == k:
            self.series = f"gemm.{short}.square"

    def host(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"a": uniform(rng, (self.m, self.k), self.np_dtype),
                "b": uniform(rng, (self.k, self.n), self.np_dtype)}

    def check(self, host: dict[str, np.ndarray], got: np.ndarray) -> None:
        a = host["a"].astype(np.float64)
        b = host["b"].astype(np.float64)
        rows = np.unique(np.linspace(0, self.m - 1, num=min(self.m, 32)).astype(np.int64))
        ref = a[rows] @ b
        tol = _gemm_tolerance(a[rows], b, self.k, self.dtype, ref)
        assert_close(np.asarray(got).reshape(self.m, self.n)[rows], ref, tol, self.id)

    def gputensor(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        from gputensor._backend import BackendTranspose

        be, arena = env.backend, env.arena()
        sets = env.sets(self.working_set)
        m, n, k, dtype = self.m, self.n, self.k, self.dtype
        try:
            a = [arena.upload(host["a"]) for _ in range(sets)]
            b = [arena.upload(host["b"]) for _ in range(sets)]
            c = [arena.empty(m * n * self.np_dtype.itemsize) for _ in range(sets)]
        except Exception:
            arena.close()
            raise
        nt = BackendTranspose.NO_TRANS

        def run(i: int) -> None:
            s = i % sets
            # row-major C = A B  <=>  column-major C^T (n x m) = B^T (n x k) A^T (k x m)
            be.gemm(nt, nt, n, m, k, 1.0, b[s], n, a[s], k, 0.0, c[s], n, dtype=dtype)

        return Prepared(run, lambda: arena.download(c[0], (m, n), self.np_dtype), arena.close)

    def torch(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        torch = env.torch
        sets = env.sets(self.working_set)
        a = [env.to_torch(host["a"]) for _ in range(sets)]
        b = [env.to_torch(host["b"]) for _ in range(sets)]
        c = [torch.empty((self.m, self.n), dtype=a[0].dtype, device="cuda") for _ in range(sets)]

        def run(i: int) -> None:
            s = i % sets
            torch.mm(a[s], b[s], out=c[s])

        return Prepared(run, lambda: c[0].cpu().numpy())

    def cupy(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        cp = env.cupy
        sets = env.sets(self.working_set)
        a = [env.to_cupy(host["a"]) for _ in range(sets)]
        b = [env.to_cupy(host["b"]) for _ in range(sets)]
        c = [cp.empty((self.m, self.n), dtype=self.np_dtype) for _ in range(sets)]

        def run(i: int) -> None:
            s = i % sets
            cp.matmul(a[s], b[s], out=c[s])

        return Prepared(run, lambda: cp.asnumpy(c[0]))


def cases(quick: bool) -> list[Case]:
    """Square float32 1024..8192, the skinny 4096x4096x64 and 64x4096x4096, float16 4096."""
    if quick:
        squares, big, skinny_k, f16 = (32, 64, 128, 256), 256, 16, 128
    else:
        squares, big, skinny_k, f16 = (1024, 2048, 4096, 8192), 4096, 64, 4096
    out: list[Case] = [GemmCase(s, s, s) for s in squares]
    out.append(GemmCase(big, big, skinny_k))
    out.append(GemmCase(skinny_k, big, big))
    out.append(GemmCase(f16, f16, f16, "float16"))
    return out
