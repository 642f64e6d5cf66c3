// The first step of a real inverse DFT of even length n = 2h by the half-length complex trick:
// row r of X holds the h + 1 values X[0..h] of a Hermitian spectrum (the imaginary parts of
// X[0] and X[h] are ignored, as NumPy does); this writes the h values Z[k] whose length-h
// inverse DFT (unnormalized) is scale * n * (x[2j] + i x[2j+1]), x the spectrum's real inverse.
// One invocation per pair (k, h - k), k = 0..h/2, with S = X[k] + conj(X[h-k]), D = X[k] -
// conj(X[h-k]) and the twiddle w = exp(-2 pi i k / n) (a product of two small tables' entries):
//   Z[k] = scale (S + i conj(w) D),   Z[h - k] = scale conj(S - i conj(w) D),
// X conjugated first when ``conj`` is set.
//#include common

alias T = {{T}};
alias C = vec2<T>;
const WG: u32 = 256u;

struct Params {
    scale: T, {{PAD}}
    h: u32, pairs: u32, rows: u32, conj: u32,
    x_first: u32, z_first: u32, shift: u32, coarse: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> X: array<C>;
@group(0) @binding(2) var<storage, read_write> Z: array<C>;
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

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg) * WG + lid;
    if g >= p.pairs * p.rows {
        return;
    }
    let h = p.h;
    let r = g / p.pairs;
    let k = g - r * p.pairs;
    let xr = p.x_first + r * (h + 1u);
    let zr = p.z_first + r * h;
    let cs = select(T(1.0), T(-1.0), p.conj != 0u);
    var a = X[xr + k];
    var b = X[xr + h - k];
    a.y = a.y * cs;
    b.y = b.y * cs;
    if k == 0u {
        a.y = T(0.0);
        b.y = T(0.0);
    }
    let sum = C(a.x + b.x, a.y - b.y);
    let dif = C(a.x - b.x, a.y + b.y);
    let w = twiddle(k);
    let u = cmul(C(w.x, -w.y), dif);
    let lo = C(sum.x - u.y, sum.y + u.x);
    let hi = C(sum.x + u.y, sum.y - u.x);
    let s = p.scale;
    Z[zr + k] = lo * s;
    if k != 0u && h - k != k {
        Z[zr + h - k] = C(hi.x * s, -(hi.y * s));
    }
}
