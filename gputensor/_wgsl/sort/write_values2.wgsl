// write_out(e, k, v) of output mode 2: the value (an index) at dst_base + e as a 64-bit integer.
fn write_out(e: u32, k: vec2<u32>, v: u32) {
    let o = params.dst_base + e;
    dst[2u * o] = v;
    dst[2u * o + 1u] = 0u;
}
