// The first step of a real inverse DFT of even length n = 2h by the half-length complex trick:
// row r of X holds the h + 1 values X[0..h] of a Hermitian spectrum (the imaginary parts of
// X[0] and X[h] are ignored, as NumPy does); this writes the h values Z[k] whose length-h
// inverse DFT (unnormalized) is scale * n * (x[2j] + i x[2j+1]), x the spectrum's real inverse.
// One invocation per pair (k, h - k), k = 0..h/2, with S = X[k] + conj(X[h-k]), D = X[k] -
// conj(X[h-k]) and the twiddle w = exp(-2 pi i k / n) (a product of two small tables' entries):
//   Z[k] = scale (S + i conj(w) D),   Z[h - k] = scale conj(S - i conj(w) D),
// X conjugated first when ``conj`` is set.
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
    let xr = p.src_first + r * (h + 1u);
    let zr = p.dst_first + r * h;
    let cs = select(T(1.0), T(-1.0), p.conj != 0u);
    var a = Src[xr + k];
    var b = Src[xr + h - k];
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
    let s = scale();
    Dst[zr + k] = lo * s;
    if k != 0u && h - k != k {
        Dst[zr + h - k] = C(hi.x * s, -(hi.y * s));
    }
}
