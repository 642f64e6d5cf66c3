"""The stable LSD radix sort of long rows: 8-bit digits, per pass a histogram kernel, the
row scans of ``ops_scan`` and a scatter kernel (``sort_scatter``, or ``sort_scatter_sg`` where
``sort_subgroup`` allows it); rows in units that fit a binding window, a row larger than one in
chunks of tiles (see ``ops_sort``'s docstring)."""

from __future__ import annotations

import struct
from typing import Any

from . import ops_scan
from .errors import unsupported
from .launch import LaunchProgram, Region, rebased
from .sort_common import _DUMMY_BYTES, _U32, WG, dummy, window_limit
from .sort_job import _Job, _launch
from .sort_key_code import _key_defines, _write_out, bits_loader, key_bits
from .sort_subgroup import ITEMS, _tile_words, scatter_rows
from .wgsl_types import storage_type

__all__: list[str] = []


def _radix(backend: Any, job: _Job) -> None:
    """Record the radix sort of ``job`` (arguments and pointer ranges already checked): its
    ``LaunchProgram`` (``_radix_program``: every pass of every unit of rows, the histogram
    scans included; planned once per job structure and kept per backend) replayed with fresh
    temporaries, or recorded through ``WgpuContext.dispatch`` where a wrapper (the profiler's,
    a test spy) watches it. BackendError (unsupported) for rows whose histograms exceed one
    binding window."""
    limit = window_limit(backend)
    key = ("radix", job.dtype, job.rows, job.n, job.ld, job.mode, job.descending, job.out_mode, job.out_dtype,
           job.vals is not None, limit, ITEMS, scatter_rows(backend, job.kw, job.has_vals), ops_scan.settings())
    # (the fallback: a histogram buffer without whole vectors)
    _launch(backend, job, key, lambda: _radix_program(backend, job, limit, True), _radix_placeholder,
            lambda: _radix_program(backend, job, limit, False))


def _radix_placeholder(backend: Any, nbytes: int, *bindings: Any) -> Any:
    """The placeholder of a radix program's unused binding: for the sort kernels' absent
    values, ``dummy(backend, k)`` for a placeholder of ``(k + 1) * _DUMMY_BYTES`` bytes (the
    values read and written by one scatter are two distinct buffers); for the scans' (a few
    bytes), the context's spare region, as ``ops_scan`` binds them."""
    if nbytes < _DUMMY_BYTES:
        return backend.context.spare_region(nbytes)
    return dummy(backend, nbytes // _DUMMY_BYTES - 1)


def _radix_program(backend: Any, job: _Job, limit: int, vector: bool) -> LaunchProgram:
    """The dispatches of ``_radix`` for the structure of ``job``: operands 0 (src), 1 (out),
    2 (vals, for keys and values); scratch: the ping-pong key (and value) buffers, the
    histograms (whole vectors with ``vector``: the scans then load vectors) and the scans'
    scratch (shared by the scans of one unit size). Rows in units whose every buffer fits
    ``limit`` bytes; a row larger than that in chunks of tiles."""
    ctx = backend.context
    st = storage_type(job.dtype)
    kw = job.kw
    tile = WG * ITEMS
    n, rows = job.n, job.rows
    ntiles = -(-n // tile)
    passes = -(-key_bits(job.dtype) // 8)
    carry_vals = job.has_vals
    out_size = job.out_itemsize()
    hist_row = 256 * ntiles * 4
    if hist_row > limit:
        raise unsupported(f"a row of {n} elements is too long to sort on this adapter "
                          f"(its histograms exceed one binding of {limit} bytes)")
    # scratch: key (+ value) buffers, ping-pong; histograms per row (every element of them is
    # written before it is read: no zero fill)
    ntemp = 0 if passes == 1 else (1 if passes == 2 else 2)
    aux: list[list[int]] = [[rows * n * kw * 4, 0] for _ in range(ntemp)]
    temps_k = [3 + k for k in range(ntemp)]
    if carry_vals:
        temps_v = [3 + len(aux) + k for k in range(ntemp)]
        aux += [[rows * n * 4, 0] for _ in range(ntemp)]
    hist = 3 + len(aux)
    aux.append([rows * hist_row, 16 if vector else 0])
    scans: dict[int, list[tuple[int, int]]] = {}  # unit rows -> the bases of its scan program
    records: list[Any] = []
    per_row = max(job.ld * st.itemsize, n * kw * 4, n * out_size, n * 4 if carry_vals else 0)
    nr = min(rows, limit // per_row, limit // hist_row)
    if nr >= 1:
        units = [(r0, min(nr, rows - r0), None) for r0 in range(0, rows, nr)]
    else:  # a row larger than one window: chunks of tiles
        ct = max(1, limit // (tile * max(st.itemsize, kw * 4, out_size, 4 if carry_vals else 0)))
        units = [(r0, 1, ct) for r0 in range(rows)]
    for r0, nr_u, ct in units:
        scan = ops_scan.rows_program(backend, "sum", "uint32", nr_u, 256 * ntiles, vector)
        if nr_u not in scans:
            scans[nr_u] = [(hist, 0), (hist, 0)] + [(3 + len(aux) + k, 0) for k in range(len(scan.aux))]
            aux += [list(a) for a in scan.aux]
        shift = r0 * hist_row
        scan_bases = [(b, shift if b == hist else 0) for b, _ in scans[nr_u]]
        for p in range(passes):
            first, last = p == 0, p == passes - 1
            if first:
                src, src_size, src_ld, sval = 0, st.itemsize, job.ld, None
            else:
                src, src_size, src_ld = temps_k[(p - 1) % 2], kw * 4, n
                sval = temps_v[(p - 1) % 2] if carry_vals else None
            if last:
                dst_mode, dst, dst_size = job.out_mode, 1, out_size
                dval = 2 if job.out_mode == 0 and job.vals is not None else None
            else:
                dst_mode, dst, dst_size = 0, temps_k[p % 2], kw * 4
                dval = temps_v[p % 2] if carry_vals else None
            _radix_pass(backend, records, job, p, first, r0, nr_u, ct, ntiles, src, src_size, src_ld, sval,
                        dst_mode, dst, dst_size, dval, hist, rebased(scan, scan_bases))
    return LaunchProgram.compile("sort_scatter", _SCATTER_WORDS, ctx, records, aux)


def _radix_pass(backend: Any, records: list[Any], job: _Job, p: int, first: bool, r0: int, nr: int,
                ct: int | None, ntiles: int, src: int, src_size: int, src_ld: int, sval: int | None,
                dst_mode: int, dst: int, dst_size: int, dval: int | None, hist: int,
                scan: list[Any]) -> None:
    """Append the records of pass ``p`` over the unit of ``nr`` rows from row ``r0`` (operands
    and scratch by base: ``src``/``sval`` read, ``dst``/``dval`` written, ``hist``; ``ct``:
    tiles per chunk of a row larger than a window, None for whole rows): its histograms, the
    row scans ``scan`` (records) and its scatters."""
    ctx = backend.context
    n = job.n
    tile = WG * ITEMS
    shift = 8 * p
    kw = job.kw
    carry_vals = job.has_vals
    # Later passes read keys, not the dtype: their kernels only depend on the key width (and on
    # the dtype's from_key when they write sorted values), so fewer variants are compiled.
    generic = "uint64" if kw == 2 else "uint32"
    key_defs = _key_defines(job.dtype if first else generic, job.mode, job.descending if first else False)
    loader = bits_loader("src_bits", "src", job.dtype if first else generic)
    out_defs = key_defs
    if dst_mode == 1 and not first:
        out_defs = _key_defines(job.dtype, job.mode, job.descending)
    hist_first_row = r0 * 256 * ntiles
    hist_words = (hist_first_row * 4, nr * 256 * ntiles * 4)
    hist_defs = {**key_defs, "ITEMS": ITEMS, "SRC_KEYS": "false" if first else "true", "SRC_LOADER": loader}
    # source chunks: (tile0, ntd); destination chunks: (lo, hi) element ranges of the unit
    if ct is None:
        src_chunks = [(0, ntiles)]
        dst_chunks = [(0, nr * n)]
    else:
        src_chunks = [(t0, min(ct, ntiles - t0)) for t0 in range(0, ntiles, ct)]
        dst_chunks = [(lo, min(lo + ct * tile, n)) for lo in range(0, n, ct * tile)]

    def src_regions(t0: int, ntd: int, word: int, vword: int) -> tuple[Region, Region]:
        start = t0 * tile
        count = (nr - 1) * src_ld + min(n, (t0 + ntd) * tile) - start
        sreg = Region(src, (r0 * src_ld + start) * src_size, count * src_size, src_size, 0, word, -start)
        if sval is None:  # (its first element word stays 0)
            return sreg, Region(-1, 0, 0, _DUMMY_BYTES, 0, 0, 0)
        return sreg, Region(sval, (r0 * n + start) * 4, count * 4, 4, 0, vword, -start)

    # 1. histograms
    pipe = ctx.pipeline("sort_hist", 2, hist_defs)
    for t0, ntd in src_chunks:
        sreg, _ = src_regions(t0, ntd, 5, 0)
        words = (nr, n, ntiles, t0, ntd, 0, src_ld, 0, shift)
        records.append((pipe, hist_defs, words, ctx.fold_grid(nr * ntd),
                        (sreg, Region(hist, *hist_words, 4, 0, 7, 0)), "sort_hist", _HIST_WORDS))
    # 2. scan of each row's 256 * ntiles counts
    records += scan
    # 3. scatter (the subgroup kernel where allowed, see the module docstring)
    arr, write = _write_out(dst_mode, kw, dst_mode == 0 and dval is not None,
                            job.out_dtype if dst_mode != 0 else "uint32")
    sg_rows = scatter_rows(backend, kw, carry_vals)
    defines = {
        **out_defs,
        "ITEMS": ITEMS,
        "SRC_KEYS": "false" if first else "true",
        "HAS_VALS": "true" if carry_vals else "false",
        "DST_ARRAY": arr,
        "SRC_LOADER": loader,
        "WRITE_OUT": write,
    }
    if sg_rows is None:
        kernel = "sort_scatter"  # the count matrix shares the tile's memory
        defines["SMEM"] = max(_tile_words(kw, carry_vals), 16 * WG + WG)
    else:
        kernel = "sort_scatter_sg"
        defines["SMEM"] = _tile_words(kw, carry_vals)
        defines["ROWS"] = sg_rows
    pipe = ctx.pipeline(kernel, 5, defines)
    for t0, ntd in src_chunks:
        sreg, vreg = src_regions(t0, ntd, 5, 7)
        for lo, hi in dst_chunks:
            dreg = Region(dst, (r0 * n + lo) * dst_size, (hi - lo) * dst_size, dst_size, 0, 10, -lo)
            if dst_mode == 0 and dval is not None:
                dvreg = Region(dval, (r0 * n + lo) * 4, (hi - lo) * 4, 4, 0, 11, -lo)
            else:  # the second dummy (its first element word stays 0)
                dvreg = Region(-1, 0, 0, 2 * _DUMMY_BYTES, 0, 0, 0)
            dlo, dhi = (0, _U32) if ct is None else (lo, hi)
            words = (nr, n, ntiles, t0, ntd, 0, src_ld, 0, 0, shift, 0, 0, dlo, dhi)
            records.append((pipe, defines, words, ctx.fold_grid(nr * ntd),
                            (sreg, vreg, Region(hist, *hist_words, 4, 0, 8, 0), dreg, dvreg), kernel, _SCATTER_WORDS))


_HIST_WORDS = struct.Struct("<9I")
_SCATTER_WORDS = struct.Struct("<14I")
