// compact_write's writers of write_indices: the global index of the flagged element as a 32-bit
// integer at out_base + r.
fn write_flagged(r: u32, i: u32) {
    let o = params.out_base + r;
    out[o] = i + params.g0;
}

fn write_all(g: u32, i: u32) {
}
