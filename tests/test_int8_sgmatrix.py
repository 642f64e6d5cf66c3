"""The 8-bit integer matmul on subgroup matrices (``_wgsl/matmul_int8_sgmatrix.wgsl``).

Three groups:

* the choice (``int8_sgmatrix.plan``, ``choose_config``, ``parse_tile``) and the device request,
  on stand-in contexts and adapters: everywhere;
* the kernel's own text with the subgroup-matrix builtins emulated (``_sgmatrix_emulation``):
  tiling, byte staging, edges, layouts, batches, k blocks and both result paths, checked
  against NumPy on any adapter;
* the real kernel where the device has ``chromium-experimental-subgroup-matrix`` (Dawn on a GPU
  that offers it): the same checks, and that the kernel ran.

``gputensor.nn.int_mm``'s contract (int32 results, errors) is checked here too.
"""

from __future__ import annotations

import numpy as np
import pytest
from _sgmatrix_emulation import emulating
from test_backend_matmul_int import run

import gputensor as gt
from gputensor._backend import BackendError, adapters, config, get_backend, implementation, int8_sgmatrix

FEATURE = int8_sgmatrix.FEATURE
I8 = {"component_type": "i8", "result_component_type": "i32", "m": 16, "n": 16, "k": 32,
      "min_subgroup_size": 32, "max_subgroup_size": 32}
U8 = dict(I8, component_type="u8", result_component_type="u32")


class _Ctx:
    """A stand-in context with the facts ``plan`` reads."""

    def __init__(self, features=(FEATURE,), configs=(I8,), storage=32768, invocations=1024, subgroup=32):
        self.features = frozenset(features)
        self.subgroup_matrix_configs = tuple(configs)
        self.limits = {"max-compute-workgroup-storage-size": storage,
                       "max-compute-invocations-per-workgroup": invocations,
                       "max-compute-workgroup-size-x": invocations}
        self.adapter_info = {"subgroup_max_size": subgroup}


ROW = (0, 64, 1)
COL = (0, 1, 64)


@pytest.fixture(scope="module")
def backend():
    return get_backend()


# ---- the choice ------------------------------------------------------------------------------
def test_plan_takes_8_bit_operands_with_their_32_bit_result_only():
    ctx = _Ctx(configs=(I8, U8))
    assert int8_sgmatrix.plan(ctx, "int8", "int8", "int32", ROW, ROW, ROW, 64) is not None
    assert int8_sgmatrix.plan(ctx, "uint8", "uint8", "uint32", ROW, ROW, ROW, 64) is not None
    for dtypes in (("int8", "uint8", "int32"), ("int8", "int8", "int64"), ("int16", "int16", "int32"),
                   ("uint8", "uint8", "int32"), ("int8", "int8", "uint32")):
        assert int8_sgmatrix.plan(ctx, *dtypes, ROW, ROW, ROW, 64) is None, dtypes


def test_plan_needs_feature_configuration_knob_and_limits():
    args = ("int8", "int8", "int32", ROW, ROW, ROW, 64)
    assert int8_sgmatrix.plan(_Ctx(features=()), *args) is None
    assert int8_sgmatrix.plan(_Ctx(configs=(U8,)), *args) is None  # no i8 -> i32 configuration
    assert int8_sgmatrix.plan(_Ctx(storage=8192), *args) is None   # tiles beyond workgroup memory
    assert int8_sgmatrix.plan(_Ctx(invocations=64), *args) is None  # 4 subgroups of 32 > 64
    with config.override(int8_sgmatrix=False):
        assert int8_sgmatrix.plan(_Ctx(), *args) is None
    with config.override(int8_sgmatrix_tile="1,1,1,1,32"):
        p = int8_sgmatrix.plan(_Ctx(storage=8192, invocations=64), *args)
    assert p is not None and (p.bm, p.bn) == (16, 16) and p.defines["NT"] == 32


def test_plan_needs_c_to_span_one_result_matrix():
    """Dawn rejects a C binding smaller than one 16 x 16 result matrix of words (1,024 bytes):
    a smaller C takes the generic kernel."""
    args = ("int8", "int8", "int32", ROW, ROW, ROW, 64)
    assert int8_sgmatrix.plan(_Ctx(), *args, 1020) is None
    assert int8_sgmatrix.plan(_Ctx(), *args, 1024) is not None
    assert int8_sgmatrix.plan(_Ctx(), *args) is not None


def test_plan_tile_and_layouts():
    ctx = _Ctx(subgroup=32)
    p = int8_sgmatrix.plan(ctx, "int8", "int8", "int32", ROW, ROW, ROW, 64)
    d = p.defines
    assert (p.bm, p.bn) == (64, 128)  # the default tile: 2 x 2 subgroups of 2 x 4 matrices
    assert (d["NT"], d["ELEM"], d["ACC"], d["STAGE"]) == (128, "i8", "i32", "i32")
    assert (d["A_MAJOR"], d["B_MAJOR"], d["C_DIRECT"]) == ("row_major", "row_major", "true")
    assert (d["A_ROWS"], d["A_COLS"], d["B_ROWS"], d["B_COLS"]) == (64, 64, 64, 128)
    # transposed operands are staged the other way; a C with a column stride is spilled
    d = int8_sgmatrix.plan(ctx, "int8", "int8", "int32", COL, COL, COL, 64).defines
    assert (d["A_MAJOR"], d["B_MAJOR"], d["C_DIRECT"]) == ("col_major", "col_major", "false")
    assert (d["A_ROWS"], d["A_COLS"], d["B_ROWS"], d["B_COLS"]) == (64, 64, 128, 64)
    # a row stride below n (rows overlapping another's columns) or negative: spilled
    assert int8_sgmatrix.plan(ctx, "int8", "int8", "int32", ROW, ROW, (0, -64, 1), 64).defines["C_DIRECT"] == "false"
    assert int8_sgmatrix.plan(ctx, "int8", "int8", "int32", ROW, ROW, (0, 32, 1), 64).defines["C_DIRECT"] == "false"


def test_subgroup_size_sizes_the_workgroup():
    for info, nt in (({"subgroup_max_size": 64}, 256), ({"stackgroup_max_size": 16}, 64), ({}, 128)):
        ctx = _Ctx()
        ctx.adapter_info = info
        assert int8_sgmatrix.plan(ctx, "int8", "int8", "int32", ROW, ROW, ROW, 64).defines["NT"] == nt


def test_choose_config_prefers_16x16x32():
    other = dict(I8, m=8, n=8, k=32)
    narrow = dict(I8, n=8)
    assert int8_sgmatrix.choose_config((other, narrow, I8), "i8", "i32") is I8
    assert int8_sgmatrix.choose_config((other, narrow), "i8", "i32") is narrow
    assert int8_sgmatrix.choose_config((dict(I8, k=30),), "i8", "i32") is None
    assert int8_sgmatrix.choose_config((), "i8", "i32") is None


@pytest.mark.parametrize("text", ["", "2,2,2,4", "2,2,3,4,64", "2,2,2,3,64", "2,2,2,4,48", "0,2,2,4,64", "a,b,c,d,e",
                                  "2,2,2,4,64,3", "2,2,2,4,64,2,1"])
def test_parse_tile_rejects(text):
    with pytest.raises(BackendError, match="GPUTENSOR_INT8_SGMATRIX_TILE"):
        int8_sgmatrix.parse_tile(text)


def test_parse_tile():
    assert int8_sgmatrix.parse_tile("4,2,1,2,128") == int8_sgmatrix.Tile(4, 2, 1, 2, 128, 2)
    assert int8_sgmatrix.parse_tile("4,2,1,2,128,1") == int8_sgmatrix.Tile(4, 2, 1, 2, 128, 1)


class _Adapter:
    def __init__(self, features):
        self.features = set(features)
        self.limits = {}
        self.asked = None

    def request_device_async(self, **kwargs):
        self.asked = kwargs
        return "promise"


def _requested(adapter) -> list[str]:
    steps = adapters.request_device_steps(adapter)
    assert next(steps) == "promise"
    return adapter.asked["required_features"]


def test_device_requests_subgroup_matrices_where_offered(monkeypatch):
    monkeypatch.setattr(implementation, "SUBGROUP_MATRIX_NEEDS", ("subgroups",))
    monkeypatch.setattr(implementation, "SKIPPED_FEATURES", frozenset({"subgroup"}))
    monkeypatch.setattr(implementation, "FEATURES", {"subgroup": "subgroups"})
    asked = _requested(_Adapter({"shader-f16", "subgroups", FEATURE}))
    assert FEATURE in asked and "subgroups" in asked and "shader-f16" in asked
    asked = _requested(_Adapter({"shader-f16", "subgroups"}))
    assert FEATURE not in asked and "subgroups" not in asked  # (subgroups alone: skipped on Dawn)


def test_context_features_name_subgroup_matrices_only_when_granted(backend):
    ctx = backend.context
    granted = {str(f) for f in ctx.device.features}
    assert (FEATURE in ctx.features) == (FEATURE in granted)
    assert all(f not in ctx.features for f in implementation.SKIPPED_FEATURES)
    if FEATURE not in ctx.features:
        assert ctx.subgroup_matrix_configs == ()


# ---- the kernel, builtins emulated -----------------------------------------------------------
_SHAPES = [(1, 1, 1), (17, 33, 65), (64, 128, 64), (70, 130, 97), (5, 3, 200)]


@pytest.mark.parametrize("m, n, k", _SHAPES)
def test_emulated_matches_numpy(backend, m, n, k):
    rng = np.random.default_rng(m * n + k)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-128, 128, (k, n), dtype=np.int8)
    ref = a.astype(np.int64) @ b.astype(np.int64)
    ga, gb = gt.asarray(a), gt.asarray(b)
    with emulating(backend):
        got32 = gt.nn.int_mm(ga, gb)
        got8 = ga @ gb
        assert got32.dtype == gt.int32 and got8.dtype == gt.int8
        np.testing.assert_array_equal(gt.asnumpy(got32), ref.astype(np.int32))
        np.testing.assert_array_equal(gt.asnumpy(got8), ref.astype(np.int8))
    if m * n * 4 >= 1024:  # (a smaller C takes the generic kernel: Dawn binds one result matrix at least)
        assert int8_sgmatrix.KERNEL in {i.name for i in backend.context._pipeline_info.values()}


@pytest.mark.parametrize("tile", ["1,1,1,1,32,1", "2,1,2,2,64,2", "1,2,1,4,96,2", "2,2,2,4,64,1"])
@pytest.mark.parametrize("kinds", [("row", "row"), ("col", "col"), ("negative", "broadcast"), ("padded", "col")])
def test_emulated_layouts_and_tiles(backend, tile, kinds):
    """Strided operands inside sentinel-filled allocations (test_backend_matmul_int.run): every
    layout, C with a row stride (spilled) and accumulation into C."""
    with emulating(backend, tile=tile):
        run(backend, 37, 41, 70, 2, "int8", "int8", "int32", kinds, seed=3)
        run(backend, 19, 20, 33, 1, "int8", "int8", "int32", kinds, seed=4, accumulate=True)


def test_emulated_uint8_and_k_blocks(backend, monkeypatch):
    monkeypatch.setattr(backend, "max_window_bytes", lambda: 1024)  # k (and m, n) split in blocks
    with emulating(backend, component="u8", result="u32", tile="1,1,1,2,32,2"):
        run(backend, 33, 21, 150, 2, "uint8", "uint8", "uint32", ("row", "col"), seed=5)


def test_emulated_workgroup_larger_than_its_subgroups(backend):
    """Subgroups past the grid's (a device running smaller subgroups than its maximum) stage
    tiles and compute nothing."""
    ctx = backend.context
    saved = ctx.adapter_info
    ctx.adapter_info = dict(saved, subgroup_max_size=64)
    try:
        with emulating(backend, subgroup=16, tile="1,2,1,2,32"):
            run(backend, 40, 23, 66, 1, "int8", "int8", "int32", ("row", "row"), seed=6)
    finally:
        ctx.adapter_info = saved


def test_kernel_the_compiler_rejects_falls_back_to_the_generic_kernel(backend):
    ctx = backend.context
    rng = np.random.default_rng(11)
    a = rng.integers(-128, 128, (9, 40), dtype=np.int8)
    b = rng.integers(-128, 128, (40, 30), dtype=np.int8)
    with emulating(backend):
        real = ctx.pipeline

        def rejecting(name, n_storage, defines=None, *, source=None):
            if name == int8_sgmatrix.KERNEL:
                return real(name, n_storage, source="this is not WGSL")
            return real(name, n_storage, defines, source=source)

        ctx.pipeline = rejecting
        try:
            with pytest.warns(RuntimeWarning, match="generic integer kernel"):
                got = gt.asnumpy(gt.nn.int_mm(gt.asarray(a), gt.asarray(b)))
            assert int8_sgmatrix.plan(ctx, "int8", "int8", "int32", ROW, ROW, ROW, 64) is None
        finally:
            int8_sgmatrix._REFUSED.discard(ctx)
    np.testing.assert_array_equal(got, a.astype(np.int64) @ b.astype(np.int64))


# ---- the kernel on subgroup matrices ---------------------------------------------------------
@pytest.mark.requires(FEATURE)
@pytest.mark.parametrize("m, n, k", _SHAPES + [(256, 256, 256)])
def test_subgroup_matrix_matches_numpy(backend, m, n, k):
    rng = np.random.default_rng(m + n * k)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-128, 128, (k, n), dtype=np.int8)
    ref = a.astype(np.int64) @ b.astype(np.int64)
    np.testing.assert_array_equal(gt.asnumpy(gt.nn.int_mm(gt.asarray(a), gt.asarray(b))), ref.astype(np.int32))
    np.testing.assert_array_equal(gt.asnumpy(gt.asarray(a) @ gt.asarray(b)), ref.astype(np.int8))
    assert int8_sgmatrix.KERNEL in {i.name for i in backend.context._pipeline_info.values()}


@pytest.mark.requires(FEATURE)
@pytest.mark.parametrize("tile", ["2,2,2,4,64,2", "2,2,2,4,64,1", "1,1,1,1,32,1", "2,1,2,2,64,2"])
@pytest.mark.parametrize("kinds", [("row", "row"), ("col", "col"), ("negative", "broadcast"), ("padded", "col")])
def test_subgroup_matrix_layouts_and_tiles(backend, tile, kinds):
    with config.override(int8_sgmatrix_tile=tile):
        run(backend, 37, 41, 70, 2, "int8", "int8", "int32", kinds, seed=3)
        run(backend, 19, 20, 33, 1, "int8", "int8", "int32", kinds, seed=4, accumulate=True)
        run(backend, 130, 260, 96, 1, "int8", "int8", "int32", kinds, seed=5)


@pytest.mark.requires(FEATURE)
def test_subgroup_matrix_uint8_and_k_blocks(backend, monkeypatch):
    monkeypatch.setattr(backend, "max_window_bytes", lambda: 4096)
    run(backend, 70, 90, 300, 2, "uint8", "uint8", "uint32", ("row", "col"), seed=7)
    run(backend, 70, 90, 300, 2, "int8", "int8", "int32", ("col", "row"), seed=8)


# ---- int_mm ----------------------------------------------------------------------------------
def test_int_mm_batched_views():
    rng = np.random.default_rng(9)
    a = rng.integers(-128, 128, (2, 1, 9, 13), dtype=np.int8)
    b = rng.integers(-128, 128, (3, 11, 13), dtype=np.int8)  # used transposed
    got = gt.nn.int_mm(gt.asarray(a), gt.matrix_transpose(gt.asarray(b)))
    assert got.dtype == gt.int32 and got.shape == (2, 3, 9, 11)
    np.testing.assert_array_equal(gt.asnumpy(got), a.astype(np.int64) @ np.swapaxes(b, -1, -2).astype(np.int64))
    u = rng.integers(0, 256, (4, 5), dtype=np.uint8)
    got = gt.nn.int_mm(gt.asarray(u), gt.asarray(u.T.copy()))
    assert got.dtype == gt.uint32
    np.testing.assert_array_equal(gt.asnumpy(got), u.astype(np.int64) @ u.T.astype(np.int64))


def test_int_mm_errors():
    i8 = gt.asarray(np.ones((3, 3), np.int8))
    with pytest.raises(TypeError, match="int8"):
        gt.nn.int_mm(i8, gt.asarray(np.ones((3, 3), np.uint8)))
    with pytest.raises(TypeError, match="int8"):
        gt.nn.int_mm(gt.asarray(np.ones((3, 3), np.int16)), gt.asarray(np.ones((3, 3), np.int16)))
    with pytest.raises(TypeError, match="gputensor array"):
        gt.nn.int_mm(np.ones((3, 3), np.int8), i8)
    with pytest.raises(ValueError, match="2 dimensions"):
        gt.nn.int_mm(gt.asarray(np.ones(3, np.int8)), i8)
    with pytest.raises(ValueError, match="contraction"):
        gt.nn.int_mm(i8, gt.asarray(np.ones((4, 3), np.int8)))


def test_probe_runs(capsys):
    """The H200 probe (benchmarks.tools.int8_matmul) runs on any adapter: device facts, checks
    and timings (of the generic kernel where the device lacks subgroup matrices)."""
    from benchmarks.tools import int8_matmul

    assert int8_matmul.main(["--quick", "--check-shapes", "3x5x7", "--time-shapes", "8x8x8", "--reps", "2"]) == 0
    out = capsys.readouterr().out
    assert "== device" in out and "generic 3x5x7 plain: OK" in out and "8x8x8 generic:" in out


def test_blocks_smaller_than_a_result_matrix_take_the_generic_kernel(backend, monkeypatch):
    """With a binding limit that splits C into blocks of under 1,024 bytes, the subgroup-matrix
    plan is asked with the smallest block's span and declines (Dawn rejects such a C binding);
    the split results stay exact."""
    seen: list[tuple[int, bool]] = []
    real = int8_sgmatrix.plan

    def recording(*args, **kwargs):
        got = real(*args, **kwargs)
        seen.append((args[8] if len(args) > 8 else kwargs.get("c_span_bytes"), got is not None))
        return got

    monkeypatch.setattr(int8_sgmatrix, "plan", recording)
    monkeypatch.setattr(backend, "max_window_bytes", lambda: 700)
    with emulating(backend):
        run(backend, 33, 21, 29, 3, "int8", "int8", "int32", ("row", "negative"), seed=5)
    assert seen and all(span is not None for span, _ in seen)
    assert all(span >= 1024 for span, used in seen if used)
    assert any(span < 1024 and not used for span, used in seen)
