// Generic elementwise kernel: out = EXPR(x0, x1, ...) over a strided, broadcast iteration space.
// Generated pieces (see _backend/elementwise.py): the storage bindings, FUNCTIONS (the offsets of
// every operand for a linear element index, and `element`, which loads, converts and evaluates
// the expression), and the store, one of:
//   direct  ELEMENTS_PER_THREAD elements per invocation, output element type a WGSL scalar;
//   vector  contiguous operands of one item size bound as vec4/vec2 arrays, a vector per invocation;
//   mixed   contiguous operands of mixed widths (packed with 4-byte types): a group of 4 (packed
//           output: 4 * lanes) elements per invocation, each operand bound as vectors of its own;
//   word    packed 8/16-bit output laid out contiguously: one invocation owns one u32 word;
//   atomic  packed output with arbitrary strides: lanes updated with atomicAnd/atomicOr.
// Parameter words: [0] n (elements, or vectors / groups in the vector / mixed modes), [1..] shape, then per array
// operand: offset, strides (i32 bits), then scalar operands' bits.
{{ENABLE}}
//#include common

@group(0) @binding(0) var<uniform> params: array<vec4<u32>, {{NPARAM_VEC4}}>;
{{BINDINGS}}

{{HELPERS}}

fn P(i: u32) -> u32 {
    return params[i >> 2u][i & 3u];
}

{{FUNCTIONS}}

@compute @workgroup_size({{WORKGROUP}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = linear_group(wid, nwg) * {{WORKGROUP}}u + lid;
    let n = P(0u);
{{STORE}}
}
