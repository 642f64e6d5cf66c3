// compact_write's writers of write_values of a 'head' plan: the key of the group head, by store_out.
fn write_flagged(r: u32, i: u32) {
    store_out(params.out_base + r, from_key(key_at(params.src_first + i)));
}

fn write_all(g: u32, i: u32) {
}
