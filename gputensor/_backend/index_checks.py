"""Index checks on the device, raised at the next wait (a mixin of ``WgpuContext``). No wgpu here.

A gather whose index arrays are not known to be in range does not wait for the device to check
them: its kernel tests every index it reads and, for one out of range, writes nothing for that
point (its output element holds an unspecified value) and sets bit ``k`` (the index array) of
its call's *slot*, one u32 word of a small flag buffer. The call reserves the slot while it
records (``reserve_index_check``, under the context lock) with one message per index array.

Every wait reads the armed slots back with its own results (``_stage_index_checks``: one more
device copy in the same submit, the flag words cleared right after in recorded order), so
``x.get()``, ``float(x)``, ``np.asarray(x)``, ``gt.synchronize()`` and any other readback
raise ``IndexError`` for every out-of-range gather recorded before them (the first such call's
message; the others' are dropped with it), much as CUDA reports an asynchronous error at the
next synchronising call. The flags are per device, so the error surfaces in whichever thread
waits next. When every slot is armed, the next reservation waits first (a readback of the
flags, which raises as above) so the buffer can start over.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["IndexChecks", "INDEX_CHECK_SLOTS"]

#: Slots (u32 words) of the flag buffer: checked gathers recorded between two waits.
INDEX_CHECK_SLOTS = 1024


class IndexChecks:
    """Deferred index-range checks for a context (``_lock``, ``create_storage``, ``clear``,
    ``_end_pass``, ``_keepalive``, ``synchronize``); call ``_init_index_checks`` first."""

    def _init_index_checks(self) -> None:
        self._check_buffer: Any = None
        #: Messages of each armed slot (one per index array, by bit), in slot order.
        self._check_messages: list[tuple[str, ...]] = []

    def reserve_index_check(self, messages: Sequence[str]) -> tuple[tuple[Any, int, int], int]:
        """(binding of the flag buffer, slot) for one gather recorded next whose index array
        ``k`` sets bit ``k`` of the slot when it holds an index out of range; ``messages[k]``
        is the ``IndexError`` text for that array. Call with the context lock held, and record
        the gather before releasing it. May wait for the device (every slot armed), raising
        ``IndexError`` for earlier gathers then."""
        if len(self._check_messages) >= INDEX_CHECK_SLOTS:
            self.synchronize()  # reads (and clears) every slot
        if self._check_buffer is None:
            self._check_buffer = self.create_storage(4 * INDEX_CHECK_SLOTS)  # zero-filled
        slot = len(self._check_messages)
        self._check_messages.append(tuple(messages))
        return (self._check_buffer, 0, 4 * INDEX_CHECK_SLOTS), slot

    def _stage_index_checks(self, staging_pool: Any) -> tuple[Any, int, list[tuple[str, ...]]] | None:
        """With the lock held, inside a readback's recording: record the copy of the armed
        slots into a staging buffer of ``staging_pool`` and their clearing, and disarm them.
        Returns (staging buffer, bytes, the slots' messages), or None when none is armed."""
        messages = self._check_messages
        if not messages:
            return None
        nbytes = 4 * len(messages)
        staging = staging_pool.take(nbytes)
        encoder = self._end_pass()
        encoder.copy_buffer_to_buffer(self._check_buffer, 0, staging, 0, nbytes)
        encoder.clear_buffer(self._check_buffer, 0, nbytes)
        self._keepalive.append(self._check_buffer)
        self._check_messages = []
        return staging, nbytes, messages


def raise_index_errors(flags: memoryview | bytes, messages: Sequence[tuple[str, ...]]) -> None:
    """Raise ``IndexError`` for the first slot whose flag word in ``flags`` is set (bit ``k``:
    ``messages[slot][k]``); nothing when every word is 0."""
    words = memoryview(flags).cast("I")
    for slot, texts in enumerate(messages):
        bits = words[slot]
        if bits:
            bad = [text for k, text in enumerate(texts) if bits >> k & 1]
            raise IndexError("; ".join(bad or texts) + " (an index checked on the device, reported at the "
                             "first wait after the indexing call)")
