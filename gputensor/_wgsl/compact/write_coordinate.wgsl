// compact_write's writers of write_coordinates, staged: coordinate value_base (a dimension d)
// of the flagged element's row-major position in an array of shape SIZES (NDIM dims, row-major
// strides STRIDES); finish_tile writes it.
var<private> sizes: array<u32, {{NDIM}}> = array<u32, {{NDIM}}>({{SIZES}});
var<private> strides: array<u32, {{NDIM}}> = array<u32, {{NDIM}}>({{STRIDES}});

fn write_flagged(r: u32, i: u32) {
    let d = params.value_base;
    stage[r - tile_base] = ((i + params.g0) / strides[d]) % sizes[d];
}

fn write_all(g: u32, i: u32) {
}
