"""Tests of the backend's attention (gputensor/_backend/ops_attention.py) against NumPy float64.

The reference computes softmax(q k^T * scale) v in float64 from the very values uploaded (so
float16 inputs are compared with their exact f16 values); a query row whose keys are all masked
is zeros (the documented choice: torch gives NaN there, flash kernels give zeros).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gputensor._backend import BackendError, BackendErrorKind, get_backend
from gputensor._backend import ops_attention

from _compare import tolerance
from _compare import tol

#: (rtol, atol) per dtype, relative to outputs of magnitude about 1 (v is standard normal).


@pytest.fixture(scope="module")
def backend():
    return get_backend()


#: Prefill kernels (ops_attention.KERNEL_VARIANT) the correctness tests run with.
PREFILL_VARIANTS = ["flash", "tiled"]
PREFILL_KERNELS = ("attention_flash", "attention_tiled")


@pytest.fixture(params=PREFILL_VARIANTS)
def variant(request, monkeypatch):
    """Runs the test with each prefill kernel variant."""
    monkeypatch.setattr(ops_attention, "KERNEL_VARIANT", request.param)
    return request.param


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, causal: bool) -> np.ndarray:
    """softmax(q k^T * scale) v in float64; fully masked rows are zeros."""
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    s = np.einsum("bhid,bhjd->bhij", q, k) * scale
    seq_q, seq_kv = q.shape[2], k.shape[2]
    if causal:
        i = np.arange(seq_q)[:, None]
        j = np.arange(seq_kv)[None, :]
        s = np.where(j > i + seq_kv - seq_q, -np.inf, s)
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    l = p.sum(axis=-1, keepdims=True)
    out = np.einsum("bhij,bhjd->bhid", p, v)
    return np.where(l > 0, out / np.where(l > 0, l, 1.0), 0.0)


def random_qkv(shape_q, shape_kv, dtype, seed=0, q_scale=1.0):
    rng = np.random.default_rng(seed)
    q = (rng.standard_normal(shape_q) * q_scale).astype(dtype)
    k = rng.standard_normal(shape_kv).astype(dtype)
    v = rng.standard_normal(shape_kv).astype(dtype)
    return q, k, v


def run_attention(backend, q, k, v, scale, causal, dtype=None):
    """Upload, run, read back and free; returns o as a NumPy array of q's dtype."""
    dtype = dtype or q.dtype.name
    batch, heads, seq_q, head_dim = q.shape
    seq_kv = k.shape[2]
    ptrs = [backend.alloc(a.nbytes) for a in (q, k, v, q)]
    try:
        for ptr, a in zip(ptrs, (q, k, v)):
            backend.copy_htod(ptr, np.ascontiguousarray(a))
        backend.attention(*ptrs, batch, heads, seq_q, seq_kv, head_dim, scale, causal, dtype=dtype)
        out = np.empty_like(q)
        backend.copy_dtoh(out, ptrs[3])
    finally:
        for ptr in ptrs:
            backend.free(ptr)
    return out


def check(backend, batch, heads, seq_q, seq_kv, head_dim, causal, dtype="float32", scale=None, seed=0):
    q, k, v = random_qkv((batch, heads, seq_q, head_dim), (batch, heads, seq_kv, head_dim), dtype, seed)
    scale = 1.0 / math.sqrt(head_dim) if scale is None else scale
    out = run_attention(backend, q, k, v, scale, causal)
    rtol, atol = tolerance(dtype, "attention")
    expected = reference(q, k, v, scale, causal)
    np.testing.assert_allclose(out.astype(np.float64), expected, rtol=rtol, atol=atol)
    return out


# ---- correctness ----------------------------------------------------------------------------

@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(
    "batch,heads,seq_q,seq_kv,head_dim",
    [
        (1, 2, 64, 64, 64),      # exact tiles
        (2, 1, 77, 77, 64),      # seq not a multiple of the tiles
        (1, 2, 30, 150, 16),     # seq_q < seq_kv
        (1, 1, 150, 45, 100),    # seq_q > seq_kv (causal: fully masked rows), padded head_dim
        (1, 1, 70, 70, 128),
        (2, 2, 9, 20, 1),        # head_dim 1
        (1, 1, 66, 70, 256),     # largest head_dim
    ],
)
def test_prefill_float32(backend, variant, batch, heads, seq_q, seq_kv, head_dim, causal):
    check(backend, batch, heads, seq_q, seq_kv, head_dim, causal)


@pytest.mark.parametrize("dtype", ["float16", "float64"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seq_q,seq_kv,head_dim", [(70, 90, 64), (100, 40, 100), (1, 600, 64), (40, 50, 256)])
def test_dtypes(backend, variant, dtype, seq_q, seq_kv, head_dim, causal):
    check(backend, 1, 2, seq_q, seq_kv, head_dim, causal, dtype=dtype)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(
    "seq_q,seq_kv,head_dim",
    [(1, 2500, 128), (1, 700, 100), (3, 900, 64), (4, 130, 16), (1, 600, 256), (2, 300, 1)],
)
def test_decode(backend, seq_q, seq_kv, head_dim, causal):
    check(backend, 1, 2, seq_q, seq_kv, head_dim, causal)


def test_decode_uses_key_splits(backend):
    plan = ops_attention.plan_attention(2, 1, 2500, 128, 4, 4, backend.max_window_bytes())
    assert plan.kernel == "attention_decode"
    assert plan.splits > 1 and plan.split_len % ops_attention.TILE_KEYS == 0
    assert (plan.splits - 1) * plan.split_len < 2500 <= plan.splits * plan.split_len


@pytest.mark.parametrize("causal", [False, True])
def test_prefill_with_key_splits(backend, variant, causal):
    # Few query blocks and a long key sequence: the tiled kernel splits the keys and combines.
    plan = ops_attention.plan_attention(1, 70, 1100, 32, 4, 4, backend.max_window_bytes())
    assert plan.kernel in PREFILL_KERNELS and plan.splits > 1
    check(backend, 1, 1, 70, 1100, 32, causal)


@pytest.mark.parametrize("seq_q,seq_kv", [(300, 1100), (1200, 600)])
def test_key_splits_with_masked_splits(backend, variant, seq_q, seq_kv):
    # Causal: some splits hold no visible key for a query block (their records are empty), and
    # with seq_q > seq_kv the first rows see no key in any split (the combine gives zeros).
    plan = ops_attention.plan_attention(1, seq_q, seq_kv, 16, 4, 4, backend.max_window_bytes())
    assert plan.kernel in PREFILL_KERNELS and plan.splits > 1
    out = check(backend, 1, 1, seq_q, seq_kv, 16, True)
    assert np.all(out[:, :, : max(0, seq_q - seq_kv)] == 0.0)


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_key_splits_other_dtypes(backend, variant, dtype):
    check(backend, 1, 1, 6, 1300, 16, True, dtype=dtype)


@pytest.mark.parametrize("scale", [0.0, -0.3, 1.0, 0.01, 2.5, np.float32(0.125), 3])
def test_scale_values(backend, scale):
    check(backend, 1, 1, 20, 33, 16, False, scale=scale)


@pytest.mark.parametrize("causal", [1, np.bool_(True)])
def test_causal_accepts_integer_and_numpy_bools(backend, causal):
    check(backend, 1, 1, 9, 12, 16, causal)


@pytest.mark.parametrize("seq_q,seq_kv", [(150, 45), (7, 3)])
def test_fully_masked_rows_are_zero(backend, variant, seq_q, seq_kv):
    # Causal with seq_q > seq_kv: rows i < seq_q - seq_kv see no key. torch's
    # scaled_dot_product_attention with that boolean mask gives NaN there; we give zeros.
    out = check(backend, 1, 2, seq_q, seq_kv, 16, True)
    masked = seq_q - seq_kv
    assert np.all(out[:, :, :masked, :] == 0.0)
    assert np.all(np.isfinite(out))
    assert np.any(out[:, :, masked:, :] != 0.0)


@pytest.mark.parametrize("dtype,q_scale", [("float32", 25.0), ("float16", 6.0), ("float64", 40.0)])
def test_large_scores_are_stable(backend, variant, dtype, q_scale):
    # Scores of several hundred (float16: about 80, all it can hold in q): exp would overflow
    # without the running max.
    q, k, v = random_qkv((1, 2, 40, 64), (1, 2, 90, 64), dtype, seed=3, q_scale=q_scale)
    scale = 1.0 if dtype != "float16" else 0.5
    s = np.einsum("bhid,bhjd->bhij", q.astype(np.float64), k.astype(np.float64)) * scale
    assert np.abs(s).max() > 75
    out = run_attention(backend, q, k, v, scale, True)
    assert np.all(np.isfinite(out))
    # An f32 score of a few hundred carries an absolute error of about 1e-5 into exp.
    rtol, atol = tolerance(dtype, "attention_large_scores")
    np.testing.assert_allclose(out.astype(np.float64), reference(q, k, v, scale, True), rtol=rtol, atol=atol)


def _check_interior(backend, dtype, shape_q, shape_kv, offsets, scale, causal, seed):
    """Attention from q, k, v at element ``offsets`` inside one allocation into o at
    ``offsets['o']``: the result matches the reference and no element outside o changes (for
    float16, o shares u32 words with its neighbours)."""
    itemsize = np.dtype(dtype).itemsize
    q, k, v = random_qkv(shape_q, shape_kv, dtype, seed=seed)
    nq = q.size
    total = offsets["o"] + nq + 3
    host = np.full(total, 7.0, dtype=dtype)
    for name, a in (("q", q), ("k", k), ("v", v)):
        host[offsets[name] : offsets[name] + a.size] = a.ravel()
    base = backend.alloc(host.nbytes)
    try:
        backend.copy_htod(base, host)
        p = {name: base + off * itemsize for name, off in offsets.items()}
        backend.attention(p["q"], p["k"], p["v"], p["o"], shape_q[0], shape_q[1], shape_q[2], shape_kv[2],
                          shape_q[3], scale, causal, dtype=dtype)
        back = np.empty_like(host)
        backend.copy_dtoh(back, base)
    finally:
        backend.free(base)
    out = back[offsets["o"] : offsets["o"] + nq].reshape(shape_q)
    rtol, atol = tolerance(dtype, "attention")
    np.testing.assert_allclose(out.astype(np.float64), reference(q, k, v, scale, causal), rtol=rtol, atol=atol)
    outside = np.ones(total, dtype=bool)
    outside[offsets["o"] : offsets["o"] + nq] = False
    np.testing.assert_array_equal(back[outside], host[outside])


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_interior_pointers(backend, variant, dtype):
    # q, k, v and o live inside one allocation at offsets that are not binding-aligned.
    shape_q, shape_kv = (1, 2, 19, 24), (1, 2, 37, 24)
    nq, nkv = int(np.prod(shape_q)), int(np.prod(shape_kv))
    offsets = {"q": 3, "k": 3 + nq + 5, "v": 3 + nq + 5 + nkv + 1}
    offsets["o"] = offsets["v"] + nkv + 7
    _check_interior(backend, dtype, shape_q, shape_kv, offsets, 0.3, True, seed=5)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("aligned", [True, False])
def test_flash_interior_pointers_quad_loads(backend, monkeypatch, dtype, aligned):
    # attention_flash binds q, k, v as arrays of vec4 when head_dim and every operand's first
    # element are multiples of 4 (aligned), else loads scalars: both from interior pointers.
    monkeypatch.setattr(ops_attention, "KERNEL_VARIANT", "flash")
    shape_q, shape_kv = (1, 2, 70, 64), (1, 2, 100, 64)
    nq, nkv = int(np.prod(shape_q)), int(np.prod(shape_kv))
    pad = 4 if aligned else 5
    offsets = {"q": pad, "k": 2 * pad + nq, "v": 3 * pad + nq + nkv}
    offsets["o"] = offsets["v"] + nkv + pad
    _check_interior(backend, dtype, shape_q, shape_kv, offsets, 0.2, False, seed=9)


@settings(max_examples=8, deadline=None)
@given(
    batch=st.integers(1, 2),
    heads=st.integers(1, 2),
    seq_q=st.integers(1, 90),
    seq_kv=st.integers(1, 140),
    head_dim=st.sampled_from([1, 7, 16, 33, 64]),
    causal=st.booleans(),
    seed=st.integers(0, 2**16),
    kernel=st.sampled_from(list(ops_attention.VARIANTS)),
)
def test_random_shapes(backend, batch, heads, seq_q, seq_kv, head_dim, causal, seed, kernel):
    saved = ops_attention.KERNEL_VARIANT
    ops_attention.KERNEL_VARIANT = kernel
    try:
        check(backend, batch, heads, seq_q, seq_kv, head_dim, causal, seed=seed)
    finally:
        ops_attention.KERNEL_VARIANT = saved


# ---- the register-tiled kernel (attention_flash.wgsl) and its tile variants -------------------

FLASH_VARIANTS = [name for name in ops_attention.VARIANTS if name != "tiled"]


@pytest.mark.parametrize("kernel", FLASH_VARIANTS)
@pytest.mark.parametrize(
    "seq_q,seq_kv,head_dim,causal",
    [
        (128, 128, 64, False),   # whole tiles, 2 query blocks
        (130, 200, 64, True),    # partial query block and key tile, seq_q < seq_kv
        (100, 160, 128, True),
        (70, 131, 80, False),    # head_dim padded to the column granularity
        (65, 64, 96, True),      # seq_q > seq_kv: masked rows; 96 = 3 column quads (NT % DP != 0)
        (40, 70, 256, True),     # largest head_dim
        (33, 90, 200, False),
        (90, 70, 32, True),
        (64, 300, 7, False),
    ],
)
def test_flash_variants(backend, monkeypatch, kernel, seq_q, seq_kv, head_dim, causal):
    monkeypatch.setattr(ops_attention, "KERNEL_VARIANT", kernel)
    plan = ops_attention.plan_attention(2, seq_q, seq_kv, head_dim, 4, 4, backend.max_window_bytes(),
                                        backend.context.limits["max-compute-workgroup-storage-size"])
    assert plan.kernel == "attention_flash"
    check(backend, 1, 2, seq_q, seq_kv, head_dim, causal, seed=head_dim)


@pytest.mark.parametrize("kernel", ["flash", "flash-64x4", "flash-32x4"])
@pytest.mark.parametrize("head_dim", [64, 128, 80, 256])
def test_flash_float16(backend, monkeypatch, kernel, head_dim):
    monkeypatch.setattr(ops_attention, "KERNEL_VARIANT", kernel)
    check(backend, 1, 2, 100, 150, head_dim, True, dtype="float16")


@pytest.mark.parametrize("kernel", FLASH_VARIANTS)
@pytest.mark.parametrize("causal", [False, True])
def test_flash_key_splits(backend, monkeypatch, kernel, causal):
    # Split records written by attention_flash, merged by attention_combine.
    monkeypatch.setattr(ops_attention, "KERNEL_VARIANT", kernel)
    plan = ops_attention.plan_attention(1, 100, 1500, 64, 4, 4, backend.max_window_bytes())
    assert plan.kernel == "attention_flash" and plan.splits > 1
    check(backend, 1, 1, 100, 1500, 64, causal)


# ---- operands larger than one binding window ------------------------------------------------

def test_operand_larger_than_one_window(backend):
    # k and v (3 heads x 720000 keys x 16 x f32 = 138 MB) exceed one binding window on lavapipe
    # (128 MiB); the op splits them over (batch, head) slabs.
    heads, seq_kv, head_dim = 3, 720_000, 16
    limit = backend.max_window_bytes()
    if limit >= heads * seq_kv * head_dim * 4:  # a GPU with 2 GiB bindings: scale up the keys
        seq_kv = limit // (heads * head_dim * 4) * 3 // 2
    plan = ops_attention.plan_attention(heads, 1, seq_kv, head_dim, 4, 4, limit)
    assert plan.slabs_per_dispatch < heads
    rng = np.random.default_rng(11)
    q = rng.standard_normal((1, heads, 1, head_dim)).astype(np.float32)
    k = rng.standard_normal((1, heads, seq_kv, head_dim), dtype=np.float32)
    v = rng.standard_normal((1, heads, seq_kv, head_dim), dtype=np.float32)
    out = run_attention(backend, q, k, v, 0.25, False)
    for h in range(heads):  # head by head, to keep the float64 reference small
        sl = np.s_[:, h : h + 1]
        np.testing.assert_allclose(out[sl], reference(q[sl], k[sl], v[sl], 0.25, False), **tol("float32", "chained"))


@pytest.mark.parametrize(
    "seq_q,seq_kv,causal", [(70, 90, True), (5, 700, False), (20, 700, True), (2, 600, True)]
)
def test_small_windows_split_dispatches(backend, monkeypatch, seq_q, seq_kv, causal):
    # With a tiny binding window every (batch, head) slab gets its own dispatch, with and
    # without key splits (whose scratch must fit the window as well).
    head_dim = 16
    slab = max(seq_q, seq_kv) * head_dim * 4
    limit = max(slab, seq_q * (head_dim + 2) * 4 * 2)
    monkeypatch.setattr(backend, "max_window_bytes", lambda: limit)
    plan = ops_attention.plan_attention(6, seq_q, seq_kv, head_dim, 4, 4, limit)
    assert plan.slabs_per_dispatch < 6
    check(backend, 2, 3, seq_q, seq_kv, head_dim, causal)


def test_slab_larger_than_window_is_unsupported(backend, monkeypatch):
    q, k, v = random_qkv((1, 1, 8, 16), (1, 1, 64, 16), "float32")
    monkeypatch.setattr(backend, "max_window_bytes", lambda: 64 * 16 * 4 - 4)
    with pytest.raises(BackendError) as info:
        run_attention(backend, q, k, v, 1.0, False)
    assert info.value.kind is BackendErrorKind.UNSUPPORTED
    assert "slab" in info.value.message


# ---- planning -------------------------------------------------------------------------------

def test_plan_choices(backend):
    limit = 1 << 31
    big = ops_attention.plan_attention(64, 4096, 4096, 128, 2, 4, limit, 49152, variant="tiled")
    assert (big.kernel, big.block_q, big.splits, big.slabs_per_dispatch) == ("attention_tiled", 64, 1, 64)
    assert big.padded_head_dim == 128 and big.key_chunk * big.padded_head_dim <= big.stage_vec4 * 4
    f64 = ops_attention.plan_attention(1, 100, 100, 256, 8, 8, limit, 32768, variant="flash")
    assert f64.kernel == "attention_tiled"  # float64 always runs the tiled kernel
    assert f64.block_q == 32 and f64.key_chunk * 256 <= f64.stage_vec4 * 4
    assert ops_attention.plan_attention(1, 100, 100, 100, 4, 4, limit, variant="tiled").padded_head_dim == 112
    decode = ops_attention.plan_attention(64, 1, 32768, 128, 2, 4, limit)
    assert decode.kernel == "attention_decode" and decode.splits * 64 >= ops_attention.DECODE_TARGET_GROUPS
    with pytest.raises(BackendError) as info:
        ops_attention.plan_attention(1, 100, 100, 256, 8, 8, limit, 16384)
    assert info.value.kind is BackendErrorKind.UNSUPPORTED


def _flash(head_dim, storage_limit, variant="flash", itemsize=4):
    plan = ops_attention.plan_attention(64, 4096, 4096, head_dim, itemsize, 4, 1 << 31, storage_limit,
                                        variant=variant)
    assert plan.kernel == "attention_flash"
    return plan


def test_flash_plan_choices():
    # H200 (48 KiB of workgroup memory): 128 query rows x 4 keys, 8 rows per invocation, the
    # probabilities in halves (measured fastest at head_dim 64 and 128), 16-column Q/K chunks;
    # head_dim 256 does not fit 8 rows: 64 x 4.
    p64, p128, p256 = (_flash(d, 49152) for d in (64, 128, 256))
    assert (p64.block_q, p64.tile_cols, p64.rows, p64.halves, p64.invocations, p64.depth_chunk,
            p64.key_chunk) == (128, 4, 8, 2, 256, 16, 32)
    assert (p128.block_q, p128.tile_cols, p128.rows, p128.halves, p128.invocations, p128.depth_chunk,
            p128.key_chunk) == (128, 4, 8, 2, 256, 16, 16)
    assert (p256.block_q, p256.tile_cols, p256.invocations, p256.padded_head_dim) == (64, 4, 256, 256)
    # lavapipe (32 KiB): 64x8 with 8-column chunks.
    assert _flash(128, 32768).depth_chunk == 8 and _flash(128, 32768).tile_cols == 8
    # head_dim padding: to 32 columns with 8 invocations per row quad (64x8), to 64 with 16
    # (64x4); the default takes 64x8 where it pads less.
    assert [_flash(d, 49152).padded_head_dim for d in (1, 33, 80, 96, 100, 129, 200)] == [32, 64, 96, 96, 128, 192, 256]
    assert [_flash(d, 49152).tile_cols for d in (1, 33, 64, 80, 100, 128)] == [8, 4, 4, 8, 4, 4]
    assert [_flash(d, 49152).block_q for d in (1, 33, 64, 80, 100, 128)] == [64, 128, 128, 64, 128, 128]
    assert _flash(64, 49152, "flash-64x4").tile_cols == 4 and _flash(64, 49152, "flash-64x4").invocations == 256
    assert _flash(64, 49152, "flash-64x8-dc8").depth_chunk == 8
    assert _flash(200, 49152, "flash-64x8").tile_cols == 4  # 64x8 covers head_dim <= 128 only
    # 8 query rows per invocation: half the invocations, head_dim up to 32 TC.
    r8 = _flash(128, 49152, "flash-64x4-r8")
    assert (r8.block_q, r8.tile_cols, r8.rows, r8.invocations, r8.depth_chunk, r8.key_chunk) == (64, 4, 8, 128, 16, 16)
    assert _flash(64, 49152, "flash-32x4-r8").invocations == 64
    assert _flash(256, 49152, "flash-64x4-r8").rows == 4  # too wide for 8 rows: the default tiles
    # probabilities half a tile at a time: 128 rows x 8 per invocation in 48 KiB.
    hp = _flash(128, 49152, "flash-128x4-r8-hp")
    assert (hp.block_q, hp.rows, hp.halves, hp.invocations, hp.depth_chunk, hp.key_chunk) == (128, 8, 2, 256, 16, 16)
    assert _flash(128, 32768, "flash-128x4-r8-hp").block_q == 64  # does not fit: the default tiles
    with pytest.raises(BackendError) as info:
        ops_attention.plan_attention(1, 100, 100, 64, 4, 4, 1 << 31, variant="newest")
    assert info.value.kind is BackendErrorKind.INVALID_ARGUMENT


@pytest.mark.parametrize("earlier,current", [("new", "flash"), ("old", "tiled"), ("new-64x4", "flash-64x4"),
                                             ("new-32x4", "flash-32x4"), ("new-64x8-dc8", "flash-64x8-dc8")])
def test_earlier_variant_names(earlier, current):
    """GPUTENSOR_ATTENTION_KERNEL's earlier names plan exactly what the current names do."""
    assert ops_attention.canonical_variant(earlier) == current
    for head_dim, storage_limit in ((64, 49152), (100, 32768), (256, 49152)):
        args = (64, 4096, 4096, head_dim, 4, 4, 1 << 31, storage_limit)
        assert (ops_attention.plan_attention(*args, variant=earlier)
                == ops_attention.plan_attention(*args, variant=current))


@pytest.mark.parametrize("storage_limit", [32768, 49152])
@pytest.mark.parametrize("kernel", FLASH_VARIANTS)
def test_flash_shapes_fit(kernel, storage_limit):
    # Every head_dim gets attention_flash tiles within the workgroup memory and the kernel's
    # invariants (see attention_flash.wgsl and ops_attention._flash_shape).
    for head_dim in range(1, 257):
        plan = _flash(head_dim, storage_limit, kernel)
        shape = ops_attention.FlashShape.of_plan(plan)
        d = shape.defines()
        assert shape.workgroup_bytes(4) <= storage_limit
        assert head_dim <= d["DP"] == 4 * d["NX"] * d["QPT"] and 1 <= d["QPT"] and d["RM"] * d["QPT"] <= 16
        assert d["NT"] * d["RM"] == d["NX"] * d["BQ"] and d["SN"] == d["TC"] * d["RG"]
        assert d["QQ"] >= 1 and d["KQ"] >= 1 and d["QQ"] + d["KQ"] <= 4 and 1 <= d["VQ"] <= 4
        assert d["QQ"] * 4 * d["NT"] == d["BQ"] * d["DC"] and d["KQ"] * 4 * d["NT"] == 64 * d["DC"]
        assert d["VQ"] * 4 * d["NT"] == d["KC"] * d["DP"]
        assert (d["DP"] // d["DC"]) % 2 == 0 and (64 // d["KC"]) % 2 == 0
        assert d["KC"] * d["DP"] <= 4 * d["SLOT4"] and (64 + d["BQ"]) * (d["DC4"] + 1) <= d["SLOT4"]
        assert d["DP"] - head_dim < 4 * d["NX"]


@pytest.mark.parametrize("kernel", FLASH_VARIANTS)
@pytest.mark.parametrize("head_dim", [16, 64, 80, 96, 128, 160, 256])
def test_flash_shapes_validate_for_48k(backend, kernel, head_dim):
    # The tiles an adapter with 48 KiB of workgroup memory (H200) gets may not fit this one (lavapipe
    # has 32 KiB) and then cannot run here: at least their WGSL must pass validation.
    from gputensor._backend import kernels

    plan = _flash(head_dim, 49152, kernel)
    shape = ops_attention.FlashShape.of_plan(plan)
    for split in ("false", "true"):
        for vec in (False, True):
            defines = dict(ENABLE="", STORAGE="f32", COMPUTE="f32", OUT="f32", EXP2="exp2", SPLIT=split,
                           NEG=ops_attention._MOST_NEGATIVE["f32"], **shape.defines("f32", vec))
            backend.context.device.create_shader_module(code=kernels.render("attention_flash", defines))


# ---- errors ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def operands(backend):
    """Pointers for q, k, v, o of shape [1, 2, 8, 16] float32 (k and v with 8 keys)."""
    nbytes = 2 * 8 * 16 * 4
    ptrs = [backend.alloc(nbytes) for _ in range(4)]
    yield ptrs
    for ptr in ptrs:
        backend.free(ptr)


GOOD = dict(batch=1, heads=2, seq_q=8, seq_kv=8, head_dim=16, scale=0.25, causal=False)


def expect_error(backend, ptrs, kind, match, dtype="float32", **changes):
    args = dict(GOOD, **changes)
    before = backend.context.stats["dispatches"]
    with pytest.raises(BackendError, match=match) as info:
        backend.attention(*ptrs, args["batch"], args["heads"], args["seq_q"], args["seq_kv"],
                          args["head_dim"], args["scale"], args["causal"], dtype=dtype)
    assert info.value.kind is kind
    assert backend.context.stats["dispatches"] == before  # nothing recorded


INVALID = BackendErrorKind.INVALID_ARGUMENT


@pytest.mark.parametrize("name", ["batch", "heads", "seq_q", "seq_kv", "head_dim"])
@pytest.mark.parametrize("value", [0, -3, 2.0, True, "4"])
def test_bad_sizes(backend, operands, name, value):
    expect_error(backend, operands, INVALID, name, **{name: value})


def test_head_dim_too_large(backend, operands):
    expect_error(backend, operands, BackendErrorKind.UNSUPPORTED, "head_dim", head_dim=257)


@pytest.mark.parametrize("scale", [math.nan, math.inf, -math.inf, 1e300, "0.5", None, True])
def test_bad_scale(backend, operands, scale):
    expect_error(backend, operands, INVALID, "scale", scale=scale)


@pytest.mark.parametrize("causal", [2, "yes", None, 0.5])
def test_bad_causal(backend, operands, causal):
    expect_error(backend, operands, INVALID, "causal", causal=causal)


def test_bad_dtype(backend, operands):
    expect_error(backend, operands, INVALID, "dtype", dtype="int32")
    expect_error(backend, operands, INVALID, "dtype", dtype="bfloat16")


@pytest.mark.parametrize("which", range(4))
def test_pointer_past_allocation(backend, operands, which):
    small = backend.alloc(2 * 8 * 16 * 4 - 4)
    try:
        ptrs = list(operands)
        ptrs[which] = small
        expect_error(backend, ptrs, INVALID, "past the end")
        ptrs[which] = operands[which] + 4  # interior pointer whose range runs past the end
        expect_error(backend, ptrs, INVALID, "past the end")
    finally:
        backend.free(small)


@pytest.mark.parametrize("which", range(4))
def test_unknown_and_freed_pointers(backend, operands, which):
    ptrs = list(operands)
    ptrs[which] = 12345
    expect_error(backend, ptrs, INVALID, "unknown")
    freed = backend.alloc(2 * 8 * 16 * 4)
    backend.free(freed)
    ptrs[which] = freed
    expect_error(backend, ptrs, INVALID, "unknown")


@pytest.mark.parametrize("which", range(4))
def test_misaligned_pointer(backend, which):
    nbytes = 2 * 8 * 16 * 4
    ptrs = [backend.alloc(nbytes + 8) for _ in range(4)]
    try:
        bad = list(ptrs)
        bad[which] = ptrs[which] + 2
        expect_error(backend, bad, INVALID, "item size")
    finally:
        for ptr in ptrs:
            backend.free(ptr)


@pytest.mark.parametrize("which", range(3))
def test_output_overlapping_an_input(backend, operands, which):
    ptrs = list(operands)
    ptrs[3] = ptrs[which]
    expect_error(backend, ptrs, INVALID, "overlaps")
    shared = backend.alloc(3 * 2 * 8 * 16 * 4)
    try:
        ptrs = list(operands)
        ptrs[which] = shared
        ptrs[3] = shared + 2 * 8 * 16 * 4 - 64  # partial overlap
        expect_error(backend, ptrs, INVALID, "overlaps")
        ptrs[3] = shared + 2 * 8 * 16 * 4  # adjacent, no overlap: accepted
        backend.attention(*ptrs, 1, 2, 8, 8, 16, 0.25, False)
    finally:
        backend.free(shared)


def test_unsupported_dtype_feature(backend, operands, monkeypatch):
    monkeypatch.setattr(backend, "supports", lambda feature: feature is None)
    expect_error(backend, operands, BackendErrorKind.UNSUPPORTED, "float16", dtype="float16")


def test_kernel_knob_selects_the_prefill_kernel(backend, monkeypatch):
    """The attention_kernel knob (GPUTENSOR_ATTENTION_KERNEL) picks the prefill kernel under
    config.override (an A/B in one process); KERNEL_VARIANT, where set, wins."""
    from gputensor._backend import config

    monkeypatch.setattr(ops_attention, "KERNEL_VARIANT", None)
    args = (2, 256, 256, 64, 4, 4, backend.max_window_bytes(), 49152)
    assert ops_attention.plan_attention(*args).kernel == "attention_flash"
    with config.override(attention_kernel="tiled"):
        assert ops_attention.plan_attention(*args).kernel == "attention_tiled"
        plan = ops_attention.plan_attention(*args, variant="flash-64x8")
        assert (plan.kernel, plan.block_q, plan.tile_cols) == ("attention_flash", 64, 8)
    with config.override(attention_kernel="flash-32x4"):
        plan = ops_attention.plan_attention(*args)
        assert (plan.block_q, plan.tile_cols) == (32, 4)
        monkeypatch.setattr(ops_attention, "KERNEL_VARIANT", "tiled")
        assert ops_attention.plan_attention(*args).kernel == "attention_tiled"
