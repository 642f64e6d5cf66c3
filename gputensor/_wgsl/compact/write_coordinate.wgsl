// compact_write's writers of write_coordinates: coordinate value_base (a dimension d) of the
// flagged element's row-major position in an array of shape SIZES (NDIM dims, row-major
// strides STRIDES), as a WORDS-word integer at out_base + r.
var<private> sizes: array<u32, {{NDIM}}> = array<u32, {{NDIM}}>({{SIZES}});
var<private> strides: array<u32, {{NDIM}}> = array<u32, {{NDIM}}>({{STRIDES}});

fn write_flagged(r: u32, i: u32) {
    let d = params.value_base;
    let o = params.out_base + r;
    let c = ((i + params.g0) / strides[d]) % sizes[d];
    if ({{WORDS}}u == 2u) {
        out[2u * o] = c;
        out[2u * o + 1u] = 0u;
    } else {
        out[o] = c;
    }
}

fn write_all(g: u32, i: u32) {
}
