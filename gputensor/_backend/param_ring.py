"""The parameter ring of a context's command batch: dispatch parameters staged in host memory
(``_ring_data``), uploaded with one ``write_buffer`` just before the batch is submitted
(``_write_ring``, skipped when the device's ring already holds the same bytes of a small batch),
and read by binding 0 of every kernel at a dynamic offset inside a uniform window
(``param_window``), so that a bind group does not depend on the parameters.

``ParamRing`` is a base class of ``context.WgpuContext``; its methods run under the context's lock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import invalid_argument
from .implementation import wgpu

__all__ = ["RING_REUSE_BYTES", "UNIFORM_RING_BYTES", "ParamRing"]

#: Bytes of the uniform ring that carries the parameters of one batch's dispatches.
UNIFORM_RING_BYTES = 256 * 1024

#: Parameter bytes of a batch up to which ``flush`` compares them with what the ring already
#: holds on the device and skips the ``write_buffer`` when they are equal (a loop that repeats
#: the same small operations submits the same parameters each time).
RING_REUSE_BYTES = 4096

#: Sizes of the uniform window a bind group exposes at its dynamic offset (parameters of up to
#: 256 bytes, the common case, share one window size and so one bind group).
_UNIFORM_WINDOWS = (256, 1024, 4096, 16384, 65536)


def _uniform_window(size: int) -> int | None:
    """The smallest uniform window (``_UNIFORM_WINDOWS``) holding ``size`` bytes, or None."""
    for window in _UNIFORM_WINDOWS:
        if size <= window:
            return window
    return None


class ParamRing:
    """The uniform ring of a context and its parameter windows. Expects of the class it is mixed
    into: ``queue`` and ``stats``."""

    def _init_param_ring(self, device: Any, limits: Mapping[str, Any]) -> None:
        """Create the ring on ``device`` for an adapter with these ``limits``, empty."""
        # Dispatch parameters of the open batch: staged in host memory, uploaded with one
        # write_buffer just before the batch is submitted (queue order keeps earlier batches'
        # reads of the ring ahead of the overwrite).
        self._uniform_align = max(16, int(limits.get("min-uniform-buffer-offset-alignment", 256)))
        self._max_uniform = int(limits.get("max-uniform-buffer-binding-size", 65536))
        self._ring = device.create_buffer(
            size=UNIFORM_RING_BYTES, usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
        )
        self._ring_data = bytearray(UNIFORM_RING_BYTES)
        #: A memoryview of ``_ring_data``: its slice assignment is cheaper than the bytearray's.
        self._ring_view = memoryview(self._ring_data)
        self._ring_used = 0
        #: The first bytes of the device's ring as the last ``write_buffer`` left them (at most
        #: ``RING_REUSE_BYTES``; see ``_write_ring``).
        self._ring_device = bytearray()
        self._param_windows: dict[int, tuple[int, int]] = {}  # see param_window

    def param_window(self, name: str, nbytes: int) -> tuple[int, int]:
        """(uniform window, ring slot) in bytes for ``nbytes`` of dispatch parameters: the window
        a bind group exposes at the dynamic offset and the ring space one dispatch takes.
        BackendError (invalid argument) when the parameters do not fit the largest window."""
        entry = self._param_windows.get(nbytes)
        if entry is None:
            size = (max(nbytes, 16) + 15) & ~15
            window = _uniform_window(size)
            if window is None or window > self._max_uniform or window > UNIFORM_RING_BYTES:
                raise invalid_argument(f"kernel {name}: {nbytes} bytes of parameters is too many")
            slot = (size + self._uniform_align - 1) // self._uniform_align * self._uniform_align
            entry = self._param_windows[nbytes] = (window, slot)
        return entry

    def _write_ring(self, used: int) -> None:
        """Upload the first ``used`` bytes of the parameter ring before a submit (lock held),
        unless the device's ring already holds exactly those bytes (small batches only: the
        comparison is a copy and a memcmp of at most ``RING_REUSE_BYTES``). Queue order makes
        the skip safe: every earlier batch was submitted after the write it reads."""
        known = self._ring_device
        if used <= RING_REUSE_BYTES:
            data = self._ring_data[:used]
            if used <= len(known) and data == known[:used]:
                self.stats["ring_writes_skipped"] = self.stats.get("ring_writes_skipped", 0) + 1
                return
            known.clear()  # (unknown until the write below has succeeded)
            self.queue.write_buffer(self._ring, 0, self._ring_data, 0, used)
            known[:] = data
        else:
            known.clear()
            self.queue.write_buffer(self._ring, 0, self._ring_data, 0, used)
            known[:] = self._ring_data[:RING_REUSE_BYTES]
