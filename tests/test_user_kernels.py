"""User kernels in WGSL (gputensor.ElementwiseKernel, gputensor.RawKernel) against NumPy:
placeholders, several outputs, scalars, broadcasting, strided/negative-step views, packed dtypes,
explicit outputs and in-place calls, raw inputs, splitting over binding windows, caching, compile
errors with user-relative line numbers; raw kernels with 2-D/3-D grids, params, staging of
non-contiguous or misaligned arrays, and every error path."""

from __future__ import annotations

import numpy as np
import pytest
from _compare import assert_close
from _compare import tol
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gputensor as gt
from gputensor._backend import get_backend


@pytest.fixture(scope="module")
def backend():
    return get_backend()


def compiled(backend) -> int:
    return backend.context.stats["pipelines_compiled"]


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


SQUARED_DIFF = gt.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y);", "squared_diff")


# ---------------------------------------------------------------------------------------------
# ElementwiseKernel: basics
# ---------------------------------------------------------------------------------------------
def test_cupy_example_broadcast_and_scalar() -> None:
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    y = np.arange(5, dtype=np.float32)
    k = gt.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = (x - y) * (x - y);", "squared_diff")
    np.testing.assert_array_equal(gt.asnumpy(k(gt.asarray(x), gt.asarray(y))), (x - y) ** 2)
    np.testing.assert_array_equal(gt.asnumpy(k(gt.asarray(x), 5)), (x - 5) ** 2)
    np.testing.assert_array_equal(gt.asnumpy(k(5.5, gt.asarray(y))), ((5.5 - y) ** 2).astype(np.float32))


# (a user kernel's WGSL operators need native 64-bit integers: int64 emulated as two words has none)
_NATIVE_INT64 = pytest.mark.requires("shader-int64")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", pytest.param("int64", marks=_NATIVE_INT64),
                                   "int8", "uint8", "int16", "uint16", "uint32",
                                   pytest.param("uint64", marks=_NATIVE_INT64)])
def test_placeholder_binds_array_dtype(dtype: str) -> None:
    g = rng(1)
    if dtype.startswith("float"):
        x, y = g.standard_normal((3, 7)).astype(dtype), g.standard_normal(7).astype(dtype)
    else:
        info = np.iinfo(dtype)
        lo, hi = max(info.min, -50), min(info.max, 50)
        x, y = g.integers(lo, hi, (3, 7)).astype(dtype), g.integers(lo, hi, 7).astype(dtype)
    z = SQUARED_DIFF(gt.asarray(x), gt.asarray(y))
    assert z.dtype == getattr(gt, dtype) and z.shape == (3, 7)
    with np.errstate(over="ignore"):
        if dtype == "float16":  # computed in f32, rounded once
            expected = ((x.astype(np.float32) - y) ** 2).astype(np.float16)
        else:
            expected = (x - y) * (x - y)
    assert_close(gt.asnumpy(z), expected, dtype)


def test_placeholder_from_scalars_and_output() -> None:
    k = gt.ElementwiseKernel("T x, T y", "T z", "z = x + y;", "add_t")
    # only Python scalars: the default dtype of their kind (float beats int)
    z = k(1, 2.5, size=4)
    assert z.dtype == gt.float32
    np.testing.assert_array_equal(gt.asnumpy(z), np.full(4, 3.5, np.float32))
    z = k(1, 2, size=3)
    assert z.dtype == gt.__array_namespace_info__().default_dtypes()["integral"]
    np.testing.assert_array_equal(gt.asnumpy(z), [3, 3, 3])
    # a NumPy scalar binds its own dtype
    z = k(np.float64(0.25), 2, size=2)
    assert z.dtype == gt.float64
    # the output binds T when passed
    out = gt.zeros(5, dtype=gt.int16)
    r = k(3, 4, out)
    assert r is out and out.dtype == gt.int16
    np.testing.assert_array_equal(gt.asnumpy(out), np.full(5, 7, np.int16))


def test_placeholder_errors() -> None:
    a32 = gt.asarray(np.ones(3, np.float32))
    a64 = gt.asarray(np.ones(3, np.float64))
    with pytest.raises(TypeError, match="placeholder T"):
        SQUARED_DIFF(a32, a64)
    k = gt.ElementwiseKernel("T x", "U z", "z = U(x);", "needs_out")
    with pytest.raises(TypeError, match="cannot determine the dtype of output z"):
        k(a32)
    out = gt.empty(3, dtype=gt.int32)
    np.testing.assert_array_equal(gt.asnumpy(k(a32, out)), [1, 1, 1])


def test_several_outputs_mixed_dtypes() -> None:
    g = rng(2)
    x = g.standard_normal((4, 6)).astype(np.float32)
    y = g.standard_normal(6).astype(np.float32)
    k = gt.ElementwiseKernel(
        "float32 x, float32 y", "float32 r, float32 phi, bool pos, int32 q",
        """
        let rr = x * x + y * y;
        r = sqrt(rr);
        phi = atan2(y, x);
        pos = x > 0.0 && y > 0.0;
        if (rr > 1.0) {
            q = i32(i);
        } else {
            q = -1;
        }
        """,
        "polar",
    )
    r, phi, pos, q = k(gt.asarray(x), gt.asarray(y))
    rr = x.astype(np.float64) ** 2 + y.astype(np.float64) ** 2
    assert_close(gt.asnumpy(r), np.sqrt(rr), "float32", "transcendental")
    np.testing.assert_allclose(gt.asnumpy(phi), np.arctan2(y, x), **tol("float32", "user_atan2"))
    np.testing.assert_array_equal(gt.asnumpy(pos), (x > 0) & (y > 0))
    np.testing.assert_array_equal(gt.asnumpy(q), np.where(rr > 1, np.arange(24).reshape(4, 6), -1))


def test_index_and_size_and_return_options() -> None:
    k = gt.ElementwiseKernel("", "uint32 z, float32 f", "z = i * 2u + n;\nf = f32(i) / f32(n);", "iota",
                             return_tuple=True)
    z, f = k(size=7)
    np.testing.assert_array_equal(gt.asnumpy(z), np.arange(7) * 2 + 7)
    np.testing.assert_allclose(gt.asnumpy(f), np.arange(7) / 7, **tol("float32", "elementwise"))
    one = gt.ElementwiseKernel("float32 x", "float32 z", "z = x;", "copy1", return_tuple=True)
    (c,) = one(gt.asarray(np.ones(2, np.float32)))
    assert c.shape == (2,)
    none = gt.ElementwiseKernel("float32 x", "float32 z", "z = x;", "copy2", no_return=True)
    out = gt.zeros(2, dtype=gt.float32)
    assert none(gt.asarray(np.full(2, 4, np.float32)), out) is None
    np.testing.assert_array_equal(gt.asnumpy(out), [4, 4])


def test_zero_d_and_empty() -> None:
    z = SQUARED_DIFF(gt.asarray(np.float32(3)), gt.asarray(np.float32(1)))
    assert z.shape == () and float(z) == 4.0
    e = SQUARED_DIFF(gt.asarray(np.zeros((0, 3), np.float32)), gt.asarray(np.ones(3, np.float32)))
    assert e.shape == (0, 3) and e.dtype == gt.float32
    k = gt.ElementwiseKernel("", "int32 z", "z = 1;", "one")
    assert k(size=0).shape == (0,)


def test_preamble_functions_and_library() -> None:
    k = gt.ElementwiseKernel(
        "float64 x", "float64 y, float32 s",
        "y = exp_f64(x) + twice(x);\ns = sq(f32(x));",
        "with_preamble",
        preamble="fn twice(v: f64) -> f64 { return 2.0 * v; }\nfn sq(v: f32) -> f32 { return v * v; }",
    )
    x = np.linspace(-3, 3, 11)
    y, s = k(gt.asarray(x))
    assert_close(gt.asnumpy(y), np.exp(x) + 2 * x, "float64", "transcendental")
    assert_close(gt.asnumpy(s), x.astype(np.float32) ** 2, "float32")


# ---------------------------------------------------------------------------------------------
# layouts: strided, negative steps, broadcasting, packed dtypes
# ---------------------------------------------------------------------------------------------
def test_strided_and_negative_step_inputs() -> None:
    g = rng(3)
    base = g.standard_normal((9, 12)).astype(np.float32)
    other = g.standard_normal((12, 4)).astype(np.float32)
    a, b = gt.asarray(base), gt.asarray(other)
    xa, xb = a[::-2, 1::3], b[::-3, ::-1].mT  # (5, 4) and (4, 4) -> broadcast needs (5,4)+(4,) shapes
    xb = xb[0]
    z = SQUARED_DIFF(xa, xb)
    np.testing.assert_array_equal(gt.asnumpy(z), (base[::-2, 1::3] - other[::-3, ::-1].T[0]) ** 2)


def test_packed_inputs_and_outputs() -> None:
    g = rng(4)
    x8 = g.integers(-128, 127, (5, 7)).astype(np.int8)
    u16 = g.integers(0, 65535, 7).astype(np.uint16)
    h = g.standard_normal((5, 7)).astype(np.float16)
    k = gt.ElementwiseKernel(
        "int8 a, uint16 b, float16 h",
        "int8 wrapped, bool odd, float16 half, uint8 low, int16 mix",
        """
        wrapped = a * 3 + 1;
        odd = (b & 1u) == 1u;
        half = h * 0.5 + f32(a);
        low = b;
        mix = i32(b) - a * 100;
        """,
        "packed",
    )
    wrapped, odd, half, low, mix = k(gt.asarray(x8), gt.asarray(u16), gt.asarray(h))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(gt.asnumpy(wrapped), (x8.astype(np.int32) * 3 + 1).astype(np.int8))
        np.testing.assert_array_equal(gt.asnumpy(odd), np.broadcast_to(u16 % 2 == 1, (5, 7)))
        np.testing.assert_array_equal(gt.asnumpy(half),
                                      (h.astype(np.float32) * 0.5 + x8).astype(np.float16))
        np.testing.assert_array_equal(gt.asnumpy(low), np.broadcast_to(u16.astype(np.uint8), (5, 7)))
        np.testing.assert_array_equal(gt.asnumpy(mix),
                                      (u16.astype(np.int32) - x8.astype(np.int32) * 100).astype(np.int16))


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "float16", "float32"])
def test_strided_explicit_outputs_leave_neighbours(dtype: str) -> None:
    """Writing every other element (negative step) of a packed output keeps the other lanes."""
    k = gt.ElementwiseKernel("int32 x", "T z", "z = T(x % 2 == 0);" if dtype == "bool" else "z = T(x);",
                             "store_t")
    host = np.zeros(22, dtype) if dtype != "bool" else np.zeros(22, bool)
    host[:] = 1
    buf = gt.asarray(host)
    view = buf[::-2][:9]  # elements 21, 19, ..., 5
    x = np.arange(9, dtype=np.int32) + 2
    k(gt.asarray(x), view)
    expected = host.copy()
    expected[::-2][:9] = (x % 2 == 0) if dtype == "bool" else x.astype(dtype)
    np.testing.assert_array_equal(gt.asnumpy(buf), expected)


@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=5),
       dtype=st.sampled_from(["float32", "int32", "int8", "float16", "uint8"]),
       flip=st.booleans(), seed=st.integers(0, 2**16))
@settings(deadline=None)
def test_hypothesis_broadcast_against_numpy(shapes, dtype: str, flip: bool, seed: int) -> None:
    (s1, s2), result = shapes.input_shapes, shapes.result_shape
    g = rng(seed)
    k = gt.ElementwiseKernel("T x, T y", "T z, T w", "z = x * y + x;\nw = max(x, y);", "fma_max")

    def make(shape):
        if dtype.startswith("float"):
            return g.standard_normal(shape).astype(dtype)
        return g.integers(0 if dtype[0] == "u" else -20, 20, shape).astype(dtype)

    x, y = make(s1), make(s2)
    gx, gy = gt.asarray(x), gt.asarray(y)
    if flip and x.ndim:
        x, gx = x[::-1], gx[::-1]
    z, w = k(gx, gy)
    assert z.shape == result and w.shape == result
    with np.errstate(over="ignore"):
        if dtype == "float16":
            ez = (x.astype(np.float32) * y + x).astype(np.float16)
        else:
            ez = x * y + x
    # (a GPU compiler may contract x * y + x into one fma: float32 allows for it)
    assert_close(gt.asnumpy(z), ez, dtype, "elementwise_fma" if dtype == "float32" else "arith")
    np.testing.assert_array_equal(gt.asnumpy(w), np.maximum(x, y))


# ---------------------------------------------------------------------------------------------
# explicit outputs, in place, overlap
# ---------------------------------------------------------------------------------------------
def test_given_output_keeps_reference_semantics() -> None:
    acc = gt.ElementwiseKernel("T x", "T z", "z += x;", "accumulate")
    out = gt.asarray(np.arange(6, dtype=np.float32))
    acc(gt.asarray(np.ones(6, np.float32)), out)
    acc(gt.asarray(np.ones(6, np.float32)), out)
    np.testing.assert_array_equal(gt.asnumpy(out), np.arange(6) + 2)
    # packed accumulate (read of the old lane through the atomic binding)
    acc8 = gt.asarray(np.arange(6, dtype=np.int8))
    acc(gt.asarray(np.full(6, 3, np.int8)), acc8)
    np.testing.assert_array_equal(gt.asnumpy(acc8), np.arange(6) + 3)
    # conditional assignment keeps old values where not assigned
    cond = gt.ElementwiseKernel("T x", "T z", "if (x > 2.0) { z = x; }", "cond")
    out = gt.asarray(np.full(5, -1, np.float32))
    cond(gt.asarray(np.arange(5, dtype=np.float32)), out)
    np.testing.assert_array_equal(gt.asnumpy(out), [-1, -1, -1, 3, 4])


def test_first_write_analysis() -> None:
    from gputensor._elementwise_kernel import _first_write_only

    assert _first_write_only("z = x * y + 1.0;", "z")
    assert _first_write_only("let d = x - y;\nz = d * d;", "z")
    assert not _first_write_only("z += x;", "z")
    assert not _first_write_only("z = z * 2.0;", "z")
    assert not _first_write_only("if (x > 0.0) { z = x; }", "z")
    assert not _first_write_only("let q = 1.0;", "z")
    assert not _first_write_only("if (x > 0.0) { return _Out(1.0); }\nz = x;", "z")
    assert _first_write_only("zz = 1.0;\nz = 2.0; // z += 1", "z")  # `zz` is another name; comments ignored
    assert _first_write_only("w = 1.0; z = w;", "z")


def test_in_place_and_overlapping_inputs() -> None:
    g = rng(5)
    host = g.standard_normal(16).astype(np.float32)
    a = gt.asarray(host)
    # element-for-element in place
    SQUARED_DIFF(a, 1.0, a)
    np.testing.assert_array_equal(gt.asnumpy(a), (host - 1) ** 2)
    # reversed view of the output as input: copied first
    host2 = gt.asnumpy(a)
    SQUARED_DIFF(a[::-1], 0.0, a)
    np.testing.assert_array_equal(gt.asnumpy(a), host2[::-1] ** 2)


def test_output_errors() -> None:
    a = gt.asarray(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match="placeholder T"):
        SQUARED_DIFF(a, a, gt.empty((2, 3), dtype=gt.float64))
    fixed = gt.ElementwiseKernel("float32 x", "float32 z", "z = x;", "fixed_out")
    with pytest.raises(TypeError, match="has dtype float64, expected float32"):
        fixed(a, gt.empty((2, 3), dtype=gt.float64))
    with pytest.raises(ValueError, match="shape"):
        SQUARED_DIFF(a, a, gt.empty((3,), dtype=gt.float32))
    bcast = gt.broadcast_to(gt.zeros(3, dtype=gt.float32), (2, 3))
    with pytest.raises(ValueError, match="broadcast view"):
        SQUARED_DIFF(a, a, bcast)
    two = gt.ElementwiseKernel("T x", "T y, T z", "y = x; z = x;", "two")
    buf = gt.zeros(6, dtype=gt.float32)
    with pytest.raises(ValueError, match="overlap"):
        two(gt.ones(4, dtype=gt.float32), buf[:4], buf[2:])
    with pytest.raises(TypeError, match="must be a gputensor array"):
        SQUARED_DIFF(a, a, np.zeros((2, 3), np.float32))
    # outputs larger than the inputs broadcast to: fine
    out = gt.empty((4, 2, 3), dtype=gt.float32)
    SQUARED_DIFF(a, 0.5, out)
    np.testing.assert_array_equal(gt.asnumpy(out), np.full((4, 2, 3), 0.25, np.float32))


# ---------------------------------------------------------------------------------------------
# argument errors, casts, scalars
# ---------------------------------------------------------------------------------------------
def test_argument_errors_and_casts() -> None:
    a = gt.asarray(np.arange(4, dtype=np.float32))
    with pytest.raises(TypeError, match="takes 2 arguments"):
        SQUARED_DIFF(a)
    with pytest.raises(TypeError, match="must be a gputensor array or a real Python scalar"):
        SQUARED_DIFF(a, np.ones(4, np.float32))
    with pytest.raises(TypeError, match="real Python scalar"):
        SQUARED_DIFF(a, 1j)
    with pytest.raises(ValueError):
        SQUARED_DIFF(a, gt.ones(3, dtype=gt.float32))
    fixed = gt.ElementwiseKernel("int32 x, int8 s", "int32 z", "z = x + s;", "fixed")
    # safe cast of an int8 array into the int32 parameter
    x8 = np.array([-3, 5, 100], np.int8)
    np.testing.assert_array_equal(gt.asnumpy(fixed(gt.asarray(x8), 2)), x8.astype(np.int32) + 2)
    with pytest.raises(TypeError, match="does not cast safely"):
        fixed(gt.asarray(np.ones(3, np.float32)), 1)
    with pytest.raises(OverflowError):
        fixed(gt.asarray(x8), 300)  # scalar out of int8's range
    with pytest.raises(ValueError, match="loop size is undecided"):
        fixed(1, 2)
    with pytest.raises(ValueError, match="size= is only"):
        fixed(gt.asarray(x8), 1, size=3)
    with pytest.raises(ValueError, match="size must be"):
        fixed(1, 1, size=-1)
    # float scalars for an int parameter truncate (NumPy assignment rule)
    np.testing.assert_array_equal(gt.asnumpy(fixed(2.9, 1, size=2)), [3, 3])


def test_definition_errors() -> None:
    with pytest.raises(ValueError, match="cannot parse"):
        gt.ElementwiseKernel("float32", "float32 z", "z = 1.0;")
    with pytest.raises(TypeError, match="not a gputensor dtype"):
        gt.ElementwiseKernel("float128 x", "float32 z", "z = 1.0;")
    with pytest.raises(ValueError, match="reserved"):
        gt.ElementwiseKernel("float32 i", "float32 z", "z = 1.0;")
    with pytest.raises(ValueError, match="reserved"):
        gt.ElementwiseKernel("float32 _x", "float32 z", "z = 1.0;")
    with pytest.raises(ValueError, match="reserved"):
        gt.ElementwiseKernel("P x", "P z", "z = x;")
    with pytest.raises(ValueError, match="duplicate"):
        gt.ElementwiseKernel("float32 x", "float32 x", "x = 1.0;")
    with pytest.raises(ValueError, match="raw outputs"):
        gt.ElementwiseKernel("float32 x", "raw float32 z", "z = 1.0;")
    with pytest.raises(ValueError, match="at least one output"):
        gt.ElementwiseKernel("float32 x", "", "")
    with pytest.raises(ValueError, match="placeholders"):
        gt.ElementwiseKernel("T x, float32 T", "float32 z", "z = 1.0;")
    with pytest.raises(TypeError):
        gt.ElementwiseKernel(["float32 x"], "float32 z", "z = x;")
    with pytest.raises(TypeError):
        gt.ElementwiseKernel("float32 x", "float32 z", 3)


# ---------------------------------------------------------------------------------------------
# raw inputs
# ---------------------------------------------------------------------------------------------
def test_raw_inputs() -> None:
    g = rng(6)
    w = g.standard_normal(10).astype(np.float32)
    x = g.standard_normal(10).astype(np.float32)
    k = gt.ElementwiseKernel("T x, raw T w", "T z", "z = x + w(n - 1u - i) * w(min(i + 1u, n - 1u));", "raw_rev")
    z = k(gt.asarray(x), gt.asarray(w))
    idx = np.minimum(np.arange(10) + 1, 9)
    np.testing.assert_allclose(gt.asnumpy(z), x + w[::-1] * w[idx], **tol("float32", "elementwise"))
    # a non-contiguous raw argument is made contiguous first; a packed raw argument works
    wide = gt.asarray(np.repeat(w, 2))
    np.testing.assert_allclose(gt.asnumpy(k(gt.asarray(x), wide[::2])), x + w[::-1] * w[idx], **tol("float32", "elementwise"))
    lut = np.array([5, -7, 9, 100], np.int8)
    k8 = gt.ElementwiseKernel("uint32 j, raw int8 t", "int32 z", "z = t(j % 4u);", "lut")
    np.testing.assert_array_equal(gt.asnumpy(k8(gt.asarray(np.arange(9, dtype=np.uint32)), gt.asarray(lut))),
                                  lut[np.arange(9) % 4])
    with pytest.raises(TypeError, match="raw argument"):
        k8(gt.asarray(np.arange(3, dtype=np.uint32)), 5)


# ---------------------------------------------------------------------------------------------
# splitting over binding windows
# ---------------------------------------------------------------------------------------------
def test_split_over_windows_keeps_global_index(backend, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tiny window forces many chunks (and in-row splits): `i` must stay global and every
    operand, including packed outputs and raw inputs, must be addressed correctly."""
    monkeypatch.setattr(backend, "max_window_bytes", lambda: 256)
    g = rng(7)
    x = g.standard_normal((13, 70)).astype(np.float32)
    y = g.integers(-100, 100, (70,)).astype(np.int8)
    lut = g.standard_normal(16).astype(np.float32)
    k = gt.ElementwiseKernel("float32 x, int8 y, raw float32 l", "float32 z, int8 q, bool b",
                             "z = x * f32(y) + f32(i) + l(i % 16u);\nq = y + 1;\nb = (i & 1u) == 1u;", "chunks")
    gx = gt.asarray(x)[:, ::-1]
    z, q, b = k(gx, gt.asarray(y), gt.asarray(lut))
    lin = np.arange(13 * 70).reshape(13, 70)
    # x * y + i may be contracted into one fma (NVIDIA does): a rounding of the product's size
    ref = x[:, ::-1] * y + lin.astype(np.float32) + lut[lin % 16]
    np.testing.assert_allclose(gt.asnumpy(z), ref, rtol=tol("float32", "elementwise_fma")["rtol"],
                               atol=tol("float32", "elementwise_fma")["atol"] * np.abs(x[:, ::-1] * y).max())
    np.testing.assert_array_equal(gt.asnumpy(q), np.broadcast_to((y + 1).astype(np.int8), (13, 70)))
    np.testing.assert_array_equal(gt.asnumpy(b), (lin & 1) == 1)


def test_operand_larger_than_a_binding(backend) -> None:
    """A strided view spanning more bytes than one binding window (128 MiB on lavapipe) is split
    into several dispatches without copying; `i` stays global across them."""
    n = backend.max_window_bytes() // 4 + 4096
    big = gt.zeros(n, dtype=gt.float32)
    view = big[:: n // 37]
    m = view.shape[0]
    add_i = gt.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x + y + f32(i);", "add_i")
    shift = gt.asarray(np.full(m, 0.5, np.float32))
    add_i(shift, shift)  # compile outside the count
    before = backend.context.stats["dispatches"]
    add_i(view, shift, view)
    assert backend.context.stats["dispatches"] - before >= 2
    np.testing.assert_array_equal(gt.asnumpy(view), np.arange(m, dtype=np.float32) + 0.5)
    assert float(big[1]) == 0.0 and float(big[n // 37 + 1]) == 0.0


# ---------------------------------------------------------------------------------------------
# caching and compile errors
# ---------------------------------------------------------------------------------------------
def test_compiles_once_per_signature(backend) -> None:
    k = gt.ElementwiseKernel("T x, T y", "T z", "z = x * 2.0 + y; // cache test", "cache_test")
    a = gt.asarray(np.ones(100, np.float32))
    b = gt.asarray(np.ones(100, np.float32))
    start = compiled(backend)
    k(a, b)
    assert compiled(backend) == start + 1
    for _ in range(3):
        k(a, b)
        k(b, a)
    assert compiled(backend) == start + 1
    # the same definition in a new object shares the pipeline
    k2 = gt.ElementwiseKernel("T x, T y", "T z", "z = x * 2.0 + y; // cache test", "cache_test")
    k2(a, b)
    assert compiled(backend) == start + 1
    # another dtype is another pipeline
    k(gt.asarray(np.ones(4, np.float64)), gt.asarray(np.ones(4, np.float64)))
    assert compiled(backend) == start + 2
    # a strided layout is another pipeline, once
    k(a[::2], b[::2])
    k(a[1::2], b[::2])
    assert compiled(backend) == start + 3


def test_compile_error_line_numbers() -> None:
    a = gt.asarray(np.ones(4, np.float32))
    bad = gt.ElementwiseKernel("T x", "T z", "let d = x * 2.0;\nz = d + undefined_thing;", "bad_ident")
    with pytest.raises(gt.KernelCompileError) as info:
        bad(a)
    err = info.value
    assert (err.region, err.line, err.column) == ("operation", 2, 9)
    assert "undefined_thing" in str(err) and "operation line 2" in str(err)
    assert "operation:2:9" in err.compiler_message
    assert "z = d + undefined_thing;" in err.compiler_message
    assert isinstance(err, ValueError) and err.kernel == "bad_ident"
    # a type error on line 3
    typed = gt.ElementwiseKernel("float32 x", "float32 z", "let a = 1;\nlet b = 2u;\nz = x + b;", "bad_type")
    with pytest.raises(gt.KernelCompileError) as info:
        typed(a)
    assert (info.value.region, info.value.line) == ("operation", 3)
    # the preamble's own line numbers
    pre = gt.ElementwiseKernel("float32 x", "float32 z", "z = f(x);", "bad_pre",
                               preamble="fn f(v: f32) -> f32 {\n    return v +;\n}")
    with pytest.raises(gt.KernelCompileError) as info:
        pre(a)
    assert info.value.region == "preamble" and info.value.line == 2
    assert "user_elementwise" in info.value.source or "fn _body" in info.value.source


def test_source_inspection() -> None:
    src = SQUARED_DIFF.source(gt.asarray(np.ones(3, np.float32)), 2.0)
    assert "alias T = f32;" in src and "z = (x - y) * (x - y);" in src
    assert "ElementwiseKernel" in repr(SQUARED_DIFF)


# ---------------------------------------------------------------------------------------------
# RawKernel
# ---------------------------------------------------------------------------------------------
SCALE_2D = """
struct Params { rows: u32, cols: u32, alpha: f32, shift: i32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(8, 8)
fn scale(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < p.cols && g.y < p.rows) {
        let k = g.y * p.cols + g.x;
        y[k] = p.alpha * x[k] + f32(p.shift);
    }
}
"""


def test_raw_kernel_2d_grid_and_params() -> None:
    rows, cols = 19, 30
    x = rng(8).standard_normal((rows, cols)).astype(np.float32)
    gx, gy = gt.asarray(x), gt.zeros((rows, cols), dtype=gt.float32)
    k = gt.RawKernel(SCALE_2D, "scale")
    assert k.workgroup_size == (8, 8, 1)
    k(((cols + 7) // 8, (rows + 7) // 8), (gx, gy), params=(rows, cols, 2.5, -3))
    np.testing.assert_allclose(gt.asnumpy(gy), 2.5 * x - 3, rtol=tol("float32", "elementwise_fma")["rtol"],
                               atol=tol("float32", "elementwise_fma")["atol"] * 2.5 * np.abs(x).max())  # fma
    # CuPy's (grid, block, args) form; params as raw bytes
    raw = np.array([rows, cols], np.uint32).tobytes() + np.array([0.5], np.float32).tobytes() + \
        np.array([1], np.int32).tobytes()
    k(((cols + 7) // 8, (rows + 7) // 8), (8, 8), [gx, gy], params=raw)
    np.testing.assert_allclose(gt.asnumpy(gy), 0.5 * x + 1, **tol("float32", "elementwise"))
    with pytest.raises(ValueError, match="workgroup_size"):
        k((1, 1), (16, 16), (gx, gy), params=raw)


def test_raw_kernel_3d_grid_main_entry_and_packed() -> None:
    src = """
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<storage, read_write> bytes: array<u32>;
@compute @workgroup_size(2, 2, 2)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let nx = nwg.x * 2u;
    let ny = nwg.y * 2u;
    let k = (g.z * ny + g.y) * nx + g.x;
    out[k] = g.x + 100u * g.y + 10000u * g.z;
    if (k < arrayLength(&bytes)) { bytes[k] = 0x04030201u * (k + 1u); }
}
"""
    grid = (3, 2, 4)
    nx, ny, nz = 6, 4, 8
    out = gt.zeros(nx * ny * nz, dtype=gt.uint32)
    packed = gt.zeros(12, dtype=gt.uint8)  # 3 words
    gt.RawKernel(src)(grid, (out, packed))
    gz, gy, gx_ = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
    np.testing.assert_array_equal(gt.asnumpy(out), (gx_ + 100 * gy + 10000 * gz).reshape(-1))
    words = (np.uint32(0x04030201) * np.arange(1, 4, dtype=np.uint32)).astype(np.uint32)
    np.testing.assert_array_equal(gt.asnumpy(packed), words.view(np.uint8))


def test_raw_kernel_stages_strided_and_misaligned_arrays() -> None:
    src = """
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
@compute @workgroup_size(64)
fn double_it(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < arrayLength(&a)) { a[g.x] = 2.0 * a[g.x]; }
}
"""
    k = gt.RawKernel(src, "double_it")
    host = np.arange(40, dtype=np.float32)
    a = gt.asarray(host)
    k(1, [a[::3]])  # strided: staged through a contiguous temporary and copied back
    expected = host.copy()
    expected[::3] *= 2
    np.testing.assert_array_equal(gt.asnumpy(a), expected)
    k(1, [a[1:5]])  # contiguous but at a 4-byte offset: not aligned for a binding
    expected[1:5] *= 2
    np.testing.assert_array_equal(gt.asnumpy(a), expected)
    k(0, [a])  # an empty grid runs nothing
    np.testing.assert_array_equal(gt.asnumpy(a), expected)


def test_raw_kernel_errors(backend) -> None:
    a = gt.zeros(4, dtype=gt.float32)
    k = gt.RawKernel(SCALE_2D, "scale")
    with pytest.raises(ValueError, match="grid"):
        k((1, 1, 1, 1), (a, a))
    with pytest.raises(ValueError, match="grid"):
        k(-1, (a, a))
    with pytest.raises(ValueError, match="grid"):
        k(backend.context.max_workgroups_per_dim + 1, (a, a))
    with pytest.raises(ValueError, match="grid"):
        k(1.5, (a, a))
    with pytest.raises(TypeError, match="args"):
        k(1, a)
    with pytest.raises(TypeError, match=r"args\[1\]"):
        k(1, (a, np.zeros(4, np.float32)))
    with pytest.raises(TypeError, match="k\\(grid, args\\)"):
        k(1)
    with pytest.raises(TypeError, match="params"):
        k(1, (a, a), params="abc")
    with pytest.raises(TypeError, match=r"params\[0\]"):
        k(1, (a, a), params=[None])
    with pytest.raises(ValueError, match="32 bits"):
        k(1, (a, a), params=[1 << 40])
    with pytest.raises(ValueError, match="bytes"):
        k(1, (a, a), params=bytes(1 << 17))
    with pytest.raises(ValueError, match="exactly once"):
        gt.RawKernel(SCALE_2D, "nope")
    with pytest.raises(ValueError, match="another function named `main`"):
        gt.RawKernel(SCALE_2D + "\nfn main() {}\n", "scale")
    with pytest.raises(ValueError, match="not a valid"):
        gt.RawKernel(SCALE_2D, "1x")
    with pytest.raises(TypeError):
        gt.RawKernel(b"code")
    # wrong number of arrays for the shader's bindings: TypeError naming them
    with pytest.raises(TypeError, match=r"takes 2 arrays .*binding 2 \(`y`"):
        k(1, (a,), params=(1, 1, 1.0, 0))
    # 8-byte NumPy scalars become two words; other NumPy scalars are refused
    from gputensor._raw_kernel import _pack_params

    assert _pack_params([np.float64(1.0), np.int32(-1), True, -2, 0.5]) == (
        np.float64(1.0).tobytes() + np.int32(-1).tobytes() + (1).to_bytes(4, "little")
        + (2**32 - 2).to_bytes(4, "little") + np.float32(0.5).tobytes())
    with pytest.raises(TypeError):
        _pack_params([np.int8(1)])


def test_raw_kernel_compile_error_and_cache(backend) -> None:
    src = """
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    a[g.x] = a[g.x] + nothing_here;
}
"""
    with pytest.raises(gt.KernelCompileError) as info:
        gt.RawKernel(src)(1, [gt.zeros(64, dtype=gt.float32)])
    assert (info.value.region, info.value.line, info.value.column) == ("source", 5, 23)
    assert "nothing_here" in str(info.value)
    good = src.replace("nothing_here", "1.0")
    start = compiled(backend)
    a = gt.zeros(64, dtype=gt.float32)
    for _ in range(3):
        gt.RawKernel(good)(1, [a])
    assert compiled(backend) == start + 1
    np.testing.assert_array_equal(gt.asnumpy(a), np.full(64, 3, np.float32))


def test_dtype_the_device_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A dtype whose adapter feature is missing raises TypeError naming the feature."""
    from gputensor import _runtime

    a64 = gt.asarray(np.ones(3, np.float64))
    features = _runtime.adapter_features() - {"shader-f64"}
    monkeypatch.setattr(_runtime, "adapter_features", lambda: features)
    with pytest.raises(TypeError, match="shader-f64"):
        SQUARED_DIFF(a64, a64)
    k = gt.ElementwiseKernel("float32 x", "float64 z", "z = f64(x);", "to_f64")
    with pytest.raises(TypeError, match="shader-f64"):
        k(gt.asarray(np.ones(2, np.float32)))


# ---- RawKernel: the bindings the shader declares -----------------------------------------------
AXPY_ANY = """
struct P { n: u32, a: f32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;   // an input at binding 0
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@binding(2) @group(0) var<uniform> p: P;
// @group(0) @binding(9) var<storage, read> commented_out: array<f32>;
@compute @workgroup_size(64)
fn axpy(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < p.n) { y[g.x] = p.a * x[g.x] + y[g.x]; }
}
"""


def test_raw_kernel_reads_its_bindings() -> None:
    """Any binding numbers, `read` access and the uniform anywhere: arguments by position (the
    storage bindings, params=; or every binding, the uniform's entry its params) or by binding
    number or name."""
    k = gt.RawKernel(AXPY_ANY, "axpy")
    assert [(b.number, b.space, b.access, b.name) for b in k.bindings] == [
        (0, "storage", "read", "x"), (1, "storage", "read_write", "y"), (2, "uniform", "", "p")]
    xn = np.arange(100, dtype=np.float32)
    x = gt.asarray(xn)
    y = gt.ones(100, dtype=gt.float32)
    k(2, (x, y), params=(100, 2.0))
    expect = 2 * xn + 1
    np.testing.assert_array_equal(gt.asnumpy(y), expect)
    k(2, (x, y, (100, 1.0)))  # every binding in order: the uniform's entry is its params
    expect = expect + xn
    np.testing.assert_array_equal(gt.asnumpy(y), expect)
    k(2, {1: y, 0: x, 2: (50, 1.0)})  # by binding number
    expect[:50] += xn[:50]
    np.testing.assert_array_equal(gt.asnumpy(y), expect)
    k(2, {"x": x, "y": y}, params=(100, -1.0))  # by variable name
    np.testing.assert_array_equal(gt.asnumpy(y), expect - xn)


def test_raw_kernel_sparse_numbers_default_access_and_packed() -> None:
    src = """
@group(0) @binding(7) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<storage> src: array<u32>;
@compute @workgroup_size(4)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    out[g.x] = src[g.x] + 0x01010101u;
}
"""
    k = gt.RawKernel(src)
    assert [b.number for b in k.bindings] == [3, 7]
    src_bytes = gt.asarray(np.arange(8, dtype=np.int8))  # packed bytes bind as array<u32>
    out = gt.zeros(8, dtype=gt.uint8)
    k(1, (src_bytes, out))  # binding order: 3 then 7
    np.testing.assert_array_equal(gt.asnumpy(out), np.arange(1, 9, dtype=np.uint8))


def test_raw_kernel_binding_errors_name_the_binding() -> None:
    k = gt.RawKernel(AXPY_ANY, "axpy")
    x = gt.zeros(8, dtype=gt.float32)
    with pytest.raises(TypeError, match=r"takes 2 arrays.*3 given"):
        k(1, (x, x, x), params=(8, 1.0))  # more arrays than the shader declares
    with pytest.raises(TypeError, match=r"takes 2 arrays.*1 given"):
        k(1, (x,), params=(8, 1.0))
    with pytest.raises(TypeError, match=r"binding 1 \(`y`.*cannot take a int32"):
        k(1, (x, gt.zeros(8, dtype=gt.int32)), params=(8, 1.0))
    with pytest.raises(TypeError, match=r"binding 2 \(`p`.*needs params"):
        k(1, (x, x))
    with pytest.raises(TypeError, match="no binding 5"):
        k(1, {0: x, 1: x, 5: x}, params=(8, 1.0))
    with pytest.raises(TypeError, match=r"no array for binding 1"):
        k(1, {0: x}, params=(8, 1.0))
    with pytest.raises(TypeError, match="given twice"):
        k(1, {0: x, 1: x, 2: (8, 1.0)}, params=(8, 1.0))
    plain = gt.RawKernel("@group(0) @binding(0) var<storage, read_write> a: array<f32>;\n"
                         "@compute @workgroup_size(1) fn main() { a[0] = 1.0; }")
    with pytest.raises(TypeError, match="no var<uniform>"):
        plain(1, (x,), params=(1,))
    with pytest.raises(TypeError, match=r"binding 0 .*cannot take a uint8"):
        plain(1, (gt.zeros(4, dtype=gt.uint8),))
    with pytest.raises(ValueError, match=r"@group\(1\)"):
        gt.RawKernel("@group(1) @binding(0) var<storage, read_write> a: array<f32>;\n"
                     "@compute @workgroup_size(1) fn main() { a[0] = 1.0; }")
    with pytest.raises(ValueError, match="at most one var<uniform>"):
        gt.RawKernel("@group(0) @binding(0) var<uniform> a: vec4<f32>;\n"
                     "@group(0) @binding(1) var<uniform> b: vec4<f32>;\n"
                     "@compute @workgroup_size(1) fn main() { }")
    with pytest.raises(ValueError, match="textures"):
        gt.RawKernel("@group(0) @binding(0) var t: texture_2d<f32>;\n"
                     "@compute @workgroup_size(1) fn main() { }")
    with pytest.raises(ValueError, match="used twice"):
        gt.RawKernel("@group(0) @binding(0) var<storage, read_write> a: array<f32>;\n"
                     "@group(0) @binding(0) var<storage, read_write> b: array<f32>;\n"
                     "@compute @workgroup_size(1) fn main() { }")


def test_raw_kernel_vector_and_struct_elements() -> None:
    src = """
struct Pair { a: f32, b: f32 }
@group(0) @binding(0) var<storage, read> v: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> pairs: array<Pair>;
@group(0) @binding(2) var<storage, read_write> out: array<vec2f>;
@compute @workgroup_size(1)
fn main() {
    out[0] = vec2f(v[0].x + v[0].w, pairs[1].a + pairs[1].b);
}
"""
    k = gt.RawKernel(src)
    v = gt.asarray(np.array([1, 2, 3, 4], np.float32))
    pairs = gt.asarray(np.array([0, 0, 5, 6], np.float32))
    out = gt.zeros(2, dtype=gt.float32)
    k(1, (v, pairs, out))
    np.testing.assert_array_equal(gt.asnumpy(out), np.array([5, 11], np.float32))
    with pytest.raises(TypeError, match=r"binding 0 .*vec4<f32>.*cannot take a int32"):
        k(1, (gt.zeros(4, dtype=gt.int32), pairs, out))
    k(1, (v, gt.zeros(4, dtype=gt.int32), out))  # an array of structs takes any dtype
