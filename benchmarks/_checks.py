"""Result checks and input helpers shared by the cases: the check errors, ``assert_close`` /
``assert_equal``, random inputs and byte sizes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


MiB = 1 << 20
GiB = 1 << 30


class CheckError(Exception):
    """A result differs from its reference by more than the tolerance."""


class NotAvailable(Exception):
    """The framework cannot run this case (no such operation); shown as '-' rather than an error."""


def assert_close(got: Any, ref: Any, tol: Any, what: str) -> None:
    """Raise CheckError unless ``|got - ref| <= tol`` elementwise (NaN never passes).

    ``tol`` is a scalar or an array broadcastable to ``ref``; the message names the worst element.
    """
    g = np.asarray(got, dtype=np.float64)
    r = np.asarray(ref, dtype=np.float64)
    if g.shape != r.shape:
        raise CheckError(f"{what}: shape {g.shape} != reference shape {r.shape}")
    err = np.abs(g - r)
    t = np.broadcast_to(np.asarray(tol, dtype=np.float64), r.shape)
    bad = ~(err <= t)
    if bad.any():
        excess = np.where(np.isnan(err), np.inf, err - t)
        worst = np.unravel_index(int(np.argmax(excess)), r.shape)
        raise CheckError(
            f"{what}: {int(bad.sum())} of {bad.size} values wrong; worst at {tuple(int(i) for i in worst)}: "
            f"got {g[worst]:.6g}, want {r[worst]:.6g} (tol {t[worst]:.3g})"
        )


def assert_equal(got: Any, ref: Any, what: str) -> None:
    """Raise CheckError unless ``got`` and ``ref`` are equal element for element."""
    g, r = np.asarray(got), np.asarray(ref)
    if g.shape != r.shape:
        raise CheckError(f"{what}: shape {g.shape} != reference shape {r.shape}")
    if not np.array_equal(g, r):
        bad = g != r
        first = np.unravel_index(int(np.argmax(bad)), r.shape)
        raise CheckError(f"{what}: {int(bad.sum())} of {bad.size} values differ; first at "
                         f"{tuple(int(i) for i in first)}: got {g[first]!r}, want {r[first]!r}")


def uniform(rng: np.random.Generator, shape: Sequence[int] | int, dtype: Any, lo: float = -1.0,
            hi: float = 1.0) -> np.ndarray:
    """Uniform random values in [lo, hi) of ``dtype`` (made in float32, then cast)."""
    x = rng.random(shape, dtype=np.float32)
    x *= hi - lo
    x += lo
    return x.astype(dtype, copy=False)


def fmt_bytes(n: float) -> str:
    """``268435456`` -> ``'256 MiB'``."""
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if n >= size:
            v = n / size
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{int(n)} B"


DTYPE_SHORT = {"float16": "f16", "float32": "f32", "float64": "f64"}
