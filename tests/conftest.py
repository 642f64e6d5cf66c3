"""Shared test set-up: a WebGPU adapter is required (never skipped), hypothesis profiles, and
the ``requires`` marker.

``@pytest.mark.requires("shader-f64", ...)`` says a test needs adapter features; it is skipped,
naming the missing feature, where the adapter lacks one. A test parametrized over a dtype (an
argument whose name contains ``dtype``) whose value needs a feature (float64 and complex128:
``shader-f64``; int64/uint64 need none: they are emulated where the adapter lacks
``shader-int64``, so such a test runs there; a test that needs native int64 -- int64 as the
default integer dtype, a kernel without emulation -- says so with the marker) requires it
without saying so, and a test that fails because it
asked gputensor for such a dtype (``UnsupportedDTypeError``: float64 host data on an adapter
without ``shader-f64``) is reported skipped for that feature, where the adapter really lacks it
(elsewhere the failure stands). The terminal summary shows the
adapter, its features and how many tests each missing feature skipped.
"""

from __future__ import annotations

import collections
import os

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
# scikit-learn's array API dispatch (test_sklearn) needs scipy's, switched on before scipy is imported
os.environ.setdefault("SCIPY_ARRAY_API", "1")

settings.register_profile(
    "ci", max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
# the bounded runs of make test-gl / make test-dawn (CI: make test-dawn; make test-gl FULL=1 uses ci)
settings.register_profile(
    "ci-short", max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile("dev", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

NO_ADAPTER = (
    "gputensor's tests need a WebGPU adapter and none could be created. Install a GPU driver with "
    "Vulkan/Metal/D3D12 support, or on Debian/Ubuntu the lavapipe software adapter: "
    "`sudo apt-get install -y mesa-vulkan-drivers` (`make test` does this for you as root)."
)


#: missing feature -> node ids of the tests it skipped
_SKIPPED_FOR: dict[str, list[str]] = collections.defaultdict(list)
#: missing feature -> how many of those tests asked for its dtype only while running
_FOUND_AT_RUN_TIME: collections.Counter[str] = collections.Counter()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "requires(*features): the test needs these WebGPU adapter features (skipped, "
        "naming the feature, where the adapter lacks one)")


def _adapter_features() -> frozenset[str]:
    from gputensor._backend import get_backend

    return frozenset(str(f) for f in get_backend().context.features)


def _dtype_feature(value: object) -> str | None:
    """The adapter feature a dtype parameter value (a name, NumPy or gputensor dtype) needs:
    float64/complex128 ``shader-f64``; none for int64/uint64, which are emulated as two 32-bit
    words where the adapter lacks ``shader-int64`` (``wgsl_types.EMULATED_INT64``)."""
    import gputensor as gt
    from gputensor._backend.wgsl_types import EMULATED_INT64

    name = value if isinstance(value, str) else getattr(value, "name", None)
    if name in EMULATED_INT64:
        return EMULATED_INT64[name].feature
    dtype = getattr(gt, name, None) if isinstance(name, str) else None
    return getattr(dtype, "feature", None) if isinstance(dtype, type(gt.float32)) else None


def required_features(item: pytest.Item) -> set[str]:
    """The features ``item`` needs: its ``requires`` markers' and its dtype parameters'."""
    needed = {str(f) for mark in item.iter_markers("requires") for f in mark.args}
    callspec = getattr(item, "callspec", None)
    for name, value in (callspec.params.items() if callspec else ()):
        if "dtype" in name:
            feature = _dtype_feature(value)
            if feature:
                needed.add(feature)
    return needed


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip a test that needs a feature the adapter lacks, naming it."""
    missing = sorted(required_features(item) - _adapter_features())
    if missing:
        for feature in missing:
            _SKIPPED_FOR[feature].append(item.nodeid)
        pytest.skip(f"the adapter lacks {', '.join(missing)}")


def _unsupported_dtype(excinfo: pytest.ExceptionInfo) -> object | None:
    """The ``UnsupportedDTypeError`` a test failed with (directly or as the cause of the
    comparison helper's error), else None."""
    return _unsupported_in(excinfo.value)


def _unsupported_in(error: BaseException | None) -> object | None:
    """``error`` or its cause when it is an ``UnsupportedDTypeError``; for an exception group
    (hypothesis' several failures), the first when every member is one."""
    from gputensor._backend.errors import BackendError
    from gputensor._devices import UnsupportedDTypeError

    if isinstance(error, BaseExceptionGroup):
        found = [_unsupported_in(e) for e in error.exceptions]
        return found[0] if found and all(found) else None
    for _ in range(4):
        if isinstance(error, UnsupportedDTypeError):
            return error
        if isinstance(error, BackendError) and getattr(error, "feature", None):
            return error  # the backend's "needs the adapter feature X" (native float16: shader-f16)
        if error is None:
            return None
        error = error.__cause__ or error.__context__
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A test that asked for a dtype the adapter lacks (float64 host data without shader-f64:
    gputensor raises ``UnsupportedDTypeError``; a backend call of a dtype whose native type
    needs a feature: ``BackendError`` with its ``feature``) needs that feature: it is reported
    skipped, naming the feature, and counted in the summary as found at run time."""
    outcome = yield
    report = outcome.get_result()
    if call.when != "call" or call.excinfo is None or not report.failed:
        return
    error = _unsupported_dtype(call.excinfo)
    if error is None:
        return
    feature = str(getattr(error, "feature", None))
    if feature in _adapter_features():
        return  # the adapter has it: a real failure (a test that simulates a missing feature)
    _SKIPPED_FOR[feature].append(item.nodeid)
    _FOUND_AT_RUN_TIME[feature] += 1
    report.outcome = "skipped"
    what = f"the test made {error.dtype} data" if hasattr(error, "dtype") else str(error)
    report.longrepr = (str(item.path), item.location[1] or 0,
                       f"Skipped: the adapter lacks {feature} ({what})")


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """Per adapter what ran: the adapter, its features, the tests skipped per missing feature."""
    from gputensor._backend import get_backend

    try:
        backend = get_backend()
        features = sorted(_adapter_features())
    except Exception:  # noqa: BLE001 - the session start reported it
        return
    write = terminalreporter.write_line
    terminalreporter.section("gputensor adapter")
    write(f"adapter: {backend}; implementation: {_implementation()}")
    write(f"features: {', '.join(features) or 'none'}")
    if not _SKIPPED_FOR:
        write("no test skipped for a missing feature")
    for feature, nodes in sorted(_SKIPPED_FOR.items()):
        late = _FOUND_AT_RUN_TIME[feature]
        found = f" ({late} of them while running: they asked for a dtype that needs it)" if late else ""
        files = collections.Counter(node.split("::")[0].rsplit("/", 1)[-1] for node in nodes)
        per_file = ", ".join(f"{name} {count}" for name, count in sorted(files.items()))
        write(f"skipped for lack of {feature}: {len(nodes)} tests{found}: {per_file}")


def _implementation() -> str:
    """The WebGPU implementation the suite runs on: its name, package and version."""
    from gputensor._backend import implementation

    version = getattr(implementation.wgpu, "__version__", "?")
    return f"{implementation.NAME} ({implementation.PACKAGES[implementation.NAME]} {version})"


def pytest_sessionstart(session: pytest.Session) -> None:
    """Fail the whole run at once when no adapter can be had (tests must never skip for that)."""
    from gputensor._backend import get_backend

    try:
        backend = get_backend()
    except Exception as exc:  # noqa: BLE001 - any failure here means no usable adapter
        raise pytest.UsageError(f"{NO_ADAPTER}\n(cause: {exc})") from exc
    print(f"\ngputensor adapter: {backend}; implementation: {_implementation()}")


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
