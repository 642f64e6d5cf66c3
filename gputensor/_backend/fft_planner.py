"""The planner of the fft calls: the dispatches of one call and the tables they read.

A :class:`Planner` appends the records (``launch.Record``: pipeline, defines, parameter words,
grid, regions) of the transforms of a call, its scratch operands and the float64 values of its
table (twiddles, chirps, scales), for ``fft_program.compile_plan``:

* lengths that fit a workgroup (``fft_lengths.group_shape``): one dispatch of
  ``_wgsl/fft_stockham.wgsl``, the mixed-radix Stockham passes in workgroup memory on C
  transforms per workgroup, read and written through their strides (``Planner.transform``);
  the real transforms' forming step fused into its store or load (``stockham_real``);
* longer such lengths: the four-step decomposition n = n1 * m (``_four_step``), the length-m
  transforms of the n1 interleaved subsequences into a scratch array, then the length-n1
  transforms across them with the twiddles W_n^(i k) applied on load (``four_step_real``: the
  real forming step fused into the last or first pass);
* lengths with a prime factor above 7: Bluestein's chirp-z (``_bluestein``) through transforms
  of a length m >= 2n - 1 of the kinds above (``_wgsl/fft_chirp.wgsl``);
* ``real_step``: ``_wgsl/fft_real_post.wgsl`` / ``fft_real_pre.wgsl`` around a half-length
  transform that takes neither fused form.

Operands: base 0 the source, 1 the destination, 2 the plan's table, 3... the scratch. No wgpu
here.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .errors import invalid_argument
from .fft_lengths import (MAX_BATCH_DIMS, MIN_RUN, direct_io, divisors, entry_pitch, factor, fast_length,
                          group_shape, knobs, pass_twiddles, row_group, spread, workgroup_length)
from .launch import Region
from .layout import strided_span

__all__ = ["Planner", "View", "column_like"]

_U32 = 0xFFFFFFFF


def column_like(sizes: Sequence[int], src: View) -> bool:
    """Whether some batch dim of ``src`` is closer in memory than the transform's elements."""
    inner = [abs(st) for size, st in zip(sizes, src.strides) if size > 1]
    return bool(inner) and min(inner) < abs(src.axis)


class View(NamedTuple):
    """One side of a transform: operand ``base``, ``origin`` (elements from its element 0),
    ``axis`` stride and the stride of each batch dim."""

    base: int
    origin: int
    axis: int
    strides: tuple[int, ...]


class Planner:
    """Builds the records (dispatches) and scratch list of one call, and its tables."""

    def __init__(self, backend: Any, ctx: Any, dtype: str, itemsize: int, wgsl: str) -> None:
        self.backend, self.ctx, self.dtype = backend, ctx, dtype
        self.itemsize, self.wgsl = itemsize, wgsl
        self.lw = workgroup_length(ctx, itemsize)
        self._shapes: dict[int, tuple[int, int] | None] = {}
        self.column_split = knobs().column_split
        self.records: list[Any] = []
        self.aux: list[list[int]] = []
        self.tables: list[np.ndarray] = []
        self.table_len = 0
        self.inner: dict[tuple[int, tuple[int, ...]], int] = {}  # (length, radices) -> its twiddles
        self.scales: dict[float, int] = {}  # scale -> table offset of its entry
        self.chirps: list[tuple[int, int]] = []  # chirp spectra to compute: (length, table offset)
        #: whether operand 0 holds real values (read as complex ones with imaginary part 0)
        self.real_src = False

    def shape(self, n: int) -> tuple[int, int] | None:
        """``group_shape`` of length ``n`` (memoised for the plan)."""
        if n not in self._shapes:
            self._shapes[n] = group_shape(self.ctx, self.itemsize, n)
        return self._shapes[n]

    # ---- tables ----------------------------------------------------------------------------
    def _table(self, values: np.ndarray) -> int:
        off = self.table_len
        self.tables.append(values)
        self.table_len += len(values)
        return off

    def scale_entry(self, scale: float) -> int:
        """The table offset of an entry holding ``scale``."""
        off = self.scales.get(scale)
        if off is None:
            off = self.scales[scale] = self._table(np.array([scale], dtype=np.complex128))
        return off

    def twiddles(self, n: int, radices: tuple[int, ...]) -> int:
        """The table offset of the pass twiddles of length ``n``: with ``fft_pass_twiddles``
        each pass's own (``pass_twiddles``), else exp(-2 pi i k / n), k < n."""
        key = (n, radices) if knobs().pass_twiddles else (n, ())
        off = self.inner.get(key)
        if off is None:
            values = pass_twiddles(radices)[0] if key[1] else np.exp(-2j * np.pi * np.arange(n) / n)
            off = self.inner[key] = self._table(values)
        return off

    # ---- the scratch operands (bases 3, 4, ...) ------------------------------------------------
    def scratch(self, elements: int) -> int:
        self.aux.append([max(1, elements) * self.itemsize, 0])
        return 2 + len(self.aux)

    # ---- the transforms ----------------------------------------------------------------------
    def transform(self, n: int, sizes: Sequence[int], src: View, dst: View, inverse: bool,
                  scale: float, top: bool = False, keep: int = 0) -> None:
        """Append the dispatches of ``dst = scale * DFT(src)`` (``top``: the call's own operands,
        whose column transforms may split; not the rows of a decomposition, which are columns by
        construction). ``keep`` (0: all n): only the first ``keep`` results of each transform
        are stored (``dst`` has that many along its axis)."""
        radices = factor(n)
        column = column_like(sizes, src)
        keep = keep if 0 < keep < n else 0
        if radices is None:
            self._bluestein(n, sizes, src, dst, inverse, scale, keep)
        elif self.shape(n) is not None and not (top and column and self.column_split and self._split_column(n)):
            self._stockham(n, radices, sizes, src, dst, inverse, scale, None, keep=keep)
        elif keep:  # the whole transforms into a scratch array, then the kept results copied out
            batch = math.prod(sizes)
            tmp = self.scratch(batch * n)
            rows = tuple(n * math.prod(sizes[:i]) for i in range(len(sizes)))
            self._four_step(n, sizes, src, View(tmp, 0, 1, rows), inverse, scale, column)
            self._chirp(3, batch * keep, keep, n, View(tmp, 0, 1, ()), dst, list(zip(sizes, dst.strides)), 0, 0,
                        False, 1.0)
        else:
            self._four_step(n, sizes, src, dst, inverse, scale, column)

    def _split_column(self, n: int) -> bool:
        """Whether a column transform of length ``n`` (entries adjacent in memory, elements far
        apart) that fits a workgroup takes a four-step decomposition instead: when fewer than
        ``MIN_RUN`` entries fit a workgroup (reads of fewer than 32 bytes in a row) and ``n``
        splits into two factors that each take ``MIN_RUN`` entries."""
        shape = self.shape(n)
        return shape is not None and shape[0] < MIN_RUN and self._split(n, True) is not None

    def _split(self, n: int, column: bool = False) -> int | None:
        """The column length n1 of a four-step decomposition of ``n``. The column pass reads
        ``lw / n1`` adjacent columns per workgroup, so n1 is at most a quarter of a workgroup
        (32-byte runs): the smallest such n1 whose rows (n / n1, strided too) fit a workgroup
        ``MIN_RUN`` times, else (not ``column``) once; else (three levels or more) the longest
        n1 of at most a sixteenth of a workgroup, the rows decomposed in turn. None
        (``column``) or BackendError when there is none."""
        fits = [d for d in divisors(n)[1:-1] if self.shape(d) is not None]
        for runs in (True, False):  # rows of MIN_RUN entries per workgroup first
            for d in fits:
                rows = self.shape(n // d)
                if d <= max(2, self.lw // MIN_RUN) and rows is not None and (not runs or rows[0] >= MIN_RUN):
                    return d
            if column:
                return None
        short = [d for d in fits if d <= max(2, self.lw // 16)]
        if not short:
            raise invalid_argument(f"fft: no decomposition of length {n}")
        return short[-1]

    def _four_step(self, n: int, sizes: Sequence[int], src: View, dst: View, inverse: bool,
                   scale: float, column: bool) -> None:
        """n = n1 m: the length-m transforms of the n1 subsequences x[i1 + n1 i2] into a scratch
        array, then the length-n1 transforms over i1 of W_n^(i1 k2) times them (k2 the first
        batch dim of that pass). The scratch holds the batch entries outermost (row-like
        operands: each row's transform contiguous) or innermost (``column``: entries adjacent,
        as in the operands)."""
        n1 = (self._split(n, True) if column else None) or self._split(n)
        assert n1 is not None
        m = n // n1
        batch = math.prod(sizes)
        tmp = self.scratch(batch * n)
        cum = []
        acc = 1
        for size in sizes:
            cum.append(acc)
            acc *= size
        if column:  # tmp[(i1 m + k2) batch + b]
            a_dst = View(tmp, 0, batch, (m * batch, *cum))
            b_src = View(tmp, 0, m * batch, (batch, *cum))
        else:  # tmp[b n + i1 m + k2]
            outer = tuple(c * n for c in cum)
            a_dst = View(tmp, 0, 1, (m, *outer))
            b_src = View(tmp, 0, m, (1, *outer))
        a_src = View(src.base, src.origin, src.axis * n1, (src.axis, *src.strides))
        self.transform(m, (n1, *sizes), a_src, a_dst, inverse, 1.0)
        b_dst = View(dst.base, dst.origin, dst.axis * m, (dst.axis, *dst.strides))
        self._stockham(n1, factor(n1), (m, *sizes), b_src, b_dst, inverse, scale, (n, 0))

    def _stockham(self, n: int, radices: tuple[int, ...] | None, sizes: Sequence[int], src: View,
                  dst: View, inverse: bool, scale: float, twiddle: tuple[int, int] | None,
                  real: tuple[int, bool] | None = None, blue: tuple[int, int, int, bool] | None = None,
                  keep: int = 0) -> None:
        """One dispatch of the workgroup kernel; ``twiddle`` (total length, index of the batch
        dim whose coordinate multiplies the element index) for the column pass of a four-step
        decomposition; ``real`` (mode, conjugation) for the real transforms of length 2n
        (``stockham_real``); ``blue`` (length, chirp and spectrum table offsets, inverse) for
        Bluestein's transform of that length through this one (``_bluestein``); ``keep``
        (0: all) the results stored per transform (no twiddle, no real step). Batch dims of size
        1 are dropped, the others ordered by source stride (adjacent entries of a workgroup
        adjacent in memory where possible)."""
        shape = self.shape(n)
        assert radices is not None and shape is not None
        per, wg = shape
        tdim_of = -1 if twiddle is None else twiddle[1]
        if real is not None and real[0] == 4:
            tdim_of = 0  # (the subsequence's coordinate: the real step's partner and twiddle)
        dims = sorted(((s, a, b, i == tdim_of) for i, (s, a, b) in enumerate(zip(sizes, src.strides, dst.strides))
                       if s > 1 or i == tdim_of), key=lambda d: (abs(d[1]), abs(d[2])))
        tdim = next((i for i, d in enumerate(dims) if d[3]), 0xFFFF)
        dims = [d[:3] for d in dims]
        if len(dims) > MAX_BATCH_DIMS:
            raise invalid_argument(f"fft: more than {MAX_BATCH_DIMS} batch dims")
        batch = math.prod(d[0] for d in dims) if dims else 1
        # (the real transforms' kernels take one butterfly per invocation: the faster shape there)
        paired = real is None
        per, wg = row_group(self.ctx, n, radices, per, batch, abs(src.axis) == 1 and abs(dst.axis) == 1, paired)
        per, wg = spread(self.ctx, n, radices, per, wg, batch, 2 if real is not None and real[0] == 3 else 1, paired)
        along_load = abs(src.axis) == 1 or per == 1
        along_store = abs(dst.axis) == 1 or per == 1
        tw_split = 1
        lo = hi = 0
        if twiddle is not None:
            total = twiddle[0]
            tw_split = 1 << ((total.bit_length() + 1) // 2)
            lo = self._table(np.exp(-2j * np.pi * np.arange(tw_split) / total))
            hi = self._table(np.exp(-2j * np.pi * tw_split * np.arange(-(-total // tw_split)) / total))
        inner = self.twiddles(n, radices)
        mode, conj = real if real is not None else (0, False)
        spec_at = 0
        src_len = dst_len = n
        if mode == 3:  # (the last pass of a four-step half-length transform: see ``four_step_real``)
            assert twiddle is not None and tdim == 0 and per % 2 == 0 and dims[0][0] % per == 0
            h = twiddle[0]
            real_at = self._table(np.exp(-1j * np.pi * np.arange(h // n) / h))  # W_2h^col
            spec_at = self._table(np.exp(-1j * np.pi * (h // n) * np.arange(n + 1) / h))  # W_2h^(m k1)
        elif mode == 4:  # (the first pass of a four-step half-length inverse: see ``four_step_real``)
            assert twiddle is None and tdim == 0
            h = n * dims[0][0]
            real_at = self._table(np.exp(-1j * np.pi * np.arange(dims[0][0]) / h))  # W_2h^i1
            spec_at = self._table(np.exp(-1j * np.pi * dims[0][0] * np.arange(n) / h))  # W_2h^(n1 i2)
        elif mode:
            real_at = self._table(np.exp(-1j * np.pi * np.arange(n + 1) / n))
            src_len, dst_len = n + (mode == 2), n + (mode == 1)
        else:
            real_at = 0
        if blue is not None:
            src_len = dst_len = blue[0]
            real_at, spec_at, conj = blue[1], blue[2], False
        if keep:
            assert twiddle is None and not mode and keep < dst_len
            dst_len = keep
        pitch, pad = entry_pitch(self.ctx, self.itemsize, n, per)
        two = wg < -(-per * n // min(radices))
        dload, dstore = direct_io(n, radices, along_load, along_store, mode, blue is not None)
        dstore = dstore and not keep
        total = twiddle[0] if twiddle is not None else 0
        defines = _stockham_defines(self.wgsl, n, per, wg, radices, total, pitch, pad, mode,
                                    blue[0] if blue is not None else 0, self._real_src(src), two, knobs().unrolled_loads,
                                    dload, dstore, knobs().pass_twiddles, keep, mode == 1 and knobs().real_pairs,
                                    knobs().twiddle_math and self.wgsl == "f32")
        padded = dims + [(1, 0, 0)] * (MAX_BATCH_DIMS - len(dims))
        flags = (int(inverse) | (2 if scale != 1.0 else 0) | (4 if along_load else 0) | (8 if along_store else 0)
                 | (16 if conj else 0) | (32 if blue is not None and blue[3] else 0))
        words = [batch, 0, 0, src.axis & _U32, dst.axis & _U32, 0, lo, hi, tw_split, tdim, inner, flags,
                 self.scale_entry(scale), len(dims), real_at, spec_at, *(d[0] for d in padded),
                 *(d[1] & _U32 for d in padded), *(d[2] & _U32 for d in padded)]
        isz = self.itemsize
        dst_region = self._region(dst, dst_len, [(d[0], d[2]) for d in dims], 2)
        if mode == 3:  # one element more: X[h] of the last row, written by its column 0
            dst_region = dst_region._replace(nbytes=dst_region.nbytes + isz)
        src_region = self._region(src, src_len, [(d[0], d[1]) for d in dims], 1)
        if mode == 4:  # one element more: X[h] of the last row, the partner of its X[0]
            src_region = src_region._replace(nbytes=src_region.nbytes + isz)
        regions = (
            src_region,
            dst_region,
            Region(2, 0, 0, isz, 0, 5, 0),  # the table: size filled in at compile
        )
        grid = self.ctx.fold_grid(-(-batch // per))
        pipe = self.ctx.pipeline("fft_stockham", 3, defines)
        self.records.append((pipe, defines, tuple(words), grid, regions))

    def _real_src(self, view: View) -> bool:
        """Whether ``view`` reads real values (operand 0 of a plan with ``real_src``)."""
        return self.real_src and view.base == 0

    def _region(self, view: View, n: int, dims: list[tuple[int, int]], word: int) -> Region:
        full = [(n, view.axis), *dims]
        lo, hi = strided_span(full)
        isz = self.itemsize // 2 if self._real_src(view) else self.itemsize
        return Region(view.base, (view.origin + lo) * isz, (hi - lo + 1) * isz, isz, 0, word, -lo)

    def _bluestein(self, n: int, sizes: Sequence[int], src: View, dst: View, inverse: bool,
                   scale: float, keep: int = 0) -> None:
        m = fast_length(2 * n - 1)
        batch = math.prod(sizes)
        k = np.arange(n, dtype=np.int64)
        w = np.exp(-1j * np.pi * ((k * k) % (2 * n)) / n)  # exp(-i pi k^2 / n), exact angles
        chirp = self._table(w)
        h = np.zeros(m, dtype=np.complex128)
        hk = np.conj(w) if not inverse else w  # the kernel of the convolution
        h[:n] = hk
        h[m - n + 1:] = hk[1:][::-1]
        spec = self._table(h)  # the kernel; its spectrum replaces it on the device (``_make_plan``)
        self.chirps.append((m, spec))
        radices = factor(m)
        if self.shape(m) is not None and radices is not None:  # one dispatch, all in workgroup memory
            self._stockham(m, radices, sizes, src, dst, False, scale / m, None, blue=(n, chirp, spec, inverse),
                           keep=keep)
            return
        a = self.scratch(batch * m)
        b = self.scratch(batch * m)
        dims = [(s, st) for s, st in zip(sizes, src.strides)]
        self._chirp(0, batch * m, n, m, src, View(a, 0, 1, ()), dims, chirp, spec, inverse, 1.0)
        contiguous = tuple(m * math.prod(sizes[:i]) for i in range(len(sizes)))
        self.transform(m, sizes, View(a, 0, 1, contiguous), View(b, 0, 1, contiguous), False, 1.0)
        self._chirp(1, batch * m, n, m, View(b, 0, 1, ()), View(a, 0, 1, ()), [], chirp, spec, inverse, 1.0)
        self.transform(m, sizes, View(a, 0, 1, contiguous), View(b, 0, 1, contiguous), True, 1.0)
        dims = [(s, st) for s, st in zip(sizes, dst.strides)]
        out = keep or n
        self._chirp(2, batch * out, out, m, View(b, 0, 1, ()), dst, dims, chirp, spec, inverse, scale / m)

    def _chirp(self, mode: int, total: int, n: int, m: int, src: View, dst: View,
               dims: list[tuple[int, int]], chirp: int, spec: int, inverse: bool, scale: float) -> None:
        dims = [d for d in dims if d[0] > 1]
        if len(dims) > MAX_BATCH_DIMS:
            raise invalid_argument(f"fft: more than {MAX_BATCH_DIMS} batch dims")
        batch = total // (m if mode < 2 else n)  # (modes 2 and 3: n the results stored per entry)
        strided = src if mode == 0 else dst
        padded = dims + [(1, 0)] * (MAX_BATCH_DIMS - len(dims))
        words = [total, n, m, 0, 0, 0, chirp, spec, strided.axis & _U32, int(inverse), self.scale_entry(scale),
                 len(dims),
                 *(d[0] for d in padded), *(d[1] & _U32 for d in padded), *(0,) * 8]
        isz = self.itemsize
        if mode == 0:
            r_src = self._region(src, n, dims, 3)
            r_dst = Region(dst.base, 0, batch * m * isz, isz, 0, 4, 0)
        elif mode == 1:
            r_src = Region(src.base, 0, batch * m * isz, isz, 0, 3, 0)
            r_dst = Region(dst.base, 0, batch * m * isz, isz, 0, 4, 0)
        else:
            r_src = Region(src.base, 0, batch * m * isz, isz, 0, 3, 0)
            r_dst = self._region(dst, n, dims, 4)
        defines = _chirp_defines(self.wgsl, mode, self._real_src(src))
        grid = self.ctx.fold_grid(-(-total // 256))
        pipe = self.ctx.pipeline("fft_chirp", 3, defines)
        self.records.append((pipe, defines, tuple(words), grid, (r_src, r_dst, Region(2, 0, 0, isz, 0, 5, 0))))

    def stockham_real(self, n: int, rows: int, src: int, dst: int, inverse: bool, scale: float,
                      conj: bool) -> bool:
        """Append the one dispatch of a real transform of length 2n over ``rows`` contiguous
        rows from operand ``src`` to ``dst`` where a workgroup holds length n: forward (rows of
        2n reals, read as n complex values, to rows of n + 1) or ``inverse`` (rows of n + 1 to
        rows of 2n reals); False (nothing appended) where it does not fit."""
        radices = factor(n)
        if radices is None or self.shape(n) is None:
            return False
        src_len, dst_len = (n + 1, n) if inverse else (n, n + 1)
        self._stockham(n, radices, (rows,), View(src, 0, 1, (src_len,)), View(dst, 0, 1, (dst_len,)), inverse,
                       scale, None, (2 if inverse else 1, conj))
        return True

    def four_step_real(self, n: int, rows: int, src: int, dst: int, scale: float, conj: bool,
                       inverse: bool = False) -> bool:
        """Append the two dispatches of a real transform of length 2n over ``rows`` contiguous
        rows where length n takes a four-step decomposition n = n1 m (the length-m transforms
        into a scratch array, then the n1-point column transforms), the real step fused into
        them. Forward (operand ``src``: rows of 2n reals read as n complex values; ``dst``:
        rows of n + 1): the column pass's store forms X[k] from Z[k] and Z[n - k], a workgroup
        holding columns j and m - j together (REAL 3 of ``fft_stockham.wgsl``). ``inverse``
        (rows of n + 1 to rows of 2n reals): the first pass's load forms its inputs from X[g]
        and X[n - g] (REAL 4). False (nothing appended) where the knob ``fft_real_fused`` is
        off, n does not take that decomposition in two dispatches, or (forward) the column
        pass's workgroups do not hold whole pairs (an odd m, one column per workgroup)."""
        radices = factor(n)
        if not knobs().real_fused or radices is None or self.shape(n) is not None:
            return False
        n1 = self._split(n)
        if n1 is None:
            return False
        m = n // n1
        shape = self.shape(n1)
        if shape is None or m < 2 or n1 < 2:
            return False
        if inverse:
            if self.shape(m) is None:
                return False
            tmp = self.scratch(rows * n)
            self._stockham(m, factor(m), (n1, rows), View(src, 0, n1, (1, n + 1)), View(tmp, 0, 1, (m, n)), True,
                           1.0, None, (4, conj))
            self._stockham(n1, factor(n1), (m, rows), View(tmp, 0, m, (1, n)), View(dst, 0, m, (1, n)), True,
                           scale, (n, 0))
            return True
        per, _ = row_group(self.ctx, n1, factor(n1), shape[0], m * rows, m == 1, False)
        if per < 2 or per % 2 or m % per:
            return False
        tmp = self.scratch(rows * n)
        self.transform(m, (n1, rows), View(src, 0, n1, (1, n)), View(tmp, 0, 1, (m, n)), False, 1.0)
        self._stockham(n1, factor(n1), (m, rows), View(tmp, 0, m, (1, n)), View(dst, 0, m, (1, n + 1)), False,
                       scale, (n, 0), (3, conj))
        return True

    def real_step(self, kernel: str, n: int, rows: int, src: int, dst: int, scale: float, conj: bool) -> None:
        """Append ``fft_real_post`` (rows of n/2 complex values at operand ``src`` to rows of n/2
        + 1 at ``dst``) or ``fft_real_pre`` (the reverse), the step of a real transform of even
        length n around its half-length complex DFT (``_wgsl/fft_real_post.wgsl``)."""
        h = n // 2
        pairs = h // 2 + 1
        count = n // 4 + 1  # the twiddles exp(-2 pi i k / n), k <= n / 4, as fine x coarse entries
        shift = max(0, (count - 1).bit_length() + 1) // 2
        fine = self._table(np.exp(-2j * np.pi * np.arange(1 << shift) / n))
        coarse = self._table(np.exp(-2j * np.pi * np.arange(-(-count // (1 << shift))) * (1 << shift) / n))
        words = (h, pairs, rows, int(conj), 0, 0, 0, fine, coarse, shift, self.scale_entry(scale), 0) + (0,) * 16
        src_len, dst_len = (h, h + 1) if kernel == "fft_real_post" else (h + 1, h)
        isz = self.itemsize
        regions = (Region(src, 0, rows * src_len * isz, isz, 0, 4, 0), Region(dst, 0, rows * dst_len * isz, isz, 0, 5, 0),
                   Region(2, 0, 0, isz, 0, 6, 0))
        defines = _real_defines(self.wgsl)
        pipe = self.ctx.pipeline(kernel, 3, defines)
        self.records.append((pipe, defines, words, self.ctx.fold_grid(-(-pairs * rows // 256)), regions))

    def finish(self) -> tuple[list[Any], np.ndarray]:
        """The records with the table's size in its regions, and the table (float64 values)."""
        table = np.concatenate(self.tables) if self.tables else np.zeros(1, np.complex128)
        nbytes = len(table) * self.itemsize
        records = []
        for pipe, defines, words, grid, regions in self.records:
            regions = tuple(r._replace(nbytes=nbytes) if r.base == 2 else r for r in regions)
            records.append((pipe, defines, words, grid, regions))
        return records, table


def _literal(value: float, wgsl: str) -> str:
    """A decimal WGSL literal of a finite ``value`` (a constant expression, which the bit-pattern
    literals of ``wgsl_types.literal`` are not)."""
    return f"{float(value)!r}{'f' if wgsl == 'f32' else 'lf'}"


@functools.lru_cache(maxsize=256)
def _stockham_defines(wgsl: str, n: int, per: int, wg: int, radices: tuple[int, ...],
                      twiddle: int, pitch: int, pad: int, real: int = 0, blue: int = 0,
                      real_src: bool = False, two: bool = False, unroll: bool = False,
                      dload: bool = False, dstore: bool = False, pass_tw: bool = False,
                      keep: int = 0, pairs: bool = False, tw_math: bool = False) -> dict[str, object]:
    """The placeholders of fft_stockham.wgsl (``twiddle``: the whole length of a four-step
    column pass's twiddles, 0 for none; ``blue``: Bluestein's length, 0 for none;
    ``unroll``: the load and store loops unrolled; ``dload`` / ``dstore``: the first pass reads
    the source, the last writes the destination; ``pass_tw``: each pass's twiddles in a table of
    its own; ``keep``: the results stored per entry, 0 for all; ``pairs``: the real forward
    step's store takes results k and n - k together; ``tw_math``: the passes compute their
    twiddles; cached: treat as read-only)."""
    nout = keep or blue or (n + 1 if real == 1 else n)
    t = wgsl
    c = {f"C{r}{k}": _literal(math.cos(2 * math.pi * k / r), t) for r in (5, 7) for k in range(1, 4)}
    s = {f"S{r}{k}": _literal(math.sin(2 * math.pi * k / r), t) for r in (5, 7) for k in range(1, 4)}
    out: dict[str, object] = {
        "T": t, "N": n, "C": per, "WG": wg, "NPASS": len(radices), "PITCH": pitch, "PAD": pad,
        "RADICES": ", ".join(f"{r}u" for r in radices),
        "PASS_TW": "true" if pass_tw else "false", "TW_MATH": "true" if tw_math else "false",
        "TWN": twiddle if tw_math and twiddle else 1,
        "TW_AT": ", ".join(f"{a}u" for a in (pass_twiddles(radices)[1] if pass_tw else (0,) * len(radices))),
        "TWIDDLE": "true" if twiddle else "false", "REAL": real, "KEEP": keep,
        "PAIRS": "true" if pairs else "false",
        "BLUE": "true" if blue else "false", "BN": blue or 1, **_source(t, real_src),
        "TWO": "true" if two else "false",
        "DLOAD": "true" if dload else "false", "DSTORE": "true" if dstore else "false",
        "UNROLL": "true" if unroll else "false", "LOADS": -(-per * n // wg),
        "STORES": -(-per * (n // 2 + 1 if pairs else nout) // wg),
        **{f"USE{r}": "true" if r in radices else "false" for r in (2, 3, 4, 5, 7, 8)},
        "C3": _literal(-0.5, t), "S3": _literal(math.sqrt(3.0) / 2, t),
        "R2": _literal(math.sqrt(0.5), t),
    }
    for key in ("C51", "C52", "S51", "S52", "C71", "C72", "C73", "S71", "S72", "S73"):
        out[key] = c.get(key, s.get(key))
    return out


@functools.lru_cache(maxsize=4)
def _real_defines(wgsl: str) -> dict[str, object]:
    """The placeholders of fft_real_post.wgsl / fft_real_pre.wgsl (cached: treat as read-only)."""
    return {"T": wgsl}


@functools.lru_cache(maxsize=16)
def _chirp_defines(wgsl: str, mode: int, real_src: bool = False) -> dict[str, object]:
    """The placeholders of fft_chirp.wgsl (cached: treat as read-only)."""
    return {"T": wgsl, "MODE": mode, **_source(wgsl, real_src)}


def _source(wgsl: str, real: bool) -> dict[str, str]:
    """The placeholders of the source binding's element type and load (a real source's
    values as complex ones)."""
    if real:
        return {"SRC": wgsl, "LOAD": f"vec2<{wgsl}>(src[k], {wgsl}(0.0))"}
    return {"SRC": f"vec2<{wgsl}>", "LOAD": "src[k]"}
