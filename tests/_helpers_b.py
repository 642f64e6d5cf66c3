"""Shared helpers of engineer B's test files (strategies, device round trips, tolerances)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from _tolerances import TOLERANCES

from gputensor import _dtypes
from gputensor._array_object import GpuArray
from gputensor._manipulation_functions import reshape

ALL = [np.dtype(d.name) for d in _dtypes.ALL_DTYPES]
NUMERIC = [d for d in ALL if d.kind in "iuf"]
INTEGER = [d for d in ALL if d.kind in "iu"]
FLOATING = [np.dtype("float16"), np.dtype("float32"), np.dtype("float64")]

#: relative tolerance per dtype of results computed with a different summation order than
#: NumPy's (tree / blocked order on the device); integers are exact. From the one tolerance
#: table (tests/_tolerances.py, family "summation").
RTOL = {name: TOLERANCES["summation"][name][0] for name in ("float16", "float32", "float64")}


def gpu(a: object) -> GpuArray:
    """Upload ``a`` (any array-like, 0-d included) as a contiguous device array."""
    a = np.asarray(a)
    return reshape(GpuArray._from_numpy(a.reshape(-1)), a.shape)


def gt_dtype(d: np.dtype) -> _dtypes.DType:
    return _dtypes.dtype_from_any(d)


@st.composite
def arrays(draw, dtypes=NUMERIC, min_dims=0, max_dims=3, max_side=5, elements=None, views=True):
    """(numpy array, device array with the same values): 0-d and empty shapes included; with
    ``views`` the device array is sometimes a negative-step or strided view of a larger one."""
    dtype = draw(st.sampled_from(dtypes))
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0, max_side=max_side))
    el = elements(dtype) if elements else None
    kind = draw(st.sampled_from(["contiguous", "negative", "step"] if views else ["contiguous"]))
    if kind == "contiguous":
        ref = draw(hnp.arrays(dtype, shape, elements=el))
        return ref, gpu(ref)
    big = tuple(2 * s + 1 for s in shape)
    base = draw(hnp.arrays(dtype, big, elements=el))
    if kind == "negative":
        idx = tuple(slice(s - 1, None, -1) if s else slice(0, 0) for s in shape)
    else:
        idx = tuple(slice(1, 1 + 2 * s, 2) for s in shape)
    return np.asarray(base[idx]), gpu(base)[idx]


def bounded(lo: float, hi: float):
    """Elements strategy factory: floats in [lo, hi] (no NaN), integers of the dtype."""

    def make(dtype: np.dtype):
        if dtype.kind == "f":
            return hnp.from_dtype(dtype, min_value=lo, max_value=hi, allow_nan=False, allow_subnormal=False)
        if dtype.kind == "b":
            return st.booleans()
        return hnp.from_dtype(dtype)

    return make


def axes_for(ndim: int):
    """None, an int or a tuple of distinct axes (negative allowed) of an ``ndim``-d array."""
    if ndim == 0:
        return st.sampled_from([None, ()])
    ints = st.integers(-ndim, ndim - 1)
    tup = st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).map(tuple)
    return st.none() | ints | tup
