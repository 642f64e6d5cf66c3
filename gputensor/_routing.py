"""Operations run on their operands' device: the routing of the public API over several devices.

Installed (``install``) when a second device is first handed out (``_devices.on_multi``), so a
process that uses one device pays nothing for it. It wraps the public functions of
``gputensor`` and of its extension modules (``linalg``, ``nn``, ``fft``), the array's methods
and operators and the user-kernel calls: a wrapped call finds the device of its array arguments
(arrays among the positional and keyword arguments and inside lists and tuples of them, two
levels deep), raises ``ValueError`` when they live on different devices (as
array-api-strict does), and runs the call with that device current (``_runtime.use``), so that
its results are allocated there. Calls without array arguments run on the current device;
creation functions place their result by ``device=`` themselves (``_devices.placing``).

Functions bound to a name before the second device was handed out (``from gputensor import
add`` early) are not wrapped: they run on the current device, and a backend handed an array of
another device raises ``ValueError`` (``_backend.devices.DeviceMismatchError``) -- except lazy
(fused) results, which materialise on their leaves' device anyway.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Iterable
from typing import Any

from . import _runtime
from ._array_object import GpuArray, runtime_of

__all__ = ["install", "routed", "runtime_of_args"]

#: Names of ``gputensor`` that are not routed (device management, settings, dtype facts).
_NOT_ROUTED = frozenset({
    "devices", "default_device", "current_device", "set_default_device", "capabilities", "reset",
    "synchronize", "get_default_memory_pool", "fusion", "set_fusion", "fusion_enabled", "autotune",
    "profile", "isdtype", "finfo", "iinfo",
})

#: Array attributes that are not routed (metadata, the namespace, the device move itself).
_NOT_ROUTED_METHODS = frozenset({
    "__init__", "__len__", "__array_namespace__", "__dlpack_device__", "to_device", "_basic_index",
    "__hash__",
})

_EXTENSIONS = ("linalg", "nn", "fft")
_array_type = GpuArray


def _scan(value: Any, depth: int, found: list[Any]) -> None:
    if isinstance(value, _array_type):
        rt = runtime_of(value)
        if found[0] is None:
            found[0], found[1] = rt, value
        elif rt is not found[0]:
            raise ValueError(
                f"arrays on different devices: {found[1].device} and {value.device}; move one "
                "with x.to_device(device) or gt.asarray(x, device=device)")
    elif depth and type(value) in (list, tuple):
        for item in value:
            _scan(item, depth - 1, found)


def runtime_of_args(args: Iterable[Any], kwargs: dict[str, Any]) -> Any:
    """The device runtime of the arrays among ``args`` and ``kwargs`` (None without arrays;
    ``device=`` is not looked at). ``ValueError`` when they live on different devices."""
    found: list[Any] = [None, None]
    for value in args:
        _scan(value, 2, found)
    for name, value in kwargs.items():
        if name != "device":
            _scan(value, 2, found)
    return found[0]


def routed(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` run on the device of its array arguments (see the module docstring)."""
    if getattr(fn, "__gputensor_routed__", False):
        return fn
    array_type = _array_type
    sequences = (list, tuple)
    current = _runtime.current

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        rt = None
        for value in args:  # the usual call: arrays among the positional arguments
            if isinstance(value, array_type):
                other = runtime_of(value)
                if rt is None:
                    rt = other
                elif other is not rt:
                    rt = runtime_of_args(args, kwargs)  # raises ValueError, naming both
            elif type(value) in sequences:
                rt = runtime_of_args(args, kwargs)
                break
        else:
            if kwargs:
                rt = runtime_of_args(args, kwargs)
        if rt is None or rt is current():
            return fn(*args, **kwargs)
        with _runtime.use(rt):
            return fn(*args, **kwargs)

    call.__gputensor_routed__ = True  # type: ignore[attr-defined]
    return call


def _route_module(namespace: dict[str, Any], names: Iterable[str], done: dict[int, Any]) -> None:
    for name in names:
        fn = namespace.get(name)
        if name in _NOT_ROUTED or not isinstance(fn, types.FunctionType):
            continue
        if not getattr(fn, "__module__", "").startswith("gputensor"):
            continue
        wrapper = done.get(id(fn))
        if wrapper is None:
            wrapper = done[id(fn)] = routed(fn)
        namespace[name] = wrapper


def _route_class(cls: type) -> None:
    for name, attr in list(vars(cls).items()):
        if name in _NOT_ROUTED_METHODS:
            continue
        public = not name.startswith("_") or (name.startswith("__") and name.endswith("__"))
        if not public:
            continue
        if isinstance(attr, types.FunctionType):
            setattr(cls, name, routed(attr))
        elif isinstance(attr, property) and name in ("real", "imag"):
            setattr(cls, name, property(routed(attr.fget), attr.fset and routed(attr.fset), attr.fdel, attr.__doc__))


def install(namespace: dict[str, Any], kernel_types: Iterable[type] = ()) -> Callable[[], None]:
    """The hook that routes ``namespace`` (the ``gputensor`` module's globals), its extension
    modules, the array class and ``kernel_types`` (their ``__call__``)."""

    def hook() -> None:
        done: dict[int, Any] = {}
        _route_module(namespace, list(namespace), done)
        for ext in _EXTENSIONS:
            module = namespace.get(ext)
            if isinstance(module, types.ModuleType):
                _route_module(vars(module), list(getattr(module, "__all__", vars(module))), done)
        _route_class(GpuArray)
        for kind in kernel_types:
            call = vars(kind).get("__call__")
            if isinstance(call, types.FunctionType):
                kind.__call__ = routed(call)  # type: ignore[method-assign]

    return hook
