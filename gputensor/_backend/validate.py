"""Argument validators of the backend operations: the one place that turns a bad size, stride,
scalar, dtype or pointer into a BackendError (invalid argument / unsupported) before anything
is recorded. No wgpu here; the pointer checks go through ``backend.resolve``.
"""

from __future__ import annotations

import numbers
from collections.abc import Collection, Sequence
from typing import Any

from .errors import invalid_argument, unsupported
from .layout import strided_span
from .wgsl_types import StorageType, storage_type

__all__ = ["check_distinct", "check_dtype", "check_int", "check_ints", "check_pointer", "check_scalar",
           "check_strided_pointer", "check_strides", "launch_base"]


def check_int(name: str, value: Any, minimum: int = 0) -> int:
    """``value`` as an int >= minimum; BackendError (invalid argument) otherwise (bools too)."""
    if type(value) is int and value >= minimum:  # the usual case, without the ABC check
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise invalid_argument(f"{name} must be an integer, not {value!r}")
    value = int(value)
    if value < minimum:
        raise invalid_argument(f"{name} must be >= {minimum}, got {value}")
    return value


def check_ints(name: str, values: Any, count: int | None = None, minimum: int | None = None) -> tuple[int, ...]:
    """``values`` (a sequence, not a string) as a tuple of ints, each >= ``minimum`` when given,
    ``count`` of them when given; BackendError (invalid argument) otherwise."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise invalid_argument(f"{name} must be a sequence of integers, not {values!r}")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise invalid_argument(f"{name} must hold integers, not {values!r}")
        if minimum is not None and v < minimum:
            raise invalid_argument(f"{name} must hold integers >= {minimum}, not {values!r}")
        out.append(int(v))
    if count is not None and len(out) != count:
        raise invalid_argument(f"{name} must have {count} entries (one per dimension), not {len(out)}")
    return tuple(out)


def check_strides(name: str, strides: Any, count: int, what: str = "") -> tuple[int, ...]:
    """``strides`` as a tuple of ``count`` element strides (ints of any sign); ``what`` names
    them in the message (e.g. "(batch, row, column)"). BackendError (invalid argument)
    otherwise."""
    if isinstance(strides, (str, bytes)) or not isinstance(strides, Sequence) or len(strides) != count:
        detail = f" {what}" if what else ""
        raise invalid_argument(f"{name} must be {count} integer element strides{detail}, not {strides!r}")
    out = []
    for s in strides:
        if isinstance(s, bool) or not isinstance(s, numbers.Integral):
            raise invalid_argument(f"{name} must hold integers, not {strides!r}")
        out.append(int(s))
    return tuple(out)


def check_scalar(name: str, value: Any) -> float:
    """``value`` as a float; BackendError (invalid argument) for non-real values (bools too)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise invalid_argument(f"{name} must be a real number, not {value!r}")
    return float(value)


def check_dtype(backend: Any, name: str, dtype: Any, allowed: Collection[str]) -> StorageType:
    """The storage type of ``dtype`` (a name among ``allowed``: a sequence, set or mapping of
    names). BackendError: invalid argument for another value, unsupported when the adapter lacks
    the dtype's feature."""
    if not isinstance(dtype, str) or dtype not in allowed:
        raise invalid_argument(f"{name} must be one of {', '.join(allowed)}, not {dtype!r}")
    st = storage_type(dtype)
    if not backend.supports(st.feature):
        raise unsupported(f"{dtype} needs the adapter feature {st.feature!r}, which this adapter lacks", st.feature)
    return st


def check_pointer(backend: Any, name: str, ptr: Any, nbytes: int, itemsize: int) -> tuple[Any, int]:
    """(allocation, byte offset) of the device pointer ``ptr`` after checking that ``nbytes``
    from it lie in one live allocation and that it is aligned to ``itemsize``. BackendError
    (invalid argument) otherwise."""
    if type(ptr) is not int:
        if isinstance(ptr, bool) or not isinstance(ptr, numbers.Integral):
            raise invalid_argument(f"{name} must be a device pointer, not {ptr!r}")
        ptr = int(ptr)
    alloc, offset = backend.resolve(ptr, nbytes)
    if offset % itemsize:
        raise invalid_argument(f"{name} (offset {offset}) is not aligned to the item size {itemsize}")
    return alloc, offset


def launch_base(backend: Any, name: str, ptr: Any, nbytes: int, itemsize: int) -> tuple[Any, ...]:
    """The ``launch.LaunchProgram`` base of the operand at ``ptr`` after ``check_pointer``'s
    checks (``nbytes`` from it in one live allocation, aligned to ``itemsize``): its buffer, the
    buffer's size, the allocation's size, the pointer's byte offset, the pointer and the
    allocation's whole binding. BackendError (invalid argument) otherwise."""
    alloc, offset = check_pointer(backend, name, ptr, nbytes, itemsize)
    buffer = alloc.buffer
    return (buffer, buffer.size, alloc.nbytes, offset, ptr, alloc.whole)


def check_strided_pointer(backend: Any, name: str, ptr: Any, itemsize: int,
                          dims: Sequence[tuple[int, int]]) -> tuple[Any, int, int]:
    """(allocation, first byte, end byte) of an operand at ``ptr`` (its element [0, ...]) with
    dimensions ``dims`` = [(size, stride), ...] (sizes >= 1, element strides of any sign), after
    checking that every touched element, lowest to highest, lies in one live allocation and that
    the pointer is aligned to ``itemsize``. BackendError (invalid argument) otherwise."""
    if type(ptr) is not int:
        if isinstance(ptr, bool) or not isinstance(ptr, numbers.Integral):
            raise invalid_argument(f"{name} must be a device pointer, not {ptr!r}")
        ptr = int(ptr)
    lo, hi = strided_span(dims)
    nbytes = (hi - lo + 1) * itemsize
    alloc, offset = backend.resolve(ptr + lo * itemsize, nbytes)
    if offset % itemsize:
        raise invalid_argument(f"{name} (offset {offset}) is not aligned to the item size {itemsize}")
    return alloc, offset, offset + nbytes


def check_distinct(name: str, dims: Sequence[tuple[int, int]]) -> None:
    """BackendError (invalid argument) unless the elements of an operand with dimensions
    ``dims`` = [(size, stride), ...] are pairwise distinct: sorted by |stride|, every stride must
    step over everything the smaller ones reach (a sufficient condition: exotic layouts whose
    dimensions interleave without colliding are refused too; every view of a contiguous array
    passes)."""
    reach = 0
    for n, s in sorted(((n, abs(s)) for n, s in dims if n > 1), key=lambda d: d[1]):
        if s <= reach:
            raise invalid_argument(f"{name}'s strides make two of its elements share memory")
        reach += s * (n - 1)
