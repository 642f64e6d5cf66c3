import numpy as np, gputensor as gt, time, sys
from gputensor._backend import config
n = int(sys.argv[1]); op = sys.argv[2]
rng = np.random.default_rng(0)
a = gt.asarray((np.eye(n) + rng.standard_normal((n, n)) / (2 * np.sqrt(n))).astype(np.float32))
b = gt.asarray(rng.standard_normal((n, 1)).astype(np.float32))
f = {"qr": lambda: gt.linalg.qr(a), "solve": lambda: gt.linalg.solve(a, b)}[op]
for pr in (10**9, 0, 10**9, 0):
    with config.override(linalg_panel_rows=pr):
        f(); gt.synchronize()
        t = time.perf_counter()
        for _ in range(2):
            x = f()
        gt.synchronize()
        print(pr, "ms", (time.perf_counter() - t) / 2 * 1e3, flush=True)
    with config.override(linalg_panel_rows=pr):
        with gt.profile() as rep:
            f()
    print(str(rep)[:1500])
