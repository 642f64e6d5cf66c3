"""The test suite's one NumPy-comparison helper and its one tolerance table.

Modelled on CuPy's ``cupy.testing`` (``numpy_cupy_allclose``, ``for_all_dtypes``):

* :func:`numpy_gt_allclose` / :func:`numpy_gt_array_equal` decorate a test whose body is written
  once against an array namespace ``xp``: the body runs with ``xp=numpy`` and with
  ``xp=gputensor``, and the two results (arrays, Python scalars, or tuples/lists of them) are
  compared with the per-dtype tolerance of the result's dtype, dtypes and shapes included. When
  NumPy raises, gputensor must raise an error of the same kind (``accept_error``).
* :func:`for_dtypes` / :func:`for_all_dtypes` / :func:`for_float_dtypes` / :func:`for_int_dtypes`
  parametrize a test over dtype *names* (``getattr(xp, dtype)`` gives the namespace's dtype).
* :data:`TOLERANCES` is the one table: ``TOLERANCES[family][dtype name] = (rtol, atol)``;
  :func:`tolerance` reads it as a pair, :func:`tol` as keyword arguments
  (``np.testing.assert_allclose(got, want, **tol("float32", "matmul"))``), and
  :func:`assert_close` compares one array with a reference. Tests write no literal tolerance
  (tests/test_compare_table.py checks it): a bound a test needs is a row here, with its reason.
* Hypothesis strategies (:func:`arrays`, :func:`bounded`, :func:`axes_for`) and small helpers
  (:func:`gpu`, :func:`gt_dtype`, :func:`to_numpy`) shared by the test files.

Tolerance families:

* ``exact``: integer and bool results, copies, casts, comparisons (always (0, 0));
* ``arith``: correctly rounded IEEE operations (+ - * / sqrt, rounding, abs, ...);
* ``transcendental``: exp, log, trig, hyperbolic... (GPU built-ins are a few ulp; lavapipe uses
  its own approximations);
* ``inverse_trig``: acos/asin (float32: gputensor's f32math, within 1 ulp of the exact value);
* ``reduction``: sums/means over many elements (error grows with the length);
* ``summation``: relative error of sums / dot products in a different order than NumPy's
  (callers add an absolute term scaled by the summed magnitudes);
* ``chained``: several operations chained (fuzzed programs, the design-card example);
* ``attention``: softmax(q k^T) v against a float64 reference (exp, two reductions, two products);
* ``fused``: a fused kernel against the same operations unfused (callers scale an absolute term);
* ``rounded`` / ``builtin``: the backend contract's unary/binary ops, correctly rounded ones and
  transcendental ones (GPU built-ins are specified by absolute error).

These families (:data:`FAMILIES`) have a row for every dtype. The rows after them are per accuracy
class (elementwise, accumulated/reduction, matmul, chained, nn, linalg, fft) for the dtypes
their tests use; a test whose bound is tighter or looser than its class's has a row of its own
with the reason, so that no test is loosened by sharing one.

References are computed by NumPy in float64 (cast to the result dtype) unless a test says
otherwise.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gputensor as gt

# ---------------------------------------------------------------------------------------------
# the tolerance table
# ---------------------------------------------------------------------------------------------
INT_NAMES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOAT_NAMES = ("float16", "float32", "float64")
_EXACT = {name: (0.0, 0.0) for name in ("bool",) + INT_NAMES}

TOLERANCES: dict[str, dict[str, tuple[float, float]]] = {
    "exact": {**_EXACT, "float16": (0.0, 0.0), "float32": (0.0, 0.0), "float64": (0.0, 0.0)},
    "arith": {**_EXACT, "float16": (1e-3, 1e-4), "float32": (4e-7, 1e-30), "float64": (1e-15, 1e-300)},
    "transcendental": {**_EXACT, "float16": (2e-3, 2e-3), "float32": (5e-6, 1e-6), "float64": (1e-13, 1e-15)},
    # float32 acos/asin are f32math's (<= 1 ulp: 1 ulp of the float32-rounded reference)
    "inverse_trig": {**_EXACT, "float16": (2e-3, 2e-3), "float32": (2.4e-7, 0.0), "float64": (1e-13, 1e-15)},
    "reduction": {**_EXACT, "float16": (1e-2, 1e-2), "float32": (1e-5, 1e-5), "float64": (1e-12, 1e-12)},
    # relative error of sums/dot products accumulated in another order than NumPy's (blocked,
    # tree or tiled order on the device); callers scale an absolute term by the magnitudes summed
    "summation": {**_EXACT, "float16": (2e-2, 0.0), "float32": (2e-5, 0.0), "float64": (1e-12, 0.0)},
    # a chain of several operations (matmul, reductions, transcendental functions) in one dtype,
    # against a float64 reference: the fuzz tests and the design-card example
    "chained": {**_EXACT, "float16": (5e-2, 5e-3), "float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12)},
    # scaled dot-product attention against a float64 reference
    "attention": {**_EXACT, "float16": (4e-3, 4e-3), "float32": (2e-5, 2e-5), "float64": (1e-11, 1e-11)},
    # a fused kernel against the same ops unfused (contracted a*b+c: one rounding fewer per step)
    "fused": {**_EXACT, "float16": (5e-3, 0.0), "float32": (1e-5, 0.0), "float64": (1e-12, 0.0)},
    # one rounding of the exact result of dtype-rounded inputs (float16: computed in f32, rounded
    # once to f16): the backend contract's correctly rounded unary/binary ops
    "rounded": {**_EXACT, "float16": (1e-3, 1e-4), "float32": (1.2e-7, 0.0), "float64": (2.3e-16, 0.0)},
    # the backend contract's transcendental unary/binary ops: GPU sin/cos/log are specified (and on
    # NVIDIA measured, ~7e-7) by absolute error, large relative to results near zero
    "builtin": {**_EXACT, "float16": (1e-3, 1e-4), "float32": (4e-6, 1e-6), "float64": (1e-13, 1e-15)},
    # -- the classes below are read with :func:`tol` (``**tol(dtype, family)`` in a call of
    # ``np.testing.assert_allclose`` / :func:`assert_same`); each names the dtypes its tests use.
    # Where a test's bound is tighter or looser than its class's, it has its own entry here with
    # the reason, so that no test is loosened by sharing a row.
    # -- elementwise: a few float32 operations against NumPy (~8 ulp: contraction into fma,
    # lavapipe's exp/log approximations); "_abs" adds a floor for results near zero
    "elementwise": {"float32": (1e-6, 0.0), "float64": (1e-6, 0.0)},
    "elementwise_abs": {"float32": (1e-6, 1e-6)},
    # dask arrays of gputensor chunks against NumPy: elementwise results (rtol 1e-6, floor 1e-5)
    "elementwise_floor": {"float32": (1e-6, 1e-5)},
    # a multiply-add the compiler may contract into one fma: callers scale the absolute term (one
    # float32 rounding of the product, 2**-23) by the product's magnitude
    "elementwise_fma": {"float32": (1e-6, 2.0**-23)},
    # 30 round trips sqrt(x)**2 in float32: 60 roundings
    "sqrt_square_round_trips": {"float32": (1e-5, 0.0)},
    # a fused a*b+c against the unfused one: at most one rounding apart (atol 0, no floor)
    "fused_contracted": {"float32": (4e-7, 0.0)},
    # the backend contract's built-in unary ops, relative error per element (float16: computed in
    # f32, rounded once; float64: emulated)
    "builtin_relative": {"float16": (2e-3, 0.0), "float32": (1e-5, 0.0), "float64": (1e-13, 0.0)},
    # float16 results of fused or unfused chains of a few ops compared with each other (each op
    # rounds to float16 unfused, once fused)
    "float16_chain": {"float16": (2e-3, 1e-3)},
    # f32math's float16 paths (computed in f32, rounded to f16) against float64
    "float16_transcendental": {"float16": (1e-3, 1e-3)},
    # atan2 written in a user kernel with WGSL's atan2 (lavapipe's approximation: ~1e-4 relative)
    "user_atan2": {"float32": (5e-4, 1e-5)},
    # complex64 division: the scaled (Smith) quotient, a few roundings more than NumPy's
    "complex_divide": {"complex64": (2e-6, 0.0)},
    # complex special values and branch cuts of the transcendental functions, per part
    "complex_special": {"complex64": (1e-6, 0.0), "complex128": (1e-14, 0.0)},
    # fftfreq in float16: i / (n d) rounded once to float16
    "float16_fftfreq": {"float16": (1e-3, 0.0)},
    # np.interp on the device: one multiply-add per value in float64
    "interp": {"float64": (1e-15, 0.0)},
    # dask's percentile over gputensor chunks (interp of sorted chunks) in float64
    "percentile": {"float64": (1e-12, 0.0)},
    # -- accumulated: sums, means, scans, dot products of moderate length (tens to thousands of
    # terms) in float32, in another order than NumPy's; "_abs" / "_fine" add an absolute floor
    # for results near zero (cancellation)
    "accumulated": {"float32": (1e-5, 0.0)},
    "accumulated_abs": {"float32": (1e-5, 1e-5)},
    "accumulated_fine": {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-6)},
    # a handful of terms (4-row sums): tighter than "accumulated"
    "sum_short": {"float32": (1e-6, 0.0)},
    # sums of 10^4-10^6 float32 terms (absolute floor at the sums' rounding)
    "sum_long": {"float32": (1e-5, 1e-3)},
    # row sums and scans of hundreds to thousands of terms
    "sum_rows": {"float32": (1e-5, 1e-4)},
    # column sums of dask chunks: per-chunk partial sums added on the host
    "sum_chunks": {"float32": (1e-4, 1e-3)},
    # complex64 sums and means of 10^5 terms
    "sum_complex_long": {"complex64": (1e-4, 1e-3)},
    # gt.sum against NumPy's sum in the same dtype of small data (equal in practice)
    "sum_in_dtype": {name: (1e-12, 0.0) for name in INT_NAMES + FLOAT_NAMES},
    # results that pass through a float16 cast (astype(float16) among array methods)
    "float16_cast": {"float16": (1e-3, 1e-3)},
    # float16 sums/means accumulated in f32 and rounded once
    "float16_sum": {"float16": (2e-3, 0.0)},
    "float16_reduction": {"float16": (5e-3, 5e-3)},
    # backend reduce at interior offsets of 4096 values: atol is scaled by the summed magnitudes
    "reduction_offsets": {"float16": (1e-2, 1e-4), "float32": (1e-4, 1e-6)},
    # one float32 sum of a few thousand terms compared as a Python float (pytest.approx's rel)
    "sum_scalar": {"float32": (1e-4, 0.0)},
    # the backend reduce kernels on small inputs (70 terms)
    "reduction_small": {"float32": (1e-5, 1e-6)},
    # one reduction rounded to the result dtype, compared with NumPy's rounded float64 result;
    # float16: f32 accumulation rounded once
    "reduction_rounded": {"float16": (2e-3, 0.0), "float32": (1e-12, 0.0), "float64": (1e-12, 0.0)},
    # two reduce paths (vector loads on/off) that sum in different orders, against each other
    "reduction_reorder": {"float32": (1e-5, 1e-3), "float64": (1e-12, 1e-9)},
    # float64 mean/var/std (two passes); float64 moments of float32 data accumulated in float64
    "moments": {"float64": (1e-12, 1e-13)},
    "variance": {"float32": (1e-4, 0.0), "float64": (1e-10, 0.0)},
    "variance_mixed": {"float64": (1e-9, 0.0)},
    # float32 variance of 1e4 + N(0, 1): the mean's rounding cancels in the squares
    "variance_cancellation": {"float32": (2e-3, 0.0)},
    # mean and std from streamed sums and sums of squares (E[x^2] - E[x]^2 cancels)
    "moments_streamed": {"float32": (1e-3, 1e-5)},
    "moments_streamed_rel": {"float32": (1e-3, 0.0)},
    # -- matmul and convolution: k-term float32 dot products (k up to a few hundred); "_small"
    # k <= 8; "_long_k" callers scale the absolute term by sqrt(k)
    "matmul": {"float32": (1e-5, 1e-5)},
    "matmul_rel": {"float32": (1e-5, 0.0)},
    "matmul_small": {"float32": (1e-5, 1e-6)},
    "matmul_long_k": {"float32": (1e-4, 3e-5)},
    # gemm with alpha = 0: beta * C, one product per element
    "gemm_beta_only": {"float32": (1e-6, 0.0)},
    # a Gram matrix x x^T of a chained block (entries of size ~100)
    "gram": {"float32": (1e-4, 1e-3)},
    # -- chained: several operations (a matmul or reduction after transcendental ones) in float32
    # ("chained" above: (1e-4, 1e-5)); these add an absolute floor or are per test
    "chained_abs": {"float32": (1e-4, 1e-4)},
    # 40 steps alternating an affine map and exp
    "chained_long": {"float32": (1e-4, 1e-6)},
    # exp(a/2) + b*b - 1 fused, in the soak test's threads
    "chained_short": {"float32": (2e-5, 2e-5)},
    # a fused chain read back from threads
    "chained_threads": {"float32": (2e-6, 1e-6)},
    # softmax along an axis with NaN/inf rows masked out (float32 against float64)
    "softmax": {"float32": (2e-5, 1e-7)},
    # layer_norm of a row of constant plus one outlier: absolute error of the normalised values
    "layer_norm_outlier": {"float32": (0.0, 3e-4)},
    # nn functions against float64 references (softmax, norms, attention pieces, conv)
    "nn": {"float16": (4e-3, 4e-3), "float32": (2e-5, 2e-6), "float64": (1e-12, 1e-13)},
    # scaled dot-product attention with scores of a few hundred (an f32 score carries ~1e-5
    # absolute error into exp), and with long key sequences head by head
    "attention_large_scores": {"float16": (4e-3, 4e-3), "float32": (1e-3, 1e-3), "float64": (1e-10, 1e-10)},
    # -- linalg (condition-dependent; the tests use well-conditioned inputs): values compared with
    # NumPy's; "_tight": float64 results that are one factorisation away from exact
    "linalg": {"float32": (2e-4, 1e-5), "float64": (1e-10, 1e-12)},
    "linalg_tight": {"float64": (1e-12, 0.0)},
    # residuals relative to the operands' norms (a few hundred units of roundoff) for the
    # factorisations (cholesky, solve, inv, qr) ...
    "linalg_residual": {"float32": (2e-5, 2e-5), "float64": (1e-12, 1e-12)},
    # ... and for eigh/svd (float32 eigh: the shifted matrix rounds the input to ~eps*||A||)
    "spectral_residual": {"float32": (1e-4, 1e-4), "float64": (1e-12, 1e-12)},
    "complex_linalg_residual": {"complex64": (2e-4, 2e-4), "complex128": (1e-12, 1e-12)},
    # determinants of singular or tiny matrices: a floor so that an exact zero compares
    "determinant_floor": {"complex64": (0.0, 1e-30), "complex128": (0.0, 1e-30)},
    # eigvalsh of a non-symmetric input (the lower triangle is used): numpy's default rtol
    "eigvalsh_lower": {"float64": (1e-7, 1e-12)},
    # singular values of a graded matrix (1 .. 1e-6) to high relative accuracy (Jacobi)
    "svd_graded": {"float64": (1e-9, 0.0)},
    # matrix norms (nuclear and 2-norms through svd) and vector norms
    # (one bound for the float32 and float64 cases of the test)
    "matrix_norm": {"float32": (1e-4, 1e-5)},
    "vector_norm": {"float32": (1e-4, 1e-6)},
    # scikit-learn estimators fitted with gputensor arrays against NumPy fits (svd solvers)
    "estimator": {"float32": (2e-4, 2e-4), "float64": (1e-10, 1e-10)},
    "estimator_metric": {"float64": (1e-8, 1e-8)},
    # -- fft: float32 transforms of n points (error ~ eps log n, relative to the input's sum)
    "fft": {"complex64": (1e-5, 1e-5)},
}
#: the families that have a row for every dtype: the ones a result's dtype picks from in
#: :func:`assert_same` / :func:`numpy_gt_allclose` (``family=``); the others name the dtypes
#: their tests use and are read with :func:`tol`
FAMILIES = ("exact", "arith", "transcendental", "inverse_trig", "reduction", "summation", "chained",
            "attention", "fused", "rounded", "builtin")
# complex64 / complex128 results take their parts' tolerances, relative to the modulus (see
# ``_compare``)
for _family in TOLERANCES.values():
    for _c, _f in (("complex64", "float32"), ("complex128", "float64")):
        if _f in _family and _c not in _family:
            _family[_c] = _family[_f]


def _name(dtype: object) -> str:
    name = getattr(dtype, "name", None)
    if name is None:
        name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    return str(name)


def tolerance(dtype: object, family: str = "arith") -> tuple[float, float]:
    """(rtol, atol) for a result of ``dtype`` (a gputensor/NumPy dtype or its name)."""
    return TOLERANCES[family][_name(dtype)]


def tol(dtype: object, family: str) -> dict[str, float]:
    """``{"rtol": ..., "atol": ...}`` of :data:`TOLERANCES` for ``dtype`` (a dtype or its name)
    in ``family``, to pass as keyword arguments (``**tol("float32", "matmul")``); raises
    KeyError for a family or dtype the table does not have."""
    rtol, atol = TOLERANCES[family][_name(dtype)]
    return {"rtol": rtol, "atol": atol}


def assert_close(actual: np.ndarray, expected: np.ndarray, dtype: object, family: str = "arith") -> None:
    """Compare ``actual`` with ``expected`` (cast to ``dtype``) using the table; NaNs must match,
    infinities must match exactly, shapes and the dtype must be equal."""
    name = _name(dtype)
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


#: relative tolerance per float dtype of results computed in another summation order than NumPy's
RTOL = {name: TOLERANCES["summation"][name][0] for name in FLOAT_NAMES}

# ---------------------------------------------------------------------------------------------
# dtypes and parametrization
# ---------------------------------------------------------------------------------------------
#: the dtypes the device has: the Array API dtypes it reports (int64, uint64 and float64 need
#: shader-int64 / shader-f64) and float16, which needs no feature (computed in f32)
_DEVICE_DTYPES = set(gt.__array_namespace_info__().dtypes()) | {"float16"}
#: the dtypes hypothesis draws from: every real dtype the device has
ALL = [np.dtype(n) for n in ("bool",) + INT_NAMES + FLOAT_NAMES if n in _DEVICE_DTYPES]
NUMERIC = [d for d in ALL if d.kind in "iuf"]
INTEGER = [d for d in ALL if d.kind in "iu"]
FLOATING = [d for d in ALL if d.kind == "f"]
COMPLEX_NAMES = ("complex64", "complex128")
COMPLEX = [np.dtype(n) for n in COMPLEX_NAMES if n in _DEVICE_DTYPES]


def for_dtypes(dtypes: Iterable[object], name: str = "dtype") -> Callable[[Callable[..., Any]], Any]:
    """Parametrize a test over ``dtypes``, passed as names (``"float32"``) in argument ``name``."""
    return pytest.mark.parametrize(name, [_name(d) for d in dtypes])


def for_all_dtypes(name: str = "dtype", *, no_bool: bool = False, no_float16: bool = False,
                   no_float64: bool = False, no_int: bool = False, no_unsigned: bool = False,
                   no_float: bool = False) -> Callable[[Callable[..., Any]], Any]:
    """Parametrize over every dtype gputensor has (bool, the eight integers, three floats),
    minus the groups switched off."""
    names = []
    for n in ("bool",) + INT_NAMES + FLOAT_NAMES:
        if (no_bool and n == "bool") or (no_float16 and n == "float16") or (no_float64 and n == "float64"):
            continue
        if (no_int and n in INT_NAMES) or (no_unsigned and n.startswith("uint")):
            continue
        if no_float and n in FLOAT_NAMES:
            continue
        names.append(n)
    return for_dtypes(names, name)


def for_float_dtypes(name: str = "dtype", *, no_float16: bool = False) -> Callable[[Callable[..., Any]], Any]:
    """Parametrize over the float dtypes."""
    return for_dtypes([n for n in FLOAT_NAMES if not (no_float16 and n == "float16")], name)


def for_int_dtypes(name: str = "dtype", *, no_bool: bool = True,
                   no_unsigned: bool = False) -> Callable[[Callable[..., Any]], Any]:
    """Parametrize over the integer dtypes (bool included with ``no_bool=False``)."""
    names = ([] if no_bool else ["bool"]) + [n for n in INT_NAMES if not (no_unsigned and n.startswith("uint"))]
    return for_dtypes(names, name)


# ---------------------------------------------------------------------------------------------
# the same body with numpy and with gputensor
# ---------------------------------------------------------------------------------------------
#: kinds of error that count as "the same error" when NumPy and gputensor both raise
_ERROR_KINDS = (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError, OverflowError,
                NotImplementedError, MemoryError, RuntimeError)


def to_numpy(x: Any) -> Any:
    """gputensor arrays as NumPy arrays (recursively in tuples and lists); anything else as is."""
    if isinstance(x, gt.GpuArray):
        return gt.asnumpy(x)
    if isinstance(x, (tuple, list)):
        return type(x)(to_numpy(v) for v in x) if not hasattr(x, "_fields") else tuple(to_numpy(v) for v in x)
    return x


def check_same_error(np_error: BaseException, gt_error: BaseException,
                     accept: bool | type[BaseException] | tuple[type[BaseException], ...]) -> None:
    """Fail unless both errors are accepted and of the same kind: gputensor's error is an instance
    of one of the standard classes NumPy's error is an instance of (or of NumPy's class)."""
    if accept is False:
        raise AssertionError(f"NumPy raised {np_error!r} and gputensor raised {gt_error!r}; the test "
                             "accepts no error") from gt_error
    if accept is not True and not isinstance(np_error, accept):
        raise AssertionError(f"NumPy raised {np_error!r}, not one of the accepted {accept}") from np_error
    kinds = tuple(k for k in _ERROR_KINDS if isinstance(np_error, k)) or (type(np_error),)
    if not isinstance(gt_error, kinds + (type(np_error),)):
        raise AssertionError(f"gputensor raised {type(gt_error).__name__} ({gt_error}) where NumPy raised "
                             f"{type(np_error).__name__} ({np_error})") from gt_error


def device_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype gputensor gives where NumPy gives ``dtype``: the same, except int64/uint64 on a
    device without ``shader-int64``, whose default integer dtype is int32 (the Array API's
    default dtypes are per device: ``__array_namespace_info__().default_dtypes()``); values
    are still compared exactly. There NumPy's int64 is also accepted (``_compare``): int64
    data beyond int32 is kept as int64, emulated as two 32-bit words."""
    if dtype.kind in "iu" and dtype.itemsize == 8:
        integral = gt.__array_namespace_info__().default_dtypes()["integral"]
        if integral.name == "int32":
            return np.dtype("int32" if dtype.kind == "i" else "uint32")
    return dtype


def _compare(np_result: Any, gt_result: Any, family: str, rtol: Any, atol: Any, type_check: bool,
             where: str = "result", scale: Any = None) -> None:
    if isinstance(np_result, (tuple, list)):
        assert isinstance(gt_result, (tuple, list)), f"{where}: gputensor returned {type(gt_result)}"
        assert len(np_result) == len(gt_result), f"{where}: {len(gt_result)} results, NumPy {len(np_result)}"
        for i, (a, b) in enumerate(zip(np_result, gt_result)):
            _compare(a, b, family, rtol, atol, type_check, f"{where}[{i}]", scale)
        return
    if np_result is None:
        assert gt_result is None, f"{where}: gputensor returned {gt_result!r}, NumPy None"
        return
    if isinstance(np_result, (bool, int, float)) and not isinstance(np_result, np.generic):
        assert type(gt_result) is type(np_result), (where, type(gt_result), type(np_result))
    expected, actual = np.asarray(np_result), np.asarray(gt_result)
    assert actual.shape == expected.shape, f"{where}: shape {actual.shape}, NumPy {expected.shape}"
    if type_check:
        want = device_dtype(expected.dtype)
        # int64 data beyond int32 stays int64 where the default integer is int32 (emulated)
        assert actual.dtype in (want, expected.dtype), f"{where}: dtype {actual.dtype}, NumPy {expected.dtype}" + (
            f" (on this device {want})" if want != expected.dtype else "")
    # the tolerance of the dtype gputensor computed in (a float32 result against a float64
    # reference gets float32's)
    name = actual.dtype.name if not type_check and actual.dtype.kind in "fc" else expected.dtype.name
    r, a = tolerance(name, family) if name in TOLERANCES[family] else (0.0, 0.0)
    if rtol is not None:
        r = rtol.get(name, r) if isinstance(rtol, dict) else rtol
    if atol is not None:
        a = atol.get(name, a) if isinstance(atol, dict) else atol
    if scale is not None:  # an absolute term scaled by the magnitudes that were summed
        a = a + r * np.asarray(scale, dtype=np.float64)
    if (r == 0 and np.all(a == 0)) or (expected.dtype.kind not in "fc" and actual.dtype.kind not in "fc"):
        np.testing.assert_array_equal(actual, expected, err_msg=where, strict=False)
    elif "c" in (expected.dtype.kind, actual.dtype.kind):
        # each part within the tolerance relative to the expected modulus (the usual measure of
        # complex error: a part much smaller than the modulus carries its cancellation)
        with np.errstate(all="ignore"):
            gc, rc = actual.astype(np.complex128), expected.astype(np.complex128)
            mag = np.abs(rc)
            ok = np.ones(np.broadcast_shapes(gc.shape, rc.shape), dtype=bool)
            for part in (np.real, np.imag):
                g64, r64 = part(gc), part(rc)
                ok &= (g64 == r64) | (np.isnan(g64) & np.isnan(r64)) | (np.abs(g64 - r64) <= a + r * mag)
        if not np.all(ok):
            bad = ~ok
            raise AssertionError(f"{where}: {int(bad.sum())} of {bad.size} values beyond rtol={r:g} (+atol): "
                                 f"got {np.broadcast_to(gc, ok.shape)[bad][:6]}, "
                                 f"want {np.broadcast_to(rc, ok.shape)[bad][:6]}")
    else:
        with np.errstate(all="ignore"):
            g64, r64 = actual.astype(np.float64), expected.astype(np.float64)
            ok = (g64 == r64) | (np.isnan(g64) & np.isnan(r64)) | (np.abs(g64 - r64) <= a + r * np.abs(r64))
        if not np.all(ok):
            bad = ~np.broadcast_to(ok, g64.shape)
            raise AssertionError(f"{where}: {int(bad.sum())} of {bad.size} values beyond rtol={r:g} (+atol): "
                                 f"got {g64[bad][:6]}, want {r64[bad][:6]}")


def assert_same(actual: Any, expected: Any, family: str = "exact", *,
                rtol: float | dict[str, float] | None = None, atol: float | dict[str, float] | None = None,
                type_check: bool = True, err_msg: str = "result", scale: Any = None,
                signed_zeros: bool = False) -> None:
    """Compare a gputensor result (array, scalar, or tuple/list of them) with NumPy's: shapes,
    dtypes (``type_check``), and values exactly or within the ``family`` tolerance of the
    result's dtype (``rtol``/``atol`` override it, as numbers or per dtype name; ``scale``
    adds ``rtol * scale`` to the absolute tolerance, e.g. the summed magnitudes of a sum).
    ``signed_zeros``: float zeros must also have NumPy's signs (copies, gathers)."""
    got = to_numpy(actual)
    _compare(expected, got, family, rtol, atol, type_check, err_msg, scale)
    if signed_zeros and np.asarray(expected).dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(np.asarray(got)), np.signbit(np.asarray(expected)), err_msg=err_msg)


def run_both(body: Callable[[Any], Any], family: str = "exact", *,
             accept_error: bool | type[BaseException] | tuple[type[BaseException], ...] = False,
             **options: Any) -> None:
    """Run ``body(xp)`` with NumPy and with gputensor and compare the results as
    :func:`numpy_gt_allclose` does (for bodies that need values drawn outside them, such as
    hypothesis draws)."""
    numpy_gt_allclose(family, accept_error=accept_error, **options)(body)()


def numpy_gt_allclose(family: str = "arith", *, rtol: float | dict[str, float] | None = None,
                      atol: float | dict[str, float] | None = None, name: str = "xp",
                      type_check: bool = True,
                      accept_error: bool | type[BaseException] | tuple[type[BaseException], ...] = False,
                      ) -> Callable[[Callable[..., Any]], Callable[..., None]]:
    """Decorate a test whose body takes the namespace as argument ``name`` and returns its
    result: run it with NumPy and with gputensor and compare (``family`` of :data:`TOLERANCES`
    picks the per-dtype tolerance of the result's dtype; ``rtol``/``atol`` override it, as
    numbers or per dtype name). ``type_check`` compares result dtypes. ``accept_error``: True
    or exception type(s) NumPy may raise, in which case gputensor must raise the same kind of
    error (:func:`check_same_error`); with False any error fails the test."""

    def decorator(body: Callable[..., Any]) -> Callable[..., None]:
        sig = inspect.signature(body)
        reduced = sig.replace(parameters=[p for p in sig.parameters.values() if p.name != name])

        @functools.wraps(body)
        def test(*args: Any, **kwargs: Any) -> None:
            given = reduced.bind(*args, **kwargs).arguments  # positional (hypothesis) or by name
            np_error = gt_error = None
            np_result = gt_result = None
            try:
                np_result = body(**given, **{name: np})
            except Exception as exc:  # noqa: BLE001 - compared below
                np_error = exc
            try:
                gt_result = to_numpy(body(**given, **{name: gt}))
            except Exception as exc:  # noqa: BLE001
                gt_error = exc
            if np_error is not None and gt_error is not None:
                check_same_error(np_error, gt_error, accept_error)
                return
            if gt_error is not None:
                raise AssertionError(f"gputensor raised where NumPy returned {np_result!r:.80}") from gt_error
            if np_error is not None:
                raise AssertionError(f"NumPy raised {np_error!r} where gputensor returned a result") from np_error
            _compare(np_result, gt_result, family, rtol, atol, type_check)

        test.__signature__ = reduced  # type: ignore[attr-defined]
        return test

    return decorator


def numpy_gt_array_equal(**kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., None]]:
    """:func:`numpy_gt_allclose` with the ``exact`` family (results must be equal)."""
    return numpy_gt_allclose("exact", **kwargs)


def numpy_gt_raises(body: Callable[[Any], Any], accept: bool | type[BaseException] | tuple = True) -> None:
    """Run ``body(xp)`` with NumPy and gputensor; both must raise errors of the same kind."""
    errors = []
    for xp in (np, gt):
        try:
            body(xp)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)
        else:
            raise AssertionError(f"{xp.__name__} raised nothing")
    check_same_error(errors[0], errors[1], accept)


# ---------------------------------------------------------------------------------------------
# device arrays and hypothesis strategies
# ---------------------------------------------------------------------------------------------
def gpu(a: object) -> gt.GpuArray:
    """Upload ``a`` (any array-like, 0-d included) as a contiguous device array."""
    return gt.asarray(np.asarray(a))


def gt_dtype(d: object) -> Any:
    """gputensor's dtype of the same name as ``d``."""
    return getattr(gt, _name(d))


@st.composite
def arrays(draw: Any, dtypes: Sequence[np.dtype] = NUMERIC, min_dims: int = 0, max_dims: int = 3,
           max_side: int = 5, elements: Callable[[np.dtype], Any] | None = None,
           views: bool = True) -> tuple[np.ndarray, gt.GpuArray]:
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


def bounded(lo: float, hi: float) -> Callable[[np.dtype], Any]:
    """Elements strategy factory: floats in [lo, hi] (no NaN), integers of the dtype."""

    def make(dtype: np.dtype) -> Any:
        if dtype.kind == "f":
            return hnp.from_dtype(dtype, min_value=lo, max_value=hi, allow_nan=False, allow_subnormal=False)
        if dtype.kind == "b":
            return st.booleans()
        return hnp.from_dtype(dtype)

    return make


def axes_for(ndim: int) -> Any:
    """None, an int or a tuple of distinct axes (negative allowed) of an ``ndim``-d array."""
    if ndim == 0:
        return st.sampled_from([None, ()])
    ints = st.integers(-ndim, ndim - 1)
    tup = st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).map(tuple)
    return st.none() | ints | tup
