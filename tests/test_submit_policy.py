"""When the open command batch is submitted (``context.py``'s submit policies, the
``submit_policy`` knob): deferral while the device is busy, submits when it may be idle, the
bounds that still hold (``MAX_BATCH``, the pending-work cap), and results, large host writes and
out-of-memory errors across many large operations recorded without a sync."""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator

import numpy as np
import pytest

import gputensor as gt
from gputensor._backend import config
from gputensor._backend import submit_policy
from gputensor._backend import transfers as transfers_mod
from gputensor._dispatch import backend as get_backend

N = 1 << 14  # int32 elements of each operand: 64 KiB, past the shrunken flush bound below


def _ctx():
    return get_backend().context


def _idle() -> None:
    """Wait for the device so that the context's estimate starts from an idle device."""
    ctx = _ctx()
    gt.synchronize()
    float(gt.sum(gt.zeros(4)))  # a readback: the wait resets the flush bound and the estimate
    assert ctx._busy_until == 0.0 and ctx._flush_bytes == submit_policy.FLUSH_BYTES


def _busy(seconds: float = 600.0) -> None:
    """Make the context believe the device has ``seconds`` of submitted work left."""
    _ctx()._busy_until = time.perf_counter() + seconds


def _stats() -> tuple[int, int]:
    stats = _ctx().stats
    return stats["submits"], stats["submits_deferred"]


@pytest.fixture()
def small_bound(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A flush bound of 16 KiB (each op below binds more), from an idle device."""
    monkeypatch.setattr(submit_policy, "FLUSH_BYTES", 16 << 10)
    with gt.fusion(False):
        _idle()
        yield
    gt.synchronize()
    monkeypatch.undo()
    _idle()


def _chain(x: gt.GpuArray, steps: int) -> list[gt.GpuArray]:
    """``steps`` results of y = y + x from y = x (each a dispatch binding 3 * 64 KiB)."""
    out, y = [], x
    for _ in range(steps):
        y = y + x
        out.append(y)
    return out


def _check_chain(ys: list[gt.GpuArray], x_np: np.ndarray) -> None:
    for k, y in enumerate(ys):
        np.testing.assert_array_equal(gt.asnumpy(y), x_np * (k + 2))


def test_work_policy_defers_while_the_device_is_busy(small_bound: None) -> None:
    x_np = np.arange(N, dtype=np.int32)
    x = gt.asarray(x_np)
    _idle()
    with config.override(submit_policy="work"):
        _busy()
        submits, deferred = _stats()
        ys = _chain(x, 20)
        after = _stats()
    assert after[0] == submits, "a busy device got submits it did not need"
    assert after[1] - deferred == 20
    gt.synchronize()
    _check_chain(ys, x_np)


def test_bytes_policy_submits_at_the_bound(small_bound: None) -> None:
    x_np = np.arange(N, dtype=np.int32)
    x = gt.asarray(x_np)
    _idle()
    with config.override(submit_policy="bytes"):
        _busy()
        submits, deferred = _stats()
        ys = _chain(x, 20)
        after = _stats()
    assert after[0] - submits >= 3  # the bound doubles: 1, 2, 4, ... commands a submit
    assert after[1] == deferred
    _check_chain(ys, x_np)


def test_work_policy_submits_at_once_on_an_idle_device(small_bound: None) -> None:
    x = gt.asarray(np.arange(N, dtype=np.int32))
    _idle()
    with config.override(submit_policy="work"):
        submits, _ = _stats()
        before = time.perf_counter()
        y = x + x
        assert _stats()[0] == submits + 1
        # the estimate now counts that work: the gap of a submit plus its bytes
        assert _ctx()._busy_until >= before + submit_policy.SUBMIT_GAP_S + 3 * 4 * N * _ctx()._work_rate()
    np.testing.assert_array_equal(gt.asnumpy(y), 2 * np.arange(N, dtype=np.int32))


def test_work_policy_caps_the_pending_work(small_bound: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(submit_policy, "SUBMIT_PENDING_MAX_S", 1e-12)
    x_np = np.arange(N, dtype=np.int32)
    x = gt.asarray(x_np)
    _idle()
    with config.override(submit_policy="work"):
        _busy()
        submits, deferred = _stats()
        ys = _chain(x, 6)
        after = _stats()
    assert after[1] == deferred and after[0] - submits >= 4  # as 'bytes': 1, 2, 4, ... commands a submit
    _check_chain(ys, x_np)


def test_work_policy_keeps_max_batch(small_bound: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(submit_policy, "MAX_BATCH", 8)
    x_np = np.arange(N, dtype=np.int32)
    x = gt.asarray(x_np)
    _idle()
    with config.override(submit_policy="work"):
        _busy()
        submits, _ = _stats()
        ys = _chain(x, 20)
        assert _stats()[0] - submits == 20 // 8
    _check_chain(ys, x_np)


def test_bandwidth_knob_sets_the_estimate(small_bound: None) -> None:
    ctx = _ctx()
    with config.override(submit_bandwidth=1):  # 1 GB/s
        assert ctx._work_rate() == pytest.approx(1e-9)
    with config.override(submit_bandwidth=0):
        gbps = submit_policy.SUBMIT_GBPS.get(str(ctx.adapter_info.get("adapter_type")), submit_policy.SUBMIT_GBPS_OTHER)
        assert ctx._work_rate() == pytest.approx(1.0 / (gbps * 1e9))


@pytest.mark.parametrize("policy", ["work", "bytes"])
def test_many_large_ops_writes_and_reads_without_a_sync(policy: str, small_bound: None,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A chain of dependent ops, large host writes (several chunks, each submitted) and reads in
    between, the device believed busy (work: every size check defers): every value as NumPy's."""
    monkeypatch.setattr(transfers_mod, "STAGED_UPLOAD_MAX", 4 << 10)
    monkeypatch.setattr(transfers_mod, "TRANSFER_CHUNK", 16 << 10)
    rng = np.random.default_rng(3)
    want = rng.integers(-1000, 1000, N, dtype=np.int32)
    y = gt.asarray(want)
    _idle()
    with config.override(submit_policy=policy):
        for step in range(40):
            if step % 10 == 0:
                _busy()
            addend = rng.integers(-1000, 1000, N, dtype=np.int32)
            y = y * 3 - gt.asarray(addend)  # the upload: 4 staged chunks
            want = want * 3 - addend
            if step % 13 == 12:
                assert int(y[step]) == int(want[step])
                np.testing.assert_array_equal(gt.asnumpy(y[:: 7]), want[:: 7])
    np.testing.assert_array_equal(gt.asnumpy(y), want)


def test_out_of_memory_still_raises_while_submits_are_deferred(small_bound: None) -> None:
    pool = gt.get_default_memory_pool()
    gc.collect()
    pool.free_all_blocks()
    base = pool.total_bytes()
    chunk = 1 << 20
    try:
        with config.override(submit_policy="work"):
            pool.set_limit(base + 8 * chunk)
            _busy()
            held = []
            with pytest.raises(MemoryError, match="limit"):
                for _ in range(32):
                    held.append(gt.full((chunk // 4,), 1.5, dtype=gt.float32) * 2.0)
            assert held and len(held) <= 8
            del held
            gc.collect()
            _busy()
            again = gt.full((chunk // 4,), 2.5, dtype=gt.float32) * 2.0
            assert float(gt.sum(again)) == 5.0 * (chunk // 4)
    finally:
        pool.set_limit(0)


def test_public_method_path_without_native_calls(small_bound: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without wgpu-native's batch calls (another wgpu-py, Dawn) the public methods record,
    copy and submit: same results."""
    monkeypatch.setattr(_ctx(), "_calls", None)
    x_np = np.arange(N, dtype=np.int32)
    x = gt.asarray(x_np)
    ys = _chain(x, 5)
    assert float(gt.sum(gt.astype(ys[-1][:4], gt.float32))) == float((x_np[:4] * 6).sum())
    z = gt.concat([ys[0], ys[1]])
    _check_chain(ys, x_np)
    np.testing.assert_array_equal(gt.asnumpy(z), np.concatenate([x_np * 2, x_np * 3]))


def test_submit_policy_knob_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUTENSOR_SUBMIT_POLICY", raising=False)
    assert config.environment_value("submit_policy") == "bytes"
    monkeypatch.setenv("GPUTENSOR_SUBMIT_POLICY", " Work ")
    assert config.environment_value("submit_policy") == "work"
    monkeypatch.setenv("GPUTENSOR_SUBMIT_POLICY", "often")
    with pytest.raises(ValueError, match="GPUTENSOR_SUBMIT_POLICY"):
        config.environment_value("submit_policy")


def test_harness_ab_variants() -> None:
    from benchmarks._harness import ab_variants

    assert ab_variants(["submit_policy=bytes"]) == [("[submit_policy=bytes]", {"submit_policy": "bytes"})]
    assert ab_variants(["submit_policy=work,submit_bandwidth=900"]) == [
        ("[submit_policy=work]", {"submit_policy": "work"}), ("[submit_bandwidth=900]", {"submit_bandwidth": 900})]
    flipped = ab_variants(["reduce_vec4"])
    assert flipped == [(f"[reduce_vec4={int(not config.value('reduce_vec4'))}]",
                        {"reduce_vec4": not config.value("reduce_vec4")})]
    with pytest.raises(ValueError, match="unknown gputensor knob"):
        ab_variants(["no_such_knob=1"])


def test_host_cost_submit_trace_rows() -> None:
    from benchmarks import host_cost

    rows = host_cost.submit_trace((64, 256), calls=3, repeats=1)
    assert [(r["call"], r["policy"]) for r in rows] == [
        (label, policy) for label, _ in host_cost.SUBMIT_CALLS for policy in ("work", "bytes")]
    assert all(r["host_us"] > 0 and r["wall_us"] >= r["host_us"] and r["submits"] >= 1 for r in rows)
    text = host_cost.format_submit_trace(rows, "test", (64, 256))
    assert "| gt.sum(x) | work | 3 |" in text


def test_submit_commands_knob_bounds_the_batch() -> None:
    """``submit_commands`` submits a batch at that many commands (in place of ``MAX_BATCH``)."""
    x_np = np.arange(16, dtype=np.int32)
    x = gt.asarray(x_np)
    with gt.fusion(False), config.override(submit_commands=4):
        _idle()
        submits, _ = _stats()
        ys = _chain(x, 12)
        assert _stats()[0] - submits == 12 // 4
    _check_chain(ys, x_np)


def test_submit_bytes_knob_sets_the_first_bound() -> None:
    """``submit_bytes`` is the flush bound after a wait; a bound past every batch submits on
    the command count only."""
    x_np = np.arange(N, dtype=np.int32)
    x = gt.asarray(x_np)
    with gt.fusion(False), config.override(submit_bytes=16 << 10):
        _idle_at(16 << 10)
        submits, _ = _stats()
        ys = _chain(x, 6)
        assert _stats()[0] - submits >= 3  # each op binds more than the bound: 1, 2, 4, ... a submit
        _check_chain(ys, x_np)
    with gt.fusion(False), config.override(submit_bytes=1 << 40):
        _idle_at(1 << 40)
        submits, _ = _stats()
        ys = _chain(x, 6)
        assert _stats()[0] == submits
    _check_chain(ys, x_np)


def _idle_at(bound: int) -> None:
    """``_idle`` under a ``submit_bytes`` override: the wait resets the flush bound to it."""
    gt.synchronize()
    float(gt.sum(gt.zeros(4)))
    assert _ctx()._flush_bytes == bound
