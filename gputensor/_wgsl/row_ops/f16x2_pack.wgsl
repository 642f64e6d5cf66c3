// row_f16x2(a, b): two f32 values rounded to float16 by the pack2x16float builtin and packed in
// one word, a in the low half. WGSL leaves conversions out of float16's range open, so magnitudes
// from 65520 on, which round past the largest float16, are made infinities on their bits.
fn row_f16x2(a: f32, b: f32) -> u32 {
    let v = vec2<f32>(a, b);
    let over = abs(v) >= vec2<f32>(65520.0);
    let packed = pack2x16float(select(v, vec2<f32>(0.0), over));
    let signs = (bitcast<vec2<u32>>(v) >> vec2<u32>(16u)) & vec2<u32>(0x8000u);
    let h = select(vec2<u32>(packed & 0xFFFFu, packed >> 16u), signs | vec2<u32>(0x7C00u), over);
    return h.x | (h.y << 16u);
}
