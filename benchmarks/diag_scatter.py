"""Diagnostic (not a benchmark): what the radix sort's kernels spend their GPU time on.

``python3 -m benchmarks.diag_scatter [--small]`` sorts 16M float32 (``--small``: 64K) under
``gt.profile()`` with the scatter and histogram kernels altered one way at a time -- the result
is then wrong, only the time matters -- and prints the GPU time per kernel of each variant:
the destination write made coalesced, the per-tile global starts not read, the digit ballots
dropped, the tile stored in workgroup memory in order instead of ranked, the per-item loops
left as loops (not expanded by ``//#unroll``), the histogram's scattered count writes made contiguous.
"""

from __future__ import annotations

import re
import sys

import numpy as np

SMALL = "--small" in sys.argv

# (label, kernel, text in the rendered source, replacement)
VARIANTS = [
    ("as shipped", None, None, None),
    ("scatter: coalesced write", "sort_scatter", "let e = tl.r * params.n + gstart[d] + p - lstart[d];",
     "let e = tl.r * params.n + tl.start + p;"),
    ("scatter: no gstart read", "sort_scatter",
     "gs = hist[params.hist_base + tl.r * 256u * params.ntiles + flat - 1u];", "gs = flat;"),
    ("scatter: no ballots", "sort_scatter",
     "peers &= subgroupBallot(one) ^ vec4<u32>(select(0xFFFFFFFFu, 0u, one));", "peers &= vec4<u32>(d | 1u);"),
    ("scatter: tile stored in order", "sort_scatter", "put_elem(p, keys[j], vals[j]);",
     "put_elem(lid * ITEMS + j + (p & 0u), keys[j], vals[j]);"),
    ("sort kernels: loops not unrolled", "sort_", "NO_UNROLL", None),
    ("hist: contiguous count write", "sort_hist",
     "hist[params.hist_base + r * 256u * params.ntiles + lid * params.ntiles + t]",
     "hist[params.hist_base + r * 256u * params.ntiles + t * 256u + lid]"),
]


def main() -> int:
    import gputensor as gt
    from gputensor._backend import get_backend, kernels

    ctx = get_backend().context
    n = 1 << (16 if SMALL else 24)
    x = gt.asarray(np.random.default_rng(0).uniform(-1, 1, n).astype(np.float32))
    render = kernels.render
    for label, kernel, old, new in VARIANTS:
        def patched(name, defines, _old=old, _new=new, _kernel=kernel):  # noqa: ANN001, ANN202
            text = render(name, defines)
            if _kernel is not None and name.startswith(_kernel):
                if _old == "NO_UNROLL":  # the template rendered without expanding //#unroll
                    unroll = kernels.unroll_loops
                    kernels.unroll_loops = lambda t: re.sub(r"^[ \t]*//#unroll[ \t]*\n", "", t, flags=re.M)
                    kernels._render_cached.cache_clear()
                    try:
                        return render(name, defines)
                    finally:
                        kernels.unroll_loops = unroll
                        kernels._render_cached.cache_clear()
                if _old not in text:
                    raise RuntimeError(f"{label}: pattern not in {name}")
                text = text.replace(_old, _new)
            return text

        kernels.render = patched
        ctx._pipelines.clear()
        ctx._pipelines_fast.clear()
        try:
            gt.sort(x)
            gt.synchronize()
            per: dict[str, float] = {}
            reps = 3
            for _ in range(reps):
                with gt.profile() as prof:
                    gt.sort(x)
                    gt.synchronize()
                for e in prof.events:
                    per[e.name] = per.get(e.name, 0.0) + (e.gpu_s or 0.0) / reps
            total = sum(per.values())
            if new is None:  # a variant that keeps the results: check them
                ok = np.array_equal(gt.asnumpy(gt.sort(x)), np.sort(gt.asnumpy(x)))
                label = f"{label} ({'ok' if ok else 'WRONG'})"
            print(f"{label:30s} GPU {total * 1e3:7.3f} ms: "
                  + ", ".join(f"{k} {v * 1e3:.3f}" for k, v in sorted(per.items(), key=lambda kv: -kv[1])),
                  flush=True)
        finally:
            kernels.render = render
    ctx._pipelines.clear()
    ctx._pipelines_fast.clear()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
