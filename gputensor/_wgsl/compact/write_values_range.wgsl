// compact_write's writers of write_values over a histogram whose smallest value key_range_record
// wrote: the value of the flagged bucket (SIGN flips a signed value's key back), by store_out.
fn write_flagged(r: u32, i: u32) {
    store_out(params.out_base + r, vec2<u32>(((~perm[params.perm_first]) + params.g0 + i) ^ {{SIGN}}u, 0u));
}

fn write_all(g: u32, i: u32) {
}
