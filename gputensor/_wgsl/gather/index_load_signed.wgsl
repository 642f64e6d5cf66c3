// idx{{K}}_load(i): element i of index binding ix{{K}} (a signed integer of fewer than 32 bits,
// its bits from idx{{K}}_bits) sign-extended from its SH high bits.
fn idx{{K}}_load(i: u32) -> i32 {
    let b = idx{{K}}_bits(i);
    return bitcast<i32>(b.x << {{SH}}u) >> {{SH}}u;
}
