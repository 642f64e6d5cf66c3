// Shared part of the reduction kernels (reduce_plain, reduce_arg, reduce_var), pulled in with
// `//#include reduce_common`. _backend/reduce_ops.py fills the placeholders from its op and dtype tables.
//
// A dispatch reduces, for each of `nkeep` outputs k, the reduced indices j of one chunk of
// [0, nred). Workgroups are TX x TY invocations: x runs over TX consecutive outputs (a tile), y
// over the reduced indices of the chunk (j = j0 + y, j0 + y + TY, ...). TX = 1 is the "row" case
// (the reduced elements are innermost in memory: consecutive invocations read consecutive
// elements), a large TX the "column" case (consecutive invocations own consecutive outputs).
// Workgroup g handles tile g % ktiles of chunk g / ktiles, so the partitioning depends only on
// the shapes: results are bitwise reproducible.
//
// Inputs: the strided source (IN_PARTIAL = false) or the partial states of an earlier pass
// (IN_PARTIAL = true: slot j of output k at k * slots + j). Outputs: the destination
// (OUT_PARTIAL = false, after the op's post-map) or partial states (slot slot_base + chunk).
// Partial values are bound in place of the source (IN_PARTIAL) or of the destination
// (OUT_PARTIAL) as array<{{SH}}>; the arg and var kernels bind their other state arrays after.

//#include common

const TX: u32 = {{TX}}u;
const TY: u32 = {{TY}}u;
const WG: u32 = {{TX}}u * {{TY}}u;
// true: one kept (reduced) dim, no index decomposition; false: params.keep_rank (red_rank) dims.
const KEEP_RANK1: bool = {{KEEP_RANK1}};
const RED_RANK1: bool = {{RED_RANK1}};
const IN_PARTIAL: bool = {{IN_PARTIAL}};
const OUT_PARTIAL: bool = {{OUT_PARTIAL}};
const NONE: u32 = 0xFFFFFFFFu;

// Offsets and strides are u32 words holding i32 values: u32 arithmetic wraps, so negative
// strides work as long as the final index is in range (checked on the host).
struct Params {
    nkeep: u32,        // outputs of this dispatch
    nred: u32,         // reduced indices per output of this dispatch
    ktiles: u32,       // ceil(nkeep / TX)
    nchunks: u32,      // chunks the reduced range is split into
    chunk_len: u32,    // reduced indices per chunk
    src_first: u32,    // element index of the source's first element in its binding
    dst_first: u32,    // element index of the destination's first element in its binding
    slots: u32,        // partial slots per output (layout [output][slot])
    slot_base: u32,    // first slot this dispatch writes (OUT_PARTIAL)
    idx_base: u32,     // reduced linear index of reduced element 0 (arg ops)
    count: u32,        // elements reduced per output over the whole reduction (mean, var)
    ddof: f32,         // delta degrees of freedom (var, std)
    keep_rank: u32,    // kept dims (1..8)
    red_rank: u32,     // reduced dims (1..8)
    pad0: u32,
    pad1: u32,
    keep_n: array<vec4<u32>, 2>,   // kept dims, outermost first: sizes,
    keep_s: array<vec4<u32>, 2>,   // source strides,
    keep_d: array<vec4<u32>, 2>,   // destination strides
    red_n: array<vec4<u32>, 2>,    // reduced dims, outermost first: sizes,
    red_s: array<vec4<u32>, 2>,    // source strides,
    red_i: array<vec4<u32>, 2>,    // strides of the reduced linear index (arg ops)
{{PARAMS_EXT}}
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<{{SRC_ARRAY}}>;
@group(0) @binding(2) var<storage, read_write> dst: array<{{DST_ARRAY}}>;

// Fused elementwise prologue (ops_reduce.Prologue; empty otherwise): the source is virtual (row-
// major over the reduction's shape, its binding a dummy) and `load_src(i)` is `fused_src(i)`,
// which loads the expression's inputs from their own bindings (after the kernel's) and
// evaluates it. Its parameters follow the fixed ones (`params.ext`).
{{PROLOGUE}}

// (source offset, destination offset) of output k (row-major over the kept dims).
fn keep_offsets(k: u32) -> vec2<u32> {
    if (KEEP_RANK1) {
        return vec2<u32>(k * params.keep_s[0].x, k * params.keep_d[0].x);
    }
    var rem = k;
    var so = 0u;
    var dof = 0u;
    for (var d = params.keep_rank - 1u; d > 0u; d--) {
        let n = params.keep_n[d >> 2u][d & 3u];
        let i = rem % n;
        rem = rem / n;
        so += i * params.keep_s[d >> 2u][d & 3u];
        dof += i * params.keep_d[d >> 2u][d & 3u];
    }
    return vec2<u32>(so + rem * params.keep_s[0].x, dof + rem * params.keep_d[0].x);
}

// (source offset, reduced linear index offset) of reduced index j (row-major over reduced dims).
fn red_offsets(j: u32) -> vec2<u32> {
    if (RED_RANK1) {
        return vec2<u32>(j * params.red_s[0].x, j * params.red_i[0].x);
    }
    var rem = j;
    var so = 0u;
    var io = 0u;
    for (var d = params.red_rank - 1u; d > 0u; d--) {
        let n = params.red_n[d >> 2u][d & 3u];
        let i = rem % n;
        rem = rem / n;
        so += i * params.red_s[d >> 2u][d & 3u];
        io += i * params.red_i[d >> 2u][d & 3u];
    }
    return vec2<u32>(so + rem * params.red_s[0].x, io + rem * params.red_i[0].x);
}

// IEEE binary16 bits of x, rounded to nearest even (NumPy's npy_floatbits_to_halfbits): exact
// on every adapter, unlike pack2x16float, whose rounding and overflow are not specified.
fn f16_bits(x: f32) -> u32 {
    let f = bitcast<u32>(x);
    let sign = (f >> 16u) & 0x8000u;
    let fexp = f & 0x7F800000u;
    var fsig = f & 0x007FFFFFu;
    if (fexp >= 0x47800000u) {
        if (fexp == 0x7F800000u && fsig != 0u) {
            var r = 0x7C00u + (fsig >> 13u);
            if (r == 0x7C00u) {
                r = r + 1u;
            }
            return sign | r;
        }
        return sign | 0x7C00u;
    }
    if (fexp <= 0x38000000u) {
        if (fexp < 0x33000000u) {
            return sign;
        }
        let e = fexp >> 23u;
        fsig = (0x00800000u + fsig) >> (113u - e);
        if ((fsig & 0x3FFFu) != 0x1000u || (f & 0x7FFu) != 0u) {
            fsig = fsig + 0x1000u;
        }
        return sign + (fsig >> 13u);
    }
    let hexp = (fexp - 0x38000000u) >> 13u;
    if ((fsig & 0x3FFFu) != 0x1000u) {
        fsig = fsig + 0x1000u;
    }
    return sign + hexp + (fsig >> 13u);
}

// x rounded to the nearest binary16 value (as an f32).
fn round_f16(x: f32) -> f32 {
    return unpack2x16float(f16_bits(x)).x;
}

// Element i of the source binding, in the source's compute type.
fn load_src(i: u32) -> {{SRC_COMPUTE}} {
    return {{LOAD_SRC}};
}

// A source value as an accumulator value (cast to the accumulation dtype: wraps narrow
// integers, rounds to float16, bool is != 0 with NaN true).
fn to_acc(x: {{SRC_COMPUTE}}) -> {{ACC}} {
    return {{TO_ACC}};
}

// An accumulator value rounded/wrapped to the accumulation dtype (narrow ints, float16).
fn acc_wrap(x: {{ACC}}) -> {{ACC}} {
    return {{ACC_WRAP}};
}

fn acc_is_nan(x: {{ACC}}) -> bool {
    return {{IS_NAN}};
}

fn to_sh(x: {{ACC}}) -> {{SH}} {
    return {{TO_SH}};
}

fn from_sh(x: {{SH}}) -> {{ACC}} {
    return {{FROM_SH}};
}

// Partial state values: read (IN_PARTIAL, from the source binding) and written (OUT_PARTIAL,
// to the destination binding); in the other modes the bodies only type-check.
fn load_partial(i: u32) -> {{ACC}} {
    {{LOAD_PARTIAL}}
}

fn store_partial(i: u32, x: {{ACC}}) {
    {{STORE_PARTIAL}}
}

// Write a destination element (packed dtypes update their lane with two atomics, so outputs
// sharing a word may be written by different workgroups).
fn store_dst(i: u32, x: {{DST}}) {
    {{STORE_DST}}
}
