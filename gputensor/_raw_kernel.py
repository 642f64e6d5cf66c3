"""``gputensor.RawKernel``: a user's whole WGSL compute shader, its bindings read from the
source's declarations, launched on a grid of workgroups with a uniform of parameters (see
``_user_kernels`` for the user-facing rules).
"""

from __future__ import annotations

import builtins
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _dispatch, _profile
from ._array_object import GpuArray
from ._backend.errors import BackendError
from ._backend.launch import LaunchProgram, Record, Region
from ._shapes import is_contiguous
from ._user_kernel_compile import _IDENT, _compile, _translate

__all__ = ["RawKernel"]

#: The parameter struct of a RawKernel program: no words (the params bytes are the tail).
_NO_WORDS = struct.Struct("<0I")
#: Programs a RawKernel keeps (grids seen), at most.
_PROGRAMS_KEPT = 64
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
        #: (binding count, grid) -> (context, ``LaunchProgram``) of calls made (``_program``)
        self._programs: dict[tuple[Any, ...], tuple[Any, LaunchProgram]] = {}
        sizes = _WORKGROUP_SIZE.search(code)
        self.workgroup_size: tuple[int, int, int] | None = None
        if sizes:
            try:
                dims = [int(s.strip().rstrip("iu"), 0) for s in sizes.group(1).split(",") if s.strip()]
                self.workgroup_size = tuple(dims + [1] * (3 - len(dims)))  # type: ignore[assignment]
            except ValueError:
                pass  # override-expressions: not checked

    def _program(self, ctx: Any, pipe: Any, n_bindings: int, dims: tuple[int, int, int]) -> LaunchProgram:
        """The ``launch.LaunchProgram`` of a call with ``n_bindings`` arrays (each bound whole,
        checked by the caller) over the grid ``dims``, kept per context: no parameter words of
        its own, the call's params bytes its replay's tail."""
        key = (n_bindings, dims)
        kept = self._programs.get(key)
        if kept is None or kept[0] is not ctx:
            regions = tuple(Region(k, 0, 4, 4, 0, 0, 0) for k in range(n_bindings))
            program = LaunchProgram.compile(self.name, _NO_WORDS, ctx, [Record(pipe, None, (), dims, regions)], ())
            if len(self._programs) >= _PROGRAMS_KEPT:
                self._programs.clear()
            kept = self._programs[key] = (ctx, program)
        return kept[1]

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
        bindings, staged, targets = [], [], []
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
                targets.append(target)
            pipe = _compile(ctx, self.name, len(args), None, self.name, self._regions, source=self._source)
            if 0 in dims:
                return
            with _profile.label(self.name):
                if ctx.__dict__.get("dispatch") is not None:  # a dispatch wrapper: the reference path
                    regions = [Region(k, 0, t.size * t.dtype.itemsize, t.dtype.itemsize, 0, 0, 0)
                               for k, t in enumerate(targets)]
                    program = LaunchProgram.compile(self.name, _NO_WORDS, ctx, [Record(pipe, None, (), dims, regions)], ())
                    program.dispatch(be, ctx, [t._ptr for t in targets], tail=raw, source=self._source)
                else:
                    self._program(ctx, pipe, len(bindings), dims).record(ctx, bindings, None, raw)
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
