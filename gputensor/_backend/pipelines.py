"""The compute-pipeline cache of a WgpuContext (a mixin of ``WgpuContext``).

Pipelines are cached by ``(name, number of storage bindings, defines)``, looked up first by the
defines' items in the caller's order (no sorting on a hit), then by their canonical sorted form;
a kernel given as full source is cached by its text. Every kernel has entry point ``main``,
binding 0 a uniform with a dynamic offset and bindings 1..n read-write storage buffers; one
bind-group layout and pipeline layout per binding count. The cache is guarded by the context's
lock; ``stats["pipelines_compiled"]`` counts compilations.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from . import device_state, kernels
from .errors import device_error, invalid_argument
from .implementation import wgpu

__all__ = ["Pipelines"]


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
        self._layouts: dict[int, tuple[Any, Any]] = {}

    def _layout(self, n_storage: int) -> tuple[Any, Any]:
        entry = self._layouts.get(n_storage)
        if entry is None:
            vis = wgpu.ShaderStage.COMPUTE
            entries = [{"binding": 0, "visibility": vis,
                        "buffer": {"type": wgpu.BufferBindingType.uniform, "has_dynamic_offset": True}}]
            entries += [
                {"binding": i, "visibility": vis, "buffer": {"type": wgpu.BufferBindingType.storage}}
                for i in range(1, n_storage + 1)
            ]
            bgl = self.device.create_bind_group_layout(entries=entries)
            entry = (bgl, self.device.create_pipeline_layout(bind_group_layouts=[bgl]))
            self._layouts[n_storage] = entry
        return entry

    def pipeline(self, name: str, n_storage: int, defines: Mapping[str, object] | None = None,
                 *, source: str | None = None) -> Any:
        """The compiled compute pipeline for kernel ``name`` specialised by ``defines`` (cached).

        Every kernel has entry point ``main``, binding 0 a uniform and bindings 1..n_storage
        read-write storage buffers. With ``source`` (complete WGSL text, e.g. a generated or user
        kernel) that text is compiled instead of the template ``name`` (``name`` is the label;
        ``defines`` must then be None) and cached by it. Raises BackendError (device error) with
        the compiler's message when the source does not compile, (invalid argument) for a
        template/placeholder mismatch.
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
            _, layout = self._layout(n_storage)
            try:
                module = self.device.create_shader_module(label=name, code=source)
                pipe = self.device.create_compute_pipeline(
                    label=name, layout=layout, compute={"module": module, "entry_point": "main"}
                )
            except Exception as exc:
                raise device_state.classify(self, device_error(f"kernel {name!r} failed to compile: {exc}")) from exc
            self._pipelines[key] = pipe
            self.stats["pipelines_compiled"] += 1
        return pipe
