// flag(i): whether element i of a float source of up to 32 bits (from src_bits) is nonzero (-0.0 is
// zero; MAGNITUDE masks the bits but the sign).
fn flag(i: u32) -> bool {
    let b = src_bits(params.src_first + i);
    return (b.x & {{MAGNITUDE}}u) != 0u;
}
