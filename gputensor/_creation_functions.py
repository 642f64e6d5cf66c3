"""Array API creation functions.

``asarray`` accepts GpuArrays, NumPy arrays and scalars (their dtype is kept where the device
supports it; float64/int64/uint64 fall back to float32/int32/uint32 on adapters without the
feature), nested sequences and Python scalars (bool -> bool, int -> the default integer dtype,
float -> the default floating dtype, float32), objects supporting the buffer protocol (read as
NumPy reads a ``memoryview``) and DLPack producers.

``copy=`` semantics (the spec's): ``copy=True`` always returns a new array (a device-side copy of
a GpuArray, contiguous); ``copy=None`` returns a GpuArray itself (the very same object, views
included) unless ``dtype`` asks for a cast, and copies everything else; ``copy=False`` never
copies: it returns a GpuArray itself and raises ``ValueError`` when a copy would be needed (a
cast, or any host data: moving it to the GPU is always a copy). Host data is copied when
``asarray`` is called: changing the NumPy array afterwards does not change the GpuArray.

``zeros``/``empty`` allocate zero-filled memory; ``ones``/``full``/``eye``/``tril``/``triu`` fill
on the device; ``arange``/``linspace`` compute their values on the host (exactly NumPy's) and
upload them. Every creation function allocates when it is called (``MemoryError`` there).
"""

from __future__ import annotations

import builtins
import functools
import math
import operator
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _dispatch, _dtypes
from ._array_object import GpuArray
from ._devices import DEFAULT_DEVICE, check_device, default_dtype, placing
from ._dtypes import DType
from ._shapes import broadcast_strides

__all__ = [
    "arange",
    "asarray",
    "empty",
    "empty_like",
    "eye",
    "from_dlpack",
    "full",
    "full_like",
    "linspace",
    "meshgrid",
    "ones",
    "ones_like",
    "tril",
    "triu",
    "zeros",
    "zeros_like",
]

def _check_dtype_arg(dtype: Any) -> DType | None:
    if dtype is None:
        return None
    return DEFAULT_DEVICE.check_dtype(_dtypes.as_dtype(dtype))


def _shape_arg(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (builtins.bool, np.bool_)):
        raise TypeError("shape must be an int or a tuple of ints, not bool")
    if isinstance(shape, Sequence) and not isinstance(shape, (str, bytes)):
        dims = tuple(shape)
    else:
        dims = (shape,)
    out = []
    for n in dims:
        if isinstance(n, (builtins.bool, np.bool_)):
            raise TypeError("shape entries must be ints, not bool")
        try:
            out.append(operator.index(n))
        except TypeError:
            raise TypeError(f"shape entries must be ints, not {type(n).__name__}") from None
    if any(n < 0 for n in out):
        raise ValueError(f"negative dimensions are not allowed: {tuple(out)}")
    return tuple(out)


@functools.lru_cache(maxsize=1)
def _host_memory() -> int:
    """Bytes of physical host memory (0 when unknown; read once)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0


def _check_request(count: int, dtype: DType, host_bytes: int = 0) -> None:
    """``MemoryError`` at once when ``count`` elements of ``dtype`` exceed the adapter's largest
    buffer or the memory pool's limit, or when the ``host_bytes`` of host memory the values are
    computed in exceed the host's memory (checked before any memory is spent)."""
    host = _host_memory()
    if host and host_bytes > host:
        raise MemoryError(f"an array of {count} elements needs {host_bytes} bytes of host memory to "
                          f"compute its values; the host has {host}")
    nbytes = int(count) * dtype.itemsize
    pool = _dispatch.backend().memory_pool
    limit = _dispatch.backend().context.max_buffer_size
    where = "the adapter's max buffer size"
    if pool.get_limit():
        room = pool.get_limit() - pool.used_bytes()  # (the pool releases its cache when needed)
        if room < limit:
            limit, where = room, f"the room left under the memory pool's limit of {pool.get_limit()} bytes"
    if nbytes > limit:
        raise MemoryError(f"an array of {count} {dtype} elements ({nbytes} bytes) exceeds {where} "
                          f"({limit} bytes)")


def _device_dtype(host: np.ndarray) -> DType:
    """The gputensor dtype host data of NumPy dtype ``host.dtype`` is stored as, never changing
    a value: its own dtype (int64/uint64 without ``shader-int64``: emulated as two 32-bit
    words); float64 without ``shader-f64``: ``TypeError`` saying how to convert."""
    dtype = _dtypes.dtype_from_any(host.dtype)
    if DEFAULT_DEVICE.supports_dtype(dtype):
        return dtype
    raise DEFAULT_DEVICE.unsupported(dtype)


def _python_kind(values: np.ndarray) -> str:
    kind = values.dtype.kind
    if kind == "b":
        return "bool"
    if kind in "iu":
        return "int"
    if kind == "f":
        return "float"
    if kind == "c":
        return "complex"
    raise TypeError(f"cannot make an array from values of NumPy dtype {values.dtype}")


def _from_python(obj: Any, dtype: DType | None) -> GpuArray:
    """Nested sequences / Python scalars (possibly holding 0-d GpuArrays and NumPy scalars)."""
    if isinstance(obj, (list, tuple)):
        obj = _unwrap_nested(obj)
    try:
        values = np.asarray(obj)
    except (ValueError, OverflowError) as exc:
        if isinstance(exc, OverflowError) or "too large" in str(exc):
            raise OverflowError(str(exc)) from None
        raise ValueError(f"cannot make an array from {type(obj).__name__}: {exc}") from None
    if values.dtype == object:
        # Python ints beyond int64 land here; anything else is not array data.
        if all(isinstance(v, int) and not isinstance(v, builtins.bool) for v in values.flat):
            target = dtype or default_dtype("int")
            for v in values.flat:
                _dtypes.check_scalar_in_range(target, v)
        raise TypeError(f"cannot make an array from {type(obj).__name__} data")
    kind = _python_kind(values)
    if kind == "complex" and dtype is not None and dtype.kind != "c":
        raise TypeError(f"complex values cannot be stored as {dtype}")
    if dtype is None:
        dtype = default_dtype(kind)
        if kind == "int":
            info = np.iinfo(dtype.numpy)
            if values.size and (values.min() < info.min or values.max() > info.max):
                raise OverflowError(f"Python int out of bounds for the default dtype {dtype}")
    elif dtype.kind in "iu" and kind == "int" and values.size:
        info = np.iinfo(dtype.numpy)
        if int(values.min()) < info.min or int(values.max()) > info.max:
            raise OverflowError(f"Python int out of bounds for {dtype}")
    if values.dtype == dtype.numpy:
        return GpuArray._from_numpy(values, dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        return GpuArray._from_numpy(values.astype(dtype.numpy), dtype)


def _unwrap_nested(obj: Any) -> Any:
    if isinstance(obj, GpuArray):
        return obj.get()
    if isinstance(obj, (list, tuple)):
        return [_unwrap_nested(item) for item in obj]
    return obj


@placing
def asarray(
    obj: Any,
    /,
    *,
    dtype: DType | None = None,
    device: Any = None,
    copy: builtins.bool | None = None,
) -> GpuArray:
    """Convert ``obj`` to a GpuArray (see the module docstring for what is accepted).

    Raises ``TypeError`` for unsupported dtypes/values, ``ValueError`` for ``copy=False`` when a
    copy is needed and for ragged sequences, ``OverflowError`` for Python ints out of range.
    """
    target = check_device(device)
    dtype = _check_dtype_arg(dtype)
    if isinstance(obj, GpuArray):
        if device is not None and obj.device != target:
            if copy is False:
                raise ValueError(f"moving an array from {obj.device} to {device} is a copy (copy=False given)")
            obj = obj.to_device(device)
            if dtype is None or dtype == obj.dtype:
                return obj
        if dtype is not None and dtype != obj.dtype:
            if copy is False:
                raise ValueError(f"casting {obj.dtype} to {dtype} needs a copy (copy=False given)")
            return _dispatch.contiguous_copy(obj, dtype)
        if copy:
            return _dispatch.contiguous_copy(obj)
        return obj
    if copy is False:
        raise ValueError("copying host data to the GPU is always a copy (copy=False given)")
    if isinstance(obj, (builtins.bool, int, float, complex)) and not isinstance(obj, np.generic):
        return _from_python(obj, dtype)
    if isinstance(obj, (np.ndarray, np.generic)):
        host = np.asarray(obj)
        if host.dtype.kind not in "biufc":
            raise TypeError(f"NumPy dtype {host.dtype} is not supported by gputensor")
        target = dtype or _device_dtype(host)
        with np.errstate(over="ignore", invalid="ignore"):
            return GpuArray._from_numpy(host.astype(target.numpy, copy=False), target)
    if isinstance(obj, (list, tuple)):
        return _from_python(obj, dtype)
    if isinstance(obj, (bytes, bytearray, memoryview)) or _supports_buffer(obj):
        host = np.asarray(memoryview(obj))
        return asarray(host, dtype=dtype)
    if hasattr(obj, "__dlpack__"):
        return asarray(from_dlpack(obj), dtype=dtype)
    if hasattr(obj, "__array__"):
        return asarray(np.asarray(obj), dtype=dtype)
    raise TypeError(f"cannot convert {type(obj).__name__} to a gputensor array")


def _supports_buffer(obj: Any) -> builtins.bool:
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


# ---- shapes filled with one value ---------------------------------------------------------
@placing
def empty(shape: int | tuple[int, ...], *, dtype: DType | None = None, device: Any = None) -> GpuArray:
    """A new array of ``shape`` (contents unspecified: a block reused from the memory pool keeps
    old data; no time is spent zero-filling)."""
    check_device(device)
    return GpuArray._empty(_shape_arg(shape), _check_dtype_arg(dtype) or default_dtype("float"),
                           zero=False)


@placing
def zeros(shape: int | tuple[int, ...], *, dtype: DType | None = None, device: Any = None) -> GpuArray:
    """A new array of zeros (a new buffer is zero-filled; a reused pool block is cleared on the
    device)."""
    check_device(device)
    return GpuArray._empty(_shape_arg(shape), _check_dtype_arg(dtype) or default_dtype("float"))


def _fill_value_dtype(fill_value: Any) -> DType:
    if isinstance(fill_value, complex):
        return default_dtype("complex")
    if isinstance(fill_value, builtins.bool):
        return default_dtype("bool")
    if isinstance(fill_value, int):
        return default_dtype("int")
    if isinstance(fill_value, float):
        return default_dtype("float")
    if isinstance(fill_value, GpuArray) and fill_value.ndim == 0:
        return fill_value.dtype
    raise TypeError(f"fill_value must be a Python scalar, not {type(fill_value).__name__}")


@placing
def full(shape: int | tuple[int, ...], fill_value: Any, *, dtype: DType | None = None,
         device: Any = None) -> GpuArray:
    """A new array filled with ``fill_value`` (Python bool/int/float/complex; dtype defaults from
    its kind). Raises ``OverflowError`` for ints out of the dtype's range, ``TypeError`` for a
    complex value with a real ``dtype``."""
    check_device(device)
    return _full(_shape_arg(shape), fill_value, _check_dtype_arg(dtype) or _fill_value_dtype(fill_value))


def _full(shape: tuple[int, ...], fill_value: Any, dtype: DType) -> GpuArray:
    """``full`` on the current device, its arguments checked (``shape``: non-negative ints)."""
    zero = isinstance(fill_value, int) and fill_value == 0  # else the fill writes every element
    out = GpuArray._empty(shape, dtype, zero=zero)
    if isinstance(fill_value, GpuArray):
        _dispatch.copy_into(out, fill_value)
    elif isinstance(fill_value, int) and fill_value == 0:
        _dispatch.scalar_value(fill_value, dtype)  # validation only: memory is zero-filled
    else:
        _dispatch.fill(out, fill_value)
    return out


@placing
def ones(shape: int | tuple[int, ...], *, dtype: DType | None = None, device: Any = None) -> GpuArray:
    """A new array of ones."""
    check_device(device)
    dtype = _check_dtype_arg(dtype) or default_dtype("float")
    return _full(_shape_arg(shape), True if dtype == _dtypes.bool else 1, dtype)


def empty_like(x: GpuArray, /, *, dtype: DType | None = None, device: Any = None) -> GpuArray:
    """A new array with the shape (and default dtype) of ``x``."""
    return empty(_like(x).shape, dtype=dtype or x.dtype, device=x.device if device is None else device)


def zeros_like(x: GpuArray, /, *, dtype: DType | None = None, device: Any = None) -> GpuArray:
    """Zeros with the shape (and default dtype) of ``x``."""
    return zeros(_like(x).shape, dtype=dtype or x.dtype, device=x.device if device is None else device)


def ones_like(x: GpuArray, /, *, dtype: DType | None = None, device: Any = None) -> GpuArray:
    """Ones with the shape (and default dtype) of ``x``."""
    return ones(_like(x).shape, dtype=dtype or x.dtype, device=x.device if device is None else device)


def full_like(x: GpuArray, /, fill_value: Any, *, dtype: DType | None = None,
              device: Any = None) -> GpuArray:
    """``fill_value`` with the shape (and default dtype) of ``x``."""
    return full(_like(x).shape, fill_value, dtype=dtype or x.dtype, device=x.device if device is None else device)


def _like(x: Any) -> GpuArray:
    if not isinstance(x, GpuArray):
        raise TypeError(f"expected a gputensor array, got {type(x).__name__}")
    return x


# ---- ranges ----------------------------------------------------------------------------------
def _real_scalar(value: Any, name: str) -> int | float:
    kind = type(value)
    if kind is int or kind is float:
        return value
    if isinstance(value, complex) or isinstance(value, (builtins.bool, np.bool_)):
        raise TypeError(f"{name} must be a real number, not {type(value).__name__}")
    if isinstance(value, (int, float, np.integer, np.floating)):
        return value.item() if isinstance(value, np.generic) else value
    raise TypeError(f"{name} must be a real number, not {type(value).__name__}")


def _complex_scalar(value: Any, name: str) -> complex:
    if isinstance(value, (builtins.bool, np.bool_)):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    if isinstance(value, (int, float, complex, np.number)):
        return complex(value)
    raise TypeError(f"{name} must be a number, not {type(value).__name__}")


@placing
def arange(start: int | float, /, stop: int | float | None = None, step: int | float = 1, *,
           dtype: DType | None = None, device: Any = None) -> GpuArray:
    """Evenly spaced values in ``[start, stop)``: NumPy's ``arange`` values (computed in float64
    for floating dtypes, then rounded to ``dtype``).

    The default dtype is the default integer dtype when all arguments are ints, else the
    default floating dtype. Raises ``ValueError`` for ``step == 0``, ``TypeError`` for
    non-real arguments.
    """
    check_device(device)
    dtype = _check_dtype_arg(dtype)
    if stop is None:
        start, stop = 0, start
    start = _real_scalar(start, "start")
    stop = _real_scalar(stop, "stop")
    step = _real_scalar(step, "step")
    if step == 0:
        raise ValueError("arange step must not be zero")
    all_int = all(isinstance(v, int) for v in (start, stop, step))
    if dtype is None:
        dtype = default_dtype("int" if all_int else "float")
    if dtype == _dtypes.bool or dtype.kind == "c":
        raise TypeError(f"arange needs a real numeric dtype, not {dtype}")
    if all_int:
        count = len(range(start, stop, step))
    else:
        count = max(0, math.ceil((stop - start) / step)) if math.isfinite((stop - start) / step) else -1
        if count < 0:
            raise ValueError(f"arange({start}, {stop}, {step}) has no finite length")
    _check_request(count, dtype, 16 * count)  # 8-byte values and their cast
    if all_int and dtype.kind in "iu":
        values = np.arange(start, stop, step, dtype=np.int64 if dtype.kind == "i" else np.uint64)
    else:  # NumPy's float64 values (start + i * delta), rounded to the dtype
        values = np.arange(start, stop, step, dtype=np.float64)
    if values.dtype == dtype.numpy:
        return GpuArray._from_numpy(values, dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        return GpuArray._from_numpy(values.astype(dtype.numpy), dtype)


@placing
def linspace(start: int | float, stop: int | float, /, num: int, *, dtype: DType | None = None,
             device: Any = None, endpoint: builtins.bool = True) -> GpuArray:
    """``num`` evenly spaced values from ``start`` to ``stop`` (NumPy's ``linspace`` values,
    computed in float64 / complex128 and rounded to ``dtype``). Complex bounds give the default
    complex dtype when ``dtype`` is None.

    Raises ``ValueError`` for negative ``num``, ``TypeError`` for non-numeric bounds, complex
    bounds with a real ``dtype`` and non-floating dtypes.
    """
    check_device(device)
    is_complex = isinstance(start, (complex, np.complexfloating)) or isinstance(stop, (complex, np.complexfloating))
    dtype = _check_dtype_arg(dtype) or default_dtype("complex" if is_complex else "float")
    if dtype.kind not in "fc":
        raise TypeError(f"linspace needs a floating dtype, not {dtype}")
    if dtype.kind == "c":
        start = _complex_scalar(start, "start")
        stop = _complex_scalar(stop, "stop")
    else:
        start = _real_scalar(start, "start")
        stop = _real_scalar(stop, "stop")
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"num must be non-negative, got {num}")
    _check_request(num, dtype, (32 if dtype.kind == "c" else 16) * num)
    wide = np.complex128 if dtype.kind == "c" else np.float64
    values = np.linspace(start, stop, num, endpoint=endpoint, dtype=wide)
    return GpuArray._from_numpy(values.astype(dtype.numpy), dtype)


@placing
def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: DType | None = None,
        device: Any = None) -> GpuArray:
    """A 2-D array with ones on the ``k``-th diagonal (filled on the device through a strided
    view of the diagonal)."""
    check_device(device)
    n_rows = operator.index(n_rows)
    n_cols = n_rows if n_cols is None else operator.index(n_cols)
    k = operator.index(k)
    if n_rows < 0 or n_cols < 0:
        raise ValueError(f"negative dimensions are not allowed: ({n_rows}, {n_cols})")
    dtype = _check_dtype_arg(dtype) or default_dtype("float")
    out = GpuArray._empty((n_rows, n_cols), dtype)
    if k >= 0:
        length = max(0, min(n_rows, n_cols - k))
        start = k
    else:
        length = max(0, min(n_rows + k, n_cols))
        start = -k * n_cols
    if length:
        diagonal = GpuArray._view(out, (length,), (n_cols + 1,), start)
        _dispatch.fill(diagonal, True if dtype == _dtypes.bool else 1)
    return out


def meshgrid(*arrays: GpuArray, indexing: str = "xy") -> list[GpuArray]:
    """Coordinate matrices from 1-D arrays (``indexing`` 'xy' or 'ij'); the results are new
    contiguous arrays. Raises ``ValueError`` for a bad ``indexing`` or non-1-D inputs,
    ``TypeError`` for mixed dtypes."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"indexing must be 'xy' or 'ij', not {indexing!r}")
    for a in arrays:
        if not isinstance(a, GpuArray):
            raise TypeError(f"meshgrid expects gputensor arrays, got {type(a).__name__}")
        if a.ndim != 1:
            raise ValueError(f"meshgrid expects 1-D arrays, got a {a.ndim}-D array")
    if len({a.dtype for a in arrays}) > 1:
        raise TypeError("meshgrid expects arrays of one dtype")
    sizes = [a.shape[0] for a in arrays]
    n = len(arrays)
    if indexing == "xy" and n >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out_shape = tuple(sizes)
    results = []
    for i, a in enumerate(arrays):
        axis = i
        if indexing == "xy" and n >= 2 and i < 2:
            axis = 1 - i
        shape = [1] * n
        shape[axis] = a.shape[0]
        strides = [0] * n
        strides[axis] = a._strides[0]
        view = GpuArray._view(a, tuple(shape), tuple(strides), a._offset)
        out = GpuArray._empty(out_shape, a.dtype)
        _dispatch.copy_into(out, view)
        results.append(out)
    return results


def _triangle_mask(rows: int, cols: int, k: int, lower: builtins.bool) -> GpuArray:
    """The ``(rows, cols)`` bool keep-mask of ``tril``/``triu``, built on the device: whether
    element ``[i, j]`` is kept depends only on ``j - i``, so the mask is a ``(-1, 1)``-strided view
    of a step of ``rows + cols - 1`` bools (``step[rows - 1 + j - i]``), zeroed and then filled
    True over one range (no host data, O(rows + cols) device work)."""
    if rows == 0 or cols == 0:
        return GpuArray._empty((rows, cols), _dtypes.bool)
    length = rows + cols - 1
    edge = rows - 1 + k  # step index of the diagonal ``j - i == k``
    if lower:  # keep j - i <= k
        start, stop = 0, builtins.min(builtins.max(edge + 1, 0), length)
    else:  # keep j - i >= k
        start, stop = builtins.min(builtins.max(edge, 0), length), length
    step = GpuArray._empty((length,), _dtypes.bool)
    if stop > start:
        _dispatch.fill(GpuArray._view(step, (stop - start,), (1,), start), True)
    return GpuArray._view(step, (rows, cols), (-1, 1), rows - 1)


def _triangle(x: GpuArray, k: int, lower: builtins.bool) -> GpuArray:
    if not isinstance(x, GpuArray):
        raise TypeError(f"expected a gputensor array, got {type(x).__name__}")
    if x.ndim < 2:
        raise ValueError(f"x must have at least 2 dimensions, got {x.ndim}")
    k = operator.index(k)
    rows, cols = x.shape[-2:]
    mask = _triangle_mask(rows, cols, k, lower)
    zero = (_dispatch.scalar_value(0, x.dtype), x.dtype)
    return _dispatch.run_elementwise("where", [mask, x, zero], [_dtypes.bool, x.dtype, x.dtype],
                                     x.dtype, x.dtype)


def tril(x: GpuArray, /, *, k: int = 0) -> GpuArray:
    """Lower triangle of the last two axes (elements above the ``k``-th diagonal zeroed)."""
    return _triangle(x, k, True)


def triu(x: GpuArray, /, *, k: int = 0) -> GpuArray:
    """Upper triangle of the last two axes (elements below the ``k``-th diagonal zeroed)."""
    return _triangle(x, k, False)


# ---- DLPack ----------------------------------------------------------------------------------
#: DLPack device types whose memory the host can read (what ``numpy.from_dlpack`` accepts):
#: kDLCPU, kDLCUDAHost, kDLROCMHost, kDLCUDAManaged.
_HOST_DLPACK_DEVICES = (1, 3, 11, 13)


@placing
def from_dlpack(x: Any, /, *, device: Any = None, copy: builtins.bool | None = None) -> GpuArray:
    """An array from a DLPack producer. What is copied:

    * a gputensor array is returned as it is (no copy; ``copy=True`` makes a device-side copy);
    * any other producer must live in host-readable memory (its ``__dlpack_device__`` is the CPU,
      or pinned/managed host memory): it is imported into NumPy without a copy
      (``numpy.from_dlpack``) and then **copied** to the GPU, so later changes to the producer
      are not seen by the result. ``copy=False`` therefore raises ``BufferError`` for it.
      Producers on another device (a CUDA tensor, say) raise ``BufferError``: move them to the
      host first (zero-copy GPU-to-GPU import is not possible through WebGPU).

    ``device``: where the result lives (a gputensor array on another device is copied there;
    ``ValueError`` for an unknown device). ``TypeError`` for objects
    without ``__dlpack__``. The exporting side is documented at ``GpuArray.__dlpack__``.
    """
    target = check_device(device)
    if isinstance(x, GpuArray):
        if device is not None and x.device != target:
            return x.to_device(device)
        return _dispatch.contiguous_copy(x) if copy else x
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"{type(x).__name__} does not support DLPack")
    if copy is False:
        raise BufferError("importing a DLPack tensor into gputensor copies it to the GPU (copy=False given)")
    if hasattr(x, "__dlpack_device__"):
        kind = int(x.__dlpack_device__()[0])
        if kind not in _HOST_DLPACK_DEVICES:
            raise BufferError(
                f"gputensor imports DLPack tensors from host memory only; this producer is on DLPack "
                f"device type {kind}: copy it to the host first"
            )
    host = np.from_dlpack(x)
    return asarray(host)


def _broadcast_view(x: GpuArray, shape: tuple[int, ...]) -> GpuArray:
    """A broadcast view of ``x`` as ``shape`` (ValueError if it does not broadcast)."""
    return GpuArray._view(x, shape, broadcast_strides(x.shape, x._strides, shape), x._offset)
