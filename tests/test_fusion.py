"""Elementwise fusion (gputensor._fusion): lazy elementwise results computed by one generated
kernel, reduction prologues, write hazards, structure caching and the on/off switch.

Every check that compares numbers runs the same program with fusion on and off (and against
NumPy); dispatches and pipeline compilations are counted with ``backend.context.stats``,
allocations by wrapping ``_runtime.alloc``.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gputensor as gt
from gputensor import _dispatch, _fusion, _runtime
from gputensor._backend import config, get_backend

from _compare import assert_close, assert_same
from _compare import tol

FEW = settings(max_examples=min(settings().max_examples, 15), deadline=None)


@pytest.fixture(scope="module")
def backend():
    return get_backend()


@pytest.fixture(autouse=True)
def _fusion_on():
    """Every test starts with fusion on and restores the setting."""
    previous = gt.set_fusion(True)
    yield
    gt.set_fusion(previous)


def _rand(shape, dtype="float32", seed=0, low=-3.0, high=3.0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.uniform(low, high, size=shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -40), min(info.max, 40), size=shape, endpoint=True).astype(dtype)


class Counter:
    """Dispatches, pipeline compilations and allocations since construction."""

    def __init__(self, backend, monkeypatch=None):
        gt.synchronize()
        self.stats = backend.context.stats
        self.d0 = self.stats["dispatches"]
        self.p0 = self.stats["pipelines_compiled"]
        self.allocs: list[int] = []
        if monkeypatch is not None:
            real = _runtime.alloc

            def counting(nbytes, zero=True):
                self.allocs.append(nbytes)
                return real(nbytes, zero)

            monkeypatch.setattr(_runtime, "alloc", counting)

    @property
    def dispatches(self) -> int:
        return self.stats["dispatches"] - self.d0

    @property
    def compiled(self) -> int:
        return self.stats["pipelines_compiled"] - self.p0


# ---------------------------------------------------------------------------------------------
# one kernel per chain, intermediates never written
# ---------------------------------------------------------------------------------------------
def test_chain_is_one_dispatch_and_one_allocation(backend, monkeypatch):
    an, bn = _rand((64, 33), seed=1), _rand((33,), seed=2)
    a, b = gt.asarray(an), gt.asarray(bn)
    c = Counter(backend, monkeypatch)
    y = gt.exp(a) * b + 1
    z = a / gt.sqrt(b ** 2 + 1)
    assert _fusion.is_lazy(y) and _fusion.is_lazy(z)
    assert c.dispatches == 0 and c.allocs == []
    ys, zs = gt.asnumpy(y), gt.asnumpy(z)
    assert c.dispatches == 2  # one kernel each
    assert c.allocs == [an.nbytes, an.nbytes]  # only the two results: no intermediate written
    assert not _fusion.is_lazy(y) and type(y) is gt.GpuArray
    assert_close(ys, np.exp(an.astype(np.float64)) * bn + 1, "float32", "transcendental")
    assert_close(zs, an / np.sqrt(bn.astype(np.float64) ** 2 + 1), "float32", "chained")


def test_fused_equals_unfused_and_unfused_dispatches(backend):
    an, bn = _rand((50,), seed=3), _rand((50,), seed=4)
    results = {}
    for mode in (True, False):
        with gt.fusion(mode):
            a, b = gt.asarray(an), gt.asarray(bn)
            c = Counter(backend)
            steps = [lambda t: t * b, lambda t: t + 1.0, gt.sin, lambda t: t - a, lambda t: t * 0.5,
                     gt.abs, gt.sqrt, lambda t: t / (b * b + 1.0), lambda t: gt.maximum(t, 0.1)]
            t = a * b
            for f in steps:  # a 10-op chain (plus b * b + 1.0: 12 kernels unfused)
                t = f(t)
            results[mode] = gt.asnumpy(t)
            assert c.dispatches == (1 if mode else 12)
    np.testing.assert_allclose(results[True], results[False], **tol("float32", "accumulated_fine"))


def test_attributes_do_not_materialise(backend):
    a = gt.asarray(_rand((3, 4)))
    c = Counter(backend)
    y = a * 2 + 1
    assert y.shape == (3, 4) and y.dtype == gt.float32 and y.ndim == 2 and y.size == 12
    assert y.device == a.device and y.strides == (4, 1) and len(y) == 3
    assert y.__array_namespace__() is gt
    assert isinstance(y, gt.GpuArray) and _fusion.is_lazy(y)
    assert c.dispatches == 0
    assert y.to_device(a.device) is y and _fusion.is_lazy(y)


@pytest.mark.parametrize("observe", ["get", "repr", "float", "bool", "item", "dlpack", "np", "sync", "matmul",
                                     "index", "view", "sort", "setitem_source", "asnumpy_many"])
def test_observers_materialise(backend, observe):
    an = _rand((4, 4), seed=5)
    a = gt.asarray(an)
    y = a * 2 - 1
    ref = an * 2 - 1
    if observe == "get":
        np.testing.assert_array_equal(y.get(), ref)
    elif observe == "repr":
        assert repr(y).startswith("GpuArray(") and str(y)
    elif observe == "float":
        y = gt.sum(y) * 1  # a lazy 0-d array
        assert _fusion.is_lazy(y)
        assert float(y) == pytest.approx(float(ref.sum()), rel=tol("float32", "accumulated")["rtol"])
    elif observe == "bool":
        y = gt.all(y < 100) | False
        assert bool(y) is True
    elif observe == "item":
        y = a[0, 0] * 3
        assert y.item() == pytest.approx(float(an[0, 0]) * 3)
    elif observe == "dlpack":
        np.testing.assert_array_equal(np.from_dlpack(y), ref)
    elif observe == "np":
        np.testing.assert_array_equal(np.asarray(y), ref)
    elif observe == "sync":
        gt.synchronize()
        assert not _fusion.is_lazy(y)
        np.testing.assert_array_equal(gt.asnumpy(y), ref)
    elif observe == "matmul":
        np.testing.assert_allclose(gt.asnumpy(y @ y), ref @ ref, **tol("float32", "matmul"))
    elif observe == "index":
        np.testing.assert_array_equal(gt.asnumpy(y[1]), ref[1])
    elif observe == "view":
        np.testing.assert_array_equal(gt.asnumpy(y.T), ref.T)
        np.testing.assert_array_equal(gt.asnumpy(gt.reshape(y, (16,))), ref.reshape(16))
    elif observe == "sort":
        np.testing.assert_array_equal(gt.asnumpy(gt.sort(y, axis=1)), np.sort(ref, axis=1))
    elif observe == "setitem_source":
        z = gt.zeros((4, 4))
        z[...] = y  # the DAG is written straight into z: y itself stays lazy
        np.testing.assert_array_equal(gt.asnumpy(z), ref)
        assert _fusion.is_lazy(y)
        y.get()
    elif observe == "asnumpy_many":
        (got,) = gt.asnumpy_many(y)
        np.testing.assert_array_equal(got, ref)
    assert not _fusion.is_lazy(y)


def test_synchronize_materialises_every_lazy_array(backend):
    a = gt.asarray(_rand((8,)))
    ys = [a * k for k in range(5)]
    assert all(_fusion.is_lazy(y) for y in ys)
    assert _fusion.pending_count() >= 5
    gt.synchronize()
    assert not any(_fusion.is_lazy(y) for y in ys)
    assert _fusion.pending_count() == 0


def test_fusion_window_materialises_kept_results_in_order(backend):
    """Lazy results kept alive past the window are computed while more are made (in order);
    without a window (``fusion_window=0``) they stay lazy until the synchronize."""
    an = _rand((64,), seed=47)
    a = gt.asarray(an)
    n = 200
    for window in (8, 0):
        with config.override(fusion_window=window):
            gt.synchronize()
            ys = [a * np.float32(k) for k in range(n)]
            lazy = [_fusion.is_lazy(y) for y in ys]
            if window:  # (a changed window holds from the next sweep on)
                assert sum(lazy) <= 2 * window and not any(lazy[: n - 2 * window])
            else:
                assert all(lazy)
            gt.synchronize()
            for k, y in enumerate(ys):
                np.testing.assert_array_equal(gt.asnumpy(y), an * np.float32(k))


_TRACKED_SCRIPT = """
import gc, sys
import numpy as np
import gputensor as gt
from gputensor import _fusion
a = gt.asarray(np.ones(256, np.float32))
b = gt.asarray(np.full(256, 2.0, np.float32))
c = a > b
make = {"a + b": lambda: a + b, "a * 2.0": lambda: a * 2.0, "exp": lambda: gt.exp(a),
        "where": lambda: gt.where(c, a, b), "chain": lambda: (a + b) * a}[sys.argv[1]]
for _ in range(3):  # the call's caches
    make()
gt.synchronize()
n = 400
held = []
gc.collect()
gc.disable()
before = len(gc.get_objects())
for _ in range(n):
    held.append(make())
per_call = (len(gc.get_objects()) - before) / n
gc.enable()
assert all(_fusion.is_lazy(x) for x in held)
print(per_call)
"""


@pytest.mark.parametrize("op, limit", [("a + b", 4.5), ("a * 2.0", 7.5), ("exp", 4.5), ("where", 5.5),
                                       ("chain", 6.5)])
def test_held_lazy_results_make_few_tracked_objects(op, limit):
    """A held lazy result makes few objects the cyclic garbage collector tracks (its young
    generation is collected every 700 of them: a held loop's host time): the array, its node,
    the node's operand tuple (also its leaves when they are the operands) and the registry's
    weak reference; a scalar adds its pair, the node's scalar tuple and a leaves tuple. Counted
    in a fresh process with one device (the cached paths of ``where`` serve one device)."""
    env = dict(os.environ, GPUTENSOR_FUSION="1")
    out = subprocess.run([sys.executable, "-c", _TRACKED_SCRIPT, op], env=env, capture_output=True, text=True,
                         check=True)
    per_call = float(out.stdout.strip().splitlines()[-1])
    assert per_call <= limit, f"{op}: {per_call:.2f} tracked objects per held lazy result"


def test_unobserved_results_are_never_computed(backend, monkeypatch):
    a = gt.asarray(_rand((1000,)))
    c = Counter(backend, monkeypatch)
    for _ in range(5):
        _ = gt.exp(a) * 3 + a
    del _
    gt.synchronize()
    assert c.dispatches == 0 and c.allocs == []


def test_where_clip_astype_fuse(backend):
    an = _rand((40,), seed=6)
    a = gt.asarray(an)
    c = Counter(backend)
    leaky = gt.where(a > 0, a, 0.1 * a)
    clipped = gt.clip(leaky * 2, -1.0, 1.0)
    half = gt.astype(clipped, gt.float16) * 3
    got = gt.asnumpy(half)
    assert c.dispatches == 1
    ref = (np.clip(np.where(an > 0, an, np.float32(0.1) * an) * 2, -1, 1).astype(np.float16) * np.float16(3))
    np.testing.assert_array_equal(got, ref)


def test_copy_into_writes_the_dag_straight_into_the_destination(backend, monkeypatch):
    an, bn = _rand((6, 7), seed=7), _rand((7,), seed=8)
    a, b = gt.asarray(an), gt.asarray(bn)
    dst = gt.zeros((2, 6, 7), dtype=gt.float64)
    c = Counter(backend, monkeypatch)
    dst[1] = a * b + 2  # cast to float64 in the same kernel
    assert c.dispatches == 1 and c.allocs == []
    ref = np.zeros((2, 6, 7))
    ref[1] = (an * bn + np.float32(2)).astype(np.float64)
    # one kernel may contract a * b + 2 into an fma (NVIDIA does): a rounding of the product's size
    tol = np.zeros_like(ref)
    tol[1] = 2.0**-22 * (np.abs(an * bn) + 2)
    err = np.abs(gt.asnumpy(dst) - ref)
    assert np.all(err <= tol), err.max()


# ---------------------------------------------------------------------------------------------
# dtypes: every intermediate is rounded/wrapped as storing it would
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "int64", "float16", "float32",
                                   "float64", "bool"])
def test_intermediate_rounding_matches_unfused(backend, dtype):
    xn, yn = _rand((37,), dtype, seed=9), _rand((37,), dtype, seed=10)
    out = {}
    for mode in (True, False):
        with gt.fusion(mode):
            x, y = gt.asarray(xn), gt.asarray(yn)
            if dtype == "bool":
                r = (x & y) | ~x
                r = gt.where(r ^ y, x, y)
            elif np.dtype(dtype).kind == "f":
                r = ((x * 3.3 + 1.7) * y - x / (y * y + 1)) * 7.1
            else:
                r = (x * 100 + y * 77) // 3 - (y % 5) * x
            out[mode] = gt.asnumpy(r)
    if dtype == "float16":
        np.testing.assert_allclose(out[True].astype(np.float32), out[False].astype(np.float32), **tol("float16", "float16_chain"))
    elif np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(out[True], out[False], **tol(dtype, "accumulated_fine"))
    else:
        np.testing.assert_array_equal(out[True], out[False])
    with np.errstate(all="ignore"):
        if dtype == "bool":
            ref = np.where(((xn & yn) | ~xn) ^ yn, xn, yn)
        elif np.dtype(dtype).kind == "f":
            t = np.dtype(dtype).type
            ref = ((xn * t(3.3) + t(1.7)) * yn - xn / (yn * yn + t(1))) * t(7.1)
        else:
            t = np.dtype(dtype).type
            ref = (xn * t(100) + yn * t(77)) // t(3) - (yn % t(5)) * xn
    if np.dtype(dtype).kind == "f":
        assert_close(out[True], ref, dtype, "chained")
    else:
        np.testing.assert_array_equal(out[True], ref)


def test_mixed_dtype_chain_with_weak_scalars(backend):
    i8 = gt.asarray(np.arange(-5, 5, dtype=np.int8))
    u8 = gt.asarray(np.arange(10, dtype=np.uint8))
    f16 = gt.asarray(np.linspace(-1, 1, 10).astype(np.float16))
    out = {}
    for mode in (True, False):
        with gt.fusion(mode):
            r = (i8 * 20 + u8) / 3  # int16 (wraps) then the default float
            s = gt.astype(r, gt.float16) * f16 + 0.1
            out[mode] = (gt.asnumpy(r), gt.asnumpy(s))
    np.testing.assert_array_equal(out[True][0], out[False][0])
    np.testing.assert_array_equal(out[True][1], out[False][1])
    assert out[True][0].dtype == np.float32 and out[True][1].dtype == np.float16


# ---------------------------------------------------------------------------------------------
# random op chains: fused == unfused == NumPy
# ---------------------------------------------------------------------------------------------
_BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply,
    "maximum": np.maximum, "minimum": np.minimum,
}
_UNARY = {
    "negative": np.negative, "abs": np.abs, "square": np.square, "sin": np.sin, "tanh": np.tanh,
}
_SCALARS = [2, -1, 0.5, 1.25]
_DTYPES = ["float32", "float16", "float64", "int32", "int8", "uint8", "int64"]


@st.composite
def _programs(draw):
    dtype = draw(st.sampled_from(_DTYPES))
    base = draw(st.sampled_from([(6,), (3, 5), (2, 3, 4), ()]))
    n_inputs = draw(st.integers(1, 3))
    inputs = []
    for k in range(n_inputs):
        shape = tuple(n if draw(st.booleans()) else 1 for n in base)[draw(st.integers(0, len(base))):]
        inputs.append((shape, draw(st.booleans())))  # (shape, read through a reversed view)
    steps = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["u", "b", "s", "w", "c", "r"]))
        steps.append((kind, draw(st.integers(0, 100)), draw(st.integers(0, 100)),
                      draw(st.sampled_from(sorted(_UNARY))), draw(st.sampled_from(sorted(_BINARY))),
                      draw(st.sampled_from(_SCALARS))))
    observe = draw(st.integers(0, 100))
    return dtype, inputs, steps, observe, draw(st.integers(0, 2**16))


def _run_program(dtype, inputs, steps, seed, xp):
    """Apply ``steps`` to the inputs with namespace ``xp`` (gt, or None for the NumPy reference,
    which then casts every step to the result dtype gputensor reported in ``dtypes``)."""
    rng = np.random.default_rng(seed)
    hosts = []
    for shape, flip in inputs:
        full = _rand(shape, dtype, seed=int(rng.integers(1 << 30)), low=-2, high=2)
        hosts.append((full, flip))
    values = []
    for full, flip in hosts:
        if xp is None:
            values.append(full)
        else:
            dev = gt.asarray(np.ascontiguousarray(full[..., ::-1]) if (flip and full.ndim) else full)
            values.append(dev[..., ::-1] if (flip and full.ndim) else dev)
    return values


def _apply(step, values, xp, result_dtypes, k):
    kind, i, j, un, bn, scalar = step
    x, y = values[i % len(values)], values[j % len(values)]
    if xp is not None:
        if kind == "u":
            return getattr(gt, un)(x)
        if kind == "b":
            return getattr(gt, bn)(x, y)
        if kind == "s":
            return getattr(gt, bn)(x, scalar)
        if kind == "w":
            return gt.where(x > y, x, y * 2)
        if kind == "r":  # a reduction of the (lazy) value: its prologue fuses
            return gt.sum(x, axis=-1) if i % 2 else gt.max(x, axis=0)
        return gt.astype(x, gt.float32) * 2 if x.dtype != gt.float32 else gt.astype(x, gt.float64)
    with np.errstate(all="ignore"):
        t = result_dtypes[k]
        if kind == "u":
            r = _UNARY[un](x)
        elif kind == "b":
            r = _BINARY[bn](x, y)
        elif kind == "s":
            weak = x.dtype.kind in "iu" and isinstance(scalar, int)  # same dtype, wrapping
            r = _BINARY[bn](x, np.asarray(scalar).astype(x.dtype) if weak else scalar)
        elif kind == "w":
            r = np.where(x > y, x, y * x.dtype.type(2))
        elif kind == "r":
            r = np.sum(x.astype(np.float64) if x.dtype.kind == "f" else x, axis=-1) if i % 2 else np.max(x, axis=0)
        else:
            r = x.astype(np.float32) * np.float32(2) if x.dtype != np.float32 else x.astype(np.float64)
        return np.asarray(r).astype(t)


@FEW
@given(program=_programs())
def test_random_chains_fused_unfused_numpy(backend, program):
    dtype, inputs, steps, observe, seed = program
    if dtype in ("int64", "float64") and not _dispatch.adapter_features() >= {"shader-int64", "shader-f64"}:
        return
    outcomes = {}
    for mode in (True, False):
        with gt.fusion(mode):
            values = _run_program(dtype, inputs, steps, seed, gt)
            errors, dtypes = [], []
            for step in steps:
                try:
                    r = _apply(step, values, gt, None, None)
                except (TypeError, ValueError, OverflowError) as exc:  # at the call, in both modes
                    errors.append(type(exc))
                    continue
                errors.append(None)
                dtypes.append(r.dtype.numpy)
                values.append(r)
            kept = values[observe % len(values)]  # an intermediate the user kept
            outcomes[mode] = (errors, dtypes, gt.asnumpy(values[-1]), gt.asnumpy(kept))
    assert outcomes[True][0] == outcomes[False][0]
    assert outcomes[True][1] == outcomes[False][1]
    for got_fused, got_plain in zip(outcomes[True][2:], outcomes[False][2:]):
        finite = got_plain[np.isfinite(got_plain)] if got_plain.dtype.kind == "f" else got_plain
        scale = float(np.nanmax(np.abs(finite), initial=1.0)) if got_plain.dtype.kind == "f" else None
        assert_same(got_fused, got_plain, "fused", scale=scale)
    # NumPy, step by step in the dtypes gputensor reported
    values = _run_program(dtype, inputs, steps, seed, None)
    k = 0
    for step, err in zip(steps, outcomes[False][0]):
        if err is None:
            values.append(_apply(step, values, None, outcomes[False][1], k))
            k += 1
    ref = values[-1]
    got = outcomes[True][2]
    scale = float(np.nanmax(np.abs(ref[np.isfinite(ref)]), initial=1.0)) if ref.dtype.kind == "f" else None
    assert_same(got, ref, "chained", atol=0.0, scale=scale, type_check=False)


# ---------------------------------------------------------------------------------------------
# errors stay at the call that causes them
# ---------------------------------------------------------------------------------------------
def test_errors_are_raised_at_the_call(backend):
    a = gt.asarray(np.ones(3, dtype=np.float32))
    lazy = a * 2
    with pytest.raises(ValueError):
        lazy + gt.ones(4)
    with pytest.raises(TypeError):
        gt.asarray(np.ones(3, dtype=bool)) + lazy
    with pytest.raises(TypeError):
        gt.bitwise_and(lazy, lazy)
    with pytest.raises(OverflowError):
        gt.asarray(np.ones(3, dtype=np.int8)) * 2 + 1000
    i = gt.asarray(np.ones(3, dtype=np.int32)) + 1
    with pytest.raises(TypeError):
        i += 1.5  # the result dtype would change
    with pytest.raises(ValueError):
        lazy += gt.ones((2, 3))  # the shape would change
    with pytest.raises(TypeError):
        gt.sin(i)
    assert _fusion.is_lazy(lazy) and _fusion.is_lazy(i)
    np.testing.assert_array_equal(gt.asnumpy(lazy), [2, 2, 2])
    np.testing.assert_array_equal(gt.asnumpy(i), [2, 2, 2])


# ---------------------------------------------------------------------------------------------
# write hazards
# ---------------------------------------------------------------------------------------------
def test_inplace_operator_on_a_leaf_materialises_readers_first(backend):
    an = _rand((10,), seed=11)
    a = gt.asarray(an)
    y = a * 2
    a += 1  # writes the storage y reads
    np.testing.assert_array_equal(gt.asnumpy(y), an * 2)
    np.testing.assert_array_equal(gt.asnumpy(a), an + 1)


@pytest.mark.parametrize("how", ["setitem_scalar", "setitem_array", "setitem_lazy", "other_view",
                                 "view_before", "inplace_other", "imatmul", "fill_slice"])
def test_writes_through_any_path_keep_pending_values(backend, how):
    an = _rand((4, 4), seed=12)
    a = gt.asarray(an)
    view = a[::2]  # made before the lazy array
    y = gt.exp(a) + a  # pending, reads a's storage
    exp_ref = np.exp(an.astype(np.float64)) + an
    if how == "setitem_scalar":
        a[1:3] = 7
    elif how == "setitem_array":
        a[...] = gt.asarray(np.zeros((4, 4), np.float32))
    elif how == "setitem_lazy":
        a[0] = a[1] * 10
    elif how == "other_view":
        a.T[0] = 5  # a view created after
    elif how == "view_before":
        view[...] = -1
    elif how == "inplace_other":
        view *= 3
    elif how == "imatmul":
        a @= gt.eye(4)
    elif how == "fill_slice":
        a[:, 1] = gt.asarray(np.arange(4, dtype=np.float32))
    assert_close(gt.asnumpy(y), exp_ref, "float32", "transcendental")


def test_lazy_inplace_extends_the_dag_and_old_readers_keep_the_old_value(backend):
    an = _rand((9,), seed=13)
    a = gt.asarray(an)
    c = Counter(backend)
    y = a * 2
    z = y * 3  # built on the old y
    y += 1
    y *= 2
    assert _fusion.is_lazy(y) and c.dispatches == 0
    np.testing.assert_array_equal(gt.asnumpy(y), (an * 2 + 1) * 2)
    np.testing.assert_array_equal(gt.asnumpy(z), an * 2 * 3)
    assert c.dispatches == 2


def test_inplace_into_array_with_a_lazy_operand_is_one_kernel(backend, monkeypatch):
    an, bn, cn = (_rand((32,), seed=s) for s in (14, 15, 16))
    a, b, cc = gt.asarray(an), gt.asarray(bn), gt.asarray(cn)
    c = Counter(backend, monkeypatch)
    a += b * cc  # a = a + b * c written straight into a
    assert c.dispatches == 1 and c.allocs == []
    np.testing.assert_allclose(gt.asnumpy(a), an + bn * cn, **tol("float32", "elementwise"))


def test_overlapping_assignments_match_numpy(backend):
    an = _rand((12,), seed=17)
    for mode in (True, False):
        with gt.fusion(mode):
            a = gt.asarray(an)
            a[1:] = a[:-1] * 2 + 1  # the source overlaps the destination, shifted
            ref = an.copy()
            ref[1:] = an[:-1] * 2 + 1
            np.testing.assert_array_equal(gt.asnumpy(a), ref)
            b = gt.asarray(an)
            b += b[::-1] * 0.5  # reversed read of the written array
            np.testing.assert_array_equal(gt.asnumpy(b), an + an[::-1] * np.float32(0.5))
            m = gt.asarray(an.reshape(3, 4))
            m[...] = m * 2  # same layout: in place
            np.testing.assert_array_equal(gt.asnumpy(m), an.reshape(3, 4) * 2)


def test_views_of_lazy_arrays(backend):
    an = _rand((3, 4), seed=18)
    a = gt.asarray(an)
    y = a + 1
    t = y.T
    assert not _fusion.is_lazy(y) and type(t) is gt.GpuArray
    np.testing.assert_array_equal(gt.asnumpy(t), (an + 1).T)
    t[0, 0] = 100  # a view shares the (now real) storage
    assert float(y[0, 0]) == 100
    w = a * 3
    row = w[1]
    w[1, 2] = -5
    assert float(row[2]) == -5
    mt = (a * 2).mT
    np.testing.assert_array_equal(gt.asnumpy(mt), (an * 2).T)


def test_asarray_copy_is_independent(backend):
    a = gt.asarray(np.arange(5, dtype=np.float32))
    c = gt.asarray(a, copy=True)
    assert _fusion.is_lazy(c)
    a[...] = 0
    np.testing.assert_array_equal(gt.asnumpy(c), np.arange(5))


# ---------------------------------------------------------------------------------------------
# reductions with a fused prologue
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2)])
@pytest.mark.parametrize("op", ["sum", "prod", "max", "min", "mean", "var", "std", "argmax", "argmin", "all", "any"])
def test_reduction_prologue(backend, op, axis, monkeypatch):
    if op in ("argmax", "argmin") and isinstance(axis, tuple):
        return
    an, bn = _rand((5, 6, 7), seed=19), _rand((6, 1), seed=20)
    out = {}
    for mode in (True, False):
        with gt.fusion(mode):
            a, b = gt.asarray(an), gt.asarray(bn)
            c = Counter(backend, monkeypatch if mode else None)
            x = gt.abs(a[::-1] * b + 0.25) - 1  # a reversed view and a broadcast input
            fn = getattr(gt, op)
            if not mode:
                c = Counter(backend)  # (synchronises: x's kernels are not counted)
            r = fn(x, axis=axis)
            if mode:
                # the prologue did not materialise x (except argmax/argmin over all axes, which
                # flatten x with reshape: a view, so x is materialised first)
                assert _fusion.is_lazy(x) != (op.startswith("arg") and axis is None)
                if _fusion.is_lazy(x):
                    assert all(n < x.size * 4 for n in c.allocs)  # no x-sized temporary
                fused_dispatches = c.dispatches
            else:
                plain_dispatches = c.dispatches
            out[mode] = gt.asnumpy(r)
    if not (op.startswith("arg") and axis is None):
        assert fused_dispatches == plain_dispatches  # the reduction's own kernels only
    ref_x = np.abs(an[::-1].astype(np.float64) * bn + 0.25) - 1
    if op in ("argmax", "argmin", "all", "any"):
        np.testing.assert_array_equal(out[True], out[False])
        ref = getattr(np, op)(ref_x.astype(np.float32), axis=axis)
        np.testing.assert_array_equal(out[True], ref)
    else:
        np.testing.assert_allclose(out[True], out[False], **tol("float32", "accumulated_fine"))
        ref = getattr(np, op)(ref_x, axis=axis)
        assert_close(out[True], ref, "float32", "reduction")


def test_reduction_prologue_wraps_and_rounds_like_storage(backend):
    i8 = np.arange(-60, 60, dtype=np.int8)
    f16 = np.linspace(-3, 3, 120).astype(np.float16)
    out = {}
    for mode in (True, False):
        with gt.fusion(mode):
            a, h = gt.asarray(i8), gt.asarray(f16)
            out[mode] = (int(gt.sum(a * 3)), float(gt.sum(h * 1.1 + 0.3)), float(gt.max(gt.abs(h * 7.7))))
    assert out[True] == out[False]
    assert out[True][0] == int((i8 * np.int8(3)).astype(np.int64).sum())


def test_reduction_of_sum_of_products_and_abs_max(backend):
    an, bn = _rand((300,), seed=21), _rand((300,), seed=22)
    a, b = gt.asarray(an), gt.asarray(bn)
    c = Counter(backend)
    s = gt.sum(a * b)
    m = gt.max(gt.abs(a))
    assert float(s) == pytest.approx(float(np.dot(an.astype(np.float64), bn)), rel=tol("float32", "accumulated")["rtol"])
    assert float(m) == float(np.abs(an).max())
    plain = Counter(backend)
    gt.sum(a)
    gt.max(a)
    gt.synchronize()
    assert c.dispatches - plain.dispatches == plain.dispatches  # no extra kernel for the prologues


def test_reading_a_leaf_in_a_reduction_keeps_readers_lazy(backend):
    a = gt.asarray(_rand((20,), seed=23))
    y = a * 2
    gt.sum(a)  # a read of y's leaf: no write hazard
    assert _fusion.is_lazy(y)


def test_large_operand_fallbacks(backend, monkeypatch):
    """Leaves larger than one binding window: the elementwise kernel splits, the reduction
    prologue falls back to materialising (same results)."""
    an, bn = _rand((64, 50), seed=24), _rand((50,), seed=25)
    a, b = gt.asarray(an), gt.asarray(bn)
    ref = np.exp(an.astype(np.float64) * 0.5) * bn - an
    monkeypatch.setattr(backend, "max_window_bytes", lambda: 2048)
    y = gt.exp(a * 0.5) * b - a
    s = gt.sum(y, axis=1)
    assert not _fusion.is_lazy(y)  # materialised for the reduction
    assert_close(gt.asnumpy(y), ref, "float32", "transcendental")
    assert_close(gt.asnumpy(s), ref.sum(axis=1), "float32", "reduction")


# ---------------------------------------------------------------------------------------------
# bounds, caching, switch
# ---------------------------------------------------------------------------------------------
def test_dag_bounds_cut_long_chains_and_many_inputs(backend):
    x = gt.asarray(np.ones(16, np.float32))
    c = Counter(backend)
    y = x
    for _ in range(200):
        y = y * 1.0 + 0.5
    np.testing.assert_allclose(gt.asnumpy(y), np.full(16, 101.0), **tol("float32", "elementwise"))
    assert 400 // _fusion.MAX_NODES <= c.dispatches <= 400 // _fusion.MAX_NODES + 2
    arrays = [gt.asarray(np.full(8, k, np.float32)) for k in range(3 * _fusion.max_inputs())]
    c = Counter(backend)
    total = arrays[0]
    for arr in arrays[1:]:
        total = total + arr
    n = len(arrays)
    np.testing.assert_array_equal(gt.asnumpy(total), np.full(8, n * (n - 1) / 2))
    assert c.dispatches >= 3


def test_kernels_are_cached_by_structure(backend):
    shapes = [(7,), (7,), (3, 5), (3, 5), (2, 2, 9)]
    first = None
    for k, shape in enumerate(shapes):
        a = gt.asarray(_rand(shape, seed=k))
        b = gt.asarray(_rand(shape, seed=k + 100))
        c = Counter(backend)
        r = gt.exp(a) * b + (k + 0.5)  # other arrays, other scalar value, same structure
        s = gt.sum(a * b - k)
        got = gt.asnumpy(r), float(s)
        if first is None:
            first = c.compiled
        elif shape == shapes[k - 1]:
            assert c.compiled == 0, f"iteration {k} recompiled"
        assert_close(got[0], np.exp(gt.asnumpy(a).astype(np.float64)) * gt.asnumpy(b) + (k + 0.5),
                     "float32", "transcendental")
    # a loop repeating a chain compiles once
    x = gt.asarray(np.ones(10, np.float32))
    c = Counter(backend)
    for i in range(6):
        x = gt.sqrt(x * x + float(i))
        x.get()
    assert c.compiled <= 1 and c.dispatches == 6


def test_switch_and_environment(backend):
    assert gt.fusion_enabled() is True
    with gt.fusion(False):
        assert gt.fusion_enabled() is False
        a = gt.asarray(np.ones(3, np.float32))
        assert not _fusion.is_lazy(a * 2)
        with gt.fusion(True):
            assert _fusion.is_lazy(a * 2)
    assert gt.set_fusion(False) is True
    assert gt.set_fusion(True) is False
    with pytest.raises(TypeError):
        gt.set_fusion(1)
    code = "import gputensor as gt; print(gt.fusion_enabled())"
    for value, expected in (("0", "False"), ("1", "True"), ("off", "False")):
        env = dict(os.environ, GPUTENSOR_FUSION=value)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == expected


def test_lazy_arrays_created_before_switching_off_still_work(backend):
    a = gt.asarray(np.arange(4, dtype=np.float32))
    y = a * 2
    with gt.fusion(False):
        z = y + 1  # eager: materialises y first
        assert not _fusion.is_lazy(z) and not _fusion.is_lazy(y)
    np.testing.assert_array_equal(gt.asnumpy(z), np.arange(4) * 2 + 1)


def test_generated_source_composes_the_op_table(backend):
    from gputensor._backend.elementwise import fused_program

    lets, expr, expr_type = fused_program(
        ("float16", "float32"),
        (("exp(x0)", ("f32",), "f32", "float16", (0,)),
         ("(x0 * x1)", ("f32", "f32"), "f32", "float32", (2, 1))),
    )
    assert "let t0 = unpack2x16float(ew_f16_bits_f32(" in lets  # the float16 intermediate is rounded
    assert expr == "t1" and expr_type == "f32"
    with pytest.raises(ValueError):
        fused_program(("float32",), (("(x0 + x1)", ("f32",), "f32", "float32", (0,)),))
    with pytest.raises(ValueError):
        fused_program(("float32",), (("x0", ("f32",), "f32", "float32", (5,)),))


def test_copy_module_materialises(backend):
    import copy

    a = gt.asarray(np.arange(3, dtype=np.float32))
    y = a + 1
    z = copy.copy(y)  # an independent array (a device copy; it may itself be lazy)
    w = copy.deepcopy(y)
    y[0] = 10
    np.testing.assert_array_equal(gt.asnumpy(z), [1, 2, 3])
    np.testing.assert_array_equal(gt.asnumpy(w), [1, 2, 3])
    np.testing.assert_array_equal(gt.asnumpy(y), [10, 2, 3])


@pytest.mark.parametrize("op,axis", [("sum", None), ("sum", 0), ("var", None), ("argmax", 0), ("max", None)])
def test_reduction_prologue_with_partial_passes(backend, op, axis):
    """Enough elements that the reduced range is split over workgroups (a partial-state pass
    plus a combine pass): the prologue runs in the first pass only."""
    an, bn = _rand((600, 300), seed=26), _rand((300,), seed=27)
    out = {}
    for mode in (True, False):
        with gt.fusion(mode):
            a, b = gt.asarray(an), gt.asarray(bn)
            c = Counter(backend)
            r = getattr(gt, op)(a * b - 0.5, axis=axis)
            out[mode] = gt.asnumpy(r)
            if mode:
                assert c.dispatches >= 2  # partials, then the combine pass
    ref = getattr(np, op)(an.astype(np.float64) * bn - 0.5, axis=axis)
    if op == "argmax":
        np.testing.assert_array_equal(out[True], out[False])
        np.testing.assert_array_equal(out[True], ref)
    else:
        np.testing.assert_allclose(out[True], out[False], **tol("float32", "elementwise_abs"))
        scale = np.abs(an * bn).sum() if op == "sum" else 1.0
        np.testing.assert_allclose(out[True], ref, rtol=tol("float32", "accumulated_fine")["rtol"], atol=tol("float32", "accumulated_fine")["atol"] * scale)


def test_no_reference_cycles_keep_device_memory(backend):
    """Materialising and fusing create no reference cycles: leaf memory is released as soon as
    the last array using it goes (no wait for the cyclic garbage collector)."""
    import gc

    gc.collect()
    gc.disable()
    try:
        pool = gt.get_default_memory_pool()
        before = pool.used_bytes()
        a = gt.asarray(_rand((1000,), seed=30))
        b = gt.asarray(_rand((1000,), seed=31))
        y = gt.exp(a) * b + a  # materialised below
        s = gt.sum(a * b)  # a prologue
        a[...] = 0  # a write hazard flush
        z = y * 2
        z.get(), float(s)
        del a, b, y, z, s
        assert pool.used_bytes() == before
    finally:
        gc.enable()


# ---------------------------------------------------------------------------------------------
# structure keys, the lazy-array registry, the binary fast paths (host time of a small op)
# ---------------------------------------------------------------------------------------------
def _check_structure_keys(values, seen):
    """For every lazy value with a structure key: its scalars and its cached code are what
    ``program`` (the linearisation) gives, and one key never stands for two programs."""
    for v in values:
        if not _fusion.is_lazy(v):
            continue
        node = _fusion.node_of(v)
        leaves, scalars, lets, expr, expr_type = _fusion.program(node)
        if node.skey is None:
            continue
        assert list(node.scalars) == [value for value, _ in scalars]
        assert node.leaves == leaves
        inputs = tuple([leaf.dtype.name for leaf in leaves] + [dtype.name for _, dtype in scalars])
        assert _fusion.fused_code(node) == (lets, expr, expr_type, inputs)
        key = (node.skey, tuple(leaf.dtype.name for leaf in leaves))
        assert seen.setdefault(key, (lets, expr, inputs)) == (lets, expr, inputs)


@FEW
@given(steps=st.lists(st.tuples(st.sampled_from(["sl", "ls", "vv", "vs", "sv", "u", "w", "dup", "view"]),
                                st.integers(0, 50), st.integers(0, 50),
                                st.sampled_from([0.5, -0.0, 2, 3.25])),
                      min_size=1, max_size=14))
def test_structure_keys_describe_the_program(backend, steps):
    base = gt.asarray(_rand((4, 6), seed=40))
    other = gt.asarray(_rand((6,), seed=41))
    values = [base, other, base[::-1], gt.asarray(_rand((4, 6), "float16", seed=42))]
    refs = []
    with gt.fusion(False):
        plain = [gt.asarray(gt.asnumpy(v)) for v in values[:2]] + [values[0][::-1], gt.asarray(gt.asnumpy(values[3]))]
    for kind, i, j, scalar in steps:
        for pool, mode in ((values, True), (plain, False)):
            with gt.fusion(mode):
                x, y = pool[i % len(pool)], pool[j % len(pool)]
                if kind == "sl":
                    r = scalar * x + x
                elif kind == "ls":
                    r = x - scalar
                elif kind == "vv":
                    r = x * y
                elif kind == "vs":
                    r = gt.maximum(x, scalar)
                elif kind == "sv":
                    r = scalar - x
                elif kind == "u":
                    r = -gt.abs(x)
                elif kind == "w":
                    r = gt.where(x > 0, x, y * scalar)
                elif kind == "dup":
                    r = x * x
                else:
                    r = pool[0][::-1] + x  # another view object of the same elements
                pool.append(r)
    seen: dict = {}
    _check_structure_keys(values, seen)
    for got, want in zip(values[4:], plain[4:]):
        np.testing.assert_allclose(gt.asnumpy(got).astype(np.float64), gt.asnumpy(want).astype(np.float64),
                                   **tol("float16", "float16_chain"), equal_nan=True)


def test_structure_keys_of_chains_and_shared_nodes(backend):
    a = gt.asarray(_rand((8,), seed=43))
    b = gt.asarray(_rand((8,), seed=44))
    t = gt.exp(a) * 2
    chains = [t + b, b + t, 0.5 * t - a, (t * t) / 3, t * b + a * b]  # the last: two DAG operands
    assert all(_fusion.node_of(c).skey is not None for c in chains[:4])
    assert _fusion.node_of(chains[4]).skey is None  # program() describes how they share nodes
    assert len({_fusion.node_of(c).skey for c in chains[:4]}) == 4
    seen: dict = {}
    _check_structure_keys(chains, seen)
    # the same structure built again has the same key; other scalar values do not matter
    again = gt.exp(b) * 7 + a
    assert _fusion.node_of(again).skey == _fusion.node_of(chains[0]).skey
    an, bn = gt.asnumpy(a).astype(np.float64), gt.asnumpy(b).astype(np.float64)
    t_ref = np.exp(an) * 2
    for got, ref in zip(chains, [t_ref + bn, bn + t_ref, 0.5 * t_ref - an, t_ref * t_ref / 3, t_ref * bn + an * bn]):
        assert_close(gt.asnumpy(got), ref, "float32", "transcendental")


def test_float32_scalar_words_in_a_fused_kernel(backend):
    """Many float scalars of one kernel are packed together: signed zeros, NaN and a float32
    overflow (inf) give the unfused values (exactly for y and z; w to rounding, since a fused
    kernel may contract x * 3 - 1 into one fma, as the H200's driver does)."""
    xn = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    out = {}
    for mode in (True, False):
        with gt.fusion(mode):
            x = gt.asarray(xn)
            y = ((x * 0.5 + 1.25) * -0.0 + x) * 1e39
            z = gt.where(x > 0, y, x * float("nan")) + 0.0
            w = (x * 3.0 - 1.0) / 7.0 + 0.1
            out[mode] = [gt.asnumpy(v) for v in (y, z, w)]
    for got, want in zip(out[True][:2], out[False][:2]):
        np.testing.assert_array_equal(got, want)
        assert np.array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_allclose(out[True][2], out[False][2], **tol("float32", "fused_contracted"))


def test_writes_during_a_flush_keep_new_readers(backend, monkeypatch):
    """A lazy array registered while a flush materialises the readers it found (another thread
    does so without the lock) is found by the flush's next scan: its value stays."""
    an = _rand((16,), seed=45)
    a = gt.asarray(an)
    y = a * 2
    made = []
    real = _fusion.materialize

    def materialize_and_register(x):
        real(x)
        if not made:
            made.append(a * 3)  # a new reader of a's storage, after the flush's first scan

    monkeypatch.setattr(_fusion, "materialize", materialize_and_register)
    a[...] = 0  # the write: flushes the readers of a's storage first
    monkeypatch.undo()
    np.testing.assert_array_equal(gt.asnumpy(y), an * 2)
    np.testing.assert_array_equal(gt.asnumpy(made[0]), an * 3)


def test_registry_of_lazy_arrays_stays_small(backend):
    """The weak references of dead lazy arrays are swept: the registry stays bounded; live lazy
    arrays older than the window are materialised by the sweeps, and the newer ones are still
    found by a write hazard after them."""
    with config.override(fusion_window=32):
        _registry_stays_small()


def _registry_stays_small() -> None:
    an = _rand((8,), seed=46)
    a = gt.asarray(an)
    old = [a * k for k in range(5)]
    for k in range(3 * _fusion._SWEEP_MIN):
        _ = a + k  # dies at once
    window = config.value("fusion_window")
    assert len(_fusion._LIVE) <= 2 * max(_fusion._SWEEP_MIN, window)
    assert not any(_fusion.is_lazy(y) for y in old)  # materialised while the window moved on
    kept = [a * (k + 5) for k in range(5)]
    for k in range(window // 2):
        _ = a + k
    assert all(_fusion.is_lazy(y) for y in kept)
    a[...] = 100  # readers of a's storage found after the sweeps
    for k, y in enumerate(old + kept):
        assert not _fusion.is_lazy(y)
        np.testing.assert_array_equal(gt.asnumpy(y), an * np.float32(k))


def test_binary_operator_fast_paths(backend):
    """Every operand combination of the binary operators, fused and eager, twice (the second
    call takes the cached resolution / launch)."""
    xn, yn = _rand((5, 3), seed=47), _rand((3,), seed=48)
    for mode in (True, False):
        with gt.fusion(mode):
            x, y = gt.asarray(xn), gt.asarray(yn)
            for _ in range(2):
                lazy = x * 1.5
                cases = [
                    (x - 2.0, xn - np.float32(2.0)), (2.0 - x, np.float32(2.0) - xn), (x - y, xn - yn),
                    (y - x, yn - xn), (lazy + y, xn * np.float32(1.5) + yn), (y + lazy, yn + xn * np.float32(1.5)),
                    (2 ** x[0], np.float32(2) ** xn[0]), (lazy - lazy, xn * 0), (lazy / x, xn * np.float32(1.5) / xn),
                    (x[::-1] * lazy, xn[::-1] * (xn * np.float32(1.5))),
                ]
                for got, want in cases:
                    np.testing.assert_allclose(gt.asnumpy(got), want, **tol("float32", "elementwise_abs"))
            with pytest.raises(TypeError):
                x + "a"
            assert x.__add__("a") is NotImplemented
            with pytest.raises(ValueError):
                x + gt.ones((4,))
