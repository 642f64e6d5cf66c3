// The last step of a real forward DFT of even length n = 2h by the half-length complex trick:
// row r of Z holds the length-h DFT of z[j] = x[2j] + i x[2j+1]; this writes the h + 1
// non-redundant values X[0..h] of x's length-n DFT. One invocation per pair (k, h - k),
// k = 0..h/2, with E = Z[k] + conj(Z[h-k]) (twice the DFT of the even samples), O = -i (Z[k] -
// conj(Z[h-k])) (twice the odd samples' DFT) and the twiddle w = exp(-2 pi i k / n) (a product
// of two entries of small tables: see ``twiddle``):
//   X[k] = (E + w O) / 2,   X[h - k] = conj(E - w O) / 2   (Z[h] is Z[0]),
// each times ``scale`` and conjugated when ``conj`` is set.
//#include common

//#include fft_real_common

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
    let zr = p.src_first + r * h;
    let xr = p.dst_first + r * (h + 1u);
    let m = select(h - k, 0u, k == 0u);
    let a = Src[zr + k];
    let b = Src[zr + m];
    let e = C(a.x + b.x, a.y - b.y);
    let d = C(a.x - b.x, a.y + b.y);
    let t = cmul(twiddle(k), C(d.y, -d.x));
    let s = scale() * T(0.5);
    let sy = select(s, -s, p.conj != 0u);
    let lo = e + t;
    let hi = e - t;
    Dst[xr + k] = C(lo.x * s, lo.y * sy);
    if h - k != k {
        Dst[xr + h - k] = C(hi.x * s, -(hi.y * sy));
    }
}
