"""A lost device, retired devices and adapter fallback: what the backend does when a device fails.

No wgpu here; the context's modules (``context``, ``pipelines``, ``bind_groups``, ``transfers``,
``promises``, ``adapters``) and ``webgpu.py`` call these functions at a few points.

Loss. WebGPU loses a device when the driver resets, the GPU is removed, ``device.destroy()`` is
called, or an internal error kills it. wgpu-native then fails every later call on that device
with a validation error whose text says the parent device is lost (wgpu-py only logs its lost
callback). ``classify`` turns such an error (or any error once the context is marked lost) into
``DeviceLostError`` and marks the context (``WgpuContext.lost``: the first cause); from then on
``check`` makes every backend entry point raise it at once, instead of recording work that can
never run. A validation error that does not kill the device (a bad shader, a bad binding) stays
an ordinary ``BackendError`` and the device stays usable.

Continuing. Nothing comes back by itself: ``gputensor.reset()`` (``retire`` here, then a new
backend) drops the device and creates a new one (on a healthy device too), without a restart.
Allocation ids (the high bits of device pointers) come from one process-wide counter, so a
pointer of a retired backend never names an allocation of a later one; ``stale_pointer`` turns
the use of such a pointer -- an array made before the reset -- into ``DeviceLostError``.

Adapter fallback. ``open_first`` creates the device on the best-ranked adapter and, when that
fails (the OpenGL adapter of some NVIDIA machines fails at device creation), moves on to the
next one -- unless the user asked for that adapter (``$GPUTENSOR_ADAPTER``): then the error
names it.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Generator, Sequence
from typing import Any

from .errors import BackendError, BackendErrorKind, device_error

__all__ = ["DeviceLostError", "ALLOCATION_IDS", "check", "classify", "is_lost_text", "open_first",
           "retire", "stale_pointer"]

#: Lower-case fragments of wgpu-native's messages for calls on a lost device.
LOST_MARKERS = ("device is lost", "device lost", "device was lost", "devicelost")

#: Allocation ids of every backend of the process (see the module docstring).
ALLOCATION_IDS = itertools.count(1)


class DeviceLostError(BackendError):
    """The WebGPU device is lost (or was reset): its arrays are gone; ``gputensor.reset()``
    continues on a new device. A ``BackendError`` of kind device error (a ``RuntimeError``)."""

    def __init__(self, message: str, cause: str = "") -> None:
        super().__init__(BackendErrorKind.DEVICE_ERROR, message)
        self.cause = cause or message


#: Dawn's form: ``[Device "label"] is lost.``
_DAWN_LOST = re.compile(r"\[device\b[^\]\n]*\] is lost")


def is_lost_text(text: str) -> bool:
    """Whether a wgpu error message (wgpu-native's or Dawn's) says that the device is lost."""
    low = str(text).lower()
    return any(marker in low for marker in LOST_MARKERS) or _DAWN_LOST.search(low) is not None


def _name(ctx: Any) -> str:
    info = getattr(ctx, "adapter_info", None) or {}
    return f"{info.get('device', '?')} ({info.get('backend_type', '?')})"


def _short(text: str) -> str:
    """What went wrong, from a (multi-line) wgpu message: its line that says the device is lost
    (Dawn's first line, before the calls), else its last line (wgpu-native's cause)."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    lost = [line for line in lines if is_lost_text(line)]
    return lost[-1] if lost else lines[-1] if lines else str(text)


def _lost(ctx: Any, cause: str) -> DeviceLostError:
    cause = _short(cause)
    if ctx is not None and getattr(ctx, "lost", None) is None:
        ctx.lost = cause
    first = getattr(ctx, "lost", None) or cause
    where = f"the WebGPU device {_name(ctx)}" if ctx is not None else "the WebGPU device"
    return DeviceLostError(
        f"{where} is lost ({first}); its arrays are gone. "
        "Call gputensor.reset() to continue on a new device.", first)


def classify(ctx: Any, exc: BackendError) -> BackendError:
    """``exc``, or ``DeviceLostError`` when it says the device is lost or ``ctx`` (a WgpuContext
    or None) is already marked lost (the context is marked then)."""
    if isinstance(exc, DeviceLostError):
        return exc if ctx is None else _lost(ctx, exc.cause)
    if (ctx is not None and getattr(ctx, "lost", None) is not None) or is_lost_text(exc.message):
        return _lost(ctx, exc.message)
    return exc


def check(ctx: Any) -> None:
    """Raise ``DeviceLostError`` when ``ctx`` is marked lost."""
    if ctx.lost is not None:
        raise _lost(ctx, ctx.lost)


def stale_pointer(ptr: int, ident: int, first_id: int, ctx: Any) -> BackendError | None:
    """``DeviceLostError`` for a pointer of allocation ``ident`` that is not live in a backend
    whose first allocation id is ``first_id`` when it belongs to an earlier (retired) backend or
    the backend's device is lost; None otherwise (an ordinary bad pointer)."""
    if getattr(ctx, "lost", None) is not None:
        return _lost(ctx, ctx.lost)
    if 0 < ident < first_id:
        return DeviceLostError(
            f"device pointer {ptr:#x} belongs to an array of a device that was lost or reset "
            "(gputensor.reset()); arrays do not survive their device: make them again"
        )
    return None


def retire(ctx: Any) -> None:
    """Stop using ``ctx`` for good (``gputensor.reset()``): mark it lost and destroy its device,
    which releases its memory (a lost device: nothing to do)."""
    if ctx is None:
        return
    was_lost = ctx.lost is not None
    if not was_lost:
        ctx.lost = "the device was reset (gputensor.reset())"
        try:
            ctx.device.destroy()
        except Exception:  # noqa: BLE001 - a device that fails even to be destroyed is gone anyway
            pass


def open_first(adapters: Sequence[Any], hint: str | None,
               open_steps: Callable[[Any], Generator[Any, Any, Any]],
               describe: Callable[[Any], str]) -> Generator[Any, Any, Any]:
    """Steps (promise-yielding, as ``adapters.device_steps``) that return ``open_steps(a)``'s
    result for the first adapter ``a`` of the ranked ``adapters`` whose device can be created.

    A failure moves on to the next adapter unless ``hint`` (``$GPUTENSOR_ADAPTER``) is set: the
    user asked for that adapter, so BackendError (device error) names it. When every adapter
    fails, BackendError (device error) lists each one with its error."""
    failures = []
    for adapter in adapters:
        try:
            return (yield from open_steps(adapter))
        except Exception as exc:  # noqa: BLE001 - wgpu's own error types and BackendError
            text = exc.message if isinstance(exc, BackendError) else str(exc)
            name = describe(adapter.info)
            if hint:
                raise device_error(
                    f"the adapter {name}, chosen by GPUTENSOR_ADAPTER={hint!r}, failed to create "
                    f"its device: {text}"
                ) from exc
            failures.append(f"{name}: {text}")
    raise device_error("no adapter could create a device: " + "; ".join(failures))
