// Shared helpers, pulled in with `//#include common`.

// Linear workgroup id of a grid folded over x and y (WgpuContext.fold_grid).
fn linear_group(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}
