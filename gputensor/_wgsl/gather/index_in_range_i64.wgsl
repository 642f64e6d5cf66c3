// idx{{K}}_in_range(i, n): whether element i of ix{{K}} lies in [-n, n), for a 64-bit signed value: its high word is the low word's sign extension.
fn idx{{K}}_in_range(i: u32, n: i32) -> bool {
    let b = idx{{K}}_bits(i);
    let v = idx{{K}}_load(i);
    return (b.y == select(0u, 0xFFFFFFFFu, bitcast<i32>(b.x) < 0i)) && v >= -n && v < n;
}
