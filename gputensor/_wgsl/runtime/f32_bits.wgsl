// {{NAME}}(bits): the f32 whose bits are `bits` (a kernel that calls it and does not define it
// gets it appended by kernels.with_helpers).
fn {{NAME}}(bits: u32) -> f32 {
    return bitcast<f32>(bits);
}
