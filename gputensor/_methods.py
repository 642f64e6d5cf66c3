"""The ndarray-style methods and properties CuPy users reach for, each a thin call of the
namespace function, generated from :data:`NUMPY_METHODS` (``x.sum(axis=0)`` is ``np.sum(x,
axis=0)`` sent through ``__array_function__``: NumPy's signature, the namespace's kernel) plus
the few that are not NumPy functions (``astype``, ``reshape``/``transpose`` with unpacked
arguments, ``fill``, ``tolist``, ``item(*index)``, iteration, ``format``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from . import _dispatch, _dtypes
from ._array_object import GpuArray
from ._interop_numpy import array_function

__all__ = ["NUMPY_METHODS", "install"]

#: Method name -> the NumPy function it is (``x.name(*a, **k)`` is ``np_func(x, *a, **k)``).
NUMPY_METHODS: dict[str, Callable[..., Any]] = {
    name: getattr(np, name)
    for name in ("sum", "mean", "max", "min", "prod", "std", "var", "argmax", "argmin",
                 "cumsum", "cumprod", "all", "any", "ravel", "squeeze", "swapaxes", "clip",
                 "round", "conj", "conjugate", "dot", "nonzero", "argsort", "repeat", "take",
                 "searchsorted")
}


def _numpy_method(name: str, np_func: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: GpuArray, *args: Any, **kwargs: Any) -> Any:
        result = array_function(self, np_func, (GpuArray,), (self, *args), kwargs)
        if result is NotImplemented:
            raise TypeError(f"gputensor arrays have no working {name}() on this build")
        return result

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``numpy.{np_func.__name__}(self, ...)``, computed on the device."
    return method


def astype(self: GpuArray, dtype: Any, order: str = "K", casting: str = "unsafe",
           subok: bool = True, copy: bool = True) -> GpuArray:
    """``gputensor.astype(self, dtype, copy=copy)`` (NumPy's dtype spellings accepted)."""
    return _NS["astype"](self, _dtypes.as_dtype(dtype), copy=copy)


def reshape(self: GpuArray, *shape: Any, order: str = "C", copy: bool | None = None) -> GpuArray:
    """``gputensor.reshape``; the shape as one tuple or unpacked (``x.reshape(2, 3)``)."""
    if order != "C":
        raise ValueError(f"gputensor arrays reshape in C order only, not order={order!r}")
    target = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
    return _NS["reshape"](self, tuple(target), copy=copy)


def transpose(self: GpuArray, *axes: Any) -> GpuArray:
    """``x.transpose()`` reverses the axes; ``x.transpose(1, 0, 2)`` or a tuple permutes them."""
    if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int)):
        axes = () if axes[0] is None else tuple(axes[0])
    return _NS["transpose"](self, axes or None)


def flatten(self: GpuArray, order: str = "C") -> GpuArray:
    """A contiguous 1-D copy (C order)."""
    if order != "C":
        raise ValueError(f"gputensor arrays flatten in C order only, not order={order!r}")
    return _NS["reshape"](_dispatch.contiguous_copy(self), (-1,))


def copy(self: GpuArray, order: str = "C") -> GpuArray:
    """A device-side copy sharing nothing with ``self``."""
    return _dispatch.contiguous_copy(self)


def fill(self: GpuArray, value: Any) -> None:
    """Set every element to the scalar ``value`` (in place)."""
    self[...] = value


def sort(self: GpuArray, axis: int = -1, kind: Any = None, order: Any = None, *,
         stable: Any = None) -> None:
    """Sort in place along ``axis`` (NumPy's method: returns None)."""
    self[...] = _NS["sort"](self, axis=axis)


def tolist(self: GpuArray) -> Any:
    """The values as nested Python lists of Python scalars (a host copy)."""
    return self.get().tolist()


def item(self: GpuArray, *args: Any) -> Any:
    """The element at ``args`` (a flat index or one index per axis; none for a size-1 array) as
    a Python scalar."""
    if not args:
        return self._scalar("item")
    if len(args) == 1 and isinstance(args[0], tuple):
        args = args[0]
    if len(args) == 1 and self.ndim != 1:
        flat = _NS["reshape"](self, (-1,))
        return flat[args[0]]._scalar("item")
    return self[args]._scalar("item")


def _iter(self: GpuArray) -> Iterator[GpuArray]:
    """The sub-arrays along the first axis (views); ``TypeError`` for a 0-d array."""
    if not self.shape:
        raise TypeError("iteration over a 0-d array")
    return (self[i] for i in range(self.shape[0]))


def _format(self: GpuArray, spec: str) -> str:
    if not self.shape:
        return format(self._scalar("item"), spec)
    if not spec:
        return str(self)
    raise TypeError(f"unsupported format string passed to {type(self).__name__}.__format__")


def _real(self: GpuArray) -> GpuArray:
    """The real part (``self`` for real dtypes, as NumPy)."""
    return _NS["real"](self) if self.dtype.kind == "c" else self


def _imag(self: GpuArray) -> GpuArray:
    """The imaginary part (zeros for real dtypes, as NumPy)."""
    return _NS["imag"](self) if self.dtype.kind == "c" else _NS["zeros_like"](self)


_PROPERTIES: dict[str, property] = {
    "nbytes": property(lambda self: self.size * self.dtype.itemsize, doc="Bytes of the elements."),
    "itemsize": property(lambda self: self.dtype.itemsize, doc="Bytes of one element."),
    "real": property(_real),
    "imag": property(_imag),
}

_METHODS: dict[str, Callable[..., Any]] = {
    "astype": astype, "reshape": reshape, "transpose": transpose, "flatten": flatten,
    "copy": copy, "fill": fill, "sort": sort, "tolist": tolist, "item": item,
    "__iter__": _iter, "__format__": _format,
}

_NS: dict[str, Any] = {}


def install(namespace: dict[str, Any]) -> None:
    """Put the methods and properties on :class:`GpuArray` (those it does not define itself);
    they call the functions of ``namespace``."""
    _NS.update(namespace)
    for name, np_func in NUMPY_METHODS.items():
        if name not in GpuArray.__dict__:
            setattr(GpuArray, name, _numpy_method(name, np_func))
    for name, fn in _METHODS.items():
        if name == "item" or name not in GpuArray.__dict__ or name in ("__format__", "__iter__"):
            setattr(GpuArray, name, fn)
    GpuArray.__array_priority__ = 100  # (CuPy's: wins over NumPy arrays in mixed dask graphs)
    for name, prop in _PROPERTIES.items():
        if name not in GpuArray.__dict__:
            setattr(GpuArray, name, prop)
