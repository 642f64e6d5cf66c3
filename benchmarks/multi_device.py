"""Several devices: ``python -m benchmarks.multi_device [--quick] [--gib G] [--cols C] [--chunk-mib M]``.

The multi-GPU workload (a machine with two H200s; ``--quick`` runs it with tiny sizes on any
machine with two adapters, lavapipe and llvmpipe/GL on the CPU machines):

1. the devices gputensor lists, and the ones used: the discrete GPUs (Vulkan/Metal/D3D12)
   where there are at least two, else every device (``--devices webgpu:0,webgpu:1`` chooses);
2. ``x.to_device(d)`` bandwidth between the first two devices, both ways, for a few sizes (GB/s
   of array bytes; the copy goes device -> host -> device through the staging buffers: WebGPU
   has no peer copies);
3. dask.array over one dask.distributed worker process per device (``gputensor.dask_plugin.
   DevicePlugin``), with chunks of ``--chunk-mib`` MiB: an array of ``--gib`` GiB *per device*
   (``--cols`` columns, made on the workers' devices from a formula, so nothing large crosses
   the host), then, timed: an elementwise chain persisted on the workers (``exp(x/2) * x - x*x
   + 1``, one fused kernel per chunk), a reduction (``chain.sum(axis=0)`` to the client) and a
   blocked matmul (``x @ w`` with ``w`` of ``cols x cols/4``: one gemm per row block, ``w``
   sent to every worker once) persisted. The same total size runs on one device and on all of
   them; the speedup is the one-device time over the all-device time. Each result is checked
   against NumPy on a sample (blocks, columns, entries recomputed from the formula in float64);
4. the same workload with CuPy chunks (one worker per GPU by ``CUDA_VISIBLE_DEVICES``) where
   cupy is importable, as the yardstick.

Prints tables; ``--json PATH`` writes every number.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

#: Row-index period of the formula (keeps the arguments of sin small: accurate on every GPU).
PERIOD = 1021


def formula_block(lib: str, row0: int, rows: int, cols: int) -> Any:
    """Rows ``row0 .. row0+rows`` of the benchmark array on the worker's device, float32:
    ``x[i, j] = sin(0.37 * (i % PERIOD) + 0.011 * j)``; ``lib`` is ``'gputensor'``, ``'cupy'``
    or ``'numpy'`` (the reference, float64)."""
    r = (np.arange(row0, row0 + rows) % PERIOD).astype(np.float32 if lib != "numpy" else np.float64)
    c = np.arange(cols, dtype=r.dtype)
    if lib == "numpy":
        return np.sin(0.37 * r[:, None] + 0.011 * c[None, :])
    xp = _xp(lib)
    rv = xp.asarray(r * np.float32(0.37))
    cv = xp.asarray(c * np.float32(0.011))
    return xp.sin(xp.reshape(rv, (rows, 1)) + xp.reshape(cv, (1, cols)))


def weights(lib: str, cols: int, out: int) -> Any:
    """The matmul's right operand ``w[k, m] = cos(0.013 * k - 0.007 * m) / cols``."""
    k = np.arange(cols, dtype=np.float64)[:, None]
    m = np.arange(out, dtype=np.float64)[None, :]
    host = np.cos(0.013 * k - 0.007 * m) / cols
    if lib == "numpy":
        return host
    return _xp(lib).asarray(host.astype(np.float32))


def chain(x: Any) -> Any:
    """The elementwise chain (one fused gputensor kernel per chunk)."""
    return np.exp(x * 0.5) * x - x * x + 1.0


def _xp(lib: str) -> Any:
    if lib == "gputensor":
        import gputensor

        return gputensor
    import cupy

    return cupy


def _sync(lib: str) -> None:
    if lib == "gputensor":
        import gputensor

        gputensor.synchronize()
    else:
        import cupy

        cupy.cuda.Device().synchronize()


def _worker_info(lib: str) -> str:
    if lib == "gputensor":
        import gputensor as gt

        return f"{gt.default_device()} {gt.default_device().adapter}"
    import cupy

    return f"cuda:{os.environ.get('CUDA_VISIBLE_DEVICES', '?')} {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}"


# ---- devices and to_device ---------------------------------------------------------------------
def choose_devices(gt: Any, names: str | None) -> list[Any]:
    """The devices to use: ``names`` (comma-separated), else the discrete GPUs (not through
    OpenGL) where there are two or more, else every device."""
    if names:
        return [gt.Device(n.strip()) for n in names.split(",")]
    devices = gt.devices()
    discrete = [d for d in devices if "DiscreteGPU" in d.adapter and "OpenGL" not in d.adapter]
    return discrete if len(discrete) >= 2 else devices


def bandwidth(gt: Any, src: Any, dst: Any, sizes_mib: Sequence[float], reps: int) -> list[dict[str, Any]]:
    """GB/s of ``x.to_device`` from ``src`` to ``dst`` and back, best of ``reps``, per size."""
    rows = []
    for mib in sizes_mib:
        n = max(1, int(mib * (1 << 20)) // 4)
        with src:
            x = gt.full(n, 1.5, dtype=gt.float32)
        with dst:
            y0 = gt.full(n, 2.5, dtype=gt.float32)
        gt.synchronize()
        row: dict[str, Any] = {"MiB": mib}
        for label, a, target in (("there", x, dst), ("back", y0, src)):
            a.to_device(target)  # warm: staging buffers, the target's pool
            best = float("inf")
            for _ in range(reps):
                t0 = time.perf_counter()
                moved = a.to_device(target)
                with target:
                    gt.synchronize()
                best = min(best, time.perf_counter() - t0)
            assert moved.device == target and float(moved[-1]) == float(a[-1])
            row[f"{src}->{dst} GB/s" if label == "there" else f"{dst}->{src} GB/s"] = n * 4 / best / 1e9
            row[f"{label} ms"] = best * 1e3
        rows.append(row)
    return rows


# ---- the dask workload --------------------------------------------------------------------------
def _cluster(lib: str, names: Sequence[str]) -> tuple[Any, Any]:
    import distributed

    workers = {}
    for k, name in enumerate(names):
        env = {"DASK_LOGGING__DISTRIBUTED": "error"}
        if lib == "cupy":
            env["CUDA_VISIBLE_DEVICES"] = name.split(":")[-1]
        workers[k] = {"cls": distributed.Nanny, "options": {"nthreads": 1, "env": env}}
    scheduler = {"cls": distributed.Scheduler, "options": {"dashboard_address": None}}
    cluster = distributed.SpecCluster(workers=workers, scheduler=scheduler, silence_logs=40)
    client = distributed.Client(cluster)
    if lib == "gputensor":
        from gputensor.dask_plugin import DevicePlugin

        client.register_plugin(DevicePlugin(list(names)))
    return cluster, client


def workload(lib: str, names: Sequence[str], rows: int, cols: int, chunk_rows: int,
             out_cols: int) -> dict[str, Any]:
    """Run the timed workload on one worker per device of ``names``; the seconds of each part
    and the sample checks' largest relative errors."""
    import dask
    import dask.array as da

    cluster, client = _cluster(lib, names)
    try:
        placed = client.run(_worker_info, lib)
        starts = list(range(0, rows, chunk_rows))
        sizes = [min(chunk_rows, rows - s) for s in starts]
        blocks = [da.from_delayed(dask.delayed(formula_block)(lib, s, n, cols), shape=(n, cols),
                                  dtype=np.float32, meta=_meta(lib)) for s, n in zip(starts, sizes)]
        x = da.concatenate(blocks, axis=0)
        w = da.from_delayed(dask.delayed(weights)(lib, cols, out_cols), shape=(cols, out_cols),
                            dtype=np.float32, meta=_meta(lib))
        times: dict[str, float] = {}

        def timed(label: str, run: Callable[[], Any]) -> Any:
            client.run(_sync, lib)
            t0 = time.perf_counter()
            out = run()
            client.run(_sync, lib)
            times[label] = time.perf_counter() - t0
            return out

        x = timed("generate s", lambda: _persisted(client, x))
        for _ in range(2):  # a cold run (kernels compiled, pools filled), then the timed one
            y = timed("elementwise chain s", lambda: _persisted(client, chain(x)))
        for _ in range(2):
            total = timed("reduction s", lambda: y.sum(axis=0).compute())
        for _ in range(2):
            z = timed("matmul s", lambda: _persisted(client, x @ w))
        checks = _check(lib, x, y, total, z, rows, cols, out_cols, chunk_rows)
        return {"workers": placed, "times": times, "checks": checks}
    finally:
        client.close()
        cluster.close()


def _persisted(client: Any, collection: Any) -> Any:
    """``collection`` computed on the workers and kept there (waits for it)."""
    import distributed

    out = client.persist(collection)
    distributed.wait(out)
    return out


def _meta(lib: str) -> Any:
    if lib == "gputensor":
        import gputensor as gt

        return gt.empty((0, 0), dtype=gt.float32)
    import cupy

    return cupy.empty((0, 0), dtype=cupy.float32)


def _host(a: Any) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)


def _check(lib: str, x: Any, y: Any, total: Any, z: Any, rows: int, cols: int, out_cols: int,
           chunk_rows: int) -> dict[str, float]:
    """Largest relative errors against NumPy (float64) on a sample: the first and last row
    blocks of ``y`` and ``z``, four columns of the reduction."""
    errors = {}
    last = (rows - 1) // chunk_rows
    w64 = weights("numpy", cols, out_cols)
    for b in sorted({0, last}):
        r0 = b * chunk_rows
        n = min(chunk_rows, rows - r0)
        ref_x = formula_block("numpy", r0, n, cols)
        got_y = _host(y.blocks[b].compute())
        ref_y = chain(ref_x)
        errors[f"chain block {b}"] = float(np.max(np.abs(got_y - ref_y)) / np.max(np.abs(ref_y)))
        got_z = _host(z.blocks[b, 0].compute())
        ref_z = ref_x @ w64
        errors[f"matmul block {b}"] = float(np.max(np.abs(got_z - ref_z)) / np.max(np.abs(ref_z)))
    got_total = _host(total)
    sample = np.linspace(0, cols - 1, 4).astype(int)
    # the row pattern repeats every PERIOD rows: sum a period's values times its repetitions
    idx = np.arange(rows) % PERIOD
    counts = np.bincount(idx, minlength=PERIOD).astype(np.float64)
    r = np.arange(PERIOD, dtype=np.float64)[:, None]
    vals = np.sin(0.37 * r + 0.011 * sample[None, :].astype(np.float64))
    ref_total = (chain(vals) * counts[:, None]).sum(axis=0)
    errors["reduction columns"] = float(np.max(np.abs(got_total[sample] - ref_total)) / np.max(np.abs(ref_total)))
    return errors


# ---- the run -----------------------------------------------------------------------------------
def _table(rows: list[dict[str, Any]]) -> str:
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for row in rows:
        lines.append("| " + " | ".join(f"{row[k]:.3g}" if isinstance(row[k], float) else str(row[k]) for k in keys) + " |")
    return "\n".join(lines)


def _scaling(lib: str, names: Sequence[str], args: argparse.Namespace, result: dict[str, Any]) -> None:
    per_device_rows = max(1, int(args.gib * (1 << 30)) // (4 * args.cols))
    rows = per_device_rows * len(names)
    chunk_rows = max(1, int(args.chunk_mib * (1 << 20)) // (4 * args.cols))
    out_cols = max(1, args.cols // 4)
    print(f"\n## {lib}: {rows} x {args.cols} float32 ({rows * args.cols * 4 / 2**30:.3g} GiB in all, "
          f"{args.gib:g} GiB per device at {len(names)} devices), chunks of {chunk_rows} rows, "
          f"matmul with a {args.cols} x {out_cols} w")
    runs = {}
    for used in (names[:1], list(names)):
        runs[len(used)] = workload(lib, used, rows, args.cols, chunk_rows, out_cols)
        print(f"{len(used)} device(s): " + "; ".join(runs[len(used)]["workers"].values()))
    table = []
    for part in runs[1]["times"]:
        one, many = runs[1]["times"][part], runs[len(names)]["times"][part]
        table.append({"part": part, "1 device s": one, f"{len(names)} devices s": many, "speedup": one / many})
    print(_table(table))
    worst = max(max(r["checks"].values()) for r in runs.values())
    print(f"sample checks against NumPy (float64): largest relative error {worst:.2e}")
    result[lib] = {"rows": rows, "cols": args.cols, "chunk_rows": chunk_rows, "runs": runs, "table": table,
                   "max_rel_error": worst}
    if worst > 1e-3:
        raise SystemExit(f"{lib}: a sample differs from NumPy by {worst:.2e}")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.multi_device", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes (any machine with two adapters)")
    p.add_argument("--gib", type=float, default=None, help="GiB of the array per device (default 2; quick 1/256)")
    p.add_argument("--cols", type=int, default=None, help="columns (default 4096; quick 256)")
    p.add_argument("--chunk-mib", type=float, default=None, help="MiB per chunk (default 256; quick 1)")
    p.add_argument("--devices", default=None, help="comma-separated device names (default: see above)")
    p.add_argument("--sizes-mib", default=None, help="to_device sizes, comma-separated (default 16,256,1024; quick 1,4)")
    p.add_argument("--no-cupy", action="store_true", help="skip the CuPy yardstick")
    p.add_argument("--json", dest="json_path", metavar="PATH", help="write every number as JSON")
    args = p.parse_args(argv)
    args.gib = args.gib if args.gib is not None else (1 / 256 if args.quick else 2.0)
    args.cols = args.cols or (256 if args.quick else 4096)
    args.chunk_mib = args.chunk_mib or (1.0 if args.quick else 256.0)
    sizes = [float(s) for s in (args.sizes_mib or ("1,4" if args.quick else "16,256,1024")).split(",")]

    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "error")  # (the workers inherit it)
    import gputensor as gt

    result: dict[str, Any] = {"devices": [{"name": str(d), "adapter": d.adapter} for d in gt.devices()]}
    print("devices:", "; ".join(f"{d} {d.adapter}" for d in gt.devices()))
    used = choose_devices(gt, args.devices)
    if len(used) < 2:
        print("fewer than two devices: nothing to compare")
        return 1
    print("used:", ", ".join(str(d) for d in used))
    rows = bandwidth(gt, used[0], used[1], sizes, reps=2 if args.quick else 5)
    print("\n## to_device bandwidth (device -> host -> device)\n" + _table(rows))
    result["to_device"] = rows
    for device in used:  # the workers below need the memory
        with device:
            gt.get_default_memory_pool().free_all_blocks()
    names = [str(d) for d in used]
    _scaling("gputensor", names, args, result)
    if not args.no_cupy:
        try:
            import cupy

            n_gpus = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # noqa: BLE001 - no cupy, no CUDA
            print(f"\ncupy: not run ({type(exc).__name__}: {exc})")
        else:
            _scaling("cupy", [f"cuda:{k}" for k in range(min(n_gpus, len(names)))], args, result)
    if args.json_path:
        with open(args.json_path, "w") as f:
            json.dump(result, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
