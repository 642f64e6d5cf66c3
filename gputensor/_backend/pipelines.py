"""The compute-pipeline cache of a WgpuContext (a mixin of ``WgpuContext``).

Pipelines are cached by ``(name, number of storage bindings, defines)``, looked up first by the
defines' items in the caller's order (no sorting on a hit), then by their canonical sorted form;
a kernel given as full source is cached by its text. Every kernel has entry point ``main``,
binding 0 a uniform with a dynamic offset and bindings 1..n storage buffers, each laid out as
its declaration in the source says (``shader_bindings``: ``read-only-storage`` for
``var<storage, read>`` and for bindings the kernel does not use, ``storage`` for
``var<storage, read_write>``); one bind-group layout and pipeline layout per such signature
(``layout_code``: its number, part of every bind-group key). ``writable_variant`` gives the
pipeline with some read bindings laid out (and declared) writable, for a dispatch that binds
their buffer writable too. The cache is guarded by the context's lock;
``stats["pipelines_compiled"]`` counts compilations.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from . import device_state, kernels
from .errors import device_error, invalid_argument, unsupported
from .implementation import wgpu
from .shader_bindings import READ, WRITE, storage_access, with_writable

__all__ = ["Pipelines", "PipelineInfo"]

#: The 64-bit integer types of WGSL: native (``shader-int64``) or emulated (``int64_emul.wgsl``).
_INT64_TYPES = re.compile(r"\b(i64e?|u64e?)\b")


class PipelineInfo(NamedTuple):
    """What the cache knows of a compiled pipeline: its kernel ``name``, WGSL ``source``, the
    ``access`` of each storage binding (``shader_bindings``), and its layout's ``writable``
    flags (per storage binding) and number ``layout``."""

    name: str
    source: str
    access: tuple[str, ...]
    writable: tuple[bool, ...]
    layout: int


class Pipelines:
    """``pipeline(name, n_storage, defines, source=...)`` for a context with ``device``,
    ``_lock`` and ``stats`` (call ``_init_pipelines`` from its ``__init__``)."""

    device: Any
    stats: dict[str, int]
    _lock: threading.RLock

    def _init_pipelines(self) -> None:
        self._pipelines: dict[tuple[Any, ...], Any] = {}
        # (name, n_storage, defines items in the caller's order or None, source) -> pipeline
        self._pipelines_fast: dict[tuple[Any, ...], Any] = {}
        # (access, writable flags) -> layout number; per number (bind-group layout, pipeline
        # layout, flags); the layout objects per flags
        self._layout_codes: dict[tuple[tuple[str, ...], tuple[bool, ...]], int] = {}
        self._layouts: list[tuple[Any, Any, tuple[bool, ...]]] = []
        self._layout_objects: dict[tuple[bool, ...], tuple[Any, Any]] = {}
        #: pipeline -> its layout number (the first item of its bind groups' cache keys: the
        #: same for pipelines whose storage bindings have the same access and layout)
        self.layout_code: dict[Any, int] = {}
        self._pipeline_info: dict[Any, PipelineInfo] = {}
        self._variants: dict[tuple[Any, tuple[int, ...]], Any] = {}

    def _layout(self, access: tuple[str, ...], writable: tuple[bool, ...]) -> int:
        """The number of the layout of storage bindings of ``access`` whose binding i is
        ``storage`` where ``writable[i]``, else ``read-only-storage`` (created on first use;
        lock held)."""
        code = self._layout_codes.get((access, writable))
        if code is None:
            objects = self._layout_objects.get(writable)
            if objects is None:
                vis = wgpu.ShaderStage.COMPUTE
                ro, rw = wgpu.BufferBindingType.read_only_storage, wgpu.BufferBindingType.storage
                entries = [{"binding": 0, "visibility": vis,
                            "buffer": {"type": wgpu.BufferBindingType.uniform, "has_dynamic_offset": True}}]
                entries += [{"binding": i + 1, "visibility": vis, "buffer": {"type": rw if w else ro}}
                            for i, w in enumerate(writable)]
                bgl = self.device.create_bind_group_layout(entries=entries)
                objects = (bgl, self.device.create_pipeline_layout(bind_group_layouts=[bgl]))
                self._layout_objects[writable] = objects
            self._layouts.append((*objects, writable))
            code = self._layout_codes[(access, writable)] = len(self._layouts) - 1
        return code

    def bind_group_layout(self, code: int) -> tuple[Any, tuple[bool, ...]]:
        """(bind-group layout, writable flags) of layout number ``code``."""
        bgl, _, writable = self._layouts[code]
        return bgl, writable

    def pipeline_info(self, pipe: Any) -> PipelineInfo:
        """What the cache knows of ``pipe`` (a pipeline it compiled)."""
        return self._pipeline_info[pipe]

    def pipeline(self, name: str, n_storage: int, defines: Mapping[str, object] | None = None,
                 *, source: str | None = None) -> Any:
        """The compiled compute pipeline for kernel ``name`` specialised by ``defines`` (cached).

        Every kernel has entry point ``main``, binding 0 a uniform and bindings 1..n_storage
        storage buffers (read-only or writable as declared). With ``source`` (complete WGSL
        text, e.g. a generated or user kernel) that text is compiled instead of the template
        ``name`` (``name`` is the label; ``defines`` must then be None) and cached by it. Raises BackendError (device error) with
        the compiler's message when the source does not compile, (invalid argument) for a
        template/placeholder mismatch or a storage binding declared outside 1..n_storage.
        """
        try:
            fast = (name, n_storage, None if defines is None else tuple(defines.items()), source)
            pipe = self._pipelines_fast.get(fast)
        except TypeError:  # unhashable define values: the canonical key below handles them
            fast, pipe = None, None
        if pipe is not None:
            return pipe
        with self._lock:
            pipe = self._pipeline_slow(name, n_storage, defines, source)
            if fast is not None:
                self._pipelines_fast[fast] = pipe
        return pipe

    def _pipeline_slow(self, name: str, n_storage: int, defines: Mapping[str, object] | None,
                       source: str | None) -> Any:
        if source is not None:
            if defines:
                raise invalid_argument(f"kernel {name!r}: give a template's defines or a source, not both")
            key: tuple[Any, ...] = ("source", source, n_storage)
        else:
            key = (name, tuple(sorted((k, str(v)) for k, v in (defines or {}).items())), n_storage)
        pipe = self._pipelines.get(key)
        if pipe is None:
            if source is None:
                try:
                    source = kernels.render(name, defines)
                except (KeyError, ValueError) as exc:  # placeholder mismatch, a bad //#unroll
                    raise invalid_argument(str(exc.args[0]) if exc.args else str(exc)) from None
            pipe = self._compile(name, source, n_storage, ())
            self._pipelines[key] = pipe
        return pipe

    def _compile(self, name: str, source: str, n_storage: int, writable: Sequence[int]) -> Any:
        """Compile ``source`` with the layout its declarations give, storage bindings
        ``writable`` (indices from 0) laid out writable too (lock held)."""
        try:
            access = storage_access(source, n_storage)
        except ValueError as exc:
            raise invalid_argument(f"kernel {name!r}: {exc}") from None
        flags = tuple(a == WRITE or i in writable for i, a in enumerate(access))
        code = self._layout(access, flags)
        layout = self._layouts[code][1]
        if "64e" in source:
            source = kernels.with_helpers(source)
        kernels.dump(name, source)
        try:
            module = self.device.create_shader_module(label=name, code=source)
            pipe = self.device.create_compute_pipeline(
                label=name, layout=layout, compute={"module": module, "entry_point": "main"}
            )
        except Exception as exc:
            if "shader-int64" not in self.features and _INT64_TYPES.search(source):
                raise unsupported(
                    f"kernel {name!r} does not support int64/uint64 on this adapter, which lacks "
                    "shader-int64 (int64/uint64 are emulated there as two 32-bit words, but not in "
                    "this kernel); convert with x.astype(gt.int32) or x.astype(gt.uint32) first",
                    "shader-int64") from None
            raise device_state.classify(self, device_error(f"kernel {name!r} failed to compile: {exc}")) from exc
        self.stats["pipelines_compiled"] += 1
        self._pipeline_info[pipe] = PipelineInfo(name, source, access, flags, code)
        self.layout_code[pipe] = code
        return pipe

    def writable_variant(self, pipe: Any, bindings: tuple[int, ...]) -> Any:
        """``pipe`` with its storage bindings ``bindings`` (indices from 0, sorted) laid out
        writable, those it declares ``read`` declared ``read_write`` (cached; lock held). It
        reads what ``pipe`` reads: for a dispatch that binds one buffer both read-only and
        writable, which WebGPU forbids. BackendError (device error) as ``pipeline``."""
        key = (pipe, bindings)
        variant = self._variants.get(key)
        if variant is None:
            info = self._pipeline_info[pipe]
            declared = [i + 1 for i in bindings if info.access[i] == READ]
            source = with_writable(info.source, declared) if declared else info.source
            variant = self._variants[key] = self._compile(info.name, source, len(info.access), bindings)
        return variant
