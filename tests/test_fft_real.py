"""gputensor.fft's real transforms and helpers against numpy.fft: rfft, irfft, rfftn, irfftn,
hfft, ihfft, fftfreq, rfftfreq, fftshift, ifftshift.

Transform results are compared with NumPy's in the max norm relative to the largest value
(an FFT's error is of order eps * log n of the signal's scale, not of each output's), with
float32 input giving complex64 and float64 complex128 (the spec's dtypes; NumPy computes in
double). Lengths cover the paths: even (the half-length complex trick), odd and prime (the
full-length complex transform), 1 and 2 (the smallest cases of each).
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gputensor as gt
import gputensor.fft as gfft
from gputensor._backend import config, get_backend

from _compare import gpu, to_numpy
from _compare import tol

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the benchmarks package lives beside gputensor, not inside it
    sys.path.insert(0, str(ROOT))

from benchmarks import bench_fft  # noqa: E402

DTYPES = ("float32", "float64")
COMPLEX_OF = {"float32": "complex64", "float64": "complex128"}
EPS = {"float32": 2.0 ** -23, "float64": 2.0 ** -52}
NORMS = ("backward", "ortho", "forward")
LENGTHS = (1, 2, 3, 8, 12, 17, 97, 128, 1009)


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _real(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def _complex(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(COMPLEX_OF[dtype])


def _check(actual: gt.GpuArray, expected: np.ndarray, dtype: str, n: int) -> None:
    """``actual`` has ``expected``'s shape, the dtype of ``dtype``'s precision (real or
    complex as ``expected``) and values within ``40 eps log2(n)`` of its largest magnitude."""
    got = to_numpy(actual)
    assert got.shape == expected.shape
    want = COMPLEX_OF[dtype] if np.iscomplexobj(expected) else dtype
    assert got.dtype == np.dtype(want), (got.dtype, want)
    if expected.size == 0:
        return
    scale = max(float(np.max(np.abs(expected))), 1e-30)
    err = float(np.max(np.abs(got - expected))) / scale
    assert err <= 40 * EPS[dtype] * max(1.0, math.log2(max(n, 2))), err


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", LENGTHS)
def test_rfft_ihfft_lengths(dtype: str, n: int) -> None:
    x = _real(_rng(n), (3, n), dtype)
    g = gpu(x)
    for norm in NORMS:
        _check(gfft.rfft(g, norm=norm), np.fft.rfft(x, norm=norm), dtype, n)
        _check(gfft.ihfft(g, norm=norm), np.fft.ihfft(x, norm=norm), dtype, n)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", LENGTHS)
def test_irfft_hfft_lengths(dtype: str, n: int) -> None:
    c = _complex(_rng(n + 1), (2, n // 2 + 1), dtype)
    g = gpu(c)
    for norm in NORMS:
        _check(gfft.irfft(g, n=n, norm=norm), np.fft.irfft(c, n=n, norm=norm), dtype, n)
        _check(gfft.hfft(g, n=n, norm=norm), np.fft.hfft(c, n=n, norm=norm), dtype, n)


@pytest.mark.parametrize("dtype", DTYPES)
def test_irfft_default_length_and_hermitian_parts(dtype: str) -> None:
    """n defaults to 2 (m - 1); the imaginary parts of X[0] and X[n/2] are ignored, as NumPy."""
    c = _complex(_rng(3), (4, 9), dtype)
    out = gfft.irfft(gpu(c))
    assert out.shape == (4, 16)
    _check(out, np.fft.irfft(c), dtype, 16)
    _check(gfft.hfft(gpu(c)), np.fft.hfft(c), dtype, 16)


@pytest.mark.parametrize("dtype", DTYPES)
def test_axes_padding_truncation_and_views(dtype: str) -> None:
    rng = _rng(5)
    x = _real(rng, (6, 8, 3), dtype)
    g = gpu(x)
    for axis in (0, 1, -1):
        for n in (None, 2, 12, 17):
            _check(gfft.rfft(g, n=n, axis=axis), np.fft.rfft(x, n=n, axis=axis), dtype, 17)
            _check(gfft.ihfft(g, n=n, axis=axis, norm="ortho"), np.fft.ihfft(x, n=n, axis=axis, norm="ortho"),
                   dtype, 17)
    c = _complex(rng, (6, 8, 3), dtype)
    gc = gpu(c)
    for axis in (0, 1, -1):
        for n in (None, 3, 8, 17):
            _check(gfft.irfft(gc, n=n, axis=axis), np.fft.irfft(c, n=n, axis=axis), dtype, 20)
            _check(gfft.hfft(gc, n=n, axis=axis, norm="forward"),
                   np.fft.hfft(c, n=n, axis=axis, norm="forward"), dtype, 20)
    # strided and offset views (odd element offsets cannot be read as complex pairs in place)
    _check(gfft.rfft(g[:, 0:8, 2]), np.fft.rfft(x[:, 0:8, 2]), dtype, 8)
    _check(gfft.rfft(g[1, ::-1, 1:]), np.fft.rfft(x[1, ::-1, 1:]), dtype, 2)
    _check(gfft.rfft(g[:, :, 1:].mT), np.fft.rfft(np.swapaxes(x[:, :, 1:], -1, -2)), dtype, 8)
    flat = gpu(x.reshape(-1))
    _check(gfft.rfft(flat[1:13]), np.fft.rfft(x.reshape(-1)[1:13]), dtype, 12)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rfftn_irfftn(dtype: str) -> None:
    rng = _rng(7)
    x = _real(rng, (4, 6, 8), dtype)
    g = gpu(x)
    cases = [(None, None), ((4, 12), (0, 2)), (None, (2, 0)), ((3, 6, 8), (0, 1, 2)), ((6,), (1,)),
             ((3, -1), (1, 2)), ((2, 3), (-1, 0))]
    for i, (s, axes) in enumerate(cases):
        norm = NORMS[i % 3]
        _check(gfft.rfftn(g, s=s, axes=axes, norm=norm), np.fft.rfftn(x, s=s, axes=axes, norm=norm), dtype, 64)
        spec = np.fft.rfftn(x, s=s, axes=axes).astype(COMPLEX_OF[dtype])
        _check(gfft.irfftn(gpu(spec), s=s, axes=axes, norm=norm), np.fft.irfftn(spec, s=s, axes=axes, norm=norm),
               dtype, 64)
    # round trip with the shape given back
    y = gfft.irfftn(gfft.rfftn(g), s=x.shape)
    _check(y, x, dtype, 64)


@pytest.mark.parametrize("dtype", DTYPES)
def test_large_lengths(dtype: str) -> None:
    """A power of two and a prime: error of order eps log n."""
    rng = _rng(11)
    for n in ((1 << 16, 65537) if dtype == "float32" else (65537,)):
        x = _real(rng, (n,), dtype)
        _check(gfft.rfft(gpu(x)), np.fft.rfft(x), dtype, n)
        c = np.fft.rfft(x).astype(COMPLEX_OF[dtype])
        _check(gfft.irfft(gpu(c), n=n), np.fft.irfft(c, n=n), dtype, n)


def test_float16_and_empty_batches() -> None:
    x = _real(_rng(2), (3, 10), "float16")
    out = gfft.rfft(gpu(x))
    assert out.dtype == gt.complex64
    _check(out, np.fft.rfft(x.astype(np.float32)), "float32", 10)
    empty = gfft.rfft(gt.zeros((0, 8), dtype=gt.float32))
    assert empty.shape == (0, 5) and empty.dtype == gt.complex64
    assert gfft.irfft(gt.zeros((0, 5), dtype=gt.complex64)).shape == (0, 8)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_hypothesis_real_transforms(data: st.DataObject) -> None:
    """rfft / irfft / hfft / ihfft of random shapes, axes, lengths and norms (float32)."""
    ndim = data.draw(st.integers(1, 3), label="ndim")
    sides = st.sampled_from((1, 2, 3, 4, 6, 8))  # (lengths the other tests compile kernels for)
    shape = tuple(data.draw(st.lists(sides, min_size=ndim, max_size=ndim), label="shape"))
    axis = data.draw(st.integers(-ndim, ndim - 1), label="axis")
    n = data.draw(st.none() | st.sampled_from((1, 2, 3, 4, 6, 8, 12, 17)), label="n")
    norm = data.draw(st.sampled_from(NORMS), label="norm")
    rng = _rng(data.draw(st.integers(0, 2 ** 16), label="seed"))
    x = _real(rng, shape, "float32")
    _check(gfft.rfft(gpu(x), n=n, axis=axis, norm=norm), np.fft.rfft(x, n=n, axis=axis, norm=norm), "float32", 32)
    _check(gfft.ihfft(gpu(x), n=n, axis=axis, norm=norm), np.fft.ihfft(x, n=n, axis=axis, norm=norm),
           "float32", 32)
    if n is None and shape[axis] == 1:
        return  # default length 2 (m - 1) = 0
    c = _complex(rng, shape, "float32")
    _check(gfft.irfft(gpu(c), n=n, axis=axis, norm=norm), np.fft.irfft(c, n=n, axis=axis, norm=norm),
           "float32", 64)
    _check(gfft.hfft(gpu(c), n=n, axis=axis, norm=norm), np.fft.hfft(c, n=n, axis=axis, norm=norm), "float32", 64)


def test_replayed_plans_and_profiling() -> None:
    """Repeated calls replay their plans (nothing compiled), and the kernels show in profiles
    (GPU or host-time mode alike)."""
    x = gpu(_real(_rng(9), (5, 64), "float32"))
    spec = gfft.rfft(x)
    back = gfft.irfft(spec)
    stats = get_backend().context.stats
    before = stats.get("pipelines_compiled")
    for _ in range(3):
        spec = gfft.rfft(x)
        back = gfft.irfft(spec)
    assert stats.get("pipelines_compiled") == before
    _check(back, to_numpy(x), "float32", 64)
    for gpu_mode in (True, False):
        with gt.profile(gpu=gpu_mode) as prof:
            gfft.irfft(gfft.rfft(x))
        names = {r.name for r in prof.records}
        assert names == {"fft_stockham"}, names  # (each transform one dispatch, the real steps fused)


@pytest.mark.parametrize("norm", NORMS)
def test_unfused_lengths_with_conjugation(norm: str) -> None:
    """Half-lengths beyond a workgroup (four-step: 2^14, the real step fused into its passes)
    and with a prime factor above 7 (Bluestein: 2 * 1009, the complex DFT and the separate real
    step), conjugated for hfft / ihfft, scaled per norm, batched; a one-workgroup length beside
    them."""
    rng = _rng(12)
    for n in (1 << 14, 2 * 1009, 16):
        x = _real(rng, (3, n), "float32")
        _check(gfft.ihfft(gpu(x), norm=norm), np.fft.ihfft(x, norm=norm), "float32", n)
        c = _complex(rng, (3, n // 2 + 1), "float32")
        _check(gfft.hfft(gpu(c), n=n, norm=norm), np.fft.hfft(c, n=n, norm=norm), "float32", n)


@pytest.mark.parametrize("dtype,n,rows", [("float32", 1 << 14, 3), ("float32", 1 << 17, 1),
                                           ("float32", 2 * 3 * 4096, 2), ("float64", 1 << 13, 2),
                                           ("float32", 12500, 2)])
def test_four_step_real_fused_and_not(dtype: str, n: int, rows: int) -> None:
    """Half-lengths beyond a workgroup take the four-step decomposition; with the knob
    ``fft_real_fused`` on, the real step is fused into it: the forward's last pass forms the
    outputs (columns j and m - j in one workgroup, columns 0 and m / 2 alone, X[n/2] from
    column 0), the inverse's first pass forms its inputs from X[g] and X[n/2 - g]: one dispatch
    fewer each; off, the separate ``fft_real_post`` / ``fft_real_pre`` dispatch. Powers of two,
    mixed radix, complex128, and 12500 (half 6250 = 10 x 625: an odd column count, where the
    forward stays unfused), norms and the conjugations of ihfft and hfft, against NumPy."""
    rng = _rng(n)
    x = _real(rng, (rows, n), dtype)
    c = _complex(rng, (rows, n // 2 + 1), dtype)
    g, gc = gpu(x), gpu(c)
    stats = get_backend().context.stats
    dispatches = {}
    for fused in (True, False):
        with config.override(fft_real_fused=fused):
            for norm in ("backward", "ortho"):
                _check(gfft.rfft(g, norm=norm), np.fft.rfft(x, norm=norm), dtype, n)
                _check(gfft.ihfft(g, norm=norm), np.fft.ihfft(x, norm=norm), dtype, n)
                _check(gfft.irfft(gc, n=n, norm=norm), np.fft.irfft(c, n=n, norm=norm), dtype, n)
                _check(gfft.hfft(gc, n=n, norm=norm), np.fft.hfft(c, n=n, norm=norm), dtype, n)
            counts = []
            for call in (lambda: gfft.rfft(g), lambda: gfft.irfft(gc, n=n)):
                gt.synchronize()
                before = stats["dispatches"]
                call()
                counts.append(stats["dispatches"] - before)
            dispatches[fused] = counts
    forward, inverse = dispatches[False]
    assert dispatches[True] == [forward - (n != 12500), inverse - 1], dispatches


def _variant_case(rng: np.random.Generator, case: str) -> None:
    """One transform of ``test_kernel_variants_of_the_knobs`` against NumPy: ``fft N`` (2
    complex rows of length N), ``rfft N`` / ``irfft N`` (3 real rows of length N)."""
    kind, n = case.split()[0], int(case.split()[1])
    if kind == "fft":
        c = _complex(rng, (2, n), "float32")
        _check(gfft.fft(gpu(c)), np.fft.fft(c), "float32", n)
        return
    x = _real(rng, (3, n), "float32")
    if kind == "rfft":
        _check(gfft.rfft(gpu(x)), np.fft.rfft(x), "float32", n)
        return
    h = np.fft.rfft(x).astype(np.complex64)
    _check(gfft.irfft(gpu(h), n=n), np.fft.irfft(h, n=n), "float32", n)


# each knob's variant on the transforms whose kernels run the code it changes: fft 1000 mixed
# radix (first and last passes direct), 97 Bluestein in one workgroup (load and store loops),
# 8 several transforms per workgroup, 2^13 four-step (twiddles on load); rfft / irfft 2^10 the
# real step in one workgroup (store loop / load), 2^14 the four-step real transforms (fused
# last pass's store, first pass's load)
@pytest.mark.parametrize("knobs,cases", [
    ({"fft_unrolled_loads": False}, ("fft 97", "rfft 1024", "rfft 16384")),
    ({"fft_unrolled_loads": False, "fft_two_butterflies": False}, ("fft 97", "rfft 1024")),
    ({"fft_two_butterflies": False}, ("fft 1000", "fft 8192", "irfft 16384")),
    ({"fft_min_workgroups": 0}, ("fft 8", "fft 97", "rfft 1024")),
    ({"fft_min_workgroups": 100000}, ("fft 8192", "rfft 16384", "irfft 16384")),
    ({"fft_direct_io": False}, ("fft 1000", "fft 8192", "irfft 1024", "irfft 16384")),
    ({"fft_pass_twiddles": False}, ("fft 1000", "fft 8192", "rfft 1024", "irfft 16384")),
    ({"fft_direct_io": False, "fft_pass_twiddles": False}, ("fft 1000", "rfft 1024", "irfft 1024")),
    ({"fft_twiddle_math": True}, ("fft 1000", "fft 8192", "rfft 1024", "irfft 16384")),
])
def test_kernel_variants_of_the_knobs(knobs: dict[str, bool], cases: tuple[str, ...]) -> None:
    """The Stockham kernel's variants of the A/B knobs (load and store loops not unrolled, one
    butterfly per invocation, workgroups never or always spread to fewer transforms each, the
    load and store loops instead of the first and last passes' own reads and writes, one
    length-n twiddle table instead of one per pass, twiddles computed instead of read) give
    NumPy's values on the transforms whose code they change."""
    rng = _rng(21)
    with config.override(**knobs):
        for case in cases:
            _variant_case(rng, case)


# ---- frequencies and shifts ------------------------------------------------------------------
@pytest.mark.parametrize("dtype", (None, "float32", "float64"))
def test_fftfreq_rfftfreq(dtype: str | None) -> None:
    dt = None if dtype is None else getattr(gt, dtype)
    want = dtype or gt.__array_namespace_info__().default_dtypes()["real floating"].name
    for n in (1, 2, 5, 8, 101, 4096):
        for d in (1.0, 0.25, 3):
            for fn, ref in ((gfft.fftfreq, np.fft.fftfreq), (gfft.rfftfreq, np.fft.rfftfreq)):
                out = fn(n, d=d, dtype=dt)
                assert out.dtype.name == want
                np.testing.assert_allclose(to_numpy(out), ref(n, d), rtol=2 * EPS[want], atol=0)
    assert gfft.fftfreq(4, device=gt.asarray([1.0]).device).shape == (4,)
    out = gfft.fftfreq(6, dtype=gt.float16)
    assert out.dtype == gt.float16
    np.testing.assert_allclose(to_numpy(out).astype(np.float64), np.fft.fftfreq(6), **tol("float16", "float16_fftfreq"))


@pytest.mark.parametrize("dtype", ("float32", "float64", "complex64"))
def test_fftshift_ifftshift(dtype: str) -> None:
    rng = _rng(4)
    x = rng.standard_normal((3, 4, 5)).astype(dtype)
    g = gpu(x)
    for axes in (None, 0, 2, -1, (1, 2), [0, -1], ()):
        np.testing.assert_array_equal(to_numpy(gfft.fftshift(g, axes=axes)), np.fft.fftshift(x, axes=axes))
        np.testing.assert_array_equal(to_numpy(gfft.ifftshift(g, axes=axes)), np.fft.ifftshift(x, axes=axes))
    odd = gpu(x[:, :, :3])
    np.testing.assert_array_equal(to_numpy(gfft.ifftshift(gfft.fftshift(odd))), x[:, :, :3])


# ---- errors ------------------------------------------------------------------------------------
def test_errors() -> None:
    real = gt.asarray(np.ones((4, 6), np.float32))
    cplx = gt.asarray(np.ones((4, 6), np.complex64))
    ints = gt.asarray(np.ones((4, 6), np.int32))
    for fn in (gfft.rfft, gfft.ihfft, gfft.rfftn):
        with pytest.raises(TypeError):
            fn(cplx)
        with pytest.raises(TypeError):
            fn(ints)
        with pytest.raises(TypeError):
            fn(np.ones(4))
    for fn in (gfft.irfft, gfft.hfft, gfft.irfftn):
        with pytest.raises(TypeError):
            fn(ints)
    for fn, x in ((gfft.rfft, real), (gfft.irfft, cplx), (gfft.hfft, cplx), (gfft.ihfft, real)):
        with pytest.raises(ValueError):
            fn(x, n=0)
        with pytest.raises(ValueError):
            fn(x, n=-2)
        with pytest.raises(ValueError):
            fn(x, norm="both")
        with pytest.raises(IndexError):
            fn(x, axis=2)
    with pytest.raises(ValueError):
        gfft.irfft(gt.asarray(np.ones((3, 1), np.complex64)))  # default n = 2 (1 - 1) = 0
    with pytest.raises(ValueError):
        gfft.rfftn(real, s=(4, 4), axes=(0,))
    with pytest.raises(ValueError):
        gfft.rfftn(real, s=(0, 4))
    for fn in (gfft.fftfreq, gfft.rfftfreq):
        with pytest.raises(ValueError):
            fn(0)
        with pytest.raises(ValueError):
            fn(4, dtype=gt.int32)
        with pytest.raises(ValueError):
            fn(4, dtype=gt.complex64)
        with pytest.raises(ValueError):
            fn(4, device="cpu")
        with pytest.raises(TypeError):
            fn(4.5)
    for fn in (gfft.fftshift, gfft.ifftshift):
        with pytest.raises(TypeError):
            fn(ints)
        with pytest.raises(IndexError):
            fn(real, axes=3)


def test_benchmark_quick(capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m benchmarks.bench_fft --quick`` runs and checks its results (two cases)."""
    status = bench_fft.main(["--quick", "--no-torch", "--no-cupy", "--only", "rfft.f32.2^10,rfft.f32.257xb16",
                             "--target-s", "0.001"])
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert "rfft.f32.2^10" in printed and "gputensor:ok" in printed and "gt wall" in printed


def test_benchmark_ab_rows(capsys: pytest.CaptureFixture[str]) -> None:
    """``--ab KNOB``: a second gputensor row per case with the knob flipped, its dispatches per
    call printed (the fused four-step rfft one dispatch fewer); an unknown knob is refused."""
    status = bench_fft.main(["--quick", "--no-torch", "--no-cupy", "--only", "rfft.f32.2^14",
                             "--target-s", "0.001", "--ab", "fft_real_fused", "--json", os.devnull])
    printed = capsys.readouterr().out
    assert status == 0, printed
    rows = {line.split()[0]: line.split() for line in printed.splitlines() if line.startswith("rfft.f32.2^14")}
    assert set(rows) == {"rfft.f32.2^14", "rfft.f32.2^14[fft_real_fused=0]"}, printed
    assert float(rows["rfft.f32.2^14"][-2]) + 1 == float(rows["rfft.f32.2^14[fft_real_fused=0]"][-2]), printed
    assert [s for s, _ in bench_fft.variants("fft_min_workgroups=0,fft_real_fused")] == [
        "[fft_min_workgroups=0]", "[fft_real_fused=0]"]
    assert bench_fft.variants("fft_pass_twiddles=0+fft_direct_io=0") == [
        ("[fft_pass_twiddles=0+fft_direct_io=0]", {"fft_pass_twiddles": False, "fft_direct_io": False})]
    with pytest.raises(ValueError, match="no_such_knob"):
        bench_fft.main(["--quick", "--no-torch", "--no-cupy", "--only", "none", "--ab", "no_such_knob"])
