"""One sort as a job (:class:`_Job`: source rows, key mapping, output) and :func:`_launch`, which
records a job's ``LaunchProgram``: planned once per structure, kept per backend, replayed (or
dispatched one by one where a wrapper watches ``WgpuContext.dispatch``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .launch import LaunchProgram, operand_bases
from .sort_common import _PLANS
from .sort_key_code import key_words
from .wgsl_types import storage_type

__all__: list[str] = []


@dataclass(frozen=True)
class _Job:
    """One sort: source rows, key mapping and output (see ``_sort``)."""

    src: int
    dtype: str
    rows: int
    n: int
    ld: int
    mode: str
    descending: bool
    out_mode: int          # 0 keys + values, 1 sorted values, 2 indices
    out: int               # sorted values / indices / keys pointer
    out_dtype: str         # dtype of ``out`` (mode 1: dtype; mode 2: index dtype; mode 0: uint32)
    vals: int | None       # mode 0: values pointer (None: no values)

    @property
    def kw(self) -> int:
        return key_words(self.dtype)

    @property
    def has_vals(self) -> bool:
        return self.out_mode == 2 or (self.out_mode == 0 and self.vals is not None)

    def out_itemsize(self) -> int:
        if self.out_mode == 0:
            return 4 * self.kw
        return storage_type(self.out_dtype).itemsize


def _launch(backend: Any, job: _Job, key: tuple[Any, ...], make: Callable[[], LaunchProgram],
            placeholder: Callable[..., Any], fallback: Callable[[], LaunchProgram] | None = None) -> None:
    """Record the program of ``job``'s structure ``key`` (``make()`` on first use, kept per
    backend) for its operands (0 src, 1 out, 2 vals or out; ranges already checked): replayed,
    or through ``WgpuContext.dispatch`` where a wrapper (the profiler's, a test spy) watches it.
    Where the replay does not apply (a scratch buffer without the vector layout the program
    assumed), ``fallback()``'s program runs instead."""
    ctx = backend.context
    plans = _PLANS.of(backend)
    program = plans.get(key)
    if program is None or not program.valid_for(ctx):
        program = make()
        _PLANS.keep(plans, key, program)
    ptrs = (job.src, job.out, job.out if job.vals is None else job.vals)
    if ctx.__dict__.get("dispatch") is not None:
        program.dispatch(backend, ctx, ptrs, placeholder)
        return
    bases = operand_bases(backend, ptrs)
    if not program.run(backend, ctx, bases, placeholder) and fallback is not None:
        fallback().run(backend, ctx, bases[:3], placeholder)
