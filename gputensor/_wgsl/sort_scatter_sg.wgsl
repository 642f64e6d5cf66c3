// Radix sort, step 3 of a pass, ranking with subgroup operations in one step by the whole 8-bit
// digit (CUB's BlockRadixRankMatch / Onesweep "warp match"). The shared steps and the output
// modes: sort_scatter_common.wgsl; the kernel without subgroups: sort_scatter.wgsl.
//
// Needs subgroups that are contiguous blocks of the 1-D workgroup (subgroup index = lid / sgs,
// lane = lid % sgs), of a power-of-two size 4..128: ops_sort runs it only where its one-time
// probe (subgroup_probe.wgsl) saw that layout. The subgroup size is read at run time, so a
// size other than the probe's is still handled.
//
// Positions. Subgroup s = lid / sgs owns the contiguous tile positions
// [s * ITEMS * sgs, (s + 1) * ITEMS * sgs), lane l of it the positions s * ITEMS * sgs + j * sgs + l
// (item j < ITEMS: coalesced loads), so (subgroup, item, lane) order is input order.
//
// Counter rows. Counter row v counts the digits of VW = max(sgs, WG / ROWS) consecutive
// invocations (lid / VW = v), i.e. of VW / sgs consecutive subgroups ("phases" of the row),
// which own the contiguous positions [v * ITEMS * VW, (v + 1) * ITEMS * VW). ROWS, a power of
// two >= 2, is what fits the workgroup memory: ops_sort picks WG / the probe's subgroup size
// where it fits, so that every subgroup has a row of its own (one phase). With several phases,
// the subgroups of a row rank all their items one after another, in subgroup order, between
// workgroup barriers.
//
// Step 2:
//   a. rank: for item j = 0, 1, ..., each subgroup ranks its keys by the digit d: the lanes
//      with d (peers) are the AND of 8 subgroupBallots (one per digit bit, complemented where
//      the bit is 0) and of the active lanes; rank in the subgroup = popcount(peers & lanes
//      below). The lowest peer adds popcount(peers) to counter (v, d) with one atomicAdd and
//      hands the old value to its peers with subgroupShuffle: rank in the row = old + rank in
//      the subgroup, i.e. the number of elements of digit d before it in row v (in input order:
//      stable);
//   b. scan: invocation d sums column d of the counters (the tile's count of digit d), an
//      exclusive scan over the 256 digits (subgroupExclusiveAdd, then the subgroups' totals)
//      gives lstart[d], and counter (v, d) becomes lstart[d] + the count of d in rows before v,
//      i.e. where row v's elements of digit d start in the digit-sorted tile (the (digit, row)
//      scan, digit-major);
//   c. every element goes to counter (v, d) + its rank in the row (put_elem).
//
// Counters are 16 bits (a row counts at most ITEMS * VW <= 1024, a start is <= TILE = 2048),
// two rows per u32: counter (v, d) is bits (v & 1) * 16 .. +15 of cnt[(v >> 1) * 256 + d], so
// invocation d owns whole words in the scan, and an atomicAdd of the row's half never carries
// into the other. The counters are atomics: rows 2k and 2k + 1 share words (their subgroups add
// at the same time), and the leaders of digit d in successive items of a subgroup are ordered
// by their atomicAdd returns (a leader's result reaches its subgroup, by the shuffle, before
// the next item's leaders add).
// Every subgroup operation runs in control flow uniform in its subgroup (all lanes take part;
// padding positions carry MAXKEY).
//#include sort_scatter_common
//#include subgroup_masks

const ROWS: u32 = {{ROWS}}u;                 // counter rows (power of two, >= 2)
const CNT_WORDS: u32 = ROWS / 2u * 256u;
const MAX_SUBGROUPS: u32 = WG / 4u;          // subgroups of the smallest size (4)

var<workgroup> cnt: array<atomic<u32>, CNT_WORDS>;
var<workgroup> sg_total: array<u32, MAX_SUBGROUPS>;

fn cnt_word(v: u32, d: u32) -> u32 {
    return (v >> 1u) * 256u + d;
}

fn cnt_shift(v: u32) -> u32 {
    return (v & 1u) * 16u;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32, @builtin(subgroup_size) sgs: u32,
        @builtin(subgroup_invocation_id) lane: u32) {
    let g = linear_group(wid, nwg);
    if (g >= params.rows * params.ntd) {
        return;
    }
    let tl = tile_of(g);
    let vw = max(sgs, WG / ROWS);     // invocations per counter row
    let v = lid / vw;                 // this invocation's counter row
    let nrows = WG / vw;
    let phases = vw / sgs;            // subgroups per counter row
    let phase = (lid % vw) / sgs;
    let pos0 = (lid / sgs) * ITEMS * sgs + lid % sgs;

    for (var w = lid; w < CNT_WORDS; w += WG) {
        atomicStore(&cnt[w], 0u);
    }
    load_gstart(tl, lid);

    // 1. subgroup-striped load: item j at position pos0 + j * sgs
    var keys: array<vec2<u32>, ITEMS>;
    var vals: array<u32, ITEMS>;
    //#unroll
    for (var j = 0u; j < ITEMS; j++) {
        let e = load_elem(tl, pos0 + j * sgs);
        keys[j] = e.k;
        vals[j] = e.v;
    }
    workgroupBarrier();

    // 2a. rank every item in its counter row
    let live = subgroupBallot(true);   // the active lanes
    let below = lanes_below(lane);
    let shift = cnt_shift(v);
    var rank: array<u32, ITEMS>;
    for (var ph = 0u; ph < phases; ph++) {
        if (ph == phase) {  // uniform in the subgroup
            //#unroll
            for (var j = 0u; j < ITEMS; j++) {
                let d = digit(keys[j], params.shift);
                var peers = live;
                //#unroll
                for (var b = 0u; b < 8u; b++) {
                    let one = ((d >> b) & 1u) != 0u;
                    peers &= subgroupBallot(one) ^ vec4<u32>(select(0xFFFFFFFFu, 0u, one));
                }
                let before = popcount4(peers & below);
                var old = 0u;
                if (before == 0u) {
                    old = atomicAdd(&cnt[cnt_word(v, d)], popcount4(peers) << shift);
                }
                old = subgroupShuffle(old, first_lane(peers));
                rank[j] = ((old >> shift) & 0xFFFFu) + before;
            }
        }
        if (phases > 1u) {
            workgroupBarrier();
        }
    }
    workgroupBarrier();

    // 2b. digit starts: invocation lid owns digit lid (column lid of the counters)
    var total = 0u;
    for (var u = 0u; u < nrows; u += 2u) {  // nrows is even: rows u and u + 1 share a word
        let c = atomicLoad(&cnt[cnt_word(u, lid)]);
        total += (c & 0xFFFFu) + (c >> 16u);
    }
    let in_sg = subgroupExclusiveAdd(total);
    let sg = lid / sgs;
    if (lane == sgs - 1u) {
        sg_total[sg] = in_sg + total;
    }
    workgroupBarrier();
    var run = in_sg;
    for (var s = 0u; s < sg; s++) {
        run += sg_total[s];
    }
    lstart[lid] = run;
    for (var u = 0u; u < nrows; u += 2u) {
        let w = cnt_word(u, lid);
        let c = atomicLoad(&cnt[w]);
        let lo = run;
        run += c & 0xFFFFu;
        atomicStore(&cnt[w], lo | (run << 16u));
        run += c >> 16u;
    }
    workgroupBarrier();

    // 2c. the digit-sorted tile
    //#unroll
    for (var j = 0u; j < ITEMS; j++) {
        let d = digit(keys[j], params.shift);
        let p = ((atomicLoad(&cnt[cnt_word(v, d)]) >> shift) & 0xFFFFu) + rank[j];
        put_elem(p, keys[j], vals[j]);
    }
    workgroupBarrier();

    // 3. the striped write
    write_tile(tl, lid);
}
