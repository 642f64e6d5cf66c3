"""Inclusive scans (cumulative sum / product) along the rows of a strided matrix, in place.

``scan(backend, op, ptr, dtype, rows, n, ld)`` replaces every row ``x[r, 0:n]`` (row ``r`` at
``ptr + r * ld * itemsize``, elements contiguous within a row) by its inclusive scan under ``op``
('sum' or 'prod'). The dtype is a 32- or 64-bit type (float32, float64, int32, uint32, int64,
uint64): the namespace accumulates 8/16-bit types and float16 in those. Integers wrap as in NumPy.

Kernel (``_wgsl/scan.wgsl``): one workgroup of ``WG`` = 256 invocations scans one BLOCK = 1024
elements of a row in workgroup memory (coalesced loads, 4 consecutive elements serially per
invocation, a Hillis-Steele scan of the 256 partials, coalesced stores) and writes the block's
total to an auxiliary ``rows x nblocks`` array. The totals are scanned by the same procedure
(recursively: depth ``log_1024(n)``), then a second phase combines every block ``b >= 1`` with the
scanned total of block ``b - 1``. Two passes over the data (read+write, then read+write of all but
the first block); NumPy's sequential order is not kept, so float results differ by rounding
(blockwise, i.e. more accurate than a serial sum for long rows).

Operands larger than one binding window: a dispatch covers as many whole rows as fit one window;
when one row does not fit, it covers as many whole blocks of that row as fit (the blocks are
independent in both phases), so any size that fits the allocation works.
"""

from __future__ import annotations

from typing import Any

from .errors import invalid_argument, unsupported
from .wgsl_types import literal, storage_type

KERNEL = "scan"
WG = 256
ITEMS = 4
BLOCK = WG * ITEMS

#: Scan operators: name -> (WGSL combine expression, identity).
OPS = {"sum": ("a + b", 0), "prod": ("a * b", 1)}

#: dtypes a scan runs in (stored unpacked).
DTYPES = ("float32", "float64", "int32", "uint32", "int64", "uint64")


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise invalid_argument(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


def _defines(op: str, compute: str, phase: int, write_totals: bool) -> dict[str, object]:
    expr, ident = OPS[op]
    return {
        "ENABLE": "",
        "T": compute,
        "PHASE": phase,
        "WRITE_TOTALS": "true" if write_totals else "false",
        "WG": WG,
        "ITEMS": ITEMS,
        "IDENTITY": literal(ident, compute),
        "COMBINE": expr,
    }


def _launches(backend: Any, rows: int, n: int, ld: int, itemsize: int, first_block: int):
    """Yield ``(r0, nr, b0, nbk)`` dispatch units covering blocks ``[first_block, nblocks)`` of
    every row, each unit's data span fitting one binding window."""
    nblocks = -(-n // BLOCK)
    if first_block >= nblocks:
        return
    limit = backend.max_window_bytes() // itemsize  # elements per window
    row_elems = n - first_block * BLOCK
    if row_elems <= limit:
        nr = 1 if rows == 1 else max(1, min(rows, (limit - row_elems) // ld + 1))
        # keep the grid within fold_grid's reach
        max_groups = 65535 * 65535
        nr = max(1, min(nr, max_groups // max(1, nblocks - first_block)))
        for r0 in range(0, rows, nr):
            yield r0, min(nr, rows - r0), first_block, nblocks - first_block
    else:
        per = max(1, limit // BLOCK)
        for r0 in range(rows):
            for b0 in range(first_block, nblocks, per):
                yield r0, 1, b0, min(per, nblocks - b0)


def _scan_rows(backend: Any, op: str, ptr: int, dtype: str, rows: int, n: int, ld: int) -> None:
    st = storage_type(dtype)
    itemsize = st.itemsize
    ctx = backend.context
    nblocks = -(-n // BLOCK)
    aux = None
    if nblocks > 1:
        aux = backend.alloc(rows * nblocks * itemsize)
    try:
        # phase 0: scan blocks (+ totals)
        for r0, nr, b0, nbk in _launches(backend, rows, n, ld, itemsize, 0):
            start = ptr + (r0 * ld + b0 * BLOCK) * itemsize
            span = (nr - 1) * ld + min(n - b0 * BLOCK, nbk * BLOCK)
            win = backend.window(start, span * itemsize, itemsize)
            if aux is not None:
                awin = backend.window(aux + (r0 * nblocks + b0) * itemsize,
                                      ((nr - 1) * nblocks + nbk) * itemsize, itemsize)
                abind, afirst = awin.binding, awin.first
            else:
                abind, afirst = win.binding, 0
            params = [nr, n, ld, b0, nbk, win.first, afirst, nblocks]
            ctx.dispatch(KERNEL, params, [win.binding, abind], ctx.fold_grid(nr * nbk),
                         _defines(op, st.compute, 0, aux is not None))
        if aux is None:
            return
        # scan the block totals, then carry them into blocks 1..
        _scan_rows(backend, op, aux, dtype, rows, nblocks, nblocks)
        for r0, nr, b0, nbk in _launches(backend, rows, n, ld, itemsize, 1):
            start = ptr + (r0 * ld + b0 * BLOCK) * itemsize
            span = (nr - 1) * ld + min(n - b0 * BLOCK, nbk * BLOCK)
            win = backend.window(start, span * itemsize, itemsize)
            awin = backend.window(aux + (r0 * nblocks + b0 - 1) * itemsize,
                                  ((nr - 1) * nblocks + nbk) * itemsize, itemsize)
            params = [nr, n, ld, b0, nbk, win.first, awin.first, nblocks]
            ctx.dispatch(KERNEL, params, [win.binding, awin.binding], ctx.fold_grid(nr * nbk),
                         _defines(op, st.compute, 1, False))
    finally:
        if aux is not None:
            backend.free(aux)


def scan(backend: Any, op: str, ptr: int, dtype: str, rows: int, n: int, ld: int | None = None) -> None:
    """Replace each row ``x[r, :n]`` (at ``ptr + r*ld*itemsize``) by its inclusive scan, in place.

    ``op`` is 'sum' or 'prod'; ``dtype`` one of :data:`DTYPES`; ``ld`` (row stride in elements,
    default ``n``) must be >= n. Raises BackendError: invalid argument for a bad op, dtype, size,
    leading dimension or pointer range (checked before anything is recorded); unsupported when
    the adapter lacks the dtype's feature.
    """
    if op not in OPS:
        raise invalid_argument(f"scan op must be one of {sorted(OPS)}, not {op!r}")
    if dtype not in DTYPES:
        raise invalid_argument(f"scan dtype must be one of {DTYPES}, not {dtype!r}")
    st = storage_type(dtype)
    if not backend.supports(st.feature):
        raise unsupported(f"{dtype} needs the adapter feature {st.feature!r}, which this adapter lacks")
    rows = _check_int("rows", rows, 0)
    n = _check_int("n", n, 0)
    ld = n if ld is None else _check_int("ld", ld, 0)
    if ld < n:
        raise invalid_argument(f"ld = {ld} must be >= n = {n}")
    if rows == 0 or n == 0:
        return
    span = ((rows - 1) * ld + n) * st.itemsize
    _, offset = backend.resolve(ptr, span)
    if offset % st.itemsize:
        raise invalid_argument(f"pointer offset {offset} is not a multiple of the item size {st.itemsize}")
    _scan_rows(backend, op, ptr, dtype, rows, n, ld)
