// The pointwise steps of Bluestein's chirp-z transform of length n through transforms of length
// m >= 2n - 1, one invocation per element:
//
// MODE 0 (load):     dst[b m + k] = k < n ? src[entry b, element k] * w[k] : 0     (k < m)
// MODE 1 (multiply): dst[b m + k] = src[b m + k] * tab[spec + k]                  (k < m)
// MODE 2 (store):    dst[entry b, element k] = src[b m + k] * w[k] * SCALE         (k < n)
// MODE 3 (copy):     dst[entry b, element k] = src[b m + k] * SCALE                (k < n)
//
// (modes 2 and 3: n the results stored per entry, at most the transform's length)
// w[k] = tab[chirp + k] = exp(-i pi (k^2 mod 2n) / n) (computed in float64 on the host); bit 0
// of p.flags (inverse) uses conj(w); SCALE is the real part of tab[scale_at]. Entry b of the
// strided side has coordinates along its p.nb (at most 4) batch dims (dim 0 fastest) and
// offset first + sum coord_d * stride_d, element k at + k * axis (complex elements, any sign:
// i32 bits).
//#include common

alias T = {{T}};
alias C2 = vec2<T>;
const MODE: u32 = {{MODE}}u;
const WG: u32 = 256u;

struct Params {
    total: u32, n: u32, m: u32, src_first: u32,
    dst_first: u32, tab_first: u32, chirp: u32, spec: u32,
    axis: u32, flags: u32, scale_at: u32, nb: u32,
    size: vec4<u32>,
    stride: vec4<u32>,
}
@group(0) @binding(0) var<uniform> p: Params;
// the source's elements: complex, or (MODE 0 of a real source) real values read as complex ones
@group(0) @binding(1) var<storage, read> src: array<{{SRC}}>;
@group(0) @binding(2) var<storage, read_write> dst: array<C2>;
@group(0) @binding(3) var<storage, read> tab: array<C2>;

// source element k as a complex value
fn load(k: u32) -> C2 {
    return {{LOAD}};
}

fn cmul(a: C2, b: C2) -> C2 {
    return C2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

fn chirp(k: u32) -> C2 {
    let w = tab[p.tab_first + p.chirp + k];
    if (p.flags & 1u) != 0u {
        return C2(w.x, -w.y);
    }
    return w;
}

// the offset of element k of entry b on the strided side
fn strided(b: u32, k: u32) -> u32 {
    var rest = b;
    var off = i32(k) * bitcast<i32>(p.axis);
    for (var d = 0u; d < p.nb; d++) {
        var coord = rest;  // (the last dim takes the rest: no division for one dim)
        if d + 1u < p.nb {
            coord = rest % p.size[d];
            rest = rest / p.size[d];
        }
        off += i32(coord) * bitcast<i32>(p.stride[d]);
    }
    return u32(off);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let e = linear_group(wid, nwg) * WG + lid;
    if e >= p.total {
        return;
    }
    if MODE == 0u {
        let b = e / p.m;
        let k = e % p.m;
        var v = C2(0.0, 0.0);
        if k < p.n {
            v = cmul(load(p.src_first + strided(b, k)), chirp(k));
        }
        dst[p.dst_first + e] = v;
    } else if MODE == 1u {
        let k = e % p.m;
        dst[p.dst_first + e] = cmul(load(p.src_first + e), tab[p.tab_first + p.spec + k]);
    } else {
        let b = e / p.n;
        let k = e % p.n;
        var v = load(p.src_first + b * p.m + k);
        if MODE == 2u {
            v = cmul(v, chirp(k));
        }
        dst[p.dst_first + strided(b, k)] = v * tab[p.tab_first + p.scale_at].x;
    }
}
