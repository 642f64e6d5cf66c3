// One-time probe of how a 1-D workgroup of 256 invocations is cut into subgroups
// (ops_sort.subgroup_probe; the subgroup scatter kernel, sort_scatter_sg.wgsl, relies on the
// layout it confirms). Invocation lid writes 6 words at out[6 * lid]:
//   subgroup_invocation_id, subgroup_size, the local index of its subgroup's first active lane
//   (subgroupBroadcastFirst), the number of active lanes (popcount of subgroupBallot(true)),
//   the local index of the next lane (subgroupShuffle to (lane + 1) % size) and
//   subgroupExclusiveAdd(1).
// Contiguous subgroups show lane = lid % size, first = lid - lane, active = size,
// next = first + (lane + 1) % size and the exclusive sum = lane.

struct Params {
    unused: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(subgroup_size) sgs: u32,
        @builtin(subgroup_invocation_id) lane: u32) {
    let first = subgroupBroadcastFirst(lid);
    let c = countOneBits(subgroupBallot(true));
    let next = subgroupShuffle(lid, (lane + 1u) % sgs);
    let ex = subgroupExclusiveAdd(1u);
    let o = 6u * lid;
    out[o] = lane;
    out[o + 1u] = sgs;
    out[o + 2u] = first;
    out[o + 3u] = c.x + c.y + c.z + c.w;
    out[o + 4u] = next;
    out[o + 5u] = ex;
}
