"""Driving promise-yielding generators: the asynchronous steps of the context, written once.

A step sequence (adapter and device requests, readbacks) is a generator that yields wgpu
promises and returns its result; ``run_sync`` waits on each promise in turn, ``run_async``
awaits it. Errors of wgpu's own types are thrown back into the generator as BackendError
(``wrap_wgpu_error``).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from . import device_state
from .errors import BackendError, device_error, out_of_memory

__all__ = ["run_sync", "run_async", "wrap_wgpu_error"]


def run_sync(steps: Generator[Any, Any, Any], wait: Any = None) -> Any:
    """Drive a promise-yielding generator to completion by waiting on each promise (after
    calling ``wait()``, if given, once before the first wait)."""
    try:
        promise = next(steps)
        if wait is not None:
            wait()
        while True:
            try:
                value = promise.sync_wait()
            except BackendError:
                raise
            except Exception as exc:
                promise = steps.throw(wrap_wgpu_error(exc))
            else:
                promise = steps.send(value)
    except StopIteration as stop:
        return stop.value


async def run_async(steps: Generator[Any, Any, Any]) -> Any:
    """Drive a promise-yielding generator to completion by awaiting each promise."""
    try:
        promise = next(steps)
        while True:
            try:
                value = await promise
            except BackendError:
                raise
            except Exception as exc:
                promise = steps.throw(wrap_wgpu_error(exc))
            else:
                promise = steps.send(value)
    except StopIteration as stop:
        return stop.value


def wrap_wgpu_error(exc: Exception) -> BackendError:
    """A wgpu error as BackendError: DeviceLostError when its text says the device is lost,
    out of memory when it says so, else device error."""
    text = str(exc)
    if device_state.is_lost_text(text):
        return device_state.classify(None, device_error(text))
    if "memory" in text.lower():
        return out_of_memory(text)
    return device_error(text)
