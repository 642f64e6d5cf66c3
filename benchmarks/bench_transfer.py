"""Host transfers: upload (host -> device) and download (device -> host) of one buffer.

gputensor: ``backend.copy_htod(ptr, array)`` then ``synchronize()``; ``backend.copy_dtoh(array,
ptr)``. torch: ``dev.copy_(torch.from_numpy(array))`` and ``host.copy_(dev)`` on ordinary
(pageable) host memory, the same as gputensor gets; cupy: ``dev.set(array)`` / ``dev.get(out=array)``.
Timed with the wall clock (the host is part of the work); GB/s counts the bytes moved once.
"""

from __future__ import annotations

import numpy as np

from ._harness import GiB, MiB, Case, Env, Prepared, assert_equal, fmt_bytes


class TransferCase(Case):
    """``direction`` 'htod' or 'dtoh' of ``nbytes``."""

    bound = "host"
    unit = "GB/s"

    def __init__(self, direction: str, nbytes: int) -> None:
        assert direction in ("htod", "dtoh")
        self.direction = direction
        self.nbytes = int(nbytes) // 4 * 4
        self.id = f"transfer.{direction}"
        self.label = ("upload " if direction == "htod" else "download ") + fmt_bytes(self.nbytes)
        self.bytes = float(self.nbytes)
        self.working_set = self.nbytes

    def host(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        x = np.arange(self.nbytes // 4, dtype=np.uint32)
        x ^= np.uint32(0x9E3779B9)
        return {"x": x}

    def check(self, host: dict[str, np.ndarray], got: np.ndarray) -> None:
        assert_equal(np.asarray(got).view(np.uint32), host["x"], self.id)

    def gputensor(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        be, arena = env.backend, env.arena()
        x = host["x"]
        try:
            if self.direction == "htod":
                dst = arena.empty(self.nbytes)

                def run(i: int) -> None:
                    be.copy_htod(dst, x)

                return Prepared(run, lambda: arena.download(dst, x.shape, np.uint32), arena.close, host_timed=True)
            src = arena.upload(x)
            out = np.empty_like(x)
        except Exception:
            arena.close()
            raise

        def run_d(i: int) -> None:
            be.copy_dtoh(out, src)

        return Prepared(run_d, lambda: out.copy(), arena.close, host_timed=True)

    def torch(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        torch = env.torch
        x = host["x"].view(np.int32)
        if self.direction == "htod":
            src = torch.from_numpy(x)
            dst = torch.empty(x.shape, dtype=torch.int32, device="cuda")

            def run(i: int) -> None:
                dst.copy_(src)

            return Prepared(run, lambda: dst.cpu().numpy(), host_timed=True)
        dev = env.to_torch(x)
        out = np.empty_like(x)
        out_t = torch.from_numpy(out)

        def run_d(i: int) -> None:
            out_t.copy_(dev)

        return Prepared(run_d, lambda: out.copy(), host_timed=True)

    def cupy(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        cp = env.cupy
        x = host["x"]
        if self.direction == "htod":
            dst = cp.empty(x.shape, dtype=x.dtype)

            def run(i: int) -> None:
                dst.set(x)

            return Prepared(run, lambda: cp.asnumpy(dst), host_timed=True)
        dev = env.to_cupy(x)
        out = np.empty_like(x)

        def run_d(i: int) -> None:
            dev.get(out=out)

        return Prepared(run_d, lambda: out.copy(), host_timed=True)


def cases(quick: bool) -> list[Case]:
    """Upload and download of 1 GiB (quick: 8 MiB)."""
    size = 8 * MiB if quick else GiB
    return [TransferCase("htod", size), TransferCase("dtoh", size)]
