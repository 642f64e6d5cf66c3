"""Tests for gputensor._shapes, checked against NumPy and array-api-strict."""

import itertools
import math

import array_api_strict as xps
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gputensor import _shapes as sh

ITEMSIZE = np.dtype(np.int64).itemsize


def element_strides(a):
    return tuple(s // ITEMSIZE for s in a.strides)


def offsets(shape, strides):
    """Element offsets visited by a row-major walk over shape."""
    return [
        sum(i * s for i, s in zip(index, strides))
        for index in itertools.product(*(range(n) for n in shape))
    ]


def outcome(func, *args):
    try:
        return ("ok", func(*args))
    except Exception as exc:  # noqa: BLE001 - we compare exception types
        return ("raises", type(exc))


# ------------------------------------------------------------------- strategies

small_shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)


@st.composite
def strided_arrays(draw):
    """int64 views with arbitrary layouts: permuted, sliced, flipped, broadcast."""
    min_side = 0 if draw(st.integers(0, 9)) == 0 else 1  # empty arrays now and then
    base_shape = draw(
        hnp.array_shapes(min_dims=0, max_dims=4, min_side=min_side, max_side=6)
    )
    a = np.arange(math.prod(base_shape), dtype=np.int64).reshape(base_shape)
    a = a.transpose(draw(st.permutations(range(a.ndim))))
    slices = []
    for size in a.shape:
        step = draw(st.sampled_from([1, 1, 2, 3, -1, -2]))
        start = draw(st.integers(0, max(size - 1, 0)))
        stop = draw(st.integers(min(start + 1, size), size))
        if step > 0:
            slices.append(slice(start, stop, step))
        else:  # the same range, walked backwards
            slices.append(slice(stop - 1, start - 1 if start else None, step))
    a = a[tuple(slices)]
    if draw(st.booleans()):  # broadcast some new and some size-1 axes
        new_axes = draw(st.integers(0, 2))
        a = a.reshape((1,) * new_axes + a.shape)
        target = tuple(
            draw(st.integers(1, 3)) if size == 1 else size for size in a.shape
        )
        a = np.broadcast_to(a, target)
    return a


def factors(n):
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


@st.composite
def reshape_targets(draw, shape):
    """New shapes of the same size, mostly regroupings of the old dims' factors."""
    size = math.prod(shape)
    if size == 0:
        dims = draw(st.lists(st.integers(0, 4), max_size=4))
        position = draw(st.integers(0, len(dims)))
        return tuple(dims[:position] + [0] + dims[position:])
    pieces = [f for n in shape for f in factors(n)]
    if draw(st.booleans()):
        pieces = draw(st.permutations(pieces))
    for _ in range(draw(st.integers(0, 2))):
        pieces.insert(draw(st.integers(0, len(pieces))), 1)
    dims, current = [], 1
    for piece in pieces:
        current *= piece
        if draw(st.booleans()):
            dims.append(current)
            current = 1
    if current != 1 or not dims:
        dims.append(current)
    return tuple(dims)


# ------------------------------------------------------------- sizes, broadcast


@given(small_shapes)
def test_size_of(shape):
    assert sh.size_of(shape) == np.empty(shape).size


@given(hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=4))
def test_broadcast_shapes_matches_numpy(shapes):
    assert sh.broadcast_shapes(*shapes.input_shapes) == shapes.result_shape
    assert sh.broadcast_shapes(*shapes.input_shapes) == np.broadcast_shapes(
        *shapes.input_shapes
    )


@given(st.lists(small_shapes, min_size=0, max_size=3))
def test_broadcast_shapes_errors_like_numpy(shapes):
    expected = outcome(np.broadcast_shapes, *shapes)
    got = outcome(sh.broadcast_shapes, *shapes)
    if expected[0] == "ok":
        assert got == ("ok", tuple(expected[1]))
    else:
        assert got == ("raises", ValueError)


def test_broadcast_shapes_message_names_shapes():
    assert sh.broadcast_shapes() == ()
    assert sh.broadcast_shapes((3, 1), (1, 0)) == (3, 0)
    with pytest.raises(ValueError, match=r"\(2, 3\), \(4,\)"):
        sh.broadcast_shapes((2, 3), (4,))


# ------------------------------------------------------------------------- axes


def test_axis_error_is_strict_type():
    x = xps.ones((2, 3))
    for call in (lambda: xps.sum(x, axis=2), lambda: xps.expand_dims(x, axis=3),
                 lambda: xps.sum(x, axis=-3)):
        with pytest.raises(sh.AxisError):
            call()
    assert sh.AxisError is np.exceptions.AxisError
    assert issubclass(sh.AxisError, IndexError) and issubclass(sh.AxisError, ValueError)


@pytest.mark.parametrize("ndim", [0, 1, 3])
def test_normalize_axis(ndim):
    for axis in range(-ndim, ndim):
        assert sh.normalize_axis(axis, ndim) == axis % ndim
        assert sh.normalize_axis(np.int64(axis), ndim) == axis % ndim
    for axis in (ndim, -ndim - 1, 10):
        with pytest.raises(sh.AxisError, match="out of bounds"):
            sh.normalize_axis(axis, ndim)


@pytest.mark.parametrize("bad", [True, 1.0, "0", None, [0]])
def test_normalize_axis_type_errors(bad):
    with pytest.raises(TypeError):
        sh.normalize_axis(bad, 2)


def test_normalize_axes():
    assert sh.normalize_axes(None, 3) == (0, 1, 2)
    assert sh.normalize_axes(None, 0) == ()
    assert sh.normalize_axes(-1, 3) == (2,)
    assert sh.normalize_axes((2, 0), 3) == (0, 2)
    assert sh.normalize_axes((-1, 0), 3) == (0, 2)
    assert sh.normalize_axes((), 3) == ()
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        sh.normalize_axes((0, -3), 3)
    with pytest.raises(sh.AxisError):
        sh.normalize_axes((0, 3), 3)
    for bad in ([0], 1.0, (0, 1.0), (True,)):
        with pytest.raises(TypeError):
            sh.normalize_axes(bad, 3)


def test_normalize_axes_errors_match_strict():
    x = xps.ones((2, 3))
    for axis in [(0, 0), (0, -2), (0, 2), 5, (1.0,), [0]]:
        status, expected = outcome(lambda: xps.sum(x, axis=axis))
        assert status == "raises"
        with pytest.raises(expected):
            sh.normalize_axes(axis, 2)


# ---------------------------------------------------------------------- strides


@given(small_shapes)
def test_contiguous_strides_match_numpy(shape):
    strides = sh.contiguous_strides(shape)
    assert sh.is_contiguous(shape, strides)
    if math.prod(shape) > 0:
        assert strides == element_strides(np.empty(shape, dtype=np.int64))
    else:  # size-0 dims count as 1
        assert all(s > 0 for s in strides)
        assert strides == sh.contiguous_strides([max(n, 1) for n in shape])


@given(strided_arrays())
def test_is_contiguous_matches_numpy(a):
    assert sh.is_contiguous(a.shape, element_strides(a)) == a.flags.c_contiguous


@given(strided_arrays(), st.data())
def test_broadcast_strides_matches_numpy(a, data):
    extra = data.draw(st.lists(st.integers(0, 3), max_size=2))
    target = tuple(extra) + tuple(
        data.draw(st.integers(0, 3)) if n == 1 else n for n in a.shape
    )
    expected = np.broadcast_to(a, target)
    assert sh.broadcast_strides(a.shape, element_strides(a), target) == element_strides(
        expected
    )


def test_broadcast_strides_examples():
    assert sh.broadcast_strides((3,), (2,), (4, 3)) == (0, 2)
    assert sh.broadcast_strides((1, 3), (3, 1), (5, 3)) == (0, 1)
    assert sh.broadcast_strides((1, 3), (3, 1), (1, 3)) == (0, 1)  # as NumPy
    assert sh.broadcast_strides((2, 1), (1, 1), (2, 0)) == (1, 0)
    assert sh.broadcast_strides((), (), (2,)) == (0,)


def test_broadcast_strides_errors():
    with pytest.raises(ValueError):
        sh.broadcast_strides((2, 3), (3, 1), (2, 4))
    with pytest.raises(ValueError):
        sh.broadcast_strides((2, 3), (3, 1), (3,))
    with pytest.raises(ValueError):
        sh.broadcast_strides((2, 3), (1,), (2, 3))


# ------------------------------------------------------------------- merge_dims

stride_values = st.integers(-12, 12)


@st.composite
def shape_and_operand_strides(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=5, min_side=0, max_side=4))
    count = draw(st.integers(1, 3))
    operands = []
    for _ in range(count):
        kind = draw(st.sampled_from(["contiguous", "random", "view"]))
        if kind == "contiguous":
            operands.append(sh.contiguous_strides(shape))
        elif kind == "random":
            operands.append(tuple(draw(stride_values) for _ in shape))
        else:  # contiguous with some dims broadcast or flipped
            strides = list(sh.contiguous_strides(shape))
            for i in range(len(strides)):
                change = draw(st.sampled_from(["keep", "keep", "zero", "flip"]))
                strides[i] = {"keep": 1, "zero": 0, "flip": -1}[change] * strides[i]
            operands.append(tuple(strides))
    return shape, operands


@settings(max_examples=300)
@given(shape_and_operand_strides())
def test_merge_dims_preserves_offsets(case):
    shape, operands = case
    merged_shape, merged = sh.merge_dims(shape, *operands)
    assert len(merged) == len(operands)
    assert len(merged_shape) >= 1
    assert all(len(s) == len(merged_shape) for s in merged)
    assert math.prod(merged_shape) == math.prod(shape)
    if math.prod(shape) == 0:
        assert merged_shape == (0,) and merged == [(1,)] * len(operands)
        return
    if math.prod(shape) == 1:
        assert merged_shape == (1,) and merged == [(1,)] * len(operands)
        return
    # Same offsets, in the same joint order, for every operand.
    walks = [offsets(shape, s) for s in operands]
    merged_walks = [offsets(merged_shape, s) for s in merged]
    assert merged_walks == walks
    # Minimal: no size-1 dims and no adjacent pair that could still merge.
    assert 1 not in merged_shape
    for i in range(len(merged_shape) - 1):
        assert not all(
            s[i] == merged_shape[i + 1] * s[i + 1] for s in merged
        )


def test_merge_dims_examples():
    # contiguous + broadcast row: rows stay separate only for the broadcast operand
    assert sh.merge_dims((4, 5), (5, 1), (5, 1)) == ((20,), [(1,), (1,)])
    assert sh.merge_dims((4, 5), (5, 1), (0, 1)) == ((4, 5), [(5, 1), (0, 1)])
    assert sh.merge_dims((2, 1, 3), (3, 3, 1)) == ((6,), [(1,)])
    assert sh.merge_dims((3, 4), (-4, -1)) == ((12,), [(-1,)])
    assert sh.merge_dims((), (), ()) == ((1,), [(1,), (1,)])
    assert sh.merge_dims((1, 1), (7, 9)) == ((1,), [(1,)])
    assert sh.merge_dims((2, 0, 3), (0, 0, 0)) == ((0,), [(1,)])
    assert sh.merge_dims((2, 3)) == ((6,), [])
    with pytest.raises(ValueError):
        sh.merge_dims((2, 3), (1,))


# ---------------------------------------------------------------------- reshape


@given(small_shapes, st.data())
def test_reshape_shape_matches_numpy(shape, data):
    size = math.prod(shape)
    target = list(data.draw(reshape_targets(shape)))
    if target and data.draw(st.booleans()):
        target[data.draw(st.integers(0, len(target) - 1))] = -1
    if data.draw(st.integers(0, 4)) == 0:  # sometimes a wrong size
        target.append(data.draw(st.integers(2, 3)))
    expected = outcome(np.empty(shape).reshape, tuple(target))
    got = outcome(sh.reshape_shape, shape, tuple(target))
    if expected[0] == "ok":
        assert got == ("ok", expected[1].shape)
        assert math.prod(got[1]) == size
    else:
        assert got == ("raises", ValueError)


def test_reshape_shape_errors():
    assert sh.reshape_shape((2, 3), (-1,)) == (6,)
    assert sh.reshape_shape((0, 3), (-1, 3)) == (0, 3)
    assert sh.reshape_shape((), ()) == ()
    assert sh.reshape_shape((1,), (-1, 1)) == (1, 1)
    with pytest.raises(ValueError, match="one unknown"):
        sh.reshape_shape((2, 3), (-1, -1))
    with pytest.raises(ValueError):
        sh.reshape_shape((0, 3), (-1, 0))  # ambiguous, as NumPy
    with pytest.raises(ValueError):
        sh.reshape_shape((2, 3), (-2, -3))
    with pytest.raises(ValueError, match=r"\(2, 3\)"):
        sh.reshape_shape((2, 3), (4,))
    with pytest.raises(TypeError):
        sh.reshape_shape((2, 3), (6.0,))


@settings(max_examples=500)
@given(strided_arrays(), st.data())
def test_view_strides_for_reshape_matches_numpy(a, data):
    new_shape = data.draw(reshape_targets(a.shape))
    got = sh.view_strides_for_reshape(a.shape, element_strides(a), new_shape)
    try:
        view = np.reshape(a, new_shape, copy=False)
    except ValueError:
        assert got is None
        return
    assert got is not None
    if a.size:
        assert got == element_strides(view)
        # The view addresses the same elements in the same order.
        assert offsets(new_shape, got) == offsets(a.shape, element_strides(a))


def test_view_strides_for_reshape_examples():
    # transposed 2x3 cannot be flattened without a copy
    assert sh.view_strides_for_reshape((3, 2), (1, 3), (6,)) is None
    # splitting a strided dim is fine
    assert sh.view_strides_for_reshape((6,), (2,), (2, 3)) == (6, 2)
    # unchanged shape keeps strides, even broadcast ones
    assert sh.view_strides_for_reshape((2, 3), (0, 1), (2, 3)) == (0, 1)
    # inserting size-1 dims into a non-contiguous array (NumPy's strides)
    assert sh.view_strides_for_reshape((3, 2), (1, 3), (3, 1, 2)) == (1, 6, 3)
    # contiguous arrays get fresh contiguous strides
    assert sh.view_strides_for_reshape((2, 3), (3, 1), (3, 1, 2)) == (2, 2, 1)
    with pytest.raises(ValueError):
        sh.view_strides_for_reshape((2, 3), (3, 1), (5,))
    with pytest.raises(ValueError):
        sh.view_strides_for_reshape((2, 3), (3, 1), (-1,))
