// Concatenation in words of type W (u32, or vec4<u32> when every block is a whole number of
// 16-byte vectors): the result is `rows` rows of `width` words (from word `dst_first` of
// binding 1); source k (bindings 2.., SOURCES of them, `count` used) holds `rows` rows of
// col[k + 1] - col[k] words from word src_first[k] of its binding and fills the columns
// [col[k], col[k + 1]) of every result row. One invocation per result word of the columns
// [col[0], col[count]) this dispatch covers.
alias W = {{WORD}};
const SOURCES: u32 = 8u;
const WG: u32 = 256u;

struct Params {
    rows: u32,
    width: u32,
    dst_first: u32,
    count: u32,
    col: array<vec4<u32>, 3>,        // col[0..SOURCES], vec4-packed (uniform arrays: 16-byte stride)
    src_first: array<vec4<u32>, 2>,  // src_first[0..SOURCES - 1]
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> dst: array<W>;
@group(0) @binding(2) var<storage, read> s0: array<W>;
@group(0) @binding(3) var<storage, read> s1: array<W>;
@group(0) @binding(4) var<storage, read> s2: array<W>;
@group(0) @binding(5) var<storage, read> s3: array<W>;
@group(0) @binding(6) var<storage, read> s4: array<W>;
@group(0) @binding(7) var<storage, read> s5: array<W>;
@group(0) @binding(8) var<storage, read> s6: array<W>;
@group(0) @binding(9) var<storage, read> s7: array<W>;

fn col_at(k: u32) -> u32 {
    return params.col[k / 4u][k % 4u];
}

fn load(k: u32, i: u32) -> W {
    switch k {
        case 0u: { return s0[i]; }
        case 1u: { return s1[i]; }
        case 2u: { return s2[i]; }
        case 3u: { return s3[i]; }
        case 4u: { return s4[i]; }
        case 5u: { return s5[i]; }
        case 6u: { return s6[i]; }
        default: { return s7[i]; }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let first = col_at(0u);
    let span = col_at(params.count) - first;
    let idx = (wid.x + wid.y * nwg.x) * WG + lid;
    if (idx >= params.rows * span) {
        return;
    }
    let row = idx / span;
    let c = first + idx % span;
    var k = 0u;
    while (k + 1u < params.count && c >= col_at(k + 1u)) {
        k += 1u;
    }
    let lo = col_at(k);
    let w = col_at(k + 1u) - lo;
    let src = params.src_first[k / 4u][k % 4u] + row * w + (c - lo);
    dst[params.dst_first + row * params.width + c] = load(k, src);
}
