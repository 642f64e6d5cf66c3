"""Which cases run: the suite in group order, ``--only`` patterns and group aliases, ``--ab`` knob
variants.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Any

from ._case import Case


#: groups in run order: the public-API headline first, then the kernel diagnostics
GROUP_ORDER = ("ceiling", "api", "engine", "binary", "unary", "reduce", "gemm", "conv2d", "transfer",
               "attention")
GROUP_ALIASES = {"kernel": "ceiling,binary,unary,reduce,gemm,conv2d,transfer,attention",
                 "headline": "api,engine", "conv": "conv2d", "attn": "attention", "transfers": "transfer", "ceilings": "ceiling",
                 "elementwise": "binary,unary", "copy": "ceiling.copy", "matmul": "ceiling.matmul"}


def all_cases(quick: bool) -> list[Case]:
    """Every case of the suite, in run order (ceilings first)."""
    from . import (api, bench_attention, bench_ceiling, bench_conv, bench_elementwise, bench_engine,
                   bench_gemm, bench_reduce, bench_transfer)

    cases: list[Case] = []
    for module in (bench_ceiling, api, bench_engine, bench_elementwise, bench_reduce, bench_gemm, bench_conv,
                   bench_transfer, bench_attention):
        cases.extend(module.cases(quick))
    order = {g: i for i, g in enumerate(GROUP_ORDER)}
    cases.sort(key=lambda c: order.get(c.group, len(order)))  # stable: keeps each module's order
    return cases


def _expand(items: Sequence[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        for part in str(item).split(","):
            part = part.strip()
            if part:
                out.extend(GROUP_ALIASES.get(part, part).split(","))
    return out


def matches(case_id: str, pattern: str) -> bool:
    """``pattern`` selects ``case_id``: equal, a dotted prefix (``gemm`` selects ``gemm.f32.1024``),
    or an fnmatch pattern (``attention.*.s4096*``)."""
    return case_id == pattern or case_id.startswith(pattern + ".") or fnmatch.fnmatchcase(case_id, pattern)


def select(cases: Sequence[Case], only: Sequence[str] | None, ceilings: bool) -> list[Case]:
    """The cases ``only`` selects (all when None), plus the ceiling cases when ``ceilings``.

    Raises ValueError naming the pattern when one selects nothing.
    """
    if not only:
        chosen = [c for c in cases if ceilings or c.ceiling is None]
        return chosen
    patterns = _expand(only)
    for p in patterns:
        if not any(matches(c.id, p) for c in cases):
            raise ValueError(f"--only {p!r} selects no case; ids are: " + ", ".join(c.id for c in cases))
    return [c for c in cases if any(matches(c.id, p) for p in patterns) or (ceilings and c.ceiling)]


def ab_variants(items: Sequence[str] | None) -> list[tuple[str, dict[str, Any]]]:
    """(case id suffix, ``config.override`` arguments) of each ``--ab`` item: ``NAME=VALUE`` sets
    gputensor knob NAME (parsed as its environment variable would be), ``NAME`` flips a switch
    from its value now; items may be comma-separated. ValueError for an unknown knob."""
    from gputensor._backend import config

    knobs = {k.name: k for k in config.KNOBS}
    out: list[tuple[str, dict[str, Any]]] = []
    for item in _expand(items or ()):
        name, _, raw = item.partition("=")
        knob = knobs.get(name.strip())
        if knob is None:
            raise ValueError(f"--ab: unknown gputensor knob {name!r}; knobs: {', '.join(knobs)}")
        value = knob.parse(knob.env, raw.strip(), knob.default) if raw.strip() else not config.value(knob.name)
        shown = int(value) if isinstance(value, bool) else value
        out.append((f"[{knob.name}={shown}]", {knob.name: value}))
    return out
