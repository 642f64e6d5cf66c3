"""User kernels in WGSL: ``gputensor.ElementwiseKernel`` and ``gputensor.RawKernel``.

ElementwiseKernel (in the spirit of CuPy's)
-------------------------------------------
::

    squared_diff = gt.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y);", "squared_diff")
    z = squared_diff(a, b)            # broadcasts a and b, allocates z (dtype T = a's dtype)
    z = squared_diff(a, 5.0)          # Python scalars are passed by value
    squared_diff(a, b, z)             # outputs may be given after the inputs (CuPy style)

    polar = gt.ElementwiseKernel("float32 x, float32 y", "float32 r, float32 phi",
                                 "r = sqrt(x * x + y * y);\\nphi = atan2(y, x);", "polar")
    r, phi = polar(x, y)              # several outputs: a tuple

* Parameter strings are comma-separated ``[raw] TYPE NAME``: TYPE is a gputensor dtype name
  (``bool``, ``int8`` ... ``uint64``, ``float16``, ``float32``, ``float64``) or a one-letter type
  placeholder. A placeholder takes the dtype of the arrays bound to it (inputs first, then outputs
  that are passed); when only Python scalars are bound to it, the default dtype of their kind
  (float: float32, int: the default integer, bool: bool); a NumPy scalar binds its own dtype.
  Two different dtypes for one placeholder raise ``TypeError``; an output whose placeholder nothing
  binds must be passed (``TypeError`` otherwise). The names ``i``, ``n``, names starting with ``_``
  and the placeholder letters ``P``, ``i``, ``n`` are reserved.
* The operation is WGSL statements. Each input is a value of its declared type's *compute type*
  (``float16`` is computed in ``f32``; ``int8``/``int16`` in ``i32``; ``uint8``/``uint16`` in
  ``u32``; ``bool`` is ``bool``); every placeholder is a WGSL ``alias`` of that type, so
  ``let d: T = x - y;`` and ``T(1)`` work. Outputs are ``var``s of their compute type: zero at the
  start for freshly allocated outputs; for outputs passed by the caller, their current value
  (so ``z += x`` accumulates, as CuPy's reference semantics do) unless the operation provably
  assigns the output first (then it is not read). ``i: u32`` is the element's linear index in the
  C-ordered broadcast shape and ``n: u32`` the element count. ``preamble=`` adds module-scope WGSL
  (helper functions, constants). The f64 math library (``exp_f64``, ``log_f64``, ``sin_f64``, ...)
  and the ``ew_*`` helpers of ``_wgsl/ewise_helpers.wgsl`` and ``ewise_int.wgsl`` may be called.
* ``raw`` inputs are not broadcast: ``raw T w`` makes a function ``w(j: u32) -> T`` returning
  element ``j`` of the array in C order (the array is copied to a contiguous one first if it is
  not contiguous, and must fit one storage binding). Raw outputs are not supported.
* Input arrays whose dtype differs from a fixed declared dtype are converted on load when NumPy
  casts safely (``int8`` array into an ``int32`` parameter); other mismatches raise ``TypeError``.
  Passed outputs must have exactly the output's dtype (``TypeError``) and the broadcast shape
  (``ValueError``), must not be broadcast views and must not overlap each other (``ValueError``).
  Inputs overlapping an output with a different layout are copied first, so in-place calls are safe.
* With no array argument at all, pass ``size=`` (the loop length). ``return_tuple=True`` always
  returns a tuple; ``no_return=True`` returns None.
* Strided, negative-step and broadcast operands need no copies; operands larger than one storage
  binding are split into several dispatches; packed output dtypes (bool, 8/16-bit) are stored
  exactly (atomic lane updates, which cost some speed next to 4/8-byte outputs).
* Compiled pipelines are cached per dtype signature and layout class (contiguous or strided, rank
  after merging dimensions): a loop calling the kernel compiles once. A bad operation raises
  :class:`KernelCompileError` carrying naga's message with line numbers relative to the operation
  (or preamble).

RawKernel
---------
::

    k = gt.RawKernel('''
        struct Params { rows: u32, cols: u32, alpha: f32 }
        @group(0) @binding(0) var<uniform> p: Params;
        @group(0) @binding(1) var<storage, read_write> x: array<f32>;
        @group(0) @binding(2) var<storage, read_write> y: array<f32>;
        @compute @workgroup_size(16, 16)
        fn scale(@builtin(global_invocation_id) g: vec3<u32>) {
            if (g.x < p.cols && g.y < p.rows) { y[g.y * p.cols + g.x] = p.alpha * x[g.y * p.cols + g.x]; }
        }''', "scale")
    k((cols_groups, rows_groups), (x, y), params=(rows, cols, 2.5))

Bindings are read from the shader's declarations (``@group(0) @binding(B) var<uniform> ...`` and
``var<storage, read | read_write> ...``, any numbers, attributes in either order; ``k.bindings``
lists them), as CuPy's RawKernel takes the kernel's parameters:

* the storage bindings take gputensor arrays: ``args`` in binding order, or a mapping
  ``{binding number or variable name: array}``. A wrong count, an unknown key or a missing
  binding raises ``TypeError`` naming the bindings;
* at most one ``var<uniform>`` takes ``params`` (declare it as a struct of 4-byte scalars in the
  order given; WGSL's uniform layout rules apply): ``params=``, or its entry in ``args`` when
  ``args`` lists every binding in order (or names it). ``params`` without a uniform, or a uniform
  without ``params``, raises ``TypeError``;
* an array's dtype must fit the declared element type: ``array<f32>`` (also ``vec4<f32>``,
  ``vec2f``, ``atomic<...>``) takes float32, ``i32`` int32, ``u32`` uint32, ``f16``/``f64``/
  ``i64``/``u64`` theirs; packed dtypes (bool, int8/uint8, int16/uint16, float16) bind as
  ``array<u32>`` or ``array<i32>`` in NumPy's byte layout, the last word padded: unpack them
  yourself and never write bytes past the array's own. Arrays of structs take any dtype.
  Otherwise ``TypeError`` naming the binding;
* other @groups, several uniforms, textures and samplers raise ``ValueError`` at construction.

``params``: a sequence of Python numbers (int -> its 32-bit two's-complement bits, float -> f32,
bool -> 0/1; NumPy 4-byte scalars as their bits, 8-byte ones as two words) or a bytes-like object
/ NumPy array whose bytes are passed as they are. ``grid`` is the number of
workgroups (an int, or a tuple of up to three ints, each at most the adapter's
``max-compute-workgroups-per-dimension``); the workgroup size is the source's
``@workgroup_size``. Each array is bound as exactly its bytes, so it must be C-contiguous and
start at an offset aligned to the adapter's ``min-storage-buffer-offset-alignment``: other arrays
(strided views, most slices) are copied to an aligned contiguous temporary, bound, and copied
back after the kernel (for every such argument: the kernel may have written any of them).
Pipelines are cached by source (and argument count); the context compiles the text as it is
(``WgpuContext.pipeline(..., source=...)``). Compile errors raise
:class:`KernelCompileError` with the line and column in the source.
"""

from __future__ import annotations

import builtins
import math
import re
import struct
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _dispatch, _dtypes, _profile
from ._array_object import GpuArray
from ._backend import elementwise as codegen
from ._backend import kernels
from ._backend.elementwise import _scalar_load  # private helper of the generic generator, reused
from ._backend.errors import BackendError, BackendErrorKind, restore_exception
from ._backend.ops_elementwise import extent, merge_dims, plan_chunks
from ._backend.wgsl_types import convert, storage_type
from ._devices import DEFAULT_DEVICE, default_dtype
from ._dtypes import DType
from ._shapes import broadcast_shapes, broadcast_strides, is_contiguous, size_of

__all__ = ["ElementwiseKernel", "RawKernel", "KernelCompileError"]

_TEMPLATE = "user_elementwise"
_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_PARAM = re.compile(r"\s*(?:(raw)\s+)?([A-Za-z_][A-Za-z0-9_]*)\s+([A-Za-z_][A-Za-z0-9_]*)\s*\Z")
_RESERVED_NAMES = frozenset({"i", "n", "P", "params", "offsets", "Offsets", "main", "linear_group"})
_RESERVED_PLACEHOLDERS = frozenset({"P", "i", "n"})


# ---------------------------------------------------------------------------------------------
# compile errors
# ---------------------------------------------------------------------------------------------
class KernelCompileError(ValueError):
    """A user kernel's WGSL did not compile.

    Attributes: ``kernel`` (the kernel's name), ``region`` (``'operation'``, ``'preamble'``,
    ``'source'``, or None when the error lies in generated code or has no location), ``line`` and
    ``column`` (1-based, relative to that region; None without a location), ``compiler_message``
    (naga's message with its line numbers rewritten to the region's) and ``source`` (the complete
    WGSL that was compiled).
    """

    def __init__(self, kernel: str, message: str, *, region: str | None, line: int | None,
                 column: int | None, compiler_message: str, source: str) -> None:
        super().__init__(message)
        self.kernel = kernel
        self.region = region
        self.line = line
        self.column = column
        self.compiler_message = compiler_message
        self.source = source

    def __reduce__(self) -> tuple[Any, ...]:
        return restore_exception, (type(self), self.args, self.__dict__)


_LOCATION = re.compile(r"(┌─ )([^\n:]*):(\d+):(\d+)")  # naga's
_TINT_LOCATION = re.compile(r"(^|\s)():(\d+):(\d+)(?= (?:error|warning|note))", re.MULTILINE)  # Tint's
_GUTTER = re.compile(r"^(\s*)(\d+)( │)", re.MULTILINE)


def _marked_locations(text: str, src_lines: Sequence[str]) -> list[tuple[int, int]]:
    """(source line, 1-based column) of every caret annotation (``^^^``) in naga's snippet, in
    order: the numbered line just above a caret line is the one it marks; the caret's column is
    its offset from where that line's source text starts in the numbered line."""
    found = []
    numbered: tuple[int, str] | None = None
    for row in text.split("\n"):
        m = _GUTTER.match(row)
        if m:
            numbered = (int(m.group(2)), row)
            continue
        caret = row.find("^")
        if caret >= 0 and numbered is not None and "│" in row:
            line, shown = numbered
            code = src_lines[line - 1] if 0 < line <= len(src_lines) else ""
            start = len(shown) - len(code) if code and shown.endswith(code) else None
            if start is not None and caret >= start:
                found.append((line, caret - start + 1))
            numbered = None
    return found


def _compile_error(kernel: str, exc: BaseException, source: str,
                   regions: Sequence[tuple[str, int, int]]) -> KernelCompileError:
    """Turn a pipeline-creation failure into a KernelCompileError whose line numbers are relative
    to the user's text. ``regions``: (name, first source line (1-based), line count) of every piece
    of user text in ``source``.

    The location is naga's primary one (``┌─ wgsl:L:C``; Tint's ``:L:C error``) when it lies in user text; otherwise (a
    validation error spans the generated function around the user's operation) the first caret
    annotation that marks user text; otherwise the generated line (region None)."""
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    text = str(cause)
    head = re.search(r"^\s*In wgpu\w+[^\n]*\n", text, re.MULTILINE)  # wgpu's "Caused by: In wgpuX" header
    raw_detail = (text[head.end():] if head else text).strip()
    src_lines = source.split("\n")

    def where(line: int) -> tuple[str, int] | None:
        for name, first, count in regions:
            if first <= line < first + count:
                return name, line - first + 1
        return None

    def relocate(m: re.Match[str]) -> str:
        line = int(m.group(3))
        mapped = where(line)
        if mapped is None:
            return f"{m.group(1)}generated:{line}:{m.group(4)}"
        return f"{m.group(1)}{mapped[0]}:{mapped[1]}:{m.group(4)}"

    def regutter(m: re.Match[str]) -> str:
        mapped = where(int(m.group(2)))
        number = str(mapped[1]) if mapped else m.group(2)
        return f"{m.group(1)}{number:>{len(m.group(2))}}{m.group(3)}"

    detail = _GUTTER.sub(regutter, _TINT_LOCATION.sub(relocate, _LOCATION.sub(relocate, raw_detail)))
    notes = [row.strip()[2:] for row in raw_detail.split("\n") if row.strip().startswith("= ")]
    summary = re.sub(r"^Shader '[^']*' ", "", detail.split("\n", 1)[0])
    if notes and notes[-1] not in summary:
        summary += f": {notes[-1]}"
    candidates = []
    first_loc = _LOCATION.search(raw_detail) or _TINT_LOCATION.search(raw_detail)
    if first_loc is not None:
        candidates.append((int(first_loc.group(3)), int(first_loc.group(4))))
    candidates += _marked_locations(raw_detail, src_lines)
    region = line = column = None
    place = "pipeline creation"
    for src_line, col in candidates:
        mapped = where(src_line)
        if mapped is not None:
            region, line = mapped
            column = col
            place = f"{region} line {line}, column {column}"
            break
    else:
        if candidates:
            src_line = candidates[0][0]
            snippet = src_lines[src_line - 1].strip() if 0 < src_line <= len(src_lines) else ""
            place = f"generated code line {src_line} ({snippet!r}; the full source is in .source)"
    message = f"kernel {kernel!r}: WGSL error at {place}: {summary}\n{detail}"
    return KernelCompileError(kernel, message, region=region, line=line, column=column,
                              compiler_message=detail, source=source)


def _compile(ctx: Any, name: str, n_storage: int, defines: dict[str, str] | None, kernel: str,
             regions_of: Any, hint: str = "", source: str | None = None) -> None:
    """Make sure the pipeline of template ``name`` with ``defines`` (or of the WGSL ``source``)
    exists -- the context caches it; KernelCompileError on failure. ``regions_of(source)`` gives
    the user-text regions of the compiled source."""
    try:
        ctx.pipeline(name, n_storage, defines, source=source)
    except BackendError as exc:
        if exc.kind is not BackendErrorKind.DEVICE_ERROR:
            raise
        if source is None:
            source = kernels.render(name, defines)
        err = _compile_error(kernel, exc, source, regions_of(source))
        if hint and err.line is None:
            err.args = (f"{err.args[0]}\n{hint}",)
        raise err from None


def _translate(exc: Exception) -> Exception:
    """Backend errors -> Python errors: unsupported -> TypeError, invalid argument -> ValueError."""
    if isinstance(exc, BackendError):
        if exc.kind is BackendErrorKind.UNSUPPORTED:
            return TypeError(exc.message)
        if exc.kind is BackendErrorKind.INVALID_ARGUMENT:
            return ValueError(exc.message)
    return exc


# ---------------------------------------------------------------------------------------------
# ElementwiseKernel
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Param:
    name: str
    type: str  # dtype name or a one-letter placeholder
    raw: bool

    @property
    def placeholder(self) -> bool:
        return len(self.type) == 1


def _parse_params(text: str, what: str) -> tuple[_Param, ...]:
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a string like 'float32 x, T y', not {type(text).__name__}")
    if not text.strip():
        return ()
    params = []
    for item in text.split(","):
        m = _PARAM.match(item)
        if m is None:
            raise ValueError(f"{what}: cannot parse {item.strip()!r}; expected '[raw] TYPE NAME'")
        raw, typ, name = bool(m.group(1)), m.group(2), m.group(3)
        if len(typ) > 1 and typ not in _dtypes.DTYPES_BY_NAME:
            raise TypeError(f"{what}: {typ!r} is not a gputensor dtype nor a one-letter type placeholder "
                            f"(dtypes: {', '.join(_dtypes.DTYPES_BY_NAME)})")
        if len(typ) == 1 and (typ in _RESERVED_PLACEHOLDERS or not typ.isalpha()):
            raise ValueError(f"{what}: {typ!r} cannot be a type placeholder (reserved)")
        if not _IDENT.match(name) or name in _RESERVED_NAMES:
            raise ValueError(f"{what}: {name!r} is reserved or not a valid name (names start with a letter; "
                             f"{', '.join(sorted(_RESERVED_NAMES))} are reserved)")
        params.append(_Param(name, typ, raw))
    return tuple(params)


def _first_write_only(body: str, name: str) -> bool:
    """Whether ``body`` certainly assigns output ``name`` before anything could read it: the first
    statement mentioning it is a plain top-level ``name = expr;`` not reading it, with no block or
    ``return`` before it. (Conservative: False means the output's old value is loaded.)"""
    pattern = re.compile(rf"\b{re.escape(name)}\b")
    code = re.sub(r"//[^\n]*", "", body)
    before = ""
    for stmt in code.split(";"):
        if pattern.search(stmt):
            if any(tok in before for tok in ("{", "}")) or re.search(r"\breturn\b", before):
                return False
            if "{" in stmt or "}" in stmt:
                return False
            m = re.match(rf"\s*{re.escape(name)}\s*=(?!=)(.*)\Z", stmt, re.DOTALL)
            return bool(m) and not pattern.search(m.group(1))
        before += stmt + ";"
    return False  # never assigned at top level: keep the old value


@dataclass
class _Call:
    """One resolved call: the compile key (None when there are no elements), the broadcast shape,
    the outputs, the merged iteration space, input kinds, (possibly copied) inputs, scalar values."""

    key: tuple[Any, ...] | None
    shape: tuple[int, ...]
    outs: list[GpuArray] | None
    merged: Any
    kinds: list[str]
    ins: list[Any]
    scalars: list[Any]


@dataclass
class _Compiled:
    defines: dict[str, str]
    spec: codegen.ElementwiseSpec
    n_storage: int
    word_base: int


def _scalar_kind_dtype(values: Sequence[Any]) -> DType:
    if any(isinstance(v, float) for v in values):
        return default_dtype("float")
    if any(isinstance(v, int) and not isinstance(v, builtins.bool) for v in values):
        return default_dtype("int")
    return _dtypes.bool


def _is_python_scalar(a: Any) -> bool:
    return isinstance(a, (builtins.bool, int, float)) and not isinstance(a, GpuArray)


class ElementwiseKernel:
    """A user-defined elementwise kernel in WGSL (see the module docstring for the full contract).

    ``ElementwiseKernel(in_params, out_params, operation, name="kernel", *, preamble="",
    no_return=False, return_tuple=False)``. Raises ``ValueError`` for malformed or reserved
    parameter names, duplicate names, raw outputs or no outputs, ``TypeError`` for unknown dtypes.
    The WGSL is compiled at the first call with a given dtype signature.
    """

    def __init__(self, in_params: str, out_params: str, operation: str, name: str = "kernel", *,
                 preamble: str = "", no_return: bool = False, return_tuple: bool = False) -> None:
        self.in_params = _parse_params(in_params, "in_params")
        self.out_params = _parse_params(out_params, "out_params")
        if not isinstance(operation, str) or not isinstance(preamble, str):
            raise TypeError("operation and preamble must be strings of WGSL")
        if not isinstance(name, str) or not name:
            raise TypeError("name must be a non-empty string")
        if not self.out_params:
            raise ValueError("an ElementwiseKernel needs at least one output parameter")
        if any(p.raw for p in self.out_params):
            raise ValueError("raw outputs are not supported (only inputs may be raw)")
        names = [p.name for p in self.in_params + self.out_params]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate parameter names: {', '.join(dupes)}")
        letters = {p.type for p in self.in_params + self.out_params if p.placeholder}
        clash = sorted(letters & set(names))
        if clash:
            raise ValueError(f"parameter names may not equal type placeholders: {', '.join(clash)}")
        self.operation = operation
        self.name = name
        self.preamble = preamble
        self.no_return = bool(no_return)
        self.return_tuple = bool(return_tuple)
        self._first_write = {p.name: _first_write_only(operation, p.name) for p in self.out_params}
        self._cache: dict[tuple[Any, ...], _Compiled] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        fmt = lambda ps: ", ".join(("raw " if p.raw else "") + f"{p.type} {p.name}" for p in ps)  # noqa: E731
        return f"ElementwiseKernel({fmt(self.in_params)!r}, {fmt(self.out_params)!r}, name={self.name!r})"

    # ---- argument resolution -------------------------------------------------------------------
    def _bind_types(self, ins: Sequence[Any], outs: Sequence[GpuArray] | None) -> dict[str, DType]:
        bound: dict[str, DType] = {}

        def bind(letter: str, dt: DType, who: str) -> None:
            have = bound.get(letter)
            if have is not None and have != dt:
                raise TypeError(f"{self.name}: type placeholder {letter} is bound to {have.name} "
                                f"and to {dt.name} ({who})")
            bound[letter] = dt

        for p, a in zip(self.in_params, ins):
            if p.placeholder and isinstance(a, GpuArray):
                bind(p.type, a.dtype, f"argument {p.name}")
        for p, a in zip(self.out_params, outs or ()):
            if p.placeholder:
                bind(p.type, a.dtype, f"output {p.name}")
        for p, a in zip(self.in_params, ins):
            if p.placeholder and isinstance(a, np.generic) and p.type not in bound:
                bind(p.type, _dtypes.dtype_from_any(a.dtype), f"argument {p.name}")
        pending: dict[str, list[Any]] = {}
        for p, a in zip(self.in_params, ins):
            if p.placeholder and p.type not in bound and _is_python_scalar(a):
                pending.setdefault(p.type, []).append(a)
        for letter, values in pending.items():
            bound[letter] = _scalar_kind_dtype(values)
        return bound

    def _classify(self, ins: Sequence[Any]) -> list[str]:
        kinds = []
        for p, a in zip(self.in_params, ins):
            if isinstance(a, GpuArray):
                kinds.append("raw" if p.raw else "array")
            elif p.raw:
                raise TypeError(f"{self.name}: raw argument {p.name} must be a gputensor array, "
                                f"not {type(a).__name__}")
            elif _is_python_scalar(a) or (isinstance(a, np.generic) and a.dtype.kind in "biuf"):
                kinds.append("scalar")
            else:
                raise TypeError(f"{self.name}: argument {p.name} must be a gputensor array or a real Python "
                                f"scalar, not {type(a).__name__}")
        return kinds

    # ---- code generation ---------------------------------------------------------------------
    def _generate(self, key: tuple[Any, ...]) -> _Compiled:
        param_dt, operand_dt, kinds, out_dt, ndim, load_outs = key
        arr = [k for k, kind in enumerate(kinds) if kind == "array"]
        sca = [k for k, kind in enumerate(kinds) if kind == "scalar"]
        raw = [k for k, kind in enumerate(kinds) if kind == "raw"]
        array_dtypes = [operand_dt[k] for k in arr] + list(out_dt)
        out_compute = storage_type(array_dtypes[-1]).compute
        spec_inputs = tuple((d, False) for d in array_dtypes[:-1]) + tuple((param_dt[k], True) for k in sca)
        # The generic elementwise spec gives the parameter layout and the `offsets` function of
        # every array operand (inputs, then outputs); its expression is unused here.
        spec = codegen.ElementwiseSpec(
            inputs=spec_inputs,
            casts=tuple(storage_type(d).compute for d, _ in spec_inputs),
            expr=f"{out_compute}()",
            expr_type=out_compute,
            out=array_dtypes[-1],
            ndim=ndim,
            store="direct",
        )
        functions = codegen.render_defines(spec)["FUNCTIONS"]
        offsets_code, sep, _ = functions.partition("\n\nfn element(")
        if not sep or not offsets_code.startswith("struct Offsets"):
            raise RuntimeError(  # pragma: no cover
                "the generic elementwise generator changed its FUNCTIONS layout")
        word_base = spec.n_param_words()
        n_arr_in = len(arr)

        bindings = []
        binding = 1
        for s, k in enumerate(arr):
            bindings.append(kernels.snippet("user/binding_in", {"BINDING": binding, "S": s,
                                                                "ELEM": storage_type(operand_dt[k]).array}))
            binding += 1
        for j, d in enumerate(out_dt):
            st = storage_type(d)
            elem = "atomic<u32>" if st.packed else st.array
            bindings.append(kernels.snippet("user/binding_out", {"BINDING": binding, "J": j, "ELEM": elem}))
            binding += 1
        raw_funcs = []
        for r, k in enumerate(raw):
            st = storage_type(operand_dt[k])
            bindings.append(kernels.snippet("user/binding_raw", {"BINDING": binding, "R": r, "ELEM": st.array}))
            binding += 1
            pc = storage_type(param_dt[k]).compute
            value = convert(st.load_expr(f"_raw{r}", f"P({word_base + 2 + r}u) + j"), st.compute, pc)
            raw_funcs.append(kernels.snippet("user/raw_function",
                                             {"NAME": self.in_params[k].name, "TYPE": pc, "VALUE": value}))

        letters: dict[str, str] = {}
        for p, d in zip(self.in_params + self.out_params, list(param_dt) + list(out_dt)):
            if p.placeholder:
                letters[p.type] = storage_type(d).compute
        types = "\n".join(kernels.snippet("user/alias", {"LETTER": letter, "TYPE": t})
                          for letter, t in sorted(letters.items()))

        body_params, loads, args = [], [], []
        for k, p in enumerate(self.in_params):
            if kinds[k] == "raw":
                continue
            pc = storage_type(param_dt[k]).compute
            body_params.append(kernels.snippet("user/param", {"NAME": p.name, "TYPE": pc}))
            if kinds[k] == "array":
                s = arr.index(k)
                st = storage_type(operand_dt[k])
                value = convert(st.load_expr(f"_in{s}", f"o.o{s}"), st.compute, pc)
            else:
                value = _scalar_load(storage_type(param_dt[k]), spec.word_of_scalar(n_arr_in + sca.index(k)))
            loads.append(kernels.snippet("user/load", {"K": k, "VALUE": value}))
            args.append(f"_a{k}")
        members, out_vars, stores = [], [], []
        for j, (p, d) in enumerate(zip(self.out_params, out_dt)):
            st = storage_type(d)
            slot = n_arr_in + j
            members.append(kernels.snippet("user/member", {"NAME": p.name, "TYPE": st.compute}))
            if load_outs[j]:
                body_params.append(kernels.snippet("user/param", {"NAME": f"_init_{j}", "TYPE": st.compute}))
                if st.packed:
                    loads.append(kernels.snippet("user/load_out_packed", {
                        "J": j, "SLOT": slot, "LANES": st.lanes,
                        "LOAD": st.load_expr(f"_w{j}", f"o.o{slot} % {st.lanes}u")}))
                else:
                    loads.append(kernels.snippet("user/load_out", {"J": j, "SLOT": slot}))
                args.append(f"_o{j}")
                out_vars.append(kernels.snippet("user/out_var_init", {"NAME": p.name, "TYPE": st.compute, "J": j}))
            else:
                out_vars.append(kernels.snippet("user/out_var", {"NAME": p.name, "TYPE": st.compute}))
            if st.packed:
                bits = 32 // st.lanes
                stores.append(kernels.snippet("user/store_packed", {
                    "SLOT": slot, "LANES": st.lanes, "BITS": bits, "MASK": (1 << bits) - 1, "J": j,
                    "LANE": st.bits_expr(f"r.{p.name}")}))
            else:
                stores.append(kernels.snippet("user/store", {"J": j, "SLOT": slot, "NAME": p.name}))
        body_params += [kernels.snippet("user/param", {"NAME": "i", "TYPE": "u32"}),
                        kernels.snippet("user/param", {"NAME": "n", "TYPE": "u32"})]
        args += ["base + e", "total"]
        generated = "\n".join([offsets_code, *raw_funcs, *loads, *stores])
        n_words = word_base + 2 + len(raw)
        defines = {
            "NAME": self.name.replace("\n", " "),
            "NPARAM_VEC4": str(max(1, -(-n_words // 4))),
            "BINDINGS": "\n".join(bindings),
            "HELPERS": kernels.library_code(generated + "\n" + self.preamble + "\n" + self.operation),
            "FUNCTIONS": offsets_code,
            "TYPES": types,
            "RAW": "\n\n".join(raw_funcs),
            "PREAMBLE": self.preamble,
            "OUT_MEMBERS": "\n".join(members),
            "BODY_PARAMS": ", ".join(body_params),
            "OUT_VARS": "\n".join(out_vars),
            "BODY": self.operation,
            "OUT_NAMES": ", ".join(p.name for p in self.out_params),
            "WORKGROUP": str(codegen.WORKGROUP),
            "ELEMENTS_PER_THREAD": str(codegen.ELEMENTS_PER_THREAD),
            "WORD_BASE": str(word_base),
            "WORD_TOTAL": str(word_base + 1),
            "LOADS": "\n".join(loads),
            "ARGS": ", ".join(args),
            "STORES": "\n".join(stores),
        }
        return _Compiled(defines, spec, len(array_dtypes) + len(raw), word_base)

    def _regions(self, source: str) -> list[tuple[str, int, int]]:
        lines = source.split("\n")
        regions = []
        for marker, text, region in (("// @preamble", self.preamble, "preamble"),
                                     ("// @body", self.operation, "operation")):
            if marker in lines:
                regions.append((region, lines.index(marker) + 2, len(text.split("\n"))))
        return regions

    def _compiled(self, ctx: Any, key: tuple[Any, ...]) -> _Compiled:
        with self._lock:
            compiled = self._cache.get(key)
        if compiled is None:
            compiled = self._generate(key)
            _compile(ctx, _TEMPLATE, compiled.n_storage, compiled.defines, self.name, self._regions)
            with self._lock:
                self._cache[key] = compiled
        return compiled

    def source(self, *args: Any, size: int | None = None) -> str:
        """The WGSL that a call with ``args`` runs (for inspection; nothing is dispatched)."""
        call = self._plan(args, size, allocate=False)
        if call.key is None:
            raise ValueError("the call has no elements; nothing would be compiled")
        return kernels.render(_TEMPLATE, self._generate(call.key).defines)

    # ---- the call --------------------------------------------------------------------------------
    def _plan(self, args: Sequence[Any], size: int | None, allocate: bool = True) -> "_Call":
        n_in, n_out = len(self.in_params), len(self.out_params)
        if len(args) not in (n_in, n_in + n_out):
            raise TypeError(f"{self.name} takes {n_in} arguments (or {n_in + n_out} with the outputs), "
                            f"got {len(args)}")
        ins = list(args[:n_in])
        given = list(args[n_in:]) if len(args) > n_in else None
        if given is not None:
            for p, o in zip(self.out_params, given):
                if not isinstance(o, GpuArray):
                    raise TypeError(f"{self.name}: output {p.name} must be a gputensor array, "
                                    f"not {type(o).__name__}")
        kinds = self._classify(ins)
        bound = self._bind_types(ins, given)
        param_dt: list[DType] = []
        for p in self.in_params:
            param_dt.append(bound[p.type] if p.placeholder else _dtypes.DTYPES_BY_NAME[p.type])
        out_dt: list[DType] = []
        for p in self.out_params:
            if p.placeholder and p.type not in bound:
                raise TypeError(f"{self.name}: cannot determine the dtype of output {p.name} (placeholder "
                                f"{p.type} is bound by no argument): pass the output array")
            out_dt.append(bound[p.type] if p.placeholder else _dtypes.DTYPES_BY_NAME[p.type])
        for dt in param_dt + out_dt:
            DEFAULT_DEVICE.check_dtype(dt)
        # operand dtypes, cast checks, scalar values
        operand_dt: list[str] = []
        scalars: list[Any] = []
        for p, a, kind, dt in zip(self.in_params, ins, kinds, param_dt):
            if kind == "scalar":
                value = a.item() if isinstance(a, np.generic) else a
                scalars.append(_dispatch.scalar_value(value, dt))
                operand_dt.append(dt.name)
                continue
            if a.dtype != dt and not np.can_cast(a.dtype.numpy, dt.numpy, "safe"):
                raise TypeError(f"{self.name}: argument {p.name} has dtype {a.dtype.name}, which does not cast "
                                f"safely to the parameter's {dt.name}; convert it with astype first")
            operand_dt.append(a.dtype.name)
        if given is not None:
            for p, o, dt in zip(self.out_params, given, out_dt):
                if o.dtype != dt:
                    raise TypeError(f"{self.name}: output {p.name} has dtype {o.dtype.name}, expected {dt.name}")
        # shape
        arrays = [a for a, kind in zip(ins, kinds) if kind == "array"]
        if size is not None:
            if arrays or given is not None:
                raise ValueError(f"{self.name}: size= is only for calls without array arguments")
            size = int(size)
            if size < 0:
                raise ValueError(f"size must be >= 0, got {size}")
            shape: tuple[int, ...] = (size,)
        elif arrays:
            shape = broadcast_shapes(*(a.shape for a in arrays))
        elif given is None:
            raise ValueError(f"{self.name}: the loop size is undecided: pass an array argument, "
                             "the outputs, or size=")
        else:
            shape = given[0].shape
        if given is not None:
            for p, o in zip(self.out_params, given):
                try:
                    fits = broadcast_shapes(shape, o.shape) == o.shape
                except ValueError:
                    fits = False
                if not fits:
                    raise ValueError(f"{self.name}: output {p.name} has shape {o.shape}; "
                                     f"the inputs broadcast to {shape}")
                if o.shape != given[0].shape:
                    raise ValueError(f"{self.name}: outputs have different shapes ({given[0].shape}, {o.shape})")
                if any(s == 0 and d > 1 for s, d in zip(o._strides, o.shape)):
                    raise ValueError(f"{self.name}: output {p.name} is a broadcast view (stride 0); "
                                     "pass a writable array")
            shape = given[0].shape
            for a_idx in range(len(given)):
                for b_idx in range(a_idx + 1, len(given)):
                    if _overlap(given[a_idx], given[b_idx]):
                        raise ValueError(f"{self.name}: outputs {self.out_params[a_idx].name} and "
                                         f"{self.out_params[b_idx].name} overlap")
        outs: list[GpuArray] | None = given
        if outs is None and allocate:
            outs = [GpuArray._empty(shape, dt) for dt in out_dt]
        if size_of(shape) == 0:
            return _Call(None, shape, outs, None, kinds, ins, scalars)
        # inputs that overlap an output (other than element-for-element) are copied first
        if outs is not None:
            for k, (a, kind) in enumerate(zip(ins, kinds)):
                if kind == "scalar":
                    continue
                if kind == "raw":
                    if not is_contiguous(a.shape, a._strides) or any(_overlap(a, o) for o in outs):
                        ins[k] = _dispatch.contiguous_copy(a)
                    continue
                strides = broadcast_strides(a.shape, a._strides, shape)
                if any(_dispatch._conflicts(a, strides, o) for o in outs):  # private helper, reused
                    ins[k] = _dispatch.contiguous_copy(a)
        # layout class: merged rank of the iteration space (0 = every operand contiguous)
        op_strides = [list(broadcast_strides(a.shape, a._strides, shape))
                      for a, kind in zip(ins, kinds) if kind == "array"]
        if outs is not None:
            op_strides += [list(o._strides) for o in outs]
        else:
            op_strides += [list(_contiguous(shape)) for _ in out_dt]
        mshape, mstrides = merge_dims(shape, op_strides)
        contiguous = len(mshape) == 1 and all(s[0] == 1 for s in mstrides)
        ndim = 0 if contiguous else len(mshape)
        load_outs = tuple(given is not None and not self._first_write[p.name] for p in self.out_params)
        key = (tuple(d.name for d in param_dt), tuple(operand_dt), tuple(kinds), tuple(d.name for d in out_dt),
               ndim, load_outs)
        return _Call(key, shape, outs, (mshape, mstrides), kinds, ins, scalars)

    def __call__(self, *args: Any, size: int | None = None) -> Any:
        """Run the kernel (see the class and module docstrings). Returns the output array, a tuple
        of them for several outputs (or with ``return_tuple``), or None with ``no_return``.

        Raises TypeError (argument count or types, dtype binding, unsafe casts, dtypes the device
        lacks), ValueError (shapes, outputs, size), OverflowError (scalars out of range) and
        KernelCompileError (the WGSL does not compile)."""
        call = self._plan(args, size)
        assert call.outs is not None
        if call.key is None:  # no elements: nothing to run
            return self._result(call.outs)
        be = _dispatch.backend()
        ctx = be.context
        try:
            compiled = self._compiled(ctx, call.key)
            records = self._records(be, compiled.spec, call)
            with _profile.label(self.name):
                for words, bindings, grid in records:
                    ctx.dispatch(_TEMPLATE, words, bindings, grid, compiled.defines)
        except BackendError as exc:
            raise _translate(exc) from None
        return self._result(call.outs)

    def _records(self, be: Any, spec: codegen.ElementwiseSpec, call: "_Call") -> list[Any]:
        """Plan every dispatch (validating every window) before anything is recorded."""
        mshape, mstrides = call.merged
        ins, kinds, outs, scalars = call.ins, call.kinds, call.outs, call.scalars
        arrays = [a for a, kind in zip(ins, kinds) if kind == "array"] + list(outs)
        itemsizes = [a.dtype.itemsize for a in arrays]
        raw_bindings, raw_firsts = [], []
        for a, kind in zip(ins, kinds):
            if kind != "raw":
                continue
            nbytes = a.size * a.dtype.itemsize
            if nbytes > be.max_window_bytes():
                raise ValueError(f"{self.name}: a raw argument of {nbytes} bytes exceeds one storage binding "
                                 f"({be.max_window_bytes()} bytes)")
            win = be.window(a._ptr, nbytes, a.dtype.itemsize)
            raw_bindings.append(win.binding)
            raw_firsts.append(win.first)
        total = size_of(call.shape)
        if total >= 1 << 32:
            raise ValueError(f"{self.name}: {total} elements exceed the 2**32 a kernel may index")
        records = []
        base = 0
        ctx = be.context
        for sub_shape, offs in plan_chunks(mshape, mstrides, itemsizes, be.max_window_bytes()):
            n = math.prod(sub_shape)
            bindings, firsts = [], []
            for a, size, st, off in zip(arrays, itemsizes, mstrides, offs):
                lo, stop = extent(sub_shape, st)
                win = be.window(a._ptr + (off + lo) * size, (stop - lo) * size, size)
                bindings.append(win.binding)
                firsts.append(win.first - lo)
            words = codegen.param_words(spec, n, sub_shape, firsts, mstrides, scalars)
            words += [base, total] + raw_firsts
            groups = -(-(-(-n // codegen.ELEMENTS_PER_THREAD)) // codegen.WORKGROUP)
            records.append((words, bindings + raw_bindings, ctx.fold_grid(groups)))
            base += n
        return records

    def _result(self, outs: Sequence[GpuArray]) -> Any:
        if self.no_return:
            return None
        if len(outs) == 1 and not self.return_tuple:
            return outs[0]
        return tuple(outs)


def _contiguous(shape: Sequence[int]) -> tuple[int, ...]:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def _byte_span(x: GpuArray) -> tuple[Any, int, int]:
    lo, stop = extent(x.shape, x._strides)
    size = x.dtype.itemsize
    return x._storage, (x._offset + lo) * size, (x._offset + stop) * size


def _overlap(a: GpuArray, b: GpuArray) -> bool:
    """Whether the byte ranges of two non-empty arrays intersect (same allocation)."""
    if a.size == 0 or b.size == 0:
        return False
    sa, a0, a1 = _byte_span(a)
    sb, b0, b1 = _byte_span(b)
    return sa is sb and a0 < b1 and b0 < a1


# ---------------------------------------------------------------------------------------------
# RawKernel
# ---------------------------------------------------------------------------------------------
_WORKGROUP_SIZE = re.compile(r"@workgroup_size\s*\(([^)]*)\)")


def _pack_params(params: Any) -> bytes:
    """The uniform bytes of ``params`` (see the module docstring); TypeError/ValueError if unusable."""
    if params is None:
        return b""
    if isinstance(params, np.ndarray):
        return np.ascontiguousarray(params).tobytes()
    if isinstance(params, (bytes, bytearray, memoryview)):
        return bytes(params)
    if isinstance(params, (str, dict)) or not isinstance(params, Sequence):
        raise TypeError("params must be a sequence of numbers or a bytes-like object, "
                        f"not {type(params).__name__}")
    out = bytearray()
    for k, v in enumerate(params):
        if isinstance(v, np.generic):
            if v.dtype.kind not in "biuf" or v.dtype.itemsize not in (4, 8):
                raise TypeError(f"params[{k}]: NumPy scalars must be 4- or 8-byte numbers, not {v.dtype}")
            out += v.tobytes()
        elif isinstance(v, builtins.bool):
            out += struct.pack("<I", int(v))
        elif isinstance(v, int):
            if not -(1 << 31) <= v < (1 << 32):
                raise ValueError(f"params[{k}] = {v} does not fit 32 bits "
                                 "(pass a NumPy 8-byte scalar for 64-bit values)")
            out += struct.pack("<I", v & 0xFFFFFFFF)
        elif isinstance(v, float):
            with np.errstate(over="ignore"):
                out += np.float32(v).tobytes()
        else:
            raise TypeError(f"params[{k}] must be a number, not {type(v).__name__}")
    return bytes(out)


#: ``@group(G) @binding(B) var<SPACE[, ACCESS]> NAME: TYPE;`` (the attributes in either order).
_BINDING_DECL = re.compile(
    r"(?P<attrs>(?:@\s*(?:group|binding)\s*\(\s*[^)]*\)\s*){2})"
    r"(?P<var>var\s*<\s*(?P<space>uniform|storage)\s*(?:,\s*(?P<access>read_write|read|write)\s*)?>)"
    r"\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*:\s*(?P<type>[^;]+);")
_ATTR = re.compile(r"(group|binding)\s*\(\s*([0-9]+)[iu]?\s*\)")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
#: WGSL scalar (or shorthand vector suffix) -> the dtypes an array of it takes (besides the packed
#: 1- and 2-byte dtypes, which ``u32``/``i32`` arrays take in NumPy's byte layout).
_SCALAR_DTYPES = {"f32": ("float32",), "f16": ("float16",), "f64": ("float64",), "i32": ("int32",),
                  "u32": ("uint32",), "i64": ("int64",), "u64": ("uint64",)}
_SHORTHAND = {"f": "f32", "h": "f16", "i": "i32", "u": "u32"}
_WRAPPERS = re.compile(r"\b(?:array|atomic|vec[234]|mat[234]x[234])\b")


@dataclass(frozen=True)
class _Binding:
    """One buffer binding a RawKernel's shader declares (group 0)."""

    number: int  # @binding in the user's source
    space: str  # 'uniform' or 'storage'
    access: str  # 'read', 'read_write' ('' for a uniform)
    name: str
    type: str
    slot: int  # the binding it gets in the compiled source: 0 the uniform, 1.. storage in order

    def describe(self) -> str:
        var = "var<uniform>" if self.space == "uniform" else f"var<storage, {self.access}>"
        return f"binding {self.number} (`{self.name}`: {var} {self.type})"

    def dtypes(self) -> tuple[str, ...] | None:
        """The dtype names an array bound here may have (None: any, e.g. an array of structs)."""
        text = self.type.replace(" ", "")
        rest = _WRAPPERS.sub("", text)
        found = re.fullmatch(r"[<>,0-9]*(f16|f32|f64|i32|u32|i64|u64)?[<>,0-9]*", rest)
        scalar = found.group(1) if found else None
        short = re.fullmatch(r".*\bvec[234]([fhiu])\b.*", self.type)
        if scalar is None and short and not rest.strip("<>,0-9"):
            scalar = _SHORTHAND[short.group(1)]
        if scalar is None and re.fullmatch(r"(?:array<)?vec[234][fhiu](?:,[0-9]+)?>?", text):
            scalar = _SHORTHAND[text.replace("array<", "")[4]]
        if scalar is None:
            return None
        packed = ("bool", "int8", "uint8", "int16", "uint16", "float16") if scalar in ("u32", "i32") else ()
        return _SCALAR_DTYPES[scalar] + packed


def _reflect(code: str, kernel: str) -> tuple[list[_Binding], str]:
    """The buffer bindings ``code`` declares (by binding number) and the source compiled for them:
    every declaration renumbered to the context's layout (the uniform at 0, storage buffers at
    1.. in binding order, all ``read_write``: the layout's buffer type; a ``read`` declaration is
    never written by valid WGSL). Raises ValueError for another @group than 0, two uniforms,
    a binding number used twice, or bindings that are not buffers (textures, samplers)."""
    blank = _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), code)  # positions kept
    found = []
    for m in _BINDING_DECL.finditer(blank):
        attrs = dict((k, int(v)) for k, v in _ATTR.findall(m.group("attrs")))
        if set(attrs) != {"group", "binding"}:
            raise ValueError(f"RawKernel {kernel!r}: cannot read the attributes {m.group('attrs').strip()!r}")
        if attrs["group"] != 0:
            raise ValueError(f"RawKernel {kernel!r}: `{m.group('name')}` is in @group({attrs['group']}); "
                             "only @group(0) is bound")
        found.append((attrs["binding"], m))
    if len(found) != len(re.findall(r"@\s*binding\s*\(", blank)):
        raise ValueError(f"RawKernel {kernel!r}: only buffer bindings (var<uniform>, var<storage>) are "
                         "supported, not textures or samplers")
    numbers = [b for b, _ in found]
    if len(set(numbers)) != len(numbers):
        raise ValueError(f"RawKernel {kernel!r}: a @binding number is used twice: {sorted(numbers)}")
    uniforms = [m.group("name") for _, m in found if m.group("space") == "uniform"]
    if len(uniforms) > 1:
        raise ValueError(f"RawKernel {kernel!r}: at most one var<uniform> (the params) is supported, "
                         f"found {uniforms}")
    bindings, slot, edits = [], 1, []
    for number, m in sorted(found, key=lambda item: item[0]):
        uniform = m.group("space") == "uniform"
        here = 0 if uniform else slot
        slot += 0 if uniform else 1
        access = "" if uniform else (m.group("access") or "read")
        bindings.append(_Binding(number, m.group("space"), access, m.group("name"),
                                 " ".join(m.group("type").split()), here))
        var = "var<uniform>" if uniform else "var<storage, read_write>"
        edits.append((m.start("attrs"), m.end("var"), f"@group(0) @binding({here}) {var}"))
    source = code
    for lo, hi, text in sorted(edits, reverse=True):
        source = source[:lo] + text + " " + source[hi:]
    return bindings, source


class RawKernel:
    """A whole WGSL compute shader whose buffer bindings are read from its declarations (see the
    module docstring).

    ``RawKernel(code, name="main")``: ``name`` is the entry point (a ``@compute`` function of that
    name must be in ``code``; it is renamed to ``main`` internally, so ``code`` must not define
    another ``main``). ``bindings``: the declared buffer bindings in binding order. Raises
    TypeError for non-string arguments, ValueError when the entry point is missing or the
    bindings cannot be bound (another @group than 0, more than one ``var<uniform>``, textures).
    Compiled at the first call, cached by source.
    """

    def __init__(self, code: str, name: str = "main") -> None:
        if not isinstance(code, str) or not isinstance(name, str):
            raise TypeError("code and name must be strings")
        if not _IDENT.match(name):
            raise ValueError(f"{name!r} is not a valid WGSL entry point name")
        decl = re.compile(rf"\bfn\s+{re.escape(name)}\s*\(")
        found = decl.findall(code)
        if len(found) != 1:
            raise ValueError(f"the source must define the entry point `fn {name}(...)` exactly once "
                             f"(found {len(found)})")
        if name != "main":
            if re.search(r"\bfn\s+main\s*\(", code):
                raise ValueError("the source defines another function named `main`; rename it")
            code = decl.sub("fn main(", code, count=1)
        self.code = code
        self.name = name
        self.bindings, self._source = _reflect(code, name)
        self._storage = [b for b in self.bindings if b.space == "storage"]
        self._uniform = next((b for b in self.bindings if b.space == "uniform"), None)
        sizes = _WORKGROUP_SIZE.search(code)
        self.workgroup_size: tuple[int, int, int] | None = None
        if sizes:
            try:
                dims = [int(s.strip().rstrip("iu"), 0) for s in sizes.group(1).split(",") if s.strip()]
                self.workgroup_size = tuple(dims + [1] * (3 - len(dims)))  # type: ignore[assignment]
            except ValueError:
                pass  # override-expressions: not checked

    def __repr__(self) -> str:
        return f"RawKernel(name={self.name!r}, workgroup_size={self.workgroup_size})"

    @staticmethod
    def _regions(source: str) -> list[tuple[str, int, int]]:
        return [("source", 1, len(source.split("\n")))]

    def _match(self, args: Any, params: Any) -> tuple[list[GpuArray], Any]:
        """The arrays of the storage bindings in binding order and the params value (see
        ``__call__``); TypeError naming the binding for a wrong count, key or dtype."""
        storage, uniform, kernel = self._storage, self._uniform, self.name
        declared = ", ".join(b.describe() for b in self.bindings) or "no buffer bindings"
        if isinstance(args, Mapping):
            by_key = {}
            for key, value in args.items():
                hit = [b for b in self.bindings if key in (b.number, b.name)] if not isinstance(key, builtins.bool) else []
                if not hit:
                    raise TypeError(f"RawKernel {kernel!r}: no binding {key!r}; the shader declares {declared}")
                by_key[hit[0].number] = value
            if uniform is not None and uniform.number in by_key:
                if params is not None:
                    raise TypeError(f"RawKernel {kernel!r}: {uniform.describe()} given twice (args and params=)")
                params = by_key.pop(uniform.number)
            missing = [b.describe() for b in storage if b.number not in by_key]
            if missing:
                raise TypeError(f"RawKernel {kernel!r}: no array for {', '.join(missing)}")
            arrays = [by_key[b.number] for b in storage]
        else:
            if isinstance(args, GpuArray) or not isinstance(args, Sequence) or isinstance(args, (str, bytes)):
                raise TypeError("args must be a sequence (tuple or list) of gputensor arrays or a mapping "
                                "{binding number or name: array}")
            args = list(args)
            if uniform is not None and params is None and len(args) == len(self.bindings):
                params = args.pop([b.number for b in self.bindings].index(uniform.number))
            if len(args) != len(storage):
                want = f"{len(storage)} array{'s' if len(storage) != 1 else ''}"
                raise TypeError(f"RawKernel {kernel!r} takes {want} ({declared}), "
                                f"{len(args)} given")
            arrays = args
        for k, (a, b) in enumerate(zip(arrays, storage)):
            if not isinstance(a, GpuArray):
                raise TypeError(f"args[{k}] must be a gputensor array, not {type(a).__name__} "
                                f"(for {b.describe()})")
            fits = b.dtypes()
            if fits is not None and a.dtype.name not in fits:
                raise TypeError(f"RawKernel {kernel!r}: {b.describe()} cannot take a {a.dtype.name} array "
                                f"(it takes {', '.join(fits)})")
        if uniform is None and params is not None:
            raise TypeError(f"RawKernel {kernel!r}: params given, but the shader declares no var<uniform>")
        if uniform is not None and params is None:
            raise TypeError(f"RawKernel {kernel!r}: {uniform.describe()} needs params=")
        return arrays, params

    def __call__(self, grid: Any, *rest: Any, params: Any = None) -> None:
        """``k(grid, args, params=...)`` or ``k(grid, block, args, params=...)``.

        ``grid``: workgroup counts (int or up to 3 ints); ``block`` (optional, CuPy style) must
        equal the source's ``@workgroup_size`` when given; ``args``: the gputensor arrays of the
        shader's storage bindings, in binding order (a sequence; with every binding, the uniform
        one's entry is its params), or a mapping {binding number or variable name: array}.
        Raises TypeError (argument types; a missing, extra or ill-typed binding, named), ValueError
        (grid, block, params too large, arrays too large for one binding) and KernelCompileError.
        """
        if len(rest) == 1:
            block, args = None, rest[0]
        elif len(rest) == 2:
            block, args = rest
        else:
            raise TypeError("call a RawKernel as k(grid, args) or k(grid, block, args)")
        be = _dispatch.backend()
        ctx = be.context
        dims = _grid(grid, ctx.max_workgroups_per_dim)
        if block is not None:
            want = (block,) if isinstance(block, int) else tuple(block)
            want = tuple(int(b) for b in want) + (1,) * (3 - len(want))
            if self.workgroup_size is not None and want != self.workgroup_size:
                raise ValueError(f"block {want} differs from the source's @workgroup_size {self.workgroup_size}; "
                                 "WGSL fixes the workgroup size in the source")
        args, params = self._match(args, params)
        max_buffers = int(ctx.limits.get("max-storage-buffers-per-shader-stage", 8))
        if len(args) > max_buffers:
            raise ValueError(f"{len(args)} arrays exceed the adapter's {max_buffers} storage buffers per shader")
        raw = _pack_params(params)
        limit = min(int(ctx.limits.get("max-uniform-buffer-binding-size", 65536)), 64 * 1024)
        if len(raw) > limit:
            raise ValueError(f"params of {len(raw)} bytes exceed the {limit}-byte limit")
        bindings, staged = [], []
        try:
            for a in args:
                nbytes = a.size * a.dtype.itemsize
                if nbytes > be.max_window_bytes():
                    raise ValueError(f"{self.name}: an array of {nbytes} bytes exceeds one storage binding "
                                     f"({be.max_window_bytes()} bytes); split the work")
                target = a
                if not is_contiguous(a.shape, a._strides) or be.window(a._ptr, nbytes, a.dtype.itemsize).first:
                    target = _dispatch.contiguous_copy(a)
                    staged.append((a, target))
                win = be.window(target._ptr, nbytes, target.dtype.itemsize)
                if win.first:  # pragma: no cover - fresh allocations are aligned
                    raise ValueError("a temporary array is not aligned for binding")
                bindings.append(win.binding)
            _compile(ctx, self.name, len(args), None, self.name, self._regions, source=self._source)
            if 0 in dims:
                return
            with _profile.label(self.name):
                ctx.dispatch(self.name, raw, bindings, dims, source=self._source)
            for a, tmp in staged:
                _dispatch.copy_into(a, tmp)
        except BackendError as exc:
            raise _translate(exc) from None


def _grid(grid: Any, limit: int) -> tuple[int, int, int]:
    if isinstance(grid, (int, np.integer)) and not isinstance(grid, builtins.bool):
        dims = [int(grid)]
    elif isinstance(grid, Sequence) and not isinstance(grid, str) and 1 <= len(grid) <= 3 \
            and all(isinstance(g, (int, np.integer)) and not isinstance(g, builtins.bool) for g in grid):
        dims = [int(g) for g in grid]
    else:
        raise ValueError(f"grid must be an int or a tuple of 1 to 3 ints (workgroups), not {grid!r}")
    if any(g < 0 or g > limit for g in dims):
        raise ValueError(f"grid {tuple(dims)}: each dimension must be in [0, {limit}] workgroups")
    return tuple(dims + [1] * (3 - len(dims)))  # type: ignore[return-value]
