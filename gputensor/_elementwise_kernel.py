"""``gputensor.ElementwiseKernel``: a user's WGSL statements over broadcast arrays and scalars, in
the spirit of CuPy's (the parameter strings, type placeholders, the generated kernel and its
launch; see ``_user_kernels`` for the user-facing rules).
"""

from __future__ import annotations

import builtins
import math
import re
import struct
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _dispatch, _dtypes, _profile
from ._array_object import GpuArray
from ._backend import elementwise as codegen
from ._backend import kernels
from ._backend.elementwise import _scalar_load, scalar_words
from ._backend.launch import LaunchProgram, Record, Region
from ._backend.errors import BackendError
from ._backend.ops_elementwise import extent, merge_dims, plan_chunks
from ._backend.wgsl_types import convert, storage_type
from ._devices import DEFAULT_DEVICE, default_dtype
from ._overlap import conflicts
from ._dtypes import DType
from ._shapes import broadcast_shapes, broadcast_strides, is_contiguous, size_of
from ._user_kernel_compile import _IDENT, _compile, _translate

__all__ = ["ElementwiseKernel"]

_TEMPLATE = "user_elementwise"
#: Launch programs an ElementwiseKernel keeps (call structures seen), at most.
_PROGRAMS_KEPT = 256

_PARAM = re.compile(r"\s*(?:(raw)\s+)?([A-Za-z_][A-Za-z0-9_]*)\s+([A-Za-z_][A-Za-z0-9_]*)\s*\Z")
_RESERVED_NAMES = frozenset({"i", "n", "P", "params", "offsets", "Offsets", "main", "linear_group"})
_RESERVED_PLACEHOLDERS = frozenset({"P", "i", "n"})


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
    #: the dtypes of the scalar inputs, in order (their words: a launch's per-call bytes)
    scalar_dtypes: tuple[str, ...] = ()


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
        #: call structure -> (context, ``LaunchProgram``) (``_program``)
        self._programs: dict[tuple[Any, ...], tuple[Any, LaunchProgram]] = {}
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
        spec_inputs = tuple((d, False) for d in array_dtypes[:-1])
        # The generic elementwise spec gives the parameter layout of the array operands and their
        # `offsets` function (inputs, then outputs); its expression is unused here. The scalar
        # inputs' words come last (after WORD_BASE, WORD_TOTAL and the raw inputs' first elements),
        # so that they are the per-call bytes of a replayed launch program.
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
        scalar_word: dict[int, int] = {}
        word = word_base + 2 + len(raw)
        for k in sca:
            scalar_word[k] = word
            word += max(1, storage_type(param_dt[k]).itemsize // 4)
        n_words = word

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
                value = _scalar_load(storage_type(param_dt[k]), scalar_word[k])
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
        return _Compiled(defines, spec, len(array_dtypes) + len(raw), word_base,
                         tuple(param_dt[k] for k in sca))

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
                if any(conflicts(a, strides, o) for o in outs):
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
            program, ptrs = self._program(be, compiled, call)
            tail = b"".join(_word_bytes(scalar_words(v, dt)) for v, dt in zip(call.scalars, compiled.scalar_dtypes))
            with _profile.label(self.name):
                if ctx.__dict__.get("dispatch") is not None:  # a dispatch wrapper: the reference path
                    program.dispatch(be, ctx, ptrs, None, tail)
                else:
                    bases = []
                    for ptr in ptrs:  # (the arrays' views lie in their allocations)
                        alloc, offset = be.resolve(ptr, 0)
                        buffer = alloc.buffer
                        bases.append((buffer, buffer.size, alloc.nbytes, offset, ptr, alloc.whole))
                    program.replay(be, ctx, bases, None, tail)  # type: ignore[arg-type]
        except BackendError as exc:
            raise _translate(exc) from None
        return self._result(call.outs)

    def _program(self, be: Any, compiled: _Compiled, call: "_Call") -> tuple[LaunchProgram, list[int]]:
        """The ``launch.LaunchProgram`` of ``call``'s structure (kept per kernel: every chunk of
        the iteration space one dispatch whose windows fit one binding, the arrays' first-element
        words patched, the scalars' words the per-call bytes) and the pointers of its operands
        (the array operands, then the raw inputs). ValueError for a raw input larger than one
        binding or more than 2**32 elements, before anything is recorded."""
        mshape, mstrides = call.merged
        ins, kinds, outs = call.ins, call.kinds, call.outs
        arrays = [a for a, kind in zip(ins, kinds) if kind == "array"] + list(outs)
        raws = [a for a, kind in zip(ins, kinds) if kind == "raw"]
        itemsizes = tuple(a.dtype.itemsize for a in arrays)
        raw_sizes = tuple((a.size * a.dtype.itemsize, a.dtype.itemsize) for a in raws)
        for nbytes, _ in raw_sizes:
            if nbytes > be.max_window_bytes():
                raise ValueError(f"{self.name}: a raw argument of {nbytes} bytes exceeds one storage binding "
                                 f"({be.max_window_bytes()} bytes)")
        total = size_of(call.shape)
        if total >= 1 << 32:
            raise ValueError(f"{self.name}: {total} elements exceed the 2**32 a kernel may index")
        ctx = be.context
        key = (call.key, tuple(mshape), tuple(tuple(st) for st in mstrides), itemsizes, raw_sizes,
               be.max_window_bytes())
        kept = self._programs.get(key)
        if kept is None or kept[0] is not ctx or not kept[1].valid_for(ctx):
            kept = (ctx, self._make_program(ctx, compiled, mshape, mstrides, itemsizes, raw_sizes, total,
                                            be.max_window_bytes()))
            with self._lock:
                if len(self._programs) >= _PROGRAMS_KEPT:
                    self._programs.clear()
                self._programs[key] = kept
        return kept[1], [a._ptr for a in arrays] + [a._ptr for a in raws]

    @staticmethod
    def _make_program(ctx: Any, compiled: _Compiled, mshape: Sequence[int], mstrides: Sequence[Sequence[int]],
                      itemsizes: Sequence[int], raw_sizes: Sequence[tuple[int, int]], total: int,
                      window: int) -> LaunchProgram:
        """The program of ``_program``: operands 0, 1, ... the array operands (inputs, then
        outputs), then the raw inputs (each bound whole)."""
        spec = compiled.spec
        pipe = ctx.pipeline(_TEMPLATE, compiled.n_storage, compiled.defines)
        n_arrays = len(itemsizes)
        raw_regions = [Region(n_arrays + r, 0, nbytes, size, 0, compiled.word_base + 2 + r, 0)
                       for r, (nbytes, size) in enumerate(raw_sizes)]
        records = []
        base = 0
        for sub_shape, offs in plan_chunks(mshape, mstrides, list(itemsizes), window):
            n = math.prod(sub_shape)
            regions = []
            for k, (size, st, off) in enumerate(zip(itemsizes, mstrides, offs)):
                lo, stop = extent(sub_shape, st)
                # (the array's offset word: after n, the shape and the arrays before it)
                regions.append(Region(k, (off + lo) * size, (stop - lo) * size, size, 0,
                                      1 + spec.ndim + k * (1 + spec.ndim), -lo))
            words = codegen.param_words(spec, n, sub_shape, [0] * n_arrays, mstrides, ())
            words += [base, total] + [0] * len(raw_sizes)
            groups = -(-(-(-n // codegen.ELEMENTS_PER_THREAD)) // codegen.WORKGROUP)
            records.append(Record(pipe, compiled.defines, tuple(words), ctx.fold_grid(groups),
                                  tuple(regions + raw_regions)))
            base += n
        return LaunchProgram.compile(_TEMPLATE, struct.Struct(f"<{len(records[0].words)}I"), ctx, records, ())

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


def _word_bytes(words: Sequence[int]) -> bytes:
    """``words`` (u32 values) as little-endian parameter bytes."""
    return struct.pack(f"<{len(words)}I", *words)
