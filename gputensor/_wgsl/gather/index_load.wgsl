// idx{{K}}_load(i): element i of index binding ix{{K}} (from idx{{K}}_bits) as i32 (32/64-bit values are
// range-checked, so the low word holds the value; small unsigned ones are zero-extended).
fn idx{{K}}_load(i: u32) -> i32 {
    let b = idx{{K}}_bits(i);
    return bitcast<i32>(b.x);
}
