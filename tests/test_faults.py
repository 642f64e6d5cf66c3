"""Faults against NumPy and the documented rules: a lost device and ``gt.reset()``, out of memory
under a pool limit, huge requests, integer negative powers, deterministic scatters with duplicate
indices, and an adapter that fails at device creation.

Tests that lose or reset the shared device run in a subprocess, so the other tests keep theirs.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import gputensor as gt
from gputensor._backend import BackendError, WebGpuBackend, WgpuContext, config, device_state, sort_common
from gputensor._backend.memory_pool import MemoryPool, limit_from_env, parse_size

ROOT = Path(__file__).resolve().parents[1]


def run_script(code: str, timeout: float = 120) -> str:
    """Run ``code`` in a fresh interpreter on this checkout; its stdout (fails on a non-zero exit)."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, PYTHONPATH=path, XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp"))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


# ---- device loss ----------------------------------------------------------------------------------
def test_lost_device_raises_and_reset_continues() -> None:
    """``device.destroy()``: the next call raises DeviceLostError (no hang, no crash), so does every
    later one and every old array; ``gt.reset()`` gives a new device on which everything works,
    while the arrays of the lost one keep saying so."""
    out = run_script("""
        import numpy as np, gputensor as gt
        from gputensor._dispatch import backend
        x = gt.asarray(np.arange(6, dtype=np.float32))
        assert (x + 1).get().tolist() == [1, 2, 3, 4, 5, 6]
        backend().context.device.destroy()
        for step in (lambda: (x * 2).get(), lambda: gt.ones(3), lambda: gt.sort(x),
                     lambda: x.get(), gt.synchronize, lambda: gt.zeros(1 << 20)):
            try:
                step()
            except gt.DeviceLostError as exc:
                assert "lost" in str(exc) and "gputensor.reset()" in str(exc), exc
            else:
                raise AssertionError("no DeviceLostError")
        gt.reset()
        y = gt.asarray(np.arange(5))
        assert (y * 3).get().tolist() == [0, 3, 6, 9, 12]
        assert gt.sort(gt.asarray([3.0, 1.0, 2.0])).get().tolist() == [1, 2, 3]
        assert float(gt.sum(gt.ones(1000))) == 1000
        for step in (x.get, lambda: (x + 1).get(), lambda: gt.sum(x)):
            try:
                step()
            except gt.DeviceLostError as exc:
                assert "lost or reset" in str(exc), exc
            else:
                raise AssertionError("an old array worked")
        del x  # freeing an array of the lost device is silent
        gt.reset()  # a reset on a healthy device works too
        assert gt.arange(3).get().tolist() == [0, 1, 2]
        print("ok")
    """)
    assert out.strip().endswith("ok")


def test_lost_context_fails_fast(backend) -> None:
    """A second backend on its own device: once the device is destroyed, every entry point raises
    DeviceLostError at once, pointers of an earlier backend are named as such, and the shared
    backend is unaffected."""
    be = WebGpuBackend(WgpuContext.new())
    ptr = be.alloc(64)
    be.copy_htod(ptr, np.arange(16, dtype=np.float32))
    be.context.device.destroy()
    with pytest.raises(device_state.DeviceLostError):
        be.synchronize()
    assert device_state.is_lost_text(be._ctx.lost), be._ctx.lost  # the implementation's words
    t0 = time.perf_counter()
    for step in (lambda: be.alloc(64), lambda: be.alloc(1 << 30), lambda: be.copy_dtoh(bytearray(64), ptr),
                 lambda: be.context, lambda: be.copy_htod(ptr, bytes(8))):
        with pytest.raises(device_state.DeviceLostError):
            step()
    assert time.perf_counter() - t0 < 5
    be.free(ptr)  # freeing on a lost device is fine
    later = WebGpuBackend(backend.context)  # a backend made later: earlier ids are stale
    with pytest.raises(device_state.DeviceLostError, match="lost or reset"):
        later.resolve(ptr, 4)
    with pytest.raises(BackendError, match="unknown or freed"):
        later.resolve(1 << 62, 4)  # an id never handed out: an ordinary bad pointer
    np.testing.assert_array_equal((gt.arange(4) * 2).get(), [0, 2, 4, 6])


def test_validation_error_keeps_the_device() -> None:
    """A validation error (a shader that does not compile, a binding past a buffer) raises an
    ordinary error, does not mark the device lost, and later work runs."""
    bad = gt.RawKernel("@group(0) @binding(0) var<storage, read_write> a: array<f32>;\n"
                       "@compute @workgroup_size(1) fn main() { a[0] = nope; }")
    with pytest.raises(gt.KernelCompileError):
        bad(1, (gt.zeros(4, dtype=gt.float32),))
    from gputensor._dispatch import backend

    ctx = backend().context
    with pytest.raises(BackendError) as info:
        ctx.dispatch("patch_bytes", [0, 0, 0], [(ctx._fence_src, 0, 1 << 20)], (1, 1, 1))
    assert not isinstance(info.value, device_state.DeviceLostError)
    assert ctx.lost is None
    np.testing.assert_array_equal((gt.arange(5) + 1).get(), np.arange(1, 6))


def test_lost_text_detection() -> None:
    assert device_state.is_lost_text("Validation Error\n\nCaused by:\n  In wgpuDeviceCreateBuffer\n    Parent device is lost")
    assert device_state.is_lost_text('[Device "gputensor"] is lost.\n - While calling [Device "gputensor"].CreateShaderModule(...)')
    assert device_state.is_lost_text("The WGPU device was lost (destroyed)")
    assert not device_state.is_lost_text("Buffer is invalid")


# ---- adapter fallback -----------------------------------------------------------------------------
class _Failing:
    """A fake adapter ranked first (a discrete Vulkan GPU, enumerated first) whose device creation
    fails."""

    info = {"device": "FakeGPU 9000", "vendor": "fake", "description": "", "backend_type": "Vulkan",
            "adapter_type": "DiscreteGPU"}
    features: frozenset[str] = frozenset()
    limits: dict[str, int] = {}

    def __init__(self) -> None:
        self.calls = 0

    def request_device_async(self, **kwargs):
        self.calls += 1
        raise RuntimeError("Request device failed: Validation Error: Parent device is lost")


class _Ready:
    def __init__(self, value):
        self.value = value

    def sync_wait(self):
        return self.value


def test_adapter_failing_at_device_creation_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    from gputensor._backend.implementation import wgpu

    real = wgpu.gpu.enumerate_adapters_sync()
    fake = _Failing()
    monkeypatch.setattr(wgpu.gpu, "enumerate_adapters_async", lambda: _Ready([fake] + list(real)))
    monkeypatch.delenv("GPUTENSOR_ADAPTER", raising=False)
    ctx = WgpuContext.new()  # the fake one fails: the next adapter is used
    assert fake.calls == 1 and ctx.adapter_info["device"] != "FakeGPU 9000"
    ctx.device.destroy()
    with pytest.raises(BackendError, match=r"FakeGPU 9000 .*GPUTENSOR_ADAPTER='fakegpu'.*failed to create"):
        WgpuContext.new("fakegpu")  # asked for by name: the error names it, no fallback
    monkeypatch.setattr(wgpu.gpu, "enumerate_adapters_async", lambda: _Ready([fake]))
    with pytest.raises(BackendError, match=r"no adapter could create a device: FakeGPU 9000"):
        WgpuContext.new()


# ---- out of memory under a pool limit -------------------------------------------------------------
def test_fill_pool_limit_then_recover() -> None:
    """Allocating until the pool's limit raises MemoryError (after the cache was released), and
    everything works again once the arrays are freed."""
    pool = gt.get_default_memory_pool()
    gc.collect()
    pool.free_all_blocks()
    base = pool.total_bytes()
    chunk = 1 << 20
    try:
        pool.set_limit(base + 16 * chunk)
        cached = [gt.empty((chunk // 4,), dtype=gt.float32) for _ in range(3)]
        del cached  # cached blocks: released when the limit is reached
        held = []
        with pytest.raises(MemoryError, match="limit"):
            for _ in range(64):
                held.append(gt.full((chunk // 4,), 1.5, dtype=gt.float32))
        assert 12 <= len(held) <= 16
        assert pool.total_bytes() <= base + 16 * chunk
        del held
        gc.collect()
        again = [gt.full((chunk // 4,), 2.5, dtype=gt.float32) for _ in range(8)]
        assert float(gt.sum(again[-1])) == 2.5 * (chunk // 4)
        del again
    finally:
        pool.set_limit(0)


def test_pool_limit_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_size("1048576") == 1 << 20
    assert parse_size("512M") == 512 << 20
    assert parse_size("2GiB") == 2 << 30
    assert parse_size("1.5k") == 1536
    with pytest.raises(ValueError):
        parse_size("lots")
    monkeypatch.setenv("GPUTENSOR_POOL_LIMIT", "64K")
    assert limit_from_env() == 64 << 10
    pool = MemoryPool(lambda n: bytearray(n), lambda b: None)
    assert pool.get_limit() == 64 << 10
    monkeypatch.setenv("GPUTENSOR_POOL_LIMIT", "")
    assert MemoryPool(lambda n: bytearray(n), lambda b: None).get_limit() == 0
    monkeypatch.setenv("GPUTENSOR_POOL_LIMIT", "lots")
    with pytest.raises(ValueError, match="GPUTENSOR_POOL_LIMIT"):
        MemoryPool(lambda n: bytearray(n), lambda b: None)
    with config.override(pool_limit=1 << 20):  # a row of the knob table
        assert MemoryPool(lambda n: bytearray(n), lambda b: None).get_limit() == 1 << 20


def test_pool_waits_before_the_retry() -> None:
    calls = []

    class Dev:
        live = 0

        def allocate(self, n):
            if self.live + n > 4096:
                raise device_state.BackendError(device_state.BackendErrorKind.OUT_OF_MEMORY, "full")
            self.live += n
            return bytearray(n)

        def release(self, b):
            self.live -= len(b)

    dev = Dev()
    pool = MemoryPool(dev.allocate, dev.release, wait=lambda: calls.append("wait"))
    keep = pool.malloc(4096)[0]
    with pytest.raises(BackendError, match="out of device memory"):
        pool.malloc(256)
    assert calls == ["wait"] and len(keep) == 4096


# ---- huge requests --------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: gt.arange(2**40), lambda: gt.arange(0.0, 2.0**40), lambda: gt.linspace(0, 1, 2**40),
    lambda: gt.zeros((2**40,)), lambda: gt.empty((2**40,)), lambda: gt.full((2**40,), 3.0),
    lambda: gt.ones((2**20, 2**20)), lambda: gt.eye(2**20), lambda: gt.zeros((2**40,), dtype=gt.uint8),
    lambda: gt.arange(0, 2**41, 2, dtype=gt.int32),
], ids=["arange", "arange_float", "linspace", "zeros", "empty", "full", "ones", "eye", "zeros_u8", "arange_step"])
def test_huge_requests_raise_at_once(make) -> None:
    t0 = time.perf_counter()
    with pytest.raises(MemoryError):
        make()
    assert time.perf_counter() - t0 < 2


def test_requests_past_the_pool_limit_raise_at_once() -> None:
    pool = gt.get_default_memory_pool()
    try:
        pool.set_limit(pool.used_bytes() + (1 << 20))
        with pytest.raises(MemoryError, match="pool's limit"):
            gt.arange(1 << 22)  # 32 MiB of int64: refused before the host computes the values
        with pytest.raises(MemoryError, match="pool's limit"):
            gt.linspace(0, 1, 1 << 22)
        with pytest.raises(MemoryError):
            gt.zeros((1 << 22,))
    finally:
        pool.set_limit(0)
    assert gt.arange(10).shape == (10,)
    with pytest.raises(ValueError):
        gt.arange(0.0, float("inf"))


# ---- integer ** negative --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint32"])
def test_integer_negative_scalar_power_raises(dtype: str) -> None:
    x = gt.asarray(np.array([2, 1, 3], dtype=dtype))
    for call in (lambda: x ** -1, lambda: gt.pow(x, -2), lambda: x.__ipow__(-1)):
        with pytest.raises(ValueError, match="Integers to negative integer powers are not allowed"):
            call()
    np.testing.assert_array_equal((x ** 2).get(), np.array([4, 1, 9], dtype=dtype))
    np.testing.assert_array_equal((x ** 0).get(), np.ones(3, dtype=dtype))
    f = gt.asarray(np.array([2.0, 4.0], np.float32))
    np.testing.assert_array_equal((f ** -1).get(), np.array([0.5, 0.25], np.float32))


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_integer_negative_array_exponent_truncates(dtype: str) -> None:
    """Device exponents are not read back: a negative entry gives trunc(x1 ** x2) (1 for base 1,
    +-1 for base -1 by parity, else 0) -- the documented rule -- with no error."""
    base = np.array([2, 1, -1, -1, 0, 3, -3, 5], dtype=dtype)
    expo = np.array([-1, -5, -1, -2, -1, -2, -1, 2], dtype=dtype)
    got = (gt.asarray(base) ** gt.asarray(expo)).get()
    with np.errstate(divide="ignore"):
        expect = np.trunc(base.astype(np.float64) ** expo.astype(np.float64))
    expect[~np.isfinite(expect)] = 0
    np.testing.assert_array_equal(got, expect.astype(dtype))
    np.testing.assert_array_equal((2 ** gt.asarray(expo)).get()[-1], 4)


# ---- deterministic scatters -----------------------------------------------------------------------
_IA = np.array([4, 0, -1, 2])  # 4 and -1 are the same row of an axis of 5
_IB = np.array([1, 3, -6, 6, 1, 0])  # 1 three times on an axis of 7


def _keys(key):
    return tuple(gt.asarray(k) if isinstance(k, np.ndarray) else k for k in key)


@pytest.mark.parametrize("dtype", ["float32", "int8", "int64", "float64", "uint16"])
def test_scatter_duplicates_last_write_wins(dtype: str) -> None:
    rng = np.random.default_rng(3)
    base = rng.integers(-60, 60, (5, 7, 6)).astype(dtype)
    keys = [(_IA, slice(None), slice(None, None, 2)), (1, _IB), (_IA,), (_IA, _IB[:4]),
            (slice(None), _IB, slice(1, 5)), (_IA[:, None], _IB[None, :4])]
    for key in keys:
        shape = base[key].shape
        for value in (rng.integers(-60, 60, shape).astype(dtype),  # a value per point
                      rng.integers(-60, 60, shape[-1:]).astype(dtype)):  # broadcast along the rest
            expect = base.copy()
            expect[key] = value
            x = gt.asarray(base)
            x[_keys(key)] = gt.asarray(value)
            np.testing.assert_array_equal(x.get(), expect, err_msg=f"{dtype} {key}")
    x = gt.asarray(base)
    x[_keys((_IA,))] = 7  # a scalar: every duplicate writes the same value
    expect = base.copy()
    expect[_IA] = 7
    np.testing.assert_array_equal(x.get(), expect)


def test_scatter_many_duplicates_under_parallelism() -> None:
    """A million points into 37 elements (and into packed bytes): the last one of each wins."""
    rng = np.random.default_rng(5)
    idx = rng.integers(-37, 37, 1 << 20)
    for dtype in (np.float32, np.int8):
        expect = np.zeros(37, dtype)
        values = (np.arange(1 << 20) % 101).astype(dtype)
        expect[idx] = values
        x = gt.zeros(37, dtype=getattr(gt, np.dtype(dtype).name))
        x[gt.asarray(idx)] = gt.asarray(values)
        np.testing.assert_array_equal(x.get(), expect)


def test_scatter_duplicates_across_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small binding windows: the destination is covered by several dispatches and the values by
    several boxes; the last write still wins everywhere."""
    monkeypatch.setattr(sort_common, "WINDOW_LIMIT", 1024)
    rng = np.random.default_rng(9)
    for dtype in (np.float32, np.int8, np.float64):
        base = rng.integers(-100, 100, (600, 3)).astype(dtype)
        idx = rng.integers(-600, 600, 2000)
        values = rng.integers(-100, 100, (2000, 3)).astype(dtype)
        expect = base.copy()
        expect[idx] = values
        x = gt.asarray(base)
        x[gt.asarray(idx)] = gt.asarray(values)
        np.testing.assert_array_equal(x.get(), expect, err_msg=str(dtype))
