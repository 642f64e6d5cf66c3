"""``python -m gputensor``: show the chosen WebGPU adapter and run real work on it, checked
against NumPy, with timings (gemm, a reduction, elementwise ops, attention)."""

from __future__ import annotations

import os
import sys
import time

import numpy as np

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")


def _timed(fn, backend, repeats: int = 3) -> tuple[float, float]:
    """(cold seconds incl. compile, warm seconds per call) of ``fn`` on the device."""
    t0 = time.perf_counter()
    fn()
    backend.synchronize()
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(repeats):
        fn()
    backend.synchronize()
    return cold, (time.perf_counter() - t0) / repeats


def main() -> int:
    from gputensor._backend import BackendTranspose, BinaryOp, ReduceOp, UnaryOp, get_backend

    backend = get_backend()
    ctx = backend.context
    info = ctx.adapter_info
    print(f"gputensor on {info.get('device')} ({info.get('backend_type')}, {info.get('adapter_type')})")
    print(f"  vendor: {info.get('vendor') or '-'}  driver: {info.get('description') or '-'}")
    print(f"  features: {', '.join(sorted(ctx.features)) or 'none'}")
    for key in ("max-storage-buffer-binding-size", "max-buffer-size", "max-compute-workgroup-storage-size",
                "max-compute-invocations-per-workgroup", "max-compute-workgroups-per-dimension"):
        print(f"  {key}: {ctx.limits.get(key)}")
    rng = np.random.default_rng(0)
    ok = True

    def upload(arr: np.ndarray) -> int:
        ptr = backend.alloc(arr.nbytes)
        backend.copy_htod(ptr, np.ascontiguousarray(arr))
        return ptr

    def download(ptr: int, shape, dtype=np.float32) -> np.ndarray:
        out = np.empty(shape, dtype)
        backend.copy_dtoh(out, ptr)
        return out

    def report(name: str, err: float, tol: float, cold: float, warm: float, work: str) -> None:
        nonlocal ok
        good = bool(err <= tol)
        ok &= good
        print(f"  {name:<34} max rel err {err:.2e} {'ok' if good else 'FAIL'}   "
              f"cold {cold * 1e3:8.1f} ms  warm {warm * 1e3:8.2f} ms  {work}")

    print("work (checked against NumPy):")
    # gemm: row-major C = A @ B is column-major C^T = B^T A^T
    m = n = k = 512
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    pa, pb, pc = upload(a), upload(b), backend.alloc(m * n * 4)
    cold, warm = _timed(lambda: backend.gemm(BackendTranspose.NO_TRANS, BackendTranspose.NO_TRANS, n, m, k,
                                             1.0, pb, n, pa, k, 0.0, pc, n), backend)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = float(np.abs(download(pc, (m, n)) - ref).max() / np.abs(ref).max())
    report(f"gemm {m}x{n}x{k} float32", err, 1e-5, cold, warm, f"{2 * m * n * k / warm / 1e9:.1f} GFLOP/s")

    # reduction
    x = rng.standard_normal((1024, 4096), dtype=np.float32)
    px, pr = upload(x), backend.alloc(1024 * 4)
    cold, warm = _timed(lambda: backend.reduce(ReduceOp.SUM, px, pr, (1024, 4096), 1), backend)
    ref = x.astype(np.float64).sum(axis=1)
    err = float(np.abs(download(pr, (1024,)) - ref).max() / np.abs(ref).max())
    report("sum over axis 1 of 1024x4096", err, 1e-5, cold, warm, f"{x.nbytes / warm / 1e9:.2f} GB/s")

    # elementwise: y = exp(x) * x + x
    size = 1 << 22
    e = rng.standard_normal(size, dtype=np.float32)
    pe, pt = upload(e), backend.alloc(e.nbytes)

    def chain() -> None:
        backend.unary(UnaryOp.EXP, pe, pt, size)
        backend.binary(BinaryOp.MUL, pt, pe, pt, size)
        backend.binary(BinaryOp.ADD, pt, pe, pt, size)

    cold, warm = _timed(chain, backend)
    ref = np.exp(e.astype(np.float64)) * e + e
    err = float(np.abs(download(pt, (size,)) - ref).max() / np.abs(ref).max())
    report("exp(x) * x + x, 4M float32", err, 1e-5, cold, warm, f"{8 * e.nbytes / warm / 1e9:.2f} GB/s")

    # attention
    bsz, heads, seq, dim = 1, 4, 256, 64
    q, kk, v = (rng.standard_normal((bsz, heads, seq, dim), dtype=np.float32) for _ in range(3))
    pq, pk, pv, po = upload(q), upload(kk), upload(v), backend.alloc(q.nbytes)
    scale = 1.0 / np.sqrt(dim)
    cold, warm = _timed(lambda: backend.attention(pq, pk, pv, po, bsz, heads, seq, seq, dim, scale, True), backend)
    s = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), kk) * scale
    s = np.where(np.tril(np.ones((seq, seq), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    ref = np.einsum("bhqk,bhkd->bhqd", p / p.sum(-1, keepdims=True), v)
    err = float(np.abs(download(po, q.shape) - ref).max() / np.abs(ref).max())
    report(f"causal attention {bsz}x{heads}x{seq}x{dim}", err, 1e-4, cold, warm,
           f"{2 * bsz * heads * seq * seq * dim / warm / 1e9:.1f} GFLOP/s")

    # the namespace: what a user writes
    import gputensor as gt

    an = rng.standard_normal((256, 384), dtype=np.float32)
    bn = rng.standard_normal((384, 128), dtype=np.float32)
    t0 = time.perf_counter()
    a_gt, b_gt = gt.asarray(an), gt.asarray(bn)
    c_gt = a_gt @ b_gt
    s_gt = gt.sum(c_gt, axis=0)
    e_gt = gt.exp(a_gt) * 2
    s_np, e_np = gt.asnumpy(s_gt), gt.asnumpy(e_gt)
    elapsed = time.perf_counter() - t0
    ref_s = (an.astype(np.float64) @ bn).sum(axis=0)
    ref_e = np.exp(an.astype(np.float64)) * 2
    err = max(float(np.abs(s_np - ref_s).max() / np.abs(ref_s).max()),
              float(np.abs(e_np - ref_e).max() / np.abs(ref_e).max()))
    report("gt: sum(a @ b, axis=0), exp(a) * 2", err, 1e-5, elapsed, elapsed, f"dtype {s_gt.dtype}, shape {s_gt.shape}")

    print("all results match NumPy" if ok else "SOME RESULTS DO NOT MATCH NumPy")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
