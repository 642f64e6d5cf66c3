// compact_write's writers of write_values from a source array of a 4-byte dtype (bound in
// perm's place), staged: the flagged element's bits (finish_tile writes them).
fn write_flagged(r: u32, i: u32) {
    stage[r - tile_base] = perm[params.perm_first + i];
}

fn write_all(g: u32, i: u32) {
}
