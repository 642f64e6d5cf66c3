// Shared by fft_real_post.wgsl and fft_real_pre.wgsl: the parameters (``src_first`` /
// ``dst_first``: element index of row 0 in Src / Dst; ``tw_first``: of the plan's table in W,
// which holds the fine twiddles at ``fine_at``, the coarse ones at ``coarse_at`` and the scale
// (real part) at ``scale_at``), the bindings (Src read, Dst written, W the plan's table) and the
// twiddle product.
alias T = {{T}};
alias C = vec2<T>;
const WG: u32 = 256u;

struct Params {
    h: u32, pairs: u32, rows: u32, conj: u32,
    src_first: u32, dst_first: u32, tw_first: u32, fine_at: u32,
    coarse_at: u32, shift: u32, scale_at: u32, pad: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Src: array<C>;
@group(0) @binding(2) var<storage, read_write> Dst: array<C>;
@group(0) @binding(3) var<storage, read> W: array<C>;

fn cmul(a: C, b: C) -> C {
    return C(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

// exp(-2 pi i k / n) as the product of a coarse and a fine table entry (the fine table holds
// w^j for j < 2^shift, the coarse one w^(i 2^shift))
fn twiddle(k: u32) -> C {
    let fine = W[p.tw_first + p.fine_at + (k & ((1u << p.shift) - 1u))];
    if (k >> p.shift) == 0u {
        return fine;
    }
    return cmul(W[p.tw_first + p.coarse_at + (k >> p.shift)], fine);
}

fn scale() -> T {
    return W[p.tw_first + p.scale_at].x;
}
