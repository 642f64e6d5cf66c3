"""Backend GEMM (cublasSgemm / cublasSgemmStridedBatched semantics) against NumPy float64.

Matrices are column-major with leading dimensions. Every operand is uploaded inside a larger
allocation whose unused parts (the rows between m and ld, and the slack before and after) are
NaN, so a kernel that reads outside the touched elements, or writes outside C, is caught.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gputensor._backend import BackendError, BackendErrorKind, BackendTranspose, get_backend
from gputensor._backend import ops_gemm
from gputensor._backend.ops_gemm import Extent, plan_blocks, plan_gemm_blocks

from _compare import tol

N, T, C = BackendTranspose.NO_TRANS, BackendTranspose.TRANS, BackendTranspose.CONJ_TRANS
NP_DTYPES = {"float16": np.float16, "float32": np.float32, "float64": np.float64}
# Rounding unit of the stored result and of the accumulation, per dtype.
EPS = {"float16": (2.0**-11, 2.0**-24), "float32": (2.0**-24, 2.0**-24), "float64": (2.0**-53, 2.0**-53)}


@pytest.fixture(scope="module")
def backend():
    return get_backend()


def _is_trans(t: BackendTranspose) -> bool:
    return t is not N


class Operand:
    """A column-major rows x cols matrix with leading dimension ld (and optional batch of
    matrices `stride` elements apart) at element offset `lead` of a NaN-filled allocation."""

    def __init__(self, backend, mats: np.ndarray, ld: int, lead: int = 0, stride: int | None = None,
                 tail: int = 3, fill: float = np.nan):
        self.backend = backend
        self.mats = mats  # (batch, rows, cols)
        batch, rows, cols = mats.shape
        self.ld = ld
        self.stride = stride if stride is not None else ld * cols
        self.lead = lead
        total = lead + (batch - 1) * self.stride + ld * cols + tail
        self.storage = np.full(total, fill, dtype=mats.dtype)
        for i in range(batch):
            for j in range(cols):
                start = lead + i * self.stride + j * ld
                self.storage[start:start + rows] = mats[i, :, j]
        self.itemsize = mats.dtype.itemsize
        self.base = backend.alloc(self.storage.nbytes)
        backend.copy_htod(self.base, self.storage)
        self.ptr = self.base + lead * self.itemsize

    def download(self) -> np.ndarray:
        out = np.empty_like(self.storage)
        self.backend.copy_dtoh(out, self.base)
        return out

    def unpack(self, flat: np.ndarray) -> np.ndarray:
        batch, rows, cols = self.mats.shape
        out = np.empty(self.mats.shape, dtype=flat.dtype)
        for i in range(batch):
            for j in range(cols):
                start = self.lead + i * self.stride + j * self.ld
                out[i, :, j] = flat[start:start + rows]
        return out

    def touched_mask(self) -> np.ndarray:
        mask = np.zeros(self.storage.shape, dtype=bool)
        batch, rows, cols = self.mats.shape
        for i in range(batch):
            for j in range(cols):
                start = self.lead + i * self.stride + j * self.ld
                mask[start:start + rows] = True
        return mask

    def free(self) -> None:
        self.backend.free(self.base)


def _rand(rng, shape, dtype):
    return rng.uniform(-1.0, 1.0, size=shape).astype(dtype)


def run_gemm(backend, ta, tb, m, n, k, alpha, beta, *, dtype="float32", extra_ld=(0, 0, 0),
             leads=(0, 0, 0), batch=None, strides=(None, None, None), c_nan=False, seed=0,
             same_allocation=False, splits=None):
    """Run (batched) gemm and check it against a float64 NumPy reference (``splits``: forced
    split-K slices)."""
    rng = np.random.default_rng(seed)
    npd = NP_DTYPES[dtype]
    nb = 1 if batch is None else batch
    a_shape = (k, m) if _is_trans(ta) else (m, k)
    b_shape = (n, k) if _is_trans(tb) else (k, n)
    A = _rand(rng, (nb, *a_shape), npd)
    B = _rand(rng, (nb, *b_shape), npd)
    C0 = np.full((nb, m, n), np.nan, npd) if c_nan else _rand(rng, (nb, m, n), npd)
    lda = max(1, a_shape[0]) + extra_ld[0]
    ldb = max(1, b_shape[0]) + extra_ld[1]
    ldc = max(1, m) + extra_ld[2]
    ops = [Operand(backend, X, ld, lead, stride)
           for X, ld, lead, stride in zip((A, B, C0), (lda, ldb, ldc), leads, strides)]
    oa, ob, oc = ops
    if batch is None:
        ops_gemm.gemm(backend, ta, tb, m, n, k, alpha, oa.ptr, lda, ob.ptr, ldb, beta, oc.ptr, ldc,
                      dtype=dtype, splits=splits)
    else:
        ops_gemm.gemm_strided_batched(backend, ta, tb, m, n, k, alpha, oa.ptr, lda, oa.stride,
                                      ob.ptr, ldb, ob.stride, beta, oc.ptr, ldc, oc.stride, batch,
                                      dtype=dtype, splits=splits)
    flat = oc.download()
    got = oc.unpack(flat).astype(np.float64)
    opa = A.astype(np.float64)
    opb = B.astype(np.float64)
    if _is_trans(ta):
        opa = opa.transpose(0, 2, 1)
    if _is_trans(tb):
        opb = opb.transpose(0, 2, 1)
    prod = opa @ opb if k else np.zeros((nb, m, n))
    absprod = np.abs(opa) @ np.abs(opb) if k else np.zeros((nb, m, n))
    c64 = C0.astype(np.float64)
    if beta == 0:
        ref = alpha * prod
        scale = abs(alpha) * absprod
    else:
        ref = alpha * prod + beta * c64
        scale = abs(alpha) * absprod + abs(beta) * np.abs(c64)
    eps_out, eps_acc = EPS[dtype]
    tol = 2 * eps_out * np.abs(ref) + (k + 4) * eps_acc * scale + 1e-30
    assert np.all(np.isfinite(got)) or not np.all(np.isfinite(ref)), "NaN leaked into C"
    err = np.abs(got - ref)
    assert np.all(err <= tol), f"max error {err.max()} (tolerance {tol.flat[np.argmax(err)]})"
    # Nothing outside C's touched elements changed (still NaN).
    assert np.all(np.isnan(flat[~oc.touched_mask()]))
    for op in ops:
        op.free()
    return got


# ---- every transpose combination ----------------------------------------------------------
@pytest.mark.parametrize("ta,tb", list(itertools.product([N, T, C], repeat=2)))
def test_transpose_combinations(backend, ta, tb):
    run_gemm(backend, ta, tb, 37, 29, 41, 1.25, -0.5, extra_ld=(3, 1, 2), seed=hash((ta, tb)) % 97)


@pytest.mark.parametrize("ta,tb", list(itertools.product([N, T], repeat=2)))
def test_sizes_not_multiples_of_tiles(backend, ta, tb):
    # Primes across several tiles in every dimension (edge tiles on m, n and k).
    run_gemm(backend, ta, tb, 131, 67, 137, 0.75, 0.25, extra_ld=(1, 2, 0))


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (1, 7, 3), (5, 1, 1), (2, 3, 1), (64, 64, 16),
                                   (128, 128, 8), (129, 1, 130)])
def test_small_and_degenerate_shapes(backend, m, n, k):
    run_gemm(backend, T, N, m, n, k, 1.0, 1.0)


def test_beta_zero_does_not_read_c(backend):
    got = run_gemm(backend, N, T, 45, 38, 23, 2.0, 0.0, c_nan=True)
    assert np.all(np.isfinite(got))


def test_alpha_zero_does_not_read_a_or_b(backend):
    rng = np.random.default_rng(3)
    m, n, k = 9, 7, 5
    a = Operand(backend, np.full((1, m, k), np.nan, np.float32), m)
    b = Operand(backend, np.full((1, k, n), np.nan, np.float32), k)
    c0 = _rand(rng, (1, m, n), np.float32)
    c = Operand(backend, c0, m)
    ops_gemm.gemm(backend, N, N, m, n, k, 0.0, a.ptr, m, b.ptr, k, 3.0, c.ptr, m)
    got = c.unpack(c.download())
    np.testing.assert_allclose(got, 3.0 * c0, **tol("float32", "gemm_beta_only"))


@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_k_zero_scales_c(backend, beta):
    got = run_gemm(backend, N, N, 13, 11, 0, 1.5, beta, c_nan=(beta == 0.0))
    if beta == 0.0:
        assert np.all(got == 0.0)


def test_k_zero_does_not_touch_a_or_b(backend):
    m, n = 6, 5
    c = Operand(backend, np.ones((1, m, n), np.float32), m)
    dead = backend.alloc(4)
    backend.free(dead)
    ops_gemm.gemm(backend, N, N, m, n, 0, 1.0, dead, m, dead, 1, 2.0, c.ptr, m)
    assert np.all(c.unpack(c.download()) == 2.0)


@pytest.mark.parametrize("m,n", [(0, 5), (5, 0), (0, 0)])
def test_empty_is_a_no_op(backend, m, n):
    c = Operand(backend, np.ones((1, 3, 3), np.float32), 3)
    before = backend.context.stats["dispatches"]
    ops_gemm.gemm(backend, N, N, m, n, 4, 1.0, c.ptr, max(1, m), c.ptr, 4, 0.0, c.ptr, max(1, m))
    assert backend.context.stats["dispatches"] == before
    assert np.all(c.unpack(c.download()) == 1.0)


def test_interior_pointers_in_one_allocation(backend):
    rng = np.random.default_rng(5)
    m, n, k, ld = 19, 23, 17, 24
    storage = np.full(5 + 3 * ld * 23 + 40, np.nan, np.float32)
    offs = (5, 5 + ld * 23 + 3, 5 + 2 * ld * 23 + 11)  # a, b, c (odd element offsets)
    A, B, C0 = _rand(rng, (m, k), np.float32), _rand(rng, (k, n), np.float32), _rand(rng, (m, n), np.float32)
    for off, X in zip(offs, (A, B, C0)):
        for j in range(X.shape[1]):
            storage[off + j * ld: off + j * ld + X.shape[0]] = X[:, j]
    base = backend.alloc(storage.nbytes)
    backend.copy_htod(base, storage)
    a, b, c = (base + 4 * off for off in offs)
    ops_gemm.gemm(backend, N, N, m, n, k, 1.0, a, ld, b, ld, 1.0, c, ld)
    out = np.empty_like(storage)
    backend.copy_dtoh(out, base)
    got = np.stack([out[offs[2] + j * ld: offs[2] + j * ld + m] for j in range(n)], axis=1)
    ref = A.astype(np.float64) @ B + C0
    np.testing.assert_allclose(got, ref, **tol("float32", "matmul"))
    # A and B unchanged.
    keep = np.ones(storage.shape, bool)
    for j in range(n):
        keep[offs[2] + j * ld: offs[2] + j * ld + m] = False
    np.testing.assert_array_equal(out[keep], storage[keep])
    backend.free(base)


@pytest.mark.parametrize("dtype", ["float16", "float64"])
@pytest.mark.parametrize("ta,tb", [(N, N), (T, N), (N, T), (T, T)])
def test_other_dtypes(backend, dtype, ta, tb):
    run_gemm(backend, ta, tb, 45, 70, 67, 0.5, 1.5, dtype=dtype, extra_ld=(1, 0, 3), leads=(1, 3, 5))


@settings(max_examples=25, deadline=None)
@given(
    ta=st.sampled_from([N, T, C]),
    tb=st.sampled_from([N, T, C]),
    m=st.integers(1, 80),
    n=st.integers(1, 80),
    k=st.integers(0, 80),
    alpha=st.sampled_from([1.0, -0.5, 2.0, 0.0]),
    beta=st.sampled_from([0.0, 1.0, -1.5]),
    extra_ld=st.tuples(st.integers(0, 5), st.integers(0, 5), st.integers(0, 5)),
    leads=st.tuples(st.integers(0, 9), st.integers(0, 9), st.integers(0, 9)),
    dtype=st.sampled_from(["float32", "float32", "float16", "float64"]),
)
def test_gemm_property(backend, ta, tb, m, n, k, alpha, beta, extra_ld, leads, dtype):
    run_gemm(backend, ta, tb, m, n, k, alpha, beta, dtype=dtype, extra_ld=extra_ld, leads=leads,
             c_nan=(beta == 0.0))


# ---- batched --------------------------------------------------------------------------------
@pytest.mark.parametrize("ta,tb", [(N, N), (T, T), (N, C)])
def test_strided_batched(backend, ta, tb):
    run_gemm(backend, ta, tb, 21, 18, 33, 1.0, 0.5, batch=4, extra_ld=(2, 1, 0))


def test_strided_batched_padded_strides_and_dtypes(backend):
    for dtype in ("float16", "float64"):
        run_gemm(backend, T, N, 9, 10, 11, -1.0, 0.0, batch=3, strides=(200, 150, 131), dtype=dtype,
                 c_nan=True, leads=(3, 1, 2))


def test_strided_batched_broadcast_operand(backend):
    """stride_b = 0: every product uses the same B (as a batched matmul with a broadcast)."""
    rng = np.random.default_rng(9)
    batch, m, n, k = 5, 12, 9, 14
    A = _rand(rng, (batch, m, k), np.float32)
    B = _rand(rng, (1, k, n), np.float32)
    oa, ob = Operand(backend, A, m), Operand(backend, B, k)
    oc = Operand(backend, np.zeros((batch, m, n), np.float32), m)
    ops_gemm.gemm_strided_batched(backend, N, N, m, n, k, 1.0, oa.ptr, m, oa.stride, ob.ptr, k, 0,
                                  0.0, oc.ptr, m, oc.stride, batch)
    got = oc.unpack(oc.download())
    np.testing.assert_allclose(got, A.astype(np.float64) @ B[0], **tol("float32", "matmul"))


def test_batch_zero_is_a_no_op(backend):
    c = Operand(backend, np.ones((1, 2, 2), np.float32), 2)
    ops_gemm.gemm_strided_batched(backend, N, N, 2, 2, 2, 1.0, c.ptr, 2, 4, c.ptr, 2, 4, 0.0,
                                  c.ptr, 2, 4, 0)
    assert np.all(c.unpack(c.download()) == 1.0)


# ---- splitting operands larger than one binding -------------------------------------------
@pytest.mark.parametrize("ta,tb", [(N, N), (T, T), (N, T), (T, N)])
@pytest.mark.parametrize("limit_bytes", [2048, 700])
def test_split_with_small_window_limit(backend, monkeypatch, ta, tb, limit_bytes):
    """With a tiny window limit the problem is split on batch, m, n and k; results unchanged."""
    monkeypatch.setattr(backend, "max_window_bytes", lambda: limit_bytes)
    before = backend.context.stats["dispatches"]
    run_gemm(backend, ta, tb, 33, 21, 29, 1.5, 0.5, extra_ld=(3, 2, 1), batch=3, leads=(1, 2, 3))
    assert backend.context.stats["dispatches"] - before > 3


def test_split_beta_applied_once_over_k_blocks(backend, monkeypatch):
    monkeypatch.setattr(backend, "max_window_bytes", lambda: 1024)
    run_gemm(backend, N, N, 16, 8, 200, 1.0, 3.0)


def test_operand_larger_than_one_binding(backend):
    """A real operand over the adapter's binding limit (128 MiB on lavapipe): A is 8192 x 4100
    float32 (about 134 MB) with n = 2, so the k dimension is split across dispatches."""
    limit = backend.max_window_bytes()
    m = 8192
    k = limit // (4 * m) + 4  # just over one binding
    n = 2
    rng = np.random.default_rng(11)
    A = rng.standard_normal((k, m), dtype=np.float32)  # row-major (k, m) == column-major m x k
    B = rng.standard_normal((n, k), dtype=np.float32)  # column-major k x n
    C0 = rng.standard_normal((n, m), dtype=np.float32)
    assert A.nbytes > limit
    pa, pb, pc = backend.alloc(A.nbytes), backend.alloc(B.nbytes), backend.alloc(C0.nbytes)
    backend.copy_htod(pa, A)
    backend.copy_htod(pb, B)
    backend.copy_htod(pc, C0)
    before = backend.context.stats["dispatches"]
    ops_gemm.gemm(backend, N, N, m, n, k, 1.0, pa, m, pb, k, 0.5, pc, m)
    assert backend.context.stats["dispatches"] - before >= 2
    out = np.empty_like(C0)
    backend.copy_dtoh(out, pc)
    ref = (B.astype(np.float64) @ A.astype(np.float64)) + 0.5 * C0  # (n, m) == C^T
    # float32 sums of k products of N(0,1) values: rounding grows like sqrt(k) (k is ~4,100 on
    # lavapipe, ~130,000 on an H200 with its larger binding window)
    np.testing.assert_allclose(out, ref, rtol=tol("float32", "matmul_long_k")["rtol"], atol=tol("float32", "matmul_long_k")["atol"] * np.sqrt(k))
    for p in (pa, pb, pc):
        backend.free(p)


# ---- the planner ----------------------------------------------------------------------------
def _spans_ok(blocks, extents, limit):
    return all(e.span(blocks) <= limit for e in extents)


def test_plan_fits_without_split():
    blocks = plan_gemm_blocks(False, False, 10, 20, 30, 1, 10, 30, 10, 0, 0, 0, limit=10_000)
    assert blocks == {"batch": 1, "m": 10, "n": 20, "k": 30}


def test_plan_splits_columns_first():
    # A (m=100 x k=50, lda=100) spans 5000 > 1200: k is split (columns), rows stay whole.
    blocks = plan_gemm_blocks(False, False, 100, 4, 50, 1, 100, 50, 100, 0, 0, 0, limit=1200)
    assert blocks["m"] == 100 and blocks["k"] <= 12 and blocks["n"] == 4
    # Transposed A: stored k x m, so m (its columns) is split.
    blocks = plan_gemm_blocks(True, False, 100, 4, 50, 1, 50, 50, 100, 0, 0, 0, limit=1200)
    assert blocks["k"] == 50 and blocks["m"] <= 24


def test_plan_rows_longer_than_limit():
    # One column of A (m = 1000 rows) exceeds the limit: rows split, one column per block.
    blocks = plan_gemm_blocks(False, False, 1000, 3, 5, 1, 1000, 5, 1000, 0, 0, 0, limit=300)
    extents = ops_gemm.operand_extents(False, False, 1000, 5, 1000, 0, 0, 0)
    assert _spans_ok(blocks, extents, 300)
    assert blocks["k"] == 1 and blocks["n"] == 1 and blocks["m"] <= 300


def test_plan_batch_blocks():
    blocks = plan_gemm_blocks(False, False, 4, 4, 4, 100, 4, 4, 4, 16, 16, 16, limit=100)
    assert blocks["batch"] == 6 and blocks["m"] == 4  # 6 = ceil(100 / ceil(100 / 6))
    blocks = plan_gemm_blocks(False, False, 4, 4, 4, 200_000, 4, 4, 4, 0, 0, 16, limit=1 << 30)
    assert blocks["batch"] <= ops_gemm.MAX_GRID_Z


def test_plan_impossible():
    with pytest.raises(ValueError):
        plan_blocks({"x": 3}, [Extent(10, (("x", 1),))], limit=5)
    with pytest.raises(ValueError):
        plan_blocks({"x": 0}, [Extent(1, (("x", 1),))], limit=5)


@settings(max_examples=200, deadline=None)
@given(
    ta=st.booleans(), tb=st.booleans(),
    m=st.integers(1, 3000), n=st.integers(1, 3000), k=st.integers(1, 3000),
    batch=st.integers(1, 50),
    pads=st.tuples(st.integers(0, 2000), st.integers(0, 2000), st.integers(0, 2000)),
    bstrides=st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)),
    limit=st.integers(1, 1 << 22),
)
def test_plan_property(ta, tb, m, n, k, batch, pads, bstrides, limit):
    lda = (k if ta else m) + pads[0]
    ldb = (n if tb else k) + pads[1]
    ldc = m + pads[2]
    spans = [(m if ta else k) * lda, (k if tb else n) * ldb, n * ldc]
    strides = [s * f for s, f in zip(spans, bstrides)]
    blocks = plan_gemm_blocks(ta, tb, m, n, k, batch, lda, ldb, ldc, *strides, limit=limit)
    extents = ops_gemm.operand_extents(ta, tb, lda, ldb, ldc, *strides)
    assert _spans_ok(blocks, extents, limit)
    sizes = {"batch": batch, "m": m, "n": n, "k": k}
    assert all(1 <= blocks[d] <= sizes[d] for d in sizes)
    if _spans_ok({**sizes, "batch": min(batch, ops_gemm.MAX_GRID_Z)}, extents, limit):
        assert blocks == sizes


# ---- tile configuration ---------------------------------------------------------------------
def test_tile_configurations_are_valid(backend):
    for tiles in (ops_gemm.TILES_LARGE, ops_gemm.TILES_MEDIUM, ops_gemm.TILES_MEDIUM_F64,
                  ops_gemm.TILES_SOFTWARE, ops_gemm.TILES_TALL, ops_gemm.TILES_WIDE):
        tiles.check()
        assert tiles.threads <= 1024
    chosen = ops_gemm.gemm_tiles(backend.context, "f32", 4096, 4096)
    limit = backend.context.limits["max-compute-workgroup-storage-size"]
    assert chosen.workgroup_bytes(4) <= limit
    with pytest.raises(ValueError):
        ops_gemm.GemmTiles(64, 64, 8, 3, 4).check()


# ---- split-K ------------------------------------------------------------------------------------
@pytest.mark.parametrize("splits", [2, 3, 8])
@pytest.mark.parametrize("ta,tb", [(N, N), (T, N), (N, T), (T, T)])
def test_splitk_transposes(backend, kernels_run, ta, tb, splits):
    # k = 77: 10 depth tiles of 8, not a multiple of the splits; ragged m and n tiles
    run_gemm(backend, ta, tb, 131, 67, 77, 0.75, 0.25, extra_ld=(1, 2, 3), leads=(1, 2, 3),
             splits=splits)
    assert kernels_run.count("gemm") == 1 and kernels_run.count("gemm_combine") == 1


@pytest.mark.parametrize("m,n,k,splits", [
    (9, 7, 20, 4),     # k < splits * BK: 3 depth tiles, so 3 slices of one tile
    (40, 33, 9, 8),    # 2 depth tiles, the second holding one element of k
    (5, 3, 1000, 8),   # one tile, deep slices
    (1, 1, 17, 3),
    (200, 1, 50, 2),   # n = 1
])
def test_splitk_shapes(backend, kernels_run, m, n, k, splits):
    run_gemm(backend, N, N, m, n, k, 1.5, -0.5, splits=splits)
    assert "gemm_combine" in kernels_run


def test_splitk_one_depth_tile_runs_without_split(backend, kernels_run):
    run_gemm(backend, N, N, 20, 20, 5, 1.0, 1.0, splits=4)  # k < BK: nothing to split
    assert kernels_run == ["gemm"]


def test_splitk_beta_zero_does_not_read_c(backend):
    got = run_gemm(backend, T, N, 45, 38, 90, 2.0, 0.0, c_nan=True, splits=3)
    assert np.all(np.isfinite(got))


@pytest.mark.parametrize("k", [0, 30])
def test_splitk_without_products(backend, kernels_run, k):
    """k == 0 or alpha == 0: A and B are not read, and no split is made."""
    run_gemm(backend, N, N, 13, 11, k, 0.0 if k else 1.0, 0.5, splits=4)
    assert "gemm_combine" not in kernels_run


def test_splitk_batched(backend, kernels_run):
    run_gemm(backend, N, T, 21, 18, 70, 1.0, 0.5, batch=4, extra_ld=(2, 1, 0), splits=3)
    run_gemm(backend, T, N, 9, 10, 41, -1.0, 0.0, batch=3, strides=(500, 450, 131), c_nan=True,
             leads=(3, 1, 2), splits=5)
    assert kernels_run.count("gemm_combine") == 2


@pytest.mark.parametrize("dtype", [pytest.param("float16", marks=pytest.mark.requires("shader-f16")),
                                   pytest.param("float64", marks=pytest.mark.requires("shader-f64"))])
def test_splitk_other_dtypes(backend, dtype):
    run_gemm(backend, N, T, 45, 70, 67, 0.5, 1.5, dtype=dtype, extra_ld=(1, 0, 3),
             leads=(1, 3, 5), splits=3)
    run_gemm(backend, T, N, 30, 20, 100, 1.0, 0.0, batch=2, dtype=dtype, c_nan=True, splits=4)


def test_splitk_with_small_window_limit(backend, monkeypatch, kernels_run):
    """Blocks of batch, m, n and k (later k blocks accumulate with beta = 1), each split."""
    monkeypatch.setattr(backend, "max_window_bytes", lambda: 4096)
    run_gemm(backend, N, N, 33, 21, 290, 1.5, 0.5, extra_ld=(3, 2, 1), batch=3, leads=(1, 2, 3),
             splits=3)
    assert kernels_run.count("gemm_combine") == kernels_run.count("gemm") > 3


def test_splitk_clamped_to_the_scratch_binding(backend, monkeypatch, kernels_run):
    """Partials that would not fit one binding take fewer splits (none at all here)."""
    monkeypatch.setattr(backend, "max_window_bytes", lambda: 64 * 64 * 4 + 256)
    run_gemm(backend, N, N, 64, 64, 64, 1.0, 0.0, splits=4)
    assert kernels_run == ["gemm"]


@pytest.mark.parametrize("splits", [1, 3])
def test_splitk_bitwise_reproducible(backend, splits):
    first = run_gemm(backend, N, N, 150, 70, 333, 1.0, 0.5, seed=4, splits=splits)
    second = run_gemm(backend, N, N, 150, 70, 333, 1.0, 0.5, seed=4, splits=splits)
    assert first.tobytes() == second.tobytes()


def test_splitk_general_strides(backend, kernels_run):
    """The general-stride kernel (negative and 2-element strides) with split-K."""
    rng = np.random.default_rng(8)
    m, n, k = 37, 29, 75
    A = _rand(rng, (m, 2 * k), np.float32)
    B = _rand(rng, (k, n), np.float32)
    C0 = _rand(rng, (m, n), np.float32)
    av = A[::-1, ::2]  # negative row stride, column stride 2
    pa, pb, pc = backend.alloc(A.nbytes), backend.alloc(B.nbytes), backend.alloc(C0.nbytes)
    backend.copy_htod(pa, A)
    backend.copy_htod(pb, B)
    backend.copy_htod(pc, C0)
    ops_gemm.gemm_strided(backend, m, n, k, 2.0, pa + (m - 1) * 2 * k * 4, (-2 * k, 2), pb, (n, 1),
                          -1.0, pc, (n, 1), splits=3)
    out = np.empty_like(C0)
    backend.copy_dtoh(out, pc)
    ref = 2.0 * av.astype(np.float64) @ B - C0
    np.testing.assert_allclose(out, ref, **tol("float32", "matmul"))
    assert kernels_run == ["gemm_strided", "gemm_combine"]
    for p in (pa, pb, pc):
        backend.free(p)


def test_splitk_environment_variable(backend, monkeypatch, kernels_run):
    monkeypatch.setenv(ops_gemm.SPLITK_ENV, "3")
    run_gemm(backend, N, N, 20, 30, 40, 1.0, 0.0)
    assert kernels_run == ["gemm", "gemm_combine"]
    kernels_run.clear()
    run_gemm(backend, N, N, 20, 30, 40, 1.0, 0.0, splits=1)  # the argument wins
    assert kernels_run == ["gemm"]
    kernels_run.clear()
    for off in ("0", "1"):
        monkeypatch.setenv(ops_gemm.SPLITK_ENV, off)
        run_gemm(backend, N, N, 20, 30, 40, 1.0, 0.0)
    assert kernels_run == ["gemm", "gemm"]
    monkeypatch.setenv(ops_gemm.SPLITK_ENV, "many")
    p = backend.alloc(64)
    try:
        with pytest.raises(BackendError) as exc:
            ops_gemm.gemm(backend, N, N, 2, 2, 2, 1.0, p, 2, p, 2, 0.0, p, 2)
        assert exc.value.kind is BackendErrorKind.INVALID_ARGUMENT
        assert ops_gemm.SPLITK_ENV in str(exc.value)
    finally:
        backend.free(p)


@pytest.mark.parametrize("tiles", [ops_gemm.TILES_LARGE, ops_gemm.TILES_TALL, ops_gemm.TILES_WIDE,
                                   ops_gemm.TILES_MEDIUM, ops_gemm.TILES_MEDIUM_F64,
                                   ops_gemm.TILES_SMALL], ids=str)
def test_splitk_every_tile_configuration(backend, monkeypatch, tiles):
    """The configurations GPUs get, split (ragged edges in m, n and the depth slices)."""
    monkeypatch.setattr(ops_gemm, "plan_splitk", lambda *args, **kwargs: (tiles, 3))
    run_gemm(backend, T, N, tiles.bm + 3, tiles.bn + 5, 7 * tiles.bk + 3, 1.0, 0.5, batch=2)
    run_gemm(backend, N, T, 7, 9, 2 * tiles.bk + 1, -1.0, 0.0, c_nan=True)


def test_split_depth():
    assert ops_gemm.split_depth(77, 8, 1) == (1, 10)
    assert ops_gemm.split_depth(77, 8, 3) == (3, 4)   # 4 + 4 + 2 depth tiles
    assert ops_gemm.split_depth(77, 8, 4) == (4, 3)   # 3 + 3 + 3 + 1
    assert ops_gemm.split_depth(20, 8, 8) == (3, 1)   # 3 tiles: 3 slices
    assert ops_gemm.split_depth(5, 8, 4) == (1, 1)
    assert ops_gemm.split_depth(0, 8, 4) == (1, 1)
    for k in range(1, 200, 7):
        for s in range(1, 10):
            count, per = ops_gemm.split_depth(k, 8, s)
            tiles = -(-k // 8)
            assert 1 <= count <= s and (count - 1) * per < tiles <= count * per


def test_choose_splits():
    # the problems the policy was measured on (H200, benchmarks.tools.tune_splitk): few tiles, deep
    assert ops_gemm.choose_splits(32, 4096) == 8     # 64 x 4096 x 4096 (32 tiles of 128x64)
    assert ops_gemm.choose_splits(98, 2304) == 4     # conv 3x3, N=32, C=K=256, 14x14
    assert ops_gemm.choose_splits(64, 1024) == 1     # 1024^3: 64x64 tiles instead
    assert ops_gemm.choose_splits(98, 1024) == 1     # conv 1x1, C=1024, K=256: 64x64 tiles
    # every split keeps at least SPLITK_MIN_DEPTH of k; shallow problems never split
    for tiles in (1, 10, 50, 127):
        for k in (100, 255, 256, 511, 700, 2047, 2048, 5000, 1 << 20):
            s = ops_gemm.choose_splits(tiles, k)
            assert 1 <= s <= ops_gemm.SPLITK_MAX
            assert s == 1 or k // s >= ops_gemm.SPLITK_MIN_DEPTH
            assert s == 1 or k >= ops_gemm.SPLITK_MIN_K


class _FakeContext:
    def __init__(self, software: bool):
        self.is_software = software
        self.limits = {"max-compute-workgroup-storage-size": 49152}


def test_gemm_plan_policy(monkeypatch):
    monkeypatch.delenv(ops_gemm.SPLITK_ENV, raising=False)
    gpu, cpu = _FakeContext(False), _FakeContext(True)
    # few tiles on a GPU: the large tiles, split
    assert ops_gemm.gemm_plan(gpu, "f32", 6272, 256, 2304) == (
        ops_gemm.TILES_LARGE, ops_gemm.choose_splits(98, 2304))
    assert ops_gemm.gemm_plan(gpu, "f32", 4096, 64, 4096) == (ops_gemm.TILES_TALL, 8)
    # enough tiles, a shallow depth, f64 or a software adapter: no split
    assert ops_gemm.gemm_plan(gpu, "f32", 4096, 4096, 4096) == (ops_gemm.TILES_LARGE, 1)
    assert ops_gemm.gemm_plan(gpu, "f32", 1024, 1024, 300) == (ops_gemm.TILES_MEDIUM, 1)
    assert ops_gemm.gemm_plan(gpu, "f64", 1024, 1024, 4096)[1] == 1
    assert ops_gemm.gemm_plan(cpu, "f32", 1024, 1024, 4096) == (ops_gemm.TILES_SOFTWARE, 1)
    # forced
    assert ops_gemm.gemm_plan(gpu, "f32", 4096, 4096, 4096, splits=3) == (ops_gemm.TILES_LARGE, 3)
    assert ops_gemm.gemm_plan(gpu, "f32", 6272, 256, 2304, splits=1) == (ops_gemm.TILES_MEDIUM, 1)
    assert ops_gemm.gemm_plan(cpu, "f32", 100, 100, 100, splits=5) == (ops_gemm.TILES_SOFTWARE, 5)
    monkeypatch.setenv(ops_gemm.SPLITK_ENV, "6")
    assert ops_gemm.gemm_plan(gpu, "f32", 4096, 4096, 4096) == (ops_gemm.TILES_LARGE, 6)
    assert ops_gemm.gemm_plan(gpu, "f32", 4096, 4096, 4096, splits=2)[1] == 2


# ---- errors -----------------------------------------------------------------------------------
def _kind(exc_info) -> BackendErrorKind:
    return exc_info.value.kind


@pytest.fixture()
def small(backend):
    a = backend.alloc(16 * 16 * 4)
    yield a
    backend.free(a)


def _expect_invalid(backend, fn, *args, **kwargs):
    before = backend.context.stats["dispatches"]
    with pytest.raises(BackendError) as exc:
        fn(backend, *args, **kwargs)
    assert _kind(exc) is BackendErrorKind.INVALID_ARGUMENT, exc.value
    assert backend.context.stats["dispatches"] == before
    return exc.value


@pytest.mark.parametrize("bad", ["X", 1, None, "NT"])
def test_error_bad_transpose(backend, small, bad):
    _expect_invalid(backend, ops_gemm.gemm, bad, N, 4, 4, 4, 1.0, small, 4, small, 4, 0.0, small, 4)
    _expect_invalid(backend, ops_gemm.gemm, N, bad, 4, 4, 4, 1.0, small, 4, small, 4, 0.0, small, 4)


def test_transpose_letters_accepted(backend, small):
    ops_gemm.gemm(backend, "n", "C", 4, 4, 4, 1.0, small, 4, small, 4, 0.0, small + 256, 4)


@pytest.mark.parametrize("which", range(3))
def test_error_negative_size(backend, small, which):
    sizes = [4, 4, 4]
    sizes[which] = -1
    _expect_invalid(backend, ops_gemm.gemm, N, N, *sizes, 1.0, small, 4, small, 4, 0.0, small, 4)


@pytest.mark.parametrize("bad", [2.0, "4", True, None])
def test_error_non_integer_size(backend, small, bad):
    _expect_invalid(backend, ops_gemm.gemm, N, N, bad, 4, 4, 1.0, small, 4, small, 4, 0.0, small, 4)


@pytest.mark.parametrize(
    "ta,tb,lda,ldb,ldc",
    [
        (N, N, 4, 6, 5),   # lda < m = 5
        (T, N, 5, 6, 5),   # lda < k = 6
        (N, N, 5, 5, 5),   # ldb < k = 6
        (N, T, 5, 6, 6),   # ldb < n = 7
        (N, N, 5, 6, 4),   # ldc < m = 5
        (N, N, 0, 6, 5),   # lda = 0
    ],
)
def test_error_leading_dimension_too_small(backend, small, ta, tb, lda, ldb, ldc):
    _expect_invalid(backend, ops_gemm.gemm, ta, tb, 5, 7, 6, 1.0, small, lda, small, ldb, 0.0,
                    small, ldc)


def test_error_leading_dimension_zero_sizes(backend, small):
    # m = 0 still needs lda >= 1 and ldc >= 1 (cuBLAS: max(1, rows)).
    _expect_invalid(backend, ops_gemm.gemm, N, N, 0, 2, 2, 1.0, small, 0, small, 2, 0.0, small, 1)
    _expect_invalid(backend, ops_gemm.gemm, N, N, 0, 2, 2, 1.0, small, 1, small, 2, 0.0, small, 0)


@pytest.mark.parametrize("operand", ["a", "b", "c"])
def test_error_pointer_past_end(backend, operand):
    m, n, k = 8, 8, 8
    ptrs = {"a": backend.alloc(m * k * 4), "b": backend.alloc(k * n * 4), "c": backend.alloc(m * n * 4)}
    short = backend.alloc(m * n * 4 - 4)
    args = dict(ptrs)
    args[operand] = short
    err = _expect_invalid(backend, ops_gemm.gemm, N, N, m, n, k, 1.0, args["a"], m, args["b"], k,
                          0.0, args["c"], m)
    assert "past the end" in str(err)
    # An interior pointer whose span runs past the end.
    args = dict(ptrs)
    args[operand] = ptrs[operand] + 4
    _expect_invalid(backend, ops_gemm.gemm, N, N, m, n, k, 1.0, args["a"], m, args["b"], k, 0.0,
                    args["c"], m)
    # A leading dimension that pushes the span past the end.
    lds = {"a": m, "b": k, "c": m}
    lds[operand] += 1
    _expect_invalid(backend, ops_gemm.gemm, N, N, m, n, k, 1.0, ptrs["a"], lds["a"], ptrs["b"],
                    lds["b"], 0.0, ptrs["c"], lds["c"])
    for p in (*ptrs.values(), short):
        backend.free(p)


def test_error_freed_and_unknown_pointer(backend, small):
    dead = backend.alloc(256)
    backend.free(dead)
    err = _expect_invalid(backend, ops_gemm.gemm, N, N, 4, 4, 4, 1.0, dead, 4, small, 4, 0.0, small, 4)
    assert "freed" in str(err)
    _expect_invalid(backend, ops_gemm.gemm, N, N, 4, 4, 4, 1.0, small, 4, small, 4, 0.0, dead, 4)
    _expect_invalid(backend, ops_gemm.gemm, N, N, 4, 4, 4, 1.0, small, 4, 12345 << 40, 4, 0.0, small, 4)
    _expect_invalid(backend, ops_gemm.gemm, N, N, 4, 4, 4, 1.0, small, 4, "ptr", 4, 0.0, small, 4)


def test_error_misaligned_pointer(backend, small):
    _expect_invalid(backend, ops_gemm.gemm, N, N, 4, 4, 4, 1.0, small + 2, 4, small, 4, 0.0, small, 4)


def test_error_unknown_dtype(backend, small):
    for dtype in ("int32", "bfloat16", "float128"):
        err = _expect_invalid(backend, ops_gemm.gemm, N, N, 4, 4, 4, 1.0, small, 4, small, 4, 0.0,
                              small, 4, dtype=dtype)
        assert "dtype" in str(err)


def test_error_unsupported_dtype(backend, small, monkeypatch):
    """An adapter without shader-f64 / shader-f16 rejects those dtypes as unsupported."""
    monkeypatch.setattr(backend, "supports", lambda feature: feature is None)
    for dtype in ("float64", "float16"):
        with pytest.raises(BackendError) as exc:
            ops_gemm.gemm(backend, N, N, 4, 4, 4, 1.0, small, 4, small, 4, 0.0, small, 4, dtype=dtype)
        assert _kind(exc) is BackendErrorKind.UNSUPPORTED
        with pytest.raises(BackendError) as exc:
            ops_gemm.gemm_strided_batched(backend, N, N, 2, 2, 2, 1.0, small, 2, 4, small, 2, 4, 0.0,
                                          small, 2, 4, 2, dtype=dtype)
        assert _kind(exc) is BackendErrorKind.UNSUPPORTED


def test_error_bad_scalars(backend, small):
    _expect_invalid(backend, ops_gemm.gemm, N, N, 4, 4, 4, "1", small, 4, small, 4, 0.0, small, 4)
    _expect_invalid(backend, ops_gemm.gemm, N, N, 4, 4, 4, 1.0, small, 4, small, 4, 1j, small, 4)


def test_error_batched_arguments(backend, small):
    args = [N, N, 2, 2, 2, 1.0, small, 2, 4, small, 2, 4, 0.0, small, 2, 4]
    _expect_invalid(backend, ops_gemm.gemm_strided_batched, *args, -1)
    bad_stride = list(args)
    bad_stride[8] = -4
    _expect_invalid(backend, ops_gemm.gemm_strided_batched, *bad_stride, 2)
    # The batch's span runs past the end of the allocation (16*16 floats).
    _expect_invalid(backend, ops_gemm.gemm_strided_batched, *args[:15], 200, 3)


def test_backend_method_delegates(backend):
    rng = np.random.default_rng(1)
    A, B = _rand(rng, (6, 5), np.float32), _rand(rng, (5, 4), np.float32)
    pa, pb, pc = backend.alloc(120), backend.alloc(80), backend.alloc(96)
    backend.copy_htod(pa, np.asfortranarray(A).T.copy())
    backend.copy_htod(pb, np.asfortranarray(B).T.copy())
    backend.gemm(N, N, 6, 4, 5, 1.0, pa, 6, pb, 5, 0.0, pc, 6)
    out = np.empty((4, 6), np.float32)
    backend.copy_dtoh(out, pc)
    np.testing.assert_allclose(out.T, A.astype(np.float64) @ B, **tol("float32", "matmul_small"))


@pytest.mark.parametrize("triangle", [1, 2])
@pytest.mark.parametrize(("n", "batch"), [(150, 1), (70, 2), (5, 1)])
def test_gemm_triangle_tiles(backend, triangle: int, n: int, batch: int) -> None:
    """``triangle`` 1 (2): every element of C's upper (lower) triangle, diagonal included, is
    alpha A B + beta C; tiles wholly on the other side are skipped (their elements keep C's old
    values, seen as the NaN C started with), and every written element is correct."""
    rng = np.random.default_rng(n + triangle)
    k = 24
    A = _rand(rng, (batch, n, k), np.float32)
    B = _rand(rng, (batch, k, n), np.float32)
    C0 = np.full((batch, n, n), np.nan, np.float32)
    oa, ob, oc = (Operand(backend, X, X.shape[1]) for X in (A, B, C0))
    try:
        ops_gemm.gemm_strided_batched(backend, N, N, n, n, k, -1.0, oa.ptr, n, oa.stride, ob.ptr, k, ob.stride,
                                      0.0, oc.ptr, n, oc.stride, batch, triangle=triangle)
        got = oc.unpack(oc.download()).astype(np.float64)
    finally:
        for o in (oa, ob, oc):
            o.free()
    want = -(A.astype(np.float64) @ B.astype(np.float64))
    keep = np.triu(np.ones((n, n), bool)) if triangle == 1 else np.tril(np.ones((n, n), bool))
    np.testing.assert_allclose(got[:, keep], want[:, keep], **tol("float32", "matmul"))
    written = ~np.isnan(got)
    np.testing.assert_allclose(got[written], want[written], **tol("float32", "matmul"))
    if n >= 150:
        assert not written.all()  # (some tile was skipped)
