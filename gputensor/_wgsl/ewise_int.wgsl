// Integer helpers of the elementwise op table (_backend/elementwise_ops.py): a function library
// as ewise_helpers.wgsl, whose functions named `NAME_{{T}}` are made for i32, i64, u32 and u64.

fn ew_floordiv_{{T}}(a: {{T}}, b: {{T}}) -> {{T}} {
    // The remainder is a - q*b, never WGSL's `%`: NVIDIA's Vulkan compiler gets signed `%`
    // wrong for negative operands (-127 % 127 != 0 on an H200). MIN / -1 is MIN (WGSL), r = 0.
    if (b == {{T}}(0)) { return {{T}}(0); }
    let q = a / b;
    let r = a - q * b;
    if (r != {{T}}(0) && ((r < {{T}}(0)) != (b < {{T}}(0)))) { return q - {{T}}(1); }
    return q;
}

fn ew_mod_{{T}}(a: {{T}}, b: {{T}}) -> {{T}} {
    // Floored remainder from the truncated quotient (see ew_floordiv: no signed `%`).
    if (b == {{T}}(0)) { return {{T}}(0); }
    var r = a - (a / b) * b;
    if (r != {{T}}(0) && ((r < {{T}}(0)) != (b < {{T}}(0)))) { r = r + b; }
    return r;
}

fn ew_ipow_{{T}}(a: {{T}}, b: {{T}}) -> {{T}} {
    // Repeated squaring with wrap-around. Negative exponents (signed types): 1/a truncated.
    if (b < {{T}}(0)) {
        if (a == {{T}}(1)) { return {{T}}(1); }
        if (a == {{T}}(0) - {{T}}(1)) { return select({{T}}(1), a, (b & {{T}}(1)) != {{T}}(0)); }
        return {{T}}(0);
    }
    var base = a;
    var e = b;
    var r = {{T}}(1);
    loop {
        if (e == {{T}}(0)) { break; }
        if ((e & {{T}}(1)) != {{T}}(0)) { r = r * base; }
        base = base * base;
        e = e >> 1u;
    }
    return r;
}

