// Ballot-mask helpers (subgroupBallot masks are vec4<u32>: lanes 0..127), pulled in with
// `//#include subgroup_masks` by the kernels that use subgroup operations.

fn popcount4(m: vec4<u32>) -> u32 {
    let c = countOneBits(m);
    return c.x + c.y + c.z + c.w;
}

// ballot mask of the lanes below `lane`
fn lanes_below(lane: u32) -> vec4<u32> {
    let w = vec4<u32>(lane >> 5u);
    let idx = vec4<u32>(0u, 1u, 2u, 3u);
    let part = vec4<u32>((1u << (lane & 31u)) - 1u);
    return select(vec4<u32>(0u), vec4<u32>(0xFFFFFFFFu), idx < w) | select(vec4<u32>(0u), part, idx == w);
}

// the lowest lane of a non-empty ballot mask
fn first_lane(m: vec4<u32>) -> u32 {
    let f = firstTrailingBit(m);
    return select(select(select(96u + f.w, 64u + f.z, m.z != 0u), 32u + f.y, m.y != 0u), f.x, m.x != 0u);
}
