import numpy as np, gputensor as gt, time, sys
from gputensor._backend import config
rng = np.random.default_rng(0)
for dtype in ("float32", "float64", "complex64"):
    for m, n, pr in ((100, 70, 1), (131, 66, 40), (40, 97, 1), (200, 200, 0), (700, 100, 0)):
        a = rng.standard_normal((m, n))
        if dtype.startswith("complex"):
            a = a + 1j * rng.standard_normal((m, n))
        a = a.astype(dtype)
        for mode in ("reduced", "complete"):
            with config.override(linalg_panel_rows=pr):
                q, r = (gt.asnumpy(t) for t in gt.linalg.qr(gt.asarray(a), mode=mode))
            q64 = q.astype(np.complex128)
            print(dtype, m, n, pr, mode, np.abs(q64 @ r - a).max(), np.abs(q64.conj().T @ q64 - np.eye(q.shape[1])).max(), np.abs(np.tril(r, -1)).max())
