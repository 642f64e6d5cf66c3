"""The backend interface (``_backend/interface.py``) matches the backend, and the seed contract's
ops run the namespace's ops."""

from __future__ import annotations

import importlib
import inspect

import numpy as np
import pytest

import gputensor as gt
from gputensor._backend import BinaryOp, UnaryOp, get_backend, interface
from gputensor._backend.elementwise_ops import OPS


def test_backend_object_is_a_device() -> None:
    assert isinstance(get_backend(), interface.Device)


@pytest.mark.parametrize("name", sorted(interface.OPERATION_MODULES))
def test_operation_signatures_match_their_modules(name: str) -> None:
    module = importlib.import_module(f"gputensor._backend.{interface.OPERATION_MODULES[name]}")
    real = inspect.signature(getattr(module, name))
    declared = inspect.signature(getattr(interface.Operations, name))
    want = [(p.name, p.kind, p.default) for p in list(declared.parameters.values())[1:]]
    got = [(p.name, p.kind, p.default) for p in real.parameters.values()]
    assert got == want


def test_every_operation_is_listed() -> None:
    members = {n for n, v in vars(interface.Operations).items() if inspect.isfunction(v) and not n.startswith("_")}
    assert members == set(interface.OPERATION_MODULES)


def test_contract_ops_are_rows_of_the_namespace_table() -> None:
    for op in list(UnaryOp) + list(BinaryOp):
        assert op.op_name in OPS, op
    assert UnaryOp.NEG.op_name == "negative" and BinaryOp.MAX.op_name == "maximum"
    assert {"neg", "sub", "mul", "div", "max", "min"}.isdisjoint(OPS)


def _run(op, *hosts: np.ndarray) -> np.ndarray:
    be = get_backend()
    n = hosts[0].size
    ptrs = [be.alloc(h.nbytes) for h in hosts]
    out = be.alloc(hosts[0].nbytes)
    try:
        for p, h in zip(ptrs, hosts):
            be.copy_htod(p, h)
        (be.unary if isinstance(op, UnaryOp) else be.binary)(op, *ptrs, out, n)
        got = np.empty_like(hosts[0])
        be.copy_dtoh(got, out)
        return got
    finally:
        for p in ptrs + [out]:
            be.free(p)


def test_contract_matches_the_namespace_on_special_values() -> None:
    x = np.array([0.0, -0.0, 1.5, -2.0, np.inf, np.nan], dtype=np.float32)
    y = np.array([-0.0, 0.0, np.nan, -3.0, 1.0, 2.0], dtype=np.float32)
    for op, fn in ((UnaryOp.NEG, gt.negative), (UnaryOp.ABS, gt.abs)):
        want = gt.asnumpy(fn(gt.asarray(x)))
        np.testing.assert_array_equal(_run(op, x), want)
        assert (np.signbit(_run(op, x)) == np.signbit(want)).all()
    for op, fn in ((BinaryOp.MAX, gt.maximum), (BinaryOp.MIN, gt.minimum), (BinaryOp.SUB, gt.subtract),
                   (BinaryOp.MUL, gt.multiply), (BinaryOp.DIV, gt.divide)):
        want = gt.asnumpy(fn(gt.asarray(x), gt.asarray(y)))
        got = _run(op, x, y)
        np.testing.assert_array_equal(got, want)
        assert (np.signbit(got) == np.signbit(want)).all(), op
