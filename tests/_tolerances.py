"""Per-dtype test tolerances: ONE table for every test file (engineer B may append rows).

``TOLERANCES[family][dtype name] = (rtol, atol)``. Families:

* ``exact``: integer and bool results, copies, casts, comparisons (always (0, 0));
* ``arith``: correctly rounded IEEE operations (+ - * / sqrt, rounding, abs, ...);
* ``transcendental``: exp, log, trig, hyperbolic... (GPU built-ins are a few ulp; lavapipe uses
  its own approximations);
* ``inverse_trig``: acos/asin (float32: gputensor's f32math, within 1 ulp of the exact value);
* ``reduction``: sums/means over many elements (error grows with the length);
* ``summation``: relative error of sums / dot products in a different order than NumPy's
  (callers add an absolute term scaled by the summed magnitudes);
* ``chained``: several operations chained (fuzzed programs, the design-card example).

References are computed by NumPy in float64 (cast to the result dtype) unless a test says
otherwise.
"""

from __future__ import annotations

import numpy as np

_EXACT = {name: (0.0, 0.0) for name in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")}

TOLERANCES: dict[str, dict[str, tuple[float, float]]] = {
    "exact": {**_EXACT, "float16": (0.0, 0.0), "float32": (0.0, 0.0), "float64": (0.0, 0.0)},
    "arith": {**_EXACT, "float16": (1e-3, 1e-4), "float32": (4e-7, 1e-30), "float64": (1e-15, 1e-300)},
    "transcendental": {**_EXACT, "float16": (2e-3, 2e-3), "float32": (5e-6, 1e-6), "float64": (1e-13, 1e-15)},
    # float32 acos/asin are f32math's (<= 1 ulp: 1 ulp of the float32-rounded reference), no longer
    # the WGSL builtins (4096 ulp allowed; lavapipe's were ~1e-4 off).
    "inverse_trig": {**_EXACT, "float16": (2e-3, 2e-3), "float32": (2.4e-7, 0.0), "float64": (1e-13, 1e-15)},
    "reduction": {**_EXACT, "float16": (1e-2, 1e-2), "float32": (1e-5, 1e-5), "float64": (1e-12, 1e-12)},
    # relative error of sums/dot products accumulated in another order than NumPy's (blocked,
    # tree or tiled order on the device); callers scale an absolute term by the magnitudes summed
    "summation": {**_EXACT, "float16": (2e-2, 0.0), "float32": (2e-5, 0.0), "float64": (1e-12, 0.0)},
    # a chain of several operations (matmul, reductions, transcendental functions) in one dtype,
    # against a float64 reference: the fuzz tests and the design-card example
    "chained": {**_EXACT, "float16": (5e-2, 5e-3), "float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12)},
}


def tolerance(dtype: object, family: str = "arith") -> tuple[float, float]:
    """(rtol, atol) for a result of ``dtype`` (a gputensor/NumPy dtype or its name)."""
    name = getattr(dtype, "name", str(dtype))
    return TOLERANCES[family][name]


def assert_close(actual: np.ndarray, expected: np.ndarray, dtype: object, family: str = "arith") -> None:
    """Compare ``actual`` with ``expected`` (cast to ``dtype``) using the table; NaNs must match,
    infinities must match exactly, shapes must be equal."""
    name = getattr(dtype, "name", str(dtype))
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == np.dtype(name), (actual.dtype, name)
    with np.errstate(over="ignore", invalid="ignore"):
        expected = expected.astype(name)
    rtol, atol = tolerance(name, family)
    if rtol == 0 and atol == 0:
        np.testing.assert_array_equal(actual, expected)
    else:
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
