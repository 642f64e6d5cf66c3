// Gather / scatter with integer index arrays (see _backend/ops_gather.py):
//
//   for every point m of an iteration space of `rank` dims (sizes dims[d].x, row-major):
//     ioff = sum_k norm_k(I_k[idx_first[k] + sum_d c_d * istride[d][k]]) * idx_mul[k]
//     B[b_first + sum_d c_d * dims[d].z (+ ioff if SCATTER)] = A[a_first + sum_d c_d * dims[d].y (+ ioff if !SCATTER)]
//
// where norm_k(v) = v + idx_n[k] for v < 0 (negative indices count from the end; idx_n = 0
// leaves offsets as they are). A and B have the same dtype and are moved as raw bits (W bits:
// 64-bit as two words, packed 8/16-bit lanes through an atomic compare-exchange loop on B, so
// neighbours in a word are never clobbered). The indexed side (A for a gather, B for a
// scatter) may be larger than one binding: each dispatch binds one window of it and only moves
// the points whose indexed element lies in [lo, hi) of that binding. Index arrays of any
// integer dtype are read as raw bits and sign-extended; the host checked their range first,
// or (CHECK_BINDING, gathers) each point checks its indices and, for one out of range, moves
// nothing and ORs bit k (the index array) into checks[check_slot] (see _backend/index_checks.py).
// u32 arithmetic wraps, so strides and offsets may be negative (i32 bits).
//
// Scatters store what a sequential loop over the points in row-major order stores: the value of
// the LAST point that writes an element. They run in two passes (WINNER): a claim pass does
// atomicMax(win[element], point + 1) with the point's linear index (m_first + sum_d c_d *
// dims[d].w, so boxes and windows of one scatter number their points as the whole space does),
// then the write pass stores only the points whose claim won.
//#include common

const SCATTER: bool = {{SCATTER}};
const NIDX: u32 = {{NIDX}}u;
const MAXD: u32 = 6u;

struct Params {
    count: u32,      // points of this dispatch
    rank: u32,       // dims of the iteration space (1..MAXD)
    a_first: u32,    // binding element of A at point 0 (wrapping)
    b_first: u32,    // binding element of B at point 0 (wrapping)
    lo: u32,         // indexed side: binding elements [lo, hi) are this dispatch's
    hi: u32,
    w_first: u32,    // winner binding element of the indexed side's binding element lo
    m_first: u32,    // linear index of point 0 in the whole iteration space
    idx_first: vec4<u32>,               // binding element of index array k at point 0
    idx_n: vec4<u32>,                   // normalisation length of index array k (0: none)
    idx_mul: vec4<u32>,                 // element stride of index array k (i32 bits)
    dims: array<vec4<u32>, 6>,          // x: size, y: A stride, z: B stride (i32 bits), w: linear stride
    istride: array<vec4<u32>, 6>,       // stride of index array k in component k (i32 bits)
    check_slot: u32,                    // CHECK_BINDING: the word of `checks` this call's flags go to
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read_write> b: array<{{B_ARRAY}}>;
{{IDX_BINDINGS}}
{{WIN_BINDING}}
{{CHECK_BINDING}}

// bit k: index array k held a value out of range at this point (gathers with CHECK_BINDING)
var<private> bad_bits: u32 = 0u;

{{A_LOADER}}

{{B_STORE}}

{{IDX_LOADERS}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let m = linear_group(wid, nwg) * 256u + lid;
    if (m >= params.count) {
        return;
    }
    var rest = m;
    var ao = 0u;
    var bo = 0u;
    var mo = 0u;
    var io = vec4<u32>(0u, 0u, 0u, 0u);
    for (var d = params.rank; d > 0u; d--) {
        let dim = params.dims[d - 1u];
        let c = rest % dim.x;
        rest = rest / dim.x;
        ao += c * dim.y;
        bo += c * dim.z;
        mo += c * dim.w;
        io += c * params.istride[d - 1u];
    }
    let ioff = index_offset(params.idx_first + io);
    if (bad_bits != 0u) {  // an index out of range: flag it, move nothing
        {{CHECK_FLAG}}
        return;
    }
    var ai = params.a_first + ao;
    var bi = params.b_first + bo;
    if (SCATTER) {
        bi += ioff;
        if (bi < params.lo || bi >= params.hi) {
            return;
        }
        let point = params.m_first + mo + 1u;
        {{WINNER}}
    } else {
        ai += ioff;
        if (ai < params.lo || ai >= params.hi) {
            return;
        }
    }
    store_b(bi, load_a(ai));
}
