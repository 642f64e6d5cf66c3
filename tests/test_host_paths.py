"""The cached per-call paths of the namespace (a repeated call structure replays its plan):
``where``, reductions, ``argmax``/``argmin``, ``take``/``x[idx]``, ``concat``/``stack``, and the
direct small readback; each repeated call gives NumPy's result and the first call's errors,
with fusion on and off."""

from __future__ import annotations

import numpy as np
import pytest

import gputensor as gt
from gputensor._dispatch import backend as get_backend
from gputensor._shapes import AxisError

from _compare import assert_same

RNG = np.random.default_rng(7)
#: float64 needs the adapter feature shader-f64
NEEDS_F64 = pytest.mark.requires("shader-f64")


@pytest.fixture(params=[False, True], ids=["eager", "fused"])
def fusion(request):
    with gt.fusion(request.param):
        yield request.param


def _repeat(fn, expected, family="exact", times=3):
    for _ in range(times):
        assert_same(fn(), expected, family)


def test_where_repeated(fusion) -> None:
    c = RNG.random((4, 5)) > 0.5
    a = RNG.random((4, 5)).astype(np.float32)
    b = RNG.random((1, 5)).astype(np.float32)
    gc, ga, gb = gt.asarray(c), gt.asarray(a), gt.asarray(b)
    _repeat(lambda: gt.where(gc, ga, gb), np.where(c, a, b))
    _repeat(lambda: gt.where(gc, ga, 2.5), np.where(c, a, np.float32(2.5)))
    _repeat(lambda: gt.where(gc, -1.0, gb), np.where(c, np.float32(-1.0), b))
    _repeat(lambda: gt.where(gc, ga * 2, gb + 1), np.where(c, a * 2, b + np.float32(1)))  # lazy operands
    h = a.astype(np.float16)
    gh = gt.asarray(h)
    _repeat(lambda: gt.where(gc, gh, 0.1), np.where(c, h, np.float16(0.1)))  # a rounded f16 scalar
    gi = gt.asarray(np.arange(20, dtype=np.int8).reshape(4, 5))
    _repeat(lambda: gt.where(gc, gi, 3), np.where(c, np.arange(20, dtype=np.int8).reshape(4, 5), np.int8(3)))
    for _ in range(2):  # a value-dependent error stays an error on the replayed path
        with pytest.raises(OverflowError):
            gt.where(gc, gi, 1000)
        with pytest.raises(TypeError):
            gt.where(ga, ga, gb)


def test_clip_repeated(fusion) -> None:
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    lo = RNG.standard_normal((1, 5)).astype(np.float32)
    g, glo = gt.asarray(x), gt.asarray(lo)
    _repeat(lambda: gt.clip(g, -0.5, 0.5), np.clip(x, np.float32(-0.5), np.float32(0.5)))
    _repeat(lambda: gt.clip(g, glo, None), np.maximum(x, lo))
    _repeat(lambda: gt.clip(g * 2, max=1.0), np.minimum(x * 2, np.float32(1.0)))
    i = np.arange(-10, 10, dtype=np.int8).reshape(4, 5)
    gi = gt.asarray(i)
    _repeat(lambda: gt.clip(gi, -3, 1000), np.clip(i, -3, 127))  # an int bound past the dtype's range
    for _ in range(2):  # the first call's errors, also after the structure ran
        with pytest.raises(TypeError):
            gt.clip(gi, 0.5, None)
        with pytest.raises(ValueError):
            gt.clip(g, gt.asarray(np.zeros((3, 1), np.float32)), None)


def test_fills_repeated(fusion) -> None:
    for _ in range(3):
        assert_same(gt.full((2, 3), 1.5), np.full((2, 3), 1.5, np.float32))
        assert_same(gt.ones(4, dtype=gt.int64), np.ones(4, np.int64))
        assert_same(gt.zeros((3,), dtype=gt.int8), np.zeros(3, np.int8))
        assert_same(gt.full(2, True), np.full(2, True))
        with pytest.raises(OverflowError):
            gt.full(2, -1, dtype=gt.uint8)


def test_reductions_repeated(fusion) -> None:
    x = RNG.standard_normal((6, 7)).astype(np.float32)
    g = gt.asarray(x)
    for axis in (None, 0, 1, -1, (0, 1)):
        for keepdims in (False, True):
            _repeat(lambda: gt.max(g, axis=axis, keepdims=keepdims), np.max(x, axis=axis, keepdims=keepdims))
            _repeat(lambda: gt.sum(g, axis=axis, keepdims=keepdims),
                    np.sum(x, axis=axis, keepdims=keepdims), "reduction")
            if axis is None or isinstance(axis, int):
                _repeat(lambda: gt.argmax(g, axis=axis, keepdims=keepdims),
                        np.argmax(x, axis=axis, keepdims=keepdims))
                _repeat(lambda: gt.argmin(g, axis=axis, keepdims=keepdims),
                        np.argmin(x, axis=axis, keepdims=keepdims))
    t = g.T  # strided
    _repeat(lambda: gt.argmax(t), np.argmax(x.T))
    _repeat(lambda: gt.argmax(t, axis=0), np.argmax(x.T, axis=0))
    _repeat(lambda: gt.std(g, axis=0, correction=1), np.std(x, axis=0, ddof=1), "reduction")
    for _ in range(2):
        with pytest.raises(TypeError):
            gt.max(g, axis=True)  # a bool is no axis, also after axis=1 ran
        with pytest.raises(ValueError):
            gt.max(g, axis=(0, 0))


def test_take_repeated(fusion) -> None:
    x = RNG.random((5, 8)).astype(np.float32)
    idx = np.array([0, -1, 3, 2, 3])
    g, gi = gt.asarray(x), gt.asarray(idx)
    _repeat(lambda: gt.take(g, gi, axis=1), np.take(x, idx, axis=1))
    _repeat(lambda: gt.take(g, gi, axis=0), np.take(x, idx, axis=0))
    flat = gt.asarray(x.ravel())
    _repeat(lambda: flat[gi], x.ravel()[idx])
    bad = gt.asarray(np.array([0, 40]))
    for _ in range(2):  # out of range: IndexError at the next wait, every time
        y = gt.take(flat, bad)
        with pytest.raises(IndexError):
            gt.synchronize()
        del y


@pytest.mark.parametrize("dtype", ["float32", "uint8", "float16", pytest.param("complex128", marks=NEEDS_F64)])
def test_take_replay_views(fusion, dtype) -> None:
    """A replayed take binds each call's own pointers: views of one structure at other offsets,
    packed dtypes, 16-bit indices, a 16-byte dtype (moved as two halves, not replayed)."""
    x = (RNG.random(64) * 100).astype(dtype)
    g = gt.asarray(x)
    idx = np.array([3, -1, 0, 7, 7, 2], dtype=np.int16)
    gi = gt.asarray(idx)
    for start in (0, 8, 16, 3, 8):
        view = g[start:start + 8]
        _repeat(lambda: gt.take(view, gi), np.take(x[start:start + 8], idx), times=2)
        _repeat(lambda: view[gi], x[start:start + 8][idx], times=2)
    ctx = get_backend().context
    gt.synchronize()
    before = ctx.stats["dispatches"], ctx.stats["submits"]
    keep = [gt.take(view, gi) for _ in range(3)]
    assert (ctx.stats["dispatches"] - before[0], ctx.stats["submits"] - before[1]) == (3, 0)
    del keep
    bad = gt.asarray(np.array([0, 8], dtype=np.int16))
    for _ in range(3):  # the replayed plan checks the range on the device too
        y = view[bad]
        with pytest.raises(IndexError, match="axis 0 with size 8"):
            gt.synchronize()
        del y


@pytest.mark.parametrize("dtype", ["float32", "int32", pytest.param("float64", marks=NEEDS_F64), "float16", "uint8",
                                   "bool", "complex64"])
def test_concat_stack_repeated(fusion, dtype) -> None:
    hs = [(RNG.random(s) * 50).astype(dtype) for s in ((3, 4), (3, 2), (3, 5))]
    gs = [gt.asarray(h) for h in hs]
    _repeat(lambda: gt.concat(gs, axis=1), np.concatenate(hs, axis=1))
    many = [(RNG.random((2, 3)) * 50).astype(dtype) for _ in range(11)]  # more inputs than one kernel takes
    gm = [gt.asarray(h) for h in many]
    _repeat(lambda: gt.concat(gm, axis=0), np.concatenate(many, axis=0))
    _repeat(lambda: gt.concat(gm, axis=-1), np.concatenate(many, axis=-1))
    for axis in (0, 1, 2, -1):
        _repeat(lambda: gt.stack(gm, axis=axis), np.stack(many, axis=axis))
    base = np.arange(24).astype(dtype)
    gbase = gt.asarray(base)
    # views starting inside a word, strided views, lazy inputs: the general copies
    _repeat(lambda: gt.concat([gbase[1:6], gbase[3:9]]), np.concatenate([base[1:6], base[3:9]]))
    _repeat(lambda: gt.concat([gbase[::3], gbase[2:4]]), np.concatenate([base[::3], base[2:4]]))
    _repeat(lambda: gt.stack([gbase[1:5], gbase[2:6]]), np.stack([base[1:5], base[2:6]]))
    with pytest.raises(ValueError):
        gt.concat([gs[0], gs[1]], axis=0)


def test_small_readbacks() -> None:
    ctx = get_backend().context
    x = gt.asarray(np.arange(1, 17, dtype=np.float32))
    for _ in range(3):
        assert float(gt.sum(x)) == 136.0
        assert gt.max(x).item() == 16.0
        assert_same(np.asarray(x[3:7]), np.arange(4, 8, dtype=np.float32))
    u8 = gt.asarray(np.arange(11, dtype=np.uint8))
    assert_same(np.asarray(u8[1:4]), np.arange(1, 4, dtype=np.uint8))  # a read inside a word
    gt.synchronize()
    before = dict(ctx.stats)
    float(gt.sum(x))
    delta = {k: ctx.stats[k] - before[k] for k in ("submits", "maps", "staging_created")}
    assert delta == {"submits": 1, "maps": 1, "staging_created": 0}
    gt.synchronize()
    before = dict(ctx.stats)
    gt.synchronize()
    assert ctx.stats["submits"] == before["submits"] and ctx.stats["maps"] == before["maps"]


@pytest.mark.parametrize("dtype", [np.float32, pytest.param(np.float64, marks=NEEDS_F64)])
def test_matmul_repeated(fusion, dtype) -> None:
    """Float matmul replays its plan per call structure: new operands of one structure (views
    at other offsets, transposed views, 1-D operands, broadcast batches) give NumPy's product;
    the plan follows the split-K setting; shape errors are still raised."""
    tol = "summation"  # (dot products of 20 or 24 terms in [0, 1): relative error)
    base = RNG.random((3, 24, 20)).astype(dtype)
    other = RNG.random((20, 12)).astype(dtype)
    gb, go = gt.asarray(base), gt.asarray(other)
    cases = [
        (lambda i: gb[i] @ go, lambda i: base[i] @ other),
        (lambda i: gb[i].mT @ gb[i], lambda i: base[i].T @ base[i]),
        (lambda i: gb @ go[:, i:i + 4], lambda i: base @ other[:, i:i + 4]),
        (lambda i: gb[i, 0] @ go, lambda i: base[i, 0] @ other),
        (lambda i: gb[i] @ go[:, i], lambda i: base[i] @ other[:, i]),
        (lambda i: gb[i, 0] @ gb[i, 1], lambda i: base[i, 0] @ base[i, 1]),
    ]
    for fn, ref in cases:
        for i in range(3):
            assert_same(fn(i), ref(i), tol)
    for splits in ("1", "2"):
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("GPUTENSOR_GEMM_SPLITK", splits)
            for i in range(2):
                assert_same(gb[i] @ go, base[i] @ other, tol)
    with pytest.raises(ValueError):
        go @ gb
    with pytest.raises(TypeError):
        gb @ np.ones((20, 2))


def test_matmul_replay_checks_its_operands() -> None:
    """A replayed matmul records one gemm dispatch (no fill) and gives the result of the
    operands of that call, not of the call that made the plan."""
    ctx = get_backend().context
    a = [gt.asarray(RNG.random((16, 16), dtype=np.float32)) for _ in range(3)]
    a[0] @ a[1]
    for x, y in ((a[1], a[2]), (a[2], a[0])):
        gt.synchronize()
        before = ctx.stats["dispatches"]
        r = x @ y
        assert ctx.stats["dispatches"] - before == 1
        assert_same(r, x.get() @ y.get(), "summation")


def test_searchsorted_repeated(fusion) -> None:
    """searchsorted replays its program: both sides, other arrays of one structure, an empty
    sorted array, scalar queries, and a sorted array split into several windows."""
    from gputensor._backend import sort_common

    s = np.sort(RNG.random(300).astype(np.float32))
    s[10:20] = s[10]
    q = RNG.random(77).astype(np.float32)
    q[:5] = s[10]
    gs, gq = gt.asarray(s), gt.asarray(q)
    for side in ("left", "right"):
        for k in range(3):
            assert_same(gt.searchsorted(gs[k:], gq[k:], side=side), np.searchsorted(s[k:], q[k:], side=side))
    empty = gt.asarray(np.zeros(0, np.float32))
    for _ in range(2):
        assert_same(gt.searchsorted(empty, gq), np.searchsorted(np.zeros(0, np.float32), q))
    assert int(gt.searchsorted(gs, 0.5)) == int(np.searchsorted(s, np.float32(0.5)))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sort_common, "WINDOW_LIMIT", 256)  # 64 float32 per window: several chunks
        for side in ("left", "right"):
            for _ in range(2):
                assert_same(gt.searchsorted(gs, gq, side=side), np.searchsorted(s, q, side=side))


def test_astype_repeated(fusion) -> None:
    """astype replays its copy plan for new sources of one structure (strided views included)."""
    x = RNG.standard_normal((6, 10)).astype(np.float32) * 100
    gx = gt.asarray(x)
    for dtype in (gt.float16, gt.int32, gt.float32):
        for view in (lambda a: a, lambda a: a[1:, ::2], lambda a: a.T):
            for k in range(2):
                got = gt.astype(view(gx[k:]), dtype)
                assert_same(got, view(x[k:]).astype(np.dtype(dtype.name)), "exact" if dtype != gt.float16 else "rounded")


@pytest.mark.parametrize("dtype", ["float32", "int8", "float16", "uint16"])
def test_sort_argsort_repeated(fusion, dtype) -> None:
    """Repeated sort/argsort of one structure replay the kept bitonic program: views at other
    offsets, packed dtypes (their outputs are zero-filled first), both orders, other axes; the
    first call's errors stay errors."""
    x = (RNG.standard_normal(96) * 40).astype(dtype)
    g = gt.asarray(x)
    for start in (0, 32, 5, 32):
        view, ref = g[start:start + 24], x[start:start + 24]
        for descending in (False, True):
            _repeat(lambda: gt.sort(view, descending=descending),
                    np.sort(ref)[::-1] if descending else np.sort(ref))
            expect = np.argsort(-ref.astype(np.float64), kind="stable") if descending else \
                np.argsort(ref, kind="stable")
            _repeat(lambda: gt.argsort(view, descending=descending), expect)
    m = x[:48].reshape(6, 8)
    gm = gt.asarray(m)
    for axis in (0, 1, -1):
        _repeat(lambda: gt.sort(gm, axis=axis), np.sort(m, axis=axis))
        _repeat(lambda: gt.argsort(gm, axis=axis), np.argsort(m, axis=axis, kind="stable"))
    ctx = get_backend().context
    gt.synchronize()
    before = ctx.stats["dispatches"], ctx.stats["submits"]
    keep = [gt.sort(gm) for _ in range(3)] + [gt.argsort(gm) for _ in range(3)]
    assert (ctx.stats["dispatches"] - before[0], ctx.stats["submits"] - before[1]) == (6, 0)
    del keep
    for _ in range(2):
        with pytest.raises(TypeError):
            gt.sort(gm, descending=1)
        with pytest.raises(TypeError):
            gt.argsort(gm, stable=None)
        with pytest.raises(AxisError):
            gt.sort(gm, axis=2)


@pytest.mark.parametrize("dtype", ["float32", "int32", "int8", "float16"])
def test_cumulative_repeated(fusion, dtype) -> None:
    """Repeated cumulative_sum/prod of one structure replay the kept scan: views at other offsets
    and strided views, an explicit dtype, axes of a 2-D array; include_initial and errors keep
    the full path."""
    x = (RNG.random(80) * 4).astype(dtype)
    g = gt.asarray(x)

    def check(fn, ref_fn):
        for _ in range(3):
            res = fn()
            assert_same(res, ref_fn(res.dtype.numpy), "reduction")

    for start in (0, 16, 3, 16):
        view, ref = g[start:start + 40], x[start:start + 40]
        check(lambda: gt.cumulative_sum(view), lambda dt: np.cumsum(ref, dtype=dt))
        check(lambda: gt.cumulative_sum(view[::-2], dtype=gt.float32), lambda dt: np.cumsum(ref[::-2], dtype=dt))
    m = x[:24].reshape(4, 6)
    gm = gt.asarray(m)
    for axis in (0, 1, -1):
        check(lambda: gt.cumulative_prod(gm, axis=axis), lambda dt: np.cumprod(m, axis=axis, dtype=dt))
    check(lambda: gt.cumulative_sum(gm, axis=1, include_initial=True),
          lambda dt: np.concatenate([np.zeros((4, 1), dt), np.cumsum(m, axis=1, dtype=dt)], axis=1))
    ctx = get_backend().context
    gt.synchronize()
    before = ctx.stats["dispatches"], ctx.stats["submits"]
    keep = [gt.cumulative_sum(gm, axis=1) for _ in range(3)]
    assert (ctx.stats["dispatches"] - before[0], ctx.stats["submits"] - before[1]) == (3, 0)
    del keep
    for _ in range(2):
        with pytest.raises(ValueError):
            gt.cumulative_sum(gm)  # axis required for 2-D input
        with pytest.raises(TypeError):
            gt.cumulative_sum(gm, axis=1, include_initial=1)


def test_inplace_repeated(fusion) -> None:
    """In-place operators and writes of expressions into existing arrays, repeated: from the
    second call of a structure they take the kept launch (with fusion on, the kept write of the
    DAG's structure), and every call matches NumPy, with scalars that change between calls,
    broadcast operands, views and operands that overlap the destination."""
    x = RNG.standard_normal((6, 8)).astype(np.float32)
    row = RNG.standard_normal(8).astype(np.float32)
    gx, grow = gt.asarray(x), gt.asarray(row)
    ref = x.copy()
    for k in range(4):
        gx += grow
        ref += row
        gx *= 0.5 + k
        ref *= np.float32(0.5 + k)
        gx -= grow * 2.0  # a lazy operand
        ref -= row * np.float32(2.0)
        assert_same(gx, ref, "exact")
    view, ref_view = gx[1:5, ::2], ref[1:5, ::2]
    for _ in range(3):
        view += 1.0
        ref_view += np.float32(1.0)
        assert_same(gx, ref, "exact")
    for _ in range(3):  # overlapping operand of another layout: copied first, on every call
        gx[1:] += gx[:-1]
        ref[1:] += ref[:-1]
        assert_same(gx, ref, "exact")
        gx[:, 1:] = gx[:, :-1] * 2.0
        ref[:, 1:] = ref[:, :-1] * np.float32(2.0)
        assert_same(gx, ref, "exact")
    for _ in range(3):
        gx[...] = grow * 3.0 + 1.0
        ref[...] = row * np.float32(3.0) + np.float32(1.0)
        assert_same(gx, ref, "exact")
        gx[gx > 2.0] = 0.25
        ref[ref > 2.0] = np.float32(0.25)
        assert_same(gx, ref, "exact")
    lazy = gx * 1.0  # a lazy destination with fusion on
    lazy += grow
    assert_same(lazy, ref * np.float32(1.0) + row, "exact")
    i = np.arange(12, dtype=np.int8).reshape(3, 4)
    gi, ri = gt.asarray(i), i.copy()
    for _ in range(3):
        gi += 5
        ri += np.int8(5)
        assert_same(gi, ri, "exact")
    for _ in range(2):  # the first call's errors, also after the structure ran
        with pytest.raises(OverflowError):
            gi += 1000
        with pytest.raises(TypeError):
            gi += 0.5
        with pytest.raises(ValueError):
            grow += gx
    assert_same(gi, ri, "exact")
    assert_same(grow, row, "exact")


def test_mask_assign_repeated(fusion) -> None:
    """``x[m] = v`` repeated (one kernel writing x in place): the kept write matches NumPy on
    every call, with a mask that is lazy or not, scalars that change and a view as x."""
    x = RNG.standard_normal((5, 6)).astype(np.float32)
    gx, ref = gt.asarray(x), x.copy()
    m = RNG.random((5, 6)) > 0.5
    gm = gt.asarray(m)
    for k in range(3):
        gx[gm] = float(k)
        ref[m] = np.float32(k)
        assert_same(gx, ref, "exact")
        gx[gx > 0.5] = -0.5
        ref[ref > 0.5] = np.float32(-0.5)
        assert_same(gx, ref, "exact")
        view, ref_view = gx[:, 1:4], ref[:, 1:4]
        view[gm[:, 1:4]] = 2.0
        ref_view[m[:, 1:4]] = np.float32(2.0)
        assert_same(gx, ref, "exact")
    gi = gt.asarray(np.arange(30, dtype=np.int8).reshape(5, 6))
    for _ in range(2):
        with pytest.raises(OverflowError):
            gi[gm] = 1000
