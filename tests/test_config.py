"""The tuning knobs (``gputensor._backend.config``): environment defaults, ``with`` overrides."""

from __future__ import annotations

import threading

import pytest

from gputensor._backend import BackendError, config


def test_every_knob_is_named_once_and_documented() -> None:
    names = [k.name for k in config.KNOBS]
    envs = [k.env for k in config.KNOBS]
    assert len(set(names)) == len(names) and len(set(envs)) == len(envs)
    assert all(env.startswith("GPUTENSOR_") and k.doc for env, k in zip(envs, config.KNOBS))


def test_live_knob_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUTENSOR_GEMM_SPLITK", "0")
    assert config.value("gemm_splitk") == 1
    monkeypatch.setenv("GPUTENSOR_GEMM_SPLITK", "4")
    assert config.value("gemm_splitk") == 4
    monkeypatch.delenv("GPUTENSOR_GEMM_SPLITK")
    assert config.value("gemm_splitk") is None
    monkeypatch.setenv("GPUTENSOR_GEMM_SPLITK", "-2")
    with pytest.raises(BackendError, match="GPUTENSOR_GEMM_SPLITK"):
        config.value("gemm_splitk")


def test_environment_parsers(monkeypatch: pytest.MonkeyPatch) -> None:
    for raw, want in (("0", False), ("off", False), ("1", True), ("anything", True)):
        monkeypatch.setenv("GPUTENSOR_FUSION", raw)
        assert config.environment_value("fusion") is want
    monkeypatch.setenv("GPUTENSOR_COPY_THREADS", "x")
    assert config.environment_value("copy_threads") == 0
    monkeypatch.setenv("GPUTENSOR_WAIT", "Block ")
    assert config.environment_value("wait") == "block"
    monkeypatch.setenv("GPUTENSOR_WAIT", "sleepy")
    with pytest.raises(ValueError, match="GPUTENSOR_WAIT"):
        config.environment_value("wait")
    monkeypatch.setenv("GPUTENSOR_AUTOTUNE", "maybe")
    with pytest.raises(BackendError, match="GPUTENSOR_AUTOTUNE"):
        config.environment_value("autotune")


def test_override_nests_and_is_undone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUTENSOR_CACHE_DIR", raising=False)
    assert config.value("cache_dir") is None
    with config.override(cache_dir="/a", gemm_splitk=2):
        assert config.value("cache_dir") == "/a"
        with config.override(cache_dir="/b"):
            assert (config.value("cache_dir"), config.value("gemm_splitk")) == ("/b", 2)
        assert config.value("cache_dir") == "/a"
    assert config.value("cache_dir") is None and config.value("gemm_splitk") is None


def test_override_holds_for_other_threads() -> None:
    seen: list[int] = []
    with config.override(copy_threads=5):
        worker = threading.Thread(target=lambda: seen.append(config.value("copy_threads")))
        worker.start()
        worker.join()
    assert seen == [5]


def test_unknown_knob() -> None:
    with pytest.raises(KeyError, match="no_such_knob"):
        config.value("no_such_knob")
    with pytest.raises(KeyError, match="no_such_knob"):
        with config.override(no_such_knob=1):
            pass


def test_assign_stands_in_for_the_environment() -> None:
    before = config.value("reduce_vec4_unroll")
    gen = config.generation
    previous = config.assign(reduce_vec4_unroll=2)
    try:
        assert previous == {"reduce_vec4_unroll": before} and config.generation > gen
        assert config.value("reduce_vec4_unroll") == 2
        with config.override(reduce_vec4_unroll=8):
            assert config.value("reduce_vec4_unroll") == 8
        assert config.value("reduce_vec4_unroll") == 2
    finally:
        config.assign(**previous)
    assert config.value("reduce_vec4_unroll") == before


def test_reduce_configure_goes_through_config() -> None:
    from gputensor._backend import ops_reduce

    saved = ops_reduce.configure(vec4=False, target_workgroups=0)
    try:
        assert config.value("reduce_vec4") is False
        knobs = ops_reduce._knobs()
        assert knobs.vec4 is False and knobs.target_workgroups == 1  # clamped as before
        with config.override(reduce_vec4=True):
            assert ops_reduce._knobs().vec4 is True
    finally:
        ops_reduce.configure(**saved)
    assert ops_reduce._knobs().vec4 == saved["vec4"]
