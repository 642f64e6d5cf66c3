// write_out(e, k, v) of output mode 1: the bits of key k (from_key) as element dst_base + e,
// stored by store_out (a store_bits snippet).
fn write_out(e: u32, k: vec2<u32>, v: u32) {
    store_out(params.dst_base + e, from_key(k));
}
