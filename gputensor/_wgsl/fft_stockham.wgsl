// Batched 1-D DFTs of length N in workgroup memory (mixed-radix Stockham autosort passes).
//
// Each workgroup transforms C consecutive batch entries b = group * C + c (b < n_batch). Entry b
// has coordinates along the p.nb (at most 4) batch dims (dim 0 fastest: b = sum coord_d * prod
// of the sizes below d); its element i is read at src_first + sum coord_d * src_stride_d + i *
// src_axis and its result element k written at dst_first + sum coord_d * dst_stride_d + k *
// dst_axis (strides in complex elements, any sign: i32 bits). Invocations take consecutive
// elements of one entry where bit 2 (load) / bit 3 (store) of p.flags is set (a contiguous
// axis), else the same element of consecutive entries (WG is a multiple of C: an invocation's
// entry is the same at every step).
//
// The passes run the forward DFT (sign -1); bit 0 of p.flags (inverse) conjugates on load and
// on store (conj(DFT(conj(x))) is the DFT of sign +1). TWIDDLE multiplies element i of entry b
// on load by W^(i * coord_tdim(b)), W = exp(-2 pi i / n) for the length n of the whole
// transform, from two tables (W^(q % tw_split) * W^(tw_split * (q / tw_split)), computed in
// float64 on the host): the twiddles of a four-step decomposition. Results are multiplied by
// the real part of table entry p.scale_at (bit 1 of p.flags; else by 1).
//
// The radices are 8, 4, 2, 3, 5 and 7. Pass with radix R after passes of total length L (M = N
// / R butterflies per entry): butterfly j (k = j % L, blk = j / L) reads x[j + q M] (q < R),
// multiplies input q by w^q (w = exp(-2 pi i k / (L R)): table entry k q N / (L R) of the
// length-N table, or with PASS_TW entry (q - 1) L + k of the pass's own), takes the R-point DFT
// and writes y_r to blk L R + k + r L, in place: each invocation holds one butterfly's inputs
// (two with TWO) in registers across a barrier (WG >= C N / the smallest radix, or with TWO >=
// C N / 8), so workgroup memory holds C N elements once. The pass loop is unrolled: each pass's
// radix is a constant. With DLOAD the first pass's inputs come from the source and with DSTORE the
// last pass's outputs (element jj + r M of its entry for butterfly jj) go to the destination,
// without the load and store loops' round trips through workgroup memory.
//
// REAL 1 (the last step of a real forward DFT of length 2N by the half-length trick, on store):
// entry c's N results Z are the DFT of its 2N real samples read as N complex values; the store
// writes the N + 1 values X[k] = (E + w O) / 2, E = Z[k] + conj(Z[N-k]), O = -i (Z[k] -
// conj(Z[N-k])) (indices mod N), w = exp(-2 pi i k / 2N) (table entries p.real_at + k, k = 0..N),
// times the scale, conjugated when bit 4 of p.flags is set. REAL 2 (the first step of a real
// inverse DFT of length 2N, on load): entry c holds N + 1 values X[0..N] of a Hermitian spectrum
// (conjugated first with bit 4; the imaginary parts of X[0] and X[N] ignored) and element i is
// loaded as S + i conj(w) D, S = X[i] + conj(X[N-i]), D = X[i] - conj(X[N-i]): its inverse DFT
// of length N is the real result read as (even, odd) pairs, times 2N.
//
// PAIRS (with REAL 1): the store takes results k and N - k together (k <= N / 2), both from the
// same Z[k] and Z[N - k]: X[k] = E + t and X[N - k] = conj(E - t), t = w O (halved), half the
// workgroup memory and table reads of one result at a time.
//
// REAL 3 (the last pass of a four-step decomposition of the half-length transform, N = n1 the
// column length, h = N m): batch dim 0 is the column k2 < m = p.size[0] (its coordinate is also
// the twiddle coordinate, p.tdim 0), and a workgroup's C entries (C even, a divisor of m) hold
// columns j (entries c < C / 2) and m - j (entry c + C / 2; j = 0: column m / 2), so entry c's
// results Z[col + m k1] and their partners Z[h - col - m k1] are in workgroup memory; the store
// writes X[col + m k1] as REAL 1 does (w = exp(-2 pi i k / 2h) from table entries p.real_at +
// col and p.spec_at + k1), column 0 also X[h].
//
// REAL 4 (the first pass of a four-step decomposition of the half-length inverse, N = m the
// row length, n1 = p.size[0] the subsequences, h = N n1): entry i1 (batch dim 0, its coordinate
// also p.tdim 0) loads element i2 from X[g] and X[h - g], g = i1 + n1 i2, of a row of h + 1
// values as REAL 2 does (conj(w) from table entries p.real_at + i1 and p.spec_at + i2).
//
// BLUE (Bluestein's chirp-z transform of length BN through transforms of length N >= 2 BN - 1,
// all in workgroup memory): elements i < BN are loaded times the chirp w[i] (the others are 0),
// transformed, multiplied by the chirp kernel's spectrum (table entries p.spec_at + j) and
// conjugated, transformed again, and the BN results stored conjugated times w[k] and the scale
// (which includes 1 / N): bit 5 of p.flags conjugates w (the inverse transform).
//#include common

alias T = {{T}};
alias C2 = vec2<T>;
const N: u32 = {{N}}u;
const C: u32 = {{C}}u;
const WG: u32 = {{WG}}u;
const NPASS: u32 = {{NPASS}}u;
const RADICES = array<u32, NPASS>({{RADICES}});
// PASS_TW: each pass's twiddles in a table of its own, from entry TW_AT[pass] of the table at
// p.tw_inner (else one length-N table there)
const PASS_TW: bool = {{PASS_TW}};
// TW_MATH (f32): the passes' twiddles, those of the real step (REAL 1, 2) and the four-step
// twiddles (TWIDDLE, of the whole length TWN) computed (``root``) instead of read
const TW_MATH: bool = {{TW_MATH}};
const TWN: u32 = {{TWN}}u;
const TW_AT = array<u32, NPASS>({{TW_AT}});
const TWIDDLE: bool = {{TWIDDLE}};
// two butterflies per invocation and pass where one does not cover them (see ``passes``)
const TWO: bool = {{TWO}};
// the radices the passes use (the others' code is left out)
const USE2: bool = {{USE2}};
const USE3: bool = {{USE3}};
const USE4: bool = {{USE4}};
const USE5: bool = {{USE5}};
const USE7: bool = {{USE7}};
const USE8: bool = {{USE8}};
const TOTAL: u32 = C * N;
const REAL: u32 = {{REAL}}u;
const BLUE: bool = {{BLUE}};
// Bluestein: the length of the transform (BN < N)
const BN: u32 = {{BN}}u;
// KEEP (0: all): only the first KEEP results of each entry are stored (no TWIDDLE, no REAL,
// no DSTORE); the destination holds that many per entry
const KEEP: u32 = {{KEEP}}u;
// the results per entry (REAL 1: N + 1; BLUE: BN; KEEP)
const NOUT: u32 = select(select(select(N, N + 1u, REAL == 1u), BN, BLUE), KEEP, KEEP != 0u);
// PAIRS (REAL 1): the store's positions per entry are the pairs k, N - k (k = 0 .. N / 2), else
// the results; the unrolled store loop's STORES = ceil(TOTAL_STORE / WG) iterations
const PAIRS: bool = {{PAIRS}};
const NSTORE: u32 = select(NOUT, N / 2u + 1u, PAIRS);
const TOTAL_STORE: u32 = C * NSTORE;
// UNROLL: the load and store loops unrolled, LOADS = ceil(TOTAL / WG) and STORES iterations (see
// NSTORE), all of an invocation's loads issued together
const UNROLL: bool = {{UNROLL}};
const LOADS: u32 = {{LOADS}}u;
const STORES: u32 = {{STORES}}u;
// DLOAD: the first pass reads its butterflies' inputs from the source (no load loop); DSTORE:
// the last pass writes its butterflies' outputs to the destination (no store loop; not with
// REAL 1 or 3, whose results need their partners, nor with BLUE)
const DLOAD: bool = {{DLOAD}};
const DSTORE: bool = {{DSTORE}};
// entry c's element j is at sh[c * PITCH + j + (j >> PAD)]: one slot left free after every
// 2^PAD elements and an odd PITCH (when the padded entries fit the workgroup memory; else PAD
// 31 and PITCH N), so that neither the butterflies' strided writes of the first passes nor the
// column transfers (consecutive invocations on consecutive entries) collide in the banks
const PITCH: u32 = {{PITCH}}u;
const PAD: u32 = {{PAD}}u;

// the R-point DFT constants: cos and sin of 2 pi k / R (float64 on the host)
const C3: T = {{C3}};
const S3: T = {{S3}};
const C51: T = {{C51}};
const C52: T = {{C52}};
const S51: T = {{S51}};
const S52: T = {{S52}};
const C71: T = {{C71}};
const C72: T = {{C72}};
const C73: T = {{C73}};
const S71: T = {{S71}};
const S72: T = {{S72}};
const S73: T = {{S73}};
const R2: T = {{R2}};

struct Params {
    n_batch: u32, src_first: u32, dst_first: u32, src_axis: u32,
    dst_axis: u32, tw_first: u32, tw2_lo: u32, tw2_hi: u32,
    tw_split: u32, tdim: u32, tw_inner: u32, flags: u32,
    scale_at: u32, nb: u32, real_at: u32, spec_at: u32,
    size: vec4<u32>,
    src_stride: vec4<u32>,
    dst_stride: vec4<u32>,
}
@group(0) @binding(0) var<uniform> p: Params;
// the source's elements: complex, or (SRC_REAL) real values read as complex ones
@group(0) @binding(1) var<storage, read> src: array<{{SRC}}>;
@group(0) @binding(2) var<storage, read_write> dst: array<C2>;
@group(0) @binding(3) var<storage, read> tw: array<C2>;

var<workgroup> sh: array<C2, C * PITCH>;

// the slot of element j of the entry whose first slot is cb
fn slot(cb: u32, j: u32) -> u32 {
    return cb + j + (j >> PAD);
}

// source element k as a complex value
fn load(k: u32) -> C2 {
    return {{LOAD}};
}

fn cmul(a: C2, b: C2) -> C2 {
    return C2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

// -i * a
fn mul_mi(a: C2) -> C2 {
    return C2(a.y, -a.x);
}

fn conj_if(a: C2, flag: bool) -> C2 {
    if flag {
        return C2(a.x, -a.y);
    }
    return a;
}

// exp(-2 pi i j / m) (j < m) from the cos and sin of its angle within [-pi, pi]: -2 pi j / m,
// or 2 pi (m - j) / m past the half (TW_MATH)
fn root(j: u32, m: u32) -> C2 {
    var a = T(-6.283185307179586) * (T(j) / T(m));
    if 2u * j > m {
        a = T(6.283185307179586) * (T(m - j) / T(m));
    }
    return C2(cos(a), sin(a));
}

// w^q (0 < q < R) of butterfly k = jj % L of a pass of radix R after passes of length L:
// with PASS_TW entry (q - 1) L + k of the pass's own table (at ``first``: consecutive k read
// consecutive entries), else entry q k N / (L R) of the length-N table; with TW_MATH ``root``
fn twiddle(q: u32, k: u32, L: u32, R: u32, first: u32) -> C2 {
    if TW_MATH {
        return root(q * k, L * R);
    }
    if PASS_TW {
        return tw[p.tw_first + p.tw_inner + first + (q - 1u) * L + k];
    }
    return tw[p.tw_first + p.tw_inner + q * k * (N / (L * R))];
}

// one butterfly's values, held in registers across a pass's barrier: its R inputs, then its
// R outputs (the R-point DFT)
struct Bf {
    a0: C2, a1: C2, a2: C2, a3: C2, a4: C2, a5: C2, a6: C2, a7: C2,
}

fn dft2(f: Bf) -> Bf {
    var y = f;
    y.a0 = f.a0 + f.a1;
    y.a1 = f.a0 - f.a1;
    return y;
}

fn dft3(f: Bf) -> Bf {
    let u = f.a1 + f.a2;
    let v = f.a1 - f.a2;
    let m = f.a0 + u * C3;
    let w = mul_mi(v * S3);
    var y = f;
    y.a0 = f.a0 + u;
    y.a1 = m + w;
    y.a2 = m - w;
    return y;
}

fn dft4(f: Bf) -> Bf {
    let t0 = f.a0 + f.a2;
    let t1 = f.a0 - f.a2;
    let t2 = f.a1 + f.a3;
    let t3 = mul_mi(f.a1 - f.a3);
    var y = f;
    y.a0 = t0 + t2;
    y.a1 = t1 + t3;
    y.a2 = t0 - t2;
    y.a3 = t1 - t3;
    return y;
}

fn dft5(f: Bf) -> Bf {
    let u1 = f.a1 + f.a4;
    let v1 = f.a1 - f.a4;
    let u2 = f.a2 + f.a3;
    let v2 = f.a2 - f.a3;
    let m1 = f.a0 + u1 * C51 + u2 * C52;
    let m2 = f.a0 + u1 * C52 + u2 * C51;
    let w1 = mul_mi(v1 * S51 + v2 * S52);
    let w2 = mul_mi(v1 * S52 - v2 * S51);
    var y = f;
    y.a0 = f.a0 + u1 + u2;
    y.a1 = m1 + w1;
    y.a2 = m2 + w2;
    y.a3 = m2 - w2;
    y.a4 = m1 - w1;
    return y;
}

fn dft7(f: Bf) -> Bf {
    let u1 = f.a1 + f.a6;
    let v1 = f.a1 - f.a6;
    let u2 = f.a2 + f.a5;
    let v2 = f.a2 - f.a5;
    let u3 = f.a3 + f.a4;
    let v3 = f.a3 - f.a4;
    let m1 = f.a0 + u1 * C71 + u2 * C72 + u3 * C73;
    let m2 = f.a0 + u1 * C72 + u2 * C73 + u3 * C71;
    let m3 = f.a0 + u1 * C73 + u2 * C71 + u3 * C72;
    let w1 = mul_mi(v1 * S71 + v2 * S72 + v3 * S73);
    let w2 = mul_mi(v1 * S72 - v2 * S73 - v3 * S71);
    let w3 = mul_mi(v1 * S73 - v2 * S71 + v3 * S72);
    var y = f;
    y.a0 = f.a0 + u1 + u2 + u3;
    y.a1 = m1 + w1;
    y.a2 = m2 + w2;
    y.a3 = m3 + w3;
    y.a4 = m3 - w3;
    y.a5 = m2 - w2;
    y.a6 = m1 - w1;
    return y;
}

fn dft8(f: Bf) -> Bf {
    // radix 4 on the even and on the odd inputs
    let e0 = f.a0 + f.a4;
    let e1 = f.a0 - f.a4;
    let e2 = f.a2 + f.a6;
    let e3 = mul_mi(f.a2 - f.a6);
    let E0 = e0 + e2;
    let E1 = e1 + e3;
    let E2 = e0 - e2;
    let E3 = e1 - e3;
    let f0 = f.a1 + f.a5;
    let f1 = f.a1 - f.a5;
    let f2 = f.a3 + f.a7;
    let f3 = mul_mi(f.a3 - f.a7);
    let F0 = f0 + f2;
    let F1 = f1 + f3;
    let F2 = f0 - f2;
    let F3 = f1 - f3;
    // W8^1 = (1 - i) / sqrt 2, W8^2 = -i, W8^3 = -(1 + i) / sqrt 2
    let G1 = C2((F1.x + F1.y) * R2, (F1.y - F1.x) * R2);
    let G2 = mul_mi(F2);
    let G3 = C2((F3.y - F3.x) * R2, (F3.x + F3.y) * -R2);
    var y = f;
    y.a0 = E0 + F0;
    y.a1 = E1 + G1;
    y.a2 = E2 + G2;
    y.a3 = E3 + G3;
    y.a4 = E0 - F0;
    y.a5 = E1 - G1;
    y.a6 = E2 - G2;
    y.a7 = E3 - G3;
    return y;
}

// the R-point DFT of f's first R values (R = 1: f itself)
fn dft(R: u32, f: Bf) -> Bf {
    switch R {
        case 2u: { if USE2 { return dft2(f); } }
        case 3u: { if USE3 { return dft3(f); } }
        case 4u: { if USE4 { return dft4(f); } }
        case 5u: { if USE5 { return dft5(f); } }
        case 7u: { if USE7 { return dft7(f); } }
        case 8u: { if USE8 { return dft8(f); } }
        default: {}
    }
    return f;
}

// Bluestein's chirp exp(-i pi (k^2 mod 2 BN) / BN) (table entries p.real_at + k), conjugated
// when bit 5 of p.flags is set
fn chirp(k: u32) -> C2 {
    return conj_if(tw[p.tw_first + p.real_at + k], (p.flags & 32u) != 0u);
}

// exp(-2 pi i k / 2N), k = 0..N (REAL 1 and 2): table entry p.real_at + k, or with TW_MATH
// ``root``
fn real_twiddle(k: u32) -> C2 {
    if TW_MATH {
        return root(k, 2u * N);
    }
    return tw[p.tw_first + p.real_at + k];
}

// X[k] (REAL 1) from the transform of entry cb held in workgroup memory, times s
fn real_post(cb: u32, k: u32, s: T, conj: bool) -> C2 {
    let a = sh[slot(cb, k % N)];
    let b = sh[slot(cb, (N - k) % N)];
    let e = C2(a.x + b.x, a.y - b.y);
    let d = C2(a.x - b.x, a.y + b.y);
    let t = cmul(real_twiddle(k), C2(d.y, -d.x));
    let lo = e + t;
    return conj_if(C2(lo.x * s, lo.y * s), conj);
}

// (X[k], X[N - k]) (REAL 1, PAIRS: k <= N / 2) from the transform of entry cb held in workgroup
// memory, times s
fn real_pair(cb: u32, k: u32, s: T, conj: bool) -> array<C2, 2> {
    let a = sh[slot(cb, k)];
    let b = sh[slot(cb, (N - k) % N)];
    let e = C2(a.x + b.x, a.y - b.y);
    let d = C2(a.x - b.x, a.y + b.y);
    let t = cmul(real_twiddle(k), C2(d.y, -d.x));
    let lo = e + t;
    let hi = e - t;
    return array<C2, 2>(conj_if(C2(lo.x * s, lo.y * s), conj), conj_if(C2(hi.x * s, -hi.y * s), conj));
}

// element i of the half-length inverse (REAL 2) from x = X[i] and y = X[N - i]
fn real_pre(x: C2, y: C2, i: u32, conj: bool) -> C2 {
    return real_pre_w(x, y, i == 0u, real_twiddle(i), conj);
}

// element g of the half-length inverse from x = X[g] and y = X[h - g] (``first``: g = 0, the
// imaginary parts of X[0] and X[h] ignored) and w = exp(-2 pi i g / 2h)
fn real_pre_w(x: C2, y: C2, first: bool, w: C2, conj: bool) -> C2 {
    var a = conj_if(x, conj);
    var b = conj_if(y, conj);
    if first {
        a.y = T(0.0);
        b.y = T(0.0);
    }
    let sum = C2(a.x + b.x, a.y - b.y);
    let dif = C2(a.x - b.x, a.y + b.y);
    let u = cmul(C2(w.x, -w.y), dif);
    return C2(sum.x - u.y, sum.y + u.x);
}

// REAL 3: the column of position u (< m) of a row: positions q C + c hold columns q C / 2 + c
// (c < C / 2) and m - (q C / 2 + c - C / 2) (m / 2 for 0), the partners c and c + C / 2
fn paired_column(u: u32, m: u32) -> u32 {
    let half = C / 2u;
    let c = u % C;
    let j = (u / C) * half + c % half;
    if c < half {
        return j;
    }
    return select(m - j, m / 2u, j == 0u);
}

// X[col + m k1] (REAL 3) of entry c, column col, from the column transforms held in workgroup
// memory (Z[h - col - m k1] in the entry itself for columns 0 and m / 2, else in its partner),
// times s
fn real_post_paired(c: u32, col: u32, k1: u32, s: T, conj: bool) -> C2 {
    let m = p.size[0];
    let cb = c * PITCH;
    let a = sh[slot(cb, k1 % N)];
    var b: C2;
    if col == 0u {
        b = sh[slot(cb, (N - k1 % N) % N)];
    } else if col == m / 2u {
        b = sh[slot(cb, N - 1u - k1)];
    } else {
        b = sh[slot(((c + C / 2u) % C) * PITCH, N - 1u - k1)];
    }
    let e = C2(a.x + b.x, a.y - b.y);
    let d = C2(a.x - b.x, a.y + b.y);
    let w = cmul(tw[p.tw_first + p.real_at + col], tw[p.tw_first + p.spec_at + k1]);
    let t = cmul(w, C2(d.y, -d.x));
    let lo = e + t;
    return conj_if(C2(lo.x * s, lo.y * s), conj);
}

fn signed(word: u32) -> i32 {
    return bitcast<i32>(word);
}

// (offset of element 0 in src, in dst, twiddle coordinate) of batch entry b: its coordinates
// along the p.nb batch dims (the last one takes the rest: no division for one dim)
fn entry(b: u32) -> vec3<i32> {
    var rest = b;
    var so = i32(p.src_first);
    var dof = i32(p.dst_first);
    var tc = 0u;
    for (var d = 0u; d < p.nb; d++) {
        var coord = rest;
        if d + 1u < p.nb {
            coord = rest % p.size[d];
            rest = rest / p.size[d];
        }
        if REAL == 3u && d == 0u {
            coord = paired_column(coord, p.size[0]);
        }
        so += i32(coord) * signed(p.src_stride[d]);
        dof += i32(coord) * signed(p.dst_stride[d]);
        if d == p.tdim {
            tc = coord;
        }
    }
    return vec3<i32>(so, dof, i32(tc));
}

// the entry whose offsets ``entry_of`` last computed (C: none yet) and those offsets
var<private> io_last: u32 = C;
var<private> io_ent: vec3<i32>;

// ``entry`` of the workgroup's entry c (io_b0 + c), computed once for consecutive calls on one
// entry
fn entry_of(c: u32) -> vec3<i32> {
    if c != io_last {
        io_ent = entry(io_b0 + c);
        io_last = c;
    }
    return io_ent;
}

// (entry, index within the entry) of butterfly j of a pass of M butterflies per entry:
// consecutive butterflies of one entry (``along``) or the same one of consecutive entries
fn place(j: u32, M: u32, along: bool) -> vec2<u32> {
    if along {
        return vec2<u32>(j / M, j % M);
    }
    return vec2<u32>(j % C, j / C);
}

// the inputs of butterfly ``at`` (entry, index jj < M) of a pass of radix R after passes of
// length L, times their twiddles (the pass's table at ``first``, see ``twiddle``)
fn gather(at: vec2<u32>, R: u32, M: u32, L: u32, first: u32) -> Bf {
    let cb = at.x * PITCH;
    let jj = at.y;
    let z = C2(0.0, 0.0);
    var f = Bf(z, z, z, z, z, z, z, z);
    f.a0 = sh[slot(cb, jj)];
    if R > 1u {
        f.a1 = sh[slot(cb, jj + M)];
    }
    if R > 2u {
        f.a2 = sh[slot(cb, jj + 2u * M)];
    }
    if R > 3u {
        f.a3 = sh[slot(cb, jj + 3u * M)];
    }
    if R > 4u {
        f.a4 = sh[slot(cb, jj + 4u * M)];
    }
    if (USE7 || USE8) && R > 5u {
        f.a5 = sh[slot(cb, jj + 5u * M)];
        f.a6 = sh[slot(cb, jj + 6u * M)];
    }
    if USE8 && R > 7u {
        f.a7 = sh[slot(cb, jj + 7u * M)];
    }
    if L == 1u {
        return f;  // (the first pass: every twiddle is 1)
    }
    let k = jj % L;
    if R > 1u {
        f.a1 = cmul(f.a1, twiddle(1u, k, L, R, first));
    }
    if R > 2u {
        f.a2 = cmul(f.a2, twiddle(2u, k, L, R, first));
    }
    if R > 3u {
        f.a3 = cmul(f.a3, twiddle(3u, k, L, R, first));
    }
    if R > 4u {
        f.a4 = cmul(f.a4, twiddle(4u, k, L, R, first));
    }
    if (USE7 || USE8) && R > 5u {
        f.a5 = cmul(f.a5, twiddle(5u, k, L, R, first));
        f.a6 = cmul(f.a6, twiddle(6u, k, L, R, first));
    }
    if USE8 && R > 7u {
        f.a7 = cmul(f.a7, twiddle(7u, k, L, R, first));
    }
    return f;
}

// the outputs of butterfly ``at`` (see ``gather``) written in place
fn scatter(at: vec2<u32>, R: u32, M: u32, L: u32, f: Bf) {
    let cb = at.x * PITCH;
    let jj = at.y;
    let o = (jj / L) * L * R + jj % L;
    let y = dft(R, f);
    sh[slot(cb, o)] = y.a0;
    if R > 1u {
        sh[slot(cb, o + L)] = y.a1;
    }
    if R > 2u {
        sh[slot(cb, o + 2u * L)] = y.a2;
    }
    if R > 3u {
        sh[slot(cb, o + 3u * L)] = y.a3;
    }
    if R > 4u {
        sh[slot(cb, o + 4u * L)] = y.a4;
    }
    if (USE7 || USE8) && R > 5u {
        sh[slot(cb, o + 5u * L)] = y.a5;
        sh[slot(cb, o + 6u * L)] = y.a6;
    }
    if USE8 && R > 7u {
        sh[slot(cb, o + 7u * L)] = y.a7;
    }
}

// DLOAD / DSTORE: what the first and last passes read and write besides workgroup memory
var<private> io_b0: u32;
var<private> io_count: u32;
var<private> io_inverse: bool;
var<private> io_along_load: bool;
var<private> io_along_store: bool;
var<private> io_scale: T;

// the inputs of butterfly ``at`` of the first pass (radix R, M per entry: every twiddle 1)
// read from the source (zeros for an entry past the batch)
fn gather_src(at: vec2<u32>, R: u32, M: u32) -> Bf {
    let z = C2(0.0, 0.0);
    var f = Bf(z, z, z, z, z, z, z, z);
    if at.x >= io_count {
        return f;
    }
    let ent = entry(io_b0 + at.x);
    let sa = signed(p.src_axis);
    let jj = at.y;
    f.a0 = fetch(jj, ent, sa, io_inverse);
    if R > 1u {
        f.a1 = fetch(jj + M, ent, sa, io_inverse);
    }
    if R > 2u {
        f.a2 = fetch(jj + 2u * M, ent, sa, io_inverse);
    }
    if R > 3u {
        f.a3 = fetch(jj + 3u * M, ent, sa, io_inverse);
    }
    if R > 4u {
        f.a4 = fetch(jj + 4u * M, ent, sa, io_inverse);
    }
    if (USE7 || USE8) && R > 5u {
        f.a5 = fetch(jj + 5u * M, ent, sa, io_inverse);
        f.a6 = fetch(jj + 6u * M, ent, sa, io_inverse);
    }
    if USE8 && R > 7u {
        f.a7 = fetch(jj + 7u * M, ent, sa, io_inverse);
    }
    return f;
}

// result v as stored (conjugated back for the inverse, times the scale)
fn finish(v: C2) -> C2 {
    return conj_if(v, io_inverse) * io_scale;
}

// the outputs of butterfly ``at`` of the last pass (L = M: results jj + r M) written to the
// destination (nothing for an entry past the batch)
fn scatter_dst(at: vec2<u32>, R: u32, M: u32, f: Bf) {
    if at.x >= io_count {
        return;
    }
    let ent = entry(io_b0 + at.x);
    let da = signed(p.dst_axis);
    let first = ent.y + i32(at.y) * da;
    let step = i32(M) * da;
    let y = dft(R, f);
    dst[u32(first)] = finish(y.a0);
    if R > 1u {
        dst[u32(first + step)] = finish(y.a1);
    }
    if R > 2u {
        dst[u32(first + 2 * step)] = finish(y.a2);
    }
    if R > 3u {
        dst[u32(first + 3 * step)] = finish(y.a3);
    }
    if R > 4u {
        dst[u32(first + 4 * step)] = finish(y.a4);
    }
    if (USE7 || USE8) && R > 5u {
        dst[u32(first + 5 * step)] = finish(y.a5);
        dst[u32(first + 6 * step)] = finish(y.a6);
    }
    if USE8 && R > 7u {
        dst[u32(first + 7 * step)] = finish(y.a7);
    }
}

// the Stockham passes over the C entries in workgroup memory: each invocation takes butterfly
// lid and, with TWO (WG at least half the butterflies of every pass), lid + WG. In place: a barrier
// between a pass's reads and its writes and one after them, except that the first pass with
// DLOAD reads the source (its writes need no barrier before them; the kernel's workgroup
// memory is still unread) and the last with DSTORE writes the destination (no barrier after
// its reads). Workgroup memory passes take consecutive butterflies of one entry; the first
// and last with DLOAD / DSTORE those of the load / store order (``place``).
fn passes(lid: u32) {
    var L = 1u;
    //#unroll
    for (var s = 0u; s < NPASS; s++) {
        let R = RADICES[s];
        let M = N / R;
        let from_src = DLOAD && s == 0u;
        let to_dst = DSTORE && s + 1u == NPASS;
        var along = true;
        if from_src {
            along = io_along_load;
        } else if to_dst {
            along = io_along_store;
        }
        let at0 = place(lid, M, along);
        let at1 = place(lid + WG, M, along);
        let live0 = lid < C * M;
        let live1 = TWO && lid + WG < C * M;
        let z = C2(0.0, 0.0);
        var f0 = Bf(z, z, z, z, z, z, z, z);
        var f1 = f0;
        if from_src {
            if live0 {
                f0 = gather_src(at0, R, M);
            }
            if live1 {
                f1 = gather_src(at1, R, M);
            }
        } else {
            if live0 {
                f0 = gather(at0, R, M, L, TW_AT[s]);
            }
            if live1 {
                f1 = gather(at1, R, M, L, TW_AT[s]);
            }
            if !to_dst {
                workgroupBarrier();
            }
        }
        if to_dst {
            if live0 {
                scatter_dst(at0, R, M, f0);
            }
            if live1 {
                scatter_dst(at1, R, M, f1);
            }
        } else {
            if live0 {
                scatter(at0, R, M, L, f0);
            }
            if live1 {
                scatter(at1, R, M, L, f1);
            }
            workgroupBarrier();
        }
        L *= R;
    }
}

// (entry, element) of load / store position e: consecutive elements of one entry (``along``)
// or the same element of consecutive entries
fn position(e: u32, along: bool, len: u32) -> vec2<u32> {
    if along {
        return vec2<u32>(e / len, e % len);
    }
    return vec2<u32>(e % C, e / C);
}

// element i of the entry whose offsets are ``ent`` as the passes take it (chirp, real step,
// conjugation, four-step twiddle applied)
fn fetch(i: u32, ent: vec3<i32>, sa: i32, inverse: bool) -> C2 {
    var v = C2(0.0, 0.0);
    if BLUE {
        if i < BN {
            v = cmul(load(u32(ent.x + i32(i) * sa)), chirp(i));
        }
    } else {
        v = load(u32(ent.x + i32(i) * sa));
    }
    if REAL == 2u {
        v = real_pre(v, load(u32(ent.x + i32(N - i) * sa)), i, (p.flags & 16u) != 0u);
    } else if REAL == 4u {
        // X[h - g] is h - 2 i1 - n1 i2 elements from X[i1] (the entry's element 0)
        let i1 = u32(ent.z);
        let y = load(u32(ent.x + i32(N * p.size[0]) - 2 * i32(i1) - i32(i) * sa));
        let w = cmul(tw[p.tw_first + p.real_at + i1], tw[p.tw_first + p.spec_at + i]);
        v = real_pre_w(v, y, i1 == 0u && i == 0u, w, (p.flags & 16u) != 0u);
    }
    v = conj_if(v, inverse);
    if TWIDDLE {
        let q = i * u32(ent.z);
        if TW_MATH {
            v = cmul(v, root(q, TWN));
        } else {
            // (tw_split is a power of two: a mask and a shift, no division)
            let lo = q & (p.tw_split - 1u);
            let hi = q >> countTrailingZeros(p.tw_split);
            v = cmul(v, cmul(tw[p.tw_first + p.tw2_lo + lo], tw[p.tw_first + p.tw2_hi + hi]));
        }
    }
    return v;
}

// result k of entry c (offsets ``ent``) from the transform in workgroup memory
fn result(c: u32, k: u32, ent: vec3<i32>, scale: T, inverse: bool) -> C2 {
    if REAL == 1u {
        return real_post(c * PITCH, k, scale * T(0.5), (p.flags & 16u) != 0u);
    } else if REAL == 3u {
        return real_post_paired(c, u32(ent.z), k, scale * T(0.5), (p.flags & 16u) != 0u);
    } else if BLUE {
        return cmul(conj_if(sh[slot(c * PITCH, k)], true), chirp(k)) * scale;
    }
    return conj_if(sh[slot(c * PITCH, k)], inverse) * scale;
}

// the results of a store position: ``a`` to element ``at`` of the destination and, with PAIRS,
// ``b`` to element ``bt`` (-1: none)
struct Out {
    a: C2,
    at: i32,
    b: C2,
    bt: i32,
}

// the results of store position k of entry c: result k (``result``), or with PAIRS results k
// and N - k (``real_pair``; N - k only where it is another)
fn store_value(c: u32, k: u32, scale: T, inverse: bool, da: i32) -> Out {
    let ent = entry_of(c);
    if PAIRS {
        let xy = real_pair(c * PITCH, k, scale * T(0.5), (p.flags & 16u) != 0u);
        return Out(xy[0], ent.y + i32(k) * da, xy[1], select(-1, ent.y + i32(N - k) * da, N - k != k));
    }
    return Out(result(c, k, ent, scale, inverse), ent.y + i32(k) * da, C2(0.0, 0.0), -1);
}

fn put(o: Out) {
    dst[u32(o.at)] = o.a;
    if PAIRS && o.bt >= 0 {
        dst[u32(o.bt)] = o.b;
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let b0 = linear_group(wid, nwg) * C;
    if b0 >= p.n_batch {
        return;  // (the whole workgroup: uniform)
    }
    let count = min(C, p.n_batch - b0);
    let inverse = (p.flags & 1u) != 0u;
    let along_load = (p.flags & 4u) != 0u;
    let along_store = (p.flags & 8u) != 0u;
    let sa = signed(p.src_axis);
    var scale = T(1.0);
    if (p.flags & 2u) != 0u {
        scale = tw[p.tw_first + p.scale_at].x;
    }
    io_b0 = b0;
    io_count = count;
    io_inverse = inverse;
    io_along_load = along_load;
    io_along_store = along_store;
    io_scale = scale;
    if DLOAD {
        // (the first pass reads the source)
    } else if UNROLL {
        // every load of the invocation issued before the first one is waited for
        var vals: array<C2, LOADS>;
        //#unroll
        for (var u = 0u; u < LOADS; u++) {
            let e = lid + u * WG;
            let at = position(e, along_load, N);
            if e < TOTAL && at.x < count {
                let ent = entry_of(at.x);
                vals[u] = fetch(at.y, ent, sa, inverse);
            }
        }
        //#unroll
        for (var u = 0u; u < LOADS; u++) {
            let e = lid + u * WG;
            let at = position(e, along_load, N);
            if e < TOTAL && at.x < count {
                sh[slot(at.x * PITCH, at.y)] = vals[u];
            }
        }
    } else {
        for (var e = lid; e < TOTAL; e += WG) {
            let at = position(e, along_load, N);
            if at.x < count {
                let ent = entry_of(at.x);
                sh[slot(at.x * PITCH, at.y)] = fetch(at.y, ent, sa, inverse);
            }
        }
    }
    if !DLOAD {
        workgroupBarrier();
    }
    passes(lid);
    if BLUE {
        // the product with the chirp's spectrum, conjugated: the second forward passes then
        // take the inverse DFT (conjugated back on store)
        for (var e = lid; e < TOTAL; e += WG) {
            let j = e % N;
            let at = slot((e / N) * PITCH, j);
            sh[at] = conj_if(cmul(sh[at], tw[p.tw_first + p.spec_at + j]), true);
        }
        workgroupBarrier();
        passes(lid);
    }
    let da = signed(p.dst_axis);
    if DSTORE {
        // (the last pass wrote the destination)
    } else if UNROLL {
        // every result computed (its table reads in flight together) before the first store
        var outs: array<Out, STORES>;
        //#unroll
        for (var u = 0u; u < STORES; u++) {
            let e = lid + u * WG;
            let at = position(e, along_store, NSTORE);
            if e < TOTAL_STORE && at.x < count {
                outs[u] = store_value(at.x, at.y, scale, inverse, da);
            }
        }
        //#unroll
        for (var u = 0u; u < STORES; u++) {
            let e = lid + u * WG;
            if e < TOTAL_STORE && position(e, along_store, NSTORE).x < count {
                put(outs[u]);
            }
        }
    } else {
        for (var e = lid; e < TOTAL_STORE; e += WG) {
            let at = position(e, along_store, NSTORE);
            if at.x < count {
                put(store_value(at.x, at.y, scale, inverse, da));
            }
        }
    }
    if REAL == 3u && lid < count {
        // X[h], from Z[0]: written by the entry of column 0
        let ent = entry(b0 + lid);
        if ent.z == 0 {
            dst[u32(ent.y + i32(N) * da)] = real_post_paired(lid, 0u, N, scale * T(0.5), (p.flags & 16u) != 0u);
        }
    }
}
