"""Probe (diagnostic, not a benchmark): int8 matmul on subgroup matrices against torch._int_mm.

``python -m benchmarks.tools.int8_matmul [--quick] [--tiles T1 T2 ...] [--json PATH] [--dump DIR]``
(on the H200: ``GPUTENSOR_WGPU=dawn``) prints, in this order:

1. the implementation, the adapter, its features and the device's, the adapter's subgroup-matrix
   configurations (through wgpudawn's extras), subgroup sizes and workgroup limits;
2. ``compile``: every variant of ``_wgsl/matmul_int8_sgmatrix.wgsl`` the probe uses (each tile
   of ``--tiles``, A and B staged either way, C stored directly or through workgroup memory),
   compiled on the device; a variant that fails prints the compiler's whole message, and its
   rendered source goes to ``--dump`` (default ``int8_matmul_wgsl`` under the working
   directory), with line numbers;
3. ``check``: ``gt.nn.int_mm`` (int32 results) and ``a @ b`` (int8, wrapped as NumPy) against
   NumPy's int64 product (computed exactly in float64) for 1x1x1, 17x33x65, 256^3, 4096^3 (values in -128..127) and views
   (A transposed, B transposed, a batch, uint8), per tile; ``OK`` or the mismatches and the first
   one;
4. ``time``: microseconds per call and TOPS (2 m n k / s) of ``gt.nn.int_mm`` on subgroup matrices
   (per tile), on the generic integer kernel (``GPUTENSOR_INT8_SGMATRIX=0``), and of
   ``torch._int_mm`` on CUDA (m > 16, k and n multiples of 8), for square and LLM-like shapes.
   gputensor's time is its GPU time (timestamp queries) where the device has them, else wall
   time; torch's is wall time over a synchronised batch (CUDA events where available).

Without the feature (any adapter but Dawn's on a GPU that offers it) the probe says so and runs
the checks and timings of the generic kernel only. The exit status is 1 if a check fails or a
variant does not compile.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

#: Tiles tried by default (the ``int8_sgmatrix_tile`` knob's 'WGM,WGN,TM,TN,BK,STAGES'; the first is
#: the default; tiles beyond the device's workgroup memory are reported "not chosen").
TILES = ("2,2,2,4,64,2", "2,2,2,4,64,1", "2,2,2,2,64,2", "4,2,2,4,64,2", "4,2,2,4,64,1", "2,4,2,2,64,2",
         "2,2,2,4,128,1", "1,1,1,1,32,1")
#: (m, n, k) checked against NumPy.
CHECK_SHAPES = ((1, 1, 1), (17, 33, 65), (256, 256, 256), (4096, 4096, 4096))
#: (m, n, k) timed.
TIME_SHAPES = ((256, 256, 256), (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096),
               (8192, 8192, 8192), (32, 4096, 4096), (128, 4096, 11008), (4096, 11008, 4096))
QUICK_TIME_SHAPES = ((1024, 1024, 1024), (4096, 4096, 4096))


def _reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NumPy's int64 product of 8-bit a and b, computed in float64 (BLAS): every partial sum of
    8-bit products is an integer below 2^53 in magnitude for k < 2^37, so it is exact."""
    return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.int64)


def _say(*parts: Any) -> None:
    print(*parts, flush=True)


def describe(gt: Any, backend: Any) -> dict[str, Any]:
    """Print and return the device facts that decide the subgroup-matrix path."""
    from gputensor._backend import implementation, int8_sgmatrix

    ctx = backend.context
    adapter = ctx.adapter
    facts = {
        "implementation": implementation.NAME,
        "adapter": str(backend),
        "adapter_features": sorted(str(f) for f in adapter.features),
        "device_features": sorted(str(f) for f in ctx.device.features),
        "context_features": sorted(ctx.features),
        "subgroup_matrix_configs": [dict(c) for c in getattr(ctx, "subgroup_matrix_configs", ())],
        "subgroup_sizes": {k: v for k, v in ctx.adapter_info.items() if "group_" in k},
        "limits": {k: ctx.limits.get(k) for k in ("max-compute-workgroup-storage-size",
                                                   "max-compute-invocations-per-workgroup",
                                                   "max-compute-workgroup-size-x")},
        "feature": int8_sgmatrix.FEATURE in ctx.features,
    }
    _say("== device")
    for key, value in facts.items():
        _say(f"{key}: {value}")
    if implementation.NAME == "dawn" and not facts["subgroup_matrix_configs"]:
        try:
            from wgpudawn.backends.dawn import extras

            _say("wgpudawn adapter properties:", extras.get_adapter_properties(adapter))
        except Exception as exc:  # noqa: BLE001 - a diagnostic
            _say(f"wgpudawn adapter properties: unavailable ({exc!r})")
    if not facts["feature"]:
        _say(f"NOTE: the device lacks {int8_sgmatrix.FEATURE}: only the generic kernel runs")
    return facts


def _numbered(source: str) -> str:
    return "\n".join(f"{i + 1:4d}  {line}" for i, line in enumerate(source.splitlines()))


def _layouts(rng: np.random.Generator, gt: Any, m: int, n: int, k: int) -> dict[str, Callable[[], tuple]]:
    """Operand layouts: name -> () -> (gpu a, gpu b, numpy a, numpy b)."""
    def plain() -> tuple:
        a = rng.integers(-128, 128, (m, k), dtype=np.int8)
        b = rng.integers(-128, 128, (k, n), dtype=np.int8)
        return gt.asarray(a), gt.asarray(b), a, b

    def a_t() -> tuple:
        a = rng.integers(-128, 128, (k, m), dtype=np.int8)
        b = rng.integers(-128, 128, (k, n), dtype=np.int8)
        return gt.asarray(a).T, gt.asarray(b), a.T, b

    def b_t() -> tuple:
        a = rng.integers(-128, 128, (m, k), dtype=np.int8)
        b = rng.integers(-128, 128, (n, k), dtype=np.int8)
        return gt.asarray(a), gt.asarray(b).T, a, b.T

    def batch() -> tuple:
        a = rng.integers(-128, 128, (3, m, k), dtype=np.int8)
        b = rng.integers(-128, 128, (3, k, n), dtype=np.int8)
        return gt.asarray(a), gt.asarray(b), a, b

    def unsigned() -> tuple:
        a = rng.integers(0, 256, (m, k), dtype=np.uint8)
        b = rng.integers(0, 256, (k, n), dtype=np.uint8)
        return gt.asarray(a), gt.asarray(b), a, b

    return {"plain": plain, "A^T": a_t, "B^T": b_t, "batch3": batch, "uint8": unsigned}


def compile_variants(gt: Any, backend: Any, tiles: list[str], dump: str) -> list[str]:
    """Compile every kernel variant; returns the failures' descriptions (printed in full)."""
    from gputensor._backend import config, int8_sgmatrix, kernels

    ctx = backend.context
    failures: list[str] = []
    _say("== compile")
    strides = {"plain": ((0, 64, 1), (0, 64, 1)), "A^T": ((0, 1, 64), (0, 64, 1)),
               "B^T": ((0, 64, 1), (0, 1, 64))}
    for tile in tiles:
        for dtypes in int8_sgmatrix.TYPES:
            for name, (sa, sb) in strides.items():
                for c_strides, c_name in (((0, 64, 1), "direct"), ((0, 1, 64), "spilled")):
                    with config.override(int8_sgmatrix_tile=tile):
                        try:
                            plan = int8_sgmatrix.plan(ctx, *dtypes, sa, sb, c_strides, 64)
                        except Exception as exc:  # noqa: BLE001 - a bad tile knob
                            failures.append(f"{tile}: {exc}")
                            _say(f"tile {tile}: {exc}")
                            break
                    label = f"tile {tile} {dtypes[0]} {name} C {c_name}"
                    if plan is None:
                        _say(f"{label}: not chosen on this device (no feature / configuration / limits)")
                        continue
                    t0 = time.perf_counter()
                    try:
                        ctx.pipeline(int8_sgmatrix.KERNEL, 3, plan.defines)
                        _say(f"{label}: compiled in {time.perf_counter() - t0:.2f} s "
                             f"({plan.bm}x{plan.bn} tile, {plan.defines['NT']} invocations)")
                    except Exception as exc:  # noqa: BLE001 - print the compiler's whole message
                        failures.append(label)
                        _say(f"{label}: FAILED TO COMPILE\n{exc}")
                        cause = exc.__cause__ or exc.__context__
                        if cause is not None:
                            _say(f"cause: {cause!r}")
                        os.makedirs(dump, exist_ok=True)
                        path = os.path.join(dump, f"fail{len(failures)}.wgsl.txt")
                        if len(failures) <= 4:
                            with open(path, "w") as f:
                                f.write(f"// {label}\n// defines: {plan.defines}\n// error:\n")
                                f.write("".join(f"// {line}\n" for line in str(exc).splitlines()))
                                f.write(_numbered(kernels.render(int8_sgmatrix.KERNEL, plan.defines)))
                            _say(f"source written to {path}")
    return failures


def check(gt: Any, tiles: list[str], shapes: tuple, feature: bool) -> list[str]:
    """Check int_mm and a @ b against NumPy per tile, shape and layout; returns failures."""
    from gputensor._backend import config

    rng = np.random.default_rng(0)
    failures: list[str] = []
    _say("== check")
    variants = [(t, {"int8_sgmatrix": True, "int8_sgmatrix_tile": t}) for t in tiles] if feature else []
    variants.append(("generic", {"int8_sgmatrix": False}))
    for label, knobs in variants:
        for m, n, k in shapes:
            big = m * n * k > 10**9
            for layout, make in _layouts(rng, gt, m, n, k).items():
                if big and (layout != "plain" or label not in (tiles[0], "generic")):
                    continue  # 4096^3: the plain layout of the default tile and the generic kernel
                if layout == "batch3" and m * n * k > 10**8:
                    continue
                what = f"{label} {m}x{n}x{k} {layout}"
                try:
                    ga, gb, a, b = make()
                    ref = _reference(a, b)
                    with config.override(**knobs):
                        got32 = gt.asnumpy(gt.nn.int_mm(ga, gb))
                        got8 = gt.asnumpy(ga @ gb)
                    if _fell_back():
                        failures.append(what)
                        _say(f"{what}: the kernel did not compile: the generic kernel ran (warning above)")
                        continue
                    want32 = ref.astype(np.uint32 if a.dtype == np.uint8 else np.int32)
                    want8 = ref.astype(a.dtype)
                    bad32 = np.argwhere(got32 != want32)
                    bad8 = np.argwhere(got8 != want8)
                    if got32.dtype != want32.dtype or got8.dtype != want8.dtype:
                        failures.append(what)
                        _say(f"{what}: WRONG DTYPE {got32.dtype} / {got8.dtype}")
                    elif len(bad32) or len(bad8):
                        failures.append(what)
                        first = tuple(bad32[0]) if len(bad32) else tuple(bad8[0])
                        _say(f"{what}: MISMATCH int32 {len(bad32)} / int8 {len(bad8)} of {ref.size}; "
                             f"first at {first}: got {got32[first]} want {want32[first]}")
                        if len(bad32):
                            rows = sorted({int(i[-2]) for i in bad32[:4096]})[:16]
                            cols = sorted({int(i[-1]) for i in bad32[:4096]})[:16]
                            _say(f"    bad rows (first): {rows}; bad cols (first): {cols}")
                    else:
                        _say(f"{what}: OK")
                except Exception as exc:  # noqa: BLE001 - report and go on
                    failures.append(what)
                    _say(f"{what}: ERROR {exc}")
                    traceback.print_exc()
    return failures


def _fell_back() -> bool:
    """Whether the subgroup-matrix kernel failed to compile since the last call (then the
    generic kernel ran); forgets it, so that the next variant tries again."""
    from gputensor._backend import int8_sgmatrix
    from gputensor._runtime import get_backend

    ctx = get_backend().context
    if ctx in int8_sgmatrix._REFUSED:
        int8_sgmatrix._REFUSED.discard(ctx)
        return True
    return False


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _gt_time(gt: Any, fn: Callable[[], Any], reps: int) -> tuple[float, str]:
    """Seconds per call: GPU time under gt.profile() where the device has timestamps, else wall."""
    from benchmarks._timing import gpu_profile, time_calls

    fn()
    gt.synchronize()
    gpu, _, _ = gpu_profile(fn, calls=min(reps, 16))
    if gpu is not None and gpu > 0:
        gpu2, _, _ = gpu_profile(fn, calls=min(reps, 16))
        return min(gpu, gpu2 or gpu), "gpu"
    return time_calls(fn, gt.synchronize, reps=reps, repeats=3), "wall"


def _torch_time(torch: Any, fn: Callable[[], Any], reps: int) -> float:
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        held = [fn() for _ in range(reps)]
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3 / reps)
        del held
    return best


def timings(gt: Any, tiles: list[str], shapes: tuple, feature: bool, reps: int) -> list[dict[str, Any]]:
    """Time every variant per shape; print a table row per (shape, variant)."""
    from gputensor._backend import config

    torch = _torch()
    rng = np.random.default_rng(1)
    rows: list[dict[str, Any]] = []
    _say("== time (us per call, TOPS = 2mnk/s)")
    if torch is None:
        _say("torch with CUDA not importable: no torch._int_mm rows")
    for m, n, k in shapes:
        ops = 2.0 * m * n * k
        a = rng.integers(-128, 128, (m, k), dtype=np.int8)
        b = rng.integers(-128, 128, (k, n), dtype=np.int8)
        ga, gb = gt.asarray(a), gt.asarray(b)
        variants = [(f"sgmatrix {t}", {"int8_sgmatrix": True, "int8_sgmatrix_tile": t}) for t in tiles] if feature else []
        variants.append(("generic", {"int8_sgmatrix": False}))
        for label, knobs in variants:
            if label == "generic" and ops > 2.5e11 and feature:
                _say(f"{m}x{n}x{k} {label}: skipped (slow)")
                continue
            try:
                with config.override(**knobs):
                    r = max(2, min(reps, int(2e12 / ops) + 2))
                    s, how = _gt_time(gt, lambda: gt.nn.int_mm(ga, gb), r)
                if label != "generic" and _fell_back():
                    _say(f"{m}x{n}x{k} {label}: the kernel did not compile (the generic kernel ran)")
                    continue
                row = {"shape": (m, n, k), "variant": label, "us": s * 1e6, "tops": ops / s / 1e12, "clock": how}
                _say(f"{m}x{n}x{k} {label}: {s * 1e6:10.1f} us  {ops / s / 1e12:8.2f} TOPS ({how})")
                rows.append(row)
            except Exception as exc:  # noqa: BLE001 - report and go on
                _say(f"{m}x{n}x{k} {label}: ERROR {exc}")
        if torch is not None:
            if m <= 16 or k % 8 or n % 8:
                _say(f"{m}x{n}x{k} torch._int_mm: not run (needs m > 16, k and n multiples of 8)")
                continue
            try:
                ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
                r = max(2, min(reps, int(2e13 / ops) + 2))
                s = _torch_time(torch, lambda: torch._int_mm(ta, tb), r)
                ok = bool(torch.equal(torch._int_mm(ta, tb).cpu(), torch.from_numpy(
                    _reference(a, b).astype(np.int32)))) if ops < 2e11 else None
                rows.append({"shape": (m, n, k), "variant": "torch._int_mm", "us": s * 1e6, "tops": ops / s / 1e12,
                             "clock": "cuda-events", "torch_ok": ok})
                _say(f"{m}x{n}x{k} torch._int_mm: {s * 1e6:10.1f} us  {ops / s / 1e12:8.2f} TOPS (cuda events)"
                     + ("" if ok is None else f" check {'OK' if ok else 'MISMATCH'}"))
            except Exception as exc:  # noqa: BLE001 - report and go on
                _say(f"{m}x{n}x{k} torch._int_mm: ERROR {exc}")
        del ga, gb
    return rows


def _shapes(texts: list[str] | None) -> tuple[tuple[int, int, int], ...]:
    return tuple(tuple(int(v) for v in t.lower().split("x")) for t in texts or ())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiles", nargs="+", default=list(TILES), help="int8_sgmatrix_tile values to try")
    parser.add_argument("--quick", action="store_true", help="the first two tiles, fewer shapes")
    parser.add_argument("--no-check", action="store_true")
    parser.add_argument("--no-time", action="store_true")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--check-shapes", nargs="+", help="MxNxK shapes to check (default: 1x1x1 17x33x65 256x256x256 4096x4096x4096)")
    parser.add_argument("--time-shapes", nargs="+", help="MxNxK shapes to time")
    parser.add_argument("--json", help="write the facts, failures and timings here")
    parser.add_argument("--dump", default="int8_matmul_wgsl", help="folder for sources that fail to compile")
    args = parser.parse_args(argv)

    import gputensor as gt
    from gputensor._runtime import get_backend

    tiles = args.tiles[:2] if args.quick else args.tiles
    backend = get_backend()
    facts = describe(gt, backend)
    compile_failures = compile_variants(gt, backend, tiles, args.dump) if facts["feature"] else []
    ok_tiles = [t for t in tiles if not any(f.startswith(f"tile {t} ") or f.startswith(f"{t}:")
                                            for f in compile_failures)]
    check_failures: list[str] = []
    if not args.no_check:
        shapes = _shapes(args.check_shapes) or (CHECK_SHAPES if not args.quick else CHECK_SHAPES[:3])
        check_failures = check(gt, ok_tiles or tiles[:1], shapes, facts["feature"] and bool(ok_tiles))
    rows: list[dict[str, Any]] = []
    if not args.no_time:
        rows = timings(gt, ok_tiles, _shapes(args.time_shapes) or (QUICK_TIME_SHAPES if args.quick else TIME_SHAPES),
                       facts["feature"] and bool(ok_tiles), args.reps)
    _say("== summary")
    _say(f"compile failures: {len(compile_failures)}; check failures: {len(check_failures)}")
    for f in compile_failures + check_failures:
        _say(f"  {f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"facts": facts, "compile_failures": compile_failures, "check_failures": check_failures,
                       "timings": rows}, f, indent=1, default=str)
    return 1 if compile_failures or check_failures else 0


if __name__ == "__main__":
    sys.exit(main())
