"""sort, argsort and searchsorted against NumPy (array-api-strict's definitions), on the bitonic
(short rows) and radix (long rows) paths, windows split, errors before any kernel runs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gputensor as gt
from gputensor._backend import get_backend, ops_search, ops_sort, sort_common, sort_subgroup
from gputensor._backend.errors import BackendError, BackendErrorKind
from gputensor._shapes import AxisError

from _compare import assert_same, run_both

REAL = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64"]


@pytest.fixture(scope="module")
def be():
    return get_backend()


def special(dtype: str) -> np.ndarray:
    """Values that stress a sort: extremes, ties, NaN/inf/-0.0 for floats."""
    d = np.dtype(dtype)
    if d.kind == "f":
        fi = np.finfo(d)
        return np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, fi.max, fi.min,
                         fi.tiny, -fi.tiny, 2.5, 2.5], dtype=d)
    ii = np.iinfo(d)
    return np.array([ii.min, ii.max, 0, 1, ii.min + 1, ii.max - 1, 7, 7, 7], dtype=d)


def sample(rng: np.random.Generator, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """Random values of ``dtype`` with many ties and the special values mixed in."""
    d = np.dtype(dtype)
    if d.kind == "f":
        vals = rng.integers(-20, 20, size=shape).astype(d) / np.array(4, d)
    else:
        info = np.iinfo(d)
        vals = rng.integers(max(info.min, -30), min(info.max, 30), size=shape, endpoint=True).astype(d)
    flat = vals.reshape(-1)
    if flat.size:
        pick = rng.random(flat.size) < 0.3
        flat[pick] = rng.choice(special(dtype), size=int(pick.sum()))
    return vals


def ref_argsort(a: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """array-api-strict's argsort (stable; descending keeps equal elements in input order)."""
    if not descending:
        return np.argsort(a, axis=axis, kind="stable")
    res = np.flip(np.argsort(np.flip(a, axis=axis), axis=axis, kind="stable"), axis=axis)
    return a.shape[axis] - 1 - res


def ref_sort(a: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """array-api-strict's sort (NumPy's stable sort, flipped for descending)."""
    res = np.sort(a, axis=axis, kind="stable")
    return np.flip(res, axis=axis) if descending else res


def check(a: np.ndarray, x: gt.GpuArray, axis: int, descending: bool) -> None:
    """sort and argsort of ``x`` (the device copy of ``a``) against array-api-strict's definitions:
    dtypes (int64 indices), shapes, values (NaNs compare equal)."""
    assert_same(gt.argsort(x, axis=axis, descending=descending), ref_argsort(a, axis, descending).astype(np.int64))
    assert_same(gt.sort(x, axis=axis, descending=descending), ref_sort(a, axis, descending))


# ---- property tests ------------------------------------------------------------------------------
@given(st.data())
def test_sort_argsort_property(data):
    dtype = data.draw(st.sampled_from(REAL))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=7))
    seed = data.draw(st.integers(0, 2**32 - 1))
    a = sample(np.random.default_rng(seed), dtype, shape)
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    descending = data.draw(st.booleans())
    view = data.draw(st.booleans())
    if view:  # a negative-step view of a larger array
        big = sample(np.random.default_rng(seed + 1), dtype, tuple(s + 2 for s in shape))
        sl = tuple(slice(s, 0, -1) if s else slice(0, 0) for s in shape)
        a = big[sl]
        x = gt.asarray(big)[sl]
    else:
        x = gt.asarray(a)
    check(a, x, axis, descending)


@given(st.sampled_from(REAL), st.integers(2049, 6000), st.booleans(), st.integers(0, 2**32 - 1))
def test_radix_rows_property(dtype, n, descending, seed):
    """Rows longer than the bitonic tile take the radix path (one pass per key byte)."""
    a = sample(np.random.default_rng(seed), dtype, (2, n))
    check(a, gt.asarray(a), -1, descending)


# ---- targeted cases ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", REAL)
def test_every_dtype_both_paths(dtype):
    rng = np.random.default_rng(7)
    for shape, axis in (((3, 40), 1), ((2, 3000), -1), ((3000, 2), 0)):
        a = sample(rng, dtype, shape)
        for descending in (False, True):
            check(a, gt.asarray(a), axis, descending)


def test_all_equal_keys_and_stability():
    for n in (5, 2048, 5000):
        a = np.zeros(n, np.float32)
        a[::3] = -0.0  # -0.0 == +0.0: one group, input order kept
        for descending in (False, True):
            i = gt.argsort(gt.asarray(a), descending=descending).get()
            np.testing.assert_array_equal(i, np.arange(n))
    a = np.array([3, 1, 3, 2, 1, 3, np.nan, 2, np.nan], np.float64)
    np.testing.assert_array_equal(gt.argsort(gt.asarray(a), descending=True).get(), [6, 8, 0, 2, 5, 3, 7, 1, 4])
    np.testing.assert_array_equal(gt.argsort(gt.asarray(a)).get(), [1, 4, 3, 7, 0, 2, 5, 6, 8])
    np.testing.assert_array_equal(gt.sort(gt.asarray(a), descending=True).get(), [np.nan, np.nan, 3, 3, 3, 2, 2, 1, 1])


def test_integer_extremes():
    for dtype in ("int64", "uint64", "int32", "int8"):
        info = np.iinfo(dtype)
        a = np.array([info.max, info.min, 0, info.max - 1, info.min + 1, -1 if info.min else 1], dtype)
        for n in (a.size, 4000):
            b = np.resize(a, n)
            check(b, gt.asarray(b), 0, False)
            check(b, gt.asarray(b), 0, True)


def test_sort_keeps_values_bitwise_up_to_zero_signs():
    """sort maps bits back without a values array: NaN payloads and -0.0 survive."""
    a = np.array([np.nan, 1.0, -0.0, -np.nan, 0.0, -2.0], np.float32)
    s = gt.sort(gt.asarray(a)).get()
    np.testing.assert_array_equal(s[:4], [-2.0, 0.0, 0.0, 1.0])
    assert np.signbit(s[:4]).tolist() == [True, True, False, False]  # -0.0 before +0.0
    assert np.isnan(s[4:]).all()
    assert sorted(a.view(np.uint32).tolist()) == sorted(s.view(np.uint32).tolist())


def test_empty_and_errors():
    for shape in ((0,), (3, 0), (0, 4)):
        a = np.zeros(shape, np.float32)
        for axis in range(-len(shape), len(shape)):
            check(a, gt.asarray(a), axis, False)
    x = gt.asarray(np.arange(4.0))
    with pytest.raises(TypeError):
        gt.sort(gt.asarray(np.array([True, False])))
    with pytest.raises(TypeError):
        gt.argsort(np.arange(3))
    with pytest.raises(TypeError):
        gt.sort(x, descending=1)
    with pytest.raises(AxisError):
        gt.sort(x, axis=1)
    with pytest.raises(AxisError):
        gt.argsort(gt.asarray(1.0))
    with pytest.raises(TypeError):
        gt.sort(x, axis=0.5)


def test_windows_split(monkeypatch, be):
    """Rows larger than one binding window are sorted in chunks (scatter per destination
    window); many rows are grouped into window-sized units."""
    monkeypatch.setattr(sort_common, "WINDOW_LIMIT", 48 * 1024)
    rng = np.random.default_rng(3)
    a = sample(rng, "float64", (2, 20000))  # 160 KB per row > 48 KB
    check(a, gt.asarray(a), -1, False)
    b = sample(rng, "int16", (400, 100))    # many short rows, several units
    check(b, gt.asarray(b), 1, True)
    c = sample(rng, "uint8", (30, 3000))
    check(c, gt.asarray(c), 1, False)


def test_backend_validation(be):
    src = be.alloc(64)
    out = be.alloc(64)
    try:
        before = be.context.stats["dispatches"]
        cases = [
            lambda: ops_sort.sort_values(be, src, "complex64", 1, 4, out),
            lambda: ops_sort.sort_values(be, src, "float32", 1, 4, out, ld=2),
            lambda: ops_sort.sort_values(be, src, "float32", 2, 16, out),          # past the end
            lambda: ops_sort.sort_values(be, src, "float32", -1, 4, out),
            lambda: ops_sort.argsort(be, src, "float32", 1, 4, out, index_dtype="int16"),
            lambda: ops_search.searchsorted(be, src, 4, src, 4, "float32", out, side="middle", index_dtype="int32"),
            lambda: ops_search.searchsorted(be, src, 100, src, 4, "float32", out, index_dtype="int32"),
        ]
        for case in cases:
            with pytest.raises(BackendError) as info:
                case()
            assert info.value.kind == BackendErrorKind.INVALID_ARGUMENT
        assert be.context.stats["dispatches"] == before
    finally:
        be.free(src)
        be.free(out)


# ---- searchsorted ----------------------------------------------------------------------------------
@given(st.data())
def test_searchsorted_property(data):
    dtype = data.draw(st.sampled_from(REAL))
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = data.draw(st.integers(0, 40))
    a = np.sort(sample(rng, dtype, (n,)), kind="stable")
    qshape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=5))
    q = sample(rng, dtype, qshape)
    side = data.draw(st.sampled_from(["left", "right"]))
    ref = np.asarray(np.searchsorted(a, q, side=side), dtype=np.int64)
    assert_same(gt.searchsorted(gt.asarray(a), gt.asarray(q), side=side), ref)
    if n:
        perm = rng.permutation(n)
        unsorted = np.empty_like(a)
        unsorted[perm] = a
        assert_same(gt.searchsorted(gt.asarray(unsorted), gt.asarray(q), side=side, sorter=gt.asarray(perm)), ref)


def test_searchsorted_cases(monkeypatch):
    a = np.array([-np.inf, -1.0, -0.0, 0.0, 2.0, 2.0, np.inf, np.nan, np.nan], np.float32)
    q = np.array([np.nan, 0.0, -0.0, 2.0, np.inf, -np.inf, 5.0], np.float32)
    for side in ("left", "right"):
        run_both(lambda xp: xp.searchsorted(xp.asarray(a), xp.asarray(q), side=side))
    assert gt.searchsorted(gt.asarray(a), 2.0).get().shape == ()
    assert int(gt.searchsorted(gt.asarray(a), 2.0, side="right")) == 6
    # mixed dtypes compare in the promoted dtype
    np.testing.assert_array_equal(
        gt.searchsorted(gt.asarray(np.array([1, 5, 9], np.int8)), gt.asarray(np.array([4, 300], np.int16))).get(),
        [1, 3])
    np.testing.assert_array_equal(
        gt.searchsorted(gt.asarray(np.array([1.5, 2.5])), gt.asarray(np.array([2, 3], np.int32))).get(), [1, 2])
    # a sorted array larger than one window is searched chunk by chunk
    monkeypatch.setattr(sort_common, "WINDOW_LIMIT", 4096)
    big = np.sort(np.random.default_rng(1).integers(0, 1000, 5000)).astype(np.int32)
    qs = np.arange(-5, 1005, 7, dtype=np.int32)
    for side in ("left", "right"):
        run_both(lambda xp: xp.searchsorted(xp.asarray(big), xp.asarray(qs), side=side))


def test_searchsorted_errors():
    a = gt.asarray(np.array([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError):
        gt.searchsorted(gt.asarray(np.ones((2, 2))), a)
    with pytest.raises(ValueError):
        gt.searchsorted(a, a, side="middle")
    with pytest.raises(TypeError):
        gt.searchsorted(a, "x")
    with pytest.raises(TypeError):
        gt.searchsorted(gt.asarray(np.array([True])), a)
    with pytest.raises(TypeError):  # int64 and uint64 do not promote
        gt.searchsorted(gt.asarray(np.array([1], np.int64)), gt.asarray(np.array([1], np.uint64)))
    with pytest.raises(TypeError):
        gt.searchsorted(a, a, sorter=gt.asarray(np.array([0.0, 1.0, 2.0])))
    with pytest.raises(ValueError):
        gt.searchsorted(a, a, sorter=gt.asarray(np.array([0, 1])))
    with pytest.raises(ValueError):
        gt.searchsorted(a, a, sorter=gt.asarray(np.array([0, 1, 3])))


def test_int32_index_outputs(be):
    """Adapters without shader-int64 get int32 indices: the backend writes them directly."""
    a = np.random.default_rng(8).integers(-5, 5, (3, 3000)).astype(np.int16)
    src = be.alloc(a.nbytes)
    out = be.alloc(a.size * 4)
    try:
        be.copy_htod(src, a)
        for rows, n in ((3, 3000), (6, 1500)):
            ops_sort.argsort(be, src, "int16", rows, n, out, descending=True, index_dtype="int32")
            got = np.empty((rows, n), np.int32)
            be.copy_dtoh(got, out)
            np.testing.assert_array_equal(got, ref_argsort(a.reshape(rows, n), -1, True))
        q = np.array([-6, 0, 4, 9], np.int16)
        qp = be.alloc(q.nbytes)
        srt = np.sort(a.reshape(-1))
        sp = be.alloc(srt.nbytes)
        be.copy_htod(qp, q)
        be.copy_htod(sp, srt)
        ops_search.searchsorted(be, sp, srt.size, qp, q.size, "int16", out, side="right", index_dtype="int32")
        got = np.empty(q.size, np.int32)
        be.copy_dtoh(got, out)
        np.testing.assert_array_equal(got, np.searchsorted(srt, q, side="right"))
        be.free(qp)
        be.free(sp)
    finally:
        be.free(src)
        be.free(out)


# ---- the two scatter kernels (subgroup ranking and counting sorts) --------------------------------
def expected_scatter(be, kw: int = 1, carry_vals: bool = False) -> str:
    return "sort_scatter" if sort_subgroup.scatter_rows(be, kw, carry_vals) is None else "sort_scatter_sg"


@pytest.mark.parametrize("subgroup", [True, False], ids=["subgroup", "counting"])
def test_scatter_variants(monkeypatch, be, subgroup, kernels_run):
    """Both scatter kernels against NumPy: rows crossing tile boundaries (n not a multiple of the
    2048-element tile), several rows, both orders, ties, NaNs, 1/2/4/8-byte keys."""
    monkeypatch.setattr(sort_subgroup, "SUBGROUP_RANK", subgroup)
    names = kernels_run
    if subgroup and "subgroup" in be.context.features:
        assert ops_sort.subgroup_probe(be) is not None  # every adapter we test on passes the probe
    rng = np.random.default_rng(21)
    for dtype, shape in (("float32", (2049,)), ("float32", (3, 4097)), ("float64", (2, 6000)),
                         ("int16", (2, 2050)), ("uint8", (5000,)), ("int64", (4100,))):
        a = sample(rng, dtype, shape)
        for descending in (False, True):
            check(a, gt.asarray(a), -1, descending)
    used = {n for n in names if n.startswith("sort_scatter")}
    assert used == {"sort_scatter_sg" if subgroup and ops_sort.subgroup_probe(be) else "sort_scatter"}
    # equal keys keep input order; NaNs (all one key) too, last ascending, first descending
    for n in (2049, 6145):
        a = np.zeros(n, np.float32)
        a[::3] = -0.0
        a[1::7] = np.nan
        a[2::5] = 1.0
        for descending in (False, True):
            i = gt.argsort(gt.asarray(a), descending=descending).get()
            np.testing.assert_array_equal(i, ref_argsort(a, 0, descending))
        b = np.full((2, n), 7, np.int32)
        assert_same(gt.argsort(gt.asarray(b)), np.asarray(np.broadcast_to(np.arange(n), (2, n))))


def test_probe_decides_the_scatter_kernel(monkeypatch, be, kernels_run):
    """The cached probe result is what selects the kernel; a probed subgroup size other than
    the one the kernel meets at run time only changes its counter rows, not the results."""
    ctx = be.context
    monkeypatch.setattr(sort_subgroup, "SUBGROUP_RANK", True)
    sgs = ops_sort.subgroup_probe(be)
    assert sort_subgroup._PROBES[ctx] == sgs  # cached per context
    if "subgroup" in ctx.features:
        assert sgs in (4, 8, 16, 32, 64, 128)
    else:
        assert sgs is None
    a = sample(np.random.default_rng(4), "float32", (2, 5000))
    for fake, kernel in ((None, "sort_scatter"), (4, "sort_scatter_sg"), (128, "sort_scatter_sg")):
        if fake is not None and sgs is None:
            continue  # no subgroup feature: the kernel could not compile
        monkeypatch.setitem(sort_subgroup._PROBES, ctx, fake)
        names = kernels_run
        names.clear()
        check(a, gt.asarray(a), -1, False)
        assert expected_scatter(be) == kernel
        other = "sort_scatter_sg" if kernel == "sort_scatter" else "sort_scatter"
        assert kernel in names and other not in names
        if fake:
            rows = sort_subgroup.scatter_rows(be, 1, False)
            assert rows <= 256 // fake and (fake < 128 or rows == 2)
    monkeypatch.setattr(sort_subgroup, "SUBGROUP_RANK", False)
    monkeypatch.setitem(sort_subgroup._PROBES, ctx, sgs)
    assert sort_subgroup.scatter_rows(be, 2, True) is None and expected_scatter(be) == "sort_scatter"


def test_probe_layout_check():
    """probe_layout_ok accepts contiguous subgroups only."""
    def words(sgs: int, place) -> list[int]:
        """The probe's output when invocation lid is lane q % sgs of subgroup q // sgs, q = place(lid)."""
        lid_at = {place(lid): lid for lid in range(256)}
        out = []
        for lid in range(256):
            lane = place(lid) % sgs
            first = place(lid) - lane
            out += [lane, sgs, lid_at[first], sgs, lid_at[first + (lane + 1) % sgs], lane]
        return out

    for sgs in (4, 8, 32, 128):
        assert sort_subgroup.probe_layout_ok(words(sgs, lambda x: x)) == sgs
    # subgroups interleaved over the workgroup (lane = lid // 32, subgroup lid % 32)
    assert sort_subgroup.probe_layout_ok(words(8, lambda x: (x % 32) * 8 + x // 32)) is None
    bad = words(8, lambda x: x)
    bad[1::6] = [6] * 256  # not a power of two
    assert sort_subgroup.probe_layout_ok(bad) is None
    assert sort_subgroup.probe_layout_ok(words(8, lambda x: x)[:-6]) is None


def test_scatter_rows_fit_workgroup_memory(monkeypatch, be):
    """The subgroup kernel's counter rows always fit the adapter's workgroup memory."""
    ctx = be.context
    limit = int(ctx.limits["max-compute-workgroup-storage-size"])
    monkeypatch.setattr(sort_subgroup, "SUBGROUP_RANK", True)
    for fake in (4, 8, 16, 32, 64, 128):
        monkeypatch.setitem(sort_subgroup._PROBES, ctx, fake)
        for kw in (1, 2):
            for vals in (False, True):
                rows = sort_subgroup.scatter_rows(be, kw, vals)
                assert rows is not None and 2 <= rows <= 256 // fake and rows & (rows - 1) == 0
                words = sort_subgroup._tile_words(kw, vals) + 2 * 256 + 64 + rows * 128
                assert 4 * words <= limit

