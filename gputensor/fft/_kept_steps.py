"""The steps of ``gputensor.fft``'s calls, kept by call structure and replayed.

A transform function that ran on its operand itself (no conversion, padding or copy of the
input) keeps the steps it took under the call's structure (:func:`call_key`: the function, the
operand's shape, strides, offset parity and dtype, the knobs the plans read, the other arguments
with their types: True and 1 are equal keys, and bool is refused); a later call of that structure
replays them (:meth:`KeptSteps.replay`): a single backend program as its ``_kept.KeptCall`` (a
dict lookup, the result's allocation, the program's replay), several steps in turn.

A step is a ``KeptCall``, a prepared transform (an object with ``run(x)``, its result on an
operand of the structure it was made for, and ``kept()``, its ``KeptCall`` where it is one backend
program, else None) or a callable of the operand.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._array_object import GpuArray
from .._backend import ops_fft
from .._kept import KeptCall

__all__ = ["KeptSteps", "call_key", "first_run", "run_step", "sequence_key"]


def call_key(fn: str, x: Any, *args: Any) -> tuple[Any, ...] | None:
    """The key of a call of ``fn`` on ``x`` with ``args`` (None when ``x`` is not an array: not
    kept); unhashable where an argument is (such calls are not kept either)."""
    if not isinstance(x, GpuArray):
        return None
    return (fn, x._shape, x._strides, x._offset % 2, x._dtype, ops_fft.knobs(), *args, *map(type, args))


def sequence_key(values: Any) -> Any:
    """The part of a key for ``s`` / ``axes``: None, or its type, entries and their types (an
    unhashable object for anything but a tuple or list, whose calls are then not kept)."""
    if values is None:
        return None
    if type(values) is tuple or type(values) is list:
        return (type(values), tuple(values), tuple(map(type, values)))
    return [values]


def run_step(x: GpuArray, step: Any) -> GpuArray | None:
    """The result of ``step`` on ``x`` (of the structure it was made for); None where a kept
    call no longer holds."""
    if type(step) is KeptCall:
        return step.replay(x._ptr)
    run = getattr(step, "run", None)
    return run(x) if run is not None else step(x)


def first_run(x: GpuArray, step: Any) -> tuple[GpuArray, Any]:
    """(result, what to keep) of ``step``'s first run on ``x``: through its ``KeptCall`` where
    it is one backend program (then kept in its place)."""
    kept = getattr(step, "kept", None)
    call = kept() if kept is not None else None
    if call is not None:
        out = call.replay(x._ptr)
        if out is not None:
            return out, call
    out = run_step(x, step)
    assert out is not None  # (only a kept call returns None, and a fresh one holds)
    return out, step


class KeptSteps:
    """The steps of the calls seen, by :func:`call_key` (at most ``size``; full, it starts
    over): a ``KeptCall`` or a tuple of steps."""

    __slots__ = ("_steps", "_size")

    def __init__(self, size: int = 256) -> None:
        self._steps: dict[tuple[Any, ...], Any] = {}
        self._size = size

    def replay(self, key: tuple[Any, ...] | None, x: Any) -> GpuArray | None:
        """The result of the steps kept under ``key`` on ``x``; None when there are none or
        they no longer hold (the caller takes its full path)."""
        if key is None:
            return None
        try:
            steps = self._steps.get(key)
        except TypeError:  # an unhashable argument: refused by the checks
            return None
        if steps is None:
            return None
        if type(steps) is KeptCall:
            return steps.replay(x._ptr)
        for step in steps:
            x = run_step(x, step)
            if x is None:
                return None
        return x

    def keep(self, key: tuple[Any, ...] | None, steps: Sequence[Any]) -> None:
        """Keep ``steps`` (in order; nothing where one is None or the key is unhashable), each
        single backend program among several as its ``KeptCall``."""
        if key is None or not steps or any(s is None for s in steps):
            return
        try:
            hash(key)
        except TypeError:
            return
        if len(steps) > 1:
            steps = [s if type(s) is KeptCall else _kept_or(s) for s in steps]
        if len(self._steps) >= self._size:
            self._steps.clear()
        self._steps[key] = steps[0] if len(steps) == 1 and type(steps[0]) is KeptCall else tuple(steps)


def _kept_or(step: Any) -> Any:
    """``step``'s ``KeptCall`` where it is one backend program, else ``step``."""
    kept = getattr(step, "kept", None)
    call = kept() if kept is not None else None
    return step if call is None else call
