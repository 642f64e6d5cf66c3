"""Opt-in autotuner for the gemm-family plan (tile configuration and split-K count).

``gemm_splitk.gemm_plan`` picks ``(tiles, splits)`` from a static policy measured on one GPU; close
calls (64x64 tiles or 128-wide tiles split 2-8 ways, ...) go either way on another GPU. With
tuning enabled (``GPUTENSOR_AUTOTUNE=1`` or ``gputensor.autotune(True)``; off by default, like
torch's ``cudnn.benchmark``) the first call of gemm, the general-stride gemm or conv2d for a new
key times a short list of candidate plans and every later call with that key runs the winner.

Key: the adapter fingerprint (vendor, device, driver description, backend, ids, workgroup memory
limit and the gputensor version; one cache file each), the kernel family (``gemm``,
``gemm_strided``, ``conv2d``), the storage dtype (which fixes the f32 accumulation), the
largest block's m, n, k and batch each **rounded up to a power of two** (shapes within a factor
of two share one tuning: the first one seen is measured), and family details that change the
kernel (gemm: the transposes; general-stride gemm: the operands' fast axes; conv2d: filter size
and stride). Only f32 accumulation (float32 and float16 data) is tuned; float64 keeps the
static plan, as do calls with an explicit ``splits=`` or ``GPUTENSOR_GEMM_SPLITK``.

Candidates (``candidates``): the static choice, 64x64 tiles unsplit, the 128-wide tiles unsplit
and split 2, 4 and 8 ways, each clamped as a real call would be (``gemm_splitk.clamp_plan``: depth
tiles, scratch binding), duplicates dropped, only tiles that fit the adapter's workgroup memory.
On a software adapter only the first ``SOFTWARE_CANDIDATES`` (static and 64x64) are timed. The
tile facts come from the caller as a :class:`PlanSpace` (``gemm_splitk.GEMM_PLANS``): this module
sits below the gemm operations, which import it.

Timing (``time_plan``): the same operation (same shapes, strides, transposes, dtype) runs on
zero-filled scratch operands allocated for the purpose, so the caller's output is only ever
written by the real call, with the winning plan. Per candidate: one warm-up call (it compiles the
pipeline), then ``SAMPLES`` samples of ``reps`` calls each followed by a synchronisation, wall
clock, median per call (``reps`` set once per key so a sample lasts about ``SAMPLE_S``). A
candidate whose first sample is more than ``SLOW_FACTOR`` times the best so far is dropped, and
no candidate starts once ``BUDGET_S`` has passed. A candidate that fails (BackendError) is skipped.
Tuning drains the queue (it synchronises) and runs outside the tuner's lock; a second thread
asking for a key being tuned gets the static plan meanwhile.

Persistence: one JSON file per adapter fingerprint, ``autotune-<hash>.json`` in
``$GPUTENSOR_CACHE_DIR``, else ``$XDG_CACHE_HOME/gputensor``, else ``~/.cache/gputensor``; read
lazily once, written atomically (temp file + ``os.replace``, merged with what another process
wrote meanwhile) after each new tuning. An unreadable or corrupt file is ignored (one warning);
an unwritable directory disables persistence for the process (one warning). An in-memory table
sits in front.

Numerics: a plan changes only the speed. For a fixed plan results are bitwise reproducible
(split-K partials are summed in a fixed order), but different plans sum in different orders, so
float results of a tuned process may differ in the last bits from an untuned one, or from one
whose tuning picked differently (as with cuDNN's benchmark mode).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import config
from .errors import BackendError
from .profiling import label

#: Environment variable enabling the tuner (1/true/yes/on; 0/false/no/off or empty: off).
ENV = "GPUTENSOR_AUTOTUNE"
#: Environment variable naming the cache directory.
CACHE_ENV = "GPUTENSOR_CACHE_DIR"
#: Cache file format version (a different version in a file makes it ignored).
CACHE_VERSION = 1

#: Split counts tried with the 128-wide tiles.
SPLITS = (2, 4, 8)
#: Candidates timed on a software adapter (the static choice and 64x64 tiles).
SOFTWARE_CANDIDATES = 2
#: Samples per candidate (the median is kept).
SAMPLES = 3
#: Wall time one sample aims for (sets the calls per sample).
SAMPLE_S = 0.005
#: Most calls per sample.
MAX_REPS = 32
#: A candidate whose first sample is this many times slower than the best so far is dropped.
SLOW_FACTOR = 2.0
#: No further candidate is started once a key's tuning has taken this long (seconds).
BUDGET_S = 3.0



# ---- the switch ------------------------------------------------------------------------------
_override: bool | None = None  # set by autotune(); None: the environment decides


def parse_env(raw: str | None) -> bool:
    """The state a ``GPUTENSOR_AUTOTUNE`` value asks for (unset: off). BackendError (invalid
    argument) for anything but 1/true/yes/on or 0/false/no/off/empty (any case)."""
    return config.parse_switch(ENV, raw)


def enabled(environment: bool | None = None) -> bool:
    """Whether gemm-family calls tune their plan: ``autotune(...)``'s setting, else the
    environment (``environment``: the ``autotune`` knob's value, already read)."""
    if _override is not None:
        return _override
    return bool(config.value("autotune") if environment is None else environment)


_enabled_now = enabled  # ``autotune``'s parameter shadows the name


class AutotuneSetting:
    """What ``autotune(...)`` returns: true when tuning was enabled before the call (``bool()``,
    ``==`` with a bool), and a context manager restoring that previous setting on exit."""

    __slots__ = ("previous", "_restore")

    def __init__(self, previous: bool, restore: bool | None) -> None:
        self.previous = previous
        self._restore = restore

    def __bool__(self) -> bool:
        return self.previous

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (bool, AutotuneSetting)):
            return self.previous == bool(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.previous)

    def __repr__(self) -> str:
        return f"AutotuneSetting(previous={self.previous})"

    def __enter__(self) -> "AutotuneSetting":
        return self

    def __exit__(self, *exc: object) -> None:
        global _override
        _override = self._restore


def autotune(enabled: bool | None = None) -> AutotuneSetting:
    """Turn the gemm/conv2d plan autotuner on or off for the process (``None``: leave it), and
    return the previous state, which is true-ish when tuning was on. The result is also a context
    manager: ``with gt.autotune(True): ...`` restores the previous setting after the block.

    Off by default (``GPUTENSOR_AUTOTUNE=1`` turns it on): the first call for each new shape
    bucket pays the tuning time; choices are cached on disk per adapter
    (``$GPUTENSOR_CACHE_DIR``, else ``$XDG_CACHE_HOME/gputensor`` or ``~/.cache/gputensor``).
    Tuned plans may change the last bits of float results. ``TypeError`` for a non-bool."""
    global _override
    if enabled is not None and not isinstance(enabled, bool):
        raise TypeError(f"autotune expects a bool or None, not {type(enabled).__name__}")
    restore = _override
    previous = _enabled_now()
    if enabled is not None:
        _override = enabled
    return AutotuneSetting(previous, restore)


# ---- forced plans (what the timing runs use) ---------------------------------------------------
_local = threading.local()


def forced_plan() -> tuple[Any, int] | None:
    """The ``(tiles, splits)`` the current thread's tuning run forces, else None."""
    return getattr(_local, "plan", None)


class _force:
    def __init__(self, plan: tuple[Any, int]) -> None:
        self.plan = plan

    def __enter__(self) -> None:
        self.prev = getattr(_local, "plan", None)
        _local.plan = self.plan

    def __exit__(self, *exc: object) -> None:
        _local.plan = self.prev


# ---- the plans being tuned ----------------------------------------------------------------------
@dataclass(frozen=True)
class PlanSpace:
    """The tile configurations the tuner chooses among (``gemm_splitk.GEMM_PLANS``): ``tiles(bm, bn,
    bk, tm, tn)`` makes one (its ``check()`` raises ValueError when unusable), ``fits(ctx, tiles,
    acc_size)`` says whether it fits the adapter's workgroup memory, ``big_tiles(m, n)`` are the
    128-wide tiles for a problem, ``medium`` the 64x64 ones, and ``clamp(backend, acc_type, m, n,
    k, batch, tiles, splits)`` clamps a plan as a real call would."""

    tiles: Callable[..., Any]
    fits: Callable[[Any, Any, int], bool]
    big_tiles: Callable[[int, int], Any]
    medium: Any
    clamp: Callable[..., tuple[Any, int]]


# ---- requests, keys, fingerprints ------------------------------------------------------------
@dataclass(frozen=True)
class Request:
    """One operation's tuning request: its ``family``, storage ``dtype`` ('f32', 'f16'),
    ``extra`` key details, the byte sizes of the scratch operands it needs, and ``run(ptrs)``,
    which records the same operation on scratch operands at ``ptrs`` (the plan is forced)."""

    family: str
    dtype: str
    extra: tuple[Any, ...]
    sizes: tuple[int, ...]
    run: Callable[[Sequence[int]], None]


def bucket(x: int) -> int:
    """``x`` rounded up to a power of two (1 for x <= 1)."""
    return 1 if x <= 1 else 1 << (int(x) - 1).bit_length()


def make_key(family: str, dtype: str, m: int, n: int, k: int, batch: int,
             extra: Sequence[Any] = ()) -> str:
    """The cache key of a problem (within one adapter's table): family, dtype, bucketed sizes,
    extra details."""
    tail = ",".join(str(e) for e in extra)
    return (f"{family}/{dtype}/m{bucket(m)}/n{bucket(n)}/k{bucket(k)}/b{bucket(batch)}"
            f"/{tail}")


@functools.lru_cache(maxsize=1)
def _package_version() -> str:
    try:
        from importlib.metadata import version

        return version("gputensor")
    except Exception:  # noqa: BLE001 - not installed as a distribution
        return "dev"


def fingerprint(info: Mapping[str, Any], limits: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The adapter identity a table belongs to: adapter info strings (vendor, architecture,
    device, driver description, ids, adapter and backend type), the workgroup memory limit, the
    gputensor version and the cache format version."""
    fields = ("vendor", "architecture", "device", "description", "vendor_id", "device_id",
              "adapter_type", "backend_type")
    fp = {f: str(info.get(f, "")) for f in fields}
    fp["workgroup_storage"] = str((limits or {}).get("max-compute-workgroup-storage-size", ""))
    fp["gputensor"] = _package_version()
    fp["format"] = str(CACHE_VERSION)
    return fp


def fingerprint_hash(fp: Mapping[str, str]) -> str:
    """A short stable hash of a fingerprint (the cache file's name)."""
    return hashlib.sha256(json.dumps(dict(fp), sort_keys=True).encode()).hexdigest()[:16]


def cache_dir() -> Path:
    """``$GPUTENSOR_CACHE_DIR``, else ``$XDG_CACHE_HOME/gputensor``, else ``~/.cache/gputensor``."""
    explicit = config.value("cache_dir")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "gputensor"
    return Path.home() / ".cache" / "gputensor"


def plan_text(tiles: Any, splits: int) -> str:
    """``BMxBNxBK/TMxTN s=S``."""
    return f"{tiles.bm}x{tiles.bn}x{tiles.bk}/{tiles.tm}x{tiles.tn} s={splits}"


# ---- the table ---------------------------------------------------------------------------------
def _well_formed(record: Any) -> bool:
    """Whether a stored record has five integer tile sizes and an integer split count."""
    try:
        tiles = [int(v) for v in record["tiles"]]
        int(record["splits"])
    except (KeyError, TypeError, ValueError):
        return False
    return len(tiles) == 5


def _decode(record: Any, space: PlanSpace) -> tuple[Any, int] | None:
    """``(tiles, splits)`` of a stored record, None unless it is a usable configuration."""
    try:
        tiles = space.tiles(*(int(v) for v in record["tiles"]))
        splits = int(record["splits"])
        tiles.check()
    except (KeyError, TypeError, ValueError):
        return None
    if splits < 1 or tiles.threads % tiles.bm:  # conv2d needs threads % BM == 0
        return None
    return tiles, splits


class _Table:
    """One adapter's tuned plans: in memory, backed by its cache file."""

    def __init__(self, fp: dict[str, str]) -> None:
        self.fp = fp
        self.path = cache_dir() / f"autotune-{fingerprint_hash(fp)}.json"
        self.records: dict[str, dict[str, Any]] = {}
        self.plans: dict[str, tuple[Any, int]] = {}
        self.busy: set[str] = set()
        self.persist = True
        self.loaded = False

    def _read(self, warn: bool) -> dict[str, dict[str, Any]]:
        """The records of the file (empty when missing, unreadable or corrupt)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):
            return {}
        except OSError as exc:
            if warn:
                warnings.warn(f"gputensor autotune: cannot read {self.path} ({exc}); ignored",
                              RuntimeWarning, stacklevel=2)
            return {}
        try:
            data = json.loads(text)
            if data.get("format") != CACHE_VERSION or data.get("fingerprint") != self.fp:
                raise ValueError("format or fingerprint mismatch")
            entries = data["entries"]
            if not isinstance(entries, dict):
                raise ValueError("entries is not an object")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            if warn:
                warnings.warn(f"gputensor autotune: ignoring corrupt cache {self.path} ({exc})",
                              RuntimeWarning, stacklevel=2)
            return {}
        return {str(k): v for k, v in entries.items() if _well_formed(v)}

    def load(self) -> None:
        """Read the file's records once (their plans are decoded on first use: ``plan``)."""
        if self.loaded:
            return
        self.loaded = True
        for key, record in self._read(warn=True).items():
            self.records.setdefault(key, record)

    def plan(self, key: str, space: PlanSpace) -> tuple[Any, int] | None:
        """The tuned plan of ``key``, None when untuned; a stored record that is no usable
        configuration is dropped."""
        plan = self.plans.get(key)
        if plan is None and key in self.records:
            plan = _decode(self.records[key], space)
            if plan is None:
                del self.records[key]
            else:
                self.plans[key] = plan
        return plan

    def save(self) -> None:
        """Merge the file's records with ours (ours win) and replace it atomically."""
        if not self.persist:
            return
        merged = {**self._read(warn=False), **self.records}
        data = {"format": CACHE_VERSION, "fingerprint": self.fp, "entries": merged}
        tmp = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".autotune-", suffix=".tmp", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1, sort_keys=True)
            os.replace(tmp, self.path)
            tmp = None
        except OSError as exc:
            self.persist = False
            warnings.warn(f"gputensor autotune: cannot write {self.path} ({exc}); tuned plans "
                          "are kept in memory only", RuntimeWarning, stacklevel=2)
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass


_lock = threading.Lock()
_tables: dict[str, _Table] = {}


_names: dict[int, tuple[Any, str]] = {}  # id(ctx) -> (ctx, table name): skips re-hashing


def _table(ctx: Any) -> _Table:
    """The table of ``ctx``'s adapter, loaded on first use (call with ``_lock`` held)."""
    known = _names.get(id(ctx))
    if known is not None and known[0] is ctx:
        table = _tables.get(known[1])
        if table is not None:
            return table
    fp = fingerprint(ctx.adapter_info, ctx.limits)
    name = fingerprint_hash(fp)
    _names[id(ctx)] = (ctx, name)
    table = _tables.get(name)
    if table is None:
        table = _tables[name] = _Table(fp)
    table.load()
    return table


def reset() -> None:
    """Forget every in-memory table (files stay; the next lookup reloads them)."""
    with _lock:
        _tables.clear()
        _names.clear()


def entries(ctx: Any) -> dict[str, dict[str, Any]]:
    """A copy of the tuned records of ``ctx``'s adapter (key -> record: ``tiles``, ``splits``,
    ``ms`` per call, ``shape`` measured, ``times`` per candidate in ms)."""
    with _lock:
        return {k: dict(v) for k, v in _table(ctx).records.items()}


# ---- candidates and timing ---------------------------------------------------------------------
def candidates(backend: Any, acc_type: str, m: int, n: int, k: int, batch: int,
               static: tuple[Any, int], space: PlanSpace) -> list[tuple[Any, int]]:
    """The plans to time for a problem: ``static`` first, then 64x64 unsplit, the 128-wide tiles
    unsplit and split ``SPLITS`` ways, each clamped as a call would clamp it, without duplicates
    or tiles beyond the adapter's workgroup memory (``SOFTWARE_CANDIDATES`` at most on a
    software adapter)."""
    ctx = backend.context
    acc_size = 8 if acc_type == "f64" else 4
    big = space.big_tiles(m, n)
    raw = [static, (space.medium, 1), (big, 1)] + [(big, s) for s in SPLITS]
    out: list[tuple[Any, int]] = []
    for tiles, splits in raw:
        if not space.fits(ctx, tiles, acc_size):
            continue
        plan = space.clamp(backend, acc_type, m, n, k, batch, tiles, splits)
        if plan not in out:
            out.append(plan)
    if ctx.is_software:
        out = out[:SOFTWARE_CANDIDATES]
    return out


def _run_timed(backend: Any, run: Callable[[], None], reps: int) -> float:
    start = time.perf_counter()
    for _ in range(reps):
        run()
    backend.synchronize()
    return (time.perf_counter() - start) / reps


def time_plan(backend: Any, request: Request, ptrs: Sequence[int], plan: tuple[Any, int],
              reps: int | None, best: float) -> tuple[float, int]:
    """``(seconds per call, reps)`` of ``request`` run with ``plan`` forced: a warm-up call, then
    ``SAMPLES`` samples of ``reps`` calls (``reps`` None: chosen from one timed call so that a
    sample lasts about ``SAMPLE_S``), the median; only the first sample when it is more than
    ``SLOW_FACTOR`` x ``best``."""

    def run() -> None:
        with _force(plan):
            request.run(ptrs)

    _run_timed(backend, run, 1)  # warm-up: compiles the pipeline
    if reps is None:
        once = _run_timed(backend, run, 1)
        reps = max(1, min(MAX_REPS, math.ceil(SAMPLE_S / max(once, 1e-9))))
    samples = [_run_timed(backend, run, reps)]
    if samples[0] > SLOW_FACTOR * best:
        return samples[0], reps
    samples += [_run_timed(backend, run, reps) for _ in range(SAMPLES - 1)]
    return sorted(samples)[len(samples) // 2], reps


def _tune(backend: Any, request: Request, cands: list[tuple[Any, int]],
          shape: tuple[int, int, int, int]) -> tuple[tuple[Any, int], dict[str, Any], bool]:
    """``(plan, record, persist)``: the fastest candidate; persist False when the scratch
    operands could not be allocated (the static plan is then kept for this process only)."""
    static = cands[0]
    record: dict[str, Any] = {"shape": list(shape)}
    ptrs: list[int] = []
    try:
        backend.synchronize()  # time the candidates alone
        for size in request.sizes:
            ptrs.append(backend.alloc(max(4, int(size))))
    except BackendError:
        for p in ptrs:
            backend.free(p)
        return static, {**record, "tiles": _tiles_list(static[0]), "splits": static[1]}, False
    times: dict[str, float] = {}
    best_plan, best = static, math.inf
    reps: int | None = None
    start = time.perf_counter()
    try:
        with label("autotune"):
            for plan in cands:
                if times and time.perf_counter() - start > BUDGET_S:
                    break
                try:
                    t, reps = time_plan(backend, request, ptrs, plan, reps, best)
                except BackendError:
                    continue
                times[plan_text(*plan)] = round(t * 1e3, 6)
                if t < best:
                    best_plan, best = plan, t
    finally:
        for p in ptrs:
            backend.free(p)
    record.update(tiles=_tiles_list(best_plan[0]), splits=best_plan[1],
                  ms=round(best * 1e3, 6) if best < math.inf else None, times=times)
    return best_plan, record, True


def _tiles_list(tiles: Any) -> list[int]:
    return [tiles.bm, tiles.bn, tiles.bk, tiles.tm, tiles.tn]


def tuned_plan(backend: Any, request: Request, acc_type: str, m: int, n: int, k: int,
               batch: int, static: Callable[[], tuple[Any, int]],
               space: PlanSpace) -> tuple[Any, int] | None:
    """The tuned ``(tiles, splits)`` for a problem (tuning it now on a miss, with ``static()``,
    the clamped static plan, as the first candidate), or None when another thread is tuning the
    same key (the caller then uses the static plan). The result is the plan as tuned for the
    bucket's first shape; the caller clamps it for this one. ``space``: the tile facts."""
    ctx = backend.context
    key = make_key(request.family, request.dtype, m, n, k, batch, request.extra)
    with _lock:
        table = _table(ctx)
        plan = table.plan(key, space)
        if plan is not None and space.fits(ctx, plan[0], 4):
            return plan
        if key in table.busy:
            return None
        table.busy.add(key)
    try:
        cands = candidates(backend, acc_type, m, n, k, batch, static(), space)
        if len(cands) > 1:
            plan, record, persist = _tune(backend, request, cands, (m, n, k, batch))
        else:
            plan = cands[0]
            record = {"shape": [m, n, k, batch], "tiles": _tiles_list(plan[0]),
                      "splits": plan[1]}
            persist = True
    finally:
        with _lock:
            table.busy.discard(key)
    with _lock:
        table.plans[key] = plan
        if persist:
            table.records[key] = record
            table.save()
    return plan


__all__ = ["AutotuneSetting", "PlanSpace", "Request", "autotune", "bucket", "cache_dir", "candidates",
           "enabled", "entries", "fingerprint", "fingerprint_hash", "forced_plan", "make_key",
           "parse_env", "reset", "time_plan", "tuned_plan"]
