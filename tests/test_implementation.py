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


def test_requires_marker_skips_where_the_feature_is_missing() -> None:
    """The set-up hook skips an item marked with a feature the adapter lacks, naming it, and
    lets one through whose features the adapter has."""
    import conftest

    class _Item:
        nodeid = "test_implementation.py::fake"

        def __init__(self, *features: str) -> None:
            self.marks = [pytest.mark.requires(*features).mark]

        def iter_markers(self, name: str):
            return iter(self.marks if name == "requires" else [])

    with pytest.raises(pytest.skip.Exception, match="lacks no-adapter-has-this"):
        conftest.pytest_runtest_setup(_Item("no-adapter-has-this"))
    conftest._SKIPPED_FOR["no-adapter-has-this"].remove(_Item.nodeid)
    if not conftest._SKIPPED_FOR["no-adapter-has-this"]:
        del conftest._SKIPPED_FOR["no-adapter-has-this"]
    conftest.pytest_runtest_setup(_Item(*sorted(conftest._adapter_features())))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_dtype_parameters_imply_their_feature(request: pytest.FixtureRequest, dtype: str) -> None:
    import conftest

    needed = conftest.required_features(request.node)
    assert needed == ({"float64": {"shader-f64"}}.get(dtype, set()))  # (int64: emulated where lacking)


def test_dawn_instance_lists_experimental_features_while_int8_sgmatrix_is_on():
    """On Dawn with the int8_sgmatrix knob on, the instance is made with ``allow_unsafe_apis``,
    so its adapters list their ``chromium-experimental-*`` features (subgroup matrices among
    them where the GPU has them); wgpu-native's instance is left alone."""
    from gputensor._backend import get_backend

    unlocked = implementation.NAME == "dawn" and bool(config.value("int8_sgmatrix"))
    assert implementation.EXPERIMENTAL_FEATURES_UNLOCKED == unlocked
    listed = {str(f) for f in get_backend().context.adapter.features}
    if unlocked:
        assert any(f.startswith("chromium-experimental-") for f in listed), sorted(listed)
