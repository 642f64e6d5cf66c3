"""int64 and uint64 on a device without ``shader-int64``: two 32-bit words, exact values.

The tests run on the first device that lacks ``shader-int64`` (llvmpipe through OpenGL on the
CPU machines: the default device under ``GPUTENSOR_ADAPTER=gl``, else ``webgpu:1`` next to
lavapipe), with every array made there (``device=``). Values are drawn beyond 2^31 and include
the edges (the minimum, the maximum, -1, 0) and are compared with NumPy's exactly; results of
64-bit integer dtype must keep that dtype, index results are the device's indexing dtype.
(The int64/uint64 parameter is named ``wide``.) The suite's other tests parametrized over
int64/uint64 run on such an adapter too (conftest: those dtypes imply no feature).
"""

from __future__ import annotations

import numpy as np
import pytest

import gputensor as gt
from tests._compare import assert_same, tol

I64 = np.iinfo(np.int64)
U64 = np.iinfo(np.uint64)


@pytest.fixture(scope="module")
def dev() -> gt.Device:
    for d in gt.devices():
        if "shader-int64" not in d.features:
            return d
    pytest.skip("every adapter has shader-int64 (no device emulates int64)")


def _values(dtype: str, n: int = 96, seed: int = 0) -> np.ndarray:
    """n values of dtype: random over the whole range, plus the edge values."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    edges = [info.min, info.max, 0, 1, 2**31, 2**32 - 1, 2**32, 2**33 + 5, -1, -(2**31) - 1, -(2**32),
             info.min + 1]
    edges = [e for e in edges if info.min <= e <= info.max]
    out = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    out[: len(edges)] = np.array(edges, dtype=object).astype(dtype)
    return out


def _same(got: gt.GpuArray, expected: np.ndarray, dtype: object | None = None) -> None:
    """Values as NumPy's, exactly; the dtype ``dtype`` (default: NumPy's) where given."""
    want = np.dtype(expected.dtype if dtype is None else dtype)
    assert got.dtype == want, f"dtype {got.dtype}, expected {want}"
    assert_same(got, expected, type_check=False)


def _on(dev: gt.Device, host: np.ndarray) -> gt.GpuArray:
    x = gt.asarray(host, dtype=getattr(gt, host.dtype.name), device=dev)
    assert x.device == dev
    return x


@pytest.mark.parametrize("wide", ["int64", "uint64"])
@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "floor_divide", "remainder", "maximum",
                                "minimum", "bitwise_and", "bitwise_or", "bitwise_xor", "equal", "not_equal",
                                "less", "less_equal", "greater", "greater_equal"])
def test_binary_ops_match_numpy(dev, wide, op):
    a, b = _values(wide, seed=1), _values(wide, seed=2)
    b[::7] = 0  # integer division and remainder by zero give 0
    b[1::11] = a[1::11]  # ties for the comparisons
    with np.errstate(all="ignore"):
        expected = getattr(np, op)(a, b)
    _same(getattr(gt, op)(_on(dev, a), _on(dev, b)), expected)


@pytest.mark.parametrize("wide", ["int64", "uint64"])
def test_division_edges(dev, wide):
    info = np.iinfo(wide)
    a = np.array([info.min, info.max, 7, 2**40 + 1, info.max - 1, 5, 0] * 2, dtype=wide)
    if wide == "int64":
        b = np.array([-1, -1, -2, -(2**33), 2**62, 0, 3, 1, 2, 3, 2**31, 3, -7, 9], dtype=wide)
        a[7:] = [-7, -(2**40) - 1, info.min + 3, -5, 2**62, -(2**63), 1]
    else:
        b = np.array([1, 2**63 + 5, 2, 2**33, 2**64 - 1, 0, 3, 2**63, 2**63 - 1, 3, 2**31, 3, 7, 9], dtype=wide)
    with np.errstate(all="ignore"):
        for op in ("floor_divide", "remainder"):
            _same(getattr(gt, op)(_on(dev, a), _on(dev, b)), getattr(np, op)(a, b))


@pytest.mark.parametrize("wide", ["int64", "uint64"])
def test_shifts_and_powers(dev, wide):
    a = _values(wide, n=70, seed=3)
    s = np.arange(70).astype(wide)  # shifts past the width give NumPy's 0 / -1
    x, sh = _on(dev, a), _on(dev, s)
    with np.errstate(all="ignore"):
        _same(gt.bitwise_left_shift(x, sh), np.left_shift(a, s))
        _same(gt.bitwise_right_shift(x, sh), np.right_shift(a, s))
        e = (np.arange(70) % 9).astype(wide)
        _same(gt.pow(x, _on(dev, e)), np.power(a, e))
    if wide == "int64":  # negative exponents: 1/x truncated
        base = np.array([1, -1, -1, 2, -3, 0], dtype=np.int64)
        exp = np.array([-5, -3, -2, -1, -2, 3], dtype=np.int64)
        _same(gt.pow(_on(dev, base), _on(dev, exp)), np.array([1, -1, 1, 0, 0, 0]))


@pytest.mark.parametrize("wide", ["int64", "uint64"])
@pytest.mark.parametrize("op", ["negative", "abs", "sign", "bitwise_invert", "square", "positive"])
def test_unary_ops_match_numpy(dev, wide, op):
    a = _values(wide, seed=4)
    with np.errstate(all="ignore"):
        expected = getattr(np, {"bitwise_invert": "invert"}.get(op, op))(a)
    _same(getattr(gt, op)(_on(dev, a)), expected)


def test_scalars_clip_where(dev):
    a = _values("int64", seed=5)
    x = _on(dev, a)
    _same(x + 2**40, a + 2**40)
    _same(x * -3, a * -3)
    _same(x > 2**35, a > 2**35)
    _same(gt.clip(x, -(2**40), 2**41), np.clip(a, -(2**40), 2**41))
    _same(gt.where(x > 0, x, _on(dev, -a)), np.where(a > 0, a, -a))
    x[3] = 2**50 + 7
    a[3] = 2**50 + 7
    _same(x, a)
    assert int(x[3]) == 2**50 + 7


@pytest.mark.parametrize("other", ["bool", "int8", "int16", "int32", "uint8", "uint16", "uint32",
                                   "float16", "float32", "int64", "uint64"])
@pytest.mark.parametrize("wide", ["int64", "uint64"])
def test_conversions_both_ways(dev, wide, other):
    a = _values(wide, seed=6)
    with np.errstate(all="ignore"):
        _same(_on(dev, a).astype(getattr(gt, other)), a.astype(other))
    if other.startswith("float"):  # floats in range: truncated toward zero
        big = 2.0**62 if wide == "int64" else 2.0**63
        with np.errstate(over="ignore"):
            f = np.array([0.5, -0.5, 2.0**31 + 0.5, -(2.0**33) - 0.75, big, 1e15, -1e15, 3.99], dtype=other)
        f = np.abs(f) if wide == "uint64" else f
        f = f[np.isfinite(f)]
        _same(_on(dev, f).astype(getattr(gt, wide)), f.astype(wide))
    elif other not in ("int64", "uint64"):
        src = _values(other, seed=7) if other != "bool" else np.array([True, False, True])
        with np.errstate(all="ignore"):
            _same(_on(dev, src).astype(getattr(gt, wide)), src.astype(wide))


@pytest.mark.parametrize("wide", ["int64", "uint64"])
def test_reductions(dev, wide):
    a = _values(wide, n=37 * 41, seed=8).reshape(37, 41)
    x = _on(dev, a)
    with np.errstate(all="ignore"):
        for axis in (None, 0, 1):
            _same(gt.sum(x, axis=axis), np.sum(a, axis=axis))
            _same(gt.max(x, axis=axis), np.max(a, axis=axis))
            _same(gt.min(x, axis=axis), np.min(a, axis=axis))
            _same(gt.argmax(x, axis=axis), np.argmax(a, axis=axis), gt.argmax(x, axis=axis).dtype)
            _same(gt.argmin(x, axis=axis), np.argmin(a, axis=axis), gt.argmin(x, axis=axis).dtype)
        _same(gt.prod(x[:, :6], axis=1), np.prod(a[:, :6], axis=1))
        _same(gt.sum(x * x, axis=1), np.sum(a * a, axis=1))  # a fused prologue
        _same(gt.cumulative_sum(x, axis=1), np.cumsum(a, axis=1))
        _same(gt.cumulative_sum(x, axis=0), np.cumsum(a, axis=0))
        _same(gt.cumulative_prod(x[:5], axis=1), np.cumprod(a[:5], axis=1))
    small = np.full(5, 2**31 - 1, dtype=np.int32)  # int32 summed in int64: no wrap
    _same(gt.sum(_on(dev, small), dtype=gt.int64), np.sum(small, dtype=np.int64))
    _same(gt.cumulative_sum(_on(dev, small), dtype=gt.int64), np.cumsum(small, dtype=np.int64))


@pytest.mark.parametrize("wide", ["int64", "uint64"])
def test_sorting_searching_sets(dev, wide):
    a = _values(wide, n=500, seed=9)
    a[::5] = a[1::5][: len(a[::5])]  # duplicates (stable order)
    x = _on(dev, a)
    _same(gt.sort(x), np.sort(a))
    _same(gt.sort(x, descending=True), np.sort(a)[::-1])
    order = gt.argsort(x)
    _same(order, np.argsort(a, kind="stable"), order.dtype)
    s = np.sort(a)
    pos = gt.searchsorted(_on(dev, s), x)
    _same(pos, np.searchsorted(s, a), pos.dtype)
    _same(gt.unique_values(x), np.unique(a))
    counts = gt.unique_counts(_on(dev, a % np.array(7, dtype=wide))).counts
    _same(counts, np.unique(a % np.array(7, dtype=wide), return_counts=True)[1], counts.dtype)


def test_indexing_with_int64_index_arrays(dev):
    a = _values("int64", n=200, seed=10)
    x = _on(dev, a)
    idx = np.array([0, 199, 5, -1, 17, -200, 5], dtype=np.int64)
    gidx = _on(dev, idx)
    assert gidx.dtype == gt.int64
    _same(gt.take(x, gidx), np.take(a, idx))
    _same(x[gidx], a[idx])
    f = np.arange(200, dtype=np.float32)
    _same(gt.take(_on(dev, f), gidx), np.take(f, idx))
    _same(x[x > 2**40], a[a > 2**40])
    nz = gt.nonzero(x % 3)[0]
    _same(nz, np.nonzero(a % 3)[0], nz.dtype)
    m = a.reshape(20, 10)
    _same(gt.take_along_axis(_on(dev, m), gt.argsort(_on(dev, m), axis=1), axis=1), np.sort(m, axis=1))


def test_creation_and_copies(dev):
    _same(gt.arange(-(2**40), -(2**40) + 50, 7, dtype=gt.int64, device=dev), np.arange(-(2**40), -(2**40) + 50, 7))
    _same(gt.full((3, 2), 2**64 - 5, dtype=gt.uint64, device=dev), np.full((3, 2), 2**64 - 5, dtype=np.uint64))
    _same(gt.zeros(4, dtype=gt.int64, device=dev), np.zeros(4, dtype=np.int64))
    _same(gt.ones(4, dtype=gt.uint64, device=dev), np.ones(4, dtype=np.uint64))
    _same(gt.eye(3, 4, k=1, dtype=gt.int64, device=dev), np.eye(3, 4, k=1, dtype=np.int64))
    a = _values("int64", n=24, seed=11)
    x = _on(dev, a)
    _same(gt.reshape(x, (4, 6)).T, a.reshape(4, 6).T)
    _same(gt.concat([x, -x]), np.concatenate([a, -a]))
    _same(gt.stack([x, x[::-1]], axis=1), np.stack([a, a[::-1]], axis=1))
    _same(gt.flip(gt.reshape(x, (4, 6)), axis=0)[1:, ::2], np.flip(a.reshape(4, 6), axis=0)[1:, ::2])


def test_host_data_and_info(dev):
    """NumPy int64/uint64 data keeps its dtype and values; ``dtypes(device=)`` lists int64 and
    uint64, the default integer dtypes stay 32-bit there (Python ints, index results); float64
    raises TypeError saying how to convert."""
    big = np.array([2**40, -(2**63), 3], dtype=np.int64)
    x = gt.asarray(big, device=dev)
    _same(x, big)
    with dev:
        _same(gt.asarray(np.array([1, 2], dtype=np.int64)), np.array([1, 2]))
        _same(gt.asarray(np.array([2**63], dtype=np.uint64)), np.array([2**63], dtype=np.uint64))
        assert gt.asarray([1, 2]).dtype == gt.int32
    info = gt.__array_namespace_info__()
    assert {"int64", "uint64"} <= set(info.dtypes(device=dev))
    assert info.default_dtypes(device=dev)["integral"] == gt.int32
    assert info.default_dtypes(device=dev)["indexing"] == gt.int32
    if "shader-f64" not in dev.features:
        assert "float64" not in info.dtypes(device=dev)
        with pytest.raises(TypeError, match=r"float64 .*shader-f64.*astype\(np.float32\)"):
            gt.asarray(np.ones(2), device=dev)
        with pytest.raises(TypeError, match="shader-f64"):
            x.astype(gt.float64)


def test_unsupported_ops_raise_type_error(dev):
    """What is not emulated (WGSL operators on the words, as in a user kernel) raises TypeError
    naming the feature and the conversion."""
    a = gt.asarray(np.arange(6, dtype=np.int64).reshape(2, 3) << 33, device=dev)
    add = gt.ElementwiseKernel("T x, T y", "T z", "z = x + y;", "add_int64_words")
    with pytest.raises(TypeError, match="shader-int64.*astype"):
        add(a, a)


@pytest.mark.parametrize("wide", ["int64", "uint64"])
def test_matmul_matches_numpy(dev, wide):
    """matmul / tensordot / vecdot wrap modulo 2^64 as NumPy's: shapes across the kernel's tiles,
    batch broadcasting, transposed and negative-step views, 1-D operands, narrower operands
    converted on load, an empty contraction."""
    a = _values(wide, n=3 * 37 * 45, seed=14).reshape(3, 37, 45)
    b = _values(wide, n=45 * 33, seed=15).reshape(45, 33)
    x, y = _on(dev, a), _on(dev, b)
    v = _values(wide, n=45, seed=16)
    narrow = _values("int32" if wide == "int64" else "uint32", n=2 * 37, seed=17).reshape(2, 37)
    small = _values("int8" if wide == "int64" else "uint8", n=45 * 5, seed=18).reshape(45, 5)
    with np.errstate(all="ignore"):
        _same(x @ y, a @ b)
        _same(gt.linalg.matmul(x, y), a @ b)
        _same(y.T @ x[1].T, b.T @ a[1].T)
        _same(x[:, ::-1, ::-2] @ y[::-2][:, 3:9], a[:, ::-1, ::-2] @ b[::-2][:, 3:9])
        _same(x @ _on(dev, v), a @ v)
        _same(_on(dev, v) @ _on(dev, v), np.asarray(v @ v))
        _same(_on(dev, narrow) @ x[0], narrow @ a[0])
        _same(x @ _on(dev, small), a @ small)
        _same(gt.tensordot(x, y, axes=1), np.tensordot(a, b, axes=1))
        _same(gt.tensordot(x, x, axes=([1, 2], [1, 2])), np.tensordot(a, a, axes=([1, 2], [1, 2])))
        _same(gt.vecdot(x, x), np.sum(a * a, axis=-1))
        _same(gt.linalg.vecdot(x, x, axis=1), np.sum(a * a, axis=1))
    empty = _on(dev, np.zeros((4, 0), dtype=wide))
    _same(empty @ _on(dev, np.zeros((0, 3), dtype=wide)), np.zeros((4, 3), dtype=wide))


def test_matmul_split_over_small_bindings(dev, monkeypatch):
    """With a tiny binding limit the product is split into blocks of batch, m, n and k (k blocks
    accumulate into C); a repeated call replays its plan. Results stay exact."""
    backend = dev._rt().backend()
    monkeypatch.setattr(backend, "max_window_bytes", lambda: 700)
    a = _values("int64", n=2 * 21 * 29, seed=19).reshape(2, 21, 29)
    b = _values("int64", n=29 * 17, seed=20).reshape(29, 17)
    x, y = _on(dev, a), _on(dev, b)
    with np.errstate(all="ignore"):
        for _ in range(2):
            before = backend.context.stats["dispatches"]
            _same(x @ y[::-1], a @ b[::-1])
            assert backend.context.stats["dispatches"] - before > 6


@pytest.mark.parametrize("wide", ["int64", "uint64"])
def test_complex_conversion(dev, wide):
    """int64/uint64 to complex64: the real part rounded to nearest even, as NumPy's."""
    a = _values(wide, seed=21)
    _same(_on(dev, a).astype(gt.complex64), a.astype(np.complex64))


@pytest.fixture(scope="module")
def f64_dev():
    """A device with ``shader-f64`` and emulated int64: a second device of an adapter that has
    both features, opened here with ``shader-int64`` taken from its granted features (so a
    kernel with native 64-bit integers is refused there, as on an adapter without them)."""
    from gputensor import _devices, _runtime
    from gputensor._backend import open_backend

    source = next((d for d in gt.devices() if "shader-f64" in d.features), None)
    if source is None:
        pytest.skip("no adapter has shader-f64")
    rt = _runtime.DeviceRuntime(len(_runtime.runtimes()) + 10, dict(source._rt().info))
    be = open_backend(rt.info)
    be.context.features = be.context.features - {"shader-int64"}
    rt.be = be
    device = _devices.device_of_runtime(rt)
    assert "shader-f64" in device.features and "shader-int64" not in device.features
    yield device
    rt.reset()


@pytest.mark.parametrize("wide", ["int64", "uint64"])
def test_float64_conversions_without_shader_int64(f64_dev, wide):
    """int64/uint64 <-> float64 where the adapter has shader-f64 but emulates int64: values
    beyond 2^53 round to nearest even, negatives, the edges; floats truncate toward zero."""
    near = [2**53 + d for d in (-1, 0, 1, 2, 3)] + [2**62 + 2**9, 2**62 + 2**10 + 1, 2**63 - 1]
    ints = np.concatenate([_values(wide, seed=22), np.array(near, dtype=wide)])
    if wide == "int64":
        ints = np.concatenate([ints, -np.array(near, dtype=np.int64)])
    else:
        ints = np.concatenate([ints, np.array([2**64 - 1, 2**64 - 2**11 + 1, 2**63 + 2**10], dtype=np.uint64)])
    x = _on(f64_dev, ints)
    _same(x.astype(gt.float64), ints.astype(np.float64))
    top = 2.0**62 if wide == "int64" else 2.0**63
    f = np.array([0.5, -0.5, 2.0**53 + 2, -(2.0**60) - 2**8, top, 1e15 + 0.75, -1e15, 3.99, -(2.0**63), 0.0],
                 dtype=np.float64)
    f = np.abs(f) if wide == "uint64" else f
    _same(_on(f64_dev, f).astype(getattr(gt, wide)), f.astype(wide))
    small = (ints[:40] % np.array(1000, dtype=wide)).astype(wide)  # (a sum exact in any order)
    _same(gt.sum(_on(f64_dev, small), dtype=gt.float64), np.sum(small, dtype=np.float64))


@pytest.mark.parametrize("op", ["ceil", "floor", "round", "trunc", "conj", "real", "isfinite", "isinf", "isnan"])
def test_integer_identities_and_predicates(dev, op):
    a = _values("uint64", seed=12)
    _same(getattr(gt, op)(_on(dev, a)), getattr(np, op)(a))


def test_moves_between_devices_keep_values():
    """int64 data moved to and from the device without shader-int64 keeps dtype and values."""
    devices = gt.devices()
    emulating = [d for d in devices if "shader-int64" not in d.features]
    native = [d for d in devices if "shader-int64" in d.features]
    if not emulating or not native:
        pytest.skip("needs a device with shader-int64 and one without")
    a = _values("int64", seed=13)
    x = gt.asarray(a, device=native[0])
    y = x.to_device(emulating[0])
    _same(y, a)
    _same((y + 1).to_device(native[0]) - x, np.ones_like(a))


def test_float32_conversion_rounds_to_nearest_even(dev):
    """int64/uint64 -> float32 at and around ties (NumPy rounds correctly, to even)."""
    base = [2**24, 2**25, 2**31, 2**40, 2**53, 2**62]
    near = [b + d for b in base for d in (-3, -1, 0, 1, 2, 3, b >> 24, (b >> 24) * 3, (b >> 25) + 1)]
    signed = np.array(near + [-v for v in near] + [-(2**63), 2**63 - 1], dtype=np.int64)
    _same(_on(dev, signed).astype(gt.float32), signed.astype(np.float32))
    unsigned = np.array(near + [2**64 - 1, 2**63, 2**64 - 2**39, 2**64 - 2**40 - 1], dtype=np.uint64)
    _same(_on(dev, unsigned).astype(gt.float32), unsigned.astype(np.float32))


@pytest.mark.parametrize("wide", ["int64", "uint64", "int32"])
def test_mean_var_std_of_integers_raise_on_every_device(wide):
    """mean/var/std of integer data (the Array API leaves it unspecified) raise TypeError on
    every device, emulated int64 as native: through the namespace, the methods and NumPy's
    functions; converted to float32 first they give NumPy's values."""
    a = np.arange(10, dtype=wide) * 3
    for d in gt.devices():
        x = _on(d, a)
        for fn in (gt.mean, gt.var, gt.std, np.mean, np.var, np.std, lambda v: v.mean(), lambda v: v.std()):
            with pytest.raises(TypeError, match="floating"):
                fn(x)
        f = x.astype(gt.float32)
        for name in ("mean", "var", "std"):
            np.testing.assert_allclose(gt.asnumpy(getattr(gt, name)(f)), getattr(np, name)(a.astype(np.float32)),
                                       rtol=tol("float32", "accumulated_fine")["rtol"])
