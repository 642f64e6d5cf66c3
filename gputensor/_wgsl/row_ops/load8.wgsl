// ld{{NAME}}8(i): the 8 elements from i (a multiple of 8) as two 4-element loads.
fn ld{{NAME}}8(i: u32) -> Pair { return Pair(ld{{NAME}}4(i), ld{{NAME}}4(i + 4u)); }
