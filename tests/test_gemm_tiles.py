"""The gemm tile knobs (``gemm_tiles_f64``, ``gemm_tiles_batched``): every variant the H200 A/B
runs (``benchmarks/tools/gemm_tiles.py``) computes ``a @ b`` as NumPy does, through the public API,
on odd sizes (tails that are no multiple of any tile), transposed and strided operands, batches
and broadcast batches; the kept plans follow the knobs; unusable tiles raise ValueError.

A variant that needs more workgroup memory than the adapter has is skipped, naming the bytes
(lavapipe has 32 KiB: the float64 tiles with 16-deep K slices or 128 x 128 tiles run on GPUs).
"""

from __future__ import annotations

import numpy as np
import pytest

import gputensor as gt
from gputensor import _linear_algebra_functions
from gputensor._backend import config, gemm_tiling, ops_gemm

from _compare import tol

#: The float64 variants of the H200 A/B (BM, BN, BK, TM, TN); the first is the planner's choice.
F64_TILES = [(64, 64, 8, 4, 4), (64, 64, 16, 4, 4), (64, 64, 16, 8, 4), (64, 64, 8, 8, 4),
             (64, 64, 8, 8, 8), (128, 64, 8, 8, 4), (64, 128, 8, 4, 8), (128, 128, 8, 8, 8),
             (32, 64, 16, 4, 4), (64, 128, 8, 8, 8), (128, 64, 8, 8, 8), (64, 64, 8, 4, 8),
             (32, 128, 8, 4, 8), (128, 32, 8, 8, 4), (64, 64, 16, 4, 8)]
#: The float64 split-K variants of the H200 A/B: (tiles, splits).
F64_SPLITS = [((64, 128, 8, 4, 8), 2), ((64, 128, 8, 4, 8), 4), ((128, 128, 8, 8, 8), 2),
              ((128, 128, 8, 8, 8), 4), ((64, 128, 8, 8, 8), 2), ((64, 64, 8, 8, 8), 2)]
#: The batched float32 variants.
BATCHED_TILES = [(128, 128, 8, 8, 8), (64, 64, 16, 4, 4), (64, 64, 8, 4, 4), (128, 64, 8, 8, 4),
                 (64, 128, 8, 4, 8), (128, 128, 16, 8, 8), (64, 64, 16, 8, 4), (64, 64, 8, 8, 8)]


@pytest.fixture()
def plans(backend, monkeypatch):
    """The (tiles, splits) of every gemm planned while the test runs (kept plans forgotten first,
    so that each product is planned, not replayed)."""
    ops_gemm._GEMM_PLANS.of(backend).clear()
    _linear_algebra_functions._MATMUL_PLANS.of(backend).clear()
    seen: list[tuple[ops_gemm.GemmTiles, int]] = []
    original = ops_gemm.plan_splitk

    def spy(*args, **kwargs):
        plan = original(*args, **kwargs)
        seen.append(plan)
        return plan

    monkeypatch.setattr(ops_gemm, "plan_splitk", spy)
    yield seen
    ops_gemm._GEMM_PLANS.of(backend).clear()
    _linear_algebra_functions._MATMUL_PLANS.of(backend).clear()


def _fit_or_skip(backend, shape: tuple[int, ...], itemsize: int) -> ops_gemm.GemmTiles:
    tiles = ops_gemm.GemmTiles(*shape)
    tiles.check()
    limit = int(backend.context.limits.get("max-compute-workgroup-storage-size", 16384))
    need = tiles.workgroup_bytes(itemsize)
    if need > limit:
        pytest.skip(f"tiles {shape} need {need} bytes of workgroup memory; the adapter has {limit}")
    return tiles


#: Products ``f(arrays)`` of the same expression on NumPy and on gputensor arrays: odd sizes,
#: transposed views, steps in both dimensions (the general-stride kernel), batches, broadcast
#: batches and transposed batches.
PRODUCTS = [
    lambda m: (m["a"], m["b"]),
    lambda m: (m["at"].T, m["bt"].T),
    lambda m: (m["big"][::2, 1::3], m["big"][3:36, ::2]),
    lambda m: (m["ba"], m["bb"]),
    lambda m: (m["ba"][:1], m["bb"]),
    lambda m: (m["ba"], m["bb"][0]),
    lambda m: (m["bat"].mT, m["bbt"].mT),
]


def _check_all(rng, dtype, family):
    arrays = {"a": (67, 45), "b": (45, 133), "at": (45, 67), "bt": (133, 45), "big": (140, 100),
              "ba": (3, 37, 29), "bb": (3, 29, 71), "bat": (3, 29, 41), "bbt": (3, 53, 29)}
    for scale in (1.0, -2.0):  # the second round replays the kept plans on new values
        host = {k: (scale * rng.standard_normal(v)).astype(dtype) for k, v in arrays.items()}
        dev = {k: gt.asarray(v) for k, v in host.items()}
        for product in PRODUCTS:
            x1, x2 = product(host)
            y1, y2 = product(dev)
            want = np.matmul(x1.astype(np.float64), x2.astype(np.float64))
            np.testing.assert_allclose(gt.asnumpy(y1 @ y2), want.astype(dtype), **tol(dtype, family))


@pytest.mark.requires("shader-f64")
@pytest.mark.parametrize("shape", F64_TILES, ids=lambda s: "x".join(map(str, s)))
def test_f64_tiles_match_numpy(backend, plans, shape):
    tiles = _fit_or_skip(backend, shape, 8)
    rng = np.random.default_rng(1)
    with config.override(gemm_tiles_f64=shape):
        _check_all(rng, np.float64, "reduction")
    assert plans and all(t == tiles and s == 1 for t, s in plans), plans


@pytest.mark.parametrize("shape", BATCHED_TILES, ids=lambda s: "x".join(map(str, s)))
def test_batched_tiles_match_numpy(backend, plans, shape):
    tiles = _fit_or_skip(backend, shape, 4)
    rng = np.random.default_rng(2)
    with config.override(gemm_tiles_batched=shape):
        _check_all(rng, np.float32, "matmul")
    batched = [t for t, _ in plans if t == tiles]
    assert batched, plans  # the batches took the knob's tiles
    # single products keep the planner's tiles
    assert all(t == tiles or t in (ops_gemm.TILES_SOFTWARE, ops_gemm.TILES_MEDIUM, ops_gemm.TILES_LARGE,
                                    ops_gemm.TILES_TALL, ops_gemm.TILES_WIDE, ops_gemm.TILES_MEDIUM_F64)
               for t, _ in plans)


@pytest.mark.requires("shader-f64")
def test_f64_tiles_with_forced_splits(backend, plans):
    """A tile knob with ``GPUTENSOR_GEMM_SPLITK``: the knob's tiles, split, combined exactly."""
    shape = (32, 64, 16, 4, 4)
    tiles = _fit_or_skip(backend, shape, 8)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((70, 300))
    b = rng.standard_normal((300, 90))
    with config.override(gemm_tiles_f64=shape, gemm_splitk=3):
        got = gt.asnumpy(gt.asarray(a) @ gt.asarray(b))
    np.testing.assert_allclose(got, a @ b, **tol("float64", "reduction"))
    assert (tiles, 3) in plans, plans


@pytest.mark.requires("shader-f64")
@pytest.mark.parametrize("pairs", [True, False], ids=["pairs", "quads"])
@pytest.mark.parametrize("shape, splits", F64_SPLITS, ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_f64_split_variants_match_numpy(backend, plans, shape, splits, pairs):
    """The split-K variants of the H200 A/B (tile knob + ``GPUTENSOR_GEMM_SPLITK``), both staging
    layouts: a product with tails in every dimension and a batch, kept plans replayed on new
    values (the scratch of partials allocated per call)."""
    tiles = _fit_or_skip(backend, shape, 8)
    rng = np.random.default_rng(6)
    with config.override(gemm_tiles_f64=shape, gemm_splitk=splits, gemm_f64_pairs=pairs):
        for scale in (1.0, -3.0):
            a = scale * rng.standard_normal((2, 70, 301))
            b = rng.standard_normal((2, 301, 131))
            got = gt.asnumpy(gt.asarray(a) @ gt.asarray(b))
            np.testing.assert_allclose(got, a @ b, **tol("float64", "reduction"))
            got = gt.asnumpy(gt.asarray(a[0]) @ gt.asarray(b[1]))
            np.testing.assert_allclose(got, a[0] @ b[1], **tol("float64", "reduction"))
    assert plans and all(p == (tiles, splits) for p in plans), plans


def test_batched_knob_leaves_single_products(backend, plans):
    """``gemm_tiles_batched`` changes batches only; a single float32 product keeps its tiles."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((50, 40)).astype(np.float32)
    b = rng.standard_normal((40, 30)).astype(np.float32)
    gt.asnumpy(gt.asarray(a) @ gt.asarray(b))
    default = list(plans)
    plans.clear()
    ops_gemm._GEMM_PLANS.of(backend).clear()
    _linear_algebra_functions._MATMUL_PLANS.of(backend).clear()
    with config.override(gemm_tiles_batched=(64, 64, 8, 4, 4)):
        got = gt.asnumpy(gt.asarray(a) @ gt.asarray(b))
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, **tol("float32", "matmul"))
    assert plans == default


def test_kept_plans_follow_the_knob(backend, plans):
    """A plan kept under one tile setting is not replayed under another: each is planned anew."""
    rng = np.random.default_rng(5)
    x1 = gt.asarray(rng.standard_normal((4, 33, 20)).astype(np.float32))
    x2 = gt.asarray(rng.standard_normal((4, 20, 47)).astype(np.float32))
    want = np.matmul(gt.asnumpy(x1).astype(np.float64), gt.asnumpy(x2))
    for shape in [(64, 64, 8, 4, 4), (64, 128, 8, 4, 8)]:
        plans.clear()
        with config.override(gemm_tiles_batched=shape):
            assert ops_gemm.tile_knob_values()[1] == shape
            for _ in range(2):
                np.testing.assert_allclose(gt.asnumpy(x1 @ x2), want, **tol("float32", "matmul"))
        assert plans and all(t == ops_gemm.GemmTiles(*shape) for t, _ in plans), plans
    assert ops_gemm.tile_knob_values() == (None, None, True)


@pytest.mark.parametrize("knob, shape, match", [
    ("gemm_tiles_batched", (64, 64, 8, 2, 2), "cannot run"),
    ("gemm_tiles_batched", (64, 64, 64, 4, 4), "cannot run"),
    ("gemm_tiles_batched", (256, 256, 32, 8, 8), "cannot run|workgroup memory"),
    ("gemm_tiles_batched", (128, 128, 32, 8, 4), "workgroup memory"),
])
def test_unusable_tiles_raise(backend, knob, shape, match):
    x = gt.asarray(np.ones((2, 8, 8), np.float32))
    with config.override(**{knob: shape}):
        with pytest.raises(ValueError, match=match):
            x @ x


def test_knob_environment_parse(monkeypatch):
    monkeypatch.setenv("GPUTENSOR_GEMM_TILES_F64", "128x64x8x8x4")
    assert config.environment_value("gemm_tiles_f64") == (128, 64, 8, 8, 4)
    monkeypatch.setenv("GPUTENSOR_GEMM_TILES_BATCHED", "64x64")
    with pytest.raises(ValueError, match="GPUTENSOR_GEMM_TILES_BATCHED"):
        config.environment_value("gemm_tiles_batched")
    monkeypatch.delenv("GPUTENSOR_GEMM_TILES_BATCHED")
    assert config.environment_value("gemm_tiles_batched") is None


def test_ab_tool_runs_each_variant_on_its_cases(capsys):
    """``benchmarks.tools.gemm_tiles`` (the H200 A/B): each variant on the cases its knob changes,
    checked against NumPy, with the tiles the planner took."""
    from benchmarks.tools import gemm_tiles

    assert gemm_tiles.main(["--small", "--only", "f64.96,f32.batched*", "--target", "0.001",
                            "--ab", "gemm_tiles_f64=64x64x8x8x4,gemm_tiles_batched=64x64x8x4x4"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith(("f64.", "f32."))]
    rows = [r for r in rows if r[1] != "torch"]  # (the reference row where torch is installed)
    got = {(r[0], r[1]) for r in rows}
    assert got == {("f64.96", "(knobs"), ("f64.96", "gemm_tiles_f64=64x64x8x8x4"),
                   ("f32.batched8x40", "(knobs"), ("f32.batched8x40", "gemm_tiles_batched=64x64x8x4x4")}, out
    assert "error" not in out
    tiles = {(r[0], r[1]): r[2] for r in rows}
    assert tiles["f64.96", "gemm_tiles_f64=64x64x8x8x4"] == "64x64x8x8x4/pairs"
    assert tiles["f32.batched8x40", "gemm_tiles_batched=64x64x8x4x4"] == "64x64x8x4x4"
    errors = [float(r[-1]) for r in rows]
    assert max(errors) < 1e-5, out


def test_gpu_defaults_where_no_knob_is_set(monkeypatch):
    """``TILES_GPU_BATCHED``: taken on GPUs where it fits and the knob is unset; never on software
    adapters; the knob wins. float64 takes no knob default: the planner's ``F64_GPU_PLANS``."""
    from types import SimpleNamespace

    gpu = SimpleNamespace(is_software=False, limits={"max-compute-workgroup-storage-size": 49152})
    small = SimpleNamespace(is_software=False, limits={"max-compute-workgroup-storage-size": 8192})
    cpu = SimpleNamespace(is_software=True, limits={"max-compute-workgroup-storage-size": 49152})
    batched = ops_gemm.GemmTiles(64, 64, 8, 4, 4)
    monkeypatch.setattr(gemm_tiling, "TILES_GPU_BATCHED", batched)
    assert ops_gemm.knob_tiles(gpu, "f32", 8, 128, 128) == batched
    assert ops_gemm.knob_tiles(gpu, "f32", 8, 1024, 128) is None  # not small matrices
    assert ops_gemm.knob_tiles(gpu, "f32", 1) is None
    assert ops_gemm.knob_tiles(small, "f32", 8, 128, 128) is None  # 17408 bytes do not fit
    assert ops_gemm.knob_tiles(cpu, "f32", 8, 128, 128) is None
    assert ops_gemm.knob_tiles(gpu, "f64", 1) is None
    with config.override(gemm_tiles_f64=(128, 64, 8, 8, 4)):
        assert ops_gemm.knob_tiles(gpu, "f64", 1) == ops_gemm.GemmTiles(128, 64, 8, 8, 4)
        assert ops_gemm.knob_tiles(cpu, "f64", 1) == ops_gemm.GemmTiles(128, 64, 8, 8, 4)


def test_f64_gpu_plans_by_size(monkeypatch):
    """``f64_gpu_plan``: the first row of ``F64_GPU_PLANS`` a problem reaches (output elements and
    depth) whose tiles fit, its splits kept to slices of ``F64_SPLIT_MIN_DEPTH``; ``gemm_plan``
    takes it for float64 on GPUs (forced splits win), never on software adapters."""
    from types import SimpleNamespace

    gpu = SimpleNamespace(is_software=False, limits={"max-compute-workgroup-storage-size": 49152})
    small = SimpleNamespace(is_software=False, limits={"max-compute-workgroup-storage-size": 32768})
    cpu = SimpleNamespace(is_software=True, limits={"max-compute-workgroup-storage-size": 49152})
    big, mid, low = (ops_gemm.GemmTiles(128, 128, 8, 8, 8), ops_gemm.GemmTiles(64, 128, 8, 4, 8),
                     ops_gemm.GemmTiles(64, 64, 8, 8, 8))
    monkeypatch.setattr(gemm_tiling, "F64_GPU_PLANS", ((2048 * 2048, 0, big, 1), (0, 1024, mid, 4),
                                                   (0, 0, low, 1)))
    assert ops_gemm.f64_gpu_plan(gpu, 2048, 2048, 64) == (big, 1)
    assert ops_gemm.f64_gpu_plan(gpu, 1024, 1024, 1024) == (mid, 4)
    assert ops_gemm.f64_gpu_plan(gpu, 1024, 1024, 600) == (low, 1)
    assert ops_gemm.f64_gpu_plan(gpu, 100, 100, 1100) == (mid, 4)
    monkeypatch.setattr(gemm_tiling, "F64_SPLIT_MIN_DEPTH", 512)
    assert ops_gemm.f64_gpu_plan(gpu, 1024, 1024, 1100) == (mid, 2)
    assert ops_gemm.f64_gpu_plan(small, 4096, 4096, 64) == (low, 1)  # 33792 bytes do not fit
    assert ops_gemm.gemm_plan(gpu, "f64", 1024, 1024, 2048) == (mid, 4)
    assert ops_gemm.gemm_plan(gpu, "f64", 1024, 1024, 2048, splits=1) == (mid, 1)
    assert ops_gemm.gemm_plan(cpu, "f64", 1024, 1024, 2048)[1] == 1
    assert ops_gemm.gemm_plan(cpu, "f64", 1024, 1024, 2048)[0] != mid


@pytest.mark.requires("shader-f64")
@pytest.mark.parametrize("pairs", [True, False])
def test_f64_staging_layouts_match_numpy(backend, plans, monkeypatch, pairs):
    """float64 gemms stage their tiles as vec2 planes (``gemm_f64_pairs``, the default) or vec4
    quads; both give NumPy's products; float32 always stages quads."""
    staged: list[tuple[str, str]] = []
    ctx = backend.context
    original = ctx.pipeline

    def spy(name, *args, **kwargs):
        defines = args[1] if len(args) > 1 else kwargs.get("defines")
        if defines and "STAGING" in defines:
            staged.append((defines["ACC"], "pairs" if "vec2<acc_t>" in defines["STAGING"] else "quads"))
        return original(name, *args, **kwargs)

    monkeypatch.setattr(ctx, "pipeline", spy)
    rng = np.random.default_rng(6)
    with config.override(gemm_f64_pairs=pairs):
        assert ops_gemm.tile_knob_values()[2] is pairs
        _check_all(rng, np.float64, "reduction")
        a = rng.standard_normal((20, 30)).astype(np.float32)
        np.testing.assert_allclose(gt.asnumpy(gt.asarray(a) @ gt.asarray(a.T)), a.astype(np.float64) @ a.T,
                                   **tol("float32", "matmul"))
    assert ("f64", "pairs" if pairs else "quads") in staged
    assert ("f64", "quads" if pairs else "pairs") not in staged
    assert ("f32", "quads") in staged and ("f32", "pairs") not in staged


def test_fma_peak_tool_runs(capsys):
    """``benchmarks.tools.fma_peak`` (the FMA ceiling of the H200 A/B): its WGSL kernels compile
    and run in both dtypes, one row each, no errors."""
    from benchmarks.tools import fma_peak

    assert fma_peak.main(["--small", "--iters", "4", "--groups", "2"]) == 0
    out = capsys.readouterr().out
    rows = {tuple(line.split()[:2]) for line in out.splitlines()[1:] if line.strip()}
    want = {(path, dtype) for path in ("wgsl", "wgsl-lds", "wgsl-lds48") for dtype in ("float64", "float32")}
    assert want <= rows, out
    assert "error" not in out, out
