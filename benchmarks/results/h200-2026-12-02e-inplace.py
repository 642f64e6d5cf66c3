"""In-place loops beside torch: held-free loops of in-place ops (the destination is reused)."""
import sys, time, statistics
import numpy as np
import torch
import gputensor as gt
rng = np.random.default_rng(0)
held = []
def bench(f, sync, reps, n=7):
    for _ in range(3): f()
    sync(); out = []
    for _ in range(n):
        held.clear()
        t0 = time.perf_counter()
        for _ in range(reps): f()
        t1 = time.perf_counter(); sync(); t2 = time.perf_counter()
        out.append(((t1 - t0) / reps * 1e6, (t2 - t0) / reps * 1e6))
    out.sort(key=lambda r: r[1]); return out[n // 2]
for n in (1 << 10, 1 << 20, 1 << 24):
    xs = rng.random(n, dtype=np.float32); ys = rng.random(n, dtype=np.float32)
    gx, gy = gt.asarray(xs), gt.asarray(ys)
    tx, ty = torch.from_numpy(xs).cuda(), torch.from_numpy(ys).cuda()
    reps = 200 if n <= (1 << 20) else 50
    cases = [
        ("x += y", lambda: gx.__iadd__(gy), lambda: tx.__iadd__(ty)),
        ("x *= 0.999", lambda: gx.__imul__(0.999), lambda: tx.__imul__(0.999)),
        ("x -= 0.01 * y", lambda: gx.__isub__(0.01 * gy), lambda: tx.__isub__(0.01 * ty)),
        ("x[x > 0.5] = 0.5", lambda: gx.__setitem__(gx > 0.5, 0.5), lambda: tx.__setitem__(tx > 0.5, 0.5)),
        ("held (x>.5)&(y<.5)", lambda: held.append((gx > 0.5) & (gy < 0.5)), lambda: held.append((tx > 0.5) & (ty < 0.5))),
        ("held x*y + x*x", lambda: held.append(gx * gy + gx * gx), lambda: held.append(tx * ty + tx * tx)),
        ("held x.sum()", lambda: held.append(gx.sum()), lambda: held.append(tx.sum())),
    ]
    for name, g, t in cases:
        gh, gw = bench(g, gt.synchronize, reps); th, tw = bench(t, torch.cuda.synchronize, reps)
        print(f"{name:18s} n={n:9d}: gt host {gh:7.1f} wall {gw:7.1f} | torch host {th:6.1f} wall {tw:7.1f} | gt/torch {tw / gw:.2f}", flush=True)
