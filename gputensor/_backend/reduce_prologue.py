"""The fused elementwise source of a reduction (``ops_reduce``; used by ``gputensor._fusion``
for ``sum(a * b)``): the ``Prologue`` a caller passes, its validation, and the WGSL loads and
parameter layout it gives the first pass (``_PrologueCode``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .elementwise import _scalar_load
from .errors import invalid_argument, unsupported
from .kernels import library_code, snippet
from .ops_elementwise import ArrayOperand, ScalarOperand, merge_dims
from .reduce_geometry import _Dim, _extent, _row_major
from .reduce_knobs import MAX_RANK
from .reduce_ops import _dtype
from .wgsl_types import StorageType, storage_type

if TYPE_CHECKING:
    from .webgpu import WebGpuBackend

__all__ = ["Prologue"]

@dataclass(frozen=True)
class Prologue:
    """An elementwise expression that a reduction evaluates in its loads instead of reading a
    source array (see the docstring of ``ops_reduce``).

    ``inputs``: ``ArrayOperand`` (pointer of element [0, ..., 0], dtype, strides in elements over
    the reduction's ``shape``: 0 for broadcast dims, any sign) and ``ScalarOperand``, named
    ``x0, x1, ...`` in order and loaded in their dtype's compute type; ``lets``: WGSL statements
    over them; ``expr``: the source element's value in the compute type of the reduction's
    ``src_dtype``, already rounded or wrapped to ``src_dtype`` as storing it would.
    """

    inputs: tuple[ArrayOperand | ScalarOperand, ...]
    lets: str
    expr: str

    def structure(self) -> tuple[Any, ...]:
        """What the plan depends on (not the pointers or the scalar values)."""
        return (self.lets, self.expr, tuple(
            (op.dtype, op.strides) if type(op) is ArrayOperand else (op.dtype, None) for op in self.inputs
        ))


@dataclass(frozen=True)
class _PrologueCode:
    """The WGSL of a prologue and its parameter layout. ``arrays``: per array input its input
    index, item size and (lowest, highest) element offset reached from element [0, ..., 0];
    ``static``: the parameter words after the array inputs' first-element words (merged shape and
    strides); ``scalars``: (input index, dtype) of the scalar inputs, whose words come last."""

    code: str
    n_words: int
    arrays: tuple[tuple[int, int, tuple[int, int]], ...]
    static: tuple[int, ...]
    scalars: tuple[tuple[int, str], ...]


def _prologue_code(backend: "WebGpuBackend", prologue: Any, shape: Sequence[int], src: StorageType,
                   first_binding: int) -> _PrologueCode:
    """Validate ``prologue`` for a reduction over ``shape`` and generate its loads (raises
    BackendError: invalid argument for malformed inputs, unsupported when an input needs a
    feature the adapter lacks, its view does not fit one binding window or the joint layout has
    more than MAX_RANK dims; the caller can then materialise the expression instead)."""
    if not isinstance(prologue, Prologue) or not isinstance(prologue.lets, str) or not isinstance(prologue.expr, str):
        raise invalid_argument(f"prologue must be a Prologue, not {prologue!r}")
    ndim = len(shape)
    arrays: list[tuple[int, ArrayOperand]] = []
    scalars: list[tuple[int, str]] = []
    for k, op in enumerate(prologue.inputs):
        if type(op) is ArrayOperand:
            _dtype(backend, op.dtype, "prologue input dtype")
            if len(op.strides) != ndim or not all(type(v) is int for v in op.strides):
                raise invalid_argument(f"prologue input {k}: strides {op.strides} do not match shape {tuple(shape)}")
            arrays.append((k, op))
        elif type(op) is ScalarOperand:
            _dtype(backend, op.dtype, "prologue scalar dtype")
            scalars.append((k, op.dtype))
        else:
            raise invalid_argument(f"prologue input {k} must be an ArrayOperand or ScalarOperand, not {op!r}")
    window = backend.max_window_bytes()
    info = []
    for k, op in arrays:
        t = storage_type(op.dtype)
        lo, hi = _extent([_Dim(n, s, 0) for n, s in zip(shape, op.strides)])
        if (hi - lo + 1) * t.itemsize > window:
            raise unsupported(f"prologue input {k} spans more than one binding window")
        info.append((k, t.itemsize, (lo, hi)))
    virtual = _row_major(shape)
    mshape, mstrides = merge_dims(shape, [virtual] + [list(op.strides) for _, op in arrays])
    if len(mshape) > MAX_RANK:
        raise unsupported(f"prologue inputs need {len(mshape)} dims after merging (at most {MAX_RANK})")
    linear = len(mshape) == 1 and all(st[0] == 1 for st in mstrides)
    n_arr = len(arrays)
    lines = []
    bindings = []
    static: list[int] = []
    if not linear:
        rank = len(mshape)
        shape_word = n_arr
        static += [int(n) for n in mshape]
        for st in mstrides[1:]:
            static += [int(v) & 0xFFFFFFFF for v in st]
        lines.append(snippet("reduce/prologue_index"))
        for slot in range(n_arr):
            lines.append(snippet("reduce/prologue_slot", {"SLOT": slot, "WORD": slot}))
        for d in range(rank - 1, -1, -1):
            if d > 0:
                lines.append(snippet("reduce/prologue_dim", {"D": d, "WORD": shape_word + d}))
            else:
                lines.append(snippet("reduce/prologue_dim0"))
            for slot in range(n_arr):
                lines.append(snippet("reduce/prologue_stride",
                                     {"SLOT": slot, "D": d, "WORD": shape_word + rank * (1 + slot) + d}))
    for slot, (k, op) in enumerate(arrays):
        t = storage_type(op.dtype)
        bindings.append(snippet("reduce/prologue_binding", {"BINDING": first_binding + slot, "SLOT": slot,
                                                            "ARRAY": t.array}))
        index = f"pro_w({slot}u) + i" if linear else f"s{slot}"
        lines.append(snippet("reduce/prologue_value", {"K": k, "VALUE": t.load_expr(f"leaf{slot}", index)}))
    word = n_arr + len(static)
    for k, dtype in scalars:
        t = storage_type(dtype)
        lines.append(snippet("reduce/prologue_value", {"K": k, "VALUE": _scalar_load(t, word, "pro_w")}))
        word += 2 if t.itemsize == 8 else 1
    if prologue.lets:
        lines.append(prologue.lets)
    lines.append(snippet("reduce/prologue_return", {"EXPR": prologue.expr}))
    functions = snippet("reduce/prologue", {"COMPUTE": src.compute, "BODY": "\n".join(lines)})
    code = "\n".join(bindings) + "\n\n" + library_code(functions) + "\n\n" + functions
    return _PrologueCode(code, word, tuple(info), tuple(static), tuple(scalars))
