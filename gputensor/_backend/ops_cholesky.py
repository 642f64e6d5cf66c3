"""Blocked right-looking Cholesky of stacks of matrices (``cholesky_blocked``), every step one
dispatch for the whole stack, the trailing updates on the gemm kernels (``factor_gemm``, in
place: the updated block and the factor blocks are disjoint regions of one buffer).

Blocks of ``CHOLESKY_BLOCK`` columns: one workgroup factors the diagonal block in registers and
inverts it (``linalg_chol_rows.wgsl``), the panel below is the gemm P L^-T (into scratch, copied back by the
next diagonal block's dispatch, whose other workgroups also zero the block row right of the
previous diagonal block), the trailing matrix's lower part the gemm C -= P P^T over the tiles
that reach the lower triangle (``linalg_chol_syrk``; complex dtypes, or with it off: two column
stripes from 512 columns on, or ``linalg_chol_split``'s recursive split into batched gemms).
Real dtypes take the trailing update once per block column of ``CHOLESKY_OUTER`` columns (knob
``linalg_chol_outer``): the diagonal blocks inside it update only its columns, then one gemm of
that depth updates the trailing matrix. A repeated call structure replays all of it as one
``LaunchProgram``. No wgpu here.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from . import config, ops_gemm
from .factor_common import block_width, bind, component_of, itemsize_of
from .factor_gemm import blas_form, gemm, triangle
from .launch import LaunchProgram, Region
from .linalg_scalar import scalar_defines
from .plan_cache import PlanCache
from .validate import check_pointer

__all__ = ["CHOLESKY_BLOCK", "CHOLESKY_OUTER", "cholesky_blocked"]

def _stripes(count: int) -> list[tuple[int, int]]:
    """Column stripes of a lower-triangle update: two halves from 512 columns (each stripe is one
    gemm call; more of them would save flops but cost host time per call)."""
    parts = 2 if count >= 512 else 1
    step = -(-count // parts)
    return [(s, min(step, count - s)) for s in range(0, count, step)]


def _lower_update(rest: int, ld: int, jb: int, batch: int, split: int) -> list[tuple[int, ...]]:
    """The gemms of the lower part of a rest x rest trailing update C -= W W^H (W: rest x jb,
    row-major; C: leading dimension ``ld``), each (m, nn, W row of the left factor, W row of the
    right factor (times jb: element offsets in W), C's element offset, count, (W's and C's
    offset from one block to the next)): C[r:r+m, q:q+nn] -= W[r:r+m] W[q:q+nn]^H.

    ``split`` 0 (or a stack of matrices): ``_stripes``. Otherwise a recursive split into 2^L
    equal diagonal blocks of order h = rest / 2^L >= max(``split``, 16) (the largest such L;
    rest odd or below twice that: ``_stripes``): per level l < L the 2^l off-diagonal blocks of
    order h 2^(L-l-1) below the level's diagonal as one batched gemm, then the 2^L diagonal
    blocks as one batched gemm: L + 1 gemms computing 1/2 + 1/2^(L+1) of the square (two
    stripes: 3/4)."""
    levels = 0
    split = max(split, 16) if split else 0  # (thinner gemms take the general-stride kernel, which keeps no plan)
    while split and batch == 1 and rest % (2 << levels) == 0 and rest >> (levels + 1) >= split:
        levels += 1
    if not levels:
        return [(rest - s0, sb, s0 * jb, s0 * jb, s0 * (ld + 1), 1, (0, 0)) for s0, sb in _stripes(rest)]
    h = rest >> levels
    out = []
    for lv in range(levels):
        size = h << (levels - lv - 1)
        out.append((size, size, size * jb, 0, size * ld, 1 << lv, (2 * size * jb, 2 * size * (ld + 1))))
    out.append((h, h, 0, 0, 0, 1 << levels, (h * jb, h * (ld + 1))))
    return out


#: Default block width of ``cholesky_blocked``.
CHOLESKY_BLOCK = 64


def _block_threads(ctx: Any, nb: int, itemsize: int = 4) -> int:
    """Invocations per dimension of the diagonal-block kernel of width ``nb`` (``nb`` / it rows
    and columns per invocation): on GPUs that allow 1024 invocations 32 for every width from 32
    of elements up to 8 bytes (more subgroups hide each step's latency, each with fewer
    elements; complex128's elements would not fit the registers an invocation of 1024 gets) and
    for 128; else 16. The knob ``linalg_chol_threads`` 16 takes 16 everywhere."""
    big = not ctx.is_software and int(ctx.limits.get("max-compute-invocations-per-workgroup", 256)) >= 1024
    if int(config.value("linalg_chol_threads")) == 16:
        return 16
    return 32 if big and nb >= 32 and (nb == 128 or itemsize <= 8) else 16


def _chol_syrk(backend: Any, dtype: str) -> bool:
    """Whether ``cholesky_blocked``'s trailing updates are one gemm each over the tiles that
    reach the lower triangle (knob ``linalg_chol_syrk``; real dtypes, whose gemms take a BLAS
    layout), else column stripes or the recursive split (``_lower_update``)."""
    return bool(config.value("linalg_chol_syrk")) and not component_of(backend, dtype)


#: Default columns per trailing update of ``cholesky_blocked`` (real dtypes): several diagonal
#: blocks factor a panel of this width, updating only the panel's columns, before one gemm of
#: that depth updates the trailing matrix's lower part (knob ``linalg_chol_outer``).
CHOLESKY_OUTER = 256


def _chol_outer(backend: Any, dtype: str, nb: int) -> int:
    """Columns per trailing update of ``cholesky_blocked``: the knob ``linalg_chol_outer`` (or
    CHOLESKY_OUTER) rounded down to a multiple of the block width ``nb`` and at least ``nb``;
    ``nb`` (one update per diagonal block) for complex dtypes or with ``linalg_chol_syrk`` off."""
    if not _chol_syrk(backend, dtype):
        return nb
    outer = int(config.value("linalg_chol_outer")) or CHOLESKY_OUTER
    return max(1, outer // nb) * nb


def _chol_steps(backend: Any, dtype: str, n: int, a: int, ld: int, flag: int, batch: int, bs: int, nb: int,
                xs: int, ws: int, outer: int) -> Any:
    """The steps of ``cholesky_blocked`` in order, each ``("kernel", name, words, bindings, grid,
    defines)`` (bindings: (pointer, elements, itemsize, the word that takes the window index of
    the pointer's element plus ``extra`` or 0, extra)) or ``("gemm", args of _gemm[, lower])``, over the
    matrices at ``a``, the flag and the scratch ``xs`` (the diagonal blocks' inverses) and ``ws``
    (panels). Each diagonal block's dispatch also copies the previous step's panel from ``ws``
    into A (and zeros its mirror above the diagonal).

    ``outer`` > ``nb`` (a multiple of it): the columns are taken ``outer`` at a time; inside
    such a block column each diagonal block's panel updates only the block column's later
    columns (one gemm over all rows below), and after its last diagonal block that panel is
    copied into A alone (the same kernel with no block to factor) and the whole trailing
    matrix's lower part takes one gemm of depth ``outer`` from A. The strict upper triangle
    those rectangular updates write lies in block rows whose mirror a later copy clears."""
    itemsize = itemsize_of(backend, dtype)
    split = int(config.value("linalg_chol_split"))
    syrk = _chol_syrk(backend, dtype)
    kernel = "linalg_chol_rows"
    th = _block_threads(backend.context, nb, itemsize)
    defines = {**scalar_defines(dtype), "NB": nb, "TH": th, "RR": nb // th}
    chunk = th * th * 4  # panel elements per copying workgroup (CH of linalg_chol_finish.wgsl)
    wrest = max(1, n - min(nb, n)) * nb
    prev = None  # (rows, cols) of the panel waiting in ws, its diagonal block's pointer

    def diagonal(j0: int, jb: int, rest: int) -> Any:
        """The dispatch that factors the jb x jb diagonal block at (j0, j0) (jb 0: none) and
        copies the panel waiting in ws."""
        d = a + (j0 * ld + j0) * itemsize
        c_rows, c_cols, back = (prev[0], prev[1], prev[1] * (ld + 1)) if prev else (0, 0, 0)
        top = d - back * itemsize  # the previous diagonal block's element (0, 0), or d
        # elements from top: through this diagonal block and the previous panel's last row
        span = (batch - 1) * bs + max(back + (jb - 1) * ld + jb if jb else 1,
                                      (c_cols + c_rows - 1) * ld + c_cols if prev else 0)
        copy_groups = -(-c_rows * c_cols // chunk)
        return ("kernel", kernel,
                [jb, 0, ld, 0, bs, int(rest > 0 and jb > 0), c_rows, c_cols, 0, wrest, back, 0],
                [(top, span, itemsize, 1, back), (xs, batch * nb * nb, itemsize, 3, 0), (flag, 1, 4, 0, 0),
                 (ws, batch * wrest, itemsize, 8, 0)], (batch, 1 + copy_groups, 1), defines)

    for o0 in range(0, n, outer):
        o_end = min(n, o0 + outer)
        for j0 in range(o0, o_end, nb):
            jb = min(nb, o_end - j0)
            d = a + (j0 * ld + j0) * itemsize
            rest = n - j0 - jb
            yield diagonal(j0, jb, rest)
            prev = None
            if not rest:
                continue
            p = d + jb * ld * itemsize
            # W := P L^-H
            yield ("gemm", (rest, jb, jb, 1.0, p, (ld, 1), xs, (1, nb), 0.0, ws, (jb, 1), batch,
                            (bs, nb * nb, wrest)))
            prev = (rest, jb)
            c = a + ((j0 + jb) * ld + j0 + jb) * itemsize
            if outer > nb:
                cols = o_end - j0 - jb
                if cols:  # the block column's later columns: C[:, :cols] -= W W[:cols]^H
                    yield ("gemm", (rest, cols, jb, -1.0, ws, (jb, 1), ws, (1, jb), 1.0, c, (ld, 1), batch,
                                    (wrest, wrest, bs)))
                    continue
                # the block column's last panel into A, then C -= L21 L21^H from A, depth o_end - o0
                yield diagonal(j0 + jb, 0, rest)
                prev = None
                left = a + (o_end * ld + o0) * itemsize
                yield ("gemm", (rest, rest, o_end - o0, -1.0, left, (ld, 1), left, (1, ld), 1.0, c, (ld, 1), batch,
                                (bs, bs, bs)), True)
                continue
            if syrk:  # lower part: C -= W W^H on the tiles that reach C's lower triangle
                yield ("gemm", (rest, rest, jb, -1.0, ws, (jb, 1), ws, (1, jb), 1.0, c, (ld, 1), batch,
                                (wrest, wrest, bs)), True)
                continue
            for m, nn, w_off, w2_off, c_off, count, (qw, qc) in _lower_update(rest, ld, jb, batch, split):
                # C[r:r+m, q:q+nn] -= W[r:r+m] W[q:q+nn]^H for count such blocks, qw / qc apart
                yield ("gemm", (m, nn, jb, -1.0, ws + w_off * itemsize, (jb, 1), ws + w2_off * itemsize, (1, jb),
                                1.0, c + c_off * itemsize, (ld, 1), count * batch,
                                (qw, qw, qc) if count > 1 else (wrest, wrest, bs)))


def _gemm_plan(backend: Any, dtype: str, args: tuple[Any, ...], lower: bool) -> tuple[bool, Any] | None:
    """(whether A and B trade places, the kept ``ops_gemm.planned_call``) of a real gemm step's
    arguments, or None when it keeps no plan (split-K, a general-stride gemm, k = 0)."""
    m, nn, k, alpha, a, sa, b, sb, beta, c, sc, batch, bs = args
    form = blas_form(m, nn, k, sa, sb, sc, batch, bs) if m and nn and k else None
    if form is None:
        return None
    swap, (ta, tb, mm, n2, kk, lda, qa, ldb, qb, ldc, qc, count) = form
    call = ops_gemm.planned_call(backend, ta, tb, mm, n2, kk, float(alpha), lda, qa, ldb, qb, float(beta), ldc, qc,
                                 count, dtype=dtype, triangle=triangle(swap) if lower else 0)
    return None if call is None or not call.reads else (swap, call)


def _run_steps(backend: Any, dtype: str, steps: Any, plans: list[Any] | None = None) -> None:
    """Record ``_chol_steps``' steps through ``WgpuContext.dispatch`` and ``_gemm``; with a list
    ``plans``, append each gemm step's ``_gemm_plan`` right after its call (a factorization has
    more gemm shapes than the gemm plan cache keeps, so they are taken before later steps evict
    them)."""
    ctx = backend.context
    for step in steps:
        if step[0] == "gemm":
            lower = len(step) > 2 and step[2]
            gemm(backend, dtype, *step[1], conj_b=True, lower=lower)
            if plans is not None:
                plans.append(_gemm_plan(backend, dtype, step[1], lower))
            continue
        _, name, words, bindings, grid, defines = step
        regions = []
        for ptr, elements, size, word, extra in bindings:
            reg, first = bind(backend, ptr, elements, size)
            regions.append(reg)
            if word:
                words[word] = first + extra
        ctx.dispatch(name, words, regions, grid, defines)


#: Parameter words of ``linalg_chol_rows``.
_CHOL_WORDS = struct.Struct("<12I")


def _chol_program(backend: Any, dtype: str, steps: Any, bases: list[tuple[int, int]],
                  plans: list[Any]) -> LaunchProgram | None:
    """``_chol_steps``' steps as one ``LaunchProgram`` over the operands ``bases`` ((pointer, bytes)
    of each: the matrices, the flag, then the scratch ``xs`` and ``ws``, allocated by the program),
    the gemms taken from the plans their first calls kept (``plans``, from ``_run_steps``, one
    per gemm step in order); None when a gemm has no such plan (split-K) or does not run as one
    (a general-stride or complex gemm)."""
    ctx = backend.context
    gemm_plans = iter(plans)

    def where(ptr: int) -> tuple[int, int]:
        for index, (start, nbytes) in enumerate(bases):
            if start <= ptr < start + nbytes:
                return index, ptr - start
        raise ValueError("a pointer outside the planned operands")

    records: list[Any] = []
    for step in steps:
        if step[0] == "kernel":
            _, name, words, bindings, grid, defines = step
            if 0 in grid:
                continue
            regions = []
            for ptr, elements, size, word, extra in bindings:
                base, off = where(ptr)
                regions.append(Region(base, off, max(1, elements) * size, size, 0, word, extra))
            pipe = ctx.pipeline(name, len(regions), defines)
            records.append((pipe, defines, words, grid, regions, name, _CHOL_WORDS))
            continue
        a, b, c = step[1][4], step[1][6], step[1][9]
        kept = next(gemm_plans, None)
        if kept is None:
            return None
        swap, call = kept
        operands = [where(p) for p in ((b, a, c) if swap else (a, b, c))]
        program = call.program
        for st in program.steps:
            if st.placeholder:
                return None
            patches: dict[int, list[tuple[int, int]]] = {}
            for word, slot, extra in st.patches:
                patches.setdefault(slot, []).append((word, extra))
            regions = []
            for slot_id in st.slots:
                slot = program.slots[slot_id]
                base, off = operands[slot.base]
                queue = patches.get(slot_id)
                word, extra = queue.pop(0) if queue else (0, 0)
                regions.append(Region(base, off + slot.offset, slot.nbytes, slot.itemsize, slot.vector, word, extra))
            records.append((st.pipeline, st.defines, st.words, st.grid, regions, st.kernel, st.pack.__self__))
    aux = [(bases[2][1], 0), (bases[3][1], 0)]
    return LaunchProgram.compile("linalg_chol_rows", _CHOL_WORDS, ctx, records, aux)


@dataclass(frozen=True, eq=False)
class _CholCall:
    """A planned ``cholesky_blocked`` call on the context ``ctx``: its program and the bytes of
    the matrices' touched span."""

    ctx: Any
    program: LaunchProgram
    span: int
    itemsize: int

    def launch(self, backend: Any, a: int, flag: int) -> bool:
        """Check the pointers and replay the program; False when it does not apply (nothing
        recorded then)."""
        a_alloc, a_off = check_pointer(backend, "a", a, self.span, self.itemsize)
        f_alloc, f_off = check_pointer(backend, "flag", flag, 4, 4)
        bases = [(a_alloc.buffer, a_alloc.buffer.size, a_alloc.nbytes, a_off, a, a_alloc.whole),
                 (f_alloc.buffer, f_alloc.buffer.size, f_alloc.nbytes, f_off, flag, f_alloc.whole)]
        return self.program.run(backend, self.ctx, bases, _no_placeholder)


def _no_placeholder(backend: Any, nbytes: int, *bindings: Any) -> Any:  # pragma: no cover
    raise AssertionError("the Cholesky programs bind no placeholders")


#: Planned ``cholesky_blocked`` calls per backend (False: a call structure that has no program).
_CHOL_PLANS = PlanCache(64)


def cholesky_blocked(backend: Any, dtype: str, n: int, a: int, ld: int, flag: int, batch: int = 1,
                     bs: int = 0) -> None:
    """Lower Cholesky factors of the ``batch`` n x n matrices at ``a`` (matrix q ``q * bs``
    elements on) in place (right-looking, blocks of ``block_width(CHOLESKY_BLOCK)`` columns),
    zeros in the strict upper triangles. Each step is one dispatch for
    the whole stack: one workgroup per matrix factors the diagonal block and inverts it
    (``linalg_chol_rows.wgsl``), the panel below is the gemm P L^-H (into scratch, then copied back by the next step's
    dispatch of that kernel, whose other workgroups also
    zero the block row right of the previous diagonal block),
    the trailing lower part the gemm C -= P P^H (real dtypes: once per block column of
    ``_chol_outer`` columns, the panels inside it updating only its columns; see
    ``_chol_steps``). ``flag`` as in ``small``. Complex matrices are Hermitian (A = L L^H).

    The first call of a real dtype's call structure (everything but the pointers) records its
    steps one by one and then keeps them as one ``LaunchProgram`` (its gemms from their kept
    plans); later calls check the two pointers and replay it."""
    itemsize = itemsize_of(backend, dtype)
    ctx = backend.context
    if batch < 1:
        return
    chunk = ctx.max_workgroups_per_dim
    if batch > chunk:  # (a grid dimension's worth of matrices at a time)
        for q0 in range(0, batch, chunk):
            cholesky_blocked(backend, dtype, n, a + q0 * bs * itemsize, ld, flag, min(chunk, batch - q0), bs)
        return
    nb = block_width(CHOLESKY_BLOCK)
    span = ((batch - 1) * bs + (n - 1) * ld + n) * itemsize
    outer = _chol_outer(backend, dtype, nb)
    key = (dtype, n, ld, batch, bs, nb, int(config.value("linalg_chol_split")),
           _chol_syrk(backend, dtype), outer, int(config.value("linalg_chol_threads")), *ops_gemm.plan_settings())
    plans = _CHOL_PLANS.of(backend)
    plan = plans.get(key)
    spied = ctx.__dict__.get("dispatch") is not None  # (a wrapped dispatch sees every step)
    if plan and plan.ctx is ctx and plan.program.valid_for(ctx) and not spied:
        if plan.launch(backend, a, flag):
            return
    check_pointer(backend, "a", a, span, itemsize)
    wrest = max(1, n - min(nb, n)) * nb  # scratch elements per matrix for the panel
    xs_bytes, ws_bytes = batch * nb * nb * itemsize, batch * wrest * itemsize
    xs = backend.alloc(xs_bytes, zero=False)
    ws = backend.alloc(ws_bytes, zero=False)
    try:
        planning = plan is None and not component_of(backend, dtype)
        gemm_plans: list[Any] | None = [] if planning else None
        _run_steps(backend, dtype, _chol_steps(backend, dtype, n, a, ld, flag, batch, bs, nb, xs, ws, outer), gemm_plans)
        if gemm_plans is not None:
            program = _chol_program(backend, dtype, _chol_steps(backend, dtype, n, a, ld, flag, batch, bs, nb, xs, ws, outer),
                                    [(a, span), (flag, 4), (xs, xs_bytes), (ws, ws_bytes)], gemm_plans)
            _CHOL_PLANS.keep(plans, key, _CholCall(ctx, program, span, itemsize) if program is not None else False)
    finally:
        backend.free(xs)
        backend.free(ws)
