// The vector path of an f32 source whose vector combine VCOMBINE may drop a NaN: every load keeps
// per lane the largest magnitude bits seen (LANES folds them, NAN makes a NaN of the accumulator
// type ACC from their bits m).
@group(0) @binding(3) var<storage, read> srcv: array<vec{{WIDTH}}<{{ARRAY}}>>;

// NaN tracking (the vector combine `{{VCOMBINE}}` may drop a NaN operand): per lane, the largest
// magnitude bits of the values loaded; a NaN's are above 0x7F800000.
var<private> nan_bits: vec{{WIDTH}}<u32>;

fn load_vec(v: u32) -> vec{{WIDTH}}<f32> {
    let x = srcv[v];
    nan_bits = max(nan_bits, bitcast<vec{{WIDTH}}<u32>>(x) & vec{{WIDTH}}<u32>(0x7FFFFFFFu));
    return x;
}

fn load_src_nan(i: u32) -> f32 {
    let x = load_src(i);
    nan_bits.x = max(nan_bits.x, bitcast<u32>(x) & 0x7FFFFFFFu);
    return x;
}

// r, or a NaN if one was loaded.
fn nan_fold(r: {{ACC}}) -> {{ACC}} {
    let m = {{LANES}};
    return select(r, {{NAN}}, m > 0x7F800000u);
}
