"""Blocked Householder QR of one matrix (geqrf, ``qr_blocked``): panels of ``NB`` columns on
one workgroup (``linalg_qr_panel.wgsl``), or from ``QR_STEP_MIN_ROWS`` rows a dispatch per
column over many workgroups (``linalg_qr_step.wgsl``), the block reflector's compact WY factor T
from the Gram matrix V^T V (gemm, then ``linalg_qr_tmat.wgsl``); per ``QR_OUTER`` columns (two
panels: the second updated by the first's reflectors, their factors joined by
``linalg_qr_tjoin.wgsl``) the trailing update ``C -= V (T^T (V^T C))`` as three gemms; Q
accumulated backwards from the identity with ``Q -= V (T (V^T Q))``. A repeated call structure
replays the dispatches its first call recorded (``captured.replayed``, knob ``linalg_replay``).
No wgpu here.
"""

from __future__ import annotations

from typing import Any

from . import captured, config, ops_gemm
from .errors import invalid_argument
from .factor_common import NB, PROGRAMS, bind, itemsize_of, panel_wg, replay_on
from .factor_gemm import gemm
from .linalg_scalar import scalar_defines

__all__ = ["QR_OUTER", "QR_STEP_MIN_ROWS", "qr_blocked"]

def qr_blocked(backend: Any, dtype: str, m: int, n: int, a: int, ld: int, q: int, q_ld: int, kq: int) -> None:
    """Householder QR of the m x n matrix at ``a`` in place (R on and above the diagonal, the
    reflectors below it), and Q (m x kq, kq = min(m, n) or m) at ``q``, which must hold the
    first kq columns of the identity on entry. Complex dtypes: zgeqrf's reflectors, the block
    reflector I - V T V^H (G = V^H V), C := C - V T^H V^H C, Q := Q - V T V^H Q.

    A repeated call structure replays the dispatches its first call recorded
    (``captured.replayed``, knob ``linalg_replay``)."""
    itemsize = itemsize_of(backend, dtype)
    k = min(m, n)
    if k < 1:
        return
    step_rows = _qr_step_rows()
    outer = _qr_outer()
    key = ("qr", dtype, m, n, ld, q_ld, kq, step_rows, outer, bool(config.value("linalg_qr_panel_fused")),
           bool(config.value("linalg_qr_step_unrolled")), int(config.value("linalg_qr_step_chunk")),
           *ops_gemm.plan_settings())
    operands = [("a", a, ((m - 1) * ld + n) * itemsize, itemsize), ("q", q, ((m - 1) * q_ld + kq) * itemsize, itemsize)]
    captured.replayed(backend, PROGRAMS, key, operands,
                      lambda: _qr_blocked(backend, dtype, m, n, a, ld, q, q_ld, kq, step_rows, outer), replay_on())


def _qr_step_rows() -> int:
    """The least panel height whose QR runs a dispatch per column over many workgroups:
    ``GPUTENSOR_LINALG_PANEL_ROWS`` where set, else ``GPUTENSOR_LINALG_QR_STEP_ROWS``, else
    ``QR_STEP_MIN_ROWS``."""
    return int(config.value("linalg_panel_rows")) or int(config.value("linalg_qr_step_rows")) or QR_STEP_MIN_ROWS


def _qr_blocked(backend: Any, dtype: str, m: int, n: int, a: int, ld: int, q: int, q_ld: int, kq: int,
                step_rows: int, outer: int) -> None:
    """``qr_blocked``'s dispatches, recorded one by one: panels of NB columns, the trailing
    matrix and Q updated once per ``outer`` (NB or QR_OUTER) columns. With QR_OUTER, the second
    panel of an outer block is first updated by the first one's reflectors (three thin gemms),
    and the two triangular factors are joined into one (``linalg_qr_tjoin.wgsl``) for the
    trailing update and Q's, which are then gemms of depth 64."""
    itemsize = itemsize_of(backend, dtype)
    sdef = scalar_defines(dtype)
    k = min(m, n)
    ctx = backend.context
    blocks = list(range(0, k, NB))
    outers = list(range(0, k, outer))
    joined = outer > NB
    wide = max(n, kq, 1)
    steps = _QRSteps(backend, dtype, m) if m > step_rows else None
    # (joined: V's entries above the second panel of an outer block stay zero)
    v = backend.alloc(m * k * itemsize, zero=joined)
    tb = backend.alloc(len(blocks) * NB * NB * itemsize, zero=False)
    g = backend.alloc(2 * NB * NB * itemsize, zero=False)
    w = backend.alloc(outer * wide * itemsize, zero=False)
    w2 = backend.alloc(outer * wide * itemsize, zero=False)
    tj = backend.alloc(len(outers) * outer * outer * itemsize, zero=False) if joined else None
    try:
        a_reg, a_first = bind(backend, a, (m - 1) * ld + n, itemsize)
        v_reg, v_first = bind(backend, v, m * k, itemsize)
        t_reg, t_first = bind(backend, tb, len(blocks) * NB * NB, itemsize)
        g_reg, g_first = bind(backend, g, 2 * NB * NB, itemsize)
        wg = panel_wg(ctx)
        fused = "true" if config.value("linalg_qr_panel_fused") else "false"

        def panel(bi: int, j0: int, jb: int, first: int) -> None:
            """Factor the panel of columns j0 .. j0 + jb (block bi) and make its T; ``first``: the
            first column of its outer block (the Gram matrix spans the block's columns)."""
            mp = m - j0
            t_off = bi * NB * NB
            if steps is not None and mp > step_rows:
                steps.panel(a_reg, a_first + j0 * ld + j0, ld, mp, jb, t_reg, t_first + t_off, v_reg,
                            v_first + j0 * k + j0, k)
            else:
                words = [a_first + j0 * ld + j0, ld, mp, jb, v_first + j0 * k + j0, k, t_first + t_off, 0]
                ctx.dispatch("linalg_qr_panel", words, [a_reg, v_reg, t_reg], (1, 1, 1), {**sdef, "WG": wg, "FUSED": fused})
            rows = j0 - first + jb  # G = V_block^H V_panel (the panel's rows only): its last jb rows are the panel's
            vb = v + (j0 * k + first) * itemsize
            vs = v + (j0 * k + j0) * itemsize
            gemm(backend, dtype, rows, jb, mp, 1.0, vb, (1, k), vs, (k, 1), 0.0, g, (jb, 1), conj_a=True)
            ctx.dispatch("linalg_qr_tmat", [jb, t_first + t_off, g_first + (rows - jb) * jb, 0], [t_reg, g_reg],
                         (1, 1, 1), sdef)

        def update(j0: int, kb: int, tm: int, t_ld: int, col: int, n2: int) -> None:
            """C := H^H C for the columns col .. col + n2 of rows j0.. by the block reflector of the
            kb columns from j0 (T at ``tm``, row stride t_ld)."""
            mp = m - j0
            vs = v + (j0 * k + j0) * itemsize
            c = a + (j0 * ld + col) * itemsize
            gemm(backend, dtype, kb, n2, mp, 1.0, vs, (1, k), c, (ld, 1), 0.0, w, (n2, 1), conj_a=True)
            gemm(backend, dtype, kb, n2, kb, 1.0, tm, (1, t_ld), w, (n2, 1), 0.0, w2, (n2, 1), conj_a=True)
            gemm(backend, dtype, mp, n2, kb, -1.0, vs, (k, 1), w2, (n2, 1), 1.0, c, (ld, 1))

        factors = []
        for oi, o0 in enumerate(outers):
            ob = min(outer, k - o0)
            bi = o0 // NB
            jb1 = min(NB, ob)
            panel(bi, o0, jb1, o0)
            tm, t_ld = tb + bi * NB * NB * itemsize, NB
            if ob > NB:
                jb2 = ob - NB
                update(o0, NB, tm, NB, o0 + NB, jb2)
                panel(bi + 1, o0 + NB, jb2, o0)
                tm, t_ld = tj + oi * outer * outer * itemsize, outer
                t_reg2, t2_first = bind(backend, tm, outer * outer, itemsize)
                words = [jb2, t_first + bi * NB * NB, t_first + (bi + 1) * NB * NB, g_first, t2_first, 0, 0, 0]
                ctx.dispatch("linalg_qr_tjoin", words, [t_reg, g_reg, t_reg2], (1, 1, 1), sdef)
            factors.append((o0, ob, tm, t_ld))
            n2 = n - o0 - ob
            if n2:
                update(o0, ob, tm, t_ld, o0 + ob, n2)
        for j0, ob, tm, t_ld in reversed(factors):
            mp = m - j0
            nq = kq - j0
            vs = v + (j0 * k + j0) * itemsize
            q2 = q + (j0 * q_ld + j0) * itemsize
            gemm(backend, dtype, ob, nq, mp, 1.0, vs, (1, k), q2, (q_ld, 1), 0.0, w, (nq, 1), conj_a=True)
            gemm(backend, dtype, ob, nq, ob, 1.0, tm, (t_ld, 1), w, (nq, 1), 0.0, w2, (nq, 1))
            gemm(backend, dtype, mp, nq, ob, -1.0, vs, (k, 1), w2, (nq, 1), 1.0, q2, (q_ld, 1))
    finally:
        for ptr in (v, tb, g, w, w2) + ((tj,) if tj is not None else ()):
            backend.free(ptr)
        if steps is not None:
            steps.free()


#: Columns per trailing update of ``qr_blocked`` (knob ``linalg_qr_outer``: 32 updates after
#: every panel): two panels, their block reflectors joined.
QR_OUTER = 64


def _qr_outer() -> int:
    """``qr_blocked``'s columns per trailing update: ``GPUTENSOR_LINALG_QR_OUTER`` (32 or 64) where
    set, else QR_OUTER. BackendError (invalid argument) for another value."""
    outer = int(config.value("linalg_qr_outer")) or QR_OUTER
    if outer not in (NB, 2 * NB):
        raise invalid_argument(f"GPUTENSOR_LINALG_QR_OUTER={outer} must be {NB} or {2 * NB}")
    return outer


#: Least panel height whose Householder QR runs a dispatch per column over many workgroups
#: (``linalg_qr_step.wgsl``) instead of one workgroup (``GPUTENSOR_LINALG_QR_STEP_ROWS``, or
#: ``GPUTENSOR_LINALG_PANEL_ROWS``, overrides it). The steps cost jb + 2 dispatches a panel,
#: about 9 us + 3 ns a row each in GPU time on the H200, the one workgroup's panel about 145 us
#: + 0.25 us a row (benchmarks/results/h200-2026-12-01[bc]-linalg*.log): the steps take less
#: GPU time from about 1,100 rows, once their host time is gone (a replayed program).
QR_STEP_MIN_ROWS = 1024
#: Panel rows per workgroup of ``linalg_qr_step`` (``GPUTENSOR_LINALG_QR_STEP_CHUNK`` overrides it).
QR_STEP_CHUNK = 64


def _qr_step_chunk() -> int:
    """Panel rows per workgroup of ``linalg_qr_step``: ``GPUTENSOR_LINALG_QR_STEP_CHUNK`` (32, 64
    or 128) where set, else QR_STEP_CHUNK. BackendError (invalid argument) for another value."""
    chunk = int(config.value("linalg_qr_step_chunk")) or QR_STEP_CHUNK
    if chunk not in (32, 64, 128):
        raise invalid_argument(f"GPUTENSOR_LINALG_QR_STEP_CHUNK={chunk} must be 32, 64 or 128")
    return chunk


class _QRSteps:
    """Scratch and dispatches of ``qr_blocked``'s panels over many workgroups: jb + 2 dispatches
    of ``linalg_qr_step.wgsl`` per panel (column sums of the next column in every step, reduced
    by every workgroup in the next), ping-ponging two buffers of partial sums."""

    def __init__(self, backend: Any, dtype: str, m: int) -> None:
        self.backend = backend
        ctx = backend.context
        itemsize = itemsize_of(backend, dtype)
        wg = 64 if ctx.is_software else 256
        fast = "true" if config.value("linalg_qr_step_unrolled") else "false"
        # (U: the rows of a row slice in a workgroup's chunk)
        self.chunk = chunk = _qr_step_chunk()
        self.defines = {**scalar_defines(dtype), "WG": wg, "CH": chunk, "FAST": fast, "U": max(1, chunk * NB // wg)}
        self.most = -(-m // chunk)
        self.bufs = [backend.alloc(self.most * NB * itemsize, zero=False) for _ in range(2)]
        self.rr = backend.alloc(NB * NB * itemsize, zero=False)
        self.binds = [bind(backend, b, self.most * NB, itemsize) for b in self.bufs]
        self.r_bind = bind(backend, self.rr, NB * NB, itemsize)

    def panel(self, a_reg: Any, a_first: int, ld: int, mp: int, jb: int, t_reg: Any, t_first: int, v_reg: Any,
              v_first: int, v_ld: int) -> None:
        """Householder QR of the mp x jb panel at element ``a_first``, as ``linalg_qr_panel``."""
        ctx = self.backend.context
        parts = -(-mp // self.chunk)
        r_reg, r_first = self.r_bind
        for s in range(jb + 2):
            (pin_reg, pin_first), (pout_reg, pout_first) = self.binds[(s + 1) % 2], self.binds[s % 2]
            words = [a_first, ld, mp, jb, s, parts, pin_first, pout_first, t_first, r_first, v_first, v_ld]
            ctx.dispatch("linalg_qr_step", words, [a_reg, pin_reg, pout_reg, t_reg, r_reg, v_reg], (parts, 1, 1),
                         self.defines)

    def free(self) -> None:
        for ptr in (*self.bufs, self.rr):
            self.backend.free(ptr)
