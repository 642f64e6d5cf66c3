"""Render the WGSL that the op modules generate for a large set of cases and print one line per
case: its name and the sha1 of the text. Run it on two trees and compare the outputs to check
that a change of how kernels are written leaves the generated text as it was:

    python tools/wgsl_cases.py --root OLD_TREE > old.txt
    python tools/wgsl_cases.py > new.txt   # this tree
    diff old.txt new.txt

No device: the text functions are pure (int64 is taken as native). The set covers, per module,
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
    from gputensor._backend import ops_sort as S
    from gputensor._backend.wgsl_types import STORAGE_TYPES
    dtypes = sorted(STORAGE_TYPES)
    for dtype, mode, desc in itertools.product(dtypes + ["nope"], ("canon", "bij", "x"), (False, True)):
        yield f"sort keys {dtype} {mode} {desc}", lambda a=(dtype, mode, desc): S.key_functions(*a)
    for dtype in dtypes:
        yield f"sort bits {dtype}", lambda d=dtype: S.bits_loader("f_n", "bu_f", d)
        yield f"sort store {dtype}", lambda d=dtype: S.store_bits_code("f_n", "bu_f", d)
        for mode, kw, vals in itertools.product((0, 1, 2), (1, 2), (False, True)):
            yield f"sort write {dtype} {mode} {kw} {vals}", lambda a=(mode, kw, vals, dtype): S._write_out(*a)


FAMILIES = {"rows": _rows, "sort": _sort}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", help="tree whose gputensor to import (default: this one)")
    parser.add_argument("families", nargs="*", help=f"families to render (default: all of {sorted(FAMILIES)})")
    args = parser.parse_args()
    sys.path.insert(0, args.root or str(pathlib.Path(__file__).resolve().parent.parent))
    import gputensor

    print("gputensor from", gputensor.__file__, file=sys.stderr)

    for family in args.families or FAMILIES:
        for name, make in FAMILIES[family]():
            try:
                value = make()
            except Exception as exc:  # noqa: BLE001 - the error is the case's result
                value = f"{type(exc).__name__}: {exc}"
            text = repr(sorted(value.items())) if isinstance(value, dict) else repr(value)
            print(name, hashlib.sha1(text.encode()).hexdigest())


if __name__ == "__main__":
    main()
