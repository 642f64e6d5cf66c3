"""Backend conv2d_forward (NCHW cross-correlation, zero padding) against a NumPy float64
reference written independently of the kernel (a sum of strided shifted slices)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gputensor._backend import BackendError, BackendErrorKind, get_backend
from gputensor._backend import ops_conv, ops_gemm
from gputensor._backend.plan_cache import PlanCache

from _compare import tol

NP_DTYPES = {"float16": np.float16, "float32": np.float32, "float64": np.float64}
EPS = {"float16": (2.0**-11, 2.0**-24), "float32": (2.0**-24, 2.0**-24), "float64": (2.0**-53, 2.0**-53)}


@pytest.fixture(scope="module")
def backend():
    return get_backend()


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def reference_conv2d(x: np.ndarray, f: np.ndarray, stride, padding) -> np.ndarray:
    """torch.nn.functional.conv2d(x, f, stride=stride, padding=padding) in float64."""
    sh, sw = _pair(stride)
    ph, pw = _pair(padding)
    n, c, h, w = x.shape
    k, _, fh, fw = f.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh = (h + 2 * ph - fh) // sh + 1
    ow = (w + 2 * pw - fw) // sw + 1
    out = np.zeros((n, k, oh, ow))
    for i in range(fh):
        for j in range(fw):
            patch = xp[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw]
            out += np.einsum("nchw,kc->nkhw", patch, f[:, :, i, j].astype(np.float64))
    return out


def run_conv(backend, in_shape, f_shape, stride, padding, *, dtype="float32", seed=0,
             leads=(0, 0, 0), check_untouched=True, splits=None):
    rng = np.random.default_rng(seed)
    npd = NP_DTYPES[dtype]
    x = rng.uniform(-1, 1, in_shape).astype(npd)
    f = rng.uniform(-1, 1, f_shape).astype(npd)
    ref = reference_conv2d(x, f, stride, padding)
    itemsize = np.dtype(npd).itemsize
    bases, ptrs = [], []
    for arr, lead in zip((x, f, np.full(ref.shape, np.nan, npd)), leads):
        storage = np.full(lead + arr.size + 5, np.nan, npd)
        storage[lead:lead + arr.size] = arr.ravel()
        base = backend.alloc(storage.nbytes)
        backend.copy_htod(base, storage)
        bases.append((base, storage))
        ptrs.append(base + lead * itemsize)
    ops_conv.conv2d_forward(backend, ptrs[0], in_shape, ptrs[1], f_shape, ptrs[2], ref.shape,
                            stride, padding, dtype=dtype, splits=splits)
    obase, ostorage = bases[2]
    flat = np.empty_like(ostorage)
    backend.copy_dtoh(flat, obase)
    got = flat[leads[2]:leads[2] + ref.size].reshape(ref.shape).astype(np.float64)
    if check_untouched:
        assert np.all(np.isnan(flat[:leads[2]])) and np.all(np.isnan(flat[leads[2] + ref.size:]))
    absref = reference_conv2d(np.abs(x), np.abs(f), stride, padding)
    eps_out, eps_acc = EPS[dtype]
    kdepth = f_shape[1] * f_shape[2] * f_shape[3]
    tol = 2 * eps_out * np.abs(ref) + (kdepth + 4) * eps_acc * absref + 1e-30
    err = np.abs(got - ref)
    assert np.all(err <= tol), f"max error {err.max()}"
    for base, _ in bases:
        backend.free(base)
    return got


CASES = [
    # (input NCHW, filter KCFhFw, stride, padding)
    ((1, 1, 5, 5), (1, 1, 3, 3), 1, 0),
    ((1, 1, 1, 1), (1, 1, 1, 1), 1, 0),
    ((2, 3, 9, 11), (5, 3, 3, 3), 1, 1),
    ((2, 3, 9, 11), (5, 3, 3, 3), 2, 1),
    ((2, 3, 9, 11), (4, 3, 3, 2), (2, 1), (0, 2)),
    ((3, 7, 13, 8), (70, 7, 1, 1), 1, 0),
    ((2, 8, 10, 10), (16, 8, 1, 1), 2, 0),
    ((1, 4, 12, 7), (3, 4, 1, 5), (1, 2), (0, 2)),
    ((2, 2, 6, 6), (3, 2, 6, 6), 1, 0),          # filter covers the whole input: 1x1 output
    ((1, 1, 3, 3), (2, 1, 5, 5), 1, 2),          # filter larger than the unpadded input
    ((1, 3, 7, 7), (2, 3, 3, 3), 3, 3),          # padding as large as the filter
    ((4, 16, 9, 9), (33, 16, 3, 3), 1, 1),       # several tiles on M, N and K
]


@pytest.mark.parametrize("in_shape,f_shape,stride,padding", CASES)
def test_conv_cases(backend, in_shape, f_shape, stride, padding):
    run_conv(backend, in_shape, f_shape, stride, padding)


@pytest.mark.parametrize("dtype", ["float16", "float64"])
@pytest.mark.parametrize("case", [CASES[2], CASES[4], CASES[5]])
def test_conv_other_dtypes(backend, dtype, case):
    run_conv(backend, *case, dtype=dtype, leads=(1, 3, 1))


def test_conv_interior_pointers(backend):
    run_conv(backend, (2, 3, 8, 9), (4, 3, 3, 3), (1, 2), 1, leads=(7, 5, 3))


@settings(max_examples=20, deadline=None)
@given(
    n=st.integers(1, 3), c=st.integers(1, 6), h=st.integers(1, 12), w=st.integers(1, 12),
    k=st.integers(1, 9), fh=st.integers(1, 5), fw=st.integers(1, 5),
    sh=st.integers(1, 3), sw=st.integers(1, 3), ph=st.integers(0, 3), pw=st.integers(0, 3),
    dtype=st.sampled_from(["float32", "float32", "float16", "float64"]),
)
def test_conv_property(backend, n, c, h, w, k, fh, fw, sh, sw, ph, pw, dtype):
    if fh > h + 2 * ph or fw > w + 2 * pw:
        return
    run_conv(backend, (n, c, h, w), (k, c, fh, fw), (sh, sw), (ph, pw), dtype=dtype)


@pytest.mark.parametrize("limit_bytes", [4096, 1200])
def test_conv_split_with_small_window_limit(backend, monkeypatch, limit_bytes):
    """Tiny window limits split images, output channels, input channels (accumulating) and
    output rows (with input halos); the result is unchanged."""
    monkeypatch.setattr(backend, "max_window_bytes", lambda: limit_bytes)
    before = backend.context.stats["dispatches"]
    run_conv(backend, (3, 5, 11, 9), (7, 5, 3, 3), (2, 1), (1, 2), leads=(1, 2, 3))
    assert backend.context.stats["dispatches"] - before >= 2


def test_conv_split_rows_only(backend, monkeypatch):
    # One image, one channel: only output rows can be split; halos overlap between blocks.
    monkeypatch.setattr(backend, "max_window_bytes", lambda: 8 * 40 * 4)
    run_conv(backend, (1, 1, 30, 40), (2, 1, 5, 3), 1, 2)


# ---- split-K and the patch decoding ------------------------------------------------------------
SPLIT_CASES = [
    ((2, 32, 7, 7), (16, 32, 3, 3), 1, 1),       # 288 taps deep: 36 depth tiles of 8
    ((3, 7, 13, 8), (70, 7, 1, 1), 1, 0),        # 7 taps: one depth tile, no split possible
    ((2, 5, 9, 11), (6, 5, 3, 2), (2, 1), (0, 2)),
    ((1, 3, 12, 7), (3, 3, 5, 5), (1, 2), 2),    # 75 taps, depth tiles cross filter rows
    ((2, 20, 6, 6), (9, 20, 1, 1), 2, 0),
]


@pytest.mark.parametrize("splits", [2, 3, 8])
@pytest.mark.parametrize("in_shape,f_shape,stride,padding", SPLIT_CASES)
def test_conv_splitk(backend, kernels_run, in_shape, f_shape, stride, padding, splits):
    run_conv(backend, in_shape, f_shape, stride, padding, splits=splits, leads=(1, 2, 3))
    depth_tiles = -(-f_shape[1] * f_shape[2] * f_shape[3] // ops_gemm.TILES_SOFTWARE.bk)
    assert ("gemm_combine" in kernels_run) == (depth_tiles > 1)


@pytest.mark.parametrize("dtype", [pytest.param("float16", marks=pytest.mark.requires("shader-f16")),
                                   pytest.param("float64", marks=pytest.mark.requires("shader-f64"))])
def test_conv_splitk_other_dtypes(backend, dtype):
    run_conv(backend, (2, 12, 7, 9), (5, 12, 3, 3), 1, 1, dtype=dtype, splits=3, leads=(1, 3, 1))


def test_conv_splitk_channel_blocks(backend, monkeypatch, kernels_run):
    """Tiny window limits split the channels (blocks after the first accumulate in the combine),
    images, output channels and output rows; each block split-K."""
    monkeypatch.setattr(backend, "max_window_bytes", lambda: 6000)
    run_conv(backend, (3, 12, 11, 9), (7, 12, 3, 3), (2, 1), (1, 2), leads=(1, 2, 3), splits=3)
    assert kernels_run.count("gemm_combine") == kernels_run.count("conv2d") >= 3


@pytest.mark.parametrize("splits", [1, 3])
def test_conv_splitk_bitwise_reproducible(backend, splits):
    case = ((2, 24, 9, 9), (10, 24, 3, 3), 1, 1)
    first = run_conv(backend, *case, seed=5, splits=splits)
    second = run_conv(backend, *case, seed=5, splits=splits)
    assert first.tobytes() == second.tobytes()


@pytest.mark.parametrize("tiles", [ops_gemm.TILES_LARGE, ops_gemm.TILES_TALL, ops_gemm.TILES_WIDE,
                                   ops_gemm.TILES_MEDIUM, ops_gemm.TILES_MEDIUM_F64,
                                   ops_gemm.TILES_SMALL], ids=str)
@pytest.mark.parametrize("splits", [1, 3])
def test_conv_every_tile_configuration(backend, monkeypatch, tiles, splits):
    """The GPU configurations (other BK and rows-per-fetch steps for the incremental tap decoding),
    with and without split-K, on filters smaller and larger than a depth tile."""
    monkeypatch.setattr(ops_conv, "plan_splitk", lambda *args, **kwargs: (tiles, splits))
    monkeypatch.setattr(ops_conv, "_CONV_PLANS", PlanCache(256))  # (plans kept under other tiles)
    run_conv(backend, (2, 6, 9, 10), (5, 6, 3, 3), 1, 1, leads=(1, 2, 0))
    run_conv(backend, (1, 9, 11, 8), (3, 9, 1, 1), (2, 1), 0)
    run_conv(backend, (1, 2, 8, 7), (4, 2, 5, 4), 1, (2, 3))


@pytest.mark.parametrize("shape", ["128x64x16x8x4", "64x128x16x4x8", "64x64x8x4x4"])
@pytest.mark.parametrize("splits", [None, 1, 3])
def test_conv_tiles_knob(backend, shape, splits):
    """GPUTENSOR_CONV_TILES forces the implicit GEMM's tiles (16-deep K slices of 128-wide tiles,
    8 fetches per operand and invocation, too: 128x128x16 itself needs more than lavapipe's 32
    KiB of workgroup memory), with the split-K count chosen, given or forced by gemm_splitk."""
    from gputensor._backend import config

    with config.override(conv_tiles=tuple(int(v) for v in shape.split("x"))):
        tiles, count = ops_conv.conv_plan(backend, "f32", 300, 70, 2304, splits)
        assert (tiles.bm, tiles.bn, tiles.bk, tiles.tm, tiles.tn) == tuple(int(v) for v in shape.split("x"))
        assert count == (splits or 1) or splits is None
        run_conv(backend, (2, 6, 9, 10), (5, 6, 3, 3), 1, 1, leads=(1, 2, 0), splits=splits)
        run_conv(backend, (1, 9, 11, 8), (3, 9, 1, 1), (2, 1), 0, splits=splits)
        run_conv(backend, (1, 2, 8, 7), (4, 2, 5, 4), 1, (2, 3), splits=splits)
        with config.override(gemm_splitk=4):
            assert ops_conv.conv_plan(backend, "f32", 300, 70, 2304)[1] == 4
            run_conv(backend, (2, 12, 7, 9), (5, 12, 3, 3), 1, 1, leads=(1, 3, 1))


def test_conv_tiles_knob_errors(backend):
    from gputensor._backend import config
    from gputensor._backend.errors import BackendError

    with pytest.raises(ValueError):
        config.KNOBS[[k.name for k in config.KNOBS].index("conv_tiles")].parse("GPUTENSOR_CONV_TILES", "128x128", None)
    for bad in ((128, 128, 8, 6, 8), (256, 256, 16, 8, 8), (128, 128, 64, 8, 8)):
        with config.override(conv_tiles=bad), pytest.raises(BackendError):
            ops_conv.conv_plan(backend, "f32", 300, 70, 2304)


def test_tap_step():
    # depth d of a (C, 3, 3) filter on a 14-wide plane of 196 elements
    assert ops_conv.tap_step(8, 3, 3, 196, 14) == (2 * 14 + 2, 2, 2)
    assert ops_conv.tap_step(9, 3, 3, 196, 14) == (196, 0, 0)
    assert ops_conv.tap_step(2, 1, 1, 196, 14) == (2 * 196, 0, 0)
    assert ops_conv.tap_step(4, 5, 5, 0, 7) == (4, 0, 4)
    assert ops_conv.tap_step(0, 3, 3, 196, 14) == (0, 0, 0)


# ---- planner, output shape ------------------------------------------------------------------
def test_plan_conv_blocks_fits():
    blocks = ops_conv.plan_conv_blocks((2, 3, 8, 8), (4, 3, 3, 3), (2, 4, 6, 6), (1, 1), 10_000)
    assert blocks == {"n": 2, "k": 4, "c": 3, "oh": 6}


def test_plan_conv_blocks_small_limit():
    shapes = ((4, 8, 16, 16), (32, 8, 3, 3), (4, 32, 16, 16))
    for limit in (100, 300, 1000, 5000, 20000):
        blocks = ops_conv.plan_conv_blocks(*shapes, (1, 1), limit)
        extents = ops_conv.conv_extents(*shapes, (1, 1))
        assert all(e.span(blocks) <= limit for e in extents)
    blocks = ops_conv.plan_conv_blocks(*shapes, (1, 1), 3 * 16 * 16 * 8 + 10)
    assert blocks["n"] < 4 and blocks["c"] == 8


def test_plan_conv_blocks_impossible(backend):
    with pytest.raises(BackendError) as exc:
        ops_conv.plan_conv_blocks((1, 1, 8, 100), (1, 1, 3, 3), (1, 1, 6, 98), (1, 1), 250)
    assert exc.value.kind is BackendErrorKind.UNSUPPORTED


@pytest.mark.parametrize(
    "in_shape,f_shape,stride,padding,expected",
    [
        ((1, 3, 32, 32), (8, 3, 3, 3), 1, 1, (1, 8, 32, 32)),
        ((2, 3, 32, 30), (8, 3, 5, 3), (2, 3), (1, 0), (2, 8, 15, 10)),
        ((1, 1, 4, 4), (1, 1, 4, 4), 1, 0, (1, 1, 1, 1)),
        ((1, 1, 7, 7), (1, 1, 2, 2), 3, 0, (1, 1, 2, 2)),
    ],
)
def test_output_shape(in_shape, f_shape, stride, padding, expected):
    assert ops_conv.conv2d_output_shape(in_shape, f_shape, stride, padding) == expected


# ---- errors -----------------------------------------------------------------------------------
@pytest.fixture()
def buffers(backend):
    ptrs = [backend.alloc(4096) for _ in range(3)]
    yield ptrs
    for p in ptrs:
        backend.free(p)


GOOD = ((1, 2, 5, 5), (3, 2, 3, 3), (1, 3, 3, 3), 1, 0)


def _expect(backend, kind, ptrs, in_shape, f_shape, out_shape, stride, padding, **kw):
    before = backend.context.stats["dispatches"]
    with pytest.raises(BackendError) as exc:
        ops_conv.conv2d_forward(backend, ptrs[0], in_shape, ptrs[1], f_shape, ptrs[2], out_shape,
                                stride, padding, **kw)
    assert exc.value.kind is kind, exc.value
    assert backend.context.stats["dispatches"] == before
    return exc.value


@pytest.mark.parametrize(
    "in_shape,f_shape,out_shape,stride,padding",
    [
        ((1, 2, 5, 5), (3, 4, 3, 3), (1, 3, 3, 3), 1, 0),    # channel mismatch
        ((1, 2, 5, 5), (3, 2, 3, 3), (1, 3, 4, 4), 1, 0),    # wrong output spatial shape
        ((1, 2, 5, 5), (3, 2, 3, 3), (1, 2, 3, 3), 1, 0),    # wrong output channels
        ((1, 2, 5, 5), (3, 2, 3, 3), (2, 3, 3, 3), 1, 0),    # wrong output batch
        ((1, 2, 5, 5), (3, 2, 3, 3), (1, 3, 3, 3), 0, 0),    # zero stride
        ((1, 2, 5, 5), (3, 2, 3, 3), (1, 3, 3, 3), (1, -1), 0),  # negative stride
        ((1, 2, 5, 5), (3, 2, 3, 3), (1, 3, 3, 3), 1, -1),   # negative padding
        ((1, 2, 5, 5), (3, 2, 3, 3), (1, 3, 3, 3), 1, (0, -2)),
        ((0, 2, 5, 5), (3, 2, 3, 3), (0, 3, 3, 3), 1, 0),    # empty batch
        ((1, 2, 5, 0), (3, 2, 3, 3), (1, 3, 3, 0), 1, 0),    # empty width
        ((1, 2, 5, 5), (0, 2, 3, 3), (1, 0, 3, 3), 1, 0),    # no filters
        ((1, 2, 2, 2), (3, 2, 3, 3), (1, 3, 0, 0), 1, 0),    # filter larger than the input
        ((1, 2, 5), (3, 2, 3, 3), (1, 3, 3, 3), 1, 0),       # not 4-D
        ((1, 2, 5, 5), (3, 2, 3, 3), (1, 3, 3, 3), (1, 1, 1), 0),  # stride of 3 values
        ((1, 2, 5, 5), (3, 2, 3, 3), (1, 3, 3, 3), 1.5, 0),  # non-integer stride
        ((1, 2, 5.0, 5), (3, 2, 3, 3), (1, 3, 3, 3), 1, 0),  # non-integer dimension
        ((1, 2, -5, 5), (3, 2, 3, 3), (1, 3, 3, 3), 1, 0),   # negative dimension
        ("abcd", (3, 2, 3, 3), (1, 3, 3, 3), 1, 0),
    ],
)
def test_error_shapes(backend, buffers, in_shape, f_shape, out_shape, stride, padding):
    _expect(backend, BackendErrorKind.INVALID_ARGUMENT, buffers, in_shape, f_shape, out_shape,
            stride, padding)


def test_error_pointers(backend, buffers):
    dead = backend.alloc(64)
    backend.free(dead)
    inv = BackendErrorKind.INVALID_ARGUMENT
    for i in range(3):
        ptrs = list(buffers)
        ptrs[i] = dead
        err = _expect(backend, inv, ptrs, *GOOD)
        assert "freed" in str(err)
        ptrs = list(buffers)
        ptrs[i] = buffers[i] + 4096 - 8  # too short for the tensor
        err = _expect(backend, inv, ptrs, *GOOD)
        assert "past the end" in str(err)
        ptrs = list(buffers)
        ptrs[i] = buffers[i] + 2  # misaligned for float32
        _expect(backend, inv, ptrs, *GOOD)
        ptrs = list(buffers)
        ptrs[i] = None
        _expect(backend, inv, ptrs, *GOOD)


def test_error_dtypes(backend, buffers, monkeypatch):
    err = _expect(backend, BackendErrorKind.INVALID_ARGUMENT, buffers, *GOOD, dtype="int8")
    assert "dtype" in str(err)
    monkeypatch.setattr(backend, "supports", lambda feature: feature is None)
    for dtype in ("float16", "float64"):
        _expect(backend, BackendErrorKind.UNSUPPORTED, buffers, *GOOD, dtype=dtype)


def test_backend_method_delegates(backend):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    f = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    px, pf, po = backend.alloc(x.nbytes), backend.alloc(f.nbytes), backend.alloc(3 * 36 * 4)
    backend.copy_htod(px, x)
    backend.copy_htod(pf, f)
    backend.conv2d_forward(px, x.shape, pf, f.shape, po, (1, 3, 6, 6), (1, 1), (1, 1))
    out = np.empty((1, 3, 6, 6), np.float32)
    backend.copy_dtoh(out, po)
    np.testing.assert_allclose(out, reference_conv2d(x, f, 1, 1), **tol("float32", "matmul"))
