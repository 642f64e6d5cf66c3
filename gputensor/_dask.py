"""dask.array with gputensor chunks: what dask's dispatch needs, registered as dask does for CuPy.

Most of dask.array works on gputensor chunks through NumPy's protocols (``np.sum(chunk)`` runs
on the device); the lookups below are the ones dask does not route through them: element
counts of the chunks' type (``mean``, ``var``), concatenation, ``tensordot``, ``take``,
``percentile``, empty chunks and ``to_numpy``. :func:`register` installs them when dask.array
is imported: at ``import gputensor`` when dask.array came first, else right after
``dask.array.backends`` is loaded (:func:`watch` puts a one-shot finder on ``sys.meta_path``
that wraps that module's loading; nothing here imports dask).

Several devices: one worker process per device, each with that device as its default
(``gputensor.dask_plugin.DevicePlugin``, a dask.distributed worker plugin calling
``gputensor.set_default_device`` at start-up): chunks are created, unpickled and computed on the
worker's device. In one process, chunks on several devices are computed on their own device
(the lookups below are routed as the public functions are).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from typing import Any

import numpy as np

from . import _creation_functions as _creation
from . import _indexing_functions as _indexing
from . import _linear_algebra_functions as _la
from . import _manipulation_functions as _manip
from ._array_object import GpuArray
from ._dtypes import as_dtype
from ._routing import routed

__all__ = ["register", "registered", "watch"]

_STATE = {"registered": False}


def registered() -> bool:
    """Whether gputensor is registered with dask.array's dispatch."""
    return _STATE["registered"]


def _concatenate(arrays: Any, axis: int = 0) -> GpuArray:
    return _manip.concat(list(arrays), axis=axis)


def _tensordot(a: GpuArray, b: GpuArray, axes: Any = 2) -> GpuArray:
    return _la.tensordot(a, b, axes=axes)


def _take(a: GpuArray, indices: Any, axis: int | None = None) -> GpuArray:
    if not isinstance(indices, GpuArray):
        indices = _creation.asarray(np.asarray(indices))
    if axis is None:
        return _indexing.take(_manip.reshape(a, (-1,)), indices, axis=0)
    return _indexing.take(a, indices, axis=axis)


def _empty(shape: Any, dtype: Any = None, **kwargs: Any) -> GpuArray:
    return _creation.empty(shape, dtype=None if dtype is None else as_dtype(dtype))


def _to_numpy(data: GpuArray, **kwargs: Any) -> np.ndarray:
    return data.get()


def register() -> bool:
    """Register gputensor with dask.array's dispatch when dask.array is imported (once);
    returns whether it is registered."""
    if _STATE["registered"]:
        return True
    dispatch = sys.modules.get("dask.array.dispatch")
    backends = sys.modules.get("dask.array.backends")
    if dispatch is None or backends is None:
        return False
    _STATE["registered"] = True
    # (routed: on the chunks' device where one process holds chunks of several devices)
    dispatch.concatenate_lookup.register(GpuArray, routed(_concatenate))
    dispatch.tensordot_lookup.register(GpuArray, routed(_tensordot))
    dispatch.take_lookup.register(GpuArray, routed(_take))
    dispatch.numel_lookup.register(GpuArray, backends._numel_arraylike)
    dispatch.nannumel_lookup.register(GpuArray, backends._nannumel)
    dispatch.percentile_lookup.register(GpuArray, backends.percentile)
    dispatch.empty_lookup.register(GpuArray, _empty)
    dispatch.to_numpy_dispatch.register(GpuArray, _to_numpy)
    return True


class _AfterDaskArray(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when ``dask.array.backends`` is imported, it lets the other
    finders find it and runs :func:`register` once the module has run; then it leaves
    ``sys.meta_path``."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "dask.array.backends":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            register()

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def watch() -> None:
    """Register now if dask.array is imported, else as soon as it is (see the module
    docstring)."""
    if register() or any(isinstance(f, _AfterDaskArray) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _AfterDaskArray())
