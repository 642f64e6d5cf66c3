"""A compiled fft call: its launch program, its table on the device, and its replay.

:func:`compile_plan` turns a ``fft_planner.Planner``'s records into a :class:`Plan`: one
``launch.LaunchProgram`` (operands 0 the source, 1 the destination, 2 the table, then the
scratch), its float64 table uploaded in the dtype's precision and the spectra of its Bluestein
chirps computed on the device. :meth:`Plan.launch` checks a call's pointers and replays the
program; :class:`KeptPlan` hands a plan to a caller that replays it (``_kept.KeptCall``). No
wgpu here.
"""

from __future__ import annotations

import struct
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import config
from .errors import invalid_argument
from .fft_lengths import knobs
from .fft_planner import Planner, View
from .launch import LaunchProgram

__all__ = ["KeptPlan", "Plan", "compile_plan", "no_placeholder"]

_WORDS = struct.Struct("<28I")


class Plan:
    """A compiled call: its program, its table allocation (base 2, freed with the plan), the
    spans of its operands (bytes from element 0 to the lowest touched byte, bytes touched) and
    their item sizes (the alignment :meth:`launch` checks); ``wrappable``: a program of one
    kernel template without scratch, which a wrapped ``dispatch`` (the profiler's host-time
    mode, test spies) sees through ``LaunchProgram.dispatch``."""

    def __init__(self, backend: Any, program: LaunchProgram, table_ptr: int,
                 spans: tuple[tuple[int, int], tuple[int, int]], items: tuple[int, int] = (1, 1),
                 wrappable: bool = False) -> None:
        self.program = program
        self.table_ptr = table_ptr
        self.spans = spans
        self.items = items
        self.wrappable = wrappable and not program.aux
        #: the program's record step: ``replay`` itself where it allocates no scratch
        self._run = program.run if program.aux else program.replay
        alloc, off = backend.resolve(table_ptr, 0)
        self.table_base = (alloc.buffer, alloc.buffer.size, alloc.nbytes, off, table_ptr)
        weakref.finalize(self, _release, weakref.ref(backend), table_ptr)

    def launch(self, backend: Any, src: int, dst: int) -> None:
        """Record the program for the operands whose element 0 is at ``src`` and ``dst``: the
        range and alignment checks of both (the windows of the program's regions), then the
        replay. BackendError (invalid argument) for pointers out of range or misaligned."""
        (src_lo, src_bytes), (dst_lo, dst_bytes) = self.spans
        src_alloc, src_off = backend.resolve(src + src_lo, src_bytes)
        dst_alloc, dst_off = backend.resolve(dst + dst_lo, dst_bytes)
        src_item, dst_item = self.items
        if (src_off - src_lo) % src_item or (dst_off - dst_lo) % dst_item:
            raise invalid_argument(f"fft: pointers must be multiples of the item size {dst_item}")
        ctx = backend._ctx
        if self.wrappable and ctx.__dict__.get("dispatch") is not None:
            self.program.dispatch(backend, ctx, (src, dst, self.table_ptr))  # a wrapped dispatch
            return
        src_buf = src_alloc.buffer
        dst_buf = dst_alloc.buffer
        bases = [(src_buf, src_buf.size, src_alloc.nbytes, src_off - src_lo, src),
                 (dst_buf, dst_buf.size, dst_alloc.nbytes, dst_off - dst_lo, dst), self.table_base]
        if self._run(backend, ctx, bases, no_placeholder) is False:
            raise invalid_argument("fft: the program did not apply")


class KeptPlan:
    """A plan handed to a caller that replays it for new pointers (``planned``): valid on the
    backend that made it while its context's workgroup limit is unchanged and the knobs the
    plans depend on are those it was made under (``valid_on``: checked where the configuration
    changed since the plan was kept); ``launch(backend, src, dst)`` checks the pointers and
    records it (``Plan.launch``)."""

    __slots__ = ("launch", "_backend", "_knobs", "_generation", "_program")

    def __init__(self, backend: Any, plan: Plan, knob_values: tuple[Any, ...]) -> None:
        self.launch = plan.launch
        self._program = plan.program
        self._backend = weakref.ref(backend)
        self._knobs = knob_values
        self._generation = config.generation

    def valid_on(self, backend: Any) -> bool:
        """Whether the plan holds on ``backend`` now."""
        ctx = backend._ctx
        return (self._backend() is backend and ctx is not None
                and (self._generation == config.generation or knobs() == self._knobs)
                and self._program.max_workgroups == ctx.max_workgroups_per_dim)


def _release(backend_ref: Any, ptr: int) -> None:
    """Free a dropped plan's table (nothing when its backend is gone or was reset)."""
    backend = backend_ref()
    if backend is None:
        return
    try:
        backend.free(ptr)
    except Exception:  # noqa: BLE001 - a retired device's pointer: its memory went with it
        pass


def no_placeholder(backend: Any, itemsize: int, *bindings: Any) -> Any:
    """The placeholder maker of the fft programs, which bind none (never called)."""
    raise invalid_argument("fft: no placeholder bindings")


def _bases(backend: Any, ptrs: Sequence[int]) -> list[tuple[Any, int, int, int, int]]:
    out = []
    for ptr in ptrs:
        alloc, off = backend.resolve(ptr, 0)
        out.append((alloc.buffer, alloc.buffer.size, alloc.nbytes, off, ptr))
    return out


def _upload(backend: Any, values: np.ndarray, dtype: str) -> int:
    host = np.ascontiguousarray(values.astype(np.complex64 if dtype == "complex64" else np.complex128))
    ptr = backend.alloc(max(host.nbytes, 8), zero=False)
    backend.copy_htod(ptr, host)
    return ptr


def _chirp_spectrum(backend: Any, ctx: Any, dtype: str, itemsize: int, wgsl: str, table: np.ndarray,
                    table_ptr: int, m: int, spec: int) -> None:
    """Record the length-m transform of the chirp kernel ``table[spec:spec + m]`` (a copy of it)
    into the plan's table at ``spec``, in its place."""
    sub = Planner(backend, ctx, dtype, itemsize, wgsl)
    sub.transform(m, (1,), View(0, 0, 1, (m,)), View(1, spec, 1, (m,)), False, 1.0)
    sub_records, sub_table = sub.finish()
    kernel_ptr = _upload(backend, table[spec:spec + m], dtype)
    sub_ptr = _upload(backend, sub_table, dtype)
    # the sub-program's operands: 0 the kernel's copy, 1 the plan's table, 2 its own twiddles
    program = LaunchProgram.compile("fft", _WORDS, ctx, sub_records, sub.aux)
    try:
        if not program.run(backend, ctx, _bases(backend, [kernel_ptr, table_ptr, sub_ptr]), no_placeholder):
            raise invalid_argument("fft: the chirp spectrum's program did not apply")
    finally:
        backend.free(kernel_ptr)  # the recorded dispatches keep the pool blocks alive until they run
        backend.free(sub_ptr)


def compile_plan(backend: Any, planner: Planner, kernel: str,
                 spans: tuple[tuple[int, int], tuple[int, int]], items: tuple[int, int] | None = None,
                 wrappable: bool = False) -> Plan:
    """The plan of ``planner``'s records (recorded as ``kernel``): its table uploaded, the
    chirp spectra of its Bluestein transforms recorded; ``spans``, ``items`` (default: the
    source's item size, real with ``planner.real_src``, and the complex one) and ``wrappable``
    as ``Plan``'s."""
    if items is None:
        items = (planner.itemsize // 2 if planner.real_src else planner.itemsize, planner.itemsize)
    ctx = planner.ctx
    chirps = list(planner.chirps)
    records, table = planner.finish()
    table_ptr = _upload(backend, table, planner.dtype)
    try:
        for m, spec in chirps:
            _chirp_spectrum(backend, ctx, planner.dtype, planner.itemsize, planner.wgsl, table, table_ptr, m, spec)
    except BaseException:
        backend.free(table_ptr)
        raise
    return Plan(backend, LaunchProgram.compile(kernel, _WORDS, ctx, records, planner.aux), table_ptr, spans, items,
                 wrappable)
