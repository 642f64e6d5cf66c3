"""gputensor.profile(): per-kernel timing. The host-time fallback (a context without the timestamp
hook or an adapter without timestamp queries -- stand-in contexts here -- and gpu=False on the real
one), the timestamp sink on its own, and the GPU-time path end to end through the context's hook
(``WgpuContext.timestamp_sink``, specified in gputensor/_backend/profiling.py)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from gputensor._backend.implementation import wgpu

import gputensor as gt
from gputensor import _profile
from gputensor._backend import get_backend
from gputensor._backend import profiling
from gputensor._backend.profiling import TimestampSink, has_timestamp_hook


@pytest.fixture(scope="module")
def backend():
    return get_backend()


MUL = gt.ElementwiseKernel("T x, T y", "T z", "z = x * y;", "prof_mul")
ADD1 = gt.ElementwiseKernel("T x", "T z", "z = x + T(1);", "prof_add1")


def _work(n: int = 4096) -> gt.GpuArray:
    a = gt.asarray(np.arange(n, dtype=np.float32))
    MUL(a, a), ADD1(a)  # compile outside the profiled blocks
    return a


def _no_wrapper_left(ctx) -> bool:
    return "dispatch" not in vars(ctx) or not getattr(vars(ctx)["dispatch"], "__qualname__", "").startswith(
        "_Session.install")


# ---------------------------------------------------------------------------------------------
# host-time mode
# ---------------------------------------------------------------------------------------------
def test_host_mode_counts_and_names(backend) -> None:
    a = _work()
    with gt.profile(gpu=False) as prof:
        for _ in range(3):
            MUL(a, a)
        ADD1(a)
        _ = a * 2.0  # a built-in op: the context's kernel name
    assert prof.gpu_timing is False and "host" in prof.note
    names = {r.name: r for r in prof.records}
    assert names["prof_mul"].count == 3 and names["prof_add1"].count == 1
    assert any(name not in ("prof_mul", "prof_add1") for name in names)  # the built-in multiply
    for r in prof.records:
        assert r.gpu_total_s is None and r.gpu_mean_s is None
        assert r.host_total_s is not None and r.host_total_s >= 0
        assert r.host_mean_s == pytest.approx(r.host_total_s / r.count)
    totals = [r.total_s for r in prof.records]
    assert totals == sorted(totals, reverse=True)
    assert [e.name for e in prof.events][:4] == ["prof_mul"] * 3 + ["prof_add1"]
    table = str(prof)
    assert "prof_mul" in table and "host total (ms)" in table and prof.note in table
    assert prof.wall_s > 0
    assert _no_wrapper_left(backend.context)


def test_results_only_after_exit_and_nesting(backend) -> None:
    a = _work()
    with gt.profile(gpu=False) as outer:
        MUL(a, a)
        with pytest.raises(RuntimeError, match="after"):
            _ = outer.records
        assert "running" in str(outer) and "running" in repr(outer)
        with gt.profile(gpu=False) as inner:
            ADD1(a)
        MUL(a, a)
    assert [(r.name, r.count) for r in inner.records] == [("prof_add1", 1)]
    counts = {r.name: r.count for r in outer.records}
    assert counts == {"prof_mul": 2, "prof_add1": 1}
    assert "Profile(gpu_timing=False" in repr(outer)
    assert _no_wrapper_left(backend.context)


def test_exception_inside_block_still_uninstalls(backend) -> None:
    a = _work()
    with pytest.raises(ZeroDivisionError):
        with gt.profile(gpu=False) as prof:
            MUL(a, a)
            1 / 0  # noqa: B018
    assert [(r.name, r.count) for r in prof.records] == [("prof_mul", 1)]
    assert _no_wrapper_left(backend.context)
    with gt.profile(gpu=False) as empty:
        pass
    assert empty.records == [] and "0 dispatches" in empty.table()


def test_other_threads_are_recorded(backend) -> None:
    a = _work()
    with gt.profile(gpu=False) as prof:
        t = threading.Thread(target=lambda: MUL(a, a))
        t.start()
        t.join()
    assert {r.name: r.count for r in prof.records} == {"prof_mul": 1}


def test_automatic_mode_reports_why(backend) -> None:
    ctx = backend.context
    a = _work()
    with gt.profile() as prof:
        MUL(a, a)
    if "timestamp-query" not in ctx.features:
        assert not prof.gpu_timing and "timestamp-query" in prof.note
    elif not has_timestamp_hook(ctx):
        assert not prof.gpu_timing and "hook" in prof.note
        with pytest.raises(RuntimeError, match="hook"):
            with gt.profile(gpu=True):
                pass
        assert _no_wrapper_left(ctx)
    else:
        assert prof.gpu_timing and prof.records[0].gpu_total_s > 0


class _StandInContext:
    """A context without the hook: features, a dispatch method, nothing else."""

    def __init__(self, features: set[str]) -> None:
        self.features = frozenset(features)
        self.calls: list[str] = []

    def dispatch(self, name, params, buffers, workgroups, defines=None, **kwargs):
        self.calls.append(name)


def test_fallback_selection_without_hook_or_feature() -> None:
    """Without the hook (or without timestamp-query) the session falls back to host times by
    wrapping the context's dispatch for the block, says why, and restores the method after."""
    no_hook = _StandInContext({"timestamp-query"})
    session = profiling.Session(no_hook, None)
    assert not session.gpu and "no timestamp hook" in session.note
    session.install()
    assert "dispatch" in vars(no_hook)
    with _profile.label("labelled"):
        no_hook.dispatch("k1", [], [], (1, 1, 1))
    no_hook.dispatch("k2", [], [], (1, 1, 1), None)
    start = 0
    events = session.events(start, session.mark())
    session.uninstall()
    assert "dispatch" not in vars(no_hook) and no_hook.calls == ["k1", "k2"]
    assert [e.name for e in events] == ["labelled", "k2"]
    assert all(e.gpu_s is None and e.host_s is not None and e.host_s >= 0 for e in events)
    with pytest.raises(RuntimeError, match="no timestamp hook"):
        profiling.Session(no_hook, True)

    no_feature = _StandInContext(set())
    no_feature.timestamp_sink = None
    session = profiling.Session(no_feature, None)
    assert not session.gpu and "timestamp-query" in session.note

    with_hook = _StandInContext({"timestamp-query"})
    with_hook.timestamp_sink = None
    assert profiling.Session(with_hook, None).gpu
    assert not profiling.Session(with_hook, False).gpu


def test_labels() -> None:
    assert _profile.current_label("dflt") == "dflt"
    with _profile.label("outer"):
        assert _profile.current_label("x") == "outer"
        with _profile.label("inner"):
            assert _profile.current_label("x") == "inner"
        assert _profile.current_label("x") == "outer"
    assert _profile.current_label("x") == "x"


# ---------------------------------------------------------------------------------------------
# the timestamp sink and the GPU-time path
# ---------------------------------------------------------------------------------------------
_BUSY = """
@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    var x = a[g.x];
    for (var k = 0; k < 200; k++) { x = x * 1.0001 + 0.5; }
    a[g.x] = x;
}
"""


@pytest.mark.requires("timestamp-query")
def test_timestamp_sink_on_its_own(backend, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sink hands out query pairs (rolling over to new query sets) and reads GPU times back."""
    ctx = backend.context
    monkeypatch.setattr(TimestampSink, "SET_SIZE", 4)  # two dispatches per query set
    dev = ctx.device
    pipe = dev.create_compute_pipeline(layout="auto", compute={
        "module": dev.create_shader_module(code=_BUSY), "entry_point": "main"})
    buf = dev.create_buffer(size=4 * 64 * 64, usage=wgpu.BufferUsage.STORAGE)
    entry = {"binding": 0, "resource": {"buffer": buf, "offset": 0, "size": buf.size}}
    group = dev.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=[entry])
    sink = TimestampSink(dev)
    encoder = dev.create_command_encoder()
    for k in range(5):
        with _profile.label(f"busy{k % 2}"):
            writes = sink.timestamp_writes("raw", None)
        p = encoder.begin_compute_pass(timestamp_writes=writes)
        p.set_pipeline(pipe)
        p.set_bind_group(0, group)
        p.dispatch_workgroups(64)
        p.end()
    ctx.queue.submit([encoder.finish()])
    assert len(sink._sets) == 3 and [s for _, s, _ in sink.slots] == [0, 0, 1, 1, 2]
    times = sink.read(ctx, sink.slots)
    assert len(times) == 5 and all(t is not None and 0 < t < 10 for t in times)
    assert [tag for tag, _, _ in sink.slots] == ["busy0", "busy1"] * 2 + ["busy0"]
    assert sink.read(ctx, []) == []
    assert profiling.timestamp_period(ctx.queue) > 0


@pytest.fixture
def timestamp_hook(backend):
    """The context, with the profiling hook (its tests require timestamp-query)."""
    ctx = backend.context
    assert has_timestamp_hook(ctx), "WgpuContext lost its timestamp_sink hook (see gputensor/_backend/profiling.py)"
    return ctx


@pytest.mark.requires("timestamp-query")
def test_gpu_mode_through_the_hook(timestamp_hook, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = timestamp_hook
    monkeypatch.setattr(TimestampSink, "SET_SIZE", 6)  # force several query sets
    a = _work(1 << 16)
    with gt.profile() as prof:
        for _ in range(4):
            MUL(a, a)
        b = ADD1(a)
        c = a * 3.0
    assert prof.gpu_timing and "timestamp" in prof.note
    names = {r.name: r for r in prof.records}
    assert names["prof_mul"].count == 4 and names["prof_add1"].count == 1
    for r in prof.records:
        assert r.gpu_total_s is not None and r.gpu_total_s > 0 and r.host_total_s is None
        assert r.gpu_mean_s == pytest.approx(r.gpu_total_s / r.count)
    assert all(e.gpu_s is not None and e.gpu_s > 0 for e in prof.events)
    assert "GPU total (ms)" in prof.table()
    assert ctx.timestamp_sink is None  # uninstalled
    # results are unaffected by the one-pass-per-dispatch recording
    host = np.arange(1 << 16, dtype=np.float32)
    np.testing.assert_array_equal(gt.asnumpy(b), host + 1)
    np.testing.assert_array_equal(gt.asnumpy(c), host * 3)
    with gt.profile(gpu=True) as forced:
        MUL(a, a)
    assert forced.gpu_timing and forced.records[0].count == 1
    with gt.profile(gpu=False) as host_only:
        MUL(a, a)
    assert not host_only.gpu_timing and host_only.records[0].host_total_s is not None
