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
* Copies into existing arrays (``x[...] = a * b``, in-place operators ``a += b * c`` on an array
  with storage) evaluate the DAG straight into the destination.
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

Write hazards. A lazy array reads its leaves when it is materialised, so a write into a leaf's
storage before then would change its value. Every storage a live lazy array reads is
*watched*: its class becomes :class:`_WatchedStorage`, whose ``ptr`` attribute first
materialises every live lazy array reading that storage and then unwatches it. Every kernel
and copy reaches device memory through ``storage.ptr`` (``GpuArray._ptr``), so any write --
``a += 1``, ``a[...] = v``, a write into another view of the same storage, ``out=`` of any op,
user kernels -- is preceded by the materialisation of the readers. The fused paths read leaf
pointers without triggering this (reads do not conflict); other readers of a watched storage
trigger it too (conservative: an early kernel, never a wrong value). The registry is that class
flag on each watched storage plus one weak table of the live lazy arrays (``_LIVE``), scanned
when a watched storage is touched: an op pays one table entry, not one entry per leaf storage.

Thread safety: materialisation and the watch registry are serialised by one re-entrant lock
(never held while waiting for the device).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

from . import _dispatch
from ._array_object import GpuArray, _Storage
from ._dtypes import DType
from ._shapes import contiguous_strides

__all__ = [
    "LazyArray",
    "MAX_NODES",
    "MAX_SCALARS",
    "fusion",
    "fusion_enabled",
    "is_lazy",
    "materialize",
    "materialize_all",
    "max_inputs",
    "set_fusion",
]

#: Op nodes of one fused kernel (bigger DAGs are cut: the lazy operands are materialised).
MAX_NODES = 64
#: Weak Python scalars of one fused kernel (each is one or two parameter words).
MAX_SCALARS = 64
#: Distinct leaf arrays of one fused kernel, at most (see :func:`max_inputs`).
MAX_INPUTS = 8


def _env_enabled() -> bool:
    value = os.environ.get("GPUTENSOR_FUSION", "1").strip().lower()
    return value not in ("0", "false", "off", "no")


_enabled: bool = _env_enabled()


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
    limit = _dispatch.max_storage_bindings()
    return max(1, min(MAX_INPUTS, limit - 5))


# ---------------------------------------------------------------------------------------------
# the DAG
# ---------------------------------------------------------------------------------------------
class _Scalar:
    """A weak Python scalar operand, passed by value in the kernel parameters."""

    __slots__ = ("value", "dtype")

    def __init__(self, value: Any, dtype: DType) -> None:
        self.value = value
        self.dtype = dtype


def _leaf_key(leaf: GpuArray) -> tuple[Any, ...]:
    """Leaves reading the same elements are bound once."""
    return (id(leaf._storage), leaf._offset, leaf._shape, leaf._strides, leaf._dtype)


class _Node:
    """One elementwise op of a DAG (immutable).

    ``op``: ``(expr, casts, expr_type, result dtype name)`` as ``fused_program`` takes them;
    ``operands``: ``_Node``, leaf ``GpuArray`` (with storage) or ``_Scalar``; ``leaves`` /
    ``leaf_keys``: the distinct leaf arrays of the whole DAG, in first-use order;
    ``size``: op nodes of the DAG (shared sub-DAGs counted once per use: an upper bound);
    ``n_scalars``: scalar operands of the DAG.
    """

    __slots__ = ("op", "dtype", "shape", "operands", "leaves", "leaf_keys", "size", "n_scalars")

    def __init__(self, op: tuple[str, tuple[str, ...], str, str], dtype: DType, shape: tuple[int, ...],
                 operands: tuple[Any, ...], leaves: tuple[GpuArray, ...], leaf_keys: tuple[Any, ...],
                 size: int, n_scalars: int) -> None:
        self.op = op
        self.dtype = dtype
        self.shape = shape
        self.operands = operands
        self.leaves = leaves
        self.leaf_keys = leaf_keys
        self.size = size
        self.n_scalars = n_scalars


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


_LOCK = threading.RLock()


class _Ref(weakref.ref):
    """A weak reference to a lazy array that knows its key in ``_LIVE`` (arrays are unhashable)."""

    __slots__ = ("key",)


def _forget(ref: _Ref) -> None:
    if _LIVE.get(ref.key) is ref:
        _LIVE.pop(ref.key, None)


#: Every live lazy array, by id, weakly: synchronize() and write hazards look here.
_LIVE: dict[int, _Ref] = {}


def _live() -> list[LazyArray]:
    """The live lazy arrays (lock held)."""
    while True:
        try:
            refs = list(_LIVE.values())
            break
        except RuntimeError:  # a weakref callback (garbage collection) changed it meanwhile
            continue
    arrays = []
    for ref in refs:
        x = ref()
        if x is not None and type(x) is LazyArray:
            arrays.append(x)
    return arrays


def is_lazy(x: Any) -> bool:
    """Whether ``x`` is a lazy (not yet computed) array."""
    return type(x) is LazyArray


def node_of(x: LazyArray) -> _Node:
    """The root node of a lazy array."""
    return _STORAGE_SLOT.__get__(x)


def leaf_ptr(leaf: GpuArray) -> int:
    """Pointer of a leaf's element [0, ..., 0], read without triggering the write-hazard flush
    (reads do not conflict with pending readers)."""
    return _PTR_SLOT.__get__(leaf._storage) + leaf._offset * leaf._dtype.itemsize


def _operand(x: Any) -> Any:
    """What a DAG holds for an op argument (GpuArray or ``(value, dtype)`` scalar pair)."""
    if type(x) is LazyArray:
        return _STORAGE_SLOT.__get__(x)
    if isinstance(x, GpuArray):
        return x
    return _Scalar(x[0], x[1])


def _combine(operands: Sequence[Any]) -> tuple[tuple[GpuArray, ...], tuple[Any, ...], int, int]:
    """(leaves, leaf keys, size, scalars) of a new node over ``operands``."""
    leaves: list[GpuArray] = []
    keys: list[Any] = []
    size = 1
    n_scalars = 0
    seen: list[_Node] = []
    for x in operands:
        if type(x) is _Node:
            if any(x is s for s in seen):
                continue
            seen.append(x)
            size += x.size
            n_scalars += x.n_scalars
            for leaf, key in zip(x.leaves, x.leaf_keys):
                if key not in keys:
                    keys.append(key)
                    leaves.append(leaf)
        elif type(x) is _Scalar:
            n_scalars += 1
        else:
            key = _leaf_key(x)
            if key not in keys:
                keys.append(key)
                leaves.append(x)
    return tuple(leaves), tuple(keys), size, n_scalars


def make_node(expr: str, casts: Sequence[str], expr_type: str, dtype: DType, shape: tuple[int, ...],
              args: Sequence[Any]) -> _Node:
    """A node applying ``expr`` to ``args`` (GpuArrays, lazy or not, and ``(value, dtype)``
    scalar pairs), already validated by the caller. Lazy arguments whose DAG would make the new
    one exceed a bound are materialised first."""
    operands = [_operand(a) for a in args]
    leaves, keys, size, n_scalars = _combine(operands)
    if size > MAX_NODES or len(leaves) > max_inputs() or n_scalars > MAX_SCALARS:
        for a in args:
            if type(a) is LazyArray:
                materialize(a)
        operands = [_operand(a) for a in args]
        leaves, keys, size, n_scalars = _combine(operands)
    op = (expr, tuple(casts), expr_type, dtype.name)
    return _Node(op, dtype, shape, tuple(operands), leaves, keys, size, n_scalars)


def _watch(node: _Node) -> None:
    for leaf in node.leaves:
        storage = _STORAGE_SLOT.__get__(leaf)
        if type(storage) is _Storage:
            storage.__class__ = _WatchedStorage


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
    _STORAGE_SLOT.__set__(arr, node)
    arr._shape = shape
    arr._strides = strides
    arr._offset = 0
    arr._dtype = node.dtype
    ref = _Ref(arr, _forget)
    ref.key = key = id(arr)
    with _LOCK:
        _watch(node)
        _LIVE[key] = ref
    return arr


def rebind(x: LazyArray, node: _Node) -> None:
    """Give the lazy array ``x`` a new value ``node`` (an in-place operator on a lazy array;
    shape and dtype unchanged, checked by the caller)."""
    with _LOCK:
        if type(x) is not LazyArray:  # materialised meanwhile (another thread)
            _dispatch.write_fused(node, x)
            return
        _watch(node)
        _STORAGE_SLOT.__set__(x, node)


# ---------------------------------------------------------------------------------------------
# materialisation
# ---------------------------------------------------------------------------------------------
class _Linearizer:
    """Post-order numbering of a DAG's nodes (see :func:`program`). A plain object rather than a
    recursive closure: a closure referring to itself is a reference cycle, which would keep the
    DAG's leaf arrays (device memory) alive until the cyclic garbage collector runs."""

    __slots__ = ("root", "leaf_index", "key_index", "n_leaves", "scalars", "entries", "refs")

    def __init__(self, root: _Node) -> None:
        self.root = root
        self.leaf_index = {id(leaf): k for k, leaf in enumerate(root.leaves)}
        self.key_index: dict[Any, int] | None = None
        self.n_leaves = len(root.leaves)
        self.scalars: list[_Scalar] = []
        self.entries: list[tuple[Any, list[int]]] = []
        self.refs: dict[int, int] = {}  # id(node) -> -(position in entries + 1)

    def visit(self, nd: _Node) -> int:
        operand_refs = []
        for x in nd.operands:
            kind = type(x)
            if kind is _Node:
                ref = self.refs.get(id(x))
                operand_refs.append(ref if ref is not None else self.visit(x))
            elif kind is _Scalar:
                self.scalars.append(x)
                operand_refs.append(self.n_leaves + len(self.scalars) - 1)
            else:
                k = self.leaf_index.get(id(x))
                if k is None:  # another view object of the same elements
                    if self.key_index is None:
                        self.key_index = {key: j for j, key in enumerate(self.root.leaf_keys)}
                    k = self.key_index[_leaf_key(x)]
                operand_refs.append(k)
        self.entries.append((nd.op, operand_refs))
        ref = -len(self.entries)
        self.refs[id(nd)] = ref
        return ref


def program(node: _Node, out_dtype: DType | None = None, *,
            round_root: bool = False) -> tuple[tuple[Any, ...], tuple[_Scalar, ...], str, str, str]:
    """Linearise the DAG of ``node`` (cast to ``out_dtype`` if given and different) into
    ``(leaves, scalars, lets, expr, expr_type)``: kernel inputs are the leaves, then the
    scalars, named ``x0, x1, ...`` in that order; ``lets``/``expr`` from ``fused_program``
    (cached by the structure: op expressions, dtypes, connections, not the values)."""
    lin = _Linearizer(node)
    lin.visit(node)
    scalars, entries = lin.scalars, lin.entries
    n_inputs = lin.n_leaves + len(scalars)
    nodes = [(op[0], op[1], op[2], op[3], tuple(r if r >= 0 else n_inputs - r - 1 for r in operand_refs))
             for op, operand_refs in entries]
    if out_dtype is not None and out_dtype != node.dtype:
        compute = _dispatch.compute_type(out_dtype)
        nodes.append(("x0", (compute,), compute, out_dtype.name, (n_inputs + len(entries) - 1,)))
    leaves = node.leaves
    inputs = tuple([leaf._dtype.name for leaf in leaves] + [s.dtype.name for s in scalars])
    lets, expr, expr_type = _dispatch.fused_program(inputs, tuple(nodes), round_root)
    return leaves, tuple(scalars), lets, expr, expr_type


def materialize(x: GpuArray) -> None:
    """Compute a lazy array into new storage (nothing for other arrays)."""
    if type(x) is not LazyArray:
        return
    with _LOCK:
        if type(x) is not LazyArray:
            return
        node = _STORAGE_SLOT.__get__(x)
        out = GpuArray._empty(node.shape, node.dtype, zero=False)  # every element is written
        _dispatch.write_fused(node, out)
        _STORAGE_SLOT.__set__(x, _STORAGE_SLOT.__get__(out))
        x.__class__ = GpuArray
        ref = _LIVE.get(id(x))
        if ref is not None and ref() is x:
            del _LIVE[id(x)]


def materialize_all() -> None:
    """Materialise every live lazy array (``gt.synchronize()``)."""
    with _LOCK:
        pending = _live()
    for x in pending:
        materialize(x)


def _flush_storage(storage: _Storage) -> None:
    """Materialise the live lazy arrays that read ``storage``, then unwatch it."""
    with _LOCK:
        if type(storage) is not _WatchedStorage:
            return
        readers = [x for x in _live()
                   if any(_STORAGE_SLOT.__get__(leaf) is storage for leaf in _STORAGE_SLOT.__get__(x).leaves)]
        for x in readers:
            materialize(x)
        storage.__class__ = _Storage


def pending_count() -> int:
    """Live lazy arrays (for tests and diagnostics)."""
    with _LOCK:
        return len(_live())
