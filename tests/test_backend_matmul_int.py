"""Backend integer matmul (``ops_matmul_int.matmul_int``) against NumPy's integer matmul.

Operands live inside larger allocations filled with a sentinel, at arbitrary element offsets,
with strides of any sign (row-major, transposed, negative steps, broadcast batch stride 0), so a
kernel that reads the wrong elements or writes outside C is caught. Results must be bit-exact,
wrap-around included.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gputensor._backend import BackendError, BackendErrorKind, get_backend
from gputensor._backend import ops_gemm, ops_matmul_int
from gputensor._backend.ops_matmul_int import accumulator_dtype, matmul_int
from gputensor._backend.wgsl_types import int64_mode

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
ACCS = ["int32", "uint32", "int64", "uint64"]


@pytest.fixture(scope="module")
def backend():
    return get_backend()


class Strided:
    """A (batch, rows, cols) integer operand stored with the given element strides inside a
    sentinel-filled allocation; ``ptr`` points at element [0, 0, 0]."""

    def __init__(self, backend, values: np.ndarray, strides: tuple[int, int, int], lead: int = 5,
                 tail: int = 3, sentinel: int = 0x5A):
        self.backend = backend
        self.values = values
        self.strides = strides
        dims = list(zip(values.shape, strides))
        empty = values.size == 0
        lo = 0 if empty else sum(s * (n - 1) for n, s in dims if s < 0)
        hi = 0 if empty else sum(s * (n - 1) for n, s in dims if s > 0)
        self.origin = lead - lo
        total = self.origin + hi + 1 + tail
        self.storage = np.full(total, sentinel, dtype=values.dtype)
        self.index = self.origin + sum(
            np.arange(n).reshape([-1 if d == a else 1 for a in range(3)]) * s
            for d, (n, s) in enumerate(dims))
        self.storage[self.index] = values
        self.itemsize = values.dtype.itemsize
        self.base = backend.alloc(max(self.storage.nbytes, 4))
        backend.copy_htod(self.base, self.storage.view(np.uint8))
        self.ptr = self.base + self.origin * self.itemsize

    def download(self) -> np.ndarray:
        out = np.empty_like(self.storage)
        self.backend.copy_dtoh(out.view(np.uint8), self.base)
        return out

    def free(self) -> None:
        self.backend.free(self.base)


def layout(kind: str, batch: int, rows: int, cols: int) -> tuple[int, int, int]:
    """Element strides (batch, row, col) of a stored (batch, rows, cols) operand."""
    if kind == "row":
        return rows * cols, cols, 1
    if kind == "col":  # a transposed view of a row-major (batch, cols, rows) array
        return rows * cols, 1, rows
    if kind == "padded":  # row-major with a leading dimension larger than cols
        return rows * (cols + 3), cols + 3, 1
    if kind == "negative":  # both matrix dims reversed, batch reversed too
        return -rows * cols, -cols, -1
    if kind == "broadcast":  # one matrix shared by every batch entry
        return 0, cols, 1
    raise ValueError(kind)


def values(rng: np.random.Generator, dtype: str, shape: tuple[int, ...], extremes: bool) -> np.ndarray:
    info = np.iinfo(dtype)
    if extremes:
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    return rng.integers(max(info.min, -9), min(info.max, 9), shape, dtype=dtype, endpoint=True)


def reference(a: np.ndarray, b: np.ndarray, c_dtype: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.matmul(a.astype(c_dtype), b.astype(c_dtype))


def run(backend, m, n, k, batch, a_dtype, b_dtype, c_dtype, kinds=("row", "row"), seed=0,
        extremes=True, accumulate=False):
    rng = np.random.default_rng(seed)
    a_vals = values(rng, a_dtype, (batch, m, k), extremes)
    b_vals = values(rng, b_dtype, (batch, k, n), extremes)
    if kinds[0] == "broadcast":
        a_vals = np.broadcast_to(a_vals[:1], a_vals.shape).copy()
    if kinds[1] == "broadcast":
        b_vals = np.broadcast_to(b_vals[:1], b_vals.shape).copy()
    a = Strided(backend, a_vals, layout(kinds[0], batch, m, k))
    b = Strided(backend, b_vals, layout(kinds[1], batch, k, n))
    c0 = values(rng, c_dtype, (batch, m, n), True)
    c = Strided(backend, c0, layout("padded", batch, m, n), sentinel=0x3C)
    try:
        matmul_int(backend, m, n, k, batch, a.ptr, a_dtype, a.strides, b.ptr, b_dtype, b.strides,
                   c.ptr, c_dtype, c.strides, accumulate=accumulate)
        flat = c.download()
        expect = reference(a_vals, b_vals, c_dtype)
        if accumulate:
            with np.errstate(all="ignore"):
                expect = expect + c0
        got = flat[c.index]
        np.testing.assert_array_equal(got, expect)
        untouched = np.ones(flat.shape, bool)
        untouched[c.index] = False
        assert np.all(flat[untouched] == c.storage[untouched]), "wrote outside C"
    finally:
        for x in (a, b, c):
            x.free()


# ---- correctness ---------------------------------------------------------------------------
@given(st.data())
def test_matches_numpy(backend, data):
    a_dtype = data.draw(st.sampled_from(INTS))
    b_dtype = data.draw(st.sampled_from(INTS))
    wide = "int64" if "64" in a_dtype + b_dtype else "int32"
    c_dtype = data.draw(st.sampled_from([wide, wide.replace("int", "uint")]))
    m, n, k = (data.draw(st.integers(0, 40)) for _ in range(3))
    batch = data.draw(st.integers(0, 3))
    kinds = tuple(data.draw(st.sampled_from(["row", "col", "padded", "negative", "broadcast"]))
                  for _ in range(2))
    run(backend, m, n, k, batch, a_dtype, b_dtype, c_dtype, kinds,
        seed=data.draw(st.integers(0, 2**16)), extremes=data.draw(st.booleans()),
        accumulate=data.draw(st.booleans()))


@pytest.mark.parametrize("dtype", INTS)
def test_wraps_like_numpy(backend, dtype):
    """Extreme values: every product and sum wraps; 8/16-bit results come from the 32-bit
    accumulator truncated (checked against NumPy's matmul in the dtype itself)."""
    acc = accumulator_dtype(dtype)
    rng = np.random.default_rng(1)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, (1, 37, 29), dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, (1, 29, 19), dtype=dtype, endpoint=True)
    sa, sb = Strided(backend, a, (0, 29, 1)), Strided(backend, b, (0, 19, 1))
    c = Strided(backend, np.zeros((1, 37, 19), acc), (0, 19, 1))
    try:
        matmul_int(backend, 37, 19, 29, 1, sa.ptr, dtype, sa.strides, sb.ptr, dtype, sb.strides,
                   c.ptr, acc, c.strides)
        got = c.download()[c.index].astype(dtype)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(got, np.matmul(a, b))
    finally:
        for x in (sa, sb, c):
            x.free()


@pytest.mark.parametrize("tiles", [ops_gemm.TILES_LARGE, ops_gemm.TILES_TALL, ops_gemm.TILES_WIDE,
                                   ops_gemm.TILES_MEDIUM, ops_gemm.TILES_MEDIUM_F64,
                                   ops_gemm.TILES_SMALL], ids=str)
@pytest.mark.parametrize("c_dtype", ["int32", "int64"])
def test_every_tile_configuration(backend, monkeypatch, tiles, c_dtype):
    """The configurations GPUs get (lavapipe itself only uses the software ones), with ragged
    edges in m, n and k and both fetch orders of A and B."""
    limit = int(backend.context.limits.get("max-compute-workgroup-storage-size", 16384))
    acc_size = 8 if c_dtype == "int64" else 4
    if tiles.workgroup_bytes(acc_size) > limit:
        # This adapter cannot run the configuration (64-bit GPUs use the f64 tiles): check the
        # selection never offers it here, for any problem shape, instead of running it.
        acc = "f64" if acc_size == 8 else "f32"
        for m, n, batch in ((4096, 4096, 1), (64, 4096, 1), (4096, 64, 1), (33, 21, 7), (1, 1, 1)):
            chosen = ops_gemm.gemm_tiles(backend.context, acc, m, n, batch)
            assert chosen.workgroup_bytes(acc_size) <= limit
        return
    monkeypatch.setattr(ops_matmul_int, "gemm_tiles", lambda *args: tiles)
    run(backend, tiles.bm + 3, tiles.bn + 5, 2 * tiles.bk + 3, 2, "int16", "int8", c_dtype,
        ("row", "col"), seed=3)
    run(backend, 7, 9, 11, 1, "int32", "int32", c_dtype, ("col", "row"), seed=4)


def test_k_zero(backend):
    run(backend, 5, 6, 0, 2, "int8", "int8", "int32")  # zeros written, A and B not read
    run(backend, 5, 6, 0, 2, "int8", "int8", "int32", accumulate=True)  # C unchanged


@pytest.mark.parametrize("limit_bytes", [2048, 700])
@pytest.mark.parametrize("dtypes", [("int8", "int32"), ("int64", "int64"), ("uint16", "uint32")])
def test_split_with_small_window_limit(backend, monkeypatch, limit_bytes, dtypes):
    """With a tiny binding limit the problem is split on batch, m, n and k (k blocks accumulate);
    results unchanged."""
    monkeypatch.setattr(backend, "max_window_bytes", lambda: limit_bytes)
    before = backend.context.stats["dispatches"]
    src, acc = dtypes
    run(backend, 33, 21, 29, 3, src, src, acc, ("row", "negative"), seed=5)
    run(backend, 33, 21, 29, 3, src, src, acc, ("col", "broadcast"), seed=6, accumulate=True)
    assert backend.context.stats["dispatches"] - before > 6


def test_operand_larger_than_one_binding(backend):
    """A real operand over the adapter's binding limit (128 MiB on lavapipe): A is m x k int32
    (just over one binding) with n = 2, so k is split across dispatches that accumulate."""
    limit = backend.max_window_bytes()
    m = 4096
    k = limit // (4 * m) + 8
    n = 2
    rng = np.random.default_rng(11)
    a = rng.integers(-1000, 1000, (m, k), dtype=np.int32)
    b = rng.integers(-1000, 1000, (k, n), dtype=np.int32)
    assert a.nbytes > limit
    pa, pb, pc = backend.alloc(a.nbytes), backend.alloc(b.nbytes), backend.alloc(m * n * 4)
    try:
        backend.copy_htod(pa, a)
        backend.copy_htod(pb, b)
        before = backend.context.stats["dispatches"]
        matmul_int(backend, m, n, k, 1, pa, "int32", (0, k, 1), pb, "int32", (0, n, 1),
                   pc, "int32", (0, n, 1))
        assert backend.context.stats["dispatches"] - before >= 2
        out = np.empty((m, n), np.int32)
        backend.copy_dtoh(out, pc)
        np.testing.assert_array_equal(out, a.astype(np.int64) @ b.astype(np.int64))
    finally:
        for p in (pa, pb, pc):
            backend.free(p)


# ---- validation ------------------------------------------------------------------------------
def test_accumulator_dtype():
    assert [accumulator_dtype(d) for d in INTS] == ["int32"] * 3 + ["int64"] + ["uint32"] * 3 + ["uint64"]
    with pytest.raises(BackendError):
        accumulator_dtype("float32")
    from gputensor import _dtypes
    from gputensor._function_kernels import int_accumulator

    for d in INTS:  # the frontend's mapping agrees
        assert int_accumulator(_dtypes.DTYPES_BY_NAME[d]).name == accumulator_dtype(d)


def test_errors_record_nothing(backend, monkeypatch):
    a = backend.alloc(64)
    c = backend.alloc(64)
    good = dict(a=a, a_dtype="int32", a_strides=(0, 4, 1), b=a, b_dtype="int32", b_strides=(0, 4, 1),
                c=c, c_dtype="int32", c_strides=(0, 4, 1))

    def call(m=4, n=4, k=4, batch=1, **changes):
        args = {**good, **changes}
        matmul_int(backend, m, n, k, batch, args["a"], args["a_dtype"], args["a_strides"],
                   args["b"], args["b_dtype"], args["b_strides"], args["c"], args["c_dtype"],
                   args["c_strides"], **({"accumulate": args["accumulate"]} if "accumulate" in args else {}))

    bad_calls = [
        dict(m=-1), dict(k=1.5), dict(batch=True),
        dict(a_strides=(0, 4)), dict(b_strides=(0, 4, 1.0)), dict(c_strides="abc"),
        dict(a_dtype="float32"), dict(b_dtype="int128"), dict(c_dtype="int8"), dict(c_dtype="float32"),
        dict(c_strides=(0, 1, 1)),  # C elements alias
        dict(c_strides=(0, 0, 1)),
        dict(m=5),  # C (and A) run past their 64-byte allocations
        dict(a=a + 2),  # misaligned
        dict(c=c + 64 * 4),  # outside the allocation
        dict(a=12345),  # not a pointer
        dict(accumulate=1),
    ]
    before = backend.context.stats["dispatches"]
    try:
        for changes in bad_calls:
            with pytest.raises(BackendError) as info:
                call(**changes)
            assert info.value.kind is BackendErrorKind.INVALID_ARGUMENT, changes
        monkeypatch.setattr(backend, "supports", lambda feature: feature is None)
        with pytest.raises(BackendError) as info, int64_mode(False):  # (native int64: its feature)
            call(c_dtype="int64", c_strides=(0, 2, 1), m=2, n=2)
        assert info.value.kind is BackendErrorKind.UNSUPPORTED
        assert "shader-int64" in str(info.value)
        monkeypatch.undo()
        assert backend.context.stats["dispatches"] == before
        call(m=0)  # nothing to do, after validation
        call(batch=0)
        assert backend.context.stats["dispatches"] == before
    finally:
        backend.free(a)
        backend.free(c)


def test_repeated_calls_replay_the_same_dispatches(backend, monkeypatch):
    """A repeated call (its structure's program kept per backend) records what the first call
    did, checks its pointers again, and a dispatch wrapper still sees every dispatch."""
    rng = np.random.default_rng(11)
    a_vals = values(rng, "int16", (3, 17, 9), False)
    b_vals = values(rng, "int8", (3, 9, 13), False)
    expect = reference(a_vals, b_vals, "int32")
    a = Strided(backend, a_vals, layout("negative", 3, 17, 9))
    b = Strided(backend, b_vals, layout("col", 3, 9, 13))
    outs = [Strided(backend, np.zeros((3, 17, 13), np.int32), layout("padded", 3, 17, 13)) for _ in range(3)]
    monkeypatch.setattr(backend, "max_window_bytes", lambda: 700)  # several blocks per call
    try:
        counts = []
        for i, c in enumerate(outs):
            before = backend.context.stats["dispatches"]
            if i == 2:  # through the reference path, seen by a spy
                seen = []
                original = backend.context.dispatch
                monkeypatch.setattr(backend.context, "dispatch",
                                    lambda name, *args, **kw: (seen.append(name), original(name, *args, **kw)))
            matmul_int(backend, 17, 13, 9, 3, a.ptr, "int16", a.strides, b.ptr, "int8", b.strides,
                       c.ptr, "int32", c.strides)
            counts.append(backend.context.stats["dispatches"] - before)
            np.testing.assert_array_equal(c.download()[c.index], expect)
        assert counts[0] > 1 and counts[0] == counts[1] == counts[2] == len(seen)
        freed = Strided(backend, np.zeros((3, 17, 13), np.int32), layout("padded", 3, 17, 13))
        freed.free()
        with pytest.raises(BackendError):
            matmul_int(backend, 17, 13, 9, 3, a.ptr, "int16", a.strides, b.ptr, "int8", b.strides,
                       freed.ptr, "int32", freed.strides)
    finally:
        for x in (a, b, *outs):
            x.free()
