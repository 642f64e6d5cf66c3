"""The backend's error type: one class, five kinds, all catchable as ``BackendError``."""

from __future__ import annotations

import enum
from typing import Any


class BackendErrorKind(enum.Enum):
    """Why a backend call failed."""

    UNSUPPORTED = "unsupported"
    DEVICE_ERROR = "device error"
    INVALID_ARGUMENT = "invalid argument"
    OUT_OF_MEMORY = "out of memory"
    NOT_INITIALIZED = "not initialised"

    def __str__(self) -> str:
        return self.value


def restore_exception(cls: type[BaseException], args: tuple[Any, ...],
                      state: dict[str, Any]) -> BaseException:
    """An exception of ``cls`` with ``args`` and the attributes ``state``, made without calling
    ``cls.__init__`` (what unpickling an exception whose ``__init__`` takes other arguments than
    its ``args`` calls: see ``BackendError.__reduce__``)."""
    exc = cls.__new__(cls, *args)
    exc.args = args
    exc.__dict__.update(state)
    return exc


class BackendError(RuntimeError):
    """An error raised by a compute backend; ``kind`` says which of the five kinds it is.
    Pickles with its message and attributes (subclasses too)."""

    def __init__(self, kind: BackendErrorKind, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.feature: str | None = None
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:
        return restore_exception, (type(self), self.args, self.__dict__)


def invalid_argument(message: str) -> BackendError:
    """A ``BackendError`` of kind invalid argument."""
    return BackendError(BackendErrorKind.INVALID_ARGUMENT, message)


def unsupported(message: str, feature: str | None = None) -> BackendError:
    """A ``BackendError`` of kind unsupported; ``feature``: the adapter feature that is missing
    (kept as the error's ``feature`` attribute), when that is why."""
    error = BackendError(BackendErrorKind.UNSUPPORTED, message)
    error.feature = feature
    return error


def device_error(message: str) -> BackendError:
    """A ``BackendError`` of kind device error."""
    return BackendError(BackendErrorKind.DEVICE_ERROR, message)


def out_of_memory(message: str) -> BackendError:
    """A ``BackendError`` of kind out of memory."""
    return BackendError(BackendErrorKind.OUT_OF_MEMORY, message)


def not_initialized(message: str) -> BackendError:
    """A ``BackendError`` of kind not initialised."""
    return BackendError(BackendErrorKind.NOT_INITIALIZED, message)
