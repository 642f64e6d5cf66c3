"""Elementwise kernels: the contract's unary/binary over every op and float dtype, and the generic
strided/broadcast/packed path (``ops_elementwise.elementwise``), checked against NumPy."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest

from gputensor._backend import BackendError, BackendErrorKind, BinaryOp, UnaryOp, WebGpuBackend, get_backend
from gputensor._backend import ops_elementwise as ew
from gputensor._backend.ops_elementwise import ArrayOperand, ScalarOperand, copy_strided, elementwise
from gputensor._backend.wgsl_types import STORAGE_TYPES

from _compare import tolerance as table_tolerance

INVALID = BackendErrorKind.INVALID_ARGUMENT
FLOATS = ("float32", "float16", "float64")


@pytest.fixture(scope="module")
def backend() -> WebGpuBackend:
    return get_backend()


class _Kind:
    def __init__(self, kind: BackendErrorKind) -> None:
        self.kind = kind

    def __enter__(self):
        self._cm = pytest.raises(BackendError)
        self.info = self._cm.__enter__()
        return self.info

    def __exit__(self, *exc):
        suppressed = self._cm.__exit__(*exc)
        assert self.info.value.kind is self.kind, f"expected {self.kind}, got {self.info.value}"
        return suppressed


def raises_kind(kind: BackendErrorKind) -> _Kind:
    return _Kind(kind)


def put(backend: WebGpuBackend, host: np.ndarray, pad: int = 0) -> int:
    ptr = backend.alloc(host.nbytes + pad)
    backend.copy_htod(ptr, host)
    return ptr


def get(backend: WebGpuBackend, ptr: int, dtype, n: int) -> np.ndarray:
    out = np.empty(n, dtype)
    backend.copy_dtoh(out, ptr)
    return out


# ---- references and tolerances --------------------------------------------------------------------
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


UNARY_REF = {
    UnaryOp.RELU: lambda x: np.where(x < 0, 0.0, x),
    UnaryOp.SIGMOID: _sigmoid,
    UnaryOp.TANH: np.tanh,
    UnaryOp.EXP: np.exp,
    UnaryOp.LOG: np.log,
    UnaryOp.SQRT: np.sqrt,
    UnaryOp.ABS: np.abs,
    UnaryOp.NEG: np.negative,
    UnaryOp.SIN: np.sin,
    UnaryOp.COS: np.cos,
    UnaryOp.SQUARE: np.square,
    UnaryOp.RECIPROCAL: np.reciprocal,
    UnaryOp.GELU: lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))),
    UnaryOp.SILU: lambda x: x * _sigmoid(x),
}
BINARY_REF = {
    BinaryOp.ADD: np.add,
    BinaryOp.SUB: np.subtract,
    BinaryOp.MUL: np.multiply,
    BinaryOp.DIV: np.divide,
    BinaryOp.MAX: np.maximum,
    BinaryOp.MIN: np.minimum,
    BinaryOp.POW: np.power,
}
assert set(UNARY_REF) == set(UnaryOp) and set(BINARY_REF) == set(BinaryOp)

EXACT_UNARY = {UnaryOp.RELU, UnaryOp.ABS, UnaryOp.NEG, UnaryOp.SQUARE}
#: correctly rounded everywhere (WGSL allows division 2.5 ulp: NVIDIA's f32 division is not exact)
EXACT_BINARY = {BinaryOp.ADD, BinaryOp.SUB, BinaryOp.MUL, BinaryOp.MAX, BinaryOp.MIN}


def tolerance(dtype: str, exact: bool) -> tuple[float, float]:
    """(rtol, atol) against a float64 reference of the dtype-rounded inputs: the table's
    ``rounded`` family for correctly rounded ops, ``builtin`` for transcendental ones."""
    return table_tolerance(dtype, "rounded" if exact else "builtin")


def unary_input(op: UnaryOp, n: int, dtype: str, rng) -> np.ndarray:
    if op in (UnaryOp.LOG, UnaryOp.SQRT):
        x = rng.uniform(0.01, 20.0, n)
    elif op is UnaryOp.RECIPROCAL:
        x = rng.uniform(0.1, 10.0, n) * rng.choice([-1.0, 1.0], n)
    elif op is UnaryOp.EXP:
        x = rng.uniform(-10.0, 10.0, n)
    else:
        x = rng.uniform(-6.0, 6.0, n)
    return x.astype(dtype)


def binary_inputs(op: BinaryOp, n: int, dtype: str, rng) -> tuple[np.ndarray, np.ndarray]:
    if op is BinaryOp.POW:
        a = rng.uniform(0.05, 4.0, n)
        b = rng.uniform(-3.0, 3.0, n)
        k = n // 4  # negative bases with integer exponents
        a[:k] = -a[:k]
        b[:k] = np.round(b[:k])
    elif op is BinaryOp.DIV:
        a = rng.uniform(-50, 50, n)
        b = rng.uniform(0.25, 8.0, n) * rng.choice([-1.0, 1.0], n)
    else:
        a = rng.uniform(-50, 50, n)
        b = rng.uniform(-50, 50, n)
        b[::7] = a[::7]  # ties for max/min, zeros for sub
    return a.astype(dtype), b.astype(dtype)


def check_close(got: np.ndarray, expected64: np.ndarray, dtype: str, exact: bool, what: str) -> None:
    rtol, atol = tolerance(dtype, exact)
    with np.errstate(over="ignore"):
        expected = expected64.astype(dtype) if dtype == "float16" else expected64
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol,
                               equal_nan=True, err_msg=what)


# ---- unary / binary over every op and dtype ---------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", list(UnaryOp), ids=str)
def test_unary_every_op(backend: WebGpuBackend, op: UnaryOp, dtype: str) -> None:
    rng = np.random.default_rng(zlib.crc32(f"{op}-{dtype}".encode()))
    n = 1001  # not a multiple of the workgroup
    x = unary_input(op, n, dtype, rng)
    src = put(backend, x)
    dst = backend.alloc(x.nbytes)
    backend.unary(op, src, dst, n, dtype=dtype)
    got = get(backend, dst, dtype, n)
    np.testing.assert_array_equal(get(backend, src, dtype, n), x)  # the input is untouched
    with np.errstate(all="ignore"):
        check_close(got, UNARY_REF[op](x.astype(np.float64)), dtype, op in EXACT_UNARY, f"{op} {dtype}")
    backend.free(src)
    backend.free(dst)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", list(BinaryOp), ids=str)
def test_binary_every_op(backend: WebGpuBackend, op: BinaryOp, dtype: str) -> None:
    rng = np.random.default_rng(zlib.crc32(f"{op}-{dtype}".encode()))
    n = 777
    a, b = binary_inputs(op, n, dtype, rng)
    pa, pb = put(backend, a), put(backend, b)
    out = backend.alloc(a.nbytes)
    backend.binary(op, pa, pb, out, n, dtype=dtype)
    got = get(backend, out, dtype, n)
    with np.errstate(all="ignore"):
        expected = BINARY_REF[op](a.astype(np.float64), b.astype(np.float64))
    check_close(got, expected, dtype, op in EXACT_BINARY, f"{op} {dtype}")
    for p in (pa, pb, out):
        backend.free(p)


SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, -3.0, 0.5])
#: ops whose result sign for a zero is not pinned down by NumPy/IEEE for these kernels
_ZERO_SIGN_FREE = {UnaryOp.RELU, BinaryOp.MAX, BinaryOp.MIN, UnaryOp.GELU, UnaryOp.SILU}


def check_special(got: np.ndarray, expected: np.ndarray, op, dtype: str, x) -> None:
    with np.errstate(over="ignore"):
        expected = expected.astype(dtype)
    for k in range(expected.size):
        e, g = expected.flat[k], got.flat[k]
        where = f"{op} {dtype} at input {x[k] if not isinstance(x, tuple) else (x[0][k], x[1][k])}: got {g}, expected {e}"
        if np.isnan(e):
            assert np.isnan(g), where
        elif np.isinf(e) or e == 0:
            assert g == e, where
            if e == 0 and op not in _ZERO_SIGN_FREE:
                assert np.signbit(g) == np.signbit(e), where
        else:
            rtol = table_tolerance(dtype, "builtin_relative")[0]
            assert abs(float(g) - float(e)) <= rtol * abs(float(e)), where


@pytest.mark.parametrize("dtype", FLOATS)
def test_unary_special_values(backend: WebGpuBackend, dtype: str) -> None:
    x = SPECIALS.astype(dtype)
    src = put(backend, x)
    dst = backend.alloc(x.nbytes)
    for op in UnaryOp:
        keep = np.ones(x.size, bool)
        if op in (UnaryOp.GELU, UnaryOp.SILU):
            keep = ~np.isneginf(x)  # x * 0 at -inf: NumPy's formula gives nan, the limit is 0
        backend.unary(op, src, dst, x.size, dtype=dtype)
        got = get(backend, dst, dtype, x.size)
        with np.errstate(all="ignore"):
            expected = UNARY_REF[op](x.astype(np.float64))
        check_special(got[keep], expected[keep], op, dtype, x[keep])
    backend.free(src)
    backend.free(dst)


@pytest.mark.parametrize("dtype", FLOATS)
def test_binary_special_values(backend: WebGpuBackend, dtype: str) -> None:
    a = np.repeat(SPECIALS, SPECIALS.size).astype(dtype)
    b = np.tile(SPECIALS, SPECIALS.size).astype(dtype)
    pa, pb = put(backend, a), put(backend, b)
    out = backend.alloc(a.nbytes)
    for op in BinaryOp:
        backend.binary(op, pa, pb, out, a.size, dtype=dtype)
        got = get(backend, out, dtype, a.size)
        with np.errstate(all="ignore"):
            expected = BINARY_REF[op](a.astype(np.float64), b.astype(np.float64))
        check_special(got, expected, op, dtype, (a, b))
    for p in (pa, pb, out):
        backend.free(p)


@pytest.mark.parametrize("dtype", FLOATS)
def test_in_place_and_aliasing(backend: WebGpuBackend, dtype: str) -> None:
    rng = np.random.default_rng(7)
    n = 513
    x = rng.uniform(-3, 3, n).astype(dtype)
    y = rng.uniform(0.5, 3, n).astype(dtype)
    px, py = put(backend, x), put(backend, y)
    backend.unary(UnaryOp.TANH, px, px, n, dtype=dtype)  # input == output
    check_close(get(backend, px, dtype, n), np.tanh(x.astype(np.float64)), dtype, False, "tanh in place")
    backend.copy_htod(px, x)
    backend.binary(BinaryOp.SUB, px, py, px, n, dtype=dtype)  # a == output
    check_close(get(backend, px, dtype, n), x.astype(np.float64) - y, dtype, True, "a -= b")
    backend.copy_htod(px, x)
    backend.binary(BinaryOp.DIV, px, py, py, n, dtype=dtype)  # b == output
    check_close(get(backend, py, dtype, n), x.astype(np.float64) / y, dtype, False, "b = a / b")
    backend.copy_htod(px, x)
    backend.binary(BinaryOp.MUL, px, px, px, n, dtype=dtype)  # a == b == output
    check_close(get(backend, px, dtype, n), np.square(x.astype(np.float64)), dtype, True, "a *= a")
    backend.free(px)
    backend.free(py)


@pytest.mark.parametrize("dtype", FLOATS)
def test_interior_pointers_keep_neighbours(backend: WebGpuBackend, dtype: str) -> None:
    """Operands at odd element offsets inside one allocation; the output starts mid-word for
    float16; nothing outside the output range changes."""
    rng = np.random.default_rng(11)
    item = np.dtype(dtype).itemsize
    total = 3000
    host = rng.uniform(0.5, 2.0, total).astype(dtype)
    base = put(backend, host)
    n = 777
    ia, ib, io = 3, 1001, 1901
    backend.binary(BinaryOp.POW, base + ia * item, base + ib * item, base + io * item, n, dtype=dtype)
    expected = host.copy()
    with np.errstate(over="ignore"):
        expected[io : io + n] = np.power(host[ia : ia + n].astype(np.float64), host[ib : ib + n]).astype(dtype)
    got = get(backend, base, dtype, total)
    np.testing.assert_array_equal(got[:io], host[:io])
    np.testing.assert_array_equal(got[io + n :], host[io + n :])
    check_close(got[io : io + n], np.power(host[ia : ia + n].astype(np.float64), host[ib : ib + n]), dtype,
                False, "interior pow")
    backend.unary(UnaryOp.NEG, base + 5 * item, base + 5 * item, 1, dtype=dtype)  # a single element
    got = get(backend, base, dtype, 8)
    assert got[5] == -host[5] and got[4] == host[4] and got[6] == host[6]
    backend.free(base)


def test_sizes_around_the_workgroup(backend: WebGpuBackend) -> None:
    rng = np.random.default_rng(3)
    for dtype in ("float32", "float16"):
        x = rng.uniform(-2, 2, 1100).astype(dtype)
        src = put(backend, x)
        dst = backend.alloc(x.nbytes)
        for n in (1, 2, 3, 255, 256, 257, 511, 1023, 1025):
            backend.copy_htod(dst, np.full(x.size, 7, dtype))
            backend.unary(UnaryOp.ABS, src, dst, n, dtype=dtype)
            got = get(backend, dst, dtype, x.size)
            np.testing.assert_array_equal(got[:n], np.abs(x[:n]), err_msg=f"n={n} {dtype}")
            assert (got[n:] == 7).all(), f"wrote past n={n} ({dtype})"
        backend.free(src)
        backend.free(dst)


def test_n_zero_records_nothing_but_validates(backend: WebGpuBackend) -> None:
    ctx = backend.context
    p = backend.alloc(16)
    before = ctx.stats["dispatches"]
    backend.unary(UnaryOp.EXP, p, p, 0)
    backend.binary(BinaryOp.ADD, p, p, p, 0, dtype="float16")
    backend.unary(UnaryOp.EXP, p + 16, p + 16, 0)  # the end of an allocation is a valid empty range
    assert ctx.stats["dispatches"] == before
    q = backend.alloc(4)
    backend.free(q)
    with raises_kind(INVALID):
        backend.unary(UnaryOp.EXP, q, p, 0)
    with raises_kind(INVALID):
        backend.binary(BinaryOp.ADD, p, p, q, 0)
    backend.free(p)


def test_unary_binary_errors(backend: WebGpuBackend) -> None:
    ctx = backend.context
    p = backend.alloc(64)
    q = backend.alloc(64)
    freed = backend.alloc(64)
    backend.free(freed)
    before = ctx.stats["dispatches"]
    bad_unary = [
        lambda: backend.unary("exp", p, q, 4),
        lambda: backend.unary(BinaryOp.ADD, p, q, 4),
        lambda: backend.unary(UnaryOp.EXP, p, q, -1),
        lambda: backend.unary(UnaryOp.EXP, p, q, 1.5),
        lambda: backend.unary(UnaryOp.EXP, p, q, "4"),
        lambda: backend.unary(UnaryOp.EXP, p, q, 17),  # past the end (float32)
        lambda: backend.unary(UnaryOp.EXP, p, q, 9, dtype="float64"),
        lambda: backend.unary(UnaryOp.EXP, p, q + 4, 16),
        lambda: backend.unary(UnaryOp.EXP, p, q, 4, dtype="int32"),
        lambda: backend.unary(UnaryOp.EXP, p, q, 4, dtype="float8"),
        lambda: backend.unary(UnaryOp.EXP, freed, q, 4),
        lambda: backend.unary(UnaryOp.EXP, p, freed, 4),
        lambda: backend.unary(UnaryOp.EXP, p + 2, q, 4),  # misaligned float32
        lambda: backend.unary(UnaryOp.EXP, p, q + 1, 4, dtype="float16"),
        lambda: backend.unary(UnaryOp.EXP, p + 4, q, 4, dtype="float64"),
        lambda: backend.unary(UnaryOp.EXP, 12345, q, 4),
    ]
    bad_binary = [
        lambda: backend.binary("add", p, p, q, 4),
        lambda: backend.binary(UnaryOp.EXP, p, p, q, 4),
        lambda: backend.binary(BinaryOp.ADD, p, p, q, -3),
        lambda: backend.binary(BinaryOp.ADD, p, p + 8, q, 15),  # b past the end
        lambda: backend.binary(BinaryOp.ADD, p, p, q + 60, 2),  # output past the end
        lambda: backend.binary(BinaryOp.ADD, freed, p, q, 4),
        lambda: backend.binary(BinaryOp.ADD, p, freed, q, 4),
        lambda: backend.binary(BinaryOp.ADD, p, p, freed, 4),
        lambda: backend.binary(BinaryOp.ADD, p, p + 1, q, 4),
        lambda: backend.binary(BinaryOp.ADD, p, p, q, 4, dtype="bool"),
    ]
    for k, call in enumerate(bad_unary + bad_binary):
        with raises_kind(INVALID):
            call()
    assert ctx.stats["dispatches"] == before  # nothing reached the GPU
    backend.free(p)
    backend.free(q)


def test_binary_operand_larger_than_a_binding(backend: WebGpuBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    """binary ADD over 40M float32 (160 MB per operand): more than one binding window (128 MiB
    on lavapipe), so the launcher splits it into several dispatches. On adapters with larger
    bindings the window is capped at 64 MiB for this test, so the same path runs."""
    n = 40_000_000
    if n * 4 <= backend.max_window_bytes():
        monkeypatch.setattr(backend, "max_window_bytes", lambda: 64 << 20)
    a = np.arange(n, dtype=np.float32)
    b = a[::-1] * np.float32(0.5)
    pa, pb = put(backend, a), put(backend, b)
    out = backend.alloc(a.nbytes)
    before = backend.context.stats["dispatches"]
    backend.binary(BinaryOp.ADD, pa, pb, out, n)
    assert backend.context.stats["dispatches"] - before >= 2
    got = get(backend, out, np.float32, n)
    np.testing.assert_array_equal(got, a + b)
    for p in (pa, pb, out):
        backend.free(p)


# ---- the generic path -------------------------------------------------------------------------------
def host_view(base: np.ndarray, offset: int, strides: tuple[int, ...], shape: tuple[int, ...]) -> np.ndarray:
    item = base.dtype.itemsize
    return np.lib.stride_tricks.as_strided(base[offset:], shape, tuple(s * item for s in strides))


class Case:
    """Host arrays mirrored on the device; views described as (base, offset, strides)."""

    def __init__(self, backend: WebGpuBackend) -> None:
        self.backend = backend
        self.ptrs: list[int] = []

    def array(self, base: np.ndarray) -> int:
        ptr = put(self.backend, base)
        self.ptrs.append(ptr)
        return ptr

    def operand(self, ptr: int, base: np.ndarray, offset: int, strides) -> ArrayOperand:
        return ArrayOperand(ptr + offset * base.dtype.itemsize, base.dtype.name, tuple(strides))

    def read(self, ptr: int, base: np.ndarray) -> np.ndarray:
        return get(self.backend, ptr, base.dtype, base.size)

    def close(self) -> None:
        for p in self.ptrs:
            self.backend.free(p)


def run_generic(backend, expr, expr_type, inputs, casts, out_base, out_offset, out_strides, shape, expected_fn):
    """Run ``elementwise`` and compare the whole output allocation with NumPy's result written
    into a copy of it (so bytes outside the view must be unchanged).

    ``inputs``: list of (base array, offset, strides) or ScalarOperand.
    """
    case = Case(backend)
    try:
        ops, views = [], []
        for spec in inputs:
            if isinstance(spec, ScalarOperand):
                ops.append(spec)
                views.append(np.array(spec.value).astype(spec.dtype))
            else:
                base, offset, strides = spec
                ptr = case.array(base)
                ops.append(case.operand(ptr, base, offset, strides))
                views.append(host_view(base, offset, strides, shape))
        out_ptr = case.array(out_base)
        elementwise(backend, expr, expr_type, ops, casts, case.operand(out_ptr, out_base, out_offset, out_strides), shape)
        got = case.read(out_ptr, out_base)
        expected = out_base.copy()
        with np.errstate(all="ignore"):
            host_view(expected, out_offset, out_strides, shape)[...] = expected_fn(*views)
        np.testing.assert_array_equal(got, expected)
    finally:
        case.close()


def test_generic_strided_negative_broadcast(backend: WebGpuBackend) -> None:
    rng = np.random.default_rng(21)
    a = rng.standard_normal(200).astype(np.float32)
    b = rng.standard_normal(50).astype(np.float32)
    out = np.full(200, -1.0, np.float32)
    # one rounding per element (a multiply-add may be contracted into an fma on some GPUs)
    f = lambda x, y: x * y  # noqa: E731
    expr = "(x0 * x1)"
    # 1-D: every other element, reversed, broadcast scalar-like (stride 0)
    run_generic(backend, expr, "f32", [(a, 0, (2,)), (b, 49, (-1,))], ["f32", "f32"], out, 1, (3,), (50,), f)
    run_generic(backend, expr, "f32", [(a, 199, (-4,)), (b, 7, (0,))], ["f32", "f32"], out, 199, (-1,), (50,), f)
    # 2-D: transposed input, broadcast row, reversed rows in the output
    run_generic(backend, expr, "f32", [(a, 0, (1, 10)), (b, 0, (0, 1))], ["f32", "f32"], out, 90, (-10, 1),
                (10, 10), f)
    # 3-D: permuted axes, negative inner stride, broadcast along the middle
    run_generic(backend, expr, "f32", [(a, 3, (1, 60, 5)), (b, 4, (0, 0, -1))], ["f32", "f32"], out, 0,
                (15, 5, 1), (5, 3, 5), f)
    # size-1 dimensions and a single element
    run_generic(backend, expr, "f32", [(a, 5, (7, 0, 1)), (b, 3, (0, 0, 0))], ["f32", "f32"], out, 2,
                (0, 9, 1), (1, 1, 1), f)


def test_generic_chunked_over_windows(backend: WebGpuBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    """The iteration space is split when operands exceed a binding window (a tiny window here:
    strided, reversed and broadcast operands, contiguous and packed outputs)."""
    monkeypatch.setattr(backend, "max_window_bytes", lambda: 1024)
    rng = np.random.default_rng(22)
    a = rng.standard_normal(3000).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    out = np.zeros(3000, np.float32)
    before = backend.context.stats["dispatches"]
    run_generic(backend, "(x0 - x1)", "f32", [(a, 2999, (-64, -1)), (b, 0, (0, 1))], ["f32", "f32"], out, 0,
                (64, 1), (40, 64), lambda x, y: x - y)
    assert backend.context.stats["dispatches"] - before >= 10
    run_generic(backend, "(x0 + x1)", "f32", [(a, 0, (1,)), (b, 5, (0,))], ["f32", "f32"], out, 2999, (-1,),
                (2900,), lambda x, y: x + y)
    # one row is itself larger than the window: split inside the row
    run_generic(backend, "x0", "f32", [(a, 0, (1, 3))], ["f32"], out, 0, (1, 3), (3, 990), lambda x: x)
    h = (rng.standard_normal(5000) * 100).astype(np.float16)
    out16 = rng.standard_normal(5000).astype(np.float16)
    run_generic(backend, "(x0 * 2.0)", "f32", [(h, 1, (1,))], ["f32"], out16, 3, (1,), (4990,),
                lambda x: x * np.float16(2))
    run_generic(backend, "(x0 * 2.0)", "f32", [(h, 0, (1,))], ["f32"], out16, 4999, (-2,), (2400,),
                lambda x: x * np.float16(2))


PACKED = ("int8", "uint8", "int16", "uint16", "float16", "bool")


def _values(dtype: str, n: int, rng) -> np.ndarray:
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if dtype.startswith("float"):
        return (rng.standard_normal(n) * 50).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, n, dtype=dtype)


@pytest.mark.parametrize("dtype", PACKED)
def test_packed_inputs(backend: WebGpuBackend, dtype: str) -> None:
    """Packed dtypes read at every lane alignment, strided and reversed, cast to f32 and i32."""
    rng = np.random.default_rng(len(dtype))
    x = _values(dtype, 301, rng)
    out32 = np.zeros(300, np.float32)
    outi = np.zeros(300, np.int32)
    compute = STORAGE_TYPES[dtype].compute
    for offset, stride, n in ((0, 1, 300), (1, 1, 299), (3, 2, 149), (300, -1, 297), (2, 3, 99)):
        run_generic(backend, "x0", "f32", [(x, offset, (stride,))], ["f32"], out32, 0, (1,), (n,),
                    lambda v: v.astype(np.float32))
        if dtype != "float16":
            run_generic(backend, "x0", "i32", [(x, offset, (stride,))], ["i32"], outi, 0, (1,), (n,),
                        lambda v: v.astype(np.int32))
    # in its own compute type with a scalar
    if compute != "bool":
        run_generic(backend, "(x0 + x1)", compute, [(x, 1, (1,)), ScalarOperand(3, dtype)], [compute, compute],
                    x.copy(), 0, (1,), (300,), lambda v, s: (v + s).astype(dtype))


@pytest.mark.parametrize("dtype", PACKED)
def test_packed_outputs_word_and_atomic(backend: WebGpuBackend, dtype: str) -> None:
    """Packed outputs: contiguous ('word' store) starting at every lane, including ranges inside
    one word, and strided/reversed/transposed ('atomic' store); neighbours stay intact."""
    rng = np.random.default_rng(100 + len(dtype))
    src = rng.integers(-1000, 1000, 400).astype(np.int32)
    expr_type = STORAGE_TYPES[dtype].compute  # i32, u32, f32 or bool
    for offset, strides, shape in (
        (0, (1,), (257,)), (1, (1,), (256,)), (2, (1,), (255,)), (3, (1,), (1,)),
        (1, (1,), (2,)), (2, (1,), (1,)), (0, (20, 1), (20, 20)),  # contiguous: word
        (5, (1, 20), (20, 19)), (3, (2,), (150,)), (399, (-1,), (390,)),  # transposed, strided, reversed
        (7, (30, 1), (12, 29)),  # rows of a wider array: atomic
    ):
        in_strides = (1,) if len(shape) == 1 else (shape[1], 1)
        out = _values(dtype, 400, rng)
        run_generic(backend, "x0", expr_type, [(src, 0, in_strides)], [expr_type], out, offset, strides, shape,
                    lambda v: v.astype(dtype))


@pytest.mark.parametrize("dtype", PACKED)
def test_packed_vector_mode(backend: WebGpuBackend, dtype: str) -> None:
    """Contiguous packed operands of one lane count take the vec4<u32> path (16 bytes per operand
    per invocation) with a word-mode tail; offsets that are not 16-byte aligned fall back."""
    rng = np.random.default_rng(200 + len(dtype))
    compute = STORAGE_TYPES[dtype].compute
    lanes = STORAGE_TYPES[dtype].lanes
    a = _values(dtype, 1000, rng)
    b = _values(dtype, 1000, rng)
    if compute == "bool":
        expr, fn = "(x0 != x1)", lambda x, y: x != y
    elif compute == "f32":
        expr, fn = "(x0 * x1)", lambda x, y: (x.astype(np.float32) * y).astype(dtype)
    else:
        expr, fn = "(x0 - x1 * x0)", lambda x, y: (x.astype(np.int64) - y.astype(np.int64) * x).astype(dtype)
    for off_a, off_b, off_o, n in ((0, 0, 0, 997), (4 * lanes, 8 * lanes, 12 * lanes, 500), (0, 0, 0, 4 * lanes),
                                   (1, 0, 0, 300), (0, 0, 4 * lanes + lanes, 301), (0, 0, 0, 3)):
        out = _values(dtype, 1000, rng)
        run_generic(backend, expr, compute, [(a, off_a, (1,)), (b, off_b, (1,))], [compute, compute], out, off_o,
                    (1,), (n,), fn)


MIXED = [(a, b) for a in PACKED for b in ("float32", "int32", "uint32")] + [
    (b, a) for a in PACKED for b in ("float32", "int32")] + [("bool", "float16"), ("float16", "bool"),
                                                            ("int8", "int16"), ("uint16", "uint8")]


@pytest.mark.parametrize("src,dst", MIXED, ids=[f"{a}-{b}" for a, b in MIXED])
def test_mixed_vector_mode(backend: WebGpuBackend, src: str, dst: str) -> None:
    """Contiguous operands of different widths (packed with 4-byte types, or packed of other
    lane counts) take the mixed vector variant (whole vectors of each operand, the output's
    group stored whole) with a scalar tail; offsets off a group fall back to the scalar modes;
    bytes around the output stay intact."""
    rng = np.random.default_rng(300 + len(src) + 7 * len(dst))
    st_dst = STORAGE_TYPES[dst]
    a = _values(src, 1200, rng)
    if src != "bool" and dst != "bool" and (src.startswith("float") or dst.startswith("float")):
        a = (rng.standard_normal(1200) * 20).astype(src)  # (casts of values every dtype holds)
        if dst.startswith("u"):
            a = np.abs(a)
    cond = rng.integers(0, 2, 1200).astype(bool)
    fill = _values(dst, 1200, rng)
    ctx = backend.context
    seen: list[str] = []
    real_dispatch = ctx.dispatch

    def spy(name, params, buffers, workgroups, defines=None):
        seen.append(defines["STORE"])
        return real_dispatch(name, params, buffers, workgroups, defines)

    ctx.dispatch = spy
    try:
        for off_a, off_c, off_o, n in ((0, 0, 0, 1024), (16, 32, 48, 997), (0, 0, 0, 16), (0, 0, 0, 15),
                                       (1, 0, 0, 300), (0, 0, 3, 301), (0, 5, 0, 64)):
            seen.clear()
            out = _values(dst, 1200, rng)
            run_generic(backend, "x0", st_dst.compute, [(a, off_a, (1,))], [st_dst.compute], out, off_o, (1,), (n,),
                        lambda v: v.astype(dst))
            if (off_a, off_o) == (0, 0) and n >= 16 and backend.context.storage_offset_alignment % 16 == 0:
                assert "let y0 = " in seen[0], seen[0]  # the mixed variant ran
            # a three-operand select: where(cond, a cast to dst, fill)
            out = _values(dst, 1200, rng)
            run_generic(backend, "select(x2, x1, x0)", st_dst.compute,
                        [(cond, off_c, (1,)), (a, off_a, (1,)), (fill, 0, (1,))],
                        ["bool", st_dst.compute, st_dst.compute], out, off_o, (1,), (n,),
                        lambda c, v, f: np.where(c, v.astype(dst), f))
    finally:
        del ctx.dispatch  # (the class's method again: no wrapper left on the context)


def test_store_mode_follows_output_layout(backend: WebGpuBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = backend.context
    seen: list[str] = []
    real_dispatch = ctx.dispatch

    def spy(name, params, buffers, workgroups, defines=None):
        seen.append(defines["STORE"])
        return real_dispatch(name, params, buffers, workgroups, defines)

    monkeypatch.setattr(ctx, "dispatch", spy)
    ptr = backend.alloc(64)
    u8 = lambda off, stride: ArrayOperand(ptr + off, "uint8", (stride,))  # noqa: E731
    elementwise(backend, "x0", "u32", [u8(0, 1)], ["u32"], u8(33, 1), [16])
    elementwise(backend, "x0", "u32", [u8(0, 1)], ["u32"], u8(32, 2), [8])
    elementwise(backend, "x0", "f32", [ArrayOperand(ptr, "float32", (1,))], ["f32"],
                ArrayOperand(ptr + 32, "float32", (1,)), [8])
    assert "atomicOr" not in seen[0] and "out[w] = word" in seen[0]
    assert "atomicOr" in seen[1]
    assert "vec4<f32>" in seen[2] and len(seen) == 3  # aligned contiguous f32: vector loads only
    seen.clear()
    elementwise(backend, "x0", "f32", [ArrayOperand(ptr, "float32", (1,))], ["f32"],
                ArrayOperand(ptr + 32, "float32", (1,)), [7])  # 4 vectorised + a 3-element tail
    # issue 5: the tail runs in the same dispatch as the vectors (one dispatch per contiguous op)
    assert "vec4<f32>" in seen[0] and "let nv = n / 4u;" in seen[0] and len(seen) == 1
    seen.clear()
    elementwise(backend, "x0", "f32", [ArrayOperand(ptr + 4, "float32", (1,))], ["f32"],
                ArrayOperand(ptr + 32, "float32", (1,)), [7])  # misaligned input: scalar only
    assert "vec4" not in seen[0] and len(seen) == 1
    seen.clear()
    elementwise(backend, "x0", "u32", [u8(0, 1)], ["u32"], u8(32, 1), [20])  # packed: vec4<u32> + tail
    assert "vec4<u32>" in seen[0] and "out[w] = word" in seen[1] and len(seen) == 2
    seen.clear()
    elementwise(backend, "x0", "f64", [ArrayOperand(ptr, "float64", (1,))], ["f64"],
                ArrayOperand(ptr + 32, "float64", (1,)), [4])
    assert "vec2<f64>" in seen[0] and len(seen) == 1
    monkeypatch.undo()
    backend.free(ptr)


SIXTY_FOUR = ("int64", "uint64", "float64")


def test_64_bit_dtypes(backend: WebGpuBackend) -> None:
    rng = np.random.default_rng(64)
    i64 = rng.integers(-(2**62), 2**62, 300, dtype=np.int64)
    u64 = rng.integers(0, 2**64 - 1, 300, dtype=np.uint64)
    f64 = rng.standard_normal(300) * 1e6
    out_i = rng.integers(-5, 5, 300, dtype=np.int64)
    out_u = np.zeros(300, np.uint64)
    out_f = np.zeros(300, np.float64)
    out32 = np.zeros(300, np.float32)
    run_generic(backend, "(x0 + x1)", "i64", [(i64, 0, (1,)), (i64, 299, (-1,))], ["i64", "i64"], out_i, 1, (1,),
                (299,), lambda a, b: a + b)
    run_generic(backend, "(x0 * x1)", "u64", [(u64, 0, (2,)), ScalarOperand(2**40 + 3, "uint64")], ["u64", "u64"],
                out_u, 0, (1,), (150,), lambda a, s: a * s)
    run_generic(backend, "(x0 / x1)", "f64", [(f64, 0, (1,)), (f64, 1, (1,))], ["f64", "f64"], out_f, 0, (1,),
                (299,), lambda a, b: a / b)
    # conversions between them and to the 32-bit types
    run_generic(backend, "x0", "f64", [(i64, 0, (1,))], ["f64"], out_f, 0, (1,), (300,), lambda a: a.astype(np.float64))
    run_generic(backend, "x0", "f64", [(u64, 0, (1,))], ["f64"], out_f, 0, (1,), (300,), lambda a: a.astype(np.float64))
    run_generic(backend, "x0", "i64", [(f64, 0, (1,))], ["i64"], out_i, 0, (1,), (300,), lambda a: a.astype(np.int64))
    run_generic(backend, "x0", "f32", [(f64, 0, (1,))], ["f32"], out32, 0, (1,), (300,), lambda a: a.astype(np.float32))
    run_generic(backend, "x0", "i64", [(i64, 0, (1,))], ["i64"], np.zeros(300, np.int32), 0, (1,), (300,),
                lambda a: a.astype(np.int32))  # wraps to the low 32 bits as NumPy does


ALL_DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
              "float16", "float32", "float64")
SCALARS = {"bool": True, "int8": -100, "uint8": 200, "int16": -30000, "uint16": 60000, "int32": -(2**31) + 5,
           "uint32": 2**32 - 7, "int64": -(2**40) - 3, "uint64": 2**63 + 11, "float16": 0.1, "float32": 1e-3,
           "float64": 1 / 3}


@pytest.mark.parametrize("dtype", [pytest.param(d, marks=pytest.mark.requires("shader-int64")) if "64" in d and d[0] in "iu"
                                   else d for d in ALL_DTYPES])  # (native i64/u64 expressions)
def test_scalars_of_every_dtype(backend: WebGpuBackend, dtype: str) -> None:
    rng = np.random.default_rng(5 + len(dtype))
    x = _values(dtype, 203, rng) if dtype not in ("int32", "uint32", "int64", "uint64", "float32", "float64") else (
        (rng.standard_normal(203) * 1000).astype(dtype) if dtype.startswith("float") else
        rng.integers(np.iinfo(dtype).min // 2, np.iinfo(dtype).max // 2, 203, dtype=dtype))
    compute = STORAGE_TYPES[dtype].compute
    s = ScalarOperand(SCALARS[dtype], dtype)
    if compute == "bool":
        run_generic(backend, "(x0 != x1)", "bool", [(x, 0, (1,)), s], ["bool", "bool"], x.copy(), 1, (1,), (202,),
                    lambda v, c: v != c)
        run_generic(backend, "x1", "bool", [(x, 0, (1,)), ScalarOperand(False, "bool")], ["bool", "bool"], x.copy(),
                    0, (1,), (203,), lambda v, c: np.broadcast_to(c, v.shape))
        return
    run_generic(backend, "(x0 + x1)", compute, [(x, 0, (1,)), s], [compute, compute], x.copy(), 0, (1,), (203,),
                lambda v, c: v + c)
    # the scalar alone, broadcast to a strided output
    run_generic(backend, "x1", compute, [(x, 0, (1,)), s], [compute, compute], x.copy(), 202, (-2,), (100,),
                lambda v, c: np.broadcast_to(c, v.shape))


def test_scalar_is_rounded_to_its_dtype() -> None:
    from gputensor._backend.elementwise import scalar_words

    assert scalar_words(0.1, "float16") == [int(np.float32(np.float16(0.1)).view(np.uint32))]
    assert scalar_words(300, "int8") == [44]
    assert scalar_words(-1, "uint8") == [255]
    assert scalar_words(70000, "int16") == [4464]
    assert scalar_words(2**64 - 1, "uint64") == [0xFFFFFFFF, 0xFFFFFFFF]
    assert scalar_words(-2, "int64") == [0xFFFFFFFE, 0xFFFFFFFF]
    assert scalar_words(1 / 3, "float64") == list(np.array([1 / 3]).view(np.uint32))
    assert scalar_words(0.0, "bool") == [0] and scalar_words(5, "bool") == [1]


def test_copy_strided_casts(backend: WebGpuBackend) -> None:
    rng = np.random.default_rng(8)
    f = (rng.standard_normal(256) * 100).astype(np.float32)
    f[::9] = 0.0
    cases = [
        (f, np.zeros(256, np.int32)),  # truncation toward zero
        (f, np.zeros(256, bool)),
        (f.astype(bool), np.zeros(256, np.float32)),
        (rng.integers(-128, 128, 256).astype(np.int8), np.zeros(256, np.float16)),
        ((f.astype(np.float64) / 3), np.zeros(256, np.float32)),
        (rng.integers(0, 65536, 256).astype(np.uint16), np.zeros(256, np.int16)),  # wraps
        (rng.integers(-(2**60), 2**60, 256, dtype=np.int64), np.zeros(256, np.int8)),  # wraps
        (f.astype(np.float16), np.zeros(256, np.float64)),
        (rng.integers(0, 2**32, 256, dtype=np.uint64).astype(np.uint32), np.zeros(256, np.uint8)),
    ]
    for src, dst in cases:
        case = Case(backend)
        ps, pd = case.array(src), case.array(dst)
        copy_strided(backend, ArrayOperand(ps, src.dtype.name, (1,)), ArrayOperand(pd, dst.dtype.name, (1,)), [256])
        np.testing.assert_array_equal(case.read(pd, dst), src.astype(dst.dtype), err_msg=f"{src.dtype}->{dst.dtype}")
        case.close()


def test_grid_beyond_65535_workgroups(backend: WebGpuBackend) -> None:
    """n > 65535 * 256 elements with one invocation per element (a reversed packed output takes
    the atomic store): the grid is folded over two dimensions."""
    n = 65535 * 256 + 1000
    x = (np.arange(n, dtype=np.uint32) * 2654435761 >> 24).astype(np.uint8)
    src = put(backend, x)
    dst = backend.alloc(n)
    elementwise(backend, "(x0 ^ 90u)", "u32", [ArrayOperand(src, "uint8", (1,))], ["u32"],
                ArrayOperand(dst + n - 1, "uint8", (-1,)), [n])
    got = get(backend, dst, np.uint8, n)
    np.testing.assert_array_equal(got, (x ^ 90)[::-1])
    backend.free(src)
    backend.free(dst)


class NoFeatures:
    """A backend view without the 64-bit features (delegates everything else)."""

    def __init__(self, real: WebGpuBackend) -> None:
        self.real = real

    def supports(self, feature):
        return feature is None

    def __getattr__(self, name):
        return getattr(self.real, name)


def test_generic_errors(backend: WebGpuBackend) -> None:
    ctx = backend.context
    p = backend.alloc(64)
    freed = backend.alloc(4)
    backend.free(freed)
    f32 = lambda ptr, strides=(1,): ArrayOperand(ptr, "float32", strides)  # noqa: E731
    before = ctx.stats["dispatches"]
    bad = [
        (INVALID, lambda: elementwise(backend, "x0", "f32", [f32(p)], ["f32"], (p, "float32", (1,)), [4])),
        (INVALID, lambda: elementwise(backend, "x0", "f32", [p], ["f32"], f32(p), [4])),
        (INVALID, lambda: elementwise(backend, "x0", "f32", [f32(p)], [], f32(p), [4])),
        (INVALID, lambda: elementwise(backend, "x0", "f32", [f32(p)], ["f32"], f32(p), [-4])),
        (INVALID, lambda: elementwise(backend, "x0", "f32", [f32(p)], ["f32"], f32(p), [4.0])),
        (INVALID, lambda: elementwise(backend, "x0", "f32", [f32(p, (1, 1))], ["f32"], f32(p), [4])),
        (INVALID, lambda: elementwise(backend, "x0", "f32", [ArrayOperand(p, "float128", (1,))], ["f32"], f32(p), [4])),
        (INVALID, lambda: elementwise(backend, "x0", "f32", [ScalarOperand(1, "float128")], ["f32"], f32(p), [4])),
        (INVALID, lambda: elementwise(backend, "x0", "f32", [f32(p)], ["f32"], f32(p), [17])),  # past the end
        (INVALID, lambda: elementwise(backend, "x0", "f32", [f32(p, (2,))], ["f32"], f32(p), [9])),
        (INVALID, lambda: elementwise(backend, "x0", "f32", [f32(p + 8, (-1,))], ["f32"], f32(p), [4])),  # before the start
        (INVALID, lambda: elementwise(backend, "x0", "f32", [f32(p + 2)], ["f32"], f32(p), [4])),  # misaligned
        (INVALID, lambda: elementwise(backend, "x0", "f32", [f32(p)], ["f32"], ArrayOperand(p + 4, "float64", (1,)), [2])),
        (INVALID, lambda: elementwise(backend, "x0", "f32", [f32(freed)], ["f32"], f32(p), [1])),
        (INVALID, lambda: elementwise(backend, "x0", "f32", [f32(p)], ["f32"], f32(freed), [1])),
        (BackendErrorKind.UNSUPPORTED, lambda: elementwise(NoFeatures(backend), "x0", "f32",
                                                           [ArrayOperand(p, "float64", (1,))], ["f32"], f32(p), [4])),
        (BackendErrorKind.UNSUPPORTED, lambda: elementwise(NoFeatures(backend), "x0", "f32",
                                                           [ScalarOperand(1, "int64")], ["f32"], f32(p), [4])),
        (BackendErrorKind.UNSUPPORTED, lambda: elementwise(NoFeatures(backend), "f32(x0)", "f32",
                                                           [f32(p)], ["i64"], f32(p), [4])),
    ]
    for kind, call in bad:
        with raises_kind(kind):
            call()
    assert ctx.stats["dispatches"] == before
    # empty iteration spaces record nothing
    elementwise(backend, "x0", "f32", [f32(p, (5, 1))], ["f32"], f32(p, (5, 1)), [0, 5])
    elementwise(backend, "x0", "f32", [f32(p, (1, 1))], ["f32"], f32(p, (1, 1)), [3, 0])
    assert ctx.stats["dispatches"] == before
    backend.free(p)


def test_merge_dims_and_plan_chunks() -> None:
    shape, strides = ew.merge_dims([2, 3, 4], [[12, 4, 1], [0, 0, 1], [12, 4, 1]])
    assert shape == [6, 4] and strides == [[4, 1], [0, 1], [4, 1]]
    assert ew.merge_dims([1, 1], [[5, 7]]) == ([1], [[1]])
    assert ew.merge_dims([3, 1, 5], [[5, 99, 1]]) == ([15], [[1]])
    assert ew.merge_dims([4, 5], [[-5, -1]]) == ([20], [[-1]])
    chunks = ew.plan_chunks([100], [[1], [-1]], [4, 4], 64)
    assert sum(c[0][0] for c in chunks) == 100 and all(c[0][0] <= 16 for c in chunks)
    assert [c[1] for c in chunks[:2]] == [[0, 0], [16, -16]]
    chunks = ew.plan_chunks([3, 100], [[100, 1], [0, 1]], [4, 4], 200)
    total = sum(c[0][0] * c[0][1] for c in chunks)
    assert total == 300 and all(c[0][1] * 4 <= 200 for c in chunks)


# ---- property test: random layouts and dtypes through the generic path -------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@st.composite
def view_layout(draw, shape: tuple[int, ...], broadcast: bool):
    """(base length, offset, strides) of a view of ``shape`` inside a dense base array: axes
    permuted, stepped, flipped, shifted; inputs may also broadcast (stride 0) along any axis.
    Distinct indices never alias unless broadcast."""
    ndim = len(shape)
    perm = draw(st.permutations(range(ndim)))
    steps = [draw(st.integers(1, 2)) for _ in range(ndim)]
    ext = [shape[d] * steps[d] for d in range(ndim)]
    dense = [0] * ndim
    acc = 1
    for d in reversed(perm):
        dense[d] = acc
        acc *= ext[d]
    lead = draw(st.integers(0, 3))
    offset, strides = lead, []
    for d in range(ndim):
        s = dense[d] * steps[d]
        if broadcast and draw(st.integers(0, 4)) == 0:
            s = 0
        elif draw(st.booleans()):
            offset += (shape[d] - 1) * s
            s = -s
        strides.append(s)
    return lead + acc + draw(st.integers(0, 3)), offset, tuple(strides)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_random_views_and_casts(backend: WebGpuBackend, data) -> None:
    shape = tuple(data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=3), label="shape"))
    src_dtype = data.draw(st.sampled_from(ALL_DTYPES), label="src")
    dst_dtype = data.draw(st.sampled_from(ALL_DTYPES), label="dst")
    n_src, src_off, src_strides = data.draw(view_layout(shape, True), label="src layout")
    n_dst, dst_off, dst_strides = data.draw(view_layout(shape, False), label="dst layout")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    src = rng.integers(0, 101, n_src).astype(src_dtype)  # representable in every dtype
    dst = _values(dst_dtype, n_dst, rng)
    compute = STORAGE_TYPES[dst_dtype].compute
    run_generic(backend, "x0", compute, [(src, src_off, src_strides)], [compute], dst, dst_off, dst_strides,
                shape, lambda v: v.astype(dst_dtype))


@pytest.mark.parametrize("src_off, dst_off, nbytes", [(0, 0, 4096), (4, 260, 1000), (12, 0, 4), (256, 16, 65536 + 12)])
def test_copy_dtod_kernel_path(backend, monkeypatch, src_off, dst_off, nbytes):
    """GPUs copy aligned ranges with the elementwise copy kernel (software adapters use the
    copy command): force the GPU choice and check every byte, and that nothing else moved."""
    monkeypatch.setattr(type(backend.context), "is_software", property(lambda self: False))
    size = 70000
    rng = np.random.default_rng(5)
    host_src = rng.integers(0, 256, size, dtype=np.uint8)
    host_dst = rng.integers(0, 256, size, dtype=np.uint8)
    ps, pd = backend.alloc(size), backend.alloc(size)
    try:
        backend.copy_htod(ps, host_src)
        backend.copy_htod(pd, host_dst)
        before = backend.context.stats["dispatches"]
        backend.copy_dtod(pd + dst_off, ps + src_off, nbytes)
        assert backend.context.stats["dispatches"] > before
        out = np.empty(size, np.uint8)
        backend.copy_dtoh(out, pd)
        expect = host_dst.copy()
        expect[dst_off:dst_off + nbytes] = host_src[src_off:src_off + nbytes]
        np.testing.assert_array_equal(out, expect)
    finally:
        backend.free(ps)
        backend.free(pd)


@pytest.mark.parametrize("nbytes", [4096, 4096 + 6])
def test_zeroed_alloc_kernel_path(backend, monkeypatch, nbytes):
    """GPUs zero a reused pool block with the fill kernel (sizes a multiple of 4; others and
    software adapters use the clear command): force the GPU choice, dirty a block, reuse it."""
    from gputensor._backend import webgpu

    monkeypatch.setattr(type(backend.context), "is_software", property(lambda self: False))
    monkeypatch.setattr(webgpu, "KERNEL_FILL_MIN", 256)
    junk = np.full(nbytes, 0xAB, np.uint8)
    p = backend.alloc(nbytes, zero=False)
    backend.copy_htod(p, junk)
    backend.free(p)
    before = backend.context.stats["dispatches"]
    q = backend.alloc(nbytes)  # the same bin: the dirty block comes back
    assert (backend.context.stats["dispatches"] > before) == (nbytes % 4 == 0)
    out = np.empty(nbytes, np.uint8)
    backend.copy_dtoh(out, q)
    backend.free(q)
    np.testing.assert_array_equal(out, np.zeros(nbytes, np.uint8))
