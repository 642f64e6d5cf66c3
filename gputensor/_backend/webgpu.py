"""WebGpuBackend: the ComputeBackend contract on a WgpuContext.

Device pointers are integers ``(allocation id << 40) + byte offset``: ``ptr + k`` addresses ``k``
bytes into an allocation, as a CUDA pointer does, and resolving one is a shift and a dict lookup.
Operations validate every pointer range before anything is recorded, then hand over to the kernel
modules in ``_backend/ops_*.py``, which bind aligned windows of the buffers (``window``) and pass
element offsets in their parameters.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from . import ops_attention, ops_conv, ops_elementwise, ops_gemm, ops_reduce
from .base import BackendTranspose, BinaryOp, ComputeBackend, ReduceOp, UnaryOp
from .context import WgpuContext, adapter_description
from .errors import invalid_argument, not_initialized, unsupported

_PTR_SHIFT = 40
_OFFSET_MASK = (1 << _PTR_SHIFT) - 1

#: Float dtypes of the BLAS-like operations: name -> (itemsize, WGSL type, required feature).
FLOAT_DTYPES = {
    "float16": (2, "f16", "shader-f16"),
    "float32": (4, "f32", None),
    "float64": (8, "f64", "shader-f64"),
}


@dataclass
class Allocation:
    """One device allocation: its buffer and the size the caller asked for."""

    buffer: Any
    nbytes: int


@dataclass(frozen=True)
class Window:
    """A bindable region of a buffer: bind ``(buffer, offset, size)``, then index from ``first``
    (in elements of the item size the window was made for)."""

    buffer: Any
    offset: int
    size: int
    first: int

    @property
    def binding(self) -> tuple[Any, int, int]:
        return (self.buffer, self.offset, self.size)


class WebGpuBackend(ComputeBackend):
    """ComputeBackend on WebGPU. ``WebGpuBackend()`` is uninitialised until ``init()``."""

    def __init__(self, context: WgpuContext | None = None) -> None:
        self._ctx = context
        self._allocations: dict[int, Allocation] = {}
        self._next_id = 1
        self._lock = threading.Lock()

    # ---- lifecycle ---------------------------------------------------------------------------
    def name(self) -> str:
        return "webgpu"

    def init(self) -> None:
        """Select the adapter and create the device (a second call does nothing)."""
        if self._ctx is None:
            self._ctx = WgpuContext.new()

    async def init_async(self) -> None:
        """Async form of ``init``."""
        if self._ctx is None:
            self._ctx = await WgpuContext.new_async()

    def is_initialized(self) -> bool:
        return self._ctx is not None

    @property
    def context(self) -> WgpuContext:
        """The WgpuContext; BackendError (not initialised) before ``init()``."""
        if self._ctx is None:
            raise not_initialized("call init() before using the webgpu backend")
        return self._ctx

    def __repr__(self) -> str:
        if self._ctx is None:
            return "WebGpuBackend(uninitialised)"
        return f"WebGpuBackend(adapter={adapter_description(self._ctx.adapter_info)!r})"

    def supports(self, feature: str | None) -> bool:
        """Whether the device was granted ``feature`` (None is always supported)."""
        return feature is None or feature in self.context.features

    def float_dtype(self, dtype: str) -> tuple[int, str]:
        """(itemsize, WGSL type) of a float dtype name; BackendError (unsupported) if the device
        lacks the feature, (invalid argument) for an unknown name."""
        try:
            itemsize, wgsl_type, feature = FLOAT_DTYPES[str(dtype)]
        except KeyError:
            raise invalid_argument(f"dtype must be one of {sorted(FLOAT_DTYPES)}, not {dtype!r}") from None
        if not self.supports(feature):
            raise unsupported(f"{dtype} needs the adapter feature {feature!r}, which this adapter lacks")
        return itemsize, wgsl_type

    # ---- memory ------------------------------------------------------------------------------
    def alloc(self, nbytes: int) -> int:
        """Allocate ``nbytes`` (zero-filled) and return a pointer; BackendError on failure."""
        nbytes = int(nbytes)
        if nbytes < 0:
            raise invalid_argument(f"cannot allocate {nbytes} bytes")
        buffer = self.context.create_storage(max(nbytes, 4))
        with self._lock:
            ident = self._next_id
            self._next_id += 1
            self._allocations[ident] = Allocation(buffer, nbytes)
        return ident << _PTR_SHIFT

    def free(self, ptr: int) -> None:
        """Release an allocation (its memory returns once pending work no longer uses it)."""
        ident, offset = divmod(int(ptr), 1 << _PTR_SHIFT)
        with self._lock:
            if offset or ident not in self._allocations:
                raise invalid_argument(f"free of a pointer that is not a live allocation: {ptr:#x}")
            del self._allocations[ident]

    def resolve(self, ptr: int, nbytes: int) -> tuple[Allocation, int]:
        """The allocation and byte offset behind ``ptr``, checking ``nbytes`` fit inside it."""
        self.context
        ptr = int(ptr)
        ident, offset = ptr >> _PTR_SHIFT, ptr & _OFFSET_MASK
        alloc = self._allocations.get(ident)
        if alloc is None or ptr < 0:
            raise invalid_argument(f"unknown or freed device pointer {ptr:#x}")
        if nbytes < 0 or offset + nbytes > alloc.nbytes:
            raise invalid_argument(
                f"access of {nbytes} bytes at offset {offset} is past the end of a "
                f"{alloc.nbytes}-byte allocation"
            )
        return alloc, offset

    def allocation_size(self, ptr: int) -> int:
        """Bytes from ``ptr`` to the end of its allocation."""
        alloc, offset = self.resolve(ptr, 0)
        return alloc.nbytes - offset

    def window(self, ptr: int, nbytes: int, itemsize: int) -> Window:
        """An aligned binding that covers ``nbytes`` from ``ptr``; ``first`` is the element index
        of ``ptr`` inside it. BackendError (invalid argument) if out of range, misaligned for the
        item size, or larger than one binding may be (callers split such work first)."""
        alloc, offset = self.resolve(ptr, nbytes)
        if offset % itemsize:
            raise invalid_argument(f"pointer offset {offset} is not a multiple of the item size {itemsize}")
        ctx = self.context
        start = offset // ctx.storage_offset_alignment * ctx.storage_offset_alignment
        stop = min(alloc.buffer.size, (offset + max(nbytes, itemsize) + 3) // 4 * 4)
        size = max(4, stop - start)
        if size > ctx.max_binding_size:
            raise invalid_argument(f"region of {nbytes} bytes exceeds one binding ({ctx.max_binding_size})")
        return Window(alloc.buffer, start, size, (offset - start) // itemsize)

    def max_window_bytes(self) -> int:
        """The largest region ``window`` accepts wherever it starts."""
        ctx = self.context
        return ctx.max_binding_size - ctx.storage_offset_alignment

    def copy_htod(self, dst_ptr: int, src: Any) -> None:
        """Copy all bytes of ``src`` (bytes, bytearray, memoryview, NumPy array...) to ``dst_ptr``."""
        data = memoryview(src).cast("B") if not isinstance(src, memoryview) or src.ndim != 1 or src.format != "B" else src
        alloc, offset = self.resolve(dst_ptr, data.nbytes)
        self.context.write(alloc.buffer, offset, data)

    def copy_dtoh(self, dst: Any, src_ptr: int) -> None:
        """Fill every byte of the writable ``dst`` from the device bytes at ``src_ptr``."""
        view = memoryview(dst)
        if view.readonly:
            raise invalid_argument("copy_dtoh needs a writable destination")
        if not view.c_contiguous:
            raise invalid_argument("copy_dtoh needs a contiguous destination")
        view = view.cast("B")
        alloc, offset = self.resolve(src_ptr, view.nbytes)
        view[:] = self.context.readback(alloc.buffer, offset, view.nbytes)

    def copy_dtod(self, dst_ptr: int, src_ptr: int, nbytes: int) -> None:
        """Device-to-device copy of ``nbytes`` (recorded; ordered with other work)."""
        src, so = self.resolve(src_ptr, nbytes)
        dst, do = self.resolve(dst_ptr, nbytes)
        if nbytes == 0:
            return
        if so % 4 == 0 and do % 4 == 0 and nbytes % 4 == 0:
            self.context.copy_buffer(src.buffer, so, dst.buffer, do, nbytes)
        else:
            ops_elementwise.copy_bytes(self, dst_ptr, src_ptr, nbytes)

    def synchronize(self) -> None:
        self.context.synchronize()

    # ---- operations ---------------------------------------------------------------------------
    def gemm(self, trans_a: BackendTranspose, trans_b: BackendTranspose, m: int, n: int, k: int,
             alpha: float, a: int, lda: int, b: int, ldb: int, beta: float, c: int, ldc: int,
             *, dtype: str = "float32") -> None:
        ops_gemm.gemm(self, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, dtype=dtype)

    def conv2d_forward(self, input: int, input_shape: tuple[int, int, int, int], filter: int,
                       filter_shape: tuple[int, int, int, int], output: int,
                       output_shape: tuple[int, int, int, int], stride: tuple[int, int] | int,
                       padding: tuple[int, int] | int, *, dtype: str = "float32") -> None:
        ops_conv.conv2d_forward(self, input, input_shape, filter, filter_shape, output, output_shape,
                                stride, padding, dtype=dtype)

    def attention(self, q: int, k: int, v: int, o: int, batch: int, heads: int, seq_q: int,
                  seq_kv: int, head_dim: int, scale: float, causal: bool,
                  *, dtype: str = "float32") -> None:
        ops_attention.attention(self, q, k, v, o, batch, heads, seq_q, seq_kv, head_dim, scale,
                                causal, dtype=dtype)

    def reduce(self, op: ReduceOp, input: int, output: int, shape: tuple[int, ...], axis: int,
               *, dtype: str = "float32") -> None:
        ops_reduce.reduce_contiguous(self, op, input, output, shape, axis, dtype=dtype)

    def unary(self, op: UnaryOp, input: int, output: int, n: int, *, dtype: str = "float32") -> None:
        ops_elementwise.unary(self, op, input, output, n, dtype=dtype)

    def binary(self, op: BinaryOp, a: int, b: int, output: int, n: int, *, dtype: str = "float32") -> None:
        ops_elementwise.binary(self, op, a, b, output, n, dtype=dtype)
