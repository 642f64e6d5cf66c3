"""The WebGPU implementation module and the test suite's feature marker."""

from __future__ import annotations

import pytest

from gputensor._backend import config, implementation


def test_one_implementation_is_chosen() -> None:
    assert implementation.NAME in implementation.PACKAGES
    assert implementation.wgpu.__name__ == implementation.PACKAGES[implementation.NAME]
    assert hasattr(implementation.wgpu, "gpu") and hasattr(implementation.wgpu, "BufferUsage")
    if implementation.NAME == "native":  # the host-cost paths of wgpu-native are found
        api = implementation.native_api()
        assert api is not None and hasattr(api.lib, "wgpuDevicePoll")
    else:
        assert implementation.native_api() is None


def test_the_knob_names_its_values(monkeypatch: pytest.MonkeyPatch) -> None:
    for raw, want in (("native", "native"), (" Dawn ", "dawn"), ("", "")):
        monkeypatch.setenv("GPUTENSOR_WGPU", raw)
        assert config.environment_value("wgpu") == want
    monkeypatch.setenv("GPUTENSOR_WGPU", "webkit")
    with pytest.raises(ValueError, match="GPUTENSOR_WGPU.*native.*dawn"):
        config.environment_value("wgpu")


def test_timestamp_period_is_positive(backend) -> None:
    assert implementation.timestamp_period(backend.context.queue) > 0


def test_context_features_use_gputensor_names(backend) -> None:
    assert not set(implementation.FEATURES.values()) & backend.context.features


@pytest.mark.requires("no-adapter-has-this")
def test_requires_marker_skips_where_the_feature_is_missing() -> None:
    raise AssertionError("a test requiring a feature no adapter has must be skipped")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_dtype_parameters_imply_their_feature(request: pytest.FixtureRequest, dtype: str) -> None:
    import conftest

    needed = conftest.required_features(request.node)
    assert needed == ({"float64": {"shader-f64"}, "int64": {"shader-int64"}}.get(dtype, set()))
