"""Fused row operations: softmax, log_softmax, logsumexp, layer_norm and rms_norm over rows.

One kernel (``_wgsl/row_ops.wgsl``) serves every op. A problem is ``rows`` rows of ``n``
elements, each row read through an element step (``x_step``: 1 for the last axis, larger for a
strided row view of another axis) from a row base that is row-major over up to 4 row dims with
strides of any sign. The output has its own row strides and step (logsumexp: one value per row).
float16 (packed in u32 words, computed in f32), float32 (f32) and float64 (f64, with the software
``exp_f64`` / ``log_f64``; needs ``shader-f64``).

Launch shape (``plan_rows``): TPR invocations per row, RPW rows per workgroup (TPR * RPW <= 256).
Rows of adjacent elements give a row TPR adjacent lanes reading units of 4 elements (one vec4
load where the step is 1 and n and every row's first element are multiples of 4; float16 rows
whose n and starts are multiples of 8 load two units with one 16-byte access); strided rows put
RPW neighbouring rows side by side so that the loads coalesce across rows. A row of at most
``TPR * 4 * MAX_CACHED_UNITS`` elements is held in registers and read once; longer rows are read
twice, once for the statistics (running max and rescaled sums, Chan-merged means and squared
deviations) and once for the output (the re-read hits the L2 cache on large GPUs). The pointer-free
part of a call (checks, launch shape, chunks, parameter words, kernel placeholders) is made once
per call structure and kept (``planned_call``: a ``RowCall`` in ``_PLANS``); from the second
call on, its ``launch.LaunchProgram`` (one per pointer alignment and eps) is replayed: the
pointers are checked, the windows computed and the dispatches recorded, nothing else.

A float16 output that cannot be stored as whole u32 words per row (odd row lengths, strided
rows) is computed into a float32 scratch buffer and cast into place; logsumexp's one float16 per
row is swapped into its half of a word atomically (a compare-exchange loop).
"""

from __future__ import annotations

import functools
import math
import numbers
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from . import config, kernels
from .errors import invalid_argument, unsupported
from .launch import LaunchProgram, Region
from .plan_cache import PlanCache
from .ops_elementwise import ArrayOperand, copy_strided, extent
from .wgsl_types import F32_BITS

#: op name -> the kernel's OP constant.
OPS = {"softmax": 0, "log_softmax": 1, "logsumexp": 2, "layer_norm": 3, "rms_norm": 4}
#: float dtype -> (itemsize, compute type, adapter feature).
DTYPES = {"float16": (2, "f32", None), "float32": (4, "f32", None), "float64": (8, "f64", "shader-f64")}
#: Most row dims a problem may have (merge or copy first).
MAX_ROW_DIMS = 4
#: Invocations per workgroup.
WORKGROUP = 256
#: Units (4 elements) per lane held in registers; longer rows are streamed.
MAX_CACHED_UNITS = 16
#: Units per lane the planner aims for with 4-byte elements (a power of two; the knob
#: ``rows_units``, GPUTENSOR_ROWS_UNITS: 8 gives rows of 4096 elements 128 lanes of 8 units; the
#: row ops read it per call structure, ``settings``; the fused row kernels' plans take this
#: value, read at import). Narrower elements aim for proportionally more units (float16: twice as
#: many), so that a lane moves the same bytes and a workgroup the same row bytes whatever the dtype.
TARGET_UNITS = config.value("rows_units")


def settings() -> tuple[int, str]:
    """The knobs a row-op plan depends on, as its cache key takes them: (``rows_units``,
    ``rows_f16_store``), read again only when an override or assignment changed a knob."""
    gen = config.generation
    cached = _SETTINGS
    if cached[0] != gen:
        cached[1] = (config.value("rows_units"), config.value("rows_f16_store"))
        cached[0] = gen
    return cached[1]


#: (config generation, ``settings()`` then).
_SETTINGS: list = [-1, None]
#: Rows side by side in a workgroup for strided rows (32 float32: 128 bytes per element step),
#: at least MIN_STRIDED_ROWS (32 bytes) when there are fewer than TARGET_GROUPS workgroups.
STRIDED_ROWS = 32
MIN_STRIDED_ROWS = 8
TARGET_GROUPS = 264


@dataclass(frozen=True)
class RowPlan:
    """``tpr`` lanes per row, ``rpw`` rows per workgroup, ``vpt`` cached units per lane (when
    ``cached``), ``strided`` lane layout (neighbouring rows side by side)."""

    tpr: int
    rpw: int
    vpt: int
    cached: bool
    strided: bool

    @property
    def workgroup(self) -> int:
        return self.tpr * self.rpw


def _pow2_ceil(v: int) -> int:
    return 1 << max(0, (int(v) - 1).bit_length())


def target_units(itemsize: int, units: int | None = None) -> int:
    """Units per lane the planner aims for with elements of ``itemsize`` bytes (``units``: the
    aim for 4-byte elements, default ``TARGET_UNITS``)."""
    return max(1, (TARGET_UNITS if units is None else units) * 4 // min(4, max(1, itemsize)))


def plan_rows(rows: int, n: int, strided: bool, itemsize: int = 4, units_aim: int | None = None) -> RowPlan:
    """The launch shape for ``rows`` rows of ``n >= 1`` elements of ``itemsize`` bytes (see the
    module docstring; ``units_aim``: ``target_units``' aim, default ``TARGET_UNITS``)."""
    units = -(-n // 4)
    target = target_units(itemsize, units_aim)
    if strided:
        rpw = min(STRIDED_ROWS, _pow2_ceil(rows))
        if -(-rows // rpw) < TARGET_GROUPS:  # few rows: more lanes per row, fewer rows side by side
            rpw = min(rpw, MIN_STRIDED_ROWS)
        tpr = min(WORKGROUP // rpw, _pow2_ceil(-(-units // target)))
    else:
        tpr = min(WORKGROUP, _pow2_ceil(-(-units // target)))
        rpw = max(1, min(WORKGROUP // tpr, _pow2_ceil(rows)))
    vpt = _pow2_ceil(-(-units // tpr))  # (powers of two: fewer kernel specialisations)
    cached = vpt <= MAX_CACHED_UNITS
    return RowPlan(tpr, rpw, vpt if cached else 1, cached, strided)


def _reduce_parts(tpr: int) -> int:
    """Partial results of the kernel's two-level row reduction: the largest power of two whose
    square is at most ``tpr``."""
    return 1 << (tpr.bit_length() - 1) // 2


#: The snippet of ``row_f16x2(a, b) -> u32`` per ``rows_f16_store``: 'exact' or 'pack' (see
#: ``_wgsl/row_ops/f16x2_*.wgsl``).
_F16X2 = {"exact": "row_ops/f16x2_exact", "pack": "row_ops/f16x2_pack"}


def _pair_source(name: str, storage: str, pair: bool, write: bool, array: str) -> str:
    """WGSL of ``ld<name>8(i) -> Pair`` / ``st<name>8(i, p)`` (8 elements from a multiple of 8):
    one 16-byte access of float16 data with ``pair`` (the binding is an array of vec4<u32>),
    else two 4-element accessors."""
    if pair and storage != "f16":
        raise AssertionError("paired units are float16 only")
    part = ("store8" if write else "load8") + ("_pair" if pair else "")
    defines = {"NAME": name, "B": array} if pair else {"NAME": name}
    return kernels.snippet(f"row_ops/{part}", defines) + "\n"


def _loader_source(name: str, storage: str, vec: bool, write: bool, array: str, pair: bool = False) -> str:
    """WGSL of one binding's accessor: ``ld<name>(i) -> T`` / ``ld<name>4(i) -> vec4<T>`` for
    reads, ``st<name>(i, v)`` / ``st<name>4(i, v)`` for writes (element indices; quads at
    multiples of 4), for ``storage`` 'f16' (packed u32 words), 'f32' or 'f64'."""
    defines = {"NAME": name, "B": array}
    if pair:
        part = "store_pair" if write else "load_pair"
    else:
        part = ("store" if write else "load") + ("_f16" if storage == "f16" else "") + ("_vec" if vec else "")
        if write and storage != "f16":
            defines["STORAGE"] = storage
    return kernels.snippet(f"row_ops/{part}", defines) + "\n"


def _array_type(storage: str, vec: bool) -> str:
    if storage == "f16":
        return "vec2<u32>" if vec else "u32"
    return f"vec4<{storage}>" if vec else storage


_NEG_INF = {"f32": f"{F32_BITS}(0xff800000u)", "f64": "bitcast<f64>(0xfff0000000000000lu)"}


@functools.lru_cache(maxsize=256)
def row_defines(op: str, x_storage: str, y_storage: str, w_storage: str, plan: RowPlan, vec: bool,
                w_vec: bool, has_w: bool, has_b: bool, pair: bool = False,
                f16_store: str = "exact", w_pair: bool = False) -> dict[str, object]:
    """The placeholders of row_ops.wgsl for one specialisation (``pair``: float16 rows in paired
    units, see the kernel; ``f16_store``: the float16 rounding, ``_F16X2``; ``w_pair``: the
    float16 weight and bias of paired units read 8 elements at a time too)."""
    compute = "f64" if x_storage == "f64" else "f32"
    y_vec = vec and op != "logsumexp"
    y_pair = pair and y_vec
    loaders = (_loader_source("x", x_storage, vec, False, "X", pair)
               + _loader_source("y", y_storage, y_vec, True, "Y", y_pair)
               + _pair_source("x", x_storage, pair, False, "X") + _pair_source("y", y_storage, y_pair, True, "Y")
               + _loader_source("w", w_storage, w_vec, False, "W", w_pair)
               + _loader_source("b", w_storage, w_vec, False, "B", w_pair)
               + _pair_source("w", w_storage, w_pair, False, "W") + _pair_source("b", w_storage, w_pair, False, "B"))
    if y_storage == "f16":
        loaders = kernels.snippet(_F16X2[f16_store]) + "\n" + loaders
    math_code = kernels.snippet(f"row_ops/math_{compute}") + "\n"
    library = kernels.library_code(math_code + loaders)
    return {
        "ENABLE": "",
        "T": compute,
        "OP": OPS[op],
        "TPR": plan.tpr,
        "RPW": plan.rpw,
        "WG": plan.workgroup,
        "T_STRIDE": plan.rpw if plan.strided else 1,
        "R_STRIDE": 1 if plan.strided else plan.tpr,
        "VPT": plan.vpt,
        "RA": plan.tpr // _reduce_parts(plan.tpr),
        "RB": _reduce_parts(plan.tpr),
        "CACHED": "true" if plan.cached else "false",
        "VEC": "true" if vec else "false",
        "PAIR": "true" if pair else "false",
        "W_VEC": "true" if w_vec else "false",
        "W_PAIR": "true" if w_pair else "false",
        "HAS_W": "true" if has_w else "false",
        "HAS_B": "true" if has_b else "false",
        "XA": "vec4<u32>" if pair else _array_type(x_storage, vec),
        "YA": "vec4<u32>" if y_pair else "atomic<u32>" if y_storage == "f16" and not y_vec
              else _array_type(y_storage, y_vec),
        "WA": "vec4<u32>" if w_pair else _array_type(w_storage, w_vec),
        "LOADERS": loaders,
        "MATH": library + "\n" + math_code,
        "NEG_INF": _NEG_INF[compute],
    }


def _storage(backend, dtype: str) -> tuple[int, str]:
    """(itemsize, storage name) of a float dtype name; BackendError for others or a missing
    feature."""
    try:
        itemsize, _, feature = DTYPES[str(dtype)]
    except KeyError:
        raise invalid_argument(f"row ops: dtype must be one of {sorted(DTYPES)}, not {dtype!r}") from None
    if not backend.supports(feature):
        raise unsupported(f"{dtype} needs the adapter feature {feature!r}, which this adapter lacks", feature)
    return itemsize, {"float16": "f16", "float32": "f32", "float64": "f64"}[dtype]


def _ints(name: str, values: Sequence[int]) -> tuple[int, ...]:
    if type(values) is tuple and all(type(v) is int for v in values):
        return values
    out = []
    for v in values:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
            raise invalid_argument(f"row ops: {name} must be integers, not {values!r}")
        out.append(int(v))
    return tuple(out)


def _eps_words(eps: float) -> tuple[int, int]:
    """The float32 words (hi, lo) of ``eps`` as a float32 pair (remembered for a few values)."""
    hi = float(np.float32(eps))
    lo = float(np.float32(eps - hi))
    words = struct.unpack("<I", struct.pack("<f", hi))[0], struct.unpack("<I", struct.pack("<f", lo))[0]
    if len(_EPS_WORDS) < 64:
        _EPS_WORDS[eps] = words
    return words


#: eps -> its words (the usual few values).
_EPS_WORDS: dict[float, tuple[int, int]] = {}


def _plain(key: tuple) -> bool:
    """Whether ``key`` holds only strs, bools, exact ints and tuples of exact ints (so that an
    equal key means an identical call)."""
    for v in key:
        t = type(v)
        if t is tuple:
            if not all(type(e) is int for e in v):
                return False
        elif t is not int and t is not str and t is not bool:
            return False
    return True


def _validated(backend, op: str, dtype: str, y_dtype: str, row_shape: Sequence[int], x_row_strides: Sequence[int],
               n: int, x_step: int, y_row_strides: Sequence[int], y_step: int, has_w: bool, has_b: bool) -> _Static:
    """The checks of ``row_op`` on its pointer-free arguments, then its ``_Static`` (BackendError
    as documented there)."""
    if op not in OPS:
        raise invalid_argument(f"row ops: unknown op {op!r}")
    _storage(backend, dtype)
    _storage(backend, y_dtype)
    if y_dtype != dtype and not (dtype == "float16" and y_dtype == "float32"):
        raise invalid_argument(f"row ops: output dtype {y_dtype} for input {dtype}")
    row_shape = _ints("row_shape", row_shape) or (1,)
    x_row_strides = _ints("x_row_strides", x_row_strides) or (0,)
    y_row_strides = _ints("y_row_strides", y_row_strides) or (0,)
    (n, x_step, y_step) = _ints("n and steps", (n, x_step, y_step))
    if len(row_shape) > MAX_ROW_DIMS or len(x_row_strides) != len(row_shape) or len(y_row_strides) != len(row_shape):
        raise invalid_argument(f"row ops: row dims {row_shape} with strides {x_row_strides}, {y_row_strides} "
                               f"(at most {MAX_ROW_DIMS} dims)")
    if n < 1 or min(row_shape) < 1:
        raise invalid_argument(f"row ops: empty problem ({row_shape} rows of {n})")
    if (has_w or has_b) and op not in ("layer_norm", "rms_norm"):
        raise invalid_argument(f"row ops: {op} takes no weight or bias")
    if op == "logsumexp":
        y_step = 0
    args = (op, dtype, y_dtype, row_shape, x_row_strides, n, x_step, y_row_strides, y_step)
    return _static(backend, args)


@dataclass(frozen=True)
class _Static:
    """What a row problem's pointers do not change: the launch shape, whether it may use vector
    units (``vec_ok``, before the operands' alignment is known), the dispatch chunks over the
    outermost row dim (``(b0 x, b0 y, x span, y span, word template, grid)``: element offsets of
    the chunk's row 0 and the element ranges it touches relative to them) and the f16 scratch
    route (``scratch``); ``args``: the validated pointer-free arguments. The eps words (10 and
    11 of the template) are filled per call.

    ``itemsize``, ``y_size``, ``x_storage``, ``y_storage``: of the dtypes; ``defines``: the
    kernel placeholders per (vec, w_vec, pair, w_pair) variant met so far."""

    args: tuple
    plan: RowPlan
    vec_ok: bool
    y_vec_strides: bool
    pair_ok: bool
    chunks: tuple[tuple[int, int, tuple[int, int], tuple[int, int], tuple[int, ...], tuple[int, int, int]], ...]
    scratch: bool
    itemsize: int
    y_size: int
    x_storage: str
    y_storage: str
    defines: dict[tuple[bool, bool, bool], dict[str, object]]
    f16_store: str = "exact"


def _static(backend, key: tuple) -> _Static:
    """The pointer-free part of ``row_op`` for its validated arguments (made once per backend
    and call structure, see ``_PLANS``)."""
    (op, dtype, y_dtype, row_shape, x_row_strides, n, x_step, y_row_strides, y_step) = key
    itemsize, x_storage = _storage(backend, dtype)
    y_size, y_storage = _storage(backend, y_dtype)
    rows = math.prod(row_shape)
    lse = op == "logsumexp"
    vec_ok = (x_step == 1 and n % 4 == 0 and (lse or y_step == 1)
              and all(s % 4 == 0 for s in x_row_strides) and x_storage != "f64")
    y_vec_strides = lse or all(s % 4 == 0 for s in y_row_strides)
    units_aim, f16_store = settings()
    plan = plan_rows(rows, n, strided=x_step != 1, itemsize=itemsize, units_aim=max(1, units_aim))
    limit = backend.max_window_bytes()
    outer, rest = row_shape[0], row_shape[1:]
    y_count = 1 if lse else n
    x_rest = extent(rest + (n,), x_row_strides[1:] + (x_step,))
    y_rest = extent(rest + (y_count,), y_row_strides[1:] + (y_step,))
    per = outer
    for step, inner in ((abs(x_row_strides[0]) * itemsize, (x_rest[1] - x_rest[0]) * itemsize),
                        (abs(y_row_strides[0]) * y_size, (y_rest[1] - y_rest[0]) * y_size)):
        if inner > limit:
            raise unsupported(f"row ops: one block of {inner} bytes exceeds the {limit}-byte binding window")
        if step:
            per = min(per, (limit - inner) // step + 1)
    per = max(1, per)
    inner_rows = rows // outer
    ctx = backend.context
    chunks = []
    for a0 in range(0, outer, per):
        cnt = min(per, outer - a0)
        shape = (cnt,) + rest
        pad = (1,) * (MAX_ROW_DIMS - len(shape))
        zeros = (0,) * (MAX_ROW_DIMS - len(shape))
        words = [cnt * inner_rows, n, -(-n // 4), len(shape), 0, 0, 0, 0, x_step, y_step,
                 0, 0, *shape, *pad, *x_row_strides, *zeros, *y_row_strides, *zeros]
        chunks.append((a0 * x_row_strides[0], a0 * y_row_strides[0],
                       extent(shape + (n,), x_row_strides + (x_step,)),
                       extent(shape + (y_count,), y_row_strides + (y_step,)),
                       tuple(w & 0xFFFFFFFF for w in words), ctx.fold_grid(-(-(cnt * inner_rows) // plan.rpw))))
    scratch = y_storage == "f16" and not lse and not (vec_ok and y_vec_strides)
    pair_ok = (vec_ok and not lse and n % 8 == 0 and plan.cached and plan.vpt >= 2
               and all(s % 8 == 0 for s in x_row_strides + y_row_strides))
    entry = _Static(key, plan, vec_ok, y_vec_strides, pair_ok, tuple(chunks), scratch, itemsize, y_size,
                    x_storage, y_storage, {}, f16_store)
    return entry


#: Per backend: (op, dtype, y_dtype, row_shape, x_row_strides, n, x_step, y_row_strides, y_step,
#: has weight, has bias) as passed to ``row_op``, then ``settings()`` -> its ``RowCall``.
_PLANS = PlanCache(1024)

#: The parameter words of row_ops.wgsl (``Params``: 12 scalars and three vec4<u32>).
_WORDS = struct.Struct("<24I")
#: Parameter words that take the window index of row 0 of X, Y and of W's and B's element 0.
_X_FIRST, _Y_FIRST, _W_FIRST, _B_FIRST = 4, 5, 6, 7
#: Bytes of X bound in place of an absent weight or bias (at least one element of any binding
#: type the kernel declares for them; so that the batch's bound-bytes count sees no copy of X).
_PLACEHOLDER_BYTES = 16


#: The four window words (``_X_FIRST`` ..) as packed into the parameter bytes.
_FIRSTS = struct.Struct("<4I")
_U32 = 0xFFFFFFFF


class _Direct(NamedTuple):
    """A one-dispatch row call for one pointer signature, as ``RowCall.launch`` records it
    without its program: the pipeline, defines, parameter bytes (window words 0), grid, and the
    bindings' byte offsets from their operand's element 0, sizes and window-word terms (X, Y;
    W and B bind ``w_bytes`` from element 0; an absent one binds ``spare_bytes`` of X), and the
    adapter's binding limit."""

    pipe: Any
    defines: Any
    raw: bytes
    grid: tuple[int, int, int]
    x_rel: int
    x_bytes: int
    x_extra: int
    y_rel: int
    y_bytes: int
    y_extra: int
    w_bytes: int
    spare_bytes: int
    max_binding: int


def _bound(alloc: Any, off: int, nbytes: int, itemsize: int, align: int) -> tuple[tuple[Any, int, int], int]:
    """(binding, window index of the element at ``off``) of ``nbytes`` from byte ``off`` of the
    allocation ``alloc`` (in range: checked by the caller): its whole binding when that is what
    it covers, else a window from the aligned offset below, as ``WebGpuBackend.window`` (whose
    end, rounded up to a word, stays inside the buffer: an allocation's buffer holds its bytes
    rounded up to a word from byte 0)."""
    if not off and nbytes == alloc.nbytes and alloc.whole is not None:
        return alloc.whole, 0
    start = off // align * align
    stop = (off + nbytes + 3) // 4 * 4
    return (alloc.buffer, start, stop - start if stop - start > 4 else 4), (off - start) // itemsize


def _no_placeholder(backend: Any, nbytes: int, *bindings: Any) -> Any:  # pragma: no cover
    raise AssertionError("row programs bind no placeholders")


class RowCall:
    """A validated ``row_op`` call structure (everything but the pointers) kept for replay on
    the context ``ctx``: the ``_Static`` plan ``st``, the byte spans the call touches from the
    X and Y pointers, and per (alignment signature of the pointers, eps) a
    ``launch.LaunchProgram`` of its dispatches, or None where that variant takes the float16
    scratch route. The signature is the pointers' byte offsets modulo the storage offset
    alignment: what decides the vector, weight-vector and paired-unit variants; eps is a
    parameter word (the usual loop passes one eps, so it keeps one program; at most
    ``MAX_PROGRAMS`` are kept). A call of one dispatch also keeps, per signature, a ``_Direct``
    record that ``launch`` records from without replaying the program."""

    __slots__ = ("ctx", "st", "has_w", "has_b", "x_span", "y_span", "w_bytes", "programs", "align", "settings",
                 "directs")

    #: Programs a call keeps (signatures times eps values); the dict is emptied when full.
    MAX_PROGRAMS = 32

    def __init__(self, ctx: Any, st: _Static, has_w: bool, has_b: bool, knobs: tuple) -> None:
        self.ctx = ctx
        self.settings = knobs  # the ``settings()`` it was planned under
        self.st = st
        self.has_w = has_w
        self.has_b = has_b
        isz, ysz = st.itemsize, st.y_size
        self.x_span = (min((bx + lo) * isz for bx, _, (lo, _), _, _, _ in st.chunks),
                       max((bx + stop) * isz for bx, _, (_, stop), _, _, _ in st.chunks))
        self.y_span = (min((by + lo) * ysz for _, by, _, (lo, _), _, _ in st.chunks),
                       max((by + stop) * ysz for _, by, _, (_, stop), _, _ in st.chunks))
        self.w_bytes = st.args[5] * isz
        self.programs: dict[tuple[int, int, int, int, float], LaunchProgram | None] = {}
        #: Per signature (as ``programs``) of a one-dispatch call: its ``_Direct`` record.
        self.directs: dict[tuple[int, int, int, int, float], _Direct] = {}
        self.align = ctx.storage_offset_alignment

    def valid_for(self, ctx: Any) -> bool:
        """Whether the call was kept for ``ctx`` and its grids hold there."""
        return ctx is self.ctx and all(p is None or p.valid_for(ctx) for p in self.programs.values())

    def launch(self, backend: Any, x: int, y: int, weight: int | None, bias: int | None, eps: float) -> bool:
        """Check the pointers (BackendError as ``row_op`` says, before anything is recorded) and
        record the call; False, with nothing recorded, when its pointers' alignment calls for
        the float16 scratch route (``row_op`` takes it)."""
        has_w, has_b = self.has_w, self.has_b
        if (weight is not None) != has_w or (bias is not None) != has_b:
            raise invalid_argument("row ops: the weight and bias must be those of the kept call")
        st = self.st
        isz = st.itemsize
        resolve = backend.resolve
        xa, xo = resolve(x, 0)
        ya, yo = resolve(y, 0)
        x_lo, x_hi = self.x_span
        y_lo, y_hi = self.y_span
        if (xo % isz or xo + x_lo < 0 or xo + x_hi > xa.nbytes or yo % st.y_size or yo + y_lo < 0
                or yo + y_hi > ya.nbytes):  # (the messages)
            self._checked(backend, x, self.x_span, isz, "x")
            self._checked(backend, y, self.y_span, st.y_size, "y")
        wa, wo = ba, bo = xa, xo
        if has_w or has_b:
            w_bytes = self.w_bytes
            if has_w:
                wa, wo = resolve(weight, 0)
                if wo % isz or wo + w_bytes > wa.nbytes:
                    self._checked(backend, weight, (0, w_bytes), isz, "weight")  # (the message)
            if has_b:
                ba, bo = resolve(bias, 0)
                if bo % isz or bo + w_bytes > ba.nbytes:
                    self._checked(backend, bias, (0, w_bytes), isz, "bias")
        align = self.align
        sig = (xo % align, yo % align, wo % align, bo % align, eps)
        ctx = self.ctx
        direct = self.directs.get(sig)
        if direct is not None and "dispatch" not in ctx.__dict__:
            # one dispatch: its windows computed here (``WebGpuBackend.window`` without the
            # checks made above), its window words patched into the parameter bytes
            at = xo + direct.x_rel
            if not at and direct.x_bytes == xa.nbytes and xa.whole is not None:
                bx, fx = xa.whole, direct.x_extra
            else:
                bx, fx = _bound(xa, at, direct.x_bytes, isz, align)
                fx += direct.x_extra
            at = yo + direct.y_rel
            if not at and direct.y_bytes == ya.nbytes and ya.whole is not None:
                by, fy = ya.whole, direct.y_extra
            else:
                by, fy = _bound(ya, at, direct.y_bytes, st.y_size, align)
                fy += direct.y_extra
            bw, fw = (_bound(wa, wo, direct.w_bytes, isz, align) if has_w
                      else _bound(xa, xo + direct.x_rel, direct.spare_bytes, isz, align))
            bb, fb = _bound(ba, bo, direct.w_bytes, isz, align) if has_b else (bw, fw)
            limit = direct.max_binding
            if bx[2] <= limit and by[2] <= limit and bw[2] <= limit and bb[2] <= limit:
                raw = direct.raw
                if fx or fy or (has_w and fw) or (has_b and fb):
                    raw = bytearray(raw)
                    _FIRSTS.pack_into(raw, _X_FIRST * 4, fx & _U32, fy & _U32, fw & _U32 if has_w else 0,
                                      fb & _U32 if has_b else 0)
                gx, gy, gz = direct.grid
                ctx.record("row_ops", direct.pipe, direct.defines, raw, (bx, by, bw, bb), gx, gy, gz)
                return True
        programs = self.programs
        try:
            program = programs[sig]
        except KeyError:
            if type(eps) is not float:
                eps = float(eps)
                sig = sig[:4] + (eps,)
            if len(programs) >= self.MAX_PROGRAMS:
                programs.clear()
                self.directs.clear()
            program = self._compile(sig)  # (and its ``_Direct``, where it has one dispatch)
            programs[sig] = program
        if program is None:
            return False
        bases = [(alloc.buffer, alloc.buffer.size, alloc.nbytes, off, ptr, alloc.whole)
                 for (alloc, off), ptr in (((xa, xo), x), ((ya, yo), y), ((wa, wo), x if weight is None else weight),
                                           ((ba, bo), x if bias is None else bias))]
        if "dispatch" in ctx.__dict__:  # a wrapper (profiler host mode, test spies)
            program.dispatch(backend, ctx, (x, y, x if weight is None else weight, x if bias is None else bias))
        else:
            program.replay(backend, ctx, bases, _no_placeholder)
        return True

    @staticmethod
    def _checked(backend: Any, ptr: int, span: tuple[int, int], itemsize: int, what: str) -> tuple[Any, int]:
        """(allocation, byte offset) of operand ``ptr`` after checking that bytes ``span`` from
        it lie in its allocation and that it is aligned to ``itemsize`` (BackendError)."""
        alloc, off = backend.resolve(ptr, 0)
        if off % itemsize:
            raise invalid_argument(f"row ops: {what} pointer offset {off} is not a multiple of the item size {itemsize}")
        if off + span[0] < 0 or off + span[1] > alloc.nbytes:
            raise invalid_argument(f"row ops: {what} spans bytes [{off + span[0]}, {off + span[1]}) of a "
                                   f"{alloc.nbytes}-byte allocation")
        return alloc, off

    def _compile(self, sig: tuple[int, int, int, int, float]) -> LaunchProgram | None:
        """The program of the call for pointers of alignment signature and eps ``sig`` (see the
        class)."""
        st = self.st
        op, _, _, _, _, n, _, _, _ = st.args
        lse = op == "logsumexp"
        isz, ysz, align = st.itemsize, st.y_size, self.align
        x_off, y_off, w_off, b_off, eps = sig

        def first(off: int, rel: int, itemsize: int) -> int:  # window index of the lowest element
            return (off + rel) % align // itemsize

        vec = st.vec_ok and st.y_vec_strides
        pair = vec and st.pair_ok and st.x_storage == "f16" and st.y_storage == "f16"
        for bx, by, (xlo, _), (ylo, _), _, _ in st.chunks:
            x0 = first(x_off, (bx + xlo) * isz, isz) - xlo
            y0 = first(y_off, (by + ylo) * ysz, ysz) - ylo
            vec = vec and x0 % 4 == 0 and (lse or y0 % 4 == 0)
            pair = pair and vec and x0 % 8 == 0 and y0 % 8 == 0
        if st.scratch or (st.y_storage == "f16" and not vec and not lse):
            return None
        w_vec = vec and (not self.has_w or first(w_off, 0, isz) % 4 == 0) and (
            not self.has_b or first(b_off, 0, isz) % 4 == 0)
        pair = pair and vec
        w_pair = pair and (self.has_w or self.has_b) and (not self.has_w or first(w_off, 0, isz) % 8 == 0) and (
            not self.has_b or first(b_off, 0, isz) % 8 == 0)
        variant = (vec, w_vec, pair, w_pair)
        defines = st.defines.get(variant)
        if defines is None:
            defines = st.defines[variant] = row_defines(op, st.x_storage, st.y_storage, st.x_storage, st.plan, vec,
                                                        w_vec, self.has_w, self.has_b, pair, st.f16_store, w_pair)
        ctx = self.ctx
        pipe = ctx.pipeline("row_ops", 4, defines)
        eps_hi, eps_lo = _EPS_WORDS.get(eps) or _eps_words(eps)
        records = []
        for bx, by, (xlo, xstop), (ylo, ystop), template, grid in st.chunks:
            words = list(template)
            words[10], words[11] = eps_hi, eps_lo
            x_region = Region(0, (bx + xlo) * isz, (xstop - xlo) * isz, isz, 0, _X_FIRST, -xlo)
            spare = Region(0, (bx + xlo) * isz, min(_PLACEHOLDER_BYTES, (xstop - xlo) * isz), isz, 0, 0, 0)
            regions = (x_region,
                       Region(1, (by + ylo) * ysz, (ystop - ylo) * ysz, ysz, 0, _Y_FIRST, -ylo),
                       Region(2, 0, n * isz, isz, 0, _W_FIRST, 0) if self.has_w else spare,
                       Region(3, 0, n * isz, isz, 0, _B_FIRST, 0) if self.has_b else spare)
            records.append((pipe, defines, tuple(words), grid, regions))
        if len(st.chunks) == 1:
            (bx, by, (xlo, xstop), (ylo, ystop), _, grid), (_, _, words, _, _) = st.chunks[0], records[0]
            self.directs[sig] = _Direct(pipe, defines, _WORDS.pack(*words), grid, (bx + xlo) * isz, (xstop - xlo) * isz,
                                        -xlo, (by + ylo) * ysz, (ystop - ylo) * ysz, -ylo, n * isz,
                                        min(_PLACEHOLDER_BYTES, (xstop - xlo) * isz), ctx.max_binding_size)
        return LaunchProgram.compile("row_ops", _WORDS, ctx, records, ())


def planned_call(backend, op: str, dtype: str, y_dtype: str, row_shape: Sequence[int], x_row_strides: Sequence[int],
                 n: int, x_step: int, y_row_strides: Sequence[int], y_step: int, has_w: bool,
                 has_b: bool) -> RowCall:
    """The ``RowCall`` of a ``row_op`` call structure (its arguments but the pointers, ``has_w``
    / ``has_b`` for the presence of a weight and a bias): kept per backend from the first call
    of plain arguments on (validated then, BackendError as ``row_op`` says); a later call
    replays it with ``RowCall.launch``."""
    plans = _PLANS.of(backend)
    knobs = settings()
    try:
        key = (op, dtype, y_dtype, row_shape, x_row_strides, n, x_step, y_row_strides, y_step, has_w, has_b,
               knobs)
        call = plans.get(key)
    except TypeError:  # unhashable arguments (lists): validated below, not kept
        key, call = None, None
    ctx = backend._ctx
    if call is not None and call.ctx is ctx:
        return call
    st = _validated(backend, op, dtype, y_dtype, row_shape, x_row_strides, n, x_step, y_row_strides,
                    y_step, has_w, has_b)
    call = RowCall(backend.context, st, has_w, has_b, knobs)
    if key is not None and _plain(key[:-1]):
        _PLANS.keep(plans, key, call)
    return call


def row_op(backend, op: str, x: int, dtype: str, row_shape: Sequence[int], x_row_strides: Sequence[int],
           n: int, x_step: int, y: int, y_dtype: str, y_row_strides: Sequence[int], y_step: int, *,
           weight: int | None = None, bias: int | None = None, eps: float = 0.0) -> None:
    """Record ``y = op(x)`` over rows: row ``r`` (row-major over ``row_shape``, up to 4 dims) of
    ``x`` holds the ``n`` elements ``x + (offset(r) + j * x_step) * itemsize``, offset(r) the dot
    product of r's index with ``x_row_strides`` (elements, any sign); ``y`` likewise with its own
    strides and step (logsumexp writes one element per row: ``y_step`` is ignored).

    ``op`` is one of ``OPS``: softmax, log_softmax (along the row), logsumexp (one per row; a
    finite max is subtracted first, infinite ones give +-inf), layer_norm ((x - mean) / sqrt(var
    + eps) * weight + bias) and rms_norm (x / sqrt(mean(x^2) + eps) * weight), ``weight`` and
    ``bias`` pointers to ``n`` contiguous elements of ``dtype`` or None. ``y_dtype`` is ``dtype``
    (float32 is also accepted for a float16 ``dtype``).

    The pointer-free part of a call is planned once per call structure and kept
    (``planned_call``); from the second call on it is replayed (one ``LaunchProgram`` per
    pointer alignment).

    Raises BackendError: invalid argument for an unknown op or dtype, ``n < 1``, more than 4 row
    dims, strides that do not match the dims, or pointers out of range or misaligned; unsupported
    for a dtype the adapter lacks or a row block that does not fit one binding window. Nothing
    is recorded when it raises.
    """
    call = planned_call(backend, op, dtype, y_dtype, row_shape, x_row_strides, n, x_step, y_row_strides, y_step,
                        weight is not None, bias is not None)
    st = call.st
    if type(eps) is not float:
        eps = float(eps)
    if call.launch(backend, x, y, weight, bias, eps):
        return
    (op, dtype, y_dtype, row_shape, x_row_strides, n, x_step, y_row_strides, y_step) = st.args
    _through_scratch(backend, op, x, dtype, row_shape, x_row_strides, n, x_step, y, y_dtype, y_row_strides,
                     y_step, weight, bias, eps)


def _through_scratch(backend, op: str, x: int, dtype: str, row_shape: tuple[int, ...], x_row_strides: tuple[int, ...],
                     n: int, x_step: int, y: int, y_dtype: str, y_row_strides: tuple[int, ...], y_step: int,
                     weight: int | None, bias: int | None, eps: float) -> None:
    """``row_op`` into a contiguous float32 scratch buffer (same row order), then cast into the
    float16 ``y``: for outputs whose rows do not own whole u32 words."""
    out_shape = tuple(row_shape) + (() if op == "logsumexp" else (n,))
    scratch_strides = tuple(int(s) for s in np.cumprod((1,) + out_shape[::-1])[-2::-1])
    scratch = backend.alloc(max(4, math.prod(out_shape) * 4), zero=False)
    try:
        row_op(backend, op, x, dtype, row_shape, x_row_strides, n, x_step, scratch, "float32",
               scratch_strides[:len(row_shape)], 1, weight=weight, bias=bias, eps=eps)
        y_strides = tuple(y_row_strides) + (() if op == "logsumexp" else (y_step,))
        copy_strided(backend, ArrayOperand(scratch, "float32", scratch_strides),
                     ArrayOperand(y, y_dtype, y_strides), out_shape)
    finally:
        backend.free(scratch)


__all__ = ["OPS", "RowCall", "RowPlan", "plan_rows", "planned_call", "row_defines", "row_op"]
