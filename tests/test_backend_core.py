"""The backend core: WgpuContext (adapter choice, device, buffers, readback, dispatch, batching)
and WebGpuBackend's lifecycle and memory (alloc/free/copies/pointers), checked byte for byte."""

from __future__ import annotations

import asyncio
import gc
import re
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace

import numpy as np
import pytest

import gputensor._backend as backend_pkg
from gputensor._backend import (
    BackendError,
    BackendErrorKind,
    BackendTranspose,
    BinaryOp,
    ComputeBackend,
    ReduceOp,
    UnaryOp,
    WebGpuBackend,
    WgpuContext,
    get_backend,
)
from gputensor._backend import config
from gputensor._backend import implementation
from gputensor._backend import submit_policy
from gputensor._backend import host_memory as host_memory_mod
from gputensor._backend import transfers as transfers_mod
from gputensor._backend.context import WANTED_FEATURES, WANTED_LIMITS, adapter_sort_key, choose_adapter

INVALID = BackendErrorKind.INVALID_ARGUMENT


@pytest.fixture(scope="module")
def backend() -> WebGpuBackend:
    return get_backend()


@pytest.fixture(scope="module")
def ctx(backend: WebGpuBackend) -> WgpuContext:
    return backend.context


@pytest.fixture()
def extra_devices() -> Iterator[None]:
    """For a test that makes contexts (devices) of its own: they are released when it ends,
    with nothing in flight, rather than by a later garbage collection in the middle of another
    test's work (wgpu-native's OpenGL backend can abort when a device of the adapter the shared
    context uses is released then)."""
    yield
    gc.collect()


def raises_kind(kind: BackendErrorKind):
    """pytest.raises for a BackendError of ``kind`` (checked after the block)."""

    class _Check:
        def __enter__(self):
            self._cm = pytest.raises(BackendError)
            self.info = self._cm.__enter__()
            return self.info

        def __exit__(self, *exc):
            suppressed = self._cm.__exit__(*exc)
            assert self.info.value.kind is kind, f"expected {kind}, got {self.info.value.kind}: {self.info.value}"
            return suppressed

    return _Check()


def device_bytes(backend: WebGpuBackend, ptr: int, nbytes: int) -> np.ndarray:
    out = np.empty(nbytes, np.uint8)
    backend.copy_dtoh(out, ptr)
    return out


# ---- adapter choice -----------------------------------------------------------------------------
def fake(device: str, backend_type: str, adapter_type: str, vendor: str = "") -> SimpleNamespace:
    return SimpleNamespace(info={"device": device, "vendor": vendor, "description": "",
                                 "backend_type": backend_type, "adapter_type": adapter_type})


FAKES = [
    fake("llvmpipe (LLVM 15)", "OpenGL", "CPU"),
    fake("llvmpipe (LLVM 15)", "Vulkan", "CPU", vendor="llvmpipe"),
    fake("Intel Iris Xe", "OpenGL", "IntegratedGPU", vendor="intel"),
    fake("Intel Iris Xe", "Vulkan", "IntegratedGPU", vendor="intel"),
    fake("NVIDIA H200", "OpenGL", "DiscreteGPU", vendor="nvidia"),
    fake("NVIDIA H200", "Vulkan", "DiscreteGPU", vendor="nvidia"),
]


def test_choose_adapter_ordering() -> None:
    # discrete > integrated > CPU; within a type Vulkan/Metal/D3D12 before GL; any input order
    for perm in (FAKES, FAKES[::-1], FAKES[2:] + FAKES[:2]):
        assert choose_adapter(perm, None) is FAKES[5]
    assert choose_adapter(FAKES[:4], None) is FAKES[3]
    assert choose_adapter(FAKES[:4][::-1], None) is FAKES[3]
    assert choose_adapter(FAKES[:2], None) is FAKES[1]
    assert choose_adapter([FAKES[4], FAKES[3]], None) is FAKES[4]  # the type ranks first
    metal = fake("Apple M2", "Metal", "IntegratedGPU")
    d3d12 = fake("Radeon", "D3D12", "DiscreteGPU")
    assert choose_adapter([FAKES[2], metal], None) is metal
    assert choose_adapter([FAKES[4], d3d12], None) is d3d12
    assert adapter_sort_key(FAKES[5].info) < adapter_sort_key(FAKES[3].info) < adapter_sort_key(FAKES[1].info)


def test_choose_adapter_hint() -> None:
    assert choose_adapter(FAKES, "gl") is FAKES[4]  # discrete GL beats the GL software adapter
    assert choose_adapter(FAKES, "VULKAN") is FAKES[5]
    assert choose_adapter(FAKES, "lavapipe") is FAKES[1]  # llvmpipe on Vulkan
    assert choose_adapter(FAKES, "LLVMpipe") is FAKES[1]  # both llvmpipes match; Vulkan first
    assert choose_adapter(FAKES, "intel") is FAKES[3]
    assert choose_adapter(FAKES, "Nvidia") is FAKES[5]
    assert choose_adapter(FAKES, "cpu") is FAKES[1]
    with raises_kind(BackendErrorKind.UNSUPPORTED) as info:
        choose_adapter(FAKES, "no-such-gpu")
    text = str(info.value)
    assert "no-such-gpu" in text and "NVIDIA H200" in text and "llvmpipe" in text and "OpenGL" in text
    with raises_kind(BackendErrorKind.UNSUPPORTED) as info:
        choose_adapter([], None)
    assert "mesa-vulkan-drivers" in str(info.value)


def check_context(c: WgpuContext) -> None:
    assert c.device is not None and c.queue is c.device.queue
    assert c.adapter_info["device"]
    assert c.features <= set(WANTED_FEATURES)
    assert c.features == {f for f in WANTED_FEATURES if f in c.adapter.features}
    for name in WANTED_LIMITS:  # requested at the adapter's maximum (a device may clamp some)
        if name in c.adapter.limits:
            assert 0 < c.limits[name] <= c.adapter.limits[name], name
    for name in ("max-storage-buffer-binding-size", "max-buffer-size", "max-compute-workgroups-per-dimension",
                 "max-compute-workgroup-storage-size"):
        assert c.limits[name] == c.adapter.limits[name], name
    assert c.max_binding_size == c.limits["max-storage-buffer-binding-size"] // 4 * 4
    assert c.max_buffer_size == c.limits["max-buffer-size"]
    text = repr(c)
    assert c.adapter_info["device"] in text and str(c.adapter_info["backend_type"]) in text
    assert "max_binding" in text and "MiB" in text
    # the device works
    buf = c.upload(np.arange(5, dtype=np.int32))
    assert np.frombuffer(c.readback(buf, 4, 12), np.int32).tolist() == [1, 2, 3]


def test_context_new_sync_and_async(ctx: WgpuContext, extra_devices: None) -> None:
    check_context(ctx)
    check_context(WgpuContext.new())
    check_context(asyncio.run(WgpuContext.new_async()))
    # lavapipe offers every wanted feature (the CI adapter); a GPU may offer fewer
    if ("llvmpipe" in ctx.adapter_info["device"] and ctx.adapter_info["backend_type"] == "Vulkan"
            and implementation.NAME == "native"):  # (Dawn's lavapipe has no shader-f64, shader-int64)
        assert ctx.features == set(WANTED_FEATURES)
        assert ctx.max_binding_size == 128 << 20
        assert ctx.is_software


def test_context_adapter_env(monkeypatch: pytest.MonkeyPatch, ctx: WgpuContext, extra_devices: None) -> None:
    backend_type = ctx.adapter_info["backend_type"]
    monkeypatch.setenv("GPUTENSOR_ADAPTER", str(backend_type).upper())
    assert WgpuContext.new().adapter_info["backend_type"] == backend_type
    device = ctx.adapter_info["device"]
    monkeypatch.setenv("GPUTENSOR_ADAPTER", device[:6].swapcase())
    assert WgpuContext.new().adapter_info["device"].lower().startswith(device[:6].lower())
    monkeypatch.setenv("GPUTENSOR_ADAPTER", "no-such-adapter-xyz")
    with raises_kind(BackendErrorKind.UNSUPPORTED) as info:
        WgpuContext.new()
    assert "no-such-adapter-xyz" in str(info.value) and device in str(info.value)
    with raises_kind(BackendErrorKind.UNSUPPORTED):
        asyncio.run(WgpuContext.new_async())
    # the explicit argument wins over the environment
    assert WgpuContext.new(adapter=str(backend_type)).adapter_info["backend_type"] == backend_type


def test_context_gl_adapter_when_present(monkeypatch: pytest.MonkeyPatch, extra_devices: None) -> None:
    """`GPUTENSOR_ADAPTER=gl` picks an OpenGL adapter where one is enumerated (lavapipe machines
    have llvmpipe on GL too). Its device works, or (GL without a usable context, as on headless
    NVIDIA) fails as a BackendError, never as a raw wgpu exception."""
    from gputensor._backend.implementation import wgpu

    adapters = wgpu.gpu.enumerate_adapters_sync()
    if not any("gl" in str(a.info.get("backend_type", "")).lower() for a in adapters):
        with raises_kind(BackendErrorKind.UNSUPPORTED):
            WgpuContext.new(adapter="opengl")
        return
    assert "gl" in choose_adapter(adapters, "gl").info["backend_type"].lower()
    monkeypatch.setenv("GPUTENSOR_ADAPTER", "gl")
    try:
        gl = WgpuContext.new()
    except BackendError as exc:
        assert exc.kind in (BackendErrorKind.DEVICE_ERROR, BackendErrorKind.OUT_OF_MEMORY), exc
        return
    assert "gl" in gl.adapter_info["backend_type"].lower()
    assert gl.features <= set(gl.adapter.features)
    buf = gl.upload(b"abcdefgh")
    assert gl.readback(buf, 2, 5) == b"cdefg"


# ---- buffers, readback, dispatch -----------------------------------------------------------------
def test_create_storage_upload_readback(ctx: WgpuContext) -> None:
    buf = ctx.create_storage(10)
    assert buf.size == 12
    assert ctx.readback(buf) == bytes(12)
    data = np.arange(1000, dtype=np.float64)
    up = ctx.upload(data)
    assert ctx.readback(up) == data.tobytes()
    assert ctx.readback(up, 3, 17) == data.tobytes()[3:20]
    assert ctx.readback(up, 8000, 0) == b""
    assert asyncio.run(ctx.readback_async(up, 5, 7)) == data.tobytes()[5:12]
    assert ctx.readback(ctx.upload(b"")) == bytes(4)
    with raises_kind(BackendErrorKind.OUT_OF_MEMORY):
        ctx.create_storage(ctx.max_buffer_size + 1)
    for offset, size in ((-4, 4), (0, 8004), (7999, 2), (0, -1)):
        with raises_kind(INVALID):
            ctx.readback(up, offset, size)


def test_readback_many_async_order_one_submit(ctx: WgpuContext) -> None:
    rng = np.random.default_rng(1)
    host_a = rng.integers(0, 256, 4099, dtype=np.uint8)
    host_b = rng.integers(0, 256, 333, dtype=np.uint8)
    a, b = ctx.upload(host_a), ctx.upload(host_b)
    regions, expected = [], []
    for k in range(40):
        host, buf = (host_a, a) if k % 3 else (host_b, b)
        off = int(rng.integers(0, host.size))
        size = int(rng.integers(0, host.size - off + 1)) if k % 7 else 0
        regions.append((buf, off, size))
        expected.append(host[off : off + size].tobytes())
    ctx.synchronize()
    before = ctx.stats["submits"]
    got = asyncio.run(ctx.readback_many_async(regions))
    assert ctx.stats["submits"] == before + 1
    assert got == expected
    assert ctx.readback_many(regions[::-1]) == expected[::-1]
    assert asyncio.run(ctx.readback_many_async([])) == []
    # a bad region anywhere fails the whole call before anything is staged or submitted
    before = ctx.stats["submits"]
    with raises_kind(INVALID):
        asyncio.run(ctx.readback_many_async([(a, 0, 4), (b, 334, 4)]))
    with raises_kind(INVALID):
        ctx.readback_many([(a, 0)])
    assert ctx.stats["submits"] == before


def test_readback_sees_recorded_work(ctx: WgpuContext) -> None:
    """Recorded (not yet submitted) work is flushed by a readback, and readbacks of the async
    form see it too: a dispatch, then a copy, then an async readback of both."""
    buf = ctx.upload(np.zeros(64, np.uint32))
    ctx.dispatch("patch_bytes", [3, 0xFFFFFFFF, 0xDEADBEEF], [(buf, 0, 256)], (1, 1, 1))
    ctx.copy_buffer(buf, 0, buf, 128, 16)  # same buffer: goes through a temporary
    words = np.frombuffer(asyncio.run(ctx.readback_async(buf)), np.uint32)
    assert words[3] == 0xDEADBEEF and words[35] == 0xDEADBEEF
    assert np.count_nonzero(words) == 2


def test_write_unaligned_edges(ctx: WgpuContext) -> None:
    """write() with odd offsets and sizes merges the edge bytes on the device and leaves every
    other byte alone."""
    rng = np.random.default_rng(2)
    mirror = rng.integers(0, 256, 301, dtype=np.uint8)
    buf = ctx.upload(mirror)
    for offset, size in ((0, 1), (1, 1), (2, 2), (3, 2), (5, 3), (1, 3), (7, 9), (13, 64), (3, 4),
                         (0, 301), (297, 4), (298, 3), (300, 1), (255, 2), (6, 0), (9, 255)):
        chunk = rng.integers(0, 256, size, dtype=np.uint8)
        mirror[offset : offset + size] = chunk
        ctx.write(buf, offset, chunk)
    got = np.frombuffer(ctx.readback(buf, 0, 301), np.uint8)
    np.testing.assert_array_equal(got, mirror)
    assert ctx.readback(buf, 301, 3) == bytes(3)  # the padding past the data stayed zero
    with raises_kind(INVALID):
        ctx.write(buf, 302, b"\x01\x02\x03")


def test_dispatch_validation_and_pipeline_cache(ctx: WgpuContext) -> None:
    buf = ctx.create_storage(1024)
    align = ctx.storage_offset_alignment
    ctx.dispatch("patch_bytes", [0, 0xFF, 7], [(buf, 0, 4)], (1, 1, 1))
    compiled = ctx.stats["pipelines_compiled"]
    ctx.pipeline("patch_bytes", 1)
    ctx.dispatch("patch_bytes", [1, 0xFF, 9], [(buf, align, 8)], (1, 1, 1))
    assert ctx.stats["pipelines_compiled"] == compiled
    assert ctx.readback(buf, 0, 4) == b"\x07\0\0\0" and ctx.readback(buf, align + 4, 4) == b"\x09\0\0\0"
    dispatches = ctx.stats["dispatches"]
    ctx.dispatch("patch_bytes", [0, 0xFF, 1], [(buf, 0, 4)], (0, 1, 1))  # empty grid: nothing
    assert ctx.stats["dispatches"] == dispatches
    bad = [
        ([(buf, 4, 4)], (1, 1, 1)) if align > 4 else ([(buf, 2, 4)], (1, 1, 1)),  # misaligned offset
        ([(buf, 0, 6)], (1, 1, 1)),  # size not a multiple of 4
        ([(buf, 0, 0)], (1, 1, 1)),  # empty binding
        ([(buf, 0, 1028)], (1, 1, 1)),  # past the end
        ([(buf, 0, 4)], (ctx.max_workgroups_per_dim + 1, 1, 1)),  # grid too large
        ([(buf, 0, 4)], (1, -1, 1)),
        ([(buf, 0, 4)], (1, 1)),
    ]
    for buffers, grid in bad:
        with raises_kind(INVALID):
            ctx.dispatch("patch_bytes", [0, 0, 0], buffers, grid)
    with raises_kind(INVALID):
        ctx.dispatch("patch_bytes", [0, "x", 0], [(buf, 0, 4)], (1, 1, 1))
    with raises_kind(INVALID):
        ctx.dispatch("no_such_kernel", [0], [(buf, 0, 4)], (1, 1, 1))
    with raises_kind(INVALID):
        ctx.pipeline("patch_bytes", 1, {"UNKNOWN_PLACEHOLDER": 1})
    assert ctx.stats["dispatches"] == dispatches


def test_pipeline_compile_error_is_device_error(ctx: WgpuContext) -> None:
    from gputensor._backend.elementwise import ElementwiseSpec, render_defines

    spec = ElementwiseSpec((("float32", False),), ("f32",), "x0", "f32", "float32", 0, "direct")
    defines = dict(render_defines(spec), STORE="    out[0] = undefined_function(1) +* 2;")
    with raises_kind(BackendErrorKind.DEVICE_ERROR) as info:
        ctx.pipeline("elementwise", 2, defines)
    assert "elementwise" in str(info.value)


def test_fold_grid(ctx: WgpuContext) -> None:
    limit = ctx.max_workgroups_per_dim
    assert ctx.fold_grid(0) == (1, 1, 1)
    assert ctx.fold_grid(7) == (7, 1, 1)
    assert ctx.fold_grid(limit) == (limit, 1, 1)
    for groups in (limit + 1, 3 * limit + 17, limit * 200 - 1):
        x, y, z = ctx.fold_grid(groups)
        assert z == 1 and x <= limit and y <= limit and x * y >= groups and (y - 1) * x < groups
    with raises_kind(INVALID):
        ctx.fold_grid(limit * limit + 1)


def test_batching_submits_and_flush_recovery(ctx: WgpuContext) -> None:
    buf = ctx.create_storage(4)
    ctx.synchronize()
    submits = ctx.stats["submits"]
    for k in range(submit_policy.MAX_BATCH + 3):
        ctx.dispatch("patch_bytes", [0, 0xFFFFFFFF, k], [(buf, 0, 4)], (1, 1, 1))
    assert ctx.stats["submits"] == submits + 1  # the full batch went on its own
    ctx.flush()
    assert ctx.stats["submits"] == submits + 2
    ctx.flush()  # nothing recorded: no submit
    assert ctx.stats["submits"] == submits + 2
    assert np.frombuffer(ctx.readback(buf), np.uint32)[0] == submit_policy.MAX_BATCH + 2
    # A batch the device rejects raises a device error and leaves the context usable.
    ctx._record_copy(buf, 0, buf, 0, 4)  # WebGPU forbids copies within one buffer
    with raises_kind(BackendErrorKind.DEVICE_ERROR):
        ctx.flush()
    ctx.dispatch("patch_bytes", [0, 0xFFFFFFFF, 99], [(buf, 0, 4)], (1, 1, 1))
    assert np.frombuffer(ctx.readback(buf), np.uint32)[0] == 99


def test_dispatch_host_overhead(backend: WebGpuBackend, capsys: pytest.CaptureFixture[str]) -> None:
    """Information point: host time to record a tiny dispatch, raw and through ``unary`` (and no
    per-call compilation)."""
    ctx = backend.context
    buf = ctx.create_storage(4)
    ptr = backend.alloc(256 * 4)
    ctx.dispatch("patch_bytes", [0, 0xFFFFFFFF, 0], [(buf, 0, 4)], (1, 1, 1))
    backend.unary(UnaryOp.NEG, ptr, ptr, 256)
    ctx.synchronize()
    compiled = ctx.stats["pipelines_compiled"]
    timings = []
    for record in (lambda k: ctx.dispatch("patch_bytes", [0, 0xFFFFFFFF, k], [(buf, 0, 4)], (1, 1, 1)),
                   lambda k: backend.unary(UnaryOp.NEG, ptr, ptr, 256)):
        start = time.perf_counter()
        for k in range(1000):
            record(k)
        recorded = time.perf_counter()
        ctx.synchronize()
        timings.append(((recorded - start) * 1e3, (time.perf_counter() - start) * 1e3))
    assert ctx.stats["pipelines_compiled"] == compiled
    assert np.frombuffer(ctx.readback(buf), np.uint32)[0] == 999
    with capsys.disabled():
        print(f"\n[info] host time per dispatch on {ctx.adapter_info['device']}: raw dispatch "
              f"{timings[0][0]:.1f} us recorded ({timings[0][1]:.1f} us with execution); unary "
              f"{timings[1][0]:.1f} us recorded ({timings[1][1]:.1f} us with execution)")
    assert timings[0][0] < 5000 and timings[1][0] < 5000  # catches per-call compilation or submits
    backend.free(ptr)


# ---- lifecycle -------------------------------------------------------------------------------------
def test_lifecycle_uninitialised() -> None:
    b = WebGpuBackend()
    assert isinstance(b, ComputeBackend)
    assert not b.is_initialized()
    assert b.name() == "webgpu"
    assert "uninitialised" in repr(b)
    calls = [
        lambda: b.context,
        lambda: b.alloc(16),
        lambda: b.free(1 << 40),
        lambda: b.resolve(1 << 40, 4),
        lambda: b.allocation_size(1 << 40),
        lambda: b.window(1 << 40, 4, 4),
        lambda: b.max_window_bytes(),
        lambda: b.copy_htod(1 << 40, b"abcd"),
        lambda: b.copy_dtoh(bytearray(4), 1 << 40),
        lambda: b.copy_dtoh(b"read-only", 1 << 40),
        lambda: b.copy_dtod(1 << 40, 2 << 40, 4),
        lambda: b.synchronize(),
        lambda: b.supports("shader-f16"),
        lambda: b.float_dtype("float32"),
        lambda: b.gemm(BackendTranspose.NO_TRANS, BackendTranspose.NO_TRANS, 1, 1, 1, 1.0, 0, 1, 0, 1, 0.0, 0, 1),
        lambda: b.conv2d_forward(0, (1, 1, 1, 1), 0, (1, 1, 1, 1), 0, (1, 1, 1, 1), 1, 0),
        lambda: b.attention(0, 0, 0, 0, 1, 1, 1, 1, 1, 1.0, False),
        lambda: b.reduce(ReduceOp.SUM, 0, 0, (1,), 0),
        lambda: b.unary(UnaryOp.EXP, 0, 0, 1),
        lambda: b.binary(BinaryOp.ADD, 0, 0, 0, 1),
    ]
    for call in calls:
        with raises_kind(BackendErrorKind.NOT_INITIALIZED):
            call()
    assert not b.is_initialized()


def test_lifecycle_init(backend: WebGpuBackend, extra_devices: None) -> None:
    b = WebGpuBackend()
    b.init()
    assert b.is_initialized()
    ctx = b.context
    b.init()  # no-op
    assert b.context is ctx
    assert ctx.adapter_info["device"] in repr(b)
    assert b.name() == "webgpu"
    ptr = b.alloc(8)
    b.copy_htod(ptr, b"12345678")
    assert bytes(device_bytes(b, ptr, 8)) == b"12345678"
    b2 = WebGpuBackend()
    asyncio.run(b2.init_async())
    assert b2.is_initialized()
    # the shared backend
    assert get_backend() is backend and backend.is_initialized()
    assert backend.context.adapter_info["device"] in repr(backend)


def test_enums_and_exports() -> None:
    assert [str(t) for t in BackendTranspose] == ["N", "T", "C"]
    assert [str(r) for r in ReduceOp] == ["sum", "max", "min", "mean", "prod"]
    for name in ("RELU", "SIGMOID", "TANH", "EXP", "LOG", "SQRT", "ABS", "NEG"):
        assert str(UnaryOp[name]) == name.lower()
    for name in ("ADD", "SUB", "MUL", "DIV", "MAX", "MIN", "POW"):
        assert str(BinaryOp[name]) == name.lower()
    assert {str(k) for k in BackendErrorKind} == {
        "unsupported", "device error", "invalid argument", "out of memory", "not initialised"}
    for name in ("BackendError", "BackendTranspose", "ReduceOp", "UnaryOp", "BinaryOp",
                 "ComputeBackend", "WebGpuBackend", "WgpuContext", "get_backend"):
        assert hasattr(backend_pkg, name) and name in backend_pkg.__all__
    err = BackendError(BackendErrorKind.OUT_OF_MEMORY, "too big")
    assert isinstance(err, RuntimeError) and err.kind is BackendErrorKind.OUT_OF_MEMORY
    assert str(err) == "out of memory: too big"


def test_supports_and_float_dtype(backend: WebGpuBackend) -> None:
    assert backend.supports(None)
    assert backend.float_dtype("float32") == (4, "f32")
    for dtype, expected, feature in (("float16", (2, "f16"), "shader-f16"), ("float64", (8, "f64"), "shader-f64")):
        if backend.supports(feature):
            assert backend.float_dtype(dtype) == expected
        else:
            with raises_kind(BackendErrorKind.UNSUPPORTED):
                backend.float_dtype(dtype)
    for bad in ("int32", "float", None, np.float32):
        with raises_kind(INVALID):
            backend.float_dtype(bad)
    # an adapter without the features: unsupported, and the operations refuse before recording
    bare = WebGpuBackend(context=SimpleNamespace(features=frozenset()))
    assert not bare.supports("shader-f64")
    for dtype in ("float16", "float64"):
        with raises_kind(BackendErrorKind.UNSUPPORTED):
            bare.float_dtype(dtype)
        with raises_kind(BackendErrorKind.UNSUPPORTED):
            bare.unary(UnaryOp.EXP, 1 << 40, 1 << 40, 4, dtype=dtype)
        with raises_kind(BackendErrorKind.UNSUPPORTED):
            bare.binary(BinaryOp.ADD, 1 << 40, 1 << 40, 1 << 40, 4, dtype=dtype)


# ---- memory ---------------------------------------------------------------------------------------
def test_alloc_pointers_and_sizes(backend: WebGpuBackend) -> None:
    p = backend.alloc(100)
    q = backend.alloc(0)
    assert isinstance(p, int) and p != q
    assert backend.allocation_size(p) == 100 and backend.allocation_size(p + 40) == 60
    assert backend.allocation_size(q) == 0
    alloc, offset = backend.resolve(p + 12, 88)
    assert offset == 12 and alloc.nbytes == 100
    assert bytes(device_bytes(backend, p, 100)) == bytes(100)  # zero-filled
    win = backend.window(p + 12, 40, 4)
    assert win.offset % backend.context.storage_offset_alignment == 0
    assert win.offset + win.first * 4 == 12 and win.offset + win.size >= 52
    assert backend.max_window_bytes() <= backend.context.max_binding_size
    for bad in (-1, 1.5, "8", None, True):
        with raises_kind(INVALID):
            backend.alloc(bad)
    with raises_kind(BackendErrorKind.OUT_OF_MEMORY):
        backend.alloc(backend.context.max_buffer_size + 1)
    with raises_kind(INVALID):
        backend.window(p + 2, 8, 4)  # misaligned for the item size
    with raises_kind(INVALID):
        backend.window(p, backend.max_window_bytes() + 1, 4)  # also past the end
    with raises_kind(INVALID):
        backend.resolve(p, 101)
    with raises_kind(INVALID):
        backend.resolve(p, -1)
    backend.free(p)
    backend.free(q)


def test_free_errors(backend: WebGpuBackend) -> None:
    p = backend.alloc(64)
    with raises_kind(INVALID):
        backend.free(p + 4)  # interior pointer
    backend.free(p)
    with raises_kind(INVALID):
        backend.free(p)  # double free
    for bad in (0, 12345, (999999 << 40), -(1 << 40), "p", None, 1.0):
        with raises_kind(INVALID):
            backend.free(bad)
    # a freed pointer is unknown to every operation
    with raises_kind(INVALID):
        backend.copy_htod(p, b"1234")
    with raises_kind(INVALID):
        backend.copy_dtoh(bytearray(4), p)
    with raises_kind(INVALID):
        backend.resolve(p, 0)


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview", "f64", "i16", "f16", "bool",
                                  "c64", "2d", "strided", "empty", "0d", "u8"])
def test_copy_roundtrip_bytes_like(backend: WebGpuBackend, kind: str) -> None:
    rng = np.random.default_rng(len(kind))
    arrays = {
        "f64": rng.standard_normal(7),
        "i16": rng.integers(-30000, 30000, 13).astype(np.int16),
        "f16": rng.standard_normal(9).astype(np.float16),
        "bool": rng.integers(0, 2, 11).astype(bool),
        "c64": (rng.standard_normal(5) + 1j * rng.standard_normal(5)).astype(np.complex64),
        "2d": rng.standard_normal((3, 5)).astype(np.float32),
        "strided": np.arange(40, dtype=np.int32)[::3],
        "empty": np.zeros((2, 0), np.float32),
        "0d": np.array(3.25, np.float64),
        "u8": rng.integers(0, 256, 37, dtype=np.uint8),
    }
    raw = rng.integers(0, 256, 23, dtype=np.uint8).tobytes()
    if kind == "bytes":
        src, expected = raw, raw
    elif kind == "bytearray":
        src, expected = bytearray(raw), raw
    elif kind == "memoryview":
        src, expected = memoryview(raw)[2:19], raw[2:19]
    else:
        src = arrays[kind]
        expected = src.tobytes()  # C order, also for the non-contiguous source
    n = len(expected)
    ptr = backend.alloc(n + 8)
    backend.copy_htod(ptr + 3, src)
    # destinations of every kind are filled completely
    assert bytes(device_bytes(backend, ptr + 3, n)) == expected
    ba = bytearray(n)
    backend.copy_dtoh(ba, ptr + 3)
    assert bytes(ba) == expected
    if kind not in ("bytes", "bytearray", "memoryview"):
        dst = np.full_like(arrays[kind], 0) if kind != "strided" else np.zeros(len(arrays[kind]), np.int32)
        if dst.dtype.kind == "f":
            dst.fill(np.nan)
        backend.copy_dtoh(dst, ptr + 3)
        assert dst.tobytes() == expected
    mv = memoryview(bytearray(n + 4))
    backend.copy_dtoh(mv[2 : 2 + n], ptr + 3)
    assert bytes(mv[2 : 2 + n]) == expected and bytes(mv[:2]) == b"\0\0" and bytes(mv[2 + n :]) == bytes(2)
    # neighbours untouched
    assert bytes(device_bytes(backend, ptr, 3)) == bytes(3)
    assert bytes(device_bytes(backend, ptr + 3 + n, 5)) == bytes(5)
    backend.free(ptr)


def test_dtoh_fills_all_bytes_of_non_uint8_arrays(backend: WebGpuBackend) -> None:
    data = np.arange(24, dtype=np.float64).reshape(2, 3, 4) * 1.5
    ptr = backend.alloc(data.nbytes)
    backend.copy_htod(ptr, data)
    for dtype, shape in ((np.float64, (2, 3, 4)), (np.float32, (48,)), (np.int16, (4, 24)),
                         (np.uint8, (192,)), (np.float16, (96,)), (np.complex128, (12,))):
        dst = np.zeros(shape, dtype)
        backend.copy_dtoh(dst, ptr)
        assert dst.tobytes() == data.tobytes(), dtype
    # a smaller destination reads a prefix (and the rest of the allocation is irrelevant)
    part = np.zeros(5, np.float64)
    backend.copy_dtoh(part, ptr + 8)
    np.testing.assert_array_equal(part, data.reshape(-1)[1:6])
    backend.free(ptr)


def test_odd_interior_writes_keep_neighbours(backend: WebGpuBackend) -> None:
    """Many writes at odd offsets and sizes into one allocation match a host mirror exactly."""
    rng = np.random.default_rng(5)
    size = 1031
    mirror = rng.integers(0, 256, size, dtype=np.uint8)
    ptr = backend.alloc(size)
    backend.copy_htod(ptr, mirror)
    for k in range(60):
        off = int(rng.integers(0, size))
        n = int(rng.integers(0, min(size - off, 17 if k % 2 else 300) + 1))
        chunk = rng.integers(0, 256, n, dtype=np.uint8)
        backend.copy_htod(ptr + off, chunk.tobytes() if k % 3 == 0 else chunk)
        mirror[off : off + n] = chunk
        if k % 20 == 19:
            np.testing.assert_array_equal(device_bytes(backend, ptr, size), mirror)
    np.testing.assert_array_equal(device_bytes(backend, ptr, size), mirror)
    for off in range(0, 9):  # reads at every alignment
        out = np.empty(size - off - 3, np.uint8)
        backend.copy_dtoh(out, ptr + off)
        np.testing.assert_array_equal(out, mirror[off : size - 3])
    backend.free(ptr)


def test_copy_errors(backend: WebGpuBackend) -> None:
    p = backend.alloc(16)
    q = backend.alloc(16)
    with raises_kind(INVALID):
        backend.copy_htod(p, bytes(17))  # past the end
    with raises_kind(INVALID):
        backend.copy_htod(p + 13, b"abcd")
    with raises_kind(INVALID):
        backend.copy_dtoh(bytearray(17), p)
    with raises_kind(INVALID):
        backend.copy_dtoh(bytearray(2), p + 15)
    with raises_kind(INVALID):
        backend.copy_dtoh(b"immutable", p)  # read-only destination
    with raises_kind(INVALID):
        backend.copy_dtoh(np.zeros(4, np.float32)[::2], p)  # non-contiguous destination
    with raises_kind(INVALID):
        backend.copy_dtoh([0, 0, 0, 0], p)  # not bytes-like
    with raises_kind(INVALID):
        backend.copy_htod(p, [1, 2, 3])
    with raises_kind(INVALID):
        backend.copy_htod(p, "text")
    with raises_kind(INVALID):
        backend.copy_dtod(q, p, 17)
    with raises_kind(INVALID):
        backend.copy_dtod(q + 8, p, 9)
    with raises_kind(INVALID):
        backend.copy_dtod(q, p, -1)
    with raises_kind(INVALID):
        backend.copy_dtod(q, 777, 4)
    backend.copy_htod(p + 16, b"")  # empty copies at the very end are fine
    backend.copy_dtoh(bytearray(0), p + 16)
    backend.copy_dtod(q + 16, p + 16, 0)
    backend.free(p)
    backend.free(q)


@pytest.mark.parametrize("dst_off,src_off,n", [
    (0, 0, 64), (4, 8, 32), (1, 0, 50), (0, 3, 61), (5, 2, 17), (2, 6, 1), (3, 3, 7)])
def test_copy_dtod_between_allocations(backend: WebGpuBackend, dst_off: int, src_off: int, n: int) -> None:
    rng = np.random.default_rng(n)
    src_host = rng.integers(0, 256, 72, dtype=np.uint8)
    dst_host = rng.integers(0, 256, 72, dtype=np.uint8)
    src, dst = backend.alloc(72), backend.alloc(72)
    backend.copy_htod(src, src_host)
    backend.copy_htod(dst, dst_host)
    backend.copy_dtod(dst + dst_off, src + src_off, n)
    dst_host[dst_off : dst_off + n] = src_host[src_off : src_off + n]
    np.testing.assert_array_equal(device_bytes(backend, dst, 72), dst_host)
    np.testing.assert_array_equal(device_bytes(backend, src, 72), src_host)
    backend.free(src)
    backend.free(dst)


@pytest.mark.parametrize("dst_off,src_off,n", [
    (0, 16, 16), (16, 0, 16), (4, 0, 40), (0, 4, 40), (1, 0, 30), (0, 1, 30), (3, 9, 20), (9, 3, 20),
    (7, 7, 5), (2, 30, 13), (30, 2, 13)])
def test_copy_dtod_within_one_allocation(backend: WebGpuBackend, dst_off: int, src_off: int, n: int) -> None:
    """Overlapping or not, aligned or not: the result is memmove's."""
    rng = np.random.default_rng(dst_off * 100 + src_off)
    host = rng.integers(0, 256, 48, dtype=np.uint8)
    p = backend.alloc(48)
    backend.copy_htod(p, host)
    backend.copy_dtod(p + dst_off, p + src_off, n)
    host[dst_off : dst_off + n] = host[src_off : src_off + n].copy()
    np.testing.assert_array_equal(device_bytes(backend, p, 48), host)
    backend.free(p)


def test_synchronize(backend: WebGpuBackend) -> None:
    ctx = backend.context
    p = backend.alloc(4096)
    backend.copy_htod(p, np.ones(1024, np.float32))
    for _ in range(5):
        backend.unary(UnaryOp.EXP, p, p, 1024)
    assert ctx._encoder is not None  # recorded, not yet submitted
    submits = ctx.stats["submits"]
    backend.synchronize()
    assert ctx._encoder is None and ctx.stats["submits"] > submits
    backend.synchronize()  # idempotent
    out = np.empty(1024, np.float32)
    backend.copy_dtoh(out, p)
    expected = np.ones(1024)
    with np.errstate(over="ignore"):
        for _ in range(5):
            expected = np.exp(expected)
    # exp(exp(exp(exp(exp(1))))) overflows float32: inf everywhere
    np.testing.assert_array_equal(out, expected.astype(np.float32))
    backend.free(p)


# ---- large transfers: chunked through pooled staging buffers -------------------------------------
CHUNK = 256  # TRANSFER_CHUNK in these tests (bytes), so a few KiB cross several chunk edges


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch, ctx: WgpuContext) -> Iterator[int]:
    """Chunks of ``CHUNK`` bytes, two in flight, every write body staged (no upload ring)."""
    monkeypatch.setattr(transfers_mod, "TRANSFER_CHUNK", CHUNK)
    monkeypatch.setattr(transfers_mod, "TRANSFER_DEPTH", 2)
    monkeypatch.setattr(transfers_mod, "STAGED_UPLOAD_MAX", 0)
    ctx.synchronize()
    yield CHUNK
    ctx.synchronize()
    ctx.clear_staging()  # no CHUNK-sized buffers left for the tests after this one


# (offset, size) pairs around chunk edges: sizes just below/at/above one and two chunks, unaligned
# offsets whose range crosses an edge, and ranges that end exactly on or just past an edge.
EDGE_CASES = [(0, CHUNK - 1), (0, CHUNK), (0, CHUNK + 1), (0, 2 * CHUNK - 1), (0, 2 * CHUNK + 1),
              (1, CHUNK), (3, CHUNK - 2), (CHUNK - 1, 2), (CHUNK - 3, CHUNK + 7), (CHUNK + 2, 3 * CHUNK),
              (5, 7 * CHUNK + 3), (2, 8 * CHUNK - 2), (0, 9 * CHUNK)]


def test_chunked_readback_edges(ctx: WgpuContext, small_chunks: int) -> None:
    """Readbacks larger than a chunk (bytes, into a destination, async) match byte for byte at
    every offset/size around chunk edges."""
    host = np.random.default_rng(11).integers(0, 256, 10 * CHUNK, dtype=np.uint8)
    buf = ctx.upload(host)
    for offset, size in EDGE_CASES:
        expected = host[offset : offset + size].tobytes()
        assert ctx.readback(buf, offset, size) == expected, (offset, size)
        dst = np.full(size, 0xA5, np.uint8)
        ctx.readback_into(buf, offset, dst)
        assert dst.tobytes() == expected, (offset, size)
    assert asyncio.run(ctx.readback_async(buf, 7, 5 * CHUNK)) == host[7 : 7 + 5 * CHUNK].tobytes()


def test_chunked_readback_many_pipelines(ctx: WgpuContext, small_chunks: int) -> None:
    """Regions that together exceed the staging budget (TRANSFER_DEPTH chunks) are read in
    several submits, in order and complete; regions within it keep one submit."""
    rng = np.random.default_rng(12)
    host = rng.integers(0, 256, 10 * CHUNK, dtype=np.uint8)
    buf = ctx.upload(host)
    regions = [(buf, off, size) for off, size in EDGE_CASES] + [(buf, 9, 0), (buf, 100, 3)]
    expected = [host[off : off + size].tobytes() for _, off, size in regions]
    ctx.synchronize()
    before = ctx.stats["submits"]
    assert ctx.readback_many(regions) == expected
    assert ctx.stats["submits"] > before + 1
    assert asyncio.run(ctx.readback_many_async(regions[::-1])) == expected[::-1]
    dsts = [np.zeros(size, np.uint8) for _, _, size in regions]
    ctx.readback_many_into(regions, dsts)
    assert [d.tobytes() for d in dsts] == expected
    small = [(buf, 4 * k, 4) for k in range(2 * CHUNK // 4)]  # exactly the budget: one submit
    before = ctx.stats["submits"]
    assert ctx.readback_many(small) == [host[4 * k : 4 * k + 4].tobytes() for k in range(len(small))]
    assert ctx.stats["submits"] == before + 1


def test_chunked_write_edges(ctx: WgpuContext, small_chunks: int) -> None:
    """Staged writes across chunk edges at unaligned offsets change exactly their bytes, for
    every kind of bytes-like source (non-contiguous arrays in C order)."""
    rng = np.random.default_rng(13)
    mirror = rng.integers(0, 256, 10 * CHUNK + 5, dtype=np.uint8)
    buf = ctx.upload(mirror)
    for k, (offset, size) in enumerate(EDGE_CASES):
        chunk = rng.integers(0, 256, size, dtype=np.uint8)
        mirror[offset : offset + size] = chunk
        src: object = [chunk, chunk.tobytes(), bytearray(chunk.tobytes()), memoryview(chunk.tobytes())][k % 4]
        ctx.write(buf, offset, src)
        if k % 4 == 3:
            assert ctx.readback(buf, 0, mirror.size) == mirror.tobytes(), (offset, size)
    wide = rng.integers(0, 256, (3 * CHUNK, 2), dtype=np.uint8)
    ctx.write(buf, 6, wide[:, 1])  # non-contiguous: its elements in C order
    mirror[6 : 6 + 3 * CHUNK] = wide[:, 1]
    floats = rng.standard_normal(CHUNK)  # a non-byte format
    ctx.write(buf, 1, floats)
    mirror[1 : 1 + 8 * CHUNK] = np.frombuffer(floats.tobytes(), np.uint8)
    assert ctx.readback(buf, 0, mirror.size) == mirror.tobytes()


def test_chunked_write_is_ordered_with_recorded_work(ctx: WgpuContext, small_chunks: int) -> None:
    """Work recorded before a multi-chunk write does not see it (and its own result is
    overwritten by it); work recorded after the write sees all of it."""
    n = 6 * CHUNK
    data = np.random.default_rng(14).integers(1, 256, n, dtype=np.uint8)
    buf = ctx.upload(np.zeros(n, np.uint8))
    before, after = ctx.create_storage(n), ctx.create_storage(n)
    ctx.dispatch("patch_bytes", [5 * CHUNK // 4, 0xFFFFFFFF, 0x01020304], [(buf, 0, n)], (1, 1, 1))
    ctx.copy_buffer(buf, 0, before, 0, n)
    assert ctx._encoder is not None  # still recorded, not submitted
    ctx.write(buf, 0, data)
    ctx.dispatch("patch_bytes", [2 * CHUNK // 4 + 1, 0xFF00FF00, 0xAB00CD00], [(buf, 0, n)], (1, 1, 1))
    ctx.copy_buffer(buf, 0, after, 0, n)
    got_before = np.frombuffer(ctx.readback(before), np.uint8)
    expected_before = np.zeros(n, np.uint8)
    expected_before[5 * CHUNK : 5 * CHUNK + 4] = [4, 3, 2, 1]
    np.testing.assert_array_equal(got_before, expected_before)
    expected = data.copy()
    at = 2 * CHUNK + 4
    expected[at + 1], expected[at + 3] = 0xCD, 0xAB
    np.testing.assert_array_equal(np.frombuffer(ctx.readback(after), np.uint8), expected)
    np.testing.assert_array_equal(np.frombuffer(ctx.readback(buf), np.uint8), expected)


def test_chunked_readback_sees_recorded_work(ctx: WgpuContext, small_chunks: int) -> None:
    """A multi-chunk readback returns the state after the work recorded before it."""
    n = 5 * CHUNK
    buf = ctx.upload(np.zeros(n, np.uint8))
    for word in (0, CHUNK // 4 - 1, CHUNK // 4, n // 4 - 1):
        ctx.dispatch("patch_bytes", [word, 0xFFFFFFFF, 0xC0FFEE00 + word], [(buf, 0, n)], (1, 1, 1))
    words = np.frombuffer(ctx.readback(buf, 0, n), np.uint32)
    for word in (0, CHUNK // 4 - 1, CHUNK // 4, n // 4 - 1):
        assert words[word] == 0xC0FFEE00 + word
    assert np.count_nonzero(words) == 4


def test_upload_staging_is_pooled_and_reused(ctx: WgpuContext, small_chunks: int) -> None:
    """Chunked writes keep at most TRANSFER_DEPTH staging buffers and reuse them (a reused
    buffer is refilled only after the device copy that read it: the data stays right);
    ``clear_staging`` and the memory pool's ``free_all_blocks`` drop them."""
    rng = np.random.default_rng(15)
    a, b = ctx.create_storage(8 * CHUNK), ctx.create_storage(8 * CHUNK)
    da, db = (rng.integers(0, 256, 8 * CHUNK, dtype=np.uint8) for _ in range(2))
    ctx.write(a, 0, da)
    kept = {id(buf) for buf, _ in ctx._upload_staging._free}
    assert len(kept) == 2 and ctx._upload_staging.cached_bytes() == 2 * CHUNK
    ctx.write(b, 0, db)
    assert {id(buf) for buf, _ in ctx._upload_staging._free} == kept
    assert ctx.readback(a) == da.tobytes() and ctx.readback(b) == db.tobytes()
    ctx.clear_staging()
    assert ctx._upload_staging.cached_bytes() == 0 and ctx._staging.cached_bytes() == 0
    ctx.write(a, 4, db[: 3 * CHUNK])  # works again with fresh buffers
    assert ctx.readback(a, 4, 3 * CHUNK) == db[: 3 * CHUNK].tobytes()


def test_host_copy_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """host_copy splits a large copy between threads and copies every byte exactly once."""
    monkeypatch.setattr(host_memory_mod, "_COPY_SLICE_MIN", 1000)
    src = np.random.default_rng(16).integers(0, 256, 10_007, dtype=np.uint8)
    for threads in (1, 2, 3, 8):
        dst = np.zeros(12_000, np.uint8)
        host_memory_mod.host_copy(memoryview(dst)[5 : 5 + src.size], memoryview(src.tobytes()), threads)
        np.testing.assert_array_equal(dst[5 : 5 + src.size], src)
        assert not dst[:5].any() and not dst[5 + src.size :].any()
    with pytest.raises(ValueError):
        host_memory_mod.host_copy(memoryview(bytearray(4)), memoryview(b"123"))


def test_fill_mapped_without_a_writable_mapping_view() -> None:
    """Where wgpu-py offers no writable view of a mapping, staging is filled by write_mapped."""
    calls = []
    fake_staging = SimpleNamespace(write_mapped=lambda data, offset: calls.append((bytes(data), offset)))
    host_memory_mod.fill_mapped(fake_staging, memoryview(b"abcdefgh"), 4)
    assert calls == [(b"abcdefgh", 0)]


def test_chunked_backend_copies_with_threads(backend: WebGpuBackend, small_chunks: int,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """copy_htod / copy_dtoh / copy_dtoh_many through chunks with threaded host copies, into
    arrays of other dtypes, from several Python threads at once."""
    monkeypatch.setattr(host_memory_mod, "_COPY_SLICE_MIN", 64)
    monkeypatch.setattr(config, "_effective", {"copy_threads": 3})
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            rng = np.random.default_rng(100 + k)
            data = rng.standard_normal(7 * CHUNK // 8 + k)  # float64, not a multiple of a chunk
            p = backend.alloc(data.nbytes + 16)
            backend.copy_htod(p + 3, data)
            out = np.full_like(data, np.nan)
            backend.copy_dtoh(out, p + 3)
            np.testing.assert_array_equal(out, data)
            half = data.nbytes // 2
            halves = [np.zeros(half, np.uint8), np.zeros(data.nbytes - half, np.uint8)]
            backend.copy_dtoh_many([(halves[0], p + 3), (halves[1], p + 3 + half)])
            assert np.concatenate(halves).tobytes() == data.tobytes()
            edge = np.zeros(16 + data.nbytes, np.uint8)
            backend.copy_dtoh(edge, p)
            assert not edge[:3].any() and not edge[3 + data.nbytes :].any()
            backend.free(p)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors


# ---- buffer mappings completed in the waiting thread (mapping.py) ------------------------------
@pytest.fixture(params=["spin", "block", "poller"])
def wait_style(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, ctx: WgpuContext,
               small_chunks: int) -> Iterator[str]:
    """The context's readback and upload staging mapped each way GPUTENSOR_WAIT can choose
    (small chunks, so transfers take several mappings each)."""
    from gputensor._backend.mapping import Mapper

    mapper = None if request.param == "poller" else Mapper.load(ctx.device, spin=request.param == "spin")
    if request.param != "poller":  # the mapper exactly where the implementation's internals are found
        assert (mapper is not None) == (implementation.native_api() is not None)
    ctx.synchronize()
    monkeypatch.setattr(ctx, "_mapper", mapper)
    monkeypatch.setattr(ctx, "_upload_staging", transfers_mod._UploadStaging(ctx.device, mapper))
    yield request.param
    ctx.synchronize()
    ctx._upload_staging.clear()


def test_mapping_styles_transfer_exactly(ctx: WgpuContext, wait_style: str) -> None:
    """Uploads, readbacks (single, many, into, async) and synchronize give the same bytes
    whichever way the mappings are completed, also after recorded kernels."""
    rng = np.random.default_rng(21)
    host = rng.integers(0, 256, 9 * CHUNK + 3, dtype=np.uint8)
    buf = ctx.upload(np.zeros(host.size, np.uint8))
    ctx.write(buf, 0, host)  # several staged chunks: upload staging mapped for writing again
    ctx.write(buf, 1, host[1:])
    assert ctx.readback(buf, 0, host.size) == host.tobytes()
    regions = [(buf, 0, 5), (buf, 3, 3 * CHUNK), (buf, 7 * CHUNK, 2 * CHUNK + 3)]
    assert ctx.readback_many(regions) == [host[o : o + s].tobytes() for _, o, s in regions]
    assert asyncio.run(ctx.readback_many_async(regions)) == [host[o : o + s].tobytes() for _, o, s in regions]
    dst = np.zeros(2 * CHUNK, np.uint8)
    ctx.readback_into(buf, 11, dst)
    assert dst.tobytes() == host[11 : 11 + 2 * CHUNK].tobytes()
    ctx.dispatch("patch_bytes", [0, 0xFFFFFFFF, 0x04030201], [(buf, 0, 256)], (1, 1, 1))
    ctx.synchronize()
    assert ctx.readback(buf, 0, 4) == bytes([1, 2, 3, 4])


def test_mapper_request_states(ctx: WgpuContext) -> None:
    """A mapper request leaves the buffer mapped as wgpu-py's own mapping does (read_mapped and
    unmap work); mapping a buffer that is not unmapped raises RuntimeError and leaves it usable."""
    from gputensor._backend.implementation import wgpu

    from gputensor._backend.mapping import Mapper

    if implementation.native_api() is None:  # Dawn: the public map_async path, tested above
        assert Mapper.load(ctx.device, spin=True) is None and ctx._mapper is None
        return
    for spin in (True, False):
        mapper = Mapper.load(ctx.device, spin=spin)
        assert mapper is not None
        src = ctx.upload(np.arange(64, dtype=np.uint32))
        ctx.synchronize()  # the upload may be a recorded copy: submit it before this direct copy
        staging = ctx.device.create_buffer(size=256, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        encoder = ctx.device.create_command_encoder()
        encoder.copy_buffer_to_buffer(src, 0, staging, 0, 256)
        ctx.queue.submit([encoder.finish()])
        request = mapper.map(staging, wgpu.MapMode.READ, 0, 256)
        with pytest.raises(RuntimeError, match="unmapped"):
            mapper.map(staging, wgpu.MapMode.READ, 0, 256)
        request.sync_wait()
        request.sync_wait()  # a second wait is harmless
        assert np.array_equal(np.frombuffer(staging.read_mapped(0, 256), np.uint32), np.arange(64))
        with pytest.raises(RuntimeError, match="unmapped"):
            mapper.map(staging, wgpu.MapMode.READ, 0, 256)
        staging.unmap()
        mapper.map(staging, wgpu.MapMode.READ, 0, 16).sync_wait()
        assert staging.read_mapped(0, 16).tobytes() == np.arange(4, dtype=np.uint32).tobytes()
        staging.unmap()


@pytest.mark.parametrize("value, software, expected", [
    ("", False, "spin"), ("", True, "block"), ("spin", True, "spin"), (" Block ", False, "block"),
    ("poller", False, "poller"),
])
def test_wait_mode(monkeypatch: pytest.MonkeyPatch, value: str, software: bool, expected: str) -> None:
    """GPUTENSOR_WAIT picks the wait style; unset, hardware adapters spin and software ones block."""
    from gputensor._backend.mapping import wait_mode

    monkeypatch.setenv("GPUTENSOR_WAIT", value)
    assert wait_mode(software) == expected


def test_wait_mode_rejects_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    from gputensor._backend.mapping import wait_mode

    monkeypatch.setenv("GPUTENSOR_WAIT", "sleepy")
    with pytest.raises(ValueError, match="GPUTENSOR_WAIT"):
        wait_mode(False)


# ---- //#unroll in kernel templates --------------------------------------------------------------
def test_unroll_loops_expands_marked_loops() -> None:
    """A marked loop becomes one block per iteration (constant bound from a literal or a const),
    nested loops and unmarked loops stay, and the unrolled kernel computes what the loop did."""
    from gputensor._backend.kernels import unroll_loops

    text = ("const ITEMS: u32 = 3u;\nfn f() {\n    //#unroll\n    for (var j = 0u; j < ITEMS; j++) {\n"
            "        a[j] = j;\n        for (var q = 0u; q < 2u; q++) { if (q == 1u) { break; } }\n    }\n"
            "    //#unroll\n    for (var b = 0u; b < 2u; b++) {\n        c += b;\n    }\n"
            "    for (var z = 0u; z < 4u; z++) { }\n}\n")
    out = unroll_loops(text)
    assert "//#unroll" not in out
    assert [out.count(f"{{ let j = {k}u;") for k in range(4)] == [1, 1, 1, 0]
    assert out.count("{ let b = 0u;") == out.count("{ let b = 1u;") == 1
    assert out.count("for (var q = 0u;") == 3 and out.count("for (var z = 0u;") == 1
    assert unroll_loops("fn g() {}\n") == "fn g() {}\n"


def test_unroll_loops_triangular_bounds() -> None:
    """An inner marked loop whose bounds name an outer marked loop's counter (``q < i``,
    ``j = i + 1u``, ``r = NB - i``) expands to only its live iterations, and its counter's value per block."""
    from gputensor._backend.kernels import unroll_loops

    text = ("const NB: u32 = 4u;\nfn f() {\n    //#unroll\n    for (var i = 0u; i < NB; i++) {\n"
            "        //#unroll\n        for (var q = 0u; q < i; q++) {\n            s += t[i * NB + q];\n        }\n"
            "        //#unroll\n        for (var j = i + 1u; j < NB; j++) {\n            y += t[j];\n        }\n"
            "        //#unroll\n        for (var r = NB - i; r < NB; r++) {\n            z += t[r];\n        }\n"
            "    }\n}\n")
    out = unroll_loops(text)
    assert "//#unroll" not in out and "for (" not in out
    lets = re.findall(r"let ([ijqr]) = (\d+)u;", out)
    assert [int(v) for n, v in lets if n == "i"] == [0, 1, 2, 3]
    blocks = out.split("{ let i = ")[1:]
    for i, block in enumerate(blocks):
        assert [int(v) for v in re.findall(r"let q = (\d+)u;", block)] == list(range(i))
        assert [int(v) for v in re.findall(r"let j = (\d+)u;", block)] == list(range(i + 1, 4))
        assert [int(v) for v in re.findall(r"let r = (\d+)u;", block)] == list(range(4 - i, 4))


@pytest.mark.parametrize("text", [
    "//#unroll\nlet x = 1;\n",                                                     # no loop below
    "fn f() {\n    //#unroll\n    for (var j = 0u; j < N; j++) {\n    }\n}\n",       # bound not a constant
    "fn f() {\n    //#unroll\n    for (var j = 0u; j < 99u; j++) {\n    }\n}\n",     # too long
    "fn f() {\n    //#unroll\n    for (var j = 0u; j < 2u; j++) {\n        break;\n    }\n}\n",
    "fn f() {\n    //#unroll\n    for (var j = 0u; j < 2u; j++) {\n        if (j == 0u) { continue; }\n    }\n}\n",
])
def test_unroll_loops_rejects_unsupported(text: str) -> None:
    from gputensor._backend.kernels import unroll_loops

    with pytest.raises(ValueError, match="unroll"):
        unroll_loops(text)


def test_unrolled_kernel_runs(ctx: WgpuContext) -> None:
    """A kernel whose marked loop indexes a private array gives the loop's results."""
    from gputensor._backend.kernels import unroll_loops

    src = unroll_loops(
        "struct P { n: u32, }\n@group(0) @binding(0) var<uniform> params: P;\n"
        "@group(0) @binding(1) var<storage, read_write> out: array<u32>;\n"
        "const ITEMS: u32 = 4u;\n@compute @workgroup_size(1)\nfn main() {\n"
        "    var acc: array<u32, ITEMS>;\n    //#unroll\n    for (var j = 0u; j < ITEMS; j++) {\n"
        "        acc[j] = params.n * (j + 1u);\n    }\n    //#unroll\n    for (var j = 0u; j < ITEMS; j++) {\n"
        "        out[j] = acc[ITEMS - 1u - j] + j;\n    }\n}\n")
    buf = ctx.create_storage(16)
    ctx.dispatch("unroll_test", [5], [(buf, 0, 16)], (1, 1, 1), source=src)
    assert np.frombuffer(ctx.readback(buf, 0, 16), np.uint32).tolist() == [20, 16, 12, 8]


def test_bad_unroll_in_a_template_is_an_invalid_argument(ctx: WgpuContext) -> None:
    """A malformed //#unroll in a rendered template is an invalid argument naming the directive:
    BackendError at the backend, ValueError through a user kernel."""
    import gputensor as gt
    from gputensor._backend import kernels

    k = gt.ElementwiseKernel("float32 x", "float32 z", "//#unroll\nz = x;", "bad_unroll")
    with pytest.raises(ValueError, match="unroll"):
        k(gt.asarray(np.ones(4, np.float32)))
    original = kernels.render

    def render(name, defines=None):  # noqa: ANN001, ANN202
        return kernels.unroll_loops(original(name, defines) + "\n//#unroll\n")

    kernels.render = render
    try:
        with raises_kind(BackendErrorKind.INVALID_ARGUMENT):
            ctx.pipeline("patch_bytes", 7, None)  # 7 bindings: not compiled before, so rendered
    finally:
        kernels.render = original
