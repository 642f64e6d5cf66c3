"""Small readbacks (``float(gt.sum(x))``): values through the short path, the parameter ring's
write skipped only when the device already holds the same bytes, and the spin wait's idle hook."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import gputensor as gt
from gputensor._backend import get_backend, implementation
from gputensor._backend.implementation import wgpu
from gputensor._backend.mapping import Mapper

from _compare import tolerance

_RTOL = tolerance("float32", "reduction")[0]  # the sums are float32


@pytest.fixture
def ctx() -> object:
    gt.asarray(np.zeros(1, np.float32))  # the device
    return get_backend().context


def test_scalar_round_trips_match_numpy(ctx: object) -> None:
    """Alternating sizes and dtypes (different parameters from one batch to the next) and
    repeated identical batches (the ring write skipped) give NumPy's values every time."""
    rng = np.random.default_rng(3)
    hosts = [rng.random(n, dtype=np.float32) for n in (1, 16, 1024, 16, 1000)]
    hosts += [rng.integers(-50, 50, n).astype(np.int32) for n in (7, 16)]
    arrays = [gt.asarray(h) for h in hosts]
    with gt.fusion(False):
        for _ in range(3):
            for h, a in zip(hosts, arrays):
                got = gt.sum(a)
                want = h.sum(dtype=np.float64)
                if h.dtype.kind == "i":
                    assert int(got) == int(want)
                else:
                    assert float(got) == pytest.approx(float(want), rel=_RTOL)
        skipped = ctx.stats.get("ring_writes_skipped", 0)
        for _ in range(5):
            assert float(gt.sum(arrays[1])) == pytest.approx(float(hosts[1].sum()), rel=_RTOL)
        assert ctx.stats.get("ring_writes_skipped", 0) >= skipped + 3
        # a larger kernel's parameters after the skipped ones: written again, values right
        assert float(gt.max(arrays[2])) == float(hosts[2].max())
        assert float(gt.sum(arrays[3])) == pytest.approx(float(hosts[3].sum()), rel=_RTOL)


@pytest.fixture
def spin_mapper(ctx: object, monkeypatch: pytest.MonkeyPatch) -> Iterator[Mapper]:
    if implementation.native_api() is None:
        pytest.skip("the mapper needs wgpu-native's internals (Dawn maps through the public API)")
    ctx.synchronize()
    mapper = Mapper.load(ctx.device, spin=True)
    monkeypatch.setattr(ctx, "_mapper", mapper)
    yield mapper
    ctx.synchronize()


def test_spin_wait_idle_hook_runs_at_most_once(ctx: object, spin_mapper: Mapper) -> None:
    """``Mapper.wait``'s idle hook runs once at most, only while the mapping is pending, and the
    mapping completes either way; small readbacks through the spin mapper stay exact."""
    src = ctx.upload(np.arange(64, dtype=np.uint32))
    ctx.synchronize()
    staging = ctx.device.create_buffer(size=256, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
    calls = []
    for _ in range(3):
        encoder = ctx.device.create_command_encoder()
        encoder.copy_buffer_to_buffer(src, 0, staging, 0, 256)
        ctx.queue.submit([encoder.finish()])
        request = spin_mapper.map(staging, wgpu.MapMode.READ, 0, 256)
        spin_mapper.wait(request, lambda: calls.append(request.status))
        assert np.array_equal(np.frombuffer(staging.read_mapped(0, 256), np.uint32), np.arange(64))
        staging.unmap()
    assert len(calls) <= 3 and all(status is None for status in calls)
    a = gt.asarray(np.arange(100, dtype=np.float32))
    with gt.fusion(False):
        for _ in range(5):
            assert float(gt.sum(a)) == 4950.0
            assert float(gt.sum(a * 2)) == 9900.0
    gt.synchronize()
