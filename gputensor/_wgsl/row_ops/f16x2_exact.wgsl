// row_f16x2(a, b): two f32 values rounded to float16 (integer round-to-nearest-even,
// ew_f16_bits_f32) and packed in one word, a in the low half.
fn row_f16x2(a: f32, b: f32) -> u32 { return ew_f16_bits_f32(a) | (ew_f16_bits_f32(b) << 16u); }
