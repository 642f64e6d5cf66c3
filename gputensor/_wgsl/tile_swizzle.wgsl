// The (tile_m, tile_n) of linear tile `lin`, walking GROUP_M tile-rows at a time so that
// workgroups running together share A and B tiles in the cache. The including kernel defines
// the constant GROUP_M.
fn swizzle_tile(lin: u32, tiles_m: u32, tiles_n: u32) -> vec2<u32> {
    let per_group = GROUP_M * tiles_n;
    let group = lin / per_group;
    let first_m = group * GROUP_M;
    let size_m = min(tiles_m - first_m, GROUP_M);
    let in_group = lin - group * per_group;
    return vec2<u32>(first_m + in_group % size_m, in_group / size_m);
}
