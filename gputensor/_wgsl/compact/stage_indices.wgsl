// compact_write's writers of write_indices, staged: the global index of the flagged element
// (finish_tile writes it).
fn write_flagged(r: u32, i: u32) {
    stage[r - tile_base] = i + params.g0;
}

fn write_all(g: u32, i: u32) {
}
