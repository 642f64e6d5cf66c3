// compact_write's writers of write_values over a histogram from value_base: the value of the
// flagged bucket, by store_out.
fn write_flagged(r: u32, i: u32) {
    store_out(params.out_base + r, vec2<u32>(params.value_base + params.g0 + i, 0u));
}

fn write_all(g: u32, i: u32) {
}
