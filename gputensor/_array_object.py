"""GpuArray: a strided view of one device allocation, with the Array API's array object methods.

Layout: ``_storage`` owns one backend allocation (freed by its ``__del__`` when the
last array using it is garbage-collected); ``_shape``; ``_strides`` in *elements* (any sign, 0 for
broadcast dimensions); ``_offset``: elements from the allocation start to element ``[0, ..., 0]``;
``_dtype``.  Basic indexing (integers, slices with any step, ``...``, ``None``) returns views that
share the storage.

The methods that run operations -- the operator dunders (generated from the op table),
``__getitem__``/``__setitem__`` and the ``@`` operators -- are :mod:`gputensor._operators`'
(installed on this class when ``gputensor`` is imported): this module sits below the engine and
the namespace and imports neither; it allocates and transfers through ``_runtime``.

Host transfers (what is copied): ``get()``, ``__array__`` (``np.asarray(x)``),
``gputensor.asnumpy`` and the scalar conversions read the array back into new host memory
(waiting for pending work); a WebGPU buffer cannot be mapped by other libraries, so
``__dlpack__`` exports a DLPack capsule of such a *host copy* (``__dlpack_device__`` is the CPU):
``np.from_dlpack(x)`` works and never aliases device memory, and ``copy=False`` raises
``BufferError``. Importing (``gputensor.from_dlpack``, ``asarray``) copies host producers to the
GPU.
"""

from __future__ import annotations

import builtins
import enum
import operator
import types
from typing import Any

import numpy as np

from . import _devices, _dtypes, _runtime
from ._backend.ops_elementwise import extent
from ._devices import DEFAULT_DEVICE, Device, check_device
from ._dtypes import DType
from ._shapes import contiguous_strides, is_contiguous, size_of

__all__ = ["GpuArray"]

_SUPPORTED_API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")


class _Storage:
    """Owns one backend allocation of the device runtime ``rt`` (the current one when it was
    made); frees it there when garbage-collected (``__del__``: unlike a ``weakref.finalize`` it
    registers nothing per allocation, which matters for small ops)."""

    __slots__ = ("ptr", "nbytes", "rt", "__weakref__")

    def __init__(self, nbytes: int, zero: bool = True) -> None:
        # zero=False skips zero-filling a reused pool block
        self.rt = _device_rt()  # (the device alloc allocates on)
        self.ptr = _runtime.alloc(nbytes, zero=zero)
        self.nbytes = nbytes

    def __del__(self) -> None:
        try:
            # the slot (a _WatchedStorage's ``ptr`` is a property)
            ptr = self.ptr if type(self) is _Storage else _STORAGE_PTR.__get__(self)
        except AttributeError:  # the allocation failed in __init__
            return
        try:
            _runtime.free(ptr, self.rt)
        except Exception:  # noqa: BLE001 - interpreter shutdown: nothing left to free into
            pass


_STORAGE_PTR = _Storage.__dict__["ptr"]
_new_object = object.__new__
_current = _runtime.current
#: The only device's runtime while the process uses one device (the allocation fast path
#: stores it as it is); None once a second device is handed out (``_multi``).
_ONLY_RT: _runtime.DeviceRuntime | None = _runtime._DEFAULT


def _device_rt() -> _runtime.DeviceRuntime:
    """The runtime a new allocation belongs to (the current one)."""
    return _ONLY_RT or _current()


def _multi() -> None:
    """A second device was handed out: new storages record the current device."""
    global _ONLY_RT
    _ONLY_RT = None


_devices.on_multi(_multi)


#: shape (a tuple of non-negative ints) -> its C-contiguous strides, for ``GpuArray._empty``.
_CONTIGUOUS: dict[tuple[int, ...], tuple[int, ...]] = {}


class _DLDeviceType(enum.IntEnum):
    CPU = 1


class GpuArray:
    """An n-dimensional array on the WebGPU device (see the module docstring).

    Create arrays with the namespace functions (``gputensor.asarray``, ``zeros``, ...), not with
    this constructor.
    """

    __slots__ = ("_storage", "_shape", "_strides", "_offset", "_dtype", "__weakref__")
    # NumPy must never convert us through __array__ in its operators: None defers them to our
    # reflected operators; ``gputensor._interop_numpy`` replaces it with the ufunc protocol.
    __array_ufunc__ = None
    __hash__ = None  # type: ignore[assignment]  # mutable, like NumPy arrays

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            "GpuArray cannot be constructed directly; use gputensor.asarray, zeros, empty, ..."
        )

    # ---- construction ------------------------------------------------------------------------
    @classmethod
    def _new(cls, storage: _Storage, shape: tuple[int, ...], strides: tuple[int, ...],
             offset: int, dtype: DType) -> GpuArray:
        self = object.__new__(cls)
        self._storage = storage
        self._shape = tuple(int(n) for n in shape)
        self._strides = tuple(int(s) for s in strides)
        self._offset = int(offset)
        self._dtype = dtype
        return self

    @classmethod
    def _empty(cls, shape: tuple[int, ...], dtype: DType, *, zero: builtins.bool = True) -> GpuArray:
        """A new C-contiguous array: contents zero, or unspecified with ``zero=False`` (for
        outputs that are about to be overwritten: no clear of a reused pool block). Raises
        ``TypeError`` for a dtype the device lacks, ``ValueError`` for negative sizes."""
        if type(dtype) is not DType or dtype.feature is not None:  # (feature-free dtypes: always)
            DEFAULT_DEVICE.check_dtype(dtype)
        shape = tuple(map(operator.index, shape))
        strides = _CONTIGUOUS.get(shape)
        if strides is None:
            if any(n < 0 for n in shape):
                raise ValueError(f"negative dimensions are not allowed: {shape}")
            strides = contiguous_strides(shape)
            if len(_CONTIGUOUS) < 1024:
                _CONTIGUOUS[shape] = strides
        return cls._alloc(shape, strides, dtype, size_of(shape) * dtype.itemsize, zero)

    @classmethod
    def _alloc(cls, shape: tuple[int, ...], strides: tuple[int, ...], dtype: DType, nbytes: int,
               zero: builtins.bool) -> GpuArray:
        """``_empty`` without its checks, for callers that validated the arguments already (the
        elementwise fast path): ``shape`` a tuple of non-negative ints, ``strides`` its
        C-contiguous strides (a tuple of ints), ``dtype`` supported by the device, ``nbytes``
        the array's size in bytes."""
        storage = _new_object(_Storage)  # (_Storage(nbytes, zero) without the __init__ call)
        storage.rt = _ONLY_RT or _current()  # (the device alloc allocates on)
        storage.ptr = _runtime.alloc(nbytes, zero=zero)
        storage.nbytes = nbytes
        self = _new_object(cls)
        self._storage = storage
        self._shape = shape
        self._strides = strides
        self._offset = 0
        self._dtype = dtype
        return self

    @classmethod
    def _view(cls, base: GpuArray, shape: tuple[int, ...], strides: tuple[int, ...],
              offset: int) -> GpuArray:
        """A view of ``base``'s storage (``offset`` in elements from the allocation start)."""
        return cls._new(base._storage, shape, strides, offset, base._dtype)

    @classmethod
    def _from_numpy(cls, host: np.ndarray, dtype: DType | None = None) -> GpuArray:
        """Upload ``host`` (converted to ``dtype``, default its own dtype) to a new array."""
        dtype = dtype or _dtypes.dtype_from_any(host.dtype)
        DEFAULT_DEVICE.check_dtype(dtype)
        host = np.asarray(host, dtype=dtype.numpy, order="C")
        out = cls._empty(host.shape, dtype, zero=False)  # the upload overwrites every byte
        _runtime.upload(out._ptr, host)
        return out

    # ---- attributes --------------------------------------------------------------------------
    @property
    def dtype(self) -> DType:
        """The array's data type."""
        return self._dtype

    @property
    def shape(self) -> tuple[int, ...]:
        """The array's dimensions."""
        return self._shape

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self._shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return size_of(self._shape)

    @property
    def device(self) -> Device:
        """The device the array lives on."""
        return _devices.device_of_runtime(runtime_of(self))

    @property
    def strides(self) -> tuple[int, ...]:
        """Strides in *elements* (extension; NumPy's are in bytes)."""
        return self._strides

    @property
    def _ptr(self) -> int:
        """Device pointer of element [0, ..., 0] (what backend operands take)."""
        return self._storage.ptr + self._offset * self._dtype.itemsize

    @property
    def T(self) -> GpuArray:
        """Transpose of a 2-D array; ``ValueError`` for other ranks (the spec's rule)."""
        if self.ndim != 2:
            raise ValueError(f"x.T requires a 2-D array, got {self.ndim}-D; use x.mT or permute_dims")
        return self._view(self, self._shape[::-1], self._strides[::-1], self._offset)

    @property
    def mT(self) -> GpuArray:
        """Transpose of the last two axes; ``ValueError`` for fewer than 2 dimensions."""
        if self.ndim < 2:
            raise ValueError(f"x.mT requires at least 2 dimensions, got {self.ndim}")
        shape = self._shape[:-2] + (self._shape[-1], self._shape[-2])
        strides = self._strides[:-2] + (self._strides[-1], self._strides[-2])
        return self._view(self, shape, strides, self._offset)

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d array")
        return self._shape[0]

    # ---- host transfer ---------------------------------------------------------------------
    def get(self) -> np.ndarray:
        """A NumPy copy of the array (waits for pending work)."""
        if _runtime.multi:
            rt = runtime_of(self)
            if rt is not _current():
                with _runtime.use(rt):
                    return self.get()
        shape, dtype = self._shape, self._dtype
        host = np.empty(shape, dtype=dtype.numpy)
        if host.size == 0:
            return host
        if is_contiguous(shape, self._strides):
            _runtime.download(host, self._ptr)
            return host
        lo, stop = extent(shape, self._strides)
        span = stop - lo
        if span <= 2 * host.size:
            # Read the covered range once and gather on the host (no kernel).
            raw = np.empty(span, dtype=dtype.numpy)
            _runtime.download(raw, self._ptr + lo * dtype.itemsize)
            itemsize = dtype.itemsize
            view = np.lib.stride_tricks.as_strided(
                raw[-lo:], shape=shape, strides=[s * itemsize for s in self._strides]
            )
            host[...] = view
            return host
        _runtime.download_strided(host, self._ptr, dtype.name, self._strides)
        return host

    def __array__(self, dtype: Any = None, copy: builtins.bool | None = None) -> np.ndarray:
        if copy is False:
            raise ValueError("converting a GpuArray to NumPy always copies (copy=False given)")
        host = self.get()
        return host if dtype is None else host.astype(dtype, copy=False)

    def _scalar(self, kind: str) -> Any:
        if self.size != 1:
            raise TypeError(f"only size-1 arrays can be converted to Python {kind} scalars")
        # scalar readback: the element's bytes (one pooled staging buffer, the pending batch and
        # the copy in one submit)
        if _runtime.multi:
            return self.get().reshape(-1)[0].item()
        dtype = self._dtype
        return np.frombuffer(_runtime.read_bytes(self._ptr, dtype.itemsize), dtype=dtype.numpy)[0].item()

    def item(self) -> Any:
        """The value of a size-1 array as a Python scalar (waits for pending work); ``TypeError``
        for other sizes (NumPy raises ``ValueError``; the conversions here all use TypeError)."""
        return self._scalar("item")

    def __bool__(self) -> builtins.bool:
        return builtins.bool(self._scalar("bool"))

    def __int__(self) -> int:
        """The value of a size-1 array as a Python int; ``TypeError`` for complex arrays (as the
        spec and array-api-strict)."""
        if self._dtype.kind == "c":
            raise TypeError("int() is not allowed on complex floating-point arrays")
        return int(self._scalar("int"))

    def __float__(self) -> float:
        """The value of a size-1 array as a Python float; ``TypeError`` for complex arrays (as the
        spec and array-api-strict)."""
        if self._dtype.kind == "c":
            raise TypeError("float() is not allowed on complex floating-point arrays")
        return float(self._scalar("float"))

    def __complex__(self) -> complex:
        return complex(self._scalar("complex"))

    def __index__(self) -> int:
        if self._dtype.kind not in "iu":
            raise TypeError(f"only integer arrays can be used as an index, not {self._dtype}")
        return int(self._scalar("int"))

    def __repr__(self) -> str:
        host = self.get()
        prefix = "GpuArray("
        if host.size == 0 and host.ndim != 1:
            body = f"[], shape={self._shape}"
        else:
            body = np.array2string(host, separator=", ", prefix=prefix)
        return f"{prefix}{body}, dtype={self._dtype.name}, device={str(self.device)!r})"

    def __str__(self) -> str:
        return str(self.get())

    # ---- namespace, device, dlpack ---------------------------------------------------------
    def __array_namespace__(self, /, *, api_version: str | None = None) -> types.ModuleType:
        """The ``gputensor`` module; ``ValueError`` for an unsupported ``api_version``."""
        if api_version is not None and api_version not in _SUPPORTED_API_VERSIONS:
            raise ValueError(f"unsupported Array API version {api_version!r}")
        import gputensor

        return gputensor

    def to_device(self, device: Any, /, *, stream: Any = None) -> Any:
        """The array on ``device`` (a ``Device`` or its name): ``self`` where it lives there
        already, else a copy there (read back to the host, uploaded to ``device``: waits for
        pending work). ``"cpu"``: a NumPy copy (as array-api-compat's ``to_device`` does for
        CuPy). ``ValueError`` for an unknown device or a stream; ``TypeError`` when ``device``
        lacks the array's dtype (float64 on an adapter without ``shader-f64``)."""
        if stream is not None:
            raise ValueError("gputensor has no streams; stream must be None")
        if isinstance(device, str) and device == "cpu":
            return self.get()
        target = check_device(device)
        rt = target._rt()
        if rt is runtime_of(self):
            return self
        host = self.get()
        with _runtime.use(rt):
            return GpuArray._from_numpy(host, self._dtype)

    def __dlpack_device__(self) -> tuple[enum.IntEnum, int]:
        """``(kDLCPU, 0)``: DLPack consumers receive a host copy (see ``__dlpack__``)."""
        return (_DLDeviceType.CPU, 0)

    def __dlpack__(self, /, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: Any = None, copy: builtins.bool | None = None) -> Any:
        """Export a DLPack capsule of a *host copy* of the array: the data is read back from the
        GPU into new NumPy memory (waiting for pending work) and that memory is exported, so the
        consumer never aliases device memory and later writes to either side are not shared.
        ``copy=False`` raises ``BufferError`` (a copy is unavoidable); a ``dl_device`` other than
        the CPU raises ``BufferError``; ``stream`` is ignored (host memory)."""
        if copy is False:
            raise BufferError("gputensor arrays export DLPack through a host copy; copy=False given")
        if dl_device is not None and tuple(dl_device) != (int(_DLDeviceType.CPU), 0):
            raise BufferError(f"gputensor can only export to the CPU, not {dl_device}")
        host = self.get()
        kwargs: dict[str, Any] = {}
        if max_version is not None:
            kwargs["max_version"] = max_version
        return host.__dlpack__(**kwargs)

    # ---- indexing ----------------------------------------------------------------------------
    def _basic_index(self, key: Any) -> tuple[tuple[int, ...], tuple[int, ...], int]:
        """(shape, strides, offset) of the view ``self[key]`` for a basic index.

        Raises ``IndexError`` for out-of-range integers, too many indices, more than one
        ellipsis and unsupported (advanced) index types.
        """
        items = key if isinstance(key, tuple) else (key,)
        parsed: list[Any] = []
        n_ellipsis = 0
        n_dims = 0
        for item in items:
            if item is Ellipsis:
                n_ellipsis += 1
                parsed.append(item)
            elif item is None:
                parsed.append(None)
            elif isinstance(item, slice):
                n_dims += 1
                parsed.append(item)
            elif isinstance(item, (builtins.bool, np.bool_)):
                raise IndexError("boolean scalar indices are not supported (advanced indexing)")
            elif isinstance(item, GpuArray) and item.ndim != 0:
                raise IndexError("array indices are not supported yet (advanced indexing)")
            else:
                try:
                    parsed.append(operator.index(item))
                except TypeError:
                    raise IndexError(
                        "only integers, slices (`:`), ellipsis (`...`) and None (`newaxis`) are "
                        f"valid indices, not {type(item).__name__}"
                    ) from None
                n_dims += 1
        if n_ellipsis > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        if n_dims > self.ndim:
            raise IndexError(
                f"too many indices for array: array is {self.ndim}-dimensional, "
                f"but {n_dims} were indexed"
            )
        if n_ellipsis:
            at = parsed.index(Ellipsis)
            parsed[at : at + 1] = [slice(None)] * (self.ndim - n_dims)
        else:
            parsed.extend([slice(None)] * (self.ndim - n_dims))

        shape: list[int] = []
        strides: list[int] = []
        offset = self._offset
        axis = 0
        empty = False
        for item in parsed:
            if item is None:
                shape.append(1)
                strides.append(0)
                continue
            size, stride = self._shape[axis], self._strides[axis]
            if isinstance(item, slice):
                start, stop, step = item.indices(size)
                length = len(range(start, stop, step))
                if length:
                    offset += start * stride
                else:
                    empty = True
                shape.append(length)
                strides.append(stride * step)
            else:
                if not -size <= item < size:
                    raise IndexError(
                        f"index {item} is out of bounds for axis {axis} with size {size}"
                    )
                offset += (item % size) * stride
            axis += 1
        if empty:
            offset = self._offset
        return tuple(shape), tuple(strides), offset


_STORAGE_SLOT = GpuArray.__dict__["_storage"]


def runtime_of(x: GpuArray) -> _runtime.DeviceRuntime:
    """The device runtime ``x`` lives on, without evaluating a lazy array (whose device is its
    first leaf's); the current one for an array without device memory (a placeholder)."""
    if type(x) is GpuArray:  # (the usual array: its storage slot as it is)
        st = x._storage
        if type(st) is _Storage:
            return st.rt
    else:
        st = _STORAGE_SLOT.__get__(x)
    rt = getattr(st, "rt", None)
    while rt is None:
        leaves = getattr(st, "leaves", None)  # a lazy array's root node
        if not leaves:
            return _current()
        st = _STORAGE_SLOT.__get__(leaves[0])
        rt = getattr(st, "rt", None)
    return rt
