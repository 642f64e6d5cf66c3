"""A planned reduction as recorded dispatches (``ops_reduce``): its steps (``_Step``), the plan
that checks the pointers and records them (``_Plan``: compiled once per context to a
``launch.LaunchProgram`` and replayed; ``_dispatch`` is the reference path through
``WgpuContext.dispatch``), and the per-context scratch of partial states (``_Scratch``).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from .elementwise import scalar_words
from .errors import invalid_argument
from .launch import LaunchProgram, Record, Region
from .ops_elementwise import _words_struct
from .reduce_prologue import Prologue, _PrologueCode

if TYPE_CHECKING:
    from .webgpu import WebGpuBackend

#: Distinct 256-byte placeholder windows of the scratch's dummy buffer (one per storage binding).
_DUMMY_SLOTS = 16


class _Scratch:
    """Partial-state buffers of one context (grown on demand, reused by every reduction; the
    queue orders a reduction's passes after the previous reduction's), and a dummy binding."""

    def __init__(self, ctx: Any) -> None:
        self.ctx_ref = weakref.ref(ctx)  # weak: the WeakKeyDictionary entry must not keep ctx alive
        self.lock = threading.RLock()
        self.buffers: dict[str, Any] = {}
        self.dummy = ctx.create_storage(256 * _DUMMY_SLOTS)
        #: per dummy slot, a ``LaunchProgram`` operand of 256 bytes bound as that slot's region
        self.dummy_bases = [(self.dummy, 256, 256, 0, None, self.dummy_region(slot)) for slot in range(_DUMMY_SLOTS)]

    def get(self, name: str, nbytes: int) -> tuple[Any, int, int]:
        """A binding of ``nbytes`` (rounded up to 4) at the start of scratch buffer ``name``."""
        nbytes = max(4, (nbytes + 3) // 4 * 4)
        buf = self.buffers.get(name)
        if buf is None or buf.size < nbytes:
            ctx = self.ctx_ref()
            grown = min(2 * buf.size, ctx.max_binding_size) if buf is not None else 0
            buf = ctx.create_storage(max(nbytes, grown, 4096))
            self.buffers[name] = buf
        return (buf, 0, nbytes)

    def dummy_region(self, binding: int) -> tuple[Any, int, int]:
        """A placeholder for storage binding ``binding`` (from 0) of a dispatch: 256 bytes that
        no other binding of the dispatch overlaps (two written placeholders of one buffer that
        overlap are refused by Dawn)."""
        return (self.dummy, 256 * (binding % _DUMMY_SLOTS), 256)


_SCRATCH: "weakref.WeakKeyDictionary[Any, _Scratch]" = weakref.WeakKeyDictionary()
_SCRATCH_LOCK = threading.Lock()
_LAST_SCRATCH: _Scratch | None = None


def _scratch(ctx: Any) -> _Scratch:
    last = _LAST_SCRATCH
    if last is not None and last.ctx_ref() is ctx:
        return last
    return _scratch_slow(ctx)


def _scratch_slow(ctx: Any) -> _Scratch:
    global _LAST_SCRATCH
    with _SCRATCH_LOCK:
        s = _SCRATCH.get(ctx)
        if s is None:
            s = _Scratch(ctx)
            _SCRATCH[ctx] = s
        _LAST_SCRATCH = s
        return s


@dataclass(frozen=True)
class _Step:
    """One recorded dispatch of a plan. ``regions``: its storage bindings in order, each
    ('src', element offset from the source pointer, elements) (its window's first element goes
    to params word 5), ('srcv', the same) (the same window as whole 16-byte vectors: the vector
    path), ('dst', element offset of the lowest element, elements, offset of element [0..0]
    above it) (word 6), ('scratch', buffer name, bytes) or ('dummy',)."""

    kernel: str
    defines: Mapping[str, object]
    params: tuple[int, ...]
    regions: tuple[tuple[Any, ...], ...]
    groups: int
    prologue: bool = False  # a first pass of a fused source: the prologue's inputs follow


@dataclass
class _Plan:
    """The validated, split and tiled form of one reduction: pure data, reusable for any
    pointers (every window fits wherever a binding starts). ``src_span``/``dst_span``: (lowest,
    highest + 1) byte offsets the views touch from their pointers, None if empty."""

    src_itemsize: int
    dst_itemsize: int
    src_span: tuple[int, int] | None
    dst_span: tuple[int, int] | None
    steps: list[_Step]
    prologue: _PrologueCode | None = None
    #: ``_compile``'s program for one context (built on first launch; replaced whole, so
    #: threads racing to build it just build equal ones).
    compiled: "_Compiled | None" = field(default=None, compare=False, repr=False)

    def check(self, backend: "WebGpuBackend", ptr: int, itemsize: int, span: tuple[int, int] | None,
              what: str) -> tuple[Any, int]:
        """Check a pointer for a view of ``span`` bytes; returns its (allocation, offset)."""
        alloc, offset = backend.resolve(ptr, 0)
        if offset % itemsize:
            raise invalid_argument(f"{what} pointer offset {offset} is not a multiple of the item size {itemsize}")
        if span is not None and (offset + span[0] < 0 or offset + span[1] > alloc.nbytes):
            raise invalid_argument(
                f"{what} view spans bytes [{offset + span[0]}, {offset + span[1]}) of a "
                f"{alloc.nbytes}-byte allocation"
            )
        return alloc, offset

    def _compile(self, ctx: Any) -> _Compiled:
        """The steps as a ``launch.LaunchProgram`` for ``ctx``. Its operands: 0 the source
        (word 5 takes its window's first element; the vector path binds the same window cut
        to whole 16-byte vectors; with a prologue the source is virtual: word 5 takes the
        element index, a dummy stands in its binding), 1 the destination (word 6: the first
        element plus the offset of element [0..0]), 2, 3, ... a prologue's array inputs (each
        bound whole in the prologue's pass, the words after the step's taking their first
        elements, then its static words; its scalars' words are the replay's per-call bytes),
        then the scratch buffers (at their start), then the dummy slots."""
        ssz, dsz = self.src_itemsize, self.dst_itemsize
        pro = self.prologue
        leaves = pro.arrays if pro is not None else ()
        needs: dict[str, int] = {}
        for step in self.steps:
            for r in step.regions:
                if r[0] == "scratch":
                    needs[r[1]] = max(needs.get(r[1], 0), r[2])
        names = {name: 2 + len(leaves) + k for k, name in enumerate(needs)}
        dummies: dict[int, int] = {}
        records = []

        def dummy() -> Region:  # the dummy of this binding position (``_Scratch.dummy_region``)
            index = dummies.setdefault(len(regions) % _DUMMY_SLOTS, len(dummies))
            return Region(2 + len(leaves) + len(names) + index, 0, 256, 4, 0, 0, 0)

        for step in self.steps:
            words = [int(w) & 0xFFFFFFFF for w in step.params]
            words[5] = words[6] = 0  # (``_step`` leaves them 0: the windows' first elements)
            regions: list[Region] = []
            for r in step.regions:
                kind = r[0]
                if kind == "src" and pro is not None:  # virtual source: the element index, no binding
                    words[5] = r[1]
                    regions.append(dummy())
                elif kind == "src":
                    regions.append(Region(0, r[1] * ssz, r[2] * ssz, ssz, 0, 5, 0))
                elif kind == "srcv":
                    regions.append(Region(0, r[1] * ssz, r[2] * ssz, ssz, -16, 5, 0))
                elif kind == "dst":
                    regions.append(Region(1, r[1] * dsz, r[2] * dsz, dsz, 0, 6, r[3]))
                elif kind == "scratch":
                    regions.append(Region(names[r[1]], 0, max(4, (r[2] + 3) // 4 * 4), 4, 0, 0, 0))
                else:
                    regions.append(dummy())
            if step.prologue:
                for slot, (_, size, (lo, hi)) in enumerate(leaves):
                    regions.append(Region(2 + slot, lo * size, (hi - lo + 1) * size, size, 0, len(words), -lo))
                    words.append(0)
                words += pro.static  # type: ignore[union-attr]
            records.append(Record(ctx.pipeline(step.kernel, len(regions), step.defines), step.defines, tuple(words),
                                  ctx.fold_grid(step.groups), tuple(regions), step.kernel, _words_struct(len(words)),
                                  step.prologue))
        program = LaunchProgram.compile(self.steps[0].kernel, _words_struct(0), ctx, records, ())
        return _Compiled(ctx, program, tuple(needs.items()), tuple(dummies))

    def launch(self, backend: "WebGpuBackend", src_ptr: int, dst_ptr: int, prologue: Prologue | None = None) -> None:
        """``run`` on the hot path: the steps are a ``launch.LaunchProgram`` (``_compile``,
        made once per context); per call the pointers (a plan with a prologue: those of
        ``prologue``'s array inputs, ``src_ptr`` unused) are checked as ``run`` checks them and
        the program replayed (the windows and grids are valid by construction), a prologue's
        scalar values as its pass's per-call parameter bytes. A ``dispatch`` wrapper set on the
        context (the profiler's host-time mode, test spies) gets every dispatch through
        ``run``."""
        ctx = backend._ctx
        if ctx is None or ctx.__dict__.get("dispatch") is not None:
            self.run(backend, src_ptr, dst_ptr, prologue, _slow=True)
            return
        if self.prologue is not None:
            self._launch_fused(backend, ctx, dst_ptr, prologue)  # type: ignore[arg-type]
            return
        self._replay(backend, ctx, [self._base(backend, src_ptr, self.src_itemsize, self.src_span, "source"),
                                    self._base(backend, dst_ptr, self.dst_itemsize, self.dst_span, "destination")], b"")

    def _launch_fused(self, backend: "WebGpuBackend", ctx: Any, dst_ptr: int, prologue: Prologue) -> None:
        """``launch`` of a plan with a prologue (``launch_fused`` with ``prologue``'s array
        pointers and scalar values)."""
        inputs = prologue.inputs
        pro = self.prologue
        assert pro is not None
        self.launch_fused(backend, [inputs[k].ptr for k, _, _ in pro.arrays],
                          [inputs[k].value for k, _ in pro.scalars], dst_ptr)

    def launch_fused(self, backend: "WebGpuBackend", ptrs: Sequence[int], values: Sequence[Any],
                     dst_ptr: int) -> None:
        """Record a plan with a prologue for its array inputs at ``ptrs`` and its scalar inputs'
        ``values`` (each in the order of the prologue's inputs): the ranges of ``run``'s
        windows checked, the scalars' words the per-call parameter bytes. BackendError as
        ``reduce_strided``, before anything is recorded."""
        pro = self.prologue
        assert pro is not None
        ctx = backend._ctx
        if ctx is None or ctx.__dict__.get("dispatch") is not None:
            self._dispatch(backend, 0, dst_ptr, ptrs, values)
            return
        leaves = []
        for (_, size, (lo, hi)), ptr in zip(pro.arrays, ptrs):
            alloc, off = backend.resolve(ptr + lo * size, (hi - lo + 1) * size)
            if off % size:
                raise invalid_argument(f"pointer offset {off} is not a multiple of the item size {size}")
            buf = alloc.buffer
            leaves.append((buf, buf.size, alloc.nbytes, off - lo * size, ptr, alloc.whole))
        tail = b"".join([_word_bytes(scalar_words(value, dtype)) for (_, dtype), value in zip(pro.scalars, values)])
        dst_base = self._base(backend, dst_ptr, self.dst_itemsize, self.dst_span, "destination")
        # (the virtual source has no base of its own: the destination's in its place)
        self._replay(backend, ctx, [dst_base, dst_base, *leaves], tail)

    def _base(self, backend: "WebGpuBackend", ptr: int, itemsize: int, span: tuple[int, int] | None,
              what: str) -> tuple[Any, ...]:
        """The replay base of the source or destination at ``ptr``, the pointer checked as
        ``check`` does (inline: the hot path)."""
        alloc, off = backend.resolve(ptr, 0)
        if off % itemsize:
            raise invalid_argument(f"{what} pointer offset {off} is not a multiple of the item size {itemsize}")
        if span is not None and (off + span[0] < 0 or off + span[1] > alloc.nbytes):
            self.check(backend, ptr, itemsize, span, what)  # raises
        buf = alloc.buffer
        return (buf, buf.size, alloc.nbytes, off, ptr, alloc.whole)

    def _replay(self, backend: "WebGpuBackend", ctx: Any, bases: list[Any], tail: bytes) -> None:
        """Replay the compiled program (made now where there is none for ``ctx``) with the
        operands at ``bases`` and the scratch and dummies after them."""
        compiled = self.compiled
        if compiled is None or compiled.ctx is not ctx or compiled.program.max_workgroups != ctx.max_workgroups_per_dim:
            if not self.steps:
                return
            compiled = self.compiled = self._compile(ctx)
        program = compiled.program
        if not compiled.scratch and not compiled.dummies:
            program.replay(backend, ctx, bases, _no_placeholder, tail)
            return
        scratch = _scratch(ctx)  # the scratch buffers stay put until the end
        with scratch.lock:
            for name, nbytes in compiled.scratch:
                buf = scratch.get(name, nbytes)[0]
                bases.append((buf, buf.size, buf.size, 0, None))
            dummies = scratch.dummy_bases
            for slot in compiled.dummies:
                bases.append(dummies[slot])
            program.replay(backend, ctx, bases, _no_placeholder, tail)

    def run(self, backend: "WebGpuBackend", src_ptr: int, dst_ptr: int,
            prologue: Prologue | None = None, *, _slow: bool = False) -> None:
        """Check the pointers, then record the steps (``prologue``: the fused source's operands,
        for a plan made with one)."""
        pro = self.prologue
        if not _slow:
            self.launch(backend, src_ptr, dst_ptr, prologue)
            return
        ptrs: list[int] = []
        values: list[Any] = []
        if pro is not None:
            assert prologue is not None
            ptrs = [prologue.inputs[k].ptr for k, _, _ in pro.arrays]
            values = [prologue.inputs[k].value for k, _ in pro.scalars]
        self._dispatch(backend, src_ptr, dst_ptr, ptrs, values)

    def _dispatch(self, backend: "WebGpuBackend", src_ptr: int, dst_ptr: int, ptrs: Sequence[int],
                  values: Sequence[Any]) -> None:
        """``run``'s reference path: the pointers checked, every step recorded through
        ``WgpuContext.dispatch`` (a prologue's array inputs at ``ptrs``, its scalar values
        ``values``)."""
        pro = self.prologue
        if pro is None:
            self.check(backend, src_ptr, self.src_itemsize, self.src_span, "source")
        self.check(backend, dst_ptr, self.dst_itemsize, self.dst_span, "destination")
        leaf_regions: list[Any] = []
        ext: list[int] = []
        if pro is not None:
            for (_, size, (lo, hi)), ptr in zip(pro.arrays, ptrs):  # every input view bound once, whole
                w = backend.window(ptr + lo * size, (hi - lo + 1) * size, size)
                leaf_regions.append(w.binding)
                ext.append(w.first - lo)
            ext += pro.static
            for (_, dtype), value in zip(pro.scalars, values):
                ext += scalar_words(value, dtype)
        if not self.steps:
            return
        ctx = backend.context
        scratch = _scratch(ctx)
        ssz, dsz = self.src_itemsize, self.dst_itemsize
        with scratch.lock:
            for step in self.steps:
                params = list(step.params)
                regions = []
                for r in step.regions:
                    if r[0] == "src" and pro is not None:  # virtual source: index, no binding
                        regions.append(scratch.dummy_region(len(regions)))
                        params[5] = r[1]
                    elif r[0] == "src":
                        w = backend.window(src_ptr + r[1] * ssz, r[2] * ssz, ssz)
                        regions.append(w.binding)
                        params[5] = w.first
                    elif r[0] == "srcv":  # the vector binding: whole vectors of the src window
                        w = backend.window(src_ptr + r[1] * ssz, r[2] * ssz, ssz)
                        regions.append((w.buffer, w.offset, w.size // 16 * 16))
                    elif r[0] == "dst":
                        w = backend.window(dst_ptr + r[1] * dsz, r[2] * dsz, dsz)
                        regions.append(w.binding)
                        params[6] = w.first + r[3]
                    elif r[0] == "scratch":
                        regions.append(scratch.get(r[1], r[2]))
                    else:
                        regions.append(scratch.dummy_region(len(regions)))
                if step.prologue:
                    regions += leaf_regions
                    params += ext
                ctx.dispatch(step.kernel, params, regions, ctx.fold_grid(step.groups), step.defines)


class _Compiled(NamedTuple):
    """A plan's steps compiled for one context: the ``program``, the scratch buffers it binds
    as (name, bytes) and the dummy slots it binds (its operands after the scratch)."""

    ctx: Any
    program: LaunchProgram
    scratch: tuple[tuple[str, int], ...]
    dummies: tuple[int, ...]


def _word_bytes(words: list[int]) -> bytes:
    """``words`` as little-endian u32 parameter bytes."""
    return _words_struct(len(words)).pack(*words)


def _no_placeholder(backend: Any, nbytes: int, *bindings: Any) -> Any:  # pragma: no cover
    raise AssertionError("reduction programs bind their dummies as operands, not placeholders")
