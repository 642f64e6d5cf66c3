"""The launch layer of the op modules: a compiled, pointer-free launch program and its replay,
and the binding helpers every launcher shares.

An op module plans a call once per call structure (everything but the pointers and per-call
scalar values) and keeps the result in a ``plan_cache.PlanCache``. What it keeps, for the hot
path, is a ``LaunchProgram``:

* ``slots``: the distinct storage bindings of the call (``BindingSlot``), each relative to an
  operand *base*: 0, 1, ... the caller's operands, then the scratch allocations the program
  makes itself (``aux``);
* ``steps``: the dispatches in order (``Step``): the compiled pipeline, the kernel's defines,
  the parameter template (u32 words with the first-element words left 0), the grid, the slot of
  each binding, the *patches* (parameter words that take a slot's first element plus a
  constant) and, where a kernel variant does not use a binding, the size of the placeholder
  that stands in for it.

Three ways to record it, all raising and recording the same:

* ``run`` / ``replay``: for operands whose ranges the caller checked (per base its buffer and
  the byte offset of its element 0): it allocates the scratch, computes every slot's window
  (``WebGpuBackend.window`` without the checks) and calls ``record``. A call whose program
  does not apply (a scratch buffer of the wrong size for a vector layout) reports it, and the
  caller takes its reference path;
* ``record``: for slots already bound (``WebGpuBackend.bindings`` binds and checks every slot
  at once: the elementwise launcher): every step through ``WgpuContext.record``, the first
  element words patched (the template pre-patched where every window starts at its first
  element) and per-call parameter bytes (an elementwise call's scalars) after each step's
  words;
* ``dispatch``, the reference path: every window checked by ``WebGpuBackend.window`` and every
  step through ``WgpuContext.dispatch``, which a wrapper (the profiler's host-time mode, a test
  spy) sees.

A launcher whose kernel variant depends on where its operands start (vector loads need aligned
first elements) keeps one program per variant. ``rebased`` makes one program a part of another
(the radix sort's histogram scans). ``strided_region`` / ``strided_window`` bind one block of a
strided operand (the window covers exactly the offsets the block touches). No wgpu here.
"""

from __future__ import annotations

import operator
import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from .layout import strided_span

__all__ = ["BindingSlot", "LaunchProgram", "Record", "Region", "Step", "operand_bases", "rebased", "strided_region",
           "strided_window"]

_U32 = 0xFFFFFFFF


class Region(NamedTuple):
    """A binding of a dispatch as a planner describes it, before slots are shared: ``base`` (an
    operand or scratch base, -1 for a placeholder of at least ``itemsize`` bytes), ``offset``
    (bytes from the base's element 0 to the window's lowest element), ``nbytes``, ``itemsize``,
    ``vector`` (bytes to round the binding up to, 0: none; negative: the binding cut down to
    whole multiples of ``-vector`` bytes, e.g. the whole 16-byte vectors of a window), ``word``
    (the parameter word that
    takes the window index of the lowest element plus ``extra``; 0: none) and ``extra``."""

    base: int
    offset: int
    nbytes: int
    itemsize: int
    vector: int
    word: int
    extra: int


class BindingSlot(NamedTuple):
    """A distinct binding of a program: ``base``, byte ``offset`` from its element 0, ``nbytes``,
    ``itemsize`` and ``vector`` as in ``Region``."""

    base: int
    offset: int
    nbytes: int
    itemsize: int
    vector: int


class Step(NamedTuple):
    """One dispatch of a program: ``pipeline``, ``defines``, the parameter template ``words``,
    ``grid``, ``patches`` ((word, slot, extra): word = first element of the slot's window +
    extra), ``placeholder`` ((binding index, bytes) of each binding that is a placeholder of at
    least that many bytes instead of its slot; usually none), ``slots`` (the slot of each
    binding, in order; 0 where a placeholder stands), the ``kernel`` name the step records as
    and the ``pack`` of its parameter words (the program's, unless its record named its own),
    the parameter bytes of the template (``raw``), the patches at their byte offsets in them
    (``at``: (byte offset of a u32 word, slot, extra)), the template patched for windows that
    all start at their first element (``raw0``: every patched word its ``extra``) and whether a
    replay's per-call parameter bytes follow the words (``tail``)."""

    pipeline: Any
    defines: dict[str, object]
    words: tuple[int, ...]
    grid: tuple[int, int, int]
    patches: tuple[tuple[int, int, int], ...]
    placeholder: tuple[tuple[int, int], ...]
    slots: tuple[int, ...]
    kernel: str
    pack: Callable[..., bytes]
    raw: bytes
    at: tuple[tuple[int, int, int], ...]
    raw0: bytes
    tail: bool


def _placed(backend: Any, bound: tuple[Any, ...], hold: tuple[tuple[int, int], ...],
            placeholder: Callable[[Any, int, Any, Any], Any]) -> tuple[Any, ...]:
    """``bound`` with binding i replaced by ``placeholder(backend, nbytes, bound[1], bound[0])``
    for each (i, nbytes) of ``hold``."""
    out = list(bound)
    for index, nbytes in hold:
        out[index] = placeholder(backend, nbytes, bound[1], bound[0])
    return tuple(out)


def _taker(slots: tuple[int, ...], nslots: int) -> Callable[[Sequence[Any]], tuple[Any, ...]] | None:
    """A callable that returns ``tuple(items[s] for s in slots)`` (an ``itemgetter``); None
    when that is ``items`` itself (``slots`` is every slot of ``nslots`` in order)."""
    if slots == tuple(range(nslots)):
        return None
    if len(slots) == 1:
        only = slots[0]
        return lambda items: (items[only],)
    return operator.itemgetter(*slots)


class Record(NamedTuple):
    """A dispatch as the planner hands it to ``LaunchProgram.compile`` (a plain tuple of its
    first five or seven items will do): ``pipeline``, ``defines``, parameter ``words``,
    ``grid``, its bindings' ``regions``; the ``kernel`` name and the ``packer`` (struct) of its
    parameter words where they are not the program's (a program of several kernels); ``tail``:
    whether the per-call parameter bytes of a replay follow its words (an elementwise call's
    scalars; a fused reduction's only in the pass that evaluates its prologue); ``firsts``:
    more parameter words patched as ``Region.word`` is, each (word, binding index, extra): the
    word takes the window index of that binding's lowest element plus ``extra`` (a kernel that
    reads one binding's first element in several words)."""

    pipeline: Any
    defines: dict[str, object]
    words: tuple[int, ...]
    grid: tuple[int, int, int]
    regions: tuple[Region, ...]
    kernel: str | None = None
    packer: struct.Struct | None = None
    tail: bool = True
    firsts: tuple[tuple[int, int, int], ...] = ()


def rebased(program: "LaunchProgram", bases: Sequence[tuple[int, int]]) -> list[Record]:
    """The records of ``program`` (every one naming its kernel and parameter struct) with the
    regions of base ``b`` moved to base ``bases[b][0]``, ``bases[b][1]`` bytes further: how a
    program becomes a part of another (a sort's row scans), its scratch allocations among the
    other's operands or scratch."""
    out = []
    for record in program.records:
        moved = []
        for region in record.regions:
            if region.base >= 0:
                base, shift = bases[region.base]
                region = region._replace(base=base, offset=region.offset + shift)
            moved.append(region)
        out.append(record._replace(regions=tuple(moved), kernel=record.kernel or program.kernel,
                                   packer=record.packer or program.packer))
    return out


def _field_offsets(packer: struct.Struct) -> list[int]:
    """The byte offset of each field of ``packer`` (a little-endian struct without padding)."""
    offsets, at = [], 0
    for count, code in re.findall(r"(\d*)([a-zA-Z?])", packer.format):
        size = struct.calcsize("<" + code)
        for _ in range(int(count or 1)):
            offsets.append(at)
            at += size
    return offsets


_WORD = struct.Struct("<I")


def _width(width: int, vec: int) -> int:
    """A binding of ``width`` bytes rounded as ``Region.vector`` says (up to a multiple of a
    positive ``vec``, down to one of ``-vec``)."""
    if vec > 0:
        return -(-width // vec) * vec
    return width // -vec * -vec


@dataclass(frozen=True, eq=False)
class LaunchProgram:
    """A whole call compiled for a context whose ``max_workgroups_per_dim`` was ``max_workgroups``
    (see the module docstring). ``kernel``: the template name every step records as;
    ``packer``: the struct of its parameter words; ``aux``: the scratch allocations, each
    (bytes, vector bytes its buffer size must be a multiple of, 0 for none, whether it is
    zero-filled; given as a pair where it is not)."""

    kernel: str
    packer: struct.Struct
    max_workgroups: int
    slots: tuple[BindingSlot, ...]
    steps: tuple[Step, ...]
    aux: tuple[tuple[int, int, bool], ...]
    #: What ``record`` reads of each step, flat: (pipeline, defines, the bindings' getter (None:
    #: every slot in order), placeholder, kernel, raw, at, raw0, tail, x, y, z).
    replay_steps: tuple[tuple[Any, ...], ...] = ()
    #: The records the program was compiled from (``rebased`` embeds them in another program).
    records: tuple[Record, ...] = ()
    #: A program of one step without placeholders: (kernel, pipeline, defines, raw0, bindings'
    #: getter, tail, x, y, z), what ``record`` reads of it when no word needs a patch; else None.
    single: tuple[Any, ...] | None = None

    @classmethod
    def compile(cls, kernel: str, packer: struct.Struct, ctx: Any, records: Sequence[Record],
                aux: Sequence[Sequence[int]]) -> "LaunchProgram":
        """The program of ``records`` (in order) on ``ctx``, each distinct binding one slot."""
        slots: dict[BindingSlot, int] = {}
        steps = []
        records = [Record(*record) for record in records]
        for pipe, defines, words, grid, regions, step_kernel, step_packer, tail, more in records:
            step_kernel, step_packer = step_kernel or kernel, step_packer or packer
            bound, patches, hold = [], [], []
            for base, offset, nbytes, itemsize, vector, word, extra in regions:
                if base < 0:
                    hold.append((len(bound), itemsize))
                    bound.append(0)  # (replaced by the placeholder)
                    continue
                slot = slots.setdefault(BindingSlot(base, offset, nbytes, itemsize, vector), len(slots))
                bound.append(slot)
                if word:
                    patches.append((word, slot, extra))
            patches += [(word, bound[index], extra) for word, index, extra in more]
            offsets = _field_offsets(step_packer)
            raw = step_packer.pack(*words)
            last = {word: (slot, extra) for word, slot, extra in patches}  # (the last write of a word wins)
            at = tuple((offsets[word], slot, extra) for word, (slot, extra) in last.items())
            raw0 = bytearray(raw)
            for offset, _, extra in at:
                _WORD.pack_into(raw0, offset, extra & _U32)
            steps.append(Step(pipe, defines, words, grid, tuple(patches), tuple(hold), tuple(bound), step_kernel,
                              step_packer.pack, raw, at, bytes(raw0), tail))
        nslots = len(slots)
        replay = tuple((st.pipeline, st.defines, _taker(st.slots, -1 if st.placeholder else nslots),
                        st.placeholder, st.kernel, st.raw, st.at, st.raw0, st.tail, *st.grid) for st in steps)
        single = None
        if len(replay) == 1 and not replay[0][3]:
            pipe, defines, take, _, step_kernel, _, _, raw0, takes, x, y, z = replay[0]
            single = (step_kernel, pipe, defines, raw0, take, takes, x, y, z)
        return cls(kernel, packer, ctx.max_workgroups_per_dim, tuple(slots), tuple(steps),
                   tuple((int(nbytes), int(vec), bool(zero and zero[0])) for nbytes, vec, *zero in aux), replay,
                   tuple(records), single)

    def valid_for(self, ctx: Any) -> bool:
        """Whether the program's grids hold on ``ctx`` (its workgroup limit is unchanged)."""
        return self.max_workgroups == ctx.max_workgroups_per_dim

    def run(self, backend: Any, ctx: Any, bases: list[tuple[Any, int, int, int, int]],
            placeholder: Callable[[Any, int, Any, Any], Any], tail: bytes = b"") -> bool:
        """Replay the program with the caller's operands at ``bases`` (per base: (buffer, its
        size, allocation size, byte offset of element 0, pointer, optionally the allocation's whole
        binding ``Allocation.whole``), every range already checked)
        and fresh scratch allocations; ``placeholder(backend, nbytes, binding1, binding0)`` makes
        a placeholder binding; ``tail``: parameter bytes every step takes after its template.
        False, with nothing recorded, when a scratch buffer does not have the vector layout the
        program assumed (the caller then takes its reference path)."""
        if not self.aux:
            self.replay(backend, ctx, bases, placeholder, tail)
            return True
        auxes: list[int] = []
        try:
            for nbytes, vec, zero in self.aux:
                ptr = backend.alloc(nbytes, zero=zero)
                auxes.append(ptr)
                alloc = backend.resolve(ptr, 0)[0]
                buffer = alloc.buffer
                size = buffer.size
                if vec > 0 and size % vec:  # not the vector layout the program assumed
                    return False
                bases.append((buffer, size, alloc.nbytes, 0, ptr, alloc.whole))
            self.replay(backend, ctx, bases, placeholder, tail)
            return True
        finally:
            for ptr in reversed(auxes):
                backend.free(ptr)  # the recorded dispatches keep the pool blocks alive until they run

    def dispatch(self, backend: Any, ctx: Any, ptrs: Sequence[Any],
                 placeholder: Callable[[Any, int, Any, Any], Any] | None = None, tail: bytes = b"",
                 source: str | None = None) -> None:
        """The reference path of ``run``: record every step through ``WgpuContext.dispatch``
        (which a wrapper such as the profiler's or a test spy sees), with the windows of the
        operands whose element [0, ...] is at ``ptrs[base]`` checked by ``backend.window`` (an
        entry that is a binding, ``(buffer, offset, size)``, is bound as it is), the
        scratch allocated here (and freed after recording), ``tail`` after every step's
        parameter words and, with ``source``, that WGSL text compiled instead of the kernel's
        template (a user's kernel). BackendError (invalid argument) for a window that is out of range or
        misaligned, before anything is recorded."""
        auxes = [backend.alloc(nbytes, zero=zero) for nbytes, _, zero in self.aux]
        try:
            ptrs = [*ptrs, *auxes]
            bindings: list[Any] = []
            firsts: list[int] = []
            for base, rel, nbytes, itemsize, vec in self.slots:
                ptr = ptrs[base]
                if type(ptr) is tuple:  # a binding made by the caller, bound as it is
                    bindings.append(ptr)
                    firsts.append(0)
                    continue
                win = backend.window(ptr + rel, nbytes, itemsize)
                bindings.append((win.buffer, win.offset, _width(win.size, vec)) if vec else win.binding)
                firsts.append(win.first)
            records = []
            for _, defines, words, grid, patches, hold, slots, kernel, pack, _, _, _, takes in self.steps:
                bound = tuple(bindings[s] for s in slots)
                if hold:
                    if placeholder is None:
                        raise ValueError("LaunchProgram.dispatch: a placeholder binding needs ``placeholder``")
                    bound = _placed(backend, bound, hold, placeholder)
                patched = list(words)
                for word, slot, extra in patches:
                    patched[word] = (firsts[slot] + extra) & _U32
                records.append((kernel, pack, patched, list(bound), grid, defines, tail if takes else b""))
            for kernel, pack, words, bound, grid, defines, extra in records:
                # (packed here: parameter structs with float fields, e.g. gemm's scales)
                if source is None:
                    ctx.dispatch(kernel, pack(*words) + extra, bound, grid, defines)
                else:
                    ctx.dispatch(kernel, pack(*words) + extra, bound, grid, defines, source=source)
        finally:
            for ptr in reversed(auxes):
                backend.free(ptr)

    def replay(self, backend: Any, ctx: Any, bases: Sequence[tuple[Any, int, int, int, int]],
               placeholder: Callable[[Any, int, Any, Any], Any], tail: bytes = b"") -> None:
        """Record every step with the operands (scratch included) at ``bases`` (see ``run``; a
        base may carry a sixth item, its allocation's whole binding ``Allocation.whole``, which
        a binding of the whole allocation then uses as it is)."""
        align = ctx.storage_offset_alignment
        max_binding = ctx.max_binding_size
        bindings: list[Any] = []
        firsts: list[int] = []
        for base, rel, nbytes, itemsize, vec in self.slots:
            entry = bases[base]
            if len(entry) > 5 and not rel and nbytes == entry[2] and not entry[3]:
                whole = entry[5]  # a whole allocation: the binding its allocation made
                if whole is not None:
                    if vec:  # (``_width`` inline)
                        width = whole[2]
                        whole = (whole[0], whole[1], -(-width // vec) * vec if vec > 0 else width // -vec * -vec)
                    bindings.append(whole)
                    firsts.append(0)
                    continue
            buffer, stop, limit, off, ptr = entry[:5]
            off += rel
            # ``window`` without its checks, which the range checks made
            start = off // align * align
            end = (off + nbytes + 3) // 4 * 4
            if end < stop:
                stop = end
            width = stop - start if stop - start > 4 else 4
            if off < 0 or off + nbytes > limit or width > max_binding:
                # not reached (the ranges are checked, windows fit by planning): raises
                win = backend.window(ptr + rel, nbytes, itemsize)
                start, width, first = win.offset, win.size, win.first
            else:
                first = (off - start) // itemsize
            if vec:
                width = -(-width // vec) * vec if vec > 0 else width // -vec * -vec
            bindings.append((buffer, start, width))
            firsts.append(first)
        self.record(ctx, bindings, firsts if any(firsts) else None, tail, backend, placeholder)

    def record(self, ctx: Any, bindings: list[Any], firsts: Sequence[int] | None, tail: bytes = b"",
               backend: Any = None, placeholder: Callable[[Any, int, Any, Any], Any] | None = None) -> None:
        """Record every step through ``WgpuContext.record`` with the slots bound to ``bindings``
        (one region per slot, valid by construction: the callers' checks made them), the
        first element of each slot's window in ``firsts`` (None: every one 0), ``tail`` after
        every step's parameter words and, where a step has placeholders, ``placeholder``'s
        bindings (``run``) made for ``backend``."""
        single = self.single
        if single is not None and firsts is None:  # the usual small op: one step, nothing to patch
            kernel, pipe, defines, raw0, take, takes, x, y, z = single
            ctx.record(kernel, pipe, defines, raw0 + tail if tail and takes else raw0,
                       bindings if take is None else take(bindings), x, y, z)
            return
        record = ctx.record
        pack_into = _WORD.pack_into
        for pipe, defines, take, hold, kernel, raw, at, raw0, takes, x, y, z in self.replay_steps:
            bound = bindings if take is None else take(bindings)
            if hold:  # placeholders instead of some slots
                bound = _placed(backend, bound, hold, placeholder)  # type: ignore[arg-type]
            if firsts is None or not at:
                raw = raw0
            else:
                raw = bytearray(raw)
                for offset, slot, extra in at:
                    pack_into(raw, offset, (firsts[slot] + extra) & _U32)
            record(kernel, pipe, defines, raw + tail if tail and takes else raw, bound, x, y, z)


def operand_bases(backend: Any, ptrs: Sequence[int]) -> list[tuple[Any, ...]]:
    """The operand entries ``LaunchProgram.run`` takes for the pointers ``ptrs`` (each a live
    allocation's byte, its range checked by the caller): (buffer, its size, the allocation's
    size, the byte offset of the pointer in the buffer, the pointer, the allocation's whole
    binding)."""
    bases = []
    for ptr in ptrs:
        alloc, offset = backend.resolve(ptr, 0)
        buffer = alloc.buffer
        bases.append((buffer, buffer.size, alloc.nbytes, offset, ptr, alloc.whole))
    return bases


def strided_region(base: int, itemsize: int, origin: int, dims: Sequence[tuple[int, int]],
                   word: int = 0) -> Region:
    """The ``Region`` of the block of operand ``base`` whose element [0, ...] is ``origin``
    elements from the operand's element [0, ...] and whose dimensions are ``dims`` = [(size,
    stride), ...] (strides of any sign): the window covers exactly the touched offsets, and
    parameter ``word`` (0: none) takes the window index of the block's element [0, ...]."""
    lo, hi = strided_span(dims)
    return Region(base, (origin + lo) * itemsize, (hi - lo + 1) * itemsize, itemsize, 0, word, -lo)


def strided_window(backend: Any, ptr: int, itemsize: int, origin: int,
                   dims: Sequence[tuple[int, int]]) -> tuple[Any, int]:
    """(binding, first) of the block whose element [0, ...] is ``origin`` elements from ``ptr``
    and whose dimensions are ``dims`` = [(size, stride), ...] (strides of any sign): the window
    covers exactly the touched offsets; ``first`` is the element index of the block's element
    [0, ...] in it. BackendError (invalid argument) as ``WebGpuBackend.window``."""
    lo, hi = strided_span(dims)
    win = backend.window(ptr + (origin + lo) * itemsize, (hi - lo + 1) * itemsize, itemsize)
    return win.binding, win.first - lo
