// flag(i): whether element i of an integer or bool source (from src_bits) is nonzero.
fn flag(i: u32) -> bool {
    let b = src_bits(params.src_first + i);
    return (b.x | b.y) != 0u;
}
