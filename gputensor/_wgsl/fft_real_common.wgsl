// Shared by fft_real_post.wgsl and fft_real_pre.wgsl: the parameters (``src_first`` /
// ``dst_first``: element index of row 0 in Src / Dst), the bindings (Src read, Dst written, W
// the twiddle tables) and the twiddle product.
alias T = {{T}};
alias C = vec2<T>;
const WG: u32 = 256u;

struct Params {
    scale: T, {{PAD}}
    h: u32, pairs: u32, rows: u32, conj: u32,
    src_first: u32, dst_first: u32, shift: u32, coarse: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Src: array<C>;
@group(0) @binding(2) var<storage, read_write> Dst: array<C>;
@group(0) @binding(3) var<storage, read> W: array<C>;

fn cmul(a: C, b: C) -> C {
    return C(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

// exp(-2 pi i k / n) as the product of a coarse and a fine table entry (W holds the fine
// table, w^j for j < 2^shift, then the coarse one, w^(i 2^shift), from ``coarse`` on)
fn twiddle(k: u32) -> C {
    let fine = W[k & ((1u << p.shift) - 1u)];
    if (k >> p.shift) == 0u {
        return fine;
    }
    return cmul(W[p.coarse + (k >> p.shift)], fine);
}
