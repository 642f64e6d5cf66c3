// The vector path off: a load_vec that only type-checks (VEC_T: the vector, or array, type).
fn load_vec(v: u32) -> {{VEC_T}} {
    return {{VEC_T}}();
}
