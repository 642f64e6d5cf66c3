// Sort of short rows (n <= C) in workgroup memory: a bitonic network over (key, column), so
// equal keys keep their column order (stable) -- see _backend/ops_sort.py.
//
// A workgroup holds C = 2^k slots: rows of the dispatch are padded to NP = 2^ceil(log2 n)
// slots each (C / NP rows per workgroup); padding slots get MAXKEY and a column >= n, so they
// sort after the row's elements. The network sorts every aligned block of NP slots ascending:
// each merge phase of size k starts with a "mirror" step (slot i against i ^ (k - 1)), so no
// direction bits are needed. Keys come from the source dtype (to_key); the sorted rows are
// written through write_out (OUT_MODE as in sort_scatter.wgsl), element e = r * n + rank.
//#include common
//#include sort_keys

const WG: u32 = 256u;
const C: u32 = {{C}}u;
const HAS_VALS: bool = {{HAS_VALS}};
const OUT_MODE: u32 = {{OUT_MODE}}u;

struct Params {
    rows: u32,       // rows of this dispatch
    n: u32,          // row length
    np: u32,         // slots per row: next power of two >= n (<= C)
    lnp: u32,        // log2(np)
    src_base: u32,   // binding element of (row 0, column 0) of the source
    src_ld: u32,     // source row stride (elements)
    dst_base: u32,   // binding element of destination element e = 0
    dval_base: u32,  // binding element of destination value e = 0 (OUT_MODE 0)
    dlo: u32,        // unused (always 0): the destination of a dispatch fits one binding
    dhi: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<{{DST_ARRAY}}>;
@group(0) @binding(3) var<storage, read_write> dval: array<u32>;

var<workgroup> klo: array<u32, C>;
var<workgroup> khi: array<u32, C>;
var<workgroup> col: array<u32, C>;

{{SRC_LOADER}}

{{WRITE_OUT}}

fn cas(i: u32, p: u32) {
    let ki = vec2<u32>(klo[i], khi[i]);
    let kp = vec2<u32>(klo[p], khi[p]);
    let ci = col[i];
    let cq = col[p];
    if (key_less(kp, ki) || (all(kp == ki) && cq < ci)) {
        klo[i] = kp.x;
        khi[i] = kp.y;
        col[i] = cq;
        klo[p] = ki.x;
        khi[p] = ki.y;
        col[p] = ci;
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    let rpt = C >> params.lnp;
    if (g * rpt >= params.rows) {
        return;
    }
    let r0 = g * rpt;
    for (var s = lid; s < C; s += WG) {
        let r = r0 + (s >> params.lnp);
        let c = s & (params.np - 1u);
        var k = MAXKEY;
        if (r < params.rows && c < params.n) {
            k = to_key(src_bits(params.src_base + r * params.src_ld + c));
        }
        klo[s] = k.x;
        khi[s] = k.y;
        col[s] = c;
    }
    workgroupBarrier();
    for (var lk = 1u; lk <= params.lnp; lk++) {
        let half = 1u << (lk - 1u);
        let k = half << 1u;
        for (var q = lid; q < C / 2u; q += WG) {
            let i = ((q >> (lk - 1u)) << lk) + (q & (half - 1u));
            cas(i, i ^ (k - 1u));
        }
        workgroupBarrier();
        for (var lj = lk - 1u; lj > 0u; lj--) {
            let j = 1u << (lj - 1u);
            for (var q = lid; q < C / 2u; q += WG) {
                let i = ((q >> (lj - 1u)) << lj) + (q & (j - 1u));
                cas(i, i + j);
            }
            workgroupBarrier();
        }
    }
    for (var s = lid; s < C; s += WG) {
        let r = r0 + (s >> params.lnp);
        let rank = s & (params.np - 1u);
        if (r < params.rows && rank < params.n) {
            write_out(r * params.n + rank, vec2<u32>(klo[s], khi[s]), col[s]);
        }
    }
}
