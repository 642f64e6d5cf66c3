"""Elementwise fusion: elementwise results are lazy expression DAGs, computed by one kernel.

With fusion on (the default; ``GPUTENSOR_FUSION=0`` in the environment at import turns it off,
:func:`set_fusion` / :func:`fusion` switch it at run time), an elementwise operation
(``_dispatch.elementwise_op``: every function of the op table and the operators;
``_dispatch.run_elementwise``: ``where``, ``clip``; ``astype`` and copies) validates its
arguments exactly as the eager path does -- dtype, shape and range errors are raised at the
call that causes them -- and returns a *lazy* :class:`LazyArray` instead of recording a
kernel. A lazy array is a :class:`~gputensor._array_object.GpuArray` whose storage slot holds
an expression :class:`_Node` (the op's WGSL expression from ``_backend/elementwise_ops``, the
per-operand casts, the expression and result types, and its operands: other nodes, *leaf*
arrays with storage, or weak Python scalars) instead of a ``_Storage``. ``shape``, ``dtype``,
``ndim``, ``size``, ``device``, ``strides`` (C-contiguous) and ``_offset`` (0) are real
attributes; reading ``_storage`` (so ``_ptr``, which every kernel launch and readback uses)
*materialises* the array: one generated kernel evaluates the whole DAG from the leaves
(``_backend/elementwise.fused_program``: every intermediate value bound once in a register,
rounded or wrapped to its dtype as storing it would be, so fused and unfused results agree to
floating-point rounding) and writes only the result; the object then becomes a plain
``GpuArray`` (its class is switched: no indirection remains). So:

* ``gt.exp(a) * b + 1`` is one dispatch that reads ``a`` and ``b`` once and writes one array;
  the intermediates are never written (nobody observed them).
* Anything that observes the data materialises: readback (``get``, ``asnumpy``, ``repr``,
  ``float(x)``, DLPack), every non-elementwise op (matmul, indexing, views, reshape, sort, ...,
  the source of a ``setitem``), :func:`synchronize` (``gt.synchronize()``) materialises every
  live lazy array.
* Reductions fuse their elementwise prologue instead: ``gt.sum(a * b)``, ``gt.max(gt.abs(x))``
  evaluate the DAG inside the reduction's loads (``ops_reduce.Prologue``); the lazy argument
  stays lazy.
* Reductions with ``keepdims=True`` of floats (``sum``, ``mean``, ``max``, ``min``) are *pending
  row statistics* (``_fusion_rows``): storage allocated, nothing recorded (``_PendingStorage``,
  ``_PENDING``). A lazy array whose DAG reads them is materialised together with them as one
  row kernel when they form a row pattern (``record.fuse``); anything else that reads one
  (``ptr``, :func:`leaf_ptr`, a flush of a storage it reads, :func:`materialize_all`) first
  computes it with its own reduction (``resolve_pending``).
* Copies into existing arrays (``x[...] = a * b``, in-place operators ``a += b * c`` on an array
  with storage) evaluate the DAG straight into the destination (the write's launch is kept per
  structure and layout, :func:`write_fused`). A lazy operand that reads the destination's
  memory is computed first (as every reader of memory about to change is); a write with no
  lazy operand left (``a += b``) records the eager kernel.
* An in-place operator on a *lazy* array (``y = a * 2; y += 1``) just extends its DAG: nobody
  can have seen its storage yet, and other DAGs holding the old node keep the old value.
* A DAG is bounded: at most :data:`MAX_NODES` op nodes, ``max_inputs()`` distinct leaf arrays
  (storage bindings) and :data:`MAX_SCALARS` scalars; an op whose DAG would grow past a bound
  first materialises its lazy operands and starts a new DAG on them.
* Intermediates the user keeps are materialised on their own only when observed; a DAG built
  on one before that recomputes it from the leaves (no sharing of results across kernels:
  recomputation costs arithmetic, never correctness). An intermediate that is broadcast in
  the DAG (``exp(v)[None, :] * m`` with ``v`` 1-D) is evaluated once per output element.

Kernels are cached by the DAG's *structure* (op expressions, dtypes, how nodes connect, which
operands are arrays or scalars; never pointers, strides or scalar values): a loop repeating a
chain compiles once (``fused_program`` caches the WGSL text, the pipeline cache the kernel).
Each node carries that structure as a small int (:func:`_structure_key`, interned one node at
a time from its op, its operands' keys and how their leaves map to the DAG's), with its leaves
and scalar values in kernel order, so materialising a DAG whose structure was seen before is a
dictionary lookup and a launch (:func:`materialize_into`): no walk over the DAG. (A DAG
with a node over two different DAG operands has no key: :func:`program` linearises it, finding
the nodes they share.)

Host time. The binary operators (``_dispatch.binary_operator``) go straight from the cached
dtype resolution to :func:`lazy_binary`, which builds the usual operand combinations (a DAG and
a scalar or a leaf, a leaf and a scalar) from the operand's leaves, key and scalars without
copying them when nothing is added, and registers the array without a lock (below).

Write hazards. A lazy array reads its leaves when it is materialised, so a write into a leaf's
storage before then would change its value. Every storage a live lazy array reads is
*watched*: its class becomes :class:`_WatchedStorage`, whose ``ptr`` attribute first
materialises every live lazy array reading that storage and then unwatches it. Every kernel
and copy reaches device memory through ``storage.ptr`` (``GpuArray._ptr``), so any write --
``a += 1``, ``a[...] = v``, a write into another view of the same storage, ``out=`` of any op,
user kernels -- is preceded by the materialisation of the readers. The fused paths read leaf
pointers without triggering this (reads do not conflict); other readers of a watched storage
trigger it too (conservative: an early kernel, never a wrong value). The registry is that class
flag on each watched storage plus one list of weak references to the lazy arrays (``_LIVE``,
swept of dead and materialised ones when it has doubled), scanned when a watched storage is
touched: an op pays one ``append``, not one entry per leaf storage nor a callback when it dies.

Thread safety: materialisation, flushes and sweeps are serialised by one re-entrant lock (never
held while waiting for the device). Registering a new lazy array takes no lock: it appends its
reference, then watches its leaves' storages, and a flush rescans after unwatching until a scan
finds no reader (see :func:`_register`), so a reader registered concurrently is either found
or re-watches the storage itself.

This module holds the lazy array, its storages, the registry of live lazy arrays and
materialisation; the parts live in ``_fusion_node`` (the node and its structure keys),
``_fusion_code`` (a DAG's kernel description) and ``_fusion_build`` (new lazy arrays from ops:
``make_node``, ``lazy_op``, ``lazy_binary``, ``lazy_unary``, ``rebind``).
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading
import weakref
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from . import _runtime
from ._array_object import GpuArray, _Storage, runtime_of
from ._backend import config, ops_elementwise
from ._backend.ops_elementwise import ArrayOperand, ScalarOperand
from ._backend.wgsl_types import storage_type
from ._fusion_code import fused_code, linear_structure, program
from ._fusion_node import _leaf_key, _new_node, _Node, op_key  # (_leaf_key, _new_node: for _fusion_rows)
from ._overlap import conflicts
from ._runtime import backend, compute_type, max_storage_bindings, translate
from ._shapes import broadcast_strides, contiguous_strides, is_contiguous, size_of

__all__ = [
    "LazyArray",
    "MAX_NODES",
    "MAX_SCALARS",
    "fusion",
    "fused_code",
    "fusion_enabled",
    "is_lazy",
    "copy_eager",
    "materialize",
    "materialize_all",
    "materialize_into",
    "max_inputs",
    "add_pending",
    "bound_pending",
    "linear_structure",
    "op_key",
    "pending_record",
    "program",
    "resolve_pending",
    "settle_pending",
    "set_fusion",
    "write_fused",
]

#: Op nodes of one fused kernel (bigger DAGs are cut: the lazy operands are materialised).
MAX_NODES = 128
#: Weak Python scalars of one fused kernel (each is one or two parameter words).
MAX_SCALARS = 128
#: Distinct leaf arrays of one fused kernel, at most (see :func:`max_inputs`).
MAX_INPUTS = 8


_enabled: bool = config.value("fusion")


def fusion_enabled() -> bool:
    """Whether new elementwise operations are fused (lazy)."""
    return _enabled


def set_fusion(enabled: bool) -> bool:
    """Turn elementwise fusion on or off for operations issued from now on (process-wide);
    returns the previous setting. Lazy arrays that already exist stay lazy until observed.
    ``TypeError`` for a non-bool."""
    global _enabled
    if not isinstance(enabled, bool):
        raise TypeError(f"set_fusion expects a bool, not {type(enabled).__name__}")
    previous, _enabled = _enabled, enabled
    return previous


@contextlib.contextmanager
def fusion(enabled: bool = True) -> Iterator[None]:
    """Context manager: fusion on (or off with ``fusion(False)``) inside the block, the previous
    setting restored after it (``with gt.fusion(False): ...``)."""
    previous = set_fusion(enabled)
    try:
        yield
    finally:
        set_fusion(previous)


@functools.cache
def max_inputs() -> int:
    """Distinct leaf arrays one fused kernel may bind: ``MAX_INPUTS``, fewer when the adapter
    has few storage bindings per stage (a fused reduction binds up to 4 buffers of its own)."""
    limit = max_storage_bindings()
    return max(1, min(MAX_INPUTS, limit - 5))


# ---------------------------------------------------------------------------------------------
# the DAG
# ---------------------------------------------------------------------------------------------
_STORAGE_SLOT = GpuArray.__dict__["_storage"]  # the slot itself (LazyArray shadows the name)
_PTR_SLOT = _Storage.__dict__["ptr"]


class LazyArray(GpuArray):
    """A GpuArray whose value is a pending elementwise expression (see the module docstring).

    Same slots as GpuArray (so materialising switches the object's class in place); the storage
    slot holds the DAG's root :class:`_Node` until then.
    """

    __slots__ = ()

    @property  # type: ignore[override]
    def _storage(self) -> _Storage:
        """Materialise (one fused kernel) and return the storage."""
        materialize(self)
        return _STORAGE_SLOT.__get__(self)

    @_storage.setter
    def _storage(self, value: Any) -> None:
        # GpuArray._new through a LazyArray's classmethods (``x._view``) gives a plain array
        _STORAGE_SLOT.__set__(self, value)
        if not isinstance(value, _Node):
            self.__class__ = GpuArray

    def __reduce_ex__(self, protocol: Any) -> Any:
        # copy.copy & co. copy slots: materialise first, so no copy holds an untracked DAG
        materialize(self)
        return self.__reduce_ex__(protocol)


#: The storage slot under another name: ``x._node`` is the root node of a lazy array ``x``
#: (a plain attribute read: the slot's descriptor, not the materialising ``_storage`` property).
LazyArray._node = _STORAGE_SLOT  # type: ignore[attr-defined]
LazyArray.__name__ = LazyArray.__qualname__ = "GpuArray"
LazyArray.__doc__ = GpuArray.__doc__


class _WatchedStorage(_Storage):
    """A storage that live lazy arrays read: reading ``ptr`` (which any kernel writing it must)
    first materialises them, then turns the object back into a plain ``_Storage``."""

    __slots__ = ()

    @property  # type: ignore[override]
    def ptr(self) -> int:
        _flush_storage(self)
        return _PTR_SLOT.__get__(self)


class _PendingStorage(_Storage):
    """The storage of a *pending row statistic* (``_fusion_rows``): allocated, not yet written.
    Reading ``ptr`` computes it first (its record's ``resolve``); a fused kernel that reads it
    as a leaf either computes it in the same kernel (the row kernels) or resolves it through
    :func:`leaf_ptr`."""

    __slots__ = ()

    @property  # type: ignore[override]
    def ptr(self) -> int:
        resolve_pending(self)
        return self.ptr


class _ResolvingStorage(_Storage):
    """A pending statistic's storage while ``resolve_pending`` records its reduction (with
    ``_LOCK`` held): the resolving thread reads its pointer (the reduction writes through it);
    any other thread first waits for ``_LOCK``, i.e. until that reduction is recorded, so no
    kernel or readback of another thread can be recorded before the write it reads."""

    __slots__ = ()

    @property  # type: ignore[override]
    def ptr(self) -> int:
        with _LOCK:
            if type(self) is _ResolvingStorage:  # only the resolving thread (it holds _LOCK)
                return _PTR_SLOT.__get__(self)
        return self.ptr


_LOCK = threading.RLock()

#: pending statistic storage -> its record (an object with ``resolve(storage)``, ``reads(storage)``
#: and ``fuse(node, dst) -> bool``; see ``_fusion_rows``). Weak keys: a statistic nobody can
#: read any more is dropped with its storage.
_PENDING: weakref.WeakKeyDictionary[_Storage, Any] = weakref.WeakKeyDictionary()
#: ``_PENDING``'s dict (weak references of the storages -> records): read-only lookups.
_PENDING_DATA = _PENDING.data


def add_pending(storage: _Storage, record: Any) -> None:
    """Make ``storage`` (new, unwatched) a pending statistic computed by ``record``."""
    storage.__class__ = _PendingStorage
    _PENDING[storage] = record


def pending_record(storage: _Storage) -> Any:
    """The record of a pending statistic's storage, or None."""
    return _PENDING_DATA.get(_weakref(storage))  # (``_PENDING.get`` without its call)


def settle_pending(*storages: _Storage) -> None:
    """Pending statistics' storages now hold their values (written by a kernel): drop their
    records; the storages stay watched (lazy arrays may read them)."""
    with _LOCK:
        for storage in storages:
            _PENDING_DATA.pop(_weakref(storage), None)  # (``_PENDING.pop`` without its call)
            if type(storage) is _PendingStorage:
                storage.__class__ = _WatchedStorage


def resolve_pending(storage: _Storage) -> None:
    """Compute a pending statistic into its storage now (its own reduction kernel); the
    reduction's exceptions propagate and leave it pending."""
    with _LOCK:  # (a _ResolvingStorage found here is this thread's own: nothing to do)
        record = _PENDING.pop(storage, None)
        if type(storage) is not _PendingStorage:
            return
        storage.__class__ = _ResolvingStorage  # (the reduction writes it through ``ptr``)
        if record is not None:
            try:
                record.resolve(storage)
            except BaseException:  # still pending: a later read raises again
                storage.__class__ = _PendingStorage
                _PENDING[storage] = record
                raise
        storage.__class__ = _WatchedStorage  # (lazy arrays may read it)

#: Weak references to the lazy arrays made so far: ``synchronize()`` and write hazards look
#: here. References to arrays that died or were materialised stay until the next sweep
#: (``_sweep``), which runs every ``fusion_window`` registrations (without a window: when the
#: list has doubled, from ``_SWEEP_MIN`` on; a synchronize empties it): an op pays one ``append``, not
#: a callback when its array dies. Registering takes no lock (see ``_register``); everything
#: else that changes the list holds ``_LOCK`` and only replaces the items it scanned, so a
#: concurrent ``append`` is never lost.
_LIVE: list[weakref.ref[Any]] = []
#: With a ``fusion_window`` (a knob; 0, the default: none), lazy arrays still alive when that
#: many newer ones have been made are materialised, in the order they were made, by ``_sweep``:
#: a loop that keeps its results (``held.append(a + b)``) records each kernel a few calls after
#: its op instead of every one at the next synchronisation. A DAG made later reads such an array
#: as a leaf; one that dies unread within the window is never computed. (On the H200 a window of
#: 32 did not shorten the harness's batches: their small ops are bound by the host's recording.)
_SWEEP_MIN = 64
_weakref = weakref.ref
_sweep_at = _SWEEP_MIN


def _live(refs: list[weakref.ref[Any]] | None = None) -> list[LazyArray]:
    """The live lazy arrays (of ``refs``, default ``_LIVE``)."""
    arrays = []
    for ref in _LIVE if refs is None else refs:
        x = ref()
        if x is not None and type(x) is LazyArray:
            arrays.append(x)
    return arrays


def _sweep() -> None:
    """Materialise the live lazy arrays older than the newest ``fusion_window`` references and
    drop those references (of arrays that died or were materialised; one whose materialisation
    failed stays lazy, and raises where it is read or at the next synchronisation)."""
    global _sweep_at
    with _LOCK:
        n = len(_LIVE)
        if n < _sweep_at:
            return  # (another thread swept)
        window = int(config.value("fusion_window"))
        if window <= 0:  # no window: drop the dead and materialised ones only
            live = [_weakref(x) for x in _live(_LIVE[:n])]
            _LIVE[:n] = live  # (appends made meanwhile stay, after these)
            _sweep_at = max(_SWEEP_MIN, 2 * len(live))
            return
        cut = max(0, n - window)
        failed = []
        for x in _live(_LIVE[:cut]):
            try:
                materialize(x)
            except Exception:  # noqa: BLE001 - reported where the array is used
                failed.append(_weakref(x))
        _LIVE[:cut] = failed  # (appends made meanwhile stay, after these)
        _sweep_at = max(2 * window, len(_LIVE) + window)


def _register(arr: LazyArray, leaves: Sequence[GpuArray]) -> None:
    """Make the new lazy array ``arr`` reading ``leaves`` known to write hazards: a reference
    in ``_LIVE``, then every leaf's storage watched. No lock (an op's host time): a flush
    (``_flush_storage``, lock held) scans ``_LIVE``, materialises the readers it found,
    unwatches the storage and scans again, until a scan finds none. An array registered
    after a flush's first scan is therefore found by a later one, unless it was registered
    after the last scan, after the unwatch: then its own watch below comes later still and
    leaves the storage watched. (Each step is one operation under the GIL.)"""
    _LIVE.append(_weakref(arr))
    for leaf in leaves:
        storage = leaf._storage  # (leaves are arrays with storage)
        if type(storage) is _Storage:
            storage.__class__ = _WatchedStorage
    if len(_LIVE) >= _sweep_at:
        _sweep()


def is_lazy(x: Any) -> bool:
    """Whether ``x`` is a lazy (not yet computed) array."""
    return type(x) is LazyArray


def node_of(x: LazyArray) -> _Node:
    """The root node of a lazy array."""
    return x._node


def leaf_ptr(leaf: GpuArray) -> int:
    """Pointer of a leaf's element [0, ..., 0], read without triggering the write-hazard flush
    (reads do not conflict with pending readers); a pending statistic is computed first."""
    storage = leaf._storage
    if type(storage) is _PendingStorage or type(storage) is _ResolvingStorage:
        resolve_pending(storage)  # (another thread's resolution: waits until it is recorded)
    return _PTR_SLOT.__get__(storage) + leaf._offset * leaf._dtype.itemsize


_STRIDES_CACHE: dict[tuple[int, ...], tuple[int, ...]] = {}


def lazy_array(node: _Node) -> LazyArray:
    """A new lazy array holding ``node``."""
    shape = node.shape
    strides = _STRIDES_CACHE.get(shape)
    if strides is None:
        strides = tuple(contiguous_strides(shape))
        if len(_STRIDES_CACHE) < 1024:
            _STRIDES_CACHE[shape] = strides
    arr = object.__new__(LazyArray)
    arr._node = node
    arr._shape = shape
    arr._strides = strides
    arr._offset = 0
    arr._dtype = node.dtype
    _register(arr, node.leaves)
    return arr


def materialize(x: GpuArray) -> None:
    """Compute a lazy array into new storage (nothing for other arrays)."""
    if type(x) is not LazyArray:
        return
    if _runtime.multi:  # several devices: on the device of the DAG's leaves
        rt = runtime_of(x)
        if rt is not _runtime.current():
            with _runtime.use(rt):
                materialize(x)
            return
    with _LOCK:
        if type(x) is not LazyArray:
            return
        node = _STORAGE_SLOT.__get__(x)
        dtype = node.dtype
        out = GpuArray._alloc(node.shape, x._strides, dtype, math.prod(node.shape) * dtype.itemsize, False)
        materialize_into(node, out)  # every element is written
        _STORAGE_SLOT.__set__(x, _STORAGE_SLOT.__get__(out))
        x.__class__ = GpuArray


def materialize_all() -> None:
    """Materialise every live lazy array (``gt.synchronize()``)."""
    global _sweep_at
    with _LOCK:
        scanned = len(_LIVE)
        pending = _live(_LIVE[:scanned])
        # every array those references name is materialised below or dead: drop them, so an
        # idle synchronize does not scan the references of every lazy array made since a sweep
        del _LIVE[:scanned]
        _sweep_at = _SWEEP_MIN
    for k, x in enumerate(pending):
        try:
            materialize(x)
        except BaseException:
            with _LOCK:  # the arrays still lazy stay known to write hazards
                _LIVE.extend(_weakref(y) for y in pending[k:] if type(y) is LazyArray)
            raise
    if _PENDING:
        with _LOCK:
            statistics = list(_PENDING.keys())
        for storage in statistics:
            resolve_pending(storage)


#: Lazy arrays, newest first, that :func:`bound_pending` searches for readers of a statistic.
_READER_SCAN = 64


def bound_pending(limit: int, hard: int | None = None) -> None:
    """Compute the oldest pending statistic when more than ``limit`` are pending: the live lazy
    arrays among the newest ``_READER_SCAN`` that read it are materialised (a row pattern's
    output, which computes the statistic in its row kernel); when none reads it, it gets its own
    reduction, but only with more than ``hard`` pending (default ``limit``; below that it waits
    for the reader its pattern has not made yet). So a loop of row patterns (softmax written
    with ``gt`` ops) records each one a call or two after it was written, while the device runs,
    instead of all of them at the next synchronisation; the results are the same. The readers
    are looked at newest first, and the scan ends once one of them has computed the
    statistic."""
    if len(_PENDING) <= limit:
        return
    with _LOCK:
        oldest = None
        try:
            for ref in _PENDING_DATA:  # (the oldest live entry, without the keys() generator)
                oldest = ref()
                if oldest is not None:
                    break
        except RuntimeError:  # (an entry removed meanwhile by another thread)
            oldest = next(iter(_PENDING.keys()), None)
        tail = _LIVE[-_READER_SCAN:]
    if oldest is None:
        return
    for ref in reversed(tail):
        x = ref()
        if type(x) is LazyArray:
            for leaf in x._node.leaves:
                if leaf._storage is oldest:
                    materialize(x)
                    break
            if type(oldest) is not _PendingStorage:
                return
    if type(oldest) is _PendingStorage and (hard is None or len(_PENDING) > hard):
        resolve_pending(oldest)


def _flush_storage(storage: _Storage) -> None:
    """Materialise the live lazy arrays that read ``storage``, then unwatch it."""
    with _LOCK:
        if type(storage) is not _WatchedStorage:
            return
        while True:
            statistics = [st for st, record in list(_PENDING.items()) if record.reads(storage)] if _PENDING else []
            for st in statistics:
                resolve_pending(st)
            readers = [x for x in _live()
                       if any(leaf._storage is storage for leaf in x._node.leaves)]
            for x in readers:
                materialize(x)
            readers += statistics
            if not readers and type(storage) is _Storage:
                return
            storage.__class__ = _Storage  # then scan again (see _register)


def pending_count() -> int:
    """Live lazy arrays (for tests and diagnostics)."""
    with _LOCK:
        return len(_live())


# ---------------------------------------------------------------------------------------------
# launching DAGs
# ---------------------------------------------------------------------------------------------
def write_fused(node: Any, dst: GpuArray) -> None:
    """Evaluate the fused DAG ``node`` (broadcast to ``dst.shape``, cast to ``dst.dtype`` with
    the ``astype`` rules) into the array ``dst`` with one generated kernel. Lazy readers of
    ``dst``'s storage are materialised first; leaves overlapping ``dst`` with another layout are
    copied first. The launch is kept (``_FUSED``) per DAG structure and layouts of the leaves
    and of ``dst`` (:func:`_write_key`), so a repeated write only launches it. Raises
    ``ValueError`` when the shapes do not broadcast."""
    shape = dst.shape
    dst_ptr = dst._ptr  # the write hazard: lazy readers of dst's storage are computed first
    found = _write_key(node, dst)
    be = backend()
    if found is not None:
        key, values = found
        entry = _FUSED.get(key)
        if entry is None or entry.backend is not be:
            entry = _fused_plan(node, dst, be) if node.skey is not None else None
            if entry is not None:
                if entry.call is None:
                    return
                _keep_fused(key, entry)
        if entry is not None:
            ptrs = [leaf_ptr(leaf) for leaf in node.leaves]
            ptrs.append(dst_ptr)
            try:
                entry.call.launch(be, ptrs, values)
            except Exception as exc:
                raise translate(exc) from None
            return
    leaves, scalars, lets, expr, expr_type = program(node, dst.dtype)
    operands: list[Any] = []
    casts: list[str] = []
    copies: list[GpuArray] = []  # (alive until the kernel is recorded)
    for leaf in leaves:
        strides = broadcast_strides(leaf.shape, leaf._strides, shape)
        if conflicts(leaf, strides, dst):
            leaf = copy_eager(leaf)
            copies.append(leaf)
            strides = broadcast_strides(leaf.shape, leaf._strides, shape)
        operands.append(ArrayOperand(leaf_ptr(leaf), leaf.dtype.name, tuple(strides)))
        casts.append(compute_type(leaf.dtype))
    for value, dtype in scalars:
        operands.append(ScalarOperand(value, dtype.name))
        casts.append(compute_type(dtype))
    out = ArrayOperand(dst_ptr, dst.dtype.name, tuple(dst._strides))
    try:
        plan = ops_elementwise.launch_plan(be, expr, expr_type, operands, casts, out, shape, lets=lets)
        if plan is not None:
            plan.run(be, operands, out)
    except Exception as exc:
        raise translate(exc) from None
    if found is not None and plan is not None:  # (no leaf was copied)
        _keep_fused(found[0], _FusedPlan(plan, be))


def _write_key(node: Any, dst: GpuArray) -> tuple[tuple[Any, ...], Sequence[Any]] | None:
    """(the ``_FUSED`` key of writing ``node`` into ``dst``, the scalar values in kernel order),
    or None when a leaf overlaps ``dst`` with another layout (``write_fused`` copies it first).
    The key: ``_WRITE_TAG``, the DAG's structure (its structure key, or without one the
    description of ``_fusion_code.linear_structure``), the node's shape, ``dst``'s dtype, per
    leaf its layout, then ``dst``'s shape and strides."""
    leaves = node.leaves
    storage = dst._storage
    shape = dst._shape
    for leaf in leaves:
        if leaf._storage is storage and conflicts(leaf, broadcast_strides(leaf._shape, leaf._strides, shape), dst):
            return None
    layouts = tuple([(leaf._dtype.name, leaf._shape, leaf._strides) for leaf in leaves])
    if node.skey is not None:
        structure: Any = node.skey
        values: Sequence[Any] = node.scalars
    else:
        structure, scalars = linear_structure(node)
        values = [value for value, _ in scalars]
    return (_WRITE_TAG, structure, node.shape, dst._dtype.name, layouts, shape, dst._strides), values


class _FusedPlan(NamedTuple):
    """The kept launch of materialising a DAG of one structure into a new array: the backend's
    ``ops_elementwise.ElementwiseCall`` (None: nothing to record) and the backend it is for."""

    call: Any
    backend: Any


#: (structure key, out dtype name, per leaf: dtype name, shape, strides; shape) -> the
#: ``_FusedPlan`` of materialising a DAG with that structure into a new array
#: (``materialize_into``).
_FUSED: dict[tuple[Any, ...], _FusedPlan] = {}
_FUSED_SIZE = 4096
#: The first item of the ``_FUSED`` keys of writes into existing arrays (``_write_key``).
_WRITE_TAG = "write"
_FUSED_LOCK = threading.Lock()


def _keep_fused(key: tuple[Any, ...], entry: _FusedPlan) -> None:
    """``_FUSED[key] = entry``, the oldest entry dropped first when the cache is full."""
    with _FUSED_LOCK:
        if len(_FUSED) >= _FUSED_SIZE:
            _FUSED.pop(next(iter(_FUSED)), None)
        _FUSED[key] = entry


def materialize_into(node: Any, dst: GpuArray) -> None:
    """``write_fused(node, dst)`` for a *new* C-contiguous ``dst`` of the node's shape and dtype
    (materialising a lazy array): nothing can overlap ``dst`` or read it. A DAG with a structure
    key (``_fusion._Node.skey``) finds its launch plan by that key, the leaves' layouts and the
    shape, and launches it with the pointers and scalar values: no walk over the DAG."""
    leaves = node.leaves
    for leaf in leaves:
        storage = leaf._storage
        if type(storage) is _PendingStorage:  # a row statistic: one row kernel if it fits
            record = _PENDING_DATA.get(_weakref(storage))
            if record is not None and record.fuse(node, dst):
                return
            break
    skey = node.skey
    if skey is None:
        write_fused(node, dst)
        return
    be = backend()
    key = (skey, dst._dtype.name, tuple([(leaf._dtype.name, leaf._shape, leaf._strides) for leaf in leaves]),
           dst._shape)
    entry = _FUSED.get(key)
    if entry is None or entry.backend is not be:
        entry = _fused_plan(node, dst, be)
        if entry.call is None:
            return
        _keep_fused(key, entry)
    ptrs = [leaf_ptr(leaf) for leaf in leaves]
    ptrs.append(dst._ptr)
    try:
        entry.call.launch(be, ptrs, node.scalars)
    except Exception as exc:
        raise translate(exc) from None


def _fused_plan(node: Any, dst: GpuArray, be: Any) -> _FusedPlan:
    """The ``_FusedPlan`` of ``materialize_into(node, dst)`` (see there)."""
    lets, expr, expr_type, inputs = fused_code(node, dst.dtype)
    shape = dst.shape
    operands: list[Any] = []
    for leaf in node.leaves:
        operands.append(ArrayOperand(0, leaf.dtype.name, tuple(broadcast_strides(leaf.shape, leaf._strides, shape))))
    for value, name in zip(node.scalars, inputs[len(node.leaves):]):
        operands.append(ScalarOperand(value, name))
    casts = [storage_type(name).compute for name in inputs]
    try:
        plan = ops_elementwise.launch_plan(be, expr, expr_type, operands, casts,
                                           ArrayOperand(0, dst.dtype.name, tuple(dst._strides)), shape, lets=lets)
    except Exception as exc:
        raise translate(exc) from None
    return _FusedPlan(plan, be)


def copy_eager(x: GpuArray) -> GpuArray:
    """A contiguous copy of the array ``x`` recorded now (overlap handling: never lazy; reads
    ``x`` without the write-hazard flush, see ``_fusion``)."""
    materialize(x)
    out = GpuArray._empty(x.shape, x.dtype, zero=False)  # fully overwritten
    if size_of(x.shape):
        try:
            if is_contiguous(x.shape, x._strides):
                backend().copy_dtod(out._ptr, leaf_ptr(x), size_of(x.shape) * x.dtype.itemsize)
            else:
                ops_elementwise.copy_strided(
                    backend(), ArrayOperand(leaf_ptr(x), x.dtype.name, tuple(x._strides)),
                    ArrayOperand(out._ptr, out.dtype.name, tuple(out._strides)), x.shape
                )
        except Exception as exc:
            raise translate(exc) from None
    return out
