"""Render the WGSL that the op modules generate for a large set of cases and print one line per
case: its name (shortened, with a hash of the whole) and the sha1 of the text. Run it on two trees and compare the outputs to check
that a change of how kernels are written leaves the generated text as it was:

    python tools/wgsl_cases.py --root OLD_TREE > old.txt
    python tools/wgsl_cases.py > new.txt   # this tree
    diff old.txt new.txt

No device: the text functions are pure; every case runs with int64 native and emulated. The set covers, per module,
the product of the parameters its text functions take (dtypes, modes, flags, plans).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import pathlib
import sys
from collections.abc import Callable, Iterator


def _rows() -> Iterator[tuple[str, Callable[[], object]]]:
    from gputensor._backend import ops_rows as R
    plans = [R.plan_rows(rows, n, strided, size) for rows, n, strided, size in
             [(1, 7, False, 4), (64, 4096, False, 2), (8, 100000, True, 4), (300, 33, True, 8)]]
    for op, xs, ys, ws, plan, vec, w_vec, has_w, has_b, pair, f16, w_pair in itertools.product(
            R.OPS, ("f16", "f32", "f64"), ("f16", "f32", "f64"), ("f16", "f32"), plans, (False, True),
            (False, True), (False, True), (False, True), (False, True), ("exact", "pack"), (False, True)):
        if (pair and (xs != "f16" or not vec)) or (w_pair and ws != "f16"):
            continue
        yield (f"rows {op} {xs} {ys} {ws} {plan} {vec} {w_vec} {has_w} {has_b} {pair} {f16} {w_pair}",
               lambda a=(op, xs, ys, ws, plan, vec, w_vec, has_w, has_b, pair, f16, w_pair): R.row_defines(*a))


def _sort() -> Iterator[tuple[str, Callable[[], object]]]:
    from gputensor._backend import sort_key_code as S
    from gputensor._backend.wgsl_types import STORAGE_TYPES
    dtypes = sorted(STORAGE_TYPES)
    for dtype, mode, desc in itertools.product(dtypes + ["nope"], ("canon", "bij", "x"), (False, True)):
        yield f"sort keys {dtype} {mode} {desc}", lambda a=(dtype, mode, desc): S.key_functions(*a)
    for dtype in dtypes:
        yield f"sort bits {dtype}", lambda d=dtype: S.bits_loader("f_n", "bu_f", d)
        yield f"sort store {dtype}", lambda d=dtype: S.store_bits_code("f_n", "bu_f", d)
        for mode, kw, vals in itertools.product((0, 1, 2), (1, 2), (False, True)):
            yield f"sort write {dtype} {mode} {kw} {vals}", lambda a=(mode, kw, vals, dtype): S._write_out(*a)


def _gather() -> Iterator[tuple[str, Callable[[], object]]]:
    import types

    from gputensor._backend import ops_gather as G
    from gputensor._backend.wgsl_types import STORAGE_TYPES
    dtypes = sorted(STORAGE_TYPES)
    ints = [d for d in dtypes if d.startswith(("int", "uint"))]
    for k, dtype in itertools.product(range(4), ints):
        yield f"gather index {k} {dtype}", lambda a=(k, dtype): G._index_loader(*a)
        yield f"gather range {k} {dtype}", lambda a=(k, dtype): G._range_fn(*a)
    for n in range(1, 5):
        for checked in itertools.product((False, True), repeat=n):
            yield f"gather offset {n} {checked}", lambda a=(n, checked): G._index_offset_fn(*a)
            for scatter, dtype, ix in itertools.product((False, True), dtypes, ("int64", "int8", "uint32")):
                indices = [types.SimpleNamespace(dtype=ix)] * n
                yield (f"gather move {n} {checked} {scatter} {dtype} {ix}",
                       lambda a=(scatter, dtype, indices, checked): G._move_defines(*a))
    for dtype in dtypes:
        for flag, nan in itertools.product(("nonzero", "head"), (False, True)):
            yield f"gather flag {flag} {dtype} {nan}", lambda a=(flag, dtype, nan): G._flag_fn(*a)
    for sg in (False, True):
        yield f"gather count {sg}", lambda sg=sg: G._count_add_code(sg)


def _scan() -> Iterator[tuple[str, Callable[[], object]]]:
    from gputensor._backend import ops_scan as S
    from gputensor._backend.wgsl_types import STORAGE_TYPES, storage_type
    types = [storage_type(d) for d in sorted(STORAGE_TYPES) if not d.startswith("complex")]
    for op, mode, phase, carry, src, dst, vec_store, prefetch in itertools.product(
            S.OPS, (S.MODE_ROWS, S.MODE_COLUMNS, S.MODE_VECTOR), (0, 1), (0, 1), types, types,
            (False, True), (False, True)):
        for acc in {dst, storage_type("float32"), storage_type("int64")}:
            yield (f"scan {op} {mode} {phase} {carry} {src.name} {dst.name} {acc.name} {vec_store} {prefetch}",
                   lambda a=(op, mode, phase, carry, src, dst, acc, vec_store, prefetch): S._defines(*a))


def _reduce() -> Iterator[tuple[str, Callable[[], object]]]:
    import types

    from gputensor._backend import ops_reduce as R
    from gputensor._backend.ops_elementwise import ArrayOperand, ScalarOperand
    from gputensor._backend.wgsl_types import STORAGE_TYPES, storage_type
    names = sorted(STORAGE_TYPES)
    for op, spec in sorted(R.REDUCTION_OPS.items()):
        for src, dst, acc in itertools.product(names, names, names):
            t = R._Types(spec, storage_type(src), storage_type(dst), storage_type(acc))
            for in_p, out_p in itertools.product((False, True), repeat=2):
                yield (f"reduce {op} {src} {dst} {acc} {in_p} {out_p}",
                       lambda t=t, a=(in_p, out_p): t.defines(in_partial=a[0], out_partial=a[1]))
            if src == dst == acc or acc in ("float32", "float64"):
                for width in (0, 2, 4):
                    yield f"reduce vec {op} {src} {dst} {acc} {width}", lambda t=t, w=width: t.vector_defines(w, t.src.compute)
                    yield (f"reduce vecsrc {op} {src} {dst} {acc} {width}",
                           lambda t=t, w=width: t.vector_source(w, 5, t.src.compute))
    backend = types.SimpleNamespace(max_window_bytes=lambda: 1 << 30, supports=lambda feature: True)
    shapes = [((37,), [(1,)]), ((4, 5), [(5, 1), (0, 1)]), ((2, 3, 4), [(12, 4, 1), (1, 2, 6), (0, 0, 1)])]
    for (shape, strides), dtype, n_scalars in itertools.product(shapes, ("float32", "int8", "float16", "int64"), (0, 1)):
        inputs = tuple(ArrayOperand(0, dtype, s) for s in strides) + (ScalarOperand(2, "float32"),) * n_scalars
        lets = "    let t0 = x0 + x0;" if n_scalars else ""
        pro = R.Prologue(inputs, lets, "t0" if n_scalars else "x0")
        for src in ("float32", dtype):
            yield (f"reduce prologue {shape} {strides} {dtype} {n_scalars} {src}",
                   lambda a=(backend, pro, shape, storage_type(src), 4): R._prologue_code(*a))


def _elementwise() -> Iterator[tuple[str, Callable[[], object]]]:
    from gputensor._backend import elementwise as E
    from gputensor._backend.wgsl_types import STORAGE_TYPES, storage_type
    names = sorted(STORAGE_TYPES)
    exprs = {1: ("x0", "-x0"), 2: ("x0 + x1", "select(x0, x1, x0 > x1)"), 3: ("select(x1, x2, x0 != x0)",)}
    for arity, out, ndim, store in itertools.product((1, 2, 3), names, (0, 1, 3), ("direct", "word", "atomic")):
        for first in names:
            for pattern in itertools.product((False, True), repeat=arity):
                if all(pattern):
                    continue
                inputs = tuple((first if k == 0 else ("int8", "float32", "float16", "uint64")[k % 4], scalar)
                               for k, scalar in enumerate(pattern))
                compute = storage_type(out).compute
                casts = tuple(compute for _ in inputs)
                for expr, lets in itertools.product(exprs[arity], ("", "    let t0 = x0;")):
                    spec = E.ElementwiseSpec(inputs, casts, expr, compute, out, ndim, store, 1, lets)
                    yield f"ew {spec}", lambda spec=spec: E.render_defines(spec)
                    if ndim == 0 and store != "atomic":
                        for vector in {E.vector_width(spec), E.vector_width(spec, mixed=False)} - {1}:
                            vspec = E.ElementwiseSpec(inputs, casts, expr, compute, out, ndim, store, vector, lets)
                            yield f"ew {vspec}", lambda spec=vspec: E.render_defines(spec)


def _row_fusion() -> Iterator[tuple[str, Callable[[], object]]]:
    from gputensor._backend import ops_row_fusion as F
    from gputensor._backend.wgsl_types import storage_type
    for x, out, lanes, cached, full, vec, word_store, strided, scalar, keep, hoist, per_row, bcast in itertools.product(
            ("float32", "float16", "float64", "int8"), ("float32", "float16", "bool"), (1, 2, 4), (False, True),
            (False, True), (False, True), (False, True), (False, True), (False, True), (False, True),
            (False, True), (False, True), (False, True)):
        if (full and not cached) or (word_store and not storage_type(out).packed) or (keep and not cached):
            continue
        xt, ot = storage_type(x).compute, storage_type(out).compute
        acc = "f64" if x == "float64" else "f32"
        arrays = ((x, True, False),) + (((x, False, False),) if bcast else ()) + ((out, not per_row, True),)
        dst = len(arrays) - 1
        b = ("a", 1) if bcast else ("a", 0)
        stats = (F.RowStat("max", x, F.RowFunction((("a", 0),), "", "x0", xt), -1),
                 F.RowStat("sum", x, F.RowFunction((("a", 0), ("s", 0), b), "    let t0 = x0 - x1;",
                                                   "exp(t0) * x2", xt), -1, keep))
        params = [("a", 0), ("s", 1)] + ([("v", 1)] if keep else []) + ([("h", 0)] if hoist else [])
        params += [("p", 0)] if scalar else []
        root = F.RowFunction(tuple(params), "", " + ".join(f"x{i}" for i in range(len(params))), xt)
        hoisted = ((F.RowFunction((("s", 1),), "", "log(x0)", xt), x),) if hoist else ()
        vecs = tuple(vec and storage_type(d).array == "f32" and (varying or w) for d, varying, w in arrays)
        spec = F.RowFusionSpec(arrays, ("float32",) if scalar else (), stats, root, dst, per_row, acc,
                               32, 2 if strided else 1, strided, 2, cached, lanes, word_store, hoisted, full, vecs)
        yield f"row_fusion {spec}", lambda spec=spec: F.row_fusion_defines(spec)
        mean = (F.RowStat("mean", x, F.RowFunction((("a", 0),), "", "x0", xt), dst if per_row else -1),
                F.RowStat("mean", x, F.RowFunction((("a", 0), ("s", 0)), "", "(x0 - x1) * (x0 - x1)", xt), -1))
        spec = F.RowFusionSpec(arrays, (), mean, F.RowFunction((("a", 0), ("s", 0), ("s", 1)), "",
                                                               "(x0 - x1) / sqrt(x2)", xt), dst, per_row, acc,
                               64, 1, False, 4, cached, lanes, word_store, (), full, vecs)
        yield f"row_fusion {spec}", lambda spec=spec: F.row_fusion_defines(spec)


def _user_kernels() -> Iterator[tuple[str, Callable[[], object]]]:
    from gputensor._user_kernels import ElementwiseKernel
    kernel = ElementwiseKernel("T x, raw T y, float32 s", "T z, int8 w", "z = x + y(i) * T(s); w = i8(z);", "k")
    for t, kinds, out, ndim, load_outs in itertools.product(
            ("float32", "int16", "float16", "int64", "bool"), itertools.product(("array", "scalar", "raw"), repeat=3),
            ("float32", "uint8"), (0, 1, 2), itertools.product((False, True), repeat=2)):
        if kinds[1] != "raw" or kinds[0] == "raw" or kinds[2] == "raw":
            continue
        key = ((t, t, "float32"), (t, t, "float32"), kinds, (out, "int8"), ndim, load_outs)
        yield (f"user {key}", lambda key=key: kernel._generate(key).defines)


def _fused() -> Iterator[tuple[str, Callable[[], object]]]:
    from gputensor._backend import elementwise as E
    from gputensor._backend import kernels
    from gputensor._backend.elementwise_ops import OPS, expression
    from gputensor._backend.wgsl_types import storage_type
    dtypes = ("float32", "float16", "int8", "int64", "uint64", "bool", "float64", "complex64")
    for name, row in sorted(OPS.items()):
        for a, b in itertools.product(dtypes, repeat=2):
            compute = storage_type(a).compute
            try:
                expr = expression(name, compute, a)
            except KeyError:
                continue
            arity = getattr(row, "arity", 1)
            nodes = ((expr, (compute,) * arity, compute, a, tuple(range(arity))),
                     ("x0 + x1", (compute, compute), compute, b, (0, 2)))
            inputs = (a, b, "float32")[: max(arity, 2)]
            for round_root in (False, True):
                yield (f"fused {name} {a} {b} {round_root}",
                       lambda a=(inputs, nodes, round_root): E.fused_program(*a))
    for text in ("fn main() { let x = gt_f32_bits(1u); }", "fn f(a: i64e) -> u64e { return x64_v_u64e(a); }",
                 "fn main() { let y: i64e = i64e(1u, 0u); }"):
        yield f"with_helpers {text}", lambda text=text: kernels.with_helpers(text)


FAMILIES = {"rows": _rows, "sort": _sort, "gather": _gather, "scan": _scan, "reduce": _reduce,
            "elementwise": _elementwise, "row_fusion": _row_fusion, "user": _user_kernels, "fused": _fused}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", help="tree whose gputensor to import (default: this one)")
    parser.add_argument("families", nargs="*", help=f"families to render (default: all of {sorted(FAMILIES)})")
    args = parser.parse_args()
    sys.path.insert(0, args.root or str(pathlib.Path(__file__).resolve().parent.parent))
    import gputensor

    print("gputensor from", gputensor.__file__, file=sys.stderr)

    from gputensor._backend.wgsl_types import int64_mode

    lines = []
    for family, emulated in itertools.product(args.families or FAMILIES, (False, True)):
        with int64_mode(emulated):
            for name, make in FAMILIES[family]():
                try:
                    value = make()
                except Exception as exc:  # noqa: BLE001 - the error is the case's result
                    value = f"{type(exc).__name__}: {exc}"
                text = repr(sorted(value.items())) if isinstance(value, dict) else repr(value)
                name = f"{'emulated-int64 ' if emulated else ''}{name}"
                digest = hashlib.sha1(name.encode()).hexdigest()[:12]  # (the name, shortened, stays unique)
                lines.append(f"{name[:150]} {digest} {hashlib.sha1(text.encode()).hexdigest()}")
    print("\n".join(sorted(lines)))


if __name__ == "__main__":
    main()
