// idx{{K}}_in_range(i, n): whether element i of ix{{K}} lies in [-n, n), for a 32-bit unsigned value: below 2^31.
fn idx{{K}}_in_range(i: u32, n: i32) -> bool {
    let b = idx{{K}}_bits(i);
    let v = idx{{K}}_load(i);
    return (b.x < 0x80000000u) && v >= -n && v < n;
}
