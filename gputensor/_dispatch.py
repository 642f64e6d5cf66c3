"""The frontend's route to the backend: one namespace of the engine's entry points for the
namespace modules (``_dispatch.copy_into``, ``_dispatch.call``); each name is the function of
the module that does the job (no call layer here) and :func:`synchronize`.

* memory and backend operations (``_runtime``): :func:`alloc`, :func:`free`, :func:`upload`,
  :func:`download`, :func:`call` and :func:`backend_errors` (a backend operation with the
  namespace's exceptions; backend errors of kind *unsupported* become ``TypeError``),
  :func:`backend`, adapter facts;
* copies and fills (``_copies``): :func:`copy_into`, :func:`fill`, :func:`contiguous_copy`,
  :func:`operand`; :func:`scalar_value` (``_scalars``);
* elementwise ops (``_elementwise_op``): :func:`elementwise_op` (a namespace table op; dtypes
  by ``_elementwise_dtypes.resolve_elementwise_dtypes``), :func:`run_elementwise` and
  :func:`run_elementwise_plan` (any backend op, explicit dtypes);
* the host-time fast paths of small ops (``_elementwise_fast``): :func:`binary_operator`,
  :func:`binary_function`, :func:`unary_op`, over the caches of ``_elementwise_cache``
  (:func:`cache_put`, :func:`cached_eager`, :func:`remember_eager`);
* reductions of lazy arrays (``_reduce_fused``): :func:`reduce_fused`;
* :func:`synchronize`: every lazy array materialised, then all device work waited for.

Other modules meeting the backend: ``_fusion`` (lazy DAGs and their launches),
``_function_kernels`` (reductions, scans, products), ``_user_kernels`` and ``_profile``; the
operations they may call are typed in ``_backend/interface.py``.
"""

from __future__ import annotations

from . import _fusion, _runtime
from ._copies import contiguous_copy, copy_into, fill, operand
from ._elementwise_cache import cache_put, cached_eager, remember_eager
from ._elementwise_dtypes import resolve_elementwise_dtypes
from ._elementwise_fast import binary_function, binary_operator, unary_op
from ._elementwise_op import elementwise_op, run_elementwise, run_elementwise_plan
from ._reduce_fused import reduce_fused
from ._runtime import (  # the backend handle, re-exported for the namespace modules
    adapter_description,
    adapter_features,
    alloc,
    backend,
    backend_errors,
    call,
    compute_type,
    download,
    free,
    max_storage_bindings,
    upload,
)
from ._scalars import scalar_value

__all__ = [
    "backend",
    "adapter_features",
    "adapter_description",
    "alloc",
    "free",
    "upload",
    "download",
    "synchronize",
    "operand",
    "copy_into",
    "contiguous_copy",
    "fill",
    "elementwise_op",
    "run_elementwise",
    "run_elementwise_plan",
    "cache_put",
    "cached_eager",
    "remember_eager",
    "resolve_elementwise_dtypes",
    "scalar_value",
    "binary_operator",
    "binary_function",
    "unary_op",
    "reduce_fused",
    "backend_errors",
    "call",
    "compute_type",
    "max_storage_bindings",
]


def synchronize() -> None:
    """Materialise every lazy (fused) array, then wait until all recorded device work has
    finished."""
    _fusion.materialize_all()
    _runtime.synchronize_all()


