// gemm_core's workgroup staging arrays as two planes of vec2 pairs (f64 accumulation): lanes 0-1
// of quad q are element q of plane 0, lanes 2-3 element q of plane 1. A vec4<f64> quad is 32
// bytes, read as two 128-bit loads; with whole quads side by side, consecutive invocations'
// first loads would touch every other 16 bytes (half the banks, two-way conflicts). In planes,
// each load of consecutive invocations reads consecutive 16 bytes. The staging of f64 data (the
// same workgroup memory as the quads).
const QA: u32 = 2u * BK * SA4;        // quads per staging array of A
const QB: u32 = 2u * BK * SB4;

var<workgroup> As: array<vec2<acc_t>, 2u * QA>;
var<workgroup> Bs: array<vec2<acc_t>, 2u * QB>;

// Lane l of quad q of the A (B) staging array.
fn put_a(q: u32, l: u32, v: acc_t) {
    As[(l / 2u) * QA + q][l % 2u] = v;
}

fn put_b(q: u32, l: u32, v: acc_t) {
    Bs[(l / 2u) * QB + q][l % 2u] = v;
}

// Quad q of the A (B) staging array.
fn quad_a(q: u32) -> vec4<acc_t> {
    return vec4<acc_t>(As[q], As[QA + q]);
}

fn quad_b(q: u32) -> vec4<acc_t> {
    return vec4<acc_t>(Bs[q], Bs[QB + q]);
}
