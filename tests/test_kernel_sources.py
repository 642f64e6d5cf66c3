"""Every kernel the library generates compiles on the WebGPU implementation the suite runs on
(naga under wgpu-native, Tint under Dawn).

A tour of the public API, per family of operations and per dtype the device has, on small
inputs sized to reach each kernel (the small and blocked linalg paths, radix and bitonic sorts,
Stockham and chirp fft sizes, split-k gemm, ...), makes the library render and compile its
kernel variants; a kernel the implementation rejects fails the case, naming the kernel and the
compiler's message. A last test checks that every kernel source of ``gputensor/_wgsl`` (a file
with an entry point ``main``) was compiled in this process, except the ones listed in
``_NOT_TOURED`` with the reason (a feature the adapter lacks, or a kernel only tests run).
"""

from __future__ import annotations

import importlib.resources
import os
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import gputensor as gt
from gputensor._backend import config, get_backend, implementation, ops_attention, ops_triangular
from gputensor._backend.elementwise_ops import NAMESPACE_OPS
from gputensor._backend.errors import BackendError

_RNG = np.random.default_rng(7)

_DTYPES = sorted(gt.__array_namespace_info__().dtypes(), key=str)
_REAL = [n for n in _DTYPES if n != "bool" and not n.startswith("complex")]
_FLOAT = [n for n in _DTYPES if n.startswith("float")]
_FLOAT_COMPLEX = [n for n in _DTYPES if n.startswith(("float32", "float64", "complex"))]


def _data(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """Small values of ``dtype`` (positive for the unsigned, mixed signs otherwise)."""
    if dtype == "bool":
        return _RNG.random(shape) < 0.5
    if dtype.startswith("complex"):
        return (_RNG.standard_normal(shape) + 1j * _RNG.standard_normal(shape)).astype(dtype)
    if dtype.startswith("float"):
        return _RNG.standard_normal(shape).astype(dtype)
    low = 0 if dtype.startswith("uint") else -9
    return _RNG.integers(low, 10, shape).astype(dtype)


def _elementwise(dtype: str) -> None:
    x, y, z = (gt.asarray(_data(dtype, (33,))) for _ in range(3))
    for name, row in NAMESPACE_OPS.items():
        args = (x, y, z)[: row.arity]
        try:
            result = getattr(gt, name)(*args)
        except TypeError:  # the op is not defined for this dtype category
            continue
        np.asarray(result)
    np.asarray(gt.where(gt.asarray(_data("bool", (33,))), x, y))
    if dtype != "bool" and not dtype.startswith("complex"):
        np.asarray(gt.clip(x, x, y))
    for other in _DTYPES:
        try:
            np.asarray(gt.astype(x, getattr(gt, other)))
        except TypeError:  # complex to real
            pass
    np.asarray(gt.equal(x[:32:2], y[1::2]))  # strided
    np.asarray(gt.equal(gt.reshape(x[:32], (4, 8)), gt.reshape(y[:8], (1, 8))))  # broadcast


def _reductions(dtype: str) -> None:
    x = gt.asarray(_data(dtype, (6, 70)))
    big = gt.asarray(_data(dtype, (70_000,)))
    for name in ("sum", "prod", "max", "min", "mean", "var", "std", "all", "any"):
        for arr, kwargs in ((x, {"axis": 1}), (x, {"axis": 0}), (big, {})):
            try:
                np.asarray(getattr(gt, name)(arr, **kwargs))
            except TypeError:
                break
    for name in ("argmax", "argmin"):
        try:
            np.asarray(getattr(gt, name)(x, axis=1))
            np.asarray(getattr(gt, name)(big))
        except TypeError:
            pass
    for name in ("cumulative_sum", "cumulative_prod"):
        try:
            np.asarray(getattr(gt, name)(x, axis=1))
            np.asarray(getattr(gt, name)(big))
        except (TypeError, AttributeError):
            pass


def _sorting(dtype: str) -> None:
    if dtype.startswith("complex"):
        return
    small = gt.asarray(_data(dtype, (5, 40)))
    big = gt.asarray(_data(dtype, (9000,)))
    for arr in (small, big):
        np.asarray(gt.sort(arr))
        np.asarray(gt.argsort(arr))
        np.asarray(gt.sort(arr, descending=True, stable=False))
    np.asarray(gt.searchsorted(gt.sort(big), big[:100]))
    for fn in (gt.unique_values, gt.unique_counts, gt.unique_inverse, gt.unique_all):
        fn(big)
    if dtype.startswith(("int", "uint")) and "64" not in dtype:  # counted, not sorted
        few = gt.asarray(_RNG.integers(0, 50, 40_000).astype(dtype))
        np.asarray(gt.unique_counts(few).counts)


def _indexing(dtype: str) -> None:
    x = gt.asarray(_data(dtype, (8, 30)))
    index = gt.asarray(_RNG.integers(0, 30, 12).astype(np.int32))
    np.asarray(gt.take(x, index, axis=1))
    np.asarray(x[x != x[0, 0]])
    np.asarray(gt.nonzero(x))
    np.asarray(gt.concat([x, x[:, :3]], axis=1))
    np.asarray(gt.stack([x, x]))
    y = gt.asarray(_data(dtype, (8, 30)))
    y[1:3, ::2] = x[0:2, ::2]
    y[index[:4] % 8] = x[0]
    np.asarray(y)
    np.asarray(gt.flip(x, axis=1))
    np.asarray(gt.roll(x, 3))
    np.asarray(gt.tile(x, (2, 1)))
    np.asarray(gt.permute_dims(x, (1, 0)))
    if dtype != "bool" and not dtype.startswith("complex"):
        np.asarray(gt.count_nonzero(x))


def _matmul(dtype: str) -> None:
    if dtype == "bool":
        return
    a = gt.asarray(_data(dtype, (17, 33)))
    b = gt.asarray(_data(dtype, (33, 9)))
    np.asarray(a @ b)
    np.asarray(gt.matrix_transpose(b) @ gt.matrix_transpose(a))  # strided operands
    np.asarray(gt.asarray(_data(dtype, (3, 4, 5))) @ gt.asarray(_data(dtype, (3, 5, 6))))
    with config.override(gemm_splitk=4):  # split-k and its combine
        np.asarray(gt.asarray(_data(dtype, (8, 3000))) @ gt.asarray(_data(dtype, (3000, 8))))
    np.asarray(gt.vecdot(a, a))
    np.asarray(gt.tensordot(a, b, axes=1))


def _linalg(dtype: str) -> None:
    for n in (4, 40):
        a = _data(dtype, (n, n))
        spd = gt.asarray(a @ np.conj(a.T) + n * np.eye(n, dtype=dtype))
        b = gt.asarray(_data(dtype, (n, 3)))
        m = gt.asarray(a + n * np.eye(n, dtype=dtype))
        np.asarray(gt.linalg.cholesky(spd))
        np.asarray(gt.linalg.solve(m, b))
        np.asarray(gt.linalg.inv(m))
        np.asarray(gt.linalg.det(m))
        np.asarray(gt.linalg.slogdet(m).logabsdet)
        np.asarray(gt.linalg.qr(m).R)
        np.asarray(gt.linalg.eigh(spd).eigenvalues)
        np.asarray(gt.linalg.svd(m).S)
        np.asarray(gt.linalg.matrix_norm(m))
        np.asarray(gt.linalg.vector_norm(m))
    if not dtype.startswith("complex"):  # the tridiagonal path of eigh and svd
        with config.override(linalg_eigh_tridiag=33, linalg_svd_tridiag=33):
            np.asarray(gt.linalg.eigh(spd).eigenvectors)
            np.asarray(gt.linalg.svd(m).S)
            np.asarray(gt.linalg.eigvalsh(spd))
    tall = gt.asarray(_data(dtype, (90, 40)))
    np.asarray(gt.linalg.qr(tall).R)
    np.asarray(gt.linalg.svdvals(tall))
    np.asarray(gt.linalg.pinv(tall))
    a = _data(dtype, (40, 40))
    with config.override(linalg_block=16):  # blocked Cholesky past its first block
        np.asarray(gt.linalg.cholesky(gt.asarray(a @ np.conj(a.T) + 40 * np.eye(40, dtype=dtype))))
    batch = gt.asarray(_data(dtype, (3, 5, 5)) + 5 * np.eye(5, dtype=dtype))
    np.asarray(gt.linalg.solve(batch, batch))
    np.asarray(gt.linalg.det(batch))
    m = gt.asarray(_data(dtype, (70, 70)) + 70 * np.eye(70, dtype=dtype))
    with config.override(linalg_block=32, linalg_panel_rows=33):  # LU panels by tournament
        np.asarray(gt.linalg.solve(m, m))
    with config.override(linalg_panel_rows=1):  # QR panels over many workgroups
        np.asarray(gt.linalg.qr(tall).R)
    n = ops_triangular.TRSV_BLOCKED_MIN + 1  # a few right-hand columns substituted block by block
    np.asarray(gt.linalg.solve(gt.asarray(_data(dtype, (n, n)) + n * np.eye(n, dtype=dtype)),
                               gt.asarray(_data(dtype, (n, 1)))))


def _fft(dtype: str) -> None:
    for n in (16, 12, 97, 1000):
        x = gt.asarray(_data(dtype, (3, n)))
        np.asarray(gt.fft.fft(x))
        np.asarray(gt.fft.ifft(x, axis=0))
        if not dtype.startswith("complex"):
            np.asarray(gt.fft.rfft(x))
            np.asarray(gt.fft.irfft(gt.fft.rfft(x), n=n))
    np.asarray(gt.fft.fftn(gt.asarray(_data(dtype, (6, 8, 10)))))
    np.asarray(gt.fft.fft(gt.asarray(_data(dtype, (4099,)))))  # a chirp longer than a workgroup holds
    if not dtype.startswith("complex"):  # real steps fused into four-step passes; apart (Bluestein)
        for n in (1 << 15, 2 * 1009):
            x = gt.asarray(_data(dtype, (n,)))
            np.asarray(gt.fft.irfft(gt.fft.rfft(x), n=n))
    if not dtype.startswith("complex"):
        np.asarray(gt.fft.fftfreq(10, dtype=getattr(gt, dtype)))


def _nn(dtype: str) -> None:
    x = gt.asarray(_data(dtype, (5, 70)))
    for name in ("softmax", "log_softmax", "logsumexp"):
        np.asarray(getattr(gt.nn, name)(x, axis=-1))
    np.asarray(gt.nn.layer_norm(x, (70,)))
    np.asarray(gt.nn.rms_norm(x, (70,)))
    img = gt.asarray(_data(dtype, (2, 3, 9, 9)))
    w = gt.asarray(_data(dtype, (4, 3, 3, 3)))
    np.asarray(gt.nn.conv2d(img, w, padding=1))
    for q_len, kv_len in ((16, 16), (1, 40), (1, 3000), (70, 70)):  # flash, decode (split), tiled
        q = gt.asarray(_data(dtype, (2, 2, q_len, 16)))
        k = gt.asarray(_data(dtype, (2, 2, kv_len, 16)))
        v = gt.asarray(_data(dtype, (2, 2, kv_len, 16)))
        np.asarray(gt.nn.scaled_dot_product_attention(q, k, v))
        variant, ops_attention.KERNEL_VARIANT = ops_attention.KERNEL_VARIANT, "tiled"
        try:
            np.asarray(gt.nn.scaled_dot_product_attention(q, k, v, is_causal=q_len == kv_len))
        finally:
            ops_attention.KERNEL_VARIANT = variant


def _fused(dtype: str) -> None:
    x = gt.asarray(_data(dtype, (6, 50)))
    if dtype != "bool":
        np.asarray(gt.sum(x * x + x, axis=1))
        np.asarray(gt.max(gt.abs(x - x[:, :1]), axis=-1))
    if dtype.startswith("float"):  # a softmax written with gt ops: one row kernel
        e = gt.exp(x - gt.max(x, axis=1, keepdims=True))
        np.asarray(e / gt.sum(e, axis=1, keepdims=True))
    kernel = gt.ElementwiseKernel("T x, T y", "T z", "z = x;", "copy_first")
    np.asarray(kernel(x, x))


_FAMILIES: dict[str, tuple[Callable[[str], None], list[str]]] = {
    "elementwise": (_elementwise, _DTYPES),
    "reductions": (_reductions, _DTYPES),
    "sorting": (_sorting, _REAL),
    "indexing": (_indexing, _DTYPES),
    "matmul": (_matmul, [n for n in _DTYPES if n != "bool"]),
    "linalg": (_linalg, _FLOAT_COMPLEX),
    "fft": (_fft, _FLOAT_COMPLEX),
    "nn": (_nn, [n for n in _FLOAT if n != "float16"]),
    "fused": (_fused, _DTYPES),
}

#: kernel sources the tour does not reach, and why
_NOT_TOURED = {
    "math_test": "the runner of tests/_wgsl_library.py (test_f32math, test_f64math)",
}
#: kernel -> the adapter feature it needs (not compiled where the adapter lacks it)
_NEEDS_FEATURE = {"sort_scatter_sg": "subgroup", "subgroup_probe": "subgroup",
                  "matmul_int8_sgmatrix": "chromium-experimental-subgroup-matrix"}
#: kernel -> the adapter feature whose presence replaces it (by a faster kernel)
_REPLACED_BY_FEATURE = {"sort_scatter": "subgroup", "matmul_int_emul": "shader-int64"}

#: GPUTENSOR_TOUR_DTYPES (comma-separated dtype names): the tour takes only these dtypes (CI's
#: Dawn run, where Tint and Mesa 25's lavapipe compile each kernel several times slower); the
#: check that every kernel source was compiled then holds for the kernels those dtypes reach.
_TOUR_DTYPES = frozenset(filter(None, os.environ.get("GPUTENSOR_TOUR_DTYPES", "").split(",")))
_SELECTED = {family: (body, [d for d in dtypes if not _TOUR_DTYPES or d in _TOUR_DTYPES])
             for family, (body, dtypes) in _FAMILIES.items()}

_CASES = [pytest.param(family, dtype, id=f"{family}-{dtype}")
          for family, (_, dtypes) in _SELECTED.items() for dtype in dtypes]


def _rejected(exc: BaseException) -> str | None:
    """The compiler's complaint when ``exc`` (or its cause) is a kernel that did not compile."""
    for _ in range(6):
        if exc is None:
            return None
        text = str(exc)
        if "failed to compile" in text or "KernelCompileError" in type(exc).__name__:
            return text
        exc = exc.__cause__ or exc.__context__
    return None


#: the (family, dtype) cases run in this process
_RAN: set[tuple[str, str]] = set()


@pytest.mark.parametrize("family, dtype", _CASES)
def test_kernels_compile(family: str, dtype: str) -> None:
    body, _ = _FAMILIES[family]
    _RAN.add((family, dtype))
    try:
        body(dtype)
    except (BackendError, ValueError, RuntimeError) as exc:
        complaint = _rejected(exc)
        if complaint is None:
            raise
        pytest.fail(f"{implementation.NAME} ({get_backend()}) rejects a {family} kernel for {dtype}: "
                    f"{complaint[:3000]}", pytrace=False)


def _kernel_sources() -> list[str]:
    root = importlib.resources.files("gputensor._wgsl")
    return sorted(p.name[:-5] for p in root.iterdir()
                  if p.name.endswith(".wgsl") and re.search(r"\bfn\s+main\s*\(", p.read_text()))


def _compiled_names() -> set[str]:
    ctx = get_backend().context
    return {info.name for info in ctx._pipeline_info.values()}


def test_every_kernel_source_toured() -> None:
    """Every kernel source was compiled in this process (after the tour above; the cases it did
    not run here run now), except those of ``_NOT_TOURED`` and those needing a feature the
    adapter lacks."""
    for family, (body, dtypes) in _SELECTED.items():
        for dtype in dtypes:
            if (family, dtype) not in _RAN:
                try:
                    body(dtype)
                except Exception:  # noqa: BLE001 - test_kernels_compile reports it
                    pass
    features = get_backend().context.features
    expected = {name for name in _kernel_sources() if name not in _NOT_TOURED
                and (_NEEDS_FEATURE.get(name) is None or _NEEDS_FEATURE[name] in features)
                and (_REPLACED_BY_FEATURE.get(name) is None or _REPLACED_BY_FEATURE[name] not in features)}
    missing = sorted(expected - _compiled_names())
    assert not missing, f"kernel sources no tour case compiled: {missing}"
