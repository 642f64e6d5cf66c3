"""The submit policy of a context's command batch: when the open batch is submitted for its size
or its command count (``MAX_BATCH``, the flush bound from ``FLUSH_BYTES`` doubling to
``FLUSH_BYTES_MAX``, the ``submit_policy`` knob's ``bytes`` and ``work`` rules with their
``SUBMIT_*`` estimates of the device's queue), and ``size_submits_held``.

``SubmitPolicy`` is a base class of ``context.WgpuContext`` (whose module docstring describes the
policies); its methods run under the context's lock and call the context's ``flush``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

from . import config

__all__ = ["FLUSH_BYTES", "FLUSH_BYTES_MAX", "MAX_BATCH", "SUBMIT_AHEAD_S", "SUBMIT_GAP_S", "SUBMIT_GBPS",
           "SUBMIT_GBPS_OTHER", "SUBMIT_PENDING_MAX_S", "SubmitPolicy"]

#: Commands recorded before the open batch is submitted on its own.
MAX_BATCH = 256

#: Bytes bound by the commands of the open batch after which it is submitted at once, so that
#: the device starts on large work while the host records more (small work stays batched).
FLUSH_BYTES = 32 << 20

#: The flush bound doubles at each size-triggered submit up to this (reset after every wait).
FLUSH_BYTES_MAX = 2 << 30

#: ``work`` submit policy: a batch at the flush bound is submitted when the device's estimated
#: queue of submitted work ends within this many seconds (the host must record and submit more
#: before it runs dry).
SUBMIT_AHEAD_S = 100e-6

#: ``work`` submit policy: device seconds a submission is assumed to cost beyond its bytes (on
#: the H200, wall times of batches of large operations under the ``bytes`` policy exceeded their
#: kernels' time by 0.06-0.25 ms per submit).
SUBMIT_GAP_S = 100e-6

#: ``work`` submit policy: a batch holding this many seconds of estimated work is submitted
#: even while the device is busy (bounds what a host that stops recording leaves unsubmitted).
SUBMIT_PENDING_MAX_S = 2e-3

#: GB/s the ``work`` policy assumes per adapter type when the ``submit_bandwidth`` knob is 0: at
#: or above what such devices stream (an H200: 4.8 TB/s peak), so that the estimate of the
#: device's queue errs short (a submit comes early, never late).
SUBMIT_GBPS = {"DiscreteGPU": 5000, "IntegratedGPU": 200, "CPU": 20}
SUBMIT_GBPS_OTHER = 500


class SubmitPolicy:
    """The batch counters and flush bounds of a context, and the submits they trigger. Expects
    of the class it is mixed into: ``_lock``, ``stats``, ``adapter_info`` and ``flush()``."""

    def _init_submit_policy(self) -> None:
        """Set up an empty batch's counters and the bounds of an idle device."""
        self._recorded = 0
        self._pending_bytes = 0
        #: (config.generation, FLUSH_BYTES, MAX_BATCH) that ``_first_bound`` and ``_max_batch``
        #: were derived from (``_submit_bounds``)
        self._bounds_key: Any = None
        self._first_bound = FLUSH_BYTES  # the flush bound after a wait (the ``submit_bytes`` knob)
        self._max_batch = MAX_BATCH  # commands a batch holds at most (the ``submit_commands`` knob)
        self._flush_bytes = self._submit_bounds()  # the bytes at which the open batch is looked at next
        self._flush_level = self._flush_bytes  # the flush bound (doubled per size-triggered submit)
        self._size_holds = 0  # open ``size_submits_held`` blocks: no submit on size inside them
        #: ``perf_counter`` time at which the device is estimated to finish the work submitted
        #: so far (0.0: idle; see the module docstring of ``context``).
        self._busy_until = 0.0
        self._rate_key: Any = None  # (config.generation) of ``_seconds_per_byte``
        self._seconds_per_byte = 0.0

    def _count_command(self) -> None:
        self._recorded += 1
        if self._pending_bytes >= self._flush_bytes or self._recorded >= self._max_batch:
            self._count_command_flush()

    def _count_command_flush(self) -> None:
        """The submit ``_count_command`` and ``record`` consider once the batch reaches the flush
        bound or ``MAX_BATCH`` commands (lock held; see the module docstring for the policies)."""
        sized = self._pending_bytes >= self._flush_bytes
        if self._recorded < self._max_batch:
            if not sized or self._size_holds:
                return
            if config.value("submit_policy") == "work" and self._defer_submit():
                return
        self.flush()
        if sized:
            self._flush_level = self._flush_bytes = min(2 * self._flush_level,
                                                        max(FLUSH_BYTES_MAX, self._first_bound))

    @contextlib.contextmanager
    def size_submits_held(self) -> Iterator[None]:
        """Inside the block the open batch is not submitted for its size (it still is at
        ``MAX_BATCH`` commands, when the parameter ring is full and at every wait): for an
        operation that waits for its own work right after recording it (a compaction reads its
        count back), so that its kernels and the readback go to the device in one submit
        instead of one per large kernel."""
        with self._lock:
            self._size_holds += 1
        try:
            yield
        finally:
            with self._lock:
                self._size_holds -= 1

    def _defer_submit(self) -> bool:
        """``work`` policy: whether the batch at the flush bound waits for more work (the device
        has more than ``SUBMIT_AHEAD_S`` of submitted work left and the batch holds less than
        ``SUBMIT_PENDING_MAX_S``); then the bound moves ``FLUSH_BYTES`` past it (lock held)."""
        pending = self._pending_bytes
        left = self._busy_until - time.perf_counter()
        if left <= SUBMIT_AHEAD_S or pending * self._work_rate() >= SUBMIT_PENDING_MAX_S:
            return False
        self._flush_bytes = pending + self._first_bound
        self.stats["submits_deferred"] += 1
        return True

    def _submit_bounds(self) -> int:
        """The flush bound after a wait (``submit_bytes``, else ``FLUSH_BYTES``), refreshing it
        and ``_max_batch`` (``submit_commands``, else ``MAX_BATCH``) when a knob or one of those
        constants changed."""
        key = (config.generation, FLUSH_BYTES, MAX_BATCH)
        if key != self._bounds_key:
            first = int(config.value("submit_bytes"))
            commands = int(config.value("submit_commands"))
            self._first_bound = first if first > 0 else FLUSH_BYTES
            self._max_batch = commands if commands > 0 else MAX_BATCH
            self._bounds_key = key
        return self._first_bound

    def _work_rate(self) -> float:
        """Device seconds per bound byte that the ``work`` policy assumes (``submit_bandwidth``,
        else ``SUBMIT_GBPS`` by adapter type)."""
        key = config.generation
        if key != self._rate_key:
            gbps = config.value("submit_bandwidth")
            if gbps <= 0:
                gbps = SUBMIT_GBPS.get(str(self.adapter_info.get("adapter_type")), SUBMIT_GBPS_OTHER)
            self._seconds_per_byte = 1.0 / (float(gbps) * 1e9)
            self._rate_key = key
        return self._seconds_per_byte
