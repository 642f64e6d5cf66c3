"""The op and dtype tables drive the library: one row per elementwise op gives its namespace
function, its operator dunders, its fused node and its kernel; one row per dtype gives the
frontend's DType and the kernels' facts.

The experiment of adding an op: a subprocess adds a made-up row (``x1 * x1 + x0``, with an
operator) to the table and checks that it is a namespace function, an operator (plain and
reflected), a fused lazy node and an eager kernel, all against NumPy -- nothing else is
written for it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np

import gputensor as gt
from gputensor import _dtypes
from gputensor._backend import elementwise_ops, wgsl_types
from gputensor._ops import ELEMENTWISE_OPS

_FAKE_OP = textwrap.dedent("""
    import numpy as np
    import gputensor as gt
    from gputensor import _fusion, _operators
    from gputensor._backend.elementwise_ops import ElementwiseOp, add_op

    row = ElementwiseOp("fake_fma", 2, "real numeric",
                        {"f": "(x1 * x1 + x0)", "i": "(x1 * x1 + x0)", "u": "(x1 * x1 + x0)"},
                        dunder="__divmod__", inplace=False, doc="x2 * x2 + x1 (a test op).")
    add_op(row)
    _operators.install_op(row)

    a_np = np.arange(6, dtype=np.float32).reshape(2, 3)
    b_np = np.array([1.5, -2.0, 0.25], dtype=np.float32)
    want = b_np * b_np + a_np
    a, b = gt.asarray(a_np), gt.asarray(b_np)
    assert gt.__all__.count("fake_fma") == 1 and gt.fake_fma.__name__ == "fake_fma"
    assert len(gt.__all__) == len(set(gt.__all__))
    with gt.fusion(True):
        lazy = gt.fake_fma(a, b) + 1          # namespace function, fused with the add
        assert _fusion.is_lazy(lazy)
        np.testing.assert_allclose(lazy.get(), want + 1, rtol=1e-6)
        op = divmod(a, b)                     # the operator
        assert _fusion.is_lazy(op)
        np.testing.assert_allclose(op.get(), want, rtol=1e-6)
        np.testing.assert_allclose(divmod(2, a).get(), a_np * a_np + 2)  # reflected, weak scalar
    with gt.fusion(False):
        eager = gt.fake_fma(a, b)             # an eager kernel of its own
        assert not _fusion.is_lazy(eager)
        np.testing.assert_allclose(eager.get(), want, rtol=1e-6)
        ints = gt.fake_fma(gt.asarray([1, 2], dtype=gt.int16), 3)
        assert ints.dtype == gt.int16 and ints.get().tolist() == [10, 11]
    try:
        gt.fake_fma(gt.asarray([True]), True)
    except TypeError:
        pass
    else:
        raise AssertionError("bool is outside the row's category")
    print("OK")
""")


def test_new_op_row_is_function_operator_fused_and_kernel():
    env = dict(os.environ, XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp"))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", _FAKE_OP], capture_output=True, text=True, env=env,
                          cwd=root, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("OK"), proc.stdout + proc.stderr


def test_every_row_is_installed():
    assert len(gt.__all__) == len(set(gt.__all__))
    for name, row in ELEMENTWISE_OPS.items():
        func = getattr(gt, name)
        assert func.__name__ == name and row.function
        for dunder in (row.dunder, row.reflected_dunder, row.inplace_dunder):
            if dunder is not None:
                assert getattr(gt.GpuArray, dunder).__name__ == dunder, (name, dunder)
    # every WGSL form names a known family, compute type or dtype
    keys = {"f", "i", "u", "b", "c"} | {t.compute for t in wgsl_types.DTYPE_TABLE.values()} | set(wgsl_types.DTYPE_TABLE)
    for row in elementwise_ops.OPS.values():
        assert set(row.forms) <= keys, row.name


def test_dtypes_are_the_table_rows():
    assert [d.name for d in _dtypes.ALL_DTYPES] == list(wgsl_types.DTYPE_TABLE)
    for dt in _dtypes.ALL_DTYPES:
        info = wgsl_types.DTYPE_TABLE[dt.name]
        assert dt.info is info
        assert (dt.wgsl_compute, dt.feature, dt.itemsize, dt.kind) == (info.compute, info.feature, info.itemsize,
                                                                       info.kind)
        assert info.numpy == dt.numpy
        acc = np.dtype(info.accumulator)
        assert acc.kind == ("u" if info.kind == "b" else info.kind) and acc.itemsize >= 4
    # promotion derived from the rows: NumPy's result wherever the spec (or its extension) defines one
    for (a, b), r in _dtypes.PROMOTION_TABLE.items():
        assert r.numpy == np.result_type(a.numpy, b.numpy)
    assert (_dtypes.bool, _dtypes.int8) not in _dtypes.PROMOTION_TABLE
    assert (_dtypes.uint64, _dtypes.int8) not in _dtypes.PROMOTION_TABLE
    assert (_dtypes.int8, _dtypes.complex64) not in _dtypes.PROMOTION_TABLE
    assert len(_dtypes.PROMOTION_TABLE) == 130


def test_new_reduction_row_of_a_kind():
    """A reduction of an existing kind is one row: a bitwise-or reduction of the plain kind."""
    from gputensor import _dispatch
    from gputensor._backend import ops_reduce

    row = ops_reduce.ReductionOp("bit_or", ops_reduce.PLAIN, "dst", {"bool": "a || b", "*": "a | b"},
                                 {"bool": False, "*": 0}, acc_kinds=frozenset({"bool", "int", "uint"}))
    ops_reduce.REDUCTION_OPS[row.name] = row
    try:
        host = np.array([[1, 2, 4, 8], [16, 32, 64, 3], [5, 0, 0, 1 << 31]], dtype=np.uint32)
        x = gt.asarray(host)
        out = gt.empty((4,), dtype=gt.uint32)
        ops_reduce.reduce_strided(_dispatch.backend(), "bit_or", x._ptr, "uint32", x.shape, x.strides, (0,),
                                  out._ptr, "uint32")
        np.testing.assert_array_equal(out.get(), np.bitwise_or.reduce(host, axis=0))
    finally:
        del ops_reduce.REDUCTION_OPS[row.name]


def test_accumulator_conversions_keep_signedness():
    """32-bit integers accumulated in 64-bit ones extend by their own signedness (one conversion
    rule for every kernel: ``wgsl_types.convert``)."""
    a = np.array([3_000_000_000, 4_000_000_000, 5], dtype=np.uint32)
    assert int(gt.sum(gt.asarray(a), dtype=gt.int64)) == int(np.sum(a, dtype=np.int64))
    b = np.array([-5, 7], dtype=np.int32)
    assert int(gt.sum(gt.asarray(b), dtype=gt.uint64)) == int(np.sum(b, dtype=np.uint64))
    assert int(gt.prod(gt.asarray(b), dtype=gt.uint64)) == int(np.prod(b, dtype=np.uint64))
    assert bool(gt.any(gt.asarray(np.array([0.0, np.nan], np.float32))))
    assert not bool(gt.any(gt.asarray(np.array([-0.0, 0.0], np.float32))))
