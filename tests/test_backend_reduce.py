"""Backend reductions (ops_reduce.reduce_strided / ComputeBackend.reduce) against NumPy.

Every source view lives inside a larger allocation whose other elements are sentinels (NaN or
extreme integers), at an element offset that is not a multiple of the binding alignment, so a
kernel that reads outside the view or mis-handles the window offset is caught. Every output is
written into a pre-filled allocation and the bytes it must not touch are checked unchanged (this
matters for the packed 1- and 2-byte dtypes, whose elements share 32-bit words).

References are computed on the host from the same view: float accumulations in float64 (with a
tolerance from the accumulation and output precisions), integer accumulations with NumPy's own
wrap-around, argmax/argmin as NumPy's first occurrence.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gputensor._backend import BackendError, BackendErrorKind, ReduceOp, WebGpuBackend, get_backend
from gputensor._backend import ops_reduce
from gputensor._backend.ops_reduce import REDUCTION_OPS, reduce_contiguous, reduce_strided
from gputensor._backend.wgsl_types import int64_mode

from _compare import tol

# Test-side tables (independent of the implementation's).
DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "float16", "int32", "uint32", "float32",
          "int64", "uint64", "float64"]
OPS = ["sum", "prod", "max", "min", "mean", "all", "any", "argmax", "argmin", "var", "std"]
NO_IDENTITY = {"max", "min", "argmax", "argmin"}
# Rounding unit of an accumulation / of a stored result, per dtype.
ACC_EPS = {"float16": 2.0**-24, "float32": 2.0**-24, "float64": 2.0**-53}
OUT_EPS = {"float16": 2.0**-11, "float32": 2.0**-24, "float64": 2.0**-53}
OUT_SENTINEL = 0x5A  # byte pattern of output allocations


@pytest.fixture(scope="module")
def backend() -> WebGpuBackend:
    return get_backend()


def kind(dtype: str) -> str:
    return np.dtype(dtype).kind  # 'b', 'i', 'u', 'f'


def numpy_dst(op: str, src: str) -> str:
    """NumPy's default result dtype of ``op`` over ``src`` (the dst the frontend would pass)."""
    k = kind(src)
    if op in ("all", "any"):
        return "bool"
    if op in ("argmax", "argmin"):
        return "int64"
    if op in ("sum", "prod"):
        return {"b": "int64", "i": "int64", "u": "uint64"}.get(k, src)
    if op in ("mean", "var", "std"):
        return src if k == "f" else "float64"
    return src


def default_acc(op: str, src: str, dst: str) -> str:
    if op in ("all", "any"):
        return "bool"
    if op in ("max", "min", "argmax", "argmin"):
        return src
    return dst


def extent(shape, strides) -> tuple[int, int]:
    if 0 in shape:
        return 0, 0
    lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides))
    return lo, hi


def row_major(shape) -> list[int]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return out[::-1]


def random_values(rng: np.random.Generator, dtype: str, n: int, small: bool = False) -> np.ndarray:
    k = kind(dtype)
    if k == "b":
        return rng.random(n) < 0.5
    if k in "iu":
        info = np.iinfo(dtype)
        lo, hi = (max(info.min, -3), min(info.max, 4)) if small else (info.min, info.max)
        return rng.integers(lo, hi, n, dtype=dtype, endpoint=True)
    return rng.standard_normal(n).astype(dtype)


def sentinel(dtype: str):
    k = kind(dtype)
    if k == "f":
        return np.nan
    if k == "b":
        return True
    return np.iinfo(dtype).max


class Source:
    """A strided view of ``shape``/``strides`` (elements) at an odd element offset inside a
    sentinel-filled allocation; ``.view`` is the same view on the host copy, ``.ptr`` the device
    pointer of its element [0, ..., 0]."""

    def __init__(self, backend, dtype, shape, strides=None, *, rng=None, values=None, lead=5, tail=3,
                 small=False):
        shape = tuple(shape)
        strides = tuple(row_major(shape) if strides is None else strides)
        itemsize = np.dtype(dtype).itemsize
        lo, hi = extent(shape, strides)
        span = 0 if 0 in shape else hi - lo + 1
        storage = np.full(lead + span + tail, sentinel(dtype), dtype=dtype)
        if values is not None:
            storage[lead:lead + span] = np.asarray(values, dtype=dtype).reshape(-1)[:span]
        else:
            storage[lead:lead + span] = random_values(rng or np.random.default_rng(0), dtype, span, small)
        base = lead - lo
        self.storage = storage
        self.view = np.lib.stride_tricks.as_strided(
            storage[base:], shape, [s * itemsize for s in strides], writeable=False
        ) if span else np.zeros(shape, dtype)
        self.alloc = backend.alloc(storage.nbytes)
        backend.copy_htod(self.alloc, storage)
        self.ptr = self.alloc + base * itemsize
        self.dtype, self.shape, self.strides = dtype, shape, strides


class Dest:
    """An output of ``shape`` (optionally ``strides``) inside a pre-filled allocation."""

    def __init__(self, backend, dtype, shape, strides=None, *, lead=7, tail=5):
        self.backend = backend
        self.dtype, self.shape = dtype, tuple(shape)
        self.strides = None if strides is None else tuple(strides)
        st_ = row_major(self.shape) if strides is None else strides
        itemsize = np.dtype(dtype).itemsize
        lo, hi = extent(self.shape, st_)
        span = 0 if 0 in self.shape else hi - lo + 1
        self.nbytes = (lead + span + tail) * itemsize
        self.alloc = backend.alloc(self.nbytes)
        backend.copy_htod(self.alloc, np.full(self.nbytes, OUT_SENTINEL, np.uint8))
        self.base = lead - lo
        self.ptr = self.alloc + self.base * itemsize
        self._st = st_

    def read(self) -> np.ndarray:
        """The output values; asserts that every byte outside the written elements is intact."""
        raw = np.zeros(self.nbytes, np.uint8)
        self.backend.copy_dtoh(raw, self.alloc)
        items = raw.view(self.dtype)
        itemsize = np.dtype(self.dtype).itemsize
        index = np.full(self.shape, self.base, dtype=np.int64)
        for d, (n, s) in enumerate(zip(self.shape, self._st)):
            shape = [1] * len(self.shape)
            shape[d] = n
            index = index + (np.arange(n, dtype=np.int64) * s).reshape(shape)
        touched = np.zeros(items.size, bool)
        touched[index.reshape(-1)] = True
        untouched = raw.reshape(-1, itemsize)[~touched]
        assert (untouched == OUT_SENTINEL).all(), "bytes outside the output were modified"
        return items[index]


def reference(op: str, x: np.ndarray, axes, dst: str, acc: str | None = None, ddof: float = 0) -> np.ndarray:
    """NumPy's result of the reduction, computed independently of the backend."""
    axes = tuple(sorted(a % x.ndim for a in axes)) if x.ndim else ()
    src = x.dtype.name
    acc = acc or default_acc(op, src, dst)
    kept = [a for a in range(x.ndim) if a not in axes]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if op in ("argmax", "argmin"):
            nred = math.prod(x.shape[a] for a in axes)
            y = np.transpose(x, kept + list(axes)).reshape([x.shape[a] for a in kept] + [nred])
            return getattr(np, op)(y, axis=-1).astype(dst)
        if op in ("all", "any"):
            return np.asarray(getattr(np, op)(x, axis=axes)).astype(dst)
        xa = x.astype(acc)
        count = math.prod(x.shape[a] for a in axes)
        if kind(acc) == "f":
            xf = xa.astype(np.float64)
            if op in ("var", "std"):
                r = getattr(np, op)(xf, axis=axes, ddof=ddof) if count else np.full([x.shape[a] for a in kept], np.nan)
            elif op == "mean":
                r = xf.sum(axis=axes) / count if count else np.full([x.shape[a] for a in kept], np.nan)
            else:
                r = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}[op](xf, axis=axes)
            r = np.asarray(r).astype(acc).astype(dst)  # rounded to the accumulation dtype
            return r
        if kind(acc) == "b":
            r = {"sum": np.any, "prod": np.all, "max": np.any, "min": np.all}[op](xa, axis=axes)
            return np.asarray(r).astype(dst)
        if op in ("sum", "prod", "mean"):
            r = (np.sum if op != "prod" else np.prod)(xa, axis=axes, dtype=acc)
            if op == "mean":
                big = np.asarray(r).astype(object)
                r = np.vectorize(lambda v: (abs(int(v)) // count) * (1 if v >= 0 else -1) if count else 0,
                                 otypes=[object])(big).astype(acc)
            return np.asarray(r).astype(dst)
        return np.asarray({"max": np.max, "min": np.min}[op](xa, axis=axes)).astype(dst)


def tolerance(op: str, x: np.ndarray, axes, dst: str, acc: str, want: np.ndarray) -> np.ndarray | float:
    """Absolute tolerance per output for float results; 0 (exact) otherwise."""
    if kind(dst) != "f" or op in ("max", "min", "argmax", "argmin", "all", "any"):
        return 0.0
    axes = tuple(sorted(a % x.ndim for a in axes)) if x.ndim else ()
    n = max(1, math.prod(x.shape[a] for a in axes))
    ea = ACC_EPS.get(acc, 0.0)
    eo = max(OUT_EPS[dst], OUT_EPS.get(acc, 0.0))  # a float16 accumulator rounds the result
    # GPUs may flush subnormal results to zero (NVIDIA does for f32)
    tiny = float(np.finfo(dst).tiny) + (float(np.finfo(acc).tiny) if kind(acc) == "f" else 0.0)
    with np.errstate(all="ignore"):
        mag = np.abs(np.asarray(want, np.float64))
        xa = np.abs(x.astype(acc).astype(np.float64)) if kind(acc) == "f" else np.abs(x.astype(np.float64))
        if op in ("sum", "mean"):
            scale = xa.sum(axis=axes) / (n if op == "mean" else 1)
            return (4 * math.sqrt(n) + 8) * ea * scale + 2 * eo * mag + tiny
        if op == "prod":
            return (4 * n + 8) * ea * mag + 2 * eo * mag + tiny
        # var / std: relative to the result, plus the mean's rounding
        mean2 = (x.astype(np.float64).mean(axis=axes) ** 2) if x.size else 0.0
        return (16 * math.sqrt(n) + 16) * ea * (mag + mean2) + 2 * eo * mag + tiny


def assert_matches(got: np.ndarray, want: np.ndarray, tol) -> None:
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan_w = np.isnan(w)
    np.testing.assert_array_equal(np.isnan(g), nan_w)
    inf_w = np.isinf(w)
    np.testing.assert_array_equal(g[inf_w], w[inf_w])
    fin = ~nan_w & ~inf_w
    tol = np.broadcast_to(np.asarray(tol, np.float64), w.shape)
    err = np.where(fin, np.abs(np.where(fin, g, 0) - np.where(fin, w, 0)), 0)
    bad = fin & ~(err <= tol + 1e-300)
    assert not bad.any(), f"max error {err[bad].max()} > tol at {np.argwhere(bad)[:5].tolist()}: got {g[bad][:5]}, want {w[bad][:5]}"


def reduce_view(backend, op, src: Source, axes, dst: str, *, acc=None, ddof=0, dst_strides=None,
                check: bool = True) -> np.ndarray:
    """Run reduce_strided on ``src`` and (if ``check``) compare with the reference."""
    ndim = len(src.shape)
    norm = sorted(a % ndim for a in axes) if ndim else []
    kept_shape = [n for i, n in enumerate(src.shape) if i not in norm]
    out = Dest(backend, dst, kept_shape, dst_strides)
    reduce_strided(backend, op, src.ptr, src.dtype, src.shape, src.strides, axes, out.ptr, dst,
                   acc_dtype=acc, dst_strides=dst_strides, ddof=ddof)
    got = out.read()
    if check:
        want = reference(op, src.view, axes, dst, acc, ddof)
        tol = tolerance(op, src.view, axes, dst, acc or default_acc(op, src.dtype, dst), want)
        assert_matches(got, want, tol)
    return got


def expect_error(kind_: BackendErrorKind, fn, *args, **kwargs) -> BackendError:
    with pytest.raises(BackendError) as info:
        fn(*args, **kwargs)
    assert info.value.kind is kind_, info.value
    return info.value


# ---- every op x every dtype --------------------------------------------------------------------

OP_DTYPE = [(op, dt) for op in OPS for dt in DTYPES]


@pytest.mark.parametrize("op,dtype", OP_DTYPE, ids=[f"{o}-{d}" for o, d in OP_DTYPE])
def test_every_op_every_dtype(backend, op, dtype):
    """Row case (last axis, contiguous) and a two-axis reduction (generic index math)."""
    rng = np.random.default_rng(hash((op, dtype)) % 2**32)
    src = Source(backend, dtype, (3, 4, 45), rng=rng, small=op == "prod")
    dst = numpy_dst(op, dtype)
    reduce_view(backend, op, src, (2,), dst)
    reduce_view(backend, op, src, (0, 2), dst)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"])
@pytest.mark.parametrize("op", ["sum", "prod", "mean"])
def test_integer_accumulation_wraps_like_numpy(backend, op, dtype):
    """Accumulating in the narrow dtype itself wraps as NumPy does (mean: wrapped sum, then
    truncating division)."""
    rng = np.random.default_rng(7)
    src = Source(backend, dtype, (6, 50), rng=rng)
    got = reduce_view(backend, op, src, (1,), dtype)
    if op == "sum" and dtype in ("int8", "uint8"):
        wide = src.view.astype(np.int64).sum(axis=1)
        assert (wide != got.astype(np.int64)).any(), "test data should overflow"


@pytest.mark.parametrize("dtype", ["int64", "uint64"])
def test_mean_accumulated_in_64_bit_integers(backend, dtype):
    """mean in an int64/uint64 accumulator (two 32-bit words where the adapter lacks
    shader-int64) as with native 64-bit integers: the wrapped sum of values over the whole
    range divided by the count, truncated toward zero; long reductions split over workgroups
    (a second pass merges the partial sums), columns, one element, none (0)."""
    rng = np.random.default_rng(29)
    for shape, axes in [((3, 20000), (1,)), ((20000, 3), (0,)), ((4, 1), (1,)), ((4, 0), (1,))]:
        src = Source(backend, dtype, shape, rng=rng)
        reduce_view(backend, "mean", src, axes, dtype)
    x = Source(backend, dtype, (2, 3), values=np.array([-9, 2, 0, 7, 7, 7]).astype(dtype))
    want = [-2, 7] if dtype == "int64" else [(2**64 - 7) // 3, 7]  # (-7 / 3 truncates to -2)
    np.testing.assert_array_equal(reduce_view(backend, "mean", x, (1,), dtype), np.array(want).astype(dtype))


def test_wider_accumulator_and_cast_output(backend):
    """acc_dtype wider than the output (sum of int8 in int32, stored as int16) and narrower
    than the source (max of int32 values cast to int8 first, as NumPy's astype)."""
    rng = np.random.default_rng(3)
    src = Source(backend, "int8", (4, 300), rng=rng)
    reduce_view(backend, "sum", src, (1,), "int16", acc="int32")
    src32 = Source(backend, "int32", (4, 30), rng=rng)
    reduce_view(backend, "max", src32, (1,), "int8", acc="int8")
    srcf = Source(backend, "float32", (4, 30), rng=rng)
    reduce_view(backend, "sum", srcf, (1,), "float32", acc="float16")
    reduce_view(backend, "mean", srcf, (1,), "float16", acc="float64")


# ---- shapes and axes -------------------------------------------------------------------------

SHAPES = [(7,), (3, 5), (2, 3, 4), (2, 3, 1, 5)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_every_axis_and_axis_tuple(backend, shape):
    rng = np.random.default_rng(len(shape))
    src_f = Source(backend, "float32", shape, rng=rng)
    src_i = Source(backend, "int32", shape, rng=rng)
    ndim = len(shape)
    for r in range(ndim + 1):
        for axes in itertools.combinations(range(ndim), r):
            neg = tuple(a - ndim for a in axes)  # negative axes mean the same
            reduce_view(backend, "sum", src_f, axes, "float32")
            reduce_view(backend, "argmax", src_f, neg, "int64")
            reduce_view(backend, "max", src_i, axes, "int32")


def test_zero_d_and_no_axes(backend):
    """A 0-d input (no axes): the output is the element itself, cast."""
    src = Source(backend, "float32", (), values=[2.5])
    assert reduce_view(backend, "sum", src, (), "float32").item() == 2.5
    assert reduce_view(backend, "argmin", src, (), "int32").item() == 0
    src2 = Source(backend, "int16", (3, 4), rng=np.random.default_rng(1))
    reduce_view(backend, "sum", src2, (), "int64")


@st.composite
def strided_views(draw, max_ndim=4, max_dim=6):
    ndim = draw(st.integers(1, max_ndim))
    shape = draw(st.lists(st.integers(0 if draw(st.booleans()) else 1, max_dim), min_size=ndim, max_size=ndim))
    strides = []
    mult = 1
    for n in reversed(shape):  # start from a compact layout, then perturb: negative, 0, gaps
        choice = draw(st.sampled_from(["plain", "neg", "zero", "gap"]))
        s = {"plain": mult, "neg": -mult, "zero": 0, "gap": 2 * mult}[choice]
        strides.append(s)
        mult *= max(n, 1) * (2 if choice == "gap" else 1)
    strides.reverse()
    if draw(st.booleans()):  # transpose
        perm = draw(st.permutations(range(ndim)))
        shape = [shape[p] for p in perm]
        strides = [strides[p] for p in perm]
    axes = draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim))
    return tuple(shape), tuple(strides), tuple(axes)


@settings(max_examples=25, deadline=None)
@given(view=strided_views(), seed=st.integers(0, 2**31))
def test_strided_views_negative_and_broadcast_strides(backend, view, seed):
    shape, strides, axes = view
    rng = np.random.default_rng(seed)
    src = Source(backend, "float32", shape, strides, rng=rng)
    norm = sorted(axes)
    nred = math.prod(shape[a] for a in norm)
    reduce_view(backend, "sum", src, axes, "float32")
    reduce_view(backend, "mean", src, axes, "float32")
    if nred:
        reduce_view(backend, "argmin", src, axes, "int64")
    srci = Source(backend, "int16", shape, strides, rng=rng, small=True)
    if nred:
        reduce_view(backend, "min", srci, axes, "int16")
        reduce_view(backend, "argmax", srci, axes, "int32")
    reduce_view(backend, "sum", srci, axes, "int64")


@settings(max_examples=12, deadline=None)
@given(view=strided_views(max_ndim=3), seed=st.integers(0, 2**31), neg=st.booleans())
def test_strided_packed_outputs(backend, view, seed, neg):
    """Packed outputs (bool, int8, float16) written through destination strides (gaps,
    negative) leave the neighbouring lanes of their words intact."""
    shape, strides, axes = view
    kept = [n for i, n in enumerate(shape) if i not in axes]
    dst_strides = [(-2 if neg else 3) * s for s in row_major(kept)]
    rng = np.random.default_rng(seed)
    src = Source(backend, "float32", shape, strides, rng=rng)
    reduce_view(backend, "any", src, axes, "bool", dst_strides=dst_strides)
    reduce_view(backend, "sum", src, axes, "float16", dst_strides=dst_strides)
    srci = Source(backend, "int8", shape, strides, rng=rng)
    reduce_view(backend, "sum", srci, axes, "int8", dst_strides=dst_strides)


# ---- empty and size-1 dims ---------------------------------------------------------------------

@pytest.mark.parametrize("op,want", [("sum", 0.0), ("prod", 1.0), ("all", True), ("any", False),
                                     ("mean", np.nan), ("var", np.nan), ("std", np.nan)])
def test_empty_reduction_gives_identity(backend, op, want):
    src = Source(backend, "float32", (3, 0, 2))
    dst = "bool" if op in ("all", "any") else "float32"
    got = reduce_view(backend, op, src, (1,), dst)
    assert got.shape == (3, 2)
    np.testing.assert_array_equal(got, np.full((3, 2), want, dtype=dst))
    srci = Source(backend, "int8", (0,))
    if op in ("sum", "prod"):
        assert reduce_view(backend, op, srci, (0,), "int8").item() == int(want)


@pytest.mark.parametrize("op", sorted(NO_IDENTITY))
def test_empty_reduction_without_identity_raises(backend, op):
    index = "int64" if backend.supports("shader-int64") else "int32"
    src = Source(backend, "float32", (3, 0))
    out = Dest(backend, index, (3,))
    before = dict(backend.context.stats)
    err = expect_error(BackendErrorKind.INVALID_ARGUMENT, reduce_strided, backend, op, src.ptr, "float32",
                       (3, 0), (0, 1), (1,), out.ptr, index if op.startswith("arg") else "float32")
    assert "zero-size reduction" in str(err)
    assert backend.context.stats["dispatches"] == before["dispatches"]
    # NumPy raises for an empty reduced range even when there are no outputs
    expect_error(BackendErrorKind.INVALID_ARGUMENT, reduce_strided, backend, op, src.ptr, "float32",
                 (0, 0), (0, 1), (1,), out.ptr, index if op.startswith("arg") else "float32")


def test_empty_output_writes_nothing(backend):
    src = Source(backend, "float32", (0, 4))
    for op in ("sum", "max", "argmax"):
        got = reduce_view(backend, op, src, (1,), "int64" if op == "argmax" else "float32")
        assert got.shape == (0,)


def test_size_one_dims(backend):
    rng = np.random.default_rng(5)
    src = Source(backend, "float64", (1, 6, 1, 3, 1), rng=rng)
    for axes in [(0,), (2,), (1, 2), (0, 2, 4), (3,), (0, 1, 2, 3, 4)]:
        reduce_view(backend, "sum", src, axes, "float64")
        reduce_view(backend, "argmax", src, axes, "int64")


# ---- NaN, inf, ties ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_nan_and_inf(backend, dtype):
    x = np.array([[1.0, np.nan, 3.0, np.nan, -np.inf],
                  [np.inf, 2.0, -1.0, np.inf, 0.0],
                  [-np.inf, -np.inf, 5.0, 5.0, np.nan],
                  [0.0, 0.0, 0.0, 0.0, 0.0]], dtype=dtype)
    src = Source(backend, dtype, x.shape, values=x)
    for axes in [(0,), (1,), (0, 1)]:
        for op in ("sum", "max", "min", "mean", "prod", "all", "any", "var"):
            reduce_view(backend, op, src, axes, "bool" if op in ("all", "any") else dtype)
        for op in ("argmax", "argmin"):
            reduce_view(backend, op, src, axes, "int64")
    # the expectations spelled out, row-wise
    out = reduce_view(backend, "argmax", src, (1,), "int64")
    assert out.tolist() == [1, 0, 4, 0]  # first NaN; first inf; first NaN; first of ties
    out = reduce_view(backend, "argmin", src, (1,), "int64")
    assert out.tolist() == [1, 2, 4, 0]  # NaN wins for argmin too
    out = reduce_view(backend, "any", src, (1,), "bool")
    assert out.tolist() == [True, True, True, False]  # NaN is truthy


def test_argmax_ties_first_occurrence_in_every_layout(backend):
    """Ties across threads, chunks, columns, negative strides: always the first index."""
    rng = np.random.default_rng(11)
    for shape, strides, axes in [((5000,), (1,), (0,)), ((5000,), (-1,), (0,)), ((3, 4000), (1, 3), (1,)),
                                 ((4000, 3), (3, 1), (0,)), ((40, 70, 3), (-210, 3, 1), (0, 1))]:
        src = Source(backend, "int8", shape, strides, rng=rng, small=True)
        reduce_view(backend, "argmax", src, axes, "int64")
        reduce_view(backend, "argmin", src, axes, "uint32")
        srcb = Source(backend, "bool", shape, strides, rng=rng)
        reduce_view(backend, "argmax", srcb, axes, "int64")


# ---- partial (multi-workgroup) paths, numerics, determinism -------------------------------------

@pytest.mark.parametrize("op", OPS)
def test_chunked_reductions(backend, op):
    """Few outputs, long reductions: the reduced range is split over workgroups (row and column
    layouts), partial states are combined in a second pass."""
    rng = np.random.default_rng(13)
    dtype = "float32"
    dst = numpy_dst(op, dtype)
    for shape, axes in [((2, 20000), (1,)), ((20000, 5), (0,)), ((50000,), (0,))]:
        src = Source(backend, dtype, shape, rng=rng)
        if op == "prod":  # keep the product finite and non-trivial
            src = Source(backend, dtype, shape, values=rng.uniform(0.9995, 1.0005, math.prod(shape)))
        reduce_view(backend, op, src, axes, dst)


def test_var_is_numerically_sound(backend):
    """Large mean, small spread, float32: naive E[x^2] - E[x]^2 loses every digit."""
    rng = np.random.default_rng(17)
    for shape, axes in [((60000,), (0,)), ((3, 5000), (1,)), ((5000, 3), (0,))]:
        x = (1e4 + rng.standard_normal(math.prod(shape))).astype(np.float32)
        src = Source(backend, "float32", shape, values=x)
        want = src.view.astype(np.float64).var(axis=axes, ddof=1)
        got = reduce_view(backend, "var", src, axes, "float32", ddof=1, check=False)
        np.testing.assert_allclose(got, want, **tol("float32", "variance_cancellation"))
        got = reduce_view(backend, "std", src, axes, "float64", acc="float64", ddof=0.5, check=False)
        np.testing.assert_allclose(got, np.sqrt(src.view.astype(np.float64).var(axis=axes, ddof=0.5)), **tol("float64", "variance_mixed"))


def test_var_ddof_at_least_count(backend):
    src = Source(backend, "float32", (2, 3), values=[1, 1, 1, 1, 2, 3])
    got = reduce_view(backend, "var", src, (1,), "float32", ddof=3, check=False)
    assert np.isnan(got[0]) and np.isinf(got[1])  # 0/0 and positive/0, as NumPy


def test_big_float_sum_is_deterministic(backend):
    rng = np.random.default_rng(19)
    x = rng.standard_normal(1_500_000).astype(np.float32)
    src = Source(backend, "float32", x.shape, values=x)
    results = []
    for _ in range(3):
        out = Dest(backend, "float32", ())
        reduce_strided(backend, "sum", src.ptr, "float32", x.shape, (1,), (0,), out.ptr, "float32")
        results.append(out.read().view(np.uint32).item())
    assert len(set(results)) == 1
    ref = x.astype(np.float64).sum()
    assert abs(np.uint32(results[0]).view(np.float32) - ref) < 1e-6 * np.abs(x).astype(np.float64).sum()


def test_larger_than_one_binding(backend):
    """A float32 operand over 128 MiB (one lavapipe binding): split into windows, partials
    combined; integer-valued data so every sum is exact. Adapters with larger bindings run it
    through a 128 MiB window."""
    if backend.max_window_bytes() > 256 << 20:
        backend = SmallWindowBackend(backend, (128 << 20) - 256)
    limit = backend.max_window_bytes()
    n = max(33_600_000, limit // 4 + 1_000_000)
    n += n % 2
    rng = np.random.default_rng(23)
    x = rng.integers(-1, 2, n, dtype=np.int8).astype(np.float32)
    x[n // 2 + 12345] = 7.0  # the maximum, in the second half
    ptr = backend.alloc(x.nbytes)
    backend.copy_htod(ptr, x)
    half = n // 2
    out = Dest(backend, "float32", (half,))
    reduce_strided(backend, "sum", ptr, "float32", (2, half), (half, 1), (0,), out.ptr, "float32")
    got = out.read()
    np.testing.assert_array_equal(got, x[:half] + x[half:])
    scalar = Dest(backend, "float32", ())
    reduce_strided(backend, "sum", ptr, "float32", (n,), (1,), (0,), scalar.ptr, "float32")
    assert scalar.read().item() == x.astype(np.float64).sum()
    idx = Dest(backend, "int64", ())
    reduce_strided(backend, "argmax", ptr, "float32", (n,), (1,), (0,), idx.ptr, "int64")
    assert idx.read().item() == n // 2 + 12345
    backend.free(ptr)


class SmallWindowBackend(WebGpuBackend):
    """The shared device with a tiny binding window, so every split path runs on small data."""

    def __init__(self, base: WebGpuBackend, window: int) -> None:
        super().__init__(base.context)
        self._window = window

    def max_window_bytes(self) -> int:
        return self._window


@pytest.fixture(scope="module")
def small_window(backend) -> SmallWindowBackend:
    return SmallWindowBackend(backend, 1024)


@settings(max_examples=20, deadline=None)
@given(view=strided_views(max_ndim=4, max_dim=12), seed=st.integers(0, 2**31))
def test_split_into_small_windows(small_window, view, seed):
    shape, strides, axes = view
    rng = np.random.default_rng(seed)
    src = Source(small_window, "float32", shape, strides, rng=rng)
    nred = math.prod(shape[a] for a in axes)
    reduce_view(small_window, "sum", src, axes, "float32")
    reduce_view(small_window, "var", src, axes, "float32")
    if nred:
        reduce_view(small_window, "argmax", src, axes, "int64")
    reduce_view(small_window, "all", src, axes, "bool")


def test_small_window_large_arrays(small_window):
    """Kept splits, reduced splits and both, with outputs larger than a window."""
    rng = np.random.default_rng(29)
    for shape, axes in [((3000,), (0,)), ((40, 300), (0,)), ((40, 300), (1,)), ((300, 40), (0, 1)),
                        ((6, 7, 50), (0, 2))]:
        src = Source(small_window, "float64", shape, rng=rng)
        reduce_view(small_window, "sum", src, axes, "float64")
        reduce_view(small_window, "argmin", src, axes, "int32")
        reduce_view(small_window, "std", src, axes, "float64")
        src8 = Source(small_window, "uint8", shape, rng=rng)
        reduce_view(small_window, "max", src8, axes, "uint8")


def test_more_dims_than_a_dispatch_handles(backend):
    """Ten non-mergeable dims: kept or reduced rank above the kernel's 8 is split on the host."""
    rng = np.random.default_rng(31)
    shape = (2,) * 10
    strides = tuple(2 * s for s in row_major(shape))  # every other element: nothing merges
    src = Source(backend, "float32", shape, strides, rng=rng)
    for axes in [(0,), tuple(range(9)), tuple(range(1, 10, 2)), tuple(range(10))]:
        reduce_view(backend, "sum", src, axes, "float32")
        reduce_view(backend, "argmax", src, axes, "int64")


# ---- the contract method -----------------------------------------------------------------------

CONTRACT_SHAPES = [(9,), (4, 6), (3, 1, 5), (2, 3, 4, 5)]


@pytest.mark.parametrize("shape", CONTRACT_SHAPES, ids=str)
def test_contract_reduce_every_op_every_axis(backend, shape):
    rng = np.random.default_rng(37)
    x = rng.standard_normal(shape).astype(np.float32)
    ptr = backend.alloc(x.nbytes + 12)
    backend.copy_htod(ptr + 12, x)  # interior pointer
    ndim = len(shape)
    for axis in list(range(ndim)) + [-1]:
        out_shape = shape[:axis % ndim] + shape[axis % ndim + 1:]
        for op in ReduceOp:
            out = Dest(backend, "float32", out_shape)
            backend.reduce(op, ptr + 12, out.ptr, shape, axis)
            got = out.read()
            want = {ReduceOp.SUM: np.sum, ReduceOp.MAX: np.max, ReduceOp.MIN: np.min,
                    ReduceOp.MEAN: np.mean, ReduceOp.PROD: np.prod}[op](x.astype(np.float64), axis=axis)
            np.testing.assert_allclose(got, want, **tol("float32", "reduction_small"))


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_contract_reduce_other_floats(backend, dtype):
    rng = np.random.default_rng(41)
    shape = (3, 70, 5)
    x = rng.standard_normal(shape).astype(dtype)
    ptr = backend.alloc(x.nbytes)
    backend.copy_htod(ptr, x)
    for axis in range(3):
        for op in ReduceOp:
            out = Dest(backend, dtype, shape[:axis] + shape[axis + 1:])
            reduce_contiguous(backend, op, ptr, out.ptr, shape, axis, dtype=dtype)
            got = out.read().astype(np.float64)
            want = {ReduceOp.SUM: np.sum, ReduceOp.MAX: np.max, ReduceOp.MIN: np.min,
                    ReduceOp.MEAN: np.mean, ReduceOp.PROD: np.prod}[op](x.astype(np.float64), axis=axis)
            want = want.astype(dtype).astype(np.float64)
            rtol = tol(dtype, "reduction_rounded")["rtol"]
            np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(x).sum(axis=axis).max())


def test_contract_empty_axis(backend):
    ptr = backend.alloc(16)
    for op, want in [(ReduceOp.SUM, 0.0), (ReduceOp.PROD, 1.0), (ReduceOp.MEAN, np.nan)]:
        out = Dest(backend, "float32", (4,))
        backend.reduce(op, ptr, out.ptr, (4, 0), 1)
        np.testing.assert_array_equal(out.read(), np.full(4, want, np.float32))
    for op in (ReduceOp.MAX, ReduceOp.MIN):
        expect_error(BackendErrorKind.INVALID_ARGUMENT, backend.reduce, op, ptr, ptr, (4, 0), 1)


def test_contract_errors(backend):
    ptr = backend.alloc(4 * 24)
    out = backend.alloc(4 * 24)
    inv, uns = BackendErrorKind.INVALID_ARGUMENT, BackendErrorKind.UNSUPPORTED
    expect_error(inv, backend.reduce, "median", ptr, out, (4, 6), 0)
    expect_error(inv, backend.reduce, ReduceOp.SUM, ptr, out, (4, 6), 0, dtype="int32")
    expect_error(inv, backend.reduce, ReduceOp.SUM, ptr, out, (4, 6), 2)
    expect_error(inv, backend.reduce, ReduceOp.SUM, ptr, out, (4, 6), -3)
    expect_error(inv, backend.reduce, ReduceOp.SUM, ptr, out, (4, 6), 1.0)
    expect_error(inv, backend.reduce, ReduceOp.SUM, ptr, out, (), 0)
    expect_error(inv, backend.reduce, ReduceOp.SUM, ptr, out, (4, -6), 0)
    expect_error(inv, backend.reduce, ReduceOp.SUM, ptr, out, (5, 6), 0)  # input too long
    expect_error(inv, backend.reduce, ReduceOp.SUM, ptr + 8, out, (4, 6), 0)  # runs past the end
    expect_error(inv, backend.reduce, ReduceOp.SUM, ptr, out + 4 * 20, (4, 6), 0)  # output past the end
    expect_error(inv, backend.reduce, ReduceOp.SUM, ptr + 2, out, (2, 6), 0)  # misaligned
    freed = backend.alloc(64)
    backend.free(freed)
    expect_error(inv, backend.reduce, ReduceOp.SUM, freed, out, (4,), 0)
    no_f64 = NoFeatureBackend(backend, "shader-f64")
    expect_error(uns, no_f64.reduce, ReduceOp.SUM, ptr, out, (2, 6), 0, dtype="float64")


# ---- error paths of reduce_strided ---------------------------------------------------------------

class NoFeatureBackend(WebGpuBackend):
    """The shared device, pretending to lack one adapter feature."""

    def __init__(self, base: WebGpuBackend, feature: str) -> None:
        super().__init__(base.context)
        self._missing = feature

    def supports(self, feature: str | None) -> bool:
        return feature != self._missing and super().supports(feature)


def test_strided_errors_record_nothing(backend):
    src = backend.alloc(4 * 64)
    dst = backend.alloc(8 * 16)
    inv, uns = BackendErrorKind.INVALID_ARGUMENT, BackendErrorKind.UNSUPPORTED
    ok = dict(src_ptr=src, src_dtype="float32", shape=(4, 16), strides=(16, 1), reduce_axes=(1,),
              dst_ptr=dst, dst_dtype="float32")

    def call(**changes):
        args = {**ok, **changes}
        kwargs = {k: args.pop(k) for k in ("acc_dtype", "dst_strides", "ddof") if k in args}
        return reduce_strided(backend, args.pop("op", "sum"), args["src_ptr"], args["src_dtype"], args["shape"],
                              args["strides"], args["reduce_axes"], args["dst_ptr"], args["dst_dtype"], **kwargs)

    freed = backend.alloc(4 * 64)
    backend.free(freed)
    call()  # the baseline is valid
    before = backend.context.stats["dispatches"]
    cases = [
        (inv, dict(op="median")),
        (inv, dict(op=None)),
        (inv, dict(src_dtype="complex64")),
        (inv, dict(dst_dtype="float128")),
        (inv, dict(acc_dtype="int4")),
        (inv, dict(op="all", acc_dtype="float32")),
        (inv, dict(op="var", acc_dtype="int32")),
        (inv, dict(op="mean", dst_dtype="bool")),
        (inv, dict(op="argmax", dst_dtype="float32")),
        # (without the 64-bit features the missing feature is found first)
        (inv if backend.supports("shader-int64") and backend.supports("shader-f64") else uns,
         dict(op="argmax", dst_dtype="int64", acc_dtype="float64")),
        (inv, dict(shape=(4, -16))),
        (inv, dict(shape=(4, 16.0))),
        (inv, dict(strides=(16,))),
        (inv, dict(strides=(16, True))),
        (inv, dict(reduce_axes=(2,))),
        (inv, dict(reduce_axes=(-3,))),
        (inv, dict(reduce_axes=(1, -1))),
        (inv, dict(reduce_axes=(0.0,))),
        (inv, dict(dst_strides=(1, 1))),
        (inv, dict(ddof=float("nan"))),
        (inv, dict(ddof="1")),
        (inv, dict(shape=(5, 16))),  # source past the end
        (inv, dict(strides=(-16, 1))),  # source before the start
        (inv, dict(src_ptr=src + 4 * 1)),  # runs past the end by one element
        (inv, dict(src_ptr=src + 2)),  # misaligned for float32
        (inv, dict(dst_ptr=dst + 8 * 15)),  # output past the end
        (inv, dict(dst_strides=(-1,))),  # output before the start
        (inv, dict(dst_ptr=dst + 2)),  # misaligned output
        (inv, dict(src_ptr=freed)),  # freed pointer
        (inv, dict(dst_ptr=freed)),
        (inv, dict(op="max", shape=(4, 0))),
        (uns, dict(shape=(4, 2**31), strides=(0, 0))),  # too many reduced elements
    ]
    for kind_, change in cases:
        err = expect_error(kind_, call, **change)
        assert err.message
    # (the native rows of int64/uint64 need shader-int64; where it is missing the device works on
    # the emulated rows, which need no feature: test_int64_emulation.py)
    for feature, dtype in [("shader-f64", "float64"), ("shader-int64", "int64"), ("shader-int64", "uint64")]:
        lacking = NoFeatureBackend(backend, feature)
        with int64_mode(False):
            expect_error(uns, reduce_strided, lacking, "sum", src, dtype, (4,), (1,), (0,), dst, "float32")
            expect_error(uns, reduce_strided, lacking, "sum", src, "float32", (4,), (1,), (0,), dst, dtype)
            expect_error(uns, reduce_strided, lacking, "sum", src, "float32", (4,), (1,), (0,), dst, "float32",
                         acc_dtype=dtype)
    assert backend.context.stats["dispatches"] == before


def test_op_table_is_complete():
    assert set(REDUCTION_OPS) == set(OPS)
    assert {op.value for op in ReduceOp} <= set(REDUCTION_OPS)
    for op in REDUCTION_OPS.values():
        assert op.nonempty == (op.name in NO_IDENTITY)


def test_plan_cache_reuses_plans(backend):
    rng = np.random.default_rng(43)
    src = Source(backend, "float32", (6, 40), rng=rng)
    out1, out2 = Dest(backend, "float32", (6,)), Dest(backend, "float32", (6,))
    plans = ops_reduce._plans(backend)
    reduce_strided(backend, "sum", src.ptr, "float32", (6, 40), (40, 1), (1,), out1.ptr, "float32")
    n = len(plans)
    reduce_strided(backend, "sum", src.ptr, "float32", (6, 40), (40, 1), (1,), out2.ptr, "float32")
    assert len(plans) == n
    np.testing.assert_array_equal(out1.read(), out2.read())
    # a cached plan still checks its pointers
    expect_error(BackendErrorKind.INVALID_ARGUMENT, reduce_strided, backend, "sum", src.alloc + 4 * 10_000,
                 "float32", (6, 40), (40, 1), (1,), out1.ptr, "float32")


def test_grid_folded_over_two_dimensions(backend, monkeypatch):
    """More workgroups than one grid dimension allows: the grid is folded over x and y and
    the kernels skip the padding groups (the limit is lowered to exercise it on small data)."""
    monkeypatch.setattr(backend.context, "max_workgroups_per_dim", 8)
    rng = np.random.default_rng(47)
    for shape, axes in [((37, 3000), (1,)), ((3000, 37), (0,)), ((60, 2500), (1,)), ((40000,), (0,))]:
        src = Source(backend, "float32", shape, rng=rng)
        ops_reduce._plans(backend).clear()
        reduce_view(backend, "sum", src, axes, "float32")
        reduce_view(backend, "argmax", src, axes, "int64")
    ops_reduce._plans(backend).clear()


def test_contiguous_plan_cache_is_not_reused_wrongly(backend):
    """``backend.reduce`` caches a launch plan per (op, dtype, shape, axis): a call of another
    structure, or with other pointers (interior ones at other offsets, a freed one, a new
    allocation), must not reuse what does not apply to it."""
    rng = np.random.default_rng(53)
    host = rng.standard_normal(4096).astype(np.float32)
    n = host.size
    src = backend.alloc(4 * n)
    dst = backend.alloc(4 * n)
    backend.copy_htod(src, host)

    def run(op, shape, axis, *, src_off=0, dst_off=0, dtype="float32", ptr=None, data=host):
        count = math.prod(shape)
        kept = tuple(m for i, m in enumerate(shape) if i != axis % len(shape))
        backend.reduce(op, (src if ptr is None else ptr) + src_off * data.itemsize, dst + dst_off * data.itemsize,
                       shape, axis, dtype=dtype)
        got = np.empty(4 * n // data.itemsize, dtype=data.dtype)
        backend.copy_dtoh(got, dst)
        got = got[dst_off : dst_off + math.prod(kept)]
        x = data[src_off : src_off + count].astype(np.float64).reshape(shape)
        want = {ReduceOp.SUM: np.sum, ReduceOp.MAX: np.max, ReduceOp.MIN: np.min, ReduceOp.MEAN: np.mean,
                ReduceOp.PROD: np.prod}[op](x, axis=axis).reshape(-1)
        rtol, atol = tol(data.dtype, "reduction_offsets").values()
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * max(1.0, float(np.abs(x).sum())))

    cases = [
        (ReduceOp.SUM, (16, 200), 1), (ReduceOp.SUM, (200, 16), 1), (ReduceOp.SUM, (16, 200), 0),
        (ReduceOp.SUM, (16, 200), -1), (ReduceOp.SUM, (16, 200), -2), (ReduceOp.MAX, (16, 200), 1),
        (ReduceOp.MIN, (16, 200), 0), (ReduceOp.MEAN, (3200,), 0), (ReduceOp.SUM, (3200,), 0),
        (ReduceOp.SUM, (4, 8, 100), 1), (ReduceOp.MAX, (4, 8, 100), 2), (ReduceOp.SUM, (1, 3200), 1),
        (ReduceOp.SUM, (3200, 1), 1),
    ]
    for _ in range(2):  # the second round runs from the cache
        for op, shape, axis in cases:
            run(op, shape, axis)
    # interior pointers at offsets inside and across the binding alignment (256 bytes)
    for op, shape, axis in cases[:8]:
        for src_off, dst_off in [(1, 0), (0, 3), (7, 5), (64, 64), (65, 130), (300, 1)]:
            run(op, shape, axis, src_off=src_off, dst_off=dst_off)
            run(op, shape, axis)
    # half precision: another plan for the same shape and axis
    half = host.astype(np.float16)
    hsrc = backend.alloc(2 * n)
    backend.copy_htod(hsrc, half)
    for op, shape, axis in cases[:4]:
        run(op, shape, axis, dtype="float16", ptr=hsrc, data=half)
        run(op, shape, axis)
    backend.free(hsrc)
    before = backend.context.stats["dispatches"]
    inv = BackendErrorKind.INVALID_ARGUMENT
    # cached structures still check their pointers, and plain-looking other arguments
    expect_error(inv, backend.reduce, ReduceOp.SUM, src + 2, dst, (16, 200), 1)  # misaligned
    expect_error(inv, backend.reduce, ReduceOp.SUM, src, dst + 2, (16, 200), 1)
    expect_error(inv, backend.reduce, ReduceOp.SUM, src + 4 * (n - 3199), dst, (16, 200), 1)  # past the end
    expect_error(inv, backend.reduce, ReduceOp.SUM, src, dst + 4 * (n - 15), (16, 200), 1)
    expect_error(inv, backend.reduce, ReduceOp.SUM, src, dst, (True, 3200), 1)  # a bool for (1, 3200)
    expect_error(inv, backend.reduce, ReduceOp.SUM, src, dst, (16, 200), True)
    expect_error(inv, backend.reduce, ReduceOp.SUM, src, dst, (16, 200), 2)
    expect_error(inv, backend.reduce, ReduceOp.SUM, src, dst, (16, 200.0), 1)
    # a freed pointer, then a new allocation of other values (maybe the same buffer again)
    backend.free(src)
    expect_error(inv, backend.reduce, ReduceOp.SUM, src, dst, (16, 200), 1)
    expect_error(inv, backend.reduce, ReduceOp.SUM, dst, src, (16, 200), 1)
    assert backend.context.stats["dispatches"] == before
    host2 = rng.standard_normal(n).astype(np.float32)
    src = backend.alloc(4 * n)
    backend.copy_htod(src, host2)
    for op, shape, axis in cases:
        run(op, shape, axis, data=host2)
        run(op, shape, axis, src_off=65, dst_off=3, data=host2)
    # lists and numpy-free plain arguments share the tuple's plan; the cache does not grow
    plans = ops_reduce._plans(backend)
    size = len(plans)
    backend.reduce(ReduceOp.SUM, src, dst, [16, 200], 1)
    run(ReduceOp.SUM, (16, 200), 1, data=host2)
    assert len(plans) == size
    backend.free(src)
    backend.free(dst)


# ---- the vector path (16-byte loads of a contiguous reduced range) ---------------------------

VECTOR_DTYPES = ["float32", "int32", "uint32", "float64", "int64"]


@pytest.fixture
def knobs():
    """``ops_reduce.configure`` for one test, starting with the vector path on (whatever the
    environment says); the previous knobs come back afterwards."""
    saved = ops_reduce.configure(vec4=True, vec4_min_length=16, vec4_arg=True, vec4_var=True)
    yield ops_reduce.configure
    ops_reduce.configure(**saved)


def vector_steps(backend, op, dtype, shape, strides, axes, dst, **kw) -> list[bool]:
    """Per step of the plan of this reduction: whether it takes the vector path."""
    plan = ops_reduce._plan(backend, op, dtype, shape, strides, axes, dst, kw.get("acc"), None, 0,
                            kw.get("prologue"))
    return [s.defines.get("VEC") == "true" for s in plan.steps]


def test_which_reductions_take_the_vector_path(backend, knobs):
    full, last, first = ((50000,), (1,), (0,)), ((64, 1000), (1000, 1), (1,)), ((1000, 64), (64, 1), (0,))
    assert vector_steps(backend, "sum", "float32", *full, "float32") == [True, False]  # + the combine pass
    assert vector_steps(backend, "max", "float32", *last, "float32")[0]
    assert not any(vector_steps(backend, "sum", "float32", *first, "float32"))  # columns: unchanged
    for dtype in VECTOR_DTYPES:
        assert vector_steps(backend, "sum", dtype, *full, numpy_dst("sum", dtype))[0], dtype
    for dtype in ("float16", "int16", "uint8", "bool"):  # packed: scalar loads
        assert not any(vector_steps(backend, "sum", dtype, *full, numpy_dst("sum", dtype))), dtype
    for op in ("prod", "min", "mean", "all", "any"):
        assert vector_steps(backend, op, "float32", *full, numpy_dst(op, "float32"))[0], op
    for op in ("argmax", "argmin", "var", "std"):  # their own kernels' vector paths
        assert vector_steps(backend, op, "float32", *full, numpy_dst(op, "float32")) == [True, False], op
        assert vector_steps(backend, op, "float32", *last, numpy_dst(op, "float32"))[0], op
        assert not any(vector_steps(backend, op, "float32", *first, numpy_dst(op, "float32"))), op
    # argmax of a reversed range: the index falls along the addresses (scalar loads)
    assert not any(vector_steps(backend, "argmax", "float32", (50000,), (-1,), (0,), "int64"))
    knobs(vec4_arg=False, vec4_var=False)
    for op in ("argmax", "var"):
        assert not any(vector_steps(backend, op, "float32", *full, numpy_dst(op, "float32"))), op
    knobs(vec4_arg=True, vec4_var=True)
    assert not any(vector_steps(backend, "sum", "float32", (50000,), (2,), (0,), "float32"))  # strided
    assert not any(vector_steps(backend, "sum", "float32", (8, 30, 40), (1200, 40, 1), (0, 2), "float32"))
    assert not any(vector_steps(backend, "sum", "float32", (100, 8), (8, 1), (1,), "float32"))  # short rows
    knobs(vec4_min_length=4)
    assert all(vector_steps(backend, "sum", "float32", (100, 8), (8, 1), (1,), "float32"))
    # a reduced range that is contiguous after canonicalisation: a reversed or transposed view
    assert vector_steps(backend, "sum", "float32", (50000,), (-1,), (0,), "float32")[0]
    assert vector_steps(backend, "sum", "float32", (300, 20), (1, 300), (0,), "float32")[0]
    knobs(vec4=False)
    assert not any(vector_steps(backend, "sum", "float32", *full, "float32"))


@pytest.mark.parametrize("dtype", VECTOR_DTYPES)
def test_vector_path_offsets_and_lengths(backend, knobs, dtype):
    """Views at every element offset modulo a vector (lead), lengths around whole vectors, whole
    workgroup steps and chunks: heads and tails are read exactly once, nothing outside."""
    rng = np.random.default_rng(61)
    dst = numpy_dst("sum", dtype)
    for lead in range(5):
        for n in (16, 17, 18, 19, 20, 21, 1023, 1024, 1025, 1027, 4095, 4096, 4097, 32767, 32769, 65536 + 5):
            src = Source(backend, dtype, (n,), rng=rng, lead=lead, tail=lead % 3)
            reduce_view(backend, "sum", src, (0,), dst)
            reduce_view(backend, "max", src, (0,), dtype)
            reduce_view(backend, "argmax", src, (0,), "int64")
            if dtype.startswith("float"):
                reduce_view(backend, "var", src, (0,), dtype, ddof=1)
    big = Source(backend, dtype, (300_001,), rng=rng, lead=3)  # chunked: many partial slots
    for op in ("sum", "min", "mean", "argmin"):
        reduce_view(backend, op, big, (0,), numpy_dst(op, dtype))
    if dtype.startswith("float"):
        reduce_view(backend, "std", big, (0,), dtype)


@pytest.mark.parametrize("dtype", ["float32", "int32", "float64"])
def test_vector_path_rows_of_every_length(backend, knobs, dtype):
    """Rows (last axis) of 1..9 elements and around whole vectors, every row starting at another
    offset modulo a vector, kept dims contiguous, padded or reversed, every row tile."""
    knobs(vec4_min_length=1)
    rng = np.random.default_rng(67)
    dst = numpy_dst("sum", dtype)
    for n in list(range(1, 10)) + [15, 16, 17, 63, 64, 65, 255, 256, 257, 1023, 1025, 2048, 4099]:
        rows = max(3, min(300, 6000 // n))
        for shape, strides in [((rows, n), (n, 1)), ((rows, n), (n + 3, 1)), ((rows, n), (-(n + 1), 1)),
                               ((4, rows // 4 + 1, n), ((rows // 4 + 1) * n * 2, n, 1))]:
            src = Source(backend, dtype, shape, strides, rng=rng, lead=n % 4 + 1)
            if n > 1:  # (a reduced dim of 1 is dropped: nothing to load as vectors)
                assert vector_steps(backend, "sum", dtype, shape, strides, (len(shape) - 1,), dst)[0]
            reduce_view(backend, "sum", src, (-1,), dst)
            reduce_view(backend, "max", src, (-1,), dtype)
            reduce_view(backend, "any", src, (-1,), "bool")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_vector_path_nan_and_inf(backend, knobs, dtype):
    """NaN wins max and min wherever it lies: head, vectors (every lane), tail, another chunk."""
    n = 70_000
    for lead in (0, 1, 2, 3):
        for pos in (0, 1, 2, 3, 4, 5, 6, 7, 1000, 40_001, n - 3, n - 2, n - 1):
            x = np.linspace(-1, 1, n).astype(dtype)
            x[pos] = np.nan
            x[(pos + 17) % n] = np.inf
            x[(pos + 29) % n] = -np.inf
            src = Source(backend, dtype, (n,), values=x, lead=lead)
            for op in ("max", "min", "sum"):
                got = reduce_view(backend, op, src, (0,), dtype)
                assert np.isnan(got), (lead, pos, op)
            rows = Source(backend, dtype, (7, n // 7), values=x, lead=lead)
            got = reduce_view(backend, "max", rows, (1,), dtype)
            assert np.isnan(got[pos // (n // 7)]) and np.isnan(got).sum() == 1
        y = np.linspace(-1, 1, n).astype(dtype)
        y[123] = np.inf
        y[n - 1] = -np.inf
        src = Source(backend, dtype, (n,), values=y, lead=lead)
        assert reduce_view(backend, "max", src, (0,), dtype) == np.inf
        assert reduce_view(backend, "min", src, (0,), dtype) == -np.inf


NAN_BITS = {"float32": ("<u4", [0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FFFFFFF, 0xFFFFFFFF]),
            "float64": ("<u8", [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001,
                                0xFFF0000000000001, 0x7FFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF])}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_vector_path_max_min_nan_tracking(backend, knobs, dtype):
    """Float max/min combine whole vectors with the plain builtins and track NaN from the bits
    loaded: every NaN encoding (either sign, quiet or signalling, any payload) in the head, each
    lane, the tail or another chunk gives NaN, in full and row reductions, for every unroll;
    values next to NaN in bits (+-inf, the largest finite, f64 beyond f32's range) do not."""
    n = 20_000
    ubits, nans = NAN_BITS[dtype]
    info = np.finfo(dtype)
    for unroll in (1, 4):
        knobs(vec4_unroll=unroll)
        for lead in (0, 1, 3):
            for k, pos in enumerate((0, 1, 2, 3, 4, 5, 6, 7, 9_999, n - 4, n - 3, n - 2, n - 1)):
                x = np.linspace(-1, 1, n).astype(dtype)
                x.view(ubits)[pos] = nans[(k + lead) % len(nans)]
                x[(pos + 5) % n] = info.max
                x[(pos + 11) % n] = -np.inf if k % 2 else info.min
                src = Source(backend, dtype, (n,), values=x, lead=lead)
                rows = Source(backend, dtype, (4, n // 4), values=x, lead=lead)
                with np.errstate(invalid="ignore"):  # (signalling NaNs converted on the host)
                    for op in ("max", "min"):
                        assert np.isnan(reduce_view(backend, op, src, (0,), dtype)), (unroll, lead, pos, op)
                        got = reduce_view(backend, op, rows, (1,), dtype)
                        assert np.isnan(got[pos // (n // 4)]) and np.isnan(got).sum() == 1, (unroll, lead, pos, op)
                        # accumulating in the other float width: NaN survives the conversion
                        other = "float64" if dtype == "float32" else "float32"
                        assert np.isnan(reduce_view(backend, op, src, (0,), other, acc=other)), (lead, pos, op)
    # no NaN: extremes exact; f64 values that round to an f32 inf are not taken for NaN
    big = [info.max, info.min, np.inf, -np.inf] + ([1e300, -1e300, 3.5e38, -3.5e38] if dtype == "float64" else [])
    for lead in (0, 1, 2):
        for v in big:
            x = np.linspace(-1, 1, 4099).astype(dtype)
            x[1000] = v
            src = Source(backend, dtype, x.shape, values=x, lead=lead)
            for op in ("max", "min"):
                got = reduce_view(backend, op, src, (0,), dtype)
                assert not np.isnan(got) and got == getattr(np, op)(x), (lead, v, op)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_vector_path_max_min_special_values(backend, knobs, dtype):
    """All NaN, all +-inf, a single value, signed zeros where NumPy's result is fixed (every
    element of one sign), and integer sources accumulated as floats (no NaN to track)."""
    n = 4096 + 3
    for lead in (0, 1, 3):
        for fill in (np.nan, np.inf, -np.inf, 0.0, -0.0, 2.5, -2.5):
            x = np.full(n, fill, dtype)
            src = Source(backend, dtype, (n,), values=x, lead=lead)
            rows = Source(backend, dtype, (3, n // 3), values=x, lead=lead)
            for op in ("max", "min"):
                got = reduce_view(backend, op, src, (0,), dtype)
                got_rows = reduce_view(backend, op, rows, (1,), dtype)
                if np.isnan(fill):
                    assert np.isnan(got) and np.isnan(got_rows).all()
                else:
                    assert got == fill and np.signbit(got) == np.signbit(fill), (fill, op)
                    assert (got_rows == fill).all() and (np.signbit(got_rows) == np.signbit(fill)).all()
    rng = np.random.default_rng(101)
    for src_dtype in ("int32", "uint32", "int64"):
        src = Source(backend, src_dtype, (30_011,), rng=rng, lead=1)
        for op in ("max", "min"):
            reduce_view(backend, op, src, (0,), dtype, acc=dtype)


def _render_without_vector_combine(defines) -> str:
    """reduce_plain as rendered before the vector combine existed: ``{{VEC_COMBINE}}`` and
    ``{{VEC_LOAD_SRC}}`` spelled ``combine`` and ``load_src`` in the template itself."""
    from gputensor._backend import kernels

    text = kernels.template_source("reduce_plain")
    text = text.replace("{{VEC_COMBINE}}", "combine").replace("{{VEC_LOAD_SRC}}", "load_src")
    values = {k: str(v) for k, v in defines.items() if k not in ("VEC_COMBINE", "VEC_LOAD_SRC")}
    text = kernels.unroll_loops(kernels._PLACEHOLDER.sub(lambda m: values[m.group(1)], text))
    return kernels.with_helpers(text)


def test_vector_combine_changes_only_float_max_min(backend, knobs):
    """The rendered WGSL of every reduce_plain step is what the combine-only template gives,
    byte for byte, except the vector steps of max/min accumulating in a float, which use the
    plain builtin on whole vectors and track NaN (only for float sources)."""
    from gputensor._backend.kernels import render

    cases = [((50_000,), (1,), (0,)), ((64, 1000), (1000, 1), (1,)), ((1000, 64), (64, 1), (0,))]
    checked = set()
    for op in ("sum", "prod", "max", "min", "mean", "all", "any"):
        for dtype in ("float32", "float64", "int32", "uint32", "int64", "float16", "bool"):
            for acc in (None, "float32", "float64"):
                if acc is not None and (op not in ("sum", "max", "min") or dtype == "bool"):
                    continue
                dst = acc or numpy_dst(op, dtype)
                for shape, strides, axes in cases:
                    plan = ops_reduce._plan(backend, op, dtype, shape, strides, axes, dst, acc, None, 0)
                    for step in plan.steps:
                        text = render(step.kernel, step.defines)
                        vec = step.defines["VEC"] == "true"
                        float_acc = kind(acc or default_acc(op, dtype, dst)) == "f"
                        if vec and op in ("max", "min") and float_acc:
                            assert f"a[l] = {op}(a[l], to_acc(xs[u][l]));" in text
                            assert ("nan_fold(" in text) == (kind(dtype) == "f"), (op, dtype, acc)
                            assert text != _render_without_vector_combine(step.defines)
                            checked.add("tracked" if kind(dtype) == "f" else "plain")
                        else:
                            assert "nan_bits" not in text and "nan_fold" not in text
                            assert text == _render_without_vector_combine(step.defines), (op, dtype, acc, shape)
                            checked.add(("vec" if vec else "scalar", op))
    assert {"tracked", "plain", ("vec", "sum"), ("scalar", "sum"), ("scalar", "max")} <= checked


@pytest.mark.parametrize("dtype,dst", [("int32", "int32"), ("uint32", "uint32"), ("int32", "int64"),
                                       ("uint32", "uint64"), ("int64", "int64")])
def test_vector_path_integer_sums_wrap(backend, knobs, dtype, dst):
    """Full-range integers: sums wrap at the accumulation width exactly as NumPy's; max/min
    exact."""
    rng = np.random.default_rng(71)
    for lead in (0, 1, 3):
        for shape, axes in [((100_003,), (0,)), ((37, 1001), (1,)), ((5, 40_000), (1,))]:
            src = Source(backend, dtype, shape, rng=rng, lead=lead)
            reduce_view(backend, "sum", src, axes, dst)
            reduce_view(backend, "prod", src, axes, dst)
            reduce_view(backend, "max", src, axes, dtype)
            reduce_view(backend, "min", src, axes, dtype)
    info = np.iinfo(dtype)
    src = Source(backend, dtype, (50_000,), values=np.full(50_000, info.max, dtype), lead=1)
    got = reduce_view(backend, "sum", src, (0,), dst)
    assert got == np.sum(src.view, dtype=dst)


@pytest.mark.parametrize("dtype", ["float32", "int32", "float64"])
def test_vector_path_on_and_off_agree(backend, knobs, dtype):
    """``configure(vec4=...)`` (GPUTENSOR_REDUCE_VEC4) switches the path, plans of either are
    kept apart in the cache, and both match NumPy (integers bitwise)."""
    rng = np.random.default_rng(73)
    cases = [((1_000_003,), (1,), (0,)), ((64, 4099), (4099, 1), (1,)), ((512, 256), (256, 1), (1,)),
             ((3, 50_000), (50_000, 1), (1,)), ((999, 17), (20, 1), (1,)), ((200, 300), (300, 1), (0,))]
    for shape, strides, axes in cases:
        src = Source(backend, dtype, shape, strides, rng=rng, lead=3)
        for op in ("sum", "max", "mean"):
            dst = numpy_dst(op, dtype)
            results = []
            for vec in (True, False, True):
                knobs(vec4=vec)
                results.append(reduce_view(backend, op, src, axes, dst))
            np.testing.assert_array_equal(results[0], results[2])  # bitwise, from the cache
            if kind(dst) != "f" or op == "max":
                np.testing.assert_array_equal(results[0], results[1])
            else:  # another order of summation
                np.testing.assert_allclose(results[0], results[1], **tol(dst, "reduction_reorder"))


def test_vector_path_is_bitwise_reproducible(backend, knobs):
    rng = np.random.default_rng(79)
    x = rng.standard_normal(2_000_001).astype(np.float32)
    for lead in (0, 1, 2):
        src = Source(backend, "float32", x.shape, values=x, lead=lead)
        rows = Source(backend, "float32", (1000, 2000), values=x, lead=lead)
        first = None
        for _ in range(3):
            out = Dest(backend, "float32", ())
            reduce_strided(backend, "sum", src.ptr, "float32", x.shape, (1,), (0,), out.ptr, "float32")
            out_rows = Dest(backend, "float32", (1000,))
            reduce_strided(backend, "sum", rows.ptr, "float32", (1000, 2000), (2000, 1), (1,), out_rows.ptr, "float32")
            got = (out.read().tobytes(), out_rows.read().tobytes())
            assert first is None or got == first
            first = got


def test_vector_path_knobs(backend, knobs):
    """Other workgroup targets, loads in flight and vectors per invocation: same results."""
    rng = np.random.default_rng(83)
    srcs = [(Source(backend, "float32", (200_003,), rng=rng, lead=1), (0,)),
            (Source(backend, "float32", (48, 4096), rng=rng, lead=2), (1,)),
            (Source(backend, "int32", (300, 777), rng=rng, lead=3), (1,))]
    for settings in [dict(target_workgroups=64), dict(target_workgroups=5000), dict(vec4_unroll=1),
                     dict(vec4_unroll=8), dict(vec4_vectors=1), dict(vec4_vectors=64)]:
        knobs(**settings)
        for src, axes in srcs:
            reduce_view(backend, "sum", src, axes, numpy_dst("sum", src.dtype))
            reduce_view(backend, "max", src, axes, src.dtype)


def test_vector_path_in_small_windows(small_window, knobs):
    """Reduced ranges split over windows: every piece starts at another offset."""
    rng = np.random.default_rng(89)
    for shape, axes in [((3001,), (0,)), ((5, 999), (1,)), ((700, 3), (0, 1))]:
        for dtype in ("float32", "int64"):
            src = Source(small_window, dtype, shape, rng=rng, lead=1)
            reduce_view(small_window, "sum", src, axes, numpy_dst("sum", dtype))
            reduce_view(small_window, "max", src, axes, dtype)


def test_vec4_environment_variable():
    """GPUTENSOR_REDUCE_VEC4=0 turns the vector path off at import (the knobs' defaults)."""
    import os
    import subprocess
    import sys

    code = ("from gputensor._backend import ops_reduce as o; k = o._knobs(); "
            "print(k.vec4, k.target_workgroups, k.vec4_unroll, k.vec4_vectors)")
    env = dict(os.environ, GPUTENSOR_REDUCE_VEC4="0", GPUTENSOR_REDUCE_WORKGROUPS="1024",
               GPUTENSOR_REDUCE_VEC4_UNROLL="2", GPUTENSOR_REDUCE_VEC4_VECTORS="16")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "1024", "2", "16"]


def test_frontend_offset_views_take_the_vector_path(knobs):
    import gputensor as gt

    rng = np.random.default_rng(97)
    host = rng.standard_normal(20_011).astype(np.float32)
    a = gt.asarray(host)
    for sl in (slice(1, None), slice(2, -1), slice(3, -3), slice(5, 10_000), slice(None, None, -1)):
        for vec in (True, False):
            knobs(vec4=vec)
            np.testing.assert_allclose(float(gt.sum(a[sl])), host[sl].astype(np.float64).sum(), **tol("float32", "sum_long"))
            assert float(gt.max(a[sl])) == host[sl].max()
    m = gt.asarray(host[:20_000].reshape(40, 500))
    np.testing.assert_allclose(gt.sum(m[1:, 3:], axis=1).get(), host[:20_000].reshape(40, 500)[1:, 3:].sum(axis=1),
                               **tol("float32", "sum_rows"))
