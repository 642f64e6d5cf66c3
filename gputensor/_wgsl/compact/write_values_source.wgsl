// compact_write's writers of write_values from a source array (bound in perm's place, read by
// source_bits): the value of the flagged element, by store_out.
fn write_flagged(r: u32, i: u32) {
    store_out(params.out_base + r, source_bits(params.perm_first + i));
}

fn write_all(g: u32, i: u32) {
}
