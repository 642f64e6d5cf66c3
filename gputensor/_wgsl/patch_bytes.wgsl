// Merge a few host bytes into one u32 word: word = (word & ~mask) | (value & mask).
struct Params { word: u32, mask: u32, value: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> data: array<u32>;

@compute @workgroup_size(1)
fn main() {
    let w = data[params.word];
    data[params.word] = (w & ~params.mask) | (params.value & params.mask);
}
