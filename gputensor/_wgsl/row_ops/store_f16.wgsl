// Accessors of a float16 binding written one element at a time: its half of the word is
// swapped in atomically (the binding is array<atomic<u32>>).
fn st{{NAME}}(i: u32, v: T) {
    let w = i >> 1u;
    let sh = (i & 1u) * 16u;
    let bits = (row_f16x2(f32(v), 0.0) & 0xFFFFu) << sh;
    let keep = ~(0xFFFFu << sh);
    var old = atomicLoad(&{{B}}[w]);
    loop {
        let r = atomicCompareExchangeWeak(&{{B}}[w], old, (old & keep) | bits);
        if (r.exchanged) { break; }
        old = r.old_value;
    }
}
fn st{{NAME}}4(i: u32, v: vec4<T>) { }
