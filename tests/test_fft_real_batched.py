"""gputensor.fft's batched real transforms on each of their paths, against numpy.fft.

Odd lengths store only the n // 2 + 1 values they return (knob ``fft_real_prefix``: one
Stockham dispatch, Bluestein in one workgroup or over several dispatches, a four-step length
through a scratch copy); even lengths whose input is not contiguous along the last axis (another
axis, strided or reversed views, truncation) read it in place (knob ``fft_real_strided``); the
others take the half-length trick. Each case runs with the knobs on and off on the same arrays
(the kept plans of one setting do not hold under the other), twice (the second call replays the
kept plan), with odd batches, every norm, float32 and float64.
"""

from __future__ import annotations

import numpy as np
import pytest

import gputensor.fft as gfft
from gputensor._backend import config, get_backend

from _compare import gpu, to_numpy
from test_fft_real import NORMS, _check, _complex, _real, _rng

DTYPES = ("float32", "float64")
KNOBS = ({}, {"fft_real_prefix": False, "fft_real_strided": False})

#: (shape, axis, n, view of the array): the forward cases
FORWARD = (
    ((7, 15), -1, None, None),  # odd length, one workgroup, odd batch
    ((3, 1009), -1, None, None),  # a prime: Bluestein in one workgroup
    ((2, 4099), -1, None, None),  # a prime whose chirp transform takes several dispatches
    ((6561,), -1, None, None),  # 3^8: a four-step length, kept results copied out
    ((5, 15), -1, 9, None),  # truncated to an odd length
    ((5, 15), -1, 21, None),  # zero-padded to an odd length
    ((64, 5), 0, None, None),  # an even length along the first axis
    ((3, 16, 5), 1, 10, None),  # the middle axis, truncated
    ((6, 18), -1, None, (slice(None, None, 2), slice(2, None))),  # strided rows, even offset
    ((6, 17), -1, None, (slice(None), slice(1, None))),  # an odd element offset
    ((5, 32), -1, None, (slice(None), slice(None, None, 2))),  # strided along the axis
    ((16, 3), 0, None, (slice(None, None, -1), slice(None))),  # reversed along the axis
    ((9, 4), 0, 24, None),  # zero-padded along the first axis
)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(FORWARD)))
def test_rfft_ihfft_batched_paths(dtype: str, case: int) -> None:
    shape, axis, n, view = FORWARD[case]
    x = _real(_rng(case), shape, dtype)
    g = gpu(x)
    if view is not None:
        g, x = g[view], x[view]
    length = n or x.shape[axis]
    for knobs in KNOBS:
        with config.override(**knobs):
            for norm in NORMS:
                for _ in range(2):
                    _check(gfft.rfft(g, n=n, axis=axis, norm=norm), np.fft.rfft(x, n=n, axis=axis, norm=norm),
                           dtype, length)
                _check(gfft.ihfft(g, n=n, axis=axis, norm=norm), np.fft.ihfft(x, n=n, axis=axis, norm=norm),
                       dtype, length)


#: (shape, axis, n): the inverse cases (complex input)
INVERSE = (((7, 9), -1, None), ((7, 9), -1, 17), ((5, 9), 0, 8), ((3, 9, 4), 1, 12), ((3, 513), -1, 1024))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(INVERSE)))
def test_irfft_hfft_batched(dtype: str, case: int) -> None:
    shape, axis, n = INVERSE[case]
    c = _complex(_rng(100 + case), shape, dtype)
    g = gpu(c)
    length = n or 2 * (shape[axis] - 1)
    for norm in NORMS:
        for _ in range(2):
            _check(gfft.irfft(g, n=n, axis=axis, norm=norm), np.fft.irfft(c, n=n, axis=axis, norm=norm), dtype,
                   length)
        _check(gfft.hfft(g, n=n, axis=axis, norm=norm), np.fft.hfft(c, n=n, axis=axis, norm=norm), dtype, length)
    # a strided view of the spectra
    _check(gfft.irfft(g[::2], n=n, axis=axis), np.fft.irfft(c[::2], n=n, axis=axis), dtype, length)


def _dispatches(call) -> int:
    stats = get_backend().context.stats
    call()  # (planned and compiled)
    before = stats["dispatches"]
    call()
    return stats["dispatches"] - before


def test_kept_results_and_dispatches() -> None:
    """With the knobs on, an odd-length rfft is one dispatch and returns a contiguous array of
    the n // 2 + 1 values (off: a view of the whole transform); an even rfft along the first
    axis is one dispatch (off: a copy, then the half-length transform)."""
    x = _real(_rng(1), (7, 15), "float32")
    g = gpu(x)
    cols = _real(_rng(2), (64, 5), "float32")
    gc = gpu(cols)
    counts = {}
    for on in (True, False):
        with config.override(fft_real_prefix=on, fft_real_strided=on):
            counts[on] = (_dispatches(lambda: gfft.rfft(g)), _dispatches(lambda: gfft.rfft(gc, axis=0)))
            out = gfft.rfft(g)
            assert out.shape == (7, 8)
            _check(out, np.fft.rfft(x), "float32", 15)
            if on:
                assert out._strides == (8, 1)  # (its own array, not a view of 15 values a row)
    assert counts[True] == (1, 1), counts
    assert counts[False][0] == 1 and counts[False][1] == 2, counts


def test_replay_on_new_arrays() -> None:
    """A call structure's kept plan replayed on other arrays of that structure (new pointers,
    other values): truncating ``n``, an odd length, another axis, the n-D transforms."""
    import gputensor as gt

    calls = (
        (lambda m, a: m.fft(a, n=10, axis=0), True),
        (lambda m, a: m.ifft(a, n=7), True),
        (lambda m, a: m.fftn(a, axes=(0, 1)), True),
        (lambda m, a: m.rfft(a, n=10, axis=0), False),
        (lambda m, a: m.rfft(a, n=9), False),
        (lambda m, a: m.ihfft(a, axis=0), False),
        (lambda m, a: m.rfftn(a), False),
        (lambda m, a: m.irfftn(a, s=(12, 8), axes=(0, 1)), True),
    )
    for k, (call, complex_input) in enumerate(calls):
        for seed in range(3):
            rng = _rng(10 * k + seed)
            x = _complex(rng, (12, 8), "float32") if complex_input else _real(rng, (12, 8), "float32")
            _check(call(gfft, gt.asarray(x)), call(np.fft, x), "float32", 12)


#: (shape, knobs): the real forward step's paired store (knob ``fft_real_pairs``) at its
#: boundaries: half lengths 1, 2, odd (3, 5: no middle pair) and even, several transforms per
#: workgroup (``fft_min_workgroups=0``) with batches that do not fill the last one, the
#: store across entries of a column (``fft_min_workgroups=0`` with a short length)
PAIRED = (((2,), {}), ((4,), {}), ((3, 6), {}), ((5, 10), {}), ((7, 16), {"fft_min_workgroups": 0}),
          ((13, 96), {"fft_min_workgroups": 0}), ((3, 250), {}), ((9, 2048), {}),
          ((33, 64), {"fft_min_workgroups": 0, "fft_two_butterflies": False}))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(PAIRED)))
def test_real_forward_paired_store(dtype: str, case: int) -> None:
    """rfft and ihfft in one workgroup with the paired store and without it match NumPy on
    every norm (the first call and its replay), and the two stores agree."""
    shape, knobs = PAIRED[case]
    x = _real(_rng(100 + case), shape, dtype)
    g = gpu(x)
    n = shape[-1]
    results = []
    for pairs in (True, False):
        with config.override(fft_real_pairs=pairs, **knobs):
            for norm in NORMS:
                for _ in range(2):
                    _check(gfft.rfft(g, norm=norm), np.fft.rfft(x, norm=norm), dtype, n)
                _check(gfft.ihfft(g, norm=norm), np.fft.ihfft(x, norm=norm), dtype, n)
            results.append(to_numpy(gfft.rfft(g)))
    scale = float(np.max(np.abs(results[1])))
    np.testing.assert_allclose(results[0], results[1], rtol=0, atol=(1e-6 if dtype == "float32" else 1e-14) * scale)
