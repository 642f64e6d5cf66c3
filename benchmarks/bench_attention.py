"""Attention: ``o = softmax(q k^T * scale) v`` over contiguous [batch, heads, seq, head_dim].

TFLOP/s counts 4*b*h*d per visible (query, key) pair: b*h*sq*skv pairs, about half of them when
causal (the exact count of the bottom-right-aligned mask). Decode (one query against a long cache)
is memory-bound: its rate is reported in TFLOP/s too, but its fraction is of the copy ceiling
(bytes of q, k, v read and o written).

torch runs ``torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=..., scale=...)``.
torch's ``is_causal`` is top-left aligned; for seq_q == seq_kv that is the same mask as gputensor's
bottom-right one, and other causal shapes use ``causal_lower_right``. Decode runs without a mask
in both (a bottom-right causal mask hides nothing from a single last query). cupy has no attention.
The check compares 2 (batch, head) pairs x up to 64 query rows with a float64 softmax.
"""

from __future__ import annotations

import math

import numpy as np

from ._harness import DTYPE_SHORT, Case, Env, NotAvailable, Prepared, assert_close, uniform


def visible_pairs(seq_q: int, seq_kv: int, causal: bool) -> int:
    """(query, key) pairs a bottom-right-aligned causal mask leaves visible (all when not causal)."""
    if not causal:
        return seq_q * seq_kv
    i = np.arange(seq_q, dtype=np.int64)
    return int(np.clip(i + seq_kv - seq_q + 1, 0, seq_kv).sum())


def attention_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, rows: np.ndarray, scale: float,
                        causal: bool) -> np.ndarray:
    """float64 attention of query ``rows`` of one head (q [sq, d], k and v [skv, d])."""
    sq, skv = q.shape[0], k.shape[0]
    s = (q[rows].astype(np.float64) @ k.astype(np.float64).T) * scale
    if causal:
        hidden = np.arange(skv)[None, :] > (rows[:, None] + skv - sq)
        s = np.where(hidden, -np.inf, s)
    s -= s.max(axis=1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=1, keepdims=True)
    return p @ v.astype(np.float64)


class AttentionCase(Case):
    """One attention shape: batch, heads, seq_q, seq_kv, head_dim, causal, dtype."""

    unit = "TFLOP/s"

    def __init__(self, batch: int, heads: int, seq_q: int, seq_kv: int, head_dim: int, causal: bool,
                 dtype: str) -> None:
        self.b, self.h, self.sq, self.skv, self.d = batch, heads, seq_q, seq_kv, head_dim
        self.causal, self.dtype = bool(causal), dtype
        self.np_dtype = np.dtype(dtype)
        self.scale = 1.0 / math.sqrt(head_dim)
        short = DTYPE_SHORT[dtype]
        if seq_q == 1:
            tail = f"decode{seq_kv}"
        else:
            tail = f"s{seq_q}" if seq_q == seq_kv else f"q{seq_q}kv{seq_kv}"
        self.id = f"attention.{short}.d{head_dim}.{tail}" + (".causal" if causal else "")
        self.label = (f"attention {short} b={batch} h={heads} sq={seq_q} skv={seq_kv} d={head_dim}"
                      + (" causal" if causal else ""))
        self.flops = 4.0 * batch * heads * head_dim * visible_pairs(seq_q, seq_kv, causal)
        item = self.np_dtype.itemsize
        self.bytes = float(batch * heads * head_dim * (2 * seq_q + 2 * seq_kv) * item)
        self.working_set = int(self.bytes)
        self.bound = "memory" if seq_q == 1 else "compute"
        if seq_q == seq_kv:
            self.series = f"attention.{short}.d{head_dim}" + (".causal" if causal else "")

    @property
    def q_shape(self) -> tuple[int, int, int, int]:
        return (self.b, self.h, self.sq, self.d)

    @property
    def kv_shape(self) -> tuple[int, int, int, int]:
        return (self.b, self.h, self.skv, self.d)

    def host(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        # q spread wider than k so the softmax is far from uniform (a stronger check)
        return {"q": uniform(rng, self.q_shape, self.np_dtype, -4.0, 4.0),
                "k": uniform(rng, self.kv_shape, self.np_dtype),
                "v": uniform(rng, self.kv_shape, self.np_dtype)}

    def check(self, host: dict[str, np.ndarray], got: np.ndarray) -> None:
        got = np.asarray(got).reshape(self.q_shape)
        rows = np.unique(np.linspace(0, self.sq - 1, num=min(self.sq, 64)).astype(np.int64))
        tol = 1e-4 if self.dtype == "float32" else 2e-2
        for bi, hi in sorted({(0, 0), (self.b - 1, self.h - 1)}):
            ref = attention_reference(host["q"][bi, hi], host["k"][bi, hi], host["v"][bi, hi], rows,
                                      self.scale, self.causal)
            assert_close(got[bi, hi][rows], ref, tol, f"{self.id} (batch {bi}, head {hi})")

    def gputensor(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        be, arena = env.backend, env.arena()
        sets = env.sets(self.working_set)
        try:
            q = [arena.upload(host["q"]) for _ in range(sets)]
            k = [arena.upload(host["k"]) for _ in range(sets)]
            v = [arena.upload(host["v"]) for _ in range(sets)]
            o = [arena.empty(host["q"].nbytes) for _ in range(sets)]
        except Exception:
            arena.close()
            raise
        args = (self.b, self.h, self.sq, self.skv, self.d, self.scale, self.causal)
        dtype = self.dtype

        def run(i: int) -> None:
            s = i % sets
            be.attention(q[s], k[s], v[s], o[s], *args, dtype=dtype)

        return Prepared(run, lambda: arena.download(o[0], self.q_shape, self.np_dtype), arena.close)

    def torch(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        torch = env.torch
        sdpa = torch.nn.functional.scaled_dot_product_attention
        sets = env.sets(self.working_set)
        q = [env.to_torch(host["q"]) for _ in range(sets)]
        k = [env.to_torch(host["k"]) for _ in range(sets)]
        v = [env.to_torch(host["v"]) for _ in range(sets)]
        scale = self.scale
        kwargs: dict = {"scale": scale}
        if self.causal and self.sq == self.skv:
            kwargs["is_causal"] = True
        elif self.causal:
            try:
                from torch.nn.attention.bias import causal_lower_right
            except ImportError as exc:  # pragma: no cover - old torch
                raise NotAvailable("this torch lacks causal_lower_right") from exc
            kwargs["attn_mask"] = causal_lower_right(self.sq, self.skv)
        last: list = [None]

        def run(i: int) -> None:
            s = i % sets
            last[0] = sdpa(q[s], k[s], v[s], **kwargs)

        def result() -> np.ndarray:  # called right after run(0): last holds set 0's output
            return last[0].cpu().numpy()

        return Prepared(run, result)

    def cupy(self, env: Env, host: dict[str, np.ndarray]) -> Prepared:
        raise NotAvailable("cupy has no attention")


def cases(quick: bool) -> list[Case]:
    """float32/float16 x head_dim 64/128 x seq 1024/4096 (float32 also 8192: the issue's range
    is 1k to 8k; float16 is bound by torch's tensor cores either way) x causal or not, batch 4,
    heads 16; and decode (seq_q 1, seq_kv 32768) per dtype and head_dim (quick: batch 1, heads
    2, seq 64/128 (float32 also 256), cache 512)."""
    if quick:
        b, h, seqs, long_seq, cache = 1, 2, (64, 128), 256, 512
    else:
        b, h, seqs, long_seq, cache = 4, 16, (1024, 4096), 8192, 32768
    out: list[Case] = []
    for dtype in ("float32", "float16"):
        for d in (64, 128):
            for s in seqs + ((long_seq,) if dtype == "float32" else ()):
                for causal in (False, True):
                    out.append(AttentionCase(b, h, s, s, d, causal, dtype))
            out.append(AttentionCase(b, h, 1, cache, d, False, dtype))
    return out
