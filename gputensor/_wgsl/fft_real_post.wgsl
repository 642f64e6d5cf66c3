// The last step of a real forward DFT of even length n = 2h by the half-length complex trick:
// row r of Z holds the length-h DFT of z[j] = x[2j] + i x[2j+1]; this writes the h + 1
// non-redundant values X[0..h] of x's length-n DFT. One invocation per pair (k, h - k),
// k = 0..h/2, with E = Z[k] + conj(Z[h-k]) (twice the DFT of the even samples), O = -i (Z[k] -
// conj(Z[h-k])) (twice the odd samples' DFT) and the twiddle w = exp(-2 pi i k / n) (a product
// of two entries of small tables: see ``twiddle``):
//   X[k] = (E + w O) / 2,   X[h - k] = conj(E - w O) / 2   (Z[h] is Z[0]),
// each times ``scale`` and conjugated when ``conj`` is set.
//#include common

alias T = {{T}};
alias C = vec2<T>;
const WG: u32 = 256u;

struct Params {
    scale: T, {{PAD}}
    h: u32, pairs: u32, rows: u32, conj: u32,
    z_first: u32, x_first: u32, shift: u32, coarse: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> Z: array<C>;
@group(0) @binding(2) var<storage, read_write> X: array<C>;
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
    let zr = p.z_first + r * h;
    let xr = p.x_first + r * (h + 1u);
    let m = select(h - k, 0u, k == 0u);
    let a = Z[zr + k];
    let b = Z[zr + m];
    let e = C(a.x + b.x, a.y - b.y);
    let d = C(a.x - b.x, a.y + b.y);
    let t = cmul(twiddle(k), C(d.y, -d.x));
    let s = p.scale * T(0.5);
    let sy = select(s, -s, p.conj != 0u);
    let lo = e + t;
    let hi = e - t;
    X[xr + k] = C(lo.x * s, lo.y * sy);
    if h - k != k {
        X[xr + h - k] = C(hi.x * s, -(hi.y * sy));
    }
}
