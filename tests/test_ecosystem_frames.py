"""xarray keeps gputensor arrays on the device; pandas and matplotlib take them by value."""

from __future__ import annotations

import numpy as np
import pytest

import gputensor as gt

from _compare import tol

H = (np.arange(24, dtype=np.float32).reshape(4, 6) - 9) / 4


def test_xarray_dataarray_stays_on_the_device():
    xr = pytest.importorskip("xarray")
    a = xr.DataArray(gt.asarray(H), dims=("t", "s"), coords={"t": np.arange(4)})
    ref = xr.DataArray(H, dims=("t", "s"), coords={"t": np.arange(4)})
    cases = [
        lambda v: v * 2 + 1,
        lambda v: np.exp(v),
        lambda v: v.mean("t"),
        lambda v: v.sum(),
        lambda v: v.max(dim="s"),
        lambda v: v.min("t"),
        lambda v: (v - v.mean("t")).std("t"),
        lambda v: v.var("s", ddof=1),
        lambda v: v.isel(t=1),
        lambda v: v.sel(t=2) + v.isel(t=0),
        lambda v: v.transpose(),
        lambda v: v.where(v > 0, 0),
        lambda v: v.cumsum("s"),
    ]
    for case in cases:
        got, want = case(a), case(ref)
        assert isinstance(got.data, gt.GpuArray), type(got.data)
        assert got.dims == want.dims
        np.testing.assert_allclose(gt.asnumpy(got.data), want.values, **tol("float32", "accumulated_fine"))


def test_pandas_converts_by_value():
    pd = pytest.importorskip("pandas")
    x = gt.asarray(H)
    s = pd.Series(x[0])
    assert len(s) == 6 and s.dtype == np.float32 and s.tolist() == H[0].tolist()
    df = pd.DataFrame(x, columns=list("abcdef"))
    assert df.shape == (4, 6) and (df.dtypes == np.float32).all()
    np.testing.assert_allclose(df.sum().to_numpy(), H.sum(axis=0), **tol("float32", "sum_short"))
    cols = pd.DataFrame({"a": x[:, 0], "b": x[:, 1]})
    np.testing.assert_array_equal(cols.to_numpy(), H[:, :2])
    x[0, 0] = 100.0  # the frame holds host copies
    assert df.iloc[0, 0] == H[0, 0] and s.iloc[0] == H[0, 0]


def test_matplotlib_hist_takes_one_data_set():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    plt = pytest.importorskip("matplotlib.pyplot")
    fig, ax = plt.subplots()
    try:
        counts, edges, _ = ax.hist(gt.asarray(H.ravel()), bins=4)
        want, want_edges = np.histogram(H.ravel(), bins=4)
        np.testing.assert_array_equal(counts, want)
        np.testing.assert_allclose(edges, want_edges, **tol("float32", "elementwise"))
        ax.plot(gt.asarray(H[0]))
    finally:
        plt.close(fig)
