"""Shared test set-up: a WebGPU adapter is required (never skipped) and hypothesis profiles."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
# scikit-learn's array API dispatch (test_sklearn) needs scipy's, switched on before scipy is imported
os.environ.setdefault("SCIPY_ARRAY_API", "1")

settings.register_profile(
    "ci", max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile("dev", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

NO_ADAPTER = (
    "gputensor's tests need a WebGPU adapter and none could be created. Install a GPU driver with "
    "Vulkan/Metal/D3D12 support, or on Debian/Ubuntu the lavapipe software adapter: "
    "`sudo apt-get install -y mesa-vulkan-drivers` (`make test` does this for you as root)."
)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Fail the whole run at once when no adapter can be had (tests must never skip for that)."""
    from gputensor._backend import get_backend

    try:
        backend = get_backend()
    except Exception as exc:  # noqa: BLE001 - any failure here means no usable adapter
        raise pytest.UsageError(f"{NO_ADAPTER}\n(cause: {exc})") from exc
    print(f"\ngputensor adapter: {backend}")


@pytest.fixture(scope="session")
def backend():
    """The shared, initialised WebGpuBackend."""
    from gputensor._backend import get_backend

    return get_backend()


@pytest.fixture()
def kernels_run(backend, monkeypatch):
    """The names of the kernels dispatched while the test runs."""
    ctx = backend.context
    names: list[str] = []
    original = ctx.dispatch

    def spy(name, *args, **kwargs):
        names.append(name)
        return original(name, *args, **kwargs)

    monkeypatch.setattr(ctx, "dispatch", spy)
    return names
