"""Stream compaction on the device: ``nonzero``, boolean masks (``x[mask]``), ``unique`` (the
group heads of sorted keys) and unique by counting (the non-empty buckets of a histogram).

Three passes: tiles of ``TILE = 256 * ITEMS`` elements count their flagged elements
(``compact_count.wgsl``), the tile counts are scanned in place (``ops_scan``, inclusive), and
once the total is known -- the output size depends on it; it is the one value read back --
every tile writes what its flagged elements give at ``base(tile) + rank``, in input order
(``compact_write.wgsl``): their flat indices, one of their coordinates in an N-d array per pass
(``nonzero``), their values in a source array of the same length (``x[mask]``: no index array
and no gather), the value of a sorted key (``unique``) or of a histogram bucket, or, for every
element, its group id through a permutation (``unique``'s inverse). Flags: the nonzero
elements of a dtype of at most 8 bytes (raw bits: -0.0 counts as zero, NaN as nonzero) or the
group heads of sorted keys.

Both phases are ``launch.LaunchProgram``s, planned once per structure (flag, dtype, size,
binding window) and kept per backend: the count program (the counts of every unit and the scan
of the counts, ``ops_scan.rows_program`` rebased onto them; one submit and one small mapping
read the total) and a write program per kind of output. Elements are handled in *units* of
whole tiles whose source, counts and outputs fit one binding window each. A compaction of one
unit (arrays up to the window size) replays its kept write program with the output bound per
call (its size is the count); one of several units compiles its writes with the unit bases it
read back. A ``dispatch`` wrapper on the context (the profiler's host-time mode, a test spy)
sees every dispatch (``LaunchProgram.dispatch``). ``submits_held`` keeps a call to one submit:
its readback's.
"""

from __future__ import annotations

import contextlib
import functools
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from . import config, ops_scan
from .errors import invalid_argument, unsupported
from .kernels import snippet
from .launch import LaunchProgram, Record, Region, operand_bases, rebased
from .sort_common import _check_dtype, _check_int, _check_span, dummy, window_limit
from .sort_key_code import _key_defines, bits_loader, key_words, store_bits_code
from .plan_cache import PlanCache
from .wgsl_types import storage_type

__all__ = ["EXTRA_ROOM", "ITEMS", "TILE", "CompactPlan", "compact_begin", "record_program", "submits_held"]

WG = 256
#: Elements per invocation of the compaction kernels.
ITEMS = 8
#: Elements per tile (one workgroup).
TILE = WG * ITEMS
_U32 = 0xFFFFFFFF
#: compact_count.wgsl's parameter words.
_COUNT_WORDS = struct.Struct("<4I")
#: compact_write.wgsl's parameter words before its last one, ``value_base``, which every
#: launch appends (per call: the value of a histogram's bucket 0, or a coordinate's dimension).
_WRITE_WORDS = struct.Struct("<10I")
_VALUE = struct.Struct("<I")
_NO_VALUE = _VALUE.pack(0)
#: The write program's operand bases: the flags' source, the scanned counts, the ranked
#: output, the auxiliary input (permutation, source values or a key range) and the inverse.
_SRC, _COUNTS, _OUT, _AUX, _INV = range(5)
#: Bytes after the counts that ``read_total`` copies extra regions into (read with the count;
#: the counts of all units but the last follow them).
EXTRA_ROOM = 16
#: compact_write's finish_tile of outputs that are not staged.
_FINISH_NONE = snippet("compact/finish_none")
#: Bytes of the placeholder of an unused binding ``k`` of compact_write (``dummy(backend, k)``).
_DUMMY_BYTES = 256


@functools.lru_cache(maxsize=None)
def _flag_fn(flag: str, dtype: str, nan_distinct: bool) -> str:
    """The kernels' ``flag(i)`` (and the source loader it uses) for ``flag`` over ``dtype``."""
    if flag == "nonzero":
        width = storage_type(dtype).itemsize * 8
        loader = bits_loader("src_bits", "src", dtype)
        if storage_type(dtype).kind != "f":
            test = snippet("compact/flag_nonzero")
        elif width == 64:
            test = snippet("compact/flag_nonzero_f64")
        else:
            test = snippet("compact/flag_nonzero_float", {"MAGNITUDE": ((1 << width) - 1) >> 1})
        return f"{loader}\n\n{test}"
    return snippet("compact/flag_head", {"NAN_DISTINCT": "true" if nan_distinct else "false"})


class _Output(NamedTuple):
    """A kind of compact_write output: its writers (WGSL), the output array's element type and
    item size (0: no ranked output), what is bound as the auxiliary input ('perm': the ``n``
    u32 of a permutation, 'values': ``n`` source elements of ``aux_size`` bytes, 'range': two
    u32 words, '': none), the item size of the inverse (0: none) and, for a staged output (one
    u32 word per flagged element, see compact_write.wgsl), its ``finish_tile`` and the words of
    workgroup memory it stages (1: not staged)."""

    fns: str
    out_array: str
    out_size: int
    aux: str
    aux_size: int
    inv_size: int
    finish: str = ""
    stage: int = 1


@functools.lru_cache(maxsize=256)
def _output(kind: str, dtype: str = "", extra: Any = None) -> _Output:
    """The compact_write output of ``kind`` ('indices', 'coordinate', 'source', 'head', 'base',
    'range' or 'inverse') for ``dtype`` (the output's, or the index dtype); ``extra``: the
    shape of a 'coordinate' output."""
    st = storage_type(dtype)
    words = st.itemsize // 4
    finish = snippet("compact/finish_staged", {"WORDS": max(words, 1)})
    if kind == "indices":
        return _Output(snippet("compact/stage_indices"), "u32", st.itemsize, "", 0, 0, finish, TILE)
    if kind == "coordinate":
        strides = [math.prod(extra[d + 1:]) for d in range(len(extra))]
        fns = snippet("compact/write_coordinate", {"NDIM": len(extra),
                                                    "SIZES": ", ".join(f"{v}u" for v in extra),
                                                    "STRIDES": ", ".join(f"{v}u" for v in strides)})
        return _Output(fns, "u32", st.itemsize, "", 0, 0, finish, TILE)
    if kind == "source" and st.itemsize == 4:
        return _Output(snippet("compact/stage_values_source"), "u32", 4, "values", 4, 0, finish, TILE)
    if kind == "inverse":
        return _Output(snippet("compact/write_inverse2" if words == 2 else "compact/write_inverse"), "u32",
                       0, "perm", 4, st.itemsize)
    if kind == "source":
        writers = bits_loader("source_bits", "perm", dtype) + "\n\n" + snippet("compact/write_values_source")
        aux, asize = "values", st.itemsize
    elif kind == "range":
        sign = (1 << (8 * st.itemsize - 1)) if st.kind == "i" else 0
        writers, aux, asize = snippet("compact/write_values_range", {"SIGN": sign}), "range", 4
    elif kind == "head":
        writers, aux, asize = snippet("compact/write_values_head"), "", 0
    else:
        writers, aux, asize = snippet("compact/write_values_base"), "", 0
    arr, store = store_bits_code("store_out", "out", dtype)
    return _Output(store + "\n\n" + writers, arr, st.itemsize, aux, asize, 0)


@dataclass(eq=False)
class _Structure:
    """One compaction structure planned for the context ``ctx`` under the binding window
    ``limit``: ``units`` of whole tiles (first tile, tiles), the count program and the write
    programs kept so far (by output)."""

    ctx: Any
    flag: str
    dtype: str
    nan_distinct: bool
    n: int
    src_size: int
    ntiles: int
    units: tuple[tuple[int, int], ...]
    limit: int
    count_program: LaunchProgram | None = None
    writes: dict[_Output, LaunchProgram] = field(default_factory=dict)

    def span(self, t0: int, nt: int) -> tuple[int, int, int]:
        """(first element, elements, elements read before the first) of the unit at ``t0``."""
        e0 = t0 * TILE
        back = 1 if self.flag == "head" and e0 > 0 else 0
        return e0, min(self.n, (t0 + nt) * TILE) - e0, back

    def defines(self) -> dict[str, object]:
        """The placeholders both kernels share."""
        kd = _key_defines(self.dtype if self.flag == "head" else "uint32", "canon", False)
        return {**kd, "ITEMS": ITEMS, "FLAG_FN": _flag_fn(self.flag, self.dtype, self.nan_distinct)}

    def compile_count(self, backend: Any) -> LaunchProgram:
        """The count program: operands 0 (the flags' source) and 1 (the tile counts), the scan's
        scratch after them."""
        ctx = self.ctx
        defines = self.defines()
        pipe = ctx.pipeline("compact_count", 2, defines)
        ssize = self.src_size
        records: list[Any] = []
        for t0, nt in self.units:
            e0, ne, back = self.span(t0, nt)
            src = Region(_SRC, (e0 - back) * ssize, (ne + back) * ssize, ssize, 0, 1, back)
            counts = Region(_COUNTS, t0 * 4, nt * 4, 4, 0, 3, 0)
            records.append(Record(pipe, defines, (ne, 0, e0, 0), ctx.fold_grid(nt), (src, counts)))
        scan = ops_scan.rows_program(backend, "sum", "uint32", 1, self.ntiles, False)
        records += rebased(scan, [(_COUNTS, 0), (_COUNTS, 0)] + [(2 + k, 0) for k in range(len(scan.aux))])
        return LaunchProgram.compile("compact_count", _COUNT_WORDS, ctx, records, scan.aux)

    def compile_write(self, out: _Output, bases: Sequence[int], total: int) -> LaunchProgram:
        """The writes of ``out`` for units whose first output ranks are ``bases`` and ``total``
        outputs in all (the output regions are these; a one-unit program kept for replay binds
        its output per call instead)."""
        ctx = self.ctx
        defines = {**self.defines(), "WRITE_FNS": out.fns, "OUT_ARRAY": out.out_array,
                   "FINISH_FN": out.finish or _FINISH_NONE, "STAGE": out.stage}
        pipe = ctx.pipeline("compact_write", 5, defines)
        ssize, osize, asize, isize = self.src_size, out.out_size, out.aux_size, out.inv_size
        inv_chunks = [(0, self.n)]
        if isize:
            per = max(1, self.limit // isize)
            inv_chunks = [(lo, min(self.n, lo + per)) for lo in range(0, self.n, per)]
        records = []
        for u, (t0, nt) in enumerate(self.units):
            base = bases[u]
            end = bases[u + 1] if u + 1 < len(self.units) else total
            e0, ne, back = self.span(t0, nt)
            cback = 1 if t0 > 0 else 0
            regions = [Region(_SRC, (e0 - back) * ssize, (ne + back) * ssize, ssize, 0, 1, back),
                       Region(_COUNTS, (t0 - cback) * 4, (nt + cback) * 4, 4, 0, 3, cback)]
            if osize and end > base:
                regions.append(Region(_OUT, base * osize, (end - base) * osize, osize, 0, 4, -base))
            else:
                regions.append(Region(-1, 0, 0, _DUMMY_BYTES, 0, 0, 0))
            if out.aux == "range":
                regions.append(Region(_AUX, 0, 8, 4, 0, 5, 0))
            elif out.aux:
                regions.append(Region(_AUX, e0 * asize, ne * asize, asize, 0, 5, 0))
            else:
                regions.append(Region(-1, 0, 0, 2 * _DUMMY_BYTES, 0, 0, 0))
            grid = ctx.fold_grid(nt)
            for lo, hi in inv_chunks:
                if isize:
                    inv = Region(_INV, lo * isize, (hi - lo) * isize, isize, 0, 6, -lo)
                else:
                    inv = Region(-1, 0, 0, 3 * _DUMMY_BYTES, 0, 0, 0)
                words = (ne, 0, e0, 0, 0, 0, 0, lo, hi, 1 if t0 == 0 else 0)
                records.append(Record(pipe, defines, words, grid, (*regions, inv)))
        return LaunchProgram.compile("compact_write", _WRITE_WORDS, ctx, records, ())


def _placeholder(backend: Any, nbytes: int, *bindings: Any) -> Any:
    """The placeholder of an unused binding: ``dummy(backend, k)`` of ``(k + 1) * 256`` bytes
    (distinct buffers for the output, the auxiliary input and the inverse); the scan's own (a
    few bytes) the context's spare region, as ``ops_scan`` binds them."""
    if nbytes < _DUMMY_BYTES:
        return backend.context.spare_region(nbytes)
    return dummy(backend, nbytes // _DUMMY_BYTES - 1)


def record_program(backend: Any, program: LaunchProgram, ptrs: Sequence[int], tail: bytes = b"") -> None:
    """Record ``program`` with its operands at ``ptrs`` (ranges checked by the caller) and
    ``tail`` after every step's parameter words: replayed, or through ``WgpuContext.dispatch``
    where a wrapper watches the context. Unused bindings get ``dummy`` placeholders."""
    ctx = backend._ctx
    if ctx.__dict__.get("dispatch") is not None:
        program.dispatch(backend, ctx, ptrs, _placeholder, tail)
        return
    program.run(backend, ctx, operand_bases(backend, ptrs), _placeholder, tail)


#: Compaction structures kept per backend, by their plain arguments and the window limit.
_STRUCTURES = PlanCache(256)


def _structure(backend: Any, flag: str, dtype: str, n: int, nan_distinct: bool) -> _Structure:
    """The kept structure of a compaction (arguments valid), made on first use."""
    limit = window_limit(backend)
    key = (flag, dtype, n, nan_distinct, limit, ops_scan.settings())
    plans = _STRUCTURES.of(backend)
    s = plans.get(key)
    ctx = backend.context
    if s is not None and s.ctx is ctx and s.count_program is not None and s.count_program.valid_for(ctx):
        return s
    ssize = 4 * key_words(dtype) if flag == "head" else storage_type(dtype).itemsize
    ntiles = -(-n // TILE)
    # a unit's source, counts and outputs (up to 8-byte entries per element) fit one window
    per_unit = max(1, (limit - 8) // (TILE * max(ssize, 8)))
    per_unit = min(per_unit, 65535 * 65535)
    units = tuple((t0, min(per_unit, ntiles - t0)) for t0 in range(0, ntiles, per_unit))
    s = _Structure(ctx, flag, dtype, nan_distinct, n, ssize, ntiles, units, limit)
    if n:
        s.count_program = s.compile_count(backend)
    _STRUCTURES.keep(plans, key, s)
    return s


@dataclass(eq=False)
class CompactPlan:
    """A compaction after its counting pass: ``total`` is known once :meth:`read_total` ran.

    Made by :func:`compact_begin`; outputs are written by :meth:`write_indices`,
    :meth:`write_coordinates`, :meth:`write_values` and :meth:`write_inverse`; :meth:`free` releases the counts."""

    backend: Any
    structure: _Structure
    src: int
    counts: int
    unit_base: list[int] = field(default_factory=list)  # output rank of each unit's first element
    total: int | None = None
    extra_bytes: list[bytes] = field(default_factory=list)  # read_total's extra regions

    @property
    def n(self) -> int:
        """Elements of the compacted source."""
        return self.structure.n

    @property
    def flag(self) -> str:
        """'nonzero' or 'head'."""
        return self.structure.flag

    @property
    def ahead_ok(self) -> bool:
        """Whether ``write_values(..., capacity=...)`` may record before the count is known
        (the compaction is one unit)."""
        return len(self.structure.units) <= 1

    def read_total(self, extra: Sequence[tuple[int, int]] = ()) -> int:
        """The number of flagged elements: one readback (the first call only) of the scanned
        count at the end of every unit, the last one followed by copies, made on the device, of
        the others and of ``extra``: (pointer, bytes) regions read back in the same wait, their
        bytes kept in ``extra_bytes`` (up to ``EXTRA_ROOM`` bytes of whole words; more are read
        as regions of their own)."""
        if self.total is not None:
            return self.total
        be = self.backend
        s = self.structure
        ends = [t0 + nt - 1 for t0, nt in s.units]
        room = sum(nbytes for _, nbytes in extra)
        ctx = be.context
        if room <= EXTRA_ROOM and not any(nbytes % 4 for _, nbytes in extra):
            # [last unit's count | extra regions | the other units' counts]
            size = 4 * s.ntiles + room + 4 * (len(ends) - 1)
            counts, off = be.resolve(self.counts, size)
            at = off + 4 * s.ntiles
            for ptr, nbytes in list(extra) + [(self.counts + 4 * t, 4) for t in ends[:-1]]:
                src, src_off = be.resolve(ptr, nbytes)
                ctx.copy_buffer(src.buffer, src_off, counts.buffer, at, nbytes)
                at += nbytes
            raw = ctx.readback(counts.buffer, off + 4 * ends[-1], size - 4 * ends[-1])
            self.extra_bytes, at = [], 4
            for _, nbytes in extra:
                self.extra_bytes.append(raw[at : at + nbytes])
                at += nbytes
            values = [int.from_bytes(raw[k : k + 4], "little") for k in range(at, len(raw), 4)]
            values.append(int.from_bytes(raw[:4], "little"))
        else:
            regions = []
            for ptr, nbytes in list(extra) + [(self.counts + 4 * t, 4) for t in ends]:
                alloc, off = be.resolve(ptr, nbytes)
                regions.append((alloc.buffer, off, nbytes))
            raw_all = ctx.readback_many(regions)
            self.extra_bytes = raw_all[: len(extra)]
            values = [int.from_bytes(b, "little") for b in raw_all[len(extra):]]
        self.unit_base = [0] + values[:-1]
        self.total = values[-1]
        return self.total

    def _write(self, out: _Output, ptrs: Sequence[int | None], value_base: int = 0,
               capacity: int | None = None) -> None:
        """Record the writes of ``out`` with its operands at ``ptrs`` (out, aux, inv; None where
        unused). With ``capacity`` the count is not read first (one unit only; the output is
        bound over ``capacity`` entries)."""
        s = self.structure
        be = self.backend
        ctx = be._ctx
        if capacity is None:
            total = self.read_total()
            bases = self.unit_base
        else:
            if len(s.units) != 1 or not out.out_size or out.inv_size:
                raise invalid_argument("a compaction written ahead of its count needs one unit and one output")
            total, bases = capacity, [0]
        spare = self.counts  # (stands in for an operand the program does not bind)
        operands = [self.src, self.counts] + [spare if p is None else p for p in ptrs]
        tail = _VALUE.pack(value_base & _U32) if value_base else _NO_VALUE
        if len(s.units) == 1 and ctx.__dict__.get("dispatch") is None:
            program = s.writes.get(out)
            if program is None:
                program = s.writes[out] = s.compile_write(out, [0], 1)
            # one unit: the kept program, its output bound over the count of this call
            bindings, firsts = [], []
            for base, rel, nbytes, itemsize, _ in program.slots:
                if base == _OUT:
                    nbytes = total * out.out_size
                win = be.window(operands[base] + rel, nbytes, itemsize)
                bindings.append(win.binding)
                firsts.append(win.first)
            program.record(ctx, bindings, firsts, tail, be, _placeholder)
            return
        record_program(be, s.compile_write(out, bases, total), operands, tail)

    def write_indices(self, out: int, index_dtype: str = "int64") -> None:
        """Write the flat index of every flagged element, in order, to ``out`` (``total``
        entries of ``index_dtype``: 'int64', 'int32' or 'uint32'). BackendError (invalid
        argument) for another dtype or a bad pointer range."""
        if index_dtype not in ("int64", "int32", "uint32"):
            raise invalid_argument(f"index dtype must be int64, int32 or uint32, not {index_dtype!r}")
        words = storage_type(index_dtype).itemsize // 4
        total = self.read_total()
        if total == 0:
            return
        _check_span(self.backend, out, total * 4 * words, 4 * words, "output")
        self._write(_output("indices", index_dtype), (out, None, None))

    def write_coordinates(self, outs: Sequence[int], shape: Sequence[int], index_dtype: str = "int64") -> None:
        """Write coordinate ``d`` of every flagged element, in order, to ``outs[d]`` (``total``
        entries of ``index_dtype``, 'int64' or 'int32', each), the elements being those of a
        row-major array of ``shape`` (``n`` elements): ``nonzero`` of an N-d array, one pass
        per dimension. BackendError (invalid argument) for another dtype, a shape of another
        size or number of outputs, or a bad pointer range."""
        if index_dtype not in ("int64", "int32"):
            raise invalid_argument(f"index dtype must be int64 or int32, not {index_dtype!r}")
        shape = tuple(_check_int("shape entries", int(v)) for v in shape)
        if len(outs) != len(shape) or not shape or math.prod(shape) != self.n:
            raise invalid_argument(f"coordinates of {self.n} elements need one output per dim of a shape of that "
                                   f"size, not {len(outs)} for {shape}")
        words = storage_type(index_dtype).itemsize // 4
        total = self.read_total()
        if total == 0:
            return
        for ptr in outs:
            _check_span(self.backend, ptr, total * 4 * words, 4 * words, "output")
        out = _output("coordinate", index_dtype, shape)
        for d, ptr in enumerate(outs):
            self._write(out, (ptr, None, None), d)

    def write_values(self, out: int, dtype: str, lo: int | None = None, capacity: int | None = None,
                     range_ptr: int | None = None, *, source: int | None = None) -> None:
        """Write a value per flagged element to ``out`` (``total`` elements of ``dtype``,
        zero-filled when ``dtype`` is packed, 8 or 16 bits):

        * ``source`` (a 'nonzero' plan; ``dtype`` of at most 8 bytes): the flagged elements of
          the ``n`` contiguous elements at ``source`` (``x[mask]``);
        * a 'head' plan over integer or bool keys of ``dtype`` (their canonical keys are a
          bijection; ``lo`` None): the value of every group head;
        * a 'nonzero' plan over a histogram whose bucket i counts the value ``lo + i`` (``dtype``
          integer or bool of at most 32 bits): the value of every non-empty bucket, in order;
          with ``range_ptr`` instead of ``lo`` the smallest value is read on the device from
          what ``ops_counting.key_range_record`` wrote there.

        ``capacity`` (a bound on the count; ``out`` holds that many elements): record the write
        before the count is read back, so that the readback waits for it too (one wait less);
        only for a compaction of one unit (``ahead_ok``). Raises BackendError (invalid
        argument) for a combination not listed, a bad dtype or pointer range."""
        be = self.backend
        aux_ptr = None
        dtype = _check_dtype(be, dtype)
        st = storage_type(dtype)
        small_int = st.kind != "f" and st.itemsize <= 4
        if source is not None:
            if self.flag != "nonzero" or lo is not None or range_ptr is not None or st.itemsize > 8:
                raise invalid_argument("write_values with a source needs a 'nonzero' plan, no lo or range, and "
                                       "a dtype of at most 8 bytes")
            if self.n:
                _check_span(be, source, self.n * st.itemsize, st.itemsize, "source")
            kind, aux_ptr = "source", source
        elif range_ptr is not None:
            if lo is not None or self.flag != "nonzero" or not small_int:
                raise invalid_argument("write_values with range_ptr needs a 'nonzero' plan, no lo, and an "
                                       "integer or bool dtype of at most 32 bits")
            _check_span(be, range_ptr, 8, 4, "range")
            kind, aux_ptr = "range", range_ptr
        elif lo is None:
            if self.flag != "head" or dtype != self.structure.dtype or st.kind == "f":
                raise invalid_argument("write_values needs a 'head' plan over integer or bool keys of the same dtype")
            kind = "head"
        else:
            if self.flag != "nonzero" or not small_int:
                raise invalid_argument("write_values with lo needs a 'nonzero' plan and an integer or bool "
                                       "dtype of at most 32 bits")
            kind = "base"
        total = self.read_total() if capacity is None else _check_int("capacity", capacity)
        if total == 0:
            return
        _check_span(be, out, total * st.itemsize, st.itemsize, "output")
        self._write(_output(kind, dtype), (out, aux_ptr, None), 0 if lo is None else lo, capacity)

    def write_inverse(self, perm: int, inv: int, index_dtype: str = "int64") -> None:
        """For every sorted position i, write its group id to ``inv[perm[i]]`` (``n`` entries of
        ``index_dtype`` 'int64' or 'int32'): unique's inverse indices in source order.
        BackendError (invalid argument) for another dtype or a bad pointer range."""
        if index_dtype not in ("int64", "int32"):
            raise invalid_argument(f"index dtype must be int64 or int32, not {index_dtype!r}")
        words = storage_type(index_dtype).itemsize // 4
        _check_span(self.backend, inv, self.n * 4 * words, 4 * words, "inverse")
        _check_span(self.backend, perm, self.n * 4, 4, "perm")
        if self.n == 0:
            return
        self._write(_output("inverse", index_dtype), (None, perm, inv))

    def free(self) -> None:
        """Release the counts buffer."""
        if self.counts:
            self.backend.free(self.counts)
            self.counts = 0


def compact_begin(backend: Any, src: int, n: int, *, flag: str = "nonzero", dtype: str = "bool",
                  nan_distinct: bool = True) -> CompactPlan:
    """Count the flagged elements of the ``n`` contiguous elements at ``src`` and scan the tile
    counts (recorded, nothing read back yet). ``flag`` is 'nonzero' (``src`` holds ``dtype``
    elements) or 'head' (``src`` holds sorted canonical keys of ``dtype``,
    ``sort_key_code.key_words(dtype)`` words each; with ``nan_distinct`` every NaN key is its own
    group). Returns a :class:`CompactPlan` (call ``free()`` when done).

    Raises BackendError: invalid argument for a bad flag, dtype, size or pointer range;
    unsupported for a missing adapter feature, a dtype wider than 8 bytes or ``n >= 2**32 - 1``.
    """
    if flag not in ("nonzero", "head"):
        raise invalid_argument(f"flag must be 'nonzero' or 'head', not {flag!r}")
    dtype = _check_dtype(backend, dtype)
    n = _check_int("n", n)
    if n >= 2**32 - 1:
        raise unsupported(f"compaction of {n} elements exceeds the 32-bit index range")
    if storage_type(dtype).itemsize > 8:
        raise unsupported(f"compaction flags of {dtype} elements (wider than 8 bytes)")
    s = _structure(backend, flag, dtype, n, bool(nan_distinct))
    ssize = s.src_size
    if n:
        _check_span(backend, src, n * ssize, min(ssize, 4) if flag == "head" else ssize, "source")
    # every tile writes its count; after them, what read_total copies there
    counts = backend.alloc(max(s.ntiles, 1) * 4 + EXTRA_ROOM + 4 * max(len(s.units) - 1, 0), zero=False)
    plan = CompactPlan(backend, s, src, counts)
    if n == 0:
        plan.total = 0
        return plan
    try:
        assert s.count_program is not None
        record_program(backend, s.count_program, (src, counts))
    except BaseException:
        plan.free()
        raise
    return plan


def submits_held(backend: Any) -> contextlib.AbstractContextManager[None]:
    """A block in which ``backend``'s open batch is not submitted for its size
    (``WgpuContext.size_submits_held``; with the ``compact_hold_submits`` knob off, nothing
    is held): around a compaction, from making its mask to recording its writes, so that a
    call submits once, with its readback."""
    if not config.value("compact_hold_submits"):
        return contextlib.nullcontext()
    return backend.context.size_submits_held()
