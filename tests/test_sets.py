"""unique_all / unique_counts / unique_inverse / unique_values against NumPy's ``np.unique``
(``equal_nan=False``: NaNs are distinct, as the standard says), every dtype, short and long
inputs, windows split."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gputensor as gt
from gputensor._backend import get_backend, ops_compact, ops_counting, ops_sort, sort_common, sort_subgroup
from gputensor._backend.errors import BackendError, BackendErrorKind

from _compare import assert_same, run_both

ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float16", "float32", "float64"]


@pytest.fixture(scope="module")
def be():
    return get_backend()


def sample(rng: np.random.Generator, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """Few distinct values (so groups form), extremes, NaN / inf / -0.0 for floats."""
    d = np.dtype(dtype)
    if d.kind == "b":
        return rng.random(shape) < 0.5
    if d.kind == "f":
        vals = (rng.integers(-6, 6, size=shape) / 2).astype(d)
        pool = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, np.finfo(d).max, np.finfo(d).min], d)
    else:
        info = np.iinfo(d)
        vals = rng.integers(max(info.min, -8), min(info.max, 8), size=shape, endpoint=True).astype(d)
        pool = np.array([info.min, info.max, info.min + 1, info.max - 1], d)
    flat = vals.reshape(-1)
    if flat.size:
        pick = rng.random(flat.size) < 0.2
        flat[pick] = rng.choice(pool, size=int(pick.sum()))
    return vals


def check_all(a: np.ndarray) -> None:
    """Every unique_* function of ``a`` against ``np.unique(equal_nan=False)`` (values, indices,
    inverse, counts: dtypes, shapes, values; NumPy's own ``unique_*`` functions differ from the
    standard here: unsorted values, NaNs grouped in the inverse); float values keep the first
    occurrence's bits (-0.0)."""
    x = gt.asarray(a)
    rv, ri, rinv, rc = np.unique(a, return_index=True, return_inverse=True, return_counts=True,
                                 equal_nan=False)
    rinv = rinv.reshape(a.shape)
    r = gt.unique_all(x)
    assert_same(tuple(r), (rv, ri, rinv, rc))
    if a.dtype.kind == "f":  # values are the first occurrences' bits (-0.0 kept)
        np.testing.assert_array_equal(np.signbit(r.values.get()), np.signbit(a.reshape(-1)[ri]))
    assert_same(tuple(gt.unique_counts(x)), (rv, rc))
    assert_same(tuple(gt.unique_inverse(x)), (rv, rinv))
    assert_same(gt.unique_values(x), rv)


@given(st.sampled_from(ALL), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6),
       st.integers(0, 2**32 - 1))
def test_unique_property(dtype, shape, seed):
    check_all(sample(np.random.default_rng(seed), dtype, shape))


@given(st.sampled_from(ALL), st.integers(2049, 6000), st.integers(0, 2**32 - 1))
def test_unique_long_property(dtype, n, seed):
    """Inputs longer than the bitonic tile are sorted by the radix path."""
    check_all(sample(np.random.default_rng(seed), dtype, (n,)))


@pytest.mark.parametrize("dtype", ALL)
def test_every_dtype(dtype):
    rng = np.random.default_rng(11)
    for shape in ((), (0,), (1,), (3, 0), (4, 7), (3000,)):
        check_all(sample(rng, dtype, shape))


def test_special_cases():
    a = np.array([np.nan, 1.0, np.nan, -0.0, 0.0, np.inf, 1.0], np.float32)
    r = gt.unique_all(gt.asarray(a))
    np.testing.assert_array_equal(r.values.get(), [-0.0, 1.0, np.inf, np.nan, np.nan])
    np.testing.assert_array_equal(r.indices.get(), [3, 1, 5, 0, 2])
    np.testing.assert_array_equal(r.counts.get(), [2, 2, 1, 1, 1])
    np.testing.assert_array_equal(r.inverse_indices.get(), [3, 1, 4, 0, 0, 2, 1])
    assert np.signbit(r.values.get()[0])  # the first occurrence of the zero group was -0.0
    same = np.full(5000, 7, np.int16)
    r = gt.unique_all(gt.asarray(same))
    np.testing.assert_array_equal(r.values.get(), [7])
    np.testing.assert_array_equal(r.counts.get(), [5000])
    np.testing.assert_array_equal(r.indices.get(), [0])
    assert not r.inverse_indices.get().any()
    v = gt.unique_values(gt.asarray(np.full(3000, np.nan)))
    assert v.shape == (3000,) and np.isnan(v.get()).all()
    x0 = gt.unique_inverse(gt.asarray(np.float64(2.5)))
    assert x0.inverse_indices.shape == () and int(x0.inverse_indices) == 0


@pytest.mark.parametrize("subgroup", [True, False], ids=["subgroup", "counting"])
def test_scatter_variants(monkeypatch, subgroup):
    """unique_* through both radix scatter kernels (subgroup ranking forced on and off), lengths
    crossing the 2048-element tiles."""
    monkeypatch.setattr(sort_subgroup, "SUBGROUP_RANK", subgroup)
    rng = np.random.default_rng(13)
    for dtype, shape in (("float32", (2049,)), ("float64", (2, 3001)), ("int32", (6145,)),
                         ("uint16", (4097,)), ("int64", (3, 1500))):
        check_all(sample(rng, dtype, shape))


def test_views():
    base = np.arange(60, dtype=np.int32).reshape(6, 10) % 7
    x = gt.asarray(base)[::-2, 1::3]
    check_all(base[::-2, 1::3])
    run_both(lambda xp: xp.unique_counts(xp.asarray(base)[::-2, 1::3]))  # no NaN: NumPy's agrees
    assert_same(gt.unique_values(x), np.asarray(np.unique(base[::-2, 1::3])))


def test_windows_split(monkeypatch):
    """Sort, compaction, inverse scatter and group finishing split into binding windows."""
    monkeypatch.setattr(sort_common, "WINDOW_LIMIT", 16 * 1024)
    rng = np.random.default_rng(5)
    check_all(sample(rng, "float64", (9000,)))
    check_all(sample(rng, "int32", (3, 4000)))


def _refused(error: BackendError, be) -> bool:
    """An invalid argument; or, on an adapter without shader-int64, the refusal of a default
    int64 (index) dtype, which the backend checks first."""
    if error.kind == BackendErrorKind.INVALID_ARGUMENT:
        return True
    return (error.kind == BackendErrorKind.UNSUPPORTED and "shader-int64" in str(error)
            and "shader-int64" not in be.context.features)


def test_errors(be):
    with pytest.raises(TypeError):
        gt.unique_values(np.arange(3))
    with pytest.raises(TypeError):
        gt.unique_all([1, 2])
    src = be.alloc(64)
    try:
        for case in (lambda: ops_compact.compact_begin(be, src, 4, flag="odd"),
                     lambda: ops_compact.compact_begin(be, src, 100, dtype="float32"),
                     lambda: ops_counting.unique_finish(be, src, 4, 4, None, None, src),
                     lambda: ops_counting.unique_finish(be, src, 4, 4, src, src, src, "int16")):
            with pytest.raises(BackendError) as info:
                case()
            assert _refused(info.value, be), info.value
    finally:
        be.free(src)


def test_int32_index_outputs(be):
    """The compaction and unique kernels also write int32 indices (no shader-int64)."""
    a = np.array([5, 1, 5, 3, 1, 5], np.int32)
    n = a.size
    src = be.alloc(a.nbytes)
    keys = be.alloc(n * 4)
    perm = be.alloc(n * 4)
    be.copy_htod(src, a)
    ops_sort.sort_keys(be, src, "int32", n, keys, perm)
    plan = ops_compact.compact_begin(be, keys, n, flag="head", dtype="int32", nan_distinct=False)
    try:
        u = plan.read_total()
        assert u == 3
        starts = be.alloc(u * 4)
        inv = be.alloc(n * 4)
        plan.write_indices(starts, "uint32")
        plan.write_inverse(perm, inv, "int32")
        counts = be.alloc(u * 4)
        index = be.alloc(u * 4)
        ops_counting.unique_finish(be, starts, u, n, perm, counts, index, "int32")
        got = [np.empty(k, np.int32) for k in (n, u, u)]
        for g, p in zip(got, (inv, counts, index)):
            be.copy_dtoh(g, p)
        rv, ri, rinv, rc = np.unique(a, return_index=True, return_inverse=True, return_counts=True)
        np.testing.assert_array_equal(got[0], rinv)
        np.testing.assert_array_equal(got[1], rc)
        np.testing.assert_array_equal(got[2], ri)
    finally:
        plan.free()


# ---- unique_values / unique_counts by counting (small value ranges) ------------------------------
def check_counted(a: np.ndarray) -> None:
    from gputensor._function_kernels import default_int

    x = gt.asarray(a)
    values, counts = np.unique(a, return_counts=True)
    got = gt.unique_counts(x)
    assert got.values.dtype == x.dtype and got.counts.dtype == default_int()
    assert_same(tuple(got), (values, counts.astype(default_int().numpy)))
    assert_same(gt.unique_values(x), values)


@pytest.mark.requires("shader-int64")  # uint32 values past 2**31 are counted with int64 indices
@pytest.mark.parametrize("peel", ["all", "first", "none"])
def test_unique_by_counting(monkeypatch, be, peel, kernels_run):
    """Integer and bool inputs whose values span few integers are counted, not sorted, with the
    same values, dtypes and counts as NumPy: the extremes of every dtype, negative ranges,
    one repeated value, every lane of a subgroup merging (peel 'all'), only the first lane's
    bucket merged ('first'), and plain atomics ('none': no subgroups)."""
    from gputensor import _set_functions

    monkeypatch.setattr(_set_functions, "COUNTING_MIN_N", 64)
    if peel == "first":
        monkeypatch.setattr(ops_counting, "PEEL_ALL_SPAN", 0)
    elif peel == "none":
        monkeypatch.setattr(ops_counting, "subgroup_probe", lambda backend: None)
    names = kernels_run
    rng = np.random.default_rng(31)
    cases = [rng.random(5000) < 0.3, np.ones(3000, bool)]
    for dtype in ("int8", "uint8", "int16", "uint16", "int32", "uint32"):
        info = np.iinfo(dtype)
        cases += [rng.integers(info.min, info.min + 40, 4099, endpoint=True).astype(dtype),
                  rng.integers(info.max - 40, info.max, 4099, endpoint=True).astype(dtype),
                  np.full(2500, info.max, dtype), np.full(2500, info.min, dtype)]
    cases += [rng.integers(-3, 3, (70, 90)).astype(np.int32),       # 2-D: flattened
              rng.integers(0, 2**17, 2**16).astype(np.int32),       # span 2n: still counted
              np.where(rng.random(6000) < 0.9, 0, rng.integers(-5000, 5000, 6000)).astype(np.int16)]
    for a in cases:
        names.clear()
        check_counted(a)
        assert "count_values" in names and "sort_scatter" not in "".join(names), a.dtype


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32",
                                   pytest.param("uint32", marks=pytest.mark.requires("shader-int64"))])
def test_unique_counting_speculative_histogram(monkeypatch, be, dtype, kernels_run):
    """The histogram is sized before the range is known (COUNTING_SPECULATIVE * n buckets, at
    least COUNTING_SPAN_MIN): a range that fits is counted with one readback; a wider one that
    counting still takes is counted again with the range known; the extremes of every dtype."""
    from gputensor import _set_functions

    monkeypatch.setattr(_set_functions, "COUNTING_MIN_N", 64)
    monkeypatch.setattr(_set_functions, "COUNTING_SPAN_MIN", 64)
    names = kernels_run
    rng = np.random.default_rng(35)
    info = np.iinfo(dtype)
    n, fits, wide = (200, 80, 200) if info.bits == 8 else (1000, 400, 1500)  # n/2 buckets
    for lo, width, passes in ((info.min, fits, 1), (info.max - fits + 1, fits, 1), (info.min, wide, 2),
                              (info.max - wide + 1, wide, 2)):
        a = rng.integers(lo, lo + width - 1, n, endpoint=True).astype(dtype)
        a[:2] = (lo, lo + width - 1)  # the range's ends are present
        names.clear()
        check_counted(a)
        # check_counted makes 2 calls; each counts once (the range fits n/2 buckets) or twice
        assert names.count("count_values") == 2 * passes and "sort_hist" not in "".join(names), (lo, width)


def test_unique_counting_result_buffers(monkeypatch, be, kernels_run):
    """Counted values are written ahead of the count readback into room for min(span, n) values:
    the result is that buffer (every slot used), a prefix view of it (at least a quarter used)
    or a copy (less); with binding windows so small that the compaction takes several dispatch units,
    the count is read first. Every way gives NumPy's values."""
    from gputensor import _set_functions

    monkeypatch.setattr(_set_functions, "COUNTING_MIN_N", 64)
    names = kernels_run
    rng = np.random.default_rng(34)
    full = rng.permutation(np.arange(-1000, 3000, dtype=np.int32))   # u == span == n
    view = rng.integers(0, 6000, 4000).astype(np.int32)              # u ~ 0.49 * 6000 of room 4000
    sparse = np.where(rng.random(8000) < 0.95, 7, rng.integers(0, 9000, 8000)).astype(np.int32)
    for a in (full, view, sparse):
        names.clear()
        check_counted(a)
        assert "count_values" in names
    monkeypatch.setattr(sort_common, "WINDOW_LIMIT", 16 * 1024)  # 4096 buckets: several units of 2048
    for a in (rng.integers(0, 4000, 5000).astype(np.int16), rng.integers(-2000, 2000, 9000).astype(np.int32)):
        names.clear()
        check_counted(a)
        assert "count_values" in names and names.count("compact_count") >= 4  # 2 calls x 2 units


@pytest.mark.requires("shader-int64")  # int64 data (stored as int32 without it is counted)
def test_unique_counting_falls_back_to_sorting(monkeypatch, be, kernels_run):
    """Wide ranges (after a speculative count whose range read back does not fit), floats,
    64-bit integers, short inputs and the index/inverse outputs sort."""
    from gputensor import _set_functions

    monkeypatch.setattr(_set_functions, "COUNTING_MIN_N", 64)
    names = kernels_run
    rng = np.random.default_rng(32)
    wide = rng.integers(-2**31, 2**31 - 1, 3000, dtype=np.int64).astype(np.int32)
    names.clear()
    check_counted(wide)
    assert names.count("count_values") == 2 and "sort_hist" in "".join(names)  # counted, then sorted
    for a in (rng.integers(0, 5, 3000).astype(np.int64), rng.random(3000).astype(np.float32),
              rng.integers(0, 5, 40).astype(np.int32)):
        names.clear()
        check_counted(a)
        assert "count_values" not in names, a.dtype
    small = rng.integers(0, 5, 3000).astype(np.int32)
    names.clear()
    r = gt.unique_all(gt.asarray(small))
    assert "count_values" not in names
    assert_same(r.inverse_indices, np.asarray(np.unique(small, return_inverse=True)[1]))


def test_count_values_errors(be):
    """count_values refuses floats, 64-bit dtypes, ranges outside the dtype and too many buckets."""
    x = gt.asarray(np.arange(10, dtype=np.int8))
    hist = gt.zeros(16, dtype=gt.uint32)
    for dtype, lo, span in (("float32", 0, 4), ("int64", 0, 4), ("int8", -129, 4), ("int8", 120, 9),
                            ("uint8", -1, 4)):
        with pytest.raises(BackendError) as info:
            ops_counting.count_values(be, x._ptr, dtype, 10, lo, hist._ptr, span)
        assert _refused(info.value, be), info.value
    with pytest.raises(BackendError) as info:
        ops_counting.count_values(be, x._ptr, "int8", 10, 0, hist._ptr, ops_counting.histogram_limit(be) + 1)
    assert info.value.kind in (BackendErrorKind.UNSUPPORTED, BackendErrorKind.INVALID_ARGUMENT)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32"])
def test_key_range(be, dtype):
    """key_range (one dispatch, integer atomics) gives NumPy's min and max: the extremes of the
    dtype, lengths around the tile, a view at an element offset, one element."""
    rng = np.random.default_rng(33)
    info = np.iinfo(dtype) if dtype != "bool" else None
    lo, hi = (0, 1) if info is None else (info.min, info.max)
    tile = ops_counting.WG * ops_counting.RANGE_ITEMS
    for n in (1, 7, tile - 1, tile, tile + 1, 3 * tile + 5):
        for span in ((lo, hi), (lo, lo + 3 if info else lo), (hi - 2 if info else hi, hi)):
            a = rng.integers(span[0], span[1], n, endpoint=True).astype(dtype)
            x = gt.asarray(np.concatenate([a[:1], a]))[1:]  # an element offset into the storage
            assert ops_counting.key_range(be, x._ptr, dtype, n) == (int(a.min()), int(a.max())), (n, span)
    with pytest.raises(BackendError) as err:
        ops_counting.key_range(be, gt.asarray(np.ones(4, np.float32))._ptr, "float32", 4)
    assert err.value.kind is BackendErrorKind.INVALID_ARGUMENT
