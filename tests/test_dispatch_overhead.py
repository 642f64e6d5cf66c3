"""Per-dispatch host overhead: the caches behind ``WgpuContext.dispatch`` and
``ops_elementwise.elementwise`` must never change a result.

Covered: bind groups cached by (buffer uid, offset, size) with the uniform ring at a dynamic
offset (same buffers at different offsets, freed-and-reused blocks, invalidation when a pool
block is released or a non-pool buffer dies, eviction when the cache is full, the larger uniform
windows); pipelines looked up by the defines in the caller's order (one compile per distinct set
of defines, whatever the order); elementwise launch plans cached by shapes/strides/dtypes with
per-call pointers, alignments and scalar values (including -0.0, NaN and int/float/bool scalars
that compare equal). Frontend fast paths (issue 5): the resolved-op and ready-eager-launch caches
of ``_dispatch.elementwise_op`` never give a stale launch (dtype, shape, strides, scalar kind),
keep every error at its call and are thread-safe; ``bindings`` of whole allocations, the direct
compute-pass calls and their fallback, wrappers of ``dispatch`` still seeing every dispatch.
Timing is asserted only as a very loose sanity bound.
"""

from __future__ import annotations

import gc
import math
import time

import numpy as np
import pytest

import gputensor as gt
from gputensor._backend import UnaryOp, BinaryOp, get_backend
from gputensor._backend import bind_groups as bind_groups_module
from gputensor._backend import elementwise as codegen
from gputensor._backend import ops_elementwise as ew
from gputensor._backend.ops_elementwise import ArrayOperand, ScalarOperand

from _compare import tol


@pytest.fixture(scope="module")
def backend():
    return get_backend()


def upload(backend, array: np.ndarray) -> int:
    ptr = backend.alloc(array.nbytes, zero=False)
    backend.copy_htod(ptr, array)
    return ptr


def download(backend, ptr: int, n: int, dtype=np.float32) -> np.ndarray:
    out = np.empty(n, dtype)
    backend.copy_dtoh(out, ptr)
    return out


# ---- bind groups ------------------------------------------------------------------------------
def test_same_buffers_different_offsets(backend) -> None:
    """One allocation bound at many offsets (aligned: different binding offsets; unaligned: the
    same window with another first element): every dispatch reads and writes its own range."""
    n = 4096
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    src = upload(backend, x)
    dst = backend.alloc(4 * n)
    expect = np.zeros(n, np.float32)
    for start, count in [(0, 64), (64, 64), (128, 100), (256, 7), (263, 300), (1024, 1024),
                         (2048, 1), (2049, 2047), (0, 64)]:
        backend.unary(UnaryOp.NEG, src + 4 * start, dst + 4 * start, count)
        expect[start : start + count] = -x[start : start + count]
    np.testing.assert_array_equal(download(backend, dst, n), expect)
    backend.free(src)
    backend.free(dst)


def test_bind_groups_are_reused(backend) -> None:
    ctx = backend.context
    n = 1024
    a = upload(backend, np.ones(n, np.float32))
    b = backend.alloc(4 * n)
    backend.unary(UnaryOp.EXP, a, b, n)
    created = ctx.stats["bind_groups_created"]
    for _ in range(20):
        backend.unary(UnaryOp.EXP, a, b, n)
        backend.binary(BinaryOp.ADD, b, a, b, n)
    backend.binary(BinaryOp.ADD, b, a, b, n)
    assert ctx.stats["bind_groups_created"] - created <= 1  # the binary's group, once
    got = download(backend, b, n)
    np.testing.assert_allclose(got, np.e + 1 + 1, **tol("float32", "elementwise"))
    backend.free(a)
    backend.free(b)


def test_freed_and_reused_blocks(backend) -> None:
    """A block freed and handed to a new allocation keeps its buffer (and cached bind groups):
    the new owner's data is used, never the old owner's."""
    n = 2048
    for round_ in range(5):
        x = np.full(n, float(round_), np.float32)
        a = upload(backend, x)
        b = backend.alloc(4 * n, zero=False)
        backend.unary(UnaryOp.SQUARE, a, b, n)
        np.testing.assert_array_equal(download(backend, b, n), x * x)
        backend.free(a)
        backend.free(b)


def test_bind_group_cache_invalidated_on_release(backend) -> None:
    ctx = backend.context
    pool = backend.memory_pool
    n = 3000  # a bin of its own in this test
    a = upload(backend, np.arange(n, dtype=np.float32))
    b = backend.alloc(4 * n)
    backend.unary(UnaryOp.NEG, a, b, n)
    buf_a = backend.resolve(a, 0)[0].buffer
    uid = buf_a.uid
    assert uid in ctx._groups_by_buffer
    backend.free(a)
    pool.free_all_blocks()  # a's block is destroyed: its bind groups must go
    assert uid not in ctx._groups_by_buffer
    assert all(uid not in key[2::3] for key in ctx._groups)
    np.testing.assert_array_equal(download(backend, b, n), -np.arange(n, dtype=np.float32))
    c = upload(backend, np.full(n, 4.0, np.float32))  # a new block, maybe the same address
    backend.unary(UnaryOp.SQRT, c, b, n)
    np.testing.assert_array_equal(download(backend, b, n), 2.0)
    backend.free(b)
    backend.free(c)


def test_bind_group_cache_forgets_dead_buffers(backend) -> None:
    """Buffers that are not pool blocks (kernel scratch, ...) are cached too; when their Python
    object dies, their bind groups are dropped at the next dispatch."""
    ctx = backend.context
    buf = ctx.create_storage(1024)
    ctx.write(buf, 0, np.arange(256, dtype=np.uint32))
    ctx.dispatch("patch_bytes", [3, 0xFF, 0xAB], [(buf, 0, 1024)], (1, 1, 1))
    uid = buf.uid
    assert uid in ctx._groups_by_buffer
    assert ctx.readback(buf, 12, 4) == bytes([0xAB, 0, 0, 0])
    del buf
    gc.collect()
    other = backend.alloc(16)
    backend.unary(UnaryOp.ABS, other, other, 4)  # any dispatch purges
    assert uid not in ctx._groups_by_buffer
    assert all(uid not in key[2::3] for key in ctx._groups)
    backend.free(other)


def test_bind_group_cache_eviction(backend, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = backend.context
    monkeypatch.setattr(bind_groups_module, "BIND_GROUP_CACHE_SIZE", 8)
    n = 64
    x = np.random.default_rng(1).standard_normal(n * 40).astype(np.float32)
    src = upload(backend, x)
    dst = backend.alloc(x.nbytes)
    for k in range(40):  # 40 distinct aligned offsets: 40 distinct bind groups
        backend.unary(UnaryOp.NEG, src + 256 * k, dst + 256 * k, n)
    assert ctx.bind_group_cache_size() <= 8
    np.testing.assert_array_equal(download(backend, dst, n * 40), -x)
    backend.free(src)
    backend.free(dst)
    monkeypatch.undo()
    ctx._evict(len(ctx._groups))  # leave an empty (consistent) cache for other tests
    assert ctx.bind_group_cache_size() == 0
    assert all(not keys for keys in ctx._groups_by_buffer.values())


def test_uniform_windows(backend) -> None:
    """Parameters longer than 256 bytes use a larger uniform window at the dynamic offset."""
    ctx = backend.context
    buf = ctx.create_storage(256)
    for extra in (0, 70, 300, 2000):
        ctx.dispatch("patch_bytes", [1, 0xFF00, 0x1200 + extra % 256] + [0xDEAD] * extra,
                     [(buf, 0, 256)], (1, 1, 1))
        assert ctx.readback(buf, 4, 4)[1] == (0x1200 + extra % 256) >> 8
    with pytest.raises(Exception, match="too many"):
        ctx.dispatch("patch_bytes", [0] * (70_000 // 4), [(buf, 0, 256)], (1, 1, 1))


def test_dispatch_validation_unchanged(backend) -> None:
    ctx = backend.context
    buf = ctx.create_storage(1024)
    with pytest.raises(Exception, match="multiple of"):
        ctx.dispatch("patch_bytes", [0, 1, 1], [(buf, 4, 64)], (1, 1, 1))
    with pytest.raises(Exception, match="workgroups"):
        ctx.dispatch("patch_bytes", [0, 1, 1], [(buf, 0, 64)], (1, 1))
    with pytest.raises(Exception, match="u32 words"):
        ctx.dispatch("patch_bytes", ["a", 1, 1], [(buf, 0, 64)], (1, 1, 1))
    # negative ints travel as their two's-complement bits
    ctx.dispatch("patch_bytes", [0, -1, -2], [(buf, 0, 64)], (1, 1, 1))
    assert ctx.readback(buf, 0, 4) == (0xFFFFFFFE).to_bytes(4, "little")


# ---- pipelines --------------------------------------------------------------------------------
def test_pipeline_lookup_by_defines_in_any_order(backend) -> None:
    ctx = backend.context
    spec = codegen.ElementwiseSpec(inputs=(("float32", False),), casts=("f32",), expr="x0 * 3.0",
                                   expr_type="f32", out="float32", ndim=0, store="direct")
    defines = dict(codegen.render_defines(spec))
    reordered = dict(reversed(list(defines.items())))
    before = ctx.stats["pipelines_compiled"]
    p1 = ctx.pipeline("elementwise", 2, defines)
    p2 = ctx.pipeline("elementwise", 2, reordered)
    p3 = ctx.pipeline("elementwise", 2, dict(defines))
    assert p1 is p2 is p3
    assert ctx.stats["pipelines_compiled"] - before <= 1
    assert ctx.pipeline("elementwise", 3, defines) is not p1  # another layout


def test_pipeline_from_source(backend) -> None:
    ctx = backend.context
    source = """
struct Params { value: u32, pad0: u32, pad1: u32, pad2: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < arrayLength(&out)) { out[gid.x] = params.value + gid.x; }
}
"""
    buf = ctx.create_storage(256)
    ctx.dispatch("iota_test", [100], [(buf, 0, 256)], (1, 1, 1), source=source)
    got = np.frombuffer(ctx.readback(buf), np.uint32)
    np.testing.assert_array_equal(got, 100 + np.arange(64))
    # cached by the source text (the name is only a label)
    assert ctx.pipeline("iota_test", 1, source=source) is ctx.pipeline("other label", 1, source=source)
    with pytest.raises(Exception, match="failed to compile"):
        ctx.dispatch("broken", [0], [(buf, 0, 256)], (1, 1, 1), source="fn main( {")
    with pytest.raises(Exception, match="not both"):
        ctx.pipeline("x", 1, {"A": 1}, source=source)


# ---- elementwise launch plans ---------------------------------------------------------------
def test_plan_cache_pointers_and_alignment_vary(backend) -> None:
    """One plan, pointers with different alignments: the vector path where every first element
    is aligned, the scalar path otherwise, with the right tail each time."""
    n = 1027
    big = np.random.default_rng(2).standard_normal(n + 16).astype(np.float32)
    src = upload(backend, big)
    dst = backend.alloc(big.nbytes)
    plans = ew._plans(backend)
    for shift_src, shift_dst in [(0, 0), (1, 0), (0, 3), (2, 2), (4, 4), (5, 1), (0, 0)]:
        out = np.zeros(n + 16, np.float32)
        backend.copy_htod(dst, out)
        ew.elementwise(backend, "x0 * 2.0", "f32", [ArrayOperand(src + 4 * shift_src, "float32", (1,))],
                       ["f32"], ArrayOperand(dst + 4 * shift_dst, "float32", (1,)), [n])
        out[shift_dst : shift_dst + n] = big[shift_src : shift_src + n] * 2
        np.testing.assert_array_equal(download(backend, dst, n + 16), out)
    assert len(plans) >= 1
    backend.free(src)
    backend.free(dst)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int8", "float16", "bool"])
def test_plan_cache_scalar_values(backend, dtype: str) -> None:
    """The scalar operand's value is per call (never part of the plan): fills of equal-comparing
    but different values (0.0 / -0.0, 1 / 1.0 / True, NaN) give their own bits."""
    from gputensor._backend.wgsl_types import storage_type

    st = storage_type(dtype)
    n = 37
    out = backend.alloc(8 * n)
    values = {"float32": [0.0, -0.0, 1, 1.0, True, math.nan, -2.5, math.inf],
              "float64": [0.0, -0.0, 1, True, math.nan, 1e300],
              "float16": [0.0, -0.0, 1.0, 65504.0, math.nan],
              "int32": [0, 1, True, -5, 2**31 - 1],
              "int8": [0, 1, -128, 127, True],
              "bool": [False, True, 0, 1]}[dtype]
    for v in values:
        ew.elementwise(backend, "x0", st.compute, [ScalarOperand(v, dtype)], [st.compute],
                       ArrayOperand(out, dtype, (1,)), [n])
        got = np.empty(n, np.dtype(dtype))
        backend.copy_dtoh(got, out)
        expect = np.full(n, v).astype(np.dtype(dtype))
        if isinstance(v, float) and math.isnan(v):  # GPUs need not keep a NaN's payload
            assert np.isnan(got).all(), f"{dtype} {v!r}"
            continue
        np.testing.assert_array_equal(got.view(np.uint8), expect.view(np.uint8), err_msg=f"{dtype} {v!r}")
    backend.free(out)


def test_plan_cache_strided_and_chunked(backend, monkeypatch: pytest.MonkeyPatch) -> None:
    """Strided, broadcast and multi-chunk plans replay right with other pointers."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((24, 40)).astype(np.float32)
    b = rng.standard_normal(40).astype(np.float32)
    pa, pb = upload(backend, a), upload(backend, b)
    out = backend.alloc(a.nbytes)
    monkeypatch.setattr(type(backend), "max_window_bytes", lambda self: 1024)  # force chunks
    for k in range(3):
        shape = (24 - 2 * k, 40 - k)
        ew.elementwise(backend, "x0 - x1", "f32",
                       [ArrayOperand(pa + 4 * (k * 40 + k), "float32", (40, 1)),
                        ArrayOperand(pb + 4 * k, "float32", (0, 1))],
                       ["f32", "f32"], ArrayOperand(out, "float32", (shape[1], 1)), list(shape))
        got = download(backend, out, shape[0] * shape[1]).reshape(shape)
        expect = a[k : k + shape[0], k : k + shape[1]] - b[k : k + shape[1]]
        np.testing.assert_array_equal(got, expect)
    # the cached plans still validate their pointers
    with pytest.raises(Exception, match="past the end|outside|unknown"):
        ew.elementwise(backend, "x0 - x1", "f32",
                       [ArrayOperand(pa + 4 * (2 * 40 + 2), "float32", (40, 1)),
                        ArrayOperand(pb + 4 * 2, "float32", (0, 1))],
                       ["f32", "f32"], ArrayOperand(out + 4 * 500, "float32", (38, 1)), [20, 38])
    for p in (pa, pb, out):
        backend.free(p)


def test_plan_cache_bad_arguments_still_raise(backend) -> None:
    p = backend.alloc(64)
    good = (backend, "x0", "f32", [ArrayOperand(p, "float32", (1,))], ["f32"], ArrayOperand(p, "float32", (1,)), [16])
    ew.elementwise(*good)
    with pytest.raises(Exception):
        ew.elementwise(backend, "x0", "f32", [ArrayOperand(p, "float32", (1,))], ["f32"],
                       ArrayOperand(p, "float32", (1,)), [17])  # one past the end
    with pytest.raises(Exception):
        ew.elementwise(backend, "x0", "f32", [ArrayOperand(p + 2, "float32", (1,))], ["f32"],
                       ArrayOperand(p, "float32", (1,)), [4])  # misaligned
    with pytest.raises(Exception):
        ew.elementwise(backend, "x0", "f32", [ArrayOperand(p, "float32", (1,))], ["f32"],
                       ArrayOperand(p, "float32", (1,)), [2.0])  # not an integer shape
    with pytest.raises(Exception):
        ew.elementwise(backend, "x0", "f32", ["nope"], ["f32"], ArrayOperand(p, "float32", (1,)), [4])
    backend.free(p)
    with pytest.raises(Exception, match="unknown or freed"):
        ew.elementwise(*good)  # a freed pointer is refused by the cached plan


def test_frontend_chain_matches_numpy() -> None:
    rng = np.random.default_rng(4)
    xs = rng.standard_normal(1024).astype(np.float32)
    x = gt.asarray(xs)
    y = x
    ref = xs.astype(np.float64)
    for k in range(60):
        y = y * 0.5 + 0.25 if k % 2 else gt.exp(y * 0.01) - 1
        ref = ref * 0.5 + 0.25 if k % 2 else np.exp(ref * 0.01) - 1
    np.testing.assert_allclose(gt.asnumpy(y), ref, **tol("float32", "chained_long"))


def test_host_time_sanity_bound(backend) -> None:
    """Very loose: a cached small dispatch records in well under a millisecond of host time."""
    n = 1024
    a = upload(backend, np.ones(n, np.float32))
    b = backend.alloc(4 * n)
    for _ in range(10):
        backend.unary(UnaryOp.EXP, a, b, n)
    reps = 200
    t0 = time.thread_time()
    for _ in range(reps):
        backend.unary(UnaryOp.EXP, a, b, n)
    per_call = (time.thread_time() - t0) / reps
    backend.synchronize()
    assert per_call < 1e-3, f"{per_call * 1e6:.0f} us of host time per cached dispatch"
    backend.free(a)
    backend.free(b)


# ---- scalar and batched readback ------------------------------------------------------------
def test_scalar_readback_conversions() -> None:
    base = np.arange(24, dtype=np.float32).reshape(4, 6) - 7.5
    x = gt.asarray(base)
    assert float(x[2, 3]) == float(base[2, 3])
    assert x[3, ::-2][1].item() == float(base[3, ::-2][1])  # a strided, offset size-1 view
    assert isinstance(x[0, 0].item(), float)
    assert int(gt.asarray(np.int64(-5))) == -5 and gt.asarray(np.int8(-3)).item() == -3
    assert gt.asarray(np.uint64(2**64 - 1)).item() == 2**64 - 1
    assert bool(gt.asarray(True)) is True and gt.asarray(np.bool_(False)).item() is False
    assert gt.asarray(np.float16(1.5)).item() == 1.5
    assert float(gt.asarray(np.array([[2.25]], np.float64))) == 2.25  # size 1, not 0-d
    with pytest.raises(TypeError):
        float(x)
    with pytest.raises(TypeError):
        x.item()


def test_asnumpy_many(backend) -> None:
    rng = np.random.default_rng(6)
    a = rng.standard_normal((5, 7)).astype(np.float32)
    b = rng.integers(-100, 100, 33).astype(np.int16)
    ga, gb = gt.asarray(a), gt.asarray(b)
    gc_ = gt.exp(ga) + 1  # pending work is read too
    empty = gt.empty((0, 3))
    scalar = gt.asarray(np.float64(3.5))
    ctx = backend.context
    ctx.flush()
    submits = ctx.stats["submits"]
    got = gt.asnumpy_many(ga, gb[::3], gc_.T, empty, scalar)
    assert ctx.stats["submits"] - submits <= 3  # the views' compaction may record; one readback submit
    np.testing.assert_array_equal(got[0], a)
    np.testing.assert_array_equal(got[1], b[::3])
    np.testing.assert_allclose(got[2], (np.exp(a.astype(np.float64)) + 1).T, **tol("float32", "elementwise"))
    assert got[3].shape == (0, 3) and got[4].shape == () and got[4] == 3.5
    assert [g.dtype for g in got] == [np.float32, np.int16, np.float32, np.float32, np.float64]
    assert gt.asnumpy_many() == ()
    with pytest.raises(TypeError):
        gt.asnumpy_many(ga, a)


def test_copy_dtoh_many_validates_first(backend) -> None:
    p = backend.alloc(16)
    backend.copy_htod(p, np.arange(4, dtype=np.float32))
    out = np.zeros(4, np.float32)
    with pytest.raises(Exception):
        backend.copy_dtoh_many([(out, p), (np.zeros(8, np.float32), p)])  # second one too large
    assert (out == 0).all()  # nothing was read
    backend.copy_dtoh_many([(out, p), (out[:0], p)])
    np.testing.assert_array_equal(out, np.arange(4))
    backend.free(p)


# ---- frontend fast paths: resolved ops, ready eager launches (issue 5) ------------------------
@pytest.fixture
def eager():
    """Fusion off for the test (the eager launch cache), restored after."""
    previous = gt.set_fusion(False)
    yield
    gt.set_fusion(previous)


def _layout_entry(name: str, *args):
    from gputensor import _elementwise_cache

    return _elementwise_cache._EAGER.get(_elementwise_cache._eager_key(name, args)[0])


def test_eager_cache_keys_never_give_a_stale_launch(eager) -> None:
    """One op repeated with another dtype, shape, stride pattern, broadcast or scalar kind gets
    its own ready launch (never another structure's): every result matches NumPy, twice."""
    rng = np.random.default_rng(7)
    base = rng.standard_normal((6, 8)).astype(np.float32)
    ints = rng.integers(-50, 50, (6, 8)).astype(np.int32)
    g, gi = gt.asarray(base), gt.asarray(ints)
    cases = [
        (g, 0.75, base, 0.75),
        (g, 2, base, 2),  # int scalar: same result dtype, another key
        (gi, 2, ints, 2),  # another dtype
        (gi, 0.5, ints, 0.5),  # float scalar with an int array: the default float
        (gi, 3, ints, 3),  # another int value: the same launch
        (g[::2], 0.75, base[::2], 0.75),  # strided rows, another shape
        (g[:, ::3], 0.75, base[:, ::3], 0.75),
        (g.T, 0.75, base.T, 0.75),  # transposed: same size, other strides
        (g[1:4], 0.75, base[1:4], 0.75),  # same shape as g[::2], other strides
        (g[:3], 0.75, base[:3], 0.75),  # same shape and strides as g[1:4], another offset
        (g[0], 0.75, base[0], 0.75),
        (g, g[0], base, base[0]),  # broadcast
        (g[0], g, base[0], base),
        (g[:, :1], g[0], base[:, :1], base[0]),  # both broadcast
    ]
    for _ in range(2):
        for a, b, na, nb in cases:
            got = gt.asnumpy(a * b)
            expect = na * nb
            if np.asarray(na).dtype == np.int32 and isinstance(nb, float):
                expect = expect.astype(np.float32)
            assert got.dtype == expect.dtype, (a.shape, b)
            np.testing.assert_array_equal(got, expect, err_msg=f"{a.shape} {a.strides} * {b!r}")
    assert _layout_entry("multiply", g, 0.75) is not _layout_entry("multiply", g, 2)
    assert _layout_entry("multiply", g[1:4], 0.75) is not _layout_entry("multiply", g[::2], 0.75)
    assert _layout_entry("multiply", g[1:4], 0.75) is _layout_entry("multiply", g[:3], 0.75)  # offsets are per call
    assert _layout_entry("multiply", g, 0.75).plan is not _layout_entry("multiply", g.T, 0.75).plan


def test_eager_cache_scalar_values_are_per_call(eager) -> None:
    """The scalar's value is never part of a cached launch: -0.0/0.0, NaN, 1/1.0/True."""
    x = gt.asarray(np.array([1.0, -2.0, 0.0, np.inf], np.float32))
    xs = gt.asnumpy(x)
    with np.errstate(invalid="ignore"):
        for v in (0.5, 0.0, -0.0, math.nan, 1.0, -3.25, 1e30):
            got, want = gt.asnumpy(x * v), xs * np.float32(v)
            np.testing.assert_array_equal(got, want)
            keep = ~np.isnan(want)  # signed zeros exactly; a NaN's sign is the device's (inf * 0)
            assert np.array_equal(np.signbit(got)[keep], np.signbit(want)[keep])
    b = gt.asarray(np.array([True, False]))
    assert gt.asnumpy(b & True).tolist() == [True, False] and gt.asnumpy(b & False).tolist() == [False, False]
    i8 = gt.asarray(np.array([1, -2, 3], np.int8))
    for v in (1, 2, -1, 127, 0):
        np.testing.assert_array_equal(gt.asnumpy(i8 * v), np.array([1, -2, 3], np.int8) * np.int8(v))


def test_eager_cache_errors_still_raised_at_the_call(eager) -> None:
    x = gt.asarray(np.arange(4, dtype=np.int8))
    y = gt.asarray(np.ones(3, np.float32))
    assert gt.asnumpy(x + 1).tolist() == [1, 2, 3, 4]
    assert _layout_entry("add", x, 1) is not None  # cached: the checks that depend on values remain
    with pytest.raises(OverflowError):
        x + 1000
    with pytest.raises(OverflowError):
        x + (-129)
    assert gt.asnumpy(x + 127).tolist() == [127, -128, -127, -126]  # in range: wraps as NumPy does
    with pytest.raises(TypeError):
        x + True  # another scalar kind: its own resolution (bool with an int array)
    with pytest.raises(TypeError):
        x + 1j
    gt.asnumpy(y * 2.0)
    with pytest.raises(ValueError):
        y * gt.asarray(np.ones(4, np.float32))  # shapes that do not broadcast
    with pytest.raises(TypeError):
        gt.asarray(np.array([True])) + 1.5
    assert gt.asnumpy(y * 2.0).tolist() == [2.0, 2.0, 2.0]


def test_eager_cache_skips_empty_and_inplace(eager) -> None:
    e = gt.asarray(np.zeros((0, 3), np.float32))
    assert (e * 2.0).shape == (0, 3) and (e * 2.0).shape == (0, 3)
    assert _layout_entry("multiply", e, 2.0) is None
    y = gt.asarray(np.ones(5, np.float32))
    x = gt.asarray(np.arange(5, dtype=np.float32))
    for _ in range(2):
        y += x  # in place: the slow path (overlap handling), never a new array
    np.testing.assert_array_equal(gt.asnumpy(y), 1 + 2 * np.arange(5, dtype=np.float32))
    with pytest.raises(TypeError):
        i = gt.asarray(np.ones(5, np.int32))
        i += 0.5  # would change the dtype


def test_eager_cache_inputs_with_pending_readers(eager) -> None:
    """A lazy array made with fusion on, used by an eager op: materialised, right value, and a
    write into a watched leaf still materialises its lazy readers first."""
    a = gt.asarray(np.arange(6, dtype=np.float32))
    with gt.fusion(True):
        lazy = a * 2.0 + 1.0
    for _ in range(2):
        np.testing.assert_array_equal(gt.asnumpy(lazy * 3.0), (np.arange(6) * 2.0 + 1.0) * 3.0)
    with gt.fusion(True):
        reader = a + 1.0
    a[...] = 100.0  # a write into the leaf: the reader is computed first
    np.testing.assert_array_equal(gt.asnumpy(reader), np.arange(6, dtype=np.float32) + 1.0)


def test_eager_cache_threads(eager) -> None:
    """Threads sharing the ready launches (fusion off): every chain matches NumPy."""
    import threading

    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            rng = np.random.default_rng(50 + k)
            xs = rng.standard_normal(300 + k % 2).astype(np.float32)
            x = gt.asarray(xs)
            y, ref = x, xs.copy()
            for it in range(40):
                c = 0.5 + 0.01 * (k + it)
                y = y * c + x
                ref = (ref * np.float32(c) + xs).astype(np.float32)
            np.testing.assert_allclose(gt.asnumpy(y), ref, **tol("float32", "accumulated_abs"))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    if errors:
        raise errors[0]


def test_resolved_op_cache_scalar_kinds_fused() -> None:
    """The fused path's resolution cache is keyed by scalar kind: int and float scalars with an
    int array give different result dtypes; errors of a kind that never resolved remain."""
    previous = gt.set_fusion(True)
    try:
        x = gt.asarray(np.arange(4, dtype=np.int16))
        for _ in range(2):
            assert (x + 1).dtype == gt.int16 and (x + 1.5).dtype == gt.float32
            np.testing.assert_array_equal(gt.asnumpy(x + 1.5), np.arange(4) + 1.5)
            with pytest.raises(OverflowError):
                x + 40000
            with pytest.raises(TypeError):
                x + True
    finally:
        gt.set_fusion(previous)


def test_storage_freed_when_array_dies(backend) -> None:
    pool = backend.memory_pool
    gc.collect()
    used = pool.used_bytes()
    arrays = [gt.empty((1000 + k,)) for k in range(5)]
    assert pool.used_bytes() > used
    del arrays
    assert pool.used_bytes() == used  # freed at once (refcounting), no garbage collection needed


def test_scalar_param_memo_keeps_bits_apart() -> None:
    w = ew._scalar_param
    assert w(0.0, "float32") != w(-0.0, "float32")
    assert w(0.0, "float32")[0] == [0] and w(-0.0, "float32")[0] == [0x80000000]
    assert w(1.0, "float32") == w(1.0, "float32") and w(1, "int32")[0] == [1] and w(True, "int32")[0] == [1]
    assert w(1.5, "float32")[1] == np.float32(1.5).tobytes()
    assert w(math.nan, "float32")[0] == codegen.scalar_words(math.nan, "float32")
    assert w(-1, "uint8")[0] == [255]


def test_plan_launch_checks_its_arguments(backend) -> None:
    p = backend.alloc(64)
    op = ArrayOperand(p, "float32", (1,))
    plan = ew.launch_plan(backend, "x0 * x1", "f32", [op, ScalarOperand(2.0, "float32")], ["f32", "f32"], op, [16])
    with pytest.raises(Exception, match="pointers"):
        plan.launch(backend, [p], [2.0])
    with pytest.raises(Exception, match="values"):
        plan.launch(backend, [p, p], [])
    with pytest.raises(Exception, match="past the end"):
        plan.launch(backend, [p + 4, p], [2.0])
    backend.free(p)
    with pytest.raises(Exception, match="unknown or freed"):
        plan.launch(backend, [p, p], [2.0])


def test_bindings_whole_allocation_and_parts(backend) -> None:
    """``bindings`` keeps the region of a whole allocation; parts and other pointers of the same
    allocation are bound on their own, and a freed pointer is refused."""
    n = 1000
    p = backend.alloc(4 * n)
    regions, firsts = backend.bindings([p], [4], [(0, n, 0)])
    assert firsts == [0] and regions[0] == backend.window(p, 4 * n, 4).binding
    odd = backend.alloc(7)  # a size that is not a multiple of 4
    assert backend.bindings([odd], [1], [(0, 7, 0)])[0][0] == backend.window(odd, 7, 1).binding
    backend.free(odd)
    assert backend.bindings([p], [4], [(0, n, 0)])[0][0] is regions[0]  # kept
    part, first = backend.bindings([p + 4 * 100], [4], [(0, 10, 0)])
    assert part[0][2] < regions[0][2] and first[0] == 100 - part[0][1] // 4
    _, first = backend.bindings([p], [4], [(5, n - 5, -2)])
    assert first == [backend.window(p + 4 * 5, 4 * (n - 5), 4).first + 2]  # (the alignment's)
    with pytest.raises(Exception, match="past the end"):
        backend.bindings([p], [4], [(1, n, 0)])
    with pytest.raises(Exception, match="multiple of the item size"):
        backend.bindings([p + 2], [4], [(0, 4, 0)])
    backend.free(p)
    with pytest.raises(Exception, match="unknown or freed"):
        backend.bindings([p], [4], [(0, n, 0)])


def test_record_without_direct_pass_calls(backend, eager, monkeypatch: pytest.MonkeyPatch) -> None:
    """The public wgpu-py pass methods (used when wgpu-py lacks the internals) record the same."""
    ctx = backend.context
    monkeypatch.setattr(ctx, "_pass_calls", None)
    x = gt.asarray(np.arange(8, dtype=np.float32))
    np.testing.assert_array_equal(gt.asnumpy(x * 2.0 + x), np.arange(8) * 3.0)
    monkeypatch.undo()
    np.testing.assert_array_equal(gt.asnumpy(x * 2.0 + x), np.arange(8) * 3.0)


def test_dispatch_wrappers_see_cached_launches(backend, eager, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``dispatch`` wrapper set on the context (the profiler's host mode, spies) sees every
    elementwise dispatch, also those of cached launches, with the same parameters."""
    ctx = backend.context
    x = gt.asarray(np.arange(8, dtype=np.float32))
    gt.asnumpy(x * 2.0)  # cached
    seen: list[tuple[str, list[int]]] = []
    real = ctx.dispatch

    def spy(name, params, buffers, workgroups, defines=None, **kw):
        words = np.frombuffer(bytes(params), "<u4").tolist() if isinstance(params, (bytes, bytearray)) else params
        seen.append((name, list(words)))
        return real(name, params, buffers, workgroups, defines, **kw)

    monkeypatch.setattr(ctx, "dispatch", spy)
    np.testing.assert_array_equal(gt.asnumpy(x * 2.0), np.arange(8) * 2.0)
    assert [s[0] for s in seen] == ["elementwise"]
    assert seen[0][1][-1] == int(np.float32(2.0).view(np.uint32))  # the scalar's word, last


def test_uniform_window_errors_on_the_record_path(backend) -> None:
    ctx = backend.context
    with pytest.raises(Exception, match="too many"):
        ctx.param_window("k", 70_000)
    (window, slot), (window16, slot16) = ctx.param_window("k", 20), ctx.param_window("k", 16)
    assert window == window16 and slot >= 32 and slot16 >= 16 and slot % slot16 == 0  # per alignment


def test_plan_scalar_bytes_match_the_scalar_words(backend) -> None:
    """A plan's scalar parameter bytes (floats packed together, the last single scalar kept)
    are ``_scalar_param``'s for every value: signed zeros, NaN, a float32 overflow, ints."""
    p = backend.alloc(64)
    op = ArrayOperand(p, "float32", (1,))
    for dtypes in (["float32"] * 3, ["float64", "float32"], ["float32"], ["int32", "float32"]):
        scalars = [ScalarOperand(1.0, d) for d in dtypes]
        plan = ew.launch_plan(backend, " + ".join(f"x{k + 1}" for k in range(len(dtypes))) + " + x0", "f32",
                              [op, *scalars], ["f32"] * (len(dtypes) + 1), op, [16])
        for values in ([0.5, -0.0, 1e39], [math.nan, 2, True], [-3.25, 1.5, 0.0], [1e39, -1e39, 7]):
            values = values[: len(dtypes)]
            want = b"".join(ew._scalar_param(v, d)[1] for v, d in zip(values, dtypes))
            assert plan._scalar_bytes(values) == want, (dtypes, values)
            assert plan._scalar_bytes(values) == want  # (again: the kept single scalar)
    backend.free(p)
