"""Limits and tuning knobs of the reduction planner (``ops_reduce``): the ranks and counts one
dispatch handles, the workgroup size, and the knob values (read from ``config``, part of every
plan-cache key) with ``configure`` to set them for a process.
"""

from __future__ import annotations

from typing import NamedTuple

from . import config

__all__ = ["MAX_COUNT", "MAX_RANK", "MIN_PER_INVOCATION", "WORKGROUP_SIZE", "configure", "max_count"]

#: Kept and reduced dims a dispatch handles (after merging); more are split on the host.
MAX_RANK = 8
#: Invocations per workgroup.
WORKGROUP_SIZE = 256
#: Tuning knobs of the planner live in ``config`` (environment defaults, ``config.override``,
#: or ``configure`` below); plans made under other values are kept apart in the plan caches:
#: ``reduce_workgroups`` (``GPUTENSOR_REDUCE_WORKGROUPS``): workgroups a reduction aims for
#: when it has few outputs (its reduced range is then split); 1024 measured best of
#: 1024/2048/4096 on the H200 for full, last- and first-axis sum/max (benchmarks.diag_reduce
#: --sweep). ``reduce_vec4`` (``GPUTENSOR_REDUCE_VEC4=0`` turns it off): the vector path of
#: reduce_plain (16-byte loads of a contiguous reduced range; see ``_Planner._vector``).
#: ``reduce_vec4_unroll``: vector loads in flight per invocation. ``reduce_vec4_vectors``:
#: with several outputs the row tile keeps at least this many vectors per invocation (fewer
#: invocations per output, more outputs per workgroup). ``reduce_vec4_min_length``: shortest
#: reduced range that takes the vector path.
#: Reduced elements per invocation below which the reduced range is not split further.
MIN_PER_INVOCATION = 32
#: Largest element count of the iteration space per dispatch (u32 index math in WGSL).
MAX_COUNT = 2**31 - 1


def max_count() -> int:
    """Most outputs, reduced elements or fused-source elements one reduction accepts:
    ``MAX_COUNT``, or less (at least 1) under the ``reduce_max_count`` knob
    (``GPUTENSOR_REDUCE_MAX_COUNT``)."""
    return max(1, min(MAX_COUNT, config.value("reduce_max_count")))


class _Knobs(NamedTuple):
    """The planner's knob values (part of every plan-cache key)."""

    target_workgroups: int
    vec4: bool
    vec4_unroll: int
    vec4_vectors: int
    vec4_min_length: int
    vec4_arg: bool
    vec4_var: bool


_knob_cache: tuple[int, _Knobs] | None = None  # (config.generation, the values then)


def _knobs() -> _Knobs:
    """The knob values in effect (read from ``config`` again only after it changed)."""
    global _knob_cache
    cached = _knob_cache
    if cached is not None and cached[0] == config.generation:
        return cached[1]
    gen = config.generation
    knobs = _Knobs(max(1, int(config.value("reduce_workgroups"))), bool(config.value("reduce_vec4")),
                   max(1, min(16, int(config.value("reduce_vec4_unroll")))),
                   max(1, int(config.value("reduce_vec4_vectors"))),
                   max(1, int(config.value("reduce_vec4_min_length"))),
                   bool(config.value("reduce_vec4_arg")), bool(config.value("reduce_vec4_var")))
    _knob_cache = (gen, knobs)
    return knobs


def configure(*, target_workgroups: int | None = None, vec4: bool | None = None, vec4_unroll: int | None = None,
              vec4_vectors: int | None = None, vec4_min_length: int | None = None, vec4_arg: bool | None = None,
              vec4_var: bool | None = None) -> dict[str, object]:
    """Set tuning knobs of the planner (None: unchanged) for the rest of the process, through
    ``config.assign``, and return the previous values as keyword arguments for a later
    ``configure(**previous)``. For benchmarks and tests (A/B of the vector path in one process);
    ``with config.override(reduce_vec4=False):`` does the same for a block."""
    now = _knobs()
    previous: dict[str, object] = dict(target_workgroups=now.target_workgroups, vec4=now.vec4,
                                       vec4_unroll=now.vec4_unroll, vec4_vectors=now.vec4_vectors,
                                       vec4_min_length=now.vec4_min_length, vec4_arg=now.vec4_arg,
                                       vec4_var=now.vec4_var)
    given = dict(reduce_workgroups=target_workgroups, reduce_vec4=vec4, reduce_vec4_unroll=vec4_unroll,
                 reduce_vec4_vectors=vec4_vectors, reduce_vec4_min_length=vec4_min_length,
                 reduce_vec4_arg=vec4_arg, reduce_vec4_var=vec4_var)
    config.assign(**{name: v for name, v in given.items() if v is not None})
    return previous
