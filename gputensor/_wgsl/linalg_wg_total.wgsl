// The sum of v over the workgroup's WG invocations (a power of two), in every invocation: a tree
// in workgroup memory. The including kernel declares the element type T, the constant WG and
// `var<workgroup> red: array<T, N>` with N >= WG; every invocation must call it.
fn total(v: T, lid: u32) -> T {
    red[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if lid < s {
            red[lid] = red[lid] + red[lid + s];
        }
        workgroupBarrier();
    }
    let r = red[0];
    workgroupBarrier();
    return r;
}
