"""conv2d forward (NCHW cross-correlation, zero padding) on two ResNet-50 layers at batch 32.

TFLOP/s counts 2*N*K*Oh*Ow*C*Fh*Fw. torch runs ``torch.nn.functional.conv2d`` (cuDNN, TF32 off,
``cudnn.benchmark`` on: its algorithm search is part of the cold time); cupy has no conv2d.
The check compares the first and last image with a float64 im2col product.
"""

from __future__ import annotations

import numpy as np

from ._harness import Case, Env, NotAvailable, Prepared, assert_close, uniform

_U32 = 2.0 ** -24


def conv_reference(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> tuple[np.ndarray, np.ndarray]:
    """(float64 output, float64 |x|*|w| bound) of one image ``x`` [C, H, W] with filters ``w``."""
    c, h, wd = x.shape
    k, _, fh, fw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - fh) // stride + 1
    ow = (wd + 2 * pad - fw) // stride + 1
    cols = np.empty((c, fh, fw, oh, ow))
    for i in range(fh):
        for j in range(fw):
            cols[:, i, j] = xp[:, i: i + stride * oh: stride, j: j + stride * ow: stride]
    cols = cols.reshape(c * fh * fw, oh * ow)
    wm = w.astype(np.float64).reshape(k, -1)
    return (wm @ cols).reshape(k, oh, ow), (np.abs(wm) @ np.abs(cols)).reshape(k, oh, ow)


class ConvCase(Case):
    """Input [n, c, h, w], filter [k, c, f, f], stride, padding; float32."""

    bound = "compute"
    unit = "TFLOP/s"

    def __init__(self, name: str, n: int, c: int, h: int, w: int, k: int, f: int, stride: int, pad: int) -> None:
        self.n, self.c, self.h, self.w, self.k, self.f, self.stride, self.pad = n, c, h, w, k, f, stride, pad
        self.oh = (h + 2 * pad - f) // stride + 1
        self.ow = (w + 2 * pad - f) // stride + 1
        self.id = f"conv2d.{name}"
        self.label = f"conv2d f32 N={n} C={c} {h}x{w} K={k} {f}x{f} stride {stride} pad {pad}"
        self.flops = 2.0 * n * k * self.oh * self.ow * c * f * f
        self.bytes = 4.0 * (n * c * h * w + k * c * f * f + n * k * self.oh * self.ow)
        self.working_set = int(self.bytes)

    @property
    def shapes(self) -> tuple[tuple[int, int, int, int], tuple[int, int, int, int], tuple[int, int, int, int]]:
        return ((self.n, self.c, self.h, self.w), (self.k, self.c, self.f, self.f),
                (self.n, self.k, self.oh, self.ow))

    def host(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        xs, ws, _ = self.shapes
        return {"x": uniform(rng, xs, np.float32), "w": uniform(rng, ws, np.float32)}

    def check(self, host: dict[str, np.ndarray], got: np.ndarray) -> None:
        got = np.asarray(got).reshape(self.shapes[2])
        red = self.c * self.f * self.f
        for img in sorted({0, self.n - 1}):
            ref, bound = conv_reference(host["x"][img], host["w"], self.stride, self.pad)
            assert_close(got[img], ref, 2.0 * red * _U32 * bound + 1e-30, f"{self.id} image {img}")

    def gputensor(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        be, arena = env.backend, env.arena()
        sets = env.sets(self.working_set)
        xs, ws, ys = self.shapes
        try:
            x = [arena.upload(host["x"]) for _ in range(sets)]
            w = [arena.upload(host["w"]) for _ in range(sets)]
            y = [arena.empty(4 * int(np.prod(ys))) for _ in range(sets)]
        except Exception:
            arena.close()
            raise
        stride, pad = self.stride, self.pad

        def run(i: int) -> None:
            s = i % sets
            be.conv2d_forward(x[s], xs, w[s], ws, y[s], ys, stride, pad)

        return Prepared(run, lambda: arena.download(y[0], ys, np.float32), arena.close)

    def torch(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        F = env.torch.nn.functional
        sets = env.sets(self.working_set)
        x = [env.to_torch(host["x"]) for _ in range(sets)]
        w = [env.to_torch(host["w"]) for _ in range(sets)]
        last: list = [None]
        stride, pad = self.stride, self.pad

        def run(i: int) -> None:
            s = i % sets
            last[0] = F.conv2d(x[s], w[s], stride=stride, padding=pad)

        def result() -> np.ndarray:  # called right after run(0): last holds set 0's output
            return last[0].cpu().numpy()

        return Prepared(run, result)

    def cupy(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        raise NotAvailable("cupy has no conv2d")


def cases(quick: bool) -> list[Case]:
    """ResNet-50 3x3 (N=32, C=K=256, 14x14, pad 1) and 1x1 (N=32, C=1024, K=256, 14x14) layers
    (quick: N=2 and 8x fewer channels)."""
    if quick:
        return [ConvCase("3x3", 2, 32, 14, 14, 32, 3, 1, 1), ConvCase("1x1", 2, 128, 14, 14, 32, 1, 1, 0)]
    return [ConvCase("3x3", 32, 256, 14, 14, 256, 3, 1, 1), ConvCase("1x1", 32, 1024, 14, 14, 256, 1, 1, 0)]
