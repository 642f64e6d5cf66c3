"""The report's output: the result tables with their notes, the progress lines, JSON and the plot.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Sequence
from typing import TextIO

from ._env import _short
from ._results import FRAMEWORKS, CaseResult, FwResult, Report
from ._select import GROUP_ORDER


def _num(x: float | None, digits: int = 3) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    if x == 0:
        return "0"
    mag = math.floor(math.log10(abs(x)))
    decimals = max(0, digits - 1 - mag)
    return f"{x:.{decimals}f}"


def fmt_time(t: float | None) -> str:
    """Seconds as ms (or µs below 0.1 ms)."""
    if t is None:
        return "-"
    if t < 1e-4:
        return f"{_num(t * 1e6)} us"
    return f"{_num(t * 1e3)} ms"


def _si(x: float, unit: str) -> str:
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{_num(x / scale)} {prefix}{unit}"
    return f"{_num(x)} {unit}"


def fmt_work(case: CaseResult) -> str:
    """Bytes moved (GB/s cases) or flops (TFLOP/s cases) of one call, e.g. '805 MB', '137 GFLOP'."""
    if case.unit == "GB/s":
        return _si(case.bytes, "B")
    return _si(case.flops, "FLOP")


def fmt_rate(r: FwResult | None, unit: str) -> str:
    if r is None or not r.ok:
        return "-"
    return f"{_num(r.rate)} {unit}"


def _fw_cell(r: FwResult | None) -> str:
    if r is None:
        return "-"
    if r.ok:
        return fmt_time(r.time_s)
    if r.error and r.error.startswith("error"):
        return "error"
    if r.error and r.error.startswith("skipped"):
        return "skipped"
    return "-"


def progress_line(cr: CaseResult) -> str:
    """One line per finished case, printed as the run goes."""
    parts = [cr.id]
    for name, r in cr.frameworks.items():
        if r.ok:
            parts.append(f"{name} {fmt_time(r.time_s)} = {fmt_rate(r, cr.unit)} (host {fmt_time(r.host_s)}, "
                         f"GPU {fmt_time(r.gpu_s)}, cold {fmt_time(r.cold_s)}, check {r.check.split(':')[0]})")
        elif r.error and not r.error.startswith("n/a"):
            parts.append(f"{name} {r.error}")
    return " | ".join(parts)


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _section(results: Sequence[CaseResult], notes: list[str]) -> list[str]:
    """Fixed-width rows of ``results`` (one per case); long errors and wrong results go to ``notes``."""
    header = ["case", "work", "gt wall", "gt host", "gt GPU", "torch wall", "torch GPU", "cupy wall",
              "gt rate", "gt/torch", "gt/cupy", "GPU gt/torch", "of ceiling", "gt cold", "check / note"]
    rows: list[list[str]] = []
    for cr in results:
        gt = cr.frameworks.get("gputensor")
        torch, cupy = cr.frameworks.get("torch"), cr.frameworks.get("cupy")
        if cr.skipped:
            rows.append([cr.id, fmt_work(cr)] + ["-"] * 12 + [cr.skipped])
            continue
        note = ""
        if gt is not None and gt.error:
            note = gt.error if len(gt.error) <= 70 else gt.error[:67] + "..."
            if len(gt.error) > 70:
                notes.append(f"{cr.id}: gputensor {gt.error}")
        elif gt is not None:
            note = gt.check if len(gt.check) <= 70 else gt.check[:67] + "..."
        for name, r in (("torch", torch), ("cupy", cupy)):
            if r is not None and r.error and r.error.startswith("error"):
                notes.append(f"{cr.id}: {name} {r.error}")
        notes.extend(f"{cr.id}: {n}" for n in cr.notes)
        frac = "-" if cr.fraction_of_ceiling is None else f"{cr.fraction_of_ceiling:.2f}" + (
            " mem" if cr.bound == "memory" and cr.unit != "GB/s" else "")
        ok = gt is not None and gt.ok
        rows.append([
            cr.id, fmt_work(cr), _fw_cell(gt), fmt_time(gt.host_s) if ok else "-",
            fmt_time(gt.gpu_s) if ok else "-", _fw_cell(torch),
            fmt_time(torch.gpu_s) if torch is not None and torch.ok else "-", _fw_cell(cupy),
            fmt_rate(gt, cr.unit), _ratio(cr.ratio_torch), _ratio(cr.ratio_cupy), _ratio(cr.gpu_ratio_torch),
            frac, fmt_time(gt.cold_s) if gt is not None else "-", note,
        ])
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    fmt = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return [fmt(header), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows]


def table(report: Report) -> str:
    """The results as fixed-width text tables (public API first, then the kernel diagnostics),
    followed by the ceilings, a legend and the notes (errors, wrong results)."""
    notes: list[str] = []
    lines: list[str] = []
    for path, title in (("api", "public API (user code through gt.*)"),
                        ("kernel", "kernel diagnostics (the backend contract on device pointers)")):
        part = [r for r in report.results if r.path == path]
        if part:
            lines.append(f"== {title}")
            lines.extend(_section(part, notes))
            lines.append("")
    c = report.ceilings
    lines.append("ceilings: copy " + (f"{_num(c['copy_GBps'])} GB/s ({c['copy_source']})" if c.get("copy_GBps")
                                      else "not measured")
                 + "; fp32 matmul " + (f"{_num(c['matmul_TFLOPs'])} TFLOP/s ({c['matmul_source']})"
                                       if c.get("matmul_TFLOPs") else "not measured"))
    lines.append("times per call, medians over batches of back-to-back calls whose results are held until "
                 "the batch's sync. wall: first call to sync returned; host: recording/enqueueing the calls; "
                 "GPU: CUDA events, gputensor timestamp queries (a profiled batch). gt/torch = torch wall / "
                 "gputensor wall (>1: gputensor faster); GPU gt/torch the same on GPU time. 'gt cold' = first "
                 "call incl. compilation.")
    lines.append("'of ceiling' = gputensor's rate / the ceiling ('mem': a case reported in TFLOP/s that "
                 "is memory-bound, taken against the copy ceiling).")
    if notes:
        lines.append("")
        lines.append("notes:")
        lines.extend(f"  {n}" for n in notes)
    return "\n".join(lines)


def write_json(report: Report, path: str) -> None:
    """Write every number of ``report`` as JSON to ``path`` (atomically)."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(report.as_json(), f, indent=1, default=str)
    os.replace(tmp, path)


def write_plot(report: Report, path: str, out: TextIO) -> bool:
    """Write a PNG: GB/s against bytes moved and TFLOP/s against flops for every framework (points
    of one series, e.g. square gemm sizes, joined by lines; the ceilings dashed), and a bar chart of
    gputensor's rate as a fraction of torch's per case. Returns False, printing why, when
    matplotlib is not importable."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as exc:  # noqa: BLE001
        print(f"plot skipped: matplotlib is not importable ({_short(exc)})", file=out)
        return False
    markers = {"gputensor": "o", "torch": "s", "cupy": "^"}
    styles = {"gputensor": "-", "torch": "--", "cupy": ":"}
    groups = [g for g in GROUP_ORDER if any(r.group == g for r in report.results)]
    groups += sorted({r.group for r in report.results} - set(groups))
    cmap = plt.get_cmap("tab10")
    colors = {g: cmap(i % 10) for i, g in enumerate(groups)}
    fig = plt.figure(figsize=(18, 12))
    grid = fig.add_gridspec(2, 2, height_ratios=(3, 2))
    axes = [fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])]
    for ax, unit in zip(axes, ("GB/s", "TFLOP/s")):
        seen_fw: set[str] = set()
        seen_group: set[str] = set()
        series: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for cr in report.results:
            if cr.unit != unit:
                continue
            x = cr.bytes if unit == "GB/s" else cr.flops
            for name, r in cr.frameworks.items():
                if not r.ok:
                    continue
                ax.scatter([x], [r.rate], marker=markers.get(name, "x"), s=45, edgecolors=colors[cr.group],
                           facecolors=colors[cr.group] if name == "gputensor" else "none", zorder=3)
                series.setdefault((cr.series or cr.id, name), []).append((x, r.rate))
                seen_fw.add(name)
                seen_group.add(cr.group)
        for (key, name), pts in series.items():
            if len(pts) > 1:
                pts.sort()
                group = key.split(".", 1)[0]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], styles.get(name, "-"),
                        color=colors.get(group, "k"), linewidth=1, alpha=0.7)
        ceil = report.ceilings.get("copy_GBps" if unit == "GB/s" else "matmul_TFLOPs")
        if ceil:
            ax.axhline(ceil, color="grey", linestyle="--", linewidth=1)
            ax.text(0.01, ceil, " copy ceiling" if unit == "GB/s" else " fp32 matmul ceiling",
                    transform=ax.get_yaxis_transform(), va="bottom", color="grey", fontsize=8)
        if ax.has_data():
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.set_xlabel("bytes moved per call" if unit == "GB/s" else "flops per call")
        ax.set_ylabel(unit)
        ax.set_title(("bandwidth" if unit == "GB/s" else "arithmetic") + f" ({unit}) against size")
        ax.grid(True, which="both", alpha=0.3)
        handles = [plt.Line2D([], [], marker=markers[n], linestyle=styles[n], color="k",
                              markerfacecolor="k" if n == "gputensor" else "none", label=n)
                   for n in FRAMEWORKS if n in seen_fw]
        handles += [plt.Line2D([], [], marker="o", linestyle="", color=colors[g], label=g)
                    for g in groups if g in seen_group]
        if handles:
            ax.legend(handles=handles, fontsize=8, loc="best")
    ax = fig.add_subplot(grid[1, :])
    labels, values, cols = [], [], []
    for cr in report.results:
        if cr.ratio_torch is not None:
            labels.append(cr.id)
            values.append(cr.ratio_torch)
            cols.append(colors.get(cr.group, "k"))
    if values:
        ax.bar(range(len(values)), values, color=cols)
        ax.set_xticks(range(len(values)), labels, rotation=75, ha="right", fontsize=7)
        ax.axhline(1.0, color="grey", linewidth=1)
        ax.set_ylabel("gputensor rate / torch rate")
        ax.set_title("gputensor as a fraction of torch (same work, same run)")
        ax.grid(True, axis="y", alpha=0.3)
    else:
        ax.text(0.5, 0.5, "no torch numbers in this run", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
    meta = report.meta
    fig.suptitle(f"gputensor on {meta.get('adapter', '?')}"
                 + (f"; torch/cupy on {meta['cuda_device']}" if meta.get("cuda_device") else "")
                 + (" (quick sizes)" if meta.get("quick") else ""))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"plot written to {path}", file=out)
    return True
