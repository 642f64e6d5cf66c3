"""Strided kernels: general-stride float GEMM (``ops_gemm.gemm_strided``) and the strided scan
(``ops_scan.scan_strided``), and the frontend's matmul / cumulative_sum / cumulative_prod on views
(negative steps, steps in several dims, transposes, broadcasts) without layout copies.

References are NumPy in float64. Backend-level operands live inside NaN-filled allocations, so a
kernel that reads an element it should not (or writes outside its output) is caught. "No copy" is
checked by counting ``backend.alloc`` calls: a matmul or scan of any view allocates its result and
nothing else (a scan whose rows are cut into several units also allocates its small block-totals
array).
"""

from __future__ import annotations

import dataclasses


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gputensor as gt
from gputensor._backend import BackendError, BackendErrorKind, get_backend, ops_gemm, ops_scan, scan_plan
from gputensor._backend import kernels
from gputensor._backend.wgsl_types import storage_type

from _compare import gpu
from _compare import tol

NP = {"float16": np.float16, "float32": np.float32, "float64": np.float64}
# rounding unit of the stored result and of the accumulation
EPS = {"float16": (2.0**-11, 2.0**-24), "float32": (2.0**-24, 2.0**-24), "float64": (2.0**-53, 2.0**-53)}
# absolute error of rounding a result in the subnormal range (float16 results near 0)
SUBNORMAL = {"float16": 2.0**-24, "float32": 2.0**-149, "float64": 1e-300}
# at most the loaded profile's example count (never more than CI's budget)
FEW = settings(deadline=None, max_examples=min(settings.default.max_examples, 15))


@pytest.fixture(scope="module")
def backend():
    return get_backend()


class AllocCounter:
    """Context manager recording the sizes of ``backend.alloc`` calls made inside it (an instance
    attribute shadows the method; no function-scoped fixture, so hypothesis tests can use it)."""

    def __init__(self, backend):
        self.backend = backend
        self.sizes: list[int] = []

    def __enter__(self) -> AllocCounter:
        original = self.backend.alloc

        def counting(nbytes, *args, **kwargs):
            self.sizes.append(int(nbytes))
            return original(nbytes, *args, **kwargs)

        self.backend.alloc = counting
        return self

    def __exit__(self, *exc) -> None:
        del self.backend.alloc


class DispatchSpy:
    """Context manager recording (kernel name, defines, params bytes) of every dispatch."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.calls: list[tuple[str, dict, bytes]] = []

    def __enter__(self) -> DispatchSpy:
        original = self.ctx.dispatch

        def spy(name, params, buffers, workgroups, defines=None, **kw):
            raw = bytes(params) if isinstance(params, (bytes, bytearray)) else repr(list(params)).encode()
            self.calls.append((name, dict(defines or {}), raw))
            return original(name, params, buffers, workgroups, defines, **kw)

        self.ctx.dispatch = spy
        return self

    def __exit__(self, *exc) -> None:
        del self.ctx.dispatch


# ---- strided operands inside NaN-filled allocations -----------------------------------------
class Strided:
    """An operand of ``shape`` with element ``strides`` (any sign, 0 allowed) inside a NaN-filled
    allocation; ``ptr`` points at element [0, ...]. ``values``: fill the touched elements with
    random values (repeated positions keep one value; ``mats`` is read back from the storage)."""

    def __init__(self, backend, rng, shape, strides, dtype, values=True, lead=0):
        self.backend = backend
        self.dtype = np.dtype(dtype)
        lo = sum(s * (n - 1) for n, s in zip(shape, strides) if s < 0 and n > 0)
        hi = sum(s * (n - 1) for n, s in zip(shape, strides) if s > 0 and n > 0)
        self.origin = lead - lo
        total = self.origin + hi + 4
        self.index = np.full(shape, self.origin, dtype=np.int64)
        for d, (n, s) in enumerate(zip(shape, strides)):
            ax = [1] * len(shape)
            ax[d] = n
            self.index = self.index + (np.arange(n) * s).reshape(ax)
        self.storage = np.full(total, np.nan if self.dtype.kind == "f" else 0, self.dtype)
        if values:
            self.storage[self.index] = rng.uniform(-1, 1, size=shape).astype(self.dtype)
        self.mats = self.storage[self.index]
        self.base = backend.alloc(self.storage.nbytes)
        backend.copy_htod(self.base, self.storage)
        self.ptr = self.base + self.origin * self.dtype.itemsize

    def download(self) -> np.ndarray:
        out = np.empty_like(self.storage)
        self.backend.copy_dtoh(out, self.base)
        return out

    def free(self) -> None:
        self.backend.free(self.base)


def distinct_strides(draw, shape):
    """Element strides (any sign, with padding) that keep the elements of ``shape`` distinct."""
    order = draw(st.permutations(range(len(shape))))
    strides = [0] * len(shape)
    reach = 1
    for d in order:
        pad = draw(st.integers(0, 2))
        sign = draw(st.sampled_from([1, -1]))
        strides[d] = sign * (reach + pad)
        reach = (reach + pad) * max(shape[d], 1)
    return strides


def gemm_reference(A, B, C0, alpha, beta, dtype):
    """(reference, tolerance) of C = alpha*A@B + beta*C0 for (batch, ...) float operands."""
    a64, b64 = A.astype(np.float64), B.astype(np.float64)
    k = A.shape[-1]
    prod = a64 @ b64
    scale = abs(alpha) * (np.abs(a64) @ np.abs(b64))
    ref = alpha * prod
    if beta != 0:
        c64 = C0.astype(np.float64)
        ref = ref + beta * c64
        scale = scale + abs(beta) * np.abs(c64)
    eps_out, eps_acc = EPS[dtype]
    return ref, 2 * eps_out * np.abs(ref) + (k + 4) * eps_acc * scale + SUBNORMAL[dtype]


def run_gemm_strided(backend, rng, m, n, k, batch, sa, sb, sc, qs, alpha, beta, dtype):
    """Run gemm_strided on NaN-framed operands and check values and untouched memory."""
    A = Strided(backend, rng, (batch, m, k), (qs[0], *sa), dtype)
    B = Strided(backend, rng, (batch, k, n), (qs[1], *sb), dtype)
    C = Strided(backend, rng, (batch, m, n), (qs[2], *sc), dtype, values=beta != 0)
    ops_gemm.gemm_strided(backend, m, n, k, alpha, A.ptr, sa, B.ptr, sb, beta, C.ptr, sc,
                          batch, qs, dtype=dtype)
    flat = C.download()
    got = flat[C.index].astype(np.float64)
    ref, tol = gemm_reference(A.mats, B.mats, C.mats, alpha, beta, dtype)
    err = np.abs(got - ref)
    assert np.all(np.isfinite(got)), "NaN leaked into C"
    assert np.all(err <= tol), f"max error {err.max()}"
    untouched = np.ones(flat.shape, bool)
    untouched[C.index] = False
    assert np.all(np.isnan(flat[untouched])), "gemm wrote outside C"
    for x in (A, B, C):
        x.free()


# ---- gemm_strided: backend ---------------------------------------------------------------------
STRIDE = st.integers(-9, 9)


@FEW
@given(data=st.data(), dtype=st.sampled_from(["float32", "float16", "float64"]),
       alpha=st.sampled_from([1.0, -0.5]), beta=st.sampled_from([0.0, 0.5]))
def test_gemm_strided_property(backend, data, dtype, alpha, beta):
    """Random sizes and strides of any sign (0 for A and B) against NumPy; C untouched outside."""
    m, n, k = (data.draw(st.integers(1, 40)) for _ in range(3))
    batch = data.draw(st.integers(1, 3))
    sa = (data.draw(STRIDE), data.draw(STRIDE))
    sb = (data.draw(STRIDE), data.draw(STRIDE))
    sc_full = distinct_strides(data.draw, (batch, m, n))
    qs = (data.draw(st.integers(-60, 60)), data.draw(st.integers(-60, 60)), sc_full[0])
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    run_gemm_strided(backend, rng, m, n, k, batch, sa, sb, tuple(sc_full[1:]), qs, alpha, beta, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("sa,sb,sc", [
    ((-40, 1), (30, 1), (30, 1)),      # a[::-1]: negative row stride
    ((-2, 80), (1, -60), (-1, 40)),    # steps in both dims, negative
    ((0, 1), (1, 0), (1, 37)),         # broadcast rows of A and columns of B
    ((3, -120), (-2, 70), (40, 1)),    # strides in both dims of every operand
])
def test_gemm_strided_layouts(backend, dtype, sa, sb, sc):
    rng = np.random.default_rng(7)
    run_gemm_strided(backend, rng, 37, 29, 35, 2, sa, sb, sc, (5000, -4000, 2000), 1.25, -0.5, dtype)


def test_gemm_strided_general_kernel_only_when_needed(backend):
    """BLAS-fitting strides (either orientation of C) run the unchanged 'gemm' kernel with the
    same parameters as gemm_strided_batched; others run 'gemm_strided'."""
    rng = np.random.default_rng(2)
    m, n, k = 19, 23, 17
    cases = [  # (a strides, b strides, c strides, equivalent gemm_strided_batched call or None)
        ((1, m), (1, k), (1, m), ("N", "N", m, n, "A", m, "B", k, "C", m)),            # column-major
        ((k, 1), (1, k), (1, m), ("T", "N", m, n, "A", k, "B", k, "C", m)),            # A^T stored
        ((k, 1), (n, 1), (n, 1), ("N", "N", n, m, "B", n, "A", k, "C", n)),            # row-major: swapped
        ((-k, 1), (n, 1), (n, 1), None),                                                # a[::-1]
        ((2 * k, 2), (n, 1), (n, 1), None),                                             # a[::2, ::2]
    ]
    for sa, sb, sc, blas in cases:
        A = Strided(backend, rng, (m, k), sa, "float32")
        B = Strided(backend, rng, (k, n), sb, "float32")
        C = Strided(backend, rng, (m, n), sc, "float32")
        with DispatchSpy(backend.context) as spy:
            ops_gemm.gemm_strided(backend, m, n, k, 1.0, A.ptr, sa, B.ptr, sb, 0.5, C.ptr, sc)
        got_calls = spy.calls
        if blas is None:
            assert [c[0] for c in got_calls] == ["gemm_strided"]
        else:
            ta, tb, mm, nn, pa, lda, pb, ldb, pc, ldc = blas
            ptrs = {"A": A.ptr, "B": B.ptr, "C": C.ptr}
            with DispatchSpy(backend.context) as spy:
                ops_gemm.gemm_strided_batched(backend, ta, tb, mm, nn, k, 1.0, ptrs[pa], lda, 0,
                                              ptrs[pb], ldb, 0, 0.5, ptrs[pc], ldc, 0, 1)
            expected = spy.calls
            assert [c[0] for c in got_calls] == ["gemm"]
            assert got_calls == expected  # same kernel, defines and parameters
        for x in (A, B, C):
            x.free()


@pytest.mark.parametrize("limit_bytes", [1024, 600])
def test_gemm_strided_split_over_windows(backend, monkeypatch, limit_bytes):
    """Tiny window limit: negative-stride operands are split on batch, m, n and k."""
    monkeypatch.setattr(backend, "max_window_bytes", lambda: limit_bytes)
    ctx = backend.context
    before = ctx.stats["dispatches"]
    rng = np.random.default_rng(4)
    run_gemm_strided(backend, rng, 21, 18, 26, 3, (-3, 70), (-1, -40), (-1, 30), (-2000, 1500, -900),
                     1.5, 0.5, "float32")
    assert ctx.stats["dispatches"] - before > 6


def test_plan_strided_blocks_negative_strides():
    """Spans measured from the lowest to the highest offset fit the limit, whatever the signs."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        m, n, k, batch = (int(v) for v in rng.integers(1, 300, 4))
        strides = [tuple(int(v) for v in rng.integers(-500, 500, 3)) for _ in range(3)]
        limit = int(rng.integers(600, 1 << 20))
        try:
            blocks = ops_gemm.plan_strided_blocks(m, n, k, batch, *strides, limit=limit)
        except ValueError:
            continue  # a single element step exceeds the limit
        dims = {"A": (("batch", strides[0][0]), ("m", strides[0][1]), ("k", strides[0][2])),
                "B": (("batch", strides[1][0]), ("k", strides[1][1]), ("n", strides[1][2])),
                "C": (("batch", strides[2][0]), ("m", strides[2][1]), ("n", strides[2][2]))}
        for terms in dims.values():
            lo, hi = ops_gemm.strided_span([(blocks[d], s) for d, s in terms])
            assert hi - lo + 1 <= limit
        assert all(1 <= blocks[d] <= v for d, v in (("m", m), ("n", n), ("k", k), ("batch", batch)))


def test_gemm_strided_k_zero_and_alpha_zero(backend):
    """k == 0 never touches A or B (freed pointers accepted); alpha == 0 scales C only."""
    rng = np.random.default_rng(1)
    C = Strided(backend, rng, (1, 6, 5), (0, -1, 12), "float32")
    dead = backend.alloc(4)
    backend.free(dead)
    ops_gemm.gemm_strided(backend, 6, 5, 0, 1.0, dead, (1, 1), dead, (1, 1), 2.0, C.ptr, (-1, 12))
    got = C.download()[C.index]
    np.testing.assert_array_equal(got, 2.0 * C.mats)
    A = Strided(backend, rng, (1, 6, 3), (0, 3, -1), "float32")
    A.storage[A.index] = np.nan  # alpha == 0: A must not be read
    backend.copy_htod(A.base, A.storage)
    ops_gemm.gemm_strided(backend, 6, 5, 3, 0.0, A.ptr, (3, -1), A.ptr, (1, 1), 0.5, C.ptr, (-1, 12))
    np.testing.assert_array_equal(C.download()[C.index], C.mats)
    for x in (A, C):
        x.free()


def _expect_invalid(backend, fn, *args, **kwargs):
    before = backend.context.stats["dispatches"]
    with pytest.raises(BackendError) as exc:
        fn(backend, *args, **kwargs)
    assert exc.value.kind is BackendErrorKind.INVALID_ARGUMENT, exc.value
    assert backend.context.stats["dispatches"] == before
    return exc.value


def test_gemm_strided_errors(backend, monkeypatch):
    p = backend.alloc(64 * 4)
    q = backend.alloc(64 * 4)
    try:
        ok = dict(a=p, a_strides=(4, 1), b=p, b_strides=(4, 1), c=q, c_strides=(4, 1))

        def call(**over):
            args = {**ok, **over}
            return _expect_invalid(backend, ops_gemm.gemm_strided, 4, 4, 4, 1.0, args["a"],
                                   args["a_strides"], args["b"], args["b_strides"], 0.0, args["c"],
                                   args["c_strides"], *over.get("batch", ()))

        for bad in [(1,), (1, 2, 3), "ab", (1.0, 2), (True, 1), None]:
            call(a_strides=bad)
            call(c_strides=bad)
        assert "share memory" in str(call(c_strides=(1, 1)))       # aliasing C
        assert "share memory" in str(call(c_strides=(0, 1)))
        assert "past the end" in str(call(a=p + 4 * 60))
        call(a_strides=(-4, 1))                                      # reaches before the start
        call(c=q + 2)                                                # misaligned
        call(a="ptr")
        call(batch=(2, (0, 0, 1)))                                   # C batches alias
        call(batch=(-1,))
        call(batch=(2, (0, 0)))
        _expect_invalid(backend, ops_gemm.gemm_strided, -1, 4, 4, 1.0, p, (4, 1), p, (4, 1), 0.0, q, (4, 1))
        _expect_invalid(backend, ops_gemm.gemm_strided, 4, 4, 4, "1", p, (4, 1), p, (4, 1), 0.0, q, (4, 1))
        _expect_invalid(backend, ops_gemm.gemm_strided, 4, 4, 4, 1.0, p, (4, 1), p, (4, 1), 0.0, q, (4, 1),
                        dtype="int32")
        monkeypatch.setattr(backend, "supports", lambda feature: feature is None)
        with pytest.raises(BackendError) as exc:
            ops_gemm.gemm_strided(backend, 2, 2, 2, 1.0, p, (2, -1), p, (2, 1), 0.0, q, (2, 1), dtype="float64")
        assert exc.value.kind is BackendErrorKind.UNSUPPORTED
    finally:
        monkeypatch.undo()
        backend.free(p)
        backend.free(q)


def test_existing_gemm_variants_render_unchanged():
    """gemm.wgsl and gemm_core.wgsl hold no trace of the strided variant: it is its own template
    (gemm_strided.wgsl) sharing the core, so every existing gemm/conv2d variant renders as before."""
    for name in ("gemm", "gemm_core", "conv2d"):
        assert "gemm_strided" not in kernels.template_source(name)
        assert "A_M_FAST" not in kernels.template_source(name)
    assert kernels.placeholders("gemm") == frozenset(
        {"ENABLE", "T", "ACC", "BM", "BN", "BK", "TM", "TN", "TRANS_A", "TRANS_B", "SPLIT_K", "C_T", "TRI",
         "STAGING"})
    assert kernels.placeholders("gemm_strided") == frozenset(
        {"ENABLE", "T", "ACC", "BM", "BN", "BK", "TM", "TN", "A_M_FAST", "B_K_FAST", "SPLIT_K", "C_T",
         "STAGING"})


# ---- matmul on views: frontend -------------------------------------------------------------------
@st.composite
def view_pair(draw, shape, dtype):
    """(numpy view, device view) of ``shape``: a slice with random steps (any sign) of a larger
    stored array, sometimes a transpose of the stored matrices, sometimes a broadcast of a size-1
    dim (stride 0)."""
    ndim = len(shape)
    transposed = ndim >= 2 and draw(st.booleans())
    bcast = [d for d in range(ndim) if draw(st.integers(0, 4)) == 0]
    want = [1 if d in bcast else n for d, n in enumerate(shape)]
    steps = [draw(st.sampled_from([1, -1, 2, -2, 3, -3])) for _ in shape]
    stored = [abs(s) * max(n, 1) + draw(st.integers(0, 2)) for s, n in zip(steps, want)]
    if transposed:
        stored[-1], stored[-2] = stored[-2], stored[-1]
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if dtype.kind in "iu":
        host = rng.integers(0 if dtype.kind == "u" else -2, 3, size=stored).astype(dtype)
    else:
        host = rng.uniform(-2, 2, size=stored).astype(dtype)
    dev = gpu(host)
    if transposed:
        host, dev = np.swapaxes(host, -1, -2), dev.mT
    idx = []
    for s, n, full in zip(steps, want, host.shape):
        start = draw(st.integers(0, full - abs(s) * (max(n, 1) - 1) - 1))
        if s < 0:
            start = full - 1 - start
        stop = start + s * n
        idx.append(slice(start, stop if stop >= 0 else None, s))
    hv, dv = host[tuple(idx)], dev[tuple(idx)]
    assert hv.shape == tuple(want), (hv.shape, want)
    if bcast:
        hv, dv = np.broadcast_to(hv, shape), gt.broadcast_to(dv, tuple(shape))
    return hv, dv


def _matmul_check(got, a, b, dtype):
    ref, tol = gemm_reference(a, b, None, 1.0, 0.0, dtype)
    g = got.get().astype(np.float64)
    assert g.shape == ref.shape and got.dtype == getattr(gt, dtype)
    assert np.all(np.abs(g - ref) <= tol), f"max error {np.abs(g - ref).max()}"


@FEW
@given(data=st.data(), dtype=st.sampled_from(["float32", "float16", "float64"]))
def test_matmul_views_no_copy(backend, data, dtype):
    """matmul of random views (negative steps, steps in both matrix dims, transposes, broadcasts,
    batch dims) equals NumPy's, and allocates only its result."""
    m, k, n = (data.draw(st.integers(1, 24)) for _ in range(3))
    batch = data.draw(st.sampled_from([(), (2,), (3, 2)]))
    b_batch = data.draw(st.sampled_from([batch, batch[1:]]))
    a, x1 = data.draw(view_pair(batch + (m, k), np.dtype(dtype)))
    b, x2 = data.draw(view_pair(b_batch + (k, n), np.dtype(dtype)))
    with AllocCounter(backend) as counter:
        got = x1 @ x2
    assert counter.sizes == [got.size * got.dtype.itemsize], counter.sizes
    _matmul_check(got, a, b, dtype)


def test_matmul_named_views_no_copy(backend):
    """The issue's examples: a[::-1, ::2] @ b, negative batch steps, x.mT[::-1], broadcast rows."""
    rng = np.random.default_rng(5)
    A = rng.uniform(-1, 1, (4, 30, 40)).astype(np.float32)
    B = rng.uniform(-1, 1, (40, 20)).astype(np.float32)
    ga, gb = gpu(A), gpu(B)
    cases = [
        (lambda x: x[0, ::-1, ::2], lambda y: y[::2]),
        (lambda x: x[::-1, ::3, ::-2], lambda y: y[::-2]),
        (lambda x: x[1, ::-1], lambda y: y[::-1, ::-1]),
        (lambda x: x[2, :20, :].T[::-1], lambda y: y[::2].T[::-1]),
    ]
    for fa, fb in cases:
        xa, xb = fa(ga), fb(gb)
        with AllocCounter(backend) as counter:
            got = xa @ xb
        assert counter.sizes == [got.size * 4]
        _matmul_check(got, fa(A), fb(B), "float32")
    # 1-D operands and a broadcast (stride-0) matrix dim
    v = gpu(rng.uniform(-1, 1, 50).astype(np.float32))
    with AllocCounter(backend) as counter:
        got = ga[0, ::-1, ::-1][:, :25] @ v[::-2]
    assert counter.sizes == [got.size * 4]
    _matmul_check(got, A[0, ::-1, ::-1][:, :25], v.get()[::-2], "float32")
    row = gpu(rng.uniform(-1, 1, (1, 40)).astype(np.float32))
    got = gt.broadcast_to(row, (7, 40)) @ gb
    _matmul_check(got, np.broadcast_to(row.get(), (7, 40)), B, "float32")


def test_matmul_mixed_float_dtypes_convert_only(backend):
    """Mixed float dtypes: the lower-precision operand is converted (dtype promotion, one astype
    copy); the other view is still read in place."""
    rng = np.random.default_rng(6)
    a = rng.uniform(-1, 1, (20, 30)).astype(np.float32)
    b = rng.uniform(-1, 1, (30, 10)).astype(np.float64)
    x1, x2 = gpu(a)[::-1, ::-1], gpu(b)[::-1, ::2]
    with AllocCounter(backend) as counter:
        got = x1 @ x2
    assert sorted(counter.sizes) == sorted([20 * 30 * 8, 20 * 5 * 8]), counter.sizes
    _matmul_check(got, a[::-1, ::-1].astype(np.float64), b[::-1, ::2], "float64")


def test_matmul_view_larger_than_one_binding(backend):
    """A negative-step view of an operand larger than one binding window (128 MiB on lavapipe)."""
    limit = backend.max_window_bytes()
    m = 8192
    k = limit // (4 * m) + 4
    ramp = gt.reshape(gt.astype(gt.arange(m * k, dtype=gt.int32) % 13, gt.float32), (m, k))
    assert ramp.size * 4 > limit
    rng = np.random.default_rng(8)
    b = rng.integers(-3, 4, (k, 2)).astype(np.float32)
    got = (ramp[::-1] @ gpu(b)).get()
    # row i of ramp is (i*k + p) % 13: 13 distinct rows, one per residue of i*k
    table = np.stack([((r + np.arange(k)) % 13).astype(np.float64) @ b for r in range(13)])
    ref = table[(np.arange(m, dtype=np.int64) * k) % 13][::-1]
    np.testing.assert_array_equal(got, ref)  # small integers: exact in float32


# ---- scans: backend -------------------------------------------------------------------------------
def test_choose_mode():
    rows = [ops_scan.RowDim(100, 1, 1)]
    assert ops_scan.choose_mode(5000, 100, rows) == ops_scan.MODE_COLUMNS   # axis 0 of (5000, 100)
    assert ops_scan.choose_mode(5000, 1, [ops_scan.RowDim(100, 5000, 5000)]) == ops_scan.MODE_ROWS
    assert ops_scan.choose_mode(10, 1, [ops_scan.RowDim(100, 10, 10)]) == ops_scan.MODE_COLUMNS
    assert ops_scan.choose_mode(10**6, 3, rows) == ops_scan.MODE_ROWS      # near stride
    assert ops_scan.choose_mode(7, 1, []) == ops_scan.MODE_ROWS
    assert ops_scan.chunk_length(100, 1) == 100
    assert ops_scan.chunk_length(10**6, 8) >= scan_plan.MIN_CHUNK
    assert ops_scan.chunk_length(10**6, scan_plan.TARGET_INVOCATIONS) == 10**6
    step = ops_scan.VECTOR_STEP
    assert ops_scan.vector_unit(10, 1) == step
    assert ops_scan.vector_unit(64 << 20, 1) % step == 0
    assert -(-(64 << 20) // ops_scan.vector_unit(64 << 20, 1)) <= scan_plan.TARGET_UNITS
    assert ops_scan.vector_unit(5000, 10**5) >= 5000  # many rows: one unit per row


def test_merge_rows():
    dims = ops_scan.merge_rows([4, 1, 5, 6], [30, 99, 6, 1], [30, 7, 6, 1])
    assert [(d.size, d.src, d.dst) for d in dims] == [(120, 1, 1)]
    dims = ops_scan.merge_rows([4, 5], [-5, 1], [1, 4])
    assert [(d.size, d.src, d.dst) for d in dims] == [(4, -5, 1), (5, 1, 4)]


def _np_scan(op, a, axis, dtype):
    fn = np.cumulative_sum if op == "sum" else np.cumulative_prod
    return fn(a, axis=axis, dtype=dtype)


def run_scan_strided(backend, rng, op, shape, src_strides, axis, dst_strides, src_dtype, dst_dtype,
                     ints=False, src_lead=0, dst_lead=0):
    """Scan a random operand into a NaN (integers: 77) framed dst and check the result against
    NumPy and the frame; ``*_lead``: elements in front of the operand in its allocation (an
    allocation is 256-byte aligned, so these set the operand's alignment)."""
    src = Strided(backend, rng, shape, src_strides, src_dtype, values=False, lead=src_lead)
    if ints or np.dtype(src_dtype).kind in "iu":
        src.storage[src.index] = rng.integers(-3, 4, size=shape).astype(src_dtype)
    else:
        src.storage[src.index] = rng.uniform(0.5, 1.5, size=shape).astype(src_dtype)
    backend.copy_htod(src.base, src.storage)
    src.mats = src.storage[src.index]
    dst = Strided(backend, rng, shape, dst_strides, dst_dtype, values=False, lead=dst_lead)
    if np.dtype(dst_dtype).kind in "iu":  # integer frames: a marker instead of NaN
        dst.storage[:] = 77
        backend.copy_htod(dst.base, dst.storage)
    ops_scan.scan_strided(backend, op, src.ptr, src_dtype, shape, src_strides, axis, dst.ptr,
                          dst_dtype, dst_strides)
    flat = dst.download()
    got = flat[dst.index]
    dd = np.dtype(dst_dtype)
    if dd.kind == "f":
        ref = _np_scan(op, src.mats.astype(np.float64), axis, None)
        scale = np.abs(_np_scan(op, np.abs(src.mats.astype(np.float64)), axis, None))
        eps_out = EPS[dd.name][0]
        tol = 2 * eps_out * np.abs(ref) + shape[axis] * 2.0**-23 * scale + SUBNORMAL[dd.name]
        assert np.all(np.abs(got.astype(np.float64) - ref) <= tol)
    else:
        np.testing.assert_array_equal(got, _np_scan(op, src.mats, axis, dd))
    untouched = np.ones(flat.shape, bool)
    untouched[dst.index] = False
    if dd.kind == "f":
        assert np.all(np.isnan(flat[untouched]))
    else:
        assert np.all(flat[untouched] == 77)
    src.free()
    dst.free()


@FEW
@given(data=st.data(),
       types=st.sampled_from([("float32", "float32"), ("float64", "float64"), ("int32", "int64"),
                              ("int8", "int16"), ("float16", "float16"), ("uint8", "uint32"),
                              ("float32", "float16")]),
       op=st.sampled_from(["sum", "prod"]))
def test_scan_strided_property(backend, data, types, op):
    """Random shapes, axes and strides of any sign (0 in src) into distinct dst strides."""
    ndim = data.draw(st.integers(1, 4))
    shape = tuple(data.draw(st.integers(1, 7)) for _ in range(ndim))
    axis = data.draw(st.integers(0, ndim - 1))
    long_axis = data.draw(st.sampled_from([None, 70, 300]))
    if long_axis and op == "sum":
        shape = shape[:axis] + (long_axis,) + shape[axis + 1:]
    src_strides = tuple(data.draw(st.integers(-12, 12)) for _ in shape)
    dst_strides = tuple(distinct_strides(data.draw, shape))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    run_scan_strided(backend, rng, op, shape, src_strides, axis, dst_strides, *types)


@pytest.mark.parametrize("limit_bytes", [4096, 1000])
def test_scan_strided_split_over_windows(backend, monkeypatch, limit_bytes):
    """Tiny window limit: rows, units and (when a unit itself is too long) the unit length split."""
    monkeypatch.setattr(backend, "max_window_bytes", lambda: limit_bytes)
    ctx = backend.context
    rng = np.random.default_rng(3)
    before = ctx.stats["dispatches"]
    run_scan_strided(backend, rng, "sum", (40, 300), (-300, -1), 1, (1, 40), "float32", "float32")
    run_scan_strided(backend, rng, "sum", (300, 40), (1, -300), 0, (-40, 1), "float32", "float32")
    run_scan_strided(backend, rng, "sum", (2100, 3), (3, 1), 0, (3, 1), "int32", "int64")
    assert ctx.stats["dispatches"] - before > 10


def test_scan_columns_mode_hierarchy(backend, monkeypatch):
    """Short units (several levels of totals) in the columns mode, positive and negative strides."""
    monkeypatch.setattr(scan_plan, "TARGET_INVOCATIONS", 8)
    monkeypatch.setattr(scan_plan, "MAX_SERIAL", 4)
    monkeypatch.setattr(scan_plan, "MIN_CHUNK", 3)
    rng = np.random.default_rng(9)
    for op, types in (("sum", ("float32", "float32")), ("prod", ("int32", "int64")),
                      ("sum", ("float64", "float64")), ("sum", ("int8", "int8"))):
        run_scan_strided(backend, rng, op, (200, 5), (-5, 1), 0, (5, 1), *types)
        run_scan_strided(backend, rng, op, (3, 150, 4), (1, -12, 3), 1, (600, 4, 1), *types)


def test_scan_rows_mode_multi_level(backend):
    """Rows longer than one unit (1024) and than 1024 units: reduce-then-scan over two levels."""
    rng = np.random.default_rng(10)
    run_scan_strided(backend, rng, "sum", (1_050_000,), (-1,), 0, (1,), "int32", "int32", ints=True)
    run_scan_strided(backend, rng, "sum", (2, 3000), (1, -2), 1, (3000, 1), "float32", "float32")


def _scan_calls(spy):
    return [c[1] for c in spy.calls if c[0] == "scan"]


# lengths around the vector mode's boundaries: whole vectors, steps (4096) and units
VECTOR_LENGTHS = [1, 3, 4, 5, 1023, 4095, 4096, 4097, 8191, 8193, 3 * 4096 + 2]


@pytest.mark.parametrize("n", VECTOR_LENGTHS)
@pytest.mark.parametrize("src_lead,dst_lead", [(0, 0), (1, 0), (2, 2), (3, 1), (0, 3)])
@pytest.mark.parametrize("target", [1, 2048])
def test_scan_vector_mode_lengths_and_offsets(backend, monkeypatch, n, src_lead, dst_lead, target):
    """A contiguous row read as vectors from any alignment (the head skipped), any length, in
    units of one step or (TARGET_UNITS 1: one unit per row) of several; dst stored as vectors
    where it is aligned like src, element by element otherwise; nothing outside dst is written
    (NaN frame)."""
    monkeypatch.setattr(scan_plan, "TARGET_UNITS", target)
    rng = np.random.default_rng(n + 7 * src_lead + dst_lead)
    with DispatchSpy(backend.context) as spy:
        run_scan_strided(backend, rng, "sum", (n,), (1,), 0, (1,), "float32", "float32",
                         src_lead=src_lead, dst_lead=dst_lead)
    calls = _scan_calls(spy)
    assert all(d["MODE"] == ops_scan.MODE_VECTOR for d in calls)
    assert all(d["VEC_STORE"] == ("true" if src_lead == dst_lead else "false")
               for d in calls if d["PHASE"] == 1)
    one_unit = target == 1 or n + src_lead <= ops_scan.VECTOR_STEP
    assert len(calls) == (1 if one_unit else 2)  # carries reduced in the scan phase


@pytest.mark.parametrize("n", [5, 4097, 3 * 4096 + 2])
def test_scan_vector_mode_prefetch(backend, monkeypatch, n):
    """VECTOR_PREFETCH (the next step's loads issued before a step's workgroup scan) gives the
    same results, units of several steps included."""
    monkeypatch.setattr(scan_plan, "VECTOR_PREFETCH", True)
    monkeypatch.setattr(scan_plan, "TARGET_UNITS", 2)
    rng = np.random.default_rng(n)
    for src_lead, dst_lead in ((0, 0), (1, 1), (2, 0)):
        with DispatchSpy(backend.context) as spy:
            run_scan_strided(backend, rng, "sum", (n,), (1,), 0, (1,), "float32", "float32",
                             src_lead=src_lead, dst_lead=dst_lead)
        assert all(d["PREFETCH"] == "true" for d in _scan_calls(spy) if d["PHASE"] == 1)


@pytest.mark.parametrize("types", [pytest.param(("float64", "float64"), marks=pytest.mark.requires("shader-f64")),
                                   ("int32", "int64"), ("uint32", "uint32"), ("int64", "int64"),
                                   ("float32", "float16"), ("int32", "int8")])
@pytest.mark.parametrize("op", ["sum", "prod"])
def test_scan_vector_mode_dtypes_and_rows(backend, types, op):
    """Vector loads of every unpacked type (32-byte vectors for 64-bit ones), conversions on load
    and store, packed dst types (element stores), several rows with row strides of either sign,
    an unaligned head. int64/uint64 emulated as two 32-bit words (no ``shader-int64``) have no
    vectors of them: their scans run the other modes (rows; columns for the totals), with the
    same results."""
    rng = np.random.default_rng(len(types[0]) + len(op))
    emulated = any(storage_type(t).emulated for t in types)
    n = 2 * ops_scan.VECTOR_STEP + 5 if op == "sum" else 101
    for shape, src_strides, dst_strides, lead in (((n,), (1,), (1,), 0),
                                                  ((3, n), (-(n + 7), 1), (n + 3, 1), 1),
                                                  ((2, 2, n), (2 * (n + 3), n + 3, 1), (n, -2 * n, 1), 2)):
        with DispatchSpy(backend.context) as spy:
            run_scan_strided(backend, rng, op, shape, src_strides, len(shape) - 1, dst_strides, *types,
                             src_lead=lead, dst_lead=lead)
        modes = {d["MODE"] for d in _scan_calls(spy)}
        if emulated:
            assert modes and modes <= {ops_scan.MODE_ROWS, ops_scan.MODE_COLUMNS}, modes
        else:
            assert modes == {ops_scan.MODE_VECTOR}


@pytest.mark.parametrize("wide", [pytest.param(False, id="int32"),
                                  pytest.param(True, id="int64", marks=pytest.mark.requires("shader-int64"))])
def test_scan_vector_mode_units_and_hierarchy(backend, monkeypatch, wide):
    """Many short units (reduced carries), then more units than MAX_REDUCED_UNITS: the totals
    scanned by a scan of their own (the vector mode again for a single row). ``wide``: the
    rows accumulate in int64 (vectors of int64: native int64 only)."""
    rng = np.random.default_rng(13)
    monkeypatch.setattr(scan_plan, "TARGET_UNITS", 1 << 20)  # units of one step
    n = 37 * ops_scan.VECTOR_STEP + 11
    with DispatchSpy(backend.context) as spy:
        run_scan_strided(backend, rng, "sum", (2, n), (n + 1, 1), 1, (n + 1, 1), "float32", "float32",
                         src_lead=3, dst_lead=3)
    calls = _scan_calls(spy)
    assert [d["CARRY"] for d in calls] == [ops_scan.CARRY_NONE, ops_scan.CARRY_REDUCED]
    monkeypatch.setattr(scan_plan, "MAX_REDUCED_UNITS", 4)
    for shape, strides, types in (((n,), (1,), ("float32", "float32")),
                                  ((2, n), (n + 1, 1), ("int32", "int64" if wide else "int32"))):
        with DispatchSpy(backend.context) as spy:
            run_scan_strided(backend, rng, "sum", shape, strides, len(shape) - 1, strides, *types,
                             src_lead=3, dst_lead=3)
        calls = _scan_calls(spy)
        assert len(calls) == 3 and calls[-1]["CARRY"] == ops_scan.CARRY_SCANNED
        assert calls[1]["MODE"] == (ops_scan.MODE_VECTOR if len(shape) == 1 else ops_scan.MODE_COLUMNS)


@pytest.mark.parametrize("limit_bytes", [20000, 4096, 1000])
def test_scan_vector_mode_split_over_windows(backend, monkeypatch, limit_bytes):
    """Units cut to fit a small window and dispatched in blocks of units (the reduced carries
    read the totals from unit 0), from an unaligned head; totals of a row that do not fit one
    window are scanned instead."""
    monkeypatch.setattr(backend, "max_window_bytes", lambda: limit_bytes)
    rng = np.random.default_rng(14)
    with DispatchSpy(backend.context) as spy:
        run_scan_strided(backend, rng, "sum", (61001,), (1,), 0, (1,), "float32", "float32",
                         src_lead=1, dst_lead=1)
        run_scan_strided(backend, rng, "sum", (3, 7000), (7004, 1), 1, (-7000, 1), "float64", "float64",
                         src_lead=2)
    calls = _scan_calls(spy)
    assert ops_scan.MODE_VECTOR in {d["MODE"] for d in calls} and len(calls) > 10
    carries = {d["CARRY"] for d in calls if d["MODE"] == ops_scan.MODE_VECTOR and d["PHASE"] == 1}
    assert carries == ({ops_scan.CARRY_REDUCED, ops_scan.CARRY_SCANNED} if limit_bytes == 1000
                       else {ops_scan.CARRY_REDUCED})


def test_scan_vector_mode_deterministic(backend):
    """float32 results are the same bit for bit from run to run (every combine in a fixed order),
    and at least as accurate as a float32 sum of the magnitudes allows."""
    rng = np.random.default_rng(15)
    n = 300_001
    a = rng.uniform(0, 1, n).astype(np.float32)
    x = gpu(a)
    first = gt.cumulative_sum(x).get()
    for _ in range(2):
        np.testing.assert_array_equal(gt.cumulative_sum(x).get(), first)
    ref = np.cumsum(a.astype(np.float64))
    assert np.max(np.abs(first - ref) / ref) < 2e-6


def test_scan_strided_in_place_and_overlap(backend):
    rng = np.random.default_rng(11)
    x = Strided(backend, rng, (6, 2000), (-2000, 1), "float32")
    ops_scan.scan_strided(backend, "sum", x.ptr, "float32", (6, 2000), (-2000, 1), 1, x.ptr,
                          "float32", (-2000, 1))
    got = x.download()[x.index].astype(np.float64)
    ref = np.cumsum(x.mats.astype(np.float64), axis=1)
    np.testing.assert_allclose(got, ref, **tol("float32", "sum_rows"))
    # the same memory with another layout (shifted by one element) is refused
    _expect_invalid(backend, ops_scan.scan_strided, "sum", x.ptr, "float32", (6, 2000), (-2000, 1), 1,
                    x.ptr + 4, "float32", (-2000, 1))
    x.free()


def test_scan_strided_errors(backend):
    p = backend.alloc(256)
    q = backend.alloc(256)
    try:
        good = ("sum", p, "float32", (4, 4), (4, 1), 1, q, "float32", (4, 1))

        def bad(index, value, **kw):
            args = list(good)
            args[index] = value
            return _expect_invalid(backend, ops_scan.scan_strided, *args, **kw)

        bad(0, "max")
        bad(2, "float128")
        bad(7, "bool")
        bad(3, (4, -1))
        bad(3, (4, 2.0))
        bad(4, (4,))
        bad(8, (4, 1, 1))
        bad(5, 2)
        bad(5, -3)
        bad(5, True)
        assert "share memory" in str(bad(8, (1, 1)))
        assert "share memory" in str(bad(8, (0, 1)))
        assert "past the end" in str(bad(1, p + 200))
        bad(4, (-4, 1))                        # reaches before the start
        bad(6, q + 2)                          # misaligned
        bad(6, "ptr")
        bad(6, p + 4)                          # overlaps src with another layout
        _expect_invalid(backend, ops_scan.scan_strided, *good, acc_dtype="float16")
        before = backend.context.stats["dispatches"]
        ops_scan.scan_strided(backend, "sum", p, "float32", (0, 4), (4, 1), 1, q, "float32", (4, 1))
        assert backend.context.stats["dispatches"] == before  # empty: nothing recorded
    finally:
        backend.free(p)
        backend.free(q)


# ---- cumulative_sum / cumulative_prod on views: frontend ------------------------------------------
SCAN_DTYPES = [("float32", None), ("int32", None), ("int64", None), ("float16", None),
               ("int8", "int8"), ("uint8", None), ("int16", "uint16"), ("uint64", None)]
SCAN_DTYPES_F64 = [("float64", None), ("float64", "float32"), ("float32", "float64")]


def _scan_result_dtype(dtype: str) -> np.dtype:
    """The spec's cumulative_sum/prod dtype of ``dtype`` data: an integer narrower than the
    device's default integer (int32 without shader-int64) widens to it (unsigned: the unsigned
    of its width), others keep theirs."""
    dt = np.dtype(dtype)
    default = np.dtype(gt.__array_namespace_info__().default_dtypes()["integral"].name)
    if dt.kind in "iu" and dt.itemsize < default.itemsize:
        return np.dtype(f"{'int' if dt.kind == 'i' else 'uint'}{8 * default.itemsize}")
    return dt


@pytest.mark.parametrize("dtypes", [pytest.param(SCAN_DTYPES, id="no-f64"),
                                    pytest.param(SCAN_DTYPES_F64, id="f64", marks=pytest.mark.requires("shader-f64"))])
@FEW
@given(data=st.data(), op=st.sampled_from(["sum", "prod"]), include=st.booleans())
def test_cumulative_views_every_axis_no_copy(backend, dtypes, data, op, include):
    """cumulative_sum/prod of random views along every axis equals NumPy's and allocates only
    its result (these axes are short enough to be one scan unit)."""
    dtype, arg = data.draw(st.sampled_from(dtypes))
    ndim = data.draw(st.integers(1, 4))
    shape = tuple(data.draw(st.integers(0 if ndim > 1 else 1, 6)) for _ in range(ndim))
    if op == "prod":
        shape = tuple(min(n, 4) for n in shape)
    host, x = data.draw(view_pair(shape, np.dtype(dtype)))
    out_dtype = None if arg is None else getattr(gt, arg)
    fn = gt.cumulative_sum if op == "sum" else gt.cumulative_prod
    for axis in range(ndim):
        with AllocCounter(backend) as counter:
            got = fn(x, axis=axis, dtype=out_dtype, include_initial=include)
        expected = [got.size * got.dtype.itemsize] if got.size else counter.sizes[:1]
        assert counter.sizes == expected, counter.sizes
        expect_dtype = np.dtype(arg) if arg else _scan_result_dtype(dtype)
        assert got.dtype == getattr(gt, expect_dtype.name)
        nf = np.cumulative_sum if op == "sum" else np.cumulative_prod
        g = got.get()
        if expect_dtype.kind == "f":
            ref = nf(np.asarray(host).astype(np.float64), axis=axis, include_initial=include)
            scale = np.abs(nf(np.abs(np.asarray(host).astype(np.float64)), axis=axis, include_initial=include))
            tol = (2 * EPS[expect_dtype.name][0] * np.abs(ref) + 8 * 2.0**-23 * scale
                   + SUBNORMAL[expect_dtype.name])
            assert g.shape == ref.shape
            assert np.all(np.abs(g.astype(np.float64) - ref) <= tol)
        else:
            np.testing.assert_array_equal(g, nf(np.asarray(host), axis=axis, include_initial=include,
                                                dtype=expect_dtype))


def test_cumulative_named_views_no_copy(backend):
    """Transposed, negative-step, strided and broadcast views along every axis, long axes too
    (several units: the only other allocation is the small block-totals array)."""
    rng = np.random.default_rng(12)
    a = rng.uniform(-1, 1, (300, 70)).astype(np.float32)
    x = gpu(a)
    views = [
        (lambda v: v.T, lambda v: v.T),
        (lambda v: v[::-1, ::-2], lambda v: v[::-1, ::-2]),
        (lambda v: v[::3, 5:60:4].T[::-1], lambda v: v[::3, 5:60:4].T[::-1]),
        (lambda v: gt.broadcast_to(v[7], (5, 70)), lambda v: np.broadcast_to(v[7], (5, 70))),
    ]
    for fg, fn in views:
        xv, hv = fg(x), fn(a).astype(np.float64)
        for axis in range(2):
            with AllocCounter(backend) as counter:
                got = gt.cumulative_sum(xv, axis=axis)
            sizes = counter.sizes
            out_bytes = got.size * 4
            assert sizes[0] == out_bytes and sum(sizes[1:]) <= out_bytes // 8, sizes
            ref = np.cumsum(hv, axis=axis)
            np.testing.assert_allclose(got.get(), ref, rtol=tol("float32", "sum_rows")["rtol"], atol=tol("float32", "sum_rows")["atol"] * hv.shape[axis])
    # the kernel picked per layout: rows along the contiguous axis, columns across it
    with DispatchSpy(backend.context) as spy:
        gt.cumulative_sum(x, axis=1)
        gt.cumulative_sum(x, axis=0)
    modes = [c[1]["MODE"] for c in spy.calls if c[0] == "scan"]
    assert modes[0] == ops_scan.MODE_ROWS and modes[-1] == ops_scan.MODE_COLUMNS


def test_cumulative_sum_1d_two_dispatches_and_views(backend):
    """A long 1-D float32 cumulative_sum is two dispatches (unit totals, then the scan with the
    carries reduced in place); unaligned views (x[1:], include_initial) take the vector mode
    too and match NumPy."""
    rng = np.random.default_rng(16)
    n = (1 << 20) + 3
    a = rng.uniform(-1, 1, n).astype(np.float32)
    x = gpu(a)
    ctx = backend.context
    for view, host, include in ((lambda v: v, a, False), (lambda v: v[1:], a[1:], False),
                                (lambda v: v[3:-2], a[3:-2], True), (lambda v: v, a, True)):
        xv = view(x)
        xv._ptr  # noqa: B018 - materialise before counting
        before = ctx.stats["dispatches"]
        with DispatchSpy(ctx) as spy:
            got = gt.cumulative_sum(xv, include_initial=include)
        scans = _scan_calls(spy)
        assert len(scans) == 2 and all(d["MODE"] == ops_scan.MODE_VECTOR for d in scans)
        assert ctx.stats["dispatches"] - before == 2 + include  # include_initial: a fill
        h64 = host.astype(np.float64)
        ref = np.cumulative_sum(h64, include_initial=include)
        scale = np.cumulative_sum(np.abs(h64), include_initial=include)
        assert np.all(np.abs(got.get() - ref) <= 1e-6 * scale + 1e-7)


def test_cumulative_columns_larger_than_one_binding(backend, monkeypatch):
    """Axis 0 of a (n, 8) float32 array larger than one binding window: columns mode, split.
    The window is made 1 MiB (an H200's is its whole 4 GiB buffer limit, so no array could
    exceed it there)."""
    monkeypatch.setattr(backend, "max_window_bytes", lambda: 1 << 20)
    limit = backend.max_window_bytes()
    n = limit // 32 + 1000
    x = gt.ones((n, 8), dtype=gt.float32)
    x._ptr  # noqa: B018 - materialise before spying
    with DispatchSpy(backend.context) as spy:
        got = gt.cumulative_sum(x[::-1], axis=0)
    scans = [c[1] for c in spy.calls if c[0] == "scan" and c[1]["PHASE"] == 1]
    assert all(d["MODE"] == ops_scan.MODE_COLUMNS for d in scans) and len(scans) >= 3
    g = got.get()
    np.testing.assert_array_equal(g[:, 0], np.arange(1, n + 1, dtype=np.float32))  # exact: n < 2**24
    assert np.all(g == g[:, :1])


# ---- scans: the cached launch (hot path) ----------------------------------------------------------
class RecordSpy:
    """Context manager recording every ``WgpuContext.record`` (the hot path's dispatches and,
    under ``dispatch``, the reference path's) as (kernel, pipeline, sorted defines, parameter
    bytes, bindings, grid); bindings name a buffer by ``labels`` (buffer id -> name) or, for
    others (the unit totals), by the order it first appears in."""

    def __init__(self, ctx, labels):
        self.ctx = ctx
        self.labels = labels
        self.calls: list[tuple] = []

    def __enter__(self) -> RecordSpy:
        original = self.ctx.record
        others: dict[int, str] = {}

        def spy(name, pipe, defines, raw, buffers, x, y, z):
            bound = []
            for buf, offset, size in buffers:
                label = self.labels.get(id(buf)) or others.setdefault(id(buf), f"aux{len(others)}")
                bound.append((label, offset, size))
            self.calls.append((name, id(pipe), sorted(defines.items()), bytes(raw), bound, (x, y, z)))
            return original(name, pipe, defines, raw, buffers, x, y, z)

        self.ctx.record = spy
        return self

    def __exit__(self, *exc) -> None:
        del self.ctx.record


class Reference:
    """Context manager taking every scan through the reference path (``ops_scan._execute``): a
    pass-through ``dispatch`` wrapper, as the profiler installs."""

    def __init__(self, ctx):
        self.ctx = ctx

    def __enter__(self) -> Reference:
        self.ctx.dispatch = type(self.ctx).dispatch.__get__(self.ctx)
        return self

    def __exit__(self, *exc) -> None:
        del self.ctx.dispatch


def _buffer_labels(backend, **ptrs):
    return {id(backend.resolve(p, 0)[0].buffer): name for name, p in ptrs.items()}


def _launch_matches_reference(backend, rng, shape, src_strides, axis, dst_strides, src_dtype, dst_dtype,
                              src_lead=0, dst_lead=0, acc_dtype=None, in_place=False):
    """Scan a random operand three times on the hot path (the first call plans and caches) and
    once on the reference path: the same dispatches (pipelines, parameter bytes, bindings,
    grids) each time and the same result bits, equal to NumPy's for integers. Returns the
    number of dispatches."""
    ctx = backend.context
    src = Strided(backend, rng, shape, src_strides, src_dtype, values=False, lead=src_lead)
    kind = np.dtype(src_dtype).kind
    values = rng.integers(-3, 4, size=shape) if kind in "iu" else rng.uniform(0.5, 1.5, size=shape)
    src.storage[src.index] = values.astype(src_dtype)
    backend.copy_htod(src.base, src.storage)
    src.mats = src.storage[src.index]
    dst = src if in_place else Strided(backend, rng, shape, dst_strides, dst_dtype, values=False, lead=dst_lead)
    labels = _buffer_labels(backend, src=src.base, dst=dst.base)
    args = (src.ptr, src_dtype, shape, src_strides, axis, dst.ptr, dst_dtype, dst_strides)
    runs = []
    for reference in (True, False, False, False):
        backend.copy_htod(src.base, src.storage)  # (in place: the scan overwrote it)
        if not in_place:
            backend.copy_htod(dst.base, dst.storage)
        with RecordSpy(ctx, labels) as spy:
            if reference:
                with Reference(ctx):
                    ops_scan.scan_strided(backend, "sum", *args, acc_dtype=acc_dtype)
            else:
                ops_scan.scan_strided(backend, "sum", *args, acc_dtype=acc_dtype)
        runs.append((spy.calls, dst.download()))
    ref_calls, ref_out = runs[0]
    assert ref_calls
    for calls, out in runs[1:]:
        assert calls == ref_calls
        np.testing.assert_array_equal(out.view(np.uint8), ref_out.view(np.uint8))
    if np.dtype(dst_dtype).kind in "iu":
        np.testing.assert_array_equal(ref_out[dst.index], _np_scan("sum", src.mats, axis, np.dtype(dst_dtype)))
    src.free()
    if not in_place:
        dst.free()
    return len(ref_calls)


LAUNCH_CASES = [
    # (shape, src strides, axis, dst strides, src dtype, dst dtype, src lead, dst lead)
    ((5,), (1,), 0, (1,), "float32", "float32", 0, 0),
    ((4097,), (1,), 0, (1,), "float32", "float32", 1, 1),        # vector mode, unaligned head
    ((70001,), (1,), 0, (1,), "float32", "float32", 3, 1),       # dst stored element by element
    ((70001,), (-1,), 0, (1,), "int32", "int64", 0, 2),          # rows mode (negative stride)
    ((9000,), (1,), 0, (1,), "float16", "float16", 2, 2),        # packed types
    ((3, 9000), (-9007, 1), 1, (9003, 1), "int32", "int8", 1, 1),
    ((40, 300), (-300, -1), 1, (1, 40), "float32", "float32", 0, 0),
    ((300, 40), (1, -300), 0, (-40, 1), "float64", "float64", 0, 0),   # columns mode
    ((5, 700), (0, 1), 1, (700, 1), "uint8", "uint32", 0, 0),    # broadcast src
    ((2, 3, 2, 3, 2, 50), (1, 2, 6, 12, 24, 96), 5, (1, 3, 12, 36, 144, 432), "float32", "float32", 0, 0),
    ((2, 2, 3, 2, 200), (2400, 1200, 400, 200, 1), 4, (1, 2, 4, 12, 24), "int8", "int16", 1, 0),
]


@pytest.mark.parametrize("case", LAUNCH_CASES, ids=lambda c: f"{c[0]}-{c[4]}-{c[5]}")
def test_scan_launch_records_what_the_reference_records(backend, case):
    """The cached launch records exactly the reference path's dispatches: one level or several,
    the vector, rows and columns modes, outer row dims looped over (more than three), packed
    and converted types, unaligned heads; the result bits are the same."""
    *layout, src_lead, dst_lead = case
    _launch_matches_reference(backend, np.random.default_rng(len(case[0])), *layout, src_lead, dst_lead)


def test_scan_launch_in_place_placeholder_and_levels(backend, monkeypatch):
    """In place; a one-element scan accumulating in float64 (its aux slot bound to a fresh
    placeholder: the operand windows are smaller than one accumulator); the unit totals
    scanned by levels of their own (vector mode for the totals) and split over small windows."""
    rng = np.random.default_rng(21)
    _launch_matches_reference(backend, rng, (6, 2000), (-2000, 1), 1, (-2000, 1), "float32", "float32",
                              in_place=True)
    _launch_matches_reference(backend, rng, (1,), (1,), 0, (1,), "float32", "float32", acc_dtype="float64")
    monkeypatch.setattr(scan_plan, "TARGET_UNITS", 1 << 20)
    monkeypatch.setattr(scan_plan, "MAX_REDUCED_UNITS", 4)
    n = 37 * ops_scan.VECTOR_STEP + 11
    assert _launch_matches_reference(backend, rng, (n,), (1,), 0, (1,), "float32", "float32", 3, 3) == 3
    _launch_matches_reference(backend, rng, (2, n), (n + 1, 1), 1, (n + 1, 1), "int32", "int64", 3, 3)
    monkeypatch.setattr(backend, "max_window_bytes", lambda: 4096)
    assert _launch_matches_reference(backend, rng, (61001,), (1,), 0, (1,), "float32", "float32", 1, 1) > 10


def test_scan_launch_long_programs_and_unexpected_aux(backend, monkeypatch):
    """A call of more than MAX_PROGRAM_DISPATCHES dispatches is not kept (the reference path
    records it every time); an aux buffer that does not allow the vector layout a program
    planned for it sends the call to the reference path too. Results unchanged."""
    rng = np.random.default_rng(22)
    reference_calls = []
    execute = ops_scan._execute

    def counting(*args):
        reference_calls.append(args[1])
        return execute(*args)

    monkeypatch.setattr(ops_scan, "_execute", counting)
    monkeypatch.setattr(ops_scan, "MAX_PROGRAM_DISPATCHES", 1)
    _launch_matches_reference(backend, rng, (70001,), (1,), 0, (1,), "float32", "float32")
    assert len(reference_calls) == 4  # (the reference run, then three calls not kept)
    monkeypatch.setattr(ops_scan, "MAX_PROGRAM_DISPATCHES", 256)
    monkeypatch.setattr(scan_plan, "TARGET_UNITS", 1 << 20)
    monkeypatch.setattr(scan_plan, "MAX_REDUCED_UNITS", 4)
    n = 37 * ops_scan.VECTOR_STEP + 11
    x = gt.ones((n,), dtype=gt.float32)
    x._ptr  # noqa: B018 - materialise before counting
    first = gt.cumulative_sum(x).get()
    del reference_calls[:]
    changed = []
    for launch in ops_scan._plans(backend).values():
        if not isinstance(launch, ops_scan._Launch):
            continue
        for variant, program in list(launch.programs.items()):
            if program is not None and any(vec for _, vec, _ in program.aux):  # totals scanned as vectors
                launch.programs[variant] = dataclasses.replace(
                    program, aux=tuple((nbytes, 7 if vec else 0, zero) for nbytes, vec, zero in program.aux))
                changed.append((launch, variant, program))
    assert changed
    try:
        ctx = backend.context
        before = ctx.stats["dispatches"]
        np.testing.assert_array_equal(gt.cumulative_sum(x).get(), first)
        assert ctx.stats["dispatches"] - before == 3 and len(reference_calls) == 1
    finally:
        for launch, variant, program in changed:
            launch.programs[variant] = program


@pytest.mark.parametrize("dtype,arg", [("float32", None), ("float64", None), ("int32", None), ("int64", None),
                                       ("int8", None), ("uint8", None), ("float16", None), ("int16", "int16"),
                                       pytest.param("float32", "float64", marks=pytest.mark.requires("shader-f64"))])
def test_cumulative_cached_repeats_views_and_shapes(backend, dtype, arg):
    """cumulative_sum / cumulative_prod called again and again on the same and other shapes,
    views at other offsets (unaligned starts, negative steps, transposes), with and without
    include_initial: every result equals the reference path's bit for bit and NumPy's
    (integers exactly, floats within rounding)."""
    rng = np.random.default_rng(23)
    ctx = backend.context
    kind = np.dtype(dtype).kind
    a = (rng.integers(-2, 3, (37, 9000)) if kind in "iu" else rng.uniform(0.5, 1.5, (37, 9000))).astype(dtype)
    x = gpu(a)
    out_dtype = None if arg is None else getattr(gt, arg)
    views = [
        (lambda v: v[0], 0), (lambda v: v[1, 1:], 0), (lambda v: v[2, 3:-2], 0), (lambda v: v[3, ::-1], 0),
        (lambda v: v[4, :5000], 0), (lambda v: v[:, 1:70], 1), (lambda v: v[:, 1:70], 0),
        (lambda v: v[::-2, 5:900].T, 1), (lambda v: v[0], 0),
    ]
    for fn, nf, op in ((gt.cumulative_sum, np.cumulative_sum, "sum"), (gt.cumulative_prod, np.cumulative_prod, "prod")):
        for view, axis in views:
            if op == "prod" and kind == "f":
                continue  # (products of thousands of floats: compared through the sums)
            xv, hv = view(x), view(a)
            for include in (False, True):
                with Reference(ctx):
                    ref = fn(xv, axis=axis, dtype=out_dtype, include_initial=include).get()
                for _ in range(2):
                    got = fn(xv, axis=axis, dtype=out_dtype, include_initial=include).get()
                    assert got.dtype == ref.dtype and got.shape == ref.shape
                    np.testing.assert_array_equal(got.view(np.uint8), ref.view(np.uint8))
                if got.dtype.kind in "iu":
                    np.testing.assert_array_equal(got, nf(hv, axis=axis, include_initial=include, dtype=got.dtype))
                else:
                    h64 = hv.astype(np.float64)
                    expect = nf(h64, axis=axis, include_initial=include)
                    scale = nf(np.abs(h64), axis=axis, include_initial=include)
                    tol = 2 * EPS[got.dtype.name][0] * scale + hv.shape[axis] * 2.0**-23 * scale
                    assert np.all(np.abs(got.astype(np.float64) - expect) <= tol + SUBNORMAL[got.dtype.name])


def test_scan_launch_errors_after_cached_calls(backend):
    """After a structure is cached, bad pointers raise the reference path's BackendError (same
    message) and record nothing: past the end, before the start, misaligned, freed, not an int,
    src and dst overlapping with different layouts; ``scan``'s own checks likewise."""
    ctx = backend.context
    p = backend.alloc(4100 * 4)
    q = backend.alloc(4100 * 4)
    good = ("sum", p, "float32", (2, 2048), (2048, 1), 1, q, "float32", (2048, 1))
    ops_scan.scan_strided(backend, *good)
    ops_scan.scan_strided(backend, *good)

    def bad(index, value):
        args = list(good)
        args[index] = value
        hot = _expect_invalid(backend, ops_scan.scan_strided, *args)
        with Reference(ctx):
            ref = _expect_invalid(backend, ops_scan.scan_strided, *args)
        assert str(hot) == str(ref)
        return str(hot)

    assert "past the end" in bad(6, q + 20)
    assert "past the end" in bad(1, p + 8192)
    bad(1, p - 4)  # before the allocation's start
    bad(6, q + 2)  # misaligned
    bad(1, p + 1)
    bad(6, "ptr")
    bad(6, 1.5)
    assert "overlap" in bad(6, p + 4)  # the same memory, another layout
    ops_scan.scan_strided(backend, "sum", p, "float32", (2, 2048), (2048, 1), 1, p, "float32", (2048, 1))  # in place
    r = backend.alloc(64)
    backend.free(r)
    assert "freed" in bad(6, r)
    # scan: cached, then out of range, misaligned, freed
    data = np.arange(1, 17, dtype=np.uint32)
    backend.copy_htod(q, data)
    ops_scan.scan(backend, "sum", q, "uint32", 2, 8)
    out = np.empty(16, np.uint32)
    backend.copy_dtoh(out, q)
    np.testing.assert_array_equal(out, np.cumsum(data.reshape(2, 8), axis=1).ravel())
    for ptr, fragment in ((q + 4100 * 4 - 32, "past the end"), (q + 2, "not a multiple"), (r, "freed")):
        hot = _expect_invalid(backend, ops_scan.scan, "sum", ptr, "uint32", 2, 8)
        with Reference(ctx):
            ref = _expect_invalid(backend, ops_scan.scan, "sum", ptr, "uint32", 2, 8)
        assert fragment in str(hot) and str(hot) == str(ref)
    backend.free(p)
    backend.free(q)


def test_scan_launch_wrapped_dispatch_sees_every_dispatch(backend):
    """A ``dispatch`` wrapper set after a call was cached (the profiler, spies) sees each of its
    dispatches: the same count the hot path records."""
    ctx = backend.context
    x = gt.asarray(np.ones(300_001, np.float32))[1:]
    x._ptr  # noqa: B018 - materialise before counting
    gt.cumulative_sum(x)
    before = ctx.stats["dispatches"]
    gt.cumulative_sum(x)
    hot = ctx.stats["dispatches"] - before
    with DispatchSpy(ctx) as spy:
        gt.cumulative_sum(x)
    assert len(_scan_calls(spy)) == hot == 2


def test_scan_launch_follows_settings(backend, monkeypatch):
    """A cached structure is planned again when a setting changes: the module's tunables, the
    binding window, the grid limit (grids folded for the new limit)."""
    ctx = backend.context
    n = 3 * ops_scan.VECTOR_STEP + 5
    a = np.arange(n, dtype=np.int32) % 7
    x = gpu(a)
    expect = np.cumsum(a, dtype=np.int64)

    def dispatches():
        before = ctx.stats["dispatches"]
        got = gt.cumulative_sum(x).get()
        np.testing.assert_array_equal(got, expect)
        return ctx.stats["dispatches"] - before

    assert dispatches() == 2 and dispatches() == 2  # units of one step: totals, then the scan
    monkeypatch.setattr(scan_plan, "TARGET_UNITS", 1)
    assert dispatches() == 1  # one unit
    monkeypatch.setattr(backend, "max_window_bytes", lambda: 4096)
    assert dispatches() > 2
    monkeypatch.undo()
    assert dispatches() == 2
    monkeypatch.setattr(ctx, "max_workgroups_per_dim", 8)
    y = gt.asarray(np.ones((40, 1000), np.int32))
    got = gt.cumulative_sum(y, axis=1).get()  # 40 rows of one unit: 40 workgroups on a 5 x 8 grid
    np.testing.assert_array_equal(got, np.tile(np.arange(1, 1001), (40, 1)))


def test_scan_rows_cached(backend):
    """``ops_scan.scan`` (the radix sort's and stream compaction's in-place row scan) repeated
    at other offsets of one allocation, other row counts and leading dimensions."""
    rng = np.random.default_rng(24)
    n_words = 1 << 16
    ptr = backend.alloc(n_words * 4)
    try:
        for rows, n, ld, start in ((1, 4096, None, 0), (1, 4096, None, 7), (1, 4096, None, 0),
                                   (3, 1000, 1003, 5), (3, 1000, 1003, 1), (8, 256 * 20, None, 0), (1, 1, None, 3)):
            data = rng.integers(0, 50, n_words).astype(np.uint32)
            backend.copy_htod(ptr, data)
            for _ in range(2):
                ops_scan.scan(backend, "sum", ptr + 4 * start, "uint32", rows, n, ld)
            out = np.empty_like(data)
            backend.copy_dtoh(out, ptr)
            expect = data.copy()
            step = n if ld is None else ld
            for r in range(rows):
                row = slice(start + r * step, start + r * step + n)
                expect[row] = np.cumsum(np.cumsum(data[row], dtype=np.uint32), dtype=np.uint32)
            np.testing.assert_array_equal(out, expect)
    finally:
        backend.free(ptr)
