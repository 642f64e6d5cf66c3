"""Several devices in one process: one ``gt.Device`` per WebGPU adapter.

On the CPU machines there are two real devices -- lavapipe through Vulkan (``webgpu:0``, the
default) and llvmpipe through OpenGL, which lacks ``shader-f64`` and ``shader-int64`` -- so
these tests move arrays between two devices with different dtypes. Values are checked against
NumPy; mixing devices in one operation raises ``ValueError`` for every op family.
"""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest

import gputensor as gt
from tests._compare import assert_same
from tests._compare import tol


def _two_devices() -> tuple[gt.Device, gt.Device]:
    devices = gt.devices()
    if len(devices) < 2:
        pytest.skip(f"needs two WebGPU adapters, found {[d.adapter for d in devices]}")
    return devices[0], devices[1]


@pytest.fixture(scope="module")
def devs() -> tuple[gt.Device, gt.Device]:
    return _two_devices()


@pytest.fixture(scope="module")
def d1(devs) -> gt.Device:
    return devs[1]


def _rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_devices_are_listed_one_per_adapter(devs) -> None:
    d0, d1 = devs
    info = gt.__array_namespace_info__()
    assert info.devices() == gt.devices() == list(devs)
    assert str(d0) == "webgpu:0" and str(d1) == "webgpu:1" and d0 == gt.Device() == info.default_device()
    assert gt.Device("webgpu:1") == d1 and hash(gt.Device("webgpu:1")) == hash(d1)
    assert d0.adapter != d1.adapter
    assert {gt.capabilities(d)["backend"] for d in devs} >= {"Vulkan", "OpenGL"} or d0.adapter != d1.adapter
    assert pickle.loads(pickle.dumps(d1)) == d1
    with pytest.raises(ValueError):
        gt.Device("webgpu:99")
    with pytest.raises(ValueError):
        gt.zeros(2, device="cuda:0")


def test_creation_places_arrays_on_the_named_device(d1) -> None:
    host = _rand((3, 4))
    made = [
        (gt.asarray(host, device=d1), host),
        (gt.asarray([1.0, 2.0], device="webgpu:1"), np.array([1.0, 2.0], np.float32)),
        (gt.zeros((2, 3), device=d1), np.zeros((2, 3), np.float32)),
        (gt.ones(4, device=d1), np.ones(4, np.float32)),
        (gt.full(3, 7.5, device=d1), np.full(3, 7.5, np.float32)),
        (gt.arange(5, device=d1), np.arange(5, dtype=np.int32)),
        (gt.linspace(0, 1, 5, device=d1), np.linspace(0, 1, 5, dtype=np.float32)),
        (gt.eye(3, device=d1), np.eye(3, dtype=np.float32)),
        (gt.empty(3, device=d1)[:0], np.empty(0, np.float32)),
    ]
    for x, expected in made:
        assert x.device == d1, x
        np.testing.assert_array_equal(x.get(), expected)
    x = made[0][0]
    for like in (gt.zeros_like(x), gt.ones_like(x), gt.full_like(x, 2.0), gt.empty_like(x)):
        assert like.device == d1 and like.shape == x.shape
    assert gt.zeros_like(x, device=gt.Device()).device == gt.Device()
    assert gt.asarray(1.5).device == gt.Device()


def test_to_device_both_ways_keeps_values(devs) -> None:
    d0, d1 = devs
    host = _rand((5, 7), seed=3)
    a = gt.asarray(host)
    b = a.to_device(d1)
    assert b.device == d1 and a.device == d0
    np.testing.assert_array_equal(b.get(), host)
    back = b.to_device(d0)
    assert back.device == d0
    np.testing.assert_array_equal(back.get(), host)
    assert b.to_device(d1) is b and b.to_device("webgpu:1") is b
    moved = gt.asarray(a, device=d1)
    assert moved.device == d1 and np.array_equal(moved.get(), host)
    with pytest.raises(ValueError):
        gt.asarray(a, device=d1, copy=False)
    cast = gt.asarray(a, device=d1, dtype=gt.float16)
    assert cast.device == d1 and cast.dtype == gt.float16
    view = a[1:, ::2].to_device(d1)  # a strided view moves its elements
    np.testing.assert_array_equal(view.get(), host[1:, ::2])
    lazy = (a * 2 + 1).to_device(d1)  # a fused result is computed on its device, then moved
    assert_same(lazy, host * 2 + 1, **tol("float32", "elementwise_abs"))
    assert isinstance(b.to_device("cpu"), np.ndarray) and np.array_equal(b.to_device("cpu"), host)
    assert gt.from_dlpack(a, device=d1).device == d1


def test_results_live_on_their_operands_device(d1) -> None:
    an, bn = _rand((8, 8), 1), _rand((8, 8), 2)
    a, b = gt.asarray(an, device=d1), gt.asarray(bn, device=d1)
    idx = gt.asarray(np.array([3, 0, 7], np.int32), device=d1)
    results = {
        "fused chain": (gt.exp(a) * b + 1, np.exp(an) * bn + 1),
        "operator": (a - b, an - bn),
        "scalar": (2.0 * a, 2.0 * an),
        "matmul": (a @ b, an @ bn),
        "sum": (gt.sum(a, axis=0), an.sum(axis=0)),
        "fused reduction": (gt.max(a * b, axis=1), (an * bn).max(axis=1)),
        "mean": (gt.mean(a), an.mean()),
        "argmax": (gt.argmax(a, axis=1), an.argmax(axis=1).astype(np.int32)),
        "cumulative_sum": (gt.cumulative_sum(a, axis=1), np.cumsum(an, axis=1)),
        "sort": (gt.sort(a, axis=1), np.sort(an, axis=1)),
        "take": (gt.take(a, idx, axis=0), an[[3, 0, 7]]),
        "index array": (a[idx], an[[3, 0, 7]]),
        "mask": (a[a > 0], an[an > 0]),
        "where": (gt.where(a > b, a, b), np.where(an > bn, an, bn)),
        "concat": (gt.concat([a, b]), np.concatenate([an, bn])),
        "reshape": (gt.reshape(a, (4, 16)), an.reshape(4, 16)),
        "method": (a.sum(axis=1), an.sum(axis=1)),
        "numpy ufunc": (np.add(a, b), an + bn),
        "numpy function": (np.mean(a, axis=0), an.mean(axis=0)),
        "linalg": (gt.linalg.matrix_norm(a), np.linalg.norm(an)),
        "nn": (gt.nn.conv2d(a[None, None], b[None, None, :3, :3]),
               np.array([[[[np.sum(an[i:i + 3, j:j + 3] * bn[:3, :3]) for j in range(6)] for i in range(6)]]])),
    }
    for name, (got, expected) in results.items():
        assert got.device == d1, name
        assert_same(got, np.asarray(expected), **tol("float32", "chained"), type_check=False, err_msg=name)
    c = gt.asarray(an, device=d1)
    c += b
    c[0] = 5.0
    c[idx] = 1.0
    expected = an + bn
    expected[0] = 5.0
    expected[[3, 0, 7]] = 1.0
    assert c.device == d1
    assert_same(c, expected, **tol("float32", "elementwise_abs"))
    assert float(gt.sum(a)) == pytest.approx(float(an.sum()), rel=tol("float32", "sum_scalar")["rtol"])
    assert "webgpu:1" in repr(a)


def test_mixing_devices_raises_value_error(devs) -> None:
    d0, d1 = devs
    a0 = gt.asarray(_rand((4, 4), 1))
    b1 = gt.asarray(_rand((4, 4), 2), device=d1)
    i1 = gt.asarray(np.array([1, 0], np.int32), device=d1)
    lazy0 = gt.exp(a0) * 2
    calls = {
        "operator": lambda: a0 + b1,
        "reflected": lambda: 1.0 * b1 + a0,
        "function": lambda: gt.add(a0, b1),
        "fused chain": lambda: lazy0 - b1,
        "comparison": lambda: a0 < b1,
        "matmul": lambda: a0 @ b1,
        "tensordot": lambda: gt.tensordot(a0, b1),
        "where": lambda: gt.where(a0 > 0, a0, b1),
        "concat": lambda: gt.concat([a0, b1]),
        "stack": lambda: gt.stack([a0, b1]),
        "take": lambda: gt.take(a0, i1, axis=0),
        "index array": lambda: a0[i1],
        "setitem": lambda: a0.__setitem__(i1, 1.0),
        "setitem value": lambda: a0.__setitem__(slice(None), b1),
        "in-place": lambda: a0.__iadd__(b1),
        "searchsorted": lambda: gt.searchsorted(gt.sort(a0[0]), b1[0]),
        "linalg": lambda: gt.linalg.solve(a0, b1),
        "nn": lambda: gt.nn.scaled_dot_product_attention(a0[None], b1[None], b1[None]),
        "numpy": lambda: np.add(a0, b1),
        "method": lambda: a0.dot(b1),
        "mask": lambda: a0[b1 > 0],
        "user kernel": lambda: gt.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x + y;",
                                                    "devices_add")(a0, b1),
    }
    for name, call in calls.items():
        with pytest.raises(ValueError, match="different devices"):
            call()
        assert name
    # a function bound before the second device was used is not routed: the backend refuses
    # the other device's array (eager), or the fused kernel does when it materialises (lazy)
    raw = gt._elementwise_functions.add
    with gt.fusion(False):
        with pytest.raises(ValueError, match="different devices"):
            gt._dispatch.elementwise_op("add", a0, b1)
    with pytest.raises(ValueError, match="different devices"):
        raw(a0, b1).get()


def test_dtypes_and_capabilities_per_device(devs) -> None:
    d0, d1 = devs
    info = gt.__array_namespace_info__()
    for dev in devs:
        caps = info.capabilities(device=dev)
        assert caps["boolean indexing"] and caps["data-dependent shapes"] and caps["device"] == str(dev)
        dtypes = info.dtypes(device=dev)
        assert ("float64" in dtypes) == caps["float64"] == ("shader-f64" in dev.features)
        assert "int64" in dtypes and "uint64" in dtypes  # (emulated where caps["int64"] is False)
        assert caps["int64"] == ("shader-int64" in dev.features)
        defaults = info.default_dtypes(device=dev)
        assert defaults["integral"] == (gt.int64 if caps["int64"] else gt.int32)
        assert defaults["complex floating"] == (gt.complex128 if caps["float64"] else gt.complex64)
        assert info.dtypes(device=dev, kind="real floating").keys() <= {"float32", "float64"}
    assert info.capabilities().keys() >= {"boolean indexing", "data-dependent shapes", "max dimensions"}
    with pytest.raises(ValueError):
        info.dtypes(device="webgpu:99")
    narrow = next((d for d in devs if not gt.capabilities(d)["float64"]), None)
    if narrow is None:
        pytest.skip("both adapters have shader-f64")
    wide = next(d for d in devs if d != narrow)
    with pytest.raises(TypeError, match="shader-f64"):
        gt.zeros(2, dtype=gt.float64, device=narrow)
    if gt.capabilities(wide)["float64"]:
        x64 = gt.asarray(np.ones(3), device=wide)
        with pytest.raises(TypeError, match="shader-f64"):
            x64.to_device(narrow)
        np.testing.assert_array_equal(x64.astype(gt.float32).to_device(narrow).get(), np.ones(3, np.float32))
    assert gt.arange(3, device=narrow).dtype == info.default_dtypes(device=narrow)["integral"]
    assert gt.asarray(np.arange(3), device=narrow).dtype == gt.int64  # (emulated without shader-int64)
    with narrow:
        assert gt.argmax(gt.asarray([1.0, 3.0, 2.0])).dtype == info.default_dtypes(device=narrow)["indexing"]


def test_current_device_blocks_threads_and_pickles(devs) -> None:
    d0, d1 = devs
    with d1:
        assert gt.default_device() == d1 and gt.zeros(2).device == d1
        with d0:
            assert gt.asarray([1.0]).device == d0
        assert gt.asarray([1.0]).device == d1
        seen = []
        worker = threading.Thread(target=lambda: seen.append(gt.zeros(1).device))
        worker.start()
        worker.join()
        assert seen == [d0]  # a block is this thread's only
    assert gt.default_device() == d0
    x = gt.asarray(_rand(6, 4), device=d1)
    data = pickle.dumps(x)
    loaded = pickle.loads(data)
    assert loaded.device == d0 and np.array_equal(loaded.get(), x.get())
    with d1:
        assert pickle.loads(data).device == d1
    previous = gt.set_default_device(d1)
    try:
        assert previous == d0 and gt.default_device() == d1 and gt.ones(2).device == d1
        assert pickle.loads(data).device == d1
    finally:
        gt.set_default_device(previous)
    assert gt.default_device() == d0


def test_reset_of_one_device_leaves_the_other(devs) -> None:
    d0, d1 = devs
    a0 = gt.asarray(np.arange(4, dtype=np.float32))
    b1 = gt.asarray(np.arange(4, dtype=np.float32), device=d1)
    lazy1 = b1 * 3
    gt.reset(d1)
    with pytest.raises(gt.DeviceLostError):
        b1.get()
    with pytest.raises(gt.DeviceLostError):
        (b1 + 1).get()
    del lazy1  # dropped unevaluated
    np.testing.assert_array_equal((a0 + 1).get(), [1, 2, 3, 4])
    c1 = gt.asarray([1.0, 2.0], device=d1)
    assert c1.device == d1
    np.testing.assert_array_equal((c1 * 2).get(), [2, 4])
    gt.synchronize()


def _worker_device() -> str:
    import gputensor as gt  # (in the worker process)

    return f"{gt.default_device()} {gt.default_device().adapter}"


def test_dask_worker_per_device(devs) -> None:
    """A LocalCluster of two worker processes, one per device (``DevicePlugin``): each worker
    computes on its own device; an elementwise chain, a reduction and a blocked matmul over
    chunks on both devices agree with NumPy."""
    distributed = pytest.importorskip("distributed")
    da = pytest.importorskip("dask.array")
    from gputensor.dask_plugin import DevicePlugin, device_for

    assert [device_for(k, ["webgpu:0", "webgpu:1"]) for k in (0, 1, 2, "3")] == ["webgpu:0", "webgpu:1"] * 2
    assert device_for("webgpu:1", ["webgpu:0", "webgpu:1"]) == "webgpu:1"
    host = _rand((64, 48), seed=5)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        client.register_plugin(DevicePlugin())
        placed = client.run(_worker_device)
        assert sorted(p.split()[0] for p in placed.values()) == ["webgpu:0", "webgpu:1"], placed
        for address, where in placed.items():  # a task on each worker runs on its device
            got = client.submit(lambda a: (str(a.device), gt.cumulative_sum(a, axis=1)), gt.asarray(host),
                                workers=[address], pure=False).result()
            assert got[0] == where.split()[0]
            np.testing.assert_allclose(got[1].get(), np.cumsum(host, axis=1), **tol("float32", "accumulated_abs"))
        x = da.from_array(host, chunks=(16, 48)).map_blocks(gt.asarray, dtype=np.float32,
                                                           meta=gt.empty((0, 0)))
        chain = da.exp(x * 0.5) - 1.0
        total = chain.sum(axis=0)
        gram = x @ x.T
        got_chain, got_total, got_gram = client.compute([chain, total, gram], sync=True)
        devices_used = set(client.run(lambda dask_worker: getattr(dask_worker, "gputensor_device", None)).values())
    assert devices_used == {"webgpu:0", "webgpu:1"}
    assert_same(got_chain, np.exp(host * 0.5) - 1.0, **tol("float32", "accumulated_abs"), type_check=False)
    assert_same(got_total, (np.exp(host * 0.5) - 1.0).sum(axis=0), **tol("float32", "chained_abs"), type_check=False)
    assert_same(got_gram, host @ host.T, **tol("float32", "gram"), type_check=False)


def test_multi_device_benchmark_pieces(devs) -> None:
    """``benchmarks/multi_device.py`` (its dask part runs by hand: ``--quick``): the device
    choice, the to_device bandwidth rows and the formula its NumPy checks recompute."""
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)
    from benchmarks import multi_device as md

    assert md.choose_devices(gt, None) == list(devs)
    assert md.choose_devices(gt, "webgpu:1,webgpu:0") == [devs[1], devs[0]]
    rows = md.bandwidth(gt, devs[0], devs[1], [0.25], reps=1)
    assert rows[0]["MiB"] == 0.25 and all(v > 0 for k, v in rows[0].items() if k.endswith("GB/s"))
    for dev in devs:
        with dev:
            block = md.formula_block("gputensor", 1000, 40, 24)
            assert block.device == dev
            assert_same(block, md.formula_block("numpy", 1000, 40, 24), **tol("float32", "chained_abs"), type_check=False)
            assert_same(md.chain(block) @ md.weights("gputensor", 24, 6),
                        md.chain(md.formula_block("numpy", 1000, 40, 24)) @ md.weights("numpy", 24, 6),
                        **tol("float32", "chained_abs"), type_check=False)
