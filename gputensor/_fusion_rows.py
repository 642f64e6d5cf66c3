"""Row fusion: a reduction fused with the elementwise work before it and the broadcast work
after it, in one generated row kernel.

With fusion on, ``gt.sum``, ``gt.mean``, ``gt.max`` and ``gt.min`` of a real floating array
with ``keepdims=True`` (over any axes, the result of the input's dtype) return a *pending row
statistic* (:func:`lazy_statistic`): an array with its storage allocated but not yet written
(``_fusion._PendingStorage``) and a :class:`_RowStat` record holding the reduction: its kind,
its axes and its input (the elementwise DAG of a lazy input, else the input array). Nothing is
recorded yet, and the input's leaves are watched as lazy arrays' leaves are (a write to them
first computes the statistic).

When a lazy elementwise array whose DAG reads pending statistics is materialised
(``_fusion.materialize_into``), :meth:`_RowStat.fuse` looks for the row pattern: every pending
statistic reached (through the DAG's leaves and the statistics' inputs, recursively) reduces
the same axes of inputs of one full shape ``S``, and the output has shape ``S`` or ``S`` with
the reduced axes kept as 1 (``logsumexp``). Then one kernel (``_backend/ops_row_fusion``)
computes per row the statistics in order (chained ones included: ``max`` then
``sum(exp(x - max))``; ``mean`` then ``mean((x - mean) ** 2)``), stores each into its own
storage (so a statistic the user kept is computed once, and is settled), and writes the
output: the row is read once when it fits in registers, and the elementwise values of a
statistic that the output reads again (softmax: ``e = exp(x - m)`` in ``e / sum(e)``) are kept
there instead of recomputed (sources without scalars, so the plan cache's scalar order holds),
and the output's sub-DAGs that are constant along the row (``log(sum)``, ``sqrt(var + eps)``)
are evaluated once per row. ``softmax``, ``log_softmax``,
``layer_norm`` and ``logsumexp`` written with ``gt`` ops are one dispatch.

Anything else falls back to the eager path unchanged: the statistic is computed by its own
reduction kernel (with its elementwise prologue, ``_dispatch.reduce_fused``) when anything
reads it (``ptr``: readback, any other kernel, a fused kernel through ``_fusion.leaf_ptr``,
``gt.synchronize()``). The fallback cases: reduced axes that do not merge into one strided run
for every operand, more than 4 row dims after merging, statistics of different axes or shapes,
mixed float32/float64 accumulation, more operands than storage bindings, an operand larger
than one binding window, fewer than ``MIN_STREAMED_ROWS`` rows too long for registers.

Row kernels are cached by their generated text's inputs (``ops_row_fusion.row_fusion_defines``
on the spec); the pattern is walked at each materialisation (one walk per fused row kernel).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from . import _dispatch, _fusion
from ._array_object import GpuArray, _Storage
from ._backend import config, ops_reduce, ops_row_fusion
from ._backend.layout import extent, merge_dims
from ._backend.wgsl_types import storage_type
from ._dtypes import DType
from ._runtime import backend, max_storage_bindings, translate
from ._shapes import broadcast_strides, contiguous_strides

__all__ = ["STATISTICS", "StatPlan", "lazy_statistic", "pending_statistic", "stat_plan"]

#: Reductions that may be pending row statistics.
STATISTICS = ("sum", "mean", "max", "min")
#: Most statistics one row kernel computes.
MAX_STATISTICS = 8
#: Pending statistics beyond which a new one first has the oldest computed by the live lazy
#: arrays that read it (its pattern's output: one row kernel); one that nothing reads yet waits
#: until ``MAX_STATISTICS - 1`` are pending, then gets its own reduction. So a pattern of up to
#: ``EARLY_PENDING + 1`` statistics is one kernel whatever the intermediates the caller holds,
#: and one of up to ``MAX_STATISTICS`` when no intermediate that reads a statistic is alive, and
#: a loop of two-statistic patterns (softmax, layer norm) records each a call or two later.
EARLY_PENDING = 2
#: Fewest rows a row kernel takes when its rows do not fit in registers (one workgroup streams
#: each row; fewer, longer rows run faster on the eager reductions, which split rows).
MIN_STREAMED_ROWS = 128
_FLOATS = ("float16", "float32", "float64")


class _RowStat:
    """A pending row statistic: ``op`` over ``axes`` (sorted) of ``source`` (an elementwise
    ``_fusion._Node`` or an array with storage) of shape ``shape``, giving ``dtype``
    (accumulated in ``acc``); ``kept``: the result's shape (``shape`` with the axes as 1),
    ``strides`` its C-contiguous strides. Made from a ``StatPlan``."""

    __slots__ = ("op", "source", "axes", "shape", "kept", "strides", "dtype", "acc")

    def __init__(self, plan: StatPlan, source: Any) -> None:
        self.op = plan.op
        self.source = source
        self.axes = plan.axes
        self.shape = plan.shape
        self.kept = plan.kept
        self.strides = plan.strides
        self.dtype = plan.dtype
        self.acc = plan.acc

    def leaves(self) -> tuple[GpuArray, ...]:
        """The arrays the statistic reads."""
        source = self.source
        return source.leaves if type(source) is _fusion._Node else (source,)

    def reads(self, storage: _Storage) -> bool:
        """Whether the statistic reads ``storage``."""
        return any(leaf._storage is storage for leaf in self.leaves())

    def resolve(self, storage: _Storage) -> None:
        """Compute the statistic into ``storage`` with its own reduction kernel."""
        source = self.source
        x = _fusion.lazy_array(source) if type(source) is _fusion._Node else source
        out_shape = tuple(n for d, n in enumerate(self.shape) if d not in self.axes)
        out = GpuArray._new(storage, out_shape, contiguous_strides(out_shape), 0, self.dtype)
        if _dispatch.reduce_fused(self.op, x, self.axes, out, acc_dtype=self.acc):
            return
        with _dispatch.backend_errors():
            ops_reduce.reduce_strided(backend(), self.op, x._ptr, x.dtype.name, tuple(x.shape), tuple(x._strides),
                                      self.axes, out._ptr, self.dtype.name,
                                      acc_dtype=None if self.acc is None else self.acc.name,
                                      dst_strides=tuple(out._strides))

    def fuse(self, root: Any, dst: GpuArray) -> bool:
        """Compute the lazy DAG ``root`` (which reads this statistic) into the new contiguous
        ``dst`` with one row kernel, the statistics it reads included; False (nothing recorded)
        when the DAG is not a row pattern (see the module docstring)."""
        try:
            return _fuse_pattern(root, dst)
        except _NoRowPattern:
            return False
        except Exception as exc:
            raise translate(exc) from None


class StatPlan(NamedTuple):
    """What a pending row statistic of one call structure needs per call (``stat_plan``): the
    reduction ``op`` over the sorted ``axes`` of an input of ``shape``, its result ``dtype``
    (accumulated in ``acc``), the result's shape ``kept`` (the axes as 1), its C-contiguous
    strides and bytes, and the config generation it was checked under."""

    op: str
    axes: tuple[int, ...]
    shape: tuple[int, ...]
    kept: tuple[int, ...]
    strides: tuple[int, ...]
    nbytes: int
    dtype: DType
    acc: DType | None
    generation: int


def stat_plan(op: str, x: GpuArray, axes: Sequence[int], dtype: DType, acc: DType | None) -> StatPlan | None:
    """The plan of the pending row statistic ``op(x, axis=axes, keepdims=True)`` of result
    ``dtype`` (validated by the caller; ``x`` non-empty, ``axes`` non-empty), or None where it
    cannot be one (fusion off, not a real floating dtype, a result dtype other than ``x``'s)."""
    if (not _fusion.fusion_enabled() or op not in STATISTICS or dtype is not x.dtype
            or dtype.name not in _FLOATS or not axes):
        return None
    axes = tuple(sorted(axes))
    shape = x.shape
    kept = tuple(1 if d in axes else n for d, n in enumerate(shape))
    return StatPlan(op, axes, shape, kept, tuple(contiguous_strides(kept)), math.prod(kept) * dtype.itemsize, dtype,
                    acc, config.generation)


def lazy_statistic(op: str, x: GpuArray, axes: Sequence[int], dtype: DType, acc: DType | None) -> GpuArray | None:
    """The pending row statistic ``op(x, axis=axes, keepdims=True)`` of result ``dtype``
    (validated by the caller, as for :func:`stat_plan`), or None where it cannot be one."""
    plan = stat_plan(op, x, axes, dtype, acc)
    return None if plan is None else pending_statistic(plan, x)


def pending_statistic(plan: StatPlan, x: GpuArray) -> GpuArray:
    """A new pending row statistic of ``plan`` over ``x`` (an array of ``plan.shape`` and
    ``plan.dtype``, lazy or not): its storage allocated, nothing recorded, ``x``'s leaves
    watched (see the module docstring)."""
    source: Any = x._node if type(x) is _fusion.LazyArray else x
    if len(_fusion._PENDING_DATA) > EARLY_PENDING:  # (entries of dead storages included: checked there)
        _fusion.bound_pending(EARLY_PENDING, MAX_STATISTICS - 1)
    dtype = plan.dtype
    if dtype.feature is None:
        out = GpuArray._alloc(plan.kept, plan.strides, dtype, plan.nbytes, False)
    else:  # (the current device's support of the dtype checked)
        out = GpuArray._empty(plan.kept, dtype, zero=False)
    record = _RowStat(plan, source)
    with _fusion._LOCK:
        for leaf in (source.leaves if type(source) is _fusion._Node else (source,)):
            storage = leaf._storage
            if type(storage) is _Storage:
                storage.__class__ = _fusion._WatchedStorage
        _fusion.add_pending(out._storage, record)
    return out


# ---------------------------------------------------------------------------------------------
# the row pattern
# ---------------------------------------------------------------------------------------------
def _collect(leaves: Sequence[GpuArray], stats: list[tuple[_Storage, _RowStat]],
             index: dict[int, tuple[int, tuple[int, ...], tuple[int, ...]]]) -> bool:
    """Append the pending statistics among ``leaves`` and those they read, each after the ones
    it reads, and enter each into ``index`` (id of its storage -> (its position, its kept
    shape and strides)); False when there are too many."""
    pending = _fusion._PendingStorage
    for leaf in leaves:
        storage = leaf._storage
        if type(storage) is not pending or id(storage) in index:
            continue
        record = _fusion.pending_record(storage)
        if record is None:
            continue
        source = record.source
        if not _collect(source.leaves if type(source) is _fusion._Node else (source,), stats, index):
            return False
        index[id(storage)] = (len(stats), record.kept, record.strides)
        stats.append((storage, record))
        if len(stats) > MAX_STATISTICS:
            return False
    return True


def _function(node: Any, slot_of: Any, stat_index: dict[int, Any], scalars: list[tuple[Any, DType]], *,
              round_root: bool, positions: dict[int, int] | None = None) -> ops_row_fusion.RowFunction:
    """The row function of a DAG (``_fusion._Node``) or of one array: its parameters mapped to
    operand slots, statistics and scalar parameters (appended to ``scalars``; with
    ``positions``, {id(scalar pair): index}, the DAG's scalars are already there: a rewritten
    DAG's scalars keep the indices of the original's)."""
    if type(node) is not _fusion._Node:
        compute = storage_type(node.dtype.name).compute
        param = _param(node, slot_of, stat_index)
        return ops_row_fusion.RowFunction((param,), "", "x0", compute)
    leaves, pairs, lets, expr, expr_type = _fusion.program(node, round_root=round_root)
    params = [_param(leaf, slot_of, stat_index) for leaf in leaves]
    for pair in pairs:
        if positions is None:
            params.append(("p", len(scalars)))
            scalars.append(pair)
        else:
            params.append(("p", positions[id(pair)]))
    return ops_row_fusion.RowFunction(tuple(params), lets, expr, expr_type)


def _shared_sources(root: Any, stats: list[tuple[_Storage, _RowStat]]) -> dict[int, Any]:
    """{k: node} for the statistics whose elementwise source node (without scalars: the root's
    scalars keep their order) is also a node of the DAG ``root``."""
    sources = {id(r.source): k for k, (_, r) in enumerate(stats)
               if type(r.source) is _fusion._Node and r.source.n_scalars == 0}
    found: dict[int, Any] = {}
    seen: set[int] = set()
    todo = [root]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        k = sources.get(id(node))
        if k is not None and node is not root:
            found[k] = node
            continue
        todo.extend(x for x in node.operands if type(x) is _fusion._Node)
    return found


def _row_constants(root: Any, index: dict[int, Any], slot_of: Any, steps: Sequence[int]) -> list[Any]:
    """The largest sub-DAGs of ``root`` (not ``root`` itself) whose leaves are all constant along
    the row (statistics, operands of step 0, scalars), in the order first reached."""
    memo: dict[int, bool] = {}
    for nd in _post_order(root):
        const = True
        for x in nd.operands:
            kind = type(x)
            if kind is _fusion._Node:
                const = const and memo[id(x)]
            elif kind is not tuple:  # a leaf (tuples are scalars)
                entry = index.get(id(x._storage))
                if entry is None:
                    const = const and steps[slot_of(x)] == 0
                else:
                    const = const and entry[0] not in ("v", "h")
        memo[id(nd)] = const
    found: list[Any] = []
    seen: set[int] = set()
    todo = [root]
    while todo:
        nd = todo.pop()
        if id(nd) in seen:
            continue
        seen.add(id(nd))
        if nd is not root and memo[id(nd)]:
            found.append(nd)
            continue
        todo.extend(reversed([x for x in nd.operands if type(x) is _fusion._Node]))
    return found


def _post_order(root: Any) -> list[Any]:
    """The nodes of a DAG, each once, every node after its operand nodes."""
    order: list[Any] = []
    seen: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        nd, expanded = stack.pop()
        if expanded:
            order.append(nd)
            continue
        if id(nd) in seen:
            continue
        seen.add(id(nd))
        stack.append((nd, True))
        stack.extend((x, False) for x in nd.operands if type(x) is _fusion._Node and id(x) not in seen)
    return order


def _placeholder(node: Any) -> GpuArray:
    """A leaf standing for a node's value in a rewritten DAG (no device memory: never bound)."""
    storage = object.__new__(_Storage)
    return GpuArray._new(storage, node.shape, contiguous_strides(node.shape), 0, node.dtype)


def _substitute(node: Any, placeholders: dict[int, GpuArray], memo: dict[int, Any]) -> Any:
    """The DAG ``node`` with the nodes of ``placeholders`` replaced by their placeholder leaves."""
    done = memo.get(id(node))
    if done is not None:
        return done
    operands = []
    for x in node.operands:
        if type(x) is _fusion._Node:
            leaf = placeholders.get(id(x))
            x = _substitute(x, placeholders, memo) if leaf is None else leaf
        operands.append(x)
    new = _fusion._new_node(node.op, _fusion.op_key(node.op), node.dtype, node.shape, operands)
    memo[id(node)] = new
    return new


class _NoRowPattern(Exception):
    """The DAG is not a row pattern (internal: ``_RowStat.fuse`` returns False)."""


def _param(leaf: GpuArray, slot_of: Any, stat_index: dict[int, tuple[Any, ...]]) -> tuple[str, int]:
    """The row function parameter of ``leaf``: ("a", its operand slot), ("s", k) for the
    statistic k (``stat_index``: ``_collect``'s), or a ("v", k) / ("h", k) entry of the index
    itself. ``_NoRowPattern`` for another view of a statistic's storage."""
    entry = stat_index.get(id(leaf._storage))
    if entry is None:
        return ("a", slot_of(leaf))
    k = entry[0]
    if k == "v" or k == "h":
        return entry
    if leaf._shape != entry[1] or leaf._offset != 0 or leaf._strides != entry[2]:
        raise _NoRowPattern  # another view of the statistic's storage
    return ("s", k)


def _fuse_pattern(root: Any, dst: GpuArray) -> bool:
    stats: list[tuple[_Storage, _RowStat]] = []
    stat_index: dict[int, Any] = {}
    if not _collect(root.leaves, stats, stat_index) or not stats:
        return False
    first = stats[0][1]
    shape, axes, kept = first.shape, first.axes, first.kept
    for _, r in stats:
        if r.shape != shape or r.axes != axes:
            return False
    if dst._shape != shape and dst._shape != kept or root.shape != dst._shape:
        return False

    # operand slots: the inputs read (distinct elements), then dst, then the statistics' storages
    arrays: list[GpuArray] = []
    keys: dict[Any, int] = {}

    def slot_of(leaf: GpuArray) -> int:
        key = _fusion._leaf_key(leaf)
        k = keys.get(key)
        if k is None:
            k = keys[key] = len(arrays)
            arrays.append(leaf)
        return k

    # the kernel by the DAGs' structures (structure keys, else linearised) and how their leaves
    # map to slots (k >= 0) and statistics (-1 - k); as ``_param`` maps them
    node_type = _fusion._Node
    structure: list[Any] = []
    values: list[Any] = []
    seen: dict[int, int] = {}  # id(leaf object) -> its parameter (the sources share leaf objects)
    for src in [record.source for _, record in stats] + [root]:
        leaves = src.leaves if type(src) is node_type else (src,)
        params = []
        for leaf in leaves:
            k = seen.get(id(leaf))
            if k is None:
                entry = stat_index.get(id(leaf._storage))
                if entry is None:
                    key = _fusion._leaf_key(leaf)
                    k = keys.get(key)
                    if k is None:
                        k = keys[key] = len(arrays)
                        arrays.append(leaf)
                elif leaf._shape != entry[1] or leaf._offset or leaf._strides != entry[2]:
                    return False  # another view of the statistic's storage
                else:
                    k = -1 - entry[0]
                seen[id(leaf)] = k
            params.append(k)
        if type(src) is not node_type:
            structure.append((0, params[0]))
        elif src.skey is None:  # (a node over two DAG operands) its linearised structure
            description, scalars = _fusion.linear_structure(src)
            structure.append((description, tuple(params)))
            values += [value for value, _ in scalars]
        else:
            structure.append((src.skey, tuple(params)))
            values += src.scalars
    be = backend()
    plan_key = (tuple(structure), tuple([(r.op, r.dtype.name, r.axes, r.shape) for _, r in stats]),
                tuple([(a._dtype.name, a._shape, a._strides) for a in arrays]), dst._dtype.name, dst._shape,
                dst._strides)
    entry = _PLANS.get(plan_key)
    if entry is not None and entry.backend is be:
        _launch(be, entry, arrays, dst, stats, values)
        return True
    arrays.clear()
    keys.clear()
    entry = _plan(be, root, dst, stats, stat_index, slot_of, arrays)
    if entry is None:
        return False
    if len(_PLANS) >= _PLANS_SIZE:
        _PLANS.pop(next(iter(_PLANS)), None)
    _PLANS[plan_key] = entry
    _launch(be, entry, arrays, dst, stats, entry.scalars)
    return True


#: (DAG structures and leaf mapping, statistics, slot layouts, dst layout) -> a row kernel plan
#: (``_plan``).
_PLANS: dict[Any, _RowPlan] = {}
_PLANS_SIZE = 1024


class _RowPlan(NamedTuple):
    """A planned row kernel: the backend it was planned on, its kept backend call
    (``ops_row_fusion.RowFusionCall``), how many statistics it stores and the scalar values of
    the DAGs it was planned from."""

    backend: Any
    call: ops_row_fusion.RowFusionCall
    n_writes: int
    scalars: list[Any]


def _launch(be: Any, entry: _RowPlan, arrays: list[GpuArray], dst: GpuArray,
            stats: list[tuple[_Storage, _RowStat]], scalars: Sequence[Any]) -> None:
    """Record the planned row kernel for these operands, then settle the statistics it stores."""
    ptrs = [_fusion.leaf_ptr(a) for a in arrays]
    ptrs.append(dst._ptr)
    writes = [storage for storage, _ in stats[:entry.n_writes]]
    ptr_of = _fusion._PTR_SLOT.__get__
    for storage in writes:
        ptrs.append(ptr_of(storage))
    entry.call.launch(be, ptrs, scalars)
    _fusion.settle_pending(*writes)


def _plan(be: Any, root: Any, dst: GpuArray, stats: list[tuple[_Storage, _RowStat]], stat_index: dict[int, Any],
          slot_of: Any, arrays: list[GpuArray]) -> _RowPlan | None:
    """The row kernel's plan, or None when the DAG does not fit one (see the module
    docstring)."""
    first = stats[0][1]
    shape, axes, kept = first.shape, first.axes, first.kept
    acc_types = {record.dtype.info.accumulator for _, record in stats}
    if len(acc_types) != 1:
        return None
    per_row = dst.shape == kept and kept != shape
    acc = "f64" if acc_types == {"float64"} else "f32"
    scalars: list[tuple[Any, DType]] = []
    functions = []
    for _, record in stats:
        functions.append(_function(record.source, slot_of, stat_index, scalars, round_root=True))
    root_fn = _function(root, slot_of, stat_index, scalars, round_root=False)
    positions = {id(pair): q for q, pair in enumerate(scalars)}  # (for the rewritten outputs below)
    n_inputs = len(arrays)
    limit = max_storage_bindings()
    if n_inputs + 1 > limit:
        return None
    n_writes = min(len(stats), limit - n_inputs - 1)

    # layout over the full shape: rows over the kept dims, the reduced dims one strided run
    dtypes = [a.dtype.name for a in arrays] + [dst.dtype.name]
    strides = [broadcast_strides(a.shape, a._strides, shape) for a in arrays]
    strides.append(broadcast_strides(dst.shape, dst._strides, shape))
    kept_strides = broadcast_strides(kept, contiguous_strides(kept), shape)
    for _, record in stats[:n_writes]:
        dtypes.append(record.dtype.name)
        strides.append(kept_strides)
    reduced = [d for d in range(len(shape)) if d in axes]
    outer = [d for d in range(len(shape)) if d not in axes]
    rshape, rstrides = merge_dims([shape[d] for d in reduced], [[s[d] for d in reduced] for s in strides])
    if len(rshape) != 1:
        return None
    n = rshape[0]
    steps = tuple(s[0] for s in rstrides)
    oshape, ostrides = merge_dims([shape[d] for d in outer], [[s[d] for d in outer] for s in strides])
    if len(oshape) > ops_row_fusion.MAX_ROW_DIMS:
        return None
    window = be.max_window_bytes()
    spans = []
    for k, dtype in enumerate(dtypes):
        lo, stop = extent(list(oshape) + [n], list(ostrides[k]) + [steps[k]])
        if (stop - lo) * storage_type(dtype).itemsize > window:
            return None
        spans.append((lo, stop))
    rows = math.prod(oshape)
    main = next((steps[k] for k in range(n_inputs) if steps[k] != 0), 1)
    varying = sum(1 for k in range(n_inputs) if steps[k] != 0)
    strided = main not in (0, 1)
    dst_st = storage_type(dst.dtype.name)
    d = n_inputs
    word_store = (dst_st.packed and not per_row and steps[d] == 1 and n % dst_st.lanes == 0
                  and all(s % dst_st.lanes == 0 for s in ostrides[d]))
    lanes = dst_st.lanes if word_store else 1
    # float32 operands read (and an output written) along rows of step 1 in vector units of 4
    vec_slots = [k for k in range(n_inputs + 1) if steps[k] != 0 and not (k == n_inputs and per_row)]
    vectors = (not word_store and n % 4 == 0 and bool(vec_slots)
               and all(dtypes[k] == "float32" and steps[k] == 1 and all(st % 4 == 0 for st in ostrides[k])
                       for k in vec_slots))
    if vectors:
        lanes = 4
    tpr, rpw, vpt, cached = ops_row_fusion.plan(rows, n, strided, varying, lanes)
    if not cached and rows < MIN_STREAMED_ROWS:
        return None  # a few long rows: the eager reductions spread each row over the device
    keep: set[int] = set()
    if cached and not per_row:  # the output reads a statistic's elementwise values: kept in registers
        shared = _shared_sources(root, stats)
        if shared:
            placeholders = {id(node): _placeholder(node) for node in shared.values()}
            substituted = _substitute(root, placeholders, {})
            index = dict(stat_index)
            for k, node in shared.items():
                index[id(placeholders[id(node)]._storage)] = ("v", k)
            root_fn = _function(substituted, slot_of, index, scalars, round_root=False, positions=positions)
            keep = set(shared)
    hoisted: list[tuple[ops_row_fusion.RowFunction, str]] = []
    if not per_row:  # the output's parts constant along the row: evaluated once per row
        out_root = substituted if keep else root
        out_index = index if keep else stat_index
        constant = _row_constants(out_root, out_index, slot_of, steps)
        if constant:
            placeholders = {id(node): _placeholder(node) for node in constant}
            out_root = _substitute(out_root, placeholders, {})
            out_index = dict(out_index)
            for k, node in enumerate(constant):
                hoisted.append((_function(node, slot_of, stat_index, scalars, round_root=True, positions=positions),
                                node.dtype.name))
                out_index[id(placeholders[id(node)]._storage)] = ("h", k)
            root_fn = _function(out_root, slot_of, out_index, scalars, round_root=False, positions=positions)
    spec_stats = tuple(ops_row_fusion.RowStat(record.op, record.dtype.name, fn, n_inputs + 1 + k if k < n_writes else -1,
                                              k in keep)
                       for k, ((_, record), fn) in enumerate(zip(stats, functions)))
    spec_arrays = tuple((dtype, steps[k] != 0, k >= n_inputs) for k, dtype in enumerate(dtypes))
    spec = ops_row_fusion.RowFusionSpec(spec_arrays, tuple(d.name for _, d in scalars), spec_stats, root_fn,
                                        n_inputs, per_row, acc, tpr, rpw, strided, vpt, cached, lanes, word_store,
                                        tuple(hoisted), cached and n == tpr * vpt * lanes,
                                        tuple(vectors and k in vec_slots for k in range(len(dtypes))))
    call = ops_row_fusion.RowFusionCall(be, spec, tuple(spans), tuple(oshape), n, steps,
                                        tuple(tuple(s) for s in ostrides))
    return _RowPlan(be, call, n_writes, [v for v, _ in scalars])
