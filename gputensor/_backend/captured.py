"""Whole calls of a multi-dispatch backend routine kept as the dispatches it recorded, and
replayed for new operands with one ``WgpuContext.record`` per dispatch.

A blocked factorization records hundreds to thousands of dispatches per call (kernels, gemms
with or without split-K, scratch allocations in between), each through Python that checks its
arguments, binds windows and packs words: host time that a GPU-bound call of the same structure
does not need to repeat. ``capture`` runs the routine once (its reference path) while it notes,
for the calling thread only, every ``record`` (pipeline, parameter bytes, bound regions, grid)
and every allocation the routine makes; each bound buffer must be one of the operands' or of
those allocations, and nothing may be recorded another way (a copy or a clear), else there is no
program. ``Captured.launch`` replays it: it allocates the scratch again (one allocation per
scratch allocation of the reference run, made before the first dispatch that binds it and freed
after the last), binds the same windows of the new operands (their
offsets in their allocations must have the residue modulo the storage offset alignment that the
reference run saw, so that the windows' first-element words are unchanged) and records every
dispatch with the same parameter bytes.

A routine's parameter bytes depend only on its call structure (sizes, leading dimensions, the
settings it reads) and on its operands' offsets modulo the alignment, which is what callers key
their plans by (``replayed``). No wgpu here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .plan_cache import PlanCache
from .validate import check_pointer

__all__ = ["Captured", "capture", "replayed"]

_LOCK = threading.Lock()


@dataclass(frozen=True, eq=False)
class Captured:
    """A captured call on ``ctx``: per operand the residue of its byte offset modulo the
    alignment and the highest byte (from its element 0) a binding reaches; the scratch
    allocations (bytes, zero-filled); the dispatches (kernel name, pipeline, defines, parameter
    bytes, regions as (base, byte offset from the base's element 0 or its buffer start for
    scratch, bytes), x, y, z); base i < len(operands) is operand i, the rest scratch; per
    dispatch the scratch allocations first bound by it and those last bound by it (the replay
    allocates each just before its first dispatch and frees it after its last, as the reference
    run's lifetimes, so that it holds no more scratch at a time)."""

    ctx: Any
    max_workgroups: int
    residues: tuple[int, ...]
    reach: tuple[int, ...]
    scratch: tuple[tuple[int, bool], ...]
    steps: tuple[tuple[Any, ...], ...]
    lifetimes: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]

    def launch(self, backend: Any, offsets: Sequence[tuple[Any, int]]) -> bool:
        """Replay for the operands whose (allocation, byte offset) are ``offsets`` (checked by the
        caller); False, with nothing recorded, when the program does not apply (another context,
        offsets of another residue, a binding past a buffer's end)."""
        ctx = self.ctx
        if backend.context is not ctx or ctx.max_workgroups_per_dim != self.max_workgroups:
            return False
        align = ctx.storage_offset_alignment
        buffers: list[Any] = []
        starts: list[int] = []
        for (alloc, off), residue, reach in zip(offsets, self.residues, self.reach):
            if off % align != residue or off + reach > alloc.buffer.size:
                return False
            buffers.append(alloc.buffer)
            starts.append(off)
        nops = len(buffers)
        buffers += [None] * len(self.scratch)
        starts += [0] * len(self.scratch)
        held: dict[int, int] = {}
        record = ctx.record
        resolve = backend.resolve
        try:
            for (name, pipe, defines, raw, regions, x, y, z), (born, dead) in zip(self.steps, self.lifetimes):
                for s in born:
                    nbytes, zero = self.scratch[s]
                    ptr = backend.alloc(nbytes, zero=zero)
                    held[s] = ptr
                    buffers[nops + s] = resolve(ptr, 0)[0].buffer
                record(name, pipe, defines, raw, [(buffers[b], starts[b] + rel, width) for b, rel, width in regions],
                       x, y, z)
                for s in dead:
                    backend.free(held.pop(s))  # (the recorded dispatches keep the pool block alive until they run)
            return True
        finally:
            for ptr in held.values():
                backend.free(ptr)


def capture(backend: Any, offsets: Sequence[tuple[Any, int]], fn: Callable[[], None]) -> Captured | None:
    """Run ``fn`` (the routine's reference path, recording into the open batch as usual) and
    return what it recorded as a ``Captured`` over the operands whose (allocation, byte offset)
    are ``offsets``, or None when it cannot be replayed: operands sharing an allocation, a
    dispatch that binds a buffer that is neither an operand's nor one the routine allocated, a
    copy or clear recorded outside an allocation (what an allocation records itself, the zero
    fill of a reused block, is left out: the replay's allocation does it again). Exceptions of
    ``fn`` propagate."""
    ctx = backend.context
    buffers = [alloc.buffer for alloc, _ in offsets]
    usable = len({id(b) for b in buffers}) == len(buffers)
    if not usable:
        fn()
        return None
    align = ctx.storage_offset_alignment
    me = threading.get_ident()
    where: dict[int, tuple[int, int]] = {id(b): (i, off) for i, ((_, off), b) in enumerate(zip(offsets, buffers))}
    scratch: list[tuple[int, bool]] = []
    steps: list[tuple[Any, ...]] = []
    reach = [0] * len(offsets)
    state = {"bad": False, "alloc": 0}
    record0, alloc0, copy0, clear0 = ctx.record, backend.alloc, ctx.copy_buffer, ctx.clear

    def record(name: str, pipe: Any, defines: Any, raw: bytes, regions: Sequence[Any], x: int, y: int,
               z: int) -> None:
        # (what an allocation records, a zero fill, is the allocation's: the replay allocates again)
        if threading.get_ident() == me and not state["bad"] and not state["alloc"]:
            out = []
            for buf, start, width in regions:
                hit = where.get(id(buf))
                if hit is None:
                    state["bad"] = True
                    break
                base, off = hit
                rel = start - off
                if base < len(offsets):
                    reach[base] = max(reach[base], rel + width)
                out.append((base, rel, width))
            else:
                steps.append((name, pipe, defines, bytes(raw), tuple(out), x, y, z))
        record0(name, pipe, defines, raw, regions, x, y, z)

    def alloc(nbytes: int, *, zero: bool = True) -> int:
        ours = threading.get_ident() == me
        if ours:
            state["alloc"] += 1
        try:
            ptr = alloc0(nbytes, zero=zero)
        finally:
            if ours:
                state["alloc"] -= 1
        if ours:
            where[id(backend.resolve(ptr, 0)[0].buffer)] = (len(offsets) + len(scratch), 0)
            scratch.append((int(nbytes), bool(zero)))
        return ptr

    def outside(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() == me and not state["alloc"]:
                state["bad"] = True
            return original(*args, **kwargs)
        return wrapped

    with _LOCK:
        ctx.record, backend.alloc = record, alloc
        ctx.copy_buffer, ctx.clear = outside(copy0), outside(clear0)
        try:
            fn()
        finally:
            for obj, name in ((ctx, "record"), (backend, "alloc"), (ctx, "copy_buffer"), (ctx, "clear")):
                try:
                    delattr(obj, name)
                except AttributeError:  # pragma: no cover - (a class without instance attributes)
                    pass
    if state["bad"] or not steps:
        return None
    residues = tuple(off % align for _, off in offsets)
    nops = len(offsets)
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for index, step in enumerate(steps):
        for base, _, _ in step[4]:
            if base >= nops:
                first.setdefault(base - nops, index)
                last[base - nops] = index
    lifetimes = tuple((tuple(s for s, at in first.items() if at == index),
                       tuple(s for s, at in last.items() if at == index)) for index in range(len(steps)))
    return Captured(ctx, ctx.max_workgroups_per_dim, residues, tuple(reach), tuple(scratch), tuple(steps), lifetimes)


def replayed(backend: Any, cache: PlanCache, key: tuple[Any, ...], operands: Sequence[tuple[str, int, int, int]],
             fn: Callable[[], None], enabled: bool = True) -> None:
    """Run the routine ``fn`` over ``operands`` ((name, pointer, bytes it touches, itemsize),
    checked here: BackendError (invalid argument) for a pointer out of range or misaligned)
    through its kept program for ``key`` (plus the operands' offset residues) in ``cache``: a
    replay when there is one, else ``fn`` under ``capture`` (kept for the next call, or False
    when it has none). ``enabled`` False, or a wrapped ``ctx.dispatch`` (a test spy or the
    host-time profiler, which must see every dispatch), run ``fn`` as it is."""
    offsets = [check_pointer(backend, name, ptr, nbytes, itemsize) for name, ptr, nbytes, itemsize in operands]
    ctx = backend.context
    wrapped = any(name in vars(obj) for obj, name in ((ctx, "dispatch"), (ctx, "record"), (ctx, "copy_buffer"),
                                                         (ctx, "clear"), (backend, "alloc")))
    if not enabled or wrapped:
        fn()
        return
    align = ctx.storage_offset_alignment
    full = (key, tuple(off % align for _, off in offsets))
    plans = cache.of(backend)
    plan = plans.get(full)
    if plan is False or (plan is not None and plan.ctx is ctx):
        if plan is False or not plan.launch(backend, offsets):
            fn()
        return
    program = capture(backend, offsets, fn)
    cache.keep(plans, full, program if program is not None else False)
