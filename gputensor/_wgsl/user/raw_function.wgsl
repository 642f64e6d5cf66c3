// NAME(j): element j of raw input (VALUE: its load, converted to TYPE).
fn {{NAME}}(j: u32) -> {{TYPE}} {
    return {{VALUE}};
}
