"""The comparison helper itself (tests/_compare.py): it must fail when gputensor and NumPy differ
in value, dtype, shape or error kind, and pass when they agree within the table's tolerance."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gputensor as gt

from _compare import (FAMILIES, TOLERANCES, assert_close, check_same_error, for_all_dtypes, for_dtypes, for_float_dtypes,
                      for_int_dtypes, numpy_gt_allclose, numpy_gt_array_equal, numpy_gt_raises, tolerance, to_numpy)


@for_all_dtypes()
@numpy_gt_array_equal()
def test_same_body_runs_with_both_namespaces(xp, dtype):
    a = xp.asarray(np.arange(6).reshape(2, 3) % 2 == 0 if dtype == "bool" else np.arange(6).reshape(2, 3),
                   dtype=getattr(xp, dtype))
    return xp.flip(a, axis=1)


@for_float_dtypes()
@numpy_gt_allclose("transcendental")
def test_tolerance_of_the_result_dtype(xp, dtype):
    return xp.exp(xp.asarray(np.linspace(-2, 2, 11), dtype=getattr(xp, dtype)))


@numpy_gt_array_equal()
def test_tuples_of_results(xp):
    values = xp.asarray(np.array([3, 1, 3, 2], dtype=np.int32))
    return xp.unique_counts(values)


@numpy_gt_allclose(accept_error=ValueError)
def test_matching_errors_pass(xp):
    return xp.reshape(xp.asarray(np.arange(6.0)), (4, 2))


def test_mismatches_fail():
    @numpy_gt_allclose()
    def wrong_value(xp):
        x = xp.asarray(np.arange(4.0))
        return x + 1 if xp is gt else x

    @numpy_gt_allclose()
    def wrong_dtype(xp):
        return xp.asarray(np.arange(4.0), dtype=xp.float32 if xp is gt else xp.float64)

    @numpy_gt_allclose()
    def wrong_shape(xp):
        return xp.reshape(xp.asarray(np.arange(4.0)), (4, 1) if xp is gt else (4,))

    @numpy_gt_allclose()
    def only_numpy_raises(xp):
        if xp is np:
            raise ValueError("numpy")
        return xp.asarray(1.0)

    @numpy_gt_allclose()
    def only_gt_raises(xp):
        if xp is gt:
            raise ValueError("gt")
        return xp.asarray(1.0)

    @numpy_gt_allclose(accept_error=True)
    def other_error_kind(xp):
        raise (TypeError if xp is gt else IndexError)("x")

    @numpy_gt_allclose()
    def errors_not_accepted(xp):
        raise ValueError("x")

    for body in (wrong_value, wrong_dtype, wrong_shape, only_numpy_raises, only_gt_raises, other_error_kind,
                 errors_not_accepted):
        with pytest.raises(AssertionError):
            body()


def test_within_tolerance_passes_and_beyond_fails():
    rtol, _ = tolerance("float32", "arith")

    @numpy_gt_allclose("arith")
    def close(xp):
        x = xp.asarray(np.ones(4, dtype=np.float32))
        return x * (1 + rtol / 2) if xp is gt else x

    @numpy_gt_allclose("arith")
    def far(xp):
        x = xp.asarray(np.ones(4, dtype=np.float32))
        return x * (1 + 100 * rtol) if xp is gt else x

    close()
    with pytest.raises(AssertionError):
        far()


def test_error_kinds():
    check_same_error(IndexError("np"), IndexError("gt"), True)
    check_same_error(np.exceptions.AxisError("np"), ValueError("gt"), True)  # AxisError is a ValueError
    with pytest.raises(AssertionError):
        check_same_error(ValueError("np"), TypeError("gt"), True)
    with pytest.raises(AssertionError):
        check_same_error(ValueError("np"), ValueError("gt"), TypeError)
    numpy_gt_raises(lambda xp: xp.asarray(np.arange(3))[5], IndexError)
    with pytest.raises(AssertionError):
        numpy_gt_raises(lambda xp: xp.asarray(np.arange(3))[1])


def test_table_and_parametrizers():
    for family in FAMILIES:
        rows = TOLERANCES[family]
        assert set(rows) >= {"bool", "int32", "float16", "float32", "float64"}, family
        assert all(rows[n] == (0.0, 0.0) for n in ("bool", "int8", "uint64")), family
    assert tolerance(gt.float32, "exact") == (0.0, 0.0)
    assert tolerance(np.dtype("float64"), "summation") == TOLERANCES["summation"]["float64"]
    assert_close(np.float32([1, 2]), np.float64([1, 2]), "float32")
    with pytest.raises(AssertionError):
        assert_close(np.float32([1, 2]), np.float64([1, 3]), "float32")

    def names(mark):
        return list(mark.mark.args[1])

    assert names(for_all_dtypes()) == ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                       "uint64", "float16", "float32", "float64"]
    assert names(for_all_dtypes(no_bool=True, no_float16=True, no_unsigned=True)) == [
        "int8", "int16", "int32", "int64", "float32", "float64"]
    assert names(for_float_dtypes(no_float16=True)) == ["float32", "float64"]
    assert names(for_int_dtypes(no_unsigned=True)) == ["int8", "int16", "int32", "int64"]
    assert names(for_dtypes([np.float32, gt.int8])) == ["float32", "int8"]
    assert isinstance(to_numpy((gt.asarray(1.0), [gt.asarray(2)]))[1][0], np.ndarray)


@settings(max_examples=5)
@given(n=st.integers(0, 6), dtype=st.sampled_from(["float32", "int16"]))
@numpy_gt_array_equal()
def test_works_under_hypothesis_and_fixtures(xp, n, dtype, backend):
    """The decorated body takes hypothesis arguments and pytest fixtures beside ``xp``."""
    assert backend is not None
    return xp.cumulative_sum(xp.asarray(np.arange(n), dtype=getattr(xp, dtype)))
