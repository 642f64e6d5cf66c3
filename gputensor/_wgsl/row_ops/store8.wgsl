// st{{NAME}}8(i, p): stores 8 elements from i (a multiple of 8) as two 4-element stores.
fn st{{NAME}}8(i: u32, p: Pair) { st{{NAME}}4(i, p.lo); st{{NAME}}4(i + 4u, p.hi); }
