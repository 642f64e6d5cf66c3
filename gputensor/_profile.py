"""Optional per-kernel timing: ``gputensor.profile()``.

Usage::

    with gt.profile() as prof:
        y = my_kernel(x)
        z = gt.exp(y) * 2
    print(prof)            # a table: kernel, count, total and mean time, share
    prof.records           # one KernelStats per kernel name, largest total first
    prof.events            # one DispatchEvent per recorded dispatch, in order

Two modes, chosen when the block is entered:

* **GPU time** (``prof.gpu_timing`` is True): the adapter has the ``timestamp-query`` feature and the
  context exposes the profiling hook (``WgpuContext.timestamp_sink``, see below). While a profile
  is active every dispatch is recorded in a compute pass of its own whose beginning and end write
  timestamps into a query set; on exit the queries are resolved and read back, and each dispatch's
  GPU time is end - begin (times the queue's timestamp period). One pass per dispatch costs a
  little on the device; it only happens while profiling.
* **Host time only** (``prof.gpu_timing`` is False, ``prof.note`` says why): the context's
  ``dispatch`` is wrapped for the duration of the block (an instance attribute, removed on exit)
  and each dispatch's *host* recording time is measured. That counts kernels and shows the Python
  and driver cost per kernel, not how long the device ran them.

Both modes record dispatches from every thread while the profile is active. Profiles nest (an
inner block reports its own dispatches; the outer one reports all of them; inner blocks use the
outermost block's mode). Kernel names are the context's kernel names (``elementwise``, ``gemm``,
...) unless the dispatch was recorded inside ``with label("name"):`` (user kernels label their
dispatches with their own names).

The device side (timestamp queries, the host-time fallback, dispatch labels, the hook on
``WgpuContext``) is :mod:`gputensor._backend.profiling`; this module turns its events into the
report.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from . import _fusion
from ._backend import get_backend
from ._backend.profiling import (
    DispatchEvent,
    Session,
    TimestampSink,
    acquire,
    current_label,
    label,
    release,
)

__all__ = ["profile", "Profile", "KernelStats", "DispatchEvent", "TimestampSink", "label", "current_label"]


# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KernelStats:
    """Totals of one kernel name over a profile: dispatch count, total and mean GPU seconds
    (None in host mode), total and mean host recording seconds (None in GPU mode)."""

    name: str
    count: int
    gpu_total_s: float | None
    gpu_mean_s: float | None
    host_total_s: float | None
    host_mean_s: float | None

    @property
    def total_s(self) -> float:
        """GPU total when known, else host total."""
        return self.gpu_total_s if self.gpu_total_s is not None else (self.host_total_s or 0.0)


# ---------------------------------------------------------------------------------------------
# the public context manager
# ---------------------------------------------------------------------------------------------
class Profile:
    """A profiling block (``with gt.profile() as prof:``); results are available after it exits.

    Attributes after exit: ``records`` (list of :class:`KernelStats`, largest total first),
    ``events`` (list of :class:`DispatchEvent` in recording order), ``gpu_timing`` (bool),
    ``note`` (what the times are), ``wall_s`` (wall-clock seconds of the block including the final
    wait for the device), ``adapter`` (description). ``str(prof)`` / ``prof.table()`` is a
    printable table. Reading ``records``/``events`` inside the block raises RuntimeError.
    """

    def __init__(self, *, gpu: bool | None = None, synchronize: bool = True) -> None:
        self._gpu_request = gpu
        self._synchronize = synchronize
        self._session: Session | None = None
        self._start = 0
        self._t0 = 0.0
        self._events: list[DispatchEvent] | None = None
        self._records: list[KernelStats] | None = None
        self.gpu_timing = False
        self.note = ""
        self.wall_s = 0.0
        self.adapter = ""

    def __enter__(self) -> "Profile":
        ctx = get_backend().context
        if self._synchronize:
            _fusion.materialize_all()  # pending lazy work issued before the block runs now
            ctx.synchronize()  # earlier work does not count against the block's wall time
        self._session = acquire(ctx, self._gpu_request)
        self.gpu_timing = self._session.gpu
        self.note = self._session.note
        self.adapter = str(ctx.adapter_info.get("device", "?"))
        self._start = self._session.mark()
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        session = self._session
        assert session is not None
        try:
            if self._synchronize:
                _fusion.materialize_all()  # lazy work issued inside the block is counted
            stop = session.mark()
            if self._synchronize:
                session.ctx.synchronize()
            self.wall_s = time.perf_counter() - self._t0
            self._events = session.events(self._start, stop)
        finally:
            release()
            self._session = None
        self._records = _summarise(self._events)

    # ---- results ---------------------------------------------------------------------------
    def _done(self) -> None:
        if self._records is None:
            raise RuntimeError("profile results are available after the `with gt.profile()` block exits")

    @property
    def records(self) -> list[KernelStats]:
        """Per-kernel totals, largest total first."""
        self._done()
        assert self._records is not None
        return list(self._records)

    @property
    def events(self) -> list[DispatchEvent]:
        """Every recorded dispatch, in order."""
        self._done()
        assert self._events is not None
        return list(self._events)

    def table(self) -> str:
        """The records as a printable table."""
        self._done()
        assert self._records is not None
        kind = "GPU" if self.gpu_timing else "host"
        width = max([len("kernel")] + [len(r.name) for r in self._records])
        total = sum(r.total_s for r in self._records)
        lines = [
            f"gputensor profile on {self.adapter}: {sum(r.count for r in self._records)} dispatches, "
            f"wall {self.wall_s * 1e3:.3f} ms",
            self.note,
            f"{'kernel':<{width}}  {'count':>7}  {kind + ' total (ms)':>16}  "
            f"{kind + ' mean (us)':>15}  {'share':>6}",
        ]
        for r in self._records:
            mean = r.gpu_mean_s if self.gpu_timing else r.host_mean_s
            tot = r.total_s
            share = 100.0 * tot / total if total > 0 else 0.0
            mean_text = "n/a" if mean is None else f"{mean * 1e6:.1f}"
            lines.append(f"{r.name:<{width}}  {r.count:>7}  {tot * 1e3:>16.3f}  {mean_text:>15}  {share:>5.1f}%")
        lines.append(f"{'total':<{width}}  {sum(r.count for r in self._records):>7}  {total * 1e3:>16.3f}")
        return "\n".join(lines)

    def __str__(self) -> str:
        if self._records is None:
            return "<gputensor profile (running)>"
        return self.table()

    def __repr__(self) -> str:
        if self._records is None:
            return "Profile(running)"
        return f"Profile(gpu_timing={self.gpu_timing}, kernels={len(self._records)}, wall_s={self.wall_s:.6f})"


def _summarise(events: Sequence[DispatchEvent]) -> list[KernelStats]:
    groups: dict[str, list[DispatchEvent]] = {}
    for ev in events:
        groups.setdefault(ev.name, []).append(ev)
    records = []
    for name, evs in groups.items():
        gpu = [e.gpu_s for e in evs if e.gpu_s is not None]
        host = [e.host_s for e in evs if e.host_s is not None]
        records.append(KernelStats(
            name=name,
            count=len(evs),
            gpu_total_s=sum(gpu) if gpu else None,
            gpu_mean_s=sum(gpu) / len(gpu) if gpu else None,
            host_total_s=sum(host) if host else None,
            host_mean_s=sum(host) / len(host) if host else None,
        ))
    records.sort(key=lambda r: (-r.total_s, r.name))
    return records


def profile(*, gpu: bool | None = None, synchronize: bool = True) -> Profile:
    """A context manager that times every kernel dispatched inside it (see the module docstring).

    ``gpu``: None picks GPU timing when the adapter has ``timestamp-query`` and the context has the
    hook, else host times; False forces host times; True requires GPU timing (RuntimeError on
    entering the block when unavailable). ``synchronize``: wait for earlier device work before the
    block and for the block's work after it, so that ``wall_s`` covers exactly the block.
    """
    return Profile(gpu=gpu, synchronize=synchronize)
