"""What the sort family's kernels share (sorts, ``searchsorted``, and ``ops_compact``,
``ops_counting``, ``ops_gather``): the workgroup size, the sortable dtypes, argument checks, the
binding window (``WINDOW_LIMIT`` lowers it: tests use it to exercise the chunked paths on small
data), the dummy bindings of unused kernel inputs, and the programs kept per backend."""

from __future__ import annotations

import weakref
from typing import Any

from .plan_cache import PlanCache
from .validate import check_dtype, check_int, check_pointer
from .wgsl_types import STORAGE_TYPES

__all__ = ["SORT_DTYPES", "WG", "WINDOW_LIMIT", "dummy", "window_limit"]

#: Invocations per workgroup of the sort and search kernels.
WG = 256

#: Override of the binding window size in bytes (None: the adapter's); for tests.
WINDOW_LIMIT: int | None = None
_U32 = 0xFFFFFFFF
#: dtypes a sort or search accepts (all real dtypes and bool; complex values have no order).
SORT_DTYPES = tuple(t.name for t in STORAGE_TYPES.values() if t.kind != "c")


def _check_dtype(backend: Any, dtype: Any, what: str = "dtype") -> str:
    """``dtype`` after ``validate.check_dtype`` against the sortable dtypes."""
    check_dtype(backend, what, dtype, STORAGE_TYPES)  # (SORT_DTYPES, as a dict)
    return dtype


def _check_span(backend: Any, ptr: int, nbytes: int, itemsize: int, what: str) -> None:
    """``validate.check_pointer`` with the argument order of this module's callers."""
    check_pointer(backend, what, ptr, nbytes, itemsize)


_check_int = check_int


def window_limit(backend: Any) -> int:
    """Bytes one binding window may cover (``WINDOW_LIMIT`` lowers the adapter's value)."""
    limit = backend.max_window_bytes()
    if WINDOW_LIMIT is not None:
        limit = min(limit, int(WINDOW_LIMIT))
    return max(limit, 256)


_DUMMIES: "weakref.WeakKeyDictionary[Any, list[int]]" = weakref.WeakKeyDictionary()


def dummy(backend: Any, k: int = 0) -> tuple[Any, int, int]:
    """Binding of a small scratch buffer (``k`` picks one of several distinct ones, of
    ``(k + 1) * _DUMMY_BYTES`` bytes) for a binding a kernel variant does not use."""
    ctx = backend.context
    bufs = _DUMMIES.get(ctx)
    if bufs is None:
        bufs = []
        _DUMMIES[ctx] = bufs
    while len(bufs) <= k:
        bufs.append(ctx.create_storage((len(bufs) + 1) * _DUMMY_BYTES))
    return (bufs[k], 0, (k + 1) * _DUMMY_BYTES)


def _dummy_placeholder(backend: Any, nbytes: int, *bindings: Any) -> Any:
    """The placeholder of a program's unused binding: ``dummy(backend, 0)``."""
    return dummy(backend, 0)


#: Sort and search programs kept per backend (``sort_job.launch``, ``planned_sort``, ``searchsorted``).
_PLANS = PlanCache(256)
_DUMMY_BYTES = 256
