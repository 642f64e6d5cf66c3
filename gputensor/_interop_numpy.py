"""NumPy's protocols on gputensor arrays, as CuPy implements them.

``__array_ufunc__`` sends NumPy ufuncs (``np.exp(x)``, ``np.add(x, 1, out=y)``,
``np.add.reduce(x, axis=0)``, ``np.float32(2) * x``) and ``__array_function__`` sends NumPy
functions (``np.mean(x, axis=0)``, ``np.concatenate([x, y])``, ``np.where``, ``np.unique``,
``np.linalg.norm``...) to the namespace: results stay on the device. A ufunc or function
gputensor lacks, or an operand that is a NumPy array, makes the protocol return
``NotImplemented``, so NumPy raises ``TypeError`` naming it rather than converting anything
behind the user's back; ``np.asarray(x)`` stays the explicit way to the host.

A NumPy function's arguments are bound with NumPy's own signature, then passed to the
namespace function under its names (the first parameters by position, the others by name or
through :data:`RENAMES`); an argument the namespace function lacks is accepted only at NumPy's
default value, else ``TypeError`` names it. ``out=`` is written with the result.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from . import _dtypes
from ._array_object import GpuArray
from ._numpy_names import ADAPTERS, ALIASES

__all__ = ["install"]

#: NumPy parameter name -> the namespace's, where they differ beyond the leading positional ones.
RENAMES: dict[str, str] = {"ddof": "correction", "a_min": "min", "a_max": "max", "reps": "repetitions"}

#: ufunc methods: (ufunc name, method) -> (namespace function, NumPy's default axis).
UFUNC_METHODS: dict[tuple[str, str], tuple[str, Any]] = {
    ("add", "reduce"): ("sum", 0),
    ("multiply", "reduce"): ("prod", 0),
    ("maximum", "reduce"): ("max", 0),
    ("minimum", "reduce"): ("min", 0),
    ("logical_and", "reduce"): ("all", 0),
    ("logical_or", "reduce"): ("any", 0),
    ("add", "accumulate"): ("cumulative_sum", 0),
    ("multiply", "accumulate"): ("cumulative_prod", 0),
}

#: NumPy functions (``np.linalg.*`` by ``linalg.NAME``) -> namespace names, beyond the same-named
#: ones, ALIASES and ADAPTERS.
FUNCTION_NAMES: dict[str, str] = {
    "linalg.norm": "linalg.norm",
    "linalg.det": "linalg.det",
    "linalg.inv": "linalg.inv",
    "linalg.solve": "linalg.solve",
    "linalg.cholesky": "linalg.cholesky",
    "linalg.qr": "linalg.qr",
    "linalg.eigh": "linalg.eigh",
    "linalg.svd": "linalg.svd",
    "linalg.matrix_rank": "linalg.matrix_rank",
    "linalg.slogdet": "linalg.slogdet",
}

_NAMESPACE: dict[str, Any] = {}
_ADAPTER_FUNCTIONS = frozenset(ADAPTERS.values())
_OPERAND_TYPES = (GpuArray, int, float, complex, bool, np.generic)


def _resolve(name: str) -> Callable[..., Any] | None:
    """The namespace's implementation of NumPy's ``name`` (``linalg.norm`` looks in
    ``gputensor.linalg`` when it exists), or None."""
    name = FUNCTION_NAMES.get(name, name)
    if "." in name:
        module_name, _, attr = name.partition(".")
        module = _NAMESPACE.get(module_name)
        if module is None:
            return None
        if attr == "norm":
            return _linalg_norm(module)
        return getattr(module, attr, None)
    fn = ADAPTERS.get(name) or _NAMESPACE.get(ALIASES.get(name, name))
    return fn if callable(fn) and not isinstance(fn, type) else None


@functools.cache
def _linalg_norm(linalg: Any) -> Callable[..., Any] | None:
    """NumPy's ``linalg.norm`` on the namespace's ``vector_norm``/``matrix_norm``."""
    vector_norm = getattr(linalg, "vector_norm", None)
    if vector_norm is None:
        return None

    def norm(x: GpuArray, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
        if axis is None and x.ndim == 2 and ord not in (None, "fro"):
            return linalg.matrix_norm(x, ord=ord, keepdims=keepdims)
        if isinstance(axis, tuple) and len(axis) == 2 and ord not in (None, "fro"):
            moved = _NAMESPACE["moveaxis"](x, axis, (-2, -1))
            return linalg.matrix_norm(moved, ord=ord, keepdims=keepdims)
        return vector_norm(x, axis=axis, keepdims=keepdims, ord=2 if ord in (None, "fro") else ord)

    return norm


@functools.cache
def _signature(fn: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _is_default(value: Any, default: Any) -> bool:
    if value is default:
        return True
    try:
        return bool(value == default) and type(value) is type(default)
    except Exception:  # noqa: BLE001 - arrays and other odd values are not defaults
        return False


class _Slot:
    """Where one argument of a NumPy call is: positional ``args[index]`` (``name`` None) or
    keyword ``kwargs[name]``."""

    __slots__ = ("index", "name")

    def __init__(self, index: int, name: str | None) -> None:
        self.index = index
        self.name = name

    def value(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return args[self.index] if self.name is None else kwargs[self.name]


class _Translation(NamedTuple):
    """How NumPy's call ``np_func(*args, **kwargs)`` becomes ``impl``'s, for one number of
    positional arguments and one set of keyword names (:func:`_translation`): None
    ``positional`` passes the call through (no signature to translate by); otherwise the slots
    of impl's positional arguments and (impl's name, slot) of its keywords, the slot of
    ``out``, and (NumPy's name, slot, default) of each argument impl lacks, which must hold
    its default."""

    positional: tuple[_Slot, ...] | None
    keywords: tuple[tuple[str, _Slot], ...]
    out: _Slot | None
    defaults: tuple[tuple[str, _Slot, Any], ...]


@functools.lru_cache(maxsize=1024)
def _translation(np_func: Callable[..., Any], impl: Callable[..., Any], nargs: int,
                 names: tuple[str, ...]) -> _Translation:
    """The :class:`_Translation` of calls of ``np_func`` with ``nargs`` positional arguments
    and the keyword ``names`` onto ``impl`` (NumPy's TypeError for a call NumPy's signature
    does not bind)."""
    np_sig, sig = _signature(np_func), _signature(impl)
    if np_sig is None or sig is None:
        return _Translation(None, (), _Slot(0, "out") if "out" in names else None, ())
    slots = [_Slot(k, None) for k in range(nargs)]
    bound = np_sig.bind(*slots, **{name: _Slot(0, name) for name in names})
    passed = dict(bound.arguments)
    for p in np_sig.parameters.values():
        if p.kind is inspect.Parameter.VAR_KEYWORD and p.name in passed:
            passed.update(passed.pop(p.name))
    out = passed.pop("out", None)
    params = list(sig.parameters.values())
    if params and params[0].kind is inspect.Parameter.VAR_POSITIONAL:
        return _Translation(tuple(slots), tuple((n, _Slot(0, n)) for n in names if n != "out"), out, ())
    np_params = [p for p in np_sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    positional: list[_Slot] = []
    lead = [p for p in params if p.kind is p.POSITIONAL_ONLY]
    for _, theirs in zip(lead, np_params):
        if theirs.name not in passed:
            break
        positional.append(passed.pop(theirs.name))
    ours = {p.name for p in params}
    lead_names = {p.name for p in lead}
    keywords: list[tuple[str, _Slot]] = []
    defaults: list[tuple[str, _Slot, Any]] = []
    for name, slot in passed.items():
        target = RENAMES.get(name, name)
        if target in ours and target not in lead_names:
            keywords.append((target, slot))
        else:
            defaults.append((name, slot, np_sig.parameters[name].default if name in np_sig.parameters
                             else inspect.Parameter.empty))
    return _Translation(tuple(positional), tuple(keywords), out, tuple(defaults))


def _translate(np_func: Callable[..., Any], impl: Callable[..., Any], args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any], Any]:
    """``impl``'s positional and keyword arguments for NumPy's call ``np_func(*args,
    **kwargs)``, and its ``out`` (None when not given). Raises NumPy's TypeError for a call
    its signature does not bind, TypeError for an argument ``impl`` lacks that is not at its
    default."""
    plan = _translation(np_func, impl, len(args), tuple(kwargs))
    out = None if plan.out is None else plan.out.value(args, kwargs)
    if plan.positional is None:
        return list(args), {k: v for k, v in kwargs.items() if k != "out"}, out
    for name, slot, default in plan.defaults:
        value = slot.value(args, kwargs)
        if not _is_default(value, default):
            raise TypeError(f"gputensor's {getattr(np_func, '__name__', np_func)} does not "
                            f"support the argument {name}={value!r}")
    return ([slot.value(args, kwargs) for slot in plan.positional],
            {name: slot.value(args, kwargs) for name, slot in plan.keywords}, out)


def _write_out(out: Any, result: Any) -> Any:
    """Store ``result`` in ``out`` (a gputensor array or a 1-tuple of one) and return it."""
    if isinstance(out, tuple):
        if len(out) != 1:
            raise TypeError("out= must hold one array")
        out = out[0]
    if not isinstance(out, GpuArray):
        raise TypeError(f"out= must be a gputensor array, not {type(out).__name__}")
    if tuple(out.shape) != tuple(getattr(result, "shape", ())):
        raise ValueError(f"out= has shape {out.shape}, the result has {getattr(result, 'shape', ())}")
    out[...] = result
    return out


def _operand(value: Any) -> Any:
    """A NumPy scalar as a 0-d device array of its dtype (NumPy 2's strong scalars); other
    operands as they are."""
    if isinstance(value, np.generic):
        return _NAMESPACE["asarray"](value)
    return value


def array_ufunc(self: GpuArray, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
    """``__array_ufunc__``: NumPy ufuncs on gputensor operands (see the module docstring)."""
    out = kwargs.pop("out", None)
    operands = inputs + (out if isinstance(out, tuple) else (() if out is None else (out,)))
    if not all(isinstance(v, _OPERAND_TYPES) for v in operands):
        return NotImplemented
    dtype = kwargs.pop("dtype", None)
    if kwargs.pop("where", True) is not True:
        raise TypeError(f"gputensor does not support where= of numpy.{ufunc.__name__}")
    for key in ("casting", "order", "subok", "signature"):
        kwargs.pop(key, None)
    args = [_operand(v) for v in inputs]
    if method == "__call__":
        if kwargs:
            return NotImplemented
        impl = _resolve(ufunc.__name__)
        if impl is None:
            return NotImplemented
        result = impl(*args)
        if dtype is not None:
            result = _NAMESPACE["astype"](result, _dtypes.as_dtype(dtype))
    elif (ufunc.__name__, method) in UFUNC_METHODS:
        name, default_axis = UFUNC_METHODS[ufunc.__name__, method]
        axis = kwargs.pop("axis", default_axis)
        extra = {"dtype": _dtypes.as_dtype(dtype)} if dtype is not None else {}
        if "keepdims" in kwargs and method == "reduce":
            extra["keepdims"] = kwargs.pop("keepdims")
        if kwargs:
            return NotImplemented
        result = _NAMESPACE[name](args[0], axis=axis, **extra)
    else:
        return NotImplemented
    return result if out is None else _write_out(out, result)


def _numpy_name(func: Any) -> str:
    module = getattr(func, "__module__", "") or ""
    name = getattr(func, "__name__", "")
    if module in ("numpy", "numpy._core.fromnumeric", "numpy._core.numeric"):
        return name
    sub = module.removeprefix("numpy.").split(".")[0]
    return f"{sub}.{name}"


def array_function(self: GpuArray, func: Any, types: tuple[type, ...], args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> Any:
    """``__array_function__``: NumPy functions on gputensor arrays (see the module docstring)."""
    if not all(issubclass(t, GpuArray) for t in types):
        return NotImplemented
    impl = _resolve(_numpy_name(func))
    if impl is None:
        return NotImplemented
    if impl in _ADAPTER_FUNCTIONS:  # written with NumPy's signature
        kwargs = dict(kwargs)
        out = kwargs.pop("out", None)
        result = impl(*args, **kwargs)
        return result if out is None else _write_out(out, result)
    positional, keywords, out = _translate(func, impl, args, dict(kwargs))
    if "dtype" in keywords and keywords["dtype"] is not None:
        keywords["dtype"] = _dtypes.as_dtype(keywords["dtype"])
    result = impl(*positional, **keywords)
    return result if out is None else _write_out(out, result)


def install(namespace: dict[str, Any]) -> None:
    """Put the protocols on :class:`GpuArray`; functions are looked up in ``namespace`` (the
    package's globals: ``gputensor.linalg`` is found once it exists)."""
    global _NAMESPACE
    _NAMESPACE = namespace
    GpuArray.__array_ufunc__ = array_ufunc  # type: ignore[assignment]
    GpuArray.__array_function__ = array_function  # type: ignore[attr-defined]
