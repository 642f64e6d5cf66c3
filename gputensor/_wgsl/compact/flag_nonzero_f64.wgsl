// flag(i): whether element i of a float64 source (from src_bits) is nonzero (-0.0 is zero).
fn flag(i: u32) -> bool {
    let b = src_bits(params.src_first + i);
    return (b.x | (b.y & 0x7FFFFFFFu)) != 0u;
}
