"""WebGpuBackend: the ComputeBackend contract on a WgpuContext.

Device pointers are integers ``(allocation id << 40) + byte offset``: ``ptr + k`` addresses ``k``
bytes into an allocation, as a CUDA pointer does, and resolving one is a shift and a dict lookup.
Allocations come from the caching allocator ``memory_pool.MemoryPool`` (``backend.memory_pool``):
``free`` returns the buffer to the pool and a later ``alloc`` of the same size bin reuses it
(see memory_pool.py for why that is safe while work that used it may still be pending).
Operations validate every pointer range before anything is recorded, then hand over to the kernel
modules in ``_backend/ops_*.py``, which bind aligned windows of the buffers (``window``) and pass
element offsets in their parameters.
"""

from __future__ import annotations

import numbers
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from . import device_state, devices, ops_attention, ops_conv, ops_elementwise, ops_gemm, ops_reduce
from .adapters import adapter_description
from .base import BackendTranspose, BinaryOp, ComputeBackend, ReduceOp, UnaryOp
from .context import WgpuContext
from .errors import invalid_argument, not_initialized, out_of_memory, unsupported
from .host_memory import readable_bytes, writable_bytes
from .memory_pool import MemoryPool
from .transfers import SMALL_READ_MAX
from .wgsl_types import DTYPE_TABLE

_PTR_SHIFT = 40

#: Zero-filling a reused block of at least this many bytes (a multiple of 4) runs the fill kernel
#: on GPUs instead of the clear command (software adapters always use the command).
KERNEL_FILL_MIN = 1 << 20

_POOL_LOCK = threading.Lock()
_OFFSET_MASK = (1 << _PTR_SHIFT) - 1

#: Float dtypes of the BLAS-like operations: name -> (itemsize, WGSL type, required feature).
FLOAT_DTYPES = {t.name: (t.itemsize, *t.native) for t in DTYPE_TABLE.values() if t.native is not None}


def _as_int(what: str, value: Any) -> int:
    """``value`` as an int; BackendError (invalid argument) for anything that is not an integer."""
    if type(value) is int:
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise invalid_argument(f"{what} must be an integer, not {value!r}")
    return int(value)


@dataclass(slots=True)
class Allocation:
    """One device allocation: its buffer (a memory-pool block, possibly larger), the size the
    caller asked for and the binding region ``(buffer, 0, size)`` of all of it, what ``window``
    gives for the whole allocation (None when that is empty or larger than one binding): the
    usual operand, a whole array, is bound without computing it again."""

    buffer: Any
    nbytes: int
    whole: tuple[Any, int, int] | None = None


class Window(NamedTuple):
    """A bindable region of a buffer: bind ``(buffer, offset, size)``, then index from ``first``
    (in elements of the item size the window was made for). A NamedTuple: cheap to make, as one
    is made per operand of every dispatch."""

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
        # Plain dict operations (atomic under the GIL) and an atomic counter: no lock, so that
        # ``free`` is safe in garbage-collector finalizers running inside ``alloc``.
        self._allocations: dict[int, Allocation] = {}
        self._ids = device_state.ALLOCATION_IDS  # shared: no id of a retired backend comes again
        self._first_id = next(self._ids)
        self._pool: MemoryPool | None = None
        devices.register(self)

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
        """The WgpuContext; BackendError (not initialised) before ``init()``, DeviceLostError
        once its device is lost."""
        ctx = self._ctx
        if ctx is None:
            raise not_initialized("call init() before using the webgpu backend")
        if getattr(ctx, "lost", None) is not None:
            device_state.check(ctx)
        return ctx

    def __repr__(self) -> str:
        if self._ctx is None:
            return "WebGpuBackend(uninitialised)"
        return f"WebGpuBackend(adapter={adapter_description(self._ctx.adapter_info)!r})"

    def supports(self, feature: str | None) -> bool:
        """Whether the device was granted ``feature`` (None is always supported).

        Raises BackendError (not initialised) before ``init()``."""
        features = self.context.features
        return feature is None or feature in features

    def float_dtype(self, dtype: str) -> tuple[int, str]:
        """(itemsize, WGSL type) of a float dtype name; BackendError (unsupported) if the device
        lacks the feature, (invalid argument) for an unknown name."""
        try:
            itemsize, wgsl_type, feature = FLOAT_DTYPES[str(dtype)]
        except KeyError:
            raise invalid_argument(f"dtype must be one of {sorted(FLOAT_DTYPES)}, not {dtype!r}") from None
        if not self.supports(feature):
            raise unsupported(f"{dtype} needs the adapter feature {feature!r}, which this adapter lacks", feature)
        return itemsize, wgsl_type

    # ---- memory ------------------------------------------------------------------------------
    @property
    def memory_pool(self) -> MemoryPool:
        """The caching allocator behind ``alloc``/``free``; its ``free_all_blocks`` also drops
        the pooled transfer staging buffers. BackendError (not initialised) before ``init()``."""
        pool = self._pool
        if pool is None:
            ctx = self.context
            with _POOL_LOCK:
                pool = self._pool
                if pool is None:
                    pool = MemoryPool(ctx.create_storage, ctx.release_buffer,
                                      max_size=ctx.max_buffer_size, on_free_all=ctx.clear_staging,
                                      wait=ctx.synchronize)
                    self._pool = pool
        return pool

    def alloc(self, nbytes: int, *, zero: bool = True) -> int:
        """Allocate ``nbytes`` and return a pointer; zero-filled unless ``zero=False`` (then the
        contents are unspecified: a reused block keeps what its last user left, which saves the
        device a clear for memory that is about to be overwritten).

        Raises BackendError: not initialised before ``init()``; invalid argument for a negative
        or non-integer size; out of memory past the adapter's max buffer size or when the device
        (or the pool's limit) refuses even after the pool released its cached blocks (the
        message names the size asked for and the pool's sizes).
        """
        ctx = self._ctx
        pool = self._pool
        if (ctx is not None and pool is not None and type(nbytes) is int
                and 0 < nbytes <= ctx.max_binding_size and getattr(ctx, "lost", None) is None):  # the usual array: a size that binds whole
            buffer, fresh = pool.malloc(nbytes)
            ident = next(self._ids)
            self._allocations[ident] = Allocation(buffer, nbytes, (buffer, 0, (nbytes + 3) // 4 * 4))
            ptr = ident << _PTR_SHIFT
            if zero and not fresh:
                self._zero(ctx, buffer, ptr, nbytes)
            return ptr
        ctx = ctx or self.context
        if type(nbytes) is not int:
            nbytes = _as_int("nbytes", nbytes)
        if nbytes < 0:
            raise invalid_argument(f"cannot allocate {nbytes} bytes")
        if nbytes > ctx.max_buffer_size:
            raise out_of_memory(
                f"{nbytes} bytes exceeds the adapter's max buffer size {ctx.max_buffer_size}"
            )
        pool = self._pool or self.memory_pool
        buffer, fresh = pool.malloc(nbytes)
        # what window(ptr, nbytes, itemsize) gives (pool blocks are multiples of 4 bytes, >= nbytes)
        size = (nbytes + 3) // 4 * 4
        whole = (buffer, 0, size) if nbytes and size <= ctx.max_binding_size else None
        ident = next(self._ids)
        self._allocations[ident] = Allocation(buffer, nbytes, whole)
        ptr = ident << _PTR_SHIFT
        if zero and not fresh and nbytes:  # a fresh buffer is zero already (WebGPU guarantees it)
            self._zero(ctx, buffer, ptr, nbytes)
        return ptr

    def _zero(self, ctx: WgpuContext, buffer: Any, ptr: int, nbytes: int) -> None:
        """Zero-fill the reused block ``buffer`` of the new allocation ``ptr`` (``nbytes``)."""
        if nbytes < KERNEL_FILL_MIN or nbytes % 4 or ctx.is_software:
            ctx.clear(buffer, 0, (nbytes + 3) // 4 * 4)
        else:
            # a GPU's fill kernel runs at the memory bandwidth; its clear command does not
            # (524 GB/s on an H200, benchmarks/host_profile.py), as for copy_dtod
            ops_elementwise.elementwise(self, "x0", "u32", [ops_elementwise.ScalarOperand(0, "uint32")],
                                        ["u32"], ops_elementwise.ArrayOperand(ptr, "uint32", (1,)),
                                        [nbytes // 4])

    def free(self, ptr: int) -> None:
        """Release an allocation: its block returns to the memory pool for reuse by later
        allocations (safe while recorded or submitted work still uses it: see memory_pool.py).

        Raises BackendError: not initialised; invalid argument for a pointer that is not the
        start of a live allocation (double free, unknown or interior pointer).
        """
        if type(ptr) is int and ptr > 0 and not ptr & _OFFSET_MASK and self._ctx is not None:
            alloc = self._allocations.pop(ptr >> _PTR_SHIFT, None)  # (the usual call)
            if alloc is not None:
                self._pool.free(alloc.buffer)  # type: ignore[union-attr]  # set by alloc
                return
        if self._ctx is None:
            self.context  # raises not initialised
        if type(ptr) is not int:
            ptr = _as_int("pointer", ptr)
        ident, offset = ptr >> _PTR_SHIFT, ptr & _OFFSET_MASK
        alloc = self._allocations.pop(ident, None) if ptr >= 0 and not offset else None
        if alloc is None:
            raise invalid_argument(f"free of a pointer that is not a live allocation: {ptr:#x}")
        self._pool.free(alloc.buffer)  # type: ignore[union-attr]  # set by alloc

    def resolve(self, ptr: int, nbytes: int) -> tuple[Allocation, int]:
        """The allocation and byte offset behind ``ptr``, checking ``nbytes`` fit inside it.

        Raises BackendError: not initialised; invalid argument for an unknown or freed pointer,
        a negative size or a range past the end of the allocation.
        """
        if self._ctx is None:
            self.context  # raises not initialised
        if type(ptr) is not int:
            ptr = _as_int("pointer", ptr)
        if type(nbytes) is not int:
            nbytes = _as_int("size", nbytes)
        ident, offset = ptr >> _PTR_SHIFT, ptr & _OFFSET_MASK
        alloc = self._allocations.get(ident)
        if alloc is None or ptr < 0:
            raise (devices.mismatch(ptr, ident, self)
                   or device_state.stale_pointer(ptr, ident, self._first_id, self._ctx)
                   or invalid_argument(f"unknown or freed device pointer {ptr:#x}"))
        if nbytes < 0 or offset + nbytes > alloc.nbytes:
            raise invalid_argument(
                f"access of {nbytes} bytes at offset {offset} is past the end of a "
                f"{alloc.nbytes}-byte allocation"
            )
        return alloc, offset

    def allocation_size(self, ptr: int) -> int:
        """Bytes from ``ptr`` to the end of its allocation (BackendError as ``resolve``)."""
        alloc, offset = self.resolve(ptr, 0)
        return alloc.nbytes - offset

    def window(self, ptr: int, nbytes: int, itemsize: int) -> Window:
        """An aligned binding that covers ``nbytes`` from ``ptr``; ``first`` is the element index
        of ``ptr`` inside it. BackendError (invalid argument) if out of range, misaligned for the
        item size, or larger than one binding may be (callers split such work first)."""
        alloc, offset = self.resolve(ptr, nbytes)
        if offset % itemsize:
            raise invalid_argument(f"pointer offset {offset} is not a multiple of the item size {itemsize}")
        ctx = self._ctx
        align = ctx.storage_offset_alignment  # type: ignore[union-attr]  # resolve checked init
        start = offset // align * align
        buffer = alloc.buffer
        stop = min(buffer.size, (offset + max(nbytes, itemsize) + 3) // 4 * 4)
        size = max(4, stop - start)
        if size > ctx.max_binding_size:  # type: ignore[union-attr]
            raise invalid_argument(f"region of {nbytes} bytes exceeds one binding ({ctx.max_binding_size})")  # type: ignore[union-attr]
        return Window(buffer, start, size, (offset - start) // itemsize)

    def bindings(self, ptrs: Sequence[int], itemsizes: Sequence[int],
                 spans: Sequence[tuple[int, int, int]]) -> tuple[list[tuple[Any, int, int]], list[int]]:
        """``window`` for many operands at once, with less overhead (``ops_elementwise`` binds
        every operand of every dispatch this way): operand ``k`` binds ``count`` elements of
        ``itemsizes[k]`` bytes from element ``start`` of ``ptrs[k]``, where ``spans[k]`` is
        ``(start, count, lo)``. Returns the regions ``(buffer, offset, size)`` to bind and, per
        operand, the window index of its element ``start - lo``. The same checks and
        BackendError (invalid argument) cases as ``window``; a whole allocation (the usual
        operand: a whole array) is bound with the region ``alloc`` computed for it."""
        allocations = self._allocations
        regions = []
        firsts = []
        for ptr, itemsize, (start, count, lo) in zip(ptrs, itemsizes, spans):
            ptr += start * itemsize
            alloc = allocations.get(ptr >> _PTR_SHIFT) if type(ptr) is int else None
            if (alloc is not None and not ptr & _OFFSET_MASK and count * itemsize == alloc.nbytes
                    and alloc.whole is not None):
                regions.append(alloc.whole)  # the whole allocation (a live one: ptr >= 0)
                firsts.append(-lo)
                continue
            win = self.window(ptr, count * itemsize, itemsize)  # every check (BackendError)
            regions.append((win.buffer, win.offset, win.size))
            firsts.append(win.first - lo)
        return regions, firsts

    def max_window_bytes(self) -> int:
        """The largest region ``window`` accepts wherever it starts."""
        ctx = self.context
        return ctx.max_binding_size - ctx.storage_offset_alignment

    def copy_htod(self, dst_ptr: int, src: Any) -> None:
        """Copy all bytes of ``src`` (bytes, bytearray, memoryview, NumPy array...; a
        non-contiguous one in C order) to ``dst_ptr``. Bytes around the range are unchanged.

        Raises BackendError: not initialised; invalid argument for a non-bytes-like ``src`` or a
        range past the end of the allocation.
        """
        ctx = self.context
        data = readable_bytes(src)
        alloc, offset = self.resolve(dst_ptr, data.nbytes)
        ctx.write(alloc.buffer, offset, data)

    def copy_dtoh(self, dst: Any, src_ptr: int) -> None:
        """Fill every byte of the writable, C-contiguous ``dst`` (bytearray, memoryview, NumPy
        array of any dtype) from the device bytes at ``src_ptr``, after all recorded work.

        Raises BackendError: not initialised; invalid argument for a read-only or
        non-contiguous ``dst`` or a range past the end of the allocation.
        """
        ctx = self.context
        view = writable_bytes(dst)
        alloc, offset = self.resolve(src_ptr, view.nbytes)
        if view.nbytes:
            ctx.readback_into(alloc.buffer, offset, view)

    def read_bytes(self, src_ptr: int, nbytes: int) -> bytes:
        """The ``nbytes`` device bytes at ``src_ptr`` after all recorded work, as ``bytes``: the
        scalar conversions' short path (one readback, no host array in between).

        Raises BackendError: not initialised; invalid argument for a range past the end of the
        allocation.
        """
        ctx = self.context
        alloc, offset = self.resolve(src_ptr, nbytes)
        if not nbytes:
            return b""
        if 0 < nbytes <= SMALL_READ_MAX and ctx._mapper is not None:  # (resolve checked the range)
            return ctx._read_small(alloc.buffer, offset, nbytes)
        return ctx.readback(alloc.buffer, offset, nbytes)

    def copy_dtoh_many(self, pairs: Any) -> None:
        """Fill several host destinations at once: ``pairs`` is an iterable of ``(dst, src_ptr)``
        as in ``copy_dtoh``; every copy joins one submit and one wait (what ``gt.asnumpy_many``
        and multi-array readbacks use).

        Raises BackendError as ``copy_dtoh`` (nothing is read when one pair is bad).
        """
        ctx = self.context
        regions, views = [], []
        for dst, src_ptr in pairs:
            view = writable_bytes(dst)
            alloc, offset = self.resolve(src_ptr, view.nbytes)
            if view.nbytes:
                regions.append((alloc.buffer, offset, view.nbytes))
                views.append(view)
        if regions:
            ctx.readback_many_into(regions, views)

    def copy_dtod(self, dst_ptr: int, src_ptr: int, nbytes: int) -> None:
        """Device-to-device copy of ``nbytes`` (recorded; ordered with other work). Overlapping
        ranges of one allocation copy as ``memmove`` does.

        Raises BackendError: not initialised; invalid argument for bad pointers or sizes.
        """
        ctx = self.context
        nbytes = _as_int("nbytes", nbytes)
        src, so = self.resolve(src_ptr, nbytes)
        dst, do = self.resolve(dst_ptr, nbytes)
        if nbytes == 0 or (src is dst and so == do):
            return
        overlap = src is dst and so < do + nbytes and do < so + nbytes
        if so % 4 == 0 and do % 4 == 0 and nbytes % 4 == 0:
            if overlap or ctx.is_software:
                ctx.copy_buffer(src.buffer, so, dst.buffer, do, nbytes)
            else:
                # a GPU's copy kernel (16-byte loads and stores) runs at the memory bandwidth;
                # its copy command does not (840 against 4,280 GB/s on an H200, measured with
                # benchmarks/tune_submit.py); software adapters copy faster with the command
                ops_elementwise.copy_strided(self, ops_elementwise.ArrayOperand(src_ptr, "uint32", (1,)),
                                             ops_elementwise.ArrayOperand(dst_ptr, "uint32", (1,)),
                                             [nbytes // 4])
        elif overlap:
            tmp = self.alloc(nbytes)
            try:
                ops_elementwise.copy_bytes(self, tmp, src_ptr, nbytes)
                ops_elementwise.copy_bytes(self, dst_ptr, tmp, nbytes)
            finally:
                self.free(tmp)
        else:
            ops_elementwise.copy_bytes(self, dst_ptr, src_ptr, nbytes)

    def synchronize(self) -> None:
        """Block until all submitted work is done (BackendError not initialised before init)."""
        self.context.synchronize()

    # ---- operations ---------------------------------------------------------------------------
    # Each checks initialisation first (``self.context`` raises BackendError not initialised),
    # then delegates to its kernel module, which validates everything before recording.
    def gemm(self, trans_a: BackendTranspose, trans_b: BackendTranspose, m: int, n: int, k: int,
             alpha: float, a: int, lda: int, b: int, ldb: int, beta: float, c: int, ldc: int,
             *, dtype: str = "float32") -> None:
        self.context
        ops_gemm.gemm(self, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, dtype=dtype)

    def conv2d_forward(self, input: int, input_shape: tuple[int, int, int, int], filter: int,
                       filter_shape: tuple[int, int, int, int], output: int,
                       output_shape: tuple[int, int, int, int], stride: tuple[int, int] | int,
                       padding: tuple[int, int] | int, *, dtype: str = "float32") -> None:
        self.context
        ops_conv.conv2d_forward(self, input, input_shape, filter, filter_shape, output, output_shape,
                                stride, padding, dtype=dtype)

    def attention(self, q: int, k: int, v: int, o: int, batch: int, heads: int, seq_q: int,
                  seq_kv: int, head_dim: int, scale: float, causal: bool,
                  *, dtype: str = "float32") -> None:
        self.context
        ops_attention.attention(self, q, k, v, o, batch, heads, seq_q, seq_kv, head_dim, scale,
                                causal, dtype=dtype)

    def reduce(self, op: ReduceOp, input: int, output: int, shape: tuple[int, ...], axis: int,
               *, dtype: str = "float32") -> None:
        self.context
        ops_reduce.reduce_contiguous(self, op, input, output, shape, axis, dtype=dtype)

    def unary(self, op: UnaryOp, input: int, output: int, n: int, *, dtype: str = "float32") -> None:
        self.context
        ops_elementwise.unary(self, op, input, output, n, dtype=dtype)

    def binary(self, op: BinaryOp, a: int, b: int, output: int, n: int, *, dtype: str = "float32") -> None:
        self.context
        ops_elementwise.binary(self, op, a, b, output, n, dtype=dtype)
