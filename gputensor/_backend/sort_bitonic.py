"""The bitonic sort of short rows (``n <= BITONIC_C``): one kernel, ``BITONIC_C`` slots per
workgroup, several short rows per workgroup, compare-exchange on (key, column): stable."""

from __future__ import annotations

import struct
from typing import Any

from .launch import LaunchProgram, Region
from .sort_common import _DUMMY_BYTES, _U32, _dummy_placeholder, window_limit
from .sort_job import _Job, _launch
from .sort_key_code import _key_defines, _write_out, bits_loader
from .wgsl_types import storage_type

__all__ = ["BITONIC_C"]

#: Slots of the bitonic kernel's workgroup: rows up to this length are sorted in one kernel.
BITONIC_C = 2048


def _bitonic(backend: Any, job: _Job) -> None:
    """Record the bitonic sort of ``job`` (rows of at most ``BITONIC_C`` elements; arguments and
    pointer ranges already checked): its ``LaunchProgram`` (planned once per job structure and
    kept per backend) replayed, or recorded through ``WgpuContext.dispatch`` where a wrapper
    (the profiler's, a test spy) watches it."""
    limit = window_limit(backend)
    key = ("bitonic", job.dtype, job.rows, job.n, job.ld, job.mode, job.descending, job.out_mode,
           job.out_dtype, job.vals is not None, limit, BITONIC_C)
    _launch(backend, job, key, lambda: _bitonic_program(backend.context, job, limit), _dummy_placeholder)


def _bitonic_program(ctx: Any, job: _Job, limit: int) -> LaunchProgram:
    """The dispatches of ``_bitonic`` for the structure of ``job``: operands 0 (src), 1 (out)
    and 2 (vals, or a dummy binding), in units of whole workgroups of rows that fit ``limit``."""
    st = storage_type(job.dtype)
    np2 = 1 << max(0, (job.n - 1).bit_length())
    lnp = np2.bit_length() - 1
    rpt = BITONIC_C // np2
    out_size = job.out_itemsize()
    per_row = max(job.ld * st.itemsize, job.n * out_size, job.n * 4 if job.has_vals else 0)
    nr = max(1, limit // per_row)
    nr = max(rpt, nr // rpt * rpt)  # whole workgroups per unit
    arr, write = _write_out(job.out_mode, job.kw, job.has_vals, job.out_dtype)
    defines = {
        **_key_defines(job.dtype, job.mode, job.descending),
        "C": BITONIC_C,
        "HAS_VALS": "true" if job.has_vals else "false",
        "OUT_MODE": job.out_mode,
        "DST_ARRAY": arr,
        "SRC_LOADER": bits_loader("src_bits", "src", job.dtype),
        "WRITE_OUT": write,
    }
    pipe = ctx.pipeline("sort_bitonic", 3, defines)
    records = []
    for r0 in range(0, job.rows, nr):
        rows = min(nr, job.rows - r0)
        src = Region(0, r0 * job.ld * st.itemsize, ((rows - 1) * job.ld + job.n) * st.itemsize, st.itemsize,
                     0, 4, 0)
        dst = Region(1, r0 * job.n * out_size, rows * job.n * out_size, out_size, 0, 6, 0)
        if job.out_mode == 0 and job.vals is not None:
            vals = Region(2, r0 * job.n * 4, rows * job.n * 4, 4, 0, 7, 0)
        else:  # the dummy binding (its first element word stays 0)
            vals = Region(-1, 0, 0, _DUMMY_BYTES, 0, 0, 0)
        words = (rows, job.n, np2, lnp, 0, job.ld, 0, 0, 0, _U32)
        records.append((pipe, defines, words, ctx.fold_grid(-(-rows // rpt)), (src, dst, vals)))
    return LaunchProgram.compile("sort_bitonic", _BITONIC_WORDS, ctx, records, ())


_BITONIC_WORDS = struct.Struct("<10I")
