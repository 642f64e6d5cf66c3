"""gputensor: a Python Array API (2024.12) library running on any GPU through WebGPU.

``import gputensor as gt``; ``a = gt.asarray(np_array)``; ``gt.exp(a) + 1``; ``a @ b``.
Arrays live on WebGPU devices (``gt.devices()``: one ``gt.Device`` per adapter; ``x.to_device(d)``
moves them); ``gt.asnumpy(x)`` / ``x.get()`` /
``np.asarray(x)`` read them back.  The public names are re-exported below section by section
(the spec's sections), each extending ``__all__``.
"""

from __future__ import annotations

import importlib as _importlib
from typing import Any

import numpy as _np

__array_api_version__ = "2024.12"

__all__: list[str] = ["__array_api_version__"]

# ---- constants -----------------------------------------------------------------------------
e: float = float(_np.e)
inf: float = float(_np.inf)
nan: float = float(_np.nan)
pi: float = float(_np.pi)
newaxis = None

__all__ += ["e", "inf", "nan", "newaxis", "pi"]

# ---- data types ----------------------------------------------------------------------------
from ._dtypes import (  # noqa: E402
    bool,
    float16,
    float32,
    float64,
    complex64,
    complex128,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)

__all__ += [
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]

# ---- array object and device ---------------------------------------------------------------
from ._array_object import GpuArray  # noqa: E402
from ._devices import Device  # noqa: E402

__all__ += ["GpuArray", "Device"]

# ---- data type functions -------------------------------------------------------------------
from ._data_type_functions import astype, can_cast, finfo, iinfo, isdtype, result_type  # noqa: E402

__all__ += ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type"]

# ---- inspection ----------------------------------------------------------------------------
from ._info import __array_namespace_info__  # noqa: E402

__all__ += ["__array_namespace_info__"]

# ---- the function modules: each exports its ``__all__`` ---------------------------------------
# (elementwise functions are generated from _ops.ELEMENTWISE_OPS; advanced __getitem__ /
# __setitem__ route to _indexing_functions)
for _module_name in (
    "_creation_functions",
    "_elementwise_functions",
    "_indexing_functions",
    "_linear_algebra_functions",
    "_manipulation_functions",
    "_searching_functions",
    "_set_functions",
    "_sorting_functions",
    "_statistical_functions",
    "_utility_functions",
):
    _module = _importlib.import_module(f".{_module_name}", __name__)
    for _name in _module.__all__:
        globals()[_name] = getattr(_module, _name)
    __all__ += list(_module.__all__)
del _module_name, _module, _name

# the array object's operators, indexing and ``@`` (they call the function modules above)
from . import _operators  # noqa: E402,F401
from . import _pickle  # noqa: E402,F401  (pickling and copies by value)
from . import _dispatch  # noqa: E402
from ._shapes import is_contiguous as _is_contiguous  # noqa: E402


# ---- gputensor extensions ------------------------------------------------------------------
def asnumpy(x: Any) -> _np.ndarray:
    """A NumPy copy of the gputensor array ``x`` (waits for pending work); ``TypeError`` for
    anything else."""
    if not isinstance(x, GpuArray):
        raise TypeError(f"asnumpy expects a gputensor array, got {type(x).__name__}")
    return x.get()


def synchronize() -> None:
    """Wait until all work recorded on the device has finished."""
    _dispatch.synchronize()


__all__ += ["asnumpy", "synchronize"]

# ---- faults: a lost device, a new one ------------------------------------------------------
from ._backend.device_state import DeviceLostError  # noqa: E402
from ._reset import reset  # noqa: E402

__all__ += ["DeviceLostError", "reset"]


def get_default_memory_pool() -> Any:
    """The current device's memory pool (a caching allocator in the style of CuPy's): ``used_bytes()``,
    ``free_bytes()``, ``total_bytes()``, ``n_free_blocks()``, ``free_all_blocks()``,
    ``set_limit(size)``/``get_limit()``. Freed arrays return their buffers to it for reuse."""
    return _dispatch.backend().memory_pool


def asnumpy_many(*arrays: Any) -> tuple[_np.ndarray, ...]:
    """NumPy copies of several gputensor arrays, read back with one submit and one wait (cheaper
    than one ``asnumpy`` each). Non-contiguous views are compacted on the device first.
    ``TypeError`` for anything that is not a gputensor array."""
    hosts: list[_np.ndarray] = []
    pairs: list[tuple[Any, int]] = []
    keep: list[Any] = []
    for x in arrays:
        if not isinstance(x, GpuArray):
            raise TypeError(f"asnumpy_many expects gputensor arrays, got {type(x).__name__}")
        host = _np.empty(x.shape, dtype=x.dtype.numpy)
        hosts.append(host)
        if host.size == 0:
            continue
        src = x if _is_contiguous(x.shape, x._strides) else _dispatch.contiguous_copy(x)
        keep.append(src)
        pairs.append((host.reshape(-1).view(_np.uint8), src._ptr))
    if pairs:
        _dispatch.backend().copy_dtoh_many(pairs)
    return tuple(hosts)


__all__ += ["get_default_memory_pool", "asnumpy_many"]

# ---- user kernels, profiling, fusion, the autotuner -------------------------------------------
from ._profile import profile  # noqa: E402
from ._user_kernels import ElementwiseKernel, KernelCompileError, RawKernel  # noqa: E402

__all__ += ["ElementwiseKernel", "RawKernel", "KernelCompileError", "profile"]

from ._fusion import fusion, fusion_enabled, set_fusion  # noqa: E402

__all__ += ["fusion", "fusion_enabled", "set_fusion"]

from ._backend.autotune import autotune  # noqa: E402

__all__ += ["autotune"]

# --- neural-network functions: gputensor.nn ---
from . import nn  # noqa: E402

# --- the linalg extension: gputensor.linalg ---
from . import linalg  # noqa: E402

# --- the fft extension: gputensor.fft ---
from . import fft  # noqa: E402

__all__ += ["nn", "linalg", "fft"]

# --- NumPy's names, protocols and array methods ---
from . import _dask, _interop_numpy, _methods, _numpy_names  # noqa: E402

ndarray = GpuArray
__all__ += ["ndarray"] + _numpy_names.install(globals())
_interop_numpy.install(globals())
_methods.install(globals())
_dask.watch()  # dask.array's dispatch for gputensor chunks: now, or when dask.array is imported

# --- devices: one per adapter; operations follow their operands once a second one is used ---
from . import _devices, _routing  # noqa: E402
from ._devices import capabilities, devices, set_default_device  # noqa: E402
from ._devices import current_device as default_device  # noqa: E402

__all__ += ["capabilities", "devices", "default_device", "set_default_device"]
_devices.on_multi(_routing.install(globals(), (ElementwiseKernel, RawKernel)))
