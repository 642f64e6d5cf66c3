"""The one backend interface: what the frontend calls, typed as Protocols.

* :class:`Device` is the backend object (``get_backend()``, a ``WebGpuBackend``): memory,
  transfers, synchronisation and the capabilities the launchers ask about.
* :class:`Operations` lists the operations the namespace launches, each a function of the
  backend module named in ``OPERATION_MODULES`` that takes the backend first (``ops_sort.argsort``
  is ``Operations.argsort``). The frontend calls them through ``_dispatch.call`` (which turns
  backend errors into the namespace's exceptions) or directly from its engine modules.

The seed contract (``base.ComputeBackend``: ``gemm``, ``conv2d_forward``, ``attention``,
``reduce``, ``unary``, ``binary`` over pointers) is a thin adapter over these: ``WebGpuBackend``
forwards each to the same launchers, and its op enums name rows of the namespace's op table
(``base.UnaryOp.op_name``). ``tests/test_backend_interface.py`` checks that the backend and the
modules match these signatures.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["Device", "Operations", "OPERATION_MODULES"]


@runtime_checkable
class Device(Protocol):
    """The backend object: pointers are Python ints from ``alloc`` (``ptr + k`` addresses ``k``
    bytes into the allocation). Errors are ``BackendError`` with a kind."""

    @property
    def context(self) -> Any:
        """The WgpuContext (adapter, device, queue, features, limits)."""

    @property
    def memory_pool(self) -> Any:
        """The caching allocator behind ``alloc``/``free``."""

    def alloc(self, nbytes: int, *, zero: bool = True) -> int:
        """Device memory of ``nbytes`` (zero-filled unless ``zero=False``)."""

    def free(self, ptr: int) -> None:
        """Give an allocation back."""

    def copy_htod(self, dst_ptr: int, src: Any) -> None:
        """Host bytes to the device."""

    def copy_dtoh(self, dst: Any, src_ptr: int) -> None:
        """Device bytes into a writable host buffer."""

    def copy_dtoh_many(self, pairs: Any) -> None:
        """Several readbacks, one submit and one wait."""

    def read_bytes(self, src_ptr: int, nbytes: int) -> bytes:
        """A few device bytes (a scalar) as ``bytes``."""

    def copy_dtod(self, dst_ptr: int, src_ptr: int, nbytes: int) -> None:
        """A device-to-device copy."""

    def synchronize(self) -> None:
        """Wait for every recorded operation."""

    def supports(self, feature: str | None) -> bool:
        """Whether the device has a WebGPU feature (None: always)."""

    def resolve(self, ptr: int, nbytes: int) -> tuple[Any, int]:
        """The allocation holding ``nbytes`` at ``ptr`` and the offset into it."""

    def window(self, ptr: int, nbytes: int, itemsize: int) -> Any:
        """A bindable window over ``nbytes`` at ``ptr``."""

    def max_window_bytes(self) -> int:
        """The largest window one binding can expose."""


class Operations(Protocol):
    """The launchers the namespace calls (module in ``OPERATION_MODULES``), backend first."""

    # ---- elementwise (ops_elementwise)
    def elementwise(self, backend: Device, expr: str, expr_type: str, inputs: Sequence[Any],
                    casts: Sequence[str], out: Any, shape: Sequence[int], *, lets: str = "") -> None:
        """``out = expr(inputs)`` over ``shape`` (strided operands, casts per input)."""

    def launch_plan(self, backend: Device, expr: str, expr_type: str, inputs: Sequence[Any],
                    casts: Sequence[str], out: Any, shape: Sequence[int], *, lets: str = "") -> Any:
        """The replayable plan of one ``elementwise`` call (None when there is nothing to do)."""

    def copy_strided(self, backend: Device, src: Any, dst: Any, shape: Sequence[int]) -> None:
        """``dst = src`` over ``shape`` with NumPy's casting."""

    # ---- reductions, scans, products
    def reduce_strided(self, backend: Device, op: Any, src_ptr: int, src_dtype: Any,
                       shape: Sequence[int], strides: Sequence[int], reduce_axes: int | Iterable[int],
                       dst_ptr: int, dst_dtype: Any, *, acc_dtype: Any = None,
                       dst_strides: Sequence[int] | None = None, ddof: float = 0,
                       prologue: Any = None) -> None:
        """A reduction over strided axes."""

    def scan_strided(self, backend: Device, op: str, src: int, src_dtype: str, shape: Sequence[int],
                     src_strides: Sequence[int], axis: int, dst: int, dst_dtype: str,
                     dst_strides: Sequence[int], *, acc_dtype: str | None = None) -> None:
        """An inclusive scan along ``axis``."""

    def gemm_strided(self, backend: Device, m: int, n: int, k: int, alpha: float, a: int,
                     a_strides: Sequence[int], b: int, b_strides: Sequence[int], beta: float, c: int,
                     c_strides: Sequence[int], batch: int = 1, batch_strides: Sequence[int] = (0, 0, 0),
                     *, dtype: str = "float32", splits: int | None = None) -> None:
        """``C = alpha*A@B + beta*C`` over general strides."""

    def gemm_strided_batched(self, backend: Device, trans_a: Any, trans_b: Any, m: int, n: int, k: int,
                             alpha: float, a: int, lda: int, stride_a: int, b: int, ldb: int,
                             stride_b: int, beta: float, c: int, ldc: int, stride_c: int, batch: int,
                             *, dtype: str = "float32", splits: int | None = None, triangle: int = 0) -> None:
        """cuBLAS-style strided batched gemm (``triangle`` 1 / 2: only C's upper / lower tiles)."""

    def matmul_int(self, backend: Device, m: int, n: int, k: int, batch: int, a: int, a_dtype: str,
                   a_strides: Sequence[int], b: int, b_dtype: str, b_strides: Sequence[int], c: int,
                   c_dtype: str, c_strides: Sequence[int], *, accumulate: bool = False) -> None:
        """Integer matmul (wrapping like NumPy)."""

    # ---- gather, scatter (ops_gather), compaction (ops_compact) and its helpers (ops_counting)
    def gather(self, backend: Device, dtype: str, shape: Sequence[int], src: int,
               src_strides: Sequence[int], src_extent: tuple[int, int], dst: int,
               dst_strides: Sequence[int], indices: Sequence[Any]) -> None:
        """``dst = src[indices]``."""

    def scatter(self, backend: Device, dtype: str, shape: Sequence[int], src: int,
                src_strides: Sequence[int], dst: int, dst_strides: Sequence[int],
                dst_extent: tuple[int, int], indices: Sequence[Any]) -> None:
        """``dst[indices] = src``."""

    def compact_begin(self, backend: Device, src: int, n: int, *, flag: str = "nonzero",
                      dtype: str = "bool", nan_distinct: bool = True) -> Any:
        """Start a stream compaction (count first, write after the count is read)."""

    def unique_finish(self, backend: Device, starts: int, total: int, n: int, perm: int | None,
                      counts: int | None, index: int | None, index_dtype: str = "int64") -> None:
        """The counts and first indices of sorted unique values."""

    def key_range_record(self, backend: Device, src: int, dtype: str, n: int, out: int) -> None:
        """Record the minimum and maximum key of ``src``."""

    def count_values(self, backend: Device, src: int, dtype: str, n: int, lo: int | None, hist: int,
                     span: int, *, range_ptr: int | None = None) -> None:
        """A histogram of integer values."""

    def histogram_limit(self, backend: Device) -> int:
        """The largest histogram ``count_values`` makes."""

    # ---- sorting and searching (ops_sort, ops_search)
    def searchsorted(self, backend: Device, sorted_ptr: int, n: int, queries: int, m: int, dtype: str,
                     out: int, *, side: str = "left", index_dtype: str = "int64") -> None:
        """Insertion points of ``queries`` into a sorted array."""

    def sort_keys(self, backend: Device, src: int, dtype: str, n: int, keys: int, perm: int | None) -> int:
        """Sort the order-preserving keys of ``src`` (and a permutation)."""

    def sort_values(self, backend: Device, src: int, dtype: str, rows: int, n: int, out: int, *,
                    descending: bool = False, ld: int | None = None) -> None:
        """Sort each row."""

    def argsort(self, backend: Device, src: int, dtype: str, rows: int, n: int, out: int, *,
                descending: bool = False, index_dtype: str = "int64", ld: int | None = None) -> None:
        """The stable sorting permutation of each row."""


#: The backend module that implements each operation of :class:`Operations`.
OPERATION_MODULES: dict[str, str] = {
    "elementwise": "ops_elementwise", "launch_plan": "ops_elementwise", "copy_strided": "ops_elementwise",
    "reduce_strided": "ops_reduce", "scan_strided": "ops_scan", "gemm_strided": "ops_gemm",
    "gemm_strided_batched": "ops_gemm", "matmul_int": "ops_matmul_int",
    "gather": "ops_gather", "scatter": "ops_gather", "compact_begin": "ops_compact",
    "unique_finish": "ops_counting", "key_range_record": "ops_counting", "count_values": "ops_counting",
    "histogram_limit": "ops_counting",
    "searchsorted": "ops_search", "sort_keys": "ops_sort", "sort_values": "ops_sort", "argsort": "ops_sort",
}
