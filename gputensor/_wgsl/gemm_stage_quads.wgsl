// gemm_core's workgroup staging arrays as vec4 quads (f32 accumulation): quad q of a staging
// array is one vec4<acc_t>, read with one 128-bit load: the staging of f16/f32 data.
var<workgroup> As: array<vec4<acc_t>, 2u * BK * SA4>;
var<workgroup> Bs: array<vec4<acc_t>, 2u * BK * SB4>;

// Lane l of quad q of the A (B) staging array.
fn put_a(q: u32, l: u32, v: acc_t) {
    As[q][l] = v;
}

fn put_b(q: u32, l: u32, v: acc_t) {
    Bs[q][l] = v;
}

// Quad q of the A (B) staging array.
fn quad_a(q: u32) -> vec4<acc_t> {
    return As[q];
}

fn quad_b(q: u32) -> vec4<acc_t> {
    return Bs[q];
}
