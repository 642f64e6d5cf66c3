// idx{{K}}_in_range(i, n): whether element i of ix{{K}} lies in [-n, n), for a value the low word holds whole.
fn idx{{K}}_in_range(i: u32, n: i32) -> bool {
    let b = idx{{K}}_bits(i);
    let v = idx{{K}}_load(i);
    return (true) && v >= -n && v < n;
}
