"""The frontend's handle on the backends: devices, memory, transfers, adapter facts, errors.

The lowest engine module: it imports the backend and nothing of the frontend but the dtype
table, so the array object (``_array_object``) and the devices (``_devices``) can allocate,
upload, read back and ask about the adapter without importing the engine above them.
``_dispatch`` re-exports these names (``_dispatch.alloc`` is ``_runtime.alloc``).

Devices. One :class:`DeviceRuntime` per usable adapter (``runtimes()``; the process default
first: the adapter ``$GPUTENSOR_ADAPTER`` or the ranking chooses, whose backend is
``_backend.get_backend()``), each with its own backend -- WgpuContext, memory pool, caches --
created on first use. Operations run on the *current* runtime: the one a ``use(rt)`` block set
for this thread (a context variable: threads and asyncio tasks each have their own), else the
process default (``set_default``). ``backend()`` is the current runtime's backend; ``alloc``
allocates there and every array's storage keeps the runtime it was allocated on
(``_Storage.rt``), so frees, readbacks and the device of an array follow the array.
"""

from __future__ import annotations

import builtins
import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ._backend import config, get_backend, open_backend, ops_elementwise, reset_backend, retire_backend
from ._backend import devices as _adapters
from ._backend.adapters import adapter_description as adapter_names_text
from ._backend.adapters import adapter_names
from ._backend.errors import BackendError, BackendErrorKind
from ._backend.ops_elementwise import ArrayOperand
from ._backend.wgsl_types import emulating_int64, int64_mode, set_default_int64_mode, storage_type
from ._shapes import contiguous_strides

__all__ = [
    "DeviceRuntime", "runtimes", "current", "use", "set_default", "default_runtime",
    "backend", "adapter_features", "adapter_description", "adapter_name", "alloc", "free", "upload", "download",
    "download_strided", "read_bytes", "compute_type", "max_storage_bindings", "translate", "backend_errors", "call",
]


class DeviceRuntime:
    """One adapter's backend (created on first use) and the facts the frontend caches about it.

    ``index``: the device's number (``webgpu:<index>``); ``info``: the adapter's info dict
    (None for the default device until it starts: its adapter is chosen then); ``be``: the
    backend, None until ``start()``; ``device``: the public ``gputensor.Device`` (set by
    ``_devices``)."""

    __slots__ = ("index", "info", "be", "device", "is_default", "_features", "_bindings", "_lock")

    def __init__(self, index: int, info: dict[str, Any] | None, is_default: builtins.bool = False) -> None:
        self.index = index
        self.info = info
        self.be: Any = None
        self.device: Any = None
        self.is_default = is_default
        self._features: frozenset[str] | None = None
        self._bindings: int | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"DeviceRuntime({self.index}, {self.describe()!r})"

    def start(self) -> Any:
        """The backend, created (device and all) on the first call. Raises BackendError when
        the adapter cannot create its device."""
        with self._lock:
            if self.be is None:
                be = get_backend() if self.is_default else open_backend(self.info or {})
                if self.info is None:
                    self.info = dict(be.context.adapter_info, ordinal=0)  # (the first of its kind)
                self.be = be
                _set_single(self)
                if self is _process_default:
                    set_default_int64_mode(self.emulates_int64())
            return self.be

    def backend(self) -> Any:
        """The backend (``start()`` on first use)."""
        be = self.be
        return be if be is not None else self.start()

    def started(self) -> builtins.bool:
        """Whether the backend exists (the device was used)."""
        return self.be is not None

    def features(self) -> frozenset[str]:
        """The WebGPU features the device was granted (starts it)."""
        features = self._features
        if features is None:
            features = self._features = frozenset(str(f) for f in self.backend().context.features)
        return features

    def emulates_int64(self) -> builtins.bool:
        """Whether int64/uint64 are two 32-bit words here (the adapter lacks ``shader-int64``;
        starts the device)."""
        return "shader-int64" not in self.features()

    def max_storage_bindings(self) -> int:
        """Storage buffers one kernel may bind on this device (starts it)."""
        bindings = self._bindings
        if bindings is None:
            limits = self.backend().context.limits
            bindings = self._bindings = int(limits.get("max-storage-buffers-per-shader-stage", 8))
        return bindings

    def describe(self) -> str:
        """One line naming the adapter (device, backend, type); ``'?'`` parts before the
        default device has chosen its adapter."""
        return adapter_names_text(self.info or {})

    def reset(self) -> None:
        """Retire the backend (its arrays raise DeviceLostError from now on); the next use
        creates a new device on the same adapter. The default device goes through
        ``_backend.reset_backend`` (a new device at once, chosen as at import)."""
        global _single
        with self._lock:
            old, self.be = self.be, None
            self._features = self._bindings = None
            if self.is_default:
                _single = None
                self.be = reset_backend()
                _set_single(self)
                if self is _process_default:
                    set_default_int64_mode(self.emulates_int64())
            elif old is not None:
                retire_backend(old)


_DEFAULT = DeviceRuntime(0, None, is_default=True)
_RUNTIMES: list[DeviceRuntime] | None = None
_RUNTIMES_LOCK = threading.Lock()
#: The process default (``set_default``); the current runtime where no ``use`` block is open.
_process_default = _DEFAULT
_CURRENT: contextvars.ContextVar[DeviceRuntime | None] = contextvars.ContextVar("gputensor_device", default=None)
_get_current = _CURRENT.get
#: Whether a second device was handed out (``_devices``): lazy arrays then materialise on
#: their own device (``_fusion``), ``synchronize_all`` waits for every started device.
multi = False
#: The default device's backend while the process uses one device (``backend()``'s fast
#: path: what ``_backend.get_backend`` was before there were several devices); else None.
_single: Any = None


def runtimes() -> list[DeviceRuntime]:
    """Every device's runtime: the default device first (index 0), then the other adapters wgpu
    enumerates, in the ranking's order (enumerated once, on the first call; no device is
    created). ``GPUTENSOR_DEVICES=default``: the default device only."""
    global _RUNTIMES
    if _RUNTIMES is None:
        with _RUNTIMES_LOCK:
            if _RUNTIMES is None:
                infos = _adapters.adapter_infos()
                if _DEFAULT.info is not None:
                    chosen = _adapters.key(_DEFAULT.info)
                else:
                    hint = (get_config_adapter() or "").strip().lower()
                    first = next((i for i in infos if hint and any(hint in n for n in adapter_names(i))),
                                 infos[0] if infos else None)
                    chosen = _adapters.key(first) if first is not None else None
                others = [i for i in infos if _adapters.key(i) != chosen]
                if (config.value("devices") or "all").strip().lower() == "default":
                    others = []
                _RUNTIMES = [_DEFAULT] + [DeviceRuntime(k + 1, info) for k, info in enumerate(others)]
    return _RUNTIMES


def get_config_adapter() -> str | None:
    """``$GPUTENSOR_ADAPTER`` (the ``adapter`` knob): the default device's adapter hint."""
    return config.value("adapter")


def default_runtime() -> DeviceRuntime:
    """The process default runtime (``set_default``)."""
    return _process_default


def set_default(rt: DeviceRuntime) -> DeviceRuntime:
    """Make ``rt`` the process default (where no ``use`` block is open) and return the previous
    one."""
    global _process_default
    old, _process_default = _process_default, rt
    if rt.started():
        set_default_int64_mode(rt.emulates_int64())
    return old


def current() -> DeviceRuntime:
    """The runtime operations run on: the innermost ``use`` block's, else the process default."""
    rt = _get_current()
    return _process_default if rt is None else rt


@contextlib.contextmanager
def use(rt: DeviceRuntime) -> Iterator[DeviceRuntime]:
    """Run the block on ``rt`` (this thread / task only; the dtype table's int64 rows are
    ``rt``'s: ``wgsl_types.int64_mode``)."""
    token = _CURRENT.set(rt)
    try:
        with int64_mode(rt.emulates_int64()):
            yield rt
    finally:
        _CURRENT.reset(token)


def backend() -> Any:
    """The current runtime's backend (created on first use)."""
    be = _single
    if be is not None:  # one device: its backend
        return be
    rt = _get_current()
    if rt is None:
        rt = _process_default
    be = rt.be
    return be if be is not None else rt.start()


def set_multi() -> None:
    """A second device was handed out: from now on ``backend()`` asks for the current device
    (``_devices`` calls this once)."""
    global multi, _single
    multi = True
    _single = None


def _set_single(rt: DeviceRuntime) -> None:
    global _single
    if rt.is_default and not multi:
        _single = rt.be


def adapter_features() -> frozenset[str]:
    """The WebGPU features the current device was granted."""
    return current().features()


def adapter_description() -> str:
    """One line naming the current device's adapter."""
    return repr(backend())


def adapter_name() -> str:
    """The current adapter's name as ``python -m gputensor`` prints it (device, backend, type)."""
    return adapter_names_text(backend().context.adapter_info)


_COMPUTE: dict[Any, str] = {}


def compute_type(dtype: Any) -> str:
    """The WGSL type values of ``dtype`` are computed in (float16: f32, int8: i32, ...)."""
    key = (dtype, emulating_int64())
    compute = _COMPUTE.get(key)
    if compute is None:
        compute = _COMPUTE[key] = storage_type(dtype.name).compute
    return compute


def max_storage_bindings() -> int:
    """Storage buffers one kernel may bind (the current device's limit)."""
    return current().max_storage_bindings()


def translate(exc: Exception) -> Exception:
    """The namespace's exception for a backend error: *unsupported* (an adapter feature is
    missing) becomes ``TypeError``; anything else is returned as it is."""
    if isinstance(exc, BackendError) and exc.kind == BackendErrorKind.UNSUPPORTED:
        return TypeError(str(exc))
    return exc


@contextlib.contextmanager
def backend_errors() -> Iterator[None]:
    """Re-raise any error of the block as the namespace's exception for it (``translate``)."""
    try:
        yield
    except Exception as exc:
        raise translate(exc) from None


def call(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """``fn(backend(), *args, **kwargs)`` (a backend operation, e.g. ``ops_sort.argsort``), its
    errors re-raised as the namespace's exceptions (``translate``)."""
    try:
        return fn(backend(), *args, **kwargs)
    except Exception as exc:
        raise translate(exc) from None


def alloc(nbytes: int, zero: builtins.bool = True) -> int:
    """Allocate ``nbytes`` of device memory (zero-filled unless ``zero=False``) from the memory
    pool of the current device; returns a device pointer. Raises ``MemoryError`` (with the
    sizes) when the device is out of memory even after the pool released its cached blocks."""
    try:
        return backend().alloc(nbytes, zero=zero)
    except Exception as exc:
        if getattr(exc, "kind", None) == BackendErrorKind.OUT_OF_MEMORY:
            raise MemoryError(str(getattr(exc, "message", exc))) from None
        raise


def free(ptr: int, rt: DeviceRuntime | None = None) -> None:
    """Release an allocation of ``rt`` (default: the current device); silent when the backend
    is gone (interpreter shutdown, a reset device: nothing is created to free into)."""
    try:
        be = (rt or current()).be
        if be is not None:
            be.free(ptr)
    except Exception:  # noqa: BLE001 - finalizers must never raise
        pass


def upload(ptr: int, host: np.ndarray) -> None:
    """Copy the bytes of the C-contiguous ``host`` array to ``ptr``."""
    if host.nbytes:
        backend().copy_htod(ptr, np.asarray(host, order="C").reshape(-1).view(np.uint8))


def download(host: np.ndarray, ptr: int) -> None:
    """Fill the C-contiguous, writable ``host`` array from the device bytes at ``ptr``."""
    if host.nbytes:
        backend().copy_dtoh(host.reshape(-1).view(np.uint8), ptr)


def read_bytes(ptr: int, nbytes: int) -> bytes:
    """The ``nbytes`` device bytes at ``ptr`` (a scalar's) after all recorded work."""
    return backend().read_bytes(ptr, nbytes)


def download_strided(host: np.ndarray, ptr: int, dtype: str, strides: Sequence[int]) -> None:
    """Fill the C-contiguous ``host`` array (its shape is the view's) from the strided view of
    ``dtype`` elements at ``ptr``: one copy kernel into a scratch buffer, then one readback.
    Backend errors become the namespace's (``translate``); ``MemoryError`` as ``alloc``."""
    if not host.size:
        return
    be = backend()
    scratch = alloc(host.nbytes, zero=False)
    try:
        dst = ArrayOperand(scratch, dtype, tuple(contiguous_strides(host.shape)))
        ops_elementwise.copy_strided(be, ArrayOperand(ptr, dtype, tuple(strides)), dst, host.shape)
        download(host, scratch)
    except Exception as exc:
        raise translate(exc) from None
    finally:
        free(scratch)


def synchronize_all() -> None:
    """Wait for the recorded work of every started device (the current one only, in a process
    that never handed out a second device)."""
    if not multi:
        backend().synchronize()
        return
    for rt in runtimes():
        if rt.be is not None:
            rt.be.synchronize()
