"""What the cases run on: the gputensor backend, torch and cupy when they reach a CUDA GPU, the L2
size, per-case allocation arenas and clock warming (``Env.warm_clocks``).
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._checks import MiB
from ._timing import ClockWarmer


#: L2 size assumed when torch cannot tell (bytes); an H200 has about 60 MB.
DEFAULT_L2_BYTES = 64 * MiB


@dataclasses.dataclass
class Prepared:
    """One framework's ready-to-run form of a case.

    ``run(i)`` records (gputensor) or enqueues (torch/cupy) one call on input set ``i % sets`` and
    returns its result (the timer holds every result of a batch until the batch's sync);
    ``result()`` returns the output of set 0 as a NumPy array (for the check; None: unchecked);
    ``close()`` frees what was allocated.
    """

    run: Callable[[int], Any]
    result: Callable[[], np.ndarray] | None = None
    close: Callable[[], None] = lambda: None
    host_timed: bool = False  # host is part of the work (transfers, readbacks inside the call)


class GtArena:
    """gputensor allocations made for one case, freed together."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.ptrs: list[int] = []

    def empty(self, nbytes: int) -> int:
        """A new (zero-filled) allocation of ``nbytes``."""
        ptr = self.backend.alloc(int(nbytes))
        self.ptrs.append(ptr)
        return ptr

    def upload(self, array: np.ndarray) -> int:
        """A new allocation holding the bytes of ``array``."""
        array = np.ascontiguousarray(array)
        ptr = self.empty(array.nbytes)
        self.backend.copy_htod(ptr, array)
        return ptr

    def download(self, ptr: int, shape: Sequence[int] | int, dtype: Any) -> np.ndarray:
        """The device bytes at ``ptr`` as a new NumPy array of ``shape`` and ``dtype``."""
        out = np.empty(shape, dtype=dtype)
        self.backend.copy_dtoh(out, ptr)
        return out

    def close(self) -> None:
        """Free every allocation (errors while freeing are ignored)."""
        for ptr in self.ptrs:
            try:
                self.backend.free(ptr)
            except Exception:  # noqa: BLE001 - best effort clean-up
                pass
        self.ptrs.clear()


@dataclasses.dataclass
class Env:
    """What the cases run on: the gputensor backend and, when present, torch and cupy."""

    backend: Any
    torch: Any = None
    cupy: Any = None
    quick: bool = False
    l2_bytes: int = DEFAULT_L2_BYTES
    _warmer: ClockWarmer | None = None

    def sets(self, working_set_bytes: int) -> int:
        """How many input/output sets to rotate: 2 when the working set fits in L2, else 1."""
        return 2 if working_set_bytes <= self.l2_bytes else 1

    def arena(self) -> GtArena:
        """A fresh allocation arena on the gputensor backend."""
        return GtArena(self.backend)

    def to_torch(self, array: np.ndarray) -> Any:
        """``array`` as a contiguous torch tensor on the CUDA device."""
        return self.torch.from_numpy(np.ascontiguousarray(array)).to("cuda")

    def to_cupy(self, array: np.ndarray) -> Any:
        """``array`` as a cupy array."""
        return self.cupy.asarray(np.ascontiguousarray(array))

    def warm_clocks(self) -> None:
        """Keep the GPU saturated for 0.1 s (torch matmuls; ``_timing.ClockWarmer``) so that every
        framework's timed batches start at boost clocks. Does nothing without torch or in quick
        runs."""
        if self.torch is None or self.quick:
            return
        if self._warmer is None:
            self._warmer = ClockWarmer(self.torch)
        self._warmer.warm()


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _detect(enabled: bool, name: str, has_device: Callable[[Any], bool]) -> tuple[Any, str | None]:
    """(the module ``name`` if enabled, importable and ``has_device(module)``, or None; a note
    why not)."""
    if not enabled:
        return None, "disabled"
    try:
        module = importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001
        return None, f"not importable ({_short(exc)})"
    try:
        if not has_device(module):
            return None, "no CUDA device"
    except Exception as exc:  # noqa: BLE001
        return None, _short(exc)
    return module, None


def detect_torch(enabled: bool) -> tuple[Any, str | None]:
    """(torch module with CUDA, or None; a note why not). Sets TF32 off for matmul and cuDNN."""
    torch, note = _detect(enabled, "torch", lambda torch: torch.cuda.is_available())
    if torch is None:
        return None, note
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    try:
        torch.set_float32_matmul_precision("highest")
    except Exception:  # noqa: BLE001
        pass
    return torch, None


def detect_cupy(enabled: bool) -> tuple[Any, str | None]:
    """(cupy module with a CUDA device, or None; a note why not)."""
    return _detect(enabled, "cupy", lambda cupy: cupy.cuda.runtime.getDeviceCount() >= 1)
