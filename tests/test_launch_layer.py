"""The backend's launch layer: layout helpers (merge dims, extents, window planning), the
argument validators, and LaunchProgram replays giving the dispatches and results of the
reference path (``WgpuContext.dispatch``)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import gputensor as gt
from _compare import tol
from gputensor._backend import BackendError, BackendErrorKind
from gputensor._backend import layout, ops_scan, validate
from gputensor._backend.launch import LaunchProgram, Region, strided_region


def test_merge_dims_and_extents():
    shape, strides = layout.merge_dims([2, 1, 3, 4], [[12, 99, 4, 1], [1, 5, 0, 0]])
    assert shape == [2, 12] and strides == [[12, 1], [1, 0]]
    assert layout.merge_dims([1, 1], [[3, 7]]) == ([1], [[1]])
    assert layout.extent([3, 4], [-4, 1]) == (-8, 4)
    assert layout.extent([0, 4], [1, 1]) == (0, 0)
    assert layout.strided_span([(3, -4), (4, 1)]) == (-8, 3)
    # scan's row dims are layout.merge_dims of (src, dst), ordered by |dst stride|
    rows = ops_scan.merge_rows([4, 1, 5, 6], [30, 7, 6, 1], [1, 9, 24, 4])
    assert rows == [ops_scan.RowDim(4, 30, 1), ops_scan.RowDim(30, 1, 4)]


def test_strided_extent_and_plan_blocks():
    ext = layout.strided_extent([("m", 1), ("k", -10), ("batch", 0)], itemsize=4, base=2)
    assert ext == layout.Extent(8, (("k", 40), ("m", 4)))
    assert ext.span({"m": 3, "k": 2, "batch": 5}) == 8 + 40 + 8
    blocks = layout.plan_blocks({"m": 10, "k": 10, "batch": 3}, [ext], 200)
    assert ext.span(blocks) <= 200 and blocks["m"] == 10
    assert layout.block_starts(10, 4) == [(0, 4), (4, 4), (8, 2)]
    with pytest.raises(ValueError):
        layout.plan_blocks({"m": 4}, [layout.Extent(300, (("m", 1),))], 200)


def test_validators():
    assert validate.check_int("n", np.int64(3)) == 3
    assert validate.check_ints("shape", (1, 2), 2, 0) == (1, 2)
    assert validate.check_strides("s", [1, -2, 0], 3) == (1, -2, 0)
    assert validate.check_scalar("alpha", 2) == 2.0
    for call in (lambda: validate.check_int("n", True), lambda: validate.check_int("n", -1),
                 lambda: validate.check_int("n", 1.0), lambda: validate.check_ints("shape", "ab"),
                 lambda: validate.check_strides("s", (1, 2), 3), lambda: validate.check_scalar("a", "1"),
                 lambda: validate.check_distinct("C", [(4, 1), (3, 2)])):
        with pytest.raises(BackendError) as info:
            call()
        assert info.value.kind is BackendErrorKind.INVALID_ARGUMENT
    validate.check_distinct("C", [(4, 1), (3, 4), (1, 0)])


def test_program_shares_windows_and_patches_words(backend):
    """compile gives each distinct binding one slot; replay and the reference path record the
    same parameter words (the first-element words patched) and bindings."""
    region = strided_region(0, 4, 2, [(3, -1), (2, 5)], word=1)
    assert region == Region(0, 0, 8 * 4, 4, 0, 1, 2)  # offsets -2 .. 5 from element 0 at 2
    ctx = backend.context
    program = LaunchProgram.compile("k", struct.Struct("<3I"), ctx,
                                    [("pipe", {}, (7, 0, 0), (1, 1, 1), (region, region)),
                                     ("pipe", {}, (8, 0, 0), (2, 1, 1), (region, region._replace(word=2)))], ())
    assert len(program.slots) == 1
    assert [step.slots for step in program.steps] == [(0, 0), (0, 0)]
    assert program.steps[0].patches == ((1, 0, 2), (1, 0, 2))
    assert program.steps[1].patches == ((1, 0, 2), (2, 0, 2))


def test_repeated_bitonic_sorts_replay(backend, monkeypatch):
    """Sorts of one structure: the first plans the program, the next replay it; with a dispatch
    wrapper every dispatch goes through the wrapper. Results as NumPy's either way."""
    rng = np.random.default_rng(3)
    ctx = backend.context

    def sorts(k):
        for _ in range(k):
            x = rng.standard_normal((6, 300)).astype(np.float32)
            np.testing.assert_array_equal(np.asarray(gt.sort(gt.asarray(x), axis=-1)), np.sort(x, axis=-1))
            np.testing.assert_array_equal(np.asarray(gt.argsort(gt.asarray(x), axis=-1, stable=True)),
                                          np.argsort(x, axis=-1, kind="stable"))

    sorts(3)
    seen = []
    original = ctx.dispatch
    monkeypatch.setattr(ctx, "dispatch", lambda name, *args, **kw: (seen.append(name), original(name, *args, **kw)))
    sorts(2)
    assert seen.count("sort_bitonic") == 4


def test_repeated_radix_sorts_replay(backend, monkeypatch):
    """Radix sorts of one structure (histograms, scans and scatters of every pass in one
    program, scratch allocated per call): replayed, through a dispatch wrapper, and with rows
    split into chunks of tiles (a small window), results as NumPy's."""
    from gputensor._backend import sort_common

    rng = np.random.default_rng(5)
    ctx = backend.context

    def sorts(k, shape=(2, 3000), dtype=np.float32):
        for _ in range(k):
            x = (rng.standard_normal(shape) * 50).astype(dtype)
            np.testing.assert_array_equal(np.asarray(gt.sort(gt.asarray(x), axis=-1)), np.sort(x, axis=-1))
            np.testing.assert_array_equal(np.asarray(gt.argsort(gt.asarray(x), axis=-1, stable=True)),
                                          np.argsort(x, axis=-1, kind="stable"))

    sorts(3)
    sorts(2, (4500,), np.int16)
    seen = []
    original = ctx.dispatch
    monkeypatch.setattr(ctx, "dispatch", lambda name, *args, **kw: (seen.append(name), original(name, *args, **kw)))
    sorts(1)
    assert seen.count("sort_hist") == 2 * 4 and "scan" in seen  # two sorts of four passes
    monkeypatch.undo()
    monkeypatch.setattr(sort_common, "WINDOW_LIMIT", 8192)
    sorts(2, (5000,))


def test_repeated_fused_reductions_replay(backend, monkeypatch):
    """A reduction of an elementwise DAG (its prologue in the loads) of one structure: the
    first call plans it, the next replay the kept plan with new data, scalars and views; a
    changed knob or a dispatch wrapper takes the full path; results as NumPy's."""
    from gputensor import _devices, _dispatch, _reduce_fused
    from gputensor._backend import config

    # fused plans are kept only while one device is in use; an earlier test of the same process
    # may have handed out a second one (the flag stays set), and this test uses only the first
    monkeypatch.setattr(_devices, "_multi", False)
    rng = np.random.default_rng(7)
    base = rng.standard_normal((40, 65)).astype(np.float32)
    xg = gt.asarray(base)

    def check(scale, rows=slice(None)):
        y = rng.standard_normal((40, 64)).astype(np.float32)
        yg = gt.asarray(y)
        with gt.fusion(True):
            got = gt.sum(gt.exp(xg[rows, 1:] - yg[rows]) * scale + 1.0, axis=-1)
        want = (np.exp(base[rows, 1:].astype(np.float64) - y[rows]) * scale + 1.0).sum(-1)
        np.testing.assert_allclose(np.asarray(got), want, **tol("float32", "chained"))

    _reduce_fused._FUSED_REDUCE.clear()
    for scale in (2.0, -0.5, 3.25):
        check(scale)
    assert len(_reduce_fused._FUSED_REDUCE) == 1
    check(1.5, slice(3, 20))  # another structure (a view): planned, then replayed
    check(-2.0, slice(3, 20))
    with config.override(reduce_workgroups=7):  # the kept plans do not hold under other knobs
        check(0.25)
    seen = []
    original = backend.context.dispatch
    monkeypatch.setattr(backend.context, "dispatch",
                        lambda name, *args, **kw: (seen.append(name), original(name, *args, **kw)))
    check(4.0)
    assert seen


def _spied(monkeypatch, ctx) -> list[str]:
    """The kernel names of every dispatch through ``ctx.dispatch`` from now on (the wrapper
    sends the launchers to their reference paths)."""
    seen: list[str] = []
    original = ctx.dispatch
    monkeypatch.setattr(ctx, "dispatch", lambda name, *args, **kw: (seen.append(name), original(name, *args, **kw)))
    return seen


@pytest.mark.parametrize("vec4", [True, False])
def test_repeated_concats_replay(backend, monkeypatch, vec4):
    """Concatenations of one structure replay their programs (16-byte words where every pointer
    is on a vector, 4-byte words otherwise, more than ``SOURCES`` parts); through a dispatch
    wrapper (the reference path) the results are the same."""
    from gputensor._backend import config, ops_concat

    rng = np.random.default_rng(13)
    parts = [rng.integers(-99, 99, size=(3, 4 * (k + 1))).astype(np.int32) for k in range(ops_concat.SOURCES + 2)]
    odd = [rng.standard_normal((5, k + 1)).astype(np.float32) for k in range(3)]

    def run():
        whole = gt.concat([gt.asarray(p) for p in parts], axis=1)
        shifted = gt.concat([gt.asarray(p.reshape(-1))[1:] for p in parts[:3]])  # parts off a vector
        small = gt.concat([gt.asarray(p) for p in odd], axis=1)
        return [np.asarray(t) for t in (whole, shifted, small)]

    want = [np.concatenate(parts, axis=1), np.concatenate([p.reshape(-1)[1:] for p in parts[:3]]),
            np.concatenate(odd, axis=1)]
    with config.override(concat_vec4=vec4):
        for _ in range(3):
            for got, ref in zip(run(), want):
                np.testing.assert_array_equal(got, ref)
        seen = _spied(monkeypatch, backend.context)
        for got, ref in zip(run(), want):
            np.testing.assert_array_equal(got, ref)
    assert seen == ["concat"] * 4  # two dispatches of SOURCES parts at most, then one each


def test_repeated_jacobi_replay(backend, monkeypatch):
    """The Jacobi kernels (small matrices in one kernel, block sweeps over larger ones; svd and
    eigh): a repeated call of one structure replays its kept program, and through a dispatch
    wrapper (the reference path) gives the same bits."""
    from gputensor._backend import ops_spectral

    rng = np.random.default_rng(17)
    small = rng.standard_normal((3, 8, 5)).astype(np.float32)
    large = rng.standard_normal((2, 44, 40)).astype(np.float32)
    sym = rng.standard_normal((4, 6, 6)).astype(np.float32)
    sym = sym + np.swapaxes(sym, -1, -2)

    def run():
        out = []
        for a in (small, large):
            out += [np.asarray(t) for t in gt.linalg.svd(gt.asarray(a), full_matrices=False)]
        out += [np.asarray(t) for t in gt.linalg.eigh(gt.asarray(sym))]
        return out

    first = run()
    kept = len(ops_spectral._PROGRAMS.of(backend))
    second = run()
    assert len(ops_spectral._PROGRAMS.of(backend)) == kept
    np.testing.assert_allclose(first[1], np.linalg.svd(small, compute_uv=False), **tol("float32", "linalg"))
    np.testing.assert_allclose(first[4], np.linalg.svd(large, compute_uv=False), **tol("float32", "spectral_residual"))
    np.testing.assert_allclose(first[6], np.linalg.eigvalsh(sym), **tol("float32", "spectral_residual"))
    seen = _spied(monkeypatch, backend.context)
    third = run()
    assert "svd_jacobi_small" in seen and "svd_jacobi_block" in seen
    for a, b, c in zip(first, second, third):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


def test_repeated_raw_kernels_replay(backend, monkeypatch):
    """A RawKernel call replays the program kept for its binding count and grid with the call's
    params bytes; through a dispatch wrapper it takes the reference path; results the same."""
    k = gt.RawKernel("""
        struct P { n: u32, alpha: f32 }
        @group(0) @binding(0) var<uniform> p: P;
        @group(0) @binding(1) var<storage, read> x: array<f32>;
        @group(0) @binding(2) var<storage, read_write> y: array<f32>;
        @compute @workgroup_size(64)
        fn axpy(@builtin(global_invocation_id) g: vec3<u32>) {
            if (g.x < p.n) { y[g.x] = p.alpha * x[g.x] + y[g.x]; }
        }""", "axpy")
    rng = np.random.default_rng(19)
    x = rng.standard_normal(300).astype(np.float32)

    def run(alpha):
        y = gt.zeros(300, dtype=gt.float32)
        k(5, (gt.asarray(x), y), params=(300, alpha))
        k(5, (gt.asarray(x), y), params=(300, alpha))
        return np.asarray(y)

    for alpha in (1.5, -2.0):
        np.testing.assert_allclose(run(alpha), 2 * alpha * x, **tol("float32", "elementwise"))
    assert len(k._programs) == 1
    seen = _spied(monkeypatch, backend.context)
    np.testing.assert_array_equal(run(0.25), run(0.25))
    assert seen == ["axpy"] * 4
    np.testing.assert_allclose(run(0.25), 0.5 * x, **tol("float32", "elementwise"))


def test_repeated_elementwise_kernels_replay(backend, monkeypatch):
    """An ElementwiseKernel call replays the program kept for its structure with the call's
    scalar values as its per-call bytes (a float and an 8-byte integer scalar, a raw input,
    broadcast and reversed views); through a dispatch wrapper it takes the reference path;
    results as NumPy's either way."""
    k = gt.ElementwiseKernel("float32 x, float32 y, float32 a, int64 b, raw float32 w", "float32 z",
                             "z = a * x + y + f32(b) + w(0u);", "axpb")
    rng = np.random.default_rng(23)
    xn = rng.standard_normal((6, 50)).astype(np.float32)
    yn = rng.standard_normal(50).astype(np.float32)
    wn = np.float32([0.5, 2.0])

    def run(a, b):
        x = gt.asarray(xn)[::-1, ::-1]  # reversed views
        return np.asarray(k(x, gt.asarray(yn), a, b, gt.asarray(wn)))

    def want(a, b):
        return (np.float32(a) * xn[::-1, ::-1] + yn + np.float32(b) + wn[0]).astype(np.float32)

    for a, b in ((1.5, 3), (-2.0, -(2**40)), (0.25, 7)):
        np.testing.assert_allclose(run(a, b), want(a, b), **tol("float32", "elementwise_floor"))
    assert len(k._programs) == 1
    seen = _spied(monkeypatch, backend.context)
    np.testing.assert_array_equal(run(3.0, 5), run(3.0, 5))
    assert seen == ["user_elementwise"] * 2
    monkeypatch.undo()
    np.testing.assert_array_equal(run(3.0, 5), np.asarray(run(3.0, 5)))
    np.testing.assert_allclose(run(3.0, 5), want(3.0, 5), **tol("float32", "elementwise_floor"))


def test_repeated_compactions_and_concats_replay(backend, monkeypatch):
    """Masks, nonzero and concatenations of one structure: the first plans the programs (one
    compaction structure with its count program and a write program per output kind), the
    next replay them with no dispatch through ``WgpuContext.dispatch``; results as NumPy's
    with counts that differ from call to call."""
    from gputensor._backend import ops_compact

    rng = np.random.default_rng(8)
    ctx = backend.context

    def calls(k):
        for _ in range(k):
            a = rng.standard_normal(6000).astype(np.float32)
            m = a > rng.standard_normal()
            x = gt.asarray(a)
            np.testing.assert_array_equal(np.asarray(x[gt.asarray(m)]), a[m])
            np.testing.assert_array_equal(np.asarray(gt.nonzero(gt.asarray(m))[0]), np.nonzero(m)[0])
            np.testing.assert_array_equal(np.asarray(gt.concat([x, x[:100]])), np.concatenate([a, a[:100]]))

    calls(2)
    structure = ops_compact._structure(backend, "nonzero", "bool", 6000, True)
    assert len(structure.writes) == 2  # (values of float32, int64 indices)
    seen = []
    original = ctx.dispatch
    monkeypatch.setattr(type(ctx), "dispatch", lambda self, name, *args, **kw: (seen.append(name),
                                                                                 original(name, *args, **kw)))
    calls(3)
    assert not any(name in ("compact_count", "compact_write", "concat") for name in seen)


@pytest.mark.parametrize("window", [None, 8192])
def test_repeated_gathers_and_scatters_replay(backend, monkeypatch, window):
    """Gathers and scatters of one structure (take with its device-side index check,
    take_along_axis, integer-array indexing, assignment through index arrays with duplicates:
    the winner passes) plan their programs once and replay them with no dispatch through
    ``WgpuContext.dispatch``, one dispatch or several (a small window: boxes and windows of
    the indexed side); through a dispatch wrapper (the reference path) every dispatch is seen
    and the results are the same; an index out of range still raises at the next wait."""
    from gputensor._backend import sort_common

    if window is not None:
        monkeypatch.setattr(sort_common, "WINDOW_LIMIT", window)
    rng = np.random.default_rng(21)
    ctx = backend.context

    def calls(k):
        for _ in range(k):
            a = rng.standard_normal(5000).astype(np.float32)
            m = rng.integers(-99, 99, size=(40, 70)).astype(np.int16)
            i = rng.integers(-5000, 5000, size=3000)
            j = rng.integers(0, 70, size=(40, 9)).astype(np.int32)
            x, y = gt.asarray(a), gt.asarray(m)
            np.testing.assert_array_equal(np.asarray(gt.take(x, gt.asarray(i))), np.take(a, i))
            np.testing.assert_array_equal(np.asarray(gt.take_along_axis(y, gt.asarray(j), axis=1)),
                                          np.take_along_axis(m, j, axis=1))
            rows = rng.integers(0, 40, size=17)
            np.testing.assert_array_equal(np.asarray(y[gt.asarray(rows), 3:60:2]), m[rows, 3:60:2])
            dst = rng.integers(0, 5000, size=4000)  # duplicates: the last point of each wins
            vals = rng.standard_normal(4000).astype(np.float32)
            x[gt.asarray(dst)] = gt.asarray(vals)
            a[dst] = vals
            np.testing.assert_array_equal(np.asarray(x), a)

    calls(2)
    seen = []
    original = ctx.dispatch
    monkeypatch.setattr(type(ctx), "dispatch", lambda self, name, *args, **kw: (seen.append(name),
                                                                                 original(name, *args, **kw)))
    calls(2)
    assert "gather" not in seen
    monkeypatch.setattr(type(ctx), "dispatch", original.__func__)
    seen = _spied(monkeypatch, ctx)
    calls(1)
    assert seen.count("gather") >= 5  # take, take_along_axis, indexing, claim and write
    for _ in range(2):  # the reference path, then a replay: the index check holds on both
        x = gt.asarray(np.zeros(5000, np.float32))
        with pytest.raises(IndexError):
            np.asarray(gt.take(x, gt.asarray(np.full(3000, 5000))))
        monkeypatch.undo()
        if window is not None:
            monkeypatch.setattr(sort_common, "WINDOW_LIMIT", window)


@pytest.mark.parametrize("splits", [None, 3])
def test_repeated_general_stride_gemms_replay(backend, monkeypatch, splits):
    """General-stride GEMMs (negative and 2-element strides, which no BLAS layout describes) of
    one structure replay their kept program, split-K's combine included, for new pointers; the
    reference path (a dispatch wrapper) and NumPy give the same results."""
    from gputensor._backend import ops_gemm

    rng = np.random.default_rng(21)
    m, n, k = 37, 29, 75
    ctx = backend.context

    def run(seed: int) -> tuple[np.ndarray, np.ndarray]:
        local = np.random.default_rng(seed)
        A = local.standard_normal((m, 2 * k)).astype(np.float32)
        B = local.standard_normal((k, n)).astype(np.float32)
        C0 = local.standard_normal((m, n)).astype(np.float32)
        pa, pb, pc = backend.alloc(A.nbytes), backend.alloc(B.nbytes), backend.alloc(C0.nbytes)
        try:
            for ptr, host in ((pa, A), (pb, B), (pc, C0)):
                backend.copy_htod(ptr, host)
            ops_gemm.gemm_strided(backend, m, n, k, 2.0, pa + (m - 1) * 2 * k * 4, (-2 * k, 2), pb, (n, 1),
                                  -1.0, pc, (n, 1), splits=splits)
            out = np.empty_like(C0)
            backend.copy_dtoh(out, pc)
        finally:
            for ptr in (pa, pb, pc):
                backend.free(ptr)
        return out, 2.0 * A[::-1, ::2].astype(np.float64) @ B - C0

    calls = []
    original = ops_gemm._plan_general
    monkeypatch.setattr(ops_gemm, "_plan_general", lambda *args: (calls.append(1), original(*args))[1])
    replayed = []
    for seed in (1, 2, 3):
        got, want = run(seed)
        np.testing.assert_allclose(got, want, **tol("float32", "matmul"))
        replayed.append(got)
    assert len(calls) <= 1  # planned once (or kept from an earlier test), then replayed
    seen = _spied(monkeypatch, ctx)
    reference, want = run(3)
    assert seen == (["gemm_strided"] if splits is None else ["gemm_strided", "gemm_combine"])
    np.testing.assert_array_equal(reference, replayed[-1])
    np.testing.assert_allclose(reference, want, **tol("float32", "matmul"))

    # the public path: matmul of views takes the general-stride kernel and replays it
    x = rng.standard_normal((64, 96)).astype(np.float32)
    y = rng.standard_normal((48, 64)).astype(np.float32)
    monkeypatch.undo()
    gx, gy = gt.asarray(x), gt.asarray(y)
    first = np.asarray(gt.matmul(gx[::2, ::-2], gy[::-1, ::2]))
    seen = []
    original_dispatch = type(ctx).dispatch
    monkeypatch.setattr(type(ctx), "dispatch", lambda self, name, *args, **kw: (seen.append(name),
                                                                               original_dispatch(self, name, *args, **kw)))
    second = np.asarray(gt.matmul(gx[::2, ::-2], gy[::-1, ::2]))
    assert seen == []  # replayed: no WgpuContext.dispatch
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(second, x[::2, ::-2].astype(np.float64) @ y[::-1, ::2], **tol("float32", "matmul"))
